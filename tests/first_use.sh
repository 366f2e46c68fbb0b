#!/usr/bin/env bash
# tests/first_use.sh PRISM — the first-use measurements (lib/machine/wisdom.hpp, lib/leaf/first_use.hpp)
# through `prism tune --first-use`, which measures what the first long call would:
#   - a fresh cache folder: measured once, within the budget (0.5 s; 0.6 s at most; each type's
#     rank-k limits 0.4 s, 0.5 s at most), kept in this CPU's first-use file, and the
#     description reads the values as "first use";
#   - a second run: nothing measured, the kept values read back;
#   - the BLAS leaf classes (lib/leaf/backend/blas_leaf_rule.hpp) timed where the leaf
#     libraries' kernels are equally wide, within 0.5 s, by a long dgemm and not by a short
#     one; a kept class overrides the width rule in a plan; a damaged one is not used;
#   - a machine file (PRISM_MACHINE naming one of this CPU): nothing measured, nothing written;
#     one written before the rank-k keys existed (none listed): those alone measured; one
#     written before they had a triangle (stream_rank_k_n_d, ...): read as the upper
#     triangle's, the lower ones measured;
#   - a cache folder kept before the rank-k limits had a triangle: measured again;
#   - PRISM_FIRST_USE=0: nothing measured, nothing written;
#   - a cache folder that cannot be written: measured in every run, nothing kept, the same
#     keys printed, exit 0; a program run there computes as anywhere.
set -uo pipefail
prism=$1
gram=${2:-}
gram_bench=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "first_use: FAIL: $*"; exit 1; }
keys="stream_bytes stream_dot_bytes stream_far_bytes stream_complex_k"
for t in s d c z; do for f in un ut ln lt; do keys="$keys stream_rank_k_${f}_$t"; done; done

# 1. A fresh folder: measured and kept.
export XDG_CACHE_HOME=$tmp/cache
unset PRISM_MACHINE PRISM_FIRST_USE
out=$("$prism" tune --first-use 2>&1) || fail "first run exited $?: $out"
echo "$out"
line=$(grep -E '^# first use: measured in [0-9.]+ s, [0-4] of 4 decided; kept in ' <<<"$out") || fail "no measurement line"
secs=$(sed -E 's/^# first use: measured in ([0-9.]+) s.*/\1/' <<<"$line")
awk -v s="$secs" 'BEGIN { exit !(s <= 0.6) }' || fail "the measurement took $secs s (at most 0.6 s)"
file=$(sed -E 's/.*; kept in (.*)$/\1/' <<<"$line")
[ -f "$file" ] || fail "no file $file"
case "$file" in "$tmp"/cache/prism/first-use-*) ;; *) fail "kept outside the cache folder: $file" ;; esac
grep -q '^streaming_crossovers: measured in ' "$file" || fail "the file does not say it measured"
for t in s d c z; do
  rk=$(grep -E "^# first use, rank-k $t: measured in [0-9.]+ s, [0-4] of 4 decided; kept in $file\$" <<<"$out") ||
    fail "no rank-k $t measurement line"
  secs=$(sed -E 's/^# first use, rank-k .: measured in ([0-9.]+) s.*/\1/' <<<"$rk")
  awk -v s="$secs" 'BEGIN { exit !(s <= 0.5) }' || fail "the rank-k $t measurement took $secs s (at most 0.5 s)"
  grep -q "^streaming_rank_k_triangles_$t: measured in " "$file" || fail "the file does not say it measured rank-k $t"
done
grep -q "^cpu: " "$file" || fail "the file names no CPU"
# The BLAS leaf classes: timed where the two leaf libraries' kernels are equally wide
# (budget 0.35 s; 0.5 s at most), kept with the kernel sets they were timed on.
bl=$(grep -E '^# first use, blas leaves: ' <<<"$out") || fail "no blas leaves line"
case "$bl" in
  "# first use, blas leaves: measured in "*)
    grep -Eq "^# first use, blas leaves: measured in [0-9.]+ s, [0-2] of 2 decided; kept in $file\$" <<<"$bl" || fail "$bl"
    secs=$(sed -E 's/^# first use, blas leaves: measured in ([0-9.]+) s.*/\1/' <<<"$bl")
    awk -v s="$secs" 'BEGIN { exit !(s <= 0.5) }' || fail "the blas leaves measurement took $secs s (at most 0.5 s)"
    grep -Eq '^blas_leaf_square: (openblas|blis|undecided)$' "$file" && grep -Eq '^blas_leaf_wide: (openblas|blis|undecided)$' "$file" ||
      fail "the blas leaf verdict does not name both classes"
    grep -q '^blas_leaf_kernels: openblas .*, blis ' "$file" || fail "the blas leaf verdict names no kernel sets"
    blas_measured=1 ;;
  "# first use, blas leaves: nothing measured (the libraries' kernels differ in width): "*) blas_measured=0 ;;
  *) fail "unexpected: $bl" ;;
