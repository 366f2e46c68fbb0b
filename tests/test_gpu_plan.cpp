// tests/test_gpu_plan.cpp — the GPU level: plan text and validation, the schedule's rules
// (snake order, slots by next use, pieces), the planner, and whole calls on emulated
// devices: every type and transpose, alpha / beta (NaN in C with beta = 0), sizes of 1 and
// prime, a dimension one more than a block, C larger than the device, 1 to 4 devices,
// syrk / herk both triangles, random copy delays, failures mid-call, a device's streams and
// pinned buffers reused by its next call; and on every shape the bytes each device moved
// equal to the bytes the model predicts.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "gpu/devices.hpp"
#include "gpu/emulated_device.hpp"
#include "gpu/measure.hpp"
#include "gpu/reuse.hpp"
#include "gpu/runner.hpp"
#include "gpu/schedule.hpp"
#include "recursive/gpu_level.hpp"
#include "runtime/runtime.hpp"
#include "support/machines.hpp"
#include "support/reference.hpp"
#include "support/stderr_capture.hpp"

#include <cmath>
#include <limits>
#include <algorithm>
#include <random>
#include <string>

using namespace prism;
namespace gpu = prism::detail::gpu;

namespace {

constexpr std::size_t MiB = std::size_t(1) << 20;

// A context on `count` emulated devices of `bytes`, pinned to the example machine, 2 threads.
context emulated(int count, std::size_t bytes, gpu::emulation_options opts = {}) {
  context c = test::pinned_context(2);
  detail::context_access::set_devices(c, gpu::emulated_devices(count, bytes, opts));
  c.set_gpus(count);
  return c;
}

// Bytes each device of ctx has moved so far.
std::vector<gpu::link_counters> counters(const context& ctx) {
  std::vector<gpu::link_counters> out;
  for (const auto& d : detail::devices_of(ctx).devices) out.push_back(d->counters());
  return out;
}

// The bytes each device moved between two counts equal the plan's prediction.
void check_bytes(const plan& p, bool reads_c, const context& ctx, const std::vector<gpu::link_counters>& before,
                 const std::vector<gpu::link_counters>& after) {
  std::vector<double> in(after.size(), 0), out(after.size(), 0);
  for (const gpu_part& g : predict_gpu(p, reads_c, ctx)) in[std::size_t(g.device)] += g.bytes_in, out[std::size_t(g.device)] += g.bytes_out;
  for (std::size_t d = 0; d < after.size(); ++d) {
    CHECK(double(after[d].host_to_device - before[d].host_to_device) == in[d]);
    CHECK(double(after[d].device_to_host - before[d].device_to_host) == out[d]);
  }
}

// One gemm on ctx's GPUs against the long-double reference, and its bytes against the model.
template <class T>
void gemm_case(const context& ctx, char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, T beta,
               unsigned seed, bool nan_c = false) {
  CAPTURE(ta);
  CAPTURE(tb);
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(seed);
  std::mt19937_64 gen(seed);
  const std::int64_t ra = ta == 'N' ? m : k, ca = ta == 'N' ? k : m, rb = tb == 'N' ? k : n, cb = tb == 'N' ? n : k;
  const std::int64_t lda = ra + 3, ldb = rb + 1, ldc = m + 2;
  const std::vector<T> A = test::random_matrix<T>(ra, ca, lda, gen), B = test::random_matrix<T>(rb, cb, ldb, gen);
  std::vector<T> C = test::random_matrix<T>(m, n, ldc, gen);
  if (nan_c)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) C[std::size_t(i + j * ldc)] = T(std::numeric_limits<test::real_t<T>>::quiet_NaN());
  const test::reference<T> ref = test::reference_gemm<T>(ta, tb, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  const plan p = make_plan<T>(ta, tb, m, n, k, ctx);
  REQUIRE(p.devices() > 0);
  const auto before = counters(ctx);
  gemm<T>(ta, tb, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc, ctx);
  const auto after = counters(ctx);
  CHECK(test::check_bound(ref, m, n, k, C.data(), ldc) == "");
  if (alpha != T(0)) check_bytes(p, beta != T(0), ctx, before, after);
}

// The uplo triangle of C after syrk / herk against the reference (the other triangle and
// the padding untouched; a herk diagonal real).
template <class T>
void rank_k_case(const context& ctx, bool herm, char uplo, char trans, std::int64_t n, std::int64_t k, unsigned seed) {
  CAPTURE(herm);
  CAPTURE(uplo);
  CAPTURE(trans);
  CAPTURE(n);
  CAPTURE(k);
  std::mt19937_64 gen(seed);
  const std::int64_t ra = trans == 'N' ? n : k, ca = trans == 'N' ? k : n, lda = ra + 1, ldc = n + 1;
  const std::vector<T> A = test::random_matrix<T>(ra, ca, lda, gen);
  std::vector<T> C = test::random_matrix<T>(n, n, ldc, gen);
  if constexpr (test::is_complex_v<T>)
    for (std::int64_t j = 0; j < n; ++j) C[std::size_t(j + j * ldc)] = T(C[std::size_t(j + j * ldc)].real());
  const std::vector<T> C0 = C;
  // herk never reads the imaginary parts of C's diagonal, as reference ?herk: NaN there.
  if constexpr (test::is_complex_v<T>)
    if (herm)
      for (std::int64_t j = 0; j < n; ++j) C[std::size_t(j + j * ldc)].imag(std::numeric_limits<test::real_t<T>>::quiet_NaN());
  const T alpha = T(0.75), beta = T(-0.5);
  const char partner = trans == 'N' ? (herm ? 'C' : 'T') : 'N';
  const test::reference<T> ref = trans == 'N'
      ? test::reference_gemm<T>('N', partner, n, n, k, alpha, A.data(), lda, A.data(), lda, beta, C0.data(), ldc)
      : test::reference_gemm<T>(trans, 'N', n, n, k, alpha, A.data(), lda, A.data(), lda, beta, C0.data(), ldc);
  const problem pr = rank_k_problem(scalar_type_of<T>(), herm ? operation::herk : operation::syrk, uplo, trans, n, k);
  const plan p = make_plan(pr, ctx);
  REQUIRE(p.devices() > 0);
  const auto before = counters(ctx);
  if constexpr (test::is_complex_v<T>) {
    if (herm) herk<T>(uplo, trans, n, k, alpha.real(), A.data(), lda, beta.real(), C.data(), ldc, ctx);
    else syrk<T>(uplo, trans, n, k, alpha, A.data(), lda, beta, C.data(), ldc, ctx);
  } else {
    syrk<T>(uplo, trans, n, k, alpha, A.data(), lda, beta, C.data(), ldc, ctx);
  }
  check_bytes(p, true, ctx, before, counters(ctx));
  const long double eps = std::numeric_limits<test::real_t<T>>::epsilon();
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      const std::size_t at = std::size_t(i + j * ldc);
      if (uplo == 'U' ? i > j : i < j) {
        CHECK(C[at] == C0[at]);  // the other triangle is untouched
        continue;
      }
      auto want = ref.value[std::size_t(i + j * n)];
      if constexpr (test::is_complex_v<T>)
        if (herm && i == j) {
          want = decltype(want)(want.real());
          CHECK(C[at].imag() == 0);
        }
      const long double err = std::abs(test::wide_t<T>(C[at]) - want);
      CHECK(err <= 8.0L * k * eps * ref.scale[std::size_t(i + j * n)] + 1e-30L);
    }
  for (std::int64_t j = 0; j < n; ++j) CHECK(C[std::size_t(n + j * ldc)] == C0[std::size_t(n + j * ldc)]);  // padding
}

}  // namespace

