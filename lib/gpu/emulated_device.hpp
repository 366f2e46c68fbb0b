// lib/gpu/emulated_device.hpp — a device on host memory, for every test of the GPU level
// and for runs on hosts without a GPU (PRISM_GPU=emulate:N:SIZE).
//
// What it emulates (device.hpp gives the contract):
//   - memory: 64-byte aligned host allocations counted against a capacity (an allocation
//     that does not fit throws device_error with out_of_memory() set); new memory is filled
//     with 0xFF bytes (NaN in every scalar type), so a product that reads C before anything
//     wrote it shows. release() and release_pinned() first drain every stream of the
//     device, as cudaFree and cudaFreeHost synchronise the device.
//   - streams: one worker thread each, running its tasks in FIFO order; destroying a stream
//     drains it. A task that fails makes the stream's error sticky: later work on it is
//     skipped, markers (record, synchronize) still complete, and synchronize of the stream,
//     or of an event recorded on it after the failure, throws device_error naming the
//     device and the failed call. Nothing waits forever.
//   - events: record(e, s) queues a marker on s and makes it e's latest point; wait(s, e)
//     takes e's latest point when called (later records do not move it), as CUDA does.
//   - checks at the call, as CUDA's would fail it, so a scheduler bug throws in a test:
//     width above a pitch, a device-side range not inside one live allocation of this
//     device, a host-side pointer into device memory, bad BLAS arguments.
//   - gemm and rank_k run prism's host leaf BLAS on the stream's worker; geam,
//     add_triangle and fill_zero plain loops and memset. Scalars are copied when the call is made.
//   - counters: every accepted copy (bytes = width * rows, by direction) and kernel.
#pragma once

#include "devices.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace prism::detail::gpu {

/// One emulated device (lib/gpu/emulated_device.cpp).
class emulated_device final : public device {
 public:
  /// Device `index` with `bytes` of memory, nearest host NUMA domain `numa`, behaving as
  /// `opts` says (delays seeded with opts.delay_seed + index, so devices differ).
  emulated_device(int index, std::size_t bytes, int numa, const emulation_options& opts);
  /// Frees the streams and pinned buffers kept for its calls (reuse.hpp), then the device
  /// memory still allocated (its other streams must be gone by then).
  ~emulated_device() override;
  emulated_device(const emulated_device&) = delete;
  emulated_device& operator=(const emulated_device&) = delete;

  /// Position among its set.
  int index() const noexcept override;
  /// "emulated device I (SIZE)", e.g. "emulated device 1 (1.00 GiB)".
  std::string name() const override;
  /// True.
  bool emulated() const noexcept override { return true; }
  /// The capacity it was made with.
  std::size_t memory() const noexcept override;
  std::size_t max_pitch() const noexcept override;
  /// The NUMA domain it was given (devices spread evenly over the host's domains).
  int numa_domain() const noexcept override;

  /// Host memory counted against the capacity; nullptr for 0 bytes.
  void* allocate(std::size_t bytes) override;
  /// Drains every stream of the device, then frees p (unknown pointers are ignored).
  void release(void* p) noexcept override;
  /// Aligned host memory, not counted against the capacity; nullptr for 0 bytes.
  void* allocate_pinned(std::size_t bytes) override;
  /// Drains every stream of the device, then frees p.
  void release_pinned(void* p) noexcept override;
  /// Records p and bytes (nothing is pinned); throws for nullptr, 0 bytes or p registered twice.
  void register_host(void* p, std::size_t bytes) override;
  /// Forgets p's registration (unknown pointers are ignored).
  void unregister_host(void* p) noexcept override;
  /// True when p lies inside a live allocation of this device.
  bool holds(const void* p) const override;

  /// A new stream with its worker thread.
  std::unique_ptr<stream> make_stream() override;
  /// A new event, never recorded.
  std::unique_ptr<event> make_event() override;
  /// Queues a marker on s and makes it e's latest point.
  void record(event& e, stream& s) override;
  /// Later work on s waits for e's latest point (none: nothing to wait for).
  void wait(stream& s, event& e) override;
  /// Blocks until e's latest point has run; throws when its stream had failed by then.
  void synchronize(event& e) override;
  /// Blocks until s has run everything queued; throws when s has failed.
  void synchronize(stream& s) override;

  /// Queues a copy of `rows` rows of `width` bytes (checked now, run by s's worker).
  void copy_2d(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
               std::size_t rows, copy_kind kind, stream& s) override;
  /// Queues a memset to zero.
  void fill_zero(void* p, std::size_t bytes, stream& s) override;
  /// Queues a gemm on the host leaf BLAS (OpenBLAS).
  void gemm(scalar_type t, stream& s, char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k,
            const void* alpha, const void* A, std::int64_t lda, const void* B, std::int64_t ldb, const void* beta,
            void* C, std::int64_t ldc) override;
  /// Queues a syrk / herk on the host leaf BLAS (herm on a real type is syrk).
  void rank_k(scalar_type t, bool herm, stream& s, char uplo, char trans, std::int64_t n, std::int64_t k,
              const void* alpha, const void* A, std::int64_t lda, const void* beta, void* C,
              std::int64_t ldc) override;
  /// Queues C = alpha A + beta B (alpha == 0 reads no A, beta == 0 no B).
  void geam(scalar_type t, stream& s, std::int64_t m, std::int64_t n, const void* alpha, const void* A,
            std::int64_t lda, const void* beta, const void* B, std::int64_t ldb, void* C, std::int64_t ldc) override;
  /// Queues C's triangle = A's + beta C's (loops; herm zeroes the diagonal's imaginary parts);
  /// writes n(n+1)/2 elements of `work` too, as CUDA's packed copy does.
  void add_triangle(scalar_type t, stream& s, char uplo, bool herm, std::int64_t n, void* A, std::int64_t lda,
                    const void* beta, void* C, std::int64_t ldc, void* work) override;

  /// Bytes moved and calls made so far.
  link_counters counters() const override;

  /// Bytes of host memory registered now (register_host minus unregister_host).
  std::size_t registered_bytes() const;
  /// Calls of register_host so far.
  std::size_t registrations() const;
  /// Bytes of device memory allocated now.
  std::size_t allocated_bytes() const;
  /// Streams made so far (make_stream).
  std::size_t streams_made() const;
  /// Streams alive now (made, not yet destroyed: lent or kept ones included).
  std::size_t live_streams() const;
  /// Pinned buffers allocated so far (allocate_pinned).
  std::size_t pinned_made() const;

  /// Its state: memory map, counters, live streams (emulated_device.cpp).
  struct state;

 private:
  std::unique_ptr<state> st_;
};

}  // namespace prism::detail::gpu
