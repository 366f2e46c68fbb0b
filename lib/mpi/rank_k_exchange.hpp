// lib/mpi/rank_k_exchange.hpp — the rank level's executor for rank-k updates (syrk / herk):
// runs a triangle-block scheme (prism/rank_k_model.hpp) over MPI processes on prism's
// native layout, exchanging exactly the messages the model lists.
//
// Per phase, on every process: (1) receive the other holders' pieces of the A cells my
// units read and send mine to the other holders of my cells (each row block's cells land
// in one buffer per block); (2) run each unit with the shared-memory engine (diagonal
// blocks with prism::syrk / herk, the others with prism::gemm) into its block of my
// partial C, beta = 0 the first time, 1 after. At the end: (3) send each other computer of
// a block my partial of its piece, receive theirs of mine, and add all, in rank order, to
// beta C (herk: the diagonal's imaginary parts set to zero, as reference ?herk).
// Failures agree as in rank_exchange (lib/mpi/messages.hpp): after the buffers and after
// each phase's products. C is untouched when the buffers failed, undefined otherwise.
#pragma once

#include <prism/context.hpp>
#include <prism/rank_k_model.hpp>
#include <prism/types.hpp>

#include "messages.hpp"

#include <mpi.h>

namespace prism::mpi {

/// Runs C = alpha op(A) op(A)^T (^H for herk) + beta C on the uplo triangle over comm
/// (process p = rank p; processes past m.ranks() only take part in the agreements), on
/// this process's pieces A and C. alpha != 0, k > 0 (the callers handle quick returns).
/// herk: alpha and beta real. Throws local_failure on every process when any failed.
template <scalar T>
void run_rank_k(const rank_k_model& m, MPI_Comm comm, T alpha, const T* A, T beta, T* C, const context& ctx,
                const buffer_source& buffers, exchange_counts& counts);

}  // namespace prism::mpi
