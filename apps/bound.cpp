// apps/bound.cpp — `prism bound`: the lower bounds of a product (gemm or syrk) at every
// level of the machine, and the classic decompositions' modelled costs beside them.
#include "commands.hpp"
#include "measure.hpp"

#include <prism/bounds.hpp>
#include <prism/prism.hpp>

#include "bandwidth.hpp"
#include "fma_peak.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace prism_app {

namespace {

// "1.573e6": three significant digits, a plain exponent; "0" and "unlimited" as such.
std::string sci(double x) {
  if (std::isinf(x)) return "unlimited";
  if (x == 0) return "0";
  char buf[32];
  const int e = int(std::floor(std::log10(std::fabs(x))));
  if (e >= -2 && e < 4) std::snprintf(buf, sizeof buf, "%.4g", x);
  else std::snprintf(buf, sizeof buf, "%.3fe%d", x / std::pow(10.0, e), e);
  return buf;
}

// A size with an optional K, M or G suffix (powers of 1024), as a double (--memory), or a
// rate, which may also be a decimal number such as 50e9 (--peak, --bandwidth values). Zero
// is refused.
double parse_positive_size(const std::string& v, const std::string& what, bool rate = false) {
  double x = 0;
  try {
    x = rate ? prism::parse_rate(v) : double(prism::parse_size(v));
  } catch (const prism::error&) {
    throw bad_input(what + " must be a whole number with an optional K, M or G suffix" + (rate ? " or a decimal number" : "") +
                    ", got '" + v + "'", "bound");
  }
  if (!(x > 0)) throw bad_input(what + " must be > 0, got '" + v + "'", "bound");
  return x;
}

struct bound_options {
  std::int64_t m = 0, n = 0, k = 0, ranks = 1;
  double memory = prism::bounds::unlimited;  // words per rank
  bool memory_given = false;
  std::string topology;                      // empty: PRISM_TOPOLOGY, else this machine
  prism::scalar_type type = prism::scalar_type::d;
  double peak = 0;                           // flop/s per processing unit, 0 unknown
  std::vector<std::pair<std::string, double>> bandwidth;  // level name, bytes/s per unit
  bool probe = false;
  bool syrk = false;      // --syrk: the SYRK bound (C = A A^T, M = N)
  std::string given;      // the options given, for --syrk's refusal of the ones it ignores
};

bound_options parse_bound(const std::vector<std::string>& args) {
  const std::string hint = "bound";
  if (args.size() < 5) throw bad_input("prism bound needs M N K", hint);
  bound_options o;
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  o.m = parse_int(args[2], "M", 1, max, hint);
  o.n = parse_int(args[3], "N", 1, max, hint);
  o.k = parse_int(args[4], "K", 1, max, hint);
  for (std::size_t i = 5; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--probe") {
      o.probe = true;
      o.given += o.given.empty() ? a : ", " + a;
      continue;
    }
    if (a == "--syrk") {
      if (o.syrk) throw bad_input("--syrk is given once", hint);
      o.syrk = true;
      // Optional letters, as for `prism plan --syrk UT`: uplo U or L, then trans N or T.
      if (i + 1 < args.size() && !args[i + 1].empty() && args[i + 1][0] != '-') {
        const std::string& v = args[++i];
        if (v.size() != 2 || (v[0] != 'U' && v[0] != 'L') || (v[1] != 'N' && v[1] != 'T'))
          throw bad_input("--syrk takes uplo (U or L) then trans (N or T), e.g. UT, got '" + v + "'", hint);
      }
      continue;
    }
    if (a != "--ranks" && a != "--memory" && a != "--topology" && a != "--type" && a != "--peak" &&
        a != "--bandwidth")
      throw bad_input("unknown option '" + a + "' for 'prism bound'", hint);
    if (i + 1 >= args.size()) throw bad_input(a + " needs a value", hint);
    const std::string& v = args[++i];
    if (a != "--ranks" && a != "--type") o.given += o.given.empty() ? a : ", " + a;
    if (a == "--ranks") o.ranks = parse_int(v, a, 1, 1 << 20, hint);
    else if (a == "--memory") o.memory = parse_positive_size(v, a), o.memory_given = true;
    else if (a == "--topology") o.topology = v;
    else if (a == "--peak") o.peak = parse_positive_size(v, a, true);
    else if (a == "--type") {
      if (v.size() != 1 || std::string("sdcz").find(v[0]) == std::string::npos)
        throw bad_input("--type must be s, d, c or z, got '" + v + "'", hint);
      o.type = prism::scalar_type(v[0]);
    } else {  // --bandwidth L1=200G,L3=20G
      std::size_t at = 0;
      while (at <= v.size()) {
        const std::size_t comma = std::min(v.find(',', at), v.size());
        const std::string item = v.substr(at, comma - at);
        const std::size_t eq = item.find('=');
        if (eq == std::string::npos || eq == 0)
          throw bad_input("--bandwidth takes LEVEL=BYTES_PER_S items separated by commas (e.g. L3=20G), got '" +
                              item + "'", hint);
        o.bandwidth.emplace_back(item.substr(0, eq), parse_positive_size(item.substr(eq + 1), "--bandwidth " +
                                                                          item.substr(0, eq), true));
        at = comma + 1;
      }
    }
  }
  if (o.memory_given && o.memory < 3) throw bad_input("--memory must be >= 3 words (a 1 x 1 block and two operands)", hint);
  if (o.syrk) {
    if (o.m != o.n)
      throw bad_input("--syrk: the update is N x N, so M and N must be equal, got " + args[2] + " and " + args[3], hint);
    if (!o.given.empty())
      throw bad_input("--syrk: the SYRK bound is per rank and memory-independent; " + o.given +
                          (o.given.find(',') == std::string::npos ? " does" : " do") + " not apply",
                      hint);
  }
  return o;
}

