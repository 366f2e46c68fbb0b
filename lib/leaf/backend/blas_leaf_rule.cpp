// lib/leaf/backend/blas_leaf_rule.cpp — see blas_leaf_rule.hpp.
#include "blas_leaf_rule.hpp"

#include <prism/error.hpp>

#include "../../environment/run_once.hpp"
#include "../../machine/wisdom.hpp"
#include "blas_library.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <utility>
#include <vector>

namespace prism::detail {

namespace {

using clock_type = std::chrono::steady_clock;

// The classes measured in this process or kept by an earlier one: -1 none (the width
// rule), else the leaf_backend measured faster; indexed by blas_leaf_class.
std::atomic<int> measured_class[3] = {-1, -1, -1};

const char* name_of(blas_leaf_class c) { return c == blas_leaf_class::wide ? "wide" : "square"; }
std::string key_of(blas_leaf_class c) { return std::string("blas_leaf_") + name_of(c); }

// The vector bits of the two leaf libraries' kernels ({BLIS, OpenBLAS}; BLIS's generic C
// kernels 0), read once; {-1, -1} when a library cannot load.
std::pair<int, int> kernel_widths() {
  static const std::pair<int, int> bits = [] {
    try {
      return std::pair(kernel_vector_bits(leaf_library(leaf_backend::blis).kernel_name()),
                       kernel_vector_bits(leaf_library(leaf_backend::openblas).kernel_name()));
    } catch (const backend_error&) {
      return std::pair(-1, -1);
    }
  }();
  return bits;
}

// The width rule: BLIS when its kernels are at least as wide as OpenBLAS's (an AVX2 BLIS
// loses to an AVX-512 OpenBLAS; BLIS's generic C kernels, width 0, to any; a library that
// cannot load: never BLIS).
bool blis_as_wide() { return kernel_widths().first > 0 && kernel_widths().first >= kernel_widths().second; }

leaf_backend width_rule() { return blis_as_wide() ? leaf_backend::blis : leaf_backend::openblas; }

// The kernel sets a verdict holds for, e.g. "openblas Haswell, blis zen3": one timed on
// other sets (PRISM_LEAF_KERNELS, a new library) is not used.
std::string kernel_sets() {
  return "openblas " + leaf_library(leaf_backend::openblas).kernel_name() + ", blis " +
         leaf_library(leaf_backend::blis).kernel_name();
}

// Takes a verdict an earlier process of this CPU kept on the same kernel sets, once per
// process; a value other than "openblas" or "blis" is a damaged file's, and ignored.
void read_kept() {
  static run_once once;
  once([] {
    try {
      const wisdom& w = wisdom::process();
      const auto sets = w.find("blas_leaf_kernels");
      if (!sets || *sets != kernel_sets()) return;
      for (blas_leaf_class c : {blas_leaf_class::square, blas_leaf_class::wide})
        if (const auto v = w.find(key_of(c)); v && (*v == "openblas" || *v == "blis"))
          measured_class[int(c)].store(int(parse_leaf_backend(*v)), std::memory_order_relaxed);
    } catch (const backend_error&) {
      // a library cannot load: the width rule (which then never picks BLIS)
    }
  });
}

}  // namespace

blas_leaf_class classify_blas_leaf(scalar_type t, std::int64_t m, std::int64_t n, std::int64_t k) {
  if ((t == scalar_type::d || t == scalar_type::s) && m >= 1024 && n >= 1024 && k <= 64) return blas_leaf_class::wide;
  if (t == scalar_type::d && m >= 128 && n >= 128) return blas_leaf_class::square;
  return blas_leaf_class::other;
}

std::optional<leaf_backend> measured_blas_leaf(blas_leaf_class c) {
  if (c == blas_leaf_class::other) return std::nullopt;
  read_kept();
  const int v = measured_class[int(c)].load(std::memory_order_relaxed);
  return v >= 0 ? std::optional(leaf_backend(v)) : std::nullopt;
}

leaf_backend choose_blas_leaf(const machine_description& mc, scalar_type t, std::int64_t m, std::int64_t n, std::int64_t k) {
  // The classes, from scripts/leaf-kernels.sh (one thread, best of 7; docs/performance.md
  // "Leaf backends"). With AVX-512 sets on both sides (OpenBLAS Cooperlake or SkylakeX, BLIS
  // skx) on a 2-core AMD EPYC (bench/results/leaf-kernels-2026-11-23.txt):
  //  - double: BLIS 1.05-1.48x OpenBLAS once m, n >= 128 (squares 128-2048, wide k = 64,
  //    k = 4096 leaves; one 0.95 at 192x192x4096), 0.5x on 64^3, 0.25-0.77x on m, n <= 16
  //    with huge k, noisy in between (0.66-1.57x at 32-96);
  //  - float: OpenBLAS ahead (BLIS 0.30-0.99x) except wide leaves, m, n >= 1024 with
  //    k = 64, where BLIS is 1.18-1.49x;
  //  - complex: BLIS's skx configuration has no complex kernels of its own, 0.13-0.54x.
  // With AVX2 sets on both sides BLIS was about even there in double from m, n >= 128
  // (0.87-1.06x), and on an AVX2 Zen 3 behind on squares (0.87-0.96x) and ahead on wide
  // leaves (1.20-1.29x): where the widths are equal, a double leaf's class is measured
  // (measure_blas_leaves, at first use). The class bounds are the two libraries' blocking
  // (both reach their micro-kernels' rate from m, n >= 128) and hold no byte or flop size
  // of a host. scripts/auto-vs-best.sh checks the choice on the machine it runs on.
  const blas_leaf_class c = classify_blas_leaf(t, m, n, k);
  if (c == blas_leaf_class::other) return leaf_backend::openblas;
  if (t == scalar_type::d && mc.example().empty())
    if (const auto measured = measured_blas_leaf(c)) return *measured;
  return width_rule();
}

bool blas_leaf_widths_equal() { return kernel_widths().first > 0 && kernel_widths().first == kernel_widths().second; }

blas_leaf_verdict measure_blas_leaves(double budget) {
  const blas_library& ob = leaf_library(leaf_backend::openblas);
  const blas_library& bl = leaf_library(leaf_backend::blis);
  const auto start = clock_type::now();
  auto since = [](clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); };
  struct shape {
    blas_leaf_class c;
    std::int64_t m, n, k;
  };
  // The square first: the class where the libraries differ least (0.87-0.96x on the Zen
  // 3), and the costlier (0.9 Gflop a call, some 25 ms on an AVX2 core; the wide leaf
  // 0.13), so a slow machine's budget runs out on the wide class, whose width rule
  // (BLIS) both tables agree with. 768^3 lies among the squares a large call's leaves are
  // (a 2048^3 call on 2 threads: two 2048 x 1024 x 2048 leaves; the Zen 3 table has BLIS
  // at 0.96x from 512^3 to 0.87x at 2048^3).
  const shape shapes[] = {{blas_leaf_class::square, 768, 768, 768}, {blas_leaf_class::wide, 1024, 1024, 64}};
  // Small exact operands (no denormals); beta = 0, so every call computes the same C.
  std::vector<double> A(std::size_t(768 * 768), 0.5), B(std::size_t(768 * 768), 0.25), C(std::size_t(1024 * 1024));
  blas_leaf_verdict v;
  double slowest = 0;  // the lowest rate of a warm-up so far, flop/s (0: none yet)
  for (const shape& s : shapes) {
    const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
    char text[160];
    // A class is timed only if its warm-up and two rounds (six calls) fit in what is left
    // at the lowest rate seen so far.
    if (slowest > 0 ? since(start) + 6 * flops / slowest > budget : since(start) >= budget) {
      std::snprintf(text, sizeof text, "%s%s d %lldx%lldx%lld: undecided (not timed within %.2f s)", v.text.empty() ? "" : "; ",
                    name_of(s.c), (long long)s.m, (long long)s.n, (long long)s.k, budget);
      v.text += text;
      continue;
    }
    auto call = [&](const blas_library& lib) {
      const auto t0 = clock_type::now();
      lib.gemm<double>('N', 'N', s.m, s.n, s.k, 1.0, A.data(), s.m, B.data(), s.k, 0.0, C.data(), s.m);
      return since(t0);
    };
    double best_ob = 1e300, best_bl = 1e300;
    int rounds = 0;
    const auto first = clock_type::now();
    const double warm = call(ob) + call(bl);  // warm-up: the libraries' buffers, C's pages
    slowest = slowest > 0 ? std::min(slowest, 2 * flops / warm) : 2 * flops / warm;
    for (; rounds < 3; ++rounds) {
      // A round costs about what the warm-up did (both libraries once): stop before one
      // that would pass the budget.
      const double round = since(first) / double(rounds + 1);
      if (since(start) + round > budget) break;
      // Alternate which library goes first, so that neither always runs on a warmer core.
      if (rounds % 2 == 0) best_ob = std::min(best_ob, call(ob)), best_bl = std::min(best_bl, call(bl));
      else best_bl = std::min(best_bl, call(bl)), best_ob = std::min(best_ob, call(ob));
    }
    if (rounds < 2) {
      std::snprintf(text, sizeof text, "%s%s d %lldx%lldx%lld: undecided (%d rounds within %.2f s)", v.text.empty() ? "" : "; ",
                    name_of(s.c), (long long)s.m, (long long)s.n, (long long)s.k, rounds, budget);
      v.text += text;
      continue;
    }
    const double ratio = best_ob / best_bl;  // BLIS's rate over OpenBLAS's
    const leaf_backend faster = ratio > 1.03 ? leaf_backend::blis : ratio < 1 / 1.03 ? leaf_backend::openblas : width_rule();
    v.faster[s.c] = faster;
    std::snprintf(text, sizeof text, "%s%s d %lldx%lldx%lld: openblas %.1f, blis %.1f GF/s (%.2fx)%s -> %s",
                  v.text.empty() ? "" : "; ", name_of(s.c), (long long)s.m, (long long)s.n, (long long)s.k,
                  flops / best_ob * 1e-9, flops / best_bl * 1e-9, ratio,
                  ratio > 1.03 || ratio < 1 / 1.03 ? "" : " within 3 %, by width", to_string(faster));
    v.text += text;
  }
  v.seconds = since(start);
  return v;
}

