// tests/scalapack/test_pgemm.cpp — prism's ScaLAPACK-compatible p?gemm_ (libprism_scalapack)
// against Debian's ScaLAPACK (libscalapack-openmpi), in one MPI + BLACS program.
//
//   mpiexec -n NP test_pgemm [--cases=N] [--seed=S]      (ctest: test_pgemm_np1 .. _np8)
//
// The program is linked with prism_scalapack ahead of ScaLAPACK, so its calls to p?gemm_
// reach prism; the real routines are taken from the already loaded ScaLAPACK with
// dlopen(RTLD_NOLOAD) + dlsym, so both share the same BLACS state and contexts.
//
// Products: N random cases from a fixed seed, on every BLACS grid pr x pc <= NP, in row-major
// ("R"), column-major ("C") and a reversed user map (Cblacs_gridmap; a grid smaller than NP
// then leaves out world rank 0), all four types, trans N/T/C, block sizes 1/3/32 (others
// rarely) with MB != NB, nonzero RSRC/CSRC, submatrix offsets, LLD above the minimum, alpha
// and beta 0, 1 and general, beta = 0 over NaN in sub(C), NaN outside sub(C). Each case runs
// the real routine on one copy of C and prism's on another and checks, on every process of
// the grid, componentwise:
//   |C_prism - C_scalapack| <= c (k+4) eps (|alpha| S + |beta| |C0|),  S = sum_l |opA||opB|
// (c = 1 real, 2 complex, |x| = |re| + |im|; each side is within (k+2) u of the exact
// result, u = eps / 2), the same bound between ScaLAPACK and a serial long-double loop (which
// validates this harness), no NaN, and every element of C outside sub(C), the LLD padding
// rows included, and all of A and B bitwise unchanged.
//
// Invalid arguments (kErrorCases), on a grid of all NP processes and on one that leaves
// world rank 0 out. PBLAS reports an invalid argument through PB_Cabort, which this program
// replaces as PBLAS's own testers do (it records the call and returns instead of ending the
// job); both prism's routine and the real one must call it exactly as the reference does:
// once, on each process whose own arguments are invalid, with routine "PDGEMM" etc. and the
// INFO of PB_Cchkmat's numbering, C untouched. An error on some processes only is reported
// by those alone (each its own INFO) while the others return at once instead of waiting,
// and arguments that differ between processes (each valid where it is) are reported by
// every process with the first differing argument. The expected numbers are checked against
// the real routine on every run too, where all processes share the error.
//
// Options: --cases=N (1000), --seed=S, --list (print the cases and stop), --inject=KIND
// (corrupt prism's result on purpose to see the checks fire; see g_inject). The harness
// build (target test_pgemm_harness, PGEMM_WITH_PRISM=0) calls ScaLAPACK on both sides and
// runs only the reference half of the invalid-argument cases.
//
// With PRISM_STATS=1 and PRISM_SCALAPACK_ROUTE=prism (ctest sets both), fd 2 is read through
// a pipe while the cases run and the "prism-scalapack: route=..." lines are counted: none may
// say route=backend, and there is one route=prism line per call with M, N > 0 (alpha = 0
// and K = 0 included) and at most one per call.
//
// Exit status 0 and "test_pgemm: N cases passed" when everything holds, 1 otherwise.
#define OMPI_SKIP_MPICXX 1  // the C API only
#include <mpi.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
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
#include <thread>
#include <type_traits>
#include <vector>

#include "support/blacs.hpp"
#include "support/live_dups.hpp"

#ifndef PGEMM_WITH_PRISM
#define PGEMM_WITH_PRISM 0  // 0: harness check, p?gemm_ below are ScaLAPACK's own
#endif

// The 19 arguments of p?gemm_ (PBLAS C ABI, 32-bit int): TRANSA TRANSB M N K ALPHA A IA JA
// DESCA B IB JB DESCB BETA C IC JC DESCC. Arrays and scalars are void* so that one pointer
// type serves the four precisions.
#define PGEMM_PARAMS                                                                                \
  const char *, const char *, const int *, const int *, const int *, const void *, const void *,     \
      const int *, const int *, const int *, const void *, const int *, const int *, const int *,   \
      const void *, void *, const int *, const int *, const int *

extern "C" {
void psgemm_(PGEMM_PARAMS);
void pdgemm_(PGEMM_PARAMS);
void pcgemm_(PGEMM_PARAMS);
void pzgemm_(PGEMM_PARAMS);
// Defined below: PBLAS's error handler (PBLAS/SRC/PTOOLS/PB_Cabort.c), as PBLAS's testers
// replace it, and BLACS's abort.
void PB_Cabort(int ictxt, char* rout, int info);
void Cblacs_abort(int ictxt, int errornum);
}

using pgemm_fn = void (*)(PGEMM_PARAMS);

namespace {

// Where diagnostics go when fd 2 is redirected (the watchdog writes there), and the case
// that is running (for the watchdog's message).
int g_err_fd = 2;
char g_current[512] = "setup";
int g_rank = 0;

}  // namespace

namespace {
/// The PB_Cabort calls this process saw while `catching` (invalid calls made on purpose),
/// with the last one's routine and INFO.
struct AbortRecord {
  bool catching = false;
  long calls = 0;
  int info = 0;
  char rout[16] = {};
};
AbortRecord g_abort;
}  // namespace

/// PBLAS's error handler, replaced as PBLAS's testers replace it: while g_abort.catching it
/// records the call and returns (the routine then returns, C untouched); any other call is
/// an error nobody expected, which ends the job through Cblacs_abort as PBLAS's would.
extern "C" void PB_Cabort(int ictxt, char* rout, int info) {
  if (g_abort.catching) {
    ++g_abort.calls;
    g_abort.info = info;
    std::snprintf(g_abort.rout, sizeof g_abort.rout, "%s", rout != nullptr ? rout : "");
    return;
  }
  char msg[700];
  const int n = std::snprintf(msg, sizeof msg, "test_pgemm: rank %d: PB_Cabort(%d, %s, %d) in %s\n", g_rank, ictxt,
                              rout != nullptr ? rout : "?", info, g_current);
  (void)!write(g_err_fd, msg, std::size_t(std::max(0, std::min(n, int(sizeof msg) - 1))));
  Cblacs_abort(ictxt, info);
}

