// prism/traffic.hpp — the data a plan moves, predicted per level of the machine: into each
// cache level (from the leaves' working sets, the leaf BLAS's blocking and the DFS order),
// across NUMA domains, and across MPI ranks (prism/rank_model.hpp has the exact rank-level
// exchanges; predict_levels() reports them beside the others).
//
// The cache model (predict_cache_words), for one cache of S elements ("words"), counting
// words *received* (every line brought in: a read miss, or a write miss, since a
// write allocates the line; write-backs are not counted, as cachegrind counts):
//
//  1. Each thread has its own share of a cache level: S = size / min(PUs sharing it, the
//     plan's threads) (the planner's share), and sees only the leaves it runs. Parts of a
//     BFS node run on different threads and share nothing; the total of a level is the sum
//     over threads.
//  2. A subtree run by one thread whose working set (m k + k n + m n elements, plus the
//     leaf BLAS's packing buffers) fits in S receives each of its A, B and C elements once.
//  3. Otherwise a node receives the sum of its parts; where the parts run one after
//     another on one thread (a DFS node below the thread level), less the operand block
//     that consecutive parts share when it fits in S (B for an m cut, A for an n cut, C
//     for a k cut: a k-DFS accumulates into the same C): it is received once, not once
//     per part. A BFS k cut adds its reduction: the owner reads each part's temporary C'
//     (m n elements per extra part) and C.
//  4. A leaf that does not fit runs the GotoBLAS algorithm (OpenBLAS and BLIS both do),
//     with the library's block sizes (see below): for jc (nc columns of B) / for pc (kc of k):
//     pack B~ = B(pc, jc) / for ic (mc rows of A): pack A~ = A(ic, pc) / for jr (nr
//     columns of B~) / for ir (mr rows of A~): the micro-kernel updates an mr x nr tile of
//     C with A~(mr x kc) B~(kc x nr). A stream is re-received each time it is reused unless
//     what the loop touches between two uses fits in S:
//       - A~ is read once per sweep of the micro-kernel over `sweep` columns of B~ (12 for
//         OpenBLAS's Haswell kernel, nr for BLIS): m k n / sweep words, unless A~ + the
//         swept B~ columns + their C tiles (mc kc + kc sweep + mc sweep) fit;
//       - B~ is read once per ic block: the first block finds the columns just packed
//         when 2 kc 3nr + A~ fits (OpenBLAS packs 3 nr columns, then runs the kernel on
//         them); each later block pays k n unless B~ + A~ + a C block + an A block fit;
//       - C is read and written once per pc: m n ceil(k / kc) unless the C column block,
//         the A block, A~ and B~ fit (then m n); OpenBLAS scales C by beta != 1 in a pass
//         of its own first (m n more when C does not stay), BLIS's kernel stores it;
//       - packing reads A once per jc (m k ceil(n / nc)) and B once (k n), and writes A~
//         (once, when A~ stays for its sweeps; else m k ceil(n / nc)) and B~ (once when it
//         stays between pc steps; else k n). With a single block of m, OpenBLAS packs B~
//         3 nr columns at a time into one reused kc x 3nr panel (level3.c), so B~ costs
//         that panel, not kc x nc, where it stays.
//     Blocks are cut evenly: an edge of e elements in ceil(e / b) blocks of e / ceil(e / b).
//     The swept B~ columns (kc x sweep: 24 KiB for OpenBLAS's double kernel, copied to a
//     stack buffer) are assumed to stay in every level modelled (any L1 of 32 KiB or more).
//  5. The streaming leaf (prism's own, m, n <= 128) reads A and B once and C once: right
//     at a level that keeps one of its k chunks (measured at a 32 MiB LL), low at an L1
//     where each block of rows reads B's chunk again (4.3x at a 48 KiB D1 on 64 x 64 x
//     262152 with AVX2's 8-row blocks: docs/data-movement.md).
//
// What it leaves out: conflict misses of set-associative caches (a block that fits by size
// is taken to fit), prefetching, partial lines at block edges (words are converted to
// lines as words / L), instruction misses, and the library's own bookkeeping. The block
// sizes are OpenBLAS 0.3's Haswell kernel (the one OPENBLAS_CORETYPE=Haswell and valgrind's
// emulated CPU select); other kernels block differently. tests/cache_traffic.sh checks the
// model against valgrind's simulated D1 and LL misses within 20% (docs/data-movement.md "Cache misses").
#pragma once

#include <prism/bounds.hpp>
#include <prism/plan.hpp>
#include <prism/topology.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace prism {

/// Where A, B and C live when a plan runs.
enum class placement {
  prism,        ///< as the placement helper puts them: each part on the domains that use it
  interleaved,  ///< pages round-robin over all domains (numactl --interleave, or first touch by many threads)
};

/// Bytes each NUMA domain of a plan reads from its own and from other domains' memory.
struct traffic_report {
  std::vector<double> local_bytes;   ///< per domain, from its own memory
  std::vector<double> remote_bytes;  ///< per domain, from other domains' memory
  /// Sum of remote_bytes.
  double remote_total() const;
  /// Sum of local_bytes.
  double local_total() const;
};

/// Predicts the traffic of plan p under a placement. The model: the subtree of each
/// domain reads the op(A), op(B) and C blocks it covers once; a matrix region spread
/// over S domains is read 1/|S| locally when the reader is one of them; k-cut
/// temporaries C' live on the domains that compute them and are read once, for the
/// reduction, by the first domain of the part that owns C (where the executor reduces).
/// docs/data-movement.md "Across NUMA domains" works an example. gemm plans only: a syrk or
/// herk plan throws prism::plan_error.
traffic_report predict_traffic(const plan& p, placement where);

/// One cache as the model sees it: capacity and line, in bytes.
struct cache_shape {
  std::uint64_t size_bytes = 0;  ///< capacity of the share the model uses
  unsigned line_bytes = 64;      ///< line size
};

/// Predicted elements received by all of a plan's threads from below a cache of the given
/// shape, one thread's share (the caller divides a shared cache), by the model of the file
/// comment; a one-leaf plan gives the plain BLAS call's prediction. A syrk or herk plan is
/// counted as the gemm products its leaves are (a triangle leaf as its whole square): an
/// upper estimate, not a model of the rank-k kernels.
double predict_cache_words(const plan& p, const cache_shape& cache);

/// Traffic at one level of the machine: predicted elements received, the lower bound for
/// that level and where each came from.
struct level_traffic {
  std::string level;        ///< "L1", "L2", "L3", "numa", "ranks"
  double capacity = 0;      ///< elements of fast memory the bound assumes (S), 0 if none
  double predicted = 0;     ///< elements received (caches: all threads; numa: remote; ranks: max per rank)
  double bound = 0;         ///< lower bound on the same quantity
  std::string note;         ///< how predicted and bound are counted
};

/// The per-level report of `prism plan --stats`: each cache level of the topology (one
/// thread's share: size / min(PUs sharing it, threads); predicted for all threads
/// together), NUMA domains when the plan spans several (the busiest domain's remote
/// elements under the placement helper), ranks when it spans several (rank_model, the
/// busiest rank, `rank_memory_words` of memory each). Bounds from prism/bounds.hpp. A syrk
/// or herk plan gets its cache levels as predict_cache_words counts them, beside gemm's
/// bounds for the same m, n, k (not a rank-k bound); one spanning
/// several NUMA domains throws prism::plan_error (predict_traffic's model is gemm's).
std::vector<level_traffic> predict_levels(const plan& p, const topology& machine,
                                          double rank_memory_words = bounds::unlimited);

}  // namespace prism
