// bench/gpu_bench.cpp — prism's GPU level against NVIDIA's libraries in the same run, on
// the first CUDA device: each row times prism (operands where the row says: ordinary
// pageable host memory) beside cuBLAS on device-resident operands and, for host-resident
// squares, cuBLASXt; then the shapes cuBLAS handles badly with operands already on the device
// (AᵀA as dsyrk, a thin 8 x 8 x k and a 32 x 32 x k TN product: prism given device pointers
// against one cuBLAS call and the device's copy rate); and prints a markdown table with the
// ratios and the targets (docs/gpu.md, "Figures"). Best of R timings each (--reps, default 3). Without a GPU it
// says why and measures nothing (exit 0): there is nothing to compare.
//
//   prism_gpu_bench [--reps R] [--quick | --emulate] [--out FILE] [--commit SHA]
//
// --quick: smaller shapes of the same kinds (a minute on one H200), for a check that runs.
// --emulate: tiny shapes on an emulated device (no GPU needed): the bench's own check, its
// figures the host's and meaningless as rates.
// Every prism row spot-checks 16 elements of C against a long-double dot product with the
// componentwise bound; a wrong element fails the row (and the exit status).
#include <prism/prism.hpp>

#include "gpu/cuda_api.hpp"
#include "gpu/devices.hpp"
#include "runtime/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace gpu = prism::detail::gpu;

namespace {

struct options {
  int reps = 3;
  bool quick = false, emulate = false;
  std::string out, commit;
};

// A seeded value in [-1, 1) for element (i, j) of matrix `which` (complex: two of them).
double value(std::uint64_t which, std::uint64_t i, std::uint64_t j, int part = 0) {
  std::uint64_t z = (which << 56) ^ (std::uint64_t(part) << 52) ^ (i * 0x9E3779B97F4A7C15ull) ^ (j * 0xC2B2AE3D27D4EB4Full);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return double((z ^ (z >> 31)) >> 11) * 0x1.0p-52 - 1.0;
}

template <class T>
T element(std::uint64_t which, std::int64_t i, std::int64_t j) {
  if constexpr (std::is_same_v<T, double>) return value(which, i, j);
  else return T(value(which, i, j, 0), value(which, i, j, 1));
}

// rows x cols column-major, filled on every hardware thread (ordinary pageable memory).
template <class T>
std::vector<T> host_matrix(std::uint64_t which, std::int64_t rows, std::int64_t cols) {
  std::vector<T> m(std::size_t(rows) * std::size_t(cols));
  const int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (std::int64_t j = cols * t / threads; j < cols * (t + 1) / threads; ++j)
        for (std::int64_t i = 0; i < rows; ++i) m[std::size_t(i + j * rows)] = element<T>(which, i, j);
    });
  for (auto& th : pool) th.join();
  return m;
}

