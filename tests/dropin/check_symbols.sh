#!/usr/bin/env bash
# tests/dropin/check_symbols.sh LIB — the dynamic symbols LIB defines are exactly the ?gemm,
# ?syrk and ?herk entry points (Fortran and CBLAS), nothing else of BLAS, LAPACK or prism's C++.
set -euo pipefail
lib=$1
want=$(printf "%s\n" cblas_{s,d,c,z}gemm {s,d,c,z}gemm_ cblas_{s,d,c,z}syrk {s,d,c,z}syrk_ cblas_{c,z}herk {c,z}herk_ |
  sort | tr '\n' ' ' | sed 's/ $//')
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
