#!/usr/bin/env bash
# tests/cli_errors.sh PRISM — walks the command line's promise (apps/prism.cpp): every bad
# input (command, option, value, PRISM_* variable, a size this machine cannot hold) exits 2
# with exactly one line on stderr naming it; good invocations exit 0 with nothing on stderr.
set -uo pipefail
prism=${1:?usage: cli_errors.sh PATH/TO/prism}
failures=0 cases=0 rc=0 what=""
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# call [VAR=VALUE...] -- ARGS...: runs prism with those variables; sets rc and what.
call() {
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  cases=$((cases + 1))
  what="${envs[*]} prism $*"
  env "${envs[@]}" "$prism" "$@" >"$out" 2>"$err"
  rc=$?
}

# bad PATTERN [VAR=VALUE...] -- ARGS...: exit 2, one stderr line matching PATTERN (grep -E).
bad() {
  local pattern=$1; shift
  call "$@"
  local lines
  lines=$(wc -l <"$err")
  echo "$what -> $rc: $(cat "$err")"
  [ "$rc" -eq 2 ] || fail "'$what' exited $rc, expected 2"
  [ "$lines" -eq 1 ] || fail "'$what' wrote $lines lines on stderr, expected 1"
  grep -Eq -- "$pattern" "$err" || fail "'$what': stderr does not match /$pattern/"
}

# good PATTERN [VAR=VALUE...] -- ARGS...: exit 0, stdout matching PATTERN, stderr empty.
good() {
  local pattern=$1; shift
  call "$@"
  echo "$what -> $rc"
  [ "$rc" -eq 0 ] || fail "'$what' exited $rc, expected 0"
  [ -s "$err" ] && fail "'$what' wrote on stderr: $(cat "$err")"
  grep -Eq -- "$pattern" "$out" || { cat "$out"; fail "'$what': stdout does not match /$pattern/"; }
}

# Commands.
bad "^prism: missing command" --
bad "^prism: unknown command 'frob' \(see 'prism help'\)$" -- frob
bad "^prism: unknown command 'frob'" -- help frob
bad "^prism: help takes at most one command" -- help plan bench
bad "^prism: --version takes no arguments" -- --version plan
# Shapes.
bad "^prism: prism plan needs M N K \(see 'prism help plan'\)$" -- plan 8 8
bad "^prism: K must be a whole number >= 0, got 'x'" -- plan 8 8 x
bad "^prism: M must be a whole number >= 0, got '-1'" -- plan -1 8 8
bad "^prism: N must be a whole number >= 0, got '99999999999999999999'" -- plan 8 99999999999999999999 8
# Options and their values.
bad "^prism: unknown option '--frob' for 'prism plan'" -- plan 8 8 8 --frob
bad "^prism: unknown option '--reps' for 'prism plan'" -- plan 8 8 8 --reps 3
bad "^prism: unknown option '--threads' for 'prism leaves'" -- leaves --threads 2
bad "^prism: --types must be letters from s, d, c, z" -- leaves --types dx
bad "^prism: --types must be letters from s, d, c, z" -- leaves --streaming --types dx  # --streaming and --types together
bad "^prism: PRISM_LEAF_KERNELS: unknown openblas kernel set 'Icelake'" PRISM_LEAF_KERNELS=openblas=Icelake -- leaves --reps 1
bad "^prism: PRISM_LEAF_KERNELS: 'zen3' is not library=kernels" PRISM_LEAF_KERNELS=zen3 -- plan 8 8 8
bad "^prism: --threads needs a value \(see 'prism help plan'\)$" -- plan 8 8 8 --threads
bad "^prism: --threads must be a whole number in 1\.\.4096, got '0'" -- plan 8 8 8 --threads 0
bad "^prism: --threads must be a whole number in 1\.\.4096, got 'many'" -- plan 8 8 8 --threads many
bad "^prism: --type must be s, d, c or z, got 'q'" -- plan 8 8 8 --type q
bad "^prism: --trans must be two letters from N, T, C" -- plan 8 8 8 --trans XY
bad "^prism: --max-memory: not a non-negative integer: 'banana'" -- plan 8 8 8 --max-memory banana
bad "^prism: --max-memory: trailing characters in '1X'" -- plan 8 8 8 --max-memory 1X
bad "^prism: --small-flops: not a non-negative integer: '-5'" -- plan 8 8 8 --small-flops -5
bad "^prism: --extra-depth must be a whole number in 0\.\.8, got '9'" -- plan 8 8 8 --extra-depth 9
bad "^prism: --leaf: unknown leaf backend 'mkl' \(expected openblas, blis, streaming or auto\)" -- plan 8 8 8 --leaf mkl
bad "^prism: --topology: hwloc: invalid synthetic topology 'nonsense'" -- plan 8 8 8 --topology nonsense
bad "^prism: --topology: hwloc: cannot read topology XML '/nonexistent.xml'" -- plan 8 8 8 --topology /nonexistent.xml
bad "^prism: --reps must be a whole number in 1\.\.1000000, got '0'" -- bench 8 8 8 --reps 0
# Sizes this machine cannot hold are refused before anything is allocated.
bad "^prism: not enough memory for A: [0-9.]+ PiB \(A, B and C need [0-9.]+ PiB, this machine has [0-9.]+ [GTM]iB\)$" \
  -- bench 99999999 99999999 99999999
