// tests/support/skip.hpp — a test that cannot check what it is for on this machine says so
// to ctest instead of passing: it prints why and exits with PRISM_TEST_SKIP_CODE, the code
// tests/CMakeLists.txt defines and declares as the entry's SKIP_RETURN_CODE, so ctest
// reports it as "Skipped" (a run without that property counts the code as a failure).
#pragma once

#include <cstdio>
#include <cstdlib>

#ifndef PRISM_TEST_SKIP_CODE
#error "PRISM_TEST_SKIP_CODE is defined by tests/CMakeLists.txt (prism_test_skip_code)"
#endif

namespace prism::test {

inline constexpr int skip_code = PRISM_TEST_SKIP_CODE;

/// Prints "<who>: SKIPPED: <why>" on stdout and ends the process with skip_code.
[[noreturn]] inline void skip(const char* who, const char* why) {
  std::printf("%s: SKIPPED: %s\n", who, why);
  std::exit(skip_code);
}

}  // namespace prism::test
