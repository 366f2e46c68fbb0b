// lib/leaf/kernels/tiling.cpp — the streaming leaf's driver: a gemm or rank-k leaf cut
// into the kernels' tasks (dot.cpp, outer.cpp, panel.cpp, diagonal.cpp, pack.cpp), in the
// chunk sizes and prefetch distance of the machine. What the leaf is for: streaming.hpp.
//
// The product. A real leaf above 16 x 16 runs the panel kernel (panel_sums, below): k in
// chunks whose block of rows stays in L1, register tiles of up to 4 vectors by 6 columns
// over the whole leaf, op(A) = A^T transposed chunk by chunk into the 'N' form. A complex
// leaf above 16 x 16 is tiled: k in L2-sized chunks (stream_tile_chunk_bytes), each 16 x 16
// block of C one pass of the kernels below over the chunk, which add their sums straight
// into a per-thread buffer. One pass turns every case into S = L R, an r x c result (r, c
// <= 16) of an r x k left operand L and a k x c right operand R, and then C = alpha S +
// beta C (or alpha S^T + beta C when the case was transposed). Two kernels cover the
// layouts:
//
//   dot   L and R both run along k in memory: op(A) = A^T or A^H and op(B) = B ('TN').
//         Vectors run along k; a register tile of TI x TJ accumulators takes TI rows of L
//         and TJ columns of R, and each accumulator's lanes are summed at the end.
//   outer L runs along its rows (op(A) = A, 'N'); R is read one element at a time and
//         broadcast ('NN', 'NT'). Vectors hold a column of L (up to 16 rows; a 16-row
//         complex column is 32 reals); each step l adds L(:, l) R(l, j) into column j's
//         accumulators.
//   'TT' (and TC, CT, CC) is C^T = op(B)^T op(A)^T, an outer product with L = op(B)^T,
//   whose columns run along n in memory. 'NT' takes whichever of m and n is longer as the
//   vectorised side.
//
// Memory. When all r x c sums fit one register tile, A and B are streamed in one pass.
// Otherwise k is cut into chunks (the machine's stream_outer_chunk_bytes of L and R
// together for the outer kernel, stream_dot_chunk_bytes for the dot kernel; 32 and 128
// KiB on the developers' host): every tile runs over the chunk, so the chunk comes from memory
// once and from cache for the other tiles, and the tiles' partial sums live in a small
// buffer between chunks. Nothing is packed or copied. Software prefetch keeps the many
// streams (a row or column of an operand each, up to 32) coming: see dot_tile and
#include "tasks.hpp"

#include <prism/error.hpp>

#include <algorithm>
#include <atomic>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

