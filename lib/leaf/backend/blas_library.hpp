// lib/leaf/backend/blas_library.hpp — a BLAS shared library opened privately with dlopen.
//
// prism never links a BLAS into the global symbol namespace. Each library it uses (serial
// OpenBLAS and serial BLIS for leaves; threaded ones as benchmark peers) is opened with
// RTLD_LOCAL | RTLD_DEEPBIND, so
//   - two builds of the same library (serial and pthread OpenBLAS both export cblas_dgemm
//     and share the soname libopenblas.so.0) live side by side in one process;
//   - a BLAS the host program already loaded never captures prism's leaf calls, and
//     prism's copy never captures the host's calls;
//   - thread settings made on prism's private copy (e.g. BLIS threads = 1) do not leak.
// Under AddressSanitizer RTLD_DEEPBIND is refused, so sanitizer builds drop it; they load
// no BLAS globally, so RTLD_LOCAL alone keeps the copies apart there.
#pragma once

#include <prism/types.hpp>

#include "leaf_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

namespace prism::detail {

/// Reference BLAS forms beta C first, so a NaN or infinite beta reaches every element C
/// keeps; BLIS's optimised real kernels take a NaN beta as 0. Where beta is not finite, C's
/// rows x cols block (uplo 'U' / 'L': that triangle only; herm: its diagonal from its real
/// part, as ?herk) is scaled here and beta set to 1 for the library's call.
template <class T, class B>
void scale_unless_finite(B& beta, T* C, std::int64_t ldc, std::int64_t rows, std::int64_t cols, char uplo, bool herm) {
  if (std::isfinite(std::abs(beta)) || rows <= 0 || cols <= 0) return;
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = uplo == 'L' ? j : 0; i < (uplo == 'U' ? j + 1 : rows); ++i) {
      T& c = C[i + j * ldc];
      if constexpr (!std::is_floating_point_v<T>)
        if (herm && i == j) {
          c = T(std::real(beta) * c.real());  // a real product, as ?herk's (no NaN Im)
          continue;
        }
      c *= beta;
    }
  beta = B(1);
}

/// prism adds C as it is when beta = 1, as reference BLAS's no-transpose forms and OpenBLAS
/// do; BLIS's kernels form 1 * C, and for a complex C (Inf, 3) * (1, 0) is (Inf, NaN). For
/// such a call (`applies`: T complex, beta 1, a BLIS library) the elements of C's rows x cols
/// block (uplo 'U' / 'L': that triangle) with an infinite or NaN part are set to 0 here and
/// returned, to be added back after the call (add_back): (Inf, 3) + (x, y) = (Inf, 3 + y).
/// One pass over the block, which a finite C leaves as it is.
template <class T>
std::vector<std::pair<std::int64_t, T>> set_aside_non_finite(bool applies, T* C, std::int64_t ldc, std::int64_t rows,
                                                             std::int64_t cols, char uplo) {
  std::vector<std::pair<std::int64_t, T>> aside;
  if constexpr (!std::is_floating_point_v<T>) {
    if (!applies) return aside;
    using R = typename T::value_type;
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::int64_t i0 = uplo == 'L' ? j : 0, i1 = uplo == 'U' ? std::min(j + 1, rows) : rows;
      const R* p = reinterpret_cast<const R*>(C + j * ldc);
      bool any = false;  // x - x is NaN exactly for an infinite or NaN x (a loop that vectorises)
      for (std::int64_t r = 2 * i0; r < 2 * i1; ++r) any |= (p[r] - p[r]) != (p[r] - p[r]);
      if (!any) continue;
      for (std::int64_t i = i0; i < i1; ++i)
        if (T& c = C[i + j * ldc]; !std::isfinite(c.real()) || !std::isfinite(c.imag())) {
          aside.emplace_back(i + j * ldc, c);
          c = T(0);
        }
    }
  }
  return aside;
}

/// Adds the elements set_aside_non_finite took out of C back into it.
template <class T>
void add_back(const std::vector<std::pair<std::int64_t, T>>& aside, T* C) {
  for (const auto& [at, c] : aside) C[at] = c + C[at];
}

/// Which BLAS build a library slot refers to.
///
/// prism's `openblas` leaves use openblas64_pthread (Debian's ILP64 pthread build) pinned
/// to one thread, not the serial build: Debian 12's serial OpenBLAS 0.3.21 is built
/// without locking and returns wrong results when two threads call it at once (shown by
/// tests/test_leaves.cpp). The ILP64 file is one that host programs do not load, so
/// prism's copy, and its thread setting, stay private.
enum class blas_build { openblas_serial, openblas_pthread, openblas64_pthread, blis_serial, blis_pthread };

/// "openblas-serial", "openblas-pthread", "openblas64-pthread", "blis-serial", "blis-pthread".
const char* to_string(blas_build b);

/// Path of a build: env PRISM_LIB_<BUILD> (e.g. PRISM_LIB_OPENBLAS_SERIAL) or the path
/// CMake found at configure time.
std::string library_path(blas_build b);

