// lib/scalapack/psyrk.cpp — libprism_scalapack.so: pssyrk_ pdsyrk_ pcsyrk_ pzsyrk_ pcherk_
// pzherk_ with PBLAS's ABI (UPLO TRANS N K ALPHA A IA JA DESCA BETA C IC JC DESCC), run on
// prism's rank-k scheme (prism/rank_k_model.hpp) or forwarded to the real ScaLAPACK
// (docs/distributed.md "Behind ScaLAPACK's p?syrk_ and p?herk_").
//
// One call, on every process of the BLACS grid:
//  1. Arguments are checked as reference PBLAS checks them (pdsyrk_.c: UPLO -1, TRANS -2,
//     then PB_Cchkmat on sub(A), descriptor argument 9, and sub(C), argument 14), reported
//     through PB_Cabort and agreed over the grid as p?gemm_'s are (pblas.hpp,
//     stop_after_checks): C untouched, nobody waits.
//  2. n = 0, or (alpha = 0 or k = 0) with beta = 1, returns; alpha = 0 or k = 0 scales the
//     triangle (beta = 0: zeros, C unread; herk: the diagonal made real).
//  3. Route as p?gemm_ (PRISM_SCALAPACK_ROUTE of grid rank 0): prism when the scheme's
//     modelled time on this layout is below ScaLAPACK's (route_margin) and the call has
//     route_min_flops; grid rank 0 plans (choose_rank_k_ranks over the grid's processes,
//     then the fit of least modelled time: k as is or grouped, ranks row- or column-major)
//     and broadcasts scheme and fit, cached per call signature.
//  4. prism, in three stages counted exactly by lib/ranks/rank_k_cyclic.hpp: (in) every
//     element of sub(A) goes from its block-cyclic holder to the plan rank whose native
//     piece holds it (on the fit's process); (run) the rank-k executor
//     (lib/mpi/rank_k_exchange) computes alpha op(A) op(A)^T (^H) into native C pieces
//     with beta = 0; (back) every element of the triangle goes to its block-cyclic holder,
//     which sets C = beta C + it (beta = 0: C unread), so beta is applied once, and only
//     the uplo triangle of sub(C) is written.
// PRISM_STATS=1: grid rank 0 prints one line per call: the route and why; for prism the
// measured and predicted bytes received (max and mean, MB; and the max in bytes), whether
// every process received exactly its prediction (exact=yes), the scheme's own volume in
// prism's native layout (rank_k_max_MB), the largest redistribution (in + back) of any
// process, ScaLAPACK's modelled volume, and the measured and predicted memory.
#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/rank_k_model.hpp>

#include "../mpi/comm.hpp"
#include "../mpi/rank_k_exchange.hpp"
#include "../ranks/rank_k_cyclic.hpp"
#include "../runtime/lru_cache.hpp"
#include "../runtime/runtime.hpp"
#include "pblas.hpp"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace prism::scalapack {

