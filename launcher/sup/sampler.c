/* The straggler by stack sampling ([job] straggler = sample), the supervisor's side: every rank
 * samples its program's main-thread stack off the loop at a low, jittered rate and sends its
 * window's counts to rank 0 (fixed size); rank 0 names the straggler while the job runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "launcher/hang/hang.h"
#include "launcher/hang/sample.h"
#include "launcher/sup/sup_int.h"

#define SAMPLE_EVERY_S 1.25  /* between samples, +-20 % (ranks do not sample in step) */
#define FAST_EVERY_S 0.4     /* ... for the first FAST_SAMPLES of an attempt: a short job is judged too */
#define FAST_SAMPLES 20
#define SAMPLE_BUDGET_S 1.0  /* one stack read at most */
#define REPORT_EVERY_S 5.0   /* a rank's counts to rank 0 */
#define JUDGE_EVERY_S 2.0    /* rank 0's verdict */
#define MAX_FAILS 10         /* stacks that could not be read in a row: sampling stops */

typedef struct sampler_s {
  sup_t *s;
  uv_timer_t timer;
  uv_work_t work;
  int busy, root, pid, attempt, fails, stopped, taken;
  const char *tool;
  strbuf_t stack;
  sample_window_t win;
  double next_report;
  unsigned seed;
  /* rank 0 */
  sample_report_t *reports;
  double next_judge;
  long stored;              /* reports taken (sample_confirm's generation) */
  sample_streak_t streak;   /* the last judgments' straggler, confirmed or not */
  sample_verdict_t shown;   /* the verdict last printed (rank -1: none) */
  sample_verdict_t flagged; /* the last straggler named (rank -1: none) */
} sampler_t;

static void on_timer(uv_timer_t *t);

static void arm(sampler_t *m) {
  double j = 0.8 + 0.4 * ((double)rand_r(&m->seed) / RAND_MAX);
  double every = m->taken < FAST_SAMPLES ? FAST_EVERY_S : SAMPLE_EVERY_S;
  uv_timer_start(&m->timer, on_timer, (uint64_t)(every * j * 1000), 0);
}

static void work_cb(uv_work_t *w) {
  sampler_t *m = w->data;
  strbuf_reset(&m->stack);
  m->tool = hang_sample(m->root, &m->pid, SAMPLE_BUDGET_S, &m->stack);
}

/* Rank 0: judge every rank's last counts; a new straggler (or a new function) is printed. */
static void judge(sampler_t *m) {
  sup_t *s = m->s;
  sample_verdict_t v;
  sample_judge(m->reports, s->job->size, &v);
  if (log_enabled(LOG_LVL_DEBUG, LOG_SUP)) { /* each rank's waiting samples, for tuning */
    char shares[512];
    size_t off = 0;
    for (int r = 0; r < s->job->size && off + 24 < sizeof shares; r++)
      off += (size_t)snprintf(shares + off, sizeof shares - off, " %d:%d/%d", r, m->reports[r].nwait, m->reports[r].n);
    LOG_DEBUG(SUP, "straggler = sample: waiting/samples%s%s -> rank %d", shares, off + 24 >= sizeof shares ? " ..." : "",
              v.rank);
  }
  if (!sample_confirm(&m->streak, &v, m->stored)) return;
  m->flagged = v;
  if (v.rank == m->shown.rank && strcmp(v.func, m->shown.func) == 0) return;
  m->shown = v;
  char line[512];
  sample_describe(&v, s->job->hosts[v.rank], line, sizeof line);
  log_print("gpulaunch: %s\n", line);
}

static void store(sampler_t *m, int src, const sample_report_t *r) {
  if (!m->reports || src < 0 || src >= m->s->job->size) return;
  m->reports[src] = *r;
  m->stored++;
  double now = util_now();
  if (now < m->next_judge) return;
  m->next_judge = now + JUDGE_EVERY_S;
  judge(m);
}

/* This rank's window to rank 0 (rank 0: to itself). */
static void send_report(sampler_t *m) {
  sup_t *s = m->s;
  m->next_report = util_now() + REPORT_EVERY_S;
  if (m->win.n == 0) return;
  sample_report_t r;
  sample_report(&m->win, &r);
  if (s->job->rank == 0) store(m, 0, &r);
  else ctl_send_output(&s->ctl, CTL_OUT_SAMPLES, (const char *)&r, sizeof r);
}

