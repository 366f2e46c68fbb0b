// tests/test_gpu_device.cpp — the emulated device (lib/gpu/emulated_device.hpp) against the
// device contract (lib/gpu/device.hpp): work on a stream in order, events across streams
// under random delays, 2-D copies with pitches and odd sizes, exact byte counters, the
// capacity limit, injected failures surfacing at the right synchronize without a hang,
// gemm / syrk / herk / geam for the four types against plain loops (exact on small
// integers), beta = 0 over NaN, the checks that catch a scheduler's bad call; PRISM_GPU's
// parser and the process's devices (two cases run by their own ctest entries, with
// PRISM_GPU set: test_gpu_device_process_emulate and test_gpu_device_process_off).
// Internal: reads lib/gpu and lib/environment.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "environment/environment.hpp"
#include "gpu/bytes_text.hpp"
#include "gpu/devices.hpp"
#include "gpu/emulated_device.hpp"
#include "support/reference.hpp"

#include <prism/context.hpp>

#include <atomic>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

using namespace prism;
using namespace prism::detail::gpu;
using prism::test::conj_if;
using prism::test::real_t;

namespace {

constexpr std::size_t MiB = std::size_t(1) << 20;

// One emulated device of `bytes` (its set keeps it alive as long as the pointer).
std::shared_ptr<device> one_device(std::size_t bytes = 64 * MiB, const emulation_options& opts = {}) {
  return emulated_devices(1, bytes, opts)->devices[0];
}

emulation_options with_delays(unsigned max_us = 200) {
  emulation_options o;
  o.delay_seed = 12345;
  o.max_delay_us = max_us;
  return o;
}

// Small integer values (both parts for complex), different for each seed: products and sums
// of a few hundred stay exact in every type.
template <class T>
T small_value(std::size_t i, int seed) {
  const int re = int((i * 7 + std::size_t(seed) * 3) % 9) - 4;
  if constexpr (test::is_complex_v<T>) return T(real_t<T>(re), real_t<T>(int((i * 5 + std::size_t(seed)) % 7) - 3));
  else return T(re);
}

// re + im i for complex T, re for real T.
template <class T>
T scalar_of(int re, int im) {
  if constexpr (test::is_complex_v<T>) return T(real_t<T>(re), real_t<T>(im));
  else return T(re);
}

template <class T>
std::vector<T> small_values(std::size_t n, int seed) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = small_value<T>(i, seed);
  return v;
}

// A column-major matrix's storage on the device, filled from and read back to host vectors
// of the same leading dimension (one copy_2d: rows = columns, width = a column's bytes).
template <class T>
struct device_matrix {
  device& d;
  std::int64_t rows, cols, ld;
  T* p;
  device_matrix(device& d, std::int64_t rows, std::int64_t cols, std::int64_t ld)
      : d(d), rows(rows), cols(cols), ld(ld), p(static_cast<T*>(d.allocate(std::size_t(ld * cols) * sizeof(T)))) {}
  ~device_matrix() { d.release(p); }
  void put(const std::vector<T>& h, stream& s) {
    d.copy_2d(p, ld * sizeof(T), h.data(), ld * sizeof(T), rows * sizeof(T), std::size_t(cols), copy_kind::host_to_device, s);
  }
  void get(std::vector<T>& h, stream& s) {
    d.copy_2d(h.data(), ld * sizeof(T), p, ld * sizeof(T), rows * sizeof(T), std::size_t(cols), copy_kind::device_to_host, s);
  }
};

// op(X)(i, l) of a column-major X with leading dimension ld: X(i, l), X(l, i) or conj(X(l, i)).
template <class T>
T op_at(const std::vector<T>& X, std::int64_t ld, char trans, std::int64_t i, std::int64_t l) {
  if (trans == 'N') return X[std::size_t(i + l * ld)];
  const T v = X[std::size_t(l + i * ld)];
  return trans == 'C' ? conj_if(v) : v;
}

}  // namespace

TEST_CASE("work on one stream runs in order, also under random delays") {
  auto d = one_device(64 * MiB, with_delays());
  auto s = d->make_stream();
  const std::size_t n = 1000;
  auto* buf = static_cast<int*>(d->allocate(n * sizeof(int)));
  // 50 copies into the same device buffer, each of other values: the last one wins.
  std::vector<std::vector<int>> sources(50, std::vector<int>(n));
  for (int r = 0; r < 50; ++r)
    for (std::size_t i = 0; i < n; ++i) sources[std::size_t(r)][i] = r * 10000 + int(i);
  for (int r = 0; r < 50; ++r)
    d->copy_2d(buf, n * sizeof(int), sources[std::size_t(r)].data(), n * sizeof(int), n * sizeof(int), 1,
               copy_kind::host_to_device, *s);
  std::vector<int> back(n, -1);
  d->copy_2d(back.data(), n * sizeof(int), buf, n * sizeof(int), n * sizeof(int), 1, copy_kind::device_to_host, *s);
  d->synchronize(*s);
  CHECK(back == sources.back());
  d->release(buf);
}

