// prism/plan.hpp — the recursion of one multiplication, as a value.
//
// A plan is a tree. Each inner node cuts its m x n x k sub-prism along one dimension into
// f >= 2 parts; a BFS node runs the parts at once on disjoint shares of one level of the
// machine, a DFS node runs them one after another with all of its resources. The levels,
// outermost first, are MPI ranks, NUMA domains (inside a rank), threads (inside a domain)
// and caches (inside a thread); on every root-to-leaf path a step is never at a level
// outside its parent step's. Leaves call a single-threaded BLAS. Plans print themselves as
// text and parse back from it, so tests and users can hand-write them:
//
//   prism-plan 2
//   problem d NN 64 64 16777216
//   threads 3
//   bfs k thread 5592320@1t 11184896@2t     # 64x64x16777216, 3 threads
//     leaf openblas                         # 64x64x5592320
//     bfs k thread 5592576@1t 5592320@1t    # 64x64x11184896, 2 threads
//       leaf openblas
//       leaf openblas
//
// "SIZE@SHARES" is a part's extent along the cut dimension and its share of each level the
// step divides: "3r" ranks, "2d" NUMA domains, "4t" threads, comma-separated (a numa part
// is "1048576@1d,4t"). DFS parts have no share. docs/planning.md "How to read a plan" has more.
//
// Under rank steps, ranks whose boxes have equal extents usually run equal local subtrees.
// A rank's local subtree may then be written "same rank R": it runs the local subtree
// rank R ran last (in this phase or, under rank-level DFS steps, an earlier one), planned
// once and shifted to its own box. So a plan over 16,384 ranks holds a few local
// subtrees, not 16,384. Example, 4 ranks on 64 x 64 x 64, every rank's box 32 x 32 x 64:
//
//   bfs m rank 32@2r 32@2r
//     bfs n rank 32@1r 32@1r
//       bfs k thread 32@1t 32@1t          # rank 0's local subtree
//         leaf openblas
//         leaf openblas
//       same rank 0                       # rank 1: rank 0's subtree on its own box
//     ...
//
// Version 1 texts ("SIZE@T", "SIZE@T:D") still parse.
//
// Rank-k updates (syrk, herk) are plans too. Their problem line names the operation, the
// triangle and the trans letter, "problem d syrk UT 32 32 4194304" (n twice, then k), and
// their nodes are of two kinds: triangles (the root, a diagonal block of C, only its uplo
// triangle computed) and rectangles (off-diagonal blocks: plain gemm sub-problems, planned
// and run as in a gemm plan). A triangle is cut along k (its parts are triangles; a BFS
// k-cut's parts 1.. write triangle temporaries that are added into C's triangle) or along
// n by a *diagonal cut*, which has three parts: the two diagonal triangles of sizes n1 and
// n2, then the off-diagonal block, written "gemm" (its size follows from n1, n2 and uplo):
//
//   prism-plan 2
//   problem d syrk LN 1024 1024 1024
//   threads 2
//   bfs n thread 512@1t 512@1t gemm@1t      # 1024x1024x1024 L triangle, 2 threads
//     leaf openblas                         # 512x512x1024 L triangle, 1 thread
//     leaf openblas                         # 512x512x1024 L triangle, 1 thread
//     leaf openblas                         # 512x512x1024, 1 thread (C rows 512.., cols 0..)
//
// In a BFS diagonal cut the two triangles share one share (the same threads, domains),
// running one after the other on it, while the block runs at once on its own share: the
// triangles hold about as many flops together (n1^2/2 + n2^2/2) as the block (n1 n2), so
// the two sides are balanced with half the threads each, even with 2 threads. A DFS
// diagonal cut ("dfs n thread 512 512 gemm") runs all three one after another.
//
// Operands already in a GPU's memory (prism::gemm / syrk / herk given device pointers,
// make_device_plan) get a plan of the same type whose header names the device's streams,
// "devices 1 memory BYTES streams S": every step is a gpu step over those S streams of the
// one device holding A, B and C, and nothing crosses the link. A gpu bfs step gives each
// part its own streams ("@2s"); a k cut's parts 1.. write temporaries in device memory
// (BYTES caps them), added into their node's block on the device. A triangle leaf computes
// its whole block with one gemm into device scratch and adds only its triangle into C.
// AᵀA with A 4194304 x 32 on 4 streams:
//
//   prism-plan 2
//   problem d syrk UT 32 32 4194304
//   threads 1
//   devices 1 memory 1073741824 streams 4
//   bfs k gpu 1048576@1s 1048576@1s 1048576@1s 1048576@1s
//     leaf gpu                              # 32x32x1048576 U triangle, stream 0
//     leaf gpu                              # ... stream 1, and so on
//     leaf gpu
//     leaf gpu
#pragma once

