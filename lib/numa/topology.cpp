// lib/numa/topology.cpp — the only code that talks to hwloc (like oneTBB's tbbbind).
// Everything else asks prism::topology.
#include <prism/error.hpp>
#include <prism/topology.hpp>

#include "../environment/environment.hpp"
#include "hwloc_access.hpp"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <sstream>

namespace prism {

struct topology::impl {
  hwloc_topology_t handle = nullptr;
  std::vector<numa_domain> domains;
  std::vector<cache_level> caches;
  std::string source;
  bool this_system = false;
  ~impl() {
    if (handle != nullptr) hwloc_topology_destroy(handle);
  }
};

namespace {

// Loads a topology through `configure` (synthetic/XML/nothing) and reads what prism needs.
template <class Configure>
std::shared_ptr<topology::impl> load(std::string source, Configure&& configure) {
  auto p = std::make_shared<topology::impl>();
  p->source = std::move(source);
  if (hwloc_topology_init(&p->handle) != 0) throw error("hwloc: cannot initialise a topology");
  configure(p->handle);
  if (hwloc_topology_load(p->handle) != 0) throw error("hwloc: cannot load topology (" + p->source + ")");
  p->this_system = hwloc_topology_is_thissystem(p->handle) != 0;
  const hwloc_topology_t t = p->handle;

  // A NUMA node is a compute domain when it brings cores no node before it has: a memory-only
  // node (HBM beside DDR, CXL memory) carries the cpuset of the cores it sits beside, e.g.
  // "pack:2 [numa] [numa] core:2 pu:1" has two domains (PUs 0-1 and 2-3), not four.
  hwloc_bitmap_t taken = hwloc_bitmap_alloc();
  const int numa = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < numa; ++i) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, unsigned(i));
    numa_domain d;
    d.index = i;
    d.os_index = o->os_index;
    d.memory_bytes = o->attr != nullptr ? o->attr->numanode.local_memory : 0;
    unsigned pu;
    hwloc_bitmap_foreach_begin(pu, o->cpuset) d.pus.push_back(int(pu));
    hwloc_bitmap_foreach_end();
    d.cores = hwloc_get_nbobjs_inside_cpuset_by_type(t, o->cpuset, HWLOC_OBJ_CORE);
    if (d.cores <= 0) d.cores = int(d.pus.size());
    if (d.pus.empty() || hwloc_bitmap_intersects(o->cpuset, taken)) continue;
    hwloc_bitmap_or(taken, taken, o->cpuset);
    p->domains.push_back(std::move(d));
  }
  hwloc_bitmap_free(taken);
  if (p->domains.empty()) {  // no NUMA information: the whole machine is one domain
    numa_domain d;
    hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(t);
    unsigned pu;
    hwloc_bitmap_foreach_begin(pu, all) d.pus.push_back(int(pu));
    hwloc_bitmap_foreach_end();
    d.cores = std::max(1, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE));
    p->domains.push_back(std::move(d));
  }
  for (int i = 0; i < int(p->domains.size()); ++i) p->domains[std::size_t(i)].index = i;
  // Declared this machine (HWLOC_THISSYSTEM, assume_this_system) but naming processors it
  // does not have: not this machine, so nothing binds to cpusets that cannot exist.
  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  for (const numa_domain& d : p->domains)
    if (cpus > 0 && !d.pus.empty() && d.pus.back() >= cpus) p->this_system = false;

  const hwloc_obj_type_t levels[] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE};
  for (hwloc_obj_type_t type : levels) {
    const int count = hwloc_get_nbobjs_by_type(t, type);
    if (count <= 0) continue;
    hwloc_obj_t o = hwloc_get_obj_by_type(t, type, 0);
    cache_level c;
    c.level = int(o->attr->cache.depth);
    c.size_bytes = o->attr->cache.size;
    c.line_bytes = o->attr->cache.linesize;
    c.pus_sharing = hwloc_bitmap_weight(o->cpuset);
    c.instances = count;
    c.associativity = o->attr->cache.associativity;
    p->caches.push_back(c);
  }
  return p;
}

}  // namespace

topology topology::machine() {
  // A machine whose NUMA information hwloc cannot read is still one domain; only a failure
  // of hwloc itself is an error.
  topology t;
  t.impl_ = load("machine", [](hwloc_topology_t) {});
  return t;
}

