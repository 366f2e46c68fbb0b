// prism/context.hpp — runtime limits that travel with a call instead of living in globals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <prism/machine.hpp>
#include <prism/topology.hpp>
#include <prism/types.hpp>

namespace prism {

namespace detail {
class runtime;  // task arena + workspace pool + plan cache (lib/runtime/runtime.hpp)
struct context_access;  // the library's own access to them (lib/runtime/runtime.hpp)
namespace gpu {
struct device_set;  // the GPUs a context runs GPU plans on (lib/gpu/devices.hpp)
}
}

/// Parses a count with an optional K, M or G suffix (powers of 1024), as PRISM_MAX_MEMORY
/// and `prism plan --max-memory` take it: "64M" gives 67108864; throws prism::error.
std::uint64_t parse_size(const std::string& text);

/// Parses a rate or flop count: what parse_size takes ("50G" gives 53687091200), or a
/// decimal number without a sign ("50e9", "2.5e9"), as PRISM_RANK_FLOPS, PRISM_RANK_BANDWIDTH,
/// PRISM_SMALL_FLOPS and the tool's rate options take it; throws prism::error.
double parse_rate(const std::string& text);

/// Limits and choices of one prism call: threads, memory cap, small-problem cut-off, leaves.
///
/// A context owns a oneTBB task arena sized to its thread count and a pool of reusable
/// workspace. Copies share both. Setting fields while another thread uses the same
/// context is not allowed; concurrent calls that only read a context are fine.
class context {
 public:
  /// Defaults: oneTBB's default concurrency, no memory cap, the machine description's small
  /// threshold, leaf backend "auto", no extra recursion levels (docs/planning.md "The
  /// rules"). It reads no PRISM_* setting, but its machine description is the one prism
  /// reads for the process (PRISM_MACHINE, PRISM_TOPOLOGY, else this machine) until
  /// set_description or set_machine gives another; a bad PRISM_TOPOLOGY throws there.
  context();

  /// Defaults overridden by PRISM_NUM_THREADS, PRISM_MAX_MEMORY, PRISM_SMALL_FLOPS,
  /// PRISM_LEAF, PRISM_EXTRA_DEPTH, PRISM_CACHE_LEVEL, PRISM_RANK_FLOPS and
  /// PRISM_RANK_BANDWIDTH (PRISM_LEAF_KERNELS, process-wide, is checked too); throws
  /// prism::error naming the variable on a malformed value (e.g. "PRISM_MAX_MEMORY: not a
  /// non-negative integer: 'x'").
  static context from_env();

  /// Thread budget of a call (>= 1).
  int threads() const noexcept { return threads_; }
  /// Sets the thread budget; throws prism::error unless 1 <= t <= 4096.
  context& set_threads(int t);

  /// Cap on the extra bytes a call may allocate for temporaries (SIZE_MAX: no cap). In a
  /// plan over ranks (ranks() > 1) it caps each rank's whole footprint instead: its blocks
  /// of A, B and C in the native layout, the exchange buffers and its local temporaries
  /// (SIZE_MAX there means default_rank_memory(): README "MPI").
  std::size_t max_memory() const noexcept { return max_memory_; }
  /// Sets the extra-memory cap in bytes.
  context& set_max_memory(std::size_t bytes);

  /// MPI ranks a plan spreads over (default 1: no rank-level steps); prism::dist sets it
  /// from the communicator, `prism plan --ranks P` from its option.
  int ranks() const noexcept { return ranks_; }
  /// Sets the rank count; throws prism::error unless 1 <= p <= 1048576 (2^20).
  context& set_ranks(int p);
  /// Ranks sharing one node's memory (for the default per-rank memory; default 1).
  int ranks_per_node() const noexcept { return ranks_per_node_; }
  /// Sets the ranks per node; throws prism::error unless 1 <= r <= 1048576 (2^20).
  context& set_ranks_per_node(int r);
  /// Modelled flop rate of one rank, flop/s (rank planning: time = flops / F + bytes / B);
  /// unless set, the machine description's rank_flops_per_thread times threads().
  double rank_flops() const;
  /// Modelled bandwidth one rank receives at, bytes/s; unless set, the machine
  /// description's rank_bandwidth.
  double rank_bandwidth() const;
  /// Sets F (flop/s per rank) and B (bytes/s per rank); throws prism::error unless both > 0.
  context& set_rank_rates(double flops_per_second, double bytes_per_second);

  /// Calls with fewer real flops than this run as one leaf on the calling thread (0: never);
  /// unless set, the machine description's small_flops.
  double small_flops() const;
  /// Sets the small-problem threshold; 0 forces the recursion even for tiny sizes. Throws
  /// prism::error unless flops >= 0 (NaN included).
  context& set_small_flops(double flops);

  /// Leaf backend choice.
  leaf_backend leaf() const noexcept { return leaf_; }
  /// Sets the leaf backend; throws prism::error for leaf_backend::gpu (a GPU plan's own
  /// leaves, not a choice) or a value outside the enumeration.
  context& set_leaf(leaf_backend b);

