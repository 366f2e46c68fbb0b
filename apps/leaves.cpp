// apps/leaves.cpp — `prism leaves`: the kernel sets prism's leaf libraries run, and the
// streaming leaf against them on small leaves.
#include "commands.hpp"
#include "measure.hpp"

#include <prism/prism.hpp>

#include "environment/environment.hpp"
#include "leaf/backend/blas_leaf_rule.hpp"
#include "leaf/backend/blas_library.hpp"
#include "leaf/dispatch.hpp"
#include "leaf/kernels/streaming.hpp"
#include "simd/simd.hpp"

#include <algorithm>
#include <array>
#include <complex>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace prism_app {

namespace {

// The streaming leaf against the OpenBLAS and the BLIS leaf (prism's private copies, their
// own kernel sets) on leaves with m, n <= 128, one type and trans pair: one row of
// `prism leaves`' second table. str/best divides by the faster BLAS leaf.
template <class T>
void time_streaming_leaf(const options& o, const prism::detail::blas_library& ob, const prism::detail::blas_library& bl,
                         int m, int n, int k, char ta, char tb) {
  const int lda = ta == 'N' ? m : k, ldb = tb == 'N' ? k : n;
  auto A = random_matrix<T>(std::size_t(m) * k, 1), B = random_matrix<T>(std::size_t(k) * n, 2);
  std::vector<T> C(std::size_t(m) * n);
  const double flops = prism::gemm_flops(prism::scalar_type_of<T>(), m, n, k);
  auto blas = [&](const prism::detail::blas_library& lib) {
    return time_calls(o.reps, [&] {
             lib.gemm<T>(ta, tb, m, n, k, T(1), A.data(), lda, B.data(), ldb, T(0), C.data(), m);
           }).seconds;
  };
  const double to = blas(ob), tl = blas(bl);
  const double ts = time_calls(o.reps, [&] {
                      prism::detail::streaming_gemm<T>(ta, tb, m, n, k, T(1), A.data(), lda, B.data(), ldb, T(0),
                                                       C.data(), m);
                    }).seconds;
  std::printf("%4d x %3d x %8d %4c %3c%c %12.2f %9.2f %13.2f %8.2f\n", m, n, k, char(prism::scalar_type_of<T>()), ta,
              tb, flops / to * 1e-9, flops / tl * 1e-9, flops / ts * 1e-9, std::min(to, tl) / ts);
  std::fflush(stdout);
}

// The streaming leaf against the OpenBLAS and BLIS leaves (1 thread each), all four types
// (those of --types when given), NN, TN and NT: the measurement behind streaming_preferred
// (lib/leaf/kernels/auto_rule.cpp).
void run_streaming_leaves(const options& o) {
  const auto& ob = prism::detail::leaf_library(prism::leaf_backend::openblas);
  const auto& bl = prism::detail::leaf_library(prism::leaf_backend::blis);
  std::printf("%s# streaming leaf (prism's own kernel, %s) against the openblas (%s) and blis (%s) leaves, 1 thread; "
              "best of %d\n",
              o.streaming_only ? "" : "\n", prism::detail::simd_target(), ob.kernel_name().c_str(),
              bl.kernel_name().c_str(), o.reps);
  std::printf("%-21s %4s %4s %12s %9s %13s %8s\n", "leaf m x n x k", "type", "op", "openblas GF", "blis GF",
              "streaming GF", "str/best");
  const std::vector<std::array<int, 3>> shapes = {
      {4, 4, 1 << 20},   {8, 8, 1 << 20},   {16, 16, 1 << 18},  {16, 8, 1 << 19},   {8, 16, 1 << 19},
      {1, 16, 1 << 20},  {16, 1, 1 << 20},  {4, 4, 65536},      {8, 8, 65536},      {4, 4, 16384},
      {8, 8, 16384},     {16, 16, 16384},   {4, 4, 4096},       {8, 8, 4096},       {16, 16, 4096},
      {8, 8, 512},       {16, 16, 512},     {8, 8, 128},        {16, 16, 128},      {4, 4, 64},
      {8, 8, 64},        {16, 16, 64},      {16, 16, 16},
      // tiled (m or n above 16): tall leaves, then k down to where the chunks are few
      {24, 24, 1 << 20}, {32, 32, 1 << 20}, {48, 48, 1 << 19},  {64, 64, 1 << 18},  {64, 16, 1 << 19},
      {96, 96, 1 << 17}, {128, 128, 1 << 17}, {32, 32, 16384},  {64, 64, 16384},    {128, 128, 16384},
      {32, 32, 4096},    {64, 64, 4096},    {128, 128, 4096},   {64, 64, 512}};
  for (auto [m, n, k] : shapes)
    for (const char* op : {"NN", "TN", "NT"}) {
      auto wanted = [&](char t) { return !o.leaf_types_given || o.leaf_types.find(t) != std::string::npos; };
      if (wanted('d')) time_streaming_leaf<double>(o, ob, bl, m, n, k, op[0], op[1]);
      if (wanted('z')) time_streaming_leaf<std::complex<double>>(o, ob, bl, m, n, k, op[0], op[1]);
      if (wanted('s')) time_streaming_leaf<float>(o, ob, bl, m, n, k, op[0], op[1]);
      if (wanted('c')) time_streaming_leaf<std::complex<float>>(o, ob, bl, m, n, k, op[0], op[1]);
    }
}

// The streaming rank-k leaf against the OpenBLAS and BLIS leaves' ?syrk / ?herk (1 thread,
// triangle uplo, beta = 0) on one n x k Gram leaf: one row of `prism leaves --syrk`.
// trans 'N' reads A as n x k (NumPy's A.T @ A of a C-order k x n array), 'T' / 'C' as k x n
// (Fortran's, or LAPACK's CholeskyQR). GF/s count n(n + 1)k real flops (x4 complex).
template <class T>
void time_rank_k_leaf(const options& o, const prism::detail::blas_library& ob, const prism::detail::blas_library& bl,
                    int n, int k, char uplo, char trans) {
  constexpr bool cx = !std::is_same_v<T, float> && !std::is_same_v<T, double>;
  const int lda = trans == 'N' ? n : k;
  auto A = random_matrix<T>(std::size_t(n) * k, 1);
  std::vector<T> C(std::size_t(n) * n);
  const double flops = (cx ? 4.0 : 1.0) * double(n) * double(n + 1) * double(k);
  auto run = [&](auto&& call) { return time_calls(o.reps, call).seconds; };
  auto blas = [&](const prism::detail::blas_library& lib) {
    return run([&] {
      if constexpr (cx) lib.herk<T>(uplo, trans, n, k, 1.0, A.data(), lda, 0.0, C.data(), n);
      else lib.syrk<T>(uplo, trans, n, k, T(1), A.data(), lda, T(0), C.data(), n);
    });
  };
  const double to = blas(ob), tl = blas(bl);
  const double ts = run([&] { prism::detail::streaming_rank_k<T>(cx, uplo, trans, n, k, T(1), A.data(), lda, T(0), C.data(), n); });
  std::printf("%4d x %8d %4c %4s %c%c %12.2f %9.2f %13.2f %8.2f\n", n, k, char(prism::scalar_type_of<T>()),
              cx ? "herk" : "syrk", uplo, trans, flops / to * 1e-9, flops / tl * 1e-9, flops / ts * 1e-9, std::min(to, tl) / ts);
  std::fflush(stdout);
}

// The streaming rank-k leaf against the BLAS leaves (the measurement behind
// streaming_rank_k_preferred, lib/leaf/kernels/auto_rule.cpp): syrk for the real types, herk for
// the complex ones, each triangle (U, L; a BLAS can be faster at one) and trans 'N' and
// 'T' / 'C', n from 4 to 128, A from 128 KiB to 256 MiB.
void run_rank_k_leaves(const options& o) {
  const auto& ob = prism::detail::leaf_library(prism::leaf_backend::openblas);
  const auto& bl = prism::detail::leaf_library(prism::leaf_backend::blis);
  std::printf("# streaming rank-k leaf (prism's own kernel, %s) against the openblas (%s) and blis (%s) leaves' "
              "?syrk / ?herk, 1 thread, upper and lower; best of %d\n",
              prism::detail::simd_target(), ob.kernel_name().c_str(), bl.kernel_name().c_str(), o.reps);
  std::printf("%-15s %4s %4s %2s %12s %9s %13s %8s\n", "leaf n x k", "type", "op", "ut", "openblas GF", "blis GF",
              "streaming GF", "str/best");
  const std::vector<std::array<int, 2>> shapes = {
      {8, 1 << 22},  {16, 1 << 21},  {32, 1 << 20},  {64, 1 << 19},  {96, 1 << 18},   {128, 1 << 17},
      {4, 1 << 16},  {8, 1 << 14},   {16, 1 << 14},  {32, 1 << 14},  {64, 1 << 13},   {128, 1 << 12},
      {32, 2048},    {64, 1024},     {128, 512},     {64, 128},      {128, 128}};
  auto wanted = [&](char t) { return !o.leaf_types_given || o.leaf_types.find(t) != std::string::npos; };
  for (auto [n, k] : shapes)
    for (bool n_form : {true, false})
      for (char uplo : {'U', 'L'}) {
        if (wanted('d')) time_rank_k_leaf<double>(o, ob, bl, n, k, uplo, n_form ? 'N' : 'T');
        if (wanted('z')) time_rank_k_leaf<std::complex<double>>(o, ob, bl, n, k, uplo, n_form ? 'N' : 'C');
        if (wanted('s')) time_rank_k_leaf<float>(o, ob, bl, n, k, uplo, n_form ? 'N' : 'T');
        if (wanted('c')) time_rank_k_leaf<std::complex<float>>(o, ob, bl, n, k, uplo, n_form ? 'N' : 'C');
      }
}

// What prism chose for one leaf library's kernels, as `prism leaves` prints it.
void print_kernel_choice(const char* name, const prism::detail::blas_library& lib, double probe_gflops) {
  std::printf("# %s leaf: %s (%s)\n", name, lib.path().c_str(),
              lib.shared_with_host() ? "shared with the host" : "private copy, 1 thread");
  const prism::detail::kernel_choice* k = lib.kernels();
  if (k == nullptr) {  // a fallback build (the host took prism's usual file): not chosen by prism
    std::printf("#   running: %s (a fallback build: its kernels are not prism's choice)\n", lib.kernel_name().c_str());
  } else {
    std::printf("#   request: %s; chose %s: %s\n", k->request.c_str(), k->chosen.empty() ? "nothing" : k->chosen.c_str(),
                k->why.c_str());
    std::printf("#   candidates on this CPU, features' order: %s\n", k->candidates.empty() ? "none" : k->candidates.c_str());
    if (!k->carried.empty()) std::printf("#   carried by this file: %s\n", k->carried.c_str());
    std::printf("#   running: %s; library's own detection: %s\n", k->running.c_str(),
                k->detected.empty() ? "not asked" : k->detected.c_str());
    if (!k->measured.empty()) std::printf("#   probe: %s\n", k->measured.c_str());
    std::printf("#   interface: %s\n", k->interface.c_str());
    if (!k->environment.empty()) std::printf("#   ignored from the environment: %s\n", k->environment.c_str());
    if (!k->note.empty()) std::printf("#   note: %s\n", k->note.c_str());
  }
  std::printf("#   probe d 512^3, 1 thread: %.1f GF/s\n", probe_gflops);
}

}  // namespace

