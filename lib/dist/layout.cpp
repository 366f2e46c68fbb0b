// lib/dist/layout.cpp — layouts (planned on rank 0, shared by broadcast, cached on the
// communicator), native-layout matrices (scatter, gather), and the collective helpers.
#include <prism/dist.hpp>
#include <prism/error.hpp>

#include "../environment/environment.hpp"
#include "../recursive/executor.hpp"
#include "../mpi/comm.hpp"
#include "../ranks/schedule.hpp"
#include "layout_access.hpp"
#include "../runtime/lru_cache.hpp"

#include <algorithm>
#include <climits>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>

namespace prism::dist {

using mpi::check_mpi;

namespace {

// The layouts made on one communicator by problem and settings, an MPI attribute of it; the
// layout_cache_size most recent (one a matrix holds lives on), so new shapes do not grow memory.
// The library's duplicate goes with its last holder: this cache or a layout made on it.
constexpr std::size_t layout_cache_size = 16;
struct comm_cache {
  std::shared_ptr<const MPI_Comm> own;  // the library's duplicate
  int ranks_per_node = 1;               // of its ranks (a collective to find: once)
  prism::detail::lru_cache<std::string, std::shared_ptr<const layout>> layouts{layout_cache_size};
};

// Duplicates whose last holder went on a thread that may not call MPI, freed by free_orphans().
std::mutex orphans_lock;
std::vector<MPI_Comm> orphans;

// At MPI_Finalize (its first step deletes MPI_COMM_SELF's attributes): the orphans left.
int free_orphans_at_finalize(MPI_Comm, int, void*, void*) {
  detail::free_orphans();
  return MPI_SUCCESS;
}

// A new duplicate of comm, freed with its last holder where MPI may be called then (any thread
// under MPI_THREAD_MULTIPLE, the main thread under FUNNELED or SINGLE: under SERIALIZED another
// thread may be inside MPI), else left to detail::free_orphans; never after MPI_Finalize.
std::shared_ptr<const MPI_Comm> duplicate(MPI_Comm comm) {
  static const bool at_finalize = [] {  // (made on the thread that duplicates: it may call MPI)
    check_mpi(MPI_Comm_set_attr(MPI_COMM_SELF, mpi::attribute_key(free_orphans_at_finalize), nullptr), "MPI_Comm_set_attr");
    return true;
  }();
  (void)at_finalize;
  auto own = std::make_unique<MPI_Comm>(MPI_COMM_NULL);
  check_mpi(MPI_Comm_dup(comm, own.get()), "MPI_Comm_dup");
  return {own.release(), [](const MPI_Comm* c) {
            int finalized = 0, level = MPI_THREAD_SINGLE, main_thread = 0;
            MPI_Finalized(&finalized);
            if (!finalized) {
              MPI_Query_thread(&level);
              MPI_Is_thread_main(&main_thread);
              if (level == MPI_THREAD_MULTIPLE || (main_thread && level != MPI_THREAD_SERIALIZED)) {
                MPI_Comm_free(const_cast<MPI_Comm*>(c));
              } else {
                const std::lock_guard<std::mutex> hold(orphans_lock);
                orphans.push_back(*c);
              }
            }
            delete c;
          }};
}

int delete_cache(MPI_Comm, int, void* value, void*) {
  delete static_cast<comm_cache*>(value);
  return MPI_SUCCESS;
}

// The attribute key of comm_cache, made once however many threads ask first (two keys would
// each miss the other's caches and duplicate a communicator on some ranks only).
int cache_key() {
  static const int keyval = mpi::attribute_key(delete_cache);
  return keyval;
}

// comm's cache, or nullptr when no layout was made on it yet.
comm_cache* existing_cache(MPI_Comm comm) { return static_cast<comm_cache*>(mpi::attribute(comm, cache_key())); }

comm_cache& cache_of(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) throw invalid_argument("prism::dist::layout::make", "comm", 1, "is MPI_COMM_NULL");
  detail::free_orphans();
  if (comm_cache* c = existing_cache(comm)) return *c;
  auto c = std::make_unique<comm_cache>();
  c->own = duplicate(comm);
  c->ranks_per_node = mpi::ranks_per_node(*c->own);
  check_mpi(MPI_Comm_set_attr(comm, cache_key(), c.get()), "MPI_Comm_set_attr");
  return *c.release();
}

// Rank 0's text (a plan, or an error when ok is false) on every rank.
std::pair<bool, std::string> broadcast_text(MPI_Comm comm, bool ok, std::string text) {
  std::int64_t head[2] = {ok ? 1 : 0, std::int64_t(text.size())};
  mpi::control_bcast(head, 2, MPI_INT64_T, 0, comm);
  text.resize(std::size_t(head[1]));
  mpi::control_bcast(text.data(), int(head[1]), MPI_CHAR, 0, comm);
  return {head[0] != 0, text};
}

// The text a layout is agreed by: a plan's, or for a rank-k layout its problem and scheme,
// e.g. "dsyrk UT 4096 4096 k2 x tbd3{0,1}".
std::string agreed_text(const rank_model& m) {
  const problem& p = m.problem();
  if (p.op == operation::gemm) return m.source().to_string();
  return std::string(1, char(p.type)) + to_string(p.op) + ' ' + p.uplo + p.transa + ' ' + std::to_string(p.n) + ' ' +
         std::to_string(p.k) + ' ' + m.scheme().to_string();
}

// A layout of model m on the library's communicator (collective): a gemm plan must fit ctx
// on every rank and span no more ranks than the communicator has; the text is agreed.
std::shared_ptr<const layout> finish(const std::shared_ptr<const MPI_Comm>& own, rank_model m, std::string report,
                                     const context& ctx) {
  int rank = 0, size = 1;
  MPI_Comm_rank(*own, &rank);
  MPI_Comm_size(*own, &size);
  std::string local;  // why this rank cannot run it
  if (m.problem().op == operation::gemm) {
    try {
      prism::detail::check_fits(m.source(), ctx, true);
    } catch (const plan_error& e) {
      local = e.reason();
    }
  }
  const std::int64_t hash = mpi::text_hash(agreed_text(m));
  mpi::agree(*own, "prism::dist::layout", {{"plan", 0, hash}}, local);
  if (m.ranks() > size)
    throw plan_error("the plan spans " + std::to_string(m.ranks()) + " ranks, the communicator has " + std::to_string(size));
  auto l = detail::layout_access::make(own, rank, size, std::move(m), std::move(report), hash);
  if (rank == 0 && prism::detail::process_environment().verbose.get() > 0) {
    std::cerr << "prism-dist: layout over " << size << " ranks: " << l->model().grid() << '\n';
    if (l->laid_out().op == operation::gemm) std::cerr << l->source();
    std::cerr << l->report();
  }
  return l;
}

// A plan or scheme (`what`) this rank cannot lay out (`local` says why): the others hear of
// it in the agreement they reach in finish() (an invalid_argument naming this rank), and
// this rank throws plan_error saying why.
[[noreturn]] void refuse(MPI_Comm own, const char* what, const std::string& local) {
  try {
    mpi::agree(own, "prism::dist::layout", {{what, 0, 0}}, local);
  } catch (const invalid_argument&) {
  }
  throw plan_error(local);
}

// Rank 0's plan of p (its text and the planner's report); false with the error's text.
bool plan_on_root(const problem& p, const context& ctx, std::string& text, std::string& report) {
  std::ostringstream why;
  try {
    if (p.op == operation::gemm) {
      const rank_choice c = choose_ranks(p, ctx);
      text = c.chosen.to_string();
      print_rank_report(why, c);
    } else {
      const rank_k_choice c = choose_rank_k_ranks(p, ctx);
      text = c.chosen.to_string();
      print_rank_k_report(why, c);
    }
  } catch (const plan_error& e) {
    text = e.reason();
    return false;
  } catch (const error& e) {
    text = e.what();
    return false;
  } catch (const std::exception& e) {  // e.g. bad_alloc: the other ranks hear of it, not wait
    text = std::string("planning failed on rank 0: ") + e.what();
    return false;
  }
  report = why.str();
  return true;
}

// What a problem built by hand gets wrong for a layout, or "": a rank-k one must be what
// prism::rank_k_problem makes (m = n, uplo U or L, its trans pair); a gemm's sizes and
// letters the planner checks. E.g. uplo 'Q' would plan, then fail mid-call with C changed.
std::string problem_error(const problem& p) {
  if (p.op == operation::gemm) return "";
  try {
    const problem q = rank_k_problem(p.type, p.op, p.uplo, p.transa, p.n, p.k);
    if (p.m != p.n) return "a rank-k problem has m = n (prism::rank_k_problem makes one)";
    if (q.uplo != p.uplo || q.transa != p.transa || q.transb != p.transb)
      return "not a rank-k problem as prism::rank_k_problem makes it";
  } catch (const plan_error& e) {
    return e.reason();
  }
  return "";
}

// The layout's local size of operand `which`, or invalid_argument for no layout.
std::int64_t local_size_of(const std::shared_ptr<const layout>& l, operand which) {
  if (!l) throw invalid_argument("prism::dist::matrix", "layout", 1, "is null");
  return l->local_size(which);
}

}  // namespace

