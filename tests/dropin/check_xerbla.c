/* tests/dropin/check_xerbla.c — invalid arguments to prism's ?gemm_ and cblas_?gemm.
   Built twice:
   - OWN_HANDLERS=1: the program defines xerbla_ and cblas_xerbla (as the reference BLAS
     test programs do); every invalid case must call the right one once, with the right
     routine name and argument position (reference BLAS / reference CBLAS numbering), and
     leave C bit-for-bit untouched. Like reference CBLAS, prism passes a row-major gemm's
     errors with the numbers of the transposed Fortran call (bad M -> 5, bad lda -> 11);
     the handler here swaps them back (4 <-> 5, 9 <-> 11) for row-major calls exactly as
     the reference CBLAS testers' c_xerbla.c does, so the expected numbers below are the
     ones reference CBLAS reports (layout = 1, M = 4, lda = 9).
   - OWN_HANDLERS=2: the program defines xerbla_ only; as under reference CBLAS (whose
     cblas_?gemm leaves dimensions and leading dimensions to the Fortran routine it calls)
     and OpenBLAS, a CBLAS call's error found there reaches xerbla_ with the Fortran name
     and that call's number (a row-major call's transposed one); layout and trans errors
     reach no handler. Two rank-k calls check the same for cblas_dsyrk and cblas_zherk.
   Built for LP64 (libprism_blas) and ILP64 (BLAS_INT=int64_t, libprism_blas64).
   - OWN_HANDLERS=0: no handler anywhere (not linked with a BLAS); every call must return
     with C untouched, and prism prints the reference messages and its own line naming the
     argument (checked by the ctest wrapper on stderr), for two column-major rank-k calls too.
   Valid calls of every type come first, so that a run with the fast path (no PRISM_STATS,
   a backend verdict settled) has it published; every invalid call then passes alpha and
   beta as null pointers where they come by address: reference BLAS reads neither before
   the checks pass, so a call that does crashes here. */
#include "blas_abi.h"

#include <stdio.h>
#include <string.h>


static int failures = 0, checks = 0;

#if OWN_HANDLERS
#include <stdarg.h>
static char last_name[32];
static long long last_info = 0;
static int calls = 0;
static int row_major_call = 0;  /* the testers' RowMajorStrg */

void xerbla_(const char* name, const blas_int* info, size_t len) {
  size_t n = len < sizeof last_name - 1 ? len : sizeof last_name - 1;
  memcpy(last_name, name, n);
  last_name[n] = '\0';
  last_info = *info;
  ++calls;
}
#if OWN_HANDLERS == 1
void cblas_xerbla(blas_int p, const char* rout, const char* form, ...) {
  (void)form;
  snprintf(last_name, sizeof last_name, "%s", rout);
  if (row_major_call && strstr(rout, "gemm") != NULL) {  /* as reference c_xerbla.c */
    if (p == 5) p = 4;
    else if (p == 4) p = 5;
    else if (p == 11) p = 9;
    else if (p == 9) p = 11;
  }
  last_info = p;
  ++calls;
}
#endif
#endif

static float Cs[64]; static double Cd[64]; static float Cc[128]; static double Cz[128];
static unsigned char snapshot[4][1024];

static void* cbuf(int t) { return t == 0 ? (void*)Cs : t == 1 ? (void*)Cd : t == 2 ? (void*)Cc : (void*)Cz; }
static size_t cbytes(int t) { return t == 0 ? sizeof Cs : t == 1 ? sizeof Cd : t == 2 ? sizeof Cc : sizeof Cz; }

static void expect(int t, const char* what, const char* name, long long info) {
  ++checks;
  int ok = memcmp(snapshot[t], cbuf(t), cbytes(t)) == 0;
#if OWN_HANDLERS
  ok = ok && (name[0] == '\0' ? calls == 0 : calls == 1 && strcmp(last_name, name) == 0 && last_info == info);
  if (!ok)
    fprintf(stderr, "FAIL %s: handler calls=%d name='%s' info=%lld, expected '%s' %lld\n", what, calls, last_name,
            last_info, name, info);
  calls = 0;
  last_name[0] = '\0';
  last_info = 0;
#else
  (void)name; (void)info;
  if (!ok) fprintf(stderr, "FAIL %s: C was modified\n", what);
#endif
  if (!ok) ++failures;
}

