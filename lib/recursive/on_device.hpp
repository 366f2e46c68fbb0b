// lib/recursive/on_device.hpp — products whose operands are already in one device's
// memory (prism::gemm / syrk / herk given device pointers): which device a call's pointers
// are on, the plan over that device's streams (prism::make_device_plan) and its run there.
//
// cuBLAS is weak exactly where prism's recursion is strong: one cuBLAS syrk over a long k
// (AᵀA with A 2^22 x 32 ran at 40 GB/s on an H200, its gemm of the same shape at 3.9 TB/s)
// and a thin gemm's long k on one stream. So a plan on device operands cuts k over the
// device's streams (gpu bfs steps with "@1s" shares), computes a triangle's block with one
// gemm into device scratch and adds only its triangle into C (device::add_triangle), and
// reduces the k parts' temporaries on the device (geam). Nothing crosses the link.
#pragma once

#include <prism/context.hpp>
#include <prism/plan.hpp>

#include "../gpu/device.hpp"

#include <cstddef>
#include <cstdint>

namespace prism::detail {

/// Streams a plan on device operands spreads over at most (its gpu bfs steps' k parts).
inline constexpr int device_streams = 4;

/// The device that holds every operand of a call that is not nullptr (pass nullptr for an
/// operand the call does not read, e.g. A and B when alpha = 0), or nullptr when none of
/// them is device memory of ctx's devices. Throws prism::error, naming `routine` and where
/// each operand is, when some are on a device and others in host memory, or on two devices.
gpu::device* operand_device(const context& ctx, const char* routine, const void* A, const void* B,
                            const void* C);

/// The plan of problem p on device operands with `memory` bytes of device memory for its
/// temporaries (make_device_plan's rules; p non-empty, trans letters normalised).
plan plan_on_device(const problem& p, std::size_t memory);

/// The device memory a plan on device operands may use under ctx: ctx.gpu_memory() when
/// set, else 1/16 of `dev`'s memory (the operands fill the rest), else of the smallest of
/// ctx's devices, else of the machine description's gpu_memory.
std::size_t on_device_memory(const context& ctx, const gpu::device* dev);

/// The longest edge one device call takes: cuBLAS's sizes are ints, so longer edges are cut.
inline constexpr std::int64_t leaf_edge_max = std::int64_t(1) << 30;

/// Runs plan p (on_device(), validated) on dev: C = alpha op(A) op(B) + beta C with every
/// pointer in dev's memory; for a syrk / herk plan B = A, and only C's uplo triangle is
/// written (herk: its diagonal real). Returns when C is written; throws
/// gpu::device_error when the device fails, its message ending "; C untouched" (the call's
/// streams or workspace could not be had) or "; C may be partly written".
template <scalar T>
void run_on_device(const plan& p, gpu::device& dev, T alpha, const T* A, std::int64_t lda, const T* B,
                   std::int64_t ldb, T beta, T* C, std::int64_t ldc);

/// prism::gemm's body for operands on dev (arguments checked, m, n > 0): alpha = 0 or
/// k = 0 scales C on the device (beta = 0 writes zeros), else plans and runs.
template <scalar T>
void gemm_on_device(gpu::device& dev, char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k,
                    T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
                    std::int64_t ldc, const context& ctx);

/// prism::syrk / herk's body for operands on dev (arguments checked, n > 0, letters upper
/// case, a real syrk's 'C' already 'T'); herm: alpha and beta real, passed as T.
template <scalar T>
void rank_k_on_device(gpu::device& dev, bool herm, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha,
                      const T* A, std::int64_t lda, T beta, T* C, std::int64_t ldc, const context& ctx);

}  // namespace prism::detail
