/* The reaper (gpulaunch-exec): parent and subreaper of the program; kills its whole tree when the
 * program ends, when gpulaunch asks, and when gpulaunch is gone however it died. */
#include "launcher/exec/reap.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

#define REAP_SIG (SIGRTMIN + 4)
#define REAP_MAGIC 0x47504c52 /* "GPLR" */
#define KILL_DEADLINE_S 5.0   /* a process in uninterruptible sleep may take a while to die */

int reap_request(pid_t reaper) {
  union sigval v;
  v.sival_int = REAP_MAGIC;
  return sigqueue(reaper, REAP_SIG, v);
}

typedef struct proc_s {
  pid_t pid, ppid;
  char state;
} proc_t;

/* Every process of /proc with its parent and state (what this user may see is enough: the tree
 * is ours). *n entries; the array is malloc'd. */
static proc_t *list_procs(int *n) {
  *n = 0;
  DIR *d = opendir("/proc");
  if (!d) return NULL;
  int cap = 256;
  proc_t *v = malloc((size_t)cap * sizeof *v);
  struct dirent *e;
  while (v && (e = readdir(d)) != NULL) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f) continue;
    size_t r = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[r] = 0;
    /* "pid (comm) S ppid ...": comm may hold spaces and parentheses, so from the last ')' */
    char *rp = strrchr(buf, ')');
    char st;
    long ppid;
    if (!rp || sscanf(rp + 1, " %c %ld", &st, &ppid) != 2) continue;
    if (*n == cap) {
      cap *= 2;
      proc_t *nv = realloc(v, (size_t)cap * sizeof *nv);
      if (!nv) break;
      v = nv;
    }
    v[(*n)++] = (proc_t){(pid_t)pid, (pid_t)ppid, st};
  }
  closedir(d);
  return v;
}

/* Every live descendant of root (not zombies), found in /proc: up to max pids into out; returns
 * how many there are (may be more than max). */
static int reap_descendants(pid_t root, pid_t *out, int max) {
  int n;
  proc_t *v = list_procs(&n);
  if (!v) return 0;
  /* in[i]: v[i] is in the tree; grown pass by pass until nothing is added */
  char *in = calloc((size_t)n + 1, 1);
  int found = 0, added = 1;
  while (in && added) {
    added = 0;
    for (int i = 0; i < n; i++) {
      if (in[i]) continue;
      int parent_in = v[i].ppid == root;
      for (int j = 0; !parent_in && j < n; j++) parent_in = in[j] && v[j].pid == v[i].ppid;
      if (!parent_in) continue;
      in[i] = 1;
      added = 1;
      if (v[i].state == 'Z' || v[i].state == 'X') continue; /* dead already: only to reap */
      if (found < max) out[found] = v[i].pid;
      found++;
    }
  }
  free(in);
  free(v);
  return found;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static pid_t g_prog;
static int g_prog_done, g_prog_status;

/* Collect every child that ended; note the program's status. */
static void reap_children(void) {
  int st;
  pid_t w;
  while ((w = waitpid(-1, &st, WNOHANG)) > 0)
    if (w == g_prog) g_prog_done = 1, g_prog_status = st;
}

/* SIGKILL every descendant, again and again (one may fork between our look and our kill), until
 * none is left or the deadline passes. Orphans come to us (subreaper), so none escapes. */
static void kill_tree(void) {
  enum { MAX = 4096 };
  static pid_t pids[MAX];
  double deadline = now_s() + KILL_DEADLINE_S;
  for (;;) {
    reap_children();
    int n = reap_descendants(getpid(), pids, MAX);
    if (n == 0 || now_s() > deadline) break;
    for (int i = 0; i < n && i < MAX; i++) kill(pids[i], SIGKILL);
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  reap_children();
}

/* End as the program ended: its exit code, or its signal (without a core of our own). */
static void exit_like(int st) {
  if (WIFEXITED(st)) _exit(WEXITSTATUS(st));
  int sig = WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
  struct rlimit no = {0, 0};
  setrlimit(RLIMIT_CORE, &no);
  prctl(PR_SET_DUMPABLE, 0);
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  sigprocmask(SIG_UNBLOCK, &one, NULL);
  raise(sig);
  _exit(128 + sig);
}

static void on_chld(int sig) { (void)sig; }

int reap_main(int argc, char **argv) {
  if (argc < 3) {
    log_print("gpulaunch-exec: used by gpulaunch to start programs; not meant to be run by hand\n");
    return 127;
  }
  pid_t parent = (pid_t)strtol(argv[1], NULL, 10);
  /* Every signal waits in sigtimedwait below; faults of our own still end us as they should. */
  sigset_t all, old;
  sigfillset(&all);
  static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
  for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) sigdelset(&all, faults[i]);
  sigprocmask(SIG_BLOCK, &all, &old);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_chld; /* not ignored: a pending SIGCHLD wakes sigtimedwait */
  sigaction(SIGCHLD, &sa, NULL);
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) perror("gpulaunch-exec: prctl(PR_SET_CHILD_SUBREAPER)");
  if (prctl(PR_SET_PDEATHSIG, SIGHUP) < 0) perror("gpulaunch-exec: prctl(PR_SET_PDEATHSIG)");
  /* The supervisor may have died between its fork and our prctl. */
  if (getppid() != parent) return 127;
  pid_t self = getpid();
  g_prog = fork();
  if (g_prog < 0) {
    log_print("gpulaunch: cannot start '%s': fork: %s\n", argv[2], strerror(errno));
    return 126;
  }
  if (g_prog == 0) {
    sa.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &sa, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    /* If we (the reaper) are SIGKILLed, the program goes too. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != self) _exit(127);
    /* Under Yama's ptrace_scope 1 only an ancestor may read a process's stacks: gpulaunch (our
     * parent; its py-spy/eu-stack/gdb are its children) may read the program's, for the hang
     * watchdog and the straggler view. Best effort: without Yama there is nothing to allow. */
    prctl(PR_SET_PTRACER, (unsigned long)parent, 0, 0, 0);
    execvp(argv[2], argv + 2);
    int err = errno;
    log_print("gpulaunch: cannot run '%s': %s\n", argv[2], strerror(err));
    _exit(err == ENOENT ? 127 : 126);
  }
  for (;;) {
    siginfo_t si;
    struct timespec tick = {1, 0}; /* getppid() checked even if a death signal were missed */
    int sig = sigtimedwait(&all, &si, &tick);
    reap_children();
    if (g_prog_done) {
      kill_tree(); /* what the program left running goes with it */
      exit_like(g_prog_status);
    }
    if (getppid() != parent) { /* gpulaunch is gone (SIGKILL, crash, mpirun killed) */
      kill_tree();
      _exit(128 + SIGKILL);
    }
    if (sig == REAP_SIG && si.si_code == SI_QUEUE && si.si_value.sival_int == REAP_MAGIC &&
        si.si_pid == parent) {
      kill_tree();
      if (!g_prog_done) { /* it died by our SIGKILL; wait for its status (bounded) */
        double deadline = now_s() + KILL_DEADLINE_S;
        while (!g_prog_done && now_s() < deadline) {
          struct timespec ts = {0, 2000000};
          nanosleep(&ts, NULL);
          reap_children();
        }
      }
      exit_like(g_prog_done ? g_prog_status : (int)SIGKILL);
    }
    /* Anything else was sent to the whole group: the program got it too, and decides. */
  }
}
