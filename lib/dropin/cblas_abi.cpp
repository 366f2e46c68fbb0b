// lib/dropin/cblas_abi.cpp — cblas_sgemm, cblas_dgemm, cblas_cgemm, cblas_zgemm (row- and
// column-major, CblasConjTrans), with reference CBLAS's argument numbering for errors.
#include "dispatch.hpp"

#include <dlfcn.h>
#include <sys/auxv.h>

#include <cstdio>

using prism::dropin::blas_int;

extern "C" {
// Reference CBLAS's error handler. Weak and undefined here; prism calls it only when the
// program itself (the executable) defines it, as the reference CBLAS test programs do. The
// versions inside BLAS libraries (reference CBLAS, OpenBLAS) print and exit(-1), which a
// drop-in must not add: OpenBLAS's own cblas_?gemm reports through xerbla_ and returns.
void cblas_xerbla(blas_int p, const char* rout, const char* form, ...) __attribute__((weak));
}

namespace prism::dropin {
namespace {

// CBLAS enumerators (cblas.h); plain ints in every implementation's ABI.
constexpr int row_major = 101, col_major = 102;
constexpr int no_trans = 111, trans = 112, conj_trans = 113;

char trans_letter(int t) { return t == no_trans ? 'N' : t == trans ? 'T' : t == conj_trans ? 'C' : '?'; }

// True when `fn` lives in the executable (not in a shared library).
bool in_executable(const void* fn) {
  Dl_info exe{}, f{};
  const void* phdr = reinterpret_cast<const void*>(::getauxval(AT_PHDR));
  return phdr != nullptr && ::dladdr(phdr, &exe) != 0 && ::dladdr(fn, &f) != 0 && exe.dli_fbase == f.dli_fbase;
}

// Reference CBLAS argument check; 0 when valid, else the position it passes to
// cblas_xerbla (layout is 1). It checks TransA (2) and TransB (3) itself, then calls the
// Fortran routine, whose positions it shifts by one for the layout argument. Row-major
// calls go to Fortran transposed (B first, n and m swapped), and CBLAS swaps the numbers
// back: e.g. a bad lda in a row-major call is Fortran's ldb (10) -> 11 -> reported as 9.
int cblas_info(int layout, int ta, int tb, blas_int m, blas_int n, blas_int k, blas_int lda, blas_int ldb,
               blas_int ldc) {
  if (layout != row_major && layout != col_major) return 1;
  if (trans_letter(ta) == '?') return 2;
  if (trans_letter(tb) == '?') return 3;
  if (layout == col_major) {
    const int f = fortran_info(trans_letter(ta), trans_letter(tb), m, n, k, lda, ldb, ldc);
    return f == 0 ? 0 : f + 1;
  }
  int f = fortran_info(trans_letter(tb), trans_letter(ta), n, m, k, ldb, lda, ldc);
  if (f == 0) return 0;
  f += 1;  // Fortran 3 n, 4 m, 5 k, 8 ldb, 10 lda, 13 ldc -> 4, 5, 6, 9, 11, 14
  if (f == 4) return 5;    // n
  if (f == 5) return 4;    // m
  if (f == 9) return 11;   // ldb
  if (f == 11) return 9;   // lda
  return f;
}

void report(const char* rout, int position, int layout, int ta, int tb) {
  count_invalid();
  const bool own = cblas_xerbla != nullptr && in_executable(reinterpret_cast<const void*>(cblas_xerbla));
  const char* form = position == 1 ? "Illegal layout setting, %d\n"
                     : position == 2 ? "Illegal TransA setting, %d\n"
                     : position == 3 ? "Illegal TransB setting, %d\n" : "";
  const int value = position == 1 ? layout : position == 2 ? ta : tb;
  if (own) {
    if (position <= 3) cblas_xerbla(position, rout, form, value);
    else cblas_xerbla(position, rout, "");
    return;
  }
  // Reference cblas_xerbla's message; it then exits, prism returns with C untouched.
  std::fprintf(stderr, "Parameter %d to routine %s was incorrect\n", position, rout);
  if (position <= 3) std::fprintf(stderr, form, value);
}

template <scalar T>
void cblas_gemm(const char* rout, int layout, int ta, int tb, blas_int m, blas_int n, blas_int k, const T& alpha,
                const T* A, blas_int lda, const T* B, blas_int ldb, const T& beta, T* C, blas_int ldc) noexcept {
  if (const int info = cblas_info(layout, ta, tb, m, n, k, lda, ldb, ldc); info != 0) {
    report(rout, info, layout, ta, tb);
    return;
  }
  if (layout == col_major) {
    dispatch<T>(call_site{rout, "ColMajor"}, trans_letter(ta), trans_letter(tb), m, n, k, alpha, A, lda, B, ldb,
                beta, C, ldc);
    return;
  }
  // Row-major C (m x n) is column-major C^T (n x m) = op(B)^T op(A)^T: the same call with
  // A and B, m and n swapped and the trans letters kept (conjugation commutes with ^T).
  dispatch<T>(call_site{rout, "RowMajor"}, trans_letter(tb), trans_letter(ta), n, m, k, alpha, B, ldb, A, lda,
              beta, C, ldc);
}

}  // namespace
}  // namespace prism::dropin

