// tests/fuzz/fuzz_machine.cpp — fuzz target: the machine/tuning file reader
// (prism::machine_description::parse, include/prism/machine.hpp). Any input either is
// refused with a prism::error naming the line, or gives a description whose text parses
// back to the same text (parse(to_string()).to_string() == to_string()). The topology
// comes from a fixed hwloc synthetic description (set once), so no run reads this machine.
#include <prism/machine.hpp>
#include <prism/error.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("HWLOC_SYNTHETIC", "Package:1 L3Cache:1(size=8MiB) L2Cache:2(size=1MiB) L1dCache:1(size=32KiB) Core:1 PU:1", 1);
  unsetenv("PRISM_TOPOLOGY");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string once;
  try {
    once = prism::machine_description::parse(text).to_string();
  } catch (const prism::error&) {
    return 0;
  }
  try {
    const std::string twice = prism::machine_description::parse(once).to_string();
    if (twice != once) {
      std::fprintf(stderr, "fuzz_machine: FINDING: the text of a parsed description does not round-trip:\n%s\n--- parsed again:\n%s\n",
                   once.c_str(), twice.c_str());
      std::abort();
    }
  } catch (const prism::error& e) {
    std::fprintf(stderr, "fuzz_machine: FINDING: a parsed description's own text is refused: %s\n", e.what());
    std::abort();
  }
  return 0;
}
