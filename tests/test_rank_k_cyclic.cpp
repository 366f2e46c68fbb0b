// tests/test_rank_k_cyclic.cpp — a rank-k scheme on ScaLAPACK's block-cyclic layout,
// without MPI (lib/ranks/rank_k_cyclic.hpp): the native pieces of all plan ranks cover
// sub(A) and sub(C)'s triangle exactly once under every fit, and the exact per-process
// counts of p?syrk_'s three stages equal an element-by-element count.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "ranks/rank_k_cyclic.hpp"

#include <prism/plan.hpp>

#include <random>
#include <vector>

using namespace prism;
using namespace prism::ranks;

namespace {

cyclic_dim random_dim(std::mt19937& rng, std::int64_t n, int procs) {
  cyclic_dim d;
  d.n = n;
  d.offset = std::uniform_int_distribution<int>(0, 5)(rng);
  d.block = std::uniform_int_distribution<int>(1, 5)(rng);
  d.first = std::uniform_int_distribution<int>(1, int(d.block))(rng);
  d.src = std::uniform_int_distribution<int>(0, procs - 1)(rng);
  d.procs = procs;
  return d;
}

// A valid scheme for p over at most P ranks (the model's own limits).
rank_k_scheme random_scheme(std::mt19937& rng, const problem& p, int P) {
  for (;;) {
    const int c = std::uniform_int_distribution<int>(1, P)(rng);
    const int G = std::uniform_int_distribution<int>(1, P / c)(rng);
    if (c > p.n || G > p.k || (c > 1 && c % 2 == 0 && p.k < 2 * G)) continue;
    const int most = int(std::min<std::int64_t>(3, std::max<std::int64_t>(1, p.k / G)));
    return rank_k_scheme{G, c, std::uniform_int_distribution<int>(1, most)(rng)};
  }
}

}  // namespace

TEST_CASE("p?syrk_'s three stages: coverage once and exact counts, every fit") {
  std::mt19937 rng(28);
  const scalar_type types[] = {scalar_type::s, scalar_type::d, scalar_type::c, scalar_type::z};
  for (int trial = 0; trial < 150; ++trial) {
    const scalar_type t = types[trial % 4];
    const bool herk = is_complex(t) && trial % 3 == 0;
    const char uplo = trial % 2 ? 'U' : 'L';
    const char trans = trial % 5 < 2 ? 'N' : herk ? 'C' : 'T';
    const std::int64_t n = std::uniform_int_distribution<int>(1, 23)(rng), k = std::uniform_int_distribution<int>(1, 29)(rng);
    const problem p = rank_k_problem(t, herk ? operation::herk : operation::syrk, uplo, trans, n, k);
    caller_layout L;
    L.nprow = std::uniform_int_distribution<int>(1, 3)(rng), L.npcol = std::uniform_int_distribution<int>(1, 3)(rng);
    const bool nt = p.transa == 'N';
    L.op[0] = {random_dim(rng, nt ? n : k, L.nprow), random_dim(rng, nt ? k : n, L.npcol)};
    L.op[1] = L.op[0];
    L.op[2] = {random_dim(rng, n, L.nprow), random_dim(rng, n, L.npcol)};
    const rank_k_model m(p, random_scheme(rng, p, L.procs()));
    const rank_k_fit f{trial % 2 == 0, trial % 4 < 2};
    CAPTURE(trial);
    CAPTURE(m.scheme().to_string());
    const dim_view kv = rank_k_view(f, L, p);
    const std::size_t P = std::size_t(L.procs());
    std::vector<int> seen_a(std::size_t(L.op[0].rows.n * L.op[0].cols.n), 0), seen_c(std::size_t(n * n), 0);
    std::vector<std::int64_t> received(P, 0), sent(P, 0);
    auto holder = [&](const operand_layout& o, std::int64_t i, std::int64_t j) { return o.rows.owner(i) * L.npcol + o.cols.owner(j); };
    for (int r = 0; r < m.ranks(); ++r) {
      const std::size_t q = std::size_t(rank_k_process(f, L, r));
      for (const rank_k_span& s : rank_k_spans(m, operand::a, r))
        for_each_a_run(s, nt, kv, [&](std::int64_t i, std::int64_t j, std::int64_t len, std::int64_t) {
          for (std::int64_t x = i; x < i + len; ++x) {
            ++seen_a[std::size_t(x + j * L.op[0].rows.n)];
            const std::size_t h = std::size_t(holder(L.op[0], x, j));
            if (h != q) ++received[q], ++sent[h];
          }
        });
      for (const rank_k_span& s : rank_k_spans(m, operand::c, r))
        for_each_run(s, [&](std::int64_t i, std::int64_t j, std::int64_t len, std::int64_t) {
          for (std::int64_t x = i; x < i + len; ++x) {
            CHECK((uplo == 'U' ? x <= j : x >= j));
            ++seen_c[std::size_t(x + j * n)];
            const std::size_t h = std::size_t(holder(L.op[2], x, j));
            if (h != q) ++received[h], ++sent[q];
          }
        });
      const rank_cost rc = m.cost(r);
      received[q] += rc.received_total(), sent[q] += rc.sent[0] + rc.sent[1] + rc.sent[2];
    }
    for (int v : seen_a) CHECK(v == 1);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) CHECK(seen_c[std::size_t(i + j * n)] == ((uplo == 'U' ? i <= j : i >= j) ? 1 : 0));
    const rank_k_cyclic_cost cost = cost_rank_k_cyclic(m, L, f, 1e9, 1e9);
    CHECK(cost.received == received);
    CHECK(cost.sent == sent);
  }
}

TEST_CASE("the process map and k view") {
  caller_layout L;
  L.nprow = 2, L.npcol = 3;
  CHECK(rank_k_process(rank_k_fit{false, true}, L, 1) == 3);  // the header's example
  CHECK(rank_k_process(rank_k_fit{false, false}, L, 1) == 1);
  // 'T': k is sub(A)'s rows; 8 rows in blocks of 2 over 2 process rows from 0: 0 1 4 5 2 3 6 7.
  L.op[0] = {cyclic_dim{8, 0, 2, 2, 0, 2}, cyclic_dim{4, 0, 1, 1, 0, 3}};
  const problem p = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 4, 8);
  const dim_view v = rank_k_view(rank_k_fit{true, false}, L, p);
  std::vector<std::int64_t> order;
  v.runs(0, 8, [&](std::int64_t, std::int64_t idx, std::int64_t len) {
    for (std::int64_t t = 0; t < len; ++t) order.push_back(idx + t);
  });
  CHECK(order == std::vector<std::int64_t>{0, 1, 4, 5, 2, 3, 6, 7});
  // The header's for_each_a_run example: a run of rows 2..5 becomes rows 4-5, then 2-3.
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  for_each_a_run(rank_k_span{0, 0, 8, 2, 4, 0}, false, v,
                 [&](std::int64_t i, std::int64_t, std::int64_t len, std::int64_t) { runs.push_back({i, len}); });
  CHECK(runs == std::vector<std::pair<std::int64_t, std::int64_t>>{{4, 2}, {2, 2}});
}
