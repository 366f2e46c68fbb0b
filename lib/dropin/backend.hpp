// lib/dropin/backend.hpp — the user's own BLAS, which gets every call prism does not take.
//
// libprism_blas.so exports sgemm_/dgemm_/... itself, so the backend must never be reached
// through the global symbol namespace (that would resolve back into prism). It is opened
// with dlopen and its Fortran ?gemm_ entry points are taken with dlsym from that handle.
// Which file (first that applies):
//   1. PRISM_BLAS_BACKEND: a path or soname, e.g. /usr/lib/x86_64-linux-gnu/blas/libblas.so.3;
//   2. the library that defines dgemm_ next after prism in the process's link order (the
//      BLAS the program was linked with, `-lprism_blas -lopenblas`), found with
//      dlsym(RTLD_NEXT) + dladdr, then opened by its path;
//   3. Debian's alternatives-managed BLAS: libblas.so.3 (libblas64.so.3 for the ILP64
//      library), which is what -lblas links and what NumPy, R and Octave load.
#pragma once

#include <prism/types.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace prism::dropin {

#if PRISM_BLAS_ILP64
/// Integer type of the exported BLAS ABI: 64-bit in libprism_blas64 (Debian's ILP64 ABI).
using blas_int = std::int64_t;
#else
/// Integer type of the exported BLAS ABI: 32-bit in libprism_blas (LP64, as gfortran emits).
using blas_int = int;
#endif

/// Slot of a type in the backend's tables: s 0, d 1, c 2, z 3.
template <scalar T>
constexpr int type_slot() {
  return std::same_as<T, float> ? 0 : std::same_as<T, double> ? 1 : std::same_as<T, std::complex<float>> ? 2 : 3;
}

/// The backend BLAS, opened once per process.
class backend {
 public:
  /// The process-wide backend, found on first call (thread-safe); nullptr when none could
  /// be opened (said once on stderr; prism then computes every call itself).
  static const backend* get() noexcept;
  /// The backend if get() has already run, else nullptr; never opens anything (for exit).
  static const backend* loaded() noexcept;
  /// For a forked child: the backend the parent opened, else opened now when no parent
  /// thread had begun to open it (its one-time lookup untouched), else nullptr. (dlopen in
  /// such a child relies on glibc, which resets its loader's lock at fork.)
  static const backend* in_forked_child() noexcept;

  /// Column-major ?gemm_ of the backend; trans letters 'N', 'T' or 'C', arguments valid.
  /// Inline: it is on the path of every small call.
  template <scalar T>
  void gemm(char transa, char transb, blas_int m, blas_int n, blas_int k, const T& alpha, const T* A,
            blas_int lda, const T* B, blas_int ldb, const T& beta, T* C, blas_int ldc) const {
    // Fortran ?gemm_ as gfortran emits it: everything by reference, then one hidden length
    // per CHARACTER argument (size_t since GCC 8).
    using fn = void (*)(const char*, const char*, const blas_int*, const blas_int*, const blas_int*, const T*,
                        const T*, const blas_int*, const T*, const blas_int*, const T*, T*, const blas_int*,
                        std::size_t, std::size_t);
    reinterpret_cast<fn>(gemm_[type_slot<T>()])(&transa, &transb, &m, &n, &k, &alpha, A, &lda, B, &ldb, &beta, C, &ldc, 1, 1);
  }

  /// The backend's Fortran ?gemm_ (slot s 0, d 1, c 2, z 3).
  void* fortran_entry(int slot) const noexcept { return gemm_[slot]; }
  /// The backend's cblas_?gemm, or nullptr when it has no CBLAS.
  void* cblas_entry(int slot) const noexcept { return cblas_[slot]; }

  /// Any Fortran entry of the backend (e.g. "dsyrk_"), or nullptr when it has none or the
  /// symbol found is prism's own (which would recurse). Looked up with dlsym on each call.
  void* symbol(const char* name) const noexcept;

  /// True when the backend also has cblas_sgemm ... cblas_zgemm (OpenBLAS, BLIS and
  /// reference CBLAS all do).
  bool has_cblas() const noexcept { return cblas_[0] != nullptr; }

  /// The backend's own thread count (openblas_get_num_threads, bli_thread_get_num_threads or
  /// MKL_Get_Max_Threads), or 0 when it has no such query (reference BLAS).
  int threads() const noexcept;

  /// The backend's kernel set when it says (OpenBLAS's core name, BLIS's configuration,
  /// initialising BLIS first as its first call would), else "".
  std::string kernel_name() const;

  /// The file it was opened from.
  const std::string& path() const noexcept { return path_; }
  /// How it was found: "PRISM_BLAS_BACKEND", "link order" or "default".
  const char* origin() const noexcept { return origin_; }

 private:
  backend(std::string path, const char* origin, void* handle);
  std::string path_;
  const char* origin_;
  void* handle_;
  void* gemm_[4] = {};   // sgemm_, dgemm_, cgemm_, zgemm_
  void* cblas_[4] = {};  // cblas_sgemm ... cblas_zgemm, all or none
  friend struct backend_loader;
};

}  // namespace prism::dropin
