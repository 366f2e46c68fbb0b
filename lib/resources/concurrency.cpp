// lib/resources/concurrency.cpp — see concurrency.hpp.
#include "concurrency.hpp"

#include "../environment/environment.hpp"

#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <cstdio>
#include <mutex>

namespace prism::detail {

// ---- oneTBB's thread limit ---------------------------------------------------------------
// oneTBB caps the threads of the whole process at max_allowed_parallelism (default: the
// cores it may use) and prints "The number of workers is currently limited to ..." when an
// arena asks for more. prism sizes its arenas to that limit instead and says so once under
// PRISM_VERBOSE: a budget above it still gets a plan with that many shares and a correct
// result, computed by the threads oneTBB allows. A program that wants more threads than
// cores raises the limit with its own tbb::global_control, and prism's arenas follow it.
// prism does not raise the limit itself, so a library call never changes how many threads
// the whole process may run.

namespace {
std::once_flag clamp_note;
}  // namespace

int allowed_concurrency(int threads) {
  const std::size_t limit =
      oneapi::tbb::global_control::active_value(oneapi::tbb::global_control::max_allowed_parallelism);
  if (limit >= std::size_t(threads)) return threads;
  const int allowed = std::max(1, int(limit));
  if (process_environment().verbose.get() > 0)
    std::call_once(clamp_note, [&] {
      std::fprintf(stderr, "prism: thread budget %d is above oneTBB's limit of %d threads (max_allowed_parallelism); "
                           "prism's arena uses %d (a tbb::global_control in the program can raise the limit)\n",
                   threads, allowed, allowed);
    });
  return allowed;
}

}  // namespace prism::detail
