/* The elastic controller (elastic_core.h): launch on the usable hosts (listed, not cooling down
 * after a loss or a notice), and after each launch decide: done, a membership change (restart on
 * the hosts there are now), or the job's own end. Pure state; the time comes with each call. */
#include "launcher/front/elastic_core.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/exitcode.h"
#include "launcher/front/elastic_claims.h"

/* ---- actions ---- */

static ecore_act_t *act_push(ecore_acts_t *a, ecore_act_type_t type) {
  if (a->n == a->cap) {
    int cap = a->cap ? a->cap * 2 : 8;
    ecore_act_t *v = realloc(a->v, (size_t)cap * sizeof *v);
    if (!v) { /* the controller cannot go on without its actions */
      fputs("gpulaunch-run: out of memory in the elastic controller\n", stderr);
      abort();
    }
    a->v = v;
    a->cap = cap;
  }
  ecore_act_t *x = &a->v[a->n++];
  memset(x, 0, sizeof *x);
  x->type = type;
  return x;
}

static void act_text(ecore_acts_t *a, ecore_act_type_t type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void act_text(ecore_acts_t *a, ecore_act_type_t type, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *text = NULL;
  int n = vasprintf(&text, fmt, ap);
  va_end(ap);
  if (n >= 0) act_push(a, type)->text = text;
}

static void act_hosts(ecore_acts_t *a, ecore_act_type_t type, const front_host_t *h, int n, int code) {
  ecore_act_t *x = act_push(a, type);
  x->code = code;
  x->nhosts = n;
  x->hosts = malloc((size_t)(n ? n : 1) * sizeof *h);
  if (!x->hosts) abort();
  memcpy(x->hosts, h, (size_t)n * sizeof *h);
}

static void act_exit(ecore_t *c, ecore_acts_t *a, int code) {
  act_push(a, ECORE_EXIT)->code = code;
  c->state = ECORE_DONE;
}

void ecore_acts_clear(ecore_acts_t *a) {
  for (int i = 0; i < a->n; i++) {
    free(a->v[i].text);
    free(a->v[i].hosts);
  }
  a->n = 0;
}

void ecore_acts_free(ecore_acts_t *a) {
  ecore_acts_clear(a);
  free(a->v);
  a->v = NULL;
  a->cap = 0;
}

/* ---- hosts ---- */

static int in_list(const front_host_t *h, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(h[i].name, name) == 0) return i;
  return -1;
}

static int cooling(const ecore_t *c, const char *name, double now) {
  for (int i = 0; i < c->ncool; i++)
    if (strcmp(c->cool[i].name, name) == 0 && c->cool[i].until > now) return 1;
  return 0;
}

static void cool_down(ecore_t *c, const char *name, double now) {
  for (int i = 0; i < c->ncool; i++)
    if (strcmp(c->cool[i].name, name) == 0) {
      c->cool[i].until = now + c->o.cooldown;
      return;
    }
  if (c->ncool < FRONT_HOST_MAX) {
    snprintf(c->cool[c->ncool].name, sizeof c->cool[0].name, "%s", name);
    c->cool[c->ncool++].until = now + c->o.cooldown;
  }
}

/* The hosts to launch on: the running set's hosts first while they are usable (ranks stay where
 * they were, rank 0's host first), then the source's new ones, at most max. Returns the count. */
static int choose(const ecore_t *c, double now, front_host_t *out) {
  int n = 0;
  for (int i = 0; i < c->ncur && n < c->o.max; i++) {
    int at = c->nseen > 0 ? in_list(c->seen, c->nseen, c->cur[i].name) : -1;
    if (at >= 0 && !cooling(c, c->cur[i].name, now)) out[n++] = c->seen[at];
  }
  for (int i = 0; i < c->nseen && n < c->o.max; i++)
    if (in_list(out, n, c->seen[i].name) < 0 && !cooling(c, c->seen[i].name, now)) out[n++] = c->seen[i];
  return n;
}

