// tests/test_syrk_plan.cpp — syrk / herk plans as values and as what prism::syrk runs: the
// text round trip, hand-written plans (k-cuts with triangle temporaries, BFS and DFS
// diagonal cuts, a diagonal cut under a k-cut), validation errors, the planner's choice on
// tall-k, square and memory-capped shapes, and the NUMA level on hwloc synthetic topologies
// (every leaf in its domain's arena, triangle temporaries from the computing domain's pool,
// C's owner reducing). Every run is checked against a long-double reference on the uplo
// triangle, with the other triangle NaN and bitwise unchanged. Internal: reads lib/numa's
// hooks and the workspace pools.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>

#include <prism/prism.hpp>

#include "numa/domain_arenas.hpp"
#include "runtime/runtime.hpp"
#include "support/machines.hpp"
#include "support/reference.hpp"

#include <atomic>
#include <cstring>
#include <limits>

using namespace prism;
using prism::test::real_t;
using prism::test::wide_t;

namespace {

template <class T>
constexpr bool cplx = prism::test::is_complex_v<T>;

// The example machine (one NUMA domain), whatever machine the suite runs on: the plans
// asserted below are its plans.
context with_threads(int t, std::size_t cap = std::numeric_limits<std::size_t>::max()) {
  context c = prism::test::pinned_context(t);
  c.set_max_memory(cap).set_small_flops(0).set_cache_level(0);
  return c;
}

context on(const std::string& synthetic, int threads) {
  context c;
  c.set_machine(topology::synthetic(synthetic)).set_threads(threads).set_small_flops(0).set_cache_level(0);
  return c;
}

bool in_triangle(char uplo, std::int64_t i, std::int64_t j) { return uplo == 'U' ? i <= j : i >= j; }

// Runs `call(alpha, A, lda, beta, C, ldc)` for problem pr on random data and checks C
// against the reference; returns "" or what went wrong. A is n x k ('N') or k x n, both
// with padded leading dimensions; C's other triangle is NaN and must stay bitwise.
template <class T, class Call>
std::string check_update(const problem& pr, unsigned seed, Call&& call) {
  const bool herm = pr.op == operation::herk;
  const std::int64_t n = pr.n, k = pr.k;
  const std::int64_t ra = pr.transa == 'N' ? n : k, ca = pr.transa == 'N' ? k : n;
  const std::int64_t lda = std::max<std::int64_t>(1, ra) + 1, ldc = std::max<std::int64_t>(1, n) + 2;
  std::mt19937_64 gen(seed);
  std::vector<T> A(std::size_t(lda * std::max<std::int64_t>(1, ca)), T(-7));
  for (std::int64_t c = 0; c < ca; ++c)
    for (std::int64_t r = 0; r < ra; ++r) A[std::size_t(r + c * lda)] = test::random_value<T>(gen);
  const real_t<T> nan = std::numeric_limits<real_t<T>>::quiet_NaN();
  std::vector<T> C(std::size_t(ldc * std::max<std::int64_t>(1, n)));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < ldc; ++i)
      C[std::size_t(i + j * ldc)] = i < n && in_triangle(pr.uplo, i, j) ? test::random_value<T>(gen) : T(nan);
  const std::vector<T> C0 = C;
  const T alpha = T(real_t<T>(1.5)), beta = T(real_t<T>(-0.5));
  call(alpha, A.data(), lda, beta, C.data(), ldc);

