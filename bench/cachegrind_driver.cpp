// bench/cachegrind_driver.cpp — prism_cachegrind_driver: exactly one double-precision
// multiply, by prism (one thread) or by the plain backend BLAS (OpenBLAS, one thread), with
// the cache model's prediction beside it. scripts/cachegrind-study.sh runs it under
//   valgrind --tool=callgrind --cache-sim=yes --instr-atstart=no --D1=... --LL=...
// The multiply sits between CALLGRIND_START_INSTRUMENTATION and _STOP, so only it is
// simulated, starting from cold caches (everything before runs uninstrumented, including a
// warm-up of the same call that loads the libraries). Run natively, it counts the same call
// with perf_event_open where the CPU's counters are exposed (bench/cache_counters.hpp).
//
//   prism_cachegrind_driver M N K [--impl prism|openblas] [--plan FILE] [--beta B]
//                           [--D1 SIZE,ASSOC,LINE] [--LL SIZE,ASSOC,LINE]
//   prism_cachegrind_driver --caches     (the topology's caches: "cache LEVEL SIZE ASSOC LINE
//                                         PUS_SHARING", PRISM_TOPOLOGY honoured)
//
// prints '#' lines (what ran, the plan) and "key value" lines the script reads:
//   predicted_D1_words, predicted_LL_words (prism/traffic.hpp, for the --D1 and --LL caches),
//   bound_D1_words, bound_LL_words (prism::bounds::sequential_io with S = the cache's words),
//   counters (unavailable: why | l1d_read_misses N ll_misses N).
#include "cache_counters.hpp"

#include <prism/bounds.hpp>
#include <prism/prism.hpp>
#include <prism/traffic.hpp>

#include "leaf/backend/blas_library.hpp"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else  // no valgrind headers: the driver still runs natively (counters path only)
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#define RUNNING_ON_VALGRIND 0
#endif

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// "49152,12,64" -> {size, line}; associativity is only valgrind's business.
prism::cache_shape parse_cache(const std::string& text) {
  std::istringstream in(text);
  std::uint64_t size = 0, assoc = 0, line = 0;
  char c1 = 0, c2 = 0;
  if (!(in >> size >> c1 >> assoc >> c2 >> line) || c1 != ',' || c2 != ',' || size == 0 || line == 0)
    throw std::invalid_argument("a cache is SIZE,ASSOC,LINE in bytes, e.g. 49152,12,64; got '" + text + "'");
  return {size, unsigned(line)};
}

