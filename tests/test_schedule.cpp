// The distributed schedule (lib/ranks/schedule.hpp) against brute force, without MPI, for
// both producers and a schedule written out by hand: every multiply-add computed once,
// every element of A, B and C owned once, and every rank's bytes, messages, flops and
// buffers under the exchange rule counted element by element, equal to the schedule's
// count, its closed forms, and the ownership rule the executor runs (per peer).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "ranks/ownership.hpp"
#include "ranks/schedule.hpp"
#include "ranks/tree_schedule.hpp"
#include "ranks/triangle_schedule.hpp"

#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/plan.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

using namespace prism;
using namespace prism::ranks;

namespace {

// The elements of region g of a stored matrix of R rows, as row + column * R.
std::vector<std::int64_t> elements_of(const region& g, std::int64_t R) {
  std::vector<std::int64_t> out;
  each_column_run(g, 0, g.elements(), [&](std::int64_t i, std::int64_t j, std::int64_t len, std::int64_t) {
    for (std::int64_t x = 0; x < len; ++x) out.push_back(i + x + j * R);
  });
  return out;
}

// What the exchange rule gives, element by element: owners from every rank's pieces, needs
// from its regions, computers from its C regions of each epoch. O(P x elements).
struct brute_force {
  const schedule& s;
  int P, Q;
  std::int64_t R[3] = {0, 0, 0};
  std::vector<int> owner[3];                        // of each stored element, -1 none
  std::vector<std::int64_t> place[3];               // its offset in its owner's storage
  std::vector<rank_tally> want;
  std::vector<std::int64_t> messages;

  explicit brute_force(const schedule& sc) : s(sc), P(sc.ranks()), Q(sc.phases()), want(std::size_t(P)), messages(std::size_t(P), 0) {
    own();
    for (int r = 0; r < P; ++r)
      for (int o = 0; o < 3; ++o) want[std::size_t(r)].owned += s.local_size(operand(o), r);
    std::vector<std::set<int>> computers;  // of each C element, over the epoch
    for (int q = 0; q < Q; ++q) {
      if (computers.empty()) computers.assign(owner[2].size(), {});
      phase(q, computers);
      if (s.reduces_after(q)) reduce(q, computers), computers.clear();
    }
  }

  // Every rank's pieces, part by part: each stored element owned once.
  void own() {
    std::vector<cell_part> parts;
    for (int o = 0; o < 3; ++o) {
      const block w = s.whole(operand(o));
      R[o] = w.rows;
      owner[o].assign(std::size_t(w.rows * w.cols), -1);
      place[o].assign(owner[o].size(), -1);
      for (int r = 0; r < P; ++r) {
        std::int64_t at = 0;
        for (const piece& pc : s.pieces(operand(o), r)) {
          parts.clear();
          s.parts(operand(o), pc.cell, parts);
          for (const cell_part& part : parts) {
            const std::int64_t first = std::max(pc.first, part.first), end = std::min(pc.first + pc.count, part.first + part.at.elements());
            if (first >= end) continue;
            each_column_run(part.at, first - part.first, end - first, [&](std::int64_t i, std::int64_t j, std::int64_t len, std::int64_t x) {
              for (std::int64_t e = 0; e < len; ++e) {
                const std::size_t idx = std::size_t(i + e + j * R[o]);
                REQUIRE(owner[o][idx] == -1);
                owner[o][idx] = r, place[o][idx] = at + (first - pc.first) + x + e;
              }
            });
          }
          at += pc.count;
        }
      }
    }
  }

  // Whether region g is one of rank r's cells, its own, stored column by column in one run
  // of its storage (the rule's "one rectangle": a region of several cells is gathered even
  // when they lie in a row).
  bool direct(int o, int r, const region& g) const {
    std::vector<cover> cv;
    s.covers(operand(o), g, cv);
    if (g.tri || cv.size() != 1) return false;
    const std::vector<std::int64_t> el = elements_of(g, R[o]);
    for (std::size_t x = 0; x < el.size(); ++x)
      if (owner[o][std::size_t(el[x])] != r || place[o][std::size_t(el[x])] != place[o][std::size_t(el[0])] + std::int64_t(x))
        return false;
    return true;
  }

