// lib/scalapack/pgemm.cpp — libprism_scalapack.so: psgemm_ pdgemm_ pcgemm_ pzgemm_ with
// ScaLAPACK's ABI, run on prism's rank recursion in the caller's own block-cyclic layout,
// or forwarded to the real ScaLAPACK (docs/distributed.md "Behind ScaLAPACK's p?gemm_").
//
// One call, on every process of the BLACS grid:
//  1. Arguments are checked as reference PBLAS checks them (pdgemm_.c's order, PB_Cchkmat's
//     INFO numbers); a process whose checks fail reports its INFO as PBLAS does, through
//     PB_Cabort (the program's own if it has one, as PBLAS's testers do; ScaLAPACK's prints
//     and ends the job). Then the call is agreed over the grid (pblas.cpp): when any
//     process's checks failed, every process returns (only those report), and when the
//     processes pass different arguments, every one reports the first of them; either way C
//     is untouched and nobody waits.
//  2. m = 0 or n = 0 returns; alpha = 0 or k = 0 scales C (beta = 0: zeros, C unread).
//  3. Route (grid rank 0's PRISM_SCALAPACK_ROUTE): backend, prism, or auto — prism when
//     its modelled time under this layout is below ScaLAPACK's by the measured margin
//     (route_margin) and the call is big enough (route_min_flops); see docs/distributed.md.
//  4. prism: grid rank 0 fits a rank plan to the caller's layout (layout_plan.hpp) and
//     broadcasts it; plans are cached per call signature (the 64 most recent). The rank
//     level's one executor (lib/mpi/rank_exchange) runs it under the caller's block-cyclic
//     ownership (lib/ranks/ownership): per phase each process receives the pieces of A and
//     B its box needs straight from their holders in the caller's layout, runs its box
//     with the shared-memory engine, and sends partial C to the holders of C, which add
//     them, in plan-rank order, to beta C. The same executor runs prism::dist on the
//     native layout. A local step failing on one process is agreed by all (see
//     rank_exchange.hpp); p?gemm_ cannot return an error, so the job then ends with one
//     line and MPI_Abort, as reference PBLAS ends it on an error.
// PRISM_STATS=1: grid rank 0 prints one line per call: the route and why, and for prism
// the measured and predicted bytes received (max, mean over processes), split into the
// plan's own multiply volume (multiply_max_MB: what the same plan moves in prism's native
// layout) and what the caller's layout adds (redistribution_max_MB = predicted max minus
// that; negative when the caller's layout suits the plan better than the native one).
// PRISM_VERBOSE=1 prints the plan, the scored candidates and the layout fit once per plan.
// The real p?gemm_ is found with dlsym(RTLD_NEXT) (the ScaLAPACK linked after prism, or
// the program's when preloaded) or from PRISM_SCALAPACK_BACKEND; never prism's own.
#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/plan.hpp>

#include "../mpi/comm.hpp"
#include "../mpi/rank_exchange.hpp"
#include "../recursive/executor.hpp"
#include "../runtime/runtime.hpp"
#include "../runtime/lru_cache.hpp"
#include "../recursive/local_planner.hpp"
#include "../ranks/block_cyclic.hpp"
#include "../ranks/layout_plan.hpp"
#include "../ranks/ownership.hpp"
#include "pblas.hpp"

#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace prism::scalapack {

