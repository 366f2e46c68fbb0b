// lib/ranks/covers.hpp — the designs a triangle-block scheme is built of (docs/distributed.md,
// "Rank-k updates"; the proofs in docs/data-movement.md): difference covers of Z_c (found
// by search, or Singer's perfect sets), the star's and the nest's row atoms, row blocks
// balanced for equal work, and the ranks a role gets. No MPI, no schedule: the triangle
// schedule (triangle_schedule.hpp) and the rank-k planner use them.
#pragma once

#include <prism/plan.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace prism::ranks {

/// The distinct primes dividing x, ascending. E.g. 63: {3, 7}.
std::vector<std::int64_t> prime_divisors(std::int64_t x);

/// v mod c in [0, c), v of either sign. E.g. mod(-2, 7) = 5.
constexpr int mod(int v, int c) { return (v % c + c) % c; }

/// The smallest difference cover of Z_c that prism finds, ascending, 0 first: every
/// d = 1 .. c - 1 is a - b mod c for some a, b in it. Exact (smallest size) up to c = 36;
/// beyond, Singer's perfect difference set (size q + 1) when c = q^2 + q + 1 with q a prime
/// power, else {0 .. s-1} with multiples of s (size about sqrt(2c)). E.g. c = 7: {0, 1, 3}.
std::vector<int> difference_cover(int c);

/// For each d = 0 .. c/2 the first pair (a, b) of cover D, by a, with b - a = d mod c
/// (d = 0: (0, 0)). E.g. c = 7, D = {0, 1, 3}: d = 1 (0, 1), 2 (1, 3), 3 (0, 3).
std::vector<std::pair<int, int>> cover_pairs(const std::vector<int>& D, int c);

/// Row block boundaries (c + 1) of a difference cover on n rows: floor or ceil of n / c
/// rows, the long ones placed so that the busiest role's work is as low as whole rows allow.
std::vector<std::int64_t> balanced_atoms(std::int64_t n, const std::vector<int>& D,
                                         const std::vector<std::pair<int, int>>& pair_of, int c);

/// Row blocks of an odd cover whose roles have runs[q] ranks over len columns: Newton's
/// blocks for equal work per rank, or `equal`, whichever leaves the busiest rank less work.
std::vector<std::int64_t> uneven_atoms(std::int64_t n, std::int64_t len, const std::vector<std::pair<int, int>>& pair_of,
                                       const std::vector<int>& runs, std::vector<std::int64_t> equal);

/// The star's six atoms on n rows for m0 centre ranks and m on each leaf role.
std::vector<std::int64_t> star_atoms(std::int64_t n, int m0, int m);

/// The star's blocks by role, in atoms (x >= y); {-1, -1} ends role 0's.
constexpr int star_units[4][6][2] = {
    {{1, 0}, {2, 0}, {2, 1}, {-1, -1}, {-1, -1}, {-1, -1}},
    {{0, 0}, {3, 0}, {4, 0}, {5, 0}, {3, 3}, {4, 3}},
    {{1, 1}, {3, 1}, {4, 1}, {5, 1}, {4, 4}, {5, 4}},
    {{2, 2}, {3, 2}, {4, 2}, {5, 2}, {5, 5}, {5, 3}},
};

/// Ranks per role for P ranks on one odd difference cover of c roles (c >= 3) over an
/// n x k rank-k update, in proportion to the roles' work on equal row blocks. E.g. n = 4096
/// on c = 651: 23 to 26 ranks a role over 16,384. Empty when c is even or above n, or P is
/// below c or above c k.
std::vector<int> work_role_ranks(std::int64_t n, std::int64_t k, int c, int P);

/// One part's text, e.g. "k2 x tbd3{0,1}", "star4", "nest2[2,1]".
std::string part_text(const rank_k_part& x);

}  // namespace prism::ranks
