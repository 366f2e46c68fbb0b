#!/usr/bin/env bash
# scripts/device-check.sh pack | run [--quick] [--emulate] — prism's GPU level on a machine
# with a GPU, in one short visit (docs/gpu.md, "Checking it on a GPU").
#
#   pack   (here, on Debian 12, after scripts/test.sh has built build/): packs prism's tool,
#          libraries, GPU benchmark and GPU tests with the runtime libraries they load (the
#          leaf BLAS builds and the ldd closure, without glibc, libstdc++ and CUDA's own), and
#          Debian's own Python 3 with python3-numpy (NumPy on the system BLAS, the one the
#          drop-in replaces; the standard library without its tests and GUI modules) into
#          .device/kit.tar.xz (ignored by git; about 30 MB), and the commit into .device/commit.
#   run    (there, from the repository root with .device/ beside it: a machine with CUDA 13
#          at /usr/local/cuda and a GPU, no package registry, none of prism's Debian
#          libraries): unpacks the kit, runs the GPU tests on the real device (the CUDA device
#          set's own check, then `prism run --gpus 1 --check` over types, transposes, syrk and
#          herk and a device memory cap, each call's counted link bytes against the model),
#          then the GPU benchmark against cuBLAS and cuBLASXt (and operands on the device), then
#          NumPy through the preloaded drop-in against the same NumPy without it
#          (bench/numpy_gpu.py), and writes gpu-check-DATE.md (and gpu-check.log) into $OUT,
#          else the current folder. About 6 minutes on one H200 (--quick: smaller shapes, about 3).
#          --emulate: the same steps here, without a GPU, on an emulated device at small sizes
#          (the CUDA test left out): a dry run of the kit and the scripts; its figures mean nothing.
# Exit status: 0 when every test passed and the benchmark ran; 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
shift || true
build=${PRISM_BUILD_DIR:-build}

pack() {
  set -e
  local targets=(prism_cli prism prism_blas prism_gpu_bench test_gpu_cuda test_gpu_device)
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
  rm -rf .device/kit && mkdir -p .device/kit/bin .device/kit/lib .device/kit/py/lib/python3.11/site-packages
  cp "$build/apps/prism" "$build/bench/prism_gpu_bench" "$build/tests/test_gpu_cuda" "$build/tests/test_gpu_device" .device/kit/bin/
  cp -P "$build"/libprism.so* "$build"/libprism_blas.so* "$build"/libprism_dist.so* .device/kit/lib/ 2>/dev/null || true
  # The leaf and backend BLAS builds prism opens by path (PRISM_LIB_* points there at run time).
  local multi=/usr/lib/x86_64-linux-gnu
  local lib
  for lib in openblas64-pthread/libopenblas64.so.0 openblas-pthread/libopenblas.so.0 openblas-pthread/libblas.so.3 \
             openblas-pthread/liblapack.so.3 blis-serial/libblis.so.4 blis-pthread/libblis.so.4; do
    mkdir -p ".device/kit/lib/$(dirname "$lib")"
    cp -L "$multi/$lib" ".device/kit/lib/$lib"
  done
  # Debian's Python and NumPy: the interpreter, the standard library without tests, GUI and
  # network-security modules (NumPy needs none of them), NumPy without its tests.
  cp -L /usr/bin/python3 .device/kit/py/python3.11
  tar -C /usr/lib -cf - --exclude='__pycache__' --exclude='python3.11/test' --exclude='*/tests' \
    --exclude='python3.11/idlelib' --exclude='python3.11/tkinter' --exclude='python3.11/ensurepip' \
    --exclude='python3.11/lib2to3' --exclude='python3.11/pydoc_data' --exclude='python3.11/turtledemo' \
    --exclude='python3.11/site-packages' --exclude='python3.11/dist-packages' --exclude='python3.11/config-3.11-*' \
    --exclude='*_test*.so' --exclude='_tkinter*' --exclude='_ssl*' --exclude='_hashlib*' --exclude='_sqlite3*' \
    --exclude='_dbm*' --exclude='_gdbm*' --exclude='readline*' --exclude='_curses*' --exclude='nis.*' \
    --exclude='_crypt.*' --exclude='ossaudiodev*' --exclude='xxlimited*' python3.11 | tar -C .device/kit/py/lib -xf -
  tar -C /usr/lib/python3/dist-packages -cf - --exclude='__pycache__' --exclude='tests' --exclude='*.pyi' \
    --exclude='f2py' --exclude='distutils' numpy | tar -C .device/kit/py/lib/python3.11/site-packages -xf -
  # Everything those load, but the C and C++ runtimes (newer on the GPU machine) and CUDA's.
  local skip='linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas'
  local f dep
  for f in .device/kit/bin/* .device/kit/lib/*.so* .device/kit/lib/*/*.so* .device/kit/py/python3.11 \
           $(find .device/kit/py -name '*.so'); do
    { ldd "$f" 2>/dev/null || true; } | awk '/=> \// {print $3}' | { grep -Ev "$skip" || true; } | while read -r dep; do
      [ -e ".device/kit/lib/$(basename "$dep")" ] || cp -L "$dep" .device/kit/lib/
    done
  done
  git rev-parse --short HEAD >.device/commit
  tar cJf .device/kit.tar.xz -C .device kit
  rm -rf .device/kit
  echo "device-check: .device/kit.tar.xz $(du -h .device/kit.tar.xz | cut -f1) (commit $(cat .device/commit)); carry .device"
  echo "device-check: the working tree and the kit together: $(du -sch --exclude=.git --exclude=build --exclude='build-*' . | tail -1 | cut -f1) (at most 64 MiB travel)"
}

