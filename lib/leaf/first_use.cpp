// lib/leaf/first_use.cpp — the streaming crossovers measured at first use (first_use.hpp).
#include "first_use.hpp"

#include "../environment/run_once.hpp"
#include "../machine/wisdom.hpp"
#include "dispatch.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <complex>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#if defined(__SSE2__)
#include <immintrin.h>
#endif
#include <sys/mman.h>

namespace prism::detail {

namespace {

using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

// Seconds per call of f, one timing repeating f until its calls last 50 us (a call of a
// few microseconds is timed over several), `prepare` run untimed before each; 1e300 (none)
// once past `deadline`.
template <class F, class P>
double per_call(clock_type::time_point deadline, F&& f, P&& prepare) {
  if (clock_type::now() >= deadline) return 1e300;
  int calls = 0;
  double t = 0;
  do {
    prepare();
    const auto t0 = clock_type::now();
    f();
    t += since(t0);
    ++calls;
  } while (t < 5e-5);
  return t / calls;
}

// Whether evict() can drop data from every cache level here (x86's clflush, SSE2).
#if defined(__SSE2__)
constexpr bool can_evict = true;
#else
constexpr bool can_evict = false;
#endif

// Drops [p, p + bytes) from every cache level, so that the next call reads it from memory
// (x86: clflush on each 64-byte line, then a fence); nothing where can_evict is false.
void evict(const void* p, std::size_t bytes) {
#if defined(__SSE2__)
  const char* c = static_cast<const char*>(p);
  for (std::size_t at = 0; at < bytes; at += 64) _mm_clflush(c + at);
  if (bytes > 0) _mm_clflush(c + bytes - 1);
  _mm_mfence();
#else
  (void)p, (void)bytes;
#endif
}

// The operands every series shares, allocated once at the start (a series' own
// allocation, on a busy machine, once took a tenth of a second past the budget) and left
// unwritten: a series writes small exact values (0.5) into what it reads, so a leading
// dimension as long as a call's k costs address space, not memory or time (its pages are
// kept off transparent huge pages, which would fault in 2 MiB around each column read).
struct operands {
  std::size_t bytes;
  void* base;
  explicit operands(double b) : bytes(std::size_t(b) + (1 << 16)) {
    base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_NOHUGEPAGE
    (void)::madvise(base, bytes, MADV_NOHUGEPAGE);
#endif
  }
  operands(const operands&) = delete;
  operands& operator=(const operands&) = delete;
  ~operands() { ::munmap(base, bytes); }
  template <class T>
  T* at(std::int64_t offset_elements) {
    return static_cast<T*>(base) + offset_elements;
  }
  // Writes the values into `cols` runs of `rows` T elements, `ld` apart, from element `first`.
  template <class T>
  void fill(std::int64_t first, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    for (std::int64_t j = 0; j < cols; ++j) std::fill_n(at<T>(first + j * ld), rows, T(0.5));
  }
};

// k for A and B of `bytes` together (m + n elements of `size` bytes per step of k).
std::int64_t k_for(double bytes, std::int64_t m, std::int64_t n, std::size_t size) {
  return std::max<std::int64_t>(16, std::int64_t(bytes / double((m + n) * std::int64_t(size))));
}

// The streaming leaf's call against both BLAS leaves' in three rounds, each timing all of
// them in turn: a spell of a busy machine (another VM's memory traffic) then falls on both
// sides of a ratio, not on one leaf's timings. The BLAS side is `variants` calls
// (blas_call(library, v), e.g. the two triangles of a rank-k update), each against the one
// streaming timing. Returns, for each variant, best BLAS / streaming over whole rounds only
// (the budget may run out between two timings), or nothing when the budget ran out before
// one round ended. `prepare` runs untimed before each call.
template <class S, class B, class P>
std::vector<double> interleaved_ratios(clock_type::time_point deadline, int variants, S&& streaming_call, B&& blas_call,
                                       P&& prepare) {
  const blas_library& ob = leaf_library(leaf_backend::openblas);
  const blas_library& bl = leaf_library(leaf_backend::blis);
  double streaming = 1e300;
  std::vector<double> best_blas(std::size_t(variants), 1e300), round_blas(best_blas.size());
  for (int round = 0; round < 3; ++round) {
    double slowest = per_call(deadline, streaming_call, prepare);
    const double s = slowest;
    for (int v = 0; v < variants; ++v) {
      const double o = per_call(deadline, [&] { blas_call(ob, v); }, prepare);
      const double b = per_call(deadline, [&] { blas_call(bl, v); }, prepare);
      round_blas[std::size_t(v)] = std::min(o, b), slowest = std::max({slowest, o, b});
    }
    if (slowest >= 1e300) break;
    streaming = std::min(streaming, s);
    for (std::size_t v = 0; v < best_blas.size(); ++v) best_blas[v] = std::min(best_blas[v], round_blas[v]);
  }
  if (streaming >= 1e300) return {};
  for (double& b : best_blas) b /= streaming;
  return best_blas;
}

clock_type::time_point deadline_of(clock_type::time_point start, double budget) {
  return start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(budget));
}

// One series: the streaming leaf against the faster BLAS leaf on m x n x k (trans ta, tb)
// for each k of `ks`, one thread, the operands laid out as a leaf of a k cut of a call of
// inner size kmax sees them (leading dimension kmax where an operand runs along k; kmax is
// the memory size's k, above every k timed when that size is timed evicted). Example, 32 x
// 32 TN, 512 KiB L2s, 32 MiB L3: kmax = 64 MiB / (64 x 8 B) = 131072, the largest k timed
// 8192 (4 MiB); A's column j (k x 32, 'T') starts at element 131072 j, B (k x 32, 'N') at
// 32 x 131072, its column j 131072 j after that, each 8192 elements written and read. Returns the
// ratios best BLAS / streaming, as many as the budget allowed: a size starts only if it
// would likely end within the budget, and a timing only within it.
template <class T>
std::vector<double> series(operands& ops, std::int64_t m, std::int64_t n, char ta, char tb,
                           const std::vector<std::int64_t>& ks, std::int64_t kmax, clock_type::time_point start,
                           std::string& text, const char* name, bool evicted_last) {
  const auto deadline = deadline_of(start, first_use_budget_seconds);
  const std::int64_t lda = ta == 'N' ? m : kmax, ldb = tb == 'N' ? kmax : n;
  const std::int64_t kt = *std::max_element(ks.begin(), ks.end());  // the most any timing reads
  const T* A = ops.at<T>(0);
  const T* B = ops.at<T>(m * kmax);
  if (ta == 'N') ops.fill<T>(0, m * kt, 1, 0);
  else ops.fill<T>(0, kt, m, lda);
  if (tb == 'N') ops.fill<T>(m * kmax, kt, n, ldb);
  else ops.fill<T>(m * kmax, n * kt, 1, 0);
  const auto evict_operands = [&] {  // what the timings read of A and B
    if (ta == 'N') evict(A, std::size_t(m * kt) * sizeof(T));
    else
      for (std::int64_t j = 0; j < m; ++j) evict(A + j * lda, std::size_t(kt) * sizeof(T));
    if (tb == 'N')
      for (std::int64_t j = 0; j < n; ++j) evict(B + j * ldb, std::size_t(kt) * sizeof(T));
    else evict(B, std::size_t(n * kt) * sizeof(T));
  };
  std::vector<T> C(std::size_t(m * n));
  std::vector<double> ratios;
  char line[160];
  std::snprintf(line, sizeof line, "%s %lldx%lld %c%c %c:", name, static_cast<long long>(m), static_cast<long long>(n),
                ta, tb, char(scalar_type_of<T>()));
  text += line;
  double last = 0, last_k = 1;
  for (std::size_t i = 0; i < ks.size(); ++i) {
    const std::int64_t k = ks[i];
    const bool evicted = evicted_last && i + 1 == ks.size();
    // Stop before a size that would likely end past the budget: its calls take the last
    // size's time in proportion to k.
    if (since(start) + last * double(k) / last_k > first_use_budget_seconds) break;
    const auto t0 = clock_type::now();
    const std::vector<double> r = interleaved_ratios(
        deadline, 1, [&] { streaming_gemm<T>(ta, tb, m, n, k, T(1), A, lda, B, ldb, T(0), C.data(), m); },
        [&](const blas_library& lib, int) { lib.gemm<T>(ta, tb, m, n, k, T(1), A, lda, B, ldb, T(0), C.data(), m); },
        [&] {
          if (evicted) evict_operands();
        });
    if (r.empty()) break;  // the budget ran out inside the size
    ratios.push_back(r[0]);
    last = since(t0), last_k = double(k);
    std::snprintf(line, sizeof line, evicted ? " k %lld from memory %.2f" : " k %lld %.2f", static_cast<long long>(k), r[0]);
    text += line;
  }
  text += "\n";
  return ratios;
}

// The rank-k series: the streaming rank-k leaf against the faster BLAS leaf's ?syrk (?herk
// for a complex T, trans 'C' for 'T') on n x k triangles for each n of `ns`, A of `bytes`
// each (k = bytes / (n x element); 'N': n x k, lda n, as a leaf of a k cut sees it; 'T':
// k x n, lda k), one thread, within `budget` seconds from `start`. The BLAS side is timed on
// both triangles (a BLAS may be faster at one: OpenBLAS's dsyrk 'L' 'N' on an AVX2 Zen 3),
// the streaming leaf once (it sums the same products for either and writes one). Returns
// the ratios best BLAS / streaming, [0] upper and [1] lower, as many as the budget allowed.
template <class T>
std::array<std::vector<double>, 2> rank_k_series(operands& ops, char trans, const std::vector<std::int64_t>& ns,
                                                 double bytes, double span, clock_type::time_point start, double budget,
                                                 std::string& text) {
  constexpr bool herm = !std::is_floating_point_v<T>;
  if (herm && trans == 'T') trans = 'C';
  const auto deadline = deadline_of(start, budget);
  // A comes from memory: evicted from the caches before each call (can_evict), else each
  // call reads the next slice of A's span, last read a whole span (twice the last-level
  // cache) before. Example, 1 MiB slices of a 64 MiB span: 64 slices, each read once every
  // 64 calls.
  const std::int64_t slices = can_evict ? 1 : std::max<std::int64_t>(1, std::int64_t(span / bytes));
  const std::int64_t stride = std::int64_t(bytes) / std::int64_t(sizeof(T));
  std::int64_t next = 0, at = 0;
  auto slice = [&] { return ops.at<T>(at); };
  auto prepare = [&] {
    at = (next++ % slices) * stride;
    evict(ops.at<T>(at), std::size_t(stride) * sizeof(T));
  };
  std::vector<T> C(std::size_t(ns.back() * ns.back()));
  std::array<std::vector<double>, 2> ratios;
  std::array<std::string, 2> lines;
  char line[160];
  for (int v = 0; v < 2; ++v) {
    std::snprintf(line, sizeof line, "%s %c%c %c:", to_string(stream_rank_k_key(scalar_type_of<T>(), v == 0, trans == 'N')),
                  v == 0 ? 'U' : 'L', trans, char(scalar_type_of<T>()));
    lines[std::size_t(v)] = line;
  }
  double last = 0, last_n = 1;
  for (std::int64_t n : ns) {
    // An n likely to end past the budget does not start: with the same bytes, its calls take
    // the last n's time in proportion to n (n times the flops per byte).
    if (since(start) + last * double(n) / last_n > budget) break;
    const std::int64_t k = k_for(bytes, n, 0, sizeof(T)), lda = trans == 'N' ? n : k;
    const auto t0 = clock_type::now();
    const std::vector<double> r = interleaved_ratios(
        deadline, 2, [&] { streaming_rank_k<T>(herm, 'U', trans, n, k, T(1), slice(), lda, T(0), C.data(), n); },
        [&](const blas_library& lib, int v) {
          const char uplo = v == 0 ? 'U' : 'L';
          if constexpr (herm) lib.herk<T>(uplo, trans, n, k, 1.0, slice(), lda, 0.0, C.data(), n);
          else lib.syrk<T>(uplo, trans, n, k, T(1), slice(), lda, T(0), C.data(), n);
        },
        prepare);
    if (r.empty()) break;
    last = since(t0), last_n = double(n);
    for (std::size_t v = 0; v < 2; ++v) {
      ratios[v].push_back(r[v]);
      std::snprintf(line, sizeof line, " n %lld %.2f", static_cast<long long>(n), r[v]);
      lines[v] += line;
    }
  }
  text += lines[0] + "\n" + lines[1] + "\n";
  return ratios;
}

// Once per process, a measurement is measured, known, or never to be (settled: done()): the
// gemm crossovers', each type's rank-k limits (s, d, c, z) and the BLAS leaf classes have
// their own.
run_once gemm_state, rank_k_state[4], blas_leaves_state;
std::mutex measuring;  // one measurement at a time in a process: two would time each other

int type_index(scalar_type t) { return t == scalar_type::s ? 0 : t == scalar_type::d ? 1 : t == scalar_type::c ? 2 : 3; }

// Runs `measure_and_keep` once per process when first use is on and `wanted()` (nothing
// kept by an earlier process, say), one measurement at a time, and settles `state` either
// way (a leaf library that cannot load leaves the model's values). Returns true when it
// ran in this call.
template <class W, class M>
bool run_first_use_once(run_once& state, W&& wanted, M&& measure_and_keep) {
  bool ran = false;
  state([&] {
    if (wisdom::process().enabled() && wanted()) {
      try {
        const std::lock_guard lock(measuring);
        measure_and_keep();
        ran = true;
      } catch (const std::exception&) {
        // a leaf library that cannot load: the model's values (or the width rule) stay
      }
    }
  });
  return ran;
}

// Runs `measure` once per process unless `marker` was kept (by an earlier process, or
// another thread of this one), and keeps the values of `keys` mc takes from first use
// (taken_by) with the marker "measured in X s, N of M decided" (an undecided key keeps the
// model's value).
template <class M>
bool measure_once(run_once& state, const machine_description& mc, const std::string& marker,
                  const std::vector<machine_key>& keys, M&& measure) {
  return run_first_use_once(
      state, [&] { return !wisdom::process().find(marker).has_value(); },
      [&] { keep_first_use(marker, keys.size(), taken_by(mc, measure())); });
}

// True when a call on leaf `leaf` of machine mc, modelled at call_seconds, is long enough
// (`long_seconds`) for a first-use measurement of `keys` not yet settled, one of which
// takes first-use values in mc (none does where a machine file lists them all).
bool wants_first_use(const run_once& state, const machine_description& mc, const std::vector<machine_key>& keys,
                     leaf_backend leaf, double flops, double bytes, int threads, double long_seconds) {
  if (state.done() || leaf != leaf_backend::automatic ||
      std::none_of(keys.begin(), keys.end(), [&](machine_key k) { return mc.first_use(k); }))
    return false;
  return call_seconds(mc, flops, bytes, threads) >= long_seconds;
}

}  // namespace

