// lib/recursive/temporaries.hpp — the size of a k-cut temporary C', in one place: the
// planner (memory cap), the plan (workspace layout) and the executor (addresses) must
// agree on it, or concurrently written temporaries would overlap.
#pragma once

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

}  // namespace prism::detail
