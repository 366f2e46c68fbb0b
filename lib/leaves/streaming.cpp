// lib/leaves/streaming.cpp — the streaming leaf's kernels (Google Highway, runtime
// dispatch) and its rule for `auto`. What it is for: streaming.hpp.
//
// The product. Every case is turned into S = L R, an r x c result (r, c <= 16) of an
// r x k left operand L and a k x c right operand R, and then C = alpha S + beta C (or
// alpha S^T + beta C when the case was transposed). Two kernels cover the layouts:
//
//   dot   L and R both run along k in memory: op(A) = A^T or A^H and op(B) = B ('TN').
//         Vectors run along k; a register tile of TI x TJ accumulators takes TI rows of L
//         and TJ columns of R, and each accumulator's lanes are summed at the end.
//   outer L runs along its rows (op(A) = A, 'N'); R is read one element at a time and
//         broadcast ('NN', 'NT'). Vectors hold a column of L (up to 16 rows; a 16-row
//         complex column is 32 reals); each step l adds L(:, l) R(l, j) into column j's
//         accumulators.
//   'TT' (and TC, CT, CC) is C^T = op(B)^T op(A)^T, an outer product with L = op(B)^T,
//   whose columns run along n in memory. 'NT' takes whichever of m and n is longer as the
//   vectorised side.
//
// Memory. When all r x c sums fit one register tile, A and B are streamed in one pass.
// Otherwise k is cut into chunks of about 32 KiB of L and R together (L1-sized): every
// tile runs over the chunk, so the chunk comes from memory once and from L1 for the other
// tiles, and the tiles' partial sums live in a small buffer between chunks. Nothing is
// packed or copied.
//
// Complex numbers stay interleaved (re, im). For the outer kernel, with a = L(:, l) as
// lanes (ar0, ai0, ar1, ai1, ...) and b = R(l, j) = (br, bi):
//   a b = a * br + swap(a) * (-1, +1) * bi,   swap(a) = (ai0, ar0, ai1, ar1, ...)
// (first pair: ar br - ai bi, ai br + ar bi), so each column costs two broadcasts and two
// FMAs per vector. conj(b) flips the sign vector to (+1, -1); conj(a) is handled at the
// end, as conj(a) b = conj(a conj(b)). For the dot kernel, with a and b both running along
// k, p += a * b and q += a * swap(b) collect (ar br, ai bi) and (ar bi, ai br) pairs, and
// the sums come out as re = sum(p_even) -+ sum(p_odd), im = +-(sum(q_even) +- sum(q_odd)),
// the signs set by which operand is conjugated (worked out at dot_finish).
#ifndef PRISM_LEAVES_STREAMING_SHARED
#define PRISM_LEAVES_STREAMING_SHARED

// Highway compiles this file once per instruction set. SSSE3 and SSE4 are left out (a
// CPU without AVX2 runs the scalar fallback): they would double the build time of this
// file for CPUs that no longer run HPC codes. Must come before any Highway header.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#endif

#include "streaming.hpp"

#include <prism/error.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace prism::detail::streaming {

/// One product S = L R for a kernel (all strides in elements of the scalar type).
struct task {
  bool dot = false;            ///< true: the dot kernel, else the outer kernel
  std::int64_t rows = 0;       ///< r: rows of L and S (1..16)
  std::int64_t cols = 0;       ///< c: columns of R and S (1..16)
  std::int64_t k = 0;          ///< the inner dimension (>= 1)
  const void* L = nullptr;     ///< dot: L(i, l) at L[i * ldl + l]; outer: L(i, l) at L[i + l * ldl]
  std::int64_t ldl = 1;
  const void* R = nullptr;     ///< R(l, j) at R[l * rl + j * rj] (dot: rl = 1)
  std::int64_t rl = 1, rj = 1;
  bool conj_l = false;         ///< complex: use conj(L)
  bool conj_r = false;         ///< complex: use conj(R)
  std::int64_t chunk_bytes = 32 * 1024;  ///< bytes of L and R per k-chunk when tiles must share it
  std::int64_t ahead_bytes = 1024;       ///< prefetch distance along one stream when k is not chunked
  void* S = nullptr;           ///< r x c result, column-major with ld = r (complex: re, im pairs)
};

