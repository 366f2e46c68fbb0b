// lib/recursive/gpu_level.cpp — device subtrees of a plan, their schedules, and the planner
// rules of the GPU level (gpu_level.hpp).
#include "gpu_level.hpp"

#include <prism/bounds.hpp>
#include <prism/error.hpp>
#include <prism/gpu.hpp>

#include "split.hpp"
#include "../runtime/runtime.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <limits>

namespace prism::detail {

gpu::product_shape device_product(const problem& p) {
  return gpu::product_shape{p.type, p.transa, p.transb, p.op != operation::gemm};
}

std::vector<device_root> device_roots(const plan& p) {
  std::vector<device_root> roots;
  if (p.devices() == 0 || p.on_device()) return roots;  // a plan on device operands streams nothing
  std::function<void(int, bool)> walk = [&](int i, bool fresh) {
    const node& nd = p.nodes()[std::size_t(i)];
    if (nd.same >= 0) return;  // another rank's subtree, checked there
    if (nd.owns.devices.count == 1) return roots.push_back(device_root{i, fresh});
    const bool k_bfs = nd.kind == step_kind::bfs && nd.cut == dim::k && nd.where != level::rank;
    for (std::size_t c = 0; c < nd.children.size(); ++c) walk(nd.children[c], fresh || (k_bfs && c > 0));
  };
  walk(0, false);
  return roots;
}

std::vector<gpu::device_leaf> device_leaves(const std::vector<node>& nodes, int root) {
  std::vector<gpu::device_leaf> leaves;
  std::function<void(int)> walk = [&](int i) {
    const node& nd = nodes[std::size_t(i)];
    if (nd.kind == step_kind::leaf) {
      const box& b = nd.shape;
      return leaves.push_back(gpu::device_leaf{b.i, b.j, b.l, b.m, b.n, b.k, nd.triangle});
    }
    for (int c : nd.children) walk(c);
  };
  walk(root);
  return leaves;
}

gpu::device_schedule device_schedule_of(const plan& p, int root, bool reads_c) {
  return gpu::make_schedule(device_leaves(p.nodes(), root), device_product(p.problem()), p.device_memory(), reads_c);
}

void check_devices(const plan& p, const gpu::device_set& devices) {
  if (p.devices() == 0) return;
  if (p.devices() > devices.count())
    throw plan_error("plan runs on " + std::to_string(p.devices()) + " GPUs, this context has " +
                     std::to_string(devices.count()) + " (" + devices.status + ")");
  for (int d = 0; d < p.devices(); ++d)
    if (devices.devices[std::size_t(d)]->memory() < p.device_memory())
      throw plan_error("plan uses " + std::to_string(p.device_memory()) + " bytes of each GPU's memory; " +
                       devices.devices[std::size_t(d)]->name() + " has " +
                       std::to_string(devices.devices[std::size_t(d)]->memory()));
  const std::size_t elem = element_size(p.problem().type);
  for (const device_root& dr : device_roots(p)) {
    const gpu::device& dev = *devices.devices[std::size_t(p.nodes()[std::size_t(dr.node)].owns.devices.first)];
    const std::int64_t rows = gpu::pitch_rows(device_leaves(p.nodes(), dr.node), device_product(p.problem()));  // (no schedule)
    if (std::size_t(rows) * elem > dev.max_pitch())
      throw plan_error("plan keeps blocks or chunks of " + std::to_string(rows) + " rows on a GPU; " + dev.name() +
                       " copies pitches of at most " + std::to_string(dev.max_pitch()) + " bytes");
  }
}

void check_device_subtrees(const plan& p) {
  for (const device_root& dr : device_roots(p)) {
    const int root = dr.node;
    try {
      (void)device_schedule_of(p, root, true);
    } catch (const plan_error& e) {
      const box& b = p.nodes()[std::size_t(root)].shape;
      throw plan_error("node " + std::to_string(root) + " (" + std::to_string(b.m) + "x" + std::to_string(b.n) + "x" +
                       std::to_string(b.k) + ", device " + std::to_string(p.nodes()[std::size_t(root)].owns.devices.first) +
                       "): " + e.what());
    }
  }
}

namespace {

// `count` parts of an edge as even as alignment allows; parts shorter than the alignment
// are cut exactly instead (an aligned split can come out empty), and none is empty.
// E.g. k = 8192 in 106 chunks: 256-aligned cuts would leave 72 empty, exact ones give 77 or 78.
std::vector<std::int64_t> even_sizes(dim d, scalar_type t, std::int64_t ext, int count) {
  count = int(std::min<std::int64_t>(count, ext));
  std::int64_t a = alignment(d, t, ext);
  if (ext / std::max(1, count) < a) a = 1;
  std::vector<std::int64_t> sizes = split(ext, std::vector<int>(std::size_t(count), 1), a);
  std::erase(sizes, 0);
  return sizes;
}

// The deepest of `count` chunks of k as even_sizes cuts them.
std::int64_t deepest_chunk(std::int64_t k, int count, scalar_type t) {
  const std::vector<std::int64_t> sizes = even_sizes(dim::k, t, k, count);
  return *std::max_element(sizes.begin(), sizes.end());
}

// About the fewest chunks of k (an eighth more at most), cut as even_sizes cuts them, none
// deeper than `depth` (>= 1). Aligned cuts may be up to an alignment deeper than k / chunks:
// e.g. k = 4000, depth 399: 11 chunks of 363 on average come out up to 512 deep, 15 at most
// 384, which fit. Chunks shallower than the alignment are cut exactly and fit at once.
std::int64_t fewest_chunks(std::int64_t k, std::int64_t depth, scalar_type t) {
  const std::int64_t a = alignment(dim::k, t, k);
  for (std::int64_t f = (k + depth - 1) / depth;; f = std::max(f + 1, f * 9 / 8)) {
    if (f >= k || f >= INT_MAX) return std::min<std::int64_t>({f, k, INT_MAX});
    if (k / f < a) return f;  // cut exactly (even_sizes): at most ceil(k / f) <= depth deep
    if (deepest_chunk(k, int(f), t) <= depth) return f;
  }
}

// A device subtree's shape: C blocks (mb x nb, m cut outside the n cut unless n_outer;
// a triangle's blocks at most `edge` wide) and k chunks.
struct grid {
  int mb = 1, nb = 1;
  bool n_outer = false;
  std::int64_t edge = 0;  // triangles: the largest block edge
  int kparts = 1;
};

// Builds gpu steps into `nodes`, recording the leaves it makes (for the schedule).
struct gpu_builder {
  std::vector<node>& nodes;
  const problem& p;
  const gpu_target& t;
  char uplo;
  std::vector<gpu::device_leaf> leaves;

