// lib/mpi/rank_k_exchange.cpp — see rank_k_exchange.hpp.
#include "rank_k_exchange.hpp"

#include "../ranks/rank_k_cyclic.hpp"

#include <prism/gemm.hpp>
#include <prism/syrk.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <map>
#include <thread>
#include <vector>

namespace prism::mpi {

namespace {

using a_cell = rank_k_model::a_cell;

template <class T>
constexpr bool is_complex_v = std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>;

// A message: its peer and the pieces it carries, in cell order.
struct a_message {
  int peer = 0;
  std::vector<std::pair<a_cell, piece>> pieces;
  std::int64_t count = 0;
};

// Where row block b's cells of one phase land: its op(A) columns [k0, k1) in a buffer
// in stored orientation (trans 'N': rows x len, ld rows; else len x rows, ld len).
struct a_block {
  std::int64_t k0 = 0, k1 = 0, at = 0;
};

// Calls f(cell offset, buffer offset, run) for the column runs of piece [first, first +
// count) of cell x placed in block buffer bb. E.g. a 4-row cell ('N'), bb.k0 = 0, x.k0 =
// 2, piece [6, 11): (6, 10, 2), (8, 12, 3) with ld 4 (column 1 rows 2-3, column 2 rows 0-2).
template <class F>
void each_run(const rank_k_model& m, const a_cell& x, const piece& pc, const a_block& bb, F&& f) {
  const bool n_trans = m.source().transa == 'N';
  const std::int64_t rows_b = m.block_rows(x.b), len = bb.k1 - bb.k0;
  const std::int64_t R = n_trans ? rows_b : x.k1 - x.k0;        // the cell's stored rows
  const std::int64_t ld = n_trans ? rows_b : len;                // the buffer's
  const std::int64_t r0 = n_trans ? 0 : x.k0 - bb.k0, c0 = n_trans ? x.k0 - bb.k0 : 0;
  for (std::int64_t e = pc.first, end = pc.first + pc.count; e < end;) {
    const std::int64_t i = e % R, j = e / R, run = std::min(end - e, R - i);
    f(e - pc.first, bb.at + (r0 + i) + (c0 + j) * ld, run);
    e += run;
  }
}

// Calls f(cell element, unit-buffer offset, run) for elements [first, first + count) of a
// C block of s rows in the stored triangle: a rectangle is its buffer's own column-major
// order; a diagonal block is packed column by column (ranks::for_each_run), its buffer an
// s x s square. E.g. s = 3, L: elements 3-4 are column 1, rows 1-2: offsets 4-5.
template <class F>
void each_c_run(std::int64_t s, bool diagonal, char uplo, const piece& pc, F&& f) {
  const ranks::rank_k_span span{0, 0, s, pc.first, pc.count, diagonal ? uplo : char(0)};
  ranks::for_each_run(span, [&](std::int64_t i, std::int64_t j, std::int64_t len, std::int64_t at) {
    f(pc.first + at, i + j * s, len);
  });
}

template <scalar T>
struct rank_k_executor {
  const rank_k_model& m;
  MPI_Comm comm;
  int me;
  exchange_counts& counts;
  message_engine<T> messages;
  bool herk;
  char uplo;

  // My A pieces' offsets in my storage, by cell.
  std::map<std::pair<std::int64_t, int>, std::pair<piece, std::int64_t>> mine;

  rank_k_executor(const rank_k_model& mm, MPI_Comm c, int r, exchange_counts& n)
      : m(mm), comm(c), me(r), counts(n), messages(c, n), herk(mm.source().op == operation::herk), uplo(mm.source().uplo) {
    std::int64_t at = 0;
    for (const auto& [x, pc] : m.a_pieces(me)) mine[{x.k0, x.b}] = {pc, at}, at += pc.count;
  }

