// tests/test_gpu_cuda.cpp — CUDA's devices as prism loads them (lib/gpu/cuda_device.cpp):
// cuda_devices() never throws, and with no GPU (the Debian build machines carry CUDA 13's
// libraries but no GPU; CI carries neither) the set is empty with a status saying why; the
// libraries that load resolve every symbol prism declares; a PCI bus id prism cannot place
// is NUMA domain -1. The dgemm on a real device is its own case and ctest entry
// (test_gpu_cuda_dgemm), reported Skipped where no GPU answers: it cannot run on the
// machines this project is built on, and has not been run by this suite on a GPU.
// Internal: reads lib/gpu and lib/numa.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "environment/environment.hpp"
#include "gpu/cuda_api.hpp"
#include "gpu/devices.hpp"
#include "numa/pci_locality.hpp"
#include "support/skip.hpp"

#include <prism/context.hpp>
#include <prism/topology.hpp>

#include <cmath>
#include <limits>
#include <vector>

using namespace prism;
using namespace prism::detail::gpu;

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST_CASE("cuda_devices never throws; with no GPU the set is empty and its status says why") {
  std::shared_ptr<const device_set> set;
  REQUIRE_NOTHROW(set = cuda_devices());
  REQUIRE(set != nullptr);
  CHECK(cuda_devices() == set);  // built once
  MESSAGE("cuda_devices: " << set->status);
  if (set->count() == 0) {
    CHECK(starts_with(set->status, "no GPU: "));
    // The reasons there can be here: no runtime (CI), or a runtime and no device (this machine).
    const bool no_runtime = starts_with(set->status, "no GPU: libcudart.so.13 not found");
    const bool no_device = starts_with(set->status, "no GPU: cudaGetDeviceCount");
    CHECK((no_runtime || no_device || set->status.find(" not found in ") != std::string::npos));
  } else {
    CHECK(set->status.find(set->count() == 1 ? "1 CUDA device: " : " CUDA devices: ") != std::string::npos);
    for (int i = 0; i < set->count(); ++i) {
      CHECK(set->devices[std::size_t(i)]->index() == i);
      CHECK(!set->devices[std::size_t(i)]->emulated());
    }
  }
}

TEST_CASE("the CUDA libraries that load have every symbol prism declares") {
  std::string why;
  const cuda::runtime_api* rt = cuda::load_runtime(why);
  if (rt == nullptr) {
    MESSAGE("no CUDA runtime here: " << why);
    CHECK(starts_with(why, "libcudart.so.13 not found"));
    return;
  }
  CHECK(why.empty());
#define PRISM_CHECK_LOADED(member, symbol) CHECK_MESSAGE(bool(rt->member != nullptr), #symbol);
  PRISM_CUDART_CALLS(PRISM_CHECK_LOADED)
#undef PRISM_CHECK_LOADED
  const cuda::cublas_api* blas = cuda::load_cublas(why);
  if (blas == nullptr) {
    MESSAGE("the runtime loads, cuBLAS does not: " << why);
    CHECK(why.find(" not found") != std::string::npos);
    return;
  }
  MESSAGE("loaded " << rt->library << " and " << blas->library);
#define PRISM_CHECK_LOADED(member, symbol) CHECK_MESSAGE(bool(blas->member != nullptr), #symbol);
  PRISM_CUBLAS_CALLS(PRISM_CHECK_LOADED)
#undef PRISM_CHECK_LOADED
  // With a runtime and no device, the status names cudaGetDeviceCount's error.
  if (cuda_devices()->count() == 0) CHECK(starts_with(cuda_devices()->status, "no GPU: cudaGetDeviceCount"));
}

TEST_CASE("pci_numa_domain: -1 for what it cannot place") {
  CHECK(detail::pci_numa_domain(default_topology(), "0000:ff:1f.7") == -1);  // no such device here
  CHECK(detail::pci_numa_domain(default_topology(), "not a bus id") == -1);
  CHECK(detail::pci_numa_domain(default_topology(), "") == -1);
  CHECK(detail::pci_numa_domain(topology::synthetic("numa:2 core:1 pu:1"), "0000:00:00.0") == -1);  // not this machine
}

// Run by the ctest entry test_gpu_cuda_bad_env (PRISM_GPU=emulate:0:1G): a bad value is auto.
TEST_CASE("process_devices with a bad PRISM_GPU is the CUDA set" * doctest::skip()) {
  CHECK(!detail::process_environment().gpu.problem.empty());
  CHECK(process_devices() == cuda_devices());
}

