// lib/recursive/gpu_level.hpp — the GPU level of a plan: its device subtrees, their
// schedules (lib/gpu/schedule.hpp) and the planner rules that build them.
//
// A plan with devices cuts its box over them with gpu bfs steps (the largest edge into one
// part per device, or a triangle's k or diagonal); each device's part is a device subtree
// of gpu dfs steps: C blocks (m and n cuts, or a triangle's diagonal cuts) that fit its
// memory, then k chunks, then gpu leaves. The planner weighs block grids and chunk depths
// by the modelled time of their schedules and keeps the fastest (docs/gpu.md).
#pragma once

#include <prism/context.hpp>
#include <prism/plan.hpp>

#include "../gpu/devices.hpp"
#include "../gpu/schedule.hpp"

#include <cstddef>
#include <optional>
#include <vector>

namespace prism::detail {

/// The type, trans letters and kind (gemm or rank-k) of plan p's product, as schedules take it.
gpu::product_shape device_product(const problem& p);

/// One device subtree of a plan: its root (a node on one device under one spanning more, or
/// the root on one device), and whether it writes a fresh temporary (a part after the first
/// of a bfs k cut: beta 0, so it never reads its C block) rather than C.
struct device_root {
  int node = 0;          ///< the subtree's root
  bool fresh = false;    ///< writes a k cut's temporary C' (beta 0)
};

/// The device subtrees of p in depth-first order; empty for a plan without devices.
std::vector<device_root> device_roots(const plan& p);

/// The leaves of the device subtree rooted at node `root` of a plan's nodes, depth first.
std::vector<gpu::device_leaf> device_leaves(const std::vector<node>& nodes, int root);

/// The schedule of the device subtree at `root` in the plan's device memory; `reads_c`:
/// the call's beta is not 0 (C blocks are copied in).
gpu::device_schedule device_schedule_of(const plan& p, int root, bool reads_c);

/// Throws prism::plan_error, naming the node, when a device subtree of p does not fit the
/// plan's device memory (plan::validate calls it).
void check_device_subtrees(const plan& p);

/// Throws prism::plan_error when plan p needs more devices than `devices` holds, more
/// memory than one of them has, or a device-side leading dimension (a C block's or a
/// chunk's rows) above one's 2-D copy pitch (check_fits calls it before anything is computed).
void check_devices(const plan& p, const gpu::device_set& devices);

/// What the planner knows of the devices a plan spreads over.
struct gpu_target {
  int devices = 1;           ///< GPUs
  std::size_t memory = 0;    ///< bytes of each one's memory the plan may use
  std::size_t max_pitch = 2147483647;  ///< the smallest of their 2-D copy pitches in bytes (device::max_pitch)
  gpu::device_rates rates;   ///< each one's modelled rates
  double device_seconds = 0; ///< when the model decided: the GPU plan's modelled time, link included
  double host_seconds = 0;   ///< when the model decided: the host plan's (flops over threads x rank_flops_per_thread)
};

/// The GPUs a plan of p under ctx runs on (devices 0: a host plan) and what the planner
/// knows of them. With ctx.gpus() = n > 0: n (fewer when p cannot give each a part), the
/// memory ctx.gpu_memory() or 15/16 of the smallest device's (the description's
/// gpu_memory without devices). With -1 (the default): the process's real (not emulated)
/// devices, when the modelled time of the plan on them is below the host's (flops over
/// threads x rank_flops_per_thread); else 0. Never for rank plans or empty products.
gpu_target choose_gpus(const problem& p, const context& ctx);

/// The plan of p on the GPUs choose_gpus picks, or nothing when it picks none (a host
/// plan); the plan it weighed in the model's choice is the one returned, not made twice.
std::optional<plan> plan_on_gpus(const problem& p, const context& ctx);

/// p (gemm, or a rank_k_problem) planned on t.devices GPUs: gpu bfs steps, then each
/// device's subtree; the plan's device memory is t.memory.
plan make_gpu_plan(const problem& p, const context& ctx, const gpu_target& t);

/// The modelled seconds of a plan with GPUs: the slowest device's schedule (C read, as
/// for beta != 0), with the description's rates for its type.
double modelled_gpu_seconds(const plan& p, const gpu::device_rates& rates);

/// A device's modelled rates for type t from machine description d.
gpu::device_rates device_rates_of(const machine_description& d, scalar_type t);

/// Appends to `nodes` the gpu steps of box b (the whole product p, or a part) on resources
/// r (r.devices.count GPUs): gpu bfs over the devices, then each device's subtree; returns
/// its root index. `uplo`: the triangle of a syrk / herk plan whose root b is (0: gemm).
int plan_gpu(std::vector<node>& nodes, const problem& p, const box& b, const resources& r, const gpu_target& t,
             char uplo);

}  // namespace prism::detail
