// tests/test_overflow.cpp — the C++ API (prism::gemm, prism::syrk, prism::herk) on calls
// whose element offsets pass 2^31 (column j of an operand starting at j * ld > INT_MAX) and
// whose leading dimensions themselves pass 2^31 - 1 (those prism refuses today with a
// prism::error naming the limit, C untouched: allowed, as is a correct result). The operands are mmap'ed spans with
// MAP_NORESERVE: 8-17 GB of address space, of which only the touched elements get pages
// (each case far below 4 GiB). Inputs are small integers, so the result must equal a plain
// loop exactly; the two elements below each column of C must keep their sentinel, and the
// other triangle of a syrk/herk C must stay as it was. (Dense m*n > 2^31 products would
// need 8 GiB for C alone in float: not run here; tests/dropin/check_overflow.c covers the
// drop-ins the same way.)
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include <sys/mman.h>

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

using namespace prism;

namespace {

constexpr std::int64_t past_int = (std::int64_t(1) << 27) + 1;  // column 16 starts past 2^31
constexpr std::int64_t huge_ld = (std::int64_t(1) << 31) + 5;    // ld itself past INT_MAX
constexpr double sentinel = 12345;

// A column-major rows x cols operand with leading dimension ld, in a MAP_NORESERVE span.
template <class T>
struct span {
  std::int64_t rows, cols, ld;
  std::size_t bytes;
  T* data;
  span(std::int64_t r, std::int64_t c, std::int64_t l, int seed) : rows(r), cols(c), ld(l) {
    bytes = std::size_t(l * (c - 1) + r + 2) * sizeof(T);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE_MESSAGE(p != MAP_FAILED, "cannot map the span (virtual memory)");
    data = static_cast<T*>(p);
    for (std::int64_t j = 0; j < c; ++j) {
      for (std::int64_t i = 0; i < r; ++i) {
        const int a = int((i * 7 + j * 3 + seed) % 5) - 2, b = int((i + j * 5 + seed) % 3) - 1;
        if constexpr (std::is_floating_point_v<T>) (*this)(i, j) = T(a);
        else (*this)(i, j) = T(a, b);
      }
      for (std::int64_t i = r; i < r + 2 && (i < l || j == c - 1); ++i) (*this)(i, j) = T(sentinel);
    }
  }
  ~span() { munmap(data, bytes); }
  T& operator()(std::int64_t i, std::int64_t j) { return data[std::size_t(i) + std::size_t(j) * std::size_t(ld)]; }
  std::vector<T> copy() {
    std::vector<T> v;
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < rows; ++i) v.push_back((*this)(i, j));
    return v;
  }
  bool sentinels_kept() {
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = rows; i < rows + 2 && (i < ld || j == cols - 1); ++i)
        if ((*this)(i, j) != T(sentinel)) return false;
    return true;
  }
};

// A refusal is acceptable only where allowed (a leading dimension past 2^31 - 1, which the
// 32-bit leaf BLAS cannot take): a prism::error that names the limit, with C untouched.
void refused(bool may_refuse, const prism::error& e, bool untouched) {
  const std::string why = std::string("refused: ") + e.what();
  INFO(why);
  CHECK(may_refuse);
  CHECK(std::string(e.what()).find("2^31-1") != std::string::npos);
  CHECK(untouched);
}

template <class T>
T op(span<T>& X, char t, std::int64_t i, std::int64_t l) {
  const T v = t == 'N' ? X(i, l) : X(l, i);
  if constexpr (std::is_floating_point_v<T>) return v;
  else return t == 'C' ? std::conj(v) : v;
}

template <class T>
void gemm_case(char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldb,
               std::int64_t ldc, bool may_refuse = false) {
  CAPTURE(ta); CAPTURE(tb); CAPTURE(m); CAPTURE(n); CAPTURE(k); CAPTURE(lda); CAPTURE(ldb); CAPTURE(ldc);
  span<T> A(ta == 'N' ? m : k, ta == 'N' ? k : m, lda, 1), B(tb == 'N' ? k : n, tb == 'N' ? n : k, ldb, 2),
      C(m, n, ldc, 3);
  std::vector<T> want = C.copy();
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      T s{};
      for (std::int64_t l = 0; l < k; ++l) s += op(A, ta, i, l) * op(B, tb, l, j);
      want[std::size_t(i + j * m)] += T(2) * s;
    }
  const std::vector<T> before = C.copy();
  try {
    gemm<T>(ta, tb, m, n, k, T(2), A.data, lda, B.data, ldb, T(1), C.data, ldc);
  } catch (const prism::error& e) {
    refused(may_refuse, e, C.copy() == before);
    CHECK(C.sentinels_kept());
    return;
  }
  CHECK(C.copy() == want);
  CHECK(C.sentinels_kept());
}

