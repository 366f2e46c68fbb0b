// lib/leaf/backend/blas_rank_k.cpp — cblas_?syrk / cblas_?herk leaves of a privately opened BLAS.
// Kept apart from blas_library.cpp (which owns loading): these entry points are looked up
// on first use with dlsym, so a library without them still serves gemm leaves.
#include "blas_library.hpp"
#include "blis_expert.hpp"

#include <prism/error.hpp>

#include <cctype>
#include <mutex>

namespace prism::detail {

namespace {

constexpr int cblas_col_major = 102;
int cblas_uplo(char u) { return u == 'U' ? 121 : 122; }
int cblas_trans(char t) { return t == 'N' ? 111 : t == 'T' ? 112 : 113; }

// The symbol `name` of `lib`, looked up once per (library, name) slot: leaves are on the
// hot path, dlsym is not free. Slot index: 0..3 syrk s/d/c/z, 4..5 herk c/z.
void* lookup(const blas_library& lib, int slot, const char* name) {
  struct cache { const blas_library* lib; void* fn; };
  static std::mutex guard;
  static cache slots[6][8] = {};  // a handful of libraries per process at most
  std::lock_guard<std::mutex> hold(guard);
  for (auto& c : slots[slot]) {
    if (c.lib == &lib) return c.fn;
    if (c.lib == nullptr) {
      void* fn = lib.symbol(name);
      if (fn == nullptr) throw backend_error("'" + lib.path() + "' has no " + name);
      c = {&lib, fn};
      return fn;
    }
  }
  void* fn = lib.symbol(name);
  if (fn == nullptr) throw backend_error("'" + lib.path() + "' has no " + name);
  return fn;
}

template <scalar T>
constexpr int type_slot() {
  return std::same_as<T, float> ? 0 : std::same_as<T, double> ? 1 : std::same_as<T, std::complex<float>> ? 2 : 3;
}

}  // namespace

template <scalar T>
void blas_library::syrk(char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, const T* A,
                        std::int64_t lda, T beta, T* C, std::int64_t ldc) const {
  static constexpr const char* names[4] = {"cblas_ssyrk", "cblas_dsyrk", "cblas_csyrk", "cblas_zsyrk"};
  constexpr int s = type_slot<T>();
  const char ul = char(std::toupper(uplo));
  scale_unless_finite(beta, C, ldc, n, n, ul, false);
  const bool expert = blis_cntx_ != nullptr && blis_rank_k_ex_[s] != nullptr;  // as gemm: one runtime, every thread
  void* fn = expert ? blis_rank_k_ex_[s] : lookup(*this, s, names[s]);
  const auto aside = set_aside_non_finite(blis_ && beta == T(1), C, ldc, n, n, ul);
  if (expert) {
    blis_expert::syrk<T>(fn, ul, char(std::toupper(trans)), n, k, alpha, A, lda, beta, C, ldc, blis_cntx_, blis_rntm_);
  } else {
    const int u = cblas_uplo(uplo), t = cblas_trans(trans);
    // cblas_?syrk(order, uplo, trans, n, k, alpha, A, lda, beta, C, ldc); complex scalars by pointer.
    auto call = [&]<class I>(I) {
      if constexpr (s < 2)
        reinterpret_cast<void (*)(int, int, int, I, I, T, const T*, I, T, T*, I)>(fn)(
            cblas_col_major, u, t, I(n), I(k), alpha, A, I(lda), beta, C, I(ldc));
      else
        reinterpret_cast<void (*)(int, int, int, I, I, const void*, const void*, I, const void*, void*, I)>(fn)(
            cblas_col_major, u, t, I(n), I(k), &alpha, A, I(lda), &beta, C, I(ldc));
    };
    if (ilp64_) call(std::int64_t{});
    else call(int{});
  }
  add_back(aside, C);
}

template <scalar T>
void blas_library::herk(char uplo, char trans, std::int64_t n, std::int64_t k, double alpha, const T* A,
                        std::int64_t lda, double beta, T* C, std::int64_t ldc) const {
  static_assert(type_slot<T>() >= 2, "herk is complex only");
  constexpr bool single = std::same_as<T, std::complex<float>>;
  using R = std::conditional_t<single, float, double>;
  const int slot = single ? 4 : 5;
  const bool expert = blis_cntx_ != nullptr && blis_rank_k_ex_[slot] != nullptr;  // as syrk
  void* fn = expert ? blis_rank_k_ex_[slot] : lookup(*this, slot, single ? "cblas_cherk" : "cblas_zherk");
  const char ul = char(std::toupper(uplo));
  scale_unless_finite(beta, C, ldc, n, n, ul, true);
  const auto aside = set_aside_non_finite(blis_ && beta == 1.0, C, ldc, n, n, ul);
  if (expert) {
    blis_expert::herk<T>(fn, ul, char(std::toupper(trans)), n, k, alpha, A, lda, beta, C, ldc, blis_cntx_, blis_rntm_);
  } else {
    const int u = cblas_uplo(uplo), t = cblas_trans(trans);
    // cblas_?herk(order, uplo, trans, n, k, alpha (real), A, lda, beta (real), C, ldc).
    auto call = [&]<class I>(I) {
      reinterpret_cast<void (*)(int, int, int, I, I, R, const void*, I, R, void*, I)>(fn)(
          cblas_col_major, u, t, I(n), I(k), R(alpha), A, I(lda), R(beta), C, I(ldc));
    };
    if (ilp64_) call(std::int64_t{});
    else call(int{});
  }
  add_back(aside, C);
}

#define PRISM_INSTANTIATE(T)                                                                                       \
  template void blas_library::syrk<T>(char, char, std::int64_t, std::int64_t, T, const T*, std::int64_t, T, T*, \
                                      std::int64_t) const;
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE
template void blas_library::herk<std::complex<float>>(char, char, std::int64_t, std::int64_t, double,
                                                      const std::complex<float>*, std::int64_t, double,
                                                      std::complex<float>*, std::int64_t) const;
template void blas_library::herk<std::complex<double>>(char, char, std::int64_t, std::int64_t, double,
                                                       const std::complex<double>*, std::int64_t, double,
                                                       std::complex<double>*, std::int64_t) const;

}  // namespace prism::detail
