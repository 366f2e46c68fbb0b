// tests/test_leaf_kernels.cpp — choosing the leaf libraries' kernel sets without loading
// them: PRISM_LEAF_KERNELS parsing, the candidates for given CPU features, which sets a CPU
// can run, and that scoped_env puts the environment back exactly. Internal: reads lib/leaf/backend.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/context.hpp>
#include <prism/error.hpp>

#include "leaf/backend/blas_library.hpp"
#include "leaf/backend/blis_expert.hpp"
#include "leaf/backend/leaf_kernels.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

using namespace prism::detail;

namespace {

cpu_features amd_avx512_bf16() {  // this project's AMD EPYC (Zen 5), and Zen 4 alike
  cpu_features c;
  c.amd = true;
  c.sse3 = c.ssse3 = c.sse4_2 = true;
  c.avx = c.avx2 = c.fma = true;
  c.avx512f = c.avx512bw = c.avx512dq = c.avx512vl = c.avx512cd = c.avx512bf16 = true;
  return c;
}
cpu_features intel_skylakex() {
  cpu_features c = amd_avx512_bf16();
  c.amd = false;
  c.intel = true;
  c.avx512bf16 = false;
  return c;
}
cpu_features intel_sapphire_rapids() {  // Sapphire / Emerald Rapids: AVX-512 with BF16, FP16 and AMX
  cpu_features c = intel_skylakex();
  c.avx512bf16 = c.avx512fp16 = c.amx_tile = c.amx_bf16 = true;
  return c;
}
cpu_features intel_haswell() {
  cpu_features c;
  c.intel = true;
  c.sse3 = c.ssse3 = c.sse4_2 = true;
  c.avx = c.avx2 = c.fma = true;
  return c;
}
cpu_features sse_only() {  // x86-64 before AVX: SSE3 .. SSE4.2
  cpu_features c;
  c.intel = true;
  c.sse3 = c.ssse3 = c.sse4_2 = true;
  return c;
}
cpu_features amd_zen2() {
  cpu_features c = intel_haswell();
  c.intel = false;
  c.amd = true;
  return c;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

const std::vector<std::string> debian_x86_64 = {"skx",     "knl",       "haswell",     "sandybridge", "penryn",
                                                "zen3",    "zen2",      "zen",         "excavator",   "steamroller",
                                                "piledriver", "bulldozer", "generic"};

}  // namespace

TEST_CASE("PRISM_LEAF_KERNELS: library=set items, any case, either order, the rest auto") {
  auto r = parse_leaf_kernels("openblas=skylakex,blis=ZEN3");
  CHECK(r.openblas.mode == kernel_request::how::named);
  CHECK(r.openblas.name == "SkylakeX");
  CHECK(r.blis.mode == kernel_request::how::named);
  CHECK(r.blis.name == "zen3");

  r = parse_leaf_kernels(" blis = host ");
  CHECK(r.blis.mode == kernel_request::how::host);
  CHECK(r.openblas.mode == kernel_request::how::automatic);

  r = parse_leaf_kernels("openblas=detect,blis=auto");
  CHECK(r.openblas.mode == kernel_request::how::detect);
  CHECK(r.blis.mode == kernel_request::how::automatic);
  CHECK(to_string(r.openblas) == "detect");

  r = parse_leaf_kernels("");
  CHECK(r.openblas.mode == kernel_request::how::automatic);
  CHECK(r.blis.mode == kernel_request::how::automatic);
}

TEST_CASE("PRISM_LEAF_KERNELS: malformed values are refused, naming what is wrong") {
  CHECK_THROWS_WITH_AS(parse_leaf_kernels("openblas"), doctest::Contains("not library=kernels"), prism::error);
  CHECK_THROWS_WITH_AS(parse_leaf_kernels("mkl=avx512"), doctest::Contains("unknown library 'mkl'"), prism::error);
  CHECK_THROWS_WITH_AS(parse_leaf_kernels("openblas=Icelake"), doctest::Contains("unknown openblas kernel set"),
                       prism::error);
  CHECK_THROWS_WITH_AS(parse_leaf_kernels("blis=SkylakeX"), doctest::Contains("unknown blis kernel set"),
                       prism::error);
  CHECK_THROWS_WITH_AS(parse_leaf_kernels("blis=zen3,blis=skx"), doctest::Contains("named twice"), prism::error);
}

TEST_CASE("a malformed PRISM_LEAF_KERNELS is a PRISM_* error of the default context's reader") {
  ::setenv("PRISM_LEAF_KERNELS", "openblas=pentium4", 1);
  CHECK_THROWS_WITH_AS(prism::context::from_env(), doctest::Contains("PRISM_LEAF_KERNELS: unknown openblas"),
                       prism::error);
  ::unsetenv("PRISM_LEAF_KERNELS");
  CHECK_NOTHROW(prism::context::from_env());
}

TEST_CASE("OpenBLAS core types by CPU features: every set the CPU runs, by class, the vendor's own first") {
  CHECK(joined(openblas_core_candidates(intel_sapphire_rapids())) ==
        "SapphireRapids Cooperlake SkylakeX Haswell Zen Sandybridge Nehalem Core2 Prescott");
  CHECK(joined(openblas_core_candidates(amd_avx512_bf16())) ==
        "Cooperlake SkylakeX Zen Haswell Sandybridge Nehalem Core2 Prescott");
  CHECK(joined(openblas_core_candidates(intel_skylakex())) == "SkylakeX Haswell Zen Sandybridge Nehalem Core2 Prescott");
  CHECK(joined(openblas_core_candidates(intel_haswell())) == "Haswell Zen Sandybridge Nehalem Core2 Prescott");
  CHECK(joined(openblas_core_candidates(amd_zen2())) == "Zen Haswell Sandybridge Nehalem Core2 Prescott");
  cpu_features avx_only;
  avx_only.intel = avx_only.avx = true;
  CHECK(joined(openblas_core_candidates(avx_only)) == "Sandybridge");
  CHECK(joined(openblas_core_candidates(sse_only())) == "Nehalem Core2 Prescott");  // no AVX
  CHECK(openblas_core_candidates(cpu_features{}).empty());  // not even SSE3: OpenBLAS's own choice
  // AVX-512 without one of BW/DQ/VL/CD is not enough for SkylakeX's kernels.
  cpu_features partial = intel_skylakex();
  partial.avx512vl = false;
  CHECK(joined(openblas_core_candidates(partial)) == "Haswell Zen Sandybridge Nehalem Core2 Prescott");
  // SapphireRapids needs AMX the OS saves: without the tile state, Cooperlake leads.
  cpu_features no_tiles = intel_sapphire_rapids();
  no_tiles.amx_tile = no_tiles.amx_bf16 = false;
  CHECK(openblas_core_candidates(no_tiles).front() == "Cooperlake");
  // AMD's FMA4 family (Piledriver: AVX, FMA3, FMA4, XOP; no AVX2).
  cpu_features piledriver;
  piledriver.amd = piledriver.sse3 = piledriver.ssse3 = piledriver.sse4_2 = true;
  piledriver.avx = piledriver.fma = piledriver.fma4 = piledriver.xop = true;
  CHECK(joined(openblas_core_candidates(piledriver)) == "Steamroller Piledriver Bulldozer Sandybridge Nehalem Core2 Prescott");
}

TEST_CASE("kernel classes: where the features order sets with certainty") {
  CHECK(kernel_class("SapphireRapids") == 4);
  CHECK(kernel_class("cooperlake") == 4);
  CHECK(kernel_class("skx") == 4);
  CHECK(kernel_class("zen4") == 4);
  CHECK(kernel_class("Haswell") == 3);
  CHECK(kernel_class("zen3") == 3);
  CHECK(kernel_class("Sandybridge") == 2);
  CHECK(kernel_class("Piledriver") == 2);
  CHECK(kernel_class("Prescott") == 1);
  CHECK(kernel_class("Barcelona") == 1);  // a name a host's OpenBLAS may report, never prism's choice
  CHECK(kernel_class("generic") == 0);
  CHECK(kernel_class("NoSuchCore") == 0);
}

TEST_CASE("BLIS configurations by CPU features, among those the library registered") {
  CHECK(joined(blis_arch_candidates(amd_avx512_bf16(), debian_x86_64)) == "skx zen3 zen2 zen haswell sandybridge penryn");
  CHECK(joined(blis_arch_candidates(intel_skylakex(), debian_x86_64)) == "skx haswell zen3 zen2 zen sandybridge penryn");
  CHECK(joined(blis_arch_candidates(intel_sapphire_rapids(), debian_x86_64)) ==
        "skx haswell zen3 zen2 zen sandybridge penryn");
  CHECK(joined(blis_arch_candidates(amd_zen2(), debian_x86_64)) == "zen3 zen2 zen haswell sandybridge penryn");
  CHECK(joined(blis_arch_candidates(intel_haswell(), debian_x86_64)) == "haswell zen3 zen2 zen sandybridge penryn");
  CHECK(joined(blis_arch_candidates(sse_only(), debian_x86_64)) == "penryn");
  // When the probe found 256-bit sets as fast as 512-bit ones (a Zen 4-class core that
  // splits 512-bit operations), the AVX2 configurations come first.
  CHECK(joined(blis_arch_candidates(amd_avx512_bf16(), debian_x86_64, false)) == "zen3 zen2 zen haswell skx sandybridge penryn");
  // A BLIS 1.0 that registers zen4 and zen5 offers them first on AMD, not on Intel.
  const std::vector<std::string> blis_1 = {"zen5", "zen4", "skx", "zen3", "haswell", "generic"};
  CHECK(joined(blis_arch_candidates(amd_avx512_bf16(), blis_1)) == "zen5 zen4 skx zen3 haswell");
  CHECK(joined(blis_arch_candidates(intel_sapphire_rapids(), blis_1)) == "skx haswell zen3");
  // Only registered ones: a build without the zen family and skx.
  CHECK(joined(blis_arch_candidates(amd_avx512_bf16(), {"haswell", "generic"})) == "haswell");
  CHECK(blis_arch_candidates(amd_avx512_bf16(), {"generic"}).empty());
  CHECK(blis_arch_candidates(cpu_features{}, debian_x86_64).empty());
}

TEST_CASE("which sets a CPU runs") {
  CHECK(cpu_runs(amd_avx512_bf16(), "openblas", "Cooperlake"));
  CHECK_FALSE(cpu_runs(intel_skylakex(), "openblas", "Cooperlake"));
  CHECK(cpu_runs(intel_skylakex(), "blis", "skx"));
  CHECK_FALSE(cpu_runs(intel_haswell(), "blis", "skx"));
  CHECK(cpu_runs(intel_haswell(), "blis", "zen3"));  // zen3's kernels need AVX2 and FMA only
  CHECK_FALSE(cpu_runs(cpu_features{}, "openblas", "Haswell"));
  CHECK(canonical_kernel_name("openblas", "COOPERLAKE") == "Cooperlake");
  CHECK(canonical_kernel_name("blis", "Zen2") == "zen2");
  CHECK(canonical_kernel_name("blis", "Cooperlake").empty());
  CHECK(canonical_kernel_name("openblas", "sapphirerapids") == "SapphireRapids");
  CHECK(cpu_runs(intel_sapphire_rapids(), "openblas", "SapphireRapids"));
  CHECK_FALSE(cpu_runs(amd_avx512_bf16(), "openblas", "SapphireRapids"));  // no AMX, no AVX512_FP16
  CHECK(cpu_runs(amd_avx512_bf16(), "blis", "zen4"));
  CHECK_FALSE(cpu_runs(intel_sapphire_rapids(), "blis", "zen4"));
}

TEST_CASE("kernel widths: AVX-512 sets above AVX2 ones, anything else 0") {
  CHECK(kernel_vector_bits("SapphireRapids") == 512);
  CHECK(kernel_vector_bits("Cooperlake") == 512);
  CHECK(kernel_vector_bits("SkylakeX") == 512);
  CHECK(kernel_vector_bits("skx") == 512);
  CHECK(kernel_vector_bits("Haswell") == 256);
  CHECK(kernel_vector_bits("zen3") == 256);
  CHECK(kernel_vector_bits("generic") == 0);
  CHECK(kernel_vector_bits("Sandybridge") == 0);
}

TEST_CASE("this machine's features describe themselves and name a vendor") {
  const std::string d = this_cpu().describe();
  CHECK(!d.empty());
  INFO(d);
  // Every listed set of this CPU is one it runs (the candidates and cpu_runs agree).
  for (const std::string& n : openblas_core_candidates(this_cpu())) CHECK(cpu_runs(this_cpu(), "openblas", n));
}

TEST_CASE("scoped_env sets and unsets for its lifetime, then restores values and absences exactly") {
  ::setenv("PRISM_TEST_SCOPED_A", "before", 1);
  ::unsetenv("PRISM_TEST_SCOPED_B");
  ::setenv("PRISM_TEST_SCOPED_C", "", 1);  // set but empty is not unset
  {
    scoped_env e({{"PRISM_TEST_SCOPED_A", nullptr}, {"PRISM_TEST_SCOPED_B", "inside"}, {"PRISM_TEST_SCOPED_C", "x"}});
    CHECK(std::getenv("PRISM_TEST_SCOPED_A") == nullptr);
    CHECK(std::string(std::getenv("PRISM_TEST_SCOPED_B")) == "inside");
    CHECK(std::string(std::getenv("PRISM_TEST_SCOPED_C")) == "x");
  }
  REQUIRE(std::getenv("PRISM_TEST_SCOPED_A") != nullptr);
  CHECK(std::string(std::getenv("PRISM_TEST_SCOPED_A")) == "before");
  CHECK(std::getenv("PRISM_TEST_SCOPED_B") == nullptr);
  REQUIRE(std::getenv("PRISM_TEST_SCOPED_C") != nullptr);
  CHECK(std::string(std::getenv("PRISM_TEST_SCOPED_C")).empty());
  // The same variable twice: the last change is undone first, back to the first value.
  {
    scoped_env e({{"PRISM_TEST_SCOPED_A", "one"}, {"PRISM_TEST_SCOPED_A", "two"}});
    CHECK(std::string(std::getenv("PRISM_TEST_SCOPED_A")) == "two");
  }
  CHECK(std::string(std::getenv("PRISM_TEST_SCOPED_A")) == "before");
}

TEST_CASE("BLIS's header numbering: the configurations Debian's build registers") {
  if (!blis_expert::available()) {
    MESSAGE("built without <blis.h>: nothing to check");
    CHECK(blis_expert::registered_archs().empty());
    return;
  }
  const auto& reg = blis_expert::registered_archs();
  CHECK(std::find(reg.begin(), reg.end(), "generic") != reg.end());
  CHECK(blis_expert::arch_id("generic") > blis_expert::arch_id("haswell"));
  CHECK(blis_expert::arch_id("no-such-arch") == -1);
}

// prism's confirmation of an OpenBLAS choice (blas_library.cpp, confirm_openblas) switches a
// loaded copy between core types with gotoblas_dynamic_quit/init under OPENBLAS_CORETYPE.
// Checked here on a copy of serial OpenBLAS opened only for this test: each switch lands on
// the asked core type and the products stay exact.
TEST_CASE("an OpenBLAS copy re-selects its core type with gotoblas_dynamic_quit/init, and computes right") {
  void* h = dlopen(library_path(blas_build::openblas_serial).c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h != nullptr);
  auto quit = reinterpret_cast<void (*)()>(dlsym(h, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<void (*)()>(dlsym(h, "gotoblas_dynamic_init"));
  auto core = reinterpret_cast<char* (*)()>(dlsym(h, "openblas_get_corename"));
  auto dgemm = reinterpret_cast<void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int,
                                         double, double*, int)>(dlsym(h, "cblas_dgemm"));
  if (quit == nullptr || init == nullptr) {
    MESSAGE("not a DYNAMIC_ARCH OpenBLAS: nothing to check");
    return;
  }
  REQUIRE((core != nullptr && dgemm != nullptr));
  const int n = 150, k = 333;  // integer-valued operands: exact in double
  std::vector<double> A(std::size_t(n * k)), B(std::size_t(k * n)), want(std::size_t(n * n), 0.0);
  for (int i = 0; i < n * k; ++i) A[std::size_t(i)] = double(i % 7 - 3), B[std::size_t(i)] = double(i % 5 - 2);
  for (int j = 0; j < n; ++j)
    for (int l = 0; l < k; ++l)
      for (int i = 0; i < n; ++i) want[std::size_t(i + j * n)] += A[std::size_t(i + l * n)] * B[std::size_t(l + j * k)];
  std::vector<std::string> sets = openblas_core_candidates(this_cpu());
  sets.push_back("");  // and back to OpenBLAS's own detection
  for (const std::string& set : sets) {
    {
      const std::vector<std::pair<const char*, const char*>> change = {
          {"OPENBLAS_CORETYPE", set.empty() ? nullptr : set.c_str()}};
      scoped_env env(change);
      quit();
      init();
    }
    if (!set.empty()) CHECK(std::string(core()) == set);
    std::vector<double> C(std::size_t(n * n), 1.0);
    dgemm(102, 111, 111, n, n, k, 1.0, A.data(), n, B.data(), k, 0.0, C.data(), n);
    INFO("core type ", core());
    CHECK(C == want);
  }
}
