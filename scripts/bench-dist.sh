#!/usr/bin/env bash
# The distributed benchmark (bench/dist/README.md). One run
# does three parts:
#  (a) volume: for each P in {2,4,7,8,12,13,16} and each shape (2048^3, 256x256x262144,
#      4096x4096x256), `mpirun --oversubscribe -np P prism run M N K --threads 1 --reps 1 --json`:
#      per-rank received MB (measured and predicted) and the bound. Oversubscribed on this
#      machine, so its times mean nothing and are not reported.
#  (b) time at np = 2 (not oversubscribed): `prism run M N K --threads 1 --reps 3 --json` and
#      `prism_pdgemm_bench M N K --reps 3` (Debian's ScaLAPACK pdgemm), alternating per shape;
#      with --rounds 2 (the default) the second round runs them in the other order.
#  (c) pdgemm: the unmodified ScaLAPACK program prism_pdgemm_bench three ways,
#      Debian's pdgemm_, prism through pdgemm_ (LD_PRELOAD of libprism_scalapack.so with
#      PRISM_SCALAPACK_ROUTE=prism, and =auto), beside `prism run` (prism native), on 2048^3,
#      256x256x262144, 4096x4096x256 and the Gram shape A^T B with m = n = 32, k = 4e6:
#      volume at np = 4 (oversubscribed; NB 32 and 128; grids 2x2 and 1x4, the Gram shape
#      also 4x1), counted by the PMPI counter libprism_mpi_counter.so around the one timed
#      call (and by prism's own PRISM_STATS line); time at np = 2 (grids 1x2 and 2x1, NB 128,
#      best of 3, rounds alternating the order). Every rank gets OPENBLAS_NUM_THREADS=1,
#      PRISM_NUM_THREADS=1 and PRISM_THREADS=1. Without <build>/libprism_scalapack.so the
#      prism-through-pdgemm runs are skipped (recorded as skipped, not failed).
# then writes bench/results/dist-<UTC date>.json (every JSON line, machine, date, environment,
# git commit), and bench/dist/report.py writes dist-<date>.md (tables), dist-<date>.png and,
# with part (c)'s volume, dist-<date>.pdgemm.png.
#
#   bash scripts/bench-dist.sh                 full run -> bench/results/dist-<date>.{json,md,png}
#   bash scripts/bench-dist.sh --quick         smoke run: P in {2,4,7}, 1 rep, 1 round, pdgemm on
#                                              512^3, 64x64x65536, Gram 32x32x200000, NB 128 only
#                                              -> bench/runs/dist-quick-<UTC time>/ (ignored by git)
#   bash scripts/bench-dist.sh --pdgemm-only   part (c) only
# options:
#   --procs 2,4,8      the P list of part (a)
#   --rounds R         rounds of the time runs, (b) and (c) (default 2, quick 1)
#   --out PREFIX       write PREFIX.{json,md,png,log} instead
#   --no-build         use the binaries already in the build folder
#   --prism BIN        the prism tool (default <build>/apps/prism)
#   --skip-volume / --skip-time   drop the volume or the time runs (of (a)/(b) and of (c))
#   --pdgemm-only / --skip-pdgemm run part (c) alone / leave it out
#   --prism-scalapack LIB          the library to preload (default <build>/libprism_scalapack.so)
#   --pdgemm-check     prism's pdgemm volume runs also check C (--check: one more call, outside
#                      the counted window; serial recomputation, slow on the full shapes; on in --quick)
# environment: PRISM_BUILD_DIR (default build), PRISM_DIST_TIMEOUT (seconds per mpirun,
# default 1200). OPENBLAS_NUM_THREADS=1 is passed to every rank (both tools), so two ranks
# use two cores; every other variable (OPENBLAS_CORETYPE, PRISM_*, ...) passes through as it
# is and is recorded in the JSON.
set -euo pipefail
cd "$(dirname "$0")/.."

