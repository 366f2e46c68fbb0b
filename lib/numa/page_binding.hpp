// lib/numa/page_binding.hpp — memory whose pages are bound to NUMA domains, one owner per
// page (placed_matrix, lib/recursive/placement.cpp, says which from a plan).
#pragma once

#include <prism/topology.hpp>

#include <cstddef>
#include <vector>

namespace prism::detail {

/// Memory of bound_pages: where it is, and how it was had.
struct page_memory {
  void* data = nullptr;
  bool from_hwloc = false;  ///< hwloc_alloc'd (free with free_pages), else aligned_alloc'd
  bool bound = false;       ///< every page's binding was accepted by the OS
};

/// `bytes` (> 0) of page-aligned memory, page g bound to domain page_domains[g] of topo (-1:
/// interleaved over the plan's `domains`, topo's first) when topo is this system and the
/// plan spans several domains; else plain memory, with one warning per process when it
/// does. Throws prism::error when out of memory.
page_memory bound_pages(const topology& topo, std::size_t bytes, const std::vector<int>& page_domains, int domains);

/// Frees memory of bound_pages(topo, bytes, ...).
void free_pages(const topology& topo, const page_memory& m, std::size_t bytes);

}  // namespace prism::detail
