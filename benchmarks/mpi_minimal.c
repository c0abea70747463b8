/* The smallest MPI program: init, barrier, finalize. The start-up baseline that
 * `mpirun -np 4 gpulaunch -- /bin/true` is compared with (run_startup.sh). */
#include <mpi.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
