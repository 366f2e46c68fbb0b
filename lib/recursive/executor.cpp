// lib/recursive/executor.cpp — the recursive executor: BFS parts as oneTBB tasks, DFS parts
// in sequence, k-BFS temporaries from the call's workspace, single-threaded BLAS leaves.
#include "executor.hpp"
#include "temporaries.hpp"

#include "../blas/blas_library.hpp"
#include "../numa/domain_arenas.hpp"
#include "../runtime/runtime.hpp"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_group.h>

namespace prism::detail {

namespace {

// Reductions of C += C' below this many elements run on one thread: a task costs more.
constexpr std::int64_t parallel_reduce_elements = 1 << 15;

// Where a subtree's workspace lives: node.workspace_offset bytes into the plan's layout
// is at base + (offset - origin). The whole tree of a plain plan uses one block (origin 0);
// a single-domain subtree of a numa plan gets a block from its domain's pool whose first
// byte stands for the subtree root's offset.
struct frame {
  std::byte* base = nullptr;
  std::size_t origin = 0;
  std::byte* at(std::size_t offset) const { return base + (offset - origin); }
};

template <scalar T>
struct executor {
  const std::vector<node>& nodes;
  char ta, tb;
  T alpha;
  domain_arenas* numa;  // per-domain arenas when the plan has numa steps, else nullptr

  // Where part c of a cut starts inside op(A), op(B) and C. With transa = 'N', op(A) is A
  // itself (m x k, column-major): row i, column l is A[i + l*lda]. With 'T' or 'C', op(A)
  // is A^T: its (i, l) is A[l + i*lda]. E.g. an m-cut at row 8 of op(A) with transa 'T'
  // starts at A + 8*lda; a k-cut at 256 starts at A + 256. Likewise for op(B) (k x n).
  const T* a_at(const T* A, std::int64_t lda, std::int64_t i, std::int64_t l) const {
    return ta == 'N' ? A + i + l * lda : A + l + i * lda;
  }
  const T* b_at(const T* B, std::int64_t ldb, std::int64_t l, std::int64_t j) const {
    return tb == 'N' ? B + l + j * ldb : B + j + l * ldb;
  }

  // Runs child's subtree. When a numa step hands the child exactly one domain, it runs in
  // that domain's arena on workspace from that domain's pool; otherwise here, in `fr`.
  template <class F>
  void in_domain(int child, frame fr, F&& body) const {
    const node& cn = nodes[child];
    if (numa != nullptr && cn.domain_count == 1 && current_domain() != cn.domain_first) {
      numa->arena(cn.domain_first, cn.threads).execute([&] {
        workspace_pool::lease ws = numa->pool(cn.domain_first).acquire(cn.workspace_bytes);
        body(frame{ws.data(), cn.workspace_offset});
      });
    } else {
      body(fr);
    }
  }

  void run(int index, frame fr, const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
           std::int64_t ldc) const {
    const node& nd = nodes[index];
    if (nd.kind == step_kind::leaf) {
      if (auto hook = get_leaf_hook()) hook(nd.domain_first);
      leaf_library(nd.backend).gemm<T>(ta, tb, nd.m, nd.n, nd.k, alpha, A, lda, B, ldb, beta, C, ldc);
      return;
    }
    const std::size_t f = nd.parts.size();
    // Operands of part c: offsets along the cut edge.
    auto operands = [&](std::int64_t off, const T*& a, const T*& b, T*& cc) {
      a = A, b = B, cc = C;
      if (nd.cut == dim::m) a = a_at(A, lda, off, 0), cc = C + off;
      else if (nd.cut == dim::n) b = b_at(B, ldb, 0, off), cc = C + off * ldc;
      else a = a_at(A, lda, 0, off), b = b_at(B, ldb, off, 0);
    };

    if (nd.kind == step_kind::dfs) {
      std::int64_t off = 0;
      for (std::size_t c = 0; c < f; ++c) {
        const T* a; const T* b; T* cc;
        operands(off, a, b, cc);
        // DFS on k accumulates: the first slab applies beta, the rest add (beta = 1).
        const T part_beta = (nd.cut == dim::k && c > 0) ? T(1) : beta;
        run(nd.children[c], fr, a, lda, b, ldb, part_beta, cc, ldc);
        off += nd.parts[c].size;
      }
      return;
    }

    // BFS: part 0 runs on this thread, the others as tasks that idle threads steal.
    const bool k_cut = nd.cut == dim::k;
    const bool numa_step = numa != nullptr && nd.where == level::numa;
    const std::int64_t m = nd.m, n = nd.n;
    const std::size_t temp_stride = temp_bytes(m, n, sizeof(T));  // the plan's layout (derive)
    // C' of part c >= 1 of a k-cut (m x n, ld = m). At thread level it sits in this
    // frame's workspace; at numa level it comes from the pool of the domain that computes
    // it, so it is written and kept where it is produced.
    std::vector<workspace_pool::lease> numa_temps;
    if (k_cut && numa_step) {
      numa_temps.reserve(f - 1);
      for (std::size_t c = 1; c < f; ++c)
        numa_temps.push_back(numa->pool(nodes[nd.children[c]].domain_first).acquire(temp_stride));
    }
    auto temp = [&](std::size_t c) {
      if (numa_step) return reinterpret_cast<T*>(numa_temps[c - 1].data());
      return reinterpret_cast<T*>(fr.at(nd.workspace_offset) + (c - 1) * temp_stride);
    };
    oneapi::tbb::task_group group;
    std::int64_t off = nd.parts[0].size;
    for (std::size_t c = 1; c < f; ++c) {
      const T* a; const T* b; T* cc;
      operands(off, a, b, cc);
      const int child = nd.children[c];  // capture the index, not the node (no copy per task)
      if (k_cut) {
        T* t = temp(c);
        // beta = 0: the leaf writes C' without reading it, so no uninitialised read.
        group.run([=, this] { in_domain(child, fr, [&](frame sub) { run(child, sub, a, lda, b, ldb, T(0), t, m); }); });
      } else {
        group.run([=, this] { in_domain(child, fr, [&](frame sub) { run(child, sub, a, lda, b, ldb, beta, cc, ldc); }); });
      }
      off += nd.parts[c].size;
    }
    {
      const T* a; const T* b; T* cc;
      operands(0, a, b, cc);
      in_domain(nd.children[0], fr, [&](frame sub) { run(nd.children[0], sub, a, lda, b, ldb, beta, cc, ldc); });
    }
    group.wait();
    if (!k_cut) return;

    // C += C'_1 + ... + C'_(f-1), column by column. The order of the additions is fixed by
    // the plan, so a fixed plan gives bitwise-identical results from run to run.
    auto reduce = [&](std::int64_t j0, std::int64_t j1) {
      for (std::int64_t j = j0; j < j1; ++j) {
        T* cj = C + j * ldc;
        for (std::size_t c = 1; c < f; ++c) {
          const T* tj = temp(c) + j * m;
          for (std::int64_t i = 0; i < m; ++i) cj[i] += tj[i];
        }
      }
    };
    auto reduce_all = [&] {
      if (nd.threads >= 2 && m * n >= parallel_reduce_elements) {
        oneapi::tbb::parallel_for(oneapi::tbb::blocked_range<std::int64_t>(0, n),
                                  [&](const oneapi::tbb::blocked_range<std::int64_t>& r) { reduce(r.begin(), r.end()); });
      } else {
        reduce(0, n);
      }
    };
    // At numa level the domain that owns C (the first part's first domain, where the
    // placement helper puts C) adds the C' into it.
    if (numa_step) {
      const node& owner = nodes[nd.children[0]];
      const int threads = nodes[nd.children[0]].domain_count == 1 ? owner.threads : std::max(1, owner.threads / owner.domain_count);
      numa->arena(owner.domain_first, threads).execute([&] {
        if (auto hook = get_reduce_hook()) hook(owner.domain_first);
        reduce_all();
      });
    } else {
      reduce_all();
    }
  }
};

}  // namespace

template <scalar T>
void run_plan(const plan& p, T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb,
              T beta, T* C, std::int64_t ldc, const context& ctx) {
  // Load every leaf library the plan uses before anything touches C: a library that
  // cannot be opened then throws with C untouched.
  for (const node& nd : p.nodes())
    if (nd.kind == step_kind::leaf) (void)leaf_library(nd.backend);
  runtime& rt = ctx.runtime();
  domain_arenas* numa = p.domains() > 1 ? &rt.domains(ctx.machine()) : nullptr;
  // A numa plan takes its workspace per domain as it goes (in_domain, numa C'); a plain
  // plan takes one block for the whole tree.
  workspace_pool::lease ws = numa != nullptr ? workspace_pool::lease{} : rt.pool().acquire(p.extra_bytes());
  executor<T> ex{p.nodes(), p.problem().transa, p.problem().transb, alpha, numa};
  const frame root{ws.data(), 0};
  if (p.nodes()[0].kind == step_kind::leaf) {  // nothing to share: stay on the caller's thread
    ex.run(0, root, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  rt.arena().execute([&] { ex.run(0, root, A, lda, B, ldb, beta, C, ldc); });
}

template void run_plan<float>(const plan&, float, const float*, std::int64_t, const float*, std::int64_t, float, float*, std::int64_t, const context&);
template void run_plan<double>(const plan&, double, const double*, std::int64_t, const double*, std::int64_t, double, double*, std::int64_t, const context&);
template void run_plan<std::complex<float>>(const plan&, std::complex<float>, const std::complex<float>*, std::int64_t, const std::complex<float>*, std::int64_t, std::complex<float>, std::complex<float>*, std::int64_t, const context&);
template void run_plan<std::complex<double>>(const plan&, std::complex<double>, const std::complex<double>*, std::int64_t, const std::complex<double>*, std::int64_t, std::complex<double>, std::complex<double>*, std::int64_t, const context&);

}  // namespace prism::detail
