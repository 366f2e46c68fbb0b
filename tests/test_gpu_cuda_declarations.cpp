// tests/test_gpu_cuda_declarations.cpp — prism's own declarations of CUDA's runtime and
// cuBLAS (lib/gpu/cuda_api.hpp, which lets prism build without a toolkit) against CUDA's
// headers, included beside them. Built only where cuda_runtime_api.h and cublas_v2.h are
// installed (tests/CMakeLists.txt; a Skipped entry elsewhere). Checked, at compile time
// (static_assert) and again as test cases that list what they checked:
//   - every call prism looks up: the function CUDA declares under that symbol has the same
//     number of parameters, and the return and each parameter the same size and kind
//     (pointer, integral, enum, floating point, class); for pointers, the pointee too
//     (prism's at least as large: prism's cudaDeviceProp stand-in is a larger buffer);
//   - every constant prism uses has CUDA's value;
//   - every struct prism declares has CUDA's size, alignment and member offsets;
//   - each symbol prism dlopens is what the headers' macros make of the documented name
//     (cublasDgemm -> cublasDgemm_v2; cudaGetDeviceProperties stays itself in CUDA 13).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cublasXt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "gpu/cuda_api.hpp"

#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace cuda = prism::detail::gpu::cuda;

namespace {

enum class kind { none, pointer, integral, enumeration, floating, class_type, incomplete, other };

template <class T>
constexpr bool complete_v = requires { sizeof(T); };

template <class T>
constexpr kind kind_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_void_v<U>) return kind::none;
  else if constexpr (std::is_pointer_v<U>) return kind::pointer;
  else if constexpr (std::is_enum_v<U>) return kind::enumeration;
  else if constexpr (std::is_integral_v<U>) return kind::integral;
  else if constexpr (std::is_floating_point_v<U>) return kind::floating;
  else if constexpr (!complete_v<U>) return kind::incomplete;
  else if constexpr (std::is_class_v<U>) return kind::class_type;
  else return kind::other;
}

template <class T>
constexpr std::size_t size_of() {
  if constexpr (kind_of<T>() == kind::none || kind_of<T>() == kind::incomplete) return 0;
  else return sizeof(T);
}

// A pointer's target: same kind and constness; prism's at least as large (0 for void and
// opaque structs, which must be alike on both sides).
template <class C, class P>
constexpr bool same_pointee() {
  using c = std::remove_pointer_t<C>;
  using p = std::remove_pointer_t<P>;
  return kind_of<c>() == kind_of<p>() && std::is_const_v<c> == std::is_const_v<p> && size_of<p>() >= size_of<c>() &&
         (size_of<c>() == 0) == (size_of<p>() == 0);
}

// One return or parameter: same size and kind (and pointee, for pointers).
template <class C, class P>
constexpr bool same_shape() {
  if constexpr (kind_of<C>() != kind_of<P>() || size_of<C>() != size_of<P>()) return false;
  else if constexpr (kind_of<C>() == kind::pointer) return same_pointee<C, P>();
  else return true;
}

template <class F>
struct signature;
template <class R, class... A>
struct signature<R (*)(A...)> {
  using ret = R;
  using params = std::tuple<A...>;
  static constexpr std::size_t count = sizeof...(A);
};
template <class R, class... A>
struct signature<R (*)(A...) noexcept> : signature<R (*)(A...)> {};

template <class C, class P, std::size_t... I>
constexpr bool same_params(std::index_sequence<I...>) {
  return (same_shape<std::tuple_element_t<I, typename signature<C>::params>,
                     std::tuple_element_t<I, typename signature<P>::params>>() && ...);
}

// CUDA's function pointer type C against prism's P.
template <class C, class P>
constexpr bool same_function() {
  using c = signature<C>;
  using p = signature<P>;
  if constexpr (c::count != p::count) return false;
  else return same_shape<typename c::ret, typename p::ret>() && same_params<C, P>(std::make_index_sequence<c::count>{});
}

#define PRISM_STR2(x) #x
#define PRISM_STR(x) PRISM_STR2(x)  // x after macro expansion: PRISM_STR(cublasDgemm) is "cublasDgemm_v2"