/// BLACS's abort, replaced by this program to name the case that was running; then the
/// real Cblacs_abort ends the job.
extern "C" void Cblacs_abort(int ictxt, int errornum) {
  char msg[700];
  const int n = std::snprintf(msg, sizeof msg, "test_pgemm: rank %d: Cblacs_abort(%d, %d) in %s\n", g_rank, ictxt,
                              errornum, g_current);
  (void)!write(g_err_fd, msg, std::size_t(std::max(0, std::min(n, int(sizeof msg) - 1))));
  using abort_fn = void (*)(int, int);
  auto next = reinterpret_cast<abort_fn>(dlsym(RTLD_NEXT, "Cblacs_abort"));
  if (next != nullptr) next(ictxt, errornum);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

namespace {

// ---------------------------------------------------------------------------------------
// Deterministic random numbers (the same on every rank)

/// SplitMix64 finaliser: a well-mixed 64-bit hash of x.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A sequence of random integers; every rank constructed with the same seed draws the same.
struct Rng {
  std::uint64_t state;
  /// The next 64 random bits.
  std::uint64_t next() { return mix64(state += 0x632be59bd9b4e019ULL); }
  /// Uniform integer in [lo, hi].
  int range(int lo, int hi) { return lo + int(next() % std::uint64_t(hi - lo + 1)); }
  /// True with probability percent / 100.
  bool chance(int percent) { return range(0, 99) < percent; }
  /// Uniform double in [-1, 1).
  double sym() { return double(next() >> 11) * 0x1.0p-52 - 1.0; }
  /// One element of a list.
  template <class V>
  auto pick(const V& v) {
    return v[std::size_t(range(0, int(std::size(v)) - 1))];
  }
};

/// Uniform value in [-1, 1) for element (i, j) (0-based global) of matrix `which` (0 A, 1 B,
/// 2 C) in the case with seed `cs`; part 0 is the real part, 1 the imaginary part.
double uval(std::uint64_t cs, int which, int i, int j, int part) {
  std::uint64_t h = mix64(cs ^ (std::uint64_t(which * 2 + part) << 56) ^
                          mix64((std::uint64_t(std::uint32_t(i)) << 32) | std::uint32_t(j)));
  return double(h >> 11) * 0x1.0p-52 - 1.0;
}

// ---------------------------------------------------------------------------------------
// Types

template <class T>
struct is_complex : std::false_type {};
template <class R>
struct is_complex<std::complex<R>> : std::true_type {};

/// Per-type facts: real type, letter, PBLAS name, and the routine's symbol.
template <class T>
struct TypeInfo;
template <>
struct TypeInfo<float> {
  using real = float;
  static constexpr char letter = 's';
  static constexpr const char* name = "PSGEMM";
  static constexpr const char* symbol = "psgemm_";
  static pgemm_fn linked() { return &psgemm_; }
};
template <>
struct TypeInfo<double> {
  using real = double;
  static constexpr char letter = 'd';
  static constexpr const char* name = "PDGEMM";
  static constexpr const char* symbol = "pdgemm_";
  static pgemm_fn linked() { return &pdgemm_; }
};
template <>
struct TypeInfo<std::complex<float>> {
  using real = float;
  static constexpr char letter = 'c';
  static constexpr const char* name = "PCGEMM";
  static constexpr const char* symbol = "pcgemm_";
  static pgemm_fn linked() { return &pcgemm_; }
};
template <>
struct TypeInfo<std::complex<double>> {
  using real = double;
  static constexpr char letter = 'z';
  static constexpr const char* name = "PZGEMM";
  static constexpr const char* symbol = "pzgemm_";
  static pgemm_fn linked() { return &pzgemm_; }
};

/// The value of type T for element (i, j) of matrix `which` in case `cs` (see uval).
template <class T>
T elem(std::uint64_t cs, int which, int i, int j) {
  using R = typename TypeInfo<T>::real;
  if constexpr (is_complex<T>::value)
    return T(R(uval(cs, which, i, j, 0)), R(uval(cs, which, i, j, 1)));
  else
    return T(uval(cs, which, i, j, 0));
}

/// |re| + |im| (|x| for a real x): the majorant used in the error bound.
template <class T>
long double abs1(T x) {
  if constexpr (is_complex<T>::value)
    return std::fabs((long double)x.real()) + std::fabs((long double)x.imag());
  else
    return std::fabs((long double)x);
}

/// x widened to complex<long double> (imaginary part 0 for a real x).
template <class T>
std::complex<long double> widen(T x) {
  if constexpr (is_complex<T>::value)
    return {(long double)x.real(), (long double)x.imag()};
  else
    return {(long double)x, 0.0L};
}

/// The conjugate of x (x itself for a real x).
template <class T>
T conj_if(T x) {
  if constexpr (is_complex<T>::value)
    return std::conj(x);
  else
    return x;
}

/// A bit pattern of type T that no computation produces: a quiet NaN with payload `tag`.
template <class T>
T marker(std::uint32_t tag) {
  using R = typename TypeInfo<T>::real;
  R r;
  if constexpr (std::is_same_v<R, double>) {
    std::uint64_t bits = 0x7ff8000000000000ULL | tag;
    std::memcpy(&r, &bits, sizeof r);
  } else {
    std::uint32_t bits = 0x7fc00000U | (tag & 0x3fffffU);
    std::memcpy(&r, &bits, sizeof r);
  }
  if constexpr (is_complex<T>::value)
    return T(r, r);
  else
    return T(r);
}

constexpr std::uint32_t kTagOutside = 0xbeef;  // C outside sub(C), in cases that ask for it
constexpr std::uint32_t kTagPadding = 0x0bad;  // rows lld > LOCr (never part of the matrix)

// ---------------------------------------------------------------------------------------
// Grids

/// One BLACS grid and this process's place in it (in == false: this process sits out).
struct Grid {
  int ctxt = -1;
  int pr = 0, pc = 0;
  char order = 'R';  // 'R' row-major, 'C' column-major (Cblacs_gridinit), 'M' reversed map
  bool in = false;
  int myrow = -1, mycol = -1;
};

/// Every grid pr x pc <= np in the three orders, or only the shapes in `only` (e.g.
/// {{4, 4}} from --grids 4x4); collective over all processes.
std::vector<Grid> make_grids(int np, const std::vector<std::pair<int, int>>& only = {}) {
  std::vector<Grid> grids;
  for (int pr = 1; pr <= np; ++pr)
    for (int pc = 1; pr * pc <= np; ++pc)
      for (char order : {'R', 'C', 'M'}) {
        if (!only.empty() && std::find(only.begin(), only.end(), std::make_pair(pr, pc)) == only.end()) continue;
        Grid g;
        g.pr = pr;
        g.pc = pc;
        g.order = order;
        Cblacs_get(-1, 0, &g.ctxt);  // the system context, which gridinit replaces
        if (order == 'M') {
          // usermap[r + c * ldumap] is the world rank at (r, c): the ranks in reverse, so a
          // grid smaller than np uses the last ranks. np = 8, 2 x 3: (0,0) 7, (0,1) 6, (0,2) 5,
          // (1,0) 4, (1,1) 3, (1,2) 2; ranks 0 and 1 sit out.
          std::vector<int> map(std::size_t(pr * pc));
          for (int r = 0; r < pr; ++r)
            for (int c = 0; c < pc; ++c) map[std::size_t(r + c * pr)] = np - 1 - (r * pc + c);
          Cblacs_gridmap(&g.ctxt, map.data(), pr, pr, pc);
        } else {
          const char ord[2] = {order, '\0'};
          Cblacs_gridinit(&g.ctxt, ord, pr, pc);
        }
        int nr = -1, nc = -1;
        Cblacs_gridinfo(g.ctxt, &nr, &nc, &g.myrow, &g.mycol);
        g.in = g.ctxt >= 0 && nr == pr && nc == pc && g.myrow >= 0 && g.myrow < pr && g.mycol >= 0 &&
               g.mycol < pc;
        grids.push_back(g);
      }
  return grids;
}

// ---------------------------------------------------------------------------------------
// Distributed matrices

/// Global index (0-based) of local index l along one dimension cut in blocks of nb over
/// nprocs processes, on process p, the first block on process src. Example: nb = 3,
/// nprocs = 2, src = 1, p = 0: global blocks 0, 1, 2, 3 live on 1, 0, 1, 0, so p's local
/// 0..2 are global 3..5 ((0*2 + 1)*3 + l) and local 3 is global 9 ((1*2 + 1)*3 + 0).
int l2g(int l, int nb, int p, int src, int nprocs) {
  return ((l / nb) * nprocs + (p - src + nprocs) % nprocs) * nb + l % nb;
}

/// LLD padding added on processes with myrow + mycol odd (main's second pass).
int g_lld_skew = 0;

/// A global matrix's shape and distribution, as one case chooses it.
struct Layout {
  int M = 0, N = 0;           // global size
  int mb = 1, nb = 1;         // block size
  int rsrc = 0, csrc = 0;     // process row / column of the first block
  int lld_extra = 0;          // LLD = max(1, LOCr) + lld_extra
};

/// This process's part of one distributed matrix: descriptor and column-major local array.
template <class T>
struct Local {
  int desc[11] = {};  // 9 used; 11 so that a bad DTYPE read as an 11-entry descriptor stays inside
  int locr = 0, locc = 0, lld = 1;
  std::vector<T> v;
};

/// The descriptor and an (unfilled) local array of `lay` on grid g for this process.
template <class T>
Local<T> make_local(const Grid& g, const Layout& lay) {
  Local<T> x;
  x.locr = numroc_(&lay.M, &lay.mb, &g.myrow, &lay.rsrc, &g.pr);
  x.locc = numroc_(&lay.N, &lay.nb, &g.mycol, &lay.csrc, &g.pc);
  x.lld = std::max(1, x.locr) + lay.lld_extra + ((g.myrow + g.mycol) % 2 == 1 ? g_lld_skew : 0);
  int info = 0;
  descinit_(x.desc, &lay.M, &lay.N, &lay.mb, &lay.nb, &lay.rsrc, &lay.csrc, &g.ctxt, &x.lld, &info);
  if (info != 0) {
    std::printf("test_pgemm: rank %d: descinit_ refused a layout this test made (info %d)\n", g_rank, info);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  x.v.assign(std::size_t(x.lld) * std::size_t(std::max(1, x.locc)), marker<T>(kTagPadding));
  return x;
}

/// Fills x's local elements with value(gi, gj) (0-based global); LLD padding keeps its marker.
template <class T, class F>
void fill(Local<T>& x, const Grid& g, const Layout& lay, F value) {
  for (int lj = 0; lj < x.locc; ++lj) {
    const int gj = l2g(lj, lay.nb, g.mycol, lay.csrc, g.pc);
    for (int li = 0; li < x.locr; ++li)
      x.v[std::size_t(lj) * x.lld + li] = value(l2g(li, lay.mb, g.myrow, lay.rsrc, g.pr), gj);
  }
}

/// True when a and b hold the same bits (NaN payloads included).
template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// ---------------------------------------------------------------------------------------
// Cases

/// One product: everything every rank needs to make the same call.
struct Case {
  int id = 0;
  std::uint64_t seed = 0;   // element values
  int grid = 0;             // index into the grid list
  char type = 'd';          // s d c z
  char ta = 'N', tb = 'N';
  int m = 0, n = 0, k = 0;
  double alpha[2] = {1, 0}, beta[2] = {0, 0};  // real, imaginary
  int ia = 1, ja = 1, ib = 1, jb = 1, ic = 1, jc = 1;
  Layout a, b, c;
  bool nan_sub = false;  // sub(C) is NaN on entry (only with beta = 0)
  bool nan_out = false;  // C outside sub(C) is NaN (payload kTagOutside) on entry
};

/// A one-line description of c on grid g, for failure messages.
std::string describe(const Case& c, const Grid& g) {
  char buf[640];
  auto lay = [](const Layout& l, int i, int j) {
    char s[160];
    std::snprintf(s, sizeof s, "%dx%d at (%d,%d) mb=%d nb=%d src=(%d,%d) lld+%d", l.M, l.N, i, j, l.mb, l.nb,
                  l.rsrc, l.csrc, l.lld_extra);
    return std::string(s);
  };
  std::snprintf(buf, sizeof buf,
                "case %d: p%cgemm grid %dx%d %s %c%c m=%d n=%d k=%d alpha=(%g,%g) beta=(%g,%g)%s%s "
                "A %s; B %s; C %s",
                c.id, c.type, g.pr, g.pc, g.order == 'R' ? "row-major" : g.order == 'C' ? "col-major" : "reversed-map",
                c.ta, c.tb, c.m, c.n, c.k, c.alpha[0], c.alpha[1], c.beta[0], c.beta[1],
                c.nan_sub ? " sub(C)=NaN" : "", c.nan_out ? " outside(C)=NaN" : "",
                lay(c.a, c.ia, c.ja).c_str(), lay(c.b, c.ib, c.jb).c_str(), lay(c.c, c.ic, c.jc).c_str());
  return buf;
}

/// A block size: 1, 3 or 32 mostly, sometimes another.
int pick_block(Rng& r) {
  static const int common[] = {1, 3, 32};
  static const int rare[] = {2, 5, 8, 16};
  return r.chance(80) ? r.pick(common) : r.pick(rare);
}

/// A dimension: 0 (8%), 1 (10%), else a prime up to 31, or up to 97 in 40% of the draws
/// that are not `small`.
int pick_dim(Rng& r, bool small) {
  static const int primes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97};
  const int p = r.range(0, 99);
  if (p < 8) return 0;
  if (p < 18) return 1;
  const int top = small ? 10 : int(std::size(primes)) - 1;  // primes[10] = 31
  return primes[r.range(0, p < 60 ? std::min(top, 10) : top)];
}

/// A submatrix offset (global row or column before it): within the first block or across.
int pick_offset(Rng& r) {
  static const int offs[] = {0, 0, 1, 2, 3, 5, 31, 33, 40};
  return r.pick(offs);
}

/// A random layout for an r x c submatrix at 1-based (i, j) of a bigger global matrix.
Layout pick_layout(Rng& rng, const Grid& g, int rows, int cols, int* i, int* j) {
  Layout l;
  *i = 1 + pick_offset(rng);
  *j = 1 + pick_offset(rng);
  // At least one row/column so that descinit_ accepts it (M = 0 is allowed only when the
  // submatrix is empty; keep the global matrix nonempty throughout).
  l.M = std::max(1, *i - 1 + rows + rng.range(0, 4));
  l.N = std::max(1, *j - 1 + cols + rng.range(0, 4));
  l.mb = pick_block(rng);
  l.nb = rng.chance(25) ? l.mb : pick_block(rng);
  l.rsrc = rng.range(0, g.pr - 1);
  l.csrc = rng.range(0, g.pc - 1);
  l.lld_extra = rng.chance(50) ? 0 : rng.range(1, 3);
  return l;
}

/// Case number id; every rank draws the same. Grids and types take turns so each appears.
Case make_case(std::uint64_t seed, int id, const std::vector<Grid>& grids) {
  Rng rng{mix64(seed ^ (0x1000ULL + std::uint64_t(id)))};
  Case c;
  c.id = id;
  c.seed = rng.next();
  c.grid = id % int(grids.size());
  static const char types[] = {'d', 'z', 's', 'c'};
  // Every (grid, type) pair once in the first 4 * grids cases: np = 8 has 60 grids, so
  // cases 0..59 are d on each grid, 60..119 z, 120..179 s, 180..239 c, then d again.
  c.type = types[(id / int(grids.size())) % 4];
  const Grid& g = grids[std::size_t(c.grid)];
  static const char trans[] = {'N', 'T', 'C'};
  c.ta = rng.pick(trans);
  c.tb = rng.pick(trans);
  // Half the cases keep every dimension <= 31; the others go up to 97.
  const bool small = rng.chance(50);
  c.m = pick_dim(rng, small);
  c.n = pick_dim(rng, small);
  c.k = pick_dim(rng, small);
  const bool cplx = c.type == 'c' || c.type == 'z';
  auto scalar = [&](double* s, int p0, int p1, int p1m) {
    const int p = rng.range(0, 99);
    s[1] = 0;
    if (p < p0) s[0] = 0;
    else if (p < p1) s[0] = 1;
    else if (p < p1m) s[0] = -1;
    else {
      s[0] = rng.sym() * 2;
      if (cplx) s[1] = rng.sym() * 2;
    }
  };
  scalar(c.alpha, 10, 35, 45);
  scalar(c.beta, 25, 50, 55);
  c.nan_sub = c.beta[0] == 0 && c.beta[1] == 0 && rng.chance(60);
  c.nan_out = rng.chance(30);
  // op(A) is m x k: A itself is m x k (N) or k x m (T, C); likewise B is k x n or n x k.
  c.a = c.ta == 'N' ? pick_layout(rng, g, c.m, c.k, &c.ia, &c.ja) : pick_layout(rng, g, c.k, c.m, &c.ia, &c.ja);
  c.b = c.tb == 'N' ? pick_layout(rng, g, c.k, c.n, &c.ib, &c.jb) : pick_layout(rng, g, c.n, c.k, &c.ib, &c.jb);
  c.c = pick_layout(rng, g, c.m, c.n, &c.ic, &c.jc);
  return c;
}

/// True when sub(C) is not empty (M, N > 0): prism prints a PRISM_STATS line for each such
/// call, alpha = 0 and K = 0 included (they scale C); for M or N = 0 it may print none.
bool nonempty(const Case& c) { return c.m > 0 && c.n > 0; }

/// Failure messages printed by this process so far (capped so a broken build stays readable).
int g_messages = 0;
constexpr int kMaxMessages = 8;

/// Prints one failure line for case c (up to kMaxMessages per process).
void report(const Case& c, const Grid& g, const char* what) {
  if (g_messages++ >= kMaxMessages) return;
  std::printf("test_pgemm: FAIL rank %d (grid %d,%d): %s | %s\n", g_rank, g.myrow, g.mycol, what,
              describe(c, g).c_str());
  std::fflush(stdout);
}

/// --inject=KIND (checks this program): the fault to put into prism's result on grid
/// process (0, 0) of every case, so that the run must fail: inside (sub(C) off by 1%),
/// nan (sub(C) NaN), outside (C outside sub(C) + 1), padding (an LLD padding row), ab (A).
const char* g_inject = nullptr;

/// Applies the --inject fault to the first element of x (or A) where it applies, if any.
template <class T, class F>
void inject(Local<T>& x, Local<T>& A, int locr, F in_sub, const Grid& g, const Layout& lay) {
  const std::string kind = g_inject;
  if (kind == "ab") {
    if (A.locr > 0 && A.locc > 0) A.v[0] += T(1);
    return;
  }
  for (int lj = 0; lj < x.locc; ++lj)
    for (int li = 0; li < x.lld; ++li) {
      T& v = x.v[std::size_t(lj) * x.lld + li];
      if (li >= locr) {
        if (kind == "padding") return void(v = T(0));
        continue;
      }
      const bool inside = in_sub(l2g(li, lay.mb, g.myrow, lay.rsrc, g.pr), l2g(lj, lay.nb, g.mycol, lay.csrc, g.pc));
      if (inside && kind == "inside") return void(v += T(0.01) * (T(1) + T(abs1(v))));
      if (inside && kind == "nan") return void(v = T(std::numeric_limits<typename TypeInfo<T>::real>::quiet_NaN()));
      if (!inside && kind == "outside") return void(v += T(1));
    }
}

/// Runs case c with type T on this process (which is in the grid); returns its failure count.
template <class T>
int run_case(const Case& c, const Grid& g, pgemm_fn real_fn, pgemm_fn prism_fn) {
  using R = typename TypeInfo<T>::real;
  Local<T> A = make_local<T>(g, c.a), B = make_local<T>(g, c.b), C0 = make_local<T>(g, c.c);
  fill(A, g, c.a, [&](int i, int j) { return elem<T>(c.seed, 0, i, j); });
  fill(B, g, c.b, [&](int i, int j) { return elem<T>(c.seed, 1, i, j); });
  // sub(C) is rows ic-1 .. ic+m-2 and columns jc-1 .. jc+n-2 (0-based global).
  auto in_sub = [&](int i, int j) { return i >= c.ic - 1 && i < c.ic - 1 + c.m && j >= c.jc - 1 && j < c.jc - 1 + c.n; };
  auto c0 = [&](int i, int j) {
    if (in_sub(i, j)) return c.nan_sub ? T(std::numeric_limits<R>::quiet_NaN()) : elem<T>(c.seed, 2, i, j);
    return c.nan_out ? marker<T>(kTagOutside) : elem<T>(c.seed, 2, i, j);
  };
  fill(C0, g, c.c, c0);
  const std::vector<T> a0 = A.v, b0 = B.v;
  Local<T> Cref = C0, Cprism = C0;
  T alpha, beta;
  if constexpr (is_complex<T>::value) {
    alpha = T(R(c.alpha[0]), R(c.alpha[1]));
    beta = T(R(c.beta[0]), R(c.beta[1]));
  } else {
    alpha = T(c.alpha[0]);
    beta = T(c.beta[0]);
  }
  real_fn(&c.ta, &c.tb, &c.m, &c.n, &c.k, &alpha, A.v.data(), &c.ia, &c.ja, A.desc, B.v.data(), &c.ib, &c.jb,
          B.desc, &beta, Cref.v.data(), &c.ic, &c.jc, Cref.desc);
  prism_fn(&c.ta, &c.tb, &c.m, &c.n, &c.k, &alpha, A.v.data(), &c.ia, &c.ja, A.desc, B.v.data(), &c.ib, &c.jb,
           B.desc, &beta, Cprism.v.data(), &c.ic, &c.jc, Cprism.desc);

  if (g_inject != nullptr && g.myrow == 0 && g.mycol == 0) inject(Cprism, A, C0.locr, in_sub, g, c.c);

  int fails = 0;
  char what[320];
  if (std::memcmp(A.v.data(), a0.data(), a0.size() * sizeof(T)) != 0 ||
      std::memcmp(B.v.data(), b0.data(), b0.size() * sizeof(T)) != 0) {
    report(c, g, "A or B changed (they are inputs)");
    ++fails;
  }
  // op(A) (m x k) and op(B) (k x n) of this case, from the generator; element (r, l) of op(A)
  // is A(ia-1+r, ja-1+l) for N, A(ia-1+l, ja-1+r) for T, and its conjugate for C.
  std::vector<T> opa(std::size_t(c.m) * c.k), opb(std::size_t(c.k) * c.n);
  for (int r = 0; r < c.m; ++r)
    for (int l = 0; l < c.k; ++l) {
      T v = c.ta == 'N' ? elem<T>(c.seed, 0, c.ia - 1 + r, c.ja - 1 + l) : elem<T>(c.seed, 0, c.ia - 1 + l, c.ja - 1 + r);
      opa[std::size_t(r) * c.k + l] = c.ta == 'C' ? conj_if(v) : v;
    }
  for (int l = 0; l < c.k; ++l)
    for (int s = 0; s < c.n; ++s) {
      T v = c.tb == 'N' ? elem<T>(c.seed, 1, c.ib - 1 + l, c.jb - 1 + s) : elem<T>(c.seed, 1, c.ib - 1 + s, c.jb - 1 + l);
      opb[std::size_t(l) * c.n + s] = c.tb == 'C' ? conj_if(v) : v;
    }
  const long double eps = std::numeric_limits<R>::epsilon();
  const long double cfac = is_complex<T>::value ? 2 : 1;
  const bool beta0 = c.beta[0] == 0 && c.beta[1] == 0;
  const std::complex<long double> al = widen(alpha), be = widen(beta);

  for (int lj = 0; lj < C0.locc; ++lj) {
    const int gj = l2g(lj, c.c.nb, g.mycol, c.c.csrc, g.pc);
    for (int li = 0; li < C0.lld; ++li) {
      const std::size_t at = std::size_t(lj) * C0.lld + li;
      const T& x0 = C0.v[at];
      const T& xr = Cref.v[at];
      const T& xp = Cprism.v[at];
      if (li >= C0.locr) {  // LLD padding: not part of the matrix
        if (!same_bits(xr, x0) || !same_bits(xp, x0)) {
          std::snprintf(what, sizeof what, "local padding row %d col %d (lld %d > LOCr %d) changed (%s)", li, lj,
                        C0.lld, C0.locr, same_bits(xp, x0) ? "by ScaLAPACK" : "by prism");
          report(c, g, what);
          ++fails;
        }
        continue;
      }
      const int gi = l2g(li, c.c.mb, g.myrow, c.c.rsrc, g.pr);
      if (!in_sub(gi, gj)) {
        if (!same_bits(xr, x0) || !same_bits(xp, x0)) {
          std::snprintf(what, sizeof what, "C(%d,%d) outside sub(C) changed (%s)", gi + 1, gj + 1,
                        same_bits(xp, x0) ? "by ScaLAPACK" : "by prism");
          report(c, g, what);
          ++fails;
        }
        continue;
      }
      // Serial reference and the componentwise bound for this element.
      const int r = gi - (c.ic - 1), s = gj - (c.jc - 1);
      std::complex<long double> sum = 0;
      long double mag = 0;
      for (int l = 0; l < c.k; ++l) {
        const T pa = opa[std::size_t(r) * c.k + l], pb = opb[std::size_t(l) * c.n + s];
        sum += widen(pa) * widen(pb);
        mag += abs1(pa) * abs1(pb);
      }
      std::complex<long double> ref = al * sum;
      long double scale = abs1(alpha) * mag;
      if (!beta0) {
        ref += be * widen(x0);
        scale += abs1(beta) * abs1(x0);
      }
      const long double bound = cfac * (c.k + 4) * eps * scale;
      const std::complex<long double> wr = widen(xr), wp = widen(xp);
      auto off = [&](std::complex<long double> u, std::complex<long double> v) {
        // "!(d <= bound)" is also true for NaN.
        return !(std::fabs(u.real() - v.real()) <= bound) || !(std::fabs(u.imag() - v.imag()) <= bound);
      };
      if (off(wp, wr)) {
        std::snprintf(what, sizeof what, "C(%d,%d): prism (%.9Lg,%.9Lg) vs ScaLAPACK (%.9Lg,%.9Lg), bound %.3Lg",
                      gi + 1, gj + 1, wp.real(), wp.imag(), wr.real(), wr.imag(), bound);
        report(c, g, what);
        ++fails;
      }
      if (off(wr, ref)) {  // the harness itself: ScaLAPACK against the serial loop
        std::snprintf(what, sizeof what,
                      "C(%d,%d): ScaLAPACK (%.9Lg,%.9Lg) vs serial loop (%.9Lg,%.9Lg), bound %.3Lg (harness?)",
                      gi + 1, gj + 1, wr.real(), wr.imag(), ref.real(), ref.imag(), bound);
        report(c, g, what);
        ++fails;
      }
    }
  }
  return fails;
}

// ---------------------------------------------------------------------------------------
// Invalid arguments

/// A valid double call on grid g (16 x 16 everywhere, 2 x 2 blocks, sources (0, 0), LLD =
/// LOCr) that an error case then breaks. 16 / 2 = 8 blocks per dimension, so with at most 8
/// process rows or columns every process holds at least 2 rows and 2 columns of each matrix
/// (an LLD of LOCr - 1 >= 1 is then too small and is detected: PB_Cchkmat skips processes
/// without columns).
struct BadCall {
  char ta = 'N', tb = 'N';
  int m = 16, n = 16, k = 16;
  double alpha = 1.5, beta = 0.5;
  bool null_scalars = false;  // alpha and beta passed as null pointers
  int ia = 1, ja = 1, ib = 1, jb = 1, ic = 1, jc = 1;
  Local<double> A, B, C;
};

/// The valid call BadCall describes, on grid g.
BadCall base_call(const Grid& g) {
  BadCall b;
  Layout l;
  l.M = l.N = 16;
  l.mb = l.nb = 2;
  b.A = make_local<double>(g, l);
  b.B = make_local<double>(g, l);
  b.C = make_local<double>(g, l);
  fill(b.A, g, l, [](int i, int j) { return double(i - j); });
  fill(b.B, g, l, [](int i, int j) { return double(i + j); });
  fill(b.C, g, l, [](int i, int j) { return double(100 * i + j); });
  return b;
}

/// Fortran descriptor entries (0-based positions in the 9-entry array).
enum { DTYPE = 0, CTXT = 1, DM = 2, DN = 3, MB = 4, NB = 5, RSRC = 6, CSRC = 7, LLD = 8 };

/// One invalid call: how to break the base call on this process, and the INFO expected.
struct ErrorCase {
  const char* what;
  int expected;  // the INFO every process reports (unless `only` says otherwise)
  // uniform: every process has the same local error, so the real routine runs too and must
  // report `expected` (checks this list against the reference). Otherwise the processes
  // disagree (an error on some only, or arguments that differ): the reference would hang
  // or abort, so only prism runs.
  bool uniform;
  int min_procs;  // the case needs a grid with at least this many processes
  // Breaks b for the process with grid rank `me` of `count`.
  void (*breaks)(BadCall& b, const Grid& g, int me, int count, int other_ctxt);
  // An error on some processes only: the INFO process `me` of `count` reports, its own as
  // PBLAS computes it (0: its checks pass, it reports nothing and returns). nullptr: every
  // process reports `expected`.
  int (*only)(int me, int count) = nullptr;
};

// Expected INFO, from the reference PBLAS (PBLAS/SRC/pdgemm_.c, PTOOLS/PB_Cchkmat.c):
//  - a scalar argument at position i: -i (transa 1, transb 2, m 3, n 4, k 5, alpha 6, ia 8,
//    ja 9, ib 12, jb 13, ic 17, jc 18; ia + m - 1 > M_A is reported on ia);
//  - a descriptor entry: -(100 * position + e + 1), e the entry in PBLAS's internal 11-entry
//    descriptor: DTYPE 0, CTXT 1, M 2, N 3, IMB 4, INB 5, MB 6, NB 7, RSRC 8, CSRC 9, LLD 10.
//    A 9-entry descriptor's MB becomes IMB and MB, so MB < 1 is first seen as IMB: entry 5.
//    Example: DESCB (position 14) with RSRC = nprow: -(1400 + 8 + 1) = -1409.
//  - an invalid DESCA context (Cblacs_gridinfo gives nprow = -1): -(1001 + CTXT) = -1002;
//  - several errors: the smallest position wins (PB_Cchkmat keeps the minimum, with scalar
//    positions scaled by 100: n < 0 (400) beats DESCA MB = 0 (1005): -4).
// The uniform ones are checked against the real routine on every run (see PB_Cabort).
const ErrorCase kErrorCases[] = {
    {"transa = 'X'", -1, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.ta = 'X'; }},
    {"transb = 'q'", -2, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.tb = 'q'; }},
    {"transa = 'X' and m = -1 (first position wins)", -1, true, 1,
     [](BadCall& b, const Grid&, int, int, int) { b.ta = 'X'; b.m = -1; }},
    {"m = -1", -3, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.m = -1; }},
    {"n = -2", -4, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.n = -2; }},
    {"k = -1", -5, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.k = -1; }},
    {"DESCA DTYPE = 7", -1001, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.A.desc[DTYPE] = 7; }},
    {"DESCA CTXT = -1 (no such context)", -1002, true, 1,
     [](BadCall& b, const Grid&, int, int, int) { b.A.desc[CTXT] = -1; }},
    {"DESCA M = 0 with m > 0", -1003, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.A.desc[DM] = 0; }},
    {"DESCA MB = 0", -1005, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.A.desc[MB] = 0; }},
    {"DESCB NB = 0", -1406, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.B.desc[NB] = 0; }},
    {"DESCB RSRC = nprow", -1409, true, 1, [](BadCall& b, const Grid& g, int, int, int) { b.B.desc[RSRC] = g.pr; }},
    {"DESCC CSRC = -2", -1910, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.C.desc[CSRC] = -2; }},
    {"DESCC CSRC = npcol", -1910, true, 1, [](BadCall& b, const Grid& g, int, int, int) { b.C.desc[CSRC] = g.pc; }},
    {"DESCB CTXT = another grid's context", -1402, true, 1,
     [](BadCall& b, const Grid&, int, int, int other) { b.B.desc[CTXT] = other; }},
    {"DESCC DTYPE = 7", -1901, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.C.desc[DTYPE] = 7; }},
    {"ia = 0", -8, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.ia = 0; }},
    {"ia + m - 1 > M_A (ia = 2)", -8, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.ia = 2; }},
    {"ja + k - 1 > N_A (ja = 3)", -9, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.ja = 3; }},
    {"jb + n - 1 > N_B (jb = 2)", -13, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.jb = 2; }},
    {"jc + n - 1 > N_C (jc = 17)", -18, true, 1, [](BadCall& b, const Grid&, int, int, int) { b.jc = 17; }},
    // Alpha and beta are read only past the checks and m, n > 0, as the reference reads them.
    {"m = -1 with alpha and beta null", -3, true, 1,
     [](BadCall& b, const Grid&, int, int, int) { b.m = -1; b.null_scalars = true; }},
    {"m = 0 with alpha and beta null (a quick return)", 0, true, 1,
     [](BadCall& b, const Grid&, int, int, int) { b.m = 0; b.null_scalars = true; }},
    {"n = -1 and DESCA MB = 0 (smallest position wins)", -4, true, 1,
     [](BadCall& b, const Grid&, int, int, int) { b.n = -1; b.A.desc[MB] = 0; }},
    {"DESCA LLD = LOCr - 1 on every process", -1011, true, 1,
     [](BadCall& b, const Grid&, int, int, int) { b.A.desc[LLD] = b.A.locr - 1; }},
    // An error on some processes only (LLD is local): those report it, as PBLAS does, and
    // the others return without reporting, C untouched, instead of waiting for them.
    {"DESCA LLD = LOCr - 1 on the last grid process only", 0, false, 1,
     [](BadCall& b, const Grid&, int me, int count, int) {
       if (me == count - 1) b.A.desc[LLD] = b.A.locr - 1;
     },
     [](int me, int count) { return me == count - 1 ? -1011 : 0; }},
    {"DESCC LLD = LOCr - 1 on the first grid process only", 0, false, 1,
     [](BadCall& b, const Grid&, int me, int, int) {
       if (me == 0) b.C.desc[LLD] = b.C.locr - 1;
     },
     [](int me, int) { return me == 0 ? -1911 : 0; }},
    // Different errors on different processes: each reports its own.
    {"DESCC LLD too small on grid rank 0, DESCA LLD too small on the last", 0, false, 2,
     [](BadCall& b, const Grid&, int me, int count, int) {
       if (me == 0) b.C.desc[LLD] = b.C.locr - 1;
       if (me == count - 1) b.A.desc[LLD] = b.A.locr - 1;
     },
     [](int me, int count) { return me == 0 ? -1911 : me == count - 1 ? -1011 : 0; }},
    // Arguments that differ between processes (each valid where it is): reported everywhere
    // with the argument's position.
    {"m = 15 on grid rank 1 only (16 elsewhere)", -3, false, 2,
     [](BadCall& b, const Grid&, int me, int, int) {
       if (me == 1) b.m = 15;
     }},
    {"k = 15 on the last grid rank only", -5, false, 2,
     [](BadCall& b, const Grid&, int me, int count, int) {
       if (me == count - 1) b.k = 15;
     }},
    {"alpha = 2 on grid rank 0 only (1.5 elsewhere)", -6, false, 2,
     [](BadCall& b, const Grid&, int me, int, int) {
       if (me == 0) b.alpha = 2;
     }},
    {"n = 0 and alpha = 2 on grid rank 0 only (never read: a quick return)", 0, false, 2,
     [](BadCall& b, const Grid&, int me, int, int) {
       b.n = 0;
       if (me == 0) b.alpha = 2;
     }},
    {"jc = 2 on the last grid rank only (1 elsewhere; m = n = 15, so both are in bounds)", -18, false, 2,
     [](BadCall& b, const Grid&, int me, int count, int) {
       b.m = b.n = 15;
       if (me == count - 1) b.jc = 2;
     }},
};

