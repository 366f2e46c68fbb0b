// lib/environment/environment.cpp — the one place prism calls getenv (environment.hpp).
#include "environment.hpp"
#include "run_once.hpp"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>

namespace prism::detail {

void say_once(const std::string& line) {
  static std::mutex m;
  static std::set<std::string>& said = *new std::set<std::string>;  // never destroyed: calls may come at exit (docs/dropin.md)
  const std::lock_guard<std::mutex> lock(m);
  if (said.insert(line).second) std::fprintf(stderr, "prism: %s\n", line.c_str());
}

namespace {

// The text of `name`; unset and empty are alike ("").
std::string text(const char* name) {
  const char* s = std::getenv(name);
  return s != nullptr ? std::string(s) : std::string();
}

// 0 .. highest, one digit; unset is 0. PRISM_VERBOSE (0, 1 or 2) and PRISM_STATS (0 or 1).
checked<int> level(const char* name, int highest, const char* when_bad) {
  const std::string s = text(name);
  checked<int> c;
  if (s.empty()) return c;
  if (s.size() == 1 && s[0] >= '0' && s[0] <= '0' + highest) {
    c.value = s[0] - '0';
    return c;
  }
  c.problem = std::string(name) + ": '" + s + "' is not " + (highest == 2 ? "0, 1 or 2" : "0 or 1") + "; " + when_bad;
  return c;
}

// auto (or unset), prism or backend; and gpu where `gpu` allows it.
checked<route_choice> route(const char* name, const char* when_bad, bool gpu = false) {
  const std::string s = text(name);
  checked<route_choice> c;
  if (s.empty() || s == "auto") return c;
  if (s == "prism") c.value = route_choice::prism;
  else if (s == "backend") c.value = route_choice::backend;
  else if (s == "gpu" && gpu) c.value = route_choice::gpu;
  else c.problem = std::string(name) + ": '" + s + "' is not auto, prism" + (gpu ? ", backend or gpu; " : " or backend; ") + when_bad;
  return c;
}

checked<simd_choice> simd() {
  const std::string s = text("PRISM_SIMD");
  checked<simd_choice> c;
  if (s.empty() || s == "auto") return c;
  if (s == "avx2") c.value = simd_choice::avx2;
  else if (s == "scalar") c.value = simd_choice::scalar;
  else c.problem = "PRISM_SIMD: '" + s + "' is not auto, avx2 or scalar; prism's kernels run the best target this CPU has";
  return c;
}

// rank:P:alloc|setup|nan|stall with P >= 0.
checked<test_fault> fault() {
  const std::string s = text("PRISM_TEST_FAULT");
  checked<test_fault> c;
  if (s.empty()) return c;
  int p = -1;
  char kind[16] = {0};
  if (std::sscanf(s.c_str(), "rank:%d:%15s", &p, kind) == 2 && p >= 0) {
    if (std::strcmp(kind, "alloc") == 0) c.value.what = test_fault::kind::alloc;
    else if (std::strcmp(kind, "setup") == 0) c.value.what = test_fault::kind::setup;
    else if (std::strcmp(kind, "nan") == 0) c.value.what = test_fault::kind::nan;
    else if (std::strcmp(kind, "stall") == 0) c.value.what = test_fault::kind::stall;
  }
  if (c.value.what == test_fault::kind::none) c.problem = "PRISM_TEST_FAULT: '" + s + "' is not rank:P:alloc|setup|nan|stall; no fault is injected";
  else c.value.process = p;
  return c;
}

// The per-user cache folder of prism: machine file and first-use measurements.
std::string cache_dir() {
  const std::string xdg = text("XDG_CACHE_HOME"), home = text("HOME");
  if (!xdg.empty() && xdg[0] == '/') return xdg + "/prism";
  if (!home.empty()) return home + "/.cache/prism";
  return "";
}

// 0 or 1, unset is `fallback`.
checked<bool> flag(const char* name, bool fallback, const char* when_bad) {
  const checked<int> c = level(name, 1, when_bad);
  return {text(name).empty() || !c.problem.empty() ? fallback : c.value > 0, c.problem};
}

// Never destroyed: exit handlers (the drop-in's summary) may still read it.
environment* process_copy = nullptr;  // set once by process_environment(), or by a test
run_once process_once;

}  // namespace

checked<std::uint64_t> parse_size_text(const std::string& text) {
  checked<std::uint64_t> c;
  std::size_t i = 0;
  std::uint64_t v = 0;
  bool overflow = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i)
    overflow = overflow || __builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, unsigned(text[i] - '0'), &v);
  if (i == 0) {
    c.problem = "not a non-negative integer: '" + text + "'";
    return c;
  }
  const char u = i < text.size() ? char(std::toupper(static_cast<unsigned char>(text[i]))) : ' ';  // the suffix
  const int shift = i == text.size() ? 0 : u == 'K' ? 10 : u == 'M' ? 20 : u == 'G' ? 30 : -1;
  if (shift < 0 || text.size() - i > 1) {
    c.problem = "trailing characters in '" + text + "' (the suffix may be K, M or G)";
    return c;
  }
  if (overflow || (shift > 0 && v > (~std::uint64_t(0) >> shift))) c.problem = "value too large: '" + text + "'";
  else c.value = v << shift;
  return c;
}