void ecore_host_list(const front_host_t *h, int n, char *out, size_t len) {
  size_t off = 0;
  out[0] = 0;
  int i = 0;
  for (; i < n && off + 80 < len; i++) /* a name is < 64 bytes, slots < 7 digits */
    off += (size_t)snprintf(out + off, len - off, "%s%s:%d", i ? "," : "", h[i].name, h[i].slots);
  if (i < n) snprintf(out + off, len - off, ",...");
}

/* The hosts listed but left out (cooling down), for the below-MIN messages. */
static void left_out(const ecore_t *c, double now, char *out, size_t len) {
  size_t off = 0;
  out[0] = 0;
  for (int i = 0; i < c->ncool && off + 100 < len; i++)
    if (c->cool[i].until > now)
      off += (size_t)snprintf(out + off, len - off, "%s%s (for %.0f s more)", off ? ", " : "", c->cool[i].name,
                              c->cool[i].until - now);
}

/* ---- the restarts' record ---- */

static cJSON *host_array(const front_host_t *h, int n, const int *pick, int want) {
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; arr && i < n; i++)
    if (!pick || pick[i] == want) cJSON_AddItemToArray(arr, cJSON_CreateString(h[i].name));
  return arr;
}

/* One restart for --summary and the audit log: its number, time, cause, hosts before and after,
 * the seconds from the change to the new launch, and the partition behind it (if one was). */
static void record(ecore_t *c, const front_host_t *after, int nafter, double now, ecore_acts_t *a) {
  char hb[4096], ha[4096];
  ecore_host_list(c->cur, c->ncur, hb, sizeof hb);
  ecore_host_list(after, nafter, ha, sizeof ha);
  cJSON *o = cJSON_CreateObject();
  if (!o) return;
  cJSON_AddNumberToObject(o, "restart", c->restarts);
  cJSON_AddNumberToObject(o, "time", (double)(long)(now + c->o.wall_offset));
  cJSON_AddStringToObject(o, "cause", c->why);
  cJSON_AddStringToObject(o, "hosts_before", hb);
  cJSON_AddStringToObject(o, "hosts_after", ha);
  cJSON_AddNumberToObject(o, "seconds_to_relaunch", (double)(long)((now - c->change_at) * 100 + 0.5) / 100);
  if (c->claims) { /* who named which hosts lost */
    cJSON_AddItemToObject(o, "claims", c->claims);
    c->claims = NULL;
  }
  if (c->partition) {
    cJSON_AddItemToObject(o, "partition", c->partition);
    c->partition = NULL;
  }
  cJSON *h = c->history;
  if (cJSON_GetArraySize(h) == ECORE_HISTORY_MAX) cJSON_DeleteItemFromArray(h, 0);
  cJSON_AddItemToArray(h, o);
  char *all = cJSON_PrintUnformatted(h);
  if (all) act_push(a, ECORE_RECORD)->text = all;
}

/* ---- partitions ---- */

/* The hosts named lost: left out; a partition is resolved first (the claims and the decision in
 * c->why, c->claims and c->partition). keep[i]: cur[i] stays. */
