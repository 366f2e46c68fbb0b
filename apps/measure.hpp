// apps/measure.hpp — how the tool's subcommands time calls (bench, leaves, tune) and fill
// their operands.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace prism_app {

/// "1.234 us": a duration in the unit that keeps three digits before rounding to zero.
std::string duration(double seconds);

/// Seconds from t0 to now.
double seconds_since(std::chrono::steady_clock::time_point t0);

/// Seconds per call of f (time_calls): the best of `reps` timings, each of `calls` back-to-back calls,
/// `calls` chosen (doubling from 1) so that one timing lasts at least min_timing seconds.
struct timing {
  double seconds;  // per call
  long calls;      // per timing
};
constexpr double min_timing = 0.05;

/// Seconds per call of f, best of `reps` timings of `calls` back-to-back calls (timing).
template <class F>
timing time_calls(int reps, F&& f) {
  auto batch = [&](long calls) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long r = 0; r < calls; ++r) f();
    return seconds_since(t0);
  };
  f();  // warm-up, untimed: a process's first call loads the leaf libraries (tens of ms)
  long calls = 1;
  double t = batch(calls);
  while (t < min_timing && calls < (1L << 40)) {
    calls = t > min_timing / 100 ? long(std::ceil(double(calls) * 1.2 * min_timing / t)) : calls * 100;
    t = batch(calls);
  }
  double best = t;
  for (int r = 1; r < reps; ++r) best = std::min(best, batch(calls));
  return {best / double(calls), calls};
}

/// count elements uniform in [-1, 1) (both parts for complex T), from `seed`.
template <class T>
std::vector<T> random_matrix(std::size_t count, unsigned seed) {
  std::vector<T> v(count);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& x : v) {
    if constexpr (std::same_as<T, float> || std::same_as<T, double>) x = T(u(gen));
    else x = T(typename T::value_type(u(gen)), typename T::value_type(u(gen)));
  }
  return v;
}

}  // namespace prism_app
