// apps/prism.cpp — the prism command-line tool (`prism help` lists the commands).
//
// Its promise: every bad input (command, option, value, PRISM_* variable, a size this machine
// cannot hold) gets one line on stderr naming what was wrong and exit status 2; any other
// failure exits 1.
#include <prism/bounds.hpp>
#include <prism/rank_k_model.hpp>
#include <prism/rank_model.hpp>
#include <prism/prism.hpp>
#include <prism/traffic.hpp>

#include "bandwidth.hpp"
#include "leaf/backend/blas_library.hpp"
#include "environment/environment.hpp"
#include "fma_peak.hpp"
#include "leaf/dispatch.hpp"
#include "leaf/first_use.hpp"
#include "leaf/kernels/streaming.hpp"
#include "prism_gpu.hpp"
#include "wisdom/wisdom.hpp"
#include "prism_run.hpp"
#include "runtime/runtime.hpp"

#include <oneapi/tbb/info.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <limits>
#include <new>
#include <random>
#include <stdexcept>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// Bad input: printed as "prism: <what>", plus a pointer to the help when `hint` names a command.
struct bad_input : std::runtime_error {
  std::string hint;  // "plan", "" for the general help, or "-" for none
  bad_input(const std::string& what, std::string help = "-") : std::runtime_error(what), hint(std::move(help)) {}
};

const char* general_help =
    "usage: prism <command> [arguments]\n"
    "\n"
    "  plan M N K [options]     print the plan prism::gemm runs for an M x N x K product\n"
    "  bench M N K [options]    time prism against threaded OpenBLAS on one shape\n"
    "  leaves [--reps R]        the leaf libraries' kernel sets (what prism chose and why), and\n"
    "                           OpenBLAS, BLIS and the streaming leaf timed on leaf shapes\n"
    "  tune [--out FILE]        measure this machine's crossovers and write its machine file\n"
    "  run M N K [options]      (under mpirun) one distributed multiply: plan, time, bytes per rank\n"
    "  bound M N K [options]    lower bounds on the words an M x N x K product moves, per rank and\n"
    "                           per level of the machine, beside the classic decompositions' costs\n"
    "  info                     this machine as prism sees it: CPU, cores, NUMA domains, GPUs\n"
    "  help [command]           this text, or one command's options\n"
    "\n"
    "prism --version prints the version. Defaults come from the PRISM_* environment variables.\n"
    "Bad input gets one line on stderr and exit status 2; other failures exit 1.\n";

// The shape commands' options; `run` states its own default thread budget (per rank).
std::string shape_options(const std::string& name) {
  const bool run = name == "run";
  std::string o =
      std::string(run ? "  --threads T          thread budget of each rank, 1..4096 (default: the node's cores / its ranks)\n"
                      : "  --threads T          thread budget, 1..4096 (default PRISM_NUM_THREADS, else all cores)\n") +
      "  --type s|d|c|z       element type (default d)\n"
      "  --trans XY           op(A) and op(B), each N, T or C (default NN)\n"
      "  --max-memory BYTES   cap on extra memory, K, M, G suffixes; --memory is the same option\n"
      "                       (default PRISM_MAX_MEMORY, else none; over ranks it caps each rank's\n"
      "                       footprint, default half the node's memory / its ranks)\n"
      "  --small-flops F      calls below F flops run as one leaf; 0 always plans (default\n"
      "                       PRISM_SMALL_FLOPS, else the machine description's small_flops)\n"
      "  --extra-depth E      BFS levels past one thread a share, 0..8 (default PRISM_EXTRA_DEPTH, else 0)\n"
      "  --leaf L             leaf backend: openblas, blis, streaming (m, n <= 128) or auto (default\n"
      "                       PRISM_LEAF, else auto)\n"
      "  --topology T         plan for an hwloc synthetic description (\"package:2 numa:4 core:16 pu:1\")\n"
      "                       or an XML file ending in .xml (default PRISM_TOPOLOGY, else this machine)\n";
  if (name == "plan")
    o += "  --ranks P            plan over P MPI ranks, 1..1048576 (default 1: no rank-level steps)\n";
  if (name == "plan" || run)
    o += "  --ranks-per-node R   ranks sharing a node's memory, for the default memory per rank (default 1)\n"
         "  --rank-flops F       modelled flop/s of one rank (default PRISM_RANK_FLOPS, else 50e9 x threads)\n"
         "  --rank-bandwidth B   modelled bytes/s one rank receives (default PRISM_RANK_BANDWIDTH, else 5e9)\n";
  if (name == "plan") o += "  (--ranks-per-node, --rank-flops and --rank-bandwidth need --ranks P with P >= 2)\n";
  if (name == "plan" || run)
    o += "  --gpus G             run on G GPUs, 0..1024 (default: the model's choice among this process's\n"
         "                       GPUs; prism plan needs none present, prism run emulates missing ones)\n"
         "  --gpu-memory BYTES   each GPU's memory the plan may use, K, M, G suffixes (default 15/16 of\n"
         "                       the device's, or the machine description's gpu_memory without one)\n";
  return o;
}

struct command {
  const char* name;
  bool shape;         // takes M N K and the shape options
  int reps;           // takes --reps with this default (0: no --reps)
  const char* usage;  // first lines of its help
};

const command commands[] = {
    {"plan", true, 0,
     "usage: prism plan M N K [options]\n"
     "  Prints the plan prism::gemm runs for this shape on this machine (the text form that\n"
     "  prism::plan::parse reads). A call below the small-call threshold runs as one leaf on the\n"
     "  caller's thread, and the plan says so; with several NUMA domains it also prints the\n"
     "  predicted bytes each domain reads.\n"
     "  --syrk UT, --herk LC: the plan prism::syrk / prism::herk run for an N x N triangle (M = N)\n"
     "  and depth K: uplo U or L, then trans (syrk N or T, herk N or C; herk needs --type c or z).\n"
     "  --summary / --full: a summary of the plan, or the whole plan. The default: the whole plan\n"
     "  up to 64 nodes and 16 ranks, the summary above. A summary prints each thread- and numa-\n"
     "  level step, and one line for each run of cache-level steps below (their count, leaves and\n"
     "  leaf shapes); over ranks, the plan's head and each distinct local subtree once.\n"
     "  --min-memory: with --ranks, the plan of least footprint per rank and that footprint.\n"
     "  --ranks P with --syrk / --herk: the rank-k scheme prism::dist::syrk / herk run (k slices x\n"
     "  triangle blocks x phases), its volume per rank beside the SYRK lower bound, and the schemes.\n"
     "  --stats: a dry run's data movement, per level (each cache level of the topology, NUMA\n"
     "  domains, ranks with --ranks): the predicted elements received (prism/traffic.hpp), the\n"
     "  lower bound (prism/bounds.hpp) and their ratio.\n"},
    {"info", false, 0,
     "usage: prism info\n"
     "  Prints this machine as prism sees it: the version, the machine description's source and\n"
     "  which values are measured, the CPU and its SIMD target, cores, NUMA domains and threads,\n"
     "  and the GPUs (PRISM_GPU; each device's name, memory and nearest NUMA domain), or one\n"
     "  line saying why there are none.\n"},
    {"bench", true, 5,
     "usage: prism bench M N K [options] [--reps R]\n"
     "  Times prism against threaded OpenBLAS (all cores) on one shape in one process, best of R\n"
     "  timings (default 5). Each timing repeats the call until it lasts at least 0.05 s.\n"},
    {"run", true, 3,
     "usage: mpirun -np P prism run M N K [options] [--reps R] [--check] [--json] [--beta B] [--seed S]\n"
     "  Runs C = A B + beta C (alpha 1, beta 0.5 unless --beta) over the P ranks of MPI_COMM_WORLD\n"
     "  on random data that each rank makes in prism's native layout, R times (default 3), and\n"
     "  prints on rank 0 the rank-level plan, the best time (slowest rank), GF/s and the bytes each\n"
     "  rank received (max, mean) beside the plan's prediction and the lower bound. --check then\n"
     "  verifies C (outside the timed calls); --json prints one JSON line instead. --threads is\n"
     "  each rank's budget (default: the node's cores / its ranks); --memory S (as --max-memory)\n"
     "  caps each rank's footprint. --syrk UT / --herk LC (M = N) runs prism::dist::syrk / herk\n"
     "  instead: C = A A^T (^H) + beta C on one triangle, beside the SYRK lower bound.\n"
     "  Needs the MPI build (PRISM_WITH_MPI=ON).\n"},
    {"leaves", false, 5,
     "usage: prism leaves [--reps R] [--types LETTERS] [--streaming | --syrk]\n"
     "  Says which kernel set each of prism's private leaf libraries runs, chosen by the CPU's\n"
     "  features (PRISM_LEAF_KERNELS overrides), why, and which forcing variables of the\n"
     "  environment its copies ignore; then times single-threaded OpenBLAS against BLIS on leaf\n"
     "  shapes, then the streaming leaf against both on leaves with m, n <= 128 (the\n"
     "  measurements behind PRISM_LEAF=auto), best of R timings (default 5).\n"
     "  --types: element types to time, letters from s, d, c, z (default: d for OpenBLAS\n"
     "  against BLIS, all four for the streaming leaf). --streaming: the streaming table only.\n"
     "  --syrk: only the streaming rank-k leaf (?syrk / ?herk, trans N and T/C) against the\n"
     "  OpenBLAS and BLIS leaves' ?syrk / ?herk, on Gram-shaped leaves (n <= 128, long k).\n"},
    {"tune", false, 3,
     "usage: prism tune [--out FILE] [--reps R] | prism tune --show | prism tune --first-use\n"
     "  Measures this machine's streaming kernel sizes (k-chunks, prefetch distance: each the\n"
     "  fastest of five around the model's value) and crossovers (about a minute on 2 cores):\n"
     "  the streaming leaf against the best BLAS leaf (stream_bytes: 8 x 8 NN double;\n"
     "  stream_dot_bytes: 32 x 32 TN double; stream_far_bytes: 64 x 64 NN double, both up to\n"
     "  twice the last-level cache;\n"
     "  stream_complex_k: 8 x 8 NN complex double), the small-call threshold (small_flops: the\n"
     "  recursion against one leaf on cubes), the drop-in's prism efficiency and the rank\n"
     "  planner's flop rate per thread (rank_flops_per_thread: one thread at 1024^3), and\n"
     "  writes them to a machine file: FILE, else PRISM_MACHINE, else ~/.cache/prism/machine.\n"
     "  Later runs on this CPU read it (docs/planning.md, \"The machine description\"); best of R timings\n"
     "  (default 3). Run it on an otherwise idle machine: it measures what it sees.\n"
     "  --show: print the machine description prism reads now (its source, then the file's\n"
     "  form: which values are measured, which the model's) and measure nothing.\n"
     "  --first-use: measure now what prism otherwise measures at the first long call that\n"
     "  needs it when there is no machine file (the streaming crossovers, at most 0.2 s), keep it\n"
     "  in this CPU's first-use file (~/.cache/prism/first-use-HASH) and print it; measures\n"
     "  nothing when a machine file is read or the values are kept already.\n"},
    {"bound", false, 0,
     "usage: prism bound M N K [--ranks P] [--memory S] [--topology T] [--type s|d|c|z]\n"
     "                         [--peak F] [--bandwidth LEVEL=B,...] [--probe]\n"
     "       prism bound N N K --syrk [UT] [--ranks P] [--type s|d|c|z]\n"
     "  Prints the lower bounds on the words (matrix elements) an M x N x K product must move and\n"
     "  the modelled words per rank of the 1D, 2D, 2.5D, 3D, recursive (CARMA) and COSMA\n"
     "  decompositions (prism/bounds.hpp; docs/data-movement.md), then, per level of\n"
     "  the machine (each cache level, NUMA domains, ranks), the least words one unit moves\n"
     "  (Elango et al.) and, given bandwidths and a peak, which level bounds the run.\n"
     "  --syrk [UT]: the SYRK bound instead, for C (N x N, symmetric) = A A^T with A N x K (or\n"
     "  A^T A with A K x N; the letters, uplo U or L then trans N or T, change nothing): words per\n"
     "  rank, its case (1D, 2D, 3D) and that case's condition, beside gemm's bound for the full\n"
     "  N x N x K square (Al Daas et al.; docs/data-movement.md, \"SYRK\"). M must equal N; it\n"
     "  takes --ranks and --type only.\n"
     "options:\n"
     "  --ranks P            processors (MPI ranks), 1..1048576 (default 1)\n"
     "  --memory S           words of memory per rank, K, M, G suffixes (powers of 1024); default\n"
     "                       unlimited: the memory-independent bound (and sequential bounds for the\n"
     "                       last-level cache of the topology)\n"
     "  --topology T         an hwloc synthetic description or an XML file ending in .xml (default:\n"
     "                       PRISM_TOPOLOGY, else this machine); each rank runs on one such machine\n"
     "  --type s|d|c|z       element type: bytes per word and flops per multiply-add (default d)\n"
     "  --peak F             flop/s of one processing unit, K, M, G suffixes (e.g. 50G)\n"
     "  --bandwidth LIST     bytes/s of one unit of a level to the level above, e.g.\n"
     "                       L1=200G,L2=100G,L3=20G,numa=10G,ranks=5G (K, M, G: powers of 1024)\n"
     "  --probe              measure --peak and the cache levels' bandwidths here (a few seconds):\n"
     "                       FMA chains on one core, reads from arrays sized between cache levels\n"},
};

