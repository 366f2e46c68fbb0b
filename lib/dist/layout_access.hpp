// lib/dist/layout_access.hpp — the library's own access to a layout's internals (its
// constructor and its kept buffers), which the public header keeps private.
#pragma once

#include <prism/dist.hpp>

#include "../mpi/comm.hpp"

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace prism::dist::detail {

/// Friend of prism::dist::layout: what lib/dist uses and users do not.
struct layout_access {
  /// A new layout of model m on the library's communicator `own` (shared with the
  /// communicator's cache: freed with the last holder), agreed by `hash`.
  static std::shared_ptr<const layout> make(std::shared_ptr<const MPI_Comm> own, int rank, int size, rank_model m, std::string report,
                                            std::int64_t hash) {
    return std::shared_ptr<const layout>(new layout(std::move(own), rank, size, std::move(m), std::move(report), hash));
  }
  /// The layout's kept buffers, at least `bytes`.
  static std::byte* buffers(const layout& l, std::size_t bytes) { return l.buffers(bytes); }
  /// Bytes of the layout's kept buffers.
  static std::size_t buffer_bytes(const layout& l) { return l.buffer_bytes(); }
  /// The library's duplicate of comm, made by an earlier layout::make on it, or
  /// MPI_COMM_NULL (none made: this looks and never duplicates).
  static MPI_Comm library_comm(MPI_Comm comm);
};

/// Frees the library's duplicates whose last holder went on a thread that may not call MPI
/// (MPI_THREAD_FUNNELED or SERIALIZED, not the main thread); called where MPI may be called.
void free_orphans();

/// A gemm, syrk or herk call (`values`: how many arguments it agrees) where some of this
/// rank's matrices have no layout: throws invalid_argument on every rank, through the
/// call's agreement over the communicator the others agree over in native_call: that of
/// `other`, a layout one of its matrices has, else the library's duplicate of comm (on this
/// rank alone when neither exists).
[[noreturn]] void no_layout(MPI_Comm comm, const char* routine, std::size_t values, const layout* other);

/// The layout whose communicator a call agrees over, of its matrices' layouts `ls` (A's
/// first): the communicator two of them share when the third is the odd one out, else the
/// one that is the library's duplicate of the call's `comm` (the same on every rank), else
/// A's. Example: on one rank gemm's A comes from a layout on another communicator; that rank
/// agrees with the others, over B's and C's, and every rank throws; so for syrk's A (or C)
/// when C's (A's) communicator is comm's.
const layout& agreement_layout(MPI_Comm comm, std::initializer_list<const layout*> ls);

/// The rest of a gemm, syrk or herk call on the native layout (gemm.cpp), every rank alike,
/// once it has checked what only it can see (`local`: its complaint, or ""): comm checked
/// against L's, the arguments `args` agreed under `routine`, C = beta C when k = 0 or alpha
/// = 0 (herk: the diagonal made real), else the schedule run; last_traffic() gets the
/// counts, and with PRISM_STATS rank 0 calls `line` with the counts reduced over the ranks.
template <scalar T>
void native_call(MPI_Comm comm, const layout& L, const char* routine, const std::vector<mpi::agreed>& args, std::string local,
                 T alpha, const T* A, const T* B, T beta, matrix<T>& C, const context& ctx,
                 const std::function<void(const mpi::call_stats&)>& line);

}  // namespace prism::dist::detail
