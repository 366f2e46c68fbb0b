// lib/dist/syrk.cpp — prism::dist::syrk / herk: the rank level's execution of a rank-k
// scheme on prism's native layout. It checks and agrees the arguments over the
// communicator, then runs the rank-k executor (lib/mpi/rank_k_exchange): exactly the
// messages prism::rank_k_model lists, so the bytes counted equal its prediction.
#include <prism/bounds.hpp>
#include <prism/dist.hpp>
#include <prism/error.hpp>

#include "../environment/environment.hpp"
#include "../mpi/comm.hpp"
#include "../mpi/rank_k_exchange.hpp"
#include "../runtime/runtime.hpp"
#include "layout_access.hpp"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <string>

namespace prism::dist {

namespace detail {
void set_last_traffic(const traffic& t);
}

namespace {

using mpi::imag_bits;
using mpi::real_bits;

// What this rank's arguments get wrong, or "" (then the agreement decides).
template <scalar T>
std::string check_local(MPI_Comm comm, const layout& L, operation op, char uplo, char trans, const matrix<T>& A,
                        const matrix<T>& C) {
  const problem& pr = L.laid_out();
  int same = MPI_UNEQUAL;
  MPI_Comm_compare(comm, L.comm(), &same);
  if (same != MPI_CONGRUENT && same != MPI_IDENT) return "comm is not the communicator of A's layout";
  if (!L.is_rank_k()) return "A's layout is for a gemm plan (make it from a rank-k problem: prism::rank_k_problem)";
  if (C.where() != A.where()) return "A and C must be laid out by one layout";
  if (A.which() != operand::a || C.which() != operand::c) return "A and C must hold operands A and C";
  if (pr.op != op) return std::string("the layout is for ") + to_string(pr.op) + ", not " + to_string(op);
  if (std::toupper(uplo) != pr.uplo) return std::string("uplo ") + uplo + " is not the layout's " + pr.uplo;
  char t = char(std::toupper(trans));
  if (op == operation::syrk && !is_complex(pr.type) && t == 'C') t = 'T';
  if (t != pr.transa) return std::string("trans ") + trans + " is not the layout's " + pr.transa;
  if (A.size() != L.local_size(operand::a) || C.size() != L.local_size(operand::c))
    return "a matrix's local storage does not match its layout";
  return "";
}

template <scalar T>
void rank_k_impl(MPI_Comm comm, operation op, char uplo, char trans, T alpha, const matrix<T>& A, T beta, matrix<T>& C,
                 const context& ctx) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t control0 = mpi::control_traffic().bytes;  // for PRISM_STATS's line
  traffic last;
  const layout& L = *A.where();
  const char* routine = op == operation::herk ? "prism::dist::herk" : "prism::dist::syrk";
  const std::string local = check_local(comm, L, op, uplo, trans, A, C);
  const problem& pr = L.laid_out();
  mpi::agree(L.comm(), routine,
             {{"uplo", 1, std::toupper(uplo)},
              {"trans", 2, std::toupper(trans)},
              {"n", 3, pr.n},
              {"k", 4, pr.k},
              {"alpha", 5, real_bits(alpha)},
              {"alpha (imaginary part)", 5, imag_bits(alpha)},
              {"beta", 8, real_bits(beta)},
              {"beta (imaginary part)", 8, imag_bits(beta)},
              {"layout", 0, L.plan_hash()}},
             local);
  const bool measure = prism::detail::process_environment().stats.get();
  if (measure) prism::detail::runtime_of(ctx).pool().trim();
  const rank_k_model& m = L.rank_k();
  if (pr.n > 0) {
    if (pr.k == 0 || alpha == T(0)) {  // C = beta C (reference ?herk also makes the diagonal real)
      if (beta != T(1)) {
        C.for_each([&](std::int64_t i, std::int64_t j, T& v) {
          v = beta == T(0) ? T(0) : beta * v;
          if constexpr (!std::same_as<T, float> && !std::same_as<T, double>)
            if (op == operation::herk && i == j) v = T(v.real());
        });
      }
    } else {
      mpi::exchange_counts n;
      mpi::run_rank_k<T>(m, L.comm(), alpha, A.data(), beta, C.data(), ctx,
                         [&](std::size_t bytes) { return detail::layout_access::buffers(L, bytes); }, n);
      last.bytes_received = n.bytes_received, last.bytes_sent = n.bytes_sent;
      last.messages_received = n.messages_received, last.messages_sent = n.messages_sent;
    }
  }
  last.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (measure) {
    last.bytes_allocated = (A.size() + C.size()) * std::int64_t(sizeof(T)) +
                           std::int64_t(detail::layout_access::buffer_bytes(L) + prism::detail::runtime_of(ctx).pool().snapshot().peak_on_loan);
    const double elem = double(sizeof(T));
    const mpi::call_stats st = mpi::reduce_call_stats(L.comm(),
                                                      {double(last.bytes_received), double(last.messages_received),
                                                       last.seconds, double(last.bytes_allocated),
                                                       double(L.predicted_peak_bytes())},
                                                      control0);
    const std::vector<double>& mx = st.max;
    const std::vector<double>& sum = st.sum;
    if (L.rank() == 0) {
      const double bound = bounds::syrk_parallel_io_minus_owned(pr.n, pr.k, L.size()) * elem;
      std::fprintf(stderr,
                   "prism-dist: %c%s %c%c n %lld k %lld on %d ranks (%d used, scheme %s): received max %.3f MB, mean "
                   "%.3f MB (predicted max %.3f); SYRK bound %.3f MB, ratio %.3f; messages max %.0f; %.4f s; memory "
                   "max %.3f MB (predicted max %.3f MB); besides these, prism's collectives at most %.0f B to a rank\n",
                   char(pr.type), to_string(op), pr.uplo, pr.transa, (long long)pr.n, (long long)pr.k, L.size(),
                   m.ranks(), m.scheme().to_string().c_str(), mx[0] / 1e6, sum[0] / L.size() / 1e6,
                   double(m.max_received()) * elem / 1e6, bound / 1e6, bound > 0 ? mx[0] / bound : 0.0, mx[1], mx[2],
                   mx[3] / 1e6, mx[4] / 1e6, st.control_max);
    }
  }
  detail::set_last_traffic(last);
}

}  // namespace

template <scalar T>
void syrk(MPI_Comm comm, char uplo, char trans, T alpha, const matrix<T>& A, T beta, matrix<T>& C, const context& ctx) {
  rank_k_impl<T>(comm, operation::syrk, uplo, trans, alpha, A, beta, C, ctx);
}

template <scalar T>
  requires(std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>)
void herk(MPI_Comm comm, char uplo, char trans, real_type<T> alpha, const matrix<T>& A, real_type<T> beta, matrix<T>& C,
          const context& ctx) {
  rank_k_impl<T>(comm, operation::herk, uplo, trans, T(alpha), A, T(beta), C, ctx);
}

#define PRISM_INSTANTIATE(T) \
  template void syrk<T>(MPI_Comm, char, char, T, const matrix<T>&, T, matrix<T>&, const context&);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE
template void herk<std::complex<float>>(MPI_Comm, char, char, float, const matrix<std::complex<float>>&, float,
                                        matrix<std::complex<float>>&, const context&);
template void herk<std::complex<double>>(MPI_Comm, char, char, double, const matrix<std::complex<double>>&, double,
                                         matrix<std::complex<double>>&, const context&);

}  // namespace prism::dist