// Probes: one core's FMA peak; for each cache level, reads from an array that overflows it
// but fits the next (their sizes' geometric mean; the last level: 8 times its size, within
// 256 MiB .. 1 GiB), by the processing units sharing one instance: the bandwidth one
// instance gets from the level above.
void probe_machine(const prism::topology& t, bound_options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const double flops = o.type == prism::scalar_type::s || o.type == prism::scalar_type::c
                           ? prism_probes::fma_peak_float(1, 1 << 24)
                           : prism_probes::fma_peak_double(1, 1 << 24);
  if (o.peak == 0) o.peak = flops / seconds_since(t0);
  const auto& caches = t.caches();
  for (std::size_t i = 0; i < caches.size(); ++i) {
    std::string name = "L";
    name += std::to_string(caches[i].level);
    if (std::any_of(o.bandwidth.begin(), o.bandwidth.end(), [&](const auto& b) { return b.first == name; })) continue;
    const double here = double(caches[i].size_bytes);
    const double gib = 1024.0 * 1024 * 1024;  // the last level: 8x, in [256 MiB, 1 GiB] (a VM may say 512 MiB)
    const double bytes = i + 1 < caches.size() ? std::sqrt(here * double(caches[i + 1].size_bytes))
                                               : std::clamp(8 * here, gib / 4, gib);
    const int threads = std::max(1, caches[i].pus_sharing);
    const auto r = prism_probes::read_bandwidth(threads, std::size_t(bytes), 9);
    o.bandwidth.emplace_back(name, r.median_bytes_per_s);
  }
}

