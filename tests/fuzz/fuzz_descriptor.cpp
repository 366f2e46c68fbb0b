// tests/fuzz/fuzz_descriptor.cpp — fuzz target: the ScaLAPACK drop-in's argument and
// descriptor checks (libprism_scalapack's pdgemm_ and pdsyrk_, route prism) on a 1 x 1
// BLACS grid. Input bytes give trans letters, m, n, k, the six offsets and the three
// descriptors (9- or 11-entry, any DTYPE, context, sizes, blocks, sources, LLD), small
// values with occasional negatives, then the routine: an odd next byte calls pdsyrk_ with
// the first letter as UPLO (N, T, C, n read as U, L, X, l: X is invalid), the second as
// TRANS, n, k, A's offsets and descriptor, C's (B's unused); an even one, or none, pdgemm_.
// (The corpus from before pdsyrk_ was fuzzed has that byte even or absent, so it decodes
// as it did.) Each call either reports an INFO through PB_Cabort (this program's, which
// records it and returns, as PBLAS's testers' does) with C untouched, or computes
// sub(C) = alpha op(sub(A)) op(sub(B)) + beta sub(C) (pdsyrk_: alpha op(sub(A)) op(sub(A))^T
// + beta sub(C) on its UPLO triangle) within the componentwise bound with the rest of C
// untouched (on one process every operand is held whole, local = global with the
// descriptor's LLD). The buffers are as large as the descriptors say, so a valid call
// stays inside them.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
void Cblacs_get(int icontxt, int what, int* val);
void Cblacs_gridinit(int* icontxt, const char* order, int nprow, int npcol);
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
             const double* a, const int* ia, const int* ja, const int* desca, const double* b, const int* ib,
             const int* jb, const int* descb, const double* beta, double* c, const int* ic, const int* jc,
             const int* descc);
void pdsyrk_(const char* uplo, const char* trans, const int* n, const int* k, const double* alpha, const double* a,
             const int* ia, const int* ja, const int* desca, const double* beta, double* c, const int* ic, const int* jc,
             const int* descc);
}

namespace {

int g_ctxt = -1;
int g_info = 0;
int g_reports = 0;

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_descriptor: FINDING: %s\n", what);
  std::abort();
}

// Reads the input as a stream of bytes (zeros once it runs out).
struct bytes {
  const std::uint8_t* p;
  std::size_t n, at = 0;
  int next() { return at < n ? p[at++] : 0; }
  // A small value: mostly 0..40, sometimes -2..-1, sometimes up to 300.
  int small() {
    const int b = next();
    if (b >= 250) return -(b - 249) % 3;
    if (b >= 230) return 40 + (b - 230) * 13;
    return b % 41;
  }
};

}  // namespace

