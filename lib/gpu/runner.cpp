// lib/gpu/runner.cpp — one device's schedule run over host matrices (runner.hpp).
#include "runner.hpp"

#include "reuse.hpp"
#include "../numa/thread_binding.hpp"

#include <prism/machine.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

namespace prism::detail::gpu {

namespace {

// Device or pinned memory (borrowed: reuse.hpp), released when it goes.
struct device_memory {
  device* dev = nullptr;
  void* p = nullptr;
  bool pinned = false;
  device_memory() = default;
  device_memory(device& d, std::size_t bytes, bool pin) : dev(&d), p(pin ? borrow_pinned(d, bytes) : d.allocate(bytes)), pinned(pin) {}
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;
  device_memory(device_memory&& o) noexcept : dev(o.dev), p(o.p), pinned(o.pinned) { o.p = nullptr; }
  ~device_memory() {
    if (p == nullptr) return;
    if (pinned) give_back_pinned(*dev, p);
    else dev->release(p);
  }
};

// A ring of pinned staging buffers, each with the event of the last copy that used it.
struct ring {
  std::vector<device_memory> buffers;
  std::vector<std::unique_ptr<event>> done;
  int next = 0;
  ring(device& d, int count, std::size_t bytes) {
    for (int r = 0; r < count; ++r) {
      buffers.emplace_back(d, bytes, true);
      done.push_back(d.make_event());
    }
  }
  // The next buffer in turn.
  int take() {
    const int r = next;
    next = (next + 1) % int(buffers.size());
    return r;
  }
};

// The host's topology, for binding staging threads to a device's domain; nullptr when it
// cannot be had (a bad PRISM_TOPOLOGY: the threads then run unbound).
const topology* host_topology() noexcept {
  try {
    return &default_description().topo();
  } catch (...) {
    return nullptr;
  }
}

// A binding of the calling thread to `domain` of t for a scope, or nothing without t.
struct near_device {
  std::unique_ptr<domain_binding> b;
  near_device(const topology* t, int domain) {
    if (t != nullptr) b = std::make_unique<domain_binding>(*t, domain);
  }
};

// Host threads that share the packing of one direction's pieces: the driving thread and
// `threads - 1` helpers of its own, each bound to the device's NUMA domain (the pinned
// buffers they fill are first touched there, and the host memory they read is the caller's).
// Not oneTBB's: a driving thread blocks on the device, and a blocked thread must never hold
// an arena slot another one waits for.
class packers {
 public:
  packers(int threads, const topology* t, int domain) {
    try {
      for (int k = 1; k < threads; ++k) helpers_.emplace_back([this, t, domain] {
          const near_device bound(t, domain);
          serve();
        });
    } catch (...) {  // the helpers already started leave before the exception does
      stop();
      throw;
    }
  }
  ~packers() { stop(); }
  packers(const packers&) = delete;
  packers& operator=(const packers&) = delete;

  // Runs f(c0, c1) over columns [0, cols) of a piece in equal runs, one a thread, when the
  // piece is large enough to share (a copy of less than 1 MiB costs less than waking them).
  template <class F>
  void columns(std::int64_t cols, std::size_t bytes, F&& f) {
    const std::int64_t parts = std::min<std::int64_t>(std::int64_t(helpers_.size()) + 1, cols);
    if (parts < 2 || bytes < (std::size_t(1) << 20)) return f(std::int64_t(0), cols);
    std::function<void(std::int64_t)> job = [&](std::int64_t part) { f(cols * part / parts, cols * (part + 1) / parts); };
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &job, parts_ = parts, next_ = 1, running_ = parts - 1;
    }
    cv_.notify_all();
    job(0);
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return running_ == 0; });
    job_ = nullptr;
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return done_ || (job_ != nullptr && next_ < parts_); });
      if (done_) return;
      const std::int64_t part = next_++;
      const std::function<void(std::int64_t)>* job = job_;
      lock.unlock();
      (*job)(part);
      lock.lock();
      if (--running_ == 0) idle_.notify_all();
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : helpers_) t.join();
    helpers_.clear();
  }

  std::vector<std::thread> helpers_;
  std::mutex mu_;
  std::condition_variable cv_, idle_;
  const std::function<void(std::int64_t)>* job_ = nullptr;
  std::int64_t parts_ = 0, next_ = 0, running_ = 0;
  bool done_ = false;
};

