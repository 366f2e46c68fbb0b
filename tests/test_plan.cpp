// tests/test_plan.cpp — plans as values: text round trip, validation, hand-written plans
// (k-BFS, k-DFS, uneven shares, deep plans on tiny matrices), the memory cap measured at
// the workspace pool, and steady-state reuse of temporaries. Internal: reads lib/runtime.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstring>

#include <prism/prism.hpp>

#include "runtime/runtime.hpp"
#include "support/machines.hpp"
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
  return prism::detail::runtime_of(ctx).pool().snapshot();
}

// Thread-level rules are tested without cache-aware DFS (cache level 0); that rule has
// its own test below. The plans asserted here are those of the example machine (one NUMA
// domain), whatever machine or synthetic topology the suite runs on.
context with_threads(int t) {
  context c = prism::test::pinned_context(t);
  c.set_cache_level(0);
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
  rejects("bfs k cache 4@1 4@1\n leaf\n leaf\n", "at rank, numa or thread level");
  rejects("bfs q thread 4@1 4@1\n leaf\n leaf\n", "dimension must be m, n or k");
  rejects("bfs k thread 4@1 4@1\n leaf\n", "ends early");
  rejects("leaf\nleaf\n", "after the end");
  rejects("leaf mkl\n", "openblas, blis, streaming or gpu");
  rejects("dfs k thread 4@1 4@1\n leaf\n leaf\n", "node's 2 threads");
  rejects("bfs k thread 8@2\n leaf\n", "a step reads");
  rejects("bfs k rank 4@1 4@1\n leaf\n leaf\n", "level must be");  // version 1 has no rank level
  CHECK_THROWS_AS(plan::parse("prism-plan 3\n"), plan_error);
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
  SUBCASE("a k-BFS reduction on every thread and on one (parallel_reduce_bytes) gives the same bits") {
    // 96 x 80 C (60 KiB of double): the description decides, one way and the other.
    const plan p = plan::parse(text("NN", "96 80 90", 3, "bfs k thread 30@1 30@1 30@1\n leaf\n leaf\n leaf\n"));
    std::vector<T> result[2];
    for (const double from : {64.0, 1e18}) {
      machine_description d = default_description();
      d.set_measured(machine_key::parallel_reduce_bytes, from);
      context ctx = ctx3;
      ctx.set_description(d);
      run_and_check<T>(p, ctx);
      std::mt19937_64 gen(7);
      auto A = random_matrix<T>(96, 90, 96, gen), B = random_matrix<T>(90, 80, 90, gen);
      std::vector<T> C(96 * 80, T(0));
      execute<T>(p, T(1), A.data(), 96, B.data(), 90, T(0), C.data(), 96, ctx);
      result[from < 1e6 ? 0 : 1] = C;
    }
    CHECK(std::memcmp(result[0].data(), result[1].data(), result[0].size() * sizeof(T)) == 0);
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
      const auto before = prism::detail::runtime_of(ctx).pool().snapshot();
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
  const auto first = prism::detail::runtime_of(ctx).pool().snapshot();
  CHECK(first.allocations >= 1);
  for (int i = 0; i < 20; ++i) gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.0, C.data(), m, ctx);
  const auto later = prism::detail::runtime_of(ctx).pool().snapshot();
  CHECK(later.allocations == first.allocations);
  CHECK(later.bytes_on_loan == 0);
}

TEST_CASE("the pool gives back what overlapping callers left once it is idle, and keeps what one burst needs") {
  detail::workspace_pool pool;
  const std::size_t big = 14 << 20, mid = 9 << 20, small = 1 << 20;
  {  // two callers overlap: both blocks stay while either is on loan, and after (the burst needed both)
    auto a = pool.acquire(big);
    auto b = pool.acquire(mid);
  }
  CHECK(pool.snapshot().bytes_held == big + mid);
  CHECK(pool.snapshot().allocations == 2);
  { auto a = pool.acquire(big); }  // one caller: at the end the overlapping block goes back
  CHECK(pool.snapshot().bytes_held == big);
  CHECK(pool.snapshot().allocations == 2);
  for (int rep = 0; rep < 3; ++rep) {  // one caller taking two blocks per call keeps both
    auto a = pool.acquire(small);
    auto b = pool.acquire(small);
  }
  CHECK(pool.snapshot().allocations == 3);  // the 14 MB block served the first, one new 1 MB block
  CHECK(pool.snapshot().bytes_held == big + small);  // the burst's peak (15 MB) still fits both
  CHECK(pool.snapshot().bytes_on_loan == 0);
  { auto a = pool.acquire(small); }  // a burst of one small call: the largest block is always kept
  CHECK(pool.snapshot().bytes_held == big);
}

