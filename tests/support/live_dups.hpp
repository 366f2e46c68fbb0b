// tests/support/live_dups.hpp — the communicators made by MPI_Comm_dup and not yet freed, by
// whoever made them (prism, BLACS), through the profiling interface: these definitions
// replace MPI's for every library of the executable. Include it in one source file of a
// test executable.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <mutex>
#include <vector>

/// Every MPI_Comm_dup result not yet given to MPI_Comm_free (read while no other thread
/// calls MPI; written under live_dups_lock).
static std::vector<MPI_Comm> live_dups;
static std::mutex live_dups_lock;

extern "C" int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* out) {
  const int rc = PMPI_Comm_dup(comm, out);
  const std::lock_guard<std::mutex> hold(live_dups_lock);
  if (rc == MPI_SUCCESS) live_dups.push_back(*out);
  return rc;
}

/// MPI_Comm_free calls made on a thread other than the main one.
static int frees_off_main = 0;

extern "C" int MPI_Comm_free(MPI_Comm* comm) {
  int main_thread = 0;
  PMPI_Is_thread_main(&main_thread);
  {
    const std::lock_guard<std::mutex> hold(live_dups_lock);  // (not held in MPI: its attribute
    frees_off_main += main_thread ? 0 : 1;                     // callbacks may free more)
    live_dups.erase(std::remove(live_dups.begin(), live_dups.end(), *comm), live_dups.end());
  }
  return PMPI_Comm_free(comm);
}