namespace {

using namespace prism::ranks;
using mpi::check_mpi;
using mpi::imag_bits;
using mpi::real_bits;

template <class T>
constexpr bool complex_v = std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>;

template <class T>
struct real_of {
  using type = T;
};
template <class R>
struct real_of<std::complex<R>> {
  using type = R;
};

// PSSYRK .. PZHERK: the letter of the type, then SYRK or HERK.
template <scalar T>
std::string routine_name(operation op) {
  const char t = std::same_as<T, float> ? 'S' : std::same_as<T, double> ? 'D' : std::same_as<T, std::complex<float>> ? 'C' : 'Z';
  return std::string("P") + t + (op == operation::herk ? "HERK" : "SYRK");
}

// "pdsyrk_" from "PDSYRK".
std::string symbol_of(const std::string& routine) {
  std::string s;
  for (char c : routine) s += char(std::tolower(static_cast<unsigned char>(c)));
  return s + "_";
}

// The real p?syrk_ / p?herk_ (PBLAS's C entry: 14 pointers and two string lengths).
using prk_fn = void (*)(const char*, const char*, const int*, const int*, const void*, const void*, const int*,
                        const int*, const int*, const void*, void*, const int*, const int*, const int*, std::size_t,
                        std::size_t);

// Calls the real routine with the caller's own 14 arguments.
void call_real(prk_fn real, const void* const* raw) {
  auto i = [&](int n) { return static_cast<const int*>(raw[n]); };
  real(static_cast<const char*>(raw[0]), static_cast<const char*>(raw[1]), i(2), i(3), raw[4], raw[5], i(6), i(7), i(8),
       raw[9], const_cast<void*>(raw[10]), i(11), i(12), i(13), 1, 1);
}

struct rk_args {
  operation op;
  char uplo, trans;            // upper case; a real syrk's 'C' kept as given (checks), 'T' in the problem
  int n, k;
  int ia, ja, ic, jc;          // 0-based
  descriptor da, dc;
};

// sub(A) as stored (n x k for 'N', else k x n) in op[0] (and op[1], unused), sub(C) in op[2].
caller_layout layout_of(const rk_args& a, const grid& g) {
  caller_layout L;
  L.nprow = g.nprow, L.npcol = g.npcol;
  auto op = [&](const descriptor& D, std::int64_t rows, std::int64_t cols, int i, int j) {
    const int* d = D.e;
    return operand_layout{cyclic_dim{rows, i, d[IMB_], d[MB_], d[RSRC_], g.nprow},
                          cyclic_dim{cols, j, d[INB_], d[NB_], d[CSRC_], g.npcol}};
  };
  const bool na = a.trans == 'N';
  L.op[0] = op(a.da, na ? a.n : a.k, na ? a.k : a.n, a.ia, a.ja);
  L.op[1] = L.op[0];
  L.op[2] = op(a.dc, a.n, a.n, a.ic, a.jc);
  return L;
}

template <scalar T>
problem problem_of(const rk_args& a) {
  return rank_k_problem(scalar_type_of<T>(), a.op, a.uplo, a.trans == 'C' && a.op == operation::syrk ? 'T' : a.trans, a.n, a.k);
}

// A scheme fitted to one call signature, as every grid process holds it.
struct prepared {
  bool use_prism = false;
  std::string reason;
  std::unique_ptr<rank_k_model> model;
  rank_k_fit fit;
  dim_view k;                    // the order of k under the fit
  std::vector<int> process;      // of each plan rank
  int my_rank = -1;              // this process's plan rank (-1: none)
  MPI_Comm comm = MPI_COMM_NULL;  // the grid's processes in plan-rank order
  rank_k_cyclic_cost cost;
  double scalapack_mb = 0, native_mb = 0;
  std::vector<std::vector<rank_k_span>> a_spans, c_spans;  // per plan rank
};

// The verdict grid rank 0 broadcasts (`head`): whether prism runs the call, the fit, and
// the lengths of the scheme's and the reason's texts, which follow it as one string.
enum verdict_slot { use_prism_slot, k_grouped_slot, column_major_slot, scheme_length_slot, reason_length_slot, verdict_slots };

// Grid rank 0's verdict: whether prism runs it, its scheme (as text, `scheme`) and fit, in
// `head`; returns the reason.
std::string decide(const problem& pr, const caller_layout& L, route chosen, bool have_backend, const context& ctx,
                   std::int64_t (&head)[verdict_slots], std::string& scheme) {
  for (int o : {0, 2})
    if (L.op[o].rows.src < 0 || L.op[o].cols.src < 0) return "a replicated operand (RSRC or CSRC = -1)";
  if (chosen == route::backend) return "PRISM_SCALAPACK_ROUTE=backend";
  try {
    const rank_k_layout_choice c = plan_rank_k_for_layout(pr, L, ctx);
    scheme = c.why.chosen.to_string();
    head[k_grouped_slot] = c.fit.k_grouped, head[column_major_slot] = c.fit.column_major;
    std::ostringstream why;
    if (chosen == route::prism || !have_backend) {
      head[use_prism_slot] = 1;
      why << (chosen == route::prism ? "PRISM_SCALAPACK_ROUTE=prism" : "no backend routine");
    } else if (pr.flops() < route_min_flops) {
      why << "small: " << pr.flops() << " flops < " << route_min_flops;
    } else if (!(c.cost.seconds < route_margin * c.scalapack_seconds)) {
      why << "modelled " << c.cost.seconds << " s is not below " << route_margin << " x ScaLAPACK's " << c.scalapack_seconds << " s";
    } else {
      head[use_prism_slot] = 1;
      why << "modelled " << c.cost.seconds << " s < " << route_margin << " x ScaLAPACK's " << c.scalapack_seconds << " s";
    }
    return why.str();
  } catch (const plan_error& e) {
    return std::string("no scheme: ") + e.what();
  }
}

// The grid's processes ordered by plan rank (the rank-k executor's rank r is plan rank r),
// made once per grid (collective): the grid's own communicator when row-major; column-
// major, process (prow, pcol) is rank pcol * nprow + prow (2 x 3: process 1 = (0, 1) is
// rank 2), whatever ranks the scheme uses.
MPI_Comm plan_comm(const grid& g, bool column_major) {
  if (!column_major) return g.comm;
  static std::map<MPI_Comm, MPI_Comm> made;
  if (auto it = made.find(g.comm); it != made.end()) return it->second;
  MPI_Comm c = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(g.comm, 0, (g.me % g.npcol) * g.nprow + g.me / g.npcol, &c), "MPI_Comm_split");
  return made.emplace(g.comm, c).first->second;
}

