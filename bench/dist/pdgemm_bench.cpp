// bench/dist/pdgemm_bench.cpp — the peer of `prism run` in the distributed benchmark:
// Debian's ScaLAPACK pdgemm (libscalapack-openmpi, BLAS = whatever libblas.so.3 points to,
// OpenBLAS on this machine) on the same shapes, in the same run (scripts/bench-dist.sh).
//
//   mpirun -np 2 prism_pdgemm_bench M N K [--reps R] [--nb NB] [--grid PRxPC]
//          [--transa N|T|C] [--transb N|T|C] [--tool-name NAME] [--check]
//
// C = op(A) * op(B) (alpha = 1, beta = 0 for timing; --check uses beta = 0.5 so C's old values
// count) with op(A) M x K, op(B) K x N, C M x N, block-cyclic on a PR x PC BLACS grid
// (row-major ranks). A is stored M x K for --transa N and K x M for T or C (C = T for real
// data: the Gram shape A^T B is `--transa T`); B likewise. The default grid is the most square
// one for np, PR >= PC (2 -> 2x1, 12 -> 4x3, 13 -> 13x1). Block sizes: the M dimension is cut
// in mb = min(NB, M), N in nb = min(NB, N), K in kb = min(NB, K) in every matrix that has it
// (NB default 256): the clamp keeps small matrices in one block, and the three satisfy
// pdgemm's alignment rules whatever the transposes.
//
// It is a plain ScaLAPACK program, linked to Debian's libscalapack-openmpi only; prism comes
// in by LD_PRELOAD of libprism_scalapack.so (scripts/bench-dist.sh, pdgemm part). The timed
// pdgemm_ calls, and nothing else, sit between MPI_Pcontrol(1) and MPI_Pcontrol(0), so a PMPI
// counter that honours Pcontrol (bench/dist/mpi_counter.c) counts only their traffic: use
// --reps 1 to count one call. --tool-name labels the JSON line (default scalapack_pdgemm).
//
// Each element is a function of (matrix, global row, global column, seed) only, uniform in
// [-1, 1): the operands are the same whatever the grid, and rank 0 can regenerate them.
// Every repetition starts with MPI_Barrier; its time is the slowest rank's; best_s is the
// best repetition. Rank 0 prints one JSON line:
//   {"tool":"scalapack_pdgemm","np":2,"grid":"2x1","nb":256,"transa":"N","transb":"N",
//    "m":..,"n":..,"k":..,"reps":..,"best_s":..,"gflops":..,"threads_env":"1","blas":..,
//    "check":"skipped"}
// threads_env is OPENBLAS_NUM_THREADS as rank 0 saw it ("unset" when it is not set):
// Debian's OpenBLAS is the pthread build, so set it to 1 per rank unless the ranks are
// meant to share cores with BLAS threads.
//
// --check (small shapes): after the timed runs, one more pdgemm with beta = 0.5 onto a
// freshly filled C; rank 0 gathers C, recomputes C^ = op(A) op(B) + 0.5 C0 serially (plain
// loops, independent of BLAS) and requires |C - C^| <= 2 k eps (|op(A)||op(B)| + 0.5 |C0|)
// componentwise.
// A failed check prints "check":"failed" and exits 1.
#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "blacs_local.hpp"

extern "C" {
// pdgemm_ is PBLAS C code taking char pointers, so no hidden Fortran string lengths are passed.
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const double* alpha, const double* a, const int* ia, const int* ja, const int* desca,
             const double* b, const int* ib, const int* jb, const int* descb, const double* beta,
             double* c, const int* ic, const int* jc, const int* descc);
}

