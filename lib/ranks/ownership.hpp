// lib/ranks/ownership.hpp — where a call's operands live, and the one exchange rule of the
// rank level (docs/distributed.md, "Execution"). No MPI: the executor (lib/mpi/rank_exchange)
// runs what this describes, the ScaLAPACK layout fit (layout_plan) counts it, and tests check
// both against each other.
//
// A schedule (schedule.hpp) says what each rank computes per phase: its regions of stored
// A, B and C; an ownership, which process holds each of their elements before and after the
// call (native_ownership, cyclic_ownership). The exchange rule is the same for every
// ownership. In phase q, the process running rank r
//   - receives from every other process holding part of r's regions of A (B) that part;
//   - after a reduction, sends to every other process holding part of r's C regions of the
//     epoch its partial of that part;
// and each holder adds the partials of its C elements, in plan-rank order, to beta C.
// A part is a list of tiles (below), in an order both ends compute alike; a message
// carries its tiles' elements one after another.
#pragma once

#include "block_cyclic.hpp"
#include "layout_plan.hpp"
#include "schedule.hpp"

#include <cstdint>
#include <vector>

namespace prism::ranks {

/// A run of `len` consecutive positions: at `pos` along a region, at `local` in the
/// holder's storage (a row index or a column index there; see tile).
struct run {
  std::int64_t pos = 0, local = 0, len = 0;  ///< region position, local index, length
};

/// The elements rows x cols of a region that one process holds. Element (i, j) of the
/// tile, i in row run r, j the j-th column of column run c, lies at region offset
/// r.pos + i' + (c.pos + j) * ld (i' its index within r, ld = the region's rows) and at
/// r.local + i' + (c.local + j) * lld in the holder's storage.
/// Example: a 4 x 3 ScaLAPACK block held whole by a process whose storage has LLD 100 and
/// holds its first row at local row 8, first column at local column 2: rows {(0, 8, 4)},
/// cols {(0, 2, 3)}, lld 100; element (1, 2) is region offset 9, local 8 + 1 + 4 * 100.
struct tile {
  std::vector<run> rows, cols;  ///< row runs and column runs
  std::int64_t lld = 1;         ///< the holder's leading dimension for this tile
  /// Elements in the tile.
  std::int64_t count() const noexcept;
  /// Whether it is one run by one run covering all of a region's rectangle.
  bool whole(const block& b) const noexcept;
};

/// Calls f(region offset, local offset, len) for each column segment of t, in message
/// order (column runs, their columns, row runs), with the region's leading dimension ld.
template <class F>
void each_segment(const tile& t, std::int64_t ld, F&& f) {
  for (const run& c : t.cols)
    for (std::int64_t j = 0; j < c.len; ++j)
      for (const run& r : t.rows) f(r.pos + (c.pos + j) * ld, r.local + (c.local + j) * t.lld, r.len);
}

/// Where the stored operands live, process by process (see the file comment).
class ownership {
 public:
  virtual ~ownership() = default;
  /// The schedule.
  virtual const schedule& model() const = 0;
  /// Processes taking part (ranks of the schedule and any that only hold data).
  virtual int procs() const = 0;
  /// The process running plan rank r.
  virtual int process_of(int r) const = 0;
  /// The plan rank process p runs, or -1.
  virtual int rank_of(int p) const = 0;
  /// Processes holding part of region g of operand o, ascending.
  virtual std::vector<int> holders(operand o, const region& g) const = 0;
  /// Elements of region g of operand o that process p holds.
  virtual std::int64_t held_count(operand o, const region& g, int p) const = 0;
  /// Appends the tiles of region g of operand o that process p holds. Local offsets are
  /// set only when p is the process this ownership was made for (only it reads them).
  virtual void held(operand o, const region& g, int p, std::vector<tile>& out) const = 0;
  /// Plan ranks whose phase-q regions of operand o (C: of the epoch ending there) meet
  /// what process p holds, ascending.
  virtual std::vector<int> needers(operand o, int q, int p) const = 0;
  /// Appends tiles covering everything process p holds of C (a rank-k update's triangle).
  virtual void all_held_c(int p, std::vector<tile>& out) const = 0;
  /// Appends the local offsets of the diagonal elements of C process p holds.
  virtual void diagonal(int p, std::vector<std::int64_t>& out) const = 0;
};

/// prism's native layout (the schedule's pieces), seen from process `me` (= rank).
class native_ownership final : public ownership {
 public:
  /// The layout of schedule m as rank `me` of `procs` processes sees it (-1: none).
  native_ownership(const schedule& m, int me, int procs);
  const schedule& model() const override { return m_; }
  int procs() const override { return procs_; }
  int process_of(int r) const override { return r; }
  int rank_of(int p) const override { return p < m_.ranks() ? p : -1; }
  std::vector<int> holders(operand o, const region& g) const override;
  std::int64_t held_count(operand o, const region& g, int p) const override;
  void held(operand o, const region& g, int p, std::vector<tile>& out) const override;
  std::vector<int> needers(operand o, int q, int p) const override;
  void all_held_c(int p, std::vector<tile>& out) const override;
  void diagonal(int p, std::vector<std::int64_t>& out) const override;