  // even_sizes as parts, each on devices_each devices.
  std::vector<part> even(dim d, std::int64_t ext, int count, int devices_each = 0) const {
    std::vector<part> parts;
    for (std::int64_t s : even_sizes(d, p.type, ext, count)) parts.push_back(part{s, 0, 0, 0, devices_each});
    return parts;
  }

  template <class F>
  int step(step_kind kind, dim d, std::vector<part> parts, const box& b, const resources& r, F&& child, char tri = 0) {
    const int index = int(nodes.size());
    nodes.emplace_back();
    node nd;
    nd.kind = kind, nd.cut = d, nd.where = level::gpu, nd.parts = std::move(parts), nd.triangle = tri;
    for_each_child(nd, b, r, [&](const child_step& ch) { nd.children.push_back(child(ch)); });
    nodes[std::size_t(index)] = std::move(nd);
    return index;
  }

  int leaf(const box& b, char tri) {
    node nd;
    nd.kind = step_kind::leaf, nd.backend = leaf_backend::gpu;
    nodes.push_back(nd);
    leaves.push_back(gpu::device_leaf{b.i, b.j, b.l, b.m, b.n, b.k, tri});
    return int(nodes.size()) - 1;
  }

  // k chunks of one C block, then its leaves.
  int chunks(const box& b, const resources& r, int kparts, char tri) {
    const int f = int(std::min<std::int64_t>(kparts, b.k));
    if (f < 2) return leaf(b, tri);
    return step(step_kind::dfs, dim::k, even(dim::k, b.k, f), b, r, [&](const child_step& ch) { return leaf(ch.shape, tri); }, tri);
  }

