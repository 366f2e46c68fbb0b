// tests/dropin/check_xerbla_unwind.cpp — a program whose error handler does not return.
// GNU Octave's xerbla_ raises an Octave error (a C++ exception); R's xerbla_ calls
// Rf_error, which longjmps back to R's top level. Under reference BLAS both leave the BLAS
// call early and the program goes on. The same must hold with libprism_blas: the handler's
// exception reaches the caller (no std::terminate from a noexcept frame), a longjmp leaves
// nothing of prism's behind (the thread's cancellation state is the caller's again), C is
// untouched, and valid calls work afterwards.
// Built twice: OWN_CBLAS=1 defines cblas_xerbla too (a CBLAS error goes there), OWN_CBLAS=0
// only xerbla_ (a CBLAS dimension error reaches xerbla_ with the Fortran call's number).
extern "C" {
#include "blas_abi.h"
}

#include <pthread.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace {

enum class leave { by_throw, by_longjmp };
leave how = leave::by_throw;
std::jmp_buf back;
int handled = 0;

[[noreturn]] void leave_now(const char* what) {
  ++handled;
  if (how == leave::by_longjmp) std::longjmp(back, 1);
  throw std::runtime_error(what);
}

}  // namespace

extern "C" void xerbla_(const char* name, const blas_int* info, size_t len) {
  (void)name, (void)info, (void)len;
  leave_now("xerbla_");
}

#if OWN_CBLAS
extern "C" void cblas_xerbla(blas_int p, const char* rout, const char* form, ...) {
  (void)p, (void)rout, (void)form;
  leave_now("cblas_xerbla");
}
#endif

namespace {

int failures = 0, checks = 0;

// Makes one invalid call and checks that the handler left it once, by `how`, with C as it was
// and the thread's cancellation state enabled, as it was before the call.
template <class F>
void expect_left(const char* what, double* C, std::size_t count, F call) {
  ++checks;
  double before[64];
  std::memcpy(before, C, count * sizeof(double));
  handled = 0;
  bool caught = false, jumped = false;
  if (how == leave::by_longjmp) {
    if (setjmp(back) == 0) call();
    else jumped = true;
  } else {
    try {
      call();
    } catch (const std::runtime_error&) {
      caught = true;
    }
  }
  int state = -1;
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &state);
  const bool left = how == leave::by_throw ? caught : jumped;
  if (!left || handled != 1 || std::memcmp(before, C, count * sizeof(double)) != 0 || state != PTHREAD_CANCEL_ENABLE) {
    ++failures;
    std::fprintf(stderr, "FAIL %s (%s): handler calls %d, left %d, C %s, cancellation %s\n", what,
                 how == leave::by_throw ? "throw" : "longjmp", handled, int(left),
                 std::memcmp(before, C, count * sizeof(double)) == 0 ? "untouched" : "CHANGED",
                 state == PTHREAD_CANCEL_ENABLE ? "enabled" : "left DISABLED");
  }
}

// A valid 8 x 8 x 8 dgemm of integer-valued operands, checked exactly.
void expect_valid_after(const char* what) {
  ++checks;
  double A[64], B[64], C[64];
  for (int i = 0; i < 64; ++i) A[i] = i % 5, B[i] = i % 3, C[i] = -1;
  const blas_int n = 8;
  const double one = 1, zero = 0;
  dgemm_("N", "N", &n, &n, &n, &one, A, &n, B, &n, &zero, C, &n, 1, 1);
  for (int j = 0; j < 8; ++j)
    for (int i = 0; i < 8; ++i) {
      double s = 0;
      for (int l = 0; l < 8; ++l) s += A[i + 8 * l] * B[l + 8 * j];
      if (C[i + 8 * j] != s) {
        ++failures;
        std::fprintf(stderr, "FAIL valid dgemm_ after %s: C(%d,%d) = %g, expected %g\n", what, i, j, C[i + 8 * j], s);
        return;
      }
    }
}

void run_cases() {
  static double A[64], B[64], C[64];
  for (int i = 0; i < 64; ++i) C[i] = 3 + i;
  const double one[2] = {1, 0}, zero[2] = {0, 0};
  const blas_int two = 2, bad = 1, minus = -1;
  expect_left("dgemm_ lda", C, 64, [&] { dgemm_("N", "N", &two, &two, &two, one, A, &bad, B, &two, zero, C, &two, 1, 1); });
  expect_valid_after("dgemm_ lda");
  expect_left("zgemm_ ldc", C, 64, [&] { zgemm_("N", "C", &two, &two, &two, one, A, &two, B, &two, zero, C, &bad, 1, 1); });
  expect_left("sgemm_ transa", C, 64, [&] {
    sgemm_("X", "N", &two, &two, &two, (const float*)one, (const float*)A, &two, (const float*)B, &two,
           (const float*)zero, (float*)C, &two, 1, 1);
  });
  expect_left("dsyrk_ lda", C, 64, [&] { dsyrk_("U", "T", &two, &two, one, A, &bad, zero, C, &two, 1, 1); });
  expect_left("zherk_ n", C, 64, [&] { zherk_("L", "N", &minus, &two, one, A, &two, zero, C, &two, 1, 1); });
  expect_valid_after("zherk_ n");
  expect_left("cblas_dgemm lda", C, 64,
              [&] { cblas_dgemm(ColMajor, NoTrans, NoTrans, 2, 2, 2, 1.0, A, 1, B, 2, 0.0, C, 2); });
  expect_left("cblas_zherk ldc", C, 64, [&] { cblas_zherk(RowMajor, 121, NoTrans, 2, 2, 1.0, A, 2, 0.0, C, 1); });
  expect_valid_after("cblas_zherk ldc");
}

}  // namespace

int main() {
  expect_valid_after("nothing");
  how = leave::by_throw;
  run_cases();
  how = leave::by_longjmp;
  run_cases();
  std::printf("check_xerbla_unwind (%s): %d checks, %d failures\n", OWN_CBLAS ? "xerbla_ and cblas_xerbla" : "xerbla_ only",
              checks, failures);
  return failures == 0 ? 0 : 1;
}
