// lib/dist/gemm.cpp — prism::dist::gemm: the rank level's execution of a plan.
//
// For each phase (rank-level DFS part), every rank: (1) posts the receives and sends of
// the A and B pieces its task needs and others need from it, (2) unpacks its blocks of A
// and B from its own pieces and the messages, (3) runs its local subtree of the plan (the
// shared-memory engine: numa, thread, cache levels) into its block of C with beta = 0,
// (4) sends each partial piece of C to its owner and receives those of its own pieces,
// (5) adds them, in rank order, into beta C (first phase of the cell) or C. Exactly the
// messages prism::rank_model lists, so the bytes counted equal its prediction. Buffers are
// sized from the model and allocated once (kept by the layout, reused by later calls);
// only the calling thread calls MPI.
#include <prism/bounds.hpp>
#include <prism/dist.hpp>
#include <prism/error.hpp>

#include "../recursive/executor.hpp"
#include "../runtime/runtime.hpp"
#include "../mpi/comm.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace prism::dist {

namespace {

using mpi::check_mpi;
using mpi::imag_bits;
using mpi::real_bits;

thread_local traffic last;

// Copies elements [first, first + count) of a cell (column-major) between a packed run
// and a block holding the cell (column-major, ld = blk.rows), one column segment at a
// time. E.g. a 4 x 3 cell at (8, 4) in a block at (8, 0) of 16 rows: element 5 is cell
// (1, 1), block (1, 5), index 1 + 5 * 16 = 81.
template <scalar T, class F>
void piece_segments(const block& cell, const block& blk, std::int64_t first, std::int64_t count, F&& f) {
  std::int64_t e = first, end = first + count, at = 0;
  while (e < end) {
    const std::int64_t col = e / cell.rows, row = e % cell.rows, len = std::min(end - e, cell.rows - row);
    f((cell.row - blk.row + row) + (cell.col - blk.col + col) * blk.rows, at, len);
    e += len, at += len;
  }
}

template <scalar T>
struct call {
  const layout& L;
  const rank_model& m;
  const plan& p;
  int me;
  MPI_Comm comm;
  MPI_Datatype type = mpi::mpi_type<T>();
  traffic tr;
  std::vector<MPI_Request> requests;
  std::vector<MPI_Status> statuses;
  std::vector<int> request_peer;  // per request: peer of a receive, -1 for a send
  std::vector<piece> mine[3];             // per operand: my pieces, ascending cell
  std::vector<std::int64_t> at_mine[3];   // per operand: offset of each piece in my storage

  call(const layout& l, MPI_Comm c) : L(l), m(l.model()), p(l.source()), me(l.rank()), comm(c) {
    for (operand o : {operand::a, operand::b, operand::c}) {
      mine[int(o)] = m.pieces(o, me);
      std::int64_t at = 0;
      for (const piece& pc : mine[int(o)]) at_mine[int(o)].push_back(at), at += pc.count;
    }
  }

  // Offset of my piece of cell c of operand o in my storage, -1 when I have none (a
  // binary search: my pieces are few, the cells of a big plan are not).
  std::int64_t offset(operand o, std::int64_t c) const {
    const auto& v = mine[int(o)];
    const auto it = std::lower_bound(v.begin(), v.end(), c, [](const piece& pc, std::int64_t x) { return pc.cell < x; });
    return it != v.end() && it->cell == c ? at_mine[int(o)][std::size_t(it - v.begin())] : -1;
  }

  static int tag(int q, operand o) { return q * 4 + int(o); }

  // When my block of operand o in phase q is one cell that only I hold, my storage of it
  // is that block, column-major with ld = its rows: no copy. Returns its cell, else -1.
  std::int64_t sole_cell(operand o, int q) const {
    const rank_task t = m.task(q, me);
    if (t.node < 0) return -1;
    const std::vector<std::int64_t> cells = m.cells_in(o, m.needed(o, t.shape));
    if (cells.size() != 1 || m.holders(o, cells[0]).size() != 1) return -1;
    return cells[0];
  }