#include <prism/types.hpp>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace prism {

class context;  // prism/context.hpp: planning takes one, a plan does not
/// The process-wide default context; declared in prism/context.hpp, repeated here for
/// make_plan's default argument.
const context& default_context();

/// How a node's parts run: leaf (no cut), bfs (parts concurrently), dfs (one after another).
enum class step_kind : std::uint8_t { leaf, bfs, dfs };

/// The level of the machine a step divides, outermost first: MPI ranks, NUMA domains of a
/// rank, GPUs (devices) of a domain, threads of a domain, caches of a thread (cache steps
/// are DFS only). A gpu BFS step gives each part its own devices; a gpu DFS step cuts one
/// device's share into C blocks or k chunks that stream through its memory one after
/// another; below a gpu step there are only gpu steps and gpu leaves (docs/gpu.md).
enum class level : std::uint8_t { rank, numa, gpu, thread, cache };

/// A contiguous range [first, first + count) of ranks or of NUMA domains.
struct span {
  int first = 0;  ///< first member
  int count = 1;  ///< number of members (>= 1)
  /// True when i is in the range.
  bool contains(int i) const noexcept { return i >= first && i < first + count; }
  friend bool operator==(const span&, const span&) = default;
};

/// What a subtree runs on at each parallel level: ranks, NUMA domains (numbered within each
/// rank's machine), a thread budget (per rank), GPUs (numbered within each rank's
/// machine; count 0: none, the subtree runs on the host) and, in a plan whose operands are
/// on a device, that device's streams (count 0 in every other plan).
struct resources {
  span ranks;       ///< MPI ranks of the communicator
  span domains;     ///< NUMA domains
  int threads = 1;  ///< thread budget
  span devices{0, 0};  ///< GPUs
  span streams{0, 0};  ///< streams of the device holding the operands
  friend bool operator==(const resources&, const resources&) = default;
};

/// One part of a cut: its extent along the cut dimension and its share of each parallel
/// level the step divides; a share of 0 means "not divided here: the node's own".
/// A rank step sets `ranks`; a numa step `domains` and `threads` (threads follow cores), and
/// `devices` in a plan with GPUs; a gpu step `devices` (`streams` in a plan whose operands
/// are on the device); a thread step `threads`; a DFS step none.
struct part {
  std::int64_t size = 0;  ///< extent along the node's cut dimension
  int ranks = 0;          ///< ranks of the part (rank-level BFS)
  int domains = 0;        ///< NUMA domains of the part (numa-level BFS)
  int threads = 0;        ///< thread share (numa- and thread-level BFS)
  int devices = 0;        ///< GPUs of the part (gpu-level BFS; numa-level BFS of a plan with GPUs)
  int streams = 0;        ///< streams of the part (gpu-level BFS of a plan whose operands are on the device)
  friend bool operator==(const part&, const part&) = default;
};

/// A sub-prism of the whole product: rows [i, i + m) of C and op(A), columns [j, j + n) of
/// C and op(B), and [l, l + k) of the inner dimension.
struct box {
  std::int64_t m = 0, n = 0, k = 0;  ///< extents
  std::int64_t i = 0, j = 0, l = 0;  ///< origin in the whole product
  friend bool operator==(const box&, const box&) = default;
};

/// A rectangle of a stored (column-major) matrix: rows [row, row + rows), columns
/// [col, col + cols). The one rectangle type of the API (a rank's block, a placed block).
struct block {
  std::int64_t row = 0, col = 0, rows = 0, cols = 0;  ///< origin and extents
  /// Elements in the block.
  std::int64_t size() const noexcept { return rows * cols; }
  friend bool operator==(const block&, const block&) = default;
};

