// tests/dropin/test_rate_model.cpp — the drop-in's rate model (lib/dropin/rate_model.hpp)
// with given rates: which side it picks, how it scales the backend's threads, where the
// margin sits. The rates the drop-in measures are never asserted here (or anywhere).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "dropin/rate_model.hpp"

using namespace prism::dropin;

TEST_CASE("prism's rate is its leaf rate times threads times the efficiency") {
  CHECK(prism_rate(80.0, 2) == doctest::Approx(152.0));
  CHECK(prism_rate(80.0, 1) == doctest::Approx(76.0));
  CHECK(prism_rate(0.0, 8) == 0.0);
}

TEST_CASE("the backend's rate is scaled from its own thread count to prism's") {
  CHECK(backend_rate(100.0, 2, 2) == doctest::Approx(100.0));
  CHECK(backend_rate(60.0, 1, 2) == doctest::Approx(120.0));  // OPENBLAS_NUM_THREADS=1
  CHECK(backend_rate(200.0, 4, 2) == doctest::Approx(100.0));
  CHECK(backend_rate(50.0, 0, 2) == doctest::Approx(50.0));  // unknown count: taken as is
}

TEST_CASE("faster kernels in prism's leaves take the call; the same kernels leave it to the backend") {
  // This project's machine with OPENBLAS_CORETYPE=Haswell: AVX-512 leaves at ~85 GF/s,
  // the backend's AVX2 kernels at ~100 GF/s on 2 threads.
  CHECK(prism_faster({85.0, 100.0, 2}, 2));
  // A clean environment: the backend runs the same AVX-512 kernels, ~165 GF/s on 2 threads.
  CHECK_FALSE(prism_faster({85.0, 165.0, 2}, 2));
  // Equal kernels and perfect scaling still forward: 0.95 x 2 x 100 < 1.05 x 200.
  CHECK_FALSE(prism_faster({100.0, 200.0, 2}, 2));
}

TEST_CASE("the margin: prism must beat the backend by 5% after its efficiency") {
  // prism 100 x 2 x 0.95 = 190. Backend b scaled to 2 threads takes it when 190 >= 1.05 b.
  const double edge = 190.0 / 1.05;  // 180.95...
  CHECK(prism_faster({100.0, edge * 0.999, 2}, 2));
  CHECK_FALSE(prism_faster({100.0, edge * 1.001, 2}, 2));
}

TEST_CASE("a backend running fewer threads is compared per thread, not as a whole") {
  // Same kernels, the backend limited to 1 thread: per thread it is as fast as prism's
  // leaves, so the call stays with the backend although prism has twice the threads.
  CHECK_FALSE(prism_faster({100.0, 100.0, 1}, 2));
  // A slow single-threaded backend (reference BLAS, ~3 GF/s) loses to any optimised leaf.
  CHECK(prism_faster({60.0, 3.0, 1}, 2));
}

TEST_CASE("missing measurements never take a call") {
  CHECK_FALSE(prism_faster({0.0, 100.0, 2}, 2));
  CHECK_FALSE(prism_faster({100.0, 0.0, 2}, 2));
}
