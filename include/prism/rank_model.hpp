// prism/rank_model.hpp — what a product over MPI ranks means for data, without MPI: which
// rank computes what, where the elements of A, B and C live before and after the call (the
// native layout), the exchanges of each phase, and their exact cost per rank. `prism plan
// --ranks P` and the rank planners use it without a communicator; prism::dist executes
// exactly what it describes (docs/distributed.md).
//
// One model serves gemm and the rank-k updates: a gemm plan's rank steps (rank-level DFS
// phases on top, then BFS steps down to one rank per subtree, each rank's box run by its
// local subtree) or a syrk / herk triangle-block scheme (prism/plan.hpp, rank_k_scheme).
// Each operand is cut into cells by every rank's blocks; a cell is split among the ranks
// that read it (A, B) or compute it (C), each storing its pieces one after another. In
// each phase a rank receives the other holders' pieces of the cells it reads; after a
// reduction each owner of a piece of C receives every other computer's partial of it and
// adds them in rank order to beta C. For a gemm grid pm x pn x pk this gives the per-rank
// volume mk/(pm pk)(1 - 1/pn) + kn/(pk pn)(1 - 1/pm) + mn/(pm pn)(1 - 1/pk).
// Nothing is O(P^2): a rank's costs come from its own cells, so the planners score every
// rank of a 16,384-rank plan in milliseconds.
#pragma once

#include <prism/plan.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace prism {

namespace ranks {
class schedule;       // the library's schedule behind a rank model
struct model_access;  // how the library reaches it
}  // namespace ranks

/// Exact costs of one rank over a whole call, from the model (elements, bytes, flops).
struct rank_cost {
  std::int64_t received[3] = {0, 0, 0};  ///< elements received per operand (A, B, C)
  std::int64_t sent[3] = {0, 0, 0};      ///< elements sent per operand
  double flops = 0;                      ///< real flops of its tasks
  std::size_t owned_bytes = 0;           ///< its pieces of A, B and C (native layout)
  std::size_t buffer_bytes = 0;          ///< gathered and computed blocks and exchange buffers
                                         ///< (each at its largest, as prism::dist allocates
                                         ///< them) and the local subtrees' workspace
  /// Elements received in all.
  std::int64_t received_total() const noexcept { return received[0] + received[1] + received[2]; }
  /// Peak bytes: owned pieces plus buffers.
  std::size_t peak_bytes() const noexcept { return owned_bytes + buffer_bytes; }
};

/// The rank level of one product (see the file comment). Copies share the model.
class rank_model {
 public:
  /// The model of gemm plan p (validated; any number of ranks, 1 included). Throws
  /// prism::plan_error when a rank-level DFS step sits below a rank-level BFS step.
  explicit rank_model(const plan& p);
  /// The model of syrk / herk problem p under scheme s. Throws prism::plan_error for a gemm
  /// problem or a scheme the problem cannot hold (a part with more runs than its share of
  /// k, an empty row block, a star of unlike leaf roles, phases above a run's length).
  rank_model(const problem& p, const rank_k_scheme& s);

  /// The product.
  const prism::problem& problem() const noexcept;
  /// The gemm plan (a rank-k model's is empty: see scheme()).
  const plan& source() const noexcept;
  /// The rank-k scheme (a gemm model's is the default one).
  const rank_k_scheme& scheme() const noexcept;
  /// Ranks used (P').
  int ranks() const noexcept;
  /// Phases run one after another (1 without rank-level DFS steps or scheme phases).
  int phases() const noexcept;
  /// The rank level in one line: a grid such as "m(3r: n3 + 4r: m2 n2)" or "dfs k2 > n2
  /// m2", or a scheme such as "star4 + tbd3{0,1}".
  std::string grid() const;
  /// Exact costs of rank r (counted from its own cells and kept).
  const rank_cost& cost(int r) const;
  /// Messages rank r receives over the call.
  std::int64_t messages(int r) const;
  /// Elements of operand o rank r stores.
  std::int64_t local_size(operand o, int r) const;
  /// Largest elements received by any rank.
  std::int64_t max_received() const;
  /// Mean elements received per rank (over ranks()).
  double mean_received() const;
  /// Largest peak bytes of any rank.
  std::size_t max_peak_bytes() const;
  /// Largest real flops of any rank.
  double max_flops() const;
  /// Mean real flops per rank.
  double mean_flops() const;

 private:
  friend struct ranks::model_access;
  std::shared_ptr<const ranks::schedule> s_;
};

// The rank planners (choose_ranks, least_footprint_ranks, choose_rank_k_ranks, ...) are
// declared in prism/plan.hpp, beside make_plan: the planners sit with the plan they build.

}  // namespace prism