TEST_CASE("a consumer stream waiting on a producer's event sees its data (random delays, many rounds)") {
  auto d = one_device(64 * MiB, with_delays(300));
  auto producer = d->make_stream(), consumer = d->make_stream();
  auto ready = d->make_event();
  const std::size_t n = 256;
  auto* buf = static_cast<double*>(d->allocate(n * sizeof(double)));
  auto* twice = static_cast<double*>(d->allocate(n * sizeof(double)));
  std::vector<double> in(n), out(n);
  int wrong = 0;
  for (int round = 0; round < 150; ++round) {
    for (std::size_t i = 0; i < n; ++i) in[i] = round * 1000.0 + double(i);
    d->fill_zero(buf, n * sizeof(double), *producer);
    d->copy_2d(buf, n * 8, in.data(), n * 8, n * 8, 1, copy_kind::host_to_device, *producer);
    d->record(*ready, *producer);
    d->wait(*consumer, *ready);
    const double two = 2, zero = 0;  // twice = 2 buf (+ 0 buf), on the consumer
    d->geam(scalar_type::d, *consumer, std::int64_t(n), 1, &two, buf, std::int64_t(n), &zero, buf, std::int64_t(n), twice,
            std::int64_t(n));
    d->copy_2d(out.data(), n * 8, twice, n * 8, n * 8, 1, copy_kind::device_to_host, *consumer);
    d->synchronize(*consumer);
    for (std::size_t i = 0; i < n; ++i) wrong += out[i] != 2 * in[i];
    // The producer must not overwrite `in` while its copy may still be queued: wait for it.
    d->synchronize(*ready);
  }
  CHECK(wrong == 0);
  d->release(buf);
  d->release(twice);
}

TEST_CASE("events: a never recorded one is complete; wait takes the point recorded when called") {
  auto d = one_device();
  auto s = d->make_stream(), t = d->make_stream();
  auto e = d->make_event();
  d->synchronize(*e);  // never recorded: returns at once
  d->wait(*t, *e);     // nothing to wait for: a no-op
  d->synchronize(*t);
  auto* buf = static_cast<int*>(d->allocate(4 * sizeof(int)));
  const std::vector<int> a{1, 2, 3, 4};
  std::vector<int> back(4, 0);
  d->copy_2d(buf, 16, a.data(), 16, 16, 1, copy_kind::host_to_device, *s);
  d->record(*e, *s);
  d->wait(*t, *e);
  d->record(*e, *s);  // a later record: t still waits for the first point only
  d->copy_2d(back.data(), 16, buf, 16, 16, 1, copy_kind::device_to_host, *t);
  d->synchronize(*t);
  d->synchronize(*e);
  CHECK(back == a);
  d->release(buf);
}

TEST_CASE("copy_2d with pitches and odd sizes, and exact byte counters") {
  auto d = one_device(16 * MiB, with_delays(50));
  auto s = d->make_stream();
  // A 29 x 17 block at (3, 2) of a host matrix 37 x 23 (ld 41) to a device matrix with
  // ld 31, then device to device into ld 29, then back to a host matrix with ld 30.
  const std::int64_t hld = 41, rows = 29, cols = 17;
  std::vector<double> host = small_values<double>(std::size_t(hld * 23), 1);
  auto* d1 = static_cast<double*>(d->allocate(31 * cols * 8));
  auto* d2 = static_cast<double*>(d->allocate(29 * cols * 8));
  std::vector<double> back(std::size_t(30 * cols), -99.0);
  const double* block = host.data() + 3 + 2 * hld;
  d->copy_2d(d1, 31 * 8, block, hld * 8, rows * 8, cols, copy_kind::host_to_device, *s);
  d->copy_2d(d2, 29 * 8, d1, 31 * 8, rows * 8, cols, copy_kind::device_to_device, *s);
  d->copy_2d(back.data(), 30 * 8, d2, 29 * 8, rows * 8, cols, copy_kind::device_to_host, *s);
  // An odd byte width: 13 bytes of each of 5 rows, pitches 16 and 19.
  std::vector<unsigned char> bytes_in(5 * 19), bytes_out(5 * 16, 0xAB);
  for (std::size_t i = 0; i < bytes_in.size(); ++i) bytes_in[i] = static_cast<unsigned char>(i);
  auto* d3 = static_cast<unsigned char*>(d->allocate(5 * 16));
  d->copy_2d(d3, 16, bytes_in.data(), 19, 13, 5, copy_kind::host_to_device, *s);
  d->copy_2d(bytes_out.data(), 16, d3, 16, 13, 5, copy_kind::device_to_host, *s);
  d->copy_2d(d3, 16, bytes_in.data(), 19, 13, 0, copy_kind::host_to_device, *s);  // nothing: 0 rows
  d->synchronize(*s);
  bool same = true;
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < 30; ++i)
      same &= back[std::size_t(i + j * 30)] == (i < rows ? block[i + j * hld] : -99.0);  // row 29 untouched
  CHECK(same);
  for (std::size_t r = 0; r < 5; ++r)
    for (std::size_t c = 0; c < 16; ++c) CHECK(bytes_out[r * 16 + c] == (c < 13 ? bytes_in[r * 19 + c] : 0xAB));
  const link_counters k = d->counters();
  CHECK(k.host_to_device == std::uint64_t(rows * 8 * cols + 13 * 5));
  CHECK(k.device_to_device == std::uint64_t(rows * 8 * cols));
  CHECK(k.device_to_host == std::uint64_t(rows * 8 * cols + 13 * 5));
  CHECK(k.copies == 6);
  CHECK(k.kernels == 0);
  d->fill_zero(d3, 80, *s);
  d->synchronize(*s);
  CHECK(d->counters().kernels == 1);
  d->release(d1);
  d->release(d2);
  d->release(d3);
}