template <scalar T>
std::shared_ptr<prepared> prepare(const rk_args& a, const grid& g, route chosen, bool have_backend, const context& ctx) {
  constexpr std::size_t plan_cache_size = 64;
  static prism::detail::lru_cache<std::string, std::shared_ptr<prepared>> cache(plan_cache_size);
  const problem pr = problem_of<T>(a);
  const caller_layout L = layout_of(a, g);
  std::ostringstream key;
  key << char(pr.type) << int(a.op) << pr.uplo << pr.transa << ' ' << a.n << ' ' << a.k << ' ' << g.comm << ' '
      << int(chosen) << have_backend << ' ' << ctx.describe();
  for (int o : {0, 2})
    for (const cyclic_dim* d : {&L.op[o].rows, &L.op[o].cols}) key << ' ' << d->offset << ':' << d->first << ':' << d->block << ':' << d->src;
  if (auto* hit = cache.find(key.str())) return *hit;

  std::int64_t head[verdict_slots] = {};
  std::string reason, scheme;
  if (g.me == 0) {
    reason = decide(pr, L, chosen, have_backend, ctx, head, scheme);
    head[scheme_length_slot] = std::int64_t(scheme.size()), head[reason_length_slot] = std::int64_t(reason.size());
    reason = scheme + reason;
  }
  mpi::control_bcast(head, verdict_slots, MPI_INT64_T, 0, g.comm);
  reason.resize(std::size_t(head[scheme_length_slot] + head[reason_length_slot]));
  mpi::control_bcast(reason.data(), int(reason.size()), MPI_CHAR, 0, g.comm);
  scheme = reason.substr(0, std::size_t(head[scheme_length_slot]));
  reason.erase(0, std::size_t(head[scheme_length_slot]));
  auto out = std::make_shared<prepared>();
  out->use_prism = head[use_prism_slot] != 0;
  out->reason = reason;
  if (out->use_prism) {
    out->model = std::make_unique<rank_k_model>(pr, rank_k_scheme::parse(scheme));
    out->fit = rank_k_fit{head[k_grouped_slot] != 0, head[column_major_slot] != 0};
    out->k = rank_k_view(out->fit, L, pr);
    for (int r = 0; r < out->model->ranks(); ++r) {
      out->process.push_back(rank_k_process(out->fit, L, r));
      if (out->process.back() == g.me) out->my_rank = r;
    }
    out->comm = plan_comm(g, out->fit.column_major);
    out->cost = cost_rank_k_cyclic(*out->model, L, out->fit, ctx.rank_flops(), ctx.rank_bandwidth());
    const double elem = double(element_size(pr.type));
    out->native_mb = double(out->model->max_received()) * elem / 1e6;
    out->scalapack_mb = scalapack_rank_k_elements(pr, L) * elem / 1e6;
    for (int r = 0; r < out->model->ranks(); ++r) {
      out->a_spans.push_back(rank_k_spans(*out->model, operand::a, r));
      out->c_spans.push_back(rank_k_spans(*out->model, operand::c, r));
    }
  }
  if (g.me == 0 && verbose_on())
    std::fprintf(stderr, "prism-scalapack: %s %c%c n=%d k=%d on a %dx%d grid: route %s (%s)%s%s%s%s\n", routine_name<T>(a.op).c_str(),
                 a.uplo, a.trans, a.n, a.k, g.nprow, g.npcol, out->use_prism ? "prism" : "backend", reason.c_str(),
                 out->use_prism ? " scheme " : "", out->use_prism ? out->model->scheme().to_string().c_str() : "",
                 out->use_prism ? "; " : "", out->use_prism ? out->fit.describe(pr).c_str() : "");
  cache.put(key.str(), out);
  return out;
}

