/* Internal to common/mpix*.c: the one pace of every bounded wait on other ranks. */
#ifndef GPL_COMMON_MPIX_INT_H
#define GPL_COMMON_MPIX_INT_H

#include <mpi.h>

/* Between polls: yield for the first few milliseconds (exchanges complete in microseconds once
 * everyone is there, and oversubscribed ranks still get the CPU), then sleep, longer and longer
 * up to 2 ms, so that a long wait does not burn a core. Zero-initialise before the first poll. */
typedef struct mpix__nap_s {
  double start, nap;
} mpix__nap_t;
void mpix__nap(mpix__nap_t *z);

/* Poll until every request is done (1), the deadline passes (0) or MPI fails (-1). */
int mpix__wait_until(MPI_Request *reqs, int n, double deadline);

#endif