TEST_CASE("gpu plan text: devices, g shares, gpu steps and leaves round-trip") {
  const std::string text =
      "prism-plan 2\n"
      "problem d NN 100 64 300\n"
      "threads 2\n"
      "devices 2 memory 1048576\n"
      "bfs m gpu 48@1g 52@1g\n"
      "  dfs k gpu 150 150\n"
      "    leaf gpu\n"
      "    leaf gpu\n"
      "  leaf gpu\n";
  const plan p = plan::parse(text);
  CHECK(p.devices() == 2);
  CHECK(p.device_memory() == 1048576);
  CHECK(p.nodes()[0].where == level::gpu);
  CHECK(p.nodes()[0].parts[1].devices == 1);
  CHECK(p.nodes()[4].owns.devices.first == 1);
  CHECK(plan::parse(p.to_string()) == p);
  CHECK(p.to_string().find("devices 2 memory 1048576") != std::string::npos);
}

TEST_CASE("gpu plan validation names what is wrong") {
  auto fails = [](const std::string& tree, const std::string& head, const std::string& words) {
    CAPTURE(tree);
    try {
      (void)plan::parse("prism-plan 2\nproblem d NN 64 64 64\nthreads 2\n" + head + tree);
      FAIL("accepted");
    } catch (const plan_error& e) {
      CHECK(std::string(e.what()).find(words) != std::string::npos);
    }
  };
  fails("leaf gpu\n", "", "needs a device");
  fails("bfs m gpu 32@1g 32@1g\n  leaf gpu\n  leaf gpu\n", "", "needs a device");
  fails("leaf openblas\n", "devices 1 memory 1048576\n", "gpu dfs step or a gpu leaf");
  fails("bfs m thread 32@1t 32@1t\n  leaf gpu\n  leaf gpu\n", "devices 2 memory 1048576\n", "must be a rank step or a numa or gpu bfs");
  fails("bfs m gpu 32@1g 32@2g\n  leaf gpu\n  leaf gpu\n", "devices 2 memory 1048576\n", "device shares sum to 3");
  fails("bfs m gpu 32@1g,1t 32@1g\n  leaf gpu\n  leaf gpu\n", "devices 2 memory 1048576\n", "share devices only");
  fails("dfs m gpu 32 32\n  dfs k thread 32 32\n    leaf gpu\n    leaf gpu\n  leaf gpu\n", "devices 1 memory 1048576\n",
        "gpu dfs step or a gpu leaf");
  fails("leaf gpu\n", "devices 1 memory 4096\n", "cannot hold a C block");
  CHECK_THROWS_AS(plan::parse("prism-plan 2\nproblem d NN 8 8 8\nthreads 1\ndevices 1\nleaf gpu\n"), plan_error);
  CHECK_THROWS_AS(plan::parse("prism-plan 2\nproblem d NN 8 8 8\nthreads 1\ndevices 1 memory 0\nleaf gpu\n"), plan_error);
}

