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

bool tile::whole(const block& b) const noexcept {
  return rows.size() == 1 && cols.size() == 1 && rows[0].pos == 0 && cols[0].pos == 0 && rows[0].len == b.rows &&
         cols[0].len == b.cols;
}

void buffer_plan::add(const phase_volume& v) {
  for (int o = 0; o < 3; ++o) blocks[o] = std::max(blocks[o], v.blocks[o]);
  staging = std::max({staging, v.received[0] + v.sent[0] + v.received[1] + v.sent[1], v.received[2] + v.sent[2]});
}

// ---------------------------------------------------------------------------------------
// Native layout.

native_ownership::native_ownership(const schedule& m, int me, int procs) : m_(m), me_(me), procs_(procs) {
  if (me < 0 || me >= m.ranks()) return;
  for (int o = 0; o < 3; ++o) {
    mine_[o] = m.pieces(operand(o), me);
    std::int64_t at = 0;
    for (const piece& pc : mine_[o]) at_[o].push_back(at), at += pc.count;
  }
}

std::int64_t native_ownership::offset(operand o, std::int64_t c) const {
  const auto& v = mine_[int(o)];
  const auto it = std::lower_bound(v.begin(), v.end(), c, [](const piece& pc, std::int64_t x) { return pc.cell < x; });
  return it != v.end() && it->cell == c ? at_[int(o)][std::size_t(it - v.begin())] : -1;
}

std::vector<int> native_ownership::holders(operand o, const region& g) const {
  std::vector<int> out, h;
  std::vector<cover> cv;
  m_.covers(o, g, cv);
  for (const cover& c : cv) {
    h.clear();
    m_.holders(o, c.cell, h);
    for (int r : h)
      if (overlap(m_.owned(o, c.cell, r), c.part.first, c.part.at.elements()) > 0) out.push_back(r);
  }
  sort_unique(out);
  return out;
}

std::int64_t native_ownership::held_count(operand o, const region& g, int p) const {
  std::vector<cover> cv;
  m_.covers(o, g, cv);
  std::int64_t n = 0;
  for (const cover& c : cv) n += overlap(m_.owned(o, c.cell, p), c.part.first, c.part.at.elements());
  return n;
}

// p's piece of each cell inside g, as tiles. A rectangle's run [e, end) of R rows is up to
// three tiles: the rest of its first column, its full columns (packed: lld R), the start of
// its last column. Example: R = 4, [2, 11): column 0 rows 2-3, column 1 whole, column 2
// rows 0-2. A packed triangle's run is a tile per column.
void native_ownership::held(operand o, const region& g, int p, std::vector<tile>& out) const {
  std::vector<cover> cv;
  m_.covers(o, g, cv);
  for (const cover& c : cv) {
    const piece pc = m_.owned(o, c.cell, p);
    const region& pr = c.part.at;
    const std::int64_t e0 = std::max(pc.first, c.part.first), end = std::min(pc.first + pc.count, c.part.first + pr.elements());
    if (e0 >= end) continue;
    std::int64_t at = p == me_ ? offset(o, c.cell) + (e0 - pc.first) : 0;
    const std::int64_t R = pr.at.rows, cr = pr.at.row - g.at.row, cc = pr.at.col - g.at.col;
    if (pr.tri) {
      each_column_run(pr, e0 - c.part.first, end - e0, [&](std::int64_t row, std::int64_t col, std::int64_t len, std::int64_t x) {
        out.push_back(tile{{{row - g.at.row, at + x, len}}, {{col - g.at.col, 0, 1}}, 1});
      });
      continue;
    }
    std::int64_t e = e0 - c.part.first;
    const std::int64_t stop = end - c.part.first;
    if (e % R != 0) {  // the rest of a column
      const std::int64_t len = std::min(stop - e, R - e % R);
      out.push_back(tile{{{cr + e % R, at, len}}, {{cc + e / R, 0, 1}}, R});
      e += len, at += len;
    }
    if (stop - e >= R) {  // whole columns
      const std::int64_t cols = (stop - e) / R;
      out.push_back(tile{{{cr, at, R}}, {{cc + e / R, 0, cols}}, R});
      e += cols * R, at += cols * R;
    }
    if (e < stop) out.push_back(tile{{{cr, at, stop - e}}, {{cc + e / R, 0, 1}}, R});  // a column's start
  }
}

