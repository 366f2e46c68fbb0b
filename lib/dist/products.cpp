// lib/dist/products.cpp — prism::dist::gemm, syrk and herk: the arguments checked and agreed over
// the communicator, then the schedule run on prism's native layout by the rank level's one
// executor (lib/mpi/rank_exchange), exactly the messages prism::rank_model counts.
#include <prism/bounds.hpp>
#include <prism/dist.hpp>
#include <prism/error.hpp>

#include "../environment/environment.hpp"
#include "../mpi/comm.hpp"
#include "../mpi/rank_exchange.hpp"
#include "../recursive/executor.hpp"
#include "../runtime/runtime.hpp"
#include "layout_access.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

namespace prism::dist {

namespace {

using detail::layout_access;
using mpi::imag_bits;
using mpi::real_bits;

// The process's last call's counts (a rank is a process; its calls may come from any thread).
std::mutex last_lock;
traffic last;

// C = beta C when k = 0 or alpha = 0 (herk: the diagonal made real), else the schedule run
// on the native layout; t gets the counts and (PRISM_STATS) the memory; returns the values
// PRISM_STATS's line reduces (received, messages, seconds, memory, predicted memory) when `measure`.
template <scalar T>
std::vector<double> run_native(const layout& L, T alpha, const T* A, const T* B, T beta, matrix<T>& C, const context& ctx,
                               bool measure, traffic& t) {
  const auto t0 = std::chrono::steady_clock::now();
  const problem& pr = L.laid_out();
  // Measuring: the pool lets go of blocks from earlier calls, so its peak loan is this call's.
  if (measure) prism::detail::runtime_of(ctx).pool().trim();
  if (pr.m > 0 && pr.n > 0 && (pr.k == 0 || alpha == T(0))) {  // C = beta C, without reading C when beta = 0
    if (beta != T(1))  // (beta = 1: C untouched, a herk diagonal's imaginary parts too, as reference ?herk)
      C.for_each([&](std::int64_t i, std::int64_t j, T& v) {
        if constexpr (!std::same_as<T, float> && !std::same_as<T, double>)
          if (pr.op == operation::herk && i == j) {  // Im C(j, j) is never read: a real product
            v = beta == T(0) ? T(0) : T(beta.real() * v.real());
            return;
          }
        v = beta == T(0) ? T(0) : beta * v;
      });
  } else if (pr.m > 0 && pr.n > 0) {  // every rank, also those the plan leaves idle: they take part in the failure agreement
    std::optional<ranks::native_ownership> own;
    try {
      own.emplace(ranks::schedule_of(L.model()), L.rank(), L.size());
    } catch (const std::exception& e) {  // the others hear of it where they agree on their buffers
      mpi::agree_local_step(L.comm(), L.rank(), std::string("its view of the layout could not be built: ") + e.what(), true);
    }
    mpi::exchange_counts n;
    mpi::run_exchange<T>(*own, L.comm(), alpha, A, B, beta, C.data(), ctx,
                         [&](std::size_t bytes) { return layout_access::buffers(L, bytes); }, n);
    t.bytes_received = n.bytes_received, t.bytes_sent = n.bytes_sent;
    t.messages_received = n.messages_received, t.messages_sent = n.messages_sent;
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!measure) return {};
  // prism's own memory on this rank: its pieces, the layout's buffers, the workspace lent.
  for (operand o : {operand::a, operand::b, operand::c}) t.bytes_allocated += L.local_size(o) * std::int64_t(sizeof(T));
  t.bytes_allocated += std::int64_t(layout_access::buffer_bytes(L) + prism::detail::runtime_of(ctx).pool().snapshot().peak_on_loan);
  return {double(t.bytes_received), double(t.messages_received), t.seconds, double(t.bytes_allocated), double(L.predicted_peak_bytes())};
}

// The rest of a call on the native layout, every rank alike, once it has checked what only it
// can see (`local`: its complaint, or ""): comm checked against L's, `args` agreed under
// `routine`, run_native; last_traffic() gets the counts; with PRISM_STATS rank 0 calls `line`.
template <scalar T>
void native_call(MPI_Comm comm, const layout& L, const char* routine, const std::vector<mpi::agreed>& args, std::string local,
                 T alpha, const T* A, const T* B, T beta, matrix<T>& C, const context& ctx,
                 const std::function<void(const mpi::call_stats&)>& line) {
  const std::int64_t control0 = mpi::control_traffic();  // for PRISM_STATS's line
  detail::free_orphans();
  {
    const std::lock_guard<std::mutex> hold(last_lock);
    last = traffic{};
  }
  if (comm == MPI_COMM_NULL) throw invalid_argument(routine, "comm", 0, "is MPI_COMM_NULL");
  int same = MPI_UNEQUAL;
  mpi::check_mpi(MPI_Comm_compare(comm, L.comm(), &same), "MPI_Comm_compare");
  if (same != MPI_CONGRUENT && same != MPI_IDENT) local = "comm is not the communicator of A's layout";
  // Agreed over L's duplicate, so a rank whose comm is wrong tells the others. (A rank whose
  // matrices are another communicator's cannot: it cannot tell which is the mistake, and a
  // collective the others may never enter would pair with their next call.)
  // PRISM_STATS on any rank measures on every rank (its reductions are collective).
  bool stats = prism::detail::process_environment().stats.get();
  mpi::agree(L.comm(), routine, args, local, nullptr, &stats);
  traffic t;
  const std::vector<double> v = run_native<T>(L, alpha, A, B, beta, C, ctx, stats, t);
  {
    const std::lock_guard<std::mutex> hold(last_lock);
    last = t;
  }
  if (v.empty()) return;
  const mpi::call_stats st = mpi::reduce_call_stats(L.comm(), v, control0);
  if (L.rank() == 0) line(st);
}

// A call (agreeing `values` arguments) where some of this rank's matrices' layouts `ls` are
// missing: invalid_argument on every rank, agreed over the communicator the others agree over in
// native_call (the first layout's, else the library's duplicate of comm; else this rank alone).
[[noreturn]] void no_layout(MPI_Comm comm, const char* routine, std::size_t values, std::initializer_list<const layout*> ls) {
  if (comm == MPI_COMM_NULL) throw invalid_argument(routine, "comm", 0, "is MPI_COMM_NULL");
  const std::string why = "a matrix has no layout (default-constructed or moved from)";
  const auto other = std::find_if(ls.begin(), ls.end(), [](const layout* l) { return l != nullptr; });
  if (const MPI_Comm d = other != ls.end() ? (*other)->comm() : layout_access::library_comm(comm); d != MPI_COMM_NULL)
    mpi::agree(d, routine, std::vector<mpi::agreed>(values, mpi::agreed{"", 0, 0}), why);
  throw invalid_argument(routine, "A", 0, why);  // (with a duplicate, the agreement throws first)
}

// The layout whose communicator a call agrees over, of its matrices' layouts `ls` (A's first;
// no_layout when one is missing): one two of them share, else the library's duplicate of `comm`
// (alike on every rank), else A's. E.g. one rank's A from another communicator: it agrees with
// the others over B's and C's.
const layout& agreement_layout(MPI_Comm comm, const char* routine, std::size_t values, std::initializer_list<const layout*> ls) {
  if (std::find(ls.begin(), ls.end(), nullptr) != ls.end()) no_layout(comm, routine, values, ls);
  const layout* const* v = ls.begin();
  for (std::size_t i = 0; i < ls.size(); ++i)  // a communicator two of them share
    for (std::size_t j = i + 1; j < ls.size(); ++j)
      if (v[i]->comm() == v[j]->comm()) return *v[i];
  if (comm == MPI_COMM_NULL) return *v[0];
  const MPI_Comm mine = layout_access::library_comm(comm);  // (a layout's own is never null)
  for (const layout* l : ls)
    if (l->comm() == mine) return *l;
  return *v[0];
}

// What this rank's gemm arguments get wrong, or "" (then the agreement decides).
template <scalar T>
std::string check_gemm(const layout& L, const plan* p_given, const problem* pr_given, const matrix<T>& A, const matrix<T>& B,
                       const matrix<T>& C, const context& ctx) {
  const problem& pr = L.laid_out();
  if (pr.op != operation::gemm) return "A's layout is for a rank-k update (use prism::dist::syrk / herk)";
  if (B.where() != A.where() || C.where() != A.where()) return "A, B and C must be laid out by one layout";
  if (A.which() != operand::a || B.which() != operand::b || C.which() != operand::c)
    return "A, B and C must hold operands A, B and C";
  if (p_given != nullptr && !(*p_given == L.source())) return "the plan is not the one the matrices are laid out for";
  if (pr_given != nullptr && !(pr_given->m == pr.m && pr_given->n == pr.n && pr_given->k == pr.k && pr_given->type == pr.type &&
                               std::toupper(pr_given->transa) == pr.transa && std::toupper(pr_given->transb) == pr.transb))
    return "the problem is not the one the matrices are laid out for";
  if (A.size() != L.local_size(operand::a) || B.size() != L.local_size(operand::b) || C.size() != L.local_size(operand::c))
    return "a matrix's local storage does not match its layout";
  try {
    prism::detail::check_fits(L.source(), ctx, true);
  } catch (const plan_error& e) {
    return e.what();
  }
  return "";
}

// prism::dist::gemm, given the plan or the problem.
template <scalar T>
void gemm_impl(MPI_Comm comm, const plan* p_given, const problem* pr_given, T alpha, const matrix<T>& A,
               const matrix<T>& B, T beta, matrix<T>& C, const context& ctx) {
  const layout& L = agreement_layout(comm, "prism::dist::gemm", 10, {A.where().get(), B.where().get(), C.where().get()});
  const problem& pr = L.laid_out();
  const problem& shown = pr_given != nullptr ? *pr_given : pr;
  native_call<T>(
      comm, L, "prism::dist::gemm",
      {{"transa", 1, std::toupper(shown.transa)},
       {"transb", 2, std::toupper(shown.transb)},
       {"m", 3, shown.m},
       {"n", 4, shown.n},
       {"k", 5, shown.k},
       {"alpha", 6, real_bits(alpha), true},
       {"alpha (imaginary part)", 6, imag_bits(alpha), true},
       {"beta", 9, real_bits(beta), true},
       {"beta (imaginary part)", 9, imag_bits(beta), true},
       {"plan", 0, L.plan_hash()}},
      check_gemm(L, p_given, pr_given, A, B, C, ctx), alpha, A.data(), B.data(), beta, C, ctx, [&](const mpi::call_stats& st) {
        const rank_model& m = L.model();
        const double elem = double(sizeof(T)), bound = bounds::parallel_io_minus_owned(pr.m, pr.n, pr.k, L.size(), bounds::unlimited) * elem;
        std::fprintf(stderr,
                     "prism-dist: %c%c%c %lldx%lldx%lld on %d ranks (%d used, grid %s): received max %.3f MB, mean "
                     "%.3f MB (predicted max %.3f, mean %.3f); bound %.3f MB; messages max %.0f; %.4f s; memory max "
                     "%.3f MB (predicted max %.3f MB); besides these, prism's collectives at most %.0f B to a rank\n",
                     char(pr.type), pr.transa, pr.transb, (long long)pr.m, (long long)pr.n, (long long)pr.k, L.size(), m.ranks(),
                     m.grid().c_str(), st.max[0] / 1e6, st.sum[0] / L.size() / 1e6, double(m.max_received()) * elem / 1e6,
                     m.mean_received() * elem * m.ranks() / L.size() / 1e6, bound / 1e6, st.max[1], st.max[2], st.max[3] / 1e6,
                     st.max[4] / 1e6, st.control_max);
      });
}

// What this rank's syrk / herk arguments get wrong, or "" (then the agreement decides).
template <scalar T>
std::string check_rank_k(const layout& L, operation op, char uplo, char trans, const matrix<T>& A, const matrix<T>& C) {
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

// prism::dist::syrk or herk (op).
template <scalar T>
void rank_k_impl(MPI_Comm comm, operation op, char uplo, char trans, T alpha, const matrix<T>& A, T beta, matrix<T>& C,
                 const context& ctx) {
  const char* routine = op == operation::herk ? "prism::dist::herk" : "prism::dist::syrk";
  const layout& L = agreement_layout(comm, routine, 9, {A.where().get(), C.where().get()});
  const problem& pr = L.laid_out();
  native_call<T>(
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
      check_rank_k(L, op, uplo, trans, A, C), alpha, A.data(), nullptr, beta, C, ctx, [&](const mpi::call_stats& st) {
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
void gemm(MPI_Comm comm, const plan& p, T alpha, const matrix<T>& A, const matrix<T>& B, T beta, matrix<T>& C,
          const context& ctx) {
  gemm_impl<T>(comm, &p, nullptr, alpha, A, B, beta, C, ctx);
}

template <scalar T>
void gemm(MPI_Comm comm, const problem& p, T alpha, const matrix<T>& A, const matrix<T>& B, T beta, matrix<T>& C,
          const context& ctx) {
  gemm_impl<T>(comm, nullptr, &p, alpha, A, B, beta, C, ctx);
}

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

traffic last_traffic() {
  const std::lock_guard<std::mutex> hold(last_lock);
  return last;
}

#define PRISM_INSTANTIATE(T)                                                                                       \
  template void gemm<T>(MPI_Comm, const plan&, T, const matrix<T>&, const matrix<T>&, T, matrix<T>&,               \
                        const context&);                                                                           \
  template void gemm<T>(MPI_Comm, const problem&, T, const matrix<T>&, const matrix<T>&, T, matrix<T>&,            \
                        const context&);                                                                           \
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
