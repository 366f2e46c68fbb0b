// prism/syrk.hpp — rank-k updates of one triangle with reference-BLAS semantics:
//   syrk: C = alpha op(A) op(A)^T + beta C      (trans 'N': op(A) = A, n x k; 'T': A^T)
//   herk: C = alpha op(A) op(A)^H + beta C      (complex only, real alpha and beta)
// Only the `uplo` triangle of C (diagonal included) is read or written; the other triangle
// is untouched bit for bit; beta = 0 never reads C; herk leaves the diagonal real (its
// imaginary parts are set to zero, as reference ?herk does whenever it writes C).
#pragma once

#include <prism/context.hpp>
#include <prism/plan.hpp>
#include <prism/types.hpp>

#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>

namespace prism {

/// The real type under a scalar: float for float and complex<float>, double likewise.
template <scalar T>
using real_type = std::conditional_t<std::same_as<T, float> || std::same_as<T, std::complex<float>>, float, double>;

/// Column-major ?syrk in BLAS argument order. uplo 'U' or 'L'; trans 'N' or 'T' (a real
/// syrk also takes 'C', meaning 'T', as reference dsyrk does; a complex one does not).
/// Throws prism::invalid_argument (C untouched) exactly where reference BLAS calls xerbla:
/// 1 uplo, 2 trans, 3 n, 4 k, 7 lda, 10 ldc.
template <scalar T>
void syrk(char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, const T* A, std::int64_t lda, T beta,
          T* C, std::int64_t ldc, const context& ctx = default_context());

/// syrk with an explicit layout; row_major treats A and C as row-major (like CBLAS, whose
/// positions count the layout as argument 1: 2 uplo, 3 trans, 4 n, 5 k, 8 lda, 11 ldc).
template <scalar T>
void syrk(layout order, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, const T* A,
          std::int64_t lda, T beta, T* C, std::int64_t ldc, const context& ctx = default_context());

/// Column-major ?herk (T complex): uplo 'U' or 'L', trans 'N' (A A^H) or 'C' (A^H A).
/// Errors as reference ?herk: 1 uplo, 2 trans, 3 n, 4 k, 7 lda, 10 ldc.
template <scalar T>
  requires(std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>)
void herk(char uplo, char trans, std::int64_t n, std::int64_t k, real_type<T> alpha, const T* A, std::int64_t lda,
          real_type<T> beta, T* C, std::int64_t ldc, const context& ctx = default_context());

/// herk with an explicit layout (row_major like CBLAS; positions as the layout form of syrk).
template <scalar T>
  requires(std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>)
void herk(layout order, char uplo, char trans, std::int64_t n, std::int64_t k, real_type<T> alpha, const T* A,
          std::int64_t lda, real_type<T> beta, T* C, std::int64_t ldc, const context& ctx = default_context());

/// Runs a syrk / herk plan (make_plan of rank_k_problem, or parsed from its text) on
/// column-major A and C: C = alpha op(A) op(A)^T (^H) + beta C on the plan's uplo triangle,
/// with the semantics of syrk / herk (herk: alpha and beta must be real; prism::error
/// otherwise). Throws prism::plan_error for a gemm plan, another type, or a plan that does
/// not fit ctx (more threads or NUMA domains), and invalid_argument for lda or ldc, C untouched.
template <scalar T>
void execute_rank_k(const plan& p, T alpha, const T* A, std::int64_t lda, T beta, T* C, std::int64_t ldc,
                    const context& ctx = default_context());

/// One line on the plan syrk / herk run for an n x n, depth-k update of type t with this
/// context (make_plan of rank_k_problem; the tree's shape depends on neither uplo nor
/// trans): the root step, then the plan's depth, leaves, diagonal cuts (each with one gemm
/// block) and workspace bytes, e.g. for d, n = 32, k = 2^22 on 2 threads: "k-cut 2:
/// 2097152@1t 2097152@1t; depth 1, 2 leaves, 0 gemm blocks, 8192 B temporaries". The
/// whole plan prints with make_plan(rank_k_problem(...), ctx) or `prism plan N N K --syrk UT`.
std::string describe_rank_k(scalar_type t, std::int64_t n, std::int64_t k, const context& ctx = default_context());

}  // namespace prism