using prism::dropin::cblas_gemm;
using cfloat = std::complex<float>;
using cdouble = std::complex<double>;

#define PRISM_EXPORT extern "C" __attribute__((visibility("default")))

/// CBLAS sgemm: C = alpha op(A) op(B) + beta C, row- or column-major, single precision.
PRISM_EXPORT void cblas_sgemm(int layout, int transa, int transb, blas_int m, blas_int n, blas_int k, float alpha,
                              const float* A, blas_int lda, const float* B, blas_int ldb, float beta, float* C,
                              blas_int ldc) noexcept {
  cblas_gemm<float>("cblas_sgemm", layout, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/// CBLAS dgemm: C = alpha op(A) op(B) + beta C, row- or column-major, double precision.
PRISM_EXPORT void cblas_dgemm(int layout, int transa, int transb, blas_int m, blas_int n, blas_int k, double alpha,
                              const double* A, blas_int lda, const double* B, blas_int ldb, double beta, double* C,
                              blas_int ldc) noexcept {
  cblas_gemm<double>("cblas_dgemm", layout, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/// CBLAS cgemm: single-precision complex; alpha and beta by address (CblasConjTrans conjugates).
PRISM_EXPORT void cblas_cgemm(int layout, int transa, int transb, blas_int m, blas_int n, blas_int k,
                              const void* alpha, const void* A, blas_int lda, const void* B, blas_int ldb,
                              const void* beta, void* C, blas_int ldc) noexcept {
  cblas_gemm<cfloat>("cblas_cgemm", layout, transa, transb, m, n, k, *static_cast<const cfloat*>(alpha),
                     static_cast<const cfloat*>(A), lda, static_cast<const cfloat*>(B), ldb,
                     *static_cast<const cfloat*>(beta), static_cast<cfloat*>(C), ldc);
}

/// CBLAS zgemm: double-precision complex; alpha and beta by address (CblasConjTrans conjugates).
PRISM_EXPORT void cblas_zgemm(int layout, int transa, int transb, blas_int m, blas_int n, blas_int k,
                              const void* alpha, const void* A, blas_int lda, const void* B, blas_int ldb,
                              const void* beta, void* C, blas_int ldc) noexcept {
  cblas_gemm<cdouble>("cblas_zgemm", layout, transa, transb, m, n, k, *static_cast<const cdouble*>(alpha),
                      static_cast<const cdouble*>(A), lda, static_cast<const cdouble*>(B), ldb,
                      *static_cast<const cdouble*>(beta), static_cast<cdouble*>(C), ldc);
}