  void phase(int q, std::vector<std::set<int>>& computers) {
    std::vector<std::map<std::int64_t, std::set<int>>> need(2);  // A, B element -> ranks needing it in q
    std::vector<region> mine[3];
    for (int r = 0; r < P; ++r) {
      s.regions(q, r, mine);
      std::vector<task> ts;
      s.tasks(q, r, ts);
      for (const task& t : ts)
        want[std::size_t(r)].flops += task_flops(t, s.product().type), want[std::size_t(r)].workspace = std::max(want[std::size_t(r)].workspace, t.workspace);
      for (int o = 0; o < 2; ++o) {
        std::set<std::int64_t> el;
        std::int64_t blocks = 0;
        for (const region& g : mine[o]) {
          for (std::int64_t e : elements_of(g, R[o])) el.insert(e);
          if (!direct(o, r, g)) blocks += g.at.size();
        }
        std::set<int> from;
        for (std::int64_t e : el) {
          need[std::size_t(o)][e].insert(r);
          const int h = owner[o][std::size_t(e)];
          REQUIRE(h >= 0);
          if (h != r) want[std::size_t(r)].received[o] += 1, from.insert(h);
        }
        messages[std::size_t(r)] += std::int64_t(from.size());
        want[std::size_t(r)].blocks[o] = std::max(want[std::size_t(r)].blocks[o], blocks);
      }
      for (const region& g : mine[2])
        for (std::int64_t e : elements_of(g, R[2])) computers[std::size_t(e)].insert(r);
    }
    for (int o = 0; o < 2; ++o)
      for (const auto& [e, ranks] : need[std::size_t(o)]) {
        const int h = owner[o][std::size_t(e)];
        want[std::size_t(h)].sent[o] += std::int64_t(ranks.size()) - (ranks.count(h) ? 1 : 0);
      }
    staging_ab(q);
  }

  // A phase's staging: its A and B received and sent, recounted from its own totals.
  std::vector<std::int64_t> before_in[2], before_out[2];
  void staging_ab(int) {
    for (int o = 0; o < 2; ++o) {
      before_in[o].resize(std::size_t(P), 0), before_out[o].resize(std::size_t(P), 0);
    }
    for (int r = 0; r < P; ++r) {
      std::int64_t stage = 0;
      for (int o = 0; o < 2; ++o) {
        stage += want[std::size_t(r)].received[o] - before_in[o][std::size_t(r)] + want[std::size_t(r)].sent[o] - before_out[o][std::size_t(r)];
        before_in[o][std::size_t(r)] = want[std::size_t(r)].received[o], before_out[o][std::size_t(r)] = want[std::size_t(r)].sent[o];
      }
      want[std::size_t(r)].staging = std::max(want[std::size_t(r)].staging, stage);
    }
  }

