#!/usr/bin/env bash
# The distributed Gram-matrix benchmark (bench/dist/README.md, "The syrk part"):
# Debian's ScaLAPACK pdsyrk_ (uplo U, trans T: C = A^T A, A stored k x n, block-cyclic on the
# most square grid, NB 128), run as an unmodified ScaLAPACK program (prism_pdsyrk_bench), with
# the PMPI counter libprism_mpi_counter.so counting what each rank receives in the one timed
# call. Two parts:
#  (a) volume: for each P in {2,4,7,8,13,16} and each shape n x k in {4096 x 4096,
#      256 x 2^20, 1024 x 65536}: `mpirun --oversubscribe -np P prism_pdsyrk_bench n k --reps 1`
#      -> per-rank received MB (max, mean); beside it the SYRK lower bound per rank and the gemm
#      bound of the full n x n x k square, from `prism bound n n k --syrk --ranks P` (when the
#      prism tool is built; otherwise the bound fields are null and the record says so).
#      Oversubscribed on this machine, so these times mean nothing and the report leaves them out.
#  (b) time at np = 2 (one rank per core): `prism_pdsyrk_bench n k --reps 3` on each shape,
#      --rounds R times (default 2), best of all.
# Beside each pdsyrk_ record the same run measures prism at the same shape and P:
#  prism syrk        `mpirun ... prism run n n k --syrk UT --json --reps R --threads 1`
#  prism gemm full   `mpirun ... prism run n n k --trans TN --json --reps R --threads 1`
#                    (C = A^T A as the full n x n x k gemm, A stored k x n)
# with the same mpirun flags as pdsyrk_ (R = 1 in part (a), 3 in part (b)); in part (b) the three
# programs are interleaved in every round, so load that comes and goes hits them alike. prism's
# volumes are its own per-rank byte counts (prism::dist::last_traffic), which each run checks
# against its model ("ranks_off_model": 0 means every rank received exactly the predicted bytes);
# pdsyrk_'s come from the PMPI counter. Each prism run is a record of its own (tool "prism_run",
# "role" prism_syrk / prism_gemm_full; an error record when it failed), and its figures are copied
# into the matching pdsyrk_ record's "prism_syrk" / "prism_gemm_full" field: {recv_max_MB,
# recv_mean_MB, pred_max_MB, bound_MB, best_s, scheme or grid, ranks_used, ranks_off_model, check}
# (or {"error": ..} when it failed). --no-prism leaves them null, as the first run did.
# Writes bench/results/dist-syrk-<host>-<UTC date>.json (records, machine, date, environment,
# mpirun flags, git commit), then report_syrk.py writes the .md table and the .png.
#
#   bash scripts/bench-syrk.sh                  full run (10 minutes on 2 shared cores, prism included)
#   bash scripts/bench-syrk.sh --quick          smoke run: P in {2,4,7}, shapes 512 x 512,
#                                               64 x 65536, 256 x 8192, 1 round
#                                               -> bench/runs/dist-syrk-quick-<UTC time>/ (ignored)
# options:
#   --procs 2,4,8     the P list of part (a)
#   --rounds R        rounds of part (b) (default 2, quick 1)
#   --nb NB           ScaLAPACK block size (default 128)
#   --host NAME       the <host> of the file name (default: hostname -s)
#   --out PREFIX      write PREFIX.{json,md,png,log} instead
#   --no-build        use the binaries already in the build folder
#   --prism BIN       the prism tool for the bounds (default <build>/apps/prism)
#   --skip-volume / --skip-time   leave part (a) or (b) out
#   --no-prism        run pdsyrk_ alone (the prism hooks stay null)
# environment: PRISM_BUILD_DIR (default build), PRISM_DIST_TIMEOUT (seconds per mpirun, default
# 1200: a run past it is recorded with its error, never dropped). OPENBLAS_NUM_THREADS=1 is
# passed to every rank; every other variable passes through and is recorded in the JSON.
set -euo pipefail
cd "$(dirname "$0")/.."

procs="2,4,7,8,13,16"
rounds=2
reps_time=3
nb=128
quick=0
build_it=1
out=""
host=""
prism_bin=""
do_volume=1
do_time=1
do_prism=1
procs_given=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; procs="2,4,7"; rounds=1 ;;
    --procs) procs="$2"; procs_given=1; shift ;;
    --rounds) rounds="$2"; shift ;;
    --nb) nb="$2"; shift ;;
    --host) host="$2"; shift ;;
    --out) out="$2"; shift ;;
    --no-build) build_it=0 ;;
    --prism) prism_bin="$2"; shift ;;
    --skip-volume) do_volume=0 ;;
    --skip-time) do_time=0 ;;
    --no-prism) do_prism=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-syrk: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
