// lib/gpu/reuse.hpp — streams and pinned host buffers a device's calls borrow and give back.
//
// A CUDA stream carries its own cuBLAS handle, which takes milliseconds to make, and
// cudaMallocHost pins memory page by page (pinning 4.3 GB took 0.53 s on an H200's host), so
// a device's streams and pinned buffers are kept for the next call of the process: a stream
// given back drained and error-free, a pinned buffer by its size, up to `pinned_kept_bytes` a
// device. Emulated devices keep theirs the same way (a stream there is a worker thread), so
// the tests run this reuse as a GPU does; an emulated device, which may be a test's and go
// before the process, frees what it kept when it goes (forget_kept). CUDA devices live as
// long as the process, and what they keep with them.
#pragma once

#include "device.hpp"

#include <cstddef>
#include <memory>

namespace prism::detail::gpu {

/// Pinned bytes a device keeps for later calls at most (beyond, a buffer given back is freed).
inline constexpr std::size_t pinned_kept_bytes = std::size_t(1) << 30;

/// Deleter of a borrowed stream: drains it, then gives it back (when it drained without
/// error) or frees it.
struct stream_return {
  /// Drains and gives back (when it drained without error), or frees.
  void operator()(stream* s) const noexcept;
};

/// A stream borrowed for one call; gone (given back) with the object.
using borrowed_stream = std::unique_ptr<stream, stream_return>;

/// A stream of dev for one call: a kept one, or a new one.
borrowed_stream borrow_stream(device& dev);

/// Pinned host memory of at least `bytes` (> 0) for one call: a kept buffer of dev's large
/// enough, or a new one of exactly `bytes`. Throws device_error as allocate_pinned.
void* borrow_pinned(device& dev, std::size_t bytes);

/// Gives back what borrow_pinned gave (nullptr: nothing); its work on the device must be done.
void give_back_pinned(device& dev, void* p) noexcept;

/// Frees what dev keeps (its idle streams, then its idle pinned buffers); a device calls it
/// as it goes, before its own state does (nothing of dev's may be lent out then).
void forget_kept(device& dev) noexcept;

}  // namespace prism::detail::gpu
