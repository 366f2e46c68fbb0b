// tests/dropin/test_fast_path.cpp — the drop-in's inline fast path, observed from inside:
// this test links the drop-in's sources directly (not libprism_blas.so, whose internals
// are hidden), so it can see fast_path_state. In the default environment the first valid
// call publishes the state; afterwards try_fast takes small valid calls and leaves quick
// returns and large calls to the full dispatch. (The drop-in programs check results; this
// checks that the fast path is really there.)
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/context.hpp>

#include "dropin/dispatch.hpp"

#include <vector>

extern "C" void cblas_dgemm(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                            double*, int);

using prism::dropin::fast_state;
using prism::dropin::try_fast;
using prism::dropin::try_fast_cblas;

TEST_CASE("the first call publishes the fast path; small valid calls then take it") {
  REQUIRE_FALSE(fast_state.ready.load());
  std::vector<double> A(16, 1.0), B(16, 2.0), C(16, 3.0);
  cblas_dgemm(102, 111, 111, 4, 4, 4, 1.0, A.data(), 4, B.data(), 4, 1.0, C.data(), 4);
  for (double c : C) CHECK(c == 4 * 2.0 + 3.0);
  REQUIRE(fast_state.ready.load());
  CHECK(fast_state.b != nullptr);
  CHECK(fast_state.small_flops == prism::default_small_flops);

  // A small valid call: taken, and computed by the backend.
  CHECK(try_fast<double>('N', 'N', 4, 4, 4, 1.0, A.data(), 4, B.data(), 4, 0.0, C.data(), 4));
  for (double c : C) CHECK(c == 8.0);
  // Quick returns and alpha = 0 stay with the full path (prism's prologue), untouched here.
  CHECK_FALSE(try_fast<double>('N', 'N', 0, 4, 4, 1.0, A.data(), 4, B.data(), 4, 0.0, C.data(), 4));
  CHECK_FALSE(try_fast<double>('N', 'N', 4, 4, 0, 1.0, A.data(), 4, B.data(), 4, 0.0, C.data(), 4));
  CHECK_FALSE(try_fast<double>('N', 'N', 4, 4, 4, 0.0, A.data(), 4, B.data(), 4, 0.0, C.data(), 4));
  for (double c : C) CHECK(c == 8.0);
  // A CBLAS call goes to the backend's own cblas_?gemm, layout unchanged: row-major
  // A (2 x 3) = [1 2 3; 4 5 6] times B (3 x 2) = [1 0; 0 1; 1 1] is [4 5; 10 11].
  const double Ar[6] = {1, 2, 3, 4, 5, 6}, Br[6] = {1, 0, 0, 1, 1, 1};
  double Cr[4] = {-1, -1, -1, -1};
  CHECK(fast_state.b->has_cblas());
  CHECK(try_fast_cblas<double>(101, 111, 111, 'N', 'N', 2, 2, 3, 1.0, Ar, 3, Br, 2, 0.0, Cr, 2));
  CHECK(Cr[0] == 4.0);
  CHECK(Cr[1] == 5.0);
  CHECK(Cr[2] == 10.0);
  CHECK(Cr[3] == 11.0);
  // At or above the small threshold: the full dispatch decides.
  std::vector<double> big(std::size_t(128) * 128, 1.0), out(std::size_t(128) * 128, 0.0);
  CHECK_FALSE(try_fast<double>('N', 'N', 128, 128, 128, 1.0, big.data(), 128, big.data(), 128, 0.0, out.data(), 128));
  for (double c : out) CHECK(c == 0.0);
}
