/* The elastic controller's claims (elastic_claims.c), inside launcher/front only: who named which
 * hosts lost, in words and in the restarts' record. */
#ifndef GPL_LAUNCHER_FRONT_ELASTIC_CLAIMS_H
#define GPL_LAUNCHER_FRONT_ELASTIC_CLAIMS_H

#include <stddef.h>

#include "launcher/front/elastic_core.h"

/* "host h1 named h2, h3, h4 lost; mpirun on h0 lost its daemon on h1" in out, and each claimant's
 * {by, rank0, launcher, lost: [...]} appended to the cJSON array arr (NULL: words only). */
void ecore_describe_claims(const ecore_claim_t *claims, int nclaims, char *out, size_t len, void *arr);

/* One line of the launcher's stderr: 1 and the host in host[len] when it is Open MPI's (ORTE's,
 * PRRTE's) word that it lost that host's daemon, which comes as
 *   ORTE has lost communication with a remote daemon.
 *     HNP daemon   : [[64397,0],0] on node h0
 *     Remote daemon: [[64397,0],1] on node h1
 * else 0. *state (0 at first) carries the lines in between. */
int ecore_launcher_line(int *state, const char *line, char *host, size_t len);

/* Appends word to a ", "-separated list in buf (when there is room). */
void ecore_add_word(char *buf, size_t len, const char *word);

#endif
