/* bench/dist/mpi_counter.c: a PMPI counter of the bytes each rank RECEIVES, to be
 * LD_PRELOADed into any MPI program (bench/dist/README.md):
 *
 *   mpirun -np 4 -x LD_PRELOAD=build/bench/libprism_mpi_counter.so prog ...
 *
 * (pass LD_PRELOAD with -x, so that it reaches the ranks and not mpirun itself).
 *
 * Point-to-point (p2p): what a receive actually got, MPI_Get_count(status, MPI_BYTE) on its
 * status (so derived datatypes such as BLACS's count their data bytes, not their extent):
 * MPI_Recv, MPI_Sendrecv, MPI_Sendrecv_replace, MPI_Mrecv, and MPI_Irecv / MPI_Imrecv /
 * MPI_Recv_init+MPI_Start completed by MPI_Wait, Waitall, Waitany, Waitsome, Test, Testall,
 * Testany or Testsome. Pending receive requests are kept in a hash table; a status the
 * caller ignores (MPI_STATUS(ES)_IGNORE) is replaced by our own.
 *
 * Collectives (coll), by the usual model of what reaches this rank (count x type size), on
 * intracommunicators of size P, me = this rank, s = type size in bytes:
 *   Bcast: non-root count*s; Reduce: root (P-1)*count*s; Allreduce: count*s;
 *   Allgather: (P-1)*recvcount*s; Allgatherv: sum of the others' recvcounts * s;
 *   Gather / Gatherv: root, as Allgather / Allgatherv; Scatter / Scatterv: non-root recvcount*s;
 *   Alltoall: (P-1)*recvcount*s; Alltoallv: sum of recvcounts except mine * s;
 *   Reduce_scatter(_block): (P-1)*my recvcount*s; Scan / Exscan: count*s (not rank 0 for Exscan).
 * Intercommunicator collectives are not counted; their calls are reported ("inter_coll_calls").
 * Nonblocking and neighbourhood collectives, one-sided and the Fortran bindings (which call
 * PMPI_ directly in Open MPI) are not intercepted.
 *
 * Window: if the program ever calls MPI_Pcontrol, only traffic between MPI_Pcontrol(level != 0)
 * and MPI_Pcontrol(0) is reported (a nonblocking receive counts when it was posted inside the
 * window); otherwise the whole run. At MPI_Finalize the counts are reduced over MPI_COMM_WORLD
 * and world rank 0 prints one line to stderr (MB = 1e6 bytes):
 *
 *   mpi-counter: {"np":4,"window":"pcontrol","p2p_max_MB":..,"p2p_mean_MB":..,"coll_max_MB":..,
 *                 "coll_mean_MB":..,"total_max_MB":..,"total_mean_MB":..,"p2p_msgs_max":..,
 *                 "coll_calls_max":..,"inter_coll_calls":..,"total_MB_per_rank":[..]}
 *
 * total = p2p + coll per rank; total_max_MB is the largest per-rank total (not p2p_max + coll_max).
 * PRISM_MPI_COUNTER_OUT=FILE also appends that JSON (without the prefix) to FILE.
 * prism_mpi_counter_totals() gives a program its rank's counts so far (dlsym it).
 * Thread safety: one mutex around the counters and the table, so MPI_THREAD_MULTIPLE works.
 */
#include <mpi.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The two accumulators: the whole run, and the Pcontrol window. */
typedef struct {
  uint64_t p2p_bytes, coll_bytes, p2p_msgs, coll_calls;
} counts_t;

static counts_t g_whole, g_window;
static int g_window_on = 0;     /* inside MPI_Pcontrol(!= 0) ... MPI_Pcontrol(0) */
static int g_pcontrol_seen = 0; /* the program called MPI_Pcontrol at least once */
static uint64_t g_inter_coll = 0;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- pending receive requests: open addressing, linear probing, tombstones ---- */

typedef struct {
  uint64_t key;   /* the MPI_Request handle's bits; 0 = empty */
  int state;      /* 0 empty, 1 used, 2 deleted */
  int persistent; /* from MPI_Recv_init: stays after completion */
  int in_window;  /* posted (or started) while the Pcontrol window was on */
} slot_t;

static slot_t* g_slots = NULL;
static size_t g_cap = 0, g_used = 0, g_filled = 0; /* filled = used + deleted */

/* Returns the bits of a request handle as a 64-bit key (pointer in Open MPI, int in MPICH). */
static uint64_t key_of(MPI_Request r) {
  uint64_t k = 0;
  memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
  return k;
}

