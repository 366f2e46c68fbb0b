// lib/numa/pci_locality.cpp — a PCI device's nearest NUMA domain (pci_locality.hpp).
#include "pci_locality.hpp"

#include <hwloc.h>

namespace prism::detail {

namespace {

// The first NUMA node OS index in the nodeset of bus_id's nearest non-I/O ancestor, or -1.
int nearest_node_os_index(const std::string& bus_id) {
  hwloc_topology_t io = nullptr;
  if (hwloc_topology_init(&io) != 0) return -1;
  int os = -1;
  // I/O objects are filtered out of a default load; keep the PCI devices that matter.
  if (hwloc_topology_set_io_types_filter(io, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) == 0 && hwloc_topology_load(io) == 0) {
    hwloc_obj_t pci = hwloc_get_pcidev_by_busidstring(io, bus_id.c_str());
    hwloc_obj_t near = pci != nullptr ? hwloc_get_non_io_ancestor_obj(io, pci) : nullptr;
    if (near != nullptr && near->nodeset != nullptr) os = hwloc_bitmap_first(near->nodeset);
  }
  hwloc_topology_destroy(io);
  return os;
}

}  // namespace

int pci_numa_domain(const topology& t, const std::string& bus_id) noexcept {
  try {
    if (!t.is_this_system() || bus_id.empty()) return -1;
    const int os = nearest_node_os_index(bus_id);
    if (os < 0) return -1;
    for (const numa_domain& d : t.domains())
      if (d.os_index == unsigned(os)) return d.index;
    // One domain standing for a machine without NUMA information: everything is near it.
    return t.domains().size() == 1 ? 0 : -1;
  } catch (...) {  // std::bad_alloc in a std::string copy: unknown
    return -1;
  }
}

}  // namespace prism::detail