// `prism bound N N K --syrk`: the SYRK bound per rank, its case and the case's condition in
// numbers, beside gemm's bounds for the full N x N x K square. E.g. 4096 4096 4096 --ranks 8:
// 3D, 3144960 words per rank (25.16 MB of doubles), gemm 6291456, ratio 0.500.
int run_bound_syrk(const bound_options& o) {
  namespace pb = prism::bounds;
  const std::int64_t n = o.n, k = o.k, P = o.ranks;
  const double N = double(n), K = double(k), Pd = double(P), eb = double(prism::element_size(o.type));
  const pb::syrk_case c = pb::syrk_bound_case(n, k, P);
  const double w = pb::syrk_parallel_io_minus_owned(n, k, P), q = pb::syrk_parallel_io(n, k, P);
  const double g = pb::memory_independent_minus_owned(n, n, k, P);
  auto mb = [&](double words) { return sci(words * eb / 1e6); };
  std::printf("# prism bound --syrk: C (%lld x %lld, symmetric) = A A^T, A %lld x %lld, type %c, P = %lld rank%s\n",
              (long long)n, (long long)n, (long long)n, (long long)k, char(o.type), (long long)P, P == 1 ? "" : "s");
  std::printf("# words are matrix elements (%zu bytes). Q: words of A and of C's strict triangle a rank doing\n"
              "# n(n-1)k/(2P) off-diagonal multiply-adds must touch; owned: (nk + n(n-1)/2)/P = %s\n",
              prism::element_size(o.type), sci(pb::syrk_owned(n, k, P)).c_str());
  const char* name = c == pb::syrk_case::one_d ? "1D" : c == pb::syrk_case::two_d ? "2D" : "3D";
  std::printf("SYRK lower bound, %s case: %.9g words per rank (%s MB); Q = %s\n", name, w, mb(w).c_str(),
              sci(q).c_str());
  const double a = Pd * (N - 1) * (N - 1), b = N * K, ck = Pd * K * K, d = N * (N - 1);
  std::printf("  case: %s\n", pb::to_string(c));
  if (P == 1)
    std::printf("  condition: P = 1: the one rank touches all of A and of the triangle, and owns it\n");
  else if (c == pb::syrk_case::one_d)
    std::printf("  condition: P (n-1)^2 < nk (%s < %s)\n"
                "  domain: the whole triangle's worth, (n-1)^2/2, and nk/P of A (a k split, partial triangles reduced)\n",
                sci(a).c_str(), sci(b).c_str());
  else if (c == pb::syrk_case::two_d)
    std::printf("  condition: P k^2 < n(n-1) (%s < %s)\n"
                "  domain: triangle blocks of side sqrt(n(n-1)/P) = %s over all of k\n",
                sci(ck).c_str(), sci(d).c_str(), sci(std::sqrt(d / Pd)).c_str());
  else
    std::printf("  condition: P (n-1)^2 >= nk (%s >= %s) and P k^2 >= n(n-1) (%s >= %s)\n"
                "  domain: triangle blocks of side and depth (n(n-1)k/P)^(1/3) = %s\n",
                sci(a).c_str(), sci(b).c_str(), sci(ck).c_str(), sci(d).c_str(), sci(std::cbrt(d * K / Pd)).c_str());
  std::printf("  source: Al Daas, Ballard, Grigori, Kumar, Rouse, Verite (SPAA'23; arXiv 2409.11304), derived with\n"
              "  its lower-order terms in docs/data-movement.md\n");
  std::printf("gemm, the full square %lld x %lld x %lld (%s): %.9g words per rank (%s MB)\n", (long long)n,
              (long long)n, (long long)k, pb::to_string(pb::carma_split_case(n, n, k, P)), g, mb(g).c_str());
  std::printf("  COSMA Theorem 2 (its cube, what `prism plan --stats` reports): %s; CARMA II-B: %s\n",
              sci(pb::parallel_io_minus_owned(n, n, k, P, pb::unlimited)).c_str(),
              sci(pb::carma_lower_bound(n, n, k, P, pb::unlimited)).c_str());
  if (g > 0) std::printf("SYRK / gemm: %.3f\n", w / g);
  return 0;
}
}  // namespace

