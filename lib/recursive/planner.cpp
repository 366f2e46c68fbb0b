// lib/recursive/planner.cpp — make_plan: CARMA's recursive split under a thread budget and
// a memory cap.
//
// The rules, in order, at a node of shape m x n x k with t threads and B bytes of budget:
//  1. A leaf dimension must fit a 32-bit BLAS int: a node with an edge above 2^31-1 is cut
//     in half by a DFS step (level thread: it runs its halves with all the node's threads).
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
//     accumulates into C, so no temporary. Edges of 16 or less are not cut further, and
//     a leaf is cut at most max_cache_cuts times.
//  5. Otherwise: a leaf, computed by the backend the context picks for its shape.
// Above all of these, with D >= 2 NUMA domains in the context's topology (and at least D
// threads), the first steps are numa-level BFS cuts of the set of domains: into halves,
// except a k-cut over 3 domains, which is cut 1:1:1 in one step (flat_k_cut: the partial
// products are then reduced in one pass). Thread shares follow the cores of each part and
// the edge is split in proportion, so each domain gets work in proportion to its cores.
// Example: 4 domains of 4 cores and 16 threads cut 2:2 (8 and 8 threads), then each half
// 1:1 (4 and 4); a 3-domain machine with 4, 2 and 4 cores and 10 threads cuts k 4:2:4.
// Binary halving stays the rule at the thread level: it has not been measured otherwise.
#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/plan.hpp>
#include <prism/rank_model.hpp>

#include "../blas/blas_library.hpp"
#include "local_planner.hpp"
#include "split.hpp"
#include "temporaries.hpp"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <climits>
#include <limits>
#include <numeric>
#include <vector>

namespace prism {

namespace {

using detail::alignment;
using detail::split;

constexpr std::size_t no_cap = std::numeric_limits<std::size_t>::max();
// Rule 4 cuts a leaf at most this many times (up to 2^10 leaves per thread): enough to
// bring a 4 GiB working set under a 16 MiB cache share, and a bounded plan for any shape.
constexpr int max_cache_cuts = 10;
// No plan has more nodes (rule 1 on edges far above 2^31-1 in several dimensions would).
constexpr std::size_t max_nodes = std::size_t(1) << 22;


// The cost of reducing the partial products of a k-cut over D NUMA domains, on its
// critical path: remote reads of one m x n block, then reduction passes. A flat cut into
// D parts has C's owner read the D - 1 others' C' in one pass; halving reduces each half
// first (in parallel), then reads the other half's C' once. Halving wins from 4 domains
// on (2 remote reads against 3); at 3 domains both read 2 remotely and the flat cut
// saves one pass, so 3 domains are cut 1:1:1. 2 domains cut 1:1 either way.
struct reduction_cost {
  int remote = 0, passes = 0;
  auto operator<=>(const reduction_cost&) const = default;
};
reduction_cost halving_cost(int domains);
reduction_cost flat_cost(int domains) { return {domains - 1, 1}; }
reduction_cost best_cost(int domains) {
  return domains == 1 ? reduction_cost{} : std::min(halving_cost(domains), flat_cost(domains));
}
reduction_cost halving_cost(int domains) {
  const reduction_cost worse = std::max(best_cost(domains / 2), best_cost(domains - domains / 2));
  return {worse.remote + 1, worse.passes + 1};
}
bool flat_k_cut(int domains) { return domains > 2 && flat_cost(domains) < halving_cost(domains); }

struct too_small {};  // a numa-level cut found an edge shorter than its domain count

struct planner {
  const context& ctx;
  scalar_type type;
  std::vector<node> nodes;
  char transa = 'N', transb = 'N';  // the problem's, for the leaf rule (choose_leaf)

