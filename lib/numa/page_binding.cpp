// lib/numa/page_binding.cpp — memory whose pages are bound to NUMA domains
// (hwloc_alloc / hwloc_set_area_membind; page_binding.hpp).
#include "page_binding.hpp"
#include "hwloc_access.hpp"

#include <prism/error.hpp>

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace prism::detail {

page_memory bound_pages(const topology& topo, std::size_t bytes, const std::vector<int>& page_domains, int domains) {
  page_memory m;
  const bool spread = domains > 1;
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  const std::size_t pages = (bytes + page - 1) / page;
  auto h = hwloc_of(topo);
  if (topo.is_this_system() && spread) {
    m.data = hwloc_alloc(h, bytes);
    m.from_hwloc = m.data != nullptr;
  }
  if (m.data == nullptr) {
    m.data = std::aligned_alloc(page, pages * page);
    if (m.data == nullptr) throw error("placed_matrix: out of memory");
  }
  if (!m.from_hwloc) {
    static std::once_flag warned;
    if (spread)
      std::call_once(warned, [&] {
        std::fprintf(stderr, "prism: warning: placed_matrix on '%s': pages are not bound (not this machine)\n",
                     topo.source().c_str());
      });
    return m;
  }
  // Bind runs of pages with the same owner; -1 runs are interleaved over the plan's domains
  // (those the model counts their reads from).
  m.bound = true;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  for (std::size_t g = 0; g < pages;) {
    std::size_t e = g;
    while (e < pages && page_domains[e] == page_domains[g]) ++e;
    hwloc_bitmap_zero(set);
    const auto& doms = topo.domains();
    if (page_domains[g] >= 0) hwloc_bitmap_set(set, doms[std::size_t(page_domains[g])].os_index);
    else
      for (std::size_t d = 0; d < std::min(doms.size(), std::size_t(domains)); ++d) hwloc_bitmap_set(set, doms[d].os_index);
    const auto policy = page_domains[g] >= 0 ? HWLOC_MEMBIND_BIND : HWLOC_MEMBIND_INTERLEAVE;
    if (hwloc_set_area_membind(h, static_cast<char*>(m.data) + g * page, std::min(bytes - g * page, (e - g) * page),
                               set, policy, HWLOC_MEMBIND_BYNODESET) != 0)
      m.bound = false;
    g = e;
  }
  hwloc_bitmap_free(set);
  if (!m.bound) {
    static std::once_flag refused;
    std::call_once(refused, [] {
      std::fprintf(stderr, "prism: warning: placed_matrix: the OS refused a page binding; those pages are unplaced (the "
                           "others stay bound)\n");
    });
  }
  return m;
}

void free_pages(const topology& topo, const page_memory& m, std::size_t bytes) {
  if (m.data == nullptr) return;
  if (m.from_hwloc) hwloc_free(hwloc_of(topo), m.data, bytes);
  else std::free(m.data);
}

}  // namespace prism::detail
