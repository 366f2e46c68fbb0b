// prism/machine.hpp — the machine a call is planned for, as one value: its topology (cores,
// NUMA domains, caches and which cores share them), its CPU and SIMD width, and the leaf
// rates and crossovers prism's rules read, each either measured on it (`prism tune`) or
// supplied by a model written against its own sizes.
#pragma once

#include <prism/topology.hpp>
#include <prism/types.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace prism {

/// The thresholds prism's planner and leaf rules read, and the sizes prism's own kernels
/// work in (k-chunks, prefetch distance: the `_bytes` keys from stream_outer_chunk_bytes
/// on). Each is measured on this machine
/// by `prism tune` or, where no machine file gives it, computed by the model from the
/// machine's cache sizes and SIMD width (machine_description::model_value says how).
enum class machine_key {
  small_flops,          ///< calls below this many real flops run as one leaf (PRISM_SMALL_FLOPS)
  stream_bytes,         ///< streaming leaf, m, n <= 16 real and tiled outer kernel: from this many bytes of A and B
  stream_far_bytes,     ///< streaming 48..64-wide outer leaves (double), rank-k leaf n = 128: from this many bytes of A and B
  stream_complex_k,     ///< streaming leaf, m, n <= 16 complex: from this k
  dropin_model_flops,   ///< the drop-in's rate model decides calls from this many flops (below: backend)
  dropin_efficiency,    ///< the drop-in's rate model: prism's rate as a share of threads x its leaf rate
  stream_outer_chunk_bytes,  ///< streaming outer kernel: bytes of L and R per k-chunk that its register tiles share
  stream_dot_chunk_bytes,    ///< streaming dot kernel: likewise
  stream_tile_chunk_bytes,   ///< streaming leaf above 16 x 16: bytes of op(A) and op(B) per k-chunk its blocks share
  stream_prefetch_bytes,     ///< streaming kernels: prefetch distance over all streams when k is one chunk
  syrk_chunk_bytes,          ///< streaming rank-k leaf: bytes of op(A) per k-chunk
  rank_flops_per_thread,     ///< rank planning: one thread's modelled flop rate, flop/s (context::rank_flops)
  rank_bandwidth,            ///< rank planning: the bandwidth one rank receives at, bytes/s (context::rank_bandwidth)
  stream_dot_bytes,          ///< streaming dot kernel ('TN', m n <= 1024 above 16): from this many bytes of A and B
  parallel_reduce_bytes,     ///< thread level: a k cut's partial C blocks are added on all its threads from this many bytes of C
  gpu_flops_s,               ///< GPU level: one device's sgemm rate, flop/s
  gpu_flops_d,               ///< GPU level: one device's dgemm rate, flop/s
  gpu_flops_c,               ///< GPU level: one device's cgemm rate, real flop/s
  gpu_flops_z,               ///< GPU level: one device's zgemm rate, real flop/s
  gpu_memory_bandwidth,      ///< GPU level: a device's memory bandwidth, bytes/s (thin products read at it)
  gpu_link_in,               ///< GPU level: host -> device bytes/s from pinned memory
  gpu_link_out,              ///< GPU level: device -> host bytes/s into pinned memory
  gpu_memory,                ///< GPU level: bytes of device memory a plan assumes when no device says (prism plan --gpus)
  gpu_staging_bytes,         ///< GPU level: one pinned staging buffer (the ring host memory crosses the link through)
  gpu_register_bandwidth,    ///< GPU level: bytes/s a device pins (registers) the caller's memory at
  host_copy_bandwidth,       ///< bytes/s one host thread copies memory at (staging for the GPU level)
  stream_rank_k_un_s,        ///< streaming rank-k leaf, upper triangle, trans 'N', float: for n up to this (1: none)
  stream_rank_k_un_d,        ///< likewise, double (the model's: and n = 128 below the model's stream_far_bytes)
  stream_rank_k_un_c,        ///< likewise, complex float (herk and syrk)
  stream_rank_k_un_z,        ///< likewise, complex double (the model's: n = 128 as double)
  stream_rank_k_ut_s,        ///< streaming rank-k leaf, upper triangle, trans 'T' / 'C', float: for n from 16 up to this (1: none)
  stream_rank_k_ut_d,        ///< likewise, double: n from 8
  stream_rank_k_ut_c,        ///< likewise, complex float: n from 8
  stream_rank_k_ut_z,        ///< likewise, complex double: n from 8
  stream_rank_k_ln_s,        ///< as stream_rank_k_un_s for the lower triangle (a BLAS can be faster at one triangle)
  stream_rank_k_ln_d,        ///< as stream_rank_k_un_d, lower triangle
  stream_rank_k_ln_c,        ///< as stream_rank_k_un_c, lower triangle
  stream_rank_k_ln_z,        ///< as stream_rank_k_un_z, lower triangle
  stream_rank_k_lt_s,        ///< as stream_rank_k_ut_s, lower triangle
  stream_rank_k_lt_d,        ///< as stream_rank_k_ut_d, lower triangle
  stream_rank_k_lt_c,        ///< as stream_rank_k_ut_c, lower triangle
  stream_rank_k_lt_z,        ///< as stream_rank_k_ut_z, lower triangle
};