template <class T>
void rank_k_case(bool herm, char uplo, char tr, std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldc,
                 bool may_refuse = false) {
  CAPTURE(herm); CAPTURE(uplo); CAPTURE(tr); CAPTURE(n); CAPTURE(k); CAPTURE(lda); CAPTURE(ldc);
  span<T> A(tr == 'N' ? n : k, tr == 'N' ? k : n, lda, 4), C(n, n, ldc, 5);
  if constexpr (!std::is_floating_point_v<T>)
    for (std::int64_t i = 0; i < n; ++i) C(i, i) = T(C(i, i).real());
  std::vector<T> want = C.copy();
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      if (uplo == 'U' ? i > j : i < j) continue;
      T s{};
      for (std::int64_t l = 0; l < k; ++l) {
        const T x = op(A, tr == 'N' ? 'N' : 'T', i, l), y = op(A, tr == 'N' ? 'N' : 'T', j, l);
        if constexpr (std::is_floating_point_v<T>) s += x * y;
        else s += herm ? (tr == 'N' ? x * std::conj(y) : std::conj(x) * y) : x * y;
      }
      T& w = want[std::size_t(i + j * n)];
      w += T(2) * s;
      if constexpr (!std::is_floating_point_v<T>)
        if (herm && i == j) w = T(w.real());
    }
  const std::vector<T> before = C.copy();
  try {
    if constexpr (std::is_floating_point_v<T>) syrk<T>(uplo, tr, n, k, T(2), A.data, lda, T(1), C.data, ldc);
    else if (herm) herk<T>(uplo, tr, n, k, 2, A.data, lda, 1, C.data, ldc);
    else syrk<T>(uplo, tr, n, k, T(2), A.data, lda, T(1), C.data, ldc);
  } catch (const prism::error& e) {
    refused(may_refuse, e, C.copy() == before);
    CHECK(C.sentinels_kept());
    return;
  }
  CHECK(C.copy() == want);
  CHECK(C.sentinels_kept());
}

}  // namespace

TEST_CASE("gemm: column offsets past 2^31 in C, A and B") {
  gemm_case<float>('N', 'N', 3, 17, 2, 3, 2, past_int);
  gemm_case<float>('N', 'N', 3, 2, 17, past_int, 17, 3);
  gemm_case<float>('T', 'N', 17, 3, 2, past_int, 2, 17);
  gemm_case<double>('N', 'T', 3, 2, 17, 3, past_int, 3);
  gemm_case<std::complex<float>>('C', 'N', 17, 2, 3, past_int, 3, 17);
  gemm_case<float>('N', 'N', 17, 40, 1, 17, 1, (std::int64_t(1) << 26) + 3);
}

TEST_CASE("gemm: leading dimensions past 2^31 - 1") {
  gemm_case<float>('N', 'N', 3, 2, 2, 3, 2, huge_ld, true);
  gemm_case<float>('T', 'N', 2, 3, 2, huge_ld, 2, 2, true);
  gemm_case<double>('N', 'N', 3, 2, 2, 3, huge_ld, 3, true);
}

TEST_CASE("syrk and herk: offsets and leading dimensions past 2^31") {
  rank_k_case<float>(false, 'U', 'N', 17, 2, 17, past_int);
  rank_k_case<float>(false, 'L', 'T', 17, 2, past_int, 17);
  rank_k_case<double>(false, 'L', 'N', 2, 3, 2, huge_ld, true);
  rank_k_case<std::complex<float>>(true, 'U', 'C', 17, 2, past_int, 17);
  rank_k_case<std::complex<float>>(true, 'L', 'N', 2, 3, 2, huge_ld, true);
  rank_k_case<std::complex<float>>(false, 'U', 'T', 17, 2, past_int, 17);
}