TEST_CASE("the capacity limit: an allocation that does not fit throws out_of_memory") {
  auto d = one_device(1 * MiB);
  auto& e = dynamic_cast<emulated_device&>(*d);
  void* a = d->allocate(600 * 1024);
  CHECK(e.allocated_bytes() == 600 * 1024);
  bool oom = false;
  try {
    d->allocate(500 * 1024);
  } catch (const device_error& x) {
    oom = x.out_of_memory();
    CHECK(std::string(x.what()).find("emulated device 0 (1.00 MiB)") != std::string::npos);
  }
  CHECK(oom);
  void* b = d->allocate(1 * MiB - 600 * 1024);  // exactly what is left
  CHECK(e.allocated_bytes() == 1 * MiB);
  d->release(a);
  void* c = d->allocate(500 * 1024);
  CHECK(c != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(c) % 64 == 0);
  CHECK(d->allocate(0) == nullptr);
  d->release(b);
  d->release(c);
  CHECK(e.allocated_bytes() == 0);
  // Pinned memory is not counted against the capacity.
  void* pinned = d->allocate_pinned(4 * MiB);
  CHECK(pinned != nullptr);
  CHECK(!d->holds(pinned));
  d->release_pinned(pinned);
}

TEST_CASE("fail_allocation: the n-th allocation throws out_of_memory, the others succeed") {
  emulation_options o;
  o.fail_allocation = 2;
  auto d = one_device(8 * MiB, o);
  void* p0 = d->allocate(1024);
  void* p1 = d->allocate(1024);
  bool oom = false;
  try {
    d->allocate(1024);
  } catch (const device_error& x) {
    oom = x.out_of_memory();
  }
  CHECK(oom);
  void* p3 = d->allocate(1024);
  CHECK((p0 && p1 && p3));
  for (void* p : {p0, p1, p3}) d->release(p);
}

TEST_CASE("fail_copy: the failure surfaces at the stream's and a later event's synchronize, with no hang") {
  emulation_options o = with_delays(100);
  o.fail_copy = 1;
  auto d = one_device(8 * MiB, o);
  auto s = d->make_stream(), other = d->make_stream();
  auto before = d->make_event(), after = d->make_event();
  auto* buf = static_cast<int*>(d->allocate(64));
  const std::vector<int> a(16, 7), b(16, 9);
  std::vector<int> back(16, 0), back_other(16, 0);
  d->copy_2d(buf, 64, a.data(), 64, 64, 1, copy_kind::host_to_device, *s);  // copy 0: runs
  d->record(*before, *s);
  d->copy_2d(buf, 64, b.data(), 64, 64, 1, copy_kind::host_to_device, *s);  // copy 1: fails (no throw here)
  d->copy_2d(back.data(), 64, buf, 64, 64, 1, copy_kind::device_to_host, *s);  // skipped
  d->record(*after, *s);
  CHECK_NOTHROW(d->synchronize(*before));  // recorded before the failure
  CHECK_THROWS_WITH_AS(d->synchronize(*after), doctest::Contains("emulated device 0 (8.00 MiB): copy_2d: injected failure"),
                       device_error);
  CHECK_THROWS_WITH_AS(d->synchronize(*s), doctest::Contains("copy_2d"), device_error);
  CHECK_THROWS_AS(d->synchronize(*s), device_error);  // sticky
  CHECK(back == std::vector<int>(16, 0));             // later work was skipped
  // Another stream is not affected while it does not depend on the failed one.
  d->copy_2d(back_other.data(), 64, buf, 64, 64, 1, copy_kind::device_to_host, *other);
  CHECK_NOTHROW(d->synchronize(*other));
  CHECK(back_other == a);  // the failed copy wrote nothing
  // A stream that waits on a point after the failure has no inputs it can trust: it fails
  // too, its later work skipped (a write-back waiting for a failed copy never runs).
  auto third = d->make_stream();
  std::vector<int> back_third(16, 0);
  d->wait(*third, *after);
  d->copy_2d(back_third.data(), 64, buf, 64, 64, 1, copy_kind::device_to_host, *third);
  CHECK_THROWS_WITH_AS(d->synchronize(*third), doctest::Contains("copy_2d: injected failure"), device_error);
  CHECK(back_third == std::vector<int>(16, 0));
  // Waiting on a point before the failure is fine.
  d->wait(*other, *before);
  CHECK_NOTHROW(d->synchronize(*other));
  CHECK(d->counters().copies == 5);
  s.reset();  // destroying the failed stream does not hang
  d->release(buf);
}

