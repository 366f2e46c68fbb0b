// lib/dropin/cblas_abi.cpp — cblas_sgemm, cblas_dgemm, cblas_cgemm, cblas_zgemm (row- and
// column-major, CblasConjTrans), with reference CBLAS's argument numbering for errors.
#include "dispatch.hpp"

#include <cstdio>

using prism::dropin::blas_int;

namespace prism::dropin {
namespace {

// CBLAS enumerators (cblas.h); plain ints in every implementation's ABI.
constexpr int row_major = 101, col_major = 102;
constexpr int no_trans = 111, trans = 112, conj_trans = 113;

char trans_letter(int t) { return t == no_trans ? 'N' : t == trans ? 'T' : t == conj_trans ? 'C' : '?'; }

using detail::cblas_error;

// Reference CBLAS argument check; passed = 0 when valid. The layout is argument 1; a
// column-major call's Fortran numbers shift by one, and a row-major call is checked as
// reference CBLAS does it (detail::row_major_info: the transposed Fortran call).
inline cblas_error cblas_info(int layout, int ta, int tb, blas_int m, blas_int n, blas_int k, blas_int lda,
                              blas_int ldb, blas_int ldc) {
  if (layout != row_major && layout != col_major) return {1, 1};
  if (layout == row_major) return detail::row_major_info(trans_letter(ta), trans_letter(tb), m, n, k, lda, ldb, ldc);
  if (trans_letter(ta) == '?') return {2, 2};
  if (trans_letter(tb) == '?') return {3, 3};
  const int f = fortran_info(trans_letter(ta), trans_letter(tb), m, n, k, lda, ldb, ldc);
  return f == 0 ? cblas_error{} : cblas_error{f + 1, f + 1};
}

// alpha and beta come by address (as the complex CBLAS routines take them) and are read
// only once the arguments are valid and m, n > 0, as reference CBLAS does.
template <scalar T>
void cblas_gemm(const char* rout, int layout, int ta, int tb, blas_int m, blas_int n, blas_int k, const T* alpha,
                const T* A, blas_int lda, const T* B, blas_int ldb, const T* beta, T* C, blas_int ldc) {
  if (const cblas_error e = cblas_info(layout, ta, tb, m, n, k, lda, ldb, ldc); e.passed != 0) {
    const detail::gemm_arguments args{trans_letter(ta), trans_letter(tb), m, n, k, lda, ldb, ldc};
    return report_cblas(rout, e.reported, e.passed, {"Illegal TransA setting, %d\n", "Illegal TransB setting, %d\n"},
                        {layout, ta, tb}, [&] { report_invalid(rout, e.reported, true, layout == row_major, args); });
  }
  const char la = trans_letter(ta), lb = trans_letter(tb);
  const bool reads = m != 0 && n != 0;
  const T a = scalar_if(reads, alpha), b = scalar_if(reads, beta);
  if (layout == col_major) {
    dispatch<T>(call_site{rout, "ColMajor", la, lb, m, n, k}, la, lb, m, n, k, a, A, lda, B, ldb, b, C, ldc);
    return;
  }
  // Row-major C (m x n) is column-major C^T (n x m) = op(B)^T op(A)^T: the same call with
  // A and B, m and n swapped and the trans letters kept (conjugation commutes with ^T).
  dispatch<T>(call_site{rout, "RowMajor", la, lb, m, n, k}, lb, la, n, m, k, a, B, ldb, A, lda, b, C, ldc);
}

// cblas_?gemm: alpha and beta by value for real types, by address for complex ones.
// noexcept: the backend is handed valid calls only, so its error handler is never reached.
template <class T>
using cblas_real_fn = void (*)(int, int, int, blas_int, blas_int, blas_int, T, const T*, blas_int, const T*, blas_int,
                               T, T*, blas_int) noexcept;
using cblas_complex_fn = void (*)(int, int, int, blas_int, blas_int, blas_int, const void*, const void*, blas_int,
                                  const void*, blas_int, const void*, void*, blas_int) noexcept;

// The backend's cblas_?gemm for a small valid call, to be called with the caller's own
// arguments (a tail call: nothing is copied), or nullptr for the full path (also when the
// backend has no CBLAS; the full path then uses its Fortran entry).
// alpha and beta come by address and are read only once the arguments are valid.
template <scalar T>
inline void* fast_target(int layout, int ta, int tb, blas_int m, blas_int n, blas_int k, const T* alpha,
                         blas_int lda, blas_int ldb, const T* beta, blas_int ldc) noexcept {
  if (cblas_info(layout, ta, tb, m, n, k, lda, ldb, ldc).passed != 0 || m == 0 || n == 0) return nullptr;
  if (!fast_path_takes<T>(m, n, k, *alpha, *beta)) return nullptr;
  return fast_state.b->cblas_entry(type_slot<T>());
}

// The full path with the entry point's own signature, so that the entry's last action is a
// jump here or to the backend (both tail calls with the caller's arguments in place).
constexpr const char* cblas_names[4] = {"cblas_sgemm", "cblas_dgemm", "cblas_cgemm", "cblas_zgemm"};

template <class T>
[[gnu::noinline]] void cblas_real_slow(int layout, int ta, int tb, blas_int m, blas_int n, blas_int k, T alpha,
                                       const T* A, blas_int lda, const T* B, blas_int ldb, T beta, T* C,
                                       blas_int ldc) {
  cblas_gemm<T>(cblas_names[type_slot<T>()], layout, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
}

template <class T>
[[gnu::noinline]] void cblas_complex_slow(int layout, int ta, int tb, blas_int m, blas_int n, blas_int k,
                                          const void* alpha, const void* A, blas_int lda, const void* B, blas_int ldb,
                                          const void* beta, void* C, blas_int ldc) {
  cblas_gemm<T>(cblas_names[type_slot<T>()], layout, ta, tb, m, n, k, static_cast<const T*>(alpha),
                static_cast<const T*>(A), lda, static_cast<const T*>(B), ldb, static_cast<const T*>(beta),
                static_cast<T*>(C), ldc);
}

}  // namespace
}  // namespace prism::dropin

using prism::dropin::cblas_complex_fn;
using prism::dropin::cblas_complex_slow;
using prism::dropin::cblas_real_slow;
using prism::dropin::cblas_real_fn;
using prism::dropin::fast_target;
using prism::dropin::cdouble;
using prism::dropin::cfloat;

/// CBLAS sgemm: C = alpha op(A) op(B) + beta C, row- or column-major, single precision.
PRISM_BLAS_EXPORT void cblas_sgemm(int layout, int transa, int transb, blas_int m, blas_int n, blas_int k, float alpha,
                              const float* A, blas_int lda, const float* B, blas_int ldb, float beta, float* C,
                              blas_int ldc) {
  if (void* f = fast_target<float>(layout, transa, transb, m, n, k, &alpha, lda, ldb, &beta, ldc))
    return reinterpret_cast<cblas_real_fn<float>>(f)(layout, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  return cblas_real_slow<float>(layout, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/// CBLAS dgemm: C = alpha op(A) op(B) + beta C, row- or column-major, double precision.
PRISM_BLAS_EXPORT void cblas_dgemm(int layout, int transa, int transb, blas_int m, blas_int n, blas_int k, double alpha,
                              const double* A, blas_int lda, const double* B, blas_int ldb, double beta, double* C,
                              blas_int ldc) {
  if (void* f = fast_target<double>(layout, transa, transb, m, n, k, &alpha, lda, ldb, &beta, ldc))
    return reinterpret_cast<cblas_real_fn<double>>(f)(layout, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  return cblas_real_slow<double>(layout, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/// CBLAS cgemm: single-precision complex; alpha and beta by address (CblasConjTrans conjugates).
PRISM_BLAS_EXPORT void cblas_cgemm(int layout, int transa, int transb, blas_int m, blas_int n, blas_int k,
                              const void* alpha, const void* A, blas_int lda, const void* B, blas_int ldb,
                              const void* beta, void* C, blas_int ldc) {
  if (void* f = fast_target<cfloat>(layout, transa, transb, m, n, k, static_cast<const cfloat*>(alpha), lda, ldb,
                                 static_cast<const cfloat*>(beta), ldc))
    return reinterpret_cast<cblas_complex_fn>(f)(layout, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  return cblas_complex_slow<cfloat>(layout, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/// CBLAS zgemm: double-precision complex; alpha and beta by address (CblasConjTrans conjugates).
PRISM_BLAS_EXPORT void cblas_zgemm(int layout, int transa, int transb, blas_int m, blas_int n, blas_int k,
                              const void* alpha, const void* A, blas_int lda, const void* B, blas_int ldb,
                              const void* beta, void* C, blas_int ldc) {
  if (void* f = fast_target<cdouble>(layout, transa, transb, m, n, k, static_cast<const cdouble*>(alpha), lda, ldb,
                                 static_cast<const cdouble*>(beta), ldc))
    return reinterpret_cast<cblas_complex_fn>(f)(layout, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  return cblas_complex_slow<cdouble>(layout, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
