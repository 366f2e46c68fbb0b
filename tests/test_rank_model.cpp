// Rank-level planning and the native layout of gemm plans, without MPI: the volume the
// planner picks against COSMA's measured figures and the grid formula, flop balance,
// memory as a hard limit, the layout's bookkeeping, hand-written rank plans. (The schedule
// against a brute-force count: test_schedule.cpp.)
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/bounds.hpp>
#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/plan.hpp>
#include <prism/rank_model.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace prism;

namespace {

context ranks_ctx(int P, std::size_t memory = SIZE_MAX) {
  context c;
  c.set_threads(1).set_ranks(P);
  if (memory != SIZE_MAX) c.set_max_memory(memory);
  return c;
}

double max_mb(const rank_model& m) { return double(m.max_received()) * 8 / 1e6; }

// Every element of every operand is owned by some rank, once (test_schedule.cpp checks
// which, element by element).
void check_bookkeeping(const rank_model& m) {
  const problem& p = m.problem();
  const std::int64_t size[3] = {p.m * p.k, p.k * p.n, p.m * p.n};
  for (operand o : {operand::a, operand::b, operand::c}) {
    std::int64_t total = 0;
    for (int r = 0; r < m.ranks(); ++r) total += m.local_size(o, r);
    CHECK(total == size[int(o)]);
  }
}

}  // namespace

TEST_CASE("'same rank R' shares one local subtree between ranks of equal boxes, and round-trips") {
  const rank_choice c = choose_ranks(problem{scalar_type::d, 'N', 'N', 4096, 4096, 4096}, ranks_ctx(64));
  const plan& p = c.chosen;
  std::size_t same = 0;
  for (const node& nd : p.nodes()) same += nd.same >= 0 ? 1 : 0;
  CHECK(same >= 56);  // 64 ranks, at most 8 box shapes
  CHECK(plan::parse(p.to_string()) == p);
  // A "same rank" must name an earlier rank's subtree of the same extents.
  CHECK_THROWS_AS(plan::parse("prism-plan 2\nproblem d NN 8 8 8\nthreads 1\nranks 2\n"
                              "bfs m rank 4@1r 4@1r\n  same rank 1\n  leaf openblas\n"),
                  plan_error);
  CHECK_THROWS_AS(plan::parse("prism-plan 2\nproblem d NN 8 8 8\nthreads 1\nranks 2\n"
                              "bfs m rank 3@1r 5@1r\n  leaf openblas\n  same rank 0\n"),
                  plan_error);
  CHECK_THROWS_AS(plan::parse("prism-plan 2\nproblem d NN 8 8 8\nthreads 1\nsame rank 0\n"), plan_error);
  const plan two = plan::parse("prism-plan 2\nproblem d NN 8 8 8\nthreads 1\nranks 2\n"
                               "bfs m rank 4@1r 4@1r\n  leaf openblas\n  same rank 0\n");
  CHECK(two.nodes()[2].same == 1);
  CHECK(rank_model(two).max_received() == 8 * 8 / 2);  // the half of B the other rank owns
}

TEST_CASE("planning scales: thousands of ranks plan in well under a second, any rank count plans") {
  // The time is not asserted (timings belong to benchmarks); the plans must exist, cover
  // every rank, stay within 1.1x of the bound and balance flops within 5%.
  for (int P : {1021, 3001, 4096, 12288}) {
    CAPTURE(P);
    const rank_choice c = choose_ranks(problem{scalar_type::d, 'N', 'N', 16384, 16384, 16384}, ranks_ctx(P));
    const rank_model m(c.chosen);
    CHECK(m.ranks() >= P - 64);
    CHECK(m.max_flops() <= 1.05 * m.mean_flops());
    const double bound = bounds::parallel_io_minus_owned(16384, 16384, 16384, P, bounds::unlimited);
    CHECK(double(m.max_received()) <= 1.1 * bound);
  }
}

