// probes/cpus.hpp — the CPUs this process may use, pinning a thread to one of them, and the
// vector width the probes are built for.
//
// Shared by the machine probes (fma_peak.cpp, bandwidth.cpp): both run one thread per
// allowed CPU and pin it there. Without pinning, a scheduler that packs threads onto few
// vCPUs (this project's VM boots with sched_vcpu_pack) runs two threads on one core and the
// probe reports half the machine.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <vector>

namespace prism_probes {

// The widest vector the probe's compile flags (-march=native) allow, and its name.
#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
constexpr const char* kIsa = "avx512f";
#elif defined(__AVX__)
constexpr int kVectorBytes = 32;
constexpr const char* kIsa = "avx";
#else
constexpr int kVectorBytes = 16;
constexpr const char* kIsa = "sse";
#endif

/// The CPUs this process may run on, in order (empty if the affinity mask cannot be read).
inline std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

/// Pins the calling thread to one CPU; false if the kernel refused.
inline bool pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

}  // namespace prism_probes
