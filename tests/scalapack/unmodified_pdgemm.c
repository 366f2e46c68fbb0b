/* tests/scalapack/unmodified_pdgemm.c — an ordinary ScaLAPACK program: MPI, BLACS and
 * pdgemm_, linked only against MPI and Debian's ScaLAPACK (never prism). preload_test.sh
 * runs it plainly and with LD_PRELOAD=libprism_scalapack.so and compares what it writes.
 *
 *   mpiexec -n 4 unmodified_pdgemm DUMP
 *
 * On a 2 x 2 grid (row-major) with 32 x 32 blocks it makes a few pdgemm_ calls on
 * submatrices with offsets (every trans pair, beta = 0 over NaN in sub(C), alpha = 0),
 * gathers all of C (inside and outside the submatrix) on rank 0 after each and writes it as
 * text to DUMP. Every value is a small integer (A, B in [-3, 3], C in [-5, 5], alpha and beta
 * in {-1, 0, 1, 2, 3}, k <= 96), so every partial sum is an integer below 2^53 and is exact
 * in any order: two correct implementations write identical files. Rank 0 also checks C
 * against a serial loop (exactly, outside elements included) and exits 1 on a mismatch.
 * stdout names the library that provided pdgemm_ (dladdr), for the driver script. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* BLACS and ScaLAPACK (no headers are installed for them). */
void Cblacs_pinfo(int *mypnum, int *nprocs);
void Cblacs_get(int icontxt, int what, int *val);
void Cblacs_gridinit(int *icontxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int icontxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int icontxt);
void Cblacs_exit(int notdone);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb, const int *irsrc,
               const int *icsrc, const int *ictxt, const int *lld, int *info);
void pdgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
             const double *alpha, const double *a, const int *ia, const int *ja, const int *desca,
             const double *b, const int *ib, const int *jb, const int *descb, const double *beta,
             double *c, const int *ic, const int *jc, const int *descc);

enum { NB = 32, PR = 2, PC = 2 };

/* One call: sub(C) = alpha op(sub(A)) op(sub(B)) + beta sub(C), 1-based offsets. */
struct call {
  char ta, tb;
  int m, n, k;
  double alpha, beta;
  int ia, ja, ib, jb, ic, jc;
  int nan_sub; /* sub(C) is NaN on entry (beta = 0 must not read it) */
};

static const struct call calls[] = {
    {'N', 'N', 100, 90, 70, 2, -1, 3, 5, 2, 1, 4, 7, 0},
    {'T', 'N', 65, 80, 33, 1, 0, 1, 2, 5, 3, 2, 1, 1},
    {'N', 'T', 47, 64, 96, -1, 1, 34, 33, 1, 40, 33, 2, 0},
    {'T', 'T', 64, 64, 64, 1, 3, 1, 1, 1, 1, 1, 1, 0},
    {'N', 'N', 40, 50, 30, 0, 3, 2, 2, 2, 2, 9, 9, 0},
};

/* Element (i, j) (0-based global) of matrix which (0 A, 1 B, 2 C): a small integer from a
 * hash of (which, i, j), so that A and its transpose, or shifted blocks, differ. */
static double value(int which, int i, int j) {
  unsigned h = (unsigned)i * 73856093u ^ (unsigned)j * 19349663u ^ (unsigned)which * 83492791u;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return which == 2 ? (double)(int)(h % 11) - 5 : (double)(int)(h % 7) - 3;
}

/* Global index (0-based) of local index l, blocks of nb over np processes, source 0.
 * Example: nb = 32, np = 2, process 1: local 0..31 are global 32..63, local 32 is 96. */
static int l2g(int l, int nb, int p, int np) { return (l / nb * np + p) * nb + l % nb; }

/* This process's part of a global M x N matrix: descriptor, local sizes and array. */
struct local {
  int desc[9], locr, locc, lld;
  double *v;
};

