// lib/leaf/kernels/pack.cpp — the pack kernel: a trans 'T' / 'C' chunk of A
// transposed into the 'N' form the panel and diagonal kernels read (in registers on
// AVX-512 and AVX2; the plain loops elsewhere and at the edges). The driver:
// tiling.cpp.
#include "tasks.hpp"

#include <prism/types.hpp>

#include <algorithm>
#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <utility>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "leaf/kernels/pack.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target
#include <hwy/highway.h>
#include <hwy/cache_control.h>
#include "simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace prism::detail::streaming {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR

template <class R, bool Cx>
void pack_chunk(const pack_task& t) {
  plain_pack<std::conditional_t<Cx, std::complex<R>, R>>(t, 0, 0);
}

#else

// Transposes a trans 'T' / 'C' chunk (pack_task). On AVX-512 it moves 8 x 8 blocks of
// 64-bit units (a double, or a complex float) and 4 x 4 blocks of complex doubles through
// registers: 8 loads down 8 columns of A, 24 shuffles, 8 stores across P (the chunk was
// prefetched while the kernel ran over the one before: syrk_task::next); floats in 8 x 8
// blocks of 256-bit registers. AVX2 moves 4 x 4 blocks of 64-bit units and 2 x 2 blocks of
// complex doubles in 256-bit registers, floats as AVX-512 does. The edges (n or len not a
// multiple of the block) take the plain loops; so do other instruction sets.
#if HWY_ARCH_X86 && (HWY_TARGET <= HWY_AVX3 || HWY_TARGET == HWY_AVX2)
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

// Floats in 8 x 8 blocks (both targets): the plain loops do the edges.
HWY_INLINE void pack_floats(const pack_task& t) {
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
  plain_pack<float>(t, n8, len8);
}
#endif

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

