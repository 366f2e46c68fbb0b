// lib/dropin/dispatch.cpp — routing, logging and statistics of libprism_blas (dispatch.hpp).
#include "dispatch.hpp"

#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/gemm.hpp>
#include <prism/syrk.hpp>
#include <prism/version.hpp>

#include "../leaf/backend/blas_library.hpp"
#include "../environment/environment.hpp"
#include "../leaf/dispatch.hpp"
#include "../leaf/first_use.hpp"
#include "../leaf/kernels/streaming.hpp"
#include "../recursive/local_planner.hpp"
#include "../simd/simd.hpp"
#include "../runtime/runtime.hpp"
#include "gpu_route.hpp"
#include "../machine/wisdom.hpp"
#include "rate_model.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace prism::dropin {

namespace {

// auto routing: prism takes a call whose inner dimension is at least this many times its
// largest output dimension (k >= 4 max(m, n)). Threaded BLAS libraries split only m and n,
// so on such shapes they leave cores idle and prism's k cut wins (1.1-5.3x on the README's
// tall-skinny shapes). Measured in one run here (double, prism / threaded OpenBLAS):
// k = 2 max(m, n): 0.97-1.02 (128x128x256 ... 1024x1024x2048); k = 4 max(m, n): 1.01-1.06;
// squares and wide shapes 0.97-1.00. Below 4 the gain is noise, so the call stays with the
// user's own BLAS. docs/dropin.md.
// A model default, not a machine size: a ratio of the call's own dimensions, where a
// threaded BLAS that splits only m and n leaves cores idle on any host. What is
// host-dependent (whether prism's leaves beat the backend's) the rate model measures on
// the machine itself, and the machine description's dropin_* values feed it.
constexpr double k_dominance = 4.0;

// Calls that are not k-dominant reach the rate model (rate_model.hpp) only from the machine
// description's dropin_model_flops on: below it prism's fixed costs (plan lookup, task
// start, a second thread) weigh against any kernel advantage. The model's value, scaled to
// AVX-512, is 2 x 256^3 = 33.6 Mflop, a few hundred microseconds: on the
// cubes of bench/results/full-2026-11-22.md, with the same kernels on both sides, prism's
// C++ API is 0.97x threaded OpenBLAS at 256^3 and 0.96-1.04x from 128^3 up, but its ratio
// varies below (0.85-1.43x at 16^3-96^3), so the floor keeps a factor of 8 above where the
// fixed costs still show.

using route = detail::route_choice;  // PRISM_BLAS_ROUTE

// Everything the environment says, read once at the first call.
struct settings {
  int verbose = 0;          // PRISM_VERBOSE: 0 quiet, 1 one line per call, 2 plus the whole plan
  bool stats = false;       // PRISM_STATS: summary at exit
  route mode = route::automatic;  // PRISM_BLAS_ROUTE
  const context* ctx = nullptr;   // null when the PRISM_* context settings are malformed
  int threads = 0;                // ctx->threads(), kept for the exit summary
  leaf_backend leaf = leaf_backend::automatic;  // ctx->leaf(), likewise
  double small_flops = 0;         // ctx->small_flops()
  bool fast = false;              // auto routing, nothing to log: small calls skip the rest
};

// Every PRISM_* value the drop-in cannot use gets one line of one form, when the settings
// are first read: "prism: NAME: what is wrong; what happens next". Nothing is clamped or
// guessed: a value out of range is reported like any other bad value. lib/environment checks
// the drop-in's own values (and says their lines); the context's are checked here.
void bad_setting(const std::string& problem, const std::string& next) {
  std::fprintf(stderr, "prism: %s; %s\n", problem.c_str(), next.c_str());
}

settings read_settings() {
  settings s;
  const detail::environment& env = detail::process_environment();
  s.verbose = env.verbose.get();
  s.stats = env.stats.get();
  s.mode = env.blas_route.get();
  try {
    const context& c = default_context();
    (void)c.machine();  // PRISM_TOPOLOGY (read on first use): a bad one is reported here, like the rest
    s.ctx = &c;
    s.threads = s.ctx->threads();
    s.leaf = s.ctx->leaf();
    s.small_flops = s.ctx->small_flops();
    if (s.verbose > 0) std::fprintf(stderr, "prism: %s\n", s.ctx->description().summary().c_str());
  } catch (const std::exception& e) {
    // Say exactly where the calls go: the backend when there is one (opening it now prints
    // its own line if it cannot be had), else prism with its default settings.
    const backend* b = backend::get();
    bad_setting(e.what(), b != nullptr ? "recursion off, every call goes to the backend (" + b->path() + ")"
                                       : std::string("recursion off and no backend: prism computes every call with "
                                                     "its default settings"));
    s.ctx = nullptr;
  }
  s.fast = s.ctx != nullptr && s.mode == route::automatic && s.verbose == 0 && !s.stats;
  return s;
}

// fork(): a child of a process that has entered prism's own path (its threads may be
// inside a call, or still leaving oneTBB's arena after one, or reading the settings under
// their lock) cannot run prism: the child has none of those threads, and oneTBB and the
// lock would wait for them. It sends every later call to the backend BLAS, which runs on
// the calling thread. A child of a process that never entered prism (only the fast paths)
// runs as its parent did.
std::atomic<bool> entered{false};
std::atomic<bool> forked_child{false};
const bool fork_handler = [] {
  pthread_atfork(nullptr, nullptr, [] { forked_child.store(entered.load(std::memory_order_relaxed), std::memory_order_relaxed); });
  return true;
}();

// Namespace-scope storage (not function-local statics): the exit summary below reads
// them, and objects built on first use would be destroyed before it runs.
std::once_flag settings_once;
settings the_settings;
std::atomic<bool> settings_ready{false};

const settings& config() {
  // The common case is one acquire load; call_once only until the settings exist.
  if (settings_ready.load(std::memory_order_acquire)) [[likely]]
    return the_settings;
  // Entering prism's path is the settings' first reading, which every call that is not a
  // fast path makes; marked before the lock (seq_cst: on any CPU), so a child forked while
  // a thread holds it uses the backend.
  entered.store(true);
  std::call_once(settings_once, [] {
    the_settings = read_settings();
    settings_ready.store(true, std::memory_order_release);
  });
  return the_settings;
}

// The context calls run with: the default context, or, when the PRISM_* settings are
// malformed and there is no backend either, one built from defaults (never from the env).
const context& call_context(const settings& s) {
  if (s.ctx != nullptr) return *s.ctx;
  static const context& defaults = *new context;  // never destroyed: calls may come at exit (docs/dropin.md)
  return defaults;
}

// ---- statistics (PRISM_STATS) ----------------------------------------------------------

constexpr int n_paths = 4, n_types = 4;
struct counters {
  std::atomic<std::uint64_t> calls[n_paths][n_types] = {};
  std::atomic<double> flops[n_paths][n_types] = {};
  std::atomic<std::uint64_t> nanoseconds[n_paths][n_types] = {};
  std::atomic<std::uint64_t> invalid{0};
};
counters the_counters;  // constant-initialised, so it outlives stats_at_exit
counters the_rank_k_counters;  // ?syrk / ?herk calls (their invalid count stays in the_counters)
}  // namespace