/// Every machine_key, in the order the text form lists them.
inline constexpr machine_key all_machine_keys[] = {
    machine_key::small_flops, machine_key::stream_bytes, machine_key::stream_far_bytes, machine_key::stream_dot_bytes,
    machine_key::stream_complex_k, machine_key::dropin_model_flops, machine_key::dropin_efficiency,
    machine_key::stream_outer_chunk_bytes, machine_key::stream_dot_chunk_bytes, machine_key::stream_tile_chunk_bytes,
    machine_key::stream_prefetch_bytes, machine_key::syrk_chunk_bytes, machine_key::parallel_reduce_bytes,
    machine_key::rank_flops_per_thread, machine_key::rank_bandwidth, machine_key::gpu_flops_s, machine_key::gpu_flops_d,
    machine_key::gpu_flops_c, machine_key::gpu_flops_z, machine_key::gpu_memory_bandwidth, machine_key::gpu_link_in,
    machine_key::gpu_link_out, machine_key::gpu_memory, machine_key::gpu_staging_bytes, machine_key::gpu_register_bandwidth,
    machine_key::host_copy_bandwidth, machine_key::stream_rank_k_un_s, machine_key::stream_rank_k_un_d,
    machine_key::stream_rank_k_un_c, machine_key::stream_rank_k_un_z, machine_key::stream_rank_k_ut_s,
    machine_key::stream_rank_k_ut_d, machine_key::stream_rank_k_ut_c, machine_key::stream_rank_k_ut_z,
    machine_key::stream_rank_k_ln_s, machine_key::stream_rank_k_ln_d, machine_key::stream_rank_k_ln_c,
    machine_key::stream_rank_k_ln_z, machine_key::stream_rank_k_lt_s, machine_key::stream_rank_k_lt_d,
    machine_key::stream_rank_k_lt_c, machine_key::stream_rank_k_lt_z};

/// The key of a GPU's gemm rate for type t (gpu_flops_s ... gpu_flops_z).
constexpr machine_key gpu_flops_key(scalar_type t) {
  return t == scalar_type::s ? machine_key::gpu_flops_s
       : t == scalar_type::d ? machine_key::gpu_flops_d
       : t == scalar_type::c ? machine_key::gpu_flops_c
                             : machine_key::gpu_flops_z;
}

/// The key of the streaming rank-k leaf's largest n for type t, triangle upper ('U') or
/// lower ('L'), trans 'N' (n_form) or 'T' / 'C' (stream_rank_k_un_s ... stream_rank_k_lt_z).
/// Example: double, 'L', 'N' is stream_rank_k_ln_d, 8 (lower) + 0 ('N') + 1 (double) = 9 places after
/// stream_rank_k_un_s.
constexpr machine_key stream_rank_k_key(scalar_type t, bool upper, bool n_form) {
  const int type = t == scalar_type::s ? 0 : t == scalar_type::d ? 1 : t == scalar_type::c ? 2 : 3;
  return machine_key(int(machine_key::stream_rank_k_un_s) + (upper ? 0 : 8) + (n_form ? 0 : 4) + type);
}
static_assert(stream_rank_k_key(scalar_type::z, true, true) == machine_key::stream_rank_k_un_z &&
              stream_rank_k_key(scalar_type::z, true, false) == machine_key::stream_rank_k_ut_z &&
              stream_rank_k_key(scalar_type::d, false, true) == machine_key::stream_rank_k_ln_d &&
              stream_rank_k_key(scalar_type::z, false, false) == machine_key::stream_rank_k_lt_z);

/// The text form's name of a key, e.g. "stream_bytes".
const char* to_string(machine_key k);

/// A machine as prism plans for it. A value: copy it, print it (to_string), parse it back
/// (parse), pin it in a context (context::set_description) or a test.
///
/// Text form (what `prism tune` writes and `prism leaves` prints), one `key: value` a line,
/// `#` starts a comment:
///
///     cpu: GenuineIntel family 6 model 207: Intel(R) Xeon(R) Processor
///     simd: AVX3 512
///     stream_bytes: 4194304 measured
///     small_flops: 1185408 model
///
/// plus, in a description of an example machine (a pinned one, usable on any host),
/// `example: NAME` and `topology: SYNTHETIC` (an hwloc synthetic description with cache
/// sizes). A value marked `model` is recomputed from the machine's sizes when read, so
/// only `measured` values carry over.
class machine_description {
 public:
  /// This process's machine: topology::from_env() (PRISM_TOPOLOGY, HWLOC_XMLFILE,
  /// HWLOC_SYNTHETIC, else hwloc's detection), this CPU and the streaming kernel's SIMD
  /// target, and the measured values of the machine file (PRISM_MACHINE, else
  /// machine_file_default()) when it is readable, well-formed and from this CPU; otherwise
  /// one warning line on stderr and the model's values. An example file (`example:`) is
  /// used as it is on any CPU. Never throws for a bad file.
  static machine_description from_env();
  /// This process's machine with the model's values only (no machine file): the topology
  /// of topology::from_env(), this CPU, the streaming kernel's SIMD target.
  static machine_description detect();
  /// True when text (a machine file's contents) describes an example machine (`example:`).
  static bool is_example_text(const std::string& text);
  /// The model's description of topology t on a CPU `cpu` with SIMD target `simd` of
  /// `simd_bits` bits (nothing measured).
  static machine_description model(topology t, std::string cpu, std::string simd, int simd_bits);
  /// Parses the text form; throws prism::error naming the line. Without a `topology:`
  /// line the topology is topology::from_env().
  static machine_description parse(const std::string& text);
  /// Reads and parses a file; throws prism::error naming the file.
  static machine_description load(const std::string& path);

