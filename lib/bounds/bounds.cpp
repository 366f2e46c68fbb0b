// lib/bounds/bounds.cpp — the lower bounds and modelled costs of prism/bounds.hpp.
//
// Every formula below names its source; a few of the sources need reading with care, and
// the reading chosen is written down where it is used:
//  - COSMA's Theorem 2 states min{2mnk/(p sqrt S) + S, 3 (mnk/p)^(2/3)}. Taken literally that
//    min is always the second term (by AM-GM, V/sqrt S + V/sqrt S + S >= 3 V^(2/3) for every S,
//    V = mnk/p), so S would never matter. The proof (Eq. 31-33) means the cost 2V/a + a^2 of
//    the optimal a x a x b domain at a = min{sqrt S, V^(1/3)} (Eq. 32): the first term when
//    S < V^(2/3), the second otherwise. parallel_io computes that; both readings agree
//    whenever S >= V^(2/3), which includes S unlimited (the `prism bound` default).
//  - COSMA Table 3's recursive row reads 2 min{sqrt3 V/sqrt S, V^(2/3)} + V^(2/3); its own
//    "square, limited memory" special case, 2n^2 (sqrt(3/(2p)) + 1/(2 p^(2/3))), is the max,
//    not the min (with ample memory the min would undercut the faces of the local cube). We
//    use the max when the recursion's local domain does not fit in S, its faces when it does.
#include <prism/bounds.hpp>
#include <prism/error.hpp>
#include <prism/topology.hpp>

#include <algorithm>
#include <cmath>