/// The plain loops: the kernel of the scalar fallback target (a CPU with no SIMD target
/// that Highway was built for here). R is the real type; Cx says the elements are complex.
template <class R, bool Cx>
void plain(const task& t) {
  using T = std::conditional_t<Cx, std::complex<R>, R>;
  const T* L = static_cast<const T*>(t.L);
  const T* B = static_cast<const T*>(t.R);
  T* S = static_cast<T*>(t.S);
  auto conj_if = [](T x, bool c) -> T {
    if constexpr (Cx) {
      if (c) return std::conj(x);
    }
    return x;
  };
  for (std::int64_t j = 0; j < t.cols; ++j)
    for (std::int64_t i = 0; i < t.rows; ++i) {
      T s(0);
      for (std::int64_t l = 0; l < t.k; ++l) {
        const T a = t.dot ? L[i * t.ldl + l] : L[i + l * t.ldl];
        s += conj_if(a, t.conj_l) * conj_if(B[l * t.rl + j * t.rj], t.conj_r);
      }
      S[i + j * t.rows] = s;
    }
}

}  // namespace prism::detail::streaming

#endif  // PRISM_LEAVES_STREAMING_SHARED

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "leaves/streaming.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target
#include <hwy/highway.h>
#include <hwy/cache_control.h>

HWY_BEFORE_NAMESPACE();
namespace prism::detail::streaming {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR

// One lane: no register tiles to speak of (and no lane pairs for complex numbers).
template <class R, bool Cx>
void run(const task& t) {
  plain<R, Cx>(t);
}

#else

// Loops over a register tile's vectors, fully unrolled: GCC then keeps the accumulators
// in registers (otherwise it stored them to the stack on every step of the outer kernel).
#define PRISM_UNROLL _Pragma("GCC unroll 16")

// Vector registers of the target: the budget for accumulators.
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) || HWY_ARCH_ARM_A64 || HWY_ARCH_RVV
constexpr int registers = 32;
#else
constexpr int registers = 16;
#endif

// Masked loads that never touch memory past the last lane they load (x86 AVX2/AVX-512,
// SVE, RVV); other targets' MaskedLoad reads the whole vector, so there a partial vector
// goes through a small copy.
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2) || \
    (HWY_TARGET & (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128 | HWY_RVV))
constexpr bool fault_free_masked_load = true;
#else
constexpr bool fault_free_masked_load = false;
#endif

// The first `count` lanes from p (1 <= count <= Lanes(d)), zeros above; reads only
// p[0 .. count - 1]. `mask` is FirstN(d, count).
template <class D>
HWY_INLINE hn::Vec<D> load_first(D d, const hn::TFromD<D>* HWY_RESTRICT p, hn::Mask<D> mask, std::size_t count) {
  if constexpr (fault_free_masked_load) {
    (void)count;
    return hn::MaskedLoad(mask, d, p);
  } else {
    (void)mask;
    HWY_ALIGN hn::TFromD<D> buf[hn::MaxLanes(d)] = {};
    for (std::size_t i = 0; i < count; ++i) buf[i] = p[i];
    return hn::Load(d, buf);
  }
}

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

