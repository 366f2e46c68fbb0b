// prism::dist::syrk / herk under mpiexec (ctest runs it on 1..8 ranks, oversubscribed):
// random n and k, all four types, uplo U/L, trans N/T/C, alpha and beta in {0, 1, -1,
// other}, NaN in C with beta = 0; the triangle checked against the long-double reference
// with the componentwise bound, the other triangle untouched, the byte counter equal to
// the rank model's prediction on every rank (messages too); arguments that do not match the layout; and
// the memory caps (least footprint, between, none) against measured allocations.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <prism/dist.hpp>
#include <prism/error.hpp>

#include "support/mpi_doctest.hpp"
#include "support/reference.hpp"

#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>

using namespace prism;
using prism::test::random_matrix;

namespace {

using prism::test::one_thread;
using prism::test::world_rank;
using prism::test::world_size;

// Rank 0's verdict on every rank.
std::string shared_verdict(std::string verdict) {
  int len = int(verdict.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  verdict.resize(std::size_t(len));
  MPI_Bcast(verdict.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  return verdict;
}

// Checks the uplo triangle of C (n x n, ldc) against the reference with the bound and
// that the other triangle still holds `pad`; real_diagonal (herk, unless it only returns:
// alpha = 0 or k = 0 with beta = 1, as reference ?herk): the diagonal's imaginary parts are 0.
template <class T>
std::string check_triangle(const test::reference<T>& r, char uplo, bool real_diagonal, std::int64_t n, std::int64_t k,
                           const T* C, std::int64_t ldc) {
  const bool herk = real_diagonal;
  const long double eps = std::numeric_limits<test::real_t<T>>::epsilon();
  const long double c = test::is_complex_v<T> ? 8.0L : 4.0L, tiny = std::numeric_limits<test::real_t<T>>::min();
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      const T got = C[i + j * ldc];
      const bool in = uplo == 'U' ? i <= j : i >= j;
      if (!in) {
        if (!(got == T(-777))) return "C(" + std::to_string(i) + "," + std::to_string(j) + ") outside the triangle was written";
        continue;
      }
      test::wide_t<T> want = r.value[std::size_t(i + j * n)];
      if constexpr (test::is_complex_v<T>)
        if (herk && i == j) {
          want = test::wide_t<T>(want.real());
          if (got.imag() != 0) return "herk: C(" + std::to_string(i) + "," + std::to_string(i) + ") is not real";
        }
      const long double err = std::abs(test::wide_t<T>(got) - want);
      const long double bound = c * std::max<std::int64_t>(k, 1) * eps * r.scale[std::size_t(i + j * n)] + 4 * tiny;
      if (!(err <= bound))
        return "C(" + std::to_string(i) + "," + std::to_string(j) + ") error " + std::to_string((double)err) + " > bound " +
               std::to_string((double)bound);
    }
  return "";
}

// Runs C = alpha op(A) op(A)^T (^H) + beta C0 through a rank-k layout (the planner's, or
// scheme s when given) and checks it.
template <class T>
std::string run_case(operation op, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, T beta,
                     std::uint64_t seed, bool nan_c, const context& ctx, const rank_k_scheme* s = nullptr) {
  const problem p = rank_k_problem(scalar_type_of<T>(), op, uplo, trans, n, k);
  auto L = s != nullptr ? dist::layout::make(MPI_COMM_WORLD, p, *s, ctx) : dist::layout::make(MPI_COMM_WORLD, p, ctx);
  const rank_model& m = L->model();
  std::mt19937_64 gen(seed);
  const std::int64_t ra = L->rows(operand::a), ca = L->cols(operand::a), lda = std::max<std::int64_t>(1, ra), ldc = std::max<std::int64_t>(1, n);
  auto A = random_matrix<T>(ra, ca, lda, gen);
  auto C0 = random_matrix<T>(n, n, ldc, gen);
  if (nan_c)
    for (auto& x : C0) x = T(std::numeric_limits<test::real_t<T>>::quiet_NaN());
  const bool quick = (alpha == T(0) || k == 0) && beta == T(1);
  // herk ignores the imaginary parts of C's diagonal, as reference ?herk: every other call
  // gives it NaN there (the reference reads C0 as it is: it takes the real part).
  std::vector<T> given = C0;
  if constexpr (test::is_complex_v<T>)
    if (op == operation::herk && !quick && seed % 2 == 0)
      for (std::int64_t j = 0; j < n; ++j) given[std::size_t(j + j * ldc)].imag(std::numeric_limits<test::real_t<T>>::quiet_NaN());
  dist::matrix<T> dA(L, operand::a), dC(L, operand::c);
  dA.scatter(0, A.data(), lda);
  dC.scatter(0, given.data(), ldc);
  if constexpr (test::is_complex_v<T>) {
    if (op == operation::herk) dist::herk<T>(MPI_COMM_WORLD, uplo, trans, alpha.real(), dA, beta.real(), dC, ctx);
    else dist::syrk<T>(MPI_COMM_WORLD, uplo, trans, alpha, dA, beta, dC, ctx);
  } else {
    dist::syrk<T>(MPI_COMM_WORLD, uplo, trans, alpha, dA, beta, dC, ctx);
  }
  const dist::traffic tr = dist::last_traffic();
  if (L->active() && n > 0 && k > 0 && alpha != T(0)) {
    CHECK(tr.bytes_received == m.cost(L->rank()).received_total() * std::int64_t(sizeof(T)));
    CHECK(tr.messages_received == m.messages(L->rank()));
  } else {
    CHECK(tr.bytes_received == 0);
  }
  std::vector<T> C(std::size_t(ldc * std::max<std::int64_t>(1, n)), T(-777));
  dC.gather(0, C.data(), ldc);
  std::string verdict;
  if (L->rank() == 0) {
    const char tn = trans == 'N' ? 'N' : (op == operation::herk ? 'C' : 'T');
    const char partner = trans == 'N' ? (op == operation::herk ? 'C' : 'T') : 'N';
    const auto ref = test::reference_gemm<T>(tn, partner, n, n, k, alpha, A.data(), lda, A.data(), lda, beta, C0.data(), ldc);
    verdict = check_triangle<T>(ref, uplo, op == operation::herk && !quick, n, k, C.data(), ldc);
  }
  return shared_verdict(verdict);
}

template <class T>
T pick_scalar(int which, bool real_only) {
  switch (which) {
    case 0: return T(0);
    case 1: return T(1);
    case 2: return T(-1);
    default:
      if constexpr (test::is_complex_v<T>) return real_only ? T(0.75) : T(0.75, -0.5);
      else return T(0.75);
  }
}

template <class T>
void sweep(std::uint64_t seed, int cases, bool herk) {
  std::mt19937_64 gen(seed);  // the same draws on every rank
  const std::int64_t sizes[] = {0, 1, 2, 3, 5, 7, 13, 17, 31, 40, 64, 97};
  for (int c = 0; c < cases; ++c) {
    std::int64_t n = sizes[gen() % 12], k = sizes[gen() % 12];
    if (c % 3 == 0) n = 1 + std::int64_t(gen() % 120), k = 1 + std::int64_t(gen() % 400);
    const char uplo = gen() % 2 ? 'U' : 'L';
    const char trans = gen() % 2 ? 'N' : (herk ? 'C' : (!test::is_complex_v<T> && gen() % 2 ? 'C' : 'T'));
    const T alpha = pick_scalar<T>(int(gen() % 4), herk), beta = pick_scalar<T>(int(gen() % 4), herk);
    const bool nan_c = beta == T(0) && gen() % 2 == 0;
    CAPTURE(n);
    CAPTURE(k);
    CAPTURE(uplo);
    CAPTURE(trans);
    const std::string scalars = std::to_string(sizeof(T)) + " alpha " + std::to_string(std::real(alpha)) + " beta " + std::to_string(std::real(beta)) + " nan " + std::to_string(nan_c);
    CAPTURE(scalars);
    CHECK(run_case<T>(herk ? operation::herk : operation::syrk, uplo, trans, n, k, alpha, beta, seed + std::uint64_t(c), nan_c,
                      one_thread()) == "");
  }
}

}  // namespace

TEST_CASE("syrk and herk: random n and k, four types, U/L, N/T/C, alpha and beta in {0, 1, -1, other}") {
  sweep<double>(21, 30, false);
  sweep<float>(22, 12, false);
  sweep<std::complex<float>>(23, 10, false);
  sweep<std::complex<double>>(24, 10, false);
  sweep<std::complex<float>>(25, 10, true);
  sweep<std::complex<double>>(26, 12, true);
}

TEST_CASE("every scheme that fits the communicator: k slices x triangle blocks x phases") {
  const int P = world_size();
  std::mt19937_64 gen(31);
  for (int c = 1; c <= P; ++c)
    for (int G = 1; G * c <= P; ++G)
      for (int q : {1, 3}) {
        const rank_k_scheme s{G, c, q};
        const std::int64_t n = c + std::int64_t(gen() % 40), k = std::int64_t(G * q) * 2 + std::int64_t(gen() % 50);
        const char uplo = gen() % 2 ? 'U' : 'L', trans = gen() % 2 ? 'N' : 'T';
        CAPTURE(s.to_string());
        CAPTURE(n);
        CAPTURE(k);
        CHECK(run_case<double>(operation::syrk, uplo, trans, n, k, 0.75, gen() % 2 ? 0.0 : -1.0, 40 + gen() % 1000,
                               false, one_thread(), &s) == "");
        CHECK(run_case<std::complex<double>>(operation::herk, uplo, trans == 'N' ? 'N' : 'C', n, k, {1.5, 0}, {0.5, 0},
                                             50 + gen() % 1000, false, one_thread(), &s) == "");
      }
}

TEST_CASE("schemes of several parts and stars: bytes as modelled, balanced ownership, right results") {
  const int P = world_size();
  std::mt19937_64 gen(37);
  std::vector<rank_k_scheme> schemes;
  if (P >= 4) schemes.push_back(rank_k_scheme({{1, 4, rank_k_cover::star}}));
  if (P >= 3) schemes.push_back(rank_k_scheme({{1, 2, rank_k_cover::difference}, {1, 1, rank_k_cover::difference}}, 2));
  if (P >= 5) schemes.push_back(rank_k_scheme({{1, 4, rank_k_cover::star}, {1, 1, rank_k_cover::difference}}));
  if (P >= 7) schemes.push_back(rank_k_scheme({{1, 4, rank_k_cover::star}, {1, 3, rank_k_cover::difference}}, 3));
  if (P >= 8) schemes.push_back(rank_k_scheme({{2, 4, rank_k_cover::star}}));
  if (P >= 3) schemes.push_back(rank_k_scheme({{1, 2, rank_k_cover::nest, {2, 1}}}));
  if (P >= 5) schemes.push_back(rank_k_scheme({{1, 3, rank_k_cover::difference, {2, 2, 1}}}));
  if (P >= 8) schemes.push_back(rank_k_scheme({{1, 7, rank_k_cover::difference, {2, 1, 1, 1, 1, 1, 1}}}));
  // Stars of uneven roles: more centre ranks than leaf ones, and fewer, and one beside a
  // difference cover (the planner's choice on 8 ranks for n = k).
  if (P >= 5) schemes.push_back(rank_k_scheme({{1, 4, rank_k_cover::star, {2, 1, 1, 1}}}));
  if (P >= 7) schemes.push_back(rank_k_scheme({{1, 4, rank_k_cover::star, {1, 2, 2, 2}}}));
  if (P >= 8)
    schemes.push_back(rank_k_scheme({{1, 4, rank_k_cover::star, {2, 1, 1, 1}}, {1, 3, rank_k_cover::difference}}));
  for (const rank_k_scheme& s : schemes) {
    const std::int64_t n = 60 + std::int64_t(gen() % 30), k = 40 + std::int64_t(gen() % 60);
    const char uplo = gen() % 2 ? 'U' : 'L', trans = gen() % 2 ? 'N' : 'T';
    CAPTURE(s.to_string());
    CAPTURE(n);
    CAPTURE(k);
    CHECK(run_case<double>(operation::syrk, uplo, trans, n, k, 0.75, gen() % 2 ? 0.0 : -1.0, 60 + gen() % 1000, false,
                           one_thread(), &s) == "");
    CHECK(run_case<std::complex<float>>(operation::herk, uplo, trans == 'N' ? 'N' : 'C', n, k, {1.5f, 0}, {0.5f, 0},
                                        70 + gen() % 1000, false, one_thread(), &s) == "");
  }
}

TEST_CASE("memory caps force phases, and the result stays right") {
  const problem p = rank_k_problem(scalar_type::d, operation::syrk, 'L', 'T', 60, 3000);
  context c = one_thread();
  c.set_ranks(world_size());
  const std::size_t least = least_footprint_rank_k(p, c).least_footprint;
  c.set_max_memory(least);
  CHECK(run_case<double>(operation::syrk, 'L', 'T', 60, 3000, 1.0, 0.5, 7, false, c) == "");
}

TEST_CASE("arguments that do not match the layout: every rank errors, C untouched") {
  const problem p = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'N', 20, 30);
  auto L = dist::layout::make(MPI_COMM_WORLD, p, one_thread());
  dist::matrix<double> A(L, operand::a), C(L, operand::c);
  A.fill([](std::int64_t i, std::int64_t j) { return double(i + j); });
  C.fill([](std::int64_t, std::int64_t) { return 5.0; });
  CHECK_THROWS_AS(dist::syrk<double>(MPI_COMM_WORLD, 'L', 'N', 1.0, A, 0.0, C), invalid_argument);
  CHECK_THROWS_AS(dist::syrk<double>(MPI_COMM_WORLD, 'U', 'T', 1.0, A, 0.0, C), invalid_argument);
  // alpha differs on one rank.
  if (world_size() > 1)
    CHECK_THROWS_AS(dist::syrk<double>(MPI_COMM_WORLD, 'U', 'N', world_rank() == world_size() - 1 ? 2.0 : 1.0, A, 0.0, C),
                    invalid_argument);
  // Another communicator on the last rank only: the agreement makes every rank say so.
  if (world_size() > 1)
    try {
      dist::syrk<double>(world_rank() == world_size() - 1 ? MPI_COMM_SELF : MPI_COMM_WORLD, 'U', 'N', 1.0, A, 0.0, C);
      FAIL("no error");
    } catch (const invalid_argument& e) {
      CHECK(std::string(e.what()).find("comm is not the communicator of A's layout") != std::string::npos);
    }
  // A, or C, from a layout on another communicator on the last rank only: every rank hears
  // of it, over the communicator the caller names.
  if (world_size() > 1) {
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    {
      auto Ld = dist::layout::make(dup, p, one_thread());
      dist::matrix<double> Ad(Ld, operand::a), Cd(Ld, operand::c);
      const bool odd = world_rank() == world_size() - 1;
      CHECK_THROWS_WITH_AS(dist::syrk<double>(MPI_COMM_WORLD, 'U', 'N', 1.0, odd ? Ad : A, 0.0, C), doctest::Contains("one layout"),
                           invalid_argument);
      CHECK_THROWS_WITH_AS(dist::syrk<double>(MPI_COMM_WORLD, 'U', 'N', 1.0, A, 0.0, odd ? Cd : C), doctest::Contains("one layout"),
                           invalid_argument);
    }
    MPI_Comm_free(&dup);
  }
  // gemm on a rank-k layout.
  dist::matrix<double> B(L, operand::c);
  CHECK_THROWS_AS(dist::gemm<double>(MPI_COMM_WORLD, p, 1.0, A, A, 0.0, C), error);
  bool untouched = true;
  C.for_each([&](std::int64_t, std::int64_t, double& v) { untouched = untouched && v == 5.0; });
  CHECK(untouched);
}