template <class F>
double best_of(int reps, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// 16 elements of C = A B (alpha 1, beta 0, 'N' 'N') against a long-double dot product:
// |C - C_ref| <= 4 k eps sum |a||b| each. True when all hold.
template <class T>
bool spot_check(const std::vector<T>& A, const std::vector<T>& B, const std::vector<T>& C, std::int64_t m,
                std::int64_t n, std::int64_t k) {
  using R = decltype(std::abs(T(0)));
  bool ok = true;
  for (int s = 0; s < 16; ++s) {
    const std::int64_t i = (m - 1) * s / 15, j = (n - 1) * ((s * 7) % 16) / 15;
    std::complex<long double> sum = 0;
    long double size = 0;
    for (std::int64_t l = 0; l < k; ++l) {
      const std::complex<long double> a(A[std::size_t(i + l * m)]), b(B[std::size_t(l + j * k)]);
      sum += a * b, size += std::abs(a) * std::abs(b);
    }
    const long double err = std::abs(std::complex<long double>(C[std::size_t(i + j * m)]) - sum);
    ok = ok && err <= 4.0L * k * std::numeric_limits<R>::epsilon() * size * (std::is_same_v<T, double> ? 1 : 2);
  }
  return ok;
}

// Device-resident cuBLAS: the same product on operands the device holds (uploaded first,
// not timed), through prism's device interface (a cuBLAS call on a stream).
template <class T>
double cublas_seconds(gpu::device& dev, const std::vector<T>& A, const std::vector<T>& B, std::int64_t m, std::int64_t n,
                      std::int64_t k, int reps) {
  const std::size_t ea = A.size() * sizeof(T), eb = B.size() * sizeof(T), ec = std::size_t(m * n) * sizeof(T);
  void* a = dev.allocate(ea);
  void* b = dev.allocate(eb);
  void* c = dev.allocate(ec);
  auto s = dev.make_stream();
  dev.copy_2d(a, ea, A.data(), ea, ea, 1, gpu::copy_kind::host_to_device, *s);
  dev.copy_2d(b, eb, B.data(), eb, eb, 1, gpu::copy_kind::host_to_device, *s);
  dev.synchronize(*s);
  const T one(1), zero(0);
  auto call = [&] {
    dev.gemm(prism::scalar_type_of<T>(), *s, 'N', 'N', m, n, k, &one, a, m, b, k, &zero, c, m);
    dev.synchronize(*s);
  };
  call();
  const double t = best_of(reps, call);
  s.reset();
  dev.release(a), dev.release(b), dev.release(c);
  return t;
}

// cuBLASXt on host-resident operands, its block size the best of 2048 and 4096.
template <class T>
double cublasxt_seconds(const std::vector<T>& A, const std::vector<T>& B, std::vector<T>& C, std::int64_t m,
                        std::int64_t n, std::int64_t k, int reps, std::string& note) {
  std::string why;
  const gpu::cuda::cublasxt_api* xt = gpu::cuda::load_cublasxt(why);
  if (xt == nullptr) return note = why, 0.0;
  gpu::cuda::cublasxt_handle h = nullptr;
  xt->xt_create(&h);
  int device0[1] = {0};
  xt->xt_device_select(h, 1, device0);
  double best = std::numeric_limits<double>::infinity();
  for (int block : {2048, 4096}) {
    xt->xt_set_block_dim(h, block);
    const T one(1), zero(0);
    auto call = [&] {
      if constexpr (std::is_same_v<T, double>)
        xt->xt_dgemm(h, gpu::cuda::cublas_operation::n, gpu::cuda::cublas_operation::n, m, n, k, &one, A.data(), m,
                     B.data(), k, &zero, C.data(), m);
      else
        xt->xt_zgemm(h, gpu::cuda::cublas_operation::n, gpu::cuda::cublas_operation::n, m, n, k,
                     reinterpret_cast<const gpu::cuda::complex_double*>(&one), reinterpret_cast<const gpu::cuda::complex_double*>(A.data()), m,
                     reinterpret_cast<const gpu::cuda::complex_double*>(B.data()), k,
                     reinterpret_cast<const gpu::cuda::complex_double*>(&zero), reinterpret_cast<gpu::cuda::complex_double*>(C.data()), m);
    };
    const double t = best_of(std::max(1, reps - 1), call);
    if (t < best) best = t, note = "block " + std::to_string(block);
  }
  xt->xt_destroy(h);
  return best;
}

struct row {
  std::string what, prism, peer, ratio, target, verdict;
};

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// prism on `ctx`'s GPUs, pageable host operands: its seconds, the bytes its device moved in
// the last call (in, out), and the plan's prediction and bound.
struct prism_run {
  double seconds = 0, in = 0, out = 0, predicted_in = 0, predicted_out = 0, bound = 0;
  bool right = false;
};

template <class T>
prism_run run_prism(const prism::context& ctx, gpu::device& dev, std::int64_t m, std::int64_t n, std::int64_t k,
                    const std::vector<T>& A, const std::vector<T>& B, std::vector<T>& C, int reps) {
  prism_run r;
  const T one(1), zero(0);
  auto call = [&] { prism::gemm<T>('N', 'N', m, n, k, one, A.data(), m, B.data(), k, zero, C.data(), m, ctx); };
  call();  // plans (cached) and warms the device
  gpu::link_counters before{}, after{};
  r.seconds = best_of(reps, [&] {
    before = dev.counters();
    call();
    after = dev.counters();
  });
  r.in = double(after.host_to_device - before.host_to_device), r.out = double(after.device_to_host - before.device_to_host);
  for (const prism::gpu_part& g : prism::predict_gpu(prism::make_plan<T>('N', 'N', m, n, k, ctx), false, ctx))
    r.predicted_in += g.bytes_in, r.predicted_out += g.bytes_out, r.bound += g.bound;
  r.right = spot_check(A, B, C, m, n, k);
  return r;
}

// The devices prism's contexts run on: the CUDA ones, or the emulated one (--emulate).
std::shared_ptr<const gpu::device_set> devices;

prism::context gpu_context() {
  prism::context ctx;
  prism::detail::context_access::set_devices(ctx, devices);
  ctx.set_gpus(1);
  return ctx;
}

template <class T>
row square_row(gpu::device& dev, std::int64_t s, std::size_t gpu_memory, int reps, const std::string& name) {
  prism::context ctx = gpu_context();
  if (gpu_memory > 0) ctx.set_gpu_memory(gpu_memory);
  const std::vector<T> A = host_matrix<T>(0, s, s), B = host_matrix<T>(1, s, s);
  std::vector<T> C(std::size_t(s) * std::size_t(s));
  const prism_run p = run_prism<T>(ctx, dev, s, s, s, A, B, C, reps);
  const double flops = prism::gemm_flops(prism::scalar_type_of<T>(), s, s, s);
  const double peer = cublas_seconds<T>(dev, A, B, s, s, s, reps);
  std::string xt_note;
  const double xt = gpu_memory > 0 || dev.emulated() ? 0.0 : cublasxt_seconds<T>(A, B, C, s, s, s, reps, xt_note);
  row r;
  r.what = name;
  r.prism = fmt("%.1f TF/s", flops / p.seconds * 1e-12);
  if (gpu_memory > 0)
    r.prism += fmt("; link %.2f GB", (p.in + p.out) * 1e-9) + fmt(" (model %.2f GB,", (p.predicted_in + p.predicted_out) * 1e-9) +
               fmt(" %.3f x the bound)", (p.in + p.out) / p.bound);
  r.peer = fmt("cuBLAS on the device %.1f TF/s", flops / peer * 1e-12);
  if (xt > 0) r.peer += fmt("; cuBLASXt %.1f TF/s", flops / xt * 1e-12) + " (" + xt_note + ")";
  const double ratio = peer / p.seconds;
  r.ratio = fmt("%.2f", ratio);
  r.target = gpu_memory > 0 ? ">= 0.85; link = model, <= 1.3 x bound" : ">= 0.85";
  const bool bytes_ok = gpu_memory == 0 || (p.in == p.predicted_in && p.out == p.predicted_out && p.in + p.out <= 1.3 * p.bound);
  r.verdict = !p.right ? "WRONG RESULT" : ratio >= 0.85 && bytes_ok ? "met" : "missed";
  return r;
}

// Thin product from pageable host memory: the link rate prism's copies reach, against the
// pinned rate measured on the same device in the same run.
row thin_row(gpu::device& dev, std::int64_t mn, std::int64_t k, int reps) {
  prism::context ctx = gpu_context();
  const std::vector<double> A = host_matrix<double>(0, mn, k), B = host_matrix<double>(1, k, mn);
  std::vector<double> C(std::size_t(mn * mn));
  const prism_run p = run_prism<double>(ctx, dev, mn, mn, k, A, B, C, reps);
  const std::size_t bytes = std::min(std::size_t(256) << 20, dev.memory() / 4);
  void* host = dev.allocate_pinned(bytes);
  void* d = dev.allocate(bytes);
  auto s = dev.make_stream();
  const double pinned = double(bytes) / best_of(reps, [&] {
    dev.copy_2d(d, bytes, host, bytes, bytes, 1, gpu::copy_kind::host_to_device, *s);
    dev.synchronize(*s);
  });
  s.reset();
  dev.release(d), dev.release_pinned(host);
  const double rate = p.in / p.seconds;
  row r;
  r.what = std::to_string(mn) + " x " + std::to_string(mn) + " x " + std::to_string(k) + " d, pageable host memory";
  r.prism = fmt("%.1f GB/s over the link", rate * 1e-9);
  r.peer = fmt("pinned copy %.1f GB/s", pinned * 1e-9);
  r.ratio = fmt("%.2f", rate / pinned);
  r.target = ">= 0.90";
  r.verdict = !p.right ? "WRONG RESULT" : rate / pinned >= 0.9 ? "met" : "missed";
  return r;
}

// ---- operands already on the device -----------------------------------------------------

// A host matrix uploaded to the device (not timed); released by the caller.
template <class T>
T* upload(gpu::device& dev, const std::vector<T>& v) {
  const std::size_t bytes = v.size() * sizeof(T);
  T* d = static_cast<T*>(dev.allocate(bytes));
  auto s = dev.make_stream();
  dev.copy_2d(d, bytes, v.data(), bytes, bytes, 1, gpu::copy_kind::host_to_device, *s);
  dev.synchronize(*s);
  return d;
}

template <class T>
std::vector<T> download(gpu::device& dev, const T* d, std::size_t count) {
  std::vector<T> v(count);
  auto s = dev.make_stream();
  dev.copy_2d(v.data(), count * sizeof(T), d, count * sizeof(T), count * sizeof(T), 1, gpu::copy_kind::device_to_host, *s);
  dev.synchronize(*s);
  return v;
}

// The device's own copy rate: bytes read plus bytes written per second by a device-to-device
// copy of `bytes` (what a product that reads its operands once is held against).
double device_copy_rate(gpu::device& dev, std::size_t bytes, int reps) {
  void* a = dev.allocate(bytes);
  void* b = dev.allocate(bytes);
  auto s = dev.make_stream();
  auto copy = [&] {
    dev.copy_2d(b, bytes, a, bytes, bytes, 1, gpu::copy_kind::device_to_device, *s);
    dev.synchronize(*s);
  };
  copy();
  const double t = best_of(reps, copy);
  s.reset();
  dev.release(a), dev.release(b);
  return 2.0 * double(bytes) / t;
}

// 16 elements of C = A^T B (A stored k x m, B k x n, alpha 1, beta 0) against a long-double
// dot product within 4 k eps sum |a||b|; `upper`: only C's upper triangle (a syrk's).
bool spot_check_tn(const std::vector<double>& A, const std::vector<double>& B, const std::vector<double>& C,
                   std::int64_t m, std::int64_t n, std::int64_t k, bool upper) {
  bool ok = true;
  for (int s = 0; s < 16; ++s) {
    std::int64_t i = (m - 1) * s / 15, j = (n - 1) * ((s * 7) % 16) / 15;
    if (upper && i > j) std::swap(i, j);
    long double sum = 0, size = 0;
    for (std::int64_t l = 0; l < k; ++l) {
      const long double a = A[std::size_t(l + i * k)], b = B[std::size_t(l + j * k)];
      sum += a * b, size += std::fabs(a * b);
    }
    ok = ok && std::fabs((long double)C[std::size_t(i + j * m)] - sum) <= 4.0L * k * std::numeric_limits<double>::epsilon() * size;
  }
  return ok;
}

// AᵀA (dsyrk 'U' 'T') with A k x n on the device: prism against one cublasDsyrk of the same
// call, and A's bytes per second against the device's copy rate.
row gram_on_device_row(gpu::device& dev, std::int64_t k, std::int64_t n, int reps, double copy) {
  const prism::context ctx = gpu_context();
  const std::vector<double> A = host_matrix<double>(2, k, n);
  double* dA = upload(dev, A);
  auto* dC = static_cast<double*>(dev.allocate(std::size_t(n * n) * sizeof(double)));
  const double one = 1, zero = 0;
  auto mine = [&] { prism::syrk<double>('U', 'T', n, k, 1.0, dA, k, 0.0, dC, n, ctx); };
  mine();
  const double t = best_of(reps, mine);
  const std::vector<double> C = download(dev, dC, std::size_t(n * n));
  auto s = dev.make_stream();
  auto theirs = [&] {
    dev.rank_k(prism::scalar_type::d, false, *s, 'U', 'T', n, k, &one, dA, k, &zero, dC, n);
    dev.synchronize(*s);
  };
  theirs();
  const double peer = best_of(reps, theirs);
  s.reset();
  dev.release(dA), dev.release(dC);
  const double rate = double(A.size() * sizeof(double)) / t;
  row r;
  r.what = "AᵀA dsyrk, A " + std::to_string(k) + " x " + std::to_string(n) + " on the device";
  r.prism = fmt("%.3f ms, ", t * 1e3) + fmt("A read at %.0f GB/s", rate * 1e-9);
  r.peer = fmt("cublasDsyrk %.3f ms; ", peer * 1e3) + fmt("device copy %.0f GB/s", copy * 1e-9);
  r.ratio = fmt("%.1f x cuBLAS", peer / t) + fmt(", %.2f of copy", rate / copy);
  r.target = ">= 20 x cuBLAS, >= 0.80 of copy";
  const bool right = spot_check_tn(A, A, C, n, n, k, true);
  r.verdict = !right ? "WRONG RESULT" : peer / t >= 20 && rate >= 0.8 * copy ? "met" : "missed";
  return r;
}

// A thin product op(A) op(B) = AᵀB (A and B k x mn) on the device: against the copy rate
// (`vs_cublas` false) or against one cuBLAS gemm of the same call (true).
row thin_on_device_row(gpu::device& dev, std::int64_t mn, std::int64_t k, int reps, double copy, bool vs_cublas) {
  const prism::context ctx = gpu_context();
  const std::vector<double> A = host_matrix<double>(3, k, mn), B = host_matrix<double>(4, k, mn);
  double *dA = upload(dev, A), *dB = upload(dev, B);
  auto* dC = static_cast<double*>(dev.allocate(std::size_t(mn * mn) * sizeof(double)));
  const double one = 1, zero = 0;
  auto mine = [&] { prism::gemm<double>('T', 'N', mn, mn, k, 1.0, dA, k, dB, k, 0.0, dC, mn, ctx); };
  mine();
  const double t = best_of(reps, mine);
  const std::vector<double> C = download(dev, dC, std::size_t(mn * mn));
  auto s = dev.make_stream();
  auto theirs = [&] {
    dev.gemm(prism::scalar_type::d, *s, 'T', 'N', mn, mn, k, &one, dA, k, dB, k, &zero, dC, mn);
    dev.synchronize(*s);
  };
  theirs();
  const double peer = best_of(reps, theirs);
  s.reset();
  dev.release(dA), dev.release(dB), dev.release(dC);
  const double rate = double((A.size() + B.size()) * sizeof(double)) / t;
  row r;
  r.what = std::to_string(mn) + " x " + std::to_string(mn) + " x " + std::to_string(k) + " TN d, on the device";
  r.prism = fmt("%.3f ms, ", t * 1e3) + fmt("A and B read at %.0f GB/s", rate * 1e-9);
  r.peer = fmt("cuBLAS dgemm %.3f ms; ", peer * 1e3) + fmt("device copy %.0f GB/s", copy * 1e-9);
  const bool right = spot_check_tn(A, B, C, mn, mn, k, false);
  if (vs_cublas) {
    r.ratio = fmt("%.2f x cuBLAS", peer / t);
    r.target = ">= 1.00 x cuBLAS";
    r.verdict = !right ? "WRONG RESULT" : peer / t >= 1.0 ? "met" : "missed";
  } else {
    r.ratio = fmt("%.2f of copy", rate / copy);
    r.target = ">= 0.85 of copy";
    r.verdict = !right ? "WRONG RESULT" : rate >= 0.85 * copy ? "met" : "missed";
  }
  return r;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H%MZ", std::gmtime(&t));
  return b;
}

int run(const options& o) {
  std::ostringstream md;
  devices = o.emulate ? gpu::emulated_devices(1, std::size_t(1) << 30) : gpu::cuda_devices();
  const auto& set = devices;
  md << "# prism's GPU level against NVIDIA's libraries\n\n";
  md << "Date: " << utc_now() << (o.commit.empty() ? "" : "; commit " + o.commit) << "; prism " << prism::version() << "\n";
  md << "Host: " << prism::this_cpu() << ", " << std::thread::hardware_concurrency() << " hardware threads\n";
  md << "GPU: " << set->status << "\n";
  if (set->count() == 0) {
    md << "\nNothing measured: no GPU.\n";
    std::cout << md.str();
    if (!o.out.empty()) std::ofstream(o.out) << md.str();
    return 0;
  }
  gpu::device& dev = *set->devices[0];
  if (dev.emulated()) md << "\nEmulated device: a check that the benchmark runs; its rates are the host's and mean nothing.\n";
  md << "Each figure the best of " << o.reps << " timings in this run; prism's operands in ordinary (pageable) host "
     << "memory, cuBLAS's on the device (its upload not timed), cuBLASXt's in host memory; in the rows \"on the "
     << "device\" prism's operands are on the device too (device pointers), and the copy rate is the device's own "
     << "(bytes read plus written per second by a device-to-device copy).\n\n";
  md << "| case | prism | NVIDIA's | prism / NVIDIA's | target | |\n|---|---|---|---:|---|---|\n";
  const std::int64_t big = o.emulate ? 512 : o.quick ? 8192 : 16384, huge = o.emulate ? 1024 : o.quick ? 16384 : 32768;
  const std::int64_t z = o.emulate ? 256 : o.quick ? 6144 : 12288;
  const std::size_t cap = o.emulate ? std::size_t(8) << 20 : (o.quick ? std::size_t(2) : std::size_t(8)) << 30;
  const std::int64_t thin = o.emulate ? std::int64_t(1) << 16 : o.quick ? std::int64_t(1) << 22 : std::int64_t(1) << 24;
  std::vector<row> rows;
  rows.push_back(square_row<double>(dev, big, 0, o.reps, "dgemm " + std::to_string(big) + "^3, pageable host memory"));
  rows.push_back(square_row<double>(dev, huge, cap, o.reps,
                                    "dgemm " + std::to_string(huge) + "^3, --gpu-memory " + std::to_string(cap >> 20) + "M"));
  rows.push_back(square_row<std::complex<double>>(dev, z, 0, o.reps, "zgemm " + std::to_string(z) + "^3, host memory"));
  rows.push_back(thin_row(dev, 64, thin, o.reps));
  // Operands already on the device (the shapes cuBLAS handles badly).
  const std::int64_t gram_k = o.emulate ? std::int64_t(1) << 16 : o.quick ? std::int64_t(1) << 20 : std::int64_t(1) << 22;
  const std::int64_t krylov_k = o.emulate ? std::int64_t(1) << 18 : o.quick ? std::int64_t(1) << 22 : std::int64_t(1) << 24;
  const double copy = device_copy_rate(dev, std::min<std::size_t>(dev.memory() / 8, std::size_t(1) << 30), o.reps);
  rows.push_back(gram_on_device_row(dev, gram_k, 32, o.reps, copy));
  rows.push_back(thin_on_device_row(dev, 8, krylov_k, o.reps, copy, false));
  rows.push_back(thin_on_device_row(dev, 32, gram_k, o.reps, copy, true));
  bool wrong = false;
  for (const row& r : rows) {
    md << "| " << r.what << " | " << r.prism << " | " << r.peer << " | " << r.ratio << " | " << r.target << " | "
       << r.verdict << " |\n";
    wrong = wrong || r.verdict == "WRONG RESULT";
  }
  std::cout << md.str();
  if (!o.out.empty()) std::ofstream(o.out) << md.str();
  return wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return std::string(argv[++i]);
    };
    try {
      if (a == "--reps") o.reps = std::max(1, std::stoi(next()));
      else if (a == "--quick") o.quick = true;
      else if (a == "--emulate") o.emulate = true;
      else if (a == "--out") o.out = next();
      else if (a == "--commit") o.commit = next();
      else throw std::runtime_error("unknown argument '" + a + "'");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "prism_gpu_bench: %s\nusage: prism_gpu_bench [--reps R] [--quick | --emulate] [--out FILE] [--commit SHA]\n",
                   e.what());
      return 2;
    }
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prism_gpu_bench: %s\n", e.what());
    return 1;
  }
}