TEST_CASE("destroying a stream and releasing memory drain the work queued before") {
  auto d = one_device(8 * MiB, with_delays(300));
  std::vector<double> out(1000, 0), in(1000, 3.5);
  auto* buf = static_cast<double*>(d->allocate(8000));
  {
    auto s = d->make_stream();
    d->copy_2d(buf, 8000, in.data(), 8000, 8000, 1, copy_kind::host_to_device, *s);
    d->copy_2d(out.data(), 8000, buf, 8000, 8000, 1, copy_kind::device_to_host, *s);
  }
  CHECK(out == in);
  auto s = d->make_stream();
  std::vector<double> out2(1000, 0);
  d->copy_2d(out2.data(), 8000, buf, 8000, 8000, 1, copy_kind::device_to_host, *s);
  d->release(buf);  // waits for the copy, as cudaFree does
  CHECK(out2 == in);
}

TEST_CASE("holds: inside a live allocation of this device only") {
  auto set = emulated_devices(2, 4 * MiB);
  device& d = *set->devices[0];
  auto* p = static_cast<char*>(d.allocate(1000));
  CHECK(d.holds(p));
  CHECK(d.holds(p + 999));
  CHECK(!d.holds(p + 1000));
  CHECK(!set->devices[1]->holds(p));
  std::vector<char> host(10);
  CHECK(!d.holds(host.data()));
  CHECK(!d.holds(nullptr));
  d.release(p);
  CHECK(!d.holds(p));
}

TEST_CASE("register_host is recorded, not pinned") {
  auto d = one_device();
  auto& e = dynamic_cast<emulated_device&>(*d);
  std::vector<char> a(3000), b(5000);
  d->register_host(a.data(), a.size());
  d->register_host(b.data(), b.size());
  CHECK(e.registered_bytes() == 8000);
  CHECK_THROWS_AS(d->register_host(a.data(), a.size()), device_error);  // twice
  CHECK_THROWS_AS(d->register_host(nullptr, 10), device_error);
  d->unregister_host(a.data());
  CHECK(e.registered_bytes() == 5000);
  d->unregister_host(a.data());  // unknown now: ignored
  d->unregister_host(b.data());
  CHECK(e.registered_bytes() == 0);
}