TEST_CASE("schedule: a visit runs its chunks in the reverse order of the one before, and chunks still there are not copied") {
  // C 4 x 4 in two blocks of rows, k = 4 in two chunks: the worked example of schedule.hpp.
  std::vector<gpu::device_leaf> leaves;
  for (std::int64_t i : {0, 2})
    for (std::int64_t l : {0, 2}) leaves.push_back(gpu::device_leaf{i, 0, l, 2, 4, 2, 0});
  const gpu::product_shape shape{scalar_type::d, 'N', 'N', false};
  const gpu::device_schedule s = gpu::make_schedule(leaves, shape, 1 * MiB, false);
  REQUIRE(s.visits.size() == 2);
  CHECK(s.visits[1].products[0].leaf.l == 2);  // reversed
  CHECK(s.visits[1].products[0].copies.size() == 1);  // B(2:4, :) is still there
  CHECK(s.visits[1].products[1].copies.size() == 1);
  // A: 4 chunks of 2 x 2, B: 2 chunks of 2 x 4, copied once each; C written back (beta = 0).
  CHECK(s.bytes_in == 8 * (4 * 4 + 2 * 8));
  CHECK(s.bytes_out == 8 * 16);
  CHECK(s.visits[0].products[0].first);
  CHECK(s.visits[1].products[0].first);
  CHECK(!s.visits[1].products[1].first);
}

TEST_CASE("schedule: slots by next use keep the chunk needed soonest, and never evict the last products' chunks") {
  // Two C blocks of rows (0-7, then 8-15), k in 12 chunks each: the second visit (reversed)
  // finds the last chunks of the first where the slots kept them.
  std::vector<gpu::device_leaf> leaves;
  for (int rep = 0; rep < 2; ++rep)
    for (std::int64_t l = 0; l < 12; ++l) leaves.push_back(gpu::device_leaf{rep * 8, 0, l * 64, 8, 8, 64, 0});
  const gpu::product_shape shape{scalar_type::d, 'N', 'N', false};
  const std::size_t chunk = 8 * 64 * 8;  // one chunk's bytes (A and B chunks alike)
  const std::size_t cblock = 8 * 8 * 8;
  const gpu::device_schedule s = gpu::make_schedule(leaves, shape, 2 * cblock + 12 * chunk, false);
  CHECK(s.buffers == 2);
  CHECK(s.slots == 12);
  CHECK(s.lookahead == 2);
  // A chunks differ per visit (rows 0-7, then 8-15); B chunks are shared: the slots the second
  // visit finds are B chunks kept over A chunks never used again.
  std::uint64_t copies = 0;
  for (const auto& v : s.visits)
    for (const auto& p : v.products) copies += p.copies.size();
  CHECK(copies < 48);
  CHECK(copies >= 24 + 12 - 10);
  for (const auto& v : s.visits)
    for (const auto& p : v.products) {
      CHECK(p.a_slot >= 0);
      CHECK(p.b_slot >= 0);
    }
}

TEST_CASE("schedule: pieces of a region for the staging buffers") {
  const auto whole = gpu::pieces(10, 4, 8, 200);  // 80-byte columns, two a piece
  REQUIRE(whole.size() == 2);
  CHECK(whole[0].cols == 2);
  CHECK(whole[1].col == 2);
  const auto split = gpu::pieces(100, 2, 8, 256);  // 800-byte columns, 32 rows a piece
  REQUIRE(split.size() == 8);
  CHECK(split[3].rows == 4);
  CHECK(split[4].col == 1);
}

TEST_CASE("planner: 32768^3 on 2 GPUs of 8 GiB prints device steps, link bytes and the bound") {
  context c = test::pinned_context(2);
  c.set_gpus(2).set_gpu_memory(std::size_t(8) << 30);
  const plan p = make_plan<double>('N', 'N', 32768, 32768, 32768, c);
  CHECK(p.devices() == 2);
  CHECK(p.nodes()[0].where == level::gpu);
  CHECK(p.nodes()[0].kind == step_kind::bfs);
  const auto parts = predict_gpu(p, false, c);
  REQUIRE(parts.size() == 2);
  for (const gpu_part& g : parts) {
    CHECK(g.device_bytes <= p.device_memory());
    CHECK(g.bytes_out == 8.0 * 32768 * 16384);  // C written once
    CHECK(g.bytes_in + g.bytes_out >= g.bound);
  }
  CHECK(plan::parse(p.to_string()) == p);
}

TEST_CASE("planner: 32768^3 on one GPU of 8 GiB moves at most 1.3 times the bound (C alone is 8.6 GB)") {
  context c = test::pinned_context(2);
  c.set_gpus(1).set_gpu_memory(std::size_t(8) << 30);
  const plan p = make_plan<double>('N', 'N', 32768, 32768, 32768, c);
  const auto parts = predict_gpu(p, false, c);
  REQUIRE(parts.size() == 1);
  CHECK(parts[0].blocks >= 2);
  CHECK(parts[0].bytes_in + parts[0].bytes_out <= 1.3 * parts[0].bound);
}

TEST_CASE("emulated gemm: every type and transpose, alpha and beta, NaN in C with beta = 0") {
  const context c = emulated(1, 4 * MiB);
  unsigned seed = 1;
  for (char ta : {'N', 'T', 'C'})
    for (char tb : {'N', 'T', 'C'}) {
      gemm_case<float>(c, ta, tb, 37, 29, 53, 1.5f, -0.5f, seed++);
      gemm_case<double>(c, ta, tb, 41, 23, 61, -1.0, 0.0, seed++, true);
      gemm_case<std::complex<float>>(c, ta, tb, 19, 31, 17, {0.5f, -1}, {1, 0}, seed++);
      gemm_case<std::complex<double>>(c, ta, tb, 23, 19, 29, {1, 1}, {0, 0}, seed++, true);
    }
  gemm_case<double>(c, 'N', 'N', 1, 1, 1, 2.0, 3.0, seed++);
  gemm_case<double>(c, 'T', 'N', 1, 7, 101, 1.0, 1.0, seed++);
  gemm_case<double>(c, 'N', 'T', 97, 1, 3, 1.0, 0.0, seed++);
  gemm_case<double>(c, 'N', 'N', 12, 12, 12, 0.0, 2.0, seed++);  // alpha = 0: C = beta C
}

