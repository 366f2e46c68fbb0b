// lib/ranks/triangle_schedule.cpp — a rank-k scheme as a schedule (triangle_schedule.hpp):
// its parts' geometry, tasks, cells and ownership, and a plane's counts in closed form.
#include "triangle_schedule.hpp"

#include "covers.hpp"

#include <prism/error.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace prism::ranks {

namespace {

// A role's ownership weight before balancing (balance_ownership scales it).
constexpr std::int64_t unit_weight = 1 << 16;

// The last j < count with floor(j len / count) <= at (len 0 taken as 1), that is j len < (at + 1)
// count. E.g. len = 10, count = 3 (starts 0, 3, 6): at 6 is (7 * 3 - 1) / 10 = 2, at 5 (6 * 3 - 1) / 10 = 1.
std::int64_t slot(std::int64_t at, std::int64_t len, std::int64_t count) {
  return std::min(count - 1, ((at + 1) * count - 1) / std::max<std::int64_t>(1, len));
}

// How a role of a difference cover D reaches atom p + a, for each a in D: the diagonal
// (a = 0) and any pair of d < c/2 read it over the whole run (whole), the pair of d = c/2
// only over one half of it (half: that pair's a, else -1). E.g. c = 4, D = {0, 1, 2}: d = 1
// is (0, 1), d = 2 (0, 2): a = 0, 1 whole, a = 2 half with 0.
void reach_tables(const std::vector<int>& D, const std::vector<std::pair<int, int>>& pair_of, int c, std::vector<char>& whole,
                  std::vector<int>& half) {
  whole.assign(D.size(), 0);
  half.assign(D.size(), -1);
  for (std::size_t e = 0; e < D.size(); ++e) {
    const int a = D[e];
    whole[e] = a == 0;
    for (int d = 1; d <= c / 2; ++d) {
      const auto [pa, pb] = pair_of[std::size_t(d)];
      if (pa != a && pb != a) continue;
      if (2 * d != c) whole[e] = 1;
      else half[e] = pa;
    }
  }
}

// The rank order of a part of uneven roles as tables: ranks go run by run, role by role
// within a run, so with runs {3, 2, 1} run 0 is roles 0, 1, 2 (local ranks 0-2), run 1
// roles 0, 1 (3-4) and run 2 role 0 (5): place = (0,0) (0,1) (0,2) (1,0) (1,1) (2,0),
// first = 0, 3, 5, local = 0 3 5 | 1 4 | 2 (role 0's runs, role 1's, role 2's).
void index_runs(const std::vector<int>& runs, std::vector<std::pair<int, int>>& place, std::vector<int>& first, std::vector<int>& local) {
  first.assign(runs.size(), 0);
  int total = 0;
  for (std::size_t q = 0; q < runs.size(); ++q) first[q] = total, total += runs[q];
  local.assign(std::size_t(total), 0);
  place.clear();
  const int most = *std::max_element(runs.begin(), runs.end());
  for (int j = 0; j < most; ++j)
    for (std::size_t q = 0; q < runs.size(); ++q)
      if (runs[q] > j) {
        local[std::size_t(first[q] + j)] = int(place.size());
        place.emplace_back(j, int(q));
      }
}

}  // namespace

triangle_schedule::triangle_schedule(const problem& p, const rank_k_scheme& s) : p_(p), s_(s) {
  build_parts();
  build_cells();
  index_c_chunks();
  balance_ownership();
}

