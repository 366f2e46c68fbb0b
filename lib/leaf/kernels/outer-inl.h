// lib/leaf/kernels/outer-inl.h — the outer kernel's register tiles, per target: the tile
// that adds L(:, l) R(l, j) into a column's accumulators, its prefetch, and the tile tables.
// The outer (outer.cpp), panel (panel.cpp) and diagonal (diagonal.cpp) kernels all run these
// tiles. Highway's per-target header (the toggle below), never on the scalar target.
//
// Complex numbers stay interleaved (re, im). For the outer kernel, with a = L(:, l) as
// lanes (ar0, ai0, ar1, ai1, ...) and b = R(l, j) = (br, bi):
//   a b = a * br + swap(a) * (-1, +1) * bi,   swap(a) = (ai0, ar0, ai1, ar1, ...)
// (first pair: ar br - ai bi, ai br + ar bi), so each column costs two broadcasts and two
// FMAs per vector. conj(b) flips the sign vector to (+1, -1); conj(a) is handled at the
// end, as conj(a) b = conj(a conj(b)).
#if defined(PRISM_LEAF_KERNELS_OUTER_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PRISM_LEAF_KERNELS_OUTER_INL_H_
#undef PRISM_LEAF_KERNELS_OUTER_INL_H_
#else
#define PRISM_LEAF_KERNELS_OUTER_INL_H_
#endif

#include <hwy/highway.h>
#include <hwy/cache_control.h>