procs="2,4,7,8,12,13,16"
reps_volume=1
reps_time=3
rounds=2
quick=0
build_it=1
out=""
prism_bin=""
do_volume=1
do_time=1
do_prism_parts=1    # parts (a) and (b)
do_pdgemm=1         # part (c)
slib=""
slib_missing=""
pdgemm_check=""     # --check on prism's pdgemm volume runs (default: quick runs only)
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; procs="2,4,7"; reps_time=1; rounds=1 ;;
    --procs) procs="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --out) out="$2"; shift ;;
    --no-build) build_it=0 ;;
    --prism) prism_bin="$2"; shift ;;
    --skip-volume) do_volume=0 ;;
    --skip-time) do_time=0 ;;
    --pdgemm-only) do_prism_parts=0; do_pdgemm=1 ;;
    --skip-pdgemm) do_pdgemm=0 ;;
    --prism-scalapack) slib="$2"; shift ;;
    --pdgemm-check) pdgemm_check=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-dist: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ "$procs" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "bench-dist: --procs wants a list like 2,4,8" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench-dist: --rounds wants a positive integer" >&2; exit 2; }

shapes=("2048 2048 2048" "256 256 262144" "4096 4096 256")
# Part (c): "M N K TRANSA" (op(A) is M x K; T stores A as K x M), block sizes, grids.
pdgemm_shapes=("2048 2048 2048 N" "256 256 262144 N" "4096 4096 256 N" "32 32 4000000 T")
pdgemm_nbs=(32 128)
# Quick: small shapes, NB 128 only (about 45 mpiruns, a minute on 2 idle cores), and prism's
# results checked.
if [ "$quick" = 1 ]; then
  pdgemm_shapes=("512 512 512 N" "64 64 65536 N" "32 32 200000 T")
  pdgemm_nbs=(128)
  pdgemm_check=${pdgemm_check:-1}
fi
pdgemm_check=${pdgemm_check:-0}
pdgemm_volume_np=4
pdgemm_volume_grids=(2x2 1x4)
pdgemm_gram_extra_grid=4x1   # a tall-skinny code's layout; on 1x4 one rank holds all of A and B
pdgemm_time_grids=(1x2 2x1)
pdgemm_time_nb=128
build=${PRISM_BUILD_DIR:-build}
timeout_s=${PRISM_DIST_TIMEOUT:-1200}
py=/usr/bin/python3; [ -x "$py" ] || py=python3   # Debian's python3 has numpy and matplotlib

