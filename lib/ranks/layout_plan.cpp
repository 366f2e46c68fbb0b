// lib/ranks/layout_plan.cpp — see layout_plan.hpp.
#include "layout_plan.hpp"

#include "ownership.hpp"
#include "rank_planner.hpp"

#include <prism/rank_model.hpp>

#include <algorithm>
#include <sstream>
#include <tuple>

namespace prism::ranks {

namespace {

constexpr std::int64_t max_runs = 1 << 16;  // a grouped view counted run by run stays cheap

// The two operands spanning each dimension: m (A, C), n (B, C), k (A, B).
operand spanner(int d, view_spec s) {
  if (d == 0) return s == 1 ? operand::a : operand::c;
  if (d == 1) return s == 1 ? operand::b : operand::c;
  return s == 1 ? operand::a : operand::b;
}

// The distribution of dimension d (0 m, 1 n, 2 k) that spec s groups by (s = 1 or 2): that
// of its spanner(d, s) along d.
const cyclic_dim& grouping(const caller_layout& L, const problem& p, int d, view_spec s) {
  const operand o = spanner(d, s);
  return dim_of(p, o, false) == d ? L.op[int(o)].rows : L.op[int(o)].cols;
}

// The views worth trying for dimension d: the identity, and each grouping that differs
// from the identity and from the other one, and stays cheap to count.
std::vector<view_spec> options(const caller_layout& L, const problem& p, int d) {
  std::vector<view_spec> out{0};
  for (view_spec s : {1, 2}) {
    const cyclic_dim& g = grouping(L, p, d, s);
    if (g.procs == 1 || g.n == 0) continue;
    if (s == 2 && grouping(L, p, d, 1).procs > 1 && grouping(L, p, d, 1).same_owners(g)) continue;
    bool cheap = true;
    for (view_spec t : {1, 2})
      if (!grouping(L, p, d, t).same_owners(g) && g.n / g.block > max_runs) cheap = false;
    if (cheap) out.push_back(s);
  }
  return out;
}

}  // namespace

int dim_of(const problem& p, operand o, bool cols) {
  switch (o) {
    case operand::a: return (p.transa == 'N') != cols ? 0 : 2;  // N: rows m, cols k
    case operand::b: return (p.transb == 'N') != cols ? 2 : 1;  // N: rows k, cols n
    default: return cols ? 1 : 0;
  }
}

dim_view make_view(const caller_layout& L, const problem& p, int d, view_spec s) {
  return s == 0 ? dim_view::identity(extent(dim(d), p.m, p.n, p.k)) : dim_view::grouped(grouping(L, p, d, s));
}

int process_of(const layout_fit& f, const caller_layout& L, int r) {
  // Column-major: plan ranks 0, 1, 2, 3 on a 2 x 2 grid go to processes (0,0) (1,0) (0,1)
  // (1,1), i.e. g = 0, 2, 1, 3.
  return f.column_major ? (r % L.nprow) * L.npcol + r / L.nprow : r;
}

std::string layout_fit::describe() const {
  static const char* const by[3][3] = {{"as is", "by A", "by C rows"}, {"as is", "by B", "by C columns"}, {"as is", "by A", "by B"}};
  std::ostringstream os;
  for (int d = 0; d < 3; ++d) os << (d ? ", " : "") << to_string(dim(d)) << ' ' << by[d][views[d]];
  os << "; plan ranks " << (column_major ? "column-major" : "row-major");
  return os.str();
}

void cost_fit(const schedule& model, const caller_layout& L, double F, double B, layout_fit& f) {
  const problem& p = model.product();
  const std::size_t P = std::size_t(L.procs());
  f.received.assign(P, 0);
  f.sent.assign(P, 0);
  std::vector<double> flops(P, 0);  // per process: real flops
  // The exchange rule itself (ownership.hpp), as the executor runs it: every process's
  // volume per phase, and the buffers it allocates for them.
  const std::int64_t no_lld[3] = {1, 1, 1};  // counting reads no local offsets
  const cyclic_ownership own(model, L, f, no_lld);
  std::vector<buffer_plan> buffers(P);
  std::vector<std::size_t> workspace(P, 0);
  std::vector<task> ts;
  for (int q = 0; q < model.phases(); ++q) {
    const std::vector<phase_volume> v = phase_volumes(own, q);
    for (std::size_t g = 0; g < P; ++g) {
      f.received[g] += v[g].received[0] + v[g].received[1] + v[g].received[2];
      f.sent[g] += v[g].sent[0] + v[g].sent[1] + v[g].sent[2];
      buffers[g].add(v[g]);
    }
    for (int r = 0; r < model.ranks(); ++r) {
      const std::size_t g = std::size_t(own.process_of(r));
      ts.clear();
      model.tasks(q, r, ts);
      for (const task& t : ts) flops[g] += task_flops(t, p.type), workspace[g] = std::max(workspace[g], t.workspace);
    }
  }
  const double elem = double(element_size(p.type));
  f.max_received = 0, f.max_buffer = 0, f.peak_bytes = 0, f.seconds = 0;
  double sum = 0;
  for (std::size_t g = 0; g < P; ++g) {
    f.max_received = std::max(f.max_received, f.received[g]);
    f.max_buffer = std::max(f.max_buffer, buffers[g].total());
    f.peak_bytes = std::max(f.peak_bytes, std::size_t(buffers[g].total()) * element_size(p.type) + workspace[g]);
    sum += double(f.received[g]);
    // A link carries B each way: a process's exchange takes as long as the larger of what
    // it receives and what it sends (a process holding all of A and B must send the others
    // their share however little each receives).
    const double words = double(std::max(f.received[g], f.sent[g]));
    f.seconds = std::max(f.seconds, flops[g] / F + words * elem / B);
  }
  f.mean_received = sum / double(P);
}

layout_fit fit_plan(const schedule& model, const caller_layout& L, double F, double B) {
  const problem& p = model.product();
  layout_fit best;
  bool have = false;
  const bool rank_k = p.op != operation::gemm;  // n keeps its order: C's triangle stays its own
  const std::vector<view_spec> om = rank_k ? std::vector<view_spec>{0} : options(L, p, 0);
  const std::vector<view_spec> on = rank_k ? std::vector<view_spec>{0} : options(L, p, 1), ok = options(L, p, 2);
  // Least modelled time first, then least busiest and least mean receipt.
  const auto key = [](const layout_fit& f) { return std::tuple(f.seconds, f.max_received, f.mean_received); };
  for (bool cm : {false, true}) {
    if (cm && (L.nprow == 1 || L.npcol == 1)) continue;  // the same map
    for (view_spec a : om)
      for (view_spec b : on)
        for (view_spec c : ok) {
          layout_fit f;
          f.views[0] = a, f.views[1] = b, f.views[2] = c, f.column_major = cm;
          cost_fit(model, L, F, B, f);
          if (!have || key(f) < key(best)) best = std::move(f), have = true;
        }
  }
  return best;
}

namespace {

// The k-aligned panel case of a Gram product (A^T B with both k extents distributed alike
// along one grid axis, A's m and B's n each held by one process across the other): PBLAS
// multiplies where the panels lie and sums the partial C over the k axis. Sets `elements`
// to the busiest process's receipt and `share` to its part of the flops; false when the
// layout is not of that kind.
// Example: 32 x 32 x 4e6, A and B 4e6 x 32 in blocks of 32 on a 4 x 1 grid: every process
// multiplies its quarter of k and C's holder receives 3 partial 32 x 32 blocks (3072 elements,
// 24.6 kB, as measured); on 1 x 4 one process holds all and receives nothing.
bool k_aligned_panels(const problem& p, const caller_layout& L, double& elements, double& share) {
  const bool a_rows = p.transa != 'N', b_rows = p.transb == 'N';  // k runs along stored rows
  if (a_rows != b_rows) return false;
  const cyclic_dim &ka = grouping(L, p, 2, 1), &kb = grouping(L, p, 2, 2);  // k along A, B
  const cyclic_dim &ma = grouping(L, p, 0, 1), &nb = grouping(L, p, 1, 1);  // m along A, n along B
  if (!ka.same_owners(kb) || ma.max_owned() != ma.n || nb.max_owned() != nb.n) return false;
  int holders = 0;  // processes along the k axis that own some k
  for (int q = 0; q < ka.procs; ++q) holders += ka.owned_before(q, ka.n) > 0;
  const double m = double(p.m), n = double(p.n), kmax = double(ka.max_owned());
  // The partial C of every other k holder reaches C's holder; when A's and B's panels lie
  // on different processes across the axis, B's panel moves to A's first.
  elements = double(std::max(holders - 1, 0)) * m * n + (ma.owner(0) != nb.owner(0) ? kmax * n : 0);
  share = p.k > 0 ? kmax / double(p.k) : 0;
  return true;
}

}  // namespace

double scalapack_elements(const problem& p, const caller_layout& L) {
  double elements = 0, share = 0;
  if (k_aligned_panels(p, L, elements, share)) return elements;
  const double m = double(p.m), n = double(p.n), k = double(p.k), pr = L.nprow, pc = L.npcol;
  // PBLAS's own choice (pdgemm_.c, its estimates for A, B not transposed, CBRATIO 2):
  // AB keeps C in place, AC keeps B, BC keeps A; AB unless another is 1.3 x cheaper.
  const double ab_est = k * ((pc == 1 ? 0 : m / pr) + (pr == 1 ? 0 : n / pc));
  const double ac_est = m * ((pc == 1 ? 0 : k / pr) + std::max(k / pr, k / pc) + 2 * (pr == 1 ? 0 : n / pc));
  const double bc_est = n * (2 * (pc == 1 ? 0 : m / pr) + (pr == 1 ? 0 : k / pc) + std::max(k / pc, k / pr));
  const bool ab = ab_est <= 1.3 * bc_est && ab_est <= 1.3 * ac_est;
  const bool bc = !ab && bc_est <= ac_est && 1.3 * bc_est <= ab_est;
  // Per process received: AB: its rows of A and columns of B, less what it holds; AC: its
  // k-rows' share of A, and partial C reduced along process columns; BC likewise.
  if (ab) return m / pr * k * (1 - 1 / pc) + k * n / pc * (1 - 1 / pr);
  if (bc) return k / pc * n * (1 - 1 / pr) + m / pr * n * (1 - 1 / pc);
  return m * k / pr * (1 - 1 / pc) + m * n / pc * (1 - 1 / pr);
}

namespace {

// Trees shaped like the caller's grid, whichever edges they cut (m x n is SUMMA's layout;
// m x k or k x n keep A or B in place), and the 1-D ones over all processes and over one
// grid axis (a Gram product whose k panels lie down one process column is cut only there).
// Each cut comes evenly split and, where a distribution along its edge has as many
// processes as parts, split at that distribution's group boundaries (so the boxes are
// exactly the processes' own rows or columns).
std::vector<rank_grid> grid_seeds(const problem& p, const caller_layout& L) {
  std::vector<rank_grid> seeds;
  const dim dims[3] = {dim::m, dim::n, dim::k};
  auto cuts = [&](dim d, int parts) {
    std::vector<rank_cut> out{{d, parts, {}}};
    for (view_spec s : {1, 2}) {
      const cyclic_dim& g = grouping(L, p, int(d), s);
      if (g.procs != parts || parts == 1) continue;
      rank_cut c{d, parts, {}};
      for (int q = 0; q < parts; ++q) c.sizes.push_back(g.owned_before(q, g.n));
      if (std::find_if(out.begin(), out.end(), [&](const rank_cut& x) { return x.sizes == c.sizes; }) == out.end())
        out.push_back(std::move(c));
    }
    return out;
  };
  for (auto [a, b] : {std::pair{L.nprow, L.npcol}, std::pair{L.npcol, L.nprow}})
    for (dim d1 : dims)
      for (dim d2 : dims)
        if (d1 != d2 && a > 1 && b > 1)
          for (const rank_cut& c1 : cuts(d1, a))
            for (const rank_cut& c2 : cuts(d2, b)) seeds.push_back({c1, c2});
  for (int parts : {L.procs(), L.nprow, L.npcol})
    if (parts > 1 && (parts != L.npcol || L.npcol != L.nprow))  // 2 x 2: nprow's cuts serve npcol too
      for (dim d : dims)
        for (const rank_cut& c : cuts(d, parts)) seeds.push_back({c});
  return seeds;
}

// The gemm plan whose fit to L models fastest: the rank planner's trees and the grid's
// seeds, each scored by its cost under the layout.
void choose_gemm(const problem& p, const caller_layout& L, const context& ctx, layout_choice& out) {
  const double F = ctx.rank_flops(), B = ctx.rank_bandwidth();
  const std::size_t memory = rank_memory(ctx);
  const rank_choice why = choose_ranks_scored(
      p, ctx,
      [&](const schedule& model, rank_candidate& c) {
        const layout_fit f = fit_plan(model, L, F, B);
        c.max_received = f.max_received;
        c.seconds = f.seconds;
        // What must fit is the copies under this layout (blocks wholly a process's own are
        // used in place), not the native layout's blocks: one process holding all of A and B
        // runs a one-rank plan with no copy at all.
        c.peak_bytes = f.peak_bytes;
        c.fits = c.peak_bytes <= memory;
      },
      grid_seeds(p, L));
  std::ostringstream report;
  print_rank_report(report, why);
  out.text = why.chosen.to_string(), out.report = report.str();
  out.model = gemm_schedule(why.chosen);
}

// ScaLAPACK's busiest process computes the product for the largest C block any process
// holds (e.g. 1000^2 in blocks of 128 on 2 x 2: 512 x 512 of 1000 x 1000, 1.05 x the mean);
// the k-aligned panels of a Gram product split the flops by k instead.
double scalapack_seconds(const problem& p, const caller_layout& L, double elements, double F, double B) {
  const operand_layout& lc = L.op[int(operand::c)];
  double share = p.m > 0 && p.n > 0 ? double(lc.rows.max_owned()) * double(lc.cols.max_owned()) / (double(p.m) * double(p.n)) : 0;
  double panel_elements = 0, panel_share = 0;
  if (p.op == operation::gemm && k_aligned_panels(p, L, panel_elements, panel_share)) share = panel_share;
  return p.flops() * share / F + elements * double(element_size(p.type)) / B;
}

}  // namespace

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

layout_choice plan_for_layout(const problem& p, const caller_layout& L, const context& ctx0) {
  context ctx = ctx0;
  ctx.set_ranks(L.procs());
  const double F = ctx.rank_flops(), B = ctx.rank_bandwidth();
  layout_choice out;
  const bool rank_k = p.op != operation::gemm;
  if (rank_k) {
    const rank_k_choice why = choose_rank_k_ranks(p, ctx);
    std::ostringstream report;
    print_rank_k_report(report, why);
    out.text = why.chosen.to_string(), out.report = report.str();
    out.model = rank_k_schedule(p, why.chosen);
  } else {
    choose_gemm(p, L, ctx, out);
  }
  out.fit = fit_plan(*out.model, L, F, B);
  out.scalapack_elements = rank_k ? scalapack_rank_k_elements(p, L) : scalapack_elements(p, L);
  out.scalapack_seconds = scalapack_seconds(p, L, out.scalapack_elements, F, B);
  return out;
}

std::shared_ptr<const schedule> schedule_of_text(const problem& p, const std::string& text) {
  if (p.op == operation::gemm) return gemm_schedule(plan::parse(text));
  return rank_k_schedule(p, rank_k_scheme::parse(text));
}

}  // namespace prism::ranks
