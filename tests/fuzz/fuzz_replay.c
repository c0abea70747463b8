/* Fuzz target: the monitor's replay parser, one JSON line (mon_sample_from_json) and a whole file
 * through the replay source (a memfd: a regular file with no name on disk). Oracles: a sample's
 * rank is -1 (every rank's) or a real rank, never a wrapped one; its time axis is finite. */
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
  char *line = malloc(size + 1);
  if (!line) return 0;
  memcpy(line, data, size);
  line[size] = 0;
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
  }
  close(fd);
  return 0;
}