std::string first_use_summary(const first_use_result& r, std::size_t keys) {
  char done[96];
  std::snprintf(done, sizeof done, "measured in %.3f s, %zu of %zu decided", r.seconds, r.values.size(), keys);
  return done;
}

bool keep_first_use(const std::string& marker, std::size_t keys, const first_use_result& r) {
  return keep_first_use_values(r.values, {{marker, first_use_summary(r, keys)}});
}

first_use_result taken_by(const machine_description& mc, first_use_result r) {
  std::erase_if(r.values, [&](const auto& kv) { return !mc.first_use(kv.first); });
  return r;
}

const std::vector<machine_key>& first_use_rank_k_keys(scalar_type t) {
  auto of = [](scalar_type u) {
    return std::vector<machine_key>{stream_rank_k_key(u, true, true), stream_rank_k_key(u, true, false),
                                    stream_rank_k_key(u, false, true), stream_rank_k_key(u, false, false)};
  };
  // Built once (every rank-k call reads its type's), never destroyed: calls may come at exit.
  static const auto& keys = *new std::array<std::vector<machine_key>, 4>{
      of(scalar_type::s), of(scalar_type::d), of(scalar_type::c), of(scalar_type::z)};
  return keys[std::size_t(type_index(t))];
}

std::string first_use_rank_k_marker(scalar_type t) { return std::string("streaming_rank_k_triangles_") + char(t); }

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
  first_use_sizes b{{l2 / 8, l2 / 2, 2 * l2, largest}, {l2 / 2, 2 * l2, largest}, false, 2 * l2, 0};
  b.rank_k_span = can_evict ? b.rank_k : std::max(b.rank_k, std::min(2 * llc, 64.0 * (1 << 20)));
  if (llc > 0 && 2 * llc <= largest) {  // a small last-level cache: the largest size is read from memory already
    b.from_memory = true;
  } else if (llc > 0 && (can_evict || 2 * llc <= 64.0 * (1 << 20))) {
    b.near.push_back(2 * llc);
    b.far.push_back(2 * llc);
    b.from_memory = true;
    b.evicted_last = can_evict;
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
  // The largest series' A and B, laid out as a leaf of a k cut of the largest size sees
  // them (an evicted last size: only the size before it is read).
  operands ops(std::max(bytes.near.back(), bytes.far.back()));
  auto run = [&](machine_key key, std::int64_t m, std::int64_t n, char ta, char tb, const std::vector<double>& list) {
    std::vector<std::int64_t> ks;
    std::vector<double> sizes;
    for (double b : list) ks.push_back(k_for(b, m, n, sizeof(double)));
    for (std::int64_t k : ks) sizes.push_back(double((m + n) * k) * sizeof(double));
    const std::int64_t kmax = ks.back();
    if (bytes.evicted_last) ks.back() = ks[ks.size() - 2];  // timed at the size before, evicted
    const double x = first_use_crossover(
        sizes, series<double>(ops, m, n, ta, tb, ks, kmax, start, r.text, to_string(key), bytes.evicted_last), bytes.from_memory);
    if (x > 0) r.values[key] = x;
  };
  // Cheapest series first, so that a slow machine's budget runs out on the largest sizes.
  // Complex 8 x 8 leaves, by k (a few microseconds a call).
  const std::vector<std::int64_t> ks = {32, 64, 128, 256};
  const std::vector<double> sizes(ks.begin(), ks.end());
  const double x =
      first_use_crossover(sizes, series<std::complex<double>>(ops, 8, 8, 'N', 'N', ks, ks.back(), start, r.text, "stream_complex_k", false), false);
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
  if (m > streaming_max_mn || n > streaming_max_mn) return false;
  if (!wants_first_use(gemm_state, mc, first_use_keys(), leaf, flops, bytes, threads, first_use_long_seconds)) return false;
  return measure_once(gemm_state, mc, "streaming_crossovers", first_use_keys(), [&] { return measure_first_use(mc); });
}

