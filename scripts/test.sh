#!/usr/bin/env bash
# Command 2 of the README: installs what is missing, builds the library, tool, benchmark
# and test suites (Release), and runs every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${PRISM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPRISM_WITH_TESTS=ON -DPRISM_WITH_BENCH=ON
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j1
