// Uses only the installed public headers: a 2 x 2 product with exact integer values.
#include <prism/prism.hpp>

#include <cstdio>

int main() {
  const double A[4] = {1, 2, 3, 4}, B[4] = {5, 6, 7, 8};  // column-major
  double C[4] = {0, 0, 0, 0};
  prism::context ctx;
  ctx.set_small_flops(0).set_threads(2);
  prism::gemm<double>('N', 'N', 2, 2, 2, 1.0, A, 2, B, 2, 0.0, C, 2, ctx);
  const double want[4] = {23, 34, 31, 46};
  for (int i = 0; i < 4; ++i)
    if (C[i] != want[i]) {
      std::printf("consumer: C[%d] = %g, expected %g\n", i, C[i], want[i]);
      return 1;
    }
  std::printf("consumer: prism %s installed and working\n", prism::version());
  return 0;
}
