// tests/test_plan.cpp — plans as values: text round trip, validation, hand-written plans
// (k-BFS, k-DFS, uneven shares, deep plans on tiny matrices), the memory cap measured at
// the workspace pool, and steady-state reuse of temporaries. Internal: reads lib/runtime.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "runtime/runtime.hpp"
#include "support/reference.hpp"

using namespace prism;
using prism::test::check_bound;
using prism::test::random_matrix;
using prism::test::reference_gemm;

namespace {

// Runs plan p on random operands and checks the bound; returns the pool's counters.
template <class T>
detail::workspace_pool::stats run_and_check(const plan& p, const context& ctx, unsigned seed = 1) {
  const auto& pr = p.problem();
  std::mt19937_64 gen(seed);
  const std::int64_t ra = pr.transa == 'N' ? pr.m : pr.k, ca = pr.transa == 'N' ? pr.k : pr.m;
  const std::int64_t rb = pr.transb == 'N' ? pr.k : pr.n, cb = pr.transb == 'N' ? pr.n : pr.k;
  const std::int64_t lda = std::max<std::int64_t>(1, ra), ldb = std::max<std::int64_t>(1, rb) + 2,
                     ldc = std::max<std::int64_t>(1, pr.m) + 1;
  auto A = random_matrix<T>(ra, ca, lda, gen), B = random_matrix<T>(rb, cb, ldb, gen);
  auto C = random_matrix<T>(pr.m, pr.n, ldc, gen);
  auto ref = reference_gemm(pr.transa, pr.transb, pr.m, pr.n, pr.k, T(2), A.data(), lda, B.data(), ldb, T(-1),
                            C.data(), ldc);
  execute<T>(p, T(2), A.data(), lda, B.data(), ldb, T(-1), C.data(), ldc, ctx);
  const std::string bad = check_bound(ref, pr.m, pr.n, pr.k, C.data(), ldc);
  CHECK_MESSAGE(bad.empty(), bad);
  return ctx.runtime().pool().snapshot();
}

// Thread-level rules are tested without cache-aware DFS (cache level 0); that rule has
// its own test below.
context with_threads(int t) {
  context c;
  c.set_threads(t).set_cache_level(0);
  return c;
}

}  // namespace

TEST_CASE("make_plan output prints, parses back equal, and validates") {
  for (int threads : {1, 2, 3, 5, 7, 16})
    for (auto [m, n, k] : {std::array<std::int64_t, 3>{64, 64, 1 << 24}, {4096, 4096, 64}, {1000, 999, 998},
                           {32, 32, 1 << 22}, {1, 1, 100000}, {3, 5, 7}})
      for (char type : {'s', 'd', 'c', 'z'}) {
        context ctx = with_threads(threads);
        const plan p = make_plan(problem{scalar_type(type), 'T', 'C', m, n, k}, ctx);
        const std::string text = p.to_string();
        INFO(text);
        const plan back = plan::parse(text);
        CHECK(back == p);
        CHECK(back.to_string() == text);
        CHECK(back.extra_bytes() == p.extra_bytes());
        CHECK_NOTHROW(p.validate());
      }
}

TEST_CASE("the planner gives every thread a share in proportion and cuts the largest edge") {
  // 64 x 64 x 2^24 on 3 threads: k is cut 1:2, then the 2-thread part 1:1; with no extra
  // depth there are exactly 3 leaves, each about a third of k.
  context ctx = with_threads(3);
  ctx.set_extra_depth(0);
  const plan p = make_plan(problem{scalar_type::d, 'N', 'N', 64, 64, 1 << 24}, ctx);
  REQUIRE(p.leaves() == 3);
  const node& root = p.nodes()[0];
  CHECK(root.kind == step_kind::bfs);
  CHECK(root.cut == dim::k);
  CHECK(root.parts[0].threads == 1);
  CHECK(root.parts[1].threads == 2);
  CHECK(root.parts[0].size % 256 == 0);  // SIMD/cache-friendly split point
  CHECK(std::abs(double(root.parts[0].size) - (1 << 24) / 3.0) <= 256);
  // Two k-BFS nodes, each with one 64 x 64 double temporary.
  CHECK(p.extra_bytes() == 2 * 64 * 64 * 8);
  // Square-ish 4096 x 4096 x 64 cuts n, never k (no temporaries needed).
  const plan q = make_plan(problem{scalar_type::d, 'N', 'N', 4096, 4096, 64}, with_threads(4));
  CHECK(q.extra_bytes() == 0);
  CHECK(q.nodes()[0].cut == dim::n);
}