/// This program's p?gemm_ for type letter t (prism's in a prism build).
pgemm_fn linked_fn(char t) {
  switch (t) {
    case 's': return TypeInfo<float>::linked();
    case 'c': return TypeInfo<std::complex<float>>::linked();
    case 'z': return TypeInfo<std::complex<double>>::linked();
    default: return TypeInfo<double>::linked();
  }
}

/// Runs the error cases on grid g (its processes call; the others only count); returns this
/// process's failures. other_ctxt is a second valid context on the same processes; real
/// holds ScaLAPACK's routines (s d c z).
int run_error_cases(const Grid& g, int other_ctxt, const pgemm_fn real[4], int* checks) {
  int fails = 0;
  const int count = g.pr * g.pc;
  // BLACS's own grid rank: Cblacs_gridmap makes it myrow * npcol + mycol whatever the map.
  const int me = g.myrow * g.pc + g.mycol;
  auto one = [&](const char* what, int expected, bool uniform, char type, auto&& breaks) {
    if (!uniform && !PGEMM_WITH_PRISM) return;  // nothing to call: the reference would hang
    ++*checks;
    if (!g.in) return;
    std::snprintf(g_current, sizeof g_current, "error case '%s' (p%cgemm_) on grid %dx%d %c", what, type, g.pr, g.pc,
                  g.order);
    alarm(30);
    char expected_name[8] = "PXGEMM";
    expected_name[1] = char(std::toupper(type));
    const int t = type == 's' ? 0 : type == 'd' ? 1 : type == 'c' ? 2 : 3;
    char msg[400] = "";
    auto fail = [&](const char* side) {
      ++fails;
      if (g_messages++ < kMaxMessages) {
        std::printf("test_pgemm: FAIL rank %d (grid %d,%d of %dx%d %c): error case '%s' (p%cgemm_, %s): %s\n", g_rank,
                    g.myrow, g.mycol, g.pr, g.pc, g.order, what, type, side, msg);
        std::fflush(stdout);
      }
    };
    // The base call is double; for the other types the arrays are never read (the call must
    // return before touching them), so the same buffers serve.
    auto call = [&](pgemm_fn fn, BadCall& b) {
      fn(&b.ta, &b.tb, &b.m, &b.n, &b.k, b.null_scalars ? nullptr : &b.alpha, b.A.v.data(), &b.ia, &b.ja, b.A.desc,
         b.B.v.data(), &b.ib, &b.jb, b.B.desc, b.null_scalars ? nullptr : &b.beta, b.C.v.data(), &b.ic, &b.jc, b.C.desc);
    };
    // One side's call: PB_Cabort (this program's) must be called once with (routine,
    // expected) on this process, or not at all when expected is 0; C untouched either way.
    auto check = [&](pgemm_fn fn, const char* side) {
      BadCall b = base_call(g);
      breaks(b);
      const std::vector<double> c0 = b.C.v;
      const long before = g_abort.calls;
      g_abort.info = 0;
      g_abort.rout[0] = '\0';
      msg[0] = '\0';
      // PB_Cwarn's messages for these deliberate errors (the reference's) go nowhere.
      std::fflush(stderr);
      const int saved = dup(2), null = open("/dev/null", O_WRONLY);
      if (null >= 0) dup2(null, 2);
      g_abort.catching = true;
      call(fn, b);
      g_abort.catching = false;
      std::fflush(stderr);
      if (saved >= 0) dup2(saved, 2);
      if (saved >= 0) close(saved);
      if (null >= 0) close(null);
      const long calls = g_abort.calls - before;
      if (expected != 0 && calls != 1)
        std::snprintf(msg, sizeof msg, "PB_Cabort called %ld times, not once (is this program's PB_Cabort the one used?)",
                      calls);
      else if (expected == 0 && calls != 0)
        std::snprintf(msg, sizeof msg, "PB_Cabort(\"%s\", %d) on a process whose arguments are valid", g_abort.rout,
                      g_abort.info);
      else if (expected != 0 && (g_abort.info != expected || std::strcmp(g_abort.rout, expected_name) != 0))
        std::snprintf(msg, sizeof msg, "PB_Cabort(\"%s\", %d), expected (\"%s\", %d)%s", g_abort.rout, g_abort.info,
                      expected_name, expected, fn == real[t] ? " (fix kErrorCases)" : "");
      else if (std::memcmp(b.C.v.data(), c0.data(), c0.size() * sizeof(double)) != 0)
        std::snprintf(msg, sizeof msg, "C changed by an invalid call");
      if (msg[0] != '\0') fail(side);
    };
    if (uniform) check(real[t], "ScaLAPACK");  // the reference: PB_Cabort (this program's), then return
    if (PGEMM_WITH_PRISM) check(linked_fn(type), "prism");
  };
  for (const ErrorCase& e : kErrorCases) {
    if (count < e.min_procs) continue;
    const int expected = e.only != nullptr ? e.only(me, count) : e.expected;
    one(e.what, expected, e.uniform, 'd', [&](BadCall& b) { e.breaks(b, g, me, count, other_ctxt); });
  }
  // The other precisions name themselves.
  for (char t : {'s', 'c', 'z'}) one("transa = 'X'", -1, true, t, [](BadCall& b) { b.ta = 'X'; });
  return fails;
}

