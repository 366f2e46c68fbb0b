// lib/numa/domain_arenas.hpp — one oneTBB task arena per NUMA domain, its threads bound to
// the domain's cpuset while they work there.
#pragma once

#include <prism/topology.hpp>

#include <oneapi/tbb/task_arena.h>

#include "../resources/workspace_pool.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace prism::detail {

/// The domain whose arena the calling thread is working in, or -1 outside any.
int current_domain();

/// Throws prism::plan_error when a plan that spans `plan_domains` NUMA domains (plan::domains)
/// names more than topology t has (a hand-written 2-domain plan on a 1-domain machine),
/// before anything uses them.
void check_domains(int plan_domains, const topology& t);

/// Called at every leaf with the domain the plan assigned it (tests check it equals
/// current_domain()); nullptr disables. Not for production use.
using leaf_hook = void (*)(int planned_domain);
/// Installs a leaf hook (tests only).
void set_leaf_hook(leaf_hook hook);
/// The installed leaf hook, or nullptr.
leaf_hook get_leaf_hook();
/// Called before every numa-level reduction with the domain that owns C (tests check it
/// equals current_domain()); nullptr disables.
void set_reduce_hook(leaf_hook hook);
/// The installed reduce hook, or nullptr.
leaf_hook get_reduce_hook();

/// Task arenas per NUMA domain of a topology. When the topology is this machine, a
/// task_scheduler_observer binds each thread that enters a domain's arena to that
/// domain's cpuset (hwloc_set_cpubind) and restores its previous binding when it leaves,
/// so a caller's own affinity never changes. When it is not (a synthetic or foreign XML
/// topology), arenas are still per domain but unpinned, after one warning on stderr.
class domain_arenas {
 public:
  /// Arenas for the domains of t (created on first use).
  explicit domain_arenas(const topology& t);
  ~domain_arenas();
  domain_arenas(const domain_arenas&) = delete;
  domain_arenas& operator=(const domain_arenas&) = delete;

  /// The arena of `domain` with `threads` slots.
  oneapi::tbb::task_arena& arena(int domain, int threads);
  /// The workspace pool of `domain`: its blocks are bound to the domain's memory when the
  /// topology is this machine (hwloc_alloc_membind), else ordinary memory that the
  /// domain's threads touch first.
  workspace_pool& pool(int domain);
  /// True when threads really are bound to their domain's cpuset.
  bool pinned() const noexcept { return pinned_; }

 private:
  struct entry;
  topology topo_;
  bool pinned_;
  std::mutex mutex_;
  std::map<std::pair<int, int>, std::unique_ptr<entry>> arenas_;
  std::vector<std::unique_ptr<workspace_pool>> pools_;
};

}  // namespace prism::detail
