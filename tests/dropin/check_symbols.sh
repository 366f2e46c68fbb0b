#!/usr/bin/env bash
# tests/dropin/check_symbols.sh LIB — the dynamic symbols LIB defines are exactly the eight
# ?gemm entry points (Fortran and CBLAS), nothing else of BLAS, LAPACK or prism's C++.
set -euo pipefail
lib=$1
want="cblas_cgemm cblas_dgemm cblas_sgemm cblas_zgemm cgemm_ dgemm_ sgemm_ zgemm_"
got=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort | tr '\n' ' ' | sed 's/ $//')
echo "$lib defines: $got"
if [ "$got" != "$want" ]; then
  echo "FAIL: expected exactly: $want"
  exit 1
fi
# The error handlers are weak references only: prism must not define xerbla_/cblas_xerbla.
# (nm's output is kept in a variable: grep -q closing a pipe early would fail under pipefail.)
all=$(nm -D "$lib")
grep -Eq '^ +w xerbla_$' <<<"$all" || { echo "FAIL: xerbla_ is not a weak undefined reference"; exit 1; }
grep -Eq '^ +w cblas_xerbla$' <<<"$all" || { echo "FAIL: cblas_xerbla is not a weak undefined reference"; exit 1; }
echo "PASS"