// ---------------------------------------------------------------------------------------
// Counting PRISM_STATS lines on stderr

/// Reads this process's fd 2 through a pipe while the cases run: counts the
/// "prism-scalapack: route=prism|backend" lines (keeping the first of each as a sample) and
/// passes every other line through to the real stderr.
class StatsTap {
 public:
  /// Starts reading fd 2; false (and nothing redirected) when a pipe cannot be made.
  bool start() {
    int p[2];
    std::fflush(stderr);
    if (pipe(p) != 0) return false;
    saved_ = dup(2);
    dup2(p[1], 2);
    close(p[1]);
    rd_ = p[0];
    g_err_fd = saved_;
    reader_ = std::thread([this] { loop(); });
    return true;
  }
  /// Restores fd 2 and waits until everything written has been read.
  void stop() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);  // closes the pipe's last write end: the reader sees EOF
    reader_.join();
    close(rd_);
    close(saved_);
    saved_ = -1;
    g_err_fd = 2;
  }
  long prism = 0, backend = 0, off_model = 0;  // off_model: lines whose counted bytes are not the predicted
  long over_memory = 0;                         // lines whose measured memory exceeds the predicted
  std::string first_prism, first_backend, first_off_model, first_over_memory;

 private:
  /// The reader thread: splits the pipe's bytes into lines and sorts them.
  void loop() {
    std::string line;
    char buf[4096];
    for (;;) {
      const ssize_t n = read(rd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      for (ssize_t i = 0; i < n; ++i) {
        line += buf[i];
        if (buf[i] == '\n') take(line), line.clear();
      }
    }
    if (!line.empty()) take(line);
  }
  /// One line: counted if it is a stats line, passed through otherwise.
  void take(const std::string& line) {
    if (line.rfind("prism-scalapack: route=prism", 0) == 0) {
      if (prism++ == 0) first_prism = line;
      // The bytes the busiest process received, as counted, against the model's.
      const auto field = [&](const char* name) {
        const std::size_t at = line.find(name);
        if (at == std::string::npos) return std::string();
        const std::size_t from = at + std::strlen(name);
        return line.substr(from, line.find(' ', from) - from);
      };
      const std::string got = field(" recv_max_MB="), want = field(" pred_max_MB=");
      if (!want.empty() && got != want && off_model++ == 0) first_off_model = line;
      // prism's own memory on the busiest process, as allocated, against the fit's prediction.
      const std::string mem = field(" mem_max_MB="), pred_mem = field(" pred_mem_max_MB=");
      if (!pred_mem.empty() && (mem.empty() || std::strtod(mem.c_str(), nullptr) > std::strtod(pred_mem.c_str(), nullptr)) &&
          over_memory++ == 0)
        first_over_memory = line;
    } else if (line.rfind("prism-scalapack: route=backend", 0) == 0) {
      if (backend++ == 0) first_backend = line;
    } else {
      (void)!write(saved_, line.data(), line.size());
    }
  }
  int saved_ = -1, rd_ = -1;
  std::thread reader_;
};

