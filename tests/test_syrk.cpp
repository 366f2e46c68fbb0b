// tests/test_syrk.cpp — prism::syrk / prism::herk against a long-double reference with
// fixed seeds: all four types (herk: complex), uplo U/L, every trans letter each routine
// allows, alpha/beta in {0, 1, -1, random}, sizes 0, 1, primes, long k, padded leading
// dimensions, both layouts, thread counts 1, 2, 3, 5 and memory caps that refuse the
// k-cut temporaries. The triangle not named by uplo and C's padding hold NaN / a sentinel
// and must come back bitwise unchanged; the named triangle must meet the componentwise
// bound |C - C_ref| <= c k eps (|alpha| |op(A)| |op(A)|^T + |beta| |C0|). Public API only.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "support/machines.hpp"
#include "support/reference.hpp"

#include <cstring>
#include <map>
#include <random>
#include <thread>

using namespace prism;
using prism::test::real_t;
using prism::test::wide_t;

namespace {

template <class T>
constexpr bool cplx = prism::test::is_complex_v<T>;

const context& context_for(int threads, std::size_t cap, double small,
                           leaf_backend leaf = leaf_backend::automatic) {
  static std::map<std::tuple<int, std::size_t, double, leaf_backend>, context> cache;
  auto key = std::make_tuple(threads, cap, small, leaf);
  auto it = cache.find(key);
  if (it == cache.end()) {
    context c;
    c.set_threads(threads).set_max_memory(cap).set_small_flops(small).set_leaf(leaf);
    it = cache.emplace(key, c).first;
  }
  return it->second;
}

template <class T>
T nan_value() {
  const real_t<T> q = std::numeric_limits<real_t<T>>::quiet_NaN();
  if constexpr (cplx<T>) return T(q, q);
  else return q;
}

// One call's arguments, in either layout. Element (r, c) of a matrix X is X[r + c ld]
// column-major, X[r ld + c] row-major.
template <class T>
struct call {
  bool herm, row_major;
  char uplo, trans;
  std::int64_t n, k, lda, ldc;
  T alpha, beta;  // herk: real values
};

template <class T>
std::size_t idx(bool row_major, std::int64_t r, std::int64_t c, std::int64_t ld) {
  return std::size_t(row_major ? r * ld + c : r + c * ld);
}

// op(A)(i, l): 'N' A(i, l); 'T' A(l, i); 'C' conj(A(l, i)).
template <class T>
T op_a(const call<T>& cl, const std::vector<T>& A, std::int64_t i, std::int64_t l) {
  if (cl.trans == 'N') return A[idx<T>(cl.row_major, i, l, cl.lda)];
  const T v = A[idx<T>(cl.row_major, l, i, cl.lda)];
  return cl.trans == 'C' ? test::conj_if(v) : v;
}

bool in_triangle(char uplo, std::int64_t i, std::int64_t j) { return uplo == 'U' ? i <= j : i >= j; }

// Runs the call through prism and checks it; returns "" or what went wrong.
template <class T>
std::string run_and_check(const call<T>& cl, const context& ctx, std::mt19937_64& gen) {
  const std::int64_t n = cl.n, k = cl.k;
  const bool an = cl.trans == 'N';
  // A: n x k for 'N', else k x n, in the call's layout.
  const std::int64_t a_rows = an ? n : k, a_cols = an ? k : n;
  std::vector<T> A(std::size_t(std::max<std::int64_t>(1, cl.lda * (cl.row_major ? a_rows : a_cols))), T(-777));
  for (std::int64_t r = 0; r < a_rows; ++r)
    for (std::int64_t c = 0; c < a_cols; ++c) A[idx<T>(cl.row_major, r, c, cl.lda)] = test::random_value<T>(gen);
  // C: the uplo triangle random (herk: the diagonal's imaginary part too, which herk must
  // ignore and zero, NaN or infinite in every other call), the other triangle NaN, padding -777.
  std::vector<T> C(std::size_t(std::max<std::int64_t>(1, cl.ldc * n)), T(-777));
  const bool wild = gen() % 2 == 0;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      T& c = C[idx<T>(cl.row_major, i, j, cl.ldc)];
      c = in_triangle(cl.uplo, i, j) ? test::random_value<T>(gen) : nan_value<T>();
      if constexpr (cplx<T>)
        if (cl.herm && i == j && wild) c.imag(j % 2 == 0 ? nan_value<T>().real() : std::numeric_limits<real_t<T>>::infinity());
    }
  const std::vector<T> C0 = C;

