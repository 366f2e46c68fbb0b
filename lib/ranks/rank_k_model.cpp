// lib/ranks/rank_k_model.cpp — the triangle-block scheme of a rank-k update over ranks:
// units, native layout and exact costs (prism/rank_k_model.hpp has the definitions).
#include <prism/error.hpp>
#include <prism/rank_k_model.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <tuple>

namespace prism {

namespace {

// The holder with weights `before` ahead of it, `own` and `total` owns elements
// [floor(N before / total), floor(N (before + own) / total)) of a cell of N: e.g. N = 10,
// weights 1, 1, 1: [0, 3), [3, 6), [6, 10); weights 1, 3: [0, 2), [2, 10).
piece piece_of(std::int64_t cell, std::int64_t N, std::int64_t before, std::int64_t own, std::int64_t total) {
  const auto at = [&](std::int64_t w) { return std::int64_t((__int128(N) * w) / total); };
  const std::int64_t first = at(before);
  return piece{cell, first, at(before + own) - first};
}

// Whether set D (sorted) covers every difference 1 .. c - 1 mod c.
bool covers(const std::vector<int>& D, int c) {
  std::vector<char> seen(std::size_t(c), 0);
  seen[0] = 1;
  for (int a : D)
    for (int b : D) seen[std::size_t(((a - b) % c + c) % c)] = 1;
  return std::all_of(seen.begin(), seen.end(), [](char x) { return x != 0; });
}

// Depth-first search for a cover of size `size` containing 0, elements ascending.
bool search_cover(int c, int size, std::vector<int>& D, int next) {
  if (int(D.size()) == size) return covers(D, c);
  // Each new element adds at most 2 |D| new differences: prune when too few remain.
  const long have = long(D.size()), left = long(size) - have;
  if (have * (have - 1) + left * (2 * have + left - 1) < long(c - 1)) return false;
  for (int x = next; x < c; ++x) {
    D.push_back(x);
    if (search_cover(c, size, D, x + 1)) return true;
    D.pop_back();
  }
  return false;
}

// Polynomials over GF(q) modulo a monic cubic f = x^3 + f2 x^2 + f1 x + f0, as (c0, c1, c2).
struct cubic_field {
  std::int64_t q, f0, f1, f2;
  using poly = std::array<std::int64_t, 3>;
  poly times(const poly& a, const poly& b) const {
    std::int64_t r[5] = {0, 0, 0, 0, 0};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) r[i + j] = (r[i + j] + a[std::size_t(i)] * b[std::size_t(j)]) % q;
    for (int d = 4; d >= 3; --d) {  // x^d = x^(d-3) x^3 = -x^(d-3) (f2 x^2 + f1 x + f0)
      const std::int64_t t = r[d];
      r[d] = 0;
      r[d - 1] = ((r[d - 1] - t * f2) % q + q) % q;
      r[d - 2] = ((r[d - 2] - t * f1) % q + q) % q;
      r[d - 3] = ((r[d - 3] - t * f0) % q + q) % q;
    }
    return {r[0], r[1], r[2]};
  }
  poly power(std::int64_t e) const {
    poly result{1, 0, 0}, base{0, 1, 0};
    for (; e > 0; e >>= 1, base = times(base, base))
      if (e & 1) result = times(result, base);
    return result;
  }
};

bool is_prime(std::int64_t x) {
  if (x < 2) return false;
  for (std::int64_t d = 2; d * d <= x; ++d)
    if (x % d == 0) return false;
  return true;
}

// Singer's perfect difference set for c = q^2 + q + 1, q prime: with x primitive in
// GF(q^3) = GF(q)[x]/f, the exponents i < c whose x^i has no x^2 term (a line of the
// projective plane PG(2, q)); q + 1 of them, every difference once. E.g. q = 2, f = x^3 +
// x + 1: x^0 = 1, x^1 = x, x^3 = x + 1 give {0, 1, 3}. Empty when no such q exists.
std::vector<int> singer_set(int c) {
  std::int64_t q = 2;
  while (q * q + q + 1 < c) ++q;
  if (q * q + q + 1 != c || !is_prime(q)) return {};
  const std::int64_t order = q * q * q - 1;
  std::vector<std::int64_t> primes;  // of q^3 - 1
  for (std::int64_t x = order, d = 2; x > 1; ++d) {
    if (d * d > x) d = x;
    if (x % d == 0) {
      primes.push_back(d);
      while (x % d == 0) x /= d;
    }
  }
  for (std::int64_t f0 = 1; f0 < q; ++f0)
    for (std::int64_t f1 = 0; f1 < q; ++f1)
      for (std::int64_t f2 = 0; f2 < q; ++f2) {
        const cubic_field F{q, f0, f1, f2};
        if (F.power(order) != cubic_field::poly{1, 0, 0}) continue;
        const bool primitive = std::all_of(primes.begin(), primes.end(), [&](std::int64_t r) {
          return F.power(order / r) != cubic_field::poly{1, 0, 0};
        });
        if (!primitive) continue;
        std::vector<int> D;
        cubic_field::poly v{1, 0, 0};
        for (int i = 0; i < c; ++i, v = F.times(v, {0, 1, 0}))
          if (v[2] == 0) D.push_back(i);
        return D;
      }
  return {};
}

}  // namespace

