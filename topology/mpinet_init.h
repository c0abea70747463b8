/* Open MPI's TCP interfaces chosen before MPI_Init (topology/mpinet.h's rule over every host's inventory, exchanged over PMIx). */
#ifndef GPL_TOPOLOGY_MPINET_INIT_H
#define GPL_TOPOLOGY_MPINET_INIT_H

#include "topology/mpinet.h"

/** Call before MPI_Init. Unless the user set btl_tcp_if_include/exclude (mpinet_user: kept),
 * every host's inventory is exchanged over the launcher's PMIx server (one fence bounded by
 * \p timeout; each host's local rank 0 sends) and mpinet_from_job decides for this \p host;
 * without PMIx, or where no subnet is on every host, mpinet_from_local. The choice is set as
 * OMPI_MCA_btl_tcp_if_include (Open MPI reads it at MPI_Init) and said in one line (info on
 * \p rank 0, debug elsewhere). \return 0, or GPL_ETIMEDOUT when a rank did not arrive (said;
 * MPI_Init would wait for it too). */
int mpinet_init(const char *host, double timeout, int rank);
/** Each rank's host name as the PMIx server gave it (*n entries, NULL ones where unknown), or
 * NULL (*n = 0) without PMIx; valid until mpinet_init_free. */
const char *const *mpinet_init_hosts(int *n);
/** Call after MPI_Init: drops this module's use of PMIx (Open MPI holds its own). */
void mpinet_init_done(void);
/** Frees the host names (mpinet_init_hosts). */
void mpinet_init_free(void);
/** The choice mpinet_init made (how = MPINET_NONE before it ran). */
const mpinet_choice_t *mpinet_init_choice(void);

#endif
