// lib/numa/thread_binding.cpp — binding a thread to a domain's cores (thread_binding.hpp).
#include "thread_binding.hpp"

#include "hwloc_access.hpp"

#include <atomic>

namespace prism::detail {

namespace {
std::atomic<binding_hook> the_hook{nullptr};
}  // namespace

void set_binding_hook(binding_hook hook) { the_hook.store(hook); }

domain_binding::domain_binding(const topology& t, int domain) : t_(&t) {
  const bool known = domain >= 0 && domain < int(t.domains().size());
  if (known && t.is_this_system()) {
    hwloc_topology_t topo = hwloc_of(t);
    hwloc_bitmap_t before = hwloc_bitmap_alloc();
    hwloc_bitmap_t cpuset = hwloc_bitmap_alloc();
    if (before != nullptr && cpuset != nullptr && hwloc_get_cpubind(topo, before, HWLOC_CPUBIND_THREAD) == 0) {
      for (int pu : t.domains()[std::size_t(domain)].pus) hwloc_bitmap_set(cpuset, unsigned(pu));
      if (hwloc_set_cpubind(topo, cpuset, HWLOC_CPUBIND_THREAD) == 0) saved_ = before, before = nullptr;
    }
    if (before != nullptr) hwloc_bitmap_free(before);
    if (cpuset != nullptr) hwloc_bitmap_free(cpuset);
  }
  if (binding_hook h = the_hook.load()) h(domain, saved_ != nullptr);
}

domain_binding::~domain_binding() {
  if (saved_ == nullptr) return;
  auto* before = static_cast<hwloc_bitmap_t>(saved_);
  hwloc_set_cpubind(hwloc_of(*t_), before, HWLOC_CPUBIND_THREAD);
  hwloc_bitmap_free(before);
}

}  // namespace prism::detail
