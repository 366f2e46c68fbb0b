// lib/ranks/rank_planner.cpp — choose_ranks: the rank-level steps of a plan, chosen by cost.
// What it searches, how it scores and when it adds rank-level DFS phases: docs/distributed.md,
// "Choosing the grid, for any P", "The least footprint" and "A worked example, P = 7".
// The search's recursive model: at a cut over p ranks, a rank of part c (p_c ranks) receives
// |X| (1/p_c - 1/p) elements of the operand X the cut does not split (B for m, A for n, C for
// k; for equal parts this sums to rank_model.hpp's grid formula), and the slowest rank takes
// max over parts of (those bytes / B + the part's time), a leaf its flops / F.
#include <prism/bounds.hpp>
#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/rank_model.hpp>

#include "../recursive/local_planner.hpp"
#include "covers.hpp"
#include "rank_planner.hpp"
#include "tree_schedule.hpp"
#include "../recursive/split.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>
#include <numeric>
#include <memory>
#include <optional>
#include <set>
#include <cstdarg>
#include <cstdio>
#include <ostream>
#include <sstream>

namespace prism {

namespace {

constexpr std::size_t no_cap = std::numeric_limits<std::size_t>::max();
constexpr std::size_t exact_top = 12;  // trees scored exactly when the best fits
constexpr std::size_t exact_more = 200;
constexpr int max_unequal = 64;  // unequal two-part rank splits above this many ranks: none
constexpr int max_idle = 64;     // the exact grids of every P' in [P - 64, P] are weighed

// A rank-level subtree: a leaf (one rank) when kids is empty. Its sizes along d are given
// (a caller's grid) or, when empty, split in proportion to the ranks of the box it is
// placed on: the search shares one subtree between boxes of nearly equal extents.
struct subtree {
  dim d = dim::m;
  std::vector<int> ranks;
  std::vector<std::int64_t> sizes;
  std::vector<std::shared_ptr<const subtree>> kids;
  double seconds = 0;  // recursive model, slowest rank
};
using tree_ptr = std::shared_ptr<const subtree>;

// A one-rank subtree of modelled `seconds`.
tree_ptr leaf(double seconds) {
  auto t = std::make_shared<subtree>();
  t->seconds = seconds;
  return t;
}

// The rank shares of each way to cut p ranks: equal parts per prime factor, then, when p
// has a prime factor above 5 (equal parts would be many thin slabs), unequal pairs (all up
// to p = 16, near-halves and "largest power of two + rest" above, none above p = 64).
// Example: p = 7 gives {7 x 1}, {1, 6}, {2, 5}, {3, 4}; p = 12 gives {2 x 6}, {3 x 4}.
std::vector<std::vector<int>> rank_splits(int p) {
  std::vector<std::vector<int>> out;
  const std::vector<std::int64_t> factors = ranks::prime_divisors(p);
  for (std::int64_t f : factors) out.push_back(std::vector<int>(std::size_t(f), p / int(f)));
  if (factors.empty() || factors.back() <= 5 || p > max_unequal) return out;
  auto pair = [&](int p1) {
    if (p1 >= 1 && 2 * p1 < p &&
        std::none_of(out.begin(), out.end(), [&](const std::vector<int>& s) { return s.size() == 2 && s[0] == p1; }))
      out.push_back({p1, p - p1});
  };
  if (p <= 16) {
    for (int p1 = 1; 2 * p1 < p; ++p1) pair(p1);
  } else {
    for (int p1 = p / 2 - 2; p1 <= p / 2; ++p1) pair(p1);
    int pow2 = 1;
    while (pow2 * 2 <= p) pow2 *= 2;
    pair(p - pow2);
  }
  return out;
}

// The search's memo key of an extent: exact below 16, else rounded to 1/8 of its power
// of two, e.g. 1000 -> 1024 and 700 -> 704 (multiples of 64 between 512 and 1024). Boxes
// that differ only by rounding share one subtree, so the memo stays small at any P; the
// chosen trees are scored exactly afterwards on the real boxes. As a 12-bit code of the
// rounded value q 2^e (8 <= q < 16): x itself below 16, else 16 e + q, e.g. 700 -> 704 =
// 11 * 2^6 -> 16 * 6 + 11 = 107, and 1000 -> 1024 = 8 * 2^7 -> 120, as for 1024 itself.
std::uint64_t coarse(std::int64_t x) {
  if (x < 16) return std::uint64_t(x);
  int e = 60 - __builtin_clzll(std::uint64_t(x));           // 2^(e + 3) <= x < 2^(e + 4): steps of 2^e
  std::int64_t q = (x + (std::int64_t(1) << e >> 1)) >> e;  // 8 ... 16
  if (q == 16) q = 8, ++e;
  return std::uint64_t(16 * e + q);
}

// The search's memo: the best subtree of each key (coarse extents, ranks) as a decision,
// found for the first box of that key: its cut (split index into splits(p), -1 a leaf, -2
// none fits) and its modelled seconds. A P = 1024 search makes some 36,000 decisions and
// 250,000 look-ups, so a look-up reads one 16-byte entry of an open-addressing table (key
// and seconds; 1 MB at that P), and the decisions themselves lie apart.
struct decision_memo {
  struct decision {
    std::int64_t m, n, k;  // the first box of this key
    int split;
    dim d;
  };
  struct entry {
    std::uint64_t key = 0;  // 0: empty (p >= 1)
    double seconds;         // -1: none fits
  };
  std::vector<entry> table = std::vector<entry>(1 << 14);
  std::vector<std::int32_t> at = std::vector<std::int32_t>(1 << 14);  // each entry's decision
  std::vector<decision> decisions;