  // My units over the slice, each with its C buffer offset, in block-index order.
  struct unit_buffer {
    int i = 0, j = 0;
    std::int64_t at = 0, rows = 0, cols = 0;
    bool started = false;
  };
  std::vector<unit_buffer> units;
  std::int64_t c_elements = 0;

  void plan_units() {
    for (const rank_k_unit& u : m.slice_units(me)) units.push_back(unit_buffer{u.i, u.j, 0, m.block_rows(u.i), m.block_rows(u.j)});
    std::sort(units.begin(), units.end(), [](const unit_buffer& a, const unit_buffer& b) {
      return std::int64_t(a.i) * (a.i + 1) / 2 + a.j < std::int64_t(b.i) * (b.i + 1) / 2 + b.j;
    });
    for (unit_buffer& u : units) {
      // Stored orientation: L: rows block i x columns block j; U: rows j x columns i.
      if (uplo == 'U') std::swap(u.rows, u.cols);
      u.at = c_elements, c_elements += u.rows * u.cols;
    }
  }
  unit_buffer& unit(int i, int j) {
    return *std::find_if(units.begin(), units.end(), [&](const unit_buffer& b) { return b.i == i && b.j == j; });
  }

  // One phase's A exchange: incoming and outgoing messages by peer, my blocks.
  struct phase {
    std::vector<a_message> in, out;
    std::vector<std::pair<a_cell, piece>> self;
    std::map<int, a_block> blocks;
    std::int64_t block_elements = 0, stage = 0;
  };

  phase plan_phase(int q) {
    phase ph;
    std::map<int, a_message> in, out;
    for (const a_cell& x : m.a_needs(q, me)) {
      a_block& bb = ph.blocks.try_emplace(x.b, a_block{x.k0, x.k1, 0}).first->second;
      bb.k0 = std::min(bb.k0, x.k0), bb.k1 = std::max(bb.k1, x.k1);
      const std::vector<int> h = m.a_holders(x);
      const std::vector<piece> shares = m.a_shares(x);  // the model's split, holder by holder
      const std::int64_t s = std::int64_t(h.size());
      const std::int64_t t = std::lower_bound(h.begin(), h.end(), me) - h.begin();
      const piece own = shares[std::size_t(t)];
      for (std::int64_t y = 0; y < s; ++y) {
        const int peer = h[std::size_t(y)];
        const piece theirs = shares[std::size_t(y)];
        if (peer == me) {
          if (own.count > 0) ph.self.emplace_back(x, own);
          continue;
        }
        if (theirs.count > 0) in[peer].pieces.emplace_back(x, theirs), in[peer].count += theirs.count;
        if (own.count > 0) out[peer].pieces.emplace_back(x, own), out[peer].count += own.count;
      }
    }
    for (auto& [b, bb] : ph.blocks) bb.at = ph.block_elements, ph.block_elements += m.block_rows(b) * (bb.k1 - bb.k0);
    for (auto& [peer, msg] : in) msg.peer = peer, ph.stage += msg.count, ph.in.push_back(std::move(msg));
    for (auto& [peer, msg] : out) msg.peer = peer, ph.stage += msg.count, ph.out.push_back(std::move(msg));
    return ph;
  }

  // One C message: peer and (unit, piece) pairs in block order.
  struct c_message {
    int peer = 0;
    std::vector<std::pair<std::size_t, piece>> parts;  // unit index, piece of its block
    std::int64_t count = 0;
  };
  std::vector<c_message> c_in, c_out;
  std::vector<std::pair<std::size_t, piece>> c_self;  // my pieces, with my storage offsets in piece.cell
  std::int64_t c_stage = 0;

