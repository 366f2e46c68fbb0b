/* tests/dropin/check_gemm.c — a C program linked with -lprism_blas ahead of the system BLAS,
   as a user would link it. For every type (s, d, c, z), every trans pair (N, T, C), both
   APIs (Fortran dgemm_ and CBLAS, row- and column-major), alpha in {1, -0.5(+0.25i), 0},
   beta in {0, 1, 0.75(-0.5i)}, padded leading dimensions and several shapes, it compares
   prism's result with the backend BLAS's (opened here with dlopen, the same library prism
   forwards to) within the componentwise bound
       |C_prism - C_backend| <= 2 * 4 (k + 2) eps (|alpha| (|op(A)| |op(B)|) + |beta| |C0|),
   i.e. each within 4 (k + 2) eps of the exact product. It also checks that beta = 0 never
   reads C (C starts as NaN) and that nothing outside C's m x n block is written.
   Run with PRISM_SMALL_FLOPS=0 so even these small calls go through the recursion; the
   ctest wrapper checks PRISM_STATS to see that they did. Exit status: number of failures
   (capped), 0 when all pass. */
#define _GNU_SOURCE
#include "blas_abi.h"

#include <complex.h>
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*cgemm_fn)(int, int, int, blas_int, blas_int, blas_int, const void*, const void*, blas_int,
                         const void*, blas_int, const void*, void*, blas_int);
typedef void (*cblas_s_fn)(int, int, int, blas_int, blas_int, blas_int, float, const float*, blas_int,
                           const float*, blas_int, float, float*, blas_int);
typedef void (*cblas_d_fn)(int, int, int, blas_int, blas_int, blas_int, double, const double*, blas_int,
                           const double*, blas_int, double, double*, blas_int);

static fgemm_fn backend_f[4];
static void* backend_c[4];
static const char* types = "sdcz";
static const size_t esize[4] = {4, 8, 8, 16};

static void open_backend(void) {
  const char* path = getenv("PRISM_TEST_BACKEND");
  if (path == NULL) path = sizeof(blas_int) == 8 ? "libblas64.so.3" : "libblas.so.3";
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    fprintf(stderr, "check_gemm: cannot open backend %s: %s\n", path, dlerror());
    exit(2);
  }
  const char* f[4] = {"sgemm_", "dgemm_", "cgemm_", "zgemm_"};
  const char* c[4] = {"cblas_sgemm", "cblas_dgemm", "cblas_cgemm", "cblas_zgemm"};
  for (int t = 0; t < 4; ++t) {
    backend_f[t] = (fgemm_fn)dlsym(h, f[t]);
    backend_c[t] = dlsym(h, c[t]);
    Dl_info info;
    if (backend_f[t] == NULL || backend_c[t] == NULL || dladdr((void*)backend_f[t], &info) == 0 ||
        strstr(info.dli_fname, "prism_blas") != NULL) {
      fprintf(stderr, "check_gemm: backend %s lacks %s/%s or is prism itself\n", path, f[t], c[t]);
      exit(2);
    }
  }
  /* and prism's own symbols must come from libprism_blas */
  Dl_info mine;
  if (dladdr((void*)&dgemm_, &mine) == 0 || strstr(mine.dli_fname, "prism_blas") == NULL) {
    fprintf(stderr, "check_gemm: dgemm_ does not resolve to libprism_blas (link order?)\n");
    exit(2);
  }
}

/* Element i of a typed buffer as a double complex, and back. */
static double complex get(int t, const void* p, size_t i) {
  switch (t) {
    case 0: return ((const float*)p)[i];
    case 1: return ((const double*)p)[i];
    case 2: return ((const float complex*)p)[i];
    default: return ((const double complex*)p)[i];
  }
}
static void set(int t, void* p, size_t i, double complex v) {
  switch (t) {
    case 0: ((float*)p)[i] = (float)creal(v); break;
    case 1: ((double*)p)[i] = creal(v); break;
    case 2: ((float complex*)p)[i] = (float complex)v; break;
    default: ((double complex*)p)[i] = v; break;
  }
}

static unsigned long long rng = 88172645463325252ull;
static double uniform(void) { /* xorshift64, in [-1, 1) */
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}

