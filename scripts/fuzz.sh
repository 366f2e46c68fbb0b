#!/usr/bin/env bash
# scripts/fuzz.sh [RUNS] [TARGET...] — the long fuzz campaign (docs/development.md,
# "Fuzzing"): builds the libFuzzer targets with clang, ASan and UBSan (the fuzz preset,
# build-fuzz/) and runs each TARGET (default: plan machine env descriptor) for RUNS
# executions (default 10^6) from its committed corpus tests/fuzz/corpus/TARGET, with a
# per-input timeout of 10 s and a 2 GiB memory limit; FUZZ_JOBS targets run at once
# (default 2). Inputs that add coverage are merged back into the committed corpus
# (libFuzzer's -merge=1: only inputs with new coverage); a crash, sanitizer report, timeout
# or out-of-memory is written as tests/fuzz/corpus/TARGET/crash-* (or timeout-*, oom-*),
# which the replay ctest then keeps replaying. Appends one row per target to
# tests/fuzz/campaign.md: date, executions, seconds, corpus size, findings. FUZZ_MAX_SECONDS
# stops each target earlier (the row then records the executions it reached).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(plan machine env descriptor)
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is missing (apt-get install clang)" >&2; exit 1; }
[ -f build-fuzz/CMakeCache.txt ] || cmake --preset fuzz
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/#/fuzz_}"
log=$(mktemp -d)
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
one() {
  local t=$1 corpus=tests/fuzz/corpus/$1 work=$log/$1
  mkdir -p "$work"
  # Open MPI's own allocations at exit are not prism's: no leak check for the MPI target. LSan as
  # the asan preset runs it (use_tls=0: its tracer crashed at exit with serial BLIS loaded).
  local leaks=1
  [ "$t" = descriptor ] && leaks=0
  local start=$SECONDS rc=0
  LSAN_OPTIONS=use_tls=0:suppressions=$PWD/tests/lsan.supp ASAN_OPTIONS=detect_leaks=$leaks:allocator_may_return_null=1 nice -n 10 build-fuzz/tests/fuzz/fuzz_"$t" \
    -runs="$runs" -max_total_time="${FUZZ_MAX_SECONDS:-0}" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
    -artifact_prefix="$corpus/" "$work" "$corpus" >"$log/$t.log" 2>&1 || rc=$?
  local secs=$((SECONDS - start))
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log/$t.log" | tail -1)
  ASAN_OPTIONS=detect_leaks=0 build-fuzz/tests/fuzz/fuzz_"$t" -merge=1 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$log/" "$corpus" "$work" >>"$log/$t.merge.log" 2>&1 || true
  local found
  found=$(ls "$corpus" | grep -cE '^(crash|timeout|oom|leak)-' || true)
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$(uname -n), $(nproc) CPUs, $(clang++ --version | head -1 | sed 's/ (.*//')" "$t" "${execs:-?}" "$secs" \
    "$(ls "$corpus" | grep -cvE '^(crash|timeout|oom|leak)-')" "$found" "$([ $rc -eq 0 ] && echo "0 (exit 0)" || echo "exit $rc")" \
    >"$log/$t.row"
  echo "fuzz.sh: $t: ${execs:-?} executions in ${secs} s, exit $rc (log $log/$t.log)"
}
jobs_max=${FUZZ_JOBS:-2}
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 5; done
  one "$t" &
done
wait
f=tests/fuzz/campaign.md
if [ ! -f $f ]; then
  cat >$f <<'HEAD'
# Fuzz campaigns (scripts/fuzz.sh)

One row per target and run: libFuzzer (clang, ASan + UBSan, `fuzz` preset) from the
committed corpus, 10 s per input at most, 2 GiB memory limit. Findings: files crash-*,
timeout-*, oom-* left in tests/fuzz/corpus/TARGET (the replay ctest keeps them). Last
column: libFuzzer's exit (0 when the run ended without a finding).

| date | machine, compiler | target | executions | seconds | corpus files | findings | libFuzzer |
|---|---|---|---:|---:|---:|---:|---|
HEAD
fi
cat "$log"/*.row >>$f
cat "$log"/*.row
grep -q "exit [1-9]" "$log"/*.row && exit 1 || exit 0