static void take_claims(ecore_t *c, const ecore_end_t *end, double now, int *keep) {
  char claims[1024];
  cJSON_Delete(c->claims);
  c->claims = end->nclaims ? cJSON_CreateArray() : NULL;
  ecore_describe_claims(end->claims, end->nclaims, claims, sizeof claims, c->claims);
  int split = ecore_resolve(c->cur, c->ncur, end->claims, end->nclaims, keep), nkept = 0;
  for (int i = 0; i < c->ncur; i++) nkept += keep[i];
  if (split) {
    char kept[400] = "", out[400] = "";
    cJSON *p = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    ecore_describe_claims(end->claims, end->nclaims, claims, sizeof claims, arr);
    int r0kept = 0, r0 = 0, by_launcher = 0;
    for (int k = 0; k < end->nclaims; k++)
      if (end->claims[k].rank0 && !end->claims[k].launcher && in_list(c->cur, c->ncur, end->claims[k].by) >= 0)
        r0 = in_list(c->cur, c->ncur, end->claims[k].by);
    for (int i = 0; i < c->ncur; i++) {
      ecore_add_word(keep[i] ? kept : out, keep[i] ? sizeof kept : sizeof out, c->cur[i].name);
      if (keep[i] && i == r0) r0kept = 1;
      if (!keep[i]) cool_down(c, c->cur[i].name, now);
      for (int k = 0; k < end->nclaims && !keep[i]; k++)
        by_launcher |= end->claims[k].launcher && strcmp(end->claims[k].lost, c->cur[i].name) == 0;
    }
    int tie = 2 * nkept == c->ncur;
    const char *rule = by_launcher ? "the side mpirun still reaches" : tie ? "a tie: rank 0's side" : "the larger side";
    snprintf(c->why, sizeof c->why, "network partition (%s): kept %s (%s), left out %s", claims, kept, rule, out);
    cJSON_AddItemToObject(p, "claims", arr);
    cJSON_AddItemToObject(p, "kept", host_array(c->cur, c->ncur, keep, 1));
    cJSON_AddItemToObject(p, "left_out", host_array(c->cur, c->ncur, keep, 0));
    cJSON_AddStringToObject(p, "rule", by_launcher ? "mpirun's side" : tie ? "tie, rank 0's side" : "larger side");
    cJSON_AddBoolToObject(p, "rank0_side_kept", r0kept);
    cJSON_Delete(c->partition);
    c->partition = p;
  } else { /* "host h2 lost, host h3 lost", in the order named; the launcher's alone said so */
    for (int k = 0; k < end->nclaims; k++) {
      int dup = 0, rank_said = 0;
      for (int i = 0; i < k && !dup; i++) dup = strcmp(end->claims[i].lost, end->claims[k].lost) == 0;
      for (int i = 0; i < end->nclaims; i++)
        rank_said |= !end->claims[i].launcher && strcmp(end->claims[i].lost, end->claims[k].lost) == 0;
      size_t off = strlen(c->why);
      if (dup || off + 200 >= sizeof c->why) continue;
      cool_down(c, end->claims[k].lost, now);
      snprintf(c->why + off, sizeof c->why - off, "%shost %s lost", off ? ", " : "", end->claims[k].lost);
      if (!rank_said)
        snprintf(c->why + strlen(c->why), sizeof c->why - strlen(c->why), " (mpirun%s%s lost its daemon there)",
                 *end->claims[k].by ? " on " : "", end->claims[k].by);
    }
  }
}

/* Probe hosts (every one of the launch's, or those the launcher did not name lost): ECORE_PROBE. */
static void probe(ecore_t *c, int code, int named, const int *skip, ecore_acts_t *a) {
  c->nprobed = 0;
  for (int i = 0; i < c->ncur; i++)
    if (!skip || !skip[i]) c->probed[c->nprobed++] = c->cur[i];
  c->state = ECORE_PROBING;
  c->end_code = code;
  c->probe_named = named;
  act_hosts(a, ECORE_PROBE, c->probed, c->nprobed, 0);
}

/* ---- the loop's steps ---- */