TEST_CASE("emulated gemm: C larger than the device, a dimension one more than a block, several devices") {
  for (int devices = 1; devices <= 4; ++devices) {
    CAPTURE(devices);
    const context c = emulated(devices, 1 * MiB);
    unsigned seed = 100 + unsigned(devices);
    gemm_case<double>(c, 'N', 'N', 513, 257, 389, 1.0, 0.5, seed++);   // C alone is 1.05 MB
    gemm_case<double>(c, 'T', 'N', 301, 311, 1031, -1.0, 0.0, seed++);
    gemm_case<std::complex<double>>(c, 'C', 'T', 211, 149, 97, {1, -1}, {0.5, 0.5}, seed++);
    gemm_case<float>(c, 'N', 'T', 8, 8, 40009, 1.0f, 1.0f, seed++);    // thin: k over the devices
  }
  // A block edge plus one: the planner's blocks for 256 x 256 on this device, then one more row and column.
  const context c = emulated(1, 1 * MiB);
  const plan p = make_plan<double>('N', 'N', 512, 512, 64, c);
  std::int64_t edge = 0;
  for (const node& nd : p.nodes())
    if (nd.kind == step_kind::leaf) edge = std::max(edge, nd.shape.m);
  REQUIRE(edge > 0);
  gemm_case<double>(c, 'N', 'N', edge + 1, edge + 1, 64, 1.0, 1.0, 7);
}

TEST_CASE("emulated syrk and herk: both triangles, every trans, k from 1 to thousands") {
  for (int devices : {1, 3}) {
    const context c = emulated(devices, 1 * MiB);
    unsigned seed = 500;
    for (char uplo : {'U', 'L'}) {
      rank_k_case<double>(c, false, uplo, 'N', 67, 1, seed++);
      rank_k_case<double>(c, false, uplo, 'T', 301, 97, seed++);   // C larger than the device
      rank_k_case<float>(c, false, uplo, 'T', 16, 20011, seed++);  // Gram: k over the devices
      rank_k_case<std::complex<double>>(c, false, uplo, 'N', 45, 33, seed++);
      rank_k_case<std::complex<double>>(c, true, uplo, 'C', 130, 211, seed++);
      rank_k_case<std::complex<float>>(c, true, uplo, 'N', 29, 4001, seed++);
    }
  }
}

TEST_CASE("emulated devices with random copy delays give the same products") {
  gpu::emulation_options slow;
  slow.delay_seed = 42, slow.max_delay_us = 200;
  const context c = emulated(2, 1 * MiB, slow);
  const context plain = emulated(2, 1 * MiB);
  std::mt19937_64 gen(9);
  const std::int64_t m = 300, n = 280, k = 520;
  const std::vector<double> A = test::random_matrix<double>(m, k, m, gen), B = test::random_matrix<double>(k, n, k, gen);
  const std::vector<double> C0 = test::random_matrix<double>(m, n, m, gen);
  std::vector<double> C1 = C0, C2 = C0;
  gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.25, C1.data(), m, c);
  gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.25, C2.data(), m, plain);
  CHECK(C1 == C2);  // the same plan, the same order of additions: equal bit for bit
}

// A 400 x 300 x 200 NN double product, C = A B + beta C0, with its reference.
struct nn_product {
  static constexpr std::int64_t m = 400, n = 300, k = 200;
  std::vector<double> A, B, C0;
  test::reference<double> ref;
  nn_product(unsigned seed, double beta) {
    std::mt19937_64 gen(seed);
    A = test::random_matrix<double>(m, k, m, gen), B = test::random_matrix<double>(k, n, k, gen);
    C0 = test::random_matrix<double>(m, n, m, gen);
    ref = test::reference_gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, beta, C0.data(), m);
  }
};

TEST_CASE("a device allocation that fails leaves the product to the host; a copy that fails mid-call is finished on the host") {
  const nn_product x(11, 0.5);
  const std::int64_t m = x.m, n = x.n, k = x.k;
  const std::vector<double> &A = x.A, &B = x.B, &C0 = x.C0;
  const test::reference<double>& ref = x.ref;
  for (long fail_at : {0L, 1L}) {  // the first allocation (the C buffer), the second (the slots)
    gpu::emulation_options o;
    o.fail_allocation = fail_at;
    const context c = emulated(1, 1 * MiB, o);
    std::vector<double> C = C0;
    const std::string err = test::stderr_of([&] { gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.5, C.data(), m, c); });
    CHECK(test::check_bound(ref, m, n, k, C.data(), m) == "");
    // One line says so, naming the device once (its own error names it already).
    INFO(err);
    CHECK(err.rfind("prism: gpu: emulated device 0 (1.00 MiB): allocate(", 0) == 0);
    CHECK(err.find("(1.00 MiB)", err.find("(1.00 MiB)") + 1) == std::string::npos);
    CHECK(err.find("; its part of the product runs on the host\n") != std::string::npos);
  }
  for (long fail_at : {3L, 20L, 60L}) {  // a copy in, partway through
    CAPTURE(fail_at);
    gpu::emulation_options o;
    o.fail_copy = fail_at;
    const context c = emulated(1, 1 * MiB, o);
    std::vector<double> C = C0;
    bool failed = false;
    try {
      gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.5, C.data(), m, c);
    } catch (const error& e) {  // only a torn write-back with beta != 0 may end like this, and it says so
      failed = true;
      CHECK(std::string(e.what()).find("undefined") != std::string::npos);
    }
    if (!failed) CHECK(test::check_bound(ref, m, n, k, C.data(), m) == "");
  }
}

