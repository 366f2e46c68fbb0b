// tests/test_layout_plan.cpp — the ScaLAPACK layer's layout math, without MPI: block-cyclic
// ownership against brute force, grouped views, and the exact exchange volume of a plan
// fitted to a caller's layout against an element-by-element count.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "ranks/block_cyclic.hpp"
#include "ranks/layout_plan.hpp"
#include "ranks/ownership.hpp"

#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/rank_model.hpp>

#include <random>
#include <set>

using namespace prism;
using namespace prism::ranks;

namespace {

// Owner of global index g, the slow way: walk the blocks.
int brute_owner(const cyclic_dim& d, std::int64_t g) {
  std::int64_t start = 0, b = 0;
  for (;; ++b) {
    const std::int64_t len = b == 0 ? d.first : d.block;
    if (g < start + len) return int((d.src + b) % d.procs);
    start += len;
  }
}

cyclic_dim random_dim(std::mt19937& rng) {
  std::uniform_int_distribution<int> small(1, 7), procs(1, 4), n(0, 60);
  cyclic_dim d;
  d.procs = procs(rng);
  d.src = int(rng() % unsigned(d.procs));
  d.block = small(rng);
  d.first = rng() % 2 ? d.block : small(rng);
  d.offset = rng() % 9;
  d.n = n(rng);
  return d;
}

// A 2-D layout with every operand in blocks of nb on a pr x pc grid, submatrices at 0.
caller_layout grid_layout(const problem& p, int pr, int pc, std::int64_t nb) {
  caller_layout L;
  L.nprow = pr, L.npcol = pc;
  auto d = [&](std::int64_t n, int procs) { return cyclic_dim{n, 0, nb, nb, 0, procs}; };
  const std::int64_t ar = p.transa == 'N' ? p.m : p.k, ac = p.transa == 'N' ? p.k : p.m;
  const std::int64_t br = p.transb == 'N' ? p.k : p.n, bc = p.transb == 'N' ? p.n : p.k;
  L.op[0] = {d(ar, pr), d(ac, pc)};
  L.op[1] = {d(br, pr), d(bc, pc)};
  L.op[2] = {d(p.m, pr), d(p.n, pc)};
  return L;
}

}  // namespace

TEST_CASE("block-cyclic ownership, local indices and segments match brute force") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const cyclic_dim d = random_dim(rng);
    std::vector<std::int64_t> seen(std::size_t(d.procs), 0);
    // owned_global counts from global index 0, so walk the indices before the submatrix too.
    for (std::int64_t g = 0; g < d.offset + d.n; ++g) {
      const int o = brute_owner(d, g);
      REQUIRE(d.owner_global(g) == o);
      for (int p = 0; p < d.procs; ++p) REQUIRE(d.owned_global(p, g) == seen[std::size_t(p)]);
      REQUIRE(d.global_of_local(o, seen[std::size_t(o)]) == g);
      if (g >= d.offset) REQUIRE(d.local(g - d.offset) == seen[std::size_t(o)]);
      ++seen[std::size_t(o)];
    }
    std::int64_t next = 0;
    d.segments(0, d.n, [&](std::int64_t i, std::int64_t len, int owner, std::int64_t local) {
      REQUIRE(i == next);
      for (std::int64_t t = 0; t < len; ++t) {
        REQUIRE(d.owner(i + t) == owner);
        REQUIRE(d.local(i + t) == local + t);
      }
      next += len;
    });
    REQUIRE(next == d.n);
  }
}

TEST_CASE("a grouped view lists each process's indices in order, and counts like brute force") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const cyclic_dim d = random_dim(rng);
    cyclic_dim other = random_dim(rng);
    other.n = d.n;
    const dim_view v = dim_view::grouped(d);
    std::vector<std::int64_t> at;
    v.runs(0, d.n, [&](std::int64_t x, std::int64_t i, std::int64_t len) {
      REQUIRE(x == std::int64_t(at.size()));
      for (std::int64_t t = 0; t < len; ++t) at.push_back(i + t);
    });
    REQUIRE(std::int64_t(at.size()) == d.n);
    REQUIRE(std::set<std::int64_t>(at.begin(), at.end()).size() == at.size());  // a permutation
    for (std::size_t x = 1; x < at.size(); ++x) {  // owners ascending, indices ascending within one
      const int a = d.owner(at[x - 1]), b = d.owner(at[x]);
      REQUIRE((a < b || (a == b && at[x - 1] < at[x])));
    }
    for (int q = 0; q < 5 && d.n > 0; ++q) {
      const std::int64_t x0 = std::int64_t(rng() % std::uint64_t(d.n)), x1 = x0 + std::int64_t(rng() % std::uint64_t(d.n - x0 + 1));
      for (const cyclic_dim* e : {&d, static_cast<const cyclic_dim*>(&other)})
        for (int p = 0; p < e->procs; ++p) {
          std::int64_t brute = 0;
          for (std::int64_t x = x0; x < x1; ++x) brute += e->owner(at[std::size_t(x)]) == p;
          REQUIRE(v.count(x0, x1, *e, p) == brute);
          REQUIRE(dim_view::identity(d.n).count(x0, x1, *e, p) == [&] {
            std::int64_t c = 0;
            for (std::int64_t x = x0; x < x1; ++x) c += e->owner(x) == p;
            return c;
          }());
        }
    }
  }
}

