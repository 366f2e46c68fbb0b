// tests/support/machines.hpp — the machine descriptions tests pin. A test that asserts a
// plan's shape or a rule's choice states the machine it assumes, so it passes on any host
// and under any PRISM_MACHINE / HWLOC_SYNTHETIC the suite runs with.
#pragma once

#include <prism/context.hpp>
#include <prism/machine.hpp>

#include <string>

namespace prism::test {

/// The example machine the README is rendered for (docs/machines/epyc-2c.machine): the
/// developers' 2-core AMD EPYC with AVX-512, 1 MiB L2 and a 508 MiB "L3" per core.
inline const machine_description& epyc_2c() {
  static const machine_description m = machine_description::load(PRISM_SOURCE_DIR "/docs/machines/epyc-2c.machine");
  return m;
}

/// The example machine with another topology (an hwloc synthetic description with cache
/// sizes), its values the model's for that topology.
inline machine_description epyc_2c_with(const std::string& synthetic) {
  machine_description m = epyc_2c();
  m.set_topology(topology::synthetic(synthetic));
  return m;
}

/// A context pinned to the example machine with `threads` threads.
inline context pinned_context(int threads) {
  context c;
  c.set_description(epyc_2c());
  c.set_threads(threads);
  return c;
}

}  // namespace prism::test
