// lib/ranks/triangle_schedule.hpp — the schedule of a rank-k update (syrk / herk) under a
// triangle-block scheme (prism/plan.hpp, rank_k_scheme; the covers in covers.hpp).
//
// op(A) is n x k; C = op(A) op(A)^T is symmetric, so only its triangle is computed. A
// scheme has one or more parts, each on its own share of k in proportion to its ranks. A
// part has c roles that share the whole triangle over its share by a cover; a role's ranks
// take turns over the share, one equal run each (G runs a role: G k slices of c ranks).
//   - difference: n in c row blocks ("atoms"), the c(c+1)/2 blocks of the triangle shared
//     by a difference cover D of Z_c. Role p computes the diagonal block (p, p) and, for
//     each d = 1 .. floor(c/2), the block of rows {p + a, p + b} (mod c) where (a, b) is
//     D's pair for d; for d = c/2 (c even) both roles covering a pair compute it, on one
//     half of the run each (the role whose first block p + a is below c/2 the first). So
//     role p reads only the row blocks p + D. Example: c = 3, D = {0, 1}: role 0 computes
//     (0, 0) and rows {0, 1}; role 1 (1, 1) and {1, 2}; role 2 (2, 2) and {2, 0}.
//   - star (c = 4): six atoms, three "centre" atoms of a = n/sqrt(24) rows, then three of
//     the rest. Role 0 computes the three blocks between centre atoms; role j = 1..3 centre
//     atom j-1's diagonal, its blocks with the last three atoms and two of those three's
//     six blocks: every role reads about 0.6 n and computes n^2/8. With m0 ranks on the
//     centre role and m on each leaf role, a = n sqrt(m0 / (6 (3m + m0))).
//   - nest (c = 2): an inner range of sigma n rows at the end, sigma = sqrt(mI/(mO + mI));
//     the outer role computes the pairs with a row outside it, the inner role its triangle.
// Parts of different covers take different atoms: the row blocks are the pieces between
// every part's atom boundaries. Example: "star4 + tbd3{0,1}" on n = 4096: the star's
// atoms at 836, 1672, 2508, 3037, 3566 and the thirds at 1365, 2730 give 8 row blocks.
// `phases` > 1 runs each rank's run in that many chunks of k (the memory knob); C's
// partials are reduced once, after the last.
//
// Tasks: rank r's blocks (i, j), i >= j, over its run (a diagonal block its uplo triangle),
// cut to each phase's chunk; in stored C's orientation ('U': rows of block j, columns of
// block i). A block whose half of a run is empty is still r's, as zeros (a task with k 0).
//
// Cells. A: one row block over one interval between k cuts (every run's ends, halves and
// chunks: the grid of all tasks' reads), stored column-major. C: a block of the triangle
// (a diagonal one packed), or, when one odd difference cover is the whole scheme, each
// role's blocks laid end to end (its diagonal, then its block of each d) as one cell. A
// cell's holders are the ranks reading (A) or computing (C) it; holder t owns elements
// [floor(N W_<t / W), floor(N W_<=t / W)), W_<t the weights of the holders before it and W
// all of theirs. A role has one weight for A cells and one for C (every group alike); where
// the roles' receipts differ (a star, uneven roles, several parts) the weights are set so
// that the busiest rank receives about what the mean rank does: owning more of an A cell
// means receiving less of it, owning more of a C block receiving more partials. E.g.
// "star4 + tbd3{0,1}" on 4096^2: equal weights give the busiest rank 36.0 MB and the mean
// 33.0; balanced, 33.03. A role's cell of one odd cover is cut into one run per rank: every
// rank owns its role's C over its ranks to one element (tbd3{0,1} over 2 ranks a role with
// blocks of 3 rows: the diagonal (6) and the d = 1 block (9) make 15; run 0 owns the
// diagonal and 1 element more).
#pragma once

#include "schedule.hpp"

#include <map>