  auto op = [&](std::int64_t i, std::int64_t l) {  // op(A)(i, l)
    if (pr.transa == 'N') return A[std::size_t(i + l * lda)];
    const T v = A[std::size_t(l + i * lda)];
    return pr.transa == 'C' ? test::conj_if(v) : v;
  };
  const long double eps = std::numeric_limits<real_t<T>>::epsilon();
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < ldc; ++i) {
      const std::size_t at = std::size_t(i + j * ldc);
      if (!(i < n && in_triangle(pr.uplo, i, j))) {
        if (std::memcmp(&C[at], &C0[at], sizeof(T)) != 0) return "C(" + std::to_string(i) + "," + std::to_string(j) + ") outside the triangle changed";
        continue;
      }
      wide_t<T> acc(0);
      long double mag = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        const T a = op(i, l), b = herm ? test::conj_if(op(j, l)) : op(j, l);
        acc += wide_t<T>(a) * wide_t<T>(b);
        mag += prism::test::abs_mul(a, b);
      }
      T c0 = C0[at];
      if constexpr (cplx<T>)
        if (herm && i == j) c0 = T(c0.real());
      const wide_t<T> want = wide_t<T>(alpha) * acc + wide_t<T>(beta) * wide_t<T>(c0);
      const long double bound = (cplx<T> ? 8.0L : 4.0L) * (long double)std::max<std::int64_t>(k, 1) * eps *
                                    (1.5L * mag + 0.5L * (long double)std::abs(c0)) +
                                4 * (long double)std::numeric_limits<real_t<T>>::min();
      const long double err = std::abs(wide_t<T>(C[at]) - want);
      if (!(err <= bound))
        return "C(" + std::to_string(i) + "," + std::to_string(j) + ") error " + std::to_string(double(err)) + " > bound " +
               std::to_string(double(bound));
      if constexpr (cplx<T>)
        if (herm && i == j && C[at].imag() != 0) return "herk left an imaginary part on the diagonal";
    }
  return "";
}

// Runs plan p through execute_rank_k and checks it.
template <class T>
std::string run_plan_checked(const plan& p, const context& ctx, unsigned seed = 1) {
  return check_update<T>(p.problem(), seed, [&](T alpha, const T* A, std::int64_t lda, T beta, T* C, std::int64_t ldc) {
    execute_rank_k<T>(p, alpha, A, lda, beta, C, ldc, ctx);
  });
}

// Runs prism::syrk / prism::herk (the planner's own plan) for pr and checks it.
template <class T>
std::string run_api_checked(const problem& pr, const context& ctx, unsigned seed = 1) {
  return check_update<T>(pr, seed, [&](T alpha, const T* A, std::int64_t lda, T beta, T* C, std::int64_t ldc) {
    if constexpr (cplx<T>)
      if (pr.op == operation::herk)
        return herk<T>(pr.uplo, pr.transa, pr.n, pr.k, alpha.real(), A, lda, beta.real(), C, ldc, ctx);
    syrk<T>(pr.uplo, pr.transa, pr.n, pr.k, alpha, A, lda, beta, C, ldc, ctx);
  });
}

// Runs plan text `text` for every type it allows, uplo and trans letter, and checks it.
void run_text_all_ways(const std::string& text, const context& ctx) {
  INFO(text);
  const plan p = plan::parse(text);
  const problem& pr = p.problem();
  for (char uplo : {'U', 'L'})
    for (char trans : {'N', 'T'}) {
      // The same tree for the other triangle and trans: only the problem line changes.
      std::string t = text;
      const std::string from = std::string(1, pr.uplo) + pr.transa, to = std::string(1, uplo) + (pr.op == operation::herk && trans == 'T' ? 'C' : trans);
      t.replace(t.find(" " + from + " "), from.size() + 2, " " + to + " ");
      const plan q = plan::parse(t);
      INFO("as ", to);
      switch (pr.type) {
        case scalar_type::s: CHECK(run_plan_checked<float>(q, ctx) == ""); break;
        case scalar_type::d: CHECK(run_plan_checked<double>(q, ctx) == ""); break;
        case scalar_type::c: CHECK(run_plan_checked<std::complex<float>>(q, ctx) == ""); break;
        case scalar_type::z: CHECK(run_plan_checked<std::complex<double>>(q, ctx) == ""); break;
      }
    }
}

// The number of nodes of p for which pred holds.
template <class Pred>
int count_if(const plan& p, Pred pred) {
  int c = 0;
  for (const node& nd : p.nodes()) c += pred(nd) ? 1 : 0;
  return c;
}

}  // namespace

TEST_CASE("syrk and herk plans print, parse back equal, and validate") {
  for (int threads : {1, 2, 3, 5, 8})
    for (auto [n, k] : {std::array<std::int64_t, 2>{32, 1 << 22}, {1000, 1000}, {64, 64}, {300, 5000}, {1, 100000},
                        {7, 3}, {2048, 64}})
      for (char type : {'s', 'd', 'c', 'z'})
        for (operation op : {operation::syrk, operation::herk}) {
          if (op == operation::herk && (type == 's' || type == 'd')) continue;
          const problem pr = rank_k_problem(scalar_type(type), op, threads % 2 ? 'U' : 'L', k % 2 ? 'N' : (op == operation::herk ? 'C' : 'T'), n, k);
          const plan p = make_plan(pr, with_threads(threads));
          const std::string text = p.to_string();
          INFO(text);
          const plan back = plan::parse(text);
          CHECK(back == p);
          CHECK(back.to_string() == text);
          CHECK(back.extra_bytes() == p.extra_bytes());
          CHECK(p.nodes()[0].triangle == pr.uplo);
        }
}

