// tests/scalapack/control_traffic.cpp — what MPI carries for one prism call, counted from
// outside by the PMPI counter (bench/dist/mpi_counter.c, preloaded), against what prism
// says it moved: a pdgemm_ of libprism_scalapack (route prism) and a prism::dist::gemm.
//
//   mpiexec -n NP -x LD_PRELOAD=libprism_mpi_counter.so -x PRISM_STATS=1 control_traffic
//   (ctest control_traffic runs it at np 2 and 8 through control_traffic.sh)
//
// Each routine is called once to make its grid, plan and layout, then once more measured:
// the counter's totals on every rank before and after the call give what the call received
// point to point and in collectives. Those must equal prism's own counts exactly:
//   - point to point: the exchange's bytes as prism counts them (pdgemm_: the largest and
//     the sum over the processes, from its PRISM_STATS line's recv_max_bytes and
//     recv_sum_bytes; prism::dist: every rank's last_traffic().bytes_received);
//   - collectives: prism's control bytes, its own collectives besides the exchange
//     (pdgemm_: control_min_bytes and control_max_bytes of the line; prism::dist: every
//     rank's lib/mpi control_traffic() over the call).
// Rank 0 prints one line per routine and, last, "control_traffic: np N: pdgemm_ C1 dist C2
// collective bytes per rank per call: PASS" (or FAIL with the reasons), which the driver
// compares across rank counts. Exit status 0 when everything holds, 1 otherwise.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <prism/dist.hpp>

#include "mpi/comm.hpp"
#include "support/blacs.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
             const double* a, const int* ia, const int* ja, const int* desca, const double* b, const int* ib,
             const int* jb, const int* descb, const double* beta, double* c, const int* ic, const int* jc,
             const int* descc);
}

