// lib/leaf/kernels/simd-inl.h — what every SIMD kernel family shares, per target: the
// register budget, masked loads that never fault, balanced cuts. Highway's per-target
// header: included once per target by each kernel file (the toggle below), never on the
// scalar target.
#if defined(PRISM_LEAF_KERNELS_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PRISM_LEAF_KERNELS_SIMD_INL_H_
#undef PRISM_LEAF_KERNELS_SIMD_INL_H_
#else
#define PRISM_LEAF_KERNELS_SIMD_INL_H_
#endif

#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>

#if HWY_TARGET != HWY_SCALAR
HWY_BEFORE_NAMESPACE();
namespace prism::detail::streaming {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Loops over a register tile's vectors, fully unrolled: GCC then keeps the accumulators
// in registers (otherwise it stored them to the stack on every step of the outer kernel).
#define PRISM_UNROLL _Pragma("GCC unroll 16")

// Vector registers of the target: the budget for accumulators.
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) || HWY_ARCH_ARM_A64 || HWY_ARCH_RVV
constexpr int registers = 32;
#else
constexpr int registers = 16;
#endif

// Masked loads that never touch memory past the last lane they load (x86 AVX2/AVX-512,
// SVE, RVV); other targets' MaskedLoad reads the whole vector, so there a partial vector
// goes through a small copy.
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2) || \
    (HWY_TARGET & (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128 | HWY_RVV))
constexpr bool fault_free_masked_load = true;
#else
constexpr bool fault_free_masked_load = false;
#endif

// The first `count` lanes from p (1 <= count <= Lanes(d)), zeros above; reads only
// p[0 .. count - 1]. `mask` is FirstN(d, count).
template <class D>
HWY_INLINE hn::Vec<D> load_first(D d, const hn::TFromD<D>* HWY_RESTRICT p, hn::Mask<D> mask, std::size_t count) {
  if constexpr (fault_free_masked_load) {
    (void)count;
    return hn::MaskedLoad(mask, d, p);
  } else {
    (void)mask;
    HWY_ALIGN hn::TFromD<D> buf[hn::MaxLanes(d)] = {};
    for (std::size_t i = 0; i < count; ++i) buf[i] = p[i];
    return hn::Load(d, buf);
  }
}

// Sign vector (1, s, 1, s, ...): even lanes times 1, odd lanes times s.
template <class D>
HWY_INLINE hn::Vec<D> even_odd(D d, hn::TFromD<D> s) {
  return hn::OddEven(hn::Set(d, s), hn::Set(d, hn::TFromD<D>(1)));
}

// Balanced cuts of `extent` into pieces of at most `most`: e.g. 6 with most 4 -> 3 + 3.
inline std::int64_t piece(std::int64_t extent, std::int64_t most) {
  const std::int64_t pieces = (extent + most - 1) / most;
  return (extent + pieces - 1) / pieces;
}

}  // namespace HWY_NAMESPACE
}  // namespace prism::detail::streaming
HWY_AFTER_NAMESPACE();
#endif  // HWY_TARGET != HWY_SCALAR

#endif  // PRISM_LEAF_KERNELS_SIMD_INL_H_
