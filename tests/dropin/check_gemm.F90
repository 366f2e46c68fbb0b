! tests/dropin/check_gemm.F90 — a Fortran program linked with -lprism_blas (its backend is
! then the default, libblas.so.3, or libblas64.so.3 when built with -fdefault-integer-8
! against libprism_blas64). Calls SGEMM, DGEMM, CGEMM, ZGEMM (all trans pairs N/T/C, alpha in
! {1, -0.5(+0.25i), 0}, beta in {0, 1, 0.75(-0.5i)}, padded leading dimensions, several
! shapes) and compares each result with the backend BLAS's (backend_shim.c) within
!   |C_prism - C_backend| <= 2 * 4 (k + 2) eps (|alpha| |op(A)| |op(B)| + |beta| |C0|).
! Padding rows of C must stay untouched, and beta = 0 must not read C (it starts as NaN).
! Exit status 1 on any failure.
#define SUBNAME check_s
#define TYPE real(4)
#define GEMM sgemm
#define NAMESTR 'SGEMM'
#define BACKEND backend_sgemm
#define EPSV epsilon(1.0e0)
#define CPLX 0
#include "check_gemm_body.inc"
#undef SUBNAME
#undef TYPE
#undef GEMM
#undef NAMESTR
#undef BACKEND
#undef EPSV
#undef CPLX

#define SUBNAME check_d
#define TYPE real(8)
#define GEMM dgemm
#define NAMESTR 'DGEMM'
#define BACKEND backend_dgemm
#define EPSV epsilon(1.0d0)
#define CPLX 0
#include "check_gemm_body.inc"
#undef SUBNAME
#undef TYPE
#undef GEMM
#undef NAMESTR
#undef BACKEND
#undef EPSV
#undef CPLX

#define SUBNAME check_c
#define TYPE complex(4)
#define GEMM cgemm
#define NAMESTR 'CGEMM'
#define BACKEND backend_cgemm
#define EPSV epsilon(1.0e0)
#define CPLX 1
#include "check_gemm_body.inc"
#undef SUBNAME
#undef TYPE
#undef GEMM
#undef NAMESTR
#undef BACKEND
#undef EPSV
#undef CPLX

#define SUBNAME check_z
#define TYPE complex(8)
#define GEMM zgemm
#define NAMESTR 'ZGEMM'
#define BACKEND backend_zgemm
#define EPSV epsilon(1.0d0)
#define CPLX 1
#include "check_gemm_body.inc"

program check_gemm
  implicit none
  integer :: cases, failures
  cases = 0; failures = 0
  call check_s(cases, failures)
  call check_d(cases, failures)
  call check_c(cases, failures)
  call check_z(cases, failures)
  print '(a, i0, a, i0, a)', 'check_gemm.F90: ', cases, ' cases, ', failures, ' failures'
  if (failures /= 0) error stop 1
end program
