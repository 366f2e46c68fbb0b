// rank_k_model against brute force (no MPI): for random n, k and schemes (k slices x
// triangle blocks x phases), every multiply-add of the triangle is computed by exactly one
// rank, every element of A and of C's triangle is owned by exactly one rank, and each
// rank's received volume, counted element by element, equals the model's cost. Also the
// difference covers, and the planner's choices and least footprint.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/bounds.hpp>
#include <prism/error.hpp>
#include <prism/rank_k_model.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

using namespace prism;

namespace {

// Element (row, column) of stored A or C for each of rank r's pieces, in storage order.
std::vector<std::pair<std::int64_t, std::int64_t>> a_elements(const rank_k_model& m, int r) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  const bool n_trans = m.source().transa == 'N';
  for (const auto& [x, pc] : m.a_pieces(r)) {
    const std::int64_t R = n_trans ? m.block_rows(x.b) : x.k1 - x.k0;
    for (std::int64_t e = pc.first; e < pc.first + pc.count; ++e) {
      const std::int64_t i = e % R, j = e / R;
      out.emplace_back(n_trans ? m.block_start(x.b) + i : x.k0 + i, n_trans ? x.k0 + j : m.block_start(x.b) + j);
    }
  }
  return out;
}

// C elements (lower orientation: row >= column) of rank r's pieces.
std::vector<std::pair<std::int64_t, std::int64_t>> c_elements(const rank_k_model& m, int r) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (const piece& pc : m.c_pieces(r)) {
    const auto [bi, bj] = rank_k_model::c_block(pc.cell);
    const std::int64_t s = m.block_rows(bi), i0 = m.block_start(bi), j0 = m.block_start(bj);
    std::vector<std::pair<std::int64_t, std::int64_t>> all;  // the cell's elements in order
    if (bi != bj) {
      // Lower orientation: rows of block bi, columns of block bj (the stored U place is its
      // transpose; ownership is the same set).
      const bool lower = m.source().uplo == 'L';
      const std::int64_t R = lower ? s : m.block_rows(bj), C = lower ? m.block_rows(bj) : s;
      for (std::int64_t j = 0; j < C; ++j)
        for (std::int64_t i = 0; i < R; ++i) all.emplace_back(lower ? i0 + i : i0 + j, lower ? j0 + j : j0 + i);
    } else {
      for (std::int64_t j = 0; j < s; ++j)
        for (std::int64_t i = 0; i < s; ++i)
          if (m.source().uplo == 'L' ? i >= j : i <= j) all.emplace_back(i0 + std::max(i, j), i0 + std::min(i, j));
    }
    for (std::int64_t e = pc.first; e < pc.first + pc.count; ++e) out.push_back(all[std::size_t(e)]);
  }
  return out;
}

// Every figure of rank r's cost recounted from the model's cells: the A cells it needs with
// their holders and pieces (which must tile each cell), its units and the pieces of their C
// blocks (which must tile each block), so the fast paths (a plane's role tables, plane_a)
// answer for sent words, flops, owned and buffer bytes too.
void check_recount(const rank_k_model& m, int r) {
  const problem& p = m.source();
  const std::size_t elem = element_size(p.type);
  rank_cost want;
  std::int64_t most_blocks = 0, most_stage = 0, c_blocks = 0;
  auto tiles = [](const std::vector<piece>& sh, std::int64_t N) {
    std::int64_t at = 0;
    for (const piece& pc : sh) {
      if (pc.first != at || pc.count < 0) return false;
      at += pc.count;
    }
    return at == N;
  };
  for (int q = 0; q < m.phases(); ++q) {
    std::int64_t in = 0, out = 0, blocks = 0;
    std::map<int, std::pair<std::int64_t, std::int64_t>> hull;
    for (const rank_k_model::a_cell& x : m.a_needs(q, r)) {
      const std::vector<int> h = m.a_holders(x);
      const std::vector<piece> sh = m.a_shares(x);
      const auto at = std::find(h.begin(), h.end(), r);
      REQUIRE(at != h.end());
      REQUIRE(tiles(sh, x.size(m)));
      const std::int64_t own = sh[std::size_t(at - h.begin())].count;
      in += x.size(m) - own, out += own * std::int64_t(h.size() - 1);
      want.owned_bytes += std::size_t(own) * elem;
      auto [e, fresh] = hull.try_emplace(x.b, x.k0, x.k1);
      if (!fresh) e->second = {std::min(e->second.first, x.k0), std::max(e->second.second, x.k1)};
    }
    for (const auto& [b, k] : hull) blocks += m.block_rows(b) * (k.second - k.first);
    want.received[0] += in, want.sent[0] += out;
    most_blocks = std::max(most_blocks, blocks), most_stage = std::max(most_stage, in + out);
  }
  for (const rank_k_unit& u : m.slice_units(r)) {
    const std::int64_t ri = m.block_rows(u.i), rj = m.block_rows(u.j), N = m.c_size(u.i, u.j);
    want.flops += u.i == u.j ? (is_complex(p.type) ? 4.0 : 1.0) * double(ri) * double(ri + 1) * double(u.k1 - u.k0)
                             : gemm_flops(p.type, ri, rj, u.k1 - u.k0);
    c_blocks += ri * rj;
    const std::vector<int> h = m.c_holders(u.i, u.j);
    const std::vector<piece> sh = m.c_shares(u.i, u.j);
    REQUIRE(tiles(sh, N));
    const std::int64_t own = sh[std::size_t(std::find(h.begin(), h.end(), r) - h.begin())].count;
    want.received[2] += own * std::int64_t(h.size() - 1), want.sent[2] += N - own;
    want.owned_bytes += std::size_t(own) * elem;
  }
  want.buffer_bytes = std::size_t(most_blocks + c_blocks + std::max(most_stage, want.received[2] + want.sent[2])) * elem;
  const rank_cost got = m.cost(r);
  CAPTURE(r);
  CHECK(got.received[0] == want.received[0]);
  CHECK(got.received[2] == want.received[2]);
  CHECK(got.sent[0] == want.sent[0]);
  CHECK(got.sent[2] == want.sent[2]);
  CHECK(got.flops == doctest::Approx(want.flops).epsilon(1e-12));
  CHECK(got.owned_bytes == want.owned_bytes);
  CHECK(got.buffer_bytes == want.buffer_bytes);
}