esac
for k in $keys; do grep -Eq "^$k: [0-9.e+]+ (first use|model)$" <<<"$out" || fail "no value of $k"; done
decided=$(grep -cE '^stream_[a-z_]+: [0-9.e+]+ first use$' <<<"$out")
[ "$decided" -ge 1 ] || fail "no key was decided"
"$prism" tune --show 2>&1 | grep -q "measured at first use:" || fail "prism tune --show does not read the kept values"

# 1b. The file follows the umask, as any file the user makes: 0600 under umask 077.
(umask 077 && XDG_CACHE_HOME=$tmp/private "$prism" tune --first-use >/dev/null 2>&1) || fail "the umask 077 run failed"
for f in "$tmp"/private/prism/first-use-*; do
  case "$f" in *.lock) continue ;; esac
  [ "$(stat -c %a "$f")" = 600 ] || fail "$f is $(stat -c %a "$f") under umask 077, not 600"
done

# 1c. A long rank-k call measures its own type's limits, in the call: a Gram matrix of a
# 32 x 2^21 double A (512 MiB, 0.067 s on one thread by the model) through prism::syrk.
if [ -n "$gram_bench" ]; then
  XDG_CACHE_HOME=$tmp/call PRISM_NUM_THREADS=1 "$gram_bench" --shapes=2097152x32 --reps=1 --impls=prism --no-probes \
    > "$tmp/call.out" 2>&1 || { rc=$?; cat "$tmp/call.out"; fail "the Gram bench exited $rc"; }
  grep -q '^streaming_rank_k_triangles_d: measured in ' "$tmp"/call/prism/first-use-* ||
    { cat "$tmp"/call/prism/first-use-*; fail "a long dsyrk call did not measure its rank-k limits"; }
  ! grep -q '^streaming_rank_k_triangles_[scz]: ' "$tmp"/call/prism/first-use-* || fail "a dsyrk call measured another type's limits"
  # A machine file of this CPU without the rank-k keys (written before they existed): the
  # call measures them as without a file, and nothing the file lists.
  "$prism" tune --show | grep -v '^#' > "$tmp/rank-k.machine"
  grep -v '^stream_rank_k_' "$tmp/rank-k.machine" > "$tmp/old.machine"
  XDG_CACHE_HOME=$tmp/old PRISM_MACHINE=$tmp/old.machine PRISM_NUM_THREADS=1 "$gram_bench" --shapes=2097152x32 --reps=1 \
    --impls=prism --no-probes > "$tmp/old.out" 2>&1 || { rc=$?; cat "$tmp/old.out"; fail "the Gram bench (old file) exited $rc"; }
  grep -q '^streaming_rank_k_triangles_d: measured in ' "$tmp"/old/prism/first-use-* ||
    fail "a long dsyrk call with a machine file lacking the rank-k keys did not measure them"
  # No measurement for a short call (32 x 2^16: 0.002 s by the model), another leaf than
  # auto (PRISM_LEAF=openblas), or with a machine file of this CPU read.
  for run in "short:--shapes=65536x32" "leaf:--shapes=2097152x32" "file:--shapes=2097152x32"; do
    case "$run" in
      leaf:*) extra="PRISM_LEAF=openblas" ;; file:*) extra="PRISM_MACHINE=$tmp/rank-k.machine" ;; *) extra="PRISM_LEAF=auto" ;;
    esac
    env XDG_CACHE_HOME="$tmp/no-${run%%:*}" PRISM_NUM_THREADS=1 "$extra" "$gram_bench" "${run#*:}" --reps=1 --impls=prism \
      --no-probes > "$tmp/no.out" 2>&1 || { rc=$?; cat "$tmp/no.out"; fail "the Gram bench (${run%%:*}) exited $rc"; }
    ! grep -qs '^streaming_rank_k_' "$tmp/no-${run%%:*}"/prism/first-use-* ||
      fail "a dsyrk call measured its rank-k limits (${run%%:*}: it should not)"
  done
else
  echo "first_use: no Gram bench built (PRISM_WITH_BENCH=OFF); the in-call rank-k case not run"
fi