// One tile over one chunk: for each of its TI x TJ pairs, adds the lane-wise products of
// L's row and R's column over `len` reals into the pair's vectors in `part` (real: one
// vector per pair; complex: p then q). L points at row i0 at the chunk's start, rows ldl
// reals apart; R likewise at column j0, columns ldr reals apart. `part` points at pair
// (i0, j0); pair (i0 + i, j0 + j) is `i * part_row + j * per_pair` reals further on.
// E.g. r = c = 16 complex doubles, AVX-512 (8 lanes): per_pair = 16 reals, part_row = 256.
//
// Prefetch: every row of L and column of R is its own stream through memory (up to 32
// of them, more than the hardware prefetchers follow), so the tile asks for its rows
// (fetch_l) and columns (fetch_r) `ahead` reals further on as it goes: one line per
// vector step. With k in chunks, `ahead` is the chunk, and only the first tile that
// reads a row or column in a chunk fetches it for the next chunk.
template <class R, bool Cx, int TI, int TJ>
HWY_NOINLINE void dot_tile(const R* HWY_RESTRICT L, std::int64_t ldl, const R* HWY_RESTRICT B, std::int64_t ldr,
                           std::int64_t len, R* HWY_RESTRICT part, std::int64_t part_row, std::int64_t ahead,
                           bool fetch_l, bool fetch_r) {
  const hn::ScalableTag<R> d;
  using V = hn::Vec<decltype(d)>;
  const std::int64_t N = std::int64_t(hn::Lanes(d));
  constexpr int A = Cx ? 2 : 1;
  const std::int64_t per_pair = A * N;
  V acc[TI][TJ][A];
  for (int i = 0; i < TI; ++i)
    for (int j = 0; j < TJ; ++j)
      for (int a = 0; a < A; ++a) acc[i][j][a] = hn::Zero(d);
  const std::int64_t full = len - len % N;
  // Prefetches per line (64 bytes), not per vector: AVX2 doubles take two steps a line.
  const std::int64_t line = std::max<std::int64_t>(N, 64 / std::int64_t(sizeof(R)));
  V a[TI], b[TJ];
  for (std::int64_t off = 0; off < full; off += N) {
    if (off % line == 0) {
      if (fetch_l)
        for (int i = 0; i < TI; ++i) hwy::Prefetch(L + i * ldl + off + ahead);
      if (fetch_r)
        for (int j = 0; j < TJ; ++j) hwy::Prefetch(B + j * ldr + off + ahead);
    }
    for (int i = 0; i < TI; ++i) a[i] = hn::LoadU(d, L + i * ldl + off);
    for (int j = 0; j < TJ; ++j) b[j] = hn::LoadU(d, B + j * ldr + off);
    dot_step<Cx>(d, a, b, acc);
  }
  if (full < len) {  // the last len % N reals: zeros in the lanes above
    const std::size_t rest = std::size_t(len - full);
    const auto mask = hn::FirstN(d, rest);
    for (int i = 0; i < TI; ++i) a[i] = load_first(d, L + i * ldl + full, mask, rest);
    for (int j = 0; j < TJ; ++j) b[j] = load_first(d, B + j * ldr + full, mask, rest);
    dot_step<Cx>(d, a, b, acc);
  }
  for (int i = 0; i < TI; ++i)
    for (int j = 0; j < TJ; ++j)
      for (int a2 = 0; a2 < A; ++a2) {
        R* p = part + i * part_row + j * per_pair + a2 * N;
        hn::Store(hn::Add(hn::Load(d, p), acc[i][j][a2]), d, p);
      }
}

template <class R>
using dot_fn = void (*)(const R*, std::int64_t, const R*, std::int64_t, std::int64_t, R*, std::int64_t, std::int64_t,
                        bool, bool);

// All dot tiles, tile ti x tj at [(ti - 1) * dot_tj + tj - 1].
template <class R, bool Cx, int... K>
constexpr std::array<dot_fn<R>, sizeof...(K)> dot_tiles(std::integer_sequence<int, K...>) {
  return {&dot_tile<R, Cx, K / dot_tj<Cx> + 1, K % dot_tj<Cx> + 1>...};
}

// Sum of the lanes of the vector at p, times (1, s, 1, s, ...): the even lanes plus s
// times the odd ones (s = 1 for real types).
template <class R>
R lane_sum(const R* p, std::int64_t N, R s) {
  R even = 0, odd = 0;
  for (std::int64_t i = 0; i < N; i += 2) even += p[i], odd += (i + 1 < N ? p[i + 1] : R(0));
  return even + s * odd;
}

// S(i, j) from the pair vectors. Complex, with p = (ar br, ai bi) and q = (ar bi, ai br)
// pairs summed over k:
//   a b             re = p_e - p_o   im =  (q_e + q_o)
//   conj(a) b       re = p_e + p_o   im =  (q_e - q_o)
//   a conj(b)       re = p_e + p_o   im = -(q_e - q_o)
//   conj(a) conj(b) re = p_e - p_o   im = -(q_e + q_o)
// so the odd lanes count with -1 when both or neither are conjugated (re) or exactly
// one is (im), and im changes sign when b is conjugated.
template <class R, bool Cx>
void dot_finish(const task& t, const R* part, std::int64_t N) {
  R* S = static_cast<R*>(t.S);
  constexpr int A = Cx ? 2 : 1;
  const R same = t.conj_l == t.conj_r ? R(-1) : R(1);
  for (std::int64_t i = 0; i < t.rows; ++i)
    for (std::int64_t j = 0; j < t.cols; ++j) {
      const R* p = part + (i * t.cols + j) * A * N;
      if constexpr (Cx) {
        S[2 * (i + j * t.rows)] = lane_sum(p, N, same);
        S[2 * (i + j * t.rows) + 1] = (t.conj_r ? R(-1) : R(1)) * lane_sum(p + N, N, -same);
      } else {
        S[i + j * t.rows] = lane_sum(p, N, R(1));
      }
    }
}

