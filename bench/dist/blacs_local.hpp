// bench/dist/blacs_local.hpp — what the ScaLAPACK peers of the distributed benchmark share
// (pdgemm_bench.cpp, pdsyrk_bench.cpp): the BLACS and descriptor entry points, the element
// generator (so every tool and grid sees the same operands), one rank's block-cyclic part of a
// matrix, the gather onto rank 0 for --check, and the BLAS the process actually loaded.
//
// Header-only, internal to bench/: each peer is one plain ScaLAPACK program linked to Debian's
// libscalapack-openmpi and nothing of prism's.
#pragma once

#include <mpi.h>

#include <link.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

extern "C" {
// BLACS C interface and ScaLAPACK tools (LP64 integers, as in Debian's libscalapack-openmpi).
void Cblacs_pinfo(int* mypnum, int* nprocs);
void Cblacs_get(int icontxt, int what, int* val);
void Cblacs_gridinit(int* icontxt, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int icontxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int icontxt);
void Cblacs_exit(int notdone);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc,
               const int* icsrc, const int* ictxt, const int* lld, int* info);
}

namespace blacs_bench {

inline constexpr std::uint64_t kSeed = 0x5eed'd157'0000'0001ULL;

// splitmix64's finaliser: a well-mixed 64-bit hash of x.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Element (i, j) of matrix `which` (0 = A, 1 = B, 2 = C), uniform in [-1, 1).
inline double element(int which, std::int64_t i, std::int64_t j) {
  std::uint64_t h = splitmix64(kSeed ^ (std::uint64_t(which) << 58) ^
                               splitmix64((std::uint64_t(i) << 32) ^ std::uint64_t(j)));
  return double(h >> 11) * 0x1.0p-52 - 1.0;
}

// Global index of local index l (0-based) in a dimension cut in blocks of nb over np
// processes, for process p, source process 0.
inline std::int64_t global_index(std::int64_t l, int nb, int p, int np) {
  return (l / nb) * std::int64_t(np) * nb + std::int64_t(p) * nb + l % nb;
}

// One rank's part of a block-cyclic matrix: its local size, descriptor and data.
struct Local {
  int rows = 0, cols = 0, lld = 1;
  int desc[9] = {};
  std::vector<double> data;
};

// Makes this rank's part of an m x n matrix in mb x nb blocks (source process 0), filled from
// the generator when fill is set.
inline Local make_local(int ctxt, int which, int m, int n, int mb, int nb, int myrow, int mycol, int pr,
                 int pc, bool fill) {
  Local x;
  const int zero = 0;
  x.rows = numroc_(&m, &mb, &myrow, &zero, &pr);
  x.cols = numroc_(&n, &nb, &mycol, &zero, &pc);
  x.lld = std::max(1, x.rows);
  int info = 0;
  descinit_(x.desc, &m, &n, &mb, &nb, &zero, &zero, &ctxt, &x.lld, &info);
  if (info != 0) {
    std::fprintf(stderr, "blacs_bench: descinit failed (info %d)\n", info);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  x.data.assign(std::size_t(x.lld) * std::size_t(std::max(1, x.cols)), 0.0);
  if (fill) {
    for (int lj = 0; lj < x.cols; ++lj) {
      const std::int64_t gj = global_index(lj, nb, mycol, pc);
      double* col = x.data.data() + std::size_t(lj) * std::size_t(x.lld);
      for (int li = 0; li < x.rows; ++li) col[li] = element(which, global_index(li, mb, myrow, pr), gj);
    }
  }
  return x;
}

// The BLAS this process actually loaded (libscalapack-openmpi's libblas.so.3 resolves
// through Debian's alternatives, e.g. to openblas-pthread/libblas.so.3), for the JSON.
inline std::string loaded_blas() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const char* name = info->dlpi_name;
        if (name != nullptr && std::strstr(name, "blas") != nullptr && std::strstr(name, "scalapack") == nullptr) {
          auto* s = static_cast<std::string*>(out);
          char* real = realpath(name, nullptr);  // through the alternatives symlinks
          if (!s->empty()) *s += ";";
          *s += real != nullptr ? real : name;
          std::free(real);
        }
        return 0;
      },
      &found);
  return found.empty() ? "unknown" : found;
}

// Parses an integer in [lo, hi] into *out; false if s is not one.
inline bool parse_int(const char* s, long long lo, long long hi, int* out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = int(v);
  return true;
}

// Gathers the distributed C on rank 0 as a column-major m x n matrix.
inline std::vector<double> gather(const Local& c, int m, int n, int mb, int nb, int myrow, int mycol, int pr,
                           int pc, int rank, int np) {
  // Each rank sends its (rows, cols, myrow, mycol) header and its packed local block.
  std::vector<double> packed(std::size_t(c.rows) * std::size_t(c.cols));
  for (int lj = 0; lj < c.cols; ++lj)
    for (int li = 0; li < c.rows; ++li)
      packed[std::size_t(lj) * c.rows + li] = c.data[std::size_t(lj) * c.lld + li];
  int header[4] = {c.rows, c.cols, myrow, mycol};
  std::vector<int> headers(rank == 0 ? 4 * np : 0);
  MPI_Gather(header, 4, MPI_INT, headers.data(), 4, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> counts, displs;
  std::vector<double> all;
  if (rank == 0) {
    counts.resize(np);
    displs.resize(np);
    int total = 0;
    for (int p = 0; p < np; ++p) {
      counts[p] = headers[4 * p] * headers[4 * p + 1];
      displs[p] = total;
      total += counts[p];
    }
    all.resize(std::size_t(total));
  }
  MPI_Gatherv(packed.data(), int(packed.size()), MPI_DOUBLE, all.data(), counts.data(), displs.data(),
              MPI_DOUBLE, 0, MPI_COMM_WORLD);
  std::vector<double> full;
  if (rank == 0) {
    full.assign(std::size_t(m) * std::size_t(n), std::numeric_limits<double>::quiet_NaN());
    for (int p = 0; p < np; ++p) {
      const int rows = headers[4 * p], cols = headers[4 * p + 1], prow = headers[4 * p + 2],
                pcol = headers[4 * p + 3];
      const double* src = all.data() + displs[p];
      for (int lj = 0; lj < cols; ++lj) {
        const std::int64_t gj = global_index(lj, nb, pcol, pc);
        for (int li = 0; li < rows; ++li)
          full[std::size_t(gj) * m + std::size_t(global_index(li, mb, prow, pr))] = src[std::size_t(lj) * rows + li];
      }
    }
  }
  return full;
}

}  // namespace blacs_bench
