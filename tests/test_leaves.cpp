// tests/test_leaves.cpp — the leaf backends: the kernel set PRISM_LEAF_KERNELS names is the
// one running, results within the componentwise bound for every type and trans pair, safe
// under concurrent calls (exact results on integer-valued inputs), single-threaded, and
// isolated from the host's BLAS (prism never changes the thread setting of a BLAS the
// caller uses). ctest runs it once per kernel set prism can pick on this CPU
// (test_leaves_kernels_*); a set the CPU cannot run is Skipped. Internal: reads lib/leaf/backend.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "leaf/backend/blas_leaf_rule.hpp"
#include "leaf/backend/blas_library.hpp"
#include "leaf/dispatch.hpp"
#include "leaf/backend/blis_expert.hpp"
#include "leaf/backend/leaf_kernels.hpp"
#include "support/machines.hpp"
#include "support/reference.hpp"
#include "support/skip.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <thread>

using namespace prism;

namespace {

// Hammers one library from 4 threads with small integer-valued products (exact in
// double) and counts wrong results.
int concurrent_errors(const detail::blas_library& lib) {
  std::atomic<int> bad{0};
  auto work = [&](int seed) {
    const int m = 8 + seed % 5, n = 9, k = 40 + seed;
    std::vector<double> A(std::size_t(m * k)), B(std::size_t(k * n)), C(std::size_t(m * n)), R(std::size_t(m * n));
    for (int i = 0; i < m * k; ++i) A[std::size_t(i)] = (i * 7 + seed) % 11 - 5;
    for (int i = 0; i < k * n; ++i) B[std::size_t(i)] = (i * 3 + seed) % 13 - 6;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double s = 0;
        for (int l = 0; l < k; ++l) s += A[std::size_t(i + l * m)] * B[std::size_t(l + j * k)];
        R[std::size_t(i + j * m)] = s;
      }
    for (int it = 0; it < 3000; ++it) {
      lib.gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.0, C.data(), m);
      if (C != R) ++bad;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(work, t);
  for (auto& t : threads) t.join();
  return bad;
}

// One leaf call per trans pair on small awkward shapes (1, odd, padded leading dimensions),
// and two pairs on a shape above BLIS's small-matrix thresholds (its packed kernels),
// checked with the componentwise bound. Kept small: ctest runs it once per kernel set.
template <class T>
void check_bound_all(const detail::blas_library& lib1, const detail::blas_library& lib2) {
  std::mt19937_64 gen(7);
  const char trans[] = {'N', 'T', 'C'};
  const T alphas[] = {T(1), T(-0.75)}, betas[] = {T(0), T(0.5)};
  auto one = [&](std::int64_t m, std::int64_t n, std::int64_t k, char ta, char tb, int v) {
    const std::int64_t ra = ta == 'N' ? m : k, ca = ta == 'N' ? k : m;
    const std::int64_t rb = tb == 'N' ? k : n, cb = tb == 'N' ? n : k;
    const std::int64_t lda = ra + 3, ldb = rb + 1, ldc = m + 2;
    auto A = test::random_matrix<T>(ra, ca, lda, gen), B = test::random_matrix<T>(rb, cb, ldb, gen);
    auto C = test::random_matrix<T>(m, n, ldc, gen);
    if (betas[v] == T(0))  // beta = 0 must not read C
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) C[std::size_t(i + j * ldc)] = T(std::nan(""));
    const auto ref =
        test::reference_gemm<T>(ta, tb, m, n, k, alphas[v], A.data(), lda, B.data(), ldb, betas[v], C.data(), ldc);
    for (const detail::blas_library* lib : {&lib1, &lib2}) {  // one reference for both libraries
      std::vector<T> out = C;
      lib->gemm<T>(ta, tb, m, n, k, alphas[v], A.data(), lda, B.data(), ldb, betas[v], out.data(), ldc);
      INFO(lib->path(), " ", char(scalar_type_of<T>()), " ", ta, tb, " ", m, "x", n, "x", k, " variant ", v);
      CHECK(test::check_bound(ref, m, n, k, out.data(), ldc) == "");
    }
  };
  const std::int64_t small[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {8, 300, 2}};
  for (const auto& [m, n, k] : small)
    for (char ta : trans)
      for (char tb : trans)
        for (int v = 0; v < 2; ++v) one(m, n, k, ta, tb, v);
  // BLIS's packed path needs m, n, k above its small-matrix thresholds (256 on zen3).
  if constexpr (test::is_complex_v<T>) one(264, 260, 258, 'C', 'T', 0);
  else one(264, 260, 258, 'N', 'N', 1);
}

// The kernel set PRISM_LEAF_KERNELS names for `library`, or "" for auto (and the others).
std::string requested(const detail::kernel_request& r) {
  return r.mode == detail::kernel_request::how::named ? r.name : "";
}

}  // namespace