std::vector<int> native_ownership::needers(operand o, int q, int p) const {
  std::vector<int> out;
  if (p != me_ || (o == operand::c && !m_.reduces_after(q))) return out;
  // A, B: the ranks my pieces go to; C: the ranks whose partials of my pieces come to me.
  for (const piece& pc : mine_[int(o)])
    if (const auto [q0, q1] = m_.phase_span(o, pc.cell); q >= q0 && q < q1) m_.needers(o, q, pc.cell, out);
  sort_unique(out);
  return out;
}

void native_ownership::all_held_c(int p, std::vector<tile>& out) const {
  if (p != me_ || mine_[2].empty()) return;
  const std::int64_t n = at_[2].back() + mine_[2].back().count;
  out.push_back(tile{{{0, 0, n}}, {{0, 0, 1}}, n});
}

// The diagonal of each packed triangle part my pieces cover: 'L' column t starts with it,
// 'U' column t ends with it (a 3-row 'L' triangle: elements 0, 3, 5).
void native_ownership::diagonal(int p, std::vector<std::int64_t>& out) const {
  if (p != me_) return;
  std::vector<cell_part> ps;
  for (std::size_t x = 0; x < mine_[2].size(); ++x) {
    const piece& pc = mine_[2][x];
    ps.clear();
    m_.parts(operand::c, pc.cell, ps);
    for (const cell_part& part : ps) {
      if (!part.at.tri) continue;
      const std::int64_t s = part.at.at.rows;
      for (std::int64_t t = 0, col = 0; t < s; col += part.at.tri == 'L' ? s - t : t + 1, ++t) {
        const std::int64_t e = part.first + col + (part.at.tri == 'L' ? 0 : t);
        if (e >= pc.first && e < pc.first + pc.count) out.push_back(at_[2][x] + e - pc.first);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// The caller's block-cyclic layout.

namespace {

// The runs of positions [x0, x1) of view v whose indices process p holds under d;
// positions relative to x0, consecutive runs merged. Example: view grouped by d itself,
// p's group [4, 8) and x0 = 4: one run (0, its first local index, 4).
std::vector<run> runs_of(const dim_view& v, const cyclic_dim& d, std::int64_t x0, std::int64_t x1, int p) {
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

// A triangle region g of an operand laid out by lo under views rv, cv (a rank-k update's
// views of n are the identity): process p's columns of it, each with p's rows on the
// triangle's side of the diagonal, as tiles and / or counted. E.g. 'L', a block at (4, 4)
// of 3 rows: column 5 takes rows 5 and 6.
void triangle_tiles(const dim_view& rv, const dim_view& cv, const operand_layout& lo, int npcol, std::int64_t lld,
                    const region& g, int p, std::vector<tile>* out, std::int64_t* count) {
  for (const run& c : runs_of(cv, lo.cols, g.at.col, g.at.col + g.at.cols, p % npcol))
    for (std::int64_t j = c.pos; j < c.pos + c.len; ++j) {
      const std::int64_t r0 = g.tri == 'L' ? j : 0, r1 = g.tri == 'L' ? g.at.rows : j + 1;
      if (count) *count += rv.count(g.at.row + r0, g.at.row + r1, lo.rows, p / npcol);
      if (!out) continue;
      tile t{runs_of(rv, lo.rows, g.at.row + r0, g.at.row + r1, p / npcol), {{j, c.local + (j - c.pos), 1}}, lld};
      for (run& r : t.rows) r.pos += r0;
      if (!t.rows.empty()) out->push_back(std::move(t));
    }
}

}  // namespace

cyclic_ownership::cyclic_ownership(const schedule& m, const caller_layout& L, const layout_fit& fit, const std::int64_t lld[3])
    : m_(m), L_(L) {
  const problem& p = m.product();
  for (int d = 0; d < 3; ++d) view_[d] = make_view(L, p, d, fit.views[d]);
  for (int o = 0; o < 3; ++o) lld_[o] = lld[o];
  proc_of_rank_.resize(std::size_t(m.ranks()));
  rank_of_proc_.assign(std::size_t(L.procs()), -1);
  for (int r = 0; r < m.ranks(); ++r) {
    proc_of_rank_[std::size_t(r)] = ranks::process_of(fit, L, r);
    rank_of_proc_[std::size_t(proc_of_rank_[std::size_t(r)])] = r;
  }
}

const dim_view& cyclic_ownership::rview(operand o) const { return view_[dim_of(m_.product(), o, false)]; }
const dim_view& cyclic_ownership::cview(operand o) const { return view_[dim_of(m_.product(), o, true)]; }

std::vector<int> cyclic_ownership::holders(operand o, const region& g) const {
  const operand_layout& lo = L_.op[int(o)];
  std::vector<int> prows, pcols, out;
  for (int pr = 0; pr < L_.nprow; ++pr)
    if (rview(o).count(g.at.row, g.at.row + g.at.rows, lo.rows, pr) > 0) prows.push_back(pr);
  for (int pc = 0; pc < L_.npcol; ++pc)
    if (cview(o).count(g.at.col, g.at.col + g.at.cols, lo.cols, pc) > 0) pcols.push_back(pc);
  for (int pr : prows)
    for (int pc : pcols)
      if (!g.tri || held_count(o, g, pr * L_.npcol + pc) > 0) out.push_back(pr * L_.npcol + pc);
  return out;
}

std::int64_t cyclic_ownership::held_count(operand o, const region& g, int p) const {
  const operand_layout& lo = L_.op[int(o)];
  if (g.tri) {
    std::int64_t n = 0;
    triangle_tiles(rview(o), cview(o), lo, L_.npcol, lld_[int(o)], g, p, nullptr, &n);
    return n;
  }
  const std::int64_t r = rview(o).count(g.at.row, g.at.row + g.at.rows, lo.rows, p / L_.npcol);
  return r == 0 ? 0 : r * cview(o).count(g.at.col, g.at.col + g.at.cols, lo.cols, p % L_.npcol);
}

void cyclic_ownership::held(operand o, const region& g, int p, std::vector<tile>& out) const {
  const operand_layout& lo = L_.op[int(o)];
  if (g.tri) return triangle_tiles(rview(o), cview(o), lo, L_.npcol, lld_[int(o)], g, p, &out, nullptr);
  tile t{runs_of(rview(o), lo.rows, g.at.row, g.at.row + g.at.rows, p / L_.npcol), {}, lld_[int(o)]};
  if (t.rows.empty()) return;
  t.cols = runs_of(cview(o), lo.cols, g.at.col, g.at.col + g.at.cols, p % L_.npcol);
  if (!t.cols.empty()) out.push_back(std::move(t));
}

std::vector<int> cyclic_ownership::needers(operand o, int q, int p) const {
  const operand_layout& lo = L_.op[int(o)];
  const int prow = p / L_.npcol, pcol = p % L_.npcol;
  std::vector<int> out;
  if (o == operand::c && !m_.reduces_after(q)) return out;
  m_.ranks_meeting(o, q, [&](const region& nb) {
    return rview(o).count(nb.at.row, nb.at.row + nb.at.rows, lo.rows, prow) > 0 &&
           cview(o).count(nb.at.col, nb.at.col + nb.at.cols, lo.cols, pcol) > 0;
  }, out);
  return out;
}

// A rank-k update's C is its uplo triangle, seen as is (its views of n are the identity).
void cyclic_ownership::all_held_c(int p, std::vector<tile>& out) const {
  const problem& pr = m_.product();
  held_c(L_, p, lld_[2], pr.op == operation::gemm ? 0 : pr.uplo, out);
}

void cyclic_ownership::diagonal(int p, std::vector<std::int64_t>& out) const { held_diagonal(L_, p, lld_[2], out); }

void held_c(const caller_layout& L, int p, std::int64_t lld, char uplo, std::vector<tile>& out) {
  const operand_layout& lc = L.op[2];
  const dim_view rows = dim_view::identity(lc.rows.n), cols = dim_view::identity(lc.cols.n);
  if (uplo) return triangle_tiles(rows, cols, lc, L.npcol, lld, region{block{0, 0, lc.rows.n, lc.cols.n}, uplo}, p, &out, nullptr);
  tile t{runs_of(rows, lc.rows, 0, lc.rows.n, p / L.npcol), runs_of(cols, lc.cols, 0, lc.cols.n, p % L.npcol), lld};
  if (!t.rows.empty() && !t.cols.empty()) out.push_back(std::move(t));
}

void held_diagonal(const caller_layout& L, int p, std::int64_t lld, std::vector<std::int64_t>& out) {
  const operand_layout& lc = L.op[2];
  for (std::int64_t i = 0; i < std::min(lc.rows.n, lc.cols.n); ++i)
    if (lc.rows.owner(i) * L.npcol + lc.cols.owner(i) == p) out.push_back(lc.rows.local(i) + lc.cols.local(i) * lld);
}

// ---------------------------------------------------------------------------------------
// The exchange rule.

bool in_place(const ownership& own, operand o, int q, int r, const region& g) {
  const int p = own.process_of(r);
  if (g.tri || g.at.size() == 0 || own.holders(o, g) != std::vector<int>{p}) return false;
  std::vector<tile> tiles;
  own.held(o, g, p, tiles);
  if (tiles.size() != 1 || !tiles[0].whole(g.at)) return false;
  if (o != operand::c) return true;
  std::vector<int> computing;  // ranks computing any element of my region in the epoch
  own.model().ranks_meeting(operand::c, q, [&](const region& nb) {
    return nb.at.row < g.at.row + g.at.rows && g.at.row < nb.at.row + nb.at.rows && nb.at.col < g.at.col + g.at.cols &&
           g.at.col < nb.at.col + nb.at.cols;
  }, computing);
  return computing == std::vector<int>{r};
}

std::vector<phase_volume> phase_volumes(const ownership& own, int q) {
  const schedule& m = own.model();
  std::vector<phase_volume> v(std::size_t(own.procs()));
  std::vector<region> mine[3];
  for (int r = 0; r < m.ranks(); ++r) {
    m.regions(q, r, mine);
    mine[2] = m.epoch_regions(q, r);
    const int me = own.process_of(r);
    for (int o = 0; o < 3; ++o) {
      std::vector<int> peers;  // one message per peer, however many regions it holds part of
      for (const region& g : mine[o]) {
        for (int h : own.holders(operand(o), g)) {
          if (h == me) continue;
          const std::int64_t n = own.held_count(operand(o), g, h);
          // A, B: h's part of my region comes to me; C: my partial of h's part goes to h.
          phase_volume& to = o == 2 ? v[std::size_t(h)] : v[std::size_t(me)];
          phase_volume& from = o == 2 ? v[std::size_t(me)] : v[std::size_t(h)];
          to.received[o] += n, from.sent[o] += n;
          if (std::find(peers.begin(), peers.end(), h) == peers.end()) peers.push_back(h), to.messages += 1;
        }
        if (!in_place(own, operand(o), q, r, g)) v[std::size_t(me)].blocks[o] += g.at.size();
      }
    }
  }
  return v;
}

}  // namespace prism::ranks
