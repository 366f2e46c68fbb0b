// lib/blas/blas_library.cpp — private dlopen of BLAS builds, CBLAS gemm dispatch, leaf rule.
#include "blas_library.hpp"

#include <prism/error.hpp>

#include "../leaves/streaming.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
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

// cblas_?gemm with integer type I (int for LP64 builds, int64 for ILP64 ones); the
// layout and trans enumerators stay plain ints in both.
template <class I, class T>
using gemm_fn = void (*)(int, int, int, I, I, I, T, const T*, I, const T*, I, T, T*, I);
template <class I>
using complex_gemm_fn = void (*)(int, int, int, I, I, I, const void*, const void*, I, const void*,
                                 I, const void*, void*, I);

template <class I, class T>
void call_gemm(void* const* table, int ta, int tb, std::int64_t m, std::int64_t n, std::int64_t k,
               T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
               std::int64_t ldc) {
  if constexpr (std::same_as<T, float> || std::same_as<T, double>)
    reinterpret_cast<gemm_fn<I, T>>(table[std::same_as<T, float> ? 0 : 1])(
        cblas_col_major, ta, tb, I(m), I(n), I(k), alpha, A, I(lda), B, I(ldb), beta, C, I(ldc));
  else
    reinterpret_cast<complex_gemm_fn<I>>(table[std::same_as<T, std::complex<float>> ? 2 : 3])(
        cblas_col_major, ta, tb, I(m), I(n), I(k), &alpha, A, I(lda), B, I(ldb), &beta, C, I(ldc));
}

}  // namespace

const char* to_string(blas_build b) {
  switch (b) {
    case blas_build::openblas_serial: return "openblas-serial";
    case blas_build::openblas_pthread: return "openblas-pthread";
    case blas_build::openblas64_pthread: return "openblas64-pthread";
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
    case blas_build::openblas64_pthread: env = "PRISM_LIB_OPENBLAS64_PTHREAD"; built = PRISM_OPENBLAS64_PTHREAD_PATH; break;
    case blas_build::blis_serial: env = "PRISM_LIB_BLIS_SERIAL"; built = PRISM_BLIS_SERIAL_PATH; break;
    case blas_build::blis_pthread: env = "PRISM_LIB_BLIS_PTHREAD"; built = PRISM_BLIS_PTHREAD_PATH; break;
  }
  if (const char* s = std::getenv(env); s != nullptr && *s != '\0') return s;
  return built;
}

blas_library::blas_library(const std::string& path, bool ilp64) : path_(path), ilp64_(ilp64) {
  if (void* already = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    shared_ = true;
    ::dlclose(already);
  }
  handle_ = ::dlopen(path.c_str(), PRISM_DLOPEN_FLAGS);
  if (handle_ == nullptr) {
    const char* why = ::dlerror();
    throw backend_error("cannot open '" + path + "': " + (why ? why : "unknown error"));
  }
  const char* names[4] = {"cblas_sgemm", "cblas_dgemm", "cblas_cgemm", "cblas_zgemm"};
  for (int i = 0; i < 4; ++i) {
    gemm_[i] = ::dlsym(handle_, names[i]);
    if (gemm_[i] == nullptr) {
      ::dlclose(handle_);
      throw backend_error("'" + path + "' has no " + names[i]);
    }
  }
}

const blas_library& blas_library::get(blas_build b) {
  // One slot per build, opened on first use; std::call_once makes it thread-safe and a
  // failed open (exception) leaves the flag unset so a later call reports it again.
  // The objects are never destroyed (the libraries stay loaded for the process lifetime):
  // code that runs at exit, such as libprism_blas's PRISM_STATS summary, may still name them.
  static std::once_flag flags[5];
  static blas_library* libs[5] = {};
  const int i = static_cast<int>(b);
  std::call_once(flags[i], [&] {
    libs[i] = new blas_library(library_path(b), b == blas_build::openblas64_pthread);
    // Leaf libraries must run single-threaded whatever build the path points to. The
    // setting touches only prism's private copy; a copy shared with the host is left alone
    // (leaf_library then avoids it).
    const bool leaf = b == blas_build::openblas64_pthread || b == blas_build::blis_serial;
    if (leaf && !libs[i]->shared_with_host()) libs[i]->set_threads(1);
  });
  return *libs[i];
}

void* blas_library::symbol(const char* name) const { return ::dlsym(handle_, name); }

std::string blas_library::kernel_name() const {
  if (auto* f = reinterpret_cast<char* (*)()>(symbol("openblas_get_corename"))) return f();
  auto* query = reinterpret_cast<int (*)()>(symbol("bli_arch_query_id"));
  auto* name = reinterpret_cast<const char* (*)(int)>(symbol("bli_arch_string"));
  if (query != nullptr && name != nullptr) return name(query());
  return "";
}

