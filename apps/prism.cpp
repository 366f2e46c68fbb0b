// apps/prism.cpp — the prism command-line tool.
//
//   prism plan M N K [--threads T] [--type s|d|c|z] [--trans NN|NT|TN|...] [--max-memory B]
//                    [--extra-depth E] [--leaf openblas|blis|auto]
//       prints the plan prism would run for that shape on this machine
//   prism bench M N K [same options] [--reps R]
//       times prism against threaded OpenBLAS (all cores) on one shape, same run, best of R
//   prism leaves [--reps R]
//       times serial OpenBLAS against serial BLIS on leaf shapes (backs PRISM_LEAF=auto)
#include <prism/prism.hpp>

#include "blas/blas_library.hpp"

#include <oneapi/tbb/info.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* usage =
    "usage: prism plan M N K [--threads T] [--type s|d|c|z] [--trans XY] [--max-memory BYTES]\n"
    "                        [--extra-depth E] [--leaf openblas|blis|auto]\n"
    "                        [--topology \"package:2 numa:4 core:16 pu:1\" | FILE.xml]\n"
    "       prism bench M N K [the same options] [--reps R]\n"
    "       prism leaves [--reps R]\n";

std::int64_t parse_int(const std::string& s, const char* what, std::int64_t lo,
                       std::int64_t hi = std::numeric_limits<std::int64_t>::max()) {
  std::size_t used = 0;
  long long v;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    throw usage_error(std::string(what) + " must be an integer, got '" + s + "'");
  }
  if (used != s.size()) throw usage_error(std::string(what) + " must be an integer, got '" + s + "'");
  if (v < lo || v > hi)
    throw usage_error(std::string(what) + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + s);
  return v;
}

struct options {
  prism::problem p;
  prism::context ctx = prism::context::from_env();
  int reps = 5;
};

options parse(const std::vector<std::string>& args, std::size_t first, bool want_shape) {
  options o;
  std::size_t i = first;
  if (want_shape) {
    if (args.size() < first + 3) throw usage_error("expected M N K");
    o.p.m = parse_int(args[i++], "M", 0);
    o.p.n = parse_int(args[i++], "N", 0);
    o.p.k = parse_int(args[i++], "K", 0);
  }
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw usage_error(a + " needs a value");
      return args[++i];
    };
    if (a == "--threads") o.ctx.set_threads(int(parse_int(value(), "--threads", 1, 4096)));
    else if (a == "--type") {
      const std::string& t = value();
      if (t.size() != 1 || std::string("sdcz").find(t[0]) == std::string::npos)
        throw usage_error("--type must be s, d, c or z, got '" + t + "'");
      o.p.type = prism::scalar_type(t[0]);
    } else if (a == "--trans") {
      const std::string given = value();
      std::string t = given;
      for (char& c : t) c = char(std::toupper(static_cast<unsigned char>(c)));
      if (t.size() != 2 || std::string("NTC").find(t[0]) == std::string::npos ||
          std::string("NTC").find(t[1]) == std::string::npos)
        throw usage_error("--trans must be two letters from N, T, C (e.g. TN), got '" + given + "'");
      o.p.transa = t[0], o.p.transb = t[1];
    } else if (a == "--max-memory") o.ctx.set_max_memory(std::size_t(parse_int(value(), "--max-memory", 0)));
    else if (a == "--extra-depth") o.ctx.set_extra_depth(int(parse_int(value(), "--extra-depth", 0, 8)));
    else if (a == "--leaf") o.ctx.set_leaf(prism::parse_leaf_backend(value()));
    else if (a == "--topology") {
      const std::string& t = value();
      o.ctx.set_machine(t.size() > 4 && t.compare(t.size() - 4, 4, ".xml") == 0 ? prism::topology::xml(t)
                                                                                 : prism::topology::synthetic(t));
    }
    else if (a == "--reps") o.reps = int(parse_int(value(), "--reps", 1, 1000000));
    else throw usage_error("unknown option '" + a + "'");
  }
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best-of-reps wall time of f().
template <class F>
double best_time(int reps, F&& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

template <class T>
std::vector<T> random_matrix(std::size_t count, unsigned seed) {
  std::vector<T> v(count);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& x : v) {
    if constexpr (prism::scalar<T> && (std::same_as<T, float> || std::same_as<T, double>)) x = T(u(gen));
    else x = T(typename T::value_type(u(gen)), typename T::value_type(u(gen)));
  }
  return v;
}

template <class T>
int bench_one(const options& o) {
  const auto& p = o.p;
  const std::int64_t rows_a = p.transa == 'N' ? p.m : p.k, cols_a = p.transa == 'N' ? p.k : p.m;
  const std::int64_t rows_b = p.transb == 'N' ? p.k : p.n, cols_b = p.transb == 'N' ? p.n : p.k;
  auto A = random_matrix<T>(std::size_t(rows_a * cols_a), 1);
  auto B = random_matrix<T>(std::size_t(rows_b * cols_b), 2);
  std::vector<T> C(std::size_t(p.m * p.n), T(0));
  const std::int64_t lda = std::max<std::int64_t>(1, rows_a), ldb = std::max<std::int64_t>(1, rows_b),
                     ldc = std::max<std::int64_t>(1, p.m);
  const auto& openblas = prism::detail::blas_library::get(prism::detail::blas_build::openblas_pthread);
  const int cores = oneapi::tbb::info::default_concurrency();
  const double flops = p.flops();
  double t_prism = best_time(o.reps, [&] {
    prism::gemm<T>(p.transa, p.transb, p.m, p.n, p.k, T(1), A.data(), lda, B.data(), ldb, T(0), C.data(), ldc, o.ctx);
  });
  openblas.set_threads(cores);
  double t_ob = best_time(o.reps, [&] {
    openblas.gemm<T>(p.transa, p.transb, int(p.m), int(p.n), int(p.k), T(1), A.data(), int(lda), B.data(), int(ldb),
                     T(0), C.data(), int(ldc));
  });
  std::printf("shape %lldx%lldx%lld type %c trans %c%c, best of %d\n", (long long)p.m, (long long)p.n,
              (long long)p.k, char(p.type), p.transa, p.transb, o.reps);
  std::printf("  prism (%d threads)     %10.4f s  %8.2f GFLOP/s\n", o.ctx.threads(), t_prism, flops / t_prism * 1e-9);
  std::printf("  openblas (%d threads)  %10.4f s  %8.2f GFLOP/s\n", cores, t_ob, flops / t_ob * 1e-9);
  std::printf("  ratio prism/openblas  %.3f\n", t_ob / t_prism);
  return 0;
}

