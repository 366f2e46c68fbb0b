// lib/runtime/runtime.hpp — what a context owns: a task arena, a workspace pool, a plan cache.
#pragma once

#include <prism/context.hpp>
#include <prism/types.hpp>

#include "../environment/environment.hpp"
#include "../environment/run_once.hpp"
#include "../gpu/devices.hpp"
#include "../numa/domain_arenas.hpp"
#include "../resources/concurrency.hpp"
#include "../resources/workspace_pool.hpp"

#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace prism {
class plan;  // <prism/plan.hpp>: the cache holds plans, built and read above this floor
}

namespace prism::detail {

/// A context with the defaults overridden by env's PRISM_* values (context::from_env reads
/// the environment then; default_context takes the process's, read once); throws
/// prism::error naming the variable on a bad value, e.g. "PRISM_NUM_THREADS: thread count
/// must be in 1..4096, got 0".
context context_from(const environment& env);

/// True when prism::gemm runs p as one leaf on the caller's thread instead of planning: it
/// has fewer flops than ctx.small_flops() and every size fits the 32-bit leaf BLAS, and
/// the context does not send calls to GPUs (set_gpus(n > 0) plans every call for them).
/// Throws prism::error when the context's machine description cannot be read (a bad
/// PRISM_TOPOLOGY, say).
inline bool runs_as_one_leaf(const problem& p, const context& ctx) {
  constexpr std::int64_t int_max = 2147483647;
  return p.flops() < ctx.small_flops() && p.m <= int_max && p.n <= int_max && p.k <= int_max && ctx.gpus() <= 0;
}

/// The shared state of a context: its task arena, workspace pool and recent plans.
class runtime {
 public:
  /// An arena of `threads` slots (one of them for the calling thread), or of oneTBB's limit
  /// when that is lower (allowed_concurrency; said once under PRISM_VERBOSE).
  explicit runtime(int threads);
  /// The task arena sized to the context's thread budget.
  oneapi::tbb::task_arena& arena() { return arena_; }
  /// The workspace pool.
  workspace_pool& pool() { return pool_; }
  /// Per-NUMA-domain arenas for topology t (created on first use; a runtime belongs to one
  /// context, hence to one topology).
  domain_arenas& domains(const topology& t);
  /// The plan for p, from a small cache or built by `make` (and then cached).
  std::shared_ptr<const plan> cached_plan(const problem& p, const std::function<std::shared_ptr<const plan>()>& make);

 private:
  oneapi::tbb::task_arena arena_;
  workspace_pool pool_;
  run_once domains_once_;
  std::unique_ptr<domain_arenas> domains_;
  std::mutex cache_mutex_;
  std::vector<std::pair<problem, std::shared_ptr<const plan>>> cache_;  // most recent last
};

/// The library's access to what a context shares among its copies (context.hpp keeps it
/// private: it is not the product's API).
struct context_access {
  static runtime& of(const context& c) { return *c.runtime_; }
  static const std::shared_ptr<const gpu::device_set>& devices(const context& c) { return c.devices_; }
  /// Tests: runs c's GPU plans on `d` (e.g. emulated devices with delays or failures).
  static void set_devices(context& c, std::shared_ptr<const gpu::device_set> d) {
    c.devices_ = std::move(d);
    fresh_runtime(c);
  }
  /// A setting that changes plans or the arena starts a new runtime: plans cached under the
  /// old settings must not be reused (copies made earlier keep the old one).
  static void fresh_runtime(context& c) { c.runtime_ = std::make_shared<runtime>(c.threads_); }
};

/// The runtime (arena, pool, plan cache) ctx shares with its copies.
inline runtime& runtime_of(const context& ctx) { return context_access::of(ctx); }

/// The devices GPU plans of ctx run on: its emulated ones (use_emulated_gpus), else the
/// process's (gpu::process_devices: PRISM_GPU, else the CUDA devices if any).
const gpu::device_set& devices_of(const context& ctx);

}  // namespace prism::detail
