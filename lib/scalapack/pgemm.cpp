// lib/scalapack/pgemm.cpp — libprism_scalapack.so's psgemm_ pdgemm_ pcgemm_ pzgemm_ (ScaLAPACK's ABI):
// PBLAS's checks, then route.cpp's route (docs/distributed.md "Behind ScaLAPACK's p?gemm_", steps 1-6).
#include "pblas.hpp"

#include <complex>
#include <cstdio>
#include <string>
#include <vector>

namespace prism::scalapack {

namespace {

// The real p?gemm_ (PBLAS's C entry: 19 pointers), never prism's own.
using pgemm_fn = void (*)(const char*, const char*, const int*, const int*, const int*, const void*, const void*,
                          const int*, const int*, const int*, const void*, const int*, const int*, const int*,
                          const void*, void*, const int*, const int*, const int*, std::size_t, std::size_t);

template <scalar T>
void pgemm(void* self, const char* transa, const char* transb, const int* M, const int* N, const int* K, const T* alpha,
           const T* A, const int* IA, const int* JA, const int* DESCA, const T* B, const int* IB, const int* JB,
           const int* DESCB, const T* beta, T* C, const int* IC, const int* JC, const int* DESCC) {
  const call_start t0;
  const char ta = upper(transa), tb = upper(transb);
  const int m = *M, n = *N, k = *K, ia = *IA - 1, ja = *JA - 1, ib = *IB - 1, jb = *JB - 1, ic = *IC - 1, jc = *JC - 1;
  const descriptor da(DESCA), db(DESCB), dc(DESCC);
  const bool na = ta == 'N', nb = tb == 'N';
  const grid_place at(da.e[CTXT_]);
  // (1) PBLAS's checks, in its order.
  int info = at.nprow == -1 ? -(1001 + CTXT_) : 0;
  if (info == 0) {
    if (!na && ta != 'T' && ta != 'C') info = -1;
    else if (!nb && tb != 'T' && tb != 'C') info = -2;
    if (na) check_matrix(at, m, 3, k, 5, ia, ja, da, 10, info);
    else check_matrix(at, k, 5, m, 3, ia, ja, da, 10, info);
    if (nb) check_matrix(at, k, 5, n, 4, ib, jb, db, 14, info);
    else check_matrix(at, n, 4, k, 5, ib, jb, db, 14, info);
    check_matrix(at, m, 3, n, 4, ic, jc, dc, 19, info);
  }
  const std::string name = routine_name<T>("GEMM"), symbol = symbol_of(name);
  const forward_fn forward = [&](void* real) {
    reinterpret_cast<pgemm_fn>(real)(transa, transb, M, N, K, alpha, A, IA, JA, DESCA, B, IB, JB, DESCB, beta, C, IC, JC, DESCC, 1, 1);
  };
  const grid* g = enter_grid(at, name, info, symbol, self, forward);
  if (g == nullptr) return;
  void* real = real_routine(symbol, self);
  // As reference PBLAS, alpha and beta are read only past the checks and m = 0 or n = 0
  // (a caller may pass null there, or values that differ): 0 in the agreement otherwise.
  const bool reads = info == 0 && m != 0 && n != 0;
  const T a0 = reads ? *alpha : T(0), b0 = reads ? *beta : T(0);
  std::vector<mpi::agreed> args{{"", 1, ta}, {"", 2, tb}, {"", 3, m}, {"", 4, n}, {"", 5, k}, {"", 6, mpi::real_bits(a0)},
                                {"", 6, mpi::imag_bits(a0)}, {"", 8, ia}, {"", 9, ja}, {"", 12, ib}, {"", 13, jb},
                                {"", 15, mpi::real_bits(b0)}, {"", 15, mpi::imag_bits(b0)}, {"", 17, ic}, {"", 18, jc}};
  add_descriptor_args(args, da, 10), add_descriptor_args(args, db, 14), add_descriptor_args(args, dc, 19);
  agreed_route agreed;
  if (stop_after_checks(*g, at.ctxt, name, info, args, agreed)) return;
  // (2) quick returns, as the reference.
  if (m == 0 || n == 0) return;
  // The submatrices as stored (A k x m when transa != 'N'), seen from their starts.
  const ranks::caller_layout L{g->nprow, g->npcol,
                               {operand_of(da, na ? m : k, na ? k : m, ia, ja, *g), operand_of(db, nb ? k : n, nb ? n : k, ib, jb, *g),
                                operand_of(dc, m, n, ic, jc, *g)}};
  char head[160], verbose[96];
  std::snprintf(head, sizeof head, "routine=%s trans=%c%c m=%d n=%d k=%d grid=%dx%d", name.c_str(), ta, tb, m, n, k, g->nprow,
                g->npcol);
  // (2) alpha = 0 or k = 0 (beta sub(C), beta = 0: zeros, C unread), (3)-(4): route_call
  std::snprintf(verbose, sizeof verbose, "%s %c%c %dx%dx%d", name.c_str(), ta, tb, m, n, k);
  const std::int64_t lld[3] = {da.e[LLD_], db.e[LLD_], dc.e[LLD_]};
  const problem pr{scalar_type_of<T>(), ta, tb, m, n, k};
  route_call<T>({name, verbose, head}, pr, L, lld, *g, agreed, real, forward, *alpha, A, B, *beta, C, t0);
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
