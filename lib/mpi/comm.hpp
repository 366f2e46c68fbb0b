// lib/mpi/comm.hpp — what prism's MPI code (lib/dist, lib/scalapack) shares: datatypes, a
// sleeping wait, attribute keys, and the agreements that make every rank fail together.
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

/// Completes every request, sleeping between polls (up to 1 ms) so an idle rank burns no core; fills `statuses`.
void wait_all(std::vector<MPI_Request>& requests, std::vector<MPI_Status>& statuses);

/// Ranks of comm that share this rank's node (MPI_COMM_TYPE_SHARED); collective.
int ranks_per_node(MPI_Comm comm);

/// Bytes prism's own collectives (all but the exchange's messages) brought this thread's rank so far,
/// counted as the PMPI counter (bench/dist/mpi_counter.c) counts a collective reaching a rank
/// (the thread that calls MPI makes every collective).
std::int64_t control_traffic();

/// MPI_Bcast, counted in control_traffic(); throws prism::error when MPI fails.
void control_bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm);

/// PRISM_STATS's numbers of one call over a communicator (reduce_call_stats).
struct call_stats {
  std::vector<double> max, sum;             ///< of each value over the ranks
  double control_min = 0, control_max = 0;  ///< the call's control bytes over the ranks
};

/// Collective: the largest and the sum over comm's ranks of each value, and the least and
/// largest control bytes since `control_at_start` (these two MPI_Allreduce included).
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

/// Collective over comm: every rank passes the same list and its own `local_error` ("" none),
/// optionally a root_word (rank 0's, below INT64_MAX, reaches all) and a flag (any rank's).
/// One reduction of 2 n + 1 words (+1 with root_word) at any P; a gather only if something differs or failed.
agreement find_disagreement(MPI_Comm comm, const std::vector<agreed>& args, const std::string& local_error,
                            const std::int64_t* root_word = nullptr, bool flag = false);

/// find_disagreement, then prism::invalid_argument on every rank naming the first failed rank,
/// else the first differing argument and rank; else returns rank 0's root_word (or 0), *flag any rank's.
std::int64_t agree(MPI_Comm comm, const char* routine, const std::vector<agreed>& args, const std::string& local_error,
                   const std::int64_t* root_word = nullptr, bool* flag = nullptr);

/// A new attribute key whose values `del` deletes (not copied with the communicator).
int attribute_key(MPI_Comm_delete_attr_function* del);

/// comm's value of attribute `key`, or nullptr when it has none.
void* attribute(MPI_Comm comm, int key);

/// A local step failed on some process of the call; thrown on every process alike.
class local_failure : public prism::error {
 public:
  /// `mine`: whether the lowest failing process is this one; `why`: its reason or a pointer to its message.
  local_failure(bool mine, const std::string& why) : error(why), mine_(mine) {}
  /// Whether the lowest failing process is this one.
  bool mine() const noexcept { return mine_; }

 private:
  bool mine_;
};

/// Collective (one MPI_Allreduce): when a local step failed on any process (`why`: this one's
/// reason, "" if none), throws local_failure on every process naming the lowest; else returns.
void agree_local_step(MPI_Comm comm, int me, const std::string& why, bool c_untouched);

}  // namespace prism::mpi
