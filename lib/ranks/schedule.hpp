// lib/ranks/schedule.hpp — the distributed schedule: for each phase, which rank computes
// which tasks over which cells of A, B and C, and who owns each cell before and after. No
// MPI. Two producers make it: a gemm plan's rank tree (tree_schedule.hpp) and a syrk /
// herk triangle-block scheme (triangle_schedule.hpp). Everything else of the rank level is
// derived from it here, once, for both: the regions a rank gathers and computes, its
// pieces (the native layout), the exact per-rank cost and memory, and (ownership.hpp, the
// executor in lib/mpi/rank_exchange) the messages under any ownership.
//
// Tasks. A task is a box of the product: C rows [i, i + m) x columns [j, j + n) over the
// inner index [l, l + k). A gemm task runs a plan node's local subtree; a rank-k task is
// one block of the triangle (stored C's orientation: op(B) is op(A)^T, so its B rows are
// op(A)'s rows j), a diagonal one (tri 'U' or 'L') only that triangle of its square.
//
// Regions. A rank's tasks of a phase read blocks of stored A and B: the reads of one
// operand over the same rows of op(X) are gathered as one region, their hull along k. E.g.
// rank-k tasks (3, 1) and (3, 3) over k [0, 8) read op(A) rows of blocks 3 and 1: two
// regions of A. C: each task writes its block; the C regions of a reduction epoch (the
// phases up to one whose partials are reduced) are its tasks' distinct blocks.
//
// Cells (their parts, holders and pieces) and the exchange rule: prism/rank_model.hpp and
// ownership.hpp. A region that is wholly the rank's own piece, one rectangle (and for C
// computed by it alone), is used where it lies: no copy, no buffer.
#pragma once

#include <prism/rank_model.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace prism::ranks {

/// A rank's piece of a cell: its elements [first, first + count) in the cell's order.
struct piece {
  std::int64_t cell = 0, first = 0, count = 0;  ///< cell index, first element, elements
};

/// A rectangle of a stored operand; tri 'L' / 'U': only that triangle of a square one.
struct region {
  block at;      ///< rows and columns of the stored matrix
  char tri = 0;  ///< 0, 'L' or 'U'
  /// Elements it holds (a triangle's diagonal included).
  std::int64_t elements() const noexcept { return tri ? at.rows * (at.rows + 1) / 2 : at.size(); }
  friend bool operator==(const region&, const region&) = default;
};

/// One part of a cell: a region of the stored operand whose elements are the cell's
/// [first, first + elements), column by column (a triangle packed: 'L' column t holds rows
/// t .. rows - 1, 'U' rows 0 .. t).
struct cell_part {
  region at;               ///< where it lies
  std::int64_t first = 0;  ///< its first element in the cell's order
};

/// The part of cell `cell` inside a region.
struct cover {
  std::int64_t cell = 0;  ///< cell index
  cell_part part;         ///< that part
};

/// One local product of a rank in a phase (see the file comment).
struct task {
  box shape;      ///< C rows [i, i + m), columns [j, j + n), inner [l, l + k)
  int node = -1;  ///< gemm: the plan node of its local subtree; -1: a block of the triangle
  char tri = 0;   ///< a diagonal block: its uplo triangle only
  std::size_t workspace = 0;  ///< bytes of temporaries its local subtree needs
};

/// Rank r's piece of a cell and how many ranks need it in a phase (A, B) or compute it in
/// the epoch ending there (C), r among them or not.
struct cell_share {
  piece own;                 ///< r's piece
  std::int64_t needers = 0;  ///< ranks needing (computing) it
  bool among = false;        ///< r is one of them
};

/// What the exchange rule counts for one rank over a call, in elements.
struct rank_tally {
  std::int64_t received[3] = {0, 0, 0}, sent[3] = {0, 0, 0};  ///< per operand
  std::int64_t owned = 0;                                     ///< its pieces
  std::int64_t blocks[3] = {0, 0, 0};  ///< per operand, its regions not used in place, largest of a phase (C: of an epoch)
  std::int64_t staging = 0;            ///< messages of one exchange, the largest
  std::size_t workspace = 0;           ///< bytes of its local subtrees' temporaries, the largest
  double flops = 0;                    ///< real flops
};

/// The schedule (see the file comment): the producer's answers (virtual) and what the
/// rank level derives from them. Immutable once made; thread-safe.
class schedule {
 public:
  virtual ~schedule();

  // ---- what a producer says ----
  /// The product.
  virtual const problem& product() const noexcept = 0;
  /// Ranks used (P').
  virtual int ranks() const noexcept = 0;
  /// Phases, run one after another by all ranks.
  virtual int phases() const noexcept = 0;
  /// Whether C's partials are reduced after phase q (ending an epoch).
  virtual bool reduces_after(int q) const noexcept = 0;
  /// Appends rank r's tasks in phase q.
  virtual void tasks(int q, int r, std::vector<task>& out) const = 0;
  /// Appends the cells covering region g of operand o, with their parts inside it.
  virtual void covers(operand o, const region& g, std::vector<cover>& out) const = 0;
  /// Appends the parts of cell c of operand o, in its element order.
  virtual void parts(operand o, std::int64_t c, std::vector<cell_part>& out) const = 0;
  /// Holders of cell c of operand o, ascending (each needs it in some phase).
  virtual void holders(operand o, std::int64_t c, std::vector<int>& out) const = 0;
  /// Rank r's piece of cell c of operand o (count 0 if none).
  virtual piece owned(operand o, std::int64_t c, int r) const = 0;
  /// A, B: the ranks needing cell c in phase q; C: those computing it in the epoch that
  /// ends with phase q. Ascending.
  virtual void needers(operand o, int q, std::int64_t c, std::vector<int>& out) const = 0;
  /// Rank r's share of cell c in phase q (the default asks owned() and needers()).
  virtual cell_share share(operand o, int q, std::int64_t c, int r) const;
  /// The phases [first, second) that may need cell c of operand o (A, B) or reduce it (C).
  virtual std::pair<int, int> phase_span(operand o, std::int64_t c) const;
  /// Appends, ascending, the ranks whose phase-q regions of o (C: of the epoch ending
  /// there) meet what `meets` accepts; `meets` holds of a region whenever it holds of one
  /// inside it.
  virtual void ranks_meeting(operand o, int q, const std::function<bool(const region&)>& meets, std::vector<int>& out) const;
  /// The rank level in one line: a gemm grid ("m(3r: n3 + 4r: m2 n2)") or a scheme's text.
  virtual std::string describe() const = 0;
  /// Rank r's tally; a producer may sum its cells in closed form (tests hold it to count_cells).
  virtual rank_tally count(int r) const { return count_cells(r); }

