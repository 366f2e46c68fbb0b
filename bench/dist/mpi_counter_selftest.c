/* bench/dist/mpi_counter_selftest.c: known traffic for the PMPI counter (mpi_counter.c).
 *
 *   mpirun --oversubscribe -np 4 -x LD_PRELOAD=build/bench/libprism_mpi_counter.so \
 *     build/bench/prism_mpi_counter_selftest
 *
 * Every path the counter intercepts moves a known number of bytes inside an
 * MPI_Pcontrol(1) ... MPI_Pcontrol(0) window, with traffic before and after it that must not
 * count. Rank 0 prints the expected figures on stdout, as one JSON line:
 *   {"tool":"mpi_counter_selftest","np":4,"p2p_max_MB":..,"p2p_mean_MB":..,"coll_max_MB":..,"total_max_MB":..}
 * and the counter prints its own line ("mpi-counter: {...}") on stderr at MPI_Finalize;
 * scripts/bench-dist.sh compares the two before it trusts the counter. Needs np >= 2.
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs the traffic and prints what the counter should report. */
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p < 2) {
    if (me == 0) fprintf(stderr, "mpi_counter_selftest: needs at least 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  const int left = (me + p - 1) % p, right = (me + 1) % p;
  double dbuf[1000];
  char cbuf[2000];
  int ibuf[64];
  memset(dbuf, 0, sizeof dbuf);
  memset(cbuf, 0, sizeof cbuf);
  memset(ibuf, 0, sizeof ibuf);
  uint64_t p2p = 0, coll = 0; /* what this rank should see inside the window */

  /* Before the window: not counted. */
  MPI_Bcast(dbuf, 1000, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Sendrecv(cbuf, 500, MPI_BYTE, right, 1, cbuf + 500, 500, MPI_BYTE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

  MPI_Pcontrol(1);
  { /* ring of 1000 bytes: Irecv + Isend, Waitall with MPI_STATUSES_IGNORE */
    MPI_Request r[2];
    MPI_Irecv(cbuf, 1000, MPI_BYTE, left, 2, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(cbuf + 1000, 1000, MPI_BYTE, right, 2, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    p2p += 1000;
  }
  { /* a derived type (10 blocks of 3 doubles, stride 5): 240 bytes of data; Waitany */
    MPI_Datatype vec;
    MPI_Type_vector(10, 3, 5, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MPI_Request r[2];
    MPI_Isend(dbuf, 1, vec, right, 3, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(dbuf + 100, 1, vec, left, 3, MPI_COMM_WORLD, &r[1]);
    for (int i = 0, idx = 0; i < 2; ++i) MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE);
    MPI_Type_free(&vec);
    p2p += 240;
  }
  /* Sendrecv of 17 ints, Sendrecv_replace of 3 doubles */
  MPI_Sendrecv(ibuf, 17, MPI_INT, right, 4, ibuf + 20, 17, MPI_INT, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  p2p += 68;
  MPI_Sendrecv_replace(dbuf, 3, MPI_DOUBLE, right, 5, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  p2p += 24;
  { /* 50 bytes sent into a 100-byte receive: the counter takes what arrived; Test loop */
    MPI_Request rr, rs;
    MPI_Irecv(cbuf, 100, MPI_BYTE, left, 6, MPI_COMM_WORLD, &rr);
    MPI_Isend(cbuf + 1000, 50, MPI_BYTE, right, 6, MPI_COMM_WORLD, &rs);
    for (int done = 0; !done;) MPI_Test(&rr, &done, MPI_STATUS_IGNORE);
    MPI_Wait(&rs, MPI_STATUS_IGNORE);
    p2p += 50;
  }
  { /* two 8-byte receives completed by Testsome */
    MPI_Request r[2], s[2];
    MPI_Irecv(dbuf + 200, 1, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(dbuf + 201, 1, MPI_DOUBLE, left, 8, MPI_COMM_WORLD, &r[1]);
    MPI_Isend(dbuf, 1, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &s[0]);
    MPI_Isend(dbuf, 1, MPI_DOUBLE, right, 8, MPI_COMM_WORLD, &s[1]);
    int got = 0, idx[2], n = 0;
    while (got < 2) {
      MPI_Testsome(2, r, &n, idx, MPI_STATUSES_IGNORE);
      if (n != MPI_UNDEFINED) got += n;
    }
    MPI_Waitall(2, s, MPI_STATUSES_IGNORE);
    p2p += 16;
  }
  { /* a persistent receive of 4 doubles, started inside the window */
    MPI_Request r, s;
    MPI_Recv_init(dbuf + 300, 4, MPI_DOUBLE, left, 9, MPI_COMM_WORLD, &r);
    MPI_Start(&r);
    MPI_Isend(dbuf, 4, MPI_DOUBLE, right, 9, MPI_COMM_WORLD, &s);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Wait(&s, MPI_STATUS_IGNORE);
    p2p += 32;
    MPI_Pcontrol(0);
    /* ... and started again outside it: not counted */
    MPI_Start(&r);
    MPI_Isend(dbuf, 4, MPI_DOUBLE, right, 9, MPI_COMM_WORLD, &s);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Wait(&s, MPI_STATUS_IGNORE);
    MPI_Request_free(&r);
    MPI_Pcontrol(1);
  }
  /* blocking receive on a ring: rank 0 sends first */
  if (me == 0) {
    MPI_Send(cbuf, 123, MPI_BYTE, right, 10, MPI_COMM_WORLD);
    MPI_Recv(cbuf + 200, 123, MPI_BYTE, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(cbuf + 200, 123, MPI_BYTE, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(cbuf, 123, MPI_BYTE, right, 10, MPI_COMM_WORLD);
  }
  p2p += 123;

  /* collectives */
  MPI_Bcast(dbuf, 100, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  coll += me == 0 ? 0 : 800;
  MPI_Reduce(dbuf, dbuf + 400, 10, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  coll += me == 0 ? (uint64_t)(p - 1) * 80 : 0;
  MPI_Allreduce(MPI_IN_PLACE, ibuf, 5, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  coll += 20;
  double* gat = (double*)calloc((size_t)p * 2, sizeof(double));
  MPI_Allgather(dbuf, 2, MPI_DOUBLE, gat, 2, MPI_DOUBLE, MPI_COMM_WORLD);
  coll += (uint64_t)(p - 1) * 16;
  int* a2a_s = (int*)calloc((size_t)p, sizeof(int));
  int* a2a_r = (int*)calloc((size_t)p, sizeof(int));
  MPI_Alltoall(a2a_s, 1, MPI_INT, a2a_r, 1, MPI_INT, MPI_COMM_WORLD);
  coll += (uint64_t)(p - 1) * 4;
  int* counts = (int*)malloc(sizeof(int) * (size_t)p);
  int* displs = (int*)malloc(sizeof(int) * (size_t)p);
  int total = 0;
  for (int i = 0; i < p; ++i) { counts[i] = i + 1; displs[i] = total; total += i + 1; }
  int* gv = (int*)calloc((size_t)total, sizeof(int));
  MPI_Gatherv(ibuf, me + 1, MPI_INT, gv, counts, displs, MPI_INT, 1, MPI_COMM_WORLD);
  coll += me == 1 ? (uint64_t)(total - 2) * 4 : 0;
  MPI_Scatter(gat, 1, MPI_DOUBLE, dbuf + 500, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  coll += me == 0 ? 0 : 8;
  MPI_Pcontrol(0);

  /* After the window: not counted. */
  MPI_Allreduce(MPI_IN_PLACE, dbuf, 1000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Sendrecv(cbuf, 700, MPI_BYTE, right, 11, cbuf + 1000, 700, MPI_BYTE, left, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

  /* The expected figures, as the counter reduces them (max and mean over ranks). */
  uint64_t mine[3] = {p2p, coll, p2p + coll}, mx[3], sum[3];
  PMPI_Reduce(mine, mx, 3, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
  PMPI_Reduce(mine, sum, 3, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0) {
    printf("{\"tool\":\"mpi_counter_selftest\",\"np\":%d,\"p2p_max_MB\":%.6g,\"p2p_mean_MB\":%.6g,"
           "\"coll_max_MB\":%.6g,\"total_max_MB\":%.6g}\n",
           p, mx[0] * 1e-6, sum[0] * 1e-6 / p, mx[1] * 1e-6, mx[2] * 1e-6);
    fflush(stdout);
  }
  free(gat); free(a2a_s); free(a2a_r); free(counts); free(displs); free(gv);
  MPI_Finalize();
  return 0;
}