/* Launch on the usable hosts when there are MIN, else wait (bounded by min_wait), then exit. */
static void try_launch(ecore_t *c, double now, ecore_acts_t *a) {
  if (!c->read_once) return; /* the source's first read (bounded by the driver's timeout) */
  front_host_t *hosts = malloc(FRONT_HOST_MAX * sizeof *hosts);
  if (!hosts) abort();
  int n = choose(c, now, hosts);
  char list[4096], out[1024];
  ecore_host_list(hosts, n, list, sizeof list);
  if (n >= c->o.min) {
    if (c->restarts == 0) {
      act_text(a, ECORE_SAY, "elastic job on %d host%s (%d to %d): %s", n, n == 1 ? "" : "s", c->o.min, c->o.max,
               list);
    } else {
      act_text(a, ECORE_SAY, "restart %d: %s; going on with %d host%s: %s (relaunched %.1f s after the change)",
               c->restarts, c->why, n, n == 1 ? "" : "s", list, now - c->change_at);
      record(c, hosts, n, now, a);
    }
    act_hosts(a, ECORE_LAUNCH, hosts, n, c->restarts);
    memcpy(c->cur, hosts, (size_t)n * sizeof *hosts);
    c->ncur = n;
    c->last_launch = now;
    c->stop_why[0] = 0;
    c->state = ECORE_RUNNING;
  } else if (now - c->wait_since >= c->o.min_wait) {
    left_out(c, now, out, sizeof out);
    act_text(a, ECORE_SAY, "fewer than %d usable hosts for %.0f s: %d usable (%s)%s%s; ending (exit status %d)",
             c->o.min, c->o.min_wait, n, n ? list : "none", *out ? "; left out after a loss or notice: " : "", out,
             GPL_EXIT_BELOW_MIN);
    act_exit(c, a, GPL_EXIT_BELOW_MIN);
  } else if (!c->wait_said) {
    left_out(c, now, out, sizeof out);
    act_text(a, ECORE_SAY, "%d usable host%s, %d needed: waiting up to %.0f s for more%s%s", n, n == 1 ? "" : "s",
             c->o.min, c->o.min_wait, *out ? "; left out: " : "", out);
    c->wait_said = 1;
  }
  free(hosts);
}

/* While the job runs: grow when hosts came back (not more often than scale_up_every), shrink when
 * a running host left the host source. */
static void check_running(ecore_t *c, double now, ecore_acts_t *a) {
  if (c->stop_why[0] || c->nseen < 0) return;
  char gone[256] = "", joined[256] = "";
  for (int i = 0; i < c->ncur; i++)
    if (in_list(c->seen, c->nseen, c->cur[i].name) < 0) ecore_add_word(gone, sizeof gone, c->cur[i].name);
  int room = c->o.max - c->ncur;
  for (int i = 0; i < c->nseen && room > 0; i++)
    if (in_list(c->cur, c->ncur, c->seen[i].name) < 0 && !cooling(c, c->seen[i].name, now)) {
      room--;
      ecore_add_word(joined, sizeof joined, c->seen[i].name);
    }
  if (*gone) {
    snprintf(c->stop_why, sizeof c->stop_why, "%s left the host list", gone);
    act_text(a, ECORE_SAY, "%s: stopping the job with the grace to go on without it", c->stop_why);
  } else if (*joined && now - c->last_launch >= c->o.scale_up_every) {
    snprintf(c->stop_why, sizeof c->stop_why, "scale-up: %s joined", joined);
    act_text(a, ECORE_SAY, "%s: stopping the job with the grace to start again on more hosts", c->stop_why);
  } else {
    return;
  }
  act_text(a, ECORE_STOP, "%s", c->stop_why);
}

/* The membership change is known (c->why, "" none): restart, or end with code. */
static void decide(ecore_t *c, int code, int named, double now, ecore_acts_t *a) {
  if (!c->why[0]) { /* the program failed on healthy hosts: [job] restarts applied already */
    act_exit(c, a, code);
    return;
  }
  c->unnamed = named ? 0 : c->unnamed + 1;
  if (c->unnamed > 1) {
    act_text(a, ECORE_SAY, "%s again: ending (exit status %d)", c->why, code);
    act_exit(c, a, code);
  } else if (c->o.max_restarts >= 0 && c->restarts >= c->o.max_restarts) {
    act_text(a, ECORE_SAY, "%s, but %d membership restart%s were allowed (--max-restarts): ending (exit status %d)",
             c->why, c->o.max_restarts, c->o.max_restarts == 1 ? "" : "s", code);
    act_exit(c, a, code);
  } else {
    c->restarts++;
    c->state = ECORE_WAITING;
    c->wait_since = now;
    c->wait_said = 0;
    try_launch(c, now, a);
  }
  if (c->state == ECORE_DONE) {
    cJSON_Delete(c->partition);
    cJSON_Delete(c->claims);
    c->partition = c->claims = NULL;
  }
}

