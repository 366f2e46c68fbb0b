// tests/consumer/consumer_blas.cpp — links the installed drop-in (prism::prism_blas) and
// calls the Fortran dgemm_ as a BLAS user would; integer-valued data, so the check is exact.
#include <cstddef>
#include <cstdio>
#include <vector>

extern "C" void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
                       const int*, const double*, const int*, const double*, double*, const int*, std::size_t,
                       std::size_t);

int main() {
  const int m = 8, n = 8, k = 1 << 16;
  std::vector<double> A(std::size_t(m) * k, 1.0), B(std::size_t(k) * n, 2.0), C(std::size_t(m) * n, 5.0);
  const double alpha = 1.0, beta = 1.0;
  dgemm_("N", "N", &m, &n, &k, &alpha, A.data(), &m, B.data(), &k, &beta, C.data(), &m, 1, 1);
  for (double c : C)
    if (c != 2.0 * k + 5.0) {
      std::printf("consumer_blas: wrong result %g\n", c);
      return 1;
    }
  std::printf("consumer_blas: ok\n");
  return 0;
}
