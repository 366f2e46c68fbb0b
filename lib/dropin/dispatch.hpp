// lib/dropin/dispatch.hpp — what libprism_blas does with a valid ?gemm call: quick return,
// the user's BLAS (backend) or prism's recursion; PRISM_VERBOSE logging, PRISM_STATS.
#pragma once

#include "backend.hpp"

#include <prism/types.hpp>

namespace prism::dropin {

/// How a call was served.
enum class path { trivial, backend, recursion };

/// One call as the caller made it, for the log: routine name and, for CBLAS, the layout.
struct call_site {
  const char* routine;     ///< e.g. "dgemm_" or "cblas_dgemm"
  const char* layout;      ///< "" for Fortran, "RowMajor" or "ColMajor" for CBLAS
};

/// Runs a checked column-major call (trans letters upper case): quick return, backend or
/// recursion by the routing rule (README "Use prism without changing your code"). Never
/// throws: a failure prism cannot recover from is reported on stderr and aborts.
template <scalar T>
void dispatch(const call_site& site, char transa, char transb, blas_int m, blas_int n, blas_int k,
              const T& alpha, const T* A, blas_int lda, const T* B, blas_int ldb, const T& beta, T* C,
              blas_int ldc) noexcept;

/// Counts one call rejected with xerbla / cblas_xerbla (for PRISM_STATS).
void count_invalid() noexcept;

/// Fortran ?gemm argument check in the reference order; 0 when valid, else the position
/// reference BLAS passes to xerbla (1 transa, 2 transb, 3 m, 4 n, 5 k, 8 lda, 10 ldb, 13 ldc).
/// Example: dgemm('N','N', m=5, n=3, k=4, ..., lda=4, ...) returns 8 (lda < max(1, m) = 5).
int fortran_info(char transa, char transb, blas_int m, blas_int n, blas_int k, blas_int lda, blas_int ldb,
                 blas_int ldc) noexcept;

/// True for 'N', 'T', 'C' in either case (reference BLAS's LSAME).
bool valid_trans(char c) noexcept;

/// Upper-case trans letter.
char upper_trans(char c) noexcept;

}  // namespace prism::dropin
