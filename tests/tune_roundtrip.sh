#!/usr/bin/env bash
# tests/tune_roundtrip.sh PRISM — `prism tune` writes a machine file that prism reads back:
# the run finishes (beside a busy loop, which its report notes), the file parses with no warning and its measured small_flops is the one
# a plan then uses; the streaming kernels' sizes it measured (k-chunks, prefetch distance)
# are in the file, each a positive whole number of 64-byte lines, the reduction threshold is
# measured where there are two cores, and `prism tune --show`
# reads every measured value back unchanged; the same file with another CPU's name, or cut short into a malformed
# one, gives exactly one warning line and the model's values. Prints how long tune took
# (the time is reported, not asserted).
set -uo pipefail
prism=${1:?usage: tune_roundtrip.sh PATH/TO/prism}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

start=$(date +%s)
# A busy loop beside it (a machine that is not idle): tune says so on stdout, not stderr.
( trap 'exit 0' TERM; while :; do :; done ) &
busy=$!
"$prism" tune --reps 1 --out "$dir/machine" >"$dir/out" 2>"$dir/err" || fail "prism tune exited $?: $(cat "$dir/err")"
kill "$busy"; wait "$busy" 2>/dev/null
echo "prism tune took $(( $(date +%s) - start )) s"
cat "$dir/out"
grep -Eq "^# note: other processes kept [0-9.]+ of [0-9]+ cores? busy while tune measured" "$dir/out" ||
  fail "no note that other processes were busy while tune measured beside a busy loop"
[ -s "$dir/err" ] && fail "prism tune wrote on stderr: $(cat "$dir/err")"
grep -q "^small_flops: [0-9.e+]* measured$" "$dir/machine" || fail "no measured small_flops line in the file"

small=$(sed -n 's/^small_flops: \([0-9.e+]*\) measured$/\1/p' "$dir/machine")
PRISM_MACHINE="$dir/machine" "$prism" plan 8 8 8 >"$dir/plan" 2>"$dir/err" || fail "prism plan with the file exited $?"
[ -s "$dir/err" ] && fail "the file tune wrote gives a warning: $(cat "$dir/err")"
want=$(printf '%g' "$small")
grep -q "small_flops=$want " "$dir/plan" || fail "plan does not use the measured small_flops $want: $(head -1 "$dir/plan")"

for key in stream_outer_chunk_bytes stream_dot_chunk_bytes stream_tile_chunk_bytes stream_prefetch_bytes syrk_chunk_bytes; do
  v=$(sed -n "s/^$key: \([0-9]*\) measured$/\1/p" "$dir/machine")
  if [ -z "$v" ]; then fail "no measured $key line in the file"
  elif [ "$v" -le 0 ] || [ $((v % 64)) -ne 0 ]; then fail "$key $v is not a positive whole number of 64-byte lines"
  fi
done
# The reduction threshold is measured where there are two threads to share it: tune's
# threads are the processors it may use, at most one a core (the count the description's
# comment gives; one core of two hardware threads is one).
cores=$(sed -n 's/^# \([0-9]*\) cores\{0,1\}, .*/\1/p' "$dir/machine")
[ -n "$cores" ] || fail "the file names no core count"
if [ "${cores:-1}" -ge 2 ] && [ "$(nproc)" -ge 2 ]; then
  grep -Eq "^parallel_reduce_bytes: [0-9.e+]+ measured$" "$dir/machine" || fail "no measured parallel_reduce_bytes line in the file"
else
  grep -Eq "^parallel_reduce_bytes: [0-9.e+]+ model$" "$dir/machine" || fail "one core: parallel_reduce_bytes should stay the model's"
fi
PRISM_MACHINE="$dir/machine" "$prism" tune --show >"$dir/show" 2>"$dir/err" || fail "prism tune --show exited $?"
[ -s "$dir/err" ] && fail "prism tune --show with the file wrote on stderr: $(cat "$dir/err")"
head -1 "$dir/show" | grep -q "^# machine: file $dir/machine; measured: " || fail "--show names another source: $(head -1 "$dir/show")"
grep ' measured$' "$dir/machine" >"$dir/want"
grep ' measured$' "$dir/show" >"$dir/got"
[ "$(wc -l <"$dir/want")" -ge 10 ] || fail "fewer than 10 measured values in the file"
cmp -s "$dir/want" "$dir/got" || fail "measured values read back differ: $(diff "$dir/want" "$dir/got" | head -4)"

sed 's/^cpu: .*/cpu: NotThisVendor family 1 model 1: another CPU/' "$dir/machine" >"$dir/other"
printf 'cpu: x\nsmall_flops: many measured\n' >"$dir/malformed"
for bad in other malformed /nonexistent/machine; do
  path=$bad; [ "${bad#/}" = "$bad" ] && path="$dir/$bad"
  PRISM_MACHINE="$path" "$prism" plan 8 8 8 >"$dir/plan" 2>"$dir/err" || fail "prism plan with $bad exited $?"
  lines=$(wc -l <"$dir/err")
  echo "$bad -> $(cat "$dir/err")"
  [ "$lines" -eq 1 ] || fail "$bad: $lines warning lines, expected 1"
  grep -q "^prism: PRISM_MACHINE: machine file .*; the first-use values or the model's are used$" "$dir/err" || fail "$bad: not a machine-file warning"
done
echo "tune_roundtrip: $failures failures"
[ "$failures" -eq 0 ]
