// apps/tune.cpp — `prism tune`: this machine's crossovers and kernel sizes, measured and
// written to a machine file (and the first-use measurement, now).
#include "commands.hpp"
#include "gpu_report.hpp"
#include "measure.hpp"

#include <prism/prism.hpp>

#include "environment/environment.hpp"
#include "leaf/backend/blas_leaf_rule.hpp"
#include "leaf/backend/blas_library.hpp"
#include "leaf/dispatch.hpp"
#include "leaf/first_use.hpp"
#include "leaf/kernels/streaming.hpp"
#include "runtime/runtime.hpp"
#include "machine/wisdom.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <complex>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

namespace prism_app {

namespace {

// The four BLAS types, in their letters' order (s, d, c, z).
constexpr prism::scalar_type all_types[] = {prism::scalar_type::s, prism::scalar_type::d, prism::scalar_type::c,
                                            prism::scalar_type::z};

// Each crossover is the smallest size of a series from which the streaming leaf (or the
// recursion) was at least as fast as the alternative, within a band `tie` for noise, at that
// size and at every larger one measured, so one noisy win below a loss does not count.
// Example, tie 0.97: streaming / best BLAS ratios 0.7, 0.9, 1.1, 0.95, 1.2, 1.3 over sizes
// s0..s5 give s4 (s2 won, but s3 lost after it; 0.98 there would have counted as a tie and
// given s2). A series that never wins gives twice its largest size ("not within the sizes
// measured"); one that always wins gives its smallest.
struct crossover {
  double value = 0;
  bool never = false;
};

crossover find_crossover(const std::vector<double>& sizes, const std::vector<double>& ratios, double tie) {
  std::size_t from = sizes.size();
  while (from > 0 && ratios[from - 1] >= tie) --from;
  if (from == sizes.size()) return {2 * sizes.back(), true};
  return {sizes[from], false};
}

// Seconds per call of the faster of prism's OpenBLAS and BLIS leaves, and of the streaming
// leaf, for one m x n x k product of type T with trans pair (ta, tb), one thread.
template <class T>
std::pair<double, double> leaf_times(int reps, int m, int n, int k, char ta, char tb) {
  const auto& ob = prism::detail::leaf_library(prism::leaf_backend::openblas);
  const auto& bl = prism::detail::leaf_library(prism::leaf_backend::blis);
  const int lda = ta == 'N' ? m : k, ldb = tb == 'N' ? k : n;
  auto A = random_matrix<T>(std::size_t(m) * k, 1), B = random_matrix<T>(std::size_t(k) * n, 2);
  std::vector<T> C(std::size_t(m) * n);
  auto blas = [&](const prism::detail::blas_library& lib) {
    return time_calls(reps, [&] { lib.gemm<T>(ta, tb, m, n, k, T(1), A.data(), lda, B.data(), ldb, T(0), C.data(), m); })
        .seconds;
  };
  const double best_blas = std::min(blas(ob), blas(bl));
  const double streaming = time_calls(reps, [&] {
                             prism::detail::streaming_gemm<T>(ta, tb, m, n, k, T(1), A.data(), lda, B.data(), ldb,
                                                              T(0), C.data(), m);
                           }).seconds;
  return {best_blas, streaming};
}

// The streaming leaf against the best BLAS leaf over k = k0, 2 k0, ..., k1 for one shape
// class; sizes are bytes of A and B, or k itself when `by_k`. Prints one line a size.
template <class T>
crossover streaming_crossover(const char* name, int reps, int m, int n, char ta, char tb, std::int64_t k0,
                              std::int64_t k1, bool by_k) {
  std::vector<double> sizes, ratios;
  for (std::int64_t k = k0; k <= k1; k *= 2) {
    const auto [blas, streaming] = leaf_times<T>(reps, m, n, int(k), ta, tb);
    const double bytes = double(m + n) * double(k) * double(sizeof(T));
    sizes.push_back(by_k ? double(k) : bytes);
    ratios.push_back(blas / streaming);
    std::printf("#   %-17s %3d x %3d x %8lld %c%c %c: %7.1f MiB of A and B, streaming / best BLAS leaf %.2f\n", name, m,
                n, static_cast<long long>(k), ta, tb, char(prism::scalar_type_of<T>()), bytes / (1 << 20),
                ratios.back());
    std::fflush(stdout);
  }
  // A tie counts for the streaming leaf: it packs nothing and leaves the caches to others.
  return find_crossover(sizes, ratios, 0.97);
}

// The streaming kernels' sizes (machine keys stream_*_bytes and syrk_chunk_bytes). Each is
// timed at the model's value times 1/4, 1/2, 1, 2 and 4 (whole 64-byte lines) on a shape
// that uses it, with A and B from memory (twice the last-level cache, 256 MiB to 1 GiB),
// every thread streaming its own part of k as prism's k cut has it; in rounds over the
// candidates (R of them, at least 3), best of the rounds each, per shape. The size kept is
// the one whose slowest shape, against the model's value, gains most; the model's value
// wins unless that gain is over 2%. Sizes are measured one after the other and
// each is in force for the next (the tiled leaf runs the outer and dot kernels on its
// chunks). Prints one line a size.
class kernel_size_tuner {
 public:
  kernel_size_tuner(const prism::machine_description& d, int reps, int threads) : reps_(reps), threads_(threads) {
    const double llc = double(d.last_level_bytes());
    bytes_ = std::int64_t(std::clamp(2 * llc, 256.0 * (1 << 20), 1024.0 * (1 << 20)));
    half_ = std::size_t(bytes_ / 2 / std::int64_t(sizeof(double)));
    buf_.assign(2 * half_, 0.5);  // A in the first half, B in the second; a rank-k update's A in all
    sizes_ = prism::detail::streaming_sizes_of(d);
    prism::detail::streaming_set_sizes(sizes_);
  }