// The number of PUs an hwloc synthetic description asks for: the product of its levels'
// arities ("Package:2 L3Cache:1(size=8MiB) Core:4 PU:2" or "2 4 2": 16), saturating at
// 2^40. Every number that may be an arity counts: one right after a ':', at the text's
// start, after a blank, or right after another such number (hwloc needs no blank between
// levels), read in base 10 and in base 0 ("010", "0x400"), the larger kept. Parentheses
// are not trusted to close: an attribute's digits follow '=' or ',' and never count, and
// the digit of "L3Cache" is part of a type. It may count more than hwloc builds, never
// fewer. E.g. "491520 PU:1": 491520; "12125PU:12": 12125 x 12 = 145,500 (read as two
// levels by hwloc, counted 12 by the token reader this replaced: the fourth machine fuzz
// campaign's timeout input). A 0 counts 1 (hwloc refuses it itself).
static std::uint64_t synthetic_pus(const std::string& description) {
  const char* s = description.c_str();  // what hwloc reads: up to a NUL
  constexpr std::uint64_t cap = 1ull << 40;
  std::uint64_t pus = 1;
  bool level_start = true;  // the next digit may begin an arity without a ':' before it
  for (const char* p = s; *p != '\0';) {
    const char c = *p;
    if (c >= '0' && c <= '9' && (level_start || (p > s && p[-1] == ':'))) {
      char *end10 = nullptr, *end0 = nullptr;  // base 10 and base 0: the larger
      const unsigned long long a = std::max(std::strtoull(p, &end10, 10), std::strtoull(p, &end0, 0));
      if (a > 1) pus = pus > cap / a ? cap : pus * a;
      p = std::max(end10, end0);
      level_start = true;
      continue;
    }
    level_start = c == ' ' || c == '\t' || c == '\n';
    ++p;
  }
  return pus;
}

topology topology::synthetic(const std::string& description, bool assume_this_system) {
  // hwloc builds every object of a synthetic description, in time that grows faster than
  // their number: 4,096 PUs take 4 s here, 491,520 minutes. A text asking for more than
  // 1,024 (a malformed machine file, HWLOC_SYNTHETIC) is refused.
  constexpr std::uint64_t max_pus = 1024;
  if (const std::uint64_t pus = synthetic_pus(description); pus > max_pus)
    throw error("synthetic topology '" + description + "' has " + std::to_string(pus) + " PUs, more than " +
                std::to_string(max_pus));
  topology t;
  t.impl_ = load("synthetic: " + description, [&](hwloc_topology_t h) {
    if (hwloc_topology_set_synthetic(h, description.c_str()) != 0)
      throw error("hwloc: invalid synthetic topology '" + description + "'");
    if (assume_this_system) hwloc_topology_set_flags(h, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM);
  });
  return t;
}

topology topology::xml(const std::string& path) {
  topology t;
  t.impl_ = load("xml: " + path, [&](hwloc_topology_t h) {
    if (hwloc_topology_set_xml(h, path.c_str()) != 0) throw error("hwloc: cannot read topology XML '" + path + "'");
  });
  return t;
}

topology topology::parse(const std::string& spec) {
  // A path ending in .xml, in any case ("machine.XML" too).
  std::string end = spec.size() > 4 ? spec.substr(spec.size() - 4) : std::string();
  for (char& c : end) c = char(std::tolower(static_cast<unsigned char>(c)));
  return end == ".xml" ? xml(spec) : synthetic(spec);
}

topology topology::from_env() {
  // The first variable set wins; an error names it (e.g. "PRISM_TOPOLOGY: hwloc: invalid ...").
  const detail::environment env = detail::read_environment();
  const struct {
    const char* name;
    const std::string& value;
    topology (*load)(const std::string&);
  } sources[] = {{"PRISM_TOPOLOGY", env.topology, &parse},
                 {"HWLOC_XMLFILE", env.hwloc_xmlfile, &xml},
                 {"HWLOC_SYNTHETIC", env.hwloc_synthetic, [](const std::string& d) { return synthetic(d); }}};
  for (const auto& s : sources) {
    if (s.value.empty()) continue;
    try {
      return s.load(s.value);
    } catch (const error& e) {
      throw error(std::string(s.name) + ": " + e.what());
    }
  }
  return machine();
}

const std::vector<numa_domain>& topology::domains() const { return impl_->domains; }
const std::vector<cache_level>& topology::caches() const { return impl_->caches; }
bool topology::is_this_system() const { return impl_->this_system; }
const std::string& topology::source() const { return impl_->source; }
hwloc_topology_t detail::topology_access::handle(const topology& t) { return t.impl_->handle; }

int topology::cores() const {
  int n = 0;
  for (auto& d : impl_->domains) n += d.cores;
  return n;
}

std::string topology::synthetic_description() const {
  const std::string prefix = "synthetic: ";
  if (source().rfind(prefix, 0) == 0) return source().substr(prefix.size());
  char buffer[4096];
  const int n = hwloc_topology_export_synthetic(impl_->handle, buffer, sizeof buffer, 0);
  return n > 0 && std::size_t(n) < sizeof buffer ? std::string(buffer, std::size_t(n)) : std::string();
}

std::string topology::describe() const {
  std::ostringstream os;
  os << "topology (" << source() << (is_this_system() ? ", this machine" : ", not this machine") << "): "
     << domains().size() << " NUMA domain" << (domains().size() == 1 ? "" : "s") << ", " << cores() << " core"
     << (cores() == 1 ? "" : "s") << "\n";
  for (auto& d : domains())
    os << "  domain " << d.index << " (os " << d.os_index << "): " << d.cores << " core" << (d.cores == 1 ? "" : "s")
       << ", " << (d.memory_bytes >> 20) << " MiB\n";
  for (auto& c : caches())
    os << "  L" << c.level << ": " << (c.size_bytes >> 10) << " KiB, line " << c.line_bytes << " B, shared by "
       << c.pus_sharing << " PU" << (c.pus_sharing == 1 ? "" : "s") << ", " << c.instances << " instances\n";
  return os.str();
}

}  // namespace prism
