// lib/recursive/on_device_planner.cpp — the plan of a product whose operands are in one
// device's memory (on_device.hpp; prism::make_device_plan).
//
// The rules, in the order they apply:
//   1. Long k (a Gram update with k >= 2n, a gemm with k >= 4 max(m, n), and at least two
//      panels of min_panel): a gpu bfs k cut into one panel per stream, up to
//      device_streams, so the panels' gemms run at once; parts 1.. write temporaries in
//      device memory that the root's stream adds into C. cuBLAS runs one syrk over a long k
//      at 1 % of its gemm rate (measured on an H200: 27.1 ms against 0.55 ms), and a thin
//      gemm's long k on one stream at about half the device's copy rate.
//   2. A triangle wider than `edge` is cut diagonally (dfs): two triangles and a gemm block,
//      so the flops a triangle leaf spends on its block's other half stay below edge / n.
//   3. A triangle leaf is one gemm of its whole block into scratch, its triangle then added
//      into C (device::add_triangle); a gemm block is one leaf.
//   4. Any edge above 2^30 is cut (dfs) so each leaf fits cuBLAS's 32-bit sizes.
// The temporaries must fit the plan's device memory: fewer panels, then smaller triangle
// leaves (edge 1024, 512, ... 16), until they do.
#include "on_device.hpp"

#include <prism/error.hpp>

#include "../runtime/runtime.hpp"
#include "local_planner.hpp"
#include "split.hpp"

#include <algorithm>
#include <limits>

namespace prism {
namespace detail {

namespace {

constexpr std::int64_t min_panel = 4096;                        // the least k a stream's panel gets
constexpr std::int64_t widest_triangle = 1024;                  // rule 2's edge, before memory shrinks it

// Builds the gpu steps of a plan on device operands into `nodes`, parents first.
struct device_builder {
  std::vector<node>& nodes;
  const problem& p;
  std::int64_t edge;  // triangles wider than this are cut diagonally

  char uplo() const { return p.op == operation::gemm ? 0 : p.uplo; }

  std::vector<part> even(dim d, std::int64_t ext, int count, int streams_each) const {
    std::vector<part> parts;
    for (std::int64_t s : split(ext, std::vector<int>(std::size_t(count), 1), alignment(d, p.type, ext)))
      parts.push_back(part{s, 0, 0, 0, 0, streams_each});
    return parts;
  }

  template <class F>
  int step(step_kind kind, dim d, std::vector<part> parts, const box& b, const resources& r, char tri, F&& child) {
    const int index = int(nodes.size());
    nodes.emplace_back();
    node nd;
    nd.kind = kind, nd.cut = d, nd.where = level::gpu, nd.parts = std::move(parts), nd.triangle = tri;
    for_each_child(nd, b, r, [&](const child_step& ch) { nd.children.push_back(child(ch)); });
    nodes[std::size_t(index)] = std::move(nd);
    return index;
  }

  int leaf() {
    node nd;
    nd.kind = step_kind::leaf, nd.backend = leaf_backend::gpu;
    nodes.push_back(nd);
    return int(nodes.size()) - 1;
  }

  // Rule 4 on a gemm block: its first edge above the limit cut in sequence, else one leaf.
  int block(const box& b, const resources& r) {
    for (dim d : {dim::m, dim::n, dim::k}) {
      const std::int64_t ext = extent(d, b.m, b.n, b.k);
      if (ext <= leaf_edge_max) continue;
      const int count = int((ext + leaf_edge_max - 1) / leaf_edge_max);
      return step(step_kind::dfs, d, even(d, ext, count, 0), b, r, 0,
                  [&](const child_step& ch) { return block(ch.shape, ch.owns); });
    }
    return leaf();
  }

  // Rules 2-4 on a triangle.
  int triangle(const box& b, const resources& r) {
    if (b.n > edge) {
      const std::int64_t n1 = first_part(b.n, 1, 2, alignment(dim::n, p.type, b.n));
      return step(step_kind::dfs, dim::n, {part{n1}, part{b.n - n1}, part{0}}, b, r, uplo(), [&](const child_step& ch) {
        return ch.part < 2 ? triangle(ch.shape, ch.owns) : block(ch.shape, ch.owns);
      });
    }
    if (b.k > leaf_edge_max) {
      const int count = int((b.k + leaf_edge_max - 1) / leaf_edge_max);
      return step(step_kind::dfs, dim::k, even(dim::k, b.k, count, 0), b, r, uplo(),
                  [&](const child_step& ch) { return triangle(ch.shape, ch.owns); });
    }
    return leaf();
  }

  // Rule 1 over r's streams (one stream: no cut), then a triangle or a block.
  int root(const box& b, const resources& r) {
    auto below = [&](const box& x, const resources& o) { return uplo() != 0 ? triangle(x, o) : block(x, o); };
    if (r.streams.count < 2) return below(b, r);
    return step(step_kind::bfs, dim::k, even(dim::k, b.k, r.streams.count, 1), b, r, uplo(),
                [&](const child_step& ch) { return below(ch.shape, ch.owns); });
  }
};

}  // namespace

plan plan_on_device(const problem& p, std::size_t memory) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0)
    throw plan_error("an empty product has no plan on the device (gemm, syrk and herk return or scale C without one)");
  const bool rank_k = p.op != operation::gemm;
  const std::int64_t wide = rank_k ? p.n : std::max(p.m, p.n);
  const bool long_k = p.k >= (rank_k ? 2 : 4) * wide && p.k >= 2 * min_panel;
  const int most = long_k ? int(std::min<std::int64_t>(device_streams, p.k / min_panel)) : 1;
  const box whole{p.m, p.n, p.k, 0, 0, 0};
  for (std::int64_t edge = widest_triangle;; edge /= 2) {
    for (int s = most; s >= 1; --s) {
      std::vector<node> nodes;
      device_builder build{nodes, p, edge};
      const resources root{span{0, 1}, span{0, 1}, 1, span{0, 1}, span{0, s}};
      build.root(whole, root);
      try {
        return plan(p, root, std::move(nodes), memory);
      } catch (const plan_error&) {  // its temporaries do not fit: fewer panels, then narrower triangles
        if (s == 1 && (!rank_k || edge <= 16)) throw;
      }
    }
  }
}

std::size_t on_device_memory(const context& ctx, const gpu::device* dev) {
  if (ctx.gpu_memory() > 0) return ctx.gpu_memory();
  if (dev != nullptr) return dev->memory() / 16;
  const gpu::device_set& set = devices_of(ctx);
  if (set.count() > 0) {
    std::size_t least = std::numeric_limits<std::size_t>::max();
    for (const auto& d : set.devices) least = std::min(least, d->memory());
    return least / 16;
  }
  return std::size_t(ctx.description().value(machine_key::gpu_memory)) / 16;
}

}  // namespace detail

plan make_device_plan(const problem& p0, const context& ctx) {
  problem p = p0;
  if (p.op == operation::gemm) {
    p.transa = detail::normalised_trans(p.transa);
    p.transb = detail::normalised_trans(p.transb);
  }
  return detail::plan_on_device(p, detail::on_device_memory(ctx, nullptr));
}

}  // namespace prism
