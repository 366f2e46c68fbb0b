#!/usr/bin/env bash
# p?syrk_'s memory behind ScaLAPACK, two builds side by side: Debian's PBLAS tester-style
# program (bench/dist/pdsyrk_bench.cpp) runs pdsyrk_ N x K at np 4 with libprism_scalapack
# preloaded (route prism), PRISM_STATS=1, once per build and transpose. Recorded per run: the
# PRISM_STATS line's mem_max_MB (the most bytes a process allocated for the call, buffers and
# workspace) and pred_mem_max_MB, and every process's peak resident memory (/usr/bin/time %M,
# the program's own A and C included). Writes bench/results/psyrk-memory-<UTC stamp>.txt with
# the machine, date, commits and environment.
#
#   bash scripts/psyrk-memory.sh BASE_BUILD [NEW_BUILD] [N K]   (defaults: build, 4096 4096)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: psyrk-memory.sh BASE_BUILD [NEW_BUILD] [N K]}
new=${2:-build}
n=${3:-4096}
k=${4:-4096}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
stamp=$(date -u +%Y-%m-%dT%H%MZ)
out=bench/results/psyrk-memory-$stamp.txt
# The build's checkout and its HEAD now (the build may predate it: its files' dates say when it was made).
checkout_of() { git -C "$1" rev-parse --show-toplevel 2>/dev/null || echo "not a checkout"; }
head_of() { git -C "$1" rev-parse --short HEAD 2>/dev/null || echo unknown; }
{
  echo "# pdsyrk_ $n x $k at np 4 (2x2 grid, nb 128), libprism_scalapack preloaded, PRISM_SCALAPACK_ROUTE=prism, PRISM_STATS=1"
  echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ); this tree at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- lib include || echo ' (uncommitted changes)')"
  echo "# environment: OPENBLAS_NUM_THREADS=1 $(env | grep -E '^(PRISM_|OMP_|OMPI_MCA_)' | tr '\n' ' ' || true)"
  for b in "$base" "$new"; do
    lib=$(realpath "$b/libprism_scalapack.so")
    echo "## build $b (checkout $(checkout_of "$b") at $(head_of "$b"); libprism_scalapack.so built $(date -u -r "$lib" +%Y-%m-%dT%H:%M:%SZ))"
    for trans in T N; do
      log=$(mktemp) rss_dir=$(mktemp -d)
      # each process writes its peak resident memory to a file of its own (stderr is shared)
      mpiexec --oversubscribe -np 4 -x LD_PRELOAD="$lib" -x PRISM_STATS=1 -x PRISM_SCALAPACK_ROUTE=prism \
        -x OPENBLAS_NUM_THREADS=1 sh -c '/usr/bin/time -f "%M" -o "$0/rss.$OMPI_COMM_WORLD_RANK" "$@"' "$rss_dir" \
        "$b/bench/prism_pdsyrk_bench" "$n" "$k" --reps 1 --trans "$trans" > /dev/null 2> "$log"
      stats=$(grep -m1 'route=prism' "$log" || echo "no route=prism line")
      mem=$(sed -n 's/.* mem_max_MB=\([^ ]*\) pred_mem_max_MB=\([^ ]*\) .*/mem_max_MB=\1 pred_mem_max_MB=\2/p' <<< "$stats")
      rss=$(for r in 0 1 2 3; do tail -n 1 "$rss_dir/rss.$r"; done | tr '\n' ' ')
      echo "trans $trans: ${mem:-$stats}; peak RSS of processes 0-3, KB: $rss"
      rm -rf "$log" "$rss_dir"
    done
  done
} | tee "$out"
echo "wrote $out"
