// lib/recursive/planner.cpp — make_plan: CARMA's recursive split under a thread budget and
// a memory cap.
//
// The rules, in order, at a node of shape m x n x k with t threads and B bytes of budget:
//  1. A leaf dimension must fit a 32-bit BLAS int: a node with an edge above 2^31-1 is cut
//     in half by a DFS step (level cache) first.
//  2. t >= 2 (parallel budget left): cut the largest edge (ties: n, then m, then k) by a
//     BFS step into two parts with thread shares floor(t/2) and ceil(t/2), the edge split
//     in proportion to the shares. A BFS on k needs one m x n temporary C'; when it does
//     not fit in B ("not enough memory", CARMA §III) the step becomes a DFS on the larger
//     of m and n if the halved C' then fits (each half then runs k-BFS with half the
//     temporary), else a memory-free BFS on the larger of m and n, else a leaf.
//  3. t == 1 and extra-depth levels left: BFS steps continue past one thread per share
//     (CARMA Fig. 5: more tasks than threads let work stealing even out a noisy machine),
//     as long as each new leaf keeps >= min_leaf_flops and k-temporaries fit in B.
//  4. Cache-aware DFS (t == 1, cache level L > 0 in the context): while a leaf's working
//     set (m k + k n + m n elements) exceeds one thread's share of a level-L cache of
//     the context's topology, halve its largest edge by a DFS step (level cache); a k-DFS
//     accumulates into C, so no temporary. Edges of 16 or less are not cut further.
//  5. Otherwise: a leaf, computed by the backend the context picks for its shape.
// Above all of these, with D >= 2 NUMA domains in the context's topology (and at least D
// threads), the first steps are numa-level BFS cuts that halve the set of domains: the
// thread shares follow the cores of each half and the edge is split in proportion, so
// each domain gets work in proportion to its cores. Example: 4 domains of 4 cores and 16
// threads cut 2:2 (8 and 8 threads), then each half 1:1 (4 and 4); a 3-domain machine
// with 4, 4 and 8 cores cuts 1:2 (4 and 12 threads), then 1:1 (4 and 8).
#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/plan.hpp>

#include "../blas/blas_library.hpp"
#include "temporaries.hpp"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <climits>
#include <limits>

namespace prism {

namespace {

constexpr std::size_t no_cap = std::numeric_limits<std::size_t>::max();


// Preferred split granularity along each edge, so parts start on SIMD/cache boundaries:
// m (the contiguous edge of C, and of A when not transposed): one 64-byte line, e.g. 8
// doubles; n: 8 columns (a multiple of every BLAS kernel's n-unroll); k: 256, the order of
// the kernels' k-blocking. Halved while the edge is too short for two aligned parts.
std::int64_t alignment(dim d, scalar_type t, std::int64_t ext) {
  std::int64_t a = d == dim::m ? std::int64_t(64 / element_size(t)) : d == dim::n ? 8 : 256;
  while (a > 1 && ext < 2 * a) a /= 2;
  return a;
}

// Size of the first of two parts when `ext` is shared in the ratio share : (total - share),
// rounded to a multiple of `a` and kept inside [1, ext - 1]. Nothing is ever dropped: the
// second part is ext minus the first. The alignment is halved while rounding would move the
// split by more than ext / 32, so alignment never costs more than ~3% of balance.
// Example: ext = 16777216 (k), shares 1 of 3, a = 256: 16777216/3 = 5592405.3, nearest
// multiple of 256 is 5592320 (off by 85 <= 524288), so parts are 5592320 and 11184896.
// Example: ext = 384 (k), shares 1 of 2, a = 128: 192 would round to 256 (off by 64 > 12),
// a = 64 gives 192 exactly, so parts are 192 and 192 (not 256 and 128, which ran at 0.75x).
std::int64_t first_part(std::int64_t ext, int share, int total, std::int64_t a) {
  const long double exact = (long double)ext * share / total;
  std::int64_t s = std::int64_t(exact / a + 0.5L) * a;
  while (a > 1 && std::fabs((long double)s - exact) > (long double)ext / 32) {
    a /= 2;
    s = std::int64_t(exact / a + 0.5L) * a;
  }
  return std::clamp<std::int64_t>(s, 1, ext - 1);
}

struct too_small {};  // a numa-level cut found an edge shorter than its domain count

struct planner {
  const context& ctx;
  scalar_type type;
  std::vector<node> nodes;

  double flops(std::int64_t m, std::int64_t n, std::int64_t k) const { return gemm_flops(type, m, n, k); }
  // Bytes of an m x n temporary; SIZE_MAX (never fits) when the product overflows.
  std::size_t temp_bytes(std::int64_t m, std::int64_t n) const { return detail::temp_bytes(m, n, element_size(type)); }
  static std::size_t share_of(std::size_t budget, int share, int total) {
    if (budget == no_cap) return no_cap;
    return std::size_t((long double)budget * share / total);
  }
  // The largest edge; on ties n before m before k (n and m cuts need no temporary, and an
  // n cut keeps each half of a column-major C contiguous). Without k cuts, k never wins.
  dim largest(std::int64_t m, std::int64_t n, std::int64_t k) const {
    if (!ctx.k_cuts()) k = 0;
    if (n >= m && n >= k) return dim::n;
    if (m >= k) return dim::m;
    return dim::k;
  }

