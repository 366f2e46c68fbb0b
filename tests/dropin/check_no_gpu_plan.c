/* tests/dropin/check_no_gpu_plan.c — a call PRISM_BLAS_ROUTE=gpu sends to a device that no
 * GPU plan fits (C of 12000 x 12000 doubles, 1.15 GB, on an emulated device of 1 MiB: no C
 * block the planner weighs fits it) runs on the host: C = A B with k = 1, small integers, so
 * every element is exact; C starts as NaN with beta = 0. Prints "check_no_gpu_plan: C exact"
 * and exits 0, or names the first wrong element and exits 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*, const int*,
            const double*, const int*, const double*, double*, const int*, size_t, size_t);

int main(void) {
  const int m = 12000, n = 12000, k = 1;
  double *A = malloc(sizeof(double) * m), *B = malloc(sizeof(double) * n), *C = malloc(sizeof(double) * (size_t)m * n);
  if (!A || !B || !C) return 2;
  for (int i = 0; i < m; ++i) A[i] = (double)(i % 7 - 3);
  for (int j = 0; j < n; ++j) B[j] = (double)(j % 5 - 2);
  for (size_t x = 0; x < (size_t)m * n; ++x) C[x] = NAN;
  const double one = 1, zero = 0;
  dgemm_("N", "N", &m, &n, &k, &one, A, &m, B, &k, &zero, C, &m, 1, 1);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i)
      if (C[i + (size_t)j * m] != A[i] * B[j]) {
        printf("check_no_gpu_plan: C(%d, %d) = %g, not %g\n", i, j, C[i + (size_t)j * m], A[i] * B[j]);
        return 1;
      }
  printf("check_no_gpu_plan: C exact\n");
  free(A), free(B), free(C);
  return 0;
}