// Compile time: every call prism resolves, against the function CUDA declares under that symbol.
#define PRISM_ASSERT_CALL(member, symbol)                                            \
  static_assert(same_function<decltype(&::symbol), cuda::member##_fn>(),           \
                #symbol ": prism's declaration (cuda_api.hpp) differs from CUDA's");
PRISM_CUDART_CALLS(PRISM_ASSERT_CALL)
PRISM_CUBLAS_CALLS(PRISM_ASSERT_CALL)
PRISM_CUBLAS_OPTIONAL_CALLS(PRISM_ASSERT_CALL)
PRISM_CUBLASXT_CALLS(PRISM_ASSERT_CALL)
#undef PRISM_ASSERT_CALL

// X(member, documented name): the names CUDA's documentation gives the calls prism uses.
#define PRISM_DOCUMENTED_NAMES(X)                          \
  X(get_error_string, cudaGetErrorString)                  \
  X(get_last_error, cudaGetLastError)                      \
  X(get_device_count, cudaGetDeviceCount)                  \
  X(get_device, cudaGetDevice)                             \
  X(set_device, cudaSetDevice)                             \
  X(get_device_properties, cudaGetDeviceProperties)        \
  X(device_get_pci_bus_id, cudaDeviceGetPCIBusId)          \
  X(mem_get_info, cudaMemGetInfo)                          \
  X(device_get_attribute, cudaDeviceGetAttribute)          \
  X(malloc_device, cudaMalloc)                             \
  X(free_device, cudaFree)                                 \
  X(malloc_host, cudaMallocHost)                           \
  X(free_host, cudaFreeHost)                               \
  X(host_register, cudaHostRegister)                       \
  X(host_unregister, cudaHostUnregister)                   \
  X(pointer_get_attributes, cudaPointerGetAttributes)      \
  X(stream_create_with_flags, cudaStreamCreateWithFlags)   \
  X(stream_destroy, cudaStreamDestroy)                     \
  X(stream_synchronize, cudaStreamSynchronize)             \
  X(stream_wait_event, cudaStreamWaitEvent)                \
  X(event_create_with_flags, cudaEventCreateWithFlags)     \
  X(event_destroy, cudaEventDestroy)                       \
  X(event_record, cudaEventRecord)                         \
  X(event_synchronize, cudaEventSynchronize)               \
  X(memcpy_2d_async, cudaMemcpy2DAsync)                    \
  X(memset_async, cudaMemsetAsync)                         \
  X(memset_2d_async, cudaMemset2DAsync)                    \
  X(cublas_create, cublasCreate)                           \
  X(cublas_destroy, cublasDestroy)                         \
  X(cublas_set_stream, cublasSetStream)                    \
  X(cublas_get_status_string, cublasGetStatusString)       \
  X(sgemm, cublasSgemm)                                    \
  X(dgemm, cublasDgemm)                                    \
  X(cgemm, cublasCgemm)                                    \
  X(zgemm, cublasZgemm)                                    \
  X(ssyrk, cublasSsyrk)                                    \
  X(dsyrk, cublasDsyrk)                                    \
  X(csyrk, cublasCsyrk)                                    \
  X(zsyrk, cublasZsyrk)                                    \
  X(cherk, cublasCherk)                                    \
  X(zherk, cublasZherk)                                    \
  X(sgeam, cublasSgeam)                                    \
  X(dgeam, cublasDgeam)                                    \
  X(cgeam, cublasCgeam)                                    \
  X(zgeam, cublasZgeam)                                    \
  X(strttp, cublasStrttp)                                  \
  X(dtrttp, cublasDtrttp)                                  \
  X(ctrttp, cublasCtrttp)                                  \
  X(ztrttp, cublasZtrttp)                                  \
  X(stpttr, cublasStpttr)                                  \
  X(dtpttr, cublasDtpttr)                                  \
  X(ctpttr, cublasCtpttr)                                  \
  X(ztpttr, cublasZtpttr)                                  \
  X(xt_create, cublasXtCreate)                             \
  X(xt_destroy, cublasXtDestroy)                           \
  X(xt_device_select, cublasXtDeviceSelect)                \
  X(xt_set_block_dim, cublasXtSetBlockDim)                 \
  X(xt_dgemm, cublasXtDgemm)                               \
  X(xt_zgemm, cublasXtZgemm)

constexpr bool equal(const char* a, const char* b) { return std::string_view(a) == std::string_view(b); }

#define PRISM_ASSERT_NAME(member, documented)                                   \
  static_assert(equal(cuda::member##_symbol, PRISM_STR(documented)),         \
                #documented ": prism looks up another symbol than the headers map it to");
PRISM_DOCUMENTED_NAMES(PRISM_ASSERT_NAME)
#undef PRISM_ASSERT_NAME

// Every call prism declares has a documented name above: one count per list.
#define PRISM_ONE(member, symbol) +1
static_assert(0 PRISM_CUDART_CALLS(PRISM_ONE) PRISM_CUBLAS_CALLS(PRISM_ONE) PRISM_CUBLAS_OPTIONAL_CALLS(PRISM_ONE)
                  PRISM_CUBLASXT_CALLS(PRISM_ONE) ==
              0 PRISM_DOCUMENTED_NAMES(PRISM_ONE));
#undef PRISM_ONE

// Constants: prism's value == CUDA's.
#define PRISM_SAME_VALUE(prism_value, cuda_value) \
  static_assert(static_cast<long long>(prism_value) == static_cast<long long>(cuda_value), #cuda_value);
#define PRISM_CONSTANTS(X)                                                   \
  X(cuda::error_t::success, cudaSuccess)                                     \
  X(cuda::error_t::memory_allocation, cudaErrorMemoryAllocation)             \
  X(cuda::memcpy_kind::host_to_host, cudaMemcpyHostToHost)                   \
  X(cuda::memcpy_kind::host_to_device, cudaMemcpyHostToDevice)               \
  X(cuda::memcpy_kind::device_to_host, cudaMemcpyDeviceToHost)               \
  X(cuda::memcpy_kind::device_to_device, cudaMemcpyDeviceToDevice)           \
  X(cuda::device_attribute::max_pitch, cudaDevAttrMaxPitch)                  \
  X(cuda::memory_type::unregistered, cudaMemoryTypeUnregistered)             \
  X(cuda::memory_type::host, cudaMemoryTypeHost)                             \
  X(cuda::memory_type::device, cudaMemoryTypeDevice)                         \
  X(cuda::memory_type::managed, cudaMemoryTypeManaged)                       \
  X(cuda::stream_non_blocking, cudaStreamNonBlocking)                        \
  X(cuda::event_disable_timing, cudaEventDisableTiming)                      \
  X(cuda::host_register_default, cudaHostRegisterDefault)                    \
  X(cuda::event_wait_default, cudaEventWaitDefault)                          \
  X(cuda::cublas_status::success, CUBLAS_STATUS_SUCCESS)                     \
  X(cuda::cublas_operation::n, CUBLAS_OP_N)                                  \
  X(cuda::cublas_operation::t, CUBLAS_OP_T)                                  \
  X(cuda::cublas_operation::c, CUBLAS_OP_C)                                  \
  X(cuda::cublas_fill_mode::lower, CUBLAS_FILL_MODE_LOWER)                   \
  X(cuda::cublas_fill_mode::upper, CUBLAS_FILL_MODE_UPPER)
PRISM_CONSTANTS(PRISM_SAME_VALUE)

// Types: the enums and handles prism names have CUDA's size and kind.
static_assert(same_shape<cudaError_t, cuda::error_t>());
static_assert(same_shape<cudaMemcpyKind, cuda::memcpy_kind>());
static_assert(same_shape<cudaMemoryType, cuda::memory_type>());
static_assert(same_shape<cudaDeviceAttr, cuda::device_attribute>());
static_assert(same_shape<cudaStream_t, cuda::stream_t>());
static_assert(same_shape<cudaEvent_t, cuda::event_t>());
static_assert(same_shape<cublasStatus_t, cuda::cublas_status>());
static_assert(same_shape<cublasOperation_t, cuda::cublas_operation>());
static_assert(same_shape<cublasFillMode_t, cuda::cublas_fill_mode>());
static_assert(same_shape<cublasHandle_t, cuda::cublas_handle>());
static_assert(same_shape<cublasXtHandle_t, cuda::cublasxt_handle>());

// Structs: size, alignment, member offsets.
#define PRISM_SAME_OFFSET(cuda_type, cuda_member, prism_type, prism_member) \
  static_assert(offsetof(cuda_type, cuda_member) == offsetof(prism_type, prism_member), #cuda_type "::" #cuda_member);
static_assert(sizeof(cudaPointerAttributes) == sizeof(cuda::pointer_attributes));
static_assert(alignof(cudaPointerAttributes) == alignof(cuda::pointer_attributes));
PRISM_SAME_OFFSET(cudaPointerAttributes, type, cuda::pointer_attributes, type)
PRISM_SAME_OFFSET(cudaPointerAttributes, device, cuda::pointer_attributes, device)
PRISM_SAME_OFFSET(cudaPointerAttributes, devicePointer, cuda::pointer_attributes, device_pointer)
PRISM_SAME_OFFSET(cudaPointerAttributes, hostPointer, cuda::pointer_attributes, host_pointer)
PRISM_SAME_OFFSET(cudaPointerAttributes, reserved, cuda::pointer_attributes, reserved)
static_assert(same_shape<decltype(cudaPointerAttributes::type), decltype(cuda::pointer_attributes::type)>());
static_assert(sizeof(cudaPointerAttributes::reserved) == sizeof(cuda::pointer_attributes::reserved));
// cudaDeviceProp: prism reads name only, from a buffer at least as large and as aligned.
PRISM_SAME_OFFSET(cudaDeviceProp, name, cuda::device_properties, name)
static_assert(sizeof(cudaDeviceProp::name) == sizeof(cuda::device_properties::name));
static_assert(sizeof(cudaDeviceProp) <= sizeof(cuda::device_properties));
static_assert(alignof(cudaDeviceProp) <= alignof(cuda::device_properties));
static_assert(sizeof(cuComplex) == sizeof(cuda::complex_float) && alignof(cuComplex) == alignof(cuda::complex_float));
PRISM_SAME_OFFSET(cuComplex, x, cuda::complex_float, x)
PRISM_SAME_OFFSET(cuComplex, y, cuda::complex_float, y)
static_assert(sizeof(cuDoubleComplex) == sizeof(cuda::complex_double) &&
              alignof(cuDoubleComplex) == alignof(cuda::complex_double));
PRISM_SAME_OFFSET(cuDoubleComplex, x, cuda::complex_double, x)
PRISM_SAME_OFFSET(cuDoubleComplex, y, cuda::complex_double, y)
#undef PRISM_SAME_OFFSET

}  // namespace

// The same checks at run time, one line each, so a reader sees what was compared.
TEST_CASE("every call prism declares matches CUDA's declaration of its symbol") {
  int calls = 0;
#define PRISM_CHECK_CALL(member, symbol)                                             \
  CHECK_MESSAGE((same_function<decltype(&::symbol), cuda::member##_fn>()), #symbol); \
  ++calls;
  PRISM_CUDART_CALLS(PRISM_CHECK_CALL)
  PRISM_CUBLAS_CALLS(PRISM_CHECK_CALL)
  PRISM_CUBLAS_OPTIONAL_CALLS(PRISM_CHECK_CALL)
  PRISM_CUBLASXT_CALLS(PRISM_CHECK_CALL)
#undef PRISM_CHECK_CALL
  MESSAGE(calls << " calls compared");
  CHECK(calls == 59);
}

TEST_CASE("each symbol prism looks up is the one CUDA's headers map the documented name to") {
#define PRISM_CHECK_NAME(member, documented) \
  CHECK_MESSAGE(std::string_view(cuda::member##_symbol) == PRISM_STR(documented), #documented " -> " PRISM_STR(documented));
  PRISM_DOCUMENTED_NAMES(PRISM_CHECK_NAME)
#undef PRISM_CHECK_NAME
  CHECK(std::string_view(cuda::dgemm_symbol) == "cublasDgemm_v2");
}

TEST_CASE("constants and structs prism declares have CUDA's values and layouts") {
#define PRISM_CHECK_VALUE(prism_value, cuda_value) \
  CHECK_MESSAGE(static_cast<long long>(prism_value) == static_cast<long long>(cuda_value), #cuda_value);
  PRISM_CONSTANTS(PRISM_CHECK_VALUE)
#undef PRISM_CHECK_VALUE
  CHECK(sizeof(cuda::pointer_attributes) == sizeof(cudaPointerAttributes));
  CHECK(offsetof(cuda::pointer_attributes, host_pointer) == offsetof(cudaPointerAttributes, hostPointer));
  CHECK(sizeof(cuda::complex_double) == sizeof(cuDoubleComplex));
  CHECK(alignof(cuda::complex_double) == alignof(cuDoubleComplex));
  MESSAGE("sizeof(cudaDeviceProp) = " << sizeof(cudaDeviceProp) << ", prism's buffer " << sizeof(cuda::device_properties));
  CHECK(sizeof(cudaDeviceProp) <= sizeof(cuda::device_properties));
}
