// tests/test_bounds.cpp — prism::bounds against values worked out by hand (each in a comment):
// COSMA's Theorems 1 and 2 and Table 3's two special cases, CARMA's case thresholds on both
// sides of each boundary, the modelled decompositions, and the per-level bounds of a topology.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/bounds.hpp>
#include <prism/error.hpp>
#include <prism/topology.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

using namespace prism::bounds;
using doctest::Approx;

namespace {
const double inf = unlimited;
}

TEST_CASE("sequential: the lower bound and COSMA's greedy schedule") {
  // 1000^3, S = 10^4 words: 2 * 1e9 / 100 - 2 * 10^4.
  CHECK(sequential_io(1000, 1000, 1000, 1e4) == Approx(1.998e7));
  // Unlimited memory: every word once.
  CHECK(sequential_io(1000, 1000, 1000, inf) == Approx(3e6));
  // 64 x 64 x 2^19 with a 32 KiB L1 of doubles (4096 words): every word once, 2 * 64 * 2^19 +
  // 64^2, above 2 * 2^31 / 64 - 8192.
  CHECK(sequential_io(64, 64, 524288, 4096) == Approx(67112960));
  // Never above what a schedule moves. Rows of A held: a block of a = (S - k - 1)/k rows of A
  // stays while each column of B (k words) passes and the a elements of C below it are
  // computed one by one and stored: mk + ceil(m/a) kn + mn. E.g. 1000 x 1000 x 64 with
  // S = 6144: a = 94, 11 blocks: 64,000 + 704,000 + 10^6 = 1,768,000 (COSMA's Theorem 1,
  // 2mnk/sqrt(S) + mn, says 2,632,993).
  for (const std::array<std::int64_t, 3>& mnk : {std::array<std::int64_t, 3>{1000, 1000, 64}, {2000, 2000, 48}, {4096, 4096, 100}, {500, 3000, 20}})
    for (double S : {6144.0, 16384.0, 131072.0}) {
      const std::int64_t m = mnk[0], n = mnk[1], k = mnk[2];  // (CAPTURE's lambda: no structured binding with clang 14)
      const std::int64_t a = (std::int64_t(S) - k - 1) / k;
      const double rows_held = double(m * k) + double((m + a - 1) / a) * double(k * n) + double(m * n);
      CAPTURE(m);
      CAPTURE(n);
      CAPTURE(k);
      CAPTURE(S);
      CHECK(sequential_io(m, n, k, S) <= rows_held);
      CHECK(sequential_io(m, n, k, S) <= sequential_greedy(m, n, k, S));
    }
  CHECK(sequential_io(1000, 1000, 64, 6144) == Approx(2 * 6.4e7 / std::sqrt(6144.0) - 2 * 6144));

  // Greedy, S = 10^4: blocks of 99 x 100 (99 * 100 + 99 + 1 = 10^4); 1000 is 11 blocks of
  // rows, 10 of columns: k (m * 10 + n * 11) + mn = 1000 * 21000 + 1e6.
  CHECK(sequential_greedy(1000, 1000, 1000, 1e4) == Approx(2.2e7));
  // S = 256^2 + 256 + 1: 256 x 256 blocks divide 1024 exactly: 1024 (1024 * 4 + 1024 * 4) + 2^20,
  // 14.5% above the bound's 2^31/sqrt(65793) - 2 * 65793 = 8240622.
  CHECK(sequential_greedy(1024, 1024, 1024, 65793) == Approx(9437184));
  CHECK(sequential_io(1024, 1024, 1024, 65793) == Approx(8240622.2));
  // S = 3: 1 x 1 blocks, every multiply-add loads its two operands: 2mnk + mn for 2 x 3 x 4.
  CHECK(sequential_greedy(2, 3, 4, 3) == Approx(54));
  // C fits (S >= mn + m + 1): every word once, mk + kn + mn.
  CHECK(sequential_greedy(4, 4, 100, 100) == Approx(816));
  CHECK(sequential_greedy(4, 4, 100, inf) == Approx(816));
  // Never below the bound, on awkward shapes and memories.
  for (auto [m, n, k] : {std::array<std::int64_t, 3>{1, 1, 1}, {7, 13, 1 << 20}, {1000, 3, 999}, {513, 257, 129}})
    for (double S : {3.0, 17.0, 4096.0, 1e6})
      CHECK(sequential_greedy(m, n, k, S) >= sequential_io(m, n, k, S) * (1 - 1e-12));
  CHECK_THROWS_AS(sequential_greedy(8, 8, 8, 2), prism::error);
  CHECK_THROWS_AS(sequential_io(8, 8, 8, 0), prism::error);
  CHECK_THROWS_AS(sequential_io(-1, 8, 8, 100), prism::error);
}

