// lib/ranks/rank_model.cpp — the native layout and exact exchange costs of a plan over ranks
// (prism/rank_model.hpp has the definitions; this file only counts).
#include <prism/error.hpp>
#include <prism/rank_model.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

namespace prism {

namespace {

constexpr operand all_operands[] = {operand::a, operand::b, operand::c};

bool is_rank_step(const node& nd) { return nd.kind != step_kind::leaf && nd.where == level::rank; }

// Holder t of s owns elements [floor(t N / s), floor((t + 1) N / s)) of a cell of N,
// e.g. N = 10, s = 3: [0, 3), [3, 6), [6, 10).
piece piece_of(std::int64_t cell, std::int64_t N, std::int64_t s, std::int64_t t) {
  const std::int64_t first = t * N / s;
  return piece{cell, first, (t + 1) * N / s - first};
}

// Sorts messages by peer and merges those to one peer, dropping empty ones.
std::vector<transfer> merged(std::vector<transfer> v) {
  std::sort(v.begin(), v.end(), [](const transfer& a, const transfer& b) { return a.peer < b.peer; });
  std::vector<transfer> out;
  for (const transfer& x : v) {
    if (x.elements <= 0) continue;
    if (!out.empty() && out.back().peer == x.peer) out.back().elements += x.elements;
    else out.push_back(x);
  }
  return out;
}

// The start of box b along d, e.g. start(dim::k, {m 8, n 8, k 4, i 0, j 8, l 12}) == 12.
std::int64_t start(dim d, const box& b) { return d == dim::m ? b.i : d == dim::n ? b.j : b.l; }

}  // namespace

// Holder and needer lists found so far, and the costs computed so far (see the class
// comment). Maps keep references to their elements valid as they grow.
struct rank_model::caches {
  std::mutex lock;
  std::unordered_map<std::int64_t, std::vector<int>> holders[3];
  std::unordered_map<std::int64_t, std::vector<int>> needers[3];  // key: q * cell_count + c
  std::unordered_map<int, rank_cost> some;
  std::vector<rank_cost> all;  // every rank's, once all_costs has run
};

rank_model::rank_model(const rank_model& o)
    : plan_(o.plan_), phase_roots_(o.phase_roots_), cache_(std::make_unique<caches>()) {
  for (int x = 0; x < 3; ++x) row_cuts_[x] = o.row_cuts_[x], col_cuts_[x] = o.col_cuts_[x];
}

rank_model::~rank_model() = default;

rank_model::rank_model(const plan& p) : plan_(p), cache_(std::make_unique<caches>()) {
  const auto& nodes = plan_.nodes();
  if (nodes.empty()) throw plan_error("the rank model needs a non-empty plan");
  // Phases: the parts of the rank-level DFS steps at the top; below them only rank BFS
  // steps, down to one rank per subtree, whose root is that rank's local subtree.
  std::function<void(int)> phases = [&](int i) {
    const node& nd = nodes[std::size_t(i)];
    if (is_rank_step(nd) && nd.kind == step_kind::dfs) {
      for (int c : nd.children) phases(c);
      return;
    }
    phase_roots_.push_back(i);
  };
  phases(0);
  // Every task's block boundaries cut each operand into cells.
  for (operand o : all_operands) {
    row_cuts_[int(o)] = {0, rows(o)};
    col_cuts_[int(o)] = {0, cols(o)};
  }
  std::function<void(int)> tasks = [&](int i) {
    const node& nd = nodes[std::size_t(i)];
    if (nd.owns.ranks.count == 1 || !is_rank_step(nd)) {
      for (operand o : all_operands) {
        const block b = needed(o, nd.shape);
        row_cuts_[int(o)].insert(row_cuts_[int(o)].end(), {b.row, b.row + b.rows});
        col_cuts_[int(o)].insert(col_cuts_[int(o)].end(), {b.col, b.col + b.cols});
      }
      return;
    }
    if (nd.kind == step_kind::dfs)
      throw plan_error("a rank-level dfs step must sit above every rank-level bfs step (prism::dist runs "
                       "rank dfs parts as phases of the whole communicator)");
    for (int c : nd.children) tasks(c);
  };
  for (int root : phase_roots_) tasks(root);
  for (operand o : all_operands)
    for (auto* cuts : {&row_cuts_[int(o)], &col_cuts_[int(o)]}) {
      std::sort(cuts->begin(), cuts->end());
      cuts->erase(std::unique(cuts->begin(), cuts->end()), cuts->end());
    }
}

rank_task rank_model::task(int q, int r) const {
  const auto& nodes = plan_.nodes();
  int i = phase_roots_.at(std::size_t(q));
  if (r < 0 || r >= ranks()) return {};
  for (;;) {
    const node& nd = nodes[std::size_t(i)];
    if (nd.owns.ranks.count == 1 || !is_rank_step(nd)) return rank_task{nd.shape, i};
    // The part whose ranks hold r: parts take consecutive rank ranges, in order.
    const auto it = std::upper_bound(nd.children.begin(), nd.children.end(), r, [&](int rank, int child) {
      return rank < nodes[std::size_t(child)].owns.ranks.first;
    });
    i = *(it - 1);
  }
}

std::int64_t rank_model::rows(operand o) const {
  const problem& pr = plan_.problem();
  switch (o) {
    case operand::a: return pr.transa == 'N' ? pr.m : pr.k;
    case operand::b: return pr.transb == 'N' ? pr.k : pr.n;
    case operand::c: return pr.m;
  }
  return 0;
}

std::int64_t rank_model::cols(operand o) const {
  const problem& pr = plan_.problem();
  switch (o) {
    case operand::a: return pr.transa == 'N' ? pr.k : pr.m;
    case operand::b: return pr.transb == 'N' ? pr.n : pr.k;
    case operand::c: return pr.n;
  }
  return 0;
}

// op(A) rows [i, i + m), inner [l, l + k): stored A is that block (transa N) or its
// transpose's, e.g. box {m 8, k 256, i 16, l 512} of a 'T' A reads stored rows
// [512, 768), columns [16, 24).
block rank_model::needed(operand o, const box& b) const {
  const problem& pr = plan_.problem();
  switch (o) {
    case operand::a: return pr.transa == 'N' ? block{b.i, b.l, b.m, b.k} : block{b.l, b.i, b.k, b.m};
    case operand::b: return pr.transb == 'N' ? block{b.l, b.j, b.k, b.n} : block{b.j, b.l, b.n, b.k};
    case operand::c: return block{b.i, b.j, b.m, b.n};
  }
  return {};
}

std::int64_t rank_model::cell_count(operand o) const {
  return std::int64_t(row_cuts_[int(o)].size() - 1) * std::int64_t(col_cuts_[int(o)].size() - 1);
}

block rank_model::cell(operand o, std::int64_t c) const {
  const auto& rc = row_cuts_[int(o)];
  const auto& cc = col_cuts_[int(o)];
  const std::int64_t nr = std::int64_t(rc.size()) - 1;
  const std::size_t ri = std::size_t(c % nr), ci = std::size_t(c / nr);
  return block{rc[ri], cc[ci], rc[ri + 1] - rc[ri], cc[ci + 1] - cc[ci]};
}

// The ranks below `i` whose boxes cover cell block cb: at a cut of an edge o spans, only
// the part holding cb (cells never straddle a task's boundary); at a cut of the edge o
// does not span (n for A, m for B, k for C), every part. E.g. a 2 x 2 grid m2 n2: A's cell
// of rows [0, m/2) is covered by ranks 0 and 1 (the n parts of the first m part).
void rank_model::covering(operand o, int i, const block& cb, std::vector<int>& out) const {
  const auto& nodes = plan_.nodes();
  const node& nd = nodes[std::size_t(i)];
  // A cell lies wholly inside or outside each task's block (its boundaries are cuts), so
  // its first element decides; this matters at a phase's root, whose box is one phase's.
  const block nb = needed(o, nd.shape);
  if (cb.row < nb.row || cb.row >= nb.row + nb.rows || cb.col < nb.col || cb.col >= nb.col + nb.cols) return;
  if (nd.owns.ranks.count == 1 || !is_rank_step(nd)) {
    out.push_back(nd.owns.ranks.first);
    return;
  }
  const problem& pr = plan_.problem();
  // Operand o's stored axis along the cut: rows, columns, or none (o does not span it).
  int axis = -1;  // 0 rows, 1 columns
  switch (o) {
    case operand::a:
      if (nd.cut == dim::m) axis = pr.transa == 'N' ? 0 : 1;
      if (nd.cut == dim::k) axis = pr.transa == 'N' ? 1 : 0;
      break;
    case operand::b:
      if (nd.cut == dim::k) axis = pr.transb == 'N' ? 0 : 1;
      if (nd.cut == dim::n) axis = pr.transb == 'N' ? 1 : 0;
      break;
    case operand::c:
      if (nd.cut == dim::m) axis = 0;
      if (nd.cut == dim::n) axis = 1;
      break;
  }
  if (axis < 0) {
    for (int c : nd.children) covering(o, c, cb, out);
    return;
  }
  const std::int64_t x = axis == 0 ? cb.row : cb.col;
  const auto it = std::upper_bound(nd.children.begin(), nd.children.end(), x, [&](std::int64_t v, int child) {
    return v < start(nd.cut, nodes[std::size_t(child)].shape);
  });
  covering(o, *(it - 1), cb, out);
}

void rank_model::ranks_meeting(operand o, int q, const std::function<bool(const block&)>& meets,
                               std::vector<int>& out) const {
  const auto& nodes = plan_.nodes();
  std::function<void(int)> walk = [&](int i) {
    const node& nd = nodes[std::size_t(i)];
    if (!meets(needed(o, nd.shape))) return;
    if (nd.owns.ranks.count == 1 || !is_rank_step(nd)) {
      out.push_back(nd.owns.ranks.first);
      return;
    }
    for (int c : nd.children) walk(c);  // parts hold ascending rank ranges
  };
  walk(phase_roots_.at(std::size_t(q)));
}

const std::vector<int>& rank_model::holders(operand o, std::int64_t c) const {
  {
    std::lock_guard<std::mutex> g(cache_->lock);
    if (auto it = cache_->holders[int(o)].find(c); it != cache_->holders[int(o)].end()) return it->second;
  }
  const block cb = cell(o, c);
  std::vector<int> h;
  for (int root : phase_roots_) covering(o, root, cb, h);
  if (phases() > 1) {
    std::sort(h.begin(), h.end());
    h.erase(std::unique(h.begin(), h.end()), h.end());
  }
  std::lock_guard<std::mutex> g(cache_->lock);
  return cache_->holders[int(o)].emplace(c, std::move(h)).first->second;
}

const std::vector<int>& rank_model::needers(operand o, int q, std::int64_t c) const {
  if (phases() == 1) return holders(o, c);
  const std::int64_t key = std::int64_t(q) * cell_count(o) + c;
  {
    std::lock_guard<std::mutex> g(cache_->lock);
    if (auto it = cache_->needers[int(o)].find(key); it != cache_->needers[int(o)].end()) return it->second;
  }
  std::vector<int> h;
  covering(o, phase_roots_.at(std::size_t(q)), cell(o, c), h);
  std::lock_guard<std::mutex> g(cache_->lock);
  return cache_->needers[int(o)].emplace(key, std::move(h)).first->second;
}

std::vector<std::int64_t> rank_model::cells_in(operand o, const block& b) const {
  std::vector<std::int64_t> out;
  if (b.rows <= 0 || b.cols <= 0) return out;
  const auto& rc = row_cuts_[int(o)];
  const auto& cc = col_cuts_[int(o)];
  auto index = [](const std::vector<std::int64_t>& cuts, std::int64_t x) {
    return std::int64_t(std::lower_bound(cuts.begin(), cuts.end(), x) - cuts.begin());
  };
  const std::int64_t r0 = index(rc, b.row), r1 = index(rc, b.row + b.rows);
  const std::int64_t c0 = index(cc, b.col), c1 = index(cc, b.col + b.cols);
  const std::int64_t nr = std::int64_t(rc.size()) - 1;
  out.reserve(std::size_t((r1 - r0) * (c1 - c0)));
  for (std::int64_t ci = c0; ci < c1; ++ci)
    for (std::int64_t ri = r0; ri < r1; ++ri) out.push_back(ci * nr + ri);
  return out;
}

std::vector<piece> rank_model::pieces(operand o, int r) const {
  std::vector<std::int64_t> mine;
  for (int q = 0; q < phases(); ++q) {
    const rank_task t = task(q, r);
    if (t.node < 0) continue;
    const std::vector<std::int64_t> c = cells_in(o, needed(o, t.shape));
    mine.insert(mine.end(), c.begin(), c.end());
  }
  if (phases() > 1) {
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  }
  std::vector<piece> out;
  for (std::int64_t c : mine)
    if (const piece pc = owned_piece(o, c, r); pc.count > 0) out.push_back(pc);
  return out;
}

std::int64_t rank_model::local_size(operand o, int r) const {
  std::int64_t n = 0;
  for (const piece& pc : pieces(o, r)) n += pc.count;
  return n;
}

piece rank_model::owned_piece(operand o, std::int64_t c, int r) const {
  const auto& h = holders(o, c);
  const auto it = std::lower_bound(h.begin(), h.end(), r);
  if (it == h.end() || *it != r) return piece{c, 0, 0};
  return piece_of(c, cell(o, c).size(), std::int64_t(h.size()), it - h.begin());
}

// A and B: a rank receives every other holder's piece of each cell its task needs, and
// sends its piece of each cell to the other ranks needing it in the phase. C: an owner
// receives one partial of its piece from every other rank computing the cell in the phase,
// and a computer sends its partial of each cell to the cell's other owners.
std::vector<transfer> rank_model::incoming(operand o, int q, int r) const {
  std::vector<transfer> from;
  if (o == operand::c) {
    for (const piece& pc : pieces(operand::c, r))
      for (int s : computers(q, pc.cell))
        if (s != r) from.push_back(transfer{s, pc.count});
    return merged(std::move(from));
  }
  const rank_task t = task(q, r);
  if (t.node < 0) return from;
  for (std::int64_t c : cells_in(o, needed(o, t.shape))) {
    const auto& h = holders(o, c);
    const std::int64_t N = cell(o, c).size(), s = std::int64_t(h.size());
    for (std::int64_t x = 0; x < s; ++x)
      if (h[std::size_t(x)] != r) from.push_back(transfer{h[std::size_t(x)], piece_of(c, N, s, x).count});
  }
  return merged(std::move(from));
}

std::vector<transfer> rank_model::outgoing(operand o, int q, int r) const {
  std::vector<transfer> to;
  if (o != operand::c) {
    for (const piece& pc : pieces(o, r))
      for (int d : needers(o, q, pc.cell))
        if (d != r) to.push_back(transfer{d, pc.count});
    return merged(std::move(to));
  }
  const rank_task t = task(q, r);
  if (t.node < 0) return to;
  for (std::int64_t c : cells_in(operand::c, needed(operand::c, t.shape))) {
    const auto& h = holders(operand::c, c);
    const std::int64_t N = cell(operand::c, c).size(), s = std::int64_t(h.size());
    for (std::int64_t x = 0; x < s; ++x)
      if (h[std::size_t(x)] != r) to.push_back(transfer{h[std::size_t(x)], piece_of(c, N, s, x).count});
  }
  return merged(std::move(to));
}

const std::vector<int>& rank_model::computers(int q, std::int64_t c) const { return needers(operand::c, q, c); }

int rank_model::first_phase(std::int64_t c) const {
  for (int q = 0; q < phases(); ++q)
    if (!computers(q, c).empty()) return q;
  return -1;
}

// Rank r's costs from its own cells, O(cells x log holders): of a cell of N elements
// shared by s holders, holder t receives N - piece(t), its piece being counted in closed
// form. Messages are not counted here (they need the holder lists themselves, O(P) for a
// widely replicated cell): messages() counts them for one rank on demand.
rank_cost rank_model::compute_cost(int r) const {
  rank_cost rc;
  const std::size_t elem = element_size(plan_.problem().type);
  const auto& nodes = plan_.nodes();
  std::vector<piece> mine[3];
  const rank_task only = phases() == 1 ? task(0, r) : rank_task{};
  for (operand o : all_operands) {
    if (phases() == 1) {  // my pieces are those of my one block's cells
      if (only.node >= 0)
        for (std::int64_t c : cells_in(o, needed(o, only.shape)))
          if (const piece pc = owned_piece(o, c, r); pc.count > 0) mine[int(o)].push_back(pc);
    } else {
      mine[int(o)] = pieces(o, r);
    }
    for (const piece& pc : mine[int(o)]) rc.owned_bytes += std::size_t(pc.count) * elem;
  }
  auto index_of = [](const std::vector<int>& h, int x) {
    const auto it = std::lower_bound(h.begin(), h.end(), x);
    return it != h.end() && *it == x ? std::int64_t(it - h.begin()) : std::int64_t(-1);
  };
  // My pieces each phase can touch: under rank-level DFS phases along d, a piece of an
  // operand spanning d lies in one phase's box (found by its cell's start along d), else
  // in every phase's. E.g. phases m4 over 4096 rows: A's cell at row 2048 is phase 2's.
  std::vector<std::vector<std::size_t>> by_phase[3];
  for (operand o : all_operands) {
    by_phase[int(o)].assign(std::size_t(phases()), {});
    const node& top = nodes[0];
    const bool split = phases() > 1 && needed(o, phase_box(0)).size() < needed(o, top.shape).size();
    for (std::size_t x = 0; x < mine[int(o)].size(); ++x) {
      if (!split) {
        for (int q = 0; q < phases(); ++q) by_phase[int(o)][std::size_t(q)].push_back(x);
        continue;
      }
      const block cb = cell(o, mine[int(o)][x].cell);
      const auto q = std::partition_point(phase_roots_.begin(), phase_roots_.end(), [&](int root) {
                       const block nb = needed(o, nodes[std::size_t(root)].shape);
                       return nb.row + nb.rows <= cb.row || nb.col + nb.cols <= cb.col;
                     }) - phase_roots_.begin();
      if (q < phases()) by_phase[int(o)][std::size_t(q)].push_back(x);
    }
  }
  // The executor allocates each block not used in place and the staging area once, at
  // their largest over the phases, and the local subtree's workspace: the buffers are the
  // sum of those maxima (ranks::buffer_plan).
  std::int64_t most_block[3] = {0, 0, 0}, most_staging = 0;
  std::size_t most_workspace = 0;
  for (int q = 0; q < phases(); ++q) {
    const rank_task t = phases() == 1 ? only : task(q, r);
    std::int64_t in[3] = {0, 0, 0}, out[3] = {0, 0, 0};
    bool direct[3] = {false, false, false};  // used where it lies: see in_place (lib/ranks/ownership.hpp)
    for (operand o : all_operands) {
      const bool reads = o != operand::c;  // A and B: gathered; C: partials reduced
      // What my task's block needs (A, B) or sends (C): the other holders' pieces.
      if (t.node >= 0) {
        const std::vector<std::int64_t> cells = cells_in(o, needed(o, t.shape));
        std::int64_t& n = reads ? in[int(o)] : out[int(o)];
        if (cells.size() == 1) {
          const auto& h = holders(o, cells[0]);
          const std::int64_t N = cell(o, cells[0]).size(), s = std::int64_t(h.size()), x = index_of(h, r);
          const std::int64_t own = piece_of(cells[0], N, s, x).count;
          n += N - own;
          // My piece is the whole block, and (C) nobody else computes it in this phase.
          direct[int(o)] = own == N && (reads || needers(o, q, cells[0]) == std::vector<int>{r});
        } else {
          // Several cells: each cell's other holders' pieces (A, B in) or their pieces of my
          // partial (C out).
          for (std::int64_t c : cells) {
            const auto& h = holders(o, c);
            const std::int64_t N = cell(o, c).size(), s = std::int64_t(h.size()), x = index_of(h, r);
            n += N - piece_of(c, N, s, x).count;
          }
        }
      }
      // What others need of my pieces (A, B), or send to them (C): one message per peer.
      std::int64_t& n = reads ? out[int(o)] : in[int(o)];
      for (std::size_t x : by_phase[int(o)][std::size_t(q)]) {
        const piece& pc = mine[int(o)][x];
        const auto& d = needers(o, q, pc.cell);
        n += pc.count * (std::int64_t(d.size()) - (index_of(d, r) >= 0 ? 1 : 0));
      }
      rc.received[int(o)] += in[int(o)];
      rc.sent[int(o)] += out[int(o)];
    }
    if (t.node < 0) continue;
    rc.flops += gemm_flops(plan_.problem().type, t.shape.m, t.shape.n, t.shape.k);
    for (operand o : all_operands)
      if (!direct[int(o)]) most_block[int(o)] = std::max(most_block[int(o)], needed(o, t.shape).size());
    most_staging = std::max(most_staging, std::max(in[0] + out[0] + in[1] + out[1], in[2] + out[2]));
    most_workspace = std::max(most_workspace, nodes[std::size_t(t.node)].workspace_bytes);
  }
  rc.buffer_bytes = std::size_t(most_block[0] + most_block[1] + most_block[2] + most_staging) * elem + most_workspace;
  return rc;
}

std::int64_t rank_model::messages(int r) const {
  std::int64_t n = 0;
  for (int q = 0; q < phases(); ++q)
    for (operand o : all_operands) n += std::int64_t(incoming(o, q, r).size());
  return n;
}

const rank_cost& rank_model::cost(int r) const {
  if (r < 0 || r >= ranks()) throw std::out_of_range("rank_model::cost: no rank " + std::to_string(r));
  {
    std::lock_guard<std::mutex> g(cache_->lock);
    if (!cache_->all.empty()) return cache_->all[std::size_t(r)];
    if (auto it = cache_->some.find(r); it != cache_->some.end()) return it->second;
  }
  rank_cost rc = compute_cost(r);
  std::lock_guard<std::mutex> g(cache_->lock);
  return cache_->some.emplace(r, rc).first->second;
}

void rank_model::all_costs() const {
  {
    std::lock_guard<std::mutex> g(cache_->lock);
    if (!cache_->all.empty()) return;
  }
  std::vector<rank_cost> all(static_cast<std::size_t>(ranks()));
  for (int r = 0; r < ranks(); ++r) all[std::size_t(r)] = compute_cost(r);
  std::lock_guard<std::mutex> g(cache_->lock);
  if (cache_->all.empty()) cache_->all = std::move(all);
}

std::int64_t rank_model::max_received() const {
  all_costs();
  std::int64_t m = 0;
  for (const rank_cost& c : cache_->all) m = std::max(m, c.received_total());
  return m;
}

double rank_model::mean_received() const {
  all_costs();
  double s = 0;
  for (const rank_cost& c : cache_->all) s += double(c.received_total());
  return cache_->all.empty() ? 0 : s / double(cache_->all.size());
}

std::size_t rank_model::max_peak_bytes() const {
  all_costs();
  std::size_t m = 0;
  for (const rank_cost& c : cache_->all) m = std::max(m, c.peak_bytes());
  return m;
}

double rank_model::max_flops() const {
  all_costs();
  double m = 0;
  for (const rank_cost& c : cache_->all) m = std::max(m, c.flops);
  return m;
}

double rank_model::mean_flops() const {
  all_costs();
  double s = 0;
  for (const rank_cost& c : cache_->all) s += c.flops;
  return cache_->all.empty() ? 0 : s / double(cache_->all.size());
}

std::string rank_model::grid() const {
  const auto& nodes = plan_.nodes();
  std::function<std::string(int)> text = [&](int i) -> std::string {
    const node& nd = nodes[std::size_t(i)];
    if (!is_rank_step(nd)) return "";
    std::vector<std::string> kids;
    for (int c : nd.children) kids.push_back(text(c));
    const bool same = std::all_of(kids.begin(), kids.end(), [&](const std::string& s) { return s == kids[0]; }) &&
                      std::all_of(nd.parts.begin(), nd.parts.end(), [&](const part& p) { return p.ranks == nd.parts[0].ranks; });
    const std::string head = std::string(nd.kind == step_kind::dfs ? "dfs " : "") + to_string(nd.cut);
    if (same) {
      const std::string f = std::to_string(nd.parts.size());
      if (nd.kind == step_kind::dfs) return head + f + " > " + (kids[0].empty() ? "1" : kids[0]);
      return head + f + (kids[0].empty() ? "" : " " + kids[0]);
    }
    std::string out = head + "(";
    for (std::size_t c = 0; c < kids.size(); ++c) {
      if (c > 0) out += " + ";
      out += nd.kind == step_kind::dfs ? std::string() : std::to_string(nd.parts[c].ranks) + "r";
      if (!kids[c].empty()) out += (nd.kind == step_kind::dfs ? "" : ": ") + kids[c];
    }
    return out + ")";
  };
  const std::string g = text(0);
  return g.empty() ? "1" : g;
}

}  // namespace prism
