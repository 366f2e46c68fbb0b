// lib/mpi/rank_exchange.hpp — the rank level's one executor: runs a plan over MPI processes
// under any ownership (lib/ranks/ownership.hpp: prism's native layout or the caller's
// block-cyclic one), exchanging exactly the messages the exchange rule lists.
//
// Per phase, on every process:
//  (1) post the receives of the parts of my block of A and B that others hold, pack and
//      send my parts of the blocks other ranks need, copy my own part into my block;
//  (2) unpack the messages into my blocks and run my rank's local subtree (the shared-
//      memory engine) into my block of C with beta = 0;
//  (3) send each holder of part of my block of C my partial of that part, receive the
//      partials of the C elements I hold, and add them, in plan-rank order, to beta C.
// beta C is formed once before the first phase (beta = 0: zeros, C unread), except when a
// one-phase plan's C block is wholly mine and nobody else adds to anything I hold: then
// the local engine writes my storage with beta. A block wholly mine as one tile is used
// where it lies (ld = its lld), not copied. Only the calling thread calls MPI.
//
// A local step that fails on one process (its buffers cannot be allocated, its subtree
// throws) is agreed before the next exchange, by one MPI_Allreduce after the buffers and
// one after each phase's subtree: every process then throws local_failure naming the
// lowest failing process, so none is left waiting. C is untouched when the buffers failed
// (beta C is formed after them), undefined when a subtree failed.
#pragma once

#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/types.hpp>

#include "../ranks/ownership.hpp"
#include "messages.hpp"

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace prism::mpi {

/// Runs C = alpha op(A) op(B) + beta C over comm (process p = comm rank p) on storage
/// laid out as `own` says; A, B, C are this process's storage. Collective. alpha != 0,
/// k > 0 (the callers handle the quick returns). Every process of comm calls it, also
/// those without a rank in the plan. Throws local_failure on every process when a local
/// step failed on any (see the header).
template <scalar T>
void run_exchange(const ranks::ownership& own, MPI_Comm comm, T alpha, const T* A, const T* B, T beta, T* C,
                  const context& ctx, const buffer_source& buffers, exchange_counts& counts);

/// C = beta C on the tiles given (beta = 0: zeros, C unread; beta = 1: nothing).
template <scalar T>
void scale_tiles(const std::vector<ranks::tile>& tiles, T beta, T* C);

}  // namespace prism::mpi
