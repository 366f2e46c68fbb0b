// lib/mpi/messages.cpp — see messages.hpp.
#include "messages.hpp"

#include <climits>

namespace prism::mpi {

const test_fault& fault_hook() { return detail::process_environment().fault.get(); }

int lowest_failed(MPI_Comm comm, int me, bool failed) {
  int mine = failed ? me : INT_MAX, lowest = INT_MAX;
  control_allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm);
  return lowest == INT_MAX ? -1 : lowest;
}

void throw_if_failed(int lowest, int me, const std::string& mine, bool c_untouched) {
  if (lowest < 0) return;
  const std::string c = c_untouched ? "C untouched" : "C undefined";
  if (lowest == me)
    throw local_failure(lowest, true, c_untouched, "process " + std::to_string(me) + "'s local step failed: " + mine + "; " + c);
  throw local_failure(lowest, false, c_untouched,
                      "process " + std::to_string(lowest) + "'s local step failed (its own message says why); " + c);
}

}  // namespace prism::mpi