  // The key of box m x n x k on p ranks: three extent codes and p (at most 2^20: set_ranks).
  static std::uint64_t key(std::int64_t m, std::int64_t n, std::int64_t k, int p) {
    return coarse(m) | coarse(n) << 12 | coarse(k) << 24 | std::uint64_t(p) << 36;
  }
  // The entry of key: its own, or the empty one where it belongs.
  std::size_t find(std::uint64_t key) const {
    std::uint64_t h = key * 0x9e3779b97f4a7c15ull;  // Fibonacci hashing
    h ^= h >> 32;
    for (std::size_t i = std::size_t(h) & (table.size() - 1);; i = (i + 1) & (table.size() - 1))
      if (table[i].key == 0 || table[i].key == key) return i;
  }
  // Keeps decision x of `seconds` under key (not yet kept), at most 70 % of the table full.
  void add(std::uint64_t key, double seconds, const decision& x) {
    const std::size_t i = find(key);
    table[i] = entry{key, seconds}, at[i] = std::int32_t(decisions.size());
    decisions.push_back(x);
    if (10 * decisions.size() > 7 * table.size()) {
      std::vector<entry> old(2 * table.size());
      std::vector<std::int32_t> old_at(old.size());
      old.swap(table), old_at.swap(at);
      for (std::size_t j = 0; j < old.size(); ++j)
        if (old[j].key != 0) {
          const std::size_t t = find(old[j].key);
          table[t] = old[j], at[t] = old_at[j];
        }
    }
  }
};

// Calls f(c, size) for each part of a cut of `ext` by shares: detail::split's sizes,
// computed as they are needed (a cut may have a thousand parts of two sizes).
template <class F>
void each_part(std::int64_t ext, const std::vector<int>& shares, F&& f) {
  const int total = std::accumulate(shares.begin(), shares.end(), 0);
  std::int64_t prev = 0;
  int cum = 0;
  for (std::size_t c = 0; c < shares.size(); ++c) {
    cum += shares[c];
    const std::int64_t end = c + 1 == shares.size() ? ext : std::max(prev, detail::first_part(ext, cum, total, 1));
    if (!f(c, end - prev)) return;
    prev = end;
  }
}

// The child box of part c of a cut along d.
std::array<std::int64_t, 3> child(dim d, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t size) {
  return {d == dim::m ? size : m, d == dim::n ? size : n, d == dim::k ? size : k};
}

// Elements of the operand a cut along d does not split, whose block every part needs: B
// (k x n) for m, A (m x k) for n, C (m x n) for k.
double unsplit(dim d, std::int64_t m, std::int64_t n, std::int64_t k) {
  return d == dim::m ? double(k) * double(n) : d == dim::n ? double(m) * double(k) : double(m) * double(n);
}

struct search {
  search(const problem& p, double f, double b, std::size_t e) : prob(p), F(f), B(b), elem(e) {}
  problem prob;
  double F, B;
  std::size_t elem;
  decision_memo memo;  // trees are built only for the candidates (best_tree), from the same boxes
  std::vector<tree_ptr> trees;  // built on demand, by decision
  std::unordered_map<int, std::vector<std::vector<int>>> splits_of;  // rank_splits, once per p

  const std::vector<std::vector<int>>& splits(int p) {
    auto it = splits_of.find(p);
    if (it == splits_of.end()) it = splits_of.emplace(p, rank_splits(p)).first;
    return it->second;
  }

  double leaf_seconds(std::int64_t m, std::int64_t n, std::int64_t k) const {
    return gemm_flops(prob.type, m, n, k) / F;
  }

  // The modelled seconds of a part of `ranks` of a cut over p ranks whose operand block of
  // `shared` elements every part needs (the file comment's model), its subtree taking `kid`.
  double part_seconds(double shared, int ranks, int p, double kid) const {
    return shared * (1.0 / ranks - 1.0 / p) * double(elem) / B + kid;
  }

  // Calls f(d, split index, seconds) for every cut of box m x n x k over p >= 2 ranks whose
  // parts each get a piece, children at their best. Parts of equal size and share are one
  // child, looked up once: an equal split into f parts has at most two sizes (e.g. 1024
  // over 3: 342, 341, 341), so a cut costs a few look-ups however many parts.
  template <class F>
  void each_cut(std::int64_t m, std::int64_t n, std::int64_t k, int p, F&& f) {
    for (dim d : {dim::m, dim::n, dim::k}) {
      const std::int64_t ext = extent(d, m, n, k);
      const double shared = unsplit(d, m, n, k);
      const std::vector<std::vector<int>>& ways = splits(p);  // (unordered_map: stays put)
      for (std::size_t x = 0; x < ways.size(); ++x) {
        const std::vector<int>& shares = ways[x];
        if (ext < std::int64_t(shares.size())) continue;
        double seconds = 0;
        bool ok = true;
        std::int64_t last = -1;
        each_part(ext, shares, [&](std::size_t c, std::int64_t size) {
          if (c > 0 && size == last && shares[c] == shares[c - 1]) return true;
          last = size;
          const auto [cm, cn, ck] = child(d, m, n, k, size);
          const double kid = size < 1 ? -1 : best(cm, cn, ck, shares[c]);
          if (kid < 0) return ok = false;
          seconds = std::max(seconds, part_seconds(shared, shares[c], p, kid));
          return true;
        });
        if (ok) f(d, int(x), seconds);
      }
    }
  }

  // The tree of one cut of box m x n x k over p ranks, its children at their best.
  tree_ptr make_tree(std::int64_t m, std::int64_t n, std::int64_t k, int p, dim d, int split, double seconds) {
    const std::vector<int>& shares = splits(p)[std::size_t(split)];
    auto t = std::make_shared<subtree>();
    t->d = d, t->ranks = shares, t->seconds = seconds;
    std::int64_t last = -1;
    each_part(extent(d, m, n, k), shares, [&](std::size_t c, std::int64_t size) {
      const auto [cm, cn, ck] = child(d, m, n, k, size);
      t->kids.push_back(c > 0 && size == last && shares[c] == shares[c - 1] ? t->kids.back() : best_tree(cm, cn, ck, shares[c]));
      last = size;
      return true;
    });
    return t;
  }

  // Every cut of box m x n x k over p ranks, children at their best; on one rank, its leaf.
  std::vector<tree_ptr> options(std::int64_t m, std::int64_t n, std::int64_t k, int p) {
    if (p == 1) return {best_tree(m, n, k, 1)};
    std::vector<tree_ptr> out;
    std::vector<std::tuple<dim, int, double>> cuts;
    each_cut(m, n, k, p, [&](dim d, int split, double seconds) { cuts.emplace_back(d, split, seconds); });
    for (const auto& [d, split, seconds] : cuts) out.push_back(make_tree(m, n, k, p, d, split, seconds));
    return out;
  }

