// lib/mpi/rank_exchange.cpp — see rank_exchange.hpp.
#include "rank_exchange.hpp"

#include "../environment/environment.hpp"
#include "../ranks/tree_schedule.hpp"
#include "../recursive/executor.hpp"

#include <prism/gemm.hpp>
#include <prism/syrk.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <complex>
#include <map>
#include <string>
#include <thread>

namespace prism::mpi {

using prism::detail::test_fault;  // PRISM_TEST_FAULT (docs/development.md, "Faults across ranks")
using ranks::each_segment;
using ranks::ownership;
using ranks::region;
using ranks::task;
using ranks::tile;

namespace {

// A phase's non-blocking messages: posted, completed together, bytes counted from the statuses.
template <scalar T>
class message_engine {
 public:
  // Messages over comm, counted into `counts`.
  message_engine(MPI_Comm comm, exchange_counts& counts) : comm_(comm), counts_(counts) {}

  // Posts a receive (recv) or send of n elements at data with peer and tag; above 2^31 - 1
  // elements, as several under one tag (MPI keeps their order), counted as one message.
  void post(bool recv, T* data, std::int64_t n, int peer, int tag) {
    for (std::int64_t done = 0; done < n; done += max_count) {
      requests_.emplace_back();
      is_recv_.push_back(recv);
      const int c = int(std::min(max_count, n - done));
      if (recv) check_mpi(MPI_Irecv(data + done, c, mpi_type<T>(), peer, tag, comm_, &requests_.back()), "MPI_Irecv");
      else check_mpi(MPI_Isend(data + done, c, mpi_type<T>(), peer, tag, comm_, &requests_.back()), "MPI_Isend");
    }
    if (recv) counts_.messages_received += 1;
    else counts_.messages_sent += 1, counts_.bytes_sent += n * std::int64_t(sizeof(T));
  }

  // Room for `requests` at once, made before anything moves: a failed allocation
  // mid-exchange would leave the peers waiting.
  void reserve(std::size_t requests) {
    requests_.reserve(requests), statuses_.reserve(requests), is_recv_.reserve(requests);
  }
  // The requests a message of n elements takes: one per 2^31 - 1, e.g. none for n = 0.
  static std::size_t requests_of(std::int64_t n) { return std::size_t((n + max_count - 1) / max_count); }

  // Completes every posted message and adds the bytes received.
  void complete() {
    wait_all(requests_, statuses_);
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      if (!is_recv_[i]) continue;
      MPI_Count bytes = 0;
      MPI_Get_elements_x(&statuses_[i], MPI_BYTE, &bytes);
      counts_.bytes_received += std::int64_t(bytes);
    }
    requests_.clear();
    is_recv_.clear();
  }

