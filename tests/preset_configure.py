#!/usr/bin/env python3
"""ctest preset_configure_NAME: SRC SCRATCH NAME SKIP_CODE [TIMEOUT_S]

Configures and generates CMakePresets.json's configure preset NAME from the source tree SRC
into the scratch folder SCRATCH (emptied first), as a user would on a clean clone:

    cmake -S SRC -B SCRATCH --preset NAME

and nothing more (no build), so that a preset nothing builds in CI still configures. Fails
(exit 1) when configuring or generating fails, printing CMake's errors, or when a static
build's (BUILD_SHARED_LIBS off) prism.pc does not name oneTBB and hwloc in its Libs (plain
`pkg-config --libs prism` must link a static libprism). A preset whose
prerequisites this host lacks is reported Skipped (exit SKIP_CODE) with the reason:
  - a compiler the preset names (CMAKE_C_COMPILER, CMAKE_CXX_COMPILER) that is not found;
  - a folder of CMAKE_PREFIX_PATH that does not exist (the tsan preset's oneTBB built
    with ThreadSanitizer by scripts/build-tsan-tbb.sh), since without it CMake would find
    another library and configure a build that is not the preset's.
"""
import json
import os
import shutil
import subprocess
import sys


def prerequisites_missing(preset):
    """Why this host cannot configure the preset as written, or None."""
    variables = preset.get("cacheVariables", {})
    for key in ("CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER"):
        value = variables.get(key)
        if isinstance(value, dict):
            value = value.get("value")
        if value and shutil.which(value) is None:
            return f"{key} = {value} is not installed on this host"
    prefix = variables.get("CMAKE_PREFIX_PATH")
    if isinstance(prefix, dict):
        prefix = prefix.get("value")
    for path in (prefix or "").split(";"):
        if path and not os.path.isdir(path):
            hint = " (scripts/build-tsan-tbb.sh builds it)" if "tsan" in path else ""
            return f"CMAKE_PREFIX_PATH folder {path} does not exist{hint}"
    return None


def main():
    if len(sys.argv) not in (5, 6):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    src, scratch, name, skip_code = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    timeout = float(sys.argv[5]) if len(sys.argv) == 6 else 120
    with open(os.path.join(src, "CMakePresets.json"), encoding="utf-8") as f:
        presets = {p["name"]: p for p in json.load(f).get("configurePresets", [])}
    if name not in presets:
        print(f"preset_configure: no configure preset '{name}' in {src}/CMakePresets.json")
        return 1
    why = prerequisites_missing(presets[name])
    if why is not None:
        print(f"preset_configure: {name}: SKIPPED: {why}")
        return skip_code
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    command = ["cmake", "-S", src, "-B", scratch, "--preset", name]
    print("+ " + " ".join(command), flush=True)
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"preset_configure: {name}: FAIL: configuring took more than {timeout:.0f} s")
        return 1
    log = done.stdout
    generated = os.path.isfile(os.path.join(scratch, "CMakeCache.txt")) and (
        os.path.isfile(os.path.join(scratch, "Makefile")) or os.path.isfile(os.path.join(scratch, "build.ninja")))
    if done.returncode != 0 or "CMake Error" in log or not generated:
        print(log)
        print(f"preset_configure: {name}: FAIL: cmake exited {done.returncode}"
              + ("" if generated else ", no build system generated"))
        return 1
    with open(os.path.join(scratch, "CMakeCache.txt"), encoding="utf-8") as f:
        static = any(line.strip() in ("BUILD_SHARED_LIBS:BOOL=OFF", "BUILD_SHARED_LIBS:BOOL=0") for line in f)
    if static:
        with open(os.path.join(scratch, "prism.pc"), encoding="utf-8") as f:
            libs = next((line for line in f if line.startswith("Libs:")), "")
        if not all(flag in libs.split() for flag in ("-lprism", "-ltbb", "-lhwloc")):
            print(f"preset_configure: {name}: FAIL: a static libprism's prism.pc links without oneTBB or hwloc: {libs.strip()}")
            return 1
    print(f"preset_configure: {name}: PASS: configured and generated in {scratch}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
