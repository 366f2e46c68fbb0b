// tests/test_streaming.cpp — the streaming leaf (lib/leaf/kernels/streaming.hpp): a randomized
// sweep of the kernel against the long-double reference with the componentwise bound (all
// four types, every trans pair, m, n in 1..16, odd k, k = 1, long k, padded leading
// dimensions whose NaN padding must never reach C, alpha and beta in {0, 1, -1, other},
// NaN in C with beta = 0), and the leaf kind through plans, prism::gemm and `auto`.
// Internal: reads lib/leaf/kernels and lib/leaf/backend.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "leaf/backend/blas_library.hpp"
#include "leaf/dispatch.hpp"
#include "leaf/first_use.hpp"
#include "leaf/kernels/streaming.hpp"
#include "simd/simd.hpp"
#include "support/machines.hpp"
#include "support/reference.hpp"

#include <hwy/targets.h>  // HWY_AVX3, HWY_AVX2, HWY_SCALAR, hwy::TargetName (header-only)

#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace prism;
using namespace prism::test;

namespace {

template <class T>
T quiet_nan() {
  const real_t<T> nan = std::numeric_limits<real_t<T>>::quiet_NaN();
  if constexpr (is_complex_v<T>) return T(nan, nan);
  else return T(nan);
}

// alpha or beta: 0, 1, -1 or an "other" value (complex for complex types).
template <class T>
T coefficient(int which) {
  switch (which) {
    case 0: return T(0);
    case 1: return T(1);
    case 2: return T(-1);
  }
  if constexpr (is_complex_v<T>) return T(real_t<T>(0.75), real_t<T>(-1.25));
  else return T(0.75);
}

// One call of the kernel against the reference: A and B padded (ld > rows by `pad`
// elements) with NaN padding, C padded with the sentinel check_bound looks for, C's
// m x n block NaN when beta = 0. Returns "" or what went wrong.
template <class T>
std::string one_case(std::mt19937_64& gen, char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k,
                     int alpha_kind, int beta_kind, std::int64_t pad) {
  const std::int64_t rows_a = ta == 'N' ? m : k, cols_a = ta == 'N' ? k : m;
  const std::int64_t rows_b = tb == 'N' ? k : n, cols_b = tb == 'N' ? n : k;
  const std::int64_t lda = rows_a + pad, ldb = rows_b + pad, ldc = m + pad;
  const auto A = random_matrix<T>(rows_a, cols_a, lda, gen, quiet_nan<T>());
  const auto B = random_matrix<T>(rows_b, cols_b, ldb, gen, quiet_nan<T>());
  auto C = random_matrix<T>(m, n, ldc, gen);
  const T alpha = coefficient<T>(alpha_kind), beta = coefficient<T>(beta_kind);
  if (beta == T(0))
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) C[std::size_t(i + j * ldc)] = quiet_nan<T>();
  const auto ref = reference_gemm<T>(ta, tb, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  detail::streaming_gemm<T>(ta, tb, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  const std::string why = check_bound(ref, m, n, k, C.data(), ldc);
  if (why.empty()) return "";
  return std::string(1, char(scalar_type_of<T>())) + " " + ta + tb + " " + std::to_string(m) + "x" +
         std::to_string(n) + "x" + std::to_string(k) + " pad " + std::to_string(pad) + " alpha/beta kind " +
         std::to_string(alpha_kind) + "/" + std::to_string(beta_kind) + ": " + why;
}

// One call of the streaming rank-k leaf (syrk, or herk for herm) against the reference
// gemm with B = A: only the uplo triangle may change (the other one is compared bitwise,
// then given the reference's values so check_bound can look at the whole matrix).
template <class T>
std::string syrk_case(std::mt19937_64& gen, bool herm, char uplo, char trans, std::int64_t n, std::int64_t k,
                      int alpha_kind, int beta_kind) {
  const bool nf = trans == 'N';
  const std::int64_t rows = nf ? n : k, cols = nf ? k : n, lda = rows + 2, ldc = n + 1;
  const auto A = random_matrix<T>(rows, cols, lda, gen, quiet_nan<T>());
  auto C = random_matrix<T>(n, n, ldc, gen);
  T alpha = coefficient<T>(alpha_kind), beta = coefficient<T>(beta_kind);
  if constexpr (is_complex_v<T>)
    if (herm) {  // real alpha, beta and diagonal
      alpha = T(alpha.real()), beta = T(beta.real());
      for (std::int64_t j = 0; j < n; ++j) C[std::size_t(j + j * ldc)] = T(C[std::size_t(j + j * ldc)].real());
    }
  const auto C0 = C;
  const char ta = nf ? 'N' : trans, tb = nf ? (herm ? 'C' : 'T') : 'N';
  const auto ref = reference_gemm<T>(ta, tb, n, n, k, alpha, A.data(), lda, A.data(), lda, beta, C0.data(), ldc);
  detail::streaming_rank_k<T>(herm, uplo, trans, n, k, alpha, A.data(), lda, beta, C.data(), ldc);
  std::string why;
  for (std::int64_t j = 0; j < n && why.empty(); ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      if (uplo == 'U' ? i <= j : i >= j) continue;
      const std::size_t p = std::size_t(i + j * ldc);
      if (std::memcmp(&C[p], &C0[p], sizeof(T)) != 0) {
        why = "C(" + std::to_string(i) + "," + std::to_string(j) + ") outside the triangle changed";
        break;
      }
      const auto v = ref.value[std::size_t(i + j * n)];
      if constexpr (is_complex_v<T>) C[p] = T(real_t<T>(v.real()), real_t<T>(v.imag()));
      else C[p] = T(v);
    }
  if (why.empty()) why = check_bound(ref, n, n, k, C.data(), ldc);
  if (why.empty()) return "";
  return std::string(1, char(scalar_type_of<T>())) + (herm ? "herk " : "syrk ") + uplo + trans + " " +
         std::to_string(n) + "x" + std::to_string(k) + " alpha/beta kind " + std::to_string(alpha_kind) + "/" +
         std::to_string(beta_kind) + ": " + why;
}

// The rank-k leaf on one type: n from 1 to 33 and a few tiled sizes, both triangles, both
// trans forms, k across the chunk boundaries.
template <class T>
void syrk_sweep(std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  constexpr bool cx = is_complex_v<T>;
  std::vector<std::int64_t> ns;
  for (std::int64_t n = 1; n <= 33; ++n) ns.push_back(n);
  for (std::int64_t n : {64, 71, 128}) ns.push_back(n);
  int c = 0;
  for (std::int64_t n : ns)
    for (char trans : {'N', cx ? 'C' : 'T'}) {
      const std::int64_t k = c % 5 == 0 ? 1 : std::int64_t(2 + gen() % 600);
      const bool herm = cx && c % 2 == 0;
      const char tr = !herm && trans == 'C' ? 'T' : trans;
      const std::string why = syrk_case<T>(gen, herm, "UL"[c % 2], tr, n, k, c % 4, (c / 4) % 4);
      CHECK_MESSAGE(why.empty(), why);
      ++c;
    }
}

// The sweep for one type: every (m, n) in 1..16 x 1..16 once, with the trans pair, k,
// padding and coefficients drawn at random (k odd up to 99, or 1, or 2), then for every
// trans pair a few calls with k = 10007 (many k-chunks and a partial last vector).
template <class T>
void sweep(std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  const char letters[] = {'N', 'T', 'C'};
  auto pick = [&](int lo, int hi) { return int(std::uniform_int_distribution<int>(lo, hi)(gen)); };
  int calls = 0;
  for (std::int64_t m = 1; m <= detail::streaming_block_mn; ++m)
    for (std::int64_t n = 1; n <= detail::streaming_block_mn; ++n) {
      const int form = pick(0, 9);
      const std::int64_t k = form == 0 ? 1 : form == 1 ? 2 : 2 * pick(0, 49) + 1;
      const std::string why = one_case<T>(gen, letters[pick(0, 2)], letters[pick(0, 2)], m, n, k, pick(0, 3),
                                          pick(0, 3), pick(0, 3));
      CHECK_MESSAGE(why.empty(), why);
      ++calls;
    }
  for (char ta : letters)
    for (char tb : letters)
      for (int rep = 0; rep < 2; ++rep) {
        const std::int64_t m = pick(1, 16), n = pick(1, 16);
        const std::string why = one_case<T>(gen, ta, tb, m, n, 10007, 3, pick(0, 3), pick(0, 2));
        CHECK_MESSAGE(why.empty(), why);
        ++calls;
      }
  CHECK(calls == 256 + 18);
}

// Tiled leaves (m or n above 16, up to 128): sizes around the 16 x 16 blocks and at the
// limit, every trans pair, k from 1 to past several L2 chunks (kc is 256 for 64 x 64
// doubles, 64 for 128 x 128 complex doubles), partial blocks on both sides.
template <class T>
void tiled_sweep(std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  const char letters[] = {'N', 'T', 'C'};
  const std::int64_t sizes[] = {1, 7, 16, 17, 31, 33, 64, 100, 128};
  auto pick = [&](int lo, int hi) { return int(std::uniform_int_distribution<int>(lo, hi)(gen)); };
  int calls = 0;
  for (char ta : letters)
    for (char tb : letters)
      for (int rep = 0; rep < 3; ++rep) {
        std::int64_t m = sizes[pick(0, 8)], n = sizes[pick(0, 8)];
        if (m <= 16 && n <= 16) m = sizes[pick(3, 8)];  // at least one side tiled
        const std::int64_t ks[] = {1, 2, 77, 1000, 2049};
        const std::string why =
            one_case<T>(gen, ta, tb, m, n, ks[pick(0, 4)], pick(0, 3), pick(0, 3), pick(0, 3));
        CHECK_MESSAGE(why.empty(), why);
        ++calls;
      }
  CHECK(calls == 27);
}

}  // namespace

TEST_CASE("streaming kernel: randomized sweep within the componentwise bound, padding untouched") {
  SUBCASE("float") { sweep<float>(11); }
  SUBCASE("double") { sweep<double>(12); }
  SUBCASE("complex<float>") { sweep<std::complex<float>>(13); }
  SUBCASE("complex<double>") { sweep<std::complex<double>>(14); }
}

TEST_CASE("streaming kernel, tiled (m or n above 16): randomized sweep within the componentwise bound") {
  SUBCASE("float") { tiled_sweep<float>(15); }
  SUBCASE("double") { tiled_sweep<double>(16); }
  SUBCASE("complex<float>") { tiled_sweep<std::complex<float>>(17); }
  SUBCASE("complex<double>") { tiled_sweep<std::complex<double>>(18); }
}

// The dispatcher runs the best instruction set; the others (AVX2 on an AVX-512 CPU, the
// scalar fallback) run only on other CPUs, so Highway's test hook makes this CPU report
// one at a time.
TEST_CASE("streaming kernel: the same sweep on every instruction set this CPU can run") {
  const std::string best = detail::simd_target();
  int targets = 0;
  for (std::int64_t target : {std::int64_t(HWY_AVX3), std::int64_t(HWY_AVX2), std::int64_t(HWY_SCALAR)}) {
    if ((detail::simd_supported_targets() & target) == 0 && target != HWY_SCALAR) continue;
    detail::simd_force_targets(target);
    INFO("target ", hwy::TargetName(target));
    CHECK(std::string(detail::simd_target()) == hwy::TargetName(target));
    sweep<double>(60 + std::uint64_t(targets));
    sweep<std::complex<float>>(70 + std::uint64_t(targets));
    tiled_sweep<double>(80 + std::uint64_t(targets));
    syrk_sweep<double>(90 + std::uint64_t(targets));
    syrk_sweep<float>(93 + std::uint64_t(targets));
    syrk_sweep<std::complex<double>>(96 + std::uint64_t(targets));
    syrk_sweep<std::complex<float>>(99 + std::uint64_t(targets));
    ++targets;
  }
  detail::simd_force_targets(0);
  CHECK(std::string(detail::simd_target()) == best);
  // At least one SIMD set and the scalar fallback; with PRISM_SIMD=scalar (ctest's
  // test_streaming_simd_scalar) the SIMD sets are disabled, and only the fallback runs.
  const char* forced = std::getenv("PRISM_SIMD");
  CHECK(targets >= (forced != nullptr && std::strcmp(forced, "scalar") == 0 ? 1 : 2));
}

// The kernels' chunks and prefetch distance come from the machine (prism tune may write
// any positive size): the results stay within the bound at the smallest sizes (a chunk of
// one step, many partial sums) and at sizes far above any cache.
TEST_CASE("streaming kernels: right at any chunk size and prefetch distance the machine gives") {
  const detail::streaming_sizes before = detail::streaming_current_sizes();
  CHECK(before.outer_chunk > 0);
  CHECK(before.tile_chunk == detail::streaming_sizes_of(default_description()).tile_chunk);
  for (std::int64_t bytes : {std::int64_t(64), std::int64_t(1) << 26}) {
    INFO("every size ", bytes, " bytes");
    detail::streaming_set_sizes({bytes, bytes, bytes, bytes, bytes});
    CHECK(detail::streaming_current_sizes().dot_chunk == bytes);
    sweep<double>(110 + std::uint64_t(bytes % 7));
    sweep<std::complex<double>>(111);
    tiled_sweep<double>(112);
    tiled_sweep<std::complex<float>>(113);
    syrk_sweep<double>(114);
    syrk_sweep<std::complex<double>>(115);
  }
  detail::streaming_set_sizes({});  // back to the machine's
  CHECK(detail::streaming_current_sizes().tile_chunk == before.tile_chunk);
  CHECK(detail::streaming_current_sizes().syrk_chunk == before.syrk_chunk);
}

TEST_CASE("PRISM_SIMD forces the streaming kernels down to AVX2 or to the scalar fallback") {
  // simd_supported_targets asks prism's own copy of Highway's dispatch (hidden in
  // libprism) what this CPU supports.
  const char* forced = std::getenv("PRISM_SIMD");
  const std::string target = detail::simd_target();
  const std::string described = default_description().simd();
  INFO("PRISM_SIMD=", forced != nullptr ? forced : "(unset)", ", target ", target, ", described ", described);
  CHECK(described == target);
  if (forced != nullptr && std::strcmp(forced, "avx2") == 0) {
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) CHECK(target == "AVX2");
    else CHECK(target.rfind("AVX", 0) != 0);  // a CPU without AVX2 stays below it
  } else if (forced != nullptr && std::strcmp(forced, "scalar") == 0) {
    CHECK((target == "SCALAR" || target == "EMU128"));
  } else {
    // The best target built and supported: the lowest bit (Highway numbers targets best first).
    const std::int64_t built = detail::simd_supported_targets() & HWY_TARGETS;
    CHECK(target == hwy::TargetName(built & -built));
  }
}