/* Mixes a key into a table index (splitmix64 finaliser). */
static size_t hash_of(uint64_t k) {
  k ^= k >> 30; k *= 0xbf58476d1ce4e5b9ULL;
  k ^= k >> 27; k *= 0x94d049bb133111ebULL;
  return (size_t)(k ^ (k >> 31));
}

/* Finds the slot holding key, or NULL. Caller holds g_lock. */
static slot_t* table_find(uint64_t key) {
  if (g_cap == 0 || key == 0) return NULL;
  for (size_t i = hash_of(key) & (g_cap - 1), n = 0; n < g_cap; i = (i + 1) & (g_cap - 1), ++n) {
    if (g_slots[i].state == 0) return NULL;
    if (g_slots[i].state == 1 && g_slots[i].key == key) return &g_slots[i];
  }
  return NULL;
}

static void table_put(uint64_t key, int persistent, int in_window);

/* Doubles the table (or drops tombstones) and reinserts the live entries. Caller holds g_lock. */
static void table_grow(void) {
  slot_t* old = g_slots;
  size_t old_cap = g_cap;
  g_cap = old_cap == 0 ? 64 : (g_used * 2 + 1 > old_cap / 2 ? old_cap * 2 : old_cap);
  g_slots = (slot_t*)calloc(g_cap, sizeof(slot_t));
  if (g_slots == NULL) { fprintf(stderr, "mpi-counter: out of memory\n"); abort(); }
  g_used = g_filled = 0;
  for (size_t i = 0; i < old_cap; ++i)
    if (old[i].state == 1) table_put(old[i].key, old[i].persistent, old[i].in_window);
  free(old);
}

/* Records (or updates) a pending receive request. Caller holds g_lock. */
static void table_put(uint64_t key, int persistent, int in_window) {
  if (key == 0) return;
  slot_t* s = table_find(key);
  if (s != NULL) { s->persistent = persistent; s->in_window = in_window; return; }
  if ((g_filled + 1) * 4 > g_cap * 3) table_grow();
  size_t i = hash_of(key) & (g_cap - 1);
  while (g_slots[i].state == 1) i = (i + 1) & (g_cap - 1);
  if (g_slots[i].state == 0) ++g_filled;
  g_slots[i].key = key; g_slots[i].state = 1;
  g_slots[i].persistent = persistent; g_slots[i].in_window = in_window;
  ++g_used;
}

/* Removes a slot (leaves a tombstone). Caller holds g_lock. */
static void table_erase(slot_t* s) {
  s->state = 2; s->key = 0;
  --g_used;
}

/* ---- accounting ---- */

/* Bytes a completed receive got, from its status (0 when the count is undefined). */
static uint64_t status_bytes(const MPI_Status* st) {
  int n = 0;
  if (PMPI_Get_count(st, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED || n < 0) return 0;
  return (uint64_t)n;
}

/* Adds one received p2p message; in_window says whether the window counter takes it too. */
static void add_p2p(uint64_t bytes, int in_window) {
  pthread_mutex_lock(&g_lock);
  g_whole.p2p_bytes += bytes; g_whole.p2p_msgs += 1;
  if (in_window) { g_window.p2p_bytes += bytes; g_window.p2p_msgs += 1; }
  pthread_mutex_unlock(&g_lock);
}

/* Adds one collective call's received bytes (window = the current Pcontrol state). */
static void add_coll(uint64_t bytes) {
  pthread_mutex_lock(&g_lock);
  g_whole.coll_bytes += bytes; g_whole.coll_calls += 1;
  if (g_window_on) { g_window.coll_bytes += bytes; g_window.coll_calls += 1; }
  pthread_mutex_unlock(&g_lock);
}

/* The whole run's counts on this rank so far, for a program that measures one call at a time
 * (tests/scalapack/control_traffic.cpp finds it with dlsym): out = {p2p bytes, collective
 * bytes, p2p messages, collective calls}. */
void prism_mpi_counter_totals(uint64_t out[4]) {
  pthread_mutex_lock(&g_lock);
  out[0] = g_whole.p2p_bytes; out[1] = g_whole.coll_bytes;
  out[2] = g_whole.p2p_msgs; out[3] = g_whole.coll_calls;
  pthread_mutex_unlock(&g_lock);
}

/* Whether the Pcontrol window is on now. */
static int window_now(void) {
  pthread_mutex_lock(&g_lock);
  int on = g_window_on;
  pthread_mutex_unlock(&g_lock);
  return on;
}

/* Size in bytes of count elements of type (0 for MPI_DATATYPE_NULL or an error). */
static uint64_t type_bytes(MPI_Datatype type, int count) {
  int s = 0;
  if (type == MPI_DATATYPE_NULL || count <= 0 || PMPI_Type_size(type, &s) != MPI_SUCCESS || s < 0) return 0;
  return (uint64_t)s * (uint64_t)count;
}

/* Size and own rank of an intracommunicator; returns 0 (and counts the call) for an intercommunicator. */
static int intra_info(MPI_Comm comm, int* size, int* rank) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) {
    pthread_mutex_lock(&g_lock);
    ++g_inter_coll;
    pthread_mutex_unlock(&g_lock);
    return 0;
  }
  PMPI_Comm_size(comm, size);
  PMPI_Comm_rank(comm, rank);
  return 1;
}

