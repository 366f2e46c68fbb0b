// lib/mpi/messages.cpp — see messages.hpp.
#include "messages.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace prism::mpi {

const test_fault& fault_hook() {
  static const test_fault f = [] {
    test_fault t;
    const char* v = std::getenv("PRISM_TEST_FAULT");
    if (v == nullptr || *v == '\0') return t;
    int p = -1;
    char kind[16] = {0};
    if (std::sscanf(v, "rank:%d:%15s", &p, kind) == 2 && p >= 0) {
      t.process = p;
      if (std::strcmp(kind, "alloc") == 0) t.what = test_fault::kind::alloc;
      else if (std::strcmp(kind, "nan") == 0) t.what = test_fault::kind::nan;
      else if (std::strcmp(kind, "stall") == 0) t.what = test_fault::kind::stall;
    }
    if (t.what == test_fault::kind::none) {
      std::fprintf(stderr, "prism: PRISM_TEST_FAULT=%s is not rank:P:alloc|nan|stall; ignored\n", v);
      t.process = -1;
    }
    return t;
  }();
  return f;
}

int lowest_failed(MPI_Comm comm, int me, bool failed) {
  int mine = failed ? me : INT_MAX, lowest = INT_MAX;
  check_mpi(MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
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
