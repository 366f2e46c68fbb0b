#!/usr/bin/env bash
# tests/cli_errors.sh PRISM [--dropin LIBPRISM_BLAS] [--mpiexec MPIEXEC] — walks the command
# line's promise (apps/main.cpp): every bad input (command, option, value, PRISM_* variable,
# a size this machine cannot hold, a flag the command would ignore) exits 2 with exactly one
# line on stderr naming it and nothing on stdout; good invocations exit 0 with nothing on
# stderr; help texts state the defaults the commands use. With --mpiexec: an error under
# mpirun is said once, by rank 0. With --dropin: every bad PRISM_* value the drop-in BLAS
# reads gives one line of one form, "prism: NAME: what is wrong; what happens next".
set -uo pipefail
prism=${1:?usage: cli_errors.sh PATH/TO/prism [--dropin LIB] [--mpiexec MPIEXEC]}
shift
dropin="" mpiexec=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dropin) dropin=$2; shift 2 ;;
    --mpiexec) mpiexec=$2; shift 2 ;;
    *) echo "cli_errors: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
failures=0 cases=0 rc=0 what=""
out=$(mktemp) err=$(mktemp) cache=$(mktemp -d)
trap 'rm -rf "$out" "$err" "$cache"' EXIT
# The model's machine values, whatever this user has tuned: no PRISM_MACHINE and an empty
# per-user cache (the cases that need a description name one with PRISM_MACHINE).
unset PRISM_MACHINE
export XDG_CACHE_HOME=$cache
# `prism run` is the MPI build's (elsewhere it says so and runs nothing): its cases need it.
has_run=1
if [[ "$("$prism" run 1 1 1 --reps 1 2>&1)" == *"needs the MPI build"* ]]; then  # (no pipe: pipefail sees its exit 2)
  has_run=0
  echo "cli_errors: prism was built without MPI; the cases that run 'prism run' are left out"
fi

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
  [ -s "$out" ] && fail "'$what' wrote on stdout before failing: $(head -3 "$out")"
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

# Commands. Without one, the line names every command `prism help` lists.
bad "^prism: missing command: plan, info, bench, run, leaves, tune, bound, help or --version \(see 'prism help'\)$" --
missing=$(cat "$err")
for c in $("$prism" help | sed -nE 's/^  ([a-z]+) .*/\1/p'); do
  case "$missing" in *" $c,"* | *" $c "*) ;; *) fail "'prism' without a command does not name '$c'" ;; esac
done
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
bad "^prism: --small-flops: not a whole number with an optional K, M or G suffix, nor a decimal number such as 5e9: '-5'" -- plan 8 8 8 --small-flops -5
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
  -- plan 9999999999 9999999999 9999999999 --threads 2
# The environment.
bad "^prism: PRISM_MAX_MEMORY: not a non-negative integer: 'banana'$" PRISM_MAX_MEMORY=banana -- plan 8 8 8
bad "^prism: PRISM_LEAF: unknown leaf backend 'mkl'" PRISM_LEAF=mkl -- plan 8 8 8
bad "^prism: PRISM_NUM_THREADS: thread count must be in 1\.\.4096, got 0$" PRISM_NUM_THREADS=0 -- plan 8 8 8
bad "^prism: PRISM_EXTRA_DEPTH: extra depth must be in 0\.\.8, got 9$" PRISM_EXTRA_DEPTH=9 -- plan 8 8 8
bad "^prism: PRISM_SMALL_FLOPS: not a whole number with an optional K, M or G suffix, nor a decimal number such as 5e9: '-1'$" PRISM_SMALL_FLOPS=-1 -- plan 8 8 8
# Rates and flop counts also as decimal numbers, as the help and the README write their defaults.
good " ranks=2 rank_flops=5e\+10 rank_bandwidth=2\.5e\+09$" PRISM_RANK_FLOPS=50e9 -- plan 64 64 64 --ranks 2 --rank-bandwidth 2.5e9
good " small_flops=1e\+06 " PRISM_SMALL_FLOPS=1e6 -- plan 8 8 8
bad "^prism: PRISM_SMALL_FLOPS: not a whole number .*: '0x10'$" PRISM_SMALL_FLOPS=0x10 -- plan 8 8 8  # decimal only
bad "^prism: PRISM_TOPOLOGY: hwloc: invalid synthetic topology 'nonsense'$" PRISM_TOPOLOGY=nonsense -- plan 8 8 8

