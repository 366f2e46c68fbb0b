// probes/bandwidth.cpp — read-bandwidth probe; built with -O3 -march=native like fma_peak.cpp.
//
// Each thread sums its own contiguous part of a large array of doubles with kAccumulators
// independent vector accumulators (one load and one add per vector; the adds are cheap next
// to the loads, and several accumulators keep the add latency off the critical path). The
// sums go to a volatile sink so the compiler cannot drop the loads. With the array far
// larger than every cache (2 GiB by default against tens of MiB of L3), a pass measures
// DRAM reads.
#include "bandwidth.hpp"

#include "cpus.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>
#include <vector>

namespace prism_probes {

namespace {

constexpr int kAccumulators = 8;
constexpr std::size_t kPage = 4096;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

using vec [[gnu::vector_size(kVectorBytes)]] = double;

volatile double g_sink = 0.0;

// Sum of `count` vectors; count is a multiple of kAccumulators (parts are whole pages).
[[gnu::noinline]] double sum_part(const vec* v, std::size_t count) {
  vec acc[kAccumulators] = {};
  for (std::size_t i = 0; i < count; i += kAccumulators) {
#pragma GCC unroll 8
    for (int a = 0; a < kAccumulators; ++a) acc[a] += v[i + static_cast<std::size_t>(a)];
  }
  vec total = acc[0];
  for (int a = 1; a < kAccumulators; ++a) total += acc[a];
  double r = 0;
  for (int l = 0; l < kVectorBytes / 8; ++l) r += total[l];
  return r;
}

// All workers wait here until every one has arrived (generation counter; the waiting thread
// yields, so it costs little even if two workers ever share a CPU).
class barrier {
 public:
  explicit barrier(int n) : n_(n) {}
  void wait() {
    const int gen = gen_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      arrived_.store(0, std::memory_order_relaxed);
      gen_.fetch_add(1, std::memory_order_acq_rel);
      return;
    }
    while (gen_.load(std::memory_order_acquire) == gen) std::this_thread::yield();
  }

 private:
  const int n_;
  std::atomic<int> arrived_{0};
  std::atomic<int> gen_{0};
};

}  // namespace

std::unique_ptr<void, free_deleter> operand_memory(std::size_t bytes, bool huge) {
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kHugePage - 1) / kHugePage * kHugePage;
  std::unique_ptr<void, free_deleter> memory(std::aligned_alloc(kHugePage, rounded));
  if (!memory) throw std::bad_alloc();
  if (huge) madvise(memory.get(), rounded, MADV_HUGEPAGE);  // advice only: failure changes nothing
  return memory;
}

bandwidth_result read_bandwidth(int threads, std::size_t bytes, int passes) {
  using clock = std::chrono::steady_clock;
  threads = std::max(threads, 1);
  passes = std::max(passes, 1);
  // Each thread's part: whole pages (so its vectors come in whole groups of kAccumulators).
  const std::size_t part = std::max<std::size_t>(bytes / static_cast<std::size_t>(threads) / kPage, 1) * kPage;
  const std::size_t total = part * static_cast<std::size_t>(threads);
  // Aligned to and rounded up to huge pages, with transparent huge pages asked for (where the
  // system offers them on request, THP "madvise"): the fill then takes far fewer page faults
  // (4 KiB faults made filling 2 GiB take seconds on this project's VM) and the passes few
  // TLB misses, so what is measured is the memory's read rate. Without THP it still works.
  const auto memory = operand_memory(total, true);
  auto* base = static_cast<std::byte*>(memory.get());

  const std::vector<int> cpus = allowed_cpus();
  std::atomic<bool> pinned{!cpus.empty()};
  // start[p][t], stop[p][t]: when thread t began and ended pass p.
  std::vector<clock::time_point> start(static_cast<std::size_t>(passes * threads)),
      stop(start.size());
  std::vector<double> sums(static_cast<std::size_t>(threads), 0.0);
  barrier sync(threads);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      if (!cpus.empty() && !pin_self(cpus[static_cast<std::size_t>(t) % cpus.size()])) pinned = false;
      auto* mine = reinterpret_cast<double*>(base + part * static_cast<std::size_t>(t));
      const std::size_t doubles = part / sizeof(double);
      for (std::size_t i = 0; i < doubles; ++i) mine[i] = 1.0;  // first touch by the reader
      const auto* v = reinterpret_cast<const vec*>(mine);
      const std::size_t count = part / kVectorBytes;
      double s = 0;
      for (int p = 0; p < passes; ++p) {
        sync.wait();
        const std::size_t i = static_cast<std::size_t>(p * threads + t);
        start[i] = clock::now();
        s += sum_part(v, count);
        stop[i] = clock::now();
      }
      sums[static_cast<std::size_t>(t)] = s;
    });
  for (auto& th : pool) th.join();
  double all = 0;
  for (double s : sums) all += s;
  g_sink = all;

  std::vector<double> rates;
  for (int p = 0; p < passes; ++p) {
    const auto first = start.begin() + p * threads, last = stop.begin() + p * threads;
    const double seconds =
        std::chrono::duration<double>(*std::max_element(last, last + threads) -
                                      *std::min_element(first, first + threads)).count();
    rates.push_back(static_cast<double>(total) / seconds);
  }
  std::sort(rates.begin(), rates.end());
  bandwidth_result r;
  r.best_bytes_per_s = rates.back();
  r.median_bytes_per_s = rates[rates.size() / 2];
  r.bytes = total;
  r.threads = threads;
  r.passes = passes;
  r.pinned = pinned;
  return r;
}

const char* bandwidth_isa() { return kIsa; }

}  // namespace prism_probes