// Whether the pieces of every C block's computers tile it, one after another from element 0.
bool c_blocks_tiled(const rank_k_model& m) {
  for (int i = 0; i < m.blocks(); ++i)
    for (int j = 0; j <= i; ++j) {
      std::int64_t at = 0;
      for (const piece& pc : m.c_shares(i, j)) {
        if (pc.first != at || pc.count < 0) return false;
        at += pc.count;
      }
      if (at != m.c_size(i, j)) return false;
    }
  return true;
}

void check_scheme(const problem& p, const rank_k_scheme& s) {
  const rank_k_model m(p, s);
  const int P = m.ranks();
  const std::int64_t n = p.n, k = p.k;
  // Each multiply-add (i >= j, l) once.
  std::vector<int> done(std::size_t(n * n * k), 0);
  std::vector<std::set<std::pair<std::int64_t, std::int64_t>>> reads(static_cast<std::size_t>(P));  // op(A) (row, l)
  std::map<std::pair<std::int64_t, std::int64_t>, std::set<int>> computers;             // C (i, j) -> ranks
  for (int r = 0; r < P; ++r)
    for (int q = 0; q < m.phases(); ++q)
      for (const rank_k_unit& u : m.units(q, r))
        for (std::int64_t l = u.k0; l < u.k1; ++l)
          for (std::int64_t i = m.block_start(u.i); i < m.block_start(u.i + 1); ++i)
            for (std::int64_t j = m.block_start(u.j); j < m.block_start(u.j + 1); ++j) {
              if (u.i == u.j && j > i) continue;
              done[std::size_t((i * n + j) * k + l)] += 1;
              reads[std::size_t(r)].insert({i, l});
              reads[std::size_t(r)].insert({j, l});
              computers[{i, j}].insert(r);
            }
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j <= i; ++j)
      for (std::int64_t l = 0; l < k; ++l) REQUIRE(done[std::size_t((i * n + j) * k + l)] == 1);
  // Ownership: every element of A and of the triangle once.
  std::map<std::pair<std::int64_t, std::int64_t>, int> a_owner, c_owner;
  for (int r = 0; r < P; ++r) {
    for (auto e : a_elements(m, r)) REQUIRE(a_owner.emplace(e, r).second);
    for (auto e : c_elements(m, r)) REQUIRE(c_owner.emplace(e, r).second);
  }
  CHECK(std::int64_t(a_owner.size()) == n * k);
  CHECK(std::int64_t(c_owner.size()) == n * (n + 1) / 2);
  // Received per rank: A elements read and owned elsewhere; one partial per other
  // computer of each C element it owns.
  for (int r = 0; r < P; ++r) {
    std::int64_t a_in = 0, c_in = 0;
    for (auto [i, l] : reads[std::size_t(r)]) {
      const auto key = p.transa == 'N' ? std::pair{i, l} : std::pair{l, i};
      a_in += a_owner.at(key) != r;
    }
    for (const auto& [e, owner] : c_owner) {
      if (owner != r) continue;
      const auto it = computers.find(e);
      const std::int64_t comps = it == computers.end() ? 0 : std::int64_t(it->second.size());
      c_in += comps - (it != computers.end() && it->second.count(r) ? 1 : 0);
    }
    check_recount(m, r);
    const rank_cost rc = m.cost(r);
    CAPTURE(r);
    CHECK(rc.received[0] == a_in);
    CHECK(rc.received[2] == c_in);
    CHECK(m.local_size(operand::a, r) == std::int64_t(a_elements(m, r).size()));
  }
}

}  // namespace

