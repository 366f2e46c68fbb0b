// lib/dropin/gpu_route.cpp — the drop-in's GPU route (gpu_route.hpp).
#include "gpu_route.hpp"

#include <prism/plan.hpp>

#include "../environment/run_once.hpp"
#include "../recursive/gpu_level.hpp"
#include "../recursive/local_planner.hpp"
#include "../runtime/runtime.hpp"

#include <atomic>
#include <cstdio>

namespace prism::dropin {

namespace {

bool real_devices(const detail::gpu::device_set& set) {
  for (const auto& d : set.devices)
    if (!d->emulated()) return true;
  return false;
}

// The devices' status as first seen, kept for the PRISM_STATS summary at exit (a copy never
// freed: the device set itself may be gone by then).
std::atomic<const std::string*> seen{nullptr};
detail::run_once seen_once;

const detail::gpu::device_set& devices(const context& ctx) {
  const detail::gpu::device_set& set = detail::devices_of(ctx);
  seen_once([&] { seen.store(new std::string(set.status), std::memory_order_release); });
  return set;
}

// The model's two figures, e.g. "GPU 1.23 ms with the link < host 4.56 ms".
const char* figures(const problem& p, const context& ctx) {
  thread_local char line[160];  // (trivially destructible: calls may come at exit, docs/dropin.md)
  const detail::gpu_target t = detail::choose_gpus(p, ctx);
  std::snprintf(line, sizeof line, "GPU %.4g ms with the link %s host %.4g ms", t.device_seconds * 1e3,
                t.devices > 0 ? "<" : ">=", t.host_seconds * 1e3);
  return line;
}

}  // namespace

gpu_verdict gpu_route(detail::route_choice mode, const context* ctx, const problem& p, bool explain) {
  using where = gpu_verdict::where;
  if (ctx == nullptr || mode == detail::route_choice::prism || mode == detail::route_choice::backend) return {};
  if (mode == detail::route_choice::gpu) {
    const detail::gpu::device_set& set = devices(*ctx);
    if (set.count() == 0) return {where::host, "PRISM_BLAS_ROUTE=gpu", set.status.c_str()};  // "no GPU: why"
    return {where::gpu, "PRISM_BLAS_ROUTE=gpu", set.status.c_str()};
  }
  // Small calls stay on the CPU without a look at the devices (which loads CUDA's libraries).
  if (p.flops() < ctx->small_flops() || !real_devices(devices(*ctx))) return {};
  const auto pl = detail::runtime_of(*ctx).cached_plan(p, [&] { return std::make_shared<const plan>(detail::make_local_plan(p, *ctx)); });
  if (pl->devices() == 0) return {};
  return {where::gpu, "the GPU model: its time with the link below the host's", explain ? figures(p, *ctx) : nullptr};
}

const context& gpu_context(detail::route_choice mode, const context& ctx) {
  if (mode != detail::route_choice::gpu) return ctx;
  static const context& forced = *new context([&] {  // never destroyed: calls may come at exit (docs/dropin.md)
    context c = ctx;
    c.set_gpus(std::max(1, detail::devices_of(ctx).count()));
    return c;
  }());
  return forced;
}

std::string gpu_status_line() {
  const std::string* s = seen.load(std::memory_order_acquire);
  return s == nullptr ? std::string() : "gpu: " + *s;
}

}  // namespace prism::dropin
