// lib/leaf/kernels/streaming.cpp — the streaming leaf's kernels (Google Highway, runtime
// dispatch) and its rule for `auto`. What it is for: streaming.hpp.
//
// The product. A real leaf above 16 x 16 runs the panel kernel (panel_sums, below): k in
// chunks whose block of rows stays in L1, register tiles of up to 4 vectors by 6 columns
// over the whole leaf, op(A) = A^T transposed chunk by chunk into the 'N' form. A complex
// leaf above 16 x 16 is tiled: k in L2-sized chunks (stream_tile_chunk_bytes), each 16 x 16
// block of C one pass of the kernels below over the chunk, which add their sums straight
// into a per-thread buffer. One pass turns every case into S = L R, an r x c result (r, c
// <= 16) of an r x k left operand L and a k x c right operand R, and then C = alpha S +
// beta C (or alpha S^T + beta C when the case was transposed). Two kernels cover the
// layouts:
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
// Otherwise k is cut into chunks (the machine's stream_outer_chunk_bytes of L and R
// together for the outer kernel, stream_dot_chunk_bytes for the dot kernel; 32 and 128
// KiB on the developers' host): every tile runs over the chunk, so the chunk comes from memory
// once and from cache for the other tiles, and the tiles' partial sums live in a small
// buffer between chunks. Nothing is packed or copied. Software prefetch keeps the many
// streams (a row or column of an operand each, up to 32) coming: see dot_tile and
// outer_tile.
//
// Complex numbers stay interleaved (re, im). For the outer kernel, with a = L(:, l) as
// lanes (ar0, ai0, ar1, ai1, ...) and b = R(l, j) = (br, bi):
//   a b = a * br + swap(a) * (-1, +1) * bi,   swap(a) = (ai0, ar0, ai1, ar1, ...)
// (first pair: ar br - ai bi, ai br + ar bi), so each column costs two broadcasts and two
// FMAs per vector. conj(b) flips the sign vector to (+1, -1); conj(a) is handled at the
// end, as conj(a) b = conj(a conj(b)). For the dot kernel, with a and b both running along
// k, p += a * b and q += a * swap(b) collect (ar br, ai bi) and (ar bi, ai br) pairs, and
// the sums come out as re = sum(p_even) -+ sum(p_odd), im = +-(sum(q_even) +- sum(q_odd)),
// the signs set by which operand is conjugated (worked out at dot_tile).
#ifndef PRISM_LEAVES_STREAMING_SHARED
#define PRISM_LEAVES_STREAMING_SHARED

// Highway compiles this file once per instruction set. SSSE3 and SSE4 are left out (a
// CPU without AVX2, from before 2013, runs the scalar fallback): two more copies of every
// kernel, in build time and code size, for CPUs that no longer run this kind of code.
// Must come before any Highway header.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#endif

#include "streaming.hpp"

#include <prism/error.hpp>

#include "../../environment/environment.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>
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
  // Chunk sizes and prefetch distance: the machine's (streaming_current_sizes; block_sums
  // sets them). On the developers' AMD EPYC (48 KiB L1d, 1 MiB L2 per core), one
  // thread, k = 2^18..2^20: the dot kernel ran 'TN' 16 x 16 and 8 x 8 10-30% faster with
  // 128 KiB chunks than with 32 KiB; the outer kernel ran 'NN' 16 x 16 best at 16-32 KiB;
  // 8 KiB in flight over all streams (4-16 KiB were within noise) lifted single-pass 'NN'
  // 4 x 4 and 8 x 8 from ~15-20 to 40-50 GB/s. The model scales these with the caches
  // (lib/runtime/machine.cpp); `prism tune` measures them.
  std::int64_t dot_chunk_bytes = 0;    ///< dot: bytes of L and R per k-chunk when tiles share it
  std::int64_t outer_chunk_bytes = 0;  ///< outer: likewise
  std::int64_t flight_bytes = 0;       ///< prefetch distance, over all streams, when k is not chunked
  void* S = nullptr;           ///< r x c result, column-major (complex: re, im pairs)
  std::int64_t s_ld = 0;       ///< elements between columns of S (>= rows)
  bool add = false;            ///< S += L R (the tiled leaf's running sums), else S = L R
};

/// s = x, or s += x when `add` (a tiled leaf's running sums).
template <class T>
inline void put(T& s, T x, bool add) {
  s = add ? s + x : x;
}

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
      put(S[i + j * t.s_ld], s, t.add);
    }
}

/// One k-chunk of a rank-k update's sums (the syrk kernel): out(:, j) += L(:, l) R(l, j)
/// for l < len and the rows of column j's upper triangle, R(l, j) = L(j, l) (syrk) or
/// conj(L(j, l)) (herk). L is always in the 'N' form, L(i, l) at L[i + l * ldl] elements:
/// A itself for trans 'N', a transposed copy of the chunk for 'T' / 'C'.
struct syrk_task {
  std::int64_t n = 0;         ///< order of C (elements)
  std::int64_t len = 0;       ///< steps l in this chunk (>= 1)
  const void* L = nullptr;
  std::int64_t ldl = 1;       ///< elements between columns of L
  bool conj = false;          ///< herk: R = L^H, else R = L^T
  // The next chunk, to prefetch while this one runs (or nullptr): next_cols columns of
  // next_rows elements each, next_ld elements apart. Trans 'N': the next len columns of L
  // (n rows, ldl apart); 'T' / 'C': the next rows of A's n columns, before packing.
  const void* next = nullptr;
  std::int64_t next_cols = 0, next_rows = 0, next_ld = 0;
  bool next_always = false;   ///< prefetch even for narrow n (A's columns: n streams)
  void* out = nullptr;        ///< sums: column j at out + j * out_ld reals, 64-byte aligned
  std::int64_t out_ld = 0;    ///< reals; a multiple of 64 bytes' worth, so every target's vectors fit
};

/// One chunk of a trans 'T' / 'C' rank-k update transposed into the 'N' form the syrk
/// kernel reads: P(i, l) = A(l0 + l, i) (conjugated when conj), P(i, l) at P[i + l * n].
struct pack_task {
  const void* A = nullptr;  ///< A(l0, 0)
  std::int64_t lda = 1;
  std::int64_t n = 0, len = 0;
  bool conj = false;
  void* P = nullptr;
};