/* op(X)(i, l) of a matrix stored column-major (row_major = 0) or row-major. */
static double complex op_at(int t, const void* X, blas_int ld, char tr, int row_major, blas_int i, blas_int l) {
  blas_int r = i, c = l;
  if (tr != 'N') { r = l; c = i; }
  size_t idx = row_major ? (size_t)r * ld + c : (size_t)c * ld + r;
  double complex v = get(t, X, idx);
  return tr == 'C' ? conj(v) : v;
}

static long cases = 0, failures = 0;

/* api: 0 Fortran, 1 CBLAS column-major, 2 CBLAS row-major. */
static void run_case(int t, int api, char ta, char tb, blas_int m, blas_int n, blas_int k, double complex alpha,
                     double complex beta) {
  const int row = api == 2;
  const blas_int ar = ta == 'N' ? m : k, ac = ta == 'N' ? k : m;  /* stored A: ar x ac */
  const blas_int br = tb == 'N' ? k : n, bc = tb == 'N' ? n : k;
  const blas_int lda = (row ? ac : ar) + 3, ldb = (row ? bc : br) + 2, ldc = (row ? n : m) + 1;
  const size_t na = (size_t)lda * (row ? ar : ac), nb = (size_t)ldb * (row ? br : bc),
               nc = (size_t)ldc * (row ? m : n);
  void* A = malloc(na * esize[t] + 16); void* B = malloc(nb * esize[t] + 16);
  void* C0 = malloc(nc * esize[t] + 16); void* Cp = malloc(nc * esize[t] + 16); void* Cb = malloc(nc * esize[t] + 16);
  const int cplx = t >= 2;
  for (size_t i = 0; i < na; ++i) set(t, A, i, uniform() + (cplx ? I * uniform() : 0));
  for (size_t i = 0; i < nb; ++i) set(t, B, i, uniform() + (cplx ? I * uniform() : 0));
  for (size_t i = 0; i < nc; ++i) set(t, C0, i, beta == 0 ? NAN : uniform() + (cplx ? I * uniform() : 0));
  memcpy(Cp, C0, nc * esize[t]); memcpy(Cb, C0, nc * esize[t]);

  /* alpha, beta in the call's own type */
  unsigned char al[16], be[16];
  set(t, al, 0, alpha); set(t, be, 0, beta);
  const int cta = ta == 'N' ? NoTrans : ta == 'T' ? Trans : ConjTrans, ctb = tb == 'N' ? NoTrans : tb == 'T' ? Trans : ConjTrans;
  const int lay = row ? RowMajor : ColMajor;
  if (api == 0) {
    fgemm_fn mine[4] = {(fgemm_fn)sgemm_, (fgemm_fn)dgemm_, (fgemm_fn)cgemm_, (fgemm_fn)zgemm_};
    mine[t](&ta, &tb, &m, &n, &k, al, A, &lda, B, &ldb, be, Cp, &ldc, 1, 1);
    backend_f[t](&ta, &tb, &m, &n, &k, al, A, &lda, B, &ldb, be, Cb, &ldc, 1, 1);
  } else if (t == 0) {
    float a = *(float*)al, b = *(float*)be;
    cblas_sgemm(lay, cta, ctb, m, n, k, a, A, lda, B, ldb, b, Cp, ldc);
    ((cblas_s_fn)backend_c[0])(lay, cta, ctb, m, n, k, a, A, lda, B, ldb, b, Cb, ldc);
  } else if (t == 1) {
    double a = *(double*)al, b = *(double*)be;
    cblas_dgemm(lay, cta, ctb, m, n, k, a, A, lda, B, ldb, b, Cp, ldc);
    ((cblas_d_fn)backend_c[1])(lay, cta, ctb, m, n, k, a, A, lda, B, ldb, b, Cb, ldc);
  } else {
    cgemm_fn mine = t == 2 ? (cgemm_fn)cblas_cgemm : (cgemm_fn)cblas_zgemm;
    mine(lay, cta, ctb, m, n, k, al, A, lda, B, ldb, be, Cp, ldc);
    ((cgemm_fn)backend_c[t])(lay, cta, ctb, m, n, k, al, A, lda, B, ldb, be, Cb, ldc);
  }

  const double eps = t == 0 || t == 2 ? FLT_EPSILON : DBL_EPSILON;
  const double complex a_used = get(t, al, 0), b_used = get(t, be, 0);
  int bad = 0;
  for (blas_int i = 0; i < (row ? m : ldc) && !bad; ++i)
    for (blas_int j = 0; j < (row ? ldc : n) && !bad; ++j) {
      const size_t idx = row ? (size_t)i * ldc + j : (size_t)j * ldc + i;
      const blas_int ci = i, cj = j;
      const int inside = ci < m && cj < n;
      const double complex p = get(t, Cp, idx), b = get(t, Cb, idx), c0 = get(t, C0, idx);
      if (!inside) { /* padding: untouched, bit for bit */
        if (memcmp((char*)Cp + idx * esize[t], (char*)C0 + idx * esize[t], esize[t]) != 0) bad = 1;
        continue;
      }
      double ab = 0;
      for (blas_int l = 0; l < k; ++l)
        ab += cabs(op_at(t, A, lda, ta, row, ci, l)) * cabs(op_at(t, B, ldb, tb, row, l, cj));
      const double bound = 2 * 4.0 * (k + 2) * eps * (cabs(a_used) * ab + (b_used == 0 ? 0 : cabs(b_used) * cabs(c0)));
      if (!(cabs(p - b) <= bound) || isnan(creal(p)) || isnan(cimag(p))) bad = 1;
    }
  ++cases;
  if (bad) {
    ++failures;
    if (failures <= 20)
      fprintf(stderr, "FAIL %cgemm api=%s trans=%c%c m=%lld n=%lld k=%lld alpha=%g%+gi beta=%g%+gi\n", types[t],
              api == 0 ? "fortran" : api == 1 ? "cblas-col" : "cblas-row", ta, tb, (long long)m, (long long)n,
              (long long)k, creal(alpha), cimag(alpha), creal(beta), cimag(beta));
  }
  free(A); free(B); free(C0); free(Cp); free(Cb);
}