TEST_CASE("parallel: COSMA Theorem 2, its two branches, minus what a rank owns") {
  // 2048^3 on 8: V = mnk/P = 2^30, V^(2/3) = 2^20. S unlimited, or S = 2^20 exactly: the
  // cubic branch 3 * 2^20. Owned 3 * 2^22/8 = 1572864; Q - owned = 1572864 (1.573e6, the
  // line `prism bound 2048 2048 2048 --ranks 8` prints).
  CHECK(parallel_io(2048, 2048, 2048, 8, inf) == Approx(3145728));
  CHECK(parallel_io(2048, 2048, 2048, 8, 1048576) == Approx(3145728));
  CHECK(owned(2048, 2048, 2048, 8) == Approx(1572864));
  CHECK(parallel_io_minus_owned(2048, 2048, 2048, 8, inf) == Approx(1572864));
  // S = 2^18 < 2^20: 512 x 512 x 4096 domains, 2 * 2^30 / 2^9 + 2^18.
  CHECK(parallel_io(2048, 2048, 2048, 8, 262144) == Approx(4456448));
  // Just below the switch the two branches meet: continuous at S = V^(2/3).
  CHECK(parallel_io(2048, 2048, 2048, 8, 1048575) == Approx(3145728).epsilon(1e-6));
  // The literal min{.,.} of the theorem's statement is always the cubic term (AM-GM), and the
  // bound never drops below it.
  for (double S : {64.0, 4096.0, 262144.0, 1048576.0, 1e9, inf})
    CHECK(parallel_io(2048, 2048, 2048, 8, S) >= 3145728 * (1 - 1e-12));
  // Flat, 256 x 256 x 2^18 on 8: Q = 3 (2^31)^(2/3) = 4.99e6 < owned (2 * 2^26 + 2^16)/8: 0.
  CHECK(parallel_io_minus_owned(256, 256, 262144, 8, inf) == 0);
  // One processor with all the memory it wants: 3 n^2 = what it owns; nothing to receive.
  CHECK(parallel_io(300, 300, 300, 1, inf) == Approx(270000));
  CHECK(parallel_io_minus_owned(300, 300, 300, 1, inf) < 1e-3);  // 0 but for rounding
  CHECK_THROWS_AS(parallel_io(8, 8, 8, 0, inf), prism::error);
}

TEST_CASE("COSMA Table 3, square with limited memory: m = n = k = N, S = 2N^2/p") {
  const std::int64_t N = 1024;
  {  // p = 8, S = 2^18 = V^(2/3): Theorem 2 sits on the switch, 3 (2^27)^(2/3) = 786432.
    const std::int64_t p = 8;
    const double S = 2.0 * N * N / p;
    CHECK(parallel_io(N, N, N, p, S) == Approx(786432));
    // 2D: 2N^2/sqrt p + N^2/p. (Table 3's special case writes 2N^2 (sqrt p + 1)/p: the same
    // leading term; its general row, which we follow, has mn/p for C, not 2mn/p.)
    const auto d2 = modelled_cost(decomposition::two_d, N, N, N, p, S);
    CHECK(d2.io == Approx(2.0 * N * N / std::sqrt(8.0) + N * N / 8.0));
    CHECK(d2.io == Approx(872527.2));
    // 2.5D: c = pS/(mk + nk) = 1, so it is 2D.
    const auto d25 = modelled_cost(decomposition::two_and_half_d, N, N, N, p, S);
    CHECK(d25.grid[2] == Approx(1));
    CHECK(d25.io == Approx(d2.io));
    // Recursive: 512^3 domains (faces 3 * 2^18) do not fit in 2^18 words, so DFS to cubes of
    // side sqrt(S/3): 2 sqrt3 V/sqrt S + V^(2/3) = 2^18 (1 + 2 sqrt3), exactly Table 3's
    // special case 2N^2 (sqrt(3/(2p)) + 1/(2 p^(2/3))).
    const auto rec = modelled_cost(decomposition::recursive, N, N, N, p, S);
    CHECK(rec.io == Approx(2.0 * N * N * (std::sqrt(3.0 / 16) + 1.0 / 8)));
    CHECK(rec.io == Approx(1170237.45));
  }
  {  // p = 64, S = 2^15 < V^(2/3) = 2^16: the memory branch, sqrt2 N^2/sqrt p + 2N^2/p.
    const std::int64_t p = 64;
    const double S = 2.0 * N * N / p;
    CHECK(parallel_io(N, N, N, p, S) == Approx(std::sqrt(2.0) * N * N / 8 + 2.0 * N * N / 64));
    CHECK(parallel_io(N, N, N, p, S) == Approx(218131.8));
    // Below 2D's 2N^2/8 + N^2/64 = 278528 (Table 3 lists COSMA equal to 2D here; Eq. 33 at
    // a = sqrt S gives this lower value).
    CHECK(modelled_cost(decomposition::two_d, N, N, N, p, S).io == Approx(278528));
    CHECK(modelled_cost(decomposition::cosma, N, N, N, p, S).io == Approx(218131.8));
  }
}