# What works.
good "^prism [0-9]+\.[0-9]+\.[0-9]+$" -- --version
good "^usage: prism <command>" -- help
good "^usage: prism <command>" -- --help
good "^usage: prism plan M N K" -- help plan
good "^usage: prism plan M N K" -- plan --help
good "^usage: prism bench M N K" -- bench 8 8 8 -h
# The benchmark names its host and what moves its baseline (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE).
good "^# host: .+, [0-9]+ cores?; OPENBLAS_CORETYPE=[^ ]+ OPENBLAS_L2_SIZE=[^ ]+; openblas: .+ \(kernels [A-Za-z0-9]+\); prism's leaves: openblas [A-Za-z0-9]+, blis [a-z0-9]+$" -- bench 32 32 32 --reps 1
good "max_memory=1073741824" -- plan 8 8 8 --max-memory 1G
good "max_memory=65536 " PRISM_MAX_MEMORY=64K -- plan 8 8 8
good "^# empty product" -- plan 0 8 8
# Plans for this machine's threads: on a host of several NUMA domains the top step is a numa
# one, and its parts read "@1d,1t" (one domain, one thread) where one domain reads "@1t".
par="(thread|numa)" one="(1d,)?1"
# The threshold is the machine's (2·84³ on the example machine, whose description pins it).
example_machine="$(cd "$(dirname "$0")/.." && pwd)/docs/machines/epyc-2c.machine"
good "^# small call: 8192 flops < small_flops 1185408, runs as one leaf on the caller's thread$" PRISM_MACHINE="$example_machine" -- plan 16 16 16
[ "$(grep -c '^ *leaf' "$out")" -eq 1 ] || fail "prism plan 16 16 16 shows more than one leaf"
good "^bfs [mnk] $par" -- plan 16 16 16 --small-flops 0 --trans tn --type z --threads 2
good "^bfs k $par" -- plan 64 64 65536 --threads 8
good "^# extra memory 0 bytes, depth 11, 2048 leaves$" -- plan 99999999 99999999 99999999 --threads 2 --topology "package:1 l3:1(size=8MB) core:2 pu:1"  # bounded cache DFS
good "^# predicted bytes read by each domain" -- plan 64 64 1048576 --threads 2 --topology "package:2 numa:2 core:2 pu:1"
# Plans over MPI ranks (no MPI needed to plan).
good "^# rank level: 7 ranks given, 7 used" -- plan 2048 2048 2048 --ranks 7 --threads 1
good "^# summary: [0-9]+ rank-level steps" -- plan 65536 65536 65536 --ranks 16384 --threads 1
good "^# summary: [0-9]+ rank-level steps" -- plan 4096 4096 4096 --ranks 4 --min-memory  # few ranks, thousands of nodes
good "^# rank level: 100000 ranks given" -- plan 50000 50000 50000 --ranks 100000 --threads 1
good "^    same rank 0 " -- plan 64 64 64 --ranks 4 --threads 1 --full
bad "^prism: unknown option '--full' for 'prism bound'" -- bound 8 8 8 --full
good "rank-level dfs phases" -- plan 512 512 4096 --ranks 4 --threads 1 --memory 13M
bad "^prism: --ranks must be a whole number in 1\.\.1048576, got '0'" -- plan 64 64 64 --ranks 0
bad "^prism: --ranks must be a whole number" -- plan 64 64 64 --ranks x
bad "^prism: cannot plan over 4 ranks: .*fits 1048576 bytes per rank" -- plan 2048 2048 2048 --ranks 4 --memory 1M
bad "^prism: --rank-bandwidth: " -- plan 64 64 64 --ranks 2 --rank-bandwidth 0
bad "^prism: unknown option '--check' for 'prism plan'" -- plan 64 64 64 --check
# GPUs (no GPU needed to plan; prism run emulates missing ones).
good "^gpu: " -- info
good "^gpu: no GPU: PRISM_GPU=off$" PRISM_GPU=off -- info
good "^gpu 1: emulated device 1" PRISM_GPU=emulate:2:64M -- info
bad "^prism: info takes no arguments \(see 'prism help info'\)$" -- info 8
bad "^prism: PRISM_NUM_THREADS: thread count must be in 1\.\.4096, got 0$" PRISM_NUM_THREADS=0 -- info
bad "^prism: PRISM_LEAF: unknown leaf backend 'mkl'" PRISM_LEAF=mkl -- info
# GPU plans have no rank level: their options with --ranks are refused, not ignored.
bad "^prism: --gpus plans on GPUs, which have no rank level: give it without --ranks" -- plan 1024 1024 1024 --gpus 1 --ranks 2
bad "^prism: --on-device plans on GPUs, which have no rank level" -- plan 1024 1024 1024 --on-device --ranks 2
bad "^prism: --gpu-memory plans on GPUs, which have no rank level" -- plan 1024 1024 1024 --ranks 2 --gpu-memory 8G
good "^ranks 2$" -- plan 1024 1024 1024 --gpus 0 --ranks 2
good "^devices 2 memory 8589934592$" -- plan 32768 32768 32768 --gpus 2 --gpu-memory 8G
good "^# 1 +32768x16384x32768 " -- plan 32768 32768 32768 --gpus 2 --gpu-memory 8G
good "^devices 1 memory " -- plan 4096 4096 1048576 --syrk LT --gpus 1
good "^# gpu 1 " -- plan 8192 8192 8192 --gpus 2 --stats
# A GPU rank-k run's record names its uplo and its trans, as the MPI path's does.
[ "$has_run" = 1 ] &&
  good '"op":"syrk",.*"uplo":"L","trans":"T","m"' PRISM_GPU=emulate:1:1M -- run 100 100 50 --syrk LT --gpus 1 --gpu-memory 1M --reps 1 --json