// Each part where it sits: its ranks, its share of k, its roles' runs and its atoms.
void triangle_schedule::build_parts() {
  if (p_.op == operation::gemm) throw plan_error("a gemm problem has no triangle (use its plan)");
  if (s_.parts.empty() || s_.phases < 1) throw plan_error("rank-k scheme: a scheme needs a part and phases >= 1");
  check_countable(p_, s_.ranks(), s_.phases);
  for (const rank_k_part& x : s_.parts) {
    if (x.groups < 1 || x.group_ranks < 1) throw plan_error("rank-k scheme: a scheme needs groups, ranks and phases >= 1");
    for (int m : x.role_ranks)
      if (m < 1) throw plan_error("rank-k scheme: every role needs a rank");
  }
  const std::int64_t P = s_.ranks();
  int rank0 = 0;
  for (const rank_k_part& x : s_.parts) {
    part_geometry g;
    g.part = x;
    g.rank0 = rank0;
    // Shares of k in proportion to ranks, e.g. k = 4096 over 4 + 3 ranks: [0, 2340), [2340, 4096).
    g.k0 = p_.k * rank0 / P;
    g.k1 = p_.k * (rank0 + x.ranks()) / P;
    rank0 += x.ranks();
    const std::int64_t len = g.k1 - g.k0, c = x.group_ranks;
    const auto name = [&] { return "rank-k scheme: part " + std::to_string(&x - s_.parts.data()) + ": "; };
    if (x.role_ranks.empty()) {
      if (x.cover == rank_k_cover::nest) throw plan_error(name() + "a nest needs its ranks per role");
      g.runs.assign(std::size_t(c), x.groups);
    } else {
      if (std::int64_t(x.role_ranks.size()) != c)
        throw plan_error(name() + std::to_string(x.role_ranks.size()) + " ranks per role for " + std::to_string(c) + " roles");
      if (x.cover == rank_k_cover::difference && c % 2 == 0)
        throw plan_error(name() + "ranks per role need an odd difference cover, a star or a nest");
      if (x.groups != 1) throw plan_error(name() + "k slices and ranks per role together");
      g.runs = x.role_ranks;
      g.even = std::all_of(g.runs.begin(), g.runs.end(), [&](int m) { return m == g.runs[0]; });
      if (!g.even) index_runs(g.runs, g.place_table, g.role_first, g.local_of);
      if (!g.even && s_.phases > 1) throw plan_error(name() + "roles of unequal ranks run in one phase");
    }
    const int most_runs = *std::max_element(g.runs.begin(), g.runs.end());
    if (std::int64_t(most_runs) > std::max<std::int64_t>(1, len))
      throw plan_error("rank-k scheme: " + std::to_string(most_runs) + " k slices of k = " + std::to_string(len));
    if (std::int64_t(s_.phases) > std::max<std::int64_t>(1, len / most_runs))
      throw plan_error("rank-k scheme: " + std::to_string(s_.phases) + " phases of a slice of " + std::to_string(len / most_runs));
    if (x.cover == rank_k_cover::star) {
      if (c != 4) throw plan_error("rank-k scheme: a star has 4 ranks, not " + std::to_string(c));
      if (g.runs[1] != g.runs[2] || g.runs[1] != g.runs[3] || g.runs[0] >= 6 * g.runs[1])
        throw plan_error(name() + "a star's three leaf roles need as many ranks each, and its centre fewer than 6 times that");
      g.atoms = star_atoms(p_.n, g.runs[0], g.runs[1]);
    } else if (x.cover == rank_k_cover::nest) {
      if (c != 2) throw plan_error("rank-k scheme: a nest has 2 roles, not " + std::to_string(c));
      // Outer rows [0, n - s), inner [n - s, n) with s = n sqrt(m_I / (m_O + m_I)): the outer
      // role's 1 - sigma^2 of the pairs and the inner's sigma^2 in proportion to their ranks.
      const double sigma = std::sqrt(double(g.runs[1]) / double(g.runs[0] + g.runs[1]));
      g.atoms = {0, p_.n - std::llround(sigma * double(p_.n)), p_.n};
    } else {
      if (c > std::max<std::int64_t>(1, p_.n))
        throw plan_error("rank-k scheme: " + std::to_string(c) + " row blocks of n = " + std::to_string(p_.n));
      if (c > 1 && c % 2 == 0 && len < 2 * std::int64_t(x.groups))
        throw plan_error("rank-k scheme: an even group of " + std::to_string(c) + " ranks halves its slice, so it needs k >= 2 x " +
                         std::to_string(x.groups) + " slices");
      g.cover = difference_cover(int(c));
      g.pair_of = cover_pairs(g.cover, int(c));
      reach_tables(g.cover, g.pair_of, int(c), g.reach_whole, g.reach_half);
      g.atoms = balanced_atoms(p_.n, g.cover, g.pair_of, int(c));
      if (!g.even) g.atoms = uneven_atoms(p_.n, len, g.pair_of, g.runs, std::move(g.atoms));
    }
    for (std::size_t a = 0; a + 1 < g.atoms.size(); ++a)
      if (g.atoms[a + 1] <= g.atoms[a] && c > 1)
        throw plan_error("rank-k scheme: part " + part_text(x) + " has an empty row block on n = " + std::to_string(p_.n));
    g.a_weight.assign(std::size_t(c), unit_weight);
    g.c_weight.assign(std::size_t(c), unit_weight);
    parts_.push_back(std::move(g));
  }
}

// Row blocks, the k cuts of the A cells (every run's ends, its half for an even cover, its
// chunks), and each atom's readers.
void triangle_schedule::build_cells() {
  for (const part_geometry& g : parts_) bounds_.insert(bounds_.end(), g.atoms.begin(), g.atoms.end());
  sort_unique(bounds_);
  kcuts_ = {0, p_.k};
  for (part_geometry& g : parts_) {
    for (std::int64_t row : g.atoms)
      g.first_block.push_back(int(std::lower_bound(bounds_.begin(), bounds_.end(), row) - bounds_.begin()));
    const bool halves = g.part.cover == rank_k_cover::difference && g.part.group_ranks % 2 == 0;  // else [1] is [0]
    for (int h = 0; h < (halves ? 2 : 1); ++h)
      for (std::size_t a = 0; a + 1 < g.atoms.size(); ++a) g.readers[h].push_back(role_readers(g, int(a), h == 0));
    std::vector<int> counts = g.runs;  // each distinct count of runs cuts the part's k its own way
    sort_unique(counts);
    for (int m : counts)
      for (int j = 0; j < m; ++j) {
        const auto [K0, K1] = run_columns(g, m, j);
        kcuts_.push_back(K0);
        if (halves) kcuts_.push_back(K0 + (K1 - K0) / 2);
        for (int q = 1; q < s_.phases; ++q) kcuts_.push_back(K0 + q * (K1 - K0) / s_.phases);
      }
  }
  sort_unique(kcuts_);
}

