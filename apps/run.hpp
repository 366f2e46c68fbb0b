// apps/run.hpp — the `prism run` command (MPI builds only): see run.cpp.
#pragma once

#include <prism/context.hpp>
#include <prism/types.hpp>

#include <cstdint>

namespace prism_app {

/// What `prism run` was asked for.
struct run_options {
  prism::problem p;            ///< shape, type, trans
  prism::context ctx;          ///< threads per rank, memory per rank, rates
  int reps = 3;                ///< timed calls (the best is reported)
  bool check = false;          ///< verify C after the timed calls
  bool json = false;           ///< one JSON line instead of text
  bool threads_given = false;  ///< --threads given (else cores / ranks per node)
  double beta = 0.5;           ///< beta of the multiply (alpha is 1)
  std::uint64_t seed = 1;      ///< generator seed
};

/// Initialises MPI (MPI_THREAD_FUNNELED), runs, finalises; returns the exit status
/// (the worst over ranks: 0 fine, 1 a failed check or error, 2 no plan).
int run_distributed(run_options o);

}  // namespace prism_app