bad "^prism: --gpus must be a whole number in 0\.\.1024, got '-1'" -- plan 64 64 64 --gpus -1
bad "^prism: --gpu-memory: GPU memory must be at least 1M, got 1024" -- plan 64 64 64 --gpus 1 --gpu-memory 1K
bad "^prism: cannot plan a 1048576x1048576x64 product: .*cannot hold" -- plan 1048576 1048576 64 --gpus 1 --gpu-memory 1M
bad "^prism: unknown option '--gpus' for 'prism bench'" -- bench 8 8 8 --gpus 1
if [ "$has_run" = 1 ]; then
  good "^counts: every device moved exactly the predicted bytes" -- run 200 150 170 --gpus 2 --gpu-memory 1M --check --reps 1 --threads 2
  good "^check: passed" -- run 200 150 170 --gpus 2 --gpu-memory 1M --check --reps 1 --threads 2 --type z --trans CT
  good "^check: passed" -- run 100 100 3000 --syrk LT --gpus 1 --gpu-memory 1M --check --reps 1 --threads 2
fi
# Rank-k updates (prism plan --syrk / --herk): the plan prism::syrk / prism::herk run.
bad "^prism: --syrk: the update is N x N, so M and N must be equal, got 8 and 9 \(see 'prism help plan'\)$" -- plan 8 9 8 --syrk UT
bad "^prism: --syrk takes uplo \(U or L\) then trans \(N or T\), e.g. UT, got 'XT'" -- plan 8 8 8 --syrk XT
bad "^prism: --syrk takes uplo \(U or L\) then trans \(N or T\), e.g. UT, got 'UC'" -- plan 8 8 8 --syrk UC
bad "^prism: --herk takes uplo \(U or L\) then trans \(N or C\), e.g. LC, got 'UT'" -- plan 8 8 8 --herk UT --type z
bad "^prism: --herk needs a complex type \(--type c or z\)" -- plan 8 8 8 --herk UC
bad "^prism: --syrk names trans itself; --trans is for gemm" -- plan 8 8 8 --syrk UT --trans TN
bad "^prism: --syrk and --herk are given once, not both" -- plan 8 8 8 --syrk UT --herk UC --type z
good "^# syrk UT n 4096 k 4096 over ranks: scheme tbd3\{0,1\}\[3,2,2\]" -- plan 4096 4096 4096 --syrk UT --ranks 7
good "^# least footprint: [0-9]+ bytes per rank" -- plan 512 512 40000 --syrk LT --ranks 4 --min-memory
good "^# rank level: 16384 ranks given" -- plan 65536 65536 65536 --herk UC --type z --ranks 16384
bad "^prism: --syrk --ranks: --stats models gemm plans over ranks" -- plan 64 64 64 --syrk UT --ranks 2 --stats
bad "^prism: cannot plan over 4 ranks: prism plan: no rank-k scheme over 4 ranks fits 1000 bytes per rank \(the least footprint: [0-9]+ bytes" -- plan 512 512 40000 --syrk LT --ranks 4 --memory 1000
bad "^prism: --syrk needs a value" -- plan 8 8 8 --syrk
# prism bench --syrk / --herk: prism::syrk / herk against OpenBLAS's, the same checks as plan's.
good "^shape 8x8x8 type d syrk UT, best of 1 timings" -- bench 8 8 8 --syrk UT --reps 1
good "^shape 16x16x40 type z herk LC, best of 1 timings" -- bench 16 16 40 --herk LC --type z --reps 1
bad "^prism: --herk needs a complex type \(--type c or z\)" -- bench 8 8 8 --herk LC
bad "^prism: --syrk: the update is N x N, so M and N must be equal, got 8 and 9" -- bench 8 9 8 --syrk UT
bad "^prism: --syrk takes uplo \(U or L\) then trans \(N or T\), e.g. UT, got 'UC'" -- bench 8 8 8 --syrk UC
good "^problem d syrk UT 32 32 4194304$" -- plan 32 32 4194304 --syrk UT --threads 2
[ "$(grep -Ec "^bfs k $par 2097152@${one}t 2097152@${one}t" "$out")" -eq 1 ] || fail "the Gram syrk plan is not a 2-part k-cut"
good "^bfs n $par 512@${one}t 512@${one}t gemm@${one}t" -- plan 1024 1024 1024 --herk lc --type z --threads 2
good "^problem z herk LC 1024 1024 1024$" -- plan 1024 1024 1024 --herk lc --type z --threads 2
good "^bfs n numa 256@1d,2t 256@1d,2t gemm@1d,2t" -- plan 512 512 512 --syrk LN --threads 4 --topology "numa:2 core:2 pu:1"
good "^# small call: .* runs as one leaf on the caller's thread$" -- plan 8 8 8 --syrk LN
good "^# empty update \(n or k is 0\)" -- plan 0 0 5 --syrk UN
# plan --stats: per level, predicted elements, bound and ratio; a flag of plan only.
good "^# L1 .* one thread; bound: sequential_io" -- plan 256 256 256 --threads 1 --stats --topology "package:1 l3:1(size=8MB) l2:1(size=1MB) l1d:1(size=49152) core:1 pu:1"
good "^# numa .* parallel_io_minus_owned over 2 domains" -- plan 64 64 1048576 --threads 2 --stats --topology "package:2 numa:2 core:2 pu:1"
good "^# ranks .* parallel_io_minus_owned over 8 ranks" -- plan 2048 2048 2048 --ranks 8 --threads 1 --stats
bad "^prism: unknown option '--stats' for 'prism bench'" -- bench 64 64 64 --stats
bad "^prism: unknown option '--stat' for 'prism plan'" -- plan 64 64 64 --stat
bad "^prism: N must be a whole number >= 0, got '-4'" -- plan 64 -4 64 --stats
bad "^prism: M must be a whole number >= 0, got '.64'" -- plan "$(printf '\t64')" 64 64
bad "^prism: --threads must be a whole number in 1\.\.4096, got '\+2'" -- plan 64 64 64 --threads +2
bad "^prism: --beta must be a finite number, got ' 1'" -- run 8 8 8 --beta " 1"
# A memory refusal names a command that prints the least footprint, and only over ranks.
[ "$has_run" = 1 ] &&
  bad "fits 1 bytes per rank; no plan holds less than 1536 bytes per rank \(A, B and C alone, spread over 1 rank\)$" -- run 8 8 8 --memory 1 --reps 1
