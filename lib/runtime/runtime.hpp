// lib/runtime/runtime.hpp — what a context owns: a task arena, a workspace pool, a plan cache.
#pragma once

#include <prism/plan.hpp>

#include "../numa/domain_arenas.hpp"
#include "workspace_pool.hpp"

#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace prism::detail {

/// The shared state of a context: its task arena, workspace pool and recent plans.
class runtime {
 public:
  /// An arena of `threads` slots (one of them for the calling thread).
  explicit runtime(int threads);
  /// The task arena sized to the context's thread budget.
  oneapi::tbb::task_arena& arena() { return arena_; }
  /// The workspace pool.
  workspace_pool& pool() { return pool_; }
  /// Per-NUMA-domain arenas for topology t (created on first use; a runtime belongs to one
  /// context, hence to one topology).
  domain_arenas& domains(const topology& t);
  /// The plan for p, from a small cache or built by `make` (and then cached).
  std::shared_ptr<const plan> cached_plan(const problem& p, const std::function<plan()>& make);

 private:
  oneapi::tbb::task_arena arena_;
  workspace_pool pool_;
  std::once_flag domains_once_;
  std::unique_ptr<domain_arenas> domains_;
  std::mutex cache_mutex_;
  std::vector<std::pair<problem, std::shared_ptr<const plan>>> cache_;  // most recent last
};

}  // namespace prism::detail