// The program's own PB_Cabort (PBLAS's error handler, which PBLAS's testers replace too):
// records the INFO and returns.
extern "C" __attribute__((visibility("default"))) void PB_Cabort(int, char*, int info) {
  g_info = info;
  ++g_reports;
}

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  Cblacs_get(-1, 0, &g_ctxt);
  Cblacs_gridinit(&g_ctxt, "Row", 1, 1);
  setenv("PRISM_SCALAPACK_ROUTE", "prism", 1);
  setenv("PRISM_NUM_THREADS", "1", 1);
  std::atexit([] { MPI_Finalize(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  bytes in{data, size};
  const char letters[] = "NTCn";
  const char ta = letters[in.next() % 4], tb = letters[in.next() % 4];
  const int m = in.small(), n = in.small(), k = in.small();
  int off[6];
  for (int& o : off) o = 1 + in.small() % 12 - (in.next() == 255 ? 2 : 0);
  int desc[3][11];
  std::size_t elems[3];
  for (int d = 0; d < 3; ++d) {
    const int shape = in.next();
    const bool eleven = shape % 5 == 0;
    int* e = desc[d];
    const int M = in.small(), N = in.small(), mb = 1 + in.small() % 16, nb = 1 + in.small() % 16;
    const int lld = std::max(1, M) + (in.next() % 4 == 0 ? in.small() % 8 - 1 : 0);
    if (eleven) {
      const int v[11] = {2, g_ctxt, M, N, 1 + in.small() % 16, 1 + in.small() % 16, mb, nb, 0, 0, lld};
      std::memcpy(e, v, sizeof v);
    } else {
      const int v[9] = {1, g_ctxt, M, N, mb, nb, 0, 0, lld};
      std::memcpy(e, v, sizeof v);
      e[9] = e[10] = 0;
    }
    // Occasional broken fields: the type, the context, a block, a source, the LLD.
    const int damage = in.next();
    if (damage >= 240) e[(damage - 240) % (eleven ? 11 : 9)] = in.small() - 3;
    const int rows = std::max(0, e[eleven ? 10 : 8]), cols = std::max(0, e[3]);  // as the call sees them
    elems[d] = std::size_t(std::max(1, rows)) * std::size_t(std::max(1, cols)) + 1;
  }
  const double alpha = double(in.next() % 5) - 2, beta = double(in.next() % 3) - 1;
  std::vector<double> A(elems[0]), B(elems[1]), C(elems[2]);
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = double(int(i * 7 % 11) - 5) / 4;
  for (std::size_t i = 0; i < B.size(); ++i) B[i] = double(int(i * 5 % 13) - 6) / 8;
  for (std::size_t i = 0; i < C.size(); ++i) C[i] = double(int(i % 7)) - 3;
  const std::vector<double> C0 = C;
  const bool syrk = in.next() % 2 == 1;
  const char uplo = "ULXl"[std::strchr(letters, ta) - letters];
  g_reports = 0;
  if (syrk)
    pdsyrk_(&uplo, &tb, &n, &k, &alpha, A.data(), &off[0], &off[1], desc[0], &beta, C.data(), &off[4], &off[5], desc[2]);
  else
    pdgemm_(&ta, &tb, &m, &n, &k, &alpha, A.data(), &off[0], &off[1], desc[0], B.data(), &off[2], &off[3], desc[1], &beta,
            C.data(), &off[4], &off[5], desc[2]);
  if (g_reports > 0) {
    if (g_reports > 1) finding("PB_Cabort called more than once");
    if (g_info >= 0) finding("PB_Cabort called with INFO >= 0");
    for (std::size_t i = 0; i < C.size(); ++i)
      if (!(C[i] == C0[i]) && !(std::isnan(C[i]) && std::isnan(C0[i]))) finding("an invalid call wrote C");
    return 0;
  }
  if (syrk && uplo == 'X') finding("pdsyrk_ accepted UPLO = 'X'");
  // Valid: check sub(C) against a plain loop, and that nothing else moved.
  const int lda = desc[0][desc[0][0] == 2 ? 10 : 8], ldb = desc[1][desc[1][0] == 2 ? 10 : 8],
            ldc = desc[2][desc[2][0] == 2 ? 10 : 8];
  // pdsyrk_: op(A) is A for TRANS 'N', else A^T, and B = op(A)^T: b(l, j) = a(j, l).
  const char TA = char(std::toupper(syrk ? tb : ta)), TB = char(std::toupper(tb));
  auto a = [&](int i, int l) {  // op(sub(A))(i, l), 0-based
    return TA == 'N' ? A[std::size_t(off[0] - 1 + i) + std::size_t(off[1] - 1 + l) * std::size_t(lda)]
                     : A[std::size_t(off[0] - 1 + l) + std::size_t(off[1] - 1 + i) * std::size_t(lda)];
  };
  auto b = [&](int l, int j) {
    if (syrk) return a(j, l);
    return TB == 'N' ? B[std::size_t(off[2] - 1 + l) + std::size_t(off[3] - 1 + j) * std::size_t(ldb)]
                     : B[std::size_t(off[2] - 1 + j) + std::size_t(off[3] - 1 + l) * std::size_t(ldb)];
  };
  const int rows = syrk ? n : m;  // sub(C) is rows x n
  const bool upper = std::toupper(uplo) == 'U';
  std::vector<char> inside(C.size(), 0);
  // The plain loop checks products up to 2^20 multiply-adds (beyond, under the sanitizers
  // and coverage it would take longer than the per-input timeout); sub(C)'s bounds and the
  // untouched rest of C are checked always.
  const bool check_values = double(rows) * double(n) * double(k) <= double(1 << 20);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < rows; ++i) {
      if (syrk && (upper ? i > j : i < j)) continue;  // the other triangle: untouched
      const std::size_t at = std::size_t(off[4] - 1 + i) + std::size_t(off[5] - 1 + j) * std::size_t(ldc);
      if (at >= C.size()) finding("a call accepted as valid reaches outside C's descriptor");
      inside[at] = 1;
      if (!check_values) continue;
      double s = 0, bound = 0;
      for (int l = 0; l < k; ++l) s += a(i, l) * b(l, j), bound += std::fabs(a(i, l) * b(l, j));
      const double want = alpha * s + (beta == 0 ? 0 : beta * C0[at]);
      const double tol = 4.0 * (k + 2) * 2.3e-16 * (std::fabs(alpha) * bound + std::fabs(beta * C0[at])) + 1e-300;
      if (!(std::fabs(C[at] - want) <= tol)) finding("a valid call computed a wrong sub(C)");
    }
  for (std::size_t i = 0; i < C.size(); ++i)
    if (!inside[i] && !(C[i] == C0[i])) finding(syrk ? "a valid call wrote outside sub(C)'s UPLO triangle" : "a valid call wrote outside sub(C)");
  return 0;
}