/* The check of a CBLAS call that reference CBLAS numbers `info` (after c_xerbla.c's swap
   for a row-major gemm). With xerbla_ only, an error past the first three arguments comes
   as the Fortran call's: e.g. row-major bad lda, info 9, is the transposed call's ldb, 10. */
static void expect_c(int t, const char* what, const char* cname, const char* fname, long long info) {
#if OWN_HANDLERS == 2
  if (info <= 3) {
    expect(t, what, "", 0);
    return;
  }
  long long passed = info;
  if (row_major_call) passed = info == 4 ? 5 : info == 5 ? 4 : info == 9 ? 11 : info == 11 ? 9 : info;
  expect(t, what, fname, passed - 1);
#else
  (void)fname;
  expect(t, what, cname, info);
#endif
}

/* One Fortran call of type t with the given arguments. */
static void fcall(int t, char ta, char tb, blas_int m, blas_int n, blas_int k, blas_int lda, blas_int ldb,
                  blas_int ldc) {
  static double A[256], B[256];
  static const double one[2] = {1, 0};
  switch (t) {
    case 0: sgemm_(&ta, &tb, &m, &n, &k, NULL, (const float*)A, &lda, (const float*)B, &ldb, NULL, Cs, &ldc, 1, 1); break;
    case 1: dgemm_(&ta, &tb, &m, &n, &k, NULL, A, &lda, B, &ldb, NULL, Cd, &ldc, 1, 1); break;
    case 2: cgemm_(&ta, &tb, &m, &n, &k, NULL, A, &lda, B, &ldb, NULL, Cc, &ldc, 1, 1); break;
    default: zgemm_(&ta, &tb, &m, &n, &k, NULL, A, &lda, B, &ldb, NULL, Cz, &ldc, 1, 1); break;
  }
}

static void ccall(int t, int layout, int ta, int tb, blas_int m, blas_int n, blas_int k, blas_int lda, blas_int ldb,
                  blas_int ldc) {
  static double A[256], B[256];
#if OWN_HANDLERS
  row_major_call = layout == RowMajor;
#endif
  switch (t) {
    case 0: cblas_sgemm(layout, ta, tb, m, n, k, 1.0f, (const float*)A, lda, (const float*)B, ldb, 1.0f, Cs, ldc); break;
    case 1: cblas_dgemm(layout, ta, tb, m, n, k, 1.0, A, lda, B, ldb, 1.0, Cd, ldc); break;
    case 2: cblas_cgemm(layout, ta, tb, m, n, k, NULL, A, lda, B, ldb, NULL, Cc, ldc); break;
    default: cblas_zgemm(layout, ta, tb, m, n, k, NULL, A, lda, B, ldb, NULL, Cz, ldc); break;
  }
}

/* Valid 2 x 2 x 2 calls of every type through both interfaces (their results unchecked). */
static void warm_up(void) {
  static double A[8], B[8], C[8];
  static const double one[2] = {1, 0};
  const blas_int two = 2;
  for (int rep = 0; rep < 3; ++rep) {
    sgemm_("N", "N", &two, &two, &two, (const float*)one, (const float*)A, &two, (const float*)B, &two,
           (const float*)one, (float*)C, &two, 1, 1);
    dgemm_("N", "N", &two, &two, &two, one, A, &two, B, &two, one, C, &two, 1, 1);
    cgemm_("N", "N", &two, &two, &two, one, A, &two, B, &two, one, C, &two, 1, 1);
    zgemm_("N", "N", &two, &two, &two, one, A, &two, B, &two, one, C, &two, 1, 1);
    cblas_sgemm(ColMajor, NoTrans, NoTrans, 2, 2, 2, 1.0f, (const float*)A, 2, (const float*)B, 2, 1.0f, (float*)C, 2);
    cblas_dgemm(ColMajor, NoTrans, NoTrans, 2, 2, 2, 1.0, A, 2, B, 2, 1.0, C, 2);
    cblas_cgemm(ColMajor, NoTrans, NoTrans, 2, 2, 2, one, A, 2, B, 2, one, C, 2);
    cblas_zgemm(ColMajor, NoTrans, NoTrans, 2, 2, 2, one, A, 2, B, 2, one, C, 2);
  }
}