  // Measures every size, sets each in d and in the kernels.
  void run(prism::machine_description& d) {
    using K = prism::machine_key;
    tune(d, K::stream_prefetch_bytes, &prism::detail::streaming_sizes::prefetch, "8x8 and 4x4 NN",
         [&] { return std::vector<double>{gemm(8, 8, 'N', 'N'), gemm(4, 4, 'N', 'N')}; });
    tune(d, K::stream_outer_chunk_bytes, &prism::detail::streaming_sizes::outer_chunk,
         "16x16 NN, 64x64 NN and 32x32 TN",
         [&] { return std::vector<double>{gemm(16, 16, 'N', 'N'), gemm(64, 64, 'N', 'N'), gemm(32, 32, 'T', 'N')}; });
    tune(d, K::stream_dot_chunk_bytes, &prism::detail::streaming_sizes::dot_chunk, "16x16 TN",
         [&] { return std::vector<double>{gemm(16, 16, 'T', 'N')}; });
    tune(d, K::stream_tile_chunk_bytes, &prism::detail::streaming_sizes::tile_chunk, "64x64 NN and 32x32 TN",
         [&] { return std::vector<double>{gemm(64, 64, 'N', 'N'), gemm(32, 32, 'T', 'N')}; });
    tune(d, K::syrk_chunk_bytes, &prism::detail::streaming_sizes::syrk_chunk, "syrk n = 32 N",
         [&] { return std::vector<double>{syrk(32)}; });
  }

 private:
  // Seconds for one m x n product over all of the buffers (k = what fits), split along k.
  double gemm(int m, int n, char ta, char tb) {
    const std::int64_t k = std::int64_t(half_) / std::max(m, n);
    return split(k, [&](std::int64_t l0, std::int64_t kk, double* c) {
      const double* A = buf_.data() + (ta == 'N' ? l0 * m : l0);
      const double* B = buf_.data() + half_ + (tb == 'N' ? l0 : l0 * n);
      const std::int64_t lda = ta == 'N' ? m : k, ldb = tb == 'N' ? k : n;
      prism::detail::streaming_gemm<double>(ta, tb, m, n, kk, 1.0, A, lda, B, ldb, 0.0, c, m);
    });
  }

