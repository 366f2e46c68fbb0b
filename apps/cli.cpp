// apps/cli.cpp — the command table, each command's help, and the parser of the command line
// every subcommand shares (cli.hpp).
#include "cli.hpp"

#include <prism/error.hpp>
#include <prism/machine.hpp>
#include <prism/plan.hpp>

#include "environment/environment.hpp"
#include "machine/wisdom.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace prism_app {

namespace {

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
  if (name == "plan")
    o += "  --on-device          the plan gemm / syrk / herk run when A, B and C are in one GPU's memory\n";
  if (name == "plan" || run)
    o += "  --gpus G             run on G GPUs, 0..1024 (default: the model's choice among this process's\n"
         "                       GPUs; prism plan needs none present, prism run emulates missing ones)\n"
         "  --gpu-memory BYTES   each GPU's memory the plan may use, K, M, G suffixes (default 15/16 of\n"
         "                       the device's, or the machine description's gpu_memory without one)\n";
  return o;
}

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
     "usage: prism bench M N K [options] [--reps R] [--syrk UT | --herk LC]\n"
     "  Times prism against threaded OpenBLAS (all cores) on one shape in one process, best of R\n"
     "  timings (default 5). Each timing repeats the call until it lasts at least 0.05 s.\n"
     "  --syrk UT / --herk LC (M = N): prism::syrk / herk against OpenBLAS's ?syrk / ?herk on an\n"
     "  N x N triangle of depth K: uplo U or L, then trans (syrk N or T, herk N or C).\n"},
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
     "  --syrk: only the streaming rank-k leaf (?syrk / ?herk, upper and lower triangle, trans\n"
     "  N and T/C) against the OpenBLAS and BLIS leaves' ?syrk / ?herk, on Gram-shaped leaves\n"
     "  (n <= 128, long k).\n"},
    {"tune", false, 3,
     "usage: prism tune [--out FILE] [--reps R] | prism tune --show | prism tune --first-use\n"
     "  Measures this machine's streaming kernel sizes (k-chunks, prefetch distance: each the\n"
     "  fastest of five around the model's value) and crossovers (about a minute on 2 cores):\n"
     "  the streaming leaf against the best BLAS leaf (stream_bytes: 8 x 8 NN double;\n"
     "  stream_dot_bytes: 32 x 32 TN double; stream_far_bytes: 64 x 64 NN double, both up to\n"
     "  twice the last-level cache;\n"
     "  stream_complex_k: 8 x 8 NN complex double; stream_rank_k_{u,l}{n,t}_{s,d,c,z}: the largest\n"
     "  n the streaming rank-k leaf takes, each type, triangle and trans form), the small-call\n"
     "  threshold (small_flops: the recursion against one leaf on cubes), the drop-in's prism\n"
     "  efficiency\n"
     "  (dropin_efficiency), the C size from which a k cut adds its partial sums on all its\n"
     "  threads (parallel_reduce_bytes), the rank planner's flop rate per thread\n"
     "  (rank_flops_per_thread: one thread at 1024^3), the host's copy rate\n"
     "  (host_copy_bandwidth) and, when there are GPUs, their rates (gpu_*), and writes\n"
     "  them to a machine file: FILE, else PRISM_MACHINE, else\n"
     "  $XDG_CACHE_HOME/prism/machine (~/.cache/prism/machine when XDG_CACHE_HOME is unset).\n"
     "  Later runs on this CPU read it (docs/planning.md, \"The machine description\"); best of R timings\n"
     "  (default 3). Run it on an otherwise idle machine: it measures what it sees (its report\n"
     "  ends with a note when other processes kept the cores busy).\n"
     "  --show: print the machine description prism reads now (its source, then the file's\n"
     "  form: which values are measured, which the model's) and measure nothing.\n"
     "  --first-use: measure now what prism otherwise measures at the first long call that\n"
     "  needs it when no machine file lists it (the streaming crossovers, at most 0.5 s, and each\n"
     "  type's rank-k limits, at most 0.4 s, which its first long rank-k call measures), keep it\n"
     "  in this CPU's first-use file (first-use-HASH beside the machine file) and print it; measures\n"
     "  nothing the machine file read lists, or the values are kept already.\n"},
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
     "  --peak F             flop/s of one processing unit, K, M, G suffixes (e.g. 50G) or 50e9\n"
     "  --bandwidth LIST     bytes/s of one unit of a level to the level above, e.g.\n"
     "                       L1=200G,L2=100G,L3=20G,numa=10G,ranks=5G (K, M, G: powers of 1024)\n"
     "  --probe              measure --peak and the cache levels' bandwidths here (a few seconds):\n"
     "                       FMA chains on one core, reads from arrays sized between cache levels\n"},
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
  if (name == "bench" && (a == "--syrk" || a == "--herk")) return true;
  if (name == "plan" && (a == "--syrk" || a == "--herk" || a == "--stats" || a == "--full" || a == "--summary" ||
                         a == "--min-memory" || a == "--ranks" || a == "--on-device"))
    return true;  // prism run takes P from mpirun, prism bench runs on one node: neither takes --ranks
  if ((name == "plan" || name == "run") && std::find(std::begin(rank_flags), std::end(rank_flags), a) != std::end(rank_flags))
    return true;
  if ((name == "plan" || name == "run") && (a == "--gpus" || a == "--gpu-memory")) return true;
  return cmd.shape && std::find(std::begin(shape_flags), std::end(shape_flags), a) != std::end(shape_flags);
}

}  // namespace