namespace prism::ranks {

/// One block of the triangle a rank computes over part of k: rows block i, columns block j
/// of the lower orientation (i >= j; i == j: the diagonal triangle), op(A) columns [k0, k1).
struct rank_k_unit {
  int i = 0, j = 0;             ///< row blocks (i >= j)
  std::int64_t k0 = 0, k1 = 0;  ///< op(A) columns
};

/// The schedule of a rank-k scheme (see the file comment).
class triangle_schedule final : public schedule {
 public:
  /// Problem p (syrk or herk) under scheme s; plan_error for a gemm problem, a scheme of no
  /// ranks, a part with more runs than its share of k, a part whose rows leave a block
  /// empty, a star whose leaf roles have unlike ranks or whose centre has 6 times theirs or
  /// more, or phases above a run's length.
  triangle_schedule(const problem& p, const rank_k_scheme& s);
  /// The scheme.
  const rank_k_scheme& scheme() const noexcept { return s_; }
  const problem& product() const noexcept override { return p_; }
  int ranks() const noexcept override { return s_.ranks(); }
  int phases() const noexcept override { return s_.phases; }
  bool reduces_after(int q) const noexcept override { return q == s_.phases - 1; }
  void tasks(int q, int r, std::vector<task>& out) const override;
  void covers(operand o, const region& g, std::vector<cover>& out) const override;
  void parts(operand o, std::int64_t c, std::vector<cell_part>& out) const override;
  void holders(operand o, std::int64_t c, std::vector<int>& out) const override;
  piece owned(operand o, std::int64_t c, int r) const override;
  void needers(operand o, int q, std::int64_t c, std::vector<int>& out) const override;
  cell_share share(operand o, int q, std::int64_t c, int r) const override;
  std::pair<int, int> phase_span(operand o, std::int64_t c) const override;
  std::string describe() const override { return s_.to_string(); }
  rank_tally count(int r) const override;

  /// Row blocks (every part's atom boundaries together).
  int blocks() const noexcept { return int(bounds_.size()) - 1; }
  /// Row block b's first row (b = blocks(): n).
  std::int64_t block_start(int b) const { return bounds_[std::size_t(b)]; }
  /// Rows in row block b.
  std::int64_t block_rows(int b) const { return block_start(b + 1) - block_start(b); }
  /// Rank r's units over its whole run, each block once.
  std::vector<rank_k_unit> slice_units(int r) const;

 private:
  enum class span : std::uint8_t { none, whole, first, second };  // a unit's or read's part of a run
  struct atom_unit {  // a block of a cover in its atoms (x >= y) over `when` of the run
    int x = 0, y = 0;
    span when = span::whole;
  };
  struct part_geometry {  // one part where it sits: ranks, k columns, atoms and its cover's tables
    rank_k_part part;
    int rank0 = 0;                  // its first rank
    std::int64_t k0 = 0, k1 = 0;    // its op(A) columns
    std::vector<int> runs;          // ranks of each role (each one run of the part's k)
    bool even = true;               // every role has as many ranks
    // uneven roles: (run, role) of each local rank, role q's run j at local_of[role_first[q] + j],
    // and the distinct ranks per role, ascending
    std::vector<std::pair<int, int>> place_table;
    std::vector<int> role_first, local_of, run_counts;
    // the roles reading each atom over a cell of their run's first half [0] or second [1]
    // ([1] only for an even difference cover, whose d = c/2 blocks split the run)
    std::vector<std::vector<int>> readers[2];
    // one odd cover alone (index_c_chunks): c/2 + 2 prefix sums per role (c <= 1024), each
    // role's C elements, its blocks' rows x rows and its real flops per column of k
    std::vector<std::int64_t> c_prefix, role_c, role_rect;
    std::vector<double> role_flops;
    std::vector<std::int64_t> atoms;             // atom boundaries (rows), atoms + 1 of them
    std::vector<int> first_block;                // the first row block of each atom (atoms + 1)
    std::vector<int> cover;                      // difference: D
    std::vector<std::pair<int, int>> pair_of;    // difference: D's pair (a, b) for d = 0 .. c/2
    std::vector<char> reach_whole;               // difference, per a of D: read over the whole run
    std::vector<int> reach_half;                 // else the a of the d = c/2 pair it is in
    std::vector<std::int64_t> a_weight, c_weight;  // ownership weight of each role's ranks
  };
  struct rank_place {    // the part holding a rank, its role and which run of the role's share
    const part_geometry* part;
    int run = 0, role = 0;
  };
  struct share_at {  // where a rank sits among a cell's holders, by weight (C: whether it computes it)
    std::int64_t before = 0, own = 0, total = 0, computers = 0;
    bool mine = false;
  };
  struct a_totals {  // A of a rank: received, sent and owned; the largest blocks and staging of a phase
    std::int64_t in = 0, out = 0, owned = 0, blocks = 0, stage = 0;
  };
  struct roles {  // one or two roles, ascending
    int count = 0, at[2] = {0, 0};
    roles(int a) : count(1), at{a, 0} {}
    roles(int a, int b) : count(2), at{a, b} {}
    const int* begin() const { return at; }
    const int* end() const { return at + count; }
  };

