// probes/bandwidth.hpp — the machine's read bandwidth, measured (the memory side of the
// roofline; fma_peak.hpp is the compute side).
//
// bandwidth.cpp is built like fma_peak.cpp with -march=native: every thread streams its own
// part of one large array through the widest vector loads the machine has and sums it, so
// the benchmarks (and `prism bound --probe`) can say how far a memory-bound gemm (m, n small, k huge) is from what the
// memory system delivers.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace prism_probes {

struct free_deleter {
  void operator()(void* p) const noexcept { std::free(p); }
};

/// Memory for a large operand: at least `bytes`, 2 MiB-aligned and rounded up to 2 MiB,
/// with transparent huge pages asked for when `huge` (madvise(MADV_HUGEPAGE), advice only:
/// where THP is "madvise" the pages are then 2 MiB; without it they are the plain pages
/// malloc gets). Throws std::bad_alloc.
std::unique_ptr<void, free_deleter> operand_memory(std::size_t bytes, bool huge);

struct bandwidth_result {
  double best_bytes_per_s = 0;    ///< fastest pass: bytes read / its wall time
  double median_bytes_per_s = 0;  ///< median pass
  std::size_t bytes = 0;          ///< bytes read per pass (all threads together)
  int threads = 0;
  int passes = 0;
  bool pinned = false;            ///< every thread was pinned to its own allowed CPU
};

/// Allocates an array of about `bytes` (each thread's part a whole number of 4 KiB pages),
/// lets `threads` threads, thread t pinned to the t-th allowed CPU, write their own parts
/// (first touch places the pages near the reader), then runs `passes` passes: in each, all
/// threads start together and sum their parts; a pass lasts from the first thread's start
/// to the last thread's end. Frees the array before returning.
bandwidth_result read_bandwidth(int threads, std::size_t bytes, int passes);

/// The instruction set the summing loop was compiled for, e.g. "avx512f" (64-byte loads).
const char* bandwidth_isa();

}  // namespace prism_probes
