/* Fuzz target: the monitor's replay parser, one JSON line (mon_sample_from_json) and a whole file
 * through the replay source (a memfd: a regular file with no name on disk), then through a monitor
 * (its windows, the device memory headroom). Oracles: a sample's rank is -1 (every rank's) or a
 * real rank, never a wrapped one; its time axis is finite; the monitor's stats stay sane. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "launcher/monitor/monitor.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

static void check_sample(const mon_sample_t *s) {
  FUZZ_ASSERT(s->rank >= -1, "rank %d", s->rank);
  FUZZ_ASSERT(isfinite(s->t) && s->t >= 0, "t %g", s->t);
  FUZZ_ASSERT(s->nxid >= 0 && s->xid >= 0, "xid %d nxid %d", s->xid, s->nxid);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *line = fuzz_cstr(data, size);
  if (!line) return 0;
  mon_sample_t s;
  if (mon_sample_from_json(line, &s) == 0) check_sample(&s);
  free(line);

  int fd = memfd_create("fuzz-replay", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (write(fd, data, size) == (ssize_t)size) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    mon_source_t *src = NULL;
    if (mon_replay_open(path, 2, &src) == 0) {
      for (int i = 0; i < 100000; i++) {
        int rc = src->ops->read(src, &s);
        if (rc != 0) break;
        check_sample(&s);
        FUZZ_ASSERT(s.rank == -1 || s.rank == 2, "rank 2 was given a line of rank %d", s.rank);
      }
      src->ops->close(src);
    }
    /* the same file through a monitor: memory figures beyond the total, a total of 0, time going
     * backwards must not break the headroom's window */
    mon_opts_t o;
    mon_opts_default(&o);
    o.window = 10;
    o.mem_headroom = 5;
    o.off_level = LOG_LVL_INFO;
    monitor_t *m = NULL;
    if (mon_replay_open(path, 2, &src) == 0 && mon_create_with_source(&m, &o, 2, "h", 2, src) == 0) {
      log_set_level(LOG_LVL_ERROR); /* its warnings are not findings */
      mon_drain(m, 100000);
      log_set_level(LOG_LVL_WARN);
      mon_stats_t st;
      mon_stats(m, &st);
      FUZZ_ASSERT(st.mem_warned == 0 || st.mem_warned == 1, "mem_warned %d", st.mem_warned);
      FUZZ_ASSERT(st.warned == 0 || st.warned == 1, "warned %d", st.warned);
      mon_destroy(m);
    }
  }
  close(fd);
  return 0;
}