namespace {

// One part's text: "1", "k8", "tbd7{0,1,3}", "k2 x tbd3{0,1}", "star4", "k2 x star4",
// "tbd7{0,1,3}[3,3,2,2,2,2,2]" (ranks per role), "nest2[2,1]".
std::string part_text(const rank_k_part& x) {
  std::string s;
  if (x.groups > 1 && x.role_ranks.empty()) s = "k" + std::to_string(x.groups);
  std::string cover;
  if (x.cover == rank_k_cover::star) {
    cover = "star" + std::to_string(x.group_ranks);
  } else if (x.cover == rank_k_cover::nest) {
    cover = "nest" + std::to_string(x.group_ranks);
  } else if (x.group_ranks > 1) {
    std::string d;
    for (int v : difference_cover(x.group_ranks)) d += (d.empty() ? "" : ",") + std::to_string(v);
    cover = "tbd" + std::to_string(x.group_ranks) + "{" + d + "}";
  }
  if (!x.role_ranks.empty()) {
    std::string m;
    for (int v : x.role_ranks) m += (m.empty() ? "" : ",") + std::to_string(v);
    cover += "[" + m + "]";
  }
  if (!cover.empty()) s += (s.empty() ? "" : " x ") + cover;
  return s.empty() ? "1" : s;
}

// A whole number >= 1 at the start of t, consumed; throws naming `what` otherwise.
int take_count(std::string_view& t, const std::string& what) {
  std::size_t i = 0;
  long long v = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9' && v <= 1 << 24) v = v * 10 + (t[i++] - '0');
  if (i == 0 || v < 1 || v > 1 << 24) throw plan_error("rank-k scheme: " + what + " must be a whole number >= 1");
  t.remove_prefix(i);
  return int(v);
}

rank_k_part parse_part(std::string_view t, const std::string& whole) {
  auto bad = [&](const std::string& why) { return plan_error("rank-k scheme '" + whole + "': " + why); };
  rank_k_part x;
  if (t == "1") return x;
  if (!t.empty() && t.front() == 'k') {
    t.remove_prefix(1);
    x.groups = take_count(t, "the k slices");
    if (t.empty()) return x;
    if (t.substr(0, 3) != " x ") throw bad("expected ' x ' after the k slices");
    t.remove_prefix(3);
  }
  if (t.substr(0, 4) == "star") {
    t.remove_prefix(4);
    x.cover = rank_k_cover::star;
    x.group_ranks = take_count(t, "the star's ranks");
    if (x.group_ranks != 4) throw bad("a star has 4 ranks");
  } else if (t.substr(0, 4) == "nest") {
    t.remove_prefix(4);
    x.cover = rank_k_cover::nest;
    x.group_ranks = take_count(t, "the nest's roles");
    if (x.group_ranks != 2) throw bad("a nest has 2 roles");
  } else if (t.substr(0, 3) == "tbd") {
    t.remove_prefix(3);
    x.group_ranks = take_count(t, "the group ranks");
    // The cover in braces is the one difference_cover gives; it is checked, not chosen.
    std::string d;
    for (int v : difference_cover(x.group_ranks)) d += (d.empty() ? "" : ",") + std::to_string(v);
    const std::string braces = "{" + d + "}";
    if (t.substr(0, braces.size()) != braces) throw bad("tbd" + std::to_string(x.group_ranks) + " covers by " + braces);
    t.remove_prefix(braces.size());
  } else {
    throw bad("expected tbdC{...}, star4, nest2, kG or 1");
  }
  if (!t.empty() && t.front() == '[') {  // ranks per role
    if (x.groups > 1) throw bad("k slices and ranks per role together");
    t.remove_prefix(1);
    while (true) {
      x.role_ranks.push_back(take_count(t, "a role's ranks"));
      if (!t.empty() && t.front() == ',') {
        t.remove_prefix(1);
        continue;
      }
      if (t.empty() || t.front() != ']') throw bad("expected ']' after the ranks per role");
      t.remove_prefix(1);
      break;
    }
    if (int(x.role_ranks.size()) != x.group_ranks)
      throw bad(std::to_string(x.role_ranks.size()) + " ranks per role for " + std::to_string(x.group_ranks) + " roles");
  } else if (x.cover == rank_k_cover::nest) {
    throw bad("a nest names its ranks per role, e.g. nest2[2,1]");
  }
  if (!t.empty()) throw bad("unexpected '" + std::string(t) + "'");
  return x;
}

}  // namespace

std::string rank_k_scheme::to_string() const {
  std::string s;
  for (const rank_k_part& x : parts) s += (s.empty() ? "" : " + ") + part_text(x);
  if (s.empty()) s = "1";
  if (phases > 1) s += " dfs k" + std::to_string(phases);
  return s;
}

rank_k_scheme rank_k_scheme::parse(std::string_view text) {
  const std::string whole(text);
  std::vector<rank_k_part> parts;
  int phases = 1;
  if (const std::size_t at = text.find(" dfs k"); at != std::string_view::npos) {
    std::string_view q = text.substr(at + 6);
    phases = take_count(q, "the phases");
    if (!q.empty()) throw plan_error("rank-k scheme '" + whole + "': unexpected text after the phases");
    text = text.substr(0, at);
  }
  while (true) {
    const std::size_t plus = text.find(" + ");
    parts.push_back(parse_part(text.substr(0, plus), whole));
    if (plus == std::string_view::npos) break;
    text.remove_prefix(plus + 3);
  }
  return rank_k_scheme(std::move(parts), phases);
}

// Exact smallest covers by search up to c = 36 (a size s needs s (s - 1) >= c - 1), kept;
// above, Singer's perfect set when c = q^2 + q + 1 with q prime, else {0 .. s-1} and the multiples of s up to c/2 + s: any d <= c/2 is j s - i with
// 0 <= i < s, so of size about sqrt(2c). E.g. c = 100: s = 7, {0..6, 7, 14, ..., 56}.
std::vector<int> difference_cover(int c) {
  if (c <= 1) return {0};
  static std::mutex lock;
  static std::map<int, std::vector<int>> kept;
  {
    std::lock_guard<std::mutex> g(lock);
    if (auto it = kept.find(c); it != kept.end()) return it->second;
  }
  std::vector<int> D;
  if (c <= 36) {
    int size = 2;
    while (size * (size - 1) < c - 1) ++size;
    for (;; ++size) {
      D = {0};
      if (search_cover(c, size, D, 1)) break;
    }
  } else if (D = singer_set(c); !D.empty() && covers(D, c)) {
  } else {
    D.clear();
    int s = 1;
    while ((s + 1) * (s + 1) <= c / 2) ++s;
    for (int i = 0; i < s; ++i) D.push_back(i);
    for (int j = 1; j * s - (s - 1) <= c / 2; ++j) D.push_back(j * s);
    std::sort(D.begin(), D.end());
    D.erase(std::unique(D.begin(), D.end()), D.end());
  }
  std::lock_guard<std::mutex> g(lock);
  return kept.emplace(c, D).first->second;
}


