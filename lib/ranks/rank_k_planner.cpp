// lib/ranks/rank_k_planner.cpp — choose_rank_k_ranks: the triangle-block scheme of a
// syrk / herk over ranks, chosen by modelled time under the memory per rank.
#include <prism/bounds.hpp>
#include <prism/error.hpp>
#include <prism/rank_k_model.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>

namespace prism {

namespace {

constexpr std::size_t no_cap = std::numeric_limits<std::size_t>::max();

// The closed-form estimate that ranks schemes before the exact count: with c row blocks,
// G slices and a cover of size s, a rank reads s row blocks of its slice of which it owns
// about one, computes 1/c of the triangle and gets G - 1 partials of its 1/G share of it.
// E.g. n = k = 4096, G = 2, c = 3 (s = 2): A (2 - 1) 4096 * 4096 / 6 = 2.8M elements,
// C (1/2) 4096^2 / 6 = 1.4M.
struct estimate {
  rank_k_scheme scheme;
  double words = 0, flops = 0, seconds = 0, floor_bytes = 0;
};

estimate estimate_of(const problem& p, int G, int c, double F, double B) {
  const double n = double(p.n), k = double(p.k), elem = double(element_size(p.type));
  const double s = double(difference_cover(c).size());
  const double a = (s - 1) * (n / c) * (k / G);
  const double tri = n * (n + 1) / 2 / c;
  const double cw = (G - 1) * tri / G;
  estimate e;
  e.scheme = rank_k_scheme{G, c, 1};
  e.words = a + cw;
  e.flops = p.flops() / (double(G) * c);
  e.seconds = e.flops / F + e.words * elem / B;
  // Least memory with many phases: owned pieces, C blocks, C staging.
  e.floor_bytes = elem * ((n * k + n * (n + 1) / 2) / (double(G) * c) + tri * 2 + 2 * cw);
  return e;
}

rank_k_candidate score(const problem& p, const rank_k_scheme& s, double F, double B, std::size_t memory) {
  const rank_k_model m(p, s);
  rank_k_candidate c;
  c.scheme = s;
  c.max_received = m.max_received();
  c.max_flops = m.max_flops();
  c.peak_bytes = m.max_peak_bytes();
  c.seconds = c.max_flops / F + double(c.max_received) * double(element_size(p.type)) / B;
  c.fits = c.peak_bytes <= memory;
  return c;
}

// The fewest phases (1, 2, 4, ... at most 256 and the slice length) with which scheme s0
// fits `memory`, or, when none does, the phase count of least peak (more phases shrink
// only A's blocks and staging, so the peak falls until they are one column). Every peak
// seen lowers `least`.
rank_k_candidate fewest_phases(const problem& p, const rank_k_scheme& s0, double F, double B, std::size_t memory,
                               rank_k_candidate& least) {
  const std::int64_t most = std::min<std::int64_t>(256, std::max<std::int64_t>(1, p.k / s0.groups));
  rank_k_candidate best;
  for (std::int64_t q = 1; q <= most; q *= 2) {
    rank_k_scheme s = s0;
    s.phases = int(q);
    const rank_k_candidate c = score(p, s, F, B, memory);
    if (least.max_flops == 0 || c.peak_bytes < least.peak_bytes) least = c;
    if (q > 1 && c.peak_bytes >= best.peak_bytes) break;
    best = c;
    if (c.fits) break;
  }
  return best;
}

std::string mb(std::size_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MB", double(bytes) / 1e6);
  return b;
}

// Groups of at most this many ranks: a rank of a group of c reads about sqrt(2c) row blocks
// in as many messages, each cell with as many holders, so exact scoring costs P' c per
// scheme; beyond 1,024 the blocks are small and the messages many, and k slices serve.
constexpr int most_group_ranks = 1024;

// The schemes worth an exact score: every (G, c) with G c <= P, G <= k, c <= n and
// c <= most_group_ranks is estimated (O(P log P)); the fastest few and the leanest few are kept.
std::vector<rank_k_scheme> shortlist(const problem& p, int P, double F, double B) {
  std::vector<estimate> all;
  const int most_c = int(std::min<std::int64_t>({P, std::max<std::int64_t>(1, p.n), most_group_ranks}));
  for (int c = 1; c <= most_c; ++c)
    for (int G = 1; G * c <= P && G <= std::max<std::int64_t>(1, p.k); ++G)
      if (c == 1 || c % 2 == 1 || p.k >= 2 * std::int64_t(G)) all.push_back(estimate_of(p, G, c, F, B));
  const std::size_t top = P <= 1024 ? 10 : 4;
  std::vector<rank_k_scheme> pick;
  auto take = [&](auto order, std::size_t count) {
    count = std::min(count, all.size());
    std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(count), all.end(), order);
    for (std::size_t i = 0; i < count; ++i)
      if (std::find(pick.begin(), pick.end(), all[i].scheme) == pick.end()) pick.push_back(all[i].scheme);
  };
  take([](const estimate& a, const estimate& b) { return a.seconds < b.seconds; }, top);
  take([](const estimate& a, const estimate& b) { return a.floor_bytes < b.floor_bytes; }, top / 2);
  return pick;
}

// One run of the planner: every shortlisted scheme with its fewest fitting phases (or, for
// least_memory and when none fits, its leanest), then the least modelled time that fits.
rank_k_choice search(const problem& p, const context& ctx, bool least_memory) {
  if (p.op == operation::gemm) throw plan_error("choose_rank_k_ranks: a gemm problem (use choose_ranks)");
  if (p.n < 0 || p.k < 0) throw plan_error("problem sizes must be >= 0");
  rank_k_choice out;
  out.source = p;
  const int P = ctx.ranks();
  out.ranks_given = P;
  out.memory = least_memory ? 0 : ctx.max_memory() != no_cap ? ctx.max_memory() : default_rank_memory(ctx.ranks_per_node());
  out.flop_rate = ctx.rank_flops();
  out.bandwidth = ctx.rank_bandwidth();
  rank_k_candidate least;
  for (const rank_k_scheme& s : shortlist(p, P, out.flop_rate, out.bandwidth))
    out.candidates.push_back(fewest_phases(p, s, out.flop_rate, out.bandwidth, out.memory, least));
  out.least_footprint = least.peak_bytes;
  if (least_memory) {
    least.fits = true;
    out.candidates.insert(out.candidates.begin(), least);
    out.chosen = least.scheme;
    out.memory = least.peak_bytes;
    out.reason = "least footprint of the schemes weighed: " + std::to_string(least.peak_bytes) + " bytes per rank (" +
                 least.scheme.to_string() + ")";
    return out;
  }
  std::stable_sort(out.candidates.begin(), out.candidates.end(), [](const rank_k_candidate& a, const rank_k_candidate& b) {
    if (a.fits != b.fits) return a.fits;
    return a.fits ? a.seconds < b.seconds : a.peak_bytes < b.peak_bytes;
  });
  if (out.candidates.empty() || !out.candidates[0].fits)
    throw plan_error("no rank-k scheme over " + std::to_string(P) + " ranks fits " + std::to_string(out.memory) +
                     " bytes per rank (the least footprint: " + std::to_string(least.peak_bytes) + " bytes, " +
                     std::to_string(least.peak_bytes - std::min(least.peak_bytes, out.memory)) + " more, by scheme " +
                     least.scheme.to_string() + ")");
  out.chosen = out.candidates[0].scheme;
  const rank_k_candidate& w = out.candidates[0];
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f ms", w.seconds * 1e3);
  out.reason = std::string("least modelled time (") + ms + ") of " + std::to_string(out.candidates.size()) +
               " schemes scored exactly; peak " + mb(w.peak_bytes) + " of " + mb(out.memory) +
               (w.scheme.phases > 1 ? ", " + std::to_string(w.scheme.phases) + " phases to fit" : "");
  return out;
}

}  // namespace

