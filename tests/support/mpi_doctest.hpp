// tests/support/mpi_doctest.hpp — what the MPI test programs share: this rank and the
// communicator's size, a one-thread context (the tests oversubscribe), and a main that
// runs doctest on every rank and fails the job when any rank failed.
#pragma once

#include <prism/context.hpp>

#include <doctest/doctest.h>
#include <mpi.h>

namespace prism::test {

/// This process's rank in MPI_COMM_WORLD.
inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

/// MPI_COMM_WORLD's size.
inline int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

/// A context of one thread per rank.
inline context one_thread() {
  context c;
  c.set_threads(1);
  return c;
}

/// MPI_Init_thread (FUNNELED unless `level` says otherwise), doctest on every rank (rank 0
/// prints the banner), the worst verdict over the ranks, MPI_Finalize; returns 1 when any
/// rank failed.
inline int run_mpi_doctest(int argc, char** argv, int level = MPI_THREAD_FUNNELED) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, level, &provided);
  doctest::Context ctx(argc, argv);
  if (world_rank() != 0) ctx.setOption("no-intro", true), ctx.setOption("no-version", true);
  int failed = ctx.run() != 0 ? 1 : 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}

}  // namespace prism::test