TEST_CASE("cache-aware DFS: below the thread level, leaves shrink until their working set fits a thread's cache share") {
  // 2 PUs sharing a 2 MiB L3: each thread's share is 1 MiB. A 256 x 256 x 4096 double
  // product on 2 threads cuts k first (256 x 256 x 2048 per thread: 8.5 MiB, one 512 KiB C'),
  // then DFS halves the largest edge until (m k + k n + m n) * 8 bytes <= 1 MiB. The leaf
  // is OpenBLAS: a leaf the streaming kernel would take (m, n <= 128 past the machine's
  // crossover) is not cut for the cache, and that crossover differs between machines.
  context ctx;
  ctx.set_machine(topology::synthetic("package:1 l3:1(size=2MB) l2:2(size=256KB) core:1 pu:1")).set_threads(2).set_cache_level(3);
  ctx.set_leaf(leaf_backend::openblas);
  const plan p = make_plan(problem{scalar_type::d, 'N', 'N', 256, 256, 4096}, ctx);
  INFO(p.to_string());
  CHECK(p.count(step_kind::dfs) > 0);
  for (const node& nd : p.nodes()) {
    if (nd.kind == step_kind::dfs) CHECK(nd.where == level::cache);
    if (nd.kind == step_kind::leaf)
      CHECK(8.0 * (double(nd.shape.m) * nd.shape.k + double(nd.shape.k) * nd.shape.n + double(nd.shape.m) * nd.shape.n) <=
            1024.0 * 1024);
  }
  CHECK(p.extra_bytes() == 256 * 256 * 8);  // the thread-level C' only: DFS adds no temporary
  run_and_check<double>(p, ctx);
  // Level 2 (256 KiB per core here) cuts deeper; level 0 turns the rule off.
  ctx.set_cache_level(2);
  CHECK(make_plan(p.problem(), ctx).leaves() > p.leaves());
  ctx.set_cache_level(0);
  CHECK(make_plan(p.problem(), ctx).count(step_kind::dfs) == 0);
}

TEST_CASE("version 2 text: shares with units, f-part cuts, and version 1 texts still parse") {
  // The README's version 1 example parses into the plan make_plan builds today.
  const char* v1 =
      "prism-plan 1\nproblem d NN 64 64 16777216\nthreads 3\n"
      "bfs k thread 5592320@1 11184896@2\n  leaf openblas\n  bfs k thread 5592576@1 5592320@1\n    leaf openblas\n"
      "    leaf openblas\n";
  const plan old = plan::parse(v1);
  // (Version 1 knew OpenBLAS leaves only; `auto` now gives these 64 x 64 leaves the streaming
  // kernel, so the comparison forces the OpenBLAS leaf.)
  CHECK(old == make_plan(problem{scalar_type::d, 'N', 'N', 64, 64, 16777216},
                         with_threads(3).set_leaf(leaf_backend::openblas)));
  const std::string v2 = old.to_string();
  CHECK(v2.rfind("prism-plan 2\n", 0) == 0);
  CHECK(v2.find("bfs k thread 5592320@1t 11184896@2t") != std::string::npos);
  CHECK(plan::parse(v2) == old);
  // A v1 DFS part's "@T" is its node's threads; v2 writes no share for it.
  const plan dfs = plan::parse("prism-plan 1\nproblem d NN 8 8 64\nthreads 2\ndfs k thread 32@2 32@2\n leaf\n leaf\n");
  CHECK(dfs.nodes()[0].parts[0].threads == 0);
  CHECK(dfs.to_string().find("dfs k thread 32 32") != std::string::npos);
  // A v1 DFS at cache level above thread steps (the old 32-bit rule) becomes a thread step.
  const plan big = plan::parse("prism-plan 1\nproblem d NN 8 8 64\nthreads 2\ndfs k cache 32 32\n bfs k thread 16@1 16@1\n  leaf\n  leaf\n leaf\n");
  CHECK(big.nodes()[0].where == level::thread);
  // Version 2 parts: unit letters, comma-separated, each at most once; DFS parts take none.
  const char* head = "prism-plan 2\nproblem d NN 30 8 8\nthreads 3\n";
  const plan three = plan::parse(std::string(head) + "bfs m thread 10@1t 10@1t 10@1t\n leaf\n leaf\n leaf\n");
  CHECK(three.nodes()[0].parts.size() == 3);
  CHECK(plan::parse(three.to_string()) == three);
  // A gemm problem's uplo names no triangle: whatever the caller left there, the plan's
  // text round-trips (its text has no uplo for a gemm).
  problem lower{scalar_type::d, 'N', 'N', 40, 30, 20};
  lower.uplo = 'L';
  const plan lp = make_plan(lower, context().set_threads(1));
  CHECK(plan::parse(lp.to_string()) == lp);
  // An empty plan given to execute_rank_k is named so (not as a gemm plan).
  std::vector<double> none(1);
  CHECK_THROWS_WITH_AS(execute_rank_k<double>(plan(), 1.0, none.data(), 1, 0.0, none.data(), 1), doctest::Contains("empty plan"),
                       plan_error);
  CHECK_THROWS_AS(plan::parse(std::string(head) + "bfs m thread 10@1x 20@2t\n leaf\n leaf\n"), plan_error);
  CHECK_THROWS_AS(plan::parse(std::string(head) + "bfs m thread 10@1t,1t 20@2t\n leaf\n leaf\n"), plan_error);
  CHECK_THROWS_AS(plan::parse(std::string(head) + "dfs m thread 10@3t 20@3t\n leaf\n leaf\n"), plan_error);
  CHECK_THROWS_AS(plan::parse(std::string(head) + "bfs m thread 10@1r 20@2r\n leaf\n leaf\n"), plan_error);
  CHECK_THROWS_AS(plan::parse(std::string(head) + "bfs m thread 10@ 20@2t\n leaf\n leaf\n"), plan_error);
  CHECK_THROWS_AS(plan::parse(std::string(head) + "bfs m thread 10 20@2t\n leaf\n leaf\n"), plan_error);  // v2 names it
  // The old 32-bit DFS, written at cache level by version 1 even with one thread, reads
  // back as the thread-level step make_plan writes now.
  const problem huge{scalar_type::d, 'N', 'N', 4, 4, 3000000000LL};
  const plan now = make_plan(huge, with_threads(1));
  std::string old_text = now.to_string();
  old_text.replace(0, 12, "prism-plan 1");
  old_text.replace(old_text.find("dfs k thread"), 12, "dfs k cache ");
  CHECK(plan::parse(old_text) == now);
}

