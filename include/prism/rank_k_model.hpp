// prism/rank_k_model.hpp — the rank level of a rank-k update (syrk / herk over MPI ranks):
// which rank computes which blocks of the triangle over which part of k, the native layout
// of A and C, the exchanges, and their exact cost per rank. No MPI here: `prism plan
// --syrk ... --ranks P` and the planner use it without a communicator; prism::dist::syrk
// executes exactly what it describes.
//
// The triangle-block scheme. op(A) is n x k; C = op(A) op(A)^T is symmetric, so only its
// triangle is computed. A scheme (prism/plan.hpp) has one or more parts, each on its own
// share of k in proportion to its ranks. A part cuts its share into `groups` slices, one
// per group of `group_ranks` = c ranks, and a group shares the whole triangle over its
// slice by its cover:
//   - difference: n in c row blocks ("atoms") of floor(n/c) or ceil(n/c) rows, the longer
//     ones placed so that no role's blocks hold many more of them than the mean (roles of
//     uneven ranks may take Newton's blocks instead: prism/plan.hpp, rank_k_part), the
//     c(c+1)/2 blocks of the triangle shared by a difference cover D of Z_c (a set with 0 in it whose differences a - b
//     mod c take every value). Group rank p computes the diagonal block (p, p) and, for each
//     d = 1 .. floor(c/2), the block of rows {p + a, p + b} (mod c) where (a, b) is D's pair
//     for d; for d = c/2 (c even) both ranks covering a pair compute it, on one half of the
//     slice each (the rank whose first block p + a is below c/2 takes the first half). So
//     rank p reads only the row blocks p + D (|D| ~ sqrt(c): a perfect difference set such
//     as {0, 1, 3} for c = 7 gives the projective-plane blocks of the SYRK bound's proof).
//     Example: c = 3, D = {0, 1}: rank 0 computes (0, 0) and rows {0, 1}; rank 1 (1, 1) and
//     {1, 2}; rank 2 (2, 2) and {2, 0}: every block once, each rank reading two row blocks.
//   - star (c = 4): six atoms, three "centre" atoms of a = n/sqrt(24) rows, then three of
//     the rest (t = n/3 - a each). Rank 0 computes the three blocks between centre atoms
//     (3 a^2 = n^2/8) reading those three; rank j = 1..3 computes centre atom j-1's diagonal,
//     its blocks with the last three atoms, and two of those three's six blocks, reading
//     centre atom j-1 and the last three (a + 3t, about 0.59 n): also n^2/8 (a^2 = 1/24 is
//     where the two sums meet). Every rank reads about 0.6 n where c = 4 equal blocks need
//     3/4 n, and nothing is split along k. With m0 ranks on the centre role and m on each
//     leaf role, a = n sqrt(m0 / (6 (3m + m0))) evens their work out: "star4[3,2,2,2]" on 9
//     ranks has centre atoms of n/sqrt(18) (1.21x the SYRK bound on n = k, where k3 x tbd3
//     gets 1.24x).
// c = 1 is the k split (the 1D scheme: the triangle reduce-scattered); one group of a
// perfect difference set the 2D scheme; several groups or parts the 3D one. Parts of
// different covers take different row atoms: the model cuts n at every part's atom
// boundaries, and its row blocks are those pieces (a part's block is the run of row blocks
// inside its atoms). Example: "star4 + tbd3{0,1}" on n = 4096: the star's atoms at 836,
// 1672, 2508, 3037, 3566 and the thirds at 1365, 2730 give 8 row blocks.
// `phases` > 1 runs each rank's slice in that many chunks of k one after another, holding
// one chunk of A at a time (the memory knob); the partial C stays until the end.
//
// Native layout (as prism/rank_model.hpp for gemm): a cell of A is one row block over one
// interval between k cuts (slice, half and chunk boundaries); a cell of C is one block of
// the triangle (a diagonal block holds its triangle only, packed column by column). A cell
// is split among the ranks that need it (A) or compute it (C) in proportion to their
// ownership weights: holder t owns elements [floor(N W_<t / W), floor(N W_<=t / W)) of its
// stored column-major order, W_<t the weights of the holders before it (holders ascending)
// and W all of theirs; each rank stores its pieces one after another in cell order. A
// role of a part has one weight for A cells and one for C blocks (every group alike); where
// the roles' receipts differ (a star, uneven roles, several parts) the model sets them so
// that the busiest rank receives about what the mean rank does: the words to move are the
// same whoever owns them, owning more of an A cell means receiving less of it, and owning
// more of a C block receiving more partials, so a rank that reads less of A owns more of C.
// Example: "star4 + tbd3{0,1}" on 4096^2: equal weights give the busiest rank 36.0 MB and
// the mean 33.0; balanced, the busiest gets 33.03. One odd difference cover alone (k slices
// or uneven roles of it, the k split too) is the exception for C: each C block has one
// computing role, whose blocks (its diagonal, then its block of each d) are laid end to end
// and cut into one run per rank of the role, so every rank owns its role's C over its ranks
// to one element (index_c_chunks): tbd3{0,1} over 2 ranks a role with blocks of 3 rows: the
// diagonal (6) and the d = 1 block (9) make 15, run 0 owning the diagonal and 1 element more.
// Exchanges: in each phase a rank receives the other holders' pieces of the A cells it
// needs; at the end, each computer of a C block sends each other holder its partial of
// that holder's piece, and holders add them, in rank order, to beta C. So the 1D scheme
// reduce-scatters the triangle ((n^2 / 2)(1 - 1/P) per rank, the bound's 1D case) and the
// 2D one gathers |D| - 1 row blocks per rank (about nk / sqrt(P), the 2D case).
// The scheme (rank_k_scheme) and its planner (choose_rank_k_ranks) sit with the other
// planners in prism/plan.hpp.
#pragma once