  // Seconds for one n x n rank-k update, trans 'N', over the buffers (k = what fits).
  double syrk(int n) {
    const std::int64_t k = std::int64_t(2 * half_) / n;
    return split(k, [&](std::int64_t l0, std::int64_t kk, double* c) {
      prism::detail::streaming_rank_k<double>(false, 'U', 'N', n, kk, 1.0, buf_.data() + l0 * n, n, 0.0, c, n);
    });
  }

  // Best time of `call` on threads_ threads, thread t taking its share [l0, l0 + kk) of k.
  template <class F>
  double split(std::int64_t k, F&& call) {
    std::vector<std::vector<double>> c(std::size_t(threads_), std::vector<double>(128 * 128));
    return time_calls(1, [&] {
      std::vector<std::thread> team;
      const std::int64_t part = (k + threads_ - 1) / threads_;
      for (int t = 0; t < threads_; ++t) {
        const std::int64_t l0 = t * part, kk = std::min(part, k - l0);
        if (kk > 0) team.emplace_back([&, l0, kk, t] { call(l0, kk, c[std::size_t(t)].data()); });
      }
      for (auto& th : team) th.join();
    }).seconds;
  }

  // Times every candidate on each of the shapes `time` runs (seconds per shape), best of
  // the rounds per shape, and keeps the candidate whose worst shape gains most against the
  // model's value: score = max over shapes of t(candidate) / t(model). A size that speeds
  // one shape up and slows another down is not taken; the model's value wins unless the
  // best score is below 0.98.
  void tune(prism::machine_description& d, prism::machine_key key, std::int64_t prism::detail::streaming_sizes::*field,
            const char* shape, const std::function<std::vector<double>()>& time) {
    const std::int64_t model = std::int64_t(d.model_value(key));
    const double factors[] = {0.25, 0.5, 1.0, 2.0, 4.0};
    constexpr std::size_t n = std::size(factors), at_model = 2;
    std::int64_t value[n];
    std::vector<double> best_t[n];
    for (std::size_t c = 0; c < n; ++c)
      value[c] = std::max<std::int64_t>(64, std::int64_t(double(model) * factors[c]) / 64 * 64);
    // Rounds over all candidates, best of the rounds each: a machine that slows down for a
    // while slows every candidate of a round, not one of them.
    for (int round = 0; round < std::max(3, reps_); ++round)
      for (std::size_t c = 0; c < n; ++c) {
        sizes_.*field = value[c];
        prism::detail::streaming_set_sizes(sizes_);
        const std::vector<double> t = time();
        if (best_t[c].empty()) best_t[c] = t;
        for (std::size_t s = 0; s < t.size(); ++s) best_t[c][s] = std::min(best_t[c][s], t[s]);
      }
    double score[n];
    for (std::size_t c = 0; c < n; ++c) {
      score[c] = 0;
      for (std::size_t s = 0; s < best_t[c].size(); ++s) score[c] = std::max(score[c], best_t[c][s] / best_t[at_model][s]);
    }
    std::size_t best = at_model;
    for (std::size_t c = 0; c < n; ++c)
      if (score[c] < score[best]) best = c;
    if (score[best] >= 0.98) best = at_model;
    std::printf("#   %-24s %s:", prism::to_string(key), shape);
    for (std::size_t c = 0; c < n; ++c) {
      double sum = 0;
      for (double t : best_t[c]) sum += t;
      std::printf(" %lld B %.1f ms (x%.2f);", static_cast<long long>(value[c]), sum * 1e3, score[c]);
    }
    std::printf(" keeps %lld\n", static_cast<long long>(value[best]));
    std::fflush(stdout);
    sizes_.*field = value[best];
    prism::detail::streaming_set_sizes(sizes_);
    d.set_measured(key, double(value[best]));
  }