  // The grids pm x pn x pk (pm pn pk = P' for every P' in [P - 64, P]) that model
  // fastest, and those that move least (fewest words received), a few of each: in closed
  // form, so all of them are weighed at any P (P = 100,000: about 7,000 grids).
  std::vector<tree_ptr> exact_grids(std::int64_t m, std::int64_t n, std::int64_t k, int P, std::vector<std::array<int, 3>>& leanest) {
    struct grid { double seconds, words; int pm, pn, pk; };
    std::vector<grid> all;
    for (int q = std::max(1, P - max_idle); q <= P; ++q)
      for (int pm = 1; pm <= q; ++pm) {
        if (q % pm != 0 || pm > m) continue;
        for (int pn = 1; pn <= q / pm; ++pn) {
          if ((q / pm) % pn != 0 || pn > n) continue;
          const int pk = q / pm / pn;
          if (pk > k) continue;
          const double fm = double(pm), fn = double(pn), fk = double(pk);
          const double words = double(m) * double(k) / (fm * fk) * (1 - 1 / fn) +
                               double(k) * double(n) / (fk * fn) * (1 - 1 / fm) +
                               double(m) * double(n) / (fm * fn) * (1 - 1 / fk);
          const auto up = [](std::int64_t x, int f) { return (x + f - 1) / f; };
          const double seconds = leaf_seconds(up(m, pm), up(n, pn), up(k, pk)) + words * double(elem) / B;
          all.push_back(grid{seconds, words, pm, pn, pk});
        }
      }
    std::vector<tree_ptr> out;
    auto take = [&](auto key) {
      std::sort(all.begin(), all.end(), [&](const grid& a, const grid& b) { return key(a) < key(b); });
      for (std::size_t i = 0; i < all.size() && i < 2; ++i)  // (grid_tree skips a cut into one part)
        if (tree_ptr t = grid_tree(m, n, k, {{dim::m, all[i].pm, {}}, {dim::n, all[i].pn, {}}, {dim::k, all[i].pk, {}}}))
          out.push_back(std::move(t));
    };
    take([](const grid& g) { return g.seconds; });
    take([](const grid& g) { return g.words; });
    // The leanest three, when the leanest leaves ranks idle: P has no grid as good.
    if (!all.empty() && all[0].pm * all[0].pn * all[0].pk < P)
      for (std::size_t i = 0; i < all.size() && i < 3; ++i) leanest.push_back({all[i].pm, all[i].pn, all[i].pk});
    return out;
  }

  // Slab trees: edge d cut into S slabs of unequal ranks p_i (in proportion), each slab a
  // grid a_i x b_i of the other two edges e1, e2. A rank of slab i receives
  //   (d e1 / P)(b_i - 1) + (d e2 / P)(a_i - 1) + (e1 e2 / (a_i b_i))(1 - 1/S),
  // a grid's formula with all P ranks in it: slabs of grids near P / S that add up to P
  // move less than the best grid of fewer ranks when P has no good grid. E.g. 16384^3 on
  // P = 3001: k in 15 slabs, 13 x 15, nine 14 x 14, four 13 x 16 and 14 x 15 (195 + 1764 +
  // 832 + 210), 0.01348 n^2 a rank against 0.01361 n^2 for 14 x 14 x 15 on 2940 ranks.
  struct slab {
    double words;
    int a, b;  // the grid along e1, e2
  };
  struct slabs {
    double words;  // the largest of its slabs'
    dim d;
    std::vector<slab> parts;
  };

  // For each edge d and each S near the best grids' (`counts`), the least-moving S grids
  // summing to P, from the grids near P / S that move least; the best two as trees.
  std::vector<tree_ptr> slab_trees(std::int64_t m, std::int64_t n, std::int64_t k, int P, const std::vector<std::array<int, 3>>& counts) {
    std::vector<slabs> found;
    const std::int64_t ext[3] = {m, n, k};
    for (int d = 0; d < 3; ++d) {
      const int e1 = d == 0 ? 1 : 0, e2 = d == 2 ? 1 : 2;
      std::vector<int> tried;
      for (const auto& g : counts)
        for (int S : {g[std::size_t(d)] - 1, g[std::size_t(d)], g[std::size_t(d)] + 1}) {
          if (S < 2 || S > P / 2 || S > ext[d] || std::find(tried.begin(), tried.end(), S) != tried.end()) continue;
          tried.push_back(S);
          const double t = double(P) / S, de1 = double(ext[d]) * double(ext[e1]) / P, de2 = double(ext[d]) * double(ext[e2]) / P;
          // The best grid of each product in [3t/4, 4t/3]; of those, the 16 that move least
          // and the 32 that move least within 6 % of t (slabs near the mean t).
          std::vector<slab> wide, near;
          for (int a = 1; a <= ext[e1] && a <= int(4 * t / 3); ++a)
            for (int b = std::max(1, int(std::ceil(0.75 * t / a))); b <= ext[e2] && a * b <= int(4 * t / 3); ++b) {
              const slab o{de1 * (b - 1) + de2 * (a - 1) + double(ext[e1]) * double(ext[e2]) / (double(a) * b) * (1 - 1.0 / S), a, b};
              auto same = std::find_if(wide.begin(), wide.end(), [&](const slab& x) { return x.a * x.b == a * b; });
              if (same == wide.end()) wide.push_back(o);
              else if (o.words < same->words) *same = o;
            }
          std::sort(wide.begin(), wide.end(), [](const slab& x, const slab& y) { return x.words < y.words; });
          for (const slab& o : wide)
            if (near.size() < 16 || (std::abs(o.a * o.b - t) <= 0.06 * t + 3 && near.size() < 48)) near.push_back(o);
          if (std::optional<slabs> s = sum_to(near, S, P)) s->d = dim(d), found.push_back(std::move(*s));
        }
    }
    std::sort(found.begin(), found.end(), [](const slabs& x, const slabs& y) { return x.words < y.words; });
    std::vector<tree_ptr> out;
    for (std::size_t i = 0; i < found.size() && out.size() < 2; ++i)
      if (tree_ptr t = slab_tree(m, n, k, found[i].d, found[i].parts)) out.push_back(std::move(t));
    return out;
  }

