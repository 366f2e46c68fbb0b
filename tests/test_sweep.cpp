// tests/test_sweep.cpp — randomized differential sweep with fixed seeds: >= 2000 calls
// covering all four types, N/T/C on each side, alpha and beta in {0, 1, -1, random},
// padded leading dimensions, sizes 0, 1, primes and odd numbers, thread counts 1, 2, 3, 5, 7,
// extra depth 0..3 and memory caps that force DFS steps. Public API only.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "support/reference.hpp"

#include <map>

using namespace prism;
using prism::test::check_bound;
using prism::test::random_matrix;
using prism::test::reference_gemm;

namespace {

// Contexts are built once per setting: each owns a task arena and a pool.
const context& context_for(int threads, int extra, std::size_t cap, double small) {
  static std::map<std::tuple<int, int, std::size_t, double>, context> cache;
  auto key = std::make_tuple(threads, extra, cap, small);
  auto it = cache.find(key);
  if (it == cache.end()) {
    context c;
    c.set_threads(threads).set_extra_depth(extra).set_max_memory(cap).set_small_flops(small).set_min_leaf_flops(0);
    it = cache.emplace(key, c).first;
  }
  return it->second;
}

template <class T>
T pick_scalar(std::mt19937_64& gen) {
  switch (gen() % 4) {
    case 0: return T(0);
    case 1: return T(1);
    case 2: return T(-1);
    default: return test::random_value<T>(gen);
  }
}

std::int64_t pick_size(std::mt19937_64& gen) {
  static const std::int64_t sizes[] = {0, 1, 1, 2, 3, 5, 7, 8, 11, 13, 16, 17, 23, 31, 32, 33, 47, 61, 64, 65, 97, 127, 131};
  return sizes[gen() % (sizeof sizes / sizeof sizes[0])];
}

// One random case, checked through CHECK. Returns true when it ran the recursion with a
// plan of at least two leaves (the sweep asserts most cases do).
template <class T>
bool one_case(std::mt19937_64& gen, int index) {
  const char trans[] = {'N', 'T', 'C'};
  const char ta = trans[gen() % 3], tb = trans[gen() % 3];
  std::int64_t m = pick_size(gen), n = pick_size(gen), k = pick_size(gen);
  if (gen() % 8 == 0) k = 200 + std::int64_t(gen() % 2000);  // long k: k-cuts and temporaries
  const int thread_choices[] = {1, 2, 3, 5, 7};
  const int threads = thread_choices[gen() % 5];
  const int extra = int(gen() % 4);
  const std::size_t caps[] = {std::numeric_limits<std::size_t>::max(), 0, 4096, 65536};
  const std::size_t cap = caps[gen() % 4];
  const double small = gen() % 5 == 0 ? default_context().small_flops() : 0.0;
  const T alpha = pick_scalar<T>(gen), beta = pick_scalar<T>(gen);
  const std::int64_t ra = ta == 'N' ? m : k, ca = ta == 'N' ? k : m, rb = tb == 'N' ? k : n, cb = tb == 'N' ? n : k;
  const std::int64_t lda = std::max<std::int64_t>(1, ra) + std::int64_t(gen() % 4);
  const std::int64_t ldb = std::max<std::int64_t>(1, rb) + std::int64_t(gen() % 4);
  const std::int64_t ldc = std::max<std::int64_t>(1, m) + std::int64_t(gen() % 4);
  auto A = random_matrix<T>(ra, ca, lda, gen), B = random_matrix<T>(rb, cb, ldb, gen);
  auto C = random_matrix<T>(m, n, ldc, gen);
  auto ref = reference_gemm(ta, tb, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  const context& ctx = context_for(threads, extra, cap, small);
  gemm<T>(ta, tb, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc, ctx);
  const std::string bad = check_bound(ref, m, n, k, C.data(), ldc);
  INFO("case ", index, ": type ", char(scalar_type_of<T>()), " ", ta, tb, " m=", m, " n=", n, " k=", k,
       " threads=", threads, " extra=", extra, " cap=", cap, " small=", small);
  CHECK_MESSAGE(bad.empty(), bad);
  const bool recursed = m > 0 && n > 0 && k > 0 && alpha != T(0) && small == 0.0;
  return recursed && make_plan(problem{scalar_type_of<T>(), ta, tb, m, n, k}, ctx).leaves() >= 2;
}

}  // namespace

TEST_CASE("randomized sweep: 2400 calls against the long-double reference") {
  std::mt19937_64 gen(20261122);
  int multi_leaf = 0;
  for (int i = 0; i < 2400; ++i) {
    bool deep = false;
    switch (i % 4) {
      case 0: deep = one_case<float>(gen, i); break;
      case 1: deep = one_case<double>(gen, i); break;
      case 2: deep = one_case<std::complex<float>>(gen, i); break;
      default: deep = one_case<std::complex<double>>(gen, i); break;
    }
    multi_leaf += deep;
  }
  // The sweep is not degenerate: many of its 2400 calls really ran multi-leaf plans.
  MESSAGE(multi_leaf, " of 2400 cases ran plans with >= 2 leaves");
  CHECK(multi_leaf >= 1000);
}