int run(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--caches") {
    for (const auto& c : prism::context::from_env().machine().caches())
      std::printf("cache %d %llu %d %u %d\n", c.level, (unsigned long long)c.size_bytes, c.associativity, c.line_bytes,
                  c.pus_sharing);
    return 0;
  }
  if (argc < 4) throw std::invalid_argument("usage: prism_cachegrind_driver M N K [--impl prism|openblas] [--plan FILE] [--beta B] [--D1 S,A,L] [--LL S,A,L]");
  const std::int64_t m = std::stoll(argv[1]), n = std::stoll(argv[2]), k = std::stoll(argv[3]);
  if (m <= 0 || n <= 0 || k <= 0) throw std::invalid_argument("M, N and K must be positive");
  std::string impl = "prism", plan_file;
  double beta = 0;
  prism::cache_shape d1{49152, 64}, ll{1048576, 64};
  for (int i = 4; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--impl") impl = v;
    else if (a == "--plan") plan_file = v;
    else if (a == "--beta") beta = std::stod(v);
    else if (a == "--D1") d1 = parse_cache(v);
    else if (a == "--LL") ll = parse_cache(v);
    else throw std::invalid_argument("unknown option '" + a + "'");
  }
  if (impl != "prism" && impl != "openblas") throw std::invalid_argument("--impl must be prism or openblas");

  const prism::problem p{prism::scalar_type::d, 'N', 'N', m, n, k};
  prism::context ctx = prism::context::from_env();
  ctx.set_threads(1);  // cachegrind simulates one thread's caches
  prism::plan pl;
  if (impl == "openblas") {
    prism::node leaf;  // the plain call is a one-leaf plan to the model
    leaf.backend = prism::leaf_backend::openblas;
    pl = prism::plan(p, prism::resources{}, {leaf});
  } else if (!plan_file.empty()) {
    std::ifstream f(plan_file);
    std::stringstream text;
    text << f.rdbuf();
    if (!f) throw std::invalid_argument("cannot read plan file '" + plan_file + "'");
    pl = prism::plan::parse(text.str());
    if (pl.problem().m != m || pl.problem().n != n || pl.problem().k != k || pl.threads() != 1)
      throw std::invalid_argument("the plan in '" + plan_file + "' is not a one-thread " + std::to_string(m) + "x" +
                                  std::to_string(n) + "x" + std::to_string(k) + " plan");
  } else {
    pl = prism::make_plan(p, ctx);
  }

  std::vector<double> A(std::size_t(m * k)), B(std::size_t(k * n)), C(std::size_t(m * n));
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> u(-1, 1);
  for (double& x : A) x = u(gen);
  for (double& x : B) x = u(gen);
  for (double& x : C) x = u(gen);

  const auto& openblas = prism::detail::blas_library::get(prism::detail::blas_build::openblas_pthread);
  openblas.set_threads(1);
  auto call = [&] {
    if (impl == "prism")
      prism::execute<double>(pl, 1.0, A.data(), m, B.data(), k, beta, C.data(), m, ctx);
    else
      openblas.gemm<double>('N', 'N', int(m), int(n), int(k), 1.0, A.data(), int(m), B.data(), int(k), beta, C.data(),
                            int(m));
  };
  call();  // warm-up: loads the leaf libraries, sizes the workspace; uninstrumented under valgrind

  prism_bench::cache_counters counters;
  prism_bench::cache_counts counts;
  if (RUNNING_ON_VALGRIND) {
    CALLGRIND_START_INSTRUMENTATION;
    call();
    CALLGRIND_STOP_INSTRUMENTATION;
  } else {
    counts = counters.measure(call);
  }

  std::printf("# prism_cachegrind_driver: %s, %lldx%lldx%lld d NN, beta %g, 1 thread%s\n", impl.c_str(),
              (long long)m, (long long)n, (long long)k, beta, RUNNING_ON_VALGRIND ? ", under valgrind" : "");
  if (impl == "openblas") std::printf("# library: %s (%s)\n", openblas.path().c_str(), openblas.kernel_name().c_str());
  else
    for (auto b : {prism::leaf_backend::openblas, prism::leaf_backend::blis})  // those the plan's leaves loaded
      if (const auto* leaf = prism::detail::resolved_leaf_library(b))
        std::printf("# leaf library: %s (%s)\n", leaf->path().c_str(), leaf->kernel_name().c_str());
  std::istringstream text(pl.to_string());
  for (std::string line; std::getline(text, line);) std::printf("# plan: %s\n", line.c_str());
  std::printf("predicted_D1_words %.0f\n", prism::predict_cache_words(pl, d1));
  std::printf("predicted_LL_words %.0f\n", prism::predict_cache_words(pl, ll));
  std::printf("bound_D1_words %.0f\n", prism::bounds::sequential_io(m, n, k, double(d1.size_bytes) / 8));
  std::printf("bound_LL_words %.0f\n", prism::bounds::sequential_io(m, n, k, double(ll.size_bytes) / 8));
  if (RUNNING_ON_VALGRIND) std::printf("counters valgrind\n");
  else if (!counts.available) std::printf("counters unavailable: %s\n", counts.why.c_str());
  else
    std::printf("counters l1d_read_misses %llu ll_misses %llu\n", (unsigned long long)counts.l1d_read_misses,
                (unsigned long long)counts.ll_misses);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prism_cachegrind_driver: %s\n", e.what());
    return 2;
  }
}
