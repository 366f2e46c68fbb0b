// tests/soak_dist.cpp — the rank level's soak (scripts/soak.sh): CALLS prism::dist::gemm
// and prism::dist::syrk calls on the communicator's ranks with changing shapes (40 recurring
// shapes, more than the layout cache keeps, and every tenth call a fresh random one; every
// third call a syrk of the shape's m x k, upper or lower, 'N' or 'T'; the first 12 calls the
// largest shape), each result gathered and checked on rank 0 against a plain loop (inputs
// are small integers: exact). Every 10^3 calls each rank's RSS is gathered. Pass: no wrong
// result, and every rank's RSS at the end within 5% of its RSS after the first 10^3 calls.
// Writes a markdown table to OUT.
//   mpiexec -n 4 soak_dist [CALLS [OUT]]
#include <prism/dist.hpp>
#include <prism/error.hpp>

#include <mpi.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

double a_of(std::int64_t i, std::int64_t j) { return double((i * 3 + j * 7) % 5) - 2; }
double b_of(std::int64_t i, std::int64_t j) { return double((i * 5 + j) % 7) - 3; }

}  // namespace

int main(int argc, char** argv) {
  int provided = 0, rank = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int calls = argc > 1 ? std::atoi(argv[1]) : 10000;
  const std::string out = argc > 2 ? argv[2] : "";
  std::mt19937 shapes(29);
  std::vector<std::array<std::int64_t, 3>> recurring;
  for (int s = 0; s < 40; ++s)
    recurring.push_back({std::int64_t(1 + shapes() % 96), std::int64_t(1 + shapes() % 96), std::int64_t(1 + shapes() % 160)});
  std::mt19937 pick(7);  // the same sequence on every rank
  long wrong = 0;
  std::vector<long> rss_rows;  // rank 0: per checkpoint, every rank's RSS
  std::vector<double> secs;
  const double t0 = MPI_Wtime();
  double tb = t0;
  for (int c = 1; c <= calls; ++c) {
    // Calls 1-12: the largest shape in every variant below, so that what a process loads
    // once (a leaf library at its first use: 4 MB of RSS for BLIS and OpenBLAS's leaf copy)
    // comes before the first checkpoint, not at the first large call drawn later.
    std::array<std::int64_t, 3> s = {128, 128, 256};
    if (c > 12) {
      s = recurring[pick() % recurring.size()];
      if (c % 10 == 0) s = {std::int64_t(1 + pick() % 128), std::int64_t(1 + pick() % 128), std::int64_t(1 + pick() % 256)};
    }
    // A syrk: C (m x m) = 2 op(A) op(A)^T - C on one triangle, op(A) m x k; uplo and trans
    // from the call's number (calls 3, 6, 9, 12: L T, U T, L N, U N, and so on).
    const bool syrk = c % 3 == 0;
    const char uplo = c % 2 == 0 ? 'U' : 'L', trans = c % 4 < 2 ? 'N' : 'T';
    if (syrk) s[1] = s[0];
    const prism::problem pr = syrk ? prism::rank_k_problem(prism::scalar_type::d, prism::operation::syrk, uplo, trans, s[0], s[2])
                                   : prism::problem{prism::scalar_type::d, 'N', 'N', s[0], s[1], s[2]};
    auto L = prism::dist::layout::make(MPI_COMM_WORLD, pr);
    prism::dist::matrix<double> A(L, prism::operand::a), C(L, prism::operand::c);
    A.fill(a_of);
    C.fill([](std::int64_t i, std::int64_t j) { return double((i + j) % 3); });
    if (syrk) {
      prism::dist::syrk(MPI_COMM_WORLD, uplo, trans, 2.0, A, -1.0, C);
    } else {
      prism::dist::matrix<double> B(L, prism::operand::b);
      B.fill(b_of);
      prism::dist::gemm(MPI_COMM_WORLD, L->source(), 2.0, A, B, -1.0, C);
    }
    // op(A)(i, l) and op(B)(l, j) = op(A)(j, l) for a syrk: A is stored m x k ('N') or k x m.
    const auto op_a = [&](std::int64_t i, std::int64_t l) { return !syrk || trans == 'N' ? a_of(i, l) : a_of(l, i); };
    const auto op_b = [&](std::int64_t l, std::int64_t j) { return syrk ? op_a(j, l) : b_of(l, j); };
    std::vector<double> full(rank == 0 ? std::size_t(s[0] * s[1]) : 0);
    C.gather(0, full.data(), s[0]);
    if (rank == 0)
      for (std::int64_t j = 0; j < s[1]; ++j)
        for (std::int64_t i = 0; i < s[0]; ++i) {
          if (syrk && (uplo == 'U' ? i > j : i < j)) continue;  // (gather writes only the triangle)
          double want = -double((i + j) % 3);
          for (std::int64_t l = 0; l < s[2]; ++l) want += 2 * op_a(i, l) * op_b(l, j);
          if (full[std::size_t(i + j * s[0])] != want) {
            if (wrong < 5)
              std::fprintf(stderr, "soak_dist: call %d, %s %lldx%lldx%lld: C(%lld, %lld) = %g, expected %g\n", c,
                           syrk ? "syrk" : "gemm", (long long)s[0], (long long)s[1], (long long)s[2], (long long)i, (long long)j,
                           full[std::size_t(i + j * s[0])], want);
            ++wrong;
            i = s[0], j = s[1];
          }
        }
    if (c % 1000 == 0 || c == calls) {
      long mine = rss_kib();
      std::vector<long> all(static_cast<std::size_t>(size));
      MPI_Gather(&mine, 1, MPI_LONG, all.data(), 1, MPI_LONG, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        rss_rows.insert(rss_rows.end(), all.begin(), all.end());
        secs.push_back(MPI_Wtime() - tb);
        std::printf("soak_dist: %6d calls, %.1f s, RSS KiB:", c, MPI_Wtime() - tb);
        for (long r : all) std::printf(" %ld", r);
        std::printf(", %ld wrong\n", wrong);
        std::fflush(stdout);
      }
      tb = MPI_Wtime();
    }
  }
  int status = 0;
  if (rank == 0) {
    const std::size_t P = std::size_t(size), rows = rss_rows.size() / P;
    double worst = 0;
    for (std::size_t r = 0; r < P; ++r) {
      const double first = double(rss_rows[r]), last = double(rss_rows[(rows - 1) * P + r]);
      worst = std::max(worst, std::abs(last - first) / first * 100);
    }
    const bool ok = wrong == 0 && worst <= 5.0;
    status = ok ? 0 : 1;
    std::printf("soak_dist: %s: %ld wrong, largest RSS drift %.2f%% over %d ranks\n", ok ? "PASS" : "FAIL", wrong, worst, size);
    if (!out.empty()) {
      std::FILE* f = std::fopen(out.c_str(), "w");
      utsname u{};
      uname(&u);
      char when[32];
      const std::time_t now = std::time(nullptr);
      std::strftime(when, sizeof when, "%Y-%m-%dT%H:%MZ", std::gmtime(&now));
      std::fprintf(f, "# Rank-level soak: %d prism::dist::gemm and syrk calls on %d ranks (scripts/soak.sh)\n\n", calls, size);
      std::fprintf(f, "- date: %s\n- machine: %s, %ld CPUs, %s %s\n", when, u.nodename, sysconf(_SC_NPROCESSORS_ONLN),
                   u.sysname, u.release);
      std::fprintf(f, "- environment:");
      for (const char* v : {"PRISM_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                            "MALLOC_MMAP_THRESHOLD_", "MALLOC_ARENA_MAX"})
        std::fprintf(f, " %s=%s,", v, std::getenv(v) != nullptr ? std::getenv(v) : "(unset)");
      std::fprintf(f, " mpiexec --oversubscribe\n");
      std::fprintf(f, "- shapes: double, gemm NN, 40 recurring m, n <= 96, k <= 160 (the layout cache keeps 16), every "
                   "tenth call a fresh one m, n <= 128, k <= 256; every third call a syrk of m x k (n = m; uplo U "
                   "or L, trans N or T); calls 1-12 the largest, 128 x 128 x 256, in every variant (what a process loads once, "
                   "such as a leaf library, before the first checkpoint); each C checked exactly on rank 0; %.0f s in all\n\n",
                   MPI_Wtime() - t0);
      std::fprintf(f, "| calls | seconds |");
      for (int r = 0; r < size; ++r) std::fprintf(f, " rank %d RSS KiB |", r);
      std::fprintf(f, "\n|---:|---:|");
      for (int r = 0; r < size; ++r) std::fprintf(f, "---:|");
      std::fprintf(f, "\n");
      for (std::size_t row = 0; row < rows; ++row) {
        std::fprintf(f, "| %zu | %.1f |", std::min<std::size_t>((row + 1) * 1000, std::size_t(calls)), secs[row]);
        for (std::size_t r = 0; r < P; ++r) std::fprintf(f, " %ld |", rss_rows[row * P + r]);
        std::fprintf(f, "\n");
      }
      std::fprintf(f, "\nResult: %s — %ld wrong results; the largest change of a rank's RSS from call %d to call %d is "
                   "%.2f%% (limit 5%%).\n", ok ? "PASS" : "FAIL", wrong, std::min(1000, calls), calls, worst);
      std::fclose(f);
    }
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