all_procs=$procs   # the list this mode would run; --procs may cut it (the report says so)
[ "$procs_given" = 1 ] && { [ "$quick" = 1 ] && all_procs="2,4,7" || all_procs="2,4,7,8,13,16"; }
[[ "$procs" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "bench-syrk: --procs wants a list like 2,4,8" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench-syrk: --rounds wants a positive integer" >&2; exit 2; }
[[ "$nb" =~ ^[1-9][0-9]*$ ]] || { echo "bench-syrk: --nb wants a positive integer" >&2; exit 2; }
[ "$do_volume" = 1 ] || [ "$do_time" = 1 ] || { echo "bench-syrk: --skip-volume with --skip-time runs nothing" >&2; exit 2; }
host=${host:-$(hostname -s)}
[[ "$host" =~ ^[A-Za-z0-9._-]+$ ]] || { echo "bench-syrk: --host wants letters, digits, '.', '_' or '-'" >&2; exit 2; }

shapes=("4096 4096" "256 1048576" "1024 65536")   # n k: C is n x n, A is k x n
[ "$quick" = 1 ] && shapes=("512 512" "64 65536" "256 8192")
build=${PRISM_BUILD_DIR:-build}
timeout_s=${PRISM_DIST_TIMEOUT:-1200}
py=/usr/bin/python3; [ -x "$py" ] || py=python3   # Debian's python3 has matplotlib

if [ "$build_it" = 1 ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPRISM_WITH_MPI=ON > /dev/null
  cmake --build "$build" -j"$(nproc)" --target prism_pdsyrk_bench prism_mpi_counter prism_mpi_counter_selftest prism_cli
fi
prism_bin=${prism_bin:-$build/apps/prism}
syrk_bin=$build/bench/prism_pdsyrk_bench
counter_lib=$build/bench/libprism_mpi_counter.so
counter_selftest=$build/bench/prism_mpi_counter_selftest
[ -x "$syrk_bin" ] || { echo "bench-syrk: no $syrk_bin (configure with -DPRISM_WITH_MPI=ON)" >&2; exit 2; }
[ -f "$counter_lib" ] && [ -x "$counter_selftest" ] ||
  { echo "bench-syrk: no $counter_lib or $counter_selftest (build prism_mpi_counter and its self-test)" >&2; exit 2; }
counter_lib=$(realpath "$counter_lib")
bounds_from=""
if [ -x "$prism_bin" ] && "$prism_bin" bound 8 8 8 --syrk --ranks 2 > /dev/null 2>&1; then
  bounds_from=$prism_bin
else
  echo "bench-syrk: $prism_bin has no 'bound --syrk': the bound fields stay null" >&2
fi
if [ "$do_prism" = 1 ] && ! { [ -x "$prism_bin" ] && "$prism_bin" plan 64 64 64 --syrk UT --ranks 2 > /dev/null 2>&1; }; then
  echo "bench-syrk: $prism_bin has no distributed syrk ('plan --syrk UT --ranks'); use --no-prism" >&2
  exit 2
fi

now=$(date -u +%s)
date_utc=$(date -u -d "@$now" +%Y-%m-%d)
if [ -z "$out" ]; then
  if [ "$quick" = 1 ]; then
    mkdir -p bench/runs
    out=bench/runs/dist-syrk-quick-$(date -u -d "@$now" +%Y-%m-%dT%H%M%SZ)/dist-syrk
    mkdir "$(dirname "$out")"
  else
    out=bench/results/dist-syrk-$host-$date_utc
    # A recorded result is never overwritten: a second run the same day gets the time too.
    [ -e "$out.json" ] && out=bench/results/dist-syrk-$host-$(date -u -d "@$now" +%Y-%m-%dT%H%M%SZ)
    mkdir -p bench/results
  fi
fi
for ext in json md png; do
  [ -e "$out.$ext" ] && { echo "bench-syrk: $out.$ext exists; not overwriting it" >&2; exit 1; }
done
mkdir -p "$(dirname "$out")"
log=$out.log
records=$(mktemp)
stdout_tmp=$(mktemp)
stderr_tmp=$(mktemp)
trap 'rm -f "$records" "$stdout_tmp" "$stderr_tmp"' EXIT
: > "$log"

[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_env=(-x OPENBLAS_NUM_THREADS=1)
volume_flags=(--oversubscribe --bind-to none)
time_flags=(--bind-to core)

# bound N K P: `prism bound N N K --syrk --ranks P`'s two figures as JSON fields (words per
# rank: the SYRK bound and its case, the gemm bound of the full square), or nulls.
bound() {
  if [ -z "$bounds_from" ]; then
    echo '{"bound_words":null,"bound_case":null,"gemm_bound_words":null,"bound_source":"prism tool missing"}'
    return
  fi
  "$bounds_from" bound "$1" "$1" "$2" --syrk --ranks "$3" | "$py" -c '
import json, re, sys
text = sys.stdin.read()
def number(pattern):
    m = re.search(pattern, text, re.M)
    return float(m.group(1)) if m else None
case = re.search(r"^SYRK lower bound, (\S+) case:", text, re.M)
print(json.dumps({"bound_words": number(r"^SYRK lower bound, \S+ case: ([0-9.e+-]+) words"),
                  "bound_case": case.group(1) if case else None,
                  "gemm_bound_words": number(r"^gemm, the full square .*: ([0-9.e+-]+) words"),
                  "bound_source": "prism bound --syrk"}))'
}

# run PHASE ROUND P EXTRA_JSON CMD...: one mpirun; appends its JSON line, the PMPI counter's line
# ("mpi-counter: {...}" on stderr -> "counter"), EXTRA_JSON's fields and what ran to the records,
# or an error record when it printed none or failed (a timeout included).
run() {
  local phase=$1 round=$2 np=$3 extra=$4; shift 4
  local t0 t1 rc=0 line load
  echo "== $phase round $round: $*" >> "$log"
  load=$(cut -d' ' -f1-3 /proc/loadavg)   # other users of the machine show here: recorded per run
  t0=$(date +%s.%N)
  timeout "$timeout_s" "$@" > "$stdout_tmp" 2> "$stderr_tmp" || rc=$?
  t1=$(date +%s.%N)
  cat "$stderr_tmp" "$stdout_tmp" >> "$log"
  line=$(grep -E '^\{"tool":' "$stdout_tmp" | tail -n 1 || true)
  PHASE=$phase ROUND=$round NP=$np RC=$rc T0=$t0 T1=$t1 LINE=$line CMD="$*" EXTRA=$extra TIMEOUT=$timeout_s LOAD=$load \
    STDERR_FILE=$stderr_tmp "$py" - >> "$records" <<'EOF'
import json, os
try:
    rec = json.loads(os.environ["LINE"]) if os.environ["LINE"] else {}
except ValueError:
    rec = {"unparsed": os.environ["LINE"]}
with open(os.environ["STDERR_FILE"], errors="replace") as f:
    for text in f:
        at = text.find("mpi-counter: {")
        if at >= 0:
            try:
                rec["counter"] = json.loads(text[at + len("mpi-counter: "):])
            except ValueError:
                rec["counter"] = {"unparsed": text.strip()}
for key, v in json.loads(os.environ["EXTRA"] or "{}").items():
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
    why = "timed out after %s s" % os.environ["TIMEOUT"] if rc == 124 else "exit status %d" % rc
    rec["error"] = why + (", no JSON line" if not os.environ["LINE"] else "")
rec.setdefault("tool", "scalapack_pdsyrk")
rec.setdefault("np", int(os.environ["NP"]))
rec["phase"] = os.environ["PHASE"]
rec["round"] = int(os.environ["ROUND"])
rec["cmd"] = os.environ["CMD"]
rec["wall_s"] = round(float(os.environ["T1"]) - float(os.environ["T0"]), 3)
rec["loadavg_before"] = [float(x) for x in os.environ["LOAD"].split()]
print(json.dumps(rec))
EOF
  if [ "$rc" = 0 ] && [ -n "$line" ]; then
    echo "  ok: ${line:0:150}"
  else
    echo "  FAILED (exit status $rc; see $log): $*"
  fi
}

# prism_pair PHASE ROUND P N K REPS FLAGS...: prism's syrk and its full-square gemm at the same
# shape and P, with the mpirun flags given; each a record of its own ("role"), matched to the
# pdsyrk_ record of the same phase, round, np, n and k when the JSON is written.
prism_pair() {
  local phase=$1 round=$2 np=$3 n=$4 k=$5 reps=$6; shift 6
  [ "$do_prism" = 1 ] || return 0
  run "$phase" "$round" "$np" "{\"tool\":\"prism_run\",\"role\":\"prism_syrk\",\"n\":$n,\"k\":$k}" \
    mpirun "$@" -np "$np" "${mpirun_env[@]}" "$prism_bin" run "$n" "$n" "$k" --syrk UT --json --reps "$reps" --threads 1
  run "$phase" "$round" "$np" "{\"tool\":\"prism_run\",\"role\":\"prism_gemm_full\",\"n\":$n,\"k\":$k}" \
    mpirun "$@" -np "$np" "${mpirun_env[@]}" "$prism_bin" run "$n" "$n" "$k" --trans TN --json --reps "$reps" --threads 1
}

# The hook fields, null in every pdsyrk_ record until the JSON is written (filled from the
# prism records then; they stay null with --no-prism).
hook='"prism_syrk":null,"prism_gemm_full":null'

echo "bench-syrk: PMPI counter self-test"
run selftest 1 4 '{"tool":"mpi_counter_selftest"}' mpirun "${volume_flags[@]}" -np 4 \
  -x LD_PRELOAD="$counter_lib" "$counter_selftest"

if [ "$do_volume" = 1 ]; then
  for shape in "${shapes[@]}"; do
    read -r n k <<< "$shape"
    for p in ${procs//,/ }; do
      echo "bench-syrk: volume n=$n k=$k P=$p"
      extra=$(bound "$n" "$k" "$p" | "$py" -c 'import json, sys; d = json.load(sys.stdin); d.update(json.loads(sys.argv[1])); print(json.dumps(d))' "{$hook,\"n\":$n,\"k\":$k}")
      run volume 1 "$p" "$extra" mpirun "${volume_flags[@]}" -np "$p" "${mpirun_env[@]}" \
        -x LD_PRELOAD="$counter_lib" "$syrk_bin" "$n" "$k" --nb "$nb" --reps 1
      prism_pair volume 1 "$p" "$n" "$k" 1 "${volume_flags[@]}"
    done
  done
fi

if [ "$do_time" = 1 ]; then
  for r in $(seq 1 "$rounds"); do
    for shape in "${shapes[@]}"; do
      read -r n k <<< "$shape"
      echo "bench-syrk: time round $r n=$n k=$k np=2"
      run time "$r" 2 "{$hook,\"n\":$n,\"k\":$k}" mpirun "${time_flags[@]}" -np 2 "${mpirun_env[@]}" \
        "$syrk_bin" "$n" "$k" --nb "$nb" --reps "$reps_time"
      prism_pair time "$r" 2 "$n" "$k" "$reps_time" "${time_flags[@]}"
    done
  done
fi
finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# Everything into one JSON: the records plus what they ran on.
OUT_JSON=$out.json RECORDS=$records STARTED=$(date -u -d "@$now" +%Y-%m-%dT%H:%M:%SZ) FINISHED=$finished \
QUICK=$quick PROCS=$procs ALL_PROCS=$all_procs ROUNDS=$rounds REPS_TIME=$reps_time NB=$nb HOST=$host SHAPES="$(printf '%s;' "${shapes[@]}")" \
SYRK_BIN=$syrk_bin BENCH_PRISM_BIN=$prism_bin BENCH_DO_PRISM=$do_prism COUNTER_LIB=$counter_lib BOUNDS_FROM=$bounds_from \
VOLUME_FLAGS="${volume_flags[*]} ${mpirun_env[*]}" TIME_FLAGS="${time_flags[*]} ${mpirun_env[*]}" "$py" - <<'EOF'
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
    "schema": "prism-dist-syrk-bench/1",
    "host": os.environ["HOST"],
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
        "hostname": sh("hostname"),
        "cpu_model": lscpu.get("Model name", ""),
        "cpus": int(lscpu.get("CPU(s)", "0") or 0),
        "threads_per_core": lscpu.get("Thread(s) per core", ""),
        "cores_per_socket": lscpu.get("Core(s) per socket", ""),
        "sockets": lscpu.get("Socket(s)", ""),
        "mem_gb": round(mem_kb / 1e6, 1),
        "kernel": sh("uname", "-r"),
        "loadavg_end": [float(x) for x in open("/proc/loadavg").read().split()[:3]],
        "scalapack": sh("dpkg-query", "-W", "-f=${Package} ${Version}", "libscalapack-openmpi2.2"),
    },
    "environment": {k: v for k, v in sorted(os.environ.items())
                    if env_re.match(k) and not k.startswith("OMPI_ALLOW")},
    "per_rank_environment": {"OPENBLAS_NUM_THREADS": "1"},
    "mpi": {
        "mpirun": (sh("mpirun", "--version").splitlines() or [""])[0],
        "volume_flags": os.environ["VOLUME_FLAGS"],
        "time_flags": os.environ["TIME_FLAGS"],
    },
    "options": {
        "procs": [int(p) for p in os.environ["PROCS"].split(",")],
        "all_procs": [int(p) for p in os.environ["ALL_PROCS"].split(",")],
        "shapes": [dict(zip(("n", "k"), map(int, s.split()))) for s in os.environ["SHAPES"].split(";") if s.strip()],
        "rounds": int(os.environ["ROUNDS"]),
        "reps_volume": 1,
        "reps_time": int(os.environ["REPS_TIME"]),
        "nb": int(os.environ["NB"]),
        "uplo": "U",
        "trans": "T",
        "pdsyrk": os.environ["SYRK_BIN"],
        "counter": os.environ["COUNTER_LIB"],
        "bounds_from": os.environ["BOUNDS_FROM"] or None,
        "prism": os.environ["BENCH_PRISM_BIN"] if os.environ["BENCH_DO_PRISM"] == "1" else None,
        "prism_threads": 1,
        "prism_reps_volume": 1,
        "prism_reps_time": int(os.environ["REPS_TIME"]),
        "prism_interleaved": "pdsyrk_, prism syrk, prism gemm full square in turn for each shape of each round",
    },
    "hook": ("prism_syrk and prism_gemm_full hold prism's figures for the same phase, round, np and shape, "
             "{\"recv_max_MB\", \"recv_mean_MB\", \"pred_max_MB\", \"bound_MB\", \"best_s\", \"scheme\" or "
             "\"grid\", \"ranks_used\", \"ranks_off_model\", \"check\", ...}, copied from the prism_run records "
             "(`prism run N N K --syrk UT --json --threads 1` and the full square `prism run N N K --trans TN "
             "--json --threads 1`, same mpirun flags); {\"error\": ..} when that run failed; null with --no-prism"
             if os.environ["BENCH_DO_PRISM"] == "1" else
             "prism_syrk and prism_gemm_full are null: this run used --no-prism"),
    "records": [],
}
with open(os.environ["RECORDS"]) as f:
    doc["records"] = [json.loads(line) for line in f if line.strip()]
# The hook: each prism record's figures into the pdsyrk_ record of the same phase, round, np and
# shape (a failed prism run gives {"error": ..}, so a missing figure is never silent).
def key(r):
    return (r.get("phase"), r.get("round"), r.get("np"), r.get("n"), r.get("k"))
HOOK_FIELDS = ("recv_max_MB", "recv_mean_MB", "pred_max_MB", "bound_MB", "best_s", "gflops", "scheme", "grid",
               "ranks_used", "ranks_off_model", "check", "reps", "error", "loadavg_before", "wall_s")
prism = {}
for r in doc["records"]:
    if r.get("tool") == "prism_run" and r.get("role") in ("prism_syrk", "prism_gemm_full"):
        prism[(r["role"],) + key(r)] = {f: r[f] for f in HOOK_FIELDS if f in r}
for r in doc["records"]:
    if r.get("tool") == "scalapack_pdsyrk" and r.get("phase") in ("volume", "time"):
        for role in ("prism_syrk", "prism_gemm_full"):
            r[role] = prism.get((role,) + key(r), r.get(role))
with open(os.environ["OUT_JSON"], "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
EOF
"$py" bench/dist/report_syrk.py "$out.json" --md "$out.md" --png "$out.png"
failed=$(grep -c '"error"' "$records" || true)
echo
echo "bench-syrk: $out.json, $out.md, $out.png (log $log)"
[ "$failed" = 0 ] || { echo "bench-syrk: $failed run(s) failed; see $log (they are in the JSON with their error)" >&2; exit 1; }
