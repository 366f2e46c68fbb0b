// lib/environment/run_once.hpp — std::call_once for work that every call looks up.
//
// libstdc++'s std::call_once stores two thread-local pointers and calls pthread_once on
// every call, done or not: from a shared library that is two __tls_get_addr calls and a
// pthread_once, some 10 ns. A 16^3 dgemm leaf takes about 120 ns, and a small call used to
// pass four such gates (the first-use values, the leaf library, the SIMD choice), which
// made prism::gemm 1.5x a direct BLAS call there. run_once reads one flag first.
//
// Process-wide state, hence this floor (it includes nothing of lib/).
#pragma once

#include <atomic>
#include <mutex>
#include <utility>

namespace prism::detail {

/// A once-flag whose completed state costs one acquire load: run_once once; once(f);
class run_once {
 public:
  /// Runs f the first time, as std::call_once does (other threads wait for it; if f
  /// throws, the next call runs it again); afterwards returns at once.
  template <class F>
  void operator()(F&& f) {
    if (done()) [[likely]]
      return;
    std::call_once(flag_, std::forward<F>(f));
    done_.store(true, std::memory_order_release);
  }
  /// True once the work has run (an acquire load: what it wrote is visible).
  bool done() const { return done_.load(std::memory_order_acquire); }

 private:
  std::once_flag flag_;
  std::atomic<bool> done_{false};
};

}  // namespace prism::detail