  void reduce(int q, const std::vector<std::set<int>>& computers) {
    std::vector<std::int64_t> in(std::size_t(P), 0), out(std::size_t(P), 0);
    std::vector<std::set<int>> from(static_cast<std::size_t>(P));
    for (std::size_t e = 0; e < computers.size(); ++e) {
      if (computers[e].empty()) continue;
      const int h = owner[2][e];
      REQUIRE(h >= 0);
      for (int r : computers[e])
        if (r != h) in[std::size_t(h)] += 1, out[std::size_t(r)] += 1, from[std::size_t(h)].insert(r);
    }
    for (int r = 0; r < P; ++r) {
      rank_tally& t = want[std::size_t(r)];
      t.received[2] += in[std::size_t(r)], t.sent[2] += out[std::size_t(r)];
      t.staging = std::max(t.staging, in[std::size_t(r)] + out[std::size_t(r)]);
      messages[std::size_t(r)] += std::int64_t(from[std::size_t(r)].size());
      std::int64_t blocks = 0;
      for (const region& g : s.epoch_regions(q, r)) {
        bool alone = direct(2, r, g);
        for (std::int64_t e : elements_of(g, R[2])) alone = alone && computers[std::size_t(e)] == std::set<int>{r};
        if (!alone) blocks += g.at.size();
      }
      t.blocks[2] = std::max(t.blocks[2], blocks);
    }
  }
};

// Every multiply-add of the product once: (i, j, l) of C = op(A) op(B); a rank-k update's
// lower-orientation triangle i >= j.
void check_coverage(const schedule& s) {
  const problem& p = s.product();
  const bool rank_k = p.op != operation::gemm;
  std::vector<int> done(std::size_t(p.m * p.n * p.k), 0);
  std::vector<task> ts;
  for (int q = 0; q < s.phases(); ++q)
    for (int r = 0; r < s.ranks(); ++r) {
      ts.clear();
      s.tasks(q, r, ts);
      for (const task& t : ts)
        for (std::int64_t j = t.shape.j; j < t.shape.j + t.shape.n; ++j)
          for (std::int64_t i = t.shape.i; i < t.shape.i + t.shape.m; ++i) {
            if (t.tri && (t.tri == 'L' ? i < j : i > j)) continue;
            const std::int64_t a = rank_k ? std::max(i, j) : i, b = rank_k ? std::min(i, j) : j;
            for (std::int64_t l = t.shape.l; l < t.shape.l + t.shape.k; ++l) done[std::size_t((a + b * p.m) * p.k + l)] += 1;
          }
    }
  for (std::int64_t j = 0; j < p.n; ++j)
    for (std::int64_t i = 0; i < p.m; ++i)
      for (std::int64_t l = 0; l < p.k; ++l) REQUIRE(done[std::size_t((i + j * p.m) * p.k + l)] == (rank_k && i < j ? 0 : 1));
}

// The schedule's counts against brute force, rank by rank; the ownership rule as the
// executor runs it (native layout), process by process and peer by peer.
void check_schedule(const schedule& s) {
  check_coverage(s);
  const brute_force bf(s);
  const int P = s.ranks();
  const std::size_t elem = element_size(s.product().type);
  for (int r = 0; r < P; ++r) {
    CAPTURE(r);
    const rank_tally& want = bf.want[std::size_t(r)];
    for (const rank_tally& got : {s.count_cells(r), s.count(r)}) {
      for (int o = 0; o < 3; ++o) {
        CHECK(got.received[o] == want.received[o]);
        CHECK(got.sent[o] == want.sent[o]);
        CHECK(got.blocks[o] == want.blocks[o]);
      }
      CHECK(got.owned == want.owned);
      CHECK(got.staging == want.staging);
      CHECK(got.flops == doctest::Approx(want.flops).epsilon(1e-12));
      CHECK(got.workspace == want.workspace);
    }
    CHECK(s.messages(r) == bf.messages[std::size_t(r)]);
    const rank_cost& c = s.cost(r);
    CHECK(c.owned_bytes == std::size_t(want.owned) * elem);
    CHECK(c.buffer_bytes == std::size_t(want.blocks[0] + want.blocks[1] + want.blocks[2] + want.staging) * elem + want.workspace);
  }
  // The exchange rule over an ownership (what the executor and the layout fit run).
  std::vector<buffer_plan> buffers(static_cast<std::size_t>(P));
  std::vector<std::int64_t> received(std::size_t(P), 0), sent(std::size_t(P), 0), messages(std::size_t(P), 0);
  const native_ownership counting(s, -1, P);
  for (int q = 0; q < s.phases(); ++q) {
    const std::vector<phase_volume> v = phase_volumes(counting, q);
    for (int r = 0; r < P; ++r) {
      const phase_volume& x = v[std::size_t(r)];
      for (int o = 0; o < 3; ++o) received[std::size_t(r)] += x.received[o], sent[std::size_t(r)] += x.sent[o];
      messages[std::size_t(r)] += x.messages;
      buffers[std::size_t(r)].add(x);
    }
    // Peer by peer, seen from each rank: each holder's part of its regions, and each
    // holder knows the rank needs it.
    std::vector<std::unique_ptr<native_ownership>> seen;
    for (int r = 0; r < P; ++r) seen.push_back(std::make_unique<native_ownership>(s, r, P));
    for (int r = 0; r < P; ++r) {
      const native_ownership& own = *seen[std::size_t(r)];
      std::vector<region> mine[3];
      s.regions(q, r, mine);
      for (int o = 0; o < 2; ++o) {
        std::map<int, std::int64_t> got, want;
        for (const region& g : mine[o]) {
          for (int h : own.holders(operand(o), g)) got[h] += own.held_count(operand(o), g, h);
          for (std::int64_t e : elements_of(g, bf.R[o])) want[bf.owner[o][std::size_t(e)]] += 1;
        }
        CHECK(got == want);
        for (const auto& [h, n] : want) {
          const std::vector<int> needing = seen[std::size_t(h)]->needers(operand(o), q, h);
          if (h != r) CHECK(std::binary_search(needing.begin(), needing.end(), r));
        }
      }
    }
  }
  for (int r = 0; r < P; ++r) {
    CAPTURE(r);
    const rank_tally& want = bf.want[std::size_t(r)];
    CHECK(received[std::size_t(r)] == want.received[0] + want.received[1] + want.received[2]);
    CHECK(sent[std::size_t(r)] == want.sent[0] + want.sent[1] + want.sent[2]);
    CHECK(messages[std::size_t(r)] == bf.messages[std::size_t(r)]);
    CHECK(buffers[std::size_t(r)].total() == want.blocks[0] + want.blocks[1] + want.blocks[2] + want.staging);
  }
}

context ranks_ctx(int P, std::size_t memory = SIZE_MAX) {
  context c;
  c.set_threads(1).set_ranks(P);
  if (memory != SIZE_MAX) c.set_max_memory(memory);
  return c;
}

// A schedule written out by hand: each rank's boxes per phase (reduced after each), and
// the cells: the grid of every box's block boundaries, each split evenly among the ranks
// whose blocks cover it. Nothing here knows of trees or covers.
class listed_schedule final : public schedule {
 public:
  listed_schedule(problem p, std::vector<std::vector<box>> boxes) : p_(p), boxes_(std::move(boxes)) {
    for (int o = 0; o < 3; ++o) {
      const block w = whole(operand(o));
      rows_[o] = {0, w.rows}, cols_[o] = {0, w.cols};
      for (int q = 0; q < phases(); ++q)
        for (int r = 0; r < ranks(); ++r) {
          const block b = of(operand(o), boxes_[std::size_t(q)][std::size_t(r)]);
          if (b.size() == 0) continue;
          rows_[o].insert(rows_[o].end(), {b.row, b.row + b.rows}), cols_[o].insert(cols_[o].end(), {b.col, b.col + b.cols});
        }
      for (auto* v : {&rows_[o], &cols_[o]}) std::sort(v->begin(), v->end()), v->erase(std::unique(v->begin(), v->end()), v->end());
    }
  }
  const problem& product() const noexcept override { return p_; }
  int ranks() const noexcept override { return int(boxes_[0].size()); }
  int phases() const noexcept override { return int(boxes_.size()); }
  bool reduces_after(int) const noexcept override { return true; }
  void tasks(int q, int r, std::vector<task>& out) const override {
    const box& b = boxes_[std::size_t(q)][std::size_t(r)];
    if (b.m * b.n * b.k > 0) out.push_back(task{b, -1, 0, 0});
  }
  void covers(operand o, const region& g, std::vector<cover>& out) const override {
    for (std::int64_t c = 0; c < cells(o); ++c) {
      const block b = cell(o, c);
      if (b.row >= g.at.row && b.row + b.rows <= g.at.row + g.at.rows && b.col >= g.at.col && b.col + b.cols <= g.at.col + g.at.cols)
        out.push_back(cover{c, cell_part{region{b, 0}, 0}});
    }
  }
  void parts(operand o, std::int64_t c, std::vector<cell_part>& out) const override { out.push_back(cell_part{region{cell(o, c), 0}, 0}); }
  void holders(operand o, std::int64_t c, std::vector<int>& out) const override {
    for (int r = 0; r < ranks(); ++r) {
      bool any = false;
      for (int q = 0; q < phases(); ++q) any = any || needs(o, q, r, c);
      if (any) out.push_back(r);
    }
  }
  piece owned(operand o, std::int64_t c, int r) const override {
    std::vector<int> h;
    holders(o, c, h);
    const auto it = std::find(h.begin(), h.end(), r);
    if (it == h.end()) return piece{c, 0, 0};
    const std::int64_t N = cell(o, c).size(), s = std::int64_t(h.size()), t = it - h.begin();
    return piece{c, t * N / s, (t + 1) * N / s - t * N / s};
  }
  void needers(operand o, int q, std::int64_t c, std::vector<int>& out) const override {
    for (int r = 0; r < ranks(); ++r)
      if (needs(o, q, r, c)) out.push_back(r);
  }
  std::string describe() const override { return "listed"; }