 private:
  static constexpr std::int64_t max_count = INT_MAX;
  MPI_Comm comm_;
  exchange_counts& counts_;
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> statuses_;
  std::vector<char> is_recv_;
};

// One message: its peer process, the tiles it carries (each of a region of the sender's
// or the receiver's list), and for partials of C received the plan rank that computed them.
struct message {
  int peer = 0, rank = -1;
  std::vector<std::pair<std::size_t, tile>> parts;
  std::int64_t count = 0;
};

// One operand's regions of a phase (A, B) or of an epoch (C), and their messages.
struct exchange {
  std::vector<region> regions;
  std::vector<char> direct;                 // used where it lies
  std::vector<std::vector<tile>> self;      // the part of each region I hold myself
  std::vector<std::int64_t> at;             // each region's offset in its buffer
  std::vector<message> in, out;
  std::int64_t blocks = 0, traffic = 0;     // buffer elements, message elements
  const region* containing(const block& b) const {
    for (const region& g : regions)
      if (b.row >= g.at.row && b.row + b.rows <= g.at.row + g.at.rows && b.col >= g.at.col && b.col + b.cols <= g.at.col + g.at.cols)
        return &g;
    return nullptr;
  }
};

// My part of operand o's exchange in phase q (rank r, process me) under the exchange rule:
// A, B: each holder's part of my regions comes to me, my part of each other rank's comes
// to it; C: my partial of each holder's part goes to it, each other computer's of mine
// comes to me.
exchange build(const ownership& own, operand o, int q, int me, std::vector<region> mine) {
  const ranks::schedule& m = own.model();
  const int r = own.rank_of(me);
  const bool reads = o != operand::c;
  exchange ex;
  std::map<int, message> in, out;
  auto add = [](message& msg, std::size_t x, std::vector<tile>& tiles) {
    for (tile& t : tiles) msg.count += t.count(), msg.parts.emplace_back(x, std::move(t));
    tiles.clear();
  };
  std::vector<tile> tiles;
  ex.regions = std::move(mine);
  ex.self.resize(ex.regions.size());
  for (std::size_t x = 0; x < ex.regions.size(); ++x) {
    const region& g = ex.regions[x];
    ex.direct.push_back(ranks::in_place(own, o, q, r, g) ? 1 : 0);
    ex.at.push_back(ex.blocks);
    if (!ex.direct.back()) ex.blocks += g.at.size();
    for (int h : own.holders(o, g)) {
      if (h == me) own.held(o, g, h, ex.self[x]);
      else own.held(o, g, h, tiles), add((reads ? in : out)[h], x, tiles);
    }
  }
  for (int r2 : own.needers(o, q, me)) {
    if (r2 == r) continue;
    std::vector<region> theirs[3];
    if (reads) m.regions(q, r2, theirs);
    else theirs[2] = m.epoch_regions(q, r2);
    message& msg = (reads ? out : in)[own.process_of(r2)];
    msg.rank = r2;
    for (std::size_t x = 0; x < theirs[int(o)].size(); ++x) own.held(o, theirs[int(o)][x], me, tiles), add(msg, x, tiles);
  }
  for (auto* side : {&in, &out})
    for (auto& [peer, msg] : *side)
      if (msg.count > 0) msg.peer = peer, ex.traffic += msg.count, (side == &in ? ex.in : ex.out).push_back(std::move(msg));
  return ex;
}

// My part of a phase: my tasks, my A and B regions' exchanges, and the index of the epoch
// its C regions belong to.
struct phase {
  std::vector<task> tasks;
  exchange reads[2];
  std::size_t epoch = 0;
  bool reduce = false;
};

template <scalar T>
class executor {
 public:
  executor(const ownership& o, MPI_Comm c, int me, exchange_counts& n) : own_(o), comm_(c), me_(me), counts_(n), messages_(c, n) {}

  void run(T alpha, const T* A, const T* B, T beta, T* C, const context& ctx, const buffer_source& buffers) {
    allocate(buffers);
    // beta C is formed once up front, unless a one-phase schedule's C regions are all mine in
    // place and nobody adds to them: then my tasks write my storage with beta.
    const bool beta_in_engine = own_.model().phases() == 1 && !epochs_.empty() && epochs_[0].in.empty() &&
                                std::all_of(epochs_[0].direct.begin(), epochs_[0].direct.end(), [](char d) { return d != 0; });
    std::vector<std::int64_t> diag;  // reference ?herk: Im C(j, j) is never read, and comes out 0
    if (own_.model().product().op == operation::herk) own_.diagonal(me_, diag);
    if (!beta_in_engine && beta != T(1)) {
      make_real(diag, C);  // before beta * C, so that a NaN there stays out of the real part
      std::vector<tile> mine;
      own_.all_held_c(me_, mine);
      scale_tiles(mine, beta, C);
    }
    std::string why;
    for (const phase& ph : phases_) {
      gather(ph, A, B);
      try {
        compute(ph, alpha, A, B, beta_in_engine ? beta : T(1), C, ctx);
      } catch (const std::exception& e) {
        why = e.what();
      }
      // Agreed before the next exchange: a failed task ends the call on every process.
      agree_local_step(comm_, me_, why, false);
      if (ph.reduce) reduce(epochs_[ph.epoch], C);
    }
    make_real(diag, C);
  }

 private:
  // Every phase's exchanges, and each epoch's C, built before anything moves.
  void plan_phases() {
    const ranks::schedule& m = own_.model();
    const int r = own_.rank_of(me_);
    for (int q = 0; q < m.phases(); ++q) {
      phase ph;
      std::vector<region> mine[3];
      if (r >= 0) m.tasks(q, r, ph.tasks), m.regions(q, r, mine);
      for (int o = 0; o < 2; ++o) ph.reads[o] = build(own_, operand(o), q, me_, mine[o]);
      ph.epoch = epochs_.size();
      ph.reduce = m.reduces_after(q);
      if (ph.reduce) epochs_.push_back(build(own_, operand::c, q, me_, r >= 0 ? m.epoch_regions(q, r) : std::vector<region>{}));
      phases_.push_back(std::move(ph));
    }
    // Requests posted at once and messages received, at most: so that the exchanges
    // allocate nothing once they run (allocate() reserves them).
    auto requests = [](const exchange& e) {
      std::size_t n = 0;
      for (const auto* side : {&e.in, &e.out})
        for (const message& msg : *side) n += message_engine<T>::requests_of(msg.count);
      return n;
    };
    for (phase& ph : phases_) {
      need_.staging = std::max(need_.staging, ph.reads[0].traffic + ph.reads[1].traffic);
      most_requests_ = std::max(most_requests_, requests(ph.reads[0]) + requests(ph.reads[1]));
      for (int x = 0; x < 2; ++x) {
        need_.blocks[x] = std::max(need_.blocks[x], ph.reads[x].blocks);
        most_in_[x] = std::max(most_in_[x], ph.reads[x].in.size());
      }
    }
    for (const exchange& e : epochs_) {
      need_.blocks[2] = std::max(need_.blocks[2], e.blocks), need_.staging = std::max(need_.staging, e.traffic);
      most_requests_ = std::max(most_requests_, requests(e));
      most_in_[2] = std::max(most_in_[2], e.in.size());
    }
  }

