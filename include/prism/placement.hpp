// prism/placement.hpp — placing a caller's matrices on the NUMA domains that will read them.
#pragma once

#include <prism/context.hpp>
#include <prism/plan.hpp>

#include <cstdint>
#include <vector>

namespace prism {

/// A rectangle of a stored (column-major) matrix and the NUMA domain that should hold it;
/// domain -1 means "spread over several domains" (no numa cut divides it: interleave).
struct placed_block {
  block region;     ///< the stored rows and columns
  int domain = -1;  ///< owner, or -1
};

/// How plan p's numa-level cuts divide the stored matrix of one operand among domains.
/// Stored coordinates: A is m x k when transa = 'N', else k x m (likewise B, k x n or
/// n x k); C is m x n. E.g. on 4 domains, k cuts 2:2 then 1:1 on 'N','N' give A's column
/// slabs [0, k/4), [k/4, k/2), ... to domains 0, 1, 2, 3, B's row slabs likewise, and C
/// to domain 0, the first part at every k cut (it owns C and reduces the C' into it).
std::vector<placed_block> placement_of(const plan& p, operand which);

/// A column-major matrix whose pages sit on the domains that the plan reads them from:
/// each page goes to the owner of the element at its middle (placement_of); pages of
/// shared regions are interleaved. On a topology that is not this machine, or when the OS
/// refuses a binding, the memory is ordinary (one warning) and page_domains() still says
/// where each page was meant to go. Pays when A and B are much larger than the caches and
/// are read by several domains (tall-skinny k-cuts: each domain streams its own slabs).
template <scalar T>
class placed_matrix {
 public:
  /// Allocates the stored matrix of `which` for plan p (ld = stored rows), on ctx's topology.
  placed_matrix(const plan& p, operand which, const context& ctx = default_context());
  ~placed_matrix();
  placed_matrix(const placed_matrix&) = delete;
  placed_matrix& operator=(const placed_matrix&) = delete;

  /// First element (column-major).
  T* data() noexcept { return data_; }
  /// Stored rows (the leading dimension).
  std::int64_t rows() const noexcept { return rows_; }
  /// Stored columns.
  std::int64_t cols() const noexcept { return cols_; }
  /// Intended domain of each page of the buffer (-1: interleaved).
  const std::vector<int>& page_domains() const noexcept { return page_domains_; }
  /// True when the pages really were bound by the OS.
  bool bound() const noexcept { return bound_; }

 private:
  T* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::int64_t rows_ = 0, cols_ = 0;
  std::vector<int> page_domains_;
  bool bound_ = false;
  bool from_hwloc_ = false;
  topology topology_;  // keeps the hwloc topology that allocated the pages alive until they are freed
};

}  // namespace prism
