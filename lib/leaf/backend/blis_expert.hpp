// lib/leaf/backend/blis_expert.hpp — BLIS's typed expert interface (bli_?gemm_ex with an explicit
// context and runtime) for prism's BLIS leaves.
//
// Only blis_expert.cpp includes <blis.h> (libblis-dev): the types (rntm_t, trans_t, the
// arch_t numbering) and the list of configurations the Debian build registers come from the
// header prism was built with; the functions themselves are taken with dlsym from prism's
// private copy of the library. Built without <blis.h>, available() is false and BLIS leaves
// go through CBLAS, with BLIS's own choice of kernels.
#pragma once

#include <prism/types.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace prism::detail::blis_expert {

/// True when prism was built with <blis.h>, so the expert interface can be used.
bool available() noexcept;

/// The configurations the header prism was built with says the library registers
/// (BLIS_CONFIG_<ARCH>), in bli_arch_string spelling; e.g. Debian 12's x86_64 family: skx
/// knl haswell sandybridge penryn zen3 zen2 zen excavator steamroller piledriver bulldozer
/// generic. Empty without the header.
const std::vector<std::string>& registered_archs();

/// The BLIS_ARCH_TYPE value of a configuration in the header's arch_t numbering ("zen3" ->
/// 6 in BLIS 0.9.0), or -1 when the header does not know it.
int arch_id(const std::string& name);

/// A runtime object (rntm_t) asking for one thread, made once; nullptr without the header.
/// `init_from_global` is the library's bli_rntm_init_from_global, which fills the fields
/// BLIS reads from its global state before prism pins the thread count to 1.
void* one_thread_runtime(void* init_from_global);

/// C = alpha op(A) op(B) + beta C, column-major, through a bli_?gemm_ex entry point `fn`
/// of type T with context `cntx` and runtime `rntm`; trans 'N', 'T' or 'C'.
template <scalar T>
void gemm(void* fn, char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
          const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc, void* cntx,
          void* rntm);

/// C's uplo triangle = alpha op(A) op(A)^T + beta C through a bli_?syrk_ex entry point `fn`,
/// as gemm above; trans 'N' or 'T'.
template <scalar T>
void syrk(void* fn, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, const T* A, std::int64_t lda,
          T beta, T* C, std::int64_t ldc, void* cntx, void* rntm);

/// C's uplo triangle = alpha op(A) op(A)^H + beta C (alpha, beta real) through a bli_?herk_ex
/// entry point `fn`, as gemm above; T complex, trans 'N' or 'C'.
template <scalar T>
void herk(void* fn, char uplo, char trans, std::int64_t n, std::int64_t k, double alpha, const T* A,
          std::int64_t lda, double beta, T* C, std::int64_t ldc, void* cntx, void* rntm);

}  // namespace prism::detail::blis_expert
