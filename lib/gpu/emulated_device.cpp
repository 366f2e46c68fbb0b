// lib/gpu/emulated_device.cpp — a device on host memory (emulated_device.hpp says what it
// emulates and how).
#include "emulated_device.hpp"

#include "../leaf/dispatch.hpp"
#include "bytes_text.hpp"
#include "reuse.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <system_error>
#include <thread>
#include <type_traits>

namespace prism::detail::gpu {

namespace {

// A point in a stream's work: completed by the stream's worker when it gets there, with the
// stream's sticky failure at that moment ("" when none).
class marker {
 public:
  void complete(const std::string& failure) {
    {
      const std::lock_guard<std::mutex> lock(m_);
      failure_ = failure;
      done_ = true;
    }
    cv_.notify_all();
  }
  // Blocks until completed; the failure it was completed with.
  std::string wait() {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return done_; });
    return failure_;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string failure_;
};

struct task {
  enum class kind : std::uint8_t { work, mark, wait };
  kind what = kind::work;
  std::function<void()> run;       // work
  std::shared_ptr<marker> point;   // mark: completed; wait: waited for
  unsigned delay_us = 0;           // work: slept before it runs
  std::string call;                // work: what a failure names, e.g. "copy_2d"
};

// One stream: a FIFO of tasks and the thread that runs them. Destruction drains it.
class work_queue {
 public:
  explicit work_queue(std::string device) : device_(std::move(device)), worker_([this] { run(); }) {}
  ~work_queue() {
    {
      const std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_one();
    worker_.join();
  }
  work_queue(const work_queue&) = delete;
  work_queue& operator=(const work_queue&) = delete;

  void push(task t) {
    {
      const std::lock_guard<std::mutex> lock(m_);
      q_.push_back(std::move(t));
    }
    cv_.notify_one();
  }
  // Queues a marker and waits for it: the stream's failure ("" none).
  std::string drain() {
    auto point = std::make_shared<marker>();
    push({task::kind::mark, {}, point, 0, {}});
    return point->wait();
  }

 private:
  void run() {
    for (;;) {
      task t;
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [&] { return stop_ || !q_.empty(); });
        if (q_.empty()) return;  // stop_ and nothing left: drained
        t = std::move(q_.front());
        q_.pop_front();
      }
      execute(t);
    }
  }
  void execute(task& t) {
    switch (t.what) {
      case task::kind::mark: t.point->complete(failure_); return;
      case task::kind::wait:  // a marker always completes: no hang
        // Work that waited for a failed stream's point has no inputs it can trust: this stream
        // fails too (as CUDA's faults are sticky for the whole context), so nothing it does
        // later, a write-back included, passes garbage on.
        if (failure_.empty()) failure_ = t.point->wait();
        return;
      case task::kind::work: break;
    }
    if (!failure_.empty()) return;  // sticky: later work on a failed stream is skipped
    if (t.delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(t.delay_us));
    try {
      t.run();
    } catch (const std::exception& e) {
      failure_ = device_ + ": " + t.call + ": " + e.what();
    } catch (...) {
      failure_ = device_ + ": " + t.call + ": unknown failure";
    }
  }

  std::string device_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<task> q_;
  bool stop_ = false;
  std::string failure_;  // the first failed call's line; touched by the worker alone
  std::thread worker_;   // last: starts once the rest exists
};

// Bytes a column-major rows x cols block with leading dimension ld spans, elements of
// `elem` bytes; 0 when empty. E.g. a 3 x 2 block of doubles with ld 5: columns at
// elements 0 and 5, the last ending at 5 + 3 = 8: (1 * 5 + 3) * 8 = 64 bytes. Saturates
// far above any memory (the range check then fails).
std::uint64_t matrix_bytes(std::int64_t rows, std::int64_t cols, std::int64_t ld, std::size_t elem) {
  if (rows <= 0 || cols <= 0) return 0;
  using wide = unsigned __int128;
  const wide span = (wide(cols - 1) * wide(ld) + wide(rows)) * elem;
  return span > wide(std::uint64_t(1) << 62) ? std::uint64_t(1) << 62 : std::uint64_t(span);
}