  void build_parts();
  void build_cells();
  rank_place place_of(int r) const;
  int rank_of(const part_geometry& x, int role, int j) const;
  std::pair<std::int64_t, std::int64_t> run_columns(const part_geometry& x, int runs, int j) const;
  int run_holding(const part_geometry& x, int runs, std::int64_t k) const;
  std::int64_t chunk_start(const rank_place& at, int q) const;
  std::vector<std::int64_t> k_cuts(const rank_place& at) const;
  const part_geometry& part_at(std::int64_t k) const;
  int atom_of(const part_geometry& x, int b) const;
  int block_at(std::int64_t row) const;
  std::vector<atom_unit> role_units(const part_geometry& x, int role) const;
  std::vector<int> role_readers(const part_geometry& x, int a, bool first_half) const;
  roles role_computers(const part_geometry& x, int ax, int ay) const;
  int difference_of(const part_geometry& x, int ax, int ay) const;
  std::pair<int, int> difference_block(const part_geometry& x, int p, int d) const;
  std::int64_t c_offset(const part_geometry& x, int role, int d) const;
  std::int64_t c_size(int i, int j) const;
  region block_region(int i, int j) const;
  bool composite() const;
  // A cells: row block b over k cut interval t.
  std::int64_t a_cell(int b, int t) const;
  std::pair<int, int> a_cell_at(std::int64_t c) const;
  std::vector<int> a_holders(int b, std::int64_t k0, std::int64_t k1) const;
  const std::vector<int>& a_holder_list(std::int64_t c) const;
  std::pair<int, int> c_block(std::int64_t c) const;
  share_at a_share(const part_geometry& x, const std::vector<int>& h, int r) const;
  std::vector<int> c_holders(int i, int j) const;
  share_at c_share(int r, int i, int j) const;
  int a_phase(std::int64_t k0) const;
  a_totals plane_a(const part_geometry& x, int role, std::int64_t len) const;
  a_totals swept_a(const rank_place& at) const;
  void index_c_chunks();
  void balance_ownership();

  problem p_;
  rank_k_scheme s_;
  std::vector<part_geometry> parts_;
  std::vector<std::int64_t> bounds_;  // row block boundaries, blocks() + 1 of them
  std::vector<std::int64_t> kcuts_;   // every k cut, 0 .. k
  mutable std::mutex memo_lock_;
  mutable std::map<std::pair<int, std::int64_t>, a_totals> plane_memo_;  // plane_a by (role, run length)
  mutable std::unordered_map<std::int64_t, std::vector<int>> a_holders_;   // of each A cell asked
};

}  // namespace prism::ranks