namespace {

using namespace prism::ranks;  // the MPI-free model: layouts, fits, ownership
using mpi::check_mpi;
using mpi::imag_bits;
using mpi::real_bits;

template <scalar T>
const char* routine_name() {
  if constexpr (std::same_as<T, float>) return "PSGEMM";
  else if constexpr (std::same_as<T, double>) return "PDGEMM";
  else if constexpr (std::same_as<T, std::complex<float>>) return "PCGEMM";
  else return "PZGEMM";
}

// The real p?gemm_ (PBLAS's C entry: 19 pointers), never prism's own.
using pgemm_fn = void (*)(const char*, const char*, const int*, const int*, const int*, const void*, const void*,
                          const int*, const int*, const int*, const void*, const int*, const int*, const int*,
                          const void*, void*, const int*, const int*, const int*, std::size_t, std::size_t);

template <scalar T>
const char* symbol_name() {
  if constexpr (std::same_as<T, float>) return "psgemm_";
  else if constexpr (std::same_as<T, double>) return "pdgemm_";
  else if constexpr (std::same_as<T, std::complex<float>>) return "pcgemm_";
  else return "pzgemm_";
}

template <scalar T>
pgemm_fn backend(void* self) {
  return reinterpret_cast<pgemm_fn>(real_routine(symbol_name<T>(), self));
}

// A plan fitted to one call signature, as every grid process holds it.
struct prepared {
  bool use_prism = false;
  std::string reason;  // why this route
  plan p;
  std::unique_ptr<rank_model> model;
  layout_fit fit;
  double scalapack_mb = 0, native_mb = 0;
  std::unique_ptr<ranks::cyclic_ownership> own;  // this process's view of the caller's layout under the fit
};

struct call_args {
  char ta, tb;
  int m, n, k;
  int ia, ja, ib, jb, ic, jc;  // 0-based
  descriptor da, db, dc;
};

caller_layout layout_of(const call_args& a, const grid& g) {
  caller_layout L;
  L.nprow = g.nprow, L.npcol = g.npcol;
  auto dim = [](std::int64_t n, int off, int first, int blk, int src, int procs) {
    // The submatrix starts at global index off; the first block's remainder is handled
    // by cyclic_dim itself.
    return cyclic_dim{n, off, first, blk, src, procs};
  };
  auto op = [&](const descriptor& D, std::int64_t rows, std::int64_t cols, int i, int j) {
    const int* d = D.e;
    return operand_layout{dim(rows, i, d[IMB_], d[MB_], d[RSRC_], g.nprow), dim(cols, j, d[INB_], d[NB_], d[CSRC_], g.npcol)};
  };
  const bool na = a.ta == 'N', nb = a.tb == 'N';
  L.op[0] = op(a.da, na ? a.m : a.k, na ? a.k : a.m, a.ia, a.ja);
  L.op[1] = op(a.db, nb ? a.k : a.n, nb ? a.n : a.k, a.ib, a.jb);
  L.op[2] = op(a.dc, a.m, a.n, a.ic, a.jc);
  return L;
}

template <scalar T>
std::shared_ptr<prepared> prepare(const call_args& a, const grid& g, route chosen, bool have_backend, const context& ctx) {
  // At most plan_cache_size signatures (least recently used forgotten), so that a program
  // calling with ever new shapes does not grow; every grid process calls alike, so all
  // keep the same entries and miss together (a miss is collective: rank 0 broadcasts).
  constexpr std::size_t plan_cache_size = 64;
  static prism::detail::lru_cache<std::string, std::shared_ptr<prepared>> cache(plan_cache_size);
  const problem pr{scalar_type_of<T>(), a.ta, a.tb, a.m, a.n, a.k};
  const caller_layout L = layout_of(a, g);
  std::ostringstream key;
  key << char(pr.type) << a.ta << a.tb << ' ' << a.m << ' ' << a.n << ' ' << a.k << ' ' << g.comm << ' ' << int(chosen)
      << have_backend << ' ' << ctx.describe();
  for (const operand_layout& o : L.op)
    for (const cyclic_dim* d : {&o.rows, &o.cols}) key << ' ' << d->offset << ':' << d->first << ':' << d->block << ':' << d->src;
  key << ' ' << a.da.e[LLD_] << ':' << a.db.e[LLD_] << ':' << a.dc.e[LLD_];  // the ownership's local offsets
  if (auto* hit = cache.find(key.str())) return *hit;

  // Grid rank 0 decides and plans; the others receive its verdict and plan text.
  std::vector<std::int64_t> head(7, 0);
  std::string text, reason;
  std::unique_ptr<layout_choice> choice;
  if (g.me == 0) {
    bool unsupported = false;
    for (const operand_layout& o : L.op)
      if (o.rows.src < 0 || o.cols.src < 0) unsupported = true;
    if (unsupported) reason = "a replicated operand (RSRC or CSRC = -1)";
    else if (chosen == route::backend) reason = "PRISM_SCALAPACK_ROUTE=backend";
    else {
      try {
        choice = std::make_unique<layout_choice>(plan_for_layout(pr, L, ctx));
        const rank_model model(choice->why.chosen);
        std::int64_t biggest = 0;
        for (int q = 0; q < model.phases(); ++q)
          for (int r = 0; r < model.ranks(); ++r)
            for (operand o : {operand::a, operand::b, operand::c})
              biggest = std::max(biggest, model.needed(o, model.task(q, r).shape).size());
        const double flops = gemm_flops(pr.type, pr.m, pr.n, pr.k);
        std::ostringstream why;
        if (biggest > INT_MAX) {
          why << "a block over 2^31 elements";
        } else if (chosen == route::prism || !have_backend) {
          head[0] = 1;
          why << (chosen == route::prism ? "PRISM_SCALAPACK_ROUTE=prism" : "no backend p?gemm_");
        } else if (flops < route_min_flops) {
          why << "small: " << flops << " flops < " << route_min_flops;
        } else if (!(choice->fit.seconds < route_margin * choice->scalapack_seconds)) {
          why << "modelled " << choice->fit.seconds << " s is not below " << route_margin << " x ScaLAPACK's "
              << choice->scalapack_seconds << " s";
        } else {
          head[0] = 1;
          why << "modelled " << choice->fit.seconds << " s < " << route_margin << " x ScaLAPACK's "
              << choice->scalapack_seconds << " s";
        }
        reason = why.str();
        if (head[0] != 0) {
          text = choice->why.chosen.to_string();
          head[1] = choice->fit.views[0], head[2] = choice->fit.views[1], head[3] = choice->fit.views[2];
          head[4] = choice->fit.column_major;
        }
      } catch (const plan_error& e) {
        reason = std::string("no plan: ") + e.what();
      }
    }
    head[5] = std::int64_t(text.size());
    head[6] = std::int64_t(reason.size());
  }
  mpi::control_bcast(head.data(), int(head.size()), MPI_INT64_T, 0, g.comm);
  text.resize(std::size_t(head[5]));
  reason.resize(std::size_t(head[6]));
  mpi::control_bcast(text.data(), int(text.size()), MPI_CHAR, 0, g.comm);
  mpi::control_bcast(reason.data(), int(reason.size()), MPI_CHAR, 0, g.comm);

  auto out = std::make_shared<prepared>();
  out->use_prism = head[0] != 0;
  out->reason = reason;
  if (out->use_prism) {
    out->p = plan::parse(text);
    out->model = std::make_unique<rank_model>(out->p);
    for (int d = 0; d < 3; ++d) out->fit.views[d] = int(head[1 + d]);
    out->fit.column_major = head[4] != 0;
    cost_fit(*out->model, L, ctx.rank_flops(), ctx.rank_bandwidth(), out->fit);
    const std::int64_t lld[3] = {a.da.e[LLD_], a.db.e[LLD_], a.dc.e[LLD_]};
    out->own = std::make_unique<ranks::cyclic_ownership>(*out->model, L, out->fit, lld, g.me);
    const double elem = double(element_size(pr.type));
    out->native_mb = double(out->model->max_received()) * elem / 1e6;
    out->scalapack_mb = scalapack_elements(out->p.problem(), L) * elem / 1e6;
  }
  if (g.me == 0 && verbose_on()) {
    std::cerr << "prism-scalapack: " << routine_name<T>() << ' ' << a.ta << a.tb << ' ' << a.m << 'x' << a.n << 'x' << a.k
              << " on a " << g.nprow << 'x' << g.npcol << " grid: route " << (out->use_prism ? "prism" : "backend") << " ("
              << reason << ")\n";
    if (out->use_prism) {
      std::cerr << out->p;
      if (choice) print_rank_report(std::cerr, choice->why);
      std::cerr << "# layout fit: " << out->fit.describe() << "; received max " << double(out->fit.max_received) * double(element_size(pr.type)) / 1e6
                << " MB (prism's native layout " << out->native_mb << " MB; ScaLAPACK modelled " << out->scalapack_mb << " MB)\n";
    }
  }
  cache.put(key.str(), out);
  return out;
}

// beta sub(C) on this process's elements (beta = 0: zeros, C unread).
template <scalar T>
void scale(const call_args& a, const grid& g, T beta, T* C) {
  std::vector<ranks::tile> mine;
  ranks::held_c(layout_of(a, g), g.me, a.dc.e[LLD_], mine);
  mpi::scale_tiles(mine, beta, C);
}

// The prism route: C = alpha op(A) op(B) + beta C on the caller's layout, by the rank
// level's executor under the caller's block-cyclic ownership. Returns what it moved.
template <scalar T>
mpi::exchange_counts run_prism(const grid& g, const prepared& prep, T alpha, const T* A, const T* B, T beta, T* C,
                               const context& ctx) {
  mpi::exchange_counts n;
  mpi::run_exchange<T>(*prep.own, g.comm, alpha, A, B, beta, C, ctx, arena, n);
  return n;
}

// PRISM_STATS=1: one line per call on grid process 0 (the file comment says what it holds).
template <scalar T>
void print_stats(const call_args& a, const grid& g, const prepared& prep, std::int64_t received, std::int64_t allocated,
                 const call_start& t0) {
  const char* name = routine_name<T>();
  const mpi::call_stats st = mpi::reduce_call_stats(g.comm, {double(received), t0.seconds(), double(allocated)}, t0.control);
  const std::vector<double>& mx = st.max;
  const std::vector<double>& sum = st.sum;
  if (g.me == 0) {
    const int P = g.nprow * g.npcol;
    if (prep.use_prism) {
      const double elem = double(sizeof(T));
      std::fprintf(stderr,
                   "prism-scalapack: route=prism routine=%s trans=%c%c m=%d n=%d k=%d grid=%dx%d recv_max_MB=%.6g "
                   "recv_mean_MB=%.6g pred_max_MB=%.6g pred_mean_MB=%.6g multiply_max_MB=%.6g redistribution_max_MB=%.6g "
                   "scalapack_model_MB=%.6g mem_max_MB=%.6g pred_mem_max_MB=%.6g recv_max_bytes=%.0f recv_sum_bytes=%.0f "
                   "control_min_bytes=%.0f control_max_bytes=%.0f seconds=%.4f plan=\"%s\" fit=\"%s\" reason=\"%s\"\n",
                   name, a.ta, a.tb, a.m, a.n, a.k, g.nprow, g.npcol, mx[0] / 1e6, sum[0] / P / 1e6,
                   double(prep.fit.max_received) * elem / 1e6, prep.fit.mean_received * elem / 1e6, prep.native_mb,
                   double(prep.fit.max_received) * elem / 1e6 - prep.native_mb, prep.scalapack_mb, mx[2] / 1e6,
                   double(prep.fit.peak_bytes) / 1e6, mx[0], sum[0], st.control_min, st.control_max, mx[1],
                   prep.model->grid().c_str(), prep.fit.describe().c_str(), prep.reason.c_str());
    } else {
      std::fprintf(stderr,
                   "prism-scalapack: route=backend routine=%s trans=%c%c m=%d n=%d k=%d grid=%dx%d control_min_bytes=%.0f "
                   "control_max_bytes=%.0f seconds=%.4f reason=\"%s\"\n",
                   name, a.ta, a.tb, a.m, a.n, a.k, g.nprow, g.npcol, st.control_min, st.control_max, mx[1],
                   prep.reason.c_str());
    }
  }
}

template <scalar T>
void pgemm(void* self, const char* transa, const char* transb, const int* M, const int* N, const int* K, const T* alpha,
           const T* A, const int* IA, const int* JA, const int* DESCA, const T* B, const int* IB, const int* JB,
           const int* DESCB, const T* beta, T* C, const int* IC, const int* JC, const int* DESCC) {
  const call_start t0;
  call_args a{char(std::toupper(static_cast<unsigned char>(*transa))), char(std::toupper(static_cast<unsigned char>(*transb))),
              *M, *N, *K, *IA - 1, *JA - 1, *IB - 1, *JB - 1, *IC - 1, *JC - 1, descriptor(DESCA), descriptor(DESCB),
              descriptor(DESCC)};
  const int ctxt = a.da.e[CTXT_];
  int nprow = -1, npcol = -1, myrow = -1, mycol = -1;
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  // (1) PBLAS's checks, in its order.
  int info = nprow == -1 ? -(1001 + CTXT_) : 0;
  if (info == 0) {
    const bool na = a.ta == 'N', nb = a.tb == 'N';
    if (!na && a.ta != 'T' && a.ta != 'C') info = -1;
    else if (!nb && a.tb != 'T' && a.tb != 'C') info = -2;
    if (na) check_matrix(ctxt, nprow, npcol, myrow, mycol, a.m, 3, a.k, 5, a.ia, a.ja, a.da, 10, info);
    else check_matrix(ctxt, nprow, npcol, myrow, mycol, a.k, 5, a.m, 3, a.ia, a.ja, a.da, 10, info);
    if (nb) check_matrix(ctxt, nprow, npcol, myrow, mycol, a.k, 5, a.n, 4, a.ib, a.jb, a.db, 14, info);
    else check_matrix(ctxt, nprow, npcol, myrow, mycol, a.n, 4, a.k, 5, a.ib, a.jb, a.db, 14, info);
    check_matrix(ctxt, nprow, npcol, myrow, mycol, a.m, 3, a.n, 4, a.ic, a.jc, a.dc, 19, info);
  }
  const char* name = routine_name<T>();
  if (nprow == -1) {  // not in the grid: nobody to agree with
    report(ctxt, name, info);
    return;
  }
  const grid* g = grid_of(ctxt, nprow, npcol, myrow, mycol);
  pgemm_fn real = backend<T>(self);
  if (g == nullptr) {  // no MPI under BLACS: the backend's, checks and all
    if (real != nullptr) real(transa, transb, M, N, K, alpha, A, IA, JA, DESCA, B, IB, JB, DESCB, beta, C, IC, JC, DESCC, 1, 1);
    else std::fprintf(stderr, "prism-scalapack: %s: MPI is not initialised and there is no backend\n", name);
    return;
  }
  std::vector<global_arg> args{{a.ta, -1}, {a.tb, -2}, {a.m, -3}, {a.n, -4}, {a.k, -5}, {real_bits(*alpha), -6},
                               {imag_bits(*alpha), -6}, {a.ia, -8}, {a.ja, -9}, {a.ib, -12}, {a.jb, -13},
                               {real_bits(*beta), -15}, {imag_bits(*beta), -15}, {a.ic, -17}, {a.jc, -18}};
  for (auto [d, pos] : {std::pair{&a.da, 10}, std::pair{&a.db, 14}, std::pair{&a.dc, 19}})
    for (int e : {DTYPE_, M_, N_, IMB_, INB_, MB_, NB_, RSRC_, CSRC_}) args.push_back({d->e[e], -(pos * descmult + 1 + e)});
  route chosen = route::automatic;
  if (stop_after_checks(*g, ctxt, name, info, args, chosen)) return;
  // (2) quick returns, as the reference.
  if (a.m == 0 || a.n == 0) return;
  if (*alpha == T(0) || a.k == 0) {
    scale(a, *g, *beta, C);
    if (g->me == 0 && stats_on())
      std::fprintf(stderr,
                   "prism-scalapack: route=prism routine=%s trans=%c%c m=%d n=%d k=%d grid=%dx%d recv_max_MB=0 "
                   "control_bytes=%lld reason=\"%s\"\n",
                   name, a.ta, a.tb, a.m, a.n, a.k, g->nprow, g->npcol,
                   (long long)(mpi::control_traffic().bytes - t0.control), "alpha = 0 or k = 0: C = beta C, no messages");
    return;
  }
  // (3)-(4)
  context ctx = default_context();
  if (!threads_from_env())
    ctx.set_threads(std::max(1, int(std::thread::hardware_concurrency()) / std::max(1, g->ranks_per_node)));
  ctx.set_ranks(g->nprow * g->npcol).set_ranks_per_node(g->ranks_per_node);
  const std::shared_ptr<prepared> prep = prepare<T>(a, *g, chosen, real != nullptr, ctx);
  std::int64_t received = 0, allocated = 0;
  if (!prep->use_prism && real == nullptr) {  // e.g. a replicated operand, which prism does not run
    std::fprintf(stderr,
                 "prism-scalapack: %s: prism cannot run this call (%s) and there is no ScaLAPACK %s to forward it "
                 "to; ending the job (MPI_Abort)\n",
                 name, prep->reason.c_str(), symbol_name<T>());
    MPI_Abort(g->comm, 1);
  } else if (!prep->use_prism) {
    real(transa, transb, M, N, K, alpha, A, IA, JA, DESCA, B, IB, JB, DESCB, beta, C, IC, JC, DESCC, 1, 1);
  } else {
    try {
      if (stats_on()) prism::detail::runtime_of(ctx).pool().trim();  // its peak loan is then this call's
      const mpi::exchange_counts n = run_prism(*g, *prep, *alpha, A, B, *beta, C, ctx);
      received = n.bytes_received;
      allocated = std::int64_t(n.buffer_bytes + prism::detail::runtime_of(ctx).pool().snapshot().peak_on_loan);
    } catch (const mpi::local_failure& ex) {
      // Every grid process has this error (the executor agreed it), none waits; C may be
      // partly updated and p?gemm_ cannot return an error, so the job ends, as reference
      // PBLAS ends it on an error. The failing process and grid process 0 say why.
      if (ex.mine() || g->me == 0)
        std::fprintf(stderr, "prism-scalapack: %s failed on grid process %d: %s; ending the job (MPI_Abort)\n", name, g->me,
                     ex.what());
      std::fflush(stderr);
      MPI_Barrier(g->comm);  // every process is alive and here: the lines are out before the abort
      MPI_Abort(g->comm, 1);
    } catch (const std::exception& ex) {  // a rank alone cannot back out of a collective
      std::fprintf(stderr, "prism-scalapack: %s failed on grid process %d: %s; ending the job (MPI_Abort)\n", name, g->me, ex.what());
      MPI_Abort(g->comm, 1);
    }
  }
  if (stats_on())
    print_stats<T>(a, *g, *prep, received, allocated, t0);
}

}  // namespace

}  // namespace prism::scalapack