const command* find_command(const std::string& name) {
  for (const command& c : commands)
    if (name == c.name) return &c;
  return nullptr;
}

void print_help(const command& c) {
  std::fputs(c.usage, stdout);
  if (c.shape || c.reps) std::fputs("options:\n", stdout);
  if (c.shape) std::fputs(shape_options(c.name).c_str(), stdout);
  if (c.reps)
    std::printf("  --reps R             %s, 1..1000000 (default %d)\n",
                std::string(c.name) == "run" ? "timed calls, the best reported" : "timings to take the best of", c.reps);
}

std::int64_t parse_int(const std::string& s, const std::string& what, std::int64_t lo, std::int64_t hi,
                       const std::string& hint) {
  std::size_t used = 0;
  long long v = 0;
  bool ok = !s.empty() && s[0] != ' ';
  try {
    if (ok) v = std::stoll(s, &used);
  } catch (const std::exception&) {
    ok = false;
  }
  if (!ok || used != s.size() || v < lo || v > hi) {
    const std::string range = hi == std::numeric_limits<std::int64_t>::max()
                                  ? ">= " + std::to_string(lo)
                                  : "in " + std::to_string(lo) + ".." + std::to_string(hi);
    throw bad_input(what + " must be a whole number " + range + ", got '" + s + "'", hint);
  }
  return v;
}

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
  int full = -1;       // `prism plan --ranks`: 1 --full, 0 --summary, -1 by size (summary above 16 ranks)
  bool min_memory = false;  // `prism plan --ranks --min-memory`: the least-footprint plan
  std::string tune_out;     // `prism tune --out`
  bool tune_show = false;   // `prism tune --show`: print the description in use, measure nothing
  bool tune_first_use = false;  // `prism tune --first-use`: the first-use measurement, now
  bool reps_given = false;  // --reps was given
  prism_app::run_options run;  // `prism run`'s own settings
};

// True when `cmd` takes option `a`: a flag a command would ignore is an error, never dropped.
bool takes(const command& cmd, const std::string& a) {
  static const char* const shape_flags[] = {"--threads",     "--type",        "--trans", "--max-memory", "--memory",
                                            "--small-flops", "--extra-depth", "--leaf",  "--topology"};
  static const char* const rank_flags[] = {"--ranks-per-node", "--rank-flops", "--rank-bandwidth"};
  const std::string name = cmd.name;
  if (a == "--reps") return cmd.reps > 0;
  if (name == "leaves" && (a == "--types" || a == "--streaming" || a == "--syrk")) return true;
  if (name == "tune" && (a == "--out" || a == "--show" || a == "--first-use")) return true;
  if (name == "run" && (a == "--check" || a == "--json" || a == "--beta" || a == "--seed" || a == "--syrk" ||
                        a == "--herk"))
    return true;
  if (name == "plan" && (a == "--syrk" || a == "--herk" || a == "--stats" || a == "--full" || a == "--summary" ||
                         a == "--min-memory" || a == "--ranks"))
    return true;  // prism run takes P from mpirun, prism bench runs on one node: neither takes --ranks
  if ((name == "plan" || name == "run") && std::find(std::begin(rank_flags), std::end(rank_flags), a) != std::end(rank_flags))
    return true;
  if ((name == "plan" || name == "run") && (a == "--gpus" || a == "--gpu-memory")) return true;
  return cmd.shape && std::find(std::begin(shape_flags), std::end(shape_flags), a) != std::end(shape_flags);
}

options parse(const command& cmd, const std::vector<std::string>& args) {
  options o;
  if (cmd.reps > 0) o.reps = o.run.reps = cmd.reps;
  const std::string hint = cmd.name;
  std::size_t i = 2;
  if (cmd.shape) {
    if (args.size() < 5) throw bad_input(std::string("prism ") + cmd.name + " needs M N K", hint);
    const std::int64_t max = std::numeric_limits<std::int64_t>::max();
    o.p.m = parse_int(args[i++], "M", 0, max, hint);
    o.p.n = parse_int(args[i++], "N", 0, max, hint);
    o.p.k = parse_int(args[i++], "K", 0, max, hint);
  }
  try {  // a malformed PRISM_* variable is bad input too
    o.ctx = prism::context::from_env();
  } catch (const prism::error& e) {
    throw bad_input(e.what());
  }
  bool topology_given = false;
  std::string rank_flag;  // a rank-model option given to `prism plan` (it needs --ranks P >= 2)
  bool summary_given = false;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!takes(cmd, a)) throw bad_input("unknown option '" + a + "' for 'prism " + cmd.name + "'", hint);
    if (a == "--check" || a == "--json") {  // flags of `prism run`
      (a == "--check" ? o.run.check : o.run.json) = true;
      continue;
    }
    if (a == "--streaming" || (a == "--syrk" && std::string(cmd.name) == "leaves")) {  // flags of `prism leaves`
      (a == "--syrk" ? o.syrk_only : o.streaming_only) = true;
      continue;
    }
    if (a == "--show") {  // flag of `prism tune`
      o.tune_show = true;
      continue;
    }
    if (a == "--first-use") {  // flag of `prism tune`
      o.tune_first_use = true;
      continue;
    }
    if (a == "--stats") {  // flag of `prism plan`
      o.stats = true;
      continue;
    }
    if (a == "--min-memory") {  // flag of `prism plan --ranks`
      o.min_memory = true;
      continue;
    }
    if (a == "--full" || a == "--summary") {  // flags of `prism plan`
      if (summary_given && o.full != (a == "--full" ? 1 : 0))
        throw bad_input("--summary and --full are opposites; give one", hint);
      o.full = a == "--full" ? 1 : 0, summary_given = true;
      continue;
    }
    if (a == "--ranks-per-node" || a == "--rank-flops" || a == "--rank-bandwidth") rank_flag = a;
    if (i + 1 >= args.size()) throw bad_input(a + " needs a value", hint);
    const std::string& v = args[++i];
    try {
      if (a == "--threads") o.ctx.set_threads(int(parse_int(v, a, 1, 4096, hint))), o.run.threads_given = true;
      else if (a == "--type") {
        if (v.size() != 1 || std::string("sdcz").find(v[0]) == std::string::npos)
          throw bad_input("--type must be s, d, c or z, got '" + v + "'", hint);
        o.p.type = prism::scalar_type(v[0]);
      } else if (a == "--trans") {
        std::string t = v;
        for (char& c : t) c = char(std::toupper(static_cast<unsigned char>(c)));
        if (t.size() != 2 || std::string("NTC").find(t[0]) == std::string::npos ||
            std::string("NTC").find(t[1]) == std::string::npos)
          throw bad_input("--trans must be two letters from N, T, C (e.g. TN), got '" + v + "'", hint);
        o.p.transa = t[0], o.p.transb = t[1], o.trans_given = true;
      } else if (a == "--syrk" || a == "--herk") {
        if (o.p.op != prism::operation::gemm) throw bad_input("--syrk and --herk are given once, not both", hint);
        std::string t = v;
        for (char& c : t) c = char(std::toupper(static_cast<unsigned char>(c)));
        const bool herk = a == "--herk";
        if (t.size() != 2 || (t[0] != 'U' && t[0] != 'L') || (t[1] != 'N' && t[1] != (herk ? 'C' : 'T')))
          throw bad_input(a + " takes uplo (U or L) then trans (N or " + (herk ? "C" : "T") + "), e.g. " +
                          (herk ? "LC" : "UT") + ", got '" + v + "'", hint);
        o.p.op = herk ? prism::operation::herk : prism::operation::syrk;
        o.p.uplo = t[0], o.p.transa = t[1];
      } else if (a == "--beta") {
        std::size_t used = 0;
        double b = 0;
        try {
          b = std::stod(v, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != v.size() || v.empty() || !std::isfinite(b)) throw bad_input("--beta must be a finite number, got '" + v + "'", hint);
        o.run.beta = b;
      } else if (a == "--types") {
        if (v.empty() || v.find_first_not_of("sdcz") != std::string::npos)
          throw bad_input("--types must be letters from s, d, c, z (e.g. dz), got '" + v + "'", hint);
        o.leaf_types = v, o.leaf_types_given = true;
      } else if (a == "--out") {
        o.tune_out = v;
      } else if (a == "--seed") {
        o.run.seed = std::uint64_t(parse_int(v, a, 0, std::numeric_limits<std::int64_t>::max(), hint));
      } else if (a == "--max-memory" || a == "--memory") {
        o.ctx.set_max_memory(std::size_t(prism::parse_size(v)));
      } else if (a == "--small-flops") {
        o.ctx.set_small_flops(double(prism::parse_size(v)));
      } else if (a == "--extra-depth") {
        o.ctx.set_extra_depth(int(parse_int(v, a, 0, 8, hint)));
      } else if (a == "--leaf") {
        o.ctx.set_leaf(prism::parse_leaf_backend(v));
      } else if (a == "--ranks") {
        o.ctx.set_ranks(int(parse_int(v, a, 1, 1 << 20, hint)));
      } else if (a == "--gpus") {
        o.ctx.set_gpus(int(parse_int(v, a, 0, 1024, hint)));
      } else if (a == "--gpu-memory") {
        o.ctx.set_gpu_memory(std::size_t(prism::parse_size(v)));
      } else if (a == "--ranks-per-node") {
        o.ctx.set_ranks_per_node(int(parse_int(v, a, 1, 65536, hint)));
      } else if (a == "--rank-flops") {
        o.ctx.set_rank_rates(double(prism::parse_size(v)), o.ctx.rank_bandwidth());
      } else if (a == "--rank-bandwidth") {
        o.ctx.set_rank_rates(o.ctx.rank_flops(), double(prism::parse_size(v)));
      } else if (a == "--topology") {
        o.ctx.set_machine(prism::topology::parse(v));
        topology_given = true;
      } else {
        o.reps = o.run.reps = int(parse_int(v, a, 1, 1000000, hint));
        o.reps_given = true;
      }
    } catch (const prism::error& e) {  // the library's own check of the value
      throw bad_input(a + ": " + e.what(), hint);
    }
  }
  if (!rank_flag.empty() && std::string(cmd.name) == "plan" && o.ctx.ranks() < 2)
    throw bad_input(rank_flag + " models the rank level: give --ranks P with P >= 2", hint);
  if (o.streaming_only && o.syrk_only) throw bad_input("--streaming and --syrk name two tables; give one", hint);
  if (o.p.op != prism::operation::gemm) {  // a rank-k update: N x N triangle, letters from --syrk / --herk
    const std::string flag = o.p.op == prism::operation::herk ? "--herk" : "--syrk";
    if (o.trans_given) throw bad_input(flag + " names trans itself; --trans is for gemm", hint);
    if (o.p.m != o.p.n)
      throw bad_input(flag + ": the update is N x N, so M and N must be equal, got " + std::to_string(o.p.m) + " and " +
                      std::to_string(o.p.n), hint);
    if (o.p.op == prism::operation::herk && !prism::is_complex(o.p.type))
      throw bad_input("--herk needs a complex type (--type c or z)", hint);
    if (o.stats && o.ctx.ranks() > 1)
      throw bad_input(flag + " --ranks: --stats models gemm plans over ranks; the report below the scheme gives the volume", hint);
    o.p = prism::rank_k_problem(o.p.type, o.p.op, o.p.uplo, o.p.transa, o.p.n, o.p.k);
  }
  if (!topology_given) {  // PRISM_TOPOLOGY / HWLOC_* are read on first use: read them now
    try {
      (void)o.ctx.machine();
    } catch (const prism::error& e) {
      throw bad_input(e.what());
    }
  }
  return o;
}

// "74.5 PiB": bytes in binary units, three significant digits.
std::string binary_size(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  int u = 0;
  while (bytes >= 1024 && u < 8) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %s", bytes, units[u]);
  return buf;
}

// "1.234 us": a duration in the unit that keeps three digits before rounding to zero.
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

// Seconds per call of f: the best of `reps` timings, each of `calls` back-to-back calls,
// `calls` chosen (doubling from 1) so that one timing lasts at least min_timing seconds.
struct timing {
  double seconds;  // per call
  long calls;      // per timing
};
constexpr double min_timing = 0.05;

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

