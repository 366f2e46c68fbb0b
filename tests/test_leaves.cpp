// tests/test_leaves.cpp — the leaf backends: safe under concurrent calls (exact results on
// integer-valued inputs), single-threaded, and isolated from the host's BLAS (prism never
// changes the thread setting of a BLAS the caller uses). Internal: reads lib/blas.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "blas/blas_library.hpp"

#include <dlfcn.h>

#include <atomic>
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

}  // namespace

TEST_CASE("both leaf backends give exact results when called from 4 threads at once") {
  CHECK(concurrent_errors(detail::leaf_library(leaf_backend::openblas)) == 0);
  CHECK(concurrent_errors(detail::leaf_library(leaf_backend::blis)) == 0);
}

TEST_CASE("auto: OpenBLAS for small or complex leaves, BLIS for large real ones only with optimised kernels") {
  using detail::choose_leaf;
  const bool blis_optimised = detail::leaf_library(leaf_backend::blis).kernel_name() != "generic";
  INFO("BLIS kernels: ", detail::leaf_library(leaf_backend::blis).kernel_name());
  CHECK(choose_leaf(leaf_backend::automatic, scalar_type::d, 64, 64, 1 << 20) == leaf_backend::openblas);
  CHECK(choose_leaf(leaf_backend::automatic, scalar_type::s, 4, 4096, 4096) == leaf_backend::openblas);
  CHECK(choose_leaf(leaf_backend::automatic, scalar_type::z, 4096, 4096, 64) == leaf_backend::openblas);
  CHECK(choose_leaf(leaf_backend::automatic, scalar_type::d, 2048, 2048, 64) ==
        (blis_optimised ? leaf_backend::blis : leaf_backend::openblas));
  CHECK(!detail::leaf_library(leaf_backend::openblas).kernel_name().empty());
}

TEST_CASE("auto resolves to a concrete backend for every leaf") {
  for (auto t : {scalar_type::s, scalar_type::d, scalar_type::c, scalar_type::z})
    CHECK(detail::choose_leaf(leaf_backend::automatic, t, 64, 64, 4096) != leaf_backend::automatic);
  CHECK(detail::choose_leaf(leaf_backend::blis, scalar_type::d, 4, 4, 4) == leaf_backend::blis);
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
