// probes/fma_peak.hpp — the machine's fused-multiply-add peak, measured.
//
// One of the two machine probes (prism_probes, built with -march=native with bandwidth.cpp
// and nothing else): it runs independent FMA chains on the widest vectors the compiler
// gives for this machine, on all cores at once, so the benchmarks can say how far from peak
// a gemm is, and `prism bound --probe` what one core's peak is.
#pragma once

#include <cstdint>

namespace prism_probes {

/// Runs `threads` threads at once, thread t pinned to the t-th allowed CPU; each performs `steps` steps of the FMA kernel on doubles.
/// Returns the real flops executed by all threads together (2 per lane per FMA).
double fma_peak_double(int threads, std::int64_t steps);

/// Same on floats.
double fma_peak_float(int threads, std::int64_t steps);

/// Bytes of one vector of the kernel (64 with AVX-512, 32 with AVX2, ...).
int fma_vector_bytes();

/// Independent accumulator chains per thread.
int fma_chains();

/// Whether the last run managed to pin every thread.
bool fma_pinned();

/// The instruction set the kernel was compiled for, e.g. "avx512f+fma".
const char* fma_isa();

}  // namespace prism_probes