// Run by the ctest entry test_gpu_cuda_dgemm, Skipped where no GPU answers. On a GPU: a
// 64 x 48 x 80 dgemm (integer-valued inputs, so exact) on every device, copied there and
// back through pinned memory, then a zherk. Never run on this project's machines, which
// have no GPU: a Skipped entry is not a pass.
TEST_CASE("dgemm and zherk on every CUDA device, exact" * doctest::skip()) {
  const auto set = cuda_devices();
  if (set->count() == 0) test::skip("test_gpu_cuda_dgemm", set->status.c_str());
  const std::int64_t m = 64, n = 48, k = 80;
  std::vector<double> A(std::size_t(m * k)), B(std::size_t(k * n)), R(std::size_t(m * n), 0.0);
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = double(int(i * 7 % 13) - 6);
  for (std::size_t i = 0; i < B.size(); ++i) B[i] = double(int(i * 5 % 11) - 5);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t l = 0; l < k; ++l) R[std::size_t(i + j * m)] += A[std::size_t(i + l * m)] * B[std::size_t(l + j * k)];
  // The calling thread's current device is the program's: prism gives it back after each call.
  std::string why;
  const cuda::runtime_api* rt = cuda::load_runtime(why);
  REQUIRE(rt != nullptr);
  int mine = -1;
  REQUIRE(rt->set_device(int(set->devices.size()) - 1) == cuda::error_t::success);
  REQUIRE(rt->get_device(&mine) == cuda::error_t::success);
  for (const auto& d : set->devices) {
    CAPTURE(d->name());
    auto s = d->make_stream();
    auto* dA = static_cast<double*>(d->allocate(A.size() * 8));
    auto* dB = static_cast<double*>(d->allocate(B.size() * 8));
    auto* dC = static_cast<double*>(d->allocate(R.size() * 8));
    CHECK(d->holds(dA));
    CHECK(!d->holds(A.data()));
    auto* pinned = static_cast<double*>(d->allocate_pinned(R.size() * 8));
    d->copy_2d(dA, m * 8, A.data(), m * 8, m * 8, std::size_t(k), copy_kind::host_to_device, *s);
    d->copy_2d(dB, k * 8, B.data(), k * 8, k * 8, std::size_t(n), copy_kind::host_to_device, *s);
    const double one = 1, zero = 0;
    d->gemm(scalar_type::d, *s, 'N', 'N', m, n, k, &one, dA, m, dB, k, &zero, dC, m);
    d->copy_2d(pinned, m * 8, dC, m * 8, m * 8, std::size_t(n), copy_kind::device_to_host, *s);
    d->synchronize(*s);
    CHECK(std::vector<double>(pinned, pinned + R.size()) == R);
    const link_counters c = d->counters();
    CHECK(c.host_to_device == std::uint64_t(8 * (m * k + k * n)));
    CHECK(c.device_to_host == std::uint64_t(8 * m * n));
    // zherk with trans 'C': C (4 x 4) = A^H A of A stored 3 x 4, real alpha and beta.
    const std::vector<std::complex<double>> Z{{1, 2}, {0, -1}, {3, 0}, {-2, 1}, {1, 1}, {0, 2},
                                              {2, -1}, {1, 0}, {-1, -1}, {0, 1}, {2, 2}, {1, -2}};
    auto* dZ = static_cast<std::complex<double>*>(d->allocate(Z.size() * 16));
    auto* dH = static_cast<std::complex<double>*>(d->allocate(16 * 16));
    d->copy_2d(dZ, 3 * 16, Z.data(), 3 * 16, 3 * 16, 4, copy_kind::host_to_device, *s);
    d->fill_zero(dH, 16 * 16, *s);
    d->rank_k(scalar_type::z, true, *s, 'U', 'C', 4, 3, &one, dZ, 3, &zero, dH, 4);
    std::vector<std::complex<double>> H(16);
    d->copy_2d(H.data(), 4 * 16, dH, 4 * 16, 4 * 16, 4, copy_kind::device_to_host, *s);
    d->synchronize(*s);
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i <= j; ++i) {
        std::complex<double> ref = 0;
        for (int l = 0; l < 3; ++l) ref += std::conj(Z[std::size_t(l + i * 3)]) * Z[std::size_t(l + j * 3)];
        CHECK(H[std::size_t(i + j * 4)] == ref);
      }
    // add_triangle with beta = -0.0 reads nothing of C (BLAS's beta == 0): C's lower
    // triangle becomes A's, NaN there gone; its strict upper triangle keeps its NaN.
    const double minus_zero = -0.0, nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> T{1, 2, 3, 4, 5, 6, 7, 8, 9}, nans(9, nan);
    auto* dT = static_cast<double*>(d->allocate(9 * 8));
    auto* dW = static_cast<double*>(d->allocate(6 * 8));
    d->copy_2d(dT, 3 * 8, T.data(), 3 * 8, 3 * 8, 3, copy_kind::host_to_device, *s);
    d->copy_2d(dC, 3 * 8, nans.data(), 3 * 8, 3 * 8, 3, copy_kind::host_to_device, *s);
    d->add_triangle(scalar_type::d, *s, 'L', false, 3, dT, 3, &minus_zero, dC, 3, dW);
    std::vector<double> L(9);
    d->copy_2d(L.data(), 3 * 8, dC, 3 * 8, 3 * 8, 3, copy_kind::device_to_host, *s);
    d->synchronize(*s);
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 3; ++i) {
        CAPTURE(i);
        CAPTURE(j);
        if (i >= j) CHECK(L[std::size_t(i + 3 * j)] == T[std::size_t(i + 3 * j)]);
        else CHECK(std::isnan(L[std::size_t(i + 3 * j)]));
      }
    // A complex sum (alpha = beta = 1) adds parts as they are: (Inf, 3) + (1, 2) is (Inf, 5),
    // never (Inf, NaN). geam of 3 x 2 blocks with ld 4 in place (C = B, as prism adds a k
    // cut's partials; row 3 untouched), then add_triangle with beta = 1 into the lower
    // triangle of a 3 x 3 C (its upper untouched), as syrk and as herk (a real diagonal).
    const double inf = std::numeric_limits<double>::infinity();
    using z = std::complex<double>;
    const auto same = [](z got, z want) {
      const auto part = [](double g, double w) { return std::isnan(w) ? std::isnan(g) : g == w; };
      return part(got.real(), want.real()) && part(got.imag(), want.imag());
    };
    const std::vector<z> X{{inf, 3}, {1, nan}, {2, 2}, {9, 9}, {-1, inf}, {4, 4}, {5, -5}, {9, 9}};
    const std::vector<z> Y{{1, 2}, {3, 4}, {-2, 1}, {9, 9}, {0, 1}, {1, 0}, {2, 2}, {9, 9}};
    auto* dX = static_cast<z*>(d->allocate(8 * 16));
    auto* dY = static_cast<z*>(d->allocate(8 * 16));
    auto* dS = static_cast<z*>(d->allocate(9 * 16));
    auto* dP = static_cast<z*>(d->allocate(6 * 16));
    d->copy_2d(dX, 8 * 16, X.data(), 8 * 16, 8 * 16, 1, copy_kind::host_to_device, *s);
    d->copy_2d(dY, 8 * 16, Y.data(), 8 * 16, 8 * 16, 1, copy_kind::host_to_device, *s);
    const z unit(1, 0);
    d->geam(scalar_type::z, *s, 3, 2, &unit, dX, 4, &unit, dY, 4, dY, 4);
    std::vector<z> sum(8);
    d->copy_2d(sum.data(), 8 * 16, dY, 8 * 16, 8 * 16, 1, copy_kind::device_to_host, *s);
    d->synchronize(*s);
    for (std::size_t e = 0; e < 8; ++e) {
      CAPTURE(e);
      CHECK(same(sum[e], e % 4 == 3 ? Y[e] : X[e] + Y[e]));
    }
    const std::vector<z> block{{1, 1}, {2, -1}, {0, 3}, {9, 9}, {-1, 2}, {1, 1}, {9, 9}, {9, 9}, {3, 0}};
    const std::vector<z> C0{{inf, 3}, {5, nan}, {1, 1}, {8, 8}, {nan, 2}, {-4, inf}, {8, 8}, {8, 8}, {2, 2}};
    auto* dB3 = static_cast<z*>(d->allocate(9 * 16));
    for (bool herm : {false, true}) {
      CAPTURE(herm);
      d->copy_2d(dS, 9 * 16, C0.data(), 9 * 16, 9 * 16, 1, copy_kind::host_to_device, *s);
      d->copy_2d(dB3, 9 * 16, block.data(), 9 * 16, 9 * 16, 1, copy_kind::host_to_device, *s);
      d->add_triangle(scalar_type::z, *s, 'L', herm, 3, dB3, 3, &unit, dS, 3, dP);
      std::vector<z> tri(9);
      d->copy_2d(tri.data(), 9 * 16, dS, 9 * 16, 9 * 16, 1, copy_kind::device_to_host, *s);
      d->synchronize(*s);
      for (int j = 0; j < 3; ++j)
        for (int i = 0; i < 3; ++i) {
          CAPTURE(i);
          CAPTURE(j);
          const std::size_t e = std::size_t(i + 3 * j);
          const z want = i < j ? C0[e] : herm && i == j ? z(C0[e].real() + block[e].real(), 0) : C0[e] + block[e];
          CHECK(same(tri[e], want));
        }
    }
    for (void* p : {static_cast<void*>(dA), static_cast<void*>(dB), static_cast<void*>(dC), static_cast<void*>(dZ),
                    static_cast<void*>(dH), static_cast<void*>(dT), static_cast<void*>(dW), static_cast<void*>(dX),
                    static_cast<void*>(dY), static_cast<void*>(dS), static_cast<void*>(dP), static_cast<void*>(dB3)})
      d->release(p);
    d->release_pinned(pinned);
    int now = -1;
    CHECK(rt->get_device(&now) == cuda::error_t::success);
    CHECK(now == mine);
  }
}
