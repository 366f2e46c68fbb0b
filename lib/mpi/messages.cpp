// lib/mpi/messages.cpp — see messages.hpp.
#include "messages.hpp"

#include <climits>

namespace prism::mpi {

void agree_local_step(MPI_Comm comm, int me, const std::string& why, bool c_untouched) {
  int mine = why.empty() ? INT_MAX : me, lowest = INT_MAX;
  control_allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm);
  if (lowest == INT_MAX) return;
  const std::string c = c_untouched ? "C untouched" : "C undefined";
  if (lowest == me)
    throw local_failure(true, "process " + std::to_string(me) + "'s local step failed: " + why + "; " + c);
  throw local_failure(false, "process " + std::to_string(lowest) + "'s local step failed (its own message says why); " + c);
}

}  // namespace prism::mpi