#include <prism/context.hpp>
#include <prism/rank_model.hpp>
#include <prism/types.hpp>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace prism {

/// The smallest difference cover of Z_c that prism finds, ascending, 0 first: every
/// d = 1 .. c - 1 is a - b mod c for some a, b in it. Exact (smallest size) up to c = 36;
/// beyond, Singer's perfect difference set (size q + 1) when c = q^2 + q + 1 with q a prime power,
/// else {0 .. s-1} with multiples of s (size about sqrt(2c)). E.g. c = 7: {0, 1, 3}.
std::vector<int> difference_cover(int c);

/// Ranks per role for P ranks on one odd difference cover of c roles (c >= 3) over an
/// n x k rank-k update, each role's ranks taking turns over k: in proportion to the roles'
/// work on equal row blocks, so that the busiest rank does the least multiply-adds whole
/// rows and columns allow. E.g. n = 4096 on c = 651 (blocks of 6 or 7 rows): the roles'
/// work differs by up to 13 %, so over 16,384 ranks they get 23 to 26 ranks each. Empty when
/// c is even or above n, or P is below c or above c k.
std::vector<int> work_role_ranks(std::int64_t n, std::int64_t k, int c, int P);

/// One block of the triangle a rank computes over part of k: rows block i, columns
/// block j of the lower orientation (i >= j; i == j: the diagonal triangle), op(A)
/// columns [k0, k1).
struct rank_k_unit {
  int i = 0, j = 0;                ///< row blocks (i >= j)
  std::int64_t k0 = 0, k1 = 0;     ///< op(A) columns
};