std::string megabytes(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f MB", bytes / 1e6);
  return buf;
}

// Predicted cross-domain traffic of the plan, and of the m x n-only split a threaded BLAS
// uses, on the same topology (prism/traffic.hpp has the model).
void print_traffic(const prism::plan& p, const options& o) {
  auto line = [](const char* what, const prism::traffic_report& r) {
    std::cout << "#   " << what << ": " << megabytes(r.remote_total()) << " remote, " << megabytes(r.local_total())
              << " local; remote per domain:";
    for (double b : r.remote_bytes) std::cout << ' ' << megabytes(b);
    std::cout << '\n';
  };
  std::cout << "# predicted bytes read by each domain (" << p.domains() << " domains of "
            << o.ctx.machine().source() << ")\n";
  line("this plan, placement helper", prism::predict_traffic(p, prism::placement::prism));
  line("this plan, interleaved memory", prism::predict_traffic(p, prism::placement::interleaved));
  prism::context mn = o.ctx;
  mn.set_k_cuts(false);
  const prism::plan q = prism::make_plan(o.p, mn);
  if (q.domains() > 1) line("m x n-only split (as threaded BLAS), interleaved", prism::predict_traffic(q, prism::placement::interleaved));
}

int run_bench(const options& o) {
  switch (o.p.type) {
    case prism::scalar_type::s: return bench_one<float>(o);
    case prism::scalar_type::d: return bench_one<double>(o);
    case prism::scalar_type::c: return bench_one<std::complex<float>>(o);
    case prism::scalar_type::z: return bench_one<std::complex<double>>(o);
  }
  return 1;
}

// Serial OpenBLAS vs serial BLIS on leaf shapes: the measurement behind PRISM_LEAF=auto.
int run_leaves(const options& o) {
  using prism::detail::blas_library;
  using prism::detail::blas_build;
  const auto& ob = blas_library::get(blas_build::openblas64_pthread);  // the openblas leaf
  const auto& bl = blas_library::get(blas_build::blis_serial);
  std::printf("# kernels: openblas %s, blis %s; best of %d\n", ob.kernel_name().c_str(), bl.kernel_name().c_str(), o.reps);
  std::printf("%-22s %12s %12s %8s\n", "leaf m x n x k (d, NN)", "openblas GF", "blis GF", "blis/ob");
  const std::vector<std::array<int, 3>> shapes = {
      {4, 4, 1 << 20}, {8, 8, 1 << 20}, {16, 16, 1 << 18}, {32, 32, 1 << 18}, {64, 64, 1 << 16},
      {64, 64, 4096},  {16, 16, 4096},  {64, 64, 256},     {256, 256, 64},    {1024, 1024, 64},
      {2048, 512, 64}, {512, 512, 512}, {1024, 512, 1024}, {2048, 1024, 2048}};
  for (auto [m, n, k] : shapes) {
    auto A = random_matrix<double>(std::size_t(m) * k, 1), B = random_matrix<double>(std::size_t(k) * n, 2);
    std::vector<double> C(std::size_t(m) * n);
    const double flops = prism::gemm_flops(prism::scalar_type::d, m, n, k);
    const int inner = std::max(1, int(2e8 / flops));  // ~0.1 s per timing at ~20 GFLOP/s
    auto time = [&](const blas_library& lib) {
      return best_time(o.reps, [&] {
        for (int r = 0; r < inner; ++r)
          lib.gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.0, C.data(), m);
      }) / inner;
    };
    const double to = time(ob), tb = time(bl);
    std::printf("%6d x %5d x %8d %12.2f %12.2f %8.2f\n", m, n, k, flops / to * 1e-9, flops / tb * 1e-9, to / tb);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  try {
    if (args.size() < 2) throw usage_error("missing command (plan, bench or leaves)");
    const std::string& cmd = args[1];
    if (cmd == "plan") {
      options o = parse(args, 2, true);
      prism::plan p = prism::make_plan(o.p, o.ctx);
      std::cout << "# context: " << o.ctx.describe() << '\n' << p;
      if (p.domains() > 1) print_traffic(p, o);
      return 0;
    }
    if (cmd == "bench") return run_bench(parse(args, 2, true));
    if (cmd == "leaves") return run_leaves(parse(args, 2, false));
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      std::fputs(usage, stdout);
      return 0;
    }
    throw usage_error("unknown command '" + cmd + "'");
  } catch (const usage_error& e) {
    std::fprintf(stderr, "prism: %s (see 'prism --help')\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prism: %s\n", e.what());
    return 1;
  }
}
