// prism/gpu.hpp — the GPU level as a user sees it: which devices this process has, and
// what a plan with GPUs moves across each device's link, beside the lower bound.
//
// A plan with GPUs (context::set_gpus, or the model's choice with real devices present)
// gives each device a part of the product; each device keeps blocks of C in its memory one
// after another while chunks of A and B stream in from host memory (docs/gpu.md). Nothing
// here needs a GPU: predict_gpu works on any plan, and PRISM_GPU=emulate:N:SIZE (or
// context::use_emulated_gpus) runs GPU plans on emulated devices.
#pragma once

#include <prism/context.hpp>
#include <prism/plan.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace prism {

/// One device's part of a plan with GPUs, as the data-movement model predicts it.
struct gpu_part {
  int device = 0;                 ///< device index
  box shape;                      ///< the box it computes (for a syrk / herk plan's triangle: its n x n x k)
  char triangle = 0;              ///< 'U' / 'L' when the part is a diagonal triangle of a syrk / herk plan
  int blocks = 0;                 ///< C blocks it keeps in its memory one after another (visits)
  int buffers = 0;                ///< C buffers (2: a block's write-back overlaps the next block's products)
  int slots = 0;                  ///< chunk slots beside them
  std::size_t slot_bytes = 0;     ///< bytes of one slot
  std::size_t device_bytes = 0;   ///< device memory it allocates
  double bytes_in = 0;            ///< predicted bytes host -> device (chunks of A and B, C blocks read)
  double bytes_out = 0;           ///< predicted bytes device -> host (C blocks written back)
  double bound = 0;               ///< lower bound on bytes_in + bytes_out (see predict_gpu)
  double flops = 0;               ///< real flops it computes (a diagonal triangle's whole block)
  double seconds = 0;             ///< modelled time (the description's device rates)
};

/// The device parts of plan p, in plan order; empty for a plan without GPUs. `reads_c`: the
/// call's beta is not 0 (C blocks cross the link both ways). The bound of a part with
/// memory S (elements) is the red-blue bound with the device memory as the fast memory:
/// bounds::sequential_io (every element once, or 2 m n k / sqrt(S) - 2S), and for a triangle
/// the larger of n k + n(n+1)/2 and n^2 k / sqrt(2 S) (Beaumont et al., SPAA 2022); plus the
/// C block read when reads_c. Rates for `seconds` come from ctx's machine description.
std::vector<gpu_part> predict_gpu(const plan& p, bool reads_c, const context& ctx = default_context());

/// One line: this process's GPUs (PRISM_GPU=off, emulate:N:SIZE, or the CUDA devices found
/// at run time), or why there are none, e.g. "no GPU: cudaGetDeviceCount: no CUDA-capable
/// device is detected".
std::string gpu_status();

}  // namespace prism
