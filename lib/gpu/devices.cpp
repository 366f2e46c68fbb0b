// lib/gpu/devices.cpp — the process's devices (devices.hpp): PRISM_GPU decides between
// none, emulated ones and CUDA's (cuda_devices() lives in cuda_device.cpp).
#include "devices.hpp"

#include "../environment/environment.hpp"
#include "bytes_text.hpp"
#include "emulated_device.hpp"

#include <prism/machine.hpp>
#include <prism/error.hpp>

#include <algorithm>
#include <exception>

namespace prism::detail::gpu {

namespace {

// The fixed seed `:delay` of PRISM_GPU gives (each device adds its index).
constexpr std::uint64_t prism_gpu_delay_seed = 0x5eed;

// The host's NUMA domains: at least one; one when the topology fails to load.
int host_domains() noexcept {
  try {
    return std::max(1, int(default_description().topo().domains().size()));
  } catch (const std::exception&) {
    return 1;
  }
}

std::shared_ptr<const device_set> from_environment() {
  const gpu_choice& g = process_environment().gpu.get();  // a bad value is said once, and is auto
  if (g.what == gpu_choice::mode::off) {
    auto none = std::make_shared<device_set>();
    none->status = "no GPU: PRISM_GPU=off";
    return none;
  }
  if (g.what == gpu_choice::mode::automatic) return cuda_devices();
  emulation_options opts;
  if (g.delay) opts.delay_seed = prism_gpu_delay_seed;
  auto set = std::make_shared<device_set>(*emulated_devices(g.count, std::size_t(g.bytes), opts));
  set->status += " (PRISM_GPU)";
  return set;
}

}  // namespace

std::shared_ptr<const device_set> emulated_devices(int count, std::size_t bytes, const emulation_options& opts) {
  if (count < 1 || count > 64) throw error("emulated_devices: count " + std::to_string(count) + " is not in 1..64");
  if (bytes < (std::size_t(1) << 20))
    throw error("emulated_devices: " + std::to_string(bytes) + " bytes is below 1 MiB");
  // Spread evenly over the host's D NUMA domains: device i of G on domain i * D / G, e.g.
  // G = 4 on D = 2: 0, 0, 1, 1; G = 2 on D = 4: 0, 2; G = 3 on D = 1: 0, 0, 0.
  const int domains = host_domains();
  auto set = std::make_shared<device_set>();
  for (int i = 0; i < count; ++i)
    set->devices.push_back(std::make_shared<emulated_device>(i, bytes, int(std::int64_t(i) * domains / count), opts));
  set->status =
      std::to_string(count) + (count == 1 ? " emulated device of " : " emulated devices of ") + bytes_text(bytes);
  return set;
}

std::shared_ptr<const device_set> process_devices() {
  // Never destroyed: calls may come at exit (docs/dropin.md).
  static const std::shared_ptr<const device_set>& set = *new std::shared_ptr<const device_set>([]() -> std::shared_ptr<const device_set> {
    try {
      return from_environment();
    } catch (const std::exception& e) {  // never throws: no GPU, and why
      auto none = std::make_shared<device_set>();
      none->status = std::string("no GPU: ") + e.what();
      return none;
    }
  }());
  return set;
}

}  // namespace prism::detail::gpu