TEST_CASE("streaming kernel: every trans pair and every alpha/beta kind on the Krylov blocks") {
  std::mt19937_64 gen(21);
  const char letters[] = {'N', 'T', 'C'};
  for (std::int64_t mn : {4, 8, 16})
    for (char ta : letters)
      for (char tb : letters)
        for (int a = 0; a < 4; ++a)
          for (int b = 0; b < 4; ++b) {
            std::string why = one_case<std::complex<double>>(gen, ta, tb, mn, mn, 301, a, b, 1);
            CHECK_MESSAGE(why.empty(), why);
            why = one_case<double>(gen, ta, tb, mn, mn, 301, a, b, 2);
            CHECK_MESSAGE(why.empty(), why);
          }
}

TEST_CASE("streaming kernel: a row or column stored contiguously (lda = 1, ldb = 1) and m or n = 1") {
  std::mt19937_64 gen(31);
  for (char ta : {'N', 'T', 'C'})
    for (char tb : {'N', 'T', 'C'})
      for (std::int64_t k : {1, 7, 1000}) {
        // pad 0: a 1 x k op(A) = A has lda = 1, a k x 1 op(B) = B^T has ldb = 1.
        CHECK_MESSAGE(one_case<std::complex<float>>(gen, ta, tb, 1, 1, k, 3, 3, 0) == "", ta, tb, k);
        CHECK_MESSAGE(one_case<double>(gen, ta, tb, 1, 16, k, 3, 3, 0) == "", ta, tb, k);
        CHECK_MESSAGE(one_case<std::complex<double>>(gen, ta, tb, 16, 1, k, 3, 0, 0) == "", ta, tb, k);
      }
}