// First in the file: under a PRISM_LEAF_KERNELS this CPU cannot run, the whole run is
// Skipped (doctest runs test cases in file order).
TEST_CASE("the leaf libraries run the kernel sets prism chose or PRISM_LEAF_KERNELS names") {
  const auto& req = detail::leaf_kernels_from_env();
  const std::string ob = requested(req.openblas), bl = requested(req.blis);
  const auto& cpu = detail::this_cpu();
  if ((!ob.empty() && !detail::cpu_runs(cpu, "openblas", ob)) || (!bl.empty() && !detail::cpu_runs(cpu, "blis", bl)))
    test::skip("test_leaves", "this CPU cannot run the kernel set PRISM_LEAF_KERNELS names");
  const auto& reg = detail::blis_expert::registered_archs();
  if (!bl.empty() && std::find(reg.begin(), reg.end(), bl) == reg.end())
    test::skip("test_leaves", "this BLIS did not register the configuration PRISM_LEAF_KERNELS names");
  const detail::blas_library& o = detail::leaf_library(leaf_backend::openblas);
  const detail::blas_library& b = detail::leaf_library(leaf_backend::blis);
  INFO("openblas runs ", o.kernel_name(), "; blis runs ", b.kernel_name());
  if (!ob.empty()) CHECK(o.kernel_name() == ob);
  if (!bl.empty()) CHECK(b.kernel_name() == bl);
  // auto picks the best candidate (or, for OpenBLAS, one measured faster than it).
  const auto ob_candidates = detail::openblas_core_candidates(cpu);
  if (ob.empty() && !ob_candidates.empty()) CHECK(o.kernel_name() == o.kernels()->chosen);
  const auto bl_candidates = detail::blis_arch_candidates(cpu, reg);
  if (bl.empty() && !bl_candidates.empty()) CHECK(b.kernel_name() == bl_candidates.front());
}

TEST_CASE("both leaf backends are within the componentwise bound: every type, trans pair, alpha, beta") {
  const detail::blas_library& ob = detail::leaf_library(leaf_backend::openblas);
  const detail::blas_library& bl = detail::leaf_library(leaf_backend::blis);
  check_bound_all<float>(ob, bl);
  check_bound_all<double>(ob, bl);
  check_bound_all<std::complex<float>>(ob, bl);
  check_bound_all<std::complex<double>>(ob, bl);
}

// beta NaN or infinite: reference ?gemm forms beta C first, so every element is NaN (beta NaN,
// or infinite times a zero of C) or infinite (complex: not finite); small and packed shapes.
template <class T>
void check_special_beta(const detail::blas_library& lib) {
  using R = test::real_t<T>;
  const R nan = std::numeric_limits<R>::quiet_NaN(), inf = std::numeric_limits<R>::infinity();
  for (std::int64_t s : {std::int64_t(65), std::int64_t(300)})
    for (const T beta : {T(nan), T(inf), T(-inf)}) {
      std::vector<T> A(std::size_t(s * s), T(1)), B(std::size_t(s * s), T(1)), C(std::size_t(s * s), T(1));
      for (std::int64_t j = 0; j < s; j += 2) C[std::size_t(j * s)] = T(0);  // inf x 0: NaN
      lib.gemm<T>('N', 'N', s, s, s, T(1), A.data(), s, B.data(), s, beta, C.data(), s);
      std::int64_t wrong = 0;
      for (std::int64_t j = 0; j < s; ++j)
        for (std::int64_t i = 0; i < s; ++i) {
          const T c = C[std::size_t(i + j * s)];
          const bool zero_times_inf = i == 0 && j % 2 == 0 && !std::isnan(std::abs(beta));
          if constexpr (test::is_complex_v<T>)  // (inf, NaN) or (NaN, NaN) by the order of the products
            wrong += std::isfinite(c.real()) && std::isfinite(c.imag());
          else
            wrong += std::isnan(std::abs(beta)) || zero_times_inf ? !std::isnan(c) : !std::isinf(c);
        }
      INFO(lib.path(), " ", char(scalar_type_of<T>()), " ", s, "^3, beta ", std::abs(beta));
      CHECK(wrong == 0);
    }
  // syrk (and herk): the uplo triangle is NaN, the other one untouched.
  for (char uplo : {'U', 'L'})
    for (std::int64_t s : {std::int64_t(65), std::int64_t(300)}) {
      std::vector<T> A(std::size_t(s * 64), T(1)), C(std::size_t(s * s), T(1));
      for (int herm = 0; herm < (test::is_complex_v<T> ? 2 : 1); ++herm) {
        if constexpr (test::is_complex_v<T>) {
          if (herm) lib.herk<T>(uplo, 'N', s, 64, 1.0, A.data(), s, double(nan), C.data(), s);
          else lib.syrk<T>(uplo, 'N', s, 64, T(1), A.data(), s, T(nan), C.data(), s);
        } else {
          lib.syrk<T>(uplo, 'N', s, 64, T(1), A.data(), s, T(nan), C.data(), s);
        }
        std::int64_t wrong = 0;
        for (std::int64_t j = 0; j < s; ++j)
          for (std::int64_t i = 0; i < s; ++i) {
            const bool mine = uplo == 'U' ? i <= j : i >= j;
            const T c = C[std::size_t(i + j * s)];
            wrong += mine ? !std::isnan(std::abs(c)) : !(c == T(1));
          }
        INFO(lib.path(), " ", char(scalar_type_of<T>()), herm ? " herk " : " syrk ", uplo, " n ", s);
        CHECK(wrong == 0);
        std::fill(C.begin(), C.end(), T(1));
      }
    }
}