/// The plain loops of the packing (the scalar target, and the edges of the others).
/// (i0, l0) is where the vector code stopped: it moved columns [0, i0) of A, rows
/// [0, l0); these loops move the rest (i0 = 0: the whole chunk).
template <class T>
void plain_pack(const pack_task& t, std::int64_t i0, std::int64_t l0) {
  const T* A = static_cast<const T*>(t.A);
  T* P = static_cast<T*>(t.P);
  for (std::int64_t i = 0; i < t.n; ++i)
    for (std::int64_t l = i < i0 ? l0 : 0; l < t.len; ++l) {
      T x = A[l + i * t.lda];
      if constexpr (!std::is_floating_point_v<T>)
        if (t.conj) x = std::conj(x);
      P[i + l * t.n] = x;
    }
}

/// One k-chunk of a real leaf above 16 x 16 for the panel kernel: S += L R over the whole
/// rows x cols, L in the 'N' form (A itself for trans 'N', else the chunk of op(A) packed by
/// pack_chunk), R where it lies (all strides in elements).
struct panel_task {
  const void* L = nullptr;     ///< L(i, l) at L[i + l * ldl]
  std::int64_t ldl = 1;
  const void* R = nullptr;     ///< R(l, j) at R[l * rl + j * rj]
  std::int64_t rl = 1, rj = 1;
  std::int64_t rows = 0, cols = 0, len = 0;
  void* S = nullptr;           ///< sums, S(i, j) at S[i + j * lds]; lds rounds rows up to 64 bytes
  std::int64_t lds = 0;
  std::int64_t ahead = 0;      ///< steps to the next chunk (0: this is the last): R's and L's prefetch distance
  bool fetch_l = false;        ///< L is A itself: its next chunk is fetched by the first column's tiles
  // A's next chunk when L is packed (trans 'T'): next_cols columns of next_rows elements,
  // next_ld apart, fetched while this chunk runs, spread over the tiles.
  const void* next = nullptr;
  std::int64_t next_cols = 0, next_rows = 0, next_ld = 0;
};

/// The plain loops of the panel kernel (scalar fallback target).
template <class R>
void plain_panel(const panel_task& t) {
  const R* L = static_cast<const R*>(t.L);
  const R* B = static_cast<const R*>(t.R);
  R* S = static_cast<R*>(t.S);
  for (std::int64_t j = 0; j < t.cols; ++j)
    for (std::int64_t i = 0; i < t.rows; ++i) {
      R sum = 0;
      for (std::int64_t l = 0; l < t.len; ++l) sum += L[i + l * t.ldl] * B[l * t.rl + j * t.rj];
      S[i + j * t.lds] += sum;
    }
}

/// The plain loops of the syrk kernel (scalar fallback target): out(i, j) for i <= j.
template <class R, bool Cx>
void plain_syrk(const syrk_task& t) {
  using T = std::conditional_t<Cx, std::complex<R>, R>;
  const T* L = static_cast<const T*>(t.L);
  R* out = static_cast<R*>(t.out);
  for (std::int64_t j = 0; j < t.n; ++j)
    for (std::int64_t i = 0; i <= j; ++i) {
      T s(0);
      for (std::int64_t l = 0; l < t.len; ++l) {
        T b = L[j + l * t.ldl];
        if constexpr (Cx)
          if (t.conj) b = std::conj(b);
        s += L[i + l * t.ldl] * b;
      }
      T* o = reinterpret_cast<T*>(out + j * t.out_ld) + i;
      *o += s;
    }
}

}  // namespace prism::detail::streaming

#endif  // PRISM_LEAVES_STREAMING_SHARED

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "leaf/kernels/streaming.cpp"
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

template <class R, bool Cx>
void syrk_chunk(const syrk_task& t) {
  plain_syrk<R, Cx>(t);
}

template <class R, bool Cx>
void pack_chunk(const pack_task& t) {
  plain_pack<std::conditional_t<Cx, std::complex<R>, R>>(t, 0, 0);
}