TEST_CASE("streaming kernel: reference BLAS quick returns and its refusals") {
  std::vector<double> A(16 * 4, 1.0), B(4 * 16, 1.0), C(16 * 16, -0.0);
  // alpha = 0 and beta = 1: C untouched, not even -0 turned into +0.
  detail::streaming_gemm<double>('N', 'N', 16, 16, 4, 0.0, A.data(), 16, B.data(), 4, 1.0, C.data(), 16);
  for (double c : C) CHECK(std::signbit(c));
  // k = 0 with beta = 0: C = 0 without reading A or B (null here).
  C.assign(C.size(), std::numeric_limits<double>::quiet_NaN());
  detail::streaming_gemm<double>('T', 'N', 16, 16, 0, 2.0, nullptr, 1, nullptr, 1, 0.0, C.data(), 16);
  for (double c : C) CHECK(c == 0.0);
  // m or n above 128 is not a streaming leaf.
  std::vector<double> big(129 * 129);
  CHECK_THROWS_AS(detail::streaming_gemm<double>('N', 'N', 129, 4, 4, 1.0, big.data(), 129, big.data(), 4, 0.0,
                                                 big.data(), 129),
                  prism::error);
  // A tiled leaf with alpha = 0 scales C by beta without reading A or B (null here).
  std::vector<double> c40(40 * 40, 3.0);
  detail::streaming_gemm<double>('N', 'N', 40, 40, 9, 0.0, nullptr, 40, nullptr, 9, 0.5, c40.data(), 40);
  for (double c : c40) CHECK(c == 1.5);
  // m = 0: nothing to do.
  detail::streaming_gemm<double>('N', 'N', 0, 4, 4, 1.0, nullptr, 1, nullptr, 4, 0.0, nullptr, 1);
}