// Whether element (r, c) of a diagonal block belongs to its triangle ('U': r <= c, 'L':
// r >= c; 0: every element).
inline bool in_triangle(char tri, std::int64_t r, std::int64_t c) {
  return tri == 0 || (tri == 'U' ? r <= c : r >= c);
}

template <class T>
T real_part(const T& x) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) return x;
  else return T(x.real(), 0);
}

template <scalar T>
class schedule_run {
 public:
  schedule_run(device& d, const device_schedule& s, host_matrix<const T> a, host_matrix<const T> b, host_matrix<T> c,
               T alpha, T beta, bool herm, const staging& st, const bool (&direct)[2])
      : dev_(d), s_(s), A_(a), B_(b), C_(c), alpha_(alpha), beta_(beta), herm_(herm), st_(st), direct_{direct[0], direct[1]} {
    // A staging buffer need not be larger than the largest region a piece comes from (a
    // chunk's slot or a C block): a small call pins kilobytes, not st.bytes.
    const std::size_t largest = std::max(s_.slot_bytes, std::size_t(s_.c_ld) * std::size_t(s_.c_cols) * sizeof(T));
    st_.bytes = std::min(st_.bytes, std::max<std::size_t>(64, (largest + 63) / 64 * 64));
    allocate();
  }

  run_outcome run() {
    outcome_.written.assign(s_.visits.size(), 0);
    const near_device bound(topo_, dev_.numa_domain());  // this thread issues the copies in
    std::thread down;
    try {
      down = std::thread([this] {
        const near_device bound_too(topo_, dev_.numa_domain());
        download_all();
      });
    } catch (const std::system_error& e) {  // nothing of C touched yet
      throw device_error(std::string("cannot start the write-back thread: ") + e.what());
    }
    try {
      for (std::size_t v = 0; v < s_.visits.size() && !stopped(); ++v) upload(int(v));
    } catch (const std::exception& e) {
      fail(e.what());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      uploads_done_ = true;
    }
    cv_.notify_all();
    down.join();
    drain();
    return std::move(outcome_);
  }

 private:
  void allocate() {
    const std::size_t cbuf = std::size_t(s_.c_ld) * std::size_t(s_.c_cols) * sizeof(T);
    for (int b = 0; b < s_.buffers; ++b) cbuf_.emplace_back(dev_, cbuf, false);
    slots_ = std::make_unique<device_memory>(dev_, std::max<std::size_t>(1, std::size_t(s_.slots) * s_.slot_bytes), false);
    in_ring_ = std::make_unique<ring>(dev_, st_.buffers, st_.bytes);
    out_ring_ = std::make_unique<ring>(dev_, st_.buffers, st_.bytes);
    try {
      pack_in_ = std::make_unique<packers>(std::max(1, st_.threads), topo_, dev_.numa_domain());
      pack_out_ = std::make_unique<packers>(std::max(1, st_.threads), topo_, dev_.numa_domain());
    } catch (const std::system_error& e) {
      throw device_error(std::string("cannot start the staging threads: ") + e.what());
    }
    in_ = borrow_stream(dev_), compute_ = borrow_stream(dev_), out_ = borrow_stream(dev_);
    for (int x = 0; x < s_.slots; ++x) ready_.push_back(dev_.make_event()), freed_.push_back(dev_.make_event());
    for (int b = 0; b < s_.buffers; ++b) c_done_.push_back(dev_.make_event()), c_out_.push_back(dev_.make_event());
    c_loaded_ = dev_.make_event();
  }

