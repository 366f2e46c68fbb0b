// prism/gemm.hpp — C = alpha op(A) op(B) + beta C with reference-BLAS semantics.
#pragma once

#include <prism/context.hpp>
#include <prism/plan.hpp>
#include <prism/types.hpp>

#include <cstdint>

namespace prism {

/// Column-major gemm in BLAS argument order; trans is 'N', 'T' or 'C' (any case).
/// Throws prism::invalid_argument (C untouched) exactly where reference BLAS calls xerbla.
template <scalar T>
void gemm(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
          const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
          std::int64_t ldc, const context& ctx = default_context());

/// gemm with an explicit layout; row_major treats A, B, C as row-major (like CBLAS).
template <scalar T>
void gemm(layout order, char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k,
          T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
          std::int64_t ldc, const context& ctx = default_context());

/// Runs a plan (column-major). The plan's problem fixes type, trans and sizes; the leading
/// dimensions are checked against it. Same alpha/beta semantics as gemm.
template <scalar T>
void execute(const plan& p, T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb,
             T beta, T* C, std::int64_t ldc, const context& ctx = default_context());

}  // namespace prism
