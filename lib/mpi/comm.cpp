// lib/mpi/comm.cpp — see comm.hpp.
#include "comm.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace prism::mpi {


void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw error(std::string("prism::dist: ") + what + " failed: " + std::string(text, std::size_t(len)));
}

void wait_all(std::vector<MPI_Request>& requests, std::vector<MPI_Status>& statuses) {
  statuses.resize(requests.size());
  if (requests.empty()) return;
  int done = 0, spins = 0;
  auto nap = std::chrono::microseconds(1);
  for (;;) {
    check_mpi(MPI_Testall(int(requests.size()), requests.data(), &done, statuses.data()), "MPI_Testall");
    if (done) return;
    if (++spins < 64) continue;  // a message in flight usually lands within a few polls
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(1000));
  }
}

void agree(MPI_Comm comm, const char* routine, const std::vector<agreed>& args, const std::string& local_error) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  const std::size_t n = args.size();
  // First a reduction: the least and the greatest of each value (the greatest negated, so
  // one MPI_MIN does both) and whether any rank saw a local error. Equal least and
  // greatest everywhere, and no error: every rank agrees, whatever P.
  std::vector<std::int64_t> mine(2 * n + 1), low(2 * n + 1);
  for (std::size_t i = 0; i < n; ++i) {
    mine[i] = args[i].value;
    // -(v) overflows for INT64_MIN: ~v is -(v) - 1, as order-reversing and total.
    mine[n + i] = ~args[i].value;
  }
  mine[2 * n] = local_error.empty() ? 0 : -1;
  check_mpi(MPI_Allreduce(mine.data(), low.data(), int(mine.size()), MPI_INT64_T, MPI_MIN, comm), "MPI_Allreduce");
  bool same = low[2 * n] == 0;
  for (std::size_t i = 0; i < n && same; ++i) same = low[i] == ~low[n + i];
  if (same) return;
  // Someone disagrees: gather every rank's values and the first 200 bytes of each local
  // error, so every rank names the same argument and rank.
  constexpr std::size_t text = 200;
  std::vector<std::int64_t> row(n + 1 + text / 8 + 1, 0);
  for (std::size_t i = 0; i < n; ++i) row[i] = args[i].value;
  row[n] = local_error.empty() ? 0 : 1;
  std::memcpy(&row[n + 1], local_error.data(), std::min(local_error.size(), text));
  std::vector<std::int64_t> all(row.size() * std::size_t(size));
  check_mpi(MPI_Allgather(row.data(), int(row.size()), MPI_INT64_T, all.data(), int(row.size()), MPI_INT64_T, comm),
            "MPI_Allgather");
  auto at = [&](int r, std::size_t i) { return all[std::size_t(r) * row.size() + i]; };
  for (std::size_t i = 0; i < n; ++i)
    for (int r = 1; r < size; ++r)
      if (at(r, i) != at(0, i))
        throw invalid_argument(routine, args[i].name, args[i].position,
                               "differs between ranks: rank 0 passed " + std::to_string(at(0, i)) + ", rank " +
                                   std::to_string(r) + " passed " + std::to_string(at(r, i)));
  for (int r = 0; r < size; ++r)
    if (at(r, n) != 0) {
      char buf[text + 1] = {};
      std::memcpy(buf, &all[std::size_t(r) * row.size() + n + 1], text);
      throw invalid_argument(routine, "rank " + std::to_string(r), 0, std::string("rejected the call: ") + buf);
    }
}

int ranks_per_node(MPI_Comm comm) {
  MPI_Comm local;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
  int n = 1;
  MPI_Comm_size(local, &n);
  MPI_Comm_free(&local);
  return n;
}


}  // namespace prism::mpi