  // S of the grids `near` (by words) with products summing to P, the largest words least:
  // the fewest first grids that allow it, as u copies of x, S - 1 - u of y and one z.
  static std::optional<slabs> sum_to(const std::vector<slab>& near, int S, int P) {
    for (std::size_t j = 1; j <= near.size(); ++j)
      for (std::size_t x = 0; x < j; ++x)
        for (std::size_t y = 0; y < j; ++y) {
          const int vx = near[x].a * near[x].b, vy = near[y].a * near[y].b;
          if (vx > vy || (vx == vy && x != y)) continue;
          for (std::size_t z = 0; z < j; ++z) {
            const int vz = near[z].a * near[z].b, rest = P - vz - (S - 1) * vy;  // rest = -u (vy - vx)
            if (vy == vx ? rest != 0 : (rest > 0 || -rest % (vy - vx) != 0 || -rest / (vy - vx) > S - 1)) continue;
            const int u = vy == vx ? 0 : -rest / (vy - vx);
            std::vector<slab> parts(std::size_t(u), near[x]);
            parts.insert(parts.end(), std::size_t(S - 1 - u), near[y]);
            parts.push_back(near[z]);
            std::stable_sort(parts.begin(), parts.end(), [](const slab& p, const slab& q) { return p.a * p.b < q.a * q.b; });
            return slabs{near[j - 1].words, dim::m, std::move(parts)};
          }
        }
    return std::nullopt;
  }

  // Cut tree t (its d, ranks and sizes set) of box m x n x k: part c's subtree is
  // kid(c, its box), its seconds the slowest part's; null when a part or a kid is empty.
  template <class K>
  tree_ptr cut_tree(std::shared_ptr<subtree> t, std::int64_t m, std::int64_t n, std::int64_t k, K&& kid) {
    const int p = std::accumulate(t->ranks.begin(), t->ranks.end(), 0);
    for (std::size_t c = 0; c < t->sizes.size(); ++c) {
      if (t->sizes[c] < 1) return nullptr;
      const auto [cm, cn, ck] = child(t->d, m, n, k, t->sizes[c]);
      tree_ptr x = kid(c, cm, cn, ck);
      if (!x) return nullptr;
      t->seconds = std::max(t->seconds, part_seconds(unsplit(t->d, m, n, k), t->ranks[c], p, x->seconds));
      t->kids.push_back(std::move(x));
    }
    return t;
  }

  // The slab tree: edge d in slabs of a_i b_i ranks (P in all), each a grid of the other two edges.
  tree_ptr slab_tree(std::int64_t m, std::int64_t n, std::int64_t k, dim d, const std::vector<slab>& parts) {
    auto t = std::make_shared<subtree>();
    t->d = d;
    for (const slab& x : parts) t->ranks.push_back(x.a * x.b);
    t->sizes = detail::split(extent(d, m, n, k), t->ranks, 1);
    const dim e1 = d == dim::m ? dim::n : dim::m, e2 = d == dim::k ? dim::n : dim::k;
    return cut_tree(t, m, n, k, [&](std::size_t c, std::int64_t cm, std::int64_t cn, std::int64_t ck) {
      return grid_tree(cm, cn, ck, {{e1, parts[c].a, {}}, {e2, parts[c].b, {}}});
    });
  }

  // The tree that cuts by `cuts` level by level (every part of a level cut alike), e.g.
  // {{m, 2}, {n, 2}}: a 2 x 2 grid; null when an edge is shorter than its parts.
  tree_ptr grid_tree(std::int64_t m, std::int64_t n, std::int64_t k, const ranks::rank_grid& cuts, std::size_t level = 0) {
    if (level == cuts.size()) return leaf(leaf_seconds(m, n, k));
    const dim d = cuts[level].d;
    const int f = cuts[level].parts;
    const std::int64_t ext = extent(d, m, n, k);
    if (f < 1 || ext < f) return nullptr;
    if (f == 1) return grid_tree(m, n, k, cuts, level + 1);
    int below = 1;
    for (std::size_t l = level + 1; l < cuts.size(); ++l) below *= cuts[l].parts;
    auto t = std::make_shared<subtree>();
    t->d = d;
    t->ranks.assign(std::size_t(f), below);
    const std::vector<std::int64_t>& given = cuts[level].sizes;
    const bool fits_edge = given.size() == std::size_t(f) &&
                           std::accumulate(given.begin(), given.end(), std::int64_t(0)) == ext &&
                           std::all_of(given.begin(), given.end(), [](std::int64_t x) { return x >= 1; });
    t->sizes = fits_edge ? given : detail::split(ext, t->ranks, 1);  // (parts of >= 1: ext >= f)
    return cut_tree(t, m, n, k, [&](std::size_t, std::int64_t cm, std::int64_t cn, std::int64_t ck) {
      return grid_tree(cm, cn, ck, cuts, level + 1);
    });
  }

  // The best subtree's modelled seconds of m x n x k on p ranks (its decision kept); -1
  // when the box cannot give each of p ranks a piece.
  double best(std::int64_t m, std::int64_t n, std::int64_t k, int p) {
    const std::uint64_t key = decision_memo::key(m, n, k, p);
    if (const decision_memo::entry& e = memo.table[memo.find(key)]; e.key != 0) return e.seconds;
    decision_memo::decision x{m, n, k, -1, dim::m};
    double seconds = leaf_seconds(m, n, k);
    if (p > 1) {
      x.split = -2;
      each_cut(m, n, k, p, [&](dim d, int split, double s) {
        if (x.split == -2 || s < seconds) x.split = split, x.d = d, seconds = s;
      });
      if (x.split == -2) seconds = -1;
    }
    memo.add(key, seconds, x);
    return seconds;
  }