TEST_CASE("bad calls throw device_error at the call, as CUDA would refuse them") {
  auto set = emulated_devices(2, 4 * MiB);
  device& d = *set->devices[0];
  auto s = d.make_stream(), foreign = set->devices[1]->make_stream();
  auto* buf = static_cast<char*>(d.allocate(1024));
  std::vector<char> host(2048);
  // width above a pitch
  CHECK_THROWS_AS(d.copy_2d(buf, 16, host.data(), 32, 32, 2, copy_kind::host_to_device, *s), device_error);
  // a device range running past its allocation: 3 rows of 400 bytes with pitch 400 = 1200 > 1024
  CHECK_THROWS_AS(d.copy_2d(buf, 400, host.data(), 400, 400, 3, copy_kind::host_to_device, *s), device_error);
  // host memory where device memory belongs, and device memory where host memory belongs
  CHECK_THROWS_AS(d.copy_2d(host.data(), 8, buf, 8, 8, 1, copy_kind::host_to_device, *s), device_error);
  CHECK_THROWS_AS(d.copy_2d(buf, 8, buf + 8, 8, 8, 1, copy_kind::host_to_device, *s), device_error);
  // another device's stream, and another device's memory
  CHECK_THROWS_AS(d.copy_2d(buf, 8, host.data(), 8, 8, 1, copy_kind::host_to_device, *foreign), device_error);
  CHECK_THROWS_AS(set->devices[1]->fill_zero(buf, 8, *foreign), device_error);
  // gemm: a leading dimension below the rows, a bad trans, C not device memory
  const double one = 1, zero = 0;
  auto* A = reinterpret_cast<double*>(buf);
  CHECK_THROWS_AS(d.gemm(scalar_type::d, *s, 'N', 'N', 4, 4, 4, &one, A, 3, A, 4, &zero, A, 4), device_error);
  CHECK_THROWS_AS(d.gemm(scalar_type::d, *s, 'X', 'N', 4, 4, 4, &one, A, 4, A, 4, &zero, A, 4), device_error);
  std::vector<double> hostC(16);
  CHECK_THROWS_AS(d.gemm(scalar_type::d, *s, 'N', 'N', 4, 4, 4, &one, A, 4, A, 4, &zero, hostC.data(), 4), device_error);
  CHECK_THROWS_AS(d.rank_k(scalar_type::z, false, *s, 'U', 'C', 2, 2, &one, A, 2, &zero, A, 2), device_error);  // zsyrk 'C'
  CHECK_THROWS_AS(d.rank_k(scalar_type::z, true, *s, 'U', 'T', 2, 2, &one, A, 2, &zero, A, 2), device_error);   // zherk 'T'
  CHECK_THROWS_AS(d.rank_k(scalar_type::d, false, *s, 'X', 'N', 2, 2, &one, A, 2, &zero, A, 2), device_error);
  CHECK_NOTHROW(d.synchronize(*s));  // nothing refused reached the stream
  CHECK(d.counters().copies == 0);
  CHECK(d.counters().kernels == 0);
  d.release(buf);
}

TEST_CASE("scalars are read when the call is made") {
  auto d = one_device(8 * MiB, with_delays(300));
  auto s = d->make_stream();
  device_matrix<double> x(*d, 4, 1, 4), y(*d, 4, 1, 4);
  const std::vector<double> ones(4, 1.0);
  std::vector<double> out(4);
  x.put(ones, *s);
  double alpha = 3, beta = 0;
  d->geam(scalar_type::d, *s, 4, 1, &alpha, x.p, 4, &beta, x.p, 4, y.p, 4);
  alpha = 100;  // before the geam may have run
  y.get(out, *s);
  d->synchronize(*s);
  CHECK(out == std::vector<double>(4, 3.0));
}

TEST_CASE_TEMPLATE("gemm, every trans pair, against a plain loop (exact)", T, float, double, std::complex<float>,
                   std::complex<double>) {
  auto d = one_device(16 * MiB, with_delays(20));
  auto s = d->make_stream();
  const std::int64_t m = 13, n = 7, k = 11;
  const T alpha = scalar_of<T>(2, -1), beta = T(-3);
  for (char ta : {'N', 'T', 'C'})
    for (char tb : {'N', 'T', 'C'}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const std::int64_t ar = ta == 'N' ? m : k, ac = ta == 'N' ? k : m, br = tb == 'N' ? k : n, bc = tb == 'N' ? n : k;
      const std::int64_t lda = ar + 2, ldb = br + 1, ldc = m + 3;
      const std::vector<T> A = small_values<T>(std::size_t(lda * ac), 1), B = small_values<T>(std::size_t(ldb * bc), 2);
      const std::vector<T> C0 = small_values<T>(std::size_t(ldc * n), 3);
      device_matrix<T> dA(*d, lda, ac, lda), dB(*d, ldb, bc, ldb), dC(*d, ldc, n, ldc);
      dA.put(A, *s);
      dB.put(B, *s);
      dC.put(C0, *s);
      d->gemm(scalar_type_of<T>(), *s, ta, tb, m, n, k, &alpha, dA.p, lda, dB.p, ldb, &beta, dC.p, ldc);
      std::vector<T> C(C0.size());
      dC.get(C, *s);
      d->synchronize(*s);
      std::vector<T> R = C0;
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) {
          T sum(0);
          for (std::int64_t l = 0; l < k; ++l) sum += op_at(A, lda, ta, i, l) * op_at(B, ldb, tb, l, j);
          R[std::size_t(i + j * ldc)] = alpha * sum + beta * C0[std::size_t(i + j * ldc)];
        }
      CHECK(C == R);  // rows m..ldc of C kept as they were, too
    }
}

