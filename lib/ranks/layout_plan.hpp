// lib/ranks/layout_plan.hpp — a schedule fitted to the caller's block-cyclic layout
// ("layout-adaptive planning"; docs/distributed.md, "Behind ScaLAPACK's p?gemm_" 3 and 4, and
// "Behind ScaLAPACK's p?syrk_ and p?herk_" 3). No MPI: the ScaLAPACK layer and the tests use
// it alike. Fitted for each candidate plan, at its exact cost under ownership.hpp's rule: a
// view of each of m, n, k (as is, or grouped by a distribution along it, e.g. m by C's rows:
// block_cyclic.hpp) and a row- or column-major map from plan ranks to grid processes. A
// rank-k update keeps n as is (a permutation would carry C's triangle off its side).
#pragma once

#include <prism/context.hpp>
#include <prism/plan.hpp>

#include "block_cyclic.hpp"
#include "schedule.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace prism::ranks {

/// The caller's layout of one stored operand (submatrix rows and columns).
struct operand_layout {
  cyclic_dim rows;  ///< its rows' distribution over process rows
  cyclic_dim cols;  ///< its columns' distribution over process columns
};

/// The caller's layouts of A, B and C on one BLACS grid (process g = prow * npcol + pcol).
struct caller_layout {
  int nprow = 1, npcol = 1;  ///< grid shape
  operand_layout op[3];      ///< A, B, C (as stored: A is k x m when transa != 'N')
  /// Processes in the grid.
  int procs() const noexcept { return nprow * npcol; }
};

/// How a dimension is numbered: 0 identity, 1 grouped by its first distribution (m: A,
/// n: B, k: A), 2 grouped by its second (m: C, n: C, k: B).
using view_spec = int;

/// A plan fitted to a layout: the views, the rank map and the exact exchange volume.
struct layout_fit {
  view_spec views[3] = {0, 0, 0};       ///< per dimension m, n, k
  bool column_major = false;            ///< plan rank r -> process (r % nprow) * npcol + r / nprow
  std::vector<std::int64_t> received;   ///< per process: elements received in all phases
  std::vector<std::int64_t> sent;       ///< per process: elements sent in all phases
  std::int64_t max_received = 0;        ///< largest of received
  std::int64_t max_buffer = 0;          ///< largest buffers one process allocates (elements:
                                        ///< blocks not used in place and messages)
  std::size_t peak_bytes = 0;           ///< largest of those buffers and the local workspace, in bytes
  double mean_received = 0;             ///< mean over all processes
  double seconds = 0;                   ///< max over processes of flops / F + max(received, sent) bytes / B
  /// One line, e.g. "m by C rows, n by C columns, k as is; plan ranks row-major".
  std::string describe() const;
};

/// The process of plan rank r under fit f.
int process_of(const layout_fit& f, const caller_layout& L, int r);
/// The view of dimension d (0 m, 1 n, 2 k) under spec s.
dim_view make_view(const caller_layout& L, const problem& p, int d, view_spec s);
/// The dimension (0 m, 1 n, 2 k) of operand o's stored rows (cols = false) or columns.
int dim_of(const problem& p, operand o, bool cols);

/// The best fit of schedule s to layout L (exact cost, every view and rank map tried),
/// with F flop/s and B bytes/s per rank.
layout_fit fit_plan(const schedule& s, const caller_layout& L, double F, double B);
/// The cost of one given fit (views and rank map set in f).
void cost_fit(const schedule& s, const caller_layout& L, double F, double B, layout_fit& f);

/// ScaLAPACK's own per-process volume for this call, in elements: the algorithm PBLAS's
/// pdgemm picks by its estimates (C, B or A in place), and that algorithm's volume.
/// Example: 2048^3 on 2 x 2 keeps C in place: (1024 * 2048 + 2048 * 1024) / 2.
double scalapack_elements(const problem& p, const caller_layout& L);

/// ScaLAPACK's p?syrk / p?herk per-process volume, in elements: the algorithm PBLAS picks
/// by its estimates (A only communicated, or A and C), and that algorithm's volume.
/// Example: n = k = 2048, trans 'N' on 2 x 2 keeps C in place: each process receives half
/// of its rows of A and half of its columns of A^T, 2 x 1024 x 2048 / 2 = 2.1M elements.
double scalapack_rank_k_elements(const problem& p, const caller_layout& L);

/// The layout-adaptive choice: the schedule and its fit.
struct layout_choice {
  std::string text;                        ///< the chosen plan's or scheme's text
  std::string report;                      ///< the planner's report ('#' lines)
  std::shared_ptr<const schedule> model;   ///< its schedule
  layout_fit fit;                          ///< its fit
  double scalapack_elements = 0;           ///< ScaLAPACK's modelled per-process volume
  double scalapack_seconds = 0;            ///< its modelled time (busiest process's flops / F + bytes / B)
};

/// Plans p (gemm, syrk or herk) over the layout's processes (ctx.ranks() is set to them):
/// a gemm plan with layout-aware scoring, a rank-k scheme by the rank-k planner, and the
/// fit of least modelled time. Throws prism::plan_error as the planners do.
layout_choice plan_for_layout(const problem& p, const caller_layout& L, const context& ctx);

/// The schedule a text names: a gemm plan's (prism::plan::parse) or, for a rank-k problem,
/// a scheme's (rank_k_scheme::parse).
std::shared_ptr<const schedule> schedule_of_text(const problem& p, const std::string& text);

}  // namespace prism::ranks
