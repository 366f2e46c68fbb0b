// lib/recursive/on_device_executor.cpp — a plan on device operands run on its device
// (on_device.hpp): the pointers' device, the walk of the plan's gpu steps over the device's
// streams, and the entries prism::gemm / syrk / herk take for device pointers.
//
// Each node runs on the first of its streams. A gpu bfs step records an event there that
// its parts on other streams wait for, runs each part on its own streams, and then waits on
// its first stream for an event each of those parts recorded at its end; so every node
// ends with all its work ordered before the next thing on its first stream. A k cut's parts
// 1.. write temporaries in the plan's device workspace with beta 0; part 0 writes the
// node's block with the caller's beta; the temporaries are then added in (geam for a
// block, device::add_triangle for a triangle, so C's other triangle is never written).
#include "on_device.hpp"

#include <prism/error.hpp>

#include "../gpu/devices.hpp"
#include "../gpu/reuse.hpp"
#include "../runtime/runtime.hpp"
#include "temporaries.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace prism::detail {

namespace {

// Where an operand is, for the refusal's words.
std::string where_is(const gpu::device* d) { return d == nullptr ? "in host memory" : "on " + d->name(); }

// The device of ctx's devices holding p, or nullptr.
gpu::device* holder(const gpu::device_set& set, const void* p) {
  for (const auto& d : set.devices)
    if (d->holds(p)) return d.get();
  return nullptr;
}

// The streams and device workspace of one call: streams borrowed (gpu/reuse.hpp: a CUDA
// device's are kept for its next call), workspace allocated for the call.
struct device_kit {
  gpu::device* dev = nullptr;
  void* workspace = nullptr;
  std::vector<gpu::borrowed_stream> streams;  // after workspace: given back (drained) before it is freed
  device_kit(gpu::device& d, int count, std::size_t bytes) : dev(&d) {
    workspace = bytes > 0 ? d.allocate(bytes) : nullptr;
    try {
      for (int s = 0; s < count; ++s) streams.push_back(gpu::borrow_stream(d));
    } catch (...) {
      streams.clear();
      d.release(workspace);
      throw;
    }
  }
  ~device_kit() {
    streams.clear();
    dev->release(workspace);
  }
  device_kit(const device_kit&) = delete;
  device_kit& operator=(const device_kit&) = delete;
};

// Where a node writes: element (i, j) of the product at c + (i - i0) + (j - j0) * ld.
// `scratch`: a temporary holding the node's whole block (a triangle may write both halves).
template <class T>
struct target {
  T* c = nullptr;
  std::int64_t ld = 1, i0 = 0, j0 = 0;
  bool scratch = false;
  T* at(std::int64_t i, std::int64_t j) const { return c + (i - i0) + (j - j0) * ld; }
};

// The walk of one plan over one call's device operands.
template <scalar T>
struct device_walk {
  const plan& p;
  gpu::device& dev;
  device_kit& kit;
  T alpha;
  const T *A, *B;
  std::int64_t lda, ldb;
  std::vector<std::unique_ptr<gpu::event>> events;  // alive until the call ends

  scalar_type type() const { return p.problem().type; }
  bool herm() const { return p.problem().op == operation::herk; }
  gpu::stream& stream_of(const node& nd) const { return *kit.streams[std::size_t(nd.owns.streams.first)]; }
  T* workspace(std::size_t offset) const {
    return reinterpret_cast<T*>(static_cast<std::byte*>(kit.workspace) + offset);
  }

  // op(A)'s (i, l) and op(B)'s (l, j) as stored: for 'N' A holds op(A) itself, else its
  // transpose; e.g. AᵀB with A stored k x m (lda = k): op(A)'s (2, 5) is A[5 + 2 * lda].
  const T* a_at(std::int64_t i, std::int64_t l) const { return p.problem().transa == 'N' ? A + i + l * lda : A + l + i * lda; }
  const T* b_at(std::int64_t l, std::int64_t j) const { return p.problem().transb == 'N' ? B + l + j * ldb : B + j + l * ldb; }

  gpu::event& mark(gpu::stream& s) {
    events.push_back(dev.make_event());
    dev.record(*events.back(), s);
    return *events.back();
  }