TEST_CASE("COSMA Table 3, tall with extra memory: m = n = sqrt p, k = p^(3/2)/4, S = 2nk/p^(2/3)") {
  // p = 1024 (2^(3*3+1)): m = n = 32, k = 8192, S = p^(4/3)/2 = 5160.64. Owned: A and B
  // (mk + nk)/p = 512, C mn/p = 1.
  const std::int64_t p = 1024, m = 32, n = 32, k = 8192;
  const double S = 2.0 * n * k / std::cbrt(double(p) * double(p));
  CHECK(S == Approx(std::pow(1024.0, 4.0 / 3) / 2));
  CHECK(owned(m, n, k, p) == Approx(513));
  // 2D: k(m + n)/sqrt p + mn/p = 16384 + 1 (the table: p^(3/2)/2 = 16384).
  CHECK(modelled_cost(decomposition::two_d, m, n, k, p, S).io == Approx(16385));
  // 2.5D: c = pS/(mk + nk) = p^(1/3): p^(4/3)/2 + p^(1/3), as the table has it; and it is 3D.
  const auto d25 = modelled_cost(decomposition::two_and_half_d, m, n, k, p, S);
  CHECK(d25.grid[2] == Approx(std::cbrt(1024.0)));
  CHECK(d25.io == Approx(std::pow(1024.0, 4.0 / 3) / 2 + std::cbrt(1024.0)));
  CHECK(modelled_cost(decomposition::three_d, m, n, k, p, S).io == Approx(d25.io));
  // Recursive: 8 halvings of k (8192 -> 32), then m and n: 16 x 16 x 32 domains, faces
  // 256 + 512 + 512 = 5p/4; received 5p/4 - 513 = 767 (the table's 3p/4 subtracts only the
  // inputs' 512).
  const auto rec = modelled_cost(decomposition::recursive, m, n, k, p, S);
  CHECK(rec.grid[0] == Approx(2));
  CHECK(rec.grid[1] == Approx(2));
  CHECK(rec.grid[2] == Approx(256));
  CHECK(rec.io == Approx(1280));
  CHECK(rec.received == Approx(767));
  // COSMA: S >= V^(2/3) (V = 8192), so 3 V^(2/3) = 1219.12; minus 513 = 706.12, the table's
  // p (3 - 2^(1/3))/2^(4/3) = 707.12 less C's 1. Recursive moves 8% more: 768/707.
  const auto cos = modelled_cost(decomposition::cosma, m, n, k, p, S);
  CHECK(cos.io == Approx(3 * std::cbrt(8192.0 * 8192.0)));
  CHECK(cos.received + 1 == Approx(1024 * (3 - std::cbrt(2.0)) / std::pow(2.0, 4.0 / 3)));
  CHECK((rec.received + 1) / (cos.received + 1) == Approx(1.086).epsilon(0.001));
}

TEST_CASE("modelled costs, 2048^3 on 8 with unlimited memory") {
  const auto all = modelled_costs(2048, 2048, 2048, 8, inf);
  REQUIRE(all.size() == 6);
  // 1D: a 256 x 2048 x 2048 slab: 2^19 + 2^22 + 2^19; received 2^22 * 7/8 (the lecture's n^2).
  CHECK(all[0].kind == decomposition::one_d);
  CHECK(all[0].io == Approx(5242880));
  CHECK(all[0].received == Approx(3670016));
  // 2D: 2^23/sqrt 8 + 2^19.
  CHECK(all[1].io == Approx(3490108.8));
  CHECK(all[1].received == Approx(3490108.8 - 1572864));
  // 2.5D holds c at p^(1/3) = 2: 3D, (k(m + n) + mn)/p^(2/3) = 3 * 2^22/4.
  CHECK(all[2].grid[2] == Approx(2));
  CHECK(all[2].io == Approx(3145728));
  CHECK(all[3].io == Approx(3145728));
  // Recursive: 1024^3 domains, and COSMA's a = 1024: both the bound.
  CHECK(all[4].io == Approx(3145728));
  CHECK(all[4].grid[0] * all[4].grid[1] * all[4].grid[2] == Approx(8));
  CHECK(all[5].io == Approx(3145728));
  CHECK(all[5].received == Approx(1572864));
  // With S = 2^20 (c = 8 * 2^20/2^23 = 1) 2.5D falls back to 2D.
  CHECK(modelled_cost(decomposition::two_and_half_d, 2048, 2048, 2048, 8, 1048576).io == Approx(3490108.8));
}

TEST_CASE("no decomposition beats the bound (memory to spare)") {
  for (auto [m, n, k] : {std::array<std::int64_t, 3>{2048, 2048, 2048}, {64, 64, 524288}, {1000, 4000, 16000},
                         {17, 3001, 257}, {1, 1, 1}})
    for (std::int64_t p : {1, 2, 3, 7, 8, 64, 1000}) {
      const std::array<std::int64_t, 4> shape{m, n, k, p};
      CAPTURE(shape[0]);
      CAPTURE(shape[1]);
      CAPTURE(shape[2]);
      CAPTURE(shape[3]);
      const double q = parallel_io(m, n, k, p, inf);
      for (const auto& c : modelled_costs(m, n, k, p, inf)) {
        CAPTURE(c.name);
        CHECK(c.io >= q * (1 - 1e-9));
        CHECK(c.received >= parallel_io_minus_owned(m, n, k, p, inf) * (1 - 1e-9) - 1e-6);
      }
    }
}

