/* Which hosts the launcher can start a program on now: one bounded `true` per host, all at once. */
#ifndef GPL_LAUNCHER_FRONT_PROBE_H
#define GPL_LAUNCHER_FRONT_PROBE_H

#include "launcher/front/front_hosts.h"

/* Run `head... opts... --host H:1 -np 1 true` (srun: `... --overlap -N1 -n1 --nodelist=H true`)
 * for each of the n hosts at once (head: the launcher and gpulaunch-run's own options for it,
 * opts: the user's), up to 32 at once; one that failed is tried again after a pause (0.5 s,
 * doubled) while 3 s of the bound are left; ok[i] = 1 where one succeeded within timeout_s (the
 * bound for all of them). 0, or -1 when out of memory. */
int front_probe(char **head, int nhead, char **opts, int nopts, int srun, const front_host_t *hosts, int n,
                double timeout_s, int *ok);

#endif