fast_path_state fast_state;

namespace {
counters& stats() { return the_counters; }

int type_index(scalar_type t) {
  return t == scalar_type::s ? 0 : t == scalar_type::d ? 1 : t == scalar_type::c ? 2 : 3;
}
const char* path_name(path p) {
  return p == path::trivial ? "trivial" : p == path::backend ? "backend" : p == path::gpu ? "gpu" : "recursion";
}

// What one probe measured for one element type, and its verdict, kept for the process.
struct probe_result {
  rates r;
  int threads = 0;          // prism's threads in the model (its budget, at most the cores)
  bool prism_faster = false;
  std::string text;         // the numbers, for PRISM_VERBOSE and PRISM_STATS
};

// One slot per element type (s, d, c, z); a slot is written once, under its once_flag.
std::once_flag probe_once[4];
std::atomic<const probe_result*> probes[4] = {};

// The backend's kernels against prism's leaves (judge_backend, below), judged once; the
// summary printer reads it at exit.
struct kernel_verdict {
  bool weaker = false;
  std::string text;  // e.g. "the backend runs Prescott (SSE), prism's leaves SkylakeX (AVX-512)"
};
std::once_flag verdict_once;
kernel_verdict& the_verdict = *new kernel_verdict;  // never destroyed: calls may come at exit (docs/dropin.md)
std::atomic<bool> verdict_ready{false};

// Prints the summary when the library is unloaded: at process exit (it is linked -z nodelete,
// so a dlclose leaves it loaded).
struct stats_printer {
  ~stats_printer() {
    if (!settings_ready.load(std::memory_order_acquire) || !the_settings.stats) return;
    const counters& c = stats();
    const backend* b = backend::loaded();  // never opens anything at exit
    std::fprintf(stderr, "prism: PRISM_STATS summary, pid %ld, libprism_blas%s %s\n", long(::getpid()),
                 PRISM_BLAS_ILP64 ? "64 (ILP64)" : " (LP64)", version());
    if (the_settings.ctx != nullptr)
      std::fprintf(stderr, "prism:   backend: %s (%s); threads: %d\n", b ? b->path().c_str() : "none",
                   b ? b->origin() : "-", the_settings.threads);
    else
      std::fprintf(stderr, "prism:   backend: %s (%s); threads: default (malformed PRISM_* settings ignored)\n",
                   b ? b->path().c_str() : "none", b ? b->origin() : "-");
    if (const std::string g = gpu_status_line(); !g.empty()) std::fprintf(stderr, "prism:   %s\n", g.c_str());
    std::fprintf(stderr, "prism:   %-10s %-11s %12s %14s %11s %9s\n", "path", "routine", "calls", "Gflop",
                 "seconds", "GF/s");
    const char* const gemms[] = {"sgemm", "dgemm", "cgemm", "zgemm"};
    const char* const rank_ks[] = {"ssyrk", "dsyrk", "csyrk/cherk", "zsyrk/zherk"};
    for (int p = 0; p < n_paths; ++p)
      for (int t = 0; t < n_types; ++t) {
        const std::uint64_t n = c.calls[p][t].load();
        if (n == 0) continue;
        const double gf = c.flops[p][t].load() * 1e-9, s = double(c.nanoseconds[p][t].load()) * 1e-9;
        std::fprintf(stderr, "prism:   %-10s %-11s %12llu %14.3f %11.4f %9.2f\n", path_name(path(p)), gemms[t],
                     static_cast<unsigned long long>(n), gf, s, s > 0 ? gf / s : 0.0);
      }
    const counters& r = the_rank_k_counters;  // ?syrk / ?herk: same columns, flops n(n+1)k (x4 complex)
    for (int p = 0; p < n_paths; ++p)
      for (int t = 0; t < n_types; ++t) {
        const std::uint64_t n = r.calls[p][t].load();
        if (n == 0) continue;
        const double gf = r.flops[p][t].load() * 1e-9, s = double(r.nanoseconds[p][t].load()) * 1e-9;
        std::fprintf(stderr, "prism:   %-10s %-11s %12llu %14.3f %11.4f %9.2f\n", path_name(path(p)), rank_ks[t],
                     static_cast<unsigned long long>(n), gf, s, s > 0 ? gf / s : 0.0);
      }
    bool recursed = false;
    for (int t = 0; t < n_types; ++t)
      recursed = recursed || c.calls[int(path::recursion)][t].load() > 0 || r.calls[int(path::recursion)][t].load() > 0;
    if (recursed) {  // the leaf libraries the recursion resolved (nothing is loaded here)
      for (leaf_backend lb : {leaf_backend::openblas, leaf_backend::blis})
        if (const detail::blas_library* leaf = detail::resolved_leaf_library(lb))
          std::fprintf(stderr, "prism:   leaves (%s): %s (%s%s%s)\n", to_string(lb), leaf->path().c_str(),
                       leaf->shared_with_host() ? "shared with the host, pinned to 1 thread before prism"
                                                : "private copy, 1 thread",
                       leaf->kernels() ? ", kernels " : "", leaf->kernels() ? leaf->kernels()->running.c_str() : "");
      if (detail::streaming_leaf_ran())
        std::fprintf(stderr, "prism:   leaves (streaming): prism's own kernel (%s)\n", detail::simd_target());
    }
    if (verdict_ready.load(std::memory_order_acquire))
      std::fprintf(stderr, "prism:   backend kernels: %s\n", the_verdict.text.c_str());
    const char types_rm[] = "sdcz";
    for (int t = 0; t < 4; ++t)
      if (const probe_result* r = probes[t].load(std::memory_order_acquire))
        std::fprintf(stderr, "prism:   rate model (%c): %s -> %s\n", types_rm[t], r->text.c_str(),
                     r->prism_faster ? "prism takes squares and wide products" : "they go to the backend");
    std::fprintf(stderr, "prism:   invalid calls (xerbla_ / cblas_xerbla): %llu\n",
                 static_cast<unsigned long long>(c.invalid.load()));
  }
} stats_at_exit;

// ---- routing ---------------------------------------------------------------------------

struct decision {
  path where;
  const char* why;
  const char* detail = nullptr;  // the rate model's numbers, when it decided
};

// ---- the rate model's probe (rate_model.hpp) --------------------------------------------

// Seconds of the best of `reps` calls of f.
template <class F>
double best_seconds(int reps, F&& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// Times prism's leaf library (one thread) and the backend (its own threads) on one cube
// of type T: 320^3 real (65.5 Mflop), 224^3 complex (90 Mflop), a millisecond or two each
// here. Two rounds of warm-up + 3 timings each, alternating, so that a busy moment of the
// machine hits both; the best timing of each counts.
template <scalar T>
probe_result run_probe(const settings& s, const backend& b) {
  constexpr std::int64_t n = is_complex(scalar_type_of<T>()) ? 224 : 320;
  const leaf_backend lb = detail::choose_leaf(s.ctx->description(), s.ctx->leaf(), scalar_type_of<T>(), n, n, n);
  const detail::blas_library& leaf = detail::leaf_library(lb);
  std::vector<T> A(std::size_t(n * n), T(0.5)), B(std::size_t(n * n), T(0.25)), C(std::size_t(n * n));
  auto leaf_call = [&] { leaf.gemm<T>('N', 'N', n, n, n, T(1), A.data(), n, B.data(), n, T(0), C.data(), n); };
  auto backend_call = [&] {
    b.gemm<T>('N', 'N', blas_int(n), blas_int(n), blas_int(n), T(1), A.data(), blas_int(n), B.data(), blas_int(n),
              T(0), C.data(), blas_int(n));
  };
  double t_leaf = 1e300, t_backend = 1e300;
  for (int round = 0; round < 2; ++round) {
    leaf_call();
    t_leaf = std::min(t_leaf, best_seconds(3, leaf_call));
    backend_call();
    t_backend = std::min(t_backend, best_seconds(3, backend_call));
  }
  const double flops = gemm_flops(scalar_type_of<T>(), n, n, n);
  const int cores = std::max(1, int(std::thread::hardware_concurrency()));
  probe_result p;
  p.threads = std::min(s.ctx->threads(), cores);
  p.r.leaf_gflops = flops / t_leaf * 1e-9;
  p.r.backend_gflops = flops / t_backend * 1e-9;
  const int bt = b.threads();
  p.r.backend_threads = bt > 0 ? std::min(bt, cores) : p.threads;  // unknown: assume it uses prism's
  p.r.efficiency = s.ctx->description().value(machine_key::dropin_efficiency);
  p.prism_faster = prism_faster(p.r, p.threads);
  const std::string leaf_kernels = leaf.kernel_name(), backend_kernels = b.kernel_name();
  char line[512];
  std::snprintf(line, sizeof line,
                "%c %lld^3 probe: leaves %.1f GF/s (%s%s%s, 1 thread) x %d threads x %.2f = %.1f GF/s %s %.2f x "
                "backend %.1f GF/s (%d thread%s%s%s%s)",
                char(scalar_type_of<T>()), static_cast<long long>(n), p.r.leaf_gflops, to_string(lb),
                leaf_kernels.empty() ? "" : " ", leaf_kernels.c_str(), p.threads, p.r.efficiency,
                prism_rate(p.r.leaf_gflops, p.threads, p.r.efficiency), p.prism_faster ? ">=" : "<", take_margin,
                backend_rate(p.r.backend_gflops, p.r.backend_threads, p.threads), p.r.backend_threads,
                p.r.backend_threads == 1 ? "" : "s", bt > 0 ? "" : ", assumed", backend_kernels.empty() ? "" : ", ",
                backend_kernels.c_str());
  p.text = line;
  if (p.r.backend_threads != p.threads) {  // say that the backend's rate was scaled
    std::snprintf(line, sizeof line, "; backend measured %.1f GF/s on %d thread%s, scaled to %d", p.r.backend_gflops,
                  p.r.backend_threads, p.r.backend_threads == 1 ? "" : "s", p.threads);
    p.text += line;
  }
  return p;
}

// The probe of type t, run once per process by the first call that needs it (concurrent
// first callers wait for it); nullptr if it failed (a leaf library that cannot load).
const probe_result* probe(const settings& s, const backend& b, scalar_type t) {
  const int i = type_index(t);
  std::call_once(probe_once[i], [&] {
    try {
      probe_result r;
      switch (t) {
        case scalar_type::s: r = run_probe<float>(s, b); break;
        case scalar_type::d: r = run_probe<double>(s, b); break;
        case scalar_type::c: r = run_probe<std::complex<float>>(s, b); break;
        case scalar_type::z: r = run_probe<std::complex<double>>(s, b); break;
      }
      auto* kept = new probe_result(std::move(r));  // kept for the process (PRISM_STATS at exit)
      probes[i].store(kept, std::memory_order_release);
      if (s.verbose > 0) std::fprintf(stderr, "prism: rate model: %s\n", kept->text.c_str());
    } catch (const std::exception& e) {
      if (s.verbose > 0) std::fprintf(stderr, "prism: rate model: probe failed (%s); forwarding\n", e.what());
    }
  });
  return probes[i].load(std::memory_order_acquire);
}

// ---- the backend's kernels against prism's leaves ----------------------------------------

// Whether the backend runs a weaker kernel set than prism's leaves would (leaf_kernels.hpp:
// kernel_class), judged once per process. A call is never to be slower through the drop-in
// than through the caller's BLAS; a backend on weaker kernels (Debian's OpenBLAS 0.3.21 on a
// CPU newer than it runs Prescott's SSE3 kernels; OPENBLAS_CORETYPE=Haswell on an AVX-512
// CPU; BLIS's generic C kernels) loses to prism's leaves on every shape, so prism takes
// every call: one leaf on the caller's thread for a small one, its threaded path otherwise.
// (kernel_verdict and its storage are declared above stats_printer, which reads them at exit.)

const char* class_name(int c) {
  return c == 4 ? "AVX-512" : c == 3 ? "AVX2" : c == 2 ? "AVX" : c == 1 ? "SSE" : "no SIMD kernels";
}

// The set prism's OpenBLAS leaf runs or would run here: the loaded copy's, else the probe's
// verdict kept for this CPU, else the features' first. Classes 4 and 3 are not ordered by
// features alone: when they decide and no verdict is kept, the leaf is loaded (its probe
// says which wins here, once per machine), but only for a long call (`may_probe`: modelled
// at detail::first_use_long_seconds or more, as the first-use measurements); for a shorter
// one there is no verdict yet (nullopt) and the call is routed as before.
std::optional<kernel_verdict> judge_backend(const backend& b, bool may_probe) {
  const std::string& hook = detail::process_environment().test_backend_kernels;
  const std::string theirs = hook.empty() ? b.kernel_name() : hook;
  const int their_class = detail::kernel_class(theirs);
  kernel_verdict v;
  if (their_class == 0 && theirs != "generic") {  // unknown (reference BLAS, MKL, a newer name)
    v.text = theirs.empty() ? "the backend does not say which kernels it runs" : "the backend runs " + theirs + ", which prism does not rank";
    return v;
  }
  const auto candidates = detail::openblas_core_candidates(detail::this_cpu());
  if (candidates.empty()) return v;
  std::string ours = candidates.front();
  if (const auto kept = detail::wisdom::process().find("openblas_kernels")) ours = *kept;
  int our_class = detail::kernel_class(ours);
  if (our_class == 4 && their_class == 3) {
    if (!detail::wide_vectors_measured()) {
      if (!may_probe) return std::nullopt;
      try {
        ours = detail::leaf_library(leaf_backend::openblas).kernel_name();
      } catch (const std::exception&) {
      }
    }
    if (detail::wide_vectors_measured() && !detail::wide_vectors_first()) our_class = 3;  // 256 bits as fast here
  }
  v.weaker = their_class < our_class;
  v.text = "the backend runs " + theirs + " (" + class_name(their_class) + "), prism's leaves " + ours + " (" +
           class_name(detail::kernel_class(ours)) + ")" +
           (v.weaker ? ": weaker, prism takes every call" : ": not weaker, routing by shape and rate");
  return v;
}

// The verdict, judged once and kept; until a judgement is possible (see judge_backend), a
// call is routed as before, and the fast path waits (verdict_ready).
std::mutex verdict_mutex;
const kernel_verdict& verdict(const backend& b, bool may_probe) {
  if (verdict_ready.load(std::memory_order_acquire)) [[likely]]
    return the_verdict;
  static const kernel_verdict& undecided = *new kernel_verdict{false, "not judged yet"};  // never destroyed: calls may come at exit (docs/dropin.md)
  const std::lock_guard<std::mutex> lock(verdict_mutex);
  if (verdict_ready.load(std::memory_order_relaxed)) return the_verdict;
  std::optional<kernel_verdict> v = judge_backend(b, may_probe);
  if (!v) return undecided;
  the_verdict = std::move(*v);
  verdict_ready.store(true, std::memory_order_release);
  return the_verdict;
}

// True for a call long enough to pay for a kernel probe: its modelled time on prism's
// threads (detail::call_seconds, of `flops` and operands of `bytes`) at least
// first_use_long_seconds.
bool long_call(const settings& s, double flops, double bytes) {
  return detail::call_seconds(s.ctx->description(), flops, bytes, s.threads) >= detail::first_use_long_seconds;
}

std::once_flag no_gpu_plan_warning;  // gpu_plan_fits's line, said once

// Whether p has a plan on ctx's devices (made now, before C is touched, and cached for the
// call); when not, says so once: such calls run on the host.
bool gpu_plan_fits(const problem& p, const context& ctx) noexcept {
  try {
    (void)detail::runtime_of(ctx).cached_plan(p, [&] { return std::make_shared<const plan>(detail::make_local_plan(p, ctx)); });
    return true;
  } catch (const std::exception& e) {
    try {
      std::call_once(no_gpu_plan_warning, [&] {
        std::fprintf(stderr, "prism: WARNING: %s; calls with no GPU plan run on the host (PRISM_BLAS_ROUTE=gpu)\n", e.what());
      });
    } catch (...) {
    }
    return false;
  }
}

// The GPU route first (gpu_route.hpp): true, with d set, when it decides the call.
bool gpu_decides(const settings& s, const problem& p, decision& d) {
  const gpu_verdict g = gpu_route(s.mode, s.ctx, p, s.verbose > 0);
  if (g.to == gpu_verdict::where::usual) return false;
  d = {g.to == gpu_verdict::where::gpu ? path::gpu : path::recursion, g.why, g.detail};
  // Forced there, a call no GPU plan fits (the auto rule planned it already) goes to the host.
  if (d.where == path::gpu && s.mode == route::gpu && !gpu_plan_fits(p, gpu_context(s.mode, *s.ctx)))
    d = {path::recursion, "PRISM_BLAS_ROUTE=gpu, but no GPU plan fits the call"};
  return true;
}

// A beta that is not finite: the call is prism's (finite_scalar, dispatch.hpp).
constexpr const char* beta_rule = "beta not finite: prism applies it to C as reference BLAS does";

decision choose(const settings& s, const backend* b, const problem& p, blas_int lda, blas_int ldb, blas_int ldc,
                bool finite_beta) {
  // prism's leaves are 32-bit BLAS calls and a leading dimension cannot be cut.
  if (std::max({p.m, p.n, p.k, std::int64_t(lda), std::int64_t(ldb), std::int64_t(ldc)}) > INT_MAX)
    return {path::backend, "a size or leading dimension above 2^31-1"};
  if (decision g{path::gpu, ""}; gpu_decides(s, p, g)) return g;
  // Without a backend prism computes everything (a small call is one leaf on the caller).
  if (b == nullptr)
    return {path::recursion, s.ctx ? "no backend BLAS" : "no backend BLAS; PRISM_* settings ignored (malformed)"};
  if (s.ctx == nullptr) return {path::backend, "prism disabled by a bad PRISM_* setting"};
  if (s.mode == route::prism) return {path::recursion, "PRISM_BLAS_ROUTE=prism"};
  if (s.mode == route::backend) return {path::backend, "PRISM_BLAS_ROUTE=backend"};
  if (!finite_beta) return {path::recursion, beta_rule};
  // A call the rules below would forward goes to prism instead when the backend's kernels
  // are weaker than prism's leaves (judged once, at the first call that would be forwarded).
  const auto long_one = [&] {
    return long_call(s, p.flops(), double(p.m + p.n) * double(p.k) * double(element_size(p.type)));
  };
  const auto forward = [&](decision d) -> decision {
    if (const kernel_verdict& v = verdict(*b, long_one()); v.weaker)
      return {path::recursion, "weaker backend kernels", v.text.c_str()};
    return d;
  };
  if (p.flops() < s.ctx->small_flops()) return forward({path::backend, "small (below PRISM_SMALL_FLOPS)"});
  if (s.ctx->threads() < 2) return forward({path::backend, "one thread (PRISM_NUM_THREADS, else the cores prism may use)"});
  if (double(p.k) >= k_dominance * double(std::max(p.m, p.n))) return {path::recursion, "k-dominant"};
  // Squares and wide products: the backend parallelises them as well as prism does, so the
  // faster kernels decide (rate_model.hpp).
  if (p.flops() < s.ctx->description().value(machine_key::dropin_model_flops))
    return forward({path::backend, "not k-dominant (k < 4 max(m, n)); below the rate model's dropin_model_flops"});
  if (verdict(*b, long_one()).weaker) return forward({path::backend, ""});  // no rate probe needed
  const probe_result* r = probe(s, *b, p.type);
  if (r == nullptr) return {path::backend, "not k-dominant (k < 4 max(m, n)); rate probe failed"};
  if (r->prism_faster) return {path::recursion, "not k-dominant, prism's leaves faster", r->text.c_str()};
  return {path::backend, "not k-dominant (k < 4 max(m, n)); backend as fast", r->text.c_str()};
}

// The plan's top step in one line, e.g. "bfs k thread 2097152@1t 2097152@1t; depth 9, 512 leaves,
// 32768 B extra" (on two NUMA domains "bfs k numa 2097152@1d,1t ..."). PRISM_VERBOSE=2 prints
// the whole text form instead.
std::string plan_summary(const plan& pl, int verbose) {
  const std::string text = pl.to_string();
  if (verbose >= 2) return "\n" + text;
  std::string top;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    const auto header = [&](const char* key) { return line.rfind(key, 0) == 0; };  // plan::to_string's
    if (line.empty() || line[0] == '#' || header("prism-plan") || header("problem") || header("threads") ||
        header("domains") || header("ranks") || header("devices"))
      continue;
    line = line.substr(0, line.find('#'));
    while (!line.empty() && line.back() == ' ') line.pop_back();
    top = line;
    break;
  }
  return top + "; depth " + std::to_string(pl.depth()) + ", " + std::to_string(pl.leaves()) + " leaves, " +
         std::to_string(pl.extra_bytes()) + " B extra";
}

template <scalar T>
void run_backend(const settings& s, const backend* b, char ta, char tb, blas_int m, blas_int n, blas_int k,
                 const T& alpha, const T* A, blas_int lda, const T* B, blas_int ldb, const T& beta, T* C,
                 blas_int ldc) {
  if (b != nullptr) {
    b->gemm<T>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  // Only a call with a size above 2^31-1 gets here without a backend: prism's prologue
  // computes it if the planner can cut it, or throws (a leading dimension that large).
  prism::gemm<T>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, call_context(s));
}

// One warning per process, whichever type's call hits it first.
std::once_flag leaf_warning;
// One publication of the fast path's state, whichever type's first call gets there.
std::once_flag fast_publication;

// Publishes the fast path's state once routing is `auto`, nothing is logged and a backend
// exists (the first full dispatch of a gemm or a rank-k update does it).
void publish_fast_path(const settings& s, const backend* b) {
  // Only once the backend's kernels are judged, and not weaker: the fast path never asks again.
  if (s.fast && b != nullptr && !fast_state.ready.load(std::memory_order_acquire) && !verdict(*b, false).weaker &&
      verdict_ready.load(std::memory_order_acquire)) {
    std::call_once(fast_publication, [&] {  // one writer, so concurrent first calls do not race
      fast_state.b = b;
      fast_state.small_flops = s.small_flops;
      fast_state.ready.store(true, std::memory_order_release);
    });
  }
}

[[noreturn]] void fatal(const char* routine, const char* what) {
  std::fprintf(stderr, "prism: FATAL: %s could not be computed: %s. C may be partly updated; "
                       "aborting rather than returning a wrong result.\n", routine, what);
  std::abort();
}


// True when `fn` lives in the executable (not in a shared library).
bool in_executable(const void* fn) {
  Dl_info exe{}, f{};
  const void* phdr = reinterpret_cast<const void*>(::getauxval(AT_PHDR));
  return phdr != nullptr && ::dladdr(phdr, &exe) != 0 && ::dladdr(fn, &f) != 0 && exe.dli_fbase == f.dli_fbase;
}
}  // namespace