  double flops(const box& b) const { return gemm_flops(type, b.m, b.n, b.k); }
  // Bytes of an m x n temporary; SIZE_MAX (never fits) when the product overflows.
  std::size_t temp_bytes(std::int64_t m, std::int64_t n) const { return detail::temp_bytes(m, n, element_size(type)); }
  static std::size_t share_of(std::size_t budget, int share, int total) {
    if (budget == no_cap) return no_cap;
    return std::size_t((long double)budget * share / total);
  }
  // The largest edge; on ties n before m before k (n and m cuts need no temporary, and an
  // n cut keeps each half of a column-major C contiguous). Without k cuts, k never wins.
  dim largest(const box& b) const {
    const std::int64_t k = ctx.k_cuts() ? b.k : 0;
    if (b.n >= b.m && b.n >= k) return dim::n;
    if (b.m >= k) return dim::m;
    return dim::k;
  }

  // Stops a plan that would not fit in memory (edges above 2^31-1 in several dimensions
  // need 2^(cuts) leaves): a plan_error, not an allocation failure deep in the planner.
  void count_node() const {
    if (nodes.size() >= max_nodes)
      throw plan_error("a plan for this shape would have more than " + std::to_string(max_nodes) +
                       " nodes (its leaves must fit 32-bit BLAS calls)");
  }

  int leaf(const box& b) {
    count_node();
    node nd;
    nd.kind = step_kind::leaf;
    nd.backend = detail::choose_leaf(ctx.leaf(), type, b.m, b.n, b.k, transa, transb);
    nodes.push_back(nd);
    return int(nodes.size()) - 1;
  }

  // Adds a step cutting b's edge d into `parts`, then plans each child with
  // plan_child(child_step) (for_each_child gives its shape and resources).
  template <class F>
  int add_step(step_kind kind, level where, dim d, std::vector<part> parts, const box& b, const resources& r,
               F&& plan_child) {
    count_node();
    const int index = int(nodes.size());
    nodes.emplace_back();
    node nd;
    nd.kind = kind;
    nd.cut = d;
    nd.where = where;
    nd.parts = std::move(parts);
    for_each_child(nd, b, r, [&](const child_step& ch) { nd.children.push_back(plan_child(ch)); });
    nodes[std::size_t(index)] = std::move(nd);
    return index;
  }

  // A two-part thread- or cache-level cut of edge d; BFS thread shares t1 and t2 (a DFS
  // part runs with the node's threads), memory budgets b1 and b2.
  int cut(step_kind kind, level where, dim d, const box& b, const resources& r, int t1, int t2, int extra,
          std::size_t b1, std::size_t b2, int cache_cuts = 0) {
    const std::int64_t ext = extent(d, b.m, b.n, b.k);
    const bool bfs = kind == step_kind::bfs;
    const std::vector<std::int64_t> sizes = split(ext, bfs ? std::vector<int>{t1, t2} : std::vector<int>{1, 1}, alignment(d, type, ext));
    std::vector<part> parts = {part{sizes[0], 0, 0, bfs ? t1 : 0}, part{sizes[1], 0, 0, bfs ? t2 : 0}};
    return add_step(kind, where, d, std::move(parts), b, r,
                    [&](const child_step& ch) { return build(ch.shape, ch.owns, extra, ch.part == 0 ? b1 : b2, cache_cuts); });
  }

  // A numa-level cut of the node's domains (see the file comment): into halves, or into
  // one part per domain where that reduces k-cut temporaries faster (flat_k_cut) and
  // every part gets a piece of the edge.
  int numa(const box& b, const resources& r, std::size_t budget) {
    const int dc = r.domains.count, t = r.threads;
    if (dc == 1) return build(b, r, ctx.extra_depth(), budget);
    dim d = largest(b);
    const std::size_t temp = temp_bytes(b.m, b.n);
    const bool temp_fits = temp != no_cap && temp <= budget;
    if (d == dim::k && !temp_fits) d = b.n >= b.m ? dim::n : dim::m;  // no room for C': cut the larger of m, n
    const bool flat_fits = temp_fits && temp <= budget / std::size_t(dc - 1);
    std::vector<part> parts;
    if (!(d == dim::k && flat_k_cut(dc) && flat_fits && numa_parts(b, r, d, std::vector<int>(std::size_t(dc), 1), parts)) &&
        !numa_parts(b, r, d, {dc / 2, dc - dc / 2}, parts))
      throw too_small{};
    const std::size_t rest = d != dim::k || budget == no_cap ? budget : budget - std::size_t(parts.size() - 1) * temp;
    return add_step(step_kind::bfs, level::numa, d, std::move(parts), b, r, [&](const child_step& ch) {
      return numa(ch.shape, ch.owns, share_of(rest, ch.owns.threads, t));
    });
  }

