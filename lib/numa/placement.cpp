// lib/numa/placement.cpp — where each part of A, B and C should live for a plan, and the
// buffer type that puts it there (hwloc_alloc / hwloc_set_area_membind).
#include <prism/error.hpp>
#include <prism/placement.hpp>

#include "domain_arenas.hpp"
#include "hwloc_access.hpp"

#include <hwloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>

namespace prism {

// Walks the numa-level cuts keeping, for each operand, whether a cut has divided it; at
// each single-domain subtree the operand's block of that subtree (the rows and columns of
// op(X) its box covers) goes to that domain if divided, else stays shared. Logical op(A)
// is m x k, op(B) k x n, C m x n; stored coordinates swap rows and columns for a
// transposed operand, e.g. op(A) rows [8, 16) with transa = 'T' are stored columns.
std::vector<placed_block> placement_of(const plan& p, operand which) {
  if (p.problem().op != operation::gemm)
    throw plan_error(std::string("placement_of: models gemm plans; this one is a ") + to_string(p.problem().op) + " plan");
  const problem& pr = p.problem();
  std::vector<placed_block> out;
  if (p.nodes().empty()) return out;
  const bool transposed = which == operand::a ? pr.transa != 'N' : which == operand::b ? pr.transb != 'N' : false;
  // which logical dimensions span the operand's rows and columns
  const dim row_dim = which == operand::b ? dim::k : dim::m;
  const dim col_dim = which == operand::a ? dim::k : dim::n;
  auto emit = [&](const box& x, int domain) {
    const std::int64_t r0 = row_dim == dim::m ? x.i : x.l, nr = row_dim == dim::m ? x.m : x.k;
    const std::int64_t c0 = col_dim == dim::k ? x.l : x.j, nc = col_dim == dim::k ? x.k : x.n;
    out.push_back(placed_block{transposed ? block{c0, r0, nc, nr} : block{r0, c0, nr, nc}, domain});
  };
  std::function<void(int, bool)> walk = [&](int i, bool divided) {
    const node& nd = p.nodes()[std::size_t(i)];
    if (nd.owns.domains.count == 1) {
      emit(nd.shape, divided ? nd.owns.domains.first : -1);
      return;
    }
    const bool bfs = nd.kind == step_kind::bfs;
    for (std::size_t c = 0; c < nd.children.size(); ++c) {
      bool cd = divided || (bfs && (nd.cut == row_dim || nd.cut == col_dim));
      if (bfs && which == operand::c && nd.cut == dim::k) {
        if (c > 0) continue;  // this part computes a temporary C', not C
        cd = true;            // the first part owns C: it writes it and reduces the C' into it
      }
      walk(nd.children[c], cd);
    }
  };
  walk(0, false);
  return out;
}

template <scalar T>
placed_matrix<T>::placed_matrix(const plan& p, operand which, const context& ctx) {
  const problem& pr = p.problem();
  if (pr.type != scalar_type_of<T>()) throw plan_error("placed_matrix: the plan is for another type");
  detail::check_domains(p, ctx.machine());
  const bool transposed = which == operand::a ? pr.transa != 'N' : which == operand::b ? pr.transb != 'N' : false;
  std::int64_t r = which == operand::b ? pr.k : pr.m, c = which == operand::a ? pr.k : pr.n;
  if (transposed) std::swap(r, c);
  rows_ = std::max<std::int64_t>(r, 1), cols_ = std::max<std::int64_t>(c, 0);
  bytes_ = std::size_t(rows_) * std::size_t(cols_) * sizeof(T);

  // Intended owner of every page: the owner of the element at the page's middle.
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  const std::size_t pages = (bytes_ + page - 1) / page;
  page_domains_.assign(pages, -1);
  const auto blocks = placement_of(p, which);
  for (std::size_t g = 0; g < pages; ++g) {
    const std::size_t mid = std::min(bytes_ - 1, g * page + page / 2) / sizeof(T);
    const std::int64_t i = std::int64_t(mid) % rows_, j = std::int64_t(mid) / rows_;
    for (const auto& b : blocks)
      if (i >= b.region.row && i < b.region.row + b.region.rows && j >= b.region.col && j < b.region.col + b.region.cols) {
        page_domains_[g] = b.domain;
        break;
      }
  }

  topology_ = ctx.machine();  // a copy shares the hwloc topology, which frees the pages
  const topology& topo = topology_;
  auto h = detail::hwloc_of(topo);
  if (bytes_ == 0) return;
  if (topo.is_this_system() && p.domains() > 1) {
    data_ = static_cast<T*>(hwloc_alloc(h, bytes_));
    from_hwloc_ = data_ != nullptr;
  }
  if (data_ == nullptr) {
    data_ = static_cast<T*>(std::aligned_alloc(page, (bytes_ + page - 1) / page * page));
    if (data_ == nullptr) throw error("placed_matrix: out of memory");
  }
  if (!from_hwloc_) {
    static std::once_flag warned;
    if (p.domains() > 1)
      std::call_once(warned, [&] {
        std::fprintf(stderr, "prism: warning: placed_matrix on '%s': pages are not bound (not this machine)\n",
                     topo.source().c_str());
      });
    return;
  }
  // Bind runs of pages with the same owner; -1 runs are interleaved over all domains.
  bound_ = true;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  for (std::size_t g = 0; g < pages;) {
    std::size_t e = g;
    while (e < pages && page_domains_[e] == page_domains_[g]) ++e;
    hwloc_bitmap_zero(set);
    const auto& doms = topo.domains();
    if (page_domains_[g] >= 0) hwloc_bitmap_set(set, doms[std::size_t(page_domains_[g])].os_index);
    else for (auto& d : doms) hwloc_bitmap_set(set, d.os_index);
    const auto policy = page_domains_[g] >= 0 ? HWLOC_MEMBIND_BIND : HWLOC_MEMBIND_INTERLEAVE;
    if (hwloc_set_area_membind(h, reinterpret_cast<char*>(data_) + g * page, std::min(bytes_ - g * page, (e - g) * page),
                               set, policy, HWLOC_MEMBIND_BYNODESET) != 0)
      bound_ = false;
    g = e;
  }
  hwloc_bitmap_free(set);
  if (!bound_) {
    static std::once_flag refused;
    std::call_once(refused, [] { std::fprintf(stderr, "prism: warning: placed_matrix: the OS refused a page binding; memory is unplaced\n"); });
  }
}

template <scalar T>
placed_matrix<T>::~placed_matrix() {
  if (data_ == nullptr) return;
  if (from_hwloc_) hwloc_free(detail::hwloc_of(topology_), data_, bytes_);
  else std::free(data_);
}

template class placed_matrix<float>;
template class placed_matrix<double>;
template class placed_matrix<std::complex<float>>;
template class placed_matrix<std::complex<double>>;

}  // namespace prism