  const layout order = cl.row_major ? layout::row_major : layout::col_major;
  if constexpr (cplx<T>) {
    if (cl.herm)
      herk<T>(order, cl.uplo, cl.trans, n, k, cl.alpha.real(), A.data(), cl.lda, cl.beta.real(), C.data(), cl.ldc, ctx);
    else
      syrk<T>(order, cl.uplo, cl.trans, n, k, cl.alpha, A.data(), cl.lda, cl.beta, C.data(), cl.ldc, ctx);
  } else {
    syrk<T>(order, cl.uplo, cl.trans, n, k, cl.alpha, A.data(), cl.lda, cl.beta, C.data(), cl.ldc, ctx);
  }

  const bool quick = n == 0 || ((cl.alpha == T(0) || k == 0) && cl.beta == T(1));  // reference returns at once
  const long double eps = std::numeric_limits<real_t<T>>::epsilon();
  const long double c = cplx<T> ? 8.0L : 4.0L;
  for (std::size_t p = 0; p < C.size(); ++p) {  // everything outside the triangle: bitwise
    const std::int64_t r = cl.row_major ? std::int64_t(p) / cl.ldc : std::int64_t(p) % cl.ldc;
    const std::int64_t s = cl.row_major ? std::int64_t(p) % cl.ldc : std::int64_t(p) / cl.ldc;
    const bool inside = r < n && s < n && in_triangle(cl.uplo, r, s);
    if ((!inside || quick) && std::memcmp(&C[p], &C0[p], sizeof(T)) != 0)
      return "element " + std::to_string(p) + " outside the written triangle changed";
  }
  if (quick) return "";
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      if (!in_triangle(cl.uplo, i, j)) continue;
      wide_t<T> acc(0);
      long double mag = 0;
      for (std::int64_t l = 0; l < k && cl.alpha != T(0); ++l) {
        const T a = op_a(cl, A, i, l), b0 = op_a(cl, A, j, l), b = cl.herm ? test::conj_if(b0) : b0;
        acc += wide_t<T>(a) * wide_t<T>(b);
        mag += prism::test::abs_mul(a, b);
      }
      wide_t<T> v = wide_t<T>(cl.alpha) * acc;
      long double sc = (long double)std::abs(cl.alpha) * mag;
      T c0 = C0[idx<T>(cl.row_major, i, j, cl.ldc)];
      if constexpr (cplx<T>)
        if (cl.herm && i == j) c0 = T(c0.real());
      if (cl.beta != T(0)) {
        v += wide_t<T>(cl.beta) * wide_t<T>(c0);
        sc += (long double)std::abs(cl.beta) * (long double)std::abs(c0);
      }
      const T got = C[idx<T>(cl.row_major, i, j, cl.ldc)];
      const long double err = std::abs(wide_t<T>(got) - v);
      const long double bound = c * std::max<std::int64_t>(k, 1) * eps * sc + 4 * std::numeric_limits<real_t<T>>::min();
      if (!(err <= bound))
        return "C(" + std::to_string(i) + "," + std::to_string(j) + ") got " + std::to_string(double(std::abs(got))) + " error " + std::to_string(double(err)) +
               " > bound " + std::to_string(double(bound));
      if constexpr (cplx<T>)
        if (cl.herm && i == j && got.imag() != 0) return "herk left a non-zero imaginary part on the diagonal";
    }
  return "";
}

template <class T>
T pick_scalar(std::mt19937_64& gen, bool real_only) {
  switch (gen() % 4) {
    case 0: return T(0);
    case 1: return T(1);
    case 2: return T(-1);
    default: {
      const T v = test::random_value<T>(gen);
      if constexpr (cplx<T>)
        if (real_only) return T(v.real());
      return v;
    }
  }
}