/* Accounts a completed request whose handle (before completion) was key, status st. */
static void complete_request(uint64_t key, const MPI_Status* st) {
  if (key == 0) return;
  pthread_mutex_lock(&g_lock);
  slot_t* s = table_find(key);
  int counted = 0, in_window = 0;
  if (s != NULL) {
    counted = 1;
    in_window = s->in_window;
    if (!s->persistent) table_erase(s);
  }
  pthread_mutex_unlock(&g_lock);
  if (counted) add_p2p(status_bytes(st), in_window);
}

/* Whether entry i of a multi-completion succeeded (MPI_ERR_IN_STATUS leaves per-entry errors). */
static int entry_ok(int rc, const MPI_Status* st) {
  return rc == MPI_SUCCESS || (rc == MPI_ERR_IN_STATUS && st->MPI_ERROR == MPI_SUCCESS);
}

/* Copies the keys of n requests (before a completion call overwrites them with MPI_REQUEST_NULL). */
static uint64_t* keys_of(int n, const MPI_Request* reqs, uint64_t* small, int small_n) {
  uint64_t* keys = n <= small_n ? small : (uint64_t*)malloc(sizeof(uint64_t) * (size_t)n);
  if (keys == NULL) { fprintf(stderr, "mpi-counter: out of memory\n"); abort(); }
  for (int i = 0; i < n; ++i) keys[i] = key_of(reqs[i]);
  return keys;
}

/* Returns the caller's status array or a scratch one when it passed MPI_STATUSES_IGNORE. */
static MPI_Status* statuses_for(int n, MPI_Status* given, MPI_Status* small, int small_n) {
  if (given != MPI_STATUSES_IGNORE) return given;
  MPI_Status* st = n <= small_n ? small : (MPI_Status*)malloc(sizeof(MPI_Status) * (size_t)(n > 0 ? n : 1));
  if (st == NULL) { fprintf(stderr, "mpi-counter: out of memory\n"); abort(); }
  return st;
}

/* ---- point to point ---- */

/* MPI_Recv: counts what arrived. */
int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  int rc = PMPI_Recv(buf, count, type, source, tag, comm, st);
  if (rc == MPI_SUCCESS) add_p2p(status_bytes(st), window_now());
  return rc;
}

/* MPI_Mrecv: counts what arrived (matched-probe receive). */
int MPI_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status) {
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  int rc = PMPI_Mrecv(buf, count, type, message, st);
  if (rc == MPI_SUCCESS) add_p2p(status_bytes(st), window_now());
  return rc;
}

/* MPI_Sendrecv: counts the receive half. */
int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  int rc = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                         comm, st);
  if (rc == MPI_SUCCESS) add_p2p(status_bytes(st), window_now());
  return rc;
}

/* MPI_Sendrecv_replace: counts the receive half. */
int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag, int source, int recvtag,
                         MPI_Comm comm, MPI_Status* status) {
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  int rc = PMPI_Sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm, st);
  if (rc == MPI_SUCCESS) add_p2p(status_bytes(st), window_now());
  return rc;
}

/* MPI_Irecv: remembers the request until a Wait/Test completes it. */
int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* request) {
  int rc = PMPI_Irecv(buf, count, type, source, tag, comm, request);
  if (rc == MPI_SUCCESS) {
    pthread_mutex_lock(&g_lock);
    table_put(key_of(*request), 0, g_window_on);
    pthread_mutex_unlock(&g_lock);
  }
  return rc;
}

