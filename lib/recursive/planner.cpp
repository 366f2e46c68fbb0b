// lib/recursive/planner.cpp — make_local_plan (make_plan on one rank): CARMA's recursive
// split under a thread budget and a memory cap.
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
//     the context's machine description, halve its largest edge by a DFS step (level
//     cache); a k-DFS accumulates into C, so no temporary. Edges of 16 or less are not cut
//     further, and a leaf is cut at most max_cache_cuts times. A leaf the streaming
//     kernel takes is not cut: it reads A and B once from memory whatever their size, so
//     a cut would only make its pieces smaller than the size it won from (the streaming
//     rule's thresholds are the machine's; cutting to the cache share first made the rule
//     depend on how the L3 compared with them).
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

#include "../leaf/backend/blas_library.hpp"
#include "../leaf/dispatch.hpp"
#include "gpu_level.hpp"
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
  char transa = 'N', transb = 'N';  // the problem's (a rank-k plan: its blocks'), for the leaf rule (choose_leaf)
  char uplo = 0;  // syrk / herk plans: the triangle of C ('U' or 'L'), which places diagonal cuts' blocks

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
    nd.backend = detail::choose_leaf(ctx.description(), ctx.leaf(), type, b.m, b.n, b.k, transa, transb);
    nodes.push_back(nd);
    return int(nodes.size()) - 1;
  }

  // Adds a step cutting b's edge d into `parts`, then plans each child with
  // plan_child(child_step) (for_each_child gives its shape and resources).
  // `triangle`: the step cuts a triangle of a syrk / herk plan (for_each_child then lays out
  // a diagonal cut's three children).
  template <class F>
  int add_step(step_kind kind, level where, dim d, std::vector<part> parts, const box& b, const resources& r,
               F&& plan_child, char triangle = 0) {
    count_node();
    const int index = int(nodes.size());
    nodes.emplace_back();
    node nd;
    nd.triangle = triangle;
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
      if (working > double(limit) && extent(longest, b.m, b.n, b.k) > 16 && cache_cuts < max_cache_cuts &&
          detail::choose_leaf(ctx.description(), ctx.leaf(), type, b.m, b.n, b.k, transa, transb) != leaf_backend::streaming)
        return cut(step_kind::dfs, level::cache, longest, b, r, 1, 1, 0, budget, budget, cache_cuts + 1);
    }
    return leaf(b);  // Rule 5
  }

  // ---- Rank-k updates (syrk / herk): the triangle recursion ----
  // A triangle node (an n x n diagonal block of C, only its uplo triangle computed, from k
  // columns of op(A)) with t threads and B bytes of budget:
  //  T1. An edge above 2^31-1 is halved by a DFS step: n by a DFS diagonal cut, k by a DFS
  //      k-cut (accumulating into C, no temporary).
  //  T2. One thread, fewer flops than the small-call threshold, or n = 1 with k < 512: a
  //      leaf (one ?syrk / ?herk call).
  //  T3. k >= 2n and k >= 512 (k dominates, the Gram shape): a BFS k-cut into as many parts
  //      as threads, 256-wide k pieces and the budget allow (each part after the first
  //      writes one n x n triangle temporary, reduced into C's triangle); thread shares as
  //      even as possible (7 threads, 3 parts: 3, 2, 2), k split in the same ratio. The
  //      parts share what the temporaries leave of B.
  //  T4. Otherwise a BFS diagonal cut at n1 = half of n (8-aligned where that costs < 1/32
  //      of balance): the two triangles one after the other on floor(t/2) threads, the
  //      off-diagonal block (a gemm sub-problem: the rules above, from its own budget share;
  //      one leaf when below the small-call threshold) at once on the rest. The triangles
  //      hold n1^2/2 + n2^2/2 flops, the block n1 n2: the two sides are equal at n1 = n2.
  // Above these, with D >= 2 NUMA domains: a numa k-cut (as for gemm: halves, or 1:1:1 over
  // 3 domains, temporaries from the computing domain) when T3's shape holds and one
  // temporary fits, else a numa diagonal cut, the triangles on the first half of the
  // domains, the block on the other half, threads following cores.
  double tri_flops(const box& b) const { return problem{type, 'N', 'N', b.n, b.n, b.k, operation::syrk}.flops(); }

  int tri_leaf(const box& b) {
    count_node();
    node nd;
    nd.kind = step_kind::leaf;
    nd.triangle = uplo;
    nd.backend = detail::choose_rank_k_leaf(ctx.description(), ctx.leaf(), type, uplo, transa, b.n, b.k);
    nodes.push_back(nd);
    return int(nodes.size()) - 1;
  }

  // The off-diagonal block of a diagonal cut: a gemm sub-problem on its share.
  int block(const box& b, const resources& r, std::size_t budget) {
    if (r.domains.count >= 2) return numa(b, r, budget);
    if (flops(b) < ctx.small_flops()) return leaf(b);
    return build(b, r, ctx.extra_depth(), budget);
  }

  // A diagonal cut of triangle b at its middle: shares `diag` (both triangles, one after the
  // other) and `blk` (the block) for a BFS, none for a DFS; budgets b_diag and b_blk.
  int diagonal(step_kind kind, level where, const box& b, const resources& r, part diag, part blk,
               std::size_t b_diag, std::size_t b_blk) {
    const std::int64_t n1 = detail::first_part(b.n, 1, 2, alignment(dim::n, type, b.n));
    diag.size = n1;
    part second = diag;
    second.size = b.n - n1;
    blk.size = 0;
    return add_step(kind, where, dim::n, {diag, second, blk}, b, r, [&](const child_step& ch) {
      if (ch.part == 2) return block(ch.shape, ch.owns, b_blk);
      return ch.owns.domains.count >= 2 ? tri_numa(ch.shape, ch.owns, b_diag) : tri(ch.shape, ch.owns, b_diag);
    }, uplo);
  }

  // Rules T1-T4 on one NUMA domain (or none).
  int tri(const box& b, const resources& r, std::size_t budget) {
    const int t = r.threads;
    const std::int64_t n = b.n, k = b.k;
    if (n > INT_MAX) return diagonal(step_kind::dfs, level::thread, b, r, part{}, part{}, budget, budget);  // T1
    if (k > INT_MAX) {
      const std::int64_t k1 = detail::first_part(k, 1, 2, alignment(dim::k, type, k));
      return add_step(step_kind::dfs, level::thread, dim::k, {part{k1}, part{k - k1}}, b, r,
                      [&](const child_step& ch) { return tri(ch.shape, ch.owns, budget); }, uplo);
    }
    if (t <= 1 || tri_flops(b) < ctx.small_flops() || (n == 1 && k < 512)) return tri_leaf(b);  // T2
    if (ctx.k_cuts() && k >= 2 * n && k >= 512) {  // T3
      const std::size_t t_bytes = temp_bytes(n, n);
      const std::size_t fit = t_bytes == no_cap ? 0 : budget == no_cap ? std::size_t(t) : budget / t_bytes;
      const int f = int(std::min<std::int64_t>({t, k / 256, std::int64_t(std::min<std::size_t>(fit, 1u << 20)) + 1}));
      if (f >= 2) {
        std::vector<int> shares(std::size_t(f), t / f);
        for (int c = 0; c < t % f; ++c) ++shares[std::size_t(c)];
        const std::vector<std::int64_t> sizes = split(k, shares, alignment(dim::k, type, k));
        std::vector<part> parts;
        for (int c = 0; c < f; ++c) parts.push_back(part{sizes[std::size_t(c)], 0, 0, shares[std::size_t(c)]});
        const std::size_t rest = budget == no_cap ? no_cap : (budget - t_bytes * std::size_t(f - 1)) / std::size_t(f);
        return add_step(step_kind::bfs, level::thread, dim::k, std::move(parts), b, r,
                        [&](const child_step& ch) { return tri(ch.shape, ch.owns, rest); }, uplo);
      }
    }
    if (n < 2) return tri_leaf(b);
    const int td = t / 2, tb = t - td;  // T4
    return diagonal(step_kind::bfs, level::thread, b, r, part{0, 0, 0, td}, part{0, 0, 0, tb}, share_of(budget, td, t),
                    share_of(budget, tb, t));
  }

  // The numa level of a triangle (see above); throws too_small when an edge is shorter than
  // the domains it would be shared among.
  int tri_numa(const box& b, const resources& r, std::size_t budget) {
    const int dc = r.domains.count, t = r.threads;
    if (dc == 1) return tri(b, r, budget);
    const std::size_t temp = temp_bytes(b.n, b.n);
    std::vector<part> parts;
    if (ctx.k_cuts() && b.k >= 2 * b.n && temp != no_cap && temp <= budget) {
      const bool flat_fits = temp <= budget / std::size_t(dc - 1);
      if ((flat_k_cut(dc) && flat_fits && numa_parts(b, r, dim::k, std::vector<int>(std::size_t(dc), 1), parts)) ||
          numa_parts(b, r, dim::k, {dc / 2, dc - dc / 2}, parts)) {
        const std::size_t rest = budget == no_cap ? no_cap : budget - std::size_t(parts.size() - 1) * temp;
        return add_step(step_kind::bfs, level::numa, dim::k, std::move(parts), b, r, [&](const child_step& ch) {
          return tri_numa(ch.shape, ch.owns, share_of(rest, ch.owns.threads, t));
        }, uplo);
      }
    }
    // Diagonal: numa_parts gives each side's threads by cores (its n split is not used:
    // the triangles are cut at the middle, and each must still give its domains a piece).
    const int dd = dc / 2;
    if (b.n < 2 * dc || !numa_parts(b, r, dim::n, {dd, dc - dd}, parts)) throw too_small{};
    const int td = parts[0].threads, tb = parts[1].threads;
    return diagonal(step_kind::bfs, level::numa, b, r, part{0, 0, dd, td}, part{0, 0, dc - dd, tb},
                    share_of(budget, td, t), share_of(budget, tb, t));
  }

  // One thread's share of a cache of the context's cache level: its size divided by the
  // processing units sharing it, since one leaf per thread runs at once (e.g. a 32 MiB L3
  // shared by 2 cores gives 16 MiB). 0: no cache DFS, or the level is unknown.
  std::size_t cache_bytes() const {
    if (ctx.cache_level() == 0) return 0;
    return std::size_t(ctx.description().cache_share(ctx.cache_level()));
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

namespace {

// make_plan for syrk / herk: rules T1-T4 (planner::tri) under the numa level when the
// topology has several domains and the triangle can give each of them a piece.
plan make_rank_k_plan(const problem& p0, const context& ctx) {
  const std::string op = to_string(p0.op);
  if (ctx.ranks() > 1) throw plan_error(op + " plans have no rank-level steps: plan them with ranks = 1");
  if (p0.m != p0.n) throw plan_error(op + " updates an n x n triangle: m must equal n");
  if (p0.n < 0 || p0.k < 0) throw plan_error("problem sizes must be >= 0");
  const problem p = rank_k_problem(p0.type, p0.op, p0.uplo, p0.transa, p0.n, p0.k);
  const box whole{p.n, p.n, p.k, 0, 0, 0};
  resources root{span{0, 1}, span{0, 1}, ctx.threads()};
  // The off-diagonal blocks are gemms C12 = op(A1) op(A2)^T: 'N' updates (C = A A^T) are NT
  // blocks, 'T' / 'C' updates (C = A^T A) TN / CN blocks.
  const bool n_form = p.transa == 'N';
  planner pl{ctx, p.type, {}, n_form ? 'N' : p.transa, n_form ? (p.op == operation::herk ? 'C' : 'T') : 'N', p.uplo};
  if (p.n == 0 || p.k == 0) {
    pl.tri_leaf(whole);
    return plan(p, root, std::move(pl.nodes));
  }
  if (std::optional<plan> on_gpus = detail::plan_on_gpus(p, ctx)) return std::move(*on_gpus);
  const int domains = std::min<int>(int(ctx.machine().domains().size()), ctx.threads());
  if (domains >= 2 && p.n <= INT_MAX && p.k <= INT_MAX) {
    resources spread = root;
    spread.domains.count = domains;
    try {
      pl.tri_numa(whole, spread, ctx.max_memory());
      return plan(p, spread, std::move(pl.nodes));
    } catch (const too_small&) {
      pl.nodes.clear();
    }
  }
  pl.tri(whole, root, ctx.max_memory());
  return plan(p, root, std::move(pl.nodes));
}

}  // namespace

plan detail::make_local_plan(const problem& p0, const context& ctx) {
  if (element_size(p0.type) == 0) throw plan_error("the type must be s, d, c or z");
  if (p0.op != operation::gemm) return make_rank_k_plan(p0, ctx);
  if (ctx.ranks() > 1)
    throw plan_error("a plan over " + std::to_string(ctx.ranks()) +
                     " MPI ranks runs through the MPI level: plan it with make_plan or choose_ranks");
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
  if (std::optional<plan> on_gpus = detail::plan_on_gpus(p, ctx)) return std::move(*on_gpus);
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