// Calls f.operator()<T>() for the C++ type of t.
template <class F>
void with_type(scalar_type t, F&& f) {
  switch (t) {
    case scalar_type::s: return f.template operator()<float>();
    case scalar_type::d: return f.template operator()<double>();
    case scalar_type::c: return f.template operator()<std::complex<float>>();
    case scalar_type::z: return f.template operator()<std::complex<double>>();
  }
}

// C = alpha A + beta B, m x n, column-major; alpha == 0 reads no A, beta == 0 no B
// (reference semantics: NaN there does not reach C). Element by element, so C may be A or B.
// alpha = beta = 1 is a sum, nothing multiplied, as the CUDA device's real geam of a complex
// sum: (Inf, 3) + (1, 2) is (Inf, 5), where (Inf, 3) * (1, 0) would be (Inf, NaN).
template <scalar T>
void geam_loops(std::int64_t m, std::int64_t n, T alpha, const T* A, std::int64_t lda, T beta, const T* B,
                std::int64_t ldb, T* C, std::int64_t ldc) {
  const bool use_a = alpha != T(0), use_b = beta != T(0), sum = alpha == T(1) && beta == T(1);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      T v(0);
      if (sum) v = A[i + j * lda] + B[i + j * ldb];
      else {
        if (use_a) v = alpha * A[i + j * lda];
        if (use_b) v += beta * B[i + j * ldb];
      }
      C[i + j * ldc] = v;
    }
}

// C's uplo triangle = A's + beta C's (n x n), C's other triangle untouched; beta == 0 reads
// no C. The triangle goes through `work` packed column by column, as CUDA's trttp / tpttr
// pair does (so a work area too small shows as a range error at the call). herm: the
// diagonal's imaginary parts become zero.
template <scalar T>
void add_triangle_loops(char uplo, bool herm, std::int64_t n, T* A, std::int64_t lda, T beta, T* C, std::int64_t ldc,
                        T* work) {
  std::int64_t at = 0;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = uplo == 'U' ? 0 : j; i < (uplo == 'U' ? j + 1 : n); ++i) {
      T v = A[i + j * lda];
      if (beta != T(0)) {  // (beta = 0 reads no C)
        T c = C[i + j * ldc];
        if constexpr (!std::is_floating_point_v<T>)
          if (herm && i == j) c = T(c.real());  // as reference ?herk, Im C(j, j) is never read
        v += beta == T(1) ? c : beta * c;  // beta = 1: a sum, as geam's
      }
      A[i + j * lda] = v;
      work[at++] = v;
    }
  at = 0;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = uplo == 'U' ? 0 : j; i < (uplo == 'U' ? j + 1 : n); ++i) C[i + j * ldc] = work[at++];
  if constexpr (!std::is_floating_point_v<T>)
    if (herm)
      for (std::int64_t j = 0; j < n; ++j) C[j + j * ldc] = T(C[j + j * ldc].real());
}

char upper(char c) { return char(std::toupper(static_cast<unsigned char>(c))); }

}  // namespace

struct emulated_device::state {
  int index = 0;
  std::size_t capacity = 0;
  int numa = -1;
  emulation_options opts;
  std::string name;

  mutable std::mutex m;  // everything below up to queues
  std::map<std::uintptr_t, std::size_t> allocations;  // start -> bytes, live device memory
  std::size_t used = 0;
  std::map<const void*, std::size_t> registered;  // register_host's records
  std::size_t registered_total = 0;
  std::size_t registrations = 0;  // register_host calls
  long allocations_made = 0;  // allocate calls so far (fail_allocation counts these)
  long copies_made = 0;       // accepted copy_2d calls so far (fail_copy counts these)
  long kernels_made = 0;      // accepted kernels so far (fail_kernel counts these)
  std::size_t streams_made = 0;  // make_stream calls that gave a stream
  std::size_t pinned_made = 0;   // allocate_pinned calls that gave memory
  link_counters counters;
  std::mt19937_64 rng;

