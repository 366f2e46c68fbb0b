// lib/leaf/first_use.hpp — the streaming leaf's crossovers measured on this machine the
// first time a long call needs them (lib/machine/wisdom.hpp keeps them per CPU).
//
// Where prism's own streaming kernels overtake the BLAS leaves depends on the CPU, the
// caches and how well each library's kernels suit them: the model's ratios (a multiple of
// one core's L2) held on the machine they were measured on and were off by 16x on another
// (docs/performance.md). `prism tune` measures them in a minute; without its machine file
// (or for a key a file from before that key does not list), the first call that is itself
// long and whose leaves could be streaming ones measures them briefly (at most
// first_use_budget_seconds), once per machine: the answers are kept in the user's cache
// folder and read by every later process.
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
inline constexpr double first_use_budget_seconds = 0.5;

/// A call triggers the measurement only when its own modelled time (call_seconds) is at
/// least this many seconds: the measurement (first_use_budget_seconds at most) then runs in
/// a call that itself takes a tenth of a second or more, once per machine.
inline constexpr double first_use_long_seconds = 0.1;

/// A call's modelled seconds on `threads` threads: its flops at the description's
/// rank_flops_per_thread a thread, or its operands' `bytes` read once at
/// host_copy_bandwidth a thread, whichever is longer (a thin product is as long as reading
/// its operands). Example: 32 x 32 x 2^22 double on 2 threads: 8.6 GFlop at 2 x 50 GF/s is
/// 0.086 s, its 2 GiB of A and B at 2 x 8 GB/s 0.134 s; 0.134 s.
double call_seconds(const machine_description& mc, double flops, double bytes, int threads);

/// What one measurement found.
struct first_use_result {
  std::map<machine_key, double> values;  ///< crossovers measured (keys it could not decide are absent)
  std::string text;                      ///< one line per series, e.g. "stream_far_bytes 64x64 NN d: ..."
  double seconds = 0;                    ///< how long it took
  bool kept = false;                     ///< written to this CPU's file (false: folder not writable)
};

/// The bytes of A and B the first-use series time: `near` for stream_bytes (8 x 8 NN), `far`
/// for stream_dot_bytes (32 x 32 TN) and stream_far_bytes (64 x 64 NN). `near` from an
/// eighth of one core's L2 (in cache), `far` from half of one, both to 8 L2s, at most
/// 16 MiB (from the next level), then from memory (from_memory), as a long call's leaves
/// read, at twice the last-level cache: on x86 the size before again with A and B evicted
/// from every cache before each call (evicted_last), at any cache size; elsewhere that size
/// itself where it is at most 64 MiB. Whether the streaming leaf leads from memory depends
/// on the CPU (the 64 x 64 panel kernel at 64 MiB: 1.6x on an AVX-512 EPYC family 26,
/// 0.8-0.9x on an AVX2 Zen 3; docs/planning.md). An L3 at most half the largest size (a
/// small one) needs no further size: from_memory with it. Example: 512 KiB L2s and a 32 MiB
/// L3: near 64 KiB, 256 KiB, 1, 4 and 64 MiB; far 256 KiB, 1, 4 and 64 MiB (on x86 the
/// "64 MiB" timed as 4 MiB evicted). `rank_k`: the bytes of A of every rank-k series' leaf,
/// twice one core's L2 (1 MiB there), read from memory, as a long rank-k call's leaves' A
/// is: evicted from every cache before each call on x86 (`rank_k_span` = `rank_k`),
/// elsewhere each call on the next slice of `rank_k_span` bytes (twice the last-level cache
/// where that is at most 64 MiB, else 64 MiB: a larger cache holds part of it).
struct first_use_sizes {
  std::vector<double> near, far;
  bool from_memory = false;
  double rank_k = 0, rank_k_span = 0;
  bool evicted_last = false;  ///< the last size is the size before it, its operands evicted
};
first_use_sizes first_use_bytes(const machine_description& mc);

/// r without the values of the keys mc does not take from first use (those a machine file
/// lists stand, and are not kept).
first_use_result taken_by(const machine_description& mc, first_use_result r);

/// The crossover of a series over `sizes` (the ratios best BLAS / streaming measured, maybe
/// fewer): the smallest size from which the streaming leaf is ahead or tied (0.97) at every
/// larger size measured; 1e18 ("never") when it is behind at the largest, that size was
/// measured from memory (`memory_last`, all sizes measured) and it is behind at the size
/// before too (one timing never decides alone), or, measured only within the caches, when
/// it lost clearly at the largest (below 0.9); 0 (undecided: the model's value) otherwise.
double first_use_crossover(const std::vector<double>& sizes, const std::vector<double>& ratios, bool memory_last);

/// Measures the streaming crossovers now on the calling thread (stream_bytes: 8x8 NN,
/// stream_dot_bytes: 32x32 TN, stream_far_bytes: 64x64 NN in double; stream_complex_k: 8x8
/// NN complex double), the streaming leaf against the faster BLAS leaf over
/// first_use_bytes's sizes (A and B laid out as a k cut leaves them), within
/// first_use_budget_seconds. Each series gives first_use_crossover's value: a size, 1e18
/// ("never"), or, undecided, nothing (the model's value stays). Does not keep anything.
first_use_result measure_first_use(const machine_description& mc);

