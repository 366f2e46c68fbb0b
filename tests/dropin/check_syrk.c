/* tests/dropin/check_syrk.c — the drop-in's ?syrk / ?herk entry points as a C program calls
   them: Fortran ssyrk_ dsyrk_ csyrk_ zsyrk_ cherk_ zherk_ and cblas_dsyrk / cblas_zsyrk /
   cblas_zherk in both layouts, uplo U/L, every trans letter each routine allows, alpha and
   beta in {0, 1, -1, 0.7}, against a long-double reference: the named triangle within
   4 (k + 2) eps (|alpha| |A||A|^T + |beta| |C0|) (x2 complex), everything else (the other
   triangle holds NaN, and the padding) bitwise unchanged, herk's diagonal real. Then
   invalid calls: the program's own xerbla_ / cblas_xerbla must see the reference routine
   name and parameter position, with C untouched. Prints "check_syrk (LP64|ILP64): N cases,
   F failures" and exits non-zero on any failure. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_abi.h"


enum { Upper = 121, Lower = 122 };
/* routine: 0 ssyrk_ 1 dsyrk_ 2 csyrk_ 3 zsyrk_ 4 cherk_ 5 zherk_ 6 cblas_dsyrk 7 cblas_zsyrk
   8 cblas_zherk */
static const char* names[] = {"ssyrk_", "dsyrk_", "csyrk_", "zsyrk_", "cherk_", "zherk_",
                              "cblas_dsyrk", "cblas_zsyrk", "cblas_zherk"};
static int failures = 0, cases = 0;

static double rnd(void) { return 2.0 * rand() / RAND_MAX - 1.0; }

/* One call; all matrices held as long double complex for the check, passed in the
   routine's own element type. */