/// One node of a plan's tree. Fields after `backend` are derived by the plan.
///
/// A diagonal cut (a triangle's n-cut in a syrk / herk plan, see the file comment) has
/// three parts: parts[0] and parts[1] the two diagonal triangles (sizes n1 and n2, the same
/// share), parts[2] the off-diagonal block (size 0: its extents follow from n1 and n2).
struct node {
  step_kind kind = step_kind::leaf;  ///< leaf, bfs or dfs
  dim cut = dim::m;                  ///< dimension a bfs/dfs node cuts
  level where = level::thread;       ///< machine level of the step (ignored for leaves)
  std::vector<part> parts;           ///< the pieces of the cut, in order
  std::vector<int> children;         ///< node index of each part's subtree
  leaf_backend backend = leaf_backend::openblas;  ///< leaves: openblas, blis or streaming
  int same = -1;  ///< a rank's local root only: runs the local subtree rooted at node `same`
                  ///< (another rank's, of equal extents and resources), text "same rank R"

  box shape;                         ///< derived: this node's sub-prism
  char triangle = 0;                 ///< derived: 'U' or 'L' when the node is a diagonal
                                     ///< triangle of a syrk / herk plan (its box has i == j,
                                     ///< m == n; only that triangle of C is written), else 0
  resources owns;                    ///< derived: the ranks, domains and threads it runs on
  std::size_t workspace_offset = 0;  ///< derived: byte offset of its workspace in the call's
  std::size_t workspace_bytes = 0;   ///< derived: bytes this subtree needs (temporaries)
};

/// Extent of an m x n x k sub-prism along d, e.g. extent(dim::k, 4, 5, 6) == 6.
constexpr std::int64_t extent(dim d, std::int64_t m, std::int64_t n, std::int64_t k) {
  return d == dim::m ? m : d == dim::n ? n : k;
}

/// One child of a cut, as for_each_child yields it.
struct child_step {
  std::size_t part = 0;  ///< position among the node's parts
  int node = -1;         ///< node index of its subtree (-1 while a planner builds the node)
  box shape;             ///< its sub-prism
  resources owns;        ///< what it runs on
};

/// True for a diagonal cut: the n-cut of a triangle (three parts, see node).
inline bool is_diagonal_cut(const node& nd) {
  return nd.triangle != 0 && nd.kind != step_kind::leaf && nd.cut == dim::n;
}