/// Runs measure_first_use once per process, keeping its values (lib/machine/wisdom.hpp), when
/// one of its keys takes first-use values in mc (machine_description::first_use(k): no
/// machine file lists it; only such keys' values are kept), they are not known yet,
/// PRISM_LEAF is auto and the call (m x n, `flops`, operands of `bytes`, `threads`
/// threads) is long and could have streaming leaves (m, n <= 128). Returns true when it ran
/// in this call. One atomic load once done.
bool first_use_before_call(const machine_description& mc, leaf_backend leaf, std::int64_t m, std::int64_t n,
                           double flops, double bytes, int threads);

/// The streaming crossover keys a first-use measurement decides.
const std::vector<machine_key>& first_use_keys();

/// The marker a kept measurement leaves, e.g. "measured in 0.412 s, 3 of 4 decided" (of
/// `keys` keys).
std::string first_use_summary(const first_use_result& r, std::size_t keys);

/// Keeps r's values for this process and in its set (lib/machine/wisdom.hpp), with the
/// marker `marker: first_use_summary(r, keys)` that says they were measured; false when the
/// file could not be written.
bool keep_first_use(const std::string& marker, std::size_t keys, const first_use_result& r);

/// The longest the first-use measurement of one type's rank-k limits may take, in seconds.
inline constexpr double first_use_rank_k_budget_seconds = 0.4;

/// A rank-k call triggers its type's measurement from this many modelled seconds
/// (call_seconds): the Gram matrix of a 32 x 2^22 double A is 0.067 s on 2 threads by the
/// model. The measurement (0.11-0.23 s a type on an AVX2 Zen 3, both triangles) costs more
/// than such a call, once per machine: its answers are kept.
inline constexpr double first_use_rank_k_long_seconds = 0.05;

/// The n of the streaming rank-k leaf's first-use series of type t: 4, 8, 16, 32, 64, 96,
/// 128 in the N form; in the T form from 8 (float: from 16), where the rule starts.
std::vector<std::int64_t> first_use_rank_k_ns(scalar_type t, bool n_form);

/// The largest n of `ns` (ascending) the streaming rank-k leaf may take, from the ratios
/// best BLAS / streaming measured there (maybe fewer than ns): the n before the first one
/// behind (below 0.97) that is followed by another behind or ends the series (one behind
/// between two ahead is noise); 1 (none) when that is the first n; the last n measured
/// when it is never behind; 0 (undecided) with fewer than two measured. Example, ns 4, 8,
/// 16, 32, 64: ratios 1.8, 0.95, 1.2, 0.9, 0.8 give 16; 0.6, 0.7 give 1.
double first_use_n_limit(const std::vector<std::int64_t>& ns, const std::vector<double>& ratios);

/// Measures type t's streaming rank-k limits now (stream_rank_k_{u,l}{n,t}_X for t = X):
/// the streaming rank-k leaf against the faster BLAS leaf's ?syrk (?herk for a complex t),
/// upper and lower triangle, at first_use_rank_k_ns's n, A of first_use_bytes's `rank_k`
/// bytes from memory (see first_use_sizes), the N form first, within `budget` seconds;
/// first_use_n_limit's value for each triangle and form decided. Does not keep anything.
first_use_result measure_rank_k_first_use(const machine_description& mc, scalar_type t,
                                          double budget = first_use_rank_k_budget_seconds);

/// The marker of type t's kept rank-k measurement, e.g. "streaming_rank_k_triangles_d" (a
/// set kept before the limits had a triangle has "streaming_rank_k_d": measured again).
std::string first_use_rank_k_marker(scalar_type t);

/// Type t's four rank-k limits a first use measures: upper N, upper T, lower N, lower T (a
/// list built once, which lives as long as the process).
const std::vector<machine_key>& first_use_rank_k_keys(scalar_type t);

/// first_use_before_call for a rank-k call of type t (n x n, `flops`, A of `bytes`):
/// measure_rank_k_first_use once per process and type, kept, when the call is long
/// (first_use_rank_k_long_seconds) and could have streaming leaves (n <= 128).
bool first_use_before_rank_k(const machine_description& mc, leaf_backend leaf, scalar_type t, std::int64_t n,
                             double flops, double bytes, int threads);

/// The longest the first-use timing of the BLAS leaf classes may take, in seconds.
inline constexpr double first_use_blas_leaves_budget_seconds = 0.35;

/// Times the BLAS leaf classes now (measure_blas_leaves, lib/leaf/backend/blas_leaf_rule.hpp)
/// and keeps them, once per process, when the call is double with m, n >= 128 (its leaves
/// could be of either class), long (first_use_long_seconds), PRISM_LEAF is auto, first use
/// is on and no machine file lists the streaming crossovers, the two leaf libraries'
/// kernels are equally wide (else the width decides) and no timing on their present kernel
/// sets is kept. Returns true when it ran in this call.
bool first_use_before_blas_leaves(const machine_description& mc, leaf_backend leaf, scalar_type t, std::int64_t m,
                                  std::int64_t n, double flops, double bytes, int threads);

}  // namespace prism::detail