namespace {

// The star's six atoms on n rows for m0 centre ranks and m on each leaf role: three centre
// atoms of a rows, then the rest (t = n/3 - a each) in three. The centre role's 3a^2 and a
// leaf role's a^2/2 + 3at + 3t^2/2 = n^2/6 - a^2 are worth m0 and m ranks' equal work:
// 3a^2 / m0 = (n^2/6 - a^2) / m, so a = n sqrt(m0 / (6 (3m + m0))), below n/3 when m0 < 6m.
// E.g. n = 4096, one rank a role: a = n / sqrt(24) = 836, atoms at 0, 836, 1672, 2508,
// 3037, 3566; 3, 2, 2, 2 ranks: a = n / sqrt(18) = 965.
std::vector<std::int64_t> star_atoms(std::int64_t n, int m0, int m) {
  const std::int64_t a = std::llround(double(n) * std::sqrt(double(m0) / (6.0 * (3.0 * m + m0)))), rest = n - 3 * a;
  return {0, a, 2 * a, 3 * a, 3 * a + rest / 3, 3 * a + 2 * rest / 3, n};
}

// The star's blocks by role, in atoms (x >= y): role 0 the three between centre atoms;
// role j = 1..3 centre atom j-1's diagonal, its blocks with atoms 3-5, and two of the six
// blocks among atoms 3-5 (j = 1: (3,3), (4,3); 2: (4,4), (5,4); 3: (5,5), (5,3)).
constexpr int star_units[4][6][2] = {
    {{1, 0}, {2, 0}, {2, 1}, {-1, -1}, {-1, -1}, {-1, -1}},
    {{0, 0}, {3, 0}, {4, 0}, {5, 0}, {3, 3}, {4, 3}},
    {{1, 1}, {3, 1}, {4, 1}, {5, 1}, {4, 4}, {5, 4}},
    {{2, 2}, {3, 2}, {4, 2}, {5, 2}, {5, 5}, {5, 3}},
};

// A role's ownership weight before balancing (balance_ownership scales it).
constexpr std::int64_t unit_weight = 1 << 16;

// Solves A x = b in place (Gaussian elimination, partial pivoting); false if singular.
bool solve(std::vector<std::vector<double>>& A, std::vector<double>& b) {
  const std::size_t n = b.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::abs(A[r][c]) > std::abs(A[piv][c])) piv = r;
    if (std::abs(A[piv][c]) < 1e-300) return false;
    std::swap(A[c], A[piv]);
    std::swap(b[c], b[piv]);
    for (std::size_t r = c + 1; r < n; ++r) {
      const double f = A[r][c] / A[c][c];
      for (std::size_t k = c; k < n; ++k) A[r][k] -= f * A[c][k];
      b[r] -= f * b[c];
    }
  }
  for (std::size_t c = n; c-- > 0;) {
    for (std::size_t k = c + 1; k < n; ++k) b[c] -= A[c][k] * b[k];
    b[c] /= A[c][c];
  }
  return true;
}

// For each d = 1 .. c/2 the first pair (a, b) of the difference cover D, by a, with
// b - a = d mod c; index 0 unused. E.g. c = 7, D = {0, 1, 3}: d = 1 (0, 1), 2 (1, 3), 3 (0, 3).
// Empty if D misses a difference.
std::vector<std::pair<int, int>> cover_pairs(const std::vector<int>& D, int c) {
  std::vector<std::pair<int, int>> pair_of(std::size_t(c / 2 + 1), {0, 0});
  for (int d = 1; d <= c / 2; ++d) {
    bool found = false;
    for (int a : D) {
      for (int b : D)
        if (((b - a) % c + c) % c == d) {
          pair_of[std::size_t(d)] = {a, b}, found = true;
          break;
        }
      if (found) break;
    }
    if (!found) return {};
  }
  return pair_of;
}

// Row block measures mu (summing to 1) for an odd difference cover whose roles have runs[q]
// ranks: role q's pairs are worth runs[q] / (2 sum runs) of the triangle (the diagonal
// mu_q^2/2 and mu_x mu_y for each pair block {x, y} it computes; they add up to
// (sum mu)^2 / 2, so sum mu = 1 follows), by Newton's method from equal blocks. E.g. Fano
// with 3, 3, 2, 2, 2, 2, 2 ranks per line: blocks of about 0.155, 0.197, 0.143, 0.145,
// 0.137, 0.110, 0.114 of the rows. Empty if Newton does not converge to positive blocks.
std::vector<double> uneven_measures(const std::vector<std::pair<int, int>>& pair_of, const std::vector<int>& runs) {
  const int c = int(runs.size());
  double total = 0;
  for (int m : runs) total += m;
  std::vector<double> mu(std::size_t(c), 1.0 / double(c));
  auto residual = [&](std::vector<double>& f, std::vector<std::vector<double>>& J) {
    f.assign(std::size_t(c), 0);
    J.assign(std::size_t(c), std::vector<double>(std::size_t(c), 0));
    for (int q = 0; q < c; ++q) {
      f[std::size_t(q)] = mu[std::size_t(q)] * mu[std::size_t(q)] / 2 - double(runs[std::size_t(q)]) / (2 * total);
      J[std::size_t(q)][std::size_t(q)] += mu[std::size_t(q)];
      for (int d = 1; d <= c / 2; ++d) {
        const std::size_t u = std::size_t((q + pair_of[std::size_t(d)].first) % c);
        const std::size_t v = std::size_t((q + pair_of[std::size_t(d)].second) % c);
        f[std::size_t(q)] += mu[u] * mu[v];
        J[std::size_t(q)][u] += mu[v], J[std::size_t(q)][v] += mu[u];
      }
    }
  };
  for (int it = 0; it < 100; ++it) {
    std::vector<double> f;
    std::vector<std::vector<double>> J;
    residual(f, J);
    double worst = 0;
    for (double v : f) worst = std::max(worst, std::abs(v));
    if (worst < 1e-14) return *std::min_element(mu.begin(), mu.end()) > 0 ? mu : std::vector<double>{};
    if (!solve(J, f)) break;
    for (int q = 0; q < c; ++q) mu[std::size_t(q)] -= f[std::size_t(q)];
  }
  return {};
}

}  // namespace