TEST_CASE("the depth rule: BFS to one thread per share, then extra_depth levels while leaves stay large") {
  context ctx = with_threads(4);
  ctx.set_extra_depth(0);
  CHECK(make_plan(problem{scalar_type::d, 'N', 'N', 2048, 2048, 2048}, ctx).depth() == 2);
  ctx.set_extra_depth(2);
  CHECK(make_plan(problem{scalar_type::d, 'N', 'N', 2048, 2048, 2048}, ctx).depth() == 4);
  // Extra levels stop when a leaf would drop under min_leaf_flops.
  ctx.set_min_leaf_flops(1e12);
  CHECK(make_plan(problem{scalar_type::d, 'N', 'N', 2048, 2048, 2048}, ctx).depth() == 2);
}

TEST_CASE("validate rejects broken plans with a message naming the problem") {
  const char* head = "prism-plan 1\nproblem d NN 8 8 8\nthreads 2\n";
  auto rejects = [&](const std::string& body, const std::string& needle) {
    INFO(body);
    try {
      plan::parse(std::string(head) + body);
      FAIL("accepted");
    } catch (const plan_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, std::string(e.what()));
    }
  };
  rejects("bfs k thread 4@1 3@1\n leaf\n leaf\n", "sum to 7, not 8");
  rejects("bfs k thread 4@1 4@2\n leaf\n leaf\n", "thread shares sum to 3");
  rejects("bfs k thread 8@1 0@1\n leaf\n leaf\n", "size >= 1");
  rejects("bfs k cache 4@1 4@1\n leaf\n leaf\n", "at thread or numa level");
  rejects("bfs q thread 4@1 4@1\n leaf\n leaf\n", "dimension must be m, n or k");
  rejects("bfs k thread 4@1 4@1\n leaf\n", "ends early");
  rejects("leaf\nleaf\n", "after the end");
  rejects("leaf mkl\n", "openblas or blis");
  rejects("dfs k thread 4@1 4@1\n leaf\n leaf\n", "node's 2 threads");
  rejects("bfs k thread 8@2\n leaf\n", "a step reads");
  CHECK_THROWS_AS(plan::parse("prism-plan 2\n"), plan_error);
  CHECK_THROWS_AS(plan::parse("prism-plan 1\nproblem x NN 1 1 1\nthreads 1\nleaf\n"), plan_error);
  CHECK_THROWS_AS(plan::parse("prism-plan 1\nproblem d NX 1 1 1\nthreads 1\nleaf\n"), plan_error);
  // A plan for one type cannot run another.
  const plan p = plan::parse(std::string(head) + "leaf\n");
  std::vector<float> a(64), b(64), c(64);
  CHECK_THROWS_AS(execute<float>(p, 1.f, a.data(), 8, b.data(), 8, 0.f, c.data(), 8), plan_error);
}

TEST_CASE_TEMPLATE("hand-written plans run correctly: k-BFS, k-DFS, uneven shares, deep tiny plans", T, float,
                   double, std::complex<float>, std::complex<double>) {
  const char type = char(scalar_type_of<T>());
  auto text = [&](const std::string& trans, const std::string& shape, int threads, const std::string& tree) {
    return "prism-plan 1\nproblem " + std::string(1, type) + " " + trans + " " + shape + "\nthreads " +
           std::to_string(threads) + "\n" + tree;
  };
  const context ctx3 = with_threads(3);
  SUBCASE("k-BFS with three parts and uneven shares") {
    run_and_check<T>(plan::parse(text("NT", "20 17 300", 3, "bfs k thread 100@1 150@1 50@1\n leaf\n leaf blis\n leaf\n")),
                     ctx3);
  }
  SUBCASE("k-DFS accumulates with beta = 1 and needs no temporary") {
    const plan p = plan::parse(text("CN", "20 17 300", 3, "dfs k cache 1 299@3\n leaf\n dfs k thread 99 200\n  leaf\n  leaf\n"));
    CHECK(p.extra_bytes() == 0);
    run_and_check<T>(p, ctx3);
  }
  SUBCASE("uneven thread shares over m and n, nested k-BFS under a k-BFS part") {
    run_and_check<T>(plan::parse(text("TT", "33 29 64", 3,
                                      "bfs m thread 11@1 22@2\n"
                                      "  bfs k thread 32@1 32@1\n    leaf\n    leaf\n"
                                      "  bfs n thread 9@1 20@1\n    leaf\n    bfs k thread 1@1 63@1\n      leaf\n      leaf\n")),
                     ctx3);
  }
  SUBCASE("deep plan on a tiny matrix: every edge cut down to 1") {
    // 2 x 2 x 2 cut along all three edges to 1 x 1 x 1 leaves, mixing BFS and DFS.
    const std::string leafpair = "leaf\nleaf\n";
    const std::string kcut = "bfs k thread 1@1 1@1\n" + leafpair;
    const std::string ncut = "dfs n cache 1 1\n" + kcut + kcut;
    run_and_check<T>(plan::parse(text("NN", "2 2 2", 1, "bfs m thread 1@1 1@1\n" + ncut + ncut)), with_threads(1));
  }
}