template <class R>
void panel(const panel_task& t) {
  plain_panel<R>(t);
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

// Sign vector (1, s, 1, s, ...): even lanes times 1, odd lanes times s.
template <class D>
HWY_INLINE hn::Vec<D> even_odd(D d, hn::TFromD<D> s) {
  return hn::OddEven(hn::Set(d, s), hn::Set(d, hn::TFromD<D>(1)));
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

// Balanced cuts of `extent` into pieces of at most `most`: e.g. 6 with most 4 -> 3 + 3.
inline std::int64_t piece(std::int64_t extent, std::int64_t most) {
  const std::int64_t pieces = (extent + most - 1) / most;
  return (extent + pieces - 1) / pieces;
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

// ---- panel kernel ------------------------------------------------------------------------

// Register tiles of the panel kernel: up to panel_vr vectors of rows by panel_tc[VR - 1]
// columns, each a real accumulator per vector and column, plus the VR vectors of L and one
// broadcast. With 32 registers 4 x 6 (24 accumulators: 4 loads and 6 broadcasts a step for
// 24 FMAs) or 3 x 8; with 16 (AVX2) 2 x 6 (12, plus 3).
constexpr int panel_vr = registers == 32 ? 4 : 2;
constexpr std::array<int, 4> panel_tc = registers == 32 ? std::array<int, 4>{8, 8, 8, 6} : std::array<int, 4>{8, 6, 0, 0};

// One chunk of a real leaf above 16 x 16 (panel_task): the rows in blocks of up to
// panel_vr vectors, the columns in pieces of up to panel_tc, each tile one pass over the
// chunk adding its sums into S. Columns outer, row blocks inner: a piece of R (up to 8
// columns) stays in L1 while the row blocks pass over it; the chunk of L (for 64 x 64
// doubles, 2 blocks of 32 rows by 128 steps: 64 KiB) comes from L2 for each piece.
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

// ---- syrk kernel ------------------------------------------------------------------------

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

// Transposes a trans 'T' / 'C' chunk (pack_task). On AVX-512 it moves 8 x 8 blocks of
// 64-bit units (a double, or a complex float) and 4 x 4 blocks of complex doubles through
// registers: 8 loads down 8 columns of A, 24 shuffles, 8 stores across P (the chunk was
// prefetched while the kernel ran over the one before: syrk_task::next); floats in 8 x 8
// blocks of 256-bit registers. The edges (n or len not a multiple of the block) take the
// plain loops; so do other instruction sets.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
// 8 x 8 transpose of 64-bit units: r[c] holds column c (rows 0..7), r[c] becomes row c.
// E.g. after the unpacks t0 = (r0[0], r1[0], r0[2], r1[2], ...); after the first
// shuffle_f64x2 round u0 = (r0[0], r1[0], r0[4], r1[4], r2[0], r3[0], r2[4], r3[4]); the
// second round's o0 = (r0[0], r1[0], ..., r7[0]): row 0.
HWY_INLINE void transpose8(__m512d (&r)[8]) {
  __m512d t[8], u[8];
  for (int p = 0; p < 4; ++p) {
    t[2 * p] = _mm512_unpacklo_pd(r[2 * p], r[2 * p + 1]);
    t[2 * p + 1] = _mm512_unpackhi_pd(r[2 * p], r[2 * p + 1]);
  }
  // u0, u1: elements {0, 4} and {2, 6} of columns 0..3; u2, u3: {1, 5}, {3, 7}; u4..u7
  // likewise for columns 4..7.
  u[0] = _mm512_shuffle_f64x2(t[0], t[2], 0x88), u[1] = _mm512_shuffle_f64x2(t[0], t[2], 0xdd);
  u[2] = _mm512_shuffle_f64x2(t[1], t[3], 0x88), u[3] = _mm512_shuffle_f64x2(t[1], t[3], 0xdd);
  u[4] = _mm512_shuffle_f64x2(t[4], t[6], 0x88), u[5] = _mm512_shuffle_f64x2(t[4], t[6], 0xdd);
  u[6] = _mm512_shuffle_f64x2(t[5], t[7], 0x88), u[7] = _mm512_shuffle_f64x2(t[5], t[7], 0xdd);
  r[0] = _mm512_shuffle_f64x2(u[0], u[4], 0x88), r[4] = _mm512_shuffle_f64x2(u[0], u[4], 0xdd);
  r[1] = _mm512_shuffle_f64x2(u[2], u[6], 0x88), r[5] = _mm512_shuffle_f64x2(u[2], u[6], 0xdd);
  r[2] = _mm512_shuffle_f64x2(u[1], u[5], 0x88), r[6] = _mm512_shuffle_f64x2(u[1], u[5], 0xdd);
  r[3] = _mm512_shuffle_f64x2(u[3], u[7], 0x88), r[7] = _mm512_shuffle_f64x2(u[3], u[7], 0xdd);
}

// 4 x 4 transpose of 128-bit units (complex doubles), as transpose8's second round.
HWY_INLINE void transpose4x128(__m512d (&r)[4]) {
  const __m512d u0 = _mm512_shuffle_f64x2(r[0], r[1], 0x44), u1 = _mm512_shuffle_f64x2(r[0], r[1], 0xee);
  const __m512d u2 = _mm512_shuffle_f64x2(r[2], r[3], 0x44), u3 = _mm512_shuffle_f64x2(r[2], r[3], 0xee);
  r[0] = _mm512_shuffle_f64x2(u0, u2, 0x88), r[1] = _mm512_shuffle_f64x2(u0, u2, 0xdd);
  r[2] = _mm512_shuffle_f64x2(u1, u3, 0x88), r[3] = _mm512_shuffle_f64x2(u1, u3, 0xdd);
}

// 8 x 8 transpose of floats in 256-bit registers, the same way: r[c] holds column c, r[c]
// becomes row c. After the unpacks t0 = (r0[0], r1[0], r0[1], r1[1] | r0[4], r1[4], r0[5],
// r1[5]); after the shuffles u0 = (r0[0], r1[0], r2[0], r3[0] | r0[4], r1[4], r2[4], r3[4]);
// the 128-bit permutes join the halves of u0 and u4 into row 0 and row 4.
HWY_INLINE void transpose8(__m256 (&r)[8]) {
  __m256 t[8], u[8];
  for (int p = 0; p < 4; ++p) {
    t[2 * p] = _mm256_unpacklo_ps(r[2 * p], r[2 * p + 1]);
    t[2 * p + 1] = _mm256_unpackhi_ps(r[2 * p], r[2 * p + 1]);
  }
  for (int h = 0; h < 8; h += 4) {  // columns 0..3, then 4..7
    u[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44), u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xee);
    u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44), u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xee);
  }
  for (int c = 0; c < 4; ++c) {
    r[c] = _mm256_permute2f128_ps(u[c], u[c + 4], 0x20);
    r[c + 4] = _mm256_permute2f128_ps(u[c], u[c + 4], 0x31);
  }
}

