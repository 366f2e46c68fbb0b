// lib/recursive/split.hpp — how an edge is cut into parts: one rule for every level (the
// rank planner, the numa, thread and cache levels), so parts start on aligned boundaries
// and shares are honoured the same way everywhere.
#pragma once

#include <prism/types.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace prism::detail {

// Preferred split granularity along each edge, so parts start on SIMD/cache boundaries:
// m (the contiguous edge of C, and of A when not transposed): one 64-byte line, e.g. 8
// doubles; n: 8 columns (a multiple of every BLAS kernel's n-unroll); k: 256, the order of
// the kernels' k-blocking. Halved while the edge is too short for two aligned parts.
inline std::int64_t alignment(dim d, scalar_type t, std::int64_t ext) {
  std::int64_t a = d == dim::m ? std::int64_t(64 / element_size(t)) : d == dim::n ? 8 : 256;
  while (a > 1 && ext < 2 * a) a /= 2;
  return a;
}

// Size of the first of two parts when `ext` is shared in the ratio share : (total - share),
// rounded to a multiple of `a` and kept inside [1, ext - 1]. Nothing is ever dropped: the
// second part is ext minus the first. The alignment is halved while rounding would move the
// split by more than ext / slack (32 unless given), so alignment never costs more than ~3%
// of balance.
// Example: ext = 16777216 (k), shares 1 of 3, a = 256: 16777216/3 = 5592405.3, nearest
// multiple of 256 is 5592320 (off by 85 <= 524288), so parts are 5592320 and 11184896.
// Example: ext = 384 (k), shares 1 of 2, a = 128: 192 would round to 256 (off by 64 > 12),
// a = 64 gives 192 exactly, so parts are 192 and 192 (not 256 and 128, which ran at 0.75x).
inline std::int64_t first_part(std::int64_t ext, int share, int total, std::int64_t a, int slack = 32) {
  // The multiple of a nearest ext share / total, halves up, in integers: floor((2 ext share
  // + total a) / (2 total a)) a (a long double's conversion to an integer stalls on x86).
  const auto nearest = [&](std::int64_t step) {
    const __int128 den = __int128(total) * step;
    return std::int64_t((2 * __int128(ext) * share + den) / (2 * den)) * step;
  };
  const long double exact = (long double)ext * share / total;
  std::int64_t s = nearest(a);
  while (a > 1 && std::fabs((long double)s - exact) > (long double)ext / slack) {
    a /= 2;
    s = nearest(a);
  }
  return std::clamp<std::int64_t>(s, 1, ext - 1);
}

// Sizes of the parts of an edge `ext` shared out in the ratio of `shares`: boundary c sits
// where first_part puts the first of two parts holding shares[0..c) of the total, so a
// two-part split is exactly first_part's. Example: ext = 3000 (k), shares 4:2:4, a = 256:
// boundaries at 1200 -> 1280 (off 80 <= 93.75) and 1800 -> 1792, sizes 1280, 512, 1208.
// A part can come out empty when ext is short; callers check.
inline std::vector<std::int64_t> split(std::int64_t ext, const std::vector<int>& shares, std::int64_t a,
                                       int slack = 32) {
  const int total = std::accumulate(shares.begin(), shares.end(), 0);
  std::vector<std::int64_t> sizes;
  std::int64_t prev = 0;
  int cum = 0;
  for (std::size_t c = 0; c + 1 < shares.size(); ++c) {
    cum += shares[c];
    const std::int64_t boundary = std::max(prev, first_part(ext, cum, total, a, slack));
    sizes.push_back(boundary - prev);
    prev = boundary;
  }
  sizes.push_back(ext - prev);
  return sizes;
}

}  // namespace prism::detail
