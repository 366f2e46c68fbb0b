// lib/gpu/cuda_device.cpp — a CUDA device through CUDA's runtime and cuBLAS, loaded at run
// time with dlopen (cuda_api.hpp declares what is used; no toolkit is needed to build).
//
// Loading: libcudart.so.13, else .12, .11.0, then libcudart.so; cudaGetDeviceCount; only
// then the matching libcublas (its 600 MB with cublasLt are not mapped on a host without a
// GPU). Any failure gives an empty device set whose status says why. On a host with CUDA's
// libraries and no GPU (the Debian build machines), cudaGetDeviceCount fails: no GPU.
//
// Each device: one cuBLAS handle per stream, set to that stream once; cudaSetDevice before
// the calls of every method (a host thread may feed several devices); copies with
// cudaMemcpy2DAsync, zeroing with cudaMemsetAsync, events without timing. Every failed
// call throws device_error naming the device, the call and CUDA's error string. cuBLAS takes
// 32-bit ints: a dimension or leading dimension above 2^31 - 1 is refused.
#include "bytes_text.hpp"
#include "cuda_api.hpp"
#include "devices.hpp"

#include "../numa/pci_locality.hpp"

#include <prism/machine.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace prism::detail::gpu {

namespace cuda {

namespace {

// The runtimes tried, in order, and the cuBLAS that goes with each (same index).
constexpr const char* runtime_names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
constexpr const char* cublas_names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"};
int runtime_choice = -1;  // index of the runtime loaded, set once by load_runtime

// dlsym into `fn`; false when absent.
template <class Fn>
bool resolve(void* lib, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  return fn != nullptr;
}

std::unique_ptr<runtime_api> open_runtime(std::string& why) {
  void* lib = nullptr;
  auto api = std::make_unique<runtime_api>();
  for (int i = 0; i < int(std::size(runtime_names)) && lib == nullptr; ++i) {
    lib = dlopen(runtime_names[i], RTLD_NOW | RTLD_LOCAL);  // never closed: devices live as long as the process
    if (lib != nullptr) {
      runtime_choice = i;
      api->library = runtime_names[i];
    }
  }
  if (lib == nullptr) {
    why = "libcudart.so.13 not found (nor libcudart.so.12, libcudart.so.11.0, libcudart.so)";
    return nullptr;
  }
#define PRISM_RESOLVE(member, symbol)                                  \
  if (!resolve(lib, #symbol, api->member)) {                           \
    why = std::string(#symbol) + " not found in " + api->library;      \
    return nullptr;                                                    \
  }
  PRISM_CUDART_CALLS(PRISM_RESOLVE)
  return api;
}

std::unique_ptr<cublas_api> open_cublas(std::string& why) {
  std::string runtime_why;
  if (load_runtime(runtime_why) == nullptr) {
    why = runtime_why;
    return nullptr;
  }
  auto api = std::make_unique<cublas_api>();
  api->library = cublas_names[runtime_choice];
  void* lib = dlopen(api->library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    why = api->library + " not found (beside " + std::string(runtime_names[runtime_choice]) + ")";
    return nullptr;
  }
  PRISM_CUBLAS_CALLS(PRISM_RESOLVE)
  resolve(lib, cublas_get_status_string_symbol, api->cublas_get_status_string);  // optional
  return api;
}

std::unique_ptr<cublasxt_api> open_cublasxt(std::string& why) {
  std::string runtime_why;
  if (load_runtime(runtime_why) == nullptr) {
    why = runtime_why;
    return nullptr;
  }
  auto api = std::make_unique<cublasxt_api>();
  api->library = cublas_names[runtime_choice];
  void* lib = dlopen(api->library.c_str(), RTLD_NOW | RTLD_LOCAL);  // the same handle as cuBLAS's
  if (lib == nullptr) {
    why = api->library + " not found (beside " + std::string(runtime_names[runtime_choice]) + ")";
    return nullptr;
  }
  PRISM_CUBLASXT_CALLS(PRISM_RESOLVE)
#undef PRISM_RESOLVE
  return api;
}

}  // namespace

const runtime_api* load_runtime(std::string& why) {
  static std::string& failure = *new std::string;  // never destroyed: calls may come at exit (docs/dropin.md)
  static const runtime_api* api = open_runtime(failure).release();  // once, thread-safely
  if (api == nullptr) why = failure;
  return api;
}

const cublasxt_api* load_cublasxt(std::string& why) {
  static std::string& failure = *new std::string;
  static const cublasxt_api* api = open_cublasxt(failure).release();
  if (api == nullptr) why = failure;
  return api;
}

const cublas_api* load_cublas(std::string& why) {
  static std::string& failure = *new std::string;
  static const cublas_api* api = open_cublas(failure).release();
  if (api == nullptr) why = failure;
  return api;
}

}  // namespace cuda

namespace {

using cuda::error_t;

class cuda_device;

// One in each of cuBLAS's types (float, double, and their complex with imaginary part 0).
template <class V>
constexpr V unit = [] {
  if constexpr (std::is_floating_point_v<V>) return V(1);
  else return V{1, 0};
}();

// A value of type V read from a host scalar (memcpy: the caller's may be less aligned than V).
template <class V>
V host_scalar(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Whether V value v is zero, -0.0 too (BLAS's beta == 0, which reads nothing of C).
template <class V>
bool is_zero(const V& v) {
  if constexpr (std::is_floating_point_v<V>) return v == V(0);
  else return v.x == 0 && v.y == 0;
}

// Whether V value v is one, (1, 0) for complex V.
template <class V>
bool is_one(const V& v) {
  if constexpr (std::is_floating_point_v<V>) return v == V(1);
  else return v.x == 1 && v.y == 0;
}

// Whether t is complex and host scalars alpha and beta are both (1, 0): a geam that is a sum.
bool complex_sum(scalar_type t, const void* alpha, const void* beta) {
  const auto ones = [&]<class V>() { return is_one(host_scalar<V>(alpha)) && is_one(host_scalar<V>(beta)); };
  if (t == scalar_type::c) return ones.template operator()<cuda::complex_float>();
  return t == scalar_type::z && ones.template operator()<cuda::complex_double>();
}

class cuda_stream final : public stream {
 public:
  cuda_stream(cuda_device& owner, cuda::stream_t s, cuda::cublas_handle h) : owner_(owner), s(s), handle(h) {}
  ~cuda_stream() override;
  device& owner() const noexcept override;
  cuda_device& owner_;
  cuda::stream_t s;
  cuda::cublas_handle handle;  // this stream's own, set to it once
};

class cuda_event final : public event {
 public:
  cuda_event(cuda_device& owner, cuda::event_t e) : owner(owner), e(e) {}
  ~cuda_event() override;
  cuda_device& owner;
  cuda::event_t e;
};

// The cuBLAS calls with prism's arguments: scalars copied from the host into values of
// cuBLAS's type V (R: herk's real scalars), pointers cast to it.
template <class V>
cuda::cublas_status run_gemm(cuda::gemm_fn<V> fn, cuda::cublas_handle h, cuda::cublas_operation ta,
                             cuda::cublas_operation tb, int m, int n, int k, const void* alpha, const void* A, int lda,
                             const void* B, int ldb, const void* beta, void* C, int ldc) {
  const V a = host_scalar<V>(alpha), b = host_scalar<V>(beta);
  return fn(h, ta, tb, m, n, k, &a, static_cast<const V*>(A), lda, static_cast<const V*>(B), ldb, &b,
            static_cast<V*>(C), ldc);
}
template <class V, class R = V>
cuda::cublas_status run_rank_k(cuda::rank_k_fn<V, R> fn, cuda::cublas_handle h, cuda::cublas_fill_mode uplo,
                               cuda::cublas_operation trans, int n, int k, const void* alpha, const void* A, int lda,
                               const void* beta, void* C, int ldc) {
  const R a = host_scalar<R>(alpha), b = host_scalar<R>(beta);
  return fn(h, uplo, trans, n, k, &a, static_cast<const V*>(A), lda, &b, static_cast<V*>(C), ldc);
}
template <class V>
cuda::cublas_status run_geam(cuda::geam_fn<V> fn, cuda::cublas_handle h, int m, int n, const void* alpha, const void* A,
                             int lda, const void* beta, const void* B, int ldb, void* C, int ldc) {
  const V a = host_scalar<V>(alpha), b = host_scalar<V>(beta);
  const auto op = cuda::cublas_operation::n;
  return fn(h, op, op, m, n, &a, static_cast<const V*>(A), lda, &b, static_cast<const V*>(B), ldb, static_cast<V*>(C),
            ldc);
}

cuda::cublas_operation operation(char t) {
  return t == 'N' ? cuda::cublas_operation::n : t == 'T' ? cuda::cublas_operation::t : cuda::cublas_operation::c;
}

char upper(char c) { return c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c; }

class cuda_device final : public device {
 public:
  cuda_device(const cuda::runtime_api& rt, const cuda::cublas_api& blas, int index, int ordinal);

  int index() const noexcept override { return index_; }
  std::string name() const override { return name_; }
  bool emulated() const noexcept override { return false; }
  std::size_t memory() const noexcept override { return memory_; }
  std::size_t max_pitch() const noexcept override { return max_pitch_; }
  int numa_domain() const noexcept override { return numa_; }

  void* allocate(std::size_t bytes) override;
  void release(void* p) noexcept override;
  void* allocate_pinned(std::size_t bytes) override;
  void release_pinned(void* p) noexcept override;
  void register_host(void* p, std::size_t bytes) override;
  void unregister_host(void* p) noexcept override;
  bool holds(const void* p) const override;

  std::unique_ptr<stream> make_stream() override;
  std::unique_ptr<event> make_event() override;
  void record(event& e, stream& s) override;
  void wait(stream& s, event& e) override;
  void synchronize(event& e) override;
  void synchronize(stream& s) override;

  void copy_2d(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
               std::size_t rows, copy_kind kind, stream& s) override;
  void fill_zero(void* p, std::size_t bytes, stream& s) override;
  void gemm(scalar_type t, stream& s, char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k,
            const void* alpha, const void* A, std::int64_t lda, const void* B, std::int64_t ldb, const void* beta,
            void* C, std::int64_t ldc) override;
  void rank_k(scalar_type t, bool herm, stream& s, char uplo, char trans, std::int64_t n, std::int64_t k,
              const void* alpha, const void* A, std::int64_t lda, const void* beta, void* C,
              std::int64_t ldc) override;
  void geam(scalar_type t, stream& s, std::int64_t m, std::int64_t n, const void* alpha, const void* A,
            std::int64_t lda, const void* beta, const void* B, std::int64_t ldb, void* C, std::int64_t ldc) override;
  void add_triangle(scalar_type t, stream& s, char uplo, bool herm, std::int64_t n, void* A, std::int64_t lda,
                    const void* beta, void* C, std::int64_t ldc, void* work) override;

  link_counters counters() const override {
    const std::lock_guard<std::mutex> lock(m_);
    return counters_;
  }

  const cuda::runtime_api& rt;
  const cuda::cublas_api& blas;

  // Throws device_error for a failed runtime call (out_of_memory for cudaErrorMemoryAllocation).
  void check(error_t e, const char* call) const {
    if (e == error_t::success) return;
    rt.get_last_error();  // clears it, so the next call does not see it again
    throw device_error(name_ + ": " + call + ": " + rt.get_error_string(e), e == error_t::memory_allocation);
  }
  // Throws device_error for a failed cuBLAS call.
  void check(cuda::cublas_status st, const char* call) const {
    if (st == cuda::cublas_status::success) return;
    const char* text = blas.cublas_get_status_string != nullptr ? blas.cublas_get_status_string(st) : nullptr;
    throw device_error(name_ + ": " + call + ": " +
                       (text != nullptr ? std::string(text) : "cuBLAS status " + std::to_string(int(st))));
  }
  [[noreturn]] void fail(const char* call, const std::string& why) const {
    throw device_error(name_ + ": " + call + ": " + why);
  }
  // The calling thread's current device made this one for a method's calls and given back
  // after: a program's own CUDA work keeps the device it chose, whatever prism ran on its
  // thread. `quiet`: errors cleared, none thrown (release paths). A failed cudaGetDevice
  // leaves nothing to give back.
  class device_scope {
   public:
    explicit device_scope(const cuda_device& d, bool quiet = false) : rt_(d.rt) {
      int now = -1;
      if (rt_.get_device(&now) != error_t::success) rt_.get_last_error(), now = -1;
      if (now == d.ordinal_) return;  // already current: nothing to set or give back
      const error_t e = rt_.set_device(d.ordinal_);
      if (e != error_t::success) {
        if (!quiet) d.check(e, "cudaSetDevice");
        rt_.get_last_error();
        return;
      }
      before_ = now;  // -1: not known, so not given back
    }
    ~device_scope() {
      if (before_ >= 0 && rt_.set_device(before_) != error_t::success) rt_.get_last_error();
    }
    device_scope(const device_scope&) = delete;
    device_scope& operator=(const device_scope&) = delete;

   private:
    const cuda::runtime_api& rt_;
    int before_ = -1;
  };
  // A 32-bit int for cuBLAS, or device_error.
  int to_int(std::int64_t v, const char* call, const char* what) const {
    if (v < 0 || v > INT_MAX)
      fail(call, std::string(what) + " = " + std::to_string(v) + " is outside 0..2^31-1 (cuBLAS's ints)");
    return int(v);
  }
  // C = A + B for complex t, m x n, as the real sum of twice the rows (see geam); where a
  // doubled row count or leading dimension passes cuBLAS's ints (ld >= 2^30), column by
  // column in pieces of at most 2^29 complex rows, each a real geam of one column. E.g. a
  // zgeam of 3 x 2 with ldc 2^30: two 6 x 1 dgeams, the second at element ld of each matrix.
  void add_parts(scalar_type t, cuda_stream& cs, const char* call, std::int64_t m, std::int64_t n, const void* A,
                 std::int64_t lda, const void* B, std::int64_t ldb, void* C, std::int64_t ldc) {
    const float f1 = 1;
    const double d1 = 1;
    const auto real_geam = [&](std::int64_t rows, std::int64_t cols, std::int64_t at_a, std::int64_t at_b, std::int64_t at_c,
                               std::int64_t ra, std::int64_t rb, std::int64_t rc) {  // offsets in elements of t
      const std::size_t e = element_size(t);
      const void* a = static_cast<const char*>(A) + std::size_t(at_a) * e;
      const void* b = static_cast<const char*>(B) + std::size_t(at_b) * e;
      void* c = static_cast<char*>(C) + std::size_t(at_c) * e;
      const int r = to_int(2 * rows, call, "2 m"), w = to_int(cols, call, "n");
      const int la = to_int(ra, call, "lda"), lb = to_int(rb, call, "ldb"), lc = to_int(rc, call, "ldc");
      if (t == scalar_type::c) check(run_geam<float>(blas.sgeam, cs.handle, r, w, &f1, a, la, &f1, b, lb, c, lc), cuda::sgeam_symbol);
      else check(run_geam<double>(blas.dgeam, cs.handle, r, w, &d1, a, la, &d1, b, lb, c, lc), cuda::dgeam_symbol);
    };
    if (std::max({m, lda, ldb, ldc}) <= INT_MAX / 2) return real_geam(m, n, 0, 0, 0, 2 * lda, 2 * ldb, 2 * ldc);
    const std::int64_t step = std::int64_t(1) << 29;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; i += step) {
        const std::int64_t rows = std::min(step, m - i);
        real_geam(rows, 1, i + j * lda, i + j * ldb, i + j * ldc, 2 * rows, 2 * rows, 2 * rows);
      }
  }
  cuda_stream& own(stream& s, const char* call) {
    auto* cs = dynamic_cast<cuda_stream*>(&s);
    if (cs == nullptr || &cs->owner_ != this) fail(call, "the stream belongs to another device");
    return *cs;
  }
  int ordinal() const noexcept { return ordinal_; }
  void count_kernel() {
    const std::lock_guard<std::mutex> lock(m_);
    ++counters_.kernels;
  }

 private:
  int index_, ordinal_;
  std::string name_;
  std::size_t memory_ = 0;
  std::size_t max_pitch_ = 2147483647;  // cudaDevAttrMaxPitch (its usual value until read)
  int numa_ = -1;
  mutable std::mutex m_;
  link_counters counters_;
};

cuda_stream::~cuda_stream() {
  // Drains it first, as an emulated stream does; errors here have nowhere to go.
  const cuda_device::device_scope on(owner_, true);
  owner_.rt.stream_synchronize(s);
  owner_.blas.cublas_destroy(handle);
  owner_.rt.stream_destroy(s);
  owner_.rt.get_last_error();
}
device& cuda_stream::owner() const noexcept { return owner_; }

cuda_event::~cuda_event() {
  const cuda_device::device_scope on(owner, true);
  owner.rt.event_destroy(e);
  owner.rt.get_last_error();
}

cuda_device::cuda_device(const cuda::runtime_api& rt, const cuda::cublas_api& blas, int index, int ordinal)
    : rt(rt), blas(blas), index_(index), ordinal_(ordinal), name_("CUDA device " + std::to_string(ordinal)) {
  const device_scope on(*this);
  auto props = std::make_unique<cuda::device_properties>();
  check(rt.get_device_properties(props.get(), ordinal), "cudaGetDeviceProperties");
  props->name[sizeof props->name - 1] = '\0';
  std::size_t free = 0, total = 0;
  check(rt.mem_get_info(&free, &total), "cudaMemGetInfo");
  memory_ = total;
  if (int pitch = 0; rt.device_get_attribute(&pitch, cuda::device_attribute::max_pitch, ordinal) == error_t::success && pitch > 0)
    max_pitch_ = std::size_t(pitch);
  else
    rt.get_last_error();
  char bus[32] = {0};
  if (rt.device_get_pci_bus_id(bus, int(sizeof bus), ordinal) == error_t::success) {
    try {
      numa_ = detail::pci_numa_domain(default_description().topo(), bus);
    } catch (const std::exception&) {  // a bad PRISM_TOPOLOGY: unknown
      numa_ = -1;
    }
  } else {
    rt.get_last_error();
  }
  name_ = std::string(props->name) + " (CUDA device " + std::to_string(ordinal) + ", " + bytes_text(total) + ")";
}

void* cuda_device::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const device_scope on(*this);
  void* p = nullptr;
  check(rt.malloc_device(&p, bytes), "cudaMalloc");
  return p;
}

void cuda_device::release(void* p) noexcept {
  if (p == nullptr) return;
  const device_scope on(*this, true);
  rt.free_device(p);
  rt.get_last_error();
}

void* cuda_device::allocate_pinned(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const device_scope on(*this);
  void* p = nullptr;
  check(rt.malloc_host(&p, bytes), "cudaMallocHost");
  return p;
}

void cuda_device::release_pinned(void* p) noexcept {
  if (p == nullptr) return;
  const device_scope on(*this, true);
  rt.free_host(p);
  rt.get_last_error();
}

void cuda_device::register_host(void* p, std::size_t bytes) {
  const device_scope on(*this);
  check(rt.host_register(p, bytes, cuda::host_register_default), "cudaHostRegister");
}

void cuda_device::unregister_host(void* p) noexcept {
  const device_scope on(*this, true);
  rt.host_unregister(p);
  rt.get_last_error();
}

bool cuda_device::holds(const void* p) const {
  cuda::pointer_attributes a{};
  if (rt.pointer_get_attributes(&a, p) != error_t::success) {  // CUDA before 11 fails on plain host memory
    rt.get_last_error();
    return false;
  }
  return (a.type == cuda::memory_type::device || a.type == cuda::memory_type::managed) && a.device == ordinal_;
}

std::unique_ptr<stream> cuda_device::make_stream() {
  const device_scope on(*this);
  cuda::stream_t s = nullptr;
  check(rt.stream_create_with_flags(&s, cuda::stream_non_blocking), "cudaStreamCreateWithFlags");
  cuda::cublas_handle h = nullptr;
  cuda::cublas_status st = blas.cublas_create(&h);
  if (st == cuda::cublas_status::success) {
    st = blas.cublas_set_stream(h, s);
    if (st != cuda::cublas_status::success) blas.cublas_destroy(h);
  }
  if (st != cuda::cublas_status::success) {
    rt.stream_destroy(s);
    check(st, "cublasCreate_v2 / cublasSetStream_v2");
  }
  try {
    return std::make_unique<cuda_stream>(*this, s, h);
  } catch (...) {  // bad_alloc: the stream and handle are not kept by anything
    blas.cublas_destroy(h);
    rt.stream_destroy(s);
    throw;
  }
}

std::unique_ptr<event> cuda_device::make_event() {
  const device_scope on(*this);
  cuda::event_t e = nullptr;
  check(rt.event_create_with_flags(&e, cuda::event_disable_timing), "cudaEventCreateWithFlags");
  try {
    return std::make_unique<cuda_event>(*this, e);
  } catch (...) {  // bad_alloc: the event is not kept by anything
    rt.event_destroy(e);
    throw;
  }
}

void cuda_device::record(event& e, stream& s) {
  cuda_stream& cs = own(s, "record");
  auto* ce = dynamic_cast<cuda_event*>(&e);
  if (ce == nullptr || &ce->owner != this) fail("record", "the event belongs to another device");
  const device_scope on(*this);
  check(rt.event_record(ce->e, cs.s), "cudaEventRecord");
}

void cuda_device::wait(stream& s, event& e) {
  cuda_stream& cs = own(s, "wait");
  auto* ce = dynamic_cast<cuda_event*>(&e);  // another CUDA device's event is fine
  if (ce == nullptr) fail("wait", "the event is not a CUDA device's");
  const device_scope on(*this);
  check(rt.stream_wait_event(cs.s, ce->e, cuda::event_wait_default), "cudaStreamWaitEvent");
}

void cuda_device::synchronize(event& e) {
  auto* ce = dynamic_cast<cuda_event*>(&e);
  if (ce == nullptr) fail("synchronize(event)", "the event is not a CUDA device's");
  const device_scope on(*this);
  check(rt.event_synchronize(ce->e), "cudaEventSynchronize");
}

void cuda_device::synchronize(stream& s) {
  cuda_stream& cs = own(s, "synchronize(stream)");
  const device_scope on(*this);
  check(rt.stream_synchronize(cs.s), "cudaStreamSynchronize");
}

void cuda_device::copy_2d(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
                          std::size_t rows, copy_kind kind, stream& s) {
  cuda_stream& cs = own(s, "copy_2d");
  const bool empty = rows == 0 || width == 0;
  if (!empty && (width > dpitch || width > spitch))
    fail("copy_2d", "width " + std::to_string(width) + " is above a pitch");
  if (!empty && (dpitch > max_pitch_ || spitch > max_pitch_))
    fail("copy_2d", "a pitch above the device's " + std::to_string(max_pitch_) + " bytes");
  const cuda::memcpy_kind k = kind == copy_kind::host_to_device   ? cuda::memcpy_kind::host_to_device
                              : kind == copy_kind::device_to_host ? cuda::memcpy_kind::device_to_host
                                                                  : cuda::memcpy_kind::device_to_device;
  if (!empty) {
    const device_scope on(*this);
    check(rt.memcpy_2d_async(dst, dpitch, src, spitch, width, rows, k, cs.s), "cudaMemcpy2DAsync");
  }
  const std::lock_guard<std::mutex> lock(m_);
  const std::uint64_t bytes = std::uint64_t(width) * rows;
  if (kind == copy_kind::host_to_device) counters_.host_to_device += bytes;
  else if (kind == copy_kind::device_to_host) counters_.device_to_host += bytes;
  else counters_.device_to_device += bytes;
  ++counters_.copies;
}

void cuda_device::fill_zero(void* p, std::size_t bytes, stream& s) {
  cuda_stream& cs = own(s, "fill_zero");
  if (bytes > 0) {
    const device_scope on(*this);
    check(rt.memset_async(p, 0, bytes, cs.s), "cudaMemsetAsync");
  }
  count_kernel();
}

void cuda_device::gemm(scalar_type t, stream& s, char transa, char transb, std::int64_t m, std::int64_t n,
                       std::int64_t k, const void* alpha, const void* A, std::int64_t lda, const void* B,
                       std::int64_t ldb, const void* beta, void* C, std::int64_t ldc) {
  cuda_stream& cs = own(s, "gemm");
  const char ta = upper(transa), tb = upper(transb);
  const auto trans_ok = [](char c) { return c == 'N' || c == 'T' || c == 'C'; };
  if (!trans_ok(ta) || !trans_ok(tb)) fail("gemm", "transa and transb must be N, T or C");
  if (alpha == nullptr || beta == nullptr) fail("gemm", "alpha and beta must point to host scalars");
  const int im = to_int(m, "gemm", "m"), in = to_int(n, "gemm", "n"), ik = to_int(k, "gemm", "k");
  const int ia = to_int(lda, "gemm", "lda"), ib = to_int(ldb, "gemm", "ldb"), ic = to_int(ldc, "gemm", "ldc");
  // Real types: 'C' is 'T' (cuBLAS is not asked to decide).
  const bool cx = is_complex(t);
  const auto oa = operation(!cx && ta == 'C' ? 'T' : ta), ob = operation(!cx && tb == 'C' ? 'T' : tb);
  const device_scope on(*this);
  const auto go = [&]<class V>(cuda::gemm_fn<V> fn, const char* symbol) {
    check(run_gemm<V>(fn, cs.handle, oa, ob, im, in, ik, alpha, A, ia, B, ib, beta, C, ic), symbol);
  };
  switch (t) {
    case scalar_type::s: go(blas.sgemm, cuda::sgemm_symbol); break;
    case scalar_type::d: go(blas.dgemm, cuda::dgemm_symbol); break;
    case scalar_type::c: go(blas.cgemm, cuda::cgemm_symbol); break;
    case scalar_type::z: go(blas.zgemm, cuda::zgemm_symbol); break;
  }
  count_kernel();
}

void cuda_device::rank_k(scalar_type t, bool herm, stream& s, char uplo, char trans, std::int64_t n, std::int64_t k,
                         const void* alpha, const void* A, std::int64_t lda, const void* beta, void* C,
                         std::int64_t ldc) {
  cuda_stream& cs = own(s, "rank_k");
  const char ul = upper(uplo), tr = upper(trans);
  if (ul != 'U' && ul != 'L') fail("rank_k", "uplo must be U or L");
  if (tr != 'N' && tr != 'T' && tr != 'C') fail("rank_k", "trans must be N, T or C");
  if (alpha == nullptr || beta == nullptr) fail("rank_k", "alpha and beta must point to host scalars");
  const int in = to_int(n, "rank_k", "n"), ik = to_int(k, "rank_k", "k");
  const int ia = to_int(lda, "rank_k", "lda"), ic = to_int(ldc, "rank_k", "ldc");
  const bool cx = is_complex(t);
  herm = herm && cx;  // herk of a real type is syrk
  const auto fill = ul == 'U' ? cuda::cublas_fill_mode::upper : cuda::cublas_fill_mode::lower;
  const auto op = operation(!cx && tr == 'C' ? 'T' : tr);  // complex: cuBLAS refuses syrk 'C' and herk 'T'
  const device_scope on(*this);
  const auto go = [&]<class V, class R>(cuda::rank_k_fn<V, R> fn, const char* symbol) {
    check(run_rank_k<V, R>(fn, cs.handle, fill, op, in, ik, alpha, A, ia, beta, C, ic), symbol);
  };
  switch (t) {
    case scalar_type::s: go(blas.ssyrk, cuda::ssyrk_symbol); break;
    case scalar_type::d: go(blas.dsyrk, cuda::dsyrk_symbol); break;
    case scalar_type::c: herm ? go(blas.cherk, cuda::cherk_symbol) : go(blas.csyrk, cuda::csyrk_symbol); break;
    case scalar_type::z: herm ? go(blas.zherk, cuda::zherk_symbol) : go(blas.zsyrk, cuda::zsyrk_symbol); break;
  }
  count_kernel();
}

void cuda_device::geam(scalar_type t, stream& s, std::int64_t m, std::int64_t n, const void* alpha, const void* A,
                       std::int64_t lda, const void* beta, const void* B, std::int64_t ldb, void* C, std::int64_t ldc) {
  cuda_stream& cs = own(s, "geam");
  if (alpha == nullptr || beta == nullptr) fail("geam", "alpha and beta must point to host scalars");
  const int im = to_int(m, "geam", "m"), in = to_int(n, "geam", "n");
  const int ia = to_int(lda, "geam", "lda"), ib = to_int(ldb, "geam", "ldb"), ic = to_int(ldc, "geam", "ldc");
  const device_scope on(*this);
  const auto go = [&]<class V>(cuda::geam_fn<V> fn, const char* symbol) {
    check(run_geam<V>(fn, cs.handle, im, in, alpha, A, ia, beta, B, ib, C, ic), symbol);
  };
  // A complex sum (alpha = beta = 1) is the real sum of matrices of twice the rows (real and
  // imaginary parts interleaved), so no part is multiplied, as host BLAS's beta = 1 adds C:
  // (Inf, 3) + (1, 2) is (Inf, 5), where a complex geam would form (Inf, 3) * (1, 0) =
  // (Inf, NaN). E.g. a 3 x 2 zgeam with ld 4 is a 6 x 2 dgeam with ld 8.
  if (complex_sum(t, alpha, beta)) return add_parts(t, cs, "geam", m, n, A, lda, B, ldb, C, ldc), count_kernel();
  switch (t) {
    case scalar_type::s: go(blas.sgeam, cuda::sgeam_symbol); break;
    case scalar_type::d: go(blas.dgeam, cuda::dgeam_symbol); break;
    case scalar_type::c: go(blas.cgeam, cuda::cgeam_symbol); break;
    case scalar_type::z: go(blas.zgeam, cuda::zgeam_symbol); break;
  }
  count_kernel();
}

// C's triangle = A's + beta C's in three cuBLAS calls and, for herk, one memset (two when
// beta is not 0): A += beta C in place (geam; skipped for beta = 0, so C is not read; for a
// complex beta = 1 the real sum of add_parts), A's
// triangle packed into work
// (trttp), work unpacked into C's triangle (tpttr leaves the other triangle untouched);
// then the imaginary parts of C's diagonal zeroed (herk; also before the geam when beta is
// not 0, so that a NaN there never reaches the real part) by a 2-D memset whose rows are the
// diagonal's elements: pitch (ldc + 1) elements, width one real, starting at C's first
// imaginary part. E.g. a zherk 3 x 3 with ldc 4: bytes 8, 88, 168 from C, 8 each.
void cuda_device::add_triangle(scalar_type t, stream& s, char uplo, bool herm, std::int64_t n, void* A,
                               std::int64_t lda, const void* beta, void* C, std::int64_t ldc, void* work) {
  static constexpr const char* call = "add_triangle";
  cuda_stream& cs = own(s, call);
  if (beta == nullptr) fail(call, "beta must point to a host scalar");
  const char ul = upper(uplo);
  if (ul != 'U' && ul != 'L') fail(call, "uplo must be U or L");
  const int in = to_int(n, call, "n"), ia = to_int(lda, call, "lda"), ic = to_int(ldc, call, "ldc");
  // Checked before anything is queued, as the emulated device does: the diagonal's memset
  // below would otherwise change C before cuBLAS refused the leading dimensions.
  if (in < 0 || ia < std::max(1, in) || ic < std::max(1, in))
    fail(call, "n " + std::to_string(n) + ", lda " + std::to_string(lda) + ", ldc " + std::to_string(ldc) +
                   ": leading dimensions must be >= max(1, n)");
  if (in == 0) return count_kernel();
  const auto fill = ul == 'U' ? cuda::cublas_fill_mode::upper : cuda::cublas_fill_mode::lower;
  const device_scope on(*this);
  const std::size_t real = element_size(t) / 2;
  // Zeroes the imaginary parts of C's diagonal (see above).
  const auto real_diagonal = [&] {
    check(rt.memset_2d_async(static_cast<char*>(C) + real, (std::size_t(ldc) + 1) * element_size(t), 0, real,
                             std::size_t(n), cs.s),
          "cudaMemset2DAsync");
  };
  const auto go = [&]<class V>(cuda::geam_fn<V> geam, cuda::trttp_fn<V> trttp, cuda::tpttr_fn<V> tpttr,
                               const char* symbols) {
    const V b = host_scalar<V>(beta), one = unit<V>;
    if (!is_zero(b) && herm && is_complex(t)) real_diagonal();  // Im C(j, j) is never read, as reference ?herk
    if (is_complex(t) && is_one(b))  // a sum: no part of C multiplied (see geam)
      add_parts(t, cs, call, n, n, A, lda, C, ldc, A, lda);
    else if (!is_zero(b))
      check(geam(cs.handle, cuda::cublas_operation::n, cuda::cublas_operation::n, in, in, &one, static_cast<V*>(A), ia,
                 &b, static_cast<const V*>(C), ic, static_cast<V*>(A), ia), symbols);
    check(trttp(cs.handle, fill, in, static_cast<const V*>(A), ia, static_cast<V*>(work)), symbols);
    check(tpttr(cs.handle, fill, in, static_cast<const V*>(work), static_cast<V*>(C), ic), symbols);
  };
  switch (t) {
    case scalar_type::s: go(blas.sgeam, blas.strttp, blas.stpttr, "cublasSgeam / Strttp / Stpttr"); break;
    case scalar_type::d: go(blas.dgeam, blas.dtrttp, blas.dtpttr, "cublasDgeam / Dtrttp / Dtpttr"); break;
    case scalar_type::c: go(blas.cgeam, blas.ctrttp, blas.ctpttr, "cublasCgeam / Ctrttp / Ctpttr"); break;
    case scalar_type::z: go(blas.zgeam, blas.ztrttp, blas.ztpttr, "cublasZgeam / Ztrttp / Ztpttr"); break;
  }
  if (herm && is_complex(t)) real_diagonal();
  count_kernel();
}

// "1 CUDA device: NAME", "2 CUDA devices: NAME, NAME", with those left out after "; ".
std::string set_status(const device_set& set, const std::vector<std::string>& left_out) {
  std::string s = std::to_string(set.count()) + (set.count() == 1 ? " CUDA device: " : " CUDA devices: ");
  for (int i = 0; i < set.count(); ++i) s += (i > 0 ? ", " : "") + set.devices[std::size_t(i)]->name();
  for (const std::string& why : left_out) s += "; left out: " + why;
  return s;
}

// The set: the runtime, its device count, then cuBLAS and each device; never throws.
std::shared_ptr<const device_set> build_cuda_set() noexcept {
  auto set = std::make_shared<device_set>();
  try {
    std::string why;
    const cuda::runtime_api* rt = cuda::load_runtime(why);
    if (rt == nullptr) {
      set->status = "no GPU: " + why;
      return set;
    }
    int count = 0;
    const error_t e = rt->get_device_count(&count);
    if (e != error_t::success) {
      rt->get_last_error();
      set->status = std::string("no GPU: cudaGetDeviceCount: ") + rt->get_error_string(e);
      return set;
    }
    if (count <= 0) {
      set->status = "no GPU: cudaGetDeviceCount found no device";
      return set;
    }
    const cuda::cublas_api* blas = cuda::load_cublas(why);
    if (blas == nullptr) {
      set->status = "no GPU: " + why;
      return set;
    }
    std::vector<std::string> left_out;
    for (int ordinal = 0; ordinal < count; ++ordinal) {
      try {
        set->devices.push_back(std::make_shared<cuda_device>(*rt, *blas, set->count(), ordinal));
      } catch (const std::exception& x) {
        left_out.push_back(x.what());
      }
    }
    set->status = set->devices.empty() ? "no GPU: " + left_out.front() : set_status(*set, left_out);
  } catch (const std::exception& x) {
    set->devices.clear();
    set->status = std::string("no GPU: ") + x.what();
  }
  return set;
}

}  // namespace

std::shared_ptr<const device_set> cuda_devices() {
  static const std::shared_ptr<const device_set>& set = *new std::shared_ptr<const device_set>(build_cuda_set());  // once; never destroyed (docs/dropin.md)
  return set;
}

}  // namespace prism::detail::gpu