TEST_CASE("the problem line names the operation, the triangle and trans; transb follows") {
  const plan p = make_plan(rank_k_problem(scalar_type::z, operation::herk, 'l', 'c', 40, 9000), with_threads(2));
  CHECK(p.problem().transa == 'C');
  CHECK(p.problem().transb == 'N');
  CHECK(p.to_string().find("problem z herk LC 40 40 9000\n") != std::string::npos);
  CHECK(rank_k_problem(scalar_type::d, operation::syrk, 'U', 'N', 5, 6).transb == 'T');
  CHECK(rank_k_problem(scalar_type::d, operation::syrk, 'U', 'C', 5, 6).transa == 'T');  // real: 'C' is 'T'
  CHECK(rank_k_problem(scalar_type::c, operation::herk, 'U', 'N', 5, 6).transb == 'C');
  CHECK_THROWS_AS(rank_k_problem(scalar_type::d, operation::herk, 'U', 'N', 5, 6), plan_error);
  CHECK_THROWS_AS(rank_k_problem(scalar_type::c, operation::syrk, 'U', 'C', 5, 6), plan_error);
  CHECK_THROWS_AS(rank_k_problem(scalar_type::d, operation::syrk, 'X', 'N', 5, 6), plan_error);
  context ranks = with_threads(2);
  ranks.set_ranks(2);
  CHECK_THROWS_AS(make_plan(rank_k_problem(scalar_type::d, operation::syrk, 'U', 'N', 64, 64), ranks), plan_error);
}

TEST_CASE("hand-written syrk / herk plans run: diagonal cuts (BFS, DFS), k-cuts, a diagonal cut under a k-cut") {
  const context two = with_threads(2), three = with_threads(3);
  // BFS diagonal cut: the two triangles on one thread one after the other, the block at
  // once on the other; the second triangle k-cut by a DFS, the block by a 1-thread BFS.
  run_text_all_ways(R"(prism-plan 2
problem d syrk LN 100 100 50
threads 2
bfs n thread 48@1t 52@1t gemm@1t
  leaf openblas
  dfs k thread 20 30
    leaf openblas
    leaf blis
  bfs k thread 25@1t 25@1t
    leaf openblas
    leaf openblas
)", two);
  // A k-cut (one triangle temporary) whose second part is cut along the diagonal.
  run_text_all_ways(R"(prism-plan 2
problem z herk UC 40 40 3000
threads 3
bfs k thread 1000@1t 2000@2t
  leaf openblas
  bfs n thread 20@1t 20@1t gemm@1t
    leaf openblas
    leaf openblas
    leaf openblas
)", three);
  // DFS diagonal cut, each part with both threads; a 3-part k-cut inside a triangle; a
  // block cut along m and n.
  run_text_all_ways(R"(prism-plan 2
problem s syrk UT 32 32 700
threads 2
dfs n thread 16 16 gemm
  bfs k thread 200@1t 500@1t
    leaf openblas
    leaf openblas
  bfs n thread 8@1t 8@1t gemm@1t
    leaf blis
    leaf openblas
    leaf openblas
  bfs m thread 9@1t 7@1t
    leaf openblas
    bfs n thread 10@1t 6@1t
      leaf openblas
      leaf streaming
)", two);
  run_text_all_ways(R"(prism-plan 2
problem c syrk LN 9 9 4000
threads 3
bfs k thread 1000@1t 1000@1t 2000@1t
  leaf openblas
  leaf openblas
  leaf openblas
)", three);
}