  // The C blocks of a rectangle: dfs cuts of m and n (in the grid's order), then chunks.
  int blocks(const box& b, const resources& r, int mb, int nb, bool n_outer, int kparts) {
    mb = int(std::min<std::int64_t>(mb, b.m)), nb = int(std::min<std::int64_t>(nb, b.n));
    const dim first = n_outer ? dim::n : dim::m;
    const int f1 = n_outer ? nb : mb, f2 = n_outer ? mb : nb;
    auto inner = [&](const box& x) {
      if (f2 < 2) return chunks(x, r, kparts, 0);
      const dim second = n_outer ? dim::m : dim::n;
      return step(step_kind::dfs, second, even(second, extent(second, x.m, x.n, x.k), f2), x, r,
                  [&](const child_step& ch) { return chunks(ch.shape, r, kparts, 0); });
    };
    if (f1 < 2) return inner(b);
    return step(step_kind::dfs, first, even(first, extent(first, b.m, b.n, b.k), f1), b, r,
                [&](const child_step& ch) { return inner(ch.shape); });
  }

  // A triangle's blocks of at most `edge`: diagonal dfs cuts at the middle; off-diagonal
  // blocks cut to `edge` squares.
  int triangle(const box& b, const resources& r, std::int64_t edge, int kparts) {
    if (b.n <= edge) return chunks(b, r, kparts, uplo);
    const std::int64_t n1 = first_part(b.n, 1, 2, alignment(dim::n, p.type, b.n));
    std::vector<part> parts{part{n1}, part{b.n - n1}, part{0}};
    return step(step_kind::dfs, dim::n, std::move(parts), b, r, [&](const child_step& ch) {
      if (ch.part < 2) return triangle(ch.shape, r, edge, kparts);
      const int mb = int((ch.shape.m + edge - 1) / edge), nb = int((ch.shape.n + edge - 1) / edge);
      return blocks(ch.shape, r, mb, nb, false, kparts);
    }, uplo);
  }