  int leaf(std::int64_t m, std::int64_t n, std::int64_t k) {
    node nd;
    nd.kind = step_kind::leaf;
    nd.backend = detail::choose_leaf(ctx.leaf(), type, m, n, k);
    nodes.push_back(nd);
    return int(nodes.size()) - 1;
  }

  // A two-part cut of edge d; shares t1 and t2 (for DFS both equal the node's t).
  int cut(step_kind kind, level where, dim d, std::int64_t m, std::int64_t n, std::int64_t k,
          int t1, int t2, int extra, std::size_t b1, std::size_t b2) {
    const std::int64_t ext = extent(d, m, n, k);
    const int share = kind == step_kind::dfs ? 1 : t1, total = kind == step_kind::dfs ? 2 : t1 + t2;
    const std::int64_t s = first_part(ext, share, total, alignment(d, type, ext));
    const int index = int(nodes.size());
    nodes.emplace_back();
    node nd;
    nd.kind = kind;
    nd.cut = d;
    nd.where = where;
    nd.parts = {part{s, t1}, part{ext - s, t2}};
    auto sub = [&](std::int64_t size, int t, std::size_t b) {
      std::int64_t cm = m, cn = n, ck = k;
      (d == dim::m ? cm : d == dim::n ? cn : ck) = size;
      return build(cm, cn, ck, t, extra, b);
    };
    nd.children.push_back(sub(s, t1, b1));
    nd.children.push_back(sub(ext - s, t2, b2));
    nodes[index] = std::move(nd);
    return index;
  }

  // A numa-level cut of domains [d0, d0 + dc) with t threads (see the file comment).
  int numa(std::int64_t m, std::int64_t n, std::int64_t k, int t, int d0, int dc, std::size_t budget) {
    if (dc == 1) return build(m, n, k, t, ctx.extra_depth(), budget);
    const auto& doms = ctx.machine().domains();
    const int d1 = dc / 2, d2 = dc - d1;
    long cores1 = 0, cores_all = 0;
    for (int d = d0; d < d0 + dc; ++d) {
      cores_all += doms[std::size_t(d)].cores;
      if (d < d0 + d1) cores1 += doms[std::size_t(d)].cores;
    }
    const int t1 = std::clamp(int(std::llround(double(t) * double(cores1) / double(cores_all))), d1, t - d2);
    const int t2 = t - t1;
    dim d = largest(m, n, k);
    std::size_t b1 = share_of(budget, t1, t), b2 = share_of(budget, t2, t);
    if (d == dim::k) {
      const std::size_t temp = temp_bytes(m, n);
      if (temp != no_cap && temp <= budget) {
        const std::size_t rest = budget == no_cap ? no_cap : budget - temp;
        b1 = share_of(rest, t1, t), b2 = share_of(rest, t2, t);
      } else {
        d = n >= m ? dim::n : dim::m;  // no room for C': cut the larger of m, n instead
      }
    }
    const std::int64_t ext = extent(d, m, n, k);
    if (ext < dc) throw too_small{};
    const std::int64_t s = first_part(ext, t1, t, alignment(d, type, ext));
    if (s < d1 || ext - s < d2) throw too_small{};
    const int index = int(nodes.size());
    nodes.emplace_back();
    node nd;
    nd.kind = step_kind::bfs;
    nd.cut = d;
    nd.where = level::numa;
    nd.parts = {part{s, t1, d1}, part{ext - s, t2, d2}};
    auto sub = [&](std::int64_t size, int tt, int first, int count, std::size_t b) {
      std::int64_t cm = m, cn = n, ck = k;
      (d == dim::m ? cm : d == dim::n ? cn : ck) = size;
      return numa(cm, cn, ck, tt, first, count, b);
    };
    nd.children.push_back(sub(s, t1, d0, d1, b1));
    nd.children.push_back(sub(ext - s, t2, d0 + d1, d2, b2));
    nodes[index] = std::move(nd);
    return index;
  }

  int build(std::int64_t m, std::int64_t n, std::int64_t k, int t, int extra, std::size_t budget) {
    // Rule 1: 32-bit leaf range.
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX) {  // the longest edge, k included (a DFS needs no C')
      const dim d = n >= m && n >= k ? dim::n : m >= k ? dim::m : dim::k;
      return cut(step_kind::dfs, level::cache, d, m, n, k, t, t, extra, budget, budget);
    }
    const dim d = largest(m, n, k);
    if (extent(d, m, n, k) < 2) return leaf(m, n, k);
    const dim wide = n >= m ? dim::n : dim::m;  // the larger of m and n
    const std::int64_t wide_ext = extent(wide, m, n, k);

