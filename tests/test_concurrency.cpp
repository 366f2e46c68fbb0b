// tests/test_concurrency.cpp — many callers at once: 8 caller threads, calls from inside a
// caller's tbb::parallel_for and from inside an OpenMP parallel region. Results must be
// right, nothing may deadlock (ctest's timeout catches a hang), and the process must not
// grow threads beyond callers + oneTBB's pool (no oversubscription blow-up).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "environment/run_once.hpp"
#include "runtime/runtime.hpp"
#include "support/reference.hpp"
#include "support/stderr_capture.hpp"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <omp.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace prism;
using prism::test::check_bound;
using prism::test::random_matrix;
using prism::test::reference_gemm;

namespace {

int os_threads() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

// Samples the process's thread count while alive; max() is the peak seen.
class thread_watch {
 public:
  thread_watch() : worker_([this] {
    while (!stop_) {
      peak_ = std::max(peak_.load(), os_threads());
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }) {}
  ~thread_watch() { finish(); }
  int finish() {
    stop_ = true;
    if (worker_.joinable()) worker_.join();
    return peak_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> peak_{0};
  std::thread worker_;
};

// One checked call of a tall-skinny product (k-cuts and temporaries), varied by `id`.
bool checked_call(int id, const context& ctx) {
  std::mt19937_64 gen(1000 + id);
  const std::int64_t m = 8 + id % 5, n = 6 + id % 7, k = 20000 + 37 * id;
  auto A = random_matrix<double>(k, m, k, gen), B = random_matrix<double>(k, n, k, gen);
  auto C = random_matrix<double>(m, n, m, gen);
  auto ref = reference_gemm('T', 'N', m, n, k, 1.0, A.data(), k, B.data(), k, 0.5, C.data(), m);
  gemm<double>('T', 'N', m, n, k, 1.0, A.data(), k, B.data(), k, 0.5, C.data(), m, ctx);
  return check_bound(ref, m, n, k, C.data(), m).empty();
}


context forced(int threads) {
  context c;
  c.set_threads(threads).set_small_flops(0);
  return c;
}

}  // namespace

TEST_CASE("8 caller threads at once, sharing one context and using their own") {
  const context shared = forced(3);
  checked_call(0, shared);  // load the leaf libraries before counting threads
  const int base = os_threads();
  std::atomic<int> failures{0};
  thread_watch watch;
  std::vector<std::thread> callers;
  for (int t = 0; t < 8; ++t)
    callers.emplace_back([&, t] {
      const context own = forced(1 + t % 4);
      for (int r = 0; r < 6; ++r) {
        if (!checked_call(t * 10 + r, shared)) ++failures;
        if (!checked_call(t * 10 + r + 5, own)) ++failures;
      }
    });
  for (auto& c : callers) c.join();
  const int peak = watch.finish();
  CHECK(failures == 0);
  // Callers + the watcher + oneTBB's worker pool (default concurrency - 1): nothing more.
  INFO("threads before ", base, ", peak ", peak);
  CHECK(peak <= base + 8 + 1 + oneapi::tbb::info::default_concurrency());
}

TEST_CASE("calls from inside a caller's tbb::parallel_for") {
  const context ctx = forced(2);
  checked_call(0, ctx);
  const int base = os_threads();
  std::atomic<int> failures{0};
  thread_watch watch;
  oneapi::tbb::parallel_for(0, 24, [&](int i) {
    if (!checked_call(i, ctx)) ++failures;
    if (!checked_call(i + 100, default_context())) ++failures;
  });
  const int peak = watch.finish();
  CHECK(failures == 0);
  INFO("threads before ", base, ", peak ", peak);
  CHECK(peak <= base + 1 + oneapi::tbb::info::default_concurrency());
}

TEST_CASE("calls from inside an OpenMP parallel region") {
  const context ctx = forced(2);
  checked_call(0, ctx);
  std::atomic<int> failures{0};
  int team = 0;
  const int base = os_threads();
  thread_watch watch;
#pragma omp parallel num_threads(4)
  {
#pragma omp single
    team = omp_get_num_threads();
#pragma omp for schedule(dynamic)
    for (int i = 0; i < 16; ++i)
      if (!checked_call(i, ctx)) ++failures;
  }
  const int peak = watch.finish();
  CHECK(team == 4);
  CHECK(failures == 0);
  // The OpenMP team (4, counting this thread) + watcher + oneTBB's pool.
  INFO("threads before ", base, ", peak ", peak);
  CHECK(peak <= base + 3 + 1 + oneapi::tbb::info::default_concurrency());
}

TEST_CASE("a thread budget above the core count runs without oneTBB's warning") {
  const int cores = oneapi::tbb::info::default_concurrency();
  const context ctx = forced(4 * cores);  // 8 on 2 cores
  std::atomic<int> failures{0};
  const std::string err = test::stderr_of([&] {
    for (int i = 0; i < 4; ++i)
      if (!checked_call(i, ctx)) ++failures;
  });
  CHECK(failures == 0);
  CHECK(err.find("number of workers") == std::string::npos);  // "TBB Warning: The number of workers is ..."
  CHECK(prism::detail::runtime_of(ctx).arena().max_concurrency() == cores);     // oneTBB's limit: the cores
}

TEST_CASE("a program's own tbb::global_control sets the limit prism's arena follows") {
  const int above = 3 * oneapi::tbb::info::default_concurrency();
  oneapi::tbb::global_control limit(oneapi::tbb::global_control::max_allowed_parallelism, std::size_t(above));
  const context ctx = forced(above);
  std::atomic<int> failures{0};
  const std::string err = test::stderr_of([&] {
    for (int i = 0; i < 4; ++i)
      if (!checked_call(i, ctx)) ++failures;
  });
  CHECK(failures == 0);
  CHECK(err.find("number of workers") == std::string::npos);
  CHECK(prism::detail::runtime_of(ctx).arena().max_concurrency() == above);
  CHECK(prism::detail::runtime_of(forced(above + 1)).arena().max_concurrency() == above);  // above the program's limit
}

TEST_CASE("run_once: the work runs once among racing threads, again after it threw") {
  prism::detail::run_once once;
  std::atomic<int> runs{0}, after{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      once([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the others arrive meanwhile
        ++runs;
      });
      after += runs.load();  // every caller returns after the work is done
    });
  for (auto& t : threads) t.join();
  CHECK(runs == 1);
  CHECK(after == 8);
  once([&] { ++runs; });
  CHECK(runs == 1);
  // A throwing first run leaves the flag unset, as std::call_once does.
  prism::detail::run_once fails;
  int tries = 0;
  CHECK_THROWS(fails([&] {
    ++tries;
    throw std::runtime_error("not now");
  }));
  fails([&] { ++tries; });
  fails([&] { ++tries; });
  CHECK(tries == 2);
}