void detail::free_orphans() {
  std::vector<MPI_Comm> now;
  {
    const std::lock_guard<std::mutex> hold(orphans_lock);
    now.swap(orphans);
  }
  for (MPI_Comm& c : now) MPI_Comm_free(&c);
}

MPI_Comm detail::layout_access::library_comm(MPI_Comm comm) {
  const comm_cache* c = existing_cache(comm);
  return c != nullptr ? *c->own : MPI_COMM_NULL;
}

layout::layout(std::shared_ptr<const MPI_Comm> own, int rank, int size, rank_model m, std::string report, std::int64_t hash)
    : comm_(std::move(own)), rank_(rank), size_(size), model_(std::move(m)), report_(std::move(report)), plan_hash_(hash) {}

std::int64_t layout::rows(operand o) const { return ranks::schedule_of(model_).whole(o).rows; }
std::int64_t layout::cols(operand o) const { return ranks::schedule_of(model_).whole(o).cols; }
std::int64_t layout::local_size(operand o) const { return active() ? model_.local_size(o, rank_) : 0; }
std::size_t layout::predicted_peak_bytes() const { return active() ? model_.cost(rank_).peak_bytes() : 0; }

// Each piece of a cell, part by part: a rectangle's run of its column-major elements, or a
// diagonal block's run of its packed triangle.
std::vector<piece_span> layout::spans(operand o, int r) const {
  const ranks::schedule& s = ranks::schedule_of(model_);
  std::vector<piece_span> out;
  std::vector<ranks::cell_part> parts;
  for (const ranks::piece& pc : s.pieces(o, r)) {
    parts.clear();
    s.parts(o, pc.cell, parts);
    for (const ranks::cell_part& part : parts) {
      const std::int64_t first = std::max(pc.first, part.first), end = std::min(pc.first + pc.count, part.first + part.at.elements());
      if (first < end)
        out.push_back(piece_span{part.at.at.row, part.at.at.col, part.at.at.rows, first - part.first, end - first, part.at.tri});
    }
  }
  return out;
}

