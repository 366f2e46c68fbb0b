// apps/run.cpp — `mpirun -np P prism run M N K ...`: one distributed multiply on
// random data in the native layout, timed, with the bytes each rank received beside the
// plan's prediction and the lower bound; --check verifies C outside the timed region.
#include "run.hpp"
#include "gpu_report.hpp"

#include <prism/bounds.hpp>
#include <prism/dist.hpp>
#include <prism/error.hpp>
#include <prism/gemm.hpp>
#include <prism/gpu.hpp>
#include <prism/syrk.hpp>

#include "leaf/backend/blas_library.hpp"
#include "gpu/devices.hpp"
#include "mpi/comm.hpp"
#include "runtime/runtime.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>

namespace prism_app {

namespace {

// Element (i, j) of a stored operand: a seeded hash of its position, uniform in [-1, 1),
// so every rank makes exactly its own pieces and rank 0 can remake the whole matrix.
double value(std::uint64_t seed, int which, std::int64_t i, std::int64_t j, int part) {
  std::uint64_t z = seed ^ (std::uint64_t(which) << 56) ^ (std::uint64_t(part) << 52) ^
                    (std::uint64_t(i) * 0x9E3779B97F4A7C15ull) ^ (std::uint64_t(j) * 0xC2B2AE3D27D4EB4Full);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;  // splitmix64 finaliser
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-52 - 1.0;
}

template <class T>
T element(std::uint64_t seed, int which, std::int64_t i, std::int64_t j) {
  if constexpr (std::same_as<T, float> || std::same_as<T, double>) return T(value(seed, which, i, j, 0));
  else return T(typename T::value_type(value(seed, which, i, j, 0)), typename T::value_type(value(seed, which, i, j, 1)));
}

template <class T>
double magnitude(T x) {
  return double(std::abs(x));
}

struct summary {
  double best = std::numeric_limits<double>::infinity();
  double recv_max = 0, recv_mean = 0, msgs_max = 0;
  double control_max = 0;  // bytes prism's own collectives brought a rank in the last call, most of any rank
  double layout_control_max = 0;  // the same when the layout was made
};

// The most any rank received from prism's own collectives (mpi::control_traffic) since it
// read `since` (collective over MPI_COMM_WORLD; this reduction is the tool's, not counted).
double control_since(std::int64_t since) {
  double mine = double(prism::mpi::control_traffic() - since), most = 0;
  MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return most;
}

// Runs `call` reps times, each after a barrier and timed as its slowest rank, and keeps the
// best; then the last call's bytes and messages received, max and mean over the ranks, and
// the bytes of prism's own collectives in it.
template <class Call>
summary timed(int reps, int size, Call&& call) {
  summary s;
  std::int64_t control0 = 0;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    control0 = prism::mpi::control_traffic();
    call();
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), slowest = 0;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    s.best = std::min(s.best, slowest);
  }
  s.control_max = control_since(control0);
  const prism::dist::traffic tr = prism::dist::last_traffic();
  double mine[2] = {double(tr.bytes_received), double(tr.messages_received)}, mx[2], sum[2];
  MPI_Allreduce(mine, mx, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  s.recv_max = mx[0], s.recv_mean = sum[0] / size, s.msgs_max = mx[1];
  return s;
}

// What the byte counts above leave out, with its figures (the text line of `prism run`).
void print_control(const summary& s) {
  std::printf("not in these counts, which are the exchange's messages: prism's own collectives, at most %.0f B to a "
              "rank per call (argument agreement and failure checks, the same at any rank count; with PRISM_STATS=1 "
              "also its reductions) and %.0f B once, when the layout was made (plan broadcast and agreement)\n",
              s.control_max, s.layout_control_max);
}

// Verifies C on rank 0 against the backend BLAS on the whole matrices, remade from the
// generator: |C - C_ref| <= c k eps (|alpha| |A| |B| + |beta| |C0|) componentwise.
template <class T>
bool check(const prism::problem& p, std::uint64_t seed, T alpha, T beta, const std::vector<T>& C, double& worst) {
  using R = decltype(std::abs(T(0)));
  const std::int64_t ra = p.transa == 'N' ? p.m : p.k, ca = p.transa == 'N' ? p.k : p.m;
  const std::int64_t rb = p.transb == 'N' ? p.k : p.n, cb = p.transb == 'N' ? p.n : p.k;
  std::vector<T> A(std::size_t(ra * ca)), B(std::size_t(rb * cb)), ref(std::size_t(p.m * p.n));
  std::vector<T> absA(A.size()), absB(B.size()), bound(ref.size());
  for (std::int64_t j = 0; j < ca; ++j)
    for (std::int64_t i = 0; i < ra; ++i) A[std::size_t(i + j * ra)] = element<T>(seed, 0, i, j), absA[std::size_t(i + j * ra)] = T(magnitude(A[std::size_t(i + j * ra)]));
  for (std::int64_t j = 0; j < cb; ++j)
    for (std::int64_t i = 0; i < rb; ++i) B[std::size_t(i + j * rb)] = element<T>(seed, 1, i, j), absB[std::size_t(i + j * rb)] = T(magnitude(B[std::size_t(i + j * rb)]));
  for (std::int64_t j = 0; j < p.n; ++j)
    for (std::int64_t i = 0; i < p.m; ++i) {
      const T c0 = element<T>(seed, 2, i, j);
      ref[std::size_t(i + j * p.m)] = c0;
      bound[std::size_t(i + j * p.m)] = T(magnitude(beta) * magnitude(c0));
    }
  const auto& blas = prism::detail::blas_library::get(prism::detail::blas_build::openblas_pthread);
  blas.set_threads(int(std::max(1u, std::thread::hardware_concurrency())));
  const int lda = int(std::max<std::int64_t>(1, ra)), ldb = int(std::max<std::int64_t>(1, rb)), ldc = int(std::max<std::int64_t>(1, p.m));
  blas.gemm<T>(p.transa, p.transb, int(p.m), int(p.n), int(p.k), alpha, A.data(), lda, B.data(), ldb, beta, ref.data(), ldc);
  const char ta = p.transa == 'C' ? 'T' : p.transa, tb = p.transb == 'C' ? 'T' : p.transb;
  blas.gemm<T>(ta, tb, int(p.m), int(p.n), int(p.k), T(magnitude(alpha)), absA.data(), lda, absB.data(), ldb, T(1), bound.data(), ldc);
  const double eps = double(std::numeric_limits<R>::epsilon());
  const double c = std::is_floating_point_v<T> ? 4.0 : 16.0;
  worst = 0;
  bool ok = true;
  for (std::size_t e = 0; e < ref.size(); ++e) {
    const double err = double(std::abs(C[e] - ref[e]));
    const double tol = c * double(std::max<std::int64_t>(p.k, 1)) * eps * double(std::real(bound[e])) + std::numeric_limits<R>::min();
    if (!(err <= tol)) ok = false;
    worst = std::max(worst, err / tol);
  }
  return ok;
}

// Verifies the uplo triangle of C (n x n, rank 0) against the backend's gemm of op(A) with
// itself on the whole matrices, with the same componentwise bound as check.
template <class T>
bool check_rank_k(const prism::problem& p, std::uint64_t seed, T alpha, T beta, const std::vector<T>& C, double& worst) {
  using R = decltype(std::abs(T(0)));
  const bool herk = p.op == prism::operation::herk;
  const std::int64_t n = p.n, ra = p.transa == 'N' ? n : p.k, ca = p.transa == 'N' ? p.k : n;
  std::vector<T> A(std::size_t(ra * ca)), absA(A.size()), ref(std::size_t(n * n)), bound(ref.size());
  for (std::int64_t j = 0; j < ca; ++j)
    for (std::int64_t i = 0; i < ra; ++i) {
      A[std::size_t(i + j * ra)] = element<T>(seed, 0, i, j);
      absA[std::size_t(i + j * ra)] = T(magnitude(A[std::size_t(i + j * ra)]));
    }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      const T c0 = element<T>(seed, 2, i, j);
      ref[std::size_t(i + j * n)] = c0;
      bound[std::size_t(i + j * n)] = T(magnitude(beta) * magnitude(c0));
    }
  const auto& blas = prism::detail::blas_library::get(prism::detail::blas_build::openblas_pthread);
  blas.set_threads(int(std::max(1u, std::thread::hardware_concurrency())));
  const char t = herk ? 'C' : 'T', ta = p.transa == 'N' ? 'N' : t, tb = p.transa == 'N' ? t : 'N';
  const int lda = int(std::max<std::int64_t>(1, ra)), ldc = int(std::max<std::int64_t>(1, n));
  blas.gemm<T>(ta, tb, int(n), int(n), int(p.k), alpha, A.data(), lda, A.data(), lda, beta, ref.data(), ldc);
  const char ua = ta == 'C' ? 'T' : ta, ub = tb == 'C' ? 'T' : tb;
  blas.gemm<T>(ua, ub, int(n), int(n), int(p.k), T(magnitude(alpha)), absA.data(), lda, absA.data(), lda, T(1), bound.data(), ldc);
  const double eps = double(std::numeric_limits<R>::epsilon());
  const double c = std::is_floating_point_v<T> ? 4.0 : 16.0;
  worst = 0;
  bool ok = true;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      if (p.uplo == 'U' ? i > j : i < j) continue;
      const std::size_t e = std::size_t(i + j * n);
      T want = ref[e];
      if constexpr (!std::is_floating_point_v<T>)
        if (herk && i == j) {
          want = T(want.real());
          if (C[e].imag() != 0) ok = false;
        }
      const double err = double(std::abs(C[e] - want));
      const double tol = c * double(std::max<std::int64_t>(p.k, 1)) * eps * double(std::real(bound[e])) + std::numeric_limits<R>::min();
      if (!(err <= tol)) ok = false;
      worst = std::max(worst, err / tol);
    }
  return ok;
}

