// lib/recursive/executor.hpp — runs a plan's tree over the operands, one step runner per
// level of the machine.
//
// The executor walks the tree; at each step it calls the runner of the step's level:
// thread (parts as oneTBB tasks in the context's arena, C' in the call's workspace), numa
// (parts in their domain's arena, C' from the computing domain's pool, C's owner reduces),
// cache (parts in sequence). Rank-level steps are prism::dist's (lib/mpi/rank_exchange.cpp): it
// exchanges blocks as prism::rank_model describes and runs each rank's own subtree here
// with run_subtree. Leaves address A, B and C from
// their node's box (the sub-prism the plan derived with for_each_child), so no runner
// computes an offset of its own.
#pragma once

#include <prism/context.hpp>
#include <prism/plan.hpp>

#include <cstddef>
#include <cstdint>

namespace prism::detail {

class domain_arenas;
namespace gpu {
struct device_set;
}

/// Where a subtree writes its block of C: element (i, j) of the whole product lives at
/// C + (i - i0) + (j - j0) * ldc. A k-cut's part c >= 1 writes a temporary C' of its node's
/// m x n block, whose frame starts at the node's corner: for a node at (i, j) = (64, 32),
/// C' holds (64, 32) at C'[0] and (65, 33) at C'[1 + m].
template <scalar T>
struct c_frame {
  T* C = nullptr;             ///< first element of the frame
  std::int64_t ldc = 1;       ///< its leading dimension
  std::int64_t i0 = 0, j0 = 0;  ///< the product's (row, column) at C[0]
  /// Address of element (i, j) of the product.
  T* at(std::int64_t i, std::int64_t j) const { return C + (i - i0) + (j - j0) * ldc; }
};

/// Where a subtree's workspace lives: node.workspace_offset bytes into the plan's layout
/// is at base + (offset - origin). A plain plan uses one block for the whole tree (origin
/// 0); a single-domain subtree of a numa plan gets a block from its domain's pool whose
/// first byte stands for the subtree root's offset.
struct workspace_frame {
  std::byte* base = nullptr;  ///< first byte of the block
  std::size_t origin = 0;     ///< the plan offset base stands for
  /// Address of a plan workspace offset.
  std::byte* at(std::size_t offset) const { return base + (offset - origin); }
};

template <scalar T>
class executor;

/// Runs the steps of one level of the machine. A runner owns where its temporaries live
/// and who reduces them; it runs children through executor::run.
template <scalar T>
class step_runner {
 public:
  virtual ~step_runner() = default;
  /// Runs node nd (a bfs or dfs step of this runner's level) writing into `out` with `beta`.
  virtual void run(const executor<T>& ex, const node& nd, workspace_frame ws, c_frame<T> out, T beta) const = 0;
};

/// The walk of one plan over one call's operands: C = alpha op(A) op(B) + beta C. For a
/// syrk / herk plan the caller passes A twice (B = A, ldb = lda): triangle leaves call
/// ?syrk / ?herk on op(A)'s rows, off-diagonal blocks are gemm leaves with the plan's
/// transb (op(B) = op(A)^T or ^H).
template <scalar T>
class executor {
 public:
  /// Binds a validated plan to the operands; `numa` is the context's per-domain arenas
  /// when the plan has numa steps. A and B hold the block of box `origin` (the whole
  /// product by default): op(A)'s (i, l) is at A's (i - origin.i, l - origin.l), likewise
  /// op(B)'s (l, j). A k cut's partial C blocks are added on several threads from
  /// `parallel_reduce_bytes` of C (the machine key of that name), on one below.
  executor(const plan& p, T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb,
           domain_arenas* numa, double parallel_reduce_bytes, const box& origin = {});

  /// Runs the plan's device subtrees on `devices` (a plan with GPUs); `ctx` is the call's
  /// context, whose host plans finish a device's part when the device fails.
  void set_devices(const gpu::device_set* devices, const context* ctx) { devices_ = devices, ctx_ = ctx; }