std::shared_ptr<const layout> layout::make(MPI_Comm comm, const problem& p, const context& ctx0) {
  comm_cache& cache = cache_of(comm);
  int rank = 0, size = 1;
  MPI_Comm_rank(*cache.own, &rank);
  MPI_Comm_size(*cache.own, &size);
  context ctx = ctx0;
  ctx.set_ranks(size).set_ranks_per_node(cache.ranks_per_node);
  // Only rank 0 plans, with its settings: ranks may differ in what is node-local (ranks per
  // node, the machine's description), and all key the layout by rank 0's.
  std::ostringstream key, settings;
  settings << ctx.describe() << ' ' << ctx.ranks_per_node();
  const std::int64_t mine = mpi::text_hash(settings.str());  // (>= 0: a root word)
  const std::int64_t rank0 = mpi::agree(*cache.own, "prism::dist::layout",
                                        {{"type", 1, char(p.type)}, {"transa", 2, p.transa}, {"transb", 3, p.transb},
                                         {"m", 4, p.m}, {"n", 5, p.n}, {"k", 6, p.k}, {"operation", 7, int(p.op)},
                                         {"uplo", 8, p.uplo}},
                                        problem_error(p), &mine);
  key << char(p.type) << to_string(p.op) << p.uplo << p.transa << p.transb << ' ' << p.m << ' ' << p.n << ' ' << p.k
      << ' ' << rank0;
  if (auto* hit = cache.layouts.find(key.str())) return *hit;
  std::string text, report;
  const bool ok = rank != 0 || plan_on_root(p, ctx, text, report);
  auto [fine, shared] = broadcast_text(*cache.own, ok, text);
  if (!fine) throw plan_error(shared);
  rank_model m = p.op == operation::gemm ? rank_model(plan::parse(shared)) : rank_model(p, rank_k_scheme::parse(shared));
  auto l = finish(cache.own, std::move(m), report, ctx);
  cache.layouts.put(key.str(), l);
  return l;
}

