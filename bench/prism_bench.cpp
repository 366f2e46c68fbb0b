// bench/prism_bench.cpp — prism against threaded OpenBLAS and BLIS, same process, same run.
//
// For every shape and type the same operands are multiplied by five implementations, each
// registered as its own Google Benchmark:
//   prism        prism::gemm with the default context (all cores; PRISM_* env honoured)
//   prism_blas   the drop-in libprism_blas.so's cblas_?gemm (opened with dlopen, as an
//                LD_PRELOAD would bind it), routing rule included; its backend is the
//                openblas column's own library (PRISM_BLAS_BACKEND is set to that file), so
//                prism_blas / openblas is "drop-in over the user's BLAS" in one run
//   openblas     OpenBLAS pthread build, openblas_set_num_threads(nproc) before the run
//   openblas_1t  OpenBLAS serial build (the kernels of prism's leaves, which call the ILP64
//                pthread build pinned to one thread)
//   blis         BLIS pthread build, bli_thread_set_num_threads(nproc) before the run
//   blis_1t      BLIS serial build
// plus the machine probes, measured before and after the gemms (both built with -march=native):
//   fma_peak/{d,s}/{first,last}   the FMA peak of all cores (fma_peak.cpp)
//   bandwidth/read/{first,last}   the read bandwidth of all cores (bandwidth.cpp): every core
//                                 sums its part of one large array, best of several passes
//
// A library picks its kernel set once, when it is loaded (OpenBLAS from OPENBLAS_CORETYPE
// or cpuid, BLIS from BLIS_ARCH_TYPE or cpuid), so one process measures one set per
// library. bench/run.py runs this driver once per (library, kernel set), each under its own
// environment and with --only and --label (impl names become e.g. openblas@SkylakeX), and
// merges the JSON; --list-shapes, --pick and --print-kernel-sets exist for it.
//
// Each BLAS build is opened privately (lib/leaf/backend/blas_library.hpp), so the serial and the
// pthread copies of one library live side by side and a thread setting made on one copy
// does not touch another.
//
// Own flags (everything else goes to Google Benchmark, e.g. --benchmark_out=f.json
// --benchmark_out_format=json --benchmark_filter=...):
//   --set=quick|full|dropin|peers  shape set (default quick); dropin: the drop-in library's
//                           acceptance shapes, impls prism,prism_blas,openblas by default;
//                           peers: prism against each peer at its best kernel set
//                           (double only by default)
//   --shapes=MxNxK[:TT],... ad-hoc shapes instead of a set (TT = transa transb, default NN)
//   --type=d|s|both         element type(s) (default: d for the quick set, both otherwise;
//                           threaded BLIS alone can take minutes on this VM, see below)
//   --reps=N                repetitions per benchmark (default 5); report.py keeps the best
//   --min-time=S            minimum seconds per repetition (default 0.2 quick, 0.5 else)
//   --impls=a,b,...         subset of prism,prism_blas,openblas,openblas_1t,blis,blis_1t
//                           (default all)
//   --reps-large=N          repetitions for shapes whose operands take more than 1 GiB
//                           (default: --reps; 3 at most for the peers set)
//   --no-fma                skip the fma_peak benchmarks
//   --no-bandwidth          skip the bandwidth benchmarks
//   --bandwidth-mib=N       size of the bandwidth probe's array (default 2048 MiB)
//   --probes=both|first|last  which runs of the machine probes (default both)
//   --no-gemm               machine probes only
//   --pick=MxNxK[:TT],...   run only these shapes of the set (each must be in it)
//   --only=openblas|blis    keep only the chosen implementations of that library
//   --label=NAME            append @NAME to every implementation name (a kernel set's name)
//   --context=KEY=VALUE     add KEY to the JSON context (repeatable)
//   --list-shapes           print the set's shapes, one MxNxK:TT per line, and exit
//   --list-impls            print the implementations that would run, one per line, and exit
//   --print-kernel-sets     print the kernel set each BLAS copy picked under this
//                           environment and BLIS's architecture ids, and exit
//   --check=0|1             compare prism with OpenBLAS once per shape and type (default 1;
//                           only when prism or prism_blas is among the implementations)
//   --settle-ms=N           pause before the first run of an implementation (default 50),
//                           so the previous library's spinning threads go to sleep
//   --budget-s=S            wall seconds one benchmark may spend on its repetitions before
//                           the rest are skipped (reported as errors; default 5 for the
//                           quick set, 30 otherwise; 0: no limit). A call already running
//                           is never cut short, so one repetition is always measured.
//
// Threaded BLIS 0.9.0 starts its threads on every call and synchronises them with spinning
// barriers. On a VM whose scheduler packs threads onto one vCPU (sched_vcpu_pack on the
// kernel command line) a spinning thread and the one it waits for can share a vCPU for a
// whole time slice, per barrier: calls then take 10-100x longer than on one thread. The
// budget keeps such runs from dominating the quick set.
#include <prism/prism.hpp>

#include "leaf/backend/blas_library.hpp"
#include "bandwidth.hpp"
#include "fma_peak.hpp"

#include <benchmark/benchmark.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using prism::detail::blas_build;
using prism::detail::blas_library;

// ---------------------------------------------------------------------------------------
// Shapes and options

struct shape {
  std::int64_t m = 0, n = 0, k = 0;
  char transa = 'N', transb = 'N';
  std::string group;  // "krylov", "carma", "gram", "wide", "square", "cube", "custom"
};

enum class impl { prism, prism_blas, openblas, openblas_1t, blis, blis_1t };
constexpr impl kAllImpls[] = {impl::prism, impl::prism_blas, impl::openblas, impl::openblas_1t,
                              impl::blis, impl::blis_1t};

const char* to_string(impl i) {
  switch (i) {
    case impl::prism: return "prism";
    case impl::prism_blas: return "prism_blas";
    case impl::openblas: return "openblas";
    case impl::openblas_1t: return "openblas_1t";
    case impl::blis: return "blis";
    case impl::blis_1t: return "blis_1t";
  }
  return "?";
}