  // The best subtree itself, built from its decision (the first box of its key); null when
  // none fits p ranks.
  tree_ptr best_tree(std::int64_t m, std::int64_t n, std::int64_t k, int p) {
    const double seconds = best(m, n, k, p);
    if (seconds < 0) return nullptr;
    const std::size_t at = std::size_t(memo.at[memo.find(decision_memo::key(m, n, k, p))]);
    trees.resize(memo.decisions.size());
    if (!trees[at]) {
      const decision_memo::decision x = memo.decisions[at];
      tree_ptr t = x.split == -1 ? leaf(seconds) : make_tree(x.m, x.n, x.k, p, x.d, x.split, seconds);
      trees.resize(memo.decisions.size());  // make_tree may have added decisions
      trees[at] = std::move(t);
    }
    return trees[at];
  }
};

int tree_ranks(const subtree& t) { return t.kids.empty() ? 1 : std::accumulate(t.ranks.begin(), t.ranks.end(), 0); }

// The local subtrees already planned, by a rank box's extents and share: a later rank
// with equal ones gets a "same rank R" node instead of a copy (the local planner looks
// only at extents and share), so a plan holds a few local subtrees however many ranks
// and phases it spans. "same rank R" names R's latest local subtree (plan.hpp), so an
// entry stays usable only while its subtree is still its rank's latest.
struct local_memo {
  std::map<std::array<std::int64_t, 5>, int> node_of;  // key -> local subtree root
  std::vector<int> latest;                             // per rank: its latest subtree root

  explicit local_memo(int ranks) : latest(std::size_t(ranks), -1) {}

  // The local root for rank r's box b under resources o: a "same rank" node when an
  // equal one is still named by its rank, else a subtree planned by `plan_fresh`.
  template <class F>
  int place(std::vector<node>& nodes, const box& b, const resources& o, F&& plan_fresh) {
    const std::array<std::int64_t, 5> key{b.m, b.n, b.k, o.domains.count, o.threads};
    const int r = o.ranks.first;
    auto it = latest.size() > 1 ? node_of.find(key) : node_of.end();  // one rank: no rank steps to share under
    if (it != node_of.end() && latest[std::size_t(nodes[std::size_t(it->second)].owns.ranks.first)] == it->second) {
      nodes.emplace_back().same = it->second;
      latest[std::size_t(r)] = it->second;
      return int(nodes.size()) - 1;
    }
    const int local = plan_fresh();
    if (local < 0) return local;
    nodes[std::size_t(local)].owns.ranks = span{r, 1};  // derive() sets it too; latest needs it now
    node_of[key] = local;
    latest[std::size_t(r)] = local;
    return local;
  }
};

// Appends a rank-level step (kind, cut d, parts) of box b on resources r whose child c is
// the root kid(child_step) returns; the step's index, -1 when a child's is.
template <class F>
int rank_step(std::vector<node>& nodes, step_kind kind, dim d, std::vector<part> parts, const box& b, const resources& r, F&& kid) {
  const int index = int(nodes.size());
  nodes.emplace_back();
  node nd;
  nd.kind = kind, nd.cut = d, nd.where = level::rank, nd.parts = std::move(parts);
  bool ok = true;
  for_each_child(nd, b, r, [&](const child_step& ch) {
    const int c = ok ? kid(ch) : -1;
    ok = c >= 0;
    nd.children.push_back(c);
  });
  if (!ok) return -1;
  nodes[std::size_t(index)] = std::move(nd);
  return index;
}

// Builds plan nodes for the rank subtree t on box b and resources r; each rank's local
// levels get `local_budget` bytes of temporaries. Returns the subtree root, -1 when a
// rank's box is too small for its NUMA domains.
int emit(std::vector<node>& nodes, const subtree& t, const box& b, const resources& r, const problem& p,
         const context& ctx, std::size_t local_budget, local_memo& memo) {
  if (t.kids.empty())
    return memo.place(nodes, b, r, [&] { return detail::plan_local(nodes, p, b, r, ctx, local_budget); });
  const std::int64_t ext = extent(t.d, b.m, b.n, b.k);
  if (ext < std::int64_t(t.ranks.size())) return -1;  // a shared subtree on a box too thin for it
  const std::vector<std::int64_t> sizes = t.sizes.empty() ? detail::split(ext, t.ranks, 1) : t.sizes;
  std::vector<part> parts;
  for (std::size_t c = 0; c < sizes.size(); ++c) parts.push_back(part{sizes[c], t.ranks[c], 0, 0});
  return rank_step(nodes, step_kind::bfs, t.d, std::move(parts), b, r, [&](const child_step& ch) {
    return emit(nodes, *t.kids[ch.part], ch.shape, ch.owns, p, ctx, local_budget, memo);
  });
}

// A plan from rank subtrees: one per phase, under a rank-level DFS of `phase_dim` into
// phases.size() parts when there are several, its local levels under `local_budget` bytes
// of temporaries. None when a rank's box is too small for its domains (the caller retries
// on one domain).
std::optional<plan> make(const problem& p, const context& ctx, int ranks, int domains, const std::vector<tree_ptr>& phase_trees,
                         dim phase_dim, const std::vector<std::int64_t>& phase_sizes, std::size_t local_budget = no_cap) {
  std::vector<node> nodes;
  // A rank step or "same rank" node per rank and phase, a few local subtrees.
  nodes.reserve(phase_trees.size() * std::size_t(ranks) * 2 + 64);
  const resources root{span{0, ranks}, span{0, domains}, ctx.threads()};
  const box whole{p.m, p.n, p.k, 0, 0, 0};
  local_memo memo(ranks);
  std::vector<part> parts;
  for (std::int64_t s : phase_sizes) parts.push_back(part{s, 0, 0, 0});
  const int top = phase_trees.size() == 1
                      ? emit(nodes, *phase_trees[0], whole, root, p, ctx, local_budget, memo)
                      : rank_step(nodes, step_kind::dfs, phase_dim, std::move(parts), whole, root, [&](const child_step& ch) {
                          return emit(nodes, *phase_trees[ch.part], ch.shape, ch.owns, p, ctx, local_budget, memo);
                        });
  if (top < 0) return std::nullopt;
  return plan(p, root, std::move(nodes));
}

struct scored {
  rank_candidate info;
  std::shared_ptr<const plan> kept;  // shared with its schedule while scored, not copied
  const plan& p() const { return *kept; }
  // What make() built it from, to build it again under a budget.
  int domains = 1;
  std::vector<tree_ptr> trees;
  dim phase_dim = dim::m;
  std::vector<std::int64_t> phase_sizes;
  std::size_t local_ws = 0;  // kept's local levels' temporaries, at their largest