TEST_CASE("a device's streams and pinned buffers serve its next call; a stream that failed is not lent again") {
  const nn_product x(12, 0.0);
  auto call = [&](const context& c) {
    std::vector<double> C = x.C0;
    gemm<double>('N', 'N', x.m, x.n, x.k, 1.0, x.A.data(), x.m, x.B.data(), x.k, 0.0, C.data(), x.m, c);
    CHECK(test::check_bound(x.ref, x.m, x.n, x.k, C.data(), x.m) == "");
  };
  {
    const context c = emulated(1, 1 * MiB);
    auto& dev = dynamic_cast<gpu::emulated_device&>(*detail::devices_of(c).devices.at(0));
    call(c);
    const std::size_t streams = dev.streams_made(), pinned = dev.pinned_made();
    REQUIRE(streams > 0);
    REQUIRE(pinned > 0);
    CHECK(dev.live_streams() == streams);  // kept, idle
    call(c);
    CHECK(dev.streams_made() == streams);
    CHECK(dev.pinned_made() == pinned);
    gpu::forget_kept(dev);  // what the device does as it goes
    CHECK(dev.live_streams() == 0);
    call(c);  // new ones again
    CHECK(dev.streams_made() == 2 * streams);
    CHECK(dev.pinned_made() == 2 * pinned);
  }
  {
    gpu::emulation_options o;
    o.fail_copy = 3;  // a copy in, on the first call; beta = 0: its block is recomputed on the host
    const context c = emulated(1, 1 * MiB, o);
    auto& dev = dynamic_cast<gpu::emulated_device&>(*detail::devices_of(c).devices.at(0));
    const std::string err = test::stderr_of([&] { call(c); });
    const std::size_t streams = dev.streams_made(), kept = dev.live_streams();
    INFO(err);
    CHECK(kept < streams);  // the stream whose copy failed was freed, the others kept
    call(c);
    CHECK(dev.streams_made() == 2 * streams - kept);  // the kept ones lent again, the freed one made anew
    CHECK(dev.live_streams() == streams);
  }
}

TEST_CASE("a plan on more GPUs than the context has is refused before C is touched") {
  context c = test::pinned_context(2);
  detail::context_access::set_devices(c, gpu::emulated_devices(1, 4 * MiB));
  context two = c;
  two.set_gpus(2);
  const plan p = make_plan<double>('N', 'N', 64, 64, 64, two);
  REQUIRE(p.devices() == 2);
  std::vector<double> A(64 * 64, 1.0), B(64 * 64, 1.0), C(64 * 64, 3.0);
  CHECK_THROWS_AS(execute<double>(p, 1.0, A.data(), 64, B.data(), 64, 0.0, C.data(), 64, c), plan_error);
  CHECK(C[0] == 3.0);
  // prism::gemm and prism::syrk with a context that asks for more GPUs than it has: a
  // prism::error before anything runs (the second device's part used to fail mid-call).
  context more = c;
  more.set_gpus(2);
  CHECK_THROWS_WITH_AS(gemm<double>('N', 'N', 64, 64, 64, 1.0, A.data(), 64, B.data(), 64, 0.0, C.data(), 64, more),
                       doctest::Contains("plan runs on 2 GPUs, this context has 1"), plan_error);
  CHECK(std::all_of(C.begin(), C.end(), [](double x) { return x == 3.0; }));
  CHECK_THROWS_AS(syrk<double>('U', 'N', 64, 64, 1.0, A.data(), 64, 0.0, C.data(), 64, more), plan_error);
  CHECK(std::all_of(C.begin(), C.end(), [](double x) { return x == 3.0; }));
}

TEST_CASE("the caller's memory is pinned only where the model says it pays") {
  // 1 thread at 8 GB/s against a 50 GB/s link, pinning at 8 GB/s: a matrix sent twice pays,
  // once does not; 8 threads (64 GB/s) feed the link themselves: never.
  CHECK(gpu::should_register(2e9, 1e9, 1, 8e9, 50e9, 8e9));
  CHECK(!gpu::should_register(1e9, 1e9, 1, 8e9, 50e9, 8e9));
  CHECK(!gpu::should_register(10e9, 1e9, 8, 8e9, 50e9, 8e9));
  CHECK(!gpu::should_register(0, 1e9, 1, 8e9, 50e9, 8e9));
  // A host that copies slowly: A and B are pinned for the call (and only then), copied
  // straight from the caller's memory, the same bytes as the model's, the same product.
  context c = emulated(1, 1 * MiB);
  machine_description slow = test::epyc_2c();
  slow.set_measured(machine_key::host_copy_bandwidth, 1e6);
  c.set_description(slow);
  const auto& dev = dynamic_cast<const gpu::emulated_device&>(*detail::devices_of(c).devices[0]);
  const std::size_t before = dev.registrations();
  gemm_case<double>(c, 'N', 'T', 300, 280, 260, 1.0, 0.5, 77);
  CHECK(dev.registrations() == before + 2);
  CHECK(dev.registered_bytes() == 0);
  // A host whose threads outrun the link: the same call goes through the ring.
  context plain = emulated(1, 1 * MiB);
  machine_description fast = test::epyc_2c();
  fast.set_measured(machine_key::host_copy_bandwidth, 1e12);
  plain.set_description(fast);
  const auto& dev2 = dynamic_cast<const gpu::emulated_device&>(*detail::devices_of(plain).devices[0]);
  gemm_case<double>(plain, 'N', 'T', 300, 280, 260, 1.0, 0.5, 78);
  CHECK(dev2.registrations() == 0);
  // The slow host again, on a device whose 2-D copies take pitches up to 4 KiB (a CUDA
  // device's memPitch is 2^31 - 1 bytes): A and B with leading dimensions of 2000 (16,000
  // bytes) are not pinned (their chunks could not be copied from where they lie) and go
  // through the ring, whose pieces and C blocks have pitches of at most 300 rows.
  gpu::emulation_options narrow;
  narrow.max_pitch = 4096;
  context short_pitch = emulated(1, 1 * MiB, narrow);
  short_pitch.set_description(slow);
  const auto& dev3 = dynamic_cast<const gpu::emulated_device&>(*detail::devices_of(short_pitch).devices[0]);
  std::mt19937_64 gen(79);
  const std::int64_t m = 300, n = 280, k = 260, ld = 2000;
  const std::vector<double> A = test::random_matrix<double>(m, k, ld, gen), B = test::random_matrix<double>(n, k, ld, gen);
  std::vector<double> C = test::random_matrix<double>(m, n, m, gen);
  const test::reference<double> ref = test::reference_gemm<double>('N', 'T', m, n, k, 1.0, A.data(), ld, B.data(), ld, 0.5, C.data(), m);
  const std::string err = test::stderr_of([&] { gemm<double>('N', 'T', m, n, k, 1.0, A.data(), ld, B.data(), ld, 0.5, C.data(), m, short_pitch); });
  CHECK(dev3.registrations() == 0);
  CHECK(err == "");  // no device step failed and fell back to the host
  CHECK(test::check_bound(ref, m, n, k, C.data(), m) == "");
}

