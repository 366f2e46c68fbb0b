// apps/gpu_report.hpp — the GPU level in the prism tool: the device report of `prism plan`
// and `prism run` with --gpus, and the GPU part of `prism tune`.
#pragma once

#include <prism/context.hpp>
#include <prism/machine.hpp>
#include <prism/plan.hpp>

#include <iosfwd>

namespace prism_app {

/// Prints, as '#' lines, each device's part of plan p: its box, C blocks, buffers and
/// slots, device memory, predicted link bytes each way beside the lower bound, and the
/// modelled time (prism::predict_gpu; `reads_c`: beta != 0).
void print_gpu_report(std::ostream& os, const prism::plan& p, const prism::context& ctx, bool reads_c);

/// Makes ctx run its GPU plans on emulated devices when it asks for more GPUs (set_gpus)
/// than this process has; says so on os. Returns true when it did.
bool emulate_missing_gpus(prism::context& ctx, std::ostream& os);

/// `prism tune`'s GPU part: with real GPUs present, measures the first one (gemm per type,
/// pinned copies each way, copies within it; best of `reps`) into d's gpu_* values, and
/// says what it found on stdout as '#' lines; without one, says the model's values stay.
void tune_gpus(prism::machine_description& d, int reps);

}  // namespace prism_app
