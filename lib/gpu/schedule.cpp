// lib/gpu/schedule.cpp — a device's part of a plan as visits of C blocks, chunk copies
// into slots and link bytes (the rules are in schedule.hpp).
#include "schedule.hpp"

#include <prism/error.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

namespace prism::detail::gpu {

namespace {

constexpr std::size_t slot_alignment = 256;  // cuBLAS and copies like aligned starts
constexpr int max_slots = 4096;
constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();

std::size_t round_up(std::size_t bytes, std::size_t to) { return (bytes + to - 1) / to * to; }

// The stored region of op(A)'s rows [i, i + m) over k-range [l, l + k): A is m x k as
// stored when trans is 'N', else k x m (op(A) = A^T or A^H).
region a_region(matrix_id id, char trans, std::int64_t i, std::int64_t m, std::int64_t l, std::int64_t k) {
  return trans == 'N' ? region{id, i, l, m, k} : region{id, l, i, k, m};
}

// The stored region of op(B)'s k-range [l, l + k) over columns [j, j + n). For a rank-k
// update op(B) = op(A)^T (^H): its columns j.. are op(A)'s rows j.., taken from A.
region b_region(const product_shape& s, std::int64_t j, std::int64_t n, std::int64_t l, std::int64_t k) {
  if (s.rank_k) return a_region(matrix_id::a, s.transa, j, n, l, k);
  return s.transb == 'N' ? region{matrix_id::b, l, j, k, n} : region{matrix_id::b, j, l, n, k};
}

// Leaves into visits: a maximal run of leaves on the same C block is one visit; a block seen
// before is loaded again (its partial sum is on the host). Products keep plan order here.
// Whether two blocks share an element without being the same block.
bool overlap_partly(const region& x, const region& y) {
  if (x == y) return false;
  return x.row < y.row + y.rows && y.row < x.row + x.rows && x.col < y.col + y.cols && y.col < x.col + x.cols;
}

std::vector<visit> group_visits(const std::vector<device_leaf>& leaves, const product_shape& shape, bool reads_c) {
  std::vector<visit> visits;
  for (const device_leaf& lf : leaves) {
    const region c{matrix_id::c, lf.i, lf.j, lf.m, lf.n};
    if (visits.empty() || !(visits.back().c == c)) {
      visit v;
      v.c = c, v.triangle = lf.triangle;
      for (int w = int(visits.size()) - 1; w >= 0; --w) {
        if (overlap_partly(visits[std::size_t(w)].c, c))
          throw plan_error("a device's blocks of C overlap without being the same block (a k cut above m or n cuts of "
                           "other shapes): C(" + std::to_string(c.row) + ", " + std::to_string(c.col) + ") " +
                           std::to_string(c.rows) + " x " + std::to_string(c.cols));
        if (v.previous < 0 && visits[std::size_t(w)].c == c) v.previous = w;
      }
      v.load = v.previous >= 0 || reads_c;
      visits.push_back(std::move(v));
    }
    product p;
    p.ci = 0, p.cj = 0, p.m = lf.m, p.n = lf.n, p.k = lf.k, p.leaf = lf;
    const region ra = a_region(matrix_id::a, shape.transa, lf.i, lf.m, lf.l, lf.k);
    const region rb = b_region(shape, lf.j, lf.n, lf.l, lf.k);
    p.a_ld = ra.rows, p.b_ld = rb.rows;
    p.copies = {chunk_copy{ra, -1}, chunk_copy{rb, -1}};  // slots assigned by assign_slots
    visits.back().products.push_back(std::move(p));
  }
  return visits;
}

// Rule 1 (snake order) and `first`: odd visits run their products in reverse; the first
// product a block's first visit runs applies beta.
void snake(std::vector<visit>& visits) {
  for (std::size_t v = 0; v < visits.size(); ++v) {
    if (v % 2 == 1) std::reverse(visits[v].products.begin(), visits[v].products.end());
    if (visits[v].previous < 0) visits[v].products.front().first = true;
  }
}

// a * b * c bytes, or a plan_error when that overflows (edges near 2^31 of complex doubles).
std::size_t bytes_of(std::int64_t a, std::int64_t b, std::size_t c) {
  std::size_t ab = 0, abc = 0;
  if (__builtin_mul_overflow(std::size_t(a), std::size_t(b), &ab) || __builtin_mul_overflow(ab, c, &abc) ||
      abc > std::numeric_limits<std::size_t>::max() / 2)
    throw plan_error("a device's C block or chunk exceeds the address space");
  return abc;
}

using region_key = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
region_key key_of(const region& r) { return {int(r.matrix), r.row, r.col, r.rows, r.cols}; }

// Rule 2: slots by next use. `ids` numbers the distinct chunks; uses[id] lists the
// products (in run order) that read chunk id.
struct slot_assigner {
  int slots, lookahead;
  std::vector<std::vector<std::int64_t>> uses;
  std::vector<std::size_t> next;          // per chunk: index into uses of its next use
  std::vector<int> chunk_in;              // per slot: chunk held (-1 free)
  std::vector<std::int64_t> last_use;     // per slot: latest product that read it
  std::vector<int> slot_of;               // per chunk: slot holding it (-1 none)