TEST_CASE_TEMPLATE("rank_k: syrk (and herk for complex, real alpha and beta) against a plain loop (exact)", T, float,
                   double, std::complex<float>, std::complex<double>) {
  using R = real_t<T>;
  auto d = one_device(16 * MiB, with_delays(20));
  auto s = d->make_stream();
  const std::int64_t n = 9, k = 6;
  for (bool herm : {false, true}) {
    if (herm && !test::is_complex_v<T>) continue;
    for (char uplo : {'U', 'L'})
      for (char trans : {'N', herm ? 'C' : 'T'}) {
        CAPTURE(herm);
        CAPTURE(uplo);
        CAPTURE(trans);
        const std::int64_t ar = trans == 'N' ? n : k, ac = trans == 'N' ? k : n, lda = ar + 1, ldc = n + 2;
        const std::vector<T> A = small_values<T>(std::size_t(lda * ac), 4);
        std::vector<T> C0 = small_values<T>(std::size_t(ldc * n), 5);
        if (herm)
          for (std::int64_t i = 0; i < n; ++i) C0[std::size_t(i + i * ldc)] = T(std::real(C0[std::size_t(i + i * ldc)]));
        device_matrix<T> dA(*d, lda, ac, lda), dC(*d, ldc, n, ldc);
        dA.put(A, *s);
        dC.put(C0, *s);
        const T alpha_t = scalar_of<T>(2, 1), beta_t = T(-1);
        const R alpha_r = 2, beta_r = -1;  // herk's real scalars
        d->rank_k(scalar_type_of<T>(), herm, *s, uplo, trans, n, k, herm ? static_cast<const void*>(&alpha_r) : &alpha_t,
                  dA.p, lda, herm ? static_cast<const void*>(&beta_r) : &beta_t, dC.p, ldc);
        std::vector<T> C(C0.size());
        dC.get(C, *s);
        d->synchronize(*s);
        std::vector<T> Ref = C0;
        const T alpha = herm ? T(alpha_r) : alpha_t, beta = herm ? T(beta_r) : beta_t;
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t i = 0; i < n; ++i) {
            if (uplo == 'U' ? i > j : i < j) continue;  // the other triangle stays as it was
            T sum(0);
            for (std::int64_t l = 0; l < k; ++l) {
              const T right = op_at(A, lda, trans, j, l);
              sum += op_at(A, lda, trans, i, l) * (herm ? conj_if(right) : right);
            }
            Ref[std::size_t(i + j * ldc)] = alpha * sum + beta * C0[std::size_t(i + j * ldc)];
          }
        CHECK(C == Ref);
      }
  }
}

TEST_CASE_TEMPLATE("geam against a plain loop (exact), in place too", T, float, double, std::complex<float>,
                   std::complex<double>) {
  auto d = one_device(16 * MiB, with_delays(20));
  auto s = d->make_stream();
  const std::int64_t m = 11, n = 5, ld = 14;
  const std::vector<T> A = small_values<T>(std::size_t(ld * n), 6), B = small_values<T>(std::size_t(ld * n), 7);
  device_matrix<T> dA(*d, ld, n, ld), dB(*d, ld, n, ld), dC(*d, ld, n, ld);
  dA.put(A, *s);
  dB.put(B, *s);
  const std::vector<T> fives(std::size_t(ld * n), T(5));  // the host side lives until the copy has run
  dC.put(fives, *s);
  const T alpha = T(3), beta = scalar_of<T>(-2, 1);
  d->geam(scalar_type_of<T>(), *s, m, n, &alpha, dA.p, ld, &beta, dB.p, ld, dC.p, ld);
  d->geam(scalar_type_of<T>(), *s, m, n, &alpha, dA.p, ld, &beta, dB.p, ld, dA.p, ld);  // C = A
  std::vector<T> C(A.size()), C_in_place(A.size());
  dC.get(C, *s);
  dA.get(C_in_place, *s);
  d->synchronize(*s);
  std::vector<T> R(std::size_t(ld * n), T(5)), R_in_place = A;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      const std::size_t x = std::size_t(i + j * ld);
      R[x] = R_in_place[x] = alpha * A[x] + beta * B[x];
    }
  CHECK(C == R);
  CHECK(C_in_place == R_in_place);
}

