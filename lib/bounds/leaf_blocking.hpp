// lib/bounds/leaf_blocking.hpp — the leaf BLAS's blocking as the cache model assumes it
// (rule 4 of prism/traffic.hpp's model): the GotoBLAS loop sizes of OpenBLAS 0.3's Haswell
// kernel and BLIS 0.9's haswell configuration, and the elements one such call receives.
// Internal: these are constants of two libraries on one kernel set, not prism's API.
#pragma once

#include <prism/traffic.hpp>
#include <prism/types.hpp>

#include <cstdint>

namespace prism::detail {

/// Block sizes of a leaf BLAS's GotoBLAS loops, in elements: micro-tile mr x nr, blocks
/// mc (rows of A~), kc (depth) and nc (columns of B~); the micro-kernel sweeps A~ once per
/// `sweep` columns of B~ (OpenBLAS's Haswell kernel computes 4 x 12 tiles from B~ packed in
/// units of 8); `beta_pass`: beta != 1 costs a separate pass over C (OpenBLAS), or the
/// kernel stores C without reading it (BLIS).
struct leaf_blocking {
  std::int64_t mr = 4, nr = 8, mc = 512, kc = 256, nc = 65008;  ///< OpenBLAS Haswell, double
  std::int64_t sweep = 12;  ///< columns of B~ per sweep of A~ through the micro-kernel
  bool beta_pass = true;    ///< beta != 1 scales C in a pass of its own
};

/// The blocking the cache model assumes for a leaf backend and element type: OpenBLAS 0.3's
/// Haswell parameters (double: 4 x 8 micro-tile, mc 512, kc 256, nc 65008 from its 128 MiB
/// buffer; A~ swept once per 12 columns), the same block bytes for other types; BLIS's
/// haswell ones (6 x 8, 72, 256, 4080; one sweep per 8 columns; no beta pass).
leaf_blocking assumed_blocking(leaf_backend b, scalar_type t);

/// Predicted elements received from below one cache by a single-threaded GotoBLAS call of
/// an m x n x k product with the given blocking (rule 4 of prism/traffic.hpp's model).
/// `scales_c`: the call has beta != 1, so the library first scales C in a pass of its own.
double predict_leaf_words(std::int64_t m, std::int64_t n, std::int64_t k, const leaf_blocking& blk,
                          const cache_shape& cache, scalar_type t, bool scales_c = true);

}  // namespace prism::detail
