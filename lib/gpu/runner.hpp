// lib/gpu/runner.hpp — runs one device's schedule over the caller's host matrices: chunks
// of A and B and blocks of C cross the link through rings of pinned staging buffers that
// host threads fill and empty, copies in, products and write-backs overlapping on three
// streams.
//
// Two host threads drive a device. The caller's thread issues, in schedule order, each
// product's chunk copies (in stream: pack a piece into a free staging buffer, copy it to
// its slot; a slot is overwritten only after the products that read it have run) and its
// gemm (compute stream, after its chunks and, for a visit's first product, its C buffer).
// A second thread writes each finished visit back (write-back stream: a piece of the C
// buffer into a staging buffer, then unpacked into C on the host, only the triangle for a
// diagonal block of syrk / herk), so a visit's write-back overlaps the next visit's copies
// and, with two C buffers, its products. Pageable host memory is never handed to the link
// directly (5.6 GB/s there, against the pinned rate through the ring).
//
// C is written only by the write-back thread, a visit's block at a time, so a failure
// leaves every block either written whole (final), untouched, or, when it strikes during a
// write-back, torn; run_outcome says which.
#pragma once

#include "device.hpp"
#include "schedule.hpp"

#include <prism/types.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace prism::detail::gpu {

/// A host matrix as a device's schedule addresses it: `data` holds the stored matrix's
/// element (row0, col0), so (r, c) is at data + (r - row0) + (c - col0) * ld. E.g. a
/// caller's C block starting at product row 64, column 32 has row0 = 64, col0 = 32.
template <class T>
struct host_matrix {
  T* data = nullptr;               ///< element (row0, col0)
  std::int64_t ld = 1;             ///< leading dimension
  std::int64_t row0 = 0, col0 = 0; ///< the stored matrix's coordinates of data[0]
  /// Address of element (r, c).
  T* at(std::int64_t r, std::int64_t c) const { return data + (r - row0) + (c - col0) * ld; }
};

/// The pinned staging rings and the host threads that fill and empty them.
struct staging {
  std::size_t bytes = std::size_t(32) << 20;   ///< one staging buffer
  int buffers = 2;                              ///< buffers per direction
  int threads = 1;                              ///< host threads packing each direction's pieces (the driving one included)
  double host_copy = 8e9;                       ///< bytes/s one host thread copies (the model's host_copy_bandwidth)
  double link_in = 50e9;                        ///< host -> device bytes/s from pinned memory (gpu_link_in)
  double register_rate = 8e9;                   ///< bytes/s the device pins caller memory at (gpu_register_bandwidth)
};

/// The model's answer to "does pinning the caller's matrix pay?": `sent` bytes of it cross
/// the link out of `held` bytes it spans; through the ring each byte costs the slower of the
/// link and `threads` host threads copying at `host_copy` bytes/s each, direct from pinned
/// memory the link alone, after pinning all `held` bytes at `register_rate`. E.g. 1 thread at
/// 8 GB/s against a 50 GB/s link: the ring costs 0.105 s a GB more, pinning 0.125 s a GB,
/// so a matrix sent twice or more is pinned; with 8 threads (64 GB/s) never.
bool should_register(double sent, double held, int threads, double host_copy, double link, double register_rate);

/// How a device's run ended.
struct run_outcome {
  bool ok = true;             ///< every visit written back
  std::vector<char> written;  ///< per visit: its block of C was written back whole
  int torn = -1;              ///< a visit whose write-back stopped partway (that block of C is undefined), or -1
  std::string error;          ///< what failed (the device's words), when !ok
};

/// Runs schedule s on device dev: C = alpha op(A) op(B) + beta C over the schedule's
/// blocks (herm: a herk, the diagonal of its triangle blocks real). A and B go through the
/// staging ring, or, where should_register says pinning the part of the caller's matrix the
/// schedule reads pays, straight from it, pinned (register_host) for the run's length. Device
/// memory and staging buffers are allocated first; a failure there throws device_error with C
/// untouched. A failure later is caught and reported in the outcome (never thrown), after
/// both threads have stopped and the device's work has drained.
template <scalar T>
run_outcome run_schedule(device& dev, const device_schedule& s, host_matrix<const T> A, host_matrix<const T> B,
                         host_matrix<T> C, T alpha, T beta, bool herm, const staging& st);

}  // namespace prism::detail::gpu
