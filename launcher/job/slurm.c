/* gpulaunch under Slurm: the launch check before MPI_Init, the program's SLURM_* variables, Slurm's
 * own signals, and the question "why is Slurm signalling this job" asked of scontrol. */
#include "launcher/job/slurm.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#include "common/check.h"
#include "common/safefile.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "launcher/exitcode.h"

int slurm_in_job(void) {
  const char *id = getenv("SLURM_JOB_ID");
  if (!id || !*id) id = getenv("SLURM_JOBID");
  return id && *id;
}

static const char *job_id(void) {
  const char *id = getenv("SLURM_JOB_ID");
  return id && *id ? id : getenv("SLURM_JOBID");
}

/* ---- the launch ---- */

void slurm_check_launch(void) {
  const char *step = getenv("SLURM_STEP_ID");
  if (!step) step = getenv("SLURM_STEPID");
  /* A task of an srun step (the batch script itself has no step id)... */
  if (!step || !getenv("SLURM_PROCID")) return;
  /* ...that no PMIx server and no Open MPI daemon (mpirun in an allocation) stands behind. */
  if (getenv("PMIX_RANK") || getenv("PMIX_NAMESPACE") || getenv("OMPI_COMM_WORLD_RANK")) return;
#ifdef OPEN_MPI
  const char *mpi = getenv("SLURM_MPI_TYPE");
  const char *procid = getenv("SLURM_PROCID");
  if (strcmp(procid, "0") == 0) {
    log_print(
            "gpulaunch: srun started this job without PMIx (%s%s), and Open MPI cannot start "
            "without it: run srun --mpi=pmix (or set MpiDefault=pmix in slurm.conf)\n",
            mpi && *mpi ? "--mpi=" : "--mpi=none or MpiDefault=none", mpi && *mpi ? mpi : "");
  } else {
    util_sleep(0.5); /* srun ends the step at the first exit: let task 0 say why first */
  }
  fflush(stderr);
  exit(GPL_EXIT_USAGE);
#endif
}

/* ---- Slurm's signals ---- */

/* proctrack/pgid signals the step's process groups only; the program has its own. */
static int proctrack_is_pgid(void) {
  static int cached = -1;
  if (cached >= 0) return cached;
  cached = 0;
  const char *paths[] = {getenv("SLURM_CONF"), "/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(paths); i++) {
    char *text = NULL;
    if (!paths[i] || safefile_read_text(paths[i], &text, NULL) < 0) continue;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
      line = util_trim(line);
      if (strncasecmp(line, "ProctrackType", 13) != 0) continue;
      char *eq = strchr(line, '=');
      if (eq && strstr(eq, "pgid")) cached = 1;
    }
    free(text);
    break;
  }
  return cached;
}

int slurm_signal_reached_program(const sigorigin_t *from) {
  if (!from || from->pid <= 0 || !slurm_in_job()) return 0;
  if (strcmp(from->comm, "slurmstepd") != 0) return 0;
  return !proctrack_is_pgid();
}

/* ---- the program's environment ---- */

