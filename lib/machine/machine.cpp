// lib/machine/machine.cpp — the machine description: the model's values, the text form,
// the machine file.
//
// The model. Every rule threshold is written against this machine's own sizes; the
// constant in each formula is the ratio measured on the development host (a 2-core AMD
// EPYC: 48 KiB L1d, 1 MiB L2 per core, AVX-512; bench/results), so on that host the model
// gives exactly the thresholds measured there, and elsewhere the same ratio to its caches:
//  - stream_bytes = 2 x one core's L2: the streaming leaf (m, n <= 16 real; the tiled outer
//    kernel) beat the BLAS leaves once A and B no longer fit in twice the L2 (2 MiB there;
//    bench/results/leaf-streaming-2026-11-23.txt and ...T0740Z.txt: 1 MiB rows lost,
//    0.64-0.76x, every 2 MiB row won, 1.36x or more);
//  - stream_far_bytes = 8 x one core's L2: the panel kernel (real leaves above 16 x 16,
//    m n above 1024) against the BLAS leaves: 64 x 64 double 'NN' won from 512 KiB of A
//    and B in cache (1.56x) to memory (bench/results/leaf-streaming-panel-2026-11-29T0048Z.txt,
//    every real row above 16 won or tied but 24 x 24 float); the first-use measurement on
//    that host, 64 x 64 'NN' against the faster BLAS leaf at 1/2, 2 and 8 L2s, gave 8 MiB
//    three times in three. (Before the panel kernel, 16 x 16 blocks of the outer kernel
//    won only far beyond cache, from 32 L2s.) A machine where it never wins measures "never"
//    (1e18) at first use or with `prism tune`;
//  - stream_dot_bytes = 8 x one core's L2: the same for 'TN' leaves, whose chunks the panel
//    kernel transposes first: 32 x 32 'TN' at first use gave 8 MiB twice in three (the third
//    undecided, 0.92x at 8 MiB); `prism tune` and the first use measure it on its own, since
//    the transposition costs more on some CPUs (AVX2: 4 x 4 register blocks of doubles
//    against AVX-512's 8 x 8);
//  - stream_complex_k = 128: complex streaming leaves won from k = 128 (lost at 64);
//  - small_flops = 2 x 84^3 x (SIMD bits / 512): where recursion started to pay over one
//    leaf call there (AVX-512); a core with narrower registers does fewer flops in the
//    same thread start-up time, so its threshold is smaller in proportion;
//  - dropin_model_flops = 2 x 256^3 x (SIMD bits / 512): the rate model's smallest call
//    (bench/results/dropin-cubes-2026-11-22.md: within 5% either way below 256^3);
//  - dropin_efficiency = 0.95: prism's rate on squares as a share of threads x its leaf
//    rate (bench/results/full-2026-11-22.md: 0.97-1.00x threaded OpenBLAS on the same
//    kernels, which reaches 0.96-0.99x twice its one-thread rate on 2 cores).
// The streaming kernels' sizes (lib/leaf/kernels/tiling.cpp), each a share of the cache the
// data must stay in, the share measured there (one thread, k = 2^18..2^20, before these
// were keys; the numbers are in the kernel's comments):
//  - stream_outer_chunk_bytes = 1/3 of one core's L1d: the chunk of one block of rows of
//    the panel kernel (real leaves above 16 x 16), which every column piece reads again,
//    and of the outer kernel's tiles: 64 x 64 x 16384 'NN' doubles ran at 89 GF/s with
//    16 KiB (64 steps of 32 rows) against 85 with 32 KiB, one thread, 30 interleaved
//    rounds; 'TN' 32 x 32 the same at 8-128 KiB; the outer kernel's 'NN' 16 x 16 had run
//    best at 16-32 KiB of the 48 KiB L1d;
//  - stream_dot_chunk_bytes = 1/8 of the L2: the dot kernel ('TN' 16 x 16 and 8 x 8) ran
//    10-30% faster with 128 KiB chunks than with 32 KiB (of a 1 MiB L2);
//  - stream_tile_chunk_bytes = 1/4 of the L2: a leaf above 16 x 16 keeps each k-chunk of
//    op(A) and op(B) in L2 while every 16 x 16 block of C passes over it (256 KiB);
//  - stream_prefetch_bytes = 1/6 of the L1d: prefetched lines must still be in L1 when
//    read; 8 KiB over all streams (4-16 KiB within noise) lifted single-pass 'NN' 4 x 4
//    and 8 x 8 from 15-20 to 40-50 GB/s;
//  - syrk_chunk_bytes = 2/3 of the L1d: the rank-k leaf's chunk, re-read by every tile of
//    the triangle (gram set, 2 threads: 16-40 KiB within noise, 8 KiB 5-25% slower).
// `prism tune` times each around the model's value on this machine and keeps the fastest.
// The thread level's reduction: parallel_reduce_bytes = 1/4 of one core's L2: a k cut's
// partial C blocks are added on all its threads from 256 KiB of C there (2^15 doubles, the
// fixed threshold the executor had before this was a key); `prism tune` measures the
// crossover (a k cut of s x s x 8 leaves, reduction on all threads against on one).
// The rank planner's rates (include/prism/context.hpp names the runs): rank_flops_per_thread
// = 50 GF/s, one core's dgemm on the developers' host (`prism tune` measures it: the
// one-thread BLAS leaf at 1024^3); rank_bandwidth = 5 GB/s, Open MPI's shared-memory
// transport between 2 ranks there (no tune measurement: that needs ranks; a machine file
// may set it, and PRISM_RANK_BANDWIDTH or context::set_rank_rates override it).
// Without an L2 in the topology, the L2 is taken as the last level's share, else 1 MiB;
// without an L1, 32 KiB.
#include <prism/error.hpp>
#include <prism/machine.hpp>
#include <prism/topology.hpp>

