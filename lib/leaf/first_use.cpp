// lib/leaf/first_use.cpp — the streaming crossovers measured at first use (first_use.hpp).
#include "first_use.hpp"

#include "../machine/wisdom.hpp"
#include "dispatch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <complex>
#include <cstdio>
#include <mutex>
#include <vector>

namespace prism::detail {

namespace {

using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

// Seconds per call of f, one timing repeating f until it lasts 50 us (a call of a few
// microseconds is timed over several); 1e300 (none) once past `deadline`.
template <class F>
double per_call(clock_type::time_point deadline, F&& f) {
  if (clock_type::now() >= deadline) return 1e300;
  int calls = 0;
  const auto t0 = clock_type::now();
  double t = 0;
  do {
    f();
    ++calls;
  } while ((t = since(t0)) < 5e-5);
  return t / calls;
}

// The operands every series shares, allocated and written once at the start (a series' own
// allocation, on a busy machine, once took a tenth of a second past the budget): `bytes`
// of small exact values, read as doubles or complex doubles.
struct operands {
  std::vector<double> data;
  explicit operands(double bytes) : data(std::size_t(bytes / sizeof(double)) + 4096, 0.5) {}
  template <class T>
  T* at(std::int64_t offset_elements) {
    return reinterpret_cast<T*>(data.data()) + offset_elements;
  }
};

// One series: the streaming leaf against the faster BLAS leaf on m x n x k (trans ta, tb)
// for each k of `ks`, one thread, the operands laid out as a leaf of a k cut sees them
// (leading dimension the series' largest k where an operand runs along k). Returns the
// ratios best BLAS / streaming, as many as the budget allowed: a size starts only if it
// would likely end within the budget, and a timing only within it.
template <class T>
std::vector<double> series(operands& ops, std::int64_t m, std::int64_t n, char ta, char tb,
                           const std::vector<std::int64_t>& ks, clock_type::time_point start, std::string& text,
                           const char* name) {
  const auto deadline = start + std::chrono::duration_cast<clock_type::duration>(
                                    std::chrono::duration<double>(first_use_budget_seconds));
  const std::int64_t kmax = ks.back();
  const std::int64_t lda = ta == 'N' ? m : kmax, ldb = tb == 'N' ? kmax : n;
  const T* A = ops.at<T>(0);
  const T* B = ops.at<T>(m * kmax);
  std::vector<T> C(std::size_t(m * n));
  const blas_library& ob = leaf_library(leaf_backend::openblas);
  const blas_library& bl = leaf_library(leaf_backend::blis);
  std::vector<double> ratios;
  char line[160];
  std::snprintf(line, sizeof line, "%s %lldx%lld %c%c %c:", name, static_cast<long long>(m), static_cast<long long>(n),
                ta, tb, char(scalar_type_of<T>()));
  text += line;
  double last = 0, last_k = 1;
  for (std::int64_t k : ks) {
    // Stop before a size that would likely end past the budget: its calls take the last
    // size's time in proportion to k.
    if (since(start) + last * double(k) / last_k > first_use_budget_seconds) break;
    const auto t0 = clock_type::now();
    auto blas = [&](const blas_library& lib) {
      return per_call(deadline, [&] { lib.gemm<T>(ta, tb, m, n, k, T(1), A, lda, B, ldb, T(0), C.data(), m); });
    };
    // Three rounds, each timing all three leaves in turn: a spell of a busy machine (another
    // VM's memory traffic) then falls on both sides of the ratio, not on one leaf's timings.
    // Only whole rounds count (the budget may run out between two leaves' timings).
    double streaming = 1e300, best_blas = 1e300;
    for (int round = 0; round < 3; ++round) {
      const double s = per_call(deadline, [&] {
        streaming_gemm<T>(ta, tb, m, n, k, T(1), A, lda, B, ldb, T(0), C.data(), m);
      });
      const double o = blas(ob), b = blas(bl);
      if (std::max({s, o, b}) >= 1e300) break;
      streaming = std::min(streaming, s), best_blas = std::min({best_blas, o, b});
    }
    if (streaming >= 1e300) break;  // the budget ran out inside the size
    ratios.push_back(best_blas / streaming);
    last = since(t0), last_k = double(k);
    std::snprintf(line, sizeof line, " k %lld %.2f", static_cast<long long>(k), ratios.back());
    text += line;
  }
  text += "\n";
  return ratios;
}

// k for A and B of `bytes` together (m + n elements of `size` bytes per step of k).
std::int64_t k_for(double bytes, std::int64_t m, std::int64_t n, std::size_t size) {
  return std::max<std::int64_t>(16, std::int64_t(bytes / double((m + n) * std::int64_t(size))));
}

std::once_flag once;
std::atomic<bool> settled{false};  // measured, known, or never to be measured in this process

}  // namespace

const std::vector<machine_key>& first_use_keys() {
  static const std::vector<machine_key>& keys = *new std::vector<machine_key>{machine_key::stream_bytes, machine_key::stream_dot_bytes,
                                                machine_key::stream_far_bytes, machine_key::stream_complex_k};
  return keys;
}

double first_use_crossover(const std::vector<double>& sizes, const std::vector<double>& ratios, bool memory_last) {
  if (ratios.empty()) return 0;
  std::size_t from = ratios.size();
  while (from > 0 && ratios[from - 1] >= 0.97) --from;
  if (from < ratios.size()) return sizes[from];
  if (memory_last && ratios.size() == sizes.size() && ratios.size() >= 2)  // behind from memory
    return ratios[ratios.size() - 2] < 0.97 ? 1e18 : 0;  // and at the size before: one timing never decides alone
  return ratios.back() < 0.9 ? 1e18 : 0;
}

first_use_sizes first_use_bytes(const machine_description& mc) {
  const double l2 = double(mc.cache_share(2) > 0 ? mc.cache_share(2) : std::uint64_t(1) << 20);
  const double largest = std::min(8 * l2, 16.0 * (1 << 20));
  const double llc = double(mc.last_level_bytes());
  first_use_sizes b{{l2 / 8, l2 / 2, 2 * l2, largest}, {l2 / 2, 2 * l2, largest}, false};
  if (llc > 0 && 2 * llc <= largest) {  // a small last-level cache: the largest size is read from memory already
    b.from_memory = true;
  } else if (llc > 0 && 2 * llc <= 64.0 * (1 << 20)) {
    b.near.push_back(2 * llc);
    b.far.push_back(2 * llc);
    b.from_memory = true;
  }
  return b;
}

first_use_result measure_first_use(const machine_description& mc) {
  first_use_result r;
  // The leaf libraries load first (and run their own kernel probe, kept apart): the
  // clock times the kernels.
  (void)leaf_library(leaf_backend::openblas);
  (void)leaf_library(leaf_backend::blis);
  const auto start = clock_type::now();
  const first_use_sizes bytes = first_use_bytes(mc);
  operands ops(std::max(bytes.near.back(), bytes.far.back()));  // the largest series' A and B
  auto run = [&](machine_key key, std::int64_t m, std::int64_t n, char ta, char tb, const std::vector<double>& list) {
    std::vector<std::int64_t> ks;
    std::vector<double> sizes;
    for (double b : list) ks.push_back(k_for(b, m, n, sizeof(double)));
    for (std::int64_t k : ks) sizes.push_back(double((m + n) * k) * sizeof(double));
    const double x =
        first_use_crossover(sizes, series<double>(ops, m, n, ta, tb, ks, start, r.text, to_string(key)),
                            bytes.from_memory);
    if (x > 0) r.values[key] = x;
  };
  // Cheapest series first, so that a slow machine's budget runs out on the largest sizes.
  // Complex 8 x 8 leaves, by k (a few microseconds a call).
  const std::vector<std::int64_t> ks = {32, 64, 128, 256};
  const std::vector<double> sizes(ks.begin(), ks.end());
  const double x =
      first_use_crossover(sizes, series<std::complex<double>>(ops, 8, 8, 'N', 'N', ks, start, r.text, "stream_complex_k"), false);
  if (x > 0 && x < 1e18) r.values[machine_key::stream_complex_k] = x;
  run(machine_key::stream_bytes, 8, 8, 'N', 'N', bytes.near);
  run(machine_key::stream_dot_bytes, 32, 32, 'T', 'N', bytes.far);
  run(machine_key::stream_far_bytes, 64, 64, 'N', 'N', bytes.far);
  r.seconds = since(start);
  return r;
}

double call_seconds(const machine_description& mc, double flops, double bytes, int threads) {
  const double t = double(std::max(1, threads));
  return std::max(flops / (t * mc.value(machine_key::rank_flops_per_thread)),
                  bytes / (t * mc.value(machine_key::host_copy_bandwidth)));
}

bool first_use_before_call(const machine_description& mc, leaf_backend leaf, std::int64_t m, std::int64_t n,
                           double flops, double bytes, int threads) {
  if (settled.load(std::memory_order_acquire) || !mc.first_use() || leaf != leaf_backend::automatic) return false;
  if (m > streaming_max_mn || n > streaming_max_mn) return false;
  if (call_seconds(mc, flops, bytes, threads) < first_use_long_seconds) return false;
  bool ran = false;
  std::call_once(once, [&] {
    // Known from an earlier process (or measured by another thread of this one): nothing to do.
    const bool known = wisdom::process().find("streaming_crossovers").has_value();
    if (!known && wisdom::process().enabled()) {
      try {
        const first_use_result r = measure_first_use(mc);
        char done[96];  // the marker that they were measured (an undecided key keeps the model's value)
        std::snprintf(done, sizeof done, "measured in %.3f s, %zu of %zu decided", r.seconds, r.values.size(),
                      first_use_keys().size());
        keep_first_use_values(r.values, {{"streaming_crossovers", done}});
        ran = true;
      } catch (const std::exception&) {
        // a leaf library that cannot load: the model's values stay
      }
    }
    settled.store(true, std::memory_order_release);
  });
  return ran;
}

}  // namespace prism::detail
