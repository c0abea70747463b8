/* The elastic controller's claims (elastic_claims.c), inside launcher/front only: who named which
 * hosts lost, in words and in the restarts' record. */
#ifndef GPL_LAUNCHER_FRONT_ELASTIC_CLAIMS_H
#define GPL_LAUNCHER_FRONT_ELASTIC_CLAIMS_H

#include <stddef.h>

#include "launcher/front/elastic_core.h"

/* "host h1 named h2, h3, h4 lost; mpirun on h0 lost its daemon on h1" in out, and each claimant's
 * {by, rank0, launcher, lost: [...]} appended to the cJSON array arr (NULL: words only). */
void ecore_describe_claims(const ecore_claim_t *claims, int nclaims, char *out, size_t len, void *arr);

/* Appends word to a ", "-separated list in buf (when there is room). */
void ecore_add_word(char *buf, size_t len, const char *word);

#endif
