// tests/test_large.cpp — large shapes against OpenBLAS (threaded, all cores, opened
// privately), where a long-double reference would be too slow. Both results carry error,
// so their difference is checked against twice the componentwise bound
// 2 * c * k * eps * (|alpha| |op(A)| |op(B)| + |beta| |C|), with |op(A)| |op(B)| itself
// computed by OpenBLAS on the absolute values (exact enough: all terms are >= 0).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "leaf/backend/blas_library.hpp"
#include "support/reference.hpp"

#include <oneapi/tbb/info.h>

using namespace prism;

namespace {

// Small integers in [-2, 2]: every product and partial sum of a k <= 2^21 dot product is
// an integer below 2^24, so float and double arithmetic are exact and results must match
// to the bit. Used where the componentwise bound would be too loose to catch a dropped
// slab (float with long k).
template <class T>
void integer_fill(std::vector<T>& v, std::mt19937_64& gen) {
  for (auto& x : v) {
    if constexpr (test::is_complex_v<T>) x = T(test::real_t<T>(int(gen() % 5) - 2), test::real_t<T>(int(gen() % 5) - 2));
    else x = T(int(gen() % 5) - 2);
  }
}

template <class T>
void against_openblas(char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, T beta,
                      bool integers = false) {
  using R = test::real_t<T>;
  const auto& ob = detail::blas_library::get(detail::blas_build::openblas_pthread);
  ob.set_threads(oneapi::tbb::info::default_concurrency());
  std::mt19937_64 gen(42);
  const std::int64_t ra = ta == 'N' ? m : k, ca = ta == 'N' ? k : m, rb = tb == 'N' ? k : n, cb = tb == 'N' ? n : k;
  auto A = test::random_matrix<T>(ra, ca, ra, gen), B = test::random_matrix<T>(rb, cb, rb, gen);
  auto C0 = test::random_matrix<T>(m, n, m, gen);
  if (integers) integer_fill(A, gen), integer_fill(B, gen), integer_fill(C0, gen);
  auto C = C0, D = C0;
  context ctx;
  ctx.set_small_flops(0);
  gemm<T>(ta, tb, m, n, k, alpha, A.data(), ra, B.data(), rb, beta, C.data(), m, ctx);
  ob.gemm<T>(ta, tb, m, n, k, alpha, A.data(), ra, B.data(), rb, beta, D.data(), m);
  if (integers) {  // exact: bit-identical results, and not the untouched C0
    INFO(char(scalar_type_of<T>()), " ", ta, tb, " ", m, "x", n, "x", k, " (integer-valued)");
    CHECK(C == D);
    CHECK(C != C0);
    return;
  }
  // |op(A)| |op(B)| in the real type (trans C and T give the same absolute values).
  std::vector<R> absA(A.size()), absB(B.size()), mag(std::size_t(m * n), R(0));
  for (std::size_t i = 0; i < A.size(); ++i) absA[i] = std::abs(A[i]);
  for (std::size_t i = 0; i < B.size(); ++i) absB[i] = std::abs(B[i]);
  ob.gemm<R>(ta == 'N' ? 'N' : 'T', tb == 'N' ? 'N' : 'T', m, n, k, R(1), absA.data(), ra, absB.data(), rb, R(0),
             mag.data(), m);
  const long double eps = std::numeric_limits<R>::epsilon(), c = test::is_complex_v<T> ? 8 : 4;
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < m * n; ++i) {
    const long double scale = std::abs(alpha) * (long double)mag[i] * 1.0001L + std::abs(beta) * (long double)std::abs(C0[i]);
    const long double bound = 2 * c * k * eps * scale;
    if (!((long double)std::abs(C[i] - D[i]) <= bound)) ++bad;
  }
  INFO(char(scalar_type_of<T>()), " ", ta, tb, " ", m, "x", n, "x", k);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("tall-skinny and Gram shapes match OpenBLAS within the bound") {
  against_openblas<double>('N', 'N', 64, 64, 1 << 21, 1.0, 0.0);
  against_openblas<float>('T', 'N', 32, 32, 1 << 21, 1.0f, 1.0f, /*integers=*/true);
  against_openblas<std::complex<float>>('C', 'N', 8, 8, 1 << 20, {1, 0}, {0, 1}, /*integers=*/true);
  against_openblas<double>('T', 'N', 8, 8, 1 << 22, -1.0, 0.5);
  against_openblas<std::complex<double>>('C', 'N', 16, 16, 1 << 18, {1, 0.5}, {0, 1});
}

TEST_CASE("two large dimensions and square shapes match OpenBLAS within the bound") {
  against_openblas<double>('N', 'T', 2048, 2048, 64, 1.0, 1.0);
  against_openblas<double>('T', 'T', 1001, 999, 1003, 2.0, -1.0);
  against_openblas<float>('N', 'N', 1536, 1536, 1536, 1.0f, 0.0f);
  against_openblas<std::complex<float>>('N', 'C', 500, 400, 700, {0.5f, -1}, {1, 0});
}
