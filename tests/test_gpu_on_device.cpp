// tests/test_gpu_on_device.cpp — operands already in a device's memory (prism::gemm / syrk /
// herk given device pointers) on emulated devices: the plan over the device's streams (text,
// parse, validation), results within the componentwise bound for every type and transpose,
// alpha / beta (NaN in C with beta = 0; with beta = 1 an infinite or NaN part of a complex
// C kept in its part), k = 0, leading dimensions above the rows, syrk and
// herk in both triangles with k from 1 to millions (the other triangle untouched, a herk
// diagonal real), nothing across the link, the device that holds the operands among 1-4,
// host and device pointers mixed in one call refused with C untouched, and a failing device
// call's error saying what became of C.
//
// An emulated device's memory is host memory the device accounts for, so the test writes
// and reads it directly; the device's counters show the call ran there (kernels, no link).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "gpu/devices.hpp"
#include "numa/thread_binding.hpp"
#include "runtime/runtime.hpp"
#include "support/beta_one.hpp"
#include "support/machines.hpp"
#include "support/reference.hpp"

#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <string>

using namespace prism;
namespace gpu = prism::detail::gpu;

namespace {

constexpr std::size_t MiB = std::size_t(1) << 20;

// A context on `count` emulated devices of `bytes` each, with `opts` (delays, failures).
context on_devices(int count, std::size_t bytes, const gpu::emulation_options& opts = {}) {
  context c = test::pinned_context(2);
  detail::context_access::set_devices(c, gpu::emulated_devices(count, bytes, opts));
  return c;
}

gpu::device& device_of(const context& c, int i) { return *detail::devices_of(c).devices.at(std::size_t(i)); }

// A copy of host vector v in dev's memory, released with the object.
template <class T>
struct on_device {
  gpu::device& dev;
  T* p;
  std::size_t n;
  on_device(gpu::device& d, const std::vector<T>& v) : dev(d), p(static_cast<T*>(d.allocate(v.size() * sizeof(T)))), n(v.size()) {
    std::memcpy(p, v.data(), n * sizeof(T));
  }
  ~on_device() { dev.release(p); }
  on_device(const on_device&) = delete;
  on_device& operator=(const on_device&) = delete;
  std::vector<T> host() const { return std::vector<T>(p, p + n); }
};

// The call ran on dev: kernels there, nothing across its link.
struct on_device_check {
  gpu::device& dev;
  gpu::link_counters before;
  explicit on_device_check(gpu::device& d) : dev(d), before(d.counters()) {}
  void done() const {
    const gpu::link_counters after = dev.counters();
    CHECK(after.kernels > before.kernels);
    CHECK(after.host_to_device == before.host_to_device);
    CHECK(after.device_to_host == before.device_to_host);
  }
};

template <class T>
void gemm_case(const context& ctx, int device, char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
               T beta, unsigned seed, bool nan_c = false) {
  CAPTURE(ta);
  CAPTURE(tb);
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  std::mt19937_64 gen(seed);
  const std::int64_t ra = ta == 'N' ? m : k, ca = ta == 'N' ? k : m, rb = tb == 'N' ? k : n, cb = tb == 'N' ? n : k;
  const std::int64_t lda = ra + 3, ldb = rb + 1, ldc = m + 2;
  const std::vector<T> A = test::random_matrix<T>(ra, ca, lda, gen), B = test::random_matrix<T>(rb, cb, ldb, gen);
  std::vector<T> C = test::random_matrix<T>(m, n, ldc, gen);
  if (nan_c)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) C[std::size_t(i + j * ldc)] = T(std::numeric_limits<test::real_t<T>>::quiet_NaN());
  const test::reference<T> ref = test::reference_gemm<T>(ta, tb, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  gpu::device& dev = device_of(ctx, device);
  const on_device<T> dA(dev, A), dB(dev, B), dC(dev, C);
  const on_device_check ran(dev);
  gemm<T>(ta, tb, m, n, k, alpha, dA.p, lda, dB.p, ldb, beta, dC.p, ldc, ctx);
  ran.done();
  const std::vector<T> out = dC.host();
  CHECK(test::check_bound(ref, m, n, k, out.data(), ldc) == "");
}

template <class T>
void rank_k_case(const context& ctx, bool herm, char uplo, char trans, std::int64_t n, std::int64_t k, unsigned seed,
                 T alpha = T(0.75), T beta = T(-0.5)) {
  CAPTURE(herm);
  CAPTURE(uplo);
  CAPTURE(trans);
  CAPTURE(n);
  CAPTURE(k);
  std::mt19937_64 gen(seed);
  const std::int64_t ra = trans == 'N' ? n : k, ca = trans == 'N' ? k : n, lda = ra + 1, ldc = n + 1;
  const std::vector<T> A = test::random_matrix<T>(ra, ca, lda, gen);
  const std::vector<T> C0 = test::random_matrix<T>(n, n, ldc, gen);
  const char partner = trans == 'N' ? (herm ? 'C' : 'T') : 'N';
  const test::reference<T> ref = trans == 'N'
      ? test::reference_gemm<T>('N', partner, n, n, k, alpha, A.data(), lda, A.data(), lda, beta, C0.data(), ldc)
      : test::reference_gemm<T>(trans, 'N', n, n, k, alpha, A.data(), lda, A.data(), lda, beta, C0.data(), ldc);
  // herk never reads the imaginary parts of C's diagonal, as reference ?herk: NaN there
  // (the reference takes the real part of C0's; unless herk only returns, as then).
  std::vector<T> given = C0;
  if constexpr (test::is_complex_v<T>)
    if (herm && !((alpha == T(0) || k == 0) && beta == T(1)))
      for (std::int64_t j = 0; j < n; ++j) given[std::size_t(j + j * ldc)].imag(std::numeric_limits<test::real_t<T>>::quiet_NaN());
  gpu::device& dev = device_of(ctx, 0);
  const on_device<T> dA(dev, A), dC(dev, given);
  const on_device_check ran(dev);
  if constexpr (test::is_complex_v<T>) {
    if (herm) herk<T>(uplo, trans, n, k, alpha.real(), dA.p, lda, beta.real(), dC.p, ldc, ctx);
    else syrk<T>(uplo, trans, n, k, alpha, dA.p, lda, beta, dC.p, ldc, ctx);
  } else {
    syrk<T>(uplo, trans, n, k, alpha, dA.p, lda, beta, dC.p, ldc, ctx);
  }
  ran.done();
  const std::vector<T> C = dC.host();
  const long double eps = std::numeric_limits<test::real_t<T>>::epsilon();
  std::int64_t written = 0, imaginary = 0, wrong = 0;  // counted, then checked once (n^2 checks are slow)
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i <= n; ++i) {
      const std::size_t at = std::size_t(i + j * ldc);
      if (i == n || (uplo == 'U' ? i > j : i < j)) {
        written += C[at] == C0[at] ? 0 : 1;  // the other triangle and the padding are untouched
        continue;
      }
      auto want = ref.value[std::size_t(i + j * n)];
      if constexpr (test::is_complex_v<T>)
        if (herm && i == j) {
          want = decltype(want)(want.real());
          imaginary += C[at].imag() == 0 ? 0 : 1;
        }
      const long double err = std::abs(test::wide_t<T>(C[at]) - want);
      wrong += err <= 8.0L * std::max<std::int64_t>(k, 1) * eps * ref.scale[std::size_t(i + j * n)] + 1e-30L ? 0 : 1;
    }
  CHECK(written == 0);
  CHECK(imaginary == 0);
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("a plan on device operands: k panels over streams, printed, parsed back, validated") {
  const context c = on_devices(1, 64 * MiB);
  const plan gram = make_device_plan(rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 32, 4194304), c);
  const std::string text = gram.to_string();
  MESSAGE(text);
  CHECK(gram.on_device());
  CHECK(gram.streams() == 4);
  CHECK(text.find("devices 1 memory 4194304 streams 4\n") != std::string::npos);
  CHECK(text.find("bfs k gpu 1048576@1s 1048576@1s 1048576@1s 1048576@1s") != std::string::npos);
  CHECK(text.find("nothing crosses the link") != std::string::npos);
  CHECK(plan::parse(text) == gram);
  CHECK_NOTHROW(gram.validate());
  CHECK(predict_gpu(gram, true, c).empty());  // no device part streams anything
  // A thin gemm: k over the streams; a square one: one cuBLAS gemm.
  const plan thin = make_device_plan(problem{scalar_type::d, 'T', 'N', 8, 8, 16777216}, c);
  CHECK(thin.nodes()[0].kind == step_kind::bfs);
  CHECK(thin.nodes()[0].cut == dim::k);
  CHECK(plan::parse(thin.to_string()) == thin);
  const plan square = make_device_plan(problem{scalar_type::z, 'N', 'C', 3000, 3000, 3000}, c);
  CHECK(square.nodes().size() == 1);
  CHECK(square.streams() == 1);
  // A wide triangle: diagonal cuts down to triangle leaves of at most 1024, gemm blocks between.
  const plan wide = make_device_plan(rank_k_problem(scalar_type::z, operation::herk, 'L', 'N', 5000, 300), c);
  for (const node& nd : wide.nodes())
    if (nd.kind == step_kind::leaf && nd.triangle != 0) CHECK(nd.shape.n <= 1024);
  CHECK(plan::parse(wide.to_string()) == wide);
  // Memory too small for four panels' temporaries: fewer panels, never more than the cap.
  context tight = c;
  tight.set_gpu_memory(1 * MiB);
  const plan few = make_device_plan(rank_k_problem(scalar_type::d, operation::syrk, 'L', 'T', 200, 1 << 20), tight);
  CHECK(few.extra_bytes() <= 1 * MiB);
  CHECK(few.streams() < 4);
}