  // The parts of a numa cut of b's edge d giving `domains[c]` of r's domains to part c:
  // thread shares follow cores (boundary c at the cores before it, at least one thread
  // per domain on either side; e.g. 10 threads over domains of 4, 2, 4 cores: 4, 2, 4),
  // and the edge is split in proportion. False when a part would get less of the edge
  // than it has domains.
  bool numa_parts(const box& b, const resources& r, dim d, const std::vector<int>& domains, std::vector<part>& parts) const {
    const int dc = r.domains.count, d0 = r.domains.first, t = r.threads, f = int(domains.size());
    const auto& doms = ctx.machine().domains();
    long cores_all = 0;
    for (int x = d0; x < d0 + dc; ++x) cores_all += doms[std::size_t(x)].cores;
    std::vector<int> threads;
    long cores_before = 0;
    int domains_before = 0, prev = 0;
    for (int c = 0; c < f; ++c) {
      for (int x = 0; x < domains[std::size_t(c)]; ++x) cores_before += doms[std::size_t(d0 + domains_before + x)].cores;
      domains_before += domains[std::size_t(c)];
      const int boundary = c + 1 == f ? t
                                      : std::clamp(int(std::llround(double(t) * double(cores_before) / double(cores_all))),
                                                   std::max(prev + domains[std::size_t(c)], domains_before), t - (dc - domains_before));
      threads.push_back(boundary - prev);
      prev = boundary;
    }
    const std::int64_t ext = extent(d, b.m, b.n, b.k);
    if (ext < dc) return false;
    const std::vector<std::int64_t> sizes = split(ext, threads, alignment(d, type, ext));
    parts.clear();
    for (int c = 0; c < f; ++c) {
      if (sizes[std::size_t(c)] < domains[std::size_t(c)]) return false;
      parts.push_back(part{sizes[std::size_t(c)], 0, domains[std::size_t(c)], threads[std::size_t(c)]});
    }
    return true;
  }

