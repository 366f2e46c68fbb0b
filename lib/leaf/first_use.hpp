// lib/leaf/first_use.hpp — the streaming leaf's crossovers measured on this machine the
// first time a long call needs them (lib/machine/wisdom.hpp keeps them per CPU).
//
// Where prism's own streaming kernels overtake the BLAS leaves depends on the CPU, the
// caches and how well each library's kernels suit them: the model's ratios (a multiple of
// one core's L2) held on the machine they were measured on and were off by 16x on another
// (docs/performance.md). `prism tune` measures them in a minute; without its machine file,
// the first call that is itself long and whose leaves could be streaming ones measures
// them briefly (about 0.1 s, never more than first_use_budget_seconds), once per machine:
// the answers are kept in the user's cache folder and read by every later process.
#pragma once

#include <prism/machine.hpp>
#include <prism/types.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace prism::detail {

/// The longest a first-use measurement may take, in seconds: each series stops when the
/// next size would pass it, and what was not measured keeps the model's value.
inline constexpr double first_use_budget_seconds = 0.2;

/// A call triggers the measurement only when its own modelled time (flops over threads x
/// the description's rank_flops_per_thread) is at least this many seconds: the measurement
/// then adds less than the call itself takes, once per machine.
inline constexpr double first_use_long_seconds = 0.3;

/// What one measurement found.
struct first_use_result {
  std::map<machine_key, double> values;  ///< crossovers measured (keys it could not decide are absent)
  std::string text;                      ///< one line per series, e.g. "stream_far_bytes 64x64 NN d: ..."
  double seconds = 0;                    ///< how long it took
  bool kept = false;                     ///< written to this CPU's file (false: folder not writable)
};

/// Measures the streaming crossovers now on the calling thread (stream_bytes: 8x8 NN,
/// stream_dot_bytes: 32x32 TN, stream_far_bytes: 64x64 NN in double; stream_complex_k: 8x8
/// NN complex double), the streaming leaf against the faster BLAS leaf over a few sizes
/// around the machine's L2 (A and B laid out as a k cut leaves them), within
/// first_use_budget_seconds. A series the streaming leaf wins from some size on gives that
/// size; one it loses clearly at its largest size (below 0.9x) gives 1e18 ("never"); an
/// undecided one is left out. Does not keep anything.
first_use_result measure_first_use(const machine_description& mc);

/// Runs measure_first_use once per process, keeping its values (lib/machine/wisdom.hpp), when mc takes
/// first-use values (machine_description::first_use: no machine file), they are not known
/// yet, PRISM_LEAF is auto and the call (m x n, `flops`, `threads` threads) is long and
/// could have streaming leaves (m, n <= 128). Returns true when it ran in this call. One
/// atomic load once done.
bool first_use_before_call(const machine_description& mc, leaf_backend leaf, std::int64_t m, std::int64_t n,
                           double flops, int threads);

/// The streaming crossover keys a first-use measurement decides.
const std::vector<machine_key>& first_use_keys();

}  // namespace prism::detail
