// tests/fuzz/fuzz_env.cpp — fuzz target: the PRISM_* environment readers of the context
// (prism::context::from_env: PRISM_NUM_THREADS, PRISM_MAX_MEMORY, PRISM_SMALL_FLOPS,
// PRISM_EXTRA_DEPTH, PRISM_CACHE_LEVEL, PRISM_LEAF, PRISM_LEAF_KERNELS, PRISM_RANK_FLOPS,
// PRISM_RANK_BANDWIDTH). Input: byte 0 picks which variables are set (one bit each, low 9
// bits over bytes 0-1), the rest, split at '\n', gives their values in order (a NUL ends a
// value). Each set of values is either refused with one prism::error that names the
// variable, or gives a context whose settings are in range and whose description prints.
#include <prism/context.hpp>
#include <prism/error.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const char* const names[] = {"PRISM_NUM_THREADS", "PRISM_MAX_MEMORY",   "PRISM_SMALL_FLOPS",
                             "PRISM_EXTRA_DEPTH", "PRISM_CACHE_LEVEL",  "PRISM_LEAF",
                             "PRISM_LEAF_KERNELS", "PRISM_RANK_FLOPS", "PRISM_RANK_BANDWIDTH"};
constexpr int count = 9;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_env: FINDING: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("HWLOC_SYNTHETIC", "Package:1 L3Cache:1(size=8MiB) L2Cache:2(size=1MiB) L1dCache:1(size=32KiB) Core:1 PU:1", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const unsigned mask = unsigned(data[0]) | (unsigned(data[1] & 1) << 8);
  std::string rest(reinterpret_cast<const char*>(data + 2), size - 2);
  std::size_t at = 0;
  for (int v = 0; v < count; ++v) {
    if (!(mask & (1u << v))) {
      unsetenv(names[v]);
      continue;
    }
    const std::size_t nl = rest.find('\n', at);
    std::string value = rest.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? rest.size() : nl + 1;
    value = value.substr(0, std::strlen(value.c_str()));  // a NUL ends it, as in a real environment
    setenv(names[v], value.c_str(), 1);
  }
  try {
    const prism::context c = prism::context::from_env();
    if (c.threads() < 1 || c.threads() > (1 << 20)) finding("thread budget out of range: " + std::to_string(c.threads()));
    if (!(c.small_flops() >= 0)) finding("negative small_flops");
    if (c.describe().empty()) finding("empty description");
  } catch (const prism::error& e) {
    if (std::strncmp(e.what(), "PRISM_", 6) != 0) finding(std::string("error does not name the variable: ") + e.what());
  }
  for (int v = 0; v < count; ++v) unsetenv(names[v]);
  return 0;
}
