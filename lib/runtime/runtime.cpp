// lib/runtime/runtime.cpp — workspace pool, arena and plan cache of a context.
#include "runtime.hpp"

#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

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
// arena asks for more. prism sizes its arenas to that limit instead and says so once under
// PRISM_VERBOSE: a budget above it still gets a plan with that many shares and a correct
// result, computed by the threads oneTBB allows. A program that wants more threads than
// cores raises the limit with its own tbb::global_control, and prism's arenas follow it.
// prism does not raise the limit itself, so a library call never changes how many threads
// the whole process may run.

namespace {
std::once_flag clamp_note;
}  // namespace

int allowed_concurrency(int threads) {
  const std::size_t limit =
      oneapi::tbb::global_control::active_value(oneapi::tbb::global_control::max_allowed_parallelism);
  if (limit >= std::size_t(threads)) return threads;
  const int allowed = std::max(1, int(limit));
  const char* v = std::getenv("PRISM_VERBOSE");  // 1 or 2; any other value logs nothing (the drop-in says so)
  if (v != nullptr && (std::strcmp(v, "1") == 0 || std::strcmp(v, "2") == 0))
    std::call_once(clamp_note, [&] {
      std::fprintf(stderr, "prism: thread budget %d is above oneTBB's limit of %d threads (max_allowed_parallelism); "
                           "prism's arena uses %d (a tbb::global_control in the program can raise the limit)\n",
                   threads, allowed, allowed);
    });
  return allowed;
}

// One slot is reserved for the calling ("master") thread, as oneTBB does by default:
// a call from an outside thread never waits for a worker to become free to start.
runtime::runtime(int threads) : arena_(allowed_concurrency(threads), 1) {}

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
