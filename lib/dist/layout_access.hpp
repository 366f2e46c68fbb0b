// lib/dist/layout_access.hpp — the library's own access to a layout's internals (its
// constructor and its kept buffers), which the public header keeps private.
#pragma once

#include <prism/dist.hpp>

#include <cstddef>
#include <memory>

namespace prism::dist::detail {

/// Friend of prism::dist::layout: what lib/dist uses and users do not.
struct layout_access {
  /// A new layout of plan p on the library's communicator `own`.
  static std::shared_ptr<const layout> make(MPI_Comm own, int rank, int size, plan p, std::unique_ptr<rank_choice> why) {
    return std::shared_ptr<const layout>(new layout(own, rank, size, std::move(p), std::move(why)));
  }
  /// A new rank-k layout of problem p under scheme s on the library's communicator `own`.
  static std::shared_ptr<const layout> make_rank_k(MPI_Comm own, int rank, int size, const problem& p,
                                                   const rank_k_scheme& s, std::unique_ptr<rank_k_choice> why) {
    return std::shared_ptr<const layout>(new layout(own, rank, size, p, s, std::move(why)));
  }
  /// The layout's kept buffers, at least `bytes`.
  static std::byte* buffers(const layout& l, std::size_t bytes) { return l.buffers(bytes); }
  /// Bytes of those buffers allocated so far.
  static std::size_t buffer_bytes(const layout& l) { return l.buffer_bytes(); }
};

}  // namespace prism::dist::detail