/// Calls f(child_step) for each part of `nd`, a node whose sub-prism is `b` on resources
/// `r`. The one place where part sizes become child offsets and shares become child
/// resources: the planner builds children through it, the plan derives every node's
/// shape and owns with it, and the executor, traffic and placement read those. Example: a bfs numa k-cut of box {64, 64, 3000, 0, 0, 0} on
/// domains [0, 3) with parts 1000@1d,2t 2000@2d,4t yields k-range [0, 1000) on domain 0
/// with 2 threads, then [1000, 3000) on domains [1, 3) with 4 threads.
///
/// A diagonal cut (nd.triangle set, cut n) of a triangle at (i, i) with parts n1, n2 and
/// the block yields the triangles at (i, i) of n1 x n1 and at (i + n1, i + n1) of n2 x n2,
/// both on the first part's share, then the block on the next share: for 'L' the rows
/// below the first triangle, n2 x n1 at (i + n1, i); for 'U' the columns right of it,
/// n1 x n2 at (i, i + n1). E.g. a 'L' triangle of 10 at (0, 0) cut 5, 5 gives triangles at
/// (0, 0) and (5, 5) and the block C[5:10, 0:5].
template <class F>
void for_each_child(const node& nd, const box& b, const resources& r, F&& f) {
  if (is_diagonal_cut(nd)) {
    const std::int64_t n1 = nd.parts.size() > 0 ? nd.parts[0].size : 0;
    const std::int64_t n2 = nd.parts.size() > 1 ? nd.parts[1].size : 0;
    resources diag = r, block = r;
    if (!nd.parts.empty()) {
      const part& pt = nd.parts[0];
      if (pt.ranks > 0) diag.ranks = span{r.ranks.first, pt.ranks};
      if (pt.domains > 0) diag.domains = span{r.domains.first, pt.domains};
      if (pt.threads > 0) diag.threads = pt.threads;
      if (pt.devices > 0) diag.devices = span{r.devices.first, pt.devices};
      if (pt.streams > 0) diag.streams = span{r.streams.first, pt.streams};
    }
    if (nd.parts.size() > 2) {
      const part& pt = nd.parts[2];
      const part& p0 = nd.parts[0];
      if (pt.ranks > 0) block.ranks = span{r.ranks.first + p0.ranks, pt.ranks};
      if (pt.domains > 0) block.domains = span{r.domains.first + p0.domains, pt.domains};
      if (pt.threads > 0) block.threads = pt.threads;
      if (pt.devices > 0) block.devices = span{r.devices.first + p0.devices, pt.devices};
      if (pt.streams > 0) block.streams = span{r.streams.first + p0.streams, pt.streams};
    }
    for (std::size_t c = 0; c < nd.parts.size(); ++c) {
      child_step ch{c, c < nd.children.size() ? nd.children[c] : -1, b, c < 2 ? diag : block};
      if (c == 0) ch.shape.m = ch.shape.n = n1;
      else if (c == 1) ch.shape.m = ch.shape.n = n2, ch.shape.i = b.i + n1, ch.shape.j = b.j + n1;
      else if (nd.triangle == 'L') ch.shape.m = n2, ch.shape.n = n1, ch.shape.i = b.i + n1;
      else ch.shape.m = n1, ch.shape.n = n2, ch.shape.j = b.j + n1;
      f(static_cast<const child_step&>(ch));
    }
    return;
  }
  std::int64_t offset = 0;
  int next_rank = r.ranks.first, next_domain = r.domains.first, next_device = r.devices.first;
  int next_stream = r.streams.first;
  for (std::size_t c = 0; c < nd.parts.size(); ++c) {
    const part& pt = nd.parts[c];
    child_step ch{c, c < nd.children.size() ? nd.children[c] : -1, b, r};
    if (nd.cut == dim::m) ch.shape.i = b.i + offset, ch.shape.m = pt.size;
    else if (nd.cut == dim::n) ch.shape.j = b.j + offset, ch.shape.n = pt.size;
    else ch.shape.l = b.l + offset, ch.shape.k = pt.size;
    offset += pt.size;
    if (pt.ranks > 0) ch.owns.ranks = span{next_rank, pt.ranks}, next_rank += pt.ranks;
    if (pt.domains > 0) ch.owns.domains = span{next_domain, pt.domains}, next_domain += pt.domains;
    if (pt.threads > 0) ch.owns.threads = pt.threads;
    if (pt.devices > 0) ch.owns.devices = span{next_device, pt.devices}, next_device += pt.devices;
    if (pt.streams > 0) ch.owns.streams = span{next_stream, pt.streams}, next_stream += pt.streams;
    f(static_cast<const child_step&>(ch));
  }
}

namespace detail {
struct plan_access;  // lib/recursive/plan.cpp
}

/// The recursion of one multiplication: problem, resources at the root and a tree of steps.
class plan {
 public:
  /// An empty plan (no problem, no nodes); validate() rejects it.
  plan() = default;
  /// Builds a plan from a tree whose node 0 is the root, running on `root` (ranks [0, P),
  /// domains [0, D), T threads, devices [0, G)); derives shapes, resources and workspace
  /// and validates (throws prism::plan_error). `device_memory`: the bytes of each device's
  /// memory a plan with GPUs may use (its C blocks and k chunks must fit them).
  plan(prism::problem p, resources root, std::vector<node> nodes, std::size_t device_memory = 0);

  /// Parses the text form produced by to_string() (version 2, or version 1); throws
  /// prism::plan_error naming the line.
  static plan parse(std::string_view text);

