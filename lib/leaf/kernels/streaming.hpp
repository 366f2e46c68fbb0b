// lib/leaf/kernels/streaming.hpp — the streaming leaf: C = alpha op(A) op(B) + beta C for small
// m and n (at most 128) and any k, reading A and B from memory once, straight from where
// they lie, without packing.
//
// Why a leaf of its own. A block-Krylov or CholeskyQR leaf (4 x 4, 8 x 8, 16 x 16 with k in
// the hundreds of thousands) does 2mn flops per (m + n) elements it reads: it is bound by
// memory bandwidth, not by the FMA units. A BLAS gemm packs op(A) and op(B) into its own
// panels first, which reads and writes every element once more than the product needs,
// and its micro-kernels are tuned for large m and n. This kernel reads each element of A
// and B exactly once, keeps the m x n partial sums in vector registers, and never packs.
// Up to 128 x 128 (a CARMA 64 x 64 leaf, a Gram 32 x 32 TN leaf) real leaves run the panel
// kernel: register tiles of up to 4 vectors by 6 columns over k chunks whose rows stay in
// L1, op(A) = A^T transposed chunk by chunk (A and B still come from memory once; the
// packing a BLAS would do, as many bytes moved as the product's flops need on a 64 x 64
// leaf, is not done); complex ones tile C into 16 x 16 blocks over chunks that stay in L2.
//
// The SIMD code is Google Highway's (Debian libhwy-dev) with runtime dispatch: it is built
// for AVX-512, AVX2 and a scalar fallback (NEON/SVE on Arm) and runs the best one this CPU
// has, whatever the environment says (PRISM_SIMD may hold it lower: lib/simd). One file
// per kernel family, each compiled once per target: dot.cpp, outer.cpp (with its tiles in
// outer-inl.h), panel.cpp, diagonal.cpp (rank-k triangles) and pack.cpp; tiling.cpp cuts a
// leaf into their tasks (tasks.hpp), and auto_rule.cpp holds the rule for `auto`.
#pragma once

#include <prism/machine.hpp>
#include <prism/types.hpp>

#include <cstdint>

namespace prism::detail {

/// The largest m and n one pass of the streaming kernels takes: all m x n sums in
/// registers, A and B read once.
inline constexpr std::int64_t streaming_block_mn = 16;

/// The largest m and n the streaming leaf takes. Above 16 it tiles: k in chunks that stay
/// in L2, every 16 x 16 block of C passing over each chunk (tiling.cpp).
inline constexpr std::int64_t streaming_max_mn = 128;

/// True when the streaming leaf can compute an m x n leaf: 1 <= m, n <= 128.
constexpr bool streaming_applies(std::int64_t m, std::int64_t n) {
  return m >= 1 && n >= 1 && m <= streaming_max_mn && n <= streaming_max_mn;
}

/// The sizes the streaming kernels work in, bytes: their k-chunks and prefetch distance
/// (the machine keys of the same names; what each is for: tiling.cpp).
struct streaming_sizes {
  std::int64_t outer_chunk = 0;  ///< stream_outer_chunk_bytes
  std::int64_t dot_chunk = 0;    ///< stream_dot_chunk_bytes
  std::int64_t tile_chunk = 0;   ///< stream_tile_chunk_bytes
  std::int64_t prefetch = 0;     ///< stream_prefetch_bytes
  std::int64_t syrk_chunk = 0;   ///< syrk_chunk_bytes
};

/// The kernel sizes machine mc gives (measured by `prism tune`, else its model's).
streaming_sizes streaming_sizes_of(const machine_description& mc);

/// The sizes the kernels use now: those of this host's machine description
/// (default_description(), read once), unless streaming_set_sizes gave others.
streaming_sizes streaming_current_sizes();

/// Makes the kernels use sizes s from the next call on, in every thread (`prism tune`
/// times candidates with it); a field <= 0 goes back to the machine description's. Not
/// while a streaming leaf runs in another thread.
void streaming_set_sizes(const streaming_sizes& s);

/// Column-major C = alpha op(A) op(B) + beta C with reference BLAS semantics (beta = 0
/// never reads C; alpha = 0 or k = 0 never reads A or B), trans 'N', 'T' or 'C' ('C' is 'T'
/// for real types), for m, n <= 128; throws prism::error when m or n is above 128.
template <scalar T>
void streaming_gemm(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                    const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
                    std::int64_t ldc);

/// Column-major rank-k update on C's uplo triangle, n <= 128, any k: C = alpha op(A) op(A)^T
/// + beta C (syrk; trans 'N' or 'T') or alpha op(A) op(A)^H + beta C (herk, T complex,
/// alpha and beta real, trans 'N' or 'C', the diagonal's imaginary parts set to zero), with
/// reference semantics (the other triangle untouched, beta = 0 never reads C); A read from
/// memory once. Throws prism::error when n is above 128.
template <scalar T>
void streaming_rank_k(bool herm, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, const T* A,
                    std::int64_t lda, T beta, T* C, std::int64_t ldc);

/// True when `auto` picks the streaming leaf over the BLAS leaf for a leaf of this type,
/// trans pair and shape on machine mc: its byte thresholds are mc's stream_bytes and
/// stream_far_bytes (the rule and the runs behind it are in auto_rule.cpp).
bool streaming_preferred(const machine_description& mc, scalar_type t, char transa, char transb, std::int64_t m,
                         std::int64_t n, std::int64_t k);

/// True when `auto` picks the streaming rank-k leaf over the BLAS leaf's ?syrk / ?herk for
/// an n x n triangle uplo ('U' or 'L') with trans 'N' or 'T' / 'C' on machine mc (measured:
/// auto_rule.cpp, the run in bench/results/leaf-syrk-*.txt).
bool streaming_rank_k_preferred(const machine_description& mc, scalar_type t, char uplo, char trans, std::int64_t n,
                                std::int64_t k);

/// True once a streaming leaf has run in this process (for PRISM_STATS; loads nothing).
bool streaming_leaf_ran() noexcept;

}  // namespace prism::detail