std::shared_ptr<const layout> layout::make(MPI_Comm comm, const problem& p, const rank_k_scheme& s, const context& ctx) {
  comm_cache& cache = cache_of(comm);
  int size = 1;
  MPI_Comm_size(*cache.own, &size);
  std::string local;
  try {
    rank_model m(p, s);
    if (s.ranks() <= size) return finish(cache.own, std::move(m), "", ctx);
    local = "the scheme spans " + std::to_string(s.ranks()) + " ranks, the communicator has " + std::to_string(size);
  } catch (const plan_error& e) {  // this rank cannot build it: every rank hears why
    local = e.reason();
  }
  refuse(*cache.own, "scheme", local);
}

std::shared_ptr<const layout> layout::make(MPI_Comm comm, const plan& p, const context& ctx) {
  comm_cache& cache = cache_of(comm);
  std::string local;
  std::optional<rank_model> m;
  try {
    p.validate();
    m.emplace(p);  // the rank level's own checks too (rank steps in a one-rank part, say)
  } catch (const plan_error& e) {  // this rank's plan is not valid: every rank hears why
    local = e.reason();
  }
  if (local.empty()) return finish(cache.own, std::move(*m), "", ctx);
  refuse(*cache.own, "plan", local);
}

template <scalar T>
matrix<T>::matrix(std::shared_ptr<const layout> l, operand which)
    : layout_(std::move(l)), which_(which), local_(std::size_t(local_size_of(layout_, which)), T(0)) {}

