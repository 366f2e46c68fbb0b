// prism/dist.hpp — the MPI rank level: C = alpha op(A) op(B) + beta C over a communicator,
// and the rank-k updates C = alpha op(A) op(A)^T (^H) + beta C on one triangle, with A, B
// and C in prism's native layout (prism/rank_model.hpp), each rank's share run by the
// shared-memory engine with its own threads. Link prism::prism_dist.
//
//   MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
//   auto L = prism::dist::layout::make(MPI_COMM_WORLD, prism::problem{prism::scalar_type::d, 'N', 'N', m, n, k});
//   prism::dist::matrix<double> A(L, prism::operand::a), B(L, prism::operand::b), C(L, prism::operand::c);
//   A.scatter(0, a_full, lda);  // or A.fill([](i, j) { ... }): each rank makes its own pieces
//   B.scatter(0, b_full, ldb);
//   prism::dist::gemm(MPI_COMM_WORLD, L->source(), 1.0, A, B, 0.0, C);
//   C.gather(0, c_full, ldc);
//
// A Gram matrix C = A^T A (A k x n, upper triangle): lay out the rank-k problem, then
//   auto G = prism::dist::layout::make(MPI_COMM_WORLD, prism::rank_k_problem(prism::scalar_type::d,
//                                      prism::operation::syrk, 'U', 'T', n, k));
//   prism::dist::matrix<double> A(G, prism::operand::a), C(G, prism::operand::c);
//   prism::dist::syrk(MPI_COMM_WORLD, 'U', 'T', 1.0, A, 0.0, C);
// C then holds the upper triangle only (gather writes only its elements).
//
// Every call is collective over the communicator. Arguments that differ between ranks give
// every rank a prism::invalid_argument naming the argument and the rank; no rank hangs and
// no rank writes C. MPI_THREAD_FUNNELED suffices: only the calling thread calls MPI.
// A local step that fails on one rank during gemm (its exchange buffers cannot be
// allocated, its share of the multiply throws) is agreed before the next exchange: every
// rank throws a prism::error naming the failing rank, and none is left waiting. C is then
// untouched when the buffers failed, undefined when a rank's multiply failed. A rank that
// dies (SIGKILL) is MPI's to handle: Open MPI's launcher ends the other ranks.
#pragma once