  int reps_, threads_;
  std::int64_t bytes_ = 0;
  std::size_t half_ = 0;
  std::vector<double> buf_;
  prism::detail::streaming_sizes sizes_;
};

// Which library runs each class of large double BLAS leaf (lib/leaf/backend/blas_leaf_rule.hpp),
// as the first long call would measure it, with desc's machine file (`again`: measured even
// when kept or a machine file is read, as `prism tune` does, within a second): "# first use, blas leaves: measured in ...; kept in FILE" and the
// timings, "nothing measured, kept in FILE: ..." or why nothing is measured.
void blas_leaves_first_use(const prism::machine_description& desc, bool again) {
  namespace d = prism::detail;
  d::wisdom& w = d::wisdom::process();
  const char* head = "# first use, blas leaves: ";
  const auto& keys = d::first_use_keys();
  if (!w.enabled()) {
    std::printf("%snothing measured (PRISM_FIRST_USE=0): %s\n", head, d::blas_leaf_rule_text().c_str());
  } else if (!again && std::none_of(keys.begin(), keys.end(), [&](prism::machine_key k) { return desc.first_use(k); })) {
    std::printf("%snothing measured (the machine file lists the streaming crossovers): %s\n", head,
                d::blas_leaf_rule_text().c_str());
  } else if (!d::blas_leaf_widths_equal()) {
    std::printf("%snothing measured (the libraries' kernels differ in width, or one cannot load): %s\n", head, d::blas_leaf_rule_text().c_str());
  } else if (!again && d::blas_leaves_kept()) {
    std::printf("%snothing measured, kept in %s: %s\n", head, w.path().c_str(), d::blas_leaf_rule_text().c_str());
  } else {
    const d::blas_leaf_verdict v = d::measure_blas_leaves(again ? 1.0 : d::first_use_blas_leaves_budget_seconds);
    const bool kept = d::keep_blas_leaves(v);
    std::printf("%smeasured in %.3f s, %zu of 2 decided; %s\n#   %s\n", head, v.seconds, v.faster.size(),
                kept ? ("kept in " + w.path()).c_str() : "not kept (the folder cannot be written)", v.text.c_str());
  }
}

// `prism tune --first-use`: what the first long calls would measure without a machine file:
// the gemm crossovers, and each type's rank-k limits (measured apart, each by the first long
// rank-k call of its type).
int run_first_use(const options& o) {
  namespace d = prism::detail;
  const prism::machine_description& desc = o.ctx.description();
  d::wisdom& w = d::wisdom::process();
  std::printf("# %s\n", desc.summary().c_str());
  std::vector<prism::machine_key> measured_here = d::first_use_keys();
  for (prism::scalar_type t : all_types)
    for (prism::machine_key k : d::first_use_rank_k_keys(t)) measured_here.push_back(k);
  if (std::none_of(measured_here.begin(), measured_here.end(), [&](prism::machine_key k) { return desc.first_use(k); })) {
    std::printf("# first use: nothing measured (%s)\n", w.enabled() ? "a machine file is read: its values stand"
                                                                     : "PRISM_FIRST_USE=0");
    return 0;
  }
  (void)d::leaf_library(prism::leaf_backend::openblas);  // loaded first: the measurement times kernels only
  (void)d::leaf_library(prism::leaf_backend::blis);
  // One measurement: "# first use[, what]: measured in ...", "nothing measured, kept in ..."
  // or, where a machine file lists every key of it, "nothing measured (the machine file ...)".
  auto once = [&](const std::string& what, const std::string& marker, const std::vector<prism::machine_key>& keys,
                  auto&& measure) {
    const std::string head = "# first use" + what + ": ";
    if (std::none_of(keys.begin(), keys.end(), [&](prism::machine_key k) { return desc.first_use(k); })) {
      std::printf("%snothing measured (the machine file lists its values)\n", head.c_str());
      return;
    }
    if (const auto kept_before = w.find(marker)) {
      std::printf("%snothing measured, kept in %s: %s\n", head.c_str(), w.path().c_str(), kept_before->c_str());
      return;
    }
    const d::first_use_result r = d::taken_by(desc, measure());
    const bool kept = d::keep_first_use(marker, keys.size(), r);
    std::printf("%s%s; %s\n%s", head.c_str(), d::first_use_summary(r, keys.size()).c_str(),
                kept ? ("kept in " + w.path()).c_str() : "not kept (the folder cannot be written)", r.text.c_str());
  };
  once("", "streaming_crossovers", d::first_use_keys(), [&] { return d::measure_first_use(desc); });
  for (prism::scalar_type t : all_types)
    once(std::string(", rank-k ") + char(t), d::first_use_rank_k_marker(t), d::first_use_rank_k_keys(t),
         [&] { return d::measure_rank_k_first_use(desc, t); });
  blas_leaves_first_use(desc, false);
  for (prism::machine_key k : measured_here) std::printf("%s: %.12g %s\n", prism::to_string(k), desc.value(k), desc.origin(k));
  return 0;
}
// CPU seconds the CPUs this process may run on have spent busy (/proc/stat's cpuN lines
// for those in its affinity mask: every state but idle and iowait, steal included) and
// this process has used; machine -1 where unreadable.
struct cpu_clock {
  double machine = -1, self = 0;
  int cpus = 0;  // the CPUs counted
  static cpu_clock now() {
    cpu_clock c;
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) == 0)
      c.self = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof mine, &mine) != 0) return c;
    std::ifstream stat("/proc/stat");
    double busy = 0;
    for (std::string line; std::getline(stat, line);) {
      int cpu = -1;
      double v[8] = {};  // user nice system idle iowait irq softirq steal
      if (std::sscanf(line.c_str(), "cpu%d %lf %lf %lf %lf %lf %lf %lf %lf", &cpu, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                      &v[6], &v[7]) != 9 || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mine))
        continue;
      busy += v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
      ++c.cpus;
    }
    if (c.cpus > 0) c.machine = busy / double(sysconf(_SC_CLK_TCK));
    return c;
  }
};

