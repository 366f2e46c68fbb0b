// tests/dropin/test_fast_path.cpp — the drop-in's fast path, observed from inside: this test
// links the drop-in's sources directly (not libprism_blas.so, whose internals are hidden),
// so it can see fast_path_state. In the default environment the first valid call publishes
// the backend's entry points; afterwards a small valid call is handed to them as it is,
// while quick returns and large calls take the full dispatch. (The drop-in programs check
// results; this checks that the fast path is really there.)
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/context.hpp>

#include "dropin/dispatch.hpp"

#include <complex>
#include <limits>
#include <vector>

extern "C" void cblas_dgemm(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                            double*, int);

using prism::dropin::fast_path_takes;
using prism::dropin::fast_state;

TEST_CASE("the first call publishes the fast path; small valid calls then take it") {
  REQUIRE_FALSE(fast_state.ready.load());
  std::vector<double> A(16, 1.0), B(16, 2.0), C(16, 3.0);
  cblas_dgemm(102, 111, 111, 4, 4, 4, 1.0, A.data(), 4, B.data(), 4, 1.0, C.data(), 4);
  for (double c : C) CHECK(c == 4 * 2.0 + 3.0);
  REQUIRE(fast_state.ready.load());
  REQUIRE(fast_state.b != nullptr);
  CHECK(fast_state.small_flops == prism::default_context().small_flops());
  for (int i = 0; i < 4; ++i) {  // the entry points the fast path jumps to
    CHECK(fast_state.b->fortran_entry(i) != nullptr);
    CHECK(fast_state.b->cblas_entry(i) != nullptr);
  }
  CHECK(fast_state.b->has_cblas());  // OpenBLAS, the default backend here, has CBLAS

  // Which calls it takes: small valid ones; not quick returns, alpha = 0, a beta that is
  // not finite (a backend may take NaN as 0) or large calls.
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  CHECK(fast_path_takes<double>(4, 4, 4, 1.0, 0.5));
  CHECK_FALSE(fast_path_takes<double>(0, 4, 4, 1.0, 0.5));
  CHECK_FALSE(fast_path_takes<double>(4, 4, 0, 1.0, 0.5));
  CHECK_FALSE(fast_path_takes<double>(4, 4, 4, 0.0, 0.5));
  CHECK_FALSE(fast_path_takes<double>(4, 4, 4, 1.0, nan));
  CHECK_FALSE(fast_path_takes<double>(4, 4, 4, 1.0, -inf));
  CHECK_FALSE(fast_path_takes<double>(128, 128, 128, 1.0, 0.5));
  CHECK(fast_path_takes<std::complex<double>>(16, 16, 16, {0.0, 1.0}, {1.0, 0.0}));
  CHECK_FALSE(fast_path_takes<std::complex<double>>(16, 16, 16, {0.0, 1.0}, {1.0, nan}));
  CHECK_FALSE(fast_path_takes<std::complex<double>>(64, 64, 64, {1.0, 0.0}, {1.0, 0.0}));  // 8 mnk flops

  // A row-major call through the fast path, layout unchanged for the backend's CBLAS:
  // A (2 x 3) = [1 2 3; 4 5 6] times B (3 x 2) = [1 0; 0 1; 1 1] is [4 5; 10 11].
  const double Ar[6] = {1, 2, 3, 4, 5, 6}, Br[6] = {1, 0, 0, 1, 1, 1};
  double Cr[4] = {-1, -1, -1, -1};
  cblas_dgemm(101, 111, 111, 2, 2, 3, 1.0, Ar, 3, Br, 2, 0.0, Cr, 2);
  CHECK(Cr[0] == 4.0);
  CHECK(Cr[1] == 5.0);
  CHECK(Cr[2] == 10.0);
  CHECK(Cr[3] == 11.0);
}

TEST_CASE("rank-k updates: small valid ?syrk / ?herk calls take the fast path to the backend's routine") {
  using prism::dropin::rank_k_fast;
  // Published by the previous case's first call (the process-wide state).
  REQUIRE(fast_state.ready.load());
  // C = A^T A on the upper triangle, A (3 x 2) = [1 2; 3 4; 5 6]: [35 44; . 56]; the lower
  // triangle stays as it was.
  const double A[6] = {1, 3, 5, 2, 4, 6};
  double C[4] = {-1, -7, -1, -1};
  CHECK(rank_k_fast<double>(false, 'U', 'T', 2, 3, 1.0, A, 3, 0.0, C, 2));
  CHECK(C[0] == 35.0);
  CHECK(C[2] == 44.0);
  CHECK(C[3] == 56.0);
  CHECK(C[1] == -7.0);
  // zherk: C = A^H A with A (1 x 1) = (1 + 2i): 5, imaginary part of the diagonal zero.
  const std::complex<double> Z[1] = {{1.0, 2.0}};
  std::complex<double> W[1] = {{0.0, 9.0}};
  CHECK(rank_k_fast<std::complex<double>>(true, 'L', 'C', 1, 1, {1.0, 0.0}, Z, 1, {0.0, 0.0}, W, 1));
  CHECK(W[0] == std::complex<double>(5.0, 0.0));
  // Not taken (nothing done): quick returns, alpha = 0, and calls at or above PRISM_SMALL_FLOPS.
  double D[4] = {2, 2, 2, 2};
  CHECK_FALSE(rank_k_fast<double>(false, 'U', 'T', 2, 0, 1.0, A, 3, 0.0, D, 2));
  CHECK_FALSE(rank_k_fast<double>(false, 'U', 'T', 2, 3, 0.0, A, 3, 0.0, D, 2));
  std::vector<double> big(std::size_t(128) * 128, 1.0), G(std::size_t(128) * 128, 0.0);
  CHECK_FALSE(rank_k_fast<double>(false, 'U', 'T', 128, 128, 1.0, big.data(), 128, 0.0, G.data(), 128));
  for (double d : D) CHECK(d == 2.0);
  for (double g : G) CHECK(g == 0.0);
}
