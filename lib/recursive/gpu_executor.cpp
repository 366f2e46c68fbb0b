// lib/recursive/gpu_executor.cpp — the executor's GPU level: gpu bfs steps (devices at
// once) and a device's subtree run through its schedule, with the host finishing what a
// failed device leaves.
#include "executor.hpp"
#include "gpu_level.hpp"
#include "temporaries.hpp"

#include <prism/error.hpp>
#include <prism/gemm.hpp>
#include <prism/syrk.hpp>

#include "../environment/environment.hpp"
#include "../gpu/devices.hpp"
#include "../gpu/runner.hpp"
#include "../runtime/runtime.hpp"


#include <exception>
#include <system_error>
#include <string>
#include <thread>
#include <vector>

namespace prism::detail {

namespace {

// Blocks of C that devices left torn while writing them back (each "gpu: <device> failed
// while writing back C(r0:r1, c0:c1): <why>"): those blocks are undefined, the rest of C is
// right. Parts that fail at once report together, so no torn block goes unnamed.
class torn_blocks final : public error {
 public:
  explicit torn_blocks(std::vector<std::string> blocks) : error(text(blocks)), blocks_(std::move(blocks)) {}
  const std::vector<std::string>& blocks() const noexcept { return blocks_; }

 private:
  static std::string text(const std::vector<std::string>& blocks) {
    std::string t;
    for (const std::string& b : blocks) t += (t.empty() ? "" : "; ") + b;
    return t + (blocks.size() == 1 ? "; that block of C is undefined, the rest is right"
                                   : "; those blocks of C are undefined, the rest is right");
  }
  std::vector<std::string> blocks_;
};

// A device's failure as one line names the device once: e.g. "emulated device 0 (1.00 MiB):
// allocate(243200): ..." as it is, "stopped: ..." after the device's name.
std::string named(const gpu::device& dev, const std::string& what) {
  const std::string name = dev.name();
  return what.rfind(name + ":", 0) == 0 ? what : name + ": " + what;
}

// The failure a step reports when its parts failed (`failed`, one per part): any that is not
// a torn block as it is (C's state then unknown), else every part's torn blocks together.
void rethrow_failures(const std::vector<std::exception_ptr>& failed) {
  std::vector<std::string> torn;
  for (const std::exception_ptr& f : failed) {
    if (!f) continue;
    try {
      std::rethrow_exception(f);
    } catch (const torn_blocks& t) {
      torn.insert(torn.end(), t.blocks().begin(), t.blocks().end());
    }  // anything else leaves here
  }
  if (!torn.empty()) throw torn_blocks(std::move(torn));
}

// gpu level: every part on its own devices at once. The device work blocks its thread on
// the device, so each part but the first gets a thread of its own (not a task). A k-cut's
// parts 1.. write temporaries of the node's block in the call's workspace, added into C
// (the node's share of host threads) when all are done; a diagonal cut's triangles run
// one after the other while the block runs beside them.
// Starts f on a thread of its own; a thread that cannot be started runs f here instead.
template <class F>
void start(std::vector<std::thread>& threads, F&& f) {
  try {
    threads.emplace_back(f);
  } catch (const std::system_error&) {
    f();
  }
}

// gpu level: every part on its own devices at once. The device work blocks its thread on
// the device, so each part but the first gets a thread of its own (not a task). A k-cut's
// parts 1.. write temporaries of the node's block in the call's workspace, added into C
// (the node's share of host threads) when all are done; a diagonal cut's triangles run
// one after the other while the block runs beside them. Every part runs, and a k cut's
// reduction too, before an error is thrown: when every failure is a torn block, one error
// names them all and the rest of C is right, as it says.
template <scalar T>
class gpu_runner final : public step_runner<T> {
 public:
  void run(const executor<T>& ex, const node& nd, workspace_frame ws, c_frame<T> out, T beta) const override {
    if (nd.kind == step_kind::dfs) return ex.run_in_sequence(nd, ws, out, beta);
    const bool diagonal = is_diagonal_cut(nd), k_cut = !diagonal && nd.cut == dim::k;
    std::vector<T*> temps;
    if (k_cut)
      for (std::size_t c = 1; c < nd.parts.size(); ++c)
        temps.push_back(reinterpret_cast<T*>(ws.at(nd.workspace_offset + temp_offset(nd, c, sizeof(T)))));
    std::vector<std::exception_ptr> failed(nd.parts.size());
    auto part = [&](std::size_t c) {
      const c_frame<T> to = k_cut && c > 0 ? c_frame<T>{temps[c - 1], std::max<std::int64_t>(1, nd.shape.m), nd.shape.i, nd.shape.j}
                                           : out;
      try {
        ex.run(nd.children[c], ws, to, k_cut && c > 0 ? T(0) : beta);
      } catch (...) {
        failed[c] = std::current_exception();
      }
    };
    std::vector<std::thread> threads;
    if (diagonal) {  // the block beside, the two triangles one after the other here
      start(threads, [&part] { part(2); });
      part(0), part(1);
    } else {
      for (std::size_t c = 1; c < nd.parts.size(); ++c) start(threads, [&part, c] { part(c); });
      part(0);
    }
    for (std::thread& t : threads) t.join();
    if (k_cut) ex.reduce(nd, out, temps.data(), nd.owns.threads);
    rethrow_failures(failed);
  }
};

// The stored origin of op(M)'s (row, k) block as the executor binds it: M holds the box
// `o`, so op(M)'s (i, l) is at M's (i - o.i, l - o.l) ('N'), else (l - o.l, i - o.i).
template <class T>
gpu::host_matrix<const T> bound_a(const T* a, std::int64_t lda, char trans, const box& o) {
  return trans == 'N' ? gpu::host_matrix<const T>{a, lda, o.i, o.l} : gpu::host_matrix<const T>{a, lda, o.l, o.i};
}
template <class T>
gpu::host_matrix<const T> bound_b(const T* b, std::int64_t ldb, char trans, const box& o) {
  return trans == 'N' ? gpu::host_matrix<const T>{b, ldb, o.l, o.j} : gpu::host_matrix<const T>{b, ldb, o.j, o.l};
}

// One visit's products on the host (the device failed before writing it back): gemm, or
// syrk / herk for a diagonal triangle, with the call's beta on its first product and 1
// after, through prism's host plans.
template <scalar T>
void visit_on_host(const executor<T>& ex, const gpu::visit& v, c_frame<T> out, T beta, const context& host) {
  const problem& p = ex.source();
  const gpu::host_matrix<const T> A = bound_a(ex.a(), ex.lda(), p.transa, ex.origin());
  const gpu::host_matrix<const T> B = p.op == operation::gemm ? bound_b(ex.b(), ex.ldb(), p.transb, ex.origin()) : A;
  for (const gpu::product& pr : v.products) {
    const gpu::device_leaf& lf = pr.leaf;
    const T b = pr.first ? beta : T(1);
    const T* a = p.transa == 'N' ? A.at(lf.i, lf.l) : A.at(lf.l, lf.i);
    T* c = out.at(lf.i, lf.j);
    if (v.triangle != 0) {
      if constexpr (std::same_as<T, float> || std::same_as<T, double>) {
        syrk<T>(v.triangle, p.transa, lf.m, lf.k, ex.alpha(), a, ex.lda(), b, c, out.ldc, host);
      } else if (p.op == operation::herk) {
        herk<T>(v.triangle, p.transa, lf.m, lf.k, ex.alpha().real(), a, ex.lda(), b.real(), c, out.ldc, host);
      } else {
        syrk<T>(v.triangle, p.transa, lf.m, lf.k, ex.alpha(), a, ex.lda(), b, c, out.ldc, host);
      }
      continue;
    }
    const T* bb = p.op != operation::gemm ? (p.transa == 'N' ? B.at(lf.j, lf.l) : B.at(lf.l, lf.j))
                                          : (p.transb == 'N' ? B.at(lf.l, lf.j) : B.at(lf.j, lf.l));
    const std::int64_t ldb = p.op == operation::gemm ? ex.ldb() : ex.lda();
    gemm<T>(p.transa, p.transb, lf.m, lf.n, lf.k, ex.alpha(), a, ex.lda(), bb, ldb, b, c, out.ldc, host);
  }
}

}  // namespace

template <scalar T>
const step_runner<T>& gpu_step_runner() {
  static const gpu_runner<T>& runner = *new gpu_runner<T>;  // never destroyed: calls may come at exit (docs/dropin.md)
  return runner;
}

template <scalar T>
void run_device(const executor<T>& ex, int index, c_frame<T> out, T beta) {
  const node& nd = ex.nodes()[std::size_t(index)];
  if (ex.devices() == nullptr || ex.call_context() == nullptr)
    throw plan_error("a plan with GPUs runs through prism::execute or prism::gemm with a context that has devices");
  gpu::device& dev = *ex.devices()->devices.at(std::size_t(nd.owns.devices.first));
  const problem& p = ex.source();
  const gpu::device_schedule s = gpu::make_schedule(device_leaves(ex.nodes(), index), device_product(p), ex.device_memory(), beta != T(0));
  const gpu::host_matrix<const T> A = bound_a(ex.a(), ex.lda(), p.transa, ex.origin());
  const gpu::host_matrix<const T> B = p.op == operation::gemm ? bound_b(ex.b(), ex.ldb(), p.transb, ex.origin()) : A;
  const gpu::host_matrix<T> C{out.C, out.ldc, out.i0, out.j0};
  const context& ctx = *ex.call_context();
  gpu::staging st;
  // At least 4 KiB (256 complex doubles): pieces() cuts a longer column into pieces that size.
  st.bytes = std::max<std::size_t>(4096, std::size_t(ctx.description().value(machine_key::gpu_staging_bytes)));
  // Each direction's pieces are packed by half the host threads the part runs with (16
  // threads filling a ring of two 64 MB buffers fed one H200's link at its pinned rate).
  const int devices = std::max(1, ex.nodes()[0].owns.devices.count);
  st.threads = std::max(1, std::min(nd.owns.threads / devices, 16) / 2);
  st.host_copy = ctx.description().value(machine_key::host_copy_bandwidth);
  st.link_in = ctx.description().value(machine_key::gpu_link_in);
  st.register_rate = ctx.description().value(machine_key::gpu_register_bandwidth);
  context host = ctx;
  host.set_gpus(0);
  gpu::run_outcome o;
  try {
    o = gpu::run_schedule<T>(dev, s, A, B, C, ex.alpha(), beta, p.op == operation::herk, st);
  } catch (const gpu::device_error& e) {  // nothing of C touched yet
    say_once("gpu: " + named(dev, e.what()) + "; its part of the product runs on the host");
    for (const gpu::visit& v : s.visits) visit_on_host<T>(ex, v, out, beta, host);
    return;
  }
  if (o.ok) return;
  const bool torn_recomputable = o.torn >= 0 && beta == T(0) && s.visits[std::size_t(o.torn)].products.front().first &&
                                 !s.visits[std::size_t(o.torn)].load;
  say_once("gpu: " + named(dev, o.error) + "; the blocks of C it had not written back run on the host");
  for (std::size_t v = 0; v < s.visits.size(); ++v)
    if (!o.written[v] && (int(v) != o.torn || torn_recomputable)) visit_on_host<T>(ex, s.visits[v], out, beta, host);
  if (o.torn >= 0 && !torn_recomputable) {
    const gpu::region& c = s.visits[std::size_t(o.torn)].c;
    throw torn_blocks({"gpu: " + dev.name() + " failed while writing back C(" + std::to_string(c.row) + ":" +
                       std::to_string(c.row + c.rows) + ", " + std::to_string(c.col) + ":" +
                       std::to_string(c.col + c.cols) + "): " + o.error});
  }
}

#define PRISM_INSTANTIATE(T)                                        \
  template const step_runner<T>& gpu_step_runner<T>();              \
  template void run_device<T>(const executor<T>&, int, c_frame<T>, T);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism::detail
