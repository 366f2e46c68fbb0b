/* tests/dropin/check_overflow.c — calls whose element offsets pass 2^31 (column j of an
   operand starts at j * ld >= 2^31 elements) through libprism_blas (LP64) and
   libprism_blas64 (ILP64, where ld itself may exceed 2^31 - 1), as a user links them.
   Each operand is an mmap'ed region with MAP_NORESERVE: the virtual span is 8-34 GB, but
   only the few elements the call touches get pages, so each case stays far below 4 GiB of
   memory. Inputs are small integers, so every exact product is representable and the
   result must match a plain double loop exactly; the elements just below and above each
   column of C (rows m and m+1 of the span, and the other triangle for ?syrk/?herk) hold a
   sentinel that must survive. A refusal (xerbla, C untouched) would be reported as such by
   the program's own xerbla_ and counted as a failure too: these calls are valid.
   Dense products (dense_case): op(A) and op(B) with m*k or k*n past 2^31 elements, every
   element read. Such an operand is mapped cyclically: one 12 MiB memfd mapped read-only
   again and again over its 9-17 GB of addresses, so element e holds value(e mod P), with P
   = 12 MiB / element size a multiple of 3, which no wrapped 32-bit element or byte offset
   (a multiple of 2^30 or 2^32) is: a wrapped offset reads another value. C is real memory
   (1.1 GB at most). Dense m*n > 2^31 products are not here: in float alone C would need
   8 GiB, and C cannot be mapped cyclically (its aliases would hide a missing write).
   Exit status: number of failures (0: all passed). */
#define _GNU_SOURCE
#include "blas_abi.h"

#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int failures = 0, cases = 0, refused = 0;

/* The program's own xerbla_: a valid call refused is a failure of this test. */
void xerbla_(const char* name, const blas_int* info, size_t len) {
  fprintf(stderr, "check_overflow: %.*s refused argument %lld\n", (int)len, name, (long long)*info);
  ++refused;
}
void cblas_xerbla(blas_int p, const char* rout, const char* form, ...) {
  (void)form;
  fprintf(stderr, "check_overflow: %s refused argument %lld\n", rout, (long long)p);
  ++refused;
}

static void* span(size_t bytes) {
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, "check_overflow: cannot map %zu bytes (virtual)\n", bytes);
    exit(77);
  }
  return p;
}

/* Element (i, j) of a column-major operand as a double complex (t: 0 s, 1 d, 2 c). */
static double complex get(int t, const void* p, int64_t i, int64_t j, int64_t ld) {
  size_t at = (size_t)i + (size_t)j * (size_t)ld;
  return t == 0 ? ((const float*)p)[at] : t == 1 ? ((const double*)p)[at] : ((const float complex*)p)[at];
}
static void put(int t, void* p, int64_t i, int64_t j, int64_t ld, double complex v) {
  size_t at = (size_t)i + (size_t)j * (size_t)ld;
  if (t == 0) ((float*)p)[at] = (float)creal(v);
  else if (t == 1) ((double*)p)[at] = creal(v);
  else ((float complex*)p)[at] = (float complex)v;
}
static size_t esize(int t) { return t == 0 ? 4 : t == 1 ? 8 : 8; }

static const double sentinel = 12345.0;

/* op(X)(i, l) for trans 'N' / 'T' / 'C'. */
static double complex op(int t, char tr, const void* X, int64_t ld, int64_t i, int64_t l) {
  double complex v = tr == 'N' ? get(t, X, i, l, ld) : get(t, X, l, i, ld);
  return tr == 'C' ? conj(v) : v;
}

/* Fills rows x cols of X (ld) with small integers (and sentinels in rows rows, rows + 1
   when they lie inside ld). */
static void fill(int t, void* X, int64_t rows, int64_t cols, int64_t ld, int seed) {
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t i = 0; i < rows; ++i) {
      int a = (int)((i * 7 + j * 3 + seed) % 5) - 2, b = (int)((i + j * 5 + seed) % 3) - 1;
      put(t, X, i, j, ld, t == 2 ? a + b * I : a);
    }
    for (int64_t i = rows; i < rows + 2 && i < ld; ++i) put(t, X, i, j, ld, sentinel);
  }
}

