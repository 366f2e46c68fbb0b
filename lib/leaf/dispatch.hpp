// lib/leaf/dispatch.hpp — which kernel runs a leaf, and running it: prism's streaming
// kernels (lib/leaf/kernels) or a single-threaded backend BLAS library (lib/leaf/backend).
// The one place that knows both, above them: neither of those folders includes the other.
#pragma once

#include <prism/machine.hpp>
#include <prism/types.hpp>

#include "backend/blas_leaf_rule.hpp"
#include "backend/blas_library.hpp"
#include "kernels/streaming.hpp"

#include <cstdint>

namespace prism::detail {

/// The backend `auto` picks for a leaf of this shape and trans pair (rule in
/// docs/planning.md): the streaming kernel for m, n <= 128 where it measured faster on
/// machine mc (streaming_preferred, bench/results/leaf-streaming-*.txt); else, from
/// bench/results/leaf-kernels-*.txt, BLIS for large enough m and n when BLIS runs an
/// optimised kernel set (not its "generic" C fallback), OpenBLAS otherwise. `streaming`
/// gives the streaming kernel for m, n <= 128 and what `auto` picks among the BLAS leaves
/// elsewhere.
leaf_backend choose_leaf(const machine_description& mc, leaf_backend requested, scalar_type t, std::int64_t m,
                         std::int64_t n, std::int64_t k, char transa = 'N', char transb = 'N');

/// The leaf for one n x n triangle uplo ('U' or 'L') of a rank-k update (?syrk / ?herk)
/// with trans 'N' or 'T' / 'C': `auto` takes prism's streaming rank-k leaf where it measured faster
/// (streaming_rank_k_preferred), else the BLAS leaf choose_blas_leaf picks; `streaming`
/// forces it for n <= 128 (the BLAS rule elsewhere); openblas and blis are kept.
leaf_backend choose_rank_k_leaf(const machine_description& mc, leaf_backend requested, scalar_type t, char uplo,
                                char trans, std::int64_t n, std::int64_t k);

/// Runs one leaf on backend b: the streaming kernel, or b's single-threaded BLAS library.
template <scalar T>
inline void leaf_gemm(leaf_backend b, char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k,
                      T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
                      std::int64_t ldc) {
  if (b == leaf_backend::streaming) streaming_gemm<T>(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  else leaf_library(b).gemm<T>(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/// Runs one triangle leaf on backend b: the streaming rank-k kernel, or b's BLAS ?syrk /
/// ?herk (herm: herk, T complex, alpha and beta real).
template <scalar T>
inline void leaf_rank_k(leaf_backend b, bool herm, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha,
                        const T* A, std::int64_t lda, T beta, T* C, std::int64_t ldc) {
  // Reference ?herk reads only Re C(j, j); BLIS's and a plain beta * C read all of it. (Done
  // once the leaf's library is loaded, which may throw with C untouched.)
  const auto real_diagonal = [&] {
    if constexpr (!std::same_as<T, float> && !std::same_as<T, double>)
      if (herm && beta != T(0))
        for (std::int64_t j = 0; j < n; ++j) C[j + j * ldc] = T(C[j + j * ldc].real());
  };
  if (b == leaf_backend::streaming) {
    real_diagonal();
    return streaming_rank_k<T>(herm, uplo, trans, n, k, alpha, A, lda, beta, C, ldc);
  }
  const blas_library& lib = leaf_library(b);
  real_diagonal();
  if constexpr (!std::same_as<T, float> && !std::same_as<T, double>)
    if (herm) return lib.herk<T>(uplo, trans, n, k, alpha.real(), A, lda, beta.real(), C, ldc);
  lib.syrk<T>(uplo, trans, n, k, alpha, A, lda, beta, C, ldc);
}

}  // namespace prism::detail
