/* Hang diagnosis, on every rank: the stacks of the program's processes, with py-spy (Python),
 * gdb or eu-stack (native), and /proc state and wchan of each thread, all within a deadline; and
 * one sample of the program's main-thread stack for the straggler view. */
#include "launcher/hang/hang.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "common/util.h"
#include "launcher/hang/sample.h"

#define MAX_PROCS 8
#define MAX_OUT (128 << 10) /* bytes kept of one tool's output */
/* Of a native process's time, what gdb leaves for eu-stack (a tenth of gdb's cost) should gdb
 * fail or run out of time: at most this many seconds, at most a third. */
#define FALLBACK_S 1.5

/* One reader of the program's stacks at a time: a tool that attaches with ptrace (gdb, eu-stack)
 * finds the program already traced by the other and reads nothing ("Operation not permitted").
 * The hang collection waits for a straggler sample in flight (about a second at most); the
 * sampler's next sample waits for the collection. */
static pthread_mutex_t readers = PTHREAD_MUTEX_INITIALIZER;

/* The first line of a /proc file, without its newline. */
static void read_line(const char *path, char *buf, size_t len) {
  buf[0] = 0;
  FILE *f = fopen(path, "re");
  if (!f) return;
  if (!fgets(buf, (int)len, f)) buf[0] = 0;
  fclose(f);
  buf[strcspn(buf, "\n")] = 0;
}

/* State letter and parent of a process or thread from its stat line. */
static int read_stat(const char *path, char *state, long *ppid) {
  char buf[1024];
  read_line(path, buf, sizeof buf);
  char *rp = strrchr(buf, ')');
  return rp && sscanf(rp + 1, " %c %ld", state, ppid) == 2 ? 0 : -1;
}

/* The processes below root (breadth first, at most max), root itself left out. */
static int descendants(int root, int *out, int max) {
  int n = 0, cap = 1024, np = 0;
  long(*all)[2] = malloc((size_t)cap * sizeof *all);
  DIR *d = opendir("/proc");
  if (!d || !all) {
    if (d) closedir(d);
    free(all);
    return 0;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end, path[64], st;
    long pid = strtol(e->d_name, &end, 10), ppid;
    if (*end || pid <= 0) continue;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (read_stat(path, &st, &ppid) < 0) continue;
    if (np == cap) {
      long(*m)[2] = realloc(all, (size_t)cap * 2 * sizeof *all);
      if (!m) break;
      all = m;
      cap *= 2;
    }
    all[np][0] = pid;
    all[np][1] = ppid;
    np++;
  }
  closedir(d);
  int parents[64] = {root}, nparents = 1;
  for (int i = 0; i < nparents && n < max; i++)
    for (int j = 0; j < np && n < max; j++)
      if (all[j][1] == parents[i]) {
        out[n++] = (int)all[j][0];
        if (nparents < 64) parents[nparents++] = (int)all[j][0];
      }
  free(all);
  return n;
}

