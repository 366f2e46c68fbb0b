#!/usr/bin/env bash
# The distributed benchmark (issue 11 item 7; bench/dist/README.md). One run does both parts:
#  (a) volume: for each P in {2,4,7,8,12,13,16} and each shape (2048^3, 256x256x262144,
#      4096x4096x256), `mpirun --oversubscribe -np P prism run M N K --threads 1 --reps 1 --json`:
#      per-rank received MB (measured and predicted) and the bound. Oversubscribed on this
#      machine, so its times mean nothing and are not reported.
#  (b) time at np = 2 (not oversubscribed): `prism run M N K --threads 1 --reps 3 --json` and
#      `prism_pdgemm_bench M N K --reps 3` (Debian's ScaLAPACK pdgemm), alternating per shape;
#      with --rounds 2 (the default) the second round runs them in the other order.
# then writes bench/results/dist-<UTC date>.json (every JSON line, machine, date, environment,
# git commit), and bench/dist/report.py writes dist-<date>.md (tables) and dist-<date>.png.
#
#   bash scripts/bench-dist.sh                 full run -> bench/results/dist-<date>.{json,md,png}
#   bash scripts/bench-dist.sh --quick         smoke run: P in {2,4,7}, 1 rep, 1 round,
#                                              -> bench/runs/dist-quick-<UTC time>/ (ignored by git)
# options:
#   --procs 2,4,8      the P list of part (a)
#   --rounds R         rounds of part (b) (default 2, quick 1)
#   --out PREFIX       write PREFIX.{json,md,png,log} instead
#   --no-build         use the binaries already in the build folder
#   --prism BIN        the prism tool (default <build>/apps/prism)
#   --skip-volume / --skip-time   run one part only
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
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-dist: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ "$procs" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "bench-dist: --procs wants a list like 2,4,8" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench-dist: --rounds wants a positive integer" >&2; exit 2; }

shapes=("2048 2048 2048" "256 256 262144" "4096 4096 256")
build=${PRISM_BUILD_DIR:-build}
timeout_s=${PRISM_DIST_TIMEOUT:-1200}
py=/usr/bin/python3; [ -x "$py" ] || py=python3   # Debian's python3 has numpy and matplotlib

if [ "$build_it" = 1 ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPRISM_WITH_MPI=ON > /dev/null
  cmake --build "$build" -j"$(nproc)" --target prism_cli prism_pdgemm_bench
fi
prism_bin=${prism_bin:-$build/apps/prism}
pdgemm_bin=$build/bench/prism_pdgemm_bench
[ -x "$prism_bin" ] || { echo "bench-dist: no prism tool at $prism_bin" >&2; exit 2; }
[ "$do_time" = 0 ] || [ -x "$pdgemm_bin" ] ||
  { echo "bench-dist: no $pdgemm_bin (configure with -DPRISM_WITH_MPI=ON)" >&2; exit 2; }

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
for ext in json md png; do
  [ -e "$out.$ext" ] && { echo "bench-dist: $out.$ext exists; not overwriting it" >&2; exit 1; }
done
mkdir -p "$(dirname "$out")"
log=$out.log
records=$(mktemp)
stdout_tmp=$(mktemp)
trap 'rm -f "$records" "$stdout_tmp"' EXIT
: > "$log"

mpirun_env=()
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_env+=(-x OPENBLAS_NUM_THREADS=1)
volume_flags=(--oversubscribe --bind-to none)
time_flags=(--bind-to core)

# run PHASE ROUND TOOL P CMD...: runs one mpirun, appends its JSON line (plus what ran) to
# the records, or an error record when it printed none.
run() {
  local phase=$1 round=$2 tool=$3 np=$4; shift 4
  local t0 t1 rc=0 line
  echo "== $phase round $round: $*" >> "$log"
  t0=$(date +%s.%N)
  timeout "$timeout_s" "$@" > "$stdout_tmp" 2>> "$log" || rc=$?
  t1=$(date +%s.%N)
  cat "$stdout_tmp" >> "$log"
  line=$(grep -E '^\{"tool":' "$stdout_tmp" | tail -n 1 || true)
  PHASE=$phase ROUND=$round TOOL=$tool NP=$np RC=$rc T0=$t0 T1=$t1 LINE=$line CMD="$*" "$py" - >> "$records" <<'EOF'
import json, os
try:
    rec = json.loads(os.environ["LINE"]) if os.environ["LINE"] else {}
except ValueError:
    rec = {"unparsed": os.environ["LINE"]}
rc = int(os.environ["RC"])
if rc != 0 or not rec:
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

echo "bench-dist: writing $out.{json,md,png,log}"
if [ "$do_volume" = 1 ]; then
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
if [ "$do_time" = 1 ]; then
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
finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# Everything into one JSON: the records plus what they ran on.
OUT_JSON=$out.json RECORDS=$records STARTED=$(date -u -d "@$now" +%Y-%m-%dT%H:%M:%SZ) FINISHED=$finished \
QUICK=$quick PROCS=$procs ROUNDS=$rounds REPS_VOLUME=$reps_volume REPS_TIME=$reps_time \
BD_PRISM_BIN=$prism_bin BD_PDGEMM_BIN=$pdgemm_bin VOLUME_FLAGS="${volume_flags[*]} ${mpirun_env[*]}" \
TIME_FLAGS="${time_flags[*]} ${mpirun_env[*]}" "$py" - <<'EOF'
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
    },
    "records": [],
}
with open(os.environ["RECORDS"]) as f:
    doc["records"] = [json.loads(line) for line in f if line.strip()]
with open(os.environ["OUT_JSON"], "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
EOF
"$py" bench/dist/report.py "$out.json" --md "$out.md" --png "$out.png"
failed=$(grep -c '"error"' "$records" || true)
echo
echo "bench-dist: $out.json, $out.md, $out.png (log $log)"
[ "$failed" = 0 ] || { echo "bench-dist: $failed run(s) failed; see $log" >&2; exit 1; }