namespace prism::detail {

// The kernels' sizes: this host's machine description's, read once at the first call;
// streaming_set_sizes overrides them field by field (0: the description's).
namespace {
std::atomic<std::int64_t> size_override[5] = {};

const streaming_sizes& described_sizes() {
  static const streaming_sizes s = streaming_sizes_of(default_description());
  return s;
}

std::atomic<bool> leaf_ran{false};
}  // namespace

namespace streaming {
void note_leaf_ran() noexcept {
  if (!leaf_ran.load(std::memory_order_relaxed)) leaf_ran.store(true, std::memory_order_relaxed);
}
}  // namespace streaming

bool streaming_leaf_ran() noexcept { return leaf_ran.load(std::memory_order_relaxed); }

streaming_sizes streaming_sizes_of(const machine_description& mc) {
  auto bytes = [&](machine_key k) { return std::max<std::int64_t>(64, std::int64_t(mc.value(k))); };
  streaming_sizes s;
  s.outer_chunk = bytes(machine_key::stream_outer_chunk_bytes);
  s.dot_chunk = bytes(machine_key::stream_dot_chunk_bytes);
  s.tile_chunk = bytes(machine_key::stream_tile_chunk_bytes);
  s.prefetch = bytes(machine_key::stream_prefetch_bytes);
  s.syrk_chunk = bytes(machine_key::syrk_chunk_bytes);
  return s;
}

streaming_sizes streaming_current_sizes() {
  streaming_sizes s = described_sizes();
  std::int64_t* fields[5] = {&s.outer_chunk, &s.dot_chunk, &s.tile_chunk, &s.prefetch, &s.syrk_chunk};
  for (int i = 0; i < 5; ++i)
    if (const std::int64_t v = size_override[i].load(std::memory_order_relaxed); v > 0) *fields[i] = v;
  return s;
}

void streaming_set_sizes(const streaming_sizes& s) {
  const std::int64_t fields[5] = {s.outer_chunk, s.dot_chunk, s.tile_chunk, s.prefetch, s.syrk_chunk};
  for (int i = 0; i < 5; ++i) size_override[i].store(std::max<std::int64_t>(0, fields[i]), std::memory_order_relaxed);
}

namespace {

// Upper-case BLAS trans letter.
char trans_letter(char t) { return t == 'n' ? 'N' : t == 't' ? 'T' : t == 'c' ? 'C' : t; }

// S = op(A) op(B), or S += op(A) op(B) when `add`, for one block, m, n <=
// streaming_block_mn, k >= 1 (ta, tb upper case): S column-major m x n with leading
// dimension lds. One pass of the kernels over A and B, in the chunks and prefetch distance
// of z. The kernels write S themselves, except for a transposed case (below), which goes
// through a buffer.
template <scalar T>
void block_sums(const streaming_sizes& z, char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k,
                const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T* S, std::int64_t lds, bool add) {
  constexpr bool cx = !std::same_as<T, float> && !std::same_as<T, double>;
  alignas(64) T out[streaming_block_mn * streaming_block_mn];
  streaming::task t;
  t.k = k;
  t.S = S, t.s_ld = lds, t.add = add;
  t.dot_chunk_bytes = z.dot_chunk, t.outer_chunk_bytes = z.outer_chunk, t.flight_bytes = z.prefetch;
  bool transposed = false;
  // Which operands run along k in memory. A 1 x k op(A) = A with lda = 1 is a row stored
  // contiguously: it runs along k as well (likewise a k x 1 op(B) = B^T with ldb = 1).
  const bool a_along_k = ta != 'N' || (m == 1 && lda == 1);
  const bool b_along_k = tb == 'N' || (n == 1 && ldb == 1);
  const bool conj_a = cx && ta == 'C', conj_b = cx && tb == 'C';
  // op(A)(i, l) is A[i + l*lda] for 'N', A[l + i*lda] otherwise; op(B)(l, j) is
  // B[l + j*ldb] for 'N', B[j + l*ldb] otherwise.
  if (a_along_k && b_along_k) {  // TN: S = op(A) op(B) by dot products along k
    t.dot = true;
    t.rows = m, t.cols = n;
    t.L = A, t.ldl = ta == 'N' ? 1 : lda, t.conj_l = conj_a;
    t.R = B, t.rl = 1, t.rj = tb == 'N' ? ldb : 1, t.conj_r = conj_b;
  } else if (!a_along_k && (b_along_k || m >= n)) {  // NN, NT: columns of op(A) times R(l, j)
    t.rows = m, t.cols = n;
    t.L = A, t.ldl = lda, t.conj_l = false;
    t.R = B, t.conj_r = conj_b;
    if (tb == 'N') t.rl = 1, t.rj = ldb;
    else t.rl = ldb, t.rj = 1;
  } else {  // TT, and NT with n > m: S = op(B)^T op(A)^T = C^T, columns of op(B)^T
    transposed = true;  // the kernel writes S^T into the buffer
    t.S = out, t.s_ld = n, t.add = false;
    t.rows = n, t.cols = m;
    t.L = B, t.ldl = ldb, t.conj_l = conj_b;  // op(B)^T(j, l) = B[j + l*ldb]
    t.R = A, t.conj_r = conj_a;               // op(A)^T(l, i) = op(A)(i, l)
    if (ta == 'N') t.rl = lda, t.rj = 1;
    else t.rl = 1, t.rj = lda;
  }
  streaming::run<T>(t);
  if (!transposed) return;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) streaming::put(S[i + j * lds], out[j + i * n], add);
}

// The k extent of one chunk of a tiled leaf: op(A)'s m x kc and op(B)'s kc x n block take
// the machine's stream_tile_chunk_bytes together (the model: a quarter of one core's L2,
// 256 KiB on the developers' host), so the chunk stays in L2 while every block of C passes
// over it. Example, 256 KiB: 64 x 64 doubles, (64 + 64) * 8 B = 1 KiB per step of k,
// kc = 256; 128 x 128 complex double: 4 KiB per step, kc = 64 (the floor).
template <scalar T>
std::int64_t tiled_chunk(const streaming_sizes& z, std::int64_t m, std::int64_t n) {
  return std::max<std::int64_t>(64, z.tile_chunk / ((m + n) * std::int64_t(sizeof(T))));
}

// Per-thread scratch of the leaves: the tiled leaf's sums (up to 128 x 128 elements: 256
// KiB for complex double, too much for a task's stack), the panel kernel's packed chunk,
// and the syrk leaf's sums and transposed chunk. Raw blocks that stay usable while their
// thread exits: the main thread's thread_local objects are destroyed before the exit
// handlers run, and BLAS may be called from one (docs/dropin.md).
enum class scratch_slot { sums, panel, syrk_sums, syrk_chunk };
struct scratch_block {
  void* p = nullptr;
  std::size_t bytes = 0;
};
thread_local scratch_block scratch_blocks[4];  // trivially destructible: valid till the thread ends
thread_local bool scratch_freed = false;

// Every thread's kept blocks, listed in one process-wide set too (never destroyed): a leak
// checker that does not scan threads' storage (LeakSanitizer with use_tls=0, as the asan
// preset runs it) sees the blocks of workers alive at exit as held, which they are.
std::mutex kept_lock;
std::unordered_set<void*>& kept_blocks() {
  static std::unordered_set<void*>& all = *new std::unordered_set<void*>;
  return all;
}
void keep_block(void* p, void* old) {
  const std::lock_guard<std::mutex> hold(kept_lock);
  kept_blocks().erase(old);
  if (p != nullptr) kept_blocks().insert(p);
}

struct scratch_owner {  // frees the thread's blocks when it exits
  bool armed = false;
  ~scratch_owner() {
    for (scratch_block& b : scratch_blocks) {
      keep_block(nullptr, b.p);
      std::free(b.p), b = {};
    }
    scratch_freed = true;
  }
};
thread_local scratch_owner scratch_keeper;

// 64-byte aligned room for `count` elements of T for one leaf call: the thread's block of
// `slot`, grown as needed; once the thread's blocks are freed (it is exiting), a block of
// the lease's own, freed with it.
template <class T>
class scratch {
 public:
  scratch(scratch_slot slot, std::size_t count) {
    const std::size_t bytes = (count * sizeof(T) + 63) / 64 * 64;
    scratch_block& b = scratch_blocks[int(slot)];
    if (!scratch_freed && b.bytes >= bytes) {
      p_ = static_cast<T*>(b.p);
      return;
    }
    void* p = std::aligned_alloc(64, std::max<std::size_t>(bytes, 64));
    if (p == nullptr) throw std::bad_alloc();
    if (scratch_freed) {
      own_ = true;
    } else {
      scratch_keeper.armed = true;  // (its destructor now runs at the thread's exit)
      try {
        keep_block(p, b.p);
      } catch (...) {
        std::free(p);
        throw;
      }
      std::free(b.p);
      b = {p, bytes};
    }
    p_ = static_cast<T*>(p);
  }
  ~scratch() {
    if (own_) std::free(p_);
  }
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
  T* get() const noexcept { return p_; }