/* A tool by name in PATH (or the usual places), into out. */
static int find_tool(const char *name, char *out, size_t len) {
  const char *path = getenv("PATH");
  char buf[8192];
  snprintf(buf, sizeof buf, "%s:/usr/local/bin:/usr/bin:/bin", path ? path : "");
  for (char *save = NULL, *dir = strtok_r(buf, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    snprintf(out, len, "%s/%s", dir, name);
    if (access(out, X_OK) == 0) return 1;
  }
  return 0;
}

/* Run argv (argv[0] a full path) with stdout and stderr into *out until it ends or deadline
 * (util_now() seconds) passes; then it is killed. Returns the exit status, or -1 (killed, or
 * could not start). */
static int run_capture(char *const *argv, double deadline, strbuf_t *out) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    int nul = open("/dev/null", O_RDONLY);
    if (nul >= 0) dup2(nul, 0);
    execv(argv[0], argv);
    _exit(127);
  }
  close(fds[1]);
  size_t kept = 0;
  int killed = 0;
  for (;;) {
    double left = deadline - util_now();
    if (left <= 0) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      killed = 1;
      break;
    }
    struct pollfd pf = {fds[0], POLLIN, 0};
    int r = poll(&pf, 1, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[4096];
    ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (kept < MAX_OUT) strbuf_append_n(out, buf, (size_t)got < MAX_OUT - kept ? (size_t)got : MAX_OUT - kept);
    kept += (size_t)got;
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (killed) strbuf_printf(out, "\n(%s did not finish in time: killed)\n", argv[0]);
  return killed ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Frames that say nothing about the program: the C runtime's start. */
static int boring(const char *f) {
  return !*f || strcmp(f, "??") == 0 || strcmp(f, "_start") == 0 || strncmp(f, "__libc_start", 12) == 0;
}

static void add_frame(strbuf_t *frames, const char *name, size_t n) {
  char f[160];
  if (n >= sizeof f) n = sizeof f - 1;
  memcpy(f, name, n);
  f[n] = 0;
  if (boring(f)) return;
  strbuf_printf(frames, "%s%s", frames->len ? ";" : "", f);
}

/* py-spy dump: the MainThread's block (else the first), "    func (file:line)" lines. */
static void parse_pyspy(const char *text, strbuf_t *frames) {
  const char *blk = strstr(text, "\"MainThread\"");
  if (blk) {
    while (blk > text && blk[-1] != '\n') blk--;
  } else {
    blk = strstr(text, "Thread ");
  }
  if (!blk) return;
  const char *p = strchr(blk, '\n');
  while (p && *++p == ' ') {
    while (*p == ' ') p++;
    size_t n = strcspn(p, " (\n");
    add_frame(frames, p, n);
    p = strchr(p, '\n');
  }
}

/* gdb "thread apply all bt": the thread whose LWP is pid (else the first), "#N  0x.. in f (..)". */
static void parse_gdb(const char *text, int pid, strbuf_t *frames) {
  char want[48];
  snprintf(want, sizeof want, "(LWP %d)", pid);
  const char *blk = strstr(text, want);
  if (!blk) blk = strstr(text, "\n#0 ");
  if (!blk) return;
  const char *p = strchr(blk, '\n');
  while (p && p[1] == '#') {
    p += 2;
    p += strspn(p, "0123456789");
    p += strspn(p, " ");
    if (strncmp(p, "0x", 2) == 0) {
      p += strcspn(p, " ");
      if (strncmp(p, " in ", 4) == 0) p += 4;
    }
    add_frame(frames, p, strcspn(p, " (\n"));
    p = strchr(p, '\n');
  }
}

/* eu-stack: "TID pid:" then "#N  0xADDR [- 1 ]func" lines. */
static void parse_eustack(const char *text, int pid, strbuf_t *frames) {
  char want[48];
  snprintf(want, sizeof want, "TID %d:", pid);
  const char *blk = strstr(text, want);
  if (!blk) blk = strstr(text, "TID ");
  if (!blk) return;
  const char *p = strchr(blk, '\n');
  while (p && p[1] == '#') {
    const char *eol = strchr(p + 1, '\n');
    size_t linelen = eol ? (size_t)(eol - p - 1) : strlen(p + 1);
    char line[512];
    if (linelen >= sizeof line) linelen = sizeof line - 1;
    memcpy(line, p + 1, linelen);
    line[linelen] = 0;
    char *last = strrchr(line, ' ');
    const char *f = last ? last + 1 : line;
    if (strncmp(f, "0x", 2) == 0) f = "??";
    add_frame(frames, f, strlen(f));
    p = eol;
  }
}

static void sample_pyspy(const char *text, strbuf_t *out);

static int is_python(const char *exe, const char *comm) {
  const char *base = strrchr(exe, '/');
  base = base ? base + 1 : exe;
  return strncmp(base, "python", 6) == 0 || strncmp(comm, "python", 6) == 0;
}

static void one_process(int pid, double deadline, strbuf_t *b) {
  char path[64], comm[64], exe[PATH_MAX] = "", st = '?';
  long ppid = 0;
  snprintf(path, sizeof path, "/proc/%d/comm", pid);
  read_line(path, comm, sizeof comm);
  snprintf(path, sizeof path, "/proc/%d/exe", pid);
  ssize_t n = readlink(path, exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  read_stat(path, &st, &ppid);
  strbuf_printf(b, "@@pid %d\n@@comm %s\n@@exe %s\n@@state %c\n", pid, comm, exe, st);
  /* every thread's state and where in the kernel it sleeps */
  snprintf(path, sizeof path, "/proc/%d/task", pid);
  DIR *d = opendir(path);
  int nt = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL && nt < 256) {
    if (e->d_name[0] == '.') continue;
    char tp[PATH_MAX], wchan[128], tst = '?';
    long tpp;
    snprintf(tp, sizeof tp, "/proc/%d/task/%s/stat", pid, e->d_name);
    read_stat(tp, &tst, &tpp);
    snprintf(tp, sizeof tp, "/proc/%d/task/%s/wchan", pid, e->d_name);
    read_line(tp, wchan, sizeof wchan);
    snprintf(tp, sizeof tp, "/proc/%d/task/%s/comm", pid, e->d_name);
    char tcomm[64];
    read_line(tp, tcomm, sizeof tcomm);
    strbuf_printf(b, "@@thread %s %c %s %s\n", e->d_name, tst, *wchan && strcmp(wchan, "0") ? wchan : "-", tcomm);
    nt++;
  }
  if (d) closedir(d);
  int python = is_python(exe, comm);
  char tool[PATH_MAX], pidarg[16];
  snprintf(pidarg, sizeof pidarg, "%d", pid);
  strbuf_t out = STRBUF_INIT, frames = STRBUF_INIT;
  const char *used = "none";
  int startup = 0;
  if (python && find_tool("py-spy", tool, sizeof tool)) {
    char *argv[] = {tool, "dump", "--pid", pidarg, NULL};
    used = "py-spy";
    run_capture(argv, deadline, &out);
    parse_pyspy(strbuf_str(&out), &frames);
    /* importing modules or in the process group's rendezvous: starting, not hung (hang.h) */
    strbuf_t lines = STRBUF_INIT;
    sample_t one;
    sample_pyspy(strbuf_str(&out), &lines);
    startup = lines.len && sample_classify(strbuf_str(&lines), &one) == SAMPLE_STARTUP;
    strbuf_free(&lines);
  }
  int have_eu = find_tool("eu-stack", tool, sizeof tool);
  if (!frames.len && find_tool("gdb", tool, sizeof tool)) {
    /* The program's own debug information, not the system libraries' separate one (libc6-dbg,
     * python3-dbg): reading that doubles gdb's time, which a loaded machine may not have, for
     * names inside the C library. No auto-loaded scripts (pretty printers) either. */
    char *argv[] = {tool, "-p", pidarg, "-batch", "-nx", "-iex", "set debug-file-directory /nonexistent",
                    "-iex", "set auto-load off", "-ex", "set pagination off", "-ex", "thread apply all bt", NULL};
    if (out.len) strbuf_append(&out, "\n");
    used = "gdb";
    /* gdb is slow to start on a loaded machine: part of the time stays for eu-stack. A gdb cut
     * short leaves a stack cut short (its innermost frames only): not compared with the others'. */
    double left = deadline - util_now();
    size_t from = out.len;
    int rc = run_capture(argv, have_eu ? deadline - GPL_MIN(FALLBACK_S, left / 3) : deadline, &out);
    if (rc >= 0) parse_gdb(strbuf_str(&out) + from, pid, &frames);
  }
  if (!frames.len && have_eu && find_tool("eu-stack", tool, sizeof tool)) {
    char *argv[] = {tool, "-p", pidarg, NULL};
    if (out.len) strbuf_append(&out, "\n");
    used = "eu-stack";
    run_capture(argv, deadline, &out);
    parse_eustack(strbuf_str(&out), pid, &frames);
  }
  if (startup) strbuf_append(b, "@@startup 1\n");
  strbuf_printf(b, "@@tool %s\n@@frames %s\n@@stack-begin\n%s\n@@stack-end\n", used, strbuf_str(&frames),
                strbuf_str(&out));
  strbuf_free(&out);
  strbuf_free(&frames);
}

/* A process that only starts another and waits for it (a shell script, env, numactl...): its
 * stack says nothing about where the training is. */
static int wrapper(int pid) {
  static const char *const names[] = {"sh", "bash", "dash", "zsh", "env", "timeout", "stdbuf",
                                      "nice", "ionice", "numactl", "taskset", "time", "nohup", "chrt"};
  char path[64], comm[64];
  snprintf(path, sizeof path, "/proc/%d/comm", pid);
  read_line(path, comm, sizeof comm);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(comm, names[i]) == 0) return 1;
  return 0;
}