  void plan_reduce() {
    std::map<int, c_message> in, out;
    std::int64_t at = 0;
    for (std::size_t x = 0; x < units.size(); ++x) {
      const unit_buffer& u = units[x];
      const std::vector<int> h = m.c_holders(u.i, u.j);
      const std::vector<piece> shares = m.c_shares(u.i, u.j);  // the model's split, computer by computer
      const std::int64_t s = std::int64_t(h.size());
      for (std::int64_t y = 0; y < s; ++y) {
        const int peer = h[std::size_t(y)];
        const piece pc = shares[std::size_t(y)];
        if (pc.count == 0) continue;
        if (peer == me) {
          c_self.emplace_back(x, piece{at, pc.first, pc.count});
          at += pc.count;
          continue;
        }
        out[peer].parts.emplace_back(x, pc), out[peer].count += pc.count;
      }
      const std::int64_t t = std::lower_bound(h.begin(), h.end(), me) - h.begin();
      const piece own = shares[std::size_t(t)];
      if (own.count > 0)
        for (int peer : h)
          if (peer != me) in[peer].parts.emplace_back(x, own), in[peer].count += own.count;
    }
    for (auto& [peer, msg] : in) msg.peer = peer, c_stage += msg.count, c_in.push_back(std::move(msg));
    for (auto& [peer, msg] : out) msg.peer = peer, c_stage += msg.count, c_out.push_back(std::move(msg));
  }

  T* a_buf = nullptr;
  T* c_buf = nullptr;
  T* stage = nullptr;

  void run(T alpha, const T* A, T beta, T* C, const context& ctx, const buffer_source& buffers) {
    const bool active = me < m.ranks();
    std::vector<phase> phases;
    std::int64_t most_blocks = 0, most_stage = 0;
    if (active) {
      plan_units();
      plan_reduce();
      for (int q = 0; q < m.phases(); ++q) {
        phases.push_back(plan_phase(q));
        most_blocks = std::max(most_blocks, phases.back().block_elements);
        most_stage = std::max(most_stage, phases.back().stage);
      }
      most_stage = std::max(most_stage, c_stage);
    }
    const test_fault& fault = fault_hook();
    const bool faulty = fault.process == me;
    const std::int64_t total = most_blocks + c_elements + most_stage;
    counts.buffer_bytes = std::size_t(total) * sizeof(T);
    std::string why;
    try {
      if (faulty && fault.what == test_fault::kind::alloc) buffers(std::size_t(1) << 62);
      if (total > 0) a_buf = reinterpret_cast<T*>(buffers(counts.buffer_bytes));
    } catch (const std::exception& e) {
      why = "its exchange buffers (" + std::to_string(counts.buffer_bytes) + " bytes) could not be allocated: " + e.what();
    }
    throw_if_failed(lowest_failed(comm, me, !why.empty()), me, why, true);
    c_buf = a_buf + most_blocks;
    stage = c_buf + c_elements;
    bool first = true;
    for (int q = 0; q < m.phases(); ++q) {
      if (active) {
        gather(phases[std::size_t(q)], A);
        try {
          if (first && faulty && fault.what == test_fault::kind::stall) std::this_thread::sleep_for(std::chrono::seconds(600));
          compute(q, phases[std::size_t(q)], alpha, ctx);
          if (first && faulty && fault.what == test_fault::kind::nan) nan_check();
        } catch (const std::exception& e) {
          why = e.what();
        }
        first = false;
      }
      throw_if_failed(lowest_failed(comm, me, !why.empty()), me, why, false);
    }
    if (active) reduce(beta, C);
  }

  // (1) My row blocks of A this phase.
  void gather(const phase& ph, const T* A) {
    T* s = stage;
    std::vector<T*> at_in;
    for (const a_message& msg : ph.in) at_in.push_back(s), messages.post(true, s, msg.count, msg.peer, 1), s += msg.count;
    for (const a_message& msg : ph.out) {
      T* d = s;
      for (const auto& [x, pc] : msg.pieces) {
        const auto& [own, at] = mine.at({x.k0, x.b});
        d = std::copy_n(A + at, own.count, d);
      }
      messages.post(false, s, msg.count, msg.peer, 1);
      s = d;
    }
    for (const auto& [x, pc] : ph.self) {
      const std::int64_t at = mine.at({x.k0, x.b}).second;
      each_run(m, x, pc, ph.blocks.at(x.b), [&](std::int64_t e, std::int64_t b, std::int64_t n) {
        std::copy_n(A + at + e, n, a_buf + b);
      });
    }
    messages.complete();
    for (std::size_t i = 0; i < ph.in.size(); ++i) {
      const T* src = at_in[i];
      for (const auto& [x, pc] : ph.in[i].pieces) {
        each_run(m, x, pc, ph.blocks.at(x.b), [&](std::int64_t e, std::int64_t b, std::int64_t n) {
          std::copy_n(src + e, n, a_buf + b);
        });
        src += pc.count;
      }
    }
  }

