// lib/gpu/devices.hpp — the devices a process has: real ones (CUDA, loaded at run time),
// emulated ones (PRISM_GPU=emulate:N:SIZE, tests), or none, with one line saying why.
#pragma once

#include "device.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace prism::detail::gpu {

/// What an emulated device does besides computing right: random copy delays (to expose a
/// missing wait) and injected failures (to test the fallbacks).
struct emulation_options {
  std::uint64_t delay_seed = 0;      ///< 0: no delays; else copies and kernels sleep 0..max_delay_us at random
  unsigned max_delay_us = 300;       ///< the longest delay
  long fail_allocation = -1;         ///< the n-th device allocation (0-based, over the device's life) throws; -1 never
  long fail_copy = -1;               ///< the n-th copy throws (at its synchronize, as CUDA's async errors do); -1 never
  long fail_kernel = -1;             ///< the n-th kernel (gemm, rank_k, geam, add_triangle, fill_zero) throws likewise
  std::size_t max_pitch = 2147483647;  ///< the largest copy_2d pitch in bytes (CUDA's memPitch on the devices known)
};

/// A set of devices and how it came to be.
struct device_set {
  std::vector<std::shared_ptr<device>> devices;  ///< index i is devices[i]->index() == i
  /// One line: "1 CUDA device: NVIDIA H200 (...)", "2 emulated devices of 1.00 GiB (PRISM_GPU)",
  /// "no GPU: PRISM_GPU=off", "no GPU: libcudart.so.13 not found", "no GPU: cudaGetDeviceCount: ...".
  std::string status;
  /// Devices in the set.
  int count() const noexcept { return int(devices.size()); }
};

/// The process's devices, built once on first use: PRISM_GPU=off none; emulate:N:SIZE[:delay]
/// N emulated devices; unset (or auto) the CUDA devices when libcudart and libcublas load
/// and cudaGetDeviceCount finds any, else none. Never throws: a bad PRISM_GPU is said once
/// ("prism: PRISM_GPU: ...; GPUs as if it were unset") and treated as unset.
std::shared_ptr<const device_set> process_devices();

/// `count` emulated devices of `bytes` each (tests, and `prism run --gpus` where no GPU is
/// present); throws prism::error unless 1 <= count <= 64 and bytes >= 1 MiB.
std::shared_ptr<const device_set> emulated_devices(int count, std::size_t bytes, const emulation_options& opts = {});

/// The CUDA devices, or an empty set whose status says why there are none.
std::shared_ptr<const device_set> cuda_devices();

}  // namespace prism::detail::gpu
