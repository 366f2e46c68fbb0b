#!/usr/bin/env bash
# ctest install_consumer BUILD SRC [CXXFLAGS [tool|no-tool]]: installs the build tree into a
# temporary prefix and uses it as a user would, with a clean environment (env -i: no
# LD_LIBRARY_PATH, no ldconfig, no CMAKE_PREFIX_PATH or PKG_CONFIG_PATH beyond what is passed):
#   - the installed bin/prism runs (--version, plan); with no-tool (a build without the
#     tool, PRISM_WITH_APPS=OFF) it must not be installed;
#   - a CMake project (tests/consumer: find_package(prism REQUIRED) with CMAKE_PREFIX_PATH)
#     builds and runs the README's example (examples/gram.cpp), a prism::prism_blas user and,
#     in an MPI build, a prism::prism_dist user and a prism::prism_scalapack user on 2 ranks;
#   - a C++ consumer of prism::prism (examples/) configures, builds and runs with MPI hidden
#     from CMake (CMAKE_DISABLE_FIND_PACKAGE_MPI), and asking for the dist component then
#     fails, naming MPI;
#   - `pkg-config --cflags --libs prism` builds the example program, which runs;
#   - a pkg-config project links prism_blas by `pkg-config --libs prism_blas` and runs, and
#     in an MPI build a ScaLAPACK program links `pkg-config --libs prism_scalapack` ahead of
#     -lscalapack-openmpi and its pdgemm_ call is prism's (PRISM_STATS says route=prism).
set -euo pipefail
build=$(cd "$1" && pwd); src=$(cd "$2" && pwd); flags=${3:-}; tool=${4:-tool}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > /dev/null
# Each file installed once, so that removing what the manifest lists removes each once.
dups=$(sort "$build/install_manifest.txt" | uniq -d)
[ -z "$dups" ] || { echo "install_consumer: installed more than once: $dups"; exit 1; }

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
if [ "$tool" = tool ]; then
  run "$prefix/bin/prism" --version | grep -Eq '^prism [0-9]+\.[0-9]+\.[0-9]+$'
  run "$prefix/bin/prism" plan 64 64 65536 --threads 2 | grep -q '^bfs k thread'
else
  echo "install_consumer: this build has no command-line tool (PRISM_WITH_APPS=OFF): bin/prism must be absent"
  test ! -e "$prefix/bin/prism"
fi

# CMake: find_package(prism REQUIRED) through CMAKE_PREFIX_PATH alone.
run cmake -S "$src/tests/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DPRISM_EXAMPLES_DIR="$src/examples" -DCMAKE_CXX_FLAGS="$flags" > /dev/null
run cmake --build "$work/cmake" > /dev/null
run "$work/cmake/examples/gram"
run "$work/cmake/consumer_blas"
if [ -x "$work/cmake/consumer_scalapack" ]; then  # an MPI build
  # A C project (no C++ enabled) finds and links the ScaLAPACK drop-in.
  run cmake -S "$src/tests/consumer_c" -B "$work/cmake-c" -DCMAKE_PREFIX_PATH="$prefix" > "$work/c.log" 2>&1 ||
    { cat "$work/c.log"; echo "install_consumer: a C project could not find COMPONENTS scalapack"; exit 1; }
  run cmake --build "$work/cmake-c" > "$work/c-build.log" 2>&1 || { cat "$work/c-build.log"; exit 1; }
  run OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$work/cmake-c/consumer_c" | grep -q "consumer_c: ok (pdgemm_ linked)"
fi
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

# A user of prism::prism needs no MPI: with CMake unable to find one, the example configures,
# builds and runs; the dist component, asked for, is refused with the reason.
run cmake -S "$src/examples" -B "$work/no-mpi" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON \
  -DCMAKE_CXX_FLAGS="$flags" > /dev/null
run cmake --build "$work/no-mpi" > /dev/null
run "$work/no-mpi/gram"
mkdir -p "$work/wants-dist"
cat > "$work/wants-dist/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(wants_dist CXX)
find_package(prism REQUIRED COMPONENTS dist)
CMAKE
if run cmake -S "$work/wants-dist" -B "$work/wants-dist/build" -DCMAKE_PREFIX_PATH="$prefix" \
     -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON > "$work/wants-dist.log" 2>&1; then
  cat "$work/wants-dist.log"; echo "install_consumer: COMPONENTS dist configured without MPI"; exit 1
fi
grep -q "MPI" "$work/wants-dist.log" || { cat "$work/wants-dist.log"; echo "install_consumer: the refusal does not name MPI"; exit 1; }

# pkg-config, the C++ library: the example program from `pkg-config --cflags --libs prism`.
pc=$(find "$prefix" -name prism.pc)
cflags_libs=$("${clean[@]}" PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --cflags --libs prism)
echo "pkg-config --cflags --libs prism: $cflags_libs"
# shellcheck disable=SC2086
run c++ -std=c++20 $flags "$src/examples/gram.cpp" -o "$work/pkgconfig_gram" $cflags_libs
run "$work/pkgconfig_gram"

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
