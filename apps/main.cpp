// apps/main.cpp — the prism command-line tool (`prism help` lists the commands): the table
// of subcommands, one file each (commands.hpp), and the tool's promise.
//
// Its promise: every bad input (command, option, value, PRISM_* variable, a size this machine
// cannot hold) gets one line on stderr naming what was wrong and exit status 2; any other
// failure exits 1.
#include "cli.hpp"
#include "commands.hpp"

#include <prism/version.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace prism_app;

// `prism run`: the distributed multiply under mpirun, in MPI builds only.
int run_mpi(const options& o) {
#ifdef PRISM_HAVE_MPI
  run_options r = o.run;
  r.p = o.p;
  r.ctx = o.ctx;
  return run_distributed(r);
#else
  (void)o;
  throw bad_input("prism run needs the MPI build: configure with -DPRISM_WITH_MPI=ON (libopenmpi-dev)", "-");
#endif
}

// A subcommand's entry: the ones that take the parsed options, and the two that read their
// own arguments (bound's are its own; info takes none).
struct subcommand {
  const char* name;
  int (*run)(const command& c, const std::vector<std::string>& args);
};

template <int (*F)(const options&)>
int with_options(const command& c, const std::vector<std::string>& args) {
  return F(parse(c, args));
}

int bound(const command&, const std::vector<std::string>& args) { return run_bound(args); }

int info(const command&, const std::vector<std::string>& args) {
  if (args.size() > 2) throw bad_input("info takes no arguments", "info");
  return run_info();
}

// Every command of cli.cpp's table, and the function that runs it.
const subcommand subcommands[] = {
    {"plan", with_options<run_plan>},   {"run", with_options<run_mpi>},     {"bench", with_options<run_bench>},
    {"leaves", with_options<run_leaves>}, {"tune", with_options<run_tune>}, {"bound", bound},
    {"info", info},
};

int run(const std::vector<std::string>& args) {
  if (args.size() < 2) {  // name every command, from the table `prism help` describes
    throw bad_input("missing command: " + command_names() + "help or --version", "");
  }
  const std::string& name = args[1];
  if (name == "--version") {
    if (args.size() > 2) throw bad_input("--version takes no arguments", "");
    std::printf("prism %s\n", prism::version());
    return 0;
  }
  if (name == "help" || name == "--help" || name == "-h") {
    if (args.size() > 3) throw bad_input("help takes at most one command", "");
    if (args.size() == 2) {
      print_general_help();
      return 0;
    }
    const command* c = find_command(args[2]);
    if (c == nullptr) throw bad_input("unknown command '" + args[2] + "'", "");
    print_help(*c);
    return 0;
  }
  const command* c = find_command(name);
  if (c == nullptr) throw bad_input("unknown command '" + name + "'", "");
  for (std::size_t i = 2; i < args.size(); ++i)
    if (args[i] == "--help" || args[i] == "-h") {
      print_help(*c);
      return 0;
    }
  for (const subcommand& sub : subcommands)
    if (name == sub.name) return sub.run(*c, args);
  throw bad_input("command '" + name + "' has no entry in main.cpp's table", "-");
}
}  // namespace

// Under mpirun every rank parses the same command line and meets the same bad input, so
// only rank 0 of the launch says so (the launcher's own variables name the rank; MPI is not
// initialised yet when the command line is parsed).
bool launched_rank_zero() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::strcmp(v, "0") == 0;
  return true;
}

int main(int argc, char** argv) {
  // prism reads CPUs, caches, NUMA nodes and PCI locality from hwloc, never its X11, OpenCL
  // or libxml2 plugins (hwloc's own XML reader stays); loading them and the libraries they
  // pull in (X11, ICU) took 6 of the 25 ms of `prism plan 64 64 64` on a 2-core host. A
  // user's own setting wins.
  setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_gl,hwloc_opencl,hwloc_xml_libxml", 0);
#ifdef __GLIBC__
  // A rank plan allocates and frees many small lists; glibc growing the heap 128 KB at a
  // time (and handing it back) made a tenth of `prism plan 1024 1024 1024 --ranks 1024` page
  // faults. 64 MB of address space at a time; pages are still touched only as used (the
  // peak resident size is unchanged). The tool's own setting: the library leaves malloc be.
  mallopt(M_TOP_PAD, 64 << 20);
#endif
  try {
    return run(std::vector<std::string>(argv, argv + argc));
  } catch (const bad_input& e) {
    if (!launched_rank_zero()) {
      // The launcher ends the whole job as soon as any rank exits non-zero, so a rank that
      // left at once could get rank 0 killed before it printed, and the job would fail with
      // no message. The others leave after rank 0 has spoken: its exit ends the job, and
      // this wait only runs out under a launcher that lets the rest go on.
      std::this_thread::sleep_for(std::chrono::seconds(3));
      return 2;
    }
    if (e.hint == "-") std::fprintf(stderr, "prism: %s\n", e.what());
    else if (e.hint.empty()) std::fprintf(stderr, "prism: %s (see 'prism help')\n", e.what());
    else std::fprintf(stderr, "prism: %s (see 'prism help %s')\n", e.what(), e.hint.c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "prism: not enough memory (std::bad_alloc)\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prism: %s\n", e.what());
    return 1;
  }
}