// The vector of 64-bit units this target moves, and its pieces for pack_chunk (below).
using units = __m512d;
HWY_INLINE units load_units(const void* p) { return _mm512_loadu_pd(static_cast<const double*>(p)); }
HWY_INLINE void store_units(void* p, units v) { _mm512_storeu_pd(static_cast<double*>(p), v); }
HWY_INLINE units xor_units(units a, units b) { return _mm512_xor_pd(a, b); }
HWY_INLINE units zero_units() { return _mm512_setzero_pd(); }
// The sign bit of each imaginary part (the odd float or double lanes): a conjugate's flip.
template <class R>
HWY_INLINE units imaginary_signs() {
  if constexpr (std::is_same_v<R, float>)
    return _mm512_castps_pd(_mm512_set_ps(-0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f));
  else
    return _mm512_set_pd(-0., 0., -0., 0., -0., 0., -0., 0.);
}
// Units per block side: 8 doubles or complex floats (64 bits), 4 complex doubles.
template <class T>
constexpr int block_side = sizeof(T) == 8 ? 8 : 4;
// One block: columns i.. of A (rows l..) in, rows l.. of P (columns i..) out.
template <class T>
HWY_INLINE void move_block(const T* A, T* P, const pack_task& t, std::int64_t i, std::int64_t l, units flip) {
  constexpr int B = block_side<T>;
  units r[B];
  for (int c = 0; c < B; ++c) r[c] = xor_units(load_units(A + l + (i + c) * t.lda), flip);
  if constexpr (B == 8) transpose8(r);
  else transpose4x128(r);
  for (int c = 0; c < B; ++c) store_units(P + i + (l + c) * t.n, r[c]);
}
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
// 4 x 4 transpose of 64-bit units in 256-bit registers: r[c] holds column c (rows 0..3),
// r[c] becomes row c. After the unpacks t0 = (r0[0], r1[0], r0[2], r1[2]) and
// t2 = (r2[0], r3[0], r2[2], r3[2]); the 128-bit permute of their low halves is row 0,
// (r0[0], r1[0], r2[0], r3[0]), of their high halves row 2.
HWY_INLINE void transpose4(__m256d (&r)[4]) {
  const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
  const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
  r[0] = _mm256_permute2f128_pd(t0, t2, 0x20), r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
  r[2] = _mm256_permute2f128_pd(t0, t2, 0x31), r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

// AVX2's pieces: 256-bit vectors; doubles and complex floats (64-bit units) in 4 x 4
// blocks, complex doubles in 2 x 2 (one 128-bit permute a pair of rows).
using units = __m256d;
HWY_INLINE units load_units(const void* p) { return _mm256_loadu_pd(static_cast<const double*>(p)); }
HWY_INLINE void store_units(void* p, units v) { _mm256_storeu_pd(static_cast<double*>(p), v); }
HWY_INLINE units xor_units(units a, units b) { return _mm256_xor_pd(a, b); }
HWY_INLINE units zero_units() { return _mm256_setzero_pd(); }
template <class R>
HWY_INLINE units imaginary_signs() {
  if constexpr (std::is_same_v<R, float>) return _mm256_castps_pd(_mm256_set_ps(-0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f));
  else return _mm256_set_pd(-0., 0., -0., 0.);
}
template <class T>
constexpr int block_side = sizeof(T) == 8 ? 4 : 2;
template <class T>
HWY_INLINE void move_block(const T* A, T* P, const pack_task& t, std::int64_t i, std::int64_t l, units flip) {
  constexpr int B = block_side<T>;
  units r[B];
  for (int c = 0; c < B; ++c) r[c] = xor_units(load_units(A + l + (i + c) * t.lda), flip);
  if constexpr (B == 4) {
    transpose4(r);
  } else {  // columns i, i + 1 of rows l, l + 1 -> rows l, l + 1 of columns i, i + 1
    const units r0 = r[0];
    r[0] = _mm256_permute2f128_pd(r0, r[1], 0x20), r[1] = _mm256_permute2f128_pd(r0, r[1], 0x31);
  }
  for (int c = 0; c < B; ++c) store_units(P + i + (l + c) * t.n, r[c]);
}
#endif

#if HWY_ARCH_X86 && (HWY_TARGET <= HWY_AVX3 || HWY_TARGET == HWY_AVX2)
// Floats in the 8 x 8 blocks of pack_floats; the other types in this target's blocks of
// 64- or 128-bit units, the conjugate's sign flipped on the way; the plain loops do the
// edges.
template <class R, bool Cx>
void pack_chunk(const pack_task& t) {
  using T = std::conditional_t<Cx, std::complex<R>, R>;
  if constexpr (!Cx && std::is_same_v<R, float>) {
    pack_floats(t);
  } else {
    constexpr int B = block_side<T>;
    const T* A = static_cast<const T*>(t.A);
    T* P = static_cast<T*>(t.P);
    const std::int64_t nb = t.n - t.n % B, lenb = t.len - t.len % B;
    units flip = zero_units();
    if constexpr (Cx)
      if (t.conj) flip = imaginary_signs<R>();
    for (std::int64_t i = 0; i < nb; i += B)
      for (std::int64_t l = 0; l < lenb; l += B) move_block(A, P, t, i, l, flip);
    plain_pack<T>(t, nb, lenb);
  }
}
#else
template <class R, bool Cx>
void pack_chunk(const pack_task& t) {
  plain_pack<std::conditional_t<Cx, std::complex<R>, R>>(t, 0, 0);
}
#endif

#endif  // HWY_TARGET == HWY_SCALAR

// The exported entry points, one per scalar type.
void pack_s(const pack_task& t) { pack_chunk<float, false>(t); }
void pack_d(const pack_task& t) { pack_chunk<double, false>(t); }
void pack_c(const pack_task& t) { pack_chunk<float, true>(t); }
void pack_z(const pack_task& t) { pack_chunk<double, true>(t); }

}  // namespace HWY_NAMESPACE
}  // namespace prism::detail::streaming
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace prism::detail::streaming {

PRISM_STREAMING_ENTRY(pack_chunk, pack, pack_task);

}  // namespace prism::detail::streaming
#endif  // HWY_ONCE
