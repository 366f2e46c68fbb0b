// lib/environment/environment.hpp — every environment variable prism reads, read in one place.
//
// Nothing else in lib/ calls getenv (scripts/check_tree.py fails the tree when something
// does). read_environment() takes the text of every variable in the table of
// environment.cpp in one go; the values prism uses process-wide (PRISM_VERBOSE,
// PRISM_STATS, the drop-ins' routes and backends, PRISM_SIMD, the leaf libraries' paths,
// PRISM_GPU, the test hooks) come from process_environment(), taken once on first use. The values a
// context holds (PRISM_NUM_THREADS ... PRISM_RANK_BANDWIDTH) and the machine's (the
// topology, PRISM_MACHINE) are kept as text: their owners check them where a context or a
// description is made (context::from_env throws naming the variable; the drop-in turns the
// error into "recursion off").
//
// A bad process-wide value is said once, in the one form the drop-in uses: "prism: NAME:
// what is wrong; what happens next" (e.g. "prism: PRISM_SIMD: 'avx9' is not auto, avx2 or
// scalar; prism's kernels run the best target this CPU has"). Nothing is clamped: a value
// out of range is bad like any other. Unset and empty are the same: unset.
//
// This is the ground floor of lib/: it includes no other lib folder.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace prism::detail {

/// Prints "prism: LINE" on stderr the first time this process is given LINE.
void say_once(const std::string& line);

/// A value checked when the environment was read: `value` is what prism uses (the fallback
/// when the text was bad), `problem` the line that says so ("" when the text was good).
template <class T>
struct checked {
  T value{};
  std::string problem;  ///< e.g. "PRISM_STATS: 'yes' is not 0 or 1; no statistics"
  /// The value; the first use of a bad one in this process says its line (say_once).
  const T& get() const {
    if (!problem.empty()) say_once(problem);
    return value;
  }
};

/// PRISM_BLAS_ROUTE and PRISM_SCALAPACK_ROUTE: who computes a drop-in call (gpu: the
/// GPUs, forced; PRISM_BLAS_ROUTE only).
enum class route_choice { automatic, prism, backend, gpu };

/// PRISM_SIMD: the widest target prism's own kernels may run.
enum class simd_choice { automatic, avx2, scalar };

/// PRISM_TEST_FAULT=rank:P:alloc|setup|nan|stall (tests only; lib/mpi/rank_exchange.cpp says what
/// each kind does): process P's local step fails in that way.
struct test_fault {
  enum class kind { none, alloc, setup, nan, stall };
  int process = -1;  ///< -1: no fault
  kind what = kind::none;
};

/// PRISM_GPU: which devices the GPU level uses. auto (or unset): the CUDA devices, if any;
/// off: none; emulate:N:SIZE[:delay]: N emulated devices of SIZE bytes each (tests, and
/// runs on a host without a GPU), delay adding random delays from a fixed seed.
struct gpu_choice {
  enum class mode { automatic, off, emulate };
  mode what = mode::automatic;
  int count = 0;            ///< emulate: devices, 1..64
  std::uint64_t bytes = 0;  ///< emulate: memory of each, >= 1 MiB
  bool delay = false;       ///< emulate: random delays before copies and kernels
};

/// Checks PRISM_GPU's text (read_environment uses it; tests call it directly). Sizes take a
/// K, M or G suffix (powers of 1024: "64M" is 67108864); "" is auto. A bad text is auto,
/// with the line that says so.
checked<gpu_choice> parse_gpu_choice(const std::string& text);

/// A size or count in decimal digits with an optional K, M or G suffix (powers of 1024,
/// either case), e.g. "64M" -> 67108864: the value, or why the text is not one (no sign, no
/// spaces, nothing after the suffix, within 64 bits). prism::parse_size throws the why.
checked<std::uint64_t> parse_size_text(const std::string& text);

/// The text or checked value of every environment variable prism reads.
struct environment {
  // A context's values, as text (context::from_env checks each, in this order).
  std::string num_threads;     ///< PRISM_NUM_THREADS
  std::string max_memory;      ///< PRISM_MAX_MEMORY
  std::string small_flops;     ///< PRISM_SMALL_FLOPS
  std::string extra_depth;     ///< PRISM_EXTRA_DEPTH
  std::string cache_level;     ///< PRISM_CACHE_LEVEL
  std::string leaf;            ///< PRISM_LEAF
  std::string leaf_kernels;    ///< PRISM_LEAF_KERNELS (also the leaf libraries', process-wide)
  std::string rank_flops;      ///< PRISM_RANK_FLOPS
  std::string rank_bandwidth;  ///< PRISM_RANK_BANDWIDTH