struct options {
  std::string set = "quick";
  std::vector<shape> shapes;  // from --shapes; empty: the set's
  bool doubles = true, floats = true;
  bool type_given = false;  // --type seen; otherwise quick runs double only, the rest both
  int reps = 5;
  double min_time = 0;  // 0: 0.2 s for the quick set, 0.5 s otherwise
  std::vector<impl> impls{std::begin(kAllImpls), std::end(kAllImpls)};
  bool impls_given = false;  // --impls seen; otherwise the set's default (all, or for dropin three)
  bool fma = true;
  bool check = true;
  int settle_ms = 50;
  double budget_s = -1;  // < 0: the set's default
  int reps_large = 0;    // 0: the set's default
  bool bandwidth = true;
  std::size_t bandwidth_mib = 2048;
  bool probes_first = true, probes_last = true;
  bool gemm = true;
  std::vector<shape> picks;  // from --pick; empty: every shape of the set
  std::string only;          // "", "openblas" or "blis"
  std::string label;         // "" or the kernel set's name
  std::vector<std::pair<std::string, std::string>> context;
  bool list_shapes = false;
  bool list_impls = false;
  bool print_kernel_sets = false;
};

[[noreturn]] void usage_error(const std::string& why) {
  std::cerr << "prism_bench: " << why << "\n"
            << "usage: prism_bench [--set=quick|full|dropin|peers] [--shapes=MxNxK[:TT],...] [--type=d|s|both]\n"
            << "                   [--reps=N] [--reps-large=N] [--min-time=S]\n"
            << "                   [--impls=prism,prism_blas,openblas,openblas_1t,blis,blis_1t] [--only=openblas|blis]\n"
            << "                   [--no-fma] [--no-bandwidth] [--bandwidth-mib=N] [--probes=both|first|last] [--no-gemm]\n"
            << "                   [--check=0|1] [--settle-ms=N] [--budget-s=S] [--pick=MxNxK[:TT],...]\n"
            << "                   [--label=NAME] [--context=KEY=VALUE] [--list-shapes] [--list-impls] [--print-kernel-sets]\n"
            << "                   [--benchmark_* flags, e.g. --benchmark_out=f.json --benchmark_out_format=json]\n";
  std::exit(2);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

std::int64_t parse_int(const std::string& text, const std::string& what) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used != text.size() || v < 1) throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    usage_error("bad " + what + " '" + text + "'");
  }
}

// "MxNxK" or "MxNxK:TT", e.g. 32x32x4194304:TN.
shape parse_shape(const std::string& text) {
  shape s;
  s.group = "custom";
  std::string dims = text;
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    const std::string tt = text.substr(colon + 1);
    dims = text.substr(0, colon);
    if (tt.size() != 2) usage_error("bad transposes in shape '" + text + "' (want e.g. :TN)");
    s.transa = static_cast<char>(std::toupper(static_cast<unsigned char>(tt[0])));
    s.transb = static_cast<char>(std::toupper(static_cast<unsigned char>(tt[1])));
    for (char t : {s.transa, s.transb})
      if (t != 'N' && t != 'T') usage_error("transpose must be N or T in '" + text + "'");
  }
  const auto parts = split(dims, 'x');
  if (parts.size() != 3) usage_error("bad shape '" + text + "' (want MxNxK[:TT])");
  s.m = parse_int(parts[0], "m");
  s.n = parse_int(parts[1], "n");
  s.k = parse_int(parts[2], "k");
  return s;
}

options parse_options(int& argc, char** argv) {
  options o;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* prefix) -> const char* {
      const std::size_t n = std::strlen(prefix);
      return a.compare(0, n, prefix) == 0 ? argv[i] + n : nullptr;
    };
    if (const char* v = value("--set=")) {
      o.set = v;
      if (o.set != "quick" && o.set != "full" && o.set != "dropin" && o.set != "peers")
        usage_error("--set must be quick, full, dropin or peers");
    } else if (const char* v = value("--shapes=")) {
      for (const auto& s : split(v, ',')) o.shapes.push_back(parse_shape(s));
      if (o.shapes.empty()) usage_error("--shapes is empty");
    } else if (const char* v = value("--type=")) {
      const std::string t = v;
      o.type_given = true;
      if (t == "d") o.doubles = true, o.floats = false;
      else if (t == "s") o.doubles = false, o.floats = true;
      else if (t == "both") o.doubles = o.floats = true;
      else usage_error("--type must be d, s or both");
    } else if (const char* v = value("--reps=")) {
      o.reps = static_cast<int>(parse_int(v, "--reps"));
    } else if (const char* v = value("--min-time=")) {
      char* end = nullptr;
      o.min_time = std::strtod(v, &end);
      if (end == v || *end != '\0' || !(o.min_time > 0)) usage_error("bad --min-time");
    } else if (const char* v = value("--impls=")) {
      o.impls_given = true;
      o.impls.clear();
      for (const auto& name : split(v, ',')) {
        bool found = false;
        for (impl i : kAllImpls)
          if (name == to_string(i)) o.impls.push_back(i), found = true;
        if (!found) usage_error("unknown implementation '" + name + "'");
      }
    } else if (const char* v = value("--reps-large=")) {
      o.reps_large = static_cast<int>(parse_int(v, "--reps-large"));
    } else if (a == "--no-fma") {
      o.fma = false;
    } else if (a == "--no-bandwidth") {
      o.bandwidth = false;
    } else if (const char* v = value("--bandwidth-mib=")) {
      o.bandwidth_mib = static_cast<std::size_t>(parse_int(v, "--bandwidth-mib"));
    } else if (const char* v = value("--probes=")) {
      const std::string p = v;
      if (p != "both" && p != "first" && p != "last") usage_error("--probes must be both, first or last");
      o.probes_first = p != "last";
      o.probes_last = p != "first";
    } else if (a == "--no-gemm") {
      o.gemm = false;
    } else if (const char* v = value("--pick=")) {
      for (const auto& s : split(v, ',')) o.picks.push_back(parse_shape(s));
    } else if (const char* v = value("--only=")) {
      o.only = v;
      if (o.only != "openblas" && o.only != "blis") usage_error("--only must be openblas or blis");
    } else if (const char* v = value("--label=")) {
      o.label = v;
      // The label becomes part of benchmark names, which report.py splits at '/' and '@'.
      if (o.label.empty() || o.label.find_first_of("/@ ") != std::string::npos)
        usage_error("--label must be non-empty, without '/', '@' or spaces");
    } else if (const char* v = value("--context=")) {
      const std::string kv = v;
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) usage_error("--context wants KEY=VALUE");
      o.context.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (a == "--list-shapes") {
      o.list_shapes = true;
    } else if (a == "--list-impls") {
      o.list_impls = true;
    } else if (a == "--print-kernel-sets") {
      o.print_kernel_sets = true;
    } else if (const char* v = value("--check=")) {
      o.check = std::string(v) != "0";
    } else if (const char* v = value("--settle-ms=")) {
      o.settle_ms = std::atoi(v);
    } else if (const char* v = value("--budget-s=")) {
      char* end = nullptr;
      o.budget_s = std::strtod(v, &end);
      if (end == v || *end != '\0' || o.budget_s < 0) usage_error("bad --budget-s");
    } else {
      argv[out++] = argv[i];  // Google Benchmark's (or unknown: it reports those)
    }
  }
  argc = out;
  argv[argc] = nullptr;
  return o;
}