[ "$do_prism_parts" = 1 ] || { [ "$do_pdgemm" = 1 ] || { echo "bench-dist: --pdgemm-only with --skip-pdgemm runs nothing" >&2; exit 2; }; }
if [ "$build_it" = 1 ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPRISM_WITH_MPI=ON > /dev/null
  targets=(prism_cli prism_pdgemm_bench)
  [ "$do_pdgemm" = 1 ] && targets+=(prism_mpi_counter prism_mpi_counter_selftest)
  # libprism_scalapack (prism behind pdgemm_) where this tree has it; part (c) skips its runs otherwise.
  if [ "$do_pdgemm" = 1 ] && [ -z "$slib" ] &&
     cmake --build "$build" --target help 2>/dev/null | grep -qE '(^|[ .:])prism_scalapack($|[ :])'; then
    targets+=(prism_scalapack)
  fi
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
fi
prism_bin=${prism_bin:-$build/apps/prism}
pdgemm_bin=$build/bench/prism_pdgemm_bench
counter_lib=$build/bench/libprism_mpi_counter.so
counter_selftest=$build/bench/prism_mpi_counter_selftest
slib=${slib:-$build/libprism_scalapack.so}
[ -x "$prism_bin" ] || { echo "bench-dist: no prism tool at $prism_bin" >&2; exit 2; }
{ [ "$do_time" = 0 ] && [ "$do_pdgemm" = 0 ]; } || [ -x "$pdgemm_bin" ] ||
  { echo "bench-dist: no $pdgemm_bin (configure with -DPRISM_WITH_MPI=ON)" >&2; exit 2; }
if [ "$do_pdgemm" = 1 ]; then
  [ -f "$counter_lib" ] && [ -x "$counter_selftest" ] ||
    { echo "bench-dist: no $counter_lib or $counter_selftest (build prism_mpi_counter and prism_mpi_counter_selftest)" >&2; exit 2; }
  counter_lib=$(realpath "$counter_lib")
  if [ -f "$slib" ]; then
    slib=$(realpath "$slib")
  else
    echo "bench-dist: no $slib: the prism-through-pdgemm runs of part (c) will be skipped" >&2
    slib_missing="$slib"
  fi
fi

now=$(date -u +%s)
date_utc=$(date -u -d "@$now" +%Y-%m-%d)
if [ -z "$out" ]; then
  if [ "$quick" = 1 ]; then
    mkdir -p bench/runs
    out=bench/runs/dist-quick-$(date -u -d "@$now" +%Y-%m-%dT%H%M%SZ)/dist
    mkdir "$(dirname "$out")"
  else
    out=bench/results/dist-$date_utc
    # A recorded result is never overwritten: a second run the same day gets the time too.
    [ -e "$out.json" ] && out=bench/results/dist-$(date -u -d "@$now" +%Y-%m-%dT%H%M%SZ)
    mkdir -p bench/results
  fi
fi
for ext in json md png pdgemm.png; do
  [ -e "$out.$ext" ] && { echo "bench-dist: $out.$ext exists; not overwriting it" >&2; exit 1; }
done
mkdir -p "$(dirname "$out")"
log=$out.log
records=$(mktemp)
stdout_tmp=$(mktemp)
stderr_tmp=$(mktemp)
trap 'rm -f "$records" "$stdout_tmp" "$stderr_tmp"' EXIT
: > "$log"

mpirun_env=()
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_env+=(-x OPENBLAS_NUM_THREADS=1)
volume_flags=(--oversubscribe --bind-to none)
time_flags=(--bind-to core)

# run PHASE ROUND TOOL P CMD...: runs one mpirun, appends its JSON line (plus what ran) to
# the records, or an error record when it printed none. From stderr it also takes the PMPI
# counter's line ("mpi-counter: {...}" -> "counter") and prism's PRISM_STATS lines
# ("prism-scalapack: route=... key=value ..." -> "prism_scalapack", a list, one per call).
# The environment variable EXTRA (JSON) adds fields to the record (part (c): shape, trans...).
run() {
  local phase=$1 round=$2 tool=$3 np=$4; shift 4
  local t0 t1 rc=0 line
  echo "== $phase round $round: $*" >> "$log"
  t0=$(date +%s.%N)
  timeout "$timeout_s" "$@" > "$stdout_tmp" 2> "$stderr_tmp" || rc=$?
  t1=$(date +%s.%N)
  cat "$stderr_tmp" "$stdout_tmp" >> "$log"
  line=$(grep -E '^\{"tool":' "$stdout_tmp" | tail -n 1 || true)
  PHASE=$phase ROUND=$round TOOL=$tool NP=$np RC=$rc T0=$t0 T1=$t1 LINE=$line CMD="$*" \
    STDERR_FILE=$stderr_tmp EXTRA=${EXTRA:-} "$py" - >> "$records" <<'EOF'
import json, os, shlex

def value(v):
    """'1.5' -> 1.5, '3' -> 3, anything else stays text."""
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v

def stats_line(text):
    """'route=prism recv_max_MB=1.2 plan="k2 m2"' -> {"route": "prism", "recv_max_MB": 1.2, "plan": "k2 m2"}."""
    try:
        words = shlex.split(text)
    except ValueError:
        return {"unparsed": text}
    out = {}
    for w in words:
        key, eq, v = w.partition("=")
        if eq:
            out[key] = value(v)
        else:
            out.setdefault("words", []).append(w)
    return out

try:
    rec = json.loads(os.environ["LINE"]) if os.environ["LINE"] else {}
except ValueError:
    rec = {"unparsed": os.environ["LINE"]}
counter, calls = None, []
with open(os.environ["STDERR_FILE"], errors="replace") as f:
    for text in f:
        text = text.strip()
        at = text.find("mpi-counter: {")
        if at >= 0:
            try:
                counter = json.loads(text[at + len("mpi-counter: "):])
            except ValueError:
                counter = {"unparsed": text}
        at = text.find("prism-scalapack:")
        if at >= 0:
            calls.append(stats_line(text[at + len("prism-scalapack:"):]))
if counter is not None:
    rec["counter"] = counter
if calls:
    rec["prism_scalapack"] = calls
if os.environ.get("EXTRA"):
    for key, v in json.loads(os.environ["EXTRA"]).items():
        rec.setdefault(key, v)
if rec.get("tool") == "mpi_counter_selftest" and os.environ["LINE"]:
    # The self-test's line holds what the counter must report; any difference is an error.
    got = rec.get("counter") or {}
    bad = [k for k in ("np", "p2p_max_MB", "p2p_mean_MB", "coll_max_MB", "total_max_MB")
           if k not in got or abs(float(got[k]) - float(rec[k])) > 1e-9 + 1e-5 * abs(float(rec[k]))]
    rec["selftest"] = "failed" if bad else "passed"
    if bad:
        rec["error"] = "mpi counter disagrees with the self-test on " + ", ".join(bad)
rc = int(os.environ["RC"])
if rc != 0 or not os.environ["LINE"]:
    rec.setdefault("tool", os.environ["TOOL"])
    rec["error"] = "exit status %d%s" % (rc, ", no JSON line" if not os.environ["LINE"] else "")
rec.setdefault("np", int(os.environ["NP"]))
rec["phase"] = os.environ["PHASE"]
rec["round"] = int(os.environ["ROUND"])
rec["cmd"] = os.environ["CMD"]
rec["wall_s"] = round(float(os.environ["T1"]) - float(os.environ["T0"]), 3)
print(json.dumps(rec))
EOF
  if [ "$rc" = 0 ] && [ -n "$line" ]; then
    echo "  ok: ${line:0:160}"
  else
    echo "  FAILED (exit status $rc; see $log): $*"
  fi
}

# skipped PHASE TOOL NP WHY: records a run that was not made (not a failure); EXTRA as for run.
skipped() {
  echo "== $1: $2 skipped: $4" >> "$log"
  PHASE=$1 TOOL=$2 NP=$3 WHY=$4 EXTRA=${EXTRA:-} "$py" - >> "$records" <<'EOF'
import json, os
rec = {"tool": os.environ["TOOL"], "np": int(os.environ["NP"]), "skipped": os.environ["WHY"]}
if os.environ.get("EXTRA"):
    rec.update(json.loads(os.environ["EXTRA"]))
rec["phase"] = os.environ["PHASE"]
print(json.dumps(rec))
EOF
}

echo "bench-dist: writing $out.{json,md,png,log}"
if [ "$do_prism_parts" = 1 ] && [ "$do_volume" = 1 ]; then
  IFS=, read -r -a plist <<< "$procs"
  for p in "${plist[@]}"; do
    for s in "${shapes[@]}"; do
      read -r m n k <<< "$s"
      echo "volume: np=$p ${m}x${n}x${k}"
      run volume 1 prism_run "$p" mpirun "${volume_flags[@]}" "${mpirun_env[@]}" -np "$p" \
        "$prism_bin" run "$m" "$n" "$k" --threads 1 --reps "$reps_volume" --json
    done
  done
fi
if [ "$do_prism_parts" = 1 ] && [ "$do_time" = 1 ]; then
  for ((r = 1; r <= rounds; r++)); do
    for s in "${shapes[@]}"; do
      read -r m n k <<< "$s"
      prism_cmd=(mpirun "${time_flags[@]}" "${mpirun_env[@]}" -np 2
                 "$prism_bin" run "$m" "$n" "$k" --threads 1 --reps "$reps_time" --json)
      pdgemm_cmd=(mpirun "${time_flags[@]}" "${mpirun_env[@]}" -np 2
                  "$pdgemm_bin" "$m" "$n" "$k" --reps "$reps_time")
      echo "time: np=2 ${m}x${n}x${k} round $r"
      if (( r % 2 == 1 )); then
        run time "$r" prism_run 2 "${prism_cmd[@]}"
        run time "$r" scalapack_pdgemm 2 "${pdgemm_cmd[@]}"
      else
        run time "$r" scalapack_pdgemm 2 "${pdgemm_cmd[@]}"
        run time "$r" prism_run 2 "${prism_cmd[@]}"
      fi
    done
  done
fi

# Part (c): pdgemm. The ScaLAPACK program is the same binary in every run; prism comes in by
# LD_PRELOAD. Each rank gets one thread of every kind, so np ranks use np cores.
pdgemm_env=(-x OPENBLAS_NUM_THREADS=1 -x PRISM_NUM_THREADS=1 -x PRISM_THREADS=1)
slib_why="no ${slib_missing} (build the prism_scalapack target, or pass --prism-scalapack LIB)"

# pdgemm_run PHASE ROUND TOOL NP GRID NB REPS M N K TRANSA [COUNTER]: one run of TOOL, one of
# scalapack_pdgemm (Debian's pdgemm_), prism_via_pdgemm (preload, ROUTE=prism),
# prism_auto_pdgemm (preload, ROUTE=auto) or prism_run (prism native; GRID, NB unused).
# COUNTER=1 preloads the PMPI counter as well. prism through pdgemm is skipped without the library.
pdgemm_run() {
  local phase=$1 round=$2 tool=$3 np=$4 grid=$5 nb=$6 reps=$7 m=$8 n=$9 k=${10} ta=${11} counter=${12:-0}
  local flags preload=() env=() trans=() route=""
  if [ "$phase" = pdgemm_volume ]; then flags=("${volume_flags[@]}"); else flags=("${time_flags[@]}"); fi
  [ "$counter" = 1 ] && preload=("$counter_lib")
  case "$tool" in
    prism_via_pdgemm|prism_auto_pdgemm)
      route=prism
      [ "$tool" = prism_auto_pdgemm ] && route=auto
      if [ -n "$slib_missing" ]; then
        EXTRA="{\"m\":$m,\"n\":$n,\"k\":$k,\"transa\":\"$ta\",\"grid\":\"$grid\",\"nb\":$nb,\"route_env\":\"$route\"}" \
          skipped "$phase" "$tool" "$np" "$slib_why"
        echo "  skipped $tool: $slib_why"
        return 0
      fi
      preload+=("$slib")
      env=(-x PRISM_SCALAPACK_ROUTE=$route -x PRISM_STATS=1) ;;
  esac
  if [ ${#preload[@]} -gt 0 ]; then
    local joined
    joined=$(IFS=:; echo "${preload[*]}")
    env+=(-x "LD_PRELOAD=$joined")
  fi
  local check=()
  [ "$phase" = pdgemm_volume ] && [ "$pdgemm_check" = 1 ] && [ -n "$route" ] && check=(--check)
  if [ "$tool" = prism_run ]; then
    [ "$ta" = N ] || trans=(--trans "${ta}N")
    EXTRA="{\"m\":$m,\"n\":$n,\"k\":$k,\"transa\":\"$ta\"}" \
      run "$phase" "$round" "$tool" "$np" mpirun "${flags[@]}" "${pdgemm_env[@]}" "${env[@]}" -np "$np" \
      "$prism_bin" run "$m" "$n" "$k" --threads 1 --reps "$reps" --json "${trans[@]}"
  else
    [ "$ta" = N ] || trans=(--transa "$ta")
    local route_env=""
    case "$tool" in prism_via_pdgemm) route_env=prism ;; prism_auto_pdgemm) route_env=auto ;; esac
    EXTRA="{\"m\":$m,\"n\":$n,\"k\":$k,\"transa\":\"$ta\",\"grid\":\"$grid\",\"nb\":$nb,\"route_env\":\"$route_env\"}" \
      run "$phase" "$round" "$tool" "$np" mpirun "${flags[@]}" "${pdgemm_env[@]}" "${env[@]}" -np "$np" \
      "$pdgemm_bin" "$m" "$n" "$k" --nb "$nb" --grid "$grid" --reps "$reps" "${trans[@]}" --tool-name "$tool" "${check[@]}"
  fi
}

