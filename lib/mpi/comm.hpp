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

/// One named value every rank must pass identically (or a per-rank verdict to spread).
struct agreed {
  const char* name;   ///< argument name, e.g. "m"
  int position;       ///< its 1-based place in the call (0: not an argument)
  std::int64_t value; ///< this rank's value (bit pattern for scalars)
};

/// Collective over comm: every rank passes the same list (names and order); throws
/// prism::invalid_argument on every rank naming the first argument whose value differs
/// from rank 0's and the rank that differs, or the first rank whose `local_error` is not
/// empty (a problem only that rank can see, e.g. its buffer). Returns normally on all
/// ranks otherwise. A call that agrees costs one reduction of 2 (n + 1) words, the same
/// at any rank count; only a call that disagrees gathers every rank's values to name one.
void agree(MPI_Comm comm, const char* routine, const std::vector<agreed>& args, const std::string& local_error);

}  // namespace prism::mpi