// `prism run --syrk / --herk`: prism::dist::syrk / herk over the ranks, as run_typed.
template <class T>
int run_rank_k_typed(const run_options& o, int rank, int size) {
  prism::problem p = o.p;
  p.type = prism::scalar_type_of<T>();
  std::shared_ptr<const prism::dist::layout> L;
  const std::int64_t control0 = prism::mpi::control_traffic();
  try {
    L = prism::dist::layout::make(MPI_COMM_WORLD, p, o.ctx);
  } catch (const prism::error& e) {
    if (rank == 0) std::fprintf(stderr, "prism: cannot plan over %d ranks: %s\n", size, e.what());
    return 2;
  }
  const double layout_control = control_since(control0);
  const bool herk = p.op == prism::operation::herk;
  const std::uint64_t seed = o.seed;
  prism::dist::matrix<T> A(L, prism::operand::a), C(L, prism::operand::c);
  A.fill([&](std::int64_t i, std::int64_t j) { return element<T>(seed, 0, i, j); });
  auto fresh_c = [&] { C.fill([&](std::int64_t i, std::int64_t j) { return element<T>(seed, 2, i, j); }); };
  fresh_c();
  const T alpha = T(1), beta = T(o.beta);
  auto call = [&] {
    if constexpr (!std::is_floating_point_v<T>)
      if (herk) return prism::dist::herk<T>(MPI_COMM_WORLD, p.uplo, p.transa, 1, A, o.beta, C, o.ctx);
    prism::dist::syrk<T>(MPI_COMM_WORLD, p.uplo, p.transa, alpha, A, beta, C, o.ctx);
  };
  summary s = timed(o.reps, size, call);
  s.layout_control_max = layout_control;
  const prism::dist::traffic tr = prism::dist::last_traffic();
  const prism::rank_model& m = L->model();
  const std::int64_t want_bytes = L->active() ? m.cost(rank).received_total() * std::int64_t(sizeof(T)) : 0;
  int off = tr.bytes_received != want_bytes ? 1 : 0, ranks_off = 0;
  MPI_Allreduce(&off, &ranks_off, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::string verdict = "skipped";
  double worst = 0;
  if (o.check) {
    fresh_c();
    call();
    std::vector<T> full(rank == 0 ? std::size_t(p.n * p.n) : 0, T(0));
    C.gather(0, full.data(), std::max<std::int64_t>(1, p.n));
    int ok = 1;
    if (rank == 0) ok = check_rank_k<T>(p, seed, alpha, beta, full, worst) ? 1 : 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    verdict = ok ? "passed" : "failed";
  }
  if (ranks_off > 0) verdict = "failed";
  if (rank == 0) {
    const double elem = double(sizeof(T));
    const double bound = prism::bounds::syrk_parallel_io_minus_owned(p.n, p.k, size) * elem;
    const double gflops = p.flops() / s.best * 1e-9;
    if (o.json) {
      std::printf("{\"tool\":\"prism_run\",\"op\":\"%s\",\"np\":%d,\"ranks_used\":%d,\"scheme\":\"%s\",\"type\":\"%c\","
                  "\"uplo\":\"%c\",\"trans\":\"%c\",\"n\":%lld,\"k\":%lld,\"threads\":%d,\"reps\":%d,\"best_s\":%.6g,"
                  "\"gflops\":%.4g,\"recv_max_MB\":%.6f,\"recv_mean_MB\":%.6f,\"pred_max_MB\":%.6f,\"bound_MB\":%.6f,"
                  "\"msgs_max\":%.0f,\"control_per_call_B\":%.0f,\"control_layout_B\":%.0f,\"peak_MB\":%.3f,"
                  "\"ranks_off_model\":%d,\"check\":\"%s\"}\n",
                  prism::to_string(p.op), size, m.ranks(), m.scheme().to_string().c_str(), char(p.type), p.uplo, p.transa,
                  (long long)p.n, (long long)p.k, o.ctx.threads(), o.reps, s.best, gflops, s.recv_max / 1e6,
                  s.recv_mean / 1e6, double(m.max_received()) * elem / 1e6, bound / 1e6, s.msgs_max, s.control_max,
                  s.layout_control_max, double(m.max_peak_bytes()) / 1e6, ranks_off, verdict.c_str());
    } else {
      std::cout << "# " << prism::to_string(p.op) << " " << p.uplo << p.transa << " n " << p.n << " k " << p.k << " over "
                << size << " ranks (" << o.ctx.threads() << " thread" << (o.ctx.threads() == 1 ? "" : "s")
                << " each): scheme " << m.scheme().to_string() << '\n';
      std::cout << L->report();
      std::printf("time %.6f s (best of %d, slowest rank), %.2f GF/s\n", s.best, o.reps, gflops);
      std::printf("received per rank: max %.3f MB, mean %.3f MB (predicted max %.3f MB); SYRK bound %.3f MB%s, "
                  "ratio %.3f; messages max %.0f\n",
                  s.recv_max / 1e6, s.recv_mean / 1e6, double(m.max_received()) * elem / 1e6, bound / 1e6,
                  m.ranks() < size ? " (A and C over all ranks)" : "",
                  bound > 0 ? s.recv_max / bound : 0.0, s.msgs_max);
      print_control(s);
      if (ranks_off == 0) std::printf("counts: every rank received exactly the predicted bytes\n");
      else std::printf("counts: %d ranks received other bytes than predicted\n", ranks_off);
      if (o.check) std::printf("check: %s (worst error / bound %.3g)\n", verdict.c_str(), worst);
      else std::printf("check: skipped (--check verifies C)\n");
    }
    std::fflush(stdout);
  }
  return verdict == "failed" ? 1 : 0;
}

template <class T>
int run_typed(const run_options& o, int rank, int size) {
  if (o.p.op != prism::operation::gemm) return run_rank_k_typed<T>(o, rank, size);
  prism::problem p = o.p;
  p.type = prism::scalar_type_of<T>();
  std::shared_ptr<const prism::dist::layout> L;
  const std::int64_t control0 = prism::mpi::control_traffic();
  try {
    L = prism::dist::layout::make(MPI_COMM_WORLD, p, o.ctx);
  } catch (const prism::error& e) {
    if (rank == 0) std::fprintf(stderr, "prism: cannot plan over %d ranks: %s\n", size, e.what());
    return 2;
  }
  const double layout_control = control_since(control0);
  const std::uint64_t seed = o.seed;
  prism::dist::matrix<T> A(L, prism::operand::a), B(L, prism::operand::b), C(L, prism::operand::c);
  A.fill([&](std::int64_t i, std::int64_t j) { return element<T>(seed, 0, i, j); });
  B.fill([&](std::int64_t i, std::int64_t j) { return element<T>(seed, 1, i, j); });
  auto fresh_c = [&] { C.fill([&](std::int64_t i, std::int64_t j) { return element<T>(seed, 2, i, j); }); };
  fresh_c();
  const T alpha = T(1), beta = T(o.beta);
  summary s = timed(o.reps, size, [&] { prism::dist::gemm<T>(MPI_COMM_WORLD, L->source(), alpha, A, B, beta, C, o.ctx); });
  s.layout_control_max = layout_control;
  const prism::dist::traffic tr = prism::dist::last_traffic();
  // Every rank holds its counts against the model's for itself: bytes and messages
  // received must be exactly the predicted ones (ranks that sit out: none).
  const std::int64_t want_bytes = L->active() ? L->model().cost(rank).received_total() * std::int64_t(sizeof(T)) : 0;
  const std::int64_t want_msgs = L->active() ? L->model().messages(rank) : 0;
  int off = tr.bytes_received != want_bytes || tr.messages_received != want_msgs ? 1 : 0, ranks_off = 0;
  MPI_Allreduce(&off, &ranks_off, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  std::string verdict = "skipped";
  double worst = 0;
  if (o.check) {  // outside the timed and counted calls: a fresh C, one more call, gathered
    fresh_c();
    prism::dist::gemm<T>(MPI_COMM_WORLD, L->source(), alpha, A, B, beta, C, o.ctx);
    std::vector<T> full(rank == 0 ? std::size_t(p.m * p.n) : 0);
    C.gather(0, full.data(), std::max<std::int64_t>(1, p.m));
    int ok = 1;
    if (rank == 0) ok = check<T>(L->source().problem(), seed, alpha, beta, full, worst) ? 1 : 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    verdict = ok ? "passed" : "failed";
  }
  if (ranks_off > 0) verdict = "failed";  // a count off the model fails the run, checked or not

  if (rank == 0) {
    const prism::rank_model& m = L->model();
    const double elem = double(sizeof(T));
    const double bound = prism::bounds::parallel_io_minus_owned(p.m, p.n, p.k, size, prism::bounds::unlimited) * elem;
    const double gflops = p.flops() / s.best * 1e-9;
    if (o.json) {
      std::printf("{\"tool\":\"prism_run\",\"np\":%d,\"ranks_used\":%d,\"grid\":\"%s\",\"type\":\"%c\",\"trans\":\"%c%c\","
                  "\"m\":%lld,\"n\":%lld,\"k\":%lld,\"threads\":%d,\"reps\":%d,\"best_s\":%.6g,\"gflops\":%.4g,"
                  "\"recv_max_MB\":%.6f,\"recv_mean_MB\":%.6f,\"pred_max_MB\":%.6f,\"pred_mean_MB\":%.6f,"
                  "\"bound_MB\":%.6f,\"msgs_max\":%.0f,\"control_per_call_B\":%.0f,\"control_layout_B\":%.0f,"
                  "\"peak_MB\":%.3f,\"ranks_off_model\":%d,\"check\":\"%s\"}\n",
                  size, m.ranks(), m.grid().c_str(), char(p.type), p.transa, p.transb, (long long)p.m, (long long)p.n,
                  (long long)p.k, o.ctx.threads(), o.reps, s.best, gflops, s.recv_max / 1e6, s.recv_mean / 1e6,
                  double(m.max_received()) * elem / 1e6, m.mean_received() * elem * m.ranks() / size / 1e6, bound / 1e6,
                  s.msgs_max, s.control_max, s.layout_control_max, double(m.max_peak_bytes()) / 1e6, ranks_off,
                  verdict.c_str());
    } else {
      std::istringstream in(L->source().to_string());  // rank-level steps only; `prism plan --ranks` prints all
      std::cout << "# plan, rank-level steps (" << size << " ranks, " << o.ctx.threads() << " thread"
                << (o.ctx.threads() == 1 ? "" : "s") << " each):\n";
      for (std::string line; std::getline(in, line);)
        if (line.find(" rank ") != std::string::npos || line.rfind("problem", 0) == 0 || line.rfind("ranks", 0) == 0)
          std::cout << line << '\n';
      std::cout << L->report();
      std::printf("time %.6f s (best of %d, slowest rank), %.2f GF/s\n", s.best, o.reps, gflops);
      std::printf("received per rank: max %.3f MB, mean %.3f MB (predicted max %.3f MB, mean %.3f MB); bound %.3f MB%s; "
                  "messages max %.0f\n",
                  s.recv_max / 1e6, s.recv_mean / 1e6, double(m.max_received()) * elem / 1e6,
                  m.mean_received() * elem * m.ranks() / size / 1e6, bound / 1e6,
                  m.ranks() < size ? " (A, B and C over all ranks)" : "", s.msgs_max);
      print_control(s);
      if (ranks_off == 0) std::printf("counts: every rank received exactly the predicted bytes and messages\n");
      else std::printf("counts: %d ranks received other bytes or messages than predicted\n", ranks_off);
      if (o.check) std::printf("check: %s (worst error / bound %.3g)\n", verdict.c_str(), worst);
      else std::printf("check: skipped (--check verifies C)\n");
    }
    std::fflush(stdout);
  }
  return verdict == "failed" ? 1 : 0;
}

// Bytes each device has moved so far, host -> device and back.
std::vector<std::pair<double, double>> link_bytes(const prism::context& ctx) {
  std::vector<std::pair<double, double>> out;
  for (const auto& d : prism::detail::devices_of(ctx).devices) {
    const prism::detail::gpu::link_counters c = d->counters();
    out.emplace_back(double(c.host_to_device), double(c.device_to_host));
  }
  return out;
}

// `prism run --gpus G` (one process): prism::gemm (or syrk / herk) with the plan on G GPUs,
// emulated where this machine has fewer; the bytes each device moved in the last timed call
// beside the plan's prediction (a count off the model fails the run), and --check.
template <class T>
int run_gpu_typed(run_options o) {
  prism::problem p = o.p;
  p.type = prism::scalar_type_of<T>();
  std::ostringstream note;
  prism_app::emulate_missing_gpus(o.ctx, note);
  const bool rank_k = p.op != prism::operation::gemm, herk = p.op == prism::operation::herk;
  const std::int64_t ra = p.transa == 'N' ? p.m : p.k, ca = p.transa == 'N' ? p.k : p.m;
  const std::int64_t rb = p.transb == 'N' ? p.k : p.n, cb = p.transb == 'N' ? p.n : p.k;
  const std::uint64_t seed = o.seed;
  std::vector<T> A(std::size_t(ra * ca)), B(rank_k ? 0 : std::size_t(rb * cb)), C(std::size_t(p.m * p.n));
  for (std::int64_t j = 0; j < ca; ++j)
    for (std::int64_t i = 0; i < ra; ++i) A[std::size_t(i + j * ra)] = element<T>(seed, 0, i, j);
  for (std::int64_t j = 0; j < (rank_k ? 0 : cb); ++j)
    for (std::int64_t i = 0; i < rb; ++i) B[std::size_t(i + j * rb)] = element<T>(seed, 1, i, j);
  auto fresh_c = [&] {
    for (std::int64_t j = 0; j < p.n; ++j)
      for (std::int64_t i = 0; i < p.m; ++i) C[std::size_t(i + j * p.m)] = element<T>(seed, 2, i, j);
  };
  fresh_c();
  const T alpha = T(1), beta = T(o.beta);
  const std::int64_t lda = std::max<std::int64_t>(1, ra), ldb = std::max<std::int64_t>(1, rb), ldc = std::max<std::int64_t>(1, p.m);
  auto call = [&] {
    if constexpr (!std::is_floating_point_v<T>)
      if (herk) return prism::herk<T>(p.uplo, p.transa, p.n, p.k, 1, A.data(), lda, o.beta, C.data(), ldc, o.ctx);
    if (rank_k) return prism::syrk<T>(p.uplo, p.transa, p.n, p.k, alpha, A.data(), lda, beta, C.data(), ldc, o.ctx);
    prism::gemm<T>(p.transa, p.transb, p.m, p.n, p.k, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc, o.ctx);
  };
  const prism::plan pl = prism::make_plan(p, o.ctx);
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::pair<double, double>> before, after;
  for (int r = 0; r < o.reps; ++r) {
    before = link_bytes(o.ctx);
    const auto t0 = std::chrono::steady_clock::now();
    call();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    after = link_bytes(o.ctx);
  }
  const std::vector<prism::gpu_part> parts = prism::predict_gpu(pl, o.beta != 0, o.ctx);
  std::vector<std::pair<double, double>> counted(after.size());
  for (std::size_t d = 0; d < after.size(); ++d) counted[d] = {after[d].first - before[d].first, after[d].second - before[d].second};
  std::vector<std::pair<double, double>> predicted(after.size());
  for (const prism::gpu_part& g : parts) predicted[std::size_t(g.device)].first += g.bytes_in, predicted[std::size_t(g.device)].second += g.bytes_out;
  int off = 0;
  for (std::size_t d = 0; d < counted.size() && d < std::size_t(pl.devices()); ++d) off += counted[d] != predicted[d] ? 1 : 0;
  std::string verdict = "skipped";
  double worst = 0;
  if (o.check) {
    fresh_c();
    call();
    const bool ok = rank_k ? check_rank_k<T>(p, seed, alpha, beta, C, worst) : check<T>(p, seed, alpha, beta, C, worst);
    verdict = ok ? "passed" : "failed";
  }
  if (off > 0) verdict = "failed";
  const double gflops = p.flops() / best * 1e-9;
  if (o.json) {
    double in = 0, out = 0, pin = 0, pout = 0;
    for (std::size_t d = 0; d < counted.size(); ++d) in += counted[d].first, out += counted[d].second, pin += predicted[d].first, pout += predicted[d].second;
    // A rank-k record as the MPI path writes it: its uplo and its one trans.
    const std::string trans = p.op == prism::operation::gemm
                                  ? std::string("\"trans\":\"") + p.transa + p.transb + "\""
                                  : std::string("\"uplo\":\"") + p.uplo + "\",\"trans\":\"" + p.transa + "\"";
    std::printf("{\"tool\":\"prism_run\",\"op\":\"%s\",\"gpus\":%d,\"device_memory\":%zu,\"type\":\"%c\",%s,"
                "\"m\":%lld,\"n\":%lld,\"k\":%lld,\"threads\":%d,\"reps\":%d,\"best_s\":%.6g,\"gflops\":%.4g,"
                "\"link_in_MB\":%.6f,\"link_out_MB\":%.6f,\"pred_in_MB\":%.6f,\"pred_out_MB\":%.6f,"
                "\"devices_off_model\":%d,\"check\":\"%s\"}\n",
                prism::to_string(p.op), pl.devices(), pl.device_memory(), char(p.type), trans.c_str(), (long long)p.m,
                (long long)p.n, (long long)p.k, o.ctx.threads(), o.reps, best, gflops, in / 1e6, out / 1e6, pin / 1e6,
                pout / 1e6, off, verdict.c_str());
  } else {
    std::cout << note.str() << pl;
    prism_app::print_gpu_report(std::cout, pl, o.ctx, o.beta != 0);
    std::printf("time %.6f s (best of %d), %.2f GF/s\n", best, o.reps, gflops);
    for (std::size_t d = 0; d < counted.size() && d < std::size_t(pl.devices()); ++d)
      std::printf("device %zu: link bytes in %.0f, out %.0f (predicted in %.0f, out %.0f)%s\n", d, counted[d].first,
                  counted[d].second, predicted[d].first, predicted[d].second, counted[d] == predicted[d] ? "" : " OFF THE MODEL");
    if (off == 0) std::printf("counts: every device moved exactly the predicted bytes\n");
    else std::printf("counts: %d devices moved other bytes than predicted\n", off);
    if (o.check) std::printf("check: %s (worst error / bound %.3g)\n", verdict.c_str(), worst);
    else std::printf("check: skipped (--check verifies C)\n");
  }
  std::fflush(stdout);
  return verdict == "failed" ? 1 : 0;
}

// `prism run --gpus G`: one process, no rank level (its plans do not put GPUs below ranks).
int run_gpus(const run_options& o) {
  switch (o.p.type) {
    case prism::scalar_type::s: return run_gpu_typed<float>(o);
    case prism::scalar_type::d: return run_gpu_typed<double>(o);
    case prism::scalar_type::c: return run_gpu_typed<std::complex<float>>(o);
    case prism::scalar_type::z: return run_gpu_typed<std::complex<double>>(o);
  }
  return 1;
}

}  // namespace

int run_distributed(run_options o) {
  int initialized = 0, provided = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (!o.threads_given) {  // the node's cores shared among its ranks
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    int per_node = 1;
    MPI_Comm_size(local, &per_node);
    MPI_Comm_free(&local);
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    o.ctx.set_threads(std::max(1, cores / per_node));
  }
  if (o.ctx.gpus() > 0 && size > 1) {  // bad input, the same on every rank: rank 0 says so
    if (rank == 0)
      std::fprintf(stderr, "prism: --gpus runs on one process (mpirun -np 1, or no mpirun): GPU plans have no rank level\n");
    MPI_Finalize();
    return 2;
  }
  int rc = 1;
  std::string why;  // this rank's error, if any
  try {
    if (o.ctx.gpus() > 0) rc = run_gpus(o);
    else switch (o.p.type) {
      case prism::scalar_type::s: rc = run_typed<float>(o, rank, size); break;
      case prism::scalar_type::d: rc = run_typed<double>(o, rank, size); break;
      case prism::scalar_type::c: rc = run_typed<std::complex<float>>(o, rank, size); break;
      case prism::scalar_type::z: rc = run_typed<std::complex<double>>(o, rank, size); break;
    }
  } catch (const std::exception& e) {
    why = *e.what() != '\0' ? e.what() : "unknown error";
    rc = 1;
  }
  // An error is said once: by rank 0 when it failed (every rank usually fails alike: a
  // disagreeing argument gives every rank the same prism::invalid_argument), else by the
  // lowest rank that failed, which names itself.
  int first_failed = size;
  MPI_Allreduce(why.empty() ? &size : &rank, &first_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == first_failed) {
    if (rank == 0) std::fprintf(stderr, "prism: %s\n", why.c_str());
    else std::fprintf(stderr, "prism (rank %d): %s\n", rank, why.c_str());
  }
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}

}  // namespace prism_app
