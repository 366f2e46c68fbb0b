/* tests/dropin/backend_shim.c — backend_?gemm_ for the Fortran test: the same Fortran ABI
   as ?gemm_, forwarded to the backend BLAS opened with dlopen (libblas.so.3 unless
   PRISM_TEST_BACKEND says otherwise), so the Fortran program can compare prism's DGEMM
   with the backend's in one run. */
#define _GNU_SOURCE
#include "blas_abi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fgemm_fn resolve(const char* name) {
  static void* h = NULL;
  if (h == NULL) {
    const char* path = getenv("PRISM_TEST_BACKEND");
    if (path == NULL) path = sizeof(blas_int) == 8 ? "libblas64.so.3" : "libblas.so.3";
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) { fprintf(stderr, "backend_shim: %s\n", dlerror()); exit(2); }
  }
  fgemm_fn f = (fgemm_fn)dlsym(h, name);
  Dl_info info;
  if (f == NULL || dladdr((void*)f, &info) == 0 || strstr(info.dli_fname, "prism_blas") != NULL) {
    fprintf(stderr, "backend_shim: backend lacks %s or is prism itself\n", name);
    exit(2);
  }
  return f;
}

#define SHIM(name)                                                                                       \
  void backend_##name##_(const char* ta, const char* tb, const blas_int* m, const blas_int* n,           \
                         const blas_int* k, const void* al, const void* A, const blas_int* lda,          \
                         const void* B, const blas_int* ldb, const void* be, void* C, const blas_int* ldc, \
                         size_t lta, size_t ltb) {                                                       \
    static fgemm_fn f = NULL;                                                                            \
    if (f == NULL) f = resolve(#name "_");                                                               \
    f(ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc, lta, ltb);                                        \
  }
SHIM(sgemm)
SHIM(dgemm)
SHIM(cgemm)
SHIM(zgemm)
