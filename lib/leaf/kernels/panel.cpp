// lib/leaf/kernels/panel.cpp — the panel kernel: one k-chunk of a real leaf
// above 16 x 16, register tiles of up to 4 vectors by 8 columns over the whole leaf (the
// outer kernel's tiles, outer-inl.h), L in the 'N' form (A itself, or a chunk of A^T the
// pack kernel transposed). The driver: tiling.cpp.
#include "tasks.hpp"

#include <prism/types.hpp>

#include <algorithm>
#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <utility>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "leaf/kernels/panel.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target
#include <hwy/highway.h>
#include <hwy/cache_control.h>
#include "outer-inl.h"

HWY_BEFORE_NAMESPACE();
namespace prism::detail::streaming {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR

template <class R>
void panel(const panel_task& t) {
  plain_panel<R>(t);
}

#else

// Register tiles of the panel kernel: up to panel_vr vectors of rows by panel_tc[VR - 1]
// columns, each a real accumulator per vector and column, plus the VR vectors of L and one
// broadcast. With 32 registers 4 x 6 (24 accumulators: 4 loads and 6 broadcasts a step for
// 24 FMAs) or 3 x 8; with 16 (AVX2) 2 x 6 (12, plus 3).
constexpr int panel_vr = registers == 32 ? 4 : 2;
constexpr std::array<int, 4> panel_tc = registers == 32 ? std::array<int, 4>{8, 8, 8, 6} : std::array<int, 4>{8, 6, 0, 0};

// One chunk of a real leaf above 16 x 16 (panel_task): the rows in blocks of up to
// panel_vr vectors, the columns in pieces of up to panel_tc, each tile one pass over the
// chunk adding its sums into S. Row blocks outer, column pieces inner: a row block of L's
// chunk stays in L1 while the column pieces of R pass over it, so R's chunk is read once
// per row block (for 64 x 64 doubles, 2 blocks of 32 rows with AVX-512, 8 of 8 with AVX2).
// Prefetch: R's columns along k (rl = 1, 'N') one chunk ahead by the first row block's
// tiles, a line per column per line of k (outer_tile's fetch_r); L in place likewise by the
// first piece's tiles (fetch_l); a packed L's next chunk of A (next), its lines spread over
// the tiles in proportion to their work, as the syrk kernel does. Example, 32 x 32 doubles
// 'TN' on AVX-512, 128 steps: one row block of 4 vectors, pieces of 6, 6, 5, 5, 5, 5 columns.
template <class R>
void panel(const panel_task& t) {
  const hn::ScalableTag<R> d;
  const std::int64_t N = std::int64_t(hn::Lanes(d));
  const std::int64_t vectors = (t.rows + N - 1) / N, vr = piece(vectors, panel_vr);
  const std::int64_t tc = piece(t.cols, panel_tc[std::size_t(vr - 1)]);
  static constexpr auto tiles = outer_tiles<R, false, panel_tc, 0>(std::make_integer_sequence<int, outer_vr * 8>{});
  const R* L = static_cast<const R*>(t.L);
  const R* B = static_cast<const R*>(t.R);
  R* S = static_cast<R*>(t.S);
  outer_args<R> g{};
  g.ldl = t.ldl, g.rl = t.rl, g.rj = t.rj, g.len = t.len, g.out_ld = t.lds, g.flip = false, g.ahead = t.ahead;
  const std::int64_t pf_lines = (t.next_rows + N - 1) / N, total_lines = t.next_cols * pf_lines;
  g.pf = t.next != nullptr ? static_cast<const R*>(t.next) : nullptr;
  g.pf_ld = t.next_ld, g.pf_lines = pf_lines, g.pf_cols = t.next_cols;
  std::int64_t fetched = 0;
  const std::int64_t work = vectors * t.cols;
  for (std::int64_t v0 = 0; v0 < vectors; v0 += vr) {
    const int h = int(std::min(vr, vectors - v0));
    for (std::int64_t j0 = 0; j0 < t.cols; j0 += tc) {
      const int wd = int(std::min(tc, t.cols - j0));
      g.last = std::size_t(std::min(t.rows - (v0 + h - 1) * N, N));
      g.L = L + v0 * N, g.B = B + j0 * t.rj, g.out = S + j0 * t.lds + v0 * N;
      g.fetch_r = t.ahead > 0 && t.rl == 1 && v0 == 0;
      g.fetch_l = t.ahead > 0 && t.fetch_l && j0 == 0;
      if (g.pf != nullptr) {  // this tile's share of the next chunk, rounded up
        g.pf_count = std::min(total_lines - fetched, (total_lines * h * wd + work - 1) / work);
        g.pf_col = fetched / pf_lines, g.pf_line = fetched % pf_lines;
        fetched += g.pf_count;
      }
      tiles[std::size_t((h - 1) * 8 + wd - 1)](g);
    }
  }
}

#endif  // HWY_TARGET == HWY_SCALAR

// The exported entry points, one per scalar type.
void panel_s(const panel_task& t) { HWY_NAMESPACE::panel<float>(t); }
void panel_d(const panel_task& t) { HWY_NAMESPACE::panel<double>(t); }

}  // namespace HWY_NAMESPACE
}  // namespace prism::detail::streaming
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace prism::detail::streaming {

HWY_EXPORT(panel_s);
HWY_EXPORT(panel_d);

template <class R>
void panel(const panel_task& t) {
  apply_simd_choice();
  if constexpr (std::same_as<R, float>) HWY_DYNAMIC_DISPATCH(panel_s)(t);
  else HWY_DYNAMIC_DISPATCH(panel_d)(t);
}

template void panel<float>(const panel_task&);
template void panel<double>(const panel_task&);

}  // namespace prism::detail::streaming
#endif  // HWY_ONCE
