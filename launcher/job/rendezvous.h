/* Rank 0 picks MASTER_ADDR, MASTER_PORT and a run id, and shares them with every rank. */
#ifndef GPL_LAUNCHER_RENDEZVOUS_H
#define GPL_LAUNCHER_RENDEZVOUS_H

#include "launcher/job/job.h"

typedef struct rdv_s {
  char master_addr[64];
  int master_port;
  char run_id[40];
} rdv_t;

/* addr: the address of rank 0's node on the interface the job agreed on, or NULL to pick one
 * (the first routable IPv4 address of rank 0's host); a single-node job uses 127.0.0.1.
 * port: 0 picks a free port on rank 0's node. Bounded by job->timeout. */
int rdv_agree(const job_t *job, const char *addr, int port, rdv_t *out);

#endif