TEST_CASE("leaf kind streaming: parsed, printed, refused on leaves above 128") {
  CHECK(parse_leaf_backend("streaming") == leaf_backend::streaming);
  CHECK(std::string(to_string(leaf_backend::streaming)) == "streaming");
  const std::string text =
      "prism-plan 2\nproblem z CN 8 8 100000\nthreads 2\nbfs k thread 50001@1t 49999@1t\n"
      "  leaf streaming\n  leaf openblas\n";
  const plan p = plan::parse(text);
  CHECK(p.nodes()[1].backend == leaf_backend::streaming);
  CHECK(p.to_string().find("  leaf streaming ") != std::string::npos);
  CHECK(plan::parse(p.to_string()) == p);
  CHECK_THROWS_AS(plan::parse("prism-plan 2\nproblem d NN 129 8 100\nthreads 1\nleaf streaming\n"), plan_error);
  CHECK_THROWS_AS(plan::parse("prism-plan 2\nproblem d NN 8 8 100\nthreads 1\nleaf streamer\n"), plan_error);
  // A hand-written plan with both leaf kinds runs through prism::execute within the bound.
  using T = std::complex<double>;
  std::mt19937_64 gen(41);
  const auto A = random_matrix<T>(100000, 8, 100000, gen), B = random_matrix<T>(100000, 8, 100000, gen);
  auto C = random_matrix<T>(8, 8, 8, gen);
  const auto ref = reference_gemm<T>('C', 'N', 8, 8, 100000, T(1), A.data(), 100000, B.data(), 100000, T(0.5), C.data(), 8);
  context ctx;
  ctx.set_threads(2);
  execute<T>(p, T(1), A.data(), 100000, B.data(), 100000, T(0.5), C.data(), 8, ctx);
  CHECK(check_bound(ref, 8, 8, 100000, C.data(), 8) == "");
}

TEST_CASE("PRISM_LEAF=streaming: every leaf of an 8x8x100000 plan is streaming, and gemm meets the bound") {
  REQUIRE(setenv("PRISM_LEAF", "streaming", 1) == 0);
  context ctx = context::from_env();
  unsetenv("PRISM_LEAF");
  CHECK(ctx.leaf() == leaf_backend::streaming);
  ctx.set_threads(2).set_small_flops(0);
  const plan p = make_plan(problem{scalar_type::d, 'N', 'N', 8, 8, 100000}, ctx);
  const std::string text = p.to_string();
  INFO(text);
  CHECK(p.leaves() >= 2);
  for (const node& nd : p.nodes())
    if (nd.kind == step_kind::leaf) CHECK(nd.backend == leaf_backend::streaming);
  CHECK(plan::parse(text) == p);
  std::mt19937_64 gen(51);
  const auto A = random_matrix<double>(8, 100000, 9, gen), B = random_matrix<double>(100000, 8, 100000, gen);
  auto C = random_matrix<double>(8, 8, 8, gen);
  const auto ref = reference_gemm<double>('N', 'N', 8, 8, 100000, -1.0, A.data(), 9, B.data(), 100000, 2.0, C.data(), 8);
  gemm<double>('N', 'N', 8, 8, 100000, -1.0, A.data(), 9, B.data(), 100000, 2.0, C.data(), 8, ctx);
  CHECK(check_bound(ref, 8, 8, 100000, C.data(), 8) == "");
  // Where it does not apply, `streaming` falls back to the BLAS leaf auto would pick.
  CHECK(detail::choose_leaf(test::epyc_2c(), leaf_backend::streaming, scalar_type::d, 129, 8, 1 << 20) ==
        detail::choose_leaf(test::epyc_2c(), leaf_backend::automatic, scalar_type::d, 129, 8, 1 << 20));
  CHECK(detail::choose_leaf(test::epyc_2c(), leaf_backend::streaming, scalar_type::s, 1, 16, 3) == leaf_backend::streaming);
  CHECK(detail::choose_leaf(test::epyc_2c(), leaf_backend::streaming, scalar_type::z, 128, 40, 3) == leaf_backend::streaming);
  const plan wide = make_plan(problem{scalar_type::d, 'N', 'N', 512, 512, 100000}, ctx);
  for (const node& nd : wide.nodes())
    if (nd.kind == step_kind::leaf) CHECK(nd.backend != leaf_backend::streaming);
}

TEST_CASE("PRISM_LEAF=auto picks the streaming leaf for an 8x8x2^20 plan (example machine)") {
  REQUIRE(setenv("PRISM_LEAF", "auto", 1) == 0);
  context ctx = context::from_env();
  unsetenv("PRISM_LEAF");
  ctx.set_threads(2).set_description(test::epyc_2c());
  const std::string text = make_plan(problem{scalar_type::d, 'N', 'N', 8, 8, 1 << 20}, ctx).to_string();
  INFO(text);
  CHECK(text.find("leaf streaming") != std::string::npos);
  CHECK(text.find("leaf openblas") == std::string::npos);
  CHECK(text.find("leaf blis") == std::string::npos);
}

TEST_CASE("auto's streaming rule up to 16: complex from k = 128, real from 2 MiB of A and B") {
  using detail::choose_leaf;
  const auto pick = [](scalar_type t, std::int64_t m, std::int64_t n, std::int64_t k) {
    return choose_leaf(test::epyc_2c(), leaf_backend::automatic, t, m, n, k) == leaf_backend::streaming;
  };
  CHECK(pick(scalar_type::z, 16, 16, 128));
  CHECK(pick(scalar_type::c, 4, 4, 128));
  CHECK_FALSE(pick(scalar_type::c, 16, 16, 64));
  CHECK(pick(scalar_type::d, 8, 8, 16384));       // (8 + 8) * 16384 * 8 bytes = 2 MiB
  CHECK_FALSE(pick(scalar_type::d, 8, 8, 16383));
  CHECK_FALSE(pick(scalar_type::d, 4, 4, 16384));  // 1 MiB: in L2, OpenBLAS's kernels win
  CHECK(pick(scalar_type::s, 1, 16, 1 << 20));
  CHECK_FALSE(pick(scalar_type::d, 129, 8, 1 << 20));
}