TEST_CASE("CARMA's cases, on both sides of each threshold") {
  // 1000 x 4000 x 16000: d1 = 1000, d2 = 4000, d3 = 16000.
  // II-B: two large from P >= 2 d3/d2 = 8, three from P >= 2 d2 d3/d1^2 = 128.
  CHECK(carma_bound_case(1000, 4000, 16000, 7) == carma_case::one_large);
  CHECK(carma_bound_case(1000, 4000, 16000, 8) == carma_case::two_large);
  CHECK(carma_bound_case(1000, 4000, 16000, 127) == carma_case::two_large);
  CHECK(carma_bound_case(1000, 4000, 16000, 128) == carma_case::three_large);
  // II-C (CARMA's splits): one large up to P = d3/d2 = 4, two up to d2 d3/d1^2 = 64.
  CHECK(carma_split_case(16000, 1000, 4000, 4) == carma_case::one_large);
  CHECK(carma_split_case(16000, 1000, 4000, 5) == carma_case::two_large);
  CHECK(carma_split_case(16000, 1000, 4000, 64) == carma_case::two_large);
  CHECK(carma_split_case(16000, 1000, 4000, 65) == carma_case::three_large);
  // Thresholds between integers, 3 x 5 x 7 in any order: II-B two from 5P >= 14 (P = 3),
  // three from 9P >= 70 (P = 8); II-C two from 5P > 7 (P = 2), three from 9P > 35 (P = 4).
  CHECK(carma_bound_case(7, 3, 5, 2) == carma_case::one_large);
  CHECK(carma_bound_case(7, 3, 5, 3) == carma_case::two_large);
  CHECK(carma_bound_case(5, 7, 3, 7) == carma_case::two_large);
  CHECK(carma_bound_case(5, 7, 3, 8) == carma_case::three_large);
  CHECK(carma_split_case(3, 5, 7, 1) == carma_case::one_large);
  CHECK(carma_split_case(3, 5, 7, 2) == carma_case::two_large);
  CHECK(carma_split_case(3, 5, 7, 3) == carma_case::two_large);
  CHECK(carma_split_case(3, 5, 7, 4) == carma_case::three_large);
  // CARMA's Fig. 3 shape, 64 x 64 x 2^19 (d1 = d2): no two-large range at all.
  CHECK(carma_bound_case(64, 64, 524288, 16383) == carma_case::one_large);
  CHECK(carma_bound_case(64, 64, 524288, 16384) == carma_case::three_large);
  CHECK(carma_split_case(64, 64, 524288, 8192) == carma_case::one_large);
  CHECK(carma_split_case(64, 64, 524288, 8193) == carma_case::three_large);
  // Sizes near 2^62 do not overflow the comparisons.
  const std::int64_t big = std::int64_t(1) << 62;
  CHECK(carma_bound_case(big, big, big, 2) == carma_case::three_large);
  CHECK(carma_split_case(1, big, big, 65536) == carma_case::two_large);
  CHECK(std::string(to_string(carma_case::two_large)) == "two large dimensions");
}

TEST_CASE("CARMA II-B lower bounds with their constants, at the thresholds") {
  // 1000 x 4000 x 16000, memory to spare.
  // P = 7 (one large): min{d2d3/28 = 2285714, d1d3/28 = 571428.6, 16/25 4e6 - 4e6/7 = 1988571}.
  CHECK(carma_lower_bound(1000, 4000, 16000, 7, inf) == Approx(1.6e7 / 28));
  // P = 8 (two large): min{d2d3/16 = 4e6, sqrt(2/3 * 1e6 * 6.4e7/8) - 1.6e7/8 = 309401.1}.
  CHECK(carma_lower_bound(1000, 4000, 16000, 8, inf) == Approx(std::sqrt(2.0 / 3 * 8e12) - 2e6));
  // P = 127 (two large): min{6.4e7/254 = 251968.5, sqrt(2/3 * 6.4e13/127) - 1.6e7/127 = 453671}.
  CHECK(carma_lower_bound(1000, 4000, 16000, 127, inf) == Approx(6.4e7 / 254));
  // P = 128 (three large): (6.4e10/128)^(2/3) - 6.4e7/128 = 629960.5 - 500000.
  CHECK(carma_lower_bound(1000, 4000, 16000, 128, inf) == Approx(std::cbrt(5e8 * 5e8) - 5e5));
  // Three large with little memory: Irony et al.'s term wins. 2048^3 on 64, M = 4096:
  // 2^33/(2 sqrt2 * 64 * 64) - 4096 = 737359 > (2^27)^(2/3) - 2^22/64 = 196608.
  CHECK(carma_lower_bound(2048, 2048, 2048, 64, 4096) == Approx(std::pow(2.0, 33) / (2 * std::sqrt(2.0) * 4096) - 4096));
  CHECK(carma_lower_bound(2048, 2048, 2048, 64, inf) == Approx(196608));
  // One processor moves nothing.
  CHECK(carma_lower_bound(1000, 4000, 16000, 1, inf) == 0);
  // Table I's cost (II-C cases): one large d1 d2; two large sqrt(d1^2 d2 d3/P); three large
  // d1d2d3/(P sqrt M) + (d1d2d3/P)^(2/3).
  CHECK(carma_cost(1000, 4000, 16000, 4, inf) == Approx(4e6));
  CHECK(carma_cost(1000, 4000, 16000, 64, inf) == Approx(1e6));
  CHECK(carma_cost(1000, 4000, 16000, 65, inf) == Approx(std::cbrt((6.4e10 / 65) * (6.4e10 / 65))));
  CHECK(carma_cost(2048, 2048, 2048, 8, 1e6) == Approx(std::pow(2.0, 30) / 1000 + 1048576));
  CHECK(carma_cost(64, 64, 524288, 8, inf) == Approx(4096));
}

