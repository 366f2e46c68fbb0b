// lib/gpu/device.hpp — one accelerator as prism's GPU level sees it: memory on the device
// and pinned host buffers, streams and events, asynchronous 2-D copies, and gemm / syrk /
// herk / geam / add_triangle on a stream. Nothing else of CUDA reaches the scheduler.
//
// Two implementations: cuda_device (lib/gpu/cuda_device.cpp: CUDA's runtime and cuBLAS
// loaded at run time with dlopen, so no toolkit is needed to build) and emulated_device
// (lib/gpu/emulated_device.cpp: host memory with a capacity, one worker thread per stream,
// every byte across the "link" counted, copies optionally delayed at random). Every test
// of the GPU level runs on the emulated one.
//
// Semantics follow CUDA's: work on one stream runs in order; record(e, s) marks the point
// in s reached so far, wait(s, e) makes later work on s wait for that point, synchronize(e)
// blocks the host until it. A stream, event or pointer belongs to the device that made it.
// Every failure throws device_error (a prism::error) naming the device and the call; an
// asynchronous failure surfaces at the next synchronize of the stream or event, as CUDA's
// do. Scalars (alpha, beta) are read from host memory when the call is made.
#pragma once

#include <prism/error.hpp>
#include <prism/types.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace prism::detail::gpu {

/// A failed device call: out of memory, a failed copy or kernel, a lost device.
class device_error : public prism::error {
 public:
  /// `out_of_memory`: an allocation the device could not satisfy (the caller may retry smaller).
  device_error(const std::string& what, bool out_of_memory = false) : prism::error(what), oom_(out_of_memory) {}
  /// True for an allocation that found too little free memory.
  bool out_of_memory() const noexcept { return oom_; }

 private:
  bool oom_;
};

/// Direction of a copy across the link (or within the device).
enum class copy_kind : std::uint8_t { host_to_device, device_to_host, device_to_device };

/// Bytes a device has moved, by direction, and the calls behind them (emulated devices
/// count every copy; a CUDA device counts what prism asked of it).
struct link_counters {
  std::uint64_t host_to_device = 0;    ///< bytes copied host -> device
  std::uint64_t device_to_host = 0;    ///< bytes copied device -> host
  std::uint64_t device_to_device = 0;  ///< bytes copied within the device
  std::uint64_t copies = 0;            ///< copy calls
  std::uint64_t kernels = 0;           ///< gemm / syrk / herk / geam / fill calls
};

class device;

/// An ordered queue of work on one device (a CUDA stream; a worker thread when emulated).
class stream {
 public:
  virtual ~stream() = default;
  /// The device it belongs to.
  virtual device& owner() const noexcept = 0;
};

/// A point in a stream's work, to wait for (a CUDA event).
class event {
 public:
  virtual ~event() = default;
};

/// One accelerator. Thread-safe: several host threads may use one device (each call names
/// its stream); a stream is fed by one host thread at a time.
class device {
 public:
  virtual ~device() = default;

  /// Position among the process's devices (0, 1, ...).
  virtual int index() const noexcept = 0;
  /// One line: what it is, e.g. "NVIDIA H200 (CUDA device 0, 139.8 GiB)" or "emulated device 1 (1.00 GiB)".
  virtual std::string name() const = 0;
  /// True for an emulated device.
  virtual bool emulated() const noexcept = 0;
  /// Bytes of device memory prism may allocate in all (total memory; a cap for emulation).
  virtual std::size_t memory() const noexcept = 0;
  /// The largest pitch, in bytes, copy_2d takes (CUDA's memPitch, 2^31 - 1 on the devices
  /// prism knows): a caller's matrix with a longer leading dimension goes through staging.
  virtual std::size_t max_pitch() const noexcept = 0;
  /// The host NUMA domain nearest the device (hwloc, by its PCI bus id), -1 when unknown.
  virtual int numa_domain() const noexcept = 0;

