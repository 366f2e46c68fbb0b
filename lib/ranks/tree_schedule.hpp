// lib/ranks/tree_schedule.hpp — the schedule of a gemm plan's rank tree (schedule.hpp).
//
// Optionally rank-level DFS steps on top (each part a "phase", run by all ranks one after
// another), then rank-level BFS steps down to one rank per subtree. In phase q rank r's one
// task is its box: it reads the blocks of stored A and B the box needs and writes a block
// of C, reduced after the phase. The boundaries of every task's block along the rows and
// the columns of a stored operand cut it into a grid of cells, numbered column-major: with
// row cuts {0, 4, 8} and column cuts {0, 2, 6}, cell 3 is rows [4, 8), columns [2, 6). A
// cell's holders are the ranks whose tasks cover it (walking the rank steps down: O(holders
// x depth)); holder t of s owns its elements [floor(t N / s), floor((t + 1) N / s)).
// Example: P = 2, 4 x 4 x 4, one BFS n-cut 2@1r 2@1r: A (4 x 4) is one cell held by both
// ranks, rank 0 owning its elements 0..7 (columns 0-1), rank 1 elements 8..15; B has two
// cells (columns 0-1 for rank 0, 2-3 for rank 1), each held by one rank.
#pragma once

#include "schedule.hpp"

namespace prism::ranks {

/// The schedule of a plan over ranks (see the file comment).
class tree_schedule final : public schedule {
 public:
  /// Plan p (validated); plan_error when a rank-level DFS sits below a rank-level BFS.
  explicit tree_schedule(std::shared_ptr<const plan> p);
  /// The plan.
  const plan& source() const noexcept { return *plan_; }
  const problem& product() const noexcept override { return plan_->problem(); }
  int ranks() const noexcept override { return plan_->ranks(); }
  int phases() const noexcept override { return int(phase_roots_.size()); }
  bool reduces_after(int) const noexcept override { return true; }
  void tasks(int q, int r, std::vector<task>& out) const override;
  void covers(operand o, const region& g, std::vector<cover>& out) const override;
  void parts(operand o, std::int64_t c, std::vector<cell_part>& out) const override;
  void holders(operand o, std::int64_t c, std::vector<int>& out) const override;
  piece owned(operand o, std::int64_t c, int r) const override;
  void needers(operand o, int q, std::int64_t c, std::vector<int>& out) const override;
  std::pair<int, int> phase_span(operand o, std::int64_t c) const override;
  void ranks_meeting(operand o, int q, const std::function<bool(const region&)>& meets, std::vector<int>& out) const override;
  std::string describe() const override;

  /// The block of stored operand o a box reads (A, B) or writes (C).
  block needed(operand o, const box& b) const;
  /// Cells of operand o (row cells x column cells; most are never touched).
  std::int64_t cell_count(operand o) const;
  /// Cell c of operand o.
  block cell(operand o, std::int64_t c) const;

 private:
  const std::vector<int>& holder_list(operand o, std::int64_t c) const;
  const std::vector<int>& needer_list(operand o, int q, std::int64_t c) const;
  void covering(operand o, int node, const block& cb, std::vector<int>& out) const;

  std::shared_ptr<const plan> plan_;
  std::vector<int> phase_roots_;                          // node of each phase's rank subtree
  std::vector<std::int64_t> row_cuts_[3], col_cuts_[3];   // per operand: 0, ..., rows / cols
  mutable std::mutex cache_lock_;
  mutable std::unordered_map<std::int64_t, std::vector<int>> holders_[3], needers_[3];  // needers: q * cells + c
};

}  // namespace prism::ranks