  /// The text form (parse(to_string()) gives an equal description).
  std::string to_string() const;
  /// One line: where it came from and which values are measured and which the model's,
  /// e.g. "machine: model (no machine file); model: small_flops stream_bytes ...".
  std::string summary() const;

  /// The topology: NUMA domains, cores, caches.
  const topology& topo() const { return topology_; }
  /// Replaces the topology; model values follow the new sizes, measured ones stay.
  machine_description& set_topology(topology t);
  /// Physical cores.
  int cores() const { return topology_.cores(); }
  /// NUMA domains.
  int numa_domains() const { return int(topology_.domains().size()); }
  /// One core's share of cache level `level`: its size divided by the processing units
  /// sharing it (a 32 MiB L3 shared by 2 PUs: 16 MiB); 0 when the level is unknown.
  std::uint64_t cache_share(int level) const;
  /// One core's share of the last (largest) cache level; 0 without caches.
  std::uint64_t last_level_share() const;
  /// The largest cache's size, one instance (a 32 MiB L3 shared by 2 PUs: 32 MiB); 0
  /// without caches. Data twice this size is read from memory.
  std::uint64_t last_level_bytes() const;
  /// The CPU: cpuid vendor, family and model, and brand string; "" when unknown.
  const std::string& cpu() const { return cpu_; }
  /// The SIMD target of prism's own kernels, e.g. "AVX3", "AVX2", "EMU128", "SCALAR".
  const std::string& simd() const { return simd_; }
  /// Bits of one SIMD register of that target (512, 256, 128, 64 for scalar).
  int simd_bits() const { return simd_bits_; }
  /// Where the description came from: "model", "file PATH", "example NAME (PATH)" or "model
  /// (machine file PATH ignored)" (another CPU's or kernels', unreadable or malformed).
  const std::string& source() const { return source_; }
  /// The example machine's name, when this is one (else "").
  const std::string& example() const { return example_; }

  /// The value of key k: measured when set_measured gave it (a machine file), else what
  /// prism measured on this machine at first use when k takes such values (first_use(k)),
  /// else the model's.
  double value(machine_key k) const;
  /// True when k's value was measured (a machine file or set_measured), not modelled.
  bool measured(machine_key k) const;
  /// True when some key takes the value prism measures at first use on this machine
  /// (first_use(k)).
  bool first_use() const;
  /// True when key k takes the value prism measures at first use on this machine
  /// (lib/machine/wisdom.hpp): this machine's description (from_env()) with first use on,
  /// read from no machine file or from one that does not list k (written before k existed).
  bool first_use(machine_key k) const;
  /// Where k's value comes from: "measured", "first use" or "model".
  const char* origin(machine_key k) const;
  /// The model's value of k for this machine's sizes (see machine.cpp for each formula
  /// and the measurement it came from).
  double model_value(machine_key k) const;
  /// Sets a measured value (prism tune); throws prism::error unless v > 0.
  machine_description& set_measured(machine_key k, double v);
  /// Drops every measured and first-use value: the model's description of the same machine.
  machine_description& clear_measured();
  /// Sets the source text (machine_description::source).
  machine_description& set_source(std::string s);

 private:
  machine_description() = default;
  topology topology_;
  std::string cpu_, simd_ = "SCALAR", source_ = "model", example_;
  int simd_bits_ = 64;
  bool first_use_ = false;
  std::vector<char> listed_ = std::vector<char>(std::size(all_machine_keys), 0);  // keys a machine file lists
  std::vector<double> measured_ = std::vector<double>(std::size(all_machine_keys), 0.0);  // 0: not measured
  std::vector<double> model_;  // the model's value of each key for these sizes
};

/// This CPU's identity as machine files record it (cpuid vendor, family, model, brand).
std::string this_cpu();

/// The machine file prism reads when PRISM_MACHINE is not set, and `prism tune` writes:
/// $XDG_CACHE_HOME/prism/machine, else $HOME/.cache/prism/machine ("" without either).
std::string machine_file_default();

/// The process-wide description: machine_description::from_env(), built once.
const machine_description& default_description();

}  // namespace prism