bool keep_blas_leaves(const blas_leaf_verdict& v) {
  // Both classes written, "undecided" for one the budget left out, so no line kept on
  // other kernel sets stays beside this measurement's kernel sets.
  std::map<std::string, std::string> pairs;
  for (blas_leaf_class c : {blas_leaf_class::square, blas_leaf_class::wide}) {
    const auto it = v.faster.find(c);
    if (it != v.faster.end()) measured_class[int(c)].store(int(it->second), std::memory_order_relaxed);
    pairs[key_of(c)] = it != v.faster.end() ? to_string(it->second) : "undecided";
  }
  char head[64];
  std::snprintf(head, sizeof head, "measured in %.3f s: ", v.seconds);
  pairs["blas_leaf_kernels"] = kernel_sets();
  pairs[blas_leaves_marker] = head + v.text;
  return wisdom::process().keep(pairs);
}

bool blas_leaves_kept() {
  try {
    const auto sets = wisdom::process().find("blas_leaf_kernels");
    return sets && *sets == kernel_sets();
  } catch (const backend_error&) {
    return true;  // a library cannot load: nothing to measure
  }
}

std::string blas_leaf_rule_text() {
  read_kept();
  std::string out;
  bool any = false;
  for (blas_leaf_class c : {blas_leaf_class::square, blas_leaf_class::wide}) {
    const int v = measured_class[int(c)].load(std::memory_order_relaxed);
    any = any || v >= 0;
    out += std::string(out.empty() ? "" : "; ") + name_of(c) + " d: " +
           (v >= 0 ? std::string(to_string(leaf_backend(v))) + " (measured)" : std::string(to_string(width_rule())) + " (by kernel width)");
  }
  if (any)
    if (const auto how = wisdom::process().find(blas_leaves_marker)) out += "; " + *how;
  return out;
}

}  // namespace prism::detail