if [ "$do_pdgemm" = 1 ]; then
  pdgemm_tools=(scalapack_pdgemm prism_via_pdgemm prism_auto_pdgemm)
  if [ "$do_volume" = 1 ]; then
    echo "pdgemm: PMPI counter self-test (np $pdgemm_volume_np)"
    run counter_selftest 1 mpi_counter_selftest "$pdgemm_volume_np" mpirun "${volume_flags[@]}" \
      -x "LD_PRELOAD=$counter_lib" -np "$pdgemm_volume_np" "$counter_selftest"
    for s in "${pdgemm_shapes[@]}"; do
      read -r m n k ta <<< "$s"
      grids=("${pdgemm_volume_grids[@]}")
      [ "$ta" = N ] || grids+=("$pdgemm_gram_extra_grid")
      for nb in "${pdgemm_nbs[@]}"; do
        for g in "${grids[@]}"; do
          echo "pdgemm volume: np=$pdgemm_volume_np ${m}x${n}x${k} transa $ta, NB $nb, grid $g"
          for tool in "${pdgemm_tools[@]}"; do
            pdgemm_run pdgemm_volume 1 "$tool" "$pdgemm_volume_np" "$g" "$nb" 1 "$m" "$n" "$k" "$ta" 1
          done
        done
      done
      echo "pdgemm volume: np=$pdgemm_volume_np ${m}x${n}x${k} transa $ta, prism native"
      pdgemm_run pdgemm_volume 1 prism_run "$pdgemm_volume_np" - - 1 "$m" "$n" "$k" "$ta" 1
    done
  fi
  if [ "$do_time" = 1 ]; then
    for ((r = 1; r <= rounds; r++)); do
      for s in "${pdgemm_shapes[@]}"; do
        read -r m n k ta <<< "$s"
        # This round's runs in order; every other round the other way round.
        order=()
        for g in "${pdgemm_time_grids[@]}"; do
          for tool in "${pdgemm_tools[@]}"; do order+=("$tool $g"); done
        done
        order+=("prism_run -")
        if (( r % 2 == 0 )); then
          for ((i = 0, j = ${#order[@]} - 1; i < j; i++, j--)); do
            t=${order[i]}; order[i]=${order[j]}; order[j]=$t
          done
        fi
        echo "pdgemm time: np=2 ${m}x${n}x${k} transa $ta round $r"
        for item in "${order[@]}"; do
          read -r tool g <<< "$item"
          pdgemm_run pdgemm_time "$r" "$tool" 2 "$g" "$pdgemm_time_nb" "$reps_time" "$m" "$n" "$k" "$ta"
        done
      done
    done
  fi
fi
finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# Everything into one JSON: the records plus what they ran on.
OUT_JSON=$out.json RECORDS=$records STARTED=$(date -u -d "@$now" +%Y-%m-%dT%H:%M:%SZ) FINISHED=$finished \
QUICK=$quick PROCS=$procs ROUNDS=$rounds REPS_VOLUME=$reps_volume REPS_TIME=$reps_time \
BD_PRISM_BIN=$prism_bin BD_PDGEMM_BIN=$pdgemm_bin VOLUME_FLAGS="${volume_flags[*]} ${mpirun_env[*]}" \
TIME_FLAGS="${time_flags[*]} ${mpirun_env[*]}" DO_PDGEMM=$do_pdgemm DO_PRISM_PARTS=$do_prism_parts \
PDGEMM_SHAPES="$(printf '%s;' "${pdgemm_shapes[@]}")" PDGEMM_NBS="${pdgemm_nbs[*]}" \
PDGEMM_GRIDS="${pdgemm_volume_grids[*]}" PDGEMM_GRAM_GRID=$pdgemm_gram_extra_grid \
PDGEMM_TIME_GRIDS="${pdgemm_time_grids[*]}" PDGEMM_TIME_NB=$pdgemm_time_nb PDGEMM_VOLUME_NP=$pdgemm_volume_np \
PDGEMM_ENV="${pdgemm_env[*]}" COUNTER_LIB=${counter_lib:-} SLIB=$slib SLIB_MISSING=$slib_missing "$py" - <<'EOF'
import json, os, re, subprocess

def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""

lscpu = {}
for line in sh("lscpu").splitlines():
    key, _, value = line.partition(":")
    lscpu[key.strip()] = value.strip()
mem_kb = 0
with open("/proc/meminfo") as f:
    for line in f:
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
env_re = re.compile(r"^(OPENBLAS_|GOTO|OMP_|BLIS_|PRISM_|MKL_|OMPI_MCA_|HWLOC_|TBB_)")
doc = {
    "schema": "prism-dist-bench/1",
    "date_utc": os.environ["STARTED"][:10],
    "started_utc": os.environ["STARTED"],
    "finished_utc": os.environ["FINISHED"],
    "quick": os.environ["QUICK"] == "1",
    "git": {
        "commit": sh("git", "rev-parse", "HEAD"),
        "branch": sh("git", "rev-parse", "--abbrev-ref", "HEAD"),
        "dirty": bool(sh("git", "status", "--porcelain", "--untracked-files=no")),
    },
    "machine": {
        "cpu_model": lscpu.get("Model name", ""),
        "cpus": int(lscpu.get("CPU(s)", "0") or 0),
        "threads_per_core": lscpu.get("Thread(s) per core", ""),
        "cores_per_socket": lscpu.get("Core(s) per socket", ""),
        "sockets": lscpu.get("Socket(s)", ""),
        "mem_gb": round(mem_kb / 1e6, 1),
        "kernel": sh("uname", "-r"),
    },
    "environment": {k: v for k, v in sorted(os.environ.items())
                    if env_re.match(k) and not k.startswith("OMPI_ALLOW")},
    "per_rank_environment": {"OPENBLAS_NUM_THREADS": "1"},
    "pdgemm_per_rank_environment": {"OPENBLAS_NUM_THREADS": "1", "PRISM_NUM_THREADS": "1", "PRISM_THREADS": "1"},
    "mpi": {
        "mpirun": sh("mpirun", "--version").splitlines()[0] if sh("mpirun", "--version") else "",
        "volume_flags": os.environ["VOLUME_FLAGS"],
        "time_flags": os.environ["TIME_FLAGS"],
    },
    "options": {
        "procs": [int(p) for p in os.environ["PROCS"].split(",")],
        "rounds": int(os.environ["ROUNDS"]),
        "reps_volume": int(os.environ["REPS_VOLUME"]),
        "reps_time": int(os.environ["REPS_TIME"]),
        "prism": os.environ["BD_PRISM_BIN"],
        "pdgemm": os.environ["BD_PDGEMM_BIN"],
        "prism_parts": os.environ["DO_PRISM_PARTS"] == "1",
    },
    "pdgemm": {
        "run": os.environ["DO_PDGEMM"] == "1",
        "shapes": [dict(zip(("m", "n", "k", "transa"), (int(w[0]), int(w[1]), int(w[2]), w[3])))
                   for w in (x.split() for x in os.environ["PDGEMM_SHAPES"].split(";") if x.strip())],
        "nbs": [int(x) for x in os.environ["PDGEMM_NBS"].split()],
        "volume_np": int(os.environ["PDGEMM_VOLUME_NP"]),
        "volume_grids": os.environ["PDGEMM_GRIDS"].split(),
        "gram_extra_grid": os.environ["PDGEMM_GRAM_GRID"],
        "time_grids": os.environ["PDGEMM_TIME_GRIDS"].split(),
        "time_nb": int(os.environ["PDGEMM_TIME_NB"]),
        "mpirun_env": os.environ["PDGEMM_ENV"],
        "counter": os.environ["COUNTER_LIB"],
        "prism_scalapack": os.environ["SLIB"],
        "prism_scalapack_missing": bool(os.environ["SLIB_MISSING"]),
    },
    "records": [],
}
with open(os.environ["RECORDS"]) as f:
    doc["records"] = [json.loads(line) for line in f if line.strip()]
with open(os.environ["OUT_JSON"], "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
EOF
pdgemm_png=()
[ "$do_pdgemm" = 1 ] && [ "$do_volume" = 1 ] && pdgemm_png=(--pdgemm-png "$out.pdgemm.png")
"$py" bench/dist/report.py "$out.json" --md "$out.md" --png "$out.png" "${pdgemm_png[@]}"
failed=$(grep -c '"error"' "$records" || true)
echo
echo "bench-dist: $out.json, $out.md, $out.png$([ ${#pdgemm_png[@]} -gt 0 ] && echo ", $out.pdgemm.png") (log $log)"
[ "$failed" = 0 ] || { echo "bench-dist: $failed run(s) failed; see $log" >&2; exit 1; }