  // ---- derived here, once ----
  /// Rank r's regions in phase q: A and B read (index 0, 1), C computed (2), in key order.
  void regions(int q, int r, std::vector<region> (&out)[3]) const;
  /// Rank r's C regions of the epoch ending with phase q (empty unless reduces_after(q)).
  std::vector<region> epoch_regions(int q, int r) const;
  /// Rank r's pieces of operand o in storage order (ascending cell).
  std::vector<piece> pieces(operand o, int r) const;
  /// Elements of operand o rank r stores.
  std::int64_t local_size(operand o, int r) const;
  /// The tally counted cell by cell under the exchange rule.
  rank_tally count_cells(int r) const;
  /// Messages rank r receives over the call.
  std::int64_t messages(int r) const;
  /// Rank r's exact cost (kept once counted).
  const rank_cost& cost(int r) const;
  /// Every rank's cost, counted once.
  const std::vector<rank_cost>& costs() const;
  /// Rows and columns of the whole stored operand o.
  block whole(operand o) const;
  /// The stored block of operand o a read of op(X) rows [x, x + len) over k [l, l + k) is.
  block stored(operand o, std::int64_t x, std::int64_t len, std::int64_t l, std::int64_t k) const;

 private:
  rank_cost cost_of(const rank_tally& t) const;
  mutable std::mutex lock_;
  mutable std::vector<rank_cost> all_;
  mutable std::vector<std::unique_ptr<rank_cost>> some_;
};

/// The overlap of a piece with a part: elements [first, first + count) of the cell inside
/// part [at, at + size). E.g. piece [5, 12) with part [8, 20): 4.
std::int64_t overlap(const piece& pc, std::int64_t at, std::int64_t size);

/// The piece of cell `cell` (N elements) of the holder with weights `before` ahead of it,
/// `own` and `total`: [floor(N before / total), floor(N (before + own) / total)), e.g. N =
/// 10, weights 1, 1, 1: [0, 3), [3, 6), [6, 10); weights 1, 3: [0, 2), [2, 10).
piece piece_of(std::int64_t cell, std::int64_t N, std::int64_t before, std::int64_t own, std::int64_t total);

/// The most phases a rank plan of p over `ranks` ranks can have with every count of its
/// schedule in 64 bits: a rank's counts over a call stay below its phases times the
/// operands' bytes (A, B and C; a rank-k update's A once), which must stay below 2^62, and
/// an extent times the rank count below 2^62 too (0 otherwise). E.g. 4096^3 doubles (402 MB)
/// on 64 ranks: 11.5 billion; 2^32 x 2^32 x 2^32 (A alone 2^67 bytes): 0.
std::int64_t countable_phases(const problem& p, int ranks);
/// Throws plan_error naming the operands' size when `phases` exceed countable_phases.
void check_countable(const problem& p, int ranks, std::int64_t phases);

/// Real flops of a task of a product of type t (a triangle: n (n + 1) k, 4x complex).
double task_flops(const task& t, scalar_type type);

/// Calls f(row, col, len, at) for each run of elements [first, first + count) of a cell
/// part that is one stored column: rows row .. row + len - 1 of column col, the run's first
/// element `at` elements after `first`. E.g. a 4-row rectangle, [6, 11): (2, 1, 2, 0),
/// (0, 2, 3, 2); a 3-row 'L' triangle, [3, 5): (1, 1, 2, 0).
void each_column_run(const region& g, std::int64_t first, std::int64_t count,
                     const std::function<void(std::int64_t, std::int64_t, std::int64_t, std::int64_t)>& f);

/// Sorts v and drops its repeats.
template <class V>
void sort_unique(V& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

/// The list kept under `key` in memo, made by make() the first time (outside the lock, so
/// makers run in parallel; lists stay where they are as the memo grows).
template <class F>
const std::vector<int>& kept_list(std::mutex& lock, std::unordered_map<std::int64_t, std::vector<int>>& memo, std::int64_t key,
                                  F&& make) {
  {
    std::lock_guard<std::mutex> g(lock);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  std::vector<int> v = make();
  std::lock_guard<std::mutex> g(lock);
  return memo.emplace(key, std::move(v)).first->second;
}

/// The schedule of a gemm plan's rank tree (tree_schedule.cpp).
std::shared_ptr<const schedule> gemm_schedule(const plan& p);
/// The schedule of a syrk / herk problem under a triangle-block scheme (triangle_schedule.cpp).
std::shared_ptr<const schedule> rank_k_schedule(const problem& p, const rank_k_scheme& s);
/// The schedule a public rank_model holds.
const schedule& schedule_of(const rank_model& m);

}  // namespace prism::ranks
