/* tests/dropin/blas_abi.h — the BLAS ABI the drop-in test programs call, declared by hand
   (no cblas.h: the test must not depend on which BLAS's header is installed). BLAS_INT is
   int for libprism_blas and int64_t for libprism_blas64 (Debian's ILP64 ABI). */
#ifndef PRISM_TESTS_DROPIN_BLAS_ABI_H
#define PRISM_TESTS_DROPIN_BLAS_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifndef BLAS_INT
#define BLAS_INT int
#endif
typedef BLAS_INT blas_int;

enum { RowMajor = 101, ColMajor = 102, NoTrans = 111, Trans = 112, ConjTrans = 113 };

/* Fortran ?gemm_ as gfortran emits it (hidden CHARACTER lengths last). */
typedef void (*fgemm_fn)(const char*, const char*, const blas_int*, const blas_int*, const blas_int*,
                         const void*, const void*, const blas_int*, const void*, const blas_int*,
                         const void*, void*, const blas_int*, size_t, size_t);
/* CBLAS ?gemm with alpha/beta passed by address: real types are wrapped (see check_gemm.c). */
void sgemm_(const char*, const char*, const blas_int*, const blas_int*, const blas_int*, const float*,
            const float*, const blas_int*, const float*, const blas_int*, const float*, float*,
            const blas_int*, size_t, size_t);
void dgemm_(const char*, const char*, const blas_int*, const blas_int*, const blas_int*, const double*,
            const double*, const blas_int*, const double*, const blas_int*, const double*, double*,
            const blas_int*, size_t, size_t);
void cgemm_(const char*, const char*, const blas_int*, const blas_int*, const blas_int*, const void*,
            const void*, const blas_int*, const void*, const blas_int*, const void*, void*,
            const blas_int*, size_t, size_t);
void zgemm_(const char*, const char*, const blas_int*, const blas_int*, const blas_int*, const void*,
            const void*, const blas_int*, const void*, const blas_int*, const void*, void*,
            const blas_int*, size_t, size_t);
void cblas_sgemm(int, int, int, blas_int, blas_int, blas_int, float, const float*, blas_int, const float*,
                 blas_int, float, float*, blas_int);
void cblas_dgemm(int, int, int, blas_int, blas_int, blas_int, double, const double*, blas_int,
                 const double*, blas_int, double, double*, blas_int);
void cblas_cgemm(int, int, int, blas_int, blas_int, blas_int, const void*, const void*, blas_int,
                 const void*, blas_int, const void*, void*, blas_int);
void cblas_zgemm(int, int, int, blas_int, blas_int, blas_int, const void*, const void*, blas_int,
                 const void*, blas_int, const void*, void*, blas_int);
/* Fortran ?syrk_ / ?herk_ and the CBLAS rank-k entries the tests call. */
void ssyrk_(const char*, const char*, const blas_int*, const blas_int*, const float*, const float*,
            const blas_int*, const float*, float*, const blas_int*, size_t, size_t);
void dsyrk_(const char*, const char*, const blas_int*, const blas_int*, const double*, const double*,
            const blas_int*, const double*, double*, const blas_int*, size_t, size_t);
void csyrk_(const char*, const char*, const blas_int*, const blas_int*, const void*, const void*,
            const blas_int*, const void*, void*, const blas_int*, size_t, size_t);
void zsyrk_(const char*, const char*, const blas_int*, const blas_int*, const void*, const void*,
            const blas_int*, const void*, void*, const blas_int*, size_t, size_t);
void cherk_(const char*, const char*, const blas_int*, const blas_int*, const float*, const void*,
            const blas_int*, const float*, void*, const blas_int*, size_t, size_t);
void zherk_(const char*, const char*, const blas_int*, const blas_int*, const double*, const void*,
            const blas_int*, const double*, void*, const blas_int*, size_t, size_t);
void cblas_ssyrk(int, int, int, blas_int, blas_int, float, const float*, blas_int, float, float*, blas_int);
void cblas_dsyrk(int, int, int, blas_int, blas_int, double, const double*, blas_int, double, double*, blas_int);
void cblas_zsyrk(int, int, int, blas_int, blas_int, const void*, const void*, blas_int, const void*, void*,
                 blas_int);
void cblas_zherk(int, int, int, blas_int, blas_int, double, const void*, blas_int, double, void*, blas_int);

#endif
