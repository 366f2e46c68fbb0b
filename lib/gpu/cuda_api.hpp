// lib/gpu/cuda_api.hpp — prism's own declarations of exactly the CUDA runtime and cuBLAS
// calls, types and constants cuda_device.cpp uses. No CUDA header is included anywhere in
// lib/: a build needs no toolkit, and libcudart / libcublas are loaded at run time with
// dlopen (cuda_device.cpp). Each declaration is written from CUDA 13.0's headers
// (cuda_runtime_api.h, driver_types.h, cublas_api.h, cublas_v2.h); where those headers are
// installed, tests/test_gpu_cuda_declarations.cpp checks every one against them: each
// function's return and parameters (count, and each one's size and kind), every constant's
// value, every struct's size, alignment and member offsets, and that each symbol prism looks
// up is the one the headers' macros map the documented name to (cublasDgemm -> cublasDgemm_v2).
//
// Everything lives in prism::detail::gpu::cuda, so the check can include CUDA's headers
// beside it; names are prism's (dgemm, not cublasDgemm: cublas_v2.h defines cublasDgemm as
// a macro, which would rename a member of that name in the check's translation unit).
#pragma once

#include <cstddef>
#include <string>

namespace prism::detail::gpu::cuda {

// ---- CUDA runtime types and constants ----

/// cudaError_t: only the values prism tests for are named.
enum class error_t : int { success = 0, memory_allocation = 2 };

/// cudaMemcpyKind.
enum class memcpy_kind : int { host_to_host = 0, host_to_device = 1, device_to_host = 2, device_to_device = 3 };

/// cudaDeviceAttr: only the one prism reads is named.
enum class device_attribute : int { max_pitch = 11 };

/// cudaMemoryType.
enum class memory_type : int { unregistered = 0, host = 1, device = 2, managed = 3 };

struct stream_st;                  // CUDA's struct CUstream_st, never defined
struct event_st;                   // CUDA's struct CUevent_st, never defined
using stream_t = stream_st*;       ///< cudaStream_t
using event_t = event_st*;         ///< cudaEvent_t

/// cudaPointerAttributes as CUDA 13 declares it (CUDA 11 and 12 write only the first four
/// members, 24 bytes, so the larger struct is safe with them too).
struct pointer_attributes {
  memory_type type;      ///< cudaMemoryType of the memory
  int device;            ///< the device it belongs to (device memory) or was current (host)
  void* device_pointer;  ///< its address on the device, or nullptr
  void* host_pointer;    ///< its address on the host, or nullptr
  long reserved[8];      ///< CUDA 13: must be zero
};

/// Room for cudaDeviceProp, of which prism reads only `name`: CUDA's struct begins with
/// char name[256] in every version, and its size (1008 bytes in CUDA 13) stays below 4 KiB.
struct alignas(8) device_properties {
  char name[256];               ///< the device's name, NUL-terminated
  unsigned char rest[4096 - 256];  ///< the rest of cudaDeviceProp, unread
};

inline constexpr unsigned stream_non_blocking = 0x01;     ///< cudaStreamNonBlocking
inline constexpr unsigned event_disable_timing = 0x02;    ///< cudaEventDisableTiming
inline constexpr unsigned host_register_default = 0x00;   ///< cudaHostRegisterDefault
inline constexpr unsigned event_wait_default = 0x00;      ///< cudaEventWaitDefault

// ---- cuBLAS types and constants ----

/// cublasStatus_t: only success is named.
enum class cublas_status : int { success = 0 };

/// cublasOperation_t.
enum class cublas_operation : int { n = 0, t = 1, c = 2 };

/// cublasFillMode_t.
enum class cublas_fill_mode : int { lower = 0, upper = 1 };

struct cublas_context;                    // cuBLAS's struct cublasContext, never defined
using cublas_handle = cublas_context*;    ///< cublasHandle_t

/// cuComplex (CUDA's float2: 8-byte aligned).
struct alignas(8) complex_float {
  float x;  ///< real part
  float y;  ///< imaginary part
};

/// cuDoubleComplex (CUDA's double2: 16-byte aligned).
struct alignas(16) complex_double {
  double x;  ///< real part
  double y;  ///< imaginary part
};

// ---- the calls: one function pointer type each (CUDA's parameter names) ----

using get_error_string_fn = const char* (*)(error_t error);
using get_last_error_fn = error_t (*)();
using get_device_count_fn = error_t (*)(int* count);
using get_device_fn = error_t (*)(int* device);
using set_device_fn = error_t (*)(int device);
using get_device_properties_fn = error_t (*)(device_properties* prop, int device);
using device_get_pci_bus_id_fn = error_t (*)(char* pciBusId, int len, int device);
using mem_get_info_fn = error_t (*)(std::size_t* free, std::size_t* total);
using device_get_attribute_fn = error_t (*)(int* value, device_attribute attribute, int device);
using malloc_device_fn = error_t (*)(void** devPtr, std::size_t size);
using free_device_fn = error_t (*)(void* devPtr);
using malloc_host_fn = error_t (*)(void** ptr, std::size_t size);
using free_host_fn = error_t (*)(void* ptr);
using host_register_fn = error_t (*)(void* ptr, std::size_t size, unsigned flags);
using host_unregister_fn = error_t (*)(void* ptr);
using pointer_get_attributes_fn = error_t (*)(pointer_attributes* attributes, const void* ptr);
using stream_create_with_flags_fn = error_t (*)(stream_t* pStream, unsigned flags);
using stream_destroy_fn = error_t (*)(stream_t stream);
using stream_synchronize_fn = error_t (*)(stream_t stream);
using stream_wait_event_fn = error_t (*)(stream_t stream, event_t event, unsigned flags);
using event_create_with_flags_fn = error_t (*)(event_t* event, unsigned flags);
using event_destroy_fn = error_t (*)(event_t event);
using event_record_fn = error_t (*)(event_t event, stream_t stream);
using event_synchronize_fn = error_t (*)(event_t event);
using memcpy_2d_async_fn = error_t (*)(void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                                       std::size_t width, std::size_t height, memcpy_kind kind, stream_t stream);
using memset_async_fn = error_t (*)(void* devPtr, int value, std::size_t count, stream_t stream);
using memset_2d_async_fn = error_t (*)(void* devPtr, std::size_t pitch, int value, std::size_t width,
                                       std::size_t height, stream_t stream);

using cublas_create_fn = cublas_status (*)(cublas_handle* handle);
using cublas_destroy_fn = cublas_status (*)(cublas_handle handle);
using cublas_set_stream_fn = cublas_status (*)(cublas_handle handle, stream_t streamId);
using cublas_get_status_string_fn = const char* (*)(cublas_status status);
/// cublas?gemm_v2 for element type T.
template <class T>
using gemm_fn = cublas_status (*)(cublas_handle handle, cublas_operation transa, cublas_operation transb, int m, int n,
                                  int k, const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta, T* C,
                                  int ldc);
/// cublas?syrk_v2 (T the element type) and cublas?herk_v2 (R = T's real type).
template <class T, class R = T>
using rank_k_fn = cublas_status (*)(cublas_handle handle, cublas_fill_mode uplo, cublas_operation trans, int n, int k,
                                    const R* alpha, const T* A, int lda, const R* beta, T* C, int ldc);
/// cublas?geam for element type T.
template <class T>
using geam_fn = cublas_status (*)(cublas_handle handle, cublas_operation transa, cublas_operation transb, int m, int n,
                                  const T* alpha, const T* A, int lda, const T* beta, const T* B, int ldb, T* C,
                                  int ldc);
/// cublas?trttp for element type T: a full matrix's uplo triangle into packed storage.
template <class T>
using trttp_fn = cublas_status (*)(cublas_handle handle, cublas_fill_mode uplo, int n, const T* A, int lda, T* AP);
/// cublas?tpttr for element type T: packed storage into a full matrix's uplo triangle (the other untouched).
template <class T>
using tpttr_fn = cublas_status (*)(cublas_handle handle, cublas_fill_mode uplo, int n, const T* AP, T* A, int lda);
using sgemm_fn = gemm_fn<float>;
using dgemm_fn = gemm_fn<double>;
using cgemm_fn = gemm_fn<complex_float>;
using zgemm_fn = gemm_fn<complex_double>;
using ssyrk_fn = rank_k_fn<float>;
using dsyrk_fn = rank_k_fn<double>;
using csyrk_fn = rank_k_fn<complex_float>;
using zsyrk_fn = rank_k_fn<complex_double>;
using cherk_fn = rank_k_fn<complex_float, float>;
using zherk_fn = rank_k_fn<complex_double, double>;
using sgeam_fn = geam_fn<float>;
using dgeam_fn = geam_fn<double>;
using cgeam_fn = geam_fn<complex_float>;
using zgeam_fn = geam_fn<complex_double>;
using strttp_fn = trttp_fn<float>;
using dtrttp_fn = trttp_fn<double>;
using ctrttp_fn = trttp_fn<complex_float>;
using ztrttp_fn = trttp_fn<complex_double>;
using stpttr_fn = tpttr_fn<float>;
using dtpttr_fn = tpttr_fn<double>;
using ctpttr_fn = tpttr_fn<complex_float>;
using ztpttr_fn = tpttr_fn<complex_double>;

// cuBLASXt (host-resident operands, tiled by cuBLAS itself): the GPU benchmark's baseline.
struct cublasxt_context;                      // cuBLAS's struct cublasXtContext, never defined
using cublasxt_handle = cublasxt_context*;    ///< cublasXtHandle_t
using xt_create_fn = cublas_status (*)(cublasxt_handle* handle);
using xt_destroy_fn = cublas_status (*)(cublasxt_handle handle);
using xt_device_select_fn = cublas_status (*)(cublasxt_handle handle, int nbDevices, int deviceId[]);
using xt_set_block_dim_fn = cublas_status (*)(cublasxt_handle handle, int blockDim);
/// cublasXt?gemm for element type T (64-bit sizes).
template <class T>
using xt_gemm_fn = cublas_status (*)(cublasxt_handle handle, cublas_operation transa, cublas_operation transb,
                                     std::size_t m, std::size_t n, std::size_t k, const T* alpha, const T* A,
                                     std::size_t lda, const T* B, std::size_t ldb, const T* beta, T* C, std::size_t ldc);
using xt_dgemm_fn = xt_gemm_fn<double>;
using xt_zgemm_fn = xt_gemm_fn<complex_double>;

// ---- what is looked up: X(member, symbol), member's type member_fn ----

/// libcudart's calls.
#define PRISM_CUDART_CALLS(X)                               \
  X(get_error_string, cudaGetErrorString)                   \
  X(get_last_error, cudaGetLastError)                       \
  X(get_device_count, cudaGetDeviceCount)                   \
  X(get_device, cudaGetDevice)                              \
  X(set_device, cudaSetDevice)                              \
  X(get_device_properties, cudaGetDeviceProperties)         \
  X(device_get_pci_bus_id, cudaDeviceGetPCIBusId)           \
  X(mem_get_info, cudaMemGetInfo)                           \
  X(device_get_attribute, cudaDeviceGetAttribute)           \
  X(malloc_device, cudaMalloc)                              \
  X(free_device, cudaFree)                                  \
  X(malloc_host, cudaMallocHost)                            \
  X(free_host, cudaFreeHost)                                \
  X(host_register, cudaHostRegister)                        \
  X(host_unregister, cudaHostUnregister)                    \
  X(pointer_get_attributes, cudaPointerGetAttributes)       \
  X(stream_create_with_flags, cudaStreamCreateWithFlags)    \
  X(stream_destroy, cudaStreamDestroy)                      \
  X(stream_synchronize, cudaStreamSynchronize)              \
  X(stream_wait_event, cudaStreamWaitEvent)                 \
  X(event_create_with_flags, cudaEventCreateWithFlags)      \
  X(event_destroy, cudaEventDestroy)                        \
  X(event_record, cudaEventRecord)                          \
  X(event_synchronize, cudaEventSynchronize)                \
  X(memcpy_2d_async, cudaMemcpy2DAsync)                     \
  X(memset_async, cudaMemsetAsync)                          \
  X(memset_2d_async, cudaMemset2DAsync)

/// libcublas's calls (the v2 API's symbols).
#define PRISM_CUBLAS_CALLS(X)                  \
  X(cublas_create, cublasCreate_v2)            \
  X(cublas_destroy, cublasDestroy_v2)          \
  X(cublas_set_stream, cublasSetStream_v2)     \
  X(sgemm, cublasSgemm_v2)                     \
  X(dgemm, cublasDgemm_v2)                     \
  X(cgemm, cublasCgemm_v2)                     \
  X(zgemm, cublasZgemm_v2)                     \
  X(ssyrk, cublasSsyrk_v2)                     \
  X(dsyrk, cublasDsyrk_v2)                     \
  X(csyrk, cublasCsyrk_v2)                     \
  X(zsyrk, cublasZsyrk_v2)                     \
  X(cherk, cublasCherk_v2)                     \
  X(zherk, cublasZherk_v2)                     \
  X(sgeam, cublasSgeam)                        \
  X(dgeam, cublasDgeam)                        \
  X(cgeam, cublasCgeam)                        \
  X(zgeam, cublasZgeam)                        \
  X(strttp, cublasStrttp)                      \
  X(dtrttp, cublasDtrttp)                      \
  X(ctrttp, cublasCtrttp)                      \
  X(ztrttp, cublasZtrttp)                      \
  X(stpttr, cublasStpttr)                      \
  X(dtpttr, cublasDtpttr)                      \
  X(ctpttr, cublasCtpttr)                      \
  X(ztpttr, cublasZtpttr)

/// libcublas's calls prism does without where absent (cuBLAS before 11.4.2 has no
/// cublasGetStatusString: errors then show the status number).
#define PRISM_CUBLAS_OPTIONAL_CALLS(X) X(cublas_get_status_string, cublasGetStatusString)

/// libcublas's cuBLASXt calls (the GPU benchmark's host-resident baseline; prism itself uses none).
#define PRISM_CUBLASXT_CALLS(X)                    \
  X(xt_create, cublasXtCreate)                     \
  X(xt_destroy, cublasXtDestroy)                   \
  X(xt_device_select, cublasXtDeviceSelect)        \
  X(xt_set_block_dim, cublasXtSetBlockDim)         \
  X(xt_dgemm, cublasXtDgemm)                       \
  X(xt_zgemm, cublasXtZgemm)

#define PRISM_CUDA_SYMBOL_NAME(member, symbol) inline constexpr char member##_symbol[] = #symbol;
PRISM_CUDART_CALLS(PRISM_CUDA_SYMBOL_NAME)
PRISM_CUBLAS_CALLS(PRISM_CUDA_SYMBOL_NAME)
PRISM_CUBLAS_OPTIONAL_CALLS(PRISM_CUDA_SYMBOL_NAME)
PRISM_CUBLASXT_CALLS(PRISM_CUDA_SYMBOL_NAME)
#undef PRISM_CUDA_SYMBOL_NAME

#define PRISM_CUDA_MEMBER(member, symbol) member##_fn member = nullptr;
/// libcudart, loaded: every call resolved.
struct runtime_api {
  PRISM_CUDART_CALLS(PRISM_CUDA_MEMBER)
  std::string library;  ///< the name it was loaded by, e.g. "libcudart.so.13"
};

/// libcublas, loaded: every call resolved (the optional one may be nullptr).
struct cublas_api {
  PRISM_CUBLAS_CALLS(PRISM_CUDA_MEMBER)
  PRISM_CUBLAS_OPTIONAL_CALLS(PRISM_CUDA_MEMBER)
  std::string library;  ///< e.g. "libcublas.so.13"
};
/// libcublas's cuBLASXt, loaded: every call resolved.
struct cublasxt_api {
  PRISM_CUBLASXT_CALLS(PRISM_CUDA_MEMBER)
  std::string library;  ///< e.g. "libcublas.so.13"
};
#undef PRISM_CUDA_MEMBER

/// libcudart, loaded once per process (libcudart.so.13, else .12, .11.0, then libcudart.so)
/// with every call resolved; nullptr, with `why` set ("libcudart.so.13 not found (nor ...)",
/// "cudaMemcpy2DAsync not found in libcudart.so.13"), when it cannot be. Thread-safe.
const runtime_api* load_runtime(std::string& why);

/// cuBLASXt from the libcublas matching the runtime loaded, once per process; nullptr with
/// `why` set, as load_runtime. Thread-safe.
const cublasxt_api* load_cublasxt(std::string& why);

/// The libcublas matching the runtime loaded (libcublas.so.13 beside libcudart.so.13 ...),
/// loaded once per process; nullptr with `why` set, as load_runtime. Thread-safe.
const cublas_api* load_cublas(std::string& why);

}  // namespace prism::detail::gpu::cuda