  // ---- memory ----
  /// `bytes` of device memory; throws device_error (out_of_memory() set) when it does not fit.
  virtual void* allocate(std::size_t bytes) = 0;
  /// Frees what allocate gave (nullptr: nothing). Never throws.
  virtual void release(void* p) noexcept = 0;
  /// `bytes` of pinned (page-locked) host memory, which the link reads and writes at its full rate.
  virtual void* allocate_pinned(std::size_t bytes) = 0;
  /// Frees what allocate_pinned gave (nullptr: nothing). Never throws.
  virtual void release_pinned(void* p) noexcept = 0;
  /// Pins `bytes` of the caller's host memory at p for direct copies (cudaHostRegister).
  virtual void register_host(void* p, std::size_t bytes) = 0;
  /// Undoes register_host. Never throws.
  virtual void unregister_host(void* p) noexcept = 0;
  /// True when p points into memory of this device (allocate, or the runtime's own allocations).
  virtual bool holds(const void* p) const = 0;

  // ---- streams and events ----
  /// A new stream.
  virtual std::unique_ptr<stream> make_stream() = 0;
  /// A new event (timing off).
  virtual std::unique_ptr<event> make_event() = 0;
  /// Marks the point s has reached in e.
  virtual void record(event& e, stream& s) = 0;
  /// Later work on s waits until e's recorded point has run.
  virtual void wait(stream& s, event& e) = 0;
  /// Blocks the host until e's recorded point has run (at once when never recorded).
  virtual void synchronize(event& e) = 0;
  /// Blocks the host until everything queued on s has run.
  virtual void synchronize(stream& s) = 0;

  // ---- work on a stream ----
  /// Copies a `rows` x `width` byte rectangle: row r of dst (dst + r * dpitch) from row r of
  /// src, the direction given by `kind`; the host side must stay valid until it has run.
  /// Column-major matrices copy column by column: width = rows of the block * element size,
  /// rows = its columns, pitches = leading dimension * element size, at most max_pitch().
  virtual void copy_2d(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
                       std::size_t rows, copy_kind kind, stream& s) = 0;
  /// Sets `bytes` of device memory at p to zero.
  virtual void fill_zero(void* p, std::size_t bytes, stream& s) = 0;
  /// C = alpha op(A) op(B) + beta C on device memory, BLAS gemm's arguments (column-major),
  /// type t; alpha and beta point to host scalars of type t.
  virtual void gemm(scalar_type t, stream& s, char transa, char transb, std::int64_t m, std::int64_t n,
                    std::int64_t k, const void* alpha, const void* A, std::int64_t lda, const void* B,
                    std::int64_t ldb, const void* beta, void* C, std::int64_t ldc) = 0;
  /// C's uplo triangle = alpha op(A) op(A)^T + beta C (herm: op(A)^H, complex t, alpha and
  /// beta point to real scalars of t's precision), BLAS syrk / herk's arguments.
  virtual void rank_k(scalar_type t, bool herm, stream& s, char uplo, char trans, std::int64_t n, std::int64_t k,
                      const void* alpha, const void* A, std::int64_t lda, const void* beta, void* C,
                      std::int64_t ldc) = 0;
  /// C = alpha A + beta B on m x n device matrices (no transposes; C may be A or B); a
  /// complex sum (alpha = beta = 1) multiplies no part, as host BLAS's beta = 1 adds C.
  virtual void geam(scalar_type t, stream& s, std::int64_t m, std::int64_t n, const void* alpha, const void* A,
                    std::int64_t lda, const void* beta, const void* B, std::int64_t ldb, void* C,
                    std::int64_t ldc) = 0;
  /// C's uplo triangle (n x n) = A's uplo triangle + beta C's, on device memory, C's other
  /// triangle unwritten: a syrk / herk block computed whole into scratch A, added into C.
  /// herm: C's diagonal is made real (imaginary parts zero, as herk leaves them). A is
  /// overwritten; `work` is device memory of n(n+1)/2 elements (the triangle packed); beta
  /// points to a host scalar of type t, beta = 0 reads nothing of C (NaN there is gone) and
  /// beta = 1 adds C's parts as they are.
  virtual void add_triangle(scalar_type t, stream& s, char uplo, bool herm, std::int64_t n, void* A, std::int64_t lda,
                            const void* beta, void* C, std::int64_t ldc, void* work) = 0;

  /// Bytes moved and calls made so far.
  virtual link_counters counters() const = 0;
};

}  // namespace prism::detail::gpu