TEST_CASE("syrk plans reject what is not a triangle recursion") {
  auto rejects = [](const std::string& text, const std::string& why) {
    INFO(text);
    try {
      (void)plan::parse(text);
      FAIL("parsed");
    } catch (const plan_error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(why) != std::string::npos);
    }
  };
  const std::string head = "prism-plan 2\nproblem d syrk UN 10 10 10\nthreads 2\n";
  rejects(head + "bfs m thread 5@1t 5@1t\n  leaf\n  leaf\n", "a triangle is cut along k, or along n by a diagonal cut");
  rejects(head + "bfs n thread 5@1t 5@1t\n  leaf\n  leaf\n", "a diagonal cut has three parts");
  rejects(head + "bfs n thread 5@1t 5@2t gemm@1t\n  leaf\n  leaf\n  leaf\n", "the two triangles of a diagonal cut run one after the other on the same share");
  rejects(head + "bfs n thread 5@1t 5@1t gemm@2t\n  leaf\n  leaf\n  leaf\n", "bfs thread shares sum to 3, not 2");
  rejects(head + "bfs n thread 4@1t 5@1t gemm@1t\n  leaf\n  leaf\n  leaf\n", "must be >= 1 and sum to 10");
  rejects(head + "bfs n thread 5@1t gemm@1t 5@1t\n  leaf\n  leaf\n  leaf\n", "'gemm' is the third and last part");
  // A triangle's leaf may be the streaming rank-k kernel (n <= 128), not above.
  rejects("prism-plan 2\nproblem d syrk UN 130 130 10\nthreads 1\nleaf streaming\n", "a streaming leaf takes m, n <= 128");
  rejects("prism-plan 2\nproblem d NN 10 10 10\nthreads 2\nbfs n thread 5@1t 5@1t gemm@1t\n  leaf\n  leaf\n  leaf\n",
          "belongs to the diagonal cut of a triangle");
  rejects("prism-plan 2\nproblem d herk UN 10 10 10\nthreads 1\nleaf\n", "herk needs a complex type");
  rejects("prism-plan 2\nproblem d syrk UN 10 11 10\nthreads 1\nleaf\n", "the two sizes must be equal");
  rejects("prism-plan 2\nproblem z syrk UC 10 10 10\nthreads 1\nleaf\n", "syrk trans must be N or T");
  // A gemm plan does not run through execute_rank_k, nor a syrk plan through execute.
  const plan g = make_plan(problem{scalar_type::d, 'N', 'N', 8, 8, 8}, with_threads(1));
  const plan s = plan::parse(head + "dfs k thread 5 5\n  leaf\n  leaf\n");
  double A[100] = {}, C[100] = {};
  CHECK_THROWS_AS(execute_rank_k<double>(g, 1.0, A, 10, 0.0, C, 10, with_threads(1)), plan_error);
  CHECK_THROWS_AS(execute<double>(s, 1.0, A, 10, A, 10, 0.0, C, 10, with_threads(2)), plan_error);
  // The same k-cut with a streaming triangle leaf and a BLAS one gives the same triangle
  // (integer-valued A: exact in both).
  for (int i = 0; i < 100; ++i) A[i] = double(i % 7 - 3);
  const plan mixed = plan::parse(head + "dfs k thread 5 5\n  leaf streaming\n  leaf openblas\n");
  double C2[100] = {};
  execute_rank_k<double>(mixed, 1.0, A, 10, 0.0, C2, 10, with_threads(2));
  execute_rank_k<double>(s, 1.0, A, 10, 0.0, C, 10, with_threads(2));
  CHECK(std::equal(C, C + 100, C2));
  CHECK(std::any_of(C, C + 100, [](double x) { return x != 0.0; }));
  CHECK_THROWS_AS(execute_rank_k<double>(s, 1.0, A, 10, 0.0, C, 10, with_threads(1)), plan_error);  // 2 threads > 1
}

TEST_CASE("planner: a tall k is cut along k, one part per thread, with triangle temporaries") {
  const problem pr = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 32, 1 << 22);
  const plan p = make_plan(pr, with_threads(2));
  REQUIRE(p.nodes()[0].kind == step_kind::bfs);
  CHECK(p.nodes()[0].cut == dim::k);
  CHECK(p.nodes()[0].parts.size() == 2);
  CHECK(p.extra_bytes() == 32 * 32 * 8);
  CHECK(p.leaves() == 2);
  CHECK(count_if(p, [](const node& nd) { return nd.triangle == 'U'; }) == 3);
  const plan q = make_plan(pr, with_threads(3));
  CHECK(q.nodes()[0].parts.size() == 3);
  CHECK(q.extra_bytes() == 2 * 32 * 32 * 8);
  // describe_rank_k reads the same plan.
  CHECK(describe_rank_k(scalar_type::d, 32, 1 << 22, with_threads(2)) ==
        "k-cut 2: 2097152@1t 2097152@1t; depth 1, 2 leaves, 0 gemm blocks, 8192 B temporaries");
  CHECK(run_api_checked<double>(rank_k_problem(scalar_type::d, operation::syrk, 'L', 'T', 24, 20000), with_threads(3)) == "");
}

