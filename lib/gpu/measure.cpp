// lib/gpu/measure.cpp — a device's rates, measured on it (measure.hpp).
#include "measure.hpp"

#include <algorithm>
#include <chrono>
#include <complex>
#include <limits>
#include <cstring>
#include <memory>
#include <vector>

namespace prism::detail::gpu {

namespace {

// Memory of a device, released when it goes.
struct held {
  device& dev;
  void* p;
  bool pinned;
  held(device& d, std::size_t bytes, bool pin) : dev(d), p(pin ? d.allocate_pinned(bytes) : d.allocate(bytes)), pinned(pin) {}
  ~held() { pinned ? dev.release_pinned(p) : dev.release(p); }
  held(const held&) = delete;
  held& operator=(const held&) = delete;
};

// Best seconds of `reps` runs of f (each queued on s, then waited for), after one warm-up.
template <class F>
double best_of(device& dev, stream& s, int reps, F&& f) {
  f();
  dev.synchronize(s);
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    dev.synchronize(s);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

template <class T>
double gemm_rate(device& dev, stream& s, int reps, std::int64_t n) {
  const std::size_t bytes = std::size_t(n) * std::size_t(n) * sizeof(T);
  held A(dev, bytes, false), B(dev, bytes, false), C(dev, bytes, false);
  for (void* p : {A.p, B.p, C.p}) dev.fill_zero(p, bytes, s);
  const T one(1), zero(0);
  const double t = best_of(dev, s, reps, [&] {
    dev.gemm(scalar_type_of<T>(), s, 'N', 'N', n, n, n, &one, A.p, n, B.p, n, &zero, C.p, n);
  });
  return gemm_flops(scalar_type_of<T>(), n, n, n) / t;
}

}  // namespace

measured_rates measure(device& dev, int reps, std::size_t copy_bytes, int order) {
  measured_rates r;
  std::unique_ptr<stream> s = dev.make_stream();
  {
    held host(dev, copy_bytes, true), a(dev, copy_bytes, false), b(dev, copy_bytes, false);
    dev.fill_zero(a.p, copy_bytes, *s);
    const double in = best_of(dev, *s, reps, [&] { dev.copy_2d(a.p, copy_bytes, host.p, copy_bytes, copy_bytes, 1, copy_kind::host_to_device, *s); });
    const double out = best_of(dev, *s, reps, [&] { dev.copy_2d(host.p, copy_bytes, a.p, copy_bytes, copy_bytes, 1, copy_kind::device_to_host, *s); });
    const double within = best_of(dev, *s, reps, [&] { dev.copy_2d(b.p, copy_bytes, a.p, copy_bytes, copy_bytes, 1, copy_kind::device_to_device, *s); });
    r.link_in = double(copy_bytes) / in, r.link_out = double(copy_bytes) / out;
    r.memory_bandwidth = 2.0 * double(copy_bytes) / within;  // a copy reads and writes each byte
  }
  {  // pinning ordinary memory: register then unregister, the registration timed
    std::vector<char> host(copy_bytes, 1);
    double best = std::numeric_limits<double>::infinity();
    for (int x = 0; x < reps; ++x) {
      const auto t0 = std::chrono::steady_clock::now();
      dev.register_host(host.data(), copy_bytes);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      dev.unregister_host(host.data());
    }
    r.register_rate = double(copy_bytes) / best;
  }
  r.flops[0] = gemm_rate<float>(dev, *s, reps, order);
  r.flops[1] = gemm_rate<double>(dev, *s, reps, order);
  r.flops[2] = gemm_rate<std::complex<float>>(dev, *s, reps, order / 2);
  r.flops[3] = gemm_rate<std::complex<double>>(dev, *s, reps, order / 2);
  return r;
}

double host_copy_rate(int reps, std::size_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes, 0);
  double best = std::numeric_limits<double>::infinity();
  for (int x = 0; x <= reps; ++x) {  // the first touches the pages
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (x > 0) best = std::min(best, t);
  }
  return double(bytes) / best;
}

}  // namespace prism::detail::gpu
