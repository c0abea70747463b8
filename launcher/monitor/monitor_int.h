/* Internal to the monitor files (monitor*.c): output helpers shared by the monitor and its tests. */
#ifndef GPL_LAUNCHER_MONITOR_INT_H
#define GPL_LAUNCHER_MONITOR_INT_H

#include <stddef.h>

#include "launcher/monitor/monitor.h"

/* Expand %r (rank), %h (host) and %% in path. When prom_suffix is set and the path has no %r,
 * "-rank<N>" is inserted before a trailing ".prom" (or appended), so that ranks sharing a node do
 * not overwrite one another's textfile. Returns a malloc'd string or NULL. */
char *mon__expand_path(const char *path, int rank, const char *host, int prom_suffix);

/* What the textfile's labels say beyond the stats' rank and host: the GPU's identity (NULL or
 * index -1: unknown, gpu is then the stats' index and UUID, pci_bus_id, modelName are empty) and
 * the job id (NULL: ""). */
typedef struct mon_prom_id_s {
  const mon_ident_t *gpu;
  const char *job;
  unsigned mode; /* the file's mode (0: 0644) */
} mon_prom_id_t;

/* Write the Prometheus textfile for one sample and the running stats, in dcgm-exporter's names
 * and labels where DCGM has the measure (see monitor_out.c): to a fresh temporary file, then
 * rename over path (node exporters never read a half-written file), mode id->mode; the folder
 * may be node_exporter's textfile folder, writable through a group (safefile_replace). id may be
 * NULL. 0, or a negative code with why in err. */
int mon__prom_write(const char *path, const mon_sample_t *s, const mon_stats_t *st,
                    double sm_threshold, const mon_prom_id_t *id, char *err, size_t errlen);

/* The monitor's under-use threshold, [monitor] sm_threshold (80 for NULL). */
double mon__threshold(const monitor_t *m);

/* Escape a Prometheus label value (backslash, double quote, newline) into out. */
void mon__prom_escape(const char *in, char *out, size_t len);

#endif
