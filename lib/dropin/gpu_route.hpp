// lib/dropin/gpu_route.hpp — whether a drop-in ?gemm / ?syrk / ?herk call goes to the GPUs:
// PRISM_BLAS_ROUTE=gpu sends every call there; auto asks the GPU level's model (a call goes
// when the modelled time of its GPU plan, link included, is below the host plan's: the rule
// prism::gemm applies with a default context, detail::choose_gpus). Emulated devices are
// never the model's choice; PRISM_GPU=off leaves no device to choose.
#pragma once

#include "../environment/environment.hpp"

#include <prism/context.hpp>
#include <prism/types.hpp>

#include <string>

namespace prism::dropin {

/// What the GPU route says of one call.
struct gpu_verdict {
  /// usual: the rest of the routing decides; gpu: prism on the GPUs; host: prism's
  /// recursion on the host (PRISM_BLAS_ROUTE=gpu with no device).
  enum class where { usual, gpu, host };
  where to = where::usual;       ///< the verdict
  const char* why = nullptr;     ///< the reason, for PRISM_VERBOSE
  const char* detail = nullptr;  ///< the model's figures or the devices' status, or nullptr (valid until this thread's next call)
};

/// The GPU route of problem p (a gemm, or a syrk / herk problem from rank_k_problem) under
/// PRISM_BLAS_ROUTE `mode` and the drop-in's context (nullptr, malformed settings: usual).
/// auto: calls below ctx's small-call threshold stay on the CPU without asking the model;
/// the others go when the context's plan for them (cached) runs on GPUs. `explain`: fill
/// detail with the modelled seconds of both sides (PRISM_VERBOSE; plans the GPU side again).
gpu_verdict gpu_route(detail::route_choice mode, const context* ctx, const problem& p, bool explain);

/// The context a call the GPU route took runs with: under PRISM_BLAS_ROUTE=gpu a copy of
/// ctx on all of its devices (made once), else ctx itself (its model chose the GPUs).
const context& gpu_context(detail::route_choice mode, const context& ctx);

/// "gpu: 1 CUDA device: ..." or "gpu: no GPU: PRISM_GPU=off": the devices the GPU route
/// saw, or "" when no call made it look (safe at exit: a copy, never freed).
std::string gpu_status_line();

}  // namespace prism::dropin
