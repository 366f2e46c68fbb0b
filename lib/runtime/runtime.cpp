// lib/runtime/runtime.cpp — workspace pool, arena and plan cache of a context.
#include "runtime.hpp"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>

namespace prism::detail {

namespace {
constexpr std::size_t block_alignment = 64;
constexpr std::size_t max_cached_plans = 32;
constexpr std::size_t max_free_blocks = 16;
}  // namespace

workspace_pool::lease& workspace_pool::lease::operator=(lease&& o) noexcept {
  if (this != &o) {
    if (pool_ != nullptr && data_ != nullptr) pool_->give_back(data_, bytes_);
    pool_ = std::exchange(o.pool_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

workspace_pool::lease::~lease() {
  if (pool_ != nullptr && data_ != nullptr) pool_->give_back(data_, bytes_);
}

std::byte* workspace_pool::allocate(std::size_t bytes) {
  if (alloc_.allocate) {
    void* p = alloc_.allocate(bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<std::byte*>(p);
  }
  return static_cast<std::byte*>(::operator new(bytes, std::align_val_t(block_alignment)));
}

void workspace_pool::deallocate(std::byte* p, std::size_t bytes) {
  if (alloc_.deallocate) alloc_.deallocate(p, bytes);
  else ::operator delete(p, std::align_val_t(block_alignment));
}

workspace_pool::~workspace_pool() {
  for (auto& [p, bytes] : free_) deallocate(p, bytes);
}

workspace_pool::lease workspace_pool::acquire(std::size_t bytes) {
  if (bytes == 0) return {};
  std::lock_guard lock(mutex_);
  // Best fit: the smallest free block that is large enough.
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it)
    if (it->second >= bytes && (best == free_.end() || it->second < best->second)) best = it;
  std::byte* data;
  std::size_t size;
  if (best != free_.end()) {
    data = best->first;
    size = best->second;
    free_.erase(best);
  } else {
    size = (bytes + block_alignment - 1) / block_alignment * block_alignment;
    data = allocate(size);
    ++stats_.allocations;
    stats_.bytes_held += size;
  }
  stats_.bytes_on_loan += size;
  stats_.peak_on_loan = std::max(stats_.peak_on_loan, stats_.bytes_on_loan);
  return lease(this, data, size);
}

void workspace_pool::give_back(std::byte* data, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  stats_.bytes_on_loan -= bytes;
  free_.emplace_back(data, bytes);
  if (free_.size() > max_free_blocks) {  // keep the larger blocks, free the smallest
    auto smallest = std::min_element(free_.begin(), free_.end(),
                                     [](auto& a, auto& b) { return a.second < b.second; });
    stats_.bytes_held -= smallest->second;
    deallocate(smallest->first, smallest->second);
    free_.erase(smallest);
  }
}

workspace_pool::stats workspace_pool::snapshot() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void workspace_pool::trim() {
  std::lock_guard lock(mutex_);
  for (auto& [p, bytes] : free_) {
    stats_.bytes_held -= bytes;
    deallocate(p, bytes);
  }
  free_.clear();
  stats_.peak_on_loan = stats_.bytes_on_loan;
}

// ---- oneTBB's thread limit ---------------------------------------------------------------
// oneTBB caps the threads of the whole process at max_allowed_parallelism (default: the
// cores it may use) and prints "The number of workers is currently limited to ..." when an
// arena asks for more. A context's budget is the user's choice (PRISM_NUM_THREADS=8 on 2
// cores oversubscribes on purpose), so prism raises the limit itself: one global_control at
// the largest budget of its live runtimes, replaced as they come and go. oneTBB takes the
// smallest of all live global_controls, so a program's own lower limit still wins; then the
// arena is sized to that limit instead (allowed_concurrency), with one line under PRISM_VERBOSE.

namespace {

using oneapi::tbb::global_control;

struct limit_registry {
  std::mutex mutex;
  std::multiset<int> budgets;                // of the live leases
  std::unique_ptr<global_control> control;  // at *budgets.rbegin(), when above the default
  int value = 0;                             // the control's value, 0 without one

  void update() {  // under mutex
    const int want = budgets.empty() ? 0 : *budgets.rbegin();
    const int needed = want > oneapi::tbb::info::default_concurrency() ? want : 0;
    if (needed == value) return;
    // The new control first: the limit never dips below a live budget in between.
    std::unique_ptr<global_control> next;
    if (needed > 0) next = std::make_unique<global_control>(global_control::max_allowed_parallelism, std::size_t(needed));
    control = std::move(next);
    value = needed;
  }
};

// Never destroyed: contexts in static storage (the default context) release their lease
// during exit, after function-local statics of this file may be gone.
limit_registry& registry() {
  static limit_registry* r = new limit_registry;
  return *r;
}

std::once_flag clamp_note;

}  // namespace

int allowed_concurrency(int threads) {
  const std::size_t limit = global_control::active_value(global_control::max_allowed_parallelism);
  return limit < std::size_t(threads) ? std::max(1, int(limit)) : threads;
}

parallelism_lease::parallelism_lease(int threads) : threads_(threads) {
  limit_registry& r = registry();
  {
    std::lock_guard lock(r.mutex);
    r.budgets.insert(threads);
    r.update();
  }
  concurrency_ = allowed_concurrency(threads);
  if (concurrency_ < threads) {
    const char* v = std::getenv("PRISM_VERBOSE");
    if (v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0)
      std::call_once(clamp_note, [&] {
        std::fprintf(stderr, "prism: thread budget %d is above the program's oneTBB limit (global_control "
                             "max_allowed_parallelism %d); prism's arena uses %d threads\n",
                     threads, concurrency_, concurrency_);
      });
  }
}

parallelism_lease::~parallelism_lease() {
  limit_registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.budgets.erase(r.budgets.find(threads_));
  r.update();
}

// One slot is reserved for the calling ("master") thread, as oneTBB does by default:
// a call from an outside thread never waits for a worker to become free to start.
runtime::runtime(int threads) : lease_(threads), arena_(lease_.concurrency(), 1) {}

domain_arenas& runtime::domains(const topology& t) {
  std::call_once(domains_once_, [&] { domains_ = std::make_unique<domain_arenas>(t); });
  return *domains_;
}

std::shared_ptr<const plan> runtime::cached_plan(const problem& p, const std::function<plan()>& make) {
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
  auto built = std::make_shared<const plan>(make());  // planned outside the lock
  std::lock_guard lock(cache_mutex_);
  if (auto hit = lookup()) return hit;  // another thread planned it meanwhile
  if (cache_.size() >= max_cached_plans) cache_.erase(cache_.begin());  // least recently used
  cache_.emplace_back(p, built);
  return built;
}

}  // namespace prism::detail
