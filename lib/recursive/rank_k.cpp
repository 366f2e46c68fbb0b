// lib/recursive/rank_k.cpp — ?syrk / ?herk: the entry prologue (checks, trivial cases, small
// calls to one leaf) in front of the triangle recursion, which is a prism::plan like
// gemm's: make_local_plan builds it from a syrk / herk problem (rank_k_problem; planner rules
// T1-T4 in lib/recursive/planner.cpp: k-cuts with triangle temporaries, diagonal cuts into
// two triangles and a gemm block, the numa level) and the executor runs it
// (lib/recursive/executor.cpp: ?syrk / ?herk leaves on triangles, gemm leaves on blocks).
// describe_rank_k summarises that plan in one line.
#include <prism/error.hpp>
#include <prism/gemm.hpp>
#include <prism/syrk.hpp>

#include <prism/plan.hpp>

#include "../leaf/backend/blas_library.hpp"
#include "../leaf/dispatch.hpp"
#include "../leaf/first_use.hpp"
#include "../leaf/kernels/streaming.hpp"
#include "../runtime/runtime.hpp"
#include "arguments.hpp"
#include "executor.hpp"
#include "local_planner.hpp"
#include "on_device.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <string_view>
#include <vector>

namespace prism {

namespace {

using detail::rank_k_error;
using detail::rank_k_info;
using detail::upper_trans;

template <scalar T>
constexpr bool complex_v = std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>;

// Elements (i, j) of C's uplo triangle in column j: rows [0, j] for 'U', [j, n) for 'L'.
inline std::int64_t first_row(char uplo, std::int64_t j) { return uplo == 'U' ? 0 : j; }
inline std::int64_t end_row(char uplo, std::int64_t j, std::int64_t n) { return uplo == 'U' ? j + 1 : n; }

// C = beta C on the triangle (alpha = 0 or k = 0); beta = 0 writes zeros without reading.
// herk keeps the diagonal real: C(j, j) = beta * Re C(j, j), as reference ?herk, which
// never reads Im C(j, j) (a NaN there must not reach the real part through beta * C).
template <scalar T>
void scale_triangle(bool herm, char uplo, std::int64_t n, T beta, T* C, std::int64_t ldc) {
  for (std::int64_t j = 0; j < n; ++j) {
    T* c = C + j * ldc;
    const T d = c[j];
    for (std::int64_t i = first_row(uplo, j); i < end_row(uplo, j, n); ++i) c[i] = beta == T(0) ? T(0) : beta * c[i];
    if constexpr (complex_v<T>)  // a real product: beta or Re C(j, j) infinite gives no NaN Im
      if (herm) c[j] = beta == T(0) ? T(0) : T(beta.real() * d.real());
  }
}

// A small call's one leaf on the caller's thread: the leaf library's ?syrk / ?herk.
template <scalar T>
void one_leaf(const problem& p, T alpha, const T* A, std::int64_t lda, T beta, T* C, std::int64_t ldc,
              const context& ctx) {
  const leaf_backend b = detail::choose_rank_k_leaf(ctx.description(), ctx.leaf(), p.type, p.uplo, p.transa, p.n, p.k);
  detail::leaf_rank_k<T>(b, p.op == operation::herk, p.uplo, p.transa, p.n, p.k, alpha, A, lda, beta, C, ldc);
}

// Whether a rank-k update runs as one leaf without planning: the planner's rule T2 at the
// root (one thread, fewer flops than the small-call threshold, or n = 1 with k < 512),
// for sizes the 32-bit leaf takes.
bool rank_k_one_leaf(const problem& p, const context& ctx) {
  return p.n <= INT_MAX && p.k <= INT_MAX && ctx.gpus() <= 0 &&
         (ctx.threads() <= 1 || p.flops() < ctx.small_flops() || (p.n == 1 && p.k < 512));
}

template <scalar T>
void run_rank_k(bool herm, const char* routine, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha,
                const T* A, std::int64_t lda, T beta, T* C, std::int64_t ldc, const context& ctx) {
  const int info = rank_k_info(herm, complex_v<T>, uplo, trans, n, k, lda, ldc);
  if (info != 0) throw rank_k_error(routine, info, false, herm, complex_v<T>, trans, n, k, lda, ldc);
  const char u = upper_trans(uplo);
  char t = upper_trans(trans);
  if (!herm && t == 'C') t = 'T';  // real syrk: 'C' is 'T'
  if (n == 0) return;
  // Device pointers (A, when read, and C on one device) run there.
  const bool reads_a = alpha != T(0) && k != 0;
  if (detail::gpu::device* dev = detail::operand_device(ctx, routine, reads_a ? A : nullptr, nullptr, C)) {
    detail::check_leading_dimensions(lda, lda, ldc, "cuBLAS");
    return detail::rank_k_on_device<T>(*dev, herm, u, t, n, k, alpha, A, lda, beta, C, ldc, ctx);
  }
  if ((alpha == T(0) || k == 0) && beta == T(1)) return;
  if (alpha == T(0) || k == 0) return scale_triangle(herm, u, n, beta, C, ldc);
  detail::check_leading_dimensions(lda, lda, ldc, "the 32-bit leaf BLAS");
  const problem p = rank_k_problem(scalar_type_of<T>(), herm ? operation::herk : operation::syrk, u, t, n, k);
  // A long call whose leaves may be prism's own (on one thread, the call is one leaf): this
  // type's streaming rank-k limits, measured once per machine if nothing told them yet
  // (lib/leaf/first_use.hpp); one whose leaves may be large BLAS ones: which library runs
  // each class of them.
  const double bytes = double(n) * double(k) * sizeof(T);
  detail::first_use_before_rank_k(ctx.description(), ctx.leaf(), p.type, n, p.flops(), bytes, ctx.threads());
  detail::first_use_before_blas_leaves(ctx.description(), ctx.leaf(), p.type, n, n, p.flops(), bytes, ctx.threads());
  if (rank_k_one_leaf(p, ctx)) return one_leaf<T>(p, alpha, A, lda, beta, C, ldc, ctx);
  // The plan's gemm blocks read op(A)'s rows twice: as A (rows of C) and as B (columns).
  auto pl = prism::detail::runtime_of(ctx).cached_plan(p, [&] { return std::make_shared<const plan>(detail::make_local_plan(p, ctx)); });
  detail::run_plan<T>(*pl, alpha, A, lda, A, lda, beta, C, ldc, ctx);
}

// Row-major C (n x n) is column-major C^T: its upper triangle is the column-major lower one.
// Row-major A with trans 'N' (n x k, lda >= k) is column-major A^T, so op(A) op(A)^T is the
// column-major call with trans 'T' (herk: 'C', since C^T = conj(C) = conj(A) A^T = A'^H A').
// Reference CBLAS checks uplo (2) and trans (3) itself, then the flipped Fortran call's
// number plus one: 4 n, 5 k, 8 lda, 11 ldc, which is the same number checked on the
// row-major arguments (lda >= k for 'N' is the flipped call's lda >= k for 'T').
template <scalar T>
void run_row_major(bool herm, const char* routine, char uplo, char trans, std::int64_t n, std::int64_t k,
                   T alpha, const T* A, std::int64_t lda, T beta, T* C, std::int64_t ldc, const context& ctx) {
  const char u = upper_trans(uplo), t = upper_trans(trans);
  const char fu = u == 'U' ? 'L' : 'U';
  const char ft = t == 'N' ? (herm ? 'C' : 'T') : 'N';
  // uplo and trans are checked as given (a bad letter must not be flipped into a good one),
  // the rest on the flipped call, whose A is k x n column-major for a row-major 'N'.
  int info = rank_k_info(herm, complex_v<T>, u, t, 0, 0, 1, 1);
  if (info == 0) info = rank_k_info(herm, complex_v<T>, fu, ft, n, k, lda, ldc);
  if (info != 0) throw rank_k_error(routine, info, true, herm, complex_v<T>, ft, n, k, lda, ldc);
  run_rank_k<T>(herm, routine, fu, ft, n, k, alpha, A, lda, beta, C, ldc, ctx);
}

// The routine's name in messages, e.g. "dsyrk" or (row-major) "cblas_zherk": a literal, so
// that a call builds no string before it has something to say (?herk is complex only; the
// real names are there for completeness).
template <scalar T>
constexpr const char* name_of(bool cblas, bool herk) {
  constexpr int i = std::string_view("sdcz").find(char(scalar_type_of<T>()));
  constexpr const char* names[2][2][4] = {
      {{"ssyrk", "dsyrk", "csyrk", "zsyrk"}, {"sherk", "dherk", "cherk", "zherk"}},
      {{"cblas_ssyrk", "cblas_dsyrk", "cblas_csyrk", "cblas_zsyrk"}, {"cblas_sherk", "cblas_dherk", "cblas_cherk", "cblas_zherk"}}};
  return names[cblas][herk][i];
}

}  // namespace

template <scalar T>
void syrk(char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, const T* A, std::int64_t lda, T beta,
          T* C, std::int64_t ldc, const context& ctx) {
  run_rank_k<T>(false, name_of<T>(false, false), uplo, trans, n, k, alpha, A, lda, beta, C, ldc, ctx);
}

template <scalar T>
void syrk(layout order, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, const T* A, std::int64_t lda,
          T beta, T* C, std::int64_t ldc, const context& ctx) {
  if (order == layout::col_major) return syrk<T>(uplo, trans, n, k, alpha, A, lda, beta, C, ldc, ctx);
  if (order != layout::row_major) throw invalid_argument(name_of<T>(true, false), "layout", 1, "must be col_major or row_major");
  run_row_major<T>(false, name_of<T>(true, false), uplo, trans, n, k, alpha, A, lda, beta, C, ldc, ctx);
}

template <scalar T>
  requires(std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>)
void herk(char uplo, char trans, std::int64_t n, std::int64_t k, real_type<T> alpha, const T* A, std::int64_t lda,
          real_type<T> beta, T* C, std::int64_t ldc, const context& ctx) {
  run_rank_k<T>(true, name_of<T>(false, true), uplo, trans, n, k, T(alpha), A, lda, T(beta), C, ldc, ctx);
}

template <scalar T>
  requires(std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>)
void herk(layout order, char uplo, char trans, std::int64_t n, std::int64_t k, real_type<T> alpha, const T* A,
          std::int64_t lda, real_type<T> beta, T* C, std::int64_t ldc, const context& ctx) {
  if (order == layout::col_major) return herk<T>(uplo, trans, n, k, alpha, A, lda, beta, C, ldc, ctx);
  if (order != layout::row_major) throw invalid_argument(name_of<T>(true, true), "layout", 1, "must be col_major or row_major");
  run_row_major<T>(true, name_of<T>(true, true), uplo, trans, n, k, T(alpha), A, lda, T(beta), C, ldc, ctx);
}

template <scalar T>
void execute_rank_k(const plan& p, T alpha, const T* A, std::int64_t lda, T beta, T* C, std::int64_t ldc,
                    const context& ctx) {
  const problem& pr = p.problem();
  if (p.nodes().empty()) throw plan_error("empty plan");
  if (pr.op == operation::gemm) throw plan_error("execute_rank_k runs syrk / herk plans; a gemm plan runs through prism::execute");
  if (pr.type != scalar_type_of<T>())
    throw plan_error(std::string("plan is for type '") + char(pr.type) + "', called with '" + char(scalar_type_of<T>()) + "'");
  const bool herm = pr.op == operation::herk;
  const char* routine = name_of<T>(false, herm);
  if constexpr (complex_v<T>)
    if (herm && (alpha.imag() != 0 || beta.imag() != 0)) throw error(std::string(routine) + ": alpha and beta of a herk plan are real");
  const int info = rank_k_info(herm, complex_v<T>, pr.uplo, pr.transa, pr.n, pr.k, lda, ldc);
  if (info != 0) throw rank_k_error(routine, info, false, herm, complex_v<T>, pr.transa, pr.n, pr.k, lda, ldc);
  if (pr.n > 0) {  // device pointers need a plan on device operands, and only they
    const bool reads_a = alpha != T(0) && pr.k != 0;
    detail::gpu::device* dev = detail::operand_device(ctx, routine, reads_a ? A : nullptr, nullptr, C);
    if (p.on_device() != (dev != nullptr))
      throw plan_error(p.on_device() ? "a plan on device operands runs on pointers into one device's memory"
                                     : "device pointers run through a plan on device operands (prism::make_device_plan)");
    if (dev != nullptr) {
      detail::check_leading_dimensions(lda, lda, ldc, "cuBLAS");
      if (reads_a) return detail::run_on_device<T>(p, *dev, alpha, A, lda, A, lda, beta, C, ldc);
      return detail::rank_k_on_device<T>(*dev, herm, pr.uplo, pr.transa, pr.n, pr.k, alpha, A, lda, beta, C, ldc, ctx);
    }
  }
  detail::check_fits(p, ctx, false);  // before C is touched
  if (pr.n == 0 || ((alpha == T(0) || pr.k == 0) && beta == T(1))) return;
  if (alpha == T(0) || pr.k == 0) return scale_triangle(herm, pr.uplo, pr.n, beta, C, ldc);
  detail::check_leading_dimensions(lda, lda, ldc, "the 32-bit leaf BLAS");
  detail::run_plan<T>(p, alpha, A, lda, A, lda, beta, C, ldc, ctx);
}

std::string describe_rank_k(scalar_type t, std::int64_t n, std::int64_t k, const context& ctx) {
  if (n < 0 || k < 0) throw error("describe_rank_k: n and k must be >= 0");
  const problem p = rank_k_problem(t, operation::syrk, 'U', 'N', n, k);
  if (n == 0 || rank_k_one_leaf(p, ctx))
    return "leaf n=" + std::to_string(n) + " k=" + std::to_string(k) + "; depth 0, 1 leaves, 0 gemm blocks, 0 B temporaries";
  const plan pl = detail::make_local_plan(p, ctx);
  const node& top = pl.nodes()[0];
  std::string head;
  if (top.kind == step_kind::leaf) {
    head = "leaf n=" + std::to_string(n) + " k=" + std::to_string(k);
  } else if (top.cut == dim::k) {
    head = std::string(top.kind == step_kind::dfs ? "dfs " : "") + (top.where == level::numa ? "numa " : "") + "k-cut " +
           std::to_string(top.parts.size()) + ":";
    for (const part& pt : top.parts) {  // appended piece by piece (GCC 12 -Wrestrict false positive)
      head += ' ';
      head += std::to_string(pt.size);
      if (pt.threads > 0) {
        head += '@';
        if (pt.domains > 0) head += std::to_string(pt.domains) + "d,";
        head += std::to_string(pt.threads);
        head += 't';
      }
    }
  } else {  // a diagonal cut
    const std::int64_t n1 = top.parts[0].size, n2 = top.parts[1].size;
    head = std::string(top.kind == step_kind::dfs ? "dfs " : "") + (top.where == level::numa ? "numa " : "") + "n-cut " +
           std::to_string(n1) + "+" + std::to_string(n2) + " (off-diagonal gemm " + std::to_string(std::max(n1, n2)) +
           "x" + std::to_string(std::min(n1, n2)) + "x" + std::to_string(k) + ")";
  }
  std::size_t gemm_blocks = 0;
  for (const node& nd : pl.nodes()) gemm_blocks += is_diagonal_cut(nd) ? 1 : 0;
  return head + "; depth " + std::to_string(pl.depth()) + ", " + std::to_string(pl.leaves()) + " leaves, " +
         std::to_string(gemm_blocks) + " gemm blocks, " + std::to_string(pl.extra_bytes()) + " B temporaries";
}

#define PRISM_INSTANTIATE(T)                                                                                 \
  template void syrk<T>(char, char, std::int64_t, std::int64_t, T, const T*, std::int64_t, T, T*, std::int64_t, \
                        const context&);                                                                     \
  template void syrk<T>(layout, char, char, std::int64_t, std::int64_t, T, const T*, std::int64_t, T, T*,       \
                        std::int64_t, const context&);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE
template void execute_rank_k<float>(const plan&, float, const float*, std::int64_t, float, float*, std::int64_t,
                                    const context&);
template void execute_rank_k<double>(const plan&, double, const double*, std::int64_t, double, double*, std::int64_t,
                                     const context&);
template void execute_rank_k<std::complex<float>>(const plan&, std::complex<float>, const std::complex<float>*,
                                                  std::int64_t, std::complex<float>, std::complex<float>*,
                                                  std::int64_t, const context&);
template void execute_rank_k<std::complex<double>>(const plan&, std::complex<double>, const std::complex<double>*,
                                                   std::int64_t, std::complex<double>, std::complex<double>*,
                                                   std::int64_t, const context&);
#define PRISM_INSTANTIATE(T)                                                                                      \
  template void herk<T>(char, char, std::int64_t, std::int64_t, real_type<T>, const T*, std::int64_t,            \
                        real_type<T>, T*, std::int64_t, const context&);                                          \
  template void herk<T>(layout, char, char, std::int64_t, std::int64_t, real_type<T>, const T*, std::int64_t,    \
                        real_type<T>, T*, std::int64_t, const context&);
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism
