// lib/recursive/plan.cpp — a plan's derived fields, its invariants and its text form.
#include <prism/error.hpp>
#include <prism/plan.hpp>

#include "gpu_level.hpp"
#include "temporaries.hpp"
#include "../leaf/kernels/streaming.hpp"

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
const char* to_string(level l) {
  switch (l) {
    case level::rank: return "rank";
    case level::numa: return "numa";
    case level::gpu: return "gpu";
    case level::thread: return "thread";
    case level::cache: return "cache";
  }
  return "?";
}

namespace {

constexpr int max_depth = 256;  // deeper plans are rejected (recursion limits)
constexpr int max_resources = 1 << 20;  // ranks, domains or threads a text may name
constexpr int max_devices = 1024;       // GPUs of one rank a plan may name
constexpr int max_streams = 64;         // streams of the device a plan on device operands may name
using detail::node_temp_bytes;

// a + b, saturating at SIZE_MAX.
std::size_t add_sat(std::size_t a, std::size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

std::string shape_text(const box& b) {
  return std::to_string(b.m) + "x" + std::to_string(b.n) + "x" + std::to_string(b.k);
}

// "32x32x4096 U triangle" for a triangle node, else shape_text.
std::string node_text(const node& nd) {
  std::string t = shape_text(nd.shape);
  if (nd.triangle != 0) t += std::string(" ") + nd.triangle + " triangle";
  return t;
}

// The gemm letter that pairs with a rank-k update's trans: A op(B) = op(A) op(A)^T (^H).
char partner_trans(operation op, char trans) { return trans == 'N' ? (op == operation::herk ? 'C' : 'T') : 'N'; }

std::string range_text(const char* one, const char* many, const span& s) {
  if (s.count == 1) return std::string(one) + " " + std::to_string(s.first);
  return std::string(many) + " " + std::to_string(s.first) + "-" + std::to_string(s.first + s.count - 1);
}

// Whether the children of a step run on disjoint resources at once, each needing its own
// workspace (thread, numa and gpu BFS), or share one region: DFS parts run one after
// another, and a rank BFS runs one part per rank.
bool children_side_by_side(const node& nd) { return nd.kind == step_kind::bfs && nd.where != level::rank; }

}  // namespace

problem rank_k_problem(scalar_type t, operation op, char uplo, char trans, std::int64_t n, std::int64_t k) {
  auto up = [](char c) { return c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c; };
  problem p;
  p.type = t, p.op = op, p.uplo = up(uplo), p.m = n, p.n = n, p.k = k;
  p.transa = up(trans);
  if (op == operation::gemm) throw plan_error("rank_k_problem: the operation must be syrk or herk");
  if (element_size(p.type) == 0) throw plan_error("the type must be s, d, c or z");
  if (p.uplo != 'U' && p.uplo != 'L') throw plan_error(std::string("uplo must be U or L, got '") + uplo + "'");
  if (op == operation::syrk && !is_complex(t) && p.transa == 'C') p.transa = 'T';  // real syrk: 'C' is 'T'
  const bool ok = p.transa == 'N' || (op == operation::herk ? p.transa == 'C' : p.transa == 'T');
  if (!ok) throw plan_error(std::string(to_string(op)) + " trans must be N or " + (op == operation::herk ? "C" : "T") + ", got '" + trans + "'");
  if (op == operation::herk && !is_complex(t)) throw plan_error("herk needs a complex type (c or z)");
  p.transb = partner_trans(op, p.transa);
  return p;
}

namespace {

[[noreturn]] void fail(const std::string& why) { throw plan_error(why); }

// The problem and root share a plan states, checked before its nodes.
void check_problem(const problem& pr, const resources& root) {
  if (pr.m < 0 || pr.n < 0 || pr.k < 0) fail("problem sizes must be >= 0");
  if (element_size(pr.type) == 0) fail("the type must be s, d, c or z");
  for (char t : {pr.transa, pr.transb})
    if (t != 'N' && t != 'T' && t != 'C') fail(std::string("trans must be N, T or C, got '") + t + "'");
  if (pr.op > operation::herk) fail("operation must be gemm, syrk or herk");
  if (pr.op != operation::gemm) {
    const std::string op = prism::to_string(pr.op);
    if (pr.m != pr.n) fail(op + " updates an n x n triangle: m must equal n");
    if (pr.uplo != 'U' && pr.uplo != 'L') fail(op + " uplo must be U or L");
    if (pr.op == operation::herk && !is_complex(pr.type)) fail("herk needs a complex type (c or z)");
    const bool ok = pr.transa == 'N' || pr.transa == (pr.op == operation::herk ? 'C' : 'T');
    if (!ok) fail(op + " trans must be N or " + (pr.op == operation::herk ? "C" : "T"));
    if (pr.transb != partner_trans(pr.op, pr.transa))
      fail(op + " pairs trans " + pr.transa + " with " + partner_trans(pr.op, pr.transa));
    if (root.ranks.count > 1) fail(op + " plans have no rank-level steps (ranks must be 1)");
  }
  if (root.threads < 1) fail("threads must be >= 1");
  if (root.ranks.first != 0 || root.ranks.count < 1) fail("ranks must be >= 1");
  if (root.domains.first != 0 || root.domains.count < 1 || root.domains.count > root.threads)
    fail("domains must be in 1..threads");
  if (root.devices.first != 0 || root.devices.count < 0 || root.devices.count > max_devices)
    fail("devices must be in 0.." + std::to_string(max_devices));
  if (root.streams.first != 0 || root.streams.count < 0 || root.streams.count > max_streams)
    fail("streams must be in 0.." + std::to_string(max_streams));
  if (root.streams.count > 0 && (root.devices.count != 1 || root.ranks.count != 1 || root.domains.count != 1))
    fail("a plan whose operands are on a device (streams > 0) runs on that one device: devices 1, no ranks or domains");
  if (root.devices.count > 0 && root.ranks.count > 1) fail("a plan with devices has no rank level (ranks must be 1)");
}

// A plan with devices names the memory each may use, and one without names none.
void check_device_memory(const resources& root, std::size_t device_memory) {
  if (root.devices.count > 0 && device_memory == 0) fail("a plan with devices names the memory of each (> 0 bytes)");
  if (root.devices.count == 0 && device_memory != 0) fail("a plan without devices has no device memory");
}

// One walk of plan::derive over the nodes: each node's checks, its shape and share, and
// its workspace (bottom-up); then the workspace offsets (top-down, place).
struct derivation {
  std::vector<node>& nodes;
  std::size_t elem;
  bool on_device;  // the operands are on the device (streams > 0): every step a gpu step over its streams
  std::vector<char> seen;
  // The local subtree each rank ran last (its latest phase's, or the target of its "same
  // rank" node there): "same rank R" names it.
  std::vector<int> local_root;

  // `outer`: the level of the nearest step above (steps below it may not be further out).
  // `tri`: the node is a diagonal triangle of a syrk / herk plan ('U' or 'L'), else 0.
  void down(int i, const box& b, const resources& r, level outer, int depth, char tri) {
    if (depth > max_depth) fail("plans deeper than " + std::to_string(max_depth) + " levels are not supported");
    if (i < 0 || std::size_t(i) >= nodes.size()) fail("child index " + std::to_string(i) + " out of range");
    if (seen[std::size_t(i)]) fail("node " + std::to_string(i) + " is reached twice: a plan is a tree");
    seen[std::size_t(i)] = 1;
    node& nd = nodes[std::size_t(i)];
    if (nd.kind > step_kind::dfs || nd.cut > dim::k || nd.where > level::cache || nd.backend > leaf_backend::gpu)
      fail("node " + std::to_string(i) + " has an out-of-range kind, dimension, level or backend");
    nd.shape = b, nd.owns = r, nd.triangle = tri;
    const std::string where = "node " + std::to_string(i) + " (" + node_text(nd) + ")";
    // A rank's local root: directly under a rank step, one rank.
    const bool rank_root = depth > 0 && outer == level::rank && r.ranks.count == 1 && !local_root.empty();
    if (nd.same != -1) return resolve_same(nd, b, r, rank_root, tri, where);
    if (rank_root) local_root[std::size_t(r.ranks.first)] = i;
    // A node that spans several ranks (domains) must divide them, at that level.
    if (r.ranks.count > 1 && !(nd.kind != step_kind::leaf && nd.where == level::rank))
      fail(where + ": spans " + std::to_string(r.ranks.count) + " ranks, so it must be a rank-level step");
    if (r.domains.count > 1 && !(nd.kind != step_kind::leaf && nd.where <= level::numa))
      fail(where + ": spans " + std::to_string(r.domains.count) + " NUMA domains, so it must be a numa-level step");
    if (on_device) check_streams(nd, r, where);
    else check_devices(nd, r, outer, where);
    if (nd.kind == step_kind::leaf) {
      check_leaf(nd, b, where);
      nd.workspace_bytes = node_temp_bytes(nd, elem, on_device);  // a triangle leaf's device scratch
      return;
    }
    check_level(nd, r, outer, tri, where);
    const part sums = check_sizes(nd, b, where);
    check_shares(nd, r, sums, where);
    nd.workspace_bytes = workspace(nd, b, r, depth, tri, where);
  }

  // A "same rank R" node: resolved to the local subtree rank R ran last, which must have
  // this node's shape and share.
  void resolve_same(node& nd, const box& b, const resources& r, bool rank_root, char tri, const std::string& where) {
    if (nd.kind != step_kind::leaf || !nd.parts.empty() || !nd.children.empty())
      fail(where + ": a 'same rank' node has no parts");
    if (!rank_root) fail(where + ": 'same rank R' stands for a rank's local subtree, directly under a rank step");
    // Parsed texts name the rank (same = -2 - R); built plans and copies, the node.
    // E.g. "same rank 3" parses to -5 and resolves to local_root[3].
    const int target = nd.same <= -2 ? (-2 - nd.same < int(local_root.size()) ? local_root[std::size_t(-2 - nd.same)] : -1)
                                     : nd.same;
    const bool known = target >= 0 && std::size_t(target) < nodes.size() && seen[std::size_t(target)] &&
                       nodes[std::size_t(target)].same == -1 &&
                       local_root[std::size_t(nodes[std::size_t(target)].owns.ranks.first)] == target;
    if (!known) fail(where + ": 'same rank' names no earlier rank's local subtree");
    const node& t = nodes[std::size_t(target)];
    if (t.shape.m != b.m || t.shape.n != b.n || t.shape.k != b.k || !(t.owns.domains.count == r.domains.count) ||
        t.owns.threads != r.threads || t.triangle != tri)
      fail(where + ": 'same rank " + std::to_string(t.owns.ranks.first) + "' has another shape or share (" +
           node_text(t) + ")");
    nd.same = target;
    nd.workspace_bytes = t.workspace_bytes;
    local_root[std::size_t(r.ranks.first)] = target;  // "same rank <this rank>" names the target too
  }

  // A plan with devices runs every leaf on one of them: a node over several devices divides
  // them (a rank step, or a numa or gpu bfs), one over a single device is a gpu dfs step or
  // a gpu leaf, and below a gpu step there are only gpu steps and leaves.
  static void check_devices(const node& nd, const resources& r, level outer, const std::string& where) {
    const bool leaf = nd.kind == step_kind::leaf;
    if (r.devices.count == 0) {
      if (leaf ? nd.backend == leaf_backend::gpu : nd.where == level::gpu)
        fail(where + ": a gpu " + (leaf ? "leaf" : "step") + " needs a device (the plan has none here)");
      return;
    }
    if (r.devices.count > 1 &&
        !(!leaf && (nd.where == level::rank || (nd.kind == step_kind::bfs && nd.where <= level::gpu))))
      fail(where + ": spans " + std::to_string(r.devices.count) + " devices, so it must be a rank step or a numa or gpu bfs step");
    if (r.devices.count == 1 && !(leaf ? nd.backend == leaf_backend::gpu : (nd.where == level::gpu || nd.where == level::rank)))
      fail(where + ": runs on one device, so it must be a gpu dfs step or a gpu leaf");
    if (r.devices.count == 1 && !leaf && nd.where == level::gpu && nd.kind != step_kind::dfs)
      fail(where + ": a gpu bfs step divides at least 2 devices");
    if (outer == level::gpu && !leaf && nd.where != level::gpu)
      fail(where + ": below a gpu step there are only gpu steps and gpu leaves");
  }

  // A plan whose operands are on the device: every node a gpu step or a gpu leaf on the
  // device's streams; a node on several streams is a gpu step (bfs divides the streams, dfs
  // runs its parts one after another on all of them), one on a single stream a gpu dfs
  // step or a gpu leaf.
  static void check_streams(const node& nd, const resources& r, const std::string& where) {
    const bool leaf = nd.kind == step_kind::leaf;
    if (leaf ? nd.backend != leaf_backend::gpu : nd.where != level::gpu)
      fail(where + ": the operands are on the device, so every step is a gpu step and every leaf a gpu leaf");
    if (!leaf && nd.kind == step_kind::bfs && r.streams.count < 2)
      fail(where + ": a gpu bfs step of a plan on device operands divides at least 2 streams");
  }

  static void check_leaf(node& nd, const box& b, const std::string& where) {
    if (!nd.parts.empty() || !nd.children.empty()) fail(where + ": a leaf has no parts");
    if (b.m > INT_MAX || b.n > INT_MAX || b.k > INT_MAX) fail(where + ": leaf exceeds the 32-bit BLAS range");
    if (nd.backend == leaf_backend::automatic) fail(where + ": a leaf names openblas, blis, streaming or gpu");
    if (nd.backend == leaf_backend::streaming && !detail::streaming_applies(b.m, b.n))
      fail(where + ": a streaming leaf takes m, n <= " + std::to_string(detail::streaming_max_mn));
    nd.workspace_bytes = 0;
  }

  // A step's level against the steps above it and its share, and its part count.
  static void check_level(const node& nd, const resources& r, level outer, char tri, const std::string& where) {
    if (nd.where < outer)
      fail(where + ": a " + prism::to_string(nd.where) + " step below a " + prism::to_string(outer) +
           " step (outer levels come first: rank, numa, gpu, thread, cache)");
    if (nd.where == level::rank && nd.kind == step_kind::bfs && r.ranks.count < 2)
      fail(where + ": a rank bfs step needs at least 2 ranks");
    if (nd.where == level::numa && r.domains.count < 2) fail(where + ": a numa step needs at least 2 domains");
    if (nd.kind == step_kind::bfs && nd.where == level::cache) fail(where + ": a bfs step is at rank, numa or thread level");
    if (tri != 0 && nd.cut == dim::m)
      fail(where + ": a triangle is cut along k, or along n by a diagonal cut (two triangles and a gemm block)");
    if (nd.parts.size() < 2) fail(where + ": a cut needs at least 2 parts");
    if (nd.children.size() != nd.parts.size()) fail(where + ": one child per part");
  }

  // The parts' sizes against the edge they cut; returns the sums of the shares that add
  // up (a diagonal cut's second triangle runs on the first's share), size = the edge.
  static part check_sizes(const node& nd, const box& b, const std::string& where) {
    const bool diagonal = is_diagonal_cut(nd);
    const std::int64_t ext = extent(nd.cut, b.m, b.n, b.k);
    if (diagonal) {
      if (nd.parts.size() != 3 || nd.parts[2].size != 0 || nd.parts[0].size == 0 || nd.parts[1].size == 0)
        fail(where + ": a diagonal cut has three parts: two triangle sizes, then the block 'gemm'");
      if (nd.parts[0].size < 1 || nd.parts[1].size < 1 || nd.parts[0].size > ext - nd.parts[1].size ||
          nd.parts[0].size + nd.parts[1].size != ext)
        fail(where + ": the diagonal cut's triangles must be >= 1 and sum to " + std::to_string(ext));
      const part &p0 = nd.parts[0], &p1 = nd.parts[1];
      if (p0.ranks != p1.ranks || p0.domains != p1.domains || p0.threads != p1.threads || p0.devices != p1.devices ||
          p0.streams != p1.streams)
        fail(where + ": the two triangles of a diagonal cut run one after the other on the same share");
    } else if (nd.cut == dim::n && nd.parts.size() == 3 && nd.parts[2].size == 0 && nd.parts[0].size > 0 &&
               nd.parts[1].size > 0) {  // what "N1 N2 gemm" parses into
      fail(where + ": a 'gemm' part belongs to the diagonal cut of a triangle (syrk / herk plans)");
    }
    part sum{};
    for (std::size_t c = 0; c < nd.parts.size(); ++c) {
      const part& pt = nd.parts[c];
      if (pt.ranks < 0 || pt.domains < 0 || pt.threads < 0 || pt.devices < 0 || pt.streams < 0)
        fail(where + ": shares are >= 0");
      if (diagonal) {
        if (c != 1) sum.ranks += pt.ranks, sum.domains += pt.domains, sum.threads += pt.threads, sum.devices += pt.devices;
        if (c != 1) sum.streams += pt.streams;
        continue;
      }
      if (pt.size < 1) fail(where + ": every part has size >= 1");
      if (pt.size > ext - sum.size) fail(where + ": parts of the " + prism::to_string(nd.cut) + " cut exceed " + std::to_string(ext));
      sum.size += pt.size, sum.ranks += pt.ranks, sum.domains += pt.domains, sum.threads += pt.threads;
      sum.devices += pt.devices, sum.streams += pt.streams;
    }
    if (diagonal) sum.size = ext;
    if (sum.size != ext)
      fail(where + ": parts of the " + prism::to_string(nd.cut) + " cut sum to " + std::to_string(sum.size) + ", not " +
           std::to_string(ext));
    return sum;
  }

