#!/usr/bin/env python3
"""Two part (c) runs of scripts/bench-dist.sh compared: for each shape and grid, prism
through pdgemm_ over Debian's pdgemm_ in the same run (so the machine's drift between the
runs cancels), for run NEW and run OLD, and NEW's ratio over OLD's (below 1: NEW faster).

  /usr/bin/python3 bench/dist/compare_runs.py NEW.json OLD.json > bench/results/<name>.txt
"""
import json
import sys


def best_times(path):
    """(tool, grid, m, n, k, transa) -> best seconds of one bench-dist JSON, over its rounds."""
    with open(path) as f:
        data = json.load(f)
    out = {}
    for r in data.get("records", []):
        if isinstance(r, dict) and "best_s" in r:
            key = (r["tool"], r.get("grid"), r["m"], r["n"], r["k"], r.get("transa"))
            out[key] = min(out.get(key, r["best_s"]), r["best_s"])
    return data, out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    (dn, new), (do, old) = best_times(sys.argv[1]), best_times(sys.argv[2])
    for tag, d, path in (("new", dn, sys.argv[1]), ("old", do, sys.argv[2])):
        print(f"# {tag}: {path}: {d['started_utc']}, git {d['git']['commit'][:12]}, "
              f"prism {d['options']['prism']}, environment {d['environment']}")
    print("# shape transa grid: prism-through-pdgemm / Debian pdgemm in the same run: new, old; new / old")
    for key in sorted(new):
        base = ("scalapack_pdgemm",) + key[1:]
        if key[0] != "prism_via_pdgemm" or key not in old or base not in new or base not in old:
            continue
        rn, ro = new[key] / new[base], old[key] / old[base]
        print(f"{key[2]}x{key[3]}x{key[4]} {key[5]} {key[1]}: {rn:.3f} {ro:.3f}; {rn / ro:.2f}")


if __name__ == "__main__":
    main()