TEST_CASE("planner: a square update is cut along the diagonal, the two sides run at once") {
  const problem pr = rank_k_problem(scalar_type::d, operation::syrk, 'L', 'N', 2048, 2048);
  for (int threads : {2, 4, 7}) {
    const plan p = make_plan(pr, with_threads(threads));
    INFO(p);
    const node& root = p.nodes()[0];
    REQUIRE(is_diagonal_cut(root));
    CHECK(root.kind == step_kind::bfs);
    CHECK(root.parts[0].threads == threads / 2);
    CHECK(root.parts[2].threads == threads - threads / 2);
    const node& blk = p.nodes()[std::size_t(root.children[2])];
    CHECK(blk.triangle == 0);
    CHECK(blk.shape.i == 1024);  // 'L': the block is C[1024:2048, 0:1024]
    CHECK(blk.shape.j == 0);
    // The diagonal cut itself needs no memory; its triangles (1024 x 1024, k = 2048 = 2n)
    // are k-dominant again and may take k-cuts with temporaries.
    CHECK(p.nodes()[0].workspace_bytes == p.extra_bytes());
  }
  // Smaller squares run correctly for every type, both triangles.
  CHECK(run_api_checked<float>(rank_k_problem(scalar_type::s, operation::syrk, 'U', 'N', 97, 61), with_threads(2)) == "");
  CHECK(run_api_checked<std::complex<double>>(rank_k_problem(scalar_type::z, operation::herk, 'L', 'C', 53, 40), with_threads(5)) == "");
  CHECK(run_api_checked<std::complex<float>>(rank_k_problem(scalar_type::c, operation::syrk, 'U', 'T', 70, 33), with_threads(4)) == "");
}

TEST_CASE("planner: memory caps shrink the temporaries, force DFS in the gemm blocks, and are shared by nested cuts") {
  const std::size_t none = std::numeric_limits<std::size_t>::max();
  // No memory at all: no temporary anywhere; the tall update is cut along the diagonal.
  const problem tall = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 64, 1 << 16);
  const plan zero = make_plan(tall, with_threads(4, 0));
  CHECK(zero.extra_bytes() == 0);
  CHECK(is_diagonal_cut(zero.nodes()[0]));
  CHECK(run_plan_checked<double>(zero, with_threads(4, 0)) == "");
  // 12000 bytes: no 32768-byte root temporary, so a diagonal cut whose block (32x32,
  // 8192-byte C') gets 6000: half a C' fits, so the block is cut along n by a DFS.
  const plan dfs = make_plan(tall, with_threads(4, 12000));
  INFO(dfs);
  CHECK(dfs.extra_bytes() <= 12000);
  CHECK(dfs.count(step_kind::dfs) >= 1);
  CHECK(run_plan_checked<double>(dfs, with_threads(4, 12000)) == "");
  // One root temporary and a little more: the k-cut's parts share what is left, and each
  // part's triangle, with no room for its own temporary, is cut along the diagonal.
  const std::size_t cap = 32768 + 4000;
  const plan nested = make_plan(tall, with_threads(4, cap));
  INFO(nested);
  REQUIRE(nested.nodes()[0].cut == dim::k);
  CHECK(nested.nodes()[0].parts.size() == 2);
  for (int c : nested.nodes()[0].children) CHECK(is_diagonal_cut(nested.nodes()[std::size_t(c)]));
  CHECK(nested.extra_bytes() <= cap);
  CHECK(make_plan(tall, with_threads(4, none)).extra_bytes() == 3 * 32768);
  // The pool never lends more than the cap.
  context ctx = with_threads(4, cap);
  prism::detail::runtime_of(ctx).pool().trim();
  CHECK(run_api_checked<double>(tall, ctx) == "");
  CHECK(prism::detail::runtime_of(ctx).pool().snapshot().peak_on_loan <= cap);
  // The randomized sweep in test_syrk covers caps 0, 4096 and 65536 on every type.
}

