// lib/numa/hwloc_access.hpp — the hwloc handle behind a prism::topology, for lib/numa only
// (hwloc stays out of the public headers, and so does the handle).
#pragma once

#include <prism/topology.hpp>

#include <hwloc.h>

namespace prism::detail {

/// The library's access to a topology's hwloc state (topology.hpp keeps it private).
struct topology_access {
  /// The hwloc topology t was loaded into; valid while t (or a copy) lives.
  static hwloc_topology_t handle(const topology& t);
};

/// topology_access::handle(t).
inline hwloc_topology_t hwloc_of(const topology& t) { return topology_access::handle(t); }

}  // namespace prism::detail