cblas_handler cblas_handler_for(int position) noexcept {
  if (cblas_xerbla != nullptr && in_executable(reinterpret_cast<const void*>(cblas_xerbla))) return cblas_handler::own_cblas;
  return position > 3 && xerbla_ != nullptr ? cblas_handler::fortran : cblas_handler::none;
}

void fortran_xerbla(const char* rout, blas_int info) {
  char name[7] = "      ";  // "cblas_dgemm" -> "DGEMM "
  for (int i = 0; i < 6 && rout[6 + i] != '\0'; ++i) name[i] = char(std::toupper(static_cast<unsigned char>(rout[6 + i])));
  xerbla_(name, &info, 6);
}

bool count_invalid() noexcept {
  // A forked child whose parent's thread was reading the settings cannot read them (that
  // thread's locks stay held here): its invalid calls are reported, not counted.
  if (forked_child.load(std::memory_order_relaxed) && !settings_ready.load(std::memory_order_acquire)) return false;
  const settings& s = config();  // reads PRISM_STATS, so a program whose only calls were invalid gets its summary
  stats().invalid.fetch_add(1, std::memory_order_relaxed);
  return s.verbose > 0;
}

void report_invalid(const char* routine, int position, bool cblas, bool row_major,
                    const detail::gemm_arguments& args) noexcept {
  try {  // the message is built only for a rejected call; a failed allocation drops the line
    const invalid_argument e = detail::argument_error(routine, position, cblas, row_major, args);
    std::fprintf(stderr, "prism: %s; C untouched\n", e.what());
  } catch (...) {
  }
}