TEST_CASE("a plan on device operands names what is wrong") {
  const std::string head = "prism-plan 2\nproblem d NN 64 64 8192\nthreads 1\n";
  auto fails = [&](const std::string& body, const std::string& says) {
    CAPTURE(body);
    try {
      (void)plan::parse(head + body);
      FAIL("parsed");
    } catch (const plan_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(says) != std::string::npos, e.what());
    }
  };
  fails("devices 1 memory 1048576 streams 2\nbfs k thread 4096@1t 4096@1t\n  leaf gpu\n  leaf gpu\n", "every step is a gpu step");
  fails("devices 1 memory 1048576 streams 2\nbfs k gpu 4096@1s 4096@2s\n  leaf gpu\n  leaf gpu\n", "stream shares sum to 3");
  fails("devices 1 memory 1048576 streams 1\nbfs k gpu 4096@1s 4096@1s\n  leaf gpu\n  leaf gpu\n", "at least 2 streams");
  fails("devices 1 memory 1048576 streams 2\nbfs k gpu 4096@1s 4096@1s\n  leaf openblas\n  leaf gpu\n", "every leaf a gpu leaf");
  fails("devices 1 memory 1024 streams 2\nbfs k gpu 4096@1s 4096@1s\n  leaf gpu\n  leaf gpu\n", "the plan may use 1024");
  fails("devices 2 memory 1048576 streams 2\nbfs k gpu 4096@1g 4096@1g\n  leaf gpu\n  leaf gpu\n", "runs on that one device");
  fails("devices 2 memory 1048576\nbfs k gpu 4096@1g,1s 4096@1g,1s\n  leaf gpu\n  leaf gpu\n", "share devices only");
  // And a good one parses, with its C' on the device.
  const plan ok = plan::parse(head + "devices 1 memory 1048576 streams 2\nbfs k gpu 4096@1s 4096@1s\n  leaf gpu\n  leaf gpu\n");
  CHECK(ok.extra_bytes() == 64 * 64 * 8);
}

