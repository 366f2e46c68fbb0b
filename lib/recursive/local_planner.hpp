// lib/recursive/local_planner.hpp — the levels inside one rank (numa, thread, cache), as a
// building block: make_plan uses it for a whole problem, the rank planner for each rank's
// box below its rank-level steps.
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

/// 'N', 'T' or 'C' for any case of those letters; throws prism::plan_error otherwise.
char normalised_trans(char t);

}  // namespace prism::detail