TEST_CASE("rank plans receive no more than COSMA where P has small factors, and much less at 7 and 13") {
  struct row {
    int P;
    double cube, tall, wide;  // COSMA 2.8.4, MB per rank, counted with a PMPI counter
  };
  const row cosma[] = {{2, 16.78, 0.26, 4.19},  {4, 16.78, 0.39, 4.19}, {7, 28.77, 0.45, 7.21},  {8, 12.58, 0.46, 4.19},
                       {12, 11.19, 0.48, 3.50}, {13, 30.21, 0.49, 7.77}, {16, 10.49, 0.49, 3.15}};
  for (const row& r : cosma) {
    CAPTURE(r.P);
    const problem cube{scalar_type::d, 'N', 'N', 2048, 2048, 2048}, tall{scalar_type::d, 'N', 'N', 256, 256, 262144},
        wide{scalar_type::d, 'N', 'N', 4096, 4096, 256};
    const rank_model mc(make_plan(cube, ranks_ctx(r.P))), mt(make_plan(tall, ranks_ctx(r.P))), mw(make_plan(wide, ranks_ctx(r.P)));
    // COSMA's figures are rounded to 10 kB.
    CHECK(max_mb(mt) <= r.tall + 0.005);
    if (r.P == 7 || r.P == 13) {
      CHECK(max_mb(mc) <= 0.7 * r.cube);
      CHECK(max_mb(mw) <= 0.7 * r.wide);
      for (const rank_model* m : {&mc, &mw}) {
        CHECK(m->ranks() == r.P);  // nobody sits out: that is what balance needs here
        for (int q = 0; q < r.P; ++q) CHECK(std::fabs(m->cost(q).flops / m->mean_flops() - 1) <= 0.05);
      }
    } else {
      CHECK(max_mb(mc) <= r.cube + 0.005);
      CHECK(max_mb(mw) <= r.wide + 0.005);
    }
    check_bookkeeping(mc);
  }
}

TEST_CASE("a pm x pn x pk grid receives the grid formula exactly") {
  // m2 n2 k2 over 64 x 48 x 40: W = mk/(pm pk)(1 - 1/pn) + kn/(pk pn)(1 - 1/pm) + mn/(pm pn)(1 - 1/pk)
  const plan p = plan::parse(
      "prism-plan 2\nproblem d NN 64 48 40\nthreads 1\nranks 8\n"
      "bfs m rank 32@4r 32@4r\n"
      "  bfs n rank 24@2r 24@2r\n    bfs k rank 20@1r 20@1r\n      leaf openblas\n      leaf openblas\n"
      "    bfs k rank 20@1r 20@1r\n      leaf openblas\n      leaf openblas\n"
      "  bfs n rank 24@2r 24@2r\n    bfs k rank 20@1r 20@1r\n      leaf openblas\n      leaf openblas\n"
      "    bfs k rank 20@1r 20@1r\n      leaf openblas\n      leaf openblas\n");
  const rank_model m(p);
  const std::int64_t W = 64 * 40 / 4 / 2 + 40 * 48 / 4 / 2 + 64 * 48 / 4 / 2;
  for (int r = 0; r < 8; ++r) CHECK(m.cost(r).received_total() == W);
  CHECK(m.grid() == "m2 n2 k2");
  check_bookkeeping(m);
}

TEST_CASE("hand-written 3-part and 7-part rank plans parse, validate and have a layout") {
  const plan three = plan::parse(
      "prism-plan 2\nproblem z TC 30 20 61\nthreads 1\nranks 3\n"
      "bfs k rank 20@1r 20@1r 21@1r\n  leaf openblas\n  leaf openblas\n  leaf openblas\n");
  const rank_model m3(three);
  CHECK(m3.grid() == "k3");
  // A k-cut moves only C: each rank receives its third of C from the two others.
  std::int64_t c_in = 0;
  for (int r = 0; r < 3; ++r) {
    c_in += m3.cost(r).received[int(operand::c)];
    CHECK(m3.cost(r).received[0] == 0);
  }
  CHECK(c_in == 2 * 30 * 20);
  check_bookkeeping(m3);
  const plan seven = plan::parse(
      "prism-plan 2\nproblem d NN 70 50 40\nthreads 1\nranks 7\n"
      "bfs m rank 30@3r 40@4r\n  bfs n rank 17@1r 17@1r 16@1r\n    leaf openblas\n    leaf openblas\n    leaf openblas\n"
      "  bfs n rank 25@2r 25@2r\n    bfs m rank 20@1r 20@1r\n      leaf openblas\n      leaf openblas\n"
      "    bfs m rank 20@1r 20@1r\n      leaf openblas\n      leaf openblas\n");
  const rank_model m7(seven);
  CHECK(m7.ranks() == 7);
  CHECK(m7.grid() == "m(3r: n3 + 4r: n2 m2)");
  check_bookkeeping(m7);
  CHECK(plan::parse(seven.to_string()) == seven);
}

