// lib/scalapack/route.cpp — the prism route of p?gemm_, p?syrk_ and p?herk_ (pblas.hpp):
// grid rank 0 decides the route and plans, every process holds the schedule fitted to the
// caller's layout, the rank level's one executor runs it on the caller's own storage, and
// PRISM_STATS says what it moved. docs/distributed.md, "Behind ScaLAPACK's p?gemm_".
#include "pblas.hpp"

#include "../mpi/rank_exchange.hpp"
#include "../runtime/lru_cache.hpp"
#include "../runtime/runtime.hpp"

#include <prism/error.hpp>

#include <climits>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

namespace prism::scalapack {

namespace {

// Routing rule of PRISM_SCALAPACK_ROUTE=auto, from bench/results/scalapack-route-2026-11-23.txt
// (docs/distributed.md, routing): prism when its modelled time is below this share of
// ScaLAPACK's and the call has at least this many flops.
constexpr double route_margin = 1.0;
constexpr double route_min_flops = 5e7;

// The context of one call: the process's settings, with the grid's ranks and a share of the
// threads (the node's cores over its ranks, unless PRISM_NUM_THREADS is set).
context call_context(const grid& g) {
  context ctx = *process_settings();  // (a process without them sends its grid's calls to the backend)
  if (prism::detail::process_environment().num_threads.empty())
    ctx.set_threads(std::max(1, int(std::thread::hardware_concurrency()) / std::max(1, g.ranks_per_node)));
  ctx.set_ranks(g.nprow * g.npcol).set_ranks_per_node(g.ranks_per_node);
  return ctx;
}

struct verdict;

// A call's schedule fitted to the caller's layout, as every grid process holds it.
struct fitted {
  std::shared_ptr<const verdict> from;           // the verdict it was fitted from: route, text, reason
  bool use_prism = false;                       // the route
  std::shared_ptr<const ranks::schedule> model;  // its schedule (use_prism only)
  ranks::layout_fit fit;                        // its fit and exact cost on the layout
  std::unique_ptr<ranks::cyclic_ownership> own;  // this process's view of the layout
  double native_mb = 0, scalapack_mb = 0;       // the schedule's busiest rank natively; PBLAS's model
};

// What the prism route moved and allocated on this process.
struct run_result {
  mpi::exchange_counts counts;  // exact, from the MPI statuses
  std::int64_t allocated = 0;   // its buffers and the local workspace lent (PRISM_STATS)
};

// The largest region any rank gathers or computes (a block above 2^31 - 1 elements goes to
// the real routine).
std::int64_t biggest_region(const ranks::schedule& s) {
  std::int64_t most = 0;
  std::vector<ranks::region> mine[3];
  for (int q = 0; q < s.phases(); ++q)
    for (int r = 0; r < s.ranks(); ++r) {
      s.regions(q, r, mine);
      for (const auto& v : mine)
        for (const ranks::region& g : v) most = std::max(most, g.at.size());
    }
  return most;
}

// The words of the verdict grid rank 0 broadcasts: route, views, rank map, then the lengths of the plan's text and reason.
enum slot { use_prism_slot, view_slot, column_major_slot = view_slot + 3, text_slot, reason_slot, slots };

// Grid rank 0's verdict (never for route backend) into head, text, report; returns why: prism when
// told (route prism, no backend) or modelled below route_margin x PBLAS's time with route_min_flops.
// A small call goes to the backend unplanned: a plan costs milliseconds, the call microseconds.
std::string decide(const problem& pr, const ranks::caller_layout& L, route chosen, bool have_backend, const context& ctx,
                   std::int64_t (&head)[slots], std::string& text, std::string& report) {
  for (const ranks::operand_layout& o : L.op)
    if (o.rows.src < 0 || o.cols.src < 0) return "a replicated operand (RSRC or CSRC = -1)";
  std::ostringstream why;
  if (chosen == route::automatic && have_backend && pr.flops() < route_min_flops) {
    why << "small: " << pr.flops() << " flops < " << route_min_flops;
    return why.str();
  }
  try {
    const ranks::layout_choice c = ranks::plan_for_layout(pr, L, ctx);
    if (biggest_region(*c.model) > INT_MAX) return "a block over 2^31 elements";
    if (chosen == route::prism || !have_backend) {
      head[use_prism_slot] = 1;
      why << (chosen == route::prism ? "PRISM_SCALAPACK_ROUTE=prism" : "no backend routine");
    } else if (!(c.fit.seconds < route_margin * c.scalapack_seconds)) {
      why << "modelled " << c.fit.seconds << " s is not below " << route_margin << " x ScaLAPACK's " << c.scalapack_seconds << " s";
    } else {
      head[use_prism_slot] = 1;
      why << "modelled " << c.fit.seconds << " s < " << route_margin << " x ScaLAPACK's " << c.scalapack_seconds << " s";
    }
    text = c.text, report = c.report;
    for (int d = 0; d < 3; ++d) head[view_slot + d] = c.fit.views[d];
    head[column_major_slot] = c.fit.column_major;
    return why.str();
  } catch (const plan_error& e) {
    return std::string("no plan: ") + e.what();
  }
}

// The call's signature from what the processes agreed (shape, descriptors but their LLD, route
// asked for), so a cache miss, which is collective, is every process's miss.
std::string agreed_key(const problem& pr, const ranks::caller_layout& L, route chosen) {
  std::ostringstream key;
  key << char(pr.type) << int(pr.op) << pr.uplo << pr.transa << pr.transb << ' ' << pr.m << ' ' << pr.n << ' ' << pr.k << ' '
      << int(chosen);
  for (const ranks::operand_layout& o : L.op)
    for (const ranks::cyclic_dim* d : {&o.rows, &o.cols}) key << ' ' << d->offset << ':' << d->first << ':' << d->block << ':' << d->src;
  return key.str();
}

// What grid rank 0 decided for a signature, as it broadcast it: the route, the fit's views
// and rank map, the plan's text and the reason.
struct verdict {
  std::int64_t head[slots] = {};
  std::string text, reason;
};

}  // namespace

// A grid's verdicts by signature and its fits by signature and local storage, the 64 most
// recent of each.
struct route_caches {
  prism::detail::lru_cache<std::string, std::shared_ptr<const verdict>> verdicts{64};
  prism::detail::lru_cache<std::string, std::shared_ptr<const fitted>> fits{64};
  // The exchange's buffers, kept between the grid's calls (mpi::kept_buffer): one grid's, so
  // calls on two grids from two threads (MPI_THREAD_MULTIPLE) never share them.
  std::unique_ptr<std::byte[]> buffers;
  std::size_t buffer_bytes = 0;
};

namespace {

// Grid g's caches, made on its first routed call.
route_caches& caches_of(const grid& g) {
  if (!g.caches) g.caches = std::make_shared<route_caches>();
  return *g.caches;
}

// PRISM_VERBOSE's line of a new signature on grid process 0 (the route and why); whether it was said.
bool say_route(const grid& g, const std::string& head, bool prism, const std::string& reason) {
  if (g.me != 0 || prism::detail::process_environment().verbose.get() <= 0) return false;
  std::cerr << "prism-scalapack: " << head << " on a " << g.nprow << 'x' << g.npcol << " grid: route "
            << (prism ? "prism" : "backend") << " (" << reason << ")\n";
  return true;
}

// The verdict of signature `key`, on a miss (`fresh`) decided on grid rank 0 (with its `report`)
// and broadcast; every process asks for every call's, so all keep the same 64 entries.
std::shared_ptr<const verdict> verdict_of(const std::string& key, const problem& pr, const ranks::caller_layout& L,
                                          const grid& g, route chosen, bool have_backend, const context& ctx,
                                          bool& fresh, std::string& report) {
  auto& cache = caches_of(g).verdicts;
  fresh = false;
  if (auto* hit = cache.find(key)) return *hit;
  fresh = true;
  auto v = std::make_shared<verdict>();
  std::string text;
  if (g.me == 0) {
    const std::string reason = decide(pr, L, chosen, have_backend, ctx, v->head, text, report);
    v->head[text_slot] = std::int64_t(text.size()), v->head[reason_slot] = std::int64_t(reason.size());
    text += reason;
  }
  mpi::control_bcast(v->head, slots, MPI_INT64_T, 0, g.comm);
  text.resize(std::size_t(v->head[text_slot] + v->head[reason_slot]));
  mpi::control_bcast(text.data(), int(text.size()), MPI_CHAR, 0, g.comm);
  v->text = text.substr(0, std::size_t(v->head[text_slot]));
  v->reason = text.substr(std::size_t(v->head[text_slot]));
  cache.put(key, v);
  return v;
}

// The call's verdict fitted to this process's storage (its LLDs, which processes need not share,
// and its context), kept for the 64 most recent; `head_text` names the call for PRISM_VERBOSE.
std::shared_ptr<const fitted> prepare(const problem& pr, const ranks::caller_layout& L, const std::int64_t lld[3],
                                      const grid& g, route chosen, bool have_backend, const context& ctx,
                                      const std::string& head_text) {
  const std::string key = agreed_key(pr, L, chosen);
  std::string report;
  bool fresh = false;
  const std::shared_ptr<const verdict> v = verdict_of(key, pr, L, g, chosen, have_backend, ctx, fresh, report);
  std::ostringstream local_key;
  local_key << key << ' ' << lld[0] << ':' << lld[1] << ':' << lld[2] << ' ' << ctx.describe() << ' ' << v.get();
  auto& cache = caches_of(g).fits;
  if (auto* hit = cache.find(local_key.str())) return *hit;
  auto out = std::make_shared<fitted>();
  out->from = v;  // so no later verdict has its address, which local_key names
  out->use_prism = v->head[use_prism_slot] != 0;
  if (out->use_prism) {
    out->model = ranks::schedule_of_text(pr, v->text);
    for (int d = 0; d < 3; ++d) out->fit.views[d] = int(v->head[view_slot + d]);
    out->fit.column_major = v->head[column_major_slot] != 0;
    ranks::cost_fit(*out->model, L, ctx.rank_flops(), ctx.rank_bandwidth(), out->fit);
    out->own = std::make_unique<ranks::cyclic_ownership>(*out->model, L, out->fit, lld);
    const double elem = double(element_size(pr.type));
    std::int64_t native = 0;
    for (const rank_cost& c : out->model->costs()) native = std::max(native, c.received_total());
    out->native_mb = double(native) * elem / 1e6;
    out->scalapack_mb = (pr.op == operation::gemm ? ranks::scalapack_elements(pr, L) : ranks::scalapack_rank_k_elements(pr, L)) * elem / 1e6;
  }
  if (fresh && say_route(g, head_text, out->use_prism, v->reason) && out->use_prism)  // once per signature
    std::cerr << v->text << (pr.op == operation::gemm ? "" : "\n") << report << "# layout fit: " << out->fit.describe()
              << "; received max " << double(out->fit.max_received) * double(element_size(pr.type)) / 1e6
              << " MB (prism's native layout " << out->native_mb << " MB; ScaLAPACK modelled " << out->scalapack_mb << " MB)\n";
  cache.put(local_key.str(), out);
  return out;
}

// The prism route: the rank level's one executor on the caller's own storage.
template <scalar T>
run_result run_fitted(const fitted& f, const grid& g, T alpha, const T* A, const T* B, T beta, T* C, const context& ctx,
                      const std::string& routine, bool measure) {
  run_result res;
  try {
    if (measure) prism::detail::runtime_of(ctx).pool().trim();  // its peak loan is then this call's
    // The local products are planned for one rank: ctx's ranks are the grid's (the route's model).
    context local = ctx;
    local.set_ranks(1);
    route_caches& kept = caches_of(g);
    const auto buffers = [&](std::size_t bytes) { return mpi::kept_buffer(kept.buffers, kept.buffer_bytes, bytes); };
    mpi::run_exchange<T>(*f.own, g.comm, alpha, A, B, beta, C, local, buffers, res.counts);
    res.allocated = std::int64_t(res.counts.buffer_bytes + prism::detail::runtime_of(ctx).pool().snapshot().peak_on_loan);
  } catch (const std::exception& ex) {
    // The routine cannot return an error (C may be partly updated), so the job ends, as PBLAS's
    // would. A local_failure every process has (agreed): the failing one and grid process 0 say
    // why, then a barrier (all are alive and here) gets the lines out first. Any other: this
    // process alone, which cannot back out of a collective.
    const auto* agreed = dynamic_cast<const mpi::local_failure*>(&ex);
    if (agreed == nullptr || agreed->mine() || g.me == 0)
      std::fprintf(stderr, "prism-scalapack: %s failed on grid process %d: %s; ending the job (MPI_Abort)\n", routine.c_str(),
                   g.me, ex.what());
    if (agreed != nullptr) std::fflush(stderr), MPI_Barrier(g.comm);
    MPI_Abort(g.comm, 1);
  }
  return res;
}

// PRISM_STATS=1: the call's line on grid process 0, `head` then its route and figures
// (docs/distributed.md, "What it shows").
void print_stats(const grid& g, const fitted& f, const std::string& head, const run_result& res, const call_start& t0,
                 std::size_t elem_size) {
  const double elem = double(elem_size), received = double(res.counts.bytes_received);
  const double predicted = f.use_prism ? double(f.fit.received[std::size_t(g.me)]) * elem : 0;
  const mpi::call_stats st =
      mpi::reduce_call_stats(g.comm, {received, t0.seconds(), double(res.allocated), std::abs(received - predicted)}, t0.control);
  if (g.me != 0) return;
  const std::vector<double>& mx = st.max;
  if (!f.use_prism) {
    std::fprintf(stderr, "prism-scalapack: route=backend %s control_min_bytes=%.0f control_max_bytes=%.0f seconds=%.4f reason=\"%s\"\n",
                 head.c_str(), st.control_min, st.control_max, mx[1], f.from->reason.c_str());
    return;
  }
  const double pred_max = double(f.fit.max_received) * elem / 1e6;
  std::fprintf(stderr,
               "prism-scalapack: route=prism %s recv_max_MB=%.6g recv_mean_MB=%.6g pred_max_MB=%.6g pred_mean_MB=%.6g "
               "exact=%s multiply_max_MB=%.6g redistribution_max_MB=%.6g scalapack_model_MB=%.6g mem_max_MB=%.6g "
               "pred_mem_max_MB=%.6g recv_max_bytes=%.0f pred_max_bytes=%.0f recv_sum_bytes=%.0f control_min_bytes=%.0f "
               "control_max_bytes=%.0f seconds=%.4f %s=\"%s\" fit=\"%s\" reason=\"%s\"\n",
               head.c_str(), mx[0] / 1e6, st.sum[0] / g.size / 1e6, pred_max, f.fit.mean_received * elem / 1e6,
               mx[3] == 0 ? "yes" : "no", f.native_mb, pred_max - f.native_mb, f.scalapack_mb, mx[2] / 1e6,
               double(f.fit.peak_bytes) / 1e6, mx[0], double(f.fit.max_received) * elem, st.sum[0], st.control_min,
               st.control_max, mx[1], f.model->product().op == operation::gemm ? "plan" : "scheme",
               f.model->describe().c_str(), f.fit.describe().c_str(), f.from->reason.c_str());
}

// Ends the job (MPI_Abort over the grid, one line naming `why`): no real routine to forward the call to.
[[noreturn]] void end_without_backend(const grid& g, const std::string& routine, const std::string& why) {
  std::fprintf(stderr, "prism-scalapack: %s: prism cannot run this call (%s) and there is no ScaLAPACK %s to forward it to; "
               "ending the job (MPI_Abort)\n", routine.c_str(), why.c_str(), symbol_of(routine).c_str());
  MPI_Abort(g.comm, 1);
  std::abort();  // (MPI_Abort does not return)
}

// (2) alpha = 0 or k = 0: beta times this process's elements of sub(C) (a rank-k update's uplo
// triangle; herk: the diagonal made real before, Im C(j, j) being never read, and after, for
// an infinite beta or Re C(j, j)), or the backend's routine for a replicated C or route backend.
template <scalar T>
void scale_only(const call_names& names, const problem& pr, const ranks::caller_layout& L, std::int64_t ldc, const grid& g,
                const agreed_route& agreed, void* real, const forward_fn& forward, T beta, T* C, const call_start& t0) {
  const bool replicated = L.op[2].rows.src < 0 || L.op[2].cols.src < 0;
  if (replicated || (agreed.chosen == route::backend && real != nullptr)) {
    const std::string why = replicated ? "a replicated C (RSRC or CSRC = -1)" : agreed.why_backend();
    if (real == nullptr) end_without_backend(g, names.routine, why);
    forward(real);
    if (g.me == 0 && agreed.stats)
      std::fprintf(stderr, "prism-scalapack: route=backend %s reason=\"alpha = 0 or k = 0; %s\"\n", names.stats.c_str(), why.c_str());
    return;
  }
  std::vector<std::int64_t> diagonal;
  if (pr.op == operation::herk) ranks::held_diagonal(L, g.me, ldc, diagonal);
  mpi::make_real(diagonal, C);
  std::vector<ranks::tile> mine;
  ranks::held_c(L, g.me, ldc, pr.op == operation::gemm ? 0 : pr.uplo, mine);
  mpi::scale_tiles(mine, beta, C);
  mpi::make_real(diagonal, C);
  if (g.me == 0 && agreed.stats)
    std::fprintf(stderr, "prism-scalapack: route=prism %s recv_max_MB=0 control_bytes=%lld reason=\"%s\"\n", names.stats.c_str(),
                 (long long)(mpi::control_traffic() - t0.control), "alpha = 0 or k = 0: C = beta C, no messages");
}

}  // namespace

template <scalar T>
void route_call(const call_names& names, const problem& pr, const ranks::caller_layout& L, const std::int64_t lld[3],
                const grid& g, const agreed_route& agreed, void* real, const forward_fn& forward, T alpha, const T* A,
                const T* B, T beta, T* C, const call_start& t0) {
  if (alpha == T(0) || pr.k == 0) return scale_only<T>(names, pr, L, lld[2], g, agreed, real, forward, beta, C, t0);
  std::optional<context> ctx;  // (none with route backend: a process with a bad PRISM_* setting has no settings)
  std::shared_ptr<const fitted> f;
  if (agreed.chosen == route::backend) {  // no plan made (verdict_of would broadcast one); the signature kept alike
    auto v = std::make_shared<verdict>();
    v->reason = agreed.why_backend();
    auto& seen = caches_of(g).verdicts;
    if (const std::string key = agreed_key(pr, L, route::backend); seen.find(key) == nullptr)
      seen.put(key, v), say_route(g, names.verbose, false, v->reason);
    auto backend = std::make_shared<fitted>();
    backend->from = v;
    f = backend;
  } else {
    ctx.emplace(call_context(g));
    f = prepare(pr, L, lld, g, agreed.chosen, real != nullptr, *ctx, names.verbose);
  }
  run_result res;
  if (!f->use_prism && real == nullptr) end_without_backend(g, names.routine, f->from->reason);  // e.g. a replicated operand
  else if (!f->use_prism) forward(real);
  else res = run_fitted<T>(*f, g, alpha, A, B, beta, C, *ctx, names.routine, agreed.stats);
  if (agreed.stats) print_stats(g, *f, names.stats, res, t0, sizeof(T));
}

#define PRISM_INSTANTIATE(T)                                                                                       \
  template void route_call<T>(const call_names&, const problem&, const ranks::caller_layout&, const std::int64_t[3], \
                              const grid&, const agreed_route&, void*, const forward_fn&, T, const T*, const T*, T, T*, \
                              const call_start&);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism::scalapack
