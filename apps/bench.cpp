// apps/bench.cpp — `prism bench`: prism against its own leaf libraries on one shape,
// in this process, reported as ratios.
#include "commands.hpp"
#include "measure.hpp"

#include <prism/prism.hpp>

#include "environment/environment.hpp"
#include "leaf/backend/blas_library.hpp"
#include "leaf/dispatch.hpp"

#include <oneapi/tbb/info.h>

#include <unistd.h>

#include <algorithm>
#include <complex>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace prism_app {

namespace {


// "74.5 PiB": bytes in binary units, three significant digits.
std::string binary_size(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  int u = 0;
  while (bytes >= 1024 && u < 8) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %s", bytes, units[u]);
  return buf;
}

// Refuses, before allocating anything, operands that do not fit in this machine's memory.
void check_memory(const prism::problem& p) {
  const double rows_a = double(p.transa == 'N' ? p.m : p.k), cols_a = double(p.transa == 'N' ? p.k : p.m);
  const double rows_b = double(p.transb == 'N' ? p.k : p.n), cols_b = double(p.transb == 'N' ? p.n : p.k);
  const double e = double(prism::element_size(p.type));
  const double b_bytes = p.op == prism::operation::gemm ? std::max(1.0, rows_b) * cols_b * e : 0;  // rank-k: B is A
  const double bytes[3] = {std::max(1.0, rows_a) * cols_a * e, b_bytes,
                           std::max(1.0, double(p.m)) * double(p.n) * e};
  const double total = bytes[0] + bytes[1] + bytes[2];
  const double ram = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE));
  const char* names[3] = {"A", "B", "C"};
  double sum = 0;
  for (int i = 0; i < 3; ++i) {
    sum += bytes[i];
    if (sum > ram)
      throw bad_input(std::string("not enough memory for ") + names[i] + ": " + binary_size(bytes[i]) +
                      " (A, B and C need " + binary_size(total) + ", this machine has " + binary_size(ram) + ")");
  }
}

// prism and threaded OpenBLAS timed on o's problem: a gemm, or (--syrk / --herk) a rank-k
// update of an N x N triangle, A N x K ('N') or K x N. beta = 0: every repeat computes the same C.
template <class T>
std::pair<timing, timing> time_both(const options& o, const prism::detail::blas_library& openblas, int cores) {
  const auto& p = o.p;
  const std::int64_t rows_a = p.transa == 'N' ? p.m : p.k, cols_a = p.transa == 'N' ? p.k : p.m;
  const std::int64_t lda = std::max<std::int64_t>(1, rows_a), ldc = std::max<std::int64_t>(1, p.m);
  auto A = random_matrix<T>(std::size_t(lda * cols_a), 1);
  std::vector<T> C(std::size_t(ldc * p.n), T(0));
  if (p.op != prism::operation::gemm) {
    const bool herk = p.op == prism::operation::herk;
    const timing t_prism = time_calls(o.reps, [&] {
      if constexpr (!std::is_floating_point_v<T>)
        if (herk) return prism::herk<T>(p.uplo, p.transa, p.n, p.k, 1.0, A.data(), lda, 0.0, C.data(), ldc, o.ctx);
      prism::syrk<T>(p.uplo, p.transa, p.n, p.k, T(1), A.data(), lda, T(0), C.data(), ldc, o.ctx);
    });
    openblas.set_threads(cores);
    const timing t_ob = time_calls(o.reps, [&] {
      if constexpr (!std::is_floating_point_v<T>)
        if (herk) return openblas.herk<T>(p.uplo, p.transa, p.n, p.k, 1.0, A.data(), lda, 0.0, C.data(), ldc);
      openblas.syrk<T>(p.uplo, p.transa, p.n, p.k, T(1), A.data(), lda, T(0), C.data(), ldc);
    });
    return {t_prism, t_ob};
  }
  const std::int64_t rows_b = p.transb == 'N' ? p.k : p.n, cols_b = p.transb == 'N' ? p.n : p.k;
  const std::int64_t ldb = std::max<std::int64_t>(1, rows_b);
  auto B = random_matrix<T>(std::size_t(ldb * cols_b), 2);
  const timing t_prism = time_calls(o.reps, [&] {
    prism::gemm<T>(p.transa, p.transb, p.m, p.n, p.k, T(1), A.data(), lda, B.data(), ldb, T(0), C.data(), ldc, o.ctx);
  });
  openblas.set_threads(cores);
  const timing t_ob = time_calls(o.reps, [&] {
    openblas.gemm<T>(p.transa, p.transb, int(p.m), int(p.n), int(p.k), T(1), A.data(), int(lda), B.data(), int(ldb),
                     T(0), C.data(), int(ldc));
  });
  return {t_prism, t_ob};
}