namespace prism::bounds {

namespace {

double dbl(std::int64_t x) { return double(x); }

// m, n, k sorted: d[0] <= d[1] <= d[2] (CARMA's d1, d2, d3).
struct sorted_dims {
  std::int64_t d1, d2, d3;
};
sorted_dims sorted(std::int64_t m, std::int64_t n, std::int64_t k) {
  std::int64_t d[3] = {m, n, k};
  std::sort(d, d + 3);
  return {d[0], d[1], d[2]};
}

// Words of the faces of an a x b x c local domain (rows x columns x inner): its A block
// (a c), B block (c b) and C block (a b), each read or written once.
double faces(double a, double b, double c) { return a * c + c * b + a * b; }

void check_sizes(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p) {
  if (m < 0 || n < 0 || k < 0) throw error("prism::bounds: m, n and k must be >= 0");
  if (p < 1) throw error("prism::bounds: the number of processors must be >= 1");
}

// q - owned, floored at 0, and 0 where the two agree to rounding: at p = 1 a cube's
// 3 (mnk)^(2/3) equals mk + kn + mn exactly, and cbrt's last bit would read as 1e-14 words.
double above_owned(double q, double owned_words) {
  return q - owned_words > 1e-12 * std::max(q, owned_words) ? q - owned_words : 0.0;
}

// parallel_io on real-valued work: V multiply-adds per processor, S words each.
double cosma_q(double V, double S) {
  if (V <= 0) return 0;
  const double side = std::cbrt(V);  // V^(1/3): the cube's side
  if (!(S < side * side)) return 3 * side * side;
  return 2 * V / std::sqrt(S) + S;
}

}  // namespace

// ---- sequential ----

// max{mk + kn + mn, 2mnk/sqrt(S) - 2S}. The first: every element of A and B is read, and of
// C written, at least once. The second is Smith and van de Geijn's bound on the reads of
// C := AB + C (arXiv:1702.02017, quoted in COSMA's Section 5); a schedule of
// C := AB that read each element of C before its first update would be one of those, so its
// reads plus mn reach the bound, and its writes of C are mn or more. COSMA's Theorem 1,
// 2mnk/sqrt(S) + mn, is not a bound for k below about 2 sqrt(S): with a block of (S - k - 1)/k
// rows of A held while each column of B streams past it, 1000 x 1000 x 64 with S = 6144 (94
// rows, 11 blocks) moves 64,000 + 11 x 64,000 + 10^6 = 1,768,000 words, against its
// 2,632,993. E.g. 1000^3 with S = 10^4: 2e9/100 - 2e4 = 1.998e7 words; with S unlimited
// (the second term -inf) every word once, 3e6.
double sequential_io(std::int64_t m, std::int64_t n, std::int64_t k, double S) {
  check_sizes(m, n, k, 1);
  if (!(S > 0)) throw error("prism::bounds::sequential_io: S must be > 0");
  return std::max(owned(m, n, k, 1), 2 * dbl(m) * dbl(n) * dbl(k) / std::sqrt(S) - 2 * S);
}

// COSMA's Listing 1 with the Corollary's block: C in a x b blocks, each block's partial sums
// held in fast memory while k rank-1 updates stream a elements of A and b of B through it;
// the a elements of A stay while the b of B pass one at a time, so ab + a + 1 <= S (Eq. 26).
// Exact count with smaller blocks at the edges: k (m ceil(n/b) + n ceil(m/a)) + mn.
// E.g. 1000^3, S = 10^4: a = 99, b = 100: 1000 (1000 * 10 + 1000 * 11) + 1e6 = 2.2e7, 10.1%
// above sequential_io's 1.998e7 (and the divisions are not exact: 1000/99 rounds up to 11).
double sequential_greedy(std::int64_t m, std::int64_t n, std::int64_t k, double S) {
  check_sizes(m, n, k, 1);
  if (!(S >= 3)) throw error("prism::bounds::sequential_greedy: S must be >= 3 (a 1 x 1 block needs 3 words)");
  const double M = dbl(m), N = dbl(n), K = dbl(k);
  if (m == 0 || n == 0) return 0;
  if (S >= M * N + M + 1) return K * (M + N) + M * N;  // all of C fits: one block, every input once
  auto count = [&](double a, double b) { return K * (M * std::ceil(N / b) + N * std::ceil(M / a)) + M * N; };
  // b for a given a: the most that fits, never more than n.
  auto b_for = [&](double a) { return std::min(N, std::floor((S - 1 - a) / a)); };
  double best = std::numeric_limits<double>::infinity();
  auto consider = [&](double a) {
    a = std::min(a, M);
    if (a < 1) return;
    const double b = b_for(a);
    if (b >= 1) best = std::min(best, count(a, b));
  };
  // Near the square block a ~ sqrt(S) (the Corollary's a_opt, b_opt), and the two corners
  // where one side is capped by the shape: b = n (the largest a with a n + a + 1 <= S) and
  // a = m.
  const double root = std::floor(std::sqrt(S));
  for (double a = std::max(1.0, root - 64); a <= root + 64; ++a) consider(a);
  consider(std::floor((S - 1) / (N + 1)));
  consider(M);
  return best;
}

// ---- parallel ----

// E.g. 2048^3, p = 8: V = 2^30, V^(2/3) = 2^20. S unlimited or >= 2^20: 3 * 2^20 = 3145728
// (the cubic branch: a 1024^3 cube per rank). S = 2^18: 2 * 2^30/2^9 + 2^18 = 4456448 (the
// memory-bound branch: 512 x 512 x 4096 domains).
double parallel_io(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p, double S) {
  check_sizes(m, n, k, p);
  if (!(S > 0)) throw error("prism::bounds::parallel_io: S must be > 0");
  return cosma_q(dbl(m) * dbl(n) * dbl(k) / dbl(p), S);
}

double owned(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p) {
  check_sizes(m, n, k, p);
  return (dbl(m) * dbl(k) + dbl(k) * dbl(n) + dbl(m) * dbl(n)) / dbl(p);
}

// E.g. 2048^3 on 8 ranks, S unlimited: 3145728 - 1572864 = 1572864 (= 1.573e6, the
// acceptance line of `prism bound 2048 2048 2048 --ranks 8`). 256 x 256 x 262144 on 8 ranks:
// Q = 3 (2^31)^(2/3) = 4.99e6 < owned = 1.68e7, so 0: a layout can already give each rank
// all it needs (cut k).
double parallel_io_minus_owned(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p, double S) {
  return above_owned(parallel_io(m, n, k, p, S), owned(m, n, k, p));
}

// ---- CARMA ----

const char* to_string(carma_case c) {
  switch (c) {
    case carma_case::one_large: return "one large dimension";
    case carma_case::two_large: return "two large dimensions";
    case carma_case::three_large: return "three large dimensions";
  }
  return "?";
}

// Integer comparisons in 128 bits: d up to 2^63 and P d1^2 overflow 64.
// E.g. 64 x 64 x 524288 (d1 = d2 = 64, d3 = 2^19): 2 d3/d2 = 16384 and 2 d2 d3/d1^2 = 16384,
// so P < 16384 is one large dimension, P >= 16384 three (two is empty: d1 = d2).
carma_case carma_bound_case(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p) {
  check_sizes(m, n, k, p);
  const auto [d1, d2, d3] = sorted(m, n, k);
  using wide = __int128;
  if (wide(p) * wide(d1) * wide(d1) >= 2 * wide(d2) * wide(d3)) return carma_case::three_large;
  if (wide(p) * wide(d2) >= 2 * wide(d3)) return carma_case::two_large;
  return carma_case::one_large;
}

// E.g. 64 x 64 x 524288: P <= 8192 one large, P > 8192 three. 1000 x 4000 x 16000: P <= 4
// one, 4 < P <= 64 two, P > 64 three.
carma_case carma_split_case(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p) {
  check_sizes(m, n, k, p);
  const auto [d1, d2, d3] = sorted(m, n, k);
  using wide = __int128;
  if (wide(p) * wide(d2) <= wide(d3)) return carma_case::one_large;
  if (wide(p) * wide(d1) * wide(d1) <= wide(d2) * wide(d3)) return carma_case::two_large;
  return carma_case::three_large;
}

// CARMA II-B, each case's bound before its Omega() simplification (those are valid for every
// P in the case; the simplified constants 7/50 and sqrt(2/3) - 1/sqrt 2 follow from them):
//  one large:  the busiest processor needs >= 5/4 of its share of M1 (d2 d3/P) or of M2
//              (d1 d3/P), or else >= 16/25 of M3 (d1 d2) by Loomis-Whitney, of which it owns
//              d1 d2/P: min{d2d3/(4P), d1d3/(4P), 16/25 d1d2 - d1d2/P}.
//  two large:  >= 3/2 of its share of M1, or max{|S2|, |S3|} >= sqrt(2/3) sqrt(d1^2 d2 d3/P)
//              of which it owns <= d1 d3/P: min{d2d3/(2P), sqrt(2/3 d1^2 d2 d3/P) - d1d3/P}.
//  three large: Irony et al.'s d1d2d3/(2 sqrt2 P sqrt M) - M and the memory-independent
//              (d1d2d3/P)^(2/3) - d2d3/P, the larger of the two.
// E.g. 2048^3 on 8 (three large): (2^30)^(2/3) - 2^22/8 = 1048576 - 524288 = 524288.
double carma_lower_bound(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p, double S) {
  check_sizes(m, n, k, p);
  if (!(S > 0)) throw error("prism::bounds::carma_lower_bound: S must be > 0");
  if (p == 1) return 0;
  const auto [i1, i2, i3] = sorted(m, n, k);
  const double d1 = dbl(i1), d2 = dbl(i2), d3 = dbl(i3), P = dbl(p);
  double w = 0;
  switch (carma_bound_case(m, n, k, p)) {
    case carma_case::one_large:
      w = std::min({d2 * d3 / (4 * P), d1 * d3 / (4 * P), 16.0 / 25.0 * d1 * d2 - d1 * d2 / P});
      break;
    case carma_case::two_large:
      w = std::min(d2 * d3 / (2 * P), std::sqrt(2.0 / 3.0 * d1 * d1 * d2 * d3 / P) - d1 * d3 / P);
      break;
    case carma_case::three_large: {
      const double independent = std::cbrt((d1 * d2 * d3 / P) * (d1 * d2 * d3 / P)) - d2 * d3 / P;
      const double dependent = std::isinf(S) ? -S : d1 * d2 * d3 / (2 * std::sqrt(2.0) * P * std::sqrt(S)) - S;
      w = std::max(independent, dependent);
      break;
    }
  }
  return std::max(0.0, w);
}

// Table I's CARMA row (equal to its lower-bound row), leading terms with constant 1.
// E.g. 64 x 64 x 524288 on 8 (one large): d1 d2 = 4096. 2048^3 on 8, S unlimited:
// (2^30)^(2/3) = 1048576.
double carma_cost(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p, double S) {
  check_sizes(m, n, k, p);
  if (!(S > 0)) throw error("prism::bounds::carma_cost: S must be > 0");
  const auto [i1, i2, i3] = sorted(m, n, k);
  const double d1 = dbl(i1), d2 = dbl(i2), d3 = dbl(i3), P = dbl(p);
  switch (carma_split_case(m, n, k, p)) {
    case carma_case::one_large: return d1 * d2;
    case carma_case::two_large: return std::sqrt(d1 * d1 * d2 * d3 / P);
    case carma_case::three_large:
      return d1 * d2 * d3 / (P * std::sqrt(S)) + std::cbrt((d1 * d2 * d3 / P) * (d1 * d2 * d3 / P));
  }
  return 0;
}

// ---- memory-independent bounds with the shape's constraints ----

// The least faces of an a x b x c box holding V = d1d2d3/P multiply-adds inside the d1 x d2 x d3
// iteration space: the cube while it fits (V^(1/3) <= d1), else flat against d1
// (a = d1, b = c = sqrt(d2d3/P)) while that fits (b <= d2), else a = d1, b = d2, c = d3/P: the
// cases of carma_split_case, whose thresholds are exactly where each box stops fitting. The
// faces are continuous across them. E.g. 256 x 256 x 2^20 on 16: d3/d2 = 4096 >= 16, one
// large: 65536 + 512 * 65536 = 33619968 words touched, owned (65536 + 2 * 2^28)/16 = 33558528,
// so 61440 = 65536 * 15/16 to receive: the whole of C's 256 x 256 but the rank's share.
double memory_independent_minus_owned(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p) {
  check_sizes(m, n, k, p);
  const auto [i1, i2, i3] = sorted(m, n, k);
  const double d1 = dbl(i1), d2 = dbl(i2), d3 = dbl(i3), P = dbl(p);
  if (i1 == 0) return 0;
  double q = 0;
  switch (carma_split_case(m, n, k, p)) {
    case carma_case::one_large: q = faces(d1, d2, d3 / P); break;
    case carma_case::two_large: {
      const double side = std::sqrt(d2 * d3 / P);
      q = faces(d1, side, side);
      break;
    }
    case carma_case::three_large: {
      const double side = std::cbrt(d1 * d2 * d3 / P);
      q = 3 * side * side;
      break;
    }
  }
  return above_owned(q, owned(m, n, k, p));
}

// SYRK, C = A A^T with C n x n symmetric and A n x k. The derivation is docs/data-movement.md's
// "SYRK" section; in short, a rank doing F = n(n-1)k/(2P) of the off-diagonal multiply-adds
// C_ij += A_il A_jl (i > j) and touching x_A words of A and x_C of C's strict triangle has
//   F <= x_A sqrt(x_C/2)    (the symmetric Loomis-Whitney inequality: per column l of A, r_l rows
//                            give at most min(x_C, r_l^2/2) pairs <= r_l sqrt(x_C/2))
//   F <= k x_C              (an entry of C takes k multiply-adds: the depth)
//   2F <= (n-1) x_A         (an element of A is in n-1 off-diagonal products, two per product)
// and Q = min x_A + x_C over these. With the triangle side y = sqrt(2 x_C) and depth d = x_A/y
// the minimum is a triangle block y x y x d: the cube-like y = d = (2F)^(1/3) (3D) unless it
// is deeper than k (then d = k: 2D) or wider than n-1 (then x_C = (n-1)^2/2, x_A = nk/P: 1D).
// The thresholds are where those boxes stop fitting:
//   1D: (2F)^(1/3) > n-1  <=>  P (n-1)^2 < nk       2D: (2F)^(1/3) > k  <=>  P k^2 < n(n-1)
// E.g. n = k = 4096 on 8: neither (8 * 4095^2 > 2^24, 8 * 2^24 > 4096 * 4095), so 3D:
// 2F = 4096 * 4095 * 4096/8 = 2048^3 * 4095/4096, so y = d = 2047.83 (not deeper than k, not
// wider than n - 1), Q = 3/2 y^2 = 6290432 (to the word), owned (2^24 + 4096 * 4095/2)/8 =
// 3145472: 3144960 to receive, 25.2 MB of doubles.
const char* to_string(syrk_case c) {
  switch (c) {
    case syrk_case::one_d: return "1D (a rank's triangle is all of C)";
    case syrk_case::two_d: return "2D (a rank's depth is all of k)";
    case syrk_case::three_d: return "3D (a triangle block as deep as it is wide)";
  }
  return "?";
}

namespace {
void check_syrk(std::int64_t n, std::int64_t k, std::int64_t p) {
  if (n < 0 || k < 0) throw error("prism::bounds: n and k must be >= 0");
  if (p < 1) throw error("prism::bounds: the number of processors must be >= 1");
}
}  // namespace

syrk_case syrk_bound_case(std::int64_t n, std::int64_t k, std::int64_t p) {
  check_syrk(n, k, p);
  if (p == 1) return syrk_case::one_d;  // the one rank touches everything
  using wide = __int128;
  if (wide(p) * wide(n - 1) * wide(n - 1) < wide(n) * wide(k)) return syrk_case::one_d;
  if (wide(p) * wide(k) * wide(k) < wide(n) * wide(n - 1)) return syrk_case::two_d;
  return syrk_case::three_d;
}

double syrk_parallel_io(std::int64_t n, std::int64_t k, std::int64_t p) {
  check_syrk(n, k, p);
  if (n < 2 || k == 0) return 0;
  const double N = dbl(n), K = dbl(k), P = dbl(p), pairs = N * (N - 1);  // twice the strict triangle
  // One rank: every word of A and of the strict triangle (the depth constraint alone forces
  // x_C = n(n-1)/2, the width one x_A = nk). From P = 2 on, the cases below hold as derived.
  if (p == 1) return N * K + pairs / 2;
  switch (syrk_bound_case(n, k, p)) {
    case syrk_case::one_d: return (N - 1) * (N - 1) / 2 + N * K / P;
    case syrk_case::two_d: return K * std::sqrt(pairs / P) + pairs / (2 * P);
    case syrk_case::three_d: {
      const double side = std::cbrt(pairs * K / P);  // (2F)^(1/3)
      return 1.5 * side * side;
    }
  }
  return 0;
}

double syrk_owned(std::int64_t n, std::int64_t k, std::int64_t p) {
  check_syrk(n, k, p);
  const double N = dbl(n);
  return (N * dbl(k) + N * (N - 1) / 2) / dbl(p);
}

double syrk_parallel_io_minus_owned(std::int64_t n, std::int64_t k, std::int64_t p) {
  return above_owned(syrk_parallel_io(n, k, p), syrk_owned(n, k, p));
}

// ---- decompositions ----

// Each cost is Q, the words one processor's local domain reads and writes (COSMA's I/O), and
// Q - owned. Worked example, 2048^3 on p = 8, S unlimited (owned 1572864):
//   1D:   cut one dimension 8 ways; every choice moves a whole 2048^2 operand: Q = 2^22/8 +
//         2^22 + 2^22/8 = 5242880, received 3670016 = 2^22 * 7/8 (the lecture's beta n^2).
//   2D:   sqrt 8 x sqrt 8 grid: k(m + n)/sqrt p + mn/p = 2^23/2.828 + 2^19 = 3490109.
//   2.5D: c = pS/(mk + nk) is capped at p^(1/3) = 2, so it is 3D: (k(m+n) + mn)/p^(2/3) = 3145728.
//   recursive: three halvings give 1024^3 domains: faces 3 * 2^20 = 3145728.
//   COSMA: parallel_io, 3145728.
decomposition_cost modelled_cost(decomposition d, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p,
                                 double S) {
  check_sizes(m, n, k, p);
  if (!(S > 0)) throw error("prism::bounds::modelled_cost: S must be > 0");
  const double M = dbl(m), N = dbl(n), K = dbl(k), P = dbl(p), V = M * N * K / P;
  decomposition_cost c;
  c.kind = d;
  auto set_grid = [&](double pm, double pn, double pk) {
    c.grid[0] = pm, c.grid[1] = pn, c.grid[2] = pk;
  };
  switch (d) {
    case decomposition::one_d: {
      // The lecture's block-row algorithm, cutting whichever dimension replicates the
      // smallest operand: m (B moves), n (A moves) or k (partial C are reduced).
      c.name = "1D (block rows)", c.source = "lecture: 1D block row";
      const double by_m = faces(M / P, N, K), by_n = faces(M, N / P, K), by_k = faces(M, N, K / P);
      c.io = std::min({by_m, by_n, by_k});
      if (c.io == by_m) set_grid(P, 1, 1);
      else if (c.io == by_n) set_grid(1, P, 1);
      else set_grid(1, 1, P);
      break;
    }
    case decomposition::two_d:
      // COSMA Table 3, 2D: [sqrt p x sqrt p x 1], Q = k(m + n)/sqrt p + mn/p.
      c.name = "2D (SUMMA/Cannon)", c.source = "COSMA Table 3";
      set_grid(std::sqrt(P), std::sqrt(P), 1);
      c.io = K * (M + N) / std::sqrt(P) + M * N / P;
      break;
    case decomposition::two_and_half_d:
    case decomposition::three_d: {
      // COSMA Table 3, 2.5D: c = pS/(mk + nk) copies, [sqrt(p/c) x sqrt(p/c) x c],
      // Q = (k(m+n))^(3/2)/(p sqrt S) + mnS/(k(m+n)) = k(m+n)/sqrt(pc) + mnc/p with
      // S = c k(m+n)/p. c is held in [1, p^(1/3)] (below 1 A and B do not fit: 2D; above
      // p^(1/3) the k extent would exceed the others: 3D), and 3D is c = p^(1/3).
      const double cube = std::cbrt(P);
      double copies = cube;
      if (d == decomposition::two_and_half_d) {
        c.name = "2.5D", c.source = "COSMA Table 3";
        const double kmn = K * (M + N);
        copies = kmn > 0 ? std::clamp(P * S / kmn, 1.0, cube) : cube;
      } else {
        c.name = "3D", c.source = "COSMA Table 3 (2.5D, c = p^(1/3))";
      }
      set_grid(std::sqrt(P / copies), std::sqrt(P / copies), copies);
      c.io = K * (M + N) / std::sqrt(P * copies) + M * N * copies / P;
      break;
    }
    case decomposition::recursive: {
      // CARMA: halve the largest dimension log2 p times (for p not a power of two, cut the
      // largest by each prime factor of p, largest factor first). Its domain's faces, when
      // they fit in S; else COSMA Table 3's memory-limited row, 2 sqrt3 V/sqrt S + V^(2/3)
      // (DFS down to cubes of side sqrt(S/3)), when that is more.
      c.name = "recursive (CARMA)", c.source = "COSMA Table 3; CARMA";
      double dom[3] = {M, N, K}, g[3] = {1, 1, 1};
      std::int64_t rest = p;
      std::vector<std::int64_t> factors;
      for (std::int64_t f = 2; f * f <= rest; ++f)
        while (rest % f == 0) factors.push_back(f), rest /= f;
      if (rest > 1) factors.push_back(rest);
      std::sort(factors.rbegin(), factors.rend());
      for (std::int64_t f : factors) {
        const int i = int(std::max_element(dom, dom + 3) - dom);
        dom[i] /= double(f), g[i] *= double(f);
      }
      set_grid(g[0], g[1], g[2]);
      c.io = faces(dom[0], dom[1], dom[2]);
      if (c.io > S) c.io = std::max(c.io, 2 * std::sqrt(3.0) * V / std::sqrt(S) + std::cbrt(V * V));
      break;
    }
    case decomposition::cosma: {
      // COSMA Eq. 32: a = min{sqrt S, V^(1/3)}, b = V/a^2; grid [m/a x n/a x k/b].
      c.name = "COSMA", c.source = "COSMA Thm 2, Eq. 32";
      const double a = std::min(std::sqrt(S), std::cbrt(V)), b = a > 0 ? V / (a * a) : 0;
      set_grid(a > 0 ? M / a : 1, a > 0 ? N / a : 1, b > 0 ? K / b : 1);
      c.io = cosma_q(V, S);
      break;
    }
  }
  c.received = std::max(0.0, c.io - owned(m, n, k, p));
  return c;
}

std::vector<decomposition_cost> modelled_costs(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p,
                                               double S) {
  std::vector<decomposition_cost> out;
  for (decomposition d : {decomposition::one_d, decomposition::two_d, decomposition::two_and_half_d,
                          decomposition::three_d, decomposition::recursive, decomposition::cosma})
    out.push_back(modelled_cost(d, m, n, k, p, S));
  return out;
}

// ---- levels ----

namespace {
// vertical_io on real-valued work: mnk of the whole run, `once` = mk + kn + mn.
double vertical_words(double mnk, double once, double S, double units) {
  return std::max(0.0, std::max(2 * mnk / (units * std::sqrt(S)) - 2 * S, once / units));
}
}  // namespace

// Why: a cache of S words that does V of the multiply-adds moves at least 2V/sqrt(S) - 2S
// words (sequential_io's second term: its argument counts multiply-adds per S words moved,
// whichever they are; a partial sum of C carried in or out is a word moved), so the busiest
// of `units` caches, doing mnk/units or more, moves at least that with V = mnk/units; and
// every word of A, B and C crosses the level at least once (mk + kn + mn in all, the busiest
// at least the mean), which wins for caches large against the shape. E.g. 1000^3, 2 caches
// of 4096 words: 2e9/(2 x 64) - 8192 = 15616808; with 10^6 words each, 3e6/2 = 1.5e6.
double vertical_io(std::int64_t m, std::int64_t n, std::int64_t k, double cache_words, std::int64_t units) {
  check_sizes(m, n, k, std::max<std::int64_t>(units, 1));
  if (units < 1) throw error("prism::bounds::vertical_io: units must be >= 1");
  if (!(cache_words > 0)) throw error("prism::bounds::vertical_io: cache_words must be > 0");
  return vertical_words(dbl(m) * dbl(n) * dbl(k), owned(m, n, k, 1), cache_words, dbl(units));
}

// E.g. two cores, each with a 32 KiB L1d and a 1 MiB L2, sharing a 32 MiB L3, one NUMA domain;
// 2048^3 in doubles, one rank: L1 4096 words, 2 caches: 2 * 2^33/(2 * 64) - 8192 =
// 134209536; L2 131072 words: 2.346e7; L3 4194304 words, one cache: 2^34/2048 - 2^23 = 0,
// below every word once, 3 * 2^22 = 12582912, so the latter.
std::vector<level_bound> level_bounds(const topology& t, std::int64_t m, std::int64_t n, std::int64_t k,
                                      std::int64_t ranks, double rank_words, std::size_t element_bytes) {
  check_sizes(m, n, k, ranks);
  if (element_bytes == 0) throw error("prism::bounds::level_bounds: element_bytes must be > 0");
  const double mnk = dbl(m) * dbl(n) * dbl(k), eb = double(element_bytes);
  int pus = 0;
  for (const numa_domain& d : t.domains()) pus += int(d.pus.size());
  pus = std::max(pus, 1);
  std::vector<level_bound> out;
  for (const cache_level& c : t.caches()) {
    if (c.size_bytes == 0 || c.instances < 1) continue;
    level_bound l;
    l.name = "L";  // (not "L" + to_string: GCC 12 warns falsely on that, -Wrestrict)
    l.name += std::to_string(c.level);
    l.kind = movement::vertical;
    l.units = c.instances;
    l.processors = std::max(1, c.pus_sharing);
    l.unit_words = double(c.size_bytes) / eb;
    l.words = vertical_words(mnk, owned(m, n, k, 1), l.unit_words, double(c.instances) * dbl(ranks));
    out.push_back(l);
  }
  const auto& domains = t.domains();
  if (domains.size() > 1) {
    level_bound l;
    l.name = "numa";
    l.kind = movement::horizontal;
    l.units = std::int64_t(domains.size());
    l.processors = std::max<std::int64_t>(1, pus / l.units);
    l.unit_words = domains[0].memory_bytes > 0 ? double(domains[0].memory_bytes) / eb : unlimited;
    l.words = parallel_io_minus_owned(m, n, k, l.units * ranks, l.unit_words);
    out.push_back(l);
  }
  if (ranks > 1) {
    level_bound l;
    l.name = "ranks";
    l.kind = movement::horizontal;
    l.units = ranks;
    l.processors = pus;
    l.unit_words = rank_words;
    l.words = parallel_io_minus_owned(m, n, k, ranks, rank_words);
    out.push_back(l);
  }
  return out;
}

// Elango Eq. 4-7: the run takes at least max(T_l, T_comp), T_l = LB_l/B_l per unit and
// T_comp = flops/(P F). A level whose T_l exceeds T_comp bounds every schedule at it.
balance machine_balance(std::vector<level_bound> levels, double flops, std::int64_t processors, double peak_flops,
                        std::size_t element_bytes) {
  balance b;
  b.compute_seconds = processors > 0 && peak_flops > 0 ? flops / (dbl(processors) * peak_flops) : 0;
  double worst = -1;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    level_bound& l = levels[i];
    l.seconds = l.bandwidth > 0 ? l.words * double(element_bytes) / l.bandwidth : 0;
    if (l.bandwidth > 0 && l.seconds > worst) worst = l.seconds, b.binding = int(i);
  }
  b.bandwidth_bound = b.binding >= 0 && worst > b.compute_seconds;
  b.levels = std::move(levels);
  return b;
}

}  // namespace prism::bounds