TEST_CASE("difference covers cover every difference, and are perfect where one is known") {
  for (int c = 1; c <= 60; ++c) {
    const std::vector<int> D = difference_cover(c);
    std::set<int> diffs;
    for (int a : D)
      for (int b : D) diffs.insert(((a - b) % c + c) % c);
    CAPTURE(c);
    CHECK(int(diffs.size()) == c);
    CHECK(D.front() == 0);
  }
  CHECK(difference_cover(7).size() == 3);   // the Fano plane
  CHECK(difference_cover(13).size() == 4);  // the projective plane of order 3
  CHECK(difference_cover(21).size() == 5);
  // Beyond the search (c > 36), Singer's planes for every prime power q: c = q^2 + q + 1 has a
  // cover of q + 1, every difference once. q = 8, 9, 16, 25 are prime powers; the sets for
  // prime q are the ones plans have always named (q = 7: c = 57).
  for (int q : {7, 8, 9, 11, 16, 25, 27}) {
    const int c = q * q + q + 1;
    const std::vector<int> D = difference_cover(c);
    std::vector<int> times(static_cast<std::size_t>(c), 0);
    for (int a : D)
      for (int b : D)
        if (a != b) ++times[static_cast<std::size_t>(((a - b) % c + c) % c)];
    CAPTURE(q);
    CHECK(int(D.size()) == q + 1);
    CHECK(std::count(times.begin() + 1, times.end(), 1) == c - 1);
  }
  CHECK(difference_cover(57) == std::vector<int>{0, 1, 4, 12, 14, 30, 37, 52});
  CHECK(difference_cover(133) == std::vector<int>{0, 1, 8, 21, 39, 43, 48, 54, 73, 105, 117, 131});
  CHECK(difference_cover(183) == std::vector<int>{0, 1, 8, 24, 37, 41, 59, 107, 119, 128, 134, 139, 153, 181});
}

TEST_CASE("the model equals brute force on random schemes") {
  std::mt19937_64 gen(5);
  for (int t = 0; t < 60; ++t) {
    const int c = 1 + int(gen() % 7), G = 1 + int(gen() % 3), q = 1 + int(gen() % 3);
    const std::int64_t n = c + std::int64_t(gen() % 12), k = 2 * std::int64_t(G * q) + std::int64_t(gen() % 14);
    const problem p = rank_k_problem(scalar_type::d, operation::syrk, gen() % 2 ? 'U' : 'L', gen() % 2 ? 'N' : 'T', n, k);
    CAPTURE(n);
    CAPTURE(k);
    const std::string scheme = rank_k_scheme{G, c, q}.to_string();
    CAPTURE(scheme);
    check_scheme(p, rank_k_scheme{G, c, q});
  }
}

TEST_CASE("the model equals brute force on schemes of several parts and stars") {
  std::mt19937_64 gen(9);
  for (int t = 0; t < 40; ++t) {
    std::vector<rank_k_part> parts;
    const int count = 1 + int(gen() % 3);
    bool uneven = false;
    std::int64_t n = 12 + std::int64_t(gen() % 9);
    for (int i = 0; i < count; ++i) {
      switch (gen() % 6) {
        case 0: parts.push_back({1 + int(gen() % 2), 4, rank_k_cover::star}); break;
        case 5: {  // a star of uneven roles: m0 centre ranks, m on each leaf role, m0 != m
          const int m = 1 + int(gen() % 2);
          int m0 = 1 + int(gen() % std::uint64_t(3 * m - 1));
          if (m0 >= m) ++m0;
          parts.push_back({1, 4, rank_k_cover::star, {m0, m, m, m}});
          uneven = true;
          n = std::max<std::int64_t>(n, 32 + std::int64_t(gen() % 5));  // m0 = 3m leaves the leaves 0.134 n rows
          break;
        }
        case 1:  // the nest: outer and inner ranks
          parts.push_back({1, 2, rank_k_cover::nest, {1 + int(gen() % 3), 1 + int(gen() % 2)}});
          uneven = true;
          break;
        case 2: {  // an odd cover with roles of uneven ranks
          const int c = 3 + 2 * int(gen() % 3);  // 3, 5 or 7
          std::vector<int> m(static_cast<std::size_t>(c));
          for (int& v : m) v = 1 + int(gen() % 3);
          parts.push_back({1, c, rank_k_cover::difference, m});
          uneven = true;
          n = std::max<std::int64_t>(n, 8 * c + std::int64_t(gen() % 5));
          break;
        }
        default: parts.push_back({1 + int(gen() % 2), 1 + int(gen() % 5), rank_k_cover::difference});
      }
    }
    const rank_k_scheme s(parts, uneven ? 1 : 1 + int(gen() % 2));
    const std::int64_t k = 8 * std::int64_t(s.ranks()) + std::int64_t(gen() % 20);
    const problem p = rank_k_problem(scalar_type::d, operation::syrk, gen() % 2 ? 'U' : 'L', gen() % 2 ? 'N' : 'T', n, k);
    CAPTURE(n);
    CAPTURE(k);
    const std::string scheme = s.to_string();
    CAPTURE(scheme);
    check_scheme(p, s);
  }
}