void sampler_flush(sup_t *s) {
  if (s->sampler) send_report(s->sampler);
}

static void after_cb(uv_work_t *w, int status) {
  sampler_t *m = w->data;
  sup_t *s = m->s;
  m->busy = 0;
  if (status < 0 || s->done || m->stopped) return;
  sample_t one;
  int c = m->tool ? sample_classify(strbuf_str(&m->stack), &one) : -1;
  if (!m->tool) {
    LOG_INFO(SUP, "straggler = sample: no tool reads this program's stacks (py-spy for Python, "
             "eu-stack for native code): the step view only");
    m->stopped = 1;
  } else if (c == SAMPLE_STARTUP) {
    m->fails = 0;
  } else if (c < 0) {
    if (++m->fails >= MAX_FAILS) {
      LOG_INFO(SUP, "straggler = sample: %s could not read the program's stack %d times in a row "
               "(ptrace not allowed?): sampling stops", m->tool, MAX_FAILS);
      m->stopped = 1;
    }
  } else {
    m->fails = 0;
    m->taken++;
    sample_add(&m->win, &one);
  }
  if (util_now() >= m->next_report) send_report(m);
  if (!m->stopped) arm(m);
}

static void on_timer(uv_timer_t *t) {
  sampler_t *m = t->data;
  sup_t *s = m->s;
  if (m->busy || m->stopped || s->done) return;
  if (!s->running || s->exited) {
    arm(m);
    return;
  }
  if (s->attempt != m->attempt) { /* a restart: a new program, a new window */
    m->attempt = s->attempt;
    m->pid = 0;
    m->taken = 0;
    memset(&m->win, 0, sizeof m->win);
    if (m->reports) memset(m->reports, 0, (size_t)s->job->size * sizeof *m->reports);
    m->streak = (sample_streak_t){.rank = -1};
  }
  m->root = (int)s->pid;
  m->busy = 1;
  m->work.data = m;
  if (uv_queue_work(&s->loop, &m->work, work_cb, after_cb) < 0) {
    m->busy = 0;
    arm(m);
  }
}

int sampler_start(sup_t *s) {
  if (!s->o->straggler_sample || s->job->size < 2) return GPL_OK;
  sampler_t *m = calloc(1, sizeof *m);
  if (!m) return GPL_ENOMEM;
  m->s = s;
  m->seed = (unsigned)(util_now_ns() ^ (uint64_t)s->job->rank * 2654435761u);
  m->shown.rank = m->flagged.rank = m->streak.rank = -1;
  m->next_report = util_now() + REPORT_EVERY_S;
  if (s->job->rank == 0 && !(m->reports = calloc((size_t)s->job->size, sizeof *m->reports))) {
    free(m);
    return GPL_ENOMEM;
  }
  uv_timer_init(&s->loop, &m->timer);
  m->timer.data = m;
  arm(m);
  s->sampler = m;
  return GPL_OK;
}

void sampler_take(sup_t *s, int src, const char *data, size_t len) {
  sample_report_t r;
  if (!s->sampler || len != sizeof r) return;
  memcpy(&r, data, sizeof r);
  r.n = GPL_MIN(GPL_MAX(r.n, 0), SAMPLE_WINDOW);
  r.nwait = GPL_MIN(GPL_MAX(r.nwait, 0), r.n);
  r.wait.name[SAMPLE_NAME - 1] = 0;
  for (int t = 0; t < SAMPLE_TOP; t++) r.work[t].name[SAMPLE_NAME - 1] = 0;
  store(s->sampler, src, &r);
}

int sampler_verdict(sup_t *s, sample_verdict_t *v) {
  sampler_t *m = s->sampler;
  if (!m || !m->reports) return 0;
  sample_judge(m->reports, s->job->size, v); /* the last counts too, confirmed as while it ran */
  if (v->rank >= 0 && !sample_confirm(&m->streak, v, m->stored)) v->rank = -1;
  if (v->rank < 0 && m->flagged.rank >= 0) *v = m->flagged; /* named while it ran */
  return 1;
}

void sampler_free(sup_t *s) {
  sampler_t *m = s->sampler;
  if (!m) return;
  strbuf_free(&m->stack);
  free(m->reports);
  free(m);
  s->sampler = NULL;
}