TEST_CASE("gemm on device pointers: every type and transpose, alpha and beta, NaN in C, k = 0, thin products") {
  const context c = on_devices(1, 256 * MiB);
  unsigned seed = 1;
  for (char ta : {'N', 'T', 'C'})
    for (char tb : {'N', 'T', 'C'}) {
      gemm_case<float>(c, 0, ta, tb, 37, 29, 53, 1.5f, -0.5f, seed++);
      gemm_case<double>(c, 0, ta, tb, 41, 23, 61, -1.0, 0.0, seed++, true);
      gemm_case<std::complex<float>>(c, 0, ta, tb, 19, 31, 17, {0.5f, -1}, {1, 0}, seed++);
      gemm_case<std::complex<double>>(c, 0, ta, tb, 5, 3, 40009, {1, 1}, {0, 0}, seed++, true);  // k over streams
    }
  gemm_case<double>(c, 0, 'T', 'N', 8, 8, 1 << 20, 1.0, 1.0, seed++);    // a block Krylov product
  gemm_case<double>(c, 0, 'N', 'N', 1, 1, 1, 2.0, 3.0, seed++);
  gemm_case<double>(c, 0, 'N', 'N', 12, 12, 12, 0.0, 2.0, seed++);       // alpha = 0: C = beta C on the device
  gemm_case<double>(c, 0, 'N', 'N', 12, 12, 12, 0.0, 0.0, seed++, true);  // and beta = 0 over NaN
  gemm_case<std::complex<float>>(c, 0, 'N', 'T', 9, 7, 0, {1, 0}, {0.5f, 0.5f}, seed++);  // k = 0
}