TEST_CASE("auto's streaming rule above 16: real types (the panel kernel) from 8 MiB (m n <= 1024 from 2 MiB), complex as before") {
  const auto pick = [](scalar_type t, char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k) {
    return detail::choose_leaf(test::epyc_2c(), leaf_backend::automatic, t, m, n, k, ta, tb) == leaf_backend::streaming;
  };
  CHECK(pick(scalar_type::d, 'N', 'N', 32, 32, 4096));        // (32 + 32) * 4096 * 8 bytes = 2 MiB
  CHECK_FALSE(pick(scalar_type::d, 'N', 'N', 32, 32, 4095));
  CHECK(pick(scalar_type::d, 'T', 'N', 32, 32, 16384));       // 'TN', transposed chunks: from 8 MiB
  CHECK_FALSE(pick(scalar_type::d, 'T', 'N', 32, 32, 16383));
  CHECK(pick(scalar_type::s, 'N', 'N', 64, 16, 1 << 20));     // m n = 1024
  CHECK(pick(scalar_type::c, 'N', 'T', 17, 8, 1 << 20));
  CHECK(pick(scalar_type::d, 'N', 'N', 64, 64, 8192));        // 128 * 8192 * 8 = 8 MiB
  CHECK_FALSE(pick(scalar_type::d, 'N', 'N', 64, 64, 8191));
  CHECK(pick(scalar_type::d, 'N', 'T', 48, 64, 1 << 20));
  CHECK(pick(scalar_type::d, 'T', 'N', 64, 64, 1 << 20));     // the panel kernel takes 'TN' above 1024 too
  CHECK(pick(scalar_type::d, 'T', 'T', 128, 96, 1 << 20));
  CHECK(pick(scalar_type::s, 'N', 'N', 64, 64, 1 << 20));
  CHECK(pick(scalar_type::z, 'N', 'T', 64, 64, 1 << 20));
  CHECK_FALSE(pick(scalar_type::z, 'T', 'N', 64, 64, 1 << 20));  // complex: the dot kernel, m n <= 1024
  CHECK(pick(scalar_type::z, 'T', 'N', 32, 32, 1 << 20));      // 1 GiB: far beyond 4 x 8 MiB
  CHECK_FALSE(pick(scalar_type::z, 'T', 'N', 32, 32, 32767));  // 32 MiB - 1 KiB
  CHECK_FALSE(pick(scalar_type::c, 'N', 'N', 48, 48, 1 << 20));
  CHECK_FALSE(pick(scalar_type::z, 'N', 'N', 65, 64, 1 << 20));
  CHECK_FALSE(pick(scalar_type::d, 'N', 'N', 129, 64, 1 << 20));
  // The planner passes the problem's trans pair: a 64x64x2^22 double NN plan streams, and
  // so does TN, where the BLAS's 2-thread kernels run the transposed panel too.
  context ctx = test::pinned_context(2);
  const std::string nn = make_plan(problem{scalar_type::d, 'N', 'N', 64, 64, 1 << 22}, ctx).to_string();
  const std::string tn = make_plan(problem{scalar_type::d, 'T', 'N', 64, 64, 1 << 22}, ctx).to_string();
  INFO(nn, tn);
  CHECK(nn.find("leaf streaming") != std::string::npos);
  CHECK(tn.find("leaf streaming") != std::string::npos);
}

TEST_CASE("the streaming rule reads its thresholds from the machine: twice the L2, 8 L2s") {
  // A 256 KiB L2: streaming from 512 KiB of A and B ('TN' above 16 from 2 MiB); a 2 MiB L2:
  // from 4 MiB (16 MiB).
  const machine_description small = test::epyc_2c_with("Package:1 L3Cache:1(size=8MiB) L2Cache:2(size=256KiB) L1dCache:1(size=32KiB) Core:1 PU:1");
  const machine_description large = test::epyc_2c_with("Package:1 L3Cache:1(size=96MiB) L2Cache:2(size=2MiB) L1dCache:1(size=48KiB) Core:1 PU:1");
  CHECK(small.value(machine_key::stream_bytes) == 512.0 * 1024);
  CHECK(large.value(machine_key::stream_far_bytes) == 16.0 * 1024 * 1024);
  const auto pick = [](const machine_description& mc, char ta, std::int64_t m, std::int64_t k) {
    return detail::choose_leaf(mc, leaf_backend::automatic, scalar_type::d, m, m, k, ta, 'N') == leaf_backend::streaming;
  };
  CHECK(pick(small, 'N', 8, 4096));         // (8 + 8) * 4096 * 8 bytes = 512 KiB
  CHECK_FALSE(pick(small, 'N', 8, 4095));
  CHECK(pick(small, 'T', 32, 4096));        // 2 MiB, 'TN'
  CHECK_FALSE(pick(small, 'T', 32, 4095));
  CHECK(pick(large, 'N', 8, 32768));        // 4 MiB
  CHECK_FALSE(pick(large, 'N', 8, 32767));
  // A measured value replaces the model's.
  machine_description tuned = large;
  tuned.set_measured(machine_key::stream_bytes, 1 << 20);
  CHECK(pick(tuned, 'N', 8, 8192));
  CHECK(tuned.measured(machine_key::stream_bytes));
  CHECK_FALSE(tuned.measured(machine_key::stream_far_bytes));
  // 'TN' has its own threshold: a machine where it never won ("never", 1e18 bytes) keeps
  // 'TN' 32 x 32 leaves on the BLAS at any k, and 'NN' ones on the streaming leaf.
  CHECK(pick(large, 'T', 32, 1 << 22));
  tuned.set_measured(machine_key::stream_dot_bytes, 1e18);
  CHECK_FALSE(pick(tuned, 'T', 32, 1 << 22));
  CHECK(pick(tuned, 'N', 32, 1 << 22));
}

TEST_CASE("first use: the 32 x 32 TN and 64 x 64 NN series reach memory, past the last-level cache") {
  // 512 KiB L2s and a 32 MiB L3 (the AVX2 Zen 3 host): near = 64 KiB .. 4 MiB, far =
  // 256 KiB, 1, 4 MiB, each then 64 MiB from memory.
  const machine_description zen3 = test::epyc_2c_with("Package:1 L3Cache:1(size=32MiB) L2Cache:2(size=512KiB) L1dCache:1(size=32KiB) Core:1 PU:1");
  const double MiB = 1 << 20;
  const detail::first_use_sizes z = detail::first_use_bytes(zen3);
  CHECK(z.near == std::vector<double>{MiB / 16, MiB / 4, MiB, 4 * MiB, 64 * MiB});
  CHECK(z.far == std::vector<double>{MiB / 4, MiB, 4 * MiB, 64 * MiB});
  CHECK(z.from_memory);
  // A 96 MiB L3: on x86 the memory size is 16 MiB (8 L2s of 2 MiB) again with its operands
  // evicted before each call, labelled twice the L3; elsewhere twice it is past what a first
  // use may allocate, so the series stop at 16 MiB, read from the L3.
  const machine_description big = test::epyc_2c_with("Package:1 L3Cache:1(size=96MiB) L2Cache:2(size=2MiB) L1dCache:1(size=48KiB) Core:1 PU:1");
  const detail::first_use_sizes b = detail::first_use_bytes(big);
#if defined(__SSE2__)
  CHECK(z.evicted_last);  // 64 MiB timed as 4 MiB evicted
  CHECK(b.near == std::vector<double>{MiB / 4, MiB, 4 * MiB, 16 * MiB, 192 * MiB});
  CHECK(b.far == std::vector<double>{MiB, 4 * MiB, 16 * MiB, 192 * MiB});
  CHECK(b.from_memory);
  CHECK(b.evicted_last);
#else
  CHECK_FALSE(z.evicted_last);
  CHECK(b.near == std::vector<double>{MiB / 4, MiB, 4 * MiB, 16 * MiB});
  CHECK(b.far == std::vector<double>{MiB, 4 * MiB, 16 * MiB});
  CHECK_FALSE(b.from_memory);
#endif
  // A 4 MiB L3 under 2 MiB L2s: the largest size, 16 MiB, is read from memory already.
  const machine_description small = test::epyc_2c_with("Package:1 L3Cache:1(size=4MiB) L2Cache:2(size=2MiB) L1dCache:1(size=48KiB) Core:1 PU:1");
  const detail::first_use_sizes s = detail::first_use_bytes(small);
  CHECK(s.far == std::vector<double>{MiB, 4 * MiB, 16 * MiB});
  CHECK(s.from_memory);
  CHECK_FALSE(s.evicted_last);
}

