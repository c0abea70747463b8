/* The supervisor's monitor hooks (sup_hooks_t) pointed at a monitor. */
#include "launcher/monitor/monitor.h"
#include "launcher/sup/supervise.h"

static void hook_tick(void *arg) { mon_tick(arg); }

static void hook_line(void *arg, int is_err, const char *line, size_t len) {
  (void)is_err; /* PyTorch prints the OOM on stderr, some launchers' wrappers on stdout */
  mon_note_line(arg, line, len);
}

static int hook_oom_seen(void *arg) { return mon_oom_seen(arg); }

static double hook_peak(void *arg) { return mon_peak_mem_mib(arg); }

static double hook_total(void *arg) { return mon_mem_total_mib(arg); }

static void hook_attempt(void *arg) { mon_new_attempt(arg); }

void mon_hooks_fill(struct sup_hooks_s *h, monitor_t *m) {
  h->arg = m;
  h->interval = mon_active(m) ? mon_interval(m) : 0;
  h->tick = hook_tick;
  h->line = hook_line;
  h->oom_seen = hook_oom_seen;
  h->peak_mem_mib = hook_peak;
  h->mem_total_mib = hook_total;
  h->new_attempt = hook_attempt;
}
