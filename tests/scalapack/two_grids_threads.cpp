// tests/scalapack/two_grids_threads.cpp — p?gemm_ from two threads at once, each on its own
// BLACS grid over the same processes, under MPI_THREAD_MULTIPLE, every call prism's
// (PRISM_SCALAPACK_ROUTE=prism: BLACS is only asked about its grids, never to move data).
// Each grid keeps its own exchange buffers; one buffer for the process had been grown under
// the other thread's messages (wrong elements, or a crash in MPI_Testall). Every process
// checks its own elements of C exactly (integer-valued A and B). The grids' first calls run
// on the main thread (they make prism's duplicate of each grid's communicator).
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

extern "C" {
void Cblacs_get(int ctxt, int what, int* val);
void Cblacs_gridinit(int* ctxt, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int ctxt);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrc, const int* nprocs);
void pdgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*, const int*,
             const int*, const int*, const double*, const int*, const int*, const int*, const double*, double*, const int*,
             const int*, const int*);
}

namespace {

double a_at(int i, int j, int s) { return double((i * 7 + j * 3 + s) % 9 - 4); }
double b_at(int i, int j, int s) { return double((i * 5 + j * 11 + s) % 7 - 3); }

struct grid {
  int ctxt = -1, nprow = 0, npcol = 0, myrow = 0, mycol = 0;
};

// The global index of local index l in blocks of nb over np processes, this one p, source 0.
// E.g. nb 2, np 2, p 1: local 0 1 2 3 are global 2 3 6 7.
int global_of(int l, int nb, int p, int np) { return (l / nb) * nb * np + p * nb + l % nb; }

// C = A B (M x N x K in blocks of nb) on grid g; the wrong elements of this process's C.
long one_product(const grid& g, int M, int N, int K, int nb, int s) {
  const int zero = 0, one = 1;
  const int ma = numroc_(&M, &nb, &g.myrow, &zero, &g.nprow), na = numroc_(&K, &nb, &g.mycol, &zero, &g.npcol);
  const int mb = numroc_(&K, &nb, &g.myrow, &zero, &g.nprow), nb_ = numroc_(&N, &nb, &g.mycol, &zero, &g.npcol);
  const int lda = std::max(1, ma), ldb = std::max(1, mb), ldc = std::max(1, ma);
  std::vector<double> A(std::size_t(lda) * std::size_t(std::max(1, na))), B(std::size_t(ldb) * std::size_t(std::max(1, nb_)));
  std::vector<double> C(std::size_t(ldc) * std::size_t(std::max(1, nb_)), 0.0);
  for (int j = 0; j < na; ++j)
    for (int i = 0; i < ma; ++i)
      A[std::size_t(i + j * lda)] = a_at(global_of(i, nb, g.myrow, g.nprow), global_of(j, nb, g.mycol, g.npcol), s);
  for (int j = 0; j < nb_; ++j)
    for (int i = 0; i < mb; ++i)
      B[std::size_t(i + j * ldb)] = b_at(global_of(i, nb, g.myrow, g.nprow), global_of(j, nb, g.mycol, g.npcol), s);
  const int da[9] = {1, g.ctxt, M, K, nb, nb, 0, 0, lda}, db[9] = {1, g.ctxt, K, N, nb, nb, 0, 0, ldb},
            dc[9] = {1, g.ctxt, M, N, nb, nb, 0, 0, ldc};
  const double alpha = 1, beta = 0;
  pdgemm_("N", "N", &M, &N, &K, &alpha, A.data(), &one, &one, da, B.data(), &one, &one, db, &beta, C.data(), &one, &one, dc);
  long bad = 0;
  for (int j = 0; j < nb_; ++j)
    for (int i = 0; i < ma; ++i) {
      const int gi = global_of(i, nb, g.myrow, g.nprow), gj = global_of(j, nb, g.mycol, g.npcol);
      double want = 0;
      for (int l = 0; l < K; ++l) want += a_at(gi, l, s) * b_at(l, gj, s);
      bad += C[std::size_t(i + j * ldc)] != want ? 1 : 0;
    }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0, rank = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) std::printf("two_grids_threads: FAIL: MPI provides thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
    MPI_Finalize();
    return 1;
  }
  grid g[2];
  for (grid& x : g) {
    Cblacs_get(-1, 0, &x.ctxt);
    Cblacs_gridinit(&x.ctxt, "Row", 1, size);
    Cblacs_gridinfo(x.ctxt, &x.nprow, &x.npcol, &x.myrow, &x.mycol);
  }
  std::atomic<long> bad{one_product(g[0], 40, 40, 40, 8, 0) + one_product(g[1], 40, 40, 40, 8, 0)};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (int it = 0; it < 12; ++it) {  // shapes that differ call by call, so buffers grow
        const int s = 10 * t + it;
        bad += one_product(g[t], 120 + s * 37 % 200, 100 + s * 53 % 180, 90 + s * 29 % 160, 8 << (s % 3), s);
      }
    });
  for (std::thread& th : threads) th.join();
  long mine = bad.load(), all = 0;
  MPI_Reduce(&mine, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) std::printf("two_grids_threads: %ld wrong elements: %s\n", all, all == 0 ? "PASS" : "FAIL");
  for (grid& x : g) Cblacs_gridexit(x.ctxt);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
