/* A program for the launcher's tests to wrap: reports its environment and open descriptors, floods
 * its output, fails on one rank, records the signals it receives, leaves children behind. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static const char *g_dir = "/tmp";
static int g_rank;

static void stamp(const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.%d", g_dir, name, g_rank);
  FILE *f = fopen(path, "w");
  if (!f) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  fprintf(f, "%ld.%09ld\n", (long)ts.tv_sec, ts.tv_nsec);
  fclose(f);
}

static volatile sig_atomic_t g_got;
static void on_sig(int s) {
  g_got = s;
  const char *n = s == SIGTERM ? "SIGTERM" : s == SIGINT ? "SIGINT" : s == SIGUSR1 ? "SIGUSR1" : "SIGUSR2";
  stamp(n);
  if (s == SIGTERM || s == SIGINT) _exit(128 + s);
}

static int usage(void) {
  fprintf(stderr,
          "testprog env | fds | burst N | fail RANK CODE DELAY | cascade RANK CODE | signals [SECONDS] |\n"
          "         restart RANK | oom RANK SECONDS |"
          "         orphan RANK | killself RANK SIGNO | sleep SECONDS | flood | tree [SECONDS] |\n"
          "         longline N | pieces N   (files go to $GPL_TEST_DIR)\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  const char *r = getenv("RANK");
  g_rank = r ? atoi(r) : -1;
  if (getenv("GPL_TEST_DIR")) g_dir = getenv("GPL_TEST_DIR");
  const char *cmd = argv[1];
  if (strcmp(cmd, "env") == 0) {
    for (char **e = environ; *e; e++) printf("ENV %s\n", *e);
    return 0;
  }
  if (strcmp(cmd, "fds") == 0) {
    /* Every descriptor it was started with (not the one reading /proc/self/fd): one line
     * "FDS RANK: 0 1 2", then "FD N -> what" for each. */
    DIR *d = opendir("/proc/self/fd");
    if (!d) return 1;
    char line[4096] = "", what[8192] = "";
    size_t n = 0, m = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d)) continue;
      char path[300], target[512];
      snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
      ssize_t k = readlink(path, target, sizeof target - 1);
      target[k > 0 ? k : 0] = 0;
      n += (size_t)snprintf(line + n, sizeof line - n, " %s", e->d_name);
      m += (size_t)snprintf(what + m, sizeof what - m, "FD %s -> %s\n", e->d_name, target);
      if (n >= sizeof line - 16 || m >= sizeof what - 600) break;
    }
    closedir(d);
    printf("FDS %d:%s\n%s", g_rank, line, what);
    return 0;
  }
  if (strcmp(cmd, "burst") == 0 && argc > 2) {
    long n = atol(argv[2]);
    /* Large, unbuffered writes from both streams at once: lines must arrive whole. */
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    setvbuf(stderr, NULL, _IOFBF, 1 << 16);
    for (long i = 0; i < n; i++) {
      printf("out rank=%d line=%ld %s end\n", g_rank, i, "abcdefghijklmnopqrstuvwxyz0123456789");
      fprintf(stderr, "err rank=%d line=%ld %s end\n", g_rank, i, "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
    }
    printf("last line without newline rank=%d", g_rank);
    return 0;
  }
  if (strcmp(cmd, "fail") == 0 && argc > 4) {
    if (g_rank == atoi(argv[2])) {
      usleep((useconds_t)(atof(argv[4]) * 1e6));
      fprintf(stderr, "first complaint of rank %d\n", g_rank);
      fprintf(stderr, "second complaint of rank %d\n", g_rank);
      fprintf(stderr, "fatal: giving up with %s\n", argv[3]);
      fflush(stderr);
      stamp("failtime");
      return atoi(argv[3]);
    }
    sleep(60);
    return 0;
  }
  if (strcmp(cmd, "cascade") == 0 && argc > 3) {
    /* RANK says why it fails, then "tears down" for 0.6 s (as Python, CUDA and NCCL do); its
     * connections close 0.1 s into that (the failtime file), and every other rank fails of it at
     * once with 1 ("connection closed by peer"), ending and reporting before RANK does. */
    char path[4096];
    snprintf(path, sizeof path, "%s/failtime.%d", g_dir, atoi(argv[2]));
    if (g_rank == atoi(argv[2])) {
      usleep(300000);
      fprintf(stderr, "crashing on purpose with %s\n", argv[3]);
      fflush(stderr);
      usleep(100000);
      stamp("failtime");
      usleep(500000);
      return atoi(argv[3]);
    }
    for (int i = 0; i < 600 && access(path, F_OK) != 0; i++) usleep(5000);
    fprintf(stderr, "rank %d: connection closed by peer\n", g_rank);
    return 1;
  }
  if (strcmp(cmd, "signals") == 0) {
    signal(SIGTERM, on_sig);
    signal(SIGINT, on_sig);
    signal(SIGUSR1, on_sig);
    signal(SIGUSR2, on_sig);
    stamp("ready");
    int secs = argc > 2 ? atoi(argv[2]) : 60;
    for (int i = 0; i < secs * 10; i++) usleep(100000);
    return 0;
  }
  if (strcmp(cmd, "restart") == 0 && argc > 2) {
    const char *c = getenv("GPULAUNCH_RESTART_COUNT");
    char name[64];
    snprintf(name, sizeof name, "attempt%s", c ? c : "x");
    stamp(name);
    printf("rank %d attempt %s port %s\n", g_rank, c ? c : "?", getenv("MASTER_PORT"));
    if (g_rank == atoi(argv[2]) && c && atoi(c) == 0) {
      fprintf(stderr, "rank %d fails on its first attempt\n", g_rank);
      return 3;
    }
    return 0;
  }
  if (strcmp(cmd, "oom") == 0 && argc > 3) {
    /* Rank RANK runs SECONDS, then dies of a CUDA out-of-memory error as PyTorch (2.4 and later)
     * reports it: the traceback on stderr, NCCL's teardown warning after it, exit status 1. The
     * others run until they are stopped. Every attempt leaves attempt<N>.<rank>. */
    const char *c = getenv("GPULAUNCH_RESTART_COUNT");
    char name[64];
    snprintf(name, sizeof name, "attempt%s", c ? c : "x");
    stamp(name);
    printf("rank %d attempt %s: step 1 loss 2.31\n", g_rank, c ? c : "?");
    fflush(stdout);
    if (g_rank != atoi(argv[2])) {
      sleep(60);
      return 0;
    }
    usleep((useconds_t)(atof(argv[3]) * 1e6));
    fprintf(stderr,
            "Traceback (most recent call last):\n"
            "  File \"/workspace/train.py\", line 212, in <module>\n"
            "    main()\n"
            "  File \"/workspace/train.py\", line 188, in main\n"
            "    loss = model(input_ids, labels=labels).loss\n"
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            "  File \"/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py\", line 1736, in _wrapped_call_impl\n"
            "    return self._call_impl(*args, **kwargs)\n"
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            "  File \"/usr/local/lib/python3.11/site-packages/torch/nn/functional.py\", line 2551, in layer_norm\n"
            "    return torch.layer_norm(\n"
            "           ^^^^^^^^^^^^^^^^^\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU %d has a total "
            "capacity of 79.11 GiB of which 1.19 GiB is free. Including non-PyTorch memory, this process "
            "has 77.91 GiB memory in use. Of the allocated memory 75.02 GiB is allocated by PyTorch, and "
            "1.40 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
            "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            "documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
            "[rank%d]:[W1207 03:01:12.412873761 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process "
            "group has NOT been destroyed before we destruct ProcessGroupNCCL. On normal program exit, "
            "the application should call destroy_process_group to ensure that any pending NCCL "
            "operations have finished in this process. (function operator())\n",
            g_rank, g_rank);
    return 1;
  }
  if (strcmp(cmd, "orphan") == 0 && argc > 2) {
    pid_t p = fork();
    if (p == 0) {
      /* A grandchild that closes nothing and would sleep long. */
      execlp("sleep", "sleep", "77.5", (char *)NULL);
      _exit(1);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/orphan.%d", g_dir, g_rank);
    FILE *f = fopen(path, "w");
    if (f) fprintf(f, "%d\n", (int)p), fclose(f);
    if (g_rank == atoi(argv[2])) {
      usleep(300000);
      return 1;
    }
    sleep(60);
    return 0;
  }
  if (strcmp(cmd, "killself") == 0 && argc > 3) {
    if (g_rank == atoi(argv[2])) {
      usleep(200000);
      fprintf(stderr, "about to die by signal %s\n", argv[3]);
      fflush(stderr);
      raise(atoi(argv[3]));
    }
    sleep(60);
    return 0;
  }
  if (strcmp(cmd, "flood") == 0) {
    /* Writes stdout lines as fast as it can; SIGTERM is stamped and ends it (143). */
    signal(SIGTERM, on_sig);
    stamp("ready");
    for (long i = 0;; i++) printf("flood rank=%d line=%ld %s\n", g_rank, i, "0123456789abcdef0123456789abcdef");
  }
  if (strcmp(cmd, "tree") == 0) {
    /* Two descendants: one in the program's process group, one that left it (setsid), each
     * grandchild sleeping long; their pids go to tree.RANK. Then sleeps (argv[2] s, default 60). */
    char path[4096];
    snprintf(path, sizeof path, "%s/tree.%d", g_dir, g_rank);
    FILE *f = fopen(path, "w");
    for (int k = 0; k < 2; k++) {
      pid_t p = fork();
      if (p == 0) {
        if (k == 1) setsid();
        execlp("sleep", "sleep", "88.5", (char *)NULL);
        _exit(1);
      }
      if (f) fprintf(f, "%d\n", (int)p);
    }
    if (f) fclose(f);
    stamp("ready");
    usleep((useconds_t)((argc > 2 ? atof(argv[2]) : 60) * 1e6));
    return 0;
  }
  if (strcmp(cmd, "longline") == 0 && argc > 2) {
    /* One line of N bytes (the rank's letter), written in small pieces with pauses, so that the
     * ranks' long lines are in flight at the same time; then a tqdm-like bar: \r, no newline. */
    long n = atol(argv[2]);
    char c = (char)('a' + (g_rank % 26));
    char chunk[4096];
    memset(chunk, c, sizeof chunk);
    for (long left = n; left > 0;) {
      long k = left < (long)sizeof chunk ? left : (long)sizeof chunk;
      fwrite(chunk, 1, (size_t)k, stdout);
      fflush(stdout);
      left -= k;
      if ((left / (long)sizeof chunk) % 64 == 0) usleep(1000);
    }
    printf("\n");
    for (int i = 0; i < 3000; i++) printf("\r%c progress %d%%%s", c, i % 100, "          ");
    fflush(stdout);
    return 0;
  }
  if (strcmp(cmd, "pieces") == 0 && argc > 2) {
    /* N lines on each stream, alternating, each written in three pieces cut at random places
     * (write(2) directly), every third stderr line a \r progress bar: with `> log 2>&1` every
     * line must still arrive whole. */
    long n = atol(argv[2]);
    unsigned seed = (unsigned)(g_rank + 1) * 2654435761u;
    char line[512], body[400];
    for (long i = 0; i < n; i++) {
      for (int fd = 1; fd <= 2; fd++) {
        seed = seed * 1103515245u + 12345u;
        if (fd == 2 && i % 3 == 0) {
          snprintf(body, sizeof body, "0%%\r25%%\r50%%\r75%%\rdone");
        } else {
          size_t k = (seed >> 8) % 300;
          memset(body, 'x', k);
          body[k] = 0;
        }
        int len = snprintf(line, sizeof line, "%s r%d i%ld %s END\n", fd == 1 ? "OUT" : "ERR", g_rank, i, body);
        seed = seed * 1103515245u + 12345u;
        int a = 1 + (int)((seed >> 8) % (unsigned)(len - 2));
        seed = seed * 1103515245u + 12345u;
        int b = a + (int)((seed >> 8) % (unsigned)(len - a));
        if (write(fd, line, (size_t)a) < 0 || write(fd, line + a, (size_t)(b - a)) < 0 ||
            write(fd, line + b, (size_t)(len - b)) < 0)
          return 1;
      }
    }
    return 0;
  }
  if (strcmp(cmd, "sleep") == 0 && argc > 2) {
    usleep((useconds_t)(atof(argv[2]) * 1e6));
    return 0;
  }
  return usage();
}