  // The phases' exchanges and the buffers first, agreed, so that a process that cannot
  // have them leaves C untouched everywhere. Under PRISM_TEST_FAULT, `setup` throws
  // bad_alloc while planning and `alloc` asks for 2^62 bytes of buffers.
  void allocate(const buffer_source& buffers) {
    const test_fault& fault = detail::process_environment().fault.get();
    std::string why;
    try {
      if (fault.process == me_ && fault.what == test_fault::kind::setup) throw std::bad_alloc();
      plan_phases();
    } catch (const std::exception& e) {
      why = std::string("its exchange could not be planned: ") + e.what();
    }
    counts_.buffer_bytes = std::size_t(need_.total()) * sizeof(T);
    if (why.empty()) try {
        if (fault.process == me_ && fault.what == test_fault::kind::alloc) buffers(std::size_t(1) << 62);
        if (need_.total() > 0) base_[0] = reinterpret_cast<T*>(buffers(counts_.buffer_bytes));
        messages_.reserve(most_requests_);
        for (int x = 0; x < 3; ++x) at_in_[x].reserve(most_in_[x]);
        order_.reserve(most_in_[2] + 1);
      } catch (const std::exception& e) {
        why = "its exchange buffers (" + std::to_string(counts_.buffer_bytes) + " bytes) could not be allocated: " + e.what();
      }
    agree_local_step(comm_, me_, why, true);
    base_[1] = base_[0] + need_.blocks[0], base_[2] = base_[1] + need_.blocks[1], stage_ = base_[2] + need_.blocks[2];
  }

  // Posts e's receives (tag x) from staging s on, noting in at_in_[x] (reserved) where each lands; returns their end.
  T* post_receives(const exchange& e, int x, T* s) {
    at_in_[x].clear();
    for (const message& msg : e.in) at_in_[x].push_back(s), messages_.post(true, s, msg.count, msg.peer, x), s += msg.count;
    return s;
  }
  // Packs and posts e's sends (tag x) from staging s on; returns their end. A, B (x < 2): parts
  // of the receiver's regions, read from my storage `held`; C: my partials, from my buffer.
  T* post_sends(const exchange& e, int x, T* s, const T* held) {
    for (const message& msg : e.out) {
      T* d = s;
      for (const auto& [g, t] : msg.parts)  // (g = g: clang 14's lambdas cannot capture a structured binding)
        if (x < 2) each_segment(t, 0, [&](std::int64_t, std::int64_t l, std::int64_t len) { d = std::copy_n(held + l, len, d); });
        else
          each_segment(t, e.regions[g].at.rows, [&, g = g](std::int64_t b, std::int64_t, std::int64_t len) { d = std::copy_n(base_[x] + e.at[g] + b, len, d); });
      messages_.post(false, s, msg.count, msg.peer, x);
      s = d;
    }
    return s;
  }
  // Calls f(buffer offset, local index, length) for each run of the tiles I hold of e's buffered regions.
  template <class F>
  static void each_own(const exchange& e, F&& f) {
    for (std::size_t g = 0; g < e.regions.size(); ++g)
      if (!e.direct[g])
        for (const tile& t : e.self[g])
          each_segment(t, e.regions[g].at.rows, [&](std::int64_t b, std::int64_t l, std::int64_t len) { f(e.at[g] + b, l, len); });
  }