  /// The multiplication this plan computes.
  const prism::problem& problem() const noexcept { return problem_; }
  /// Resources at the root: ranks [0, ranks()), domains [0, domains()), threads().
  const resources& root() const noexcept { return root_; }
  /// Thread budget at the root (of each rank).
  int threads() const noexcept { return root_.threads; }
  /// NUMA domains the plan spreads over (of each rank; 1: no numa-level steps).
  int domains() const noexcept { return root_.domains.count; }
  /// MPI ranks the plan spreads over (1: no rank-level steps).
  int ranks() const noexcept { return root_.ranks.count; }
  /// GPUs the plan runs its leaves on (of each rank; 0: none, it runs on the host).
  int devices() const noexcept { return root_.devices.count; }
  /// Bytes of each device's memory the plan may use (0 without devices); in a plan whose
  /// operands are on the device, the bytes its temporaries there may take.
  std::size_t device_memory() const noexcept { return device_memory_; }
  /// Streams of the device holding the operands (0: the operands are in host memory).
  int streams() const noexcept { return root_.streams.count; }
  /// True for a plan whose operands A, B and C are in one device's memory (streams() > 0).
  bool on_device() const noexcept { return root_.streams.count > 0; }
  /// All nodes; index 0 is the root.
  const std::vector<node>& nodes() const noexcept { return nodes_; }
  /// Extra bytes of temporaries a run of this plan allocates (its workspace; device memory
  /// in a plan whose operands are on the device).
  std::size_t extra_bytes() const noexcept { return nodes_.empty() ? 0 : nodes_[0].workspace_bytes; }
  /// Levels from the root to the deepest leaf (a single leaf has depth 0).
  int depth() const;
  /// Number of leaves of its distinct subtrees (a "same rank R" node counts none).
  std::size_t leaves() const;
  /// Number of steps of the given kind (leaves: as leaves()).
  std::size_t count(step_kind kind) const;

  /// Checks every invariant; throws prism::plan_error naming the first one broken.
  void validate() const;
  /// The text form, version 2 (see the file comment); parse(to_string()) == *this.
  std::string to_string() const;

  /// Structural equality (problem, root resources, steps, parts, backends).
  friend bool operator==(const plan& a, const plan& b);

 private:
  friend struct detail::plan_access;  // derives the nodes' fields (lib/recursive/plan.cpp)

  prism::problem problem_{};
  resources root_{};
  std::vector<node> nodes_;
  std::size_t device_memory_ = 0;
};

/// Prints plan.to_string().
std::ostream& operator<<(std::ostream& os, const plan& p);

// ---- The planners -----------------------------------------------------------------------
// make_plan builds every plan; over MPI ranks (ctx.ranks() > 1) it calls choose_ranks,
// which puts the rank-level steps on top and make_plan's local levels below each rank.

/// The problem of a rank-k update: op syrk or herk, C n x n from op(A) n x k; uplo 'U' or
/// 'L' and trans 'N', 'T' (syrk) or 'C' (herk; a real syrk's 'C' means 'T'), any case.
/// transb is derived (see prism::problem). Throws prism::plan_error on a bad letter, a
/// herk of a real type or a complex syrk with 'C'.
problem rank_k_problem(scalar_type t, operation op, char uplo, char trans, std::int64_t n, std::int64_t k);

/// Builds the CARMA plan for a problem under a context (thread budget, memory cap, NUMA
/// topology, leaves; ranks: with ctx.ranks() > 1, choose_ranks() below).
/// The rules are described in docs/planning.md "The rules". A syrk / herk problem
/// (rank_k_problem) gets the triangle recursion (docs/planning.md "Rank-k updates"); it has no
/// rank-level steps (plan_error when ctx.ranks() > 1).
plan make_plan(const problem& p, const context& ctx = default_context());

/// Builds the plan prism::gemm, syrk and herk run when A, B and C are all in one device's
/// memory: gpu steps over that device's streams (k panels of Gram and thin products on
/// several streams, reduced on the device; triangles computed by gemm, only their triangle
/// written), nothing crossing the link. Needs no device present; the temporaries fit
/// ctx.gpu_memory() when set, else 1/16 of the smallest device's memory (the machine
/// description's gpu_memory without one). Throws prism::plan_error for an empty product.
plan make_device_plan(const problem& p, const context& ctx = default_context());

/// Builds the plan gemm would use for this call (normalised trans letters).
template <scalar T>
plan make_plan(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k,
               const context& ctx = default_context()) {
  return make_plan(problem{scalar_type_of<T>(), transa, transb, m, n, k}, ctx);
}

/// One rank-level tree the planner weighed, with its exact cost.
struct rank_candidate {
  int ranks = 0;                 ///< P' it uses
  std::string grid;              ///< rank_model::grid()
  std::int64_t max_received = 0; ///< elements, exact
  double max_flops = 0;          ///< real flops of the busiest rank
  double mean_flops = 0;         ///< mean over the P' ranks
  std::size_t peak_bytes = 0;    ///< largest per-rank footprint
  double seconds = 0;            ///< modelled time: max over ranks of flops / F + bytes / B
  bool fits = true;              ///< peak_bytes within the memory per rank
};