  T* buffer(int b) const { return static_cast<T*>(cbuf_[std::size_t(b)].p); }
  T* slot(int x) const { return static_cast<T*>(slots_->p) + std::size_t(x) * (s_.slot_bytes / sizeof(T)); }
  const host_matrix<const T>& matrix(matrix_id id) const { return id == matrix_id::a ? A_ : B_; }

  // ---- the caller's thread: copies in and products ----

  void upload(int v) {
    const visit& vi = s_.visits[std::size_t(v)];
    for (std::size_t p = 0; p < vi.products.size(); ++p) {
      const product& pr = vi.products[p];
      for (const chunk_copy& c : pr.copies) copy_chunk(c);
      if (p == 0) claim_buffer(v);
      dev_.wait(*compute_, *ready_[std::size_t(pr.a_slot)]);
      dev_.wait(*compute_, *ready_[std::size_t(pr.b_slot)]);
      const T one(1);
      const std::int64_t ta_ld = pr.a_ld, tb_ld = pr.b_ld;
      dev_.gemm(s_.shape.type, *compute_, s_.shape.transa, s_.shape.transb, pr.m, pr.n, pr.k, &alpha_, slot(pr.a_slot),
                ta_ld, slot(pr.b_slot), tb_ld, pr.first ? &beta_ : &one, buffer(vi.buffer) + pr.ci + pr.cj * s_.c_ld, s_.c_ld);
      dev_.record(*freed_[std::size_t(pr.a_slot)], *compute_);
      dev_.record(*freed_[std::size_t(pr.b_slot)], *compute_);
    }
    dev_.record(*c_done_[std::size_t(vi.buffer)], *compute_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_.push_back(v);
    }
    cv_.notify_all();
  }