// The PRISM_STATS counters and the PRISM_VERBOSE line of one finished call.
static void log_call(const settings& s, const call_site& site, const backend* b, const decision& d, const problem& p,
              const std::string& plan_text, std::chrono::steady_clock::time_point start) {
  const double ns = double(std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - start).count());
  const double flops = d.where == path::trivial ? 0.0 : p.flops();
  if (s.stats) {
    counters& c = stats();
    const int pi = int(d.where), ti = type_index(p.type);
    c.calls[pi][ti].fetch_add(1, std::memory_order_relaxed);
    c.flops[pi][ti].fetch_add(flops, std::memory_order_relaxed);
    c.nanoseconds[pi][ti].fetch_add(std::uint64_t(ns), std::memory_order_relaxed);
  }
  if (s.verbose > 0) {
    char head[512];
    std::snprintf(head, sizeof head, "prism: %s%s%s transa=%c transb=%c m=%lld n=%lld k=%lld -> %s (%s",
                  site.routine, *site.layout ? " " : "", site.layout, site.transa, site.transb, site.m, site.n,
                  site.k, path_name(d.where), d.why);
    std::string line = head;
    if (d.detail != nullptr) line += std::string(": ") + d.detail;
    line += ")";
    if (d.where == path::backend && b != nullptr) line += " " + b->path();
    if (!plan_text.empty()) line += " plan: " + plan_text;
    char tail[128];
    std::snprintf(tail, sizeof tail, "%s%.3f ms, %.2f GF/s\n", plan_text.find('\n') != std::string::npos ? "" : "; ",
                  ns * 1e-6, ns > 0 ? flops / ns : 0.0);
    line += tail;
    std::fputs(line.c_str(), stderr);  // one write per call: lines of concurrent calls do not interleave
  }
}