template <class T>
void sweep(bool herm, int cases, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  static const std::int64_t sizes[] = {0, 1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 33, 47, 64, 97};
  const int thread_choices[] = {1, 2, 3, 5};
  const std::size_t caps[] = {std::numeric_limits<std::size_t>::max(), 0, 4096, 65536};
  for (int i = 0; i < cases; ++i) {
    call<T> cl{};
    cl.herm = herm;
    cl.row_major = gen() % 4 == 0;
    cl.uplo = "UL"[gen() % 2];
    cl.trans = herm ? "NC"[gen() % 2] : cplx<T> ? "NT"[gen() % 2] : "NTC"[gen() % 3];
    cl.n = sizes[gen() % (sizeof sizes / sizeof sizes[0])];
    cl.k = sizes[gen() % (sizeof sizes / sizeof sizes[0])];
    if (gen() % 4 == 0 && cl.n <= 33) cl.k = 512 + std::int64_t(gen() % 2500);  // long k: k-cuts
    const std::int64_t a_rows = cl.trans == 'N' ? cl.n : cl.k, a_cols = cl.trans == 'N' ? cl.k : cl.n;
    const std::int64_t pad = gen() % 3 == 0 ? std::int64_t(gen() % 5) : 0;
    cl.lda = std::max<std::int64_t>(1, (cl.row_major ? a_cols : a_rows) + pad);
    cl.ldc = std::max<std::int64_t>(1, cl.n + (gen() % 3 == 0 ? std::int64_t(gen() % 4) : 0));
    cl.alpha = pick_scalar<T>(gen, herm);
    cl.beta = pick_scalar<T>(gen, herm);
    const int threads = thread_choices[gen() % 4];
    const std::size_t cap = caps[gen() % 4];
    const double small = gen() % 4 == 0 ? 1e6 : 0.0;  // mostly force the recursion
    // Leaves: auto, or one forced: the streaming rank-k leaf (and streaming gemm blocks), BLIS, OpenBLAS.
    const leaf_backend leaves[] = {leaf_backend::automatic, leaf_backend::streaming, leaf_backend::blis, leaf_backend::openblas};
    const leaf_backend leaf = leaves[gen() % 4];
    const std::string what = run_and_check(cl, context_for(threads, cap, small, leaf), gen);
    INFO("case ", i, ": ", (herm ? "herk" : "syrk"), " alpha ", cl.alpha, " beta ", cl.beta, " ", (cl.row_major ? "row" : "col"), " uplo ", cl.uplo,
         " trans ", cl.trans, " n ", cl.n, " k ", cl.k, " lda ", cl.lda, " ldc ", cl.ldc, " threads ", threads,
         " cap ", cap, " leaf ", to_string(leaf));
    CHECK(what == "");
  }
}

template <class F>
int position_of(F f) {
  try {
    f();
  } catch (const invalid_argument& e) {
    return e.position();
  }
  return 0;
}

}  // namespace

TEST_CASE("syrk matches the reference on the uplo triangle and leaves the rest untouched") {
  sweep<float>(false, 250, 11);
  sweep<double>(false, 250, 12);
  sweep<std::complex<float>>(false, 150, 13);
  sweep<std::complex<double>>(false, 150, 14);
}

TEST_CASE("herk matches the reference, keeps the diagonal real and leaves the rest untouched") {
  sweep<std::complex<float>>(true, 200, 21);
  sweep<std::complex<double>>(true, 200, 22);
}

TEST_CASE("a Gram shape split over k by two threads equals the reference") {
  std::mt19937_64 gen(31);
  for (char uplo : {'U', 'L'}) {
    call<double> cl{false, false, uplo, 'T', 32, 20000, 20000, 32, 1.0, 0.0};
    CHECK(run_and_check(cl, context_for(2, std::numeric_limits<std::size_t>::max(), 0), gen) == "");
    call<std::complex<double>> ch{true, false, uplo, 'C', 16, 9000, 9000, 16, 1.0, 1.0};
    CHECK(run_and_check(ch, context_for(2, 0, 0), gen) == "");  // no temporaries: n-cuts only
  }
  // n = 370, k = 800: a k-cut whose triangle (n^2 >= 131072) is reduced by several threads.
  call<float> big{false, false, 'L', 'N', 370, 800, 370, 371, -1.0f, 0.5f};
  CHECK(run_and_check(big, context_for(3, std::numeric_limits<std::size_t>::max(), 0), gen) == "");
}

