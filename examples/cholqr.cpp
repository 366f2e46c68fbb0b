// examples/cholqr.cpp: CholeskyQR2 of a tall-skinny A (m x b) distributed by block rows
// over MPI ranks, with prism::dist::syrk forming each Gram matrix AᵀA. Run it with
//   mpirun -np 4 build/examples/cholqr [m] [b]
// It checks the orthogonality ||QᵀQ - I||_F and the residual ||A - QR||_F / ||A||_F.
//
// CholeskyQR: G = AᵀA = RᵀR (Cholesky), Q = A R⁻¹. Twice (CholeskyQR2), the second pass on
// Q, gives Q orthogonal to working precision for cond(A) up to about 1e8.
#include <prism/dist.hpp>

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

// Upper Cholesky of the b x b matrix G (its upper triangle, column-major) in place:
// G = RᵀR. Returns false when G is not positive definite.
bool cholesky_upper(std::vector<double>& G, int b) {
  for (int j = 0; j < b; ++j) {
    for (int i = 0; i < j; ++i) {
      double s = G[i + j * b];
      for (int l = 0; l < i; ++l) s -= G[l + i * b] * G[l + j * b];
      G[i + j * b] = s / G[i + i * b];
    }
    double d = G[j + j * b];
    for (int l = 0; l < j; ++l) d -= G[l + j * b] * G[l + j * b];
    if (!(d > 0)) return false;
    G[j + j * b] = std::sqrt(d);
  }
  for (int j = 0; j < b; ++j)
    for (int i = j + 1; i < b; ++i) G[i + j * b] = 0;  // R is upper triangular
  return true;
}

// This rank's block of rows of A: rows [row, row + rows) of the m x b matrix, column-major
// with leading dimension rows (the native layout of a k-slices-only scheme is exactly that).
struct block_rows {
  double* data = nullptr;
  std::int64_t row = 0, rows = 0;
};

block_rows my_rows(prism::dist::matrix<double>& A, int b) {
  const auto& L = *A.where();
  const auto spans = L.spans(prism::operand::a, L.rank());
  if (spans.empty()) return {};
  const prism::dist::piece_span& s = spans.front();
  if (spans.size() != 1 || s.col != 0 || s.first != 0 || s.count != s.rows * b) {
    std::fprintf(stderr, "cholqr: this rank's A is not one block of whole rows\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return {A.data(), s.row, s.rows};
}

// G = XᵀX (upper triangle) on every rank: prism::dist::syrk, then C gathered on rank 0 and
// broadcast. g is b x b, column-major.
std::vector<double> gram(prism::dist::matrix<double>& X, prism::dist::matrix<double>& C, int b) {
  prism::dist::syrk<double>(MPI_COMM_WORLD, 'U', 'T', 1.0, X, 0.0, C);
  std::vector<double> g(std::size_t(b) * b, 0.0);
  C.gather(0, g.data(), b);
  MPI_Bcast(g.data(), b * b, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return g;
}

// X := X R⁻¹ on this rank's rows (R upper, b x b): each row x solves y R = x.
void solve_right(block_rows X, const std::vector<double>& R, int b) {
  for (std::int64_t r = 0; r < X.rows; ++r)
    for (int j = 0; j < b; ++j) {
      double s = X.data[r + j * X.rows];
      for (int l = 0; l < j; ++l) s -= X.data[r + l * X.rows] * R[l + j * b];
      X.data[r + j * X.rows] = s / R[j + j * b];
    }
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::int64_t m = argc > 1 ? std::atoll(argv[1]) : 200000;
  const int b = argc > 2 ? std::atoi(argv[2]) : 32;

  // C = AᵀA of the m x b matrix A is the rank-k update syrk 'U', 'T' with n = b, k = m.
  // The scheme of `size` k slices lays A out by block rows (and is the SYRK bound's 1D case).
  const prism::problem p = prism::rank_k_problem(prism::scalar_type::d, prism::operation::syrk, 'U', 'T', b, m);
  const auto L = prism::dist::layout::make(MPI_COMM_WORLD, p, prism::rank_k_scheme{size, 1, 1});
  prism::dist::matrix<double> A(L, prism::operand::a), Q(L, prism::operand::a), C(L, prism::operand::c);
  // A(i, j): a hash of the position in [-1, 1) (splitmix64), so each rank makes its own rows.
  auto a_of = [](std::int64_t i, std::int64_t j) {
    std::uint64_t z = std::uint64_t(i) * 0x9E3779B97F4A7C15ull + std::uint64_t(j) * 0xC2B2AE3D27D4EB4Full;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return double((z ^ (z >> 31)) >> 11) * 0x1.0p-52 - 1.0;
  };
  A.fill(a_of);
  Q.fill(a_of);

  // Two passes: R = R2 R1, Q = A R1⁻¹ R2⁻¹.
  std::vector<double> R(std::size_t(b) * b, 0.0);
  for (int j = 0; j < b; ++j) R[j + j * b] = 1.0;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<double> Ri = gram(Q, C, b);
    if (!cholesky_upper(Ri, b)) {
      if (rank == 0) std::fprintf(stderr, "cholqr: the Gram matrix is not positive definite (pass %d)\n", pass + 1);
      MPI_Finalize();
      return 1;
    }
    solve_right(my_rows(Q, b), Ri, b);
    std::vector<double> next(R.size(), 0.0);  // Ri R
    for (int j = 0; j < b; ++j)
      for (int i = 0; i <= j; ++i)
        for (int l = i; l <= j; ++l) next[i + j * b] += Ri[i + l * b] * R[l + j * b];
    R = next;
  }

  // Orthogonality: ||QᵀQ - I||_F from one more syrk (upper triangle, off-diagonal twice).
  const std::vector<double> g = gram(Q, C, b);
  double orth = 0;
  for (int j = 0; j < b; ++j)
    for (int i = 0; i <= j; ++i) {
      const double e = g[i + j * b] - (i == j ? 1.0 : 0.0);
      orth += (i == j ? 1.0 : 2.0) * e * e;
    }
  orth = std::sqrt(orth);
  // Residual: ||A - QR||_F / ||A||_F over every rank's rows.
  const block_rows a = my_rows(A, b), q = my_rows(Q, b);
  double sums[2] = {0, 0}, total[2] = {0, 0};
  for (std::int64_t r = 0; r < a.rows; ++r)
    for (int j = 0; j < b; ++j) {
      double qr = 0;
      for (int l = 0; l <= j; ++l) qr += q.data[r + l * q.rows] * R[l + j * b];
      const double av = a.data[r + j * a.rows];
      sums[0] += (av - qr) * (av - qr), sums[1] += av * av;
    }
  MPI_Allreduce(sums, total, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const double residual = std::sqrt(total[0] / total[1]);
  // CholeskyQR2 is backward stable: both are a small multiple of b eps (a wrong Q or R is
  // off by O(1)).
  const double eps = 2.220446049250313e-16, tol = 100.0 * double(b) * eps;
  const bool ok = orth <= tol && residual <= tol;
  if (rank == 0)
    std::printf("cholqr2: %lld x %d on %d ranks (scheme %s): ||Q^T Q - I||_F = %.3g, ||A - QR||_F / ||A||_F = %.3g "
                "(tolerance %.3g), %s\n",
                (long long)m, b, size, L->model().grid().c_str(), orth, residual, tol, ok ? "ok" : "FAILED");
  MPI_Finalize();
  return ok ? 0 : 1;
}