// Refuses, before allocating anything, operands that do not fit in this machine's memory.
void check_memory(const prism::problem& p) {
  const double rows_a = double(p.transa == 'N' ? p.m : p.k), cols_a = double(p.transa == 'N' ? p.k : p.m);
  const double rows_b = double(p.transb == 'N' ? p.k : p.n), cols_b = double(p.transb == 'N' ? p.n : p.k);
  const double e = double(prism::element_size(p.type));
  const double bytes[3] = {std::max(1.0, rows_a) * cols_a * e, std::max(1.0, rows_b) * cols_b * e,
                           std::max(1.0, double(p.m)) * double(p.n) * e};
  const double total = bytes[0] + bytes[1] + bytes[2];
  const double ram = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE));
  const char* names[3] = {"A", "B", "C"};
  double sum = 0;
  for (int i = 0; i < 3; ++i) {
    sum += bytes[i];
    if (sum > ram)
      throw bad_input(std::string("not enough memory for ") + names[i] + ": " + binary_size(bytes[i]) +
                      " (A, B and C need " + binary_size(total) + ", this machine has " + binary_size(ram) + ")");
  }
}

template <class T>
int bench_one(const options& o) {
  const auto& p = o.p;
  check_memory(p);
  const std::int64_t rows_a = p.transa == 'N' ? p.m : p.k, cols_a = p.transa == 'N' ? p.k : p.m;
  const std::int64_t rows_b = p.transb == 'N' ? p.k : p.n, cols_b = p.transb == 'N' ? p.n : p.k;
  const std::int64_t lda = std::max<std::int64_t>(1, rows_a), ldb = std::max<std::int64_t>(1, rows_b),
                     ldc = std::max<std::int64_t>(1, p.m);
  auto A = random_matrix<T>(std::size_t(lda * cols_a), 1);
  auto B = random_matrix<T>(std::size_t(ldb * cols_b), 2);
  std::vector<T> C(std::size_t(ldc * p.n), T(0));
  const auto& openblas = prism::detail::blas_library::get(prism::detail::blas_build::openblas_pthread);
  const int cores = oneapi::tbb::info::default_concurrency();
  const double flops = p.flops();
  // beta = 0: every repeat computes the same C.
  const timing t_prism = time_calls(o.reps, [&] {
    prism::gemm<T>(p.transa, p.transb, p.m, p.n, p.k, T(1), A.data(), lda, B.data(), ldb, T(0), C.data(), ldc, o.ctx);
  });
  openblas.set_threads(cores);
  const timing t_ob = time_calls(o.reps, [&] {
    openblas.gemm<T>(p.transa, p.transb, int(p.m), int(p.n), int(p.k), T(1), A.data(), int(lda), B.data(), int(ldb),
                     T(0), C.data(), int(ldc));
  });
  std::printf("shape %lldx%lldx%lld type %c trans %c%c, best of %d timings of >= %g s each\n", (long long)p.m,
              (long long)p.n, (long long)p.k, char(p.type), p.transa, p.transb, o.reps, min_timing);
  auto line = [&](const std::string& who, const timing& t) {
    std::printf("  %-22s %12s per call %10.2f GFLOP/s  (%ld calls per timing)\n", who.c_str(),
                duration(t.seconds).c_str(), flops / t.seconds * 1e-9, t.calls);
  };
  line("prism (" + std::to_string(o.ctx.threads()) + " threads)", t_prism);
  line("openblas (" + std::to_string(cores) + " threads)", t_ob);
  std::printf("  ratio prism/openblas  %.3f\n", t_ob.seconds / t_prism.seconds);
  return 0;
}

int run_bench(const options& o) {
  const std::int64_t int_max = std::numeric_limits<int>::max();
  if (std::max({o.p.m, o.p.n, o.p.k}) > int_max)
    throw bad_input("prism bench compares with 32-bit OpenBLAS: M, N and K must be at most " + std::to_string(int_max),
                    "bench");
  switch (o.p.type) {
    case prism::scalar_type::s: return bench_one<float>(o);
    case prism::scalar_type::d: return bench_one<double>(o);
    case prism::scalar_type::c: return bench_one<std::complex<float>>(o);
    case prism::scalar_type::z: return bench_one<std::complex<double>>(o);
  }
  return 1;
}

std::string megabytes(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f MB", bytes / 1e6);
  return buf;
}

// Predicted cross-domain traffic of the plan, and of the m x n-only split a threaded BLAS
// uses, on the same topology (prism/traffic.hpp has the model).
void print_traffic(const prism::plan& p, const options& o) {
  auto line = [](const char* what, const prism::traffic_report& r) {
    std::cout << "#   " << what << ": " << megabytes(r.remote_total()) << " remote, " << megabytes(r.local_total())
              << " local; remote per domain:";
    for (double b : r.remote_bytes) std::cout << ' ' << megabytes(b);
    std::cout << '\n';
  };
  std::cout << "# predicted bytes read by each domain (" << p.domains() << " domains of "
            << o.ctx.machine().source() << ")\n";
  line("this plan, placement helper", prism::predict_traffic(p, prism::placement::prism));
  line("this plan, interleaved memory", prism::predict_traffic(p, prism::placement::interleaved));
  prism::context mn = o.ctx;
  mn.set_k_cuts(false);
  const prism::plan q = prism::make_plan(o.p, mn);
  if (q.domains() > 1) line("m x n-only split (as threaded BLAS), interleaved", prism::predict_traffic(q, prism::placement::interleaved));
}

// `prism plan --stats`: per level, the elements the plan is predicted to receive beside the
// lower bound (prism::predict_levels), as '#' lines so the plan text still parses.
void print_stats(const prism::plan& p, const options& o, double rank_memory_words = prism::bounds::unlimited) {
  if (p.devices() > 0) {  // the host's caches see none of a GPU plan's products: its level is the link
    std::printf("# data movement per level, in elements received (model and bound: prism/gpu.hpp)\n");
    std::printf("# %-6s %14s %14s %14s %9s  %s\n", "level", "fast memory", "predicted", "lower bound", "ratio", "counted as");
    const double elem = double(prism::element_size(p.problem().type));
    for (const prism::gpu_part& g : prism::predict_gpu(p, false, o.ctx))
      std::printf("# gpu %-2d %14.4g %14.4g %14.4g %9.2f  %s\n", g.device, double(p.device_memory()) / elem,
                  (g.bytes_in + g.bytes_out) / elem, g.bound / elem, g.bound > 0 ? (g.bytes_in + g.bytes_out) / g.bound : 0.0,
                  "elements across the device's link, both ways (beta = 0)");
    return;
  }
  const auto levels = prism::predict_levels(p, o.ctx.machine(), rank_memory_words);
  std::printf("# data movement per level, in elements received (model: prism/traffic.hpp; bounds: prism/bounds.hpp)\n");
  std::printf("# %-6s %14s %14s %14s %9s  %s\n", "level", "fast memory", "predicted", "lower bound", "ratio", "counted as");
  for (const auto& l : levels) {
    char memory[32];
    if (std::isinf(l.capacity) || l.capacity == 0) std::snprintf(memory, sizeof memory, "unlimited");
    else std::snprintf(memory, sizeof memory, "%.4g", l.capacity);
    char ratio[32];
    if (l.bound > 0) std::snprintf(ratio, sizeof ratio, "%.2f", l.predicted / l.bound);
    else std::snprintf(ratio, sizeof ratio, "-");
    std::printf("# %-6s %14s %14.4g %14.4g %9s  %s\n", l.level.c_str(), memory, l.predicted, l.bound, ratio,
                l.note.c_str());
  }
  if (levels.empty()) std::printf("# (the topology reports no caches, and the plan spans one domain and one rank)\n");
}

// The rank-k scheme over ranks (prism::dist::syrk's / herk's), then why: P' and the scheme,
// the predicted volume per rank beside the SYRK lower bound, and the schemes scored.
int run_rank_k_plan(const options& o) {
  prism::rank_k_choice choice;
  try {
    choice = o.min_memory ? prism::least_footprint_rank_k(o.p, o.ctx) : prism::choose_rank_k_ranks(o.p, o.ctx);
  } catch (const prism::plan_error& e) {
    throw bad_input(std::string("cannot plan over ") + std::to_string(o.ctx.ranks()) + " ranks: " + e.what(), "-");
  }
  std::cout << "# context: " << o.ctx.describe() << '\n';
  const prism::rank_k_model m(o.p, choice.chosen);
  std::cout << "# " << prism::to_string(o.p.op) << ' ' << o.p.uplo << o.p.transa << " n " << o.p.n << " k " << o.p.k
            << " over ranks: scheme " << choice.chosen.to_string() << " (";
  const std::vector<prism::rank_k_part>& parts = choice.chosen.parts;
  if (parts.size() == 1 && parts[0].cover == prism::rank_k_cover::difference && !parts[0].role_ranks.empty()) {
    // Roles of unequal ranks, e.g. tbd91[12*23,11*68]: "91 roles of 11 to 12 ranks, ...".
    const auto [few, most] = std::minmax_element(parts[0].role_ranks.begin(), parts[0].role_ranks.end());
    std::cout << parts[0].group_ranks << " roles of " << *few << " to " << *most << " ranks taking turns over k, "
              << m.blocks() << " row blocks, ";
  } else if (parts.size() == 1 && parts[0].cover == prism::rank_k_cover::difference) {
    std::cout << parts[0].groups << " k slice" << (parts[0].groups == 1 ? "" : "s") << " x " << parts[0].group_ranks
              << " row blocks, ";
  } else {
    std::cout << parts.size() << " part" << (parts.size() == 1 ? "" : "s") << " on shares of k by ranks, " << m.blocks()
              << " row blocks, ";
  }
  std::cout << choice.chosen.phases << " phase" << (choice.chosen.phases == 1 ? "" : "s") << ")\n";
  if (o.min_memory)
    std::cout << "# least footprint: " << choice.least_footprint << " bytes per rank (" << std::fixed
              << std::setprecision(1) << double(choice.least_footprint) / 1e6 << " MB)\n"
              << std::defaultfloat;
  prism::print_rank_k_report(std::cout, choice);
  return 0;
}

// The plan over ranks (prism::dist::gemm's), then why: P' and the grid, the predicted
// volume per rank beside the lower bound, and the candidates the planner scored.
int run_rank_plan(const options& o) {
  prism::rank_choice choice;
  try {
    choice = o.min_memory ? prism::least_footprint_ranks(o.p, o.ctx) : prism::choose_ranks(o.p, o.ctx);
  } catch (const prism::plan_error& e) {
    throw bad_input(std::string("cannot plan over ") + std::to_string(o.ctx.ranks()) + " ranks: " + e.what(), "-");
  }
  std::cout << "# context: " << o.ctx.describe() << '\n';
  const bool full = o.full == 1 || (o.full == -1 && choice.chosen.ranks() <= 16);
  if (full) {
    std::cout << choice.chosen;
  } else {
    // The summary: the plan's head, then each distinct local subtree once; the rank-level
    // steps are the grid of the report below, and "same rank R" lines repeat a subtree.
    std::istringstream in(choice.chosen.to_string());
    std::size_t rank_steps = 0, same = 0;
    for (std::string line; std::getline(in, line);) {
      const std::size_t at = line.find_first_not_of(' ');
      const std::string body = at == std::string::npos ? line : line.substr(at);
      if (body.rfind("same rank ", 0) == 0) ++same;
      else if ((body.rfind("bfs ", 0) == 0 || body.rfind("dfs ", 0) == 0) && body.find(' ', 4) == 5 &&
               body.compare(6, 5, "rank ") == 0)  // "bfs m rank ...": a rank-level step
        ++rank_steps;
      else
        std::cout << line << '\n';
    }
    std::cout << "# summary: " << rank_steps << " rank-level steps (the grid below) and " << same
              << " 'same rank' subtrees left out; each local subtree above is printed once (--full prints the plan)\n";
  }
  prism::print_rank_report(std::cout, choice);
  if (o.stats) {
    std::cout.flush();
    print_stats(choice.chosen, o, double(choice.memory) / double(prism::element_size(o.p.type)));
  }
  return 0;
}