/// Why the rank planner chose its plan: the candidates it scored exactly, best first.
struct rank_choice {
  int ranks_given = 1;                   ///< P
  std::size_t memory = 0;                ///< bytes per rank the plan had to fit
  double flop_rate = 0, bandwidth = 0;   ///< F and B of the model
  std::vector<rank_candidate> candidates;  ///< scored trees, the chosen one first
  std::string reason;                    ///< one line: why the chosen one won
  plan chosen;                           ///< the plan make_plan returns
};

/// Plans a problem over ctx.ranks() MPI ranks (rank-level steps on top, each rank's local
/// levels below) and says why: searches rank trees whose cuts give each part a share of the
/// ranks (prime factors, or two unequal parts such as 3 + 4), on P' <= P ranks, scores
/// the best by the exact rank_model cost, keeps those within the memory per rank and picks
/// the least modelled time; adds rank-level DFS phases when none fits. docs/distributed.md
/// has the rules. Throws prism::plan_error when no plan fits the memory per
/// rank, naming the least footprint (least_footprint_ranks) and the floor.
rank_choice choose_ranks(const problem& p, const context& ctx);

/// The rank plan of least footprint (peak bytes per rank without the local levels'
/// temporaries) that choose_ranks can build for p on ctx.ranks() ranks: single-phase trees
/// and rank-level DFS phases up to where more phases no longer shrink the blocks. Its
/// reason names that footprint and the floor no plan can go below (A, B and C spread
/// evenly over all ranks). choose_ranks refuses a cap below it with the same figures.
rank_choice least_footprint_ranks(const problem& p, const context& ctx);

/// Prints, as '#' comment lines: P and P', the grid, why, the predicted volume per rank
/// (max, mean) beside bounds::parallel_io_minus_owned, flop balance, peak memory, and the candidates.
void print_rank_report(std::ostream& os, const rank_choice& choice);

/// How a part of a rank-k scheme shares the triangle among its ranks
/// (docs/distributed.md, "Rank-k updates", has the blocks each rank computes).
enum class rank_k_cover {
  difference,  ///< c row blocks, shared by a difference cover of Z_c (c = 7: the Fano plane)
  star,        ///< 4 roles, 6 row atoms: one role reads 3 atoms of n/sqrt(24), each other one of
               ///< those and the remaining 3; each reads about 0.6 n and computes n^2/8 (a quarter
               ///< of the triangle); with ranks per role m0, m, m, m the atoms are sized for equal work
  nest,        ///< 2 roles: the outer rows' pairs (reading every row), the inner rows' triangle
};

/// One part of a rank-k scheme: `group_ranks` roles (c) sharing the triangle by `cover`
/// over the part's share of k. Each role has ranks that take turns over that share, each
/// one equal run of it: `groups` each (G k slices of c ranks), or `role_ranks` as given
/// (odd difference covers, the nest, and the star with its three leaf roles alike, whose
/// row blocks are then sized so that every rank does the same flops: for a difference cover,
/// Newton's blocks where they average 8 rows or more and c <= 1024, or equal blocks,
/// whichever leaves the busiest rank less; work_role_ranks gives ranks for equal blocks).
struct rank_k_part {
  int groups = 1;                                 ///< k slices, one per group of c, without role_ranks
  int group_ranks = 1;                            ///< roles c (ranks per group; 4 for the star, 2 for the nest)
  rank_k_cover cover = rank_k_cover::difference;  ///< how the roles share the triangle
  std::vector<int> role_ranks;                    ///< ranks of each role (c of them), or empty: `groups` each
  /// Ranks of the part.
  int ranks() const noexcept {
    if (role_ranks.empty()) return groups * group_ranks;
    int r = 0;
    for (int m : role_ranks) r += m;
    return r;
  }
  friend bool operator==(const rank_k_part&, const rank_k_part&) = default;
};

