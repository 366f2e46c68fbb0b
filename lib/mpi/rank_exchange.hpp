// lib/mpi/rank_exchange.hpp — the rank level's one executor: runs a schedule (gemm, syrk,
// herk; lib/ranks/schedule.hpp) over MPI processes under any ownership (lib/ranks/
// ownership.hpp: prism's native layout or the caller's block-cyclic one), exchanging
// exactly the messages the exchange rule lists.
//
// Per phase, on every process:
//  (1) gather: post the receives of the parts of my regions of A and B that others hold,
//      pack and send my parts of the regions other ranks need, copy my own parts;
//  (2) compute: run my tasks into my C regions (a plan node's local subtree; a block of the
//      triangle: syrk / herk on a diagonal, gemm elsewhere), beta 0 the first time a region
//      is written in its epoch, 1 after;
//  (3) after a reduction: send each holder of part of my C regions my partial of that part,
//      receive the partials of the C elements I hold, and add them, in plan-rank order,
//      to beta C.
// beta C is formed once before the first phase (beta = 0: zeros, C unread), except when a
// one-phase schedule's C regions are all mine in place and nobody else adds to anything I
// hold: then my tasks write my storage with beta. A region wholly mine as one rectangle is
// used where it lies (ld = its lld), not copied. herk: the diagonal of C is made real at
// the end, as reference ?herk does. Only the calling thread calls MPI.
//
// A local step that fails on one process (its buffers cannot be allocated, a task throws)
// is agreed before the next exchange, by one MPI_Allreduce after the buffers and one after
// each phase's tasks: every process then throws local_failure naming the lowest failing
// process, so none is left waiting. C is untouched when the buffers failed (beta C is
// formed after them), undefined when a task failed.
#pragma once

#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/types.hpp>

#include "../ranks/ownership.hpp"
#include "messages.hpp"

#include <mpi.h>

#include <vector>

namespace prism::mpi {

/// Runs the schedule of `own` over comm (process p = comm rank p): C = alpha op(A) op(B) +
/// beta C (a rank-k update: op(A) op(A)^T, ^H for herk, on the uplo triangle, B unused);
/// A, B, C are this process's storage. Collective. alpha != 0, k > 0 (the callers handle
/// the quick returns). Every process of comm calls it, also those without a rank. Throws
/// local_failure on every process when a local step failed on any (see the header).
template <scalar T>
void run_exchange(const ranks::ownership& own, MPI_Comm comm, T alpha, const T* A, const T* B, T beta, T* C,
                  const context& ctx, const buffer_source& buffers, exchange_counts& counts);

/// Im C[d] = 0 for each offset d given (a herk's diagonal; nothing for a real T).
template <scalar T>
void make_real(const std::vector<std::int64_t>& offsets, T* C) {
  if constexpr (is_complex(scalar_type_of<T>()))
    for (std::int64_t d : offsets) C[d] = T(C[d].real());
}

/// C = beta C on the tiles given (beta = 0: zeros, C unread; beta = 1: nothing).
template <scalar T>
void scale_tiles(const std::vector<ranks::tile>& tiles, T beta, T* C);

}  // namespace prism::mpi
