// apps/measure.cpp — the tool's time units and clock (measure.hpp).
#include "measure.hpp"

#include <cstdio>

namespace prism_app {

std::string duration(double seconds) {
  char buf[32];
  if (seconds >= 1) std::snprintf(buf, sizeof buf, "%.3f s", seconds);
  else if (seconds >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
  else if (seconds >= 1e-6) std::snprintf(buf, sizeof buf, "%.3f us", seconds * 1e6);
  else std::snprintf(buf, sizeof buf, "%.1f ns", seconds * 1e9);
  return buf;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace prism_app