#include "../environment/environment.hpp"
#include "../simd/simd.hpp"
#include "wisdom.hpp"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sys/stat.h>
#include <sstream>


namespace prism {

const char* to_string(machine_key k) {
  switch (k) {
    case machine_key::small_flops: return "small_flops";
    case machine_key::stream_bytes: return "stream_bytes";
    case machine_key::stream_far_bytes: return "stream_far_bytes";
    case machine_key::stream_dot_bytes: return "stream_dot_bytes";
    case machine_key::stream_complex_k: return "stream_complex_k";
    case machine_key::dropin_model_flops: return "dropin_model_flops";
    case machine_key::dropin_efficiency: return "dropin_efficiency";
    case machine_key::stream_outer_chunk_bytes: return "stream_outer_chunk_bytes";
    case machine_key::stream_dot_chunk_bytes: return "stream_dot_chunk_bytes";
    case machine_key::stream_tile_chunk_bytes: return "stream_tile_chunk_bytes";
    case machine_key::stream_prefetch_bytes: return "stream_prefetch_bytes";
    case machine_key::syrk_chunk_bytes: return "syrk_chunk_bytes";
    case machine_key::rank_flops_per_thread: return "rank_flops_per_thread";
    case machine_key::rank_bandwidth: return "rank_bandwidth";
    case machine_key::parallel_reduce_bytes: return "parallel_reduce_bytes";
    case machine_key::gpu_flops_s: return "gpu_flops_s";
    case machine_key::gpu_flops_d: return "gpu_flops_d";
    case machine_key::gpu_flops_c: return "gpu_flops_c";
    case machine_key::gpu_flops_z: return "gpu_flops_z";
    case machine_key::gpu_memory_bandwidth: return "gpu_memory_bandwidth";
    case machine_key::gpu_link_in: return "gpu_link_in";
    case machine_key::gpu_link_out: return "gpu_link_out";
    case machine_key::gpu_memory: return "gpu_memory";
    case machine_key::gpu_staging_bytes: return "gpu_staging_bytes";
    case machine_key::gpu_register_bandwidth: return "gpu_register_bandwidth";
    case machine_key::host_copy_bandwidth: return "host_copy_bandwidth";
    case machine_key::stream_rank_k_un_s: return "stream_rank_k_un_s";
    case machine_key::stream_rank_k_un_d: return "stream_rank_k_un_d";
    case machine_key::stream_rank_k_un_c: return "stream_rank_k_un_c";
    case machine_key::stream_rank_k_un_z: return "stream_rank_k_un_z";
    case machine_key::stream_rank_k_ut_s: return "stream_rank_k_ut_s";
    case machine_key::stream_rank_k_ut_d: return "stream_rank_k_ut_d";
    case machine_key::stream_rank_k_ut_c: return "stream_rank_k_ut_c";
    case machine_key::stream_rank_k_ut_z: return "stream_rank_k_ut_z";
    case machine_key::stream_rank_k_ln_s: return "stream_rank_k_ln_s";
    case machine_key::stream_rank_k_ln_d: return "stream_rank_k_ln_d";
    case machine_key::stream_rank_k_ln_c: return "stream_rank_k_ln_c";
    case machine_key::stream_rank_k_ln_z: return "stream_rank_k_ln_z";
    case machine_key::stream_rank_k_lt_s: return "stream_rank_k_lt_s";
    case machine_key::stream_rank_k_lt_d: return "stream_rank_k_lt_d";
    case machine_key::stream_rank_k_lt_c: return "stream_rank_k_lt_c";
    case machine_key::stream_rank_k_lt_z: return "stream_rank_k_lt_z";
  }
  return "?";
}

namespace {

std::size_t index_of(machine_key k) { return std::size_t(k); }

// A machine file's key name: every key's own, and the names a file written before the
// rank-k limits had a triangle gave them (stream_rank_k_n_d, stream_rank_k_t_d, ...), which
// were timed on upper triangles: read as the upper ones (the lower ones are then not
// listed, so measured at first use).
bool key_from_name(const std::string& name, machine_key& out) {
  for (machine_key k : all_machine_keys)
    if (name == to_string(k)) return out = k, true;
  static constexpr char types[] = "sdcz";
  for (int t = 0; t < 4; ++t)
    for (bool n_form : {true, false})
      if (name == std::string("stream_rank_k_") + (n_form ? 'n' : 't') + '_' + types[t])
        return out = stream_rank_k_key(scalar_type(types[t]), true, n_form), true;
  return false;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// Bits of one register of a Highway target, by its name ("AVX3_SPR" is an AVX-512 target).
int bits_of_target(const std::string& name) {
  if (name.rfind("AVX3", 0) == 0 || name.rfind("AVX10", 0) == 0) return 512;
  if (name == "AVX2") return 256;
  if (name == "SCALAR") return 64;
  return 128;  // SSE4, EMU128, NEON, ...
}

// A number in the text form: decimal, no suffix; throws on anything else.
double parse_number(const std::string& s, const std::string& where) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str() || *end != '\0' || !std::isfinite(v) || !(v > 0))
    throw error(where + ": not a positive number: '" + s + "'");
  return v;
}

// The model's value of key k on a machine of these sizes (model_table fills a description's
// table once, so that a call reads each key in an array).
double model_formula(machine_key k, const machine_description& d) {
  std::uint64_t l2 = d.cache_share(2);
  if (l2 == 0) l2 = d.last_level_share();
  if (l2 == 0) l2 = std::uint64_t(1) << 20;
  std::uint64_t l1 = d.cache_share(1);
  if (l1 == 0) l1 = std::uint64_t(32) << 10;
  // A size in bytes, rounded down to whole 64-byte lines.
  auto lines = [](double bytes) { return std::max(64.0, std::floor(bytes / 64.0) * 64.0); };
  const double width = double(d.simd_bits()) / 512.0;
  switch (k) {
    case machine_key::small_flops: return std::round(2.0 * 84 * 84 * 84 * width);
    case machine_key::stream_bytes: return 2.0 * double(l2);
    case machine_key::stream_far_bytes: return 8.0 * double(l2);
    case machine_key::stream_dot_bytes: return 8.0 * double(l2);
    case machine_key::stream_complex_k: return 128;
    case machine_key::dropin_model_flops: return std::round(2.0 * 256 * 256 * 256 * width);
    case machine_key::dropin_efficiency: return 0.95;
    case machine_key::stream_outer_chunk_bytes: return lines(double(l1) / 3);
    case machine_key::stream_dot_chunk_bytes: return lines(double(l2) / 8);
    case machine_key::stream_tile_chunk_bytes: return lines(double(l2) / 4);
    case machine_key::stream_prefetch_bytes: return lines(double(l1) / 6);
    case machine_key::syrk_chunk_bytes: return lines(double(l1) * 2 / 3);
    case machine_key::parallel_reduce_bytes: return lines(double(l2) / 4);
    // A round figure near one core's dgemm (a 2-core AMD EPYC gave 52 GF/s with AVX2 and
    // FMA) and near the shared-memory bandwidth one MPI rank receives at (5.9 GB/s there);
    // `prism tune` measures both for this machine.
    case machine_key::rank_flops_per_thread: return 50e9;
    case machine_key::rank_bandwidth: return 5e9;
    // A device nobody measured: round figures of a current data-centre GPU on PCIe gen5
    // x16 (docs/gpu.md lists what one was measured at); `prism tune` measures the device at
    // hand. Complex rates count real flops, as gemm_flops does.
    case machine_key::gpu_flops_s: return 50e12;
    case machine_key::gpu_flops_d: return 50e12;
    case machine_key::gpu_flops_c: return 50e12;
    case machine_key::gpu_flops_z: return 50e12;
    case machine_key::gpu_memory_bandwidth: return 3e12;
    case machine_key::gpu_link_in: return 50e9;
    case machine_key::gpu_link_out: return 50e9;
    case machine_key::gpu_memory: return 80.0 * double(std::uint64_t(1) << 30);
    // Two such buffers filled by host threads fed one device's link at its pinned rate.
    case machine_key::gpu_staging_bytes: return 32.0 * double(std::uint64_t(1) << 20);
    // Pinning 4.29 GB of host memory took 0.53 s on one GPU host (8.1 GB/s); one thread of
    // that host copied 7.7 GB/s. `prism tune` measures both here.
    case machine_key::gpu_register_bandwidth: return 8e9;
    case machine_key::host_copy_bandwidth: return 8e9;
    // The streaming rank-k leaf's n limits on the developers' AVX-512 host
    // (lib/leaf/kernels/auto_rule.cpp gives the runs, upper triangles; the lower ones take
    // the same); an AVX2 Zen 3 measured far lower (docs/planning.md), and lower still for
    // lower triangles in the N form, where its OpenBLAS's ?syrk ran faster than for upper
    // ones, which the first long rank-k call of each type measures.
    case machine_key::stream_rank_k_un_s: return 128;
    case machine_key::stream_rank_k_un_d: return 96;
    case machine_key::stream_rank_k_un_c: return 64;
    case machine_key::stream_rank_k_un_z: return 96;
    case machine_key::stream_rank_k_ut_s: return 96;
    case machine_key::stream_rank_k_ut_d: return 64;
    case machine_key::stream_rank_k_ut_c: return 32;
    case machine_key::stream_rank_k_ut_z: return 32;
    case machine_key::stream_rank_k_ln_s: return 128;
    case machine_key::stream_rank_k_ln_d: return 96;
    case machine_key::stream_rank_k_ln_c: return 64;
    case machine_key::stream_rank_k_ln_z: return 96;
    case machine_key::stream_rank_k_lt_s: return 96;
    case machine_key::stream_rank_k_lt_d: return 64;
    case machine_key::stream_rank_k_lt_c: return 32;
    case machine_key::stream_rank_k_lt_z: return 32;
  }
  return 0;
}

// Every key's model value for description d's sizes, in key order.
std::vector<double> model_table(const machine_description& d) {
  std::vector<double> t(std::size(all_machine_keys));
  for (machine_key k : all_machine_keys) t[index_of(k)] = model_formula(k, d);
  return t;
}

}  // namespace