/* MPI_Imrecv: remembers the request until a Wait/Test completes it. */
int MPI_Imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Request* request) {
  int rc = PMPI_Imrecv(buf, count, type, message, request);
  if (rc == MPI_SUCCESS) {
    pthread_mutex_lock(&g_lock);
    table_put(key_of(*request), 0, g_window_on);
    pthread_mutex_unlock(&g_lock);
  }
  return rc;
}

/* MPI_Recv_init: remembers the persistent receive (its window flag is set at MPI_Start). */
int MPI_Recv_init(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* request) {
  int rc = PMPI_Recv_init(buf, count, type, source, tag, comm, request);
  if (rc == MPI_SUCCESS) {
    pthread_mutex_lock(&g_lock);
    table_put(key_of(*request), 1, g_window_on);
    pthread_mutex_unlock(&g_lock);
  }
  return rc;
}

/* Marks a started persistent receive as inside or outside the window. Caller holds no lock. */
static void mark_started(MPI_Request r) {
  pthread_mutex_lock(&g_lock);
  slot_t* s = table_find(key_of(r));
  if (s != NULL) s->in_window = g_window_on;
  pthread_mutex_unlock(&g_lock);
}

/* MPI_Start: a persistent receive's window is the one it starts in. */
int MPI_Start(MPI_Request* request) {
  int rc = PMPI_Start(request);
  if (rc == MPI_SUCCESS) mark_started(*request);
  return rc;
}

/* MPI_Startall: as MPI_Start for each request. */
int MPI_Startall(int count, MPI_Request reqs[]) {
  int rc = PMPI_Startall(count, reqs);
  if (rc == MPI_SUCCESS)
    for (int i = 0; i < count; ++i) mark_started(reqs[i]);
  return rc;
}

/* MPI_Request_free: forgets the request (its data, if any, is not counted). */
int MPI_Request_free(MPI_Request* request) {
  uint64_t key = key_of(*request);
  int rc = PMPI_Request_free(request);
  pthread_mutex_lock(&g_lock);
  slot_t* s = table_find(key);
  if (s != NULL) table_erase(s);
  pthread_mutex_unlock(&g_lock);
  return rc;
}

/* MPI_Wait: counts the request if it was a receive. */
int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  uint64_t key = key_of(*request);
  int rc = PMPI_Wait(request, st);
  if (rc == MPI_SUCCESS) complete_request(key, st);
  return rc;
}

/* MPI_Test: counts the request if it completed and was a receive. */
int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  uint64_t key = key_of(*request);
  int rc = PMPI_Test(request, flag, st);
  if (rc == MPI_SUCCESS && *flag) complete_request(key, st);
  return rc;
}

/* MPI_Waitany: counts the completed request if it was a receive. */
int MPI_Waitany(int count, MPI_Request reqs[], int* index, MPI_Status* status) {
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  uint64_t small[64];
  uint64_t* keys = keys_of(count, reqs, small, 64);
  int rc = PMPI_Waitany(count, reqs, index, st);
  if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED) complete_request(keys[*index], st);
  if (keys != small) free(keys);
  return rc;
}

/* MPI_Testany: counts the completed request if it was a receive. */
int MPI_Testany(int count, MPI_Request reqs[], int* index, int* flag, MPI_Status* status) {
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  uint64_t small[64];
  uint64_t* keys = keys_of(count, reqs, small, 64);
  int rc = PMPI_Testany(count, reqs, index, flag, st);
  if (rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED) complete_request(keys[*index], st);
  if (keys != small) free(keys);
  return rc;
}

/* MPI_Waitall: counts every receive among the requests. */
int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status* statuses) {
  uint64_t small[64];
  MPI_Status small_st[64];
  uint64_t* keys = keys_of(count, reqs, small, 64);
  MPI_Status* st = statuses_for(count, statuses, small_st, 64);
  int rc = PMPI_Waitall(count, reqs, st);
  if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS)
    for (int i = 0; i < count; ++i)
      if (entry_ok(rc, &st[i])) complete_request(keys[i], &st[i]);
  if (keys != small) free(keys);
  if (st != statuses && st != small_st) free(st);
  return rc;
}

/* MPI_Testall: counts every receive among the requests when all completed. */
int MPI_Testall(int count, MPI_Request reqs[], int* flag, MPI_Status statuses[]) {
  uint64_t small[64];
  MPI_Status small_st[64];
  uint64_t* keys = keys_of(count, reqs, small, 64);
  MPI_Status* st = statuses_for(count, statuses, small_st, 64);
  int rc = PMPI_Testall(count, reqs, flag, st);
  if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && *flag)
    for (int i = 0; i < count; ++i)
      if (entry_ok(rc, &st[i])) complete_request(keys[i], &st[i]);
  if (keys != small) free(keys);
  if (st != statuses && st != small_st) free(st);
  return rc;
}