int main(void) {
  open_backend();
  /* k-dominant shapes take the recursion under the auto rule (with PRISM_SMALL_FLOPS=0);
     the last two are not k-dominant and go to the backend unless PRISM_BLAS_ROUTE=prism. */
  const blas_int shapes[][3] = {{7, 5, 61}, {1, 9, 40}, {16, 3, 200}, {33, 17, 100}, {1, 1, 7},
                                {20, 30, 8}, {0, 4, 9}, {5, 6, 0}};
  const char tr[3] = {'N', 'T', 'C'};
  for (int t = 0; t < 4; ++t) {
    const double complex alphas[3] = {1.0, t >= 2 ? -0.5 + 0.25 * I : -0.5, 0.0};
    const double complex betas[3] = {0.0, 1.0, t >= 2 ? 0.75 - 0.5 * I : 0.75};
    for (int api = 0; api < 3; ++api)
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
          for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
            for (int x = 0; x < 3; ++x)
              for (int y = 0; y < 3; ++y)
                run_case(t, api, tr[a], tr[b], shapes[s][0], shapes[s][1], shapes[s][2], alphas[x], betas[y]);
  }
  /* m = 0 or n = 0: reference BLAS returns before reading alpha and beta, so null ones are
     valid there (a crash here fails the test). */
  {
    const blas_int zero = 0, four = 4;
    double c = 42;
    for (int which = 0; which < 2; ++which) {
      const blas_int* m = which ? &four : &zero;
      const blas_int* n = which ? &zero : &four;
      dgemm_("N", "N", m, n, &four, NULL, &c, &four, &c, &four, NULL, &c, &four, 1, 1);
      zgemm_("T", "C", m, n, &four, NULL, &c, &four, &c, &four, NULL, &c, &four, 1, 1);
      cblas_zgemm(102, 111, 111, *m, *n, 4, NULL, &c, 4, &c, 4, NULL, &c, 4);
      cblas_cgemm(101, 112, 111, *m, *n, 4, NULL, &c, 4, &c, 4, NULL, &c, 4);
      ++cases;
      if (c != 42) ++failures, printf("FAIL: a quick return with null alpha and beta changed C\n");
    }
  }
  printf("check_gemm (%s): %ld cases, %ld failures\n", sizeof(blas_int) == 8 ? "ILP64" : "LP64", cases, failures);
  return failures > 100 ? 100 : (int)failures;
}
