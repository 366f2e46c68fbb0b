// tests/test_leaf_shared.cpp — its own process: the host loads prism's OpenBLAS leaf file
// (the ILP64 pthread build) globally and sets its threads before prism's first call, as a
// program using libblas64.so.3 does. prism must then leave that copy alone (the host's
// thread setting stays) and compute its leaves with the LP64 pthread build instead, or,
// when the host loaded that one too (PRISM_TEST_HOST_LOADS=both, a second ctest run), with
// serial BLIS; correctly in every case.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "leaf/backend/blas_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

using namespace prism;

TEST_CASE("a host that already loaded prism's OpenBLAS leaf file keeps its thread setting") {
  const std::string path = detail::library_path(detail::blas_build::openblas64_pthread);
  void* host = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  REQUIRE(host != nullptr);
  auto set = reinterpret_cast<void (*)(int)>(dlsym(host, "openblas_set_num_threads"));
  auto get = reinterpret_cast<int (*)()>(dlsym(host, "openblas_get_num_threads"));
  REQUIRE((set != nullptr && get != nullptr));
  set(2);
  const char* loads = std::getenv("PRISM_TEST_HOST_LOADS");
  const bool both = loads != nullptr && std::strcmp(loads, "both") == 0;
  const std::string lp64 = detail::library_path(detail::blas_build::openblas_pthread);
  int (*get_lp64)() = nullptr;
  if (both) {
    void* host_lp64 = dlopen(lp64.c_str(), RTLD_NOW | RTLD_GLOBAL);
    REQUIRE(host_lp64 != nullptr);
    auto set_lp64 = reinterpret_cast<void (*)(int)>(dlsym(host_lp64, "openblas_set_num_threads"));
    get_lp64 = reinterpret_cast<int (*)()>(dlsym(host_lp64, "openblas_get_num_threads"));
    REQUIRE((set_lp64 != nullptr && get_lp64 != nullptr));
    set_lp64(2);
  }
  context ctx;
  ctx.set_small_flops(0).set_threads(2).set_leaf(leaf_backend::openblas);
  const std::int64_t m = 12, n = 10, k = 40000;
  std::vector<double> A(std::size_t(m * k), 1.0), B(std::size_t(k * n), -2.0), C(std::size_t(m * n), 7.0);
  gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.0, C.data(), m, ctx);
  for (double c : C) CHECK(c == -2.0 * k);  // integer-valued: exact
  CHECK(get() == 2);
  CHECK(detail::blas_library::get(detail::blas_build::openblas64_pthread).shared_with_host());
  const detail::blas_library& leaf = detail::leaf_library(leaf_backend::openblas);
  if (both) {
    CHECK(leaf.path() == detail::blas_library::get(detail::blas_build::blis_serial).path());
    CHECK(get_lp64() == 2);
  } else {
    CHECK(leaf.path() == lp64);
    CHECK_FALSE(leaf.shared_with_host());
  }
}
