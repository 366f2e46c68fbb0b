// lib/ranks/rank_k_planner.cpp — choose_rank_k_ranks: the triangle-block scheme of a
// syrk / herk over ranks, chosen by modelled time under the memory per rank.
#include <prism/bounds.hpp>
#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/rank_model.hpp>

#include "covers.hpp"
#include "rank_planner.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <set>
#include <string>

namespace prism {

namespace {

// The closed-form estimate that ranks schemes before the exact count. Per part, with its
// share kappa of k, c ranks a group, G groups and a cover worth r row blocks of n/c (a
// difference cover |D|; the star 2.4 of 4: its ranks read 0.6 n), a rank reads r - 1
// blocks it does not own over its slice, k kappa / G; each C element gets a partial from
// every group of every part, one of which it stays with. E.g. n = k = 4096, one part of
// G = 2, c = 3 (r = 2): A (2 - 1) 4096/3 * 4096/2 = 2.8M elements, C (2 - 1) (4096^2/2) / 6
// = 1.4M.
struct estimate {
  rank_k_scheme scheme;
  double seconds = 0, floor_bytes = 0;
};

estimate estimate_of(const problem& p, const rank_k_scheme& s, double F, double B) {
  const double n = double(p.n), k = double(p.k), elem = double(element_size(p.type)), P = double(s.ranks());
  const double tri = n * (n + 1) / 2;
  double groups = 0, most_a = 0, most_block = 0;
  for (const rank_k_part& x : s.parts) {
    const double c = double(x.group_ranks), per_role = double(x.ranks()) / c;  // G, or the mean of role_ranks
    const double r = x.cover == rank_k_cover::star   ? 2.4
                     : x.cover == rank_k_cover::nest ? 1.6
                                                     : double(ranks::difference_cover(x.group_ranks).size());
    most_a = std::max(most_a, (r - 1) * (n / c) * (k * double(x.ranks()) / P / per_role));
    most_block = std::max(most_block, tri / c);
    groups += per_role;
  }
  const double cw = (groups - 1) * tri / P;
  // Least memory with many phases: owned pieces, C blocks, C staging.
  return estimate{s, p.flops() / P / F + (most_a + cw) * elem / B, elem * ((n * k + tri) / P + most_block * 2 + 2 * cw)};
}

// Whether the model can build scheme s for p: every part's share of k holds its slices
// (twice over for an even difference group, which halves them), a difference group has
// at most n row blocks, and a star's six atoms are not empty.
bool buildable(const problem& p, const rank_k_scheme& s) {
  const std::int64_t P = s.ranks();
  std::int64_t rank0 = 0;
  for (const rank_k_part& x : s.parts) {
    const std::int64_t len = p.k * (rank0 + x.ranks()) / P - p.k * rank0 / P;
    rank0 += x.ranks();
    const bool halves = x.cover == rank_k_cover::difference && x.group_ranks > 1 && x.group_ranks % 2 == 0;
    int runs = x.groups;
    for (int m : x.role_ranks) runs = std::max(runs, m);
    if (std::int64_t(runs) > std::max<std::int64_t>(1, len) || (halves && len < 2 * std::int64_t(runs))) return false;
    // A star or a nest sizes its row blocks by measure: some rows each.
    if (x.cover != rank_k_cover::difference ? p.n < 8 * std::int64_t(x.group_ranks)
                                            : std::int64_t(x.group_ranks) > std::max<std::int64_t>(1, p.n))
      return false;
  }
  return true;
}

// Scheme s's exact cost (prism::rank_model), its peak against `memory`.
rank_k_candidate score(const problem& p, const rank_k_scheme& s, double F, double B, std::size_t memory) {
  const rank_model m(p, s);
  rank_k_candidate c{s, m.max_received(), m.max_flops(), m.max_peak_bytes()};
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
  // A slice of the part with the shortest ones bounds the phases.
  std::int64_t shortest = std::max<std::int64_t>(1, p.k);
  for (std::size_t x = 0, rank0 = 0; x < s0.parts.size(); rank0 += std::size_t(s0.parts[x].ranks()), ++x) {
    const std::int64_t P = s0.ranks(), r0 = std::int64_t(rank0), r1 = r0 + s0.parts[x].ranks();
    shortest = std::min(shortest, (p.k * r1 / P - p.k * r0 / P) / s0.parts[x].groups);
  }
  const std::int64_t most = std::min<std::int64_t>(256, std::max<std::int64_t>(1, shortest));
  rank_k_candidate best;
  for (std::int64_t q = 1; q <= most; q *= 2) {
    rank_k_candidate c;
    try {
      c = score(p, rank_k_scheme(s0.parts, int(q)), F, B, memory);
    } catch (const plan_error&) {
      if (q == 1) throw;
      break;  // no more phases for this scheme (roles of unequal ranks run in one)
    }
    if (least.max_flops == 0 || c.peak_bytes < least.peak_bytes) least = c;
    if (q > 1 && c.peak_bytes >= best.peak_bytes) break;
    best = c;
    if (c.fits) break;
  }
  return best;
}

std::string mb(std::size_t bytes) { return ranks::format("%.1f MB", double(bytes) / 1e6); }

// Groups of at most this many ranks of any cover (a rank of a group of c holds c/2 blocks of
// C and reads about 1.4 sqrt(c) row blocks); beyond, only the projective planes (q + 1).
constexpr int most_group_ranks = 1024;

// Schemes of several parts, of roles of uneven ranks and nests are weighed up to this many
// ranks: on more, one part's groups come close to the bound (a perfect difference set, or
// k slices of one).
constexpr int most_mixed_ranks = 64;

// Even covers and planes of ranks per role by work are weighed where their exact score walks
// at most this many A cells, P |D|^2: 10^5 ranks on c = 1893, q + 1 = 44, in about 7 s.
constexpr double most_score_steps = 2e8;

// The parts worth weighing on P ranks (shortlist's menu): every cover in k slices, the
// projective planes beyond, every rank on a plane, and on few ranks uneven roles and nests.
std::vector<rank_k_part> parts_menu(const problem& p, int P) {
  const int most_c = int(std::min<std::int64_t>({P, std::max<std::int64_t>(1, p.n), most_group_ranks}));
  std::vector<rank_k_part> menu;
  // G k slices of c ranks: every G up to P / c (and k) on few ranks, where parts of a few
  // slices combine; on more, the top four (fewer leave more ranks idle, so more flops each).
  for (int c = 1; c <= most_c; ++c) {
    // An even cover has no role tables (its d = c/2 blocks have two computers), so its exact
    // score takes every rank's cells one by one: on 10^6 ranks, k975 x tbd1024 (45 row
    // blocks a rank) took two minutes. Only where that stays within the budget.
    if (c > 2 && c % 2 == 0 && double(P) * std::pow(double(ranks::difference_cover(c).size()), 2) > most_score_steps) continue;
    const int top = int(std::min<std::int64_t>(P / c, std::max<std::int64_t>(1, p.k)));
    for (int G = P <= most_mixed_ranks ? 1 : std::max(1, top - 3); G <= top; ++G) menu.push_back({G, c, rank_k_cover::difference, {}});
  }
  // Beyond most_group_ranks, the projective planes alone, as k slices: at P = 10^6 on 65536^2
  // the least volume wants c near P^(2/3) = 10^4, e.g. k98 x tbd10101 (q = 100 is no prime
  // power; q = 97: c = 9507, k105).
  for (std::int64_t q = 2; q * q + q + 1 <= std::min<std::int64_t>(P, p.n); ++q) {
    const int c = int(q * q + q + 1);
    if (c <= most_group_ranks || ranks::difference_cover(c).size() != std::size_t(q + 1)) continue;
    menu.push_back({int(std::min<std::int64_t>(P / c, std::max<std::int64_t>(1, p.k))), c, rank_k_cover::difference, {}});
  }
  for (int G = 1; 4 * G <= P; ++G) menu.push_back({G, 4, rank_k_cover::star, {}});
  // c roles of R ranks, the first R mod c with one more (R = 16, c = 7: 3, 3, 2, 2, 2, 2, 2).
  const auto spread = [](int c, int R) { std::vector<int> m(std::size_t(c), R / c); std::fill_n(m.begin(), R % c, R / c + 1); return m; };
  if (P <= most_mixed_ranks) {
    // Roles of uneven ranks: an odd cover of c <= 13 on R ranks, c < R < 4c, not a multiple
    // of c, spread; and the nest with 1-4 ranks per role.
    for (int c = 3; c <= 13 && c <= most_c; c += 2)
      for (int R = c + 1; R < 4 * c && R <= P; ++R)
        if (R % c != 0) menu.push_back({1, c, rank_k_cover::difference, spread(c, R)});
    // The star with m0 centre ranks and m on each leaf role, m0 != m (equal is k slices of
    // it) and m0 <= 3m (more centre ranks shrink the leaves' atoms past use): e.g. P = 9,
    // 3, 2, 2, 2 ranks.
    for (int m = 1; m <= 4; ++m)
      for (int m0 = 1; m0 <= 3 * m && m0 + 3 * m <= P; ++m0)
        if (m0 != m) menu.push_back({1, 4, rank_k_cover::star, {m0, m, m, m}});
    for (int outer = 1; outer <= 4; ++outer)
      for (int inner = 1; inner <= 4 && outer + inner <= P; ++inner) menu.push_back({1, 2, rank_k_cover::nest, {outer, inner}});
  }
  // Every rank on one projective plane (q = 1: c = 3), floor(P/c) or ceil(P/c) ranks a role,
  // where k slices of it would leave ranks idle (P = 1024: tbd91[12*23,11*68], 1.04x the SYRK
  // bound on 4096^2, where k11 x tbd91 idles 23 ranks and k12 x tbd85 reads 13 of 85 blocks,
  // 1.3x). Up to 100 ranks a role: beyond, k slices idle under 1%, and uneven roles are
  // scored rank by rank (10^6 ranks: a minute).
  for (int q = 1; q * q + q + 1 <= most_c && q * q + q + 1 < P; ++q) {
    const int c = q * q + q + 1;
    if (P % c == 0 || P / c > 100 || ranks::difference_cover(c).size() != std::size_t(q + 1)) continue;
    menu.push_back({1, c, rank_k_cover::difference, spread(c, P)});
  }
  // Every rank on a plane, each role's ranks by its work on equal row blocks (work_role_ranks):
  // 8 or more ranks a role even out blocks of a few rows (4096 rows on c = 651, 16,384 ranks:
  // the busiest rank 1.02 times the mean flops, k25 x tbd651 1.06), within most_score_steps.
  for (int q = 1; q * q + q + 1 <= std::min<std::int64_t>(P / 8, p.n); ++q) {
    const int c = q * q + q + 1;
    const double steps = double(P) * double(q + 1) * double(q + 1);
    if (steps > most_score_steps) break;  // more steps for every larger q
    if (ranks::difference_cover(c).size() != std::size_t(q + 1)) continue;
    const std::vector<int> m = ranks::work_role_ranks(p.n, p.k, c, P);
    // All alike (equal work, P a multiple of c) is k slices of the plane, already weighed.
    if (!m.empty() && std::any_of(m.begin(), m.end(), [&](int v) { return v != m[0]; })) menu.push_back({1, c, rank_k_cover::difference, m});
  }
  return menu;
}

// The schemes worth an exact score: each part of parts_menu alone and, up to most_mixed_ranks
// ranks, every two of them and every three one-slice ones of c <= 16 without ranks per role
// that leave at most one rank idle (e.g. P = 7: star4 + tbd3, tbd5 + k2, ...; P = 8:
// star4[2,1,1,1] + tbd3). Each is estimated; the fastest few and the leanest few are kept.
std::vector<rank_k_scheme> shortlist(const problem& p, int P, double F, double B) {
  std::vector<estimate> all;
  std::set<std::string> seen;  // schemes already added
  auto add = [&](rank_k_scheme s) {
    // Parts of one cover and c without ranks per role are one part of their slices together
    // (each slice is k / P' deep either way): "k5 + k2" is "k7", "star4 + star4" "k2 x star4".
    std::vector<rank_k_part> merged;
    for (const rank_k_part& x : s.parts) {
      auto same = std::find_if(merged.begin(), merged.end(), [&](const rank_k_part& y) {
        return x.role_ranks.empty() && y.role_ranks.empty() && x.cover == y.cover && x.group_ranks == y.group_ranks;
      });
      if (same == merged.end()) merged.push_back(x);
      else same->groups += x.groups;
    }
    s.parts = std::move(merged);
    // One order of the parts: the largest first (their order moves no word).
    std::stable_sort(s.parts.begin(), s.parts.end(), [](const rank_k_part& a, const rank_k_part& b) {
      if (a.ranks() != b.ranks()) return a.ranks() > b.ranks();
      if (a.cover != b.cover) return a.cover < b.cover;
      return a.group_ranks > b.group_ranks;
    });
    if (buildable(p, s) && seen.insert(s.to_string()).second) all.push_back(estimate_of(p, s, F, B));
  };
  const std::vector<rank_k_part> menu = parts_menu(p, P);
  for (const rank_k_part& x : menu) add(rank_k_scheme({x}));
  if (P <= most_mixed_ranks) {
    for (std::size_t i = 0; i < menu.size(); ++i)
      for (std::size_t j = i; j < menu.size(); ++j) {
        const int r = menu[i].ranks() + menu[j].ranks();
        if (r <= P && r >= P - 1) add(rank_k_scheme({menu[i], menu[j]}));
      }
    std::vector<rank_k_part> single;
    for (const rank_k_part& x : menu)
      if (x.groups == 1 && x.group_ranks <= 16 && x.role_ranks.empty()) single.push_back(x);
    for (std::size_t i = 0; i < single.size(); ++i)
      for (std::size_t j = i; j < single.size(); ++j)
        for (std::size_t l = j; l < single.size(); ++l) {
          const int r = single[i].ranks() + single[j].ranks() + single[l].ranks();
          if (r <= P && r >= P - 1) add(rank_k_scheme({single[i], single[j], single[l]}));
        }
  }
  const std::size_t top = P <= most_mixed_ranks ? 16 : P <= 1024 ? 10 : 4;
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
  if (element_size(p.type) == 0) throw plan_error("the type must be s, d, c or z");
  ranks::check_countable(p, ctx.ranks(), 1);
  rank_k_choice out;
  out.source = p;
  const int P = ctx.ranks();
  out.ranks_given = P;
  out.memory = least_memory ? 0 : ranks::rank_memory(ctx);
  out.flop_rate = ctx.rank_flops();
  out.bandwidth = ctx.rank_bandwidth();
  rank_k_candidate least;
  for (const rank_k_scheme& s : shortlist(p, P, out.flop_rate, out.bandwidth)) {
    try {
      out.candidates.push_back(fewest_phases(p, s, out.flop_rate, out.bandwidth, out.memory, least));
    } catch (const plan_error&) {
      // A scheme the model cannot build for this shape (a star whose atoms come out
      // empty): not a candidate.
    }
  }
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
    throw plan_error("no rank-k scheme over " + std::to_string(P) + (P == 1 ? " rank fits " : " ranks fits ") + std::to_string(out.memory) +
                     " bytes per rank (the least footprint: " + std::to_string(least.peak_bytes) + " bytes, " +
                     std::to_string(least.peak_bytes - std::min(least.peak_bytes, out.memory)) + " more, by scheme " +
                     least.scheme.to_string() + ")");
  out.chosen = out.candidates[0].scheme;
  const rank_k_candidate& w = out.candidates[0];
  out.reason = ranks::format("least modelled time (%.3f ms) of ", w.seconds * 1e3) + std::to_string(out.candidates.size()) +
               " schemes scored exactly; peak " + mb(w.peak_bytes) + " of " + mb(out.memory) +
               (w.scheme.phases > 1 ? ", " + std::to_string(w.scheme.phases) + " phases to fit" : "");
  return out;
}

}  // namespace

rank_k_choice choose_rank_k_ranks(const problem& p, const context& ctx) { return search(p, ctx, false); }

rank_k_choice least_footprint_rank_k(const problem& p, const context& ctx) { return search(p, ctx, true); }

void print_rank_k_report(std::ostream& os, const rank_k_choice& choice) {
  const problem& pr = choice.source;
  const rank_model m(pr, choice.chosen);
  const double elem = double(element_size(pr.type));
  const double bound = bounds::syrk_parallel_io_minus_owned(pr.n, pr.k, choice.ranks_given);
  auto mbs = [](double bytes) { return bytes / 1e6; };
  os << "# rank level: " << choice.ranks_given << " ranks given, " << m.ranks() << " used; scheme "
     << choice.chosen.to_string() << '\n' << "# why: " << choice.reason << '\n';
  // The bound holds for operands spread over every rank given; ranks that sit out hold none.
  const std::string spread =
      m.ranks() < choice.ranks_given ? ranks::format(": for A and C spread over all; the %d used hold them", m.ranks()) : "";
  os << ranks::format("# predicted per rank: received max %.3f MB, mean %.3f MB; SYRK lower bound %.3f MB (%d ranks, "
                      "minus owned%s); ratio %.3f; peak memory %.3f MB of %.3f MB; max/mean flops %.4f\n",
                      mbs(double(m.max_received()) * elem), mbs(m.mean_received() * elem), mbs(bound * elem),
                      choice.ranks_given, spread.c_str(), bound > 0 ? double(m.max_received()) / bound : 0.0,
                      mbs(double(m.max_peak_bytes())), mbs(double(choice.memory)),
                      pr.flops() > 0 ? m.max_flops() * m.ranks() / pr.flops() : 1.0);
  os << "# schemes scored exactly, best first:\n";
  os << ranks::format("#   %5s  %-40s %10s %10s %10s  %s\n", "ranks", "scheme", "max MB", "peak MB", "model ms", "fits");
  for (const rank_k_candidate& c : choice.candidates)
    os << ranks::format("#   %5d  %-40s %10.3f %10.3f %10.3f  %s\n", c.scheme.ranks(), c.scheme.to_string().c_str(),
                        mbs(double(c.max_received) * elem), mbs(double(c.peak_bytes)), c.seconds * 1e3,
                        c.fits ? "yes" : "no");
}

}  // namespace prism