 private:
  std::int64_t offset(operand o, std::int64_t c) const;  // my piece of cell c in my storage (-1: none)
  const schedule& m_;
  int me_, procs_;
  std::vector<piece> mine_[3];
  std::vector<std::int64_t> at_[3];
};

/// The caller's block-cyclic layout under a fit (views, rank map; a rank-k update's C is its
/// uplo triangle); local offsets are those of the process whose leading dimensions it is given.
class cyclic_ownership final : public ownership {
 public:
  /// lld: the local leading dimensions of A, B and C (their descriptors' LLD).
  cyclic_ownership(const schedule& m, const caller_layout& L, const layout_fit& fit, const std::int64_t lld[3]);
  const schedule& model() const override { return m_; }
  int procs() const override { return L_.procs(); }
  int process_of(int r) const override { return proc_of_rank_[std::size_t(r)]; }
  int rank_of(int p) const override { return rank_of_proc_[std::size_t(p)]; }
  std::vector<int> holders(operand o, const region& g) const override;
  std::int64_t held_count(operand o, const region& g, int p) const override;
  void held(operand o, const region& g, int p, std::vector<tile>& out) const override;
  std::vector<int> needers(operand o, int q, int p) const override;
  void all_held_c(int p, std::vector<tile>& out) const override;
  void diagonal(int p, std::vector<std::int64_t>& out) const override;

 private:
  const dim_view& rview(operand o) const;
  const dim_view& cview(operand o) const;
  const schedule& m_;
  caller_layout L_;
  dim_view view_[3];
  std::int64_t lld_[3];
  std::vector<int> proc_of_rank_, rank_of_proc_;
};

/// Appends the tiles of sub(C) (uplo 'U' or 'L': of that triangle only, else all of it) that
/// grid process p holds under L (local offsets with lld).
void held_c(const caller_layout& L, int p, std::int64_t lld, char uplo, std::vector<tile>& out);
/// Appends the local offsets (with lld) of the diagonal elements of sub(C) process p holds.
void held_diagonal(const caller_layout& L, int p, std::int64_t lld, std::vector<std::int64_t>& out);

/// What one process moves and keeps in one phase, in elements (from the exchange rule).
struct phase_volume {
  std::int64_t received[3] = {0, 0, 0};  ///< per operand
  std::int64_t sent[3] = {0, 0, 0};      ///< per operand
  std::int64_t messages = 0;             ///< messages received
  std::int64_t blocks[3] = {0, 0, 0};    ///< its regions of A, B, C not used in place
};

/// Buffers one process allocates for a call (elements): each operand's regions and the
/// staging area at their largest over the phases; staging holds a phase's A and B
/// messages (in and out), then a reduction's C messages.
struct buffer_plan {
  std::int64_t blocks[3] = {0, 0, 0};  ///< A, B, C
  std::int64_t staging = 0;            ///< messages
  /// Elements in all.
  std::int64_t total() const noexcept { return blocks[0] + blocks[1] + blocks[2] + staging; }
  /// Grows to hold phase volume v.
  void add(const phase_volume& v);
};

/// Whether rank r's region g of operand o in phase q is used where it lies in the storage
/// of the process running r (that process holds all of it as one whole rectangle; C: and no
/// other rank computes any of it in the epoch).
bool in_place(const ownership& own, operand o, int q, int r, const region& g);

/// Every process's volume in phase q under the exchange rule (index: process).
std::vector<phase_volume> phase_volumes(const ownership& own, int q);

}  // namespace prism::ranks