bad "; prism plan 8 8 8 --ranks 3 --min-memory prints the least-footprint plan$" -- plan 8 8 8 --ranks 3 --memory 1
good "^# why: least footprint per rank" -- plan 8 8 8 --ranks 3 --min-memory
# A bound for operands spread over every rank says so when ranks sit out (and then hold none).
good "^# predicted per rank: received max 0\.000 MB, .* \(COSMA Thm 2 minus owned, 2 ranks: for A, B and C spread over all; the 1 used hold them\)" -- plan 64 64 64 --ranks 2 --threads 2
# The least-footprint plan's predicted peak is the footprint it names (no local temporaries on top).
good "^# why: least footprint per rank of the plans searched: [0-9]+ bytes per rank" -- plan 512 512 512 --ranks 2 --min-memory
footprint=$(grep -oE 'plans searched: [0-9]+ bytes' "$out" | grep -oE '[0-9]+')
peak=$(grep -oE 'peak memory [0-9.]+ MB' "$out" | grep -oE '[0-9.]+')
[ "$(awk -v b="$footprint" 'BEGIN { printf "%.3f", b / 1e6 }')" = "$peak" ] ||
  fail "'$what': peak memory $peak MB is not the least footprint $footprint bytes"
bad "^prism: --topology: hwloc: invalid synthetic topology 'l1d:x'" -- plan 64 64 64 --stats --topology l1d:x
# prism tune refuses to overwrite an example machine, and takes only its own options.
bad "describes an example machine; give --out FILE" -- tune --out "$example_machine"
bad "^prism: unknown option '--threads' for 'prism tune'" -- tune --threads 2
bad "^prism: --show and --first-use only print: give one, without --out or --reps" -- tune --show --out /nonexistent/x
bad "^prism: --out /tmp is a directory" -- tune --out /tmp
bad "^prism: --out needs a file name, got ''" -- tune --out ''
bad "^prism: cannot write $out/cache/prism/machine: cannot create $out/cache/prism \(Not a directory\)" XDG_CACHE_HOME="$out/cache" -- tune
# PRISM_MACHINE naming the file tune is to write: its absence is no warning (one line, the error).
bad "^prism: cannot write $out/m/machine: cannot create $out/m \(Not a directory\)" PRISM_MACHINE="$out/m/machine" -- tune
bad "^prism: --show and --first-use only print" -- tune --first-use --reps 2
bad "^prism: --show and --first-use only print" -- tune --show --first-use
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
# prism bound --syrk: C = A A^T needs M = N, takes --ranks and --type only, and
# optional letters as plan's --syrk; refusals print nothing on stdout (and never probe).
good "^SYRK lower bound, 3D case: 3144959\.96 words per rank \(25\.16 MB\)" -- bound 4096 4096 4096 --syrk --ranks 8
good "^  case: 1D " -- bound 256 256 1048576 --syrk UT --ranks 16
good "^  condition: P k\^2 < n\(n-1\)" -- bound 4096 4096 256 --syrk LN --ranks 4
good "^SYRK / gemm: 0\.500$" -- bound 4096 4096 4096 --ranks 8 --syrk --type d
good "^  condition: P = 1" -- bound 100 100 10 --syrk
good "--syrk \[UT\]: the SYRK bound instead" -- help bound
bad "^prism: --syrk: the update is N x N, so M and N must be equal, got 8 and 9 \(see 'prism help bound'\)$" -- bound 8 9 8 --syrk
bad "^prism: --syrk takes uplo \(U or L\) then trans \(N or T\), e\.g\. UT, got 'XY'" -- bound 8 8 8 --syrk XY
bad "^prism: --syrk takes uplo \(U or L\) then trans \(N or T\), e\.g\. UT, got 'UC'" -- bound 8 8 8 --syrk UC
bad "^prism: --syrk is given once" -- bound 8 8 8 --syrk --syrk
bad "^prism: --syrk: the SYRK bound is per rank and memory-independent; --memory does not apply" -- bound 8 8 8 --syrk --memory 1M
bad "^prism: --syrk: .*; --probe does not apply" -- bound 8 8 8 --probe --syrk
bad "^prism: --syrk: .*; --topology, --peak do not apply" -- bound 8 8 8 --syrk --topology "package:1 core:2 pu:1" --peak 1G
bad "^prism: --ranks must be a whole number in 1\.\.1048576, got '0'" -- bound 8 8 8 --syrk --ranks 0