// The streaming rank-k leaf (lib/leaf/kernels/streaming.hpp) on one thread, so the whole call is
// one leaf: every n from 1 to 40 (strips of 1..5 vectors, partial last vectors) and the
// tiled sizes up to 128, both trans forms, both triangles, k across chunk boundaries.
TEST_CASE("the streaming rank-k leaf matches the reference for every n up to 40 and the tiled sizes") {
  std::mt19937_64 gen(41);
  const context& one = context_for(1, std::numeric_limits<std::size_t>::max(), 0, leaf_backend::streaming);
  std::vector<std::int64_t> ns;
  for (std::int64_t n = 1; n <= 40; ++n) ns.push_back(n);
  for (std::int64_t n : {47, 63, 64, 65, 96, 100, 127, 128}) ns.push_back(n);
  int c = 0;
  for (std::int64_t n : ns)
    for (char trans : {'N', 'T'}) {
      const std::int64_t k = std::int64_t(1 + gen() % 700);
      const char uplo = "UL"[c % 2];
      const std::int64_t lda = (trans == 'N' ? n : k) + (c % 3 == 0 ? 3 : 0);
      call<double> d{false, false, uplo, trans, n, k, lda, n + c % 2, pick_scalar<double>(gen, true),
                     pick_scalar<double>(gen, true)};
      CHECK_MESSAGE(run_and_check(d, one, gen) == "", "d n ", n, " k ", k, " trans ", trans, " uplo ", uplo);
      const bool rows = c % 4 == 1;  // row-major: A's ld counts its columns (k for 'N', n for 'T')
      call<float> f{false, rows, uplo, trans, n, k, rows ? (trans == 'N' ? k : n) + (c % 3 == 0 ? 3 : 0) : lda, n + 1, 1.5f, -1.0f};
      CHECK_MESSAGE(run_and_check(f, one, gen) == "", "s n ", n, " k ", k, " trans ", trans, " uplo ", uplo);
      call<std::complex<double>> z{true, false, uplo, trans == 'N' ? 'N' : 'C', n, k, lda, n, 0.5, 2.0};
      CHECK_MESSAGE(run_and_check(z, one, gen) == "", "zherk n ", n, " k ", k, " trans ", z.trans, " uplo ", uplo);
      call<std::complex<float>> ch{true, false, uplo, trans == 'N' ? 'N' : 'C', n, k, lda, n, 0.5f, 2.0f};
      CHECK_MESSAGE(run_and_check(ch, one, gen) == "", "cherk n ", n, " k ", k, " trans ", ch.trans, " uplo ", uplo);
      call<std::complex<float>> cs{false, false, uplo, trans, n, k, lda, n, pick_scalar<std::complex<float>>(gen, false),
                                   pick_scalar<std::complex<float>>(gen, false)};
      CHECK_MESSAGE(run_and_check(cs, one, gen) == "", "csyrk n ", n, " k ", k, " trans ", trans, " uplo ", uplo);
      ++c;
    }
}

TEST_CASE("the Gram shape is cut along k, one part per thread; without room for temporaries along n") {
  const std::size_t none = std::numeric_limits<std::size_t>::max();
  // On the example machine (one NUMA domain): a two-domain machine rightly cuts over domains.
  auto pinned = [](int threads, std::size_t cap, double small) {
    context c = prism::test::pinned_context(threads);
    c.set_max_memory(cap).set_small_flops(small);
    return c;
  };
  // 32 x 2^22 on 2 threads: two k-slices of 2^21, one 32 x 32 double temporary (8192 B).
  CHECK(describe_rank_k(scalar_type::d, 32, 1 << 22, pinned(2, none, 0)) ==
        "k-cut 2: 2097152@1t 2097152@1t; depth 1, 2 leaves, 0 gemm blocks, 8192 B temporaries");
  // 3 threads and a herk (complex double, 16 B elements): 3 parts, two 32 x 32 temporaries.
  CHECK(describe_rank_k(scalar_type::z, 32, 1 << 20, pinned(3, none, 0)).rfind("k-cut 3:", 0) == 0);
  // max_memory 0: no temporaries, so the triangle is cut along n and its off-diagonal block
  // is a gemm (16 x 16 x 2^22).
  CHECK(describe_rank_k(scalar_type::d, 32, 1 << 22, pinned(2, 0, 0)).rfind("n-cut 16+16 (off-diagonal gemm 16x16x4194304)", 0) == 0);
  CHECK(describe_rank_k(scalar_type::d, 32, 1 << 22, pinned(1, none, 0)) ==
        "leaf n=32 k=4194304; depth 0, 1 leaves, 0 gemm blocks, 0 B temporaries");
}

