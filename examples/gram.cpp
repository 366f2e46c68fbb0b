// examples/gram.cpp — the Gram matrix G = AᵀA of a tall-skinny matrix A with prism::gemm,
// checked against a plain loop. Built by examples/CMakeLists.txt (find_package(prism)).
#include <prism/prism.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

int main() {
  const std::int64_t rows = 200000, cols = 16;  // A: 200000 x 16, column-major
  std::vector<double> A(rows * cols);
  std::mt19937_64 gen(42);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (double& a : A) a = uniform(gen);

  // G = 1 * Aᵀ A + 0 * G, with the arguments of BLAS dgemm: transa 'T', m = n = cols,
  // k = rows. prism cuts the long k dimension across the threads and adds the parts.
  std::vector<double> G(cols * cols);
  prism::gemm<double>('T', 'N', cols, cols, rows, 1.0, A.data(), rows, A.data(), rows, 0.0, G.data(), cols);

  // The same product as a plain loop: G(i, j) = sum over r of A(r, i) A(r, j). Rounding
  // differs with the order of the additions, so compare within the componentwise bound
  // |G - sum| <= 2 k eps sum |A(r, i) A(r, j)| that any order of k additions meets.
  const double eps = std::numeric_limits<double>::epsilon();
  double worst = 0;  // the largest difference, as a fraction of its bound
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < cols; ++i) {
      double sum = 0, magnitude = 0;
      for (std::int64_t r = 0; r < rows; ++r) {
        sum += A[r + i * rows] * A[r + j * rows];
        magnitude += std::abs(A[r + i * rows] * A[r + j * rows]);
      }
      worst = std::max(worst, std::abs(G[i + j * cols] - sum) / (2.0 * double(rows) * eps * magnitude));
    }

  const bool ok = worst <= 1.0;
  std::printf("gram: G = A^T A for a %lld x %lld A with prism %s: largest difference %.2g of its bound, %s\n",
              static_cast<long long>(rows), static_cast<long long>(cols), prism::version(), worst, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
