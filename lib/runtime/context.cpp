// lib/runtime/context.cpp — context defaults, environment variables, the default context.
#include <prism/context.hpp>
#include <prism/error.hpp>

#include "../leaf/backend/leaf_kernels.hpp"
#include "runtime.hpp"

#include <oneapi/tbb/info.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <cmath>
#include <sstream>

#include <unistd.h>

namespace prism {

context::context()
    : threads_(std::max(1, oneapi::tbb::info::default_concurrency())),
      max_memory_(std::numeric_limits<std::size_t>::max()),
      leaf_(leaf_backend::automatic),
      extra_depth_(0),
      min_leaf_flops_(double(1 << 26)),
      runtime_(std::make_shared<detail::runtime>(threads_)) {}

context& context::set_threads(int t) {
  if (t < 1 || t > 4096) throw error("thread count must be in 1..4096, got " + std::to_string(t));
  if (t != threads_) {
    threads_ = t;
    detail::context_access::fresh_runtime(*this);
  }
  return *this;
}

context& context::set_max_memory(std::size_t bytes) {
  max_memory_ = bytes;
  detail::context_access::fresh_runtime(*this);
  return *this;
}

context& context::set_small_flops(double flops) {
  if (!(flops >= 0)) throw error("small-problem threshold must be >= 0");
  small_flops_ = flops;
  return *this;
}

context& context::set_leaf(leaf_backend b) {
  if (b != leaf_backend::openblas && b != leaf_backend::blis && b != leaf_backend::automatic &&
      b != leaf_backend::streaming)
    throw error("the leaf backend must be openblas, blis, streaming or auto (gpu leaves come with a GPU plan)");
  leaf_ = b;
  detail::context_access::fresh_runtime(*this);
  return *this;
}

context& context::set_extra_depth(int levels) {
  if (levels < 0 || levels > 8) throw error("extra depth must be in 0..8, got " + std::to_string(levels));
  extra_depth_ = levels;
  detail::context_access::fresh_runtime(*this);
  return *this;
}

context& context::set_min_leaf_flops(double flops) {
  if (!(flops >= 0)) throw error("minimum leaf flops must be >= 0");
  min_leaf_flops_ = flops;
  detail::context_access::fresh_runtime(*this);
  return *this;
}

context& context::set_ranks(int p) {
  if (p < 1 || p > (1 << 20)) throw error("rank count must be in 1..1048576, got " + std::to_string(p));
  ranks_ = p;
  return *this;
}

context& context::set_ranks_per_node(int r) {
  if (r < 1 || r > (1 << 20)) throw error("ranks per node must be in 1..1048576, got " + std::to_string(r));
  ranks_per_node_ = r;
  return *this;
}

double context::rank_flops() const {
  return rank_flops_set_ ? rank_flops_ : description().value(machine_key::rank_flops_per_thread) * threads_;
}

double context::rank_bandwidth() const {
  return rank_flops_set_ ? rank_bandwidth_ : description().value(machine_key::rank_bandwidth);
}

context& context::set_rank_rates(double flops_per_second, double bytes_per_second) {
  if (!(flops_per_second > 0) || !(bytes_per_second > 0))
    throw error("rank flop rate and bandwidth must be > 0");
  rank_flops_ = flops_per_second;
  rank_bandwidth_ = bytes_per_second;
  rank_flops_set_ = true;
  return *this;
}

std::size_t default_rank_memory(int ranks_per_node) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const double node = pages > 0 && page > 0 ? double(pages) * double(page) : double(std::uint64_t(8) << 30);
  return std::size_t(node / 2 / double(std::max(1, ranks_per_node)));
}

const topology& default_topology() { return default_description().topo(); }

const machine_description& context::description() const { return description_ ? *description_ : default_description(); }

const topology& context::machine() const { return description().topo(); }

double context::small_flops() const {
  return small_flops_ >= 0 ? small_flops_ : description().value(machine_key::small_flops);
}

context& context::set_machine(topology t) {
  machine_description d = description();
  d.set_topology(std::move(t)).clear_measured().set_source("model");
  return set_description(std::move(d));
}

context& context::set_description(machine_description d) {
  description_ = std::make_shared<const machine_description>(std::move(d));
  detail::context_access::fresh_runtime(*this);
  return *this;
}

context& context::set_cache_level(int level) {
  if (level < 0 || level > 4) throw error("cache level must be in 0..4, got " + std::to_string(level));
  cache_level_ = level;
  detail::context_access::fresh_runtime(*this);
  return *this;
}

context& context::set_k_cuts(bool allowed) {
  k_cuts_ = allowed;
  detail::context_access::fresh_runtime(*this);
  return *this;
}

context& context::set_gpus(int n) {
  if (n < -1 || n > 1024) throw error("GPU count must be in -1..1024, got " + std::to_string(n));
  gpus_ = n;
  detail::context_access::fresh_runtime(*this);
  return *this;
}

context& context::set_gpu_memory(std::size_t bytes) {
  if (bytes != 0 && bytes < (std::size_t(1) << 20)) throw error("GPU memory must be at least 1M, got " + std::to_string(bytes));
  gpu_memory_ = bytes;
  detail::context_access::fresh_runtime(*this);
  return *this;
}

