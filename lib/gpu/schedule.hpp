// lib/gpu/schedule.hpp — what one device does with its part of a plan, as a value: which
// blocks of C it keeps in its memory one after another, which chunks of A and B it copies
// in for each product and into which slot of its memory, and what crosses the link each way.
//
// The plan's gpu subtree of a device lists leaves (C block x k range) in depth-first
// order. make_schedule turns them into visits of C blocks: a visit is a maximal run of
// consecutive leaves on the same block of C; the block lives in a C buffer for the visit
// (loaded first only when C is read: beta != 0, or a later visit of the same block), its
// products accumulate into it on the device, and it is written back when the visit ends.
// Two rules decide what crosses the link, and both are the schedule's, so the runner and
// the model cannot disagree:
//
//  1. Snake order. A visit runs its k chunks in the reverse order of the visit before it,
//     so that the chunks the previous visit used last, still on the device, come first.
//  2. Slots by next use. Chunks of A and B live in equal slots of device memory (all that
//     the C buffers leave, up to one slot per distinct chunk). A chunk already in a slot
//     is not copied again. A new one takes a free slot, else evicts the chunk whose next
//     use is farthest away (never used again first: Belady's rule, optimal for equal-size
//     slots when the whole sequence is known, as it is here); chunks used by the last
//     `lookahead` products are not evicted, so the copy of a chunk overlaps the products
//     before it instead of waiting for them.
//
// Worked example: C 4 x 4 in two blocks of rows (2 x 4), k = 4 in two chunks of 2, and 8
// slots. Visit 0 (rows 0-1) copies A(0:2, 0:2), B(0:2, :), A(0:2, 2:4), B(2:4, :); visit 1
// (rows 2-3) runs its chunks in reverse: A(2:4, 2:4) and then A(2:4, 0:2) are copied,
// B(2:4, :) and B(0:2, :) are already there. B crosses the link once, not twice.
//
// Two C buffers are used when they fit beside 6 slots: then a visit's write-back overlaps
// the next visit's products. The link bytes: every chunk copy (in), C loads (in) and every
// visit's write-back (out).
#pragma once

#include <prism/types.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace prism::detail::gpu {

/// One leaf of a device's subtree: the product's box C(i:i+m, j:j+n) += op(A)(i:i+m,
/// l:l+k) op(B)(l:l+k, j:j+n); `triangle` 'U' or 'L' when the box is a diagonal triangle
/// of a syrk / herk plan (computed whole on the device, only that triangle written back).
struct device_leaf {
  std::int64_t i = 0, j = 0, l = 0;  ///< origin in the whole product
  std::int64_t m = 0, n = 0, k = 0;  ///< extents
  char triangle = 0;                 ///< 'U', 'L' or 0
};

/// The whole product a device works on a part of.
struct product_shape {
  scalar_type type = scalar_type::d;  ///< element type
  char transa = 'N', transb = 'N';    ///< op(A), op(B) ('N', 'T', 'C')
  bool rank_k = false;                ///< syrk / herk: op(B) is op(A)^T (^H), B's chunks come from A
};

/// Which host matrix a region is in.
enum class matrix_id : std::uint8_t { a, b, c };

/// A rectangle of a stored (column-major) host matrix.
struct region {
  matrix_id matrix = matrix_id::a;          ///< A, B or C
  std::int64_t row = 0, col = 0;            ///< origin in the stored matrix
  std::int64_t rows = 0, cols = 0;          ///< extents
  /// Elements in it.
  std::int64_t size() const noexcept { return rows * cols; }
  friend bool operator==(const region&, const region&) = default;
};

/// One chunk copied into a slot (in the slot it is packed: leading dimension rows).
struct chunk_copy {
  region from;   ///< the stored region of A or B
  int slot = 0;  ///< where it goes
};

/// One gemm on the device: C buffer block (ci:ci+m, cj:cj+n) (+)= op(slot a) op(slot b).
struct product {
  std::vector<chunk_copy> copies;  ///< chunks copied in before it (0, 1 or 2)
  int a_slot = 0, b_slot = 0;      ///< slots of op(A)'s and op(B)'s chunks (equal for a diagonal block of syrk)
  std::int64_t a_ld = 1, b_ld = 1; ///< their leading dimensions (the stored chunks' rows)
  std::int64_t ci = 0, cj = 0;     ///< the product's corner within the visit's C block
  std::int64_t m = 0, n = 0, k = 0;  ///< its extents
  bool first = false;              ///< the first product of the block's first visit: applies the caller's beta
  device_leaf leaf;                ///< the plan's leaf it computes (for a fallback on the host)
};