 private:
  block of(operand o, const box& b) const {
    if (o == operand::a) return stored(o, b.i, b.m, b.l, b.k);
    if (o == operand::b) return stored(o, b.j, b.n, b.l, b.k);
    return block{b.i, b.j, b.m, b.n};
  }
  std::int64_t cells(operand o) const { return std::int64_t(rows_[int(o)].size() - 1) * std::int64_t(cols_[int(o)].size() - 1); }
  block cell(operand o, std::int64_t c) const {
    const std::int64_t nr = std::int64_t(rows_[int(o)].size()) - 1;
    const std::size_t ri = std::size_t(c % nr), ci = std::size_t(c / nr);
    return block{rows_[int(o)][ri], cols_[int(o)][ci], rows_[int(o)][ri + 1] - rows_[int(o)][ri], cols_[int(o)][ci + 1] - cols_[int(o)][ci]};
  }
  bool needs(operand o, int q, int r, std::int64_t c) const {
    const box& x = boxes_[std::size_t(q)][std::size_t(r)];
    if (x.m * x.n * x.k == 0) return false;
    const block b = of(o, x), e = cell(o, c);
    return e.row >= b.row && e.row + e.rows <= b.row + b.rows && e.col >= b.col && e.col + e.cols <= b.col + b.cols;
  }
  problem p_;
  std::vector<std::vector<box>> boxes_;  // [phase][rank]
  std::vector<std::int64_t> rows_[3], cols_[3];
};

}  // namespace

