// tests/fault/fault_rank.cpp — the MPI program of the fault tests (run_fault.sh): on every
// rank, CALLS multiplies through prism::dist::gemm ("dist") or through the ScaLAPACK
// drop-in's prism route, pdgemm_ of libprism_scalapack ("pgemm"), while the test injects a
// fault (PRISM_TEST_FAULT, lib/mpi/rank_exchange.cpp) or kills a rank. Each rank records in
// FAULT_DIR: pid.R (its pid, first), incall.R (written just before its first call) and
// exit.R ("ok", or "error: WHAT" when a call threw), so the script can check every rank's
// end. Exit status: 0 when every call returned, 3 when one threw (after MPI_Finalize).
//   fault_rank dist|pgemm [CALLS]
#include <prism/dist.hpp>
#include <prism/error.hpp>

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
void Cblacs_pinfo(int* mypnum, int* nprocs);
void Cblacs_get(int icontxt, int what, int* val);
void Cblacs_gridinit(int* icontxt, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int icontxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int icontxt);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc,
               const int* icsrc, const int* ictxt, const int* lld, int* info);
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
             const double* a, const int* ia, const int* ja, const int* desca, const double* b, const int* ib,
             const int* jb, const int* descb, const double* beta, double* c, const int* ic, const int* jc,
             const int* descc);
}

namespace {

int g_rank = 0;
std::string g_dir;

void record(const char* what, const std::string& text) {
  if (g_dir.empty()) return;
  const std::string path = g_dir + "/" + what + "." + std::to_string(g_rank);
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fprintf(f, "%s\n", text.c_str());
    std::fclose(f);
  }
}

void run_dist(int calls) {
  const prism::problem pr{prism::scalar_type::d, 'N', 'N', 160, 150, 170};
  auto L = prism::dist::layout::make(MPI_COMM_WORLD, pr);
  prism::dist::matrix<double> A(L, prism::operand::a), B(L, prism::operand::b), C(L, prism::operand::c);
  A.fill([](std::int64_t i, std::int64_t j) { return double((i + 2 * j) % 7) - 3; });
  B.fill([](std::int64_t i, std::int64_t j) { return double((3 * i + j) % 5) - 2; });
  for (int c = 0; c < calls; ++c) {
    if (c == 0) record("incall", "dist");
    prism::dist::gemm(MPI_COMM_WORLD, L->source(), 1.0, A, B, 0.5, C);
  }
}

#ifndef FAULT_NO_PGEMM
void run_pgemm(int calls, int size) {
  int ctxt = 0, nprow = 0, npcol = 0, myrow = 0, mycol = 0;
  const int pr = size % 2 == 0 ? 2 : 1, pc = size / pr;
  Cblacs_get(-1, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "Row", pr, pc);
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  const int n = 160, nb = 16, zero = 0, one = 1;
  const int lr = numroc_(&n, &nb, &myrow, &zero, &nprow), lc = numroc_(&n, &nb, &mycol, &zero, &npcol);
  const int lld = lr > 1 ? lr : 1;
  int desc[9], info = 0;
  descinit_(desc, &n, &n, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);
  std::vector<double> A(std::size_t(lld) * std::size_t(lc > 0 ? lc : 1), 1.0), B(A.size(), 0.5), C(A.size(), 0.0);
  const double alpha = 1.0, beta = 0.5;
  for (int c = 0; c < calls; ++c) {
    if (c == 0) record("incall", "pgemm");
    pdgemm_("N", "N", &n, &n, &n, &alpha, A.data(), &one, &one, desc, B.data(), &one, &one, desc, &beta, C.data(),
            &one, &one, desc);
  }
  Cblacs_gridexit(ctxt);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  int provided = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (const char* d = std::getenv("FAULT_DIR")) g_dir = d;
  record("pid", std::to_string(long(getpid())));
  const std::string mode = argc > 1 ? argv[1] : "dist";
  const int calls = argc > 2 ? std::atoi(argv[2]) : 3;
  try {
#ifndef FAULT_NO_PGEMM
    if (mode == "pgemm") run_pgemm(calls, size);
    else
#endif
      run_dist(calls);
  } catch (const prism::error& e) {
    std::printf("fault_rank: rank %d: error: %s\n", g_rank, e.what());
    std::fflush(stdout);
    record("exit", std::string("error: ") + e.what());
    MPI_Finalize();
    return 3;
  }
  record("exit", "ok");
  std::printf("fault_rank: rank %d: %d calls returned\n", g_rank, calls);
  MPI_Finalize();
  return 0;
}