// The cores others (other processes, the hypervisor) kept busy, of this process's CPUs,
// since `from`, on average over `seconds` of wall time: their busy time less this
// process's. E.g. 120 busy CPU seconds, 62 of them tune's, over 60 s: 0.97 cores.
double others_busy(const cpu_clock& from, double seconds) {
  const cpu_clock to = cpu_clock::now();
  if (from.machine < 0 || to.machine < 0 || seconds <= 0) return 0;
  return std::max(0.0, (to.machine - from.machine) - (to.self - from.self)) / seconds;
}

}  // namespace

int run_tune(const options& o) {
  if (o.tune_first_use) return run_first_use(o);
  if (o.tune_show) {
    std::printf("# %s\n%s", o.ctx.description().summary().c_str(), o.ctx.description().to_string().c_str());
    return 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const int reps = o.reps_given ? o.reps : 3;
  std::string path = o.tune_out;
  if (path.empty()) {
    const prism::detail::environment env = prism::detail::read_environment();
    path = !env.machine.empty() ? env.machine : env.machine_file;
  }
  if (path.empty()) throw bad_input("no file to write: give --out FILE, or set PRISM_MACHINE or HOME", "tune");
  {  // never overwrite an example machine (PRISM_MACHINE may name one for plans)
    std::ifstream old(path);
    std::stringstream text;
    text << old.rdbuf();
    if (old && prism::machine_description::is_example_text(text.str()))
      throw bad_input(path + " describes an example machine; give --out FILE for this machine's file", "tune");
  }
  const std::filesystem::path target(path);
  {  // the file can be written, checked before a minute of measuring: a scratch file beside it
    const std::string named = !o.tune_out.empty() ? "--out " + path : path;
    std::error_code ec;
    if (target.has_parent_path() && !std::filesystem::create_directories(target.parent_path(), ec) && ec)
      throw bad_input("cannot write " + path + ": cannot create " + target.parent_path().string() + " (" + ec.message() + ")", "tune");
    if (std::filesystem::is_directory(target, ec)) throw bad_input(named + " is a directory", "tune");
    const std::string probe = path + ".tmp" + std::to_string(getpid());
    if (!std::ofstream(probe)) throw bad_input("cannot write " + path + " (" + std::strerror(errno) + ")", "tune");
    std::remove(probe.c_str());
  }
  const cpu_clock busy0 = cpu_clock::now();
  prism::machine_description d = prism::machine_description::detect();
  std::printf("# prism tune: %s, %d core%s, streaming kernel %s; best of %d timings of >= %g s, 1 thread unless said\n",
              d.cpu().c_str(), d.cores(), d.cores() == 1 ? "" : "s", d.simd().c_str(), reps, min_timing);
  // The streaming kernels' own sizes first: the crossovers below time the kernels with them.
  {
    kernel_size_tuner sizes(d, reps, std::max(1, std::min(o.ctx.threads(), d.cores())));
    sizes.run(d);
  }
  // The streaming leaf's thresholds (streaming_preferred): m, n <= 16 real from stream_bytes,
  // the dot kernel ('TN' 32 x 32) from stream_dot_bytes, the 48..64-wide outer leaves
  // (64 x 64 NN double) from stream_far_bytes, complex small leaves from stream_complex_k.
  auto set = [&](prism::machine_key key, const crossover& c) {
    d.set_measured(key, c.value);
    std::printf("# %s: %.6g measured%s\n", prism::to_string(key), c.value,
                c.never ? " (no crossover within the sizes measured: twice the largest)" : "");
  };
  // The far series run until A and B are twice the last-level cache (up to 1 GiB), where
  // the leaf comes from memory as a long product's leaves do; a kernel that has not won
  // there does not win beyond, so "never" is kept as never: 1e18 bytes, no leaf that size.
  const double llc = double(d.last_level_bytes());
  auto far_k = [&](int m, int n) {
    std::int64_t k = 1 << 12;
    while (double(m + n) * double(k) * 8 < std::min(2 * llc, 1024.0 * (1 << 20))) k *= 2;
    return k;
  };
  auto set_far = [&](prism::machine_key key, crossover c) {
    if (!c.never) return set(key, c);
    d.set_measured(key, 1e18);
    std::printf("# %s: 1e18 measured (never: the streaming leaf did not win up to twice the last-level cache)\n",
                prism::to_string(key));
  };
  set(prism::machine_key::stream_bytes,
      streaming_crossover<double>("stream_bytes", reps, 8, 8, 'N', 'N', 1 << 10, 1 << 20, false));
  set_far(prism::machine_key::stream_dot_bytes,
          streaming_crossover<double>("stream_dot_bytes", reps, 32, 32, 'T', 'N', 1 << 12, far_k(32, 32), false));
  set_far(prism::machine_key::stream_far_bytes,
          streaming_crossover<double>("stream_far_bytes", reps, 64, 64, 'N', 'N', 1 << 11, far_k(64, 64), false));
  set(prism::machine_key::stream_complex_k,
      streaming_crossover<std::complex<double>>("stream_complex_k", reps, 8, 8, 'N', 'N', 16, 2048, true));
  // The streaming rank-k leaf's largest n of each type, triangle and form (streaming_rank_k_preferred),
  // measured as the first use measures them (lib/leaf/first_use.hpp), with no budget to cut
  // a series short.
  // Each of the R runs decides a limit; the median of those decided is kept (the runs differ
  // by a step of n now and then on a noisy machine).
  for (prism::scalar_type t : all_types) {
    std::map<prism::machine_key, std::vector<double>> limits;
    try {
      for (int rep = 0; rep < reps; ++rep) {
        const prism::detail::first_use_result r = prism::detail::measure_rank_k_first_use(d, t, 60.0);
        std::istringstream lines(r.text);
        for (std::string line; std::getline(lines, line);) std::printf("#   %s\n", line.c_str());
        for (const auto& [key, v] : r.values) limits[key].push_back(v);
      }
    } catch (const std::exception& e) {  // a leaf library without this type's ?syrk / ?herk
      std::printf("# rank-k %c: not measured (%s)\n", char(t), e.what());
    }
    for (prism::machine_key key : prism::detail::first_use_rank_k_keys(t)) {
      std::vector<double>& v = limits[key];
      if (v.empty()) {
        std::printf("# %s: left to the model (%.0f): undecided\n", prism::to_string(key), d.value(key));
        continue;
      }
      std::sort(v.begin(), v.end());
      set(key, {v[v.size() / 2], false});
    }
  }
  // The small-call threshold: prism's recursion on all threads against one leaf call, on
  // cubes n = 24 .. 256, multiples of 8 about 1.25 x apart (24, 32, 40, 48, 56, 72, 88, 112,
  // 144, 176, 224, 256): small_flops = 2 n^3 at the crossover.
  {
    prism::context rec = o.ctx, one = o.ctx;
    rec.set_description(d).set_small_flops(0);
    one.set_description(d).set_small_flops(std::numeric_limits<double>::max());
    std::vector<double> sizes, ratios;
    std::vector<int> cubes;
    for (double x = 24; cubes.empty() || cubes.back() < 256; x *= 1.25)
      cubes.push_back(std::min(256, std::max(cubes.empty() ? 24 : cubes.back() + 8, int(std::lround(x / 8)) * 8)));
    for (const int n : cubes) {
      auto A = random_matrix<double>(std::size_t(n) * n, 1), B = random_matrix<double>(std::size_t(n) * n, 2);
      std::vector<double> C(std::size_t(n) * n);
      auto call = [&](const prism::context& c) {
        return time_calls(reps, [&] {
                 prism::gemm<double>('N', 'N', n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, C.data(), n, c);
               }).seconds;
      };
      const double t_one = call(one), t_rec = call(rec);
      sizes.push_back(2.0 * n * n * n);
      ratios.push_back(t_one / t_rec);
      std::printf("#   small_flops       %3d^3 d: recursion on %d threads / one leaf %.2f\n", n, rec.threads(),
                  ratios.back());
      std::fflush(stdout);
    }
    // A tie counts for the single leaf: it keeps the other threads free.
    set(prism::machine_key::small_flops, find_crossover(sizes, ratios, 1.0));
  }
  // The thread level's reduction: a k cut over every thread of s x s x 8 leaves, its partial
  // C blocks added on all threads against on one (parallel_reduce_bytes 64 against never),
  // s x s doubles from 2 KiB to 8 MiB (each step x sqrt 2): the same leaves both ways, so the
  // ratio is the reduction's. parallel_reduce_bytes = the C bytes from which all threads win.
  if (const int threads = std::min(o.ctx.threads(), d.cores()); threads >= 2) {
    prism::machine_description always = d, never = d;
    always.set_measured(prism::machine_key::parallel_reduce_bytes, 64);
    never.set_measured(prism::machine_key::parallel_reduce_bytes, 1e18);
    prism::context par = o.ctx, one = o.ctx;
    par.set_description(always);
    one.set_description(never);
    std::vector<double> sizes, ratios;
    for (double x = 16; x <= 1024 * 1.01; x *= std::sqrt(2.0)) {
      const int s = int(std::lround(x)), part = 8;
      std::string text = "prism-plan 2\nproblem d NN ";  // appended piece by piece (GCC 12 -Wrestrict false positive)
      for (const int x : {s, s, part * threads}) text += std::to_string(x) + " ";
      text.back() = '\n';
      text += "threads ";
      text += std::to_string(threads);
      text += "\nbfs k thread";
      for (int t = 0; t < threads; ++t) (text += ' ') += std::to_string(part) + "@1t";
      for (int t = 0; t < threads; ++t) text += "\n  leaf openblas";
      const prism::plan p = prism::plan::parse(text + "\n");
      auto A = random_matrix<double>(std::size_t(s) * part * threads, 1);
      auto B = random_matrix<double>(std::size_t(s) * part * threads, 2);
      std::vector<double> C(std::size_t(s) * s);
      auto call = [&](const prism::context& c) {
        return time_calls(reps, [&] {
                 prism::execute<double>(p, 1.0, A.data(), s, B.data(), part * threads, 0.0, C.data(), s, c);
               }).seconds;
      };
      const double t_one = call(one), t_par = call(par);
      sizes.push_back(8.0 * s * s);
      ratios.push_back(t_one / t_par);
      std::printf("#   parallel_reduce   %4d x %4d x %d d, %7.1f KiB of C: reduction on %d threads / on one %.2f\n", s,
                  s, part * threads, sizes.back() / 1024, threads, ratios.back());
      std::fflush(stdout);
    }
    // A tie counts for one thread: the others stay free.
    set(prism::machine_key::parallel_reduce_bytes, find_crossover(sizes, ratios, 1.0));
  } else {
    std::printf("# parallel_reduce_bytes: left to the model (%.0f; one thread here, nothing to share)\n",
                d.value(prism::machine_key::parallel_reduce_bytes));
  }
  // Which library runs large double BLAS leaves of each class (kept for this CPU, as a
  // first use would; the 1024^3 leaf below then runs on the square class's).
  blas_leaves_first_use(d, true);
  // The drop-in's rate model: prism's rate on a square as a share of threads x its leaf rate;
  // and the leaf rate itself, the rank planner's flop rate per thread.
  {
    const int n = 1024;
    auto A = random_matrix<double>(std::size_t(n) * n, 1), B = random_matrix<double>(std::size_t(n) * n, 2);
    std::vector<double> C(std::size_t(n) * n);
    prism::context all = o.ctx;
    all.set_description(d);
    const auto& leaf = prism::detail::leaf_library(prism::detail::choose_blas_leaf(d, prism::scalar_type::d, n, n, n));
    const double t_leaf = time_calls(reps, [&] {
                            leaf.gemm<double>('N', 'N', n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, C.data(), n);
                          }).seconds;
    const double t_all = time_calls(reps, [&] {
                           prism::gemm<double>('N', 'N', n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, C.data(), n, all);
                         }).seconds;
    const int threads = std::min(all.threads(), d.cores());
    const double efficiency = std::clamp(t_leaf / t_all / threads, 0.05, 1.0);
    std::printf("#   dropin_efficiency %d^3 d: prism on %d threads %.1f GF/s, leaf %.1f GF/s on 1\n", n, threads,
                2.0 * n * n * n / t_all * 1e-9, 2.0 * n * n * n / t_leaf * 1e-9);
    set(prism::machine_key::dropin_efficiency, {efficiency, false});
    // The rank planner's flop rate per thread: the same one-thread leaf.
    set(prism::machine_key::rank_flops_per_thread, {std::round(2.0 * n * n * n / t_leaf / 1e6) * 1e6, false});
  }
  prism_app::tune_gpus(d, reps);
  std::printf("# rank_bandwidth: left to the model (%.4g B/s; measuring it needs MPI ranks)\n",
              d.value(prism::machine_key::rank_bandwidth));
  std::printf("# dropin_model_flops: left to the model (%.0f)\n", d.value(prism::machine_key::dropin_model_flops));
  d.set_source("file " + path);
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    out << d.to_string();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot write " + path);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write " + path);
  }
  std::printf("# wrote %s in %.0f s:\n%s", path.c_str(), seconds_since(t0), d.to_string().c_str());
  // Timings taken beside other work are slow and uneven: said, so the values are not kept
  // unknowingly (tune measures one thread at a time, mostly, so 0.25 of a core is noise).
  if (const double others = others_busy(busy0, seconds_since(t0)); others > 0.25)
    std::printf("# note: other processes kept %.2f of %d core%s busy while tune measured; run prism tune "
                "again on an idle machine for values that hold\n", others, busy0.cpus, busy0.cpus == 1 ? "" : "s");
  return 0;
}

}  // namespace prism_app
