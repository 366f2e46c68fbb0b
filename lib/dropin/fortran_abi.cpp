// lib/dropin/fortran_abi.cpp — sgemm_, dgemm_, cgemm_, zgemm_ with the Fortran ABI gfortran
// emits: every argument by reference, blas_int integers (LP64 int, or int64 in the ILP64
// library), and one hidden size_t length per CHARACTER argument at the end (ignored: only
// the first character of transa/transb is read, as reference BLAS's LSAME does).
#include "dispatch.hpp"

#include <cstddef>
#include <cstdio>

using prism::dropin::blas_int;

namespace prism::dropin {
namespace {

// Fortran ?gemm_ (complex types take void pointers in the exported signature; the ABI is
// the same). noexcept: the backend is handed valid calls only, so its error handler, which
// may throw, is never reached from here.
template <scalar T>
using fortran_fn = void (*)(const char*, const char*, const blas_int*, const blas_int*, const blas_int*, const T*,
                            const T*, const blas_int*, const T*, const blas_int*, const T*, T*, const blas_int*,
                            std::size_t, std::size_t) noexcept;

template <scalar T>
void fortran_gemm(const char (&name)[7], const char* routine, const char* transa, const char* transb,
                  const blas_int* m, const blas_int* n, const blas_int* k, const T* alpha, const T* A,
                  const blas_int* lda, const T* B, const blas_int* ldb, const T* beta, T* C,
                  const blas_int* ldc) {
  if (const int info = fortran_info(*transa, *transb, *m, *n, *k, *lda, *ldb, *ldc); info != 0) {
    const detail::gemm_arguments args{upper_trans(*transa), upper_trans(*transb), *m, *n, *k, *lda, *ldb, *ldc};
    return report_fortran(name, info, [&](const char* lower) { report_invalid(lower, info, false, false, args); });
  }
  const char ta = upper_trans(*transa), tb = upper_trans(*transb);
  const bool reads = *m != 0 && *n != 0;
  dispatch<T>(call_site{routine, "", ta, tb, *m, *n, *k}, ta, tb, *m, *n, *k, scalar_if(reads, alpha), A, *lda, B, *ldb,
              scalar_if(reads, beta), C, *ldc);
}

// The backend's ?gemm_ for a small valid call, to be called with the caller's own
// arguments (a tail call: nothing is copied), or nullptr for the full path.
template <scalar T>
inline fortran_fn<T> fast_target(const char* transa, const char* transb, const blas_int* m, const blas_int* n,
                                 const blas_int* k, const T* alpha, const blas_int* lda, const blas_int* ldb,
                                 const T* beta, const blas_int* ldc) noexcept {
  // The checks first: alpha and beta are read only once the arguments are valid, as reference BLAS does.
  if (fortran_info(*transa, *transb, *m, *n, *k, *lda, *ldb, *ldc) != 0 || *m == 0 || *n == 0) return nullptr;
  if (!fast_path_takes<T>(*m, *n, *k, *alpha, *beta)) return nullptr;
  return reinterpret_cast<fortran_fn<T>>(fast_state.b->fortran_entry(type_slot<T>()));
}

// The full path with the entry point's own signature, so that the entry's last action is a
// jump here or to the backend (both tail calls with the caller's arguments in place).
constexpr char fortran_names[4][7] = {"SGEMM ", "DGEMM ", "CGEMM ", "ZGEMM "};
constexpr const char* routine_names[4] = {"sgemm_", "dgemm_", "cgemm_", "zgemm_"};

template <scalar T>
[[gnu::noinline]] void fortran_slow(const char* transa, const char* transb, const blas_int* m, const blas_int* n,
                                    const blas_int* k, const void* alpha, const void* A, const blas_int* lda,
                                    const void* B, const blas_int* ldb, const void* beta, void* C,
                                    const blas_int* ldc, std::size_t, std::size_t) {
  fortran_gemm<T>(fortran_names[type_slot<T>()], routine_names[type_slot<T>()], transa, transb, m, n, k,
                  static_cast<const T*>(alpha), static_cast<const T*>(A), lda, static_cast<const T*>(B), ldb,
                  static_cast<const T*>(beta), static_cast<T*>(C), ldc);
}

}  // namespace
}  // namespace prism::dropin

using prism::dropin::fast_target;
using prism::dropin::fortran_slow;
using prism::dropin::cdouble;
using prism::dropin::cfloat;

/// Fortran SGEMM: C = alpha op(A) op(B) + beta C in single precision.
PRISM_BLAS_EXPORT void sgemm_(const char* transa, const char* transb, const blas_int* m, const blas_int* n,
                         const blas_int* k, const float* alpha, const float* A, const blas_int* lda,
                         const float* B, const blas_int* ldb, const float* beta, float* C, const blas_int* ldc,
                         std::size_t la, std::size_t lb) {
  if (auto f = fast_target<float>(transa, transb, m, n, k, alpha, lda, ldb, beta, ldc))
    return f(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, la, lb);
  return fortran_slow<float>(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, la, lb);
}

/// Fortran DGEMM: C = alpha op(A) op(B) + beta C in double precision.
PRISM_BLAS_EXPORT void dgemm_(const char* transa, const char* transb, const blas_int* m, const blas_int* n,
                         const blas_int* k, const double* alpha, const double* A, const blas_int* lda,
                         const double* B, const blas_int* ldb, const double* beta, double* C,
                         const blas_int* ldc, std::size_t la, std::size_t lb) {
  if (auto f = fast_target<double>(transa, transb, m, n, k, alpha, lda, ldb, beta, ldc))
    return f(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, la, lb);
  return fortran_slow<double>(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, la, lb);
}

/// Fortran CGEMM: single-precision complex gemm ('C' conjugates).
PRISM_BLAS_EXPORT void cgemm_(const char* transa, const char* transb, const blas_int* m, const blas_int* n,
                         const blas_int* k, const void* alpha, const void* A, const blas_int* lda, const void* B,
                         const blas_int* ldb, const void* beta, void* C, const blas_int* ldc, std::size_t la,
                         std::size_t lb) {
  if (auto f = fast_target<cfloat>(transa, transb, m, n, k, static_cast<const cfloat*>(alpha), lda, ldb,
                                   static_cast<const cfloat*>(beta), ldc))
    return f(transa, transb, m, n, k, static_cast<const cfloat*>(alpha), static_cast<const cfloat*>(A), lda,
             static_cast<const cfloat*>(B), ldb, static_cast<const cfloat*>(beta), static_cast<cfloat*>(C), ldc, la, lb);
  return fortran_slow<cfloat>(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, la, lb);
}

/// Fortran ZGEMM: double-precision complex gemm ('C' conjugates).
PRISM_BLAS_EXPORT void zgemm_(const char* transa, const char* transb, const blas_int* m, const blas_int* n,
                         const blas_int* k, const void* alpha, const void* A, const blas_int* lda, const void* B,
                         const blas_int* ldb, const void* beta, void* C, const blas_int* ldc, std::size_t la,
                         std::size_t lb) {
  if (auto f = fast_target<cdouble>(transa, transb, m, n, k, static_cast<const cdouble*>(alpha), lda, ldb,
                                   static_cast<const cdouble*>(beta), ldc))
    return f(transa, transb, m, n, k, static_cast<const cdouble*>(alpha), static_cast<const cdouble*>(A), lda,
             static_cast<const cdouble*>(B), ldb, static_cast<const cdouble*>(beta), static_cast<cdouble*>(C), ldc, la, lb);
  return fortran_slow<cdouble>(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, la, lb);
}
