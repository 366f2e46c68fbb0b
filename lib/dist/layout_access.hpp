// lib/dist/layout_access.hpp — the library's own access to a layout's internals (its
// constructor and its kept buffers), which the public header keeps private.
#pragma once

#include <prism/dist.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace prism::dist::detail {

/// Friend of prism::dist::layout: what lib/dist uses and users do not.
struct layout_access {
  /// A new layout of model m on the library's communicator `own`, agreed by `hash`.
  static std::shared_ptr<const layout> make(MPI_Comm own, int rank, int size, rank_model m, std::string report,
                                            std::int64_t hash) {
    return std::shared_ptr<const layout>(new layout(own, rank, size, std::move(m), std::move(report), hash));
  }
  /// The layout's kept buffers, at least `bytes`.
  static std::byte* buffers(const layout& l, std::size_t bytes) { return l.buffers(bytes); }
  /// Bytes of the layout's kept buffers.
  static std::size_t buffer_bytes(const layout& l) { return l.buffer_bytes(); }
};

/// The part of a gemm, syrk or herk call after its arguments are agreed (gemm.cpp): C =
/// beta C when k = 0 or alpha = 0 (herk: the diagonal made real), else the schedule run on
/// the native layout; t gets the counts and (PRISM_STATS) the memory; returns the values
/// PRISM_STATS's line reduces (received, messages, seconds, memory, predicted memory).
template <scalar T>
std::vector<double> run_native(const layout& L, T alpha, const T* A, const T* B, T beta, matrix<T>& C, const context& ctx,
                               traffic& t);

/// The counts prism::dist::syrk / herk leave for last_traffic.
void set_last_traffic(const traffic& t);

}  // namespace prism::dist::detail
