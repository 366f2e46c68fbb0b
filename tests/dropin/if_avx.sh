#!/usr/bin/env bash
# tests/dropin/if_avx.sh SKIP_CODE COMMAND [ARGS]... — runs COMMAND, or exits SKIP_CODE saying
# why when this CPU has no AVX (there prism's leaves run SSE kernels too, so an SSE backend
# is not weaker than them and the weak-backend tests cannot check what they are for).
skip=$1
shift
if ! grep -qw avx /proc/cpuinfo; then
  echo "if_avx: SKIPPED: this CPU has no AVX: SSE kernels are not weaker than prism's leaves here"
  exit "$skip"
fi
exec "$@"