/// CBLAS gemm entry points of one privately opened library.
class blas_library {
 public:
  /// Opens `path` privately and resolves cblas_{s,d,c,z}gemm; `ilp64` says its integers are
  /// 64-bit. `load_env` (name, value or nullptr to unset) holds only while the library loads
  /// and, for BLIS, initialises (bli_init), then every variable is restored; it is ignored
  /// when the host has already loaded the file. Throws prism::backend_error.
  blas_library(const std::string& path, bool ilp64,
               const std::vector<std::pair<const char*, const char*>>& load_env = {});
  blas_library(const blas_library&) = delete;
  blas_library& operator=(const blas_library&) = delete;

  /// The library of a build, opened once per process (thread-safe).
  static const blas_library& get(blas_build b);

  /// Column-major gemm through this library's CBLAS; trans 'N', 'T' or 'C'.
  template <scalar T>
  void gemm(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
            const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
            std::int64_t ldc) const;

  /// Column-major ?syrk through this library's CBLAS (cblas_?syrk, looked up on first use;
  /// lib/leaf/backend/blas_rank_k.cpp); uplo 'U'/'L', trans 'N'/'T'. Throws backend_error if absent.
  template <scalar T>
  void syrk(char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, const T* A, std::int64_t lda, T beta,
            T* C, std::int64_t ldc) const;

  /// Column-major ?herk (cblas_cherk / cblas_zherk; T complex, alpha and beta real parts
  /// used); uplo 'U'/'L', trans 'N'/'C'. Throws backend_error if absent.
  template <scalar T>
  void herk(char uplo, char trans, std::int64_t n, std::int64_t k, double alpha, const T* A, std::int64_t lda,
            double beta, T* C, std::int64_t ldc) const;

  /// Sets the library's own thread count (openblas_set_num_threads or
  /// bli_thread_set_num_threads); no effect on other copies. Returns false if it has none.
  bool set_threads(int threads) const;

  /// The library's own thread count (openblas_get_num_threads or
  /// bli_thread_get_num_threads); 0 if it has no such query.
  int threads() const;

  /// The kernel set the library picked for this CPU: OpenBLAS's core name (e.g. "Haswell",
  /// "SkylakeX") or BLIS's architecture (e.g. "generic", "skx"); "" if it does not say.
  std::string kernel_name() const;

  /// Single-threaded rate of this library on one m x n x k product of type t ('N', 'N'),
  /// GF/s: the best of `reps` timed calls after one warm-up call (operands allocated here).
  double measure_gflops(scalar_type t, std::int64_t m, std::int64_t n, std::int64_t k, int reps) const;

  /// What prism chose for this copy's kernel set and why; nullptr for a library that is not
  /// one of prism's leaf builds (a benchmark peer).
  const kernel_choice* kernels() const noexcept { return kernels_.get(); }

  /// True when gemm (and syrk / herk, where this BLIS has bli_?syrk_ex / bli_?herk_ex) go
  /// through BLIS's typed expert interface (the copy's context, a one-thread runtime)
  /// rather than CBLAS.
  bool blis_expert() const noexcept { return blis_cntx_ != nullptr; }

  /// Any symbol of the library, or nullptr.
  void* symbol(const char* name) const;
  /// The path it was opened from.
  const std::string& path() const noexcept { return path_; }
  /// True when the file was already loaded by the host before prism opened it: then the
  /// copy is shared and prism must not change its thread setting.
  bool shared_with_host() const noexcept { return shared_; }

 private:
  std::string path_;
  bool ilp64_ = false;
  bool shared_ = false;
  bool blis_ = false;  // a BLIS library (it has bli_init): its kernels form beta C even for beta = 1
  void* handle_ = nullptr;
  void* gemm_[4] = {};  // s, d, c, z
  // BLIS leaves: bli_{s,d,c,z}gemm_ex, bli_{s,d,c,z}syrk_ex and bli_{c,z}herk_ex (slots 0..5
  // as in blas_rank_k.cpp; null where absent: CBLAS then), the context and the one-thread
  // runtime they get.
  void* blis_ex_[4] = {};
  void* blis_rank_k_ex_[6] = {};
  void* blis_cntx_ = nullptr;
  void* blis_rntm_ = nullptr;
  std::unique_ptr<kernel_choice> kernels_;
  bool pool_stopped_ = false;  // prism stopped this OpenBLAS copy's worker threads

  friend struct leaf_loader;
};

/// The single-threaded library behind a leaf backend (openblas or blis; never automatic,
/// and never streaming, which is no library: leaf_gemm in lib/leaf/kernels/streaming.hpp runs it).
/// Falls back to BLIS, with one warning on stderr, if the OpenBLAS leaf file is shared
/// with the host.
const blas_library& leaf_library(leaf_backend b);

/// The library leaf_library(b) resolved, or nullptr if no leaf of that backend ran yet;
/// loads nothing (for reports at exit).
const blas_library* resolved_leaf_library(leaf_backend b) noexcept;

}  // namespace prism::detail
