// prism/traffic.hpp — predicted cross-NUMA-domain traffic of a plan.
#pragma once

#include <prism/plan.hpp>

#include <vector>

namespace prism {

/// Where A, B and C live when a plan runs.
enum class placement {
  prism,        ///< as the placement helper puts them: each part on the domains that use it
  interleaved,  ///< pages round-robin over all domains (numactl --interleave, or first touch by many threads)
};

/// Bytes each NUMA domain of a plan reads from its own and from other domains' memory.
struct traffic_report {
  std::vector<double> local_bytes;   ///< per domain, from its own memory
  std::vector<double> remote_bytes;  ///< per domain, from other domains' memory
  /// Sum of remote_bytes.
  double remote_total() const;
  /// Sum of local_bytes.
  double local_total() const;
};

/// Predicts the traffic of plan p under a placement. The model: the subtree of each
/// domain reads the op(A), op(B) and C blocks it covers once; a matrix region spread
/// over S domains is read 1/|S| locally when the reader is one of them; k-cut
/// temporaries C' live on the domains that compute them and are read once, for the
/// reduction, by the first domain of the part that owns C (where the executor reduces).
/// README "Predicted cross-domain traffic" works an example.
traffic_report predict_traffic(const plan& p, placement where);

}  // namespace prism
