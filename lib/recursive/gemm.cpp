// lib/recursive/gemm.cpp — the one entry prologue (BLIS bli_l3_oapi_ex style): check
// arguments, return early on trivial cases, send small problems to one leaf, otherwise
// plan and execute.
#include <prism/error.hpp>
#include <prism/gemm.hpp>
#include <prism/version.hpp>

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
#include <cctype>
#include <climits>
#include <string_view>

namespace prism {

namespace {

// The routine's name in messages, "dgemm" or (row-major) "cblas_dgemm": a literal, so
// that a call builds no string before it has something to say.
template <scalar T>
constexpr const char* routine_name(bool cblas = false) {
  constexpr int i = std::string_view("sdcz").find(char(scalar_type_of<T>()));
  constexpr const char* plain[] = {"sgemm", "dgemm", "cgemm", "zgemm"};
  constexpr const char* prefixed[] = {"cblas_sgemm", "cblas_dgemm", "cblas_cgemm", "cblas_zgemm"};
  return cblas ? prefixed[i] : plain[i];
}

using detail::upper_trans;
using gpu_device = detail::gpu::device;

// Reference BLAS ?gemm checks, in its order, with its argument positions
// (detail::fortran_info): 1 transa, 2 transb, 3 m, 4 n, 5 k, 8 lda, 10 ldb, 13 ldc.
template <scalar T>
void check_column_major(char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k,
                        std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  const int info = detail::fortran_info(ta, tb, m, n, k, lda, ldb, ldc);
  if (info == 0) return;  // the common case costs a few compares, no string is built
  throw detail::argument_error(routine_name<T>(), info, false, false, {ta, tb, m, n, k, lda, ldb, ldc});
}

// Reference CBLAS row-major checks (detail::row_major_info): trans 2, 3, then n (5) before
// m (4) and ldb (11) before lda (9), as reference CBLAS reports them. Row-major A is m x k
// (lda >= k) when transa = 'N', else k x m; B is k x n (ldb >= n) when transb = 'N'.
template <scalar T>
void check_row_major(char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k,
                     std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  const int reported = detail::row_major_info(ta, tb, m, n, k, lda, ldb, ldc).reported;
  if (reported == 0) return;
  throw detail::argument_error(routine_name<T>(true), reported, true, true, {ta, tb, m, n, k, lda, ldb, ldc});
}

// C = beta C for alpha = 0 or k = 0. beta = 0 writes zeros without reading C, so NaN or
// Inf already in C do not survive (reference BLAS does the same).
template <scalar T>
void scale(std::int64_t m, std::int64_t n, T beta, T* C, std::int64_t ldc) {
  for (std::int64_t j = 0; j < n; ++j) {
    T* c = C + j * ldc;
    if (beta == T(0)) std::fill(c, c + m, T(0));
    else for (std::int64_t i = 0; i < m; ++i) c[i] *= beta;
  }
}

// Everything after the checks, shared by gemm and execute: trivial cases, then `body`.
// Returns true when the call is finished (nothing more to do).
template <scalar T>
bool trivial(std::int64_t m, std::int64_t n, std::int64_t k, T alpha, T beta, T* C, std::int64_t ldc) {
  if (m == 0 || n == 0) return true;
  if ((alpha == T(0) || k == 0) && beta == T(1)) return true;
  if (alpha == T(0) || k == 0) {
    scale(m, n, beta, C, ldc);
    return true;
  }
  return false;
}

}  // namespace

template <scalar T>
void gemm(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
          const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
          std::int64_t ldc, const context& ctx) {
  const char ta = upper_trans(transa), tb = upper_trans(transb);
  check_column_major<T>(ta, tb, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  // Device pointers (all of the operands the call reads on one device) run there.
  const bool reads_ab = alpha != T(0) && k != 0;
  if (gpu_device* dev = detail::operand_device(ctx, routine_name<T>(), reads_ab ? A : nullptr, reads_ab ? B : nullptr, C)) {
    detail::check_leading_dimensions(lda, ldb, ldc, "cuBLAS");
    return detail::gemm_on_device<T>(*dev, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, ctx);
  }
  if (trivial(m, n, k, alpha, beta, C, ldc)) return;
  detail::check_leading_dimensions(lda, ldb, ldc, "the 32-bit leaf BLAS");
  const problem p{scalar_type_of<T>(), ta, tb, m, n, k};
  if (detail::runs_as_one_leaf(p, ctx)) {
    detail::leaf_gemm<T>(detail::choose_leaf(ctx.description(), ctx.leaf(), p.type, m, n, k, ta, tb), ta, tb, m, n, k, alpha, A, lda, B, ldb,
                         beta, C, ldc);
    return;
  }
  // A long call whose leaves may be prism's own: the streaming crossovers of this machine,
  // measured once per machine if nothing told them yet (lib/leaf/first_use.hpp); one whose
  // leaves may be large BLAS ones: which library runs each class of them.
  const double bytes = double(m + n) * double(k) * sizeof(T);
  detail::first_use_before_call(ctx.description(), ctx.leaf(), m, n, p.flops(), bytes, ctx.threads());
  detail::first_use_before_blas_leaves(ctx.description(), ctx.leaf(), p.type, m, n, p.flops(), bytes, ctx.threads());
  auto pl = prism::detail::runtime_of(ctx).cached_plan(p, [&] { return std::make_shared<const plan>(detail::make_local_plan(p, ctx)); });
  detail::run_plan<T>(*pl, alpha, A, lda, B, ldb, beta, C, ldc, ctx);
}

template <scalar T>
void gemm(layout order, char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k,
          T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
          std::int64_t ldc, const context& ctx) {
  if (order == layout::col_major) {
    gemm<T>(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, ctx);
    return;
  }
  if (order != layout::row_major) throw invalid_argument(routine_name<T>(true), "layout", 1, "must be col_major or row_major");
  const char ta = upper_trans(transa), tb = upper_trans(transb);
  check_row_major<T>(ta, tb, m, n, k, lda, ldb, ldc);
  // Row-major C (m x n) is column-major C^T (n x m), and C^T = op(B)^T op(A)^T: the same
  // call with A and B (and m and n) swapped and the same trans letters.
  gemm<T>(tb, ta, n, m, k, alpha, B, ldb, A, lda, beta, C, ldc, ctx);
}

template <scalar T>
void execute(const plan& p, T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb,
             T beta, T* C, std::int64_t ldc, const context& ctx) {
  const problem& pr = p.problem();
  if (pr.type != scalar_type_of<T>())
    throw plan_error(std::string("plan is for type '") + char(pr.type) + "', called with '" +
                     char(scalar_type_of<T>()) + "'");
  if (p.nodes().empty()) throw plan_error("empty plan");
  if (pr.op != operation::gemm)
    throw plan_error(std::string("a ") + to_string(pr.op) + " plan runs through prism::execute_rank_k (prism/syrk.hpp)");
  check_column_major<T>(pr.transa, pr.transb, pr.m, pr.n, pr.k, lda, ldb, ldc);
  if (pr.m > 0 && pr.n > 0) {  // device pointers need a plan on device operands, and only they
    const bool reads_ab = alpha != T(0) && pr.k != 0;
    gpu_device* dev = detail::operand_device(ctx, routine_name<T>(), reads_ab ? A : nullptr, reads_ab ? B : nullptr, C);
    if (p.on_device() != (dev != nullptr))
      throw plan_error(p.on_device() ? "a plan on device operands runs on pointers into one device's memory"
                                     : "device pointers run through a plan on device operands (prism::make_device_plan)");
    if (dev != nullptr) {
      detail::check_leading_dimensions(lda, ldb, ldc, "cuBLAS");
      if (reads_ab) return detail::run_on_device<T>(p, *dev, alpha, A, lda, B, ldb, beta, C, ldc);
      return detail::gemm_on_device<T>(*dev, pr.transa, pr.transb, pr.m, pr.n, pr.k, alpha, A, lda, B, ldb, beta, C, ldc, ctx);
    }
  }
  detail::check_fits(p, ctx, false);  // before C is touched, the alpha = 0 scaling included
  if (trivial(pr.m, pr.n, pr.k, alpha, beta, C, ldc)) return;
  detail::check_leading_dimensions(lda, ldb, ldc, "the 32-bit leaf BLAS");
  detail::run_plan<T>(p, alpha, A, lda, B, ldb, beta, C, ldc, ctx);
}

#define PRISM_INSTANTIATE(T)                                                                         \
  template void gemm<T>(char, char, std::int64_t, std::int64_t, std::int64_t, T, const T*,           \
                        std::int64_t, const T*, std::int64_t, T, T*, std::int64_t, const context&);  \
  template void gemm<T>(layout, char, char, std::int64_t, std::int64_t, std::int64_t, T, const T*,   \
                        std::int64_t, const T*, std::int64_t, T, T*, std::int64_t, const context&);  \
  template void execute<T>(const plan&, T, const T*, std::int64_t, const T*, std::int64_t, T, T*,    \
                           std::int64_t, const context&);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

const char* version() noexcept { return PRISM_VERSION_STRING; }

}  // namespace prism
