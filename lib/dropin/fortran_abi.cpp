// lib/dropin/fortran_abi.cpp — sgemm_, dgemm_, cgemm_, zgemm_ with the Fortran ABI gfortran
// emits: every argument by reference, blas_int integers (LP64 int, or int64 in the ILP64
// library), and one hidden size_t length per CHARACTER argument at the end (ignored: only
// the first character of transa/transb is read, as reference BLAS's LSAME does).
#include "dispatch.hpp"

#include <cstddef>
#include <cstdio>

using prism::dropin::blas_int;

extern "C" {
// The error handler reference BLAS calls. Weak and undefined here: it binds to the
// program's own xerbla_ if it defines one (the reference test programs do), else to the
// one of the BLAS the program loaded globally, else to nothing (then prism prints the
// reference message itself). prism exports no xerbla_ of its own.
void xerbla_(const char* srname, const blas_int* info, std::size_t srname_len) __attribute__((weak));
}

namespace prism::dropin {
namespace {

// Reports argument `info` of routine `name` (reference spelling, 6 characters padded with
// blanks: "DGEMM ") and counts it. C is not touched.
void report(const char (&name)[7], const char* routine, blas_int info) {
  count_invalid(routine, info);
  if (xerbla_ != nullptr) {
    xerbla_(name, &info, 6);
    return;
  }
  // Reference XERBLA's FORMAT: ' ** On entry to ', A, ' parameter number ', I2, ' had an
  // illegal value' with the name trimmed; it then STOPs, prism returns (as OpenBLAS does).
  int len = 6;
  while (len > 0 && name[len - 1] == ' ') --len;
  std::fprintf(stderr, " ** On entry to %.*s parameter number %2lld had an illegal value\n", len, name,
               static_cast<long long>(info));
}

template <scalar T>
void fortran_gemm(const char (&name)[7], const char* routine, const char* transa, const char* transb,
                  const blas_int* m, const blas_int* n, const blas_int* k, const T* alpha, const T* A,
                  const blas_int* lda, const T* B, const blas_int* ldb, const T* beta, T* C,
                  const blas_int* ldc) noexcept {
  if (const int info = fortran_info(*transa, *transb, *m, *n, *k, *lda, *ldb, *ldc); info != 0) {
    report(name, routine, info);
    return;
  }
  const char ta = upper_trans(*transa), tb = upper_trans(*transb);
  if (try_fast<T>(ta, tb, *m, *n, *k, *alpha, A, *lda, B, *ldb, *beta, C, *ldc)) return;
  dispatch<T>(call_site{routine, "", ta, tb, *m, *n, *k}, ta, tb, *m, *n, *k, *alpha, A, *lda, B, *ldb, *beta, C,
              *ldc);
}

}  // namespace
}  // namespace prism::dropin

using prism::dropin::fortran_gemm;
using prism::dropin::cdouble;
using prism::dropin::cfloat;

/// Fortran SGEMM: C = alpha op(A) op(B) + beta C in single precision.
PRISM_BLAS_EXPORT void sgemm_(const char* transa, const char* transb, const blas_int* m, const blas_int* n,
                         const blas_int* k, const float* alpha, const float* A, const blas_int* lda,
                         const float* B, const blas_int* ldb, const float* beta, float* C, const blas_int* ldc,
                         std::size_t, std::size_t) noexcept {
  fortran_gemm<float>("SGEMM ", "sgemm_", transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/// Fortran DGEMM: C = alpha op(A) op(B) + beta C in double precision.
PRISM_BLAS_EXPORT void dgemm_(const char* transa, const char* transb, const blas_int* m, const blas_int* n,
                         const blas_int* k, const double* alpha, const double* A, const blas_int* lda,
                         const double* B, const blas_int* ldb, const double* beta, double* C,
                         const blas_int* ldc, std::size_t, std::size_t) noexcept {
  fortran_gemm<double>("DGEMM ", "dgemm_", transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/// Fortran CGEMM: single-precision complex gemm ('C' conjugates).
PRISM_BLAS_EXPORT void cgemm_(const char* transa, const char* transb, const blas_int* m, const blas_int* n,
                         const blas_int* k, const void* alpha, const void* A, const blas_int* lda, const void* B,
                         const blas_int* ldb, const void* beta, void* C, const blas_int* ldc, std::size_t,
                         std::size_t) noexcept {
  fortran_gemm<cfloat>("CGEMM ", "cgemm_", transa, transb, m, n, k, static_cast<const cfloat*>(alpha),
                       static_cast<const cfloat*>(A), lda, static_cast<const cfloat*>(B), ldb,
                       static_cast<const cfloat*>(beta), static_cast<cfloat*>(C), ldc);
}

/// Fortran ZGEMM: double-precision complex gemm ('C' conjugates).
PRISM_BLAS_EXPORT void zgemm_(const char* transa, const char* transb, const blas_int* m, const blas_int* n,
                         const blas_int* k, const void* alpha, const void* A, const blas_int* lda, const void* B,
                         const blas_int* ldb, const void* beta, void* C, const blas_int* ldc, std::size_t,
                         std::size_t) noexcept {
  fortran_gemm<cdouble>("ZGEMM ", "zgemm_", transa, transb, m, n, k, static_cast<const cdouble*>(alpha),
                        static_cast<const cdouble*>(A), lda, static_cast<const cdouble*>(B), ldb,
                        static_cast<const cdouble*>(beta), static_cast<cdouble*>(C), ldc);
}