  std::mutex queues_m;             // held while draining them all
  std::set<work_queue*> queues;    // the live streams'

  [[noreturn]] void fail(const std::string& call, const std::string& why) const {
    throw device_error(name + ": " + call + ": " + why);
  }
  // Throws unless ok (argument checks, as CUDA and cuBLAS refuse a call).
  void need(bool ok, const char* call, const std::string& why) const {
    if (!ok) fail(call, why);
  }
  // The allocation holding p, or allocations.end(). Under m.
  std::map<std::uintptr_t, std::size_t>::const_iterator find(const void* p) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = allocations.upper_bound(a);
    if (it == allocations.begin()) return allocations.end();
    --it;
    return a < it->first + std::max<std::size_t>(it->second, 1) ? it : allocations.end();
  }
  // A device-side operand: `bytes` at p inside one live allocation of this device. Under m.
  void need_device(const char* call, const char* what, const void* p, std::uint64_t bytes) const {
    if (bytes == 0) return;
    const auto it = find(p);
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if (it == allocations.end() || bytes > it->first + it->second - a)
      fail(call, std::string(what) + " (" + std::to_string(bytes) + " bytes) is not inside this device's memory");
  }
  // A host-side operand: p is not device memory. Under m.
  void need_host(const char* call, const char* what, const void* p, std::uint64_t bytes) const {
    if (bytes == 0) return;
    need(p != nullptr, call, std::string(what) + " is null");
    need(find(p) == allocations.end(), call, std::string(what) + " is device memory where host memory is expected");
  }
  // The delay before the next copy or kernel. Under m.
  unsigned delay() {
    if (opts.delay_seed == 0 || opts.max_delay_us == 0) return 0;
    return std::uniform_int_distribution<unsigned>(0, opts.max_delay_us)(rng);
  }
  void drain_all() noexcept {
    const std::lock_guard<std::mutex> lock(queues_m);
    for (work_queue* q : queues) q->drain();
  }
};

namespace {

// A stream: its queue, registered with its device while it lives (release() drains them all).
class emulated_stream final : public stream {
 public:
  emulated_stream(emulated_device& owner, emulated_device::state& st);
  ~emulated_stream() override;
  device& owner() const noexcept override { return owner_; }
  work_queue queue;

 private:
  emulated_device& owner_;
  emulated_device::state& st_;
};

class emulated_event final : public event {
 public:
  explicit emulated_event(const emulated_device& owner) : owner(owner) {}
  const emulated_device& owner;
  std::mutex m;
  std::shared_ptr<marker> latest;  // the last record's point; nullptr: never recorded
};

emulated_stream::emulated_stream(emulated_device& owner, emulated_device::state& st)
    : queue(st.name), owner_(owner), st_(st) {
  const std::lock_guard<std::mutex> lock(st_.queues_m);
  st_.queues.insert(&queue);
}

emulated_stream::~emulated_stream() {
  queue.drain();  // first, so that a release() meanwhile still waits for this stream's work
  const std::lock_guard<std::mutex> lock(st_.queues_m);
  st_.queues.erase(&queue);
}  // then queue's destructor, with nothing left to run, joins its worker

emulated_stream& own_stream(const emulated_device::state& st, const emulated_device& dev, stream& s, const char* call) {
  auto* es = dynamic_cast<emulated_stream*>(&s);
  if (es == nullptr || &es->owner() != &dev) st.fail(call, "the stream belongs to another device");
  return *es;
}

emulated_event& any_event(const emulated_device::state& st, event& e, const char* call) {
  auto* ee = dynamic_cast<emulated_event*>(&e);
  if (ee == nullptr) st.fail(call, "the event is not an emulated device's");
  return *ee;
}

// Queues work on s: its delay drawn now (so a seed gives the same delays to the same calls).
void enqueue(emulated_device::state& st, emulated_stream& s, const char* call, std::function<void()> fn) {
  unsigned delay;
  {
    const std::lock_guard<std::mutex> lock(st.m);
    delay = st.delay();
  }
  s.queue.push({task::kind::work, std::move(fn), nullptr, delay, call});
}

// Queues a kernel on s, counted; the n-th (opts.fail_kernel) throws instead, at its synchronize.
void enqueue_kernel(emulated_device::state& st, emulated_stream& s, const char* call, std::function<void()> fn) {
  long nth;
  {
    const std::lock_guard<std::mutex> lock(st.m);
    ++st.counters.kernels;
    nth = st.kernels_made++;
  }
  if (nth == st.opts.fail_kernel)
    fn = [nth] { throw std::runtime_error("injected failure (fail_kernel = " + std::to_string(nth) + ")"); };
  enqueue(st, s, call, std::move(fn));
}

}  // namespace

