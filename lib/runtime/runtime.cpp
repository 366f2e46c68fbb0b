// lib/runtime/runtime.cpp — the arena and plan cache of a context.
#include "runtime.hpp"

#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace prism::detail {

namespace {
constexpr std::size_t max_cached_plans = 32;
}  // namespace

// One slot is reserved for the calling ("master") thread, as oneTBB does by default:
// a call from an outside thread never waits for a worker to become free to start.
runtime::runtime(int threads) : arena_(allowed_concurrency(threads), 1) {}

domain_arenas& runtime::domains(const topology& t) {
  domains_once_([&] { domains_ = std::make_unique<domain_arenas>(t); });
  return *domains_;
}

std::shared_ptr<const plan> runtime::cached_plan(const problem& p, const std::function<std::shared_ptr<const plan>()>& make) {
  auto lookup = [&]() -> std::shared_ptr<const plan> {  // under cache_mutex_; a hit becomes most recent
    for (auto it = cache_.begin(); it != cache_.end(); ++it)
      if (it->first == p) {
        auto hit = *it;
        cache_.erase(it);
        cache_.push_back(hit);
        return hit.second;
      }
    return nullptr;
  };
  {
    std::lock_guard lock(cache_mutex_);
    if (auto hit = lookup()) return hit;
  }
  auto built = make();  // planned outside the lock
  std::lock_guard lock(cache_mutex_);
  if (auto hit = lookup()) return hit;  // another thread planned it meanwhile
  if (cache_.size() >= max_cached_plans) cache_.erase(cache_.begin());  // least recently used
  cache_.emplace_back(p, built);
  return built;
}

const gpu::device_set& devices_of(const context& ctx) {
  const std::shared_ptr<const gpu::device_set>& own = context_access::devices(ctx);
  if (own) return *own;
  static const gpu::device_set* process = gpu::process_devices().get();  // (kept by process_devices, never destroyed)
  return *process;
}

}  // namespace prism::detail
