// apps/cli.hpp — what every subcommand of the prism tool shares: the command table, the
// options of the command line and their parser, and bad input (one line on stderr, exit 2).
#pragma once

#include <prism/context.hpp>
#include <prism/types.hpp>

#include "run.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace prism_app {

/// Bad input: printed as "prism: <what>", plus a pointer to the help when `hint` names a command.
struct bad_input : std::runtime_error {
  std::string hint;  // "plan", "" for the general help, or "-" for none
  bad_input(const std::string& what, std::string help = "-") : std::runtime_error(what), hint(std::move(help)) {}
};

/// One subcommand of the tool: its name, whether it takes a shape, and its help.
struct command {
  const char* name;
  bool shape;         // takes M N K and the shape options
  int reps;           // takes --reps with this default (0: no --reps)
  const char* usage;  // first lines of its help
};

/// The command named `name`, or nullptr.
const command* find_command(const std::string& name);

/// The names of every command, "plan, run, ..." (for the missing-command line).
std::string command_names();

/// Prints `prism help` (no command named) on stdout.
void print_general_help();

/// Prints command c's help on stdout.
void print_help(const command& c);

/// s as a whole number in lo..hi; throws bad_input naming `what` (help `hint`) otherwise.
std::int64_t parse_int(const std::string& s, const std::string& what, std::int64_t lo, std::int64_t hi,
                       const std::string& hint);

/// The options of a command line (what each field is for: the comment beside it).
struct options {
  prism::problem p;
  prism::context ctx;
  int reps = 5;
  bool streaming_only = false;  // `prism leaves --streaming`: the streaming leaf's table only
  bool syrk_only = false;       // `prism leaves --syrk`: the streaming syrk leaf's table only
  std::string leaf_types = "d";  // `prism leaves --types`
  bool leaf_types_given = false;  // the streaming table then times those types only
  bool trans_given = false;       // --trans (a rank-k update takes its letters from --syrk / --herk)
  bool stats = false;  // `prism plan --stats`
  bool on_device = false;  // `prism plan --on-device`: the plan for operands in a device's memory
  int full = -1;       // `prism plan --ranks`: 1 --full, 0 --summary, -1 by size (summary above 16 ranks)
  bool min_memory = false;  // `prism plan --ranks --min-memory`: the least-footprint plan
  std::string tune_out;     // `prism tune --out`
  bool tune_show = false;   // `prism tune --show`: print the description in use, measure nothing
  bool tune_first_use = false;  // `prism tune --first-use`: the first-use measurement, now
  bool reps_given = false;  // --reps was given
  run_options run;  // `prism run`'s own settings
};

/// The options args gives command cmd (args[0] the tool, args[1] the command); throws
/// bad_input for anything the command does not take.
options parse(const command& cmd, const std::vector<std::string>& args);

}  // namespace prism_app