void add_shape(std::vector<shape>& v, shape s) {
  // A shape listed in two groups (e.g. 64x64x2^22: block-Krylov and CARMA) runs once.
  for (auto& old : v)
    if (old.m == s.m && old.n == s.n && old.k == s.k && old.transa == s.transa &&
        old.transb == s.transb) {
      old.group += "+" + s.group;
      return;
    }
  v.push_back(std::move(s));
}

std::vector<shape> shape_set(const std::string& name) {
  std::vector<shape> v;
  auto nn = [&](std::int64_t m, std::int64_t n, std::int64_t k, const char* group) {
    add_shape(v, shape{m, n, k, 'N', 'N', group});
  };
  constexpr std::int64_t p14 = std::int64_t{1} << 14, p17 = std::int64_t{1} << 17,
                         p20 = std::int64_t{1} << 20, p22 = std::int64_t{1} << 22,
                         p24 = std::int64_t{1} << 24;
  if (name == "full") {
    for (std::int64_t b : {4, 8, 16, 32, 64}) nn(b, b, b <= 8 ? p24 : p22, "krylov");
    for (std::int64_t k : {p14, p17, p20, p22}) nn(64, 64, k, "carma");
    add_shape(v, shape{32, 32, p22, 'T', 'N', "gram"});
    for (std::int64_t b : {1024, 4096, 8192}) nn(b, b, 64, "wide");
    for (std::int64_t b : {1024, 2048, 4096}) nn(b, b, b, "square");
    for (std::int64_t b : {16, 32, 64, 96, 128, 192, 256}) nn(b, b, b, "cube");
  } else if (name == "dropin") {
    // The drop-in's acceptance shapes: the full set's tall-skinny shapes (prism's recursion
    // should match the core engine there), its cubes <= 128 and one wide and one square
    // shape (forwarded to the backend: the drop-in should cost nothing there).
    for (std::int64_t b : {4, 8, 16, 32, 64}) nn(b, b, b <= 8 ? p24 : p22, "krylov");
    for (std::int64_t k : {p14, p17, p20}) nn(64, 64, k, "carma");
    add_shape(v, shape{32, 32, p22, 'T', 'N', "gram"});
    nn(4096, 4096, 64, "wide");
    nn(2048, 2048, 2048, "square");
    for (std::int64_t b : {16, 32, 64, 96, 128}) nn(b, b, b, "cube");
  } else if (name == "peers") {
    // The shapes where prism is compared with each peer at its best kernel set:
    // block-Krylov 4x4 and 8x8 (memory-bound: the read-bandwidth roofline), CARMA 64x64,
    // the Gram product, one wide and one square shape, and the cubes up to 128.
    nn(4, 4, p24, "krylov");
    nn(8, 8, p24, "krylov");
    nn(64, 64, p22, "krylov");
    nn(64, 64, p22, "carma");
    add_shape(v, shape{32, 32, p22, 'T', 'N', "gram"});
    nn(4096, 4096, 64, "wide");
    nn(2048, 2048, 2048, "square");
    for (std::int64_t b : {16, 32, 64, 96, 128}) nn(b, b, b, "cube");
  } else {
    nn(4, 4, p24, "krylov");
    nn(16, 16, p22, "krylov");
    nn(64, 64, p22, "krylov");
    add_shape(v, shape{32, 32, p22, 'T', 'N', "gram"});
    nn(64, 64, p20, "carma");
    nn(4096, 4096, 64, "wide");
    nn(2048, 2048, 2048, "square");
    for (std::int64_t b : {16, 64, 128}) nn(b, b, b, "cube");
  }
  return v;
}

std::string shape_text(const shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

bool same_shape(const shape& a, const shape& b) {
  return a.m == b.m && a.n == b.n && a.k == b.k && a.transa == b.transa && a.transb == b.transb;
}

// Bytes of A, B and C of a shape for elements of `element` bytes.
double operand_bytes(const shape& s, std::size_t element) {
  return (double(s.m) * double(s.k) + double(s.k) * double(s.n) + double(s.m) * double(s.n)) *
         double(element);
}

// ---------------------------------------------------------------------------------------
// Machine description

int hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) break;
      std::string m = line.substr(colon + 1);
      m.erase(0, m.find_first_not_of(" \t"));
      return m;
    }
  return "unknown CPU";
}