/// How a rank-k update is spread over ranks (prism/rank_model.hpp has its layout and costs): one
/// or more parts on consecutive shares of k in proportion to their ranks, so that every
/// rank does the same flops; ranks are numbered part by part. Example: "star4 + tbd3{0,1}"
/// on 7 ranks: ranks 0-3 share the triangle by the star over the first 4/7 of k, ranks 4-6
/// by the c = 3 cover over the last 3/7.
struct rank_k_scheme {
  std::vector<rank_k_part> parts{rank_k_part{}};  ///< at least one
  int phases = 1;                                 ///< chunks of k each rank runs one after another
  /// One rank: the whole triangle.
  rank_k_scheme() = default;
  /// One part: `groups` k slices x `group_ranks` ranks sharing by a difference cover.
  rank_k_scheme(int groups, int group_ranks, int phases = 1)
      : parts{rank_k_part{groups, group_ranks, rank_k_cover::difference, {}}}, phases(phases) {}
  /// The given parts.
  explicit rank_k_scheme(std::vector<rank_k_part> ps, int phases = 1) : parts(std::move(ps)), phases(phases) {}
  /// Ranks used (P', the parts' ranks together).
  int ranks() const noexcept {
    int r = 0;
    for (const rank_k_part& x : parts) r += x.ranks();
    return r;
  }
  /// Compact text: each part as "k2 x tbd3{0,1}", "k8" (c = 1), "1" (one rank),
  /// "k2 x star4", "tbd7{0,1,3}[3,3,2,2,2,2,2]" (ranks per role) or "nest2[2,1]", parts
  /// joined by " + ", then " dfs kQ" for Q phases, e.g. "star4 + tbd3{0,1} dfs k4"; a run
  /// of 8 or more roles of m ranks is "m*count" ("tbd91{...}[12*23,11*68]"). parse() reads
  /// it back.
  std::string to_string() const;
  /// Parses to_string()'s text; throws plan_error naming what is wrong.
  static rank_k_scheme parse(std::string_view text);
  friend bool operator==(const rank_k_scheme&, const rank_k_scheme&) = default;
};

/// One scheme the rank-k planner weighed, with its exact cost.
struct rank_k_candidate {
  rank_k_scheme scheme;             ///< parts and phases
  std::int64_t max_received = 0;    ///< elements, exact
  double max_flops = 0;             ///< real flops of the busiest rank
  std::size_t peak_bytes = 0;       ///< largest per-rank footprint
  double seconds = 0;               ///< modelled time: flops / F + bytes / B
  bool fits = true;                 ///< peak_bytes within the memory per rank
};

/// Why the rank-k planner chose its scheme: the candidates scored exactly, best first.
struct rank_k_choice {
  problem source;                            ///< the problem planned
  int ranks_given = 1;                       ///< P
  std::size_t memory = 0;                    ///< bytes per rank the scheme had to fit
  double flop_rate = 0, bandwidth = 0;       ///< F and B of the model
  std::vector<rank_k_candidate> candidates;  ///< scored schemes, the chosen one first
  std::string reason;                        ///< one line: why the chosen one won
  rank_k_scheme chosen;                      ///< the scheme
  std::size_t least_footprint = 0;           ///< least peak bytes over the schemes weighed
};

/// Plans a syrk / herk problem over ctx.ranks() ranks: scores the triangle-block schemes
/// (every group size c and group count and the star, P' <= P; every rank on a projective
/// plane, its roles' ranks equal to within one or in proportion to their work; up to 64
/// ranks also uneven roles of odd covers and stars, nests and schemes of two or three
/// parts; by a closed
/// form, then the best exactly with prism::rank_model), keeps those whose peak fits the
/// memory per rank (adding phases when needed) and picks the least modelled time. Throws
/// plan_error when none fits, naming the least footprint and the scheme that reaches it.
rank_k_choice choose_rank_k_ranks(const problem& p, const context& ctx);

/// The scheme of least footprint among those choose_rank_k_ranks weighs, each with the
/// phases that minimise its peak; choose_rank_k_ranks refuses a cap below it naming it.
rank_k_choice least_footprint_rank_k(const problem& p, const context& ctx);

/// Prints, as '#' lines: P and P', the scheme, why, the predicted volume per rank beside
/// bounds::syrk_parallel_io_minus_owned and their ratio, peak memory, and the candidates.
void print_rank_k_report(std::ostream& os, const rank_k_choice& choice);

/// The lowercase name of a dimension: "m", "n" or "k".
const char* to_string(dim d);
/// "leaf", "bfs" or "dfs".
const char* to_string(step_kind s);
/// "rank", "numa", "gpu", "thread" or "cache".
const char* to_string(level l);

}  // namespace prism
