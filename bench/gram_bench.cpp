// bench/gram_bench.cpp — the `gram` set: Gram matrices as NumPy's A.T @ A computes them,
// prism::syrk / prism::herk against threaded OpenBLAS and BLIS in the same run.
//
//   prism_gram_bench [--shapes=KxN[:z][:f],...] [--reps=N] [--impls=prism,openblas,blis]
//
// Layouts. NumPy's A.T @ A on a C-order k x n array calls cblas_dsyrk(RowMajor, Upper,
// Trans, n, k, A, lda = n): the same bytes are a column-major n x k matrix whose columns
// are the array's rows, and the call is the column-major dsyrk('L', 'N', n, k, A, n). That
// is what the default rows time, on every library ("dsyrk", "zherk": herk('L', 'N'), A A^H).
// A Fortran code's (or LAPACK-style CholeskyQR's) Gram matrix of a column-major k x n A is
// dsyrk('U', 'T', n, k, A, k), columns of A running along k: the rows marked ":f" time that
// ("dsyrk-f", "zherk-f": herk('U', 'C')).
//
// Memory. A is allocated as its caller would have it. NumPy (1.16 on, Linux) asks for
// transparent huge pages on every array of 4 MiB or more (madvise(MADV_HUGEPAGE); NumPy
// 1.24 here reports _get_madvise_hugepage() True, and a 2^22 x 32 array of it sat on 1 GiB
// of AnonHugePages), so the NumPy-layout rows' A is 2 MiB-aligned and advised the same way.
// A Fortran code's malloc or ALLOCATE gets plain pages where THP is "madvise" (Debian's
// default, and this machine's), so the Fortran-layout rows' A is not advised. (With plain
// pages the NumPy-layout 2^22 x 32 row of prism came out at either ~34 or ~45 ms depending
// on the process: how the 1 GiB of 4 KiB pages happened to be laid out, which no best-of
// within a process smooths over.)
//
// Default shapes: NumPy's 2^22x32, 2^20x64, 2^24x8 and z herk 2^20x32; then the
// Fortran layout's 2^22x32 and 2^20x64.
// Each implementation runs every shape --reps times (default 5) after one warm-up; the best
// time is printed with GF/s (n(n+1)k real flops, x4 complex), the bandwidth of reading A
// once, the ratio to OpenBLAS and the roofline: max(bytes of A / stream bandwidth, flops /
// FMA peak), both measured here on all cores first (bandwidth.cpp, fma_peak.cpp).
// bench/gram.py runs it once per peer kernel set (--label, --no-probes) and merges.
// Results are checked against OpenBLAS's on the upper triangle (relative 1e-10 / 1e-4 of
// the norm). This file is separate from prism_bench.cpp on purpose: it shares nothing but
// the FMA kernel and the privately opened BLAS builds.
#include <prism/prism.hpp>

#include "leaf/backend/blas_library.hpp"
#include "bandwidth.hpp"
#include "fma_peak.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using prism::detail::blas_build;
using prism::detail::blas_library;

namespace {

struct shape {
  std::int64_t k, n;
  bool complex;  // herk on complex<double>, else dsyrk
  bool fortran;  // column-major k x n A, trans 'T' / 'C'; else NumPy's (n x k, trans 'N')
};

double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<shape> parse_shapes(const std::string& s) {
  std::vector<shape> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    shape sh{};
    int used = 0;
    if (std::sscanf(item.c_str(), "%ldx%ld%n", &sh.k, &sh.n, &used) < 2) {
      std::fprintf(stderr, "gram_bench: bad shape '%s' (want KxN[:z][:f])\n", item.c_str());
      std::exit(2);
    }
    for (std::size_t c = std::size_t(used); c < item.size(); c += 2) {
      const std::string tag = item.substr(c, 2);
      if (tag == ":z") sh.complex = true;
      else if (tag == ":f") sh.fortran = true;
      else {
        std::fprintf(stderr, "gram_bench: bad shape '%s' (want KxN[:z][:f])\n", item.c_str());
        std::exit(2);
      }
    }
    out.push_back(sh);
    pos = end + 1;
  }
  return out;
}

// A as its caller allocates it (see "Memory" above): on huge pages as NumPy asks for
// them, or on the plain pages of malloc (bandwidth.hpp's operand_memory either way).
template <class T>
class operand {
 public:
  operand(std::size_t count, bool huge)
      : memory_(prism_probes::operand_memory(count * sizeof(T), huge)), data_(static_cast<T*>(memory_.get())),
        count_(count) {}
  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  T* begin() const { return data_; }
  T* end() const { return data_ + count_; }

 private:
  std::unique_ptr<void, prism_probes::free_deleter> memory_;
  T* data_;
  std::size_t count_;
};

