/* Internal to the monitor files (monitor*.c): output helpers shared by the monitor and its tests. */
#ifndef GPL_LAUNCHER_MONITOR_INT_H
#define GPL_LAUNCHER_MONITOR_INT_H

#include <stddef.h>

#include "launcher/ops/monitor.h"

/* Expand %r (rank), %h (host) and %% in path. When prom_suffix is set and the path has no %r,
 * "-rank<N>" is inserted before a trailing ".prom" (or appended), so that ranks sharing a node do
 * not overwrite one another's textfile. Returns a malloc'd string or NULL. */
char *mon__expand_path(const char *path, int rank, const char *host, int prom_suffix);

/* Write the Prometheus textfile for one sample and the running stats: to path.tmp.<pid>, then
 * rename over path (node exporters never read a half-written file). 0 or GPL_ESYS. */
int mon__prom_write(const char *path, const mon_sample_t *s, const mon_stats_t *st,
                    double sm_threshold);

/* The monitor's under-use threshold, [monitor] sm_threshold (80 for NULL). */
double mon__threshold(const monitor_t *m);

/* Escape a Prometheus label value (backslash, double quote, newline) into out. */
void mon__prom_escape(const char *in, char *out, size_t len);

#endif