// Balanced cuts of `extent` into pieces of at most `most`: e.g. 6 with most 4 -> 3 + 3.
inline std::int64_t piece(std::int64_t extent, std::int64_t most) {
  const std::int64_t pieces = (extent + most - 1) / most;
  return (extent + pieces - 1) / pieces;
}

template <class R, bool Cx>
void dot(const task& t) {
  const hn::ScalableTag<R> d;
  const std::int64_t N = std::int64_t(hn::Lanes(d));
  constexpr int A = Cx ? 2 : 1, w = Cx ? 2 : 1;  // vectors per pair, reals per element
  // Partial sums: r x c pairs of A vectors each (AVX-512 complex double: 32 KiB).
  HWY_ALIGN R part[streaming_max_mn * streaming_max_mn * A * hn::MaxLanes(d)];
  std::fill(part, part + t.rows * t.cols * A * N, R(0));
  const std::int64_t ti = piece(t.rows, dot_ti<Cx>), tj = piece(t.cols, dot_tj<Cx>);
  const bool one_tile = ti >= t.rows && tj >= t.cols;
  // Chunk length in reals along k, a whole number of vectors: e.g. 16 + 16 complex doubles
  // in 32 KiB -> 64 elements = 128 reals = 16 AVX-512 vectors per row.
  const std::int64_t total = t.k * w;
  std::int64_t chunk = total;
  if (!one_tile) {
    const std::int64_t bytes_per_k = (t.rows + t.cols) * w * std::int64_t(sizeof(R));
    chunk = std::max<std::int64_t>(N, t.chunk_bytes / bytes_per_k * w / N * N);
  }
  static constexpr auto tiles = dot_tiles<R, Cx>(std::make_integer_sequence<int, dot_ti<Cx> * dot_tj<Cx>>{});
  const std::int64_t ahead = one_tile ? t.ahead_bytes / std::int64_t(sizeof(R)) : chunk;
  const R* L = static_cast<const R*>(t.L);
  const R* B = static_cast<const R*>(t.R);
  const std::int64_t ldl = t.ldl * w, ldr = t.rj * w, part_row = t.cols * A * N;
  for (std::int64_t off = 0; off < total; off += chunk) {
    const std::int64_t len = std::min(chunk, total - off);
    for (std::int64_t i0 = 0; i0 < t.rows; i0 += ti) {
      const int h = int(std::min(ti, t.rows - i0));
      for (std::int64_t j0 = 0; j0 < t.cols; j0 += tj) {
        const int wd = int(std::min(tj, t.cols - j0));
        tiles[std::size_t((h - 1) * dot_tj<Cx> + wd - 1)](L + i0 * ldl + off, ldl, B + j0 * ldr + off, ldr, len,
                                                          part + i0 * part_row + j0 * A * N, part_row, ahead,
                                                          j0 == 0, i0 == 0);
      }
    }
  }
  dot_finish<R, Cx>(t, part, N);
}

// ---- outer kernel ----------------------------------------------------------------------

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

