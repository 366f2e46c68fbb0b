// apps/gpu_report.cpp — the GPU level in the prism tool (gpu_report.hpp).
#include "gpu_report.hpp"

#include <prism/gpu.hpp>
#include <prism/machine.hpp>

#include "gpu/devices.hpp"
#include "gpu/measure.hpp"
#include "runtime/runtime.hpp"

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

namespace prism_app {

namespace {

std::string gigabytes(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f GB", bytes / 1e9);
  return buf;
}

}  // namespace

void print_gpu_report(std::ostream& os, const prism::plan& p, const prism::context& ctx, bool reads_c) {
  if (p.devices() == 0 || p.on_device()) return;  // on device operands nothing crosses the link
  const auto parts = prism::predict_gpu(p, reads_c, ctx);
  char line[512];
  os << "# GPU level: " << p.devices() << " device" << (p.devices() == 1 ? "" : "s") << ", " << gigabytes(double(p.device_memory()))
     << " of memory each for the plan; link bytes predicted for a call with beta " << (reads_c ? "!= 0" : "= 0")
     << " (model and bound: prism/gpu.hpp)\n";
  std::snprintf(line, sizeof line, "# %-6s %-22s %6s %4s %18s %12s %12s %12s %12s %6s %10s\n", "device", "part", "blocks",
                "bufs", "slots x bytes", "memory", "in", "out", "bound", "ratio", "model s");
  os << line;
  double in = 0, out = 0, bound = 0;
  for (const prism::gpu_part& g : parts) {
    const std::string shape = std::to_string(g.shape.m) + "x" + std::to_string(g.shape.n) + "x" + std::to_string(g.shape.k) +
                              (g.triangle != 0 ? std::string(" ") + g.triangle : std::string());
    const std::string slots = std::to_string(g.slots) + " x " + std::to_string(g.slot_bytes);
    std::snprintf(line, sizeof line, "# %-6d %-22s %6d %4d %18s %12s %12s %12s %12s %6.3f %10.4g\n", g.device, shape.c_str(),
                  g.blocks, g.buffers, slots.c_str(), gigabytes(double(g.device_bytes)).c_str(), gigabytes(g.bytes_in).c_str(),
                  gigabytes(g.bytes_out).c_str(), gigabytes(g.bound).c_str(), g.bound > 0 ? (g.bytes_in + g.bytes_out) / g.bound : 0.0,
                  g.seconds);
    os << line;
    in += g.bytes_in, out += g.bytes_out, bound += g.bound;
  }
  if (parts.size() > 1) {
    std::snprintf(line, sizeof line, "# %-6s %-22s %6s %4s %18s %12s %12s %12s %12s %6.3f\n", "all", "", "", "", "", "",
                  gigabytes(in).c_str(), gigabytes(out).c_str(), gigabytes(bound).c_str(), bound > 0 ? (in + out) / bound : 0.0);
    os << line;
  }
}

bool emulate_missing_gpus(prism::context& ctx, std::ostream& os) {
  const auto& set = prism::detail::devices_of(ctx);
  if (ctx.gpus() <= set.count()) return false;
  const std::size_t bytes = ctx.gpu_memory() > 0 ? ctx.gpu_memory() : std::size_t(1) << 30;
  ctx.use_emulated_gpus(ctx.gpus(), bytes);
  os << "# " << set.status << "; running on " << ctx.gpus() << " emulated device" << (ctx.gpus() == 1 ? "" : "s")
     << " of " << gigabytes(double(bytes)) << " (host memory, every byte across the link counted)\n";
  return true;
}

void tune_gpus(prism::machine_description& d, int reps) {
  const double copy = prism::detail::gpu::host_copy_rate(reps);
  d.set_measured(prism::machine_key::host_copy_bandwidth, copy);
  std::printf("# host_copy_bandwidth: %.4g B/s measured (one thread, memcpy of 256 MiB)\n", copy);
  const auto set = prism::detail::gpu::process_devices();
  prism::detail::gpu::device* real = nullptr;
  for (const auto& dev : set->devices)
    if (!dev->emulated()) {
      real = dev.get();
      break;
    }
  if (real == nullptr) {
    std::printf("# gpu_*: left to the model (%s)\n", set->status.c_str());
    return;
  }
  const prism::detail::gpu::measured_rates r = prism::detail::gpu::measure(*real, reps);
  const prism::machine_key flops[4] = {prism::machine_key::gpu_flops_s, prism::machine_key::gpu_flops_d,
                                       prism::machine_key::gpu_flops_c, prism::machine_key::gpu_flops_z};
  for (int t = 0; t < 4; ++t) d.set_measured(flops[t], r.flops[t]);
  d.set_measured(prism::machine_key::gpu_link_in, r.link_in);
  d.set_measured(prism::machine_key::gpu_link_out, r.link_out);
  d.set_measured(prism::machine_key::gpu_memory_bandwidth, r.memory_bandwidth);
  d.set_measured(prism::machine_key::gpu_register_bandwidth, r.register_rate);
  std::printf("# gpu: %s: gemm s %.4g, d %.4g, c %.4g, z %.4g flop/s; link in %.4g, out %.4g B/s; memory %.4g B/s; "
              "pinning %.4g B/s (measured)\n",
              real->name().c_str(), r.flops[0], r.flops[1], r.flops[2], r.flops[3], r.link_in, r.link_out,
              r.memory_bandwidth, r.register_rate);
}

}  // namespace prism_app
