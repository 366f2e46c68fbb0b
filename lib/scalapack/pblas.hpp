// lib/scalapack/pblas.hpp — what the PBLAS entry points of libprism_scalapack (pgemm.cpp,
// psyrk.cpp) share: PBLAS's descriptor and argument checks (PB_Cchkmat numbering), the
// grid's communicator, the agreement of arguments over the grid, the route setting, the
// lookup of the real routine and the per-process exchange arena.
#pragma once

#include "../environment/environment.hpp"

#include <prism/types.hpp>

#include "../mpi/comm.hpp"
#include "../ranks/block_cyclic.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" {
// From the ScaLAPACK library the program loads (BLACS and PBLAS's error handler).
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cigsum2d(int ctxt, const char* scope, const char* top, int m, int n, int* A, int lda, int rdest, int cdest);
void pxerbla_(const int* ictxt, const char* srname, const int* info, std::size_t srname_len);
}

namespace prism::scalapack {

// Routing rule of PRISM_SCALAPACK_ROUTE=auto, from bench/results/scalapack-route-2026-11-23.txt
// (docs/distributed.md, routing): prism when its modelled time is below this share of
// ScaLAPACK's and the call has at least this many flops.
constexpr double route_margin = 1.0;
constexpr double route_min_flops = 5e7;

// Internal descriptor entries (PBLAS's, after PB_CargFtoC): a 9-entry Fortran descriptor
// has no IMB/INB (they equal MB/NB), so its MB is entry 5, RSRC entry 9 in INFO numbers.
enum entry { DTYPE_ = 0, CTXT_, M_, N_, IMB_, INB_, MB_, NB_, RSRC_, CSRC_, LLD_, DLEN_ };
constexpr int descmult = 100, bignum = 10000;

struct descriptor {
  int e[DLEN_] = {};
  /// PB_CargFtoC: a BLOCK_CYCLIC_2D (type 1) descriptor as the internal type 2 one.
  explicit descriptor(const int* d) {
    if (d[0] == 1) {
      const int v[DLEN_] = {2, d[1], d[2], d[3], d[4], d[5], d[4], d[5], d[6], d[7], d[8]};
      std::copy(v, v + DLEN_, e);
    } else if (d[0] == 2) {
      std::copy(d, d + DLEN_, e);
    } else {
      e[DTYPE_] = d[0];
      e[CTXT_] = d[1];
    }
  }
};

/// PB_Cchkmat: checks sub(X) = X(ia:ia+M-1, ja:ja+N-1) (ia, ja 0-based) and its descriptor
/// at argument dpos0 (ia at dpos0 - 2, ja at dpos0 - 1), merging into info (see pblas.cpp).
void check_matrix(int ictxt, int nprow, int npcol, int myrow, int mycol, int M, int mpos0, int N, int npos0, int ia,
                  int ja, const descriptor& D, int dpos0, int& info);

/// The grid's processes as an MPI communicator, in grid order (see grid_of in pblas.cpp).
struct grid {
  MPI_Comm comm = MPI_COMM_NULL;
  int nprow = 0, npcol = 0, me = 0, ranks_per_node = 1;
  std::vector<int> world;  ///< world rank of each grid process
};

/// The grid of BLACS context ctxt (collective over the grid; made once); nullptr without MPI.
const grid* grid_of(int ctxt, int nprow, int npcol, int myrow, int mycol);

/// PRISM_SCALAPACK_ROUTE's values (lib/environment's route choice).
using route = prism::detail::route_choice;

/// This process's PRISM_SCALAPACK_ROUTE (a bad value is said once and read as auto).
route route_from_env();

/// PRISM_STATS is 1 (lib/environment reads it once).
bool stats_on();
/// PRISM_VERBOSE is 1 or 2.
bool verbose_on();
/// PRISM_NUM_THREADS is set (else a call's threads are the node's cores over its ranks).
bool threads_from_env();

/// One value every grid process must pass alike, with the INFO it reports when not.
struct global_arg {
  std::int64_t value;  ///< the value (scalars as their bits)
  int info;            ///< the INFO reported when processes differ in it
};

/// Agrees arguments over the grid: returns the INFO every grid process reports (0: go on)
/// and sets `chosen` to grid rank 0's route (see pblas.cpp).
int agree(const grid& g, int local_info, const std::vector<global_arg>& args, route mine, route& chosen);

/// Per-process buffers kept between calls (grown when a call needs more).
std::byte* arena(std::size_t bytes);

/// The real routine `symbol` (e.g. "pdsyrk_") of the ScaLAPACK loaded after prism (or of
/// PRISM_SCALAPACK_BACKEND), never `self`; nullptr (said once per symbol) when none.
void* real_routine(const char* symbol, void* self);

}  // namespace prism::scalapack
