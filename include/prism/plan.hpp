// prism/plan.hpp — the recursion of one multiplication, as a value.
//
// A plan is a tree. Each inner node cuts its m x n x k sub-prism along one dimension
// into parts; a BFS node runs the parts at once on disjoint thread shares, a DFS node
// runs them one after another with all of its threads. Leaves call a single-threaded
// BLAS. Plans print themselves as text and parse back from it, so tests and users can
// hand-write them:
//
//   prism-plan 1
//   problem d NN 64 64 16777216
//   threads 3
//   bfs k thread 5592400@1 11184816@2   # 64x64x16777216, 3 threads
//     leaf openblas                     # 64x64x5592400
//     bfs k thread 5592408@1 5592408@1  # 64x64x11184816, 2 threads
//       leaf openblas
//       leaf openblas
//
// "SIZE@T" is a part's extent along the cut dimension and its thread share; numa-level
// steps write "SIZE@T:D", D being the part's number of NUMA domains.
#pragma once

#include <prism/context.hpp>
#include <prism/types.hpp>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace prism {

/// How a node's parts run: leaf (no cut), bfs (parts concurrently), dfs (one after another).
enum class step_kind : std::uint8_t { leaf, bfs, dfs };

/// Which level of the machine a step divides: NUMA domains (parallel, each part on its own
/// set of domains), threads (parallel) or caches (sequential). MPI ranks will go above numa.
enum class level : std::uint8_t { thread, cache, numa };

/// One part of a cut: its extent along the cut dimension and its thread share.
struct part {
  std::int64_t size = 0;  ///< extent along the node's cut dimension
  int threads = 1;        ///< thread share (a DFS part has the node's threads)
  int domains = 0;        ///< NUMA domains of the part (numa-level steps only; else 0)
  friend bool operator==(const part&, const part&) = default;
};

/// One node of a plan's tree. Fields after `children` are derived by the plan.
struct node {
  step_kind kind = step_kind::leaf;  ///< leaf, bfs or dfs
  dim cut = dim::m;                  ///< dimension a bfs/dfs node cuts
  level where = level::thread;       ///< machine level of the step
  std::vector<part> parts;           ///< the pieces of the cut, in order
  std::vector<int> children;         ///< node index of each part's subtree
  leaf_backend backend = leaf_backend::openblas;  ///< leaves: openblas or blis

  std::int64_t m = 0, n = 0, k = 0;  ///< derived: shape of this sub-prism
  int threads = 1;                   ///< derived: thread budget of this node
  int domain_first = 0;              ///< derived: first NUMA domain of this subtree
  int domain_count = 1;              ///< derived: NUMA domains of this subtree
  std::size_t workspace_offset = 0;  ///< derived: byte offset of its workspace in the call's
  std::size_t workspace_bytes = 0;   ///< derived: bytes this subtree needs (temporaries)
};

/// Extent of an m x n x k sub-prism along d, e.g. extent(dim::k, 4, 5, 6) == 6.
constexpr std::int64_t extent(dim d, std::int64_t m, std::int64_t n, std::int64_t k) {
  return d == dim::m ? m : d == dim::n ? n : k;
}

/// The recursion of one multiplication: problem, thread budget and a tree of steps.
class plan {
 public:
  /// An empty plan (no problem, no nodes); validate() rejects it.
  plan() = default;
  /// Builds a plan from a tree whose node 0 is the root; derives shapes and workspace and
  /// validates (throws prism::plan_error). `domains` is the number of NUMA domains the
  /// plan spreads over (numa-level steps come first and divide them).
  plan(prism::problem p, int threads, std::vector<node> nodes, int domains = 1);

  /// Parses the text form produced by to_string(); throws prism::plan_error.
  static plan parse(std::string_view text);

  /// The multiplication this plan computes.
  const prism::problem& problem() const noexcept { return problem_; }
  /// Thread budget at the root.
  int threads() const noexcept { return threads_; }
  /// NUMA domains the plan spreads over (1: no numa-level steps).
  int domains() const noexcept { return domains_; }
  /// All nodes; index 0 is the root.
  const std::vector<node>& nodes() const noexcept { return nodes_; }
  /// Extra bytes of temporaries a run of this plan allocates (its workspace).
  std::size_t extra_bytes() const noexcept { return nodes_.empty() ? 0 : nodes_[0].workspace_bytes; }
  /// Levels from the root to the deepest leaf (a single leaf has depth 0).
  int depth() const;
  /// Number of leaves (BLAS calls) of one run.
  std::size_t leaves() const;
  /// Number of steps of the given kind.
  std::size_t count(step_kind kind) const;

  /// Checks every invariant; throws prism::plan_error naming the first one broken.
  void validate() const;
  /// The text form (see the file comment); parse(to_string()) == *this.
  std::string to_string() const;

  /// Structural equality (problem, threads, steps, parts, backends).
  friend bool operator==(const plan& a, const plan& b);

 private:
  void derive();  // fills the derived fields of nodes_

  prism::problem problem_{};
  int threads_ = 1;
  int domains_ = 1;
  std::vector<node> nodes_;
};

/// Prints plan.to_string().
std::ostream& operator<<(std::ostream& os, const plan& p);

/// Builds the CARMA plan for a problem under a context (thread budget, memory cap, leaves).
/// The depth rule and the memory rule are described in README "How prism plans".
plan make_plan(const problem& p, const context& ctx = default_context());

/// The lowercase name of a dimension: "m", "n" or "k".
const char* to_string(dim d);
/// "leaf", "bfs" or "dfs".
const char* to_string(step_kind s);
/// "thread", "cache" or "numa".
const char* to_string(level l);

}  // namespace prism
