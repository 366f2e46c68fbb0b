// tests/fuzz/fuzz_plan.cpp — fuzz target: the plan text parser and validator. Any input
// either fails to parse (prism::plan_error), or parses to a plan that validates or is
// refused (prism::plan_error) — and a plan that survives is run on its problem when that
// is small (m, n, k <= 48, one rank, at most 4 threads; gemm only): prism::execute either
// refuses it with a prism::error before touching C (C keeps its sentinel bit for bit) or
// computes C = alpha op(A) op(B) + beta C within the componentwise bound. Anything else
// (another exception, a sanitizer report, a wrong C) is a finding. Its text round-trips:
// parse(to_string()) == the plan.
#include <prism/prism.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string_view>
#include <vector>

namespace {

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_plan: FINDING: %s\n", what);
  std::abort();
}

template <class T>
double mag(T x) {
  return std::abs(x);
}

template <class T>
T op(const std::vector<T>& X, std::int64_t ld, char t, std::int64_t i, std::int64_t l) {
  const T v = t == 'N' ? X[std::size_t(i + l * ld)] : X[std::size_t(l + i * ld)];
  if constexpr (std::is_floating_point_v<T>) return v;
  else return t == 'C' ? std::conj(v) : v;
}

template <class T>
void run(const prism::plan& p) {
  const prism::problem& pr = p.problem();
  const std::int64_t m = pr.m, n = pr.n, k = pr.k;
  const std::int64_t ra = pr.transa == 'N' ? m : k, ca = pr.transa == 'N' ? k : m;
  const std::int64_t rb = pr.transb == 'N' ? k : n, cb = pr.transb == 'N' ? n : k;
  const std::int64_t lda = std::max<std::int64_t>(1, ra), ldb = std::max<std::int64_t>(1, rb),
                     ldc = std::max<std::int64_t>(1, m);
  std::vector<T> A(std::size_t(lda * std::max<std::int64_t>(1, ca))), B(std::size_t(ldb * std::max<std::int64_t>(1, cb)));
  std::vector<T> C(std::size_t(ldc * std::max<std::int64_t>(1, n)));
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = T(double(int(i * 7 % 11) - 5) / 4);
  for (std::size_t i = 0; i < B.size(); ++i) B[i] = T(double(int(i * 5 % 13) - 6) / 8);
  for (std::size_t i = 0; i < C.size(); ++i) C[i] = T(double(int(i % 3)) - 1);
  const std::vector<T> C0 = C;
  const T alpha = T(1.5), beta = T(-0.5);
  try {
    prism::execute<T>(p, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  } catch (const prism::error&) {
    for (std::size_t i = 0; i < C.size(); ++i)
      if (!(C[i] == C0[i])) finding("execute refused the plan after writing C");
    return;
  }
  using R = decltype(mag(T{}));
  const double eps = double(std::numeric_limits<R>::epsilon());
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      T s{};
      double bound = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        const T x = op(A, lda, pr.transa, i, l), y = op(B, ldb, pr.transb, l, j);
        s += x * y;
        bound += mag(x) * mag(y);
      }
      const T want = alpha * s + beta * C0[std::size_t(i + j * ldc)];
      const double tol = 4.0 * double(k + 2) * eps * (mag(alpha) * bound + mag(beta) * mag(C0[std::size_t(i + j * ldc)]));
      if (!(mag(C[std::size_t(i + j * ldc)] - want) <= tol + 1e-30)) finding("execute computed a wrong C");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  prism::plan p;
  try {
    p = prism::plan::parse(text);
  } catch (const prism::plan_error&) {
    return 0;
  }
  try {
    p.validate();
  } catch (const prism::plan_error&) {
    return 0;
  }
  try {
    if (!(prism::plan::parse(p.to_string()) == p)) finding("parse(to_string()) differs from the plan");
  } catch (const prism::plan_error&) {
    finding("a valid plan's own text does not parse");
  }
  const prism::problem& pr = p.problem();
  if (pr.op != prism::operation::gemm || p.ranks() != 1 || p.threads() > 4 || pr.m > 48 || pr.n > 48 || pr.k > 48)
    return 0;
  switch (pr.type) {
    case prism::scalar_type::s: run<float>(p); break;
    case prism::scalar_type::d: run<double>(p); break;
    case prism::scalar_type::c: run<std::complex<float>>(p); break;
    case prism::scalar_type::z: run<std::complex<double>>(p); break;
  }
  return 0;
}