TEST_CASE("syrk and herk on device pointers: both triangles, every trans, k from 1 to millions, alpha = 0") {
  const context c = on_devices(1, 1024 * MiB);
  unsigned seed = 500;
  for (char uplo : {'U', 'L'}) {
    rank_k_case<double>(c, false, uplo, 'N', 67, 1, seed++);
    rank_k_case<double>(c, false, uplo, 'T', 32, 1 << 18, seed++);  // AᵀA: k panels on four streams
    rank_k_case<float>(c, false, uplo, 'T', 3, 1 << 22, seed++);     // four million
    rank_k_case<double>(c, false, uplo, 'N', 1030, 20, seed++);      // wider than a triangle leaf
    rank_k_case<std::complex<double>>(c, false, uplo, 'N', 45, 33, seed++);
    rank_k_case<std::complex<double>>(c, true, uplo, 'C', 13, 70001, seed++);
    rank_k_case<std::complex<float>>(c, true, uplo, 'N', 29, 4001, seed++);
    rank_k_case<double>(c, false, uplo, 'T', 9, 100, seed++, 0.0, 2.0);                     // alpha = 0
    rank_k_case<std::complex<double>>(c, true, uplo, 'N', 9, 0, seed++, {1, 0}, {-2, 0});  // k = 0, herk
  }
}

TEST_CASE("alpha = 0 or k = 0 scales C's triangle on a device that holds C and little more") {
  // 3 MiB: C (400 x 401 doubles, 1.28 MB) and A fit, a scratch block of C's size beside them
  // would not (the temporaries take at most 1/16 of the device, 196,608 bytes).
  const context c = on_devices(1, 3 * MiB);
  unsigned seed = 900;
  for (char uplo : {'U', 'L'}) {
    rank_k_case<double>(c, false, uplo, 'T', 400, 100, seed++, 0.0, -0.5);                  // alpha = 0
    rank_k_case<double>(c, false, uplo, 'N', 400, 0, seed++, 1.0, 0.0);                     // k = 0, beta = 0
    rank_k_case<std::complex<double>>(c, true, uplo, 'N', 300, 0, seed++, {1, 0}, {2, 0});  // herk, k = 0
    rank_k_case<std::complex<float>>(c, false, uplo, 'T', 257, 3, seed++, {0, 0}, {0.5f, -1});  // alpha = 0
  }
}

TEST_CASE("beta = 0 on the device never reads C: NaN there is gone from the triangle, kept in the other") {
  const context c = on_devices(1, 64 * MiB);
  gpu::device& dev = device_of(c, 0);
  std::mt19937_64 gen(17);
  for (std::int64_t k : {std::int64_t(7), std::int64_t(100000)}) {  // one leaf; k panels on four streams
    CAPTURE(k);
    const std::int64_t n = 12;
    const std::vector<std::complex<double>> A = test::random_matrix<std::complex<double>>(n, k, n, gen);
    const std::vector<std::complex<double>> nan(std::size_t(n * n), std::numeric_limits<double>::quiet_NaN());
    const on_device<std::complex<double>> dA(dev, A), dC(dev, nan);
    herk<std::complex<double>>('U', 'N', n, k, 1.0, dA.p, n, 0.0, dC.p, n, c);
    const std::vector<std::complex<double>> C = dC.host();
    long finite = 0, kept = 0, real = 0;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        const std::complex<double> v = C[std::size_t(i + j * n)];
        if (i <= j) finite += std::isfinite(v.real()) && std::isfinite(v.imag()) ? 1 : 0;
        else kept += std::isnan(v.real()) ? 1 : 0;
        if (i == j) real += v.imag() == 0 ? 1 : 0;
      }
    CHECK(finite == n * (n + 1) / 2);
    CHECK(kept == n * (n - 1) / 2);
    CHECK(real == n);
  }
}