bad "^prism: prism bench compares with 32-bit OpenBLAS" -- bench 8 8 3000000000
bad "^prism: cannot plan a 9999999999x9999999999x9999999999 product: prism plan: .*exceed the address space$" \
  -- plan 9999999999 9999999999 9999999999
# The environment.
bad "^prism: PRISM_MAX_MEMORY: not a non-negative integer: 'banana'$" PRISM_MAX_MEMORY=banana -- plan 8 8 8
bad "^prism: PRISM_LEAF: unknown leaf backend 'mkl'" PRISM_LEAF=mkl -- plan 8 8 8
bad "^prism: PRISM_NUM_THREADS: thread count must be in 1\.\.4096, got 0$" PRISM_NUM_THREADS=0 -- plan 8 8 8
bad "^prism: PRISM_EXTRA_DEPTH: extra depth must be in 0\.\.8, got 9$" PRISM_EXTRA_DEPTH=9 -- plan 8 8 8
bad "^prism: PRISM_SMALL_FLOPS: not a non-negative integer: '-1'$" PRISM_SMALL_FLOPS=-1 -- plan 8 8 8
bad "^prism: PRISM_TOPOLOGY: hwloc: invalid synthetic topology 'nonsense'$" PRISM_TOPOLOGY=nonsense -- plan 8 8 8

