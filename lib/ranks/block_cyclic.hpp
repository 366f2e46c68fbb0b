// lib/ranks/block_cyclic.hpp — ScaLAPACK's block-cyclic layout, one dimension at a
// time, and the orders ("views") in which prism numbers a dimension's indices. No MPI.
//
// A descriptor distributes rows in blocks of MB (the first of IMB) over NPROW process rows,
// starting at RSRC; columns likewise. A p?gemm_ call works on a submatrix starting at
// (IA, JA), so each dimension here is seen from the submatrix: index i of the submatrix is
// global index offset + i.
//
// Views (why: docs/distributed.md, "Behind ScaLAPACK's p?gemm_" 3): a dimension's indices
// numbered as is, or "grouped by" a distribution: process 0's indices in order, then process
// 1's, and so on. Example: 8 indices, block 2, 2 processes, source 0: process 0 owns
// 0 1 4 5, process 1 owns 2 3 6 7; grouped, positions 0..7 are indices 0 1 4 5 2 3 6 7,
// and positions [0, 4) are exactly process 0's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace prism::ranks {

/// One dimension of a block-cyclic distribution, seen from a submatrix.
struct cyclic_dim {
  std::int64_t n = 0;       ///< extent of the submatrix along this dimension
  std::int64_t offset = 0;  ///< global index of the submatrix's first element (IA - 1)
  std::int64_t first = 1;   ///< size of the matrix's first block (IMB; MB for 9-entry descriptors)
  std::int64_t block = 1;   ///< block size (MB)
  int src = 0;              ///< process coordinate owning the first block (RSRC)
  int procs = 1;            ///< processes along this dimension (NPROW)

  /// Block number of global index g: 0 for g < first, then one per `block` elements.
  std::int64_t block_of(std::int64_t g) const noexcept { return g < first ? 0 : 1 + (g - first) / block; }
  /// First global index of block b.
  std::int64_t block_start(std::int64_t b) const noexcept { return b == 0 ? 0 : first + (b - 1) * block; }
  /// Process coordinate owning global index g.
  int owner_global(std::int64_t g) const noexcept { return int((src + block_of(g)) % procs); }
  /// Process coordinate owning submatrix index i.
  int owner(std::int64_t i) const noexcept { return owner_global(offset + i); }
  /// Global indices below G that process p owns (ScaLAPACK's NUMROC with a first block).
  /// Example: first = block = 2, 2 processes, src 0: indices 0 1 4 5 are p 0's, so
  /// owned_global(0, 5) = 3 (0, 1, 4) and owned_global(1, 5) = 2 (2, 3).
  std::int64_t owned_global(int p, std::int64_t G) const noexcept;
  /// Submatrix indices in [0, i) that process p owns.
  std::int64_t owned_before(int p, std::int64_t i) const noexcept {
    return owned_global(p, offset + i) - owned_global(p, offset);
  }
  /// 0-based index in the owner's local storage of submatrix index i (= elements its owner
  /// holds before it).
  std::int64_t local(std::int64_t i) const noexcept { return owned_global(owner(i), offset + i); }
  /// Global index of the element at local index l of process p (inverse of local).
  std::int64_t global_of_local(int p, std::int64_t l) const noexcept;
  /// The largest number of submatrix indices any one process owns.
  std::int64_t max_owned() const noexcept;
  /// Whether two distributions give every submatrix index the same owner.
  bool same_owners(const cyclic_dim& o) const noexcept;

  /// Calls f(i, len, owner, local) for each maximal run of [i0, i1) inside one block, in
  /// order. Example: first = block = 2, offset 1, [0, 4): runs (0,1,p0,1) (1,2,p1,0) (3,1,p0,2).
  template <class F>
  void segments(std::int64_t i0, std::int64_t i1, F&& f) const {
    std::int64_t i = i0;
    while (i < i1) {
      const std::int64_t g = offset + i, b = block_of(g);
      const std::int64_t len = std::min(i1 - i, block_start(b + 1) - g);
      f(i, len, int((src + b) % procs), local(i));
      i += len;
    }
  }
};

/// An order of one dimension's submatrix indices: position x holds index at(x).
class dim_view {
 public:
  /// The identity order over n indices.
  static dim_view identity(std::int64_t n);
  /// Indices grouped by their owner under d (process 0's first), ascending within a group.
  static dim_view grouped(const cyclic_dim& d);

  /// Extent.
  std::int64_t size() const noexcept { return n_; }

  /// Calls f(x, index, len) for maximal runs of positions [x0, x1) whose indices are
  /// consecutive too. Example: the grouped view of the file comment, [2, 6): (2, 4, 2)
  /// then (4, 2, 2).
  template <class F>
  void runs(std::int64_t x0, std::int64_t x1, F&& f) const {
    if (!grouped_) {
      if (x1 > x0) f(x0, x0, x1 - x0);
      return;
    }
    std::int64_t x = x0;
    // The group holding x: the last g with start_[g] <= x (start_ is ascending).
    int g = std::max(0, int(std::upper_bound(start_.begin(), start_.end(), x) - start_.begin()) - 1);
    while (x < x1) {
      while (x >= start_[std::size_t(g) + 1]) ++g;
      const std::int64_t l = base_[std::size_t(g)] + (x - start_[std::size_t(g)]);
      const std::int64_t gl = by_.global_of_local(g, l);
      const std::int64_t len = std::min({x1 - x, start_[std::size_t(g) + 1] - x, by_.block_start(by_.block_of(gl) + 1) - gl});
      f(x, gl - by_.offset, len);
      x += len;
    }
  }

  /// Positions in [x0, x1) whose index process p owns under d.
  std::int64_t count(std::int64_t x0, std::int64_t x1, const cyclic_dim& d, int p) const;

 private:
  std::int64_t n_ = 0;
  bool grouped_ = false;
  cyclic_dim by_;
  std::vector<std::int64_t> start_;  // positions: group g is [start_[g], start_[g + 1])
  std::vector<std::int64_t> base_;   // local index (at process g) of its first submatrix index
};

}  // namespace prism::ranks
