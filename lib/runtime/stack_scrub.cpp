// lib/runtime/stack_scrub.cpp — loading prism leaves zeros below its initializer on the
// host's stack, not what the loader and prism's dependencies wrote there.
//
// Loading a shared library runs code on the main thread's stack before the program's main:
// the dynamic loader maps and relocates the library and its dependencies, and their
// initializers run. What that code leaves below the stack pointer is what a host program
// later finds in any local variable it reads before writing. A correct program never looks;
// one that does (Debian's PBLAS tester pzblas3tst.f reads IERR(5) uninitialized: see
// docs/development.md, "Coexistence with host programs") computes a different result
// depending on which libraries were loaded. So prism's last initializer zeroes the stack
// region below it that this loading dirtied, and the host reads what it would read on stack
// pages nothing had touched: zeros.
//
// This file must be the last object linked into each prism library (CMakeLists.txt), so that
// its initializer runs after every other initializer of that library.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

extern "C" {
// glibc: the top of the main thread's stack (the address of argc at process entry).
extern void* __libc_stack_end;
}

namespace prism::detail {
namespace {

// Bytes zeroed below the initializer's frame: the dynamic loader's own work plus its lazy
// binding (which saves the full AVX-512 register state on the stack) reach about 8 KiB
// below an initializer's frame on this project's machines; 64 KiB covers heavier ones.
constexpr std::size_t scrub_bytes = 64 * 1024;
// Stack left free under the scrubbed region, whatever the program needs later.
constexpr std::size_t stack_margin = 256 * 1024;

// Zeroes scrub_bytes of stack below the caller, in a frame of its own.
[[gnu::noinline]] void zero_stack_below() {
  unsigned char region[scrub_bytes];
  explicit_bzero(region, sizeof region);                 // never elided, unlike memset
  __asm__ volatile("" : : "r"(region) : "memory");       // region is "used" after the zeroing
}

// Whether the scrub fits: on the main thread only (another thread's stack may be small and
// is not where a program's startup ran), and with the stack limit well above what is in use.
bool scrub_fits() {
  if (::syscall(SYS_gettid) != ::getpid()) return false;
  rlimit limit{};
  if (::getrlimit(RLIMIT_STACK, &limit) != 0) return false;
  if (limit.rlim_cur == RLIM_INFINITY) return true;
  const auto top = reinterpret_cast<std::uintptr_t>(__libc_stack_end);
  const auto here = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  const std::uintptr_t used = top > here ? top - here : 0;
  return used + scrub_bytes + stack_margin <= limit.rlim_cur;
}

// Runs when the library is loaded, after the library's other initializers (link order).
[[gnu::constructor]] void scrub_stack_after_load() {
  if (scrub_fits()) zero_stack_below();
}

}  // namespace
}  // namespace prism::detail
