// lib/leaf/backend/leaf_kernels.hpp — which kernel set prism's private leaf libraries run.
//
// OpenBLAS (DYNAMIC_ARCH) and BLIS each carry several kernel sets and pick one per process
// when they load: OpenBLAS by cpuid unless OPENBLAS_CORETYPE names a core type, BLIS by
// cpuid unless BLIS_ARCH_TYPE names a configuration. Both fall back on CPUs newer than the
// library (Debian's OpenBLAS 0.3.21 runs its SSE3 Prescott kernels on an Emerald Rapids
// Xeon, Debian's BLIS 0.9.0 its `generic` C kernels on this project's AMD EPYC), and both
// follow whatever the host's environment forces. prism's leaf libraries are private
// copies, so prism chooses their kernel set itself.
//
// Every set of a library that the CPU can run is a candidate (kernel_set_table: what each
// needs and its class). Classes are certain where the arithmetic says so: a set with FMA
// beats one without (twice the flops per instruction), AVX beats SSE. Whether 512-bit sets
// beat 256-bit ones is not (a core that splits 512-bit operations in two, as AMD's Zen 4
// does, runs them about even), nor which of two sets of one class is faster. Where the
// order is not certain a short probe decides: OpenBLAS's sets are timed in prism's one
// copy (blas_library.cpp), and its verdict on 512 against 256 bits orders BLIS's
// configurations too (BLIS fixes its configuration once per copy, so it cannot be timed
// in-process). The verdict is kept per CPU (lib/machine/wisdom.hpp), so the probe runs once per machine.
//
// prism applies the choice only to its own copies (blas_library.cpp says how), never to a
// copy the host loaded. PRISM_LEAF_KERNELS overrides, for experiments. docs/planning.md
// "Leaf kernels".
#pragma once

#include "../../environment/environment.hpp"  // scoped_env, which sets the kernel choice while a copy loads

#include <string>
#include <utility>
#include <vector>

namespace prism::detail {

/// The CPU features that decide which kernel sets can run (x86-64; all false elsewhere).
struct cpu_features {
  bool intel = false, amd = false;
  bool sse3 = false, ssse3 = false, sse4_2 = false;
  bool avx = false, avx2 = false, fma = false;
  bool fma4 = false, xop = false;  ///< AMD's Bulldozer family
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false, avx512cd = false;
  bool avx512bf16 = false, avx512fp16 = false;
  bool avx512er = false, avx512pf = false;  ///< Xeon Phi (BLIS's knl)
  bool amx_tile = false, amx_bf16 = false;  ///< with the OS's support for the tile state