template <class R, bool Cx>
void pack_chunk(const pack_task& t) {
  using T = std::conditional_t<Cx, std::complex<R>, R>;
  if constexpr (!Cx && std::is_same_v<R, float>) {
    const float* A = static_cast<const float*>(t.A);
    float* P = static_cast<float*>(t.P);
    const std::int64_t n8 = t.n - t.n % 8, len8 = t.len - t.len % 8;
    for (std::int64_t i = 0; i < n8; i += 8)
      for (std::int64_t l = 0; l < len8; l += 8) {
        __m256 r[8];
        for (int c = 0; c < 8; ++c) r[c] = _mm256_loadu_ps(A + l + (i + c) * t.lda);
        transpose8(r);
        for (int c = 0; c < 8; ++c) _mm256_storeu_ps(P + i + (l + c) * t.n, r[c]);
      }
    plain_pack<T>(t, n8, len8);
  } else {
    // B units per block side: 8 doubles or complex floats (64 bits), 4 complex doubles.
    constexpr int B = sizeof(T) == 8 ? 8 : 4;
    const T* A = static_cast<const T*>(t.A);
    T* P = static_cast<T*>(t.P);
    const std::int64_t n8 = t.n - t.n % B, len8 = t.len - t.len % B;
    // conj: flip the sign bit of each imaginary part (the odd float or double lanes).
    __m512d flip = _mm512_setzero_pd();
    if constexpr (Cx) {
      if (t.conj) {
        if constexpr (std::is_same_v<R, float>) flip = _mm512_castps_pd(_mm512_set_ps(
            -0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f));
        else flip = _mm512_set_pd(-0., 0., -0., 0., -0., 0., -0., 0.);
      }
    }
    for (std::int64_t i = 0; i < n8; i += B)
      for (std::int64_t l = 0; l < len8; l += B) {
        if constexpr (B == 8) {
          __m512d r[8];
          for (int c = 0; c < 8; ++c) {
            const T* src = A + l + (i + c) * t.lda;
            r[c] = _mm512_xor_pd(_mm512_loadu_pd(reinterpret_cast<const double*>(src)), flip);
          }
          transpose8(r);
          for (int c = 0; c < 8; ++c) _mm512_storeu_pd(reinterpret_cast<double*>(P + i + (l + c) * t.n), r[c]);
        } else {
          __m512d r[4];
          for (int c = 0; c < 4; ++c) {
            const T* src = A + l + (i + c) * t.lda;
            r[c] = _mm512_xor_pd(_mm512_loadu_pd(reinterpret_cast<const double*>(src)), flip);
          }
          transpose4x128(r);
          for (int c = 0; c < 4; ++c) _mm512_storeu_pd(reinterpret_cast<double*>(P + i + (l + c) * t.n), r[c]);
        }
      }
    plain_pack<T>(t, n8, len8);
  }
}
#else
template <class R, bool Cx>
void pack_chunk(const pack_task& t) {
  plain_pack<std::conditional_t<Cx, std::complex<R>, R>>(t, 0, 0);
}
#endif

// The kernel the task names.
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
void pack_s(const pack_task& t) { pack_chunk<float, false>(t); }
void pack_d(const pack_task& t) { pack_chunk<double, false>(t); }
void pack_c(const pack_task& t) { pack_chunk<float, true>(t); }
void pack_z(const pack_task& t) { pack_chunk<double, true>(t); }
void panel_s(const panel_task& t) { panel<float>(t); }
void panel_d(const panel_task& t) { panel<double>(t); }
void syrk_s(const syrk_task& t) { syrk_chunk<float, false>(t); }
void syrk_d(const syrk_task& t) { syrk_chunk<double, false>(t); }
void syrk_c(const syrk_task& t) { syrk_chunk<float, true>(t); }
void syrk_z(const syrk_task& t) { syrk_chunk<double, true>(t); }
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
HWY_EXPORT(pack_s);
HWY_EXPORT(pack_d);
HWY_EXPORT(pack_c);
HWY_EXPORT(pack_z);
HWY_EXPORT(panel_s);
HWY_EXPORT(panel_d);
HWY_EXPORT(syrk_s);
HWY_EXPORT(syrk_d);
HWY_EXPORT(syrk_c);
HWY_EXPORT(syrk_z);

std::atomic<bool> ran{false};

// PRISM_SIMD (read once, before the first kernel runs): "avx2" keeps the kernels off every
// target above AVX2, "scalar" off every SIMD target (the plain loops), so tests and
// benchmarks can run what an AVX2-only or a SIMD-less CPU would; unset or "auto": the best
// target this CPU runs. Highway numbers targets best first: HWY_AVX2 is 1 << 9, so
// HWY_AVX2 - 1 sets bits 0..8, every AVX-512 / AVX10 target. Anything else: one warning
// (lib/environment checks the value).
// prism never calls hwy::SupportedTargets() itself: in Highway 1.0 that call re-detects and
// points the dispatch back at the best target until the next DisableTargets.
void apply_simd_choice() {
  static std::once_flag once;
  std::call_once(once, [] {
    switch (process_environment().simd.get()) {  // a bad value says its line here
      case simd_choice::automatic: break;
      case simd_choice::avx2: hwy::DisableTargets(HWY_AVX2 - 1); break;
      case simd_choice::scalar: hwy::DisableTargets(~(HWY_SCALAR | HWY_EMU128)); break;
    }
  });
}

template <scalar T>
void run(const task& t) {
  apply_simd_choice();
  if constexpr (std::same_as<T, float>) HWY_DYNAMIC_DISPATCH(run_s)(t);
  else if constexpr (std::same_as<T, double>) HWY_DYNAMIC_DISPATCH(run_d)(t);
  else if constexpr (std::same_as<T, std::complex<float>>) HWY_DYNAMIC_DISPATCH(run_c)(t);
  else HWY_DYNAMIC_DISPATCH(run_z)(t);
}

template <scalar T>
void pack_chunk(const pack_task& t) {
  apply_simd_choice();
  if constexpr (std::same_as<T, float>) HWY_DYNAMIC_DISPATCH(pack_s)(t);
  else if constexpr (std::same_as<T, double>) HWY_DYNAMIC_DISPATCH(pack_d)(t);
  else if constexpr (std::same_as<T, std::complex<float>>) HWY_DYNAMIC_DISPATCH(pack_c)(t);
  else HWY_DYNAMIC_DISPATCH(pack_z)(t);
}

template <class R>
void panel(const panel_task& t) {
  apply_simd_choice();
  if constexpr (std::same_as<R, float>) HWY_DYNAMIC_DISPATCH(panel_s)(t);
  else HWY_DYNAMIC_DISPATCH(panel_d)(t);
}

template <scalar T>
void syrk_chunk(const syrk_task& t) {
  apply_simd_choice();
  if constexpr (std::same_as<T, float>) HWY_DYNAMIC_DISPATCH(syrk_s)(t);
  else if constexpr (std::same_as<T, double>) HWY_DYNAMIC_DISPATCH(syrk_d)(t);
  else if constexpr (std::same_as<T, std::complex<float>>) HWY_DYNAMIC_DISPATCH(syrk_c)(t);
  else HWY_DYNAMIC_DISPATCH(syrk_z)(t);
}
}  // namespace streaming

// The kernels' sizes: this host's machine description's, read once at the first call;
// streaming_set_sizes overrides them field by field (0: the description's).
namespace {
std::atomic<std::int64_t> size_override[5] = {};

const streaming_sizes& described_sizes() {
  static const streaming_sizes s = streaming_sizes_of(default_description());
  return s;
}
}  // namespace

