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
//  4. prism (route.cpp): grid rank 0 fits a rank plan to the caller's layout
//     (layout_plan.hpp) and broadcasts it; plans are cached per call signature. The rank
//     level's one executor (lib/mpi/rank_exchange) runs it under the caller's block-cyclic
//     ownership (lib/ranks/ownership): per phase each process receives the pieces of A and
//     B its box needs straight from their holders in the caller's layout, runs its box
//     with the shared-memory engine, and sends partial C to the holders of C, which add
//     them, in plan-rank order, to beta C. A local step failing on one process is agreed by
//     all; p?gemm_ cannot return an error, so the job then ends with one line and
//     MPI_Abort, as reference PBLAS ends it on an error.
// PRISM_STATS=1 and PRISM_VERBOSE=1: route.cpp's lines. The real p?gemm_ is found with
// dlsym(RTLD_NEXT) (the ScaLAPACK linked after prism, or the program's when preloaded) or
// from PRISM_SCALAPACK_BACKEND; never prism's own.
#include "../mpi/rank_exchange.hpp"
#include "pblas.hpp"

#include <complex>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace prism::scalapack {

namespace {

using namespace prism::ranks;  // the MPI-free model: layouts, fits, ownership
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

struct call_args {
  char ta, tb;
  int m, n, k;
  int ia, ja, ib, jb, ic, jc;  // 0-based
  descriptor da, db, dc;
};

// The submatrices of A, B and C as stored (A k x m when transa != 'N'), seen from their
// starts: the first block's remainder is cyclic_dim's own.
caller_layout layout_of(const call_args& a, const grid& g) {
  caller_layout L;
  L.nprow = g.nprow, L.npcol = g.npcol;
  auto op = [&](const descriptor& D, std::int64_t rows, std::int64_t cols, int i, int j) {
    const int* d = D.e;
    return operand_layout{cyclic_dim{rows, i, d[IMB_], d[MB_], d[RSRC_], g.nprow}, cyclic_dim{cols, j, d[INB_], d[NB_], d[CSRC_], g.npcol}};
  };
  const bool na = a.ta == 'N', nb = a.tb == 'N';
  L.op[0] = op(a.da, na ? a.m : a.k, na ? a.k : a.m, a.ia, a.ja);
  L.op[1] = op(a.db, nb ? a.k : a.n, nb ? a.n : a.k, a.ib, a.jb);
  L.op[2] = op(a.dc, a.m, a.n, a.ic, a.jc);
  return L;
}

// The call's signature: everything its fitted plan depends on, local leading dimensions
// included (the ownership's local offsets).
std::string key_of(const call_args& a, const caller_layout& L, const grid& g, char type, route chosen, bool backend,
                   const context& ctx) {
  std::ostringstream key;
  key << type << a.ta << a.tb << ' ' << a.m << ' ' << a.n << ' ' << a.k << ' ' << g.comm << ' ' << int(chosen) << backend << ' '
      << ctx.describe();
  for (const operand_layout& o : L.op)
    for (const cyclic_dim* d : {&o.rows, &o.cols}) key << ' ' << d->offset << ':' << d->first << ':' << d->block << ':' << d->src;
  key << ' ' << a.da.e[LLD_] << ':' << a.db.e[LLD_] << ':' << a.dc.e[LLD_];
  return key.str();
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
  auto real = reinterpret_cast<pgemm_fn>(real_routine(symbol_name<T>(), self));
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
  const caller_layout L = layout_of(a, *g);
  char head[160];
  std::snprintf(head, sizeof head, "routine=%s trans=%c%c m=%d n=%d k=%d grid=%dx%d", name, a.ta, a.tb, a.m, a.n, a.k,
                g->nprow, g->npcol);
  if (*alpha == T(0) || a.k == 0) {  // beta sub(C) on this process's elements (beta = 0: zeros, C unread)
    std::vector<tile> mine;
    held_c(L, g->me, a.dc.e[LLD_], mine);
    mpi::scale_tiles(mine, *beta, C);
    if (g->me == 0 && stats_on())
      std::fprintf(stderr, "prism-scalapack: route=prism %s recv_max_MB=0 control_bytes=%lld reason=\"%s\"\n", head,
                   (long long)(mpi::control_traffic().bytes - t0.control), "alpha = 0 or k = 0: C = beta C, no messages");
    return;
  }
  // (3)-(4)
  const context ctx = call_context(*g);
  const problem pr{scalar_type_of<T>(), a.ta, a.tb, a.m, a.n, a.k};
  const std::int64_t lld[3] = {a.da.e[LLD_], a.db.e[LLD_], a.dc.e[LLD_]};
  char verbose[96];
  std::snprintf(verbose, sizeof verbose, "%s %c%c %dx%dx%d", name, a.ta, a.tb, a.m, a.n, a.k);
  const auto f = prepare(key_of(a, L, *g, char(pr.type), chosen, real != nullptr, ctx), pr, L, lld, *g, chosen, real != nullptr,
                         ctx, verbose);
  run_result res;
  if (!f->use_prism && real == nullptr) {  // e.g. a replicated operand, which prism does not run
    std::fprintf(stderr,
                 "prism-scalapack: %s: prism cannot run this call (%s) and there is no ScaLAPACK %s to forward it "
                 "to; ending the job (MPI_Abort)\n",
                 name, f->reason.c_str(), symbol_name<T>());
    MPI_Abort(g->comm, 1);
  } else if (!f->use_prism) {
    real(transa, transb, M, N, K, alpha, A, IA, JA, DESCA, B, IB, JB, DESCB, beta, C, IC, JC, DESCC, 1, 1);
  } else {
    res = run_fitted<T>(*f, *g, *alpha, A, B, *beta, C, ctx, name);
  }
  if (stats_on()) print_stats(*g, *f, head, res, t0, sizeof(T));
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