#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/rank_model.hpp>
#include <prism/syrk.hpp>
#include <prism/types.hpp>

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace prism::dist {

namespace detail {
struct layout_access;
}

/// What this rank moved in its last gemm, syrk or herk call (exact counts from MPI statuses).
struct traffic {
  std::int64_t bytes_received = 0;     ///< bytes received
  std::int64_t bytes_sent = 0;         ///< bytes sent
  std::int64_t messages_received = 0;  ///< messages received
  std::int64_t messages_sent = 0;      ///< messages sent
  double seconds = 0;                  ///< wall time of the call on this rank
  /// prism's own memory for the call on this rank, in bytes: its pieces of A, B and C,
  /// the layout's block and exchange buffers as allocated, and the local workspace lent
  /// during the call (measured with PRISM_STATS set, else 0). The model's prediction is
  /// layout::model().cost(rank).peak_bytes().
  std::int64_t bytes_allocated = 0;
};

/// A run of one rank's stored elements: elements [first, first + count) of a cell whose
/// stored rows start at (row, col); a rectangle of `rows` rows (tri 0, column-major) or the
/// packed triangle of a rows x rows diagonal block (tri 'L': column t holds rows t..; 'U':
/// rows ..t). E.g. {row 8, col 8, rows 3, first 3, count 2, tri 'L'} is (9, 9), (10, 9).
struct piece_span {
  std::int64_t row = 0, col = 0, rows = 0;  ///< the cell's first stored row, column, and rows
  std::int64_t first = 0, count = 0;        ///< elements of the cell
  char tri = 0;                             ///< 0, 'L' or 'U'
};

/// Calls f(row, col) for each element of span s in storage order (its place in the whole
/// stored matrix). A packed triangle walks to the column of element `first`, then on:
/// e.g. tri 'U', rows 3, first 2: (1, 1), then (0, 2), (1, 2), (2, 2).
template <class F>
void each_element(const piece_span& s, F&& f) {
  if (s.tri == 0) {
    for (std::int64_t e = s.first; e < s.first + s.count; ++e) f(s.row + e % s.rows, s.col + e / s.rows);
    return;
  }
  auto length = [&](std::int64_t t) { return s.tri == 'L' ? s.rows - t : t + 1; };
  std::int64_t col = 0, start = 0;  // column col's first packed element
  while (start + length(col) <= s.first) start += length(col), ++col;
  for (std::int64_t e = s.first; e < s.first + s.count; ++e) {
    if (e - start == length(col)) start += length(col), ++col;
    f(s.row + (s.tri == 'L' ? col : 0) + (e - start), s.col + col);
  }
}

/// A product over a communicator's ranks: its rank model (a gemm plan's rank steps or a
/// rank-k scheme) with the native layout and exchanges it implies. Made collectively,
/// cached on the communicator per (problem, settings), shared by the matrices laid out for it.
class layout {
 public:
  /// Plans problem p over comm's ranks (collective): rank 0 runs prism::choose_ranks (a
  /// rank-k problem: choose_rank_k_ranks) with ctx (ranks = the communicator's size, ranks
  /// per node from MPI) and every rank gets its plan. A second call with the same problem,
  /// communicator and settings returns the cached layout. Throws prism::plan_error on every
  /// rank when no plan fits.
  static std::shared_ptr<const layout> make(MPI_Comm comm, const problem& p, const context& ctx = default_context());
  /// Lays out a given plan (collective; every rank passes the same plan, checked), e.g. a
  /// hand-written one parsed with prism::plan::parse. Its ranks must not exceed comm's.
  /// An invalid plan throws prism::plan_error on the ranks that passed it and
  /// prism::invalid_argument naming the first of them on the others.
  static std::shared_ptr<const layout> make(MPI_Comm comm, const plan& p, const context& ctx = default_context());
  /// Lays out rank-k problem p under a given scheme (collective; every rank passes the same,
  /// checked), e.g. to compare schemes. Its ranks must not exceed comm's. Not cached. A
  /// scheme that cannot lay out p throws prism::plan_error on the ranks that passed it and
  /// prism::invalid_argument naming the first of them on the others.
  static std::shared_ptr<const layout> make(MPI_Comm comm, const problem& p, const rank_k_scheme& s,
                                            const context& ctx = default_context());

  /// The problem laid out.
  const problem& laid_out() const noexcept { return model_.problem(); }
  /// The rank model: who computes what, the native layout, every rank's exact cost.
  const rank_model& model() const noexcept { return model_; }
  /// The gemm plan (a rank-k layout's is empty: model().scheme() is its scheme).
  const plan& source() const noexcept { return model_.source(); }
  /// The planner's report ('#' lines: candidates, volumes, bounds) on rank 0 of a layout
  /// made from a problem; else empty.
  const std::string& report() const noexcept { return report_; }
  /// Ranks the plan uses (P').
  int ranks_used() const noexcept { return model_.ranks(); }
  /// Rows of the whole stored operand o.
  std::int64_t rows(operand o) const;
  /// Columns of the whole stored operand o.
  std::int64_t cols(operand o) const;
  /// Rank r's stored elements of operand o, in storage order.
  std::vector<piece_span> spans(operand o, int r) const;
  /// The model's peak bytes for this rank (pieces, buffers, local workspace; 0 if idle).
  std::size_t predicted_peak_bytes() const;
  /// This process's rank in the communicator.
  int rank() const noexcept { return rank_; }
  /// The communicator's size (ranks >= the plan's ranks; the others sit out).
  int size() const noexcept { return size_; }
  /// Whether this rank has work in the plan (rank < ranks_used()).
  bool active() const noexcept { return rank_ < ranks_used(); }
  /// Elements of operand o this rank stores.
  std::int64_t local_size(operand o) const;
  /// The library's private duplicate of the communicator (its messages never meet yours).
  MPI_Comm comm() const noexcept { return *comm_; }

  /// A hash of the plan's or scheme's text, the same on every rank that has the same.
  std::int64_t plan_hash() const noexcept { return plan_hash_; }

 private:
  friend struct detail::layout_access;  // the library's own access (lib/dist)
  layout(std::shared_ptr<const MPI_Comm> own, int rank, int size, rank_model m, std::string report, std::int64_t hash);
  mutable std::unique_ptr<std::byte[]> buffers_;  // the blocks and exchange buffers (layout_access::buffers)
  mutable std::size_t buffer_bytes_ = 0;
  std::shared_ptr<const MPI_Comm> comm_;  // freed with the last layout once the user frees theirs
  int rank_, size_;
  rank_model model_;
  std::string report_;
  std::int64_t plan_hash_ = 0;
};

/// One operand of a layout: this rank's pieces of it, stored one after another (each
/// piece a run of a cell's elements; layout::spans lists them).
template <scalar T>
class matrix {
 public:
  /// This rank's pieces of operand `which`, zero-filled.
  matrix(std::shared_ptr<const layout> l, operand which);

  /// The operand it holds.
  operand which() const noexcept { return which_; }
  /// Its layout.
  const std::shared_ptr<const layout>& where() const noexcept { return layout_; }
  /// Rows of the whole stored matrix (prism::error without a layout: moved from).
  std::int64_t rows() const { return laid_out("rows").rows(which_); }
  /// Columns of the whole stored matrix (prism::error without a layout: moved from).
  std::int64_t cols() const { return laid_out("cols").cols(which_); }
  /// This rank's elements.
  T* data() noexcept { return local_.data(); }
  /// This rank's elements.
  const T* data() const noexcept { return local_.data(); }
  /// Number of elements this rank stores.
  std::int64_t size() const noexcept { return std::int64_t(local_.size()); }

  /// Calls f(row, col, value) for each element this rank stores, in storage order, with
  /// its (row, col) in the whole stored matrix; f may assign to value.
  template <class F>
  void for_each(F&& f) {
    visit([&](std::int64_t i, std::int64_t j, std::int64_t at) { f(i, j, local_[std::size_t(at)]); });
  }
  /// Sets every element this rank stores to f(row, col): no communication.
  template <class F>
  void fill(F&& f) {
    visit([&](std::int64_t i, std::int64_t j, std::int64_t at) { local_[std::size_t(at)] = T(f(i, j)); });
  }

  /// Collective: rank `root` holds the whole stored matrix (column-major, leading
  /// dimension ld >= rows) and each rank receives its pieces (a rank-k layout's C: the
  /// elements of its triangle only).
  void scatter(int root, const T* full, std::int64_t ld);
  /// Collective: rank `root` receives the whole stored matrix into full (ld >= rows); a
  /// rank-k layout's C writes its triangle only, the other one untouched.
  void gather(int root, T* full, std::int64_t ld) const;

 private:
  // Its layout, or prism::error naming `what` when it has none (default-constructed or moved from).
  const layout& laid_out(const char* what) const {
    if (!layout_)
      throw error(std::string("prism::dist::matrix::") + what + ": the matrix has no layout (default-constructed or moved from)");
    return *layout_;
  }
  template <class F>
  void visit(F&& f) const {
    if (!laid_out("for_each / fill").active()) return;
    std::int64_t at = 0;
    for (const piece_span& sp : layout_->spans(which_, layout_->rank()))
      each_element(sp, [&](std::int64_t i, std::int64_t j) { f(i, j, at++); });
  }

  std::shared_ptr<const layout> layout_;
  operand which_;
  std::vector<T> local_;
};

/// C = alpha op(A) op(B) + beta C over comm (collective), op and sizes from plan p, which
/// must be the plan of A's, B's and C's layout. BLAS semantics: beta = 0 never reads C,
/// alpha = 0 or k = 0 only scales C. Throws prism::invalid_argument on every rank when
/// arguments differ between ranks or do not match the layout, with C untouched.
template <scalar T>
void gemm(MPI_Comm comm, const plan& p, T alpha, const matrix<T>& A, const matrix<T>& B, T beta, matrix<T>& C,
          const context& ctx = default_context());

/// As above, for the problem the layout was made for (checked).
template <scalar T>
void gemm(MPI_Comm comm, const problem& p, T alpha, const matrix<T>& A, const matrix<T>& B, T beta, matrix<T>& C,
          const context& ctx = default_context());

/// C = alpha op(A) op(A)^T + beta C on the uplo triangle over comm (collective), for the
/// rank-k layout A and C share (its problem's uplo and trans, checked: 'U' or 'L'; 'N' or
/// 'T', a real syrk also 'C'). BLAS semantics: beta = 0 never reads C, alpha = 0 or k = 0
/// only scales C, the other triangle is not stored. Throws prism::invalid_argument on
/// every rank when arguments differ between ranks or do not match the layout, C untouched.
template <scalar T>
void syrk(MPI_Comm comm, char uplo, char trans, T alpha, const matrix<T>& A, T beta, matrix<T>& C,
          const context& ctx = default_context());

/// C = alpha op(A) op(A)^H + beta C (T complex; trans 'N' or 'C'; alpha, beta real), as
/// syrk; the diagonal of C is real afterwards (imaginary parts set to zero, as ?herk).
template <scalar T>
  requires(std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>)
void herk(MPI_Comm comm, char uplo, char trans, real_type<T> alpha, const matrix<T>& A, real_type<T> beta,
          matrix<T>& C, const context& ctx = default_context());

/// This rank's counts for its last gemm, syrk or herk call (the process's last, from whichever thread).
traffic last_traffic();

}  // namespace prism::dist
