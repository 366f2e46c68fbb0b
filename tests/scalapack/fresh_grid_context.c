/* tests/scalapack/fresh_grid_context.c — a wrong context on one process, in a grid's first
 * call, under ScaLAPACK's own PB_Cabort (which ends the job), on 2 processes.
 *
 * Two grids span the same two processes (1 x 2 and 2 x 1). Process 1 alone passes DESCA
 * with the second grid's context, in the first pdgemm_ either grid sees; every other
 * argument is valid. Reference PBLAS reports "parameter 1402" on process 1 (DESCB's context
 * is not DESCA's) before anything collective, and its PB_Cabort ends the job. prism must
 * report it just as early: a grid's first call duplicates the grid's communicator, and
 * process 1, in the other grid's, would wait there for ever. The ctest entry passes when
 * the report is printed (the job then ends); a hang is its timeout. */
#include <mpi.h>
#include <stdio.h>

void Cblacs_get(int ictxt, int what, int* val);
void Cblacs_gridinit(int* ictxt, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int ictxt, int* nprow, int* npcol, int* myrow, int* mycol);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc, const int* icsrc,
               const int* ictxt, const int* lld, int* info);
void pdgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*, const int*,
             const int*, const int*, const double*, const int*, const int*, const int*, const double*, double*,
             const int*, const int*, const int*);

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) printf("fresh_grid_context: needs 2 processes, has %d\n", size);
    MPI_Finalize();
    return 1;
  }
  int row_grid = 0, column_grid = 0, nprow = 0, npcol = 0, myrow = 0, mycol = 0;
  Cblacs_get(0, 0, &row_grid);
  Cblacs_gridinit(&row_grid, "R", 1, 2);
  Cblacs_get(0, 0, &column_grid);
  Cblacs_gridinit(&column_grid, "C", 2, 1);
  Cblacs_gridinfo(row_grid, &nprow, &npcol, &myrow, &mycol);
  /* 8 x 8 in 2 x 2 blocks over 1 x 2: each process holds 8 rows and 4 columns. */
  const int n = 8, nb = 2, zero = 0, lld = 8, one = 1;
  int desc[9], bad[9], info = 0;
  descinit_(desc, &n, &n, &nb, &nb, &zero, &zero, &row_grid, &lld, &info);
  double a[32], c[32];
  for (int i = 0; i < 32; ++i) a[i] = i % 5, c[i] = 0;
  for (int i = 0; i < 9; ++i) bad[i] = desc[i];
  if (rank == 1) bad[1] = column_grid;
  const double alpha = 1, beta = 0;
  pdgemm_("N", "N", &n, &n, &n, &alpha, a, &one, &one, bad, a, &one, &one, desc, &beta, c, &one, &one, desc);
  printf("fresh_grid_context: process %d returned (PB_Cabort did not end the job)\n", rank);
  MPI_Finalize();
  return 0;
}
