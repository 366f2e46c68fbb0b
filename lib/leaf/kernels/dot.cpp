// lib/leaf/kernels/dot.cpp — the dot kernel: S = L R with L and R both
// running along k in memory (op(A) = A^T or A^H and op(B) = B, 'TN'). Vectors run along k;
// a register tile of TI x TJ accumulators takes TI rows of L and TJ columns of R, and each
// accumulator's lanes are summed at the end. The driver that cuts a leaf into its tasks:
// tiling.cpp.
//
// Complex numbers stay interleaved (re, im). With a and b both running along
// k, p += a * b and q += a * swap(b) collect (ar br, ai bi) and (ar bi, ai br) pairs, and
// the sums come out as re = sum(p_even) -+ sum(p_odd), im = +-(sum(q_even) +- sum(q_odd)),
// the signs set by which operand is conjugated (worked out at dot_tile).
#include "tasks.hpp"

#include <prism/types.hpp>

#include <algorithm>
#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <utility>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "leaf/kernels/dot.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target
#include <hwy/highway.h>
#include <hwy/cache_control.h>
#include "simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace prism::detail::streaming {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR

// One lane: no register tiles to speak of (and no lane pairs for complex numbers).
template <class R, bool Cx>
void dot(const task& t) {
  plain<R, Cx>(t);
}

#else

// ---- dot kernel ------------------------------------------------------------------------

// Register tile of the dot kernel: TI rows of L by TJ columns of R; a complex pair needs
// two accumulators (p and q), plus the swapped copy of each R vector.
template <bool Cx>
constexpr int dot_ti = registers == 32 ? 4 : (Cx ? 2 : 4);
template <bool Cx>
constexpr int dot_tj = registers == 32 ? (Cx ? 2 : 4) : 2;

// acc(i, j) += a(i) b(j) lane by lane; complex: also acc'(i, j) += a(i) swap(b(j)).
template <bool Cx, class D, int TI, int TJ, int A>
HWY_INLINE void dot_step(D d, const hn::Vec<D> (&a)[TI], const hn::Vec<D> (&b)[TJ], hn::Vec<D> (&acc)[TI][TJ][A]) {
  hn::Vec<D> s[TJ];
  if constexpr (Cx)
    for (int j = 0; j < TJ; ++j) s[j] = hn::Reverse2(d, b[j]);
  for (int i = 0; i < TI; ++i)
    for (int j = 0; j < TJ; ++j) {
      acc[i][j][0] = hn::MulAdd(a[i], b[j], acc[i][j][0]);
      if constexpr (Cx) acc[i][j][A - 1] = hn::MulAdd(a[i], s[j], acc[i][j][A - 1]);
    }
}

// What a dot tile works on. L points at the tile's first row at the chunk's start, rows
// ldl reals apart; B likewise at its first column, columns ldr reals apart; `len` reals
// along k. With k in several chunks the tile adds its pairs' vectors into `part` (real:
// one vector per pair; complex: p then q), pair (i0 + i, j0 + j) `i * part_row + j *
// per_pair` reals after `part` (at pair (i0, j0)); e.g. r = c = 16 complex doubles,
// AVX-512 (8 lanes): per_pair = 16 reals, part_row = 256. With one chunk it sums each
// pair's lanes itself and writes S (at the tile's corner, columns s_ld elements apart).
template <class R>
struct dot_args {
  const R* L;
  std::int64_t ldl;
  const R* B;
  std::int64_t ldr;
  std::int64_t len;
  R* part;               ///< partial sums, or nullptr: write S
  std::int64_t part_row;
  R* S;
  std::int64_t s_ld;
  bool add;              ///< add the sums into S instead of writing them
  R same;                ///< complex: -1 when both or neither operand is conjugated, else +1
  R im_sign;             ///< complex: -1 when R is conjugated, else +1
  std::int64_t ahead;    ///< prefetch distance in reals
  bool fetch_l, fetch_r; ///< prefetch L's rows, R's columns
};