emulated_device::emulated_device(int index, std::size_t bytes, int numa, const emulation_options& opts)
    : st_(std::make_unique<state>()) {
  st_->index = index;
  st_->capacity = bytes;
  st_->numa = numa;
  st_->opts = opts;
  st_->name = "emulated device " + std::to_string(index) + " (" + bytes_text(bytes) + ")";
  st_->rng.seed(opts.delay_seed + std::uint64_t(index));
}

emulated_device::~emulated_device() {
  forget_kept(*this);  // the streams and pinned buffers its calls gave back
  for (const auto& [start, bytes] : st_->allocations) std::free(reinterpret_cast<void*>(start));
}

int emulated_device::index() const noexcept { return st_->index; }
std::string emulated_device::name() const { return st_->name; }
std::size_t emulated_device::memory() const noexcept { return st_->capacity; }
std::size_t emulated_device::max_pitch() const noexcept { return st_->opts.max_pitch; }
int emulated_device::numa_domain() const noexcept { return st_->numa; }

void* emulated_device::allocate(std::size_t bytes) {
  const std::lock_guard<std::mutex> lock(st_->m);
  const long nth = st_->allocations_made++;
  if (nth == st_->opts.fail_allocation)
    throw device_error(st_->name + ": allocate(" + std::to_string(bytes) + "): injected failure (fail_allocation = " +
                           std::to_string(nth) + ")", true);
  if (bytes > st_->capacity - st_->used)
    throw device_error(st_->name + ": allocate(" + std::to_string(bytes) + "): out of memory (" +
                           std::to_string(st_->capacity - st_->used) + " of " + std::to_string(st_->capacity) +
                           " bytes free)", true);
  if (bytes == 0) return nullptr;
  const std::size_t rounded = (bytes + 63) / 64 * 64;  // aligned_alloc wants a multiple of the alignment
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr)
    throw device_error(st_->name + ": allocate(" + std::to_string(bytes) + "): host memory exhausted", true);
  std::memset(p, 0xFF, rounded);  // NaN in every scalar type: reading before writing shows
  st_->allocations.emplace(reinterpret_cast<std::uintptr_t>(p), bytes);
  st_->used += bytes;
  return p;
}

void emulated_device::release(void* p) noexcept {
  if (p == nullptr) return;
  st_->drain_all();  // as cudaFree synchronises the device
  const std::lock_guard<std::mutex> lock(st_->m);
  const auto it = st_->allocations.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == st_->allocations.end()) return;
  st_->used -= it->second;
  st_->allocations.erase(it);
  std::free(p);
}

void* emulated_device::allocate_pinned(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p == nullptr)
    throw device_error(st_->name + ": allocate_pinned(" + std::to_string(bytes) + "): out of memory", true);
  const std::lock_guard<std::mutex> lock(st_->m);
  ++st_->pinned_made;
  return p;
}