std::string this_cpu() { return detail::cpu_identity(); }

std::string machine_file_default() { return detail::read_environment().machine_file; }

machine_description machine_description::model(topology t, std::string cpu, std::string simd, int simd_bits) {
  machine_description m;
  m.topology_ = std::move(t);
  m.cpu_ = std::move(cpu);
  m.simd_ = std::move(simd);
  m.simd_bits_ = simd_bits;
  m.model_ = model_table(m);
  return m;
}

machine_description& machine_description::set_topology(topology t) {
  topology_ = std::move(t);
  model_ = model_table(*this);
  return *this;
}

std::uint64_t machine_description::cache_share(int level) const {
  for (const auto& c : topology_.caches())
    if (c.level == level) return c.size_bytes / std::uint64_t(std::max(1, c.pus_sharing));
  return 0;
}

std::uint64_t machine_description::last_level_share() const {
  const auto& caches = topology_.caches();
  if (caches.empty()) return 0;
  const auto& c = *std::max_element(caches.begin(), caches.end(), [](auto& x, auto& y) { return x.level < y.level; });
  return c.size_bytes / std::uint64_t(std::max(1, c.pus_sharing));
}

std::uint64_t machine_description::last_level_bytes() const {
  std::uint64_t largest = 0;
  for (const auto& c : topology_.caches()) largest = std::max(largest, c.size_bytes);
  return largest;
}