  // (1) My regions of A and B: receive the others' parts, send mine of theirs, copy my own
  // (posted A in, B in, A out, B out).
  void gather(const phase& ph, const T* A, const T* B) {
    const T* local[2] = {A, B};
    T* s = stage_;
    for (int x = 0; x < 2; ++x) s = post_receives(ph.reads[x], x, s);
    for (int x = 0; x < 2; ++x) s = post_sends(ph.reads[x], x, s, local[x]);
    for (int x = 0; x < 2; ++x)
      each_own(ph.reads[x], [&](std::int64_t b, std::int64_t l, std::int64_t len) { std::copy_n(local[x] + l, len, base_[x] + b); });
    messages_.complete();
    for (int x = 0; x < 2; ++x)
      for (std::size_t i = 0; i < ph.reads[x].in.size(); ++i) {
        const exchange& e = ph.reads[x];
        const T* src = at_in_[x][i];
        for (const auto& [g, t] : e.in[i].parts)  // (g = g: as in post_sends)
          each_segment(t, e.regions[g].at.rows, [&, g = g](std::int64_t b, std::int64_t, std::int64_t len) {
            std::copy_n(src, len, base_[x] + e.at[g] + b);
            src += len;
          });
      }
  }

  // Where region g of exchange e lies: its buffer, or (used in place) the holder's storage.
  std::pair<T*, std::int64_t> where(const exchange& e, std::size_t g, int x, T* data) const {
    if (!e.direct[g]) return {base_[x] + e.at[g], std::max<std::int64_t>(1, e.regions[g].at.rows)};
    const tile& t = e.self[g][0];
    return {data + t.rows[0].local + t.cols[0].local * t.lld, t.lld};
  }
  // The address and leading dimension of block b inside one of the regions of e.
  std::pair<T*, std::int64_t> inside(const exchange& e, int x, const block& b, T* data) const {
    const region* g = e.containing(b);
    if (g == nullptr || b.size() == 0) return {nullptr, 1};
    const auto [p, ld] = where(e, std::size_t(g - e.regions.data()), x, data);
    return {p + (b.row - g->at.row) + (b.col - g->at.col) * ld, ld};
  }

  // (2) My tasks of the phase. The test-only fault hook stalls or poisons this process's
  // first task (PRISM_TEST_FAULT; none in real calls).
  void compute(const phase& ph, T alpha, const T* A, const T* B, T beta_direct, T* C, const context& ctx) {
    const ranks::schedule& m = own_.model();
    const problem& pr = m.product();
    const bool rank_k = pr.op != operation::gemm;
    exchange& ce = epochs_[ph.epoch];
    written_.resize(ce.regions.size(), 0);
    const test_fault& fault = detail::process_environment().fault.get();
    for (const task& t : ph.tasks) {
      const box& b = t.shape;
      const auto [a, lda] = inside(ph.reads[0], 0, m.stored(operand::a, b.i, b.m, b.l, b.k), const_cast<T*>(A));
      const auto [bb, ldb] = rank_k ? inside(ph.reads[0], 0, m.stored(operand::a, b.j, b.n, b.l, b.k), const_cast<T*>(A))
                                    : inside(ph.reads[1], 1, m.stored(operand::b, b.j, b.n, b.l, b.k), const_cast<T*>(B));
      const std::size_t g = std::size_t(std::find(ce.regions.begin(), ce.regions.end(), region{block{b.i, b.j, b.m, b.n}, t.tri}) - ce.regions.begin());
      const auto [c, ldc] = where(ce, g, 2, C);
      const T beta_local = written_[g] ? T(1) : ce.direct[g] ? beta_direct : T(0);
      written_[g] = 1;
      if (fault.process == me_ && first_ && fault.what == test_fault::kind::stall) std::this_thread::sleep_for(std::chrono::seconds(600));
      if (t.node >= 0)
        detail::run_subtree<T>(dynamic_cast<const ranks::tree_schedule&>(m).source(), t.node, alpha, a, lda, bb, ldb, beta_local, c, ldc, ctx);
      else
        block_of_triangle(t, pr, alpha, a, lda, bb, ldb, beta_local, c, ldc, ctx);
      if (fault.process == me_ && first_ && fault.what == test_fault::kind::nan) nan_check(c, b.m, b.n, ldc);
      first_ = false;
    }
  }