  int device(const box& b, const resources& r, const grid& g, char tri) {
    return tri != 0 ? triangle(b, r, g.edge, g.kparts) : blocks(b, r, g.mb, g.nb, g.n_outer, g.kparts);
  }
};

constexpr int max_products = 4096;  // a device subtree's leaves the planner weighs at most

// Chunk counts to weigh for blocks of `rows` x `cols` with `room` bytes left for slots: the
// fewest that give 4 slots, finer ones down to 256-deep chunks, and about the fewest whose
// chunks as cut fit when none of those does.
// A chunk is at most what the link moves in a thousand calls' fixed cost (50 GB/s x 5 ms =
// 250 MB): a larger one saves nothing on calls and keeps the first products waiting.
std::vector<int> chunk_counts(std::int64_t k, std::int64_t rows, std::int64_t cols, std::size_t elem, double room,
                              int blocks, scalar_type type, const gpu_target& t) {
  const double per_k = double(std::max(rows, cols)) * double(elem);  // slot bytes per unit of k
  const double largest = std::max(1000.0 * t.rates.call_seconds * t.rates.link_in, per_k);
  // A chunk's depth may be its rows (op(A) = A^T, op(B) = B), a device-side pitch.
  const double kc_memory = std::min({room / (4.0 * per_k), double(INT_MAX), double(t.max_pitch / elem)});
  const double kc_max = std::min(kc_memory, largest / per_k);
  if (kc_max < 1) return {};
  const std::int64_t k0 = std::max<std::int64_t>(1, std::int64_t(std::ceil(double(k) / std::floor(kc_max))));
  // From the fewest, each about a quarter more, up to 16 times as many: finer chunks leave
  // more slots (more reuse across blocks) but run shallower products. The fewest that fit
  // the memory is always weighed, however many products it makes.
  std::vector<int> counts;
  for (std::int64_t f = k0; f <= k && f <= k0 * 16 && blocks * f <= max_products; f = std::max(f + 1, f * 5 / 4)) {
    if (f > k0 && k / f < 256) break;
    counts.push_back(int(f));
  }
  // When none of those, as cut (up to an alignment deeper than k / count), fits the memory:
  // about the fewest that do (fewest_chunks).
  const std::int64_t depth = std::int64_t(kc_memory);
  if (std::none_of(counts.begin(), counts.end(), [&](int f) { return deepest_chunk(k, f, type) <= depth; })) {
    const int fit = int(fewest_chunks(k, depth, type));
    if (std::find(counts.begin(), counts.end(), fit) == counts.end()) counts.push_back(fit);
  }
  return counts;
}

// The best grid for one device's box b by modelled time, then fewer link bytes.
grid best_grid(const problem& p, const box& b, const gpu_target& t, char tri) {
  const std::size_t elem = element_size(p.type);
  const double usable = 0.9 * double(t.memory);
  // A block's rows are the C buffer's pitch on the device, its columns a chunk's when
  // op(B) = B^T (or a rank-k update's op(A) = A): both within the device's 2-D copy pitch.
  const std::int64_t pitch_rows = std::max<std::int64_t>(1, std::int64_t(t.max_pitch / elem));
  std::vector<grid> candidates;
  if (tri != 0) {
    for (std::int64_t edge = b.n; edge >= 1; edge = (edge + 1) / 2) {
      const double block = double(edge) * double(edge) * double(elem);
      const std::int64_t q = (b.n + edge - 1) / edge;
      if (block <= usable && q * (q + 1) / 2 <= max_products && edge <= pitch_rows)
        for (int f : chunk_counts(b.k, edge, edge, elem, double(t.memory) - block, int(q * (q + 1) / 2), p.type, t))
          candidates.push_back(grid{1, 1, false, edge, f});
      if (edge <= 64 || q * (q + 1) / 2 > max_products) break;
    }
  } else {
    // From the fewest blocks whose edges fit the pitch (1 x 1 on any real device below 2^28
    // rows of doubles) to 32 times as many along each edge.
    const auto fewest = [&](std::int64_t ext) {
      return int(std::min<std::int64_t>(INT_MAX / 64, (ext + pitch_rows - 1) / pitch_rows));
    };
    const int mb0 = std::max(1, fewest(b.m)), nb0 = std::max(1, fewest(b.n));
    for (int mb = mb0; mb <= 32 * mb0 && mb <= b.m; mb = mb < 4 ? mb + 1 : mb * 2)
      for (int nb = nb0; nb <= 32 * nb0 && nb <= b.n; nb = nb < 4 ? nb + 1 : nb * 2) {
        const std::int64_t bm = (b.m + mb - 1) / mb, bn = (b.n + nb - 1) / nb;
        const double block = double(bm) * double(bn) * double(elem);
        if (block > usable || bm > INT_MAX || bn > INT_MAX || bm > pitch_rows || bn > pitch_rows) continue;
        for (int f : chunk_counts(b.k, bm, bn, elem, double(t.memory) - block, mb * nb, p.type, t))
          for (bool n_outer : {false, true})
            if (!n_outer || (mb > 1 && nb > 1)) candidates.push_back(grid{mb, nb, n_outer, 0, f});
      }
  }
  if (candidates.empty())
    throw plan_error("a device of " + std::to_string(t.memory) + " bytes cannot hold any C block of this " +
                     std::to_string(b.m) + "x" + std::to_string(b.n) + "x" + std::to_string(b.k) + " part");
  struct scored {
    grid g;
    double time;
    std::uint64_t bytes;
    std::size_t products;
  };
  std::vector<scored> fit;
  for (const grid& g : candidates) {
    std::vector<node> scratch;
    gpu_builder build{scratch, p, t, tri, {}};
    build.device(b, resources{span{0, 1}, span{0, 1}, 1, span{0, 1}}, g, tri);
    try {
      const gpu::device_schedule s = gpu::make_schedule(build.leaves, device_product(p), t.memory, false);
      // The blocks as cut (aligned, a few rows past ceil(m / mb) at most) within the pitch, as check_devices holds them.
      if (std::size_t(s.pitch_rows) * elem > t.max_pitch) continue;
      fit.push_back(scored{g, gpu::modelled_seconds(s, t.rates), s.bytes_in + s.bytes_out, build.leaves.size()});
    } catch (const plan_error&) {
      continue;  // its chunks do not fit beside its blocks
    }
  }
  if (fit.empty())
    throw plan_error("a device of " + std::to_string(t.memory) + " bytes and a copy pitch of " + std::to_string(t.max_pitch) +
                     " bytes cannot hold the chunks of any C block of this part");
  // Within 5 % of the fastest modelled time, the fewest link bytes (what a device shares
  // with its neighbours on the bus and with the host's memory); among those, within 2 % of
  // the fastest of them, the fewest products (larger calls, less the model leaves out).
  double fastest = std::numeric_limits<double>::infinity();
  for (const scored& x : fit) fastest = std::min(fastest, x.time);
  std::uint64_t least = std::numeric_limits<std::uint64_t>::max();
  for (const scored& x : fit)
    if (x.time <= fastest * 1.05) least = std::min(least, x.bytes);
  double fastest_least = std::numeric_limits<double>::infinity();
  for (const scored& x : fit)
    if (x.time <= fastest * 1.05 && x.bytes == least) fastest_least = std::min(fastest_least, x.time);
  const scored* best = nullptr;
  for (const scored& x : fit) {
    if (x.time > fastest * 1.05 || x.bytes != least || x.time > fastest_least * 1.02) continue;
    if (best == nullptr || x.products < best->products || (x.products == best->products && x.time < best->time)) best = &x;
  }
  return best->g;
}

// The largest edge of b: n, then m, then k on ties (as the thread level).
dim largest(const box& b) {
  if (b.n >= b.m && b.n >= b.k) return dim::n;
  return b.m >= b.k ? dim::m : dim::k;
}

struct gpu_planner {
  gpu_builder build;