namespace {

// Every process's received and sent elements under fit f, counted element by element: each
// element of a rank's regions of A and B its process does not hold comes from the holder;
// each element of a rank's C regions (after a reduction) goes to its holder.
void check_fit_by_elements(const schedule& s, const caller_layout& L, const layout_fit& f) {
  const problem& p = s.product();
  const dim_view view[3] = {make_view(L, p, 0, f.views[0]), make_view(L, p, 1, f.views[1]), make_view(L, p, 2, f.views[2])};
  std::vector<std::int64_t> at[3];
  for (int d = 0; d < 3; ++d)
    view[d].runs(0, view[d].size(), [&](std::int64_t, std::int64_t i, std::int64_t len) {
      for (std::int64_t t = 0; t < len; ++t) at[d].push_back(i + t);
    });
  std::vector<std::int64_t> brute(std::size_t(L.procs()), 0), brute_sent(std::size_t(L.procs()), 0);
  auto holder = [&](operand o, std::int64_t row_pos, std::int64_t col_pos) {
    const int rd = dim_of(p, o, false), cd = dim_of(p, o, true);
    return L.op[int(o)].rows.owner(at[rd][std::size_t(row_pos)]) * L.npcol + L.op[int(o)].cols.owner(at[cd][std::size_t(col_pos)]);
  };
  for (int q = 0; q < s.phases(); ++q)
    for (int r = 0; r < s.ranks(); ++r) {
      std::vector<region> mine[3];
      s.regions(q, r, mine);
      mine[2] = s.epoch_regions(q, r);
      const int g = process_of(f, L, r);
      for (operand o : {operand::a, operand::b, operand::c}) {
        std::set<std::pair<std::int64_t, std::int64_t>> seen;  // a rank's regions do not overlap
        for (const region& x : mine[int(o)])
          each_column_run(x, 0, x.elements(), [&](std::int64_t i0, std::int64_t j, std::int64_t len, std::int64_t) {
            for (std::int64_t i = i0; i < i0 + len; ++i) {
              REQUIRE(seen.insert({i, j}).second);
              const int h = holder(o, i, j);
              if (h == g) continue;
              if (o != operand::c) ++brute[std::size_t(g)], ++brute_sent[std::size_t(h)];
              else ++brute[std::size_t(h)], ++brute_sent[std::size_t(g)];
            }
          });
      }
    }
  CHECK(f.received == brute);
  CHECK(f.sent == brute_sent);
}

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

}  // namespace

TEST_CASE("a fitted plan's volume equals an element-by-element count") {
  // Odd sizes, blocks of 3 and 2, offsets, a 2 x 3 grid, every trans: each process receives
  // every element of its boxes of A and B it does not hold, and every element of C it holds
  // that another process computes.
  context ctx = default_context();
  ctx.set_threads(1);
  for (char ta : {'N', 'T'})
    for (char tb : {'N', 'T'}) {
      const problem p{scalar_type::d, ta, tb, 23, 17, 29};
      caller_layout L = grid_layout(p, 2, 3, 3);
      L.op[0].rows.offset = 2, L.op[1].cols.block = 2, L.op[1].cols.first = 2, L.op[2].rows.src = 1;
      const layout_choice c = plan_for_layout(p, L, ctx);
      check_fit_by_elements(*c.model, L, c.fit);
    }
}

