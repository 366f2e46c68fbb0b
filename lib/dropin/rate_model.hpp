// lib/dropin/rate_model.hpp — how the drop-in decides, for a call that is not k-dominant
// (squares, wide products), whether prism or the backend BLAS computes it: a model of the
// two rates, fed by one short probe per element type and process (dispatch.cpp).
//
// On such shapes both prism and a threaded BLAS keep every thread busy, so what separates
// them is the kernels: prism's leaves run the kernel set prism chose for this CPU
// (lib/leaf/backend/leaf_kernels.hpp), the backend runs whatever it runs (OpenBLAS forced to its
// AVX2 Haswell kernels by OPENBLAS_CORETYPE, BLIS on its generic fallback, reference
// BLAS, or the same kernels as prism's). The model compares per-thread rates at prism's
// thread count:
//
//   prism   = leaf rate (1 thread, measured) x threads x prism_efficiency
//   backend = backend rate (its own threads, measured) x threads / backend threads
//
// and prism takes the call when prism >= take_margin x backend. Pure functions, so tests
// give them rates; the measured ones are never asserted.
#pragma once

namespace prism::dropin {

/// Measured inputs of the rate model for one element type (GF/s on the same probe).
struct rates {
  double leaf_gflops = 0;     ///< prism's leaf library, one thread
  double backend_gflops = 0;  ///< the backend with its own thread count
  int backend_threads = 1;    ///< the threads the backend ran with (at most the cores)
  double efficiency = 0.95;   ///< prism_efficiency: the machine description's dropin_efficiency
};

/// The model's prism_efficiency (machine_key::dropin_efficiency, lib/machine/machine.cpp):
/// prism's rate on squares and wide products as a share of threads x its leaf rate. With
/// the same kernels on both sides, prism is 0.97-1.00x threaded OpenBLAS there
/// (bench/results/full-2026-11-22.md), and threaded OpenBLAS reaches 0.96-0.99x twice its
/// one-thread rate on 2 cores (same file): 0.95 covers both. `prism tune` measures it.
inline constexpr double prism_efficiency = 0.95;

/// prism takes a call only when its modelled rate is at least this many times the
/// backend's; within 5% the backend keeps it (the probes' spread on a busy machine, and a
/// tie is not worth a second runtime's memory and threads).
inline constexpr double take_margin = 1.05;

/// prism's modelled rate with `threads` threads, GF/s. Example: leaves at 80 GF/s on
/// 2 threads give 80 x 2 x 0.95 = 152 GF/s.
constexpr double prism_rate(double leaf_gflops, int threads, double efficiency = prism_efficiency) noexcept {
  return leaf_gflops * double(threads) * efficiency;
}

/// The backend's rate scaled from its own thread count to `threads`, GF/s. Example: 60 GF/s
/// measured on 1 thread (OPENBLAS_NUM_THREADS=1), prism with 2 threads: 120 GF/s, so the
/// model compares kernels, not thread counts.
constexpr double backend_rate(double backend_gflops, int backend_threads, int threads) noexcept {
  return backend_threads > 0 ? backend_gflops * double(threads) / double(backend_threads) : backend_gflops;
}

/// True when prism's modelled rate is at least take_margin times the backend's. Example:
/// leaves 85 GF/s (AVX-512), backend 100 GF/s on 2 threads (AVX2), prism 2 threads:
/// 161.5 >= 1.05 x 100, prism takes it; leaves 85, backend 165 on 2 threads: 161.5 < 173.25,
/// the backend keeps it.
constexpr bool prism_faster(const rates& r, int threads) noexcept {
  return r.leaf_gflops > 0 && r.backend_gflops > 0 &&
         prism_rate(r.leaf_gflops, threads, r.efficiency) >= take_margin * backend_rate(r.backend_gflops, r.backend_threads, threads);
}

}  // namespace prism::dropin