TEST_CASE("a rank-level dfs below a rank-level bfs is refused by the model") {
  const plan p = plan::parse(
      "prism-plan 2\nproblem d NN 8 8 8\nthreads 1\nranks 2\n"
      "bfs m rank 4@1r 4@1r\n  leaf openblas\n  leaf openblas\n");
  CHECK_NOTHROW(rank_model{p});
  CHECK_THROWS_AS(rank_model(plan::parse("prism-plan 2\nproblem d NN 8 8 8\nthreads 1\nranks 4\n"
                                         "bfs m rank 4@2r 4@2r\n  dfs n rank 4 4\n    bfs k rank 4@1r 4@1r\n      leaf openblas\n      leaf openblas\n"
                                         "    bfs k rank 4@1r 4@1r\n      leaf openblas\n      leaf openblas\n"
                                         "  bfs n rank 4@1r 4@1r\n    leaf openblas\n    leaf openblas\n")),
                  plan_error);
  // A rank-level dfs inside a one-rank part: that part is the rank's local subtree.
  CHECK_THROWS_WITH_AS(rank_model(plan::parse("prism-plan 2\nproblem d NN 12 8 9\nthreads 1\nranks 2\n"
                                              "bfs m rank 6@1r 6@1r\n  dfs k rank 4 5\n    leaf openblas\n    leaf openblas\n"
                                              "  dfs k rank 4 5\n    leaf openblas\n    leaf openblas\n")),
                       doctest::Contains("a rank-level step over one rank"), plan_error);
}

TEST_CASE("operands beyond the rank level's 64-bit counts are refused by name, not counted wrong") {
  const std::int64_t big = std::int64_t(1) << 32;  // A alone: 2^67 bytes of doubles
  const auto beyond = doctest::Contains("pass the rank level's exact 64-bit counts");
  CHECK_THROWS_WITH_AS(choose_ranks(problem{scalar_type::d, 'N', 'N', big, big, big}, ranks_ctx(2)), beyond, plan_error);
  CHECK_THROWS_WITH_AS(least_footprint_ranks(problem{scalar_type::d, 'N', 'N', big, big, 1}, ranks_ctx(4)), beyond, plan_error);
  const problem gram = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', big, big);
  CHECK_THROWS_WITH_AS(choose_rank_k_ranks(gram, ranks_ctx(3)), beyond, plan_error);
  CHECK_THROWS_WITH_AS(rank_model(gram, rank_k_scheme::parse("tbd2{0,1}")), beyond, plan_error);
  // An extent that times the rank count passes 2^62, however thin the operands: 2^42 + 1 over
  // 2^20 ranks (the same extent over 2 ranks is counted, and refused only for memory).
  const problem thin{scalar_type::d, 'N', 'N', 2, 2, (std::int64_t(1) << 42) + 1};
  CHECK_THROWS_WITH_AS(choose_ranks(thin, ranks_ctx(1 << 20)), beyond, plan_error);
  CHECK_THROWS_WITH_AS(choose_ranks(thin, ranks_ctx(2)), doctest::Contains("no rank plan of"), plan_error);
  // A hand-written plan is held to it as well (leaves within the 32-bit BLAS range, B 2^65 bytes).
  CHECK_THROWS_WITH_AS(rank_model(plan::parse("prism-plan 2\nproblem d NN 2147483647 2147483647 2147483647\nthreads 1\n"
                                              "ranks 2\nbfs m rank 1073741824@1r 1073741823@1r\n  leaf openblas\n"
                                              "  leaf openblas\n")),
                       beyond, plan_error);
}