  // A message of more than max_count elements goes as several of max_count (the last
  // shorter), each under the same tag: MPI keeps their order between one pair of ranks.
  // E.g. 5,000,000,000 doubles: three receives of 2^31 - 1, 2^31 - 1 and 705,032,706.
  static constexpr std::int64_t max_count = INT32_MAX;
  void post_recv(T* into, const transfer& x, int tg) {
    for (std::int64_t done = 0; done < x.elements; done += max_count) {
      requests.emplace_back();
      request_peer.push_back(x.peer);
      check_mpi(MPI_Irecv(into + done, int(std::min(max_count, x.elements - done)), type, x.peer, tg, comm,
                          &requests.back()),
                "MPI_Irecv");
    }
    tr.messages_received += 1;
  }
  void post_send(const T* from, const transfer& x, int tg) {
    for (std::int64_t done = 0; done < x.elements; done += max_count) {
      requests.emplace_back();
      request_peer.push_back(-1);
      check_mpi(MPI_Isend(from + done, int(std::min(max_count, x.elements - done)), type, x.peer, tg, comm,
                          &requests.back()),
                "MPI_Isend");
    }
    tr.messages_sent += 1;
    tr.bytes_sent += x.elements * std::int64_t(sizeof(T));
  }
  void complete() {
    mpi::wait_all(requests, statuses);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (request_peer[i] < 0) continue;
      MPI_Count bytes = 0;
      MPI_Get_elements_x(&statuses[i], MPI_BYTE, &bytes);
      tr.bytes_received += std::int64_t(bytes);
    }
    requests.clear();
    request_peer.clear();
  }

  // (1)-(2): fills blk (my task's block of operand o) from my storage and the messages.
  // Posts receives into `stage` and sends packed from `stage` after them; returns the end
  // of what it used.
  T* post_gather(operand o, int q, const T* own, T* stage, std::map<int, T*>& from) {
    for (const transfer& x : m.incoming(o, q, me)) {
      from[x.peer] = stage;
      post_recv(stage, x, tag(q, o));
      stage += x.elements;
    }
    for (const transfer& x : m.outgoing(o, q, me)) {
      T* msg = stage;
      for (std::int64_t c : m.cells_in(o, m.needed(o, m.task(q, x.peer).shape))) {
        const std::int64_t off = offset(o, c);
        if (off < 0) continue;
        const piece pc = m.owned_piece(o, c, me);
        std::copy_n(own + off, pc.count, stage);
        stage += pc.count;
      }
      post_send(msg, transfer{x.peer, std::int64_t(stage - msg)}, tag(q, o));
    }
    return stage;
  }
  void unpack(operand o, int q, const T* own, std::map<int, T*>& from, T* blk_data) {
    const block blk = m.needed(o, m.task(q, me).shape);
    for (std::int64_t c : m.cells_in(o, blk)) {
      const block cell = m.cell(o, c);
      for (int h : m.holders(o, c)) {
        const piece pc = m.owned_piece(o, c, h);
        if (pc.count == 0) continue;
        const T* src = h == me ? own + offset(o, c) : from[h];
        piece_segments<T>(cell, blk, pc.first, pc.count,
                          [&](std::int64_t to, std::int64_t at, std::int64_t len) { std::copy_n(src + at, len, blk_data + to); });
        if (h != me) from[h] += pc.count;
      }
    }
  }

  void run(T alpha, const T* A, const T* B, T beta, T* C, const context& ctx) {
    // Buffer sizes from the model: blocks and staging, the largest over phases.
    std::int64_t nA = 0, nB = 0, nC = 0, nStage = 0;
    for (int q = 0; q < m.phases(); ++q) {
      const rank_task t = m.task(q, me);
      if (t.node < 0) continue;
      nA = std::max(nA, m.needed(operand::a, t.shape).size());
      nB = std::max(nB, m.needed(operand::b, t.shape).size());
      nC = std::max(nC, m.needed(operand::c, t.shape).size());
      auto volume = [&](operand o) {
        std::int64_t n = 0;
        for (const transfer& x : m.incoming(o, q, me)) n += x.elements;
        for (const transfer& x : m.outgoing(o, q, me)) n += x.elements;
        return n;
      };
      const std::int64_t ab = volume(operand::a) + volume(operand::b), c = volume(operand::c);
      nStage = std::max({nStage, ab, c});
    }
    // The layout's buffers: allocated by the first call that needs them, reused after.
    T* a_blk = reinterpret_cast<T*>(L.buffers(std::size_t(nA + nB + nC + nStage) * sizeof(T)));
    T* b_blk = a_blk + nA;
    T* c_blk = b_blk + nB;
    T* stage = c_blk + nC;
    for (int q = 0; q < m.phases(); ++q) {
      const rank_task t = m.task(q, me);
      std::map<int, T*> from_a, from_b;
      T* next = post_gather(operand::a, q, A, stage, from_a);
      post_gather(operand::b, q, B, next, from_b);
      complete();
      std::int64_t direct_c = -1;
      if (t.node >= 0) {
        const std::int64_t sa = sole_cell(operand::a, q), sb = sole_cell(operand::b, q);
        const T* a = sa >= 0 ? A + offset(operand::a, sa) : a_blk;
        const T* b = sb >= 0 ? B + offset(operand::b, sb) : b_blk;
        if (sa < 0) unpack(operand::a, q, A, from_a, a_blk);
        if (sb < 0) unpack(operand::b, q, B, from_b, b_blk);
        const block ba = m.needed(operand::a, t.shape), bb = m.needed(operand::b, t.shape);
        // My block of C is one cell only I compute: the local engine writes my storage,
        // with the caller's beta in the cell's first phase, accumulating after.
        direct_c = sole_cell(operand::c, q);
        T* c = direct_c >= 0 ? C + offset(operand::c, direct_c) : c_blk;
        const T b_eff = direct_c < 0 ? T(0) : m.first_phase(direct_c) == q ? beta : T(1);
        prism::detail::run_subtree<T>(p, t.node, alpha, a, std::max<std::int64_t>(1, ba.rows), b,
                                      std::max<std::int64_t>(1, bb.rows), b_eff, c,
                                      std::max<std::int64_t>(1, t.shape.m), ctx);
      }
      reduce(q, beta, C, stage, c_blk, direct_c);
    }
  }