TEST_CASE("scheme text: to_string and parse round-trip, bad text is refused naming what is wrong") {
  for (const rank_k_scheme& s :
       {rank_k_scheme(), rank_k_scheme(8, 1), rank_k_scheme(1, 7, 4), rank_k_scheme(2, 3),
        rank_k_scheme({{1, 4, rank_k_cover::star}, {1, 3, rank_k_cover::difference}}),
        rank_k_scheme({{2, 4, rank_k_cover::star}}, 2),
        rank_k_scheme({{1, 7, rank_k_cover::difference}, {2, 3, rank_k_cover::difference}, {1, 1, rank_k_cover::difference}}),
        rank_k_scheme({{1, 7, rank_k_cover::difference, {3, 3, 2, 2, 2, 2, 2}}}),
        rank_k_scheme({{1, 2, rank_k_cover::nest, {2, 1}}, {1, 3, rank_k_cover::difference}})}) {
    CAPTURE(s.to_string());
    CHECK(rank_k_scheme::parse(s.to_string()) == s);
  }
  CHECK(rank_k_scheme({{1, 4, rank_k_cover::star}, {1, 3, rank_k_cover::difference}}, 2).to_string() ==
        "star4 + tbd3{0,1} dfs k2");
  CHECK(rank_k_scheme({{1, 7, rank_k_cover::difference, {3, 3, 2, 2, 2, 2, 2}}}).to_string() == "tbd7{0,1,3}[3,3,2,2,2,2,2]");
  // A run of 8 or more roles alike is written m*count, and read back.
  std::vector<int> runs(31, 528);
  std::fill(runs.begin(), runs.begin() + 16, 529);
  const rank_k_scheme many({{1, 31, rank_k_cover::difference, runs}});
  CHECK(many.to_string() == "tbd31{0,1,3,8,12,18}[529*16,528*15]");
  CHECK(rank_k_scheme::parse(many.to_string()) == many);
  CHECK(rank_k_scheme::parse("tbd7{0,1,3}[3,2*6]").to_string() == "tbd7{0,1,3}[3,2,2,2,2,2,2]");
  for (const char* bad : {"", "tbd", "star5", "k0", "k2 x", "tbd7{0,1,2}", "tbd3{0,1} +", "tbd3{0,1} dfs k0", "x",
                          "nest2", "nest3[1,1,1]", "tbd3{0,1}[1,2]", "k2 x tbd3{0,1}[1,1,1]", "tbd3{0,1}[1,1,1",
                          "tbd3{0,1}[1*4]", "tbd3{0,1}[1*]", "tbd3{0,1}[1*0,1,1,1]", "tbd7{0,1,3}[2*16777216]"})
    CHECK_THROWS_AS(rank_k_scheme::parse(bad), plan_error);
}