# 1d. A long double call with large leaves times the BLAS leaf classes, in the call (2048^3
# on one thread: 0.34 s by the model); a short one (300^3) or another leaf than auto does not.
if [ "$blas_measured" = 1 ]; then
  for run in long:2048 short:300 leaf:2048; do
    extra=PRISM_LEAF=auto
    [ "${run%%:*}" = leaf ] && extra=PRISM_LEAF=openblas
    n=${run#*:}
    env XDG_CACHE_HOME="$tmp/bl-${run%%:*}" PRISM_NUM_THREADS=1 "$extra" "$prism" bench "$n" "$n" "$n" --reps 1 \
      > "$tmp/bl.out" 2>&1 || { rc=$?; cat "$tmp/bl.out"; fail "prism bench ($run) exited $rc"; }
    if [ "${run%%:*}" = long ]; then
      grep -q '^blas_leaves: measured in ' "$tmp"/bl-long/prism/first-use-* || fail "a long dgemm did not time the BLAS leaf classes"
    else
      ! grep -qs '^blas_leaves: ' "$tmp/bl-${run%%:*}"/prism/first-use-* || fail "a dgemm ($run) timed the BLAS leaf classes"
    fi
  done
else
  echo "first_use: the leaf libraries' kernels differ in width here; the in-call BLAS leaf case not run"
fi

# 2. Again: nothing measured, the same values.
again=$("$prism" tune --first-use 2>&1) || fail "second run exited $?"
grep -q "^# first use: nothing measured, kept in $file" <<<"$again" || fail "the second run measured again: $again"
[ "$(grep -c "^# first use, rank-k .: nothing measured, kept in $file" <<<"$again")" = 4 ] ||
  fail "the second run measured the rank-k limits again: $again"
[ "$(grep -E '^stream_[a-z_]+: ' <<<"$out")" = "$(grep -E '^stream_[a-z_]+: ' <<<"$again")" ] || fail "the kept values differ"
if [ "$blas_measured" = 1 ]; then
  grep -q "^# first use, blas leaves: nothing measured, kept in $file: square d: [a-z]* (" <<<"$again" ||
    fail "the second run measured the BLAS leaf classes again, or does not read them: $again"
  # A kept class overrides the width rule in a plan of this host (1024^3 on one thread: one
  # square leaf), each library in turn; one that names no library (a damaged file's) is
  # not used: the width decides, as the rule text says.
  cp "$file" "$tmp/kept"
  for lib in openblas blis; do
    sed -i "s/^blas_leaf_square: .*/blas_leaf_square: $lib/" "$file"
    "$prism" plan 1024 1024 1024 --threads 1 2>&1 | grep -Eq "^ *leaf $lib( |\$)" ||
      fail "a kept square verdict ($lib) did not pick the plan's leaf: $("$prism" plan 1024 1024 1024 --threads 1 2>&1)"
  done
  sed -i 's/^blas_leaf_square: .*/blas_leaf_square: Prescott/' "$file"
  "$prism" tune --first-use 2>&1 | grep -q "^# first use, blas leaves: nothing measured, kept in $file: square d: [a-z]* (by kernel width)" ||
    fail "a damaged BLAS leaf verdict was used"
  cp "$tmp/kept" "$file"
fi

# 3. A machine file of this CPU: it rules, nothing is measured or written.
"$prism" tune --show | grep -v '^#' > "$tmp/machine"
XDG_CACHE_HOME=$tmp/other PRISM_MACHINE=$tmp/machine "$prism" tune --first-use > "$tmp/m.out" 2>&1 || fail "machine-file run exited $?"
grep -q "^# first use: nothing measured (a machine file is read" "$tmp/m.out" || { cat "$tmp/m.out"; fail "measured despite a machine file"; }
[ ! -e "$tmp/other/prism" ] || fail "wrote into the cache folder despite a machine file"
# 3b. One written before the rank-k keys existed: those keys alone are measured, as without
# a file, and the description reads them as "first use" beside the file's values.
grep -v '^stream_rank_k_' "$tmp/machine" > "$tmp/old-keys"
XDG_CACHE_HOME=$tmp/older PRISM_MACHINE=$tmp/old-keys "$prism" tune --first-use > "$tmp/o.out" 2>&1 || fail "old-file run exited $?"
grep -q "^# first use: nothing measured (the machine file lists its values)" "$tmp/o.out" ||
  { cat "$tmp/o.out"; fail "measured the crossovers the machine file lists"; }
[ "$(grep -cE '^# first use, rank-k .: measured in [0-9.]+ s, [0-4] of 4 decided; kept in ' "$tmp/o.out")" = 4 ] ||
  { cat "$tmp/o.out"; fail "the rank-k limits a machine file lacks were not measured"; }
! grep -Eq '^stream_rank_k_[ul][nt]_[sdcz]: [0-9.e+]+ measured$' "$tmp/o.out" || { cat "$tmp/o.out"; fail "a rank-k limit read as the file's"; }
grep -Eq '^stream_rank_k_[ul][nt]_[sdcz]: [0-9.e+]+ first use$' "$tmp/o.out" || { cat "$tmp/o.out"; fail "no rank-k limit read as first use"; }
file_bytes=$(sed -nE 's/^stream_bytes: ([0-9.e+]+) .*/\1/p' "$tmp/old-keys")
grep -qxF -e "stream_bytes: $file_bytes measured" -e "stream_bytes: $file_bytes model" "$tmp/o.out" ||
  { cat "$tmp/o.out"; fail "the file's stream_bytes ($file_bytes) is not read"; }

# 3c. One written before the rank-k limits had a triangle: its stream_rank_k_n_X and
# stream_rank_k_t_X (timed on upper triangles) read as the upper ones, the lower ones
# measured. The file's values are set to 2, which no measurement gives (a limit is 1 or an
# n of 4 and more), so a 2 read back comes from the file.
sed -E -e '/^stream_rank_k_l[nt]_/d' -e 's/^stream_rank_k_u([nt])_([sdcz]): .*/stream_rank_k_\1_\2: 2 measured/' \
  "$tmp/machine" > "$tmp/untriangled"
grep -q '^stream_rank_k_n_d: 2 measured$' "$tmp/untriangled" || fail "no old-style key in the test's machine file"
XDG_CACHE_HOME=$tmp/untri PRISM_MACHINE=$tmp/untriangled "$prism" tune --first-use > "$tmp/u.out" 2>&1 ||
  { rc=$?; cat "$tmp/u.out"; fail "old-name file run exited $rc"; }
for t in s d c z; do
  for f in n t; do
    grep -qx "stream_rank_k_u${f}_$t: 2 measured" "$tmp/u.out" || { cat "$tmp/u.out"; fail "stream_rank_k_${f}_$t not read as the upper one"; }
    ! grep -q "^stream_rank_k_l${f}_$t: .* measured$" "$tmp/u.out" || { cat "$tmp/u.out"; fail "stream_rank_k_l${f}_$t read from the file"; }
  done
done
[ "$(grep -cE '^# first use, rank-k .: measured in ' "$tmp/u.out")" = 4 ] || { cat "$tmp/u.out"; fail "the lower limits were not measured"; }
# 3d. A cache folder kept before then (its marker streaming_rank_k_d, its keys the old names):
# measured again, and the new marker kept beside the old lines.
mkdir -p "$tmp/pre/prism"
sed -E -e 's/^streaming_rank_k_triangles_/streaming_rank_k_/' -e '/^stream_rank_k_l[nt]_/d' \
  -e 's/^stream_rank_k_u([nt])_/stream_rank_k_\1_/' "$file" > "$tmp/pre/prism/$(basename "$file")"
grep -q '^streaming_rank_k_d: ' "$tmp/pre/prism/$(basename "$file")" || fail "no old marker in the test's cache file"
XDG_CACHE_HOME=$tmp/pre "$prism" tune --first-use > "$tmp/pre.out" 2>&1 ||
  { rc=$?; cat "$tmp/pre.out"; fail "old cache run exited $rc"; }
grep -q "^# first use: nothing measured" "$tmp/pre.out" || { cat "$tmp/pre.out"; fail "the kept crossovers were measured again"; }
[ "$(grep -cE '^# first use, rank-k .: measured in ' "$tmp/pre.out")" = 4 ] || { cat "$tmp/pre.out"; fail "an old rank-k marker stopped the measurement"; }
grep -q '^streaming_rank_k_triangles_d: measured in ' "$tmp/pre/prism/$(basename "$file")" || fail "the new marker was not kept"
grep -q '^streaming_rank_k_d: ' "$tmp/pre/prism/$(basename "$file")" || fail "the old marker's line was dropped"

# 4. PRISM_FIRST_USE=0: nothing measured or written.
XDG_CACHE_HOME=$tmp/off PRISM_FIRST_USE=0 "$prism" tune --first-use > "$tmp/off.out" 2>&1 || fail "PRISM_FIRST_USE=0 run exited $?"
grep -q "^# first use: nothing measured (PRISM_FIRST_USE=0)" "$tmp/off.out" || { cat "$tmp/off.out"; fail "measured with PRISM_FIRST_USE=0"; }
[ ! -e "$tmp/off" ] || fail "wrote with PRISM_FIRST_USE=0"

# 5. A folder that cannot be written (its parent is a file, so even root cannot create it):
# measured in every run, kept nowhere, the same keys, and programs compute as anywhere.
touch "$tmp/file"
for run in 1 2; do
  XDG_CACHE_HOME=$tmp/file/cache "$prism" tune --first-use > "$tmp/ro.out" 2>&1 || fail "read-only run $run exited $?"
  grep -qE '^# first use: measured in [0-9.]+ s, [0-4] of 4 decided; not kept \(the folder cannot be written\)$' "$tmp/ro.out" ||
    { cat "$tmp/ro.out"; fail "read-only run $run did not measure, or said it kept"; }
  [ "$(grep -cE '^# first use, rank-k .: measured in [0-9.]+ s, [0-4] of 4 decided; not kept' "$tmp/ro.out")" = 4 ] ||
    { cat "$tmp/ro.out"; fail "read-only run $run did not measure the rank-k limits, or said it kept them"; }
  for k in $keys; do grep -Eq "^$k: " "$tmp/ro.out" || fail "read-only run $run printed no $k"; done
done
if [ -n "$gram" ]; then
  XDG_CACHE_HOME=$tmp/file/cache "$gram" > "$tmp/gram.out" 2>&1 || { cat "$tmp/gram.out"; fail "the example failed with a read-only cache folder"; }
  grep -q ", ok$" "$tmp/gram.out" || { cat "$tmp/gram.out"; fail "the example's result is off with a read-only cache folder"; }
fi
# 6. Measured on other kernels (PRISM_SIMD=scalar): kept in a set of their own, never read
# for the default kernels.
XDG_CACHE_HOME=$tmp/cache PRISM_SIMD=scalar "$prism" tune --first-use > "$tmp/scalar.out" 2>&1 || fail "PRISM_SIMD=scalar run exited $?"
scalar_file=$(sed -nE 's/^# first use: .*kept in (.*)$/\1/p' "$tmp/scalar.out")
[ -n "$scalar_file" ] && [ "$scalar_file" != "$file" ] || { cat "$tmp/scalar.out"; fail "PRISM_SIMD=scalar measured into the default set ($file)"; }
grep -q "^cpu: .*; PRISM_SIMD=scalar$" "$scalar_file" || fail "the scalar set does not name its kernels"
again=$("$prism" tune --first-use 2>&1) || fail "run after the scalar one exited $?"
grep -q "^# first use: nothing measured, kept in $file" <<<"$again" || fail "the default set changed after a scalar run: $again"

# 7. A per-user machine file that cannot be read (not merely absent) is named, once.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  mkdir -p "$tmp/locked/prism" && chmod 755 "$tmp" "$tmp/locked" "$tmp/locked/prism"
  "$prism" tune --show | grep -v '^#' > "$tmp/locked/prism/machine" && chmod 000 "$tmp/locked/prism/machine"
  err=$(XDG_CACHE_HOME=$tmp/locked HOME=$tmp setpriv --reuid=65534 --regid=65534 --clear-groups "$prism" plan 8 8 8 2>&1 >/dev/null)
  grep -q "^prism: machine file ignored: .*; the first-use values or the model's are used$" <<<"$err" ||
    fail "an unreadable per-user machine file was not named: '$err'"
else
  echo "first_use: the unreadable-file case needs root and setpriv (to run as another user); not run here"
fi
# 8. A kept kernel verdict the probe could not have given (Prescott, a set it never times:
# a damaged file's) is not trusted: the sets are timed again and the verdict rewritten.
# (prism bench: one process, in builds with MPI or without)
leaf_run() {
  "$prism" bench 300 300 300 --leaf openblas --reps 1 > "$tmp/leaf.out" 2>&1
  local rc=$?
  [ "$rc" -eq 0 ] || { cat "$tmp/leaf.out"; fail "prism bench --leaf openblas exited $rc"; }
}
leaf_run
if grep -q '^openblas_kernels: ' "$file"; then
  sed -i 's/^openblas_kernels: .*/openblas_kernels: Prescott/' "$file"
  leaf_run
  grep -q '^openblas_kernels: ' "$file" && ! grep -q '^openblas_kernels: Prescott$' "$file" ||
    fail "a damaged kernel verdict was trusted: $(grep '^openblas_kernels' "$file")"
else
  echo "first_use: OpenBLAS's kernel sets are not timed on this CPU (no verdict kept); the damaged-verdict case not run"
fi
echo "first_use: PASS"
