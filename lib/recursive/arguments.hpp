// lib/recursive/arguments.hpp — reference BLAS / CBLAS ?gemm argument checks as numbers:
// which argument the reference implementation rejects first, or 0. prism::gemm turns the
// number into a prism::invalid_argument; libprism_blas passes it to xerbla_/cblas_xerbla and
// prints the same text as prism::gemm's exception (argument_error below).
#pragma once

#include <prism/error.hpp>

#include <cstdint>
#include <string>
#include <utility>

namespace prism::detail {

/// Upper-case trans letter, ASCII only like reference LSAME (std::toupper would consult the
/// locale on every call, measurable on a 16x16x16 drop-in call).
inline char upper_trans(char c) noexcept { return c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c; }

/// True for 'N', 'T', 'C' in either case (reference BLAS's LSAME).
inline bool valid_trans(char c) noexcept {
  const char u = upper_trans(c);
  return u == 'N' || u == 'T' || u == 'C';
}

/// Throws prism::error naming the first leading dimension above 2^31 - 1, which `by` (the
/// 32-bit leaf BLAS, or cuBLAS) cannot take and no cut can shrink; C untouched. E.g.
/// "ldc = 3000000000: leading dimensions above 2^31-1 are not supported by cuBLAS".
inline void check_leading_dimensions(std::int64_t lda, std::int64_t ldb, std::int64_t ldc, const char* by) {
  const std::int64_t int_max = 2147483647;
  for (const auto& [name, ld] : {std::pair<const char*, std::int64_t>{"lda", lda}, {"ldb", ldb}, {"ldc", ldc}})
    if (ld > int_max)
      throw error(std::string(name) + " = " + std::to_string(ld) + ": leading dimensions above 2^31-1 are not supported by " + by);
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

/// Reference ?syrk / ?herk argument checks in their order; 0 or the xerbla position:
/// 1 uplo, 2 trans, 3 n, 4 k, 7 lda, 10 ldc. Allowed trans letters: real syrk N, T, C (C
/// means T, as reference dsyrk accepts it); complex syrk N, T; herk N, C. A is n x k when
/// trans = 'N', else k x n. Example: dsyrk('U', 'T', n=3, k=5, ..., lda=4, ...) gives 7
/// (lda < max(1, k) = 5).
inline int rank_k_info(bool herm, bool complex, char uplo, char trans, std::int64_t n, std::int64_t k, std::int64_t lda,
                std::int64_t ldc) {
  const char u = upper_trans(uplo), t = upper_trans(trans);
  const bool trans_ok = t == 'N' || (herm ? t == 'C' : (t == 'T' || (!complex && t == 'C')));
  const std::int64_t rows_a = t == 'N' ? n : k;
  if (u != 'U' && u != 'L') return 1;
  if (!trans_ok) return 2;
  if (n < 0) return 3;
  if (k < 0) return 4;
  if (lda < (rows_a > 1 ? rows_a : 1)) return 7;
  if (ldc < (n > 1 ? n : 1)) return 10;
  return 0;
}

/// The error for a rejected ?syrk / ?herk call, from its Fortran position `info` (shifted by
/// one when `cblas`: the layout is argument 1 there, info 0 a bad layout), with `trans` the
/// letter the lda check used: the exception prism::syrk / herk throw and the line
/// libprism_blas prints, e.g. "dsyrk: argument 7 (lda) must be >= max(1, 5), got 4".
inline invalid_argument rank_k_error(const std::string& routine, int info, bool cblas, bool herm, bool complex,
                                     char trans, std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldc) {
  const int pos = cblas ? info + 1 : info;
  auto at_least = [](std::int64_t need, std::int64_t got) {
    return "must be >= max(1, " + std::to_string(need) + "), got " + std::to_string(got);
  };
  switch (info) {
    case 0: return invalid_argument(routine, "layout", pos, "must be CblasRowMajor (101) or CblasColMajor (102)");
    case 1: return invalid_argument(routine, "uplo", pos, "must be 'U' or 'L'");
    case 2:
      return invalid_argument(routine, "trans", pos,
                              herm ? "must be 'N' or 'C'" : complex ? "must be 'N' or 'T'" : "must be 'N', 'T' or 'C'");
    case 3: return invalid_argument(routine, "n", pos, "must be >= 0, got " + std::to_string(n));
    case 4: return invalid_argument(routine, "k", pos, "must be >= 0, got " + std::to_string(k));
    case 7: return invalid_argument(routine, "lda", pos, at_least(upper_trans(trans) == 'N' ? n : k, lda));
    default: return invalid_argument(routine, "ldc", pos, at_least(n, ldc));
  }
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

/// A rejected ?gemm call's arguments as its API passed them (trans letters upper case).
struct gemm_arguments {
  char transa, transb;
  std::int64_t m, n, k, lda, ldb, ldc;
};

/// The error for argument `position` of a rejected call: the exception prism::gemm throws and
/// the line libprism_blas prints, e.g. "dgemm: argument 8 (lda) must be >= max(1, 5), got 4".
/// `cblas`: positions count the layout as argument 1 (CBLAS, and prism's row-major form);
/// `row_major`: the operands are row-major (A is m x k with lda >= k for transa = 'N', ldc >= n).
inline invalid_argument argument_error(const std::string& routine, int position, bool cblas, bool row_major,
                                       const gemm_arguments& a) {
  auto at_least = [](std::int64_t need, std::int64_t got) {
    return "must be >= max(1, " + std::to_string(need) + "), got " + std::to_string(got);
  };
  auto non_negative = [](std::int64_t got) { return "must be >= 0, got " + std::to_string(got); };
  const bool a_n = a.transa == 'N', b_n = a.transb == 'N';
  const std::int64_t need_a = row_major ? (a_n ? a.k : a.m) : (a_n ? a.m : a.k);
  const std::int64_t need_b = row_major ? (b_n ? a.n : a.k) : (b_n ? a.k : a.n);
  switch (cblas ? position - 1 : position) {  // Fortran numbering from here on
    case 0: return invalid_argument(routine, "layout", position, "must be CblasRowMajor (101) or CblasColMajor (102)");
    case 1: return invalid_argument(routine, "transa", position, "must be 'N', 'T' or 'C'");
    case 2: return invalid_argument(routine, "transb", position, "must be 'N', 'T' or 'C'");
    case 3: return invalid_argument(routine, "m", position, non_negative(a.m));
    case 4: return invalid_argument(routine, "n", position, non_negative(a.n));
    case 5: return invalid_argument(routine, "k", position, non_negative(a.k));
    case 8: return invalid_argument(routine, "lda", position, at_least(need_a, a.lda));
    case 10: return invalid_argument(routine, "ldb", position, at_least(need_b, a.ldb));
    default: return invalid_argument(routine, "ldc", position, at_least(row_major ? a.n : a.m, a.ldc));
  }
}

}  // namespace prism::detail
