// lib/recursive/temporaries.hpp — the size of a k-cut temporary C', in one place: the
// planner (memory cap), the plan (workspace layout) and the executor (addresses) must
// agree on it, or concurrently written temporaries would overlap.
#pragma once

#include <prism/plan.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>

namespace prism::detail {

/// Every temporary starts on a cache line.
inline constexpr std::size_t temp_alignment = 64;

/// Bytes of one m x n temporary of `elem`-byte elements, rounded up to a cache line, e.g.
/// 64 x 64 doubles: 32768. SIZE_MAX (never fits) when the size overflows.
inline std::size_t temp_bytes(std::int64_t m, std::int64_t n, std::size_t elem) {
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  std::size_t mn = 0, bytes = 0;
  if (__builtin_mul_overflow(std::size_t(m), std::size_t(n), &mn) || __builtin_mul_overflow(mn, elem, &bytes) ||
      bytes > none - temp_alignment)
    return none;
  return (bytes + temp_alignment - 1) / temp_alignment * temp_alignment;
}

/// Bytes of the temporaries node nd allocates itself at its workspace offset: f - 1
/// partial products C' of its m x n block for a k-cut BFS at numa or thread level (parts
/// 1.. write one each, part 0 writes C); else 0. A rank-level step holds none here: its
/// blocks and exchange buffers are sized by the rank model (prism/rank_model.hpp) and
/// allocated by prism::dist. SIZE_MAX when it overflows.
inline std::size_t node_temp_bytes(const node& nd, std::size_t elem) {
  if (nd.kind != step_kind::bfs || nd.cut != dim::k || nd.where == level::rank) return 0;
  const std::size_t t = temp_bytes(nd.shape.m, nd.shape.n, elem);
  if (t == std::numeric_limits<std::size_t>::max() || t > std::numeric_limits<std::size_t>::max() / nd.parts.size())
    return std::numeric_limits<std::size_t>::max();
  return (nd.parts.size() - 1) * t;
}

/// Byte offset of part c's C' (c >= 1) from nd's workspace offset, in the layout
/// node_temp_bytes sizes: e.g. a d-type 64 x 64 k-cut's part 2 starts at 32768.
inline std::size_t temp_offset(const node& nd, std::size_t c, std::size_t elem) {
  return (c - 1) * temp_bytes(nd.shape.m, nd.shape.n, elem);
}

}  // namespace prism::detail