  // Keeps plan b, with its local temporaries' size (footprint() asks for it at every rung).
  void hold(plan&& b) {
    kept = std::make_shared<const plan>(std::move(b));
    local_ws = 0;
    for (const node& nd : kept->nodes()) local_ws = std::max(local_ws, nd.workspace_bytes);
  }
};

// What must fit the memory per rank: the peak without the local levels' temporaries (they
// can always do without, by m / n cuts).
std::size_t footprint(const scored& sc) { return sc.info.peak_bytes - std::min(sc.info.peak_bytes, sc.local_ws); }

// One run of the rank planner (choose_ranks, least_footprint_ranks, the ScaLAPACK layer's
// scored variant): the trees it weighs, their exact scores, the rank-level DFS phases
// when no single-phase tree fits, and the chosen plan's local levels under the memory left.
class rank_search {
 public:
  rank_search(const problem& p0, const context& ctx, const ranks::rescore_fn& rescore,
              const std::vector<ranks::rank_grid>& seeds)
      : p(normalised(p0)), ctx(ctx), rescore(rescore), seeds(seeds), P(ctx.ranks()), elem(element_size(p.type)),
        domains_all(std::min<int>(int(ctx.machine().domains().size()), ctx.threads())),
        s(p, ctx.rank_flops(), ctx.rank_bandwidth(), elem) {
    ranks::check_countable(p, P, 1);
    out.ranks_given = P;
    out.memory = ranks::rank_memory(ctx);
    out.flop_rate = ctx.rank_flops();
    out.bandwidth = ctx.rank_bandwidth();
    choose_rank_counts();
  }

  // The plan of least modelled time that fits (least_memory: of least footprint).
  rank_choice run(bool least_memory) {
    // Operands alone past the memory per rank: no plan in prism's layout fits, so none is
    // searched (a caller's rescore counts memory under its own layout, where it holds them).
    if (!least_memory && !rescore && floor_bytes() > out.memory) refuse(std::nullopt);
    // Exact scores cost O(P) each: fewer of them at large P (12 up to 512 ranks, 6 at 1,024,
    // 4 from 1,536); the grids and the best tree on all P ranks are scored besides.
    consider_single_phase(std::clamp<std::size_t>(exact_top * 512 / std::size_t(P), 4, exact_top));
    // None fits: more trees, as many as a few times the first round's work at this P.
    if (!pool.empty() && !pool[0].info.fits)
      consider_single_phase(std::max<std::size_t>(exact_top, exact_more * 64 / std::size_t(std::max(P, 64))));
    const std::string dfs_note = least_memory || pool.empty() || !pool[0].info.fits ? add_phases(least_memory) : "";
    fit_local_levels(pool[0], least_memory);
    return finish(least_memory, dfs_note);
  }

 private:
  static problem normalised(problem p) {
    p.transa = detail::normalised_trans(p.transa);
    p.transb = detail::normalised_trans(p.transb);
    if (p.m < 0 || p.n < 0 || p.k < 0) throw plan_error("problem sizes must be >= 0");
    if (element_size(p.type) == 0) throw plan_error("the type must be s, d, c or z");
    return p;
  }

  // The rank counts the tree search tries (all up to P = 64; docs/distributed.md, "Choosing the
  // grid"), e.g. P = 1021: 1021 ... 1018, 1000, 972, ..., 768 (2^a 3^b 5^c >= 3P/4), 512, ..., 1.
  void choose_rank_counts() {
    for (int q = P; q >= 1; --q) {
      int r = q;
      for (int f : {2, 3, 5})
        while (r % f == 0) r /= f;
      if (P <= max_unequal || q >= P - 3 || (r == 1 && 4 * q >= 3 * P) || (q & (q - 1)) == 0) used.push_back(q);
    }
  }

  // Scores a set of phase trees exactly (and keeps the plan).
  std::optional<scored> score(int ranks, const std::vector<tree_ptr>& trees, dim phase_dim,
                              const std::vector<std::int64_t>& phase_sizes) {
    int domains = domains_all;
    std::optional<plan> b = make(p, ctx, ranks, domains, trees, phase_dim, phase_sizes);
    if (!b && domains > 1) b = make(p, ctx, ranks, domains = 1, trees, phase_dim, phase_sizes);
    if (!b) return std::nullopt;
    scored sc{rank_candidate{}, nullptr, domains, trees, phase_dim, phase_sizes};
    sc.hold(std::move(*b));
    const ranks::tree_schedule s(sc.kept);
    rank_candidate& c = sc.info;
    c.ranks = ranks;
    c.grid = s.describe();
    for (const rank_cost& rc : s.costs()) {
      c.max_received = std::max(c.max_received, rc.received_total());
      c.max_flops = std::max(c.max_flops, rc.flops);
      c.mean_flops += rc.flops;
      c.peak_bytes = std::max(c.peak_bytes, rc.peak_bytes());
      c.seconds = std::max(c.seconds, rc.flops / out.flop_rate + double(rc.received_total()) * double(elem) / out.bandwidth);
    }
    c.mean_flops /= ranks;
    c.fits = footprint(sc) <= out.memory;
    if (rescore) rescore(s, c);
    return sc;
  }

  // The best single-phase trees by estimate, the exact grids, the caller's seeds and the
  // best tree on all P ranks, scored exactly into the pool, best first.
  void consider_single_phase(std::size_t how_many) {
    std::vector<tree_ptr> trees;
    for (int q : used)
      for (tree_ptr& t : s.options(p.m, p.n, p.k, q)) trees.push_back(std::move(t));
    std::stable_sort(trees.begin(), trees.end(), [](const tree_ptr& a, const tree_ptr& b) { return a->seconds < b->seconds; });
    pool.clear();
    // Scores tree t into the pool (unless `fresh` and its plan is there already).
    const auto add = [&](const tree_ptr& t, bool fresh) {
      auto sc = score(tree_ranks(*t), {t}, dim::m, {});
      if (sc && (!fresh || std::none_of(pool.begin(), pool.end(), [&](const scored& x) { return x.p() == sc->p(); })))
        pool.push_back(std::move(*sc));
    };
    for (std::size_t i = 0; i < trees.size() && pool.size() < how_many; ++i) add(trees[i], false);
    // The best exact grids of every P' in [P - 64, P] are always scored, and when the
    // leanest of them leaves ranks idle, the slab trees of all P ranks near them.
    std::vector<std::array<int, 3>> leanest;
    std::vector<tree_ptr> more = s.exact_grids(p.m, p.n, p.k, P, leanest);
    if (!leanest.empty())
      for (tree_ptr& t : s.slab_trees(p.m, p.n, p.k, P, leanest)) more.push_back(std::move(t));
    // The caller's trees (e.g. grids matching a ScaLAPACK layout) are always scored.
    for (const ranks::rank_grid& g : seeds) {
      int q = 1;
      for (const ranks::rank_cut& c : g) q *= c.parts;
      if (q < 1 || q > P) continue;
      if (tree_ptr t = s.grid_tree(p.m, p.n, p.k, g)) more.push_back(std::move(t));
    }
    for (const tree_ptr& t : more) add(t, true);
    // The best tree on all P ranks is always shown, so the choice to sit ranks out is visible.
    if (tree_ptr all = P > 1 ? s.best_tree(p.m, p.n, p.k, P) : nullptr; all &&
        std::none_of(pool.begin(), pool.end(), [&](const scored& x) { return x.info.ranks == P; }))
      add(all, false);
    std::stable_sort(pool.begin(), pool.end(), better);
  }

