// lib/mpi/messages.hpp — what the rank level's executor (rank_exchange) needs of MPI:
// posting and completing a phase's messages with exact byte counts, and the agreement that
// turns one process's failed local step into the same error on every process (so none is
// left waiting).
#pragma once

#include <prism/error.hpp>
#include <prism/types.hpp>

#include "../environment/environment.hpp"
#include "comm.hpp"

#include <mpi.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace prism::mpi {

/// A local step failed on some process of the call; thrown on every process alike.
class local_failure : public prism::error {
 public:
  /// `mine`: whether the lowest failing process is this one; `why`: its reason (this
  /// process's own, or a pointer to the failing one's message, which says whether C is untouched).
  local_failure(bool mine, const std::string& why) : error(why), mine_(mine) {}
  /// Whether the lowest failing process is this one.
  bool mine() const noexcept { return mine_; }

 private:
  bool mine_;
};

/// What this process moved in one executed call (exact, from the MPI statuses).
struct exchange_counts {
  std::int64_t bytes_received = 0, bytes_sent = 0;        ///< bytes
  std::int64_t messages_received = 0, messages_sent = 0;  ///< messages (a split one counts once)
  std::size_t buffer_bytes = 0;                           ///< bytes asked of `buffers`
};

/// Gives at least `bytes` of 16-byte-aligned scratch memory, kept by the caller.
using buffer_source = std::function<std::byte*(std::size_t bytes)>;

/// A buffer_source's memory kept between calls: `mem` of `have` bytes, grown to `bytes`
/// when a call needs more (the old one freed first; none kept if the allocation throws;
/// uninitialised: the exchange writes every byte before it reads it).
inline std::byte* kept_buffer(std::unique_ptr<std::byte[]>& mem, std::size_t& have, std::size_t bytes) {
  if (bytes > have) {
    mem.reset();
    have = 0;
    mem.reset(new std::byte[bytes]);
    have = bytes;
  }
  return mem.get();
}

/// TEST-ONLY fault hook (docs/development.md, "Fault tests"): PRISM_TEST_FAULT=rank:P:KIND
/// makes process P of a call's communicator fail its local step in every call, so that
/// the fault tests can check that every process ends with an error and none waits. KIND:
///   alloc  its exchange buffers are requested at 2^62 bytes: a real allocation failure;
///   nan    its first local product gets a NaN, which a NaN check (run only under this
///          hook, not part of the semantics) finds and reports as a failure;
///   stall  it sleeps 600 s before its first local product (a target for a SIGKILL).
/// lib/environment reads and checks it once (a malformed value is said once and injects
/// nothing).
using test_fault = detail::test_fault;

/// Collective over comm (one MPI_Allreduce): when a local step failed on any process (`why`
/// is this process's reason, empty when it did not fail), throws local_failure on every
/// process naming the lowest failing one; returns normally on all otherwise.
void agree_local_step(MPI_Comm comm, int me, const std::string& why, bool c_untouched);

/// A phase's non-blocking messages: post receives and sends, complete them all, count
/// bytes exactly from the statuses.
template <scalar T>
class message_engine {
 public:
  /// Messages over comm, counted into `counts`.
  message_engine(MPI_Comm comm, exchange_counts& counts) : comm_(comm), counts_(counts) {}

  /// Posts a receive (recv) or send of n elements at data with peer and tag. A message of
  /// more than 2^31 - 1 elements goes as several under the same tag (MPI keeps their order
  /// between one pair of processes), e.g. 5,000,000,000 doubles: 2^31 - 1, 2^31 - 1 and
  /// 705,032,706; it counts as one message.
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

  /// Room for `requests` requests posted at once, made before anything moves, so that
  /// posting and completing allocate nothing (a failed allocation mid-exchange would leave
  /// the peers waiting).
  void reserve(std::size_t requests) {
    requests_.reserve(requests), statuses_.reserve(requests), is_recv_.reserve(requests);
  }
  /// The requests a message of n elements takes: one per 2^31 - 1, e.g. none for n = 0.
  static std::size_t requests_of(std::int64_t n) { return std::size_t((n + max_count - 1) / max_count); }

  /// Completes every posted message and adds the bytes received.
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

}  // namespace prism::mpi
