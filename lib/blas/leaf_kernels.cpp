// lib/blas/leaf_kernels.cpp — CPU features, PRISM_LEAF_KERNELS and the candidate kernel sets
// of prism's leaf libraries (leaf_kernels.hpp).
#include "leaf_kernels.hpp"

#include <prism/error.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace prism::detail {

std::string cpu_features::describe() const {
  std::string s = intel ? "Intel" : amd ? "AMD" : "other vendor";
  const std::pair<bool, const char*> flags[] = {{avx, "avx"},           {avx2, "avx2"},         {fma, "fma"},
                                                {avx512f, "avx512f"},   {avx512bw, "avx512bw"}, {avx512dq, "avx512dq"},
                                                {avx512vl, "avx512vl"}, {avx512cd, "avx512cd"}, {avx512bf16, "avx512_bf16"}};
  for (const auto& [on, name] : flags)
    if (on) s += std::string(" ") + name;
  return s;
}

const cpu_features& this_cpu() {
  static const cpu_features f = [] {
    cpu_features c;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    c.intel = __builtin_cpu_is("intel");
    c.amd = __builtin_cpu_is("amd");
    c.avx = __builtin_cpu_supports("avx");
    c.avx2 = __builtin_cpu_supports("avx2");
    c.fma = __builtin_cpu_supports("fma");
    c.avx512f = __builtin_cpu_supports("avx512f");
    c.avx512bw = __builtin_cpu_supports("avx512bw");
    c.avx512dq = __builtin_cpu_supports("avx512dq");
    c.avx512vl = __builtin_cpu_supports("avx512vl");
    c.avx512cd = __builtin_cpu_supports("avx512cd");
    c.avx512bf16 = __builtin_cpu_supports("avx512bf16");
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
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

const std::vector<std::string>& openblas_core_names() {
  static const std::vector<std::string> names = {"Cooperlake", "SkylakeX", "Zen", "Haswell", "Sandybridge"};
  return names;
}

const std::vector<std::string>& blis_arch_names() {
  static const std::vector<std::string> names = {"skx", "zen3", "zen2", "zen", "haswell", "sandybridge"};
  return names;
}

std::string canonical_kernel_name(const std::string& library, const std::string& name) {
  const auto& names = library == "openblas" ? openblas_core_names() : blis_arch_names();
  for (const std::string& n : names)
    if (equal_nocase(n, name)) return n;
  return "";
}

bool cpu_runs(const cpu_features& cpu, const std::string& library, const std::string& name) {
  const bool avx2_fma = cpu.avx2 && cpu.fma;
  if (library == "openblas") {
    if (name == "Cooperlake") return cpu.avx512_skylake() && cpu.avx512bf16;
    if (name == "SkylakeX") return cpu.avx512_skylake();
    if (name == "Zen" || name == "Haswell") return avx2_fma;
    if (name == "Sandybridge") return cpu.avx;
    return false;
  }
  if (name == "skx") return cpu.avx512_skylake();
  if (name == "zen3" || name == "zen2" || name == "zen" || name == "haswell") return avx2_fma;
  if (name == "sandybridge") return cpu.avx;
  return false;
}

int kernel_vector_bits(const std::string& name) {
  for (const char* n : {"Cooperlake", "SkylakeX", "SapphireRapids", "skx", "knl"})
    if (equal_nocase(name, n)) return 512;
  for (const char* n : {"Haswell", "Zen", "haswell", "zen", "zen2", "zen3", "zen4"})
    if (equal_nocase(name, n)) return 256;
  return 0;
}

std::vector<std::string> openblas_core_candidates(const cpu_features& cpu) {
  // Best first. The AVX2 pair is ordered by vendor: OpenBLAS's Zen parameters are tuned for
  // AMD's caches, Haswell's for Intel's (the kernels are the same).
  std::vector<std::string> order = {"Cooperlake", "SkylakeX"};
  if (cpu.amd) order.insert(order.end(), {"Zen", "Haswell"});
  else order.insert(order.end(), {"Haswell", "Zen"});
  order.push_back("Sandybridge");
  std::vector<std::string> out;
  for (const std::string& n : order)
    if (cpu_runs(cpu, "openblas", n)) out.push_back(n);
  return out;
}

std::vector<std::string> blis_arch_candidates(const cpu_features& cpu, const std::vector<std::string>& registered) {
  // Best first. AVX-512 first on any vendor: on this project's AMD EPYC (AVX-512, which
  // BLIS 0.9.0's cpuid does not recognise) skx runs a 512^3 double leaf at 97 GF/s on one
  // core where haswell and zen2, AVX2 kernels like zen3's, run at 52-53
  // (bench/results/leaf-kernels-2026-11-23.txt).
  // Among AVX2 configurations the zen family is blocked for AMD's caches, haswell for Intel's.
  std::vector<std::string> order = {"skx"};
  if (cpu.amd) order.insert(order.end(), {"zen3", "zen2", "zen", "haswell"});
  else order.insert(order.end(), {"haswell", "zen3", "zen2", "zen"});
  order.push_back("sandybridge");
  std::vector<std::string> out;
  for (const std::string& n : order)
    if (cpu_runs(cpu, "blis", n) && std::find(registered.begin(), registered.end(), n) != registered.end())
      out.push_back(n);
  return out;
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
  static const leaf_kernel_requests r = [] {
    const std::string& s = process_environment().leaf_kernels;
    if (s.empty()) return leaf_kernel_requests{};
    try {
      return parse_leaf_kernels(s);
    } catch (const error& e) {
      std::fprintf(stderr, "prism: PRISM_LEAF_KERNELS: %s; prism chooses the leaf kernels itself (auto)\n",
                   e.what());
      return leaf_kernel_requests{};
    }
  }();
  return r;
}

}  // namespace prism::detail