TEST_CASE("least footprint: three caps measured against the prediction, one byte below refused naming it") {
  const char* stats = std::getenv("PRISM_STATS");
  REQUIRE_MESSAGE((stats != nullptr && std::string(stats) != "0"),
                  "measured allocations need PRISM_STATS=1 (ctest's test_dist_syrk_memory_np4 sets it)");
  const problem p = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 128, 8000);
  context c = one_thread();
  c.set_ranks(world_size());
  const std::size_t least = least_footprint_rank_k(p, c).least_footprint;
  context free = c;
  const std::size_t no_cap = choose_rank_k_ranks(p, free).candidates[0].peak_bytes;
  for (std::size_t cap : {least, least + (no_cap - std::min(no_cap, least)) / 2, std::size_t(-1)}) {
    context cc = one_thread();
    if (cap != std::size_t(-1)) cc.set_max_memory(cap);
    auto L = dist::layout::make(MPI_COMM_WORLD, p, cc);
    CHECK(run_case<double>(operation::syrk, 'U', 'T', 128, 8000, 1.0, 0.0, 3, false, cc) == "");
    const dist::traffic tr = dist::last_traffic();
    CAPTURE(cap);
    CHECK(std::size_t(tr.bytes_allocated) <= L->predicted_peak_bytes());
    if (cap != std::size_t(-1)) CHECK(L->predicted_peak_bytes() <= cap);
  }
  context below = one_thread();
  below.set_max_memory(least - 1);
  try {
    dist::layout::make(MPI_COMM_WORLD, p, below);
    FAIL("a cap one byte below the least footprint was accepted");
  } catch (const plan_error& e) {
    CHECK(std::string(e.what()).find("least footprint: " + std::to_string(least) + " bytes") != std::string::npos);
  }
}

int main(int argc, char** argv) { return prism::test::run_mpi_doctest(argc, argv); }