  // The parts' shares of ranks, domains and threads, by the step's kind and level.
  static void check_shares(const node& nd, const resources& r, const part& sum, const std::string& where) {
    auto only = [&](bool r_ok, bool d_ok, bool t_ok, const std::string& what, bool g_ok = false, bool s_ok = false) {
      for (const part& pt : nd.parts)
        if ((pt.ranks != 0 && !r_ok) || (pt.domains != 0 && !d_ok) || (pt.threads != 0 && !t_ok) ||
            (pt.devices != 0 && !g_ok) || (pt.streams != 0 && !s_ok))
          fail(where + ": " + what);
    };
    if (nd.kind == step_kind::dfs) {
      only(false, false, false, "dfs parts take no share: they run with the node's " + std::to_string(r.threads) + " threads");
    } else if (r.streams.count > 0) {  // a plan on device operands: a gpu bfs over the device's streams
      only(false, false, false, "the parts of a plan on device operands share the device's streams only", false, true);
      for (const part& pt : nd.parts)
        if (pt.streams < 1) fail(where + ": every part of a gpu bfs step on device operands has >= 1 stream");
      if (sum.streams != r.streams.count)
        fail(where + ": stream shares sum to " + std::to_string(sum.streams) + ", not " + std::to_string(r.streams.count));
    } else if (nd.where == level::gpu) {
      only(false, false, false, "gpu parts share devices only (each part's host threads are the node's)", true);
      for (const part& pt : nd.parts)
        if (pt.devices < 1) fail(where + ": every part of a gpu bfs step has >= 1 device");
      if (sum.devices != r.devices.count)
        fail(where + ": device shares sum to " + std::to_string(sum.devices) + ", not " + std::to_string(r.devices.count));
    } else if (nd.where == level::rank) {
      only(true, false, false, "rank parts share ranks only (each rank has the node's domains, threads and devices)");
      for (const part& pt : nd.parts)
        if (pt.ranks < 1) fail(where + ": every part of a rank step has >= 1 rank");
      if (sum.ranks != r.ranks.count)
        fail(where + ": rank shares sum to " + std::to_string(sum.ranks) + ", not " + std::to_string(r.ranks.count));
    } else if (nd.where == level::numa) {
      const bool gpus = r.devices.count > 0;
      only(false, true, true, gpus ? "numa parts share domains, threads and devices only" : "numa parts share domains and threads only", gpus);
      for (const part& pt : nd.parts) {
        if (pt.domains < 1) fail(where + ": every part of a numa step has >= 1 domain");
        if (pt.threads < pt.domains) fail(where + ": a numa part needs at least one thread per domain");
        if (gpus && pt.devices < 1) fail(where + ": in a plan with devices every numa part has >= 1 device");
      }
      if (gpus && sum.devices != r.devices.count)
        fail(where + ": numa device shares sum to " + std::to_string(sum.devices) + ", not " + std::to_string(r.devices.count));
      if (sum.domains != r.domains.count)
        fail(where + ": numa parts cover " + std::to_string(sum.domains) + " domains, not " + std::to_string(r.domains.count));
      if (sum.threads != r.threads)
        fail(where + ": numa thread shares sum to " + std::to_string(sum.threads) + ", not " + std::to_string(r.threads));
    } else {
      only(false, false, true, "thread parts share threads only");
      for (const part& pt : nd.parts)
        if (pt.threads < 1) fail(where + ": every part has >= 1 thread");
      // t >= 2: the shares partition the budget. t == 1: over-decomposition, each part is a
      // task on the same single thread's budget (work stealing balances them).
      if (r.threads >= 2 && sum.threads != r.threads)
        fail(where + ": bfs thread shares sum to " + std::to_string(sum.threads) + ", not " + std::to_string(r.threads));
      if (r.threads == 1)
        for (const part& pt : nd.parts)
          if (pt.threads != 1) fail(where + ": parts of a 1-thread bfs have 1 thread each");
    }
  }

  // Walks the children, then a step's workspace: side by side for BFS parts, shared by
  // DFS parts; a diagonal cut's two triangles run one after the other (they share a
  // region), its block beside them; its own temporaries on top.
  std::size_t workspace(const node& nd, const box& b, const resources& r, int depth, char tri, const std::string& where) {
    const bool diagonal = is_diagonal_cut(nd);
    std::size_t ws = 0, diag_ws = 0;
    for_each_child(nd, b, r, [&](const child_step& ch) {
      const char child_tri = tri != 0 && (!diagonal || ch.part < 2) ? tri : 0;
      down(ch.node, ch.shape, ch.owns, nd.where, depth + 1, child_tri);
      const std::size_t child_ws = nodes[std::size_t(ch.node)].workspace_bytes;
      if (diagonal && ch.part < 2) diag_ws = std::max(diag_ws, child_ws);
      else ws = children_side_by_side(nd) ? add_sat(ws, child_ws) : std::max(ws, child_ws);
    });
    if (diagonal) ws = children_side_by_side(nd) ? add_sat(ws, diag_ws) : std::max(ws, diag_ws);
    const std::size_t own = node_temp_bytes(nd, elem, on_device);
    if (own == SIZE_MAX) fail(where + ": its temporaries C' exceed the address space");
    ws = add_sat(ws, own);
    if (ws == SIZE_MAX) fail(where + ": its workspace exceeds the address space");
    return ws;
  }