static void one(int routine, int row_major, char uplo, char trans, blas_int n, blas_int k, double alpha,
                double beta) {
  const int single = routine == 0 || routine == 2 || routine == 4;
  const int cplx = routine == 2 || routine == 3 || routine == 4 || routine == 5 || routine == 7 || routine == 8;
  const int herm = routine == 4 || routine == 5 || routine == 8;
  const int esz = (single ? 4 : 8) * (cplx ? 2 : 1);
  const int an = trans == 'N';
  const blas_int arows = an ? n : k, acols = an ? k : n;
  const blas_int lda = (row_major ? acols : arows) + 1, ldc = n + 2;
  const size_t asz = (size_t)lda * (size_t)(row_major ? arows : acols) + 1, csz = (size_t)ldc * (size_t)n + 1;
  long double complex* A = calloc(asz, sizeof *A);
  long double complex* C0 = calloc(csz, sizeof *C0);
  unsigned char* a = calloc(asz, (size_t)esz);
  unsigned char* c = calloc(csz, (size_t)esz);
  unsigned char* c0 = calloc(csz, (size_t)esz);
#define AT(i, j, ld) (row_major ? (size_t)(i) * (size_t)(ld) + (size_t)(j) : (size_t)(i) + (size_t)(j) * (size_t)(ld))
#define PUT(buf, p, z)                                                                   \
  do {                                                                                   \
    if (single) { float f[2] = {(float)creall(z), (float)cimagl(z)}; memcpy((buf) + (p) * esz, f, esz); } \
    else { double d[2] = {(double)creall(z), (double)cimagl(z)}; memcpy((buf) + (p) * esz, d, esz); }     \
  } while (0)
#define GET(buf, p, out)                                                                 \
  do {                                                                                   \
    if (single) { float f[2] = {0, 0}; memcpy(f, (buf) + (p) * esz, esz); out = f[0] + I * (long double)f[1]; } \
    else { double d[2] = {0, 0}; memcpy(d, (buf) + (p) * esz, esz); out = d[0] + I * (long double)d[1]; }       \
  } while (0)
  for (blas_int i = 0; i < arows; ++i)
    for (blas_int j = 0; j < acols; ++j) {
      long double complex z = rnd() + (cplx ? I * rnd() : 0);
      PUT(a, AT(i, j, lda), z);
      GET(a, AT(i, j, lda), A[AT(i, j, lda)]);  /* as rounded to the element type */
    }
  for (size_t p = 0; p < csz; ++p) {  /* everything NaN, then the triangle random */
    const double nan[2] = {NAN, NAN};
    const float fnan[2] = {NAN, NAN};
    memcpy(c + p * esz, single ? (const void*)fnan : (const void*)nan, esz);
  }
  for (blas_int i = 0; i < n; ++i)
    for (blas_int j = 0; j < n; ++j)
      if (uplo == 'U' ? i <= j : i >= j) {
        long double complex z = rnd() + (cplx ? I * rnd() : 0);
        PUT(c, AT(i, j, ldc), z);
        GET(c, AT(i, j, ldc), C0[AT(i, j, ldc)]);
      }
  memcpy(c0, c, csz * (size_t)esz);
  const char u[2] = {uplo, 0}, t[2] = {trans, 0};
  const int order = row_major ? RowMajor : ColMajor, cu = uplo == 'U' ? Upper : Lower;
  const int ct = trans == 'N' ? NoTrans : trans == 'T' ? Trans : ConjTrans;
  const float fa = (float)alpha, fb = (float)beta;
  const float fca[2] = {fa, 0}, fcb[2] = {fb, 0};
  const double dca[2] = {alpha, 0}, dcb[2] = {beta, 0};
  switch (routine) {
    case 0: ssyrk_(u, t, &n, &k, &fa, (float*)a, &lda, &fb, (float*)c, &ldc, 1, 1); break;
    case 1: dsyrk_(u, t, &n, &k, &alpha, (double*)a, &lda, &beta, (double*)c, &ldc, 1, 1); break;
    case 2: csyrk_(u, t, &n, &k, fca, a, &lda, fcb, c, &ldc, 1, 1); break;
    case 3: zsyrk_(u, t, &n, &k, dca, a, &lda, dcb, c, &ldc, 1, 1); break;
    case 4: cherk_(u, t, &n, &k, &fa, a, &lda, &fb, c, &ldc, 1, 1); break;
    case 5: zherk_(u, t, &n, &k, &alpha, a, &lda, &beta, c, &ldc, 1, 1); break;
    case 6: cblas_dsyrk(order, cu, ct, n, k, alpha, (double*)a, lda, beta, (double*)c, ldc); break;
    case 7: cblas_zsyrk(order, cu, ct, n, k, dca, a, lda, dcb, c, ldc); break;
    case 8: cblas_zherk(order, cu, ct, n, k, alpha, a, lda, beta, c, ldc); break;
  }
  ++cases;
  const int quick = n == 0 || ((alpha == 0 || k == 0) && beta == 1);
  const long double eps = single ? 1.1920929e-7L : 2.220446049250313e-16L;
  int bad = 0;
  for (size_t p = 0; p < csz && !bad; ++p) {
    const blas_int r = row_major ? (blas_int)(p / (size_t)ldc) : (blas_int)(p % (size_t)ldc);
    const blas_int s = row_major ? (blas_int)(p % (size_t)ldc) : (blas_int)(p / (size_t)ldc);
    const int inside = r < n && s < n && (uplo == 'U' ? r <= s : r >= s);
    if ((!inside || quick) && memcmp(c + p * esz, c0 + p * esz, (size_t)esz) != 0) bad = 1;
  }
  for (blas_int i = 0; i < n && !bad && !quick; ++i)
    for (blas_int j = 0; j < n && !bad; ++j) {
      if (!(uplo == 'U' ? i <= j : i >= j)) continue;
      long double complex acc = 0;
      long double mag = 0;
      for (blas_int l = 0; l < k && alpha != 0; ++l) {
        /* op(A)(i, l) op(A)(j, l) (conjugated second factor for herk) */
        long double complex x = an ? A[AT(i, l, lda)] : A[AT(l, i, lda)], y = an ? A[AT(j, l, lda)] : A[AT(l, j, lda)];
        if (trans == 'C' && cplx) { x = conjl(x); y = conjl(y); }
        if (herm) y = conjl(y);
        acc += x * y;
        mag += cabsl(x) * cabsl(y);
      }
      long double complex c0v = C0[AT(i, j, ldc)];
      if (herm && i == j) c0v = creall(c0v);
      const long double complex want = alpha * acc + (beta != 0 ? beta * c0v : 0);
      const long double scale = fabsl((long double)alpha) * mag + (beta != 0 ? fabsl((long double)beta) * cabsl(c0v) : 0);
      long double complex got;
      GET(c, AT(i, j, ldc), got);
      if (!(cabsl(got - want) <= (cplx ? 8 : 4) * (k + 2) * eps * scale + 1e-30L)) bad = 2;
      if (herm && i == j && cimagl(got) != 0) bad = 3;
    }
  if (bad) {
    ++failures;
    printf("FAIL (%d): %s %s uplo=%c trans=%c n=%ld k=%ld alpha=%g beta=%g\n", bad, names[routine],
           row_major ? "RowMajor" : "ColMajor", uplo, trans, (long)n, (long)k, alpha, beta);
  }
  free(A); free(C0); free(a); free(c); free(c0);
}