  // Fitting first, then modelled time, then volume, then footprint.
  static bool better(const scored& a, const scored& b) {
    if (a.info.fits != b.info.fits) return a.info.fits;
    if (a.info.seconds != b.info.seconds) return a.info.seconds < b.info.seconds;
    if (a.info.max_received != b.info.max_received) return a.info.max_received < b.info.max_received;
    return a.info.peak_bytes < b.info.peak_bytes;
  }

  // Rank-level DFS phases: puts the chosen phased plan first in the pool and returns the
  // reason's note, or throws plan_error naming the least footprint when nothing fits.
  std::string add_phases(bool least_memory) {
    std::string dfs_note;
    // Phases along one edge on the rank counts of the best single-phase trees (and P); their
    // counts climb 2..16, then by a quarter, to at most 2^20 rank tasks ("The least footprint").
    std::vector<int> phase_ranks{P};
    for (const scored& sc : pool)
      if (std::find(phase_ranks.begin(), phase_ranks.end(), sc.info.ranks) == phase_ranks.end())
        phase_ranks.push_back(sc.info.ranks);
    if (phase_ranks.size() > 3) phase_ranks.resize(3);
    const std::int64_t most =
        std::min(std::max<std::int64_t>(16, (std::int64_t(1) << 20) / P), ranks::countable_phases(p, P));
    std::vector<std::int64_t> ladder;
    for (std::int64_t f = 2; f <= most; f = f < 16 ? f + 1 : f + f / 4) ladder.push_back(f);
    std::optional<scored> found, least;
    for (const scored& sc : pool)
      if (!least || footprint(sc) < footprint(*least)) least = sc;
    // Each (edge, rank count) climbs while a step of the ladder still shrinks its
    // footprint by 0.05 % or more: past that, more phases only add messages.
    std::map<std::pair<int, int>, std::size_t> last;  // (edge, ranks) -> footprint at the last step
    std::set<std::pair<int, int>> settled;
    for (std::int64_t f : ladder) {
      if (found && !least_memory) break;
      for (dim d : {dim::m, dim::n, dim::k}) {
        const std::int64_t ext = extent(d, p.m, p.n, p.k);
        if (ext < f) continue;
        const std::vector<std::int64_t> sizes = detail::split(ext, std::vector<int>(std::size_t(f), 1), 1);
        for (int q : phase_ranks) {
          const std::pair<int, int> series{int(d), q};
          if (settled.count(series) != 0) continue;
          std::vector<tree_ptr> trees;
          for (std::int64_t sz : sizes) {
            const auto [m, n, k] = child(d, p.m, p.n, p.k, sz);
            tree_ptr t = s.best_tree(m, n, k, q);
            if (!t) break;
            trees.push_back(std::move(t));
          }
          if (trees.size() != sizes.size()) continue;
          auto sc = score(q, trees, d, sizes);
          if (!sc) continue;
          const std::size_t fp = footprint(*sc);
          if (auto it = last.find(series); it != last.end() && f > 16 && double(fp) > 0.9995 * double(it->second))
            settled.insert(series);
          last[series] = fp;
          if (!least || fp < footprint(*least)) least = *sc;
          if (sc->info.fits && (!found || better(*sc, *found))) found = std::move(sc);
        }
      }
    }
    if (least_memory && least) {
      const std::size_t fp = footprint(*least);
      dfs_note = ": " + std::to_string(fp) + " bytes per rank (" +
                 std::to_string(least->p().nodes()[0].kind == step_kind::dfs && least->p().nodes()[0].where == level::rank
                                    ? least->p().nodes()[0].parts.size() : 1) +
                 " phases); no plan holds less than " + std::to_string(floor_bytes()) +
                 " bytes per rank, the operands alone spread over all ranks";
      pool.insert(pool.begin(), std::move(*least));
      pool[0].info.fits = fp <= out.memory;
    } else if (!found) {
      refuse(least);
    } else {
      dfs_note = "; no single-phase tree fits " + std::to_string(out.memory) + " bytes per rank, so " +
                 std::to_string(found->p().nodes()[0].parts.size()) + " rank-level dfs phases on " +
                 to_string(found->p().nodes()[0].cut);
      pool.insert(pool.begin(), std::move(*found));
    }
    return dfs_note;
  }

  // The least footprint any plan can have: A, B and C alone, spread over all P ranks.
  std::size_t floor_bytes() const { return elem * std::size_t((p.m * p.k + p.k * p.n + p.m * p.n + P - 1) / P); }