  // Before visit v's first product: its C buffer's last write-back has been issued (and the
  // device waits for it to finish), and the block is loaded when the schedule says so.
  void claim_buffer(int v) {
    const visit& vi = s_.visits[std::size_t(v)];
    const int previous = v - s_.buffers;  // the visit that used this buffer last
    if (previous >= 0 || vi.previous >= 0) {
      // The buffer's last write-back must be issued; and a later visit of a block reads the
      // block's partial sums from C, so the block's last visit must have landed there whole.
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return (issued_ > previous && landed_ > vi.previous) || stop_; });
      if (stop_) throw device_error("stopped: the write-back side failed");
    }
    if (!vi.load) {
      dev_.wait(*compute_, *c_out_[std::size_t(vi.buffer)]);
      return;
    }
    dev_.wait(*in_, *c_out_[std::size_t(vi.buffer)]);
    for (const region& pc : pieces(vi.c.rows, vi.c.cols, sizeof(T), st_.bytes)) {
      T* staged = stage_in();
      pack_c(vi, pc, staged);
      T* to = buffer(vi.buffer) + pc.row + pc.col * s_.c_ld;
      dev_.copy_2d(to, std::size_t(s_.c_ld) * sizeof(T), staged, std::size_t(pc.rows) * sizeof(T),
                   std::size_t(pc.rows) * sizeof(T), std::size_t(pc.cols), copy_kind::host_to_device, *in_);
      dev_.record(*in_ring_->done[std::size_t(last_in_)], *in_);
    }
    dev_.record(*c_loaded_, *in_);
    dev_.wait(*compute_, *c_loaded_);
  }

  // A staging buffer free of its last copy (the host waits for it), for the in stream.
  T* stage_in() {
    last_in_ = in_ring_->take();
    dev_.synchronize(*in_ring_->done[std::size_t(last_in_)]);
    return static_cast<T*>(in_ring_->buffers[std::size_t(last_in_)].p);
  }

  // One chunk into its slot (packed, leading dimension its rows), piece by piece through the
  // ring, after the products that read the slot's previous chunk.
  void copy_chunk(const chunk_copy& c) {
    dev_.wait(*in_, *freed_[std::size_t(c.slot)]);
    const host_matrix<const T>& m = matrix(c.from.matrix);
    if (direct_[c.from.matrix == matrix_id::a ? 0 : 1]) {  // pinned caller memory: one pitched copy
      dev_.copy_2d(slot(c.slot), std::size_t(c.from.rows) * sizeof(T), m.at(c.from.row, c.from.col),
                   std::size_t(m.ld) * sizeof(T), std::size_t(c.from.rows) * sizeof(T), std::size_t(c.from.cols),
                   copy_kind::host_to_device, *in_);
      dev_.record(*ready_[std::size_t(c.slot)], *in_);
      return;
    }
    for (const region& pc : pieces(c.from.rows, c.from.cols, sizeof(T), st_.bytes)) {
      T* staged = stage_in();
      const std::size_t column = std::size_t(pc.rows) * sizeof(T);
      pack_in_->columns(pc.cols, column * std::size_t(pc.cols), [&](std::int64_t c0, std::int64_t c1) {
        for (std::int64_t j = c0; j < c1; ++j)
          std::memcpy(staged + j * pc.rows, m.at(c.from.row + pc.row, c.from.col + pc.col + j), column);
      });
      T* to = slot(c.slot) + pc.row + pc.col * c.from.rows;
      dev_.copy_2d(to, std::size_t(c.from.rows) * sizeof(T), staged, column, column, std::size_t(pc.cols),
                   copy_kind::host_to_device, *in_);
      dev_.record(*in_ring_->done[std::size_t(last_in_)], *in_);
    }
    dev_.record(*ready_[std::size_t(c.slot)], *in_);
  }

  // Packs piece pc of visit vi's C block: its triangle only for a diagonal block (zeros
  // elsewhere), a herk diagonal with its imaginary part 0 (herk reads only the real part).
  void pack_c(const visit& vi, const region& pc, T* staged) const {
    pack_in_->columns(pc.cols, std::size_t(pc.rows * pc.cols) * sizeof(T), [&](std::int64_t c0, std::int64_t c1) {
      for (std::int64_t j = c0; j < c1; ++j) {
        const std::int64_t col = pc.col + j;
        T* to = staged + j * pc.rows;
        const T* from = C_.at(vi.c.row + pc.row, vi.c.col + col);
        for (std::int64_t i = 0; i < pc.rows; ++i) {
          const std::int64_t row = pc.row + i;
          if (!in_triangle(vi.triangle, row, col)) to[i] = T(0);
          else to[i] = herm_ && vi.triangle != 0 && row == col ? real_part(from[i]) : from[i];
        }
      }
    });
  }

  // ---- the write-back thread ----

  void download_all() {
    try {
      for (std::size_t v = 0; v < s_.visits.size(); ++v) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return !finished_.empty() || uploads_done_ || stop_; });
          if (finished_.empty()) return;
          finished_.pop_front();
        }
        download(int(v));
      }
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }

  // Visit v's block out through the ring: up to `buffers` pieces in flight, each unpacked
  // into C as it lands; then its C buffer is free once those copies have run.
  void download(int v) {
    const visit& vi = s_.visits[std::size_t(v)];
    dev_.wait(*out_, *c_done_[std::size_t(vi.buffer)]);
    std::deque<std::pair<int, region>> flight;
    bool touched = false;
    auto land = [&] {
      auto [r, pc] = flight.front();
      flight.pop_front();
      dev_.synchronize(*out_ring_->done[std::size_t(r)]);
      touched = true;
      unpack(vi, pc, static_cast<const T*>(out_ring_->buffers[std::size_t(r)].p));
    };
    try {
      const std::vector<region> all = pieces(vi.c.rows, vi.c.cols, sizeof(T), st_.bytes);
      for (std::size_t x = 0; x < all.size(); ++x) {
        if (int(flight.size()) == st_.buffers) land();
        const region& pc = all[x];
        const int r = out_ring_->take();
        const T* from = buffer(vi.buffer) + pc.row + pc.col * s_.c_ld;
        dev_.copy_2d(out_ring_->buffers[std::size_t(r)].p, std::size_t(pc.rows) * sizeof(T), from,
                     std::size_t(s_.c_ld) * sizeof(T), std::size_t(pc.rows) * sizeof(T), std::size_t(pc.cols),
                     copy_kind::device_to_host, *out_);
        dev_.record(*out_ring_->done[std::size_t(r)], *out_);
        flight.emplace_back(r, pc);
        if (x + 1 == all.size()) issued(v);
      }
      while (!flight.empty()) land();
    } catch (...) {
      if (touched) outcome_.torn = v;
      throw;
    }
    outcome_.written[std::size_t(v)] = 1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      landed_ = v + 1;
    }
    cv_.notify_all();
  }

  // Visit v's last write-back copy is issued: its buffer's event marks it.
  void issued(int v) {
    dev_.record(*c_out_[std::size_t(s_.visits[std::size_t(v)].buffer)], *out_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      issued_ = v + 1;
    }
    cv_.notify_all();
  }

  // Writes piece pc of the staged block into C: the triangle only for a diagonal block, a
  // herk diagonal real.
  void unpack(const visit& vi, const region& pc, const T* staged) {
    pack_out_->columns(pc.cols, std::size_t(pc.rows * pc.cols) * sizeof(T), [&](std::int64_t c0, std::int64_t c1) {
      for (std::int64_t j = c0; j < c1; ++j) {
        const std::int64_t col = pc.col + j;
        const T* from = staged + j * pc.rows;
        T* to = C_.at(vi.c.row + pc.row, vi.c.col + col);
        if (vi.triangle == 0) {
          std::memcpy(to, from, std::size_t(pc.rows) * sizeof(T));
          continue;
        }
        for (std::int64_t i = 0; i < pc.rows; ++i) {
          const std::int64_t row = pc.row + i;
          if (in_triangle(vi.triangle, row, col)) to[i] = herm_ && row == col ? real_part(from[i]) : from[i];
        }
      }
    });
  }

  // ---- failures ----

  bool stopped() {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_;
  }

  void fail(const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (outcome_.ok) outcome_.ok = false, outcome_.error = what;
      stop_ = true;
    }
    cv_.notify_all();
  }

  // Waits for every stream (their errors were reported where they surfaced).
  void drain() {
    for (stream* s : {in_.get(), compute_.get(), out_.get()}) {
      try {
        dev_.synchronize(*s);
      } catch (const std::exception& e) {
        fail(e.what());
      }
    }
  }

  device& dev_;
  const topology* topo_ = host_topology();
  const device_schedule& s_;
  host_matrix<const T> A_, B_;
  host_matrix<T> C_;
  T alpha_, beta_;
  bool herm_;
  staging st_;
  bool direct_[2];  // A's, B's chunks copied straight from the caller's pinned memory
  // Memory first: the streams, declared after it, are destroyed (drained) before it goes.
  std::vector<device_memory> cbuf_;
  std::unique_ptr<device_memory> slots_;
  std::unique_ptr<ring> in_ring_, out_ring_;
  std::unique_ptr<packers> pack_in_, pack_out_;
  borrowed_stream in_, compute_, out_;
  std::vector<std::unique_ptr<event>> ready_, freed_, c_done_, c_out_;
  std::unique_ptr<event> c_loaded_;
  int last_in_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int> finished_;  // visits whose products are issued, for the write-back thread
  int issued_ = 0;            // visits whose write-back copies are issued
  int landed_ = 0;            // visits written back into C whole
  bool uploads_done_ = false, stop_ = false;
  run_outcome outcome_;
};

}  // namespace