// Calls f(native, local, len, holder, i, j) for the runs of plan rank r's pieces of
// operand o (in its storage order) split by block-cyclic holder: native elements [native,
// native + len) are sub(X) rows i .. i + len - 1 of column j, at local index `local`
// (column-major, ld lld) of grid process `holder`; A's k positions are read through the
// fit's view. E.g. a 5-row span column over row blocks of 3 from row 1: rows 1-2 on
// process row 0, rows 3-5 on process row 1: two calls.
template <class F>
void walk(const prepared& prep, operand o, int r, const caller_layout& L, std::int64_t lld, F&& f) {
  const operand_layout& ol = L.op[int(o)];
  std::int64_t base = 0;
  auto run = [&](std::int64_t i, std::int64_t j, std::int64_t len, std::int64_t at) {
    const int pc = ol.cols.owner(j);
    const std::int64_t lc = ol.cols.local(j) * lld;
    ol.rows.segments(i, i + len, [&](std::int64_t ii, std::int64_t l, int pr, std::int64_t lr) {
      f(base + at + (ii - i), lr + lc, l, pr * L.npcol + pc, ii, j);
    });
  };
  const bool n_trans = prep.model->source().transa == 'N';
  for (const rank_k_span& s : (o == operand::a ? prep.a_spans : prep.c_spans)[std::size_t(r)]) {
    if (o == operand::a) for_each_a_run(s, n_trans, prep.k, run);
    else for_each_run(s, run);
    base += s.count;
  }
}

// One stage's messages on this process: per peer process, elements to send and receive.
struct stage_counts {
  std::vector<std::int64_t> out, in;
  std::int64_t total() const {
    std::int64_t t = 0;
    for (std::size_t p = 0; p < out.size(); ++p) t += out[p] + in[p];
    return t;
  }
};

// A stage's counts on process me. Stage in (o = A): I send each plan rank's process my
// elements of its pieces and receive the others' elements of mine; stage back (o = C):
// the other way round.
stage_counts count_stage(const prepared& prep, operand o, const caller_layout& L, std::int64_t lld, int me, int P) {
  stage_counts s{std::vector<std::int64_t>(std::size_t(P), 0), std::vector<std::int64_t>(std::size_t(P), 0)};
  std::vector<std::int64_t>& theirs = o == operand::a ? s.out : s.in;  // with other plan ranks' processes
  std::vector<std::int64_t>& mine = o == operand::a ? s.in : s.out;    // with the holders of my pieces
  for (int r = 0; r < prep.model->ranks(); ++r) {
    const int q = prep.process[std::size_t(r)];
    if (q == me) continue;
    walk(prep, o, r, L, lld, [&](std::int64_t, std::int64_t, std::int64_t len, int h, std::int64_t, std::int64_t) {
      if (h == me) theirs[std::size_t(q)] += len;
    });
  }
  if (prep.my_rank >= 0)
    walk(prep, o, prep.my_rank, L, lld, [&](std::int64_t, std::int64_t, std::int64_t len, int h, std::int64_t, std::int64_t) {
      if (h != me) mine[std::size_t(h)] += len;
    });
  return s;
}

// Offsets of each peer's part in a staging buffer: sends first, then receives.
std::vector<std::int64_t> offsets(const stage_counts& s) {
  std::vector<std::int64_t> at(2 * s.out.size() + 1, 0);
  for (std::size_t p = 0; p < s.out.size(); ++p) at[p + 1] = at[p] + s.out[p];
  for (std::size_t p = 0; p < s.in.size(); ++p) at[s.out.size() + p + 1] = at[s.out.size() + p] + s.in[p];
  return at;
}

// The tags of stages in and back (the rank-k executor's own messages use theirs).
constexpr int tag_in = 0x5e1, tag_back = 0x5e2;

// Posts and completes one stage's messages (staging laid out by offsets(s)).
template <scalar T>
void exchange(const grid& g, T* stage, const stage_counts& s, int tag, mpi::exchange_counts& counts) {
  const int P = g.size;
  const std::vector<std::int64_t> at = offsets(s);
  mpi::message_engine<T> engine(g.comm, counts);
  for (int p = 0; p < P; ++p) {
    if (s.in[std::size_t(p)] > 0) engine.post(true, stage + at[std::size_t(P + p)], s.in[std::size_t(p)], p, tag);
    if (s.out[std::size_t(p)] > 0) engine.post(false, stage + at[std::size_t(p)], s.out[std::size_t(p)], p, tag);
  }
  engine.complete();
}

// Stage in: my native A pieces from sub(A) (local array A, ld lld), straight or through
// messages. Example: plan rank 1's piece with rows held by processes 0 and 1: process 0
// packs its rows in rank 1's storage order, rank 1 unpacks them in the same order.
template <scalar T>
void move_in(const prepared& prep, const grid& g, const caller_layout& L, std::int64_t lld, const T* A, T* An,
             T* stage, const stage_counts& s, mpi::exchange_counts& counts) {
  const int me = g.me, P = g.size;
  const std::vector<std::int64_t> at = offsets(s);
  std::vector<std::int64_t> cur(at.begin(), at.end() - 1);
  for (int r = 0; r < prep.model->ranks(); ++r) {
    const std::size_t q = std::size_t(prep.process[std::size_t(r)]);
    if (int(q) == me) continue;
    walk(prep, operand::a, r, L, lld, [&](std::int64_t, std::int64_t loc, std::int64_t len, int h, std::int64_t, std::int64_t) {
      if (h == me) std::copy(A + loc, A + loc + len, stage + cur[q]), cur[q] += len;
    });
  }
  exchange(g, stage, s, tag_in, counts);
  if (prep.my_rank < 0) return;
  walk(prep, operand::a, prep.my_rank, L, lld, [&](std::int64_t nat, std::int64_t loc, std::int64_t len, int h, std::int64_t, std::int64_t) {
    if (h == me) std::copy(A + loc, A + loc + len, An + nat);
    else std::copy(stage + cur[std::size_t(P + h)], stage + cur[std::size_t(P + h)] + len, An + nat), cur[std::size_t(P + h)] += len;
  });
}

