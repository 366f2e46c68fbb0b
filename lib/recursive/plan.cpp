// lib/recursive/plan.cpp — a plan's derived fields, its invariants and its text form.
#include <prism/error.hpp>
#include <prism/plan.hpp>

#include "temporaries.hpp"

#include <algorithm>
#include <climits>
#include <functional>
#include <ostream>
#include <sstream>

namespace prism {

const char* to_string(dim d) { return d == dim::m ? "m" : d == dim::n ? "n" : "k"; }
const char* to_string(step_kind s) {
  return s == step_kind::leaf ? "leaf" : s == step_kind::bfs ? "bfs" : "dfs";
}
const char* to_string(level l) { return l == level::thread ? "thread" : l == level::cache ? "cache" : "numa"; }

namespace {

constexpr int max_depth = 256;  // deeper plans are rejected (recursion limits)
using detail::temp_bytes;

// a + b, saturating at SIZE_MAX.
std::size_t add_sat(std::size_t a, std::size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

std::string shape_text(std::int64_t m, std::int64_t n, std::int64_t k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

}  // namespace

plan::plan(prism::problem p, int threads, std::vector<node> nodes, int domains)
    : problem_(p), threads_(threads), domains_(domains), nodes_(std::move(nodes)) {
  derive();
}

// Walks the tree from the root, checking each invariant and filling m, n, k, threads,
// workspace_bytes (bottom-up) and workspace_offset (top-down).
//
// Workspace of a k-BFS node with parts p0..p(f-1): parts 1..f-1 each write an m x n
// temporary C'_i, laid out first; then the children's own workspaces, side by side since
// they run at once. E.g. a d-type 64x64xK node cut 1:1 needs one 32768-byte C' plus its
// children's needs. A DFS node's children run one after another and share one region.
void plan::derive() {
  auto fail = [](const std::string& why) { throw plan_error(why); };
  if (nodes_.empty()) fail("a plan needs at least one node");
  if (problem_.m < 0 || problem_.n < 0 || problem_.k < 0) fail("problem sizes must be >= 0");
  for (char t : {problem_.transa, problem_.transb})
    if (t != 'N' && t != 'T' && t != 'C') fail(std::string("trans must be N, T or C, got '") + t + "'");
  if (threads_ < 1) fail("threads must be >= 1");
  if (domains_ < 1 || domains_ > threads_) fail("domains must be in 1..threads");
  const std::size_t elem = element_size(problem_.type);
  std::vector<char> seen(nodes_.size(), 0);

  // Domains: numa-level steps come first and split the node's domain range among their
  // parts, e.g. 4 domains cut 2:2 give parts [0,2) and [2,4); below them every node has
  // one domain. A node spanning several domains must be a numa step.
  std::function<void(int, std::int64_t, std::int64_t, std::int64_t, int, int, int, int)> down =
      [&](int i, std::int64_t m, std::int64_t n, std::int64_t k, int threads, int dfirst, int dcount, int depth) {
        if (depth > max_depth) fail("plans deeper than " + std::to_string(max_depth) + " levels are not supported");
        if (i < 0 || std::size_t(i) >= nodes_.size()) fail("child index " + std::to_string(i) + " out of range");
        if (seen[i]) fail("node " + std::to_string(i) + " is reached twice: a plan is a tree");
        seen[i] = 1;
        node& nd = nodes_[i];
        if (nd.kind > step_kind::dfs || nd.cut > dim::k || nd.where > level::numa ||
            nd.backend > leaf_backend::automatic)
          fail("node " + std::to_string(i) + " has an out-of-range kind, dimension, level or backend");
        nd.m = m, nd.n = n, nd.k = k, nd.threads = threads;
        nd.domain_first = dfirst, nd.domain_count = dcount;
        const std::string where = "node " + std::to_string(i) + " (" + shape_text(m, n, k) + ")";
        const bool numa_step = nd.kind == step_kind::bfs && nd.where == level::numa;
        if (dcount > 1 && !numa_step) fail(where + ": spans " + std::to_string(dcount) + " NUMA domains, so it must be a numa-level bfs step");
        if (dcount == 1 && nd.where == level::numa && nd.kind != step_kind::leaf) fail(where + ": a numa step needs at least 2 domains");
        if (nd.kind == step_kind::leaf) {
          if (!nd.parts.empty() || !nd.children.empty()) fail(where + ": a leaf has no parts");
          if (m > INT_MAX || n > INT_MAX || k > INT_MAX) fail(where + ": leaf exceeds the 32-bit BLAS range");
          if (nd.backend == leaf_backend::automatic) fail(where + ": a leaf names openblas or blis");
          nd.workspace_bytes = 0;
          return;
        }
        if (nd.parts.size() < 2) fail(where + ": a cut needs at least 2 parts");
        if (nd.children.size() != nd.parts.size()) fail(where + ": one child per part");
        const std::int64_t ext = extent(nd.cut, m, n, k);
        std::int64_t total = 0, share_sum = 0;
        for (auto& pt : nd.parts) {
          if (pt.size < 1) fail(where + ": every part has size >= 1");
          if (pt.threads < 1) fail(where + ": every part has >= 1 thread");
          if (pt.size > ext - total) fail(where + ": parts of the " + prism::to_string(nd.cut) + " cut exceed " + std::to_string(ext));
          total += pt.size;
          share_sum += pt.threads;
        }
        if (total != ext)
          fail(where + ": parts of the " + prism::to_string(nd.cut) + " cut sum to " + std::to_string(total) +
               ", not " + std::to_string(ext));
        if (numa_step) {
          std::int64_t dsum = 0;
          for (auto& pt : nd.parts) {
            if (pt.domains < 1) fail(where + ": every part of a numa step has >= 1 domain");
            if (pt.threads < pt.domains) fail(where + ": a numa part needs at least one thread per domain");
            dsum += pt.domains;
          }
          if (dsum != dcount) fail(where + ": numa parts cover " + std::to_string(dsum) + " domains, not " + std::to_string(dcount));
          if (share_sum != threads) fail(where + ": numa thread shares sum to " + std::to_string(share_sum) + ", not " + std::to_string(threads));
        } else if (nd.kind == step_kind::bfs) {
          if (nd.where != level::thread) fail(where + ": a bfs step is at thread or numa level");
          // t >= 2: the shares partition the budget. t == 1: over-decomposition, each part is a
          // task on the same single thread's budget (work stealing balances them).
          if (threads >= 2 && share_sum != threads)
            fail(where + ": bfs thread shares sum to " + std::to_string(share_sum) + ", not " + std::to_string(threads));
          if (threads == 1)
            for (auto& pt : nd.parts)
              if (pt.threads != 1) fail(where + ": parts of a 1-thread bfs have 1 thread each");
        } else {
          if (nd.where == level::numa) fail(where + ": a dfs step is at thread or cache level");
          for (auto& pt : nd.parts)
            if (pt.threads != threads) fail(where + ": dfs parts run with the node's " + std::to_string(threads) + " threads");
        }
        if (!numa_step)
          for (auto& pt : nd.parts)
            if (pt.domains != 0) fail(where + ": only numa steps give their parts domains");
        std::size_t ws = 0;
        int next_domain = dfirst;
        for (std::size_t c = 0; c < nd.parts.size(); ++c) {
          std::int64_t cm = m, cn = n, ck = k;
          (nd.cut == dim::m ? cm : nd.cut == dim::n ? cn : ck) = nd.parts[c].size;
          const int cd = numa_step ? nd.parts[c].domains : 1;
          down(nd.children[c], cm, cn, ck, nd.parts[c].threads, numa_step ? next_domain : dfirst, cd, depth + 1);
          if (numa_step) next_domain += cd;
          const std::size_t child_ws = nodes_[nd.children[c]].workspace_bytes;
          ws = nd.kind == step_kind::dfs ? std::max(ws, child_ws) : add_sat(ws, child_ws);
        }
        if (nd.kind == step_kind::bfs && nd.cut == dim::k) {
          const std::size_t t = temp_bytes(m, n, elem);
          if (t == SIZE_MAX || t > SIZE_MAX / nd.parts.size()) fail(where + ": its temporaries C' exceed the address space");
          ws = add_sat(ws, (nd.parts.size() - 1) * t);
        }
        if (ws == SIZE_MAX) fail(where + ": its workspace exceeds the address space");
        nd.workspace_bytes = ws;
      };
  down(0, problem_.m, problem_.n, problem_.k, threads_, 0, domains_, 0);
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) fail("node " + std::to_string(i) + " is not reachable from the root");

  std::function<void(int, std::size_t)> place = [&](int i, std::size_t offset) {
    node& nd = nodes_[i];
    nd.workspace_offset = offset;
    if (nd.kind == step_kind::leaf) return;
    std::size_t next = offset;
    if (nd.kind == step_kind::bfs && nd.cut == dim::k)
      next += (nd.parts.size() - 1) * temp_bytes(nd.m, nd.n, elem);
    for (int c : nd.children) {
      place(c, next);
      if (nd.kind == step_kind::bfs) next += nodes_[c].workspace_bytes;
    }
  };
  place(0, 0);
}

void plan::validate() const {
  plan copy(*this);
  copy.derive();  // re-derives and re-checks everything from the user-visible fields
}

int plan::depth() const {
  std::function<int(int)> d = [&](int i) {
    int best = 0;
    for (int c : nodes_[i].children) best = std::max(best, 1 + d(c));
    return best;
  };
  return nodes_.empty() ? 0 : d(0);
}

std::size_t plan::leaves() const { return count(step_kind::leaf); }

std::size_t plan::count(step_kind kind) const {
  return std::size_t(std::count_if(nodes_.begin(), nodes_.end(), [&](const node& nd) { return nd.kind == kind; }));
}

std::string plan::to_string() const {
  if (nodes_.empty()) return "prism-plan 1\n# empty plan (default-constructed): nothing to run\n";
  std::ostringstream os;
  os << "prism-plan 1\n";
  os << "problem " << char(problem_.type) << ' ' << problem_.transa << problem_.transb << ' '
     << problem_.m << ' ' << problem_.n << ' ' << problem_.k << '\n';
  os << "threads " << threads_ << '\n';
  if (domains_ > 1) os << "domains " << domains_ << '\n';
  os << "# extra memory " << extra_bytes() << " bytes, depth " << depth() << ", " << leaves() << " leaves\n";
  std::function<void(int, int)> emit = [&](int i, int indent) {
    const node& nd = nodes_[i];
    std::ostringstream line;
    line << std::string(2 * indent, ' ');
    if (nd.kind == step_kind::leaf) {
      line << "leaf " << prism::to_string(nd.backend);
    } else {
      line << prism::to_string(nd.kind) << ' ' << prism::to_string(nd.cut) << ' ' << prism::to_string(nd.where);
      for (auto& pt : nd.parts) {
        line << ' ' << pt.size;
        if (nd.kind == step_kind::bfs) line << '@' << pt.threads;
        if (nd.where == level::numa) line << ':' << pt.domains;
      }
    }
    std::string text = line.str();
    if (text.size() < 40) text.resize(40, ' ');
    os << text << "  # " << shape_text(nd.m, nd.n, nd.k) << ", " << nd.threads
       << (nd.threads == 1 ? " thread" : " threads");
    if (domains_ > 1) {
      if (nd.domain_count == 1) os << ", domain " << nd.domain_first;
      else os << ", domains " << nd.domain_first << "-" << nd.domain_first + nd.domain_count - 1;
    }
    if (nd.kind == step_kind::bfs && nd.cut == dim::k)
      os << ", C' " << (nd.parts.size() - 1) * temp_bytes(nd.m, nd.n, element_size(problem_.type)) << " B";
    os << '\n';
    for (int c : nd.children) emit(c, indent + 1);
  };
  emit(0, 0);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const plan& p) { return os << p.to_string(); }

plan plan::parse(std::string_view text) {
  // Split into (line number, tokens) with comments and blank lines removed.
  std::vector<std::pair<int, std::vector<std::string>>> lines;
  {
    std::istringstream in{std::string(text)};
    std::string raw;
    int number = 0;
    while (std::getline(in, raw)) {
      ++number;
      if (auto hash = raw.find('#'); hash != std::string::npos) raw.resize(hash);
      std::istringstream words(raw);
      std::vector<std::string> tokens;
      for (std::string w; words >> w;) tokens.push_back(w);
      if (!tokens.empty()) lines.emplace_back(number, std::move(tokens));
    }
  }
  std::size_t at = 0;
  auto fail = [&](const std::string& why) -> plan_error {
    const int number = at < lines.size() ? lines[at].first : (lines.empty() ? 0 : lines.back().first);
    return plan_error("line " + std::to_string(number) + ": " + why);
  };
  auto integer = [&](const std::string& s, const char* what) -> std::int64_t {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (const std::exception&) {
      throw fail(std::string("expected an integer for ") + what + ", got '" + s + "'");
    }
    if (used != s.size()) throw fail(std::string("expected an integer for ") + what + ", got '" + s + "'");
    return v;
  };

  if (lines.empty() || lines[0].second != std::vector<std::string>{"prism-plan", "1"})
    throw fail("a plan starts with 'prism-plan 1'");
  ++at;
  if (at >= lines.size() || lines[at].second.size() != 6 || lines[at].second[0] != "problem")
    throw fail("expected 'problem TYPE TRANS M N K', e.g. 'problem d NN 64 64 1024'");
  prism::problem p;
  {
    auto& t = lines[at].second;
    if (t[1].size() != 1 || std::string("sdcz").find(t[1][0]) == std::string::npos)
      throw fail("type must be one of s, d, c, z, got '" + t[1] + "'");
    p.type = scalar_type(t[1][0]);
    if (t[2].size() != 2) throw fail("trans must be two letters from N, T, C, got '" + t[2] + "'");
    p.transa = t[2][0], p.transb = t[2][1];
    p.m = integer(t[3], "m"), p.n = integer(t[4], "n"), p.k = integer(t[5], "k");
  }
  ++at;
  if (at >= lines.size() || lines[at].second.size() != 2 || lines[at].second[0] != "threads")
    throw fail("expected 'threads T'");
  const std::int64_t threads64 = integer(lines[at].second[1], "threads");
  if (threads64 < 1 || threads64 > 1 << 20) throw fail("threads must be in 1..2^20");
  const int threads = int(threads64);
  ++at;
  int domains = 1;
  if (at < lines.size() && lines[at].second.size() == 2 && lines[at].second[0] == "domains") {
    const std::int64_t d = integer(lines[at].second[1], "domains");
    if (d < 1 || d > threads) throw fail("domains must be in 1..threads");
    domains = int(d);
    ++at;
  }

  std::vector<node> nodes;
  int depth = 0;
  std::function<int()> parse_node = [&]() -> int {
    if (at >= lines.size()) throw fail("the tree ends early: a step lacks a child");
    if (depth > max_depth) throw fail("plans deeper than " + std::to_string(max_depth) + " levels are not supported");
    auto& t = lines[at].second;
    const int index = int(nodes.size());
    nodes.emplace_back();
    if (t[0] == "leaf") {
      if (t.size() > 2) throw fail("'leaf' takes at most a backend name");
      node& nd = nodes[index];
      nd.kind = step_kind::leaf;
      if (t.size() == 2) {
        if (t[1] == "openblas") nd.backend = leaf_backend::openblas;
        else if (t[1] == "blis") nd.backend = leaf_backend::blis;
        else throw fail("leaf backend must be openblas or blis, got '" + t[1] + "'");
      }
      ++at;
      return index;
    }
    node nd;
    if (t[0] == "bfs") nd.kind = step_kind::bfs;
    else if (t[0] == "dfs") nd.kind = step_kind::dfs;
    else throw fail("expected leaf, bfs or dfs, got '" + t[0] + "'");
    if (t.size() < 5) throw fail("a step reads 'bfs|dfs m|n|k thread|cache SIZE[@T] SIZE[@T] ...'");
    if (t[1] == "m") nd.cut = dim::m;
    else if (t[1] == "n") nd.cut = dim::n;
    else if (t[1] == "k") nd.cut = dim::k;
    else throw fail("dimension must be m, n or k, got '" + t[1] + "'");
    if (t[2] == "thread") nd.where = level::thread;
    else if (t[2] == "cache") nd.where = level::cache;
    else if (t[2] == "numa") nd.where = level::numa;
    else throw fail("level must be numa, thread or cache, got '" + t[2] + "'");
    for (std::size_t w = 3; w < t.size(); ++w) {
      part pt;
      pt.threads = 0;  // filled in below when the text gives no "@T"
      std::string word = t[w];
      if (auto colon = word.find(':'); colon != std::string::npos) {  // SIZE@T:D
        const std::int64_t d = integer(word.substr(colon + 1), "a domain count");
        if (d < 1 || d > threads) throw fail("a part's domain count must be in 1..threads");
        pt.domains = int(d);
        word.resize(colon);
      }
      auto atsign = word.find('@');
      pt.size = integer(word.substr(0, atsign), "a part size");
      if (atsign != std::string::npos) {
        const std::int64_t share = integer(word.substr(atsign + 1), "a thread share");
        if (share < 1 || share > threads) throw fail("a thread share must be in 1..threads");
        pt.threads = int(share);
      }
      nd.parts.push_back(pt);
    }
    ++at;
    ++depth;
    for (std::size_t c = 0; c < nd.parts.size(); ++c) nd.children.push_back(parse_node());
    --depth;
    nodes[index] = std::move(nd);
    return index;
  };
  parse_node();
  if (at < lines.size()) throw fail("text after the end of the tree");

  // A DFS part written without "@T" runs with its node's threads; a BFS part without "@T"
  // gets 1 thread. Thread budgets are known top-down, so fill them in before deriving.
  std::function<void(int, int)> fill = [&](int i, int t) {
    node& nd = nodes[i];
    for (std::size_t c = 0; c < nd.parts.size(); ++c) {
      if (nd.parts[c].threads == 0) nd.parts[c].threads = nd.kind == step_kind::dfs ? t : 1;
      fill(nd.children[c], nd.parts[c].threads);
    }
  };
  fill(0, std::max(threads, 1));
  return plan(p, threads, std::move(nodes), domains);
}

bool operator==(const plan& a, const plan& b) {
  if (!(a.problem_ == b.problem_) || a.threads_ != b.threads_ || a.domains_ != b.domains_ ||
      a.nodes_.empty() != b.nodes_.empty())
    return false;
  std::function<bool(int, int)> same = [&](int i, int j) {
    const node &x = a.nodes_[i], &y = b.nodes_[j];
    if (x.kind != y.kind || x.parts != y.parts || x.children.size() != y.children.size()) return false;
    if (x.kind == step_kind::leaf) return x.backend == y.backend;
    if (x.cut != y.cut || x.where != y.where) return false;
    for (std::size_t c = 0; c < x.children.size(); ++c)
      if (!same(x.children[c], y.children[c])) return false;
    return true;
  };
  return a.nodes_.empty() || same(0, 0);
}

}  // namespace prism