TEST_CASE("a schedule written out by hand: boxes no tree makes, phases of different boxes") {
  // 3 ranks on 12 x 10 x 8 ('T' A): phase 0 rank 0 takes rows 0-5 whole, ranks 1 and 2
  // split the rest by columns; phase 1 (k 8-13) a different split: by k on rows 0-7 and
  // rank 2 alone on rows 8-11.
  const problem p{scalar_type::d, 'T', 'N', 12, 10, 14};
  const listed_schedule s(p, {{box{6, 10, 8, 0, 0, 0}, box{6, 4, 8, 6, 0, 0}, box{6, 6, 8, 6, 4, 0}},
                              {box{8, 10, 3, 0, 0, 8}, box{8, 10, 3, 0, 0, 11}, box{4, 10, 6, 8, 0, 8}}});
  check_schedule(s);
  // Rank 2's phase-1 box holds the only rows 8-11 of C over k 8-14: nobody else adds to them.
  CHECK(s.count(2).received[2] > 0);  // but it owns a share of rows 6-11 from phase 0
  const listed_schedule one(p, {{box{12, 10, 14, 0, 0, 0}}});
  check_schedule(one);
  CHECK(one.cost(0).received_total() == 0);
  CHECK(one.cost(0).buffer_bytes == 0);  // every region its own, in place
}