TEST_CASE("Elango's vertical bound per cache, horizontal per domain and rank, machine balance") {
  // 1000^3, 2 caches of 4096 words: 2e9/(2 * 64) - 2 * 4096.
  CHECK(vertical_io(1000, 1000, 1000, 4096, 2) == Approx(15616808));
  // One cache: the sequential bound.
  CHECK(vertical_io(1000, 1000, 1000, 1e4, 1) == Approx(sequential_io(1000, 1000, 1000, 1e4)));
  // A cache that holds everything still loads every word once: mk + kn + mn.
  CHECK(vertical_io(2, 2, 2, 1e6, 1) == Approx(12));
  CHECK(vertical_io(1000, 1000, 1000, 1e6, 2) == Approx(1.5e6));

  // Two NUMA domains, each one core under its own 8 MiB L3; 2048^3 doubles on 8 ranks.
  const auto t = prism::topology::synthetic("numa:2 l3:1(size=8MiB) core:1 pu:1");
  const auto levels = level_bounds(t, 2048, 2048, 2048, 8, inf, 8);
  REQUIRE(levels.size() == 3);
  CHECK(levels[0].name == "L3");
  CHECK(levels[0].kind == movement::vertical);
  CHECK(levels[0].units == 2);
  CHECK(levels[0].unit_words == Approx(1048576));
  // 16 L3 in all (2 per rank): 2 * 2^33/(16 * 1024) - 2^21 < 0, below every word once over
  // 16 caches, 3 * 2^22/16 = 786432.
  CHECK(levels[0].words == Approx(786432));
  // With one rank: 2 caches, 2^34/(2 * 1024) - 2^21 = 6291456 = 3 * 2^22/2.
  CHECK(level_bounds(t, 2048, 2048, 2048, 1, inf, 8)[0].words == Approx(6291456));
  CHECK(levels[1].name == "numa");
  CHECK(levels[1].kind == movement::horizontal);
  CHECK(levels[1].units == 2);
  CHECK(levels[1].words == Approx(parallel_io_minus_owned(2048, 2048, 2048, 16, levels[1].unit_words)));
  CHECK(levels[2].name == "ranks");
  CHECK(levels[2].words == Approx(1572864));
  // One rank, one domain: no horizontal levels.
  CHECK(level_bounds(prism::topology::synthetic("l3:1(size=8MiB) core:2 pu:1"), 64, 64, 64, 1, inf, 8).size() == 1);

  // Machine balance: 1e9 words of 8 bytes at 2e9 B/s = 4 s against 2e9 flops on 2 x 1e9: 1 s.
  level_bound a, b;
  a.name = "L3", a.words = 1e9, a.bandwidth = 2e9;
  b.name = "numa", b.words = 1e12;  // no bandwidth: not timed
  const balance bal = machine_balance({a, b}, 2e9, 2, 1e9, 8);
  CHECK(bal.compute_seconds == Approx(1));
  CHECK(bal.levels[0].seconds == Approx(4));
  CHECK(bal.levels[1].seconds == 0);
  CHECK(bal.binding == 0);
  CHECK(bal.bandwidth_bound);
  CHECK_FALSE(machine_balance({a}, 2e10, 2, 1e9, 8).bandwidth_bound);  // 10 s of compute
  CHECK(machine_balance({b}, 2e9, 2, 1e9, 8).binding == -1);
}

// ---- SYRK (C = A A^T, C n x n, A n x k) and gemm's memory-independent bound with the shape ----