# Flags a command would ignore are errors.
bad "^prism: unknown option '--ranks' for 'prism bench'" -- bench 8 8 8 --ranks 2
bad "^prism: unknown option '--rank-flops' for 'prism bench'" -- bench 8 8 8 --rank-flops 1G
bad "^prism: unknown option '--ranks' for 'prism run' \(see 'prism help run'\)$" -- run 8 8 8 --ranks 2  # P comes from mpirun
bad "^prism: unknown option '--summary' for 'prism run'" -- run 8 8 8 --summary
bad "^prism: unknown option '--out' for 'prism plan'" -- plan 8 8 8 --out /tmp/x
bad "^prism: --rank-flops models the rank level: give --ranks P with P >= 2" -- plan 8 8 8 --rank-flops 1G
bad "^prism: --rank-bandwidth models the rank level: give --ranks P with P >= 2" -- plan 8 8 8 --ranks 1 --rank-bandwidth 1G
bad "^prism: --ranks-per-node models the rank level" -- plan 8 8 8 --ranks-per-node 2
bad "^prism: --summary and --full are opposites; give one" -- plan 8 8 8 --summary --full
bad "^prism: --streaming and --syrk name two tables; give one" -- leaves --streaming --syrk
bad "^prism: unknown option '--types' for 'prism tune'" -- tune --types d