/* Shared body of MPI_Waitsome / MPI_Testsome: counts the completed receives. */
static void complete_some(int rc, int outcount, const int* indices, const uint64_t* keys, const MPI_Status* st) {
  if ((rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) || outcount == MPI_UNDEFINED) return;
  for (int j = 0; j < outcount; ++j)
    if (entry_ok(rc, &st[j])) complete_request(keys[indices[j]], &st[j]);
}

/* MPI_Waitsome: counts the completed receives. */
int MPI_Waitsome(int incount, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]) {
  uint64_t small[64];
  MPI_Status small_st[64];
  uint64_t* keys = keys_of(incount, reqs, small, 64);
  MPI_Status* st = statuses_for(incount, statuses, small_st, 64);
  int rc = PMPI_Waitsome(incount, reqs, outcount, indices, st);
  complete_some(rc, *outcount, indices, keys, st);
  if (keys != small) free(keys);
  if (st != statuses && st != small_st) free(st);
  return rc;
}

/* MPI_Testsome: counts the completed receives. */
int MPI_Testsome(int incount, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]) {
  uint64_t small[64];
  MPI_Status small_st[64];
  uint64_t* keys = keys_of(incount, reqs, small, 64);
  MPI_Status* st = statuses_for(incount, statuses, small_st, 64);
  int rc = PMPI_Testsome(incount, reqs, outcount, indices, st);
  complete_some(rc, *outcount, indices, keys, st);
  if (keys != small) free(keys);
  if (st != statuses && st != small_st) free(st);
  return rc;
}

/* ---- collectives ---- */

/* MPI_Bcast: every rank but the root receives count elements. */
int MPI_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  int rc = PMPI_Bcast(buf, count, type, root, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me)) add_coll(me == root ? 0 : type_bytes(type, count));
  return rc;
}

/* MPI_Reduce: the root receives P - 1 contributions. */
int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  int rc = PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me))
    add_coll(me == root ? (uint64_t)(p - 1) * type_bytes(type, count) : 0);
  return rc;
}

/* MPI_Allreduce: every rank receives count elements (the model's figure). */
int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  int rc = PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me)) add_coll(p > 1 ? type_bytes(type, count) : 0);
  return rc;
}

/* MPI_Reduce_scatter_block: each rank receives P - 1 contributions to its block. */
int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op,
                             MPI_Comm comm) {
  int rc = PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me)) add_coll((uint64_t)(p - 1) * type_bytes(type, recvcount));
  return rc;
}

/* MPI_Reduce_scatter: each rank receives P - 1 contributions to its block. */
int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm) {
  int rc = PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me)) add_coll((uint64_t)(p - 1) * type_bytes(type, recvcounts[me]));
  return rc;
}

/* MPI_Scan: each rank but 0 receives the prefix (count elements). */
int MPI_Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  int rc = PMPI_Scan(sendbuf, recvbuf, count, type, op, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me)) add_coll(me > 0 ? type_bytes(type, count) : 0);
  return rc;
}

/* MPI_Exscan: each rank but 0 receives the prefix (count elements). */
int MPI_Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  int rc = PMPI_Exscan(sendbuf, recvbuf, count, type, op, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me)) add_coll(me > 0 ? type_bytes(type, count) : 0);
  return rc;
}

/* Sum of counts[i] for i != me, times the type size. */
static uint64_t others_bytes(const int counts[], int p, int me, MPI_Datatype type) {
  uint64_t total = 0;
  for (int i = 0; i < p; ++i)
    if (i != me) total += type_bytes(type, counts[i]);
  return total;
}

/* MPI_Allgather: each rank receives the other P - 1 blocks. */
int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  int rc = PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me)) add_coll((uint64_t)(p - 1) * type_bytes(recvtype, recvcount));
  return rc;
}

/* MPI_Allgatherv: each rank receives the other ranks' blocks. */
int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  int rc = PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me)) add_coll(others_bytes(recvcounts, p, me, recvtype));
  return rc;
}

/* MPI_Gather: the root receives the other P - 1 blocks. */
int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  int rc = PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me))
    add_coll(me == root ? (uint64_t)(p - 1) * type_bytes(recvtype, recvcount) : 0);
  return rc;
}