void triangle_schedule::balance_ownership() {
  if (parts_.size() == 1 && parts_[0].part.cover == rank_k_cover::difference && parts_[0].even) return;
  struct place {
    std::size_t part;
    int role, rank, count;  // rank: the role's first; count: the ranks it stands for
  };
  std::vector<place> places;
  for (std::size_t x = 0; x < parts_.size(); ++x)
    for (int role = 0; role < parts_[x].part.group_ranks; ++role)
      places.push_back({x, role, rank_of(parts_[x], role, 0), parts_[x].runs[std::size_t(role)]});
  // What each place's first rank receives under the current weights.
  auto receipts = [&] {
    std::vector<double> got;
    for (const place& pl : places) {
      const rank_tally t = count(pl.rank);
      got.push_back(double(t.received[0] + t.received[1] + t.received[2]));
    }
    return got;
  };
  std::vector<double> got = receipts();
  double mean = 0;
  for (std::size_t i = 0; i < places.size(); ++i) mean += got[i] * places[i].count;
  mean /= double(ranks());
  if (!(mean > 0)) return;
  using weights = std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>;
  auto current = [&] {
    std::vector<weights> w;
    for (const part_geometry& g : parts_) w.emplace_back(g.a_weight, g.c_weight);
    return w;
  };
  std::vector<weights> best = current();
  std::vector<double> best_got = got;
  double best_max = *std::max_element(got.begin(), got.end());
  // Each round scales from the best weights yet by (received / mean)^step: a round that
  // lowers the busiest rank doubles the step (up to 4), one that does not halves it.
  double step = 0.5;
  for (int round = 0; round < 60 && best_max > mean * 1.0005 && step > 1.0 / 64; ++round) {
    for (std::size_t x = 0; x < parts_.size(); ++x) std::tie(parts_[x].a_weight, parts_[x].c_weight) = best[x];
    for (std::size_t i = 0; i < places.size(); ++i) {
      part_geometry& g = parts_[places[i].part];
      const double f = std::pow(std::max(best_got[i], 1.0) / mean, step);
      auto scale = [](std::int64_t& w, double by) {
        w = std::clamp<std::int64_t>(std::llround(double(w) * by), 1, std::int64_t(1) << 30);
      };
      scale(g.a_weight[std::size_t(places[i].role)], f);
      scale(g.c_weight[std::size_t(places[i].role)], 1 / f);
    }
    got = receipts();
    const double most = *std::max_element(got.begin(), got.end());
    if (most < best_max) best_max = most, best = current(), best_got = got, step = std::min(step * 2, 4.0);
    else step /= 2;
  }
  for (std::size_t x = 0; x < parts_.size(); ++x) std::tie(parts_[x].a_weight, parts_[x].c_weight) = best[x];
}

int triangle_schedule::rank_of(const part_geometry& x, int role, int j) const {
  if (x.even) return x.rank0 + j * x.part.group_ranks + role;
  return x.rank0 + x.local_of[std::size_t(x.role_first[std::size_t(role)] + j)];
}

triangle_schedule::rank_place triangle_schedule::place_of(int r) const {
  // The last part starting at or below r (parts are in rank order).
  const auto it = std::upper_bound(parts_.begin(), parts_.end(), r, [](int v, const part_geometry& g) { return v < g.rank0; });
  const part_geometry& x = *(it - 1);
  const int c = x.part.group_ranks, local = r - x.rank0;
  if (x.even) return {&x, local / c, local % c};
  const auto [run, role] = x.place_table[std::size_t(local)];
  return {&x, run, role};
}

std::pair<std::int64_t, std::int64_t> triangle_schedule::run_columns(const part_geometry& x, int runs, int j) const {
  const std::int64_t len = x.k1 - x.k0;
  return {x.k0 + j * len / runs, x.k0 + (j + 1) * len / runs};
}

// Difference cover, role p: the diagonal (p, p), then for d = 1 .. c/2 the pair {p + a,
// p + b}, that of d = c/2 over the first half of the run if p + a mod c < c/2, else the second.
// E.g. c = 4, D = {0, 1, 2}, pairs d = 1: (0, 1), d = 2: (0, 2): role 1 computes (1, 1),
// (2, 1) and (3, 1) on the first half of its run (1 < 2). Star: star_units. Nest: the outer
// role (0) the outer triangle and the block below it, the inner role (1) the inner triangle.
std::vector<triangle_schedule::atom_unit> triangle_schedule::role_units(const part_geometry& x, int role) const {
  std::vector<atom_unit> out;
  if (x.part.cover == rank_k_cover::star) {
    for (const auto& u : star_units[role])
      if (u[0] >= 0) out.push_back({u[0], u[1], span::whole});
    return out;
  }
  if (x.part.cover == rank_k_cover::nest) return role == 0 ? std::vector<atom_unit>{{0, 0}, {1, 0}} : std::vector<atom_unit>{{1, 1}};
  const int c = x.part.group_ranks;
  for (int d = 0; d <= c / 2; ++d) {
    const auto [i, j] = difference_block(x, role, d);
    atom_unit u{i, j, span::whole};
    if (2 * d == c) u.when = (role + x.pair_of[std::size_t(d)].first) % c < c / 2 ? span::first : span::second;
    out.push_back(u);
  }
  return out;
}

