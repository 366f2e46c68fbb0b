// lib/recursive/executor.hpp — runs a plan's tree over the operands.
#pragma once

#include <prism/context.hpp>
#include <prism/plan.hpp>

#include <cstdint>

namespace prism::detail {

/// Runs plan `p` (already validated, sizes non-trivial) inside ctx's task arena:
/// C = alpha op(A) op(B) + beta C, column-major, trans letters from the plan.
template <scalar T>
void run_plan(const plan& p, T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb,
              T beta, T* C, std::int64_t ldc, const context& ctx);

}  // namespace prism::detail