  // Workspace offsets, top-down: a node's temporaries first, then its children's regions.
  void place(int i, std::size_t offset) {
    node& nd = nodes[std::size_t(i)];
    nd.workspace_offset = offset;
    std::size_t next = offset + node_temp_bytes(nd, elem, on_device);
    if (is_diagonal_cut(nd)) {  // the triangles share one region, the block (BFS) follows it
      const int t0 = nd.children[0], t1 = nd.children[1];
      place(t0, next), place(t1, next);
      const std::size_t diag = std::max(nodes[std::size_t(t0)].workspace_bytes, nodes[std::size_t(t1)].workspace_bytes);
      place(nd.children[2], children_side_by_side(nd) ? next + diag : next);
      return;
    }
    for (int c : nd.children) {
      place(c, next);
      if (children_side_by_side(nd)) next += nodes[std::size_t(c)].workspace_bytes;
    }
  }
};

}  // namespace

// Walks the tree from the root with for_each_child, checking each invariant and filling
// shape, owns, workspace_bytes (bottom-up) and workspace_offset (top-down).
//
// Workspace of a k-BFS node with parts p0..p(f-1): parts 1..f-1 each write an m x n
// temporary C'_i, laid out first; then the children's own workspaces, side by side since
// they run at once. E.g. a d-type 64x64xK node cut 1:1 needs one 32768-byte C' plus its
// children's needs. A DFS node's children run one after another and share one region.
/// The library's access to a plan's nodes: derive() fills their derived fields from the
/// user-visible ones, checking them.
struct detail::plan_access {
  static void derive(plan& p) {
    if (p.nodes_.empty()) fail("a plan needs at least one node");
    check_problem(p.problem_, p.root_);
    check_device_memory(p.root_, p.device_memory_);
    derivation d{p.nodes_, element_size(p.problem_.type), p.root_.streams.count > 0, std::vector<char>(p.nodes_.size(), 0),
                 std::vector<int>(p.root_.ranks.count > 1 ? std::size_t(p.root_.ranks.count) : 0, -1)};
    const box whole{p.problem_.m, p.problem_.n, p.problem_.k, 0, 0, 0};
    d.down(0, whole, p.root_, level::rank, 0, p.problem_.op == operation::gemm ? 0 : p.problem_.uplo);
    for (std::size_t i = 0; i < d.seen.size(); ++i)
      if (!d.seen[i]) fail("node " + std::to_string(i) + " is not reachable from the root");
    d.place(0, 0);
    if (p.on_device() && p.extra_bytes() > p.device_memory_)
      fail("its temporaries take " + std::to_string(p.extra_bytes()) + " bytes of device memory; the plan may use " +
           std::to_string(p.device_memory_));
    detail::check_device_subtrees(p);
  }
};

plan::plan(prism::problem p, resources root, std::vector<node> nodes, std::size_t device_memory)
    : problem_(p), root_(root), nodes_(std::move(nodes)), device_memory_(device_memory) {
  if (problem_.op == operation::gemm) problem_.uplo = 'U';  // a gemm has no triangle (its text names none)
  detail::plan_access::derive(*this);
}

void plan::validate() const {
  plan copy(*this);
  detail::plan_access::derive(copy);  // re-derives and re-checks everything from the user-visible fields
}

int plan::depth() const {
  std::function<int(int)> d = [&](int i) {
    int best = 0;
    for (int c : nodes_[std::size_t(i)].children) best = std::max(best, 1 + d(c));
    return best;
  };
  return nodes_.empty() ? 0 : d(0);
}

std::size_t plan::leaves() const { return count(step_kind::leaf); }

std::size_t plan::count(step_kind kind) const {
  return std::size_t(
      std::count_if(nodes_.begin(), nodes_.end(), [&](const node& nd) { return nd.kind == kind && nd.same < 0; }));
}

std::string plan::to_string() const {
  if (nodes_.empty()) return "prism-plan 2\n# empty plan (default-constructed): nothing to run\n";
  std::ostringstream os;
  os << "prism-plan 2\n";
  os << "problem " << char(problem_.type) << ' ';
  if (problem_.op == operation::gemm) os << problem_.transa << problem_.transb;
  else os << prism::to_string(problem_.op) << ' ' << problem_.uplo << problem_.transa;  // transb follows
  os << ' ' << problem_.m << ' ' << problem_.n << ' ' << problem_.k << '\n';
  os << "threads " << threads() << '\n';
  if (domains() > 1) os << "domains " << domains() << '\n';
  if (ranks() > 1) os << "ranks " << ranks() << '\n';
  if (devices() > 0) os << "devices " << devices() << " memory " << device_memory_;
  if (on_device()) os << " streams " << streams();
  if (devices() > 0) os << '\n';
  if (on_device()) os << "# operands on the device: nothing crosses the link";
  os << (on_device() ? "\n# extra device memory " : "# extra memory ") << extra_bytes() << " bytes" << (ranks() > 1 ? " per rank (local temporaries; exchange buffers: prism::rank_model)" : "") << ", depth " << depth()
     << ", " << leaves() << " leaves\n";
  std::function<void(int, int)> emit = [&](int i, int indent) {
    const node& nd = nodes_[std::size_t(i)];
    std::ostringstream line;
    line << std::string(2 * std::size_t(indent), ' ');
    if (nd.same >= 0) {
      line << "same rank " << nodes_[std::size_t(nd.same)].owns.ranks.first;
    } else if (nd.kind == step_kind::leaf) {
      line << "leaf " << prism::to_string(nd.backend);
    } else {
      line << prism::to_string(nd.kind) << ' ' << prism::to_string(nd.cut) << ' ' << prism::to_string(nd.where);
      for (std::size_t c = 0; c < nd.parts.size(); ++c) {
        const part& pt = nd.parts[c];
        if (is_diagonal_cut(nd) && c == 2) line << " gemm";  // the block: no size of its own
        else line << ' ' << pt.size;
        char sep = '@';
        auto share = [&](int v, char unit) {
          if (v > 0) line << sep << v << unit, sep = ',';
        };
        share(pt.ranks, 'r'), share(pt.domains, 'd'), share(pt.threads, 't'), share(pt.devices, 'g');
        share(pt.streams, 's');
      }
    }
    std::string text = line.str();
    if (text.size() < 40) text.resize(40, ' ');
    os << text << "  # " << node_text(nd) << ", ";
    if (on_device()) os << range_text("stream", "streams", nd.owns.streams);
    else os << nd.owns.threads << (nd.owns.threads == 1 ? " thread" : " threads");
    if (ranks() > 1) os << ", " << range_text("rank", "ranks", nd.owns.ranks);
    if (domains() > 1) os << ", " << range_text("domain", "domains", nd.owns.domains);
    if (devices() > 1 && nd.owns.devices.count > 0) os << ", " << range_text("device", "devices", nd.owns.devices);
    if (const std::size_t t = node_temp_bytes(nd, element_size(problem_.type), on_device()); t > 0)
      os << (nd.kind == step_kind::leaf ? ", scratch " : ", C' ") << t << " B";
    os << '\n';
    for (int c : nd.children) emit(c, indent + 1);
  };
  emit(0, 0);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const plan& p) { return os << p.to_string(); }

namespace {

// Reads a plan's text line by line (plan::parse): comments and blank lines dropped, each
// error named with its line number.
struct plan_reader {
  std::vector<std::pair<int, std::vector<std::string>>> lines;  // (line number, words)
  std::size_t at = 0;                                           // the line being read
  int version = 0;

