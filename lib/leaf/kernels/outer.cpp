// lib/leaf/kernels/outer.cpp — the outer kernel: S = L R with L running
// along its rows (op(A) = A, 'N') and R read one element at a time and broadcast ('NN',
// 'NT'; 'TT' and its conjugates are C^T = op(B)^T op(A)^T, an outer product too). Vectors
// hold a column of L (up to 16 rows; a 16-row complex column is 32 reals); each step l adds
// L(:, l) R(l, j) into column j's accumulators. Its register tiles (outer-inl.h) also run
// the panel and diagonal kernels; the driver: tiling.cpp.
#include "tasks.hpp"

#include <prism/types.hpp>

#include <algorithm>
#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <utility>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "leaf/kernels/outer.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target
#include <hwy/highway.h>
#include <hwy/cache_control.h>
#include "outer-inl.h"

HWY_BEFORE_NAMESPACE();
namespace prism::detail::streaming {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR

// One lane: no register tiles to speak of (and no lane pairs for complex numbers).
template <class R, bool Cx>
void outer(const task& t) {
  plain<R, Cx>(t);
}

#else

// S = L R by the outer kernel: register tiles over L's rows and R's columns, k in chunks
// when they need several tiles.
template <class R, bool Cx>
void outer(const task& t) {
  const hn::ScalableTag<R> d;
  const std::int64_t N = std::int64_t(hn::Lanes(d));
  constexpr int w = Cx ? 2 : 1;
  // A column of L as vectors: e.g. 12 complex doubles = 24 reals = 3 AVX-512 vectors, the
  // last one full; 5 doubles = 1 vector holding 5 of its 8 lanes.
  const std::int64_t reals = t.rows * w, vectors = (reals + N - 1) / N;
  R* S = static_cast<R*>(t.S);
  // Column sums, column j from out + j * out_ld. The tiles add whole vectors into them, so
  // they go straight into S when S is being added to and its columns are whole vectors
  // (e.g. 16 doubles of a tiled leaf's sums, 64 apart); otherwise into a buffer (AVX-512
  // complex double: 5 KiB), copied to S at the end.
  const bool direct = t.add && reals % N == 0 && !(Cx && t.conj_l);
  HWY_ALIGN R buffer[streaming_block_mn * (2 * streaming_block_mn + hn::MaxLanes(d))];
  R* out = direct ? S : buffer;
  const std::int64_t out_ld = direct ? t.s_ld * w : vectors * N;
  if (!direct) std::fill(out, out + t.cols * out_ld, R(0));
  const std::int64_t vr = piece(vectors, outer_vr);
  const std::int64_t tc = piece(t.cols, outer_tc[std::size_t(vr - 1)]);
  const bool one_tile = vr >= vectors && tc >= t.cols;
  std::int64_t chunk = t.k;
  if (!one_tile)
    chunk = std::max<std::int64_t>(1, t.outer_chunk_bytes / ((t.rows + t.cols) * w * std::int64_t(sizeof(R))));
  static constexpr auto tiles = outer_tiles<R, Cx, outer_tc, 0>(std::make_integer_sequence<int, outer_vr * 8>{});
  const R* L = static_cast<const R*>(t.L);
  const R* B = static_cast<const R*>(t.R);
  outer_args<R> g{};
  g.ldl = t.ldl * w, g.rl = t.rl * w, g.rj = t.rj * w, g.out_ld = out_ld;
  g.flip = t.conj_l != t.conj_r;  // conj(a) b is computed as conj(a conj(b))
  // Prefetch distance in steps l: the next chunk, or flight_bytes of all the operands' lines
  // in flight (e.g. 8 KiB over 8 x 8 doubles' 128 bytes a step: 64 steps).
  const bool r_streams = t.rl == 1;  // R's columns run along k: one stream each
  g.ahead = one_tile ? std::max<std::int64_t>(8, t.flight_bytes / ((t.rows + t.cols) * w * std::int64_t(sizeof(R))))
                     : chunk;
  for (std::int64_t l0 = 0; l0 < t.k; l0 += chunk) {
    g.len = std::min(chunk, t.k - l0);
    for (std::int64_t v0 = 0; v0 < vectors; v0 += vr) {
      const int h = int(std::min(vr, vectors - v0));
      // Reals in the tile's last vector: e.g. 20 reals in 8 lanes, tile of vectors 0..2 -> 4.
      g.last = std::size_t(std::min(reals - (v0 + h - 1) * N, N));
      for (std::int64_t j0 = 0; j0 < t.cols; j0 += tc) {
        const int wd = int(std::min(tc, t.cols - j0));
        g.L = L + v0 * N + l0 * g.ldl, g.B = B + l0 * g.rl + j0 * g.rj, g.out = out + j0 * out_ld + v0 * N;
        g.fetch_r = r_streams && v0 == 0;
        g.fetch_l = (r_streams || g.last < std::size_t(N)) && j0 == 0;
        tiles[std::size_t((h - 1) * 8 + wd - 1)](g);
      }
    }
  }
  if (direct) return;
  for (std::int64_t j = 0; j < t.cols; ++j)
    for (std::int64_t i = 0; i < reals; ++i) {
      const R x = out[j * out_ld + i];
      put(S[j * t.s_ld * w + i], Cx && t.conj_l && i % 2 == 1 ? -x : x, t.add);  // conj(a) b = conj(a conj(b))
    }
}

#endif  // HWY_TARGET == HWY_SCALAR

// The exported entry points, one per scalar type.
void outer_s(const task& t) { outer<float, false>(t); }
void outer_d(const task& t) { outer<double, false>(t); }
void outer_c(const task& t) { outer<float, true>(t); }
void outer_z(const task& t) { outer<double, true>(t); }

}  // namespace HWY_NAMESPACE
}  // namespace prism::detail::streaming
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace prism::detail::streaming {

PRISM_STREAMING_ENTRY(outer, outer, task);

}  // namespace prism::detail::streaming
#endif  // HWY_ONCE