TEST_CASE("argument errors carry reference xerbla positions and leave C untouched") {
  double A[16] = {}, C[16] = {};
  std::complex<double> Z[16] = {}, W[16] = {};
  const double C0 = 5.0;
  C[0] = C0;
  CHECK(position_of([&] { syrk<double>('X', 'N', 2, 2, 1.0, A, 2, 0.0, C, 2); }) == 1);
  CHECK(position_of([&] { syrk<double>('U', 'X', 2, 2, 1.0, A, 2, 0.0, C, 2); }) == 2);
  CHECK(position_of([&] { syrk<double>('U', 'N', -1, 2, 1.0, A, 2, 0.0, C, 2); }) == 3);
  CHECK(position_of([&] { syrk<double>('U', 'N', 2, -1, 1.0, A, 2, 0.0, C, 2); }) == 4);
  CHECK(position_of([&] { syrk<double>('U', 'T', 2, 3, 1.0, A, 2, 0.0, C, 2); }) == 7);  // lda >= k
  CHECK(position_of([&] { syrk<double>('U', 'N', 3, 2, 1.0, A, 3, 0.0, C, 2); }) == 10);
  double D[4] = {};
  CHECK(position_of([&] { syrk<double>('U', 'C', 2, 2, 1.0, A, 2, 0.0, D, 2); }) == 0);  // real: 'C' is 'T'
  CHECK(position_of([&] { syrk<std::complex<double>>('U', 'C', 2, 2, 1.0, Z, 2, 0.0, W, 2); }) == 2);
  CHECK(position_of([&] { herk<std::complex<double>>('L', 'T', 2, 2, 1.0, Z, 2, 0.0, W, 2); }) == 2);
  CHECK(position_of([&] { herk<std::complex<double>>('L', 'C', 2, 3, 1.0, Z, 2, 0.0, W, 2); }) == 7);
  // Row-major (CBLAS numbering, layout = 1): lda >= k for 'N', positions shifted by one.
  CHECK(position_of([&] { syrk<double>(layout::row_major, 'X', 'N', 2, 2, 1.0, A, 2, 0.0, C, 2); }) == 2);
  CHECK(position_of([&] { syrk<double>(layout::row_major, 'U', 'N', 2, 3, 1.0, A, 2, 0.0, C, 2); }) == 8);
  CHECK(position_of([&] { syrk<double>(layout::row_major, 'U', 'N', 3, 2, 1.0, A, 2, 0.0, C, 2); }) == 11);
  CHECK(position_of([&] { herk<std::complex<double>>(layout::row_major, 'U', 'T', 2, 2, 1.0, Z, 2, 0.0, W, 2); }) == 3);
  CHECK(C[0] == C0);
}

TEST_CASE("BLIS rank-k leaves give the same bits on every thread") {
  // BLIS keeps per-thread defaults that its CBLAS entries read (the thread that initialised
  // it computed complex syrk and herk otherwise than the rest); prism's BLIS leaves pass one
  // runtime, so a plan's result does not depend on the thread that runs a leaf. Its own
  // ctest entry runs it first in a fresh process, the main thread calling BLIS first.
  context ctx;
  ctx.set_threads(1).set_small_flops(0).set_leaf(leaf_backend::blis);
  const std::int64_t n = 38, k = 533;
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::complex<double>> A(std::size_t(n * k));
  for (auto& x : A) x = {u(gen), u(gen)};
  std::vector<double> R(std::size_t(n * k));
  for (auto& x : R) x = u(gen);
  const auto run = [&](int which) {
    std::vector<std::complex<double>> C(std::size_t(n * n));
    std::vector<double> D(std::size_t(n * n));
    if (which == 0) herk<std::complex<double>>('U', 'C', n, k, 1.0, A.data(), k, 0.0, C.data(), n, ctx);
    if (which == 1) syrk<std::complex<double>>('L', 'T', n, k, {1.0, 0.5}, A.data(), k, {0.0, 0.0}, C.data(), n, ctx);
    if (which == 2) syrk<double>('U', 'T', n, k, 1.0, R.data(), k, 0.0, D.data(), n, ctx);
    std::vector<unsigned char> bits(C.size() * sizeof C[0] + D.size() * sizeof D[0]);
    std::memcpy(bits.data(), C.data(), C.size() * sizeof C[0]);
    std::memcpy(bits.data() + C.size() * sizeof C[0], D.data(), D.size() * sizeof D[0]);
    return bits;
  };
  for (int which = 0; which < 3; ++which) {
    CAPTURE(which);
    const std::vector<unsigned char> here = run(which);
    std::vector<unsigned char> there;
    std::thread([&] { there = run(which); }).join();
    CHECK(here == there);
  }
}