TEST_CASE("levels: outer before inner on every path, and a node spanning ranks or domains divides them") {
  auto rejects = [](const std::string& text, const std::string& needle) {
    INFO(text);
    try {
      plan::parse(text);
      FAIL("accepted");
    } catch (const plan_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, std::string(e.what()));
    }
  };
  const std::string head = "prism-plan 2\nproblem d NN 8 8 64\nthreads 2\n";
  rejects(head + "dfs k cache 32 32\n bfs k thread 16@1t 16@1t\n  leaf\n  leaf\n leaf\n", "outer levels come first");
  rejects(head + "domains 2\nbfs k thread 32@1t 32@1t\n leaf\n leaf\n", "must be a numa-level step");
  rejects(head + "ranks 2\nleaf\n", "must be a rank-level step");
  rejects(head + "bfs k rank 32@1r 32@1r\n leaf\n leaf\n", "needs at least 2 ranks");
  rejects(head + "ranks 3\nbfs k rank 32@1r 32@1r\n leaf\n leaf\n", "rank shares sum to 2, not 3");
  rejects(head + "ranks 2\nbfs k rank 32@1r,2t 32@1r,2t\n leaf\n leaf\n", "share ranks only");
  rejects(head + "domains 2\nbfs k numa 32@1d,1t 32@1d\n leaf\n leaf\n", "one thread per domain");
  // A rank plan: 7 ranks cut 3:4 on n, then the 3 and the 4 on k; each rank's subtree is
  // planned below for its own threads. It validates, prints and parses back.
  const plan ranks = plan::parse(
      "prism-plan 2\nproblem d NN 64 70 1024\nthreads 2\nranks 7\n"
      "bfs n rank 30@3r 40@4r\n"
      "  bfs k rank 512@1r 256@1r 256@1r\n    leaf\n    leaf\n    bfs m thread 32@1t 32@1t\n      leaf\n      leaf\n"
      "  bfs k rank 256@1r 256@1r 256@1r 256@1r\n    leaf\n    leaf\n    leaf\n    leaf\n");
  CHECK(ranks.ranks() == 7);
  CHECK(ranks.nodes()[0].parts[1].ranks == 4);
  const node& fourth = ranks.nodes()[std::size_t(ranks.nodes()[0].children[1])];
  CHECK(fourth.owns.ranks == span{3, 4});
  CHECK(fourth.shape == box{64, 40, 1024, 0, 30, 0});
  CHECK(plan::parse(ranks.to_string()) == ranks);
  CHECK(ranks.to_string().find("bfs n rank 30@3r 40@4r") != std::string::npos);
  // It cannot run without the MPI level: refused before C is touched.
  std::vector<double> a(64 * 1024, 1.0), b(1024 * 70, 1.0), c(64 * 70, 7.0);
  CHECK_THROWS_AS(execute<double>(ranks, 1.0, a.data(), 64, b.data(), 1024, 0.0, c.data(), 64, with_threads(2)), plan_error);
  for (double x : c) REQUIRE(x == 7.0);
}