template <class T>
int bench_one(const options& o) {
  const auto& p = o.p;
  check_memory(p);
  const auto& openblas = prism::detail::blas_library::get(prism::detail::blas_build::openblas_pthread);
  const int cores = oneapi::tbb::info::default_concurrency();
  const double flops = p.flops();
  const auto [t_prism, t_ob] = time_both<T>(o, openblas, cores);
  // The host, and what moves the baseline: OpenBLAS's kernels follow OPENBLAS_CORETYPE and
  // its blocking OPENBLAS_L2_SIZE, which a host may set for every program (docs/performance.md).
  const auto env = [](const char* name) {
    const char* v = prism::detail::backend_variable(name);
    return std::string(v != nullptr ? v : "unset");
  };
  const auto& ob_leaf = prism::detail::leaf_library(prism::leaf_backend::openblas);
  const auto& blis_leaf = prism::detail::leaf_library(prism::leaf_backend::blis);
  std::printf("# host: %s, %d core%s; OPENBLAS_CORETYPE=%s OPENBLAS_L2_SIZE=%s; openblas: %s (kernels %s); prism's "
              "leaves: openblas %s, blis %s\n",
              o.ctx.description().cpu().c_str(), cores, cores == 1 ? "" : "s", env("OPENBLAS_CORETYPE").c_str(), env("OPENBLAS_L2_SIZE").c_str(),
              openblas.path().c_str(), openblas.kernel_name().c_str(), ob_leaf.kernel_name().c_str(),
              blis_leaf.kernel_name().c_str());
  const std::string what = p.op == prism::operation::gemm ? std::string("trans ") + p.transa + p.transb
                                                            : std::string(prism::to_string(p.op)) + " " + p.uplo + p.transa;
  std::printf("shape %lldx%lldx%lld type %c %s, best of %d timings of >= %g s each\n", (long long)p.m, (long long)p.n,
              (long long)p.k, char(p.type), what.c_str(), o.reps, min_timing);
  auto line = [&](const std::string& who, const timing& t) {
    std::printf("  %-22s %12s per call %10.2f GFLOP/s  (%ld calls per timing)\n", who.c_str(),
                duration(t.seconds).c_str(), flops / t.seconds * 1e-9, t.calls);
  };
  line("prism (" + std::to_string(o.ctx.threads()) + " threads)", t_prism);
  line("openblas (" + std::to_string(cores) + " threads)", t_ob);
  std::printf("  ratio prism/openblas  %.3f\n", t_ob.seconds / t_prism.seconds);
  return 0;
}
}  // namespace

int run_bench(const options& o) {
  const std::int64_t int_max = std::numeric_limits<int>::max();
  if (std::max({o.p.m, o.p.n, o.p.k}) > int_max)
    throw bad_input("prism bench compares with 32-bit OpenBLAS: M, N and K must be at most " + std::to_string(int_max),
                    "bench");
  switch (o.p.type) {
    case prism::scalar_type::s: return bench_one<float>(o);
    case prism::scalar_type::d: return bench_one<double>(o);
    case prism::scalar_type::c: return bench_one<std::complex<float>>(o);
    case prism::scalar_type::z: return bench_one<std::complex<double>>(o);
  }
  return 1;
}

}  // namespace prism_app