/* ---- the calls ---- */

int ecore_init(ecore_t *c, const ecore_opts_t *o) {
  memset(c, 0, sizeof *c);
  c->o = *o;
  c->nseen = -1;
  c->seen = calloc(FRONT_HOST_MAX, sizeof *c->seen);
  c->cur = calloc(FRONT_HOST_MAX, sizeof *c->cur);
  c->cool = calloc(FRONT_HOST_MAX, sizeof *c->cool);
  c->probed = calloc(FRONT_HOST_MAX, sizeof *c->probed);
  c->history = cJSON_CreateArray();
  if (!c->seen || !c->cur || !c->cool || !c->probed || !c->history) {
    ecore_free(c);
    return -1;
  }
  return 0;
}

void ecore_free(ecore_t *c) {
  free(c->seen);
  free(c->cur);
  free(c->cool);
  free(c->probed);
  cJSON_Delete(c->history);
  cJSON_Delete(c->partition);
  cJSON_Delete(c->claims);
  memset(c, 0, sizeof *c);
}

void ecore_hosts(ecore_t *c, const front_host_t *h, int n, const char *err, double now, ecore_acts_t *a) {
  if (n < 0 && err && strcmp(err, c->read_err) != 0) act_text(a, ECORE_SAY, "%s (the host list stays as it was)", err);
  snprintf(c->read_err, sizeof c->read_err, "%s", n < 0 && err ? err : "");
  if (n >= 0) {
    if (n > FRONT_HOST_MAX) n = FRONT_HOST_MAX;
    memcpy(c->seen, h, (size_t)n * sizeof *h);
    c->nseen = n;
  }
  if (!c->read_once) c->wait_since = now;
  c->read_once = 1;
  ecore_tick(c, now, a);
}

void ecore_tick(ecore_t *c, double now, ecore_acts_t *a) {
  if (c->state == ECORE_WAITING) try_launch(c, now, a);
  else if (c->state == ECORE_RUNNING) check_running(c, now, a);
}

/* One host alone named every other host of the launch lost (3 hosts or more) and nobody else spoke:
 * more likely that host cut off than all the others lost (its claims are one side of a partition
 * whose other side's claims did not come). Its name, else NULL. */
static const char *alone_against_all(const ecore_t *c, const ecore_end_t *end) {
  if (c->ncur < 3 || !end->nclaims || !*end->claims[0].by || end->claims[0].launcher) return NULL;
  const char *by = end->claims[0].by;
  int named = 0;
  for (int k = 0; k < end->nclaims; k++) {
    if (end->claims[k].launcher || strcmp(end->claims[k].by, by) != 0) return NULL;
    named += strcmp(end->claims[k].lost, by) != 0 && in_list(c->cur, c->ncur, end->claims[k].lost) >= 0;
  }
  return in_list(c->cur, c->ncur, by) >= 0 && named == c->ncur - 1 ? by : NULL;
}

