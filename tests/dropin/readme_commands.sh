#!/usr/bin/env bash
# tests/dropin/readme_commands.sh BUILD_DIR — the README's "Use prism without changing your
# code" commands, run as written except for the install prefix (a temporary directory
# instead of /usr/local, hence PKG_CONFIG_PATH; the .pc file's rpath replaces ldconfig):
#   cmake --install; cc ... $(pkg-config --libs prism_blas) -lblas; the same in gfortran;
#   the ILP64 library with -lblas64; LD_PRELOAD into python3 (NumPy); PRISM_STATS.
# Each program's gemm must take prism's recursion and give the exact (integer-valued) result.
set -euo pipefail
build=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > /dev/null
libdir=$(dirname "$(find "$prefix" -name libprism_blas.so | head -1)")
export PKG_CONFIG_PATH=$libdir/pkgconfig
cd "$work"

cat > app.c <<'C'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#ifndef BLAS_INT
#define BLAS_INT int
#endif
void cblas_dgemm(int, int, int, BLAS_INT, BLAS_INT, BLAS_INT, double, const double*, BLAS_INT, const double*,
                 BLAS_INT, double, double*, BLAS_INT);
int main(void) {  /* C = A^T B, A and B k x 16 of ones: every entry is k */
  const BLAS_INT k = 1 << 18, n = 16;
  double* A = malloc(sizeof(double) * k * n); double* C = malloc(sizeof(double) * n * n);
  for (BLAS_INT i = 0; i < k * n; ++i) A[i] = 1.0;
  cblas_dgemm(102, 112, 111, n, n, k, 1.0, A, k, A, k, 0.0, C, n);
  for (BLAS_INT i = 0; i < n * n; ++i) if (C[i] != (double)k) { printf("app: wrong C[%d]\n", (int)i); return 1; }
  printf("app: ok\n");
  return 0;
}
C
cat > solver.f90 <<'F'
program solver
  implicit none
  integer, parameter :: k = 2**18, n = 16
  double precision, allocatable :: a(:, :), c(:, :)
  allocate(a(k, n), c(n, n))
  a = 1
  call dgemm('T', 'N', n, n, k, 1.0d0, a, k, a, k, 0.0d0, c, n)
  if (any(c /= k)) error stop 'solver: wrong C'
  print '(a)', 'solver: ok'
end program
F

# shellcheck disable=SC2046
cc app.c -o app $(pkg-config --libs prism_blas) -lblas
# shellcheck disable=SC2046
gfortran solver.f90 -o solver $(pkg-config --libs prism_blas) -lblas
# shellcheck disable=SC2046
cc -DBLAS_INT=int64_t app.c -o app64 $(pkg-config --libs prism_blas64) -lblas64

check() {  # check NAME COMMAND...: runs with PRISM_STATS=1 on 2 threads (any host), wants "ok"/"6.0" and a recursion line
  local name=$1; shift
  local out
  out=$(PRISM_STATS=1 PRISM_NUM_THREADS=2 "$@" 2>&1) || { echo "$out"; echo "FAIL: $name exited non-zero"; exit 1; }
  echo "$out"
  grep -Eq "recursion +dgemm +1 " <<<"$out" || { echo "FAIL: $name: no call on the recursion path"; exit 1; }
  echo "PASS: $name"
}
check "C program (-lprism_blas -lblas)" ./app
check "Fortran program (-lprism_blas -lblas)" ./solver
check "ILP64 C program (-lprism_blas64 -lblas64)" ./app64
check "NumPy under LD_PRELOAD" env LD_PRELOAD="$libdir/libprism_blas.so" /usr/bin/python3 -c \
  'import numpy as np; A = np.ones((1 << 20, 16)); B = np.ones((1 << 20, 16)); C = A.T @ B; assert (C == 1 << 20).all(); print("numpy: ok")'
echo "readme_commands: PASS"