 private:
  T* p_ = nullptr;
  bool own_ = false;
};

// The k extent of one chunk of the panel kernel: the chunk of one block of rows (at most
// 256 bytes a step, the 4 AVX-512 vectors of a register tile) takes the machine's
// stream_outer_chunk_bytes (the model: 1/3 of one core's L1d, 16 KiB on the developers'
// host), so it stays in L1 while the column pieces pass over it; between 64 steps (the
// tiles' sums are added to S once a chunk) and the tiled leaf's L2 chunk. Example, 16 KiB:
// 32 x 32 and 64 x 64 doubles, 256 bytes a step: 64 steps.
template <scalar T>
std::int64_t panel_chunk(const streaming_sizes& z, std::int64_t m, std::int64_t n) {
  const std::int64_t step = std::min<std::int64_t>(m * std::int64_t(sizeof(T)), 256);
  return std::clamp<std::int64_t>(z.outer_chunk / step, 64, std::max<std::int64_t>(64, tiled_chunk<T>(z, m, n)));
}

// S += op(A) op(B) for a real leaf above 16 x 16 by the panel kernel, k in chunks
// (panel_chunk): op(A) = A is read where it lies, op(A) = A^T is transposed chunk by chunk
// into the 'N' form (pack_chunk, the rank-k leaf's transposition), op(B) is read where it
// lies. S is m x n with leading dimension lds (m rounded up to 64 bytes).
template <scalar T>
void panel_sums(const streaming_sizes& z, char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k,
                const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T* S, std::int64_t lds) {
  const std::int64_t kc = panel_chunk<T>(z, m, n);
  scratch<T> packed(scratch_slot::panel, ta == 'N' ? 0 : std::size_t(m * std::min(kc, k)));
  T* P = ta == 'N' ? nullptr : packed.get();
  streaming::panel_task t;
  t.rows = m, t.cols = n, t.S = S, t.lds = lds;
  t.rl = tb == 'N' ? 1 : ldb, t.rj = tb == 'N' ? ldb : 1;
  for (std::int64_t l0 = 0; l0 < k; l0 += kc) {
    const std::int64_t len = std::min(kc, k - l0), rest = k - l0 - len;
    t.len = len, t.ahead = rest > 0 ? kc : 0;
    if (ta == 'N') {
      t.L = A + l0 * lda, t.ldl = lda, t.fetch_l = true;
    } else {
      streaming::pack_task pk;
      pk.A = A + l0, pk.lda = lda, pk.n = m, pk.len = len, pk.conj = false, pk.P = P;
      streaming::pack_chunk<T>(pk);
      t.L = P, t.ldl = m, t.fetch_l = false;
      t.next = rest > 0 ? A + l0 + len : nullptr;
      t.next_cols = m, t.next_rows = std::min(kc, rest), t.next_ld = lda;
    }
    t.R = tb == 'N' ? B + l0 : B + l0 * ldb;
    streaming::panel<T>(t);
  }
}

// x + beta c: beta = 0 does not read c, beta = 1 adds c as it is, as reference BLAS's
// no-transpose forms and OpenBLAS do (for a complex c, (Inf, 3) * (1, 0) would be (Inf, NaN);
// reference's transposed forms form it).
template <class T>
T add_scaled(T x, T beta, T c) {
  return beta == T(0) ? x : beta == T(1) ? x + c : x + beta * c;
}

}  // namespace

