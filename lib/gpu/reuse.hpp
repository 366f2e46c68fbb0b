// lib/gpu/reuse.hpp — streams and pinned host buffers a device's calls borrow and give back.
//
// A CUDA stream carries its own cuBLAS handle, which takes milliseconds to make, and
// cudaMallocHost pins memory page by page (pinning 4.3 GB took 0.53 s on an H200's host), so
// a real device's streams and pinned buffers are kept for the next call of the process: a
// stream given back drained and error-free, a pinned buffer by its size, up to
// `pinned_kept_bytes` a device. An emulated device's are made and freed with each call (its
// streams are threads, and the device may be a test's, gone before the next call). Nothing
// kept is ever freed: CUDA devices live as long as the process.
#pragma once

#include "device.hpp"

#include <cstddef>
#include <memory>

namespace prism::detail::gpu {

/// Pinned bytes a real device keeps for later calls at most (beyond, a buffer given back is freed).
inline constexpr std::size_t pinned_kept_bytes = std::size_t(1) << 30;

/// Deleter of a borrowed stream: drains it, then gives it back (a real device's, when it
/// drained without error) or frees it.
struct stream_return {
  /// Drains and gives back, or frees.
  void operator()(stream* s) const noexcept;
};

/// A stream borrowed for one call; gone (given back) with the object.
using borrowed_stream = std::unique_ptr<stream, stream_return>;

/// A stream of dev for one call: a kept one (real devices) or a new one.
borrowed_stream borrow_stream(device& dev);

/// Pinned host memory of at least `bytes` (> 0) for one call: a kept buffer of dev's large
/// enough, or a new one of exactly `bytes`. Throws device_error as allocate_pinned.
void* borrow_pinned(device& dev, std::size_t bytes);

/// Gives back what borrow_pinned gave (nullptr: nothing); its work on the device must be done.
void give_back_pinned(device& dev, void* p) noexcept;

}  // namespace prism::detail::gpu
