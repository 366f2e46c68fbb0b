// lib/scalapack/pblas.hpp — what the PBLAS entry points of libprism_scalapack (pgemm.cpp,
// psyrk.cpp) share: PBLAS's descriptor and argument checks (PB_Cchkmat numbering), the
// grid's communicator, the agreement of arguments over the grid, the route setting, the
// lookup of the real routine, the per-process exchange arena, and the prism route itself
// (route.cpp): a schedule fitted to the caller's layout, run in place, and its PRISM_STATS
// line.
#pragma once

#include "../environment/environment.hpp"

#include <prism/context.hpp>
#include <prism/types.hpp>

#include "../mpi/comm.hpp"
#include "../mpi/messages.hpp"
#include "../ranks/ownership.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

extern "C" {
// From the ScaLAPACK library the program loads (BLACS), and PBLAS's error handler: the
// program's own PB_Cabort when it defines one (PBLAS's testers do), else ScaLAPACK's.
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_get(int ctxt, int what, int* val);
MPI_Comm Cblacs2sys_handle(int handle);
void PB_Cabort(int ictxt, char* rout, int info);
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
  int nprow = 0, npcol = 0, me = 0, size = 0, ranks_per_node = 1;
};

/// The grid of BLACS context ctxt (collective over the grid the first time, then no
/// message); nullptr without MPI.
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

/// What the grid agreed on a call's arguments (see agree in pblas.cpp).
struct agreement {
  bool failed_somewhere = false;  ///< some grid process's own checks failed (that process reported)
  int differing = 0;              ///< else the INFO of the first argument processes pass differently (0: none)
  route chosen = route::automatic;  ///< grid rank 0's PRISM_SCALAPACK_ROUTE
};

/// Agrees a call over the grid (collective): whether any process's checks failed, the first
/// argument that differs between processes, and grid rank 0's route.
agreement agree(const grid& g, int local_info, const std::vector<global_arg>& args, route mine);

/// Reports INFO for routine `name` (e.g. "PDGEMM") as reference PBLAS does: PB_Cabort(ctxt,
/// name, info), which prints and ends the job unless the program replaced it.
void report(int ctxt, const char* name, int info);

/// Step 1's end on a grid process, after its own checks gave `info`: reports a failed check
/// at once, as PBLAS does; then agrees over the grid (sets `chosen`). True when the call must
/// stop with C untouched: this or another process's checks failed (each reported its own
/// INFO), or the processes pass different arguments (every process reports the first).
bool stop_after_checks(const grid& g, int ctxt, const char* name, int info, const std::vector<global_arg>& args,
                       route& chosen);

/// When a call began on this process: its clock and its control bytes so far (what
/// prism's own collectives brought it, lib/mpi/comm.hpp), for PRISM_STATS.
struct call_start {
  std::chrono::steady_clock::time_point time = std::chrono::steady_clock::now();
  std::int64_t control = mpi::control_traffic().bytes;
  /// Seconds since the call began.
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - time).count(); }
};

/// Per-process buffers kept between calls (grown when a call needs more).
std::byte* arena(std::size_t bytes);

/// The real routine `symbol` (e.g. "pdsyrk_") of the ScaLAPACK loaded after prism (or of
/// PRISM_SCALAPACK_BACKEND), never `self`; nullptr (said once per symbol) when none.
void* real_routine(const char* symbol, void* self);

/// The context of one call: the machine's, with the grid's ranks and a share of the threads.
context call_context(const grid& g);

/// A call's schedule fitted to the caller's layout, as every grid process holds it.
struct fitted {
  bool use_prism = false;                       ///< the route
  std::string reason, text;                     ///< why; the plan's or scheme's text
  std::shared_ptr<const ranks::schedule> model;  ///< its schedule (use_prism only)
  ranks::layout_fit fit;                        ///< its fit and exact cost on the layout
  std::unique_ptr<ranks::cyclic_ownership> own;  ///< this process's view of the layout
  double native_mb = 0, scalapack_mb = 0;       ///< the schedule's busiest rank natively; PBLAS's model
};

/// The fitted schedule of call signature `key` (collective on a miss: grid rank 0 decides
/// the route, plans and fits, and broadcasts its verdict; the 64 most recent kept). `head`
/// names the call for PRISM_VERBOSE, e.g. "PDGEMM NN 512x512x512".
std::shared_ptr<const fitted> prepare(const std::string& key, const problem& pr, const ranks::caller_layout& L,
                                      const std::int64_t lld[3], const grid& g, route chosen, bool have_backend,
                                      const context& ctx, const std::string& head);

/// What the prism route moved and allocated on this process.
struct run_result {
  mpi::exchange_counts counts;  ///< exact, from the MPI statuses
  std::int64_t allocated = 0;   ///< its buffers and the local workspace lent (PRISM_STATS)
};

/// The prism route: the rank level's one executor on the caller's own storage (B unused
/// by a rank-k update). A failure agreed by every process ends the job with one line and
/// MPI_Abort, as reference PBLAS ends it on an error.
template <scalar T>
run_result run_fitted(const fitted& f, const grid& g, T alpha, const T* A, const T* B, T beta, T* C, const context& ctx,
                      const std::string& routine);

/// PRISM_STATS=1: one line per call on grid process 0: `head` (routine and arguments), the
/// route and why; for prism the measured and predicted bytes received, whether every
/// process received exactly its prediction, the schedule's own volume in prism's native
/// layout and what the caller's layout adds, PBLAS's modelled volume, the memory measured
/// and predicted, prism's collectives, the plan and the fit.
void print_stats(const grid& g, const fitted& f, const std::string& head, const run_result& res, const call_start& t0,
                 std::size_t elem);

}  // namespace prism::scalapack