// ---- the NUMA level (synthetic topologies; leaves and reductions checked by hooks) ----

namespace {

std::atomic<int> leaves_seen{0}, leaves_misplaced{0}, reductions_seen{0}, reductions_misplaced{0};
int reduce_expected = -1;

void check_domain(int planned) {
  ++leaves_seen;
  if (detail::current_domain() != planned) ++leaves_misplaced;
}
void check_reduce(int owner) {
  ++reductions_seen;
  if (detail::current_domain() != owner || owner != reduce_expected) ++reductions_misplaced;
}

}  // namespace

TEST_CASE("numa: a tall update is cut along k over the domains, temporaries from the computing domain") {
  context ctx = on("numa:2 core:2 pu:1", 4);
  const problem pr = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 32, 1 << 18);
  const plan p = make_plan(pr, ctx);
  INFO(p);
  REQUIRE(p.domains() == 2);
  const node& root = p.nodes()[0];
  CHECK(root.where == level::numa);
  CHECK(root.cut == dim::k);
  CHECK(root.parts[0].domains == 1);
  CHECK(root.parts[0].threads == 2);
  leaves_seen = 0, leaves_misplaced = 0, reductions_seen = 0, reductions_misplaced = 0, reduce_expected = 0;
  detail::set_leaf_hook(&check_domain);
  detail::set_reduce_hook(&check_reduce);
  for (int rep = 0; rep < 2; ++rep) CHECK(run_api_checked<double>(pr, ctx, unsigned(rep)) == "");
  detail::set_leaf_hook(nullptr);
  detail::set_reduce_hook(nullptr);
  CHECK(leaves_seen == 2 * int(p.leaves()));
  CHECK(leaves_misplaced == 0);
  CHECK(reductions_seen == 2);
  CHECK(reductions_misplaced == 0);
  // The root's triangle temporary is part 1's: it comes from domain 1's pool, once (reused).
  auto& domains = prism::detail::runtime_of(ctx).domains(ctx.machine());
  CHECK(domains.pool(1).snapshot().allocations >= 1);
  CHECK(domains.pool(1).snapshot().bytes_on_loan == 0);
  CHECK(domains.pool(0).snapshot().bytes_held <= domains.pool(1).snapshot().bytes_held);
}

TEST_CASE("numa: a square update gives the triangles half the domains and the gemm block the other half") {
  for (const char* desc : {"numa:2 core:2 pu:1", "package:2 numa:2 core:1 pu:1", "numa:3 core:1 pu:1"}) {
    const int dc = int(topology::synthetic(desc).domains().size());
    context ctx = on(desc, 2 * dc);
    const problem pr = rank_k_problem(scalar_type::z, operation::herk, 'L', 'N', 96, 80);
    const plan p = make_plan(pr, ctx);
    INFO(desc, "\n", p);
    REQUIRE(p.domains() == dc);
    const node& root = p.nodes()[0];
    REQUIRE(is_diagonal_cut(root));
    CHECK(root.where == level::numa);
    CHECK(root.parts[0].domains == dc / 2);
    CHECK(root.parts[2].domains == dc - dc / 2);
    CHECK(p.nodes()[std::size_t(root.children[2])].owns.domains.first == dc / 2);
    CHECK(plan::parse(p.to_string()) == p);
    leaves_seen = 0, leaves_misplaced = 0;
    detail::set_leaf_hook(&check_domain);
    CHECK(run_api_checked<std::complex<double>>(pr, ctx) == "");
    detail::set_leaf_hook(nullptr);
    CHECK(leaves_seen == int(p.leaves()));
    CHECK(leaves_misplaced == 0);
  }
}

TEST_CASE("numa: a triangle too small to give every domain a piece is planned on one domain") {
  context ctx = on("package:2 numa:2 core:1 pu:1", 4);
  const plan p = make_plan(rank_k_problem(scalar_type::d, operation::syrk, 'U', 'N', 5, 6), ctx);
  CHECK(p.domains() == 1);
  CHECK(run_plan_checked<double>(p, ctx) == "");
}
