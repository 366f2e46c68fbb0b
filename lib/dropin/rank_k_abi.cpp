// lib/dropin/rank_k_abi.cpp — the rank-k entry points of libprism_blas: Fortran ssyrk_,
// dsyrk_, csyrk_, zsyrk_, cherk_, zherk_ and cblas_?syrk, cblas_?herk (both layouts), with
// reference BLAS / CBLAS argument numbering for errors. Valid calls go to dispatch_rank_k.
#include "dispatch.hpp"

#include <prism/error.hpp>

#include <cstddef>
#include <cstdio>

using prism::dropin::blas_int;

namespace prism::dropin {
namespace {

using detail::rank_k_info;

template <scalar T>
constexpr bool complex_v = std::same_as<T, cfloat> || std::same_as<T, cdouble>;

// prism's own line for a rejected call: the text prism::syrk / prism::herk throw for the
// same arguments (rank_k_error), e.g. "prism: dsyrk: argument 7 (lda) must be >= max(1, 5),
// got 4; C untouched".
void say_invalid(const invalid_argument& e) { std::fprintf(stderr, "prism: %s; C untouched\n", e.what()); }

// herk's alpha and beta are real (R); syrk's are T. They are read only once the arguments
// are valid, as reference BLAS does.
template <scalar T, bool Herm>
void fortran_rank_k(const char (&name)[7], const char* routine, const char* uplo, const char* trans,
                    const blas_int* n, const blas_int* k, const void* alpha, const void* A, const blas_int* lda,
                    const void* beta, void* C, const blas_int* ldc) {
  const char u = detail::upper_trans(*uplo), t0 = detail::upper_trans(*trans);
  if (const int info = rank_k_info(Herm, complex_v<T>, u, t0, *n, *k, *lda, *ldc); info != 0)
    return report_fortran(name, info, [&](const char* lower) {  // "dsyrk", as prism::syrk names it
      say_invalid(detail::rank_k_error(lower, info, false, Herm, complex_v<T>, t0, *n, *k, *lda, *ldc));
    });
  const char t = !Herm && t0 == 'C' ? 'T' : t0;  // real syrk: 'C' means 'T'
  T a, b;
  if constexpr (Herm) {
    using R = typename T::value_type;
    a = T(scalar_if(*n != 0, static_cast<const R*>(alpha))), b = T(scalar_if(*n != 0, static_cast<const R*>(beta)));
  } else {
    a = scalar_if(*n != 0, static_cast<const T*>(alpha)), b = scalar_if(*n != 0, static_cast<const T*>(beta));
  }
  if (rank_k_fast<T>(Herm, u, t, *n, *k, a, static_cast<const T*>(A), *lda, b, static_cast<T*>(C), *ldc)) return;
  dispatch_rank_k<T>(rank_k_site{routine, "", u, t0, *n, *k}, Herm, u, t, *n, *k, a, static_cast<const T*>(A), *lda,
                     b, static_cast<T*>(C), *ldc);
}

// ---- CBLAS ------------------------------------------------------------------------------

constexpr int row_major = 101, col_major = 102;

char uplo_letter(int u) { return u == 121 ? 'U' : u == 122 ? 'L' : '?'; }
char trans_letter(int t) { return t == 111 ? 'N' : t == 112 ? 'T' : t == 113 ? 'C' : '?'; }

// Reference cblas_?syrk / cblas_?herk: layout 1, Uplo 2, Trans 3 (checked by CBLAS itself,
// on the letters as given), then the Fortran routine's number plus one on the call it makes
// (a row-major call flips uplo and trans, so lda >= k is required for a row-major 'N').
// Returns the CBLAS position, 0 when valid; `fu`, `ft` get the column-major letters.
int cblas_info(bool herm, bool complex, int order, int uplo, int trans, blas_int n, blas_int k, blas_int lda,
               blas_int ldc, char& fu, char& ft) {
  if (order != row_major && order != col_major) return 1;
  const char u = uplo_letter(uplo), t = trans_letter(trans);
  if (const int i = rank_k_info(herm, complex, u, t, 0, 0, 1, 1); i != 0) return i + 1;
  fu = order == col_major ? u : u == 'U' ? 'L' : 'U';
  ft = order == col_major ? t : t == 'N' ? (herm ? 'C' : 'T') : 'N';
  const int f = rank_k_info(herm, complex, fu, ft, n, k, lda, ldc);
  return f == 0 ? 0 : f + 1;
}

// alpha and beta come by address (as the complex CBLAS routines take them) and are read
// only once the arguments are valid and n > 0, as reference CBLAS does.
template <scalar T>
void cblas_rank_k(const char* rout, bool herm, int order, int uplo, int trans, blas_int n, blas_int k, const T* alpha,
                  const T* A, blas_int lda, const T* beta, T* C, blas_int ldc) {
  char fu = 0, ft = 0;
  if (const int pos = cblas_info(herm, complex_v<T>, order, uplo, trans, n, k, lda, ldc, fu, ft); pos != 0)
    // ft: the column-major trans lda was checked against (unset for positions 1-3, whose text needs none)
    return report_cblas(rout, pos, pos, {"Illegal Uplo setting, %d\n", "Illegal Trans setting, %d\n"},
                        {order, uplo, trans}, [&] {
                          say_invalid(detail::rank_k_error(rout, pos - 1, true, herm, complex_v<T>, ft, n, k, lda, ldc));
                        });
  if (!herm && ft == 'C') ft = 'T';
  const T a = scalar_if(n != 0, alpha), b = scalar_if(n != 0, beta);
  if (rank_k_fast<T>(herm, fu, ft, n, k, a, A, lda, b, C, ldc)) return;
  dispatch_rank_k<T>(rank_k_site{rout, order == row_major ? "RowMajor" : "ColMajor", uplo_letter(uplo),
                                 trans_letter(trans), n, k},
                     herm, fu, ft, n, k, a, A, lda, b, C, ldc);
}

}  // namespace
}  // namespace prism::dropin

