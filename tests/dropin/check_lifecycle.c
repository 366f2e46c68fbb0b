/* tests/dropin/check_lifecycle.c — calls at the edges of a process's life, through the
 * drop-in's Fortran entries (run with PRISM_BLAS_ROUTE=prism, so prism computes them):
 *
 *   check_lifecycle exit-first   an exit handler registered before the first call; main
 *                                calls, then the handler calls (dgemm_ and dsyrk_)
 *   check_lifecycle exit-later   main calls, then registers the handler, which calls
 *   check_lifecycle destructor   main calls; a destructor function calls at the process's end
 *   check_lifecycle fork         a thread keeps calling while main forks 4 times, then main
 *                                calls and forks at once 4 times; each child calls (under a
 *                                20 s alarm) and exits
 *   check_lifecycle fork-first   a thread's first call, an invalid one, is still reading
 *                                the settings (PRISM_MACHINE is a FIFO not yet written) when
 *                                main forks; the child makes an invalid call, then calls and
 *                                exits; then the thread and main go on
 *   check_lifecycle cancel       a thread calling in a loop is cancelled (with PRISM_VERBOSE=1
 *                                its log lines are cancellation points), then one making
 *                                invalid calls (their messages are); main calls after
 *
 * Each call's inputs are small integers, so every sum is exact and C is compared with a
 * plain loop for equality. Prints "check_lifecycle MODE: N calls exact" per process and
 * exits 0, or names the first wrong element and exits 1. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*, const int*,
            const double*, const int*, const double*, double*, const int*, size_t, size_t);
void dsyrk_(const char*, const char*, const int*, const int*, const double*, const double*, const int*, const double*,
            double*, const int*, size_t, size_t);

static const char* mode = "";
static int calls = 0;

/* C = A^T B (k x m and k x n, entries (i + 3j) % 5 - 2) against a loop, then the lower
 * triangle of C2 = A^T A by dsyrk_; exits 1 on a wrong element. */
static void call_and_check(const char* who, int m, int n, int k) {
  double *A = malloc(sizeof(double) * (size_t)k * m), *B = malloc(sizeof(double) * (size_t)k * n);
  double *C = calloc((size_t)m * n, sizeof(double)), *S = calloc((size_t)m * m, sizeof(double));
  for (long i = 0; i < (long)k * m; ++i) A[i] = (double)((i + 3 * (i / k)) % 5 - 2);
  for (long i = 0; i < (long)k * n; ++i) B[i] = (double)((2 * i + i / k) % 5 - 2);
  const double one = 1, zero = 0;
  dgemm_("T", "N", &m, &n, &k, &one, A, &k, B, &k, &zero, C, &m, 1, 1);
  dsyrk_("L", "T", &m, &k, &one, A, &k, &zero, S, &m, 1, 1);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double want = 0, tri = 0;
      for (int l = 0; l < k; ++l) want += A[(long)i * k + l] * B[(long)j * k + l];
      if (C[i + (long)j * m] != want) {
        printf("check_lifecycle %s: %s: dgemm_ C(%d, %d) = %g, not %g\n", mode, who, i, j, C[i + (long)j * m], want);
        fflush(stdout);
        _exit(1);
      }
      if (j < m && i >= j) {
        for (int l = 0; l < k; ++l) tri += A[(long)i * k + l] * A[(long)j * k + l];
        if (S[i + (long)j * m] != tri) {
          printf("check_lifecycle %s: %s: dsyrk_ C(%d, %d) = %g, not %g\n", mode, who, i, j, S[i + (long)j * m], tri);
          fflush(stdout);
          _exit(1);
        }
      }
    }
  free(A), free(B), free(C), free(S);
  calls += 2;
}

static void at_exit(void) {
  call_and_check("exit handler", 64, 64, 20000);
  printf("check_lifecycle %s: %d calls exact\n", mode, calls);
  fflush(stdout);
}

static int in_destructor = 0;
__attribute__((destructor)) static void last_words(void) {
  if (!in_destructor) return;
  call_and_check("destructor", 64, 64, 20000);
  printf("check_lifecycle %s: %d calls exact\n", mode, calls);
  fflush(stdout);
}

static volatile int stop = 0;
/* A thread whose calls are all invalid (lda 1 < m 4): each prints reference XERBLA's line,
 * whose write is a cancellation point; its loop has none of its own until told to stop. */
static volatile int stop_invalid = 0;
static void* invalid(void* arg) {
  (void)arg;
  int m = 4, n = 4, k = 4, bad = 1;
  double A[16] = {0}, B[16] = {0}, C[16] = {0};
  const double one = 1;
  while (!stop_invalid) dgemm_("N", "N", &m, &n, &k, &one, A, &bad, B, &k, &one, C, &m, 1, 1);
  pthread_testcancel();
  return NULL;
}

/* A first call, invalid (m = -1): it reads the settings, then reports m. */
static void* first_invalid(void* arg) {
  (void)arg;
  int m = -1, n = 4, k = 4;
  double A[16] = {0}, C[16] = {0};
  const double one = 1;
  dgemm_("N", "N", &m, &n, &k, &one, A, &k, A, &k, &one, C, &k, 1, 1);
  return NULL;
}