streaming_sizes streaming_sizes_of(const machine_description& mc) {
  auto bytes = [&](machine_key k) { return std::max<std::int64_t>(64, std::int64_t(mc.value(k))); };
  streaming_sizes s;
  s.outer_chunk = bytes(machine_key::stream_outer_chunk_bytes);
  s.dot_chunk = bytes(machine_key::stream_dot_chunk_bytes);
  s.tile_chunk = bytes(machine_key::stream_tile_chunk_bytes);
  s.prefetch = bytes(machine_key::stream_prefetch_bytes);
  s.syrk_chunk = bytes(machine_key::syrk_chunk_bytes);
  return s;
}

streaming_sizes streaming_current_sizes() {
  streaming_sizes s = described_sizes();
  std::int64_t* fields[5] = {&s.outer_chunk, &s.dot_chunk, &s.tile_chunk, &s.prefetch, &s.syrk_chunk};
  for (int i = 0; i < 5; ++i)
    if (const std::int64_t v = size_override[i].load(std::memory_order_relaxed); v > 0) *fields[i] = v;
  return s;
}

void streaming_set_sizes(const streaming_sizes& s) {
  const std::int64_t fields[5] = {s.outer_chunk, s.dot_chunk, s.tile_chunk, s.prefetch, s.syrk_chunk};
  for (int i = 0; i < 5; ++i) size_override[i].store(std::max<std::int64_t>(0, fields[i]), std::memory_order_relaxed);
}

namespace {

// Upper-case BLAS trans letter.
char trans_letter(char t) { return t == 'n' ? 'N' : t == 't' ? 'T' : t == 'c' ? 'C' : t; }

// S = op(A) op(B), or S += op(A) op(B) when `add`, for one block, m, n <=
// streaming_block_mn, k >= 1 (ta, tb upper case): S column-major m x n with leading
// dimension lds. One pass of the kernels over A and B, in the chunks and prefetch distance
// of z. The kernels write S themselves, except for a transposed case (below), which goes
// through a buffer.
template <scalar T>
void block_sums(const streaming_sizes& z, char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k,
                const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T* S, std::int64_t lds, bool add) {
  constexpr bool cx = !std::same_as<T, float> && !std::same_as<T, double>;
  alignas(64) T out[streaming_block_mn * streaming_block_mn];
  streaming::task t;
  t.k = k;
  t.S = S, t.s_ld = lds, t.add = add;
  t.dot_chunk_bytes = z.dot_chunk, t.outer_chunk_bytes = z.outer_chunk, t.flight_bytes = z.prefetch;
  bool transposed = false;
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
    transposed = true;  // the kernel writes S^T into the buffer
    t.S = out, t.s_ld = n, t.add = false;
    t.rows = n, t.cols = m;
    t.L = B, t.ldl = ldb, t.conj_l = conj_b;  // op(B)^T(j, l) = B[j + l*ldb]
    t.R = A, t.conj_r = conj_a;               // op(A)^T(l, i) = op(A)(i, l)
    if (ta == 'N') t.rl = lda, t.rj = 1;
    else t.rl = 1, t.rj = lda;
  }
  streaming::run<T>(t);
  if (!transposed) return;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) streaming::put(S[i + j * lds], out[j + i * n], add);
}

// The k extent of one chunk of a tiled leaf: op(A)'s m x kc and op(B)'s kc x n block take
// the machine's stream_tile_chunk_bytes together (the model: a quarter of one core's L2,
// 256 KiB on the developers' host), so the chunk stays in L2 while every block of C passes
// over it. Example, 256 KiB: 64 x 64 doubles, (64 + 64) * 8 B = 1 KiB per step of k,
// kc = 256; 128 x 128 complex double: 4 KiB per step, kc = 64 (the floor).
template <scalar T>
std::int64_t tiled_chunk(const streaming_sizes& z, std::int64_t m, std::int64_t n) {
  return std::max<std::int64_t>(64, z.tile_chunk / ((m + n) * std::int64_t(sizeof(T))));
}

// Per-thread sums of a tiled leaf (up to 128 x 128 elements: 256 KiB for complex double,
// too much for a task's stack), and the packed chunk of the panel kernel.
template <scalar T>
std::vector<T>& tiled_sums() {
  thread_local std::vector<T> v;
  return v;
}
template <scalar T>
std::vector<T>& panel_buffer() {
  thread_local std::vector<T> v;
  return v;
}

// The first 64-byte boundary in v, with room for `count` elements after it.
template <scalar T>
T* aligned_in(std::vector<T>& v, std::size_t count) {
  v.resize(count + 64 / sizeof(T));
  const auto p = reinterpret_cast<std::uintptr_t>(v.data());
  return reinterpret_cast<T*>((p + 63) & ~std::uintptr_t(63));
}

// The k extent of one chunk of the panel kernel: the chunk of one block of rows (at most
// 256 bytes a step, the 4 AVX-512 vectors of a register tile) takes the machine's
// stream_outer_chunk_bytes (the model: 1/3 of one core's L1d, 16 KiB on the developers'
// host), so it stays in L1 while the column pieces pass over it; between 64 steps (the
// tiles' sums are added to S once a chunk) and the tiled leaf's L2 chunk. Example, 16 KiB:
// 32 x 32 and 64 x 64 doubles, 256 bytes a step: 64 steps.
template <scalar T>
std::int64_t panel_chunk(const streaming_sizes& z, std::int64_t m, std::int64_t n) {
  const std::int64_t step = std::min<std::int64_t>(m * std::int64_t(sizeof(T)), 256);
  return std::clamp<std::int64_t>(z.outer_chunk / step, 64, std::max<std::int64_t>(64, tiled_chunk<T>(z, m, n)));
}

