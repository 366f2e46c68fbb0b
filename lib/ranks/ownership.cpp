// lib/ranks/ownership.cpp — see ownership.hpp.
#include "ownership.hpp"

#include <algorithm>

namespace prism::ranks {

std::int64_t tile::count() const noexcept {
  std::int64_t r = 0, c = 0;
  for (const run& x : rows) r += x.len;
  for (const run& x : cols) c += x.len;
  return r * c;
}

bool tile::whole(const block& blk) const noexcept {
  return rows.size() == 1 && cols.size() == 1 && rows[0].pos == 0 && cols[0].pos == 0 && rows[0].len == blk.rows &&
         cols[0].len == blk.cols;
}

void buffer_plan::add(const phase_volume& v) {
  for (int o = 0; o < 3; ++o) blocks[o] = std::max(blocks[o], v.blocks[o]);
  staging = std::max({staging, v.received[0] + v.sent[0] + v.received[1] + v.sent[1], v.received[2] + v.sent[2]});
}

// ---------------------------------------------------------------------------------------
// Native layout.

native_ownership::native_ownership(const rank_model& m, int me, int procs) : m_(m), me_(me), procs_(procs) {
  if (me < 0 || me >= m.ranks()) return;
  for (operand o : {operand::a, operand::b, operand::c}) {
    mine_[int(o)] = m.pieces(o, me);
    std::int64_t at = 0;
    for (const piece& pc : mine_[int(o)]) at_[int(o)].push_back(at), at += pc.count;
  }
}

std::int64_t native_ownership::offset(operand o, std::int64_t c) const {
  const auto& v = mine_[int(o)];
  const auto it = std::lower_bound(v.begin(), v.end(), c, [](const piece& pc, std::int64_t x) { return pc.cell < x; });
  return it != v.end() && it->cell == c ? at_[int(o)][std::size_t(it - v.begin())] : -1;
}

std::vector<int> native_ownership::holders(operand o, const block& b) const {
  std::vector<int> out;
  const std::vector<int>* previous = nullptr;  // neighbouring cells mostly share their holders
  for (std::int64_t c : m_.cells_in(o, b)) {
    const std::vector<int>& h = m_.holders(o, c);
    if (previous != nullptr && *previous == h) continue;
    previous = m_.cell(o, c).size() >= std::int64_t(h.size()) ? &h : nullptr;  // then every piece is non-empty
    for (int r : h)
      if (m_.owned_piece(o, c, r).count > 0) out.push_back(r);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::int64_t native_ownership::held_count(operand o, const block& b, int p) const {
  std::int64_t n = 0;
  for (std::int64_t c : m_.cells_in(o, b)) n += m_.owned_piece(o, c, p).count;
  return n;
}

// A piece [first, first + count) of a cell of R rows, column-major, is up to three tiles:
// the rest of its first column, its full columns, and the start of its last column. In the
// holder's storage the piece is packed, so the full columns have lld R.
// Example: R = 4, piece [2, 11): column 0 rows 2-3, columns 1-1 whole, column 2 rows 0-2.
void native_ownership::held(operand o, const block& b, int p, std::vector<tile>& out) const {
  for (std::int64_t c : m_.cells_in(o, b)) {
    const piece pc = m_.owned_piece(o, c, p);
    if (pc.count == 0) continue;
    const block cell = m_.cell(o, c);
    const std::int64_t R = cell.rows, cr = cell.row - b.row, cc = cell.col - b.col;
    std::int64_t at = p == me_ ? offset(o, c) : 0;
    std::int64_t e = pc.first;
    const std::int64_t end = pc.first + pc.count;
    if (e % R != 0) {  // the rest of a column
      const std::int64_t len = std::min(end - e, R - e % R);
      out.push_back(tile{{{cr + e % R, at, len}}, {{cc + e / R, 0, 1}}, R});
      e += len, at += len;
    }
    if (end - e >= R) {  // whole columns
      const std::int64_t cols = (end - e) / R;
      out.push_back(tile{{{cr, at, R}}, {{cc + e / R, 0, cols}}, R});
      e += cols * R, at += cols * R;
    }
    if (e < end) out.push_back(tile{{{cr, at, end - e}}, {{cc + e / R, 0, 1}}, R});  // a column's start
  }
}

std::vector<int> native_ownership::needers(operand o, int q, int p) const {
  std::vector<int> out;
  if (p < 0 || p >= m_.ranks()) return out;
  // A, B: the ranks my pieces go to; C: the ranks whose partials of my pieces come to me.
  for (const transfer& x : o == operand::c ? m_.incoming(o, q, p) : m_.outgoing(o, q, p)) out.push_back(x.peer);
  return out;
}

void native_ownership::all_held_c(int p, std::vector<tile>& out) const {
  if (p != me_ || mine_[2].empty()) return;
  const std::int64_t n = at_[2].back() + mine_[2].back().count;
  out.push_back(tile{{{0, 0, n}}, {{0, 0, 1}}, n});
}

// ---------------------------------------------------------------------------------------
// The caller's block-cyclic layout.

namespace {

// The runs of positions [x0, x1) of view v whose indices process p holds under d;
// positions relative to x0, consecutive runs merged. Example: view grouped by d itself,
// p's group [4, 8) and x0 = 4: one run (0, its first local index, 4).
std::vector<run> runs_of(const dim_view& v, const cyclic_dim& d, std::int64_t x0,
                         std::int64_t x1, int p) {
  std::vector<run> out;
  v.runs(x0, x1, [&](std::int64_t x, std::int64_t index, std::int64_t len) {
    d.segments(index, index + len, [&](std::int64_t i, std::int64_t l, int owner, std::int64_t loc) {
      if (owner != p) return;
      const std::int64_t pos = x - x0 + (i - index);
      if (!out.empty() && out.back().pos + out.back().len == pos && out.back().local + out.back().len == loc)
        out.back().len += l;
      else
        out.push_back({pos, loc, l});
    });
  });
  return out;
}

}  // namespace

cyclic_ownership::cyclic_ownership(const rank_model& m, const caller_layout& L,
                                   const layout_fit& fit, const std::int64_t lld[3], int me)
    : m_(m), L_(L), me_(me) {
  const problem& p = m.source().problem();
  for (int d = 0; d < 3; ++d) view_[d] = make_view(L, p, d, fit.views[d]);
  for (int o = 0; o < 3; ++o) lld_[o] = lld[o];
  proc_of_rank_.resize(std::size_t(m.ranks()));
  rank_of_proc_.assign(std::size_t(L.procs()), -1);
  for (int r = 0; r < m.ranks(); ++r) {
    proc_of_rank_[std::size_t(r)] = ranks::process_of(fit, L, r);
    rank_of_proc_[std::size_t(proc_of_rank_[std::size_t(r)])] = r;
  }
}

const dim_view& cyclic_ownership::rview(operand o) const {
  return view_[dim_of(m_.source().problem(), o, false)];
}
const dim_view& cyclic_ownership::cview(operand o) const {
  return view_[dim_of(m_.source().problem(), o, true)];
}

std::vector<int> cyclic_ownership::holders(operand o, const block& b) const {
  const operand_layout& lo = L_.op[int(o)];
  std::vector<int> prows, pcols, out;
  for (int pr = 0; pr < L_.nprow; ++pr)
    if (rview(o).count(b.row, b.row + b.rows, lo.rows, pr) > 0) prows.push_back(pr);
  for (int pc = 0; pc < L_.npcol; ++pc)
    if (cview(o).count(b.col, b.col + b.cols, lo.cols, pc) > 0) pcols.push_back(pc);
  for (int pr : prows)
    for (int pc : pcols) out.push_back(pr * L_.npcol + pc);
  return out;
}

std::int64_t cyclic_ownership::held_count(operand o, const block& b, int p) const {
  const operand_layout& lo = L_.op[int(o)];
  const std::int64_t r = rview(o).count(b.row, b.row + b.rows, lo.rows, p / L_.npcol);
  return r == 0 ? 0 : r * cview(o).count(b.col, b.col + b.cols, lo.cols, p % L_.npcol);
}

void cyclic_ownership::held(operand o, const block& b, int p, std::vector<tile>& out) const {
  const operand_layout& lo = L_.op[int(o)];
  tile t{runs_of(rview(o), lo.rows, b.row, b.row + b.rows, p / L_.npcol), {}, lld_[int(o)]};
  if (t.rows.empty()) return;
  t.cols = runs_of(cview(o), lo.cols, b.col, b.col + b.cols, p % L_.npcol);
  if (!t.cols.empty()) out.push_back(std::move(t));
}

std::vector<int> cyclic_ownership::needers(operand o, int q, int p) const {
  const operand_layout& lo = L_.op[int(o)];
  const int prow = p / L_.npcol, pcol = p % L_.npcol;
  std::vector<int> out;
  m_.ranks_meeting(o, q, [&](const block& nb) {
    return rview(o).count(nb.row, nb.row + nb.rows, lo.rows, prow) > 0 &&
           cview(o).count(nb.col, nb.col + nb.cols, lo.cols, pcol) > 0;
  }, out);
  return out;
}

void cyclic_ownership::all_held_c(int p, std::vector<tile>& out) const { held_c(L_, p, lld_[2], out); }

void held_c(const caller_layout& L, int p, std::int64_t lld, std::vector<tile>& out) {
  const operand_layout& lc = L.op[2];
  tile t{runs_of(dim_view::identity(lc.rows.n), lc.rows, 0, lc.rows.n, p / L.npcol),
         runs_of(dim_view::identity(lc.cols.n), lc.cols, 0, lc.cols.n, p % L.npcol), lld};
  if (!t.rows.empty() && !t.cols.empty()) out.push_back(std::move(t));
}

// ---------------------------------------------------------------------------------------
// The exchange rule.

bool in_place(const ownership& own, operand o, int q, int r) {
  const rank_model& m = own.model();
  const rank_task t = m.task(q, r);
  if (t.node < 0) return false;
  const block blk = m.needed(o, t.shape);
  const int p = own.process_of(r);
  if (blk.size() == 0 || own.holders(o, blk) != std::vector<int>{p}) return false;
  std::vector<tile> tiles;
  own.held(o, blk, p, tiles);
  if (tiles.size() != 1 || !tiles[0].whole(blk)) return false;
  if (o != operand::c) return true;
  std::vector<int> computing;  // ranks computing any element of my block in this phase
  m.ranks_meeting(operand::c, q, [&](const block& nb) {
    return nb.row < blk.row + blk.rows && blk.row < nb.row + nb.rows && nb.col < blk.col + blk.cols &&
           blk.col < nb.col + nb.cols;
  }, computing);
  return computing == std::vector<int>{r};
}

std::vector<phase_volume> phase_volumes(const ownership& own, int q) {
  const rank_model& m = own.model();
  std::vector<phase_volume> v(std::size_t(own.procs()));
  for (int r = 0; r < m.ranks(); ++r) {
    const rank_task t = m.task(q, r);
    if (t.node < 0) continue;
    const int me = own.process_of(r);
    for (operand o : {operand::a, operand::b, operand::c}) {
      const block blk = m.needed(o, t.shape);
      for (int h : own.holders(o, blk)) {
        if (h == me) continue;
        const std::int64_t n = own.held_count(o, blk, h);
        // A, B: h's part of my block comes to me; C: my partial of h's part goes to h.
        phase_volume& to = o == operand::c ? v[std::size_t(h)] : v[std::size_t(me)];
        phase_volume& from = o == operand::c ? v[std::size_t(me)] : v[std::size_t(h)];
        to.received[int(o)] += n, to.messages += 1;
        from.sent[int(o)] += n;
      }
      if (!in_place(own, o, q, r)) v[std::size_t(me)].blocks[int(o)] = blk.size();
    }
  }
  return v;
}

}  // namespace prism::ranks