  /// BFS levels allowed past one thread per share, for work-stealing balance (0..8).
  int extra_depth() const noexcept { return extra_depth_; }
  /// Sets the extra depth; throws prism::error outside 0..8.
  context& set_extra_depth(int levels);

  /// Smallest leaf (real flops) an extra level may create.
  double min_leaf_flops() const noexcept { return min_leaf_flops_; }
  /// Sets the smallest leaf an extra BFS level may create; throws prism::error unless
  /// flops >= 0 (NaN included).
  context& set_min_leaf_flops(double flops);

  /// The topology plans are made for: NUMA domains and caches (description().topo()).
  const topology& machine() const;
  /// Plans for another topology (e.g. topology::synthetic("package:2 numa:2 core:4 pu:1")):
  /// the description becomes the model's for it (values measured on this machine do not
  /// carry over to another one).
  context& set_machine(topology t);

  /// The machine description the planner and leaf rules read (default: the process-wide
  /// default_description(), built once on first use).
  const machine_description& description() const;
  /// Plans for description d (tests pin one; the tool reads one from PRISM_MACHINE=FILE).
  context& set_description(machine_description d);

  /// Whether the planner may cut k (default true). false gives the m x n-only split that
  /// threaded BLAS libraries use, for comparing predicted traffic.
  bool k_cuts() const noexcept { return k_cuts_; }
  /// Allows or forbids k cuts.
  context& set_k_cuts(bool allowed);

  /// Cache level whose size bounds a leaf's working set below the thread level (cache-aware
  /// DFS): 1, 2, 3, ... as the topology reports, or 0 for no cache DFS (default 3: L3, one
  /// thread's share; the leaf BLAS blocks for L1 and L2 itself). See docs/planning.md.
  int cache_level() const noexcept { return cache_level_; }
  /// Sets the cache level for DFS (0..4); throws prism::error outside.
  context& set_cache_level(int level);

  /// GPUs a plan may use: -1 (the default) lets the model choose, among this process's
  /// devices (PRISM_GPU, docs/gpu.md), whether a GPU plan is faster than the host's; 0 none;
  /// n > 0 exactly n devices (planning needs no device present: `prism plan --gpus n`).
  int gpus() const noexcept { return gpus_; }
  /// Sets the GPU count; throws prism::error unless -1 <= n <= 1024.
  context& set_gpus(int n);
  /// Bytes of each device's memory a GPU plan may use; 0 (the default): 15/16 of the
  /// smallest device's memory, or the machine description's gpu_memory without devices.
  std::size_t gpu_memory() const noexcept { return gpu_memory_; }
  /// Sets the device memory a GPU plan may use; throws prism::error below 1 MiB (0: the default).
  context& set_gpu_memory(std::size_t bytes);
  /// Runs GPU plans on `count` emulated devices of `bytes` each (host memory with that
  /// capacity; every byte across the "link" counted) instead of this process's devices:
  /// tests, and runs where no GPU is present. Throws prism::error unless 1 <= count <= 64
  /// and bytes >= 1 MiB.
  context& use_emulated_gpus(int count, std::size_t bytes);
  /// One line: the devices GPU plans of this context run on, or why there are none.
  std::string gpu_status() const;

  /// One-line summary, e.g. "threads=2 max_memory=none small_flops=1.18541e+06 leaf=auto extra_depth=0 cache_level=3".
  std::string describe() const;

 private:
  friend struct detail::context_access;  // the shared arena, pool and plan cache, for lib/

  int threads_;
  std::size_t max_memory_;
  double small_flops_ = -1;  // < 0: the description's
  leaf_backend leaf_;
  int extra_depth_;
  double min_leaf_flops_;
  bool k_cuts_ = true;
  int cache_level_ = 3;
  int ranks_ = 1;
  int ranks_per_node_ = 1;
  double rank_flops_ = 0;      // when rank_flops_set_; else the description's, times threads()
  double rank_bandwidth_ = 0;  // likewise
  bool rank_flops_set_ = false;
  int gpus_ = -1;                  // -1: the model decides
  std::size_t gpu_memory_ = 0;     // 0: the devices' (or the description's)
  std::shared_ptr<const detail::gpu::device_set> devices_;  // null: the process's (PRISM_GPU)
  std::shared_ptr<const machine_description> description_;  // null: the process-wide default
  std::shared_ptr<detail::runtime> runtime_;
};

/// The per-rank memory a rank plan assumes when the context sets no cap: half of this
/// node's physical memory divided by ranks_per_node, e.g. 24 GiB and 2 ranks: 6 GiB.
std::size_t default_rank_memory(int ranks_per_node);

/// The process-wide topology: topology::from_env(), built once (thread-safely) on first use.
const topology& default_topology();

/// The process-wide default context, built once (thread-safely) from the environment.
const context& default_context();

}  // namespace prism
