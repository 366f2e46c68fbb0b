// tests/test_leaf_shared.cpp — its own process: the host loads prism's OpenBLAS leaf file
// (the ILP64 pthread build) globally and sets its threads before prism's first call.
// prism must then leave that copy alone (the host's thread setting stays) and compute
// its leaves with serial BLIS instead, still correctly.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "blas/blas_library.hpp"

#include <dlfcn.h>

using namespace prism;

TEST_CASE("a host that already loaded prism's OpenBLAS leaf file keeps its thread setting") {
  const std::string path = detail::library_path(detail::blas_build::openblas64_pthread);
  void* host = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  REQUIRE(host != nullptr);
  auto set = reinterpret_cast<void (*)(int)>(dlsym(host, "openblas_set_num_threads"));
  auto get = reinterpret_cast<int (*)()>(dlsym(host, "openblas_get_num_threads"));
  REQUIRE((set != nullptr && get != nullptr));
  set(2);
  context ctx;
  ctx.set_small_flops(0).set_threads(2).set_leaf(leaf_backend::openblas);
  const std::int64_t m = 12, n = 10, k = 40000;
  std::vector<double> A(std::size_t(m * k), 1.0), B(std::size_t(k * n), -2.0), C(std::size_t(m * n), 7.0);
  gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.0, C.data(), m, ctx);
  for (double c : C) CHECK(c == -2.0 * k);  // integer-valued: exact
  CHECK(get() == 2);
  CHECK(detail::blas_library::get(detail::blas_build::openblas64_pthread).shared_with_host());
  CHECK(detail::leaf_library(leaf_backend::openblas).path() ==
        detail::blas_library::get(detail::blas_build::blis_serial).path());
}