// C = beta C + x on len elements of rows i.. of column j (beta = 0: C unread; herk: the
// diagonal element, row == column, made real).
template <scalar T>
void combine(T* C, const T* x, std::int64_t len, T beta, bool herk, std::int64_t i, std::int64_t j) {
  for (std::int64_t t = 0; t < len; ++t) {
    T v = beta == T(0) ? x[t] : beta * C[t] + x[t];
    if constexpr (complex_v<T>)
      if (herk && i + t == j) v = T(v.real());
    C[t] = v;
  }
}

// Stage back: the native C pieces to their block-cyclic holders, each adding beta C.
template <scalar T>
void move_back(const prepared& prep, const grid& g, const caller_layout& L, std::int64_t lld, const T* Cn, T beta, T* C,
               T* stage, const stage_counts& s, mpi::exchange_counts& counts) {
  const int me = g.me, P = g.size;
  const bool herk = prep.model->source().op == operation::herk;
  const std::vector<std::int64_t> at = offsets(s);
  std::vector<std::int64_t> cur(at.begin(), at.end() - 1);
  if (prep.my_rank >= 0)
    walk(prep, operand::c, prep.my_rank, L, lld, [&](std::int64_t nat, std::int64_t loc, std::int64_t len, int h, std::int64_t i, std::int64_t j) {
      if (h == me) combine(C + loc, Cn + nat, len, beta, herk, i, j);
      else std::copy(Cn + nat, Cn + nat + len, stage + cur[std::size_t(h)]), cur[std::size_t(h)] += len;
    });
  exchange(g, stage, s, tag_back, counts);
  for (int r = 0; r < prep.model->ranks(); ++r) {
    const std::size_t q = std::size_t(prep.process[std::size_t(r)]);
    if (int(q) == me) continue;
    walk(prep, operand::c, r, L, lld, [&](std::int64_t, std::int64_t loc, std::int64_t len, int h, std::int64_t i, std::int64_t j) {
      if (h != me) return;
      combine(C + loc, stage + cur[P + q], len, beta, herk, i, j);
      cur[P + q] += len;
    });
  }
}

// What the prism route moved and allocated on this process.
struct run_result {
  mpi::exchange_counts counts;
  std::int64_t allocated = 0;
};

// The prism route (the file comment's step 4). Throws local_failure on every process when
// one process's buffers or local step failed.
template <scalar T>
run_result run_prism(const rk_args& a, const grid& g, const prepared& prep, T alpha, const T* A, T beta, T* C,
                     const context& ctx) {
  const caller_layout L = layout_of(a, g);
  const int me = g.me, P = g.size;
  const rank_k_model& m = *prep.model;
  const std::int64_t lda = a.da.e[LLD_], ldc = a.dc.e[LLD_];
  run_result out;
  std::vector<T> An, Cn, stage;
  std::string why;
  stage_counts in, back;
  try {
    in = count_stage(prep, operand::a, L, lda, me, P);
    back = count_stage(prep, operand::c, L, ldc, me, P);
    An.resize(std::size_t(m.local_size(operand::a, prep.my_rank)));
    Cn.resize(std::size_t(m.local_size(operand::c, prep.my_rank)));
    stage.resize(std::size_t(std::max(in.total(), back.total())));
  } catch (const std::exception& e) {
    why = std::string("its redistribution buffers: ") + e.what();
  }
  mpi::throw_if_failed(mpi::lowest_failed(g.comm, me, !why.empty()), me, why, true);
  out.allocated = std::int64_t((An.size() + Cn.size() + stage.size()) * sizeof(T));
  move_in<T>(prep, g, L, lda, A, An.data(), stage.data(), in, out.counts);
  // The executor's local products are planned for one rank: ctx's ranks are the grid's
  // (for the route model), and a local plan over them would fail.
  context local = ctx;
  local.set_ranks(1);
  mpi::run_rank_k<T>(m, prep.comm, alpha, An.data(), T(0), Cn.data(), local, arena, out.counts);
  move_back<T>(prep, g, L, ldc, Cn.data(), beta, C, stage.data(), back, out.counts);
  out.allocated += std::int64_t(out.counts.buffer_bytes);
  return out;
}