# Help texts state the defaults the commands use.
good "--reps R +timings to take the best of, 1\.\.1000000 \(default 5\)$" -- help bench
good "--reps R +timings to take the best of, 1\.\.1000000 \(default 5\)$" -- help leaves
good "--reps R +timings to take the best of, 1\.\.1000000 \(default 3\)$" -- help tune
good "--reps R +timed calls, the best reported, 1\.\.1000000 \(default 3\)$" -- help run
good "--threads T +thread budget of each rank, 1\.\.4096 \(default: the node's cores / its ranks\)$" -- help run
good "--extra-depth E .*else 0\)$" -- help plan
good "--rank-flops F .*else 50e9 x threads\)$" -- help plan
good "--rank-bandwidth B .*else 5e9\)$" -- help plan
good "^  --ranks P +processors \(MPI ranks\), 1\.\.1048576 \(default 1\)$" -- help bound
# ... and the defaults are those: with no PRISM_* variable, plan's context line shows them.
good "^# context: threads=[0-9]+ max_memory=none small_flops=[0-9.e+]+ leaf=auto extra_depth=0 cache_level=3$" \
  -u PRISM_NUM_THREADS -u PRISM_MAX_MEMORY -u PRISM_SMALL_FLOPS -u PRISM_LEAF -u PRISM_EXTRA_DEPTH -u PRISM_CACHE_LEVEL \
  -- plan 8 8 8
good " ranks=2 rank_flops=5e\+10 rank_bandwidth=5e\+09$" -u PRISM_RANK_FLOPS -u PRISM_RANK_BANDWIDTH \
  -- plan 64 64 64 --ranks 2 --threads 1
good "^  --reps R .*\(default 5\)" -- help bench
[ "$(grep -c 'default' "$out")" -ge 1 ] || fail "prism help bench states no defaults"

# A plan too big to read is summarised, with --full for all of it; a small one is printed whole.
# The plan's shape depends on the caches, so these pin the example machine (1 MiB L2 and
# 508 MiB L3 per core: 48 leaves); a host with a smaller last-level cache cuts more.
good "^# summary: [0-9]+ runs? of cache-level steps folded, one line each \(--full prints the plan\)$" \
  PRISM_MACHINE="$example_machine" -- plan 64 64 16777216 --threads 3 --leaf openblas
[ "$(wc -l <"$out")" -le 40 ] || fail "the summary of plan 64 64 16777216 --threads 3 has $(wc -l <"$out") lines"
grep -Eq "^ +# \.\.\. [0-9]+ more cache-level steps, [0-9]+ leaves \(openblas\) from 64x64x[0-9]+" "$out" ||
  fail "the summary does not fold the cache-level steps"
good "^# extra memory .* leaves$" PRISM_MACHINE="$example_machine" -- plan 64 64 16777216 --threads 3 --leaf openblas --full
leaves=$(sed -nE 's/^# extra memory .*, ([0-9]+) leaves$/\1/p' "$out")
[ "$(grep -c '^ *leaf openblas' "$out")" -eq "${leaves:-0}" ] && [ "${leaves:-0}" -gt 32 ] ||
  fail "--full does not print every leaf (${leaves:-?} in the plan)"
grep -q '^# summary' "$out" && fail "--full prints a summary line"
good "^bfs k $par" -- plan 64 64 16777216 --threads 3 --leaf openblas --summary
good "^ +leaf openblas" PRISM_MACHINE="$example_machine" -- plan 64 64 65536 --threads 2 --leaf openblas
grep -q '^# summary' "$out" && fail "a small plan is summarised"
leaves=$(sed -nE 's/^# extra memory .*, ([0-9]+) leaves?$/\1/p' "$out")
[ "$(grep -c '^ *leaf openblas' "$out")" -eq "${leaves:-0}" ] ||
  fail "a small plan does not print every leaf (${leaves:-?} in the plan)"