/* gemm: C = alpha op(A) op(B) + beta C with alpha 2, beta 1 (ints: exact). */
static void gemm_case(int t, const char* name, char ta, char tb, int64_t m, int64_t n, int64_t k, int64_t lda,
                      int64_t ldb, int64_t ldc, int cblas_row) {
  ++cases;
  const int64_t ar = ta == 'N' ? m : k, ac = ta == 'N' ? k : m, br = tb == 'N' ? k : n, bc = tb == 'N' ? n : k;
  /* Row-major C (cblas): the stored matrix is n x m column-major with ld ldc. */
  const int64_t cr = cblas_row ? n : m, cc = cblas_row ? m : n;
  /* Row-major A and B (cblas): stored transposed, column-major. */
  const int64_t sar = cblas_row ? ac : ar, sac = cblas_row ? ar : ac, sbr = cblas_row ? bc : br,
                sbc = cblas_row ? br : bc;
  void* A = span((size_t)lda * (size_t)sac * esize(t));
  void* B = span((size_t)ldb * (size_t)sbc * esize(t));
  void* C = span((size_t)ldc * (size_t)cc * esize(t));
  fill(t, A, sar, sac, lda, 1);
  fill(t, B, sbr, sbc, ldb, 2);
  fill(t, C, cr, cc, ldc, 3);
  /* expected, before the call */
  double complex* want = malloc(sizeof(double complex) * (size_t)(m * n));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double complex s = 0;
      if (cblas_row) /* row-major: A is ar x ac row-major = ac x ar column-major */
        for (int64_t l = 0; l < k; ++l)
          s += (ta == 'N' ? get(t, A, l, i, lda) : get(t, A, i, l, lda)) *
               (tb == 'N' ? get(t, B, j, l, ldb) : get(t, B, l, j, ldb));
      else
        for (int64_t l = 0; l < k; ++l) s += op(t, ta, A, lda, i, l) * op(t, tb, B, ldb, l, j);
      want[i + j * m] = 2 * s + (cblas_row ? get(t, C, j, i, ldc) : get(t, C, i, j, ldc));
    }
  const blas_int M = m, N = n, K = k, LDA = lda, LDB = ldb, LDC = ldc;
  const int before = refused;
  if (t == 0 && !cblas_row) {
    const float al = 2, be = 1;
    sgemm_(&ta, &tb, &M, &N, &K, &al, A, &LDA, B, &LDB, &be, C, &LDC, 1, 1);
  } else if (t == 0) {
    cblas_sgemm(RowMajor, ta == 'N' ? NoTrans : Trans, tb == 'N' ? NoTrans : Trans, M, N, K, 2.0f, A, LDA, B, LDB,
                1.0f, C, LDC);
  } else if (t == 1) {
    const double al = 2, be = 1;
    dgemm_(&ta, &tb, &M, &N, &K, &al, A, &LDA, B, &LDB, &be, C, &LDC, 1, 1);
  } else {
    const float complex al = 2, be = 1;
    cgemm_(&ta, &tb, &M, &N, &K, &al, A, &LDA, B, &LDB, &be, C, &LDC, 1, 1);
  }
  int bad = refused != before;
  for (int64_t j = 0; j < n && !bad; ++j)
    for (int64_t i = 0; i < m && !bad; ++i) {
      double complex got = cblas_row ? get(t, C, j, i, ldc) : get(t, C, i, j, ldc);
      if (got != want[i + j * m]) {
        fprintf(stderr, "check_overflow: %s: C(%lld, %lld) = %g%+gi, expected %g%+gi\n", name, (long long)i,
                (long long)j, creal(got), cimag(got), creal(want[i + j * m]), cimag(want[i + j * m]));
        bad = 1;
      }
    }
  for (int64_t j = 0; j < cc && !bad; ++j)
    for (int64_t i = cr; i < cr + 2 && i < ldc; ++i)
      if (get(t, C, i, j, ldc) != sentinel) {
        fprintf(stderr, "check_overflow: %s: wrote outside C at (%lld, %lld)\n", name, (long long)i, (long long)j);
        bad = 1;
      }
  printf("check_overflow: %-44s m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld: %s\n", name, (long long)m,
         (long long)n, (long long)k, (long long)lda, (long long)ldb, (long long)ldc, bad ? "FAILED" : "ok");
  failures += bad;
  free(want);
  munmap(A, (size_t)lda * (size_t)sac * esize(t));
  munmap(B, (size_t)ldb * (size_t)sbc * esize(t));
  munmap(C, (size_t)ldc * (size_t)cc * esize(t));
}

