// tests/test_machine.cpp — the machine description: its text form round-trips, the model
// follows the machine's sizes, measured values replace the model's, and a bad machine file
// (unreadable, malformed, from another CPU) is ignored with exactly one warning line.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "leaf/kernels/streaming.hpp"
#include "machine/wisdom.hpp"
#include "support/machines.hpp"
#include "support/stderr_capture.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

using namespace prism;

namespace {

// The model's rank rates when no machine file measured them (lib/machine/machine.cpp).
constexpr double model_rank_flops_per_thread = 50e9;
constexpr double model_rank_bandwidth = 5e9;


// machine_description::from_env() with PRISM_MACHINE set to `path`.
machine_description from_file(const std::string& path) {
  setenv("PRISM_MACHINE", path.c_str(), 1);
  machine_description m = machine_description::from_env();
  unsetenv("PRISM_MACHINE");
  return m;
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/prism-test-machine-" + std::to_string(getpid()) + "-" + name;
  std::ofstream(path) << text;
  return path;
}

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace

TEST_CASE("the example machine: its file parses, prints and parses back to the same values") {
  const machine_description& m = test::epyc_2c();
  CHECK(m.example() == "epyc-2c");
  CHECK(m.cores() == 2);
  CHECK(m.cache_share(2) == 1u << 20);
  CHECK(m.cache_share(3) == 532676608u);
  CHECK(m.simd_bits() == 512);
  // The model on that machine gives the thresholds measured there.
  CHECK(m.value(machine_key::small_flops) == 2.0 * 84 * 84 * 84);
  CHECK(m.value(machine_key::stream_bytes) == 2.0 * (1 << 20));
  CHECK(m.value(machine_key::stream_far_bytes) == 8.0 * (1 << 20));
  CHECK(m.value(machine_key::stream_complex_k) == 128);
  CHECK(m.value(machine_key::dropin_model_flops) == 2.0 * 256 * 256 * 256);
  CHECK(m.value(machine_key::dropin_efficiency) == doctest::Approx(0.95));
  const std::string text = m.to_string();
  INFO(text);
  const machine_description back = machine_description::parse(text);
  CHECK(back.to_string() == text);
  CHECK(back.cache_share(2) == m.cache_share(2));
}

TEST_CASE("measured values round-trip and replace the model's; model values follow the sizes") {
  machine_description m = test::epyc_2c();
  m.set_measured(machine_key::stream_bytes, 3 << 20).set_measured(machine_key::small_flops, 500000);
  const std::string text = m.to_string();
  INFO(text);
  CHECK(text.find("stream_bytes: 3145728 measured") != std::string::npos);
  CHECK(text.find("stream_far_bytes: 8388608 model") != std::string::npos);
  const machine_description back = machine_description::parse(text);
  CHECK(back.measured(machine_key::stream_bytes));
  CHECK(back.value(machine_key::stream_bytes) == 3 << 20);
  CHECK(back.value(machine_key::small_flops) == 500000);
  CHECK_FALSE(back.measured(machine_key::stream_far_bytes));
  // A model value is recomputed for the machine that reads it: 2 MiB L2, 16 MiB far.
  machine_description other = back;
  other.set_topology(topology::synthetic("Package:1 L3Cache:1(size=96MiB) L2Cache:2(size=2MiB) Core:1 PU:1"));
  CHECK(other.value(machine_key::stream_far_bytes) == 16.0 * (1 << 20));
  CHECK(other.value(machine_key::stream_bytes) == 3 << 20);  // measured: kept
  CHECK(other.clear_measured().value(machine_key::stream_bytes) == 4.0 * (1 << 20));
  // A narrower SIMD target gives a smaller small-call threshold, in proportion.
  const machine_description avx2 = machine_description::model(topology::synthetic("Package:1 Core:2 PU:1"), "x", "AVX2", 256);
  CHECK(avx2.value(machine_key::small_flops) == 84.0 * 84 * 84);
  CHECK(avx2.value(machine_key::stream_bytes) == 2.0 * (1 << 20));  // no L2 known: 1 MiB taken
}

TEST_CASE("parallel_reduce_bytes: a quarter of one core's L2 by the model, measured values kept") {
  // The example machine (1 MiB L2 per core): 256 KiB, the 2^15 doubles of C from which the
  // thread level's k-cut reduction ran on every thread there.
  const machine_description& m = test::epyc_2c();
  CHECK(m.value(machine_key::parallel_reduce_bytes) == 256 * 1024);
  machine_description other = m;
  other.set_topology(topology::synthetic("Package:1 L3Cache:1(size=16MiB) L2Cache:2(size=512KiB) Core:1 PU:1"));
  CHECK(other.value(machine_key::parallel_reduce_bytes) == 128 * 1024);
  other.set_measured(machine_key::parallel_reduce_bytes, 1e18);  // tune found no crossover: never
  const machine_description back = machine_description::parse(other.to_string());
  CHECK(back.measured(machine_key::parallel_reduce_bytes));
  CHECK(back.value(machine_key::parallel_reduce_bytes) == 1e18);
}

TEST_CASE("the streaming kernels' sizes: the model's shares of the caches, measured values round-trip") {
  // On the example machine (48 KiB L1d, 1 MiB L2) the model gives the sizes measured there.
  const machine_description& m = test::epyc_2c();
  CHECK(m.value(machine_key::stream_outer_chunk_bytes) == 16 * 1024);
  CHECK(m.value(machine_key::stream_dot_chunk_bytes) == 128 * 1024);
  CHECK(m.value(machine_key::stream_tile_chunk_bytes) == 256 * 1024);
  CHECK(m.value(machine_key::stream_prefetch_bytes) == 8 * 1024);
  CHECK(m.value(machine_key::syrk_chunk_bytes) == 32 * 1024);
  // Another machine's caches (32 KiB L1d, 2 MiB L2) give other sizes, whole 64-byte lines.
  machine_description other = m;
  other.set_topology(topology::synthetic("Package:1 L3Cache:1(size=96MiB) L2Cache:2(size=2MiB) L1dCache:1(size=32KiB) Core:1 PU:1"));
  CHECK(other.value(machine_key::stream_outer_chunk_bytes) == 10880);  // 1/3 of 32 KiB, down to a line
  CHECK(other.value(machine_key::stream_dot_chunk_bytes) == 256 * 1024);
  CHECK(other.value(machine_key::stream_tile_chunk_bytes) == 512 * 1024);
  CHECK(other.value(machine_key::stream_prefetch_bytes) == 5440);
  CHECK(other.value(machine_key::syrk_chunk_bytes) == 21824);
  // The kernels take what the description gives.
  other.set_measured(machine_key::stream_prefetch_bytes, 4096).set_measured(machine_key::stream_tile_chunk_bytes, 1 << 19);
  const detail::streaming_sizes z = detail::streaming_sizes_of(other);
  CHECK(z.prefetch == 4096);
  CHECK(z.tile_chunk == 1 << 19);
  CHECK(z.dot_chunk == 256 * 1024);
  CHECK(z.outer_chunk == 10880);
  CHECK(z.syrk_chunk == 21824);
  // Measured sizes round-trip through the text form; the others stay the model's.
  const std::string text = other.to_string();
  INFO(text);
  CHECK(text.find("stream_prefetch_bytes: 4096 measured") != std::string::npos);
  CHECK(text.find("stream_dot_chunk_bytes: 262144 model") != std::string::npos);
  const machine_description back = machine_description::parse(text);
  CHECK(back.measured(machine_key::stream_prefetch_bytes));
  CHECK(back.value(machine_key::stream_prefetch_bytes) == 4096);
  CHECK(back.value(machine_key::stream_tile_chunk_bytes) == 1 << 19);
  CHECK_FALSE(back.measured(machine_key::syrk_chunk_bytes));
  CHECK(back.summary().find("measured: stream_tile_chunk_bytes stream_prefetch_bytes") != std::string::npos);
  // A family of keys of one origin is named together; one measured key names each apart.
  CHECK(back.summary().find(" gpu_* host_copy_bandwidth stream_rank_k_*") != std::string::npos);
  machine_description rank_k = back;
  rank_k.set_measured(stream_rank_k_key(scalar_type::d, true, true), 32);
  INFO(rank_k.summary());
  CHECK(rank_k.summary().find("measured: stream_tile_chunk_bytes stream_prefetch_bytes stream_rank_k_un_d;") != std::string::npos);
  CHECK(rank_k.summary().find("stream_rank_k_un_s stream_rank_k_un_c stream_rank_k_un_z stream_rank_k_ut_s") != std::string::npos);
  CHECK(rank_k.summary().find("stream_rank_k_*") == std::string::npos);
  CHECK(machine_description::parse(rank_k.to_string()).value(machine_key::stream_rank_k_un_d) == 32);
  // A file written before the rank-k limits had a triangle names them stream_rank_k_n_d,
  // stream_rank_k_t_z, ...: timed on upper triangles, read as the upper ones; the lower ones
  // are not listed (first use measures them).
  const machine_description old_names =
      machine_description::parse("cpu: x\nstream_rank_k_n_d: 32 measured\nstream_rank_k_t_z: 1 measured\n");
  CHECK(old_names.value(machine_key::stream_rank_k_un_d) == 32);
  CHECK(old_names.value(machine_key::stream_rank_k_ut_z) == 1);
  CHECK_FALSE(old_names.measured(machine_key::stream_rank_k_ln_d));
  CHECK_FALSE(old_names.measured(machine_key::stream_rank_k_lt_z));
  CHECK(old_names.to_string().find("stream_rank_k_un_d: 32 measured") != std::string::npos);
  CHECK_THROWS_WITH_AS(machine_description::parse("cpu: x\nstream_rank_k_q_d: 32 measured\n"),
                       doctest::Contains("unknown key 'stream_rank_k_q_d'"), error);
  // A size must be a positive number.
  CHECK_THROWS_WITH_AS(machine_description::parse("cpu: x\nsyrk_chunk_bytes: 0 measured\n"), doctest::Contains("line 2"), error);
}

TEST_CASE("the rank planner's rates come from the machine description unless a context sets them") {
  machine_description m = test::epyc_2c();
  CHECK(m.value(machine_key::rank_flops_per_thread) == model_rank_flops_per_thread);
  CHECK(m.value(machine_key::rank_bandwidth) == model_rank_bandwidth);
  context ctx;
  ctx.set_threads(2).set_description(m);
  CHECK(ctx.rank_flops() == 2 * model_rank_flops_per_thread);
  CHECK(ctx.rank_bandwidth() == model_rank_bandwidth);
  m.set_measured(machine_key::rank_flops_per_thread, 20e9).set_measured(machine_key::rank_bandwidth, 1e9);
  ctx.set_description(m);
  CHECK(ctx.rank_flops() == 40e9);
  CHECK(ctx.rank_bandwidth() == 1e9);
  const machine_description back = machine_description::parse(m.to_string());
  CHECK(back.value(machine_key::rank_flops_per_thread) == 20e9);
  ctx.set_rank_rates(7e9, 3e9);  // the context's own: PRISM_RANK_FLOPS, --rank-flops
  CHECK(ctx.rank_flops() == 7e9);
  CHECK(ctx.rank_bandwidth() == 3e9);
}

TEST_CASE("malformed text is refused with the line it is on") {
  CHECK_THROWS_WITH_AS(machine_description::parse("cpu: x\nstream_bytes: 12\n"), doctest::Contains("line 2"), error);
  CHECK_THROWS_WITH_AS(machine_description::parse("cpu: x\nstream_bytes: -4 measured\n"), doctest::Contains("line 2"), error);
  CHECK_THROWS_WITH_AS(machine_description::parse("cpu: x\nno_such_key: 4 measured\n"), doctest::Contains("unknown key"), error);
  CHECK_THROWS_WITH_AS(machine_description::parse("cpu: x\nsimd: AVX2 300\n"), doctest::Contains("line 2"), error);
  CHECK_THROWS_WITH_AS(machine_description::parse("stream_bytes: 4 measured\n"), doctest::Contains("cpu"), error);
  CHECK_THROWS_WITH_AS(machine_description::parse("example: e\ncpu: x\n"), doctest::Contains("topology"), error);
}

TEST_CASE("a machine file from this CPU gives its measured values; a bad one one warning line and the model") {
  const std::string here = this_cpu();
  const std::string good = write_file("good", "cpu: " + here + "\nstream_bytes: 1234567 measured\nsmall_flops: 99 model\n");
  std::string err = test::stderr_of([&] {
    const machine_description m = from_file(good);
    CHECK(m.value(machine_key::stream_bytes) == 1234567);
    CHECK(m.measured(machine_key::stream_bytes));
    CHECK_FALSE(m.measured(machine_key::small_flops));
    CHECK(m.source() == "file " + good);
    CHECK(m.summary().find("measured: stream_bytes") != std::string::npos);
  });
  CHECK(err == "");
  const std::string other = write_file("other", "cpu: SomeOtherVendor family 1 model 2: Not This CPU\nstream_bytes: 1234567 measured\n");
  const std::string malformed = write_file("malformed", "cpu: " + here + "\nstream_bytes 1234567\n");
  for (const std::string& path : {other, malformed, std::string("/nonexistent/prism/machine")}) {
    err = test::stderr_of([&] {
      const machine_description m = from_file(path);
      CHECK_FALSE(m.measured(machine_key::stream_bytes));
      CHECK(m.source() == "model (machine file " + path + " ignored)");
      CHECK(m.summary().rfind("machine: model (machine file " + path + " ignored);", 0) == 0);
    });
    INFO(path, ": ", err);
    CHECK(lines(err) == 1);
    CHECK(err.rfind("prism: PRISM_MACHINE: machine file", 0) == 0);
    CHECK(err.find("; the first-use values or the model's are used\n") != std::string::npos);
  }
  for (const std::string& path : {good, other, malformed}) unlink(path.c_str());
}

TEST_CASE("a machine file of this CPU rules the keys it lists; a key it does not list takes first use") {
  // A file as prism tune writes it (every key, measured or model) but for the rank-k limits,
  // as one written before they existed.
  machine_description tuned = machine_description::detect();
  tuned.set_measured(machine_key::stream_bytes, 3 << 20);
  std::istringstream all(tuned.to_string());
  std::string text;
  for (std::string line; std::getline(all, line);)
    if (line.rfind("stream_rank_k_", 0) != 0) text += line + "\n";
  const std::string old = write_file("old-keys", text), full = write_file("full", tuned.to_string());
  const char* was = std::getenv("PRISM_FIRST_USE");
  const std::string before = was != nullptr ? was : "";
  setenv("PRISM_FIRST_USE", "1", 1);
  const machine_description m = from_file(old), f = from_file(full);
  setenv("PRISM_FIRST_USE", "0", 1);
  const machine_description off = from_file(old);
  if (was != nullptr) setenv("PRISM_FIRST_USE", before.c_str(), 1);
  else unsetenv("PRISM_FIRST_USE");
  CHECK(m.source() == "file " + old);
  CHECK(m.measured(machine_key::stream_bytes));
  CHECK_FALSE(m.first_use(machine_key::stream_bytes));     // measured in the file
  CHECK_FALSE(m.first_use(machine_key::stream_far_bytes));  // listed as the model's
  for (scalar_type t : {scalar_type::s, scalar_type::d, scalar_type::c, scalar_type::z})
    for (bool upper : {true, false})
      for (bool n_form : {true, false}) {
        CHECK(m.first_use(stream_rank_k_key(t, upper, n_form)));
        CHECK_FALSE(f.first_use(stream_rank_k_key(t, upper, n_form)));
        CHECK_FALSE(off.first_use(stream_rank_k_key(t, upper, n_form)));
      }
  CHECK(m.first_use());
  CHECK_FALSE(f.first_use());  // every key listed: nothing taken from first use
  CHECK_FALSE(off.first_use());
  // Another topology's model (context::set_machine): no measured or first-use value carries over.
  machine_description other = m;
  other.clear_measured();
  CHECK_FALSE(other.measured(machine_key::stream_bytes));
  CHECK_FALSE(other.first_use());
  for (const std::string& path : {old, full}) unlink(path.c_str());
}

TEST_CASE("an example machine file is used as it is on any CPU, and a context plans for it") {
  const machine_description m = from_file(PRISM_SOURCE_DIR "/docs/machines/epyc-2c.machine");
  CHECK(m.example() == "epyc-2c");
  CHECK(m.cache_share(2) == 1u << 20);
  context ctx;
  ctx.set_description(m).set_threads(2);
  CHECK(ctx.small_flops() == 2.0 * 84 * 84 * 84);
  CHECK(ctx.machine().caches().size() == 3);
  ctx.set_small_flops(0);
  CHECK(ctx.small_flops() == 0);
}

TEST_CASE("first-use sets: two processes that read the file before either kept keep both values") {
  const std::string path = "/tmp/prism-test-wisdom-" + std::to_string(getpid());
  std::remove(path.c_str());
  detail::wisdom first(path, "cpu A"), second(path, "cpu A");  // both read the file before either kept
  CHECK(first.keep("stream_bytes", "1000"));
  CHECK(second.keep("stream_dot_bytes", "2000"));
  const detail::wisdom later(path, "cpu A");
  CHECK(later.find("stream_bytes") == std::optional<std::string>("1000"));
  CHECK(later.find("stream_dot_bytes") == std::optional<std::string>("2000"));
  CHECK_FALSE(detail::wisdom(path, "cpu B").find("stream_bytes"));  // another CPU's (or kernels') set
  std::remove(path.c_str());
  std::remove((path + ".lock").c_str());
}

TEST_CASE("a description's values print so that they parse back to the same doubles") {
  const machine_description m = from_file(PRISM_SOURCE_DIR "/docs/machines/epyc-2c.machine");
  machine_description odd = m;
  odd.set_measured(machine_key::dropin_efficiency, 1.0 / 3.0);
  odd.set_measured(machine_key::stream_bytes, 0.30000000000000004 * 1e6);
  const machine_description back = machine_description::parse(odd.to_string());
  CHECK(back.value(machine_key::dropin_efficiency) == 1.0 / 3.0);
  CHECK(back.value(machine_key::stream_bytes) == 0.30000000000000004 * 1e6);
}

TEST_CASE("a first-use set with a value that is no positive number is not read, so it is measured again") {
  const std::string path = "/tmp/prism-test-wisdom-bad-" + std::to_string(getpid());
  for (const char* bad : {"banana", "inf", "-5", "0", ""}) {
    std::ofstream(path) << "version: 1\ncpu: cpu A\nstream_bytes: " << bad << "\nstream_dot_bytes: 4096\n";
    INFO("stream_bytes: '", bad, "'");
    CHECK(detail::wisdom(path, "cpu A").all().empty());
  }
  std::ofstream(path) << "version: 1\ncpu: cpu A\nstream_bytes: 8192\nstream_dot_bytes: 4096\n";
  CHECK(detail::wisdom(path, "cpu A").find("stream_bytes") == std::optional<std::string>("8192"));
  std::remove(path.c_str());
}
