// lib/recursive/placement.cpp — where each part of A, B and C should live for a plan, and the
// buffer type that puts it there (its pages bound by lib/numa/page_binding.hpp).
#include <prism/error.hpp>
#include <prism/placement.hpp>

#include "../numa/domain_arenas.hpp"
#include "../numa/page_binding.hpp"

#include <unistd.h>

#include <functional>

namespace prism {

// Walks the numa-level cuts keeping, for each operand, whether its block is still one
// part's: every bfs cut above divided it (C at a k cut: the first part keeps it). At each
// single-domain subtree the operand's block (the rows and columns of op(X) its box covers)
// goes to that domain if so, else stays shared: a cut that does not divide an operand
// leaves its block to several parts, e.g. A under an n cut, whose m halves below are each
// read by a domain of both n parts. Logical op(A) is m x k, op(B) k x n, C m x n; stored
// coordinates swap rows and columns for a transposed operand, e.g. op(A) rows [8, 16)
// with transa = 'T' are stored columns.
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
  std::function<void(int, bool)> walk = [&](int i, bool owned) {
    const node& nd = p.nodes()[std::size_t(i)];
    if (nd.owns.domains.count == 1) {
      emit(nd.shape, owned ? nd.owns.domains.first : -1);
      return;
    }
    const bool bfs = nd.kind == step_kind::bfs;
    for (std::size_t c = 0; c < nd.children.size(); ++c) {
      bool kept = owned && (!bfs || nd.cut == row_dim || nd.cut == col_dim);
      if (bfs && which == operand::c && nd.cut == dim::k) {
        if (c > 0) continue;  // this part computes a temporary C', not C
        kept = owned;         // the first part owns C: it writes it and reduces the C' into it
      }
      walk(nd.children[c], kept);
    }
  };
  walk(0, true);
  return out;
}

template <scalar T>
placed_matrix<T>::placed_matrix(const plan& p, operand which, const context& ctx) {
  const problem& pr = p.problem();
  if (pr.type != scalar_type_of<T>()) throw plan_error("placed_matrix: the plan is for another type");
  detail::check_domains(p.domains(), ctx.machine());
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
  if (bytes_ == 0) return;
  const detail::page_memory m = detail::bound_pages(topology_, bytes_, page_domains_, p.domains());
  data_ = static_cast<T*>(m.data);
  from_hwloc_ = m.from_hwloc;
  bound_ = m.bound;
}

template <scalar T>
placed_matrix<T>::~placed_matrix() {
  detail::free_pages(topology_, detail::page_memory{data_, from_hwloc_, bound_}, bytes_);
}

template class placed_matrix<float>;
template class placed_matrix<double>;
template class placed_matrix<std::complex<float>>;
template class placed_matrix<std::complex<double>>;

}  // namespace prism