TEST_CASE("first use: a series behind the BLAS leaf from memory says never, measured in the caches only undecided") {
  using detail::first_use_crossover;
  const std::vector<double> four = {1, 2, 4, 64}, three = {1, 2, 4};
  // Zen 3's 64 x 64 NN: behind in the L3 and from memory. Behind from memory alone, after
  // a tie or a lead: one timing does not decide (undecided, the model's value).
  CHECK(first_use_crossover(four, {0.80, 0.87, 0.85, 0.93}, true) == 1e18);
  CHECK(first_use_crossover(four, {0.80, 0.87, 0.97, 0.93}, true) == 0);
  CHECK(first_use_crossover(four, {1.20, 1.30, 1.40, 0.89}, true) == 0);
  CHECK(first_use_crossover(three, {0.80, 0.87, 0.97}, false) == 4);  // the caches alone: "from 4 on"
  CHECK(first_use_crossover(three, {0.80, 0.87, 0.93}, false) == 0);  // undecided: the model's value
  CHECK(first_use_crossover(three, {0.80, 0.87, 0.85}, false) == 1e18);
  // The AVX-512 host's 32 x 32 TN: ahead at every size, from memory too.
  CHECK(first_use_crossover(four, {1.40, 1.41, 1.35, 1.48}, true) == 1);
  CHECK(first_use_crossover(four, {0.90, 1.10, 1.20, 1.30}, true) == 2);
  // The budget ran out before the memory size: the caches' rule.
  CHECK(first_use_crossover(four, {0.80, 0.87, 0.93}, true) == 0);
  CHECK(first_use_crossover(four, {0.80, 0.87, 0.85}, true) == 1e18);
  CHECK(first_use_crossover(four, {}, true) == 0);
}

TEST_CASE("first use: a thin call is long by the bytes it reads, not only by its flops") {
  // 32 x 32 x 2^22 double on 2 threads at the model's 50 GF/s and 8 GB/s a thread: 8.6
  // GFlop is 0.086 s, its 2 GiB of A and B 0.134 s; 64 x 64 x 2^16 (0.5 GFlop, 64 MiB) is short.
  const machine_description& mc = test::epyc_2c();
  const auto seconds = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    return detail::call_seconds(mc, gemm_flops(scalar_type::d, m, n, k), double(m + n) * double(k) * 8, 2);
  };
  CHECK(gemm_flops(scalar_type::d, 32, 32, 1 << 22) / (2 * mc.value(machine_key::rank_flops_per_thread)) <
        detail::first_use_long_seconds);
  CHECK(seconds(32, 32, 1 << 22) >= detail::first_use_long_seconds);
  CHECK(seconds(32, 32, 1 << 22) == doctest::Approx(double(1 << 30) / mc.value(machine_key::host_copy_bandwidth)));
  CHECK(seconds(64, 64, 1 << 16) < detail::first_use_long_seconds);
  // A cube is long by its flops: 4096^3 is 137 GFlop, 1.4 s on 2 threads (its A and B, 256 MiB, 0.03 s).
  CHECK(seconds(4096, 4096, 4096) == doctest::Approx(gemm_flops(scalar_type::d, 4096, 4096, 4096) /
                                                     (2 * mc.value(machine_key::rank_flops_per_thread))));
}