namespace {

// Elements of rank r's pieces, in storage order, copied between the whole stored matrix
// (column-major, ld) and a packed run: to_full = false packs, true unpacks. E.g. a piece
// of elements 5..9 of a 4 x 3 cell at (8, 0) covers (9, 1), (10, 1), (11, 1), (8, 2), (9, 2).
template <scalar T>
void copy_pieces(const layout& l, operand o, int r, T* full, std::int64_t ld, T* packed, bool to_full) {
  std::int64_t at = 0;
  for (const piece_span& sp : l.spans(o, r))
    each_element(sp, [&](std::int64_t i, std::int64_t j) {
      T* f = full + i + j * ld;
      if (to_full) *f = packed[at];
      else packed[at] = *f;
      ++at;
    });
}

// A scatter or gather (`what`) of operand o with root's full matrix (ld), agreed over the
// layout's communicator with its plan; root's counts, displacements and `packed` staging made
// before the agreement, so a root that cannot hold them tells every rank. MPI's int counts cap
// the whole matrix at 2^31 - 1 elements (e.g. 50000 x 50000 is refused).
template <scalar T>
void agree_root(const layout& l, operand o, int root, const char* what, const void* full, std::int64_t ld,
                std::vector<int>& counts, std::vector<int>& displs, std::vector<T>& packed) {
  const std::string routine = std::string("prism::dist::matrix::") + what;
  const std::int64_t rows = std::max<std::int64_t>(1, l.rows(o)), total = l.rows(o) * l.cols(o);
  std::string local;
  if (l.rank() == root && (ld < rows || (full == nullptr && total > 0)))
    local = std::string(what) + ": ld = " + std::to_string(ld) + " must be >= " + std::to_string(rows) + " (and the matrix non-null)";
  else if (l.rank() == root && total > std::int64_t(INT_MAX))
    local = std::string(what) + ": the whole matrix has " + std::to_string(total) +
            " elements, above MPI's 2^31 - 1 for one scatter or gather; fill each rank's pieces with matrix::fill "
            "or for_each instead";
  counts.assign(std::size_t(l.size()), 0), displs.assign(std::size_t(l.size()), 0);
  if (local.empty() && l.rank() == root) {
    std::int64_t at = 0;
    for (int r = 0; r < l.ranks_used(); ++r) {
      counts[std::size_t(r)] = int(l.model().local_size(o, r));
      displs[std::size_t(r)] = int(at);
      at += counts[std::size_t(r)];
    }
    try {
      packed.resize(std::size_t(at));
    } catch (const std::bad_alloc&) {
      local = std::string(what) + ": the root cannot allocate " + std::to_string(at * std::int64_t(sizeof(T))) +
              " bytes to stage the whole matrix";
    }
  }
  mpi::agree(l.comm(), routine.c_str(), {{"root", 1, root}, {"operand", 0, int(o)}, {"layout's plan", 0, l.plan_hash()}},
             local);
  if (root < 0 || root >= l.size()) throw invalid_argument(routine, "root", 1, "is not a rank");
}

}  // namespace

template <scalar T>
void matrix<T>::scatter(int root, const T* full, std::int64_t ld) {
  const layout& l = laid_out("scatter");  // (a rank without one cannot reach the others: it throws alone)
  std::vector<int> counts, displs;
  std::vector<T> packed;
  agree_root(l, which_, root, "scatter", full, ld, counts, displs, packed);
  if (l.rank() == root)
    for (int r = 0; r < l.ranks_used(); ++r)
      copy_pieces(l, which_, r, const_cast<T*>(full), ld, packed.data() + displs[std::size_t(r)], false);
  check_mpi(MPI_Scatterv(packed.data(), counts.data(), displs.data(), mpi::mpi_type<T>(), local_.data(),
                         int(local_.size()), mpi::mpi_type<T>(), root, l.comm()),
            "MPI_Scatterv");
}

template <scalar T>
void matrix<T>::gather(int root, T* full, std::int64_t ld) const {
  const layout& l = laid_out("gather");
  std::vector<int> counts, displs;
  std::vector<T> packed;
  agree_root(l, which_, root, "gather", full, ld, counts, displs, packed);
  check_mpi(MPI_Gatherv(local_.data(), int(local_.size()), mpi::mpi_type<T>(), packed.data(), counts.data(),
                        displs.data(), mpi::mpi_type<T>(), root, l.comm()),
            "MPI_Gatherv");
  if (l.rank() == root)
    for (int r = 0; r < l.ranks_used(); ++r)
      copy_pieces(l, which_, r, full, ld, packed.data() + displs[std::size_t(r)], true);
}

template class matrix<float>;
template class matrix<double>;
template class matrix<std::complex<float>>;
template class matrix<std::complex<double>>;

}  // namespace prism::dist
