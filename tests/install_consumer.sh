#!/usr/bin/env bash
# ctest install_consumer BUILD SRC [CXXFLAGS]: installs the build tree into a temporary
# prefix and uses it as a user would, with a clean environment (env -i: no LD_LIBRARY_PATH,
# no ldconfig, no CMAKE_PREFIX_PATH or PKG_CONFIG_PATH beyond what is passed):
#   - the installed bin/prism runs (--version, plan);
#   - a CMake project (tests/consumer: find_package(prism REQUIRED) with CMAKE_PREFIX_PATH)
#     builds and runs the README's example (examples/gram.cpp), a prism::prism_blas user and,
#     in an MPI build, a prism::prism_dist user and a prism::prism_scalapack user on 2 ranks;
#   - a pkg-config project links prism_blas by `pkg-config --libs prism_blas` and runs, and
#     in an MPI build a ScaLAPACK program links `pkg-config --libs prism_scalapack` ahead of
#     -lscalapack-openmpi and its pdgemm_ call is prism's (PRISM_STATS says route=prism).
set -euo pipefail
build=$(cd "$1" && pwd); src=$(cd "$2" && pwd); flags=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > /dev/null

# A clean environment; a sanitizer build keeps its runtime options.
clean=(env -i PATH=/usr/bin:/bin HOME="$work")
for v in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS; do
  [ -n "${!v:-}" ] && clean+=("$v=${!v}")
done
run() { echo "+ $*"; "${clean[@]}" "$@"; }

# Only the public headers were installed: no lib/ internals.
test -f "$prefix/include/prism/prism.hpp"
test ! -e "$prefix/include/prism/runtime.hpp"

# The installed tool finds the installed libprism by its own RUNPATH ($ORIGIN/../lib...).
run "$prefix/bin/prism" --version | grep -Eq '^prism [0-9]+\.[0-9]+\.[0-9]+$'
run "$prefix/bin/prism" plan 64 64 65536 --threads 2 | grep -q '^bfs k thread'

# CMake: find_package(prism REQUIRED) through CMAKE_PREFIX_PATH alone.
run cmake -S "$src/tests/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DPRISM_EXAMPLES_DIR="$src/examples" -DCMAKE_CXX_FLAGS="$flags" > /dev/null
run cmake --build "$work/cmake" > /dev/null
run "$work/cmake/examples/gram"
run "$work/cmake/consumer_blas"
# prism::prism_dist, when prism was built with MPI: 2 ranks under mpiexec.
if [ -f "$prefix/include/prism/dist.hpp" ]; then
  test -x "$work/cmake/consumer_dist"
  run OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpiexec --oversubscribe -np 2 "$work/cmake/consumer_dist"
  test -x "$work/cmake/consumer_scalapack"
  run OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PRISM_SCALAPACK_ROUTE=prism PRISM_STATS=1 \
    mpiexec --oversubscribe -np 2 -x PRISM_SCALAPACK_ROUTE -x PRISM_STATS "$work/cmake/consumer_scalapack" 2>&1 |
    tee "$work/scalapack.log"
  grep -q "prism-scalapack: route=prism" "$work/scalapack.log"
  grep -q "consumer_scalapack: ok" "$work/scalapack.log"
fi

# pkg-config: the .pc file's Libs carry the rpath, so the program runs as linked.
pc=$(find "$prefix" -name prism_blas.pc)
libs=$("${clean[@]}" PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --libs prism_blas)
echo "pkg-config --libs prism_blas: $libs"
# shellcheck disable=SC2086
run c++ $flags "$src/tests/consumer/consumer_blas.cpp" -o "$work/pkgconfig_blas" $libs -lblas
run "$work/pkgconfig_blas"
if [ -f "$prefix/include/prism/dist.hpp" ]; then
  pc=$(find "$prefix" -name prism_scalapack.pc)
  libs=$("${clean[@]}" PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --libs prism_scalapack)
  echo "pkg-config --libs prism_scalapack: $libs"
  # shellcheck disable=SC2086
  run mpicxx $flags "$src/tests/consumer/consumer_scalapack.cpp" -o "$work/pkgconfig_scalapack" $libs -lscalapack-openmpi
  run OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PRISM_SCALAPACK_ROUTE=prism PRISM_STATS=1 \
    mpiexec --oversubscribe -np 2 -x PRISM_SCALAPACK_ROUTE -x PRISM_STATS "$work/pkgconfig_scalapack" 2>&1 |
    tee "$work/scalapack-pc.log"
  grep -q "prism-scalapack: route=prism" "$work/scalapack-pc.log"
  grep -q "consumer_scalapack: ok" "$work/scalapack-pc.log"
fi
echo "install_consumer: PASS"