  // (4)-(5) for phase q: partial pieces of C to their owners, then my pieces summed.
  void reduce(int q, T beta, T* C, T* stage, const T* c_blk, std::int64_t direct_c) {
    const rank_task t = m.task(q, me);
    const block my_blk = t.node >= 0 ? m.needed(operand::c, t.shape) : block{};
    std::map<int, T*> from;
    for (const transfer& x : m.incoming(operand::c, q, me)) {
      from[x.peer] = stage;
      post_recv(stage, x, tag(q, operand::c));
      stage += x.elements;
    }
    if (t.node >= 0) {
      const std::vector<std::int64_t> cells = m.cells_in(operand::c, my_blk);
      for (const transfer& x : m.outgoing(operand::c, q, me)) {
        T* msg = stage;
        for (std::int64_t c : cells) {
          const piece pc = m.owned_piece(operand::c, c, x.peer);
          if (pc.count == 0) continue;
          piece_segments<T>(m.cell(operand::c, c), my_blk, pc.first, pc.count,
                            [&](std::int64_t at_blk, std::int64_t at, std::int64_t len) {
                              std::copy_n(c_blk + at_blk, len, msg + at);
                            });
          msg += pc.count;
        }
        post_send(stage, transfer{x.peer, std::int64_t(msg - stage)}, tag(q, operand::c));
        stage = msg;
      }
    }
    complete();
    // dst = beta C (first phase of the cell; 0 when beta = 0, C unread) or C, then += each
    // partial in rank order: a fixed order, so a fixed plan gives the same bits every run.
    std::int64_t at = 0;
    for (const piece& pc : mine[int(operand::c)]) {
      T* dst = C + at;
      at += pc.count;
      if (pc.cell == direct_c) continue;  // computed in place
      const std::vector<int>& comps = m.computers(q, pc.cell);
      if (comps.empty()) continue;
      if (m.first_phase(pc.cell) == q) {
        if (beta == T(0)) std::fill_n(dst, pc.count, T(0));
        else if (beta != T(1)) for (std::int64_t e = 0; e < pc.count; ++e) dst[e] *= beta;
      }
      const block cell = m.cell(operand::c, pc.cell);
      for (int s : comps) {
        if (s == me) {
          piece_segments<T>(cell, my_blk, pc.first, pc.count, [&](std::int64_t at_blk, std::int64_t at, std::int64_t len) {
            const T* src = c_blk + at_blk;
            T* out = dst + at;
            for (std::int64_t i = 0; i < len; ++i) out[i] += src[i];
          });
        } else {
          const T* src = from[s];
          for (std::int64_t e = 0; e < pc.count; ++e) dst[e] += src[e];
          from[s] += pc.count;
        }
      }
    }
  }
};

