// prism/bounds.hpp — lower bounds on the data a matrix multiplication must move, and the
// modelled costs of the classic decompositions, as functions of the shape. No plan, no
// machine state: `prism bound` prints them, `prism plan --stats` sets a plan beside them.
//
// Units. A word is one matrix element (whatever its type); S is a fast-memory size in words
// (a cache, or the memory of one rank). m x n x k is C (m x n) += A (m x k) B (k x n): mnk
// multiply-adds. Every bound is a count of words, returned as double (sizes reach 2^63).
//
// Sources (text copies in ../shared/papers):
//   COSMA   Kwasniewski et al., "Red-blue pebbling revisited", SC'19: Theorem 1's Corollary
//           (its schedule), Theorem 2 (Eq. 32-33), Table 3.
//   Smith   Smith and van de Geijn, "Pushing the bounds for matrix-matrix multiplication"
//           (arXiv:1702.02017), as COSMA's Section 5 quotes it: 2mnk/sqrt(S) - 2S.
//   CARMA   Demmel et al., "Communication-optimal parallel recursive rectangular matrix
//           multiplication", IPDPS'13: Table I, Section II-B (bounds with constants), II-C.
//   Elango  Elango et al., "On characterizing the data movement complexity of computational
//           DAGs for parallel execution", SPAA'14 (INRIA RR-8522): Section 4 (vertical and
//           horizontal bounds per level), Section 5 (machine balance).
//   lecture Vuduc, "Distributed matrix multiply" (1D block row, 2D SUMMA/Cannon, 3D, 2.5D).
//
// A worked example, 2048^3 on P = 8 ranks with memory to spare (S = unlimited): mnk/P = 2^30
// multiply-adds per rank, so the cube side is (2^30)^(1/3) = 1024 and Theorem 2 gives
// Q = 3 * 1024^2 = 3145728 words per rank; a balanced layout already puts
// (3 * 2048^2)/8 = 1572864 of them on the rank, so it must receive at least 1572864 = 1.573e6.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace prism {
class topology;
}

