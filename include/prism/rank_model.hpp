// prism/rank_model.hpp — what a plan over MPI ranks means for data: the native layout (who
// holds which elements of A, B and C before and after the call), the exchanges of each
// phase, and their exact cost per rank. No MPI here: `prism plan --ranks P` and the rank
// planner use it without a communicator; prism::dist executes exactly what it describes.
//
// The rank steps of a plan sit above all other levels: optionally rank-level DFS steps
// (each part a "phase", run by all ranks one after another), then rank-level BFS steps
// down to one rank per subtree. In phase q, rank r computes the box task(q, r).shape with
// its local subtree (numa / thread / cache levels). It needs the blocks of the stored A
// and B that box reads, and produces a partial block of C.
//
// Cells. For each operand, the boundaries of every task's block along the rows and the
// columns of the stored matrix cut it into a grid of cells; a cell is needed whole by the
// set of ranks ("holders") whose tasks cover it. Native layout: a cell of N elements held
// by ranks h_0 < ... < h_{s-1} is split among them in its column-major order, holder t
// owning elements [floor(t N / s), floor((t + 1) N / s)). Each rank stores its pieces one
// after another, in cell order (cells column-major over the cell grid).
// Example: P = 2, 4 x 4 x 4, one BFS n-cut 2@1r 2@1r: A (4 x 4) is one cell held by both
// ranks, rank 0 owning its elements 0..7 (columns 0-1), rank 1 elements 8..15; B has two
// cells (columns 0-1 for rank 0, 2-3 for rank 1), each held by one rank.
//
// Exchanges of a phase. A and B: a rank receives every piece of each cell its task needs
// from that piece's owner (N - own elements per cell). C: a rank sends its partial of each
// piece of a cell it computed to the piece's owner; an owner receives one partial per other
// rank computing the cell in that phase, and adds them to beta C in rank order. So at a
// rank BFS step on m (n) only B (A) moves, among the ranks sharing it; on k, partial C are
// reduce-scattered. For a grid pm x pn x pk this gives the per-rank volume
// mk/(pm pk)(1 - 1/pn) + kn/(pk pn)(1 - 1/pm) + mn/(pm pn)(1 - 1/pk).
#pragma once

#include <prism/plan.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace prism {

/// A rank's piece of a cell: elements [first, first + count) of the cell, column-major.
struct piece {
  std::int64_t cell = 0;    ///< cell index
  std::int64_t first = 0;   ///< first element (column-major within the cell)
  std::int64_t count = 0;   ///< elements
};

/// What one rank does in one phase: the box it computes and its local subtree.
struct rank_task {
  box shape;      ///< sub-prism (m, n or k may be 0 for an idle rank: then node is -1)
  int node = -1;  ///< plan node of its local subtree (-1: nothing to compute); may be a
                  ///< "same rank R" node, which runs node `same`
};

/// One message of an exchange: `elements` elements between this rank and `peer`.
struct transfer {
  int peer = 0;               ///< the other rank
  std::int64_t elements = 0;  ///< elements in the message
};

/// Exact costs of one rank over a whole call, from the model (elements, bytes, flops).
struct rank_cost {
  std::int64_t received[3] = {0, 0, 0};  ///< elements received per operand (A, B, C)
  std::int64_t sent[3] = {0, 0, 0};      ///< elements sent per operand
  double flops = 0;                      ///< real flops of its tasks
  std::size_t owned_bytes = 0;           ///< its pieces of A, B and C (native layout)
  std::size_t buffer_bytes = 0;          ///< blocks and exchange buffers (each at its largest
                                         ///< over the phases, as prism::dist allocates them)
                                         ///< and the local subtree's workspace
  /// Elements received in all.
  std::int64_t received_total() const noexcept { return received[0] + received[1] + received[2]; }
  /// Peak bytes: owned pieces plus buffers.
  std::size_t peak_bytes() const noexcept { return owned_bytes + buffer_bytes; }
};

/// The native layout and exchanges of a plan over ranks (see the file comment).
///
/// Nothing here is O(P^2): a cell's holders are found by walking the rank steps down to
/// the ranks whose boxes cover it (O(holders x depth)) and kept once found; a rank's task,
/// pieces and messages are computed from its own cells. So one rank builds its own
/// exchanges in time proportional to its messages, and the planner scores every rank of a
/// 16,384-rank plan in milliseconds. Thread-safe: the caches are guarded.
class rank_model {
 public:
  /// Builds the model of plan p (validated; any number of ranks, 1 included). Throws
  /// prism::plan_error when a rank-level DFS step sits below a rank-level BFS step.
  explicit rank_model(const plan& p);
  /// Copies share nothing mutable (the caches start empty).
  rank_model(const rank_model& o);
  rank_model& operator=(const rank_model&) = delete;
  ~rank_model();

