// apps/info.cpp — `prism info`: the version, the machine description's summary, NUMA
// domains, threads and the GPUs (each device, or why there are none).
#include "commands.hpp"

#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/machine.hpp>
#include <prism/version.hpp>

#include "gpu/devices.hpp"

#include <cstdio>

namespace prism_app {

int run_info() {
  const prism::machine_description* d = nullptr;
  int threads = 0;
  try {  // a malformed PRISM_* variable is bad input, said before anything is printed
    d = &prism::default_description();
    threads = prism::default_context().threads();
  } catch (const prism::error& e) {
    throw bad_input(e.what());
  }
  std::printf("prism %s\n", prism::version());
  std::printf("%s\n", d->summary().c_str());
  std::printf("cpu: %s; simd: %s %d\n", d->cpu().c_str(), d->simd().c_str(), d->simd_bits());
  std::printf("cores: %d, NUMA domains: %d; threads: %d\n", d->cores(), d->numa_domains(), threads);
  const auto set = prism::detail::gpu::process_devices();
  std::printf("gpu: %s\n", set->status.c_str());
  for (const auto& dev : set->devices)
    std::printf("gpu %d: %s; nearest NUMA domain %d\n", dev->index(), dev->name().c_str(), dev->numa_domain());
  return 0;
}

}  // namespace prism_app