/* Makes x (M x N, NB x NB blocks, source (0, 0)) and fills it: value(which) everywhere, or
 * NaN inside the r x c submatrix at 1-based (i, j) when nan_sub. */
static void make(struct local *x, int ctxt, int myrow, int mycol, int M, int N, int which, int nan_sub, int i0,
                 int j0, int r, int c) {
  const int nb = NB, zero = 0, pr = PR, pc = PC;
  int info, li, lj;
  x->locr = numroc_(&M, &nb, &myrow, &zero, &pr);
  x->locc = numroc_(&N, &nb, &mycol, &zero, &pc);
  x->lld = x->locr > 1 ? x->locr : 1;
  descinit_(x->desc, &M, &N, &nb, &nb, &zero, &zero, &ctxt, &x->lld, &info);
  if (info != 0) {
    fprintf(stderr, "unmodified_pdgemm: descinit_ info %d\n", info);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  x->v = malloc(sizeof(double) * (size_t)x->lld * (size_t)(x->locc > 1 ? x->locc : 1));
  for (lj = 0; lj < x->locc; ++lj)
    for (li = 0; li < x->locr; ++li) {
      const int gi = l2g(li, NB, myrow, PR), gj = l2g(lj, NB, mycol, PC);
      const int inside = gi >= i0 - 1 && gi < i0 - 1 + r && gj >= j0 - 1 && gj < j0 - 1 + c;
      x->v[(size_t)lj * x->lld + li] = nan_sub && inside ? NAN : value(which, gi, gj);
    }
}

/* Rank 0 gets all of x (M x N, column-major) in full; the other ranks send their part. */
static void gather(const struct local *x, int myrow, int mycol, int M, int N, double *full, int rank) {
  int head[4] = {myrow, mycol, x->locr, x->locc}, heads[4 * PR * PC], counts[PR * PC], displs[PR * PC];
  int p, li, lj, total = 0;
  double *packed = malloc(sizeof(double) * (size_t)(x->locr * x->locc + 1)), *all = NULL;
  for (lj = 0; lj < x->locc; ++lj)
    for (li = 0; li < x->locr; ++li) packed[(size_t)lj * x->locr + li] = x->v[(size_t)lj * x->lld + li];
  MPI_Gather(head, 4, MPI_INT, heads, 4, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    for (p = 0; p < PR * PC; ++p) {
      counts[p] = heads[4 * p + 2] * heads[4 * p + 3];
      displs[p] = total;
      total += counts[p];
    }
    all = malloc(sizeof(double) * (size_t)(total + 1));
  }
  MPI_Gatherv(packed, x->locr * x->locc, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    for (p = 0; p < PR * PC; ++p)
      for (lj = 0; lj < heads[4 * p + 3]; ++lj)
        for (li = 0; li < heads[4 * p + 2]; ++li)
          full[(size_t)l2g(lj, NB, heads[4 * p + 1], PC) * M + l2g(li, NB, heads[4 * p], PR)] =
              all[displs[p] + (size_t)lj * heads[4 * p + 2] + li];
    free(all);
  }
  (void)N;
  free(packed);
}

int main(int argc, char **argv) {
  int rank, np, ctxt, nprow, npcol, myrow, mycol, bad = 0;
  size_t t;
  FILE *dump = NULL;
  Dl_info where;
  MPI_Init(&argc, &argv);
  Cblacs_pinfo(&rank, &np);
  if (np != PR * PC || argc != 2) {
    if (rank == 0) fprintf(stderr, "usage: mpiexec -n 4 unmodified_pdgemm DUMP (got %d processes)\n", np);
    MPI_Finalize();
    return 2;
  }
  Cblacs_get(-1, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "Row", PR, PC);
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  if (rank == 0 && (dump = fopen(argv[1], "w")) == NULL) {
    perror(argv[1]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (t = 0; t < sizeof calls / sizeof calls[0]; ++t) {
    const struct call *c = &calls[t];
    /* A is m x k (N) or k x m (T) at (ia, ja); B is k x n or n x k; C is m x n; the global
     * matrices have a few rows and columns beyond the submatrix. */
    const int ar = c->ta == 'N' ? c->m : c->k, ac = c->ta == 'N' ? c->k : c->m;
    const int br = c->tb == 'N' ? c->k : c->n, bc = c->tb == 'N' ? c->n : c->k;
    const int MA = c->ia - 1 + ar + 3, NA = c->ja - 1 + ac + 2, MB = c->ib - 1 + br + 1, NB_ = c->jb - 1 + bc + 4;
    const int MC = c->ic - 1 + c->m + 5, NC = c->jc - 1 + c->n + 3;
    struct local A, B, C;
    double *full = rank == 0 ? malloc(sizeof(double) * (size_t)MC * NC) : NULL;
    int i, j, l;
    make(&A, ctxt, myrow, mycol, MA, NA, 0, 0, 0, 0, 0, 0);
    make(&B, ctxt, myrow, mycol, MB, NB_, 1, 0, 0, 0, 0, 0);
    make(&C, ctxt, myrow, mycol, MC, NC, 2, c->nan_sub, c->ic, c->jc, c->m, c->n);
    pdgemm_(&c->ta, &c->tb, &c->m, &c->n, &c->k, &c->alpha, A.v, &c->ia, &c->ja, A.desc, B.v, &c->ib, &c->jb,
            B.desc, &c->beta, C.v, &c->ic, &c->jc, C.desc);
    gather(&C, myrow, mycol, MC, NC, full, rank);
    if (rank == 0) {
      fprintf(dump, "call %zu %c%c m=%d n=%d k=%d alpha=%g beta=%g A(%d,%d) B(%d,%d) C(%d,%d) C is %dx%d\n", t + 1,
              c->ta, c->tb, c->m, c->n, c->k, c->alpha, c->beta, c->ia, c->ja, c->ib, c->jb, c->ic, c->jc, MC, NC);
      for (i = 0; i < MC; ++i) {
        for (j = 0; j < NC; ++j) {
          /* Expected: the serial product inside sub(C), C's old value outside. */
          const int r = i - (c->ic - 1), s = j - (c->jc - 1);
          double want = value(2, i, j);
          if (r >= 0 && r < c->m && s >= 0 && s < c->n) {
            double sum = 0;
            for (l = 0; l < c->k; ++l) {
              const double a = c->ta == 'N' ? value(0, c->ia - 1 + r, c->ja - 1 + l) : value(0, c->ia - 1 + l, c->ja - 1 + r);
              const double b = c->tb == 'N' ? value(1, c->ib - 1 + l, c->jb - 1 + s) : value(1, c->ib - 1 + s, c->jb - 1 + l);
              sum += a * b;
            }
            want = c->alpha * sum + (c->beta != 0 ? c->beta * want : 0);
          }
          const double got = full[(size_t)j * MC + i] + 0.0; /* + 0.0: -0 prints as 0 */
          if (!(got == want) && bad++ < 5)
            fprintf(stderr, "unmodified_pdgemm: call %zu: C(%d,%d) = %.17g, expected %.17g\n", t + 1, i + 1, j + 1,
                    got, want);
          fprintf(dump, j + 1 < NC ? "%.17g " : "%.17g\n", got);
        }
      }
    }
    free(A.v);
    free(B.v);
    free(C.v);
    free(full);
  }
  if (rank == 0) {
    fclose(dump);
    printf("unmodified_pdgemm: %zu calls, pdgemm_ from %s, %s\n", sizeof calls / sizeof calls[0],
           dladdr((void *)&pdgemm_, &where) && where.dli_fname ? where.dli_fname : "?",
           bad ? "MISMATCHES against the serial loop" : "C equals the serial loop");
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  Cblacs_gridexit(ctxt);
  Cblacs_exit(1);
  MPI_Finalize();
  return bad ? 1 : 0;
}
