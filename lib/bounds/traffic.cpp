// lib/bounds/traffic.cpp — the traffic models of prism/traffic.hpp: cross-domain bytes, and
// elements received per cache level.
#include <prism/bounds.hpp>
#include <prism/error.hpp>
#include <prism/traffic.hpp>

#include "leaf_blocking.hpp"
#include "levels.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace prism {

using detail::assumed_blocking;
using detail::leaf_blocking;
using detail::predict_leaf_words;

double traffic_report::remote_total() const { return std::accumulate(remote_bytes.begin(), remote_bytes.end(), 0.0); }
double traffic_report::local_total() const { return std::accumulate(local_bytes.begin(), local_bytes.end(), 0.0); }

// Walks the numa-level part of the tree carrying, for each of A, B and C, the span of
// domains its current block is spread over. Under prism placement (placement_of) a block
// is one domain's while every numa bfs cut above it divided it: such a cut narrows its
// span to the part's domains; a bfs cut that does not divide it leaves the same block to
// several parts, and a shared block is interleaved over all domains. Interleaved memory
// spreads every block over all domains. Worked example, 64 x 64 x K doubles on 4 domains,
// prism placement, k cut 2:2 then 1:1: every domain's A and B slabs are its own, C blocks
// too (the first part owns C, the others write a local C'); the only remote reads are the
// three 32768-byte C' reductions, each by the first domain of the part that owns C, as
// the executor runs them: domain 2 reads domain 3's C' into its own, then domain 0 reads
// domain 1's and domain 2's: 65536, 0, 32768, 0 bytes. With an n cut 2:2, then m 1:1, the
// halves of A are each read by two domains (0 and 2, 1 and 3): shared, so interleaved.
traffic_report predict_traffic(const plan& p, placement where) {
  if (p.problem().op != operation::gemm)
    throw plan_error(std::string("predict_traffic: models gemm plans; this one is a ") + to_string(p.problem().op) + " plan");
  if (p.ranks() > 1) throw plan_error("predict_traffic: cross-domain traffic is per rank; this plan spans ranks");
  const int D = p.domains();
  traffic_report r;
  r.local_bytes.assign(std::size_t(D), 0.0);
  r.remote_bytes.assign(std::size_t(D), 0.0);
  const double elem = double(element_size(p.problem().type));
  const bool narrow = where == placement::prism;
  const auto& nodes = p.nodes();
  if (nodes.empty()) return r;  // an empty plan (plan()) reads nothing
  const span all{0, D};

  // Charges `bytes` read by domain d of a block spread over `s`.
  auto read = [&](int d, double bytes, span s) {
    const double local = s.contains(d) ? bytes / s.count : 0.0;
    r.local_bytes[std::size_t(d)] += local;
    r.remote_bytes[std::size_t(d)] += bytes - local;
  };

  struct spread {
    span s;
    bool owned = true;  // one domain's at the leaves (false: shared, over all domains)
  };
  std::function<void(int, spread, spread, spread)> walk = [&](int i, spread a, spread b, spread c) {
    const node& nd = nodes[std::size_t(i)];
    const box& x = nd.shape;
    if (nd.owns.domains.count == 1) {  // one domain from here down: it reads its blocks once
      const int d = nd.owns.domains.first;
      read(d, elem * double(x.m) * double(x.k), a.s);
      read(d, elem * double(x.k) * double(x.n), b.s);
      read(d, elem * double(x.m) * double(x.n), c.s);
      return;
    }
    const bool bfs = nd.kind == step_kind::bfs, temporaries = bfs && nd.cut == dim::k;
    const span owner = nodes[std::size_t(nd.children[0])].owns.domains;
    for (std::size_t c_i = 0; c_i < nd.children.size(); ++c_i) {
      const span mine = nodes[std::size_t(nd.children[c_i])].owns.domains;
      spread ca = a, cb = b, cc = c;
      // A bfs cut narrows a block it divides (C at a k cut: part 0 keeps C) and shares one it does not.
      const auto cut = [&](spread& x, bool divides) { x = divides && x.owned ? spread{mine, true} : spread{all, false}; };
      if (narrow && bfs) {
        cut(ca, nd.cut != dim::n);
        cut(cb, nd.cut != dim::m);
        cut(cc, true);
      }
      if (temporaries && c_i > 0) cc = spread{mine, true};  // a temporary C' is allocated where it is computed
      walk(nd.children[c_i], ca, cb, cc);
      if (temporaries && c_i > 0)  // C's owner reduces this part's C' in its first domain (numa_runner)
        read(owner.first, elem * double(x.m) * double(x.n), mine);
    }
  };
  walk(0, spread{all, true}, spread{all, true}, spread{all, true});
  return r;
}