  /// The plan this models.
  const plan& source() const noexcept { return plan_; }
  /// Ranks the plan uses (P').
  int ranks() const noexcept { return plan_.ranks(); }
  /// Phases (parts of the rank-level DFS steps, in order; 1 without such steps).
  int phases() const noexcept { return int(phase_roots_.size()); }
  /// The box of phase q.
  const box& phase_box(int q) const { return plan_.nodes().at(std::size_t(phase_roots_.at(std::size_t(q)))).shape; }
  /// Rank r's task in phase q (a walk down the phase's rank steps, O(depth)).
  rank_task task(int q, int r) const;

  /// Rows of the stored operand (A: m x k when not transposed, else k x m; likewise B).
  std::int64_t rows(operand o) const;
  /// Columns of the stored operand.
  std::int64_t cols(operand o) const;
  /// The block of stored operand o that a box reads (A, B) or writes (C).
  block needed(operand o, const box& b) const;

  /// Number of cells of operand o (row cells x column cells; most are never touched).
  std::int64_t cell_count(operand o) const;
  /// Cell c of operand o: cells are column-major over the grid cut by every task's block
  /// boundaries, e.g. with row cuts {0, 4, 8} and column cuts {0, 2, 6}, cell 3 is rows
  /// [4, 8), columns [2, 6).
  block cell(operand o, std::int64_t c) const;
  /// Holders of cell c of operand o (ranks whose task in some phase covers it), ascending.
  const std::vector<int>& holders(operand o, std::int64_t c) const;
  /// Rank r's pieces of operand o, in storage order (ascending cell).
  std::vector<piece> pieces(operand o, int r) const;
  /// Elements of operand o that rank r stores (its local buffer's length).
  std::int64_t local_size(operand o, int r) const;
  /// The piece of cell c that holder rank r owns: [first, first + count) (count 0 if none).
  piece owned_piece(operand o, std::int64_t c, int r) const;
  /// Cells of operand o that block b covers, in cell order (b is a task's needed block).
  std::vector<std::int64_t> cells_in(operand o, const block& b) const;

  /// Messages rank r receives in phase q for operand o, by ascending peer.
  std::vector<transfer> incoming(operand o, int q, int r) const;
  /// Messages rank r sends in phase q for operand o, by ascending peer.
  std::vector<transfer> outgoing(operand o, int q, int r) const;
  /// Ranks computing cell c of C in phase q, ascending.
  const std::vector<int>& computers(int q, std::int64_t c) const;
  /// The first phase that computes cell c of C (beta is applied there).
  int first_phase(std::int64_t c) const;
  /// Appends, ascending, the ranks whose phase-q block of operand o satisfies `meets`.
  /// `meets` must hold of a block whenever it holds of a block inside it: the walk down
  /// the rank steps skips a part whose whole block fails it. E.g. meets = "intersects
  /// rows [0, 8) of C" finds the ranks computing any of those rows, O(found x depth).
  void ranks_meeting(operand o, int q, const std::function<bool(const block&)>& meets, std::vector<int>& out) const;

  /// Messages rank r receives over the call (from its incoming lists, on demand).
  std::int64_t messages(int r) const;
  /// Exact costs of rank r (computed from its own cells and kept).
  const rank_cost& cost(int r) const;
  /// Largest elements received by any rank.
  std::int64_t max_received() const;
  /// Mean elements received per rank (over ranks()).
  double mean_received() const;
  /// Largest peak bytes of any rank.
  std::size_t max_peak_bytes() const;
  /// Largest real flops of any rank.
  double max_flops() const;
  /// Mean real flops per rank.
  double mean_flops() const;

  /// Compact text of the rank-level steps, e.g. "m(3r: n3 + 4r: m2 n2)" or "n2 m2 k2";
  /// rank-level DFS shows as "dfs k2 > ...".
  std::string grid() const;

 private:
  struct caches;
  // Ranks whose task in phase q covers stored block cb of operand o (cb inside one cell),
  // ascending, appended to out.
  void covering(operand o, int node, const block& cb, std::vector<int>& out) const;
  const std::vector<int>& needers(operand o, int q, std::int64_t c) const;
  void all_costs() const;
  rank_cost compute_cost(int r) const;

  plan plan_;
  std::vector<int> phase_roots_;                 // node of each phase's rank subtree
  std::vector<std::int64_t> row_cuts_[3], col_cuts_[3];  // per operand: 0, ..., rows / cols
  std::unique_ptr<caches> cache_;
};

// The rank planner (choose_ranks, least_footprint_ranks, rank_choice) is declared in
// prism/plan.hpp, beside make_plan: the planners sit with the plan they build.

}  // namespace prism
