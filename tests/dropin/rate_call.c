/* tests/dropin/rate_call.c — a square and a wide dgemm, the calls the drop-in's rate model
   decides (they are not k-dominant and above its flop floor), checked exactly: the inputs
   are small integers, so any order of summation gives the same double. The ctest entry
   checks that PRISM_VERBOSE says which side took each call and why, with the probe's
   numbers; which side wins depends on this machine's speeds and is not asserted. */
#include "blas_abi.h"

#include <stdio.h>
#include <stdlib.h>

static int check(blas_int m, blas_int n, blas_int k, const double* C, double c0) {
  for (blas_int j = 0; j < n; ++j)
    for (blas_int i = 0; i < m; ++i) {
      double want = c0;
      for (blas_int l = 0; l < k; ++l) want += (double)((i + l) % 3 - 1) * (double)((l + 2 * j) % 5 - 2);
      if (C[i + (size_t)j * m] != want) {
        fprintf(stderr, "rate_call: %dx%dx%d C(%d,%d) = %g, expected %g\n", (int)m, (int)n, (int)k, (int)i, (int)j,
                C[i + (size_t)j * m], want);
        return 1;
      }
    }
  return 0;
}

static int one(blas_int m, blas_int n, blas_int k, int fortran) {
  double* A = malloc(sizeof(double) * (size_t)m * k);
  double* B = malloc(sizeof(double) * (size_t)k * n);
  double* C = malloc(sizeof(double) * (size_t)m * n);
  for (blas_int l = 0; l < k; ++l)
    for (blas_int i = 0; i < m; ++i) A[i + (size_t)l * m] = (double)((i + l) % 3 - 1);
  for (blas_int j = 0; j < n; ++j)
    for (blas_int l = 0; l < k; ++l) B[l + (size_t)j * k] = (double)((l + 2 * j) % 5 - 2);
  for (size_t i = 0; i < (size_t)m * n; ++i) C[i] = 2.0;
  const double alpha = 1.0, beta = 1.0;
  if (fortran) {
    const char N = 'N';
    dgemm_(&N, &N, &m, &n, &k, &alpha, A, &m, B, &k, &beta, C, &m, 1, 1);
  } else {
    cblas_dgemm(ColMajor, NoTrans, NoTrans, m, n, k, alpha, A, m, B, k, beta, C, m);
  }
  const int bad = check(m, n, k, C, 2.0);
  free(A);
  free(B);
  free(C);
  return bad;
}

int main(void) {
  int bad = one(512, 512, 512, 0) + one(768, 640, 96, 1);
  printf("rate_call: %s\n", bad ? "FAILED" : "ok");
  return bad;
}
