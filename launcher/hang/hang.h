/* Hang diagnosis: the stacks of a rank's program (py-spy for Python, else gdb or eu-stack, and
 * /proc state and wchan of every thread), the ranks whose stack differs from the majority's, and
 * the hang report (text + JSON). */
#ifndef GPL_LAUNCHER_HANG_H
#define GPL_LAUNCHER_HANG_H

#include <stddef.h>

/* Collect the stacks of every process below root_pid (the program's reaper, gpulaunch-exec, is
 * left out) within budget_s seconds. A malloc'd text: "@@key value" header lines per process
 * (@@pid, @@comm, @@tool, @@frames: the main thread's function names, innermost first, ';'
 * separated) and the tools' raw output. Never NULL unless out of memory. */
char *hang_collect(int root_pid, double budget_s);

/* One sample of the program's main-thread stack for the straggler view (hang/sample.c), with the
 * cheapest reader (py-spy dump --nonblocking for Python, eu-stack for native code) within
 * budget_s: lines "function\twhere\n" (where: the Python file or the native module), innermost
 * first, appended to out. *pid: the program's pid found below root_pid, kept between calls (0:
 * find it). Returns the tool used, NULL when there is none for this program (out empty when it
 * could not read the stack). */
struct strbuf_s;
const char *hang_sample(int root_pid, int *pid, double budget_s, struct strbuf_s *out);

/* One rank's part of the report. */
typedef struct hang_rank_s {
  int rank;
  const char *host;
  const char *text;    /* hang_collect's text, NULL when it did not arrive in time */
  double silent_s;     /* seconds without progress when the hang was declared */
} hang_rank_t;

/* Is the first process of a rank's stacks (hang_collect's text) starting up: importing modules
 * or in the process group's rendezvous (a Python program's stack read by py-spy)? A program that
 * is still starting is slow, not hung. */
int hang_starting(const char *text);
/* Is the first process's main thread waiting for its peers (a collective, a barrier, a wait)? */
int hang_waiting(const char *text);

/* Is it too early for a verdict? The ranks silent for hang_timeout_s all wait for their peers
 * (hang_waiting) or start up (hang_starting), and a peer they wait for is still on its way: one
 * starting up (*starting = 1: a loaded machine's imports and the process group's rendezvous can
 * outlast hang_timeout), or one elsewhere that made progress within hang_timeout (still working,
 * or only just stopped, so its stack is not yet where it hangs). Returns that peer's index, or -1
 * when the stacks say a hang now (a silent rank elsewhere or without a stack, nobody on its
 * way). The caller watches again and bounds how often (issue 34: a verdict taken while the
 * others were still in the rendezvous named nobody). */
int hang_too_early(const hang_rank_t *ranks, int n, double hang_timeout_s, int *starting);

/* The verdict. odd[i] = 1 for the ranks whose stack differs from the majority's. */
typedef struct hang_verdict_s {
  int nodd;
  int first_odd;       /* index into ranks, -1: none */
  char func[128];      /* the first odd rank's innermost function of its own (not the majority's) */
  char summary[1024];  /* one line for stderr */
} hang_verdict_t;

/* Compare the ranks' main-thread stacks (the outermost frames: the program's own code) and mark
 * those not in the majority. Function names are compared as the C library's symbols mean,
 * whichever tool read them (gdb's __GI___poll is eu-stack's __poll). */
void hang_analyze(const hang_rank_t *ranks, int n, int *odd, hang_verdict_t *v);
/* The same, where a rank silent for less than hang_timeout_s made progress since: it is not hung
 * and never marked, whatever its stack. */
void hang_analyze_at(const hang_rank_t *ranks, int n, double hang_timeout_s, int *odd, hang_verdict_t *v);

/* At a failure, the ranks still running that were silent (cand[i] = 1) and every rank's stacks
 * (text NULL or none for those that ended): the one that is the likely cause, or -1. A candidate
 * whose stack is not where the others' are (hang_analyze's odd ones); or, the only stack read and
 * the failure a timeout (timed_out), one not in a collective (a lock's or a queue's wait is
 * the kind of place a stuck rank is); or, every stack read waiting for a peer, a candidate whose stack
 * could not be read (the only candidate when none could). func gets its path from where it left
 * the others' to its innermost function of its own (not the C library's or a lock's), "f > g",
 * "" when its stack could not be read. */
int hang_silent_pick(const hang_rank_t *ranks, int n, const int *cand, int timed_out, char *func, size_t len);

/* Write dir/gpulaunch-hang.txt and dir/gpulaunch-hang.json (0600). 0 or a negative code; the
 * paths written go to txt/json. */
int hang_write_report(const char *dir, const hang_rank_t *ranks, int n, const int *odd,
                      const hang_verdict_t *v, double timeout_s, char *txt, char *json, size_t len);

#endif
