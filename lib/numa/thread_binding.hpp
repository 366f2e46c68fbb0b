// lib/numa/thread_binding.hpp — a thread bound to one NUMA domain's cores for a while: the
// GPU level's staging threads, which pack and unpack pinned buffers next to the memory the
// link reads (hwloc stays in lib/numa; the GPU level asks here).
#pragma once

#include <prism/topology.hpp>

namespace prism::detail {

/// Binds the calling thread to the cpuset of NUMA domain `domain` of topology t for its
/// lifetime, then restores the thread's binding. Does nothing (but report to the hook) when
/// t is not this machine (a synthetic or foreign XML topology) or the domain is not one of
/// t's (-1: unknown, as a device whose PCI slot hwloc did not place).
class domain_binding {
 public:
  /// Binds now (see the class comment).
  domain_binding(const topology& t, int domain);
  /// Restores the binding the thread had.
  ~domain_binding();
  domain_binding(const domain_binding&) = delete;
  domain_binding& operator=(const domain_binding&) = delete;
  /// True when the thread really was bound.
  bool bound() const noexcept { return saved_ != nullptr; }

 private:
  const topology* t_;
  void* saved_ = nullptr;  // the thread's hwloc cpuset before, when bound
};

/// Called by every domain_binding with the domain asked for and whether it bound (tests:
/// each device's staging threads ask for its domain); nullptr disables. Not for production.
using binding_hook = void (*)(int domain, bool bound);
/// Installs the binding hook (tests only).
void set_binding_hook(binding_hook hook);

}  // namespace prism::detail