run() {
  local quick="" emulate=""
  for a in "$@"; do
    case "$a" in
      --quick) quick=--quick ;;
      --emulate) emulate=--emulate ;;
      *) echo "device-check: run takes --quick and --emulate, not '$a'" >&2; exit 2 ;;
    esac
  done
  [ -f .device/kit.tar.xz ] || { echo "device-check: no .device/kit.tar.xz: run 'scripts/device-check.sh pack' on Debian first" >&2; exit 1; }
  local out=${OUT:-.} stamp kit=/tmp/prism-device-kit failures=0
  stamp=$(date -u +%Y-%m-%dT%H%MZ)
  exec > >(tee "$out/gpu-check.log") 2>&1
  rm -rf "$kit" && mkdir -p "$kit" && tar xJf .device/kit.tar.xz -C "$kit"
  local K=$kit/kit
  export LD_LIBRARY_PATH=$K/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  export PRISM_LIB_OPENBLAS64_PTHREAD=$K/lib/openblas64-pthread/libopenblas64.so.0
  export PRISM_LIB_OPENBLAS_PTHREAD=$K/lib/openblas-pthread/libopenblas.so.0
  export PRISM_LIB_OPENBLAS_SERIAL=$K/lib/openblas-pthread/libopenblas.so.0
  export PRISM_LIB_BLIS_SERIAL=$K/lib/blis-serial/libblis.so.4 PRISM_LIB_BLIS_PTHREAD=$K/lib/blis-pthread/libblis.so.4
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  unset PRISM_GPU PRISM_BLAS_ROUTE
  # --emulate: one emulated device stands in for the GPU (a dry run of every step here).
  [ -n "$emulate" ] && export PRISM_GPU=emulate:1:4G
  local results="$out/gpu-check-$stamp.md"
  {
    echo "# prism device check, $stamp"
    echo
    echo "Commit $(cat .device/commit 2>/dev/null || echo unknown); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "Host: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; environment: $(env | grep -E '^(OPENBLAS|BLIS|OMP|PRISM)_' | grep -v '^PRISM_LIB_' | tr '\n' ' ')"
    echo
    echo '```'
    timeout 60 "$K/bin/prism" info
    echo '```'
    echo
    echo "## Tests on the device"
    echo
  } >"$results"
  if [ -z "$emulate" ] && ! timeout 60 "$K/bin/prism" info | grep -q '^gpu 0: '; then
    echo "No GPU answered here: nothing checked." >>"$results"
    echo "device-check: no GPU here ($(timeout 60 "$K/bin/prism" info | grep '^gpu:')); results in $results"
    return 1
  fi
  check() {  # check NAME COMMAND...: one line of the results, PASS or FAIL
    local name=$1
    shift
    local log
    log=$(timeout 300 "$@" 2>&1)
    local rc=$?
    echo "$log" | tail -n 4
    if [ $rc -eq 0 ]; then echo "- $name: passed" >>"$results"; else echo "- $name: FAILED (exit $rc)" >>"$results"; failures=$((failures + 1)); fi
  }
  if [ -n "$emulate" ]; then
    echo "- test_gpu_cuda: left out (--emulate: no CUDA device here)" >>"$results"
  else
    check "test_gpu_cuda (dgemm, zherk and complex sums with beta = 1 on every CUDA device, exact)" "$K/bin/test_gpu_cuda" --no-skip
  fi
  check "test_gpu_device (the emulated device)" "$K/bin/test_gpu_device"
  local p=$K/bin/prism shapes
  shapes=("3001 2003 2503 --type d" "2999 1501 4003 --type s --trans TN" "1201 999 1777 --type z --trans CT"
          "1500 1400 900 --type c --trans NC" "6000 6000 3000 --type d --gpu-memory 256M"
          "4000 4000 300000 --syrk UT" "3000 3000 2000 --syrk LN --type s" "2000 2000 50000 --herk LC --type z"
          "64 64 16777216 --type d" "32 32 4194304 --type d --trans TN")
  [ -n "$emulate" ] && shapes=("301 203 253 --type d" "129 97 101 --type z --trans CT" "600 600 300 --type d --gpu-memory 2M"
                               "200 200 30000 --syrk UT" "100 100 5000 --herk LC --type z" "32 32 262144 --type d --trans TN")
  for args in "${shapes[@]}"; do
    # shellcheck disable=SC2086
    check "prism run $args --gpus 1 --check: right, and link bytes = model" \
      bash -c "out=\$('$p' run $args --gpus 1 --check --reps 1 --threads $(nproc)); echo \"\$out\"; echo \"\$out\" | grep -q '^counts: every device moved exactly' && echo \"\$out\" | grep -q '^check: passed'"
  done
  {
    echo
    echo "## The benchmark"
    echo
  } >>"$results"
  # shellcheck disable=SC2086
  timeout 400 "$K/bin/prism_gpu_bench" --reps 3 $quick $emulate --commit "$(cat .device/commit 2>/dev/null)" --out "$out/gpu-bench.md" ||
    failures=$((failures + 1))
  sed -n '/^| case/,$p' "$out/gpu-bench.md" >>"$results" 2>/dev/null
  sed -n '/^Each figure/p' "$out/gpu-bench.md" >>"$results" 2>/dev/null
  {
    echo
    echo "## NumPy through the drop-in"
    echo
  } >>"$results"
  # Debian's NumPy on the system BLAS (the kit's libblas.so.3), with libprism_blas preloaded
  # and without; auto routing (an emulated device is never the model's choice, so a dry run
  # forces the GPU route to exercise it).
  local size=${quick:-}
  [ -n "$emulate" ] && size=--small
  # shellcheck disable=SC2086
  if ! env PYTHONHOME="$K/py" PYTHONPATH="$K/py/lib/python3.11/site-packages" PYTHONNOUSERSITE=1 \
         LD_LIBRARY_PATH="$K/lib/openblas-pthread:$LD_LIBRARY_PATH" ${emulate:+PRISM_BLAS_ROUTE=gpu} \
         timeout 500 "$K/py/python3.11" bench/numpy_gpu.py "$K/lib/libprism_blas.so" $size --out "$out/numpy-gpu.md"; then
    failures=$((failures + 1))
    echo "NumPy check FAILED (see gpu-check.log)" >>"$results"
  fi
  cat "$out/numpy-gpu.md" >>"$results" 2>/dev/null
  echo "device-check: $failures failure(s); results in $results"
  [ $failures -eq 0 ]
}

case "$mode" in
  pack) pack ;;
  run) run "$@" ;;
  *) echo "usage: scripts/device-check.sh pack | run [--quick] [--emulate]" >&2; exit 2 ;;
esac