    if (t >= 2) {  // Rule 2
      const int t1 = t / 2, t2 = t - t1;
      if (d != dim::k)
        return cut(step_kind::bfs, level::thread, d, m, n, k, t1, t2, extra,
                   share_of(budget, t1, t), share_of(budget, t2, t));
      const std::size_t temp = temp_bytes(m, n);
      if (temp != no_cap && temp <= budget) {
        const std::size_t rest = budget == no_cap ? no_cap : budget - temp;
        return cut(step_kind::bfs, level::thread, dim::k, m, n, k, t1, t2, extra,
                   share_of(rest, t1, t), share_of(rest, t2, t));
      }
      if (wide_ext >= 2) {
        const std::int64_t half = (wide_ext + 1) / 2;
        const std::size_t half_temp = wide == dim::n ? temp_bytes(m, half) : temp_bytes(half, n);
        if (half_temp != no_cap && half_temp <= budget)
          return cut(step_kind::dfs, level::thread, wide, m, n, k, t, t, extra, budget, budget);
        return cut(step_kind::bfs, level::thread, wide, m, n, k, t1, t2, extra,
                   share_of(budget, t1, t), share_of(budget, t2, t));
      }
      return leaf(m, n, k);
    }

    if (extra > 0 && flops(m, n, k) >= 2 * ctx.min_leaf_flops()) {  // Rule 3
      if (d != dim::k)
        return cut(step_kind::bfs, level::thread, d, m, n, k, 1, 1, extra - 1,
                   share_of(budget, 1, 2), share_of(budget, 1, 2));
      const std::size_t temp = temp_bytes(m, n);
      if (temp != no_cap && temp <= budget) {
        const std::size_t rest = budget == no_cap ? no_cap : budget - temp;
        return cut(step_kind::bfs, level::thread, dim::k, m, n, k, 1, 1, extra - 1,
                   share_of(rest, 1, 2), share_of(rest, 1, 2));
      }
      if (wide_ext >= 2)
        return cut(step_kind::bfs, level::thread, wide, m, n, k, 1, 1, extra - 1,
                   share_of(budget, 1, 2), share_of(budget, 1, 2));
    }
    if (const std::size_t limit = cache_bytes(); limit > 0) {  // Rule 4
      const double working = double(element_size(type)) * (double(m) * double(k) + double(k) * double(n) + double(m) * double(n));
      const dim d = n >= m && n >= k ? dim::n : m >= k ? dim::m : dim::k;
      if (working > double(limit) && extent(d, m, n, k) > 16)
        return cut(step_kind::dfs, level::cache, d, m, n, k, 1, 1, 0, budget, budget);
    }
    return leaf(m, n, k);  // Rule 5
  }

  // One thread's share of a cache of the context's cache level: its size divided by the
  // processing units sharing it, since one leaf per thread runs at once (e.g. a 32 MiB L3
  // shared by 2 cores gives 16 MiB). 0: no cache DFS, or the level is unknown.
  std::size_t cache_bytes() const {
    if (ctx.cache_level() == 0) return 0;
    for (const auto& c : ctx.machine().caches())
      if (c.level == ctx.cache_level()) return std::size_t(c.size_bytes / std::uint64_t(std::max(1, c.pus_sharing)));
    return 0;
  }
};

char normalise_trans(char t) {
  const char u = char(std::toupper(static_cast<unsigned char>(t)));
  if (u != 'N' && u != 'T' && u != 'C') throw plan_error(std::string("trans must be N, T or C, got '") + t + "'");
  return u;
}

}  // namespace

plan make_plan(const problem& p0, const context& ctx) {
  problem p = p0;
  p.transa = normalise_trans(p.transa);
  p.transb = normalise_trans(p.transb);
  if (p.m < 0 || p.n < 0 || p.k < 0) throw plan_error("problem sizes must be >= 0");
  planner pl{ctx, p.type, {}};
  if (p.m == 0 || p.n == 0 || p.k == 0) {
    pl.leaf(p.m, p.n, p.k);
    return plan(p, ctx.threads(), std::move(pl.nodes));
  }
  // NUMA domains used: those of the topology, but never more than the threads (each domain
  // needs one). A problem too small to give every domain a piece is planned on one.
  const int domains = std::min<int>(int(ctx.machine().domains().size()), ctx.threads());
  if (domains >= 2 && !(p.m > INT_MAX || p.n > INT_MAX || p.k > INT_MAX)) {
    try {
      pl.numa(p.m, p.n, p.k, ctx.threads(), 0, domains, ctx.max_memory());
      return plan(p, ctx.threads(), std::move(pl.nodes), domains);
    } catch (const too_small&) {
      pl.nodes.clear();
    }
  }
  pl.build(p.m, p.n, p.k, ctx.threads(), ctx.extra_depth(), ctx.max_memory());
  return plan(p, ctx.threads(), std::move(pl.nodes));
}

}  // namespace prism
