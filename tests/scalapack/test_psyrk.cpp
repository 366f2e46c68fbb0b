// tests/scalapack/test_psyrk.cpp — prism's p?syrk_ / p?herk_ (libprism_scalapack) against
// Debian's ScaLAPACK in one MPI + BLACS program.
//
//   mpiexec -n NP test_psyrk [--cases=N] [--seed=S]      (ctest: test_psyrk_np1 .. _np6)
//
// Linked with prism_scalapack ahead of ScaLAPACK: the program's p?syrk_ / p?herk_ are
// prism's; the real ones come from the loaded ScaLAPACK by dlopen(RTLD_NOLOAD) + dlsym.
//
// Products: N random cases per grid (np 1..3: every grid pr x pc <= np; np 4: 2 x 2 and
// 1 x 4; np 6: 2 x 3, 3 x 2 and 1 x 6), all four types, syrk and herk (complex), uplo U/L,
// trans N/T (herk N/C; a real syrk's C too), offsets IA, JA, IC, JC >= 1, block sizes MB !=
// NB (1..5), RSRC / CSRC != 0, alpha and beta 0, 1, -1 and general, beta = 0 over NaN in
// sub(C). Each runs the real routine on one copy of C and prism's on another, and checks on
// every process, componentwise on sub(C)'s triangle:
//   |C_prism - C_scalapack| <= c (k + 4) eps (|alpha| S + |beta| |C0|),  S = sum_l |a_il| |a_jl|
// (c = 1 real, 2 complex, |x| = |re| + |im|), no NaN there, and every other element of C
// (sub(C)'s other triangle, outside sub(C), LLD padding) bitwise as before, A untouched.
//
// Invalid arguments: bad UPLO, TRANS (TRANS = 'T' for herk, 'C' for a complex syrk), N < 0,
// IA < 1, a descriptor's MB < 1 (A and C): prism reports through PB_Cabort exactly what the
// real routine reports (this program replaces PB_Cabort as PBLAS's testers do: it records
// the call and returns), once on every process, and C is untouched; DESCC's LLD too small
// on grid rank 0 alone: rank 0 alone reports it (-1411), the others return, nobody hangs;
// N differing on grid rank 0 alone: every process reports -3.
//
// The ctest entries at np >= 4 set PRISM_SMALL_FLOPS=0, so that every local product of the
// rank-k executor is planned as a large call's would be.
//
// fd 2 goes to a file per process: with PRISM_STATS=1 and PRISM_SCALAPACK_ROUTE=prism (the
// ctest entries set both), every "route=prism" line with a scheme must say exact=yes (each
// process received exactly the bytes predicted) and none may say route=backend.
//
// Exit status 0 and "test_psyrk: N cases passed" when everything holds, 1 otherwise.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "support/blacs.hpp"

#define PRK_PARAMS                                                                                         \
  const char *, const char *, const int *, const int *, const void *, const void *, const int *, const int *, \
      const int *, const void *, void *, const int *, const int *, const int *

extern "C" {
void pssyrk_(PRK_PARAMS);
void pdsyrk_(PRK_PARAMS);
void pcsyrk_(PRK_PARAMS);
void pzsyrk_(PRK_PARAMS);
void pcherk_(PRK_PARAMS);
void pzherk_(PRK_PARAMS);
void PB_Cabort(int ictxt, char* rout, int info);
}

using prk_fn = void (*)(PRK_PARAMS);

namespace {
bool g_catching = false;
int g_abort_info = 0;
long g_abort_calls = 0;
int g_rank = 0;
const char* g_current = "setup";  // the case running, for the abort message
}  // namespace