template <scalar T>
void gemm_impl(MPI_Comm comm, const plan* p_given, const problem* pr_given, T alpha, const matrix<T>& A,
               const matrix<T>& B, T beta, matrix<T>& C, const context& ctx) {
  const auto t0 = std::chrono::steady_clock::now();
  last = traffic{};
  const layout& L = *A.where();
  const plan& p = L.source();
  const problem& pr = p.problem();
  std::string local;
  int same = MPI_UNEQUAL;
  MPI_Comm_compare(comm, L.comm(), &same);
  if (same != MPI_CONGRUENT && same != MPI_IDENT) local = "comm is not the communicator of A's layout";
  else if (B.where() != A.where() || C.where() != A.where()) local = "A, B and C must be laid out by one layout";
  else if (A.which() != operand::a || B.which() != operand::b || C.which() != operand::c)
    local = "A, B and C must hold operands A, B and C";
  else if (p_given != nullptr && !(*p_given == p)) local = "the plan is not the one the matrices are laid out for";
  else if (pr_given != nullptr && !(pr_given->m == pr.m && pr_given->n == pr.n && pr_given->k == pr.k &&
                                    pr_given->type == pr.type &&
                                    std::toupper(pr_given->transa) == pr.transa && std::toupper(pr_given->transb) == pr.transb))
    local = "the problem is not the one the matrices are laid out for";
  else if (A.size() != L.local_size(operand::a) || B.size() != L.local_size(operand::b) || C.size() != L.local_size(operand::c))
    local = "a matrix's local storage does not match its layout";
  else {
    try {
      prism::detail::check_fits(p, ctx, true);
    } catch (const plan_error& e) {
      local = e.what();
    }
  }
  const problem& shown = pr_given != nullptr ? *pr_given : pr;
  mpi::agree(L.comm(), "prism::dist::gemm",
                {{"transa", 1, std::toupper(shown.transa)},
                 {"transb", 2, std::toupper(shown.transb)},
                 {"m", 3, shown.m},
                 {"n", 4, shown.n},
                 {"k", 5, shown.k},
                 {"alpha", 6, real_bits(alpha)},
                 {"alpha (imaginary part)", 6, imag_bits(alpha)},
                 {"beta", 9, real_bits(beta)},
                 {"beta (imaginary part)", 9, imag_bits(beta)},
                 {"plan", 0, L.plan_hash()}},
                local);
  const char* stats = std::getenv("PRISM_STATS");
  const bool measure = stats != nullptr && *stats != '\0' && std::string(stats) != "0";
  // Measuring: the pool lets go of blocks from earlier calls, so its peak loan is this call's.
  if (measure) ctx.runtime().pool().trim();
  if (pr.m > 0 && pr.n > 0 && L.active()) {
    if (pr.k == 0 || alpha == T(0)) {  // C = beta C, without reading C when beta = 0
      T* c = C.data();
      for (std::int64_t e = 0; e < C.size(); ++e) c[e] = beta == T(0) ? T(0) : beta * c[e];
    } else {
      call<T> run{L, L.comm()};
      run.run(alpha, A.data(), B.data(), beta, C.data(), ctx);
      last = run.tr;
    }
  }
  last.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (measure) {
    // prism's own memory on this rank: its pieces, the layout's buffers, the workspace lent.
    last.bytes_allocated = (A.size() + B.size() + C.size()) * std::int64_t(sizeof(T)) +
                           std::int64_t(L.buffer_bytes() + ctx.runtime().pool().snapshot().peak_on_loan);
    const rank_model& m = L.model();
    const double elem = double(sizeof(T));
    const double predicted = L.active() ? double(m.cost(L.rank()).peak_bytes()) : 0;
    double mine[5] = {double(last.bytes_received), double(last.messages_received), last.seconds,
                      double(last.bytes_allocated), predicted},
           mx[5], sum[5];
    MPI_Reduce(mine, mx, 5, MPI_DOUBLE, MPI_MAX, 0, L.comm());
    MPI_Reduce(mine, sum, 5, MPI_DOUBLE, MPI_SUM, 0, L.comm());
    if (L.rank() == 0) {
      const double bound = bounds::parallel_io_minus_owned(pr.m, pr.n, pr.k, L.size(), bounds::unlimited) * elem;
      std::fprintf(stderr,
                   "prism-dist: %c%c%c %lldx%lldx%lld on %d ranks (%d used, grid %s): received max %.3f MB, mean "
                   "%.3f MB (predicted max %.3f, mean %.3f); bound %.3f MB; messages max %.0f; %.4f s; memory max "
                   "%.3f MB (predicted max %.3f MB)\n",
                   char(pr.type), pr.transa, pr.transb, (long long)pr.m, (long long)pr.n, (long long)pr.k, L.size(),
                   m.ranks(), m.grid().c_str(), mx[0] / 1e6, sum[0] / L.size() / 1e6,
                   double(m.max_received()) * elem / 1e6, m.mean_received() * elem * m.ranks() / L.size() / 1e6,
                   bound / 1e6, mx[1], mx[2], mx[3] / 1e6, mx[4] / 1e6);
    }
  }
}

}  // namespace

template <scalar T>
void gemm(MPI_Comm comm, const plan& p, T alpha, const matrix<T>& A, const matrix<T>& B, T beta, matrix<T>& C,
          const context& ctx) {
  gemm_impl<T>(comm, &p, nullptr, alpha, A, B, beta, C, ctx);
}

template <scalar T>
void gemm(MPI_Comm comm, const problem& p, T alpha, const matrix<T>& A, const matrix<T>& B, T beta, matrix<T>& C,
          const context& ctx) {
  gemm_impl<T>(comm, nullptr, &p, alpha, A, B, beta, C, ctx);
}

traffic last_traffic() { return last; }

#define PRISM_INSTANTIATE(T)                                                                                 \
  template void gemm<T>(MPI_Comm, const plan&, T, const matrix<T>&, const matrix<T>&, T, matrix<T>&,         \
                        const context&);                                                                     \
  template void gemm<T>(MPI_Comm, const problem&, T, const matrix<T>&, const matrix<T>&, T, matrix<T>&,      \
                        const context&);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism::dist