TEST_CASE("a gemm plan's schedule equals brute force: grids, primes, unequal trees, phases, transposes") {
  std::mt19937_64 gen(26);
  const char trans[] = {'N', 'T', 'C'};
  const scalar_type types[] = {scalar_type::s, scalar_type::d, scalar_type::c, scalar_type::z};
  int cases = 0;
  for (int P : {1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 16, 17, 24, 29, 31, 32, 48, 61, 64})
    for (int rep = 0; rep < 3; ++rep) {
      std::uniform_int_distribution<std::int64_t> ext(1, 40);
      problem pr{types[gen() % 4], trans[gen() % 3], trans[gen() % 3], ext(gen), ext(gen), ext(gen) * (rep == 2 ? 6 : 1)};
      if (!is_complex(pr.type)) {
        if (pr.transa == 'C') pr.transa = 'T';
        if (pr.transb == 'C') pr.transb = 'T';
      }
      CAPTURE(P);
      CAPTURE(pr.m);
      CAPTURE(pr.n);
      CAPTURE(pr.k);
      const rank_choice free = choose_ranks(pr, ranks_ctx(P));
      check_schedule(tree_schedule(std::make_shared<const plan>(free.chosen)));
      ++cases;
      // A cap between the matrices alone and the free plan's footprint: rank dfs phases.
      const std::size_t roomy = rank_model(free.chosen).max_peak_bytes();
      const std::size_t owned = element_size(pr.type) * std::size_t(pr.m * pr.k + pr.k * pr.n + pr.m * pr.n) / std::size_t(P);
      if (P > 1 && rep == 1 && roomy > 2 * owned) {
        try {
          check_schedule(tree_schedule(std::make_shared<const plan>(choose_ranks(pr, ranks_ctx(P, owned + (roomy - owned) / 2)).chosen)));
          ++cases;
        } catch (const plan_error&) {
          // no plan fits this cap: fine here, the memory tests cover refusals
        }
      }
    }
  CHECK(cases >= 60);
  // A hand-written tree with unequal parts on both levels and a dfs of unequal phases.
  check_schedule(tree_schedule(std::make_shared<const plan>(plan::parse(
      "prism-plan 2\nproblem d TN 70 50 40\nthreads 1\nranks 7\n"
      "dfs k rank 15 25\n"
      "  bfs m rank 30@3r 40@4r\n    bfs n rank 17@1r 17@1r 16@1r\n      leaf openblas\n      leaf openblas\n      leaf openblas\n"
      "    bfs n rank 25@2r 25@2r\n      bfs m rank 20@1r 20@1r\n        leaf openblas\n        leaf openblas\n"
      "      bfs m rank 20@1r 20@1r\n        leaf openblas\n        leaf openblas\n"
      "  bfs n rank 20@3r 30@4r\n    bfs k rank 8@1r 8@1r 9@1r\n      leaf openblas\n      leaf openblas\n      leaf openblas\n"
      "    bfs m rank 35@2r 35@2r\n      bfs k rank 12@1r 13@1r\n        leaf openblas\n        leaf openblas\n"
      "      bfs k rank 12@1r 13@1r\n        leaf openblas\n        leaf openblas\n"))));
}