namespace {
// The three closed forms of syrk_parallel_io, each evaluated whatever the case (docs/data-movement.md).
double syrk_1d(double n, double k, double P) { return (n - 1) * (n - 1) / 2 + n * k / P; }
double syrk_2d(double n, double k, double P) { return k * std::sqrt(n * (n - 1) / P) + n * (n - 1) / (2 * P); }
double syrk_3d(double n, double k, double P) { return 1.5 * std::pow(n * (n - 1) * k / P, 2.0 / 3.0); }

// Minimises f over [lo, hi] by a log-spaced grid, then golden sections around the best point
// (f is convex in the uses below, so this finds the minimum to ~1e-12 relative).
template <class F>
double minimise(F f, double lo, double hi, int steps = 20000) {
  double best_x = lo, best = f(lo);
  for (int i = 1; i <= steps; ++i) {
    const double x = lo * std::pow(hi / lo, double(i) / steps);
    if (const double v = f(x); v < best) best = v, best_x = x;
  }
  double a = std::max(lo, best_x / std::pow(hi / lo, 1.0 / steps)), b = std::min(hi, best_x * std::pow(hi / lo, 1.0 / steps));
  const double g = (std::sqrt(5.0) - 1) / 2;
  for (int i = 0; i < 200; ++i) {
    const double c = b - g * (b - a), d = a + g * (b - a);
    (f(c) < f(d) ? b : a) = (f(c) < f(d) ? d : c);
  }
  return std::min(best, f((a + b) / 2));
}

// The optimisation of the derivation solved numerically, in the two forms the page gives.
// Projections: minimise x_A + x_C with x_C in [F/k, n(n-1)/2] and x_A the least the three
// constraints allow, max{F sqrt(2/x_C), 2F/(n-1)}.
double syrk_q_by_projections(double n, double k, double P) {
  const double F = n * (n - 1) * k / (2 * P);
  return minimise([&](double xc) { return xc + std::max(F * std::sqrt(2 / xc), 2 * F / (n - 1)); }, F / k,
                  n * (n - 1) / 2);
}
// Triangle blocks: side y <= n-1, depth d = 2F/y^2 <= k; minimise y d + y^2/2.
double syrk_q_by_blocks(double n, double k, double P) {
  const double F = n * (n - 1) * k / (2 * P);
  return minimise([&](double y) { return 2 * F / y + y * y / 2; }, std::sqrt(2 * F / k), n - 1);
}
// gemm's box: a x b x c = mnk/P inside the shape, least ab + bc + ca (numerically, over a and b).
double gemm_box_q(double m, double n, double k, double P) {
  const double V = m * n * k / P;
  return minimise(
      [&](double a) {
        // For a fixed a (<= m), the best b in [V/(a k), n]: a 1D minimisation again.
        const double lo = std::max(V / (a * k), 1e-300), hi = n;
        if (lo > hi * (1 + 1e-12)) return std::numeric_limits<double>::infinity();
        return minimise([&](double b) { const double c = V / (a * b); return a * b + b * c + a * c; }, lo,
                        std::max(lo, hi), 400);
      },
      std::max(V / (n * k), 1e-300), m, 400);
}
}  // namespace

TEST_CASE("SYRK bound: the worked examples, each case") {
  // n = k = 4096 on 8 (3D): Q = 3/2 (4096 * 4095 * 4096/8)^(2/3) = 6290432, owned
  // (2^24 + 4096 * 4095/2)/8 = 3145472, 3144960 to receive: half of gemm's 6291456 for the
  // full 4096 x 4096 x 4096 (COSMA's cube and the tight bound agree there).
  CHECK(syrk_bound_case(4096, 4096, 8) == syrk_case::three_d);
  CHECK(syrk_parallel_io(4096, 4096, 8) == Approx(6290432).epsilon(1e-8));
  CHECK(syrk_owned(4096, 4096, 8) == Approx(3145472));
  CHECK(syrk_parallel_io_minus_owned(4096, 4096, 8) == Approx(3144960).epsilon(1e-7));
  CHECK(memory_independent_minus_owned(4096, 4096, 4096, 8) == Approx(6291456));
  CHECK(parallel_io_minus_owned(4096, 4096, 4096, 8, inf) == Approx(6291456));
  // 256 x 2^20 on 16 (1D: 16 * 255^2 < 256 * 2^20): all of the triangle but the rank's share,
  // 255^2/2 - 256 * 255/32 = 30472.5; gemm's full square 65536 * 15/16 = 61440.
  CHECK(syrk_bound_case(256, 1 << 20, 16) == syrk_case::one_d);
  CHECK(syrk_parallel_io_minus_owned(256, 1 << 20, 16) == Approx(30472.5));
  CHECK(memory_independent_minus_owned(256, 256, 1 << 20, 16) == Approx(61440));
  // 4096 x 256 on 4 (2D: 4 * 256^2 < 4096 * 4095): 256 sqrt(4096 * 4095/4) - 4096 * 256/4.
  CHECK(syrk_bound_case(4096, 256, 4) == syrk_case::two_d);
  CHECK(syrk_parallel_io_minus_owned(4096, 256, 4) == Approx(256 * std::sqrt(4096.0 * 4095 / 4) - 262144));
  // Nothing to do or nobody to talk to: 0.
  CHECK(syrk_parallel_io_minus_owned(0, 100, 4) == 0);
  CHECK(syrk_parallel_io_minus_owned(1, 100, 4) == 0);  // no off-diagonal entry
  CHECK(syrk_parallel_io_minus_owned(100, 0, 4) == 0);
  for (std::int64_t n : {2, 3, 100, 4096})
    for (std::int64_t k : {1, 7, 4096, 1 << 20}) CHECK(syrk_parallel_io_minus_owned(n, k, 1) == 0);
  CHECK_THROWS_AS(syrk_parallel_io_minus_owned(-1, 8, 2), prism::error);
  CHECK_THROWS_AS(syrk_parallel_io_minus_owned(8, 8, 0), prism::error);
  CHECK(std::string(to_string(syrk_case::two_d)).rfind("2D", 0) == 0);
}

