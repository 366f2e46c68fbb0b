// lib/recursive/syrk.cpp — ?syrk / ?herk: the entry prologue (checks, trivial cases, small
// calls to one leaf) and the triangle recursion.
//
// The triangle recursion cuts the n x n x k "half prism" of a rank-k update:
//  - k-cut (BFS over threads): parts 1.. write triangle-only temporaries C' with beta = 0,
//    part 0 writes C with the caller's beta, then the temporaries' triangles are added into
//    C. Taken when k dominates (k >= 2n) and the temporaries fit the context's memory cap;
//    the Gram shape (n = 32, k = 2^22) is cut this way into one part per thread.
//  - n-cut: C splits into two diagonal triangles, themselves rank-k updates (recursion),
//    and one off-diagonal block, a plain gemm that prism::gemm (the planner and executor
//    of the gemm engine, with its memory cap and NUMA levels) runs. Needs no extra memory.
//  - leaf: single-threaded cblas_?syrk / cblas_?herk of the leaf backend.
// The tree is decided on the fly from (n, k, threads, memory cap); it is not a prism::plan
// (plans print and parse gemm problems only: see README "syrk and herk").
#include <prism/error.hpp>
#include <prism/gemm.hpp>
#include <prism/syrk.hpp>

#include "../blas/blas_library.hpp"
#include "../runtime/runtime.hpp"
#include "arguments.hpp"
#include "split.hpp"
#include "temporaries.hpp"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

namespace prism {

namespace {

using detail::rank_k_info;
using detail::upper_trans;

template <scalar T>
constexpr bool complex_v = std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>;

// The exception for Fortran position `info` (shifted by one when `cblas`: the layout is
// argument 1 there), e.g. "dsyrk: argument 7 (lda) must be >= max(1, 5), got 4".
invalid_argument rank_k_error(const std::string& routine, int info, bool cblas, bool herm, bool complex, char trans,
                              std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldc) {
  const int pos = cblas ? info + 1 : info;
  auto at_least = [](std::int64_t need, std::int64_t got) {
    return "must be >= max(1, " + std::to_string(need) + "), got " + std::to_string(got);
  };
  switch (info) {
    case 1: return invalid_argument(routine, "uplo", pos, "must be 'U' or 'L'");
    case 2:
      return invalid_argument(routine, "trans", pos,
                              herm ? "must be 'N' or 'C'" : complex ? "must be 'N' or 'T'" : "must be 'N', 'T' or 'C'");
    case 3: return invalid_argument(routine, "n", pos, "must be >= 0, got " + std::to_string(n));
    case 4: return invalid_argument(routine, "k", pos, "must be >= 0, got " + std::to_string(k));
    case 7: return invalid_argument(routine, "lda", pos, at_least(upper_trans(trans) == 'N' ? n : k, lda));
    default: return invalid_argument(routine, "ldc", pos, at_least(n, ldc));
  }
}

// Fixed arguments of one rank-k update. trans is normalised to 'N', 'T' (syrk) or 'C'
// (herk); for herk alpha is real (stored as T with zero imaginary part).
template <scalar T>
struct rank_k {
  bool herm;
  char uplo, trans;
  T alpha;
  const T* A;
  std::int64_t lda;
  const context& ctx;

