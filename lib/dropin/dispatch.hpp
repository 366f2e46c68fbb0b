// lib/dropin/dispatch.hpp — what libprism_blas does with a valid ?gemm call: quick return,
// the user's BLAS (backend) or prism's recursion; PRISM_VERBOSE logging, PRISM_STATS.
#pragma once

#include "../recursive/arguments.hpp"
#include "backend.hpp"

#include <prism/types.hpp>

#include <pthread.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <type_traits>

/// Marks the eight exported entry points; everything else in the drop-in is hidden.
#define PRISM_BLAS_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" {
/// The error handler reference BLAS calls. Weak and undefined here: it binds to the
/// program's own xerbla_ if it defines one (the reference test programs do), else to the
/// one of the BLAS the program loaded globally, else to nothing (then prism prints the
/// reference message itself). prism exports no xerbla_ of its own.
void xerbla_(const char* srname, const prism::dropin::blas_int* info, std::size_t srname_len) __attribute__((weak));
/// Reference CBLAS's error handler. Weak and undefined here; prism calls it only when the
/// program itself (the executable) defines it, as the reference CBLAS test programs do. The
/// versions inside BLAS libraries (reference CBLAS, OpenBLAS) print and exit(-1), which a
/// drop-in must not add: OpenBLAS's own cblas_?gemm reports through xerbla_ and returns.
void cblas_xerbla(prism::dropin::blas_int p, const char* rout, const char* form, ...) __attribute__((weak));
}

namespace prism::dropin {

/// Holds off thread cancellation while it lives, in every slow path and in prism's own part
/// of an error report: a call has cancellation points (log lines, messages, first-use files,
/// waits), and a cancellation's unwinding out of a noexcept frame would end the process. The
/// thread is cancelled at its next cancellation point after the call. The program's own
/// handler (xerbla_, cblas_xerbla) runs after it, outside any noexcept frame, as under
/// reference BLAS: it may throw or longjmp past the call.
class no_cancel {
 public:
  no_cancel() noexcept { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_); }
  ~no_cancel() {
    int was = 0;
    pthread_setcancelstate(old_, &was);
  }
  no_cancel(const no_cancel&) = delete;
  no_cancel& operator=(const no_cancel&) = delete;

 private:
  int old_ = PTHREAD_CANCEL_ENABLE;
};

using cfloat = std::complex<float>;    ///< C's float complex, Fortran's COMPLEX
using cdouble = std::complex<double>;  ///< C's double complex, Fortran's COMPLEX*16

/// How a call was served (gpu: prism on the GPUs, gpu_route.hpp).
enum class path { trivial, backend, recursion, gpu };

/// One call as the caller made it, for the log (a row-major call reaches dispatch as the
/// transposed column-major one, so its own trans letters and sizes are kept here).
struct call_site {
  const char* routine;  ///< e.g. "dgemm_" or "cblas_dgemm"
  const char* layout;   ///< "" for Fortran, "RowMajor" or "ColMajor" for CBLAS
  char transa, transb;  ///< as passed ('N', 'T', 'C')
  long long m, n, k;    ///< as passed
};

/// Runs a checked column-major call (trans letters upper case): quick return, backend or
/// recursion by the routing rule (docs/dropin.md). Never
/// throws: a failure prism cannot recover from is reported on stderr and aborts.
template <scalar T>
void dispatch(const call_site& site, char transa, char transb, blas_int m, blas_int n, blas_int k,
              const T& alpha, const T* A, blas_int lda, const T* B, blas_int ldb, const T& beta, T* C,
              blas_int ldc) noexcept;

/// One ?syrk / ?herk call as the caller made it, for the log (a row-major call reaches
/// dispatch_rank_k with uplo and trans flipped; its own letters are kept here).
struct rank_k_site {
  const char* routine;  ///< e.g. "dsyrk_" or "cblas_zherk"
  const char* layout;   ///< "" for Fortran, "RowMajor" or "ColMajor" for CBLAS
  char uplo, trans;     ///< as passed
  long long n, k;       ///< as passed
};