TEST_CASE("a device whose 2-D copies take short pitches gets C blocks and chunks within them") {
  // Pitches of at most 4 KiB (512 doubles, a CUDA device's are 2^31 - 1 bytes): C blocks
  // and chunks of at most 512 rows, every product on the device (no fallback line, the
  // device's bytes the model's), on shapes whose best blocks and chunks are longer.
  gpu::emulation_options narrow;
  narrow.max_pitch = 4096;
  const context c = emulated(1, 16 * MiB, narrow);
  const auto pitch_rows = [&](const plan& p) {
    std::int64_t rows = 0;
    for (const detail::device_root& dr : detail::device_roots(p))
      rows = std::max(rows, detail::device_schedule_of(p, dr.node, true).pitch_rows);
    return rows;
  };
  unsigned seed = 900;
  for (char ta : {'N', 'T'})
    for (char tb : {'N', 'T'}) {
      CHECK(pitch_rows(make_plan<double>(ta, tb, 1500, 700, 1200, c)) <= 512);
      const std::string err = test::stderr_of([&] { gemm_case<double>(c, ta, tb, 1500, 700, 1200, 1.0, 0.5, seed++); });
      CHECK(err == "");
    }
  for (char trans : {'N', 'T'}) {
    const problem pr = rank_k_problem(scalar_type::d, operation::syrk, 'L', trans, 1100, 900);
    CHECK(pitch_rows(make_plan(pr, c)) <= 512);
    const std::string err = test::stderr_of([&] { rank_k_case<double>(c, false, 'L', trans, 1100, 900, seed++); });
    CHECK(err == "");
  }
  // On a CUDA-like pitch the same device and shape keep longer blocks or chunks.
  CHECK(pitch_rows(make_plan<double>('T', 'N', 1500, 700, 1200, emulated(1, 16 * MiB))) > 512);
  // A plan made for such a device is refused, before C is touched, on the narrow one.
  const plan wide = make_plan<double>('T', 'N', 1500, 700, 1200, emulated(1, 16 * MiB));
  std::vector<double> A(1200 * 1500, 1.0), B(1200 * 700, 1.0), C(1500 * 700, 3.0);
  CHECK_THROWS_WITH_AS(execute<double>(wide, 1.0, A.data(), 1200, B.data(), 1200, 0.0, C.data(), 1500, c),
                       doctest::Contains("copies pitches of at most 4096 bytes"), plan_error);
  CHECK(std::all_of(C.begin(), C.end(), [](double x) { return x == 3.0; }));
}

TEST_CASE("prism tune's device measurements give every rate on a device") {
  const auto set = gpu::emulated_devices(1, 64 * MiB);
  const gpu::measured_rates r = gpu::measure(*set->devices[0], 1, 1 * MiB, 64);
  for (double f : r.flops) CHECK(f > 0);
  CHECK(r.link_in > 0);
  CHECK(r.link_out > 0);
  CHECK(r.memory_bandwidth > 0);
  CHECK(r.register_rate > 0);
  CHECK(gpu::host_copy_rate(1, 1 * MiB) > 0);
}

namespace {

// C after a call that may have failed partway: either every element within the bound, or
// the call threw naming one block of C as undefined and every element outside it is right.
void check_or_torn(const test::reference<double>& ref, std::int64_t m, std::int64_t n, std::int64_t k,
                   const std::vector<double>& C, std::int64_t ldc, const std::string& error) {
  if (error.empty()) {
    CHECK(test::check_bound(ref, m, n, k, C.data(), ldc) == "");
    return;
  }
  CAPTURE(error);
  struct block {
    long r0 = 0, r1 = 0, c0 = 0, c1 = 0;
  };
  std::vector<block> torn;  // every block the error names
  for (std::size_t at = error.find("C("); at != std::string::npos; at = error.find("C(", at + 2)) {
    block b;
    REQUIRE(std::sscanf(error.c_str() + at, "C(%ld:%ld, %ld:%ld)", &b.r0, &b.r1, &b.c0, &b.c1) == 4);
    torn.push_back(b);
  }
  REQUIRE(!torn.empty());
  CHECK(error.find("undefined") != std::string::npos);
  const long double eps = std::numeric_limits<double>::epsilon();
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      if (std::any_of(torn.begin(), torn.end(), [&](const block& b) { return i >= b.r0 && i < b.r1 && j >= b.c0 && j < b.c1; }))
        continue;
      const long double err = std::abs((long double)C[std::size_t(i + j * ldc)] - ref.value[std::size_t(i + j * m)]);
      CHECK(err <= 4.0L * k * eps * ref.scale[std::size_t(i + j * m)] + 1e-300L);
    }
}

}  // namespace