/// A block of C kept in a C buffer while its products run.
struct visit {
  region c;                     ///< the block of C (matrix c), rows x cols
  char triangle = 0;            ///< 'U' / 'L': a diagonal block of syrk / herk, only that triangle written back
  int buffer = 0;               ///< which C buffer
  bool load = false;            ///< the block is copied in first (beta != 0, or a later visit of it)
  int previous = -1;            ///< the last visit before this one of the same block, or -1 (its write-back must land first)
  std::vector<product> products;  ///< in order (the snake order of rule 1)
};

/// One device's work.
struct device_schedule {
  std::size_t element = 8;         ///< bytes of an element
  product_shape shape;             ///< the whole product's type and trans
  int buffers = 1;                 ///< C buffers (1 or 2)
  std::int64_t c_ld = 1;           ///< leading dimension of a C buffer (the largest block's rows)
  std::int64_t c_cols = 1;         ///< columns of a C buffer (the largest block's columns)
  std::int64_t pitch_rows = 1;     ///< the largest device-side leading dimension: c_ld or a chunk's rows (pitch_rows())
  int slots = 0;                   ///< chunk slots
  std::size_t slot_bytes = 0;      ///< bytes of one slot (the largest chunk)
  int lookahead = 1;               ///< products whose chunks a copy may not evict (1 or 2)
  std::vector<visit> visits;       ///< in order
  std::uint64_t bytes_in = 0;      ///< host -> device bytes: chunk copies and C loads
  std::uint64_t bytes_out = 0;     ///< device -> host bytes: C write-backs
  double flops = 0;                ///< real flops the device computes (diagonal triangles as whole blocks)
  /// Bytes of device memory it allocates: C buffers and slots.
  std::size_t device_bytes() const noexcept;
};

/// The schedule of one device's leaves (see the file comment) within `memory` bytes of
/// device memory; `reads_c`: the call's beta is not 0. Throws prism::plan_error when the
/// largest C block with 4 slots of its largest chunks does not fit, naming both sizes, or
/// when two leaves' blocks of C overlap without being the same block (a k cut above m or n
/// cuts of different shapes: the first visit of either would apply beta over the other's sums).
device_schedule make_schedule(const std::vector<device_leaf>& leaves, const product_shape& shape, std::size_t memory,
                              bool reads_c);

/// The largest device-side leading dimension (in elements) of these leaves' schedule, its
/// pitch_rows: a C block's rows or a chunk's stored rows, at least 1. E.g. one leaf of
/// 300 x 280 x 400 with op(A) = A^T, op(B) = B: a block of 300 rows, A's chunk 400 x 300
/// and B's 400 x 280 as stored: 400.
std::int64_t pitch_rows(const std::vector<device_leaf>& leaves, const product_shape& shape);

/// The device's rates a schedule's time is modelled with.
struct device_rates {
  double flops = 60e12;             ///< gemm flop/s of the element type
  double memory_bandwidth = 4e12;   ///< device memory bytes/s (a thin gemm reads its operands at this rate)
  double link_in = 50e9;            ///< host -> device bytes/s
  double link_out = 50e9;           ///< device -> host bytes/s
  double call_seconds = 5e-6;       ///< fixed cost of one gemm or copy call
};

/// Modelled seconds of a schedule: the copy-in stream, the compute stream and the
/// write-back stream, each in order, a product waiting for its chunks, a copy for the last
/// use of the slot it overwrites, a visit's first product for its C buffer to be written
/// back (and loaded); a gemm of depth k takes max(flops / (rate k / (k + 64)), bytes it
/// touches / memory bandwidth), plus a call's fixed cost.
double modelled_seconds(const device_schedule& s, const device_rates& rates);

/// Region rows x cols of `element`-byte elements cut into pieces of at most `bytes` each,
/// for a staging buffer of that size: whole columns while one column fits, else pieces of
/// one column. Each piece: {row, col, rows, cols} relative to the region. E.g. 10 x 4
/// doubles in 200-byte pieces: columns 0-1, then 2-3 (each piece 160 bytes).
std::vector<region> pieces(std::int64_t rows, std::int64_t cols, std::size_t element, std::size_t bytes);

}  // namespace prism::detail::gpu