/* MPI_Gatherv: the root receives the other ranks' blocks. */
int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  int rc = PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me))
    add_coll(me == root ? others_bytes(recvcounts, p, me, recvtype) : 0);
  return rc;
}

/* MPI_Scatter: every rank but the root receives its block. */
int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  int rc = PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me)) add_coll(me == root ? 0 : type_bytes(recvtype, recvcount));
  return rc;
}

/* MPI_Scatterv: every rank but the root receives its block. */
int MPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  int rc = PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me)) add_coll(me == root ? 0 : type_bytes(recvtype, recvcount));
  return rc;
}

/* MPI_Alltoall: each rank receives one block from each of the other P - 1. */
int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  int rc = PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me)) add_coll((uint64_t)(p - 1) * type_bytes(recvtype, recvcount));
  return rc;
}

/* MPI_Alltoallv: each rank receives recvcounts[i] from every other rank i. */
int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  int rc = PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  int p = 0, me = 0;
  if (rc == MPI_SUCCESS && intra_info(comm, &p, &me)) add_coll(others_bytes(recvcounts, p, me, recvtype));
  return rc;
}

/* ---- window and report ---- */

/* MPI_Pcontrol: level != 0 opens the counting window, 0 closes it. */
int MPI_Pcontrol(const int level, ...) {
  pthread_mutex_lock(&g_lock);
  g_pcontrol_seen = 1;
  g_window_on = level != 0;
  pthread_mutex_unlock(&g_lock);
  return MPI_SUCCESS;
}

/* MPI_Finalize: reduces the counts over MPI_COMM_WORLD, rank 0 prints the line, then finalises. */
int MPI_Finalize(void) {
  int rank = 0, np = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &np);
  pthread_mutex_lock(&g_lock);
  const counts_t c = g_pcontrol_seen ? g_window : g_whole;
  const int pcontrol = g_pcontrol_seen;
  const uint64_t inter = g_inter_coll;
  pthread_mutex_unlock(&g_lock);
  /* [p2p, coll, total, p2p msgs, coll calls, inter calls] */
  uint64_t mine[6] = {c.p2p_bytes, c.coll_bytes, c.p2p_bytes + c.coll_bytes, c.p2p_msgs, c.coll_calls, inter};
  uint64_t mx[6], sum[6];
  PMPI_Reduce(mine, mx, 6, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
  PMPI_Reduce(mine, sum, 6, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  uint64_t* totals = rank == 0 ? (uint64_t*)malloc(sizeof(uint64_t) * (size_t)np) : NULL;
  PMPI_Gather(&mine[2], 1, MPI_UINT64_T, totals, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    size_t cap = 512 + (size_t)np * 24, len = 0;
    char* line = (char*)malloc(cap);
    if (line != NULL) {
      len += (size_t)snprintf(line + len, cap - len,
                              "{\"np\":%d,\"window\":\"%s\",\"p2p_max_MB\":%.6g,\"p2p_mean_MB\":%.6g,"
                              "\"coll_max_MB\":%.6g,\"coll_mean_MB\":%.6g,\"total_max_MB\":%.6g,"
                              "\"total_mean_MB\":%.6g,\"p2p_msgs_max\":%llu,\"coll_calls_max\":%llu,"
                              "\"inter_coll_calls\":%llu,\"total_MB_per_rank\":[",
                              np, pcontrol ? "pcontrol" : "whole run", mx[0] * 1e-6, sum[0] * 1e-6 / np,
                              mx[1] * 1e-6, sum[1] * 1e-6 / np, mx[2] * 1e-6, sum[2] * 1e-6 / np,
                              (unsigned long long)mx[3], (unsigned long long)mx[4], (unsigned long long)sum[5]);
      for (int i = 0; i < np && len < cap; ++i)
        len += (size_t)snprintf(line + len, cap - len, "%s%.6g", i ? "," : "", totals[i] * 1e-6);
      if (len < cap) snprintf(line + len, cap - len, "]}");
      fprintf(stderr, "mpi-counter: %s\n", line);
      fflush(stderr);
      const char* out = getenv("PRISM_MPI_COUNTER_OUT");
      if (out != NULL && *out != '\0') {
        FILE* f = fopen(out, "a");
        if (f != NULL) {
          fprintf(f, "%s\n", line);
          fclose(f);
        } else {
          fprintf(stderr, "mpi-counter: cannot append to %s\n", out);
        }
      }
      free(line);
    }
    free(totals);
  }
  return PMPI_Finalize();
}