namespace {

using namespace blacs_bench;

// Prints why and the usage on rank 0, finalises MPI and exits with status 2.
[[noreturn]] void usage(int rank, const char* why) {
  if (rank == 0) {
    std::fprintf(stderr,
                 "pdgemm_bench: %s\nusage: mpirun -np P prism_pdgemm_bench M N K [--reps R] [--nb NB] "
                 "[--grid PRxPC] [--transa N|T|C] [--transb N|T|C] [--tool-name NAME] [--check]\n",
                 why);
  }
  MPI_Finalize();
  std::exit(2);
}

// Rank 0: recompute C^ = op(A) op(B) + beta C0 from the generator and compare componentwise.
bool check_on_root(const std::vector<double>& c, int m, int n, int k, bool ta, bool tb, double beta,
                   double* worst_ratio) {
  // a holds op(A) (m x k) and b op(B) (k x n), column-major; a stored transposed operand is
  // read from the generator at the swapped (row, column).
  std::vector<double> a(std::size_t(m) * k), b(std::size_t(k) * n);
  for (int j = 0; j < k; ++j)
    for (int i = 0; i < m; ++i) a[std::size_t(j) * m + i] = ta ? element(0, j, i) : element(0, i, j);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < k; ++i) b[std::size_t(j) * k + i] = tb ? element(1, j, i) : element(1, i, j);
  const double eps = std::numeric_limits<double>::epsilon();
  bool ok = true;
  *worst_ratio = 0.0;
  std::vector<double> ref(m), mag(m);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      const double c0 = element(2, i, j);
      ref[i] = beta * c0;
      mag[i] = std::fabs(beta) * std::fabs(c0);
    }
    for (int p = 0; p < k; ++p) {
      const double bpj = b[std::size_t(j) * k + p];
      const double* ap = a.data() + std::size_t(p) * m;
      for (int i = 0; i < m; ++i) {
        ref[i] += ap[i] * bpj;
        mag[i] += std::fabs(ap[i]) * std::fabs(bpj);
      }
    }
    for (int i = 0; i < m; ++i) {
      const double got = c[std::size_t(j) * m + i];
      const double bound = 2.0 * double(k) * eps * mag[i];
      const double diff = std::fabs(got - ref[i]);
      if (!(diff <= bound)) ok = false;  // NaN (an element nobody owned) fails too
      if (bound > 0) *worst_ratio = std::max(*worst_ratio, diff / bound);
    }
  }
  return ok;
}

}  // namespace

