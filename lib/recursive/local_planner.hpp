// lib/recursive/local_planner.hpp — the levels inside one rank (numa, thread, cache), as a
// building block: make_local_plan for a whole problem on one rank, the rank planner (lib/ranks,
// which also holds make_plan: it chooses between the two) for each rank's box below its
// rank-level steps.
#pragma once

#include <prism/context.hpp>
#include <prism/plan.hpp>

#include <cstddef>
#include <vector>

namespace prism::detail {

/// Appends to `nodes` the plan of box b on resources r (one rank: its domains, threads)
/// under a temporaries budget; returns the subtree's root index, or -1 (nodes unchanged)
/// when r spans several NUMA domains and b is too small to give each of them a piece.
int plan_local(std::vector<node>& nodes, const problem& p, const box& b, const resources& r, const context& ctx,
               std::size_t budget);

/// make_plan on one rank: gemm's local levels or the syrk / herk triangle recursion; throws
/// prism::plan_error when ctx.ranks() > 1 (those plans come from choose_ranks).
plan make_local_plan(const problem& p, const context& ctx);

/// 'N', 'T' or 'C' for any case of those letters; throws prism::plan_error otherwise.
char normalised_trans(char t);

}  // namespace prism::detail