const command* find_command(const std::string& name) {
  for (const command& c : commands)
    if (name == c.name) return &c;
  return nullptr;
}

std::string command_names() {
  std::string names;
  for (const command& c : commands) names += std::string(c.name) + ", ";
  return names;
}

void print_general_help() { std::fputs(general_help, stdout); }

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
  bool ok = !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-');  // stoll skips spaces, takes '+'
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
  std::string gpu_flag;   // a GPU option given to `prism plan` (GPU plans have no rank level)
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
    if (a == "--on-device") {  // flag of `prism plan`
      o.on_device = true;
      gpu_flag = a;
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
        if (used != v.size() || v.empty() || std::isspace(static_cast<unsigned char>(v[0])) || !std::isfinite(b)) throw bad_input("--beta must be a finite number, got '" + v + "'", hint);
        o.run.beta = b;
      } else if (a == "--types") {
        if (v.empty() || v.find_first_not_of("sdcz") != std::string::npos)
          throw bad_input("--types must be letters from s, d, c, z (e.g. dz), got '" + v + "'", hint);
        o.leaf_types = v, o.leaf_types_given = true;
      } else if (a == "--out") {
        if (v.empty()) throw bad_input("--out needs a file name, got ''", hint);
        o.tune_out = v;
      } else if (a == "--seed") {
        o.run.seed = std::uint64_t(parse_int(v, a, 0, std::numeric_limits<std::int64_t>::max(), hint));
      } else if (a == "--max-memory" || a == "--memory") {
        o.ctx.set_max_memory(std::size_t(prism::parse_size(v)));
      } else if (a == "--small-flops") {
        o.ctx.set_small_flops(prism::parse_rate(v));
      } else if (a == "--extra-depth") {
        o.ctx.set_extra_depth(int(parse_int(v, a, 0, 8, hint)));
      } else if (a == "--leaf") {
        o.ctx.set_leaf(prism::parse_leaf_backend(v));
      } else if (a == "--ranks") {
        o.ctx.set_ranks(int(parse_int(v, a, 1, 1 << 20, hint)));
      } else if (a == "--gpus") {
        o.ctx.set_gpus(int(parse_int(v, a, 0, 1024, hint)));
        if (o.ctx.gpus() > 0) gpu_flag = a;
      } else if (a == "--gpu-memory") {
        o.ctx.set_gpu_memory(std::size_t(prism::parse_size(v)));
        gpu_flag = a;
      } else if (a == "--ranks-per-node") {
        o.ctx.set_ranks_per_node(int(parse_int(v, a, 1, 65536, hint)));
      } else if (a == "--rank-flops") {
        o.ctx.set_rank_rates(prism::parse_rate(v), o.ctx.rank_bandwidth());
      } else if (a == "--rank-bandwidth") {
        o.ctx.set_rank_rates(o.ctx.rank_flops(), prism::parse_rate(v));
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
  if (!gpu_flag.empty() && std::string(cmd.name) == "plan" && o.ctx.ranks() > 1)
    throw bad_input(gpu_flag + " plans on GPUs, which have no rank level: give it without --ranks", hint);
  if ((o.tune_show || o.tune_first_use) && (o.tune_show == o.tune_first_use || !o.tune_out.empty() || o.reps_given))
    throw bad_input("--show and --first-use only print: give one, without --out or --reps", hint);
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
  if (std::string(cmd.name) == "tune" && !o.tune_show && !o.tune_first_use && o.tune_out.empty())
    prism::detail::machine_file_to_be_written(prism::detail::read_environment().machine);  // tune creates it
  if (!topology_given) {  // PRISM_TOPOLOGY / HWLOC_* are read on first use: read them now
    try {
      (void)o.ctx.machine();
    } catch (const prism::error& e) {
      throw bad_input(e.what());
    }
  }
  return o;
}

}  // namespace prism_app
