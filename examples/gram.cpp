// examples/gram.cpp: the Gram matrix G = AᵀA of a tall-skinny A with prism::gemm, checked
// against a plain loop. Built by examples/CMakeLists.txt (find_package(prism)).
#include <prism/prism.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

int main() {
  const long rows = 200000, cols = 16;  // A: 200000 x 16, column-major
  std::vector<double> A(rows * cols), G(cols * cols);
  std::mt19937_64 gen(42);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (double& a : A) a = uniform(gen);

  // G = 1 * AᵀA + 0 * G with BLAS dgemm's arguments: prism cuts k = rows across the threads.
  prism::gemm<double>('T', 'N', cols, cols, rows, 1.0, A.data(), rows, A.data(), rows, 0.0, G.data(), cols);

  // Any order of the k additions lands within 2 k eps sum |A(r, i) A(r, j)| of the exact sum.
  double worst = 0;  // the largest difference, as a fraction of that bound
  for (long j = 0; j < cols; ++j)
    for (long i = 0; i < cols; ++i) {
      double sum = 0, size = 0;
      for (long r = 0; r < rows; ++r)
        sum += A[r + i * rows] * A[r + j * rows], size += std::abs(A[r + i * rows] * A[r + j * rows]);
      const double bound = 2.0 * double(rows) * std::numeric_limits<double>::epsilon() * size;
      worst = std::max(worst, std::abs(G[i + j * cols] - sum) / bound);
    }
  std::printf("gram: G = A^T A for a %ld x %ld A with prism %s: largest difference %.2g of its bound, %s\n", rows, cols,
              prism::version(), worst, worst <= 1 ? "ok" : "WRONG");
  return worst <= 1 ? 0 : 1;
}