TEST_CASE("a NaN or infinite beta reaches C on both leaf backends, as reference ?gemm forms beta C") {
  for (leaf_backend b : {leaf_backend::openblas, leaf_backend::blis}) {
    const detail::blas_library& lib = detail::leaf_library(b);
    check_special_beta<float>(lib);
    check_special_beta<double>(lib);
    check_special_beta<std::complex<float>>(lib);
    check_special_beta<std::complex<double>>(lib);
  }
}

TEST_CASE("both leaf backends give exact results when called from 4 threads at once") {
  CHECK(concurrent_errors(detail::leaf_library(leaf_backend::openblas)) == 0);
  CHECK(concurrent_errors(detail::leaf_library(leaf_backend::blis)) == 0);
}

TEST_CASE("auto: BLIS for large double and wide float leaves when its kernels are as wide as OpenBLAS's, or as measured here") {
  using detail::choose_leaf;
  const std::string ob = detail::leaf_library(leaf_backend::openblas).kernel_name();
  const std::string bl = detail::leaf_library(leaf_backend::blis).kernel_name();
  const int ob_bits = detail::kernel_vector_bits(ob), bl_bits = detail::kernel_vector_bits(bl);
  const leaf_backend large = bl_bits > 0 && bl_bits >= ob_bits ? leaf_backend::blis : leaf_backend::openblas;
  INFO("OpenBLAS kernels: ", ob, " (", ob_bits, " bits), BLIS kernels: ", bl, " (", bl_bits, " bits); ",
       detail::blas_leaf_rule_text());
  // The example machine takes the width rule whatever was measured here (its plans read
  // alike on every host); this host's description, a double leaf's class as measured here
  // where that is known (a long call of another test may have measured it into the run's
  // cache folder; tests/first_use.sh checks a kept verdict overriding the width), float
  // by width.
  CHECK(choose_leaf(test::epyc_2c(), leaf_backend::automatic, scalar_type::d, 2048, 2048, 64) == large);
  CHECK(choose_leaf(test::epyc_2c(), leaf_backend::automatic, scalar_type::d, 256, 256, 4096) == large);
  using detail::blas_leaf_class;
  const machine_description here = machine_description::detect();
  CHECK(choose_leaf(here, leaf_backend::automatic, scalar_type::d, 2048, 2048, 64) ==
        detail::measured_blas_leaf(blas_leaf_class::wide).value_or(large));
  CHECK(choose_leaf(here, leaf_backend::automatic, scalar_type::d, 256, 256, 4096) ==
        detail::measured_blas_leaf(blas_leaf_class::square).value_or(large));
  CHECK(choose_leaf(test::epyc_2c(), leaf_backend::automatic, scalar_type::s, 2048, 1024, 64) == large);
  // OpenBLAS whatever the kernels: small m or n (a leaf the streaming rule leaves to the
  // BLAS: 1 MiB of A and B, in cache), float squares, complex.
  CHECK(choose_leaf(test::epyc_2c(), leaf_backend::automatic, scalar_type::d, 64, 64, 1024, 'T', 'N') == leaf_backend::openblas);
  CHECK(detail::choose_blas_leaf(test::epyc_2c(), scalar_type::d, 64, 64, 1 << 20) == leaf_backend::openblas);
  CHECK(choose_leaf(test::epyc_2c(), leaf_backend::automatic, scalar_type::d, 127, 4096, 4096) == leaf_backend::openblas);
  CHECK(choose_leaf(test::epyc_2c(), leaf_backend::automatic, scalar_type::s, 1024, 1024, 1024) == leaf_backend::openblas);
  CHECK(choose_leaf(test::epyc_2c(), leaf_backend::automatic, scalar_type::s, 4, 4096, 4096) == leaf_backend::openblas);
  CHECK(choose_leaf(test::epyc_2c(), leaf_backend::automatic, scalar_type::z, 4096, 4096, 64) == leaf_backend::openblas);
  CHECK(choose_leaf(test::epyc_2c(), leaf_backend::automatic, scalar_type::c, 2048, 2048, 2048) == leaf_backend::openblas);
  CHECK(!ob.empty());
}

