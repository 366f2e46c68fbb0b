// lib/leaf/backend/leaf_kernels.cpp — CPU features, PRISM_LEAF_KERNELS and the candidate kernel sets
// of prism's leaf libraries (leaf_kernels.hpp).
#include "leaf_kernels.hpp"

#include "../../machine/wisdom.hpp"

#include <prism/error.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace prism::detail {

std::string cpu_features::describe() const {
  std::string s = intel ? "Intel" : amd ? "AMD" : "other vendor";
  const std::pair<bool, const char*> flags[] = {
      {sse3, "sse3"},         {ssse3, "ssse3"},         {sse4_2, "sse4_2"},       {avx, "avx"},
      {avx2, "avx2"},         {fma, "fma"},             {fma4, "fma4"},           {xop, "xop"},
      {avx512f, "avx512f"},   {avx512bw, "avx512bw"},   {avx512dq, "avx512dq"},   {avx512vl, "avx512vl"},
      {avx512cd, "avx512cd"}, {avx512bf16, "avx512_bf16"}, {avx512fp16, "avx512_fp16"}, {avx512er, "avx512er"},
      {avx512pf, "avx512pf"}, {amx_tile, "amx_tile"},   {amx_bf16, "amx_bf16"}};
  for (const auto& [on, name] : flags)
    if (on) s += std::string(" ") + name;
  return s;
}

namespace {
#if defined(__x86_64__) || defined(__i386__)
// What __builtin_cpu_supports does not name in GCC 12: AVX512_FP16, AMX-TILE and AMX-BF16
// (cpuid leaf 7, EDX bits 23, 24, 22), usable only when the OS saves the tile state (XCR0
// bits 17 and 18, read with XGETBV once OSXSAVE says it may be).
void read_leaf7(cpu_features& c) {
  unsigned a = 0, b = 0, cx = 0, d = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return;
  __cpuid_count(7, 0, a, b, cx, d);
  c.avx512er = c.avx512f && (b >> 27 & 1);
  c.avx512pf = c.avx512f && (b >> 26 & 1);
  c.avx512fp16 = c.avx512f && (d >> 23 & 1);
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  __cpuid(1, a1, b1, c1, d1);
  if (!(c1 >> 27 & 1)) return;  // no OSXSAVE: XGETBV may not be executed
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const bool tiles = (lo >> 17 & 1) && (lo >> 18 & 1);
  c.amx_tile = tiles && (d >> 24 & 1);
  c.amx_bf16 = tiles && (d >> 22 & 1);
}
#endif
}  // namespace

const cpu_features& this_cpu() {
  static const cpu_features f = [] {
    cpu_features c;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    c.intel = __builtin_cpu_is("intel");
    c.amd = __builtin_cpu_is("amd");
    c.sse3 = __builtin_cpu_supports("sse3");
    c.ssse3 = __builtin_cpu_supports("ssse3");
    c.sse4_2 = __builtin_cpu_supports("sse4.2");
    c.avx = __builtin_cpu_supports("avx");
    c.avx2 = __builtin_cpu_supports("avx2");
    c.fma = __builtin_cpu_supports("fma");
    c.fma4 = __builtin_cpu_supports("fma4");
    c.xop = __builtin_cpu_supports("xop");
    c.avx512f = __builtin_cpu_supports("avx512f");
    c.avx512bw = __builtin_cpu_supports("avx512bw");
    c.avx512dq = __builtin_cpu_supports("avx512dq");
    c.avx512vl = __builtin_cpu_supports("avx512vl");
    c.avx512cd = __builtin_cpu_supports("avx512cd");
    c.avx512bf16 = __builtin_cpu_supports("avx512bf16");
    read_leaf7(c);
#endif
    return c;
  }();
  return f;
}