  int device(const box& b, const resources& r, char tri) {
    const grid g = best_grid(build.p, b, build.t, tri);
    return build.device(b, r, g, tri);
  }

  // A rectangle over r's devices: its largest edge in one part per device.
  int rectangle(const box& b, const resources& r) {
    const int g = r.devices.count;
    if (g < 2) return device(b, r, 0);
    const dim d = largest(b);
    if (extent(d, b.m, b.n, b.k) < g) throw plan_error("a part too small to share among " + std::to_string(g) + " GPUs");
    return build.step(step_kind::bfs, d, build.even(d, extent(d, b.m, b.n, b.k), g, 1), b, r,
                      [&](const child_step& ch) { return device(ch.shape, ch.owns, 0); });
  }

  // A triangle over r's devices: k in one part per device (Gram shapes, k >= 2n), else a
  // diagonal cut with the triangles on half the devices and the block on the others.
  int triangle(const box& b, const resources& r) {
    const int g = r.devices.count;
    const char tri = build.uplo;
    if (g < 2) return device(b, r, tri);
    if (b.k >= 2 * b.n && b.k >= g)
      return build.step(step_kind::bfs, dim::k, build.even(dim::k, b.k, g, 1), b, r,
                        [&](const child_step& ch) { return device(ch.shape, ch.owns, tri); }, tri);
    if (b.n < 2) throw plan_error("a triangle too small to share among " + std::to_string(g) + " GPUs");
    const int g1 = g / 2;
    const std::int64_t n1 = first_part(b.n, 1, 2, alignment(dim::n, build.p.type, b.n));
    std::vector<part> parts{part{n1, 0, 0, 0, g1}, part{b.n - n1, 0, 0, 0, g1}, part{0, 0, 0, 0, g - g1}};
    return build.step(step_kind::bfs, dim::n, std::move(parts), b, r, [&](const child_step& ch) {
      return ch.part < 2 ? triangle(ch.shape, ch.owns) : rectangle(ch.shape, ch.owns);
    }, tri);
  }
};

}  // namespace

int plan_gpu(std::vector<node>& nodes, const problem& p, const box& b, const resources& r, const gpu_target& t,
             char uplo) {
  gpu_planner pl{gpu_builder{nodes, p, t, uplo, {}}};
  return uplo != 0 ? pl.triangle(b, r) : pl.rectangle(b, r);
}

gpu::device_rates device_rates_of(const machine_description& d, scalar_type t) {
  gpu::device_rates r;
  r.flops = d.value(gpu_flops_key(t));
  r.memory_bandwidth = d.value(machine_key::gpu_memory_bandwidth);
  r.link_in = d.value(machine_key::gpu_link_in);
  r.link_out = d.value(machine_key::gpu_link_out);
  return r;
}

namespace {

// How many of g devices p can give a part each: a rectangle's largest edge, a Gram
// triangle's k, a square triangle's n (each diagonal cut halves the devices and n), else 1.
int useful_devices(const problem& p, int g) {
  if (p.op == operation::gemm) return int(std::min<std::int64_t>(g, extent(largest(box{p.m, p.n, p.k, 0, 0, 0}), p.m, p.n, p.k)));
  if (p.k >= 2 * p.n && p.k >= g) return g;
  return p.n >= 4 * std::int64_t(g) ? g : 1;
}

// Each device's memory a plan may use: the context's, else 15/16 of the smallest of the g
// devices (the rest for the runtime's own), else the description's.
std::size_t device_memory(const context& ctx, const gpu::device_set& set, int g) {
  if (ctx.gpu_memory() > 0) return ctx.gpu_memory();
  if (set.count() >= g && g > 0) {
    std::size_t least = set.devices[0]->memory();
    for (int d = 0; d < g; ++d) least = std::min(least, set.devices[std::size_t(d)]->memory());
    return least / 16 * 15;
  }
  return std::size_t(ctx.description().value(machine_key::gpu_memory));
}

}  // namespace

namespace {

// choose_gpus' target, and in the model's choice the plan it weighed.
gpu_target choose(const problem& p, const context& ctx, std::optional<plan>* made) {
  gpu_target t;
  t.devices = 0;
  if (ctx.gpus() == 0 || ctx.ranks() > 1 || p.m == 0 || p.n == 0 || p.k == 0) return t;
  const gpu::device_set& set = devices_of(ctx);
  int g = ctx.gpus();
  if (g < 0) {
    g = 0;
    for (const auto& d : set.devices) g += d->emulated() ? 0 : 1;
    if (g == 0) return t;
  }
  t.memory = device_memory(ctx, set, g);
  for (int d = 0; d < std::min(g, set.count()); ++d) t.max_pitch = std::min(t.max_pitch, set.devices[std::size_t(d)]->max_pitch());
  t.rates = device_rates_of(ctx.description(), p.type);
  t.devices = useful_devices(p, g);
  if (ctx.gpus() > 0) return t;
  try {  // the model decides
    plan gp = make_gpu_plan(p, ctx, t);
    const double device = modelled_gpu_seconds(gp, t.rates);
    const double host = p.flops() / (double(ctx.threads()) * ctx.description().value(machine_key::rank_flops_per_thread));
    t.device_seconds = device, t.host_seconds = host;
    if (!(device < host)) t.devices = 0;
    else if (made != nullptr) *made = std::move(gp);
  } catch (const plan_error&) {
    t.devices = 0;  // no schedule fits the devices: the host plan
  }
  return t;
}

}  // namespace

gpu_target choose_gpus(const problem& p, const context& ctx) { return choose(p, ctx, nullptr); }

std::optional<plan> plan_on_gpus(const problem& p, const context& ctx) {
  std::optional<plan> made;
  const gpu_target t = choose(p, ctx, &made);
  if (t.devices == 0) return std::nullopt;
  if (!made) made = make_gpu_plan(p, ctx, t);
  return made;
}

plan make_gpu_plan(const problem& p, const context& ctx, const gpu_target& t) {
  const resources root{span{0, 1}, span{0, 1}, ctx.threads(), span{0, t.devices}};
  std::vector<node> nodes;
  plan_gpu(nodes, p, box{p.m, p.n, p.k, 0, 0, 0}, root, t, p.op == operation::gemm ? 0 : p.uplo);
  return plan(p, root, std::move(nodes), t.memory);
}

double modelled_gpu_seconds(const plan& p, const gpu::device_rates& rates) {
  // A device runs its subtrees one after another (a diagonal cut's two triangles): their
  // times add up; devices run at once: the slowest one's time.
  std::vector<double> busy(std::size_t(std::max(0, p.devices())), 0.0);
  for (const device_root& dr : device_roots(p))
    busy[std::size_t(p.nodes()[std::size_t(dr.node)].owns.devices.first)] +=
        gpu::modelled_seconds(device_schedule_of(p, dr.node, !dr.fresh), rates);
  return busy.empty() ? 0.0 : *std::max_element(busy.begin(), busy.end());
}

}  // namespace prism::detail