// Scheduler options on the kernel command line (e.g. sched_vcpu_pack=15 on this project's
// VMs, which packs runnable threads onto few vCPUs): they decide what "all cores" gives.
std::string kernel_sched_options() {
  std::ifstream in("/proc/cmdline");
  std::string word, found;
  while (in >> word)
    if (word.rfind("sched", 0) == 0 || word.rfind("isolcpus", 0) == 0 || word.rfind("nohz", 0) == 0)
      found += (found.empty() ? "" : " ") + word;
  return found.empty() ? "none" : found;
}

// The caches as prism's topology (hwloc) sees them, e.g. "L1 48 KiB x2, L2 1024 KiB x2,
// L3 32768 KiB x1", and the bytes of one L2 (0 if unknown). report.py treats a shape whose
// operands fit in one L2 as cache-resident: the benchmark calls it over and over on the same
// arrays, so memory bandwidth does not bound it. The L2 and not the last level: this
// project's VM reports an L3 of 508 MiB, far more than its two cores can use (it looks like
// the whole processor's total), while its L2 is right; operands that fit an L2 fit every
// cache above it.
std::pair<std::string, std::uint64_t> cache_description() {
  std::string text;
  std::uint64_t l2 = 0;
  for (const prism::cache_level& c : prism::default_context().machine().caches()) {
    text += (text.empty() ? "" : ", ") + std::string("L") + std::to_string(c.level) + " " +
            std::to_string(c.size_bytes >> 10) + " KiB x" + std::to_string(c.instances);
    if (c.level == 2) l2 = c.size_bytes;
  }
  return {text.empty() ? "unknown" : text, l2};
}

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %Z", std::localtime(&t));
  return buf;
}

// ---------------------------------------------------------------------------------------
// Operands: allocated for one (shape, type) at a time and shared by every implementation.

struct free_deleter {
  void operator()(void* p) const noexcept { std::free(p); }
};
using raw_buffer = std::unique_ptr<std::byte, free_deleter>;

raw_buffer allocate(std::size_t bytes) {
  const std::size_t align = 64;
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return raw_buffer(static_cast<std::byte*>(p));
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

constexpr std::uint64_t kSeed = 20240601;

// Element i of stream `id`: uniform in [-1, 1), a pure function of (seed, id, i), so the
// values do not depend on how many threads fill them. Filling in parallel also places
// the pages (first touch).
template <class T>
void fill_random(T* p, std::size_t count, std::uint64_t id) {
  const std::uint64_t base = splitmix64(kSeed ^ (id << 56));
  auto work = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      const std::uint64_t r = splitmix64(base + i);
      if constexpr (std::is_same_v<T, double>)
        p[i] = static_cast<double>(r >> 11) * 0x1.0p-52 - 1.0;
      else
        p[i] = static_cast<float>(r >> 40) * 0x1.0p-23f - 1.0f;
    }
  };
  const int threads = hardware_threads();
  if (count < (std::size_t{1} << 16) || threads == 1) {
    work(0, count);
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(work, count * t / threads, count * (t + 1) / threads);
  for (auto& th : pool) th.join();
}

struct operands {
  std::string key;  // type + shape; empty: nothing held
  raw_buffer A, B, C;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  double check_error = -1;  // max |prism - OpenBLAS| in units of k * eps; -1: not checked
  bool check_failed = false;
  std::string check_note;
};

operands g_ops;
const options* g_opt = nullptr;

// The implementation's name in benchmark names and labels: e.g. "openblas", or with
// --label=SkylakeX "openblas@SkylakeX".
std::string impl_name(impl i) {
  return g_opt->label.empty() ? to_string(i) : std::string(to_string(i)) + "@" + g_opt->label;
}

template <class T>
constexpr char type_letter() {
  return std::is_same_v<T, double> ? 'd' : 's';
}

// ---------------------------------------------------------------------------------------
// The drop-in library (impl::prism_blas)

// cblas_sgemm / cblas_dgemm of libprism_blas.so, opened once. Its backend is pinned to the
// file of the openblas column (the same loaded copy), so both columns time the same BLAS
// for the calls the drop-in forwards.
class dropin_library {
 public:
  static const dropin_library& get() {
    static const dropin_library lib;
    return lib;
  }
  template <class T>
  void gemm(char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* A,
            std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) const {
    auto tr = [](char t) { return t == 'N' ? 111 : t == 'T' ? 112 : 113; };
    using fn = void (*)(int, int, int, int, int, int, T, const T*, int, const T*, int, T, T*, int);
    reinterpret_cast<fn>(std::is_same_v<T, float> ? sgemm_ : dgemm_)(
        102, tr(ta), tr(tb), int(m), int(n), int(k), alpha, A, int(lda), B, int(ldb), beta, C, int(ldc));
  }

 private:
  dropin_library() {
    const char* env = std::getenv("PRISM_BENCH_DROPIN");
    const std::string path = env && *env ? env : PRISM_BENCH_DROPIN_PATH;
    const std::string backend = prism::detail::library_path(blas_build::openblas_pthread);
    setenv("PRISM_BLAS_BACKEND", backend.c_str(), 0);  // read at the drop-in's first call
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) throw std::runtime_error("cannot open the drop-in " + path + ": " + dlerror());
    sgemm_ = dlsym(h, "cblas_sgemm");
    dgemm_ = dlsym(h, "cblas_dgemm");
    if (sgemm_ == nullptr || dgemm_ == nullptr) throw std::runtime_error(path + " lacks cblas_?gemm");
  }
  void* sgemm_ = nullptr;
  void* dgemm_ = nullptr;
};

template <class T>
void check_prism(operands& ops, const shape& s);