rank_k_choice choose_rank_k_ranks(const problem& p, const context& ctx) { return search(p, ctx, false); }

rank_k_choice least_footprint_rank_k(const problem& p, const context& ctx) { return search(p, ctx, true); }

void print_rank_k_report(std::ostream& os, const rank_k_choice& choice) {
  const problem& pr = choice.source;
  const rank_k_model m(pr, choice.chosen);
  const double elem = double(element_size(pr.type));
  const double bound = bounds::syrk_parallel_io_minus_owned(pr.n, pr.k, choice.ranks_given);
  char line[512];
  auto mbs = [](double bytes) { return bytes / 1e6; };
  std::snprintf(line, sizeof line, "# rank level: %d ranks given, %d used; scheme %s\n", choice.ranks_given, m.ranks(),
                choice.chosen.to_string().c_str());
  os << line << "# why: " << choice.reason << '\n';
  std::snprintf(line, sizeof line,
                "# predicted per rank: received max %.3f MB, mean %.3f MB; SYRK lower bound %.3f MB (%d ranks, "
                "minus owned); ratio %.3f; peak memory %.3f MB of %.3f MB\n",
                mbs(double(m.max_received()) * elem), mbs(m.mean_received() * elem), mbs(bound * elem),
                choice.ranks_given, bound > 0 ? double(m.max_received()) / bound : 0.0, mbs(double(m.max_peak_bytes())),
                mbs(double(choice.memory)));
  os << line;
  os << "# schemes scored exactly, best first:\n";
  std::snprintf(line, sizeof line, "#   %5s  %-28s %10s %10s %10s  %s\n", "ranks", "scheme", "max MB", "peak MB",
                "model ms", "fits");
  os << line;
  for (const rank_k_candidate& c : choice.candidates) {
    std::snprintf(line, sizeof line, "#   %5d  %-28s %10.3f %10.3f %10.3f  %s\n", c.scheme.ranks(),
                  c.scheme.to_string().c_str(), mbs(double(c.max_received) * elem), mbs(double(c.peak_bytes)),
                  c.seconds * 1e3, c.fits ? "yes" : "no");
    os << line;
  }
}

}  // namespace prism