/// SIGALRM: a case ran too long (a hang); says which and ends the process, and so the job.
void on_alarm(int) {
  char msg[700];
  const int n = std::snprintf(msg, sizeof msg, "test_pgemm: rank %d: no progress for 30 s in %s (hang?)\n", g_rank,
                              g_current);
  (void)!write(g_err_fd, msg, size_t(std::max(0, std::min(n, int(sizeof msg) - 1))));
  _exit(1);
}

/// Value of --name=VALUE in argv, or def.
long long arg_value(int argc, char** argv, const char* name, long long def) {
  const std::size_t len = std::strlen(name);
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], name, len) == 0 && argv[i][len] == '=') return std::strtoll(argv[i] + len + 1, nullptr, 0);
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  // The route must be in the environment before prism's library first reads it; ctest sets
  // it too, and an explicit setting (e.g. auto, to try that route) is kept.
  setenv("PRISM_SCALAPACK_ROUTE", "prism", 0);
  MPI_Init(&argc, &argv);
  int np = 0;
  Cblacs_pinfo(&g_rank, &np);
  const int ncases = int(arg_value(argc, argv, "--cases", 1000));
  const std::uint64_t seed = std::uint64_t(arg_value(argc, argv, "--seed", 0x5ca1ab1e));
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--inject=", 9) == 0) g_inject = argv[i] + 9;
  signal(SIGALRM, on_alarm);
  const double t0 = MPI_Wtime();
  int fails = 0;

  // The real routines, from the ScaLAPACK this program already loaded.
  void* lib = dlopen("libscalapack-openmpi.so.2.2", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) {
    std::printf("test_pgemm: FAIL: libscalapack-openmpi.so.2.2 is not loaded (%s)\n", dlerror());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  pgemm_fn real[4], mine[4];  // s d c z
  const char* symbols[4] = {"psgemm_", "pdgemm_", "pcgemm_", "pzgemm_"};
  const pgemm_fn linked[4] = {&psgemm_, &pdgemm_, &pcgemm_, &pzgemm_};
  for (int t = 0; t < 4; ++t) {
    real[t] = reinterpret_cast<pgemm_fn>(dlsym(lib, symbols[t]));
    mine[t] = linked[t];
    Dl_info where{};
    const bool located = dladdr(reinterpret_cast<void*>(mine[t]), &where) != 0;
    // With prism, the linked routine must be another function and live outside ScaLAPACK.
    const bool in_scalapack = located && where.dli_fname && std::strstr(where.dli_fname, "libscalapack");
    if (real[t] == nullptr || (PGEMM_WITH_PRISM && (real[t] == mine[t] || in_scalapack)) ||
        (!PGEMM_WITH_PRISM && real[t] != mine[t])) {
      std::printf("test_pgemm: FAIL: %s: ScaLAPACK's %p, linked %p (%s)%s\n", symbols[t], (void*)real[t], (void*)mine[t],
                  located && where.dli_fname ? where.dli_fname : "?",
                  PGEMM_WITH_PRISM ? ": prism's must be a different function" : ": this harness build must call ScaLAPACK's");
      ++fails;
    } else if (g_rank == 0 && t == 1) {
      std::printf("test_pgemm: np %d; p?gemm_ under test from %s\n", np, located && where.dli_fname ? where.dli_fname : "?");
    }
  }
  // This program's PB_Cabort must be the one every library's reference resolves to (as a
  // PBLAS tester's is), and its Cblacs_abort (which names the case of an unexpected abort).
  for (auto [name, fn] : {std::pair<const char*, void*>{"PB_Cabort", reinterpret_cast<void*>(&PB_Cabort)},
                          std::pair<const char*, void*>{"Cblacs_abort", reinterpret_cast<void*>(&Cblacs_abort)}})
    if (dlsym(RTLD_DEFAULT, name) != fn) {
      std::printf("test_pgemm: FAIL: %s resolves to %p, not this program's %p (link with "
                  "-Wl,--export-dynamic-symbol=%s)\n",
                  name, dlsym(RTLD_DEFAULT, name), fn, name);
      ++fails;
    }
  if (fails != 0) MPI_Abort(MPI_COMM_WORLD, 1);

  // --grids PRxPC,...: only those grid shapes (many processes, few grids), and no
  // invalid-argument cases (the np 1..8 runs have them).
  std::vector<std::pair<int, int>> only;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--grids=", 8) == 0)
      for (const char* at = argv[i] + 8; *at != '\0';) {
        int pr = 0, pc = 0, used = 0;
        if (std::sscanf(at, "%dx%d%n", &pr, &pc, &used) != 2 || pr < 1 || pc < 1 || pr * pc > np) {
          if (g_rank == 0) std::printf("test_pgemm: --grids wants PRxPC,... with PR * PC <= %d, got '%s'\n", np, at);
          MPI_Abort(MPI_COMM_WORLD, 2);
        }
        only.emplace_back(pr, pc);
        at += used;
        if (*at == ',') ++at;
      }
  const std::vector<Grid> grids = make_grids(np, only);

  // --list: print the cases (rank 0) and stop.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--list") == 0) {
      for (int id = 0; g_rank == 0 && id < ncases; ++id) {
        const Case c = make_case(seed, id, grids);
        std::printf("%s\n", describe(c, grids[std::size_t(c.grid)]).c_str());
      }
      Cblacs_exit(1);
      MPI_Finalize();
      return 0;
    }

  const char* route = std::getenv("PRISM_SCALAPACK_ROUTE");
  const char* stats = std::getenv("PRISM_STATS");
  const bool count_stats = PGEMM_WITH_PRISM && route && std::strcmp(route, "prism") == 0 && stats &&
                           std::strcmp(stats, "1") == 0;
  StatsTap tap;
  const bool tapped = count_stats && tap.start();
  if (count_stats && !tapped) std::printf("test_pgemm: rank %d: no pipe, route lines not counted\n", g_rank);

  // Products; then the last cases again (their plans still cached) with every other
  // process's LLD 2 larger than before (a valid LLD; the processes' LLDs need not agree):
  // the same calls, so prism's cached plans meet new local storage on some processes only.
  long nonempty_calls = 0;
  const int again = std::min(ncases, 16);
  for (int at = 0; at < ncases + again; ++at) {
    const int id = at < ncases ? at : at - again;
    g_lld_skew = at < ncases ? 0 : 2;
    const Case c = make_case(seed, id, grids);
    const Grid& g = grids[std::size_t(c.grid)];
    if (nonempty(c)) ++nonempty_calls;
    if (!g.in) continue;  // outside this grid: its context is -1 here, no call
    std::snprintf(g_current, sizeof g_current, "%s", describe(c, g).c_str());
    alarm(30);
    const int t = c.type == 's' ? 0 : c.type == 'd' ? 1 : c.type == 'c' ? 2 : 3;
    int f = 0;
    switch (c.type) {
      case 's': f = run_case<float>(c, g, real[t], mine[t]); break;
      case 'd': f = run_case<double>(c, g, real[t], mine[t]); break;
      case 'c': f = run_case<std::complex<float>>(c, g, real[t], mine[t]); break;
      default: f = run_case<std::complex<double>>(c, g, real[t], mine[t]); break;
    }
    fails += f != 0;
  }

  g_lld_skew = 0;

  // Invalid arguments: on the most square grid of all np processes (row-major), and on a
  // reversed-map 1 x (np-1) grid that leaves world rank 0 out. A harness build runs only the
  // reference's side (the uniform cases).
  int error_checks = 0;
  if (only.empty()) {
    int pr = 1;
    for (int d = 1; d * d <= np; ++d)
      if (np % d == 0) pr = d;
    auto find = [&](int r, int c, char order) -> const Grid& {
      for (const Grid& g : grids)
        if (g.pr == r && g.pc == c && g.order == order) return g;
      std::printf("test_pgemm: no %dx%d %c grid\n", r, c, order);
      MPI_Abort(MPI_COMM_WORLD, 1);
      return grids.front();
    };
    const Grid& full = find(pr, np / pr, 'R');
    const Grid& full_c = find(pr, np / pr, 'C');  // same processes, another context
    fails += run_error_cases(full, full_c.ctxt, real, &error_checks);
    if (np >= 2) {
      // World ranks np-1 .. 1 in grid order (BLACS's grid rank is myrow * npcol + mycol,
      // whatever the map), so "the first grid rank" is world rank np-1 here. The other
      // context is the full grid's, valid on every process.
      fails += run_error_cases(find(1, np - 1, 'M'), full.ctxt, real, &error_checks);
    }
    if (!PGEMM_WITH_PRISM && g_rank == 0)
      std::printf("test_pgemm: harness build (ScaLAPACK against itself): invalid-argument cases checked "
                  "against the reference only\n");
  }
  alarm(0);
  std::snprintf(g_current, sizeof g_current, "the final reductions");

  if (tapped) tap.stop();
  // (After the route lines are counted: this call goes to the real routine.) alpha = 0 with
  // a replicated C (RSRC = CSRC = -1: every process holds all of it): C = beta C
  // on every process's copy, as the real routine gives (prism's scaling read a replicated C
  // as distributed: elements left unscaled, others outside sub(C) written).
  for (const Grid& g : grids) {
    if (!g.in || g.pr * g.pc < 2) continue;
    const int M = 5, N = 4, k3 = 3, zero = 0, one = 1, two = 2, neg = -1, lld = M;
    int dc[9], da[9], info = 0;
    descinit_(dc, &M, &N, &two, &two, &zero, &zero, &g.ctxt, &lld, &info);
    dc[6] = dc[7] = neg;  // RSRC, CSRC = -1 (descinit_ clamps them into the grid)
    const int ar = std::max(1, numroc_(&M, &two, &g.myrow, &zero, &g.pr));
    descinit_(da, &M, &k3, &two, &two, &zero, &zero, &g.ctxt, &ar, &info);
    std::vector<double> A(std::size_t(ar) * 3, 1.0), B(std::size_t(M) * N, 1.0);  // B under C's descriptor: 3 x 2 of it
    std::vector<double> Cp(std::size_t(M) * N), Cr;
    for (std::size_t e = 0; e < Cp.size(); ++e) Cp[e] = double(e % 7) + 1.0;
    Cr = Cp;
    const double alpha = 0.0, beta = 0.5;
    const int ic = 2, jc = 2, m = 3, n = 2;  // sub(C) = C(2:4, 2:3)
    real[1](&"N"[0], &"N"[0], &m, &n, &k3, &alpha, A.data(), &one, &one, da, B.data(), &one, &one, dc, &beta, Cr.data(), &ic, &jc, dc);
    mine[1](&"N"[0], &"N"[0], &m, &n, &k3, &alpha, A.data(), &one, &one, da, B.data(), &one, &one, dc, &beta, Cp.data(), &ic, &jc, dc);
    if (Cp != Cr) {
      std::printf("test_pgemm: FAIL: rank %d: pdgemm_ alpha = 0 on a replicated C (grid %dx%d) differs from ScaLAPACK's\n",
                  g_rank, g.pr, g.pc);
      ++fails;
    }
  }

  // Totals over all processes.
  int total_fails = 0;
  MPI_Allreduce(&fails, &total_fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int tapped_all = tapped;  // every process must have counted, or none of the counts mean much
  MPI_Allreduce(MPI_IN_PLACE, &tapped_all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (tapped_all) {
    long lines[2] = {tap.prism, tap.backend}, all[2] = {0, 0};
    MPI_Allreduce(lines, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (tap.backend > 0) std::printf("test_pgemm: rank %d: %s", g_rank, tap.first_backend.c_str());
    if (tap.off_model > 0) {
      std::printf("test_pgemm: FAIL rank %d: %ld calls received other bytes than predicted; first: %s", g_rank,
                  tap.off_model, tap.first_off_model.c_str());
      ++total_fails;
    }
    if (tap.over_memory > 0) {
      std::printf("test_pgemm: FAIL rank %d: %ld calls allocated more than predicted; first: %s", g_rank,
                  tap.over_memory, tap.first_over_memory.c_str());
      ++total_fails;
    }
    if (g_rank == 0) {
      std::printf("test_pgemm: PRISM_STATS: %ld route=prism lines, %ld route=backend, %ld calls with M, N > 0, %d "
                  "in all%s%s",
                  all[0], all[1], nonempty_calls, ncases + again, tap.first_prism.empty() ? "\n" : "; first: ",
                  tap.first_prism.c_str());
      if (!tap.first_prism.empty() && tap.first_prism.back() != '\n') std::printf("\n");
    }
    // One line per call on its grid rank 0: one for every call with M, N > 0, at most one
    // per valid call (the invalid ones may print or not), none on the backend.
    if (all[1] != 0 || all[0] < nonempty_calls || all[0] > ncases + again) {
      if (g_rank == 0)
        std::printf("test_pgemm: FAIL: with PRISM_SCALAPACK_ROUTE=prism every call with M, N > 0 must print one "
                    "route=prism line (%ld to %d lines expected), none route=backend\n",
                    nonempty_calls, ncases + again);
      ++total_fails;
    }
  }

  for (const Grid& g : grids)
    if (g.in) Cblacs_gridexit(g.ctxt);

  // A grid made, used by prism and freed, three times: no communicator is left behind
  // (prism's duplicate of a grid's goes when BLACS frees the grid).
  if (PGEMM_WITH_PRISM) {
    const std::size_t before = live_dups.size();
    for (int round = 0; round < 3; ++round) {
      int ctxt = -1, nr = 0, nc = 0, myr = -1, myc = -1, info = 0;
      Cblacs_get(-1, 0, &ctxt);
      Cblacs_gridinit(&ctxt, "R", 1, np);
      Cblacs_gridinfo(ctxt, &nr, &nc, &myr, &myc);
      const int four = 4, two = 2, zero = 0, one = 1, lld = 4;
      int d[9];
      descinit_(d, &four, &four, &two, &two, &zero, &zero, &ctxt, &lld, &info);
      std::vector<double> A(16, 1.0), B(16, 1.0), C(16, 0.0);
      const double al = 1.0, be = 0.0;
      mine[1](&"N"[0], &"N"[0], &four, &four, &four, &al, A.data(), &one, &one, d, B.data(), &one, &one, d, &be, C.data(), &one,
              &one, d);
      Cblacs_gridexit(ctxt);
    }
    int left = int(live_dups.size()) - int(before), most = 0;
    MPI_Allreduce(&left, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (most != 0) {
      if (g_rank == 0) std::printf("test_pgemm: FAIL: 3 grids made and freed left %d communicators behind\n", most);
      ++total_fails;
    }
  }
  const double seconds = MPI_Wtime() - t0;
  if (g_rank == 0) {
    if (total_fails == 0)
      std::printf("test_pgemm: %d cases passed (%d products on %zu grids, %d invalid-argument checks), np %d, %.1f s\n",
                  ncases + again + error_checks, ncases + again, grids.size(), error_checks, np, seconds);
    else
      std::printf("test_pgemm: %d failures in %d cases (per-process case failures summed), np %d\n", total_fails,
                  ncases + again + error_checks, np);
  }
  std::fflush(stdout);
  Cblacs_exit(1);
  MPI_Finalize();
  return total_fails == 0 ? 0 : 1;
}