std::vector<std::int64_t> first_use_rank_k_ns(scalar_type t, bool n_form) {
  const std::int64_t from = n_form ? 4 : t == scalar_type::s ? 16 : 8;
  std::vector<std::int64_t> ns;
  for (std::int64_t n : {4, 8, 16, 32, 64, 96, 128})
    if (n >= from) ns.push_back(n);
  return ns;
}

double first_use_n_limit(const std::vector<std::int64_t>& ns, const std::vector<double>& ratios) {
  if (ratios.size() < 2) return 0;
  for (std::size_t i = 0; i < ratios.size(); ++i) {
    const bool behind = ratios[i] < 0.97, next_behind = i + 1 == ratios.size() || ratios[i + 1] < 0.97;
    if (behind && next_behind) return i == 0 ? 1 : double(ns[i - 1]);
  }
  return double(ns[ratios.size() - 1]);
}

first_use_result measure_rank_k_first_use(const machine_description& mc, scalar_type t, double budget) {
  first_use_result r;
  (void)leaf_library(leaf_backend::openblas);  // loaded first: the clock times the kernels
  (void)leaf_library(leaf_backend::blis);
  const auto start = clock_type::now();
  const first_use_sizes sizes = first_use_bytes(mc);
  operands ops(sizes.rank_k_span);
  ops.fill<double>(0, std::int64_t(sizes.rank_k_span / sizeof(double)), 1, 0);  // every type's slices, once
  for (bool n_form : {true, false}) {
    const std::vector<std::int64_t> ns = first_use_rank_k_ns(t, n_form);
    const char trans = n_form ? 'N' : 'T';
    auto run = [&]<class T>(T) {
      return rank_k_series<T>(ops, trans, ns, sizes.rank_k, sizes.rank_k_span, start, budget, r.text);
    };
    const std::array<std::vector<double>, 2> ratios = t == scalar_type::s   ? run(float())
                                                      : t == scalar_type::d ? run(double())
                                                      : t == scalar_type::c ? run(std::complex<float>())
                                                                            : run(std::complex<double>());
    for (bool upper : {true, false})
      if (const double x = first_use_n_limit(ns, ratios[upper ? 0 : 1]); x > 0)
        r.values[stream_rank_k_key(t, upper, n_form)] = x;
  }
  r.seconds = since(start);
  return r;
}

