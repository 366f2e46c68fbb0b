// lib/resources/workspace_pool.cpp — see workspace_pool.hpp.
#include "workspace_pool.hpp"

#include <algorithm>
#include <new>

namespace prism::detail {

namespace {
constexpr std::size_t block_alignment = 64;
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
  burst_peak_ = std::max(burst_peak_, stats_.bytes_on_loan);
  return lease(this, data, size);
}

void workspace_pool::give_back(std::byte* data, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  stats_.bytes_on_loan -= bytes;
  free_.emplace_back(data, bytes);
  if (stats_.bytes_on_loan == 0) {
    release_idle();
  } else if (free_.size() > max_free_blocks) {  // keep the larger blocks, free the smallest
    auto smallest = std::min_element(free_.begin(), free_.end(),
                                     [](auto& a, auto& b) { return a.second < b.second; });
    stats_.bytes_held -= smallest->second;
    deallocate(smallest->first, smallest->second);
    free_.erase(smallest);
  }
}

// Worked example: two callers overlap with 14 MB and 9 MB blocks, then the pool goes idle:
// limit = max(14 MB, 23 MB) = 23 MB, both stay (the burst needed them). The next burst is
// one call that takes the 14 MB block: at its end limit = max(14 MB, 14 MB), and the 9 MB
// block goes back to the system. One caller that takes a 2 MB and a 1 MB block in every
// call (a NUMA k-cut's C' and a workspace) keeps both: its burst peak is 3 MB.
void workspace_pool::release_idle() {
  std::sort(free_.begin(), free_.end(), [](auto& a, auto& b) { return a.second > b.second; });
  const std::size_t limit = std::max(free_.empty() ? 0 : free_.front().second, burst_peak_);
  std::size_t kept_bytes = 0, kept = 0;
  for (auto& [p, bytes] : free_) {
    if (kept < max_free_blocks && kept_bytes + bytes <= limit) {
      free_[kept++] = {p, bytes};
      kept_bytes += bytes;
    } else {
      stats_.bytes_held -= bytes;
      deallocate(p, bytes);
    }
  }
  free_.resize(kept);
  burst_peak_ = 0;
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
  burst_peak_ = stats_.bytes_on_loan;
}

}  // namespace prism::detail
