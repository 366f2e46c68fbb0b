// lib/recursive/arguments.hpp — reference BLAS / CBLAS ?gemm argument checks as numbers:
// which argument the reference implementation rejects first, or 0. prism::gemm turns the
// number into a prism::invalid_argument; libprism_blas passes it to xerbla_/cblas_xerbla.
#pragma once

#include <cstdint>

namespace prism::detail {

/// Upper-case trans letter, ASCII only like reference LSAME (std::toupper would consult the
/// locale on every call, measurable on a 16x16x16 drop-in call).
inline char upper_trans(char c) noexcept { return c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c; }

/// True for 'N', 'T', 'C' in either case (reference BLAS's LSAME).
inline bool valid_trans(char c) noexcept {
  const char u = upper_trans(c);
  return u == 'N' || u == 'T' || u == 'C';
}

/// Fortran ?gemm check in the reference order; 0 when valid, else the position reference
/// BLAS passes to xerbla (1 transa, 2 transb, 3 m, 4 n, 5 k, 8 lda, 10 ldb, 13 ldc).
/// Example: dgemm('N','N', m=5, n=3, k=4, ..., lda=4, ...) returns 8 (lda < max(1, m) = 5).
inline int fortran_info(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda,
                        std::int64_t ldb, std::int64_t ldc) noexcept {
  // A is m x k when transa = 'N', else k x m; B is k x n when transb = 'N', else n x k.
  const std::int64_t rows_a = upper_trans(transa) == 'N' ? m : k, rows_b = upper_trans(transb) == 'N' ? k : n;
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

/// An invalid CBLAS call: the number reference CBLAS passes to cblas_xerbla (`passed`) and
/// the one its cblas_xerbla reports (`reported`), counting the layout as argument 1.
struct cblas_error {
  int passed = 0;
  int reported = 0;
};

/// Reference CBLAS check of a row-major ?gemm, trans given as letters. It checks TransA (2)
/// and TransB (3) itself, then calls the Fortran routine transposed (B first, n and m
/// swapped) and passes its number plus one: a bad M is Fortran's N (4) -> passed 5. Its
/// cblas_xerbla (and the testers' handler) swaps 4 <-> 5 and 9 <-> 11 back for a row-major
/// gemm: reported 4 (M). So n is checked before m and ldb before lda. Row-major A is m x k
/// (lda >= k) when transa = 'N', else k x m.
inline cblas_error row_major_info(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k,
                                  std::int64_t lda, std::int64_t ldb, std::int64_t ldc) noexcept {
  if (!valid_trans(transa)) return {2, 2};
  if (!valid_trans(transb)) return {3, 3};
  const int f = fortran_info(transb, transa, n, m, k, ldb, lda, ldc);
  if (f == 0) return {};
  const int passed = f + 1;  // Fortran 3 n, 4 m, 5 k, 8 ldb, 10 lda, 13 ldc -> 4, 5, 6, 9, 11, 14
  const int reported = passed == 4 ? 5 : passed == 5 ? 4 : passed == 9 ? 11 : passed == 11 ? 9 : passed;
  return {passed, reported};
}

}  // namespace prism::detail