TEST_CASE("a rank-k scheme in place on a block-cyclic layout: every fit's volume equals an element-by-element count") {
  // p?syrk_ / p?herk_: random odd layouts (blocks 1-5, first blocks, offsets, sources) on
  // grids up to 3 x 3, every scheme of the planner's kinds, every type, U/L, N/T/C, k as is
  // or grouped by sub(A)'s k distribution, plan ranks row- or column-major.
  std::mt19937 rng(28);
  const scalar_type types[] = {scalar_type::s, scalar_type::d, scalar_type::c, scalar_type::z};
  int grouped = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const scalar_type t = types[trial % 4];
    const bool herk = is_complex(t) && trial % 3 == 0;
    const char uplo = trial % 2 ? 'U' : 'L', trans = trial % 5 < 2 ? 'N' : herk ? 'C' : 'T';
    const std::int64_t n = std::uniform_int_distribution<int>(1, 23)(rng), k = std::uniform_int_distribution<int>(1, 29)(rng);
    const problem p = rank_k_problem(t, herk ? operation::herk : operation::syrk, uplo, trans, n, k);
    caller_layout L;
    L.nprow = std::uniform_int_distribution<int>(1, 3)(rng), L.npcol = std::uniform_int_distribution<int>(1, 3)(rng);
    const bool nt = p.transa == 'N';
    L.op[0] = {random_dim(rng, nt ? n : k, L.nprow), random_dim(rng, nt ? k : n, L.npcol)};
    L.op[1] = L.op[0];
    L.op[2] = {random_dim(rng, n, L.nprow), random_dim(rng, n, L.npcol)};
    rank_k_scheme sc;
    for (;;) {  // a scheme the model can build on at most the grid's processes
      const int c = std::uniform_int_distribution<int>(1, L.procs())(rng), G = std::uniform_int_distribution<int>(1, L.procs() / c)(rng);
      if (c > n || G > k || (c > 1 && c % 2 == 0 && k < 2 * G)) continue;
      sc = rank_k_scheme{G, c, std::uniform_int_distribution<int>(1, int(std::min<std::int64_t>(3, std::max<std::int64_t>(1, k / G))))(rng)};
      break;
    }
    const rank_model m(p, sc);
    CAPTURE(trial);
    CAPTURE(m.grid());
    layout_fit f;
    f.views[2] = trial % 2 == 0 ? 1 : 0;
    f.column_major = trial % 4 < 2;
    grouped += f.views[2];
    cost_fit(schedule_of(m), L, 1e9, 1e9, f);
    check_fit_by_elements(schedule_of(m), L, f);
    // The best fit the layer picks (n stays as it is: C's triangle is its own).
    const layout_fit best = fit_plan(schedule_of(m), L, 1e9, 1e9);
    CHECK((best.views[0] == 0 && best.views[1] == 0));
    check_fit_by_elements(schedule_of(m), L, best);
  }
  CHECK(grouped > 20);
}

TEST_CASE("on 2048^3 / 256x256x262144 / 4096x4096x256 over 2 x 2 the fitted plan moves no more than pdgemm's own algorithm") {
  context ctx = default_context();
  ctx.set_threads(1);
  struct shape {
    std::int64_t m, n, k;
    char ta;
  };
  for (const shape s : {shape{2048, 2048, 2048, 'N'}, shape{256, 256, 262144, 'N'}, shape{4096, 4096, 256, 'N'}})
    for (int nb : {32, 128}) {
      const problem p{scalar_type::d, s.ta, 'N', s.m, s.n, s.k};
      const caller_layout L = grid_layout(p, 2, 2, nb);
      const layout_choice c = plan_for_layout(p, L, ctx);
      INFO(s.m << "x" << s.n << "x" << s.k << " nb " << nb << ": " << c.fit.describe());
      CHECK(double(c.fit.max_received) <= c.scalapack_elements);
    }
  // 2048^3, 2 x 2: exactly SUMMA's, each process's own C block: half its rows of A and
  // half its columns of B, 2 * 1024 * 1024 elements.
  const problem sq{scalar_type::d, 'N', 'N', 2048, 2048, 2048};
  CHECK(plan_for_layout(sq, grid_layout(sq, 2, 2, 128), ctx).fit.max_received == 2 * 1024 * 1024);
  // 256 x 256 x 262144, 2 x 2: a k split that keeps each process's own columns of A:
  // 201.7 MB against PBLAS's 268.4 MB.
  const problem tall{scalar_type::d, 'N', 'N', 256, 256, 262144};
  const layout_choice c = plan_for_layout(tall, grid_layout(tall, 2, 2, 128), ctx);
  CHECK(double(c.fit.max_received) < 0.76 * c.scalapack_elements);
}