TEST_CASE("ownership is balanced where rank places differ: the busiest rank receives about the mean") {
  const problem sq = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 4096, 4096);
  // One part of uneven places (the planner's choices at P = 7, 9, 13, 16 on n = k are of this
  // kind): ownership alone evens the receipts out.
  for (const rank_k_scheme& s : {rank_k_scheme({{2, 4, rank_k_cover::star}}),
                                 rank_k_scheme({{1, 4, rank_k_cover::star, {3, 2, 2, 2}}}),
                                 rank_k_scheme({{1, 4, rank_k_cover::star, {4, 3, 3, 3}}}),
                                 rank_k_scheme({{1, 3, rank_k_cover::difference, {3, 2, 2}}}),
                                 rank_k_scheme({{1, 7, rank_k_cover::difference, {3, 3, 2, 2, 2, 2, 2}}}),
                                 rank_k_scheme({{1, 2, rank_k_cover::nest, {2, 1}}})}) {
    const rank_k_model m(sq, s);
    CAPTURE(s.to_string());
    CHECK(double(m.max_received()) <= 1.01 * m.mean_received());
  }
  // Parts of different covers: each part's ranks receive their own part's inputs, which no
  // ownership moves, so the ranks that read less A own more of the C they share with the other
  // part (owning C brings its partials in). With one weight for both, star4 + tbd3 left its
  // busiest rank 9% above the mean (4.50 million elements against 4.13), tbd7 + star4 5%.
  for (const rank_k_scheme& s : {rank_k_scheme({{1, 4, rank_k_cover::star}, {1, 3, rank_k_cover::difference}}),
                                 rank_k_scheme({{1, 7, rank_k_cover::difference}, {2, 3, rank_k_cover::difference}}),
                                 rank_k_scheme({{1, 7, rank_k_cover::difference}, {1, 4, rank_k_cover::star}}),
                                 rank_k_scheme({{1, 3, rank_k_cover::difference}, {1, 2, rank_k_cover::nest, {1, 1}}}),
                                 rank_k_scheme({{1, 4, rank_k_cover::star, {2, 1, 1, 1}}, {1, 3, rank_k_cover::difference}})}) {
    const rank_k_model m(sq, s);
    CAPTURE(s.to_string());
    CHECK(double(m.max_received()) <= 1.002 * m.mean_received());
    CHECK(c_blocks_tiled(m));
  }
  // One odd cover alone: each role's C blocks laid end to end and cut in runs, so every rank
  // owns its role's C over its ranks to one element (a split of each block gave the rounded-up
  // piece of every block to the same ranks: k5458 x tbd3 on 256 x 2^20 left its busiest rank
  // 20% above the mean). Rows 100 = 14 + 14 + 15 + ... over 7 blocks; the pieces still tile.
  const problem odd = rank_k_problem(scalar_type::d, operation::syrk, 'L', 'T', 100, 2000);
  for (const rank_k_scheme& s : {rank_k_scheme(3, 7), rank_k_scheme(5, 3), rank_k_scheme({{1, 7, rank_k_cover::difference, {3, 2, 2, 2, 2, 2, 2}}}),
                                 rank_k_scheme(4, 1)}) {
    const rank_k_model m(odd, s);
    CAPTURE(s.to_string());
    std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> by_role;  // first C block -> least, most owned
    for (int r = 0; r < m.ranks(); ++r) {
      const std::int64_t own = m.local_size(operand::c, r), role = m.slice_units(r).front().i;
      auto [it, fresh] = by_role.try_emplace(role, own, own);
      it->second = {std::min(it->second.first, own), std::max(it->second.second, own)};
    }
    for (const auto& [role, span] : by_role) CHECK(span.second - span.first <= 1);
    CHECK(c_blocks_tiled(m));
    check_scheme(rank_k_problem(scalar_type::d, operation::syrk, 'U', 'N', 23, 40), s);
  }
  // Equal places keep equal weights: the Fano plane's ranks each own a third of their cells
  // (to whole elements).
  const rank_k_model fano(sq, rank_k_scheme(1, 7));
  CHECK(double(fano.max_received()) == doctest::Approx(fano.mean_received()).epsilon(1e-3));
}

TEST_CASE("a star of uneven roles: centre atoms sized for equal work, leaf roles alike") {
  const problem sq = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 4096, 4096);
  // 3 centre ranks, 2 on each leaf role: 3a^2 / 3 = (n^2/6 - a^2) / 2 gives a = n / sqrt(18) =
  // 965.4, so the centre atoms end at 965, 1930, 2895 (one rank a role: n / sqrt(24) = 836).
  const rank_k_model m(sq, rank_k_scheme({{1, 4, rank_k_cover::star, {3, 2, 2, 2}}}));
  CHECK(m.ranks() == 9);
  CHECK(m.block_start(1) == 965);
  CHECK(m.block_start(3) == 2895);
  CHECK(m.max_flops() <= 1.002 * sq.flops() / 9);
  CHECK(double(m.max_received()) <= 1.002 * m.mean_received());
  CHECK(rank_k_model(sq, rank_k_scheme({{1, 4, rank_k_cover::star}})).block_start(1) == 836);
  CHECK(rank_k_scheme::parse("star4[3,2,2,2] + tbd3{0,1}").to_string() == "star4[3,2,2,2] + tbd3{0,1}");
  // Leaf roles of unlike ranks, or a centre of 6 times theirs (no atoms left for the leaves).
  for (const char* bad : {"star4[1,2,1,1]", "star4[6,1,1,1]", "star4[2,2,2,3]"})
    CHECK_THROWS_AS(rank_k_model(sq, rank_k_scheme::parse(bad)), plan_error);
  // Against brute force on small shapes: every multiply-add once, A and C owned once, each
  // rank's receipt as counted element by element.
  check_scheme(rank_k_problem(scalar_type::d, operation::syrk, 'L', 'T', 30, 61), rank_k_scheme::parse("star4[2,1,1,1]"));
  check_scheme(rank_k_problem(scalar_type::d, operation::syrk, 'U', 'N', 27, 83),
               rank_k_scheme::parse("star4[1,2,2,2] + tbd3{0,1}"));
}