namespace {

int g_rank = 0, g_fails = 0;

// Says a failure (rank 0 says the shared ones).
void fail(const std::string& what) {
  ++g_fails;
  std::printf("control_traffic: FAIL rank %d: %s\n", g_rank, what.c_str());
  std::fflush(stdout);
}

using totals_fn = void (*)(std::uint64_t out[4]);

// What the counter saw this rank receive during one call: point-to-point and collective bytes.
struct seen {
  std::int64_t p2p = 0, coll = 0;
};

// Runs f and returns what the counter saw this rank receive meanwhile.
template <class F>
seen counted(totals_fn totals, F&& f) {
  std::uint64_t before[4], after[4];
  totals(before);
  f();
  totals(after);
  return {std::int64_t(after[0] - before[0]), std::int64_t(after[1] - before[1])};
}

// The largest, least and summed value of x over MPI_COMM_WORLD (outside any measured call).
struct spread {
  std::int64_t max = 0, min = 0, sum = 0;
};
spread over_ranks(std::int64_t x) {
  spread s;
  MPI_Allreduce(&x, &s.max, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&x, &s.min, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&x, &s.sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return s;
}

// The value of `name=` in a PRISM_STATS line, or -1.
double field(const std::string& line, const char* name) {
  const std::size_t at = line.find(std::string(" ") + name + "=");
  return at == std::string::npos ? -1 : std::strtod(line.c_str() + at + std::strlen(name) + 2, nullptr);
}

// pdgemm_ through libprism_scalapack on the most square grid of all processes: returns the
// counter's collective bytes per rank of the measured call (the largest), after checking
// both counts against the PRISM_STATS line of grid process 0.
std::int64_t check_pdgemm(totals_fn totals, int np) {
  int pr = 1;
  for (int d = 1; d * d <= np; ++d)
    if (np % d == 0) pr = d;
  const int pc = np / pr;
  int ctxt = 0, nprow = 0, npcol = 0, myrow = 0, mycol = 0;
  Cblacs_get(-1, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "Row", pr, pc);
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  const int n = 96, nb = 8, zero = 0, one = 1;
  const int locr = numroc_(&n, &nb, &myrow, &zero, &nprow), locc = numroc_(&n, &nb, &mycol, &zero, &npcol);
  const int lld = std::max(1, locr);
  int desc[9], info = 0;
  descinit_(desc, &n, &n, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);
  std::vector<double> A(std::size_t(lld) * std::size_t(std::max(1, locc)), 0.5), B(A.size(), 0.25), C(A.size(), 1.0);
  const double alpha = 1.0, beta = 0.5;
  auto call = [&] {
    pdgemm_("N", "N", &n, &n, &n, &alpha, A.data(), &one, &one, desc, B.data(), &one, &one, desc, &beta, C.data(), &one,
            &one, desc);
  };
  call();  // makes the grid's communicator and the plan
  // The measured call, its PRISM_STATS line (grid process 0's) into a file.
  char path[64];
  std::snprintf(path, sizeof path, "/tmp/control_traffic.%d.%d.err", int(getpid()), g_rank);
  std::fflush(stderr);
  const int saved = dup(2), fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (fd >= 0) dup2(fd, 2), close(fd);
  const seen s = counted(totals, call);
  std::fflush(stderr);
  dup2(saved, 2), close(saved);
  double line[4] = {-1, -1, -1, -1};  // recv_max_bytes recv_sum_bytes control_min_bytes control_max_bytes
  std::string text;
  if (g_rank == 0) {
    std::ifstream in(path);
    for (std::string l; std::getline(in, l);)
      if (l.rfind("prism-scalapack: route=prism routine=PDGEMM", 0) == 0) text = l;
    const char* names[4] = {"recv_max_bytes", "recv_sum_bytes", "control_min_bytes", "control_max_bytes"};
    for (int i = 0; i < 4; ++i) line[i] = field(text, names[i]);
  }
  std::remove(path);
  MPI_Bcast(line, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  const spread p2p = over_ranks(s.p2p), coll = over_ranks(s.coll);
  if (g_rank == 0) {
    std::printf("control_traffic: np %d: pdgemm_ %dx%dx%d on %dx%d, measured call, bytes per rank: point to point max "
                "%lld sum %lld (prism: %.0f, %.0f); collectives min %lld max %lld (prism: %.0f, %.0f)\n",
                np, n, n, n, pr, pc, (long long)p2p.max, (long long)p2p.sum, line[0], line[1], (long long)coll.min,
                (long long)coll.max, line[2], line[3]);
    if (text.empty()) fail("no 'prism-scalapack: route=prism' line for the measured pdgemm_ (PRISM_STATS=1 and "
                           "PRISM_SCALAPACK_ROUTE=prism must be set)");
    else if (double(p2p.max) != line[0] || double(p2p.sum) != line[1])
      fail("pdgemm_: the counter's point-to-point bytes are not prism's count");
    else if (double(coll.min) != line[2] || double(coll.max) != line[3])
      fail("pdgemm_: the counter's collective bytes are not prism's control bytes");
  }
  Cblacs_gridexit(ctxt);
  return coll.max;
}

// prism::dist::gemm on MPI_COMM_WORLD: the same, against last_traffic() and control_traffic()
// on every rank.
std::int64_t check_dist(totals_fn totals, int np) {
  const prism::problem p{prism::scalar_type::d, 'N', 'N', 96, 96, 96};
  auto L = prism::dist::layout::make(MPI_COMM_WORLD, p);
  prism::dist::matrix<double> A(L, prism::operand::a), B(L, prism::operand::b), C(L, prism::operand::c);
  A.fill([](std::int64_t i, std::int64_t j) { return double(i - j) / 8; });
  B.fill([](std::int64_t i, std::int64_t j) { return double(i + j) / 16; });
  C.fill([](std::int64_t, std::int64_t) { return 1.0; });
  auto call = [&] { prism::dist::gemm<double>(MPI_COMM_WORLD, L->source(), 1.0, A, B, 0.5, C); };
  call();
  const std::int64_t control0 = prism::mpi::control_traffic();
  const seen s = counted(totals, call);
  const std::int64_t control = prism::mpi::control_traffic() - control0;
  const std::int64_t received = prism::dist::last_traffic().bytes_received;
  if (s.p2p != received)
    fail("prism::dist::gemm: the counter saw " + std::to_string(s.p2p) + " point-to-point bytes, prism counted " +
         std::to_string(received));
  if (s.coll != control)
    fail("prism::dist::gemm: the counter saw " + std::to_string(s.coll) + " collective bytes, prism's control bytes are " +
         std::to_string(control));
  const spread p2p = over_ranks(s.p2p), coll = over_ranks(s.coll);
  const spread off = over_ranks(s.p2p != received || s.coll != control ? 1 : 0);
  if (g_rank == 0)
    std::printf("control_traffic: np %d: prism::dist::gemm %lldx%lldx%lld (%d ranks used, %d phases), measured call, "
                "bytes per rank: point to point max %lld sum %lld; collectives min %lld max %lld; ranks whose counts "
                "differ from prism's own: %lld\n",
                np, (long long)p.m, (long long)p.n, (long long)p.k, L->model().ranks(), L->model().phases(),
                (long long)p2p.max, (long long)p2p.sum, (long long)coll.min, (long long)coll.max, (long long)off.sum);
  return coll.max;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("PRISM_SCALAPACK_ROUTE", "prism", 0);
  int provided = 0, np = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const auto totals = reinterpret_cast<totals_fn>(dlsym(RTLD_DEFAULT, "prism_mpi_counter_totals"));
  if (totals == nullptr) {
    if (g_rank == 0)
      std::printf("control_traffic: FAIL: the PMPI counter is not loaded (run with "
                  "LD_PRELOAD=build/bench/libprism_mpi_counter.so)\n");
    MPI_Finalize();
    return 1;
  }
  const std::int64_t pdgemm_coll = check_pdgemm(totals, np);
  const std::int64_t dist_coll = check_dist(totals, np);
  int fails = 0;
  MPI_Allreduce(&g_fails, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("control_traffic: np %d: pdgemm_ %lld dist %lld collective bytes per rank per call: %s\n", np,
                (long long)pdgemm_coll, (long long)dist_coll, fails == 0 ? "PASS" : "FAIL");
  MPI_Finalize();
  return fails == 0 ? 0 : 1;
}