bool first_use_before_rank_k(const machine_description& mc, leaf_backend leaf, scalar_type t, std::int64_t n,
                             double flops, double bytes, int threads) {
  run_once& state = rank_k_state[type_index(t)];
  if (state.done()) return false;  // every later call: one atomic load
  const std::vector<machine_key>& keys = first_use_rank_k_keys(t);
  if (n > streaming_max_mn || !wants_first_use(state, mc, keys, leaf, flops, bytes, threads, first_use_rank_k_long_seconds))
    return false;
  return measure_once(state, mc, first_use_rank_k_marker(t), keys, [&] { return measure_rank_k_first_use(mc, t); });
}

bool first_use_before_blas_leaves(const machine_description& mc, leaf_backend leaf, scalar_type t, std::int64_t m,
                                  std::int64_t n, double flops, double bytes, int threads) {
  if (t != scalar_type::d || m < 128 || n < 128 ||
      !wants_first_use(blas_leaves_state, mc, first_use_keys(), leaf, flops, bytes, threads, first_use_long_seconds))
    return false;
  return run_first_use_once(
      blas_leaves_state, [] { return blas_leaf_widths_equal() && !blas_leaves_kept(); },
      [] { keep_blas_leaves(measure_blas_leaves(first_use_blas_leaves_budget_seconds)); });
}

}  // namespace prism::detail