TEST_CASE("a rank-k scheme's schedule equals brute force: k slices, covers, phases, stars, nests, uneven roles") {
  std::mt19937_64 gen(5);
  const scalar_type types[] = {scalar_type::s, scalar_type::d, scalar_type::c, scalar_type::z};
  for (int t = 0; t < 60; ++t) {
    const int c = 1 + int(gen() % 7), G = 1 + int(gen() % 3), q = 1 + int(gen() % 3);
    const std::int64_t n = c + std::int64_t(gen() % 12), k = 2 * std::int64_t(G * q) + std::int64_t(gen() % 14);
    const scalar_type type = types[t % 4];
    const bool herk = is_complex(type) && t % 3 == 0;
    const problem p = rank_k_problem(type, herk ? operation::herk : operation::syrk, gen() % 2 ? 'U' : 'L',
                                     gen() % 2 ? 'N' : herk ? 'C' : 'T', n, k);
    CAPTURE(n);
    CAPTURE(k);
    const std::string text = rank_k_scheme{G, c, q}.to_string();
    CAPTURE(text);
    check_schedule(triangle_schedule(p, rank_k_scheme{G, c, q}));
  }
  for (int t = 0; t < 40; ++t) {
    std::vector<rank_k_part> parts;
    bool uneven = false;
    std::int64_t n = 12 + std::int64_t(gen() % 9);
    for (int i = 0, count = 1 + int(gen() % 3); i < count; ++i) {
      switch (gen() % 6) {
        case 0: parts.push_back({1 + int(gen() % 2), 4, rank_k_cover::star}); break;
        case 5: {  // a star of uneven roles: m0 centre ranks, m on each leaf role, m0 != m
          const int m = 1 + int(gen() % 2);
          int m0 = 1 + int(gen() % std::uint64_t(3 * m - 1));
          if (m0 >= m) ++m0;
          parts.push_back({1, 4, rank_k_cover::star, {m0, m, m, m}});
          uneven = true;
          n = std::max<std::int64_t>(n, 32 + std::int64_t(gen() % 5));
          break;
        }
        case 1: parts.push_back({1, 2, rank_k_cover::nest, {1 + int(gen() % 3), 1 + int(gen() % 2)}}), uneven = true; break;
        case 2: {  // an odd cover with roles of uneven ranks
          const int c = 3 + 2 * int(gen() % 3);
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
    const rank_k_scheme sc(parts, uneven ? 1 : 1 + int(gen() % 2));
    const std::int64_t k = 8 * std::int64_t(sc.ranks()) + std::int64_t(gen() % 20);
    const problem p = rank_k_problem(scalar_type::d, operation::syrk, gen() % 2 ? 'U' : 'L', gen() % 2 ? 'N' : 'T', n, k);
    const std::string text = sc.to_string();
    CAPTURE(text);
    check_schedule(triangle_schedule(p, sc));
  }
}

TEST_CASE("regions: a rank-k rank's reads of one row block gather as one region, its hull along k") {
  // tbd3{0,1} on 3 ranks: role 0 computes (0, 0) and the block of rows {0, 1}, so it reads
  // row blocks 0 and 1 over all of k: two regions of A, none of B; C: its two blocks.
  const problem p = rank_k_problem(scalar_type::d, operation::syrk, 'L', 'N', 9, 5);
  const triangle_schedule s(p, rank_k_scheme(1, 3));
  std::vector<region> mine[3];
  s.regions(0, 0, mine);
  REQUIRE(mine[0].size() == 2);
  CHECK(mine[0][0].at == block{0, 0, 3, 5});
  CHECK(mine[0][1].at == block{3, 0, 3, 5});
  CHECK(mine[1].empty());
  REQUIRE(mine[2].size() == 2);
  CHECK(mine[2][0] == region{block{0, 0, 3, 3}, 'L'});
  CHECK(mine[2][1] == region{block{3, 0, 3, 3}, 0});
  // A gemm rank's one box: its blocks of A, B and C.
  const tree_schedule g(std::make_shared<const plan>(plan::parse("prism-plan 2\nproblem d NT 8 6 4\nthreads 1\nranks 2\n"
                                                                 "bfs n rank 3@1r 3@1r\n  leaf openblas\n  leaf openblas\n")));
  g.regions(0, 1, mine);
  CHECK(mine[0] == std::vector<region>{region{block{0, 0, 8, 4}, 0}});
  CHECK(mine[1] == std::vector<region>{region{block{3, 0, 3, 4}, 0}});  // B 'T': n rows x k
  CHECK(mine[2] == std::vector<region>{region{block{0, 3, 8, 3}, 0}});
}