double machine_description::model_value(machine_key k) const {
  return model_.empty() ? model_formula(k, *this) : model_[index_of(k)];  // (empty: a moved-from description)
}

double machine_description::value(machine_key k) const {
  const double v = measured_[index_of(k)];
  if (v > 0) return v;
  if (first_use(k))
    if (const double f = detail::first_use_value(k); f > 0) return f;
  return model_value(k);
}

bool machine_description::measured(machine_key k) const { return measured_[index_of(k)] > 0; }

bool machine_description::first_use(machine_key k) const { return first_use_ && !listed_[index_of(k)] && !measured(k); }

bool machine_description::first_use() const {
  return std::any_of(std::begin(all_machine_keys), std::end(all_machine_keys), [&](machine_key k) { return first_use(k); });
}

const char* machine_description::origin(machine_key k) const {
  if (measured(k)) return "measured";
  if (first_use(k) && detail::first_use_value(k) > 0) return "first use";
  return "model";
}

machine_description& machine_description::set_measured(machine_key k, double v) {
  if (!(v > 0) || !std::isfinite(v)) throw error(std::string("machine value ") + prism::to_string(k) + " must be > 0");
  measured_[index_of(k)] = v;
  return *this;
}

machine_description& machine_description::clear_measured() {
  std::fill(measured_.begin(), measured_.end(), 0.0);
  std::fill(listed_.begin(), listed_.end(), 0);
  first_use_ = false;
  return *this;
}

