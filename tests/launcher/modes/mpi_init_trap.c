/* LD_PRELOAD'ed into a job of one started alone: MPI_Init there is a bug (a singleton MPI_Init
 * needs the MPI runtime's daemons and hangs or fails where there are none, as on a GPU machine
 * without Open MPI), so the first call says so and ends the process with status 99. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

static void trapped(const char *fn) {
  fprintf(stderr, "mpi_init_trap: %s called in a job of one started alone\n", fn);
  fflush(stderr);
  _exit(99);
}

int MPI_Init(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  trapped("MPI_Init");
  return MPI_ERR_OTHER;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  (void)argc;
  (void)argv;
  (void)required;
  (void)provided;
  trapped("MPI_Init_thread");
  return MPI_ERR_OTHER;
}