  /// Runs node `index`'s subtree: a leaf itself, a step through its level's runner.
  void run(int index, workspace_frame ws, c_frame<T> out, T beta) const;
  /// Runs nd's parts one after another (any level's DFS): each child writes into `out`; on
  /// a k-cut the first applies beta and the others accumulate (beta = 1), so no temporary.
  void run_in_sequence(const node& nd, workspace_frame ws, c_frame<T> out, T beta) const;
  /// out's block of nd += the f - 1 temporaries C'_c (nd.shape.m x nd.shape.n, ld = m) in
  /// part order (only the uplo triangle when nd is a triangle), column by column (a fixed order: a fixed plan gives bitwise-equal results),
  /// on up to `threads` threads of the current arena.
  void reduce(const node& nd, c_frame<T> out, T* const* temps, int threads) const;

  /// The plan's nodes.
  const std::vector<node>& nodes() const noexcept { return nodes_; }
  /// The per-domain arenas (numa plans), else nullptr.
  domain_arenas* numa() const noexcept { return numa_; }
  /// The plan's problem.
  const problem& source() const noexcept { return problem_; }
  /// Bytes of each device's memory the plan may use.
  std::size_t device_memory() const noexcept { return device_memory_; }
  /// The devices the plan runs on (set_devices), else nullptr.
  const gpu::device_set* devices() const noexcept { return devices_; }
  /// The call's context (set_devices), else nullptr.
  const context* call_context() const noexcept { return ctx_; }
  /// alpha of the call.
  T alpha() const noexcept { return alpha_; }
  /// A, its leading dimension, B and its, as bound (see the constructor's origin).
  const T* a() const noexcept { return A_; }
  std::int64_t lda() const noexcept { return lda_; }  ///< A's leading dimension
  const T* b() const noexcept { return B_; }           ///< B as bound
  std::int64_t ldb() const noexcept { return ldb_; }  ///< B's leading dimension
  /// The box A and B hold (the whole product unless a rank's subtree).
  const box& origin() const noexcept { return origin_; }

 private:
  const std::vector<node>& nodes_;
  problem problem_;
  std::size_t device_memory_;
  const gpu::device_set* devices_ = nullptr;
  const context* ctx_ = nullptr;
  char ta_, tb_;
  bool herm_;  // a herk plan: triangle leaves call ?herk with alpha's and beta's real parts
  T alpha_;
  const T* A_;
  std::int64_t lda_;
  const T* B_;
  std::int64_t ldb_;
  domain_arenas* numa_;
  double parallel_reduce_bytes_;
  box origin_;
};

/// Throws prism::plan_error, before anything is computed, when plan p does not fit ctx:
/// more threads than ctx.threads(), more NUMA domains than ctx.machine() has, more GPUs
/// (or more device memory) than ctx's devices have, or (unless `ranks_allowed`:
/// prism::dist) rank-level steps.
void check_fits(const plan& p, const context& ctx, bool ranks_allowed);

/// The runner of gpu-level bfs steps: each part on its own devices at once (a k cut's parts
/// 1.. into host temporaries, added into C when all are done).
template <scalar T>
const step_runner<T>& gpu_step_runner();

/// Runs the device subtree at node `index` (a node on one device) on that device: its
/// schedule (lib/gpu/schedule.hpp) through the runner (lib/gpu/runner.hpp). When the
/// device fails before writing C the whole part runs on the host; when it fails later, the
/// blocks not yet written run on the host; either way one line on stderr says so. A block
/// torn by a failed write-back is recomputed when beta = 0, else prism::error names it.
template <scalar T>
void run_device(const executor<T>& ex, int index, c_frame<T> out, T beta);

/// Runs the subtree of node `index` of plan `p` (validated, fitting ctx) on operands that
/// hold only that node's block: A and B its blocks of op(A) and op(B) as stored (A is
/// shape.m x shape.k when transa = 'N', else shape.k x shape.m), C its shape.m x shape.n
/// block. The local step of prism::dist: each rank runs its own subtree on its buffers.
template <scalar T>
void run_subtree(const plan& p, int index, T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb,
                 T beta, T* C, std::int64_t ldc, const context& ctx);

/// Runs plan `p` (validated, fitting ctx, no rank steps, sizes non-trivial) inside ctx's
/// task arena: C = alpha op(A) op(B) + beta C, column-major, trans letters from the plan.
template <scalar T>
void run_plan(const plan& p, T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb,
              T beta, T* C, std::int64_t ldc, const context& ctx);

}  // namespace prism::detail
