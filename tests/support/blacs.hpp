// tests/support/blacs.hpp — the BLACS C interface and the ScaLAPACK tools the ScaLAPACK
// tests call (Debian installs no headers for them); 32-bit int, as Debian's
// libscalapack-openmpi.
#pragma once

extern "C" {
/// This process's number and the process count.
void Cblacs_pinfo(int* mypnum, int* nprocs);
/// BLACS's value `what` for context icontxt (0: the default system context).
void Cblacs_get(int icontxt, int what, int* val);
/// Makes an nprow x npcol grid in "Row" or "Col" order on context icontxt.
void Cblacs_gridinit(int* icontxt, const char* order, int nprow, int npcol);
/// Makes an nprow x npcol grid of the processes usermap lists (column-major, ld ldumap).
void Cblacs_gridmap(int* icontxt, int* usermap, int ldumap, int nprow, int npcol);
/// The grid's shape and this process's place in it (nprow -1: not in the grid).
void Cblacs_gridinfo(int icontxt, int* nprow, int* npcol, int* myrow, int* mycol);
/// Frees a grid.
void Cblacs_gridexit(int icontxt);
/// Ends BLACS (notdone != 0: MPI stays up).
void Cblacs_exit(int notdone);
/// Rows (or columns) of an n-long block-cyclic dimension that process iproc holds.
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
/// Fills a 9-entry descriptor; info < 0 names a bad argument.
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc,
               const int* icsrc, const int* ictxt, const int* lld, int* info);
}
