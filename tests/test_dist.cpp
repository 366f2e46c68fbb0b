// prism::dist under mpiexec (ctest runs it on 1..8 ranks, oversubscribed): random shapes,
// all four types, N/T/C, alpha and beta in {0, 1, -1, other}, NaN in C with beta = 0,
// memory caps forcing rank-level DFS phases, hand-written 3- and 7-part rank plans,
// arguments that disagree between ranks, and the byte counter against the prediction.
// Every rank runs every case (the calls are collective); rank 0 checks C, all ranks CHECK
// its verdict.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <prism/dist.hpp>
#include <prism/error.hpp>

#include "environment/environment.hpp"
#include "support/freed_comm_layout.hpp"
#include "support/mpi_doctest.hpp"
#include "support/reference.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace prism;
using prism::test::random_matrix;

namespace {

using prism::test::one_thread;
using prism::test::world_rank;
using prism::test::world_size;

// Runs C = alpha op(A) op(B) + beta C0 through a layout (scatter, gemm, gather) and checks
// it on rank 0 against the long-double reference; returns rank 0's verdict on every rank
// ("" when it holds). Also checks this rank's byte counts against the model.
template <class T>
std::string run_case(const std::shared_ptr<const dist::layout>& L, T alpha, T beta, std::uint64_t seed, bool nan_c) {
  const problem& p = L->source().problem();
  const rank_model& m = L->model();
  std::mt19937_64 gen(seed);  // the same operands on every rank; rank 0's are scattered
  const std::int64_t lda = std::max<std::int64_t>(1, L->rows(operand::a)), ldb = std::max<std::int64_t>(1, L->rows(operand::b)),
                     ldc = std::max<std::int64_t>(1, p.m);
  auto A = random_matrix<T>(L->rows(operand::a), L->cols(operand::a), lda, gen);
  auto B = random_matrix<T>(L->rows(operand::b), L->cols(operand::b), ldb, gen);
  auto C0 = random_matrix<T>(p.m, p.n, ldc, gen);
  if (nan_c)
    for (auto& x : C0) x = T(std::numeric_limits<test::real_t<T>>::quiet_NaN());
  dist::matrix<T> dA(L, operand::a), dB(L, operand::b), dC(L, operand::c);
  dA.scatter(0, A.data(), lda);
  dB.scatter(0, B.data(), ldb);
  dC.scatter(0, C0.data(), ldc);
  dist::gemm<T>(MPI_COMM_WORLD, L->source(), alpha, dA, dB, beta, dC, one_thread());
  // The counter is the multiply's own: exactly the model's messages for this rank.
  const dist::traffic tr = dist::last_traffic();
  if (L->active() && p.m > 0 && p.n > 0 && p.k > 0 && alpha != T(0)) {
    CHECK(tr.bytes_received == m.cost(L->rank()).received_total() * std::int64_t(sizeof(T)));
    CHECK(tr.messages_received == m.messages(L->rank()));
  } else {
    CHECK(tr.bytes_received == 0);
  }
  std::vector<T> C(std::size_t(ldc * std::max<std::int64_t>(1, p.n)), T(-777));
  dC.gather(0, C.data(), ldc);
  std::string verdict;
  if (L->rank() == 0) {
    const auto ref = test::reference_gemm<T>(p.transa, p.transb, p.m, p.n, p.k, alpha, A.data(), lda, B.data(), ldb,
                                             beta, C0.data(), ldc);
    verdict = test::check_bound<T>(ref, p.m, p.n, p.k, C.data(), ldc);
  }
  int len = int(verdict.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  verdict.resize(std::size_t(len));
  MPI_Bcast(verdict.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  return verdict;
}

template <class T>
T pick_scalar(int which) {
  switch (which) {
    case 0: return T(0);
    case 1: return T(1);
    case 2: return T(-1);
    default:
      if constexpr (test::is_complex_v<T>) return T(0.75, -0.5);
      else return T(0.75);
  }
}

template <class T>
void sweep(std::uint64_t seed, int cases) {
  std::mt19937_64 gen(seed);  // the same draws on every rank
  const std::int64_t sizes[] = {0, 1, 2, 3, 5, 7, 13, 17, 31, 40, 64, 97};
  const char trans[] = {'N', 'T', 'C'};
  for (int c = 0; c < cases; ++c) {
    problem p{scalar_type_of<T>(), trans[gen() % 3], trans[gen() % 3], sizes[gen() % 12], sizes[gen() % 12],
              sizes[gen() % 12]};
    if (c % 4 == 0) p.m = 1 + std::int64_t(gen() % 150), p.n = 1 + std::int64_t(gen() % 90), p.k = 1 + std::int64_t(gen() % 300);
    const T alpha = pick_scalar<T>(int(gen() % 4)), beta = pick_scalar<T>(int(gen() % 4));
    const bool nan_c = beta == T(0) && gen() % 2 == 0;
    CAPTURE(p.m);
    CAPTURE(p.n);
    CAPTURE(p.k);
    CAPTURE(p.transa);
    CAPTURE(p.transb);
    auto L = dist::layout::make(MPI_COMM_WORLD, p, one_thread());
    CHECK(run_case<T>(L, alpha, beta, seed + std::uint64_t(c), nan_c) == "");
  }
}

}  // namespace

TEST_CASE("random shapes, four types, N/T/C, alpha and beta in {0, 1, -1, other}") {
  sweep<double>(11, 40);
  sweep<float>(12, 16);
  sweep<std::complex<float>>(13, 16);
  sweep<std::complex<double>>(14, 16);
}

TEST_CASE("a memory cap below the free plan's footprint changes the plan, and it still computes right") {
  const problem p{scalar_type::d, 'N', 'T', 96, 80, 1200};
  context c = one_thread();
  c.set_ranks(world_size());
  const std::size_t least = rank_model(least_footprint_ranks(p, c).chosen).max_peak_bytes();
  const std::size_t roomy = rank_model(choose_ranks(p, c).chosen).max_peak_bytes();
  if (least == roomy) {  // one rank: every block is used where it lies, nothing to trade
    CHECK(world_size() == 1);
    return;
  }
  const std::size_t cap = least + (roomy - least) / 2;
  context capped = one_thread();
  capped.set_max_memory(cap);
  auto L = dist::layout::make(MPI_COMM_WORLD, p, capped);
  CHECK(L->model().max_peak_bytes() <= cap);
  CHECK(L->model().max_peak_bytes() < roomy);
  CHECK(run_case<double>(L, 1.5, -0.5, 99, false) == "");
  CHECK(run_case<double>(L, 1.0, 0.0, 98, true) == "");
}

TEST_CASE("memory caps from the least footprint up: measured <= predicted <= cap; one byte below is refused by name") {
  const problem p{scalar_type::d, 'T', 'N', 160, 144, 600};
  context c = one_thread();
  c.set_ranks(world_size());
  const std::size_t least = rank_model(least_footprint_ranks(p, c).chosen).max_peak_bytes();
  const std::size_t roomy = rank_model(choose_ranks(p, c).chosen).max_peak_bytes();
  CHECK(least <= roomy);
  // dist::gemm measures its own memory under PRISM_STATS, which prism reads once per process:
  // the test hands it the environment again after the change.
  ::setenv("PRISM_STATS", "1", 1);
  prism::detail::set_process_environment(prism::detail::read_environment());
  for (const std::size_t cap : {least, (least + roomy) / 2, roomy}) {
    CAPTURE(cap);
    context capped = one_thread();
    capped.set_max_memory(cap);
    auto L = dist::layout::make(MPI_COMM_WORLD, p, capped);
    CHECK(run_case<double>(L, 1.25, 0.5, 7, false) == "");
    if (L->active()) {
      const std::size_t predicted = L->model().cost(L->rank()).peak_bytes();
      CHECK(dist::last_traffic().bytes_allocated > 0);
      CHECK(std::size_t(dist::last_traffic().bytes_allocated) <= predicted);
      CHECK(predicted <= cap);
    }
  }
  ::unsetenv("PRISM_STATS");
  prism::detail::set_process_environment(prism::detail::read_environment());
  context tight = one_thread();
  tight.set_max_memory(least - 1);
  std::string what;
  try {
    dist::layout::make(MPI_COMM_WORLD, p, tight);
  } catch (const plan_error& e) {
    what = e.what();
  }
  // Named by the least footprint, or, below A, B and C spread over the ranks (one rank:
  // the least footprint is just that), by that floor, unsearched.
  const std::int64_t P = world_size();
  const std::size_t floor = sizeof(double) * std::size_t((p.m * p.k + p.k * p.n + p.m * p.n + P - 1) / P);
  CHECK(least >= floor);
  if (least - 1 < floor)
    CHECK(what.find("; no plan holds less than " + std::to_string(floor) + " bytes per rank") != std::string::npos);
  else
    CHECK(what.find("the least footprint is " + std::to_string(least) + " bytes per rank (1 bytes more)") != std::string::npos);
}

TEST_CASE("the library's duplicate of a communicator is freed with its last layout once the user frees it") {
  const std::size_t before = live_dups.size();
  const problem p{scalar_type::d, 'N', 'T', 37, 29, 41};
  MPI_Comm comm = MPI_COMM_NULL;
  REQUIRE(PMPI_Comm_dup(MPI_COMM_WORLD, &comm) == MPI_SUCCESS);  // the user's, uncounted
  {
    auto L = dist::layout::make(comm, p, one_thread());
    CHECK(live_dups.size() == before + 1);
    dist::matrix<double> A(L, operand::a), B(L, operand::b), C(L, operand::c);
    A.fill([](std::int64_t i, std::int64_t j) { return double((i + 2 * j) % 5); });
    B.fill([](std::int64_t i, std::int64_t j) { return double((3 * i + j) % 4); });
    CHECK(dist::layout::make(comm, p, one_thread()) == L);  // cached: no second duplicate
    CHECK(live_dups.size() == before + 1);
    PMPI_Comm_free(&comm);  // the matrices still compute on the library's duplicate
    CHECK(live_dups.size() == before + 1);
    dist::gemm(MPI_COMM_WORLD, p, 1.0, A, B, 0.0, C, one_thread());  // congruent with the layout's
    // The counts are the rank's (its process's), whichever thread reads them.
    const dist::traffic here = dist::last_traffic();
    dist::traffic there;
    std::thread([&] { there = dist::last_traffic(); }).join();
    CHECK(here.seconds > 0);
    CHECK(there.seconds == here.seconds);
    CHECK(there.bytes_received == here.bytes_received);
    // Exact integers: C(i, j) = sum over l of A(i, l) B(j, l).
    C.for_each([&](std::int64_t i, std::int64_t j, double& v) {
      double want = 0;
      for (std::int64_t l = 0; l < p.k; ++l) want += double((i + 2 * l) % 5) * double((3 * j + l) % 4);
      CHECK(v == want);
    });
  }
  CHECK(live_dups.size() == before);  // the last layout gone: the duplicate freed
}

TEST_CASE("a duplicate whose last layout goes on a worker thread is freed on the main thread") {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  const bool any_thread = level == MPI_THREAD_MULTIPLE;  // (mpi_doctest asks for FUNNELED)
  const problem p{scalar_type::d, 'N', 'N', 23, 19, 17};
  test::layout_on_freed_comm x(p, one_thread());
  const MPI_Comm dup = x.dup;
  const int off_main = frees_off_main;
  std::thread([held = std::move(x.layout), a = std::move(x.matrix)]() mutable {
    a.reset();
    held.reset();  // the last holder: not freed here unless this thread may call MPI
  }).join();
  CHECK(frees_off_main == off_main + (any_thread ? 1 : 0));
  CHECK((std::find(live_dups.begin(), live_dups.end(), dup) != live_dups.end()) == !any_thread);
  const std::size_t live = live_dups.size();
  dist::layout::make(MPI_COMM_WORLD, p, one_thread());  // the main thread's next call frees it
  CHECK(frees_off_main == off_main + (any_thread ? 1 : 0));
  CHECK(live_dups.size() == live - (any_thread ? 0 : 1));
  CHECK(std::find(live_dups.begin(), live_dups.end(), dup) == live_dups.end());
}

TEST_CASE("hand-written 3-part and 7-part rank plans run") {
  const plan three = plan::parse(
      "prism-plan 2\nproblem z NC 30 20 61\nthreads 1\nranks 3\n"
      "bfs k rank 20@1r 20@1r 21@1r\n  leaf openblas\n  leaf openblas\n  leaf openblas\n");
  const plan seven = plan::parse(
      "prism-plan 2\nproblem d TN 70 50 40\nthreads 1\nranks 7\n"
      "bfs m rank 30@3r 40@4r\n  bfs n rank 17@1r 17@1r 16@1r\n    leaf openblas\n    leaf openblas\n    leaf openblas\n"
      "  bfs n rank 25@2r 25@2r\n    bfs m rank 20@1r 20@1r\n      leaf openblas\n      leaf openblas\n"
      "    bfs m rank 20@1r 20@1r\n      leaf openblas\n      leaf openblas\n");
  if (world_size() >= 3) {
    auto L = dist::layout::make(MPI_COMM_WORLD, three, one_thread());
    CHECK(run_case<std::complex<double>>(L, {1, 2}, {0.5, 0}, 7, false) == "");
  }
  if (world_size() >= 7) {
    auto L = dist::layout::make(MPI_COMM_WORLD, seven, one_thread());
    CHECK(run_case<double>(L, -1.0, 2.0, 8, false) == "");
  } else {  // more ranks than the communicator has: every rank refuses
    CHECK_THROWS_AS(dist::layout::make(MPI_COMM_WORLD, seven, one_thread()), plan_error);
  }
}

TEST_CASE("ranks sit out when there is nothing to share, and still agree") {
  auto L = dist::layout::make(MPI_COMM_WORLD, problem{scalar_type::d, 'N', 'N', 1, 1, 1}, one_thread());
  CHECK(L->source().ranks() == 1);
  CHECK(run_case<double>(L, 2.0, 3.0, 5, false) == "");
}

TEST_CASE("arguments that differ between ranks: every rank errors, none hangs, C untouched") {
  const int last = world_size() - 1;
  if (last == 0) return;  // nothing can disagree on one rank
  const bool odd = world_rank() == last;
  // The shape.
  try {
    (void)dist::layout::make(MPI_COMM_WORLD, problem{scalar_type::d, 'N', 'N', odd ? 65 : 64, 32, 48}, one_thread());
    FAIL("no error");
  } catch (const invalid_argument& e) {
    const std::string what = e.what();
    CHECK(e.name() == "m");
    CHECK(what.find("rank " + std::to_string(last)) != std::string::npos);
  }
  // alpha, in gemm: C keeps its values.
  auto L = dist::layout::make(MPI_COMM_WORLD, problem{scalar_type::d, 'N', 'N', 64, 32, 48}, one_thread());
  dist::matrix<double> A(L, operand::a), B(L, operand::b), C(L, operand::c);
  A.fill([](std::int64_t i, std::int64_t j) { return double(i + j); });
  B.fill([](std::int64_t i, std::int64_t j) { return double(i - j); });
  C.fill([](std::int64_t i, std::int64_t j) { return double(i * j); });
  const std::vector<double> before(C.data(), C.data() + C.size());
  try {
    dist::gemm<double>(MPI_COMM_WORLD, L->source(), odd ? 2.0 : 1.0, A, B, 0.0, C, one_thread());
    FAIL("no error");
  } catch (const invalid_argument& e) {
    CHECK(e.name() == "alpha");
    CHECK(std::string(e.what()).find("rank " + std::to_string(last)) != std::string::npos);
    CHECK(std::string(e.what()).find("rank 0 passed 1, rank " + std::to_string(last) + " passed 2") != std::string::npos);
  }
  CHECK(std::vector<double>(C.data(), C.data() + C.size()) == before);
  // A problem that is not the layout's, on one rank.
  CHECK_THROWS_AS(dist::gemm<double>(MPI_COMM_WORLD, problem{scalar_type::d, 'N', 'N', 64, 32, odd ? 47 : 48}, 1.0, A,
                                     B, 0.0, C, one_thread()),
                  invalid_argument);
  CHECK(std::vector<double>(C.data(), C.data() + C.size()) == before);
  // Another communicator on the last rank only: every rank hears of it.
  try {
    dist::gemm<double>(odd ? MPI_COMM_SELF : MPI_COMM_WORLD, L->source(), 1.0, A, B, 0.0, C, one_thread());
    FAIL("no error");
  } catch (const invalid_argument& e) {
    CHECK(std::string(e.what()).find("comm is not the communicator of A's layout") != std::string::npos);
  }
  CHECK(std::vector<double>(C.data(), C.data() + C.size()) == before);
  // A bad leading dimension at the root of a scatter: every rank hears of it.
  std::vector<double> full(64 * 48, 1.0);
  CHECK_THROWS_AS(A.scatter(0, full.data(), world_rank() == 0 ? 10 : 64), invalid_argument);
  // A root that differs between ranks.
  CHECK_THROWS_AS(A.scatter(odd ? 1 : 0, full.data(), 64), invalid_argument);
}

TEST_CASE("bad input on one rank only: every rank errors, none hangs, C untouched") {
  const int last = world_size() - 1;
  if (last == 0) return;
  const bool odd = world_rank() == last;
  // An invalid hand-written plan on one rank: every rank names it (it used to throw there
  // alone and leave the others waiting).
  auto L = dist::layout::make(MPI_COMM_WORLD, problem{scalar_type::d, 'N', 'N', 64, 32, 48}, one_thread());
  try {
    (void)dist::layout::make(MPI_COMM_WORLD, odd ? plan{} : L->source(), one_thread());
    FAIL("no error");
  } catch (const plan_error& e) {  // the rank that passed it
    CHECK(odd);
    CHECK(std::string(e.what()).find("a plan needs at least one node") != std::string::npos);
  } catch (const invalid_argument& e) {  // the others, naming it
    CHECK(!odd);
    CHECK(std::string(e.what()).find("rank " + std::to_string(last) + ") rejected the call") != std::string::npos);
  }
  // A plan that validates but that the rank level refuses (a rank-level dfs inside a one-rank
  // part), and a scheme that cannot lay out its problem, each on one rank: the same.
  const plan inside = plan::parse("prism-plan 2\nproblem d NN 64 32 48\nthreads 1\nranks 2\nbfs m rank 32@1r 32@1r\n"
                                  "  dfs k rank 24 24\n    leaf openblas\n    leaf openblas\n"
                                  "  dfs k rank 24 24\n    leaf openblas\n    leaf openblas\n");
  const problem thin = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 8, 1);
  const auto one_rank_only = [&](const auto& make, const char* why) {
    try {
      (void)make();
      FAIL("no error");
    } catch (const plan_error& e) {
      CHECK(odd);
      CHECK(std::string(e.what()).find(why) != std::string::npos);
    } catch (const invalid_argument& e) {
      CHECK(!odd);
      CHECK(std::string(e.what()).find("rank " + std::to_string(last) + ") rejected the call") != std::string::npos);
    }
  };
  one_rank_only([&] { return dist::layout::make(MPI_COMM_WORLD, odd ? inside : L->source(), one_thread()); },
                "a rank-level step over one rank");
  one_rank_only([&] { return dist::layout::make(MPI_COMM_WORLD, thin, rank_k_scheme::parse(odd ? "k2" : "1"), one_thread()); },
                "k slices");
  // A scheme over more ranks than the communicator, on every rank: each passed it, so each
  // gets the plan_error that says why.
  CHECK_THROWS_WITH_AS(dist::layout::make(MPI_COMM_WORLD, rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 64, 64),
                                          rank_k_scheme::parse("k" + std::to_string(2 * world_size())), one_thread()),
                       doctest::Contains("the scheme spans"), plan_error);
  dist::matrix<double> A(L, operand::a), B(L, operand::b), C(L, operand::c);
  C.fill([](std::int64_t i, std::int64_t j) { return double(i * j); });
  const std::vector<double> before(C.data(), C.data() + C.size());
  // A moved-from matrix on one rank.
  dist::matrix<double> A2(L, operand::a), gone(std::move(A2));
  CHECK_THROWS_AS(dist::gemm<double>(MPI_COMM_WORLD, L->source(), 1.0, odd ? A2 : A, B, 0.0, C, one_thread()),
                  invalid_argument);
  CHECK(std::vector<double>(C.data(), C.data() + C.size()) == before);
  CHECK_THROWS_AS(dist::matrix<double>(nullptr, operand::a), invalid_argument);
  // A scatter into another layout's matrix on one rank.
  auto other = dist::layout::make(MPI_COMM_WORLD, problem{scalar_type::d, 'N', 'N', 64, 32, 40}, one_thread());
  dist::matrix<double> Ao(other, operand::a);
  std::vector<double> full(64 * 48, 1.0);
  CHECK_THROWS_AS((odd ? Ao : A).scatter(0, full.data(), 64), invalid_argument);
  // A moved-from matrix's own calls: a prism::error, not a crash (no communicator to tell
  // the others through: every rank here makes the same call).
  CHECK_THROWS_WITH_AS(A2.scatter(0, full.data(), 64), doctest::Contains("has no layout"), prism::error);
  CHECK_THROWS_WITH_AS(A2.gather(0, full.data(), 64), doctest::Contains("has no layout"), prism::error);
  CHECK_THROWS_AS((void)A2.rows(), prism::error);
  CHECK_THROWS_AS(A2.fill([](std::int64_t, std::int64_t) { return 0.0; }), prism::error);
  // A moved-from matrix on one rank whose layouts were made on a communicator since freed,
  // the call made on a congruent one: every rank hears of it over the layouts' own.
  MPI_Comm user = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &user);
  auto Lu = dist::layout::make(user, problem{scalar_type::d, 'N', 'N', 64, 32, 48}, one_thread());
  MPI_Comm_free(&user);
  dist::matrix<double> Au(Lu, operand::a), Bu(Lu, operand::b), Cu(Lu, operand::c), Au2(Lu, operand::a), Au3(std::move(Au2));
  CHECK_THROWS_AS(dist::gemm<double>(MPI_COMM_WORLD, Lu->source(), 1.0, odd ? Au2 : Au, Bu, 0.0, Cu, one_thread()),
                  invalid_argument);
  // A from a layout on another communicator on one rank (B and C as everywhere): every rank
  // hears of it, over B's and C's communicator.
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  auto Ld = dist::layout::make(dup, problem{scalar_type::d, 'N', 'N', 64, 32, 48}, one_thread());
  dist::matrix<double> Ad(Ld, operand::a);
  CHECK_THROWS_WITH_AS(dist::gemm<double>(MPI_COMM_WORLD, L->source(), 1.0, odd ? Ad : A, B, 0.0, C, one_thread()),
                       doctest::Contains("one layout"), invalid_argument);
  // A and B on two other communicators on one rank, no two alike there: C's is the one the
  // call's comm names, so that rank agrees over it with the others.
  MPI_Comm dup2 = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup2);
  {
    auto Ld2 = dist::layout::make(dup2, problem{scalar_type::d, 'N', 'N', 64, 32, 48}, one_thread());
    dist::matrix<double> Bd(Ld2, operand::b);
    CHECK_THROWS_WITH_AS(dist::gemm<double>(MPI_COMM_WORLD, L->source(), 1.0, odd ? Ad : A, odd ? Bd : B, 0.0, C, one_thread()),
                         doctest::Contains("one layout"), invalid_argument);
  }
  MPI_Comm_free(&dup2);
  CHECK(std::vector<double>(C.data(), C.data() + C.size()) == before);
  Ld.reset();
  MPI_Comm_free(&dup);
  // A rank-k problem built by hand that rank_k_problem would refuse: every rank, at the layout.
  problem bad = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 6, 4);
  bad.uplo = 'Q';
  CHECK_THROWS_WITH_AS(dist::layout::make(MPI_COMM_WORLD, bad, one_thread()), doctest::Contains("uplo"), invalid_argument);
  bad = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 6, 4);
  bad.m = 3;
  CHECK_THROWS_WITH_AS(dist::layout::make(MPI_COMM_WORLD, bad, one_thread()), doctest::Contains("m = n"), invalid_argument);
  // Settings that differ between ranks (threads here; on a cluster, ranks per node or the
  // machine): rank 0 plans with its own, and the layout is made and computes.
  context mine = one_thread();
  if (odd) mine.set_threads(2);
  auto Ls = dist::layout::make(MPI_COMM_WORLD, problem{scalar_type::d, 'N', 'N', 40, 24, 32}, mine);
  dist::matrix<double> As(Ls, operand::a), Bs(Ls, operand::b), Cs(Ls, operand::c);
  As.fill([](std::int64_t i, std::int64_t j) { return double((i + 2 * j) % 5); });
  Bs.fill([](std::int64_t i, std::int64_t j) { return double((3 * i + j) % 7); });
  dist::gemm<double>(MPI_COMM_WORLD, Ls->source(), 1.0, As, Bs, 0.0, Cs, mine);
  Cs.for_each([](std::int64_t i, std::int64_t j, double& v) {
    double want = 0;
    for (std::int64_t l = 0; l < 32; ++l) want += double((i + 2 * l) % 5) * double((3 * l + j) % 7);
    CHECK(v == want);
  });
  // Fewer threads than rank 0 plans for: refused, on every rank (none waits).
  context fewer = one_thread();
  if (world_rank() == 0) fewer.set_threads(2);
  CHECK_THROWS_AS((void)dist::layout::make(MPI_COMM_WORLD, problem{scalar_type::d, 'N', 'N', 512, 512, 512}, fewer),
                  prism::error);
}

int main(int argc, char** argv) { return prism::test::run_mpi_doctest(argc, argv); }
