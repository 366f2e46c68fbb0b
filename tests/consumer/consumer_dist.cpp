// An installed-prism user of the MPI rank level (prism::prism_dist): 2 ranks multiply
// integer-valued matrices in the native layout; rank 0 checks C exactly.
#include <prism/dist.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  const std::int64_t m = 37, n = 29, k = 101;
  auto L = prism::dist::layout::make(MPI_COMM_WORLD, prism::problem{prism::scalar_type::d, 'N', 'N', m, n, k});
  prism::dist::matrix<double> A(L, prism::operand::a), B(L, prism::operand::b), C(L, prism::operand::c);
  A.fill([](std::int64_t i, std::int64_t l) { return double((i + 2 * l) % 7 - 3); });
  B.fill([](std::int64_t l, std::int64_t j) { return double((3 * l + j) % 5 - 2); });
  prism::dist::gemm(MPI_COMM_WORLD, L->source(), 1.0, A, B, 0.0, C);
  std::vector<double> full(std::size_t(m * n));
  C.gather(0, full.data(), m);
  int bad = 0;
  if (L->rank() == 0)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) {
        double want = 0;
        for (std::int64_t l = 0; l < k; ++l) want += double((i + 2 * l) % 7 - 3) * double((3 * l + j) % 5 - 2);
        if (full[std::size_t(i + j * m)] != want) ++bad;
      }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (L->rank() == 0) std::printf("consumer_dist: %d ranks, %s\n", L->size(), bad == 0 ? "exact" : "WRONG");
  MPI_Finalize();
  return bad == 0 ? 0 : 1;
}