// The leaf libraries' kernel sets, then single-threaded OpenBLAS vs BLIS on leaf shapes:
// the measurement behind PRISM_LEAF=auto (scripts/leaf-kernels.sh records it).
int run_leaves(const options& o) {
  if (o.streaming_only) {
    run_streaming_leaves(o);
    return 0;
  }
  if (o.syrk_only) {
    run_rank_k_leaves(o);
    return 0;
  }
  using prism::detail::blas_library;
  using prism::leaf_backend;
  const auto& cpu = prism::detail::this_cpu();
  const std::string kernels_set = prism::detail::read_environment().leaf_kernels;
  const char* lk = kernels_set.empty() ? nullptr : kernels_set.c_str();
  std::printf("# cpu: %s\n", cpu.describe().c_str());
  std::printf("# %s\n", o.ctx.description().summary().c_str());
  {  // the description itself, as a machine file holds it
    std::istringstream lines(o.ctx.description().to_string());
    for (std::string line; std::getline(lines, line);) std::printf("#   %s\n", line.c_str());
  }
  std::printf("# PRISM_LEAF_KERNELS: %s\n", lk != nullptr && *lk != '\0' ? lk : "unset (auto for both)");
  const blas_library& ob = prism::detail::leaf_library(leaf_backend::openblas);
  const blas_library& bl = prism::detail::leaf_library(leaf_backend::blis);
  print_kernel_choice("openblas", ob, ob.measure_gflops(prism::scalar_type::d, 512, 512, 512, o.reps));
  print_kernel_choice("blis", bl, bl.measure_gflops(prism::scalar_type::d, 512, 512, 512, o.reps));
  std::printf("# auto's library for large double leaves: %s\n", prism::detail::blas_leaf_rule_text().c_str());
  std::printf("# best of %d timings of >= %g s each; 'auto' is the backend PRISM_LEAF=auto picks for the shape\n",
              o.reps, min_timing);
  std::printf("%-26s %4s %12s %12s %8s %9s\n", "leaf m x n x k (NN)", "type", "openblas GF", "blis GF", "blis/ob",
              "auto");
  const std::vector<std::array<std::int64_t, 3>> shapes = {
      // squares
      {64, 64, 64}, {128, 128, 128}, {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048},
      // wide (k small) and tall-skinny (k large) leaves
      {256, 256, 64}, {1024, 1024, 64}, {2048, 4096, 64}, {4, 4, 1 << 20}, {8, 8, 1 << 20}, {16, 16, 1 << 20},
      {32, 32, 1 << 20}, {64, 64, 1 << 20}, {128, 128, 1 << 18},
      // around the m, n threshold of the auto rule, k as a cache-sized leaf has it
      {64, 64, 4096}, {96, 96, 4096}, {128, 128, 4096}, {192, 192, 4096}, {256, 256, 4096}, {512, 512, 4096}};
  for (char letter : o.leaf_types) {
    const auto t = prism::scalar_type(letter);
    for (const std::array<std::int64_t, 3>& dims : shapes) {
      const std::int64_t m = dims[0], n = dims[1], k = dims[2];  // (clang 14's lambdas capture no structured binding)
      const double flops = prism::gemm_flops(t, m, n, k);
      auto rate = [&](const blas_library& lib) {
        auto one = [&]<class T>() {
          auto A = random_matrix<T>(std::size_t(m * k), 1), B = random_matrix<T>(std::size_t(k * n), 2);
          std::vector<T> C(std::size_t(m * n));
          return time_calls(o.reps, [&] {
                   lib.gemm<T>('N', 'N', m, n, k, T(1), A.data(), m, B.data(), k, T(0), C.data(), m);
                 }).seconds;
        };
        double s = 0;
        switch (t) {
          case prism::scalar_type::s: s = one.template operator()<float>(); break;
          case prism::scalar_type::d: s = one.template operator()<double>(); break;
          case prism::scalar_type::c: s = one.template operator()<std::complex<float>>(); break;
          case prism::scalar_type::z: s = one.template operator()<std::complex<double>>(); break;
        }
        return flops / s * 1e-9;
      };
      const double r_ob = rate(ob), r_bl = rate(bl);
      char shape[64];
      std::snprintf(shape, sizeof shape, "%lld x %lld x %lld", (long long)m, (long long)n, (long long)k);
      std::printf("%-26s %4c %12.2f %12.2f %8.2f %9s\n", shape, letter, r_ob, r_bl, r_bl / r_ob,
                  to_string(prism::detail::choose_leaf(o.ctx.description(), leaf_backend::automatic, t, m, n, k)));
      std::fflush(stdout);
    }
  }
  run_streaming_leaves(o);
  return 0;
}

}  // namespace prism_app
