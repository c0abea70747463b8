/* What the accept files that talk MPI share: a bounded wait on one request. */
#ifndef GPL_LAUNCHER_ACCEPT_MPI_INT_H
#define GPL_LAUNCHER_ACCEPT_MPI_INT_H

#include <mpi.h>

/* Wait for one request until timeout seconds have passed: poll, then poll with short naps (a
 * sleeping rank leaves a shared core to the others); a timeout names the ranks that did not
 * answer in what. 0 or a negative code (accept_measure.c). */
int accept_wait_req(MPI_Request *r, MPI_Comm comm, double timeout, const char *what);

#endif
