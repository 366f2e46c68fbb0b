// lib/dist/layout_access.hpp — the library's own access to a layout's internals (its
// constructor and its kept buffers), which the public header keeps private.
#pragma once

#include <prism/dist.hpp>

#include "../mpi/rank_exchange.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace prism::dist::detail {

/// Friend of prism::dist::layout: what lib/dist uses and users do not.
struct layout_access {
  /// A new layout of model m on the library's communicator `own` (shared with the
  /// communicator's cache: freed with the last holder), agreed by `hash`.
  static std::shared_ptr<const layout> make(std::shared_ptr<const MPI_Comm> own, int rank, int size, rank_model m, std::string report,
                                            std::int64_t hash) {
    return std::shared_ptr<const layout>(new layout(std::move(own), rank, size, std::move(m), std::move(report), hash));
  }
  /// The layout's blocks and exchange buffers, at least `bytes`, kept for its later calls.
  static std::byte* buffers(const layout& l, std::size_t bytes) { return mpi::kept_buffer(l.buffers_, l.buffer_bytes_, bytes); }
  /// Bytes of the layout's kept buffers.
  static std::size_t buffer_bytes(const layout& l) { return l.buffer_bytes_; }
  /// The library's duplicate of comm, made by an earlier layout::make on it, or
  /// MPI_COMM_NULL (none made: this looks and never duplicates).
  static MPI_Comm library_comm(MPI_Comm comm);
};

/// Frees the library's duplicates whose last holder went on a thread that may not call MPI
/// (MPI_THREAD_FUNNELED or SERIALIZED, not the main thread); called where MPI may be called.
void free_orphans();

}  // namespace prism::dist::detail
