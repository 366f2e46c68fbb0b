// lib/dist/syrk.cpp — prism::dist::syrk / herk: a rank-k scheme's schedule run on prism's
// native layout by the rank level's one executor, as prism::dist::gemm runs a plan's
// (gemm.cpp, detail::native_call): the arguments checked and agreed over the communicator,
// then exactly the messages prism::rank_model counts.
#include <prism/bounds.hpp>
#include <prism/dist.hpp>
#include <prism/error.hpp>

#include "../mpi/comm.hpp"
#include "layout_access.hpp"

#include <cctype>
#include <cstdio>
#include <string>

namespace prism::dist {

namespace {

using mpi::imag_bits;
using mpi::real_bits;

// What this rank's arguments get wrong, or "" (then the agreement decides).
template <scalar T>
std::string check_local(const layout& L, operation op, char uplo, char trans, const matrix<T>& A, const matrix<T>& C) {
  const problem& pr = L.laid_out();
  if (pr.op == operation::gemm) return "A's layout is for a gemm plan (make it from a rank-k problem: prism::rank_k_problem)";
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
  const char* routine = op == operation::herk ? "prism::dist::herk" : "prism::dist::syrk";
  if (!A.where() || !C.where()) detail::no_layout(comm, routine, 9, A.where() ? A.where().get() : C.where().get());
  const layout& L = detail::agreement_layout(comm, {A.where().get(), C.where().get()});
  const problem& pr = L.laid_out();
  detail::native_call<T>(
      comm, L, routine,
      {{"uplo", 1, std::toupper(uplo)},
       {"trans", 2, std::toupper(trans)},
       {"n", 3, pr.n},
       {"k", 4, pr.k},
       {"alpha", 5, real_bits(alpha), true},
       {"alpha (imaginary part)", 5, imag_bits(alpha), true},
       {"beta", 8, real_bits(beta), true},
       {"beta (imaginary part)", 8, imag_bits(beta), true},
       {"layout", 0, L.plan_hash()}},
      check_local(L, op, uplo, trans, A, C), alpha, A.data(), nullptr, beta, C, ctx, [&](const mpi::call_stats& st) {
        const rank_model& m = L.model();
        const double elem = double(sizeof(T)), bound = bounds::syrk_parallel_io_minus_owned(pr.n, pr.k, L.size()) * elem;
        std::fprintf(stderr,
                     "prism-dist: %c%s %c%c n %lld k %lld on %d ranks (%d used, scheme %s): received max %.3f MB, mean "
                     "%.3f MB (predicted max %.3f); SYRK bound %.3f MB, ratio %.3f; messages max %.0f; %.4f s; memory "
                     "max %.3f MB (predicted max %.3f MB); besides these, prism's collectives at most %.0f B to a rank\n",
                     char(pr.type), to_string(op), pr.uplo, pr.transa, (long long)pr.n, (long long)pr.k, L.size(), m.ranks(),
                     m.grid().c_str(), st.max[0] / 1e6, st.sum[0] / L.size() / 1e6, double(m.max_received()) * elem / 1e6,
                     bound / 1e6, bound > 0 ? st.max[0] / bound : 0.0, st.max[1], st.max[2], st.max[3] / 1e6, st.max[4] / 1e6,
                     st.control_max);
      });
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