/// The native layout and exchanges of a rank-k scheme (see the file comment).
/// A rank's task, pieces and costs come from its own units: O(parts + cells it touches),
/// so the planner scores every rank of a large plan quickly. Thread-safe (the cost table
/// is guarded).
class rank_k_model {
 public:
  /// Builds the model of problem p (op syrk or herk) under scheme s; throws plan_error for a
  /// gemm problem, a scheme of no ranks, a part with more groups than its share of k, a
  /// part whose rows leave a block empty, a star whose leaf roles have unlike ranks or whose
  /// centre has 6 times theirs or more, or phases above a slice's length.
  rank_k_model(const problem& p, const rank_k_scheme& s);

  /// The problem.
  const problem& source() const noexcept { return p_; }
  /// The scheme.
  const rank_k_scheme& scheme() const noexcept { return s_; }
  /// Ranks used (P').
  int ranks() const noexcept { return s_.ranks(); }
  /// Phases.
  int phases() const noexcept { return s_.phases; }
  /// Row blocks (every part's atom boundaries together).
  int blocks() const noexcept { return int(bounds_.size()) - 1; }
  /// Row block b's first row (b = blocks(): n).
  std::int64_t block_start(int b) const { return bounds_[std::size_t(b)]; }
  /// Rows in row block b.
  std::int64_t block_rows(int b) const { return block_start(b + 1) - block_start(b); }
  /// Rank r's units over its whole slice, each block once, in the order of the file
  /// comment (a half of a slice of one column may be empty: its block is still r's to
  /// hold, as zeros).
  std::vector<rank_k_unit> slice_units(int r) const;
  /// Rank r's units in phase q (their k ranges cut to the phase's chunk; empty ones dropped).
  std::vector<rank_k_unit> units(int q, int r) const;
  /// Ranks computing C block (i, j) (i >= j), ascending.
  std::vector<int> c_holders(int i, int j) const;

  /// Rows of stored A (n for trans 'N', else k).
  std::int64_t rows_a() const;
  /// Columns of stored A.
  std::int64_t cols_a() const;

  /// A cell: row block `b`, op(A) columns [k0, k1) (one interval between k cuts).
  struct a_cell {
    int b = 0;
    std::int64_t k0 = 0, k1 = 0;
    /// Elements.
    std::int64_t size(const rank_k_model& m) const { return m.block_rows(b) * (k1 - k0); }
    friend bool operator==(const a_cell&, const a_cell&) = default;
  };
  /// The A cells rank r needs in phase q, in cell order (by k, then block).
  std::vector<a_cell> a_needs(int q, int r) const;
  /// Ranks needing A cell x (in its phase), ascending.
  std::vector<int> a_holders(const a_cell& x) const;
  /// Rank r's A pieces over all phases in storage order: (cell, piece of it).
  std::vector<std::pair<a_cell, piece>> a_pieces(int r) const;
  /// Rank r's C pieces in storage order (piece.cell = the block's index i (i + 1) / 2 + j).
  std::vector<piece> c_pieces(int r) const;
  /// The piece of A cell x each holder owns, in a_holders(x) order (piece.cell 0).
  std::vector<piece> a_shares(const a_cell& x) const;
  /// The piece of C block (i, j) each computer owns, in c_holders(i, j) order (piece.cell 0).
  std::vector<piece> c_shares(int i, int j) const;
  /// C block index i (i + 1) / 2 + j back to (i, j).
  static std::pair<int, int> c_block(std::int64_t index);
  /// Elements of C block (i, j): a rectangle, or the packed triangle when i == j.
  std::int64_t c_size(int i, int j) const;
  /// Elements of operand o (A or C) rank r stores.
  std::int64_t local_size(operand o, int r) const;

  /// Exact costs of rank r (elements; A in received[0], C partials in received[2]).
  rank_cost cost(int r) const;
  /// Largest elements received by any rank.
  std::int64_t max_received() const;
  /// Mean elements received per rank.
  double mean_received() const;
  /// Largest peak bytes of any rank.
  std::size_t max_peak_bytes() const;
  /// Largest real flops of any rank.
  double max_flops() const;

