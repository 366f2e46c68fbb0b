// lib/leaf/dispatch.cpp — see dispatch.hpp.
#include "dispatch.hpp"

namespace prism::detail {

leaf_backend choose_leaf(const machine_description& mc, leaf_backend requested, scalar_type t, std::int64_t m,
                         std::int64_t n, std::int64_t k, char transa, char transb) {
  // The streaming leaf (lib/leaf/kernels/streaming.hpp), for m, n <= 128 only: `streaming` forces
  // it there and falls back to the BLAS rule below elsewhere; `auto` takes it where it
  // measured faster than the BLAS leaves (streaming_preferred: the rule and the run it
  // comes from, bench/results/leaf-streaming-*.txt).
  if (requested == leaf_backend::streaming || requested == leaf_backend::automatic) {
    if (streaming_applies(m, n) &&
        (requested == leaf_backend::streaming || streaming_preferred(mc, t, transa, transb, m, n, k)))
      return leaf_backend::streaming;
    requested = leaf_backend::automatic;
  }
  if (requested != leaf_backend::automatic) return requested;
  return choose_blas_leaf(mc, t, m, n, k);
}

leaf_backend choose_rank_k_leaf(const machine_description& mc, leaf_backend requested, scalar_type t, char uplo,
                                char trans, std::int64_t n, std::int64_t k) {
  if (requested == leaf_backend::streaming || requested == leaf_backend::automatic) {
    if (streaming_applies(n, n) &&
        (requested == leaf_backend::streaming || streaming_rank_k_preferred(mc, t, uplo, trans, n, k)))
      return leaf_backend::streaming;
    return choose_blas_leaf(mc, t, n, n, k);
  }
  return requested;
}

}  // namespace prism::detail