/// Runs a checked column-major ?syrk (herm = false) or ?herk (herm = true; alpha and beta
/// real, passed as T with zero imaginary part); uplo 'U'/'L', trans 'N', 'T' (syrk) or 'C'
/// (herk), upper case. Routed like gemm (docs/dropin.md):
/// quick return through prism::syrk/herk, backend ?syrk_/?herk_, or prism's recursion for
/// calls with k >= n/4 above PRISM_SMALL_FLOPS (measured: choose_rank_k). Never throws.
template <scalar T>
void dispatch_rank_k(const rank_k_site& site, bool herm, char uplo, char trans, blas_int n, blas_int k,
                     const T& alpha, const T* A, blas_int lda, const T& beta, T* C, blas_int ldc) noexcept;

/// The rank-k fast path: a valid, small (below PRISM_SMALL_FLOPS) ?syrk / ?herk call goes
/// straight to the backend's Fortran routine once the fast path is published (as for gemm:
/// no settings read, nothing logged); returns false, having done nothing, otherwise.
/// Arguments as for dispatch_rank_k.
template <scalar T>
bool rank_k_fast(bool herm, char uplo, char trans, blas_int n, blas_int k, const T& alpha, const T* A,
                 blas_int lda, const T& beta, T* C, blas_int ldc) noexcept;

/// What the fast path needs, published by the first full dispatch when routing is `auto`
/// and nothing is logged (PRISM_VERBOSE and PRISM_STATS off) and a backend exists.
struct fast_path_state {
  std::atomic<bool> ready{false};  ///< the fields below are set
  const backend* b = nullptr;      ///< the backend
  double small_flops = 0;          ///< PRISM_SMALL_FLOPS of the default context
};
/// The process-wide fast-path state (dispatch.cpp).
extern fast_path_state fast_state;

/// *p where the call reads it, else 0: reference BLAS reads alpha and beta only when the
/// product is not empty (m, n > 0), so a caller may pass null with m = 0 or n = 0.
template <class S>
inline S scalar_if(bool reads, const S* p) noexcept {
  return reads ? *p : S(0);
}

/// Whether a scalar is finite (both parts of a complex one). A backend may take a NaN beta
/// as 0 (OpenBLAS 0.3.21's small ?syrk / ?herk), so automatic routing gives a call whose
/// beta is not finite to prism, which applies it to C as reference BLAS does.
template <class S>
inline bool finite_scalar(const S& x) noexcept {
  if constexpr (std::is_floating_point_v<S>) return std::isfinite(x);
  else return std::isfinite(x.real()) && std::isfinite(x.imag());
}

/// True when a valid call of this size goes straight to the backend: the fast path is
/// published, the call is no quick return, its beta is finite and it is below
/// PRISM_SMALL_FLOPS. Each entry point then hands the backend its own arguments unchanged,
/// as a tail call (measured: the drop-in's share of a 16x16x16 call is then the argument
/// check and this test).
template <scalar T>
inline bool fast_path_takes(blas_int m, blas_int n, blas_int k, const T& alpha, const T& beta) noexcept {
  if (!fast_state.ready.load(std::memory_order_acquire)) return false;
  if (m <= 0 || n <= 0 || k <= 0 || alpha == T(0) || !finite_scalar(beta)) return false;  // quick returns: full path
  return gemm_flops(scalar_type_of<T>(), m, n, k) < fast_state.small_flops;
}

/// Counts one call rejected with xerbla_ / cblas_xerbla (PRISM_STATS); true when
/// PRISM_VERBOSE asks for report_invalid's line.
bool count_invalid() noexcept;

/// Prints the line naming a rejected argument, the text prism::gemm throws for it
/// (detail::argument_error), e.g. "prism: cblas_dgemm: argument 9 (lda) must be >= max(1, 3),
/// got 2; C untouched". `routine` is "dgemm" for the Fortran entry, "cblas_dgemm" for CBLAS.
void report_invalid(const char* routine, int position, bool cblas, bool row_major,
                    const detail::gemm_arguments& args) noexcept;

