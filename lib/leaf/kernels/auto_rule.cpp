// lib/leaf/kernels/auto_rule.cpp — when `auto` picks the streaming leaf over the BLAS
// leaf, for gemm leaves and rank-k triangles, and the measurements behind each threshold.
#include "streaming.hpp"

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace prism::detail {

// The rule comes from bench/results/leaf-streaming-2026-11-23.txt (scripts/leaf-streaming.sh:
// `prism leaves --streaming`, one thread, this project's 2-core AMD EPYC, 48 KiB L1d and
// 1 MiB L2 per core), the streaming leaf against prism's OpenBLAS leaf run twice, with
// this machine's OPENBLAS_CORETYPE=Haswell and with OpenBLAS's own AVX-512 (Cooperlake)
// kernels; a shape counts as won when it won against both, for all of NN, TN and NT:
//  - complex leaves won from k = 128 on (by 1.09x or more, e.g. 8x8x2^20 complex double
//    NN 74-75 GF/s against 19-20), lost at k = 64 (16x16 complex float TN: 0.77x) and 16;
//  - real leaves whose A and B fit in twice the L2 lost to the AVX-512 kernels, down to
//    0.44x (4x4x4096 float NN), 0.64x (8x8x4096 double TN) and 0.76x (4x4x16384 double
//    TN, 1 MiB); from 2 MiB of A and B on, every real row won, by 1.36x or more (e.g.
//    8x8x2^20 double NN 38-41 GF/s against 12-15, TN 24 against 12-15; 4x4x2^20 double
//    24-25 against 5.5-11.6).
// Where the leaf's operands come from memory the streaming leaf reads them once at close
// to the bandwidth; where they sit in L2, OpenBLAS's AVX-512 micro-kernels are faster for
// real types.
//
// Real leaves above 16 x 16 run the panel kernel: bench/results/leaf-streaming-panel-2026-11-29T0048Z.txt
// (the same script, one pass, best of 2, double and float, m, n from 24 to 128, k from 512
// to 2^20): it won or tied every row but 24 x 24 float (0.76-0.80), in cache (64 x 64 x 512
// double 1.25-1.56x, 128 x 128 x 4096 1.06-1.25x) and from memory (64 x 64 x 2^18 double
// 1.29-1.97x); for them the thresholds are the machine's stream_far_bytes (m n above 1024)
// and stream_dot_bytes ('TN', transposed chunk by chunk), which the model puts at 8 L2s and
// the first long call measures (lib/leaf/first_use.hpp), and stream_bytes (m n <= 1024).
//
// Complex tiled leaves (m or n above 16): bench/results/leaf-streaming-2026-11-23T0740Z.txt (the
// same script after the tiled path came, one pass, best of 3; rows of 24 .. 128 with k
// from 512 to 2^20, all four types, against the faster of prism's OpenBLAS (Cooperlake)
// and BLIS (skx) leaves: str/best):
//  - the outer kernel ('NN', 'NT'), A and B from memory (2 MiB or more), m n <= 1024
//    (24 x 24, 32 x 32, 64 x 16): won in every type (double 1.12-2.22x, e.g. 32x32x2^20
//    NN 50.4 GF/s against 33.4); 48 x 48 and 64 x 64: double won from 32 MiB of A and B
//    (NN 1.14-1.27x, NT 1.01-1.26x; about even at 16384 and 4096), complex double won
//    (1.1-1.25x), float lost (its BLAS kernels run twice the flops per byte they pack);
//  - the dot kernel ('TN': op(A) and op(B) both along k) won only with m n <= 1024 and A
//    and B far beyond cache (2^19-2^20: 1.03-1.39x in every type; 32x32x2^20 double 38.6
//    against 34.0), and lost from 48 x 48 on and on in-cache chunks (32x32x4096 double
//    0.81x, 32x32x16384 0.86x);
//  - 96 and 128: lost (0.46-0.91x).
// A BLAS packs op(A) and op(B) before its micro-kernels run; for m, n <= 64 packing moves
// as many bytes as the product needs flops to hide, and the streaming leaf does not pack.
//
// The byte thresholds are the machine's (lib/machine/machine.cpp): "from 2 MiB" there is
// mc's stream_bytes (the model: twice one core's L2), the complex dot kernel's "far beyond
// cache" 4 times its stream_dot_bytes, "from k = 128" its stream_complex_k; `prism tune`
// and the first long call measure them.
// The shape classes (m, n <= 16, m n <= 1024, 64) are the kernels' register tiles and stay.
bool streaming_preferred(const machine_description& mc, scalar_type t, char transa, char transb, std::int64_t m,
                         std::int64_t n, std::int64_t k) {
  if (!streaming_applies(m, n)) return false;
  // Each branch reads only the values it compares (a look-up is a few nanoseconds of a
  // tiny call's overhead).
  const double panels = double(m + n) * double(k) * double(element_size(t));
  auto near = [&] { return mc.value(machine_key::stream_bytes); };
  if (m <= streaming_block_mn && n <= streaming_block_mn) {
    if (is_complex(t)) return double(k) >= mc.value(machine_key::stream_complex_k);
    return panels >= near();
  }
  const bool dot = (transa != 'N' && transa != 'n') && (transb == 'N' || transb == 'n');
  if (!is_complex(t)) {  // the panel kernel, every trans pair
    if (dot) return panels >= mc.value(machine_key::stream_dot_bytes);
    return panels >= near() && (m * n <= 1024 || panels >= mc.value(machine_key::stream_far_bytes));
  }
  // Complex: the dot kernel's lane sums won only far beyond cache, 4 times the panel
  // kernel's 'TN' threshold (32 L2s by the model).
  if (dot) return m * n <= 1024 && panels >= 4 * mc.value(machine_key::stream_dot_bytes);
  if (panels < near()) return false;
  if (m * n <= 1024) return true;
  if (m > 64 || n > 64) return false;
  return t == scalar_type::z;
}

// The rank-k leaf's rule: bench/results/leaf-syrk-2026-11-23T1255Z.txt (`bash
// scripts/leaf-streaming.sh --syrk --types dzsc --reps 2`: `prism leaves --syrk`, one
// thread, best of 2, against the faster of the OpenBLAS (Cooperlake) and BLIS (skx)
// leaves' own ?syrk / ?herk on the same row; str/best), taken with the diagonal tiles:
//  - trans 'N' (NumPy's layout): double and complex double won every row up to n = 96
//    (1.17-3.39x, e.g. 32 x 2^20 double 44.4 against 18.9 GF/s) and n = 128 in cache
//    (4 MiB or less: 1.11-1.36x), and lost n = 128 from memory (128 x 2^17: 0.90, 0.93);
//    float won every row up to 128 (1.09-2.29x); complex float up to 64 (1.12-2.30x, but
//    0.92 at 64 x 128) and lost or tied above (0.78-1.07).
//  - trans 'T' / 'C' (each chunk transposed first): double won n = 8..64 at every k
//    (1.42-2.16x), lost n = 4 (0.90) and 96 (0.94); complex double and complex float won
//    n = 8..32 (1.10-1.56x) and were about even or behind at 64 and above (0.84-1.19;
//    64 x 2^19 complex double 0.93). Float, timed again once its chunks were transposed
//    in 8 x 8 register blocks (bench/results/leaf-syrk-float-2026-11-23T1410Z.txt, the
//    same table; before, they took the plain loops and never won by much, 0.71-1.18x): won
//    n = 16..96 (1.22-1.72x), lost n = 4 and 8 (0.90-0.97), about even at 128 (0.96-1.10).
// Those runs (upper triangles) are the model's values of the machine's
// stream_rank_k_{u,l}{n,t}_{s,d,c,z} keys, the lower triangles' the same: the largest n of
// each type and form (128, 96, 64, 96 in the N form, 96, 64, 32, 32 in the T form, from
// n = 16 for float and 8 for the others). On an AVX2 Zen 3 the same table
// (bench/results/leaf-syrk-epyc-zen3-2026-12-01T1006Z.txt) has the streaming leaf behind
// in 65 of 68 T-form rows and in the N form from n = 64 (double) or 16 to 64 (complex), and
// its OpenBLAS's dsyrk ran the N form 1.28-1.39x faster on lower triangles than on upper
// ones at n = 32..128, k >= 8192 (bench/results/leaf-syrk-epyc-zen3-2026-12-01T1938Z.txt,
// both triangles: 32 x 2^20 18.5 against 13.3 GF/s, where the streaming leaf ran 13.5), so
// the first long rank-k call of a type measures its four limits, both triangles
// (lib/leaf/first_use.hpp), as `prism tune` does. A measured limit (1: none) decides alone:
// its series times n = 128 too, from memory. The model's limits keep the AVX-512 host's
// "4 MiB or less" for n = 128 (double and complex double, N form), read against the model's
// stream_far_bytes (8 L2s: 8 MiB there), not a measured one (a gemm crossover; "never",
// 1e18, would take every n = 128 leaf).
// Complex leaves above n = 8 also need k >= 16 n (complex_rank_k_per_n: 256 at n = 16, 512
// at 32), in either form, for ?herk and complex ?syrk (timed in
// rank-k-small-k-complex-syrk-clean-env-2026-12-02T1146Z.txt), whatever the limit: the
// limits come from long k, and on short k the streaming leaf lost to OpenBLAS's ?herk up to
// a larger k the larger n. It is the model's, not measured: the
// first-use series time long k only, and stream_complex_k (an 8 x 8 gemm's crossover, which
// this host has measured at 32) is another kernel's.
// bench/results/rank-k-small-k-clean-env-2026-12-02T1055Z.txt (scripts/rank-k-small-k.sh,
// the AVX-512 host, best of 3 per leaf, k = 16 .. 16384): n = 8 won or tied at every k
// (0.97-1.89x). n = 16 lost at k = 16 in every form (0.73-0.96), cherk up to k = 64 (UN,
// 0.90) or 128 (LC, 0.99), zherk LC up to 1024 (0.92-0.96 from 256); zherk UN won from
// k = 64 (1.20-1.38). n = 32: zherk UN lost below k = 128 (0.67-0.92), tied at 128 and 256
// (1.00, 0.98) and won from 512; zherk LC, cherk LC and cherk UN lost at every k (0.50-0.98),
// which the limits, not this floor, decide.
constexpr std::int64_t complex_rank_k_per_n = 16;

bool streaming_rank_k_preferred(const machine_description& mc, scalar_type t, char uplo, char trans, std::int64_t n,
                                std::int64_t k) {
  if (n < 1 || n > streaming_max_mn) return false;
  if (is_complex(t) && n > 8 && k < complex_rank_k_per_n * n) return false;  // before any lookup
  const bool n_form = trans == 'N' || trans == 'n';
  const machine_key key = stream_rank_k_key(t, uplo != 'L' && uplo != 'l', n_form);
  const double up_to = mc.value(key);
  if (up_to < 2) return false;  // none
  if (!n_form) return n >= (t == scalar_type::s ? 16 : 8) && double(n) <= up_to;
  if (double(n) <= up_to) return true;
  const bool model = std::string_view(mc.origin(key)) == "model";
  const double bytes = double(n) * double(k) * double(element_size(t));
  return model && (t == scalar_type::d || t == scalar_type::z) && up_to >= 96 &&
         bytes < mc.model_value(machine_key::stream_far_bytes);
}

}  // namespace prism::detail
