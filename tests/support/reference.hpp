// tests/support/reference.hpp — reference gemm (long-double accumulation), random operands
// and the componentwise error bound every numerical test uses:
//   |C - C_ref| <= c * k * eps * (|alpha| (|op(A)| |op(B)|) + |beta| |C0|)   elementwise.
#pragma once

#include <prism/types.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace prism::test {

template <class T> struct real_of { using type = T; };
template <class R> struct real_of<std::complex<R>> { using type = R; };
/// The real type under T (float for complex<float>).
template <class T> using real_t = typename real_of<T>::type;

/// Wider accumulator: long double, or complex<long double>.
template <class T> struct wide_of { using type = long double; };
template <class R> struct wide_of<std::complex<R>> { using type = std::complex<long double>; };
template <class T> using wide_t = typename wide_of<T>::type;

template <class T> constexpr bool is_complex_v = !std::is_same_v<T, real_t<T>>;

/// Conjugate for complex, identity for real.
template <class T> T conj_if(T x) {
  if constexpr (is_complex_v<T>) return std::conj(x);
  else return x;
}

/// |a| |b| in long double: for complex one square root of |a|^2 |b|^2, where two
/// std::abs calls (hypot, overflow-safe and slow) made the reference loops' bulk.
template <class T> long double abs_mul(T a, T b) {
  if constexpr (is_complex_v<T>) return std::sqrt((long double)std::norm(a) * (long double)std::norm(b));
  else return (long double)std::abs(a) * (long double)std::abs(b);
}

/// Uniform in [-1, 1) (both parts for complex).
template <class T> T random_value(std::mt19937_64& gen) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  if constexpr (is_complex_v<T>) return T(real_t<T>(u(gen)), real_t<T>(u(gen)));
  else return T(u(gen));
}

/// A rows x cols column-major matrix with leading dimension ld >= rows; padding holds
/// `pad` (a sentinel the tests check is never written).
template <class T>
std::vector<T> random_matrix(std::int64_t rows, std::int64_t cols, std::int64_t ld, std::mt19937_64& gen,
                             T pad = T(-777)) {
  std::vector<T> v(std::size_t(std::max<std::int64_t>(1, ld * std::max<std::int64_t>(cols, 1))), pad);
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) v[std::size_t(i + j * ld)] = random_value<T>(gen);
  return v;
}

/// op(X)(i, j) of a column-major X with trans 'N', 'T' or 'C'.
template <class T>
T op_at(const T* X, std::int64_t ld, char trans, std::int64_t i, std::int64_t j) {
  if (trans == 'N' || trans == 'n') return X[i + j * ld];
  T v = X[j + i * ld];
  return (trans == 'C' || trans == 'c') ? conj_if(v) : v;
}

/// The reference of a product: its exact-ish value and the bound's scale term per element.
template <class T>
struct reference {
  std::vector<wide_t<T>> value;     // m x n, ld = m
  std::vector<long double> scale;   // m x n, ld = m
};

