// lib/bounds/levels.hpp — the levels of predict_levels below the ranks (caches, NUMA
// domains), for lib/ranks, which adds the rank level's entry from its model and defines
// the public predict_levels (prism/traffic.hpp) on top.
#pragma once

#include <prism/traffic.hpp>

#include <vector>

namespace prism::detail {

/// predict_levels without the rank level: each cache level, then NUMA domains when the
/// plan spans several on one rank.
std::vector<level_traffic> predict_local_levels(const plan& p, const topology& machine);

}  // namespace prism::detail
