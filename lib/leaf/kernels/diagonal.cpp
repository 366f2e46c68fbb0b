// lib/leaf/kernels/diagonal.cpp — the diagonal kernel: one k-chunk of a rank-k
// update (syrk / herk) over C's upper triangle, strips of the outer kernel's tiles
// (outer-inl.h) above whole diagonal blocks that rotate lanes instead of broadcasting.
// The driver: tiling.cpp (streaming_rank_k).
#include "tasks.hpp"

#include <prism/types.hpp>

#include <algorithm>
#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <utility>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "leaf/kernels/diagonal.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target
#include <hwy/highway.h>
#include <hwy/cache_control.h>
#include "outer-inl.h"

HWY_BEFORE_NAMESPACE();
namespace prism::detail::streaming {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR

template <class R, bool Cx>
void syrk_chunk(const syrk_task& t) {
  plain_syrk<R, Cx>(t);
}

#else

// Register tiles of the syrk kernel: the outer kernel's tiles, VR vectors of rows by TC
// columns, with wider real tiles where the registers allow (a real tile needs VR * TC
// accumulators, VR vectors of L and one broadcast: 3 x 8 and 4 x 6 take 28 and 29 of 32).
template <bool Cx>
constexpr std::array<int, 4> syrk_tc = registers == 32 && !Cx ? std::array<int, 4>{8, 8, 8, 6} : outer_tc;


// Diagonal blocks of the syrk kernel, real types: DG whole N x N blocks on the diagonal
// (N lanes), the first at L's first row, their sums from out on as the other tiles'. With
// broadcasts a block takes N vector FMAs a step, about half of them for sums below the
// diagonal that are thrown away. Rotating the block's vector a instead, lane l of acc[j]
// sums a(l) a((l + j) mod N) for j = 0..N/2: every pair of the block's rows once (for
// j = N/2, lanes l and l + N/2 hold the same pair; the upper half is not used). E.g.
// AVX-512 doubles: 5 FMAs and 4 lane rotations a step for the 36 sums of an 8 x 8
// triangle, against 8 FMAs. (Carried inside a broadcast tile's loop instead of in a tile
// of their own, the rotations slowed the tile: 32 x 32 doubles in L1 ran at 67 GF/s
// against 76, 16 x 16 at 49 against 70, one thread.)
template <class D>
constexpr int diag_rotations(D d) {
  return int(hn::MaxLanes(d)) / 2 + 1;
}

// Blocks a diagonal tile takes at once: J accumulators, the vector and its rotation per
// block, and the rotation's index; e.g. 4 for AVX-512 doubles (4 x 7 + 1 = 29 registers),
// 2 for AVX-512 floats (J = 9) and 3 for AVX2 doubles, at most 4.
template <class D>
constexpr int diag_blocks(D d) {
  return std::clamp((registers - 3) / (diag_rotations(d) + 2), 1, 4);
}

template <class R, int DG>
HWY_NOINLINE void diag_tile(const outer_args<R>& g) {
  const hn::ScalableTag<R> d;
  using V = hn::Vec<decltype(d)>;
  constexpr int N = int(hn::MaxLanes(d)), J = diag_rotations(d);
  const R* HWY_RESTRICT L = g.L;
  const std::int64_t ldl = g.ldl, len = g.len;
  std::int64_t pf_col = g.pf_col, pf_line = g.pf_line, pf_due = 0;
  // Rotation by one lane: lane l takes lane l + 1 (mod N).
  using I = hwy::MakeSigned<R>;
  HWY_ALIGN I next[N];
  for (int l = 0; l < N; ++l) next[l] = I((l + 1) % N);
  const auto rot = hn::IndicesFromVec(d, hn::Load(hn::RebindToSigned<decltype(d)>(), next));
  V acc[DG][J];
  PRISM_UNROLL
  for (int b = 0; b < DG; ++b)
    PRISM_UNROLL
    for (int j = 0; j < J; ++j) acc[b][j] = hn::Zero(d);
  for (std::int64_t l = 0; l < len; ++l) {
    if (g.pf_count > 0) prefetch_step(g, N, pf_due, pf_col, pf_line);
    V a[DG], r[DG];
    PRISM_UNROLL
    for (int b = 0; b < DG; ++b) a[b] = hn::LoadU(d, L + l * ldl + b * N), r[b] = a[b];
    PRISM_UNROLL
    for (int j = 0; j < J; ++j)
      PRISM_UNROLL
      for (int b = 0; b < DG; ++b) {
        if (j > 0) r[b] = hn::TableLookupLanes(r[b], rot);
        acc[b][j] = hn::MulAdd(a[b], r[b], acc[b][j]);
      }
  }
  // Block b's pair of rows (p, q), p <= q, goes to out + (bN + q) * out_ld + bN + p. E.g.
  // N = 8, j = 3, lane 6: rows 6 and (6 + 3) mod 8 = 1, so (p, q) = (1, 6).
  HWY_ALIGN R sums[N];
  for (int b = 0; b < DG; ++b)
    for (int j = 0; j < J; ++j) {
      hn::Store(acc[b][j], d, sums);
      for (int l = 0; l < (2 * j == N ? N / 2 : N); ++l) {
        const int p = std::min(l, (l + j) % N), q = std::max(l, (l + j) % N);
        g.out[(b * N + q) * g.out_ld + b * N + p] += sums[l];
      }
    }
}

template <class R, int... K>
constexpr std::array<outer_fn<R>, sizeof...(K)> diag_tiles(std::integer_sequence<int, K...>) {
  return {&diag_tile<R, K + 1>...};
}

// One chunk of a rank-k update (syrk_task): the upper triangle of S = L R at the
// granularity of a vector of rows. Column j needs rows 0..j, so the columns that share the
// vector of their diagonal form a strip: strip s holds columns [sE, (s + 1)E) (E elements
// per vector) and needs vectors 0..s. Real types take the whole diagonal blocks out of
// their strips into diagonal tiles (diag_tile); the rest of each strip is cut into
// register tiles of at most 4 vectors by syrk_tc columns. E.g. 32 x 32 doubles on AVX-512
// (E = 8): one diagonal tile for the 4 blocks, strips of 1, 2 and 3 vectors above them in
// tiles 1x8, 2x8 and 3x8: 20 + 48 = 68 vector FMAs a step for the 528 sums of the
// triangle (80 with the diagonal blocks computed whole, 128 for the full 32 x 32 product).
// Complex types, and a partial last block, keep the diagonal block in their strip's tiles,
// whose lower part is then computed and never read. The chunk is sized to stay in L1
// (streaming_rank_k), so it comes from memory once, for the first tile, and from L1 for the
// others.
template <class R, bool Cx>
void syrk_chunk(const syrk_task& t) {
  const hn::ScalableTag<R> d;
  const std::int64_t N = std::int64_t(hn::Lanes(d));
  constexpr int w = Cx ? 2 : 1;
  const std::int64_t E = N / w, reals = t.n * w, vectors = (reals + N - 1) / N;
  static constexpr auto tiles = outer_tiles<R, Cx, syrk_tc<Cx>, w>(std::make_integer_sequence<int, outer_vr * 8>{});
  constexpr int J = diag_rotations(d), DB = diag_blocks(d);
  static constexpr auto diags = diag_tiles<R>(std::make_integer_sequence<int, DB>{});
  // Whole diagonal blocks (real types): e.g. 20 doubles on AVX-512: 2 (rows 0..15).
  const std::int64_t whole = Cx || N != std::int64_t(hn::MaxLanes(d)) ? 0 : reals / N;
  const R* L = static_cast<const R*>(t.L);
  outer_args<R> g{};
  g.ldl = t.ldl * w, g.rl = t.ldl * w, g.rj = w, g.len = t.len, g.out_ld = t.out_ld, g.flip = t.conj;
  g.ahead = t.len, g.fetch_l = false, g.fetch_r = false;
  R* out = static_cast<R*>(t.out);
  // Vectors of strip s that its broadcast tiles take: rows down to its diagonal block,
  // that block only where it is not whole.
  const auto strip_vectors = [&](std::int64_t s) { return s < whole ? s : s + 1; };
  // The next chunk (t.next, when the caller names one) is fetched while this one runs, its
  // lines spread over the tiles in proportion to their work (vector FMAs a step), so the
  // requests go out at an even rate (all at once, from one tile, they queued behind each
  // other and the kernel waited). E.g. 32 doubles, 128 steps: 512 lines; the 68 vector
  // FMAs of a step are 20, 8, 16 and 24 by tile, so the tiles fetch 151, 61, 121 and the
  // remaining 179 lines, each spread evenly over its 128 steps (prefetch_step). (Whole
  // lines a step, rounded up, fetched 256, 128, 128 and 0, and the chunk's last tile none:
  // 2^22 x 32 on 2 threads took 33.4-33.9 ms against 32.0-32.5 evenly, 2^20 x 64 30.0-30.9
  // against 28.0-29.2, four pairs of runs.)
  const std::int64_t pf_lines = (t.next_rows * w + N - 1) / N;  // vectors (>= lines) a column
  const std::int64_t total_lines = t.next_cols * pf_lines, work = [&] {
    std::int64_t f = whole * J;
    for (std::int64_t s = 0; s < vectors; ++s) f += strip_vectors(s) * (std::min(t.n, (s + 1) * E) - s * E);
    return f;
  }();
  // With fewer than 4 vectors a column (n <= 24 doubles) every tile reads every line of the
  // chunk in order and the hardware prefetchers keep up: the loop would only cost (n = 8:
  // 36 against 28 GF/s without and with it, one thread).
  g.pf = vectors >= 4 || t.next_always ? static_cast<const R*>(t.next) : nullptr;
  g.pf_ld = t.next_ld * w, g.pf_lines = pf_lines, g.pf_cols = t.next_cols;
  std::int64_t fetched = 0;
  const auto run_tile = [&](outer_fn<R> tile, std::int64_t fmas) {  // with its part of the prefetch
    if (g.pf != nullptr) {
      // Rounded up, so the shares cover the chunk (the last tile may get fewer).
      g.pf_count = std::min(total_lines - fetched, (total_lines * fmas + work - 1) / work);
      g.pf_col = fetched / pf_lines, g.pf_line = fetched % pf_lines;
      fetched += g.pf_count;
    }
    tile(g);
  };
  for (std::int64_t b0 = 0; b0 < whole; b0 += DB) {
    const int h = int(std::min<std::int64_t>(DB, whole - b0));
    g.L = L + b0 * N, g.out = out + b0 * N * t.out_ld + b0 * N;
    run_tile(diags[std::size_t(h - 1)], h * J);
  }
  for (std::int64_t s = 0; s < vectors; ++s) {
    const std::int64_t j_begin = s * E, j_end = std::min(t.n, j_begin + E), nv = strip_vectors(s);
    // Reals in the strip's last vector: e.g. 20 doubles, strip 2 (rows 16..23): 4.
    const std::size_t last_s = s < whole ? std::size_t(N) : std::size_t(std::min(reals - s * N, N));
    const std::int64_t vr = piece(std::max<std::int64_t>(nv, 1), outer_vr);
    for (std::int64_t v0 = 0; v0 < nv; v0 += vr) {
      const int h = int(std::min(vr, nv - v0));
      const std::int64_t tc = piece(j_end - j_begin, syrk_tc<Cx>[std::size_t(h - 1)]);
      g.last = v0 + h == nv ? last_s : std::size_t(N);
      for (std::int64_t j0 = j_begin; j0 < j_end; j0 += tc) {
        const int wd = int(std::min(tc, j_end - j0));
        g.L = L + v0 * N, g.B = L + j0 * w, g.out = out + j0 * t.out_ld + v0 * N;
        run_tile(tiles[std::size_t((h - 1) * 8 + wd - 1)], h * wd);
      }
    }
  }
}

#endif  // HWY_TARGET == HWY_SCALAR

// The exported entry points, one per scalar type.
void syrk_s(const syrk_task& t) { syrk_chunk<float, false>(t); }
void syrk_d(const syrk_task& t) { syrk_chunk<double, false>(t); }
void syrk_c(const syrk_task& t) { syrk_chunk<float, true>(t); }
void syrk_z(const syrk_task& t) { syrk_chunk<double, true>(t); }

}  // namespace HWY_NAMESPACE
}  // namespace prism::detail::streaming
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace prism::detail::streaming {

PRISM_STREAMING_ENTRY(syrk_chunk, syrk, syrk_task);

}  // namespace prism::detail::streaming
#endif  // HWY_ONCE