// A plan's text with each run of cache-level steps folded into its first step and one
// comment line under it: how many steps and leaves it holds, their leaf kinds and the range
// of their shapes. Thread-, numa- and rank-level steps are printed as they are.
// E.g. "dfs k cache 2796288 2796032  # 64x64x5592320, 1 thread" is followed by
// "  # ... 62 more cache-level steps, 64 leaves (openblas) from 64x64x87296 to 64x64x87552".
void print_plan_summary(std::ostream& os, const prism::plan& pl) {
  std::istringstream in(pl.to_string());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  auto indent = [](const std::string& l) { return l.find_first_not_of(' '); };
  auto body = [&](const std::string& l) { return l.substr(std::min(indent(l), l.size())); };
  auto is_step = [](const std::string& b) { return b.rfind("bfs ", 0) == 0 || b.rfind("dfs ", 0) == 0; };
  auto shape_of = [](const std::string& l) {  // "64x64x87552" from the node's comment
    const std::size_t hash = l.find("# ");
    if (hash == std::string::npos) return std::string();
    const std::string c = l.substr(hash + 2);
    return c.substr(0, c.find_first_of(", "));
  };
  auto volume = [](const std::string& shape) {
    double v = 1;
    std::istringstream s(shape);
    for (std::string part; std::getline(s, part, 'x');) v *= std::atof(part.c_str());
    return v;
  };
  // A device's k chunks ("dfs k gpu P P P ..."): the line keeps its first parts and counts the rest.
  auto chunk_line = [&](const std::string& l) {
    const std::string b = body(l);
    if (b.rfind("dfs k gpu ", 0) != 0) return l;
    const std::size_t hash = l.find("  # ");
    std::istringstream words(b.substr(0, b.find('#')));
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.size() <= 3 + 6) return l;
    std::string out = l.substr(0, indent(l)) + "dfs k gpu";
    for (std::size_t x = 3; x < 3 + 3; ++x) out += " " + w[x];
    out += " ... (" + std::to_string(w.size() - 3) + " chunks)";
    if (out.size() < 40) out.resize(40, ' ');
    return hash == std::string::npos ? out : out + l.substr(hash);
  };
  std::size_t folded = 0, folded_chunks = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    os << chunk_line(lines[i]) << '\n';
    const std::string b = body(lines[i]);
    // "dfs k cache ...": a cache-level step; "dfs k gpu ...": a device's k chunks
    if (!is_step(b) || (b.find(" cache ") != 5 && b.rfind("dfs k gpu ", 0) != 0)) continue;
    const std::size_t depth = indent(lines[i]);
    std::size_t steps = 0, leaves = 0, j = i + 1;
    std::vector<std::string> kinds;
    std::string smallest, largest;
    for (; j < lines.size() && indent(lines[j]) != std::string::npos && indent(lines[j]) > depth; ++j) {
      const std::string bj = body(lines[j]);
      if (is_step(bj)) {
        ++steps;
        continue;
      }
      if (bj.rfind("leaf ", 0) != 0) continue;
      ++leaves;
      std::string kind = bj.substr(5);
      kind = kind.substr(0, kind.find(' '));
      if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
      const std::string shape = shape_of(lines[j]);
      if (smallest.empty() || volume(shape) < volume(smallest)) smallest = shape;
      if (largest.empty() || volume(shape) > volume(largest)) largest = shape;
    }
    std::string kind_list;
    for (const std::string& k : kinds) kind_list += (kind_list.empty() ? "" : ", ") + k;
    const bool chunks = b.rfind("dfs k gpu ", 0) == 0;
    if (chunks)  // a device's k chunks: one leaf each
      os << std::string(depth + 2, ' ') << "# ... " << leaves << " gpu leaves of " << smallest
         << (largest == smallest ? std::string() : " to " + largest) << '\n';
    else
      os << std::string(depth + 2, ' ') << "# ... " << steps << " more cache-level step" << (steps == 1 ? "" : "s")
         << ", " << leaves << " lea" << (leaves == 1 ? "f" : "ves") << " (" << kind_list << ") from " << smallest
         << (largest == smallest ? std::string() : " to " + largest) << '\n';
    i = j - 1;
    ++folded;
    folded_chunks += chunks ? 1 : 0;
  }
  const char* what = folded_chunks == 0 ? "cache-level steps" : folded_chunks == folded ? "device k chunks"
                                                                                         : "cache-level steps or device k chunks";
  os << "# summary: " << folded << " run" << (folded == 1 ? "" : "s") << " of " << what
     << " folded, one line each (--full prints the plan)\n";
}

// The plan prism::gemm runs: none for an empty product, one leaf for a small call
// (detail::runs_as_one_leaf, the test gemm itself makes), else make_plan's.
int run_plan(const options& o) {
  const prism::problem& p = o.p;
  std::string why;  // a comment line before the plan
  prism::plan pl;
  if (o.ctx.ranks() > 1) return p.op != prism::operation::gemm ? run_rank_k_plan(o) : run_rank_plan(o);
  if (o.min_memory) throw bad_input("--min-memory plans over ranks: give --ranks P with P >= 2", "plan");
  const bool rank_k = p.op != prism::operation::gemm;
  if (rank_k && (p.n == 0 || p.k == 0)) {
    why = std::string("# empty update (n or k is 0): ") + prism::to_string(p.op) +
          " runs no plan; it returns at once, or only scales C's triangle by beta when k is 0\n";
  } else if (rank_k && o.ctx.gpus() <= 0 && (o.ctx.threads() <= 1 || p.flops() < o.ctx.small_flops() || (p.n == 1 && p.k < 512))) {
    char line[200];  // the rule of prism::syrk's prologue (rank_k_one_leaf, planner rule T2)
    std::snprintf(line, sizeof line,
                  "# small call: %.0f flops < PRISM_SMALL_FLOPS %.0f, one thread, or n = 1 with k < 512: runs as "
                  "one leaf on the caller's thread\n", p.flops(), o.ctx.small_flops());
    why = line;
    pl = prism::make_plan(p, prism::context(o.ctx).set_threads(1));
  } else if (rank_k) {
    try {
      pl = prism::make_plan(p, o.ctx);
    } catch (const prism::plan_error& e) {
      throw bad_input(std::string("cannot plan a ") + prism::to_string(p.op) + " of " + std::to_string(p.n) + "x" +
                      std::to_string(p.n) + "x" + std::to_string(p.k) + ": " + e.what(), "-");
    }
  } else if (p.m == 0 || p.n == 0 || p.k == 0) {
    why = "# empty product (m, n or k is 0): gemm runs no plan; it returns at once, or only scales C by beta "
          "when k is 0\n";
  } else if (prism::detail::runs_as_one_leaf(p, o.ctx)) {
    char line[160];
    std::snprintf(line, sizeof line,
                  "# small call: %.0f flops < PRISM_SMALL_FLOPS %.0f, runs as one leaf on the caller's thread\n",
                  p.flops(), o.ctx.small_flops());
    why = line;
    prism::node leaf;
    leaf.backend = prism::detail::choose_leaf(o.ctx.description(), o.ctx.leaf(), p.type, p.m, p.n, p.k, p.transa, p.transb);
    pl = prism::plan(p, prism::resources{}, {leaf});  // one rank, one domain, one thread: the caller's
  } else {
    try {
      pl = prism::make_plan(p, o.ctx);
    } catch (const std::bad_alloc&) {
      throw bad_input("not enough memory to plan a " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" +
                      std::to_string(p.k) + " product (std::bad_alloc)");
    } catch (const prism::plan_error& e) {  // a shape no plan can hold (temporaries beyond the address space)
      throw bad_input(std::string("cannot plan a ") + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" +
                      std::to_string(p.k) + " product: " + e.what(), "-");
    }
  }
  std::cout << "# context: " << o.ctx.describe() << '\n' << why;
  if (pl.nodes().empty()) return 0;
  if (o.full == 1 || (o.full == -1 && pl.nodes().size() <= 64)) std::cout << pl;
  else print_plan_summary(std::cout, pl);
  if (pl.domains() > 1 && !rank_k) print_traffic(pl, o);  // the traffic model is gemm's
  prism_app::print_gpu_report(std::cout, pl, o.ctx, false);
  if (o.stats) {
    std::cout.flush();
    if (rank_k && pl.devices() == 0) std::cout << "# --stats: no data-movement model for syrk / herk plans yet (gemm plans only)\n";
    else print_stats(pl, o);
  }
  return 0;
}

// The streaming leaf against the OpenBLAS and the BLIS leaf (prism's private copies, their
// own kernel sets) on leaves with m, n <= 128, one type and trans pair: one row of
// `prism leaves`' second table. str/best divides by the faster BLAS leaf.
template <class T>
void time_streaming_leaf(const options& o, const prism::detail::blas_library& ob, const prism::detail::blas_library& bl,
                         int m, int n, int k, char ta, char tb) {
  const int lda = ta == 'N' ? m : k, ldb = tb == 'N' ? k : n;
  auto A = random_matrix<T>(std::size_t(m) * k, 1), B = random_matrix<T>(std::size_t(k) * n, 2);
  std::vector<T> C(std::size_t(m) * n);
  const double flops = prism::gemm_flops(prism::scalar_type_of<T>(), m, n, k);
  auto blas = [&](const prism::detail::blas_library& lib) {
    return time_calls(o.reps, [&] {
             lib.gemm<T>(ta, tb, m, n, k, T(1), A.data(), lda, B.data(), ldb, T(0), C.data(), m);
           }).seconds;
  };
  const double to = blas(ob), tl = blas(bl);
  const double ts = time_calls(o.reps, [&] {
                      prism::detail::streaming_gemm<T>(ta, tb, m, n, k, T(1), A.data(), lda, B.data(), ldb, T(0),
                                                       C.data(), m);
                    }).seconds;
  std::printf("%4d x %3d x %8d %4c %3c%c %12.2f %9.2f %13.2f %8.2f\n", m, n, k, char(prism::scalar_type_of<T>()), ta,
              tb, flops / to * 1e-9, flops / tl * 1e-9, flops / ts * 1e-9, std::min(to, tl) / ts);
  std::fflush(stdout);
}

// The streaming leaf against the OpenBLAS and BLIS leaves (1 thread each), all four types
// (those of --types when given), NN, TN and NT: the measurement behind streaming_preferred
// (lib/leaf/kernels/auto_rule.cpp).
void run_streaming_leaves(const options& o) {
  const auto& ob = prism::detail::leaf_library(prism::leaf_backend::openblas);
  const auto& bl = prism::detail::leaf_library(prism::leaf_backend::blis);
  std::printf("%s# streaming leaf (prism's own kernel, %s) against the openblas (%s) and blis (%s) leaves, 1 thread; "
              "best of %d\n",
              o.streaming_only ? "" : "\n", prism::detail::streaming_target(), ob.kernel_name().c_str(),
              bl.kernel_name().c_str(), o.reps);
  std::printf("%-21s %4s %4s %12s %9s %13s %8s\n", "leaf m x n x k", "type", "op", "openblas GF", "blis GF",
              "streaming GF", "str/best");
  const std::vector<std::array<int, 3>> shapes = {
      {4, 4, 1 << 20},   {8, 8, 1 << 20},   {16, 16, 1 << 18},  {16, 8, 1 << 19},   {8, 16, 1 << 19},
      {1, 16, 1 << 20},  {16, 1, 1 << 20},  {4, 4, 65536},      {8, 8, 65536},      {4, 4, 16384},
      {8, 8, 16384},     {16, 16, 16384},   {4, 4, 4096},       {8, 8, 4096},       {16, 16, 4096},
      {8, 8, 512},       {16, 16, 512},     {8, 8, 128},        {16, 16, 128},      {4, 4, 64},
      {8, 8, 64},        {16, 16, 64},      {16, 16, 16},
      // tiled (m or n above 16): tall leaves, then k down to where the chunks are few
      {24, 24, 1 << 20}, {32, 32, 1 << 20}, {48, 48, 1 << 19},  {64, 64, 1 << 18},  {64, 16, 1 << 19},
      {96, 96, 1 << 17}, {128, 128, 1 << 17}, {32, 32, 16384},  {64, 64, 16384},    {128, 128, 16384},
      {32, 32, 4096},    {64, 64, 4096},    {128, 128, 4096},   {64, 64, 512}};
  for (auto [m, n, k] : shapes)
    for (const char* op : {"NN", "TN", "NT"}) {
      auto wanted = [&](char t) { return !o.leaf_types_given || o.leaf_types.find(t) != std::string::npos; };
      if (wanted('d')) time_streaming_leaf<double>(o, ob, bl, m, n, k, op[0], op[1]);
      if (wanted('z')) time_streaming_leaf<std::complex<double>>(o, ob, bl, m, n, k, op[0], op[1]);
      if (wanted('s')) time_streaming_leaf<float>(o, ob, bl, m, n, k, op[0], op[1]);
      if (wanted('c')) time_streaming_leaf<std::complex<float>>(o, ob, bl, m, n, k, op[0], op[1]);
    }
}

