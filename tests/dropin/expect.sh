#!/usr/bin/env bash
# tests/dropin/expect.sh — runs a test program and checks its output (stdout + stderr).
#   expect.sh [--skip-code=N] [+REGEX | -REGEX]... -- COMMAND [ARGS]...
# Passes when COMMAND exits 0, every +REGEX matches some line of its output and no -REGEX
# matches any line (extended regular expressions, as grep -E). The output is always shown.
# When COMMAND exits N (it said why it cannot check what it is for), expect.sh exits N too.
set -uo pipefail
want=() refuse=() skip_code=
case "${1:-}" in --skip-code=*) skip_code=${1#--skip-code=}; shift ;; esac
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    +*) want+=("${1:1}") ;;
    -*) refuse+=("${1:1}") ;;
    *) echo "expect.sh: pattern '$1' must start with + or -" >&2; exit 2 ;;
  esac
  shift
done
[ "${1:-}" = "--" ] || { echo "expect.sh: missing -- before the command" >&2; exit 2; }
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" >"$log" 2>&1
rc=$?
cat "$log"
if [ -n "$skip_code" ] && [ $rc -eq "$skip_code" ]; then echo "expect.sh: SKIPPED: '$*' exited with $rc"; exit $rc; fi
status=0
if [ $rc -ne 0 ]; then echo "expect.sh: FAIL: '$*' exited with $rc"; status=1; fi
for re in "${want[@]}"; do
  grep -Eq -- "$re" "$log" || { echo "expect.sh: FAIL: no line matches /$re/"; status=1; }
done
for re in "${refuse[@]}"; do
  if grep -Eq -- "$re" "$log"; then echo "expect.sh: FAIL: a line matches /$re/ (it must not)"; status=1; fi
done
exit $status
