// bench/small_calls.cpp — what a small call costs through prism's C++ API: prism::gemm,
// prism::syrk and prism::herk on tiny shapes against threaded OpenBLAS's cblas_?gemm /
// cblas_?syrk / cblas_zherk (libopenblas.so.0, the LP64 build Debian's alternatives link
// names, the pthread one on a default install) in the same process,
// the two alternating, best of 7 rounds of at least 0.05 s each. Built by
// scripts/ab-small-calls.sh against any prism build (its include/ and libprism.so), so two
// builds, even one from before this file, can be compared call for call.
//
//   small_calls [--shape gemm:N | syrk:N | herk:N]...   (N x N x N; default: a set of each)
#include <prism/prism.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
using zd = std::complex<double>;

// Nanoseconds per call of f: calls repeated until 0.05 s have passed, the count fixed by a
// first run.
template <class F>
double ns_per_call(F&& f, long calls) {
  const auto t0 = clock_type::now();
  for (long i = 0; i < calls; ++i) f();
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count() / double(calls);
}

template <class F>
long calls_for(F&& f) {
  long calls = 1;
  while (ns_per_call(f, calls) * double(calls) < 5e7) calls *= 2;
  return calls;
}

// The three CBLAS calls of libopenblas.so.0 (null when it or a symbol is missing).
struct openblas {
  void* h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  using gemm_t = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*, int);
  using syrk_t = void (*)(int, int, int, int, int, double, const double*, int, double, double*, int);
  using herk_t = void (*)(int, int, int, int, int, double, const void*, int, double, void*, int);
  gemm_t gemm = h ? reinterpret_cast<gemm_t>(dlsym(h, "cblas_dgemm")) : nullptr;
  syrk_t syrk = h ? reinterpret_cast<syrk_t>(dlsym(h, "cblas_dsyrk")) : nullptr;
  herk_t herk = h ? reinterpret_cast<herk_t>(dlsym(h, "cblas_zherk")) : nullptr;
};

// Times prism's call and OpenBLAS's on one shape and prints both. CBLAS enum values:
// column-major 102, NoTrans 111, Trans 112, ConjTrans 113, Upper 121, Lower 122.
void one(const openblas& ob, const std::string& op, int n) {
  std::vector<double> A(std::size_t(n) * n), B(A.size()), C(A.size());
  std::vector<zd> Z(A.size()), W(A.size());
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = 1.0 + double(i % 7), B[i] = 0.5, Z[i] = zd(1.0, double(i % 3));
  auto p = [&] {
    if (op == "gemm") prism::gemm('N', 'N', n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, C.data(), n);
    else if (op == "syrk") prism::syrk('U', 'T', n, n, 1.0, A.data(), n, 0.0, C.data(), n);
    else prism::herk('L', 'C', n, n, 1.0, Z.data(), n, 0.0, W.data(), n);
  };
  auto o = [&] {
    if (op == "gemm") ob.gemm(102, 111, 111, n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, C.data(), n);
    else if (op == "syrk") ob.syrk(102, 121, 112, n, n, 1.0, A.data(), n, 0.0, C.data(), n);
    else ob.herk(102, 122, 113, n, n, 1.0, Z.data(), n, 0.0, W.data(), n);
  };
  const long cp = calls_for(p), co = calls_for(o);
  double bp = 1e300, bo = 1e300;
  for (int r = 0; r < 7; ++r) bp = std::min(bp, ns_per_call(p, cp)), bo = std::min(bo, ns_per_call(o, co));
  const char* what = op == "gemm" ? "d NN" : op == "syrk" ? "d UT" : "z LC";
  std::printf("%s %s %dx%dx%d: prism %.1f ns, openblas %.1f ns, openblas/prism %.3f\n", op.c_str(), what, n, n, n, bp, bo,
              bo / bp);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::string, int>> shapes;
  for (int i = 1; i < argc; ++i) {
    const char* colon = i + 1 < argc && std::strcmp(argv[i], "--shape") == 0 ? std::strchr(argv[i + 1], ':') : nullptr;
    if (colon == nullptr) {
      std::fprintf(stderr, "usage: small_calls [--shape gemm:N | syrk:N | herk:N]...\n");
      return 2;
    }
    const std::string op(argv[i + 1], std::size_t(colon - argv[i + 1]));
    const int n = std::atoi(colon + 1);
    if ((op != "gemm" && op != "syrk" && op != "herk") || n < 1 || n > 4096) {
      std::fprintf(stderr, "small_calls: --shape takes gemm, syrk or herk and N in 1..4096, got '%s'\n", argv[i + 1]);
      return 2;
    }
    shapes.emplace_back(op, n);
    ++i;
  }
  if (shapes.empty())
    shapes = {{"gemm", 8}, {"gemm", 16}, {"gemm", 32}, {"gemm", 64}, {"syrk", 8}, {"syrk", 16}, {"syrk", 32}, {"herk", 16}};
  const openblas ob;
  if (ob.gemm == nullptr || ob.syrk == nullptr || ob.herk == nullptr) {
    std::fprintf(stderr, "small_calls: cannot open libopenblas.so.0's CBLAS\n");
    return 1;
  }
  for (const auto& [op, n] : shapes) one(ob, op, n);
  return 0;
}
