// lib/ranks/tree_schedule.cpp — a gemm plan's rank tree as a schedule (tree_schedule.hpp).
#include "tree_schedule.hpp"

#include <prism/error.hpp>

#include <algorithm>

namespace prism::ranks {

namespace {

bool is_rank_step(const node& nd) { return nd.kind != step_kind::leaf && nd.where == level::rank; }

// The start of box b along d, e.g. start(dim::k, {m 8, n 8, k 4, i 0, j 8, l 12}) == 12.
std::int64_t start(dim d, const box& b) { return d == dim::m ? b.i : d == dim::n ? b.j : b.l; }

// Appends list h to out.
void append(std::vector<int>& out, const std::vector<int>& h) { out.insert(out.end(), h.begin(), h.end()); }

}  // namespace

tree_schedule::tree_schedule(std::shared_ptr<const plan> p) : plan_(std::move(p)) {
  const auto& nodes = plan_->nodes();
  if (nodes.empty()) throw plan_error("the rank level needs a non-empty plan");
  // Phases: the parts of the rank-level DFS steps at the top; below them only rank BFS
  // steps, down to one rank per subtree, whose root is that rank's local subtree.
  std::function<void(int)> phases_below = [&](int i) {
    const node& nd = nodes[std::size_t(i)];
    if (is_rank_step(nd) && nd.kind == step_kind::dfs) {
      for (int c : nd.children) phases_below(c);
      return;
    }
    phase_roots_.push_back(i);
  };
  phases_below(0);
  check_countable(plan_->problem(), plan_->ranks(), std::int64_t(phase_roots_.size()));
  // Every task's block boundaries cut each operand into cells.
  for (operand o : {operand::a, operand::b, operand::c}) {
    const block w = whole(o);
    row_cuts_[int(o)] = {0, w.rows};
    col_cuts_[int(o)] = {0, w.cols};
  }
  std::function<void(int)> cut = [&](int i) {
    const node& nd = nodes[std::size_t(i)];
    if (nd.owns.ranks.count == 1 && is_rank_step(nd))
      throw plan_error("node " + std::to_string(i) + ": a rank-level step over one rank below a rank-level bfs step "
                       "(a part of one rank is that rank's local subtree)");
    if (nd.owns.ranks.count == 1 || !is_rank_step(nd)) {
      for (operand o : {operand::a, operand::b, operand::c}) {
        const block b = needed(o, nd.shape);
        row_cuts_[int(o)].insert(row_cuts_[int(o)].end(), {b.row, b.row + b.rows});
        col_cuts_[int(o)].insert(col_cuts_[int(o)].end(), {b.col, b.col + b.cols});
      }
      return;
    }
    if (nd.kind == step_kind::dfs)
      throw plan_error("a rank-level dfs step must sit above every rank-level bfs step (prism::dist runs "
                       "rank dfs parts as phases of the whole communicator)");
    for (int c : nd.children) cut(c);
  };
  for (int root : phase_roots_) cut(root);
  for (int o = 0; o < 3; ++o)
    for (auto* cuts : {&row_cuts_[o], &col_cuts_[o]}) sort_unique(*cuts);
}

// Rank r's one task of phase q: a walk down the phase's rank steps (O(depth)) to its local
// subtree (maybe "same rank R").
void tree_schedule::tasks(int q, int r, std::vector<task>& out) const {
  const auto& nodes = plan_->nodes();
  int i = phase_roots_.at(std::size_t(q));
  if (r < 0 || r >= ranks()) return;
  while (nodes[std::size_t(i)].owns.ranks.count != 1 && is_rank_step(nodes[std::size_t(i)])) {
    // The part whose ranks hold r: parts take consecutive rank ranges, in order.
    const std::vector<int>& kids = nodes[std::size_t(i)].children;
    i = *(std::upper_bound(kids.begin(), kids.end(), r, [&](int rank, int child) {
            return rank < nodes[std::size_t(child)].owns.ranks.first;
          }) - 1);
  }
  const node& nd = nodes[std::size_t(i)];
  const std::size_t ws = nd.same >= 0 ? nodes[std::size_t(nd.same)].workspace_bytes : nd.workspace_bytes;
  out.push_back(task{nd.shape, i, 0, std::max(ws, nd.workspace_bytes)});
}

block tree_schedule::needed(operand o, const box& b) const {
  if (o == operand::a) return stored(o, b.i, b.m, b.l, b.k);
  if (o == operand::b) return stored(o, b.j, b.n, b.l, b.k);
  return block{b.i, b.j, b.m, b.n};
}

std::int64_t tree_schedule::cell_count(operand o) const {
  return std::int64_t(row_cuts_[int(o)].size() - 1) * std::int64_t(col_cuts_[int(o)].size() - 1);
}

block tree_schedule::cell(operand o, std::int64_t c) const {
  const auto& rc = row_cuts_[int(o)];
  const auto& cc = col_cuts_[int(o)];
  const std::int64_t nr = std::int64_t(rc.size()) - 1;
  const std::size_t ri = std::size_t(c % nr), ci = std::size_t(c / nr);
  return block{rc[ri], cc[ci], rc[ri + 1] - rc[ri], cc[ci + 1] - cc[ci]};
}

// The cells inside region g (a union of cells), in cell order.
void tree_schedule::covers(operand o, const region& g, std::vector<cover>& out) const {
  const block& b = g.at;
  if (b.rows <= 0 || b.cols <= 0) return;
  const auto& rc = row_cuts_[int(o)];
  const auto& cc = col_cuts_[int(o)];
  auto index = [](const std::vector<std::int64_t>& cuts, std::int64_t x) {
    return std::int64_t(std::lower_bound(cuts.begin(), cuts.end(), x) - cuts.begin());
  };
  const std::int64_t r0 = index(rc, b.row), r1 = index(rc, b.row + b.rows);
  const std::int64_t c0 = index(cc, b.col), c1 = index(cc, b.col + b.cols);
  const std::int64_t nr = std::int64_t(rc.size()) - 1;
  for (std::int64_t ci = c0; ci < c1; ++ci)
    for (std::int64_t ri = r0; ri < r1; ++ri) out.push_back(cover{ci * nr + ri, cell_part{region{cell(o, ci * nr + ri), 0}, 0}});
}

void tree_schedule::parts(operand o, std::int64_t c, std::vector<cell_part>& out) const {
  out.push_back(cell_part{region{cell(o, c), 0}, 0});
}

// The ranks below node i whose boxes cover cell block cb: at a cut of an edge o spans, only
// the part holding cb (cells never straddle a task's boundary); at a cut of the edge o does
// not span (n for A, m for B, k for C), every part. E.g. a 2 x 2 grid m2 n2: A's cell of
// rows [0, m/2) is covered by ranks 0 and 1 (the n parts of the first m part).
void tree_schedule::covering(operand o, int i, const block& cb, std::vector<int>& out) const {
  const auto& nodes = plan_->nodes();
  const node& nd = nodes[std::size_t(i)];
  // A cell lies wholly inside or outside each task's block (its boundaries are cuts), so
  // its first element decides; this matters at a phase's root, whose box is one phase's.
  const block nb = needed(o, nd.shape);
  if (cb.row < nb.row || cb.row >= nb.row + nb.rows || cb.col < nb.col || cb.col >= nb.col + nb.cols) return;
  if (nd.owns.ranks.count == 1 || !is_rank_step(nd)) {
    out.push_back(nd.owns.ranks.first);
    return;
  }
  const problem& pr = plan_->problem();
  int axis = -1;  // operand o's stored axis along the cut: 0 rows, 1 columns, -1 none
  if (o == operand::a && nd.cut != dim::n) axis = (nd.cut == dim::m) == (pr.transa == 'N') ? 0 : 1;
  if (o == operand::b && nd.cut != dim::m) axis = (nd.cut == dim::k) == (pr.transb == 'N') ? 0 : 1;
  if (o == operand::c && nd.cut != dim::k) axis = nd.cut == dim::m ? 0 : 1;
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

void tree_schedule::ranks_meeting(operand o, int q, const std::function<bool(const region&)>& meets,
                                  std::vector<int>& out) const {
  const auto& nodes = plan_->nodes();
  std::function<void(int)> walk = [&](int i) {
    const node& nd = nodes[std::size_t(i)];
    if (!meets(region{needed(o, nd.shape), 0})) return;
    if (nd.owns.ranks.count == 1 || !is_rank_step(nd)) {
      out.push_back(nd.owns.ranks.first);
      return;
    }
    for (int c : nd.children) walk(c);  // parts hold ascending rank ranges
  };
  walk(phase_roots_.at(std::size_t(q)));
}

const std::vector<int>& tree_schedule::holder_list(operand o, std::int64_t c) const {
  return kept_list(cache_lock_, holders_[int(o)], c, [&] {
    std::vector<int> h;
    for (int root : phase_roots_) covering(o, root, cell(o, c), h);
    if (phases() > 1) sort_unique(h);
    return h;
  });
}

const std::vector<int>& tree_schedule::needer_list(operand o, int q, std::int64_t c) const {
  if (phases() == 1) return holder_list(o, c);
  return kept_list(cache_lock_, needers_[int(o)], std::int64_t(q) * cell_count(o) + c, [&] {
    std::vector<int> h;
    covering(o, phase_roots_.at(std::size_t(q)), cell(o, c), h);
    return h;
  });
}

void tree_schedule::holders(operand o, std::int64_t c, std::vector<int>& out) const { append(out, holder_list(o, c)); }

void tree_schedule::needers(operand o, int q, std::int64_t c, std::vector<int>& out) const { append(out, needer_list(o, q, c)); }

// Holder t of s owns elements [floor(t N / s), floor((t + 1) N / s)) of a cell of N.
piece tree_schedule::owned(operand o, std::int64_t c, int r) const {
  const auto& h = holder_list(o, c);
  const auto it = std::lower_bound(h.begin(), h.end(), r);
  if (it == h.end() || *it != r) return piece{c, 0, 0};
  return piece_of(c, cell(o, c).size(), it - h.begin(), 1, std::int64_t(h.size()));
}

// Under rank-level DFS phases along d, a cell of an operand spanning d lies in one phase's
// box (found by its start), else in every phase's. E.g. phases m4 over 4096 rows: A's cell
// at row 2048 is phase 2's.
std::pair<int, int> tree_schedule::phase_span(operand o, std::int64_t c) const {
  const auto& nodes = plan_->nodes();
  const block first = needed(o, nodes[std::size_t(phase_roots_[0])].shape);
  if (phases() == 1 || first.size() >= needed(o, nodes[0].shape).size()) return {0, phases()};
  const block cb = cell(o, c);
  const auto q = std::partition_point(phase_roots_.begin(), phase_roots_.end(), [&](int root) {
                   const block nb = needed(o, nodes[std::size_t(root)].shape);
                   return nb.row + nb.rows <= cb.row || nb.col + nb.cols <= cb.col;
                 }) - phase_roots_.begin();
  return {int(q), int(std::min<std::int64_t>(q + 1, phases()))};
}

std::string tree_schedule::describe() const {
  const auto& nodes = plan_->nodes();
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

std::shared_ptr<const schedule> gemm_schedule(const plan& p) { return std::make_shared<tree_schedule>(std::make_shared<const plan>(p)); }

}  // namespace prism::ranks
