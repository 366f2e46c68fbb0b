/* tests/dropin/check_dlclose.c — a host that loads a BLAS as a plugin (dlopen), runs one
 * dgemm_ large enough for prism's recursion (its thread pool), and dlcloses it, three times:
 * the process must carry on and each result be exact (C = A B of ones: k everywhere). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef void (*dgemm_fn)(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
                         const int*, const double*, const int*, const double*, double*, const int*, size_t, size_t);

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const int m = 16, n = 16, k = 65536;
  const double one = 1, zero = 0;
  double* A = malloc(sizeof(double) * m * k);
  double* B = malloc(sizeof(double) * k * n);
  double* C = malloc(sizeof(double) * m * n);
  for (int i = 0; i < m * k; ++i) A[i] = 1;
  for (int i = 0; i < k * n; ++i) B[i] = 1;
  for (int round = 0; round < 3; ++round) {
    void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      printf("dlopen: %s\n", dlerror());
      return 1;
    }
    dgemm_fn dgemm = (dgemm_fn)dlsym(lib, "dgemm_");
    dgemm("N", "N", &m, &n, &k, &one, A, &m, B, &k, &zero, C, &m, 1, 1);
    for (int i = 0; i < m * n; ++i)
      if (C[i] != k) {
        printf("round %d: C[%d] = %g, not %d\n", round, i, C[i], k);
        return 1;
      }
    dlclose(lib);
    usleep(200000); /* the pool's workers run on after the call */
  }
  printf("check_dlclose: 3 rounds of dlopen, dgemm_, dlclose\n");
  free(A), free(B), free(C);
  return 0;
}
