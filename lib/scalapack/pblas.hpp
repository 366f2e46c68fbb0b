// lib/scalapack/pblas.hpp — what libprism_scalapack's entry points (pgemm.cpp, psyrk.cpp) share:
// PBLAS's checks, the grid, the agreement, the real routine, and route.cpp's steps after the checks.
#pragma once

#include "../environment/environment.hpp"

#include <prism/context.hpp>
#include <prism/types.hpp>

#include "../mpi/comm.hpp"
#include "../ranks/layout_plan.hpp"

#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
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

// Internal descriptor entries (PBLAS's, after PB_CargFtoC): a 9-entry Fortran descriptor
// has no IMB/INB (they equal MB/NB), so its MB is entry 5, RSRC entry 9 in INFO numbers.
enum entry { DTYPE_ = 0, CTXT_, M_, N_, IMB_, INB_, MB_, NB_, RSRC_, CSRC_, LLD_, DLEN_ };

/// A descriptor in PBLAS's internal form.
struct descriptor {
  int e[DLEN_] = {};  ///< its entries
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

/// A character argument in upper case.
inline char upper(const char* c) { return char(std::toupper(static_cast<unsigned char>(*c))); }

/// Held around prism's own BLACS queries: BLACS's tables are not thread-safe (a grid's
/// first Cblacs_get of its communicator writes one), and threads may call on grids of their own.
std::mutex& blacs_lock();

/// A process's place in the grid of BLACS context ctxt (Cblacs_gridinfo; nprow -1: not in it).
struct grid_place {
  int ctxt, nprow = -1, npcol = -1, myrow = -1, mycol = -1;
  explicit grid_place(int context) : ctxt(context) {
    const std::lock_guard<std::mutex> hold(blacs_lock());
    Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  }
};

/// PB_Cchkmat: checks sub(X) = X(ia:ia+M-1, ja:ja+N-1) (ia, ja 0-based) and its descriptor
/// at argument dpos0 (ia at dpos0 - 2, ja at dpos0 - 1), merging into info (see pblas.cpp).
void check_matrix(const grid_place& at, int M, int mpos0, int N, int npos0, int ia, int ja, const descriptor& D, int dpos0,
                  int& info);

/// The routing caches of one grid (route.cpp: its verdicts and fits by call signature).
struct route_caches;

/// The grid's processes as an MPI communicator, in grid order (see grid_of in pblas.cpp),
/// and what prism keeps for the grid; freed when BLACS frees the grid (Cblacs_gridexit).
struct grid {
  MPI_Comm comm = MPI_COMM_NULL;
  int nprow = 0, npcol = 0, me = 0, size = 0, ranks_per_node = 1;
  /// The grid's routing caches, made by its first routed call: one grid's calls alone decide
  /// what they keep, so every process of the grid keeps the same signatures.
  mutable std::shared_ptr<route_caches> caches;
};

/// PRISM_SCALAPACK_ROUTE's values (lib/environment's route choice).
using route = prism::detail::route_choice;

/// PRISM_STATS is 1 (lib/environment reads it once).
bool stats_on();

/// The process's PRISM_* settings (default_context()), or nullptr when one is bad (said
/// once on stderr): then every call of the grids it is in goes to the backend's routine.
const context* process_settings();

/// Appends descriptor D's entries every grid process must pass alike (D is argument pos).
void add_descriptor_args(std::vector<mpi::agreed>& args, const descriptor& D, int pos);

/// The backend's routine, called with the caller's own arguments.
using forward_fn = std::function<void(void*)>;

/// Step 1's start after this process's checks gave `info`: reports a failed check at once, as
/// PBLAS; the call's grid, or nullptr when the call ends here (outside the grid; no MPI: the backend's `symbol` runs).
const grid* enter_grid(const grid_place& at, const std::string& name, int info, const std::string& symbol, void* self,
                       const forward_fn& forward);

/// What a call's agreement decided, the same on every grid process (stop_after_checks).
struct agreed_route {
  route chosen = route::automatic;  ///< grid rank 0's PRISM_SCALAPACK_ROUTE; backend when a process has a bad PRISM_* setting
  bool stats = false;               ///< grid rank 0's PRISM_STATS (its line's reductions are collective)
  bool bad_setting = false;         ///< some grid process has a bad PRISM_* setting
  /// Why a call sent to the backend (chosen == backend) goes there.
  const char* why_backend() const {
    return bad_setting ? "a bad PRISM_* setting on a grid process" : "PRISM_SCALAPACK_ROUTE=backend";
  }
};

/// Step 1's end: agrees over the grid (one reduction; sets `agreed`). True when the call stops,
/// C untouched: some process's checks failed (each reported its INFO), or arguments differ (all report the first).
bool stop_after_checks(const grid& g, int ctxt, const std::string& name, int info, const std::vector<mpi::agreed>& args,
                       agreed_route& agreed);

/// When a call began on this process: its clock and its control bytes so far (what
/// prism's own collectives brought it, lib/mpi/comm.hpp), for PRISM_STATS.
struct call_start {
  std::chrono::steady_clock::time_point time = std::chrono::steady_clock::now();
  std::int64_t control = mpi::control_traffic();
  /// Seconds since the call began.
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - time).count(); }
};

/// The routine name of a PBLAS call: "P", T's letter (S, D, C, Z), then `what`, e.g. "PDGEMM".
template <scalar T>
std::string routine_name(const char* what) {
  const scalar_type t = scalar_type_of<T>();
  return std::string("P") + char(std::toupper(static_cast<unsigned char>(char(t)))) + what;
}

/// The real routine `symbol` (e.g. "pdsyrk_") of the ScaLAPACK loaded after prism (or of
/// PRISM_SCALAPACK_BACKEND), never `self`; nullptr (said once per symbol) when none.
void* real_routine(const std::string& symbol, void* self);
/// The symbol of routine `name`: "pdsyrk_" of "PDSYRK".
std::string symbol_of(const std::string& name);

/// sub(X) = X(i:i+rows-1, j:j+cols-1) under descriptor D on grid g.
ranks::operand_layout operand_of(const descriptor& D, std::int64_t rows, std::int64_t cols, int i, int j, const grid& g);

/// How a call names itself: its routine ("PDGEMM"), for PRISM_VERBOSE (e.g. "PDGEMM NN
/// 512x512x512") and for PRISM_STATS's lines ("routine=PDGEMM trans=NN m=512 ...").
struct call_names {
  std::string routine, verbose, stats;
};

/// Steps 2-4 past the checks and quick returns: alpha = 0 or k = 0 scales this process's C
/// (a replicated C or route backend: `forward`); else pr's schedule fitted to the caller's layout L
/// (lld: A's, B's, C's LLD) run in place (rank-k: B unused), or `forward` to `real`, or (neither)
/// one line and MPI_Abort, as on a failure of prism's route; then PRISM_STATS's line.
template <scalar T>
void route_call(const call_names& names, const problem& pr, const ranks::caller_layout& L, const std::int64_t lld[3],
                const grid& g, const agreed_route& agreed, void* real, const forward_fn& forward, T alpha, const T* A,
                const T* B, T beta, T* C, const call_start& t0);

}  // namespace prism::scalapack
