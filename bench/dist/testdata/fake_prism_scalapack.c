/* TEST FIXTURE, NOT prism: stands in for libprism_scalapack.so so that the pdgemm part of
 * scripts/bench-dist.sh and bench/dist/report.py can be exercised before the real library
 * exists. Its pdgemm_ calls the real one (dlsym RTLD_NEXT) and, under PRISM_STATS=1, grid
 * rank (0, 0) prints a made-up line in the real library's format, with fixture=1 so the
 * report marks the run as a fixture:
 *
 *   mpicc -shared -fPIC -O2 -o /tmp/fake_prism_scalapack.so \
 *     bench/dist/testdata/fake_prism_scalapack.c -ldl
 *   bash scripts/bench-dist.sh --quick --pdgemm-only --no-build \
 *     --prism-scalapack /tmp/fake_prism_scalapack.so
 *
 * PRISM_SCALAPACK_ROUTE=auto "takes" the prism route when m n k >= 2^28, else backend.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void Cblacs_gridinfo(int icontxt, int* nprow, int* npcol, int* myrow, int* mycol);

typedef void (*pdgemm_fn)(const char*, const char*, const int*, const int*, const int*, const double*,
                          const double*, const int*, const int*, const int*, const double*, const int*,
                          const int*, const int*, const double*, double*, const int*, const int*, const int*);

/* The fixture's pdgemm_: the real one, timed, plus a made-up PRISM_STATS line. */
void pdgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const double* alpha,
             const double* a, const int* ia, const int* ja, const int* desca, const double* b, const int* ib,
             const int* jb, const int* descb, const double* beta, double* c, const int* ic, const int* jc,
             const int* descc) {
  static pdgemm_fn real = NULL;
  if (real == NULL) real = (pdgemm_fn)dlsym(RTLD_NEXT, "pdgemm_");
  if (real == NULL) {
    fprintf(stderr, "fake_prism_scalapack: no real pdgemm_ behind me\n");
    abort();
  }
  const double t0 = MPI_Wtime();
  real(ta, tb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc, descc);
  const double t = MPI_Wtime() - t0;
  const char* stats = getenv("PRISM_STATS");
  if (stats == NULL || strcmp(stats, "1") != 0) return;
  int pr = 1, pc = 1, r = 0, q = 0;
  Cblacs_gridinfo(descc[1], &pr, &pc, &r, &q);
  if (r != 0 || q != 0) return;
  const char* route = getenv("PRISM_SCALAPACK_ROUTE");
  const double mnk = (double)*m * (double)*n * (double)*k;
  if (route != NULL && strcmp(route, "auto") == 0 && mnk < 268435456.0) {
    fprintf(stderr, "prism-scalapack: route=backend reason=\"fixture: below 2^28\" fixture=1\n");
    return;
  }
  const int np = pr * pc;
  const double mb = 8e-6 * ((double)*m * *k + (double)*k * *n) / np; /* made up */
  fprintf(stderr,
          "prism-scalapack: route=prism recv_max_MB=%.6g recv_mean_MB=%.6g pred_max_MB=%.6g "
          "scalapack_model_MB=%.6g seconds=%.6g plan=\"fake %dx%d (ScaLAPACK underneath)\" fixture=1\n",
          0.8 * mb, 0.7 * mb, 0.8 * mb, 1.1 * mb, t, pr, pc);
}
