// A ScaLAPACK program as users write one (BLACS grid, descinit_, pdgemm_), linked with
// prism's drop-in ahead of Debian's ScaLAPACK: by prism::prism_scalapack (CMake) or by
// `pkg-config --libs prism_scalapack` then -lscalapack-openmpi. On a 1 x P grid it
// multiplies small integer matrices (exact in double) and checks every element it holds.
#include <mpi.h>

#include <cstdio>
#include <vector>

extern "C" {
void Cblacs_pinfo(int* me, int* procs);
void Cblacs_get(int ctxt, int what, int* val);
void Cblacs_gridinit(int* ctxt, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int ctxt);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc, const int* icsrc,
               const int* ictxt, const int* lld, int* info);
void pdgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const double* alpha, const double* a,
             const int* ia, const int* ja, const int* desca, const double* b, const int* ib, const int* jb,
             const int* descb, const double* beta, double* c, const int* ic, const int* jc, const int* descc);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, procs = 1, ctxt = 0, nprow = 0, npcol = 0, myrow = 0, mycol = 0, info = 0;
  Cblacs_pinfo(&me, &procs);
  Cblacs_get(-1, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "Row", 1, procs);
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  const int m = 37, n = 29, k = 41, nb = 4, zero = 0, one = 1;
  // Local column counts: block-cyclic columns over the 1 x P grid (rows all local).
  const int ka = numroc_(&k, &nb, &mycol, &zero, &npcol), nn = numroc_(&n, &nb, &mycol, &zero, &npcol);
  int da[9], db[9], dc[9];
  descinit_(da, &m, &k, &nb, &nb, &zero, &zero, &ctxt, &m, &info);
  descinit_(db, &k, &n, &nb, &nb, &zero, &zero, &ctxt, &k, &info);
  descinit_(dc, &m, &n, &nb, &nb, &zero, &zero, &ctxt, &m, &info);
  // Global column of local column l on process column q: (l / nb * P + q) * nb + l % nb.
  auto global = [&](int l) { return (l / nb * npcol + mycol) * nb + l % nb; };
  std::vector<double> A(std::size_t(m) * ka + 1), B(std::size_t(k) * nn + 1), C(std::size_t(m) * nn + 1, 0.0);
  for (int l = 0; l < ka; ++l)
    for (int i = 0; i < m; ++i) A[std::size_t(i + l * m)] = (i + 2 * global(l)) % 7 - 3;
  for (int l = 0; l < nn; ++l)
    for (int i = 0; i < k; ++i) B[std::size_t(i + l * k)] = (3 * i + global(l)) % 5 - 2;
  const double alpha = 1, beta = 0;
  pdgemm_("N", "N", &m, &n, &k, &alpha, A.data(), &one, &one, da, B.data(), &one, &one, db, &beta, C.data(), &one,
          &one, dc);
  int bad = 0;
  for (int l = 0; l < nn; ++l)
    for (int i = 0; i < m; ++i) {
      double want = 0;
      for (int p = 0; p < k; ++p) want += double((i + 2 * p) % 7 - 3) * double((3 * p + global(l)) % 5 - 2);
      bad += C[std::size_t(i + l * m)] != want;
    }
  int all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) std::printf("consumer_scalapack: %s (%d wrong elements)\n", all == 0 ? "ok" : "FAILED", all);
  Cblacs_gridexit(ctxt);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
