// tests/dropin/check_threads.cpp — libprism_blas under a multi-threaded caller:
//   - 8 std::threads calling cblas_dgemm / dgemm_ at once (recursion and backend paths);
//   - calls from inside an OpenMP parallel region (8 threads) and a oneTBB parallel_for;
// every result is checked exactly (integer-valued inputs, so any order of summation gives
// the same double). Afterwards: OPENBLAS_NUM_THREADS / OMP_NUM_THREADS are unchanged, the
// backend's own thread count is unchanged, and the process has no more threads than the
// callers + prism's budget (PRISM_NUM_THREADS) + the backend's pool: prism runs calls in
// its own arena and does not start threads per call.
//   check_threads [--backend-threads] [--no-openmp]
// --no-openmp leaves the OpenMP region out (96 calls instead of 144): the ThreadSanitizer
// build runs it so, because GCC's libgomp is not TSan-built and TSan cannot see its joins
// (docs/development.md, "ThreadSanitizer"); that build reports the region as a skipped entry.
// The backend's thread count can be read only when libblas.so.3 is OpenBLAS; otherwise that
// check is not made, said on stdout, and --backend-threads (the dropin_threads entry, whose
// claim it is) turns a pass of everything else into a skip reported to ctest.
extern "C" {
#include "blas_abi.h"
}
#include "support/skip.hpp"

#include <dlfcn.h>
#include <omp.h>
#include <oneapi/tbb/parallel_for.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<int> failures{0}, calls{0};

int process_threads() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  return -1;
}

// C = A B (+ C0 when beta = 1) with A(i, l) = (i + l) % 3 - 1 and B(l, j) = (l + 2 j) % 5 - 2:
// integer-valued, so every summation order gives the exact value.
void one_call(int id, blas_int m, blas_int n, blas_int k, bool fortran) {
  std::vector<double> A(std::size_t(m) * k), B(std::size_t(k) * n), C(std::size_t(m) * n, double(id));
  for (blas_int l = 0; l < k; ++l)
    for (blas_int i = 0; i < m; ++i) A[i + std::size_t(l) * m] = double((i + l) % 3 - 1);
  for (blas_int j = 0; j < n; ++j)
    for (blas_int l = 0; l < k; ++l) B[l + std::size_t(j) * k] = double((l + 2 * j) % 5 - 2);
  const double alpha = 1.0, beta = 1.0;
  if (fortran) {
    const char N = 'N';
    dgemm_(&N, &N, &m, &n, &k, &alpha, A.data(), &m, B.data(), &k, &beta, C.data(), &m, 1, 1);
  } else {
    cblas_dgemm(ColMajor, NoTrans, NoTrans, m, n, k, alpha, A.data(), m, B.data(), k, beta, C.data(), m);
  }
  for (blas_int j = 0; j < n; ++j)
    for (blas_int i = 0; i < m; ++i) {
      double want = double(id);
      for (blas_int l = 0; l < k; ++l) want += double((i + l) % 3 - 1) * double((l + 2 * j) % 5 - 2);
      if (C[i + std::size_t(j) * m] != want) {
        if (failures.fetch_add(1) < 10)
          std::fprintf(stderr, "FAIL caller %d: %lldx%lldx%lld C(%lld,%lld) = %g, expected %g\n", id, (long long)m,
                       (long long)n, (long long)k, (long long)i, (long long)j, C[i + std::size_t(j) * m], want);
        return;
      }
    }
  calls.fetch_add(1);
}

// A mix: k-dominant (recursion), small (backend), wide (backend).
void mix(int id, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    one_call(id, 16, 12, 40000, r % 2 == 0);
    one_call(id, 8, 8, 8, r % 2 == 1);
    one_call(id, 200, 150, 40, false);  // 2.4 Mflop, not k-dominant: backend
  }
}

std::string env_or(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "<unset>";
}

}  // namespace

int main(int argc, char** argv) {
  bool backend_threads_required = false, openmp = true;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--backend-threads") backend_threads_required = true;
    else if (arg == "--no-openmp") openmp = false;
  }
  const std::string obt = env_or("OPENBLAS_NUM_THREADS"), omp = env_or("OMP_NUM_THREADS");
  void* backend = dlopen("libblas.so.3", RTLD_NOW | RTLD_LOCAL);
  auto backend_threads = backend ? reinterpret_cast<int (*)()>(dlsym(backend, "openblas_get_num_threads")) : nullptr;
  const int backend_before = backend_threads ? backend_threads() : -1;

  {  // 8 caller threads at once
    std::vector<std::thread> callers;
    for (int t = 0; t < 8; ++t) callers.emplace_back(mix, t, 3);
    for (auto& c : callers) c.join();
  }
  int peak = 0;
  if (openmp) {
#pragma omp parallel num_threads(8)
    {  // from inside an OpenMP region
      mix(100 + omp_get_thread_num(), 2);
#pragma omp critical
      peak = std::max(peak, process_threads());
    }
  } else {
    std::printf("check_threads: the OpenMP region is left out (--no-openmp)\n");
  }
  // from inside a oneTBB region (the caller's own arena; prism's runs nested in it)
  oneapi::tbb::parallel_for(0, 8, [](int i) { mix(200 + i, 1); });

  const int prism_threads = std::getenv("PRISM_NUM_THREADS") ? std::atoi(std::getenv("PRISM_NUM_THREADS")) : 0;
  const int backend_after = backend_threads ? backend_threads() : -1;
  // Inside the OpenMP region: 8 OpenMP threads (the main thread is one), at most
  // prism_threads - 1 oneTBB workers and the backend's pool (backend_before - 1 helpers).
  // The pool OpenBLAS starts when prism's private leaf copy loads is stopped at once (the
  // copy runs one thread), so it adds nothing. Example, 2 cores, PRISM_NUM_THREADS=2:
  // 8 + 1 + 1 = 10. A thread per call, a pool per caller, or a leaf pool left running
  // would exceed it.
  const int limit = 8 + std::max(prism_threads - 1, 0) + std::max(backend_before - 1, 0);
  std::printf("check_threads: %d calls checked, %d failures; threads in the OpenMP region: %d (limit %d); "
              "backend threads %d -> %d; OPENBLAS_NUM_THREADS=%s OMP_NUM_THREADS=%s\n",
              calls.load(), failures.load(), peak, limit, backend_before, backend_after, env_or("OPENBLAS_NUM_THREADS").c_str(),
              env_or("OMP_NUM_THREADS").c_str());
  bool ok = failures.load() == 0 && calls.load() == 3 * (8 * 3 + (openmp ? 8 * 2 : 0) + 8);
  if (env_or("OPENBLAS_NUM_THREADS") != obt || env_or("OMP_NUM_THREADS") != omp) {
    std::fprintf(stderr, "FAIL: prism changed OPENBLAS_NUM_THREADS or OMP_NUM_THREADS\n");
    ok = false;
  }
  if (backend_before != backend_after) {
    std::fprintf(stderr, "FAIL: the backend's thread count changed\n");
    ok = false;
  }
  if (prism_threads > 0 && peak > limit) {
    std::fprintf(stderr, "FAIL: %d threads inside the OpenMP region, more than %d\n", peak, limit);
    ok = false;
  }
  if (!ok) return 1;
  if (!backend_threads) {
    const char* why = backend ? "the backend's thread count is not checked: libblas.so.3 is not OpenBLAS "
                                "(no openblas_get_num_threads)"
                              : "the backend's thread count is not checked: libblas.so.3 cannot be opened";
    if (backend_threads_required) prism::test::skip("check_threads", why);
    std::printf("check_threads: %s\n", why);
  }
  return 0;
}