TEST_CASE("memory per rank is a hard limit: rank-level dfs phases when the best tree does not fit") {
  const problem p{scalar_type::d, 'N', 'N', 2048, 2048, 2048};
  const rank_choice free = choose_ranks(p, ranks_ctx(4));
  const std::size_t roomy = rank_model(free.chosen).max_peak_bytes();
  const std::size_t cap = roomy * 3 / 5;
  const rank_choice tight = choose_ranks(p, ranks_ctx(4, cap));
  const rank_model m(tight.chosen);
  CHECK(m.max_peak_bytes() <= cap);
  CHECK((m.phases() > 1 || m.grid() != rank_model(free.chosen).grid()));
  // The matrices alone (3 x 32 MiB over 4 ranks = 25 MB) cannot fit in 20 MB: refused
  // without a search (no least footprint is named), by that floor.
  std::string what;
  try {
    choose_ranks(p, ranks_ctx(4, 20'000'000));
  } catch (const plan_error& e) {
    what = e.what();
  }
  CHECK(what.find("no plan holds less than 25165824 bytes per rank") != std::string::npos);
  CHECK(what.find("least footprint") == std::string::npos);
}

TEST_CASE("forced phases: a cap that no single-phase tree meets gives rank dfs steps, still exact and balanced") {
  const problem p{scalar_type::d, 'N', 'N', 512, 512, 4096};
  const std::size_t owned = 8 * (512 * 4096 * 2 + 512 * 512) / 4;  // A, B, C over 4 ranks
  const rank_choice c = choose_ranks(p, ranks_ctx(4, owned + owned / 2));
  const rank_model m(c.chosen);
  CHECK(m.phases() >= 2);
  CHECK(c.chosen.nodes()[0].kind == step_kind::dfs);
  CHECK(c.chosen.nodes()[0].where == level::rank);
  CHECK(m.max_peak_bytes() <= owned + owned / 2);
  CHECK(c.reason.find("dfs phases") != std::string::npos);
  check_bookkeeping(m);
}

TEST_CASE("ranks sit out only when that models faster") {
  const rank_choice tiny = choose_ranks(problem{scalar_type::d, 'N', 'N', 1, 1, 1}, ranks_ctx(4));
  CHECK(tiny.chosen.ranks() == 1);  // nothing to share
  CHECK(tiny.reason.find("sit out") != std::string::npos);
  const rank_choice big = choose_ranks(problem{scalar_type::d, 'N', 'N', 2048, 2048, 2048}, ranks_ctx(13));
  CHECK(big.chosen.ranks() == 13);
  // A product with fewer elements than 3/4 of many ranks plans on fewer: 8^3 has no box for
  // each of 768 of 1,024 ranks, 1^3 one box for one of 5,000.
  const rank_choice small = choose_ranks(problem{scalar_type::d, 'N', 'N', 8, 8, 8}, ranks_ctx(1024));
  CHECK(small.chosen.ranks() <= 512);
  check_bookkeeping(rank_model(small.chosen));
  CHECK(choose_ranks(problem{scalar_type::d, 'N', 'N', 1, 1, 1}, ranks_ctx(5000)).chosen.ranks() == 1);
  // With a very slow network the volume decides; the chosen tree is still the least modelled.
  context slow = ranks_ctx(13);
  slow.set_rank_rates(40e9, 1e6);
  const rank_choice s = choose_ranks(problem{scalar_type::d, 'N', 'N', 2048, 2048, 2048}, slow);
  for (const rank_candidate& c : s.candidates) CHECK(s.candidates[0].seconds <= c.seconds + 1e-12);
}

TEST_CASE("one rank: no exchange, the whole of each operand owned") {
  const rank_model m(make_plan(problem{scalar_type::s, 'T', 'N', 33, 17, 65}, ranks_ctx(1)));
  CHECK(m.ranks() == 1);
  CHECK(m.max_received() == 0);
  CHECK(m.local_size(operand::a, 0) == 33 * 65);
  check_bookkeeping(m);
}

TEST_CASE("the rank report prints a slab tree's whole grid, each line whole, however long the grid") {
  // 100000 x 100000 x 5000 on 3072 ranks: a slab tree of 40 parts, a grid of ~600 characters.
  const rank_choice c = choose_ranks(problem{scalar_type::d, 'N', 'N', 100000, 100000, 5000}, ranks_ctx(3072));
  const std::string grid = rank_model(c.chosen).grid();
  std::ostringstream os;
  print_rank_report(os, c);
  const std::string text = os.str();
  CHECK(text.find("# rank level: 3072 ranks given, " + std::to_string(c.chosen.ranks()) + " used; grid " + grid + "\n# why: ") !=
        std::string::npos);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    CAPTURE(line);
    CHECK(line.rfind("# ", 0) == 0);
    CHECK(line.find("# ", 1) == std::string::npos);  // no second line run into this one
  }
}