/* The index in pids of the program itself: the first process that is not a wrapper (0: none). */
static int pick_program(const int *pids, int n) {
  for (int i = 0; i < n; i++)
    if (!wrapper(pids[i])) return i;
  return 0;
}

char *hang_collect(int root_pid, double budget_s) {
  strbuf_t b = STRBUF_INIT;
  double deadline = util_now() + budget_s;
  pthread_mutex_lock(&readers);
  int pids[MAX_PROCS] = {0}, n = root_pid > 0 ? descendants(root_pid, pids, MAX_PROCS) : 0;
  /* The process compared across ranks is the first one (hang_report.c): the program itself, or,
   * where that is a wrapper (`bash train.sh`), the first process below it that is not. */
  int i0 = pick_program(pids, n);
  if (i0 > 0) {
    int keep = pids[i0];
    memmove(pids + 1, pids, (size_t)i0 * sizeof *pids);
    pids[0] = keep;
  }
  if (n == 0) strbuf_append(&b, "@@none the program is not running\n");
  for (int i = 0; i < n; i++) {
    /* the first process (the program itself) gets most of the time; the rest share what is left */
    double left = deadline - util_now();
    if (left <= 0.2) {
      strbuf_printf(&b, "@@pid %d\n@@tool none\n@@frames \n(no time left for this process)\n", pids[i]);
      continue;
    }
    one_process(pids[i], i == 0 ? deadline - 0.1 * (n - 1) : util_now() + left / (n - i), &b);
  }
  pthread_mutex_unlock(&readers);
  return strbuf_take(&b);
}

