// tests/test_dist_threads.cpp — prism::dist from several threads of a rank, as hybrid codes
// call it. Under MPI_THREAD_MULTIPLE, threads on their own communicators make their first
// layouts at once (the library's per-communicator cache must be found again: a second
// duplicate made on some ranks only would hang the job; the race this checks for shows in
// most runs as an MPI singleton, fewer under mpiexec) and compute at once, exactly. Under
// MPI_THREAD_SERIALIZED, a matrix dropped on the main thread does not free its communicator
// duplicate there (another thread may be inside MPI): the next distributed call does. The
// thread level is PRISM_TEST_MPI_THREAD's (multiple, the default, or serialized); each case
// requires its own.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <prism/dist.hpp>

#include "support/freed_comm_layout.hpp"
#include "support/mpi_doctest.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <latch>
#include <string>
#include <thread>
#include <vector>

using namespace prism;
using prism::test::one_thread;

namespace {

int thread_level() {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  return level;
}

}  // namespace

TEST_CASE("MPI_THREAD_MULTIPLE: threads on their own communicators make their first layouts at once, find them again, and compute exactly") {
  REQUIRE(thread_level() == MPI_THREAD_MULTIPLE);
  constexpr int threads = 8;
  std::vector<MPI_Comm> comms(threads, MPI_COMM_NULL);
  for (MPI_Comm& c : comms) REQUIRE(PMPI_Comm_dup(MPI_COMM_WORLD, &c) == MPI_SUCCESS);  // the user's, uncounted
  std::latch go(threads);
  std::atomic<int> misses{0}, failures{0};
  std::atomic<long> wrong{0};
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.emplace_back([&, t] {
      try {
        const problem p{scalar_type::d, 'N', 'T', 20 + t, 17 + 2 * t, 31};
        const MPI_Comm comm = comms[std::size_t(t)];
        go.arrive_and_wait();  // every thread's first layout::make at once (the default
        auto L = dist::layout::make(comm, p);  // context's first use holds them, then lets all go)
        if (dist::layout::make(comm, p) != L) ++misses;  // cached: the same layout
        dist::matrix<double> A(L, operand::a), B(L, operand::b), C(L, operand::c);
        A.fill([&](std::int64_t i, std::int64_t j) { return double((i + 2 * j + t) % 5); });
        B.fill([&](std::int64_t i, std::int64_t j) { return double((3 * i + j + t) % 4); });
        dist::gemm(comm, p, 1.0, A, B, 0.0, C);
        // Exact integers: C(i, j) = sum over l of A(i, l) B(j, l) (B stored n x k).
        C.for_each([&](std::int64_t i, std::int64_t j, double& v) {
          double want = 0;
          for (std::int64_t l = 0; l < p.k; ++l) want += double((i + 2 * l + t) % 5) * double((3 * j + l + t) % 4);
          if (v != want) ++wrong;
        });
      } catch (const std::exception&) {
        ++failures;
      }
    });
  for (std::thread& th : running) th.join();
  CHECK(misses == 0);
  CHECK(failures == 0);
  CHECK(wrong == 0);
  for (MPI_Comm& c : comms) PMPI_Comm_free(&c);
}

TEST_CASE("MPI_THREAD_SERIALIZED: a matrix dropped on the main thread leaves its duplicate to the next distributed call") {
  REQUIRE(thread_level() == MPI_THREAD_SERIALIZED);
  const problem p{scalar_type::d, 'N', 'N', 23, 19, 17};
  test::layout_on_freed_comm x(p, one_thread());
  x.matrix.reset();
  x.layout.reset();  // the last holder, on the main thread: another thread may be inside MPI
  CHECK(std::find(live_dups.begin(), live_dups.end(), x.dup) != live_dups.end());
  dist::layout::make(MPI_COMM_WORLD, p, one_thread());  // the next distributed call frees it
  CHECK(std::find(live_dups.begin(), live_dups.end(), x.dup) == live_dups.end());
}

int main(int argc, char** argv) {
  const char* level = std::getenv("PRISM_TEST_MPI_THREAD");
  const bool serialized = level != nullptr && std::string(level) == "serialized";
  return prism::test::run_mpi_doctest(argc, argv, serialized ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE);
}