  // A rank-k task: C_ij = alpha op(A)_i op(A)_j^T (^H), a diagonal one by syrk / herk. The
  // local engine runs with no room for temporaries: the rank's footprint is the model's.
  static void block_of_triangle(const task& t, const problem& pr, T alpha, const T* a, std::int64_t lda, const T* b,
                                std::int64_t ldb, T beta, T* c, std::int64_t ldc, const context& ctx0) {
    context ctx = ctx0;
    ctx.set_max_memory(0);
    const bool n_trans = pr.transa == 'N', herk = pr.op == operation::herk;
    const char h = herk ? 'C' : 'T';
    const box& x = t.shape;
    if (t.tri) {
      if constexpr (is_complex(scalar_type_of<T>()))
        if (herk) return prism::herk<T>(t.tri, n_trans ? 'N' : h, x.m, x.k, alpha.real(), a, lda, beta.real(), c, ldc, ctx);
      return prism::syrk<T>(t.tri, n_trans ? 'N' : h, x.m, x.k, alpha, a, lda, beta, c, ldc, ctx);
    }
    prism::gemm<T>(n_trans ? 'N' : h, n_trans ? h : 'N', x.m, x.n, x.k, alpha, a, lda, b, ldb, beta, c, ldc, ctx);
  }

  // The test-only NaN check (PRISM_TEST_FAULT=rank:P:nan).
  static void nan_check(T* c, std::int64_t rows, std::int64_t cols, std::int64_t ldc) {
    c[0] = T(std::nan(""));
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < rows; ++i)
        if (std::isnan(std::abs(c[i + j * ldc])))
          throw error("NaN in its product at (" + std::to_string(i) + ", " + std::to_string(j) +
                      ") (test-only NaN check, PRISM_TEST_FAULT)");
  }

  // (3) Partial C: mine to the other holders, theirs of my elements to me, added in
  // plan-rank order (a fixed order, so a fixed schedule gives the same bits every run; my
  // own partial takes my rank's place).
  void reduce(const exchange& e, T* C) {
    post_sends(e, 2, post_receives(e, 2, stage_), nullptr);
    messages_.complete();
    order_.clear();
    for (std::size_t i = 0; i < e.in.size(); ++i) order_.emplace_back(e.in[i].rank, int(i));
    order_.emplace_back(own_.rank_of(me_), -1);
    std::sort(order_.begin(), order_.end());
    for (const auto& [rank, i] : order_) {
      if (i < 0) {
        each_own(e, [&](std::int64_t b, std::int64_t l, std::int64_t len) {
          for (std::int64_t x = 0; x < len; ++x) C[l + x] += base_[2][b + x];
        });
        continue;
      }
      const T* src = at_in_[2][std::size_t(i)];
      for (const auto& [g, t] : e.in[std::size_t(i)].parts)
        each_segment(t, 0, [&](std::int64_t, std::int64_t l, std::int64_t len) {
          for (std::int64_t x = 0; x < len; ++x) C[l + x] += src[x];
          src += len;
        });
    }
    written_.clear();
  }

  const ownership& own_;
  MPI_Comm comm_;
  int me_;
  exchange_counts& counts_;
  message_engine<T> messages_;
  std::vector<phase> phases_;
  std::vector<exchange> epochs_;
  ranks::buffer_plan need_;
  T* base_[3] = {nullptr, nullptr, nullptr};  // my regions of A, B and C
  T* stage_ = nullptr;                          // the messages
  std::vector<char> written_;                   // C regions of the epoch written so far
  std::size_t most_requests_ = 0, most_in_[3] = {0, 0, 0};  // at once, at most (plan_phases)
  std::vector<T*> at_in_[3];                    // where each received A, B, C message lands
  std::vector<std::pair<int, int>> order_;      // a reduction's adding order: (rank, message index or -1 for mine)
  bool first_ = true;
};

}  // namespace

template <scalar T>
void scale_tiles(const std::vector<tile>& tiles, T beta, T* C) {
  if (beta == T(1)) return;
  for (const tile& t : tiles)
    each_segment(t, 0, [&](std::int64_t, std::int64_t l, std::int64_t len) {
      T* c = C + l;
      if (beta == T(0)) std::fill_n(c, len, T(0));
      else
        for (std::int64_t e = 0; e < len; ++e) c[e] *= beta;
    });
}

template <scalar T>
void run_exchange(const ownership& own, MPI_Comm comm, T alpha, const T* A, const T* B, T beta, T* C,
                  const context& ctx, const buffer_source& buffers, exchange_counts& counts) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  executor<T>(own, comm, me, counts).run(alpha, A, B, beta, C, ctx, buffers);
}

#define PRISM_INSTANTIATE(T)                                                                                   \
  template void run_exchange<T>(const ownership&, MPI_Comm, T, const T*, const T*, T, T*, const context&,      \
                                const buffer_source&, exchange_counts&);                                       \
  template void scale_tiles<T>(const std::vector<tile>&, T, T*);
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

}  // namespace prism::mpi