namespace prism::bounds {

/// S = unlimited: as much memory per rank as the schedule wants (the memory-independent bound).
inline constexpr double unlimited = std::numeric_limits<double>::infinity();

// ---- sequential: one processor, fast memory of S words, A, B, C start in slow memory ----

/// Any schedule moves >= max{mk + kn + mn, 2mnk/sqrt(S) - 2S} words (loads plus the stores of
/// C): every word once, and Smith and van de Geijn's bound (arXiv:1702.02017;
/// COSMA's Theorem 1, 2mnk/sqrt(S) + mn, fails for k below about 2 sqrt(S): bounds.cpp);
/// assumes mnk multiply-adds (no Strassen), S > 0. E.g. 1000^3, S = 10^4: 2e9/100 - 2e4 = 1.998e7.
double sequential_io(std::int64_t m, std::int64_t n, std::int64_t k, double S);

/// COSMA Thm 1 Corollary (Eq. 26-28, Listing 1): words the best feasible greedy schedule moves,
/// a x b blocks of C with ab + a + 1 <= S: k (m ceil(n/b) + n ceil(m/a)) + mn; S >= 3.
/// E.g. S = 10^4: a = 99, b = 100, so 1000^3 moves 1000 (1000 * 10 + 1000 * 11) + 1e6 = 2.2e7.
double sequential_greedy(std::int64_t m, std::int64_t n, std::int64_t k, double S);

// ---- parallel: p processors, S words of memory each, balanced layouts ----

/// COSMA Thm 2 (Eq. 32-33) per processor: with V = mnk/p, a = min{sqrt S, V^(1/3)}, the
/// optimal a x a x b domain moves 2V/a + a^2, i.e. 2V/sqrt(S) + S when S < V^(2/3), else
/// 3 V^(2/3) (see bounds.cpp on the theorem's "min"); assumes pS >= mn + mk + nk.
/// E.g. 2048^3, p = 8, S >= 2^20: 3 * 2^20 = 3145728.
double parallel_io(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p, double S);

/// Words a processor owns under a balanced layout of A, B and C: (mk + kn + mn)/p (CARMA II-B's
/// load-balance assumption). E.g. 2048^3, p = 8: 3 * 2^22/8 = 1572864.
double owned(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p);

/// parallel_io - owned, floored at 0: the words a processor must receive (or send) beyond what
/// a balanced layout gives it. E.g. 2048^3, p = 8, S unlimited: 3145728 - 1572864 = 1572864.
double parallel_io_minus_owned(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p, double S);

// ---- CARMA's three cases (d1 <= d2 <= d3 are m, n, k sorted) ----

/// How many dimensions an optimal P-way split cuts (CARMA Fig. 1).
enum class carma_case { one_large, two_large, three_large };

/// "one large dimension", "two large dimensions" or "three large dimensions".
const char* to_string(carma_case c);

/// CARMA II-B's case (the thresholds its constants are proven under): three large when
/// P >= 2 d2 d3/d1^2, two large when 2 d2 d3/d1^2 > P >= 2 d3/d2, else one large. Exact.
carma_case carma_bound_case(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p);

/// CARMA II-C's case (what its recursion does): one large when P <= d3/d2, two large when
/// d3/d2 < P <= d2 d3/d1^2, else three large. Exact.
carma_case carma_split_case(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p);

/// CARMA II-B's lower bound with its constants, words per processor, in carma_bound_case's case:
/// one: min{d2d3/(4P), d1d3/(4P), 16/25 d1d2 - d1d2/P}; two: min{d2d3/(2P),
/// sqrt(2/3) sqrt(d1^2 d2 d3/P) - d1d3/P}; three: max{d1d2d3/(2 sqrt2 P sqrt S) - S,
/// (d1d2d3/P)^(2/3) - d2d3/P}; each floored at 0, 0 for P = 1.
double carma_lower_bound(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p, double S);

/// CARMA Table I's bandwidth cost of CARMA (leading terms, constant 1), words per processor,
/// in carma_split_case's case: d1d2, sqrt(d1^2 d2 d3/P), d1d2d3/(P sqrt S) + (d1d2d3/P)^(2/3).
double carma_cost(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p, double S);

// ---- memory-independent bounds with the shape's constraints: gemm and SYRK ----
//
// Both come from one argument (docs/data-movement.md, "SYRK"): a rank doing its 1/P share of the
// multiply-adds must touch at least as many words as the cheapest local domain of that size
// that fits in the iteration space, then receive (or send) all of it that it does not own.
// Like parallel_io_minus_owned, a count of words that a rank must receive or send, assuming
// the work is balanced and each matrix starts (A) or ends (C) as one copy.

/// gemm's memory-independent bound with the shape's limits (Al Daas, Ballard, Grigori, Kumar,
/// Rouse, "Tight memory-independent parallel matrix multiplication communication lower bounds",
/// arXiv 2205.13407): the a x b x c box of mnk/P multiply-adds, a <= d1, b <= d2, c <= d3, with
/// the least faces ab + bc + ca, minus owned(). Its cases are carma_split_case's: one large
/// d1d2 (1 - 1/P), two large 2 d1 sqrt(d2d3/P) - d1(d2 + d3)/P, three large 3 (mnk/P)^(2/3) -
/// (mk + kn + mn)/P; floored at 0. Unlike parallel_io_minus_owned (COSMA's cube, which may not
/// fit the shape) it is never below the 1D and 2D limits. E.g. 256 x 256 x 2^20 on 16 (one
/// large): 65536 * 15/16 = 61440 (COSMA's cube gives 0 there).
double memory_independent_minus_owned(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p);

/// Which constraint shapes the SYRK bound's optimal local domain (Al Daas, Ballard, Grigori,
/// Kumar, Rouse, Verite, SPAA'23 and arXiv 2409.11304 call them the 1D, 2D and 3D cases).
enum class syrk_case { one_d, two_d, three_d };

/// "1D (a rank's triangle is all of C)", "2D (a rank's depth is all of k)" or "3D (a triangle
/// block as deep as it is wide)".
const char* to_string(syrk_case c);

/// The SYRK bound's case for C (n x n, symmetric) = A A^T, A n x k, on p ranks: one_d when
/// p (n-1)^2 < nk, two_d when p k^2 < n(n-1), else three_d (exact integer comparisons; at most
/// one of the first two holds once p >= 2, and the formulas agree on each boundary); p = 1 is
/// one_d (the rank touches all of A and C).
syrk_case syrk_bound_case(std::int64_t n, std::int64_t k, std::int64_t p);

/// Q for SYRK: the least words of A and of C's strict triangle that a rank doing its
/// n(n-1)k/(2p) off-diagonal multiply-adds touches (docs/data-movement.md, "SYRK"):
/// one_d (n-1)^2/2 + nk/p, two_d k sqrt(n(n-1)/p) + n(n-1)/(2p), three_d
/// 3/2 (n(n-1)k/p)^(2/3); p = 1: nk + n(n-1)/2, everything. 0 when n < 2 or k = 0.
/// E.g. n = k = 4096, p = 8: 6290431.96 (3D).
double syrk_parallel_io(std::int64_t n, std::int64_t k, std::int64_t p);

/// Words of A and of C's strict triangle a rank owns under a balanced layout:
/// (nk + n(n-1)/2)/p. E.g. n = k = 4096, p = 8: (2^24 + 8386560)/8 = 3145472.
double syrk_owned(std::int64_t n, std::int64_t k, std::int64_t p);

/// The parallel memory-independent SYRK lower bound per rank (Al Daas et al., SPAA'23; derived
/// in docs/data-movement.md): syrk_parallel_io - syrk_owned, floored at 0, in words a rank must
/// receive or send. one_d (n-1)^2/2 - n(n-1)/(2p); two_d k sqrt(n(n-1)/p) - nk/p; three_d
/// 3/2 (n(n-1)k/p)^(2/3) - (nk + n(n-1)/2)/p. E.g. n = k = 4096 on 8 (3D): 3144959.96 words,
/// half of gemm's 6291456 for the full square; 256 x 2^20 on 16 (1D): 30472.5.
double syrk_parallel_io_minus_owned(std::int64_t n, std::int64_t k, std::int64_t p);

// ---- modelled costs of the classic decompositions (COSMA Table 3, the lecture) ----

/// The decompositions of COSMA Table 3 plus the lecture's 1D.
enum class decomposition { one_d, two_d, two_and_half_d, three_d, recursive, cosma };

/// A decomposition's modelled cost per processor. Real-valued grids: the model assumes every
/// division is exact (COSMA Table 3's own assumption).
struct decomposition_cost {
  decomposition kind = decomposition::cosma;  ///< which one
  const char* name = "";                      ///< e.g. "2D (SUMMA/Cannon)"
  const char* source = "";                    ///< e.g. "COSMA Table 3"
  double grid[3] = {1, 1, 1};                 ///< processors along m, n, k
  double io = 0;                              ///< Q: words the local domain reads and writes
  double received = 0;                        ///< io - owned, floored at 0
};

/// One decomposition's cost for m x n x k on p processors with S words each (see bounds.cpp
/// for each formula and its worked example).
decomposition_cost modelled_cost(decomposition d, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p,
                                 double S);

/// All six, in enum order.
std::vector<decomposition_cost> modelled_costs(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t p,
                                               double S);

// ---- per level of a machine (Elango et al.) ----

/// Vertical: between a storage and the level above it; horizontal: between peers.
enum class movement { vertical, horizontal };

/// One level of the machine and the least data one of its units must move.
struct level_bound {
  std::string name;             ///< "L1", "L2", "L3", "numa", "ranks"
  movement kind = movement::vertical;  ///< vertical (a cache) or horizontal (numa, ranks)
  std::int64_t units = 1;       ///< N_l: instances of this level (per rank for caches and numa)
  std::int64_t processors = 1;  ///< processing units sharing one instance (P / N_l)
  double unit_words = 0;        ///< S_l: words one instance holds (unlimited if unknown)
  double words = 0;             ///< lower bound on the words one instance moves (the busiest)
  double bandwidth = 0;         ///< bytes/s of one instance to the level above (0: unknown)
  double seconds = 0;           ///< words * element bytes / bandwidth (0 when unknown)
};

/// Elango Thm 6 for matmul: the busiest of `units` caches of S = `cache_words` each, sharing
/// mnk multiply-adds, moves >= max{2mnk/(units sqrt(S)) - 2S, (mk + kn + mn)/units}
/// (sequential_io's bound on the busiest cache's share of the work; every word crosses once).
/// E.g. 1000^3, 2 caches of 4096 words: 3.125e7/2 - 8192 = 15616808.
double vertical_io(std::int64_t m, std::int64_t n, std::int64_t k, double cache_words, std::int64_t units);

/// The levels of `t` for m x n x k split over `ranks` ranks (each rank on a machine like t,
/// doing mnk/ranks): each cache level (vertical_io), NUMA domains when t has more than one,
/// ranks when ranks > 1 (horizontal: parallel_io_minus_owned with the domain's memory, or
/// rank_words); cache and domain sizes in words of `element_bytes`.
std::vector<level_bound> level_bounds(const topology& t, std::int64_t m, std::int64_t n, std::int64_t k,
                                      std::int64_t ranks, double rank_words, std::size_t element_bytes);

/// Elango Section 5 (Eq. 7): which level bounds a run, given each level's words and bandwidth.
struct balance {
  double compute_seconds = 0;       ///< flops / (processors * peak): the compute time bound
  std::vector<level_bound> levels;  ///< the levels with seconds filled in
  int binding = -1;                 ///< the level with the largest seconds, -1 if none known
  bool bandwidth_bound = false;     ///< levels[binding].seconds > compute_seconds
};

/// Fills each level's seconds (words * element_bytes / bandwidth; levels without a bandwidth
/// are skipped) and compares the slowest with flops / (processors * peak_flops) (per
/// processor). E.g. 2 GB/s and 1e9 words of 8 bytes: 4 s, against 2e9 flops on 2 x 1e9: 1 s.
balance machine_balance(std::vector<level_bound> levels, double flops, std::int64_t processors, double peak_flops,
                        std::size_t element_bytes);

}  // namespace prism::bounds