/// Adds sum_l op(A)(i, l) op(B)(l, j) to value(i, j) and sum_l |op(A)(i, l)| |op(B)(l, j)| to
/// scale(i, j), l ascending as one plain loop would (so bitwise the same sums), on packed copies
/// of k-chunks of op(A)'s rows and op(B)'s columns, the columns of C dealt to up to 4 threads.
/// Example: m = 1500, n = 700 gives chunks of 2^18 / 2200 = 119 steps of k; op(A)'s 1500 rows
/// of 119 elements each, contiguous, where a strided op(A)(i, l) missed the cache at every l.
template <class T>
void add_products(char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* A, std::int64_t lda,
                  const T* B, std::int64_t ldb, std::vector<wide_t<T>>& value, std::vector<long double>& scale) {
  const std::int64_t kb = std::max<std::int64_t>(1, (std::int64_t(1) << 18) / std::max<std::int64_t>(1, m + n));
  const auto columns = [&](std::int64_t j0, std::int64_t j1) {
    std::vector<T> a(std::size_t(kb * m)), b(std::size_t(kb * (j1 - j0)));
    for (std::int64_t l0 = 0; l0 < k; l0 += kb) {
      const std::int64_t lb = std::min(kb, k - l0);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t l = 0; l < lb; ++l) a[std::size_t(l + i * lb)] = op_at(A, lda, ta, i, l0 + l);
      for (std::int64_t j = j0; j < j1; ++j)
        for (std::int64_t l = 0; l < lb; ++l) b[std::size_t(l + (j - j0) * lb)] = op_at(B, ldb, tb, l0 + l, j);
      for (std::int64_t j = j0; j < j1; ++j)
        for (std::int64_t i = 0; i < m; ++i) {
          const T* pa = &a[std::size_t(i * lb)];
          const T* pb = &b[std::size_t((j - j0) * lb)];
          wide_t<T> acc = value[std::size_t(i + j * m)];
          long double mag = scale[std::size_t(i + j * m)];
          for (std::int64_t l = 0; l < lb; ++l) {
            acc += wide_t<T>(pa[l]) * wide_t<T>(pb[l]);
            mag += abs_mul(pa[l], pb[l]);
          }
          value[std::size_t(i + j * m)] = acc;
          scale[std::size_t(i + j * m)] = mag;
        }
    }
  };
  const double work = double(m) * double(n) * double(k) / double(1 << 22);  // a thread per 4M products
  const std::int64_t threads = std::clamp<std::int64_t>(std::int64_t(std::min(double(n), work)), 1,
                                                        std::min(4u, std::max(1u, std::thread::hardware_concurrency())));
  std::vector<std::thread> pool;
  for (std::int64_t t = 1; t < threads; ++t) pool.emplace_back(columns, n * t / threads, n * (t + 1) / threads);
  columns(0, n / threads);
  for (std::thread& th : pool) th.join();
}

/// Reference result of C = alpha op(A) op(B) + beta C0 (column-major, long-double
/// accumulation) and the elementwise bound term |alpha| |op(A)||op(B)| + |beta| |C0|.
template <class T>
reference<T> reference_gemm(char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                            const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta,
                            const T* C0, std::int64_t ldc) {
  reference<T> r;
  r.value.assign(std::size_t(m * n), wide_t<T>(0));
  r.scale.assign(std::size_t(m * n), 0.0L);
  if (alpha != T(0)) add_products(ta, tb, m, n, k, A, lda, B, ldb, r.value, r.scale);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      wide_t<T>& v = r.value[std::size_t(i + j * m)];
      long double& s = r.scale[std::size_t(i + j * m)];
      v *= wide_t<T>(alpha);
      s *= (long double)std::abs(alpha);
      if (beta != T(0)) {  // beta = 0: C0 is not read (it may hold NaN)
        v += wide_t<T>(beta) * wide_t<T>(C0[i + j * ldc]);
        s += (long double)std::abs(beta) * (long double)std::abs(C0[i + j * ldc]);
      }
    }
  return r;
}

/// Checks C against the reference with the componentwise bound (c = 4, doubled for
/// complex: each complex multiply-add is several real ones). Returns "" or a description
/// of the first violation. Also checks that C's padding rows (ld > m) kept `pad`.
template <class T>
std::string check_bound(const reference<T>& r, std::int64_t m, std::int64_t n, std::int64_t k, const T* C,
                        std::int64_t ldc, T pad = T(-777)) {
  const long double eps = std::numeric_limits<real_t<T>>::epsilon();
  const long double c = is_complex_v<T> ? 8.0L : 4.0L;
  const long double tiny = std::numeric_limits<real_t<T>>::min();
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i < m; ++i) {
      const T got = C[i + j * ldc];
      const long double err = std::abs(wide_t<T>(got) - r.value[std::size_t(i + j * m)]);
      const long double bound = c * std::max<std::int64_t>(k, 1) * eps * r.scale[std::size_t(i + j * m)] + 4 * tiny;
      if (!(err <= bound))  // also catches NaN
        return "C(" + std::to_string(i) + "," + std::to_string(j) + ") error " + std::to_string((double)err) +
               " > bound " + std::to_string((double)bound);
    }
    for (std::int64_t i = m; i < ldc; ++i)
      if (!(C[i + j * ldc] == pad)) return "padding C(" + std::to_string(i) + "," + std::to_string(j) + ") was written";
  }
  return "";
}

}  // namespace prism::test
