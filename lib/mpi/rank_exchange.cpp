// lib/mpi/rank_exchange.cpp — see rank_exchange.hpp.
#include "rank_exchange.hpp"

#include "../environment/environment.hpp"
#include "../recursive/executor.hpp"
#include "comm.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace prism::mpi {

using ranks::each_segment;
using ranks::ownership;
using ranks::tile;

namespace {

// TEST-ONLY fault hook (docs/development.md, "Fault tests"): PRISM_TEST_FAULT=rank:P:KIND
// makes process P of the call's communicator fail its local step in every call, so that
// the fault tests can check that every process ends with an error and none waits. KIND:
//   alloc  its exchange buffers are requested at 2^62 bytes: a real allocation failure;
//   nan    its first subtree's result gets a NaN, which a NaN check (run only under this
//          hook, not part of gemm's semantics) finds and reports as a failure;
//   stall  it sleeps 600 s before its first subtree (a target for a SIGKILL mid-call).
// lib/environment reads and checks it once; a malformed value is said once and injects nothing.
using detail::test_fault;

const test_fault& fault_hook() { return detail::process_environment().fault.get(); }

// One MPI_Allreduce: the lowest process whose local step failed, or -1 when none did.
int lowest_failed(MPI_Comm comm, int me, bool failed) {
  int mine = failed ? me : INT_MAX, lowest = INT_MAX;
  check_mpi(MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  return lowest == INT_MAX ? -1 : lowest;
}

// Throws local_failure on every process when `lowest` >= 0 (see lowest_failed).
void throw_if_failed(int lowest, int me, const std::string& mine, bool c_untouched) {
  if (lowest < 0) return;
  const std::string c = c_untouched ? "C untouched" : "C undefined";
  if (lowest == me)
    throw local_failure(lowest, true, c_untouched, "process " + std::to_string(me) + "'s local step failed: " + mine + "; " + c);
  throw local_failure(lowest, false, c_untouched,
                      "process " + std::to_string(lowest) + "'s local step failed (its own message says why); " + c);
}

std::int64_t count_of(const std::vector<tile>& tiles) {
  std::int64_t n = 0;
  for (const tile& t : tiles) n += t.count();
  return n;
}

// One message of a phase: its peer process, the tiles it carries, and (C partials
// received) the plan rank that computed them.
struct message {
  int peer = 0;
  std::vector<tile> tiles;
  std::int64_t count = 0;
  int rank = -1;
};

// My part of one phase under the exchange rule.
struct phase {
  rank_task task;
  block blk[3];
  bool direct[3] = {false, false, false};
  std::vector<tile> self[3];  // the part of my block I hold myself
  std::vector<message> in[3], out[3];
  ranks::phase_volume volume;
};

phase build_phase(const ownership& own, int q, int me) {
  const rank_model& m = own.model();
  const int r = own.rank_of(me);
  phase ph;
  ph.task = r >= 0 ? m.task(q, r) : rank_task{};
  const bool computes = ph.task.node >= 0;
  for (operand o : {operand::a, operand::b, operand::c}) {
    const int x = int(o);
    const bool reads = o != operand::c;
    if (computes) {
      ph.blk[x] = m.needed(o, ph.task.shape);
      ph.direct[x] = ranks::in_place(own, o, q, r);
      // A, B: each holder's part of my block comes to me. C: my partial of each holder's
      // part goes to it.
      for (int h : own.holders(o, ph.blk[x])) {
        if (h == me) {
          own.held(o, ph.blk[x], h, ph.self[x]);
          continue;
        }
        message msg{h, {}, 0, r};
        own.held(o, ph.blk[x], h, msg.tiles);
        msg.count = count_of(msg.tiles);
        if (msg.count > 0) (reads ? ph.in[x] : ph.out[x]).push_back(std::move(msg));
      }
    }
    // A, B: my part of each other rank's block goes to it. C: its partial of my part of
    // its block comes to me.
    for (int r2 : own.needers(o, q, me)) {
      if (r2 == r) continue;
      message msg{own.process_of(r2), {}, 0, r2};
      own.held(o, m.needed(o, m.task(q, r2).shape), me, msg.tiles);
      msg.count = count_of(msg.tiles);
      if (msg.count > 0) (reads ? ph.out[x] : ph.in[x]).push_back(std::move(msg));
    }
    for (const message& msg : ph.in[x]) ph.volume.received[x] += msg.count, ph.volume.messages += 1;
    for (const message& msg : ph.out[x]) ph.volume.sent[x] += msg.count;
    ph.volume.blocks[x] = computes && !ph.direct[x] ? ph.blk[x].size() : 0;
  }
  return ph;
}

template <scalar T>
struct executor {
  const ownership& own;
  MPI_Comm comm;
  int me;
  exchange_counts& counts;
  MPI_Datatype type = mpi_type<T>();
  std::vector<MPI_Request> requests;
  std::vector<MPI_Status> statuses;
  std::vector<char> is_recv;

  executor(const ownership& o, MPI_Comm c, int m, exchange_counts& n) : own(o), comm(c), me(m), counts(n) {}

  // A message of more than max_count elements goes as several of max_count (the last
  // shorter), under the same tag: MPI keeps their order between one pair of processes.
  // E.g. 5,000,000,000 doubles: 2^31 - 1, 2^31 - 1 and 705,032,706.
  static constexpr std::int64_t max_count = INT_MAX;
  void post(bool recv, T* data, std::int64_t n, int peer, int tag) {
    for (std::int64_t done = 0; done < n; done += max_count) {
      requests.emplace_back();
      is_recv.push_back(recv);
      const int c = int(std::min(max_count, n - done));
      if (recv) check_mpi(MPI_Irecv(data + done, c, type, peer, tag, comm, &requests.back()), "MPI_Irecv");
      else check_mpi(MPI_Isend(data + done, c, type, peer, tag, comm, &requests.back()), "MPI_Isend");
    }
    if (recv) counts.messages_received += 1;
    else counts.messages_sent += 1, counts.bytes_sent += n * std::int64_t(sizeof(T));
  }
  void complete() {
    wait_all(requests, statuses);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (!is_recv[i]) continue;
      MPI_Count bytes = 0;
      MPI_Get_elements_x(&statuses[i], MPI_BYTE, &bytes);
      counts.bytes_received += std::int64_t(bytes);
    }
    requests.clear();
    is_recv.clear();
  }

  // This call's storage: my blocks of A, B and C, then the staging of messages.
  T* blocks[3] = {nullptr, nullptr, nullptr};
  T* stage = nullptr;

  void run(T alpha, const T* A, const T* B, T beta, T* C, const context& ctx, const buffer_source& buffers) {
    const rank_model& m = own.model();
    std::vector<phase> phases;
    ranks::buffer_plan need;
    for (int q = 0; q < m.phases(); ++q) {
      phases.push_back(build_phase(own, q, me));
      need.add(phases.back().volume);
    }
    const test_fault& fault = fault_hook();
    const bool faulty = fault.process == me;
    // The buffers first, agreed, so that a process that cannot have them leaves C untouched
    // everywhere.
    counts.buffer_bytes = std::size_t(need.total()) * sizeof(T);
    T* base = nullptr;
    std::string why;
    try {
      if (faulty && fault.what == test_fault::kind::alloc) buffers(std::size_t(1) << 62);
      if (need.total() > 0) base = reinterpret_cast<T*>(buffers(counts.buffer_bytes));
    } catch (const std::exception& e) {
      why = std::string("its exchange buffers (") + std::to_string(counts.buffer_bytes) + " bytes) could not be allocated: " + e.what();
    }
    throw_if_failed(lowest_failed(comm, me, !why.empty()), me, why, true);
    // beta C up front, unless the local engine can take beta: one phase, my C block used
    // in place, and no partial of anything I hold coming from elsewhere.
    const bool beta_in_engine = m.phases() == 1 && phases[0].direct[2] && phases[0].in[2].empty();
    if (!beta_in_engine && beta != T(1)) {
      std::vector<tile> mine;
      own.all_held_c(me, mine);
      scale_tiles(mine, beta, C);
    }
    blocks[0] = base, blocks[1] = base + need.blocks[0], blocks[2] = blocks[1] + need.blocks[1];
    stage = blocks[2] + need.blocks[2];
    bool first_subtree = true;
    for (const phase& ph : phases) {
      gather(ph, A, B);
      if (ph.task.node >= 0) {
        try {
          compute(ph, alpha, A, B, !ph.direct[2] ? T(0) : beta_in_engine ? beta : T(1), C, ctx,
                  faulty && first_subtree ? fault.what : test_fault::kind::none);
        } catch (const std::exception& e) {
          why = e.what();
        }
        first_subtree = false;
      }
      // Agreed before the next exchange: a failed subtree ends the call on every process.
      throw_if_failed(lowest_failed(comm, me, !why.empty()), me, why, false);
      reduce(ph, C);
    }
  }

  // (1) My blocks of A and B: receive the others' parts, send mine of theirs, copy my own.
  void gather(const phase& ph, const T* A, const T* B) {
    const T* local[2] = {A, B};
    T* s = stage;
    std::vector<T*> at_in[2];
    for (int x = 0; x < 2; ++x)
      for (const message& msg : ph.in[x]) at_in[x].push_back(s), post(true, s, msg.count, msg.peer, x), s += msg.count;
    for (int x = 0; x < 2; ++x)
      for (const message& msg : ph.out[x]) {
        T* d = s;
        for (const tile& t : msg.tiles)
          each_segment(t, 0, [&](std::int64_t, std::int64_t l, std::int64_t len) { d = std::copy_n(local[x] + l, len, d); });
        post(false, s, msg.count, msg.peer, x);
        s = d;
      }
    for (int x = 0; x < 2; ++x)
      if (!ph.direct[x])
        for (const tile& t : ph.self[x])
          each_segment(t, ph.blk[x].rows, [&](std::int64_t b, std::int64_t l, std::int64_t len) {
            std::copy_n(local[x] + l, len, blocks[x] + b);
          });
    complete();
    for (int x = 0; x < 2; ++x)
      for (std::size_t i = 0; i < ph.in[x].size(); ++i) {
        const T* src = at_in[x][i];
        for (const tile& t : ph.in[x][i].tiles)
          each_segment(t, ph.blk[x].rows, [&](std::int64_t b, std::int64_t, std::int64_t len) {
            std::copy_n(src, len, blocks[x] + b);
            src += len;
          });
      }
  }

  // (2) My box with the shared-memory engine: blocks used in place read (and C written)
  // where they lie, with the holder's leading dimension.
  // `fault`: the test-only hook's failure to inject into this subtree (none in real calls).
  void compute(const phase& ph, T alpha, const T* A, const T* B, T beta_local, T* C, const context& ctx,
               test_fault::kind fault) {
    auto where = [&](int x, T* data) {
      if (!ph.direct[x]) return std::pair<T*, std::int64_t>{blocks[x], std::max<std::int64_t>(1, ph.blk[x].rows)};
      const tile& t = ph.self[x][0];
      return std::pair<T*, std::int64_t>{data + t.rows[0].local + t.cols[0].local * t.lld, t.lld};
    };
    const auto [a, lda] = where(0, const_cast<T*>(A));
    const auto [b, ldb] = where(1, const_cast<T*>(B));
    const auto [c, ldc] = where(2, C);
    if (fault == test_fault::kind::stall) std::this_thread::sleep_for(std::chrono::seconds(600));
    prism::detail::run_subtree<T>(own.model().source(), ph.task.node, alpha, a, lda, b, ldb, beta_local, c, ldc, ctx);
    if (fault == test_fault::kind::nan) {
      const std::int64_t rows = ph.blk[2].rows, cols = ph.blk[2].cols;
      c[0] = T(std::nan(""));
      for (std::int64_t j = 0; j < cols; ++j)  // the test-only NaN check
        for (std::int64_t i = 0; i < rows; ++i)
          if (std::isnan(std::abs(c[i + j * ldc])))
            throw error("NaN in its product at (" + std::to_string(i) + ", " + std::to_string(j) +
                        ") (test-only NaN check, PRISM_TEST_FAULT)");
    }
  }

  // (3) Partial C: mine to the other holders, theirs of my elements to me, added in
  // plan-rank order (a fixed order, so a fixed plan gives the same bits every run; my own
  // partial takes my rank's place).
  void reduce(const phase& ph, T* C) {
    T* s = stage;
    std::vector<T*> at_c;
    for (const message& msg : ph.in[2]) at_c.push_back(s), post(true, s, msg.count, msg.peer, 2), s += msg.count;
    for (const message& msg : ph.out[2]) {
      T* d = s;
      for (const tile& t : msg.tiles)
        each_segment(t, ph.blk[2].rows, [&](std::int64_t b, std::int64_t, std::int64_t len) {
          d = std::copy_n(blocks[2] + b, len, d);
        });
      post(false, s, msg.count, msg.peer, 2);
      s = d;
    }
    complete();
    std::vector<std::pair<int, int>> order;  // (rank, message index or -1 for mine)
    for (std::size_t i = 0; i < ph.in[2].size(); ++i) order.emplace_back(ph.in[2][i].rank, int(i));
    if (ph.task.node >= 0 && !ph.direct[2] && !ph.self[2].empty()) order.emplace_back(own.rank_of(me), -1);
    std::sort(order.begin(), order.end());
    for (const auto& [rank, i] : order) {
      if (i < 0) {
        for (const tile& t : ph.self[2])
          each_segment(t, ph.blk[2].rows, [&](std::int64_t b, std::int64_t l, std::int64_t len) {
            const T* src = blocks[2] + b;
            for (std::int64_t e = 0; e < len; ++e) C[l + e] += src[e];
          });
        continue;
      }
      const T* src = at_c[std::size_t(i)];
      for (const tile& t : ph.in[2][std::size_t(i)].tiles)
        each_segment(t, 0, [&](std::int64_t, std::int64_t l, std::int64_t len) {
          for (std::int64_t e = 0; e < len; ++e) C[l + e] += src[e];
          src += len;
        });
    }
  }
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
  executor<T> x{own, comm, me, counts};
  x.run(alpha, A, B, beta, C, ctx, buffers);
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