#include "simd-inl.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#if HWY_TARGET != HWY_SCALAR
HWY_BEFORE_NAMESPACE();
namespace prism::detail::streaming {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Register tile of the outer kernel: VR vectors of a column of L (VR * Lanes reals of
// rows) by TC columns of R. outer_tc[VR - 1] is the widest TC that fits the registers
// (accumulators VR * TC, plus L's vectors, their swapped copies and two broadcasts).
constexpr int outer_vr = registers == 32 ? 4 : 2;
// (At most 8: the tile table below has 8 columns per VR.)
constexpr std::array<int, 4> outer_tc = registers == 32 ? std::array<int, 4>{8, 8, 6, 4} : std::array<int, 4>{8, 4, 0, 0};

// acc(:, c) += a R(l, c) for the tile's columns c, R(l, c) at b[c * rj] (complex: with
// the swapped and signed copy of a, as in the file's header).
template <bool Cx, class D, int VR, int TC>
HWY_INLINE void outer_step(D d, const hn::Vec<D> (&a)[VR], const hn::TFromD<D>* HWY_RESTRICT b, std::int64_t rj,
                           hn::Vec<D> sign, hn::Vec<D> (&acc)[VR][TC]) {
  if constexpr (Cx) {
    hn::Vec<D> s[VR];
    PRISM_UNROLL
    for (int v = 0; v < VR; ++v) s[v] = hn::Mul(hn::Reverse2(d, a[v]), sign);
    PRISM_UNROLL
    for (int c = 0; c < TC; ++c) {
      const auto br = hn::Set(d, b[c * rj]), bi = hn::Set(d, b[c * rj + 1]);
      PRISM_UNROLL
      for (int v = 0; v < VR; ++v) {
        acc[v][c] = hn::MulAdd(a[v], br, acc[v][c]);
        acc[v][c] = hn::MulAdd(s[v], bi, acc[v][c]);
      }
    }
  } else {
    (void)sign;
    PRISM_UNROLL
    for (int c = 0; c < TC; ++c) {
      const auto bc = hn::Set(d, b[c * rj]);
      PRISM_UNROLL
      for (int v = 0; v < VR; ++v) acc[v][c] = hn::MulAdd(a[v], bc, acc[v][c]);
    }
  }
}

// What an outer tile works on: `len` steps l of acc(:, j) += L(:, l) R(l, j) for its VR
// vectors of rows and TC columns. L points at the tile's first row at the chunk's first
// l, columns ldl reals apart; the last vector holds `last` reals (1..Lanes). B points at
// R(l0, j0) (real part), steps l rl reals apart, columns rj reals apart. The tile adds its
// sums into `out`, column j at out + j * out_ld (aligned). `flip` (complex) conjugates R.
template <class R>
struct outer_args {
  const R* L;
  std::int64_t ldl;
  std::size_t last;
  const R* B;
  std::int64_t rl, rj;
  std::int64_t len;
  R* out;
  std::int64_t out_ld;
  bool flip;
  std::int64_t ahead;     ///< prefetch distance in steps l
  bool fetch_l, fetch_r;  ///< prefetch L's columns, R's columns (when R runs along k)
  // The syrk kernel's prefetch of the next chunk, spread over its tiles: pf_count lines
  // evenly over the tile's len steps (a line at each step where pf_count * step / len
  // passes a whole number), from line pf_line of column pf_col on (columns pf_ld reals
  // apart, pf_lines lines of N reals each, pf_cols columns); nothing when pf_count is 0.
  const R* pf = nullptr;
  std::int64_t pf_ld = 0, pf_lines = 0, pf_cols = 0, pf_col = 0, pf_line = 0, pf_count = 0;
};

// The prefetches of one step (outer_args::pf_count): `due` collects pf_count a step and
// pays len per line, e.g. 151 lines over 128 steps: 1 line at most steps, 2 at 23 of them.
template <class R>
HWY_INLINE void prefetch_step(const outer_args<R>& g, std::int64_t N, std::int64_t& due, std::int64_t& col,
                              std::int64_t& line) {
  for (due += g.pf_count; due >= g.len && col < g.pf_cols; due -= g.len) {
    hwy::Prefetch(g.pf + col * g.pf_ld + line * N);
    if (++line == g.pf_lines) line = 0, ++col;
  }
}

// One outer tile (see outer_args).
//
// Prefetch: a column of R stored along k (rl = 1 element: 'NN', or A^T's rows in 'TT')
// is a stream of its own, up to 16 besides L's, more than the hardware prefetchers
// follow; so once per 64-byte line of such a column the tile asks for the line `ahead`
// steps further on (fetch_r), and for L's column `ahead` steps on at every step
// (fetch_l: with that many streams the hardware loses L as well, and it does not follow
// masked loads, which a partial last vector takes). With k in chunks, `ahead` is the
// chunk, and only the first tile that reads a column in a chunk fetches it for the next
// chunk. A plain 'NT' (L and R one stream each) is left to the hardware: prefetching
// there cost 5-15%.
//
// RJ > 0 fixes R's column stride at compile time (the syrk kernel's R is L's transpose:
// its columns are adjacent, RJ = 1 real or 2 for a complex number), so the broadcasts
// address from one register with constant offsets instead of one register per column.
template <class R, bool Cx, int VR, int TC, int RJ = 0>
HWY_NOINLINE void outer_tile(const outer_args<R>& g) {
  const hn::ScalableTag<R> d;
  using V = hn::Vec<decltype(d)>;
  const std::int64_t N = std::int64_t(hn::Lanes(d));
  const R* HWY_RESTRICT L = g.L;
  const R* HWY_RESTRICT B = g.B;
  const std::int64_t ldl = g.ldl, rl = g.rl, rj = RJ > 0 ? RJ : g.rj, len = g.len, ahead = g.ahead;
  const std::size_t last = g.last;
  const bool fetch_l = g.fetch_l, fetch_r = g.fetch_r;
  std::int64_t pf_col = g.pf_col, pf_line = g.pf_line, pf_due = 0;
  const auto mask = hn::FirstN(d, last);
  const bool partial = std::int64_t(last) < N;
  // swap(a) * sign: (-1, +1) per pair for a b, (+1, -1) for a conj(b).
  const V sign = hn::Mul(even_odd(d, R(-1)), hn::Set(d, g.flip ? R(1) : R(-1)));
  V acc[VR][TC];
  PRISM_UNROLL
  for (int v = 0; v < VR; ++v)
    PRISM_UNROLL
    for (int c = 0; c < TC; ++c) acc[v][c] = hn::Zero(d);
  // Steps per 64-byte line of a column of R: 8 doubles, 4 complex doubles.
  const std::int64_t group = fetch_r ? 64 / std::int64_t(sizeof(R)) / (Cx ? 2 : 1) : len;
  // The steps, with what varies from call to call fixed at compile time: whether the last
  // vector is partial, whether L is prefetched at every step (gemm tiles) and whether the
  // syrk kernel's share of the next chunk is (syrk tiles, RJ > 0). Tested inside the loop,
  // they kept GCC from holding R's column addresses in registers: a 16 x 16 x 128 'NN' leaf
  // in L1 ran at 42 GF/s against 70 with them hoisted, and 64 x 64 x 2^22 on 2 threads
  // 15% slower (one thread, developers' host; a bare 16 x 8 tile loop reaches 110 there).
  const auto steps = [&]<bool Partial, bool FetchL, bool Pf>() {
    for (std::int64_t g0 = 0; g0 < len; g0 += group) {
      if (fetch_r)
        PRISM_UNROLL
        for (int c = 0; c < TC; ++c) hwy::Prefetch(B + (g0 + ahead) * rl + c * rj);
      const std::int64_t g1 = std::min(len, g0 + group);
      for (std::int64_t l = g0; l < g1; ++l) {
        const R* a_col = L + l * ldl;
        if constexpr (Pf) prefetch_step(g, N, pf_due, pf_col, pf_line);
        if constexpr (FetchL)
          PRISM_UNROLL
          for (int v = 0; v < VR; ++v) hwy::Prefetch(a_col + ahead * ldl + v * N);
        V a[VR];
        PRISM_UNROLL
        for (int v = 0; v + 1 < VR; ++v) a[v] = hn::LoadU(d, a_col + v * N);
        // A partial last vector takes a masked load; a plain load otherwise (the hardware
        // prefetchers follow plain loads better).
        if constexpr (Partial) a[VR - 1] = load_first(d, a_col + (VR - 1) * N, mask, last);
        else a[VR - 1] = hn::LoadU(d, a_col + (VR - 1) * N);
        outer_step<Cx>(d, a, B + l * rl, rj, sign, acc);
      }
    }
  };
  const auto with = [&]<bool FetchL, bool Pf>() {
    if (partial) steps.template operator()<true, FetchL, Pf>();
    else steps.template operator()<false, FetchL, Pf>();
  };
  if constexpr (RJ > 0) {  // syrk tiles: L is never fetched a step ahead
    if (g.pf_count > 0) with.template operator()<false, true>();
    else with.template operator()<false, false>();
  } else {  // gemm tiles: a share of the next chunk (panel tiles over a packed chunk), or L's own
    if (g.pf_count > 0) with.template operator()<false, true>();
    else if (fetch_l) with.template operator()<true, false>();
    else with.template operator()<false, false>();
  }
  PRISM_UNROLL
  for (int c = 0; c < TC; ++c)
    PRISM_UNROLL
    for (int v = 0; v < VR; ++v) {
      R* p = g.out + c * g.out_ld + v * N;
      hn::StoreU(hn::Add(hn::LoadU(d, p), acc[v][c]), d, p);
    }
}

template <class R>
using outer_fn = void (*)(const outer_args<R>&);

// Entry (VR, TC) of a tile table whose widest tile for VR vectors is Widest[VR - 1];
// nullptr (nothing instantiated) where TC is wider.
template <class R, bool Cx, std::array<int, 4> Widest, int RJ, int VR, int TC>
constexpr outer_fn<R> outer_entry() {
  if constexpr (TC <= Widest[VR - 1]) return &outer_tile<R, Cx, VR, TC, RJ>;
  else return nullptr;
}

// All tiles up to Widest, vr vectors by tc columns at [(vr - 1) * 8 + tc - 1] (the outer
// kernel's table with outer_tc, the syrk kernel's with syrk_tc).
template <class R, bool Cx, std::array<int, 4> Widest, int RJ, int... K>
constexpr std::array<outer_fn<R>, sizeof...(K)> outer_tiles(std::integer_sequence<int, K...>) {
  return {outer_entry<R, Cx, Widest, RJ, K / 8 + 1, K % 8 + 1>()...};
}

}  // namespace HWY_NAMESPACE
}  // namespace prism::detail::streaming
HWY_AFTER_NAMESPACE();
#endif  // HWY_TARGET != HWY_SCALAR

#endif  // PRISM_LEAF_KERNELS_OUTER_INL_H_
