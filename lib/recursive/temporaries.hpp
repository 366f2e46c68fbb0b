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

/// Bytes of a packed triangle of an n x n block (n(n+1)/2 elements), rounded up to a cache
/// line: where a device gathers a triangle before writing it into C (e.g. n = 32 doubles: 4224).
inline std::size_t packed_triangle_bytes(std::int64_t n, std::size_t elem) {
  return temp_bytes(n * (n + 1) / 2, 1, elem);
}

/// Bytes of the temporaries node nd allocates itself at its workspace offset: f - 1
/// partial products C' of its m x n block for a k-cut BFS at numa, thread or gpu level
/// (parts 1.. write one each, part 0 writes C); else 0. A rank-level step holds none here:
/// its blocks and exchange buffers are sized by the rank model (prism/rank_model.hpp) and
/// allocated by prism::dist. In a plan whose operands are on the device (`on_device`), the
/// workspace is device memory, a triangle's k cut adds a packed triangle after its C', and a
/// triangle leaf has scratch of its own: its whole n x n block, then a packed triangle (a
/// 32 x 32 double triangle leaf: 8192 + 4224 bytes). SIZE_MAX when it overflows.
inline std::size_t node_temp_bytes(const node& nd, std::size_t elem, bool on_device = false) {
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  if (on_device && nd.kind == step_kind::leaf && nd.triangle != 0) {
    const std::size_t block = temp_bytes(nd.shape.n, nd.shape.n, elem), packed = packed_triangle_bytes(nd.shape.n, elem);
    return block == none || packed == none || block > none - packed ? none : block + packed;
  }
  if (nd.kind != step_kind::bfs || nd.cut != dim::k || nd.where == level::rank) return 0;
  const std::size_t t = temp_bytes(nd.shape.m, nd.shape.n, elem);
  if (t == none || t > none / nd.parts.size()) return none;
  const std::size_t parts = (nd.parts.size() - 1) * t;
  if (!on_device || nd.triangle == 0) return parts;
  const std::size_t packed = packed_triangle_bytes(nd.shape.n, elem);
  return packed == none || parts > none - packed ? none : parts + packed;
}

/// Byte offset of part c's C' (c >= 1) from nd's workspace offset, in the layout
/// node_temp_bytes sizes: e.g. a d-type 64 x 64 k-cut's part 2 starts at 32768.
inline std::size_t temp_offset(const node& nd, std::size_t c, std::size_t elem) {
  return (c - 1) * temp_bytes(nd.shape.m, nd.shape.n, elem);
}

}  // namespace prism::detail
