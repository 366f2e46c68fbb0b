/* tests/dropin/check_beta_nan.c — a NaN or infinite beta reaches C as reference BLAS forms
   it (beta C first), on whichever path a small call takes: the first calls decide their
   route in full, the later ones take the fast path. A backend may take a NaN beta as 0
   (OpenBLAS 0.3.21's small ?syrk / ?herk do), so such calls must not go to it under
   automatic routing. C is all ones: with beta = NaN every element of the referenced part
   becomes NaN, with beta = +Inf +Inf (the products are finite); the other triangle of a
   rank-k update keeps its ones, a herk diagonal's imaginary part is 0. Prints
   "check_beta_nan: N cases, F failures" and exits non-zero on any failure. */
#include <complex.h>
#include <math.h>
#include <stdio.h>

#include "blas_abi.h"

enum { Upper = 121 };
enum { N = 4, K = 3 };
static int cases = 0, failures = 0;

/* Whether element value v is what beta (NaN or +Inf) makes of a one plus a finite sum. */
static int as_beta_makes(double v, double beta) { return isnan(beta) ? isnan(v) : v == INFINITY; }

static void expect(const char* what, int call, int ok) {
  ++cases;
  if (!ok) {
    ++failures;
    printf("FAIL: %s (call %d)\n", what, call);
  }
}

/* The real upper triangle (column-major N x N) as beta makes it, the rest ones. */
static int real_upper(const double* c, double beta) {
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < N; ++i)
      if (i <= j ? !as_beta_makes(c[i + j * N], beta) : c[i + j * N] != 1) return 0;
  return 1;
}

/* The same of a complex C's real parts; herk: the diagonal's imaginary parts 0. */
static int complex_upper(const double complex* c, double beta, int herk) {
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < N; ++i) {
      const double complex v = c[i + j * N];
      if (i <= j ? !as_beta_makes(creal(v), beta) || (herk && i == j && cimag(v) != 0) : v != 1) return 0;
    }
  return 1;
}

int main(void) {
  const blas_int n = N, k = K;
  double A[N * K];
  float As[N * K];
  double complex Az[N * K];
  float complex Ac[N * K];
  for (int i = 0; i < N * K; ++i) A[i] = As[i] = (double)(i % 3) - 1, Az[i] = Ac[i] = A[i] + I * (double)(i % 2);
  const double betas[2] = {NAN, INFINITY};
  for (int call = 0; call < 4; ++call) /* the first calls route in full, the later ones take the fast path */
    for (int b = 0; b < 2; ++b) {
      const double beta = betas[b], one = 1;
      const float betaf = (float)beta, onef = 1;
      double C[N * N], G[N * N], R[N * N];
      float Cs[N * N];
      double complex Cz[N * N];
      float complex Cc[N * N];
      for (int e = 0; e < N * N; ++e) C[e] = G[e] = R[e] = Cs[e] = 1, Cz[e] = Cc[e] = 1;
      dsyrk_("U", "N", &n, &k, &one, A, &n, &beta, C, &n, 1, 1);
      expect("dsyrk_", call, real_upper(C, beta));
      ssyrk_("U", "N", &n, &k, &onef, As, &n, &betaf, Cs, &n, 1, 1);
      for (int e = 0; e < N * N; ++e) C[e] = Cs[e];
      expect("ssyrk_", call, real_upper(C, beta));
      cblas_dsyrk(ColMajor, Upper, NoTrans, n, k, 1.0, A, n, beta, R, n);
      expect("cblas_dsyrk", call, real_upper(R, beta));
      dgemm_("N", "T", &n, &n, &k, &one, A, &n, A, &n, &beta, G, &n, 1, 1);
      int all = 1;
      for (int e = 0; e < N * N; ++e) all = all && as_beta_makes(G[e], beta);
      expect("dgemm_", call, all);
      const double complex zone = 1, zbeta = beta;
      zsyrk_("U", "N", &n, &k, &zone, Az, &n, &zbeta, Cz, &n, 1, 1);
      expect("zsyrk_", call, complex_upper(Cz, beta, 0));
      for (int e = 0; e < N * N; ++e) Cz[e] = 1;
      zherk_("U", "N", &n, &k, &one, Az, &n, &beta, Cz, &n, 1, 1);
      expect("zherk_", call, complex_upper(Cz, beta, 1));
      cherk_("U", "N", &n, &k, &onef, Ac, &n, &betaf, Cc, &n, 1, 1);
      for (int e = 0; e < N * N; ++e) Cz[e] = Cc[e];
      expect("cherk_", call, complex_upper(Cz, beta, 1));
    }
  printf("check_beta_nan: %d cases, %d failures\n", cases, failures);
  return failures == 0 ? 0 : 1;
}
