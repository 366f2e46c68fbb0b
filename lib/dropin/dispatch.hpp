// lib/dropin/dispatch.hpp — what libprism_blas does with a valid ?gemm call: quick return,
// the user's BLAS (backend) or prism's recursion; PRISM_VERBOSE logging, PRISM_STATS.
#pragma once

#include "backend.hpp"

#include <prism/types.hpp>

#include <atomic>

/// Marks the eight exported entry points; everything else in the drop-in is hidden.
#define PRISM_BLAS_EXPORT extern "C" __attribute__((visibility("default")))

namespace prism::dropin {

using cfloat = std::complex<float>;    ///< C's float complex, Fortran's COMPLEX
using cdouble = std::complex<double>;  ///< C's double complex, Fortran's COMPLEX*16

/// How a call was served.
enum class path { trivial, backend, recursion };

/// One call as the caller made it, for the log (a row-major call reaches dispatch as the
/// transposed column-major one, so its own trans letters and sizes are kept here).
struct call_site {
  const char* routine;  ///< e.g. "dgemm_" or "cblas_dgemm"
  const char* layout;   ///< "" for Fortran, "RowMajor" or "ColMajor" for CBLAS
  char transa, transb;  ///< as passed ('N', 'T', 'C')
  long long m, n, k;    ///< as passed
};

/// Runs a checked column-major call (trans letters upper case): quick return, backend or
/// recursion by the routing rule (README "Use prism without changing your code"). Never
/// throws: a failure prism cannot recover from is reported on stderr and aborts.
template <scalar T>
void dispatch(const call_site& site, char transa, char transb, blas_int m, blas_int n, blas_int k,
              const T& alpha, const T* A, blas_int lda, const T* B, blas_int ldb, const T& beta, T* C,
              blas_int ldc) noexcept;

/// What the fast path needs, published by the first full dispatch when routing is `auto`
/// and nothing is logged (PRISM_VERBOSE and PRISM_STATS off) and a backend exists.
struct fast_path_state {
  std::atomic<bool> ready{false};  ///< the fields below are set
  const backend* b = nullptr;      ///< the backend
  double small_flops = 0;          ///< PRISM_SMALL_FLOPS of the default context
  void* fortran[4] = {};           ///< the backend's sgemm_ ... zgemm_
  void* cblas[4] = {};             ///< the backend's cblas_sgemm ... cblas_zgemm, or nulls
};
/// The process-wide fast-path state (dispatch.cpp).
extern fast_path_state fast_state;

/// True when a valid call of this size goes straight to the backend: the fast path is
/// published, the call is no quick return and it is below PRISM_SMALL_FLOPS. Each entry
/// point then hands the backend its own arguments unchanged, as a tail call (measured: the
/// drop-in's share of a 16x16x16 call is then the argument check and this test).
template <scalar T>
inline bool fast_path_takes(blas_int m, blas_int n, blas_int k, const T& alpha) noexcept {
  if (!fast_state.ready.load(std::memory_order_acquire)) return false;
  if (m <= 0 || n <= 0 || k <= 0 || alpha == T(0)) return false;  // quick returns: full path
  const double flops = (is_complex(scalar_type_of<T>()) ? 8.0 : 2.0) * double(m) * double(n) * double(k);
  return flops < fast_state.small_flops;
}

/// Slot of a type in the backend's tables: s 0, d 1, c 2, z 3.
template <scalar T>
constexpr int type_slot() {
  return std::same_as<T, float> ? 0 : std::same_as<T, double> ? 1 : std::same_as<T, std::complex<float>> ? 2 : 3;
}

/// Counts one call rejected with xerbla / cblas_xerbla (PRISM_STATS) and logs it
/// (PRISM_VERBOSE): `routine` e.g. "dgemm_", `position` the argument number reported.
void count_invalid(const char* routine, long long position) noexcept;

/// Upper-case trans letter, ASCII only like reference LSAME (std::toupper would consult the
/// locale on every call, measurable on a 16x16x16 call).
inline char upper_trans(char c) noexcept { return c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c; }

/// True for 'N', 'T', 'C' in either case (reference BLAS's LSAME).
inline bool valid_trans(char c) noexcept {
  const char u = upper_trans(c);
  return u == 'N' || u == 'T' || u == 'C';
}

/// Fortran ?gemm argument check in the reference order; 0 when valid, else the position
/// reference BLAS passes to xerbla (1 transa, 2 transb, 3 m, 4 n, 5 k, 8 lda, 10 ldb, 13 ldc).
/// Example: dgemm('N','N', m=5, n=3, k=4, ..., lda=4, ...) returns 8 (lda < max(1, m) = 5).
/// Inline: it runs on every call, small ones included.
inline int fortran_info(char transa, char transb, blas_int m, blas_int n, blas_int k, blas_int lda, blas_int ldb,
                        blas_int ldc) noexcept {
  // A is m x k when transa = 'N', else k x m; B is k x n when transb = 'N', else n x k.
  const blas_int rows_a = upper_trans(transa) == 'N' ? m : k, rows_b = upper_trans(transb) == 'N' ? k : n;
  if (!valid_trans(transa)) return 1;
  if (!valid_trans(transb)) return 2;
  if (m < 0) return 3;
  if (n < 0) return 4;
  if (k < 0) return 5;
  if (lda < (rows_a > 1 ? rows_a : 1)) return 8;
  if (ldb < (rows_b > 1 ? rows_b : 1)) return 10;
  if (ldc < (m > 1 ? m : 1)) return 13;
  return 0;
}

}  // namespace prism::dropin