// One tile over one chunk: the TI x TJ pairs' lane-wise products of L's rows and R's
// columns (see dot_args).
//
// Prefetch: every row of L and column of R is its own stream through memory (up to 32
// of them, more than the hardware prefetchers follow), so the tile asks for its rows
// (fetch_l) and columns (fetch_r) `ahead` reals further on as it goes, a line of each per
// line of k it reads (in bursts, see below). With k in chunks, `ahead` is the chunk, and
// only the first tile that reads a row or column in a chunk fetches it for the next chunk.
//
// The sums of a complex pair, with p = (ar br, ai bi) and q = (ar bi, ai br) lanes summed
// over k:
//   a b             re = p_e - p_o   im =  (q_e + q_o)
//   conj(a) b       re = p_e + p_o   im =  (q_e - q_o)
//   a conj(b)       re = p_e + p_o   im = -(q_e - q_o)
//   conj(a) conj(b) re = p_e - p_o   im = -(q_e + q_o)
// so the odd lanes count with `same` (-1 when both or neither are conjugated) in re and
// with -same in im, and im changes sign when b is conjugated (im_sign).
template <class R, bool Cx, int TI, int TJ>
HWY_NOINLINE void dot_tile(const dot_args<R>& g) {
  const hn::ScalableTag<R> d;
  using V = hn::Vec<decltype(d)>;
  const std::int64_t N = std::int64_t(hn::Lanes(d));
  constexpr int A = Cx ? 2 : 1;
  const R* HWY_RESTRICT L = g.L;
  const R* HWY_RESTRICT B = g.B;
  const std::int64_t ldl = g.ldl, ldr = g.ldr, len = g.len, ahead = g.ahead;
  const bool fetch_l = g.fetch_l, fetch_r = g.fetch_r;
  V acc[TI][TJ][A];
  PRISM_UNROLL
  for (int i = 0; i < TI; ++i)
    PRISM_UNROLL
    for (int j = 0; j < TJ; ++j)
      PRISM_UNROLL
      for (int a = 0; a < A; ++a) acc[i][j][a] = hn::Zero(d);
  const std::int64_t full = len - len % N;
  // Prefetches per line (64 bytes), not per vector: AVX2 doubles take two steps a line.
  const std::int64_t line = std::max<std::int64_t>(N, 64 / std::int64_t(sizeof(R)));
  V a[TI], b[TJ];
  // Prefetch in bursts: each line step fetches `streams` consecutive lines of one stream,
  // the streams in turn (rows of L first), so each stream is fetched as far ahead as with
  // one line per stream per step, in runs that stay in one DRAM page (5-15% faster here
  // than one line of every stream per step). E.g. 4 + 4 streams: steps 0..7 fetch lines
  // 0..7 (plus `ahead`) of row 0, row 1, ..., column 3; steps 8..15 lines 8..15.
  const int fetched_rows = fetch_l ? TI : 0, streams = fetched_rows + (fetch_r ? TJ : 0);
  // The steps, with or without the prefetches fixed at compile time (tested inside the loop,
  // they cost the tiles that fetch nothing as much as those that do: a 32 x 32 x 256 'TN'
  // leaf in L1 ran at 49 GF/s against 75 with the test hoisted, one thread).
  const auto steps = [&]<bool Fetch>() {
    int stream = 0;
    std::int64_t burst_off = 0;
    for (std::int64_t off = 0; off < full; off += N) {
      if constexpr (Fetch)
        if (off % line == 0) {  // the next `streams` lines of one stream
          const R* base = stream < fetched_rows ? L + stream * ldl : B + (stream - fetched_rows) * ldr;
          for (int q = 0; q < streams; ++q) hwy::Prefetch(base + burst_off + ahead + q * line);
          if (++stream == streams) stream = 0, burst_off += streams * line;
        }
      PRISM_UNROLL
      for (int i = 0; i < TI; ++i) a[i] = hn::LoadU(d, L + i * ldl + off);
      PRISM_UNROLL
      for (int j = 0; j < TJ; ++j) b[j] = hn::LoadU(d, B + j * ldr + off);
      dot_step<Cx>(d, a, b, acc);
    }
  };
  if (streams > 0) steps.template operator()<true>();
  else steps.template operator()<false>();
  if (full < len) {  // the last len % N reals: zeros in the lanes above
    const std::size_t rest = std::size_t(len - full);
    const auto mask = hn::FirstN(d, rest);
    PRISM_UNROLL
    for (int i = 0; i < TI; ++i) a[i] = load_first(d, L + i * ldl + full, mask, rest);
    PRISM_UNROLL
    for (int j = 0; j < TJ; ++j) b[j] = load_first(d, B + j * ldr + full, mask, rest);
    dot_step<Cx>(d, a, b, acc);
  }
  if (g.part != nullptr) {
    const std::int64_t per_pair = A * N;
    PRISM_UNROLL
    for (int i = 0; i < TI; ++i)
      PRISM_UNROLL
      for (int j = 0; j < TJ; ++j)
        PRISM_UNROLL
        for (int a2 = 0; a2 < A; ++a2) {
          R* p = g.part + i * g.part_row + j * per_pair + a2 * N;
          hn::Store(hn::Add(hn::Load(d, p), acc[i][j][a2]), d, p);
        }
    return;
  }
  const V re_sign = even_odd(d, Cx ? g.same : R(1)), im_sign = even_odd(d, -g.same);
  PRISM_UNROLL
  for (int i = 0; i < TI; ++i)
    PRISM_UNROLL
    for (int j = 0; j < TJ; ++j) {
      R* s = g.S + (i + j * g.s_ld) * A;
      put(s[0], hn::GetLane(hn::SumOfLanes(d, Cx ? hn::Mul(acc[i][j][0], re_sign) : acc[i][j][0])), g.add);
      if constexpr (Cx) put(s[1], g.im_sign * hn::GetLane(hn::SumOfLanes(d, hn::Mul(acc[i][j][A - 1], im_sign))), g.add);
    }
}

template <class R>
using dot_fn = void (*)(const dot_args<R>&);