  // Row i, column l of op(A) (n x k): A[i + l*lda] for 'N', else A[l + i*lda]. E.g. the
  // rows [8, 16), k-range [256, 512) of a 'T' operand start at A + 256 + 8*lda.
  const T* at(std::int64_t i, std::int64_t l) const { return trans == 'N' ? A + i + l * lda : A + l + i * lda; }
};

// Elements (i, j) of C's uplo triangle in column j: rows [0, j] for 'U', [j, n) for 'L'.
inline std::int64_t first_row(char uplo, std::int64_t j) { return uplo == 'U' ? 0 : j; }
inline std::int64_t end_row(char uplo, std::int64_t j, std::int64_t n) { return uplo == 'U' ? j + 1 : n; }

// C = beta C on the triangle (alpha = 0 or k = 0); beta = 0 writes zeros without reading.
// herk keeps the diagonal real: C(j, j) = beta * Re C(j, j), as reference ?herk.
template <scalar T>
void scale_triangle(bool herm, char uplo, std::int64_t n, T beta, T* C, std::int64_t ldc) {
  for (std::int64_t j = 0; j < n; ++j) {
    T* c = C + j * ldc;
    for (std::int64_t i = first_row(uplo, j); i < end_row(uplo, j, n); ++i) c[i] = beta == T(0) ? T(0) : beta * c[i];
    if constexpr (complex_v<T>)
      if (herm) c[j] = T(c[j].real());  // beta is real: the loop left beta * Re C(j, j) there
  }
}

template <scalar T>
double rank_k_flops(std::int64_t n, std::int64_t k) {
  return (complex_v<T> ? 4.0 : 1.0) * double(n) * double(n + 1) * double(k);
}

template <scalar T>
void leaf(const rank_k<T>& r, std::int64_t i0, std::int64_t n, std::int64_t l0, std::int64_t k, T beta, T* C,
          std::int64_t ldc) {
  leaf_backend b = detail::choose_leaf(r.ctx.leaf(), scalar_type_of<T>(), n, n, k);
  // The streaming leaf is a gemm kernel only: a rank-k leaf it would take runs the BLAS
  // leaf the rule picks otherwise.
  if (b == leaf_backend::streaming) b = detail::choose_blas_leaf(scalar_type_of<T>(), n, n, k);
  const detail::blas_library& lib = detail::leaf_library(b);
  if constexpr (complex_v<T>)
    if (r.herm) return lib.herk<T>(r.uplo, r.trans, n, k, r.alpha.real(), r.at(i0, l0), r.lda, beta.real(), C, ldc);
  lib.syrk<T>(r.uplo, r.trans, n, k, r.alpha, r.at(i0, l0), r.lda, beta, C, ldc);
}

// One step of the triangle recursion, decided from the shape, the threads and the memory
// budget alone, so that running (recurse) and describing (describe_syrk) take the same tree.
struct step {
  enum kind_t { leaf, k_cut, n_cut } kind = leaf;
  std::vector<std::int64_t> ks;  // k-cut: k of each part (part 0 updates C)
  std::vector<int> shares;       // k-cut: threads of each part
  std::size_t temp_bytes = 0;    // k-cut: bytes of one n x n temporary
  std::size_t rest = 0;          // k-cut: the budget each part gets
  std::int64_t n1 = 0;           // n-cut: size of the first diagonal triangle
};

// `threads` threads to share out and `budget` bytes of temporaries (the context's
// max_memory at the top; a k-cut's concurrent parts share what it leaves, so the
// temporaries alive at once never exceed the cap).
step step_for(const context& ctx, scalar_type st, std::int64_t n, std::int64_t k, int threads, std::size_t budget) {
  step s;
  const double flops = (is_complex(st) ? 4.0 : 1.0) * double(n) * double(n + 1) * double(k);
  if (n == 0 || threads <= 1 || flops < ctx.small_flops() || (n == 1 && k < 512)) return s;
  // k-cut: as many parts as threads (and 256-wide k pieces) allow, minus what the memory
  // cap refuses: each part after the first needs one n x n temporary.
  if (k >= 2 * n && k >= 512) {
    const std::size_t t_bytes = detail::temp_bytes(n, n, element_size(st));
    const std::size_t fit = t_bytes == 0 ? std::size_t(threads) : budget / t_bytes;
    const int parts = int(std::min<std::int64_t>({threads, k / 256, std::int64_t(std::min<std::size_t>(fit, 1u << 20)) + 1}));
    if (parts >= 2) {
      // Threads per part: as even as possible (7 threads, 3 parts -> 3, 2, 2); the k edge is
      // shared in the same ratio, e.g. k = 3000 in 3:2:2 -> 1280, 896, 824 (256-aligned).
      s.kind = step::k_cut;
      s.temp_bytes = t_bytes;
      s.rest = (budget - t_bytes * std::size_t(parts - 1)) / std::size_t(parts);
      s.shares.assign(std::size_t(parts), threads / parts);
      for (int c = 0; c < threads % parts; ++c) ++s.shares[std::size_t(c)];
      s.ks = detail::split(k, s.shares, detail::alignment(dim::k, st, k));
      return s;
    }
  }
  if (n < 2) return s;
  s.kind = step::n_cut;
  s.n1 = detail::first_part(n, 1, 2, detail::alignment(dim::n, st, n));
  return s;
}

// The update of C's n x n triangle from rows [i0, i0 + n) and k-range [l0, l0 + k) of
// op(A), as step_for decides. C points at the triangle's (0, 0).
template <scalar T>
void recurse(const rank_k<T>& r, std::int64_t i0, std::int64_t n, std::int64_t l0, std::int64_t k, T beta, T* C,
             std::int64_t ldc, int threads, std::size_t budget) {
  if (n == 0) return;
  const step st = step_for(r.ctx, scalar_type_of<T>(), n, k, threads, budget);
  if (st.kind == step::leaf) return leaf(r, i0, n, l0, k, beta, C, ldc);
  if (st.kind == step::k_cut) {
    const int parts = int(st.ks.size());
    const std::vector<std::int64_t>& ks = st.ks;
    const std::vector<int>& shares = st.shares;
    const std::size_t t_bytes = st.temp_bytes, rest = st.rest;
    detail::runtime& rt = r.ctx.runtime();
    detail::workspace_pool::lease ws = rt.pool().acquire(t_bytes * std::size_t(parts - 1));
    auto temp = [&](int c) { return reinterpret_cast<T*>(ws.data() + t_bytes * std::size_t(c - 1)); };
    rt.arena().execute([&] {
      oneapi::tbb::task_group group;
      std::int64_t l = l0 + ks[0];
      for (int c = 1; c < parts; ++c) {
        const std::int64_t lc = l, kc = ks[std::size_t(c)];
        const int tc = shares[std::size_t(c)];
        T* to = temp(c);
        group.run([&r, i0, n, lc, kc, to, tc, rest] { recurse(r, i0, n, lc, kc, T(0), to, n, tc, rest); });
        l += kc;
      }
      recurse(r, i0, n, l0, ks[0], beta, C, ldc, shares[0], rest);
      group.wait();
    });
    // C's triangle += each temporary's triangle (ld n), column by column; columns are
    // shared among the threads once the triangle is large (n = 32: one thread, 528 adds).
    auto columns = [&](std::int64_t j0, std::int64_t j1) {
      for (std::int64_t j = j0; j < j1; ++j)
        for (int c = 1; c < parts; ++c) {
          const T* t = temp(c) + j * n;
          T* cj = C + j * ldc;
          for (std::int64_t i = first_row(r.uplo, j); i < end_row(r.uplo, j, n); ++i) cj[i] += t[i];
        }
    };
    if (n * n < 2 * 65536) return columns(0, n);
    rt.arena().execute([&] {
      oneapi::tbb::parallel_for(oneapi::tbb::blocked_range<std::int64_t>(0, n),
                                [&](const oneapi::tbb::blocked_range<std::int64_t>& b) { columns(b.begin(), b.end()); });
    });
    return;
  }
  // n-cut at n1 (detail::first_part, 8-aligned where that costs < 1/32 of balance: n = 40
  // gives 20, n = 10 gives 5). Example n = 10, n1 = 5, uplo 'L': the triangles are
  // C[0:5, 0:5] and C[5:10, 5:10] (at C + 5 + 5 ldc), and the off-diagonal block
  // C21 = C[5:10, 0:5] (5 x 5, at C + 5) is
  //   alpha op(A)[5:10, :] op(A)[0:5, :]^T (^H for herk) + beta C21,
  // a gemm with m = n - n1 rows and n1 columns; for 'U' it is C12 = C[0:5, 5:10] at
  // C + 5 ldc, alpha op(A)[0:5, :] op(A)[5:10, :]^T, m = n1 and n - n1 columns.
  const std::int64_t n1 = st.n1, n2 = n - n1;
  recurse(r, i0, n1, l0, k, beta, C, ldc, threads, budget);  // in sequence: each may use all of budget
  recurse(r, i0 + n1, n2, l0, k, beta, C + n1 + n1 * ldc, ldc, threads, budget);
  // op(A)[rows] op(A)[cols]^T as gemm letters: op(A) = A ('N') pairs with A^T / A^H on the
  // right; op(A) = A^T or A^H pairs with plain A.
  const char left = r.trans, right = r.trans == 'N' ? (r.herm ? 'C' : 'T') : 'N';
  const bool lower = r.uplo == 'L';
  const std::int64_t rows0 = lower ? i0 + n1 : i0, cols0 = lower ? i0 : i0 + n1;
  const std::int64_t m = lower ? n2 : n1, nn = lower ? n1 : n2;
  T* block = lower ? C + n1 : C + n1 * ldc;
  // op(A) rows as a gemm operand: for 'N' the rows start at A + row (lda unchanged), for
  // 'T'/'C' they are columns of A starting at A + row * lda; rank_k::at gives both.
  gemm<T>(left, right, m, nn, k, r.alpha, r.at(rows0, l0), r.lda, r.at(cols0, l0), r.lda, beta, block, ldc, r.ctx);
}

// What describe_syrk counts: leaves (?syrk/?herk calls), off-diagonal gemm blocks, the
// depth, and the bytes of temporaries the k-cuts allocate in all.
struct tree_counts {
  std::int64_t leaves = 0, gemms = 0;
  int depth = 0;
  std::size_t temp_bytes = 0;
};

void count_tree(const context& ctx, scalar_type t, std::int64_t n, std::int64_t k, int threads, std::size_t budget,
                int depth, tree_counts& out) {
  if (n == 0) return;
  out.depth = std::max(out.depth, depth);
  const step s = step_for(ctx, t, n, k, threads, budget);
  if (s.kind == step::leaf) {
    ++out.leaves;
  } else if (s.kind == step::k_cut) {
    out.temp_bytes += s.temp_bytes * (s.ks.size() - 1);
    for (std::size_t c = 0; c < s.ks.size(); ++c) count_tree(ctx, t, n, s.ks[c], s.shares[c], s.rest, depth + 1, out);
  } else {
    ++out.gemms;
    count_tree(ctx, t, s.n1, k, threads, budget, depth + 1, out);
    count_tree(ctx, t, n - s.n1, k, threads, budget, depth + 1, out);
  }
}

template <scalar T>
void run_rank_k(bool herm, const std::string& routine, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha,
                const T* A, std::int64_t lda, T beta, T* C, std::int64_t ldc, const context& ctx) {
  const int info = rank_k_info(herm, complex_v<T>, uplo, trans, n, k, lda, ldc);
  if (info != 0) throw rank_k_error(routine, info, false, herm, complex_v<T>, trans, n, k, lda, ldc);
  const char u = upper_trans(uplo);
  char t = upper_trans(trans);
  if (!herm && t == 'C') t = 'T';  // real syrk: 'C' is 'T'
  if (n == 0) return;
  if ((alpha == T(0) || k == 0) && beta == T(1)) return;
  if (alpha == T(0) || k == 0) return scale_triangle(herm, u, n, beta, C, ldc);
  if (lda > INT_MAX || ldc > INT_MAX)
    throw error("leading dimensions above 2^31-1 are not supported by the 32-bit leaf BLAS");
  const rank_k<T> r{herm, u, t, alpha, A, lda, ctx};
  recurse(r, 0, n, 0, k, beta, C, ldc, ctx.threads(), ctx.max_memory());
}

// Row-major C (n x n) is column-major C^T: its upper triangle is the column-major lower one.
// Row-major A with trans 'N' (n x k, lda >= k) is column-major A^T, so op(A) op(A)^T is the
// column-major call with trans 'T' (herk: 'C', since C^T = conj(C) = conj(A) A^T = A'^H A').
// Reference CBLAS checks uplo (2) and trans (3) itself, then the flipped Fortran call's
// number plus one: 4 n, 5 k, 8 lda, 11 ldc, which is the same number checked on the
// row-major arguments (lda >= k for 'N' is the flipped call's lda >= k for 'T').
template <scalar T>
void run_row_major(bool herm, const std::string& routine, char uplo, char trans, std::int64_t n, std::int64_t k,
                   T alpha, const T* A, std::int64_t lda, T beta, T* C, std::int64_t ldc, const context& ctx) {
  const char u = upper_trans(uplo), t = upper_trans(trans);
  const char fu = u == 'U' ? 'L' : 'U';
  const char ft = t == 'N' ? (herm ? 'C' : 'T') : 'N';
  // uplo and trans are checked as given (a bad letter must not be flipped into a good one),
  // the rest on the flipped call, whose A is k x n column-major for a row-major 'N'.
  int info = rank_k_info(herm, complex_v<T>, u, t, 0, 0, 1, 1);
  if (info == 0) info = rank_k_info(herm, complex_v<T>, fu, ft, n, k, lda, ldc);
  if (info != 0) throw rank_k_error(routine, info, true, herm, complex_v<T>, ft, n, k, lda, ldc);
  run_rank_k<T>(herm, routine, fu, ft, n, k, alpha, A, lda, beta, C, ldc, ctx);
}

template <scalar T>
std::string name_of(const char* prefix, const char* op) {
  return std::string(prefix) + char(scalar_type_of<T>()) + op;
}

}  // namespace

template <scalar T>
void syrk(char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, const T* A, std::int64_t lda, T beta,
          T* C, std::int64_t ldc, const context& ctx) {
  run_rank_k<T>(false, name_of<T>("", "syrk"), uplo, trans, n, k, alpha, A, lda, beta, C, ldc, ctx);
}

template <scalar T>
void syrk(layout order, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, const T* A, std::int64_t lda,
          T beta, T* C, std::int64_t ldc, const context& ctx) {
  if (order == layout::col_major) return syrk<T>(uplo, trans, n, k, alpha, A, lda, beta, C, ldc, ctx);
  run_row_major<T>(false, name_of<T>("cblas_", "syrk"), uplo, trans, n, k, alpha, A, lda, beta, C, ldc, ctx);
}

template <scalar T>
  requires(std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>)
void herk(char uplo, char trans, std::int64_t n, std::int64_t k, real_type<T> alpha, const T* A, std::int64_t lda,
          real_type<T> beta, T* C, std::int64_t ldc, const context& ctx) {
  run_rank_k<T>(true, name_of<T>("", "herk"), uplo, trans, n, k, T(alpha), A, lda, T(beta), C, ldc, ctx);
}

template <scalar T>
  requires(std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>)
void herk(layout order, char uplo, char trans, std::int64_t n, std::int64_t k, real_type<T> alpha, const T* A,
          std::int64_t lda, real_type<T> beta, T* C, std::int64_t ldc, const context& ctx) {
  if (order == layout::col_major) return herk<T>(uplo, trans, n, k, alpha, A, lda, beta, C, ldc, ctx);
  run_row_major<T>(true, name_of<T>("cblas_", "herk"), uplo, trans, n, k, T(alpha), A, lda, T(beta), C, ldc, ctx);
}

std::string describe_syrk(scalar_type t, std::int64_t n, std::int64_t k, const context& ctx) {
  if (n < 0 || k < 0) throw error("describe_syrk: n and k must be >= 0");
  const step s = step_for(ctx, t, n, k, ctx.threads(), ctx.max_memory());
  std::string top;
  if (s.kind == step::leaf) {
    top = "leaf n=" + std::to_string(n) + " k=" + std::to_string(k);
  } else if (s.kind == step::k_cut) {
    top = "k-cut " + std::to_string(s.ks.size()) + ":";
    for (std::size_t c = 0; c < s.ks.size(); ++c) {  // appended piece by piece (GCC 12 -Wrestrict false positive)
      top += ' ';
      top += std::to_string(s.ks[c]);
      top += '@';
      top += std::to_string(s.shares[c]);
      top += 't';
    }
  } else {
    top = "n-cut " + std::to_string(s.n1) + "+" + std::to_string(n - s.n1) + " (off-diagonal gemm " +
          std::to_string(std::max(s.n1, n - s.n1)) + "x" + std::to_string(std::min(s.n1, n - s.n1)) + "x" +
          std::to_string(k) + ")";
  }
  tree_counts c;
  count_tree(ctx, t, n, k, ctx.threads(), ctx.max_memory(), 0, c);
  return top + "; depth " + std::to_string(c.depth) + ", " + std::to_string(c.leaves) + " leaves, " +
         std::to_string(c.gemms) + " gemm blocks, " + std::to_string(c.temp_bytes) + " B temporaries";
}

#define PRISM_INSTANTIATE(T)                                                                                 \
  template void syrk<T>(char, char, std::int64_t, std::int64_t, T, const T*, std::int64_t, T, T*, std::int64_t, \
                        const context&);                                                                     \
  template void syrk<T>(layout, char, char, std::int64_t, std::int64_t, T, const T*, std::int64_t, T, T*,       \
                        std::int64_t, const context&);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE
#define PRISM_INSTANTIATE(T)                                                                                      \
  template void herk<T>(char, char, std::int64_t, std::int64_t, real_type<T>, const T*, std::int64_t,            \
                        real_type<T>, T*, std::int64_t, const context&);                                          \
  template void herk<T>(layout, char, char, std::int64_t, std::int64_t, real_type<T>, const T*, std::int64_t,    \
                        real_type<T>, T*, std::int64_t, const context&);
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism
