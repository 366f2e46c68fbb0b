// prism/rank_k_model.hpp — the rank level of a rank-k update (syrk / herk over MPI ranks):
// which rank computes which blocks of the triangle over which part of k, the native layout
// of A and C, the exchanges, and their exact cost per rank. No MPI here: `prism plan
// --syrk ... --ranks P` and the planner use it without a communicator; prism::dist::syrk
// executes exactly what it describes.
//
// The triangle-block scheme. op(A) is n x k; C = op(A) op(A)^T is symmetric, so only its
// triangle is computed. k is cut into `groups` slices of (nearly) equal length, one per
// group of `group_ranks` = c ranks (P' = groups x c). Within a group, n is cut into c row
// blocks and the c(c+1)/2 blocks of the triangle are shared by a difference cover D of
// Z_c (a set with 0 in it whose differences a - b mod c take every value): group rank p
//   - computes the diagonal block (p, p);
//   - for each d = 1 .. floor(c/2), computes the block of rows {p + a, p + b} (mod c) where
//     (a, b) is the pair of D chosen for d (b - a = d mod c);
//   - for d = c/2 (c even) both ranks covering a pair compute it, on one half of the slice
//     each (the rank whose first block p + a is below c/2 takes the first half).
// So rank p reads only the row blocks p + D of its slice (|D| ~ sqrt(c): a perfect
// difference set such as {0, 1, 3} for c = 7 gives the projective-plane blocks the SYRK
// lower bound's proof uses) and all ranks do the same flops. One group (c = P) is the 2D
// scheme, c = 1 the 1D one (k split, the triangle reduce-scattered), both the 3D one.
// Example: c = 3, D = {0, 1}: rank 0 computes (0, 0) and rows {0, 1}; rank 1 (1, 1) and
// {1, 2}; rank 2 (2, 2) and {2, 0}: every block once, each rank reading two row blocks.
// `phases` > 1 runs each rank's slice in that many chunks of k one after another, holding
// one chunk of A at a time (the memory knob); the partial C stays until the end.
//
// Native layout (as prism/rank_model.hpp for gemm): a cell of A is one row block over one
// interval between k cuts (slice, half and chunk boundaries); a cell of C is one block of
// the triangle (a diagonal block holds its triangle only, packed column by column). A cell
// is split among the ranks that need it (A) or compute it (C), holder t of s owning
// elements [floor(t N / s), floor((t + 1) N / s)) of its stored column-major order; each
// rank stores its pieces one after another in cell order.
// Exchanges: in each phase a rank receives the other holders' pieces of the A cells it
// needs; at the end, each computer of a C block sends each other holder its partial of
// that holder's piece, and holders add them, in rank order, to beta C. So the 1D scheme
// reduce-scatters the triangle ((n^2 / 2)(1 - 1/P) per rank, the bound's 1D case) and the
// 2D one gathers |D| - 1 row blocks per rank (about nk / sqrt(P), the 2D case).
// The scheme (rank_k_scheme) and its planner (choose_rank_k_ranks) sit with the other
// planners in prism/plan.hpp.
#pragma once

#include <prism/context.hpp>
#include <prism/rank_model.hpp>
#include <prism/types.hpp>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace prism {

/// The smallest difference cover of Z_c that prism finds, ascending, 0 first: every
/// d = 1 .. c - 1 is a - b mod c for some a, b in it. Exact (smallest size) up to c = 36;
/// beyond, Singer's perfect difference set (size q + 1) when c = q^2 + q + 1 with q prime,
/// else {0 .. s-1} with multiples of s (size about sqrt(2c)). E.g. c = 7: {0, 1, 3}.
std::vector<int> difference_cover(int c);

/// One block of the triangle a rank computes over part of k: rows block i, columns
/// block j of the lower orientation (i >= j; i == j: the diagonal triangle), op(A)
/// columns [k0, k1).
struct rank_k_unit {
  int i = 0, j = 0;                ///< row blocks (i >= j)
  std::int64_t k0 = 0, k1 = 0;     ///< op(A) columns
};

/// The native layout and exchanges of a rank-k scheme (see the file comment).
/// A rank's task, pieces and costs come from its own units: O(c + cells it touches), so
/// the planner scores every rank of a large plan quickly. Thread-safe (the cost table is guarded).
class rank_k_model {
 public:
  /// Builds the model of problem p (op syrk or herk) under scheme s; throws plan_error for a
  /// gemm problem, a scheme of no ranks, or phases above the slice length.
  rank_k_model(const problem& p, const rank_k_scheme& s);

  /// The problem.
  const problem& source() const noexcept { return p_; }
  /// The scheme.
  const rank_k_scheme& scheme() const noexcept { return s_; }
  /// Ranks used (P').
  int ranks() const noexcept { return s_.ranks(); }
  /// Phases.
  int phases() const noexcept { return s_.phases; }
  /// The difference cover in use (its pairs in pair_of).
  const std::vector<int>& cover() const noexcept { return cover_; }
  /// Row block b's first row and rows.
  std::int64_t block_start(int b) const;
  /// Rows in row block b.
  std::int64_t block_rows(int b) const { return block_start(b + 1) - block_start(b); }
  /// Rank r's units over its whole slice, in the order of the file comment (a half of a
  /// slice of one column may be empty: its block is still r's to hold, as zeros).
  std::vector<rank_k_unit> slice_units(int r) const;
  /// Rank r's units in phase q (their k ranges cut to the phase's chunk; empty ones dropped).
  std::vector<rank_k_unit> units(int q, int r) const;
  /// Ranks computing C block (i, j) (i >= j), ascending.
  std::vector<int> c_holders(int i, int j) const;

  /// Rows of stored A (n for trans 'N', else k).
  std::int64_t rows_a() const;
  /// Columns of stored A.
  std::int64_t cols_a() const;

  /// A cell: row block `b`, op(A) columns [k0, k1) (one interval between k cuts).
  struct a_cell {
    int b = 0;
    std::int64_t k0 = 0, k1 = 0;
    /// Elements.
    std::int64_t size(const rank_k_model& m) const { return m.block_rows(b) * (k1 - k0); }
    friend bool operator==(const a_cell&, const a_cell&) = default;
  };
  /// The A cells rank r needs in phase q, in cell order (by k, then block).
  std::vector<a_cell> a_needs(int q, int r) const;
  /// Ranks needing A cell x (in its phase), ascending.
  std::vector<int> a_holders(const a_cell& x) const;
  /// Rank r's A pieces over all phases in storage order: (cell, piece of it).
  std::vector<std::pair<a_cell, piece>> a_pieces(int r) const;
  /// Rank r's C pieces in storage order (piece.cell = the block's index i (i + 1) / 2 + j).
  std::vector<piece> c_pieces(int r) const;
  /// C block index i (i + 1) / 2 + j back to (i, j).
  static std::pair<int, int> c_block(std::int64_t index);
  /// Elements of C block (i, j): a rectangle, or the packed triangle when i == j.
  std::int64_t c_size(int i, int j) const;
  /// Elements of operand o (A or C) rank r stores.
  std::int64_t local_size(operand o, int r) const;

  /// Exact costs of rank r (elements; A in received[0], C partials in received[2]).
  rank_cost cost(int r) const;
  /// Largest elements received by any rank.
  std::int64_t max_received() const;
  /// Mean elements received per rank.
  double mean_received() const;
  /// Largest peak bytes of any rank.
  std::size_t max_peak_bytes() const;
  /// Largest real flops of any rank.
  double max_flops() const;

 private:
  struct pair_choice {
    int a = 0, b = 0;
  };
  // Rank r's group and position in it.
  int group_of(int r) const { return r / s_.group_ranks; }
  // Op(A) columns of group g's slice.
  std::int64_t slice_start(int g) const;
  // The hull of rank r's need for row block b over the slice, cut to phase q ([0, 0): none).
  std::pair<std::int64_t, std::int64_t> need(int q, int r, int b) const;
  // The k cuts of group g's slice, ascending (slice ends, half, chunk boundaries).
  std::vector<std::int64_t> k_cuts(int g) const;
  // Phase of op(A) column kk in group g.
  std::int64_t chunk_start(int g, int q) const;
  // Positions (in one group) of the ranks computing block (i, j), ascending.
  std::vector<int> group_computers(int i, int j) const;
  // Every rank's cost, computed once.
  const std::vector<rank_cost>& all_costs() const;

  problem p_;
  rank_k_scheme s_;
  std::vector<int> cover_;
  std::vector<pair_choice> pair_of_;  // index d = 1 .. c/2
  struct reach {
    bool whole = false;  // read over the whole slice
    int half_a = -1;     // else the d = c/2 pair's a, which picks the half
  };
  std::vector<reach> reach_;  // per cover element
  std::shared_ptr<std::mutex> lock_ = std::make_shared<std::mutex>();  // guards costs_
  mutable std::shared_ptr<const std::vector<rank_cost>> costs_;
};

}  // namespace prism
