// lib/gpu/bytes_text.hpp — memory sizes as the GPU level's names and statuses print them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace prism::detail::gpu {

/// "64.0 MiB", "1.00 GiB", "139.8 GiB": bytes in the largest binary unit that leaves at
/// least 1, two decimals below 10 of it and one from 10 up; plain bytes below 1 KiB.
inline std::string bytes_text(std::uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace prism::detail::gpu