// One tile over `len` steps l: acc(:, j) += L(:, l) R(l, j) for its VR vectors of rows and
// TC columns, then adds acc into `out`, whose column j starts `out_ld` reals after column
// j - 1 (aligned). L points at the tile's first row at the chunk's first l, columns ldl
// reals apart; the last vector holds `last` reals (1..Lanes). R points at R(l0, j0) (real
// part), steps l rl reals apart, columns rj reals apart. `flip` (complex) conjugates R.
//
// Prefetch: a column of R stored along k (rl = 1 element, 'NN', or A^T's rows in 'TT') is
// a stream of its own, up to 16 besides L's, more than the hardware prefetchers follow; so
// once per 64-byte line of such a column the tile asks for the line `ahead` steps further
// on (fetch_r). L's columns follow one another at a fixed stride, which the hardware
// follows by itself. With k in chunks, `ahead` is the chunk and only the first row tile
// of a chunk fetches R.
template <class R, bool Cx, int VR, int TC>
HWY_NOINLINE void outer_tile(const R* HWY_RESTRICT L, std::int64_t ldl, std::size_t last, const R* HWY_RESTRICT B,
                             std::int64_t rl, std::int64_t rj, std::int64_t len, R* HWY_RESTRICT out,
                             std::int64_t out_ld, bool flip, std::int64_t ahead, bool fetch_r) {
  const hn::ScalableTag<R> d;
  using V = hn::Vec<decltype(d)>;
  const std::int64_t N = std::int64_t(hn::Lanes(d));
  constexpr std::int64_t w = Cx ? 2 : 1;
  const auto mask = hn::FirstN(d, last);
  const bool partial = std::int64_t(last) < N;
  // swap(a) * sign: (-1, +1) per pair for a b, (+1, -1) for a conj(b).
  const V sign = flip ? hn::OddEven(hn::Set(d, R(-1)), hn::Set(d, R(1))) : hn::OddEven(hn::Set(d, R(1)), hn::Set(d, R(-1)));
  V acc[VR][TC];
  PRISM_UNROLL
  for (int v = 0; v < VR; ++v)
    PRISM_UNROLL
    for (int c = 0; c < TC; ++c) acc[v][c] = hn::Zero(d);
  // Steps per 64-byte line of a column of R stored along k: 8 doubles, 4 complex doubles.
  const std::int64_t group = fetch_r && rl == w ? 64 / (w * std::int64_t(sizeof(R))) : len;
  for (std::int64_t g0 = 0; g0 < len; g0 += group) {
    if (fetch_r && rl == w)
      PRISM_UNROLL
      for (int c = 0; c < TC; ++c) hwy::Prefetch(B + (g0 + ahead) * rl + c * rj);
    const std::int64_t g1 = std::min(len, g0 + group);
    for (std::int64_t l = g0; l < g1; ++l) {
      const R* a_col = L + l * ldl;
      V a[VR];
      PRISM_UNROLL
      for (int v = 0; v + 1 < VR; ++v) a[v] = hn::LoadU(d, a_col + v * N);
      // The last vector: masked where that never reads past it (mask all-ones when full).
      if constexpr (fault_free_masked_load) a[VR - 1] = hn::MaskedLoad(mask, d, a_col + (VR - 1) * N);
      else a[VR - 1] = partial ? load_first(d, a_col + (VR - 1) * N, mask, last) : hn::LoadU(d, a_col + (VR - 1) * N);
      outer_step<Cx>(d, a, B + l * rl, rj, sign, acc);
    }
  }
  PRISM_UNROLL
  for (int c = 0; c < TC; ++c)
    PRISM_UNROLL
    for (int v = 0; v < VR; ++v) {
      R* p = out + c * out_ld + v * N;
      hn::Store(hn::Add(hn::Load(d, p), acc[v][c]), d, p);
    }
}

template <class R>
using outer_fn = void (*)(const R*, std::int64_t, std::size_t, const R*, std::int64_t, std::int64_t, std::int64_t,
                          R*, std::int64_t, bool, std::int64_t, bool);

// Entry (VR, TC) of the outer tile table; nullptr (nothing instantiated) where TC is
// wider than the registers allow.
template <class R, bool Cx, int VR, int TC>
constexpr outer_fn<R> outer_entry() {
  if constexpr (TC <= outer_tc[VR - 1]) return &outer_tile<R, Cx, VR, TC>;
  else return nullptr;
}

// All outer tiles, vr vectors by tc columns at [(vr - 1) * 8 + tc - 1].
template <class R, bool Cx, int... K>
constexpr std::array<outer_fn<R>, sizeof...(K)> outer_tiles(std::integer_sequence<int, K...>) {
  return {outer_entry<R, Cx, K / 8 + 1, K % 8 + 1>()...};
}

