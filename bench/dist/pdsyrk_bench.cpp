// bench/dist/pdsyrk_bench.cpp — the ScaLAPACK baseline of the distributed Gram matrix:
// Debian's pdsyrk_ (libscalapack-openmpi, BLAS = whatever libblas.so.3 points to,
// OpenBLAS on this machine), as a ScaLAPACK user calls it for C = A^T A (scripts/bench-syrk.sh).
//
//   mpirun -np P prism_pdsyrk_bench N K [--reps R] [--nb NB] [--grid PRxPC] [--uplo U|L]
//          [--trans N|T] [--tool-name NAME] [--check]
//
// C (N x N) = A^T A (trans T, the default: A stored K x N, the Gram shape of CholeskyQR) or
// A A^T (trans N: A stored N x K), alpha = 1, beta = 0 for timing, only the uplo triangle
// (default U) written. A and C are block-cyclic on a PR x PC BLACS grid (row-major ranks), the
// most square one for np with PR >= PC (2 -> 2x1, 8 -> 4x2, 13 -> 13x1), in square NB x NB
// blocks clamped to the matrix (NB default 128, --nb): N is cut in nb = min(NB, N) in both
// matrices (pdsyrk needs A's N blocks to match C's), K in kb = min(NB, K). That is what a
// ScaLAPACK program does by default; a 1D layout (--grid Px1) is one option among others.
//
// The elements come from blacs_local.hpp's generator (the same operands on any grid). Each
// repetition starts with MPI_Barrier, and its time is the slowest rank's; best_s is the best.
// Only the timed pdsyrk_ calls sit between MPI_Pcontrol(1) and MPI_Pcontrol(0), so the PMPI
// counter (bench/dist/mpi_counter.c) counts their traffic alone: --reps 1 counts one call.
// Rank 0 prints one JSON line:
//   {"tool":"scalapack_pdsyrk","np":4,"grid":"2x2","nb":128,"uplo":"U","trans":"T","n":..,
//    "k":..,"reps":..,"best_s":..,"gflops":..,"threads_env":"1","blas":..,"check":"skipped"}
// gflops counts n (n + 1) k flops (the triangle, diagonal included: 2 flops a multiply-add).
//
// --check (small shapes): one more pdsyrk_ with beta = 0.5 onto a freshly filled C; rank 0
// gathers C and requires, in the uplo triangle, |C - C^| <= 2 k eps (|A^T||A| + 0.5 |C0|)
// componentwise against a serial recomputation, and in the other triangle C bitwise equal to
// C0 (pdsyrk_ must not touch it). A failed check prints "check":"failed" and exits 1.
#include <mpi.h>

#include <algorithm>
#include <cctype>
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
// pdsyrk_ is PBLAS C code taking char pointers, so no hidden Fortran string lengths are passed.
void pdsyrk_(const char* uplo, const char* trans, const int* n, const int* k, const double* alpha,
             const double* a, const int* ia, const int* ja, const int* desca, const double* beta, double* c,
             const int* ic, const int* jc, const int* descc);
}

namespace {

using namespace blacs_bench;

// Prints why and the usage on rank 0, finalises MPI and exits with status 2.
[[noreturn]] void usage(int rank, const char* why) {
  if (rank == 0) {
    std::fprintf(stderr,
                 "pdsyrk_bench: %s\nusage: mpirun -np P prism_pdsyrk_bench N K [--reps R] [--nb NB] "
                 "[--grid PRxPC] [--uplo U|L] [--trans N|T] [--tool-name NAME] [--check]\n",
                 why);
  }
  MPI_Finalize();
  std::exit(2);
}

// Rank 0: recompute the uplo triangle of C^ = op(A) op(A)^T + beta C0 from the generator
// (op(A) = A^T for trans T, A stored k x n) and compare componentwise; the other triangle must
// still hold C0 exactly.
bool check_on_root(const std::vector<double>& c, int n, int k, char uplo, bool trans, double beta,
                   double* worst_ratio) {
  // g holds op(A) (n x k), column-major.
  std::vector<double> g(std::size_t(n) * k);
  for (int l = 0; l < k; ++l)
    for (int i = 0; i < n; ++i) g[std::size_t(l) * n + i] = trans ? element(0, l, i) : element(0, i, l);
  const double eps = std::numeric_limits<double>::epsilon();
  bool ok = true;
  *worst_ratio = 0.0;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) {
      const double got = c[std::size_t(j) * n + i], c0 = element(2, i, j);
      const bool mine = uplo == 'U' ? i <= j : i >= j;
      if (!mine) {
        if (std::memcmp(&got, &c0, sizeof got) != 0) ok = false;
        continue;
      }
      double ref = beta * c0, mag = std::fabs(beta) * std::fabs(c0);
      for (int l = 0; l < k; ++l) {
        const double x = g[std::size_t(l) * n + i], y = g[std::size_t(l) * n + j];
        ref += x * y;
        mag += std::fabs(x) * std::fabs(y);
      }
      const double bound = 2.0 * double(k) * eps * mag, diff = std::fabs(got - ref);
      if (!(diff <= bound)) ok = false;  // NaN (an element nobody owned) fails too
      if (bound > 0) *worst_ratio = std::max(*worst_ratio, diff / bound);
    }
  }
  return ok;
}

// Reads a one-letter flag (either case) from `allowed` into *out.
void parse_letter(int rank, const char* name, const char* v, const char* allowed, char* out) {
  const char c = char(std::toupper(static_cast<unsigned char>(v[0])));
  if (v[0] == '\0' || v[1] != '\0' || std::strchr(allowed, c) == nullptr)
    usage(rank, (std::string(name) + ": one of " + allowed).c_str());
  *out = c;
}

}  // namespace