# What works.
good "^prism [0-9]+\.[0-9]+\.[0-9]+$" -- --version
good "^usage: prism <command>" -- help
good "^usage: prism <command>" -- --help
good "^usage: prism plan M N K" -- help plan
good "^usage: prism plan M N K" -- plan --help
good "^usage: prism bench M N K" -- bench 8 8 8 -h
good "max_memory=1073741824" -- plan 8 8 8 --max-memory 1G
good "max_memory=65536 " PRISM_MAX_MEMORY=64K -- plan 8 8 8
good "^# empty product" -- plan 0 8 8
# The threshold is the machine's (2·84³ on the example machine, whose description pins it).
example_machine="$(cd "$(dirname "$0")/.." && pwd)/docs/machines/epyc-2c.machine"
good "^# small call: 8192 flops < PRISM_SMALL_FLOPS 1185408, runs as one leaf on the caller's thread$" PRISM_MACHINE="$example_machine" -- plan 16 16 16
[ "$(grep -c '^ *leaf' "$out")" -eq 1 ] || fail "prism plan 16 16 16 shows more than one leaf"
good "^bfs [mnk] thread" -- plan 16 16 16 --small-flops 0 --trans tn --type z
good "^bfs k thread" -- plan 64 64 65536 --threads 8
good "^# extra memory 0 bytes, depth 11, 2048 leaves$" -- plan 99999999 99999999 99999999 --threads 2 --topology "package:1 l3:1(size=8MB) core:2 pu:1"  # bounded cache DFS
good "^# predicted bytes read by each domain" -- plan 64 64 1048576 --topology "package:2 numa:2 core:2 pu:1"
# Plans over MPI ranks (no MPI needed to plan).
good "^# rank level: 7 ranks given, 7 used" -- plan 2048 2048 2048 --ranks 7 --threads 1
good "^# summary: [0-9]+ rank-level steps" -- plan 65536 65536 65536 --ranks 16384 --threads 1
good "^# rank level: 100000 ranks given" -- plan 50000 50000 50000 --ranks 100000 --threads 1
good "^    same rank 0 " -- plan 64 64 64 --ranks 4 --threads 1 --full
bad "^prism: unknown option '--full' for 'prism bound'" -- bound 8 8 8 --full
good "rank-level dfs phases" -- plan 512 512 4096 --ranks 4 --threads 1 --memory 13M
bad "^prism: --ranks must be a whole number in 1\.\.1048576, got '0'" -- plan 64 64 64 --ranks 0
bad "^prism: --ranks must be a whole number" -- plan 64 64 64 --ranks x
bad "^prism: cannot plan over 4 ranks: .*fits 1048576 bytes per rank" -- plan 2048 2048 2048 --ranks 4 --memory 1M
bad "^prism: --rank-bandwidth: " -- plan 64 64 64 --ranks 2 --rank-bandwidth 0
bad "^prism: unknown option '--check' for 'prism plan'" -- plan 64 64 64 --check
# Rank-k updates (prism plan --syrk / --herk): the plan prism::syrk / prism::herk run.
bad "^prism: --syrk: the update is N x N, so M and N must be equal, got 8 and 9 \(see 'prism help plan'\)$" -- plan 8 9 8 --syrk UT
bad "^prism: --syrk takes uplo \(U or L\) then trans \(N or T\), e.g. UT, got 'XT'" -- plan 8 8 8 --syrk XT
bad "^prism: --syrk takes uplo \(U or L\) then trans \(N or T\), e.g. UT, got 'UC'" -- plan 8 8 8 --syrk UC
bad "^prism: --herk takes uplo \(U or L\) then trans \(N or C\), e.g. LC, got 'UT'" -- plan 8 8 8 --herk UT --type z
bad "^prism: --herk needs a complex type \(--type c or z\)" -- plan 8 8 8 --herk UC
bad "^prism: --syrk names trans itself; --trans is for gemm" -- plan 8 8 8 --syrk UT --trans TN
bad "^prism: --syrk and --herk are given once, not both" -- plan 8 8 8 --syrk UT --herk UC --type z
bad "^prism: --syrk: syrk and herk plans have no rank-level steps \(--ranks 1\)" -- plan 64 64 64 --syrk UT --ranks 2
bad "^prism: --syrk needs a value" -- plan 8 8 8 --syrk
bad "^prism: unknown option '--syrk' for 'prism bench'" -- bench 8 8 8 --syrk UT
good "^problem d syrk UT 32 32 4194304$" -- plan 32 32 4194304 --syrk UT --threads 2
[ "$(grep -c '^bfs k thread 2097152@1t 2097152@1t' "$out")" -eq 1 ] || fail "the Gram syrk plan is not a 2-part k-cut"
good "^bfs n thread 512@1t 512@1t gemm@1t" -- plan 1024 1024 1024 --herk lc --type z --threads 2
good "^problem z herk LC 1024 1024 1024$" -- plan 1024 1024 1024 --herk lc --type z --threads 2
good "^bfs n numa 256@1d,2t 256@1d,2t gemm@1d,2t" -- plan 512 512 512 --syrk LN --threads 4 --topology "numa:2 core:2 pu:1"
good "^# small call: .* runs as one leaf on the caller's thread$" -- plan 8 8 8 --syrk LN
good "^# empty update \(n or k is 0\)" -- plan 0 0 5 --syrk UN
# plan --stats: per level, predicted elements, bound and ratio (issue 15); a flag of plan only.
good "^# L1 .* one thread; bound: sequential_io" -- plan 256 256 256 --threads 1 --stats --topology "package:1 l3:1(size=8MB) l2:1(size=1MB) l1d:1(size=49152) core:1 pu:1"
good "^# numa .* parallel_io_minus_owned over 2 domains" -- plan 64 64 1048576 --stats --topology "package:2 numa:2 core:2 pu:1"
good "^# ranks .* parallel_io_minus_owned over 8 ranks" -- plan 2048 2048 2048 --ranks 8 --threads 1 --stats
bad "^prism: unknown option '--stats' for 'prism bench'" -- bench 64 64 64 --stats
bad "^prism: unknown option '--stat' for 'prism plan'" -- plan 64 64 64 --stat
bad "^prism: N must be a whole number >= 0, got '-4'" -- plan 64 -4 64 --stats
bad "^prism: --topology: hwloc: invalid synthetic topology 'l1d:x'" -- plan 64 64 64 --stats --topology l1d:x
# prism tune refuses to overwrite an example machine, and takes only its own options.
bad "describes an example machine; give --out FILE" -- tune --out "$example_machine"
bad "^prism: unknown option '--threads' for 'prism tune'" -- tune --threads 2
# A tiny call is timed over many calls, and shown in ns or us rather than "0.0000 s".
good "^  prism \(2 threads\) +[0-9.]+ (ns|us|ms|s) per call" -- bench 16 16 16 --reps 1 --threads 2
# A budget above this machine's cores: no oneTBB warning on stderr (good() checks it is empty).
good "^  prism \(8 threads\)" -- bench 64 64 65536 --reps 1 --threads 8
# prism bound: sizes >= 1, its own options, a topology hwloc can read.
bad "^prism: prism bound needs M N K \(see 'prism help bound'\)$" -- bound 8 8
bad "^prism: M must be a whole number >= 1, got '0'" -- bound 0 8 8
bad "^prism: K must be a whole number >= 1, got '-5'" -- bound 8 8 -5
bad "^prism: unknown option '--threads' for 'prism bound'" -- bound 8 8 8 --threads 2
bad "^prism: --ranks must be a whole number in 1\.\.1048576, got '0'" -- bound 8 8 8 --ranks 0
bad "^prism: --memory must be > 0, got '0'" -- bound 8 8 8 --memory 0
bad "^prism: --memory must be a whole number" -- bound 8 8 8 --memory lots
bad "^prism: --memory needs a value" -- bound 8 8 8 --memory
bad "^prism: --topology: " -- bound 8 8 8 --topology "frob:3"
bad "^prism: --topology: " -- bound 8 8 8 --topology /nonexistent/machine.xml
bad "^prism: --bandwidth takes LEVEL=BYTES_PER_S" -- bound 8 8 8 --bandwidth L3
bad "^prism: --bandwidth: no level 'L9' here" -- bound 8 8 8 --topology "package:1 l3:1(size=8MB) core:2 pu:1" --bandwidth L9=1G
good "^Theorem 2 \(COSMA\): Q - owned = 1\.573e6 words per rank" -- bound 2048 2048 2048 --ranks 8
good "^usage: prism bound M N K" -- help bound
good "machine balance: L3 bounds the run" -- bound 4096 4096 4096 --topology "package:1 l3:1(size=8MB) core:2 pu:1" --peak 50G --bandwidth L3=100M

echo "cli_errors: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