TEST_CASE("1D and 2D schemes meet the SYRK bound's cases") {
  // 1D (P <= k / n): the k split reduce-scatters the triangle, diagonal included:
  // (n(n+1)/2)(1 - 1/P) per rank = 2080 * 7/8 = 1820 for n = 64 on 8; the bound counts the
  // strict triangle, (n-1)^2/2 - n(n-1)/(2P) = 1732.5, so 1.05 of it (n + 1 over n - 1).
  const problem tall = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 64, 1 << 16);
  const rank_k_model one_d(tall, rank_k_scheme{8, 1, 1});
  CHECK(one_d.max_received() == 1820);
  CHECK(double(one_d.max_received()) >= bounds::syrk_parallel_io_minus_owned(64, 1 << 16, 8));
  // 2D with the Fano plane (P = 7 <= (n/k)^2): each rank gathers 2 of its 3 row blocks.
  const problem wide = rank_k_problem(scalar_type::d, operation::syrk, 'L', 'N', 7000, 100);
  const rank_k_model fano(wide, rank_k_scheme{1, 7, 1});
  CHECK(std::abs(fano.max_received() - 2 * 1000 * 100) <= 2);  // pieces split 100000 as 33333 + 33333 + 33334
}

TEST_CASE("the planner's schemes give every working rank the mean flops within 5%") {
  // Parts take shares of k in proportion to their ranks, and uneven roles get row blocks of
  // equal work per rank, so a rank's flops are the mean's up to rounding of blocks and k.
  for (const auto& [n, k] : {std::pair<std::int64_t, std::int64_t>{4096, 4096}, {1024, 65536}, {256, 1 << 20}})
    for (int P = 2; P <= 16; ++P) {
      const problem p = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', n, k);
      context c;
      c.set_ranks(P);
      const rank_k_choice at = choose_rank_k_ranks(p, c);
      const rank_k_model m(p, at.chosen);
      double mean = 0;
      for (int r = 0; r < m.ranks(); ++r) mean += m.cost(r).flops;
      mean /= m.ranks();
      CAPTURE(n);
      CAPTURE(P);
      CAPTURE(at.chosen.to_string());
      for (int r = 0; r < m.ranks(); ++r) {
        CAPTURE(r);
        CHECK(std::abs(m.cost(r).flops - mean) <= 0.05 * mean);
      }
    }
}

TEST_CASE("on n = k the planner's volume is never below the least any scheme can receive") {
  // docs/data-movement.md, "SYRK on few ranks": with every rank doing equal work, no scheme on
  // P = 2 .. 7 ranks receives less than these multiples of the SYRK bound (P = 2 in closed
  // form, 3 to 5 by the relaxation, 6 and 7 by scripts/syrk-small-p.py --any-scheme), to
  // leading order: the terms of order n move them by about 0.1% at n = 4096. A model that
  // counted fewer words than a scheme moves would come out below.
  const std::map<int, double> least = {{2, 1.282}, {3, 1.372}, {4, 1.323}, {5, 1.251}, {6, 1.223}, {7, 1.2}};
  const problem p = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 4096, 4096);
  for (const auto& [P, ratio] : least) {
    context c;
    c.set_ranks(P);
    const rank_k_choice at = choose_rank_k_ranks(p, c);
    const rank_k_model m(p, at.chosen);
    CAPTURE(P);
    CAPTURE(at.chosen.to_string());
    REQUIRE(m.ranks() == P);
    CHECK(double(m.max_received()) >= 0.998 * ratio * bounds::syrk_parallel_io_minus_owned(4096, 4096, P));
  }
}

TEST_CASE("planner: fits the cap with phases, refuses below the least footprint naming it") {
  const problem p = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 512, 40000);
  context c;
  c.set_ranks(6);
  const rank_k_choice least = least_footprint_rank_k(p, c);
  const rank_k_model lm(p, least.chosen);
  CHECK(lm.max_peak_bytes() == least.least_footprint);
  c.set_max_memory(least.least_footprint);
  const rank_k_choice at = choose_rank_k_ranks(p, c);
  CHECK(rank_k_model(p, at.chosen).max_peak_bytes() <= least.least_footprint);
  c.set_max_memory(least.least_footprint - 1);
  try {
    (void)choose_rank_k_ranks(p, c);
    FAIL("accepted a cap below the least footprint");
  } catch (const plan_error& e) {
    CHECK(std::string(e.what()).find("least footprint: " + std::to_string(least.least_footprint) + " bytes") !=
          std::string::npos);
  }
}