TEST_CASE("SYRK bound: the three formulas agree where the cases meet (no jump)") {
  // 2D | 3D at P k^2 = n(n-1): n = 64, k = 8 meet at P = 63, where both give 96
  // (8 * 8 + 4032/126 = 1.5 * 512^(2/3)). Below it 2D, from it on 3D.
  CHECK(syrk_2d(64, 8, 63) == Approx(96));
  CHECK(syrk_3d(64, 8, 63) == Approx(96));
  CHECK(syrk_bound_case(64, 8, 62) == syrk_case::two_d);
  CHECK(syrk_bound_case(64, 8, 63) == syrk_case::three_d);
  CHECK(syrk_parallel_io(64, 8, 62) == Approx(syrk_2d(64, 8, 62)));
  CHECK(syrk_parallel_io(64, 8, 63) == Approx(96));
  // 1D | 3D at P (n-1)^2 = nk: n = 5, k = 112 meet at P = 35, both 24 (8 + 560/35 =
  // 1.5 * 64^(2/3)); n = 3, k = 8 at P = 6, both 6.
  CHECK(syrk_1d(5, 112, 35) == Approx(24));
  CHECK(syrk_3d(5, 112, 35) == Approx(24));
  CHECK(syrk_bound_case(5, 112, 34) == syrk_case::one_d);
  CHECK(syrk_bound_case(5, 112, 35) == syrk_case::three_d);
  CHECK(syrk_parallel_io(5, 112, 34) == Approx(syrk_1d(5, 112, 34)));
  CHECK(syrk_1d(3, 8, 6) == Approx(6));
  CHECK(syrk_3d(3, 8, 6) == Approx(6));
  // And at every P each case's formula is the largest of the three's lower envelope: the
  // constrained optimum is never below the unconstrained 3D one, and equals its own case's.
  for (auto [n, k] : {std::array<std::int64_t, 2>{64, 8}, {5, 112}, {4096, 4096}, {256, 1 << 20}, {1024, 65536},
                      {4096, 256}, {1000, 3}})
    for (std::int64_t P = 2; P <= 5000; P += (P < 100 ? 1 : 97)) {
      const double q = syrk_parallel_io(n, k, P);
      CHECK(q >= syrk_3d(double(n), double(k), double(P)) * (1 - 1e-12));
    }
}

TEST_CASE("SYRK bound: monotone in P") {
  // Q (words a rank touches) never grows with P; the total over ranks, P (Q - owned), never
  // shrinks. The per-rank bound itself is not monotone: in 1D it grows towards the whole
  // triangle, (n-1)^2/2 - n(n-1)/(2P), as each rank owns less of it.
  for (auto [n, k] : {std::array<std::int64_t, 2>{64, 8}, {5, 112}, {4096, 4096}, {256, 1 << 20}, {1024, 65536},
                      {4096, 256}, {1000, 3}, {2, 1000}}) {
    double q_prev = syrk_parallel_io(n, k, 1), total_prev = 0;
    for (std::int64_t P = 2; P <= 20000; P += (P < 64 ? 1 : P / 16)) {
      const double q = syrk_parallel_io(n, k, P), total = double(P) * syrk_parallel_io_minus_owned(n, k, P);
      CHECK(q <= q_prev * (1 + 1e-12));
      CHECK(total >= total_prev * (1 - 1e-12));
      q_prev = q, total_prev = total;
    }
  }
}