std::vector<int> triangle_schedule::role_readers(const part_geometry& x, int a, bool first_half) const {
  std::vector<int> out;
  if (x.part.cover == rank_k_cover::star) return a <= 2 ? std::vector<int>{0, a + 1} : std::vector<int>{1, 2, 3};
  if (x.part.cover == rank_k_cover::nest) return a == 0 ? std::vector<int>{0} : std::vector<int>{0, 1};
  const int c = x.part.group_ranks;
  for (std::size_t e = 0; e < x.cover.size(); ++e) {
    const int p = mod(a - x.cover[e], c);
    bool reads = x.reach_whole[e] != 0;
    if (!reads && x.reach_half[e] >= 0) reads = ((p + x.reach_half[e]) % c < c / 2) == first_half;
    if (reads) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Computers of atom block (ax, ay), ax >= ay. Difference cover: the diagonal's role ax;
// else, with d = ax - ay mod c, the role whose pair for min(d, c - d) lands on it (both
// roles when d = c/2). E.g. c = 7, D = {0, 1, 3}, pair of d = 2 is (1, 3): block (5, 3)
// has d = 2, so role p with p + 1 = 3, p = 2, computes it. Star: star_units' owner. Nest:
// the inner role its triangle, the outer role the rest.
triangle_schedule::roles triangle_schedule::role_computers(const part_geometry& x, int ax, int ay) const {
  if (x.part.cover == rank_k_cover::star) {
    if (ax <= 2) return {ax == ay ? ax + 1 : 0};
    if (ay <= 2) return {ay + 1};
    if (ax == ay) return {ax - 2};
    return {ay == 3 ? (ax == 4 ? 1 : 3) : 2};
  }
  if (x.part.cover == rank_k_cover::nest) return {ay == 1 ? 1 : 0};
  const int c = x.part.group_ranks;
  if (ax == ay) return {ax};
  const int diff = mod(ax - ay, c), d = std::min(diff, c - diff), a = x.pair_of[std::size_t(d)].first;
  if (2 * d != c) return {mod((diff == d ? ay : ax) - a, c)};  // the role p with p + a = ay if diff = d, else ax
  const int u = mod(ay - a, c), v = mod(ax - a, c);
  return {std::min(u, v), std::max(u, v)};
}

std::vector<rank_k_unit> triangle_schedule::slice_units(int r) const {
  std::vector<rank_k_unit> out;
  if (r < 0 || r >= ranks()) return out;
  const rank_place at = place_of(r);
  const auto [K0, K1] = run_columns(*at.part, at.part->runs[std::size_t(at.role)], at.run);
  const std::int64_t Km = K0 + (K1 - K0) / 2;
  const std::vector<int>& fb = at.part->first_block;
  for (const atom_unit& u : role_units(*at.part, at.role)) {
    const std::int64_t k0 = u.when == span::second ? Km : K0, k1 = u.when == span::first ? Km : K1;
    for (int i = fb[std::size_t(u.x)]; i < fb[std::size_t(u.x) + 1]; ++i)
      for (int j = fb[std::size_t(u.y)]; j < fb[std::size_t(u.y) + 1] && (u.x != u.y || j <= i); ++j)
        out.push_back({i, j, k0, k1});
  }
  return out;
}

// Computers of block (i, j) go part by part, and within a part in rank order (run by run,
// role by role), owning in proportion to their roles' C weights. E.g. parts [k2 x tbd3] +
// [star4], block (i, j) computed by role 1 of the tbd3 (C weight 5, 2 runs) and role 0 of
// the star (C weight 2): weights 5, 5, 2, so rank 4 (run 1 of the first part) has 5 before
// it, 5 of its own, of 12. Before a rank of role p_r, run j_r: each computing role p's runs below
// j_r, and its run j_r when p < p_r. Rank r's share of C cell c, its computers counted when
// the phase asked for is C's (`now`).
cell_share triangle_schedule::c_share(int r, std::int64_t c, bool now) const {
  const auto [i, j] = c_block(c);
  const rank_place at = place_of(r);
  std::int64_t before_me = 0, own = 0, total = 0, computers = 0;
  bool mine = false;
  for (const part_geometry& x : parts_) {
    std::int64_t before = 0, all = 0;
    for (int p : role_computers(x, atom_of(x, i), atom_of(x, j))) {
      const std::int64_t w = x.c_weight[std::size_t(p)], m = x.runs[std::size_t(p)];
      before += w * (std::min<std::int64_t>(at.run, m) + (p < at.role && at.run < m ? 1 : 0));
      all += w * m;
      computers += m;
      mine = mine || (&x == at.part && p == at.role);
    }
    if (&x == at.part) before_me = total + before, own = x.c_weight[std::size_t(at.role)];
    total += all;
  }
  return cell_share{mine ? piece_of(c, c_size(i, j), before_me, own, total) : piece{c, 0, 0}, now ? computers : 0, now && mine};
}

// One odd difference cover alone: its roles' tables, and each role's C blocks laid end to end
// (its diagonal, then its block of each d = 1 .. c/2), S elements, run j of its m ranks owning
// [floor(j S / m), floor((j + 1) S / m)) (why: docs/distributed.md, "Rank-k updates"). E.g.
// tbd3{0,1} with blocks of 3 rows over 2 ranks a role: the diagonal (6) and the block of d = 1
// (9), S = 15: run 0 owns the diagonal and 1.5 -> [6, 7) of the other block, run 1 the rest.
void triangle_schedule::index_c_chunks() {
  if (parts_.size() != 1 || parts_[0].part.cover != rank_k_cover::difference || parts_[0].part.group_ranks % 2 == 0) return;
  part_geometry& x = parts_[0];
  const int c = x.part.group_ranks, h = c / 2;
  const bool table = c <= 1024;  // c (c/2 + 1) offsets: 4 MB at 1024; beyond, c_offset sums on demand
  const bool cplx = is_complex(p_.type);
  if (table) x.c_prefix.assign(std::size_t(c) * std::size_t(h + 1), 0);
  x.role_c.assign(std::size_t(c), 0), x.role_rect.assign(std::size_t(c), 0), x.role_flops.assign(std::size_t(c), 0);
  const std::size_t D = x.cover.size();
  const bool perfect = D * (D - 1) == std::size_t(c - 1);
  for (int p = 0; p < c; ++p) {
    if (!table && perfect) {
      // Every pair of D once: role p's off-diagonal blocks are the pairs of atoms p + D, so
      // their sizes add up to ((sum r)^2 - sum r^2) / 2 over those atoms' rows r: O(|D|).
      std::int64_t sum = 0, squares = 0;
      for (int a : x.cover) {
        const std::int64_t r = block_rows((p + a) % c);
        sum += r, squares += r * r;
      }
      const std::int64_t r0 = block_rows(p), pairs = (sum * sum - squares) / 2;
      x.role_c[std::size_t(p)] = r0 * (r0 + 1) / 2 + pairs;
      x.role_rect[std::size_t(p)] = r0 * r0 + pairs;
      x.role_flops[std::size_t(p)] = (cplx ? 4.0 : 1.0) * double(r0) * double(r0 + 1) + gemm_flops(p_.type, pairs, 1, 1);
      continue;
    }
    std::int64_t at = 0;
    for (int d = 0; d <= h; ++d) {
      const auto [u, v] = difference_block(x, p, d);
      const std::int64_t ru = block_rows(u), rv = block_rows(v);
      if (table) x.c_prefix[std::size_t(p) * std::size_t(h + 1) + std::size_t(d)] = at;
      at += c_size(u, v);
      x.role_rect[std::size_t(p)] += ru * rv;
      x.role_flops[std::size_t(p)] += u == v ? (cplx ? 4.0 : 1.0) * double(ru) * double(ru + 1) : gemm_flops(p_.type, ru, rv, 1);
    }
    x.role_c[std::size_t(p)] = at;
  }
}

// The difference d (0 .. c/2) of atom block (ax, ay) of a difference cover: e.g. c = 7,
// (5, 2): 3; (6, 0): 6 mod 7 is 1 the other way round, so 1.
int triangle_schedule::difference_of(const part_geometry& x, int ax, int ay) const {
  const int c = x.part.group_ranks, diff = mod(ax - ay, c);
  return std::min(diff, c - diff);
}

// Role p's block of difference d (d = 0: its diagonal) of a difference cover, as (i, j), i >= j.
std::pair<int, int> triangle_schedule::difference_block(const part_geometry& x, int p, int d) const {
  const int c = x.part.group_ranks, u = (p + x.pair_of[std::size_t(d)].first) % c, v = (p + x.pair_of[std::size_t(d)].second) % c;
  return {std::max(u, v), std::min(u, v)};
}

// Where role's block of difference d starts among its blocks end to end (index_c_chunks).
std::int64_t triangle_schedule::c_offset(const part_geometry& x, int role, int d) const {
  if (!x.c_prefix.empty()) return x.c_prefix[std::size_t(role) * std::size_t(x.part.group_ranks / 2 + 1) + std::size_t(d)];
  std::int64_t before = 0;
  for (int e = 0; e < d; ++e) {
    const auto [u, v] = difference_block(x, role, e);
    before += c_size(u, v);
  }
  return before;
}

// A rank of role `role` receives, sends and owns over a run of `len` columns of one odd
// cover alone with as many ranks on every role (the planner's pick at large P), in
// O(|D| log |D|) a phase: it reads atoms role + D, each cell held by the |D| roles reading
// that atom in its group (ranks g c + role, so its place among them is its role's among
// the readers, every role weighing alike), so no cell is listed. E.g. c = 7, D = {0, 1, 3}:
// atom 3 is read by roles 0, 2 and 3, and role 2 owns the middle third of each of its cells.
rank_tally triangle_schedule::plane_a(const part_geometry& x, int role, std::int64_t len) const {
  rank_tally t;  // its A: received[0], sent[0], owned, and a phase's largest blocks[0] and staging
  const std::int64_t D = std::int64_t(x.cover.size());
  for (int q = 0; q < phases(); ++q) {
    const std::int64_t l = (q + 1) * len / s_.phases - q * len / s_.phases;  // phase q's chunk (tasks)
    std::int64_t in = 0, out = 0, blocks = 0;
    for (int e = 0; l > 0 && e < D; ++e) {
      const int a = (role + x.cover[std::size_t(e)]) % x.part.group_ranks;
      const std::vector<int>& readers = x.readers[0][std::size_t(a)];
      const std::int64_t place = std::lower_bound(readers.begin(), readers.end(), role) - readers.begin();
      const std::int64_t N = block_rows(a) * l, own = piece_of(0, N, place, 1, D).count;
      in += N - own, out += own * (D - 1), blocks += N, t.owned += own;
    }
    t.received[0] += in, t.sent[0] += out;
    t.blocks[0] = std::max(t.blocks[0], blocks), t.staging = std::max(t.staging, in + out);
  }
  return t;
}

// One odd cover alone with uneven roles (one phase): what role_readers, a_holders and owned()
// give cell by cell, without building them. Each atom a the rank reads, over its whole run,
// is cut where any role's run starts (kcuts_); in a cell every reader role p of a has one
// rank, that of its run j_p holding the cell's first column, and ranks go run by run, role
// by role within a run (rank_of), so the holders before this rank (run j, role q) are the
// readers with j_p < j, or j_p = j and p < q. E.g. tbd3{0,1}[2,1,1] on k = 4: atom 1 is read
// by roles 0 and 1; role 0's runs start at 0 and 2, so rank (run 1, role 0) = local 3
// holds columns [2, 4) after role 1's only rank (run 0, local 1).
rank_tally triangle_schedule::swept_a(const rank_place& at) const {
  const part_geometry& x = *at.part;
  const int c = x.part.group_ranks;
  const auto [K0, K1] = run_columns(x, x.runs[std::size_t(at.role)], at.run);
  // Its k cuts (one part, one phase): its run's ends and where another role's run starts inside it.
  const std::vector<std::int64_t> cuts(std::lower_bound(kcuts_.begin(), kcuts_.end(), K0), std::upper_bound(kcuts_.begin(), kcuts_.end(), K1));
  rank_tally t;  // as plane_a's
  std::vector<std::pair<std::int64_t, int>> starts;  // (column, reader) where a reader's next run starts
  for (int e : x.cover) {
    const int a = (at.role + e) % c;
    const std::vector<int>& readers = x.readers[0][std::size_t(a)];
    std::int64_t total = 0, before = 0;
    std::vector<int> run(readers.size(), 0);
    const auto ahead = [&](std::size_t h) {  // reader h's rank comes before this one
      return run[h] < at.run || (run[h] == at.run && readers[h] < at.role);
    };
    starts.clear();
    for (std::size_t h = 0; h < readers.size(); ++h) {
      const int p = readers[h], m = x.runs[std::size_t(p)];
      total += x.a_weight[std::size_t(p)];
      if (p == at.role) continue;
      run[h] = int(slot(K0 - x.k0, x.k1 - x.k0, m));
      if (ahead(h)) before += x.a_weight[std::size_t(p)];
      for (int j = run[h] + 1; j < m; ++j)
        if (const std::int64_t k = run_columns(x, m, j).first; k < K1) starts.emplace_back(k, int(h));
        else break;
    }
    std::sort(starts.begin(), starts.end());
    const std::int64_t rows = x.atoms[std::size_t(a) + 1] - x.atoms[std::size_t(a)], holders = std::int64_t(readers.size());
    std::size_t s = 0;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      for (; s < starts.size() && starts[s].first <= cuts[i]; ++s) {
        const std::size_t h = std::size_t(starts[s].second);
        const std::int64_t w = x.a_weight[std::size_t(readers[h])];
        before -= ahead(h) ? w : 0;
        ++run[h];
        before += ahead(h) ? w : 0;
      }
      const std::int64_t N = rows * (cuts[i + 1] - cuts[i]), own = piece_of(0, N, before, x.a_weight[std::size_t(at.role)], total).count;
      t.received[0] += N - own, t.sent[0] += own * (holders - 1), t.owned += own;
    }
    t.blocks[0] += rows * (K1 - K0);
  }
  t.staging = t.received[0] + t.sent[0];
  return t;
}

int triangle_schedule::atom_of(const part_geometry& x, int b) const {
  return int(std::upper_bound(x.first_block.begin(), x.first_block.end(), b) - x.first_block.begin()) - 1;
}

std::vector<int> triangle_schedule::a_holders(int b, std::int64_t k0, std::int64_t k1) const {
  // The part holding column k0, then each role reading the cell's atom by its run holding k0.
  const part_geometry& x = part_at(k0);
  const int atom = atom_of(x, b);
  std::vector<int> out;
  // The roles reading the atom over a first half, over a second (the same roles but for the
  // d = c/2 pairs of an even cover), each at most |D| of them.
  const std::vector<int>& first = x.readers[0][std::size_t(atom)];
  const std::vector<int>& second = x.readers[1].empty() ? first : x.readers[1][std::size_t(atom)];
  auto take = [&](int p) {
    const int m = x.runs[std::size_t(p)], j = int(slot(k0 - x.k0, x.k1 - x.k0, m));
    const auto [K0, K1] = run_columns(x, m, j);
    const std::vector<int>& readers = k1 <= K0 + (K1 - K0) / 2 ? first : second;
    if (std::binary_search(readers.begin(), readers.end(), p)) out.push_back(rank_of(x, p, j));
  };
  out.reserve(first.size() + 1);
  for (int p : first) take(p);
  for (int p : second)
    if (!std::binary_search(first.begin(), first.end(), p)) take(p);
  std::sort(out.begin(), out.end());
  return out;
}

const triangle_schedule::part_geometry& triangle_schedule::part_at(std::int64_t k) const {
  const auto it = std::upper_bound(parts_.begin(), parts_.end(), k, [](std::int64_t v, const part_geometry& g) { return v < g.k0; });
  return *(it - 1);
}

int triangle_schedule::block_at(std::int64_t row) const {
  return int(std::upper_bound(bounds_.begin(), bounds_.end(), row) - bounds_.begin()) - 1;
}

bool triangle_schedule::composite() const { return !parts_[0].role_c.empty(); }

// Block (i, j), i >= j, of the lower orientation where C stores it: 'L' rows of block i,
// columns of block j; 'U' the transposed place. E.g. n = 6 in blocks of 3, 'U', (1, 0):
// rows 0-2, columns 3-5.
region triangle_schedule::block_region(int i, int j) const {
  const bool lower = p_.uplo == 'L';
  const int r = lower ? i : j, c = lower ? j : i;
  return region{block{block_start(r), block_start(c), block_rows(r), block_rows(c)}, i == j ? p_.uplo : char(0)};
}

std::int64_t triangle_schedule::c_size(int i, int j) const { return block_region(i, j).elements(); }

// A cell (b, t): row block b over [kcuts[t], kcuts[t + 1]), numbered column-major over the
// stored grid: 'N' (A n x k) t * blocks + b, else b * intervals + t.
std::int64_t triangle_schedule::a_cell(int b, int t) const {
  const std::int64_t nb = blocks(), nk = std::int64_t(kcuts_.size()) - 1;
  return p_.transa == 'N' ? std::int64_t(t) * nb + b : std::int64_t(b) * nk + t;
}

std::pair<int, int> triangle_schedule::a_cell_at(std::int64_t c) const {
  const std::int64_t nb = blocks(), nk = std::int64_t(kcuts_.size()) - 1;
  return p_.transa == 'N' ? std::pair{int(c % nb), int(c / nb)} : std::pair{int(c / nk), int(c % nk)};
}

// The phase reading columns from k0: the chunk of the run holding it (every role of a part
// of several phases has the same runs).
int triangle_schedule::a_phase(std::int64_t k0) const {
  if (s_.phases == 1) return 0;
  const part_geometry& x = part_at(k0);
  const auto [K0, K1] = run_columns(x, x.runs[0], int(slot(k0 - x.k0, x.k1 - x.k0, x.runs[0])));
  return int(slot(k0 - K0, K1 - K0, s_.phases));
}

// Rank r's units, each cut to phase q's chunk of its run; a unit of an empty half stays a
// task of phase 0 with k 0 (its block is r's to hold, as zeros).
void triangle_schedule::tasks(int q, int r, std::vector<task>& out) const {
  if (r < 0 || r >= ranks()) return;
  const rank_place at = place_of(r);
  const auto [K0, K1] = run_columns(*at.part, at.part->runs[std::size_t(at.role)], at.run);
  const std::int64_t lo = K0 + q * (K1 - K0) / s_.phases, hi = K0 + (q + 1) * (K1 - K0) / s_.phases;  // phase q's chunk
  for (const rank_k_unit& u : slice_units(r)) {
    std::int64_t k0 = std::max(u.k0, lo), k1 = std::min(u.k1, hi);
    if (k1 <= k0 && !(u.k1 <= u.k0 && q == 0)) continue;
    k1 = std::max(k0, k1);
    const region g = block_region(u.i, u.j);
    out.push_back(task{box{g.at.rows, g.at.cols, k1 - k0, g.at.row, g.at.col, k0}, -1, g.tri, 0});
  }
}

void triangle_schedule::covers(operand o, const region& g, std::vector<cover>& out) const {
  if (o == operand::c) {
    const bool lower = p_.uplo == 'L';
    const int i = block_at(lower ? g.at.row : g.at.col), j = block_at(lower ? g.at.col : g.at.row);
    if (!composite()) {
      out.push_back(cover{std::int64_t(i) * (i + 1) / 2 + j, cell_part{g, 0}});
      return;
    }
    const part_geometry& x = parts_[0];
    const int role = *role_computers(x, i, j).begin();
    out.push_back(cover{role, cell_part{g, c_offset(x, role, difference_of(x, i, j))}});
    return;
  }
  // A: op(A) rows and k of the stored block, then the grid's cells in column-major order.
  const bool n_trans = p_.transa == 'N';
  const std::int64_t x0 = n_trans ? g.at.row : g.at.col, x1 = x0 + (n_trans ? g.at.rows : g.at.cols);
  const std::int64_t k0 = n_trans ? g.at.col : g.at.row, k1 = k0 + (n_trans ? g.at.cols : g.at.rows);
  const auto index = [](const std::vector<std::int64_t>& cuts, std::int64_t v) {
    return int(std::lower_bound(cuts.begin(), cuts.end(), v) - cuts.begin());
  };
  const int b0 = index(bounds_, x0), b1 = index(bounds_, x1), t0 = index(kcuts_, k0), t1 = index(kcuts_, k1);
  for (int outer = n_trans ? t0 : b0; outer < (n_trans ? t1 : b1); ++outer)
    for (int inner = n_trans ? b0 : t0; inner < (n_trans ? b1 : t1); ++inner) {
      const int b = n_trans ? inner : outer, t = n_trans ? outer : inner;
      const std::int64_t kt = kcuts_[std::size_t(t)];
      out.push_back(cover{a_cell(b, t), cell_part{region{stored(o, block_start(b), block_rows(b), kt, kcuts_[std::size_t(t) + 1] - kt), 0}, 0}});
    }
}

void triangle_schedule::parts(operand o, std::int64_t c, std::vector<cell_part>& out) const {
  if (o == operand::a) {
    const auto [b, t] = a_cell_at(c);
    const std::int64_t k0 = kcuts_[std::size_t(t)], len = kcuts_[std::size_t(t) + 1] - k0;
    out.push_back(cell_part{region{stored(o, block_start(b), block_rows(b), k0, len), 0}, 0});
    return;
  }
  if (!composite()) {
    const auto [i, j] = c_block(c);
    out.push_back(cell_part{block_region(i, j), 0});
    return;
  }
  const part_geometry& x = parts_[0];
  std::int64_t at = 0;  // a role's blocks end to end: its diagonal, then its block of each d
  for (int d = 0; d <= x.part.group_ranks / 2; ++d) {
    const auto [u, v] = difference_block(x, int(c), d);
    out.push_back(cell_part{block_region(u, v), at});
    at += c_size(u, v);
  }
}

void triangle_schedule::holders(operand o, std::int64_t c, std::vector<int>& out) const {
  if (o == operand::a) {
    const std::vector<int>& a = a_holder_list(c);
    out.insert(out.end(), a.begin(), a.end());
    return;
  }
  const auto [i, j] = composite() ? std::pair{0, 0} : c_block(c);
  for (const part_geometry& x : parts_) {  // each part's computers of block (i, j), ascending; composite: role c's ranks
    const std::size_t from = out.size();
    for (int p : composite() ? roles(int(c)) : role_computers(x, atom_of(x, i), atom_of(x, j)))
      for (int run = 0; run < x.runs[std::size_t(p)]; ++run) out.push_back(rank_of(x, p, run));
    std::sort(out.begin() + std::ptrdiff_t(from), out.end());
  }
}

piece triangle_schedule::owned(operand o, std::int64_t c, int r) const {
  if (r < 0 || r >= ranks()) return piece{c, 0, 0};
  const rank_place at = place_of(r);
  if (o == operand::a) {
    const std::vector<int>& h = a_holder_list(c);
    if (!std::binary_search(h.begin(), h.end(), r)) return piece{c, 0, 0};
    std::int64_t before = 0, total = 0;  // the holders' roles' A weights (all of r's part)
    for (int rank : h) {
      const std::int64_t w = at.part->a_weight[std::size_t(place_of(rank).role)];
      before += rank < r ? w : 0;
      total += w;
    }
    const auto [b, t] = a_cell_at(c);
    const std::int64_t N = block_rows(b) * (kcuts_[std::size_t(t) + 1] - kcuts_[std::size_t(t)]);
    return piece_of(c, N, before, at.part->a_weight[std::size_t(at.role)], total);
  }
  if (composite())  // my run of my role's blocks end to end
    return at.role != c ? piece{c, 0, 0} : piece_of(c, parts_[0].role_c[std::size_t(c)], at.run, 1, parts_[0].runs[std::size_t(c)]);
  return share(o, s_.phases - 1, c, r).own;
}

// A C cell's block (i, j) from its index i (i + 1) / 2 + j: i = floor((sqrt(8c + 1) - 1) / 2),
// corrected for rounding. E.g. 7: (3, 1).
std::pair<int, int> triangle_schedule::c_block(std::int64_t c) const {
  std::int64_t i = std::int64_t((std::sqrt(8.0 * double(c) + 1) - 1) / 2);
  while (i * (i + 1) / 2 > c) --i;
  while ((i + 1) * (i + 2) / 2 <= c) ++i;
  return {int(i), int(c - i * (i + 1) / 2)};
}

// An A cell's holders, kept once found (a rank's count asks for each of its cells several times).
const std::vector<int>& triangle_schedule::a_holder_list(std::int64_t c) const {
  return kept_list(memo_lock_, a_holders_, c, [&] {
    const auto [b, t] = a_cell_at(c);
    return a_holders(b, kcuts_[std::size_t(t)], kcuts_[std::size_t(t) + 1]);
  });
}

// owned() and the needers' count without listing them: an A cell's holders are kept; a C
// block's computers come from the roles computing it, its share from c_share.
cell_share triangle_schedule::share(operand o, int q, std::int64_t c, int r) const {
  const auto [q0, q1] = phase_span(o, c);
  const bool now = q >= q0 && q < q1;
  if (o == operand::a) {
    const std::vector<int>& h = a_holder_list(c);
    return cell_share{owned(o, c, r), now ? std::int64_t(h.size()) : 0, now && std::binary_search(h.begin(), h.end(), r)};
  }
  if (composite() || r < 0 || r >= ranks()) return schedule::share(o, q, c, r);
  return c_share(r, c, now);
}

void triangle_schedule::needers(operand o, int q, std::int64_t c, std::vector<int>& out) const {
  if (const auto [q0, q1] = phase_span(o, c); q >= q0 && q < q1) holders(o, c, out);
}

std::pair<int, int> triangle_schedule::phase_span(operand o, std::int64_t c) const {
  if (o == operand::c) return {s_.phases - 1, s_.phases};
  const int q = a_phase(kcuts_[std::size_t(a_cell_at(c).second)]);
  return {q, q + 1};
}

// One odd cover alone repeats by rotation: a rank's A in closed form (plane_a, kept by role
// and run length, or swept_a for uneven roles) and its C from its role's tables, with the
// regions in place where the rule puts them: c = 1 reads its own A cells, one rank a role
// computes its blocks alone (its diagonal, packed, still gathers).
rank_tally triangle_schedule::count(int r) const {
  if (!composite() || r < 0 || r >= ranks()) return count_cells(r);
  const part_geometry& x = parts_[0];
  const rank_place at = place_of(r);
  const auto [K0, K1] = run_columns(x, x.runs[std::size_t(at.role)], at.run);
  rank_tally t;
  if (!x.even) {
    t = swept_a(at);
  } else {
    std::lock_guard<std::mutex> g(memo_lock_);
    const auto it = plane_memo_.find({at.role, K1 - K0});
    t = it != plane_memo_.end() ? it->second : plane_memo_.emplace(std::pair{at.role, K1 - K0}, plane_a(x, at.role, K1 - K0)).first->second;
  }
  const std::int64_t S = x.role_c[std::size_t(at.role)], m = x.runs[std::size_t(at.role)];
  const std::int64_t own = piece_of(0, S, at.run, 1, m).count;
  t.received[2] = own * (m - 1), t.sent[2] = S - own;
  t.owned += own;
  if (x.part.group_ranks == 1) t.blocks[0] = 0;
  t.blocks[2] = m == 1 ? block_rows(at.role) * block_rows(at.role) : x.role_rect[std::size_t(at.role)];
  t.staging = std::max(t.staging, t.received[2] + t.sent[2]);
  t.flops = x.role_flops[std::size_t(at.role)] * double(K1 - K0);
  return t;
}

std::shared_ptr<const schedule> rank_k_schedule(const problem& p, const rank_k_scheme& s) {
  return std::make_shared<triangle_schedule>(p, s);
}

}  // namespace prism::ranks