TEST_CASE_TEMPLATE("beta = 1 on the device adds a complex C part by part: an infinite or NaN part stays in its part (gemm, syrk, herk)",
                   T, std::complex<float>, std::complex<double>) {
  // C = (Inf, 3) plus (x, y) is (Inf, 3 + y), as on host operands; (Inf, 3) * (1, 0) would be
  // (Inf, NaN). Integer-valued A, so every sum is exact; k = 7 is one leaf (a triangle's block
  // added into C), k = 100000 k panels on four streams whose partials are added by geam.
  using R = test::real_t<T>;
  const context c = on_devices(1, 64 * MiB);
  gpu::device& dev = device_of(c, 0);
  for (std::int64_t k : {std::int64_t(7), std::int64_t(100000)}) {
    CAPTURE(k);
    const test::beta_one_case<T> x(6, k);
    for (char what : {'G', 'S', 'H'}) {
      CAPTURE(what);
      const on_device<T> dA(dev, x.A), dC(dev, x.C0);
      if (what == 'G') gemm<T>('N', 'T', x.n, x.n, k, T(1), dA.p, x.n, dA.p, x.n, T(1), dC.p, x.n, c);
      if (what == 'S') syrk<T>('L', 'N', x.n, k, T(1), dA.p, x.n, T(1), dC.p, x.n, c);
      if (what == 'H') herk<T>('L', 'N', x.n, k, R(1), dA.p, x.n, R(1), dC.p, x.n, c);
      CHECK(x.wrong(dC.host(), what) == 0);
    }
  }
}

TEST_CASE("random delays on the device's streams change no result: the k panels wait for each other right") {
  gpu::emulation_options slow;
  slow.delay_seed = 7, slow.max_delay_us = 300;
  context delayed = test::pinned_context(2), plain = test::pinned_context(2);
  detail::context_access::set_devices(delayed, gpu::emulated_devices(1, 256 * MiB, slow));
  detail::context_access::set_devices(plain, gpu::emulated_devices(1, 256 * MiB));
  std::mt19937_64 gen(5);
  const std::int64_t n = 24, k = 200000;
  const std::vector<double> A = test::random_matrix<double>(k, n, k, gen), C0 = test::random_matrix<double>(n, n, n, gen);
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<std::vector<double>> out;
    for (const context* c : {&delayed, &plain}) {
      gpu::device& dev = device_of(*c, 0);
      const on_device<double> dA(dev, A), dC(dev, C0), dG(dev, C0);
      syrk<double>(rep == 0 ? 'U' : 'L', 'T', n, k, 1.0, dA.p, k, 0.5, dC.p, n, *c);
      gemm<double>('T', 'N', n, n, k, 1.0, dA.p, k, dA.p, k, 0.5, dG.p, n, *c);
      out.push_back(dC.host());
      out.push_back(dG.host());
    }
    CHECK(out[0] == out[2]);  // the same plan, the same order of additions: equal bit for bit
    CHECK(out[1] == out[3]);
  }
}

TEST_CASE("host-resident syrk and herk send A across the link once, on one device or two") {
  for (int devices : {1, 2}) {
    CAPTURE(devices);
    context c = on_devices(devices, 64 * MiB);
    c.set_gpus(devices);
    std::mt19937_64 gen(31);
    auto link_in = [&] {
      std::uint64_t in = 0;
      for (const auto& d : detail::devices_of(c).devices) in += d->counters().host_to_device;
      return in;
    };
    const std::int64_t n = 40, k = 300000;
    const std::vector<double> A = test::random_matrix<double>(k, n, k, gen);
    std::vector<double> C(std::size_t(n * n), std::numeric_limits<double>::quiet_NaN());
    const std::uint64_t before = link_in();
    syrk<double>('U', 'T', n, k, 1.0, A.data(), k, 0.0, C.data(), n, c);  // beta = 0: C is not loaded
    CHECK(link_in() - before == std::uint64_t(n * k) * sizeof(double));
    const test::reference<double> ref = test::reference_gemm<double>('T', 'N', n, n, k, 1.0, A.data(), k, A.data(), k, 0.0, C.data(), n);
    long wrong = 0;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i <= j; ++i)
        wrong += std::abs((long double)C[std::size_t(i + j * n)] - ref.value[std::size_t(i + j * n)]) <=
                         4.0L * k * std::numeric_limits<double>::epsilon() * ref.scale[std::size_t(i + j * n)] ? 0 : 1;
    CHECK(wrong == 0);
    const std::int64_t hn = 24, hk = 100000;
    const std::vector<std::complex<float>> H = test::random_matrix<std::complex<float>>(hn, hk, hn, gen);
    std::vector<std::complex<float>> D(std::size_t(hn * hn));
    const std::uint64_t mid = link_in();
    herk<std::complex<float>>('L', 'N', hn, hk, 1.0f, H.data(), hn, 0.0f, D.data(), hn, c);
    CHECK(link_in() - mid == std::uint64_t(hn * hk) * sizeof(std::complex<float>));
  }
}

