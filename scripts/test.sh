#!/usr/bin/env bash
# Command 2 of the README: installs what is missing, builds the library, tool, benchmark
# and test suites (Release), and runs every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${PRISM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPRISM_WITH_TESTS=ON -DPRISM_WITH_BENCH=ON
cmake --build "$build" -j"$(nproc)"
# The tests see the model's machine values, not a tuning file this user wrote with
# `prism tune` (tests that need a description name one with PRISM_MACHINE).
unset PRISM_MACHINE
XDG_CACHE_HOME=$(mktemp -d)
export XDG_CACHE_HOME
trap 'rm -rf "$XDG_CACHE_HOME"' EXIT
# Entries run side by side, as many as cores: an MPI entry (PROCESSORS 2) runs with nothing
# beside it on 2 cores, and first_use, which checks how long its own measurement took, alone.
ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