/* ---- one sample for the straggler view (hang/sample.c) ---- */

static const char *sample_locked(int root_pid, int *pid, double budget_s, strbuf_t *out);

/* py-spy dump: the MainThread's "    func (file:line)" lines as "func\tfile\n". */
static void sample_pyspy(const char *text, strbuf_t *out) {
  const char *blk = strstr(text, "\"MainThread\"");
  if (!blk) blk = strstr(text, "Thread ");
  const char *p = blk ? strchr(blk, '\n') : NULL;
  while (p && *++p == ' ') {
    while (*p == ' ') p++;
    size_t n = strcspn(p, " (\n");
    const char *file = p + n;
    size_t fl = 0;
    if (strncmp(file, " (", 2) == 0) {
      file += 2;
      fl = strcspn(file, ":)\n");
    }
    strbuf_printf(out, "%.*s\t%.*s\n", (int)GPL_MIN(n, 160), p, (int)GPL_MIN(fl, 400), file);
    p = strchr(p, '\n');
  }
}

/* eu-stack -m: "#N  0xADDR func - module" (no func where there is no symbol). */
static void sample_eustack(const char *text, strbuf_t *out) {
  const char *blk = strstr(text, "TID ");
  const char *p = blk ? strchr(blk, '\n') : NULL;
  while (p && p[1] == '#') {
    p++;
    const char *eol = strchr(p, '\n');
    size_t ll = eol ? (size_t)(eol - p) : strlen(p);
    char line[600];
    if (ll >= sizeof line) ll = sizeof line - 1;
    memcpy(line, p, ll);
    line[ll] = 0;
    char *f = line + strcspn(line, " ");
    f += strspn(f, " ");
    f += strcspn(f, " "); /* the address */
    f += strspn(f, " ");
    char *mod = strstr(f, " - ");
    const char *module = "";
    if (strncmp(f, "- ", 2) == 0) {
      module = f + 2;
      f = "??";
    } else if (mod) {
      *mod = 0;
      module = mod + 3;
    }
    strbuf_printf(out, "%s\t%s\n", *f ? f : "??", module);
    p = eol;
  }
}

const char *hang_sample(int root_pid, int *pid, double budget_s, strbuf_t *out) {
  pthread_mutex_lock(&readers);
  const char *used = sample_locked(root_pid, pid, budget_s, out);
  pthread_mutex_unlock(&readers);
  return used;
}

static const char *sample_locked(int root_pid, int *pid, double budget_s, strbuf_t *out) {
  double deadline = util_now() + budget_s;
  if (*pid <= 0 || kill(*pid, 0) < 0) {
    int pids[MAX_PROCS] = {0}, n = root_pid > 0 ? descendants(root_pid, pids, MAX_PROCS) : 0;
    *pid = n > 0 ? pids[pick_program(pids, n)] : 0;
  }
  if (*pid <= 0) return NULL;
  char path[64], comm[64], exe[PATH_MAX] = "", tool[PATH_MAX], pidarg[16];
  snprintf(path, sizeof path, "/proc/%d/comm", *pid);
  read_line(path, comm, sizeof comm);
  snprintf(path, sizeof path, "/proc/%d/exe", *pid);
  ssize_t n = readlink(path, exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  snprintf(pidarg, sizeof pidarg, "%d", *pid);
  strbuf_t raw = STRBUF_INIT;
  const char *used = NULL;
  /* The cheapest reader: py-spy does not stop a Python program (--nonblocking); eu-stack stops
   * one thread of a native one for a few milliseconds. */
  if (is_python(exe, comm)) {
    if (find_tool("py-spy", tool, sizeof tool)) {
      char *argv[] = {tool, "dump", "--nonblocking", "--pid", pidarg, NULL};
      if (run_capture(argv, deadline, &raw) == 0) sample_pyspy(strbuf_str(&raw), out);
      used = "py-spy";
    }
  } else if (find_tool("eu-stack", tool, sizeof tool)) {
    char *argv[] = {tool, "-1", "-m", "-n", "64", "-p", pidarg, NULL};
    run_capture(argv, deadline, &raw); /* 1: some frames could not be unwound, the rest are good */
    sample_eustack(strbuf_str(&raw), out);
    used = "eu-stack";
  }
  strbuf_free(&raw);
  return used;
}
