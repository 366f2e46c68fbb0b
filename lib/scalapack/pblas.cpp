// lib/scalapack/pblas.cpp — see pblas.hpp.
#include "pblas.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace prism::scalapack {

using mpi::check_mpi;
using ranks::cyclic_dim;

constexpr int descmult = 100, bignum = 10000;  // PBLAS's INFO numbering of descriptor entries

// PB_Cchkmat. Example: desc A (argument 10) with MB = 0: entry MB_ = 6 -> 10 * 100 + 1 + 6, so INFO
// = -1005 (the MB of a 9-entry descriptor is its 5th entry).
void check_matrix(const grid_place& at, int M, int mpos0, int N, int npos0, int ia, int ja, const descriptor& D, int dpos0,
                  int& info) {
  const int* d = D.e;
  const int ictxt = at.ctxt, nprow = at.nprow, npcol = at.npcol, myrow = at.myrow, mycol = at.mycol;
  long inf = info >= 0 ? bignum : info < -descmult ? -long(info) : -long(info) * descmult;
  const long mpos = long(mpos0) * descmult, npos = long(npos0) * descmult, iapos = long(dpos0 - 2) * descmult,
             japos = long(dpos0 - 1) * descmult, dpos = long(dpos0) * descmult + 1;
  auto finish = [&] { info = inf == bignum ? 0 : inf % descmult == 0 ? int(-(inf / descmult)) : int(-inf); };
  if (M < 0) inf = std::min(inf, mpos);
  if (N < 0) inf = std::min(inf, npos);
  if (ia < 0) inf = std::min(inf, iapos);
  if (ja < 0) inf = std::min(inf, japos);
  if (d[DTYPE_] != 2) return inf = std::min(inf, dpos + DTYPE_), finish();
  if (d[CTXT_] != ictxt) return inf = std::min(inf, dpos + CTXT_), finish();
  if (d[IMB_] < 1) inf = std::min(inf, dpos + IMB_);
  if (d[INB_] < 1) inf = std::min(inf, dpos + INB_);
  if (d[MB_] < 1) inf = std::min(inf, dpos + MB_);
  if (d[NB_] < 1) inf = std::min(inf, dpos + NB_);
  if (d[RSRC_] < -1 || d[RSRC_] >= nprow) inf = std::min(inf, dpos + RSRC_);
  if (d[CSRC_] < -1 || d[CSRC_] >= npcol) inf = std::min(inf, dpos + CSRC_);
  if (M == 0 || N == 0) {
    if (d[M_] < 0) inf = std::min(inf, dpos + M_);
    if (d[N_] < 0) inf = std::min(inf, dpos + N_);
    if (d[LLD_] < 1) inf = std::min(inf, dpos + LLD_);
  } else {
    if (d[M_] < 1) inf = std::min(inf, dpos + M_);
    if (d[N_] < 1) inf = std::min(inf, dpos + N_);
    if (d[M_] >= 1 && d[N_] >= 1) {
      if (long(ia) + M > d[M_]) inf = std::min(inf, iapos);
      if (long(ja) + N > d[N_]) inf = std::min(inf, japos);
    }
    if (inf == bignum) {
      // Rows of X this process holds (all of them when RSRC = -1: replicated).
      auto held = [](int n, int first, int blk, int me, int src, int procs) -> std::int64_t {
        if (src < 0) return n;
        return cyclic_dim{n, 0, first, blk, src, procs}.owned_before(me, n);
      };
      const std::int64_t np = held(d[M_], d[IMB_], d[MB_], myrow, d[RSRC_], nprow);
      if (d[LLD_] < std::max<std::int64_t>(1, np)) {
        const std::int64_t nq = held(d[N_], d[INB_], d[NB_], mycol, d[CSRC_], npcol);
        if (d[LLD_] < 1 || nq > 0) inf = std::min(inf, dpos + LLD_);
      }
    }
  }
  finish();
}

namespace {

// Forgets a grid when BLACS frees its communicator (Cblacs_gridexit): prism's duplicate of
// it and the grid's routing caches go with it (no other grid's key can name them).
int forget_grid(MPI_Comm, int, void* value, void*) {
  auto* gr = static_cast<grid*>(value);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && gr->comm != MPI_COMM_NULL) MPI_Comm_free(&gr->comm);
  delete gr;
  return MPI_SUCCESS;
}

// The grid's processes in grid order g = prow * npcol + pcol: a duplicate (once per grid) of
// BLACS's communicator of the context (Cblacs_get 10), whose ranks are in that order; kept as its
// attribute, so a later call finds it with no message and a reused context number finds none.
const grid* grid_of(const grid_place& at) {
  const int ctxt = at.ctxt, nprow = at.nprow, npcol = at.npcol;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return nullptr;
  int handle = -1;
  MPI_Comm blacs = MPI_COMM_NULL;
  {
    const std::lock_guard<std::mutex> hold(blacs_lock());
    Cblacs_get(ctxt, 10, &handle);
    blacs = Cblacs2sys_handle(handle);
  }
  static const int keyval = mpi::attribute_key(forget_grid);  // made once however many threads ask first
  if (const void* found = mpi::attribute(blacs, keyval)) return static_cast<const grid*>(found);
  auto gr = std::make_unique<grid>();
  gr->nprow = nprow, gr->npcol = npcol, gr->me = at.myrow * npcol + at.mycol, gr->size = nprow * npcol;
  int rank = -1, size = 0;
  MPI_Comm_rank(blacs, &rank);
  MPI_Comm_size(blacs, &size);
  if (rank != gr->me || size != gr->size)
    throw error("prism-scalapack: BLACS context " + std::to_string(ctxt) + "'s communicator has rank " +
                std::to_string(rank) + " of " + std::to_string(size) + " where grid order says " +
                std::to_string(gr->me) + " of " + std::to_string(gr->size));
  check_mpi(MPI_Comm_dup(blacs, &gr->comm), "MPI_Comm_dup");
  gr->ranks_per_node = mpi::ranks_per_node(gr->comm);
  check_mpi(MPI_Comm_set_attr(blacs, keyval, gr.get()), "MPI_Comm_set_attr");
  return gr.release();
}

