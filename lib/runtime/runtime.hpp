// lib/runtime/runtime.hpp — what a context owns: a task arena, a workspace pool, a plan cache.
#pragma once

#include <prism/plan.hpp>

#include "../numa/domain_arenas.hpp"

#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace prism::detail {

/// Reusable 64-byte-aligned blocks for the temporaries of a run. In steady state a call
/// takes a free block (best fit) and gives it back: no allocation per call or per node.
class workspace_pool {
 public:
  /// A block on loan; returns itself to the pool when destroyed.
  class lease {
   public:
    lease() = default;
    lease(workspace_pool* pool, std::byte* data, std::size_t bytes) : pool_(pool), data_(data), bytes_(bytes) {}
    lease(lease&& o) noexcept { *this = std::move(o); }
    lease& operator=(lease&& o) noexcept;
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease();
    /// Start of the block (64-byte aligned), or nullptr for an empty lease.
    std::byte* data() const noexcept { return data_; }
    /// Size of the block in bytes (at least what was asked).
    std::size_t bytes() const noexcept { return bytes_; }

   private:
    workspace_pool* pool_ = nullptr;
    std::byte* data_ = nullptr;
    std::size_t bytes_ = 0;
  };

  workspace_pool() = default;
  workspace_pool(const workspace_pool&) = delete;
  workspace_pool& operator=(const workspace_pool&) = delete;
  ~workspace_pool();

  /// Lends a block of at least `bytes` bytes (empty lease for 0).
  lease acquire(std::size_t bytes);

  /// Counters for tests: fresh allocations made, bytes on loan now and at the peak.
  struct stats {
    std::size_t allocations = 0;      ///< blocks ever allocated from the system
    std::size_t bytes_held = 0;       ///< bytes the pool holds (free + on loan)
    std::size_t bytes_on_loan = 0;    ///< bytes lent right now
    std::size_t peak_on_loan = 0;     ///< most bytes ever lent at once
  };
  /// A snapshot of the counters.
  stats snapshot() const;
  /// Frees every block not on loan and resets the peak.
  void trim();

 private:
  void give_back(std::byte* data, std::size_t bytes);

  mutable std::mutex mutex_;
  std::vector<std::pair<std::byte*, std::size_t>> free_;
  stats stats_;
};

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