TEST_CASE("the memory cap holds: peak workspace the executor allocates stays under it, results correct") {
  const problem pr{scalar_type::d, 'N', 'N', 64, 48, 20000};
  const std::size_t temp = 64 * 48 * 8;  // one C' of this shape
  for (std::size_t cap : {std::size_t(0), temp / 2, temp, 3 * temp, std::size_t(-1)}) {
    for (int threads : {2, 3, 5, 8}) {
      context ctx = with_threads(threads);
      ctx.set_max_memory(cap).set_small_flops(0);
      const plan p = make_plan(pr, ctx);
      INFO("cap ", cap, " threads ", threads, "\n", p.to_string());
      CHECK(p.extra_bytes() <= cap);
      const auto before = ctx.runtime().pool().snapshot();
      CHECK(before.allocations == 0);
      const auto after = run_and_check<double>(p, ctx);
      CHECK(after.peak_on_loan <= cap);
      CHECK(after.peak_on_loan >= p.extra_bytes());
      if (cap >= temp) CHECK(p.count(step_kind::bfs) > 0);  // parallel k-cut when it fits
    }
  }
  // With half a temporary: the planner cuts the larger of m, n by DFS first (CARMA's
  // "not enough memory" step), then k-BFS on halves whose C' fits.
  context ctx = with_threads(2);
  ctx.set_max_memory(temp / 2).set_extra_depth(0);
  const plan p = make_plan(pr, ctx);
  CHECK(p.nodes()[0].kind == step_kind::dfs);
  CHECK(p.nodes()[0].cut == dim::m);
}

TEST_CASE("temporaries come from the pool: no allocation in steady state") {
  context ctx = with_threads(3);
  ctx.set_small_flops(0);
  const std::int64_t m = 32, n = 32, k = 100000;
  std::mt19937_64 gen(2);
  auto A = random_matrix<double>(m, k, m, gen), B = random_matrix<double>(k, n, k, gen);
  std::vector<double> C(std::size_t(m * n));
  gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.0, C.data(), m, ctx);
  const auto first = ctx.runtime().pool().snapshot();
  CHECK(first.allocations >= 1);
  for (int i = 0; i < 20; ++i) gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.0, C.data(), m, ctx);
  const auto later = ctx.runtime().pool().snapshot();
  CHECK(later.allocations == first.allocations);
  CHECK(later.bytes_on_loan == 0);
}

TEST_CASE("cache-aware DFS: below the thread level, leaves shrink until their working set fits a thread's cache share") {
  // 2 PUs sharing an 8 MiB L3: each thread's share is 4 MiB. A 512 x 512 x 8192 double
  // product on 2 threads cuts k first (512 x 512 x 4096 per thread: 34 MiB, one 2 MiB C'),
  // then DFS halves the largest edge until (m k + k n + m n) * 8 bytes <= 4 MiB.
  context ctx;
  ctx.set_machine(topology::synthetic("package:1 l3:1(size=8MB) l2:2(size=1MB) core:1 pu:1")).set_threads(2).set_cache_level(3);
  const plan p = make_plan(problem{scalar_type::d, 'N', 'N', 512, 512, 8192}, ctx);
  INFO(p.to_string());
  CHECK(p.count(step_kind::dfs) > 0);
  for (const node& nd : p.nodes()) {
    if (nd.kind == step_kind::dfs) CHECK(nd.where == level::cache);
    if (nd.kind == step_kind::leaf)
      CHECK(8.0 * (double(nd.m) * nd.k + double(nd.k) * nd.n + double(nd.m) * nd.n) <= 4.0 * 1024 * 1024);
  }
  CHECK(p.extra_bytes() == 512 * 512 * 8);  // the thread-level C' only: DFS adds no temporary
  run_and_check<double>(p, ctx);
  // Level 2 (1 MiB per core here) cuts deeper; level 0 turns the rule off.
  ctx.set_cache_level(2);
  CHECK(make_plan(p.problem(), ctx).leaves() > p.leaves());
  ctx.set_cache_level(0);
  CHECK(make_plan(p.problem(), ctx).count(step_kind::dfs) == 0);
}
