/* The straggler by stack sampling ([job] straggler = sample): each rank classifies samples of its
 * program's main-thread stack as waiting (in a collective, barrier or synchronisation) or working
 * (and where: its innermost own function), keeps the last ones, and reports fixed-size counts to
 * rank 0, which names the rank that waits least while the others wait most. No I/O here. */
#ifndef GPL_LAUNCHER_SAMPLE_H
#define GPL_LAUNCHER_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#define SAMPLE_WINDOW 32   /* samples kept per rank: about 40 s at the default interval */
#define SAMPLE_MIN 20      /* a rank is judged with this many samples in its window */
#define SAMPLE_FEW 12      /* ... or, in a short job, this many with stricter thresholds */
#define SAMPLE_TOP 8       /* working functions per report */
#define SAMPLE_DEPTH 6     /* the program's own frames kept of one working sample */
#define SAMPLE_NAME 48     /* bytes of a function's name */

typedef struct sample_func_s {
  char name[SAMPLE_NAME];
  int32_t n;
} sample_func_t;

/* One rank's report to rank 0, over its window: fixed size, whatever the job's size. */
typedef struct sample_report_s {
  int32_t n;                        /* samples in the window (0: none could be taken) */
  int32_t nwait;                    /* ... of them waiting */
  sample_func_t work[SAMPLE_TOP];   /* the functions of the working samples' stacks (each counted
                                     * once per sample), most first */
  sample_func_t wait;               /* the most frequent waiting call (all_reduce, gpl_barrier...) */
} sample_report_t;

/* One classified sample. */
typedef struct sample_s {
  int wait;                           /* in a collective, barrier or synchronisation */
  int nf;
  char f[SAMPLE_DEPTH][SAMPLE_NAME];  /* wait: the call (all_reduce); work: the program's own
                                       * functions on the stack, innermost first */
} sample_t;

/* One rank's last samples (a ring). */
typedef struct sample_window_s {
  int n, next;
  sample_t v[SAMPLE_WINDOW];
} sample_window_t;

/* Classify one stack: lines "function\twhere\n", innermost first (where: the Python file or the
 * native module). Returns 1 when waiting (the outermost waiting call, e.g. all_reduce), 0 when
 * working (the program's own frames; the innermost frame where there is none), SAMPLE_STARTUP
 * when it is in the start-up (importing modules, the process group's rendezvous: not counted),
 * -1 when empty. */
#define SAMPLE_STARTUP 2
int sample_classify(const char *stack, sample_t *out);

/* Is this frame (function, where) a wait, by the waiting table? Exposed for the tests. */
int sample_is_wait(const char *func, const char *where);

void sample_add(sample_window_t *w, const sample_t *s);
void sample_report(const sample_window_t *w, sample_report_t *r);

/* Rank 0's verdict over every rank's last report (size ranks, n 0 for ranks not heard). */
typedef struct sample_verdict_s {
  int rank;              /* the straggler, -1: none */
  double share;          /* its share of samples in func */
  double wait_self;      /* its waiting share */
  double wait_others;    /* the other ranks' median waiting share */
  char func[SAMPLE_NAME];    /* where its extra time goes */
  char wait_func[SAMPLE_NAME]; /* where the others wait */
  int nranks;            /* ranks with enough samples */
} sample_verdict_t;

void sample_judge(const sample_report_t *reports, int size, sample_verdict_t *v);

/* A straggler lasts, a window's noise does not: rank 0 names a rank only once two judgments in a
 * row, the second on newer counts, name it. gen: how many reports rank 0 has taken so far. */
typedef struct sample_streak_s {
  int rank;      /* the rank the last judgment named, -1: none */
  long gen;      /* the counts it was named on */
  int confirmed; /* named again on newer counts */
} sample_streak_t;

/* Feed one judgment; 1 when v's rank is confirmed (and stays so while judgments keep naming it). */
int sample_confirm(sample_streak_t *s, const sample_verdict_t *v, long gen);

/* The line: "rank 1 (host n3) is the straggler: 83 % of its samples in slow_augment; the other
 * ranks spend 80 % waiting in all_reduce". */
void sample_describe(const sample_verdict_t *v, const char *host, char *out, size_t len);

#endif