// beta times this process's elements of sub(C)'s uplo triangle (beta = 0: zeros, C unread;
// herk: the diagonal made real), the alpha = 0 or k = 0 case.
template <scalar T>
void scale_triangle(const rk_args& a, const grid& g, T beta, T* C) {
  const caller_layout L = layout_of(a, g);
  const operand_layout& o = L.op[2];
  const int myrow = g.me / g.npcol, mycol = g.me % g.npcol;
  const std::int64_t ld = a.dc.e[LLD_];
  for (std::int64_t j = 0; j < a.n; ++j) {
    if (o.cols.owner(j) != mycol) continue;
    const std::int64_t lc = o.cols.local(j) * ld, r0 = a.uplo == 'U' ? 0 : j, r1 = a.uplo == 'U' ? j + 1 : a.n;
    o.rows.segments(r0, r1, [&](std::int64_t i, std::int64_t len, int pr, std::int64_t lr) {
      if (pr != myrow) return;
      for (std::int64_t t = 0; t < len; ++t) {
        T& v = C[lc + lr + t];
        v = beta == T(0) ? T(0) : beta * v;
        if constexpr (complex_v<T>)
          if (a.op == operation::herk && i + t == j) v = T(v.real());
      }
    });
  }
}

// PRISM_STATS=1: one line per call on grid process 0 (the file comment says what it holds).
template <scalar T>
void print_stats(const rk_args& a, const grid& g, const prepared& prep, const run_result& res, const call_start& t0) {
  const std::string name = routine_name<T>(a.op);
  const double elem = double(sizeof(T));
  const std::int64_t predicted = prep.use_prism ? prep.cost.received[std::size_t(g.me)] * std::int64_t(sizeof(T)) : 0;
  const double mem_pred = prep.use_prism ? double(prep.cost.peak_bytes[std::size_t(g.me)]) : 0;
  const mpi::call_stats st =
      mpi::reduce_call_stats(g.comm, {double(res.counts.bytes_received), t0.seconds(), double(res.allocated),
                                      double(std::llabs(res.counts.bytes_received - predicted)), mem_pred}, t0.control);
  const std::vector<double>& mx = st.max;
  const std::vector<double>& sum = st.sum;
  if (g.me != 0) return;
  const int P = g.nprow * g.npcol;
  if (!prep.use_prism) {
    std::fprintf(stderr,
                 "prism-scalapack: route=backend routine=%s uplo=%c trans=%c n=%d k=%d grid=%dx%d control_min_bytes=%.0f "
                 "control_max_bytes=%.0f seconds=%.4f reason=\"%s\"\n",
                 name.c_str(), a.uplo, a.trans, a.n, a.k, g.nprow, g.npcol, st.control_min, st.control_max, mx[1],
                 prep.reason.c_str());
    return;
  }
  std::int64_t redistribution = 0;
  for (std::size_t p = 0; p < prep.cost.moved_in.size(); ++p)
    redistribution = std::max(redistribution, prep.cost.moved_in[p] + prep.cost.moved_back[p]);
  std::fprintf(stderr,
               "prism-scalapack: route=prism routine=%s uplo=%c trans=%c n=%d k=%d grid=%dx%d recv_max_MB=%.6g "
               "recv_mean_MB=%.6g pred_max_MB=%.6g pred_mean_MB=%.6g recv_max_bytes=%.0f pred_max_bytes=%lld exact=%s "
               "rank_k_max_MB=%.6g redistribution_max_MB=%.6g scalapack_model_MB=%.6g mem_max_MB=%.6g "
               "pred_mem_max_MB=%.6g recv_sum_bytes=%.0f control_min_bytes=%.0f control_max_bytes=%.0f seconds=%.4f "
               "scheme=\"%s\" fit=\"%s\" reason=\"%s\"\n",
               name.c_str(), a.uplo, a.trans, a.n, a.k, g.nprow, g.npcol, mx[0] / 1e6, sum[0] / P / 1e6,
               double(prep.cost.max_received) * elem / 1e6, prep.cost.mean_received * elem / 1e6, mx[0],
               (long long)(prep.cost.max_received * std::int64_t(sizeof(T))), mx[3] == 0 ? "yes" : "no", prep.native_mb,
               double(redistribution) * elem / 1e6, prep.scalapack_mb, mx[2] / 1e6, mx[4] / 1e6, sum[0], st.control_min,
               st.control_max, mx[1],
               prep.model->scheme().to_string().c_str(), prep.fit.describe(prep.model->source()).c_str(), prep.reason.c_str());
}

