// lib/resources/concurrency.hpp — how many threads oneTBB lets prism's arenas run.
#pragma once

namespace prism::detail {

/// The arena concurrency oneTBB allows for a budget of `threads`: the budget, or oneTBB's
/// process-wide limit when that is lower (max_allowed_parallelism: the cores it may use,
/// unless the program changed it with a tbb::global_control).
int allowed_concurrency(int threads);

}  // namespace prism::detail