context& context::use_emulated_gpus(int count, std::size_t bytes) {
  devices_ = detail::gpu::emulated_devices(count, bytes);
  detail::context_access::fresh_runtime(*this);
  return *this;
}

std::string context::gpu_status() const { return detail::devices_of(*this).status; }

std::string context::describe() const {
  std::ostringstream os;
  os << "threads=" << threads_ << " max_memory=";
  if (max_memory_ == std::numeric_limits<std::size_t>::max()) os << "none";
  else os << max_memory_;
  os << " small_flops=" << small_flops() << " leaf=" << to_string(leaf_) << " extra_depth=" << extra_depth_
     << " cache_level=" << cache_level_;
  if (ranks_ > 1) os << " ranks=" << ranks_ << " rank_flops=" << rank_flops() << " rank_bandwidth=" << rank_bandwidth();
  if (gpus_ >= 0) os << " gpus=" << gpus_;
  if (gpu_memory_ > 0) os << " gpu_memory=" << gpu_memory_;
  return os.str();
}

std::uint64_t parse_size(const std::string& text) {
  const detail::checked<std::uint64_t> size = detail::parse_size_text(text);
  if (!size.problem.empty()) throw error(size.problem);
  return size.value;
}

double parse_rate(const std::string& text) {
  const detail::checked<std::uint64_t> size = detail::parse_size_text(text);
  if (size.problem.empty()) return double(size.value);
  // Else a decimal number as written, e.g. "50e9": digits or a point first, all of it read.
  char* end = nullptr;
  const bool decimal = !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.') &&
                       text.find_first_of("xXpP") == std::string::npos;  // (strtod reads hexadecimal too: "0x10")
  const double v = decimal ? std::strtod(text.c_str(), &end) : 0.0;
  if (decimal && end == text.c_str() + text.size() && std::isfinite(v)) return v;
  throw error("not a whole number with an optional K, M or G suffix, nor a decimal number such as 5e9: '" + text + "'");
}

namespace {

// Applies `set` to the text of environment variable `name` when it is set (not empty); an
// error names the variable ("PRISM_LEAF: unknown leaf backend 'mkl' ...").
template <class F>
void from_variable(const char* name, const std::string& text, F&& set) {
  if (text.empty()) return;
  try {
    set(text);
  } catch (const error& e) {
    throw error(std::string(name) + ": " + e.what());
  }
}

}  // namespace

context detail::context_from(const environment& env) {
  context c;
  // A whole number checked against its range as written: a value beyond it is an error that
  // quotes it, never clamped (the setters then check the range again, with the same words).
  auto whole = [](const std::string& s, std::uint64_t lo, std::uint64_t hi, const char* what) {
    const std::uint64_t v = parse_size(s);
    if (v < lo || v > hi)
      throw error(std::string(what) + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + s);
    return int(v);
  };
  from_variable("PRISM_NUM_THREADS", env.num_threads, [&](const std::string& s) { c.set_threads(whole(s, 1, 4096, "thread count")); });
  from_variable("PRISM_MAX_MEMORY", env.max_memory, [&](const std::string& s) { c.set_max_memory(std::size_t(parse_size(s))); });
  from_variable("PRISM_SMALL_FLOPS", env.small_flops, [&](const std::string& s) { c.set_small_flops(parse_rate(s)); });
  from_variable("PRISM_EXTRA_DEPTH", env.extra_depth, [&](const std::string& s) { c.set_extra_depth(whole(s, 0, 8, "extra depth")); });
  from_variable("PRISM_CACHE_LEVEL", env.cache_level, [&](const std::string& s) { c.set_cache_level(whole(s, 0, 4, "cache level")); });
  from_variable("PRISM_LEAF", env.leaf, [&](const std::string& s) { c.set_leaf(parse_leaf_backend(s)); });
  // Process-wide, read when the leaf libraries load; checked here so that a malformed value
  // is reported like any PRISM_* one.
  from_variable("PRISM_LEAF_KERNELS", env.leaf_kernels, [](const std::string& s) { (void)parse_leaf_kernels(s); });
  double flops = 0, bandwidth = 0;
  auto positive = [](const std::string& s) {
    const double v = parse_rate(s);
    if (!(v > 0)) throw error("must be > 0, got '" + s + "'");
    return v;
  };
  from_variable("PRISM_RANK_FLOPS", env.rank_flops, [&](const std::string& s) { flops = positive(s); });
  from_variable("PRISM_RANK_BANDWIDTH", env.rank_bandwidth, [&](const std::string& s) { bandwidth = positive(s); });
  if (flops > 0 || bandwidth > 0)
    c.set_rank_rates(flops > 0 ? flops : c.rank_flops(), bandwidth > 0 ? bandwidth : c.rank_bandwidth());
  return c;
}

context context::from_env() { return detail::context_from(detail::read_environment()); }

const context& default_context() {
  // C++11 magic static: built once, thread-safe, from the environment the process read once.
  static const context& ctx = *new context(detail::context_from(detail::process_environment()));  // never destroyed: calls may come at exit (docs/dropin.md)
  return ctx;
}

}  // namespace prism