// Parses the options, builds A and C on the BLACS grid, times pdsyrk_ and prints the JSON line.
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, np = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);

  int dims[2] = {0, 0}, ndims = 0, reps = 3, nb_req = 128, pr = 0, pc = 0;
  bool check = false;
  char uplo = 'U', trans = 'T';
  std::string tool = "scalapack_pdsyrk";
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
    } else if (a == "--uplo") {
      parse_letter(rank, "--uplo", value("--uplo"), "UL", &uplo);
    } else if (a == "--trans") {
      parse_letter(rank, "--trans", value("--trans"), "NT", &trans);
    } else if (a == "--tool-name") {
      tool = value("--tool-name");
      if (tool.empty() || tool.find_first_of("\"\\") != std::string::npos)
        usage(rank, "--tool-name: a non-empty name without quotes or backslashes");
    } else if (a == "--check") {
      check = true;
    } else if (a == "-h" || a == "--help") {
      usage(rank, "help");
    } else if (ndims < 2 && parse_int(a.c_str(), 1, std::numeric_limits<int>::max(), &dims[ndims])) {
      ++ndims;
    } else {
      usage(rank, ("unexpected argument '" + a + "'").c_str());
    }
  }
  if (ndims != 2) usage(rank, "N K are required");
  const int n = dims[0], k = dims[1];
  if (pr == 0) {  // most square grid, PR >= PC
    pc = 1;
    for (int d = 1; std::int64_t(d) * d <= np; ++d)
      if (np % d == 0) pc = d;
    pr = np / pc;
  }
  const int nb = std::min(nb_req, n), kb = std::min(nb_req, k);

  int ctxt = 0, myrow = 0, mycol = 0, gpr = 0, gpc = 0;
  Cblacs_get(0, 0, &ctxt);  // default system context (MPI_COMM_WORLD)
  Cblacs_gridinit(&ctxt, "Row", pr, pc);
  Cblacs_gridinfo(ctxt, &gpr, &gpc, &myrow, &mycol);
  if (gpr != pr || gpc != pc) {
    if (rank == 0) std::fprintf(stderr, "pdsyrk_bench: BLACS made a %dx%d grid, not %dx%d\n", gpr, gpc, pr, pc);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  // Stored shapes: A is k x n (trans T) or n x k (trans N); C is n x n.
  const bool t = trans == 'T';
  const int a_rows = t ? k : n, a_cols = t ? n : k, a_rb = t ? kb : nb, a_cb = t ? nb : kb;
  Local A = make_local(ctxt, 0, a_rows, a_cols, a_rb, a_cb, myrow, mycol, pr, pc, true);
  Local C = make_local(ctxt, 2, n, n, nb, nb, myrow, mycol, pr, pc, false);

  const int one = 1;
  const double alpha = 1.0, beta0 = 0.0;
  const char uplo_s[2] = {uplo, '\0'}, trans_s[2] = {trans, '\0'};
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    // Only the timed call is inside the counting window (a PMPI counter honours Pcontrol;
    // without one, MPI_Pcontrol does nothing).
    MPI_Pcontrol(1);
    const double t0 = MPI_Wtime();
    pdsyrk_(uplo_s, trans_s, &n, &k, &alpha, A.data.data(), &one, &one, A.desc, &beta0, C.data.data(), &one, &one,
            C.desc);
    double dt = MPI_Wtime() - t0, tmax = 0.0;
    MPI_Pcontrol(0);
    MPI_Allreduce(&dt, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    best = std::min(best, tmax);
  }

  std::string check_status = "skipped";
  double worst = 0.0;
  if (check) {
    const double beta = 0.5;
    C = make_local(ctxt, 2, n, n, nb, nb, myrow, mycol, pr, pc, true);
    pdsyrk_(uplo_s, trans_s, &n, &k, &alpha, A.data.data(), &one, &one, A.desc, &beta, C.data.data(), &one, &one,
            C.desc);
    std::vector<double> full = gather(C, n, n, nb, nb, myrow, mycol, pr, pc, rank, np);
    int ok = 1;
    if (rank == 0) ok = check_on_root(full, n, k, uplo, t, beta, &worst) ? 1 : 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    check_status = ok ? "passed" : "failed";
  }

  if (rank == 0) {
    const char* env = std::getenv("OPENBLAS_NUM_THREADS");
    const double flops = double(n) * double(n + 1) * double(k);
    std::printf(
        "{\"tool\":\"%s\",\"np\":%d,\"grid\":\"%dx%d\",\"nb\":%d,\"uplo\":\"%c\",\"trans\":\"%c\",\"n\":%d,\"k\":%d,"
        "\"reps\":%d,\"best_s\":%.6g,\"gflops\":%.4g,\"threads_env\":\"%s\",\"blas\":\"%s\",\"check\":\"%s\"",
        tool.c_str(), np, pr, pc, nb_req, uplo, trans, n, k, reps, best, flops / best * 1e-9, env ? env : "unset",
        loaded_blas().c_str(), check_status.c_str());
    if (check) std::printf(",\"check_worst_ratio\":%.3g", worst);
    std::printf("}\n");
    std::fflush(stdout);
  }

  Cblacs_gridexit(ctxt);
  Cblacs_exit(1);  // 1: leave MPI running, it is finalised below
  MPI_Finalize();
  return check_status == "failed" ? 1 : 0;
}
