// lib/numa/pci_locality.hpp — which NUMA domain a PCI device (a GPU) sits nearest, for the
// GPU level: hwloc lives in lib/numa only, so the question is asked here.
#pragma once

#include <prism/topology.hpp>

#include <string>

namespace prism::detail {

/// The index in t.domains() of the NUMA domain nearest the PCI device `bus_id`
/// ("0000:3b:00.0", as cudaDeviceGetPCIBusId writes it): the first domain of the device's
/// nearest non-I/O ancestor in hwloc's tree. -1 when unknown: t is not this machine (a
/// synthetic or XML topology), hwloc does not see the device, or the text is no bus id.
/// Never throws; loads hwloc's I/O tree each call (tens of milliseconds).
int pci_numa_domain(const topology& t, const std::string& bus_id) noexcept;

}  // namespace prism::detail