machine_description& machine_description::set_source(std::string s) {
  source_ = std::move(s);
  return *this;
}

std::string machine_description::to_string() const {
  std::ostringstream os;
  os << "# prism machine description\n";
  if (!example_.empty()) os << "example: " << example_ << "\n";
  os << "cpu: " << cpu_ << "\n";
  // An example machine's topology, or any other than the one a text without `topology:`
  // would get (topology::from_env()), so that parse(to_string()) gives this description.
  if (!example_.empty() || topology_.synthetic_description() != topology::from_env().synthetic_description())
    os << "topology: " << topology_.synthetic_description() << "\n";
  os << "simd: " << simd_ << " " << simd_bits_ << "\n";
  os << "# " << cores() << " core" << (cores() == 1 ? "" : "s") << ", " << numa_domains() << " NUMA domain"
     << (numa_domains() == 1 ? "" : "s");
  for (const auto& c : topology_.caches())
    os << "; L" << c.level << " " << (c.size_bytes >> 10) << " KiB per " << c.pus_sharing << " PU"
       << (c.pus_sharing == 1 ? "" : "s");
  os << "\n";
  for (machine_key k : all_machine_keys) {
    const std::string from = origin(k);
    // A first-use value reads back as measured (it was, on this machine), the comment says how.
    os << prism::to_string(k) << ": " << detail::value_text(value(k)) << (from == "model" ? " model" : " measured")
       << (from == "first use" ? "  # at first use (" + detail::wisdom::process().path() + ")" : std::string()) << "\n";
  }
  return os.str();
}

