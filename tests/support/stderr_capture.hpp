// tests/support/stderr_capture.hpp — what a piece of code writes on stderr (file descriptor 2,
// so the library's fprintf and std::cerr alike).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

namespace prism::test {

/// Runs f with stderr going to a temporary file, and returns what it wrote there.
template <class F>
std::string stderr_of(F&& f) {
  std::fflush(stderr);
  std::FILE* file = std::tmpfile();
  const int saved = ::dup(2);
  ::dup2(::fileno(file), 2);
  f();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text += char(c);
  std::fclose(file);
  return text;
}

}  // namespace prism::test