void emulated_device::release_pinned(void* p) noexcept {
  if (p == nullptr) return;
  st_->drain_all();  // as cudaFreeHost synchronises the device
  std::free(p);
}

void emulated_device::register_host(void* p, std::size_t bytes) {
  const std::lock_guard<std::mutex> lock(st_->m);
  st_->need(p != nullptr && bytes > 0, "register_host", "nullptr or 0 bytes");
  st_->need(st_->find(p) == st_->allocations.end(), "register_host", "device memory cannot be registered");
  st_->need(st_->registered.emplace(p, bytes).second, "register_host", "the pointer is already registered");
  st_->registered_total += bytes;
  ++st_->registrations;
}

void emulated_device::unregister_host(void* p) noexcept {
  const std::lock_guard<std::mutex> lock(st_->m);
  const auto it = st_->registered.find(p);
  if (it == st_->registered.end()) return;
  st_->registered_total -= it->second;
  st_->registered.erase(it);
}

bool emulated_device::holds(const void* p) const {
  const std::lock_guard<std::mutex> lock(st_->m);
  return st_->find(p) != st_->allocations.end();
}

std::unique_ptr<stream> emulated_device::make_stream() {
  std::unique_ptr<stream> s;
  try {
    s = std::make_unique<emulated_stream>(*this, *st_);
  } catch (const std::system_error& e) {  // no thread for its worker
    st_->fail("make_stream", e.what());
  }
  const std::lock_guard<std::mutex> lock(st_->m);
  ++st_->streams_made;
  return s;
}

std::unique_ptr<event> emulated_device::make_event() { return std::make_unique<emulated_event>(*this); }

void emulated_device::record(event& e, stream& s) {
  emulated_stream& es = own_stream(*st_, *this, s, "record");
  emulated_event& ee = any_event(*st_, e, "record");
  st_->need(&ee.owner == this, "record", "the event belongs to another device");
  auto point = std::make_shared<marker>();
  es.queue.push({task::kind::mark, {}, point, 0, {}});
  const std::lock_guard<std::mutex> lock(ee.m);
  ee.latest = std::move(point);
}

void emulated_device::wait(stream& s, event& e) {
  emulated_stream& es = own_stream(*st_, *this, s, "wait");
  emulated_event& ee = any_event(*st_, e, "wait");  // another emulated device's event is fine, as in CUDA
  std::shared_ptr<marker> point;
  {
    const std::lock_guard<std::mutex> lock(ee.m);
    point = ee.latest;  // the point recorded so far: a later record does not move it
  }
  if (point != nullptr) es.queue.push({task::kind::wait, {}, std::move(point), 0, {}});
}

void emulated_device::synchronize(event& e) {
  emulated_event& ee = any_event(*st_, e, "synchronize(event)");
  std::shared_ptr<marker> point;
  {
    const std::lock_guard<std::mutex> lock(ee.m);
    point = ee.latest;
  }
  if (point == nullptr) return;  // never recorded: complete
  const std::string failure = point->wait();
  if (!failure.empty()) throw device_error(failure);
}

void emulated_device::synchronize(stream& s) {
  const std::string failure = own_stream(*st_, *this, s, "synchronize(stream)").queue.drain();
  if (!failure.empty()) throw device_error(failure);
}