int run_bound(const std::vector<std::string>& args) {
  namespace pb = prism::bounds;
  bound_options o = parse_bound(args);
  if (o.syrk) return run_bound_syrk(o);
  const prism::topology t = [&] {
    try {
      return o.topology.empty() ? prism::topology::from_env() : prism::topology::parse(o.topology);
    } catch (const prism::error& e) {
      throw bad_input(std::string(o.topology.empty() ? "" : "--topology: ") + e.what(), "bound");
    }
  }();
  const std::int64_t m = o.m, n = o.n, k = o.k, P = o.ranks;
  const std::size_t eb = prism::element_size(o.type);
  const double S = o.memory, V = double(m) * double(n) * double(k) / double(P);
  // Every check (and the probe) before the first line of output: a run that fails prints
  // nothing on stdout.
  std::vector<pb::level_bound> levels = pb::level_bounds(t, m, n, k, P, S, eb);
  auto level_named = [&](const std::string& name) {
    return std::find_if(levels.begin(), levels.end(), [&](const pb::level_bound& l) { return l.name == name; });
  };
  for (const auto& given : o.bandwidth)
    if (level_named(given.first) == levels.end()) {
      std::string known;
      for (const auto& l : levels) known += (known.empty() ? "" : ", ") + l.name;
      throw bad_input("--bandwidth: no level '" + given.first + "' here (levels: " + (known.empty() ? "none" : known) +
                          ")", "bound");
    }
  if (o.probe) probe_machine(t, o);
  for (const auto& [name, bytes_per_s] : o.bandwidth)
    if (auto it = level_named(name); it != levels.end()) it->bandwidth = bytes_per_s;

  std::printf("# prism bound: C (%lld x %lld) += A (%lld x %lld) B (%lld x %lld), type %c, P = %lld rank%s, "
              "S = %s words per rank\n",
              (long long)m, (long long)n, (long long)m, (long long)k, (long long)k, (long long)n, char(o.type),
              (long long)P, P == 1 ? "" : "s", o.memory_given ? sci(S).c_str() : "unlimited");
  std::printf("# words are matrix elements (%zu bytes). Q: words a rank's local domain reads and writes (COSMA's "
              "I/O);\n# owned: what a balanced layout gives a rank, (mk + kn + mn)/P = %s\n",
              eb, sci(pb::owned(m, n, k, P)).c_str());

  // Parallel: COSMA Theorem 2 and which branch of Eq. 33 gives it.
  const double q = pb::parallel_io(m, n, k, P, S), side = std::cbrt(V);
  std::printf("Theorem 2 (COSMA): Q - owned = %s words per rank (Q = %s)\n",
              sci(pb::parallel_io_minus_owned(m, n, k, P, S)).c_str(), sci(q).c_str());
  if (S >= side * side)
    std::printf("  branch: 3 (mnk/P)^(2/3), cubic %s^3 domains: S >= (mnk/P)^(2/3) = %s\n", sci(side).c_str(),
                sci(side * side).c_str());
  else
    std::printf("  branch: 2mnk/(P sqrt S) + S, %s x %s x %s domains: S < (mnk/P)^(2/3) = %s\n",
                sci(std::sqrt(S)).c_str(), sci(std::sqrt(S)).c_str(), sci(V / S).c_str(), sci(side * side).c_str());
  if (P > 1 && S * double(P) < double(m) * double(k) + double(k) * double(n) + double(m) * double(n))
    std::printf("  note: P S < mk + kn + mn, so A, B and C do not fit in the ranks' memory (Theorem 2 assumes "
                "they do)\n");

  // CARMA's cases.
  const pb::carma_case bc = pb::carma_bound_case(m, n, k, P), sc = pb::carma_split_case(m, n, k, P);
  std::printf("CARMA lower bound (II-B, %s): %s words per rank\n", pb::to_string(bc),
              sci(pb::carma_lower_bound(m, n, k, P, S)).c_str());
  std::printf("CARMA cost (Table I, %s, constant 1): %s words per rank\n", pb::to_string(sc),
              sci(pb::carma_cost(m, n, k, P, S)).c_str());

  // Sequential: S, else the last-level cache of the topology.
  double seq_s = S;
  std::string seq_what = "S";
  if (!o.memory_given) {
    const auto& caches = t.caches();
    seq_s = caches.empty() || caches.back().size_bytes == 0 ? 0 : double(caches.back().size_bytes) / double(eb);
    seq_what = caches.empty() ? std::string() : std::string(1, 'L') + std::to_string(caches.back().level);
  }
  if (seq_s >= 3)
    std::printf("sequential, one processor, fast memory %s = %s words: lower bound (Smith et al.; every word once) "
                "%s words; COSMA's greedy schedule (Theorem 1's Corollary) %s; every word once (mk + kn + mn) %s\n",
                seq_what.c_str(), sci(seq_s).c_str(), sci(pb::sequential_io(m, n, k, seq_s)).c_str(),
                sci(pb::sequential_greedy(m, n, k, seq_s)).c_str(), sci(pb::owned(m, n, k, 1)).c_str());

  // Modelled costs of the classic decompositions.
  std::printf("\n# modelled words per rank (real-valued grids: the models assume exact divisions)\n");
  std::printf("%-20s %-24s %10s %10s  %s\n", "decomposition", "grid m x n x k", "Q", "Q - owned", "source");
  for (const pb::decomposition_cost& c : pb::modelled_costs(m, n, k, P, S)) {
    const std::string grid = sci(c.grid[0]) + " x " + sci(c.grid[1]) + " x " + sci(c.grid[2]);
    std::printf("%-20s %-24s %10s %10s  %s\n", c.name, grid.c_str(), sci(c.io).c_str(), sci(c.received).c_str(),
                c.source);
  }

  // Per level of the machine.
  int pus = 0;
  for (const prism::numa_domain& d : t.domains()) pus += int(d.pus.size());
  pus = std::max(pus, 1);
  const pb::balance b =
      pb::machine_balance(levels, prism::gemm_flops(o.type, m, n, k), std::int64_t(pus) * P, o.peak, eb);
  std::printf("\n# per level (Elango et al.) of %s%s\n", t.source().c_str(),
              P > 1 ? ", one per rank" : "");
  std::printf("# a cache level: words one instance exchanges with the level above (vertical); numa, ranks: words\n"
              "# one unit receives from the others (horizontal); time: lower bound / bandwidth\n");
  std::printf("%-6s %-10s %6s %6s %12s %12s %12s %12s\n", "level", "kind", "units", "pus", "words/unit",
              "lower bound", "bandwidth", "time");
  for (const pb::level_bound& l : b.levels)
    std::printf("%-6s %-10s %6lld %6lld %12s %12s %12s %12s\n", l.name.c_str(),
                l.kind == pb::movement::vertical ? "vertical" : "horizontal", (long long)l.units,
                (long long)l.processors, sci(l.unit_words).c_str(), sci(l.words).c_str(),
                l.bandwidth > 0 ? (sci(l.bandwidth) + " B/s").c_str() : "-",
                l.bandwidth > 0 ? duration(l.seconds).c_str() : "-");
  if (o.peak <= 0 || b.binding < 0) {
    std::printf("# machine balance: give --peak F and --bandwidth LEVEL=B (or --probe) to see which level bounds "
                "the run\n");
    return 0;
  }
  std::printf("# compute: %s flops on %lld processing units at %s flop/s each: %s\n",
              sci(prism::gemm_flops(o.type, m, n, k)).c_str(), (long long)(std::int64_t(pus) * P), sci(o.peak).c_str(),
              duration(b.compute_seconds).c_str());
  const pb::level_bound& w = b.levels[std::size_t(b.binding)];
  if (b.bandwidth_bound)
    std::printf("# machine balance: %s bounds the run: its lower bound takes %s > compute %s, for any schedule\n",
                w.name.c_str(), duration(w.seconds).c_str(), duration(b.compute_seconds).c_str());
  else
    std::printf("# machine balance: compute bounds the run: the slowest level's lower bound (%s, %s) fits in the "
                "compute time %s\n",
                w.name.c_str(), duration(w.seconds).c_str(), duration(b.compute_seconds).c_str());
  return 0;
}

}  // namespace prism_app