  // cache_cuts: cache-level DFS steps above this node (rule 4 stops at max_cache_cuts).
  int build(const box& b, const resources& r, int extra, std::size_t budget, int cache_cuts = 0) {
    const int t = r.threads;
    // Rule 1: 32-bit leaf range. The longest edge, k included (a DFS needs no C').
    if (b.m > INT_MAX || b.n > INT_MAX || b.k > INT_MAX) {
      const dim d = b.n >= b.m && b.n >= b.k ? dim::n : b.m >= b.k ? dim::m : dim::k;
      return cut(step_kind::dfs, level::thread, d, b, r, t, t, extra, budget, budget);
    }
    const dim d = largest(b);
    if (extent(d, b.m, b.n, b.k) < 2) return leaf(b);
    const dim wide = b.n >= b.m ? dim::n : dim::m;  // the larger of m and n
    const std::int64_t wide_ext = extent(wide, b.m, b.n, b.k);

    if (t >= 2) {  // Rule 2
      const int t1 = t / 2, t2 = t - t1;
      if (d != dim::k)
        return cut(step_kind::bfs, level::thread, d, b, r, t1, t2, extra, share_of(budget, t1, t), share_of(budget, t2, t));
      const std::size_t temp = temp_bytes(b.m, b.n);
      if (temp != no_cap && temp <= budget) {
        const std::size_t rest = budget == no_cap ? no_cap : budget - temp;
        return cut(step_kind::bfs, level::thread, dim::k, b, r, t1, t2, extra, share_of(rest, t1, t), share_of(rest, t2, t));
      }
      if (wide_ext >= 2) {
        const std::int64_t half = (wide_ext + 1) / 2;
        const std::size_t half_temp = wide == dim::n ? temp_bytes(b.m, half) : temp_bytes(half, b.n);
        if (half_temp != no_cap && half_temp <= budget)
          return cut(step_kind::dfs, level::thread, wide, b, r, t, t, extra, budget, budget);
        return cut(step_kind::bfs, level::thread, wide, b, r, t1, t2, extra, share_of(budget, t1, t), share_of(budget, t2, t));
      }
      return leaf(b);
    }

    if (extra > 0 && flops(b) >= 2 * ctx.min_leaf_flops()) {  // Rule 3
      const std::size_t half = share_of(budget, 1, 2);
      if (d != dim::k) return cut(step_kind::bfs, level::thread, d, b, r, 1, 1, extra - 1, half, half);
      const std::size_t temp = temp_bytes(b.m, b.n);
      if (temp != no_cap && temp <= budget) {
        const std::size_t rest = budget == no_cap ? no_cap : share_of(budget - temp, 1, 2);
        return cut(step_kind::bfs, level::thread, dim::k, b, r, 1, 1, extra - 1, rest, rest);
      }
      if (wide_ext >= 2) return cut(step_kind::bfs, level::thread, wide, b, r, 1, 1, extra - 1, half, half);
    }
    if (const std::size_t limit = cache_bytes(); limit > 0) {  // Rule 4
      const double working = double(element_size(type)) * (double(b.m) * double(b.k) + double(b.k) * double(b.n) + double(b.m) * double(b.n));
      const dim longest = b.n >= b.m && b.n >= b.k ? dim::n : b.m >= b.k ? dim::m : dim::k;
      if (working > double(limit) && extent(longest, b.m, b.n, b.k) > 16 && cache_cuts < max_cache_cuts)
        return cut(step_kind::dfs, level::cache, longest, b, r, 1, 1, 0, budget, budget, cache_cuts + 1);
    }
    return leaf(b);  // Rule 5
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

namespace detail {

char normalised_trans(char t) { return normalise_trans(t); }

int plan_local(std::vector<node>& nodes, const problem& p, const box& b, const resources& r, const context& ctx,
               std::size_t budget) {
  planner pl{ctx, p.type, std::move(nodes), p.transa, p.transb};
  const std::size_t mark = pl.nodes.size();
  int index = -1;
  if (r.domains.count >= 2) {  // numa steps first; not for empty or 32-bit-overflowing boxes
    if (b.m > 0 && b.n > 0 && b.k > 0 && b.m <= INT_MAX && b.n <= INT_MAX && b.k <= INT_MAX) {
      try {
        index = pl.numa(b, r, budget);
      } catch (const too_small&) {
        pl.nodes.resize(mark);
      }
    }
  } else if (b.m == 0 || b.n == 0 || b.k == 0) {
    index = pl.leaf(b);
  } else {
    index = pl.build(b, r, ctx.extra_depth(), budget);
  }
  nodes = std::move(pl.nodes);
  return index;
}

}  // namespace detail

plan make_plan(const problem& p0, const context& ctx) {
  if (ctx.ranks() > 1) return choose_ranks(p0, ctx).chosen;
  problem p = p0;
  p.transa = normalise_trans(p.transa);
  p.transb = normalise_trans(p.transb);
  if (p.m < 0 || p.n < 0 || p.k < 0) throw plan_error("problem sizes must be >= 0");
  const box whole{p.m, p.n, p.k, 0, 0, 0};
  resources root{span{0, 1}, span{0, 1}, ctx.threads()};
  std::vector<node> nodes;
  if (p.m == 0 || p.n == 0 || p.k == 0) {
    detail::plan_local(nodes, p, whole, root, ctx, ctx.max_memory());
    return plan(p, root, std::move(nodes));
  }
  // NUMA domains used: those of the topology, but never more than the threads (each domain
  // needs one). A problem too small to give every domain a piece is planned on one.
  const int domains = std::min<int>(int(ctx.machine().domains().size()), ctx.threads());
  if (domains >= 2) {
    resources spread = root;
    spread.domains.count = domains;
    if (detail::plan_local(nodes, p, whole, spread, ctx, ctx.max_memory()) >= 0) return plan(p, spread, std::move(nodes));
  }
  detail::plan_local(nodes, p, whole, root, ctx, ctx.max_memory());
  return plan(p, root, std::move(nodes));
}

}  // namespace prism