/* syrk / herk: C = 2 op(A) op(A)^T (^H) + C on one triangle; the other stays. */
static void syrk_case(int t, const char* name, char uplo, char tr, int64_t n, int64_t k, int64_t lda, int64_t ldc,
                      int cblas) {
  ++cases;
  const int64_t ar = tr == 'N' ? n : k, ac = tr == 'N' ? k : n;
  void* A = span((size_t)lda * (size_t)ac * esize(t));
  void* C = span((size_t)ldc * (size_t)n * esize(t));
  fill(t, A, ar, ac, lda, 4);
  fill(t, C, n, n, ldc, 5);
  if (t == 2)  /* herk: a real diagonal on entry */
    for (int64_t i = 0; i < n; ++i) put(t, C, i, i, ldc, creal(get(t, C, i, i, ldc)));
  double complex* before = malloc(sizeof(double complex) * (size_t)(n * n));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) before[i + j * n] = get(t, C, i, j, ldc);
  const blas_int N = n, K = k, LDA = lda, LDC = ldc;
  const int was = refused;
  if (t == 0 && !cblas) {
    const float al = 2, be = 1;
    ssyrk_(&uplo, &tr, &N, &K, &al, A, &LDA, &be, C, &LDC, 1, 1);
  } else if (t == 0) {
    cblas_ssyrk(ColMajor, uplo == 'U' ? 121 : 122, tr == 'N' ? NoTrans : Trans, N, K, 2.0f, A, LDA, 1.0f, C, LDC);
  } else if (t == 1) {
    const double al = 2, be = 1;
    dsyrk_(&uplo, &tr, &N, &K, &al, A, &LDA, &be, C, &LDC, 1, 1);
  } else {
    const float al = 2, be = 1;
    cherk_(&uplo, &tr, &N, &K, &al, A, &LDA, &be, C, &LDC, 1, 1);
  }
  int bad = refused != was;
  for (int64_t j = 0; j < n && !bad; ++j)
    for (int64_t i = 0; i < n && !bad; ++i) {
      const int mine = uplo == 'U' ? i <= j : i >= j;
      double complex w = before[i + j * n];
      if (mine) {
        double complex s = 0;
        for (int64_t l = 0; l < k; ++l) {
          double complex x = op(t, tr == 'C' ? 'T' : tr, A, lda, i, l);
          double complex y = op(t, tr == 'C' ? 'T' : tr, A, lda, j, l);
          s += t != 2 ? x * y : tr == 'N' ? x * conj(y) : conj(x) * y; /* herk: A A^H or A^H A */
        }
        w += 2 * s;
        if (t == 2 && i == j) w = creal(w);
      }
      double complex got = get(t, C, i, j, ldc);
      if (got != w) {
        fprintf(stderr, "check_overflow: %s: C(%lld, %lld) = %g%+gi, expected %g%+gi\n", name, (long long)i,
                (long long)j, creal(got), cimag(got), creal(w), cimag(w));
        bad = 1;
      }
    }
  for (int64_t j = 0; j < n && !bad; ++j)
    for (int64_t i = n; i < n + 2 && i < ldc; ++i)
      if (get(t, C, i, j, ldc) != sentinel) bad = 1;
  printf("check_overflow: %-44s n=%lld k=%lld lda=%lld ldc=%lld: %s\n", name, (long long)n, (long long)k,
         (long long)lda, (long long)ldc, bad ? "FAILED" : "ok");
  failures += bad;
  free(before);
  munmap(A, (size_t)lda * (size_t)ac * esize(t));
  munmap(C, (size_t)ldc * (size_t)n * esize(t));
}

/* A read-only operand of `count` elements of size es whose element e holds pattern[e mod
   period]: one memfd of `period` elements, mapped again and again. */