template <scalar T>
void streaming_gemm(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                    const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
                    std::int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (!streaming_applies(m, n))
    throw error("the streaming leaf takes m, n <= " + std::to_string(streaming_max_mn) + ", got " +
                std::to_string(m) + "x" + std::to_string(n));
  streaming::note_leaf_ran();
  const bool zero = alpha == T(0) || k <= 0;
  if (zero && beta == T(1)) return;  // reference BLAS: C untouched (not even -0 + 0)
  const char ta = trans_letter(transa), tb = trans_letter(transb);
  const streaming_sizes z = streaming_current_sizes();
  // S = op(A) op(B), column-major with leading dimension ls.
  alignas(64) T small[streaming_block_mn * streaming_block_mn];
  T* S = small;
  std::optional<scratch<T>> held;  // S when it is larger
  std::int64_t ls = m;
  if (zero) {
  } else if (m <= streaming_block_mn && n <= streaming_block_mn) {
    block_sums<T>(z, ta, tb, m, n, k, A, lda, B, ldb, S, ls, false);  // one pass, all sums in registers
  } else if constexpr (std::same_as<T, float> || std::same_as<T, double>) {
    // Real types: the panel kernel (panel_sums), with register tiles over the whole m x n.
    ls = (m + 64 / std::int64_t(sizeof(T)) - 1) / (64 / std::int64_t(sizeof(T))) * (64 / std::int64_t(sizeof(T)));
    S = held.emplace(scratch_slot::sums, std::size_t(ls * n)).get();
    std::fill(S, S + ls * n, T(0));
    panel_sums<T>(z, ta, tb, m, n, k, A, lda, B, ldb, S, ls);
  } else {
    // Complex types, tiled: k in chunks that stay in L2 (tiled_chunk); for each chunk,
    // every block of C of at most 16 x 16 runs the one-pass kernel over it, so A and B come
    // from memory once and from L2 for the other blocks; the chunks' sums add up in S, and C
    // is read and written once, at the end. Example: 64 x 64 x 2^20 complex doubles, kc = 64:
    // each chunk 16 blocks of 16 x 16; a block reads 16 x 64 of op(A) and 64 x 16 of op(B).
    S = held.emplace(scratch_slot::sums, std::size_t(m * n)).get();
    std::fill(S, S + m * n, T(0));
    const std::int64_t kc = tiled_chunk<T>(z, m, n), bs = streaming_block_mn;
    for (std::int64_t l0 = 0; l0 < k; l0 += kc) {
      const std::int64_t kk = std::min(kc, k - l0);
      for (std::int64_t j0 = 0; j0 < n; j0 += bs)
        for (std::int64_t i0 = 0; i0 < m; i0 += bs) {
          const std::int64_t mb = std::min(bs, m - i0), nb = std::min(bs, n - j0);
          // op(A)(i0, l0) and op(B)(l0, j0) in storage (see block_sums).
          const T* a = ta == 'N' ? A + i0 + l0 * lda : A + l0 + i0 * lda;
          const T* b = tb == 'N' ? B + l0 + j0 * ldb : B + j0 + l0 * ldb;
          block_sums<T>(z, ta, tb, mb, nb, kk, a, lda, b, ldb, S + i0 + j0 * ls, ls, true);
        }
    }
  }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      T& c = C[i + j * ldc];
      if (zero) {
        c = beta == T(0) ? T(0) : beta * c;
        continue;
      }
      const T s = S[i + j * ls];
      c = add_scaled(alpha * s, beta, c);
    }
}