// The streaming rank-k leaf against the OpenBLAS and BLIS leaves' ?syrk / ?herk (1 thread,
// upper triangle, beta = 0) on one n x k Gram leaf: one row of `prism leaves --syrk`.
// trans 'N' reads A as n x k (NumPy's A.T @ A of a C-order k x n array), 'T' / 'C' as k x n
// (Fortran's, or LAPACK's CholeskyQR). GF/s count n(n + 1)k real flops (x4 complex).
template <class T>
void time_rank_k_leaf(const options& o, const prism::detail::blas_library& ob, const prism::detail::blas_library& bl,
                    int n, int k, char trans) {
  constexpr bool cx = !std::is_same_v<T, float> && !std::is_same_v<T, double>;
  const int lda = trans == 'N' ? n : k;
  auto A = random_matrix<T>(std::size_t(n) * k, 1);
  std::vector<T> C(std::size_t(n) * n);
  const double flops = (cx ? 4.0 : 1.0) * double(n) * double(n + 1) * double(k);
  auto run = [&](auto&& call) { return time_calls(o.reps, call).seconds; };
  auto blas = [&](const prism::detail::blas_library& lib) {
    return run([&] {
      if constexpr (cx) lib.herk<T>('U', trans, n, k, 1.0, A.data(), lda, 0.0, C.data(), n);
      else lib.syrk<T>('U', trans, n, k, T(1), A.data(), lda, T(0), C.data(), n);
    });
  };
  const double to = blas(ob), tl = blas(bl);
  const double ts = run([&] { prism::detail::streaming_rank_k<T>(cx, 'U', trans, n, k, T(1), A.data(), lda, T(0), C.data(), n); });
  std::printf("%4d x %8d %4c %4s %4c %12.2f %9.2f %13.2f %8.2f\n", n, k, char(prism::scalar_type_of<T>()),
              cx ? "herk" : "syrk", trans, flops / to * 1e-9, flops / tl * 1e-9, flops / ts * 1e-9, std::min(to, tl) / ts);
  std::fflush(stdout);
}

// The streaming rank-k leaf against the BLAS leaves (the measurement behind
// streaming_rank_k_preferred, lib/leaf/kernels/auto_rule.cpp): syrk for the real types, herk for
// the complex ones, trans 'N' and 'T' / 'C', n from 4 to 128, A from 128 KiB to 256 MiB.
void run_rank_k_leaves(const options& o) {
  const auto& ob = prism::detail::leaf_library(prism::leaf_backend::openblas);
  const auto& bl = prism::detail::leaf_library(prism::leaf_backend::blis);
  std::printf("# streaming rank-k leaf (prism's own kernel, %s) against the openblas (%s) and blis (%s) leaves' "
              "?syrk / ?herk, 1 thread, upper; best of %d\n",
              prism::detail::streaming_target(), ob.kernel_name().c_str(), bl.kernel_name().c_str(), o.reps);
  std::printf("%-15s %4s %4s %4s %12s %9s %13s %8s\n", "leaf n x k", "type", "op", "tr", "openblas GF", "blis GF",
              "streaming GF", "str/best");
  const std::vector<std::array<int, 2>> shapes = {
      {8, 1 << 22},  {16, 1 << 21},  {32, 1 << 20},  {64, 1 << 19},  {96, 1 << 18},   {128, 1 << 17},
      {4, 1 << 16},  {8, 1 << 14},   {16, 1 << 14},  {32, 1 << 14},  {64, 1 << 13},   {128, 1 << 12},
      {32, 2048},    {64, 1024},     {128, 512},     {64, 128},      {128, 128}};
  auto wanted = [&](char t) { return !o.leaf_types_given || o.leaf_types.find(t) != std::string::npos; };
  for (auto [n, k] : shapes)
    for (bool n_form : {true, false}) {
      if (wanted('d')) time_rank_k_leaf<double>(o, ob, bl, n, k, n_form ? 'N' : 'T');
      if (wanted('z')) time_rank_k_leaf<std::complex<double>>(o, ob, bl, n, k, n_form ? 'N' : 'C');
      if (wanted('s')) time_rank_k_leaf<float>(o, ob, bl, n, k, n_form ? 'N' : 'T');
      if (wanted('c')) time_rank_k_leaf<std::complex<float>>(o, ob, bl, n, k, n_form ? 'N' : 'C');
    }
}

// What prism chose for one leaf library's kernels, as `prism leaves` prints it.
void print_kernel_choice(const char* name, const prism::detail::blas_library& lib, double probe_gflops) {
  std::printf("# %s leaf: %s (%s)\n", name, lib.path().c_str(),
              lib.shared_with_host() ? "shared with the host" : "private copy, 1 thread");
  const prism::detail::kernel_choice* k = lib.kernels();
  if (k == nullptr) {  // a fallback build (the host took prism's usual file): not chosen by prism
    std::printf("#   running: %s (a fallback build: its kernels are not prism's choice)\n", lib.kernel_name().c_str());
  } else {
    std::printf("#   request: %s; chose %s: %s\n", k->request.c_str(), k->chosen.empty() ? "nothing" : k->chosen.c_str(),
                k->why.c_str());
    std::printf("#   candidates on this CPU, features' order: %s\n", k->candidates.empty() ? "none" : k->candidates.c_str());
    if (!k->carried.empty()) std::printf("#   carried by this file: %s\n", k->carried.c_str());
    std::printf("#   running: %s; library's own detection: %s\n", k->running.c_str(),
                k->detected.empty() ? "not asked" : k->detected.c_str());
    if (!k->measured.empty()) std::printf("#   probe: %s\n", k->measured.c_str());
    std::printf("#   interface: %s\n", k->interface.c_str());
    if (!k->environment.empty()) std::printf("#   ignored from the environment: %s\n", k->environment.c_str());
    if (!k->note.empty()) std::printf("#   note: %s\n", k->note.c_str());
  }
  std::printf("#   probe d 512^3, 1 thread: %.1f GF/s\n", probe_gflops);
}

// The leaf libraries' kernel sets, then single-threaded OpenBLAS vs BLIS on leaf shapes:
// the measurement behind PRISM_LEAF=auto (scripts/leaf-kernels.sh records it).
int run_leaves(const options& o) {
  if (o.streaming_only) {
    run_streaming_leaves(o);
    return 0;
  }
  if (o.syrk_only) {
    run_rank_k_leaves(o);
    return 0;
  }
  using prism::detail::blas_library;
  using prism::leaf_backend;
  const auto& cpu = prism::detail::this_cpu();
  const std::string kernels_set = prism::detail::read_environment().leaf_kernels;
  const char* lk = kernels_set.empty() ? nullptr : kernels_set.c_str();
  std::printf("# cpu: %s\n", cpu.describe().c_str());
  std::printf("# %s\n", o.ctx.description().summary().c_str());
  {  // the description itself, as a machine file holds it
    std::istringstream lines(o.ctx.description().to_string());
    for (std::string line; std::getline(lines, line);) std::printf("#   %s\n", line.c_str());
  }
  std::printf("# PRISM_LEAF_KERNELS: %s\n", lk != nullptr && *lk != '\0' ? lk : "unset (auto for both)");
  const blas_library& ob = prism::detail::leaf_library(leaf_backend::openblas);
  const blas_library& bl = prism::detail::leaf_library(leaf_backend::blis);
  print_kernel_choice("openblas", ob, ob.measure_gflops(prism::scalar_type::d, 512, 512, 512, o.reps));
  print_kernel_choice("blis", bl, bl.measure_gflops(prism::scalar_type::d, 512, 512, 512, o.reps));
  std::printf("# best of %d timings of >= %g s each; 'auto' is the backend PRISM_LEAF=auto picks for the shape\n",
              o.reps, min_timing);
  std::printf("%-26s %4s %12s %12s %8s %9s\n", "leaf m x n x k (NN)", "type", "openblas GF", "blis GF", "blis/ob",
              "auto");
  const std::vector<std::array<std::int64_t, 3>> shapes = {
      // squares
      {64, 64, 64}, {128, 128, 128}, {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048},
      // wide (k small) and tall-skinny (k large) leaves
      {256, 256, 64}, {1024, 1024, 64}, {2048, 4096, 64}, {4, 4, 1 << 20}, {8, 8, 1 << 20}, {16, 16, 1 << 20},
      {32, 32, 1 << 20}, {64, 64, 1 << 20}, {128, 128, 1 << 18},
      // around the m, n threshold of the auto rule, k as a cache-sized leaf has it
      {64, 64, 4096}, {96, 96, 4096}, {128, 128, 4096}, {192, 192, 4096}, {256, 256, 4096}, {512, 512, 4096}};
  for (char letter : o.leaf_types) {
    const auto t = prism::scalar_type(letter);
    for (auto [m, n, k] : shapes) {
      const double flops = prism::gemm_flops(t, m, n, k);
      auto rate = [&](const blas_library& lib) {
        auto one = [&]<class T>() {
          auto A = random_matrix<T>(std::size_t(m * k), 1), B = random_matrix<T>(std::size_t(k * n), 2);
          std::vector<T> C(std::size_t(m * n));
          return time_calls(o.reps, [&] {
                   lib.gemm<T>('N', 'N', m, n, k, T(1), A.data(), m, B.data(), k, T(0), C.data(), m);
                 }).seconds;
        };
        double s = 0;
        switch (t) {
          case prism::scalar_type::s: s = one.template operator()<float>(); break;
          case prism::scalar_type::d: s = one.template operator()<double>(); break;
          case prism::scalar_type::c: s = one.template operator()<std::complex<float>>(); break;
          case prism::scalar_type::z: s = one.template operator()<std::complex<double>>(); break;
        }
        return flops / s * 1e-9;
      };
      const double r_ob = rate(ob), r_bl = rate(bl);
      char shape[64];
      std::snprintf(shape, sizeof shape, "%lld x %lld x %lld", (long long)m, (long long)n, (long long)k);
      std::printf("%-26s %4c %12.2f %12.2f %8.2f %9s\n", shape, letter, r_ob, r_bl, r_bl / r_ob,
                  to_string(prism::detail::choose_leaf(o.ctx.description(), leaf_backend::automatic, t, m, n, k)));
      std::fflush(stdout);
    }
  }
  run_streaming_leaves(o);
  return 0;
}

// ---- prism bound ----

// "1.573e6": three significant digits, a plain exponent; "0" and "unlimited" as such.
std::string sci(double x) {
  if (std::isinf(x)) return "unlimited";
  if (x == 0) return "0";
  char buf[32];
  const int e = int(std::floor(std::log10(std::fabs(x))));
  if (e >= -2 && e < 4) std::snprintf(buf, sizeof buf, "%.4g", x);
  else std::snprintf(buf, sizeof buf, "%.3fe%d", x / std::pow(10.0, e), e);
  return buf;
}

// A size with an optional K, M or G suffix (powers of 1024), as a double: --memory, --peak,
// --bandwidth values. Zero is refused.
double parse_positive_size(const std::string& v, const std::string& what) {
  std::uint64_t x = 0;
  try {
    x = prism::parse_size(v);
  } catch (const prism::error&) {
    throw bad_input(what + " must be a whole number with an optional K, M or G suffix, got '" + v + "'", "bound");
  }
  if (x == 0) throw bad_input(what + " must be > 0, got '" + v + "'", "bound");
  return double(x);
}

struct bound_options {
  std::int64_t m = 0, n = 0, k = 0, ranks = 1;
  double memory = prism::bounds::unlimited;  // words per rank
  bool memory_given = false;
  std::string topology;                      // empty: PRISM_TOPOLOGY, else this machine
  prism::scalar_type type = prism::scalar_type::d;
  double peak = 0;                           // flop/s per processing unit, 0 unknown
  std::vector<std::pair<std::string, double>> bandwidth;  // level name, bytes/s per unit
  bool probe = false;
  bool syrk = false;      // --syrk: the SYRK bound (C = A A^T, M = N)
  std::string given;      // the options given, for --syrk's refusal of the ones it ignores
};

bound_options parse_bound(const std::vector<std::string>& args) {
  const std::string hint = "bound";
  if (args.size() < 5) throw bad_input("prism bound needs M N K", hint);
  bound_options o;
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  o.m = parse_int(args[2], "M", 1, max, hint);
  o.n = parse_int(args[3], "N", 1, max, hint);
  o.k = parse_int(args[4], "K", 1, max, hint);
  for (std::size_t i = 5; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--probe") {
      o.probe = true;
      o.given += o.given.empty() ? a : ", " + a;
      continue;
    }
    if (a == "--syrk") {
      if (o.syrk) throw bad_input("--syrk is given once", hint);
      o.syrk = true;
      // Optional letters, as for `prism plan --syrk UT`: uplo U or L, then trans N or T.
      if (i + 1 < args.size() && !args[i + 1].empty() && args[i + 1][0] != '-') {
        const std::string& v = args[++i];
        if (v.size() != 2 || (v[0] != 'U' && v[0] != 'L') || (v[1] != 'N' && v[1] != 'T'))
          throw bad_input("--syrk takes uplo (U or L) then trans (N or T), e.g. UT, got '" + v + "'", hint);
      }
      continue;
    }
    if (a != "--ranks" && a != "--memory" && a != "--topology" && a != "--type" && a != "--peak" &&
        a != "--bandwidth")
      throw bad_input("unknown option '" + a + "' for 'prism bound'", hint);
    if (i + 1 >= args.size()) throw bad_input(a + " needs a value", hint);
    const std::string& v = args[++i];
    if (a != "--ranks" && a != "--type") o.given += o.given.empty() ? a : ", " + a;
    if (a == "--ranks") o.ranks = parse_int(v, a, 1, 1 << 20, hint);
    else if (a == "--memory") o.memory = parse_positive_size(v, a), o.memory_given = true;
    else if (a == "--topology") o.topology = v;
    else if (a == "--peak") o.peak = parse_positive_size(v, a);
    else if (a == "--type") {
      if (v.size() != 1 || std::string("sdcz").find(v[0]) == std::string::npos)
        throw bad_input("--type must be s, d, c or z, got '" + v + "'", hint);
      o.type = prism::scalar_type(v[0]);
    } else {  // --bandwidth L1=200G,L3=20G
      std::size_t at = 0;
      while (at <= v.size()) {
        const std::size_t comma = std::min(v.find(',', at), v.size());
        const std::string item = v.substr(at, comma - at);
        const std::size_t eq = item.find('=');
        if (eq == std::string::npos || eq == 0)
          throw bad_input("--bandwidth takes LEVEL=BYTES_PER_S items separated by commas (e.g. L3=20G), got '" +
                              item + "'", hint);
        o.bandwidth.emplace_back(item.substr(0, eq), parse_positive_size(item.substr(eq + 1), "--bandwidth " +
                                                                          item.substr(0, eq)));
        at = comma + 1;
      }
    }
  }
  if (o.memory_given && o.memory < 3) throw bad_input("--memory must be >= 3 words (a 1 x 1 block and two operands)", hint);
  if (o.syrk) {
    if (o.m != o.n)
      throw bad_input("--syrk: the update is N x N, so M and N must be equal, got " + args[2] + " and " + args[3], hint);
    if (!o.given.empty())
      throw bad_input("--syrk: the SYRK bound is per rank and memory-independent; " + o.given +
                          (o.given.find(',') == std::string::npos ? " does" : " do") + " not apply",
                      hint);
  }
  return o;
}

