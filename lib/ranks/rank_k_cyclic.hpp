// lib/ranks/rank_k_cyclic.hpp — a rank-k scheme (prism/rank_k_model.hpp) under ScaLAPACK's
// block-cyclic layout: which elements of sub(A) and of sub(C)'s triangle each grid process
// sends to which, when sub(A) is first moved into the scheme's native pieces and the
// native C pieces are then sent back to their block-cyclic holders. No MPI: p?syrk_ /
// p?herk_ (lib/scalapack/psyrk.cpp) and its tests use it alike.
//
// A fit places the scheme on the grid (rank_k_fit): plan rank r runs on grid process r
// (g = prow * npcol + pcol) or, column-major, on (r % nprow) * npcol + r / nprow; and k,
// which a rank-k update sums over in any order, is numbered as is or grouped by sub(A)'s
// k distribution (process 0's indices first, block_cyclic.hpp), so that a scheme's k slices
// are the processes' own. Processes past the scheme's ranks only hold caller data. The
// stages, each counted exactly here:
//   in:   every element of sub(A) goes from its block-cyclic holder to the one plan rank
//         whose native piece holds it (the pieces of a cell partition it);
//   run:  the scheme's own exchanges (rank_k_model::cost);
//   back: every element of sub(C)'s triangle goes from the plan rank whose C piece holds
//         it to its block-cyclic holder.
// An element whose two ends are one process is copied, not counted.
#pragma once

#include <prism/rank_k_model.hpp>

#include "layout_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace prism::ranks {

/// One native piece of a rank-k operand in stored coordinates (as prism::dist's piece_span):
/// the cell's first row, first column and rows; elements [first, first + count) of its
/// column-major order, or, for a diagonal C block (tri 'L' / 'U'), of its packed triangle.
struct rank_k_span {
  std::int64_t row = 0, col = 0, rows = 0;  ///< the cell's first stored row, column, and rows
  std::int64_t first = 0, count = 0;        ///< elements of the cell
  char tri = 0;                             ///< 0, 'L' or 'U'
};

/// Rank r's pieces of operand o (A or C) in its storage order. A: stored rows x columns of
/// sub(A) (n x k for trans 'N', else k x n); C: rows and columns of sub(C), its uplo triangle.
/// E.g. n = 6, c = 2, uplo U, block (1, 0): rows 0-2, columns 3-5 of C.
std::vector<rank_k_span> rank_k_spans(const rank_k_model& m, operand o, int r);

/// Calls f(row, col, len, at) for each run of a span that is contiguous both in one stored
/// column (rows row .. row + len - 1 of column col) and in native storage (elements at ..
/// at + len - 1 counted from the span's first element). E.g. a rectangle of 4 rows, piece
/// [6, 11): (row0 + 2, col0 + 1, 2, 0) then (row0, col0 + 2, 3, 2).
template <class F>
void for_each_run(const rank_k_span& s, F&& f) {
  if (s.tri == 0) {
    for (std::int64_t e = s.first, end = s.first + s.count; e < end;) {
      const std::int64_t i = e % s.rows, j = e / s.rows, run = std::min(end - e, s.rows - i);
      f(s.row + i, s.col + j, run, e - s.first);
      e += run;
    }
    return;
  }
  // Packed: L column t holds rows t .. rows-1, U rows 0 .. t (s = 3, L: 0-2 column 0, 3-4 column 1).
  auto length = [&](std::int64_t t) { return s.tri == 'L' ? s.rows - t : t + 1; };
  std::int64_t col = 0, start = 0;
  while (start + length(col) <= s.first) start += length(col), ++col;
  for (std::int64_t e = s.first, end = s.first + s.count; e < end;) {
    const std::int64_t within = e - start, run = std::min(end - e, length(col) - within);
    f(s.row + (s.tri == 'L' ? col : 0) + within, s.col + col, run, e - s.first);
    e += run;
    if (e - start == length(col)) start += length(col), ++col;
  }
}

/// Calls f(r0, r1, c0, c1) for rectangles of stored positions covering the span exactly
/// once: up to three for a rectangular cell (a partial first column, the whole columns, a
/// partial last one), one per column for a packed triangle. Used for counting in O(blocks).
template <class F>
void for_each_rect(const rank_k_span& s, F&& f) {
  if (s.tri != 0) {
    for_each_run(s, [&](std::int64_t i, std::int64_t j, std::int64_t len, std::int64_t) { f(i, i + len, j, j + 1); });
    return;
  }
  std::int64_t e = s.first;
  const std::int64_t end = s.first + s.count;
  if (e < end && e % s.rows != 0) {  // partial first column
    const std::int64_t i = e % s.rows, run = std::min(end - e, s.rows - i);
    f(s.row + i, s.row + i + run, s.col + e / s.rows, s.col + e / s.rows + 1);
    e += run;
  }
  if (const std::int64_t whole = (end - e) / s.rows; whole > 0) {
    f(s.row, s.row + s.rows, s.col + e / s.rows, s.col + e / s.rows + whole);
    e += whole * s.rows;
  }
  if (e < end) f(s.row, s.row + (end - e), s.col + e / s.rows, s.col + e / s.rows + 1);
}

