// lib/dist/gemm.cpp — prism::dist::gemm: the rank level's execution of a plan on prism's
// native layout. It checks and agrees the arguments over the communicator, then runs the
// rank level's one executor (lib/mpi/rank_exchange) with the native ownership
// (lib/ranks/ownership): exactly the messages prism::rank_model lists, so the bytes
// counted equal its prediction. Buffers are sized by the exchange rule and kept by the
// layout (reused by later calls); only the calling thread calls MPI.
#include <prism/bounds.hpp>
#include <prism/dist.hpp>
#include <prism/error.hpp>

#include "../environment/environment.hpp"
#include "../recursive/executor.hpp"
#include "../runtime/runtime.hpp"
#include "../mpi/comm.hpp"
#include "../mpi/rank_exchange.hpp"
#include "layout_access.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace prism::dist {

namespace {

using mpi::check_mpi;
using mpi::imag_bits;
using mpi::real_bits;

thread_local traffic last;

template <scalar T>
void gemm_impl(MPI_Comm comm, const plan* p_given, const problem* pr_given, T alpha, const matrix<T>& A,
               const matrix<T>& B, T beta, matrix<T>& C, const context& ctx) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t control0 = mpi::control_traffic().bytes;  // for PRISM_STATS's line
  last = traffic{};
  const layout& L = *A.where();
  if (L.is_rank_k())
    mpi::agree(L.comm(), "prism::dist::gemm", {}, "A's layout is for a rank-k update (use prism::dist::syrk / herk)");
  const plan& p = L.source();
  const problem& pr = p.problem();
  std::string local;
  int same = MPI_UNEQUAL;
  MPI_Comm_compare(comm, L.comm(), &same);
  if (same != MPI_CONGRUENT && same != MPI_IDENT) local = "comm is not the communicator of A's layout";
  else if (B.where() != A.where() || C.where() != A.where()) local = "A, B and C must be laid out by one layout";
  else if (A.which() != operand::a || B.which() != operand::b || C.which() != operand::c)
    local = "A, B and C must hold operands A, B and C";
  else if (p_given != nullptr && !(*p_given == p)) local = "the plan is not the one the matrices are laid out for";
  else if (pr_given != nullptr && !(pr_given->m == pr.m && pr_given->n == pr.n && pr_given->k == pr.k &&
                                    pr_given->type == pr.type &&
                                    std::toupper(pr_given->transa) == pr.transa && std::toupper(pr_given->transb) == pr.transb))
    local = "the problem is not the one the matrices are laid out for";
  else if (A.size() != L.local_size(operand::a) || B.size() != L.local_size(operand::b) || C.size() != L.local_size(operand::c))
    local = "a matrix's local storage does not match its layout";
  else {
    try {
      prism::detail::check_fits(p, ctx, true);
    } catch (const plan_error& e) {
      local = e.what();
    }
  }
  const problem& shown = pr_given != nullptr ? *pr_given : pr;
  mpi::agree(L.comm(), "prism::dist::gemm",
                {{"transa", 1, std::toupper(shown.transa)},
                 {"transb", 2, std::toupper(shown.transb)},
                 {"m", 3, shown.m},
                 {"n", 4, shown.n},
                 {"k", 5, shown.k},
                 {"alpha", 6, real_bits(alpha)},
                 {"alpha (imaginary part)", 6, imag_bits(alpha)},
                 {"beta", 9, real_bits(beta)},
                 {"beta (imaginary part)", 9, imag_bits(beta)},
                 {"plan", 0, L.plan_hash()}},
                local);
  const bool measure = prism::detail::process_environment().stats.get();
  // Measuring: the pool lets go of blocks from earlier calls, so its peak loan is this call's.
  if (measure) prism::detail::runtime_of(ctx).pool().trim();
  if (pr.m > 0 && pr.n > 0) {
    if (pr.k == 0 || alpha == T(0)) {  // C = beta C, without reading C when beta = 0
      T* c = C.data();
      for (std::int64_t e = 0; e < C.size(); ++e) c[e] = beta == T(0) ? T(0) : beta * c[e];
    } else {  // every rank, also those the plan leaves idle: they take part in the failure agreement
      const ranks::native_ownership own(L.model(), L.rank(), L.size());
      mpi::exchange_counts n;
      mpi::run_exchange<T>(own, L.comm(), alpha, A.data(), B.data(), beta, C.data(), ctx,
                           [&](std::size_t bytes) { return detail::layout_access::buffers(L, bytes); }, n);
      last.bytes_received = n.bytes_received, last.bytes_sent = n.bytes_sent;
      last.messages_received = n.messages_received, last.messages_sent = n.messages_sent;
    }
  }
  last.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (measure) {
    // prism's own memory on this rank: its pieces, the layout's buffers, the workspace lent.
    last.bytes_allocated = (A.size() + B.size() + C.size()) * std::int64_t(sizeof(T)) +
                           std::int64_t(detail::layout_access::buffer_bytes(L) + prism::detail::runtime_of(ctx).pool().snapshot().peak_on_loan);
    const rank_model& m = L.model();
    const double elem = double(sizeof(T));
    const double predicted = double(L.predicted_peak_bytes());
    const mpi::call_stats st = mpi::reduce_call_stats(
        L.comm(), {double(last.bytes_received), double(last.messages_received), last.seconds, double(last.bytes_allocated), predicted},
        control0);
    const std::vector<double>& mx = st.max;
    const std::vector<double>& sum = st.sum;
    if (L.rank() == 0) {
      const double bound = bounds::parallel_io_minus_owned(pr.m, pr.n, pr.k, L.size(), bounds::unlimited) * elem;
      std::fprintf(stderr,
                   "prism-dist: %c%c%c %lldx%lldx%lld on %d ranks (%d used, grid %s): received max %.3f MB, mean "
                   "%.3f MB (predicted max %.3f, mean %.3f); bound %.3f MB; messages max %.0f; %.4f s; memory max "
                   "%.3f MB (predicted max %.3f MB); besides these, prism's collectives at most %.0f B to a rank\n",
                   char(pr.type), pr.transa, pr.transb, (long long)pr.m, (long long)pr.n, (long long)pr.k, L.size(),
                   m.ranks(), m.grid().c_str(), mx[0] / 1e6, sum[0] / L.size() / 1e6,
                   double(m.max_received()) * elem / 1e6, m.mean_received() * elem * m.ranks() / L.size() / 1e6,
                   bound / 1e6, mx[1], mx[2], mx[3] / 1e6, mx[4] / 1e6, st.control_max);
    }
  }
}

}  // namespace

template <scalar T>
void gemm(MPI_Comm comm, const plan& p, T alpha, const matrix<T>& A, const matrix<T>& B, T beta, matrix<T>& C,
          const context& ctx) {
  gemm_impl<T>(comm, &p, nullptr, alpha, A, B, beta, C, ctx);
}

template <scalar T>
void gemm(MPI_Comm comm, const problem& p, T alpha, const matrix<T>& A, const matrix<T>& B, T beta, matrix<T>& C,
          const context& ctx) {
  gemm_impl<T>(comm, nullptr, &p, alpha, A, B, beta, C, ctx);
}

traffic last_traffic() { return last; }

namespace detail {
/// The counts prism::dist::syrk / herk leave for last_traffic.
void set_last_traffic(const traffic& t) { last = t; }
}  // namespace detail

#define PRISM_INSTANTIATE(T)                                                                                 \
  template void gemm<T>(MPI_Comm, const plan&, T, const matrix<T>&, const matrix<T>&, T, matrix<T>&,         \
                        const context&);                                                                     \
  template void gemm<T>(MPI_Comm, const problem&, T, const matrix<T>&, const matrix<T>&, T, matrix<T>&,      \
                        const context&);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism::dist
