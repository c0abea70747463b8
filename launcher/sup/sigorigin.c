/* Who sent a signal: wraps the handler libuv installed with one that records siginfo first. */
#include "launcher/sup/sigorigin.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/util.h"

#define MAX_SIG 65

typedef struct slot_s {
  volatile sig_atomic_t pid, uid, code, seen;
  struct sigaction prev; /* libuv's handler, called after recording */
  int wrapped;
} slot_t;

static slot_t g_slots[MAX_SIG];

static void record(int signum, siginfo_t *si, void *uc) {
  slot_t *s = &g_slots[signum];
  if (si) {
    s->pid = si->si_pid;
    s->uid = (sig_atomic_t)si->si_uid;
    s->code = si->si_code;
  }
  s->seen = 1;
  if (s->prev.sa_flags & SA_SIGINFO) {
    if (s->prev.sa_sigaction) s->prev.sa_sigaction(signum, si, uc);
  } else if (s->prev.sa_handler != SIG_DFL && s->prev.sa_handler != SIG_IGN && s->prev.sa_handler) {
    s->prev.sa_handler(signum);
  }
}

int sigorigin_watch(int signum) {
  if (signum <= 0 || signum >= MAX_SIG) return GPL_EINVAL;
  slot_t *s = &g_slots[signum];
  struct sigaction cur, sa;
  SYSCHECK(sigaction(signum, NULL, &cur), "sigaction");
  if (s->wrapped && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == record) return GPL_OK;
  s->prev = cur;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = record;
  /* As libuv's own: restart system calls, block every signal while the handler runs. */
  sa.sa_flags = SA_SIGINFO | (cur.sa_flags & (SA_RESTART | SA_RESETHAND));
  sigfillset(&sa.sa_mask);
  SYSCHECK(sigaction(signum, &sa, NULL), "sigaction");
  s->wrapped = 1;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signum);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  return GPL_OK;
}

void sigorigin_get(int signum, sigorigin_t *out) {
  memset(out, 0, sizeof *out);
  if (signum <= 0 || signum >= MAX_SIG || !g_slots[signum].seen) return;
  out->pid = (pid_t)g_slots[signum].pid;
  out->uid = (uid_t)g_slots[signum].uid;
  out->code = (int)g_slots[signum].code;
  if (out->pid <= 0) return;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/comm", (int)out->pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, out->comm, sizeof out->comm - 1);
  close(fd);
  if (n <= 0) return;
  out->comm[n] = 0;
  if (out->comm[n - 1] == '\n') out->comm[n - 1] = 0;
}

void sigorigin_reset(void) {
  for (int i = 0; i < MAX_SIG; i++) {
    if (g_slots[i].wrapped) {
      struct sigaction cur;
      /* Put libuv's handler back only if ours is still the installed one. */
      if (sigaction(i, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == record)
        sigaction(i, &g_slots[i].prev, NULL);
    }
    memset(&g_slots[i], 0, sizeof g_slots[i]);
  }
}