# prism bound prints nothing on stdout before it fails (bad() checks stdout is empty).
bad "^prism: --bandwidth: no level 'ranks' here" -- bound 64 64 64 --topology "package:1 l3:1(size=8MB) core:2 pu:1" --bandwidth L3=1G,ranks=1G

# Under mpirun, an error is said once, by rank 0.
if [ -n "$mpiexec" ] && "$prism" help run >/dev/null 2>&1; then
  mpi() {
    cases=$((cases + 1))
    what="mpiexec -np 3 prism $*"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 \
      "$mpiexec" -np 3 --oversubscribe --bind-to none "$prism" "$@" >"$out" 2>"$err"
    rc=$?
    echo "$what -> $rc: $(grep '^prism' "$err")"
  }
  mpi run 8 8 x
  [ "$(grep -c '^prism' "$err")" -eq 1 ] || fail "'$what': $(grep -c '^prism' "$err") prism lines on stderr, expected 1"
  grep -Eq "^prism: K must be a whole number >= 0, got 'x'" "$err" || fail "'$what': not the K error"
  [ "$rc" -ne 0 ] || fail "'$what' exited 0"
  if [ "$has_run" = 1 ]; then
    mpi run 4096 4096 4096 --threads 1 --memory 1M
    [ "$(grep -c '^prism' "$err")" -eq 1 ] || fail "'$what': $(grep -c '^prism' "$err") prism lines on stderr, expected 1"
    grep -Eq "^prism: cannot plan over 3 ranks" "$err" || fail "'$what': not the plan error"
    mpi run 64 64 64 --gpus 1
    [ "$(grep -c '^prism' "$err")" -eq 1 ] || fail "'$what': $(grep -c '^prism' "$err") prism lines on stderr, expected 1"
    grep -Eq "^prism: --gpus runs on one process" "$err" || fail "'$what': not the one-process error"
    [ "$rc" -eq 2 ] || fail "'$what' exited $rc, expected 2"
  fi
fi

# The drop-in BLAS: a bad PRISM_* value gives one line, "prism: NAME: what is wrong; what
# happens next", and the call is still computed right (a k-dominant call the recursion would take).
if [ -n "$dropin" ]; then
  work=$(mktemp -d)
  trap 'rm -f "$out" "$err"; rm -rf "$work"' EXIT
  cat >"$work/call.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