// Step 1: PBLAS's checks in pdsyrk_.c's order; returns INFO (0: fine).
int check(const rk_args& a, bool complex_type, int nprow, int npcol, int myrow, int mycol) {
  if (nprow == -1) return -(901 + CTXT_);
  int info = 0;
  const bool notran = a.trans == 'N';
  const bool trans_ok = notran || (a.op == operation::herk ? a.trans == 'C' : a.trans == 'T' || (!complex_type && a.trans == 'C'));
  if (a.uplo != 'U' && a.uplo != 'L') info = -1;
  else if (!trans_ok) info = -2;
  const int ctxt = a.da.e[CTXT_];
  if (notran) check_matrix(ctxt, nprow, npcol, myrow, mycol, a.n, 3, a.k, 4, a.ia, a.ja, a.da, 9, info);
  else check_matrix(ctxt, nprow, npcol, myrow, mycol, a.k, 4, a.n, 3, a.ia, a.ja, a.da, 9, info);
  check_matrix(ctxt, nprow, npcol, myrow, mycol, a.n, 3, a.n, 3, a.ic, a.jc, a.dc, 14, info);
  return info;
}

// The context of one call: the machine's, with the grid's ranks and a share of the threads.
context call_context(const grid& g) {
  context ctx = default_context();
  if (!threads_from_env())
    ctx.set_threads(std::max(1, int(std::thread::hardware_concurrency()) / std::max(1, g.ranks_per_node)));
  ctx.set_ranks(g.nprow * g.npcol).set_ranks_per_node(g.ranks_per_node);
  return ctx;
}

// Steps 3-4 once the arguments are agreed and the quick returns are past.
template <scalar T>
void route_and_run(void* self, const rk_args& a, const grid& g, route chosen, T alpha, const T* A, T beta, T* C,
                   const void* const* raw, const call_start& t0) {
  const std::string name = routine_name<T>(a.op);
  auto real = reinterpret_cast<prk_fn>(real_routine(symbol_of(name).c_str(), self));
  context ctx = call_context(g);
  const std::shared_ptr<prepared> prep = prepare<T>(a, g, chosen, real != nullptr, ctx);
  run_result res;
  if (!prep->use_prism && real == nullptr) {
    std::fprintf(stderr, "prism-scalapack: %s: prism cannot run this call (%s) and there is no ScaLAPACK %s to forward it to; ending the job (MPI_Abort)\n",
                 name.c_str(), prep->reason.c_str(), symbol_of(name).c_str());
    MPI_Abort(g.comm, 1);
  } else if (!prep->use_prism) {
    call_real(real, raw);
  } else {
    try {
      if (stats_on()) prism::detail::runtime_of(ctx).pool().trim();
      res = run_prism<T>(a, g, *prep, alpha, A, beta, C, ctx);
      res.allocated += std::int64_t(prism::detail::runtime_of(ctx).pool().snapshot().peak_on_loan);
    } catch (const mpi::local_failure& ex) {
      // Agreed by every process (none waits); the routine cannot return an error, so the
      // job ends as reference PBLAS ends it on an error. C is untouched if ex says so.
      if (ex.mine() || g.me == 0)
        std::fprintf(stderr, "prism-scalapack: %s failed on grid process %d: %s; ending the job (MPI_Abort)\n", name.c_str(), g.me, ex.what());
      std::fflush(stderr);
      MPI_Barrier(g.comm);
      MPI_Abort(g.comm, 1);
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "prism-scalapack: %s failed on grid process %d: %s; ending the job (MPI_Abort)\n", name.c_str(), g.me, ex.what());
      MPI_Abort(g.comm, 1);
    }
  }
  if (stats_on())
    print_stats<T>(a, g, *prep, res, t0);
}

