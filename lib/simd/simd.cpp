// lib/simd/simd.cpp — the instruction set prism's own kernels run: which targets this CPU
// has, PRISM_SIMD's choice among them, and the name of the one dispatched.
#include "simd.hpp"

#include "../environment/environment.hpp"
#include "../environment/run_once.hpp"

#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/simd.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace prism::detail::simd {
namespace HWY_NAMESPACE {
const char* target_name() { return hwy::TargetName(HWY_TARGET); }
}  // namespace HWY_NAMESPACE
}  // namespace prism::detail::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace prism::detail {

namespace simd {
HWY_EXPORT(target_name);
}  // namespace simd

// PRISM_SIMD (read once, before the first kernel runs): "avx2" keeps the kernels off every
// target above AVX2, "scalar" off every SIMD target (the plain loops), so tests and
// benchmarks can run what an AVX2-only or a SIMD-less CPU would; unset or "auto": the best
// target this CPU runs. Highway numbers targets best first: HWY_AVX2 is 1 << 9, so
// HWY_AVX2 - 1 sets bits 0..8, every AVX-512 / AVX10 target. Anything else: one warning
// (lib/environment checks the value).
// prism never calls hwy::SupportedTargets() itself: in Highway 1.0 that call re-detects and
// points the dispatch back at the best target until the next DisableTargets.
void apply_simd_choice() {
  static run_once once;  // every streaming leaf passes here
  once([] {
    switch (process_environment().simd.get()) {  // a bad value says its line here
      case simd_choice::automatic: break;
      case simd_choice::avx2: hwy::DisableTargets(HWY_AVX2 - 1); break;
      case simd_choice::scalar: hwy::DisableTargets(~(HWY_SCALAR | HWY_EMU128)); break;
    }
  });
}

const char* simd_target() {
  apply_simd_choice();
  return HWY_DYNAMIC_DISPATCH(simd::target_name)();
}

std::int64_t simd_supported_targets() { return hwy::SupportedTargets(); }

void simd_force_targets(std::int64_t targets) { hwy::SetSupportedTargetsForTest(targets); }

}  // namespace prism::detail
#endif  // HWY_ONCE