// The exported entry points (the version script exports these four and psyrk.cpp's six).
#define PRISM_PGEMM(NAME, T)                                                                                       \
  extern "C" __attribute__((visibility("default"))) void NAME(                                                    \
      const char* transa, const char* transb, const int* m, const int* n, const int* k, const T* alpha, const T* a, \
      const int* ia, const int* ja, const int* desca, const T* b, const int* ib, const int* jb, const int* descb,   \
      const T* beta, T* c, const int* ic, const int* jc, const int* descc) {                                       \
    prism::scalapack::pgemm<T>(reinterpret_cast<void*>(&NAME), transa, transb, m, n, k, alpha, a, ia, ja, desca, b, \
                               ib, jb, descb, beta, c, ic, jc, descc);                                             \
  }
/// ScaLAPACK psgemm_: sub(C) = alpha op(sub(A)) op(sub(B)) + beta sub(C), single precision.
PRISM_PGEMM(psgemm_, float)
/// ScaLAPACK pdgemm_, double precision.
PRISM_PGEMM(pdgemm_, double)
/// ScaLAPACK pcgemm_, single complex.
PRISM_PGEMM(pcgemm_, std::complex<float>)
/// ScaLAPACK pzgemm_, double complex.
PRISM_PGEMM(pzgemm_, std::complex<double>)
#undef PRISM_PGEMM