TEST_CASE("the BLAS leaf classes: squares and wide leaves told apart, each timed on both libraries") {
  using detail::blas_leaf_class;
  using detail::classify_blas_leaf;
  CHECK(classify_blas_leaf(scalar_type::d, 1024, 1024, 1024) == blas_leaf_class::square);
  CHECK(classify_blas_leaf(scalar_type::d, 128, 128, 64) == blas_leaf_class::square);
  CHECK(classify_blas_leaf(scalar_type::d, 2048, 4096, 64) == blas_leaf_class::wide);
  CHECK(classify_blas_leaf(scalar_type::d, 1024, 1024, 65) == blas_leaf_class::square);
  CHECK(classify_blas_leaf(scalar_type::s, 1024, 1024, 64) == blas_leaf_class::wide);
  CHECK(classify_blas_leaf(scalar_type::s, 256, 256, 256) == blas_leaf_class::other);
  CHECK(classify_blas_leaf(scalar_type::d, 127, 4096, 4096) == blas_leaf_class::other);
  CHECK(classify_blas_leaf(scalar_type::z, 4096, 4096, 64) == blas_leaf_class::other);
  CHECK(!detail::measured_blas_leaf(blas_leaf_class::other).has_value());
  // A generous budget: both classes are decided, each from the two libraries' rates.
  const detail::blas_leaf_verdict v = detail::measure_blas_leaves(10.0);
  INFO(v.text);
  CHECK(v.faster.size() == 2);
  for (const auto& [c, b] : v.faster) CHECK((b == leaf_backend::openblas || b == leaf_backend::blis));
  CHECK(v.text.find("wide d 1024x1024x64: openblas ") != std::string::npos);
  CHECK(v.text.find("square d 768x768x768: openblas ") != std::string::npos);
  CHECK(v.seconds > 0);
  // No time at all: nothing decided, and the text says so.
  const detail::blas_leaf_verdict none = detail::measure_blas_leaves(0.0);
  CHECK(none.faster.empty());
  CHECK(none.text.find("undecided") != std::string::npos);
}

TEST_CASE("auto resolves to a concrete backend for every leaf") {
  for (auto t : {scalar_type::s, scalar_type::d, scalar_type::c, scalar_type::z})
    CHECK(detail::choose_leaf(test::epyc_2c(), leaf_backend::automatic, t, 64, 64, 4096) != leaf_backend::automatic);
  CHECK(detail::choose_leaf(test::epyc_2c(), leaf_backend::blis, scalar_type::d, 4, 4, 4) == leaf_backend::blis);
}

// The common host: a program (NumPy, say) with the system's threaded OpenBLAS loaded
// globally. prism's leaves are a different file, so this guards against a leaf backend
// ever being switched to the host's library. The harder case, a host that loaded prism's
// own leaf file, runs in its own process: test_leaf_shared.
TEST_CASE("prism leaves are private: the host's OpenBLAS keeps its own thread setting") {
  // Play the host: load the system's threaded OpenBLAS globally, as a program linked with
  // -lopenblas would have it, and give it 2 threads.
  void* host = dlopen(detail::library_path(detail::blas_build::openblas_pthread).c_str(), RTLD_NOW | RTLD_GLOBAL);
  REQUIRE(host != nullptr);
  auto set = reinterpret_cast<void (*)(int)>(dlsym(host, "openblas_set_num_threads"));
  auto get = reinterpret_cast<int (*)()>(dlsym(host, "openblas_get_num_threads"));
  REQUIRE((set != nullptr && get != nullptr));
  set(2);
  // prism runs a recursive multiply (leaves pinned to 1 thread in their own copy; named
  // openblas, as `auto` would give this shape to the streaming leaf, which is no BLAS).
  context ctx;
  ctx.set_small_flops(0).set_threads(2).set_leaf(leaf_backend::openblas);
  const std::int64_t m = 16, n = 16, k = 50000;
  std::vector<double> A(std::size_t(m * k), 1.0), B(std::size_t(k * n), 2.0), C(std::size_t(m * n), 0.0);
  gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.0, C.data(), m, ctx);
  for (double c : C) CHECK(c == 2.0 * k);  // integer-valued: exact
  CHECK(get() == 2);
  // And the leaf copy is a different object from the host's.
  CHECK(detail::leaf_library(leaf_backend::openblas).symbol("cblas_dgemm") != dlsym(host, "cblas_dgemm"));
}
