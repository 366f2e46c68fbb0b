// probes/fma_peak.cpp — FMA peak kernel; built with -O3 -march=native -ffp-contract=fast.
//
// Each thread keeps `kChains` independent accumulators of the widest vector type the
// target has and updates them as acc = acc * a + b. With -ffp-contract=fast the update is
// one vfmadd per vector; kChains is large enough to cover FMA latency x issue width on
// current x86 cores (4 cycles x 2 pipes). a and b come from volatile loads, so the compiler
// cannot fold the chains, and the accumulators are summed into a volatile sink, so it
// cannot drop them. a < 1 and b > 0 keep every lane near the fixed point b / (1 - a) = 1:
// no overflow, no denormals. Thread t is pinned to the t-th CPU the process may use.
#include "fma_peak.hpp"

#include "cpus.hpp"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace prism_probes {

namespace {

#if defined(__FMA__)
constexpr const char* kFma = "+fma";
#else
constexpr const char* kFma = " (no fma: mul+add)";
#endif

constexpr int kChains = 12;

template <class T>
using vec [[gnu::vector_size(kVectorBytes)]] = T;

volatile double g_a = 0.999999;
volatile double g_b = 0.000001;
volatile double g_sink = 0.0;
std::atomic<bool> g_pinned{true};

template <class T>
[[gnu::noinline]] double chains(std::int64_t steps) {
  using V = vec<T>;
  constexpr int lanes = kVectorBytes / static_cast<int>(sizeof(T));
  const T a_s = static_cast<T>(g_a), b_s = static_cast<T>(g_b);
  V a, b;
  for (int l = 0; l < lanes; ++l) {
    a[l] = a_s;
    b[l] = b_s;
  }
  V acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = b * static_cast<T>(c + 1);
  for (std::int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * a + b;
  }
  V sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum += acc[c];
  double r = 0;
  for (int l = 0; l < lanes; ++l) r += static_cast<double>(sum[l]);
  return r;
}

template <class T>
double run(int threads, std::int64_t steps) {
  if (threads < 1) threads = 1;
  std::vector<double> results(static_cast<std::size_t>(threads), 0.0);
  static const std::vector<int> cpus = allowed_cpus();
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  g_pinned = !cpus.empty();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&results, t, steps] {
      if (!cpus.empty() && !pin_self(cpus[static_cast<std::size_t>(t) % cpus.size()])) g_pinned = false;
      results[static_cast<std::size_t>(t)] = chains<T>(steps);
    });
  for (auto& th : pool) th.join();
  double total = 0;
  for (double r : results) total += r;
  g_sink = total;
  constexpr double lanes = double(kVectorBytes) / double(sizeof(T));
  return 2.0 * lanes * kChains * double(steps) * double(threads);
}

}  // namespace

double fma_peak_double(int threads, std::int64_t steps) { return run<double>(threads, steps); }
double fma_peak_float(int threads, std::int64_t steps) { return run<float>(threads, steps); }
int fma_vector_bytes() { return kVectorBytes; }
int fma_chains() { return kChains; }
bool fma_pinned() { return g_pinned; }

const char* fma_isa() {
  static const std::string name = std::string(kIsa) + kFma;
  return name.c_str();
}

}  // namespace prism_probes