template <class T>
void run_shape(const shape& sh, const std::vector<std::string>& impls, int reps, int nproc, double bandwidth,
               double peak, const std::string& label) {
  const std::int64_t k = sh.k, n = sh.n;
  operand<T> A(std::size_t(k * n), !sh.fortran);
  std::uint64_t x = 88172645463325252ull;  // xorshift: fast fill of a GB
  for (auto& a : A) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    const double v = double(x >> 11) / double(1ull << 53) - 0.5;
    if constexpr (std::same_as<T, double>) a = v;
    else a = T(v, 0.5 - v);
  }
  const bool herm = !std::same_as<T, double>;
  // NumPy's call as the column-major one it is (lower triangle, 'N', A n x k) or Fortran's.
  const char uplo = sh.fortran ? 'U' : 'L', trans = sh.fortran ? (herm ? 'C' : 'T') : 'N';
  const std::int64_t lda = sh.fortran ? k : n;
  const double flops = (herm ? 4.0 : 1.0) * double(n) * double(n + 1) * double(k);
  const double bytes = double(A.size() * sizeof(T));
  const double roof = bandwidth > 0 ? std::max(bytes / bandwidth, flops / peak) : 0;
  std::vector<T> ref(std::size_t(n * n), T(0)), C(std::size_t(n * n), T(0));
  double t_openblas = 0;
  for (const std::string& impl : impls) {
    std::function<void(T*)> call;
    const blas_library* lib = nullptr;
    if (impl == "openblas") lib = &blas_library::get(blas_build::openblas_pthread);
    else if (impl == "blis") lib = &blas_library::get(blas_build::blis_pthread);
    if (lib != nullptr) {
      lib->set_threads(nproc);
      call = [&, lib](T* c) {
        if constexpr (std::same_as<T, double>) lib->syrk<T>(uplo, trans, n, k, 1.0, A.data(), lda, 0.0, c, n);
        else lib->herk<T>(uplo, trans, n, k, 1.0, A.data(), lda, 0.0, c, n);
      };
    } else {
      call = [&](T* c) {
        if constexpr (std::same_as<T, double>) prism::syrk<T>(uplo, trans, n, k, 1.0, A.data(), lda, 0.0, c, n);
        else prism::herk<T>(uplo, trans, n, k, 1.0, A.data(), lda, 0.0, c, n);
      };
    }
    T* out = impl == "openblas" ? ref.data() : C.data();
    call(out);  // warm-up (and the result checked below)
    double best = 1e30;
    for (int r = 0; r < reps; ++r) best = std::min(best, seconds([&] { call(out); }));
    if (impl == "openblas") t_openblas = best;
    std::string check = "-";
    if (impl != "openblas" && t_openblas > 0) {
      double diff = 0, norm = 0;
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = uplo == 'U' ? 0 : j; i < (uplo == 'U' ? j + 1 : n); ++i) {
          diff = std::max(diff, double(std::abs(C[std::size_t(i + j * n)] - ref[std::size_t(i + j * n)])));
          norm = std::max(norm, double(std::abs(ref[std::size_t(i + j * n)])));
        }
      check = diff <= 1e-10 * norm ? "ok" : "MISMATCH";
    }
    const std::string name = label.empty() ? impl : impl + "@" + label;
    std::printf("%-8s %-8s k=%-9ld n=%-4ld %10.3f ms %8.2f GF/s %8.2f GB/s  x%.2f vs openblas  %5.1f%% of roofline  %s\n",
                (std::string(herm ? "zherk" : "dsyrk") + (sh.fortran ? "-f" : "")).c_str(), name.c_str(), long(k), long(n), best * 1e3, flops / best * 1e-9,
                bytes / best * 1e-9, t_openblas > 0 ? t_openblas / best : 1.0, 100.0 * roof / best, check.c_str());
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes = "4194304x32,1048576x64,16777216x8,1048576x32:z,4194304x32:f,1048576x64:f", impls_arg = "openblas,prism,blis";
  int reps = 5;
  std::string label;
  bool probes = true, probes_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--label=", 0) == 0) {
      label = a.substr(8);
      continue;
    }
    if (a == "--no-probes") {
      probes = false;
      continue;
    }
    if (a == "--probes-only") {  // bench/gram.py probes again after the last kernel set
      probes_only = true;
      continue;
    }
    if (a.rfind("--shapes=", 0) == 0) shapes = a.substr(9);
    else if (a.rfind("--reps=", 0) == 0) reps = std::max(1, std::atoi(a.c_str() + 7));
    else if (a.rfind("--impls=", 0) == 0) impls_arg = a.substr(8);
    else {
      std::fprintf(stderr, "usage: prism_gram_bench [--shapes=KxN[:z][:f],...] [--reps=N] [--impls=openblas,prism,blis] "
                           "[--label=SET] [--no-probes | --probes-only]\n");
      return 2;
    }
  }
  std::vector<std::string> impls;
  for (std::size_t p = 0; p <= impls_arg.size();) {
    std::size_t e = impls_arg.find(',', p);
    if (e == std::string::npos) e = impls_arg.size();
    impls.push_back(impls_arg.substr(p, e - p));
    p = e + 1;
  }
  // OpenBLAS first: the others' check and ratio refer to it.
  std::stable_partition(impls.begin(), impls.end(), [](const std::string& s) { return s == "openblas"; });
  const int nproc = int(std::max(1u, std::thread::hardware_concurrency()));
  // The machine's limits, measured here (bench/fma_peak.cpp, bench/bandwidth.cpp: the same
  // probes as prism_bench's). A process that only adds a kernel set's rows (bench/gram.py)
  // skips them (--no-probes): its roofline column is then 0 and not used.
  double peak = 0, bandwidth = 0;
  if (probes) {
    double fma_flops = 0;
    const double fma_seconds = seconds([&] { fma_flops = prism_probes::fma_peak_double(nproc, 1 << 24); });
    peak = fma_flops / fma_seconds;
    bandwidth = prism_probes::read_bandwidth(nproc, std::size_t(2) << 30, 10).best_bytes_per_s;
    std::printf("# gram: %d threads, read bandwidth %.1f GB/s (%s loads), FMA peak %.1f GF/s (double, %s); prism %s\n",
                nproc, bandwidth * 1e-9, prism_probes::bandwidth_isa(), peak * 1e-9, prism_probes::fma_isa(),
                prism::version());
  }
  if (probes_only) return 0;
  for (const shape& sh : parse_shapes(shapes)) {
    if (sh.complex) run_shape<std::complex<double>>(sh, impls, reps, nproc, bandwidth, peak, label);
    else run_shape<double>(sh, impls, reps, nproc, bandwidth, peak, label);
  }
  return 0;
}