// Probes: one core's FMA peak; for each cache level, reads from an array that overflows it
// but fits the next (their sizes' geometric mean; the last level: 8 times its size, within
// 256 MiB .. 1 GiB), by the processing units sharing one instance: the bandwidth one
// instance gets from the level above.
void probe_machine(const prism::topology& t, bound_options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const double flops = o.type == prism::scalar_type::s || o.type == prism::scalar_type::c
                           ? prism_bench::fma_peak_float(1, 1 << 24)
                           : prism_bench::fma_peak_double(1, 1 << 24);
  if (o.peak == 0) o.peak = flops / seconds_since(t0);
  const auto& caches = t.caches();
  for (std::size_t i = 0; i < caches.size(); ++i) {
    const std::string name = std::string(1, 'L') + std::to_string(caches[i].level);
    if (std::any_of(o.bandwidth.begin(), o.bandwidth.end(), [&](const auto& b) { return b.first == name; })) continue;
    const double here = double(caches[i].size_bytes);
    const double gib = 1024.0 * 1024 * 1024;  // the last level: 8x, in [256 MiB, 1 GiB] (a VM may say 512 MiB)
    const double bytes = i + 1 < caches.size() ? std::sqrt(here * double(caches[i + 1].size_bytes))
                                               : std::clamp(8 * here, gib / 4, gib);
    const int threads = std::max(1, caches[i].pus_sharing);
    const auto r = prism_bench::read_bandwidth(threads, std::size_t(bytes), 9);
    o.bandwidth.emplace_back(name, r.median_bytes_per_s);
  }
}

// `prism bound N N K --syrk`: the SYRK bound per rank, its case and the case's condition in
// numbers, beside gemm's bounds for the full N x N x K square. E.g. 4096 4096 4096 --ranks 8:
// 3D, 3144960 words per rank (25.16 MB of doubles), gemm 6291456, ratio 0.500.
int run_bound_syrk(const bound_options& o) {
  namespace pb = prism::bounds;
  const std::int64_t n = o.n, k = o.k, P = o.ranks;
  const double N = double(n), K = double(k), Pd = double(P), eb = double(prism::element_size(o.type));
  const pb::syrk_case c = pb::syrk_bound_case(n, k, P);
  const double w = pb::syrk_parallel_io_minus_owned(n, k, P), q = pb::syrk_parallel_io(n, k, P);
  const double g = pb::memory_independent_minus_owned(n, n, k, P);
  auto mb = [&](double words) { return sci(words * eb / 1e6); };
  std::printf("# prism bound --syrk: C (%lld x %lld, symmetric) = A A^T, A %lld x %lld, type %c, P = %lld rank%s\n",
              (long long)n, (long long)n, (long long)n, (long long)k, char(o.type), (long long)P, P == 1 ? "" : "s");
  std::printf("# words are matrix elements (%zu bytes). Q: words of A and of C's strict triangle a rank doing\n"
              "# n(n-1)k/(2P) off-diagonal multiply-adds must touch; owned: (nk + n(n-1)/2)/P = %s\n",
              prism::element_size(o.type), sci(pb::syrk_owned(n, k, P)).c_str());
  const char* name = c == pb::syrk_case::one_d ? "1D" : c == pb::syrk_case::two_d ? "2D" : "3D";
  std::printf("SYRK lower bound, %s case: %.9g words per rank (%s MB); Q = %s\n", name, w, mb(w).c_str(),
              sci(q).c_str());
  const double a = Pd * (N - 1) * (N - 1), b = N * K, ck = Pd * K * K, d = N * (N - 1);
  std::printf("  case: %s\n", pb::to_string(c));
  if (P == 1)
    std::printf("  condition: P = 1: the one rank touches all of A and of the triangle, and owns it\n");
  else if (c == pb::syrk_case::one_d)
    std::printf("  condition: P (n-1)^2 < nk (%s < %s)\n"
                "  domain: the whole triangle's worth, (n-1)^2/2, and nk/P of A (a k split, partial triangles reduced)\n",
                sci(a).c_str(), sci(b).c_str());
  else if (c == pb::syrk_case::two_d)
    std::printf("  condition: P k^2 < n(n-1) (%s < %s)\n"
                "  domain: triangle blocks of side sqrt(n(n-1)/P) = %s over all of k\n",
                sci(ck).c_str(), sci(d).c_str(), sci(std::sqrt(d / Pd)).c_str());
  else
    std::printf("  condition: P (n-1)^2 >= nk (%s >= %s) and P k^2 >= n(n-1) (%s >= %s)\n"
                "  domain: triangle blocks of side and depth (n(n-1)k/P)^(1/3) = %s\n",
                sci(a).c_str(), sci(b).c_str(), sci(ck).c_str(), sci(d).c_str(), sci(std::cbrt(d * K / Pd)).c_str());
  std::printf("  source: Al Daas, Ballard, Grigori, Kumar, Rouse, Verite (SPAA'23; arXiv 2409.11304), derived with\n"
              "  its lower-order terms in docs/data-movement.md\n");
  std::printf("gemm, the full square %lld x %lld x %lld (%s): %.9g words per rank (%s MB)\n", (long long)n,
              (long long)n, (long long)k, pb::to_string(pb::carma_split_case(n, n, k, P)), g, mb(g).c_str());
  std::printf("  COSMA Theorem 2 (its cube, what `prism plan --stats` reports): %s; CARMA II-B: %s\n",
              sci(pb::parallel_io_minus_owned(n, n, k, P, pb::unlimited)).c_str(),
              sci(pb::carma_lower_bound(n, n, k, P, pb::unlimited)).c_str());
  if (g > 0) std::printf("SYRK / gemm: %.3f\n", w / g);
  return 0;
}

int run_bound(const std::vector<std::string>& args) {
  namespace pb = prism::bounds;
  bound_options o = parse_bound(args);
  if (o.syrk) return run_bound_syrk(o);
  const prism::topology t = [&] {
    try {
      return o.topology.empty() ? prism::topology::from_env() : prism::topology::parse(o.topology);
    } catch (const prism::error& e) {
      throw bad_input(std::string(o.topology.empty() ? "" : "--topology: ") + e.what(), "bound");
    }
  }();
  const std::int64_t m = o.m, n = o.n, k = o.k, P = o.ranks;
  const std::size_t eb = prism::element_size(o.type);
  const double S = o.memory, V = double(m) * double(n) * double(k) / double(P);
  // Every check (and the probe) before the first line of output: a run that fails prints
  // nothing on stdout.
  std::vector<pb::level_bound> levels = pb::level_bounds(t, m, n, k, P, S, eb);
  auto level_named = [&](const std::string& name) {
    return std::find_if(levels.begin(), levels.end(), [&](const pb::level_bound& l) { return l.name == name; });
  };
  for (const auto& given : o.bandwidth)
    if (level_named(given.first) == levels.end()) {
      std::string known;
      for (const auto& l : levels) known += (known.empty() ? "" : ", ") + l.name;
      throw bad_input("--bandwidth: no level '" + given.first + "' here (levels: " + (known.empty() ? "none" : known) +
                          ")", "bound");
    }
  if (o.probe) probe_machine(t, o);
  for (const auto& [name, bytes_per_s] : o.bandwidth)
    if (auto it = level_named(name); it != levels.end()) it->bandwidth = bytes_per_s;

  std::printf("# prism bound: C (%lld x %lld) += A (%lld x %lld) B (%lld x %lld), type %c, P = %lld rank%s, "
              "S = %s words per rank\n",
              (long long)m, (long long)n, (long long)m, (long long)k, (long long)k, (long long)n, char(o.type),
              (long long)P, P == 1 ? "" : "s", o.memory_given ? sci(S).c_str() : "unlimited");
  std::printf("# words are matrix elements (%zu bytes). Q: words a rank's local domain reads and writes (COSMA's "
              "I/O);\n# owned: what a balanced layout gives a rank, (mk + kn + mn)/P = %s\n",
              eb, sci(pb::owned(m, n, k, P)).c_str());

  // Parallel: COSMA Theorem 2 and which branch of Eq. 33 gives it.
  const double q = pb::parallel_io(m, n, k, P, S), side = std::cbrt(V);
  std::printf("Theorem 2 (COSMA): Q - owned = %s words per rank (Q = %s)\n",
              sci(pb::parallel_io_minus_owned(m, n, k, P, S)).c_str(), sci(q).c_str());
  if (S >= side * side)
    std::printf("  branch: 3 (mnk/P)^(2/3), cubic %s^3 domains: S >= (mnk/P)^(2/3) = %s\n", sci(side).c_str(),
                sci(side * side).c_str());
  else
    std::printf("  branch: 2mnk/(P sqrt S) + S, %s x %s x %s domains: S < (mnk/P)^(2/3) = %s\n",
                sci(std::sqrt(S)).c_str(), sci(std::sqrt(S)).c_str(), sci(V / S).c_str(), sci(side * side).c_str());
  if (P > 1 && S * double(P) < double(m) * double(k) + double(k) * double(n) + double(m) * double(n))
    std::printf("  note: P S < mk + kn + mn, so A, B and C do not fit in the ranks' memory (Theorem 2 assumes "
                "they do)\n");

  // CARMA's cases.
  const pb::carma_case bc = pb::carma_bound_case(m, n, k, P), sc = pb::carma_split_case(m, n, k, P);
  std::printf("CARMA lower bound (II-B, %s): %s words per rank\n", pb::to_string(bc),
              sci(pb::carma_lower_bound(m, n, k, P, S)).c_str());
  std::printf("CARMA cost (Table I, %s, constant 1): %s words per rank\n", pb::to_string(sc),
              sci(pb::carma_cost(m, n, k, P, S)).c_str());

  // Sequential: S, else the last-level cache of the topology.
  double seq_s = S;
  std::string seq_what = "S";
  if (!o.memory_given) {
    const auto& caches = t.caches();
    seq_s = caches.empty() || caches.back().size_bytes == 0 ? 0 : double(caches.back().size_bytes) / double(eb);
    seq_what = caches.empty() ? std::string() : std::string(1, 'L') + std::to_string(caches.back().level);
  }
  if (seq_s >= 3)
    std::printf("sequential, one processor, fast memory %s = %s words: Theorem 1 (COSMA) %s words; its greedy "
                "schedule (Corollary) %s; every word once (mk + kn + mn) %s\n",
                seq_what.c_str(), sci(seq_s).c_str(), sci(pb::sequential_io(m, n, k, seq_s)).c_str(),
                sci(pb::sequential_greedy(m, n, k, seq_s)).c_str(), sci(pb::owned(m, n, k, 1)).c_str());

  // Modelled costs of the classic decompositions.
  std::printf("\n# modelled words per rank (real-valued grids: the models assume exact divisions)\n");
  std::printf("%-20s %-24s %10s %10s  %s\n", "decomposition", "grid m x n x k", "Q", "Q - owned", "source");
  for (const pb::decomposition_cost& c : pb::modelled_costs(m, n, k, P, S)) {
    const std::string grid = sci(c.grid[0]) + " x " + sci(c.grid[1]) + " x " + sci(c.grid[2]);
    std::printf("%-20s %-24s %10s %10s  %s\n", c.name, grid.c_str(), sci(c.io).c_str(), sci(c.received).c_str(),
                c.source);
  }

  // Per level of the machine.
  int pus = 0;
  for (const prism::numa_domain& d : t.domains()) pus += int(d.pus.size());
  pus = std::max(pus, 1);
  const pb::balance b =
      pb::machine_balance(levels, prism::gemm_flops(o.type, m, n, k), std::int64_t(pus) * P, o.peak, eb);
  std::printf("\n# per level (Elango et al.) of %s%s\n", t.source().c_str(),
              P > 1 ? ", one per rank" : "");
  std::printf("# a cache level: words one instance exchanges with the level above (vertical); numa, ranks: words\n"
              "# one unit receives from the others (horizontal); time: lower bound / bandwidth\n");
  std::printf("%-6s %-10s %6s %6s %12s %12s %12s %12s\n", "level", "kind", "units", "pus", "words/unit",
              "lower bound", "bandwidth", "time");
  for (const pb::level_bound& l : b.levels)
    std::printf("%-6s %-10s %6lld %6lld %12s %12s %12s %12s\n", l.name.c_str(),
                l.kind == pb::movement::vertical ? "vertical" : "horizontal", (long long)l.units,
                (long long)l.processors, sci(l.unit_words).c_str(), sci(l.words).c_str(),
                l.bandwidth > 0 ? (sci(l.bandwidth) + " B/s").c_str() : "-",
                l.bandwidth > 0 ? duration(l.seconds).c_str() : "-");
  if (o.peak <= 0 || b.binding < 0) {
    std::printf("# machine balance: give --peak F and --bandwidth LEVEL=B (or --probe) to see which level bounds "
                "the run\n");
    return 0;
  }
  std::printf("# compute: %s flops on %lld processing units at %s flop/s each: %s\n",
              sci(prism::gemm_flops(o.type, m, n, k)).c_str(), (long long)(std::int64_t(pus) * P), sci(o.peak).c_str(),
              duration(b.compute_seconds).c_str());
  const pb::level_bound& w = b.levels[std::size_t(b.binding)];
  if (b.bandwidth_bound)
    std::printf("# machine balance: %s bounds the run: its lower bound takes %s > compute %s, for any schedule\n",
                w.name.c_str(), duration(w.seconds).c_str(), duration(b.compute_seconds).c_str());
  else
    std::printf("# machine balance: compute bounds the run: the slowest level's lower bound (%s, %s) fits in the "
                "compute time %s\n",
                w.name.c_str(), duration(w.seconds).c_str(), duration(b.compute_seconds).c_str());
  return 0;
}

