// apps/plan.cpp — `prism plan`: the plan prism runs for a shape on this machine, over
// threads, NUMA domains, caches, GPUs and ranks, with its predicted traffic.
#include "commands.hpp"
#include "gpu_report.hpp"

#include <prism/bounds.hpp>
#include <prism/prism.hpp>
#include <prism/rank_model.hpp>
#include <prism/traffic.hpp>

#include "leaf/dispatch.hpp"
#include "runtime/runtime.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

namespace prism_app {

namespace {

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
    throw bad_input("cannot plan over " + std::to_string(o.ctx.ranks()) + (o.ctx.ranks() == 1 ? " rank: " : " ranks: ") + e.what(), "-");
  }
  std::cout << "# context: " << o.ctx.describe() << '\n';
  std::cout << "# " << prism::to_string(o.p.op) << ' ' << o.p.uplo << o.p.transa << " n " << o.p.n << " k " << o.p.k
            << " over ranks: scheme " << choice.chosen.to_string() << " (";
  const std::vector<prism::rank_k_part>& parts = choice.chosen.parts;
  if (parts.size() == 1 && parts[0].cover == prism::rank_k_cover::difference && !parts[0].role_ranks.empty()) {
    // Roles of unequal ranks, e.g. tbd91[12*23,11*68]: "91 roles of 11 to 12 ranks, ...".
    const auto [few, most] = std::minmax_element(parts[0].role_ranks.begin(), parts[0].role_ranks.end());
    std::cout << parts[0].group_ranks << " roles of " << *few << " to " << *most << " ranks taking turns over k, ";
  } else if (parts.size() == 1 && parts[0].cover == prism::rank_k_cover::difference) {
    std::cout << parts[0].groups << " k slice" << (parts[0].groups == 1 ? "" : "s") << " x " << parts[0].group_ranks
              << " row blocks, ";
  } else {
    std::cout << parts.size() << " part" << (parts.size() == 1 ? "" : "s") << " on shares of k by ranks, ";
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
    throw bad_input("cannot plan over " + std::to_string(o.ctx.ranks()) + (o.ctx.ranks() == 1 ? " rank: " : " ranks: ") + e.what(), "-");
  }
  std::cout << "# context: " << o.ctx.describe() << '\n';
  const bool full = o.full == 1 || (o.full == -1 && choice.chosen.ranks() <= 16 && choice.chosen.nodes().size() <= 64);
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
}  // namespace

// The plan prism::gemm runs: none for an empty product, one leaf for a small call
// (detail::runs_as_one_leaf, the test gemm itself makes), else make_plan's.
int run_plan(const options& o) {
  const prism::problem& p = o.p;
  std::string why;  // a comment line before the plan
  prism::plan pl;
  if (o.ctx.ranks() > 1) return p.op != prism::operation::gemm ? run_rank_k_plan(o) : run_rank_plan(o);
  if (o.min_memory) throw bad_input("--min-memory plans over ranks: give --ranks P with P >= 2", "plan");
  const bool rank_k = p.op != prism::operation::gemm;
  if (o.on_device && p.m > 0 && p.n > 0 && p.k > 0) {
    why = "# operands in one device's memory: gpu steps over its streams, nothing across the link\n";
    pl = prism::make_device_plan(p, o.ctx);
  } else if (rank_k && (p.n == 0 || p.k == 0)) {
    why = std::string("# empty update (n or k is 0): ") + prism::to_string(p.op) +
          " runs no plan; it returns at once, or only scales C's triangle by beta when k is 0\n";
  } else if (rank_k && o.ctx.gpus() <= 0 && (o.ctx.threads() <= 1 || p.flops() < o.ctx.small_flops() || (p.n == 1 && p.k < 512))) {
    char line[200];  // the rule of prism::syrk's prologue (rank_k_one_leaf, planner rule T2)
    std::snprintf(line, sizeof line,
                  "# small call: %.0f flops < small_flops %.0f, one thread, or n = 1 with k < 512: runs as "
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
                  "# small call: %.0f flops < small_flops %.0f, runs as one leaf on the caller's thread\n",
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

}  // namespace prism_app