/// Where a scheme sits on the caller's layout (the file comment).
struct rank_k_fit {
  bool k_grouped = false;     ///< k numbered grouped by sub(A)'s k distribution
  bool column_major = false;  ///< plan rank r on process (r % nprow) * npcol + r / nprow
  /// One line, e.g. "k grouped by A's columns; plan ranks column-major".
  std::string describe(const problem& p) const;
};

/// The grid process of plan rank r under fit f. E.g. 2 x 3, column-major: rank 1 -> 3.
int rank_k_process(const rank_k_fit& f, const caller_layout& L, int r);

/// The order of k under fit f: identity, or grouped by sub(A)'s columns ('N') or rows.
dim_view rank_k_view(const rank_k_fit& f, const caller_layout& L, const problem& p);

/// for_each_run on a span of A whose k coordinate (columns for trans 'N', else rows) is a
/// position of view k: calls f(row, col, len, at) with sub(A)'s own indices, splitting
/// runs where the view's indices jump. E.g. 'T', k grouped over 2 process rows in blocks
/// of 2 (k = 8: positions 0..7 are 0 1 4 5 2 3 6 7), a run of rows 2..5: rows 4-5, 2-3.
template <class F>
void for_each_a_run(const rank_k_span& s, bool n_trans, const dim_view& k, F&& f) {
  for_each_run(s, [&](std::int64_t i, std::int64_t j, std::int64_t len, std::int64_t at) {
    if (n_trans) k.runs(j, j + 1, [&](std::int64_t, std::int64_t idx, std::int64_t) { f(i, idx, len, at); });
    else k.runs(i, i + len, [&](std::int64_t x, std::int64_t idx, std::int64_t l) { f(idx, j, l, at + (x - i)); });
  });
}

/// The exact cost of a rank-k scheme run on a caller's block-cyclic layout (the file
/// comment's three stages), per grid process, in elements.
struct rank_k_cyclic_cost {
  std::vector<std::int64_t> received, sent;  ///< all three stages
  std::vector<std::int64_t> moved_in;        ///< received in stage in (sub(A) to native)
  std::vector<std::int64_t> moved_back;      ///< received in stage back (C triangle home)
  std::vector<double> flops;                 ///< real flops
  std::vector<std::size_t> peak_bytes;       ///< native pieces, staging, the scheme's buffers
  std::int64_t max_received = 0;             ///< largest of received
  double mean_received = 0;                  ///< mean over all grid processes
  std::size_t max_peak_bytes = 0;            ///< largest of peak_bytes
  double seconds = 0;                        ///< max over processes of flops / F + max(received, sent) bytes / B
};

/// Costs scheme m under fit f on layout L (op[0] sub(A) as stored, op[2] sub(C); op[1]
/// unused) with F flop/s and B bytes/s per process. Processes holding no plan rank only
/// send A and receive C.
rank_k_cyclic_cost cost_rank_k_cyclic(const rank_k_model& m, const caller_layout& L, const rank_k_fit& f, double F,
                                      double B);

/// ScaLAPACK's p?syrk / p?herk per-process volume, in elements: the algorithm PBLAS picks
/// by its estimates (A only communicated, or A and C), and that algorithm's volume.
/// Example: n = k = 2048, trans 'N' on 2 x 2 keeps C in place: each process receives half
/// of its rows of A and half of its columns of A^T, 2 x 1024 x 2048 / 2 = 2.1M elements.
double scalapack_rank_k_elements(const problem& p, const caller_layout& L);

/// The modelled seconds of ScaLAPACK's p?syrk / p?herk: the busiest process's share of the
/// triangle's flops / F plus scalapack_rank_k_elements bytes / B.
double scalapack_rank_k_seconds(const problem& p, const caller_layout& L, double F, double B);

/// The rank-k choice on a caller's layout: the scheme the rank-k planner picks for the
/// grid's processes, its exact cost on the layout, and ScaLAPACK's modelled cost.
struct rank_k_layout_choice {
  rank_k_choice why;               ///< the rank-k planner's candidates
  rank_k_fit fit;                  ///< the fit of least modelled time
  rank_k_cyclic_cost cost;         ///< the chosen scheme on the caller's layout under fit
  std::int64_t native_max_received = 0;  ///< the scheme alone (prism's native layout)
  double scalapack_elements = 0;   ///< ScaLAPACK's modelled per-process volume
  double scalapack_seconds = 0;    ///< its modelled time
};

/// Plans p over the layout's processes and costs it there under each fit (k as is or
/// grouped, ranks row- or column-major), keeping the least modelled time. Throws
/// plan_error as choose_rank_k_ranks does.
rank_k_layout_choice plan_rank_k_for_layout(const problem& p, const caller_layout& L, const context& ctx);

}  // namespace prism::ranks