TEST_CASE("a block visited again reads the partial sums its last visit wrote back, with two C buffers and delays") {
  gpu::emulation_options slow;
  slow.delay_seed = 7, slow.max_delay_us = 150;
  const context c = emulated(1, 1 * MiB, slow);
  const plan p = plan::parse(
      "prism-plan 2\nproblem d NN 64 64 64\nthreads 2\ndevices 1 memory 1048576\n"
      "dfs k gpu 32 32\n  dfs m gpu 32 32\n    leaf gpu\n    leaf gpu\n  dfs m gpu 32 32\n    leaf gpu\n    leaf gpu\n");
  REQUIRE(detail::device_schedule_of(p, 0, true).buffers == 2);
  for (double beta : {0.0, -0.75}) {
    CAPTURE(beta);
    std::mt19937_64 gen(31);
    const std::vector<double> A = test::random_matrix<double>(64, 64, 64, gen), B = test::random_matrix<double>(64, 64, 64, gen);
    std::vector<double> C = test::random_matrix<double>(64, 64, 64, gen);
    if (beta == 0) C.assign(C.size(), std::numeric_limits<double>::quiet_NaN());
    const test::reference<double> ref = test::reference_gemm<double>('N', 'N', 64, 64, 64, 1.0, A.data(), 64, B.data(), 64, beta, C.data(), 64);
    const auto before = counters(c);
    execute<double>(p, 1.0, A.data(), 64, B.data(), 64, beta, C.data(), 64, c);
    check_bytes(p, beta != 0, c, before, counters(c));
    CHECK(test::check_bound(ref, 64, 64, 64, C.data(), 64) == "");
  }
  // Blocks that overlap without being the same block are refused.
  CHECK_THROWS_WITH_AS(plan::parse("prism-plan 2\nproblem d NN 64 64 64\nthreads 2\ndevices 1 memory 1048576\n"
                                   "dfs k gpu 32 32\n  dfs m gpu 32 32\n    leaf gpu\n    leaf gpu\n"
                                   "  dfs n gpu 32 32\n    leaf gpu\n    leaf gpu\n"),
                       doctest::Contains("overlap"), plan_error);
  // An empty k is a plan too (nothing crosses the link but C).
  CHECK_NOTHROW(plan::parse("prism-plan 2\nproblem d NN 4 4 0\nthreads 1\ndevices 1 memory 1048576\nleaf gpu\n"));
  CHECK_THROWS_WITH_AS(plan::parse("prism-plan 2\nproblem d NN 64 64 64\nthreads 1\nranks 2\ndevices 1 memory 1048576\n"
                                   "bfs m rank 32@1r 32@1r\n  leaf gpu\n  leaf gpu\n"),
                       doctest::Contains("no rank level"), plan_error);
}

TEST_CASE("a copy or kernel that fails at any point leaves C right, or says which block it left undefined") {
  machine_description small = test::epyc_2c();
  small.set_measured(machine_key::gpu_staging_bytes, 4096);  // pieces of a column and of columns
  const std::int64_t m = 96, n = 80, k = 70;
  std::mt19937_64 gen(5);
  const std::vector<double> A = test::random_matrix<double>(m, k, m, gen), B = test::random_matrix<double>(k, n, k, gen);
  const std::vector<double> C0 = test::random_matrix<double>(m, n, m, gen);
  context probe = emulated(1, 1 * MiB);
  probe.set_description(small);
  std::vector<double> C = C0;
  gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.5, C.data(), m, probe);
  const long copies = long(counters(probe)[0].copies), kernels = long(counters(probe)[0].kernels);
  REQUIRE(copies > 10);
  REQUIRE(kernels > 0);
  std::vector<long> failures;  // every third copy, then every kernel (numbered after the copies)
  for (long at = 0; at < copies; at += 3) failures.push_back(at);
  for (long at = copies; at < copies + kernels; ++at) failures.push_back(at);
  for (double beta : {0.0, 0.5}) {
    const test::reference<double> ref = test::reference_gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, beta, C0.data(), m);
    for (long fail_at : failures) {
      CAPTURE(beta);
      CAPTURE(fail_at);
      gpu::emulation_options o;
      if (fail_at < copies) o.fail_copy = fail_at;
      else o.fail_kernel = fail_at - copies;
      context c = emulated(1, 1 * MiB, o);
      c.set_description(small);
      C = C0;
      std::string what;
      try {
        gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, beta, C.data(), m, c);
      } catch (const prism::error& e) {
        what = e.what();
      }
      if (beta == 0) CHECK(what.empty());  // a torn block is recomputed from scratch
      check_or_torn(ref, m, n, k, C, m, what);
    }
  }
}