TEST_CASE("planner runs at cluster scale: projective planes of every prime power, every rank working") {
  // Rates fixed so that the choice is the same on any host (a context's default rate is the
  // host's threads times the machine description's). Against the SYRK bound: P = 1024 on
  // 4096^2 is tbd91 (Singer's plane for q = 9) with 11 or 12 ranks a role, about 1.04x; the
  // k slices of a cover of the next size down (k12 x tbd85, 13 row blocks a rank) gave
  // 1.3x. P = 4096 on 65536^2: tbd273 (q = 16) in 15 k slices, one rank idle, about 1.02x
  // (k16 x tbd256 gave 1.31x). P = 1000: every rank works.
  struct at_scale {
    std::int64_t n;
    int P;
    double most;  // ratio to the bound
  };
  // P = 10^6: Singer's plane for q = 97 (c = 9507) in 105 k slices, about 1.02x (a cover of
  // at most 1024 ranks a group, as before, gave 3.6x).
  // P = 16,384 on 4096^2: the plane of q = 25 with 23 to 26 ranks a role by their work,
  // about 1.02x (k25 x tbd651 with long blocks spread evenly gave 1.06x, its busiest rank
  // 1.07 times the mean flops).
  for (const at_scale& x : {at_scale{4096, 1024, 1.06}, at_scale{65536, 4096, 1.04}, at_scale{65536, 1000, 1.06},
                            at_scale{65536, 1000000, 1.04}, at_scale{4096, 16384, 1.03}}) {
    const problem p = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', x.n, x.n);
    context c;
    c.set_ranks(x.P).set_threads(1).set_rank_rates(5e10, 5e9);
    const rank_k_choice ch = choose_rank_k_ranks(p, c);
    const rank_k_model m(p, ch.chosen);
    CAPTURE(x.n);
    CAPTURE(x.P);
    CAPTURE(ch.chosen.to_string());
    CHECK(ch.chosen.ranks() <= x.P);
    CHECK(ch.chosen.ranks() >= x.P - x.P / 200);
    CHECK(double(m.max_received()) <= x.most * bounds::syrk_parallel_io_minus_owned(x.n, x.n, x.P));
    CHECK(m.max_flops() <= 1.05 * p.flops() / m.ranks());
  }
}

TEST_CASE("planes of blocks a few rows: long blocks spread over the roles, ranks per role by work") {
  // 4096 rows on c = 651 (q = 25): 190 blocks of 7 rows and 461 of 6. Spread every c/r-th, a
  // line of 26 blocks held 1 to 15 long ones, so k25 x tbd651's busiest rank did 1.07 times
  // the mean flops; balanced_atoms places them so that none holds more than 10 (at least 9
  // must: lines meeting 190 points b times or none have b = 1 + 189/26).
  const problem p = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 4096, 4096);
  const rank_k_model sliced(p, rank_k_scheme(25, 651));
  const std::vector<int> D = difference_cover(651);
  std::int64_t most_long = 0, rows = 0;
  for (int q = 0; q < 651; ++q) {
    std::int64_t long_blocks = 0;
    for (int a : D) long_blocks += sliced.block_rows((q + a) % 651) == 7;
    most_long = std::max(most_long, long_blocks);
    rows += sliced.block_rows(q);
    CHECK((sliced.block_rows(q) == 6 || sliced.block_rows(q) == 7));
  }
  CHECK(rows == 4096);
  CHECK(most_long <= 10);
  CHECK(sliced.max_flops() <= 1.06 * p.flops() / sliced.ranks());
  // Ranks per role in proportion to the roles' work: over 16,384 ranks the busiest within
  // 3% of the mean, and no other split of the ranks does less on its busiest rank (for a
  // small case, every split).
  const std::vector<int> m = work_role_ranks(4096, 4096, 651, 16384);
  REQUIRE(m.size() == 651);
  CHECK(std::accumulate(m.begin(), m.end(), 0) == 16384);
  rank_k_part x;
  x.group_ranks = 651, x.role_ranks = m;
  const rank_k_model even(p, rank_k_scheme({x}));
  CHECK(even.max_flops() <= 1.03 * p.flops() / 16384);
  const problem small = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 11, 7);
  const std::vector<int> best = work_role_ranks(11, 7, 3, 9);
  REQUIRE(best.size() == 3);
  const auto busiest = [&](const std::vector<int>& runs) {
    rank_k_part y;
    y.group_ranks = 3, y.role_ranks = runs;
    return rank_k_model(small, rank_k_scheme({y})).max_flops();
  };
  for (int a = 1; a <= 7; ++a)
    for (int b = 1; a + b <= 8; ++b)
      if (const int c = 9 - a - b; c >= 1 && c <= 7 && std::vector<int>{a, b, c} != best) {
        // n < 8c: equal blocks for every split, so the splits differ only in ranks.
        CAPTURE(a);
        CAPTURE(b);
        CHECK(busiest(best) <= busiest({a, b, c}) + 1e-9);
      }
  CHECK(work_role_ranks(11, 2, 3, 6) == std::vector<int>{2, 2, 2});  // a column a rank: every role full
  CHECK(work_role_ranks(11, 2, 3, 5).size() == 3);                    // one role at k, the rest below
  CHECK(work_role_ranks(11, 7, 4, 9).empty());   // even c
  CHECK(work_role_ranks(11, 7, 3, 2).empty());   // fewer ranks than roles
  CHECK(work_role_ranks(11, 7, 3, 22).empty());  // more than a column a rank
}