void ecore_launch_ended(ecore_t *c, const ecore_end_t *end, double now, ecore_acts_t *a) {
  if (c->state != ECORE_RUNNING) return;
  int code = end->code;
  if (end->user_stop || code == 0) {
    act_exit(c, a, code);
    return;
  }
  c->change_at = end->stop_asked_at > 0 ? end->stop_asked_at : now;
  c->why[0] = 0;
  const char *alone = end->user_stop || end->asked_stop || end->nnotice ? NULL : alone_against_all(c, end);
  if (alone) { /* the probe from here says which side is cut off */
    char said[1024];
    cJSON_Delete(c->claims);
    c->claims = cJSON_CreateArray();
    ecore_describe_claims(end->claims, end->nclaims, said, sizeof said, c->claims);
    snprintf(c->why, sizeof c->why, "%s, every other host (nobody else named a host): probed; ", said);
    probe(c, code, 1, NULL, a);
    return;
  }
  int keep[FRONT_HOST_MAX], launcher_only = end->nclaims > 0;
  take_claims(c, end, now, keep);
  for (int k = 0; k < end->nclaims; k++) launcher_only &= end->claims[k].launcher;
  for (int i = 0; i < end->nnotice; i++) {
    size_t off = strlen(c->why);
    if (off + 100 >= sizeof c->why) break;
    cool_down(c, end->notice[i], now);
    snprintf(c->why + off, sizeof c->why - off, "%shost %s announced its interruption", off ? ", " : "",
             end->notice[i]);
  }
  int named = end->nclaims || end->nnotice;
  if (!named && end->asked_stop && c->stop_why[0]) snprintf(c->why, sizeof c->why, "%s", c->stop_why);
  /* Only mpirun named hosts (its keepalive gave up on their daemons and it ended the launch before
   * any rank's claim came; it names one and counts the others): the rest are probed. */
  int nrest = 0;
  for (int i = 0; i < c->ncur; i++) nrest += keep[i];
  if (launcher_only && !end->nnotice && !end->asked_stop && nrest) {
    for (int i = 0; i < c->ncur; i++) keep[i] = !keep[i]; /* (the ones to skip) */
    probe(c, code, 1, keep, a);
    return;
  }
  if (named || end->asked_stop) {
    decide(c, code, named || end->asked_stop, now, a);
    return;
  }
  /* Nobody named a host, yet the launch lost a rank, failed the network checks or did not start
   * (a host that went with others at once, one that cannot be reached at all): the hosts where
   * the launcher cannot start a program now are the ones to leave out. A config error and the
   * like (gpulaunch's own codes, the job started or not) are no membership change; neither is a
   * program's failure. Also when rank 0 never said the job's status: mpirun itself ended the job,
   * as it does when its keepalive gives up on a host's daemon before the liveness tree names it. */
  int own = code >= GPL_EXIT_OWN_FIRST && code <= GPL_EXIT_OWN_LAST;
  if (code == GPL_EXIT_TIMEOUT || code == GPL_EXIT_NETWORK || end->start_timed_out ||
      (!end->rank0_seen && !own) || (end->rank0_seen && !end->verdict_said)) {
    probe(c, code, 0, NULL, a);
    return;
  }
  decide(c, code, 0, now, a);
}

void ecore_probe_result(ecore_t *c, const int *ok, double now, ecore_acts_t *a) {
  if (c->state != ECORE_PROBING) return;
  c->state = ECORE_RUNNING; /* (decide moves on from here; c->why: the launcher's word, if any) */
  for (int i = 0; ok && i < c->nprobed; i++) {
    size_t off = strlen(c->why);
    if (ok[i] || off + 100 >= sizeof c->why) continue;
    cool_down(c, c->probed[i].name, now);
    snprintf(c->why + off, sizeof c->why - off, "%shost %s unreachable", off && c->why[off - 1] != ' ' ? ", " : "",
             c->probed[i].name);
  }
  size_t w = strlen(c->why);
  if (w > 2 && strcmp(c->why + w - 2, "; ") == 0) /* (one host against all: nobody unreachable) */
    snprintf(c->why + w, sizeof c->why - w, "%s", ok ? "every host answered" : "the probe could not run");
  if (!c->why[0] && c->end_code == GPL_EXIT_TIMEOUT)
    snprintf(c->why, sizeof c->why, "a rank was lost (exit status %d) and no host was named", GPL_EXIT_TIMEOUT);
  decide(c, c->end_code, c->probe_named, now, a);
}