rank_k_model::rank_k_model(const problem& p, const rank_k_scheme& s) : p_(p), s_(s) {
  if (p.op == operation::gemm) throw plan_error("rank_k_model: a gemm problem has no triangle (use rank_model)");
  if (s.parts.empty() || s.phases < 1) throw plan_error("rank_k_model: a scheme needs a part and phases >= 1");
  for (const rank_k_part& x : s.parts) {
    if (x.groups < 1 || x.group_ranks < 1) throw plan_error("rank_k_model: a scheme needs groups, ranks and phases >= 1");
    for (int m : x.role_ranks)
      if (m < 1) throw plan_error("rank_k_model: every role needs a rank");
  }
  const std::int64_t P = s.ranks();
  int rank0 = 0;
  for (const rank_k_part& x : s.parts) {
    part_geometry g;
    g.part = x;
    g.rank0 = rank0;
    // Shares of k in proportion to ranks, e.g. k = 4096 over 4 + 3 ranks: [0, 2340), [2340, 4096).
    g.k0 = p.k * rank0 / P;
    g.k1 = p.k * (rank0 + x.ranks()) / P;
    rank0 += x.ranks();
    const std::int64_t len = g.k1 - g.k0, c = x.group_ranks;
    const auto name = [&] { return "rank_k_model: part " + std::to_string(&x - s.parts.data()) + ": "; };
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
      if (!g.even && s.phases > 1) throw plan_error(name() + "roles of unequal ranks run in one phase");
    }
    const int most_runs = *std::max_element(g.runs.begin(), g.runs.end());
    if (std::int64_t(most_runs) > std::max<std::int64_t>(1, len))
      throw plan_error("rank_k_model: " + std::to_string(most_runs) + " k slices of k = " + std::to_string(len));
    if (std::int64_t(s.phases) > std::max<std::int64_t>(1, len / most_runs))
      throw plan_error("rank_k_model: " + std::to_string(s.phases) + " phases of a slice of " + std::to_string(len / most_runs));
    if (x.cover == rank_k_cover::star) {
      if (c != 4) throw plan_error("rank_k_model: a star has 4 ranks, not " + std::to_string(c));
      if (g.runs[1] != g.runs[2] || g.runs[1] != g.runs[3] || g.runs[0] >= 6 * g.runs[1])
        throw plan_error(name() + "a star's three leaf roles need as many ranks each, and its centre fewer than 6 times that");
      g.atoms = star_atoms(p.n, g.runs[0], g.runs[1]);
    } else if (x.cover == rank_k_cover::nest) {
      if (c != 2) throw plan_error("rank_k_model: a nest has 2 roles, not " + std::to_string(c));
      // Outer rows [0, n - s), inner [n - s, n) with s = n sqrt(m_I / (m_O + m_I)): the outer
      // role's 1 - sigma^2 of the pairs and the inner's sigma^2 in proportion to their ranks.
      const double sigma = std::sqrt(double(g.runs[1]) / double(g.runs[0] + g.runs[1]));
      g.atoms = {0, p.n - std::llround(sigma * double(p.n)), p.n};
    } else {
      if (c > std::max<std::int64_t>(1, p.n))
        throw plan_error("rank_k_model: " + std::to_string(c) + " row blocks of n = " + std::to_string(p.n));
      if (c > 1 && c % 2 == 0 && len < 2 * std::int64_t(x.groups))
        throw plan_error("rank_k_model: an even group of " + std::to_string(c) + " ranks halves its slice, so it needs k >= 2 x " +
                         std::to_string(x.groups) + " slices");
      g.cover = difference_cover(int(c));
      g.pair_of = cover_pairs(g.cover, int(c));
      if (g.pair_of.empty()) throw plan_error("rank_k_model: difference cover of " + std::to_string(c) + " misses a difference");
      // How a role reaches atom p + a: the diagonal (a = 0) and any pair of d < c/2 read it
      // over the whole run; the pair of d = c/2 only over its half.
      g.reach_whole.assign(g.cover.size(), 0);
      g.reach_half.assign(g.cover.size(), -1);
      for (std::size_t e = 0; e < g.cover.size(); ++e) {
        const int a = g.cover[e];
        g.reach_whole[e] = a == 0;
        for (int d = 1; d <= c / 2; ++d) {
          const auto [pa, pb] = g.pair_of[std::size_t(d)];
          if (pa != a && pb != a) continue;
          if (2 * d != c) g.reach_whole[e] = 1;
          else g.reach_half[e] = pa;
        }
      }
      if (g.even) {
        for (std::int64_t b = 0; b <= c; ++b) g.atoms.push_back(b * p.n / c);
      } else {
        // Uneven roles: row blocks of equal work per rank (uneven_measures).
        const std::vector<double> mu = uneven_measures(g.pair_of, g.runs);
        if (mu.empty()) throw plan_error(name() + "no row blocks give these ranks per role equal work");
        double at = 0;
        g.atoms.push_back(0);
        for (int q = 0; q + 1 < c; ++q) at += mu[std::size_t(q)], g.atoms.push_back(std::llround(at * double(p.n)));
        g.atoms.push_back(p.n);
      }
    }
    for (std::size_t a = 0; a + 1 < g.atoms.size(); ++a)
      if (g.atoms[a + 1] <= g.atoms[a] && c > 1)
        throw plan_error("rank_k_model: part " + part_text(x) + " has an empty row block on n = " + std::to_string(p.n));
    g.a_weight.assign(std::size_t(c), unit_weight);
    g.c_weight.assign(std::size_t(c), unit_weight);
    parts_.push_back(std::move(g));
  }
  // Row blocks: every part's atom boundaries together.
  for (const part_geometry& g : parts_) bounds_.insert(bounds_.end(), g.atoms.begin(), g.atoms.end());
  std::sort(bounds_.begin(), bounds_.end());
  bounds_.erase(std::unique(bounds_.begin(), bounds_.end()), bounds_.end());
  for (part_geometry& g : parts_)
    for (std::int64_t row : g.atoms)
      g.first_block.push_back(int(std::lower_bound(bounds_.begin(), bounds_.end(), row) - bounds_.begin()));
  balance_ownership();
}

