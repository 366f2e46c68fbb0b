// lib/mpi/rank_exchange.hpp — the rank level's one executor: a schedule run over MPI processes
// under any ownership by the one exchange rule (lib/ranks/ownership.hpp; docs/distributed.md
// "Execution"); failed local steps agreed as docs/development.md "Faults across ranks" says.
#pragma once

#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/types.hpp>

#include "../ranks/ownership.hpp"
#include "comm.hpp"

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace prism::mpi {

/// What this process moved in one executed call (exact, from the MPI statuses).
struct exchange_counts {
  std::int64_t bytes_received = 0, bytes_sent = 0;        ///< bytes
  std::int64_t messages_received = 0, messages_sent = 0;  ///< messages (a split one counts once)
  std::size_t buffer_bytes = 0;                           ///< bytes asked of `buffers`
};

/// Gives at least `bytes` of 16-byte-aligned scratch memory, kept by the caller.
using buffer_source = std::function<std::byte*(std::size_t bytes)>;

/// A buffer_source's memory kept between calls (`mem`, `have` bytes), grown to `bytes` when
/// needed: the old one freed first, none kept if the allocation throws; uninitialised.
inline std::byte* kept_buffer(std::unique_ptr<std::byte[]>& mem, std::size_t& have, std::size_t bytes) {
  if (bytes > have) {
    mem.reset();
    have = 0;
    mem.reset(new std::byte[bytes]);
    have = bytes;
  }
  return mem.get();
}

/// Runs the schedule of `own` over comm (collective, every process, also those without a rank):
/// C = alpha op(A) op(B) + beta C on this process's storage (rank-k: B unused); alpha != 0, k > 0.
/// Throws local_failure on every process when a local step failed on any.
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