template <scalar T>
void streaming_rank_k(bool herm, char uplo, char trans, std::int64_t n, std::int64_t k, T alpha, const T* A,
                    std::int64_t lda, T beta, T* C, std::int64_t ldc) {
  constexpr bool cx = !std::same_as<T, float> && !std::same_as<T, double>;
  using R = std::conditional_t<std::same_as<T, float> || std::same_as<T, std::complex<float>>, float, double>;
  if (n <= 0) return;
  if (n > streaming_max_mn)
    throw error("the streaming leaf takes n <= " + std::to_string(streaming_max_mn) + ", got " + std::to_string(n));
  streaming::note_leaf_ran();
  const bool zero = alpha == T(0) || k <= 0;
  if (zero && beta == T(1)) return;  // reference BLAS: C untouched
  const char u = uplo == 'l' || uplo == 'L' ? 'L' : 'U';
  const bool n_form = trans == 'N' || trans == 'n';
  constexpr std::int64_t w = cx ? 2 : 1;
  // Sums: column j at out + j * ld reals, ld a whole number of 64-byte lines (any
  // target's vectors), e.g. n = 20 doubles: ld = 24.
  const std::int64_t line = 64 / std::int64_t(sizeof(R)), ld = (n * w + line - 1) / line * line;
  R* out = nullptr;
  std::optional<scratch<R>> sums;
  if (!zero) {
    out = sums.emplace(scratch_slot::syrk_sums, std::size_t(ld * n)).get();
    std::fill(out, out + ld * n, R(0));
    // k in chunks of the machine's syrk_chunk_bytes of op(A) (the model: 2/3 of one core's
    // L1d, 32 KiB of the developers' 48 KiB), e.g. 32 KiB and 32 doubles: 128 steps, 64
    // doubles: 64; every register tile of the triangle passes over the chunk. (Measured
    // there with the gram set, 2 threads: 8 KiB chunks ran 2^22 x 32 and 2^20 x 64 in 40
    // and 39 ms, 16-40 KiB in 36-38 and 31-35 ms; tiles of at most 3 or 2 vectors instead
    // of 4: 41 / 36 and 57 / 39 ms.)
    const std::int64_t kc =
        std::max<std::int64_t>(16, streaming_current_sizes().syrk_chunk / (n * std::int64_t(sizeof(T))));
    streaming::syrk_task t;
    t.n = n, t.out = out, t.out_ld = ld;
    // herk: C = A A^H ('N') or A^H A ('C'); the latter's transposed chunk holds conj(A)^T,
    // so both are L L^H.
    t.conj = herm;
    scratch<T> chunk(scratch_slot::syrk_chunk, n_form ? 0 : std::size_t(n * std::min(kc, k)));
    T* packed = n_form ? nullptr : chunk.get();
    for (std::int64_t l0 = 0; l0 < k; l0 += kc) {
      const std::int64_t len = std::min(kc, k - l0);
      t.len = len;
      if (n_form) {
        t.L = A + l0 * lda, t.ldl = lda;
        t.next = l0 + len < k ? A + (l0 + len) * lda : nullptr;
        t.next_cols = std::min(kc, k - l0 - len), t.next_rows = n, t.next_ld = lda;
      } else {
        // op(A)(i, l) = A(l, i) (conjugated for herk): column i of A, rows [l0, l0 + len),
        // becomes row i of the n x len chunk P, P(i, l) at packed[i + l * n].
        streaming::pack_task pk;
        pk.A = A + l0, pk.lda = lda, pk.n = n, pk.len = len, pk.conj = herm, pk.P = packed;
        streaming::pack_chunk<T>(pk);
        t.L = packed, t.ldl = n;
        // The next chunk's rows of every column of A come in while the kernel runs.
        t.next = l0 + len < k ? A + l0 + len : nullptr, t.next_always = true;
        t.next_cols = n, t.next_rows = std::min(kc, k - l0 - len), t.next_ld = lda;
      }
      streaming::syrk_chunk<T>(t);
    }
  }
  // C's uplo triangle from the upper sums S(i, j), i <= j: 'L' takes C(j, i) = S(i, j)
  // (herk: conj(S(i, j))). herk keeps the diagonal real, as reference ?herk.
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i <= j; ++i) {
      T& c = u == 'U' ? C[i + j * ldc] : C[j + i * ldc];
      if (zero) {
        c = beta == T(0) ? T(0) : beta * c;
      } else {
        T s = reinterpret_cast<const T*>(out + j * ld)[i];
        if constexpr (cx)
          if (herm && u == 'L') s = std::conj(s);
        c = add_scaled(alpha * s, beta, c);
      }
      if constexpr (cx)
        if (herm && i == j) c = T(c.real());
    }
}

#define PRISM_INSTANTIATE(T)                                                                                \
  template void streaming_gemm<T>(char, char, std::int64_t, std::int64_t, std::int64_t, T, const T*,        \
                                  std::int64_t, const T*, std::int64_t, T, T*, std::int64_t);         \
  template void streaming_rank_k<T>(bool, char, char, std::int64_t, std::int64_t, T, const T*, std::int64_t, T, T*, \
                                  std::int64_t);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism::detail