  void leaf(const node& nd, const target<T>& out, T beta) {
    const box& b = nd.shape;
    gpu::stream& s = stream_of(nd);
    const problem& pr = p.problem();
    if (nd.triangle == 0 || out.scratch) {
      dev.gemm(type(), s, pr.transa, pr.transb, b.m, b.n, b.k, &alpha, a_at(b.i, b.l), lda, b_at(b.l, b.j), ldb, &beta,
               out.at(b.i, b.j), out.ld);
      return;
    }
    // A triangle into C: its whole block into the leaf's scratch, then its triangle added.
    T* block = workspace(nd.workspace_offset);
    T* packed = workspace(nd.workspace_offset + temp_bytes(b.n, b.n, sizeof(T)));
    const T zero(0);
    dev.gemm(type(), s, pr.transa, pr.transb, b.n, b.n, b.k, &alpha, a_at(b.i, b.l), lda, b_at(b.l, b.j), ldb, &zero,
             block, b.n);
    dev.add_triangle(type(), s, nd.triangle, herm(), b.n, block, b.n, &beta, out.at(b.i, b.j), out.ld, packed);
  }

  // A k cut's temporaries (parts 1..) added into the node's block of `out`: for a triangle
  // written into C, the others summed into the first, then its triangle added.
  void reduce(const node& nd, const target<T>& out, const std::vector<target<T>>& temps) {
    gpu::stream& s = stream_of(nd);
    const box& b = nd.shape;
    const T one(1);
    if (nd.triangle == 0 || out.scratch) {
      for (const target<T>& t : temps)
        dev.geam(type(), s, b.m, b.n, &one, t.c, t.ld, &one, out.at(b.i, b.j), out.ld, out.at(b.i, b.j), out.ld);
      return;
    }
    for (std::size_t c = 1; c < temps.size(); ++c)
      dev.geam(type(), s, b.n, b.n, &one, temps[c].c, temps[c].ld, &one, temps[0].c, temps[0].ld, temps[0].c, temps[0].ld);
    // The packed triangle ends the node's temporaries (node_temp_bytes): a d-type 32 x 32
    // triangle cut into 4 panels has 3 C' of 8192 bytes, then 4224, at offset 24576.
    T* packed = workspace(nd.workspace_offset + node_temp_bytes(nd, sizeof(T), true) - packed_triangle_bytes(b.n, sizeof(T)));
    dev.add_triangle(type(), s, nd.triangle, herm(), b.n, temps[0].c, temps[0].ld, &one, out.at(b.i, b.j), out.ld, packed);
  }

  void bfs(const node& nd, const target<T>& out, T beta) {
    gpu::stream& own = stream_of(nd);
    gpu::event& start = mark(own);
    const bool k_cut = nd.cut == dim::k;
    std::vector<target<T>> temps;
    for (std::size_t c = 1; k_cut && c < nd.parts.size(); ++c)
      temps.push_back(target<T>{workspace(nd.workspace_offset + temp_offset(nd, c, sizeof(T))),
                                std::max<std::int64_t>(1, nd.shape.m), nd.shape.i, nd.shape.j, true});
    std::vector<gpu::event*> ends;
    for (std::size_t c = 0; c < nd.children.size(); ++c) {
      const node& child = p.nodes()[std::size_t(nd.children[c])];
      gpu::stream& s = stream_of(child);
      if (&s != &own) dev.wait(s, start);
      run(nd.children[c], k_cut && c > 0 ? temps[c - 1] : out, k_cut && c > 0 ? T(0) : beta);
      if (&s != &own) ends.push_back(&mark(s));
    }
    for (gpu::event* e : ends) dev.wait(own, *e);
    if (k_cut) reduce(nd, out, temps);
  }

  void run(int index, const target<T>& out, T beta) {
    const node& nd = p.nodes()[std::size_t(index)];
    if (nd.kind == step_kind::leaf) return leaf(nd, out, beta);
    if (nd.kind == step_kind::bfs) return bfs(nd, out, beta);
    for (std::size_t c = 0; c < nd.children.size(); ++c)  // dfs: in order on the node's streams
      run(nd.children[c], out, nd.cut == dim::k && c > 0 ? T(1) : beta);
  }
};

// Drains every stream of a kit whatever happened (errors were already thrown or will be).
void drain(gpu::device& dev, device_kit& kit) noexcept {
  for (auto& s : kit.streams) try {
      dev.synchronize(*s);
    } catch (...) {
    }
}

// Runs work(kit) on a kit of `streams` streams and `bytes` of workspace on dev and waits for
// it. On operands in device memory a failure has no host copy to finish from, so a device
// error is rethrown saying what became of C: untouched when the kit could not be had (nothing
// queued yet), maybe partly written once work was queued.
template <class Work>
void with_kit(gpu::device& dev, int streams, std::size_t bytes, Work&& work) {
  const auto rethrow_saying = [](const char* of_c) {
    try {
      throw;
    } catch (const gpu::device_error& e) {
      throw gpu::device_error(std::string(e.what()) + of_c, e.out_of_memory());
    }
  };
  std::optional<device_kit> kit;
  try {
    kit.emplace(dev, streams, bytes);
  } catch (...) {
    rethrow_saying("; C untouched");
  }
  try {
    work(*kit);
    for (auto& s : kit->streams) dev.synchronize(*s);
  } catch (...) {
    drain(dev, *kit);
    rethrow_saying("; C may be partly written (its operands are on the device, with no host copy to finish from)");
  }
}

}  // namespace

gpu::device* operand_device(const context& ctx, const char* routine, const void* A, const void* B,
                            const void* C) {
  const gpu::device_set& set = devices_of(ctx);
  if (set.count() == 0) return nullptr;
  const void* ops[3] = {A, B, C};
  const char* names[3] = {"A", "B", "C"};
  gpu::device* at[3] = {nullptr, nullptr, nullptr};
  gpu::device* first = nullptr;
  bool host = false, mixed = false;
  for (int o = 0; o < 3; ++o) {
    if (ops[o] == nullptr) continue;
    at[o] = holder(set, ops[o]);
    if (at[o] == nullptr) host = true;
    else if (first == nullptr) first = at[o];
    else if (at[o] != first) mixed = true;
  }
  if (first == nullptr) return nullptr;
  if (!host && !mixed) return first;
  std::string where;
  for (int o = 0; o < 3; ++o)
    if (ops[o] != nullptr) where += std::string(where.empty() ? "" : ", ") + names[o] + " is " + where_is(at[o]);
  const char* operands = B != nullptr ? "A, B and C" : "A and C";  // (a rank-k update has no B)
  throw error(std::string(routine) + ": " + operands + " must all be in host memory or all in one device's memory; " + where +
              "; C untouched");
}

template <scalar T>
void run_on_device(const plan& p, gpu::device& dev, T alpha, const T* A, std::int64_t lda, const T* B,
                   std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
  if (!p.on_device()) throw plan_error("run_on_device runs plans on device operands (make_device_plan)");
  if (p.device_memory() > dev.memory())
    throw plan_error("plan uses " + std::to_string(p.device_memory()) + " bytes of device memory; " + dev.name() +
                     " has " + std::to_string(dev.memory()));
  with_kit(dev, p.streams(), p.extra_bytes(), [&](device_kit& kit) {
    device_walk<T> walk{p, dev, kit, alpha, A, B, lda, ldb, {}};
    walk.run(0, target<T>{C, ldc, 0, 0, false}, beta);
  });
}

template <scalar T>
void gemm_on_device(gpu::device& dev, char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                    const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc,
                    const context& ctx) {
  if ((alpha == T(0) || k == 0) && beta == T(1)) return;
  if (alpha == T(0) || k == 0) {  // C = beta C on the device; geam with alpha 0 reads no A, beta 0 no C
    return with_kit(dev, 1, 0, [&](device_kit& kit) {
      const T zero(0);
      for (std::int64_t j = 0; j < n; j += leaf_edge_max) {  // (m <= ldc, an int already)
        T* c = C + j * ldc;
        dev.geam(scalar_type_of<T>(), *kit.streams[0], m, std::min(leaf_edge_max, n - j), &zero, c, ldc, &beta, c, ldc, c, ldc);
      }
    });
  }
  const problem p{scalar_type_of<T>(), ta, tb, m, n, k};
  run_on_device<T>(plan_on_device(p, on_device_memory(ctx, &dev)), dev, alpha, A, lda, B, ldb, beta, C, ldc);
}