void emulated_device::copy_2d(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
                              std::size_t rows, copy_kind kind, stream& s) {
  static constexpr const char* call = "copy_2d";
  emulated_stream& es = own_stream(*st_, *this, s, call);
  const bool empty = rows == 0 || width == 0;
  // Bytes each side spans: rows - 1 pitches and one row, e.g. 3 rows of 40 bytes with pitch 64: 2 * 64 + 40 = 168.
  const auto span = [&](std::size_t pitch) {
    return empty ? 0 : matrix_bytes(std::int64_t(width), std::int64_t(rows), std::int64_t(pitch), 1);
  };
  const std::uint64_t dbytes = span(dpitch), sbytes = span(spitch);
  long nth;
  {
    const std::lock_guard<std::mutex> lock(st_->m);
    st_->need(empty || (width <= dpitch && width <= spitch), call,
              "width " + std::to_string(width) + " is above a pitch (dpitch " + std::to_string(dpitch) + ", spitch " +
                  std::to_string(spitch) + ")");
    st_->need(empty || (dpitch <= st_->opts.max_pitch && spitch <= st_->opts.max_pitch), call,
              "a pitch above the device's " + std::to_string(st_->opts.max_pitch) + " bytes");
    const bool dst_device = kind != copy_kind::device_to_host, src_device = kind != copy_kind::host_to_device;
    if (dst_device) st_->need_device(call, "dst", dst, dbytes);
    else st_->need_host(call, "dst", dst, dbytes);
    if (src_device) st_->need_device(call, "src", src, sbytes);
    else st_->need_host(call, "src", src, sbytes);
    const std::uint64_t bytes = std::uint64_t(width) * rows;
    if (kind == copy_kind::host_to_device) st_->counters.host_to_device += bytes;
    else if (kind == copy_kind::device_to_host) st_->counters.device_to_host += bytes;
    else st_->counters.device_to_device += bytes;
    ++st_->counters.copies;
    nth = st_->copies_made++;
  }
  if (nth == st_->opts.fail_copy) {
    enqueue(*st_, es, call,
            [nth] { throw std::runtime_error("injected failure (fail_copy = " + std::to_string(nth) + ")"); });
    return;
  }
  enqueue(*st_, es, call, [=] {
    for (std::size_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
  });
}

void emulated_device::fill_zero(void* p, std::size_t bytes, stream& s) {
  emulated_stream& es = own_stream(*st_, *this, s, "fill_zero");
  {
    const std::lock_guard<std::mutex> lock(st_->m);
    st_->need_device("fill_zero", "p", p, bytes);
  }
  enqueue_kernel(*st_, es, "fill_zero", [=] {
    if (bytes > 0) std::memset(p, 0, bytes);
  });
}

void emulated_device::gemm(scalar_type t, stream& s, char transa, char transb, std::int64_t m, std::int64_t n,
                           std::int64_t k, const void* alpha, const void* A, std::int64_t lda, const void* B,
                           std::int64_t ldb, const void* beta, void* C, std::int64_t ldc) {
  static constexpr const char* call = "gemm";
  emulated_stream& es = own_stream(*st_, *this, s, call);
  const char ta = upper(transa), tb = upper(transb);
  const std::size_t e = element_size(t);
  {
    const std::lock_guard<std::mutex> lock(st_->m);
    const auto trans_ok = [](char c) { return c == 'N' || c == 'T' || c == 'C'; };
    st_->need(trans_ok(ta) && trans_ok(tb), call, "transa and transb must be N, T or C");
    st_->need(m >= 0 && n >= 0 && k >= 0, call, "m, n and k must be >= 0");
    // Stored shapes: op(A) is m x k, so A is m x k for 'N' and k x m otherwise; B likewise k x n.
    const std::int64_t a_rows = ta == 'N' ? m : k, a_cols = ta == 'N' ? k : m;
    const std::int64_t b_rows = tb == 'N' ? k : n, b_cols = tb == 'N' ? n : k;
    st_->need(lda >= std::max<std::int64_t>(1, a_rows) && ldb >= std::max<std::int64_t>(1, b_rows) &&
                  ldc >= std::max<std::int64_t>(1, m), call, "a leading dimension is below its matrix's rows");
    st_->need(alpha != nullptr && beta != nullptr, call, "alpha and beta must point to host scalars");
    if (m > 0 && n > 0) {
      if (k > 0) {
        st_->need_device(call, "A", A, matrix_bytes(a_rows, a_cols, lda, e));
        st_->need_device(call, "B", B, matrix_bytes(b_rows, b_cols, ldb, e));
      }
      st_->need_device(call, "C", C, matrix_bytes(m, n, ldc, e));
    }
  }
  with_type(t, [&]<class T>() {
    const T a = *static_cast<const T*>(alpha), b = *static_cast<const T*>(beta);  // read now, as CUDA does
    const T *pa = static_cast<const T*>(A), *pb = static_cast<const T*>(B);
    T* pc = static_cast<T*>(C);
    enqueue_kernel(*st_, es, call, [=] {
      if (m > 0 && n > 0) leaf_gemm<T>(leaf_backend::openblas, ta, tb, m, n, k, a, pa, lda, pb, ldb, b, pc, ldc);
    });
  });
}

void emulated_device::rank_k(scalar_type t, bool herm, stream& s, char uplo, char trans, std::int64_t n, std::int64_t k,
                             const void* alpha, const void* A, std::int64_t lda, const void* beta, void* C,
                             std::int64_t ldc) {
  const char* call = herm ? "rank_k (herk)" : "rank_k (syrk)";
  emulated_stream& es = own_stream(*st_, *this, s, call);
  const char ul = upper(uplo), tr = upper(trans);
  const bool complex = is_complex(t);
  herm = herm && complex;  // herk of a real type is syrk
  {
    const std::lock_guard<std::mutex> lock(st_->m);
    st_->need(ul == 'U' || ul == 'L', call, "uplo must be U or L");
    // Real types take N, T or C; complex syrk N or T; complex herk N or C (BLAS's rule).
    st_->need(tr == 'N' || (tr == 'T' && !herm) || (tr == 'C' && (herm || !complex)), call,
              "trans must be N or " + std::string(herm ? "C" : complex ? "T" : "T or C"));
    st_->need(n >= 0 && k >= 0, call, "n and k must be >= 0");
    const std::int64_t a_rows = tr == 'N' ? n : k, a_cols = tr == 'N' ? k : n;  // op(A) is n x k
    st_->need(lda >= std::max<std::int64_t>(1, a_rows) && ldc >= std::max<std::int64_t>(1, n), call,
              "a leading dimension is below its matrix's rows");
    st_->need(alpha != nullptr && beta != nullptr, call, "alpha and beta must point to host scalars");
    if (n > 0) {
      if (k > 0) st_->need_device(call, "A", A, matrix_bytes(a_rows, a_cols, lda, element_size(t)));
      st_->need_device(call, "C", C, matrix_bytes(n, n, ldc, element_size(t)));
    }
  }
  with_type(t, [&]<class T>() {
    using R = decltype(std::abs(T{}));
    // herk: alpha and beta are real, of T's precision.
    const T a = herm ? T(*static_cast<const R*>(alpha)) : *static_cast<const T*>(alpha);
    const T b = herm ? T(*static_cast<const R*>(beta)) : *static_cast<const T*>(beta);
    const T* pa = static_cast<const T*>(A);
    T* pc = static_cast<T*>(C);
    const char tr_blas = !complex && tr == 'C' ? 'T' : tr;
    enqueue_kernel(*st_, es, call, [=] {
      if (n > 0) leaf_rank_k<T>(leaf_backend::openblas, herm, ul, tr_blas, n, k, a, pa, lda, b, pc, ldc);
    });
  });
}

void emulated_device::geam(scalar_type t, stream& s, std::int64_t m, std::int64_t n, const void* alpha, const void* A,
                           std::int64_t lda, const void* beta, const void* B, std::int64_t ldb, void* C,
                           std::int64_t ldc) {
  static constexpr const char* call = "geam";
  emulated_stream& es = own_stream(*st_, *this, s, call);
  st_->need(alpha != nullptr && beta != nullptr, call, "alpha and beta must point to host scalars");
  with_type(t, [&]<class T>() {
    const T a = *static_cast<const T*>(alpha), b = *static_cast<const T*>(beta);
    const std::size_t e = sizeof(T);
    {
      const std::lock_guard<std::mutex> lock(st_->m);
      st_->need(m >= 0 && n >= 0, call, "m and n must be >= 0");
      const std::int64_t least = std::max<std::int64_t>(1, m);
      st_->need(lda >= least && ldb >= least && ldc >= least, call, "a leading dimension is below m");
      st_->need((C != A || lda == ldc) && (C != B || ldb == ldc), call,
                "in place, C's leading dimension must be its operand's");
      if (a != T(0)) st_->need_device(call, "A", A, matrix_bytes(m, n, lda, e));
      if (b != T(0)) st_->need_device(call, "B", B, matrix_bytes(m, n, ldb, e));
      st_->need_device(call, "C", C, matrix_bytes(m, n, ldc, e));
    }
    const T *pa = static_cast<const T*>(A), *pb = static_cast<const T*>(B);
    T* pc = static_cast<T*>(C);
    enqueue_kernel(*st_, es, call, [=] { geam_loops<T>(m, n, a, pa, lda, b, pb, ldb, pc, ldc); });
  });
}

void emulated_device::add_triangle(scalar_type t, stream& s, char uplo, bool herm, std::int64_t n, void* A,
                                   std::int64_t lda, const void* beta, void* C, std::int64_t ldc, void* work) {
  static constexpr const char* call = "add_triangle";
  emulated_stream& es = own_stream(*st_, *this, s, call);
  const char ul = upper(uplo);
  st_->need(beta != nullptr, call, "beta must point to a host scalar");
  with_type(t, [&]<class T>() {
    const T b = *static_cast<const T*>(beta);
    const std::size_t e = sizeof(T);
    {
      const std::lock_guard<std::mutex> lock(st_->m);
      st_->need(ul == 'U' || ul == 'L', call, "uplo must be U or L");
      st_->need(n >= 0 && lda >= std::max<std::int64_t>(1, n) && ldc >= std::max<std::int64_t>(1, n), call,
                "n must be >= 0 and the leading dimensions >= n");
      if (n > 0) {
        st_->need_device(call, "A", A, matrix_bytes(n, n, lda, e));
        st_->need_device(call, "C", C, matrix_bytes(n, n, ldc, e));
        st_->need_device(call, "work", work, std::uint64_t(n) * std::uint64_t(n + 1) / 2 * e);
      }
    }
    T *pa = static_cast<T*>(A), *pc = static_cast<T*>(C), *pw = static_cast<T*>(work);
    enqueue_kernel(*st_, es, call, [=] { add_triangle_loops<T>(ul, herm, n, pa, lda, b, pc, ldc, pw); });
  });
}

link_counters emulated_device::counters() const {
  const std::lock_guard<std::mutex> lock(st_->m);
  return st_->counters;
}

std::size_t emulated_device::registered_bytes() const {
  const std::lock_guard<std::mutex> lock(st_->m);
  return st_->registered_total;
}

std::size_t emulated_device::registrations() const {
  const std::lock_guard<std::mutex> lock(st_->m);
  return st_->registrations;
}

std::size_t emulated_device::allocated_bytes() const {
  const std::lock_guard<std::mutex> lock(st_->m);
  return st_->used;
}

std::size_t emulated_device::streams_made() const {
  const std::lock_guard<std::mutex> lock(st_->m);
  return st_->streams_made;
}

std::size_t emulated_device::live_streams() const {
  const std::lock_guard<std::mutex> lock(st_->queues_m);
  return st_->queues.size();
}

std::size_t emulated_device::pinned_made() const {
  const std::lock_guard<std::mutex> lock(st_->m);
  return st_->pinned_made;
}

}  // namespace prism::detail::gpu