TEST_CASE("the streaming rank-k rule reads each type's, triangle's and form's largest n from the machine") {
  const machine_description& avx512 = test::epyc_2c();  // the model's limits: the AVX-512 host's runs
  using detail::streaming_rank_k_preferred;
  const auto d = scalar_type::d, s = scalar_type::s, c = scalar_type::c, z = scalar_type::z;
  CHECK(streaming_rank_k_preferred(avx512, d, 'U', 'N', 96, 1 << 20));
  CHECK(streaming_rank_k_preferred(avx512, d, 'U', 'N', 128, 4096));        // 4 MiB: below stream_far_bytes
  CHECK_FALSE(streaming_rank_k_preferred(avx512, d, 'U', 'N', 128, 1 << 17));  // 128 MiB from memory
  CHECK(streaming_rank_k_preferred(avx512, s, 'U', 'N', 128, 1 << 20));
  CHECK(streaming_rank_k_preferred(avx512, c, 'U', 'N', 64, 1 << 20));
  CHECK_FALSE(streaming_rank_k_preferred(avx512, c, 'U', 'N', 96, 1024));
  CHECK(streaming_rank_k_preferred(avx512, d, 'U', 'T', 64, 1 << 20));
  CHECK_FALSE(streaming_rank_k_preferred(avx512, d, 'U', 'T', 4, 1 << 20));
  CHECK_FALSE(streaming_rank_k_preferred(avx512, d, 'U', 'T', 96, 1 << 20));
  CHECK(streaming_rank_k_preferred(avx512, s, 'U', 'T', 96, 1 << 20));
  CHECK_FALSE(streaming_rank_k_preferred(avx512, s, 'U', 'T', 8, 1 << 20));
  CHECK(streaming_rank_k_preferred(avx512, z, 'U', 'C', 32, 1 << 20));
  CHECK_FALSE(streaming_rank_k_preferred(avx512, z, 'U', 'C', 64, 1 << 20));
  // Complex above n = 8 needs k >= 16 n (256 at n = 16, 512 at 32); n = 8 takes every k, and
  // the real types have no such floor.
  CHECK(streaming_rank_k_preferred(avx512, z, 'L', 'C', 8, 16));
  CHECK_FALSE(streaming_rank_k_preferred(avx512, z, 'L', 'C', 16, 255));
  CHECK(streaming_rank_k_preferred(avx512, z, 'L', 'C', 16, 256));
  CHECK_FALSE(streaming_rank_k_preferred(avx512, c, 'U', 'N', 32, 511));
  CHECK(streaming_rank_k_preferred(avx512, c, 'U', 'N', 32, 512));
  CHECK(streaming_rank_k_preferred(avx512, d, 'U', 'T', 32, 16));
  machine_description fast_complex = avx512;  // a gemm crossover measured low leaves the floor
  fast_complex.set_measured(machine_key::stream_complex_k, 32);
  CHECK_FALSE(streaming_rank_k_preferred(fast_complex, z, 'U', 'N', 16, 255));
  CHECK(streaming_rank_k_preferred(fast_complex, z, 'U', 'N', 16, 256));
  // The AVX2 Zen 3's double limits: N to 32, T none (1). n = 128 in cache goes with them;
  // the other types keep theirs.
  machine_description zen3 = avx512;
  zen3.set_measured(machine_key::stream_rank_k_un_d, 32).set_measured(machine_key::stream_rank_k_ut_d, 1);
  CHECK(streaming_rank_k_preferred(zen3, d, 'U', 'N', 32, 1 << 22));
  CHECK_FALSE(streaming_rank_k_preferred(zen3, d, 'U', 'N', 64, 1 << 20));
  CHECK_FALSE(streaming_rank_k_preferred(zen3, d, 'U', 'N', 128, 4096));
  for (std::int64_t n : {4, 8, 16, 32, 64}) CHECK_FALSE(streaming_rank_k_preferred(zen3, d, 'U', 'T', n, 1 << 20));
  CHECK(streaming_rank_k_preferred(zen3, z, 'U', 'N', 96, 1 << 20));
  CHECK(streaming_rank_k_preferred(zen3, s, 'U', 'T', 16, 1 << 20));
  // A measured limit decides alone: 96 measured keeps n = 128 off the streaming leaf in cache
  // too, and a gemm crossover measured "never" (1e18) does not put every n = 128 leaf on it.
  machine_description measured96 = avx512;
  measured96.set_measured(machine_key::stream_rank_k_un_d, 96).set_measured(machine_key::stream_far_bytes, 1e18);
  CHECK(streaming_rank_k_preferred(measured96, d, 'U', 'N', 96, 1 << 20));
  CHECK_FALSE(streaming_rank_k_preferred(measured96, d, 'U', 'N', 128, 4096));
  CHECK_FALSE(streaming_rank_k_preferred(measured96, d, 'U', 'N', 128, 1 << 17));
  machine_description never = avx512;
  never.set_measured(machine_key::stream_far_bytes, 1e18);
  CHECK(streaming_rank_k_preferred(never, d, 'U', 'N', 128, 4096));  // the model's 8 MiB, not the 1e18
  CHECK_FALSE(streaming_rank_k_preferred(never, d, 'U', 'N', 128, 1 << 17));
  // 1: none, in both forms.
  machine_description none = avx512;
  none.set_measured(machine_key::stream_rank_k_un_d, 1).set_measured(machine_key::stream_rank_k_ut_d, 1);
  for (std::int64_t n : {1, 4, 8, 64}) CHECK_FALSE(streaming_rank_k_preferred(none, d, 'U', 'N', n, 1 << 20));
  // Each triangle has its own limits: the Zen 3's OpenBLAS ran dsyrk 'L' 'N' faster than
  // 'U' 'N', so there the lower N limit was 16 where the upper one was 32.
  machine_description triangles = avx512;
  triangles.set_measured(machine_key::stream_rank_k_un_d, 32).set_measured(machine_key::stream_rank_k_ln_d, 16);
  triangles.set_measured(machine_key::stream_rank_k_lt_z, 1);
  CHECK(streaming_rank_k_preferred(triangles, d, 'U', 'N', 32, 1 << 21));
  CHECK_FALSE(streaming_rank_k_preferred(triangles, d, 'L', 'N', 32, 1 << 21));
  CHECK(streaming_rank_k_preferred(triangles, d, 'l', 'n', 16, 1 << 21));
  CHECK(streaming_rank_k_preferred(triangles, z, 'U', 'C', 32, 1 << 20));  // the model's 32
  CHECK_FALSE(streaming_rank_k_preferred(triangles, z, 'L', 'C', 32, 1 << 20));
  // And the leaf a rank-k update's triangle gets under `auto`: a BLAS leaf where the limit says.
  CHECK(detail::choose_rank_k_leaf(avx512, leaf_backend::automatic, d, 'U', 'T', 32, 1 << 20) == leaf_backend::streaming);
  CHECK(detail::choose_rank_k_leaf(zen3, leaf_backend::automatic, d, 'U', 'T', 32, 1 << 20) != leaf_backend::streaming);
  CHECK(detail::choose_rank_k_leaf(zen3, leaf_backend::streaming, d, 'U', 'T', 32, 1 << 20) == leaf_backend::streaming);
  CHECK(detail::choose_rank_k_leaf(triangles, leaf_backend::automatic, d, 'U', 'N', 32, 1 << 21) == leaf_backend::streaming);
  CHECK(detail::choose_rank_k_leaf(triangles, leaf_backend::automatic, d, 'L', 'N', 32, 1 << 21) != leaf_backend::streaming);
}

TEST_CASE("the streaming rank-k rule under the model's limits is the rule they were measured as") {
  // The rule as it was written before its limits were machine keys (the AVX-512 host's runs),
  // with the complex floor on k (16 n above n = 8).
  const machine_description& mc = test::epyc_2c();
  auto written = [&](scalar_type t, bool n_form, std::int64_t n, std::int64_t k) {
    if (n < 1 || n > 128) return false;
    if (is_complex(t) && n > 8 && k * 8 < 128 * n) return false;
    const double bytes = double(n) * double(k) * double(element_size(t));
    if (n_form) {
      if (t == scalar_type::s) return true;
      if (t == scalar_type::c) return n <= 64;
      return n <= 96 || bytes < mc.value(machine_key::stream_far_bytes);
    }
    if (t == scalar_type::s) return n >= 16 && n <= 96;
    if (n < 8) return false;
    return n <= (t == scalar_type::d ? 64 : 32);
  };
  for (scalar_type t : {scalar_type::s, scalar_type::d, scalar_type::c, scalar_type::z})
    for (bool n_form : {true, false})
      for (char uplo : {'U', 'L'})  // the model's lower limits are its upper ones
        for (std::int64_t n = 0; n <= 130; ++n)
          for (std::int64_t k : {1, 256, 512, 4096, 1 << 14, 1 << 20}) {
            const char trans = n_form ? 'N' : (is_complex(t) ? 'C' : 'T');
            INFO(char(t), " ", uplo, trans, " n ", n, " k ", k);
            CHECK(detail::streaming_rank_k_preferred(mc, t, uplo, trans, n, k) == written(t, n_form, n, k));
          }
}

