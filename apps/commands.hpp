// apps/commands.hpp — the subcommands of the prism tool, one file each (main.cpp's table
// calls them; cli.hpp parses their options).
#pragma once

#include "cli.hpp"

#include <string>
#include <vector>

namespace prism_app {

/// `prism plan`: the plan prism runs for a shape on this machine (plan.cpp).
int run_plan(const options& o);

/// `prism bench`: prism against its own leaf libraries on one shape (bench.cpp).
int run_bench(const options& o);

/// `prism leaves`: the leaf kernels and libraries, timed (leaves.cpp).
int run_leaves(const options& o);

/// `prism tune`: this machine's crossovers, written to a machine file (tune.cpp).
int run_tune(const options& o);

/// `prism bound`: the lower bounds of a product and the classic schedules' costs (bound.cpp).
int run_bound(const std::vector<std::string>& args);

/// `prism info`: the version, the machine, its NUMA domains, threads and GPUs (info.cpp).
int run_info();

}  // namespace prism_app
