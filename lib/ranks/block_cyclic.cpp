// lib/ranks/block_cyclic.cpp — see block_cyclic.hpp.
#include "block_cyclic.hpp"

namespace prism::ranks {

namespace {
int distance(int p, int src, int procs) { return ((p - src) % procs + procs) % procs; }
}  // namespace

std::int64_t cyclic_dim::owned_global(int p, std::int64_t G) const noexcept {
  if (G <= 0) return 0;
  const int d = distance(p, src, procs);  // p owns blocks d, d + procs, d + 2 procs, ...
  if (G <= first) return d == 0 ? G : 0;
  const std::int64_t rest = G - first, full = rest / block, rem = rest % block;
  std::int64_t count = d == 0 ? first : 0;
  // full blocks 1..full that are p's: multiples of procs (d = 0) or d, d + procs, ... (d > 0)
  count += block * (d == 0 ? full / procs : (full >= d ? (full - d) / procs + 1 : 0));
  if ((full + 1) % procs == d) count += rem;  // the partial block full + 1
  return count;
}

std::int64_t cyclic_dim::global_of_local(int p, std::int64_t l) const noexcept {
  const int d = distance(p, src, procs);
  // Example: first = block = 2, procs 2, src 0: p 0's local 3 is in its second block
  // (t = 1, block number 2), offset 1: global 4 + 1 = 5.
  if (d == 0) {
    if (l < first) return l;
    const std::int64_t t = 1 + (l - first) / block, off = (l - first) % block;
    return block_start(t * procs) + off;
  }
  const std::int64_t t = l / block, off = l % block;
  return block_start(d + t * procs) + off;
}

std::int64_t cyclic_dim::max_owned() const noexcept {
  std::int64_t best = 0;
  for (int p = 0; p < procs; ++p) best = std::max(best, owned_before(p, n));
  return best;
}

bool cyclic_dim::same_owners(const cyclic_dim& o) const noexcept {
  if (n != o.n) return false;
  if (n == 0) return true;
  if (procs != o.procs) return false;
  if (procs == 1) return true;
  // Owners agree when the first run's owner and length agree and later blocks are equal.
  auto first_run = [](const cyclic_dim& d) { return d.block_start(d.block_of(d.offset) + 1) - d.offset; };
  const std::int64_t f0 = std::min(n, first_run(*this)), f1 = std::min(n, first_run(o));
  if (owner(0) != o.owner(0) || f0 != f1) return false;
  return f0 == n || block == o.block;
}

dim_view dim_view::identity(std::int64_t n) {
  dim_view v;
  v.n_ = n;
  return v;
}

dim_view dim_view::grouped(const cyclic_dim& d) {
  dim_view v;
  v.n_ = d.n;
  v.grouped_ = true;
  v.by_ = d;
  v.start_.assign(std::size_t(d.procs) + 1, 0);
  v.base_.assign(std::size_t(d.procs), 0);
  for (int p = 0; p < d.procs; ++p) {
    v.start_[std::size_t(p) + 1] = v.start_[std::size_t(p)] + d.owned_before(p, d.n);
    v.base_[std::size_t(p)] = d.owned_global(p, d.offset);
  }
  return v;
}

std::int64_t dim_view::count(std::int64_t x0, std::int64_t x1, const cyclic_dim& d, int p) const {
  if (x1 <= x0) return 0;
  if (!grouped_) return d.owned_before(p, x1) - d.owned_before(p, x0);
  if (by_.same_owners(d)) {
    const std::int64_t lo = std::max(x0, start_[std::size_t(p)]), hi = std::min(x1, start_[std::size_t(p) + 1]);
    return std::max<std::int64_t>(0, hi - lo);
  }
  std::int64_t c = 0;
  runs(x0, x1, [&](std::int64_t, std::int64_t i, std::int64_t len) { c += d.owned_before(p, i + len) - d.owned_before(p, i); });
  return c;
}

}  // namespace prism::ranks