TEST_CASE("first use: the rank-k limit is the n before the leaf falls behind twice, or at the end") {
  using detail::first_use_n_limit;
  const std::vector<std::int64_t> ns = detail::first_use_rank_k_ns(scalar_type::d, true);
  CHECK(ns == std::vector<std::int64_t>{4, 8, 16, 32, 64, 96, 128});
  CHECK(detail::first_use_rank_k_ns(scalar_type::d, false) == std::vector<std::int64_t>{8, 16, 32, 64, 96, 128});
  CHECK(detail::first_use_rank_k_ns(scalar_type::s, false) == std::vector<std::int64_t>{16, 32, 64, 96, 128});
  // Zen 3's double N form (1 MiB of A): ahead to 32, behind from 64.
  CHECK(first_use_n_limit(ns, {1.8, 1.5, 1.1, 1.0, 0.8, 0.65, 0.7}) == 32);
  // One behind between two ahead is noise; behind at the largest n ends it.
  CHECK(first_use_n_limit(ns, {1.8, 0.95, 1.2, 0.9, 0.8}) == 16);
  CHECK(first_use_n_limit(ns, {1.8, 1.5, 1.3, 1.2, 1.1, 1.0, 0.9}) == 96);
  // Behind at the first two: none (1). Ahead at every n measured: the last of them.
  CHECK(first_use_n_limit(ns, {0.6, 0.7}) == 1);
  CHECK(first_use_n_limit(ns, {0.9, 0.5, 0.9}) == 1);
  CHECK(first_use_n_limit(ns, {1.2, 1.3, 1.2, 1.1, 1.1, 1.0, 0.98}) == 128);
  CHECK(first_use_n_limit(ns, {1.2, 1.3, 1.2}) == 16);
  // Fewer than two timings decide nothing.
  CHECK(first_use_n_limit(ns, {0.5}) == 0);
  CHECK(first_use_n_limit(ns, {}) == 0);
  // Its leaves' A: twice one core's L2 (1 MiB of a 512 KiB L2).
  const machine_description zen3 = test::epyc_2c_with("Package:1 L3Cache:1(size=32MiB) L2Cache:2(size=512KiB) L1dCache:1(size=32KiB) Core:1 PU:1");
  CHECK(detail::first_use_bytes(zen3).rank_k == double(1 << 20));
  // Its A from memory: on x86 evicted from the caches before each call (one slice, at any
  // cache size), elsewhere each call on the next 1 MiB of a span of twice the L3, at most 64 MiB.
  const machine_description big = test::epyc_2c_with("Package:1 L3Cache:1(size=96MiB) L2Cache:2(size=2MiB) L1dCache:1(size=48KiB) Core:1 PU:1");
#if defined(__SSE2__)
  CHECK(detail::first_use_bytes(zen3).rank_k_span == double(1 << 20));
  CHECK(detail::first_use_bytes(big).rank_k_span == double(4 << 20));
#else
  CHECK(detail::first_use_bytes(zen3).rank_k_span == double(64 << 20));
  CHECK(detail::first_use_bytes(big).rank_k_span == double(64 << 20));  // at most 64 MiB
#endif
  // A Gram matrix of a 32 x 2^22 double A on 2 threads is long enough to measure (0.067 s
  // by the model's 8 GB/s a thread), one of 32 x 2^18 is not.
  const auto seconds = [&](std::int64_t n, std::int64_t k) {
    return detail::call_seconds(zen3, double(n) * double(n) * double(k), double(n) * double(k) * 8, 2);
  };
  CHECK(seconds(32, 1 << 22) >= detail::first_use_rank_k_long_seconds);
  CHECK(seconds(32, 1 << 18) < detail::first_use_rank_k_long_seconds);
}

TEST_CASE("a streaming leaf gets no cache cuts above it, whatever the last-level cache") {
  // 64x64x2^22 double NN on 2 threads: one k-cut, then each 64 x 64 x 2^21 leaf streams
  // (2 GiB of A and B) on a 16 MiB, a 96 MiB and a 508 MiB cache alike.
  for (const char* synthetic : {"Package:1 L3Cache:1(size=32MiB) L2Cache:2(size=1MiB) L1dCache:1(size=48KiB) Core:1 PU:1",
                                "Package:1 L3Cache:1(size=96MiB) L2Cache:2(size=2MiB) L1dCache:1(size=48KiB) Core:1 PU:1",
                                "Package:1 L3Cache:2(size=508MiB) L2Cache:1(size=1MiB) L1dCache:1(size=48KiB) Core:1 PU:1"}) {
    context ctx = test::pinned_context(2);
    ctx.set_description(test::epyc_2c_with(synthetic));
    const plan p = make_plan(problem{scalar_type::d, 'N', 'N', 64, 64, 1 << 22}, ctx);
    INFO(synthetic, "\n", p.to_string());
    CHECK(p.leaves() == 2);
    for (const node& nd : p.nodes())
      if (nd.kind == step_kind::leaf) CHECK(nd.backend == leaf_backend::streaming);
  }
  // A leaf the BLAS takes is still cut to the cache share: 64 x 64 x 2^22 TN on a machine
  // where 'TN' never streams (measured "never") with the 32 MiB cache (16 MiB a core).
  context ctx = test::pinned_context(2);
  machine_description never = test::epyc_2c_with("Package:1 L3Cache:1(size=32MiB) L2Cache:2(size=1MiB) L1dCache:1(size=48KiB) Core:1 PU:1");
  never.set_measured(machine_key::stream_dot_bytes, 1e18);
  ctx.set_description(never);
  const plan tn = make_plan(problem{scalar_type::d, 'T', 'N', 64, 64, 1 << 22}, ctx);
  INFO(tn.to_string());
  CHECK(tn.leaves() > 2);
  CHECK(tn.to_string().find("dfs k cache") != std::string::npos);
}