int main(void) {
  const char* fname[4] = {"SGEMM ", "DGEMM ", "CGEMM ", "ZGEMM "};
  const char* cname[4] = {"cblas_sgemm", "cblas_dgemm", "cblas_cgemm", "cblas_zgemm"};
  warm_up();
  for (int t = 0; t < 4; ++t) {
    for (size_t i = 0; i < cbytes(t); ++i) ((unsigned char*)cbuf(t))[i] = (unsigned char)(i * 7 + 3);
    memcpy(snapshot[t], cbuf(t), cbytes(t));
    /* Fortran: valid shape m=4, n=3, k=5 with lda=4 (N) / 5 (T), ldb=5 (N) / 3 (T), ldc=4. */
    fcall(t, 'X', 'N', 4, 3, 5, 4, 5, 4); expect(t, "transa", fname[t], 1);
    fcall(t, 'N', 'q', 4, 3, 5, 4, 5, 4); expect(t, "transb", fname[t], 2);
    fcall(t, 'N', 'N', -1, 3, 5, 4, 5, 4); expect(t, "m", fname[t], 3);
    fcall(t, 'N', 'N', 4, -1, 5, 4, 5, 4); expect(t, "n", fname[t], 4);
    fcall(t, 'N', 'N', 4, 3, -1, 4, 5, 4); expect(t, "k", fname[t], 5);
    fcall(t, 'N', 'N', 4, 3, 5, 3, 5, 4); expect(t, "lda (N: >= m)", fname[t], 8);
    fcall(t, 't', 'N', 4, 3, 5, 4, 5, 4); expect(t, "lda (T: >= k)", fname[t], 8);
    fcall(t, 'N', 'N', 4, 3, 5, 4, 4, 4); expect(t, "ldb (N: >= k)", fname[t], 10);
    fcall(t, 'N', 'c', 4, 3, 5, 4, 2, 4); expect(t, "ldb (C: >= n)", fname[t], 10);
    fcall(t, 'N', 'N', 4, 3, 5, 4, 5, 3); expect(t, "ldc", fname[t], 13);
    fcall(t, 'N', 'N', 0, 3, 5, 0, 5, 1); expect(t, "lda = 0 with m = 0 (>= max(1, 0))", fname[t], 8);
    fcall(t, 'X', 'N', -1, 3, 5, 0, 5, 0); expect(t, "first error wins", fname[t], 1);

    /* CBLAS column-major: the layout is argument 1, the rest shift by one. */
    ccall(t, 99, NoTrans, NoTrans, 4, 3, 5, 4, 5, 4); expect_c(t, "layout", cname[t], fname[t], 1);
    ccall(t, ColMajor, 114, NoTrans, 4, 3, 5, 4, 5, 4); expect_c(t, "TransA (ConjNoTrans is not allowed)", cname[t], fname[t], 2);
    ccall(t, ColMajor, NoTrans, 0, 4, 3, 5, 4, 5, 4); expect_c(t, "TransB", cname[t], fname[t], 3);
    ccall(t, ColMajor, NoTrans, NoTrans, -1, 3, 5, 4, 5, 4); expect_c(t, "col M", cname[t], fname[t], 4);
    ccall(t, ColMajor, NoTrans, NoTrans, 4, -1, 5, 4, 5, 4); expect_c(t, "col N", cname[t], fname[t], 5);
    ccall(t, ColMajor, NoTrans, NoTrans, 4, 3, -1, 4, 5, 4); expect_c(t, "col K", cname[t], fname[t], 6);
    ccall(t, ColMajor, NoTrans, NoTrans, 4, 3, 5, 3, 5, 4); expect_c(t, "col lda", cname[t], fname[t], 9);
    ccall(t, ColMajor, NoTrans, NoTrans, 4, 3, 5, 4, 4, 4); expect_c(t, "col ldb", cname[t], fname[t], 11);
    ccall(t, ColMajor, NoTrans, NoTrans, 4, 3, 5, 4, 5, 3); expect_c(t, "col ldc", cname[t], fname[t], 14);

    /* CBLAS row-major: A is m x k with lda >= k (NoTrans), B k x n with ldb >= n, C ldc >= n.
       Reference CBLAS checks n before m and ldb before lda (it calls Fortran transposed). */
    ccall(t, RowMajor, 0, NoTrans, 4, 3, 5, 5, 3, 3); expect_c(t, "row TransA", cname[t], fname[t], 2);
    ccall(t, RowMajor, ConjTrans, 114, 4, 3, 5, 5, 3, 3); expect_c(t, "row TransB", cname[t], fname[t], 3);
    ccall(t, RowMajor, NoTrans, NoTrans, -1, 3, 5, 5, 3, 3); expect_c(t, "row M", cname[t], fname[t], 4);
    ccall(t, RowMajor, NoTrans, NoTrans, 4, -1, 5, 5, 3, 3); expect_c(t, "row N", cname[t], fname[t], 5);
    ccall(t, RowMajor, NoTrans, NoTrans, -1, -1, 5, 5, 3, 3); expect_c(t, "row N before M", cname[t], fname[t], 5);
    ccall(t, RowMajor, NoTrans, NoTrans, 4, 3, -1, 5, 3, 3); expect_c(t, "row K", cname[t], fname[t], 6);
    ccall(t, RowMajor, NoTrans, NoTrans, 4, 3, 5, 4, 3, 3); expect_c(t, "row lda (>= k)", cname[t], fname[t], 9);
    ccall(t, RowMajor, Trans, NoTrans, 4, 3, 5, 3, 3, 3); expect_c(t, "row lda (Trans: >= m)", cname[t], fname[t], 9);
    ccall(t, RowMajor, NoTrans, NoTrans, 4, 3, 5, 5, 2, 3); expect_c(t, "row ldb (>= n)", cname[t], fname[t], 11);
    ccall(t, RowMajor, NoTrans, NoTrans, 4, 3, 5, 4, 2, 3); expect_c(t, "row ldb before lda", cname[t], fname[t], 11);
    ccall(t, RowMajor, NoTrans, NoTrans, 4, 3, 5, 5, 3, 2); expect_c(t, "row ldc (>= n)", cname[t], fname[t], 14);
  }
#if OWN_HANDLERS == 2
  {
    enum { Upper = 121, Lower = 122 };
    static double A[64];
    cblas_dsyrk(ColMajor, Upper, NoTrans, 3, 5, 1.0, A, 2, 0.0, Cd, 3); /* lda 2 < n 3: DSYRK's 7 */
    expect(1, "cblas_dsyrk lda", "DSYRK ", 7);
    cblas_zherk(RowMajor, Lower, NoTrans, 3, 5, 1.0, A, 5, 0.0, Cz, 2); /* ldc 2 < n 3: ZHERK's 10 */
    expect(3, "cblas_zherk row-major ldc", "ZHERK ", 10);
  }
#endif
#if OWN_HANDLERS == 0
  {  /* column-major rank-k errors: prism's line names the argument (checked by the ctest wrapper) */
    enum { Upper = 121 };
    static double A[64];
    cblas_dsyrk(ColMajor, Upper, NoTrans, 3, 5, 1.0, A, 2, 0.0, Cd, 3);
    cblas_zherk(ColMajor, Upper, Trans, 3, 5, 1.0, A, 5, 0.0, Cz, 3);
  }
#endif
  printf("check_xerbla (%s handlers): %d checks, %d failures\n",
         OWN_HANDLERS == 2 ? "xerbla_ only" : OWN_HANDLERS ? "own" : "no", checks, failures);
  return failures == 0 ? 0 : 1;
}
