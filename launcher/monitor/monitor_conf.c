/* The monitor's options from the config file ([monitor]; --metrics/--prom arrive through conf_set). */
#include "launcher/conf/conf.h"
#include "launcher/monitor/monitor.h"

#include <stdlib.h>

#include "common/util.h"

/* Kept apart from monitor.c so that the monitor library (gpl_ops) does not need conf.c. */
static const char *opt(const char *v) {
  return v && *v ? v : NULL;
}

int mon_opts_from_conf(mon_opts_t *o, const conf_t *c) {
  mon_opts_default(o);
  if (!c) return 0;
  o->enabled = c->monitor.enabled;
  o->interval = c->monitor.interval;
  o->sm_threshold = c->monitor.sm_threshold;
  o->window = c->monitor.window;
  o->replay = opt(c->monitor.replay);
  o->metrics = opt(c->monitor.metrics);
  o->prom = opt(c->monitor.prom);
  /* an ENUM of octal modes ("0644"): the schema allows only those */
  o->prom_mode = (unsigned)strtoul(c->monitor.prom_mode, NULL, 8);
  o->mem_headroom = c->monitor.mem_headroom;
  o->job = util_sched_job_id(); /* the textfile's job label: the same id on every rank */
  return 0;
}