  explicit plan_reader(std::string_view text) {
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

  bool done() const { return at >= lines.size(); }
  plan_error fail(const std::string& why) const {
    const int number = at < lines.size() ? lines[at].first : (lines.empty() ? 0 : lines.back().first);
    return plan_error("line " + std::to_string(number) + ": " + why);
  }
  std::int64_t integer(const std::string& s, const char* what) const {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (const std::exception&) {
      throw fail(std::string("expected an integer for ") + what + ", got '" + s + "'");
    }
    if (used != s.size()) throw fail(std::string("expected an integer for ") + what + ", got '" + s + "'");
    return v;
  }
  int count(const std::string& s, const char* what) const {
    const std::int64_t v = integer(s, what);
    if (v < 1 || v > max_resources) throw fail(std::string(what) + " must be in 1..2^20, got " + s);
    return int(v);
  }

  // "prism-plan 2" (or 1).
  void read_version() {
    if (!lines.empty() && lines[0].second.size() == 2 && lines[0].second[0] == "prism-plan") {
      if (lines[0].second[1] == "1") version = 1;
      if (lines[0].second[1] == "2") version = 2;
    }
    if (version == 0) throw fail("a plan starts with 'prism-plan 2' (or 'prism-plan 1')");
    ++at;
  }

  // "problem TYPE TRANS M N K" (gemm) or "problem TYPE syrk|herk UPLO+TRANS N N K".
  prism::problem read_problem() {
    const bool rank_k_line = at < lines.size() && lines[at].second.size() == 7 && lines[at].second[0] == "problem" &&
                             (lines[at].second[2] == "syrk" || lines[at].second[2] == "herk");
    if (at >= lines.size() || !(lines[at].second.size() == 6 || rank_k_line) || lines[at].second[0] != "problem")
      throw fail("expected 'problem TYPE TRANS M N K', e.g. 'problem d NN 64 64 1024', or 'problem TYPE syrk|herk "
                 "UPLO+TRANS N N K', e.g. 'problem d syrk UT 32 32 4194304'");
    prism::problem p;
    auto& t = lines[at].second;
    if (t[1].size() != 1 || std::string("sdcz").find(t[1][0]) == std::string::npos)
      throw fail("type must be one of s, d, c, z, got '" + t[1] + "'");
    p.type = scalar_type(t[1][0]);
    if (rank_k_line) {
      const std::size_t off = 1;  // the operation's word shifts the rest by one
      if (t[3].size() != 2) throw fail(t[2] + " takes uplo and trans as two letters, e.g. UT, got '" + t[3] + "'");
      const std::int64_t n = integer(t[3 + off], "n"), n2 = integer(t[4 + off], "n");
      if (n != n2) throw fail(t[2] + " updates an n x n triangle: the two sizes must be equal, got " + t[4] + " and " + t[5]);
      try {
        p = rank_k_problem(p.type, t[2] == "syrk" ? operation::syrk : operation::herk, t[3][0], t[3][1], n,
                           integer(t[5 + off], "k"));
      } catch (const plan_error& e) {
        throw fail(e.reason());  // (fail adds the line and its own prefix)
      }
    } else {
      if (t[2].size() != 2) throw fail("trans must be two letters from N, T, C, got '" + t[2] + "'");
      for (char c : t[2])
        if (c != 'N' && c != 'T' && c != 'C') throw fail(std::string("trans must be N, T or C, got '") + c + "'");
      p.transa = t[2][0], p.transb = t[2][1];
      p.m = integer(t[3], "m"), p.n = integer(t[4], "n"), p.k = integer(t[5], "k");
    }
    if (p.m < 0 || p.n < 0 || p.k < 0) throw fail("problem sizes must be >= 0");
    ++at;
    return p;
  }

  // "threads T", then optionally "domains D", (version 2) "ranks R" and "devices G memory BYTES".
  resources read_resources(std::size_t& device_memory) {
    if (at >= lines.size() || lines[at].second.size() != 2 || lines[at].second[0] != "threads")
      throw fail("expected 'threads T'");
    resources root;
    root.threads = count(lines[at].second[1], "threads");
    ++at;
    for (bool more = true; more && at < lines.size();) {
      const std::vector<std::string>& t = lines[at].second;
      const std::string& key = t[0];
      if (key == "domains" && t.size() == 2) root.domains.count = count(t[1], "domains");
      else if (key == "ranks" && t.size() == 2 && version >= 2) root.ranks.count = count(t[1], "ranks");
      else if (key == "devices" && version >= 2) read_devices(t, root, device_memory);
      else more = false;
      if (more) ++at;
    }
    if (root.domains.count > root.threads) throw fail("domains must be in 1..threads");
    return root;
  }

  // "devices G memory BYTES": G GPUs, each with BYTES of memory for the plan; then
  // "streams S" when the operands are on the (one) device.
  void read_devices(const std::vector<std::string>& t, resources& root, std::size_t& device_memory) const {
    if (!(t.size() == 4 || (t.size() == 6 && t[4] == "streams")) || t[2] != "memory")
      throw fail("expected 'devices G memory BYTES [streams S]', e.g. 'devices 2 memory 8589934592'");
    root.devices.count = count(t[1], "devices");
    if (t.size() == 6) root.streams.count = count(t[5], "streams");
    const std::int64_t bytes = integer(t[3], "the device memory");
    if (bytes < 1) throw fail("the device memory must be >= 1 byte, got " + t[3]);
    device_memory = std::size_t(bytes);
  }

  // One part: "SIZE", or "SIZE@" followed by shares. Version 2: comma-separated shares
  // with a unit, "3r", "2d", "4t" (e.g. 1048576@1d,4t). Version 1: "@T" (threads), and
  // "@T:D" (threads, domains) at numa level.
  // `block`: the word is "gemm[@SHARES]", a diagonal cut's block, whose size is 0.
  part read_part(const std::string& word, bool block = false) const {
    part pt;
    const auto atsign = word.find('@');
    if (block && atsign != std::string::npos && atsign != 4) throw fail("expected 'gemm' or 'gemm@SHARES', got '" + word + "'");
    if (block && atsign == std::string::npos && word != "gemm") throw fail("expected 'gemm' or 'gemm@SHARES', got '" + word + "'");
    if (!block) pt.size = integer(word.substr(0, atsign), "a part size");
    if (atsign == std::string::npos) return pt;
    const std::string shares = word.substr(atsign + 1);
    if (version == 1) {
      std::string threads = shares;
      if (auto colon = shares.find(':'); colon != std::string::npos) {
        pt.domains = count(shares.substr(colon + 1), "a domain count");
        threads.resize(colon);
      }
      pt.threads = count(threads, "a thread share");
      return pt;
    }
    if (shares.empty()) throw fail("'" + word + "' has an '@' but no share");
    std::istringstream in(shares);
    for (std::string s; std::getline(in, s, ',');) {
      if (s.size() < 2) throw fail("a share is a count and a unit (r, d, t, g or s), e.g. 4t; got '" + s + "'");
      const char unit = s.back();
      int* slot = unit == 'r' ? &pt.ranks : unit == 'd' ? &pt.domains : unit == 't' ? &pt.threads
                : unit == 'g' ? &pt.devices : unit == 's' ? &pt.streams : nullptr;
      if (slot == nullptr)
        throw fail("a share's unit is r (ranks), d (domains), t (threads), g (devices) or s (streams); got '" + s + "'");
      if (*slot != 0) throw fail(std::string("a part names its share of ") + unit + " twice: '" + word + "'");
      *slot = count(s.substr(0, s.size() - 1), "a share");
    }
    return pt;
  }

  // "leaf [BACKEND]" into nd.
  void read_leaf(const std::vector<std::string>& t, node& nd) const {
    if (t.size() > 2) throw fail("'leaf' takes at most a backend name");
    nd.kind = step_kind::leaf;
    if (t.size() == 2) {
      if (t[1] == "openblas") nd.backend = leaf_backend::openblas;
      else if (t[1] == "blis") nd.backend = leaf_backend::blis;
      else if (t[1] == "streaming") nd.backend = leaf_backend::streaming;
      else if (t[1] == "gpu") nd.backend = leaf_backend::gpu;
      else throw fail("leaf backend must be openblas, blis, streaming or gpu, got '" + t[1] + "'");
    }
  }

  // "bfs|dfs m|n|k LEVEL PART PART ...": the step without its children.
  node read_step(const std::vector<std::string>& t) const {
    node nd;
    if (t[0] == "bfs") nd.kind = step_kind::bfs;
    else if (t[0] == "dfs") nd.kind = step_kind::dfs;
    else throw fail("expected leaf, same, bfs or dfs, got '" + t[0] + "'");
    if (t.size() < 5) throw fail("a step reads 'bfs|dfs m|n|k rank|numa|gpu|thread|cache SIZE[@SHARES] SIZE[@SHARES] ...'");
    if (t[1] == "m") nd.cut = dim::m;
    else if (t[1] == "n") nd.cut = dim::n;
    else if (t[1] == "k") nd.cut = dim::k;
    else throw fail("dimension must be m, n or k, got '" + t[1] + "'");
    if (t[2] == "rank" && version >= 2) nd.where = level::rank;
    else if (t[2] == "numa") nd.where = level::numa;
    else if (t[2] == "gpu" && version >= 2) nd.where = level::gpu;
    else if (t[2] == "thread") nd.where = level::thread;
    else if (t[2] == "cache") nd.where = level::cache;
    else throw fail("level must be rank, numa, gpu, thread or cache, got '" + t[2] + "'");
    for (std::size_t w = 3; w < t.size(); ++w) {
      // "gemm[@SHARES]": the off-diagonal block of a diagonal cut, the third and last part.
      if (t[w].rfind("gemm", 0) == 0) {
        if (w != 5 || t.size() != 6 || nd.cut != dim::n)
          throw fail("'gemm' is the third and last part of a diagonal cut: 'bfs|dfs n LEVEL N1 N2 gemm'");
        part pt = read_part(t[w], true);
        if (nd.kind == step_kind::dfs && (pt.ranks | pt.domains | pt.threads | pt.devices | pt.streams) != 0)
          throw fail("a dfs part takes no share: it runs with the node's resources");
        if (nd.kind == step_kind::bfs && nd.where == level::thread && pt.threads == 0)
          throw fail("a thread-level bfs part names its thread share, e.g. gemm@1t");
        nd.parts.push_back(pt);
        continue;
      }
      part pt = read_part(t[w]);
      if (nd.kind == step_kind::dfs && version == 2 && (pt.ranks | pt.domains | pt.threads | pt.devices | pt.streams) != 0)
        throw fail("a dfs part takes no share: it runs with the node's resources");
      // A thread-level BFS part needs its thread share; version 1 let it default to 1.
      if (nd.kind == step_kind::bfs && nd.where == level::thread && pt.threads == 0) {
        if (version >= 2) throw fail("a thread-level bfs part names its thread share, e.g. " + t[w] + "@1t");
        pt.threads = 1;
      }
      nd.parts.push_back(pt);
    }
    return nd;
  }

  // A node and its subtree, depth first; returns its index in nodes.
  int read_node(std::vector<node>& nodes, int depth) {
    if (at >= lines.size()) throw fail("the tree ends early: a step lacks a child");
    if (depth > max_depth) throw fail("plans deeper than " + std::to_string(max_depth) + " levels are not supported");
    const std::vector<std::string>& t = lines[at].second;
    const int index = int(nodes.size());
    nodes.emplace_back();
    if (t[0] == "same") {  // "same rank R": derive() resolves R to its local root
      if (t.size() != 3 || t[1] != "rank") throw fail("expected 'same rank R'");
      const std::int64_t r = integer(t[2], "a rank");
      if (r < 0 || r >= max_resources) throw fail("a rank must be in 0..2^20-1, got " + t[2]);
      nodes[std::size_t(index)].same = int(-2 - r);  // e.g. rank 3 -> -5
      ++at;
      return index;
    }
    if (t[0] == "leaf") {
      read_leaf(t, nodes[std::size_t(index)]);
      ++at;
      return index;
    }
    node nd = read_step(t);
    ++at;
    for (std::size_t c = 0; c < nd.parts.size(); ++c) nd.children.push_back(read_node(nodes, depth + 1));
    nodes[std::size_t(index)] = std::move(nd);
    return index;
  }
};

// Version 1 wrote a DFS part's threads ("@T", equal to its node's), and put the DFS that
// halves an edge above 2^31-1 at cache level, even above thread steps. Version 2 writes no
// share for DFS parts and calls that DFS a thread step (a cache step below a thread step,
// or one that cuts an edge no leaf could take). Returns whether a non-cache step is below.
bool upgrade_v1(std::vector<node>& nodes, int i, int t) {
  node& nd = nodes[std::size_t(i)];
  bool outer_below = false;
  for (std::size_t c = 0; c < nd.parts.size(); ++c) {
    part& pt = nd.parts[c];
    if (nd.kind == step_kind::dfs) {
      if (pt.threads != 0 && pt.threads != t) throw plan_error("dfs parts run with the node's " + std::to_string(t) + " threads");
      pt.threads = 0;
    }
    outer_below |= upgrade_v1(nodes, nd.children[c], pt.threads > 0 ? pt.threads : t);
  }
  std::int64_t cut_extent = 0;
  for (const part& pt : nd.parts) cut_extent += pt.size;
  if (nd.kind == step_kind::dfs && nd.where == level::cache && (outer_below || cut_extent > INT_MAX))
    nd.where = level::thread;
  return nd.kind != step_kind::leaf && (nd.where != level::cache || outer_below);
}

}  // namespace

plan plan::parse(std::string_view text) {
  plan_reader in(text);
  in.read_version();
  const prism::problem p = in.read_problem();
  std::size_t device_memory = 0;
  const resources root = in.read_resources(device_memory);
  std::vector<node> nodes;
  in.read_node(nodes, 0);
  if (!in.done()) throw in.fail("text after the end of the tree");
  if (in.version == 1) upgrade_v1(nodes, 0, root.threads);
  return plan(p, root, std::move(nodes), device_memory);
}

bool operator==(const plan& a, const plan& b) {
  if (!(a.problem_ == b.problem_) || !(a.root_ == b.root_) || a.nodes_.empty() != b.nodes_.empty() ||
      a.device_memory_ != b.device_memory_)
    return false;
  std::function<bool(int, int)> same = [&](int i, int j) {
    const node &x = a.nodes_[std::size_t(i)], &y = b.nodes_[std::size_t(j)];
    if (x.kind != y.kind || x.parts != y.parts || x.children.size() != y.children.size()) return false;
    if ((x.same < 0) != (y.same < 0)) return false;
    if (x.same >= 0)  // the same rank's subtree (both plans are derived: same is a node index)
      return a.nodes_[std::size_t(x.same)].owns.ranks.first == b.nodes_[std::size_t(y.same)].owns.ranks.first;
    if (x.kind == step_kind::leaf) return x.backend == y.backend;
    if (x.cut != y.cut || x.where != y.where) return false;
    for (std::size_t c = 0; c < x.children.size(); ++c)
      if (!same(x.children[c], y.children[c])) return false;
    return true;
  };
  return a.nodes_.empty() || same(0, 0);
}

}  // namespace prism