  /// AVX-512 F, BW, DQ, VL and CD: what OpenBLAS's SkylakeX and BLIS's skx kernels use.
  bool avx512_skylake() const noexcept { return avx512f && avx512bw && avx512dq && avx512vl && avx512cd; }
  /// The vendor and the features that count here, e.g. "AMD avx avx2 fma avx512f avx512bw
  /// avx512dq avx512vl avx512cd avx512_bf16".
  std::string describe() const;
};

/// This machine's features, read once: the compiler's cpuid query (__builtin_cpu_supports),
/// which also checks that the OS saves the AVX and AVX-512 registers (XGETBV), and cpuid
/// itself for AVX512_FP16 and AMX (with XGETBV for the tile state).
const cpu_features& this_cpu();

/// What PRISM_LEAF_KERNELS asks of one leaf library.
struct kernel_request {
  /// automatic: prism chooses by CPU features; detect: the library's own cpuid detection with
  /// the host's forcing variables removed; host: the process environment as it is (prism's
  /// old behaviour); named: the kernel set in `name`.
  enum class how { automatic, detect, host, named };
  how mode = how::automatic;
  std::string name;  ///< the kernel set when mode is named ("SkylakeX", "zen3")
};

/// The requests for both leaf libraries.
struct leaf_kernel_requests {
  kernel_request openblas;  ///< `openblas=...`
  kernel_request blis;      ///< `blis=...`
};

/// "auto", "detect", "host" or the name of a named request.
std::string to_string(const kernel_request& r);

/// Parses PRISM_LEAF_KERNELS: comma-separated `openblas=X` and `blis=X`, X one of auto,
/// detect, host or a kernel-set name ("openblas=SkylakeX,blis=zen3"; a library not named
/// stays auto). Names are checked against the sets prism knows, not against this CPU.
/// Throws prism::error saying what is wrong (the caller names the variable).
leaf_kernel_requests parse_leaf_kernels(const std::string& text);

/// PRISM_LEAF_KERNELS of this process, read once; unset or empty is auto for both. A
/// malformed value is said once on stderr and read as auto (context::from_env rejects it
/// first where a PRISM_* error can be reported).
const leaf_kernel_requests& leaf_kernels_from_env();

/// A kernel set's class: 4 AVX-512 with FMA, 3 AVX2 with FMA, 2 AVX without FMA3 (and
/// AMD's FMA4 family, whose FMA units are 128 bits wide), 1 SSE, 0 generic C or unknown.
/// By name as the library reports it, any case: "SkylakeX" 4, "zen3" 3, "Prescott" 1.
int kernel_class(const std::string& name);

/// OpenBLAS core types (OPENBLAS_CORETYPE spelling) this CPU runs, in the features' order:
/// by class, then within a class the newer set first and the vendor's own first (e.g. on
/// this project's AMD EPYC: Cooperlake SkylakeX Zen Haswell Sandybridge Nehalem Core2
/// Prescott). The probe reorders the sets of classes 4 and 3. Empty when the CPU has not
/// even SSE3 (the library's own choice is then kept).
std::vector<std::string> openblas_core_candidates(const cpu_features& cpu);

/// The OpenBLAS core types prism knows, in OPENBLAS_CORETYPE spelling.
const std::vector<std::string>& openblas_core_names();

/// BLIS configurations (bli_arch_string spelling) this CPU runs, best first, among
/// `registered`: by class, except that with `wide_first` false (the probe found 256-bit
/// sets as fast as 512-bit ones here) class 3 comes before class 4; within a class the
/// vendor's own first. E.g. AMD with AVX-512 and registered {skx, haswell, zen3, zen2,
/// generic}: skx zen3 zen2 haswell.
std::vector<std::string> blis_arch_candidates(const cpu_features& cpu, const std::vector<std::string>& registered,
                                              bool wide_first = true);

/// The BLIS configurations prism knows for x86-64 (those whose CPU needs it can check).
const std::vector<std::string>& blis_arch_names();

/// Canonical spelling of a kernel-set name of `library` ("openblas" or "blis"), matched
/// case-insensitively ("skylakex" -> "SkylakeX"); "" if prism does not know it.
std::string canonical_kernel_name(const std::string& library, const std::string& name);

/// True when the CPU has what the kernel set `name` (canonical spelling) needs.
bool cpu_runs(const cpu_features& cpu, const std::string& library, const std::string& name);

/// Width in bits of the FMA vectors a kernel set computes with, by its name as the library
/// reports it: 512 for class 4 (OpenBLAS's SapphireRapids, Cooperlake, SkylakeX; BLIS's
/// skx, knl), 256 for class 3 (Haswell, Zen, haswell, zen*), 0 for anything else (no FMA3,
/// generic, unknown). Example: "SkylakeX" -> 512, "zen3" -> 256, "generic" -> 0.
int kernel_vector_bits(const std::string& name);

/// The probe's verdict on this CPU: false when OpenBLAS's best 256-bit set measured at
/// least as fast as its best 512-bit one (then 256-bit sets come first, BLIS's as well);
/// true when the 512-bit sets won, or nothing was measured (the features' order). Set by
/// the OpenBLAS leaf's probe or read from the first-use measurements kept for this CPU.
bool wide_vectors_first();

/// True when the verdict of wide_vectors_first() was measured (now or by an earlier process).
bool wide_vectors_measured();

/// Records the probe's verdict (wide_vectors_first) for this process, and with `keep` for
/// this machine (lib/machine/wisdom.hpp).
void set_wide_vectors_first(bool wide, bool keep);

/// What prism chose for one leaf library, and why (`prism leaves`, PRISM_STATS).
struct kernel_choice {
  std::string request;      ///< PRISM_LEAF_KERNELS item: auto, detect, host or a name
  std::string chosen;       ///< the kernel set prism asked for; "" when the library chose
  std::string why;          ///< one line: the features or the override behind `chosen`
  std::string candidates;   ///< the sets this CPU runs, best first, space-separated
  std::string environment;  ///< the host's forcing variables prism's copy did not follow
  std::string running;      ///< the set the library reports after loading
  std::string detected;     ///< the library's own choice in a clean environment, if known
  std::string carried;      ///< the candidates this file of the library carries (OpenBLAS), space-separated
  std::string measured;     ///< probe rates when sets were compared, e.g. "d 256^3: SkylakeX 85.1 GF/s, ..."
  std::string interface;    ///< how leaves call it: "cblas" or BLIS's "bli_?gemm_ex ..."
  std::string note;         ///< anything unexpected (a set refused, the host's copy kept)
};

}  // namespace prism::detail