// The operands of (shape, T), reallocating only when the previous benchmark used others.
// Runs untimed, before the benchmark's timing loop.
template <class T>
operands& operands_for(const shape& s) {
  const std::string key = std::string(1, type_letter<T>()) + s.transa + s.transb + shape_text(s);
  if (g_ops.key == key) return g_ops;
  g_ops = operands{};  // frees the previous shape's arrays first: the big ones are GiBs
  const std::size_t m = s.m, n = s.n, k = s.k;
  const std::size_t arows = s.transa == 'N' ? m : k, acols = s.transa == 'N' ? k : m;
  const std::size_t brows = s.transb == 'N' ? k : n, bcols = s.transb == 'N' ? n : k;
  g_ops.lda = static_cast<std::int64_t>(arows);
  g_ops.ldb = static_cast<std::int64_t>(brows);
  g_ops.ldc = static_cast<std::int64_t>(m);
  g_ops.A = allocate(arows * acols * sizeof(T));
  g_ops.B = allocate(brows * bcols * sizeof(T));
  g_ops.C = allocate(m * n * sizeof(T));
  fill_random(reinterpret_cast<T*>(g_ops.A.get()), arows * acols, 1);
  fill_random(reinterpret_cast<T*>(g_ops.B.get()), brows * bcols, 2);
  fill_random(reinterpret_cast<T*>(g_ops.C.get()), m * n, 3);
  g_ops.key = key;
  // The check times nothing; it runs where prism (or its drop-in) is measured, not in a
  // process that times one peer library (--only).
  const bool timed_prism = std::any_of(g_opt->impls.begin(), g_opt->impls.end(),
                                       [](impl i) { return i == impl::prism || i == impl::prism_blas; });
  if (g_opt->check && timed_prism) check_prism<T>(g_ops, s);
  return g_ops;
}

// One untimed prism::gemm against threaded OpenBLAS (beta = 0 into fresh arrays). The
// error is max |C_prism - C_openblas| / (k * eps). Each entry is a sum of k products of
// values in [-1, 1); two correct summation orders differ by a fraction of k * eps in
// practice (measured: <= 0.75 for k = 64 in float, ~0.02 for k = 2^22), so the check
// fails above kCheckLimit. A missing or doubled block of k' terms of the sum moves an
// entry by about sqrt(k') / 3, far above the limit in double and for any k' >= 2^8 in float.
constexpr double kCheckLimit = 8.0;

// Set when any correctness check fails; main then exits with status 3 (ctest's
// bench_smoke relies on it).
bool g_any_check_failed = false;

template <class T>
void check_prism(operands& ops, const shape& s) {
  const std::size_t mn = static_cast<std::size_t>(s.m) * static_cast<std::size_t>(s.n);
  const T* A = reinterpret_cast<const T*>(ops.A.get());
  const T* B = reinterpret_cast<const T*>(ops.B.get());
  std::vector<T> ref(mn, T(0)), got(mn, T(0));
  try {
    const auto& ob = blas_library::get(blas_build::openblas_pthread);
    ob.set_threads(hardware_threads());
    ob.gemm<T>(s.transa, s.transb, s.m, s.n, s.k, T(1), A, ops.lda, B, ops.ldb, T(0), ref.data(),
               ops.ldc);
    prism::gemm<T>(s.transa, s.transb, s.m, s.n, s.k, T(1), A, ops.lda, B, ops.ldb, T(0),
                   got.data(), ops.ldc);
    if (std::find(g_opt->impls.begin(), g_opt->impls.end(), impl::prism_blas) != g_opt->impls.end()) {
      std::vector<T> dropin(mn, T(0));
      dropin_library::get().gemm<T>(s.transa, s.transb, s.m, s.n, s.k, T(1), A, ops.lda, B, ops.ldb, T(0),
                                    dropin.data(), ops.ldc);
      // Check the worse of the two against OpenBLAS: keep, per entry, the one further away.
      for (std::size_t i = 0; i < mn; ++i)
        if (!(std::fabs(double(dropin[i]) - double(ref[i])) <= std::fabs(double(got[i]) - double(ref[i]))))
          got[i] = dropin[i];
    }
  } catch (const std::exception& e) {
    ops.check_failed = true;
    g_any_check_failed = true;
    ops.check_note = std::string("check threw: ") + e.what();
    std::cerr << "prism_bench: CHECK " << type_letter<T>() << " " << s.transa << s.transb << " "
              << shape_text(s) << ": " << ops.check_note << "\n";
    return;
  }
  double worst = 0;
  for (std::size_t i = 0; i < mn; ++i) {
    const double d = std::fabs(double(got[i]) - double(ref[i]));
    worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(worst, d);
  }
  const double unit = double(s.k) * double(std::numeric_limits<T>::epsilon());
  ops.check_error = worst / unit;
  ops.check_failed = !(ops.check_error <= kCheckLimit);
  if (ops.check_failed) {
    g_any_check_failed = true;
    std::ostringstream note;
    note << "prism (or prism_blas) differs from OpenBLAS: max abs diff " << worst << " = " << ops.check_error
         << " k*eps";
    ops.check_note = note.str();
    std::cerr << "prism_bench: CHECK FAILED " << type_letter<T>() << " " << s.transa << s.transb
              << " " << shape_text(s) << ": " << ops.check_note << "\n";
  }
}

// ---------------------------------------------------------------------------------------
// Benchmarks

std::string g_last_impl;  // implementation of the previous benchmark run
std::map<std::string, double> g_spent;  // wall seconds each benchmark spent in its timing loops

void settle(const std::string& who) {
  if (who != g_last_impl && g_opt->settle_ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(g_opt->settle_ms));
  g_last_impl = who;
}

// Ends a benchmark run with an error. Google Benchmark 1.7.1 requires every repetition of
// a benchmark to report the same iteration count (ComputeStats aborts otherwise), and a
// run skipped before its loop reports 0, so the error is raised inside the first iteration.
void skip_run(benchmark::State& st, const std::string& why) {
  for (auto _ : st) {
    st.SkipWithError(why.c_str());
    break;
  }
}