int blas_library::threads() const {
  if (auto* f = reinterpret_cast<int (*)()>(symbol("openblas_get_num_threads"))) return f();
  if (auto* f = reinterpret_cast<long (*)()>(symbol("bli_thread_get_num_threads"))) return int(f());
  return 0;
}

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
void blas_library::gemm(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                        const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
                        std::int64_t ldc) const {
  const int ta = cblas_trans(transa), tb = cblas_trans(transb);
  if (ilp64_) call_gemm<std::int64_t, T>(gemm_, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  else call_gemm<int, T>(gemm_, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

#define PRISM_INSTANTIATE(T)                                                                        \
  template void blas_library::gemm<T>(char, char, std::int64_t, std::int64_t, std::int64_t, T,      \
                                      const T*, std::int64_t, const T*, std::int64_t, T, T*,        \
                                      std::int64_t) const;
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

namespace {
// The OpenBLAS leaf: prism's private copy of the ILP64 pthread build, pinned to one thread.
// If the host already loaded that file (a program using libblas64.so.3, e.g. one linked
// with libprism_blas64), pinning it would pin the host's BLAS, so the LP64 pthread build
// is used instead if the host has not loaded that one; serial BLIS is the last resort.
//
// A shared copy already running one thread is used as it is: prism changes nothing by
// calling it. That is the case of two prism copies in one process (a program using
// libprism that also loads libprism_blas, or prism_bench's prism_blas column): the first
// one pinned the file to one thread.
const blas_library& resolve_openblas_leaf() {
  const blas_library& ob = blas_library::get(blas_build::openblas64_pthread);
  if (!ob.shared_with_host() || ob.threads() == 1) return ob;
  try {
    const blas_library& lp = blas_library::get(blas_build::openblas_pthread);
    if (!lp.shared_with_host()) {
      lp.set_threads(1);
      return lp;
    }
  } catch (const backend_error&) {
    // not installed: fall through to BLIS
  }
  std::fprintf(stderr, "prism: warning: %s (and %s) are already loaded by this process; prism will not change "
                       "their thread setting, so its leaves use serial BLIS instead\n",
               ob.path().c_str(), library_path(blas_build::openblas_pthread).c_str());
  return blas_library::get(blas_build::blis_serial);
}

// What leaf_library resolved, for reports that must not load anything.
std::atomic<const blas_library*> resolved_openblas{nullptr}, resolved_blis{nullptr};
}  // namespace

const blas_library& leaf_library(leaf_backend b) {
  // Resolved once; afterwards a leaf call pays one guard check (this is on the
  // small-problem path, where a few nanoseconds show).
  if (b == leaf_backend::blis) {
    static const blas_library& blis = [] () -> const blas_library& {
      const blas_library& l = blas_library::get(blas_build::blis_serial);
      resolved_blis.store(&l);
      return l;
    }();
    return blis;
  }
  static const blas_library& openblas = [] () -> const blas_library& {
    const blas_library& l = resolve_openblas_leaf();
    resolved_openblas.store(&l);
    return l;
  }();
  return openblas;
}

const blas_library* resolved_leaf_library(leaf_backend b) noexcept {
  return (b == leaf_backend::blis ? resolved_blis : resolved_openblas).load();
}

leaf_backend choose_leaf(leaf_backend requested, scalar_type t, std::int64_t m, std::int64_t n, std::int64_t k) {
  // The streaming leaf (lib/leaves/streaming.hpp), for m, n <= 16 only: `streaming` forces
  // it there and falls back to the BLAS rule below elsewhere; `auto` takes it where it
  // measured faster than the OpenBLAS leaf (streaming_preferred: the rule and the run it
  // comes from, bench/results/leaf-streaming-*.txt).
  if (requested == leaf_backend::streaming || requested == leaf_backend::automatic) {
    if (streaming_applies(m, n) && (requested == leaf_backend::streaming || streaming_preferred(t, m, n, k)))
      return leaf_backend::streaming;
    requested = leaf_backend::automatic;
  }
  if (requested != leaf_backend::automatic) return requested;
  // Measured with `prism leaves` on this project's 2-core AMD EPYC (README "Leaf
  // backends"), double precision:
  //  - as installed, Debian's BLIS 0.9.0 does not recognise the CPU and runs its generic C
  //    kernels: 0.28-0.53x OpenBLAS on every leaf shape;
  //  - with optimised kernels on both sides (BLIS_ARCH_TYPE, OPENBLAS_CORETYPE), BLIS is
  //    1.10-1.21x OpenBLAS once m, n >= 256, about even at 32-64 and slower at <= 16.
  // So: BLIS for real leaves with m, n >= 128 when its kernels are optimised. Complex
  // leaves were not measured and stay with OpenBLAS.
  if (is_complex(t) || m < 128 || n < 128) return leaf_backend::openblas;
  static const bool blis_optimised = [] {
    try {
      return leaf_library(leaf_backend::blis).kernel_name() != "generic";
    } catch (const backend_error&) {
      return false;  // BLIS cannot be loaded: auto simply never picks it
    }
  }();
  return blis_optimised ? leaf_backend::blis : leaf_backend::openblas;
}

}  // namespace prism::detail