// The roles whose receipts can differ: each role of a star, a nest, a part of uneven roles
// or a part beside others (whose atoms break its rotation); the one part of even roles as
// one (its roles are alike by rotation): nothing to balance. A rank receives the pieces of
// its A cells that others own and, for the piece of each C block it owns, every other
// computer's partial: owning more of its A cells lowers its receipt, owning more of its C
// blocks raises it. So each round scales a role's A weight by f and its C weight by 1 / f,
// with f = (received / mean)^(1/2) of its first rank, and the best round's weights are
// kept. E.g. tbd7{0,1,3} + star4 on 4096^2: the Fano ranks receive 0.182 n^2 of A and the
// star's 0.111 to 0.131, so the Fano ranks end up owning about a third of the C they share
// with the star, not half (busiest rank 29.2 MB with one weight for A and C, 27.8 with
// these, the mean 27.8). The words moved are the same whoever owns them (every word is
// owned by a rank that touches it), so the mean does not move. Deterministic: every rank
// computes the same weights.
void rank_k_model::balance_ownership() {
  if (parts_.size() == 1 && parts_[0].part.cover == rank_k_cover::difference && parts_[0].even) return;
  struct place {
    std::size_t part;
    int role;
    int rank;   // the first rank of the role
    int count;  // ranks it stands for
  };
  std::vector<place> places;
  for (std::size_t x = 0; x < parts_.size(); ++x)
    for (int role = 0; role < parts_[x].part.group_ranks; ++role)
      places.push_back({x, role, rank_of(parts_[x], role, 0), parts_[x].runs[std::size_t(role)]});
  // What each place's first rank receives under the current weights.
  auto receipts = [&] {
    std::vector<double> got;
    for (const place& pl : places) got.push_back(double(cost(pl.rank).received_total()));
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
  double best_max = std::numeric_limits<double>::max();
  for (int round = 0; round < 60; ++round) {
    if (round > 0) got = receipts();
    const double most = *std::max_element(got.begin(), got.end());
    if (most < best_max) best_max = most, best = current();
    if (most <= mean * 1.0005) break;
    for (std::size_t i = 0; i < places.size(); ++i) {
      part_geometry& g = parts_[places[i].part];
      const double f = std::sqrt(std::max(got[i], 1.0) / mean);
      auto scale = [](std::int64_t& w, double by) {
        w = std::clamp<std::int64_t>(std::llround(double(w) * by), 1, std::int64_t(1) << 30);
      };
      scale(g.a_weight[std::size_t(places[i].role)], f);
      scale(g.c_weight[std::size_t(places[i].role)], 1 / f);
    }
  }
  for (std::size_t x = 0; x < parts_.size(); ++x) std::tie(parts_[x].a_weight, parts_[x].c_weight) = best[x];
}

int rank_k_model::rank_of(const part_geometry& x, int role, int j) const {
  const int c = x.part.group_ranks;
  if (x.even) return x.rank0 + j * c + role;
  int local = 0;
  for (int jj = 0; jj < j; ++jj)
    for (int m : x.runs) local += m > jj;
  for (int q = 0; q < role; ++q) local += x.runs[std::size_t(q)] > j;
  return x.rank0 + local;
}

rank_k_model::rank_place rank_k_model::place_of(int r) const {
  // The last part starting at or below r (parts are in rank order).
  const auto it = std::upper_bound(parts_.begin(), parts_.end(), r, [](int v, const part_geometry& g) { return v < g.rank0; });
  const part_geometry& x = *(it - 1);
  const int c = x.part.group_ranks;
  int local = r - x.rank0;
  if (x.even) return {&x, local / c, local % c};
  for (int j = 0;; ++j)
    for (int q = 0; q < c; ++q)
      if (x.runs[std::size_t(q)] > j && local-- == 0) return {&x, j, q};
}

std::pair<std::int64_t, std::int64_t> rank_k_model::run_columns(const part_geometry& x, int runs, int j) const {
  const std::int64_t len = x.k1 - x.k0;
  return {x.k0 + j * len / runs, x.k0 + (j + 1) * len / runs};
}

std::int64_t rank_k_model::chunk_start(const rank_place& at, int q) const {
  const auto [K0, K1] = run_columns(*at.part, at.part->runs[std::size_t(at.role)], at.run);
  return K0 + std::int64_t(q) * (K1 - K0) / s_.phases;
}

std::int64_t rank_k_model::rows_a() const { return p_.transa == 'N' ? p_.n : p_.k; }
std::int64_t rank_k_model::cols_a() const { return p_.transa == 'N' ? p_.k : p_.n; }

int rank_k_model::atom_of(const part_geometry& x, int b) const {
  return int(std::upper_bound(x.first_block.begin(), x.first_block.end(), b) - x.first_block.begin()) - 1;
}

// Difference cover, role p: the diagonal (p, p), then for d = 1 .. c/2 the pair
// {p + a, p + b}. E.g. c = 4, D = {0, 1, 2}, pairs d = 1: (0, 1), d = 2: (0, 2): role 1
// computes (1, 1), (2, 1) and (3, 1) on the first half of its run (its first atom 1 is
// below c/2 = 2). Star: star_units. Nest: the outer role (0) the outer triangle and the
// block below it, the inner role (1) the inner triangle.
std::vector<rank_k_model::atom_unit> rank_k_model::role_units(const part_geometry& x, int role) const {
  std::vector<atom_unit> out;
  if (x.part.cover == rank_k_cover::star) {
    for (const auto& u : star_units[role])
      if (u[0] >= 0) out.push_back({u[0], u[1], span::whole});
    return out;
  }
  if (x.part.cover == rank_k_cover::nest) {
    if (role == 0) return {{0, 0, span::whole}, {1, 0, span::whole}};
    return {{1, 1, span::whole}};
  }
  const int c = x.part.group_ranks;
  out.push_back({role, role, span::whole});
  for (int d = 1; d <= c / 2; ++d) {
    const int a = (role + x.pair_of[std::size_t(d)].first) % c, b = (role + x.pair_of[std::size_t(d)].second) % c;
    atom_unit u{std::max(a, b), std::min(a, b), span::whole};
    if (2 * d == c) u.when = a < c / 2 ? span::first : span::second;
    out.push_back(u);
  }
  return out;
}

// Difference cover: role p reads atom p + a for each a of D, over its whole run or, when a
// is only in the pair of d = c/2, over that unit's half. Star: role 0 atoms 0-2, role j
// atom j-1 and atoms 3-5. Nest: the outer role every row, the inner role the inner rows.
std::vector<std::pair<int, rank_k_model::span>> rank_k_model::read_atoms(const part_geometry& x, int role) const {
  std::vector<std::pair<int, span>> out;
  if (x.part.cover == rank_k_cover::star) {
    if (role == 0) return {{0, span::whole}, {1, span::whole}, {2, span::whole}};
    return {{role - 1, span::whole}, {3, span::whole}, {4, span::whole}, {5, span::whole}};
  }
  if (x.part.cover == rank_k_cover::nest) {
    if (role == 0) return {{0, span::whole}, {1, span::whole}};
    return {{1, span::whole}};
  }
  const int c = x.part.group_ranks;
  for (std::size_t e = 0; e < x.cover.size(); ++e) {
    span when = span::whole;
    if (!x.reach_whole[e]) when = (role + x.reach_half[e]) % c < c / 2 ? span::first : span::second;
    out.push_back({(role + x.cover[e]) % c, when});
  }
  std::sort(out.begin(), out.end(), [](const auto& u, const auto& v) { return u.first < v.first; });
  return out;
}

std::vector<int> rank_k_model::role_readers(const part_geometry& x, int a, bool first_half) const {
  std::vector<int> out;
  if (x.part.cover == rank_k_cover::star) {
    if (a <= 2) return {0, a + 1};
    return {1, 2, 3};
  }
  if (x.part.cover == rank_k_cover::nest) {
    if (a == 0) return {0};
    return {0, 1};
  }
  const int c = x.part.group_ranks;
  for (std::size_t e = 0; e < x.cover.size(); ++e) {
    const int p = ((a - x.cover[e]) % c + c) % c;
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
std::vector<int> rank_k_model::role_computers(const part_geometry& x, int ax, int ay) const {
  if (x.part.cover == rank_k_cover::star) {
    if (ax <= 2) return {ax == ay ? ax + 1 : 0};
    if (ay <= 2) return {ay + 1};
    if (ax == ay) return {ax - 2};
    return {ay == 3 ? (ax == 4 ? 1 : 3) : 2};
  }
  if (x.part.cover == rank_k_cover::nest) return {ay == 1 ? 1 : 0};
  const int c = x.part.group_ranks;
  if (ax == ay) return {ax};
  const int diff = ((ax - ay) % c + c) % c, d = std::min(diff, c - diff);
  const int a = x.pair_of[std::size_t(d)].first;
  if (2 * d == c) {
    std::vector<int> both{((ay - a) % c + c) % c, ((ax - a) % c + c) % c};
    std::sort(both.begin(), both.end());
    return both;
  }
  return {(((diff == d ? ay : ax) - a) % c + c) % c};
}

std::vector<rank_k_unit> rank_k_model::slice_units(int r) const {
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

std::vector<rank_k_unit> rank_k_model::units(int q, int r) const {
  std::vector<rank_k_unit> out;
  if (r < 0 || r >= ranks()) return out;
  const rank_place at = place_of(r);
  const std::int64_t lo = chunk_start(at, q), hi = chunk_start(at, q + 1);
  for (rank_k_unit u : slice_units(r)) {
    u.k0 = std::max(u.k0, lo), u.k1 = std::min(u.k1, hi);
    if (u.k1 > u.k0) out.push_back(u);
  }
  return out;
}

std::vector<std::int64_t> rank_k_model::k_cuts(const rank_place& at) const {
  const part_geometry& x = *at.part;
  const auto [K0, K1] = run_columns(x, x.runs[std::size_t(at.role)], at.run);
  std::vector<std::int64_t> cuts{K0, K1};
  const int c = x.part.group_ranks;
  if (x.part.cover == rank_k_cover::difference && c % 2 == 0 && c > 1) cuts.push_back(K0 + (K1 - K0) / 2);
  for (int q = 1; q < s_.phases; ++q) cuts.push_back(chunk_start(at, q));
  if (!x.even)  // where another role's run starts inside mine: a cell is in one run of each reader
    for (int m : x.runs)
      for (int j = 1; j < m; ++j)
        if (const std::int64_t v = run_columns(x, m, j).first; v > K0 && v < K1) cuts.push_back(v);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

std::vector<rank_k_model::a_cell> rank_k_model::a_needs(int q, int r) const {
  std::vector<a_cell> out;
  if (r < 0 || r >= ranks()) return out;
  const rank_place at = place_of(r);
  const part_geometry& x = *at.part;
  const auto [K0, K1] = run_columns(x, x.runs[std::size_t(at.role)], at.run);
  const std::int64_t Km = K0 + (K1 - K0) / 2;
  const std::int64_t lo = chunk_start(at, q), hi = chunk_start(at, q + 1);
  const std::vector<std::int64_t> cuts = k_cuts(at);
  for (const auto& [a, when] : read_atoms(x, at.role)) {
    const std::int64_t h0 = std::max(when == span::second ? Km : K0, lo), h1 = std::min(when == span::first ? Km : K1, hi);
    if (h1 <= h0) continue;
    for (int b = x.first_block[std::size_t(a)]; b < x.first_block[std::size_t(a) + 1]; ++b)
      for (std::size_t t = 0; t + 1 < cuts.size(); ++t)
        if (cuts[t] >= h0 && cuts[t + 1] <= h1) out.push_back(a_cell{b, cuts[t], cuts[t + 1]});
  }
  std::sort(out.begin(), out.end(), [](const a_cell& u, const a_cell& v) { return u.k0 != v.k0 ? u.k0 < v.k0 : u.b < v.b; });
  return out;
}

std::vector<int> rank_k_model::a_holders(const a_cell& cell) const {
  // The part whose columns hold cell.k0; then, for each role reading the cell's atom, the
  // run of that role holding it: run j starts at k0 + floor(j len / m) <= cell.k0.
  const auto it = std::upper_bound(parts_.begin(), parts_.end(), cell.k0, [](std::int64_t v, const part_geometry& g) { return v < g.k0; });
  const part_geometry& x = *(it - 1);
  const std::int64_t len = std::max<std::int64_t>(1, x.k1 - x.k0);
  auto run_of = [&](int m) {
    int j = int(std::min<std::int64_t>(m - 1, ((cell.k0 - x.k0) * m) / len));
    while (j > 0 && run_columns(x, m, j).first > cell.k0) --j;
    while (j + 1 < m && run_columns(x, m, j + 1).first <= cell.k0) ++j;
    return j;
  };
  const int atom = atom_of(x, cell.b);
  std::vector<int> out;
  // The roles reading the atom over a first half, over a second (the same roles but for the
  // d = c/2 pairs of an even cover), each at most |D| of them.
  const std::vector<int> first = role_readers(x, atom, true), second = role_readers(x, atom, false);
  std::vector<int> any;
  std::set_union(first.begin(), first.end(), second.begin(), second.end(), std::back_inserter(any));
  for (int p : any) {
    const int m = x.runs[std::size_t(p)], j = run_of(m);
    const auto [K0, K1] = run_columns(x, m, j);
    const std::vector<int>& readers = cell.k1 <= K0 + (K1 - K0) / 2 ? first : second;
    if (std::binary_search(readers.begin(), readers.end(), p)) out.push_back(rank_of(x, p, j));
  }
  std::sort(out.begin(), out.end());
  return out;
}

rank_k_model::share_at rank_k_model::a_share(const part_geometry& x, const std::vector<int>& h, int r) const {
  share_at out;
  for (int rank : h) {
    const std::int64_t w = x.a_weight[std::size_t(place_of(rank).role)];
    if (rank < r) out.before += w;
    if (rank == r) out.own = w;
    out.total += w;
  }
  return out;
}

std::vector<std::pair<rank_k_model::a_cell, piece>> rank_k_model::a_pieces(int r) const {
  std::vector<std::pair<a_cell, piece>> out;
  if (r < 0 || r >= ranks()) return out;  // a process outside the plan (idle) holds nothing
  const rank_place at = place_of(r);
  for (int q = 0; q < phases(); ++q)
    for (const a_cell& x : a_needs(q, r)) {
      const share_at sh = a_share(*at.part, a_holders(x), r);
      const piece pc = piece_of(0, x.size(*this), sh.before, sh.own, sh.total);
      if (pc.count > 0) out.emplace_back(x, pc);
    }
  return out;
}

std::vector<piece> rank_k_model::a_shares(const a_cell& x) const {
  const std::vector<int> h = a_holders(x);
  std::vector<piece> out;
  if (h.empty()) return out;
  const part_geometry& part = *place_of(h.front()).part;
  for (int r : h) {
    const share_at sh = a_share(part, h, r);
    out.push_back(piece_of(0, x.size(*this), sh.before, sh.own, sh.total));
  }
  return out;
}

std::vector<int> rank_k_model::c_holders(int i, int j) const {
  std::vector<int> out;
  for (const part_geometry& x : parts_) {
    const std::size_t from = out.size();
    for (int p : role_computers(x, atom_of(x, i), atom_of(x, j)))
      for (int run = 0; run < x.runs[std::size_t(p)]; ++run) out.push_back(rank_of(x, p, run));
    std::sort(out.begin() + std::ptrdiff_t(from), out.end());
  }
  return out;
}

std::int64_t rank_k_model::c_computers(int i, int j) const {
  std::int64_t s = 0;
  for (const part_geometry& x : parts_)
    for (int p : role_computers(x, atom_of(x, i), atom_of(x, j))) s += x.runs[std::size_t(p)];
  return s;
}

// Computers of block (i, j) go part by part, and within a part in rank order (run by run,
// role by role), owning in proportion to their roles' C weights. E.g. parts [k2 x tbd3] +
// [star4], block (i, j) computed by role 1 of the tbd3 (C weight 5, 2 runs) and role 0 of
// the star (C weight 2): weights 5, 5, 2, so rank 4 (run 1 of the first part) has 5 before
// it, 5 of its own, of 12. Before a rank of role p_r, run j_r: each computing role p's runs below
// j_r, and its run j_r when p < p_r.
rank_k_model::share_at rank_k_model::c_share(int r, int i, int j) const {
  const rank_place at = place_of(r);
  share_at out;
  for (const part_geometry& x : parts_) {
    std::int64_t before = 0, all = 0;
    for (int p : role_computers(x, atom_of(x, i), atom_of(x, j))) {
      const std::int64_t w = x.c_weight[std::size_t(p)], m = x.runs[std::size_t(p)];
      before += w * (std::min<std::int64_t>(at.run, m) + (p < at.role && at.run < m ? 1 : 0));
      all += w * m;
    }
    if (&x == at.part) out.before = out.total + before, out.own = x.c_weight[std::size_t(at.role)];
    out.total += all;
  }
  return out;
}

std::vector<piece> rank_k_model::c_shares(int i, int j) const {
  std::vector<piece> out;
  for (int r : c_holders(i, j)) {
    const share_at sh = c_share(r, i, j);
    out.push_back(piece_of(0, c_size(i, j), sh.before, sh.own, sh.total));
  }
  return out;
}

std::pair<int, int> rank_k_model::c_block(std::int64_t index) {
  int i = 0;
  while (std::int64_t(i + 1) * (i + 2) / 2 <= index) ++i;
  return {i, int(index - std::int64_t(i) * (i + 1) / 2)};
}

std::int64_t rank_k_model::c_size(int i, int j) const {
  const std::int64_t ri = block_rows(i);
  return i == j ? ri * (ri + 1) / 2 : ri * block_rows(j);
}

std::vector<piece> rank_k_model::c_pieces(int r) const {
  std::vector<piece> out;
  if (r < 0 || r >= ranks()) return out;  // a process outside the plan (idle) holds nothing
  for (const rank_k_unit& u : slice_units(r)) {
    const share_at sh = c_share(r, u.i, u.j);
    const std::int64_t idx = std::int64_t(u.i) * (u.i + 1) / 2 + u.j;
    const piece pc = piece_of(idx, c_size(u.i, u.j), sh.before, sh.own, sh.total);
    if (pc.count > 0) out.push_back(pc);
  }
  std::sort(out.begin(), out.end(), [](const piece& a, const piece& b) { return a.cell < b.cell; });
  return out;
}

std::int64_t rank_k_model::local_size(operand o, int r) const {
  std::int64_t n = 0;
  if (o == operand::a)
    for (const auto& [x, pc] : a_pieces(r)) n += pc.count;
  else if (o == operand::c)
    for (const piece& pc : c_pieces(r)) n += pc.count;
  return n;
}

// Rank r's costs from its own cells: A cells over the phases (each N - my piece in, my
// piece to each other holder out), C blocks at the end (each other computer's partial of
// my piece in, my partial of their pieces out), and the buffers the executor allocates:
// the largest phase's A blocks, every unit's C block, and the staging of the largest
// exchange (lib/mpi/rank_k_exchange).
rank_cost rank_k_model::cost(int r) const {
  rank_cost rc;
  if (r < 0 || r >= ranks()) return rc;
  const std::size_t elem = element_size(p_.type);
  const bool cplx = is_complex(p_.type);
  std::int64_t most_a_blocks = 0, most_a_stage = 0;
  const rank_place at = place_of(r);
  for (int q = 0; q < phases(); ++q) {
    std::int64_t in = 0, out = 0;
    std::map<int, std::pair<std::int64_t, std::int64_t>> hull;  // block b: its columns this phase
    for (const a_cell& x : a_needs(q, r)) {
      const std::vector<int> h = a_holders(x);
      const std::int64_t N = x.size(*this), s = std::int64_t(h.size());
      const share_at sh = a_share(*at.part, h, r);
      const std::int64_t own = piece_of(0, N, sh.before, sh.own, sh.total).count;
      in += N - own, out += own * (s - 1);
      rc.owned_bytes += std::size_t(own) * elem;
      auto [e, fresh] = hull.try_emplace(x.b, x.k0, x.k1);
      if (!fresh) e->second.first = std::min(e->second.first, x.k0), e->second.second = std::max(e->second.second, x.k1);
    }
    // The executor holds each row block's columns from its first cell to its last.
    std::int64_t blocks = 0;
    for (const auto& [b, k] : hull) blocks += block_rows(b) * (k.second - k.first);
    rc.received[0] += in, rc.sent[0] += out;
    most_a_blocks = std::max(most_a_blocks, blocks), most_a_stage = std::max(most_a_stage, in + out);
  }
  std::int64_t c_blocks = 0;
  for (const rank_k_unit& u : slice_units(r)) {
    const std::int64_t ri = block_rows(u.i), rj = block_rows(u.j), len = u.k1 - u.k0;
    rc.flops += u.i == u.j ? (cplx ? 4.0 : 1.0) * double(ri) * double(ri + 1) * double(len)
                           : gemm_flops(p_.type, ri, rj, len);
    c_blocks += ri * rj;
    const share_at sh = c_share(r, u.i, u.j);
    const std::int64_t N = c_size(u.i, u.j), own = piece_of(0, N, sh.before, sh.own, sh.total).count;
    // Every other computer sends its partial of my piece.
    rc.received[2] += own * (c_computers(u.i, u.j) - 1);
    rc.sent[2] += N - own;
    rc.owned_bytes += std::size_t(own) * elem;
  }
  const std::int64_t staging = std::max(most_a_stage, rc.received[2] + rc.sent[2]);
  rc.buffer_bytes = std::size_t(most_a_blocks + c_blocks + staging) * elem;
  return rc;
}

const std::vector<rank_cost>& rank_k_model::all_costs() const {
  std::lock_guard<std::mutex> g(*lock_);
  if (costs_ == nullptr) {
    auto all = std::make_shared<std::vector<rank_cost>>(std::size_t(ranks()));
    for (int r = 0; r < ranks(); ++r) (*all)[std::size_t(r)] = cost(r);
    costs_ = std::move(all);
  }
  return *costs_;
}

std::int64_t rank_k_model::max_received() const {
  std::int64_t m = 0;
  for (const rank_cost& c : all_costs()) m = std::max(m, c.received_total());
  return m;
}

double rank_k_model::mean_received() const {
  double s = 0;
  for (const rank_cost& c : all_costs()) s += double(c.received_total());
  return s / double(ranks());
}

std::size_t rank_k_model::max_peak_bytes() const {
  std::size_t m = 0;
  for (const rank_cost& c : all_costs()) m = std::max(m, c.peak_bytes());
  return m;
}

double rank_k_model::max_flops() const {
  double m = 0;
  for (const rank_cost& c : all_costs()) m = std::max(m, c.flops);
  return m;
}

}  // namespace prism