template <class R, bool Cx>
void outer(const task& t) {
  const hn::ScalableTag<R> d;
  const std::int64_t N = std::int64_t(hn::Lanes(d));
  constexpr int w = Cx ? 2 : 1;
  // A column of L as vectors: e.g. 12 complex doubles = 24 reals = 3 AVX-512 vectors, the
  // last one full; 5 doubles = 1 vector holding 5 of its 8 lanes.
  const std::int64_t reals = t.rows * w, vectors = (reals + N - 1) / N;
  const std::int64_t out_ld = vectors * N;
  // Column sums, column j from out + j * out_ld (AVX-512 complex double: 5 KiB).
  HWY_ALIGN R out[streaming_max_mn * (2 * streaming_max_mn + hn::MaxLanes(d))];
  std::fill(out, out + t.cols * out_ld, R(0));
  const std::int64_t vr = piece(vectors, outer_vr);
  const std::int64_t tc = piece(t.cols, outer_tc[std::size_t(vr - 1)]);
  const bool one_tile = vr >= vectors && tc >= t.cols;
  std::int64_t chunk = t.k;
  if (!one_tile)
    chunk = std::max<std::int64_t>(1, t.chunk_bytes / ((t.rows + t.cols) * w * std::int64_t(sizeof(R))));
  static constexpr auto tiles = outer_tiles<R, Cx>(std::make_integer_sequence<int, outer_vr * 8>{});
  // Prefetch distance in steps l: the next chunk, or ahead_bytes of a column of R.
  const std::int64_t ahead = one_tile ? std::max<std::int64_t>(1, t.ahead_bytes / (w * std::int64_t(sizeof(R)))) : chunk;
  const R* L = static_cast<const R*>(t.L);
  const R* B = static_cast<const R*>(t.R);
  const std::int64_t ldl = t.ldl * w, rl = t.rl * w, rj = t.rj * w;
  const bool flip = t.conj_l != t.conj_r;  // conj(a) b is computed as conj(a conj(b))
  for (std::int64_t l0 = 0; l0 < t.k; l0 += chunk) {
    const std::int64_t len = std::min(chunk, t.k - l0);
    for (std::int64_t v0 = 0; v0 < vectors; v0 += vr) {
      const int h = int(std::min(vr, vectors - v0));
      // Reals in the tile's last vector: e.g. 20 reals in 8 lanes, tile of vectors 0..2 -> 4.
      const std::size_t last = std::size_t(std::min(reals - (v0 + h - 1) * N, N));
      for (std::int64_t j0 = 0; j0 < t.cols; j0 += tc) {
        const int wd = int(std::min(tc, t.cols - j0));
        tiles[std::size_t((h - 1) * 8 + wd - 1)](L + v0 * N + l0 * ldl, ldl, last, B + l0 * rl + j0 * rj, rl, rj, len,
                                                 out + j0 * out_ld + v0 * N, out_ld, flip, ahead, v0 == 0);
      }
    }
  }
  R* S = static_cast<R*>(t.S);
  for (std::int64_t j = 0; j < t.cols; ++j)
    for (std::int64_t i = 0; i < reals; ++i) {
      const R x = out[j * out_ld + i];
      S[j * reals + i] = Cx && t.conj_l && i % 2 == 1 ? -x : x;  // conj(a) b = conj(a conj(b))
    }
}

template <class R, bool Cx>
void run(const task& t) {
  if (t.dot) dot<R, Cx>(t);
  else outer<R, Cx>(t);
}

#endif  // HWY_TARGET == HWY_SCALAR