 private:
  // How a group rank reaches an atom, or which part of the slice a block of it covers.
  enum class span : std::uint8_t { none, whole, first, second };
  // A block of one group's cover in its atoms (x >= y) over `when` of the slice.
  struct atom_unit {
    int x = 0, y = 0;
    span when = span::whole;
  };
  // One part of the scheme where it sits: ranks, k columns, atoms and its cover's tables.
  struct part_geometry {
    rank_k_part part;
    int rank0 = 0;                       // its first rank
    std::int64_t k0 = 0, k1 = 0;         // its op(A) columns
    std::vector<int> runs;               // ranks of each role (each one run of the part's k)
    bool even = true;                    // every role has as many ranks (groups)
    // uneven roles only: (run, role) of each local rank, and the local rank of role q's run j
    // at local_of[role_first[q] + j] (rank_of's order, so place_of and rank_of take O(1))
    std::vector<std::pair<int, int>> place_table;
    std::vector<int> role_first, local_of;
    std::vector<int> run_counts;         // uneven roles only: the distinct ranks per role, ascending
    // the roles reading each atom over a cell of their run's first half [0] or second [1]
    // (role_readers, kept: a_holders asks for every cell); [1] only for an even difference
    // cover, whose d = c/2 blocks split the run (else the halves read alike)
    std::vector<std::vector<int>> readers[2];
    // one odd difference cover alone (index_c_chunks): each role's C blocks end to end, so each
    // of its ranks owns one run of them; c/2 + 2 prefix sums per role (c <= 1024), and each
    // role's C elements, its blocks' rows x rows and its real flops per column of k
    std::vector<std::int64_t> c_prefix, role_c, role_rect;
    std::vector<double> role_flops;
    std::vector<std::int64_t> atoms;     // atom boundaries (rows), atoms + 1 of them
    std::vector<int> first_block;        // the first row block of each atom (atoms + 1)
    std::vector<int> cover;              // difference: D
    std::vector<std::pair<int, int>> pair_of;  // difference: D's pair (a, b) for d = 0 .. c/2
    // difference, per element a of D: whether a role p reads atom p + a over its whole run
    // (a = 0, or a in the pair of some d < c/2), else the a of the d = c/2 pair it is in
    std::vector<char> reach_whole;
    std::vector<int> reach_half;
    std::vector<std::int64_t> a_weight;  // ownership weight of each role's ranks in A cells (c of them)
    std::vector<std::int64_t> c_weight;  // and in C blocks
  };
  // Where rank r sits among the holders of a cell: the weights of those before it, its own,
  // and all of theirs (c_share also counts the block's computers).
  struct share_at {
    std::int64_t before = 0, own = 0, total = 0, computers = 0;
  };
  // The part holding rank r, its role and which run of the role's share of k it takes.
  struct rank_place {
    const part_geometry* part;
    int run = 0, role = 0;
  };
  rank_place place_of(int r) const;
  // The rank of role `role`, run j of part x. Ranks go run by run, role by role within a
  // run: with runs {3, 2, 1}, run 0 is roles 0, 1, 2, run 1 roles 0, 1, run 2 role 0
  // (local ranks 0-2, 3-4, 5).
  int rank_of(const part_geometry& x, int role, int j) const;
  // Op(A) columns of run j of a role with `runs` ranks in part x.
  std::pair<std::int64_t, std::int64_t> run_columns(const part_geometry& x, int runs, int j) const;
  // The run of a role with `runs` ranks in part x holding column k (x.k0 <= k < x.k1).
  int run_holding(const part_geometry& x, int runs, std::int64_t k) const;
  // Start of phase q's chunk of rank r's run.
  std::int64_t chunk_start(const rank_place& at, int q) const;
  // The k cuts within rank r's run, ascending: its ends, its half (even difference covers),
  // its chunk boundaries, and where any other role's run starts (parts of uneven roles).
  std::vector<std::int64_t> k_cuts(const rank_place& at) const;
  // The atom of part x holding row block b.
  int atom_of(const part_geometry& x, int b) const;
  // The blocks a role computes, in atoms.
  std::vector<atom_unit> role_units(const part_geometry& x, int role) const;
  // The atoms a role reads and over which part of its run, by atom.
  std::vector<std::pair<int, span>> read_atoms(const part_geometry& x, int role) const;
  // The roles reading atom a over a cell of their run's first half (or its second), ascending.
  std::vector<int> role_readers(const part_geometry& x, int a, bool first_half) const;
  // One or two roles, ascending (a block has two computers only at d = c/2 of an even cover).
  struct roles {
    int count = 0, at[2] = {0, 0};
    roles(int a) : count(1), at{a, 0} {}
    roles(int a, int b) : count(2), at{a, b} {}
    const int* begin() const { return at; }
    const int* end() const { return at + count; }
  };
  // The roles computing atom block (ax, ay), ascending.
  roles role_computers(const part_geometry& x, int ax, int ay) const;
  // Rank r's share among the computers of C block (i, j) it computes, and their count
  // (closed form: O(parts)).
  share_at c_share(int r, int i, int j) const;
  // Rank r's piece of C block (i, j) it computes (piece.cell 0), and the block's computers;
  // `before`: the block's c_offset when known (one odd cover alone), else -1.
  std::pair<piece, std::int64_t> c_piece(int r, int i, int j, std::int64_t before = -1) const;
  // Where role's block of difference d starts in its blocks laid end to end (one odd cover
  // alone): the prefix table, or the sum of the blocks before it (c > 1024).
  std::int64_t c_offset(const part_geometry& x, int role, int d) const;
  // Lays each role's C blocks end to end when one odd difference cover is the whole scheme.
  void index_c_chunks();
  // The difference d (0 .. c/2) of atom block (ax, ay) of a difference cover.
  int difference_of(const part_geometry& x, int ax, int ay) const;
  // Role p's block of difference d (0: its diagonal) of a difference cover, as (i, j), i >= j.
  std::pair<int, int> difference_block(const part_geometry& x, int p, int d) const;
  // A over a run of one odd cover alone: elements received, sent and owned, and the largest
  // blocks and staging of a phase.
  struct a_totals {
    std::int64_t in = 0, out = 0, owned = 0, blocks = 0, stage = 0;
  };
  // plane_a's figures by (role, run length), kept while all_costs runs.
  using a_memo = std::map<std::pair<int, std::int64_t>, a_totals>;
  // A of a rank of `role` over a run of `len` columns of one odd cover alone, equal roles.
  a_totals plane_a(const part_geometry& x, int role, std::int64_t len) const;
  // A of rank `at` of one odd cover alone with uneven roles, its cells swept in order.
  a_totals swept_a(const rank_place& at) const;
  // Rank r's A costs over every phase into rc, with the largest blocks and staging of a phase.
  void a_cost(int r, rank_cost& rc, std::int64_t& most_blocks, std::int64_t& most_stage, a_memo* memo) const;
  // cost(r), with plane_a's figures kept in memo when given.
  rank_cost cost_with(int r, a_memo* memo) const;
  // Rank r's share among the holders h of an A cell of part x.
  share_at a_share(const part_geometry& x, const std::vector<int>& h, int r) const;
  // Sets the roles' A and C weights so that the busiest rank receives about the mean.
  void balance_ownership();
  // Every rank's cost, computed once.
  const std::vector<rank_cost>& all_costs() const;

  problem p_;
  rank_k_scheme s_;
  std::vector<part_geometry> parts_;
  std::vector<std::int64_t> bounds_;  // row block boundaries, blocks() + 1 of them
  std::shared_ptr<std::mutex> lock_ = std::make_shared<std::mutex>();  // guards costs_
  mutable std::shared_ptr<const std::vector<rank_cost>> costs_;
};

}  // namespace prism
