// lib/ranks/schedule.cpp — what the rank level derives from a schedule (schedule.hpp):
// regions, pieces, the exact per-rank count and the cost and memory built from it.
#include "schedule.hpp"

#include <prism/error.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <stdexcept>
#include <tuple>

namespace prism::ranks {

schedule::~schedule() = default;

std::int64_t overlap(const piece& pc, std::int64_t at, std::int64_t size) {
  return std::max<std::int64_t>(0, std::min(pc.first + pc.count, at + size) - std::max(pc.first, at));
}

piece piece_of(std::int64_t cell, std::int64_t N, std::int64_t before, std::int64_t own, std::int64_t total) {
  const auto at = [&](std::int64_t w) { return std::int64_t((__int128(N) * w) / total); };
  const std::int64_t first = at(before);
  return piece{cell, first, at(before + own) - first};
}

std::int64_t countable_phases(const problem& p, int ranks) {
  using wide = __int128;
  const wide m = p.m, n = p.n, k = p.k;
  if (wide(std::max({p.m, p.n, p.k})) * std::max(ranks, 1) >= wide(1) << 62) return 0;
  const wide elements = p.op == operation::gemm ? m * k + k * n + m * n : n * k + n * n;
  const wide bytes = std::max<wide>(1, elements * wide(element_size(p.type)));
  return std::int64_t(std::min<wide>(((wide(1) << 62) - 1) / bytes, wide(1) << 62));
}

void check_countable(const problem& p, int ranks, std::int64_t phases) {
  if (phases <= countable_phases(p, ranks)) return;
  const double elements = p.op == operation::gemm ? double(p.m) * double(p.k) + double(p.k) * double(p.n) + double(p.m) * double(p.n)
                                                  : double(p.n) * double(p.k) + double(p.n) * double(p.n);
  char why[200];
  std::snprintf(why, sizeof why, "the operands of %lld x %lld x %lld (%.3g bytes, %lld phase%s) pass the rank level's exact "
                "64-bit counts: at most 2^62 bytes over all phases, and an extent times the ranks", (long long)p.m, (long long)p.n,
                (long long)p.k, elements * double(element_size(p.type)), (long long)phases, phases == 1 ? "" : "s");
  throw plan_error(why);
}

double task_flops(const task& t, scalar_type type) {
  if (t.tri) return (is_complex(type) ? 4.0 : 1.0) * double(t.shape.m) * double(t.shape.m + 1) * double(t.shape.k);
  return gemm_flops(type, t.shape.m, t.shape.n, t.shape.k);
}

void each_column_run(const region& g, std::int64_t first, std::int64_t count,
                     const std::function<void(std::int64_t, std::int64_t, std::int64_t, std::int64_t)>& f) {
  const std::int64_t R = g.at.rows, end = first + count;
  if (!g.tri) {
    for (std::int64_t e = first; e < end;) {
      const std::int64_t i = e % R, run = std::min(end - e, R - i);
      f(g.at.row + i, g.at.col + e / R, run, e - first);
      e += run;
    }
    return;
  }
  // Packed: 'L' column t holds rows t .. R - 1, 'U' rows 0 .. t.
  auto length = [&](std::int64_t t) { return g.tri == 'L' ? R - t : t + 1; };
  std::int64_t col = 0, start = 0;  // column col's first element
  while (col < R && start + length(col) <= first) start += length(col), ++col;
  for (std::int64_t e = first; e < end;) {
    const std::int64_t within = e - start, run = std::min(end - e, length(col) - within);
    f(g.at.row + (g.tri == 'L' ? col : 0) + within, g.at.col + col, run, e - first);
    e += run;
    if (e - start == length(col)) start += length(col), ++col;
  }
}

std::pair<int, int> schedule::phase_span(operand, std::int64_t) const { return {0, phases()}; }

cell_share schedule::share(operand o, int q, std::int64_t c, int r) const {
  thread_local std::vector<int> nd;  // (asked for every cell of every rank: no allocation each)
  nd.clear();
  needers(o, q, c, nd);
  return cell_share{owned(o, c, r), std::int64_t(nd.size()), std::binary_search(nd.begin(), nd.end(), r)};
}

void schedule::ranks_meeting(operand o, int q, const std::function<bool(const region&)>& meets,
                             std::vector<int>& out) const {
  for (int r = 0; r < ranks(); ++r) {
    std::vector<region> mine[3];
    if (o == operand::c) mine[2] = epoch_regions(q, r);
    else regions(q, r, mine);
    if (std::any_of(mine[int(o)].begin(), mine[int(o)].end(), meets)) out.push_back(r);
  }
}

block schedule::whole(operand o) const {
  const problem& p = product();
  return o == operand::c ? block{0, 0, p.m, p.n} : stored(o, 0, o == operand::a ? p.m : p.n, 0, p.k);
}

// op(A) is m x k: rows x of op(A) over [l, l + k) are stored rows x (trans 'N') or columns
// x. op(B) is k x n: its columns x are stored columns x ('N') or rows x. E.g. a 'T' A:
// op rows [16, 24) over [512, 768) are stored rows [512, 768), columns [16, 24).
block schedule::stored(operand o, std::int64_t x, std::int64_t len, std::int64_t l, std::int64_t k) const {
  const problem& p = product();
  const bool plain = o == operand::a ? p.transa == 'N' : p.transb != 'N';
  return plain ? block{x, l, len, k} : block{l, x, k, len};
}

namespace {

// Sorts regions by place and drops repeats (a region is computed over several phases).
void distinct(std::vector<region>& v) {
  const auto key = [](const region& g) { return std::tuple(g.at.col, g.at.row, g.at.cols, g.at.rows, g.tri); };
  std::sort(v.begin(), v.end(), [&](const region& a, const region& b) { return key(a) < key(b); });
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// The reads of a phase's tasks by operand and rows of op(X), each with its hull along k.
// A rank-k task reads both factors from A (op(B) = op(A)^T); a diagonal one reads one.
void regions_of(const schedule& s, const std::vector<task>& ts, std::vector<region> (&out)[3]) {
  const bool rank_k = s.product().op != operation::gemm;
  std::vector<std::array<std::int64_t, 5>> reads;  // operand, x, len, k0, k1
  for (auto& v : out) v.clear();
  for (const task& t : ts) {
    const box& b = t.shape;
    if (b.k > 0 && b.m > 0) reads.push_back({0, b.i, b.m, b.l, b.l + b.k});
    if (b.k > 0 && b.n > 0 && !t.tri) reads.push_back({rank_k ? 0 : 1, b.j, b.n, b.l, b.l + b.k});
    if (b.m > 0 && b.n > 0) out[2].push_back(region{block{b.i, b.j, b.m, b.n}, t.tri});
  }
  std::sort(reads.begin(), reads.end());
  for (std::size_t x = 0; x < reads.size();) {
    std::size_t y = x;
    std::int64_t k1 = reads[x][4];
    while (y + 1 < reads.size() && reads[y + 1][0] == reads[x][0] && reads[y + 1][1] == reads[x][1] && reads[y + 1][2] == reads[x][2])
      k1 = std::max(k1, reads[++y][4]);
    const int o = int(reads[x][0]);
    out[o].push_back(region{s.stored(operand(o), reads[x][1], reads[x][2], reads[x][3], k1 - reads[x][3]), 0});
    x = y + 1;
  }
}

}  // namespace

void schedule::regions(int q, int r, std::vector<region> (&out)[3]) const {
  std::vector<task> ts;
  if (r >= 0 && r < ranks()) tasks(q, r, ts);
  regions_of(*this, ts, out);
}

std::vector<region> schedule::epoch_regions(int q, int r) const {
  std::vector<region> out, mine[3];
  if (!reduces_after(q)) return out;
  int q0 = q;
  while (q0 > 0 && !reduces_after(q0 - 1)) --q0;
  for (int x = q0; x <= q; ++x) {
    regions(x, r, mine);
    out.insert(out.end(), mine[2].begin(), mine[2].end());
  }
  if (q0 < q) distinct(out);  // one phase's tasks write distinct blocks
  return out;
}

std::vector<piece> schedule::pieces(operand o, int r) const {
  std::vector<std::int64_t> cells;
  std::vector<region> mine[3];
  std::vector<cover> cv;
  for (int q = 0; q < phases(); ++q) {
    if (o == operand::c) mine[2] = epoch_regions(q, r);
    else regions(q, r, mine);
    for (const region& g : mine[int(o)]) {
      cv.clear();
      covers(o, g, cv);
      for (const cover& c : cv) cells.push_back(c.cell);
    }
  }
  sort_unique(cells);
  std::vector<piece> out;
  for (std::int64_t c : cells)
    if (const piece pc = owned(o, c, r); pc.count > 0) out.push_back(pc);
  return out;
}

std::int64_t schedule::local_size(operand o, int r) const {
  std::int64_t n = 0;
  for (const piece& pc : pieces(o, r)) n += pc.count;
  return n;
}

// The exchange rule, cell by cell (ownership.hpp's file comment): what a rank's regions
// need from the other holders, what its pieces give the ranks needing them, its buffers.
// Each phase's regions (C: each epoch's) and their cells are found once.
rank_tally schedule::count_cells(int r) const {
  rank_tally t;
  if (r < 0 || r >= ranks()) return t;
  const int Q = phases();
  struct gathered {  // a region and the cells it covers, [first, last) of `covered`
    region g;
    std::size_t first, last;
  };
  std::vector<cover> covered;
  std::vector<std::vector<gathered>> at[3];  // [operand][phase]; C: at the phase ending an epoch
  std::vector<task> ts;
  std::vector<region> now[3], epoch;
  std::vector<std::int64_t> cells[3];
  for (int o = 0; o < 3; ++o) at[o].assign(std::size_t(Q), {});
  auto keep = [&](int o, int q, const region& g) {
    const std::size_t first = covered.size();
    covers(operand(o), g, covered);
    for (std::size_t x = first; x < covered.size(); ++x) cells[o].push_back(covered[x].cell);
    at[o][std::size_t(q)].push_back(gathered{g, first, covered.size()});
  };
  int epoch_start = 0;
  for (int q = 0; q < Q; ++q) {
    ts.clear();
    tasks(q, r, ts);
    regions_of(*this, ts, now);
    for (int o = 0; o < 2; ++o)
      for (const region& g : now[o]) keep(o, q, g);
    for (const task& x : ts) t.flops += task_flops(x, product().type), t.workspace = std::max(t.workspace, x.workspace);
    epoch.insert(epoch.end(), now[2].begin(), now[2].end());
    if (!reduces_after(q)) continue;
    if (epoch_start < q) distinct(epoch);
    for (const region& g : epoch) keep(2, q, g);
    epoch.clear(), epoch_start = q + 1;
  }
  // Each cell's share, asked once per phase that may need it (C: reduce it): my piece, and
  // what each other rank needing it gets of it (C: sends me).
  std::vector<std::pair<std::int64_t, piece>> mine[3];  // (cell, my piece), by cell
  std::vector<std::int64_t> given[3];                   // per phase
  for (int o = 0; o < 3; ++o) {
    sort_unique(cells[o]);
    given[o].assign(std::size_t(Q), 0);
    for (std::int64_t c : cells[o]) {
      const auto [q0, q1] = phase_span(operand(o), c);
      piece own{c, 0, 0};
      for (int q = std::max(q0, 0); q < q1; ++q) {
        const cell_share sh = share(operand(o), q, c, r);
        if (q == q0) own = sh.own;
        given[o][std::size_t(q)] += own.count * (sh.needers - (sh.among ? 1 : 0));
      }
      if (q1 <= q0) own = owned(operand(o), c, r);
      t.owned += own.count;
      mine[o].emplace_back(c, own);
    }
  }
  auto own_of = [&](int o, std::int64_t c) {
    return std::lower_bound(mine[o].begin(), mine[o].end(), c, [](const auto& x, std::int64_t v) { return x.first < v; })->second;
  };
  // Phase q's count of operand o: what its regions lack (A, B: received; C: partials sent),
  // what its pieces give (A, B: sent; C: partials received), its buffers; returns the sum.
  auto tally = [&](int o, int q) {
    std::int64_t lack = 0, blocks = 0;
    for (const gathered& x : at[o][std::size_t(q)]) {
      bool direct = x.last == x.first + 1 && !x.g.tri && !covered[x.first].part.at.tri && covered[x.first].part.at.at == x.g.at;
      for (std::size_t y = x.first; y < x.last; ++y) {
        const cover& c = covered[y];
        const std::int64_t size = c.part.at.elements(), own = overlap(own_of(o, c.cell), c.part.first, size);
        lack += size - own;
        direct = direct && own == size;
      }
      if (direct && o == 2) {  // and no other rank computes it
        const cell_share sh = share(operand::c, q, covered[x.first].cell, r);
        direct = sh.needers == 1 && sh.among;
      }
      if (!direct) blocks += x.g.at.size();
    }
    const std::int64_t give = given[o][std::size_t(q)];
    (o == 2 ? t.sent : t.received)[o] += lack, (o == 2 ? t.received : t.sent)[o] += give;
    t.blocks[o] = std::max(t.blocks[o], blocks);
    return lack + give;
  };
  for (int q = 0; q < Q; ++q) {
    std::int64_t stage = tally(0, q);
    stage += tally(1, q);
    t.staging = std::max(t.staging, stage);
    if (reduces_after(q)) t.staging = std::max(t.staging, tally(2, q));
  }
  return t;
}

std::int64_t schedule::messages(int r) const {
  std::int64_t n = 0;
  std::vector<region> now[3];
  std::vector<cover> cv;
  std::vector<int> h, peers;
  const std::vector<piece> mine = pieces(operand::c, r);
  for (int q = 0; q < phases(); ++q) {
    regions(q, r, now);
    for (int o = 0; o < 2; ++o) {  // every other holder of a piece of my regions' cells
      peers.clear();
      for (const region& g : now[o]) {
        cv.clear();
        covers(operand(o), g, cv);
        for (const cover& c : cv) {
          h.clear();
          holders(operand(o), c.cell, h);
          for (int x : h)
            if (x != r && owned(operand(o), c.cell, x).count > 0) peers.push_back(x);
        }
      }
      sort_unique(peers);
      n += std::int64_t(peers.size());
    }
    if (!reduces_after(q)) continue;
    peers.clear();  // every other computer of my pieces of C
    for (const piece& pc : mine) {
      if (const auto [q0, q1] = phase_span(operand::c, pc.cell); q < q0 || q >= q1) continue;
      h.clear();
      needers(operand::c, q, pc.cell, h);
      for (int x : h)
        if (x != r) peers.push_back(x);
    }
    sort_unique(peers);
    n += std::int64_t(peers.size());
  }
  return n;
}

// The buffers the executor allocates (lib/mpi/rank_exchange): each operand's regions not
// used in place at their largest, one staging area for the largest exchange, and the local
// subtrees' workspace.
rank_cost schedule::cost_of(const rank_tally& t) const {
  const std::size_t elem = element_size(product().type);
  rank_cost c;
  for (int o = 0; o < 3; ++o) c.received[o] = t.received[o], c.sent[o] = t.sent[o];
  c.flops = t.flops;
  c.owned_bytes = std::size_t(t.owned) * elem;
  c.buffer_bytes = std::size_t(t.blocks[0] + t.blocks[1] + t.blocks[2] + t.staging) * elem + t.workspace;
  return c;
}

const rank_cost& schedule::cost(int r) const {
  if (r < 0 || r >= ranks()) throw std::out_of_range("rank cost: no rank " + std::to_string(r));
  {
    std::lock_guard<std::mutex> g(lock_);
    if (!all_.empty()) return all_[std::size_t(r)];
    if (some_.size() > std::size_t(r) && some_[std::size_t(r)]) return *some_[std::size_t(r)];
  }
  auto c = std::make_unique<rank_cost>(cost_of(count(r)));
  std::lock_guard<std::mutex> g(lock_);
  if (some_.size() <= std::size_t(r)) some_.resize(std::size_t(ranks()));
  if (!some_[std::size_t(r)]) some_[std::size_t(r)] = std::move(c);
  return *some_[std::size_t(r)];
}

const std::vector<rank_cost>& schedule::costs() const {
  {
    std::lock_guard<std::mutex> g(lock_);
    if (!all_.empty() || ranks() == 0) return all_;
  }
  std::vector<rank_cost> all(static_cast<std::size_t>(ranks()));
  for (int r = 0; r < ranks(); ++r) all[std::size_t(r)] = cost_of(count(r));
  std::lock_guard<std::mutex> g(lock_);
  if (all_.empty()) all_ = std::move(all);
  return all_;
}

}  // namespace prism::ranks