void cblas_dgemm(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*, int);
int main(void) { /* C = A^T A, A k x 16 of ones: every entry is k */
  const int k = 1 << 16, n = 16;
  double* A = malloc(sizeof(double) * k * n); double* C = malloc(sizeof(double) * n * n);
  for (int i = 0; i < k * n; ++i) A[i] = 1.0;
  cblas_dgemm(102, 112, 111, n, n, k, 1.0, A, k, A, k, 0.0, C, n);
  for (int i = 0; i < n * n; ++i) if (C[i] != (double)k) { printf("wrong C[%d]\n", i); return 1; }
  printf("ok\n");
  return 0;
}
C
  libdir=$(dirname "$dropin")
  if ! cc "$work/call.c" -o "$work/call" -L"$libdir" -Wl,-rpath,"$libdir" -l:"$(basename "$dropin")" 2>"$err"; then
    fail "cannot build the drop-in caller: $(cat "$err")"
  else
    # setting PATTERN VAR=VALUE...: the caller computes C right, stderr is one line of the form, matching PATTERN.
    setting() {
      local pattern=$1; shift
      cases=$((cases + 1))
      what="$* call"
      env "$@" "$work/call" >"$out" 2>"$err"
      rc=$?
      echo "$what -> $rc: $(cat "$err")"
      [ "$rc" -eq 0 ] && grep -q '^ok$' "$out" || fail "'$what' exited $rc: $(cat "$out")"
      [ "$(wc -l <"$err")" -eq 1 ] || fail "'$what' wrote $(wc -l <"$err") lines on stderr, expected 1"
      grep -Eq '^prism: [A-Z_]+: .+; [a-z].+$' "$err" || fail "'$what': not 'prism: NAME: problem; what happens next'"
      grep -Eq -- "$pattern" "$err" || fail "'$what': stderr does not match /$pattern/"
    }
    off="; recursion off, every call goes to the backend \(.+\)$"
    setting "^prism: PRISM_NUM_THREADS: not a non-negative integer: 'many'$off" PRISM_NUM_THREADS=many
    setting "^prism: PRISM_NUM_THREADS: thread count must be in 1\.\.4096, got 99999999999$off" PRISM_NUM_THREADS=99999999999
    setting "^prism: PRISM_NUM_THREADS: thread count must be in 1\.\.4096, got 0$off" PRISM_NUM_THREADS=0
    setting "^prism: PRISM_MAX_MEMORY: trailing characters in '1X'.*$off" PRISM_MAX_MEMORY=1X
    setting "^prism: PRISM_SMALL_FLOPS: not a whole number with an optional K, M or G suffix, nor a decimal number such as 5e9: '-1'$off" PRISM_SMALL_FLOPS=-1
    setting "^prism: PRISM_EXTRA_DEPTH: extra depth must be in 0\.\.8, got 9$off" PRISM_EXTRA_DEPTH=9
    setting "^prism: PRISM_EXTRA_DEPTH: extra depth must be in 0\.\.8, got 5000$off" PRISM_EXTRA_DEPTH=5000
    setting "^prism: PRISM_CACHE_LEVEL: cache level must be in 0\.\.4, got 7$off" PRISM_CACHE_LEVEL=7
    setting "^prism: PRISM_LEAF: unknown leaf backend 'mkl'.*$off" PRISM_LEAF=mkl
    setting "^prism: PRISM_LEAF_KERNELS: 'zen3' is not library=kernels.*$off" PRISM_LEAF_KERNELS=zen3
    setting "^prism: PRISM_RANK_FLOPS: must be > 0, got '0'$off" PRISM_RANK_FLOPS=0
    setting "^prism: PRISM_RANK_BANDWIDTH: not a whole number with an optional K, M or G suffix, nor a decimal number such as 5e9: 'fast'$off" PRISM_RANK_BANDWIDTH=fast
    setting "^prism: PRISM_TOPOLOGY: hwloc: invalid synthetic topology 'nonsense'$off" PRISM_TOPOLOGY=nonsense
    setting "^prism: PRISM_BLAS_ROUTE: 'fast' is not auto, prism, backend or gpu; routing is auto" PRISM_BLAS_ROUTE=fast
    setting "^prism: PRISM_VERBOSE: '3' is not 0, 1 or 2; calls are not logged$" PRISM_VERBOSE=3
    setting "^prism: PRISM_STATS: 'yes' is not 0 or 1; no statistics$" PRISM_STATS=yes
    setting "^prism: PRISM_FIRST_USE: 'maybe' is not 0 or 1; prism measures at first use as by default$" PRISM_FIRST_USE=maybe
    setting "^prism: PRISM_SIMD: 'avx9' is not auto, avx2 or scalar; prism's kernels run the best target this CPU has$" \
      PRISM_SIMD=avx9 PRISM_LEAF=streaming PRISM_BLAS_ROUTE=prism PRISM_SMALL_FLOPS=0
    setting "^prism: PRISM_MACHINE: machine file ignored: .*; the first-use values or the model's are used$" PRISM_MACHINE=/nonexistent/machine
    # A directory is named as one; a file's 8-bit control bytes (0x9b, CSI) are not echoed.
    setting "^prism: PRISM_MACHINE: machine file ignored: /tmp: is a directory; " PRISM_MACHINE=/tmp
    printf 'cpu: x\n\233junk\n' > "$work/csi.machine"
    setting "^prism: PRISM_MACHINE: machine file ignored: .*[?]junk" PRISM_MACHINE="$work/csi.machine"
    LC_ALL=C grep -q $'\x9b' "$err" && fail "a machine file's byte 0x9b reached the terminal"
    printf 'cpu: x\n\303\237junk\n' > "$work/utf8.machine"  # UTF-8 text (a path's, a message's) is kept whole
    setting "^prism: PRISM_MACHINE: machine file ignored: .*'ßjunk'" PRISM_MACHINE="$work/utf8.machine"
    setting "^prism: PRISM_BLAS_BACKEND: '/nonexistent/libblas\.so\.3' cannot be used: .*; prism computes every call itself$" \
      PRISM_BLAS_BACKEND=/nonexistent/libblas.so.3
  fi
fi

echo "cli_errors: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