TEST_CASE("operands on one device of several run on that device") {
  for (int devices = 1; devices <= 4; ++devices) {
    CAPTURE(devices);
    const context c = on_devices(devices, 64 * MiB);
    gemm_case<double>(c, devices - 1, 'T', 'N', 16, 16, 50000, 1.0, 0.5, 900 + unsigned(devices));
    for (int d = 0; d + 1 < devices; ++d) CHECK(device_of(c, d).counters().kernels == 0);
  }
}

TEST_CASE("host and device pointers mixed in one call are refused, C untouched") {
  const context c = on_devices(2, 16 * MiB);
  std::vector<double> A(64 * 64, 1.0), B(64 * 64, 1.0), C(64 * 64, 3.0);
  const on_device<double> dA(device_of(c, 0), A), dC(device_of(c, 0), C), dB1(device_of(c, 1), B);
  auto says = [](auto&& call, const std::string& words) {
    try {
      call();
      FAIL("not refused");
    } catch (const error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(words) != std::string::npos, e.what());
    }
  };
  says([&] { gemm<double>('N', 'N', 64, 64, 64, 1.0, dA.p, 64, B.data(), 64, 0.0, dC.p, 64, c); },
       "dgemm: A, B and C must all be in host memory or all in one device's memory; A is on emulated device 0");
  CHECK(dC.host() == C);
  says([&] { gemm<double>('N', 'N', 64, 64, 64, 1.0, A.data(), 64, B.data(), 64, 0.0, dC.p, 64, c); },
       "C is on emulated device 0");
  says([&] { gemm<double>('N', 'N', 64, 64, 64, 1.0, dA.p, 64, dB1.p, 64, 0.0, dC.p, 64, c); },
       "B is on emulated device 1");
  says([&] { syrk<double>('U', 'N', 64, 64, 1.0, dA.p, 64, 0.0, C.data(), 64, c); }, "dsyrk: A and C must all be");
  CHECK(C == std::vector<double>(64 * 64, 3.0));
  CHECK(dC.host() == std::vector<double>(64 * 64, 3.0));
  // alpha = 0 reads neither A nor B: a host A beside a device C is then no mix.
  CHECK_NOTHROW(gemm<double>('N', 'N', 64, 64, 64, 0.0, A.data(), 64, B.data(), 64, 0.5, dC.p, 64, c));
  CHECK(dC.host() == std::vector<double>(64 * 64, 1.5));
}

TEST_CASE("a device failure on device operands says what became of C: untouched before work was queued, else maybe partly written") {
  // The operands are the device's allocations 0-2; the call's workspace is allocation 3.
  const std::int64_t n = 12, k = 100000;  // gemm: k panels on several streams, with a workspace
  std::mt19937_64 gen(23);
  const std::vector<double> A = test::random_matrix<double>(k, n, k, gen), C0 = test::random_matrix<double>(n, n, n, gen);
  const auto message = [&](const gpu::emulation_options& o, double alpha, bool rank_k, bool& untouched) {
    const context c = on_devices(1, 64 * MiB, o);
    gpu::device& dev = device_of(c, 0);
    const on_device<double> dA(dev, A), dB(dev, A), dC(dev, C0);
    std::string what = "no error";
    try {
      if (rank_k) syrk<double>('L', 'T', n, k, alpha, dA.p, k, 0.5, dC.p, n, c);
      else gemm<double>('T', 'N', n, n, k, alpha, dA.p, k, dB.p, k, 0.5, dC.p, n, c);
    } catch (const error& e) {
      what = e.what();
    }
    untouched = dC.host() == C0;
    return what;
  };
  for (bool rank_k : {false, true})
    for (double alpha : {1.0, 0.0}) {  // a product; C = beta C (syrk: in panels, with a scratch)
      CAPTURE(rank_k);
      CAPTURE(alpha);
      bool untouched = false;
      gpu::emulation_options o;
      if (alpha != 0.0 || rank_k) {  // (gemm's C = beta C needs no workspace)
        o.fail_allocation = 3;
        const std::string before = message(o, alpha, rank_k, untouched);
        CHECK_MESSAGE(before.find("allocate(") != std::string::npos, before);
        CHECK_MESSAGE(before.find("; C untouched") != std::string::npos, before);
        CHECK(untouched);
      }
      o.fail_allocation = -1;
      o.fail_kernel = 0;
      const std::string during = message(o, alpha, rank_k, untouched);
      CHECK_MESSAGE(during.find("injected failure (fail_kernel = 0)") != std::string::npos, during);
      CHECK_MESSAGE(during.find("; C may be partly written") != std::string::npos, during);
    }
}