using prism::dropin::cdouble;
using prism::dropin::cfloat;
using prism::dropin::cblas_rank_k;
using prism::dropin::fortran_rank_k;

// Fortran entry points: every argument by reference, hidden CHARACTER lengths ignored.
#define PRISM_FORTRAN_RANK_K(fname, NAME, T, HERM)                                                                \
  PRISM_BLAS_EXPORT void fname(const char* uplo, const char* trans, const blas_int* n, const blas_int* k,         \
                               const void* alpha, const void* A, const blas_int* lda, const void* beta, void* C,  \
                               const blas_int* ldc, std::size_t, std::size_t) {                                   \
    fortran_rank_k<T, HERM>(NAME, #fname, uplo, trans, n, k, alpha, A, lda, beta, C, ldc);                        \
  }
/// Fortran SSYRK, DSYRK, CSYRK, ZSYRK: C = alpha op(A) op(A)^T + beta C on one triangle.
PRISM_FORTRAN_RANK_K(ssyrk_, "SSYRK ", float, false)
PRISM_FORTRAN_RANK_K(dsyrk_, "DSYRK ", double, false)
PRISM_FORTRAN_RANK_K(csyrk_, "CSYRK ", cfloat, false)
PRISM_FORTRAN_RANK_K(zsyrk_, "ZSYRK ", cdouble, false)
/// Fortran CHERK, ZHERK: C = alpha op(A) op(A)^H + beta C on one triangle, alpha, beta real.
PRISM_FORTRAN_RANK_K(cherk_, "CHERK ", cfloat, true)
PRISM_FORTRAN_RANK_K(zherk_, "ZHERK ", cdouble, true)
#undef PRISM_FORTRAN_RANK_K

/// cblas_ssyrk: single-precision rank-k update of one triangle (either layout).
PRISM_BLAS_EXPORT void cblas_ssyrk(int order, int uplo, int trans, blas_int n, blas_int k, float alpha, const float* A,
                                   blas_int lda, float beta, float* C, blas_int ldc) {
  cblas_rank_k<float>("cblas_ssyrk", false, order, uplo, trans, n, k, &alpha, A, lda, &beta, C, ldc);
}
/// cblas_dsyrk: double-precision rank-k update of one triangle (either layout).
PRISM_BLAS_EXPORT void cblas_dsyrk(int order, int uplo, int trans, blas_int n, blas_int k, double alpha,
                                   const double* A, blas_int lda, double beta, double* C, blas_int ldc) {
  cblas_rank_k<double>("cblas_dsyrk", false, order, uplo, trans, n, k, &alpha, A, lda, &beta, C, ldc);
}
/// cblas_csyrk: complex symmetric rank-k update (alpha, beta by address).
PRISM_BLAS_EXPORT void cblas_csyrk(int order, int uplo, int trans, blas_int n, blas_int k, const void* alpha,
                                   const void* A, blas_int lda, const void* beta, void* C, blas_int ldc) {
  cblas_rank_k<cfloat>("cblas_csyrk", false, order, uplo, trans, n, k, static_cast<const cfloat*>(alpha),
                       static_cast<const cfloat*>(A), lda, static_cast<const cfloat*>(beta), static_cast<cfloat*>(C), ldc);
}
/// cblas_zsyrk: double complex symmetric rank-k update (alpha, beta by address).
PRISM_BLAS_EXPORT void cblas_zsyrk(int order, int uplo, int trans, blas_int n, blas_int k, const void* alpha,
                                   const void* A, blas_int lda, const void* beta, void* C, blas_int ldc) {
  cblas_rank_k<cdouble>("cblas_zsyrk", false, order, uplo, trans, n, k, static_cast<const cdouble*>(alpha),
                        static_cast<const cdouble*>(A), lda, static_cast<const cdouble*>(beta), static_cast<cdouble*>(C),
                        ldc);
}
/// cblas_cherk: complex Hermitian rank-k update, alpha and beta real.
PRISM_BLAS_EXPORT void cblas_cherk(int order, int uplo, int trans, blas_int n, blas_int k, float alpha, const void* A,
                                   blas_int lda, float beta, void* C, blas_int ldc) {
  const cfloat a(alpha), b(beta);
  cblas_rank_k<cfloat>("cblas_cherk", true, order, uplo, trans, n, k, &a, static_cast<const cfloat*>(A), lda, &b,
                       static_cast<cfloat*>(C), ldc);
}
/// cblas_zherk: double complex Hermitian rank-k update, alpha and beta real.
PRISM_BLAS_EXPORT void cblas_zherk(int order, int uplo, int trans, blas_int n, blas_int k, double alpha, const void* A,
                                   blas_int lda, double beta, void* C, blas_int ldc) {
  const cdouble a(alpha), b(beta);
  cblas_rank_k<cdouble>("cblas_zherk", true, order, uplo, trans, n, k, &a, static_cast<const cdouble*>(A), lda, &b,
                        static_cast<cdouble*>(C), ldc);
}
