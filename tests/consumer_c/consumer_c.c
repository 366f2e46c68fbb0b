/* tests/consumer_c/consumer_c.c — links prism::prism_scalapack from C and runs: pdgemm_ is
 * the drop-in's (its address taken, so the link keeps the library), MPI starts and stops. */
#include <mpi.h>
#include <stdio.h>

void pdgemm_(void);

int main(int argc, char** argv) {
  void (*volatile entry)(void) = pdgemm_;
  MPI_Init(&argc, &argv);
  printf("consumer_c: ok (pdgemm_ %s)\n", entry != 0 ? "linked" : "missing");
  MPI_Finalize();
  return 0;
}