// All dot tiles, tile ti x tj at [(ti - 1) * dot_tj + tj - 1].
template <class R, bool Cx, int... K>
constexpr std::array<dot_fn<R>, sizeof...(K)> dot_tiles(std::integer_sequence<int, K...>) {
  return {&dot_tile<R, Cx, K / dot_tj<Cx> + 1, K % dot_tj<Cx> + 1>...};
}


// S = L R by the dot kernel: register tiles over the r x c pairs, k in chunks when the
// pairs need several tiles.
template <class R, bool Cx>
void dot(const task& t) {
  const hn::ScalableTag<R> d;
  const std::int64_t N = std::int64_t(hn::Lanes(d));
  constexpr int A = Cx ? 2 : 1, w = Cx ? 2 : 1;  // vectors per pair, reals per element
  const std::int64_t ti = piece(t.rows, dot_ti<Cx>), tj = piece(t.cols, dot_tj<Cx>);
  const bool one_tile = ti >= t.rows && tj >= t.cols;
  // Chunk length in reals along k, a whole number of vectors: e.g. 16 + 16 complex doubles
  // in 32 KiB -> 64 elements = 128 reals = 16 AVX-512 vectors per row.
  const std::int64_t total = t.k * w;
  std::int64_t chunk = total;
  if (!one_tile) {
    const std::int64_t bytes_per_k = (t.rows + t.cols) * w * std::int64_t(sizeof(R));
    chunk = std::min(total, std::max<std::int64_t>(N, t.dot_chunk_bytes / bytes_per_k * w / N * N));
  }
  // Partial sums between chunks: r x c pairs of A vectors each (AVX-512 complex double:
  // 32 KiB), only when there are several chunks.
  HWY_ALIGN R part[streaming_block_mn * streaming_block_mn * A * hn::MaxLanes(d)];
  const bool chunks = chunk < total;
  if (chunks) std::fill(part, part + t.rows * t.cols * A * N, R(0));
  static constexpr auto tiles = dot_tiles<R, Cx>(std::make_integer_sequence<int, dot_ti<Cx> * dot_tj<Cx>>{});
  dot_args<R> g{};
  g.ldl = t.ldl * w, g.ldr = t.rj * w, g.part_row = t.cols * A * N, g.s_ld = t.s_ld, g.add = t.add;
  g.same = t.conj_l == t.conj_r ? R(-1) : R(1), g.im_sign = t.conj_r ? R(-1) : R(1);
  // Prefetch distance in reals: the next chunk, or flight_bytes over all rows and columns
  // (e.g. 8 KiB over 4 + 4 doubles: 128 reals, 1 KiB ahead in each).
  g.ahead = one_tile ? std::max<std::int64_t>(N, t.flight_bytes / ((t.rows + t.cols) * std::int64_t(sizeof(R)))) : chunk;
  const R* L = static_cast<const R*>(t.L);
  const R* B = static_cast<const R*>(t.R);
  R* S = static_cast<R*>(t.S);
  for (std::int64_t off = 0; off < total; off += chunk) {
    g.len = std::min(chunk, total - off);
    for (std::int64_t i0 = 0; i0 < t.rows; i0 += ti) {
      const int h = int(std::min(ti, t.rows - i0));
      for (std::int64_t j0 = 0; j0 < t.cols; j0 += tj) {
        const int wd = int(std::min(tj, t.cols - j0));
        g.L = L + i0 * g.ldl + off, g.B = B + j0 * g.ldr + off;
        g.part = chunks ? part + i0 * g.part_row + j0 * A * N : nullptr;
        g.S = S + (i0 + j0 * t.s_ld) * A;
        g.fetch_l = j0 == 0, g.fetch_r = i0 == 0;
        tiles[std::size_t((h - 1) * dot_tj<Cx> + wd - 1)](g);
      }
    }
  }
  if (!chunks) return;
  // S from the partial sums, as dot_tile does it with one chunk.
  const auto re_sign = even_odd(d, Cx ? g.same : R(1)), im_sign = even_odd(d, -g.same);
  for (std::int64_t i = 0; i < t.rows; ++i)
    for (std::int64_t j = 0; j < t.cols; ++j) {
      const R* p = part + (i * t.cols + j) * A * N;
      R* out = S + (i + j * t.s_ld) * A;
      put(out[0], hn::GetLane(hn::SumOfLanes(d, hn::Mul(hn::Load(d, p), re_sign))), t.add);
      if constexpr (Cx) put(out[1], g.im_sign * hn::GetLane(hn::SumOfLanes(d, hn::Mul(hn::Load(d, p + N), im_sign))), t.add);
    }
}

#endif  // HWY_TARGET == HWY_SCALAR

// The exported entry points, one per scalar type.
void dot_s(const task& t) { dot<float, false>(t); }
void dot_d(const task& t) { dot<double, false>(t); }
void dot_c(const task& t) { dot<float, true>(t); }
void dot_z(const task& t) { dot<double, true>(t); }

}  // namespace HWY_NAMESPACE
}  // namespace prism::detail::streaming
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace prism::detail::streaming {

PRISM_STREAMING_ENTRY(dot, dot, task);

}  // namespace prism::detail::streaming
#endif  // HWY_ONCE