std::string machine_description::summary() const {
  // A family of keys (the GPU level's gpu_*, the rank-k leaf's stream_rank_k_*) is named
  // together, "gpu_*", where all of it has one origin.
  auto family_of = [](const std::string& name) -> std::string {
    for (const char* f : {"gpu_", "stream_rank_k_"})
      if (name.rfind(f, 0) == 0) return f;
    return "";
  };
  std::map<std::string, std::set<std::string>> origins;
  for (machine_key k : all_machine_keys)
    if (const std::string f = family_of(prism::to_string(k)); !f.empty()) origins[f].insert(origin(k));
  std::string measured_keys, first_use_keys, model_keys;
  std::set<std::string> named;
  for (machine_key k : all_machine_keys) {
    std::string name = prism::to_string(k);
    const std::string from = origin(k), family = family_of(name);
    if (!family.empty() && origins[family].size() == 1) {
      if (!named.insert(family).second) continue;
      name = family + "*";
    }
    (from == "measured" ? measured_keys : from == "first use" ? first_use_keys : model_keys) += " " + name;
  }
  std::string s = "machine: " + source_ + (source_ == "model" ? " (no machine file)" : "");
  if (!measured_keys.empty()) s += "; measured:" + measured_keys;
  if (!first_use_keys.empty()) s += "; measured at first use:" + first_use_keys;
  if (!model_keys.empty()) s += "; model:" + model_keys;
  return s;
}

machine_description machine_description::parse(const std::string& text) {
  machine_description m;
  m.cpu_.clear();
  bool have_topology = false, have_cpu = false;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  std::string synthetic;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = "line " + std::to_string(number);
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) throw error(where + ": expected 'key: value', got '" + line + "'");
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    machine_key k;
    if (key == "cpu") {
      m.cpu_ = value, have_cpu = true;
    } else if (key == "example") {
      if (value.empty()) throw error(where + ": an example needs a name");
      m.example_ = value;
    } else if (key == "topology") {
      synthetic = value, have_topology = true;
    } else if (key == "simd") {
      std::istringstream v(value);
      std::string name;
      int bits = 0;
      if (!(v >> name >> bits) || !(bits == 64 || bits == 128 || bits == 256 || bits == 512) || !(v >> std::ws).eof())
        throw error(where + ": expected 'simd: TARGET BITS' (BITS 64, 128, 256 or 512), got '" + value + "'");
      m.simd_ = name, m.simd_bits_ = bits;
    } else if (key_from_name(key, k)) {
      std::istringstream v(value);
      std::string number_text, origin;
      v >> number_text >> origin;
      if (!(v >> std::ws).eof() || (origin != "model" && origin != "measured"))
        throw error(where + ": expected '" + key + ": NUMBER measured' or '... model', got '" + value + "'");
      const double x = parse_number(number_text, where);
      if (origin == "measured") m.measured_[index_of(k)] = x;
      m.listed_[index_of(k)] = 1;
    } else {
      throw error(where + ": unknown key '" + key + "'");
    }
  }
  if (!have_cpu) throw error("no 'cpu:' line");
  if (!m.example_.empty() && !have_topology) throw error("an example machine needs a 'topology:' line");
  m.topology_ = have_topology ? topology::synthetic(synthetic) : topology::from_env();
  m.model_ = model_table(m);
  return m;
}

namespace {

// The text of machine file `path`; throws prism::error naming it.
std::string machine_file_text(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw error(path + ": is a directory");
  std::ifstream f(path);
  if (!f) throw error(path + ": cannot read (" + std::strerror(errno) + ")");
  std::ostringstream text;
  text << f.rdbuf();
  if (f.bad()) throw error(path + ": cannot read");
  return text.str();
}

// The description machine file `path` holds (its text given), its source set by it.
machine_description parsed_file(const std::string& text, const std::string& path) {
  try {
    machine_description m = machine_description::parse(text);
    m.set_source(m.example().empty() ? "file " + path : "example " + m.example() + " (" + path + ")");
    return m;
  } catch (const error& e) {
    throw error(path + ": " + e.what());
  }
}

}  // namespace

machine_description machine_description::load(const std::string& path) { return parsed_file(machine_file_text(path), path); }

machine_description machine_description::detect() {
  const std::string simd = detail::simd_target();
  return model(topology::from_env(), this_cpu(), simd, bits_of_target(simd));
}

