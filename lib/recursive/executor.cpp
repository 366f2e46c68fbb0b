// lib/recursive/executor.cpp — the executor and the step runners of the numa, thread and
// cache levels (the rank level is prism::dist's: lib/mpi/rank_exchange.cpp).
#include "executor.hpp"
#include "gpu_level.hpp"
#include "temporaries.hpp"

#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/machine.hpp>

#include "../leaf/backend/blas_library.hpp"
#include "../leaf/dispatch.hpp"
#include "../leaf/kernels/streaming.hpp"
#include "../numa/domain_arenas.hpp"
#include "../runtime/runtime.hpp"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_group.h>

#include <vector>

namespace prism::detail {

namespace {

// The frame a k-cut's part c >= 1 writes: temporary t holds nd's m x n block (ld = m).
template <scalar T>
c_frame<T> temp_frame(const node& nd, T* t) {
  return c_frame<T>{t, std::max<std::int64_t>(1, nd.shape.m), nd.shape.i, nd.shape.j};
}

// A BFS diagonal cut of a triangle (syrk / herk plans): the off-diagonal block is a task
// on its share while this thread runs the two triangles one after the other on theirs;
// `run_child(child)` runs a child subtree where its level wants it. All three write
// disjoint parts of `out` with the caller's beta, so nothing is reduced.
template <scalar T, class F>
void run_diagonal(const node& nd, F&& run_child) {
  oneapi::tbb::task_group group;
  const int block = nd.children[2];
  group.run([&run_child, block] { run_child(block); });
  run_child(nd.children[0]);
  run_child(nd.children[1]);
  group.wait();
}

// Thread level: BFS parts are oneTBB tasks in the current arena (part 0 on this thread,
// the others for idle threads to steal); a k-cut's C' sit in this frame's workspace, at
// the node's offset, and the node's thread reduces them into C. DFS parts run in order.
template <scalar T>
class thread_runner final : public step_runner<T> {
 public:
  void run(const executor<T>& ex, const node& nd, workspace_frame ws, c_frame<T> out, T beta) const override {
    if (nd.kind == step_kind::dfs) return ex.run_in_sequence(nd, ws, out, beta);
    if (is_diagonal_cut(nd)) return run_diagonal<T>(nd, [&ex, ws, out, beta](int child) { ex.run(child, ws, out, beta); });
    const bool k_cut = nd.cut == dim::k;
    std::vector<T*> temps;
    if (k_cut)
      for (std::size_t c = 1; c < nd.parts.size(); ++c)
        temps.push_back(reinterpret_cast<T*>(ws.at(nd.workspace_offset + temp_offset(nd, c, sizeof(T)))));
    oneapi::tbb::task_group group;
    for (std::size_t c = 1; c < nd.parts.size(); ++c) {
      const int child = nd.children[c];
      // beta = 0 into C': the leaf writes it without reading it, so no uninitialised read.
      const c_frame<T> to = k_cut ? temp_frame(nd, temps[c - 1]) : out;
      const T b = k_cut ? T(0) : beta;
      group.run([&ex, child, ws, to, b] { ex.run(child, ws, to, b); });
    }
    ex.run(nd.children[0], ws, out, beta);
    group.wait();
    if (k_cut) ex.reduce(nd, out, temps.data(), nd.owns.threads);
  }
};

// NUMA level: each part whose subtree has one domain runs in that domain's arena, on
// workspace from that domain's pool; a k-cut's C' comes from the pool of the domain that
// computes it, so it is written and kept where it is produced; C's owner (the first
// part's first domain, where the placement helper puts C) adds the C' into C in its arena.
template <scalar T>
class numa_runner final : public step_runner<T> {
 public:
  void run(const executor<T>& ex, const node& nd, workspace_frame ws, c_frame<T> out, T beta) const override {
    if (nd.kind == step_kind::dfs) return ex.run_in_sequence(nd, ws, out, beta);
    domain_arenas& numa = *ex.numa();
    const auto& nodes = ex.nodes();
    const bool k_cut = nd.cut == dim::k;
    const std::size_t stride = temp_bytes(nd.shape.m, nd.shape.n, sizeof(T));
    std::vector<workspace_pool::lease> leases;
    std::vector<T*> temps;
    if (k_cut) {
      leases.reserve(nd.parts.size() - 1);
      for (std::size_t c = 1; c < nd.parts.size(); ++c) {
        leases.push_back(numa.pool(nodes[std::size_t(nd.children[c])].owns.domains.first).acquire(stride));
        temps.push_back(reinterpret_cast<T*>(leases.back().data()));
      }
    }
    // Runs child's subtree: a single-domain subtree in its domain's arena, always (where
    // it runs is the plan's decision, not the thread-local current_domain(), which a
    // worker may still hold from an arena it left), a multi-domain one (another numa
    // step) right here. A thread already in that arena runs the functor inline.
    auto in_domain = [&ex, &numa, &nodes, ws](int child, c_frame<T> to, T b) {
      const node& cn = nodes[std::size_t(child)];
      const int d = cn.owns.domains.first;
      if (cn.owns.domains.count == 1) {
        numa.arena(d, cn.owns.threads).execute([&] {
          workspace_pool::lease own = numa.pool(d).acquire(cn.workspace_bytes);
          ex.run(child, workspace_frame{own.data(), cn.workspace_offset}, to, b);
        });
      } else {
        ex.run(child, ws, to, b);
      }
    };
    if (is_diagonal_cut(nd)) return run_diagonal<T>(nd, [&in_domain, out, beta](int child) { in_domain(child, out, beta); });
    oneapi::tbb::task_group group;
    for (std::size_t c = 1; c < nd.parts.size(); ++c) {
      const int child = nd.children[c];
      const c_frame<T> to = k_cut ? temp_frame(nd, temps[c - 1]) : out;
      const T b = k_cut ? T(0) : beta;
      group.run([&in_domain, child, to, b] { in_domain(child, to, b); });
    }
    in_domain(nd.children[0], out, beta);
    group.wait();
    if (!k_cut) return;
    const node& owner = nodes[std::size_t(nd.children[0])];
    const int threads = std::max(1, owner.owns.threads / owner.owns.domains.count);
    numa.arena(owner.owns.domains.first, threads).execute([&] {
      if (auto hook = get_reduce_hook()) hook(owner.owns.domains.first);
      ex.reduce(nd, out, temps.data(), threads);
    });
  }
};

// Cache level: DFS only (parts in sequence, k accumulating into C).
template <scalar T>
class cache_runner final : public step_runner<T> {
 public:
  void run(const executor<T>& ex, const node& nd, workspace_frame ws, c_frame<T> out, T beta) const override {
    ex.run_in_sequence(nd, ws, out, beta);
  }
};

template <scalar T>
const step_runner<T>& runner_of(level l) {
  static const numa_runner<T>& numa = *new numa_runner<T>;  // never destroyed: calls may come at exit (docs/dropin.md)
  static const thread_runner<T>& thread = *new thread_runner<T>;
  static const cache_runner<T>& cache = *new cache_runner<T>;
  switch (l) {
    case level::rank:  // check_fits refuses such plans; prism::dist runs each rank's subtree
      throw plan_error("rank-level steps run through prism::dist, one local subtree per rank");
    case level::numa: return numa;
    case level::gpu: return gpu_step_runner<T>();
    case level::thread: return thread;
    case level::cache: return cache;
  }
  return cache;
}

}  // namespace

template <scalar T>
executor<T>::executor(const plan& p, T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb,
                      domain_arenas* numa, double parallel_reduce_bytes, const box& origin)
    : nodes_(p.nodes()), problem_(p.problem()), device_memory_(p.device_memory()), ta_(p.problem().transa), tb_(p.problem().transb), herm_(p.problem().op == operation::herk),
      alpha_(alpha), A_(A), lda_(lda), B_(B), ldb_(ldb), numa_(numa), parallel_reduce_bytes_(parallel_reduce_bytes),
      origin_(origin) {}


template <scalar T>
void executor<T>::run(int index, workspace_frame ws, c_frame<T> out, T beta) const {
  const node& nd = nodes_[std::size_t(index)];
  if (nd.owns.devices.count == 1) return run_device<T>(*this, index, out, beta);  // a device's whole subtree
  if (nd.kind != step_kind::leaf) return runner_of<T>(nd.where).run(*this, nd, ws, out, beta);
  if (auto hook = get_leaf_hook()) hook(nd.owns.domains.first);
  // op(A) is m x k: with transa = 'N' its (i, l) is A[i + l*lda], else A[l + i*lda]; e.g.
  // the leaf at rows [8, 16), k-range [256, 512) of a 'T' operand starts at A + 256 + 8*lda.
  // Likewise op(B), k x n. Operands holding only a subtree's block count from its origin.
  const box& b = nd.shape;
  const std::int64_t i = b.i - origin_.i, j = b.j - origin_.j, l = b.l - origin_.l;
  const T* a = ta_ == 'N' ? A_ + i + l * lda_ : A_ + l + i * lda_;
  if (nd.triangle != 0)  // a diagonal triangle of a syrk / herk plan: rows [i, i + m) of op(A)
    return leaf_rank_k<T>(nd.backend, herm_, nd.triangle, ta_, b.m, b.k, alpha_, a, lda_, beta, out.at(b.i, b.j),
                          out.ldc);
  const T* bb = tb_ == 'N' ? B_ + l + j * ldb_ : B_ + j + l * ldb_;
  leaf_gemm<T>(nd.backend, ta_, tb_, b.m, b.n, b.k, alpha_, a, lda_, bb, ldb_, beta, out.at(b.i, b.j), out.ldc);
}

template <scalar T>
void executor<T>::run_in_sequence(const node& nd, workspace_frame ws, c_frame<T> out, T beta) const {
  for (std::size_t c = 0; c < nd.parts.size(); ++c)
    run(nd.children[c], ws, out, nd.cut == dim::k && c > 0 ? T(1) : beta);
}

template <scalar T>
void executor<T>::reduce(const node& nd, c_frame<T> out, T* const* temps, int threads) const {
  const std::int64_t m = nd.shape.m, n = nd.shape.n;
  const std::size_t f = nd.parts.size();
  // A triangle adds only its uplo part of column j: rows [0, j] for 'U', [j, m) for 'L'
  // (the rest of C' was never written, and C's other triangle must stay untouched).
  const char tri = nd.triangle;
  auto columns = [&](std::int64_t j0, std::int64_t j1) {
    for (std::int64_t j = j0; j < j1; ++j) {
      T* cj = out.at(nd.shape.i, nd.shape.j + j);
      const std::int64_t i0 = tri == 'L' ? j : 0, i1 = tri == 'U' ? j + 1 : m;
      for (std::size_t c = 1; c < f; ++c) {
        const T* tj = temps[c - 1] + j * m;
        for (std::int64_t i = i0; i < i1; ++i) cj[i] += tj[i];
      }
    }
  };
  // Below the machine's parallel_reduce_bytes a task costs more than the additions it shares.
  if (threads >= 2 && double(m) * double(n) * double(sizeof(T)) >= parallel_reduce_bytes_)
    oneapi::tbb::parallel_for(oneapi::tbb::blocked_range<std::int64_t>(0, n),
                              [&](const oneapi::tbb::blocked_range<std::int64_t>& r) { columns(r.begin(), r.end()); });
  else
    columns(0, n);
}

void check_fits(const plan& p, const context& ctx, bool ranks_allowed) {
  if (p.ranks() > 1 && !ranks_allowed)
    throw plan_error("plan spans " + std::to_string(p.ranks()) +
                     " MPI ranks; it runs through the MPI level, not prism::execute");
  check_domains(p.domains(), ctx.machine());
  check_devices(p, devices_of(ctx));
  if (p.threads() > ctx.threads())
    throw plan_error("plan needs " + std::to_string(p.threads()) + " threads, the context allows " +
                     std::to_string(ctx.threads()));
}

template <scalar T>
void run_subtree(const plan& p, int index, T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb,
                 T beta, T* C, std::int64_t ldc, const context& ctx) {
  if (const int same = p.nodes().at(std::size_t(index)).same; same >= 0) index = same;  // rank R's subtree
  const node& top = p.nodes().at(std::size_t(index));
  // Load every leaf library the plan uses before anything touches C: a library that
  // cannot be opened then throws with C untouched. (Streaming leaves load nothing.)
  for (const node& nd : p.nodes())
    if (nd.kind == step_kind::leaf && nd.same < 0 && nd.backend != leaf_backend::streaming && nd.backend != leaf_backend::gpu)
      (void)leaf_library(nd.backend);
  runtime& rt = runtime_of(ctx);
  domain_arenas* numa = p.domains() > 1 ? &rt.domains(ctx.machine()) : nullptr;
  // A numa plan takes its workspace per domain as it goes (numa_runner); a plain plan
  // takes one block for the whole subtree, standing for its offsets from top's on.
  workspace_pool::lease ws = numa != nullptr ? workspace_pool::lease{} : rt.pool().acquire(top.workspace_bytes);
  executor<T> ex(p, alpha, A, lda, B, ldb, numa, ctx.description().value(machine_key::parallel_reduce_bytes),
                 top.shape);
  if (p.devices() > 0) {
    check_devices(p, devices_of(ctx));  // a context that asks for more GPUs than it has: C untouched
    ex.set_devices(&devices_of(ctx), &ctx);
  }
  const workspace_frame root{ws.data(), top.workspace_offset};
  const c_frame<T> out{C, ldc, top.shape.i, top.shape.j};
  // Nothing to share, or device work (whose threads block on their device and so must not
  // hold the arena's slots): stay on the caller's thread.
  if (top.kind == step_kind::leaf || top.owns.devices.count > 0) {
    ex.run(index, root, out, beta);
    return;
  }
  rt.arena().execute([&] { ex.run(index, root, out, beta); });
}

template <scalar T>
void run_plan(const plan& p, T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb,
              T beta, T* C, std::int64_t ldc, const context& ctx) {
  run_subtree(p, 0, alpha, A, lda, B, ldb, beta, C, ldc, ctx);
}

#define PRISM_INSTANTIATE(T)                                                                                   \
  template class executor<T>;                                                                                  \
  template void run_plan<T>(const plan&, T, const T*, std::int64_t, const T*, std::int64_t, T, T*, std::int64_t, \
                            const context&);                                                                \
  template void run_subtree<T>(const plan&, int, T, const T*, std::int64_t, const T*, std::int64_t, T, T*,      \
                               std::int64_t, const context&);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism::detail
