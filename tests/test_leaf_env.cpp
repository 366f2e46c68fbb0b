// tests/test_leaf_env.cpp — its own process: a host that forces its BLAS kernels through the
// environment (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, BLIS_ARCH_TYPE) and set its BLAS thread
// counts, then calls prism. Afterwards the host's variables read exactly as before, its
// OpenBLAS and BLIS keep their thread counts and kernels, and prism's private leaf copies
// run the kernel sets prism chose for this CPU, not the host's forced ones.
// PRISM_TEST_HOST_ENV=unset (a second ctest entry) runs the same with the three variables
// absent, which must stay absent. PRISM_TEST_OPENBLAS_DETECTS=Haswell (a third) makes
// prism's OpenBLAS copy believe its own detection says Haswell: prism then times both sets
// and keeps one, and everything above must still hold (which set wins is not asserted).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <prism/prism.hpp>

#include "leaf/backend/blas_library.hpp"
#include "leaf/backend/blis_expert.hpp"
#include "leaf/backend/leaf_kernels.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <algorithm>
#include <string>

using namespace prism;

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

}  // namespace

TEST_CASE("prism's leaves leave the host's kernel variables, thread counts and kernels as they were") {
  const char* mode = std::getenv("PRISM_TEST_HOST_ENV");
  const bool forced = mode == nullptr || std::strcmp(mode, "unset") != 0;
  const int haswell = detail::blis_expert::arch_id("haswell");
  const std::string haswell_id = std::to_string(haswell);
  if (forced) {
    ::setenv("OPENBLAS_CORETYPE", "Haswell", 1);
    ::setenv("OPENBLAS_L2_SIZE", "512", 1);
    if (haswell >= 0) ::setenv("BLIS_ARCH_TYPE", haswell_id.c_str(), 1);
  } else {
    ::unsetenv("OPENBLAS_CORETYPE");
    ::unsetenv("OPENBLAS_L2_SIZE");
    ::unsetenv("BLIS_ARCH_TYPE");
  }
  const auto core_before = env("OPENBLAS_CORETYPE"), l2_before = env("OPENBLAS_L2_SIZE"),
             arch_before = env("BLIS_ARCH_TYPE");

  // The host: the system's threaded OpenBLAS and threaded BLIS, loaded globally as a program
  // linked with them has them, each set to 2 threads.
  void* host_ob = dlopen(detail::library_path(detail::blas_build::openblas_pthread).c_str(), RTLD_NOW | RTLD_GLOBAL);
  REQUIRE(host_ob != nullptr);
  auto ob_set = reinterpret_cast<void (*)(int)>(dlsym(host_ob, "openblas_set_num_threads"));
  auto ob_get = reinterpret_cast<int (*)()>(dlsym(host_ob, "openblas_get_num_threads"));
  auto ob_core = reinterpret_cast<char* (*)()>(dlsym(host_ob, "openblas_get_corename"));
  REQUIRE((ob_set && ob_get && ob_core));
  ob_set(2);
  const std::string host_core = ob_core();
  if (forced) CHECK(host_core == "Haswell");  // the host's copy follows the host's variable

  void* host_blis = dlopen(detail::library_path(detail::blas_build::blis_pthread).c_str(), RTLD_NOW | RTLD_GLOBAL);
  REQUIRE(host_blis != nullptr);
  auto bl_init = reinterpret_cast<void (*)()>(dlsym(host_blis, "bli_init"));
  auto bl_set = reinterpret_cast<void (*)(long)>(dlsym(host_blis, "bli_thread_set_num_threads"));
  auto bl_get = reinterpret_cast<long (*)()>(dlsym(host_blis, "bli_thread_get_num_threads"));
  auto bl_id = reinterpret_cast<int (*)()>(dlsym(host_blis, "bli_arch_query_id"));
  auto bl_name = reinterpret_cast<const char* (*)(int)>(dlsym(host_blis, "bli_arch_string"));
  REQUIRE((bl_init && bl_set && bl_get && bl_id && bl_name));
  bl_init();
  bl_set(2);
  const std::string host_arch = bl_name(bl_id());
  if (forced && haswell >= 0) CHECK(host_arch == "haswell");

  // prism: a recursive multiply on each leaf backend (integer-valued: exact results).
  for (leaf_backend lb : {leaf_backend::openblas, leaf_backend::blis}) {
    context ctx;
    ctx.set_small_flops(0).set_threads(2).set_leaf(lb);
    const std::int64_t m = 24, n = 20, k = 30000;
    std::vector<double> A(std::size_t(m * k), 1.0), B(std::size_t(k * n), -3.0), C(std::size_t(m * n), 5.0);
    gemm<double>('N', 'N', m, n, k, 1.0, A.data(), m, B.data(), k, 0.0, C.data(), m, ctx);
    for (double c : C) CHECK(c == -3.0 * double(k));
  }

  // The host's environment, exactly.
  CHECK(env("OPENBLAS_CORETYPE") == core_before);
  CHECK(env("OPENBLAS_L2_SIZE") == l2_before);
  CHECK(env("BLIS_ARCH_TYPE") == arch_before);
  // The host's libraries: thread counts and kernels.
  CHECK(ob_get() == 2);
  CHECK(std::string(ob_core()) == host_core);
  CHECK(bl_get() == 2);
  CHECK(std::string(bl_name(bl_id())) == host_arch);

  // prism's own copies run prism's choice for this CPU, whatever the host forced.
  const detail::blas_library& ob = detail::leaf_library(leaf_backend::openblas);
  const detail::blas_library& bl = detail::leaf_library(leaf_backend::blis);
  CHECK_FALSE(ob.shared_with_host());
  CHECK_FALSE(bl.shared_with_host());
  REQUIRE(ob.kernels() != nullptr);
  REQUIRE(bl.kernels() != nullptr);
  const auto ob_candidates = detail::openblas_core_candidates(detail::this_cpu());
  INFO("openblas leaf: chose ", ob.kernels()->chosen, " (", ob.kernels()->why, "), runs ", ob.kernel_name());
  if (!ob_candidates.empty()) CHECK(ob.kernel_name() == ob.kernels()->chosen);
  const char* disagree = std::getenv("PRISM_TEST_OPENBLAS_DETECTS");
  // A set of this CPU's candidates, the one prism chose (by the probe, or its kept verdict).
  if (!ob_candidates.empty())
    CHECK(std::find(ob_candidates.begin(), ob_candidates.end(), ob.kernel_name()) != ob_candidates.end());
  if (!ob_candidates.empty() && disagree != nullptr && ob_candidates.front() != disagree &&
      detail::kernel_class(ob_candidates.front()) >= 3) {
    // The probe ran (PRISM_FIRST_USE=0: nothing kept from an earlier process): the features'
    // first set and OpenBLAS's own detection are both named with a rate, and the copy runs
    // one of the sets it timed.
    CHECK(ob.kernels()->detected == disagree);
    CHECK(ob.kernels()->measured.find(ob_candidates.front()) != std::string::npos);
    CHECK(ob.kernels()->measured.find(disagree) != std::string::npos);
    CHECK(ob.kernels()->measured.find(ob.kernel_name() + " ") != std::string::npos);
  }
  if (forced) CHECK(ob.kernels()->environment == "OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512");
  else CHECK(ob.kernels()->environment.empty());
  const auto bl_candidates = detail::blis_arch_candidates(detail::this_cpu(), detail::blis_expert::registered_archs(),
                                                          detail::wide_vectors_first());
  INFO("blis leaf: chose ", bl.kernels()->chosen, " (", bl.kernels()->why, "), runs ", bl.kernel_name());
  if (!bl_candidates.empty()) {
    CHECK(bl.kernel_name() == bl_candidates.front());
    CHECK(bl.blis_expert());
  }
  if (forced && haswell >= 0) CHECK(bl.kernels()->environment == "BLIS_ARCH_TYPE=" + haswell_id);
}