  // Throws plan_error: no plan fits the memory per rank; `least`, when searched, the least
  // footprint found. The floor and the tool's hint speak of prism's own layout, so a caller's
  // rescore (its layout holds the operands, which its footprints leave out) gets neither.
  [[noreturn]] void refuse(const std::optional<scored>& least) const {
    std::ostringstream os;
    os << "no rank plan of " << p.m << " x " << p.n << " x " << p.k << " on up to " << P << (P == 1 ? " rank" : " ranks") << " fits " << out.memory
       << " bytes per rank";
    if (least) {
      const std::size_t fp = footprint(*least);
      os << ": the least footprint is " << fp << " bytes per rank (" << fp - std::min(fp, out.memory)
         << " bytes more), with the rank steps " << ranks::tree_schedule(least->kept).describe();
    }
    if (!rescore) {
      os << "; no plan holds less than " << floor_bytes() << " bytes per rank (A, B and C alone, spread over " << P
         << (P == 1 ? " rank)" : " ranks)");
      if (P > 1)
        os << "; prism plan " << p.m << ' ' << p.n << ' ' << p.k << " --ranks " << P << " --min-memory prints the least-footprint plan";
    }
    throw plan_error(os.str());
  }

  // The chosen plan, rebuilt with its local levels' share of the memory as their budget, or
  // none for the least footprint (its rank steps stay).
  void fit_local_levels(scored& best, bool least_memory) {
    const std::size_t peak = best.info.peak_bytes;  // rank_model's max_peak_bytes, from its score
    const std::size_t fixed = footprint(best);
    if (peak == fixed || (!least_memory && (peak <= out.memory || fixed > out.memory))) return;
    std::optional<plan> b = make(p, ctx, best.p().ranks(), best.domains, best.trees, best.phase_dim, best.phase_sizes,
                                 least_memory ? 0 : out.memory - fixed);
    if (!b) return;
    best.hold(std::move(*b));
    best.info.peak_bytes = 0;
    for (const rank_cost& rc : ranks::tree_schedule(best.kept).costs()) best.info.peak_bytes = std::max(best.info.peak_bytes, rc.peak_bytes());
  }

  // Every plan scored, best first, into the choice, with why the first won.
  rank_choice finish(bool least_memory, const std::string& dfs_note) {
    scored& best = pool[0];
    for (scored& sc : pool) out.candidates.push_back(sc.info);
    std::ostringstream why;
    const rank_candidate& c = out.candidates[0];
    if (least_memory) why << "least footprint per rank of the plans searched";
    else
      why << "least modelled time (flops / " << out.flop_rate / 1e9 << " GF/s + bytes received / " << out.bandwidth / 1e9
          << " GB/s per rank)";
    if (c.ranks < P) why << "; " << P - c.ranks << " of " << P << " ranks sit out: fewer ranks model faster here";
    why << dfs_note;
    out.reason = why.str();
    out.chosen = best.p();
    return out;
  }

  const problem p;
  const context& ctx;
  const ranks::rescore_fn& rescore;
  const std::vector<ranks::rank_grid>& seeds;
  const int P;
  const std::size_t elem;
  const int domains_all;
  search s;
  rank_choice out;
  std::vector<int> used;      // rank counts the tree search tries
  std::vector<scored> pool;   // trees scored exactly, best first once sorted
};

}  // namespace

std::string ranks::format(const char* f, ...) {
  std::va_list a, b;
  va_start(a, f);
  va_copy(b, a);
  std::string s(std::size_t(std::max(0, std::vsnprintf(nullptr, 0, f, a))), '\0');
  std::vsnprintf(s.data(), s.size() + 1, f, b);
  va_end(b);
  va_end(a);
  return s;
}

std::size_t ranks::rank_memory(const context& ctx) {
  return ctx.max_memory() != no_cap ? ctx.max_memory() : default_rank_memory(ctx.ranks_per_node());
}

plan make_plan(const problem& p, const context& ctx) {
  if (p.op == operation::gemm && ctx.ranks() > 1) return choose_ranks(p, ctx).chosen;
  return detail::make_local_plan(p, ctx);
}

rank_choice choose_ranks(const problem& p, const context& ctx) { return rank_search(p, ctx, {}, {}).run(false); }

rank_choice ranks::choose_ranks_scored(const problem& p, const context& ctx, const ranks::rescore_fn& rescore,
                                       const std::vector<ranks::rank_grid>& seeds) {
  return rank_search(p, ctx, rescore, seeds).run(false);
}

rank_choice least_footprint_ranks(const problem& p, const context& ctx) { return rank_search(p, ctx, {}, {}).run(true); }

void print_rank_report(std::ostream& os, const rank_choice& choice) {
  const plan& pl = choice.chosen;
  const rank_model model(pl);
  const problem& pr = pl.problem();
  const double elem = double(element_size(pr.type));
  const double memory_words = choice.memory > 0 ? double(choice.memory) / elem : bounds::unlimited;
  const double bound = bounds::parallel_io_minus_owned(pr.m, pr.n, pr.k, choice.ranks_given, memory_words);
  auto mb = [](double bytes) { return bytes / 1e6; };
  os << "# rank level: " << choice.ranks_given << " ranks given, " << pl.ranks() << " used; grid " << model.grid()
     << "\n# why: " << choice.reason << '\n';
  // The bound holds for operands spread over every rank given; ranks that sit out hold none.
  const std::string spread =
      pl.ranks() < choice.ranks_given ? ranks::format(": for A, B and C spread over all; the %d used hold them", pl.ranks()) : "";
  os << ranks::format("# predicted per rank: received max %.3f MB, mean %.3f MB; lower bound %.3f MB (COSMA Thm 2 "
                      "minus owned, %d ranks%s); max/mean flops %.4f; peak memory %.3f MB of %.3f MB\n",
                      mb(double(model.max_received()) * elem), mb(model.mean_received() * elem), mb(bound * elem),
                      choice.ranks_given, spread.c_str(), model.mean_flops() > 0 ? model.max_flops() / model.mean_flops() : 1.0,
                      mb(double(model.max_peak_bytes())), mb(double(choice.memory)));
  os << "# candidates scored exactly, best first:\n";
  os << ranks::format("#   %5s  %-36s %10s %10s %10s %10s  %s\n", "ranks", "grid", "max MB", "flops x", "peak MB",
                      "model ms", "fits");
  for (const rank_candidate& c : choice.candidates)
    os << ranks::format("#   %5d  %-36s %10.3f %10.4f %10.3f %10.3f  %s\n", c.ranks, c.grid.c_str(),
                        mb(double(c.max_received) * elem), c.mean_flops > 0 ? c.max_flops / c.mean_flops : 1.0,
                        mb(double(c.peak_bytes)), c.seconds * 1e3, c.fits ? "yes" : "no");
}

}  // namespace prism
