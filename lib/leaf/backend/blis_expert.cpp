// lib/leaf/backend/blis_expert.cpp — the one file that includes <blis.h> (blis_expert.hpp).
#include "blis_expert.hpp"

#include "../../environment/run_once.hpp"

#include <complex>

#if __has_include(<blis.h>)
#define PRISM_HAVE_BLIS_H 1
// BLIS's header is C99 written to be includable from C++; its macros stay in this file.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <blis.h>
#pragma GCC diagnostic pop
#else
#define PRISM_HAVE_BLIS_H 0
#endif

namespace prism::detail::blis_expert {

#if PRISM_HAVE_BLIS_H

bool available() noexcept { return true; }

namespace {
struct arch_entry {
  const char* name;
  int id;
};
// The configurations this header registers (bli_config.h's BLIS_CONFIG_*), with their
// arch_t values. Only x86-64 ones are listed: prism chooses among those.
constexpr arch_entry registered[] = {
#ifdef BLIS_CONFIG_SKX
    {"skx", BLIS_ARCH_SKX},
#endif
#ifdef BLIS_CONFIG_KNL
    {"knl", BLIS_ARCH_KNL},
#endif
#ifdef BLIS_CONFIG_HASWELL
    {"haswell", BLIS_ARCH_HASWELL},
#endif
#ifdef BLIS_CONFIG_SANDYBRIDGE
    {"sandybridge", BLIS_ARCH_SANDYBRIDGE},
#endif
#ifdef BLIS_CONFIG_PENRYN
    {"penryn", BLIS_ARCH_PENRYN},
#endif
#ifdef BLIS_CONFIG_ZEN3
    {"zen3", BLIS_ARCH_ZEN3},
#endif
#ifdef BLIS_CONFIG_ZEN2
    {"zen2", BLIS_ARCH_ZEN2},
#endif
#ifdef BLIS_CONFIG_ZEN
    {"zen", BLIS_ARCH_ZEN},
#endif
#ifdef BLIS_CONFIG_EXCAVATOR
    {"excavator", BLIS_ARCH_EXCAVATOR},
#endif
#ifdef BLIS_CONFIG_STEAMROLLER
    {"steamroller", BLIS_ARCH_STEAMROLLER},
#endif
#ifdef BLIS_CONFIG_PILEDRIVER
    {"piledriver", BLIS_ARCH_PILEDRIVER},
#endif
#ifdef BLIS_CONFIG_BULLDOZER
    {"bulldozer", BLIS_ARCH_BULLDOZER},
#endif
#ifdef BLIS_CONFIG_GENERIC
    {"generic", BLIS_ARCH_GENERIC},
#endif
};

trans_t blis_trans(char t) {
  return t == 'N' ? BLIS_NO_TRANSPOSE : t == 'T' ? BLIS_TRANSPOSE : BLIS_CONJ_TRANSPOSE;
}

template <class T> struct blis_type;
template <> struct blis_type<float> { using type = float; };
template <> struct blis_type<double> { using type = double; };
template <> struct blis_type<std::complex<float>> { using type = scomplex; };
template <> struct blis_type<std::complex<double>> { using type = dcomplex; };
}  // namespace

const std::vector<std::string>& registered_archs() {
  static const std::vector<std::string>& names = *new std::vector<std::string>([] {  // never destroyed: calls may come at exit (docs/dropin.md)
    std::vector<std::string> v;
    for (const arch_entry& a : registered) v.emplace_back(a.name);
    return v;
  }());
  return names;
}

int arch_id(const std::string& name) {
  for (const arch_entry& a : registered)
    if (name == a.name) return a.id;
  return -1;
}

void* one_thread_runtime(void* init_from_global) {
  // One object for the process, never freed: bli_?gemm_ex copies it into a local runtime
  // per call, so concurrent leaves may share it. Example of what it holds after this:
  // num_threads = 1 and every loop's ways unset, which BLIS resolves to 1 way each.
  static rntm_t rntm;
  static run_once once;  // every BLIS leaf passes here
  once([&] {
    reinterpret_cast<void (*)(rntm_t*)>(init_from_global)(&rntm);
    bli_rntm_set_num_threads(1, &rntm);
  });
  return &rntm;
}

template <scalar T>
void gemm(void* fn, char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
          const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc, void* cntx,
          void* rntm) {
  using B_t = typename blis_type<T>::type;  // same layout as T (two reals for complex)
  using ex = void (*)(trans_t, trans_t, dim_t, dim_t, dim_t, B_t*, B_t*, inc_t, inc_t, B_t*, inc_t, inc_t, B_t*,
                      B_t*, inc_t, inc_t, cntx_t*, rntm_t*);
  // Column-major: row stride 1, column stride the leading dimension. BLIS takes non-const
  // pointers for its inputs and does not write them.
  reinterpret_cast<ex>(fn)(blis_trans(transa), blis_trans(transb), dim_t(m), dim_t(n), dim_t(k),
                           reinterpret_cast<B_t*>(&alpha), reinterpret_cast<B_t*>(const_cast<T*>(A)), 1, inc_t(lda),
                           reinterpret_cast<B_t*>(const_cast<T*>(B)), 1, inc_t(ldb), reinterpret_cast<B_t*>(&beta),
                           reinterpret_cast<B_t*>(C), 1, inc_t(ldc), static_cast<cntx_t*>(cntx),
                           static_cast<rntm_t*>(rntm));
}

template <scalar T>
void syrk(void* fn, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, const T* A, std::int64_t lda,
          T beta, T* C, std::int64_t ldc, void* cntx, void* rntm) {
  using B_t = typename blis_type<T>::type;
  using ex = void (*)(uplo_t, trans_t, dim_t, dim_t, B_t*, B_t*, inc_t, inc_t, B_t*, B_t*, inc_t, inc_t, cntx_t*,
                      rntm_t*);
  reinterpret_cast<ex>(fn)(uplo == 'U' ? BLIS_UPPER : BLIS_LOWER, blis_trans(trans), dim_t(n), dim_t(k),
                           reinterpret_cast<B_t*>(&alpha), reinterpret_cast<B_t*>(const_cast<T*>(A)), 1, inc_t(lda),
                           reinterpret_cast<B_t*>(&beta), reinterpret_cast<B_t*>(C), 1, inc_t(ldc),
                           static_cast<cntx_t*>(cntx), static_cast<rntm_t*>(rntm));
}

template <scalar T>
void herk(void* fn, char uplo, char trans, std::int64_t n, std::int64_t k, double alpha, const T* A,
          std::int64_t lda, double beta, T* C, std::int64_t ldc, void* cntx, void* rntm) {
  using B_t = typename blis_type<T>::type;
  using R = typename T::value_type;
  R a = R(alpha), b = R(beta);
  using ex = void (*)(uplo_t, trans_t, dim_t, dim_t, R*, B_t*, inc_t, inc_t, R*, B_t*, inc_t, inc_t, cntx_t*, rntm_t*);
  reinterpret_cast<ex>(fn)(uplo == 'U' ? BLIS_UPPER : BLIS_LOWER, blis_trans(trans), dim_t(n), dim_t(k), &a,
                           reinterpret_cast<B_t*>(const_cast<T*>(A)), 1, inc_t(lda), &b, reinterpret_cast<B_t*>(C), 1,
                           inc_t(ldc), static_cast<cntx_t*>(cntx), static_cast<rntm_t*>(rntm));
}

#else  // built without <blis.h>

bool available() noexcept { return false; }
const std::vector<std::string>& registered_archs() {
  static const std::vector<std::string>& none = *new std::vector<std::string>;  // never destroyed: calls may come at exit (docs/dropin.md)
  return none;
}
int arch_id(const std::string&) { return -1; }
void* one_thread_runtime(void*) { return nullptr; }
template <scalar T>
void gemm(void*, char, char, std::int64_t, std::int64_t, std::int64_t, T, const T*, std::int64_t, const T*,
          std::int64_t, T, T*, std::int64_t, void*, void*) {}
template <scalar T>
void syrk(void*, char, char, std::int64_t, std::int64_t, T, const T*, std::int64_t, T, T*, std::int64_t, void*, void*) {}
template <scalar T>
void herk(void*, char, char, std::int64_t, std::int64_t, double, const T*, std::int64_t, double, T*, std::int64_t,
          void*, void*) {}

#endif

#define PRISM_INSTANTIATE(T)                                                                                    \
  template void gemm<T>(void*, char, char, std::int64_t, std::int64_t, std::int64_t, T, const T*, std::int64_t, \
                        const T*, std::int64_t, T, T*, std::int64_t, void*, void*);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE
#define PRISM_INSTANTIATE(T)                                                                                        \
  template void syrk<T>(void*, char, char, std::int64_t, std::int64_t, T, const T*, std::int64_t, T, T*, std::int64_t, \
                        void*, void*);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE
template void herk<std::complex<float>>(void*, char, char, std::int64_t, std::int64_t, double, const std::complex<float>*,
                                        std::int64_t, double, std::complex<float>*, std::int64_t, void*, void*);
template void herk<std::complex<double>>(void*, char, char, std::int64_t, std::int64_t, double,
                                         const std::complex<double>*, std::int64_t, double, std::complex<double>*,
                                         std::int64_t, void*, void*);

}  // namespace prism::detail::blis_expert