void report(int ctxt, const std::string& name, int info) { PB_Cabort(ctxt, const_cast<char*>(name.c_str()), info); }

}  // namespace

std::mutex& blacs_lock() {
  static std::mutex m;
  return m;
}

bool stats_on() { return prism::detail::process_environment().stats.get(); }

const context* process_settings() {
  static const std::optional<context> from_env = []() -> std::optional<context> {
    try {
      const context& c = default_context();
      (void)c.machine();  // PRISM_TOPOLOGY is read on first use
      return c;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "prism: %s; recursion off, every call of its grids goes to ScaLAPACK's own routine\n", e.what());
      return std::nullopt;
    }
  }();
  return from_env ? &*from_env : nullptr;
}

void add_descriptor_args(std::vector<mpi::agreed>& args, const descriptor& D, int pos) {
  for (int e : {DTYPE_, M_, N_, IMB_, INB_, MB_, NB_, RSRC_, CSRC_}) args.push_back({"", pos * descmult + 1 + e, D.e[e]});
}

const grid* enter_grid(const grid_place& at, const std::string& name, int info, const std::string& symbol, void* self,
                       const forward_fn& forward) {
  // A failed check is reported before anything collective, as the reference does (whose
  // PB_Cabort usually ends the job right there): a grid's first call duplicates its
  // communicator, and a process whose context is another grid's would wait there.
  if (info != 0) report(at.ctxt, name, info);
  if (at.nprow == -1) return nullptr;  // not in the grid: nobody to agree with
  if (const grid* g = grid_of(at)) return g;
  if (info != 0) return nullptr;  // (reported: the backend would report it again)
  if (void* real = real_routine(symbol, self)) forward(real);
  else std::fprintf(stderr, "prism-scalapack: %s: MPI is not initialised and there is no backend\n", name.c_str());
  return nullptr;
}

// A process whose checks failed (and reported, under a PB_Cabort that returns) still joins, so
// the others return instead of waiting for it. E.g. grid rank 2 alone passes m = 5: all report INFO -3.
bool stop_after_checks(const grid& g, int ctxt, const std::string& name, int info, const std::vector<mpi::agreed>& args,
                       agreed_route& agreed) {
  // Rank 0's route and (4) PRISM_STATS in one word; a process without its settings raises
  // the flag, which sends the call to the backend.
  const std::int64_t route_word =
      std::int64_t(prism::detail::process_environment().scalapack_route.get()) + (stats_on() ? 4 : 0);
  const mpi::agreement a = mpi::find_disagreement(g.comm, args, info != 0 ? "INFO " + std::to_string(info) : "",
                                                  &route_word, process_settings() == nullptr);
  agreed.bad_setting = a.flagged;
  agreed.chosen = a.flagged ? route::backend : route(a.from_root & 3);
  agreed.stats = (a.from_root & 4) != 0;
  if (info != 0 || a.failed_rank >= 0) return true;
  if (a.differing >= 0) report(ctxt, name, -args[std::size_t(a.differing)].position);
  return a.differing >= 0;
}

std::string symbol_of(const std::string& name) {
  std::string s;
  for (char c : name) s += char(std::tolower(static_cast<unsigned char>(c)));
  return s + "_";
}

ranks::operand_layout operand_of(const descriptor& D, std::int64_t rows, std::int64_t cols, int i, int j, const grid& g) {
  const int* d = D.e;
  return {cyclic_dim{rows, i, d[IMB_], d[MB_], d[RSRC_], g.nprow}, cyclic_dim{cols, j, d[INB_], d[NB_], d[CSRC_], g.npcol}};
}

void* real_routine(const std::string& symbol, void* self) {
  static std::mutex lock;
  static std::map<std::string, void*> found;
  std::lock_guard<std::mutex> hold(lock);
  if (auto it = found.find(symbol); it != found.end()) return it->second;
  static void* where = nullptr;
  static bool looked = false, said = false;
  if (!looked) {
    looked = true;
    where = RTLD_NEXT;
    const std::string& path = prism::detail::process_environment().scalapack_backend;
    if (!path.empty()) {
      where = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
      said = where == nullptr;
      if (where == nullptr)
        std::fprintf(stderr, "prism: PRISM_SCALAPACK_BACKEND: '%s' cannot be loaded: %s; prism computes every call itself\n", path.c_str(), dlerror());
    }
  }
  void* f = where != nullptr ? dlsym(where, symbol.c_str()) : nullptr;
  if (f == self) f = nullptr;  // that would call prism again
  if (f == nullptr && !said)
    std::fprintf(stderr, "prism-scalapack: no ScaLAPACK %s found after prism; prism computes every call\n", symbol.c_str());
  found.emplace(symbol, f);
  return f;
}

}  // namespace prism::scalapack
