// lib/numa/domain_arenas.cpp — per-domain arenas and the observer that binds their threads.
#include "domain_arenas.hpp"
#include "hwloc_access.hpp"

#include <prism/error.hpp>

#include "../environment/environment.hpp"
#include "../resources/concurrency.hpp"

#include <hwloc.h>

#include <oneapi/tbb/task_scheduler_observer.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace prism::detail {

namespace {

thread_local int this_thread_domain = -1;
std::atomic<leaf_hook> installed_hook{nullptr};
std::atomic<leaf_hook> installed_reduce_hook{nullptr};

// What a thread had before entering a domain arena, restored when it leaves (arenas nest:
// a thread of prism's main arena enters a domain arena through execute()).
struct saved_state {
  int domain;
  hwloc_bitmap_t cpuset;  // null when binding is off
};
// A fixed stack, no heap: a thread nests at most a few arenas (prism's own, then one
// domain's). Deeper nesting is counted but not saved (never happens in prism's executor).
constexpr int max_saved = 16;
thread_local saved_state saved[max_saved];
thread_local int saved_depth = 0;

}  // namespace

int current_domain() { return this_thread_domain; }

void check_domains(int plan_domains, const topology& t) {
  const int domains = int(t.domains().size());
  if (plan_domains > domains)
    throw plan_error("plan spans " + std::to_string(plan_domains) + " NUMA domains, the context's machine (" + t.source() +
                     ") has " + std::to_string(domains));
}
void set_leaf_hook(leaf_hook hook) { installed_hook.store(hook); }
leaf_hook get_leaf_hook() { return installed_hook.load(std::memory_order_relaxed); }
void set_reduce_hook(leaf_hook hook) { installed_reduce_hook.store(hook); }
leaf_hook get_reduce_hook() { return installed_reduce_hook.load(std::memory_order_relaxed); }

// Binds each thread entering `arena` to the domain's cpuset, and unbinds it on leaving.
struct binder : oneapi::tbb::task_scheduler_observer {
  hwloc_topology_t topo;
  hwloc_bitmap_t cpuset = nullptr;
  int domain;
  bool bind;

  binder(oneapi::tbb::task_arena& arena, hwloc_topology_t t, const numa_domain& d, bool bind_threads)
      : oneapi::tbb::task_scheduler_observer(arena), topo(t), domain(d.index), bind(bind_threads) {
    if (bind) {
      cpuset = hwloc_bitmap_alloc();
      for (int pu : d.pus) hwloc_bitmap_set(cpuset, unsigned(pu));
    }
    observe(true);
  }
  ~binder() override {
    observe(false);
    if (cpuset != nullptr) hwloc_bitmap_free(cpuset);
  }
  void on_scheduler_entry(bool) override {
    saved_state s{this_thread_domain, nullptr};
    if (bind) {
      s.cpuset = hwloc_bitmap_alloc();
      hwloc_get_cpubind(topo, s.cpuset, HWLOC_CPUBIND_THREAD);
      if (hwloc_set_cpubind(topo, cpuset, HWLOC_CPUBIND_THREAD) != 0) {
        char* pus = nullptr;
        hwloc_bitmap_list_asprintf(&pus, cpuset);
        say_once("warning: the OS refused to bind NUMA domain " + std::to_string(domain) + "'s threads to PUs " +
                 (pus != nullptr ? pus : "?") + "; they run unbound");
        std::free(pus);
      }
    }
    if (saved_depth < max_saved) saved[saved_depth] = s;
    else if (s.cpuset != nullptr) hwloc_bitmap_free(s.cpuset);
    ++saved_depth;
    this_thread_domain = domain;
  }
  void on_scheduler_exit(bool) override {
    if (saved_depth == 0) return;
    --saved_depth;
    if (saved_depth >= max_saved) return;
    saved_state s = saved[saved_depth];
    if (s.cpuset != nullptr) {
      hwloc_set_cpubind(topo, s.cpuset, HWLOC_CPUBIND_THREAD);
      hwloc_bitmap_free(s.cpuset);
    }
    this_thread_domain = s.domain;
  }
};

struct domain_arenas::entry {
  oneapi::tbb::task_arena arena;
  std::unique_ptr<binder> observer;  // built after the arena it observes, destroyed before it
  entry(int threads, hwloc_topology_t t, const numa_domain& d, bool bind) : arena(allowed_concurrency(threads), 1) {
    arena.initialize();
    observer = std::make_unique<binder>(arena, t, d, bind);
  }
  ~entry() { observer.reset(); }
};

domain_arenas::domain_arenas(const topology& t) : topo_(t), pinned_(t.is_this_system()) {
  // One warning per topology per process, however many contexts plan for it.
  static std::mutex warned_mutex;
  static std::set<std::string>& warned = *new std::set<std::string>;  // never destroyed: calls may come at exit (docs/dropin.md)
  if (!pinned_ && t.domains().size() > 1) {
    std::lock_guard lock(warned_mutex);
    if (warned.insert(t.source()).second)
      std::fprintf(stderr, "prism: warning: topology '%s' is not this machine; NUMA subtrees run in per-domain "
                           "arenas without binding their threads\n", t.source().c_str());
  }
}

domain_arenas::~domain_arenas() = default;

workspace_pool& domain_arenas::pool(int domain) {
  std::lock_guard lock(mutex_);
  if (pools_.empty()) pools_.resize(topo_.domains().size());
  auto& slot = pools_.at(std::size_t(domain));
  if (!slot) {
    if (pinned_) {
      // Blocks bound to the domain's memory node: the temporaries its subtree writes.
      auto h = detail::hwloc_of(topo_);
      const unsigned node = topo_.domains().at(std::size_t(domain)).os_index;
      workspace_pool::allocator a;
      a.allocate = [h, node](std::size_t bytes) -> void* {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        hwloc_bitmap_only(set, node);
        void* p = hwloc_alloc_membind(h, bytes, set, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET);
        if (p == nullptr) p = hwloc_alloc(h, bytes);  // the OS refused the binding: plain pages
        hwloc_bitmap_free(set);
        return p;
      };
      a.deallocate = [h](void* p, std::size_t bytes) { hwloc_free(h, p, bytes); };
      slot = std::make_unique<workspace_pool>(std::move(a));
    } else {
      slot = std::make_unique<workspace_pool>();  // first touch by the domain's threads
    }
  }
  return *slot;
}

oneapi::tbb::task_arena& domain_arenas::arena(int domain, int threads) {
  std::lock_guard lock(mutex_);
  auto& slot = arenas_[{domain, threads}];
  if (!slot)
    slot = std::make_unique<entry>(threads, detail::hwloc_of(topo_),
                                   topo_.domains().at(std::size_t(domain)), pinned_);
  return slot->arena;
}

}  // namespace prism::detail