// ---- prism tune: this machine's crossovers, written to a machine file ----------------------
//
// Each crossover is the smallest size of a series from which the streaming leaf (or the
// recursion) was at least as fast as the alternative, within a band `tie` for noise, at that
// size and at every larger one measured, so one noisy win below a loss does not count.
// Example, tie 0.97: streaming / best BLAS ratios 0.7, 0.9, 1.1, 0.95, 1.2, 1.3 over sizes
// s0..s5 give s4 (s2 won, but s3 lost after it; 0.98 there would have counted as a tie and
// given s2). A series that never wins gives twice its largest size ("not within the sizes
// measured"); one that always wins gives its smallest.
struct crossover {
  double value = 0;
  bool never = false;
};

crossover find_crossover(const std::vector<double>& sizes, const std::vector<double>& ratios, double tie) {
  std::size_t from = sizes.size();
  while (from > 0 && ratios[from - 1] >= tie) --from;
  if (from == sizes.size()) return {2 * sizes.back(), true};
  return {sizes[from], false};
}

// Seconds per call of the faster of prism's OpenBLAS and BLIS leaves, and of the streaming
// leaf, for one m x n x k product of type T with trans pair (ta, tb), one thread.
template <class T>
std::pair<double, double> leaf_times(int reps, int m, int n, int k, char ta, char tb) {
  const auto& ob = prism::detail::leaf_library(prism::leaf_backend::openblas);
  const auto& bl = prism::detail::leaf_library(prism::leaf_backend::blis);
  const int lda = ta == 'N' ? m : k, ldb = tb == 'N' ? k : n;
  auto A = random_matrix<T>(std::size_t(m) * k, 1), B = random_matrix<T>(std::size_t(k) * n, 2);
  std::vector<T> C(std::size_t(m) * n);
  auto blas = [&](const prism::detail::blas_library& lib) {
    return time_calls(reps, [&] { lib.gemm<T>(ta, tb, m, n, k, T(1), A.data(), lda, B.data(), ldb, T(0), C.data(), m); })
        .seconds;
  };
  const double best_blas = std::min(blas(ob), blas(bl));
  const double streaming = time_calls(reps, [&] {
                             prism::detail::streaming_gemm<T>(ta, tb, m, n, k, T(1), A.data(), lda, B.data(), ldb,
                                                              T(0), C.data(), m);
                           }).seconds;
  return {best_blas, streaming};
}

// The streaming leaf against the best BLAS leaf over k = k0, 2 k0, ..., k1 for one shape
// class; sizes are bytes of A and B, or k itself when `by_k`. Prints one line a size.
template <class T>
crossover streaming_crossover(const char* name, int reps, int m, int n, char ta, char tb, std::int64_t k0,
                              std::int64_t k1, bool by_k) {
  std::vector<double> sizes, ratios;
  for (std::int64_t k = k0; k <= k1; k *= 2) {
    const auto [blas, streaming] = leaf_times<T>(reps, m, n, int(k), ta, tb);
    const double bytes = double(m + n) * double(k) * double(sizeof(T));
    sizes.push_back(by_k ? double(k) : bytes);
    ratios.push_back(blas / streaming);
    std::printf("#   %-17s %3d x %3d x %8lld %c%c %c: %7.1f MiB of A and B, streaming / best BLAS leaf %.2f\n", name, m,
                n, static_cast<long long>(k), ta, tb, char(prism::scalar_type_of<T>()), bytes / (1 << 20),
                ratios.back());
    std::fflush(stdout);
  }
  // A tie counts for the streaming leaf: it packs nothing and leaves the caches to others.
  return find_crossover(sizes, ratios, 0.97);
}

// The streaming kernels' sizes (machine keys stream_*_bytes and syrk_chunk_bytes). Each is
// timed at the model's value times 1/4, 1/2, 1, 2 and 4 (whole 64-byte lines) on a shape
// that uses it, with A and B from memory (twice the last-level cache, 256 MiB to 1 GiB),
// every thread streaming its own part of k as prism's k cut has it; in rounds over the
// candidates (R of them, at least 3), best of the rounds each, per shape. The size kept is
// the one whose slowest shape, against the model's value, gains most; the model's value
// wins unless that gain is over 2%. Sizes are measured one after the other and
// each is in force for the next (the tiled leaf runs the outer and dot kernels on its
// chunks). Prints one line a size.
class kernel_size_tuner {
 public:
  kernel_size_tuner(const prism::machine_description& d, int reps, int threads) : reps_(reps), threads_(threads) {
    const auto& caches = d.topo().caches();
    double llc = 0;
    for (const auto& c : caches) llc = std::max(llc, double(c.size_bytes));
    bytes_ = std::int64_t(std::clamp(2 * llc, 256.0 * (1 << 20), 1024.0 * (1 << 20)));
    half_ = std::size_t(bytes_ / 2 / std::int64_t(sizeof(double)));
    buf_.assign(2 * half_, 0.5);  // A in the first half, B in the second; a rank-k update's A in all
    sizes_ = prism::detail::streaming_sizes_of(d);
    prism::detail::streaming_set_sizes(sizes_);
  }

  // Measures every size, sets each in d and in the kernels.
  void run(prism::machine_description& d) {
    using K = prism::machine_key;
    tune(d, K::stream_prefetch_bytes, &prism::detail::streaming_sizes::prefetch, "8x8 and 4x4 NN",
         [&] { return std::vector<double>{gemm(8, 8, 'N', 'N'), gemm(4, 4, 'N', 'N')}; });
    tune(d, K::stream_outer_chunk_bytes, &prism::detail::streaming_sizes::outer_chunk,
         "16x16 NN, 64x64 NN and 32x32 TN",
         [&] { return std::vector<double>{gemm(16, 16, 'N', 'N'), gemm(64, 64, 'N', 'N'), gemm(32, 32, 'T', 'N')}; });
    tune(d, K::stream_dot_chunk_bytes, &prism::detail::streaming_sizes::dot_chunk, "16x16 TN",
         [&] { return std::vector<double>{gemm(16, 16, 'T', 'N')}; });
    tune(d, K::stream_tile_chunk_bytes, &prism::detail::streaming_sizes::tile_chunk, "64x64 NN and 32x32 TN",
         [&] { return std::vector<double>{gemm(64, 64, 'N', 'N'), gemm(32, 32, 'T', 'N')}; });
    tune(d, K::syrk_chunk_bytes, &prism::detail::streaming_sizes::syrk_chunk, "syrk n = 32 N",
         [&] { return std::vector<double>{syrk(32)}; });
  }

 private:
  // Seconds for one m x n product over all of the buffers (k = what fits), split along k.
  double gemm(int m, int n, char ta, char tb) {
    const std::int64_t k = std::int64_t(half_) / std::max(m, n);
    return split(k, [&](std::int64_t l0, std::int64_t kk, double* c) {
      const double* A = buf_.data() + (ta == 'N' ? l0 * m : l0);
      const double* B = buf_.data() + half_ + (tb == 'N' ? l0 : l0 * n);
      const std::int64_t lda = ta == 'N' ? m : k, ldb = tb == 'N' ? k : n;
      prism::detail::streaming_gemm<double>(ta, tb, m, n, kk, 1.0, A, lda, B, ldb, 0.0, c, m);
    });
  }

  // Seconds for one n x n rank-k update, trans 'N', over the buffers (k = what fits).
  double syrk(int n) {
    const std::int64_t k = std::int64_t(2 * half_) / n;
    return split(k, [&](std::int64_t l0, std::int64_t kk, double* c) {
      prism::detail::streaming_rank_k<double>(false, 'U', 'N', n, kk, 1.0, buf_.data() + l0 * n, n, 0.0, c, n);
    });
  }

  // Best time of `call` on threads_ threads, thread t taking its share [l0, l0 + kk) of k.
  template <class F>
  double split(std::int64_t k, F&& call) {
    std::vector<std::vector<double>> c(std::size_t(threads_), std::vector<double>(128 * 128));
    return time_calls(1, [&] {
      std::vector<std::thread> team;
      const std::int64_t part = (k + threads_ - 1) / threads_;
      for (int t = 0; t < threads_; ++t) {
        const std::int64_t l0 = t * part, kk = std::min(part, k - l0);
        if (kk > 0) team.emplace_back([&, l0, kk, t] { call(l0, kk, c[std::size_t(t)].data()); });
      }
      for (auto& th : team) th.join();
    }).seconds;
  }

  // Times every candidate on each of the shapes `time` runs (seconds per shape), best of
  // the rounds per shape, and keeps the candidate whose worst shape gains most against the
  // model's value: score = max over shapes of t(candidate) / t(model). A size that speeds
  // one shape up and slows another down is not taken; the model's value wins unless the
  // best score is below 0.98.
  void tune(prism::machine_description& d, prism::machine_key key, std::int64_t prism::detail::streaming_sizes::*field,
            const char* shape, const std::function<std::vector<double>()>& time) {
    const std::int64_t model = std::int64_t(d.model_value(key));
    const double factors[] = {0.25, 0.5, 1.0, 2.0, 4.0};
    constexpr std::size_t n = std::size(factors), at_model = 2;
    std::int64_t value[n];
    std::vector<double> best_t[n];
    for (std::size_t c = 0; c < n; ++c)
      value[c] = std::max<std::int64_t>(64, std::int64_t(double(model) * factors[c]) / 64 * 64);
    // Rounds over all candidates, best of the rounds each: a machine that slows down for a
    // while slows every candidate of a round, not one of them.
    for (int round = 0; round < std::max(3, reps_); ++round)
      for (std::size_t c = 0; c < n; ++c) {
        sizes_.*field = value[c];
        prism::detail::streaming_set_sizes(sizes_);
        const std::vector<double> t = time();
        if (best_t[c].empty()) best_t[c] = t;
        for (std::size_t s = 0; s < t.size(); ++s) best_t[c][s] = std::min(best_t[c][s], t[s]);
      }
    double score[n];
    for (std::size_t c = 0; c < n; ++c) {
      score[c] = 0;
      for (std::size_t s = 0; s < best_t[c].size(); ++s) score[c] = std::max(score[c], best_t[c][s] / best_t[at_model][s]);
    }
    std::size_t best = at_model;
    for (std::size_t c = 0; c < n; ++c)
      if (score[c] < score[best]) best = c;
    if (score[best] >= 0.98) best = at_model;
    std::printf("#   %-24s %s:", prism::to_string(key), shape);
    for (std::size_t c = 0; c < n; ++c) {
      double sum = 0;
      for (double t : best_t[c]) sum += t;
      std::printf(" %lld B %.1f ms (x%.2f);", static_cast<long long>(value[c]), sum * 1e3, score[c]);
    }
    std::printf(" keeps %lld\n", static_cast<long long>(value[best]));
    std::fflush(stdout);
    sizes_.*field = value[best];
    prism::detail::streaming_set_sizes(sizes_);
    d.set_measured(key, double(value[best]));
  }