TEST_CASE("failures on several devices: a k cut's and a diagonal cut's other parts still land") {
  for (long fail_at : {2L, 9L}) {
    CAPTURE(fail_at);
    gpu::emulation_options o;
    o.fail_copy = fail_at;
    const context c = emulated(2, 1 * MiB, o);
    std::mt19937_64 gen(8);
    const std::int64_t m = 24, n = 20, k = 30011;  // thin: k over the devices
    const std::vector<double> A = test::random_matrix<double>(m, k, m, gen), B = test::random_matrix<double>(k, n, k, gen);
    std::vector<double> C = test::random_matrix<double>(m, n, m, gen);
    const test::reference<double> ref = test::reference_gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 2.0, C.data(), m);
    REQUIRE(make_plan<double>('N', 'N', m, n, k, c).nodes()[0].cut == dim::k);
    std::string what;
    try {
      gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 2.0, C.data(), m, c);
    } catch (const prism::error& e) {
      what = e.what();
    }
    check_or_torn(ref, m, n, k, C, m, what);
  }
  gpu::emulation_options o;
  o.fail_copy = 4;
  const context c = emulated(2, 1 * MiB, o);
  rank_k_case<double>(c, false, 'L', 'T', 200, 60, 12);  // a diagonal cut over the devices, beta != 0
}

TEST_CASE("blocks torn on several devices at once are all named") {
  machine_description small = test::epyc_2c();
  small.set_measured(machine_key::gpu_staging_bytes, 4096);
  const std::int64_t m = 230, n = 73, k = 142;  // m over two devices, each writing C back in pieces
  std::mt19937_64 gen(3);
  const std::vector<double> A = test::random_matrix<double>(m, k, m, gen), B = test::random_matrix<double>(k, n, k, gen);
  const std::vector<double> C0 = test::random_matrix<double>(m, n, m, gen);
  const test::reference<double> ref = test::reference_gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.5, C0.data(), m);
  int both = 0;  // failures that tore a block on each device
  for (long fail_at = 75; fail_at < 100; fail_at += 2) {
    CAPTURE(fail_at);
    gpu::emulation_options o;
    o.fail_copy = fail_at;  // each device fails its copy number fail_at
    context c = emulated(2, 1 * MiB, o);
    c.set_description(small);
    std::vector<double> C = C0;
    std::string what;
    try {
      gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.5, C.data(), m, c);
    } catch (const prism::error& e) {
      what = e.what();
    }
    if (what.find("those blocks") != std::string::npos) ++both;
    check_or_torn(ref, m, n, k, C, m, what);
  }
  CHECK(both > 0);
}

TEST_CASE("the planner finds a plan for shapes with awkward chunk depths and many blocks") {
  struct shape {
    std::int64_t m, n, k;
    std::size_t memory;
  };
  for (const shape& s : {shape{std::int64_t(1) << 19, 8, 8192, 40 * MiB}, shape{16384, 16384, 16384, 16 * MiB},
                         shape{4096, 4096, 4096, 1 * MiB}, shape{131072, 131072, 131072, std::size_t(8) << 30}}) {
    CAPTURE(s.m);
    CAPTURE(s.memory);
    context c = test::pinned_context(2);
    c.set_gpus(1).set_gpu_memory(s.memory);
    plan p;
    CHECK_NOTHROW(p = make_plan<double>('N', 'N', s.m, s.n, s.k, c));
    CHECK_NOTHROW(p.validate());
    for (const gpu_part& g : predict_gpu(p, false, c)) CHECK(g.device_bytes <= s.memory);
  }
}

TEST_CASE("the planner finds a plan for rank-k updates whose chunk depth the k alignment would overrun") {
  // A triangle's chunks of k are cut on 256-element boundaries where each is that deep, so
  // a chunk can be up to 256 deeper than k / chunks: the chunk counts allow for it. E.g.
  // n = 40, k = 4000 of complex doubles on 1 MiB: 11 chunks of 363 would fit, as cut (up to
  // 512 deep) they do not; 15 (at most 384 deep) do.
  struct shape {
    scalar_type type;
    std::int64_t n, k;
    std::size_t memory;
  };
  std::vector<shape> shapes;
  for (std::int64_t n = 17; n <= 64; n += 3)
    for (std::int64_t k : {2000, 4000, 8000})
      for (scalar_type t : {scalar_type::d, scalar_type::z}) shapes.push_back(shape{t, n, k, 1 * MiB});
  for (std::int64_t n : {60, 64}) shapes.push_back(shape{scalar_type::d, n, 8000, 2 * MiB});
  shapes.push_back(shape{scalar_type::d, 12288, 1000000, 64 * MiB});
  shapes.push_back(shape{scalar_type::d, 2048, 100000, 8 * MiB});
  shapes.push_back(shape{scalar_type::z, 2048, 100000, 16 * MiB});
  shapes.push_back(shape{scalar_type::d, 65536, 1000000, 256 * MiB});
  for (const shape& s : shapes)
    for (int devices : {1, 2}) {
      CAPTURE(int(s.type));
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(s.memory);
      CAPTURE(devices);
      context c = test::pinned_context(2);
      c.set_gpus(devices).set_gpu_memory(s.memory);
      const operation op = s.type == scalar_type::z ? operation::herk : operation::syrk;
      plan p;
      CHECK_NOTHROW(p = make_plan(rank_k_problem(s.type, op, 'U', 'N', s.n, s.k), c));
      if (p.nodes().empty()) continue;
      for (const gpu_part& g : predict_gpu(p, false, c)) CHECK(g.device_bytes <= s.memory);
    }
  // And one such product computed on an emulated device of that size.
  const context c = emulated(1, 1 * MiB);
  rank_k_case<std::complex<double>>(c, true, 'U', 'N', 40, 4000, 900);
  rank_k_case<std::complex<double>>(c, false, 'L', 'T', 40, 4000, 901);
  rank_k_case<double>(c, false, 'U', 'N', 64, 4000, 902);
}