TEST_CASE("SYRK bound: the closed form is the optimisation's minimum (brute force)") {
  for (std::int64_t n : {2, 3, 5, 9, 16, 33})
    for (std::int64_t k : {1, 2, 5, 16, 100})
      for (std::int64_t P : {1, 2, 3, 4, 7, 8, 13, 16, 64}) {
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(P);
        const double N = double(n), K = double(k), Pd = double(P), q = syrk_parallel_io(n, k, P);
        CHECK(syrk_q_by_projections(N, K, Pd) == Approx(q).epsilon(1e-7));
        // (The block form stands for the projections from P = 2 on; one rank touches all of the
        // triangle, n(n-1)/2, which no y^2/2 with y <= n-1 reaches.)
        if (P > 1) CHECK(syrk_q_by_blocks(N, K, Pd) == Approx(q).epsilon(1e-7));
        // No real triangle block beats it: rows R (|R| = y), columns L (|L| = d) touch y d of A
        // and y(y-1)/2 of C's strict triangle for y(y-1)d/2 multiply-adds.
        const double F = N * (N - 1) * K / (2 * Pd);
        double best = std::numeric_limits<double>::infinity();
        for (std::int64_t y = 2; y <= n; ++y)
          for (std::int64_t d = 1; d <= k; ++d)
            if (double(y) * double(y - 1) * double(d) / 2 >= F)
              best = std::min(best, double(y) * double(d) + double(y) * double(y - 1) / 2);
        CHECK(best >= q * (1 - 1e-12));
      }
}

TEST_CASE("gemm's memory-independent bound: the box's minimum, continuous at CARMA's thresholds") {
  // Closed form against the box minimised numerically, across all three cases.
  for (const std::array<std::int64_t, 3>& mnk : {std::array<std::int64_t, 3>{64, 64, 64}, {16, 64, 1024}, {9, 9, 200}, {100, 7, 30}})
    for (std::int64_t P : {1, 2, 3, 8, 13, 64, 500}) {
      const std::int64_t m = mnk[0], n = mnk[1], k = mnk[2];  // (CAPTURE's lambda: no structured binding with clang 14)
      CAPTURE(m);
      CAPTURE(n);
      CAPTURE(k);
      CAPTURE(P);
      const double want = std::max(0.0, gemm_box_q(double(m), double(n), double(k), double(P)) - owned(m, n, k, P));
      CHECK(memory_independent_minus_owned(m, n, k, P) == Approx(want).epsilon(1e-6).scale(1));
    }
  // 2048^3 on 8: the cube fits, so COSMA's Theorem 2 and this agree.
  CHECK(memory_independent_minus_owned(2048, 2048, 2048, 8) == Approx(parallel_io_minus_owned(2048, 2048, 2048, 8, inf)));
  // Flat 256 x 256 x 2^18 on 8: COSMA's cube would be 2^31^(1/3) = 1290 deep in a 256-wide
  // shape and gives 0; the box gives the 1D figure, all of C but the share, 65536 * 7/8.
  CHECK(parallel_io_minus_owned(256, 256, 262144, 8, inf) == 0);
  CHECK(memory_independent_minus_owned(256, 256, 262144, 8) == Approx(57344));
  // Never below COSMA's formula (the box is the cube, or a constrained and so costlier box).
  for (std::int64_t P : {2, 7, 16, 100, 5000})
    for (auto [m, n, k] : {std::array<std::int64_t, 3>{4096, 4096, 256}, {256, 256, 1 << 20}, {1000, 4000, 16000}})
      CHECK(memory_independent_minus_owned(m, n, k, P) >= parallel_io_minus_owned(m, n, k, P, inf) * (1 - 1e-12));
}

TEST_CASE("SYRK bound against gemm's for the full square: below it, about half") {
  // C = A A^T computed as a gemm does n^2 k multiply-adds and moves A twice (as A and A^T);
  // SYRK does half the work on half of C. Its bound is below gemm's memory-independent bound
  // for the n x n x k square everywhere, and near half of it on large shapes.
  for (const std::array<std::int64_t, 2>& nk : {std::array<std::int64_t, 2>{4096, 4096}, {256, 1 << 20}, {1024, 65536},
                                                {4096, 256}, {64, 8}, {5, 112}, {33, 33}, {1000, 3}})
    for (std::int64_t P : {2, 3, 4, 7, 8, 13, 16, 64, 1000, 100000}) {
      const std::int64_t n = nk[0], k = nk[1];  // (CAPTURE's lambda: no structured binding with clang 14)
      CAPTURE(n);
      CAPTURE(k);
      CAPTURE(P);
      const double s = syrk_parallel_io_minus_owned(n, k, P), g = memory_independent_minus_owned(n, n, k, P);
      CHECK(s <= g);
      if (n >= 256 && P <= 16) CHECK(s / g == Approx(0.5).epsilon(0.03));
    }
  // COSMA's cube formula (parallel_io_minus_owned) is below the tight gemm bound off the 3D
  // case and can then be below SYRK's: 256 x 2^20 on 16 gives 0 there, SYRK 30472.5. In
  // SYRK's 3D case it stays above.
  CHECK(parallel_io_minus_owned(256, 256, 1 << 20, 16, inf) == 0);
  for (std::int64_t P : {2, 4, 7, 8, 13, 16})
    CHECK(syrk_parallel_io_minus_owned(4096, 4096, P) <= parallel_io_minus_owned(4096, 4096, 4096, P, inf));
}
