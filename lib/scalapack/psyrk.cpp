// lib/scalapack/psyrk.cpp — libprism_scalapack.so's pssyrk_ pdsyrk_ pcsyrk_ pzsyrk_ pcherk_ pzherk_ (PBLAS's
// ABI): checks, then route.cpp's route (docs/distributed.md "Behind ScaLAPACK's p?syrk_ and p?herk_").
#include "pblas.hpp"

#include <prism/syrk.hpp>

#include <complex>
#include <string>
#include <vector>

namespace prism::scalapack {

namespace {

// The real p?syrk_ / p?herk_ (PBLAS's C entry: 14 pointers and two string lengths).
using prk_fn = void (*)(const char*, const char*, const int*, const int*, const void*, const void*, const int*,
                        const int*, const int*, const void*, void*, const int*, const int*, const int*, std::size_t,
                        std::size_t);

struct rk_args {
  operation op;
  char uplo, trans;            // upper case; a real syrk's 'C' kept as given (checks), 'T' in the problem
  int n, k;
  int ia, ja, ic, jc;          // 0-based
  descriptor da, dc;
};

// Step 1: PBLAS's checks in pdsyrk_.c's order; returns INFO (0: fine).
int check(const rk_args& a, bool complex_type, const grid_place& at) {
  if (at.nprow == -1) return -(901 + CTXT_);
  int info = 0;
  const bool notran = a.trans == 'N';
  const bool trans_ok = notran || (a.op == operation::herk ? a.trans == 'C' : a.trans == 'T' || (!complex_type && a.trans == 'C'));
  if (a.uplo != 'U' && a.uplo != 'L') info = -1;
  else if (!trans_ok) info = -2;
  if (notran) check_matrix(at, a.n, 3, a.k, 4, a.ia, a.ja, a.da, 9, info);
  else check_matrix(at, a.k, 4, a.n, 3, a.ia, a.ja, a.da, 9, info);
  check_matrix(at, a.n, 3, a.n, 3, a.ic, a.jc, a.dc, 14, info);
  return info;
}

// The entry (raw: the 14 argument pointers as the caller passed them, for the backend).
template <scalar T, operation OP>
void prk(void* self, const void* const* raw) {
  using S = std::conditional_t<OP == operation::herk, real_type<T>, T>;
  const call_start t0;
  auto ip = [&](int n) { return *static_cast<const int*>(raw[n]); };
  const rk_args a{OP, upper(static_cast<const char*>(raw[0])), upper(static_cast<const char*>(raw[1])), ip(2), ip(3), ip(6) - 1,
                  ip(7) - 1, ip(11) - 1, ip(12) - 1, descriptor(static_cast<const int*>(raw[8])),
                  descriptor(static_cast<const int*>(raw[13]))};
  const T* A = static_cast<const T*>(raw[5]);
  T* C = static_cast<T*>(const_cast<void*>(raw[10]));
  const grid_place at(a.da.e[CTXT_]);
  const int info = check(a, is_complex(scalar_type_of<T>()), at);
  const std::string name = routine_name<T>(OP == operation::herk ? "HERK" : "SYRK"), symbol = symbol_of(name);
  const forward_fn forward = [&](void* real) {  // the caller's own 14 arguments
    auto i = [&](int n) { return static_cast<const int*>(raw[n]); };
    reinterpret_cast<prk_fn>(real)(static_cast<const char*>(raw[0]), static_cast<const char*>(raw[1]), i(2), i(3), raw[4], raw[5],
                                   i(6), i(7), i(8), raw[9], const_cast<void*>(raw[10]), i(11), i(12), i(13), 1, 1);
  };
  const grid* g = enter_grid(at, name, info, symbol, self, forward);
  if (g == nullptr) return;
  // As reference PBLAS, alpha and beta are read only past the checks and n = 0 (a caller
  // may pass null there, or values that differ): 0 in the agreement otherwise.
  const bool reads = info == 0 && a.n != 0;
  const T alpha = reads ? T(*static_cast<const S*>(raw[4])) : T(0), beta = reads ? T(*static_cast<const S*>(raw[9])) : T(0);
  std::vector<mpi::agreed> args{{"", 1, a.uplo}, {"", 2, a.trans}, {"", 3, a.n}, {"", 4, a.k}, {"", 5, mpi::real_bits(alpha)},
                                {"", 5, mpi::imag_bits(alpha)}, {"", 7, a.ia}, {"", 8, a.ja}, {"", 10, mpi::real_bits(beta)},
                                {"", 10, mpi::imag_bits(beta)}, {"", 12, a.ic}, {"", 13, a.jc}};
  add_descriptor_args(args, a.da, 9), add_descriptor_args(args, a.dc, 14);
  agreed_route agreed;
  if (stop_after_checks(*g, at.ctxt, name, info, args, agreed)) return;
  // (2) quick returns, as the reference.
  if (a.n == 0 || ((alpha == T(0) || a.k == 0) && beta == T(1))) return;
  // sub(A) as stored (n x k for 'N', else k x n) in op[0] (op[1], B's place, is A too: a
  // rank-k update's op(B) is op(A)^T), sub(C) in op[2].
  const bool na = a.trans == 'N';
  const ranks::operand_layout la = operand_of(a.da, na ? a.n : a.k, na ? a.k : a.n, a.ia, a.ja, *g);
  const ranks::caller_layout L{g->nprow, g->npcol, {la, la, operand_of(a.dc, a.n, a.n, a.ic, a.jc, *g)}};
  const std::string head = "routine=" + name + " uplo=" + a.uplo + " trans=" + a.trans + " n=" + std::to_string(a.n) +
                           " k=" + std::to_string(a.k) + " grid=" + std::to_string(g->nprow) + "x" + std::to_string(g->npcol);
  void* real = real_routine(symbol, self);
  // (2) alpha = 0 or k = 0 (beta times sub(C)'s triangle), (3)-(4): route_call
  const problem pr = rank_k_problem(scalar_type_of<T>(), a.op, a.uplo, a.trans, a.n, a.k);  // (a real syrk's 'C': 'T')
  const std::int64_t lld[3] = {a.da.e[LLD_], a.da.e[LLD_], a.dc.e[LLD_]};
  const std::string verbose = name + ' ' + a.uplo + a.trans + " n=" + std::to_string(a.n) + " k=" + std::to_string(a.k);
  route_call<T>({name, verbose, head}, pr, L, lld, *g, agreed, real, forward, alpha, A, nullptr, beta, C, t0);
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