#define CYCLIC_BYTES ((size_t)12 << 20)
static double cyclic_value(int64_t e, int seed) {
  uint64_t h = (uint64_t)(e + seed) * UINT64_C(0x9e3779b97f4a7c15);
  return (double)((int)((h >> 40) % 5) - 2);
}
static void* cyclic(int t, int64_t count, int seed, size_t* bytes) {
  const size_t es = esize(t), period = CYCLIC_BYTES / es, page = (size_t)sysconf(_SC_PAGESIZE);
  *bytes = ((size_t)count * es + page - 1) / page * page;
  int fd = memfd_create("prism-cyclic", 0);
  void* base = fd < 0 ? MAP_FAILED : mmap(NULL, *bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED || ftruncate(fd, (off_t)CYCLIC_BYTES) != 0) {
    fprintf(stderr, "check_overflow: cannot map a cyclic operand of %zu bytes (virtual)\n", *bytes);
    exit(77);
  }
  void* one = mmap(NULL, CYCLIC_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  for (size_t e = 0; e < period; ++e) put(t, one, (int64_t)e, 0, 0, cyclic_value((int64_t)e, seed));
  munmap(one, CYCLIC_BYTES);
  for (size_t off = 0; off < *bytes; off += CYCLIC_BYTES)
    if (mmap((char*)base + off, *bytes - off < CYCLIC_BYTES ? *bytes - off : CYCLIC_BYTES, PROT_READ,
             MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0) == MAP_FAILED) {
      fprintf(stderr, "check_overflow: cannot map the memfd across %zu bytes\n", *bytes);
      exit(77);
    }
  close(fd);
  return base;
}

/* Dense ?gemm_ with alpha 2, beta 1, column-major, real types (t 0 or 1): A (lda = its rows)
   and B (ldb = its rows) cyclic, C m x n real memory. The expected C(i, j) = 2 sum_l
   op(A)(i, l) op(B)(l, j) + C0(i, j) is summed over one period of l and the remainder when
   both operands repeat with period P in l (k huge), else directly (k small). */
static void dense_case(int t, const char* name, char ta, char tb, int64_t m, int64_t n, int64_t k) {
  ++cases;
  const int64_t lda = ta == 'N' ? m : k, ldb = tb == 'N' ? k : n, P = (int64_t)(CYCLIC_BYTES / esize(t));
  size_t abytes, bbytes;
  void* A = cyclic(t, m * k, 1, &abytes);
  void* B = cyclic(t, k * n, 2, &bbytes);
  void* C = malloc((size_t)(m * n) * esize(t));
  if (C == NULL) {
    fprintf(stderr, "check_overflow: %s: no memory for C\n", name);
    exit(77);
  }
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) put(t, C, i, j, m, (double)((int)((i * 7 + j * 3) % 5) - 2));
  const blas_int M = m, N = n, K = k, LDA = lda, LDB = ldb, LDC = m;
  const int before = refused;
  if (t == 0) {
    const float al = 2, be = 1;
    sgemm_(&ta, &tb, &M, &N, &K, &al, A, &LDA, B, &LDB, &be, C, &LDC, 1, 1);
  } else {
    const double al = 2, be = 1;
    dgemm_(&ta, &tb, &M, &N, &K, &al, A, &LDA, B, &LDB, &be, C, &LDC, 1, 1);
  }
  int bad = refused != before;
  /* element index of op(A)(i, l) and op(B)(l, j), and their steps in l */
  const int64_t sa = ta == 'N' ? lda : 1, sb = tb == 'N' ? 1 : ldb;
  const int64_t q = k / P, r = k % P, ls = q > 0 ? P : k;
  int64_t wrong = 0;
  double* pa = malloc(sizeof(double) * (size_t)P);
  double* pb = malloc(sizeof(double) * (size_t)P);
  for (int64_t e = 0; e < P; ++e) pa[e] = cyclic_value(e, 1), pb[e] = cyclic_value(e, 2);
  /* The sum for C(i, j) depends on i only through ea0 = op(A)(i, 0)'s element mod P, so it is
     computed once per ea0 (memo, NaN = not yet): m = 2^27 + 1 rows at lda 17 take about
     2^27 / P = 43 turns through the same P values of ea0. */
  double* memo = malloc(sizeof(double) * (size_t)P);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t e = 0; e < P; ++e) memo[e] = NAN;
    for (int64_t i = 0; i < m; ++i) {
      const int64_t ea0 = (ta == 'N' ? i : i * lda) % P;
      if (isnan(memo[ea0])) {
        int64_t ea = ea0, eb = (tb == 'N' ? j * ldb : j) % P;
        double full = 0, part = 0;
        for (int64_t l = 0; l < ls; ++l) {
          double x = pa[ea] * pb[eb];
          full += x;
          if (l < r) part += x;
          if ((ea += sa % P) >= P) ea -= P;
          if ((eb += sb % P) >= P) eb -= P;
        }
        memo[ea0] = q > 0 ? (double)q * full + part : full;
      }
      const double want = 2 * memo[ea0] + (double)((int)((i * 7 + j * 3) % 5) - 2);
      const double got = creal(get(t, C, i, j, m));
      if (got != want && wrong++ == 0)
        fprintf(stderr, "check_overflow: %s: C(%lld, %lld) = %g, expected %g\n", name, (long long)i, (long long)j, got,
                want);
    }
  }
  free(memo);
  bad |= wrong != 0;
  free(pa);
  free(pb);
  printf("check_overflow: %-44s m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld: %s\n", name, (long long)m,
         (long long)n, (long long)k, (long long)lda, (long long)ldb, (long long)m, bad ? "FAILED" : "ok");
  failures += bad;
  free(C);
  munmap(A, abytes);
  munmap(B, bbytes);
}