/// PBLAS's error handler, replaced as PBLAS's testers replace it: while catching (invalid
/// calls made on purpose) records the INFO and returns; otherwise ends the job.
extern "C" void PB_Cabort(int, char* rout, int info) {
  if (g_catching) {
    ++g_abort_calls;
    g_abort_info = info;
    return;
  }
  std::fprintf(stdout, "test_psyrk: rank %d: unexpected PB_Cabort(%s, %d) in %s\n", g_rank, rout, info, g_current);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

namespace {

std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Random integers, the same on every rank for the same seed.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() { return mix64(state += 0x632be59bd9b4e019ULL); }
  int range(int lo, int hi) { return lo + int(next() % std::uint64_t(hi - lo + 1)); }
  bool chance(int percent) { return range(0, 99) < percent; }
};

/// Uniform in [-1, 1) for element (i, j) of matrix `which`, part 0 real / 1 imaginary.
double uval(std::uint64_t cs, int which, int i, int j, int part) {
  const std::uint64_t h = mix64(cs ^ (std::uint64_t(which * 2 + part) << 56) ^ mix64((std::uint64_t(std::uint32_t(i)) << 32) | std::uint32_t(j)));
  return double(h >> 11) * 0x1.0p-52 - 1.0;
}

template <class T>
struct is_cplx : std::false_type {};
template <class R>
struct is_cplx<std::complex<R>> : std::true_type {};
template <class T>
struct real_t {
  using type = T;
};
template <class R>
struct real_t<std::complex<R>> {
  using type = R;
};

template <class T>
T elem(std::uint64_t cs, int which, int i, int j) {
  using R = typename real_t<T>::type;
  if constexpr (is_cplx<T>::value) return T(R(uval(cs, which, i, j, 0)), R(uval(cs, which, i, j, 1)));
  else return T(R(uval(cs, which, i, j, 0)));
}

template <class T>
long double abs1(T x) {
  if constexpr (is_cplx<T>::value) return std::fabs((long double)x.real()) + std::fabs((long double)x.imag());
  else return std::fabs((long double)x);
}

/// A quiet NaN of type T with payload `tag` (a bit pattern no computation produces).
template <class T>
T marker(std::uint32_t tag) {
  using R = typename real_t<T>::type;
  R r;
  if constexpr (std::is_same_v<R, double>) {
    const std::uint64_t bits = 0x7ff8000000000000ULL | tag;
    std::memcpy(&r, &bits, sizeof r);
  } else {
    const std::uint32_t bits = 0x7fc00000U | (tag & 0x3fffffU);
    std::memcpy(&r, &bits, sizeof r);
  }
  if constexpr (is_cplx<T>::value) return T(r, r);
  else return T(r);
}

/// One grid and this process's place in it.
struct Grid {
  int ctxt = -1, pr = 1, pc = 1, myrow = -1, mycol = -1;
  bool in = false;
};

Grid make_grid(int pr, int pc) {
  Grid g;
  g.pr = pr, g.pc = pc;
  Cblacs_get(-1, 0, &g.ctxt);
  Cblacs_gridinit(&g.ctxt, "R", pr, pc);
  int nr = -1, nc = -1;
  Cblacs_gridinfo(g.ctxt, &nr, &nc, &g.myrow, &g.mycol);
  g.in = g.ctxt >= 0 && nr == pr && nc == pc && g.myrow >= 0;
  return g;
}

/// Global index of local index l (blocks of nb over np processes, first on src), e.g.
/// nb = 3, np = 2, src = 1, p = 0: local 0..2 are global 3..5, local 3 is global 9.
int l2g(int l, int nb, int p, int src, int np) { return ((l / nb) * np + (p - src + np) % np) * nb + l % nb; }

/// A distributed matrix: descriptor, layout, local array (column-major, LLD).
template <class T>
struct Local {
  int desc[9] = {};
  int M = 0, N = 0, mb = 1, nb = 1, rsrc = 0, csrc = 0, locr = 0, locc = 0, lld = 1;
  std::vector<T> v;
  /// Calls f(gi, gj, value&) for every local element (LLD padding excluded).
  template <class F>
  void each(const Grid& g, F&& f) {
    for (int lj = 0; lj < locc; ++lj)
      for (int li = 0; li < locr; ++li)
        f(l2g(li, mb, g.myrow, rsrc, g.pr), l2g(lj, nb, g.mycol, csrc, g.pc), v[std::size_t(lj) * lld + li]);
  }
};

template <class T>
Local<T> make_local(const Grid& g, int M, int N, int mb, int nb, int rsrc, int csrc, int extra) {
  Local<T> x;
  x.M = M, x.N = N, x.mb = mb, x.nb = nb, x.rsrc = rsrc, x.csrc = csrc;
  x.locr = numroc_(&M, &mb, &g.myrow, &rsrc, &g.pr);
  x.locc = numroc_(&N, &nb, &g.mycol, &csrc, &g.pc);
  x.lld = std::max(1, x.locr) + extra;
  int info = 0;
  descinit_(x.desc, &M, &N, &mb, &nb, &rsrc, &csrc, &g.ctxt, &x.lld, &info);
  if (info != 0) std::printf("test_psyrk: rank %d: descinit_ info %d\n", g_rank, info), MPI_Abort(MPI_COMM_WORLD, 1);
  x.v.assign(std::size_t(x.lld) * std::size_t(std::max(1, x.locc)), marker<T>(0x0bad));
  return x;
}

bool same_bits(const void* a, const void* b, std::size_t n) { return std::memcmp(a, b, n) == 0; }

/// One call every process makes alike.
struct Case {
  std::uint64_t seed = 0;
  bool herk = false;
  char uplo = 'U', trans = 'N';
  int n = 0, k = 0, ia = 1, ja = 1, ic = 1, jc = 1;
  int mba = 1, nba = 1, mbc = 1, nbc = 1, rsa = 0, csa = 0, rsc = 0, csc = 0;
  double alpha[2] = {1, 0}, beta[2] = {0, 0};
};

template <class T>
T scalar(const double v[2], bool herk) {
  if constexpr (is_cplx<T>::value) return herk ? T(v[0]) : T(v[0], v[1]);
  else return T(v[0]);
}

// Runs one case on grid g (this process in it): returns the failures seen here.
template <class T>
int run_case(const Case& c, const Grid& g, prk_fn real, prk_fn mine, const char* name) {
  using R = typename real_t<T>::type;
  const bool notran = std::toupper(static_cast<unsigned char>(c.trans)) == 'N';
  const int ar = (notran ? c.n : c.k) + c.ia - 1 + 1, ac = (notran ? c.k : c.n) + c.ja - 1 + 2;
  Local<T> A = make_local<T>(g, std::max(1, ar), std::max(1, ac), c.mba, c.nba, c.rsa, c.csa, 1);
  Local<T> C = make_local<T>(g, c.n + c.ic - 1 + 2, c.n + c.jc - 1 + 1, c.mbc, c.nbc, c.rsc, c.csc, 2);
  A.each(g, [&](int i, int j, T& v) { v = elem<T>(c.seed, 0, i, j); });
  const bool beta0 = c.beta[0] == 0 && c.beta[1] == 0;
  auto in_tri = [&](int i, int j) {  // sub(C) triangle, 0-based global
    const int si = i - (c.ic - 1), sj = j - (c.jc - 1);
    if (si < 0 || sj < 0 || si >= c.n || sj >= c.n) return false;
    return c.uplo == 'U' ? si <= sj : si >= sj;
  };
  C.each(g, [&](int i, int j, T& v) { v = in_tri(i, j) ? (beta0 ? marker<T>(0xdead) : elem<T>(c.seed, 2, i, j)) : marker<T>(0xbeef); });
  const std::vector<T> clean = C.v;  // ScaLAPACK's input, and the bound's
  std::vector<T> Cr = C.v;
  // herk never reads the imaginary parts of sub(C)'s diagonal, as reference ?herk: every
  // other case gives prism NaN there (unless it only returns: alpha = 0 or k = 0, beta = 1).
  const bool quick = (c.alpha[0] == 0 || c.k == 0) && c.beta[0] == 1 && c.beta[1] == 0;
  if constexpr (is_cplx<T>::value)
    if (c.herk && !quick && c.seed % 2 == 0)
      C.each(g, [&](int i, int j, T& v) {
        if (in_tri(i, j) && i - (c.ic - 1) == j - (c.jc - 1)) v = T(v.real(), std::numeric_limits<R>::quiet_NaN());
      });
  const std::vector<T> A0 = A.v, C0 = C.v;
  const R ar_[2] = {R(c.alpha[0]), R(c.alpha[1])}, br_[2] = {R(c.beta[0]), R(c.beta[1])};
  const void* alpha = ar_;
  const void* beta = br_;  // complex scalars are {re, im}; herk's are real: only [0] is read
  real(&c.uplo, &c.trans, &c.n, &c.k, alpha, A.v.data(), &c.ia, &c.ja, A.desc, beta, Cr.data(), &c.ic, &c.jc, C.desc);
  mine(&c.uplo, &c.trans, &c.n, &c.k, alpha, A.v.data(), &c.ia, &c.ja, A.desc, beta, C.v.data(), &c.ic, &c.jc, C.desc);
  int fails = 0;
  if (!same_bits(A.v.data(), A0.data(), A0.size() * sizeof(T))) ++fails, std::printf("test_psyrk: %s: A changed\n", name);
  // The bound needs op(A)'s rows: gather sub(A) on every process (small cases).
  std::vector<T> full(std::size_t(A.M) * A.N, T(0));
  for (int j = 0; j < A.N; ++j)
    for (int i = 0; i < A.M; ++i) full[std::size_t(j) * A.M + i] = elem<T>(c.seed, 0, i, j);
  auto opa = [&](int i, int l) {  // op(A)(i, l), 0-based in sub(A)
    return notran ? full[std::size_t(c.ja - 1 + l) * A.M + (c.ia - 1 + i)] : full[std::size_t(c.ja - 1 + i) * A.M + (c.ia - 1 + l)];
  };
  const T al = scalar<T>(c.alpha, c.herk), be = scalar<T>(c.beta, c.herk);
  const long double eps = std::numeric_limits<R>::epsilon(), cf = is_cplx<T>::value ? 2 : 1;
  for (int lj = 0; lj < C.locc; ++lj)
    for (int li = 0; li < C.locr; ++li) {
      const std::size_t at = std::size_t(lj) * C.lld + li;
      const int i = l2g(li, C.mb, g.myrow, C.rsrc, g.pr), j = l2g(lj, C.nb, g.mycol, C.csrc, g.pc);
      if (!in_tri(i, j)) {
        if (!same_bits(&C.v[at], &C0[at], sizeof(T)) && fails++ < 3)
          std::printf("test_psyrk: %s: rank %d: C(%d,%d) outside the triangle changed\n", name, g_rank, i, j);
        continue;
      }
      long double S = 0;
      for (int l = 0; l < c.k; ++l) S += abs1(opa(i - c.ic + 1, l)) * abs1(opa(j - c.jc + 1, l));
      const long double bound = cf * (c.k + 4) * eps * (abs1(al) * S + (beta0 ? 0 : abs1(be) * abs1(clean[at]))) + 1e-30L;
      const long double d = abs1(T(C.v[at] - Cr[at]));
      if (!(d <= bound) && fails++ < 3)
        std::printf("test_psyrk: %s: rank %d: C(%d,%d) prism (%g,%g) scalapack (%g,%g) |diff| %Lg > %Lg\n", name, g_rank, i, j,
                    double(std::real(C.v[at])), double(std::imag(std::complex<R>(C.v[at]))), double(std::real(Cr[at])),
                    double(std::imag(std::complex<R>(Cr[at]))), d, bound);
    }
  return fails;
}

// Invalid arguments on grid g: prism reports the real routine's INFO, C untouched; then
// DESCC's LLD too small on grid rank 0 only: only rank 0 reports; then N differing on grid
// rank 0 only: every process reports -3.
int error_cases(const Grid& g, prk_fn real, prk_fn mine, bool herk, bool cplx, const char* name) {
  int fails = 0;
  Local<double> A = make_local<double>(g, 8, 8, 2, 3, 0, 0, 0), C = make_local<double>(g, 8, 8, 3, 2, 0, 0, 0);
  std::vector<std::complex<double>> Ab(A.v.size()), Cb(C.v.size(), {7, 7});
  const double one[2] = {1, 0};
  struct E {
    char uplo, trans;
    int n, ia, amb, cmb;
  };
  const E cases[] = {{'X', 'N', 4, 1, 2, 3}, {'U', herk ? 'T' : (cplx ? 'C' : 'X'), 4, 1, 2, 3}, {'L', 'N', -1, 1, 2, 3},
                     {'U', 'N', 4, 0, 2, 3}, {'U', 'N', 4, 1, 0, 3}, {'L', 'N', 4, 1, 2, 0}};
  for (const E& e : cases) {
    int da[9], dc[9];
    std::copy(A.desc, A.desc + 9, da), std::copy(C.desc, C.desc + 9, dc);
    da[4] = e.amb, dc[4] = e.cmb;
    const int k = 3, one_i = 1;
    const std::vector<std::complex<double>> before = Cb;
    g_catching = true, g_abort_calls = 0;
    real(&e.uplo, &e.trans, &e.n, &k, one, Ab.data(), &e.ia, &one_i, da, one, Cb.data(), &one_i, &one_i, dc);
    const int expect = g_abort_calls == 1 ? g_abort_info : 0;
    g_abort_calls = 0, g_abort_info = 0;
    mine(&e.uplo, &e.trans, &e.n, &k, one, Ab.data(), &e.ia, &one_i, da, one, Cb.data(), &one_i, &one_i, dc);
    g_catching = false;
    if (g_abort_calls != 1 || g_abort_info != expect || expect == 0 || Cb != before)
      ++fails, std::printf("test_psyrk: %s error case uplo %c trans %c n %d ia %d mb %d/%d: prism INFO %d (%ld calls), ScaLAPACK %d\n",
                           name, e.uplo, e.trans, e.n, e.ia, e.amb, e.cmb, g_abort_info, g_abort_calls, expect);
  }
  const bool first = g.myrow == 0 && g.mycol == 0;
  const int k = 3, one_i = 1;
  // Alpha and beta are read only past the checks and n > 0, as the reference reads them:
  // null with n = -1 (INFO -3 from both) and n = 0 (a quick return, no report); n = 0 with
  // alpha differing between processes (never read, so not compared: no report).
  for (int n : {-1, 0}) {
    const std::vector<std::complex<double>> before = Cb;
    g_catching = true, g_abort_calls = 0, g_abort_info = 0;
    real("U", "N", &n, &k, nullptr, Ab.data(), &one_i, &one_i, A.desc, nullptr, Cb.data(), &one_i, &one_i, C.desc);
    const int expect = g_abort_calls == 1 ? g_abort_info : 0;
    g_abort_calls = 0, g_abort_info = 0;
    mine("U", "N", &n, &k, nullptr, Ab.data(), &one_i, &one_i, A.desc, nullptr, Cb.data(), &one_i, &one_i, C.desc);
    g_catching = false;
    if (g_abort_calls != (n < 0 ? 1 : 0) || g_abort_info != expect || expect != (n < 0 ? -3 : 0) || Cb != before)
      ++fails, std::printf("test_psyrk: %s: n = %d, alpha and beta null: prism INFO %d (%ld calls), ScaLAPACK %d\n", name, n,
                           g_abort_info, g_abort_calls, expect);
  }
  {
    const int n = 0;
    const double other[2] = {first ? 2.0 : 1.0, 0};
    const std::vector<std::complex<double>> before = Cb;
    g_catching = true, g_abort_calls = 0, g_abort_info = 0;
    mine("U", "N", &n, &k, other, Ab.data(), &one_i, &one_i, A.desc, one, Cb.data(), &one_i, &one_i, C.desc);
    g_catching = false;
    if (g_abort_calls != 0 || Cb != before)
      ++fails, std::printf("test_psyrk: %s: n = 0, alpha differing: INFO %d (%ld calls)\n", name, g_abort_info, g_abort_calls);
  }
  // DESCC's LLD too small on grid rank 0 alone (a local check): rank 0 reports -(1400 + 11),
  // the others return without reporting, C untouched everywhere.
  {  // rank 0 holds C's first block, 3 rows and 2 columns: an LLD of 2 is too small there
    int dc[9];
    std::copy(C.desc, C.desc + 9, dc);
    if (first) dc[8] = 2;
    const int n = 8;
    const std::vector<std::complex<double>> before = Cb;
    g_catching = true, g_abort_calls = 0, g_abort_info = 0;
    mine("U", "N", &n, &k, one, Ab.data(), &one_i, &one_i, A.desc, one, Cb.data(), &one_i, &one_i, dc);
    g_catching = false;
    if (g_abort_calls != (first ? 1 : 0) || g_abort_info != (first ? -1411 : 0) || Cb != before)
      ++fails, std::printf("test_psyrk: %s: LLD too small on grid rank 0 only: rank %d reported INFO %d (%ld calls)\n", name,
                           g_rank, g_abort_info, g_abort_calls);
  }
  // N differs on grid rank 0 alone (every process's own arguments are valid).
  const int n = first ? 5 : 4;
  const std::vector<std::complex<double>> before = Cb;
  g_catching = true, g_abort_calls = 0, g_abort_info = 0;
  mine("U", "N", &n, &k, one, Ab.data(), &one_i, &one_i, A.desc, one, Cb.data(), &one_i, &one_i, C.desc);
  g_catching = false;
  if (g.pr * g.pc > 1 && (g_abort_calls != 1 || g_abort_info != -3 || Cb != before))
    ++fails, std::printf("test_psyrk: %s: differing N: INFO %d (%ld calls)\n", name, g_abort_info, g_abort_calls);
  return fails;
}

// A random case on a grid of pr x pc.
Case random_case(Rng& rng, bool herk, bool cplx, int pr, int pc) {
  Case c;
  c.seed = rng.next();
  c.herk = herk;
  c.uplo = rng.chance(50) ? 'U' : 'L';
  c.trans = rng.chance(50) ? 'N' : herk ? 'C' : (!cplx && rng.chance(30) ? 'C' : 'T');
  if (rng.chance(50)) c.trans = char(std::tolower(c.trans));
  c.n = rng.range(1, 24), c.k = rng.chance(5) ? 0 : rng.range(1, 20);
  if (rng.chance(15)) c.n = rng.range(30, 64), c.k = rng.range(40, 130);  // schemes over more ranks, k slices
  c.ia = rng.range(1, 4), c.ja = rng.range(1, 4), c.ic = rng.range(1, 4), c.jc = rng.range(1, 4);
  const int blocks[] = {1, 2, 3, 5, 4};
  c.mba = blocks[rng.range(0, 4)], c.nba = blocks[rng.range(0, 4)], c.mbc = blocks[rng.range(0, 4)], c.nbc = blocks[rng.range(0, 4)];
  if (c.mba == c.nba) c.nba = c.mba == 3 ? 5 : 3;
  if (c.mbc == c.nbc) c.nbc = c.mbc == 5 ? 3 : 5;
  c.rsa = rng.range(0, pr - 1), c.csa = rng.range(0, pc - 1), c.rsc = rng.range(0, pr - 1), c.csc = rng.range(0, pc - 1);
  const double vals[] = {0, 1, -1, 0.75};
  c.alpha[0] = rng.chance(10) ? 0 : vals[rng.range(1, 3)], c.alpha[1] = cplx && !herk ? 0.5 : 0;
  c.beta[0] = vals[rng.range(0, 3)], c.beta[1] = cplx && !herk && rng.chance(50) ? -0.25 : 0;
  return c;
}

// Reads this process's fd-2 file: every prism line with a scheme says exact=yes; no backend.
int check_stats(const char* path, bool expect) {
  if (!expect) return 0;
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  char line[4096];
  int fails = 0;
  long exact = 0, spread = 0, grouped = 0, column_major = 0;  // spread: schemes over more than one rank
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strstr(line, "route=backend") != nullptr) ++fails, std::printf("test_psyrk: backend line: %s", line);
    if (std::strstr(line, "exact=") != nullptr) {
      if (std::strstr(line, "exact=yes") == nullptr) ++fails, std::printf("test_psyrk: bytes differ: %s", line);
      else ++exact;
      if (std::strstr(line, "scheme=\"1\"") == nullptr) ++spread;
      if (std::strstr(line, "k by A") != nullptr) ++grouped;
      if (std::strstr(line, "column-major") != nullptr) ++column_major;
    }
  }
  std::fclose(f);
  if (g_rank == 0)
    std::printf("test_psyrk: %ld prism calls with received bytes == predicted, %ld over several ranks, %ld with k grouped, "
                "%ld with plan ranks column-major\n", exact, spread, grouped, column_major);
  return fails;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int np = 1;
  Cblacs_pinfo(&g_rank, &np);
  int cases = 30;
  std::uint64_t seed = 28;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--cases=", 8) == 0) cases = std::atoi(argv[i] + 8);
    if (std::strncmp(argv[i], "--seed=", 7) == 0) seed = std::strtoull(argv[i] + 7, nullptr, 10);
  }
  // fd 2 to a file per process (the stats lines), diagnostics go to stdout.
  char errpath[256];
  int run_id = int(getpid());  // rank 0's, so that the files of one run share it
  MPI_Bcast(&run_id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::snprintf(errpath, sizeof errpath, "/tmp/test_psyrk.%d.%d.err", run_id, g_rank);
  if (g_rank == 0) std::printf("test_psyrk: np %d; each process's stderr goes to /tmp/test_psyrk.%d.<rank>.err (kept if the run ends early)\n", np, run_id);
  const int fd = open(errpath, O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (fd >= 0) dup2(fd, 2), close(fd);
  const char* st = std::getenv("PRISM_STATS");
  const char* rt = std::getenv("PRISM_SCALAPACK_ROUTE");
  const bool stats = st != nullptr && std::strcmp(st, "1") == 0 && rt != nullptr && std::strcmp(rt, "prism") == 0;

  void* lib = dlopen("libscalapack-openmpi.so.2.2", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) std::printf("test_psyrk: FAIL: ScaLAPACK not loaded\n"), MPI_Abort(MPI_COMM_WORLD, 1);
  const char* names[6] = {"pssyrk_", "pdsyrk_", "pcsyrk_", "pzsyrk_", "pcherk_", "pzherk_"};
  const prk_fn mine[6] = {&pssyrk_, &pdsyrk_, &pcsyrk_, &pzsyrk_, &pcherk_, &pzherk_};
  prk_fn real[6];
  int fails = 0;
  for (int t = 0; t < 6; ++t) {
    real[t] = reinterpret_cast<prk_fn>(dlsym(lib, names[t]));
    if (real[t] == nullptr || real[t] == mine[t]) ++fails, std::printf("test_psyrk: FAIL: %s is not prism's\n", names[t]);
  }
  std::vector<std::pair<int, int>> shapes;
  if (np == 4) shapes = {{2, 2}, {1, 4}};
  else if (np == 6) shapes = {{2, 3}, {3, 2}, {1, 6}};
  else
    for (int pr = 1; pr <= np; ++pr)
      for (int pc = 1; pr * pc <= np; ++pc) shapes.push_back({pr, pc});
  Rng rng{seed};
  long done = 0;
  for (auto [pr, pc] : shapes) {
    const Grid g = make_grid(pr, pc);
    for (int i = 0; i < cases; ++i)
      for (int t = 0; t < 6; ++t) {
        const Case c = random_case(rng, t >= 4, t >= 2, pr, pc);
        if (!g.in) continue;
        char name[160];
        std::snprintf(name, sizeof name, "%s %dx%d %c%c n %d k %d ia %d ja %d ic %d jc %d blocks %d/%d %d/%d alpha %g beta %g", names[t],
                      pr, pc, c.uplo, c.trans, c.n, c.k, c.ia, c.ja, c.ic, c.jc, c.mba, c.nba, c.mbc, c.nbc, c.alpha[0], c.beta[0]);
        int f = 0;
        g_current = name;
        if (t == 0) f = run_case<float>(c, g, real[t], mine[t], name);
        else if (t == 1) f = run_case<double>(c, g, real[t], mine[t], name);
        else if (t == 2 || t == 4) f = run_case<std::complex<float>>(c, g, real[t], mine[t], name);
        else f = run_case<std::complex<double>>(c, g, real[t], mine[t], name);
        fails += f;
        ++done;
      }
    if (g.in) {
      fails += error_cases(g, real[1], mine[1], false, false, "pdsyrk_");
      fails += error_cases(g, real[3], mine[3], false, true, "pzsyrk_");
      fails += error_cases(g, real[5], mine[5], true, true, "pzherk_");
      Cblacs_gridexit(g.ctxt);
    }
  }
  std::fflush(stderr);
  fails += check_stats(errpath, stats);
  int total = 0;
  MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  long all = 0;
  MPI_Reduce(&done, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf(total == 0 ? "test_psyrk: %ld cases passed\n" : "test_psyrk: FAILED (%ld cases)\n", all);
  std::remove(errpath);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