template <class T>
void bm_gemm(benchmark::State& st, const std::string& id, shape s, impl which) {
  double& spent = g_spent[id];
  if (g_opt->budget_s > 0 && spent > g_opt->budget_s) {
    std::ostringstream why;
    why << "skipped: earlier repetitions took " << spent << " s (> --budget-s=" << g_opt->budget_s << ")";
    return skip_run(st, why.str());
  }
  operands* ops = nullptr;
  try {
    ops = &operands_for<T>(s);
  } catch (const std::exception& e) {
    return skip_run(st, std::string("allocation failed: ") + e.what());
  }
  const T* A = reinterpret_cast<const T*>(ops->A.get());
  const T* B = reinterpret_cast<const T*>(ops->B.get());
  T* C = reinterpret_cast<T*>(ops->C.get());
  const std::int64_t lda = ops->lda, ldb = ops->ldb, ldc = ops->ldc;
  const int nproc = hardware_threads();

  std::function<void()> call;
  int threads = 1;
  const blas_library* lib = nullptr;
  try {
    switch (which) {
      case impl::prism:
        threads = prism::default_context().threads();
        call = [=] { prism::gemm<T>(s.transa, s.transb, s.m, s.n, s.k, T(1), A, lda, B, ldb, T(1), C, ldc); };
        break;
      case impl::prism_blas: {
        const dropin_library& d = dropin_library::get();
        // The drop-in forwards small and wide calls to the openblas column's library: give
        // it the same nproc threads that column runs with.
        blas_library::get(blas_build::openblas_pthread).set_threads(nproc);
        threads = prism::default_context().threads();
        call = [=, &d] { d.gemm<T>(s.transa, s.transb, s.m, s.n, s.k, T(1), A, lda, B, ldb, T(1), C, ldc); };
        break;
      }
      case impl::openblas: lib = &blas_library::get(blas_build::openblas_pthread); threads = nproc; break;
      case impl::openblas_1t: lib = &blas_library::get(blas_build::openblas_serial); break;
      case impl::blis: lib = &blas_library::get(blas_build::blis_pthread); threads = nproc; break;
      case impl::blis_1t: lib = &blas_library::get(blas_build::blis_serial); break;
    }
  } catch (const std::exception& e) {
    return skip_run(st, e.what());
  }
  if (lib != nullptr) {
    // Right before the run: a library may be shared with another variant or with prism's
    // leaves (the serial builds), so its thread count is set every time.
    lib->set_threads(threads);
    call = [=] {
      lib->gemm<T>(s.transa, s.transb, s.m, s.n, s.k, T(1), A, lda, B, ldb, T(1), C, ldc);
    };
  }
  settle(to_string(which));

  const auto start = std::chrono::steady_clock::now();
  for (auto _ : st) {
    try {
      call();
    } catch (const std::exception& e) {
      st.SkipWithError((impl_name(which) + " threw: " + e.what()).c_str());
      break;
    }
    benchmark::ClobberMemory();
  }
  spent += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (st.error_occurred()) return;

  const double flops = prism::gemm_flops(prism::scalar_type_of<T>(), s.m, s.n, s.k);
  st.counters["gflops"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["flop"] = flops;
  st.counters["m"] = double(s.m);
  st.counters["n"] = double(s.n);
  st.counters["k"] = double(s.k);
  st.counters["threads"] = threads;
  std::string label = std::string("impl=") + impl_name(which) + " type=" + type_letter<T>() +
                      " trans=" + s.transa + s.transb + " shape=" + shape_text(s) +
                      " group=" + s.group;
  if (which == impl::prism && ops->check_error >= 0) st.counters["check_err_keps"] = ops->check_error;
  if (which == impl::prism && ops->check_failed) label += " CHECK_FAILED";
  st.SetLabel(label);
}

template <class T>
void bm_fma_peak(benchmark::State& st) {
  settle("fma_peak");
  const int threads = hardware_threads();
  const std::int64_t steps = std::int64_t{1} << 23;
  double flops = 0;
  for (auto _ : st) {
    flops = std::is_same_v<T, double> ? prism_probes::fma_peak_double(threads, steps)
                                      : prism_probes::fma_peak_float(threads, steps);
  }
  st.counters["gflops"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["gflops_per_thread"] =
      benchmark::Counter(flops * 1e-9 / threads, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["flop"] = flops;
  st.counters["threads"] = threads;
  st.counters["vector_bits"] = prism_probes::fma_vector_bytes() * 8;
  st.counters["pinned"] = prism_probes::fma_pinned() ? 1 : 0;
  st.SetLabel(std::string("impl=fma_peak type=") + type_letter<T>() + " isa=" + prism_probes::fma_isa() +
              " chains=" + std::to_string(prism_probes::fma_chains()));
}

// One call: allocates the probe's array, fills it, times the passes and frees it, so it
// holds no memory while the gemms run (and the operands of the last gemm are freed first).
// Google Benchmark's own time for it includes the fill; the counters are the passes'.
void bm_bandwidth(benchmark::State& st) {
  settle("bandwidth");
  g_ops = operands{};
  const int threads = hardware_threads();
  const int passes = std::max(g_opt->reps, 10);
  prism_probes::bandwidth_result r;
  for (auto _ : st) {
    try {
      r = prism_probes::read_bandwidth(threads, g_opt->bandwidth_mib << 20, passes);
    } catch (const std::exception& e) {
      st.SkipWithError((std::string("bandwidth probe failed: ") + e.what()).c_str());
      break;
    }
  }
  if (st.error_occurred()) return;
  st.counters["gbytes_per_s"] = r.best_bytes_per_s * 1e-9;
  st.counters["gbytes_per_s_median"] = r.median_bytes_per_s * 1e-9;
  st.counters["bytes"] = double(r.bytes);
  st.counters["passes"] = r.passes;
  st.counters["threads"] = r.threads;
  st.counters["pinned"] = r.pinned ? 1 : 0;
  st.SetLabel(std::string("impl=bandwidth isa=") + prism_probes::bandwidth_isa() + " passes=" +
              std::to_string(r.passes) + " (best kept)");
}

void configure(benchmark::internal::Benchmark* b, const options& o, int reps) {
  b->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(o.min_time)->Repetitions(reps)
      ->ReportAggregatesOnly(false);
}

// The kernel set a library picked for this CPU: OpenBLAS's core name (DYNAMIC_ARCH) or
// BLIS's sub-configuration. Both fall back on CPUs newer than the library (e.g. OpenBLAS
// 0.3.21 "Haswell", BLIS 0.9.0 "generic"); OPENBLAS_CORETYPE and BLIS_ARCH_TYPE override.
std::string library_core(blas_build b) {
  try {
    const blas_library& lib = blas_library::get(b);
    if (auto* f = reinterpret_cast<char* (*)()>(lib.symbol("openblas_get_corename"))) return f();
    // BLIS must be initialised first: with BLIS_ARCH_TYPE set, querying the id before
    // bli_init() aborts ("Accessed uninitialized context in gks").
    if (auto* init = reinterpret_cast<void (*)()>(lib.symbol("bli_init"))) init();
    auto* id = reinterpret_cast<int (*)()>(lib.symbol("bli_arch_query_id"));
    auto* name = reinterpret_cast<const char* (*)(int)>(lib.symbol("bli_arch_string"));
    if (id != nullptr && name != nullptr) return name(id());
    return "unknown";
  } catch (const std::exception& e) {
    return std::string("not loaded: ") + e.what();
  }
}

// The library an implementation times ("prism" for prism and the drop-in).
std::string library_of(impl i) {
  switch (i) {
    case impl::openblas:
    case impl::openblas_1t: return "openblas";
    case impl::blis:
    case impl::blis_1t: return "blis";
    default: return "prism";
  }
}

// The variables that choose a BLAS copy's kernels or threads, as this process sees them.
std::string blas_environment() {
  std::string found;
  for (const char* name : {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS",
                           "GOTO_NUM_THREADS", "OMP_NUM_THREADS", "BLIS_ARCH_TYPE", "BLIS_NUM_THREADS"})
    if (const char* v = std::getenv(name))
      found += (found.empty() ? "" : " ") + std::string(name) + "=" + v;
  return found.empty() ? "none" : found;
}

// --print-kernel-sets: one line per peer copy, "core <build> <kernel set>", one per prism
// leaf library, "leaf <openblas|blis> <kernel set>", then BLIS's
// architecture ids, "blis-arch <id> <name>" (BLIS_ARCH_TYPE takes the id: BLIS 0.9 reads
// the variable as a number, so a name there reads as 0). Each line is flushed at once: under
// a BLIS_ARCH_TYPE whose configuration this build lacks, BLIS aborts in bli_init, and the
// lines before tell bench/run.py how far it got.
int print_kernel_sets() {
  for (blas_build b : {blas_build::openblas_pthread, blas_build::openblas_serial,
                       blas_build::blis_pthread, blas_build::blis_serial})
    std::cout << "core " << prism::detail::to_string(b) << " " << library_core(b) << std::endl;
  // prism's own leaf copies: the set prism chose for each library on this CPU (its probe's
  // fastest where the features leave the order open), whatever this environment forces.
  for (prism::leaf_backend lb : {prism::leaf_backend::openblas, prism::leaf_backend::blis}) try {
      std::cout << "leaf " << prism::to_string(lb) << " " << prism::detail::leaf_library(lb).kernel_name() << std::endl;
    } catch (const std::exception&) {
    }
  try {
    const blas_library& lib = blas_library::get(blas_build::blis_pthread);
    if (auto* name = reinterpret_cast<const char* (*)(int)>(lib.symbol("bli_arch_string"))) {
      // arch_t ends with "generic" in BLIS 0.9 (and 1.0); the bound only guards the loop.
      for (int id = 0; id < 64; ++id) {
        const char* c = name(id);
        if (c == nullptr) break;
        const std::string n = c;
        std::cout << "blis-arch " << id << " " << n << "\n";
        if (n == "generic") break;
      }
    }
  } catch (const std::exception&) {
  }
  std::cout << std::flush;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options opt = parse_options(argc, argv);
  g_opt = &opt;
  std::vector<shape> shapes = opt.shapes.empty() ? shape_set(opt.set) : opt.shapes;
  const std::string set_name = opt.shapes.empty() ? opt.set : "custom";
  if (!opt.picks.empty()) {
    for (const shape& p : opt.picks)
      if (std::none_of(shapes.begin(), shapes.end(), [&](const shape& s) { return same_shape(s, p); }))
        usage_error("--pick: " + shape_text(p) + ":" + p.transa + p.transb + " is not in the " + set_name + " set");
    std::erase_if(shapes, [&](const shape& s) {
      return std::none_of(opt.picks.begin(), opt.picks.end(), [&](const shape& p) { return same_shape(s, p); });
    });
  }
  if (opt.print_kernel_sets) return print_kernel_sets();
  if (!opt.type_given && (set_name == "quick" || set_name == "peers")) opt.floats = false;
  if (!opt.impls_given && set_name == "dropin") opt.impls = {impl::prism, impl::prism_blas, impl::openblas};
  if (!opt.only.empty())
    std::erase_if(opt.impls, [&](impl i) { return library_of(i) != opt.only; });
  if (opt.list_shapes) {
    for (const shape& s : shapes) std::cout << shape_text(s) << ":" << s.transa << s.transb << "\n";
    return 0;
  }
  if (opt.list_impls) {
    for (impl i : opt.impls) std::cout << to_string(i) << "\n";
    return 0;
  }
  if (opt.min_time <= 0) opt.min_time = set_name == "quick" ? 0.2 : set_name == "peers" ? 0.3 : 0.5;
  if (opt.budget_s < 0) opt.budget_s = set_name == "quick" ? 5 : set_name == "peers" ? 10 : 30;
  // The peers set's tall shapes hold 1-4 GiB of operands and take seconds per repetition in
  // the slow kernel sets, each of which runs them in a process of its own (bench/run.py):
  // at most 3 repetitions there keep the set's run time down.
  if (opt.reps_large <= 0) opt.reps_large = set_name == "peers" ? std::min(opt.reps, 3) : opt.reps;
  constexpr double kLargeBytes = double(std::size_t{1} << 30);

  const std::string model = cpu_model();
  const int nproc = hardware_threads();
  const std::string date = now_text();
  const std::string blas_env = blas_environment();
  std::string types = opt.doubles && opt.floats ? "d,s" : opt.doubles ? "d" : "s";
  std::cerr << "prism_bench: " << model << ", nproc " << nproc << ", " << date << ", prism "
            << prism::version() << " (" << prism::default_context().describe() << "), set "
            << set_name << ", types " << types << ", reps " << opt.reps << " (" << opt.reps_large
            << " above 1 GiB of operands), min time " << opt.min_time << " s, budget " << opt.budget_s
            << " s per benchmark" << (opt.label.empty() ? "" : ", kernel set " + opt.label)
            << "; BLAS environment: " << blas_env << "\n";

  benchmark::AddCustomContext("cpu_model", model);
  benchmark::AddCustomContext("nproc", std::to_string(nproc));
  benchmark::AddCustomContext("prism_version", prism::version());
  benchmark::AddCustomContext("prism_context", prism::default_context().describe());
  benchmark::AddCustomContext("prism_machine", prism::default_description().summary());
  benchmark::AddCustomContext("shape_set", set_name);
  benchmark::AddCustomContext("types", types);
  benchmark::AddCustomContext("reps", std::to_string(opt.reps));
  benchmark::AddCustomContext("reps_large", std::to_string(opt.reps_large));
  auto num = [](double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  };
  benchmark::AddCustomContext("min_time_s", num(opt.min_time));
  benchmark::AddCustomContext("budget_s", num(opt.budget_s));
  benchmark::AddCustomContext("start_time", date);
  benchmark::AddCustomContext("fma_isa", prism_probes::fma_isa());
  benchmark::AddCustomContext("bandwidth_isa", prism_probes::bandwidth_isa());
  benchmark::AddCustomContext("bandwidth_mib", std::to_string(opt.bandwidth_mib));
  benchmark::AddCustomContext("blas_env", blas_env);
  const auto [caches, l2_bytes] = cache_description();
  benchmark::AddCustomContext("cache_levels", caches);
  benchmark::AddCustomContext("l2_cache_bytes", std::to_string(l2_bytes));
  if (!opt.label.empty()) benchmark::AddCustomContext("kernel_set", opt.label);
  for (const auto& [key, value] : opt.context) benchmark::AddCustomContext(key, value);
  std::string cores;
  for (blas_build b : {blas_build::openblas_pthread, blas_build::openblas_serial,
                       blas_build::openblas64_pthread, blas_build::blis_pthread,
                       blas_build::blis_serial}) {
    const std::string name = prism::detail::to_string(b), core = library_core(b);
    benchmark::AddCustomContext("lib_" + name, prism::detail::library_path(b));
    benchmark::AddCustomContext("core_" + name, core);
    cores += (cores.empty() ? "" : ", ") + name + "=" + core;
  }
  const std::string sched = kernel_sched_options();
  benchmark::AddCustomContext("kernel_sched_options", sched);
  std::cerr << "prism_bench: BLAS kernels: " << cores << "; kernel scheduler options: " << sched << "\n";

  // The machine probes run first and again last (report.py keeps the best): the VM's cores
  // are shared with other guests and a single measurement may land in a busy moment.
  const int probe_reps = std::max(opt.reps, 5);
  auto register_probes = [&](const char* when) {
    if (opt.fma && opt.doubles)
      configure(benchmark::RegisterBenchmark((std::string("fma_peak/d/") + when).c_str(), bm_fma_peak<double>), opt, probe_reps);
    if (opt.fma && opt.floats)
      configure(benchmark::RegisterBenchmark((std::string("fma_peak/s/") + when).c_str(), bm_fma_peak<float>), opt, probe_reps);
    if (opt.bandwidth)  // one call, best of its own passes
      benchmark::RegisterBenchmark((std::string("bandwidth/read/") + when).c_str(), bm_bandwidth)
          ->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(1);
  };
  if (opt.probes_first) register_probes("first");
  for (const shape& s : opt.gemm ? shapes : std::vector<shape>{}) {
    for (int t = 0; t < 2; ++t) {
      const bool dbl = t == 0;
      if ((dbl && !opt.doubles) || (!dbl && !opt.floats)) continue;
      const int reps = operand_bytes(s, dbl ? sizeof(double) : sizeof(float)) > kLargeBytes ? opt.reps_large : opt.reps;
      for (impl which : opt.impls) {
        const std::string name = std::string("gemm/") + (dbl ? "d" : "s") + "/" + s.transa +
                                 s.transb + "/" + shape_text(s) + "/" + impl_name(which);
        auto* b = dbl ? benchmark::RegisterBenchmark(name.c_str(), bm_gemm<double>, name, s, which)
                      : benchmark::RegisterBenchmark(name.c_str(), bm_gemm<float>, name, s, which);
        configure(b, opt, reps);
      }
    }
  }
  if (opt.probes_last) register_probes("last");

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_ops = operands{};
  if (g_any_check_failed) {
    std::fprintf(stderr, "prism_bench: prism's result failed the check against OpenBLAS (see above)\n");
    return 3;
  }
  return 0;
}