  int reps_, threads_;
  std::int64_t bytes_ = 0;
  std::size_t half_ = 0;
  std::vector<double> buf_;
  prism::detail::streaming_sizes sizes_;
};

// `prism tune --first-use`: what the first long call would measure without a machine file.
int run_first_use(const options& o) {
  namespace d = prism::detail;
  const prism::machine_description& desc = o.ctx.description();
  d::wisdom& w = d::wisdom::process();
  std::printf("# %s\n", desc.summary().c_str());
  if (!desc.first_use()) {
    std::printf("# first use: nothing measured (%s)\n", w.enabled() ? "a machine file is read: its values stand"
                                                                     : "PRISM_FIRST_USE=0");
    return 0;
  }
  if (const auto kept_before = w.find("streaming_crossovers")) {
    std::printf("# first use: nothing measured, kept in %s: %s\n", w.path().c_str(), kept_before->c_str());
  } else {
    (void)d::leaf_library(prism::leaf_backend::openblas);  // loaded first: the measurement times kernels only
    (void)d::leaf_library(prism::leaf_backend::blis);
    const d::first_use_result r = d::measure_first_use(desc);
    char done[96];
    std::snprintf(done, sizeof done, "measured in %.3f s, %zu of %zu decided", r.seconds, r.values.size(),
                  d::first_use_keys().size());
    const bool kept = d::keep_first_use_values(r.values, {{"streaming_crossovers", done}});
    std::printf("# first use: %s; %s\n%s", done, kept ? ("kept in " + w.path()).c_str() : "not kept (the folder cannot be written)",
                r.text.c_str());
  }
  for (prism::machine_key k : d::first_use_keys())
    std::printf("%s: %.12g %s\n", prism::to_string(k), desc.value(k), desc.origin(k));
  return 0;
}

int run_tune(const options& o) {
  if (o.tune_first_use) return run_first_use(o);
  if (o.tune_show) {
    std::printf("# %s\n%s", o.ctx.description().summary().c_str(), o.ctx.description().to_string().c_str());
    return 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const int reps = o.reps_given ? o.reps : 3;
  std::string path = o.tune_out;
  if (path.empty()) {
    const prism::detail::environment env = prism::detail::read_environment();
    path = !env.machine.empty() ? env.machine : env.machine_file;
  }
  if (path.empty()) throw bad_input("no file to write: give --out FILE, or set PRISM_MACHINE or HOME", "tune");
  {  // never overwrite an example machine (PRISM_MACHINE may name one for plans)
    std::ifstream old(path);
    std::stringstream text;
    text << old.rdbuf();
    if (old && prism::machine_description::is_example_text(text.str()))
      throw bad_input(path + " describes an example machine; give --out FILE for this machine's file", "tune");
  }
  prism::machine_description d = prism::machine_description::detect();
  std::printf("# prism tune: %s, %d cores, streaming kernel %s; best of %d timings of >= %g s, 1 thread unless said\n",
              d.cpu().c_str(), d.cores(), d.simd().c_str(), reps, min_timing);
  // The streaming kernels' own sizes first: the crossovers below time the kernels with them.
  {
    kernel_size_tuner sizes(d, reps, std::max(1, std::min(o.ctx.threads(), d.cores())));
    sizes.run(d);
  }
  // The streaming leaf's thresholds (streaming_preferred): m, n <= 16 real from stream_bytes,
  // the dot kernel ('TN' 32 x 32) from stream_dot_bytes, the 48..64-wide outer leaves
  // (64 x 64 NN double) from stream_far_bytes, complex small leaves from stream_complex_k.
  auto set = [&](prism::machine_key key, const crossover& c) {
    d.set_measured(key, c.value);
    std::printf("# %s: %.6g measured%s\n", prism::to_string(key), c.value,
                c.never ? " (no crossover within the sizes measured: twice the largest)" : "");
  };
  // The far series run until A and B are twice the last-level cache (up to 1 GiB), where
  // the leaf comes from memory as a long product's leaves do; a kernel that has not won
  // there does not win beyond, so "never" is kept as never: 1e18 bytes, no leaf that size.
  double llc = 0;
  for (const auto& c : d.topo().caches()) llc = std::max(llc, double(c.size_bytes));
  auto far_k = [&](int m, int n) {
    std::int64_t k = 1 << 12;
    while (double(m + n) * double(k) * 8 < std::min(2 * llc, 1024.0 * (1 << 20))) k *= 2;
    return k;
  };
  auto set_far = [&](prism::machine_key key, crossover c) {
    if (!c.never) return set(key, c);
    d.set_measured(key, 1e18);
    std::printf("# %s: 1e18 measured (never: the streaming leaf did not win up to twice the last-level cache)\n",
                prism::to_string(key));
  };
  set(prism::machine_key::stream_bytes,
      streaming_crossover<double>("stream_bytes", reps, 8, 8, 'N', 'N', 1 << 10, 1 << 20, false));
  set_far(prism::machine_key::stream_dot_bytes,
          streaming_crossover<double>("stream_dot_bytes", reps, 32, 32, 'T', 'N', 1 << 12, far_k(32, 32), false));
  set_far(prism::machine_key::stream_far_bytes,
          streaming_crossover<double>("stream_far_bytes", reps, 64, 64, 'N', 'N', 1 << 11, far_k(64, 64), false));
  set(prism::machine_key::stream_complex_k,
      streaming_crossover<std::complex<double>>("stream_complex_k", reps, 8, 8, 'N', 'N', 16, 2048, true));
  // The small-call threshold: prism's recursion on all threads against one leaf call, on
  // cubes n = 24 .. 256 (each step x 1.25): small_flops = 2 n^3 at the crossover.
  {
    prism::context rec = o.ctx, one = o.ctx;
    rec.set_description(d).set_small_flops(0);
    one.set_description(d).set_small_flops(std::numeric_limits<double>::max());
    std::vector<double> sizes, ratios;
    for (double x = 24; x <= 256; x *= 1.25) {
      const int n = int(x) / 8 * 8;
      auto A = random_matrix<double>(std::size_t(n) * n, 1), B = random_matrix<double>(std::size_t(n) * n, 2);
      std::vector<double> C(std::size_t(n) * n);
      auto call = [&](const prism::context& c) {
        return time_calls(reps, [&] {
                 prism::gemm<double>('N', 'N', n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, C.data(), n, c);
               }).seconds;
      };
      const double t_one = call(one), t_rec = call(rec);
      sizes.push_back(2.0 * n * n * n);
      ratios.push_back(t_one / t_rec);
      std::printf("#   small_flops       %3d^3 d: recursion on %d threads / one leaf %.2f\n", n, rec.threads(),
                  ratios.back());
      std::fflush(stdout);
    }
    // A tie counts for the single leaf: it keeps the other threads free.
    set(prism::machine_key::small_flops, find_crossover(sizes, ratios, 1.0));
  }
  // The thread level's reduction: a k cut over every thread of s x s x 8 leaves, its partial
  // C blocks added on all threads against on one (parallel_reduce_bytes 64 against never),
  // s x s doubles from 2 KiB to 8 MiB (each step x sqrt 2): the same leaves both ways, so the
  // ratio is the reduction's. parallel_reduce_bytes = the C bytes from which all threads win.
  if (const int threads = std::min(o.ctx.threads(), d.cores()); threads >= 2) {
    prism::machine_description always = d, never = d;
    always.set_measured(prism::machine_key::parallel_reduce_bytes, 64);
    never.set_measured(prism::machine_key::parallel_reduce_bytes, 1e18);
    prism::context par = o.ctx, one = o.ctx;
    par.set_description(always);
    one.set_description(never);
    std::vector<double> sizes, ratios;
    for (double x = 16; x <= 1024 * 1.01; x *= std::sqrt(2.0)) {
      const int s = int(std::lround(x)), part = 8;
      std::string text = "prism-plan 2\nproblem d NN " + std::to_string(s) + " " + std::to_string(s) + " " +
                         std::to_string(part * threads) + "\nthreads " + std::to_string(threads) + "\nbfs k thread";
      for (int t = 0; t < threads; ++t) text += " " + std::to_string(part) + "@1t";
      for (int t = 0; t < threads; ++t) text += "\n  leaf openblas";
      const prism::plan p = prism::plan::parse(text + "\n");
      auto A = random_matrix<double>(std::size_t(s) * part * threads, 1);
      auto B = random_matrix<double>(std::size_t(s) * part * threads, 2);
      std::vector<double> C(std::size_t(s) * s);
      auto call = [&](const prism::context& c) {
        return time_calls(reps, [&] {
                 prism::execute<double>(p, 1.0, A.data(), s, B.data(), part * threads, 0.0, C.data(), s, c);
               }).seconds;
      };
      const double t_one = call(one), t_par = call(par);
      sizes.push_back(8.0 * s * s);
      ratios.push_back(t_one / t_par);
      std::printf("#   parallel_reduce   %4d x %4d x %d d, %7.1f KiB of C: reduction on %d threads / on one %.2f\n", s,
                  s, part * threads, sizes.back() / 1024, threads, ratios.back());
      std::fflush(stdout);
    }
    // A tie counts for one thread: the others stay free.
    set(prism::machine_key::parallel_reduce_bytes, find_crossover(sizes, ratios, 1.0));
  } else {
    std::printf("# parallel_reduce_bytes: left to the model (%.0f; one thread here, nothing to share)\n",
                d.value(prism::machine_key::parallel_reduce_bytes));
  }
  // The drop-in's rate model: prism's rate on a square as a share of threads x its leaf rate;
  // and the leaf rate itself, the rank planner's flop rate per thread.
  {
    const int n = 1024;
    auto A = random_matrix<double>(std::size_t(n) * n, 1), B = random_matrix<double>(std::size_t(n) * n, 2);
    std::vector<double> C(std::size_t(n) * n);
    prism::context all = o.ctx;
    all.set_description(d);
    const auto& leaf = prism::detail::leaf_library(prism::detail::choose_blas_leaf(prism::scalar_type::d, n, n, n));
    const double t_leaf = time_calls(reps, [&] {
                            leaf.gemm<double>('N', 'N', n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, C.data(), n);
                          }).seconds;
    const double t_all = time_calls(reps, [&] {
                           prism::gemm<double>('N', 'N', n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, C.data(), n, all);
                         }).seconds;
    const int threads = std::min(all.threads(), d.cores());
    const double efficiency = std::clamp(t_leaf / t_all / threads, 0.05, 1.0);
    std::printf("#   dropin_efficiency %d^3 d: prism on %d threads %.1f GF/s, leaf %.1f GF/s on 1\n", n, threads,
                2.0 * n * n * n / t_all * 1e-9, 2.0 * n * n * n / t_leaf * 1e-9);
    set(prism::machine_key::dropin_efficiency, {efficiency, false});
    // The rank planner's flop rate per thread: the same one-thread leaf.
    set(prism::machine_key::rank_flops_per_thread, {std::round(2.0 * n * n * n / t_leaf / 1e6) * 1e6, false});
  }
  prism_app::tune_gpus(d, reps);
  std::printf("# rank_bandwidth: left to the model (%.4g B/s; measuring it needs MPI ranks)\n",
              d.value(prism::machine_key::rank_bandwidth));
  std::printf("# dropin_model_flops: left to the model (%.0f)\n", d.value(prism::machine_key::dropin_model_flops));
  d.set_source("file " + path);
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    out << d.to_string();
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot write " + path);
  std::printf("# wrote %s in %.0f s:\n%s", path.c_str(), seconds_since(t0), d.to_string().c_str());
  return 0;
}

int run(const std::vector<std::string>& args) {
  if (args.size() < 2) {  // name every command, from the table `prism help` describes
    std::string names;
    for (const command& c : commands) names += std::string(c.name) + ", ";
    throw bad_input("missing command: " + names + "help or --version", "");
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
      std::fputs(general_help, stdout);
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
  if (std::string(c->name) == "bound") return run_bound(args);
  if (std::string(c->name) == "info") {
    if (args.size() > 2) throw bad_input("info takes no arguments", "info");
    return prism_app::run_info();
  }
  options o = parse(*c, args);
  if (std::string(c->name) == "plan") return run_plan(o);
  if (std::string(c->name) == "bench") return run_bench(o);
  if (std::string(c->name) == "run") {
#ifdef PRISM_HAVE_MPI
    o.run.p = o.p;
    o.run.ctx = o.ctx;
    return prism_app::run_distributed(o.run);
#else
    throw bad_input("prism run needs the MPI build: configure with -DPRISM_WITH_MPI=ON (libopenmpi-dev)", "-");
#endif
  }
  if (std::string(c->name) == "tune") return run_tune(o);
  return run_leaves(o);
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