int slurm_is_task_var(const char *kv) {
  static const char *const prefixes[] = {"SLURM_TASK_PID=", "SLURM_PMIX"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(prefixes); i++)
    if (strncmp(kv, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  return 0;
}

void slurm_compress_counts(const int *counts, int n, char *out, size_t len) {
  size_t off = 0;
  if (len) out[0] = 0;
  for (int i = 0; i < n && off < len;) {
    int j = i;
    while (j < n && counts[j] == counts[i]) j++;
    int w = j - i > 1 ? snprintf(out + off, len - off, "%s%d(x%d)", off ? "," : "", counts[i], j - i)
                      : snprintf(out + off, len - off, "%s%d", off ? "," : "", counts[i]);
    if (w < 0) break;
    off += (size_t)w;
    i = j;
  }
}

int slurm_child_env(const job_t *job, slurm_set_fn set, void *arg) {
  if (!slurm_in_job()) return GPL_OK;
  int nnodes = job->nnodes > 0 && job->node_of ? job->nnodes : 1;
  int *counts = calloc((size_t)nnodes, sizeof *counts);
  size_t tlen = (size_t)nnodes * 16 + 16, glen = (size_t)job->size * 12 + 16;
  char *tasks = malloc(tlen), *gtids = malloc(glen);
  int rc = GPL_ENOMEM;
  if (!counts || !tasks || !gtids) goto out;
  size_t goff = 0;
  gtids[0] = 0;
  for (int r = 0; r < job->size; r++) {
    int n = job->node_of ? job->node_of[r] : 0;
    if (n >= 0 && n < nnodes) counts[n]++;
    if (n == job->node || !job->node_of)
      goff += (size_t)snprintf(gtids + goff, glen - goff, "%s%d", goff ? "," : "", r);
  }
  slurm_compress_counts(counts, nnodes, tasks, tlen);
  char b[32];
#define SETI(k, v) do { snprintf(b, sizeof b, "%d", (v)); CHECKGOTO(set(arg, (k), b), rc, out); } while (0)
  SETI("SLURM_PROCID", job->rank);
  SETI("SLURM_LOCALID", job->local_rank);
  SETI("SLURM_NODEID", job->node);
  SETI("SLURM_NTASKS", job->size);
  SETI("SLURM_NPROCS", job->size);
  SETI("SLURM_NNODES", nnodes);
  SETI("SLURM_STEP_NUM_TASKS", job->size);
  SETI("SLURM_STEP_NUM_NODES", nnodes);
#undef SETI
  CHECKGOTO(set(arg, "SLURM_TASKS_PER_NODE", tasks), rc, out);
  CHECKGOTO(set(arg, "SLURM_STEP_TASKS_PER_NODE", tasks), rc, out);
  CHECKGOTO(set(arg, "SLURM_GTIDS", gtids), rc, out);
  rc = GPL_OK;
out:
  free(counts);
  free(tasks);
  free(gtids);
  return rc;
}

/* ---- why the job is being signalled ---- */

/* The value of Key= in a `scontrol show job -o` line ("" when absent). */
static void field(const char *line, const char *key, char *out, size_t len) {
  size_t klen = strlen(key);
  out[0] = 0;
  for (const char *p = line; (p = strstr(p, key)) != NULL; p += klen) {
    if ((p != line && !isspace((unsigned char)p[-1])) || p[klen] != '=') continue;
    const char *v = p + klen + 1;
    size_t n = strcspn(v, " \t\r\n");
    snprintf(out, len, "%.*s", (int)n, v);
    return;
  }
}

slurm_end_t slurm_end_classify(const char *line, long restarts_before) {
  char state[64], reason[128], restarts[32], preempt[64];
  field(line, "JobState", state, sizeof state);
  field(line, "Reason", reason, sizeof reason);
  field(line, "Restarts", restarts, sizeof restarts);
  field(line, "PreemptTime", preempt, sizeof preempt);
  if (!state[0]) return SLURM_END_UNKNOWN;
  long nrestarts = 0;
  if (strcmp(state, "PREEMPTED") == 0) return SLURM_END_PREEMPTED;
  /* Requeued (preemption in REQUEUE mode, scontrol requeue): the count moves before the signal. */
  if (util_parse_long(restarts, 0, 1L << 30, &nrestarts) == GPL_OK && nrestarts > restarts_before)
    return SLURM_END_REQUEUED;
  if (preempt[0] && strcmp(preempt, "None") != 0 && strcmp(preempt, "Unknown") != 0)
    return SLURM_END_PREEMPTED;
  if (strcmp(state, "TIMEOUT") == 0 || strcmp(state, "DEADLINE") == 0 || strcmp(reason, "TimeLimit") == 0)
    return SLURM_END_TIMELIMIT;
  static const char *const going_on[] = {"RUNNING", "SUSPENDED", "CONFIGURING", "RESIZING",
                                         "SIGNALING", "REQUEUE_HOLD", "REQUEUE_FED"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(going_on); i++)
    if (strcmp(state, going_on[i]) == 0) return SLURM_END_SIGNALLED;
  /* COMPLETING hides the base state, but every other way to end was ruled out above. */
  return SLURM_END_CANCELLED;
}

const char *slurm_end_describe(slurm_end_t end) {
  switch (end) {
    case SLURM_END_CANCELLED: return "Slurm is cancelling the job (scancel, or its batch script ended)";
    case SLURM_END_REQUEUED: return "Slurm is requeueing the job (preemption or scontrol requeue)";
    case SLURM_END_PREEMPTED: return "Slurm is preempting the job";
    case SLURM_END_TIMELIMIT: return "the job reached its time limit";
    case SLURM_END_SIGNALLED: return "Slurm signalled the running job (scancel --signal, --signal=SIG@TIME)";
    default: return "";
  }
}

int slurm_end_is_preemption(slurm_end_t end) { return end != SLURM_END_CANCELLED; }

/* The query: scontrol, again every QUERY_AGAIN_S while it fails (a loaded or restarting
 * slurmctld: "Socket timed out", "Unable to contact slurm controller"), until its bound. */
#define QUERY_AGAIN_S 0.5
static struct query_s {
  int started, done;
  uv_loop_t *loop;
  uint64_t deadline_ms; /* uv_now of the bound */
  int attempts, open;   /* scontrol runs started; handles of the running one not yet closed */
  int running;          /* its process runs (spawned, not yet ended): only then is it killed */
  int64_t exit_status;
  slurm_end_t end;
  uv_process_t proc;
  uv_pipe_t out, err;
  uv_timer_t timer, again;
  strbuf_t text, errtext;
} g_q;

static void q_attempt(void);
static void q_again(uv_timer_t *t) {
  (void)t;
  q_attempt();
}

static void q_closed(uv_handle_t *h);

static void q_close(uv_handle_t *h) {
  if (!uv_is_closing(h)) uv_close(h, q_closed);
}

/* The answer is in (or the bound is over): said once, every handle closed. */
static void q_finish(void) {
  if (g_q.done) return;
  g_q.done = 1;
  char why[256];
  if (g_q.end) {
    util_strlcpy(why, slurm_end_describe(g_q.end), sizeof why);
  } else {
    char first[160], st[48]; /* the last try's end and scontrol's own words (its stderr's first line) */
    util_strlcpy(first, strbuf_str(&g_q.errtext), sizeof first);
    first[strcspn(first, "\r\n")] = 0;
    if (g_q.exit_status < 0) snprintf(st, sizeof st, "not run, killed or out of time");
    else if (g_q.exit_status > 0) snprintf(st, sizeof st, "exit status %lld", (long long)g_q.exit_status);
    else snprintf(st, sizeof st, "no job state in its answer");
    snprintf(why, sizeof why, "no answer after %d tr%s (%s%s%s)", g_q.attempts, g_q.attempts == 1 ? "y" : "ies",
             st, first[0] ? ": " : "", first);
  }
  LOG_INFO(SUP, "scontrol show job %s: %s", job_id(), why);
  uv_timer_stop(&g_q.timer);
  uv_timer_stop(&g_q.again);
  q_close((uv_handle_t *)&g_q.timer);
  q_close((uv_handle_t *)&g_q.again);
  if (g_q.open) {
    if (g_q.running) uv_process_kill(&g_q.proc, SIGKILL); /* never pid 0: a spawn that failed */
    q_close((uv_handle_t *)&g_q.proc);
    q_close((uv_handle_t *)&g_q.out);
    q_close((uv_handle_t *)&g_q.err);
  }
  strbuf_free(&g_q.text);
  strbuf_free(&g_q.errtext);
}

/* One scontrol is over (its process and both pipes closed): its answer, or another try. */
static void q_ran(void) {
  long before = 0;
  const char *rc = getenv("SLURM_RESTART_COUNT");
  if (rc) util_parse_long(rc, 0, 1L << 30, &before);
  g_q.end = g_q.exit_status == 0 && g_q.text.len ? slurm_end_classify(strbuf_str(&g_q.text), before)
                                                 : SLURM_END_UNKNOWN;
  uint64_t now = uv_now(g_q.loop);
  if (g_q.end || now + (uint64_t)(QUERY_AGAIN_S * 1000) >= g_q.deadline_ms) {
    q_finish();
    return;
  }
  uv_timer_start(&g_q.again, q_again, (uint64_t)(QUERY_AGAIN_S * 1000), 0);
}

static void q_closed(uv_handle_t *h) {
  if (h == (uv_handle_t *)&g_q.proc || h == (uv_handle_t *)&g_q.out || h == (uv_handle_t *)&g_q.err) {
    if (--g_q.open == 0 && !g_q.done) q_ran();
  }
}

static void q_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  static char mem[16384];
  (void)h;
  (void)suggested;
  buf->base = mem;
  buf->len = sizeof mem;
}

static void q_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf) {
  strbuf_t *into = st == (uv_stream_t *)&g_q.out ? &g_q.text : &g_q.errtext;
  if (n > 0) {
    if (into->len < 65536) strbuf_append_n(into, buf->base, (size_t)n);
    return;
  }
  if (n < 0) {
    uv_read_stop(st);
    q_close((uv_handle_t *)st);
  }
}

