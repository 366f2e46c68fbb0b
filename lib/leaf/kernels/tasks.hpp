// lib/leaf/kernels/tasks.hpp — what the streaming leaf's driver (tiling.cpp) hands its
// kernels: one task type per kernel family, the plain loops each family falls back to on a
// CPU with no SIMD target, and the entry points that dispatch to the best target this CPU
// runs (dot.cpp, outer.cpp, panel.cpp, diagonal.cpp, pack.cpp; lib/simd says which).
//
// Every kernel file is compiled once per instruction set by Highway (foreach_target, with
// its own HWY_TARGET_INCLUDE) and includes this header first, so that the targets it leaves
// out are set before any Highway header.
#pragma once

// lib/simd/simd.hpp first: it sets the targets Highway leaves out, before any Highway header.
#include "../../simd/simd.hpp"

#include "streaming.hpp"

#include <complex>
#include <cstdint>
#include <type_traits>

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
  // (lib/machine/machine.cpp); `prism tune` measures them.
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


/// The dot kernel (dot.cpp), S = L R with L and R both along k, on the best target.
template <scalar T>
void dot(const task& t);

/// The outer kernel (outer.cpp), S = L R with L along its rows, on the best target.
template <scalar T>
void outer(const task& t);

/// The kernel task t names (t.dot: the dot kernel, else the outer kernel).
template <scalar T>
void run(const task& t) {
  if (t.dot) dot<T>(t);
  else outer<T>(t);
}

/// The panel kernel (panel.cpp), one k-chunk of a real leaf above 16 x 16; R float or double.
template <class R>
void panel(const panel_task& t);

/// The diagonal kernel (diagonal.cpp), one k-chunk of a rank-k update's triangle.
template <scalar T>
void syrk_chunk(const syrk_task& t);

/// The pack kernel (pack.cpp), one trans 'T' / 'C' chunk transposed into the 'N' form.
template <scalar T>
void pack_chunk(const pack_task& t);

/// Notes that a streaming leaf has run in this process (streaming_leaf_ran; tiling.cpp).
void note_leaf_ran() noexcept;

}  // namespace prism::detail::streaming

/// The dispatching entry of one kernel family, written once under HWY_ONCE in its file:
/// exports the family's four per-target functions PREFIX_s, _d, _c, _z and defines
/// ENTRY<T>(const TASK&) for the four scalar types, each call going to the best target this
/// CPU runs (lib/simd applies a PRISM_SIMD choice first). E.g.
/// PRISM_STREAMING_ENTRY(dot, dot, task) defines dot<double>(t) -> dot_d(t) on AVX-512.
#define PRISM_STREAMING_ENTRY(ENTRY, PREFIX, TASK)                                    \
  HWY_EXPORT(PREFIX##_s);                                                             \
  HWY_EXPORT(PREFIX##_d);                                                             \
  HWY_EXPORT(PREFIX##_c);                                                             \
  HWY_EXPORT(PREFIX##_z);                                                             \
  template <scalar T>                                                                 \
  void ENTRY(const TASK& t) {                                                         \
    apply_simd_choice();                                                              \
    if constexpr (std::same_as<T, float>) HWY_DYNAMIC_DISPATCH(PREFIX##_s)(t);        \
    else if constexpr (std::same_as<T, double>) HWY_DYNAMIC_DISPATCH(PREFIX##_d)(t);  \
    else if constexpr (std::same_as<T, std::complex<float>>)                          \
      HWY_DYNAMIC_DISPATCH(PREFIX##_c)(t);                                            \
    else HWY_DYNAMIC_DISPATCH(PREFIX##_z)(t);                                         \
  }                                                                                   \
  template void ENTRY<float>(const TASK&);                                            \
  template void ENTRY<double>(const TASK&);                                           \
  template void ENTRY<std::complex<float>>(const TASK&);                              \
  template void ENTRY<std::complex<double>>(const TASK&)
