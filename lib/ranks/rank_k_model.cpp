// lib/ranks/rank_k_model.cpp — the triangle-block scheme of a rank-k update over ranks:
// units, native layout and exact costs (prism/rank_k_model.hpp has the definitions).
#include <prism/error.hpp>
#include <prism/rank_k_model.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <numeric>

namespace prism {

namespace {

// Holder t of s owns elements [floor(t N / s), floor((t + 1) N / s)) of a cell of N,
// e.g. N = 10, s = 3: [0, 3), [3, 6), [6, 10).
piece piece_of(std::int64_t cell, std::int64_t N, std::int64_t s, std::int64_t t) {
  const std::int64_t first = t * N / s;
  return piece{cell, first, (t + 1) * N / s - first};
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

std::string rank_k_scheme::to_string() const {
  std::string s;
  if (groups > 1) s = "k" + std::to_string(groups);
  if (group_ranks > 1) {
    std::string d;
    for (int x : difference_cover(group_ranks)) d += (d.empty() ? "" : ",") + std::to_string(x);
    s += (s.empty() ? "" : " x ") + std::string("tbd") + std::to_string(group_ranks) + "{" + d + "}";
  }
  if (s.empty()) s = "1";
  if (phases > 1) s += " dfs k" + std::to_string(phases);
  return s;
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

rank_k_model::rank_k_model(const problem& p, const rank_k_scheme& s) : p_(p), s_(s) {
  if (p.op == operation::gemm) throw plan_error("rank_k_model: a gemm problem has no triangle (use rank_model)");
  if (s.groups < 1 || s.group_ranks < 1 || s.phases < 1) throw plan_error("rank_k_model: a scheme needs groups, ranks and phases >= 1");
  if (std::int64_t(s.groups) > std::max<std::int64_t>(1, p.k))
    throw plan_error("rank_k_model: " + std::to_string(s.groups) + " k slices of k = " + std::to_string(p.k));
  if (std::int64_t(s.group_ranks) > std::max<std::int64_t>(1, p.n))
    throw plan_error("rank_k_model: " + std::to_string(s.group_ranks) + " row blocks of n = " + std::to_string(p.n));
  if (s.group_ranks > 1 && s.group_ranks % 2 == 0 && p.k < 2 * std::int64_t(s.groups))
    throw plan_error("rank_k_model: an even group of " + std::to_string(s.group_ranks) +
                     " ranks halves its slice, so it needs k >= 2 x " + std::to_string(s.groups) + " slices");
  if (std::int64_t(s.phases) > std::max<std::int64_t>(1, p.k / s.groups))
    throw plan_error("rank_k_model: " + std::to_string(s.phases) + " phases of a slice of " + std::to_string(p.k / s.groups));
  const int c = s.group_ranks;
  cover_ = difference_cover(c);
  // For each d = 1 .. c/2 the first pair (a, b) of D, by a, with b - a = d mod c.
  pair_of_.assign(std::size_t(c / 2 + 1), {});
  for (int d = 1; d <= c / 2; ++d) {
    bool found = false;
    for (int a : cover_) {
      for (int b : cover_)
        if (((b - a) % c + c) % c == d) {
          pair_of_[std::size_t(d)] = {a, b}, found = true;
          break;
        }
      if (found) break;
    }
    if (!found) throw plan_error("rank_k_model: difference cover of " + std::to_string(c) + " misses " + std::to_string(d));
  }
  // How a rank reaches block p + a (see need): the diagonal (a = 0) and any pair of d < c/2
  // read it over the whole slice; the pair of d = c/2 only over its half.
  reach_.assign(cover_.size(), {});
  for (std::size_t x = 0; x < cover_.size(); ++x) {
    const int a = cover_[x];
    reach_[x].whole = a == 0;
    for (int d = 1; d <= c / 2; ++d) {
      const pair_choice& pc = pair_of_[std::size_t(d)];
      if (pc.a != a && pc.b != a) continue;
      if (2 * d != c) reach_[x].whole = true;
      else reach_[x].half_a = pc.a;
    }
  }
}

std::int64_t rank_k_model::block_start(int b) const { return std::int64_t(b) * p_.n / s_.group_ranks; }

std::int64_t rank_k_model::slice_start(int g) const { return std::int64_t(g) * p_.k / s_.groups; }

std::int64_t rank_k_model::chunk_start(int g, int q) const {
  const std::int64_t k0 = slice_start(g), len = slice_start(g + 1) - k0;
  return k0 + std::int64_t(q) * len / s_.phases;
}

std::int64_t rank_k_model::rows_a() const { return p_.transa == 'N' ? p_.n : p_.k; }
std::int64_t rank_k_model::cols_a() const { return p_.transa == 'N' ? p_.k : p_.n; }

// Rank r = g c + p: the diagonal (p, p), then for d = 1 .. c/2 the pair {p + a, p + b}.
// E.g. c = 4, D = {0, 1, 2}, pairs d = 1: (0, 1), d = 2: (0, 2): rank 1 computes (1, 1),
// (2, 1) and (3, 1) on the first half of its slice (its first block 1 is below c/2 = 2).
std::vector<rank_k_unit> rank_k_model::slice_units(int r) const {
  const int c = s_.group_ranks, g = group_of(r), p = r % c;
  const std::int64_t K0 = slice_start(g), K1 = slice_start(g + 1), Km = K0 + (K1 - K0) / 2;
  std::vector<rank_k_unit> out{{p, p, K0, K1}};
  for (int d = 1; d <= c / 2; ++d) {
    const int x = (p + pair_of_[std::size_t(d)].a) % c, y = (p + pair_of_[std::size_t(d)].b) % c;
    rank_k_unit u{std::max(x, y), std::min(x, y), K0, K1};
    if (2 * d == c) {
      if (x < c / 2) u.k1 = Km;
      else u.k0 = Km;
    }
    out.push_back(u);
  }
  return out;
}

std::vector<rank_k_unit> rank_k_model::units(int q, int r) const {
  std::vector<rank_k_unit> out;
  if (r < 0 || r >= ranks()) return out;
  const int g = group_of(r);
  const std::int64_t lo = chunk_start(g, q), hi = chunk_start(g, q + 1);
  for (rank_k_unit u : slice_units(r)) {
    u.k0 = std::max(u.k0, lo), u.k1 = std::min(u.k1, hi);
    if (u.k1 > u.k0) out.push_back(u);
  }
  return out;
}

// Group rank p reaches block b = p + a through cover element a: over the whole slice when
// a is 0 (the diagonal) or in the pair of some d < c/2; when only in the pair of d = c/2,
// over that unit's half.
std::pair<std::int64_t, std::int64_t> rank_k_model::need(int q, int r, int b) const {
  const int c = s_.group_ranks, g = group_of(r), p = r % c;
  const int a = ((b - p) % c + c) % c;
  const auto at = std::lower_bound(cover_.begin(), cover_.end(), a);
  if (at == cover_.end() || *at != a) return {0, 0};
  const reach& how = reach_[std::size_t(at - cover_.begin())];
  const std::int64_t K0 = slice_start(g), K1 = slice_start(g + 1), Km = K0 + (K1 - K0) / 2;
  std::int64_t h0 = K1, h1 = K0;
  if (how.whole) h0 = K0, h1 = K1;
  else if (how.half_a >= 0) {
    if ((p + how.half_a) % c < c / 2) h0 = K0, h1 = Km;
    else h0 = Km, h1 = K1;
  }
  const std::int64_t lo = std::max(h0, chunk_start(g, q)), hi = std::min(h1, chunk_start(g, q + 1));
  return hi > lo ? std::pair{lo, hi} : std::pair<std::int64_t, std::int64_t>{0, 0};
}

std::vector<std::int64_t> rank_k_model::k_cuts(int g) const {
  const std::int64_t K0 = slice_start(g), K1 = slice_start(g + 1);
  std::vector<std::int64_t> cuts{K0, K1};
  if (s_.group_ranks % 2 == 0 && s_.group_ranks > 1) cuts.push_back(K0 + (K1 - K0) / 2);
  for (int q = 1; q < s_.phases; ++q) cuts.push_back(chunk_start(g, q));
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

std::vector<rank_k_model::a_cell> rank_k_model::a_needs(int q, int r) const {
  std::vector<a_cell> out;
  if (r < 0 || r >= ranks()) return out;
  const int c = s_.group_ranks, g = group_of(r), p = r % c;
  const std::vector<std::int64_t> cuts = k_cuts(g);
  for (int a : cover_) {
    const int b = (p + a) % c;
    const auto [h0, h1] = need(q, r, b);
    for (std::size_t t = 0; t + 1 < cuts.size(); ++t)
      if (cuts[t] >= h0 && cuts[t + 1] <= h1) out.push_back(a_cell{b, cuts[t], cuts[t + 1]});
  }
  std::sort(out.begin(), out.end(), [](const a_cell& x, const a_cell& y) { return x.k0 != y.k0 ? x.k0 < y.k0 : x.b < y.b; });
  return out;
}

std::vector<int> rank_k_model::a_holders(const a_cell& x) const {
  const int c = s_.group_ranks;
  // The group whose slice holds column x.k0: slice_start(g) = floor(g k / G) <= k0.
  int g = int(std::min<std::int64_t>(s_.groups - 1, (x.k0 * s_.groups) / std::max<std::int64_t>(1, p_.k)));
  while (g > 0 && slice_start(g) > x.k0) --g;
  while (g + 1 < s_.groups && slice_start(g + 1) <= x.k0) ++g;
  // Group rank p reads block b = p + a (see need): over the whole slice, or one half.
  const std::int64_t K0 = slice_start(g), K1 = slice_start(g + 1), Km = K0 + (K1 - K0) / 2;
  std::vector<int> out;
  out.reserve(cover_.size());
  for (std::size_t i = 0; i < cover_.size(); ++i) {
    const reach& how = reach_[i];
    const int p = ((x.b - cover_[i]) % c + c) % c;
    bool reads = how.whole;
    if (!reads && how.half_a >= 0) reads = (p + how.half_a) % c < c / 2 ? x.k1 <= Km : x.k0 >= Km;
    if (reads) out.push_back(g * c + p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<rank_k_model::a_cell, piece>> rank_k_model::a_pieces(int r) const {
  std::vector<std::pair<a_cell, piece>> out;
  for (int q = 0; q < phases(); ++q)
    for (const a_cell& x : a_needs(q, r)) {
      const std::vector<int> h = a_holders(x);
      const auto t = std::lower_bound(h.begin(), h.end(), r) - h.begin();
      const piece pc = piece_of(0, x.size(*this), std::int64_t(h.size()), t);
      if (pc.count > 0) out.emplace_back(x, pc);
    }
  return out;
}

// Computers of block (i, j) in one group: the diagonal's rank i; else, with d = i - j
// mod c, the rank whose pair for min(d, c - d) lands on it (both ranks when d = c/2).
// E.g. c = 7, D = {0, 1, 3}, pair of d = 2 is (1, 3): block (5, 3) has d = 2, so rank
// p with p + 1 = 3, p = 2, computes it in each group.
std::vector<int> rank_k_model::group_computers(int i, int j) const {
  const int c = s_.group_ranks;
  std::vector<int> in_group;
  if (i == j) return {i};
  const int diff = ((i - j) % c + c) % c, d = std::min(diff, c - diff);
  const int a = pair_of_[std::size_t(d)].a;
  if (2 * d == c) in_group = {((j - a) % c + c) % c, ((i - a) % c + c) % c};
  else in_group.push_back((((diff == d ? j : i) - a) % c + c) % c);
  std::sort(in_group.begin(), in_group.end());
  return in_group;
}

std::vector<int> rank_k_model::c_holders(int i, int j) const {
  const int c = s_.group_ranks;
  const std::vector<int> in_group = group_computers(i, j);
  std::vector<int> out;
  for (int g = 0; g < s_.groups; ++g)
    for (int p : in_group) out.push_back(g * c + p);
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
  if (r < 0 || r >= ranks()) return out;
  const int c = s_.group_ranks, g = group_of(r);
  for (const rank_k_unit& u : slice_units(r)) {
    // My index among the holders: groups ascending, each with the same positions.
    const std::vector<int> in_group = group_computers(u.i, u.j);
    const std::int64_t per = std::int64_t(in_group.size());
    const std::int64_t t = g * per + (std::find(in_group.begin(), in_group.end(), r % c) - in_group.begin());
    const std::int64_t idx = std::int64_t(u.i) * (u.i + 1) / 2 + u.j;
    const piece pc = piece_of(idx, c_size(u.i, u.j), per * s_.groups, t);
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
  for (int q = 0; q < phases(); ++q) {
    std::int64_t in = 0, out = 0, blocks = 0;
    for (const a_cell& x : a_needs(q, r)) {
      const std::vector<int> h = a_holders(x);
      const std::int64_t N = x.size(*this), s = std::int64_t(h.size());
      const std::int64_t t = std::lower_bound(h.begin(), h.end(), r) - h.begin();
      const std::int64_t own = piece_of(0, N, s, t).count;
      in += N - own, out += own * (s - 1), blocks += N;
      rc.owned_bytes += std::size_t(own) * elem;
    }
    rc.received[0] += in, rc.sent[0] += out;
    most_a_blocks = std::max(most_a_blocks, blocks), most_a_stage = std::max(most_a_stage, in + out);
  }
  std::int64_t c_blocks = 0;
  const int c = s_.group_ranks, g = group_of(r);
  for (const rank_k_unit& u : slice_units(r)) {
    const std::int64_t ri = block_rows(u.i), rj = block_rows(u.j), len = u.k1 - u.k0;
    rc.flops += u.i == u.j ? (cplx ? 4.0 : 1.0) * double(ri) * double(ri + 1) * double(len)
                           : gemm_flops(p_.type, ri, rj, len);
    c_blocks += ri * rj;
    // My piece of the block: holder index = group x computers per group + my place.
    const std::vector<int> in_group = group_computers(u.i, u.j);
    const std::int64_t per = std::int64_t(in_group.size()), s = per * s_.groups, N = c_size(u.i, u.j);
    const std::int64_t t = g * per + (std::find(in_group.begin(), in_group.end(), r % c) - in_group.begin());
    const std::int64_t own = piece_of(0, N, s, t).count;
    rc.received[2] += own * (s - 1);
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