// S += op(A) op(B) for a real leaf above 16 x 16 by the panel kernel, k in chunks
// (panel_chunk): op(A) = A is read where it lies, op(A) = A^T is transposed chunk by chunk
// into the 'N' form (pack_chunk, the rank-k leaf's transposition), op(B) is read where it
// lies. S is m x n with leading dimension lds (m rounded up to 64 bytes).
template <scalar T>
void panel_sums(const streaming_sizes& z, char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k,
                const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T* S, std::int64_t lds) {
  const std::int64_t kc = panel_chunk<T>(z, m, n);
  T* P = ta == 'N' ? nullptr : aligned_in(panel_buffer<T>(), std::size_t(m * std::min(kc, k)));
  streaming::panel_task t;
  t.rows = m, t.cols = n, t.S = S, t.lds = lds;
  t.rl = tb == 'N' ? 1 : ldb, t.rj = tb == 'N' ? ldb : 1;
  for (std::int64_t l0 = 0; l0 < k; l0 += kc) {
    const std::int64_t len = std::min(kc, k - l0), rest = k - l0 - len;
    t.len = len, t.ahead = rest > 0 ? kc : 0;
    if (ta == 'N') {
      t.L = A + l0 * lda, t.ldl = lda, t.fetch_l = true;
    } else {
      streaming::pack_task pk;
      pk.A = A + l0, pk.lda = lda, pk.n = m, pk.len = len, pk.conj = false, pk.P = P;
      streaming::pack_chunk<T>(pk);
      t.L = P, t.ldl = m, t.fetch_l = false;
      t.next = rest > 0 ? A + l0 + len : nullptr;
      t.next_cols = m, t.next_rows = std::min(kc, rest), t.next_ld = lda;
    }
    t.R = tb == 'N' ? B + l0 : B + l0 * ldb;
    streaming::panel<T>(t);
  }
}

}  // namespace

template <scalar T>
void streaming_gemm(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                    const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
                    std::int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (!streaming_applies(m, n))
    throw error("the streaming leaf takes m, n <= " + std::to_string(streaming_max_mn) + ", got " +
                std::to_string(m) + "x" + std::to_string(n));
  if (!streaming::ran.load(std::memory_order_relaxed)) streaming::ran.store(true, std::memory_order_relaxed);
  const bool zero = alpha == T(0) || k <= 0;
  if (zero && beta == T(1)) return;  // reference BLAS: C untouched (not even -0 + 0)
  const char ta = trans_letter(transa), tb = trans_letter(transb);
  const streaming_sizes z = streaming_current_sizes();
  // S = op(A) op(B), column-major with leading dimension ls.
  alignas(64) T small[streaming_block_mn * streaming_block_mn];
  T* S = small;
  std::int64_t ls = m;
  if (zero) {
  } else if (m <= streaming_block_mn && n <= streaming_block_mn) {
    block_sums<T>(z, ta, tb, m, n, k, A, lda, B, ldb, S, ls, false);  // one pass, all sums in registers
  } else if constexpr (std::same_as<T, float> || std::same_as<T, double>) {
    // Real types: the panel kernel (panel_sums), with register tiles over the whole m x n.
    ls = (m + 64 / std::int64_t(sizeof(T)) - 1) / (64 / std::int64_t(sizeof(T))) * (64 / std::int64_t(sizeof(T)));
    S = aligned_in(tiled_sums<T>(), std::size_t(ls * n));
    std::fill(S, S + ls * n, T(0));
    panel_sums<T>(z, ta, tb, m, n, k, A, lda, B, ldb, S, ls);
  } else {
    // Complex types, tiled: k in chunks that stay in L2 (tiled_chunk); for each chunk,
    // every block of C of at most 16 x 16 runs the one-pass kernel over it, so A and B come
    // from memory once and from L2 for the other blocks; the chunks' sums add up in S, and C
    // is read and written once, at the end. Example: 64 x 64 x 2^20 complex doubles, kc = 64:
    // each chunk 16 blocks of 16 x 16; a block reads 16 x 64 of op(A) and 64 x 16 of op(B).
    auto& v = tiled_sums<T>();
    v.assign(std::size_t(m * n), T(0));
    S = v.data();
    const std::int64_t kc = tiled_chunk<T>(z, m, n), bs = streaming_block_mn;
    for (std::int64_t l0 = 0; l0 < k; l0 += kc) {
      const std::int64_t kk = std::min(kc, k - l0);
      for (std::int64_t j0 = 0; j0 < n; j0 += bs)
        for (std::int64_t i0 = 0; i0 < m; i0 += bs) {
          const std::int64_t mb = std::min(bs, m - i0), nb = std::min(bs, n - j0);
          // op(A)(i0, l0) and op(B)(l0, j0) in storage (see block_sums).
          const T* a = ta == 'N' ? A + i0 + l0 * lda : A + l0 + i0 * lda;
          const T* b = tb == 'N' ? B + l0 + j0 * ldb : B + j0 + l0 * ldb;
          block_sums<T>(z, ta, tb, mb, nb, kk, a, lda, b, ldb, S + i0 + j0 * ls, ls, true);
        }
    }
  }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      T& c = C[i + j * ldc];
      if (zero) {
        c = beta == T(0) ? T(0) : beta * c;
        continue;
      }
      const T s = S[i + j * ls];
      c = beta == T(0) ? alpha * s : alpha * s + beta * c;  // beta = 0: C is not read
    }
}

// Per-thread buffers of the syrk leaf: the sums (up to 128 x 128 complex doubles, 256
// KiB) and the transposed chunk of a trans 'T' / 'C' call.
template <scalar T>
std::vector<T>& syrk_buffer(int which) {
  thread_local std::vector<T> v[2];
  return v[which];
}


