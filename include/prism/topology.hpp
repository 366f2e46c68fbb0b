// prism/topology.hpp — the machine as prism plans for it: NUMA domains and caches.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace prism {

/// One NUMA domain: its processing units (OS indices), core count and local memory.
struct numa_domain {
  int index = 0;                     ///< 0-based position among the topology's domains
  unsigned os_index = 0;             ///< the OS's NUMA node number
  std::vector<int> pus;              ///< OS indices of its processing units
  int cores = 0;                     ///< physical cores in the domain
  std::uint64_t memory_bytes = 0;    ///< local memory (0 if the topology does not say)
};

/// One cache level: size, line, and how many processing units share one instance.
struct cache_level {
  int level = 0;                   ///< 1, 2, 3, ...
  std::uint64_t size_bytes = 0;    ///< size of one instance
  unsigned line_bytes = 0;         ///< cache line size
  int pus_sharing = 0;             ///< processing units sharing one instance
  int instances = 0;               ///< instances in the machine
  int associativity = 0;           ///< ways (0: unknown, -1: fully associative; hwloc's)
};

namespace detail {
struct topology_access;  // lib/numa/hwloc_access.hpp
}

/// The NUMA domains and caches of a machine: detected, or loaded from an hwloc synthetic
/// description or XML file. Without NUMA information it is one domain; it never fails
/// for lack of information (only for a malformed description or unreadable file).
class topology {
 public:
  /// This machine, as hwloc detects it.
  static topology machine();
  /// An hwloc synthetic description, e.g. "package:2 numa:2 core:4 pu:1"; throws prism::error.
  /// `assume_this_system` declares it to describe this machine, so threads are really bound
  /// to its cpusets (tests use "numa:2 core:1 pu:1" on a 2-core machine).
  static topology synthetic(const std::string& description, bool assume_this_system = false);
  /// An hwloc XML file; throws prism::error.
  static topology xml(const std::string& path);
  /// A path ending in .xml, in any case (xml()), else a synthetic description (synthetic()), as
  /// PRISM_TOPOLOGY and `prism plan --topology` take it; throws prism::error.
  static topology parse(const std::string& spec);
  /// PRISM_TOPOLOGY (a synthetic description, or a path ending in .xml), else
  /// HWLOC_XMLFILE, else HWLOC_SYNTHETIC, else this machine.
  static topology from_env();

  /// The NUMA domains, at least one.
  const std::vector<numa_domain>& domains() const;
  /// The cache levels, smallest first (may be empty).
  const std::vector<cache_level>& caches() const;
  /// Total physical cores over all domains.
  int cores() const;
  /// True when the topology describes the machine this process runs on (binding works).
  bool is_this_system() const;
  /// Where it came from: "machine", "synthetic: ..." or "xml: ...".
  const std::string& source() const;
  /// An hwloc synthetic description of this topology with cache sizes (synthetic(...) of it
  /// gives the same domains, cores and caches), e.g. "Package:1 L2Cache:2(size=1048576) ...";
  /// the description it was made from for a synthetic one; "" where hwloc cannot export it.
  std::string synthetic_description() const;
  /// A multi-line summary: domains with cores and memory, caches.
  std::string describe() const;

  /// Opaque state, defined in lib/numa (hwloc stays out of the public headers).
  struct impl;

 private:
  friend struct detail::topology_access;  // the hwloc handle, for lib/numa
  std::shared_ptr<impl> impl_;
};

}  // namespace prism
