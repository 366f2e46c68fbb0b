// lib/mpi/comm.cpp — see comm.hpp.
#include "comm.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
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

namespace {

thread_local std::int64_t tally = 0;

// Adds one collective's bytes (count elements of type) to this thread's control counts.
void count_control(std::int64_t elements, MPI_Datatype type) {
  int size = 0;
  MPI_Type_size(type, &size);
  tally += elements * size;
}

// MPI_Allreduce, counted in control_traffic(); throws prism::error when MPI fails.
void control_allreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  check_mpi(MPI_Allreduce(in, out, count, type, op, comm), "MPI_Allreduce");
  count_control(count, type);
}

}  // namespace

std::int64_t control_traffic() { return tally; }

void control_bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  check_mpi(MPI_Bcast(buffer, count, type, root, comm), "MPI_Bcast");
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  count_control(rank == root ? 0 : count, type);
}

// E.g. {m, n}, rank 2 passing n = 5 (the others 4) and rank 1 a local error: every rank finds
// differing = 1, differing_rank = 2, rank0_value 4, other_value 5, failed_rank = 1 with its text.
agreement find_disagreement(MPI_Comm comm, const std::vector<agreed>& args, const std::string& local_error,
                            const std::int64_t* root_word, bool flag) {
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  const std::size_t n = args.size();
  // One MPI_MIN: each value's least and (negated) greatest, the worst local verdict, and rank
  // 0's root word (the others pass INT64_MAX). Least = greatest everywhere, no error: agreed.
  std::vector<std::int64_t> mine(2 * n + (root_word != nullptr ? 2 : 1)), low(mine.size());
  for (std::size_t i = 0; i < n; ++i) {
    mine[i] = args[i].value;
    // -(v) overflows for INT64_MIN: ~v is -(v) - 1, as order-reversing and total.
    mine[n + i] = ~args[i].value;
  }
  mine[2 * n] = !local_error.empty() ? -2 : flag ? -1 : 0;  // the least: an error, else a flag, else neither
  if (root_word != nullptr) mine[2 * n + 1] = rank == 0 ? *root_word : INT64_MAX;
  control_allreduce(mine.data(), low.data(), int(mine.size()), MPI_INT64_T, MPI_MIN, comm);
  agreement out;
  if (root_word != nullptr) out.from_root = low[2 * n + 1];
  out.flagged = low[2 * n] == -1;
  bool same = low[2 * n] > -2;
  for (std::size_t i = 0; i < n && same; ++i) same = low[i] == ~low[n + i];
  if (same) return out;
  // Someone disagrees: gather every rank's values and the first 200 bytes of each local
  // error, so every rank names the same argument and rank.
  constexpr std::size_t text = 200;
  std::vector<std::int64_t> row(n + 1 + text / 8 + 1, 0);
  for (std::size_t i = 0; i < n; ++i) row[i] = args[i].value;
  row[n] = local_error.empty() ? 0 : 1;
  std::memcpy(&row[n + 1], local_error.data(), std::min(local_error.size(), text));
  std::vector<std::int64_t> all(row.size() * std::size_t(size));
  check_mpi(MPI_Allgather(row.data(), int(row.size()), MPI_INT64_T, all.data(), int(row.size()), MPI_INT64_T, comm), "MPI_Allgather");
  count_control(std::int64_t(size - 1) * std::int64_t(row.size()), MPI_INT64_T);  // (P - 1) rows reach each rank
  auto at = [&](int r, std::size_t i) { return all[std::size_t(r) * row.size() + i]; };
  for (std::size_t i = 0; i < n && out.differing < 0; ++i)
    for (int r = 1; r < size; ++r)
      if (at(r, i) != at(0, i)) {
        out.differing = int(i), out.differing_rank = r, out.rank0_value = at(0, i), out.other_value = at(r, i);
        break;
      }
  for (int r = 0; r < size && out.failed_rank < 0; ++r)
    if (at(r, n) != 0) {
      char buf[text + 1] = {};
      std::memcpy(buf, &all[std::size_t(r) * row.size() + n + 1], text);
      out.failed_rank = r, out.failed_text = buf;
    }
  return out;
}

std::int64_t agree(MPI_Comm comm, const char* routine, const std::vector<agreed>& args, const std::string& local_error,
                   const std::int64_t* root_word, bool* flag) {
  const agreement a = find_disagreement(comm, args, local_error, root_word, flag != nullptr && *flag);
  if (flag != nullptr) *flag = a.flagged;
  // A rank's own complaint first: a rank that cannot make the call may pass values that
  // mean nothing (e.g. no plan to hash).
  if (a.failed_rank >= 0)
    throw invalid_argument(routine, "rank " + std::to_string(a.failed_rank), 0, "rejected the call: " + a.failed_text);
  if (a.differing >= 0) {
    const agreed& x = args[std::size_t(a.differing)];
    const auto shown = [&](std::int64_t v) {  // a scalar as its number, e.g. "2" rather than 4611686018427387904
      if (!x.scalar) return std::to_string(v);
      double d;
      std::memcpy(&d, &v, sizeof d);
      char text[32];
      std::snprintf(text, sizeof text, "%.17g", d);
      return std::string(text);
    };
    throw invalid_argument(routine, x.name, x.position,
                           "differs between ranks: rank 0 passed " + shown(a.rank0_value) + ", rank " +
                               std::to_string(a.differing_rank) + " passed " + shown(a.other_value));
  }
  return a.from_root;
}

// The two reductions' own bytes are known before they run, so the control figure reduced
// already holds them (what a PMPI counter sees the call receive besides the exchange).
call_stats reduce_call_stats(MPI_Comm comm, std::vector<double> values, std::int64_t control_at_start) {
  const std::size_t n = values.size();
  const std::int64_t own = 2 * std::int64_t((n + 2) * sizeof(double));
  const double control = double(tally - control_at_start + own);
  values.push_back(control);
  values.push_back(-control);  // its greatest negation: the least
  call_stats out;
  out.max.resize(n + 2), out.sum.resize(n + 2);
  control_allreduce(values.data(), out.max.data(), int(n + 2), MPI_DOUBLE, MPI_MAX, comm);
  control_allreduce(values.data(), out.sum.data(), int(n + 2), MPI_DOUBLE, MPI_SUM, comm);
  out.control_max = out.max[n], out.control_min = -out.max[n + 1];
  out.max.resize(n), out.sum.resize(n);
  return out;
}

int attribute_key(MPI_Comm_delete_attr_function* del) {
  int k = MPI_KEYVAL_INVALID;
  check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del, &k, nullptr), "MPI_Comm_create_keyval");
  return k;
}

void* attribute(MPI_Comm comm, int key) {
  void* value = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(comm, key, &value, &found), "MPI_Comm_get_attr");
  return found ? value : nullptr;
}

void agree_local_step(MPI_Comm comm, int me, const std::string& why, bool c_untouched) {
  int mine = why.empty() ? INT_MAX : me, lowest = INT_MAX;
  control_allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm);
  if (lowest == INT_MAX) return;
  const std::string c = c_untouched ? "C untouched" : "C undefined";
  if (lowest == me)
    throw local_failure(true, "process " + std::to_string(me) + "'s local step failed: " + why + "; " + c);
  throw local_failure(false, "process " + std::to_string(lowest) + "'s local step failed (its own message says why); " + c);
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