detail::leaf_blocking detail::assumed_blocking(leaf_backend b, scalar_type t) {
  // Double-precision block sizes, scaled to keep the same bytes per block for other types
  // (OpenBLAS's own tables differ by a little per type; only double is checked against
  // valgrind). OpenBLAS 0.3: param.h's HASWELL dgemm (DGEMM_DEFAULT_UNROLL_M 4, _N 8, P 512,
  // Q 256), R from its 128 MiB buffer (parameter.c: (128 MiB - P Q 8) / (Q 8) - 15, rounded
  // down to 16), and dgemm_kernel_4x8_haswell.S, which walks B~ 12 columns at a time
  // (Ndiv12) through a stack copy. BLIS 0.9: the haswell configuration's dgemm blocksizes.
  leaf_blocking d = b == leaf_backend::blis ? leaf_blocking{6, 8, 72, 256, 4080, 8, false} : leaf_blocking{};
  const std::int64_t scale = std::int64_t(element_size(t)) < 8 ? 2 : 1;  // float: twice the elements
  const std::int64_t shrink = std::int64_t(element_size(t)) > 8 ? 2 : 1;  // complex double: half
  d.mc = d.mc * scale / shrink;
  d.kc = d.kc * scale / shrink;
  return d;
}

double detail::predict_leaf_words(std::int64_t m_, std::int64_t n_, std::int64_t k_, const leaf_blocking& blk,
                          const cache_shape& cache, scalar_type t, bool scales_c) {
  const double S = double(cache.size_bytes) / double(element_size(t));  // capacity in elements
  const double m = double(m_), n = double(n_), k = double(k_);
  auto blocks = [](std::int64_t x, std::int64_t b) { return double((x + b - 1) / b); };
  const double Jc = blocks(n_, blk.nc), Pc = blocks(k_, blk.kc), Ic = blocks(m_, blk.mc);
  // Block extents as the library cuts them: an edge between one and two blocks is halved
  // (OpenBLAS's level3.c), so each block is the edge over the block count.
  const double mc = std::ceil(m / Ic), kc = std::ceil(k / Pc), nc = std::ceil(n / Jc);
  const double sweep = double(blk.sweep), panel = std::min(nc, 3 * double(blk.nr));
  // With one block of m, OpenBLAS packs B~ 3 nr columns at a time into one reused panel
  // (level3.c's l1stride 0); otherwise B~ holds kc x nc for all blocks of m.
  const bool panel_only = blk.beta_pass && Ic == 1;
  const double a_packed = mc * kc, b_packed = panel_only ? kc * panel : kc * nc;  // the A~ and B~ buffers
  const double footprint = m * k + k * n + m * n;
  if (footprint + a_packed + b_packed <= S) return footprint + a_packed + b_packed;  // rule 2

  // Rule 4, stream by stream: each is received again at every reuse unless what the loops
  // touch between two uses fits in S. Worked example, 64 x 64 x 32768 under a 48 KiB L1
  // (S = 6144): A~ (64 x 256) does not fit, so it streams from below once per 12 columns,
  // 6 sweeps of 16384 elements for each of the 128 pc steps: 12.6 M of the 23.6 M predicted
  // (valgrind counted 24.9 M).
  const bool a_stays = a_packed + kc * sweep + mc * sweep <= S;
  const double between_b = panel_only ? mc * panel : mc * nc;  // C touched between two B~ writes
  double w = k * n;                                                          // packing reads B
  w += b_packed + a_packed + between_b <= S ? b_packed : k * n;              // packing writes B~
  w += m * k + a_packed + b_packed <= S ? m * k : m * k * Jc;                // packing reads A
  w += a_stays ? a_packed : m * k * Jc;                                      // packing writes A~
  if (!a_stays) w += m * k * Jc * std::ceil(nc / sweep);                     // kernel reads A~
  // The kernel reads B~ once per ic block. The first reads columns packed just before (in
  // OpenBLAS, 3 nr at a time: the B columns read and the B~ columns written); later blocks
  // find B~ only if it stayed beside A~, a C block and an A block.
  if (2 * kc * panel + a_packed > S) w += k * n;                             // first ic block
  if (b_packed + a_packed + mc * nc + mc * kc > S) w += k * n * (Ic - 1);   // the others
  const bool c_stays = m * nc + m * kc + a_packed + b_packed <= S;
  w += c_stays ? m * n : m * n * Pc;                                         // C, once per pc
  if (blk.beta_pass && scales_c && !c_stays) w += m * n;                     // beta pass over C
  return w;
}

namespace {

// The cache model's walk over a plan (rules 1-3 of the header; leaves by rule 4 or 5).
struct cache_walk {
  const plan& p;
  cache_shape cache;
  double S = 0;  // capacity in elements