TEST_CASE_TEMPLATE("beta = 0 over NaN in C (and alpha = 0 over NaN in geam's A) gives exact results", T, float, double,
                   std::complex<float>, std::complex<double>) {
  using R = real_t<T>;
  auto d = one_device(16 * MiB);
  auto s = d->make_stream();
  const std::int64_t n = 6, k = 4;
  const T nan(std::numeric_limits<R>::quiet_NaN());
  const std::vector<T> A = small_values<T>(std::size_t(n * k), 8), B = small_values<T>(std::size_t(k * n), 9);
  device_matrix<T> dA(*d, n, k, n), dB(*d, k, n, k), dC(*d, n, n, n), dN(*d, n, n, n);
  dA.put(A, *s);
  dB.put(B, *s);
  const std::vector<T> nans(std::size_t(n * n), nan);
  const T one(1), zero(0);
  const R one_r(1), zero_r(0);
  std::vector<T> gemm_c(nans.size()), rank_k_c(nans.size()), herk_c(nans.size()), geam_c(nans.size());
  dC.put(nans, *s);  // gemm over NaN, beta 0
  d->gemm(scalar_type_of<T>(), *s, 'N', 'N', n, n, k, &one, dA.p, n, dB.p, k, &zero, dC.p, n);
  dC.get(gemm_c, *s);
  dC.put(nans, *s);  // syrk over NaN, beta 0
  d->rank_k(scalar_type_of<T>(), false, *s, 'L', 'N', n, k, &one, dA.p, n, &zero, dC.p, n);
  dC.get(rank_k_c, *s);
  dC.put(nans, *s);  // herk over NaN, beta 0 (syrk for a real type)
  d->rank_k(scalar_type_of<T>(), true, *s, 'L', 'N', n, k, test::is_complex_v<T> ? static_cast<const void*>(&one_r) : &one,
            dA.p, n, test::is_complex_v<T> ? static_cast<const void*>(&zero_r) : &zero, dC.p, n);
  dC.get(herk_c, *s);
  dN.put(nans, *s);  // geam: C = 0 NaN + 1 gemm's C, then C = 1 C + 0 NaN
  dC.put(gemm_c, *s);
  d->geam(scalar_type_of<T>(), *s, n, n, &zero, dN.p, n, &one, dC.p, n, dC.p, n);
  d->geam(scalar_type_of<T>(), *s, n, n, &one, dC.p, n, &zero, dN.p, n, dC.p, n);
  d->synchronize(*s);
  dC.get(geam_c, *s);
  d->synchronize(*s);
  std::vector<T> Rg(nans.size());
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      T sum(0);
      for (std::int64_t l = 0; l < k; ++l) sum += A[std::size_t(i + l * n)] * B[std::size_t(l + j * k)];
      Rg[std::size_t(i + j * n)] = sum;
    }
  CHECK(gemm_c == Rg);
  CHECK(geam_c == Rg);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = j; i < n; ++i) {  // the lower triangle
      T syrk(0), herk(0);
      for (std::int64_t l = 0; l < k; ++l) {
        syrk += A[std::size_t(i + l * n)] * A[std::size_t(j + l * n)];
        herk += A[std::size_t(i + l * n)] * conj_if(A[std::size_t(j + l * n)]);
      }
      CHECK(rank_k_c[std::size_t(i + j * n)] == syrk);
      CHECK(herk_c[std::size_t(i + j * n)] == herk);
    }
}

TEST_CASE("emulated_devices: names, NUMA domains spread evenly, and its argument checks") {
  auto set = emulated_devices(3, 1 * MiB);
  REQUIRE(set->count() == 3);
  CHECK(set->status == "3 emulated devices of 1.00 MiB");
  const int domains = int(default_topology().domains().size());
  for (int i = 0; i < 3; ++i) {
    const device& d = *set->devices[std::size_t(i)];
    CHECK(d.index() == i);
    CHECK(d.emulated());
    CHECK(d.memory() == 1 * MiB);
    CHECK(d.name() == "emulated device " + std::to_string(i) + " (1.00 MiB)");
    CHECK(d.numa_domain() == i * domains / 3);
  }
  CHECK(emulated_devices(1, 64 * MiB)->status == "1 emulated device of 64.0 MiB");
  CHECK(emulated_devices(1, std::size_t(3) << 30)->devices[0]->name() == "emulated device 0 (3.00 GiB)");
  CHECK_THROWS_AS(emulated_devices(0, 64 * MiB), prism::error);
  CHECK_THROWS_AS(emulated_devices(65, 64 * MiB), prism::error);
  CHECK_THROWS_AS(emulated_devices(1, MiB - 1), prism::error);
  CHECK(bytes_text(139.8 * double(std::size_t(1) << 30)) == "139.8 GiB");
}

TEST_CASE("PRISM_GPU: the values it takes") {
  using detail::gpu_choice;
  using detail::parse_gpu_choice;
  for (const char* text : {"", "auto"}) {
    const auto c = parse_gpu_choice(text);
    CHECK(c.problem.empty());
    CHECK(c.value.what == gpu_choice::mode::automatic);
  }
  CHECK(parse_gpu_choice("off").value.what == gpu_choice::mode::off);
  const auto e = parse_gpu_choice("emulate:2:64M");
  CHECK(e.problem.empty());
  CHECK(e.value.what == gpu_choice::mode::emulate);
  CHECK(e.value.count == 2);
  CHECK(e.value.bytes == 64 * MiB);
  CHECK(!e.value.delay);
  const auto f = parse_gpu_choice("emulate:64:1G:delay");
  CHECK(f.problem.empty());
  CHECK(f.value.count == 64);
  CHECK(f.value.bytes == std::uint64_t(1) << 30);
  CHECK(f.value.delay);
  CHECK(parse_gpu_choice("emulate:1:1048576").value.bytes == MiB);  // no suffix: bytes
  CHECK(parse_gpu_choice("emulate:1:1024K").value.bytes == MiB);
  CHECK(parse_gpu_choice("emulate:1:2g").value.bytes == std::uint64_t(2) << 30);
}

