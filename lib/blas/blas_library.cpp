// lib/blas/blas_library.cpp — private dlopen of BLAS builds, CBLAS gemm dispatch, leaf rule.
#include "blas_library.hpp"

#include <prism/error.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PRISM_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL)
#else
#define PRISM_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)
#endif

namespace prism::detail {

namespace {

// CBLAS enumerators (cblas.h): they are plain ints in every implementation's ABI.
constexpr int cblas_col_major = 102;
int cblas_trans(char t) { return t == 'N' ? 111 : t == 'T' ? 112 : 113; }

using sgemm_fn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                          float, float*, int);
using dgemm_fn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*,
                          int, double, double*, int);
using cgemm_fn = void (*)(int, int, int, int, int, int, const void*, const void*, int, const void*,
                          int, const void*, void*, int);

}  // namespace

const char* to_string(blas_build b) {
  switch (b) {
    case blas_build::openblas_serial: return "openblas-serial";
    case blas_build::openblas_pthread: return "openblas-pthread";
    case blas_build::blis_serial: return "blis-serial";
    case blas_build::blis_pthread: return "blis-pthread";
  }
  return "?";
}

std::string library_path(blas_build b) {
  const char* env = nullptr;
  const char* built = nullptr;
  switch (b) {
    case blas_build::openblas_serial: env = "PRISM_LIB_OPENBLAS_SERIAL"; built = PRISM_OPENBLAS_SERIAL_PATH; break;
    case blas_build::openblas_pthread: env = "PRISM_LIB_OPENBLAS_PTHREAD"; built = PRISM_OPENBLAS_PTHREAD_PATH; break;
    case blas_build::blis_serial: env = "PRISM_LIB_BLIS_SERIAL"; built = PRISM_BLIS_SERIAL_PATH; break;
    case blas_build::blis_pthread: env = "PRISM_LIB_BLIS_PTHREAD"; built = PRISM_BLIS_PTHREAD_PATH; break;
  }
  if (const char* s = std::getenv(env); s != nullptr && *s != '\0') return s;
  return built;
}

blas_library::blas_library(const std::string& path) : path_(path) {
  handle_ = ::dlopen(path.c_str(), PRISM_DLOPEN_FLAGS);
  if (handle_ == nullptr) {
    const char* why = ::dlerror();
    throw backend_error("cannot open '" + path + "': " + (why ? why : "unknown error"));
  }
  const char* names[4] = {"cblas_sgemm", "cblas_dgemm", "cblas_cgemm", "cblas_zgemm"};
  for (int i = 0; i < 4; ++i) {
    gemm_[i] = ::dlsym(handle_, names[i]);
    if (gemm_[i] == nullptr) throw backend_error("'" + path + "' has no " + names[i]);
  }
}

const blas_library& blas_library::get(blas_build b) {
  // One slot per build, opened on first use; std::call_once makes it thread-safe and a
  // failed open (exception) leaves the flag unset so a later call reports it again.
  static std::once_flag flags[4];
  static std::unique_ptr<blas_library> libs[4];
  const int i = static_cast<int>(b);
  std::call_once(flags[i], [&] {
    libs[i] = std::make_unique<blas_library>(library_path(b));
    // Leaves must be single-threaded whatever build the path points to; the setting only
    // touches this private copy.
    if (b == blas_build::openblas_serial || b == blas_build::blis_serial) libs[i]->set_threads(1);
  });
  return *libs[i];
}

void* blas_library::symbol(const char* name) const { return ::dlsym(handle_, name); }

bool blas_library::set_threads(int threads) const {
  if (auto* f = reinterpret_cast<void (*)(int)>(symbol("openblas_set_num_threads"))) {
    f(threads);
    return true;
  }
  if (auto* f = reinterpret_cast<void (*)(long)>(symbol("bli_thread_set_num_threads"))) {
    f(threads);
    return true;
  }
  return false;
}

template <scalar T>
void blas_library::gemm(char transa, char transb, int m, int n, int k, T alpha, const T* A, int lda,
                        const T* B, int ldb, T beta, T* C, int ldc) const {
  const int ta = cblas_trans(transa), tb = cblas_trans(transb);
  if constexpr (std::same_as<T, float>)
    reinterpret_cast<sgemm_fn>(gemm_[0])(cblas_col_major, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  else if constexpr (std::same_as<T, double>)
    reinterpret_cast<dgemm_fn>(gemm_[1])(cblas_col_major, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  else
    reinterpret_cast<cgemm_fn>(gemm_[std::same_as<T, std::complex<float>> ? 2 : 3])(
        cblas_col_major, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
}

template void blas_library::gemm<float>(char, char, int, int, int, float, const float*, int, const float*, int, float, float*, int) const;
template void blas_library::gemm<double>(char, char, int, int, int, double, const double*, int, const double*, int, double, double*, int) const;
template void blas_library::gemm<std::complex<float>>(char, char, int, int, int, std::complex<float>, const std::complex<float>*, int, const std::complex<float>*, int, std::complex<float>, std::complex<float>*, int) const;
template void blas_library::gemm<std::complex<double>>(char, char, int, int, int, std::complex<double>, const std::complex<double>*, int, const std::complex<double>*, int, std::complex<double>, std::complex<double>*, int) const;

const blas_library& leaf_library(leaf_backend b) {
  return blas_library::get(b == leaf_backend::blis ? blas_build::blis_serial : blas_build::openblas_serial);
}

leaf_backend choose_leaf(leaf_backend requested, scalar_type, std::int64_t, std::int64_t, std::int64_t) {
  if (requested != leaf_backend::automatic) return requested;
  // Measured on this project's 2-core AMD EPYC (AVX-512) machine with `prism leaves`
  // (README "Leaf backends"): serial OpenBLAS 0.3.21 beats serial BLIS 0.9.0 on every
  // leaf shape we sampled, so auto picks OpenBLAS.
  return leaf_backend::openblas;
}

}  // namespace prism::detail