/* Forks; the child calls (after an invalid call when invalid_first) and exits. Returns 0
 * when the child exited 0. */
static int invalid_first = 0;
static int fork_and_call(int f) {
  const pid_t child = fork();
  if (child == 0) {
    alarm(20);
    if (invalid_first) first_invalid(NULL);
    calls = 0;
    call_and_check("forked child", 8, 8, 50000);
    printf("check_lifecycle %s: child %d: %d calls exact\n", mode, f, calls);
    fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  printf("check_lifecycle %s: child %d ended %s %d\n", mode, f, WIFSIGNALED(status) ? "by signal" : "with",
         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  return 1;
}
static void free_all(void* p) {
  double** v = p;
  free(v[0]), free(v[1]), free(v[2]);
}
static void* busy(void* arg) {
  (void)arg;
  int m = 64, n = 64, k = 40000;
  double* v[3] = {calloc((size_t)m * k, sizeof(double)), calloc((size_t)n * k, sizeof(double)),
                  calloc((size_t)m * n, sizeof(double))};
  const double one = 1, zero = 0;
  pthread_cleanup_push(free_all, v); /* (freed when cancelled too) */
  while (!stop) {
    dgemm_("T", "N", &m, &n, &k, &one, v[0], &k, v[1], &k, &zero, v[2], &m, 1, 1);
    pthread_testcancel();
  }
  pthread_cleanup_pop(1);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  mode = argv[1];
  if (!strcmp(mode, "exit-first")) {
    atexit(at_exit);
    call_and_check("main", 64, 64, 20000);
  } else if (!strcmp(mode, "exit-later")) {
    call_and_check("main", 64, 64, 20000);
    atexit(at_exit);
  } else if (!strcmp(mode, "destructor")) {
    call_and_check("main", 64, 64, 20000);
    in_destructor = 1;
  } else if (!strcmp(mode, "fork")) {
    call_and_check("main", 8, 8, 50000);
    pthread_t t;
    pthread_create(&t, NULL, busy, NULL);
    usleep(100000);
    for (int f = 0; f < 4; ++f) {
      usleep(37000);
      if (fork_and_call(f)) return 1;
    }
    stop = 1;
    pthread_join(t, NULL);
    for (int f = 4; f < 8; ++f) {  /* right after a call: prism's threads may still be leaving */
      call_and_check("main", 64, 64, 40000);
      if (fork_and_call(f)) return 1;
    }
    printf("check_lifecycle %s: %d calls exact\n", mode, calls);
  } else if (!strcmp(mode, "fork-first")) {
    char dir[] = "/tmp/check_lifecycle.XXXXXX", path[64];
    if (!mkdtemp(dir)) return 2;
    snprintf(path, sizeof path, "%s/machine", dir);
    if (mkfifo(path, 0600) != 0) {
      rmdir(dir);
      return 2;
    }
    setenv("PRISM_MACHINE", path, 1);
    pthread_t t;
    pthread_create(&t, NULL, first_invalid, NULL);
    int w = -1; /* opens once the thread has the FIFO open to read: it is inside the settings' reading */
    for (int tries = 0; w < 0 && tries < 20000; ++tries)
      if ((w = open(path, O_WRONLY | O_NONBLOCK)) < 0) usleep(1000);
    if (w < 0) {
      printf("check_lifecycle %s: the first call never opened PRISM_MACHINE\n", mode);
      return 1;
    }
    usleep(20000);
    invalid_first = 1;
    const int failed = fork_and_call(0);
    close(w); /* the thread reads an empty machine file, says so, and reports its m */
    pthread_join(t, NULL);
    unlink(path), rmdir(dir);
    if (failed) return 1;
    call_and_check("main", 64, 64, 20000);
    printf("check_lifecycle %s: %d calls exact\n", mode, calls);
  } else if (!strcmp(mode, "cancel")) {
    pthread_t t;
    pthread_create(&t, NULL, busy, NULL);
    usleep(300000);
    pthread_cancel(t);
    void* result = NULL;
    pthread_join(t, &result);
    if (result != PTHREAD_CANCELED) {
      printf("check_lifecycle %s: the thread was not cancelled\n", mode);
      return 1;
    }
    fflush(stdout), fflush(stderr);  /* its lines (the bound xerbla_'s, or prism's) go nowhere */
    const int out = dup(1), err = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 1), dup2(null, 2);
    pthread_create(&t, NULL, invalid, NULL);
    usleep(20000);
    pthread_cancel(t);
    usleep(50000); /* its calls go on: cancelled inside one, the process would end */
    stop_invalid = 1;
    pthread_join(t, &result);
    fflush(stdout), fflush(stderr);
    dup2(out, 1), dup2(err, 2);
    close(null), close(out), close(err);
    if (result != PTHREAD_CANCELED) {
      printf("check_lifecycle %s: the thread making invalid calls was not cancelled\n", mode);
      return 1;
    }
    call_and_check("main", 64, 64, 20000);
    printf("check_lifecycle %s: %d calls exact\n", mode, calls);
  } else {
    return 2;
  }
  return 0;
}