/// Who hears of a rejected CBLAS call, as reference CBLAS routes it: the program's own
/// cblas_xerbla; else, for an argument the Fortran routine reference CBLAS calls checks
/// (position > 3: a dimension or leading dimension), the xerbla_ that routine calls (the
/// program's, or that of a BLAS in the global scope); else nobody (prism prints reference
/// CBLAS's message). E.g. a program defining only xerbla_ hears of cblas_dgemm's bad lda
/// as xerbla_("DGEMM ", 8), as under reference CBLAS and OpenBLAS.
enum class cblas_handler { own_cblas, fortran, none };
/// The handler of a CBLAS call rejected at `position` (see cblas_handler).
cblas_handler cblas_handler_for(int position) noexcept;
/// Calls xerbla_ as the Fortran routine behind CBLAS routine `rout` does, e.g. "cblas_zherk"
/// with info 10: xerbla_("ZHERK ", 10, 6).
void fortran_xerbla(const char* rout, blas_int info);

/// Reports Fortran routine `name`'s bad argument `info` (reference spelling padded to 6,
/// "DGEMM "), C untouched: counts it and, under PRISM_VERBOSE or with no xerbla_ bound,
/// calls `prism_line(routine)` with the lower-case name ("dgemm"), all under no_cancel; then
/// the program's xerbla_, last and outside no_cancel (it may throw, as GNU Octave's does, or
/// longjmp, as R's does), else reference XERBLA's message (prism returns where it STOPs).
template <class F>
void report_fortran(const char (&name)[7], blas_int info, F&& prism_line) {
  int len = 6;
  while (len > 0 && name[len - 1] == ' ') --len;
  {
    const no_cancel hold;
    if (count_invalid() || xerbla_ == nullptr) {
      char routine[7] = {};
      for (int i = 0; i < len; ++i) routine[i] = char(name[i] - 'A' + 'a');
      prism_line(static_cast<const char*>(routine));
    }
    if (xerbla_ == nullptr) {
      std::fprintf(stderr, " ** On entry to %.*s parameter number %2lld had an illegal value\n", len, name,
                   static_cast<long long>(info));
      return;
    }
  }
  xerbla_(name, &info, 6);
}

/// Reports CBLAS routine `rout`'s bad argument at `position` (reference CBLAS numbering;
/// `passed` is what the handler gets, a row-major gemm's transposed number), C untouched:
/// counts it and, under PRISM_VERBOSE or with no handler, calls `prism_line()`, under
/// no_cancel; then the handler cblas_handler_for names, last and outside no_cancel (it may
/// throw or longjmp), else reference cblas_xerbla's message. `forms` are the messages of
/// positions 2 and 3 (e.g. "Illegal TransA setting, %d\n"), `values` positions 1-3's values.
template <class F>
void report_cblas(const char* rout, int position, int passed, const char* const (&forms)[2], const int (&values)[3],
                  F&& prism_line) {
  const char* form = position == 1 ? "Illegal layout setting, %d\n" : position <= 3 ? forms[position - 2] : "";
  const int value = position <= 3 ? values[position - 1] : 0;
  cblas_handler h;
  {
    const no_cancel hold;
    h = cblas_handler_for(position);
    if (count_invalid() || h == cblas_handler::none) prism_line();
    if (h == cblas_handler::none) {  // reference cblas_xerbla's message; it then exits, prism returns
      std::fprintf(stderr, "Parameter %d to routine %s was incorrect\n", position, rout);
      if (position <= 3) std::fprintf(stderr, form, value);
      return;
    }
  }
  if (h == cblas_handler::fortran) return fortran_xerbla(rout, passed - 1);
  if (position <= 3) cblas_xerbla(passed, rout, form, value);
  else cblas_xerbla(passed, rout, "");
}

// The reference argument checks, shared with prism::gemm's prologue.
using detail::fortran_info;
using detail::upper_trans;
using detail::valid_trans;

}  // namespace prism::dropin