  std::int64_t next_use(int chunk, std::int64_t p) {
    auto& u = uses[std::size_t(chunk)];
    std::size_t& at = next[std::size_t(chunk)];
    while (at < u.size() && u[at] < p) ++at;
    return at < u.size() ? u[at] : never;
  }

  // A slot for `chunk` at product p: free, else the evictable one whose chunk is next used
  // last (used by none of the `lookahead` products before p, nor by p itself).
  int place(int chunk, std::int64_t p) {
    int best = -1;
    std::int64_t best_next = -1;
    for (int s = 0; s < slots; ++s) {
      if (chunk_in[std::size_t(s)] < 0) { best = s; break; }
      if (last_use[std::size_t(s)] >= p - lookahead) continue;
      const std::int64_t nu = next_use(chunk_in[std::size_t(s)], p);
      if (nu > best_next) best = s, best_next = nu;
    }
    if (best < 0) throw plan_error("gpu schedule: no slot free of the last products' chunks (too few slots)");
    if (chunk_in[std::size_t(best)] >= 0) slot_of[std::size_t(chunk_in[std::size_t(best)])] = -1;
    chunk_in[std::size_t(best)] = chunk, slot_of[std::size_t(chunk)] = best;
    return best;
  }
};

// Chunk ids in run order, and each chunk's uses.
std::vector<std::vector<int>> number_chunks(const std::vector<visit>& visits, std::vector<std::vector<std::int64_t>>& uses) {
  std::map<region_key, int> ids;
  std::vector<std::vector<int>> of_product;
  std::int64_t p = 0;
  for (const visit& v : visits)
    for (const product& pr : v.products) {
      std::vector<int> here;
      for (const chunk_copy& c : pr.copies) {
        auto [it, added] = ids.emplace(key_of(c.from), int(ids.size()));
        if (added) uses.emplace_back();
        if (uses[std::size_t(it->second)].empty() || uses[std::size_t(it->second)].back() != p) uses[std::size_t(it->second)].push_back(p);
        here.push_back(it->second);
      }
      of_product.push_back(std::move(here));
      ++p;
    }
  return of_product;
}

// Assigns every chunk a slot and keeps only the copies that are needed; counts bytes in.
void assign_slots(device_schedule& s, const std::vector<std::vector<int>>& chunks_of, std::vector<std::vector<std::int64_t>> uses) {
  slot_assigner a{s.slots, s.lookahead, std::move(uses), {}, {}, {}, {}};
  a.next.assign(a.uses.size(), 0);
  a.chunk_in.assign(std::size_t(s.slots), -1);
  a.last_use.assign(std::size_t(s.slots), -1);
  a.slot_of.assign(a.uses.size(), -1);
  std::int64_t p = 0;
  for (visit& v : s.visits)
    for (product& pr : v.products) {
      const std::vector<int>& ch = chunks_of[std::size_t(p)];
      std::vector<chunk_copy> copies;
      std::vector<int> slot(ch.size(), -1);
      for (std::size_t x = 0; x < ch.size(); ++x)  // chunks already there first: they must not be evicted
        if (const int at = a.slot_of[std::size_t(ch[x])]; at >= 0) slot[x] = at, a.last_use[std::size_t(at)] = p;
      for (std::size_t x = 0; x < ch.size(); ++x) {
        if (slot[x] >= 0) continue;
        if (const int at = a.slot_of[std::size_t(ch[x])]; at >= 0) { slot[x] = at; continue; }  // B chunk == A chunk
        slot[x] = a.place(ch[x], p);
        a.last_use[std::size_t(slot[x])] = p;
        copies.push_back(chunk_copy{pr.copies[x].from, slot[x]});
        s.bytes_in += std::uint64_t(pr.copies[x].from.size()) * s.element;
      }
      pr.a_slot = slot[0], pr.b_slot = slot[1];
      pr.copies = std::move(copies);
      ++p;
    }
}

// The most chunks alive at once: a chunk is alive from its first use to its last. Slots
// beyond these (and the lookahead's) would hold chunks never used again. E.g. chunks used
// at products {0, 5}, {1}, {2, 3}: at product 2 the first and third are alive, so 2.
std::size_t peak_alive(const std::vector<std::vector<std::int64_t>>& uses) {
  std::vector<std::pair<std::int64_t, int>> edges;  // (product, +1 first use / -1 after last)
  for (const auto& u : uses)
    if (!u.empty()) edges.emplace_back(u.front(), 1), edges.emplace_back(u.back() + 1, -1);
  std::sort(edges.begin(), edges.end());  // at one product, the -1s (ended before it) come first
  std::int64_t alive = 0, peak = 0;
  for (const auto& e : edges) peak = std::max(peak, alive += e.second);
  return std::size_t(peak);
}

// Buffers, slot size and count, lookahead for the memory (schedule.hpp); throws when the
// largest block and 4 slots do not fit.
void size_memory(device_schedule& s, std::size_t memory, std::size_t distinct, std::size_t alive) {
  std::int64_t chunk = 0;
  for (const visit& v : s.visits) {
    s.c_ld = std::max(s.c_ld, v.c.rows), s.c_cols = std::max(s.c_cols, v.c.cols);
    for (const product& pr : v.products)
      for (const chunk_copy& c : pr.copies) chunk = std::max(chunk, c.from.size());
  }
  const std::size_t cbuf = round_up(bytes_of(s.c_ld, s.c_cols, s.element), slot_alignment);
  // A slot holds at least one aligned unit, so empty chunks (k = 0) still size the memory.
  s.slot_bytes = std::max(slot_alignment, round_up(bytes_of(chunk, 1, s.element), slot_alignment));
  const std::size_t need = std::min<std::size_t>(distinct, 4);
  s.buffers = s.visits.size() > 1 && 2 * cbuf + std::min<std::size_t>(distinct, 6) * s.slot_bytes <= memory ? 2 : 1;
  const std::size_t room = memory >= std::size_t(s.buffers) * cbuf ? memory - std::size_t(s.buffers) * cbuf : 0;
  const std::size_t fit = std::min<std::size_t>(room / s.slot_bytes, max_slots);
  if (fit < need)
    throw plan_error("a device of " + std::to_string(memory) + " bytes cannot hold a C block of " + std::to_string(cbuf) +
                     " bytes and " + std::to_string(need) + " chunks of " + std::to_string(s.slot_bytes) + " bytes (" +
                     std::to_string(cbuf + need * s.slot_bytes) + " bytes)");
  // As many slots as chunks are alive at once plus the lookahead's (so nothing a later product
  // reads is evicted for want of room), as far as memory and the distinct chunks go.
  s.slots = int(std::min({fit, distinct, alive + 6}));
  s.lookahead = s.slots >= 6 ? 2 : 1;
}

}  // namespace

std::size_t device_schedule::device_bytes() const noexcept {
  const std::size_t cbuf = round_up(std::size_t(c_ld) * std::size_t(c_cols) * element, slot_alignment);
  return std::size_t(buffers) * cbuf + std::size_t(slots) * slot_bytes;
}

std::int64_t pitch_rows(const std::vector<device_leaf>& leaves, const product_shape& shape) {
  std::int64_t rows = 1;
  for (const device_leaf& lf : leaves)
    rows = std::max({rows, lf.m, a_region(matrix_id::a, shape.transa, lf.i, lf.m, lf.l, lf.k).rows,
                     b_region(shape, lf.j, lf.n, lf.l, lf.k).rows});
  return rows;
}

device_schedule make_schedule(const std::vector<device_leaf>& leaves, const product_shape& shape, std::size_t memory,
                              bool reads_c) {
  device_schedule s;
  s.element = element_size(shape.type), s.shape = shape;
  if (leaves.empty()) return s;
  s.pitch_rows = pitch_rows(leaves, shape);
  s.visits = group_visits(leaves, shape, reads_c);
  snake(s.visits);
  std::vector<std::vector<std::int64_t>> uses;
  const std::vector<std::vector<int>> chunks_of = number_chunks(s.visits, uses);
  size_memory(s, memory, uses.size(), peak_alive(uses));
  assign_slots(s, chunks_of, std::move(uses));
  for (std::size_t v = 0; v < s.visits.size(); ++v) {
    visit& vi = s.visits[v];
    vi.buffer = s.buffers == 2 ? int(v % 2) : 0;
    const std::uint64_t block = std::uint64_t(vi.c.size()) * s.element;
    if (vi.load) s.bytes_in += block;
    s.bytes_out += block;
    for (const product& pr : vi.products) s.flops += gemm_flops(shape.type, pr.m, pr.n, pr.k);
  }
  return s;
}

double modelled_seconds(const device_schedule& s, const device_rates& r) {
  std::vector<double> slot_free(std::size_t(s.slots), 0.0), buffer_free(std::size_t(s.buffers), 0.0);
  double in = 0, compute = 0, out = 0;
  const double e = double(s.element);
  for (const visit& v : s.visits) {
    const double block = double(v.c.size()) * e;
    double c_ready = buffer_free[std::size_t(v.buffer)];
    if (v.load) in = std::max(in, c_ready) + block / r.link_in + r.call_seconds, c_ready = in;
    for (const product& p : v.products) {
      double ready = c_ready;
      for (const chunk_copy& c : p.copies) {
        in = std::max(in, slot_free[std::size_t(c.slot)]) + double(c.from.size()) * e / r.link_in + r.call_seconds;
        ready = std::max(ready, in);
      }
      const double flops = gemm_flops(s.shape.type, p.m, p.n, p.k);
      const double touched = e * (double(p.m) * double(p.k) + double(p.k) * double(p.n) + 2.0 * double(p.m) * double(p.n));
      // A shallow product pays its C tiles' loads and stores on every call: depth k runs at
      // k / (k + 64) of the rate (a model: 80 % at k = 256, 97 % at 2048).
      const double depth = double(p.k) / (double(p.k) + 64.0);
      compute = std::max(compute, ready) + std::max(flops / (r.flops * depth), touched / r.memory_bandwidth) + r.call_seconds;
      slot_free[std::size_t(p.a_slot)] = slot_free[std::size_t(p.b_slot)] = compute;
    }
    out = std::max(out, compute) + block / r.link_out + r.call_seconds;
    buffer_free[std::size_t(v.buffer)] = out;
  }
  return std::max(out, compute);
}

std::vector<region> pieces(std::int64_t rows, std::int64_t cols, std::size_t element, std::size_t bytes) {
  std::vector<region> out;
  const std::size_t column = std::size_t(rows) * element;
  if (column <= bytes) {
    const std::int64_t per = std::max<std::int64_t>(1, std::int64_t(bytes / std::max<std::size_t>(column, 1)));
    for (std::int64_t c = 0; c < cols; c += per) out.push_back(region{matrix_id::a, 0, c, rows, std::min(per, cols - c)});
    return out;
  }
  const std::int64_t per = std::max<std::int64_t>(1, std::int64_t(bytes / element));
  for (std::int64_t c = 0; c < cols; ++c)
    for (std::int64_t r = 0; r < rows; r += per) out.push_back(region{matrix_id::a, r, c, std::min(per, rows - r), 1});
  return out;
}

}  // namespace prism::detail::gpu
