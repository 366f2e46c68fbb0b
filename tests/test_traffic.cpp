// tests/test_traffic.cpp — the cache model of prism/traffic.hpp on hand-worked cases (the
// comparison with measured misses is tests/cache_traffic.sh, under valgrind), and the
// per-level report behind `prism plan --stats`.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <prism/bounds.hpp>
#include <prism/plan.hpp>
#include <prism/topology.hpp>
#include <prism/traffic.hpp>

#include "bounds/leaf_blocking.hpp"

#include <doctest/doctest.h>


using namespace prism;
using prism::detail::assumed_blocking;
using prism::detail::predict_leaf_words;

namespace {

plan one_leaf(std::int64_t m, std::int64_t n, std::int64_t k) {
  node leaf;
  leaf.backend = leaf_backend::openblas;
  return plan(problem{scalar_type::d, 'N', 'N', m, n, k}, resources{}, {leaf});
}

constexpr cache_shape l1{49152, 64};    // 6144 doubles
constexpr cache_shape l2{1048576, 64};  // 131072 doubles

}  // namespace

TEST_CASE("an empty plan moves nothing between domains") {
  const traffic_report r = predict_traffic(plan(), placement::prism);
  CHECK(r.remote_total() == 0);
  CHECK(r.local_total() == 0);
}

TEST_CASE("a leaf whose operands and buffers fit receives each element once") {
  // 32 x 32 x 32: 3 * 1024 operands + A~ (32 x 32) + B~ panel (32 x 24) = 4864 <= 6144.
  CHECK(predict_cache_words(one_leaf(32, 32, 32), l1) == doctest::Approx(3 * 1024 + 1024 + 32 * 24));
}

TEST_CASE("a tall-skinny leaf under L1: A~ streams once per 12 columns (the header's worked example)") {
  // 64 x 64 x 32768, S = 6144: 128 pc steps; packing reads and writes A and B (4 * 2^21),
  // the kernel sweeps A~ (64 x 256) 6 times per step (12.6 M) and reads B~ once (2^21),
  // C (64 x 64) once per step, 4096 * 128, after OpenBLAS's beta = 0 pass over it (4096).
  const double expected = 4 * 2097152.0 + 128 * 6 * 16384.0 + 2097152.0 + 4096 * 128.0 + 4096;
  CHECK(predict_cache_words(one_leaf(64, 64, 32768), l1) == doctest::Approx(expected));
  // Under 1 MiB, A~ and the B~ panel stay: A and B once, the buffers once, C once.
  CHECK(predict_cache_words(one_leaf(64, 64, 32768), l2) ==
        doctest::Approx(2 * 2097152.0 + 256 * 24 + 64 * 256 + 4096));
}

TEST_CASE("DFS parts that share a block that fits receive it once") {
  // 64 x 64 x 32768 cut in two along k: both halves accumulate into the same C (4096
  // elements, fits in L2), so the plan receives one C less than its two leaves alone.
  const plan p = plan::parse(
      "prism-plan 2\nproblem d NN 64 64 32768\nthreads 1\ndfs k cache 16384 16384\n  leaf openblas\n  leaf openblas\n");
  const double half = predict_leaf_words(64, 64, 16384, assumed_blocking(leaf_backend::openblas, scalar_type::d), l2,
                                         scalar_type::d, true);
  const double half_accumulating = predict_leaf_words(
      64, 64, 16384, assumed_blocking(leaf_backend::openblas, scalar_type::d), l2, scalar_type::d, false);
  CHECK(predict_cache_words(p, l2) == doctest::Approx(half + half_accumulating - 4096));
}

TEST_CASE("the per-level report: each cache level, then its bound") {
  const topology t = topology::synthetic("package:1 l3:1(size=8MB) l2:1(size=1MB) l1d:1(size=49152) core:1 pu:1");
  const auto levels = predict_levels(one_leaf(256, 256, 256), t);
  REQUIRE(levels.size() == 3);
  CHECK(levels[0].level == "L1");
  CHECK(levels[0].capacity == 6144);
  CHECK(levels[0].bound == doctest::Approx(bounds::sequential_io(256, 256, 256, 6144)));
  CHECK(levels[0].predicted > levels[0].bound);
  CHECK(levels[2].level == "L3");  // 8 MiB holds the whole product: each element once, plus buffers
  CHECK(levels[2].predicted == doctest::Approx(3 * 65536.0 + 256 * 256 + 256 * 24));
}