  // (2) My units of phase q into their C buffers. The local engine runs with no room for
  // temporaries (max_memory 0): the rank's footprint is what rank_k_model counts.
  void compute(int q, const phase& ph, T alpha, const context& ctx0) {
    context ctx = ctx0;
    ctx.set_max_memory(0);
    const bool n_trans = m.source().transa == 'N';
    const char t = herk ? 'C' : 'T';
    // op(A) rows of block b over columns [k0, k1): pointer and leading dimension.
    auto op_a = [&](int b, std::int64_t k0) {
      const a_block& bb = ph.blocks.at(b);
      const std::int64_t len = bb.k1 - bb.k0;
      return n_trans ? std::pair<const T*, std::int64_t>{a_buf + bb.at + (k0 - bb.k0) * m.block_rows(b), std::max<std::int64_t>(1, m.block_rows(b))}
                     : std::pair<const T*, std::int64_t>{a_buf + bb.at + (k0 - bb.k0), std::max<std::int64_t>(1, len)};
    };
    for (const rank_k_unit& u : m.units(q, me)) {
      unit_buffer& ub = unit(u.i, u.j);
      const std::int64_t len = u.k1 - u.k0;
      T* c = c_buf + ub.at;
      const T beta_local = ub.started ? T(1) : T(0);
      ub.started = true;
      if (u.i == u.j) {
        const auto [a, lda] = op_a(u.i, u.k0);
        const char tr = n_trans ? 'N' : t;
        if constexpr (is_complex_v<T>) {
          if (herk) {
            prism::herk<T>(uplo, tr, ub.rows, len, alpha.real(), a, lda, beta_local.real(), c, std::max<std::int64_t>(1, ub.rows), ctx);
            continue;
          }
        }
        prism::syrk<T>(uplo, tr, ub.rows, len, alpha, a, lda, beta_local, c, std::max<std::int64_t>(1, ub.rows), ctx);
        continue;
      }
      // Stored block rows r x columns s: L (r, s) = (i, j), U (j, i); C_rs = op(A)_r op(A)_s^T.
      const int r = uplo == 'L' ? u.i : u.j, s = uplo == 'L' ? u.j : u.i;
      const auto [ar, ldr] = op_a(r, u.k0);
      const auto [as, lds] = op_a(s, u.k0);
      prism::gemm<T>(n_trans ? 'N' : t, n_trans ? t : 'N', ub.rows, ub.cols, len, alpha, ar, ldr, as, lds, beta_local, c,
                     std::max<std::int64_t>(1, ub.rows), ctx);
    }
  }

  // The test-only NaN check (PRISM_TEST_FAULT=rank:P:nan).
  void nan_check() {
    if (c_elements == 0) return;
    c_buf[0] = T(std::nan(""));
    for (std::int64_t e = 0; e < c_elements; ++e)
      if (std::isnan(std::abs(c_buf[e])))
        throw error("NaN in its partial C at element " + std::to_string(e) + " (test-only NaN check, PRISM_TEST_FAULT)");
  }