TEST_CASE("a Gram product's k-aligned panels: PBLAS's volume is the partial-C sum, and the fit matches it") {
  context ctx = default_context();
  ctx.set_threads(1);
  // A^T B, 32 x 32 x 400000 (the bench's 4e6 scaled down), blocks of 32: A and B are
  // 400000 x 32, their k rows dealt round the process rows, their 32 columns on process
  // column 0.
  const problem g{scalar_type::d, 'T', 'N', 32, 32, 400000};
  // 2 x 2: processes (0,0) and (1,0) multiply; (0,0) receives the other partial C (1024).
  const layout_choice c22 = plan_for_layout(g, grid_layout(g, 2, 2, 32), ctx);
  CHECK(c22.scalapack_elements == 1024);
  INFO("2x2: " << c22.text << c22.fit.describe());
  CHECK(c22.fit.max_received <= 1024);
  // 4 x 1: C's holder receives three partial blocks (3072), as ScaLAPACK measured.
  const layout_choice c41 = plan_for_layout(g, grid_layout(g, 4, 1, 32), ctx);
  CHECK(c41.scalapack_elements == 3 * 1024);
  CHECK(double(c41.fit.max_received) <= c41.scalapack_elements);
  // 1 x 4: process 0 holds everything; ScaLAPACK moves nothing and does all the flops, and
  // its modelled time is that of the whole product on one process.
  const layout_choice c14 = plan_for_layout(g, grid_layout(g, 1, 4, 32), ctx);
  CHECK(c14.scalapack_elements == 0);
  CHECK(c14.scalapack_seconds >= gemm_flops(g.type, g.m, g.n, g.k) / ctx.rank_flops());
  // Not k-aligned (A N, B N: A's k runs along columns, B's along rows): the NN formulas.
  const problem nn{scalar_type::d, 'N', 'N', 32, 32, 400000};
  CHECK(plan_for_layout(nn, grid_layout(nn, 2, 2, 32), ctx).scalapack_elements > 1024);
}

TEST_CASE("a process that holds everything must send the others their share: sends count in the time") {
  context ctx = default_context();
  ctx.set_threads(1);
  // Gram 32 x 32 x 400000 on 1 x 4, blocks of 32: process 0 holds all of A and B. Spreading
  // k over 4 processes receives a quarter each but makes process 0 send three quarters,
  // slower than multiplying where the data lies; ScaLAPACK moves nothing either way.
  const problem g{scalar_type::d, 'T', 'N', 32, 32, 400000};
  const layout_choice c = plan_for_layout(g, grid_layout(g, 1, 4, 32), ctx);
  INFO(c.text << c.fit.describe());
  CHECK(c.fit.max_received == 0);
  CHECK(*std::max_element(c.fit.sent.begin(), c.fit.sent.end()) == 0);
  CHECK(c.fit.seconds >= c.scalapack_seconds);  // so auto routes it to ScaLAPACK
}

TEST_CASE("memory under the layout: a process holding all of A and B needs no copies, so the one-rank plan fits") {
  context ctx = default_context();
  ctx.set_threads(1);
  // 32 x 32 x 4e6 on 1 x 4: process 0 holds 2 GB of A and B. prism's native model would buffer
  // them; in place nothing is copied but the 32 x 32 C box's partial sums.
  const problem g{scalar_type::d, 'T', 'N', 32, 32, 4000000};
  ctx.set_max_memory(std::size_t(64) << 20);  // 64 MiB of copies per rank
  const layout_choice c = plan_for_layout(g, grid_layout(g, 1, 4, 32), ctx);
  INFO(c.text << c.fit.describe());
  CHECK(c.fit.max_received == 0);
  CHECK(c.fit.max_buffer <= 32 * 32);
  CHECK(c.fit.peak_bytes <= (std::size_t(64) << 20));
}

TEST_CASE("a refusal under the caller's layout names its least footprint, not prism's own layout's floor") {
  context ctx = default_context();
  ctx.set_threads(1);
  // 100 x 90 x 70 on 2 x 2, blocks of 32, 1 KiB a rank: nothing fits. Under the layout the
  // caller holds A, B and C, so footprints leave them out (here below the 44,600 bytes they
  // take spread over 4 ranks); the floor of prism's own layout and the tool's --min-memory
  // hint would contradict the least footprint named, so neither is said.
  const problem g{scalar_type::d, 'N', 'N', 100, 90, 70};
  ctx.set_max_memory(1024);
  std::string what;
  try {
    plan_for_layout(g, grid_layout(g, 2, 2, 32), ctx);
  } catch (const plan_error& e) {
    what = e.what();
  }
  INFO(what);
  CHECK(what.find("fits 1024 bytes per rank: the least footprint is ") != std::string::npos);
  CHECK(what.find("no plan holds less than") == std::string::npos);
  CHECK(what.find("--min-memory") == std::string::npos);
}