checked<gpu_choice> parse_gpu_choice(const std::string& text) {
  checked<gpu_choice> c;
  if (text.empty() || text == "auto") return c;
  if (text == "off") {
    c.value.what = gpu_choice::mode::off;
    return c;
  }
  // emulate:N:SIZE[:delay], e.g. "emulate:2:64M:delay" -> fields {emulate, 2, 64M, delay}.
  std::vector<std::string> f(1);
  for (const char ch : text) {
    if (ch == ':') f.emplace_back();
    else f.back() += ch;
  }
  const bool shape = (f.size() == 3 || (f.size() == 4 && f[3] == "delay")) && f[0] == "emulate";
  const bool digits =
      shape && !f[1].empty() && f[1].size() <= 2 && f[1].find_first_not_of("0123456789") == std::string::npos;
  const int n = digits ? std::stoi(f[1]) : 0;
  const checked<std::uint64_t> size = shape ? parse_size_text(f[2]) : checked<std::uint64_t>{0, "no size"};
  const std::uint64_t bytes = size.problem.empty() ? size.value : 0;
  if (n >= 1 && n <= 64 && bytes >= (std::uint64_t(1) << 20) && bytes <= (std::uint64_t(1) << 50)) {
    c.value = {gpu_choice::mode::emulate, n, bytes, f.size() == 4};
    return c;
  }
  c.problem = "PRISM_GPU: '" + text +
              "' is not auto, off or emulate:N:SIZE[:delay] with N in 1..64 and SIZE >= 1M; GPUs as if it were unset";
  return c;
}

environment read_environment() {
  environment e;
  e.num_threads = text("PRISM_NUM_THREADS");
  e.max_memory = text("PRISM_MAX_MEMORY");
  e.small_flops = text("PRISM_SMALL_FLOPS");
  e.extra_depth = text("PRISM_EXTRA_DEPTH");
  e.cache_level = text("PRISM_CACHE_LEVEL");
  e.leaf = text("PRISM_LEAF");
  e.leaf_kernels = text("PRISM_LEAF_KERNELS");
  e.rank_flops = text("PRISM_RANK_FLOPS");
  e.rank_bandwidth = text("PRISM_RANK_BANDWIDTH");
  e.topology = text("PRISM_TOPOLOGY");
  e.hwloc_xmlfile = text("HWLOC_XMLFILE");
  e.hwloc_synthetic = text("HWLOC_SYNTHETIC");
  e.machine = text("PRISM_MACHINE");
  e.cache_dir = cache_dir();
  e.machine_file = e.cache_dir.empty() ? "" : e.cache_dir + "/machine";
  e.first_use = flag("PRISM_FIRST_USE", true, "prism measures at first use as by default");
  e.verbose = level("PRISM_VERBOSE", 2, "calls are not logged");
  const checked<int> stats = level("PRISM_STATS", 1, "no statistics");
  e.stats = {stats.value > 0, stats.problem};
  e.blas_backend = text("PRISM_BLAS_BACKEND");
  e.blas_route = route("PRISM_BLAS_ROUTE", "routing is auto (the GPU model, k-dominance, then the rate model)", true);
  e.scalapack_backend = text("PRISM_SCALAPACK_BACKEND");
  e.scalapack_route = route("PRISM_SCALAPACK_ROUTE", "routing as auto");
  e.simd = simd();
  e.lib_openblas_serial = text("PRISM_LIB_OPENBLAS_SERIAL");
  e.lib_openblas_pthread = text("PRISM_LIB_OPENBLAS_PTHREAD");
  e.lib_openblas64_pthread = text("PRISM_LIB_OPENBLAS64_PTHREAD");
  e.lib_blis_serial = text("PRISM_LIB_BLIS_SERIAL");
  e.lib_blis_pthread = text("PRISM_LIB_BLIS_PTHREAD");
  e.test_openblas_detects = text("PRISM_TEST_OPENBLAS_DETECTS");
  e.test_backend_kernels = text("PRISM_TEST_BACKEND_KERNELS");
  e.fault = fault();
  e.gpu = parse_gpu_choice(text("PRISM_GPU"));
  return e;
}

const environment& process_environment() {
  process_once([] {
    if (process_copy == nullptr) process_copy = new environment(read_environment());
  });
  return *process_copy;
}

void set_process_environment(environment e) {
  process_once([] {});
  if (process_copy == nullptr) process_copy = new environment(std::move(e));
  else *process_copy = std::move(e);
}

const char* backend_variable(const char* name) {
  for (const char* known : {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "BLIS_ARCH_TYPE"})
    if (std::strcmp(name, known) == 0) return std::getenv(name);
  throw std::logic_error(std::string("backend_variable: ") + name + " is not a BLAS library's variable");
}

scoped_env::scoped_env(const std::vector<std::pair<const char*, const char*>>& changes) {
  for (const auto& [name, value] : changes) {
    const char* old = std::getenv(name);
    saved_.push_back({name, old != nullptr, old != nullptr ? old : ""});
    if (value != nullptr) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
}

scoped_env::~scoped_env() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->was_set) ::setenv(it->name.c_str(), it->value.c_str(), 1);
    else ::unsetenv(it->name.c_str());
  }
}

}  // namespace prism::detail
