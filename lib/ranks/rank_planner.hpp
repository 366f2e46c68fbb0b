// lib/ranks/rank_planner.hpp — the rank planner's entry for callers inside prism that score
// candidates their own way: the ScaLAPACK layer ranks the planner's trees by their cost
// under the caller's block-cyclic layout and adds trees shaped like the caller's grid.
// prism::choose_ranks (prism/plan.hpp) is this with neither.
#pragma once

#include <prism/rank_model.hpp>

#include "schedule.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace prism::ranks {

/// Re-scoring of a candidate: called with the schedule of each plan the planner scores
/// exactly; it may replace the candidate's max_received, seconds, peak_bytes and fits (e.g.
/// with the cost under the caller's own layout), which then rank them.
using rescore_fn = std::function<void(const schedule&, rank_candidate&)>;

/// One level of a rank_grid: `parts` parts of edge d, each with one share of the ranks
/// below; sizes along d (summing to the edge) or, when empty, an even split.
struct rank_cut {
  dim d = dim::m;                   ///< the edge cut
  int parts = 1;                    ///< parts
  std::vector<std::int64_t> sizes;  ///< part sizes, or empty
};
/// A rank tree given by its cuts, level by level, every part of a level cut alike: e.g.
/// {{dim::m, 2, {}}, {dim::n, 2, {}}} is a 2 x 2 grid (4 ranks).
using rank_grid = std::vector<rank_cut>;

/// The memory per rank a rank plan must fit under ctx: its cap, else default_rank_memory().
std::size_t rank_memory(const context& ctx);

/// choose_ranks with the caller's scoring and extra trees (`seeds`, always scored).
rank_choice choose_ranks_scored(const problem& p, const context& ctx, const rescore_fn& rescore,
                                const std::vector<rank_grid>& seeds);

/// printf's formatting into a string of any length (the planners' reports: a slab tree's
/// grid, or a scheme's cover, runs to thousands of characters).
[[gnu::format(printf, 1, 2)]] std::string format(const char* f, ...);

}  // namespace prism::ranks
