// lib/scalapack/psyrk.cpp — libprism_scalapack.so: pssyrk_ pdsyrk_ pcsyrk_ pzsyrk_ pcherk_
// pzherk_ with PBLAS's ABI (UPLO TRANS N K ALPHA A IA JA DESCA BETA C IC JC DESCC), run on
// prism's rank-k scheme in the caller's own block-cyclic layout, or forwarded to the real
// ScaLAPACK (docs/distributed.md "Behind ScaLAPACK's p?syrk_ and p?herk_").
//
// One call, on every process of the BLACS grid:
//  1. Arguments are checked as reference PBLAS checks them (pdsyrk_.c: UPLO -1, TRANS -2,
//     then PB_Cchkmat on sub(A), descriptor argument 9, and sub(C), argument 14), reported
//     through PB_Cabort and agreed over the grid as p?gemm_'s are (pblas.hpp,
//     stop_after_checks): C untouched, nobody waits.
//  2. n = 0, or (alpha = 0 or k = 0) with beta = 1, returns; alpha = 0 or k = 0 scales the
//     triangle (beta = 0: zeros, C unread; herk: the diagonal made real).
//  3. Route and run as p?gemm_ (route.cpp): grid rank 0 plans a triangle-block scheme for
//     the grid's processes (choose_rank_k_ranks) and fits it to the caller's layout (k as
//     is or grouped by sub(A)'s k distribution, plan ranks row- or column-major); prism
//     takes the call when the fit's modelled time is below PBLAS's (route_margin) and it
//     has route_min_flops. The rank level's one executor runs the scheme's schedule under
//     the caller's block-cyclic ownership: each process receives the parts of op(A)'s row
//     blocks its tasks read straight from their holders, computes its blocks of the
//     triangle, and sends its partials to the holders of sub(C)'s triangle, which add them,
//     in plan-rank order, to beta C (herk: the diagonal made real). No copy of sub(A) or
//     sub(C) is made; only the uplo triangle of sub(C) is written.
#include "../mpi/rank_exchange.hpp"
#include "pblas.hpp"

#include <complex>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace prism::scalapack {

namespace {

using namespace prism::ranks;
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

// sub(A) as stored (n x k for 'N', else k x n) in op[0] (op[1], B's place, is A too: a
// rank-k update's op(B) is op(A)^T), sub(C) in op[2].
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

// The call's signature: everything its fitted scheme depends on.
std::string key_of(const problem& pr, const rk_args& a, const caller_layout& L, const grid& g, route chosen, bool backend,
                   const context& ctx) {
  std::ostringstream key;
  key << char(pr.type) << int(a.op) << pr.uplo << pr.transa << ' ' << a.n << ' ' << a.k << ' ' << g.comm << ' ' << int(chosen)
      << backend << ' ' << ctx.describe();
  for (int o : {0, 2})
    for (const cyclic_dim* d : {&L.op[o].rows, &L.op[o].cols}) key << ' ' << d->offset << ':' << d->first << ':' << d->block << ':' << d->src;
  key << ' ' << a.da.e[LLD_] << ':' << a.dc.e[LLD_];
  return key.str();
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

// Steps 3-4 once the arguments are agreed and the quick returns are past.
template <scalar T>
void route_and_run(void* self, const rk_args& a, const grid& g, route chosen, T alpha, const T* A, T beta, T* C,
                   const void* const* raw, const call_start& t0) {
  const std::string name = routine_name<T>(a.op);
  auto real = reinterpret_cast<prk_fn>(real_routine(symbol_of(name).c_str(), self));
  const context ctx = call_context(g);
  const problem pr = problem_of<T>(a);
  const caller_layout L = layout_of(a, g);
  const std::int64_t lld[3] = {a.da.e[LLD_], a.da.e[LLD_], a.dc.e[LLD_]};
  const std::string head = "routine=" + name + " uplo=" + a.uplo + " trans=" + a.trans + " n=" + std::to_string(a.n) +
                           " k=" + std::to_string(a.k) + " grid=" + std::to_string(g.nprow) + "x" + std::to_string(g.npcol);
  const auto f = prepare(key_of(pr, a, L, g, chosen, real != nullptr, ctx), pr, L, lld, g, chosen, real != nullptr, ctx,
                         name + ' ' + a.uplo + a.trans + " n=" + std::to_string(a.n) + " k=" + std::to_string(a.k));
  run_result res;
  if (!f->use_prism && real == nullptr) {
    std::fprintf(stderr, "prism-scalapack: %s: prism cannot run this call (%s) and there is no ScaLAPACK %s to forward it to; ending the job (MPI_Abort)\n",
                 name.c_str(), f->reason.c_str(), symbol_of(name).c_str());
    MPI_Abort(g.comm, 1);
  } else if (!f->use_prism) {
    call_real(real, raw);
  } else {
    res = run_fitted<T>(*f, g, alpha, A, nullptr, beta, C, ctx, name);
  }
  if (stats_on()) print_stats(g, *f, head, res, t0, sizeof(T));
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
