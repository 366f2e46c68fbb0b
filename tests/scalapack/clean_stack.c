/* tests/scalapack/clean_stack.c — libpblas_clean_stack.so, the reference of the ctest entry
 * pblas_coexistence for a tester whose table depends on uninitialized stack: preloaded
 * alone, its initializer (the last to run before main) zeroes 64 KiB of stack below it, so
 * the tester reads zeros where it reads a local it never wrote, as it would with prism
 * preloaded (lib/runtime/stack_scrub.cpp). It depends on libc only and does nothing else. */
#include <string.h>

/* Zeroes 64 KiB of stack below the caller, in a frame of its own. */
__attribute__((noinline)) static void zero_stack_below(void) {
  unsigned char region[64 * 1024];
  explicit_bzero(region, sizeof region);
  __asm__ volatile("" : : "r"(region) : "memory");
}

/* Runs when the library is loaded. */
__attribute__((constructor)) static void clean_stack_at_load(void) { zero_stack_below(); }