TEST_CASE("sizes with a K, M or G suffix: one parser for PRISM_GPU's SIZE and prism::parse_size") {
  using detail::parse_size_text;
  CHECK(parse_size_text("0").value == 0);
  CHECK(parse_size_text("64M").value == 64 * MiB);
  CHECK(parse_size_text("3k").value == 3072);
  CHECK(parse_size_text("18446744073709551615").value == ~std::uint64_t(0));
  CHECK(parse_size_text("17179869183G").value == (std::uint64_t(17179869183) << 30));
  for (const char* text : {"", "-1", " 5", "+5", "M"})
    CHECK(parse_size_text(text).problem == "not a non-negative integer: '" + std::string(text) + "'");
  for (const char* text : {"5 ", "5KB", "5T", "0x10", "5 K"})
    CHECK(parse_size_text(text).problem ==
          "trailing characters in '" + std::string(text) + "' (the suffix may be K, M or G)");
  for (const char* text : {"18446744073709551616", "17179869184G", "99999999999999999999"})
    CHECK(parse_size_text(text).problem == "value too large: '" + std::string(text) + "'");
  CHECK(prism::parse_size("2G") == std::uint64_t(2) << 30);
  CHECK_THROWS_WITH_AS(prism::parse_size("5KB"), "trailing characters in '5KB' (the suffix may be K, M or G)",
                       prism::error);
}

TEST_CASE("PRISM_GPU: a bad value is said in one line and means auto") {
  using detail::gpu_choice;
  using detail::parse_gpu_choice;
  const auto z = parse_gpu_choice("emulate:0:1G");
  CHECK(z.problem ==
        "PRISM_GPU: 'emulate:0:1G' is not auto, off or emulate:N:SIZE[:delay] with N in 1..64 and SIZE >= 1M; GPUs as "
        "if it were unset");
  CHECK(z.value.what == gpu_choice::mode::automatic);
  for (const char* text : {"emulate:65:1G", "emulate:2:1023K", "emulate:2:1048575", "emulate:2", "emulate:2:64M:fast",
                           "emulate:2:64X", "emulate::64M", "emulate:2:", "emulate:-1:64M", "emulate:+2:64M",
                           "emulate:2:64M:delay:x", "emulate:1:99999999999999999999G", "emulate:1:4194304G", "on",
                           "OFF", " auto", "emulate:2:64 M", "emulate:2:M", "emulate:100:64M"}) {
    CAPTURE(text);
    const auto c = parse_gpu_choice(text);
    CHECK(c.problem == "PRISM_GPU: '" + std::string(text) +
                           "' is not auto, off or emulate:N:SIZE[:delay] with N in 1..64 and SIZE >= 1M; GPUs as if it "
                           "were unset");
    CHECK(c.value.what == gpu_choice::mode::automatic);
  }
}

// Run by the ctest entry test_gpu_device_process_emulate (PRISM_GPU=emulate:2:64M).
TEST_CASE("process_devices with PRISM_GPU=emulate:2:64M" * doctest::skip()) {
  std::vector<std::shared_ptr<const device_set>> seen(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < seen.size(); ++t) threads.emplace_back([&seen, t] { seen[t] = process_devices(); });
  for (auto& t : threads) t.join();
  const auto set = process_devices();
  for (const auto& s : seen) CHECK(s == set);  // built once
  REQUIRE(set->count() == 2);
  CHECK(set->status == "2 emulated devices of 64.0 MiB (PRISM_GPU)");
  for (int i = 0; i < 2; ++i) {
    CHECK(set->devices[std::size_t(i)]->index() == i);
    CHECK(set->devices[std::size_t(i)]->emulated());
    CHECK(set->devices[std::size_t(i)]->memory() == 64 * MiB);
  }
}

// Run by the ctest entry test_gpu_device_process_off (PRISM_GPU=off).
TEST_CASE("process_devices with PRISM_GPU=off" * doctest::skip()) {
  const auto set = process_devices();
  CHECK(set->count() == 0);
  CHECK(set->status == "no GPU: PRISM_GPU=off");
}
