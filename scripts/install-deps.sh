#!/usr/bin/env bash
# Installs every Debian package prism builds, tests and benchmarks with. Idempotent: it
# asks apt only for what is missing, and does nothing when all is present. Run as root
# on Debian 12 (bookworm).
set -euo pipefail

packages=(
  g++ cmake make pkg-config          # toolchain
  libtbb-dev                         # oneTBB: tasks and arenas
  libhwloc-dev                       # topology (NUMA level)
  libhwy-dev                         # Google Highway: SIMD of the streaming leaves (gemm and rank-k)
  dpkg-dev                           # dpkg-source: Highway's dispatch sources (get-highway-source.sh)
  libopenblas-dev                    # OpenBLAS headers and the default libblas/liblapack
  libopenblas0-pthread               # threaded OpenBLAS: benchmark peer and test reference
  libopenblas-serial-dev libopenblas0-serial   # serial OpenBLAS (single-thread peer)
  libopenblas64-0-pthread            # ILP64 OpenBLAS: prism's private leaf copy (see README)
  libblis-dev libblis4-serial libblis4-pthread   # BLIS: second leaf backend and peer
  libbenchmark-dev                   # Google Benchmark
  doctest-dev                        # test framework
  python3-matplotlib                 # benchmark plot
  gfortran                           # Fortran test program of the drop-in BLAS
  python3-numpy                      # NumPy under LD_PRELOAD (drop-in BLAS test)
  python3-scipy                      # linear and mixed-integer programs: scripts/syrk-small-p.py
  binutils                           # nm: the drop-in's exported symbols are checked
  libopenblas64-pthread-dev          # -lblas64 (ILP64 link line of the drop-in)
  libopenmpi-dev openmpi-bin         # MPI: the rank level (lib/dist, prism run)
  libscalapack-openmpi-dev           # ScaLAPACK pdgemm: the distributed benchmark's peer
  scalapack-mpi-test                 # Debian's PBLAS testers: the ctest entry pblas_coexistence
  liblapack-test                     # LAPACK's testers: the ctest entry dropin_lapack_testers
  valgrind                           # cache simulation: cachegrind study and cache-traffic test
  universal-ctags                    # function extents: the tree rules (scripts/check_tree.py)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# From Debian source packages, after the packages above: Highway's runtime dispatch
# (hwy/targets.cc, hwy/per_target.cc), which prism's build compiles in with hidden visibility
# instead of linking libhwy.so.1 (scripts/get-highway-source.sh; the build needs it), and the
# reference BLAS level-3 testers (in no binary package: Debian's lapack source package), for
# the ctest entry dropin_blas_testers, which reports Skipped when they are absent.
sources() {
  bash "$(dirname "$0")/get-highway-source.sh" || {
    echo "install-deps: Highway's dispatch sources could not be had; prism's build needs them (scripts/get-highway-source.sh)" >&2
    exit 1
  }
  [ "$(id -u)" -eq 0 ] || return 0
  bash "$(dirname "$0")/get-blas-testers.sh" ||
    echo "install-deps: warning: the reference BLAS testers could not be fetched; dropin_blas_testers will be skipped" >&2
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  sources
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing ${missing[*]}; run this script as root (or: sudo $0)" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
sources