  // (3) beta C on my pieces, then every computer's partial, in rank order.
  void reduce(T beta, T* C) {
    for (unit_buffer& u : units)
      if (!u.started) std::fill_n(c_buf + u.at, u.rows * u.cols, T(0));  // an empty half of a slice
    T* s = stage;
    std::vector<T*> at_in;
    for (const c_message& msg : c_in) at_in.push_back(s), messages.post(true, s, msg.count, msg.peer, 2), s += msg.count;
    for (const c_message& msg : c_out) {
      T* d = s;
      for (const auto& [x, pc] : msg.parts)
        each_c_run(units[x].rows, units[x].i == units[x].j, uplo, pc, [&](std::int64_t, std::int64_t b, std::int64_t n) {
          d = std::copy_n(c_buf + units[x].at + b, n, d);
        });
      messages.post(false, s, msg.count, msg.peer, 2);
      s = d;
    }
    // beta C while the messages travel (beta = 0: zeros, C unread; herk: a real diagonal).
    for (const auto& [x, pc] : c_self) {
      T* c = C + pc.cell;
      if (beta == T(0)) std::fill_n(c, pc.count, T(0));
      else if (beta != T(1))
        for (std::int64_t e = 0; e < pc.count; ++e) c[e] *= beta;
    }
    messages.complete();
    // Partials in rank order: the other computers' from their messages, mine at my place.
    std::vector<std::pair<int, int>> order;  // (rank, message index or -1 for mine)
    for (std::size_t i = 0; i < c_in.size(); ++i) order.emplace_back(c_in[i].peer, int(i));
    order.emplace_back(me, -1);
    std::sort(order.begin(), order.end());
    // Offsets of each message's parts, by unit.
    for (const auto& [rank, i] : order) {
      if (i < 0) {
        for (const auto& [x, pc] : c_self) {
          T* c = C + pc.cell;
          each_c_run(units[x].rows, units[x].i == units[x].j, uplo, piece{0, pc.first, pc.count},
                     [&](std::int64_t e, std::int64_t b, std::int64_t n) {
                       const T* src = c_buf + units[x].at + b;
                       for (std::int64_t z = 0; z < n; ++z) c[e - pc.first + z] += src[z];
                     });
        }
        continue;
      }
      const T* src = at_in[std::size_t(i)];
      for (const auto& [x, pc] : c_in[std::size_t(i)].parts) {
        // My storage offset of this block's piece.
        const auto it = std::find_if(c_self.begin(), c_self.end(), [&](const auto& v) { return v.first == x; });
        T* c = C + it->second.cell;
        for (std::int64_t z = 0; z < pc.count; ++z) c[z] += src[z];
        src += pc.count;
      }
    }
    if (herk) zero_diagonal_imag(C);
  }

  // herk: the diagonal of C is real (reference ?herk sets its imaginary parts to zero).
  void zero_diagonal_imag(T* C) {
    if constexpr (is_complex_v<T>) {
      for (const auto& [x, pc] : c_self) {
        const unit_buffer& u = units[x];
        if (u.i != u.j) continue;
        T* c = C + pc.cell;
        each_c_run(u.rows, true, uplo, piece{0, pc.first, pc.count}, [&](std::int64_t e, std::int64_t b, std::int64_t n) {
          for (std::int64_t z = 0; z < n; ++z) {
            const std::int64_t off = b + z;  // row + column * rows in the square buffer
            if (off % u.rows == off / u.rows) c[e - pc.first + z] = T(c[e - pc.first + z].real());
          }
        });
      }
    }
  }
};

}  // namespace

template <scalar T>
void run_rank_k(const rank_k_model& m, MPI_Comm comm, T alpha, const T* A, T beta, T* C, const context& ctx,
                const buffer_source& buffers, exchange_counts& counts) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  rank_k_executor<T> x{m, comm, me, counts};
  x.run(alpha, A, beta, C, ctx, buffers);
}

#define PRISM_INSTANTIATE(T)                                                                                  \
  template void run_rank_k<T>(const rank_k_model&, MPI_Comm, T, const T*, T, T*, const context&,              \
                              const buffer_source&, exchange_counts&);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism::mpi
