// bench/cache_counters.hpp — hardware cache-miss counters around a call, through
// perf_event_open(2) directly (no PAPI): L1D read misses and last-level-cache misses of the
// calling thread. Where the kernel exposes no CPU PMU (this project's VM: no
// /sys/bus/event_source/devices/cpu) or forbids counting (perf_event_paranoid), it says so
// and the cachegrind path (scripts/cachegrind-study.sh) is the one to use.
#pragma once

#include <cstdint>
#include <string>

namespace prism_bench {

/// Counts of one measured region; valid only when `available`.
struct cache_counts {
  bool available = false;    ///< the counters opened and ran
  std::string why;           ///< when not available: the reason, one line
  std::uint64_t l1d_read_misses = 0;  ///< PERF_COUNT_HW_CACHE_L1D, read, miss
  std::uint64_t ll_misses = 0;        ///< PERF_COUNT_HW_CACHE_LL, read, miss
};

/// Opens the two counters for the calling thread (disabled); close on destruction.
class cache_counters {
 public:
  /// Opens the counters, or records why it cannot.
  cache_counters();
  /// Closes the counters.
  ~cache_counters();
  cache_counters(const cache_counters&) = delete;
  cache_counters& operator=(const cache_counters&) = delete;

  /// True when both counters opened.
  bool available() const noexcept { return fd_l1_ >= 0 && fd_ll_ >= 0; }
  /// Why the counters are unavailable ("" when available).
  const std::string& why() const noexcept { return why_; }

  /// Counts the misses of f() on this thread (f's other threads are not counted).
  template <class F>
  cache_counts measure(F&& f) {
    start();
    f();
    return stop();
  }

 private:
  void start();
  cache_counts stop();
  int fd_l1_ = -1, fd_ll_ = -1;
  std::string why_;
};

}  // namespace prism_bench