template <scalar T>
void dispatch(const call_site& site, char ta, char tb, blas_int m, blas_int n, blas_int k, const T& alpha,
              const T* A, blas_int lda, const T* B, blas_int ldb, const T& beta, T* C, blas_int ldc) noexcept {
  const no_cancel hold;
  if (forked_child.load(std::memory_order_relaxed)) [[unlikely]] {  // (before anything a parent's thread may hold)
    const backend* b = backend::in_forked_child();
    if (b == nullptr) fatal(site.routine, "a process forked after its parent entered prism, with no backend BLAS to run on");
    return b->gemm<T>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  const settings& s = config();
  // The backend is opened before prism's leaves: if it is the file prism would use for
  // leaves (libblas64.so.3 loads libopenblas64), the leaves see it is shared and use
  // another build rather than pinning the user's BLAS to one thread.
  const backend* b = backend::get();
  publish_fast_path(s, b);
  const problem p{scalar_type_of<T>(), ta, tb, m, n, k};

  decision d{path::trivial, "quick return"};
  const bool trivial = m == 0 || n == 0 || alpha == T(0) || k == 0;
  if (!trivial) d = choose(s, b, p, lda, ldb, ldc, finite_scalar(beta));

  const bool observe = s.verbose > 0 || s.stats;
  const context& ctx = call_context(s);
  std::string plan_text;
  std::chrono::steady_clock::time_point start{};
  try {
    const context& run_ctx = d.where == path::gpu ? gpu_context(s.mode, ctx) : ctx;
    if ((d.where == path::recursion || d.where == path::gpu) && s.verbose > 0) {  // before the clock starts
      if (detail::runs_as_one_leaf(p, run_ctx)) {  // as prism::gemm decides it
        plan_text = "leaf m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                    " on the caller's thread (below small_flops); depth 0, 1 leaves";
      } else {
        auto pl = prism::detail::runtime_of(run_ctx).cached_plan(p, [&] { return std::make_shared<const plan>(detail::make_local_plan(p, run_ctx)); });
        plan_text = plan_summary(*pl, s.verbose);
      }
    }
    if (observe) start = std::chrono::steady_clock::now();
    if (d.where == path::trivial) {
      // m = 0, n = 0, or C = beta C without reading A and B: prism's prologue does it.
      prism::gemm<T>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, ctx);
    } else if (d.where == path::backend) {
      run_backend<T>(s, b, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    } else {
      try {
        prism::gemm<T>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, run_ctx);
      } catch (const backend_error& e) {
        // A leaf library failed to load; prism throws this before touching C.
        if (b == nullptr) throw;
        std::call_once(leaf_warning, [&] {
          std::fprintf(stderr, "prism: WARNING: %s; calls prism would take go to the backend BLAS\n", e.what());
        });
        d = {path::backend, "prism's leaf BLAS is unavailable"};
        run_backend<T>(s, b, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
      }
    }
  } catch (const std::exception& e) {
    fatal(site.routine, e.what());
  } catch (...) {
    fatal(site.routine, "unknown exception");
  }
  if (!observe) return;
  try {  // logging must not throw out of a noexcept BLAS entry point (bad_alloc, say)
    log_call(s, site, b, d, p, plan_text, start);
  } catch (...) {
  }
}

namespace {

// Real flops of a rank-k update of an n x n triangle: n(n+1)k, four times that for complex.
double rank_k_flops(scalar_type t, std::int64_t n, std::int64_t k) {
  return (is_complex(t) ? 4.0 : 1.0) * double(n) * double(n + 1) * double(k);
}

decision choose_rank_k(const settings& s, const backend* b, void* entry, scalar_type t, std::int64_t n,
                       std::int64_t k, blas_int lda, blas_int ldc, bool finite_beta) {
  if (std::max({n, k, std::int64_t(lda), std::int64_t(ldc)}) > INT_MAX)
    return {path::backend, "a size or leading dimension above 2^31-1"};
  if (b == nullptr)
    return {path::recursion, s.ctx ? "no backend BLAS" : "no backend BLAS; PRISM_* settings ignored (malformed)"};
  if (entry == nullptr) return {path::recursion, "the backend BLAS has no such routine"};
  if (s.ctx == nullptr) return {path::backend, "prism disabled by a bad PRISM_* setting"};
  if (s.mode == route::prism) return {path::recursion, "PRISM_BLAS_ROUTE=prism"};
  if (s.mode == route::backend) return {path::backend, "PRISM_BLAS_ROUTE=backend"};
  if (!finite_beta) return {path::recursion, beta_rule};
  const auto long_one = [&] {
    return long_call(s, rank_k_flops(t, n, k), double(n) * double(k) * double(element_size(t)));
  };
  const auto forward = [&](decision d) -> decision {  // as for gemm: not to weaker kernels
    if (const kernel_verdict& v = verdict(*b, long_one()); v.weaker)
      return {path::recursion, "weaker backend kernels", v.text.c_str()};
    return d;
  };
  if (rank_k_flops(t, n, k) < s.ctx->small_flops()) return forward({path::backend, "small (below PRISM_SMALL_FLOPS)"});
  if (s.ctx->threads() < 2) return forward({path::backend, "one thread (PRISM_NUM_THREADS, else the cores prism may use)"});
  // Measured with scripts/syrk-route.sh: NumPy's A.T @ A through this library, forced to
  // prism and to the threaded OpenBLAS backend, 2 threads, clean environment. The first run
  // (bench/results/syrk-route-2026-11-23.txt, before prism's own rank-k leaf): prism
  // 1.11-1.45x from k = n on for n = 256 and 1024, 0.97x at 64 x 512. Two runs with the
  // rank-k leaf (syrk-route-2026-11-23T1311Z.txt, T1316Z.txt), k from n/4 to 32n: n = 64
  // 2.84-3.85x; n = 256 1.29-2.00x everywhere but one k = n row (0.83 in the first run, 1.53
  // in the second); n = 1024 1.07-1.33x, with k = n and 4n at 0.84 and 0.91 in the first run
  // (1.17 and 1.31 in the second); k = n/4 and n/2 won in both runs (1.07-1.53x). Threaded
  // BLAS splits only n for a rank-k update, and its second thread gains little. So prism
  // from k >= n/4 on (above the small-call floor, checked above); thinner k, where C's n^2
  // entries outweigh the product, was not measured and stays with the backend.
  if (4 * k < n) return forward({path::backend, "k < n/4"});
  return {path::recursion, "k >= n/4"};
}

// The backend's Fortran ?syrk_ / ?herk_ (slots 0..3 syrk s, d, c, z; 4, 5 herk c, z),
// looked up once: the backend is one per process.
void* rank_k_entry(const backend* b, int slot) {
  static constexpr const char* names[6] = {"ssyrk_", "dsyrk_", "csyrk_", "zsyrk_", "cherk_", "zherk_"};
  static std::atomic<void*> entries[6] = {};
  static std::atomic<bool> looked[6] = {};
  if (b == nullptr) return nullptr;
  if (!looked[slot].load(std::memory_order_acquire)) {
    entries[slot].store(b->symbol(names[slot]), std::memory_order_relaxed);
    looked[slot].store(true, std::memory_order_release);
  }
  return entries[slot].load(std::memory_order_relaxed);
}

template <scalar T>
void rank_k_backend(void* entry, bool herm, char u, char t, blas_int n, blas_int k, const T& alpha, const T* A,
                    blas_int lda, const T& beta, T* C, blas_int ldc) {
  // Fortran ?syrk_ / ?herk_ as gfortran emits them: by reference, hidden CHARACTER lengths.
  if constexpr (std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>) {
    if (herm) {
      using R = typename T::value_type;
      const R a = alpha.real(), bt = beta.real();
      reinterpret_cast<void (*)(const char*, const char*, const blas_int*, const blas_int*, const R*, const T*,
                                const blas_int*, const R*, T*, const blas_int*, std::size_t, std::size_t)>(entry)(
          &u, &t, &n, &k, &a, A, &lda, &bt, C, &ldc, 1, 1);
      return;
    }
  }
  reinterpret_cast<void (*)(const char*, const char*, const blas_int*, const blas_int*, const T*, const T*,
                            const blas_int*, const T*, T*, const blas_int*, std::size_t, std::size_t)>(entry)(
      &u, &t, &n, &k, &alpha, A, &lda, &beta, C, &ldc, 1, 1);
}

template <scalar T>
void rank_k_prism(bool herm, char u, char t, blas_int n, blas_int k, const T& alpha, const T* A, blas_int lda,
                  const T& beta, T* C, blas_int ldc, const context& ctx) {
  if constexpr (std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>) {
    if (herm) return prism::herk<T>(u, t, n, k, alpha.real(), A, lda, beta.real(), C, ldc, ctx);
  }
  prism::syrk<T>(u, t, n, k, alpha, A, lda, beta, C, ldc, ctx);
}

}  // namespace

template <scalar T>
bool rank_k_fast(bool herm, char u, char t, blas_int n, blas_int k, const T& alpha, const T* A, blas_int lda,
                 const T& beta, T* C, blas_int ldc) noexcept {
  if (!fast_state.ready.load(std::memory_order_acquire)) return false;
  if (n <= 0 || k <= 0 || alpha == T(0) || !finite_scalar(beta)) return false;  // quick returns: full path
  if (rank_k_flops(scalar_type_of<T>(), n, k) >= fast_state.small_flops) return false;
  const int slot = herm ? (std::same_as<T, std::complex<float>> ? 4 : 5) : type_slot<T>();
  void* entry = rank_k_entry(fast_state.b, slot);
  if (entry == nullptr) return false;
  rank_k_backend<T>(entry, herm, u, t, n, k, alpha, A, lda, beta, C, ldc);
  return true;
}

template <scalar T>
void dispatch_rank_k(const rank_k_site& site, bool herm, char u, char t, blas_int n, blas_int k, const T& alpha,
                     const T* A, blas_int lda, const T& beta, T* C, blas_int ldc) noexcept {
  const no_cancel hold;
  const int slot = herm ? (std::same_as<T, std::complex<float>> ? 4 : 5) : type_slot<T>();
  if (forked_child.load(std::memory_order_relaxed)) [[unlikely]] {  // (before anything a parent's thread may hold)
    void* entry = rank_k_entry(backend::in_forked_child(), slot);
    if (entry == nullptr) fatal(site.routine, "a process forked after its parent entered prism, with no backend routine to run on");
    return rank_k_backend<T>(entry, herm, u, t, n, k, alpha, A, lda, beta, C, ldc);
  }
  const settings& s = config();
  const backend* b = backend::get();
  publish_fast_path(s, b);
  void* entry = rank_k_entry(b, slot);
  decision d{path::trivial, "quick return"};
  if (!(n == 0 || alpha == T(0) || k == 0)) {  // the GPU route first, for sizes prism takes at all
    const problem p = rank_k_problem(scalar_type_of<T>(), herm ? operation::herk : operation::syrk, u, t, n, k);
    if (std::max({n, k, lda, ldc}) > INT_MAX || !gpu_decides(s, p, d))
      d = choose_rank_k(s, b, entry, scalar_type_of<T>(), n, k, lda, ldc, finite_scalar(beta));
  }
  const bool observe = s.verbose > 0 || s.stats;
  const context& ctx = d.where == path::gpu ? gpu_context(s.mode, call_context(s)) : call_context(s);
  std::string tree;  // PRISM_VERBOSE: the recursion's top step and size, before the clock starts
  if ((d.where == path::recursion || d.where == path::gpu) && s.verbose > 0) try {
      tree = " plan: " + describe_rank_k(scalar_type_of<T>(), n, k, ctx);
    } catch (...) {
    }
  std::chrono::steady_clock::time_point start{};
  if (observe) start = std::chrono::steady_clock::now();
  try {
    if (d.where == path::backend && entry != nullptr) {
      rank_k_backend<T>(entry, herm, u, t, n, k, alpha, A, lda, beta, C, ldc);
    } else {
      try {
        rank_k_prism<T>(herm, u, t, n, k, alpha, A, lda, beta, C, ldc, ctx);
      } catch (const backend_error& e) {  // a leaf library failed to load, before C was touched
        if (entry == nullptr) throw;
        std::call_once(leaf_warning, [&] {
          std::fprintf(stderr, "prism: WARNING: %s; calls prism would take go to the backend BLAS\n", e.what());
        });
        d = {path::backend, "prism's leaf BLAS is unavailable"};
        rank_k_backend<T>(entry, herm, u, t, n, k, alpha, A, lda, beta, C, ldc);
      }
    }
  } catch (const std::exception& e) {
    fatal(site.routine, e.what());
  } catch (...) {
    fatal(site.routine, "unknown exception");
  }
  if (!observe) return;
  try {
    const double ns = double(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now() - start).count());
    const double flops = d.where == path::trivial ? 0.0 : rank_k_flops(scalar_type_of<T>(), n, k);
    if (s.stats) {
      counters& c = the_rank_k_counters;
      const int pi = int(d.where), ti = type_index(scalar_type_of<T>());
      c.calls[pi][ti].fetch_add(1, std::memory_order_relaxed);
      c.flops[pi][ti].fetch_add(flops, std::memory_order_relaxed);
      c.nanoseconds[pi][ti].fetch_add(std::uint64_t(ns), std::memory_order_relaxed);
    }
    if (s.verbose > 0) {
      char line[768];
      std::snprintf(line, sizeof line, "prism: %s%s%s uplo=%c trans=%c n=%lld k=%lld -> %s (%s%s%s)%s%s%s; %.3f ms, %.2f GF/s\n",
                    site.routine, *site.layout ? " " : "", site.layout, site.uplo, site.trans, site.n, site.k,
                    path_name(d.where), d.why, d.detail != nullptr ? ": " : "", d.detail != nullptr ? d.detail : "",
                    d.where == path::backend && b != nullptr ? " " : "",
                    d.where == path::backend && b != nullptr ? b->path().c_str() : "", tree.c_str(), ns * 1e-6,
                    ns > 0 ? flops / ns : 0.0);
      std::fputs(line, stderr);
    }
  } catch (...) {
  }
}

#define PRISM_INSTANTIATE(T)                                                                                \
  template void dispatch<T>(const call_site&, char, char, blas_int, blas_int, blas_int, const T&, const T*, \
                            blas_int, const T*, blas_int, const T&, T*, blas_int) noexcept;
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE
#define PRISM_INSTANTIATE(T)                                                                                 \
  template bool rank_k_fast<T>(bool, char, char, blas_int, blas_int, const T&, const T*, blas_int, const T&, T*, \
                               blas_int) noexcept;
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE
#define PRISM_INSTANTIATE(T)                                                                                     \
  template void dispatch_rank_k<T>(const rank_k_site&, bool, char, char, blas_int, blas_int, const T&, const T*, \
                                   blas_int, const T&, T*, blas_int) noexcept;
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism::dropin