  // The machine (topology::from_env: the first of the three that is set wins).
  std::string topology;         ///< PRISM_TOPOLOGY
  std::string hwloc_xmlfile;    ///< HWLOC_XMLFILE (hwloc's own variable, honoured alike)
  std::string hwloc_synthetic;  ///< HWLOC_SYNTHETIC (likewise)
  std::string machine;          ///< PRISM_MACHINE
  /// The per-user machine file: $XDG_CACHE_HOME/prism/machine when XDG_CACHE_HOME is an
  /// absolute path, else $HOME/.cache/prism/machine, else "".
  std::string machine_file;
  /// The folder of that file, where prism also keeps what it measured at first use
  /// (lib/machine/wisdom.hpp): $XDG_CACHE_HOME/prism, else $HOME/.cache/prism, else "".
  std::string cache_dir;
  /// PRISM_FIRST_USE: 1 (default) measures what the model cannot know the first time a long
  /// call needs it and keeps it per CPU in cache_dir; 0 measures no crossovers at run time
  /// and neither reads nor writes anything there (the model's values; the leaf libraries'
  /// kernel probe then runs in each process).
  checked<bool> first_use;

  // Reporting.
  checked<int> verbose;  ///< PRISM_VERBOSE: 0 quiet, 1 a line per call, 2 with its plan
  checked<bool> stats;   ///< PRISM_STATS: 0 or 1

  // The drop-ins.
  std::string blas_backend;             ///< PRISM_BLAS_BACKEND: path or soname
  checked<route_choice> blas_route;     ///< PRISM_BLAS_ROUTE
  std::string scalapack_backend;        ///< PRISM_SCALAPACK_BACKEND
  checked<route_choice> scalapack_route;  ///< PRISM_SCALAPACK_ROUTE

  // prism's kernels and its private leaf libraries.
  checked<simd_choice> simd;           ///< PRISM_SIMD
  std::string lib_openblas_serial;     ///< PRISM_LIB_OPENBLAS_SERIAL: a path replacing the built-in one
  std::string lib_openblas_pthread;    ///< PRISM_LIB_OPENBLAS_PTHREAD
  std::string lib_openblas64_pthread;  ///< PRISM_LIB_OPENBLAS64_PTHREAD
  std::string lib_blis_serial;         ///< PRISM_LIB_BLIS_SERIAL
  std::string lib_blis_pthread;        ///< PRISM_LIB_BLIS_PTHREAD

  // Test hooks.
  /// PRISM_TEST_OPENBLAS_DETECTS: stands in for OpenBLAS's own detection (test_leaf_env_disagree).
  std::string test_openblas_detects;
  /// PRISM_TEST_BACKEND_KERNELS: stands in for the kernel set the drop-in's backend reports
  /// (the drop-in tests that assert its routing among calls it does not take for kernels).
  std::string test_backend_kernels;
  checked<test_fault> fault;  ///< PRISM_TEST_FAULT

  // The GPU level.
  checked<gpu_choice> gpu;  ///< PRISM_GPU
};

/// Reads every variable now (the public from_env() functions: they read when called).
environment read_environment();

/// The process's environment: read_environment() once, on first use (thread-safe).
const environment& process_environment();

/// Tests only: replaces the process's environment (e.g. with read_environment() after a
/// setenv). Not thread-safe: no other thread may be reading it.
void set_process_environment(environment e);

/// A variable of the BLAS libraries prism loads (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE,
/// BLIS_ARCH_TYPE), read now: they belong to the host, which may set them at any time
/// before prism's copies load, and scoped_env changes them while they load. nullptr when
/// unset; throws std::logic_error for any other name.
const char* backend_variable(const char* name);

/// Sets or unsets environment variables for its lifetime and then restores each exactly as
/// it was: the same text, or unset. setenv/unsetenv race with a getenv on another thread
/// (glibc's environment has no lock for readers), so prism uses this only inside the
/// std::call_once that loads its leaf libraries, once per process.
class scoped_env {
 public:
  /// `changes`: (name, value) pairs; a value of nullptr unsets the variable.
  explicit scoped_env(const std::vector<std::pair<const char*, const char*>>& changes);
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
  /// Restores every variable it changed, last change first.
  ~scoped_env();

 private:
  struct saved {
    std::string name;
    bool was_set;
    std::string value;
  };
  std::vector<saved> saved_;
};

}  // namespace prism::detail
