// lib/ranks/rank_k_cyclic.cpp — a rank-k scheme's exact cost on a block-cyclic layout
// (rank_k_cyclic.hpp), and ScaLAPACK's modelled p?syrk cost beside it.
#include "rank_k_cyclic.hpp"

#include <prism/error.hpp>

#include <algorithm>
#include <limits>

namespace prism::ranks {

std::vector<rank_k_span> rank_k_spans(const rank_k_model& m, operand o, int r) {
  std::vector<rank_k_span> out;
  const problem& p = m.source();
  if (o == operand::a) {
    const bool n_trans = p.transa == 'N';
    for (const auto& [x, pc] : m.a_pieces(r)) {
      const std::int64_t b0 = m.block_start(x.b), rb = m.block_rows(x.b);
      if (n_trans) out.push_back(rank_k_span{b0, x.k0, rb, pc.first, pc.count, 0});
      else out.push_back(rank_k_span{x.k0, b0, x.k1 - x.k0, pc.first, pc.count, 0});
    }
  } else if (o == operand::c) {
    // Block (i, j), i >= j, of the lower orientation: L rows of block i, columns of block
    // j; U the transposed place (rows of block j, columns of block i).
    for (const piece& pc : m.c_pieces(r)) {
      const auto [i, j] = rank_k_model::c_block(pc.cell);
      const std::int64_t ri = m.block_start(i), rj = m.block_start(j);
      const bool lower = p.uplo == 'L';
      if (i == j) out.push_back(rank_k_span{ri, ri, m.block_rows(i), pc.first, pc.count, lower ? 'L' : 'U'});
      else if (lower) out.push_back(rank_k_span{ri, rj, m.block_rows(i), pc.first, pc.count, 0});
      else out.push_back(rank_k_span{rj, ri, m.block_rows(j), pc.first, pc.count, 0});
    }
  }
  return out;
}

namespace {

// Adds to count[g] the positions of rectangle [r0, r1) x [c0, c1) of operand layout o
// (positions of views rv and cv) that grid process g holds: rows held by process row pr
// times columns by process column pc. E.g. 4 x 4 in blocks of 2 on 2 x 2 from (0, 0),
// identity views: 4 elements each.
void count_rect(const operand_layout& o, const dim_view& rv, const dim_view& cv, int npcol, std::int64_t r0,
                std::int64_t r1, std::int64_t c0, std::int64_t c1, std::vector<std::int64_t>& count) {
  for (int pr = 0; pr < o.rows.procs; ++pr) {
    const std::int64_t nr = rv.count(r0, r1, o.rows, pr);
    if (nr == 0) continue;
    for (int pc = 0; pc < o.cols.procs; ++pc) count[std::size_t(pr * npcol + pc)] += nr * cv.count(c0, c1, o.cols, pc);
  }
}

// Elements of plan rank r's native pieces of operand o held by each grid process, A's k
// positions read through view k.
std::vector<std::int64_t> held_by(const rank_k_model& m, const caller_layout& L, operand o, int r, const dim_view& k) {
  std::vector<std::int64_t> count(std::size_t(L.procs()), 0);
  const operand_layout& ol = L.op[int(o)];
  const bool n_trans = m.source().transa == 'N';
  const dim_view rows = o == operand::a && !n_trans ? k : dim_view::identity(ol.rows.n);
  const dim_view cols = o == operand::a && n_trans ? k : dim_view::identity(ol.cols.n);
  for (const rank_k_span& s : rank_k_spans(m, o, r))
    for_each_rect(s, [&](std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
      count_rect(ol, rows, cols, L.npcol, r0, r1, c0, c1, count);
    });
  return count;
}

}  // namespace

std::string rank_k_fit::describe(const problem& p) const {
  std::string s = k_grouped ? std::string("k grouped by A's ") + (p.transa == 'N' ? "columns" : "rows") : "k as is";
  return s + "; plan ranks " + (column_major ? "column-major" : "row-major");
}

int rank_k_process(const rank_k_fit& f, const caller_layout& L, int r) {
  return f.column_major ? (r % L.nprow) * L.npcol + r / L.nprow : r;
}

dim_view rank_k_view(const rank_k_fit& f, const caller_layout& L, const problem& p) {
  const cyclic_dim& d = p.transa == 'N' ? L.op[0].cols : L.op[0].rows;
  return f.k_grouped ? dim_view::grouped(d) : dim_view::identity(d.n);
}

rank_k_cyclic_cost cost_rank_k_cyclic(const rank_k_model& m, const caller_layout& L, const rank_k_fit& f, double F,
                                      double B) {
  const std::size_t P = std::size_t(L.procs());
  if (m.ranks() > L.procs()) throw plan_error("cost_rank_k_cyclic: the scheme has more ranks than the grid has processes");
  rank_k_cyclic_cost out;
  out.received.assign(P, 0), out.sent.assign(P, 0), out.moved_in.assign(P, 0), out.moved_back.assign(P, 0);
  out.flops.assign(P, 0), out.peak_bytes.assign(P, 0);
  std::vector<std::int64_t> staging_in(P, 0), staging_back(P, 0);
  std::vector<int> plan_rank(P, -1);  // of each process (-1: none)
  const dim_view k = rank_k_view(f, L, m.source());
  for (int r = 0; r < m.ranks(); ++r) {
    const std::size_t q = std::size_t(rank_k_process(f, L, r));  // its process
    plan_rank[q] = r;
    const std::vector<std::int64_t> a = held_by(m, L, operand::a, r, k), c = held_by(m, L, operand::c, r, k);
    for (std::size_t g = 0; g < P; ++g) {
      if (g == q) continue;
      out.moved_in[q] += a[g], out.sent[g] += a[g];
      out.moved_back[g] += c[g], out.sent[q] += c[g];
      staging_in[q] += a[g], staging_in[g] += a[g];
      staging_back[q] += c[g], staging_back[g] += c[g];
    }
  }
  const double elem = double(element_size(m.source().type));
  for (std::size_t g = 0; g < P; ++g) {
    const rank_cost rc = m.cost(plan_rank[g]);  // (nothing for -1)
    out.received[g] = out.moved_in[g] + rc.received_total() + out.moved_back[g];
    out.sent[g] += rc.sent[0] + rc.sent[1] + rc.sent[2];
    out.flops[g] = rc.flops;
    // The staging vector serves both stages and lives through the run.
    out.peak_bytes[g] = rc.peak_bytes() + std::size_t(std::max(staging_in[g], staging_back[g])) * std::size_t(elem);
    out.max_received = std::max(out.max_received, out.received[g]);
    out.mean_received += double(out.received[g]) / double(P);
    out.max_peak_bytes = std::max(out.max_peak_bytes, out.peak_bytes[g]);
    out.seconds = std::max(out.seconds, out.flops[g] / F + double(std::max(out.received[g], out.sent[g])) * elem / B);
  }
  return out;
}

// PBLAS's p?syrk_ (and p?herk_) picks by its estimates: A only communicated (each process
// gets the rows of op(A) of its C rows and the columns of op(A)^T of its C columns), or A
// and C (op(A) stays, partial C is combined), the latter when 1.3 x its estimate is below.
// Received per process: A: (n / pr) k (1 - 1 / pc) + (n / pc) k (1 - 1 / pr); AC with
// 'N': (k / pc) n (1 - 1 / pr) for A's panels and (n / pr) (n / 2) (1 - 1 / pc) for the
// triangle's partials ('T' with pr and pc swapped).
double scalapack_rank_k_elements(const problem& p, const caller_layout& L) {
  const double n = double(p.n), k = double(p.k), pr = L.nprow, pc = L.npcol;
  const bool notran = p.transa == 'N';
  const double cr = n / pr, cc = n / pc;  // C rows / columns per process (DNROC)
  double ac_est = 0, a_est = 0;
  if (notran) {
    ac_est = n * ((pr == 1 ? 0 : k / pc) + (pc == 1 ? 0 : 2 * cr / 2));
    a_est = k * ((pc == 1 ? 0 : cr) + (pr == 1 ? 0 : cc) + std::max(cc, n / pr));
  } else {
    ac_est = n * ((pc == 1 ? 0 : k / pr) + (pr == 1 ? 0 : 2 * cc / 2));
    a_est = k * ((pr == 1 ? 0 : cc) + (pc == 1 ? 0 : cr) + std::max(cr, n / pc));
  }
  if (1.3 * ac_est <= a_est) {
    if (notran) return k / pc * n * (1 - 1 / pr) + cr * (n / 2) * (1 - 1 / pc);
    return k / pr * n * (1 - 1 / pc) + cc * (n / 2) * (1 - 1 / pr);
  }
  return cr * k * (1 - 1 / pc) + cc * k * (1 - 1 / pr);
}

double scalapack_rank_k_seconds(const problem& p, const caller_layout& L, double F, double B) {
  // The busiest process computes its share of the square's blocks that touch the
  // triangle: at most its C rows x columns, about half of them (e.g. 1000 in blocks of 128
  // on 2 x 2: 512 x 512 of 1000^2, so 0.26 of the triangle's flops, not 0.25).
  const operand_layout& lc = L.op[int(operand::c)];
  const double n = double(p.n);
  const double share = n > 0 ? double(lc.rows.max_owned()) * double(lc.cols.max_owned()) / (n * n) : 0;
  return p.flops() * share / F + scalapack_rank_k_elements(p, L) * double(element_size(p.type)) / B;
}

rank_k_layout_choice plan_rank_k_for_layout(const problem& p, const caller_layout& L, const context& ctx0) {
  context ctx = ctx0;
  ctx.set_ranks(L.procs());
  rank_k_layout_choice out{choose_rank_k_ranks(p, ctx), {}, {}, 0, 0, 0};
  const rank_k_model m(p, out.why.chosen);
  bool first = true;
  for (bool grouped : {false, true})
    for (bool column_major : {false, true}) {
      const rank_k_fit f{grouped, column_major};
      rank_k_cyclic_cost c = cost_rank_k_cyclic(m, L, f, ctx.rank_flops(), ctx.rank_bandwidth());
      if (first || c.seconds < out.cost.seconds) out.fit = f, out.cost = std::move(c), first = false;
    }
  out.native_max_received = m.max_received();
  out.scalapack_elements = scalapack_rank_k_elements(p, L);
  out.scalapack_seconds = scalapack_rank_k_seconds(p, L, ctx.rank_flops(), ctx.rank_bandwidth());
  return out;
}

}  // namespace prism::ranks
