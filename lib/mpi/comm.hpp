// lib/mpi/comm.hpp — what every collective of prism's MPI code (lib/dist, lib/scalapack)
// shares: MPI datatypes of the scalar types, a wait that does not spin, and the argument
// agreement check that makes every rank fail together instead of some of them waiting
// forever.
#pragma once

#include <prism/error.hpp>
#include <prism/types.hpp>

#include <mpi.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace prism::mpi {

/// The MPI datatype of a prism scalar.
template <scalar T>
MPI_Datatype mpi_type() {
  if constexpr (std::same_as<T, float>) return MPI_FLOAT;
  else if constexpr (std::same_as<T, double>) return MPI_DOUBLE;
  else if constexpr (std::same_as<T, std::complex<float>>) return MPI_C_FLOAT_COMPLEX;
  else return MPI_C_DOUBLE_COMPLEX;
}

/// A 63-bit FNV-1a hash of a text (plans and settings are agreed by hash).
inline std::int64_t text_hash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return std::int64_t(h >> 1);
}

/// The bits of a scalar's real part as a double (arguments are agreed by bit pattern).
template <scalar T>
std::int64_t real_bits(T x) {
  double v;
  if constexpr (std::same_as<T, float> || std::same_as<T, double>) v = double(x);
  else v = double(x.real());
  std::int64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
/// The bits of a scalar's imaginary part as a double (0 for real types).
template <scalar T>
std::int64_t imag_bits(T x) {
  if constexpr (std::same_as<T, float> || std::same_as<T, double>) return 0;
  else return real_bits(x.imag());
}

/// Throws prism::error when an MPI call did not return MPI_SUCCESS.
void check_mpi(int rc, const char* what);

/// Completes every request, sleeping between polls (doubling up to 1 ms after a short
/// burst of spins), so a rank whose part is done does not burn a core while others
/// compute; fills `statuses`.
void wait_all(std::vector<MPI_Request>& requests, std::vector<MPI_Status>& statuses);

/// Ranks of comm that share this rank's node (MPI_COMM_TYPE_SHARED); collective.
int ranks_per_node(MPI_Comm comm);

/// What prism's own collectives brought this thread's rank: the argument agreement, the
/// failure checks, plan broadcasts and PRISM_STATS's reductions, all that MPI carries for
/// prism besides the exchange's messages (which exchange_counts count). Bytes as a PMPI
/// counter models a collective reaching a rank (bench/dist/mpi_counter.c): MPI_Allreduce
/// count x size, MPI_Bcast count x size off the root, MPI_Allgather (P - 1) x count x size.
struct control_counts {
  std::int64_t bytes = 0;  ///< bytes received
  std::int64_t calls = 0;  ///< collective calls
};

/// This thread's control counts so far (the thread that calls MPI makes every collective).
control_counts control_traffic();

/// MPI_Allreduce, counted in control_traffic(); throws prism::error when MPI fails.
void control_allreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);

/// MPI_Bcast, counted in control_traffic(); throws prism::error when MPI fails.
void control_bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm);

/// PRISM_STATS's numbers of one call over a communicator (reduce_call_stats).
struct call_stats {
  std::vector<double> max, sum;             ///< of each value over the ranks
  double control_min = 0, control_max = 0;  ///< the call's control bytes over the ranks
};

/// Collective: the largest and the sum over comm's ranks of each of this rank's values, and
/// the least and largest control bytes of the call (control_traffic().bytes since
/// `control_at_start`, these two reductions included: two MPI_Allreduce of values.size() + 2
/// doubles, the same at any rank count).
call_stats reduce_call_stats(MPI_Comm comm, std::vector<double> values, std::int64_t control_at_start);

/// One named value every rank must pass identically (or a per-rank verdict to spread).
struct agreed {
  const char* name;   ///< argument name, e.g. "m"
  int position;       ///< its 1-based place in the call (0: not an argument)
  std::int64_t value; ///< this rank's value (bit pattern for scalars)
  bool scalar = false; ///< value is a double's bit pattern (real_bits, imag_bits): named as the number
};

/// What the ranks found when agreeing (find_disagreement); the same on every rank.
struct agreement {
  int differing = -1;          ///< index in the list of the first value a rank passes unlike rank 0 (-1: none)
  int differing_rank = -1;     ///< the first rank that passes it otherwise
  std::int64_t rank0_value = 0, other_value = 0;  ///< rank 0's value and that rank's
  int failed_rank = -1;        ///< the lowest rank with a local error (-1: none)
  std::string failed_text;     ///< the first 200 bytes of its local error
  std::int64_t from_root = 0;  ///< rank 0's *root_word (when one was passed)
  bool flagged = false;        ///< some rank passed `flag` (known when no rank has a local error)
};

/// Collective over comm: every rank passes the same list (names and order) and its own
/// `local_error` (a problem only that rank can see; empty: none); with root_word given
/// (every rank, or none), rank 0's value (below INT64_MAX) reaches every rank; and whether
/// any rank passed `flag`, in the same word as the local errors. One
/// reduction of 2 n + 1 words (2 n + 2 with root_word), the same at any rank count; only
/// when something differs or failed, one gather of every rank's values (O(P) words, to name
/// the argument and the rank alike everywhere).
agreement find_disagreement(MPI_Comm comm, const std::vector<agreed>& args, const std::string& local_error,
                            const std::int64_t* root_word = nullptr, bool flag = false);

/// Collective over comm (find_disagreement): throws prism::invalid_argument on every rank
/// naming the first rank whose `local_error` is not empty (e.g. its buffer), or else the
/// first argument whose value differs from rank 0's and the rank that differs. Returns
/// normally on all ranks otherwise: with root_word, rank 0's (below INT64_MAX), else 0;
/// with flag, *flag becomes whether any rank's was true.
std::int64_t agree(MPI_Comm comm, const char* routine, const std::vector<agreed>& args, const std::string& local_error,
                   const std::int64_t* root_word = nullptr, bool* flag = nullptr);

}  // namespace prism::mpi