// C's uplo triangle = beta C's on the device (herk: the diagonal made real), in panels of w
// columns: each diagonal w x w block by add_triangle (zeros added with beta), the rest of its
// columns ('L': below it) or rows ('U': right of it) by geam in place (alpha 0 reads nothing,
// beta 0 no C), with w the widest whose zeros and packed triangle fit `memory`. E.g. doubles in
// 196,608 bytes: w = 127 (129,088 + 65,024 bytes; 128 would take 131,072 + 66,048 = 197,120).
template <scalar T>
void scale_triangle_on_device(gpu::device& dev, bool herm, char uplo, std::int64_t n, T beta, T* C, std::int64_t ldc,
                              std::size_t memory) {
  const auto scratch = [](std::int64_t w) { return temp_bytes(w, w, sizeof(T)) + packed_triangle_bytes(w, sizeof(T)); };
  std::int64_t w = std::clamp<std::int64_t>(std::int64_t(std::sqrt(double(memory) / (1.5 * sizeof(T)))), 1, std::max<std::int64_t>(n, 1));
  while (w > 1 && scratch(w) > memory) --w;
  with_kit(dev, 1, scratch(w), [&](device_kit& kit) {
    gpu::stream& s = *kit.streams[0];
    T* zeros = static_cast<T*>(kit.workspace);
    const std::size_t zeros_bytes = temp_bytes(w, w, sizeof(T));
    void* packed = static_cast<std::byte*>(kit.workspace) + zeros_bytes;
    const T zero(0);
    for (std::int64_t j = 0; j < n; j += w) {
      const std::int64_t b = std::min(w, n - j), rest = n - j - b;
      T* d = C + j + j * ldc;
      dev.fill_zero(zeros, zeros_bytes, s);  // (add_triangle overwrites them)
      dev.add_triangle(scalar_type_of<T>(), s, uplo, herm, b, zeros, w, &beta, d, ldc, packed);
      if (rest == 0) continue;
      T* r = uplo == 'L' ? d + b : d + b * ldc;
      const std::int64_t rows = uplo == 'L' ? rest : b, cols = uplo == 'L' ? b : rest;
      dev.geam(scalar_type_of<T>(), s, rows, cols, &zero, r, ldc, &beta, r, ldc, r, ldc);
    }
  });
}

template <scalar T>
void rank_k_on_device(gpu::device& dev, bool herm, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha,
                      const T* A, std::int64_t lda, T beta, T* C, std::int64_t ldc, const context& ctx) {
  if ((alpha == T(0) || k == 0) && beta == T(1)) return;
  if (alpha == T(0) || k == 0) return scale_triangle_on_device<T>(dev, herm, uplo, n, beta, C, ldc, on_device_memory(ctx, &dev));
  const problem p = rank_k_problem(scalar_type_of<T>(), herm ? operation::herk : operation::syrk, uplo, trans, n, k);
  run_on_device<T>(plan_on_device(p, on_device_memory(ctx, &dev)), dev, alpha, A, lda, A, lda, beta, C, ldc);
}

#define PRISM_INSTANTIATE(T)                                                                                        \
  template void run_on_device<T>(const plan&, gpu::device&, T, const T*, std::int64_t, const T*, std::int64_t, T,  \
                                 T*, std::int64_t);                                                                 \
  template void gemm_on_device<T>(gpu::device&, char, char, std::int64_t, std::int64_t, std::int64_t, T, const T*, \
                                  std::int64_t, const T*, std::int64_t, T, T*, std::int64_t, const context&);       \
  template void rank_k_on_device<T>(gpu::device&, bool, char, char, std::int64_t, std::int64_t, T, const T*,       \
                                    std::int64_t, T, T*, std::int64_t, const context&);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism::detail