TEST_CASE("for_each_child is the one walker: child boxes and resources from part sizes and shares") {
  node nd;
  nd.kind = step_kind::bfs;
  nd.cut = dim::k;
  nd.where = level::numa;
  nd.parts = {part{1000, 0, 1, 2}, part{2000, 0, 2, 4}};
  const box whole{64, 64, 3000, 0, 0, 0};
  const resources r{span{0, 1}, span{0, 3}, 6};
  std::vector<child_step> seen;
  for_each_child(nd, whole, r, [&](const child_step& ch) { seen.push_back(ch); });
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].shape == box{64, 64, 1000, 0, 0, 0});
  CHECK(seen[1].shape == box{64, 64, 2000, 0, 0, 1000});
  CHECK(seen[0].owns == resources{span{0, 1}, span{0, 1}, 2});
  CHECK(seen[1].owns == resources{span{0, 1}, span{1, 2}, 4});
  // Every derived box of a plan is its parent's, narrowed along the cut by the walker.
  const plan p = make_plan(problem{scalar_type::d, 'T', 'N', 1000, 999, 998}, with_threads(7));
  for (const node& x : p.nodes())
    for_each_child(x, x.shape, x.owns, [&](const child_step& ch) {
      CHECK(p.nodes()[std::size_t(ch.node)].shape == ch.shape);
      CHECK(p.nodes()[std::size_t(ch.node)].owns == ch.owns);
    });
}

TEST_CASE("execute refuses a plan that does not fit the context before C is touched") {
  // A hand-written 2-domain plan on a 1-domain machine: refused up front (it used to reach
  // the second domain's arena inside a task after part 0 had written C).
  const plan two = plan::parse("prism-plan 2\nproblem d NN 16 16 4096\nthreads 2\ndomains 2\n"
                               "bfs k numa 2048@1d,1t 2048@1d,1t\n leaf\n leaf\n");
  context one;
  one.set_machine(topology::synthetic("numa:1 core:2 pu:1")).set_threads(2);
  std::vector<double> a(16 * 4096, 1.0), b(4096 * 16, 1.0), c(16 * 16, 3.0);
  for (double alpha : {1.0, 0.0}) {  // alpha = 0 would only scale C: also refused first
    try {
      execute<double>(two, alpha, a.data(), 16, b.data(), 4096, 0.0, c.data(), 16, one);
      FAIL("accepted");
    } catch (const plan_error& e) {
      CHECK(std::string(e.what()).find("2 NUMA domains") != std::string::npos);
    }
    for (double x : c) REQUIRE(x == 3.0);
  }
  // More threads than the context allows.
  const plan three = plan::parse("prism-plan 2\nproblem d NN 16 16 4096\nthreads 3\nbfs k thread 1024@1t 1024@1t 2048@1t\n leaf\n leaf\n leaf\n");
  CHECK_THROWS_WITH_AS(execute<double>(three, 1.0, a.data(), 16, b.data(), 4096, 0.0, c.data(), 16, with_threads(2)),
                       doctest::Contains("3 threads"), plan_error);
  for (double x : c) REQUIRE(x == 3.0);
  run_and_check<double>(three, with_threads(3));  // and it runs where it fits
}

TEST_CASE("a problem whose type is not s, d, c or z is refused; parse names the problem line") {
  context ctx;
  ctx.set_threads(2).set_small_flops(0);
  for (std::int64_t n : {4, 40}) {
    problem p{scalar_type::d, 'N', 'N', n, n, 3000};
    p.type = scalar_type(0);
    CHECK_THROWS_WITH_AS(make_plan(p, ctx), doctest::Contains("the type must be s, d, c or z"), plan_error);
    p.type = scalar_type('q');
    CHECK_THROWS_WITH_AS(make_plan(p, ctx), doctest::Contains("the type must be s, d, c or z"), plan_error);
  }
  CHECK_THROWS_WITH_AS(rank_k_problem(scalar_type(0), operation::syrk, 'U', 'N', 8, 8),
                       doctest::Contains("the type must be s, d, c or z"), plan_error);
  const auto says = [](const std::string& text, const std::string& words) {
    try {
      (void)plan::parse(text);
      FAIL("accepted");
    } catch (const plan_error& e) {
      CHECK_MESSAGE(std::string(e.what()) == words, e.what());
      CHECK(std::string(e.what()) == "prism plan: " + e.reason());  // reason(): the words alone
    }
  };
  says("prism-plan 1\nproblem d XN 1 1 1\nthreads 1\nleaf\n", "prism plan: line 2: trans must be N, T or C, got 'X'");
  says("prism-plan 1\nproblem d NN -1 1 1\nthreads 1\nleaf\n", "prism plan: line 2: problem sizes must be >= 0");
  says("prism-plan 2\nproblem d syrk XT 4 4 4\nthreads 1\nleaf\n", "prism plan: line 2: uplo must be U or L, got 'X'");
}
