// lib/leaf/backend/blas_leaf_rule.hpp — which BLAS library (OpenBLAS or BLIS) `auto` takes
// for a leaf the streaming kernel does not take, and the first-use measurement that
// decides it where the libraries' kernel sets leave it open.
//
// The rule by kernel width (BLIS where its kernels are at least as wide as OpenBLAS's, for
// double leaves from 128 x 128 and float wide ones) is certain when the widths differ (an
// AVX-512 set against an AVX2 one: 1.5-2x); with equal widths the winner depends on the CPU
// and on the leaf's class: on an AVX2 Zen 3, BLIS zen3 ran double squares at 0.87-0.96x
// OpenBLAS Haswell and wide k = 64 leaves at 1.20-1.29x (bench/results/
// leaf-kernels-epyc-zen3-2026-12-02T0203Z.txt); on an AVX-512 EPYC running the AVX2 sets
// both were even. So there the two classes are timed once per machine, by the first long
// call whose leaves they could be (lib/leaf/first_use.hpp), and kept with the kernel sets
// they were timed on (lib/machine/wisdom.hpp).
#pragma once

#include <prism/machine.hpp>
#include <prism/types.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace prism::detail {

/// The classes of BLAS leaf the rule tells apart: `square` double leaves from 128 x 128
/// that are not wide, `wide` leaves of m, n >= 1024 and k <= 64 (double or float), and
/// `other` (every other leaf: OpenBLAS).
enum class blas_leaf_class { other, square, wide };

/// The class of an m x n x k leaf of type t. Example: d 1024 x 1024 x 1024 is square,
/// d 2048 x 4096 x 64 wide, s 256 x 256 x 256 other.
blas_leaf_class classify_blas_leaf(scalar_type t, std::int64_t m, std::int64_t n, std::int64_t k);

/// The BLAS leaf (OpenBLAS or BLIS) `auto` picks for a leaf of this shape when the
/// streaming kernel does not take it (choose_leaf's rule without its first step): a double
/// leaf's class as measured on this machine where that is known, else by kernel width. An
/// example machine's description (`example:`, docs/machines) takes the width rule: plans
/// for it read alike on every host.
leaf_backend choose_blas_leaf(const machine_description& mc, scalar_type t, std::int64_t m, std::int64_t n, std::int64_t k);

/// The library measured faster for class c on this machine (this process's measurement or
/// one kept on the present kernel sets), if any.
std::optional<leaf_backend> measured_blas_leaf(blas_leaf_class c);

/// True when the two leaf libraries' kernels are equally wide (the width leaves the choice
/// open, so a first use measures it); loads both. False when one cannot load.
bool blas_leaf_widths_equal();

/// What one timing of the two classes found: for each class measured, the faster library
/// ("openblas" or "blis"), the text that says why, and the seconds it took.
struct blas_leaf_verdict {
  std::map<blas_leaf_class, leaf_backend> faster;  ///< classes decided (absent: the budget ran out)
  std::string text;  ///< e.g. "square d 768x768x768: openblas 38.1, blis 35.0 GF/s (0.92x) -> openblas; wide d ..."
  double seconds = 0;
};

/// Times OpenBLAS against BLIS on one thread now, a double square (768^3), then a wide leaf
/// (1024 x 1024 x 64), each after a warm-up in up to three alternating rounds (best of
/// each; a class needs two rounds within `budget` seconds, else it is undecided). A class
/// goes to the library ahead by more than 3 %; within 3 % to the width rule's choice. Does
/// not keep anything; throws backend_error when a library cannot load.
blas_leaf_verdict measure_blas_leaves(double budget);

/// Makes v's classes the rule's for this process and keeps them with the kernel sets they
/// were timed on (a class v left undecided as "undecided": the width rule, until `prism
/// tune` times it again); false when the file could not be written.
bool keep_blas_leaves(const blas_leaf_verdict& v);

/// True when a measurement on the leaf libraries' present kernel sets was kept, by this
/// process or an earlier one of this CPU (or a library cannot load: nothing to measure).
bool blas_leaves_kept();

/// The marker a kept measurement leaves in the first-use file ("blas_leaves").
inline constexpr const char* blas_leaves_marker = "blas_leaves";

/// One line on what decides each class here, e.g. "square d: openblas (measured); wide d:
/// blis (measured); measured in 0.21 s: square d 768x768x768: ..." or "square d: blis (by
/// kernel width); wide d: blis (by kernel width)".
std::string blas_leaf_rule_text();

}  // namespace prism::detail