/* ---- invalid calls: the program's own handlers record what they were told. alpha and beta
   are null pointers where they come by address: reference BLAS reads neither before the
   checks pass (the valid calls above have published the fast path where it runs). ---- */
static char last_name[16];
static int last_info = 0;
void xerbla_(const char* srname, const blas_int* info, size_t len) {
  size_t m = len < 15 ? len : 15;
  memcpy(last_name, srname, m);
  last_name[m] = 0;
  while (m > 0 && last_name[m - 1] == ' ') last_name[--m] = 0;
  last_info = (int)*info;
}
void cblas_xerbla(blas_int p, const char* rout, const char* form, ...) {
  (void)form;
  snprintf(last_name, sizeof last_name, "%s", rout);
  last_info = (int)p;
}
static void expect_error(const char* what, const char* name, int info, double c00, double c_after) {
  ++cases;
  if (strcmp(last_name, name) != 0 || last_info != info || c_after != c00) {
    ++failures;
    printf("FAIL: %s: handler saw %s %d (want %s %d), C(0,0) %g -> %g\n", what, last_name, last_info, name, info,
           c00, c_after);
  }
  last_name[0] = 0;
  last_info = 0;
}

int main(void) {
  srand(14);
  const blas_int ns[] = {0, 1, 7, 33}, ks[] = {0, 1, 300, 2100};
  const double scalars[] = {0, 1, -1, 0.7};
  int pick = 0;
  for (int routine = 0; routine < 9; ++routine)
    for (int layout = 0; layout < (routine >= 6 ? 2 : 1); ++layout)
      for (int ni = 0; ni < 4; ++ni)
        for (int ki = 0; ki < 4; ++ki)
          for (int ui = 0; ui < 2; ++ui) {
            const int herm = routine == 4 || routine == 5 || routine == 8;
            const int cplx = routine == 2 || routine == 3 || routine == 7 || herm;
            const char* letters = herm ? "NC" : cplx ? "NT" : "NTC";
            for (const char* t = letters; *t; ++t, ++pick)
              one(routine, layout, "UL"[ui], *t, ns[ni], ks[ki], scalars[pick % 4], scalars[(pick / 4 + ni) % 4]);
          }
  double A[64] = {0}, C[64] = {0};
  blas_int n = 3, k = 5, lda = 4, ldc = 3, bad_n = -1;
  const double one_ = 1, zero = 0;
  C[0] = 42;
  dsyrk_("X", "N", &n, &k, NULL, A, &lda, NULL, C, &ldc, 1, 1);
  expect_error("dsyrk_ uplo", "DSYRK", 1, 42, C[0]);
  dsyrk_("U", "T", &n, &k, &one_, A, &lda, &zero, C, &ldc, 1, 1); /* lda 4 < k 5 */
  expect_error("dsyrk_ lda", "DSYRK", 7, 42, C[0]);
  zherk_("L", "T", &n, &k, &one_, A, &lda, &zero, C, &ldc, 1, 1);
  expect_error("zherk_ trans", "ZHERK", 2, 42, C[0]);
  csyrk_("L", "C", &n, &k, NULL, A, &lda, NULL, C, &ldc, 1, 1);
  expect_error("csyrk_ trans", "CSYRK", 2, 42, C[0]);
  ssyrk_("L", "N", &bad_n, &k, (float*)&one_, (float*)A, &lda, (float*)&zero, (float*)C, &ldc, 1, 1);
  expect_error("ssyrk_ n", "SSYRK", 3, 42, C[0]);
  blas_int ldc_bad = 2;
  cherk_("U", "N", &n, &k, (float*)&one_, A, &lda, (float*)&zero, C, &ldc_bad, 1, 1);
  expect_error("cherk_ ldc", "CHERK", 10, 42, C[0]);
  cblas_dsyrk(99, Upper, NoTrans, n, k, 1, A, lda, 0, C, ldc);
  expect_error("cblas_dsyrk layout", "cblas_dsyrk", 1, 42, C[0]);
  cblas_dsyrk(RowMajor, 7, NoTrans, n, k, 1, A, lda, 0, C, ldc);
  expect_error("cblas_dsyrk uplo", "cblas_dsyrk", 2, 42, C[0]);
  cblas_dsyrk(RowMajor, Upper, NoTrans, n, k, 1, A, lda, 0, C, ldc); /* row-major 'N': lda 4 < k 5 */
  expect_error("cblas_dsyrk row-major lda", "cblas_dsyrk", 8, 42, C[0]);
  cblas_zherk(ColMajor, Lower, Trans, n, k, 1, A, lda, 0, C, ldc);
  expect_error("cblas_zherk trans", "cblas_zherk", 3, 42, C[0]);
  cblas_zsyrk(ColMajor, Lower, NoTrans, n, -2, NULL, A, lda, NULL, C, ldc);
  expect_error("cblas_zsyrk k", "cblas_zsyrk", 5, 42, C[0]);
  cblas_zherk(RowMajor, Lower, NoTrans, n, k, 1, A, k, 0, C, 2); /* lda = k is fine row-major */
  expect_error("cblas_zherk ldc", "cblas_zherk", 11, 42, C[0]);
  /* n = 0: alpha and beta are never read (null is valid), as reference BLAS. */
  {
    const blas_int zero = 0;
    C[0] = 42;
    dsyrk_("U", "N", &zero, &k, NULL, A, &lda, NULL, C, &ldc, 1, 1);
    zherk_("L", "N", &zero, &k, NULL, A, &lda, NULL, C, &ldc, 1, 1);
    cblas_zsyrk(ColMajor, Lower, NoTrans, 0, k, NULL, A, lda, NULL, C, ldc);
    ++cases;
    if (C[0] != 42) ++failures, printf("FAIL: n = 0 with null alpha and beta changed C\n");
  }
  /* herk's diagonal is real (Im exactly 0), beta Re C(j, j) a real product, as reference
     ?herk's: an infinite or NaN beta, or an infinite diagonal, gives no NaN imaginary part,
     with alpha = 0, k = 0, and through the product. */
  {
    const double inf = INFINITY, betas[] = {INFINITY, NAN, 2}, alphas[] = {0, 1};
    const blas_int ks[] = {0, 2};
    for (int b = 0; b < 3; ++b)
      for (int a = 0; a < 2; ++a)
        for (int kk = 0; kk < 2; ++kk) {
          double z[2 * 4] = {3, 5, 0, 0, 0, 0, 0, 0}, x[2 * 4] = {1, 1, 1, 1, 0, 0, 0, 0};
          if (b == 2) z[0] = inf;  /* Re C(0, 0) infinite, beta finite */
          const blas_int one_n = 1, lda1 = 1, ldc1 = 1;
          zherk_("U", "N", &one_n, &ks[kk], &alphas[a], x, &lda1, &betas[b], z, &ldc1, 1, 1);
          ++cases;
          if (z[1] != 0 || !(isinf(z[0]) || isnan(z[0])))
            ++failures, printf("FAIL: zherk_ beta %g alpha %g k %d: C(0,0) = (%g, %g), want a real Inf or NaN\n",
                               betas[b], alphas[a], (int)ks[kk], z[0], z[1]);
        }
  }
  printf("check_syrk (%s): %d cases, %d failures\n", sizeof(blas_int) == 8 ? "ILP64" : "LP64", cases, failures);
  return failures != 0;
}
