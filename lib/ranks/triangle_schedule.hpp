// lib/ranks/triangle_schedule.hpp — the schedule of a rank-k update (syrk / herk) under a
// triangle-block scheme (prism/plan.hpp, rank_k_scheme; the covers in covers.hpp). Parts,
// roles, covers, cells and ownership weights: docs/distributed.md, "Rank-k updates".
//
// Cells: A's a row block over a k interval, column-major (a_cell); C's block (i, j) at
// i (i + 1) / 2 + j, or, one odd difference cover alone, role p's blocks end to end at p.
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
    // uneven roles: (run, role) of each local rank, role q's run j at local_of[role_first[q] + j]
    std::vector<std::pair<int, int>> place_table;
    std::vector<int> role_first, local_of;
    // the roles reading each atom over a cell of their run's first half [0] or second [1]
    // ([1] only for an even difference cover, whose d = c/2 blocks split the run)
    std::vector<std::vector<int>> readers[2];
    // one odd cover alone (index_c_chunks): c/2 + 1 block offsets per role (c <= 1024), each
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
  cell_share c_share(int r, std::int64_t c, bool now) const;
  int a_phase(std::int64_t k0) const;
  rank_tally plane_a(const part_geometry& x, int role, std::int64_t len) const;
  rank_tally swept_a(const rank_place& at) const;
  void index_c_chunks();
  void balance_ownership();

  problem p_;
  rank_k_scheme s_;
  std::vector<part_geometry> parts_;
  std::vector<std::int64_t> bounds_;  // row block boundaries, blocks() + 1 of them
  std::vector<std::int64_t> kcuts_;   // every k cut, 0 .. k
  mutable std::mutex memo_lock_;
  mutable std::map<std::pair<int, std::int64_t>, rank_tally> plane_memo_;  // plane_a by (role, run length)
  mutable std::unordered_map<std::int64_t, std::vector<int>> a_holders_;   // of each A cell asked
};

}  // namespace prism::ranks