TEST_CASE("execute runs a plan on device operands on device pointers, and only there") {
  const context c = on_devices(1, 64 * MiB);
  const problem pr{scalar_type::d, 'T', 'N', 8, 8, 40000};
  const plan dp = make_device_plan(pr, c);
  std::mt19937_64 gen(3);
  const std::vector<double> A = test::random_matrix<double>(40000, 8, 40000, gen), B = test::random_matrix<double>(40000, 8, 40000, gen);
  const std::vector<double> C0 = test::random_matrix<double>(8, 8, 8, gen);
  const test::reference<double> ref = test::reference_gemm<double>('T', 'N', 8, 8, 40000, 1.0, A.data(), 40000, B.data(), 40000, 1.0, C0.data(), 8);
  gpu::device& dev = device_of(c, 0);
  const on_device<double> dA(dev, A), dB(dev, B), dC(dev, C0);
  execute<double>(dp, 1.0, dA.p, 40000, dB.p, 40000, 1.0, dC.p, 8, c);
  CHECK(test::check_bound(ref, 8, 8, 40000, dC.host().data(), 8) == "");
  std::vector<double> C = C0;
  CHECK_THROWS_AS(execute<double>(dp, 1.0, A.data(), 40000, B.data(), 40000, 1.0, C.data(), 8, c), plan_error);
  CHECK_THROWS_AS(execute<double>(make_plan(pr, c), 1.0, dA.p, 40000, dB.p, 40000, 1.0, dC.p, 8, c), plan_error);
  CHECK(C == C0);
}

namespace {
std::mutex asked_mutex;
std::multiset<int> asked;  // the domains staging threads asked to be bound to
void record_binding(int domain, bool) {
  const std::lock_guard<std::mutex> lock(asked_mutex);
  asked.insert(domain);
}
}  // namespace

TEST_CASE("each device's staging threads are bound to the NUMA domain nearest it") {
  // emulated_devices spreads G devices over the host's D domains (device i on i * D / G);
  // ctest runs this case on this machine and on a synthetic topology of four domains.
  const int domains = int(default_topology().domains().size());
  MESSAGE("host topology: " << default_topology().source() << ", " << domains << " NUMA domains");
  detail::set_binding_hook(record_binding);
  for (int g = 1; g <= 4; ++g) {
    CAPTURE(g);
    context c = test::pinned_context(2);
    detail::context_access::set_devices(c, gpu::emulated_devices(g, 16 * MiB));
    c.set_gpus(g);
    std::set<int> expected;
    for (const auto& d : detail::devices_of(c).devices) expected.insert(d->numa_domain());
    {
      const std::lock_guard<std::mutex> lock(asked_mutex);
      asked.clear();
    }
    std::mt19937_64 gen{std::uint64_t(g)};
    const std::int64_t m = 64, n = 64, k = 4096 * g;  // thin: k over the g devices, each its part
    const std::vector<double> A = test::random_matrix<double>(m, k, m, gen), B = test::random_matrix<double>(k, n, k, gen);
    std::vector<double> C(std::size_t(m * n));
    const plan p = make_plan<double>('N', 'N', m, n, k, c);
    REQUIRE(p.devices() == g);
    gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.0, C.data(), m, c);
    const std::lock_guard<std::mutex> lock(asked_mutex);
    CHECK(std::set<int>(asked.begin(), asked.end()) == expected);
    for (int d : expected) CHECK(asked.count(d) >= 2);  // the thread issuing copies and the write-back thread
    if (domains >= g) CHECK(int(expected.size()) == g);  // one domain a device where there are enough
  }
  detail::set_binding_hook(nullptr);
}
