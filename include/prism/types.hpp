// prism/types.hpp — scalar types, transposition, layout and the problem descriptor.
#pragma once

#include <complex>
#include <concepts>
#include <cstdint>
#include <string>

namespace prism {

/// The four BLAS scalar types prism multiplies.
template <class T>
concept scalar = std::same_as<T, float> || std::same_as<T, double> ||
                 std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>;

/// BLAS type letter: s, d, c, z.
enum class scalar_type : char { s = 's', d = 'd', c = 'c', z = 'z' };

/// The BLAS type letter of T, e.g. scalar_type_of<double>() == scalar_type::d.
template <scalar T>
constexpr scalar_type scalar_type_of() {
  if constexpr (std::same_as<T, float>) return scalar_type::s;
  else if constexpr (std::same_as<T, double>) return scalar_type::d;
  else if constexpr (std::same_as<T, std::complex<float>>) return scalar_type::c;
  else return scalar_type::z;
}

/// Bytes of one element of the given type.
constexpr std::size_t element_size(scalar_type t) {
  switch (t) {
    case scalar_type::s: return 4;
    case scalar_type::d: return 8;
    case scalar_type::c: return 8;
    case scalar_type::z: return 16;
  }
  return 0;
}

/// True for c and z.
constexpr bool is_complex(scalar_type t) { return t == scalar_type::c || t == scalar_type::z; }

/// Storage order of all three matrices of a call.
enum class layout { col_major, row_major };

/// The three edges of the m x n x k prism of multiply-adds.
enum class dim : std::uint8_t { m, n, k };

/// What a plan computes: a general product (gemm) or a rank-k update of one triangle of C
/// (syrk: C = alpha op(A) op(A)^T + beta C; herk: op(A) op(A)^H, complex types only).
enum class operation : std::uint8_t { gemm, syrk, herk };

/// "gemm", "syrk" or "herk".
const char* to_string(operation o);

/// One multiplication to plan: C(m x n) = alpha op(A)(m x k) op(B)(k x n) + beta C, column-major.
/// A rank-k update (op syrk or herk) is the n x n x k product with op(B) = op(A)^T (^H),
/// m == n, of which only the `uplo` triangle of C is computed: transa is syrk's / herk's
/// trans letter ('N': op(A) = A, n x k; 'T' or 'C': op(A) = A^T or A^H) and transb the
/// letter that makes A op(B) (e.g. syrk 'N' pairs with 'T', herk 'N' with 'C', 'T' and 'C'
/// with 'N'), so the off-diagonal blocks of its plan are plain gemm sub-problems.
struct problem {
  scalar_type type = scalar_type::d;  ///< element type
  char transa = 'N';                  ///< 'N', 'T' or 'C' (upper case after normalisation)
  char transb = 'N';                  ///< 'N', 'T' or 'C'
  std::int64_t m = 0;                 ///< rows of C
  std::int64_t n = 0;                 ///< columns of C
  std::int64_t k = 0;                 ///< inner dimension
  operation op = operation::gemm;     ///< gemm, or a rank-k update of one triangle
  char uplo = 'U';                    ///< syrk / herk: the triangle of C computed, 'U' or 'L'
  /// Real flops: 2mnk for gemm (8mnk complex); n(n+1)k for a rank-k update (4n(n+1)k complex).
  double flops() const {
    if (op != operation::gemm) return (is_complex(type) ? 4.0 : 1.0) * double(n) * double(n + 1) * double(k);
    return (is_complex(type) ? 8.0 : 2.0) * double(m) * double(n) * double(k);
  }
  friend bool operator==(const problem&, const problem&) = default;
};

/// Real flops of an m x n x k product of the given type (the single FLOP-count helper).
inline double gemm_flops(scalar_type t, std::int64_t m, std::int64_t n, std::int64_t k) {
  return problem{t, 'N', 'N', m, n, k}.flops();
}

/// The three operands of C = alpha op(A) op(B) + beta C.
enum class operand : std::uint8_t { a, b, c };

/// "A", "B" or "C".
const char* to_string(operand o);

/// What computes the leaves: a single-threaded BLAS (openblas, blis), prism's own
/// streaming kernel for leaves with m, n <= 128 (streaming; other leaves fall back to the
/// BLAS leaf), or a choice per leaf shape (automatic). `gpu` marks a leaf of a plan's GPU
/// level (one call on a device, under a gpu step); it is never a context's choice.
enum class leaf_backend { openblas, blis, automatic, streaming, gpu };

/// Parses "openblas", "blis", "streaming" or "auto"; throws prism::error on anything else.
leaf_backend parse_leaf_backend(const std::string& text);

/// The name of a leaf backend as PRISM_LEAF spells it.
const char* to_string(leaf_backend b);

}  // namespace prism
