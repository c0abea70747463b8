/* Which hosts the launcher can start a program on now: one bounded `true` per host, all at once. */
#ifndef GPL_LAUNCHER_FRONT_PROBE_H
#define GPL_LAUNCHER_FRONT_PROBE_H

#include "launcher/front/front_hosts.h"

/* Run `head... opts... --host H:1 -np 1 true` (srun: `... --overlap -N1 -n1 --nodelist=H true`)
 * for each of the n hosts at once (head: the launcher and gpulaunch-run's own options for it,
 * opts: the user's), and once more (for 2/3 of the time) for those that failed; ok[i] = 1 where
 * it succeeded within timeout_s. 0, or -1 when out of memory. */
int front_probe(char **head, int nhead, char **opts, int nopts, int srun, const front_host_t *hosts, int n,
                double timeout_s, int *ok);

#endif