int main(void) {
  /* 2^27 + 1 columns apart: column 16 starts at 2^31 + 16 elements (past INT_MAX). */
  const int64_t big = (INT64_C(1) << 27) + 1;
  gemm_case(0, "sgemm_ NN, C's column offsets past 2^31", 'N', 'N', 3, 17, 2, 3, 2, big, 0);
  gemm_case(0, "sgemm_ NN, A's column offsets past 2^31", 'N', 'N', 3, 2, 17, big, 17, 3, 0);
  gemm_case(0, "sgemm_ TN, op(A) = A^T, A's offsets past 2^31", 'T', 'N', 17, 3, 2, big, 2, 17, 0);
  gemm_case(0, "sgemm_ NT, op(B) = B^T, B's offsets past 2^31", 'N', 'T', 3, 2, 17, 3, big, 3, 0);
  gemm_case(0, "sgemm_ NN, 17 x 40 with k = 1 and ldc past 2^31/16", 'N', 'N', 17, 40, 1, 17, 1, (INT64_C(1) << 26) + 3, 0);
  gemm_case(0, "cblas_sgemm RowMajor, C's row offsets past 2^31", 'N', 'N', 17, 3, 2, 2, 3, big, 1);
  gemm_case(1, "dgemm_ NN, C's column offsets past 2^31", 'N', 'N', 3, 17, 2, 3, 2, big, 0);
  gemm_case(2, "cgemm_ NC, B's offsets past 2^31", 'N', 'C', 3, 2, 17, 3, big, 3, 0);
  syrk_case(0, "ssyrk_ U N, C's column offsets past 2^31", 'U', 'N', 17, 2, 17, big, 0);
  syrk_case(0, "ssyrk_ L T, A's column offsets past 2^31", 'L', 'T', 17, 2, big, 17, 0);
  syrk_case(0, "cblas_ssyrk L N, C's column offsets past 2^31", 'L', 'N', 17, 3, 17, big, 1);
  syrk_case(1, "dsyrk_ L N, C's column offsets past 2^31", 'L', 'N', 17, 2, 17, big, 0);
  syrk_case(2, "cherk_ U C, A's column offsets past 2^31", 'U', 'C', 17, 2, big, 17, 0);
  /* Dense: op(A) = A^T of 17 x (2^27 + 1) (lda 17), read whole: m*k past 2^31 elements. */
  dense_case(0, "sgemm_ TN dense, m*k past 2^31 (A^T, lda 17)", 'T', 'N', (INT64_C(1) << 27) + 1, 2, 17);
#if defined(BLAS_INT_IS_64)
  /* ILP64, dense: k itself past 2^31 - 1, both operands read whole (17 GB of addresses each:
     one row of op(A), one column of op(B); every 4 KiB page of them is a TLB miss, so each
     further row or column of C only adds time). */
  dense_case(1, "dgemm_ NT dense, k > 2^31 - 1 (lda = ldb = 1)", 'N', 'T', 1, 1, (INT64_C(1) << 31) + 5);
  /* ILP64: leading dimensions themselves past 2^31 - 1. */
  const int64_t huge = (INT64_C(1) << 31) + 5;
  gemm_case(0, "sgemm_ NN, ldc > 2^31 - 1", 'N', 'N', 3, 2, 2, 3, 2, huge, 0);
  gemm_case(0, "sgemm_ TN, lda > 2^31 - 1", 'T', 'N', 2, 3, 2, huge, 2, 2, 0);
  syrk_case(0, "ssyrk_ U N, ldc > 2^31 - 1", 'U', 'N', 2, 3, 2, huge, 0);
#endif
  printf("check_overflow (%s): %d cases, %d failures\n", sizeof(blas_int) == 8 ? "ILP64" : "LP64", cases, failures);
  return failures > 100 ? 100 : failures;
}