bool machine_description::is_example_text(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (trim(line).rfind("example:", 0) == 0) return true;
  return false;
}

namespace {
std::string& to_be_written() {
  static std::string& path = *new std::string;  // never destroyed: calls may come at exit (docs/dropin.md)
  return path;
}
}  // namespace

void detail::machine_file_to_be_written(const std::string& path) { to_be_written() = path; }

machine_description machine_description::from_env() {
  machine_description here = detect();
  const detail::environment env = detail::read_environment();
  const bool named = !env.machine.empty();
  const std::string path = named ? env.machine : env.machine_file;
  // Without a machine file, this machine's description takes what prism measures at first
  // use (lib/machine/wisdom.hpp); a file, once read, replaces it for every key it lists
  // (tune measured more), and a key it does not list (a file written before that key
  // existed) is still measured at first use.
  machine_description first_use = here;
  first_use.first_use_ = env.first_use.get();
  if (path.empty()) return first_use;
  const char* instead = "the first-use values or the model's are used";
  // An ignored file is named where the description says where it came from (its one
  // warning line says why).
  const auto ignored = [&] {
    first_use.source_ = "model (machine file " + path + " ignored)";
    return first_use;
  };
  if (!named || path == to_be_written()) {  // the per-user file is optional: absent is the normal case, not a warning
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) return first_use;
  }
  try {
    const std::string text = machine_file_text(path);
    machine_description file = parsed_file(text, path);
    if (!file.example_.empty()) return file;  // an example machine: used as it is, on any host
    if (file.cpu_ != here.cpu_) {
      std::fprintf(stderr, "prism: %smachine file %s was written on another CPU (%s, this is %s); %s\n",
                   named ? "PRISM_MACHINE: " : "", path.c_str(), file.cpu_.c_str(), here.cpu_.c_str(), instead);
      return ignored();
    }
    // Measured on other kernels (a `simd:` line other than this process's: PRISM_SIMD).
    const bool simd_named = text.rfind("simd:", 0) == 0 || text.find("\nsimd:") != std::string::npos;
    if (simd_named && (file.simd_ != here.simd_ || file.simd_bits_ != here.simd_bits_)) {
      std::fprintf(stderr, "prism: %smachine file %s was measured with %s %d kernels, this process runs %s %d; %s\n",
                   named ? "PRISM_MACHINE: " : "", path.c_str(), file.simd_.c_str(), file.simd_bits_, here.simd_.c_str(),
                   here.simd_bits_, instead);
      return ignored();
    }
    here.measured_ = file.measured_;
    here.listed_ = file.listed_;
    here.source_ = file.source_;
    here.first_use_ = first_use.first_use_;
    return here;
  } catch (const std::exception& e) {
    std::string why = e.what();
    // A binary file's bytes are not echoed to the terminal: controls, and bytes 0x80-0x9f
    // outside a UTF-8 sequence (0x9b is the 8-bit CSI); a sequence such as a path's is kept.
    for (std::size_t i = 0; i < why.size(); ++i) {
      const auto u = static_cast<unsigned char>(why[i]);
      const std::size_t len = u >= 0xc2 && u <= 0xdf ? 2 : u >= 0xe0 && u <= 0xef ? 3 : u >= 0xf0 && u <= 0xf4 ? 4 : 1;
      bool sequence = len > 1 && i + len <= why.size();
      for (std::size_t j = 1; sequence && j < len; ++j) sequence = (static_cast<unsigned char>(why[i + j]) & 0xc0) == 0x80;
      if (sequence) i += len - 1;
      else if (u < 0x20 || (u >= 0x7f && u < 0xa0)) why[i] = '?';
    }
    std::fprintf(stderr, "prism: %smachine file ignored: %s; %s\n", named ? "PRISM_MACHINE: " : "", why.c_str(), instead);
    return ignored();
  }
}

const machine_description& default_description() {
  // Once, thread-safely; never destroyed: calls may come at exit (docs/dropin.md).
  static const machine_description& d = *new machine_description(machine_description::from_env());
  return d;
}

}  // namespace prism
