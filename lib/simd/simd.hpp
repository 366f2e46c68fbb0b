// lib/simd/simd.hpp — the instruction set prism's own kernels (lib/leaf/kernels) run in this
// process: Highway's dispatched target after PRISM_SIMD's choice. The machine description
// (lib/machine) names it and scales its model by its width; the kernels apply the choice
// before their first dispatch.
#pragma once

// The targets every kernel file and simd.cpp leave out, set here, before any Highway header,
// so that the target simd_target() names is one the kernels were compiled for. SSSE3 and
// SSE4 are left out (a CPU without AVX2, from before 2013, runs the scalar fallback): two
// more copies of every kernel, in build time and code size, for CPUs that no longer run this
// kind of code.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#endif

#include <cstdint>

namespace prism::detail {

/// Applies PRISM_SIMD once, before the first kernel dispatches ("avx2": no AVX-512 targets;
/// "scalar": the plain loops); later calls do nothing.
void apply_simd_choice();

/// The instruction set the kernels run on this CPU, e.g. "AVX3" (AVX-512) or "AVX2"
/// (Highway's name for the dispatched target).
const char* simd_target();

/// The instruction sets the kernels may dispatch to on this CPU (Highway's target bits,
/// e.g. HWY_AVX3 | HWY_AVX2 | HWY_SCALAR).
std::int64_t simd_supported_targets();

/// Test hook: the dispatcher sees only `targets` (Highway's bits) from the next call on;
/// 0 gives it back the CPU's own. Highway's dispatch is compiled into prism, hidden, so
/// this is the only way to reach it from outside the library.
void simd_force_targets(std::int64_t targets);

}  // namespace prism::detail