// Parses the options, builds A, B and C on the BLACS grid, times pdgemm_ and prints the JSON line.
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, np = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);

  int dims[3] = {0, 0, 0}, ndims = 0, reps = 3, nb_req = 256, pr = 0, pc = 0;
  bool check = false;
  char transa = 'N', transb = 'N';
  std::string tool = "scalapack_pdgemm";
  // Reads an N|T|C transpose flag (either case) into *out.
  auto parse_trans = [&](const char* name, const char* v, char* out) {
    const char c = char(std::toupper(static_cast<unsigned char>(v[0])));
    if (v[0] == '\0' || v[1] != '\0' || (c != 'N' && c != 'T' && c != 'C'))
      usage(rank, (std::string(name) + ": N, T or C").c_str());
    *out = c;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) usage(rank, (std::string(name) + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--reps") {
      if (!parse_int(value("--reps"), 1, 1000, &reps)) usage(rank, "--reps: an integer in [1, 1000]");
    } else if (a == "--nb") {
      if (!parse_int(value("--nb"), 1, 1 << 20, &nb_req)) usage(rank, "--nb: a positive integer");
    } else if (a == "--grid") {
      const std::string g = value("--grid");
      const auto x = g.find('x');
      if (x == std::string::npos || !parse_int(g.substr(0, x).c_str(), 1, 1 << 20, &pr) ||
          !parse_int(g.substr(x + 1).c_str(), 1, 1 << 20, &pc))
        usage(rank, "--grid: PRxPC, e.g. 2x1");
      if (pr * pc != np) usage(rank, "--grid: PR * PC must equal the number of ranks");
    } else if (a == "--transa") {
      parse_trans("--transa", value("--transa"), &transa);
    } else if (a == "--transb") {
      parse_trans("--transb", value("--transb"), &transb);
    } else if (a == "--tool-name") {
      tool = value("--tool-name");
      if (tool.empty() || tool.find_first_of("\"\\") != std::string::npos)
        usage(rank, "--tool-name: a non-empty name without quotes or backslashes");
    } else if (a == "--check") {
      check = true;
    } else if (a == "-h" || a == "--help") {
      usage(rank, "help");
    } else if (ndims < 3 && parse_int(a.c_str(), 1, std::numeric_limits<int>::max(), &dims[ndims])) {
      ++ndims;
    } else {
      usage(rank, ("unexpected argument '" + a + "'").c_str());
    }
  }
  if (ndims != 3) usage(rank, "M N K are required");
  const int m = dims[0], n = dims[1], k = dims[2];
  if (pr == 0) {  // most square grid, PR >= PC
    pc = 1;
    for (int d = 1; std::int64_t(d) * d <= np; ++d)
      if (np % d == 0) pc = d;
    pr = np / pc;
  }
  const int mb = std::min(nb_req, m), nb = std::min(nb_req, n), kb = std::min(nb_req, k);

  int ctxt = 0, myrow = 0, mycol = 0, gpr = 0, gpc = 0;
  Cblacs_get(0, 0, &ctxt);  // default system context (MPI_COMM_WORLD)
  Cblacs_gridinit(&ctxt, "Row", pr, pc);
  Cblacs_gridinfo(ctxt, &gpr, &gpc, &myrow, &mycol);
  if (gpr != pr || gpc != pc) {
    if (rank == 0) std::fprintf(stderr, "pdgemm_bench: BLACS made a %dx%d grid, not %dx%d\n", gpr, gpc, pr, pc);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  // Stored shapes: A is m x k (N) or k x m (T, C); B is k x n (N) or n x k (T, C).
  const bool ta = transa != 'N', tb = transb != 'N';
  const int a_rows = ta ? k : m, a_cols = ta ? m : k, a_rb = ta ? kb : mb, a_cb = ta ? mb : kb;
  const int b_rows = tb ? n : k, b_cols = tb ? k : n, b_rb = tb ? nb : kb, b_cb = tb ? kb : nb;
  Local A = make_local(ctxt, 0, a_rows, a_cols, a_rb, a_cb, myrow, mycol, pr, pc, true);
  Local B = make_local(ctxt, 1, b_rows, b_cols, b_rb, b_cb, myrow, mycol, pr, pc, true);
  Local C = make_local(ctxt, 2, m, n, mb, nb, myrow, mycol, pr, pc, false);

  const int one = 1;
  const double alpha = 1.0, beta0 = 0.0;
  double best = std::numeric_limits<double>::infinity();
  const char ta_s[2] = {transa, '\0'}, tb_s[2] = {transb, '\0'};
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    // Only the timed call is inside the counting window (a PMPI counter honours Pcontrol;
    // without one, MPI_Pcontrol does nothing).
    MPI_Pcontrol(1);
    const double t0 = MPI_Wtime();
    pdgemm_(ta_s, tb_s, &m, &n, &k, &alpha, A.data.data(), &one, &one, A.desc, B.data.data(), &one, &one,
            B.desc, &beta0, C.data.data(), &one, &one, C.desc);
    double t = MPI_Wtime() - t0, tmax = 0.0;
    MPI_Pcontrol(0);
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    best = std::min(best, tmax);
  }

  std::string check_status = "skipped";
  double worst = 0.0;
  if (check) {
    const double beta = 0.5;
    C = make_local(ctxt, 2, m, n, mb, nb, myrow, mycol, pr, pc, true);
    pdgemm_(ta_s, tb_s, &m, &n, &k, &alpha, A.data.data(), &one, &one, A.desc, B.data.data(), &one, &one,
            B.desc, &beta, C.data.data(), &one, &one, C.desc);
    std::vector<double> full = gather(C, m, n, mb, nb, myrow, mycol, pr, pc, rank, np);
    int ok = 1;
    if (rank == 0) ok = check_on_root(full, m, n, k, ta, tb, beta, &worst) ? 1 : 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    check_status = ok ? "passed" : "failed";
  }

  if (rank == 0) {
    const char* env = std::getenv("OPENBLAS_NUM_THREADS");
    const double flops = 2.0 * double(m) * double(n) * double(k);
    std::printf(
        "{\"tool\":\"%s\",\"np\":%d,\"grid\":\"%dx%d\",\"nb\":%d,\"transa\":\"%c\",\"transb\":\"%c\","
        "\"m\":%d,\"n\":%d,\"k\":%d,"
        "\"reps\":%d,\"best_s\":%.6g,\"gflops\":%.4g,\"threads_env\":\"%s\",\"blas\":\"%s\",\"check\":\"%s\"",
        tool.c_str(), np, pr, pc, nb_req, transa, transb, m, n, k, reps, best, flops / best * 1e-9, env ? env : "unset", loaded_blas().c_str(),
        check_status.c_str());
    if (check) std::printf(",\"check_worst_ratio\":%.3g", worst);
    std::printf("}\n");
    std::fflush(stdout);
  }

  Cblacs_gridexit(ctxt);
  Cblacs_exit(1);  // 1: leave MPI running, it is finalised below
  MPI_Finalize();
  return check_status == "failed" ? 1 : 0;
}