namespace prism {

namespace {

// The lower bound on one device part's link bytes (gpu.hpp): elements moved at least, in
// bytes, for memory S elements.
double part_bound(const gpu_part& g, std::size_t elem, std::size_t memory, bool reads_c) {
  const double S = double(memory) / double(elem);
  const box& b = g.shape;
  double words = 0;
  if (g.triangle != 0) {
    const double n = double(b.n), k = double(b.k), c = n * (n + 1) / 2;
    words = std::max(n * k + c, n * n * k / std::sqrt(2.0 * S)) + (reads_c ? c : 0.0);
  } else {
    words = bounds::sequential_io(b.m, b.n, b.k, S) + (reads_c ? double(b.m) * double(b.n) : 0.0);  // (every word once in it)
  }
  return words * double(elem);
}

}  // namespace

std::vector<gpu_part> predict_gpu(const plan& p, bool reads_c, const context& ctx) {
  std::vector<gpu_part> parts;
  const detail::gpu::device_rates rates = detail::device_rates_of(ctx.description(), p.problem().type);
  for (const detail::device_root& dr : detail::device_roots(p)) {
    const node& nd = p.nodes()[std::size_t(dr.node)];
    const bool reads = reads_c && !dr.fresh;
    const detail::gpu::device_schedule s = detail::device_schedule_of(p, dr.node, reads);
    gpu_part g;
    g.device = nd.owns.devices.first, g.shape = nd.shape, g.triangle = nd.triangle;
    g.blocks = int(s.visits.size()), g.buffers = s.buffers, g.slots = s.slots, g.slot_bytes = s.slot_bytes;
    g.device_bytes = s.device_bytes();
    g.bytes_in = double(s.bytes_in), g.bytes_out = double(s.bytes_out), g.flops = s.flops;
    g.bound = part_bound(g, s.element, p.device_memory(), reads);
    g.seconds = detail::gpu::modelled_seconds(s, rates);
    parts.push_back(g);
  }
  return parts;
}

std::string gpu_status() { return detail::gpu::process_devices()->status; }

}  // namespace prism