namespace {

bool equal_nocase(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// One kernel set: its library, name, class (kernel_class) and what the CPU needs to run it.
// Within a class the table's order is the features' order: the newer set first; `vendor`
// marks a set tuned for one vendor's caches, which goes first on that vendor's CPUs.
struct kernel_set {
  const char* library;
  const char* name;
  int cls;
  char vendor;  // 'a' AMD, 'i' Intel, 0 either
  bool (*runs)(const cpu_features&);
};

bool skylake(const cpu_features& c) { return c.avx512_skylake(); }
bool avx2_fma(const cpu_features& c) { return c.avx2 && c.fma; }
bool fma4_xop(const cpu_features& c) { return c.avx && c.fma4 && c.xop; }

// OpenBLAS's DYNAMIC_ARCH core types (OPENBLAS_CORETYPE names; SapphireRapids from 0.3.22,
// so Debian 12's 0.3.21 does not carry it) and BLIS's x86-64 configurations (zen4 and zen5
// from BLIS 1.0, so Debian 12's 0.9.0 registers neither), each with what its kernels need.
const std::vector<kernel_set>& kernel_set_table() {
  static const std::vector<kernel_set>& table = *new std::vector<kernel_set>{  // never destroyed: calls may come at exit (docs/dropin.md)
      {"openblas", "SapphireRapids", 4, 'i',
       [](const cpu_features& c) { return skylake(c) && c.avx512bf16 && c.avx512fp16 && c.amx_tile && c.amx_bf16; }},
      {"openblas", "Cooperlake", 4, 'i', [](const cpu_features& c) { return skylake(c) && c.avx512bf16; }},
      {"openblas", "SkylakeX", 4, 'i', skylake},
      {"openblas", "Zen", 3, 'a', avx2_fma},
      {"openblas", "Haswell", 3, 'i', avx2_fma},
      {"openblas", "Excavator", 3, 'a', [](const cpu_features& c) { return fma4_xop(c) && c.avx2; }},
      {"openblas", "Steamroller", 2, 'a', [](const cpu_features& c) { return fma4_xop(c) && c.fma; }},
      {"openblas", "Piledriver", 2, 'a', [](const cpu_features& c) { return fma4_xop(c) && c.fma; }},
      {"openblas", "Bulldozer", 2, 'a', fma4_xop},
      {"openblas", "Sandybridge", 2, 'i', [](const cpu_features& c) { return c.avx; }},
      {"openblas", "Nehalem", 1, 'i', [](const cpu_features& c) { return c.sse4_2; }},
      {"openblas", "Core2", 1, 'i', [](const cpu_features& c) { return c.ssse3; }},
      {"openblas", "Prescott", 1, 'i', [](const cpu_features& c) { return c.sse3; }},
      {"blis", "zen5", 4, 'a', [](const cpu_features& c) { return skylake(c) && c.amd; }},
      {"blis", "zen4", 4, 'a', [](const cpu_features& c) { return skylake(c) && c.amd; }},
      {"blis", "skx", 4, 'i', skylake},
      {"blis", "knl", 4, 'i', [](const cpu_features& c) { return c.avx512f && c.avx512cd && c.avx512er && c.avx512pf; }},
      {"blis", "zen3", 3, 'a', avx2_fma},
      {"blis", "zen2", 3, 'a', avx2_fma},
      {"blis", "zen", 3, 'a', avx2_fma},
      {"blis", "haswell", 3, 'i', avx2_fma},
      {"blis", "excavator", 3, 'a', [](const cpu_features& c) { return fma4_xop(c) && c.avx2; }},
      {"blis", "steamroller", 2, 'a', [](const cpu_features& c) { return fma4_xop(c) && c.fma; }},
      {"blis", "piledriver", 2, 'a', [](const cpu_features& c) { return fma4_xop(c) && c.fma; }},
      {"blis", "bulldozer", 2, 'a', fma4_xop},
      {"blis", "sandybridge", 2, 'i', [](const cpu_features& c) { return c.avx; }},
      {"blis", "penryn", 1, 'i', [](const cpu_features& c) { return c.ssse3; }},
  };
  return table;
}

const kernel_set* find_set(const std::string& library, const std::string& name) {
  for (const kernel_set& k : kernel_set_table())
    if (library == k.library && name == k.name) return &k;
  return nullptr;
}

std::vector<std::string> names_of(const char* library) {
  std::vector<std::string> v;
  for (const kernel_set& k : kernel_set_table())
    if (library == std::string(k.library)) v.push_back(k.name);
  return v;
}

// The sets of `library` this CPU runs (and `allowed` accepts), by class (class 3 before 4
// when !wide_first), the vendor's own first within a class, else in the table's order.
template <class Allowed>
std::vector<std::string> ordered(const cpu_features& cpu, const char* library, bool wide_first, Allowed allowed) {
  std::vector<const kernel_set*> sets;
  for (const kernel_set& k : kernel_set_table())
    if (library == std::string(k.library) && k.runs(cpu) && allowed(k.name)) sets.push_back(&k);
  const char own = cpu.amd ? 'a' : cpu.intel ? 'i' : 0;
  auto rank = [&](const kernel_set* k) {
    const int cls = !wide_first && k->cls >= 3 ? 7 - k->cls : k->cls;  // 3 above 4
    return 2 * cls + (k->vendor == own ? 1 : 0);
  };
  std::stable_sort(sets.begin(), sets.end(), [&](const kernel_set* a, const kernel_set* b) { return rank(a) > rank(b); });
  std::vector<std::string> out;
  for (const kernel_set* k : sets) out.push_back(k->name);
  return out;
}

std::atomic<int> wide_verdict{-1};  // -1 unknown, 0 256-bit first, 1 512-bit first

}  // namespace

const std::vector<std::string>& openblas_core_names() {
  static const std::vector<std::string>& names = *new std::vector<std::string>(names_of("openblas"));  // never destroyed: calls may come at exit (docs/dropin.md)
  return names;
}

const std::vector<std::string>& blis_arch_names() {
  static const std::vector<std::string>& names = *new std::vector<std::string>(names_of("blis"));  // never destroyed: calls may come at exit (docs/dropin.md)
  return names;
}

std::string canonical_kernel_name(const std::string& library, const std::string& name) {
  const auto& names = library == "openblas" ? openblas_core_names() : blis_arch_names();
  for (const std::string& n : names)
    if (equal_nocase(n, name)) return n;
  return "";
}

bool cpu_runs(const cpu_features& cpu, const std::string& library, const std::string& name) {
  const kernel_set* k = find_set(library, name);
  return k != nullptr && k->runs(cpu);
}

int kernel_class(const std::string& name) {
  for (const kernel_set& k : kernel_set_table())
    if (equal_nocase(name, k.name)) return k.cls;
  // OpenBLAS's older core names, which prism never picks but a host's library may run.
  for (const char* n : {"Penryn", "Dunnington", "Atom", "Opteron", "Opteron_SSE3", "Barcelona", "Bobcat", "Nano",
                        "Athlon", "Katmai", "Coppermine", "Northwood", "Banias"})
    if (equal_nocase(name, n)) return 1;
  return 0;
}

int kernel_vector_bits(const std::string& name) {
  const int c = kernel_class(name);
  return c == 4 ? 512 : c == 3 ? 256 : 0;
}

std::vector<std::string> openblas_core_candidates(const cpu_features& cpu) {
  return ordered(cpu, "openblas", true, [](const char*) { return true; });
}

std::vector<std::string> blis_arch_candidates(const cpu_features& cpu, const std::vector<std::string>& registered,
                                              bool wide_first) {
  return ordered(cpu, "blis", wide_first, [&](const char* n) {
    return std::find(registered.begin(), registered.end(), n) != registered.end();
  });
}

bool wide_vectors_first() {
  int v = wide_verdict.load(std::memory_order_acquire);
  if (v < 0) {
    const auto kept = wisdom::process().find("wide_vectors_first");
    v = kept && *kept == "0" ? 0 : 1;
    if (kept) wide_verdict.store(v, std::memory_order_release);
  }
  return v != 0;
}

bool wide_vectors_measured() {
  (void)wide_vectors_first();  // reads a kept verdict
  return wide_verdict.load(std::memory_order_acquire) >= 0;
}

void set_wide_vectors_first(bool wide, bool keep) {
  wide_verdict.store(wide ? 1 : 0, std::memory_order_release);
  if (keep) wisdom::process().keep("wide_vectors_first", wide ? "1" : "0");
}

std::string to_string(const kernel_request& r) {
  switch (r.mode) {
    case kernel_request::how::automatic: return "auto";
    case kernel_request::how::detect: return "detect";
    case kernel_request::how::host: return "host";
    case kernel_request::how::named: return r.name;
  }
  return "?";
}

leaf_kernel_requests parse_leaf_kernels(const std::string& text) {
  // Example: "openblas=skylakex, blis=zen3" gives openblas named SkylakeX, blis named zen3.
  leaf_kernel_requests out;
  bool seen_openblas = false, seen_blis = false;
  std::stringstream items(text);
  std::string item;
  auto fail = [&](const std::string& why) { throw error(why + " in '" + text + "'"); };
  while (std::getline(items, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) fail("'" + item + "' is not library=kernels (e.g. openblas=SkylakeX)");
    const std::string library = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
    if (library != "openblas" && library != "blis") fail("unknown library '" + library + "' (expected openblas or blis)");
    bool& seen = library == "openblas" ? seen_openblas : seen_blis;
    if (seen) fail(library + " named twice");
    seen = true;
    kernel_request r;
    if (value == "auto") r.mode = kernel_request::how::automatic;
    else if (value == "detect") r.mode = kernel_request::how::detect;
    else if (value == "host") r.mode = kernel_request::how::host;
    else {
      r.mode = kernel_request::how::named;
      r.name = canonical_kernel_name(library, value);
      if (r.name.empty()) {
        std::string known;
        for (const std::string& n : library == "openblas" ? openblas_core_names() : blis_arch_names()) known += " " + n;
        fail("unknown " + library + " kernel set '" + value + "' (expected auto, detect, host or one of" + known + ")");
      }
    }
    (library == "openblas" ? out.openblas : out.blis) = r;
  }
  return out;
}

const leaf_kernel_requests& leaf_kernels_from_env() {
  static const leaf_kernel_requests& r = *new leaf_kernel_requests([] {  // never destroyed: calls may come at exit (docs/dropin.md)
    const std::string& s = process_environment().leaf_kernels;
    if (s.empty()) return leaf_kernel_requests{};
    try {
      return parse_leaf_kernels(s);
    } catch (const error& e) {
      std::fprintf(stderr, "prism: PRISM_LEAF_KERNELS: %s; prism chooses the leaf kernels itself (auto)\n",
                   e.what());
      return leaf_kernel_requests{};
    }
  }());
  return r;
}

}  // namespace prism::detail
