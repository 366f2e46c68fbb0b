// lib/leaf/kernels/targets.cpp — the instruction sets the streaming kernels run: which
// targets this CPU has, PRISM_SIMD's choice among them, the name of the one dispatched, and
// whether a streaming leaf has run.
#include "tasks.hpp"

#include "../../environment/environment.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "leaf/kernels/targets.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace prism::detail::streaming {
namespace HWY_NAMESPACE {
const char* target_name() { return hwy::TargetName(HWY_TARGET); }
}  // namespace HWY_NAMESPACE
}  // namespace prism::detail::streaming
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace prism::detail {

namespace streaming {
HWY_EXPORT(target_name);

namespace {
std::atomic<bool> ran{false};
}  // namespace

// PRISM_SIMD (read once, before the first kernel runs): "avx2" keeps the kernels off every
// target above AVX2, "scalar" off every SIMD target (the plain loops), so tests and
// benchmarks can run what an AVX2-only or a SIMD-less CPU would; unset or "auto": the best
// target this CPU runs. Highway numbers targets best first: HWY_AVX2 is 1 << 9, so
// HWY_AVX2 - 1 sets bits 0..8, every AVX-512 / AVX10 target. Anything else: one warning
// (lib/environment checks the value).
// prism never calls hwy::SupportedTargets() itself: in Highway 1.0 that call re-detects and
// points the dispatch back at the best target until the next DisableTargets.
void apply_simd_choice() {
  static std::once_flag once;
  std::call_once(once, [] {
    switch (process_environment().simd.get()) {  // a bad value says its line here
      case simd_choice::automatic: break;
      case simd_choice::avx2: hwy::DisableTargets(HWY_AVX2 - 1); break;
      case simd_choice::scalar: hwy::DisableTargets(~(HWY_SCALAR | HWY_EMU128)); break;
    }
  });
}

void note_leaf_ran() noexcept {
  if (!ran.load(std::memory_order_relaxed)) ran.store(true, std::memory_order_relaxed);
}
}  // namespace streaming

const char* streaming_target() {
  streaming::apply_simd_choice();
  return HWY_DYNAMIC_DISPATCH(streaming::target_name)();
}

bool streaming_leaf_ran() noexcept { return streaming::ran.load(std::memory_order_relaxed); }

std::int64_t streaming_supported_targets() { return hwy::SupportedTargets(); }

void streaming_force_targets(std::int64_t targets) { hwy::SetSupportedTargetsForTest(targets); }

}  // namespace prism::detail
#endif  // HWY_ONCE