template <scalar T>
void streaming_rank_k(bool herm, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, const T* A,
                    std::int64_t lda, T beta, T* C, std::int64_t ldc) {
  constexpr bool cx = !std::same_as<T, float> && !std::same_as<T, double>;
  using R = std::conditional_t<std::same_as<T, float> || std::same_as<T, std::complex<float>>, float, double>;
  if (n <= 0) return;
  if (n > streaming_max_mn)
    throw error("the streaming leaf takes n <= " + std::to_string(streaming_max_mn) + ", got " + std::to_string(n));
  if (!streaming::ran.load(std::memory_order_relaxed)) streaming::ran.store(true, std::memory_order_relaxed);
  const bool zero = alpha == T(0) || k <= 0;
  if (zero && beta == T(1)) return;  // reference BLAS: C untouched
  const char u = uplo == 'l' || uplo == 'L' ? 'L' : 'U';
  const bool n_form = trans == 'N' || trans == 'n';
  constexpr std::int64_t w = cx ? 2 : 1;
  // Sums: column j at out + j * ld reals, ld a whole number of 64-byte lines (any
  // target's vectors), e.g. n = 20 doubles: ld = 24.
  const std::int64_t line = 64 / std::int64_t(sizeof(R)), ld = (n * w + line - 1) / line * line;
  R* out = nullptr;
  if (!zero) {
    auto& sums = syrk_buffer<R>(0);
    out = aligned_in(sums, std::size_t(ld * n));
    std::fill(out, out + ld * n, R(0));
    // k in chunks of the machine's syrk_chunk_bytes of op(A) (the model: 2/3 of one core's
    // L1d, 32 KiB of the developers' 48 KiB), e.g. 32 KiB and 32 doubles: 128 steps, 64
    // doubles: 64; every register tile of the triangle passes over the chunk. (Measured
    // there with the gram set, 2 threads: 8 KiB chunks ran 2^22 x 32 and 2^20 x 64 in 40
    // and 39 ms, 16-40 KiB in 36-38 and 31-35 ms; tiles of at most 3 or 2 vectors instead
    // of 4: 41 / 36 and 57 / 39 ms.)
    const std::int64_t kc =
        std::max<std::int64_t>(16, streaming_current_sizes().syrk_chunk / (n * std::int64_t(sizeof(T))));
    streaming::syrk_task t;
    t.n = n, t.out = out, t.out_ld = ld;
    // herk: C = A A^H ('N') or A^H A ('C'); the latter's transposed chunk holds conj(A)^T,
    // so both are L L^H.
    t.conj = herm;
    T* packed = nullptr;
    if (!n_form) packed = aligned_in(syrk_buffer<T>(1), std::size_t(n * std::min(kc, k)));
    for (std::int64_t l0 = 0; l0 < k; l0 += kc) {
      const std::int64_t len = std::min(kc, k - l0);
      t.len = len;
      if (n_form) {
        t.L = A + l0 * lda, t.ldl = lda;
        t.next = l0 + len < k ? A + (l0 + len) * lda : nullptr;
        t.next_cols = std::min(kc, k - l0 - len), t.next_rows = n, t.next_ld = lda;
      } else {
        // op(A)(i, l) = A(l, i) (conjugated for herk): column i of A, rows [l0, l0 + len),
        // becomes row i of the n x len chunk P, P(i, l) at packed[i + l * n].
        streaming::pack_task pk;
        pk.A = A + l0, pk.lda = lda, pk.n = n, pk.len = len, pk.conj = herm, pk.P = packed;
        streaming::pack_chunk<T>(pk);
        t.L = packed, t.ldl = n;
        // The next chunk's rows of every column of A come in while the kernel runs.
        t.next = l0 + len < k ? A + l0 + len : nullptr, t.next_always = true;
        t.next_cols = n, t.next_rows = std::min(kc, k - l0 - len), t.next_ld = lda;
      }
      streaming::syrk_chunk<T>(t);
    }
  }
  // C's uplo triangle from the upper sums S(i, j), i <= j: 'L' takes C(j, i) = S(i, j)
  // (herk: conj(S(i, j))). herk keeps the diagonal real, as reference ?herk.
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i <= j; ++i) {
      T& c = u == 'U' ? C[i + j * ldc] : C[j + i * ldc];
      if (zero) {
        c = beta == T(0) ? T(0) : beta * c;
      } else {
        T s = reinterpret_cast<const T*>(out + j * ld)[i];
        if constexpr (cx)
          if (herm && u == 'L') s = std::conj(s);
        c = beta == T(0) ? alpha * s : alpha * s + beta * c;  // beta = 0: C is not read
      }
      if constexpr (cx)
        if (herm && i == j) c = T(c.real());
    }
}