// The entry (raw: the 14 argument pointers as the caller passed them, for the backend).
template <scalar T, operation OP>
void prk(void* self, const void* const* raw) {
  using S = std::conditional_t<OP == operation::herk, typename real_of<T>::type, T>;
  const call_start t0;
  auto ip = [&](int n) { return *static_cast<const int*>(raw[n]); };
  auto up = [&](int n) { return char(std::toupper(static_cast<unsigned char>(*static_cast<const char*>(raw[n])))); };
  const rk_args a{OP, up(0), up(1), ip(2), ip(3), ip(6) - 1, ip(7) - 1, ip(11) - 1, ip(12) - 1,
                  descriptor(static_cast<const int*>(raw[8])), descriptor(static_cast<const int*>(raw[13]))};
  const T alpha = T(*static_cast<const S*>(raw[4])), beta = T(*static_cast<const S*>(raw[9]));
  const T* A = static_cast<const T*>(raw[5]);
  T* C = static_cast<T*>(const_cast<void*>(raw[10]));
  int ctxt = a.da.e[CTXT_], nprow = -1, npcol = -1, myrow = -1, mycol = -1;
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  int info = check(a, complex_v<T>, nprow, npcol, myrow, mycol);
  const std::string name = routine_name<T>(OP);
  if (nprow == -1) {  // not in the grid: nobody to agree with
    report(ctxt, name.c_str(), info);
    return;
  }
  const grid* g = grid_of(ctxt, nprow, npcol, myrow, mycol);
  if (g == nullptr) {  // no MPI under BLACS: the backend's, checks and all
    if (auto real = reinterpret_cast<prk_fn>(real_routine(symbol_of(name).c_str(), self))) call_real(real, raw);
    else std::fprintf(stderr, "prism-scalapack: %s: MPI is not initialised and there is no backend\n", name.c_str());
    return;
  }
  std::vector<global_arg> args{{a.uplo, -1}, {a.trans, -2}, {a.n, -3}, {a.k, -4}, {real_bits(alpha), -5},
                               {imag_bits(alpha), -5}, {a.ia, -7}, {a.ja, -8}, {real_bits(beta), -10},
                               {imag_bits(beta), -10}, {a.ic, -12}, {a.jc, -13}};
  for (auto [d, pos] : {std::pair{&a.da, 9}, std::pair{&a.dc, 14}})
    for (int e : {DTYPE_, M_, N_, IMB_, INB_, MB_, NB_, RSRC_, CSRC_}) args.push_back({d->e[e], -(pos * descmult + 1 + e)});
  route chosen = route::automatic;
  if (stop_after_checks(*g, ctxt, name.c_str(), info, args, chosen)) return;
  // (2) quick returns, as the reference.
  if (a.n == 0 || ((alpha == T(0) || a.k == 0) && beta == T(1))) return;
  if (alpha == T(0) || a.k == 0) {
    scale_triangle(a, *g, beta, C);
    if (g->me == 0 && stats_on())
      std::fprintf(stderr,
                   "prism-scalapack: route=prism routine=%s uplo=%c trans=%c n=%d k=%d grid=%dx%d recv_max_MB=0 "
                   "control_bytes=%lld reason=\"%s\"\n",
                   name.c_str(), a.uplo, a.trans, a.n, a.k, g->nprow, g->npcol,
                   (long long)(mpi::control_traffic().bytes - t0.control), "alpha = 0 or k = 0: C = beta C, no messages");
    return;
  }
  route_and_run<T>(self, a, *g, chosen, alpha, A, beta, C, raw, t0);
}

}  // namespace

}  // namespace prism::scalapack

// The exported entry points (the version script exports these six and pgemm.cpp's four).
#define PRISM_PRK(NAME, T, S, OP)                                                                                   \
  extern "C" __attribute__((visibility("default"))) void NAME(                                                     \
      const char* uplo, const char* trans, const int* n, const int* k, const S* alpha, const T* a, const int* ia,  \
      const int* ja, const int* desca, const S* beta, T* c, const int* ic, const int* jc, const int* descc) {       \
    const void* const raw[14] = {uplo, trans, n, k, alpha, a, ia, ja, desca, beta, c, ic, jc, descc};             \
    prism::scalapack::prk<T, prism::operation::OP>(reinterpret_cast<void*>(&NAME), raw);                          \
  }
/// ScaLAPACK pssyrk_: sub(C) = alpha op(sub(A)) op(sub(A))^T + beta sub(C) on one triangle, single precision.
PRISM_PRK(pssyrk_, float, float, syrk)
/// ScaLAPACK pdsyrk_, double precision.
PRISM_PRK(pdsyrk_, double, double, syrk)
/// ScaLAPACK pcsyrk_, single complex (symmetric, not Hermitian).
PRISM_PRK(pcsyrk_, std::complex<float>, std::complex<float>, syrk)
/// ScaLAPACK pzsyrk_, double complex (symmetric).
PRISM_PRK(pzsyrk_, std::complex<double>, std::complex<double>, syrk)
/// ScaLAPACK pcherk_: sub(C) = alpha op(sub(A)) op(sub(A))^H + beta sub(C), alpha and beta real.
PRISM_PRK(pcherk_, std::complex<float>, float, herk)
/// ScaLAPACK pzherk_, double complex.
PRISM_PRK(pzherk_, std::complex<double>, double, herk)
#undef PRISM_PRK
