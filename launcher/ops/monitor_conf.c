/* The monitor's options from the config file ([monitor]; --metrics/--prom arrive through conf_set). */
#include "launcher/conf/conf.h"
#include "launcher/ops/monitor.h"

#include "common/util.h"

/* Kept apart from monitor.c so that the monitor library (gpl_ops) does not need conf.c. */
static const char *opt(const conf_t *c, const char *key) {
  const char *v = conf_str(c, "monitor", key);
  return v && *v ? v : NULL;
}

int mon_opts_from_conf(mon_opts_t *o, const conf_t *c) {
  mon_opts_default(o);
  if (!c) return 0;
  o->enabled = conf_bool(c, "monitor", "enabled");
  o->interval = conf_duration(c, "monitor", "interval");
  o->sm_threshold = conf_double(c, "monitor", "sm_threshold");
  o->window = conf_duration(c, "monitor", "window");
  o->replay = opt(c, "replay");
  o->metrics = opt(c, "metrics");
  o->prom = opt(c, "prom");
  return 0;
}
