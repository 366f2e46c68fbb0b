// tests/support/beta_one.hpp — the beta = 1 special-values case of a complex C: C = (Inf, 3)
// plus (x, y) must be (Inf, 3 + y), part by part, where (Inf, 3) * (1, 0) would be
// (Inf, NaN). Integer-valued operands, so every sum is exact and compared bit for bit.
#pragma once

#include "reference.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace prism::test {

/// An n x k integer-valued complex A (column-major, lda n), a C0 with an infinite or NaN part
/// at (0,0) (1,1) (2,2) (2,1), and the exact n x n sums S = A A^T (gemm 'N' 'T', syrk 'N')
/// and H = A A^H (herk 'N').
template <class T>
struct beta_one_case {
  using R = real_t<T>;
  std::int64_t n, k;
  std::vector<T> A, C0, S, H;

  /// The case for n >= 3 rows and depth k.
  beta_one_case(std::int64_t rows, std::int64_t depth)
      : n(rows), k(depth), A(std::size_t(n * k)), C0(std::size_t(n * n), T(1, -1)), S(C0.size()), H(C0.size()) {
    const R inf = std::numeric_limits<R>::infinity(), nan = std::numeric_limits<R>::quiet_NaN();
    for (std::size_t i = 0; i < A.size(); ++i) A[i] = T(R(int(i % 3) - 1), R(int(i % 5) - 2));
    C0[0] = T(inf, 3), C0[std::size_t(n + 1)] = T(nan, 2), C0[std::size_t(2 * n + 2)] = T(-4, inf), C0[std::size_t(n + 2)] = T(5, nan);
    for (std::int64_t l = 0; l < k; ++l)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < n; ++i) {
          S[std::size_t(i + j * n)] += A[std::size_t(i + l * n)] * A[std::size_t(j + l * n)];
          H[std::size_t(i + j * n)] += A[std::size_t(i + l * n)] * std::conj(A[std::size_t(j + l * n)]);
        }
  }

  /// Elements of C other than C0 + the sum part by part: 'G' (gemm, S) every one; 'S' (syrk,
  /// S) and 'H' (herk, H) the lower triangle, the upper one untouched, and for 'H' a diagonal
  /// imaginary part of 0 (herk never reads Im C(j, j), the Inf at (2, 2)).
  long wrong(const std::vector<T>& C, char what) const {
    const std::vector<T>& X = what == 'H' ? H : S;
    const auto same = [](R got, R want) { return std::isnan(want) ? std::isnan(got) : got == want; };
    long bad = 0;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        const std::size_t e = std::size_t(i + j * n);
        if (what != 'G' && i < j) {
          bad += C[e] == C0[e] ? 0 : 1;  // (finite there)
          continue;
        }
        const R imag = what == 'H' && i == j ? R(0) : C0[e].imag() + X[e].imag();
        bad += same(C[e].real(), C0[e].real() + X[e].real()) && same(C[e].imag(), imag) ? 0 : 1;
      }
    return bad;
  }
};

}  // namespace prism::test
