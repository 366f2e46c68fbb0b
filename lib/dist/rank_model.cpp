// lib/dist/rank_model.cpp — the native layout and exact exchange costs of a plan over ranks
// (prism/rank_model.hpp has the definitions; this file only counts).
#include <prism/error.hpp>
#include <prism/rank_model.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>

namespace prism {

const char* to_string(operand o) {
  switch (o) {
    case operand::a: return "A";
    case operand::b: return "B";
    case operand::c: return "C";
  }
  return "?";
}

namespace {

constexpr operand all_operands[] = {operand::a, operand::b, operand::c};

bool is_rank_step(const node& nd) { return nd.kind != step_kind::leaf && nd.where == level::rank; }

}  // namespace

rank_model::rank_model(const plan& p) : plan_(p) {
  const auto& nodes = plan_.nodes();
  if (nodes.empty()) throw plan_error("the rank model needs a non-empty plan");
  const int P = ranks();
  // Phases: the parts of the rank-level DFS steps at the top; below them only rank BFS
  // steps, down to one rank per subtree, whose root is that rank's local subtree.
  std::function<void(int)> bfs = [&](int i) {
    const node& nd = nodes[std::size_t(i)];
    if (nd.owns.ranks.count == 1 || !is_rank_step(nd)) {
      tasks_[tasks_.size() - std::size_t(P) + std::size_t(nd.owns.ranks.first)] = rank_task{nd.shape, i};
      return;
    }
    if (nd.kind == step_kind::dfs)
      throw plan_error("a rank-level dfs step must sit above every rank-level bfs step (prism::dist runs "
                       "rank dfs parts as phases of the whole communicator)");
    for (int c : nd.children) bfs(c);
  };
  std::function<void(int)> phases = [&](int i) {
    const node& nd = nodes[std::size_t(i)];
    if (is_rank_step(nd) && nd.kind == step_kind::dfs) {
      for (int c : nd.children) phases(c);
      return;
    }
    phase_boxes_.push_back(nd.shape);
    tasks_.resize(tasks_.size() + std::size_t(P));
    bfs(i);
  };
  phases(0);
  for (operand o : all_operands) build_cells(o);
  build_exchanges();
  build_costs();
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

void rank_model::build_cells(operand o) {
  operand_cells& oc = ops_[int(o)];
  const int P = ranks();
  oc.row_cuts = {0, rows(o)};
  oc.col_cuts = {0, cols(o)};
  for (const rank_task& t : tasks_) {
    if (t.node < 0) continue;
    const block b = needed(o, t.shape);
    oc.row_cuts.insert(oc.row_cuts.end(), {b.row, b.row + b.rows});
    oc.col_cuts.insert(oc.col_cuts.end(), {b.col, b.col + b.cols});
  }
  for (auto* cuts : {&oc.row_cuts, &oc.col_cuts}) {
    std::sort(cuts->begin(), cuts->end());
    cuts->erase(std::unique(cuts->begin(), cuts->end()), cuts->end());
  }
  const std::size_t nr = oc.row_cuts.size() - 1, nc = oc.col_cuts.size() - 1;
  oc.cells.resize(nr * nc);
  for (std::size_t ci = 0; ci < nc; ++ci)
    for (std::size_t ri = 0; ri < nr; ++ri)
      oc.cells[ci * nr + ri] = block{oc.row_cuts[ri], oc.col_cuts[ci], oc.row_cuts[ri + 1] - oc.row_cuts[ri],
                                     oc.col_cuts[ci + 1] - oc.col_cuts[ci]};
  oc.holders.assign(oc.cells.size(), {});
  for (int r = 0; r < P; ++r)
    for (int q = 0; q < phases(); ++q) {
      const rank_task& t = task(q, r);
      if (t.node < 0) continue;
      for (int c : cells_in(o, needed(o, t.shape))) {
        auto& h = oc.holders[std::size_t(c)];
        if (h.empty() || h.back() != r) h.push_back(r);
      }
    }
  // Holder t of s owns elements [floor(t N / s), floor((t + 1) N / s)) of a cell of N,
  // e.g. N = 10, s = 3: [0, 3), [3, 6), [6, 10).
  oc.pieces.assign(std::size_t(P), {});
  for (std::size_t c = 0; c < oc.cells.size(); ++c) {
    const auto& h = oc.holders[c];
    const std::int64_t N = oc.cells[c].size(), s = std::int64_t(h.size());
    for (std::int64_t t = 0; t < s; ++t) {
      const std::int64_t first = t * N / s, last = (t + 1) * N / s;
      if (last > first) oc.pieces[std::size_t(h[std::size_t(t)])].push_back(piece{int(c), first, last - first});
    }
  }
}

std::vector<int> rank_model::cells_in(operand o, const block& b) const {
  const operand_cells& oc = op(o);
  std::vector<int> out;
  if (b.rows <= 0 || b.cols <= 0) return out;
  auto index = [](const std::vector<std::int64_t>& cuts, std::int64_t x) {
    return std::size_t(std::lower_bound(cuts.begin(), cuts.end(), x) - cuts.begin());
  };
  const std::size_t r0 = index(oc.row_cuts, b.row), r1 = index(oc.row_cuts, b.row + b.rows);
  const std::size_t c0 = index(oc.col_cuts, b.col), c1 = index(oc.col_cuts, b.col + b.cols);
  const std::size_t nr = oc.row_cuts.size() - 1;
  for (std::size_t ci = c0; ci < c1; ++ci)
    for (std::size_t ri = r0; ri < r1; ++ri) out.push_back(int(ci * nr + ri));
  return out;
}

std::int64_t rank_model::local_size(operand o, int r) const {
  std::int64_t n = 0;
  for (const piece& pc : pieces(o, r)) n += pc.count;
  return n;
}

piece rank_model::owned_piece(operand o, int c, int r) const {
  const auto& h = holders(o, c);
  const auto it = std::lower_bound(h.begin(), h.end(), r);
  if (it == h.end() || *it != r) return piece{c, 0, 0};
  const std::int64_t N = cells(o)[std::size_t(c)].size(), s = std::int64_t(h.size()), t = it - h.begin();
  return piece{c, t * N / s, (t + 1) * N / s - t * N / s};
}

namespace {
// Adds `elements` to the message with `peer`, keeping messages ordered by peer.
void add(std::map<int, std::int64_t>& to, int peer, std::int64_t elements) {
  if (elements > 0) to[peer] += elements;
}
std::vector<transfer> as_list(const std::map<int, std::int64_t>& m) {
  std::vector<transfer> out;
  for (const auto& [peer, n] : m) out.push_back(transfer{peer, n});
  return out;
}
}  // namespace

// Every message of every phase, once: gemm and the costs read these lists.
void rank_model::build_exchanges() {
  const int P = ranks();
  const std::size_t nc = cells(operand::c).size();
  computers_.assign(std::size_t(phases()) * nc, {});
  for (int q = 0; q < phases(); ++q)
    for (int r = 0; r < P; ++r) {
      const rank_task& t = task(q, r);
      if (t.node < 0) continue;
      for (int c : cells_in(operand::c, needed(operand::c, t.shape))) computers_[std::size_t(q) * nc + std::size_t(c)].push_back(r);
    }
  for (operand o : {operand::a, operand::b, operand::c}) {
    in_[int(o)].assign(std::size_t(phases()) * std::size_t(P), {});
    out_[int(o)].assign(std::size_t(phases()) * std::size_t(P), {});
  }
  for (int q = 0; q < phases(); ++q)
    for (int r = 0; r < P; ++r) {
      const rank_task& t = task(q, r);
      for (operand o : {operand::a, operand::b}) {
        // Receives: every other holder's piece of each cell my task needs. Sends: my piece
        // of each cell another rank's task needs.
        std::map<int, std::int64_t> from, to;
        if (t.node >= 0)
          for (int c : cells_in(o, needed(o, t.shape)))
            for (int h : holders(o, c))
              if (h != r) add(from, h, owned_piece(o, c, h).count);
        for (int d = 0; d < P; ++d) {
          const rank_task& td = task(q, d);
          if (d == r || td.node < 0) continue;
          for (int c : cells_in(o, needed(o, td.shape))) add(to, d, owned_piece(o, c, r).count);
        }
        in_[int(o)][slot(q, r)] = as_list(from);
        out_[int(o)][slot(q, r)] = as_list(to);
      }
      // C: my pieces' partials from every other rank computing them; my partials of each
      // cell I compute to its other owners.
      std::map<int, std::int64_t> from, to;
      for (const piece& pc : pieces(operand::c, r))
        for (int s : computers(q, pc.cell))
          if (s != r) add(from, s, pc.count);
      if (t.node >= 0)
        for (int c : cells_in(operand::c, needed(operand::c, t.shape)))
          for (int h : holders(operand::c, c))
            if (h != r) add(to, h, owned_piece(operand::c, c, h).count);
      in_[int(operand::c)][slot(q, r)] = as_list(from);
      out_[int(operand::c)][slot(q, r)] = as_list(to);
    }
}

void rank_model::build_costs() {
  const int P = ranks();
  const std::size_t elem = element_size(plan_.problem().type);
  const auto& nodes = plan_.nodes();
  first_phase_.assign(cells(operand::c).size(), -1);
  for (int q = 0; q < phases(); ++q)
    for (int r = 0; r < P; ++r) {
      const rank_task& t = task(q, r);
      if (t.node < 0) continue;
      for (int c : cells_in(operand::c, needed(operand::c, t.shape)))
        if (first_phase_[std::size_t(c)] < 0) first_phase_[std::size_t(c)] = q;
    }
  costs_.assign(std::size_t(P), {});
  for (int r = 0; r < P; ++r) {
    rank_cost& rc = costs_[std::size_t(r)];
    for (operand o : all_operands) rc.owned_bytes += std::size_t(local_size(o, r)) * elem;
    std::size_t peak = 0;
    for (int q = 0; q < phases(); ++q) {
      const rank_task& t = task(q, r);
      std::int64_t in[3], out[3];
      for (operand o : all_operands) {
        in[int(o)] = out[int(o)] = 0;
        for (const transfer& x : incoming(o, q, r)) in[int(o)] += x.elements, ++rc.messages;
        for (const transfer& x : outgoing(o, q, r)) out[int(o)] += x.elements;
        rc.received[int(o)] += in[int(o)];
        rc.sent[int(o)] += out[int(o)];
      }
      if (t.node < 0) continue;
      rc.flops += gemm_flops(plan_.problem().type, t.shape.m, t.shape.n, t.shape.k);
      std::int64_t blocks = 0;
      for (operand o : all_operands) blocks += needed(o, t.shape).size();
      const std::int64_t staging = std::max(in[0] + out[0] + in[1] + out[1], in[2] + out[2]);
      peak = std::max(peak, std::size_t(blocks + staging) * elem + nodes[std::size_t(t.node)].workspace_bytes);
    }
    rc.buffer_bytes = peak;
  }
}

std::int64_t rank_model::max_received() const {
  std::int64_t m = 0;
  for (const rank_cost& c : costs_) m = std::max(m, c.received_total());
  return m;
}

double rank_model::mean_received() const {
  double s = 0;
  for (const rank_cost& c : costs_) s += double(c.received_total());
  return costs_.empty() ? 0 : s / double(costs_.size());
}

std::size_t rank_model::max_peak_bytes() const {
  std::size_t m = 0;
  for (const rank_cost& c : costs_) m = std::max(m, c.peak_bytes());
  return m;
}

double rank_model::max_flops() const {
  double m = 0;
  for (const rank_cost& c : costs_) m = std::max(m, c.flops);
  return m;
}

double rank_model::mean_flops() const {
  double s = 0;
  for (const rank_cost& c : costs_) s += c.flops;
  return costs_.empty() ? 0 : s / double(costs_.size());
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