TEST_CASE("difference covers' row blocks: floor or ceil of n / c rows; uneven roles keep Newton's where they win") {
  // Long blocks picked (r <= c / 2) or short ones (r > c / 2), odd and even c.
  for (int c = 3; c <= 41; ++c)
    for (std::int64_t n = c; n <= 4 * c; n += 1 + c / 7) {
      const problem p = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'N', n, 4);
      const rank_k_model m(p, rank_k_scheme(1, c));
      CAPTURE(c);
      CAPTURE(n);
      REQUIRE(m.blocks() == c);
      std::int64_t rows = 0;
      for (int b = 0; b < c; ++b) {
        CHECK((m.block_rows(b) == n / c || m.block_rows(b) == n / c + 1));
        rows += m.block_rows(b);
      }
      CHECK(rows == n);
    }
  // Fano with 3, 3, 2, 2, 2, 2, 2 ranks on 4096 rows: equal blocks would leave the roles of 3
  // ranks 2/3 of the others' work a rank; Newton's blocks run from 0.110 n to 0.197 n.
  const problem sq = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 4096, 4096);
  const rank_k_model fano(sq, rank_k_scheme::parse("tbd7{0,1,3}[3,3,2,2,2,2,2]"));
  std::int64_t fewest = sq.n, most = 0;
  for (int b = 0; b < 7; ++b) fewest = std::min(fewest, fano.block_rows(b)), most = std::max(most, fano.block_rows(b));
  CHECK(fewest < 480);
  CHECK(most > 780);
  CHECK(fano.max_flops() <= 1.001 * sq.flops() / 16);
}

TEST_CASE("a plane of more than 1024 ranks: its roles' figures from the pairs of its cover, as block by block") {
  // q = 32: c = 1057, a perfect cover of 33, so a role's C is its diagonal and the blocks of
  // every pair of atoms role + D, summed in O(|D|) (index_c_chunks); the pieces (c_pieces)
  // walk the blocks one by one. Every figure must add up across the ranks.
  for (const char trans : {'N', 'C'}) {
    const problem p = rank_k_problem(scalar_type::z, operation::herk, 'L', trans, 2 * 1057 + 5, 9);
    const rank_k_model m(p, rank_k_scheme(2, 1057, 2));
    std::int64_t c_owned = 0, in[3] = {0, 0, 0}, out[3] = {0, 0, 0};
    double flops = 0, most = 0;
    for (int r = 0; r < m.ranks(); ++r) {
      const rank_cost rc = m.cost(r);
      const std::int64_t c = m.local_size(operand::c, r), a = m.local_size(operand::a, r);
      CHECK(rc.owned_bytes == std::size_t(a + c) * element_size(p.type));
      c_owned += c, flops += rc.flops, most = std::max(most, double(rc.received_total()));
      for (int o : {0, 2}) in[o] += rc.received[o], out[o] += rc.sent[o];
    }
    CHECK(c_owned == p.n * (p.n + 1) / 2);
    CHECK(flops == p.flops());
    CHECK(in[0] == out[0]);
    CHECK(in[2] == out[2]);
    CHECK(double(m.max_received()) == most);  // all_costs keeps plane_a's figures by role and run length
    for (int r = 0; r < m.ranks(); r += 97) check_recount(m, r);
  }
  // A plane of unequal roles, and k slices of one with phases, rank by rank.
  const problem sq = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 700, 300);
  for (const char* text : {"tbd91{0,1,37,39,51,58,66,69,82,86}[3*10,2*81]", "k3 x tbd73{0,1,17,39,41,44,48,54,62} dfs k2"}) {
    const rank_k_model m(sq, rank_k_scheme::parse(text));
    CAPTURE(text);
    for (int r = 0; r < m.ranks(); r += 7) check_recount(m, r);
  }
  // Ranks per role by work (6 to 8 here, so runs of three lengths cut each other's cells):
  // the sweep over a rank's cells (swept_a) against the cells one by one.
  rank_k_part by_work;
  by_work.group_ranks = 91, by_work.role_ranks = work_role_ranks(700, 300, 91, 640);
  REQUIRE(by_work.role_ranks.size() == 91);
  const auto [fewest, most] = std::minmax_element(by_work.role_ranks.begin(), by_work.role_ranks.end());
  CHECK(*most - *fewest >= 2);
  const rank_k_model m(sq, rank_k_scheme({by_work}));
  for (int r = 0; r < m.ranks(); r += 5) check_recount(m, r);
}

TEST_CASE("a process outside the plan (an idle rank, or none) holds no pieces") {
  const problem p = rank_k_problem(scalar_type::d, operation::syrk, 'U', 'T', 64, 640);
  const rank_k_model m(p, rank_k_scheme({{1, 3, rank_k_cover::difference, {3, 2, 2}}}));
  for (int r : {-1, m.ranks(), m.ranks() + 5}) {
    CAPTURE(r);
    CHECK(m.local_size(operand::a, r) == 0);
    CHECK(m.local_size(operand::c, r) == 0);
    CHECK(m.cost(r).received_total() == 0);
  }
}