  // The packing buffers of the subtree's leaves (OpenBLAS's, the larger of the two).
  double buffers(const box& x) const {
    const leaf_blocking b = assumed_blocking(leaf_backend::openblas, p.problem().type);
    const double kc = double(std::min(x.k, b.kc));
    return double(std::min(x.m, b.mc)) * kc + kc * double(std::min(x.n, x.m <= b.mc ? 3 * b.nr : b.nc));
  }

  // Elements received by subtree i; `scales`: its leaves start with beta != 1 (the first
  // part of a k-DFS chain, or a BFS k temporary), so the library scales C first.
  double words(int i, bool scales) const {
    const node& nd = p.nodes()[std::size_t(i)];
    const box& x = nd.shape;
    const double m = double(x.m), n = double(x.n), k = double(x.k);
    const scalar_type t = p.problem().type;
    if (nd.kind == step_kind::leaf) {
      if (nd.backend == leaf_backend::streaming) return m * k + k * n + m * n;  // rule 5
      return predict_leaf_words(x.m, x.n, x.k, assumed_blocking(nd.backend, t), cache, t, scales);
    }
    const double footprint = m * k + k * n + m * n;
    // One thread of one rank runs the whole subtree: its cache sees all of it.
    const bool one_thread = nd.owns.threads == 1 && nd.owns.ranks.count == 1 && nd.owns.domains.count == 1;
    if (one_thread && footprint + buffers(x) <= S) return footprint + buffers(x);  // rule 2
    double sum = 0;
    for (std::size_t c = 0; c < nd.children.size(); ++c) {
      bool child_scales = scales;
      if (nd.cut == dim::k && c > 0) child_scales = nd.kind == step_kind::bfs;  // dfs: accumulates into C
      sum += words(nd.children[c], child_scales);
    }
    const double f = double(nd.children.size());
    if (nd.kind == step_kind::dfs && one_thread) {  // rule 3: the block every part reads
      const double shared = nd.cut == dim::m ? k * n : nd.cut == dim::n ? m * k : m * n;
      if (shared + buffers(x) <= S) sum -= (f - 1) * shared;
    } else if (nd.cut == dim::k) {  // rule 3: the reduction reads every C' and C
      sum += f * m * n;
    }
    return sum;
  }
};

}  // namespace

double predict_cache_words(const plan& p, const cache_shape& cache) {
  if (p.nodes().empty()) return 0;
  const cache_walk w{p, cache, double(cache.size_bytes) / double(element_size(p.problem().type))};
  return w.words(0, true);
}

std::vector<level_traffic> detail::predict_local_levels(const plan& p, const topology& machine) {
  std::vector<level_traffic> out;
  if (p.nodes().empty()) return out;
  const problem& pr = p.problem();
  const double elem = double(element_size(pr.type));
  // Threads of the whole plan (each rank runs p.threads()): each has its own share of a cache.
  const std::int64_t threads = std::int64_t(p.threads()) * p.ranks();
  for (const cache_level& c : machine.caches()) {
    const std::uint64_t share = c.size_bytes / std::uint64_t(std::max(1, std::min(c.pus_sharing, p.threads())));
    level_traffic l;
    l.level = "L";
    l.level += std::to_string(c.level);  // (not "L" + ...: GCC 12 warns -Wrestrict on it)
    l.capacity = double(share) / elem;
    l.predicted = predict_cache_words(p, cache_shape{share, c.line_bytes});
    if (threads == 1) {
      l.bound = bounds::sequential_io(pr.m, pr.n, pr.k, l.capacity);
      l.note = "one thread; bound: sequential_io (Smith et al.; every word once)";
    } else {  // all T caches together: T x vertical_io, whose terms are sums over the caches
              // (2 V_i / sqrt(S) - 2S each; every word once in all)
      l.bound = double(threads) * bounds::vertical_io(pr.m, pr.n, pr.k, l.capacity, threads);
      l.note = std::to_string(threads) + " threads' caches together; bound: " + std::to_string(threads) +
               " x vertical_io (Elango Thm 6)";
    }
    out.push_back(l);
  }
  if (p.domains() > 1 && p.ranks() == 1) {  // remote elements of the busiest domain
    const traffic_report r = predict_traffic(p, placement::prism);
    const int D = p.domains();
    level_traffic l;
    l.level = "numa";
    l.predicted = *std::max_element(r.remote_bytes.begin(), r.remote_bytes.end()) / elem;
    const auto& domains = machine.domains();
    const double memory = domains.empty() || domains[0].memory_bytes == 0 ? bounds::unlimited
                                                                          : double(domains[0].memory_bytes) / elem;
    l.capacity = memory;
    l.bound = bounds::parallel_io_minus_owned(pr.m, pr.n, pr.k, D, memory);
    l.note = "busiest domain's remote reads (placement helper); bound: parallel_io_minus_owned over " +
             std::to_string(D) + " domains";
    out.push_back(l);
  }
  return out;
}

}  // namespace prism

