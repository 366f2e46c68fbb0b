// lib/simd/simd.hpp — the instruction set prism's own kernels (lib/leaf/kernels) run in this
// process: Highway's dispatched target after PRISM_SIMD's choice. The machine description
// (lib/machine) names it and scales its model by its width; the kernels apply the choice
// before their first dispatch.
#pragma once

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
