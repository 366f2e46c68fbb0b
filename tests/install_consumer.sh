#!/usr/bin/env bash
# ctest: installs the build tree into a temporary prefix, then configures, builds and runs
# tests/consumer against it (find_package(prism), prism::prism, public headers only).
set -euo pipefail
build=$1; src=$2; flags=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > /dev/null
cmake -S "$src/tests/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_FLAGS="$flags" > /dev/null
cmake --build "$work/consumer" > /dev/null
# Only the public headers were installed: no lib/ internals.
test -f "$work/prefix/include/prism/prism.hpp"
test ! -e "$work/prefix/include/prism/runtime.hpp"
LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/consumer/consumer"
LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/consumer/consumer_blas"