// The exported entry points, one per scalar type.
void run_s(const task& t) { run<float, false>(t); }
void run_d(const task& t) { run<double, false>(t); }
void run_c(const task& t) { run<float, true>(t); }
void run_z(const task& t) { run<double, true>(t); }
const char* target_name() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace prism::detail::streaming
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace prism::detail {

namespace streaming {
HWY_EXPORT(run_s);
HWY_EXPORT(run_d);
HWY_EXPORT(run_c);
HWY_EXPORT(run_z);
HWY_EXPORT(target_name);

std::atomic<bool> ran{false};

template <scalar T>
void run(const task& t) {
  if constexpr (std::same_as<T, float>) HWY_DYNAMIC_DISPATCH(run_s)(t);
  else if constexpr (std::same_as<T, double>) HWY_DYNAMIC_DISPATCH(run_d)(t);
  else if constexpr (std::same_as<T, std::complex<float>>) HWY_DYNAMIC_DISPATCH(run_c)(t);
  else HWY_DYNAMIC_DISPATCH(run_z)(t);
}
}  // namespace streaming

template <scalar T>
void streaming_gemm(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                    const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
                    std::int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (!streaming_applies(m, n))
    throw error("the streaming leaf takes m, n <= 16, got " + std::to_string(m) + "x" + std::to_string(n));
  if (!streaming::ran.load(std::memory_order_relaxed)) streaming::ran.store(true, std::memory_order_relaxed);
  const bool zero = alpha == T(0) || k <= 0;
  if (zero && beta == T(1)) return;  // reference BLAS: C untouched (not even -0 + 0)
  constexpr bool cx = !std::same_as<T, float> && !std::same_as<T, double>;
  auto up = [](char t) { return t == 'n' ? 'N' : t == 't' ? 'T' : t == 'c' ? 'C' : t; };
  const char ta = up(transa), tb = up(transb);
  alignas(64) T S[streaming_max_mn * streaming_max_mn];
  bool transposed = false;
  if (!zero) {
    streaming::task t;
    t.k = k;
    t.S = S;
    // Which operands run along k in memory. A 1 x k op(A) = A with lda = 1 is a row stored
    // contiguously: it runs along k as well (likewise a k x 1 op(B) = B^T with ldb = 1).
    const bool a_along_k = ta != 'N' || (m == 1 && lda == 1);
    const bool b_along_k = tb == 'N' || (n == 1 && ldb == 1);
    const bool conj_a = cx && ta == 'C', conj_b = cx && tb == 'C';
    // op(A)(i, l) is A[i + l*lda] for 'N', A[l + i*lda] otherwise; op(B)(l, j) is
    // B[l + j*ldb] for 'N', B[j + l*ldb] otherwise.
    if (a_along_k && b_along_k) {  // TN: S = op(A) op(B) by dot products along k
      t.dot = true;
      t.rows = m, t.cols = n;
      t.L = A, t.ldl = ta == 'N' ? 1 : lda, t.conj_l = conj_a;
      t.R = B, t.rl = 1, t.rj = tb == 'N' ? ldb : 1, t.conj_r = conj_b;
    } else if (!a_along_k && (b_along_k || m >= n)) {  // NN, NT: columns of op(A) times R(l, j)
      t.rows = m, t.cols = n;
      t.L = A, t.ldl = lda, t.conj_l = false;
      t.R = B, t.conj_r = conj_b;
      if (tb == 'N') t.rl = 1, t.rj = ldb;
      else t.rl = ldb, t.rj = 1;
    } else {  // TT, and NT with n > m: S = op(B)^T op(A)^T = C^T, columns of op(B)^T
      transposed = true;
      t.rows = n, t.cols = m;
      t.L = B, t.ldl = ldb, t.conj_l = conj_b;  // op(B)^T(j, l) = B[j + l*ldb]
      t.R = A, t.conj_r = conj_a;               // op(A)^T(l, i) = op(A)(i, l)
      if (ta == 'N') t.rl = lda, t.rj = 1;
      else t.rl = 1, t.rj = lda;
    }
    streaming::run<T>(t);
  }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      T& c = C[i + j * ldc];
      if (zero) {
        c = beta == T(0) ? T(0) : beta * c;
        continue;
      }
      const T s = transposed ? S[j + i * n] : S[i + j * m];
      c = beta == T(0) ? alpha * s : alpha * s + beta * c;  // beta = 0: C is not read
    }
}

bool streaming_preferred(scalar_type, std::int64_t m, std::int64_t n, std::int64_t k) {
  return streaming_applies(m, n) && k >= 4096;  // placeholder until measured
}

const char* streaming_target() { return HWY_DYNAMIC_DISPATCH(streaming::target_name)(); }

bool streaming_leaf_ran() noexcept { return streaming::ran.load(std::memory_order_relaxed); }

#define PRISM_INSTANTIATE(T)                                                                                \
  template void streaming_gemm<T>(char, char, std::int64_t, std::int64_t, std::int64_t, T, const T*,        \
                                  std::int64_t, const T*, std::int64_t, T, T*, std::int64_t);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism::detail

#endif  // HWY_ONCE