bool should_register(double sent, double held, int threads, double host_copy, double link, double register_rate) {
  if (!(sent > 0) || !(held > 0)) return false;
  const double ring = sent / std::min(link, std::max(1, threads) * host_copy);
  const double pinned = held / register_rate + sent / link;
  return pinned < ring;
}

namespace {

// The caller's memory a schedule reads of host matrix `which` (0: A, 1: B): from the first
// to the last element its chunks touch, column-major with its leading dimension. E.g.
// chunks at rows 0-9 of columns 2-3 and rows 5-9 of column 7, ld 100: elements 200 to 709.
template <class T>
std::pair<const T*, std::size_t> span_read(const device_schedule& s, const host_matrix<const T>& m, matrix_id which) {
  const T* lo = nullptr;
  const T* hi = nullptr;
  for (const visit& v : s.visits)
    for (const product& p : v.products)
      for (const chunk_copy& c : p.copies) {
        if (c.from.matrix != which) continue;
        const T* first = m.at(c.from.row, c.from.col);
        const T* last = m.at(c.from.row + c.from.rows - 1, c.from.col + c.from.cols - 1) + 1;
        lo = lo == nullptr ? first : std::min(lo, first), hi = hi == nullptr ? last : std::max(hi, last);
      }
  return {lo, lo == nullptr ? 0 : std::size_t(hi - lo) * sizeof(T)};
}

// The caller's matrices the model says to pin (should_register), pinned for the run's
// length; one the device cannot register goes through the ring after all.
template <class T>
struct registrations {
  device& dev;
  std::vector<void*> held;
  bool direct[2] = {false, false};
  registrations(device& d, const device_schedule& s, const host_matrix<const T>& A, const host_matrix<const T>& B,
                const staging& st)
      : dev(d) {
    held.reserve(2);  // so that keeping a registration cannot throw once it is made
    for (int x = 0; x < (s.shape.rank_k ? 1 : 2); ++x) {  // a rank-k update reads B's chunks from A
      const matrix_id id = x == 0 ? matrix_id::a : matrix_id::b;
      const auto [p, bytes] = span_read<T>(s, x == 0 ? A : B, id);
      double sent = 0;
      for (const visit& v : s.visits)
        for (const product& pr : v.products)
          for (const chunk_copy& c : pr.copies) sent += c.from.matrix == id ? double(c.from.size()) * sizeof(T) : 0.0;
      if (bytes == 0 || !should_register(sent, double(bytes), st.threads, st.host_copy, st.link_in, st.register_rate)) continue;
      // Copied straight from the caller's memory, its leading dimension is the copies' pitch.
      if (std::size_t((x == 0 ? A : B).ld) * sizeof(T) > dev.max_pitch()) continue;
      try {
        dev.register_host(const_cast<T*>(p), bytes);
        held.push_back(const_cast<T*>(p));
        direct[x] = true;
      } catch (const device_error&) {
        // not pinned: the ring it is
      }
    }
  }
  ~registrations() {
    for (void* p : held) dev.unregister_host(p);
  }
  registrations(const registrations&) = delete;
  registrations& operator=(const registrations&) = delete;
};

}  // namespace

template <scalar T>
run_outcome run_schedule(device& dev, const device_schedule& s, host_matrix<const T> A, host_matrix<const T> B,
                         host_matrix<T> C, T alpha, T beta, bool herm, const staging& st) {
  if (s.visits.empty()) return run_outcome{};
  registrations<T> pinned(dev, s, A, B, st);  // unpinned after the run has drained (declared first)
  schedule_run<T> run(dev, s, A, B, C, alpha, beta, herm, st, pinned.direct);  // throws device_error with C untouched
  return run.run();
}

#define PRISM_INSTANTIATE(T)                                                                                       \
  template run_outcome run_schedule<T>(device&, const device_schedule&, host_matrix<const T>, host_matrix<const T>, \
                                       host_matrix<T>, T, T, bool, const staging&);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism::detail::gpu