// The rule comes from bench/results/leaf-streaming-2026-11-23.txt (scripts/leaf-streaming.sh:
// `prism leaves --streaming`, one thread, this project's 2-core AMD EPYC, 48 KiB L1d and
// 1 MiB L2 per core), the streaming leaf against prism's OpenBLAS leaf run twice, with
// this machine's OPENBLAS_CORETYPE=Haswell and with OpenBLAS's own AVX-512 (Cooperlake)
// kernels; a shape counts as won when it won against both, for all of NN, TN and NT:
//  - complex leaves won from k = 128 on (by 1.09x or more, e.g. 8x8x2^20 complex double
//    NN 74-75 GF/s against 19-20), lost at k = 64 (16x16 complex float TN: 0.77x) and 16;
//  - real leaves whose A and B fit in twice the L2 lost to the AVX-512 kernels, down to
//    0.44x (4x4x4096 float NN), 0.64x (8x8x4096 double TN) and 0.76x (4x4x16384 double
//    TN, 1 MiB); from 2 MiB of A and B on, every real row won, by 1.36x or more (e.g.
//    8x8x2^20 double NN 38-41 GF/s against 12-15, TN 24 against 12-15; 4x4x2^20 double
//    24-25 against 5.5-11.6).
// Where the leaf's operands come from memory the streaming leaf reads them once at close
// to the bandwidth; where they sit in L2, OpenBLAS's AVX-512 micro-kernels are faster for
// real types.
//
// Real leaves above 16 x 16 run the panel kernel: bench/results/leaf-streaming-panel-2026-11-29T0048Z.txt
// (the same script, one pass, best of 2, double and float, m, n from 24 to 128, k from 512
// to 2^20): it won or tied every row but 24 x 24 float (0.76-0.80), in cache (64 x 64 x 512
// double 1.25-1.56x, 128 x 128 x 4096 1.06-1.25x) and from memory (64 x 64 x 2^18 double
// 1.29-1.97x); for them the thresholds are the machine's stream_far_bytes (m n above 1024)
// and stream_dot_bytes ('TN', transposed chunk by chunk), which the model puts at 8 L2s and
// the first long call measures (lib/leaf/first_use.hpp), and stream_bytes (m n <= 1024).
//
// Complex tiled leaves (m or n above 16): bench/results/leaf-streaming-2026-11-23T0740Z.txt (the
// same script after the tiled path came, one pass, best of 3; rows of 24 .. 128 with k
// from 512 to 2^20, all four types, against the faster of prism's OpenBLAS (Cooperlake)
// and BLIS (skx) leaves: str/best):
//  - the outer kernel ('NN', 'NT'), A and B from memory (2 MiB or more), m n <= 1024
//    (24 x 24, 32 x 32, 64 x 16): won in every type (double 1.12-2.22x, e.g. 32x32x2^20
//    NN 50.4 GF/s against 33.4); 48 x 48 and 64 x 64: double won from 32 MiB of A and B
//    (NN 1.14-1.27x, NT 1.01-1.26x; about even at 16384 and 4096), complex double won
//    (1.1-1.25x), float lost (its BLAS kernels run twice the flops per byte they pack);
//  - the dot kernel ('TN': op(A) and op(B) both along k) won only with m n <= 1024 and A
//    and B far beyond cache (2^19-2^20: 1.03-1.39x in every type; 32x32x2^20 double 38.6
//    against 34.0), and lost from 48 x 48 on and on in-cache chunks (32x32x4096 double
//    0.81x, 32x32x16384 0.86x);
//  - 96 and 128: lost (0.46-0.91x).
// A BLAS packs op(A) and op(B) before its micro-kernels run; for m, n <= 64 packing moves
// as many bytes as the product needs flops to hide, and the streaming leaf does not pack.
//
// The byte thresholds are the machine's (lib/runtime/machine.cpp): "from 2 MiB" there is
// mc's stream_bytes (the model: twice one core's L2), the complex dot kernel's "far beyond
// cache" 4 times its stream_dot_bytes, "from k = 128" its stream_complex_k; `prism tune`
// and the first long call measure them.
// The shape classes (m, n <= 16, m n <= 1024, 64) are the kernels' register tiles and stay.
bool streaming_preferred(const machine_description& mc, scalar_type t, char transa, char transb, std::int64_t m,
                         std::int64_t n, std::int64_t k) {
  if (!streaming_applies(m, n)) return false;
  const double panels = double(m + n) * double(k) * double(element_size(t));
  const double near = mc.value(machine_key::stream_bytes), far = mc.value(machine_key::stream_far_bytes);
  if (m <= streaming_block_mn && n <= streaming_block_mn) {
    if (is_complex(t)) return double(k) >= mc.value(machine_key::stream_complex_k);
    return panels >= near;
  }
  const bool dot = (transa != 'N' && transa != 'n') && (transb == 'N' || transb == 'n');
  if (!is_complex(t)) {  // the panel kernel, every trans pair
    if (dot) return panels >= mc.value(machine_key::stream_dot_bytes);
    return panels >= near && (m * n <= 1024 || panels >= far);
  }
  // Complex: the dot kernel's lane sums won only far beyond cache, 4 times the panel
  // kernel's 'TN' threshold (32 L2s by the model).
  if (dot) return m * n <= 1024 && panels >= 4 * mc.value(machine_key::stream_dot_bytes);
  if (panels < near) return false;
  if (m * n <= 1024) return true;
  if (m > 64 || n > 64) return false;
  return t == scalar_type::z;
}

// The rank-k leaf's rule: bench/results/leaf-syrk-2026-11-23T1255Z.txt (`bash
// scripts/leaf-streaming.sh --syrk --types dzsc --reps 2`: `prism leaves --syrk`, one
// thread, best of 2, against the faster of the OpenBLAS (Cooperlake) and BLIS (skx)
// leaves' own ?syrk / ?herk on the same row; str/best), taken with the diagonal tiles:
//  - trans 'N' (NumPy's layout): double and complex double won every row up to n = 96
//    (1.17-3.39x, e.g. 32 x 2^20 double 44.4 against 18.9 GF/s) and n = 128 in cache
//    (4 MiB or less: 1.11-1.36x), and lost n = 128 from memory (128 x 2^17: 0.90, 0.93);
//    float won every row up to 128 (1.09-2.29x); complex float up to 64 (1.12-2.30x, but
//    0.92 at 64 x 128) and lost or tied above (0.78-1.07).
//  - trans 'T' / 'C' (each chunk transposed first): double won n = 8..64 at every k
//    (1.42-2.16x), lost n = 4 (0.90) and 96 (0.94); complex double and complex float won
//    n = 8..32 (1.10-1.56x) and were about even or behind at 64 and above (0.84-1.19;
//    64 x 2^19 complex double 0.93). Float, timed again once its chunks were transposed
//    in 8 x 8 register blocks (bench/results/leaf-syrk-float-2026-11-23T1410Z.txt, the
//    same table; before, they took the plain loops and never won by much, 0.71-1.18x): won
//    n = 16..96 (1.22-1.72x), lost n = 4 and 8 (0.90-0.97), about even at 128 (0.96-1.10).
// "4 MiB or less" and "from memory" are read against the machine: below its
// stream_far_bytes (8 MiB by the model on that host, what its first use measures there).
bool streaming_rank_k_preferred(const machine_description& mc, scalar_type t, char trans, std::int64_t n, std::int64_t k) {
  if (n < 1 || n > streaming_max_mn) return false;
  const bool n_form = trans == 'N' || trans == 'n';
  const double bytes = double(n) * double(k) * double(element_size(t));
  if (n_form) {
    if (t == scalar_type::s) return true;
    if (t == scalar_type::c) return n <= 64;
    return n <= 96 || bytes < mc.value(machine_key::stream_far_bytes);
  }
  if (t == scalar_type::s) return n >= 16 && n <= 96;
  if (n < 8) return false;
  return n <= (t == scalar_type::d ? 64 : 32);
}

const char* streaming_target() {
  streaming::apply_simd_choice();
  return HWY_DYNAMIC_DISPATCH(streaming::target_name)();
}

bool streaming_leaf_ran() noexcept { return streaming::ran.load(std::memory_order_relaxed); }

std::int64_t streaming_supported_targets() { return hwy::SupportedTargets(); }

void streaming_force_targets(std::int64_t targets) { hwy::SetSupportedTargetsForTest(targets); }

#define PRISM_INSTANTIATE(T)                                                                                \
  template void streaming_gemm<T>(char, char, std::int64_t, std::int64_t, std::int64_t, T, const T*,        \
                                  std::int64_t, const T*, std::int64_t, T, T*, std::int64_t);         \
  template void streaming_rank_k<T>(bool, char, char, std::int64_t, std::int64_t, T, const T*, std::int64_t, T, T*, \
                                  std::int64_t);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism::detail

#endif  // HWY_ONCE