static void q_exit(uv_process_t *p, int64_t status, int sig) {
  g_q.running = 0;
  g_q.exit_status = sig ? -1 : status;
  q_close((uv_handle_t *)p);
}

static void q_timeout(uv_timer_t *t) {
  (void)t;
  LOG_INFO(SUP, "scontrol did not answer in time");
  if (g_q.open) g_q.exit_status = -1;
  q_finish();
}

/* Run scontrol once; its end comes back through q_ran. */
static void q_attempt(void) {
  if (g_q.done) return;
  char id[64];
  util_strlcpy(id, job_id(), sizeof id);
  char *args[] = {"scontrol", "show", "job", "-o", id, NULL};
  strbuf_free(&g_q.text);
  strbuf_free(&g_q.errtext);
  g_q.exit_status = 0;
  g_q.attempts++;
  uv_pipe_init(g_q.loop, &g_q.out, 0);
  uv_pipe_init(g_q.loop, &g_q.err, 0);
  uv_stdio_container_t stdio[3];
  stdio[0].flags = UV_IGNORE;
  stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  stdio[1].data.stream = (uv_stream_t *)&g_q.out;
  stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  stdio[2].data.stream = (uv_stream_t *)&g_q.err;
  uv_process_options_t po;
  memset(&po, 0, sizeof po);
  po.file = args[0];
  po.args = args;
  po.exit_cb = q_exit;
  po.stdio_count = 3;
  po.stdio = stdio;
  int rc = uv_spawn(g_q.loop, &g_q.proc, &po);
  g_q.open = 3;
  if (rc < 0) {
    LOG_INFO(SUP, "cannot run scontrol (%s): Slurm's reason for the signal stays unknown", uv_strerror(rc));
    g_q.exit_status = -1;
    q_finish(); /* no other try: it cannot run at all (the handles are closed there) */
    return;
  }
  g_q.running = 1;
  uv_read_start((uv_stream_t *)&g_q.out, q_alloc, q_read);
  uv_read_start((uv_stream_t *)&g_q.err, q_alloc, q_read);
}

int slurm_end_query_start(struct uv_loop_s *loop, double timeout) {
  if (g_q.started || !slurm_in_job()) return GPL_OK;
  g_q.started = 1;
  g_q.loop = loop;
  uv_update_time(loop);
  g_q.deadline_ms = uv_now(loop) + (uint64_t)(timeout * 1000);
  uv_timer_init(loop, &g_q.timer);
  uv_timer_init(loop, &g_q.again);
  uv_timer_start(&g_q.timer, q_timeout, (uint64_t)(timeout * 1000), 0);
  q_attempt();
  return GPL_OK;
}

int slurm_end_query_done(slurm_end_t *end) {
  *end = g_q.end;
  return !g_q.started || g_q.done;
}

void slurm_end_query_reset(void) {
  strbuf_free(&g_q.text);
  memset(&g_q, 0, sizeof g_q);
}
