// lib/gpu/measure.hpp — a device's rates as the GPU level's model takes them, measured on
// the device (`prism tune`): gemm per type on device-resident operands, copies each way
// between pinned host memory and the device, and copies within the device.
#pragma once

#include "device.hpp"

#include <prism/types.hpp>

#include <cstddef>

namespace prism::detail::gpu {

/// What one device measured; 0 where it was not measured.
struct measured_rates {
  double flops[4] = {0, 0, 0, 0};  ///< gemm real flop/s for s, d, c, z (index: 0 s, 1 d, 2 c, 3 z)
  double link_in = 0;              ///< pinned host -> device bytes/s
  double link_out = 0;             ///< device -> pinned host bytes/s
  double memory_bandwidth = 0;     ///< bytes a device-to-device copy reads and writes, per second
  double register_rate = 0;        ///< bytes/s of the caller's host memory the device pins (register_host)
};

/// Bytes/s one host thread copies (memcpy of `bytes` between two buffers, best of `reps`).
double host_copy_rate(int reps = 3, std::size_t bytes = std::size_t(256) << 20);

/// Measures dev: each rate the best of `reps` timings, copies of `copy_bytes` (default
/// 256 MiB) and square gemms of order `order` (default 8192; complex types order / 2), on
/// operands the device holds (zeros: the rate does not depend on the values). Takes about
/// a second on a current GPU. Throws device_error when the device fails or lacks the memory.
measured_rates measure(device& dev, int reps = 3, std::size_t copy_bytes = std::size_t(256) << 20, int order = 8192);

}  // namespace prism::detail::gpu
