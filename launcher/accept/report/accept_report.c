/* The accept report: check results and measurements, their JSON form, the exit status rule and
 * the exclude list of bad hosts. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/safefile.h"
#include "common/check.h"
#include "common/util.h"
#include "gpulaunch/version.h"
#include "launcher/accept/accept.h"
#include "launcher/exitcode.h"

static const char *const g_status[ACCEPT_NSTATUS] = {"pass", "warn", "fail", "skipped", "error"};

const char *accept_status_name(accept_status_t s) {
  return s >= 0 && s < ACCEPT_NSTATUS ? g_status[s] : "unknown";
}

int accept_status_parse(const char *s, accept_status_t *out) {
  for (int i = 0; i < ACCEPT_NSTATUS; i++)
    if (s && strcmp(s, g_status[i]) == 0) {
      *out = (accept_status_t)i;
      return GPL_OK;
    }
  return GPL_EINVAL;
}

/* What each check is, in words for someone who never used the tool (HTML, JUnit). */
static const struct {
  const char *name, *desc;
} g_desc[] = {
    {"topology", "the node's hardware could be read (hwloc)"},
    {"placement", "every rank could be placed on its GPU, CPUs and NIC, and the start-up checks passed"},
    {"gpu_count", "the node has the number of GPUs expected"},
    {"gpu_model", "every GPU is the model expected"},
    {"pcie_link", "the GPU's PCIe link runs at full width and generation"},
    {"nic", "an expected network card is present and its link is up"},
    {"nic_speed", "the network card's link speed is at least the minimum"},
    {"gpu_nic_path", "the GPU has a network card close by on PCIe (for GPUDirect RDMA)"},
    {"majority", "the node's hardware (GPU count and model, NICs, PCIe and NVLink links) is what most "
                 "nodes have"},
    {"numa_binding", "the rank runs on CPUs of its GPU's NUMA node"},
    {"ecc", "no uncorrectable GPU memory errors (NVML)"},
    {"retired_pages", "GPU memory: no retirement or row remap pending, no failed remap (NVML)"},
    {"xid", "the kernel log has no NVIDIA Xid errors"},
    {"clocks", "the GPU's clocks are not slowed down (thermal, power brake) (NVML)"},
    {"temperature", "the GPU temperature is below the limit (NVML)"},
    {"nvlink", "every NVLink of the GPU is active (NVML)"},
    {"reachability", "the start-up's interface agreement and TCP preflight connect every node"},
    {"reach", "one node (its first rank) could not reach another in the preflight"},
    {"busbw", "allreduce bus bandwidth of the whole job is at least the threshold"},
    {"pair_search", "node pairs: no node or link is much slower than the others"},
    {"bad_node", "this node is slow with every partner: likely its network card, cable or port"},
    {"bad_link", "this pair of nodes is slow together while both are fast with others"},
    {"allreduce_latency", "a small allreduce of the whole job (p50, p99) is within the bound"},
    {"latency", "the node's fastest round trip to another node is as fast as the majority's"},
    {"rtt", "round trip of 8 bytes between two nodes (p50, p99): not slow against the majority"},
    {"efa_plugin", "EFA NICs: NCCL's network plugin for them (aws-ofi-nccl) can be found"},
    {"report", "a report file asked for (--json, --junit, --html, --exclude-out) could be written"},
};

const char *accept_check_desc(const char *name) {
  for (size_t i = 0; i < sizeof g_desc / sizeof g_desc[0]; i++)
    if (strcmp(g_desc[i].name, name) == 0) return g_desc[i].desc;
  return "";
}

/* ---- checks ---- */

void accept_check_init(accept_check_t *c, const char *name, const char *host, int node, int rank,
                       const char *subject) {
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  snprintf(c->host, sizeof c->host, "%s", host ? host : "");
  snprintf(c->subject, sizeof c->subject, "%s", subject ? subject : "");
  c->node = node;
  c->rank = rank;
  c->status = ACCEPT_SKIP;
}

void accept_check_set(accept_check_t *c, accept_status_t st, const char *fmt, ...) {
  va_list ap;
  c->status = st;
  va_start(ap, fmt);
  vsnprintf(c->detail, sizeof c->detail, fmt, ap);
  va_end(ap);
}

void accept_check_value(accept_check_t *c, double v, const char *unit, const char *fmt, ...) {
  c->has_value = 1;
  c->value = v;
  snprintf(c->unit, sizeof c->unit, "%s", unit ? unit : "");
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->value_text, sizeof c->value_text, fmt, ap);
    va_end(ap);
  } else {
    snprintf(c->value_text, sizeof c->value_text, "%g%s%s", v, *c->unit ? " " : "", c->unit);
  }
}

void accept_check_text(accept_check_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->value_text, sizeof c->value_text, fmt, ap);
  va_end(ap);
}

void accept_check_threshold(accept_check_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->threshold, sizeof c->threshold, fmt, ap);
  va_end(ap);
}

int accept_list_add(accept_list_t *l, const accept_check_t *c) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    accept_check_t *v = realloc(l->v, (size_t)cap * sizeof *v);
    ALLOCCHECK(v);
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = *c;
  return GPL_OK;
}

void accept_list_free(accept_list_t *l) {
  free(l->v);
  memset(l, 0, sizeof *l);
}

cJSON *accept_check_to_json(const accept_check_t *c) {
  cJSON *j = cJSON_CreateObject();
  if (!j) return NULL;
  cJSON_AddStringToObject(j, "name", c->name);
  cJSON_AddStringToObject(j, "scope", c->node < 0 ? "job" : c->rank >= 0 ? "rank" : "node");
  cJSON_AddStringToObject(j, "host", c->host);
  cJSON_AddNumberToObject(j, "node", c->node);
  cJSON_AddNumberToObject(j, "rank", c->rank);
  cJSON_AddStringToObject(j, "subject", c->subject);
  cJSON_AddStringToObject(j, "status", accept_status_name(c->status));
  if (c->has_value) cJSON_AddNumberToObject(j, "value", c->value);
  else cJSON_AddNullToObject(j, "value");
  cJSON_AddStringToObject(j, "unit", c->unit);
  cJSON_AddStringToObject(j, "value_text", c->value_text);
  cJSON_AddStringToObject(j, "threshold", c->threshold);
  cJSON_AddStringToObject(j, "detail", c->detail);
  cJSON_AddStringToObject(j, "description", accept_check_desc(c->name));
  return j;
}

static void copy_str(const cJSON *j, const char *key, char *dst, size_t len) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  snprintf(dst, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

int accept_check_from_json(const cJSON *j, accept_check_t *c) {
  if (!cJSON_IsObject(j)) return GPL_EINVAL;
  memset(c, 0, sizeof *c);
  copy_str(j, "name", c->name, sizeof c->name);
  copy_str(j, "host", c->host, sizeof c->host);
  copy_str(j, "subject", c->subject, sizeof c->subject);
  copy_str(j, "unit", c->unit, sizeof c->unit);
  copy_str(j, "value_text", c->value_text, sizeof c->value_text);
  copy_str(j, "threshold", c->threshold, sizeof c->threshold);
  copy_str(j, "detail", c->detail, sizeof c->detail);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "node");
  c->node = cJSON_IsNumber(v) ? v->valueint : -1;
  v = cJSON_GetObjectItemCaseSensitive(j, "rank");
  c->rank = cJSON_IsNumber(v) ? v->valueint : -1;
  v = cJSON_GetObjectItemCaseSensitive(j, "value");
  if (cJSON_IsNumber(v)) {
    c->has_value = 1;
    c->value = v->valuedouble;
  }
  v = cJSON_GetObjectItemCaseSensitive(j, "status");
  if (!cJSON_IsString(v) || accept_status_parse(v->valuestring, &c->status) < 0) return GPL_EINVAL;
  if (!c->name[0]) return GPL_EINVAL;
  return GPL_OK;
}

/* ---- report ---- */

void accept_report_init(accept_report_t *r) {
  memset(r, 0, sizeof *r);
  r->ar_threshold = -1;
  r->fraction = 0.93;
}

static void free_strs(char **v, int n) {
  for (int i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

void accept_report_free(accept_report_t *r) {
  free(r->checks);
  for (int i = 0; i < r->nmeas; i++) free(r->meas[i].nodes);
  free(r->meas);
  free_strs(r->hosts, r->nnodes);
  free_strs(r->bad_hosts, r->nbad);
  free_strs(r->bad_links, r->nbadlinks);
  cJSON_Delete(r->settings);
  cJSON_Delete(r->latency);
  memset(r, 0, sizeof *r);
}

int accept_report_add(accept_report_t *r, const accept_check_t *c) {
  if (r->nchecks == r->cap) {
    int cap = r->cap ? 2 * r->cap : 32;
    accept_check_t *v = realloc(r->checks, (size_t)cap * sizeof *v);
    ALLOCCHECK(v);
    r->checks = v;
    r->cap = cap;
  }
  r->checks[r->nchecks++] = *c;
  return GPL_OK;
}

int accept_report_add_meas(accept_report_t *r, const accept_meas_t *m) {
  if (r->nmeas == r->mcap) {
    int cap = r->mcap ? 2 * r->mcap : 16;
    accept_meas_t *v = realloc(r->meas, (size_t)cap * sizeof *v);
    ALLOCCHECK(v);
    r->meas = v;
    r->mcap = cap;
  }
  accept_meas_t *d = &r->meas[r->nmeas];
  *d = *m;
  d->nodes = NULL;
  if (m->nnodes > 0) {
    d->nodes = malloc((size_t)m->nnodes * sizeof *d->nodes);
    ALLOCCHECK(d->nodes);
    memcpy(d->nodes, m->nodes, (size_t)m->nnodes * sizeof *d->nodes);
  }
  r->nmeas++;
  return GPL_OK;
}

static int add_unique(char ***v, int *n, const char *s) {
  if (!s || !*s) return GPL_OK;
  for (int i = 0; i < *n; i++)
    if (strcmp((*v)[i], s) == 0) return GPL_OK;
  char **nv = realloc(*v, (size_t)(*n + 1) * sizeof *nv);
  ALLOCCHECK(nv);
  *v = nv;
  nv[*n] = strdup(s);
  ALLOCCHECK(nv[*n]);
  (*n)++;
  return GPL_OK;
}

int accept_report_add_bad_host(accept_report_t *r, const char *host) {
  return add_unique(&r->bad_hosts, &r->nbad, host);
}

int accept_report_add_bad_link(accept_report_t *r, const char *label) {
  return add_unique(&r->bad_links, &r->nbadlinks, label);
}

void accept_report_counts(const accept_report_t *r, int *counts) {
  memset(counts, 0, ACCEPT_NSTATUS * sizeof *counts);
  for (int i = 0; i < r->nchecks; i++) counts[r->checks[i].status]++;
}

int accept_exit_code(const accept_report_t *r) {
  int n[ACCEPT_NSTATUS];
  accept_report_counts(r, n);
  if (n[ACCEPT_FAIL]) return GPL_EXIT_ACCEPT_FAIL;
  if (n[ACCEPT_ERROR]) return GPL_EXIT_ACCEPT_ERROR;
  if (r->strict && n[ACCEPT_WARN]) return GPL_EXIT_ACCEPT_FAIL;
  return GPL_EXIT_OK;
}

accept_status_t accept_verdict(int exit_code) {
  return exit_code == GPL_EXIT_OK ? ACCEPT_PASS : exit_code == GPL_EXIT_ACCEPT_FAIL ? ACCEPT_FAIL : ACCEPT_ERROR;
}

void accept_report_collect_bad_hosts(accept_report_t *r) {
  for (int i = 0; i < r->nchecks; i++) {
    const accept_check_t *c = &r->checks[i];
    if (c->node < 0 || !c->host[0]) continue;
    if (c->status == ACCEPT_FAIL || (r->strict && c->status == ACCEPT_WARN))
      accept_report_add_bad_host(r, c->host);
  }
}

/* ---- JSON ---- */

cJSON *accept_report_json(const accept_report_t *r) {
  cJSON *doc = cJSON_CreateObject();
  if (!doc) return NULL;
  int n[ACCEPT_NSTATUS];
  accept_report_counts(r, n);
  cJSON_AddStringToObject(doc, "tool", "gpulaunch accept");
  cJSON_AddStringToObject(doc, "version", GPULAUNCH_VERSION_STRING);
  cJSON_AddStringToObject(doc, "started", r->started);
  cJSON_AddNumberToObject(doc, "seconds", r->seconds);
  cJSON_AddStringToObject(doc, "verdict", accept_status_name(accept_verdict(r->exit_code)));
  cJSON_AddNumberToObject(doc, "exit_code", r->exit_code);
  cJSON_AddBoolToObject(doc, "strict", r->strict);
  cJSON_AddNumberToObject(doc, "nodes", r->nnodes);
  cJSON_AddNumberToObject(doc, "ranks", r->nranks);
  cJSON *hosts = cJSON_AddArrayToObject(doc, "hosts");
  for (int i = 0; i < r->nnodes; i++) cJSON_AddItemToArray(hosts, cJSON_CreateString(r->hosts[i]));
  cJSON *cnt = cJSON_AddObjectToObject(doc, "counts");
  for (int s = 0; s < ACCEPT_NSTATUS; s++) cJSON_AddNumberToObject(cnt, g_status[s], n[s]);
  if (r->settings) cJSON_AddItemToObject(doc, "settings", cJSON_Duplicate(r->settings, 1));
  cJSON *ar = cJSON_AddObjectToObject(doc, "allreduce");
  cJSON_AddStringToObject(ar, "backend", r->backend);
  cJSON_AddNumberToObject(ar, "bytes", r->ar_bytes);
  cJSON_AddNumberToObject(ar, "iters", r->ar_iters);
  cJSON_AddNumberToObject(ar, "seconds", r->ar_seconds);
  cJSON_AddNumberToObject(ar, "algbw_GBps", r->ar_algbw);
  cJSON_AddNumberToObject(ar, "busbw_GBps", r->ar_busbw);
  if (r->ar_threshold >= 0) cJSON_AddNumberToObject(ar, "min_busbw_GBps", r->ar_threshold);
  else cJSON_AddNullToObject(ar, "min_busbw_GBps");
  cJSON_AddStringToObject(ar, "min_busbw_source", r->threshold_source);
  cJSON *se = cJSON_AddObjectToObject(doc, "search");
  cJSON_AddStringToObject(se, "mode", r->search_mode);
  cJSON_AddNumberToObject(se, "pair_fraction", r->fraction);
  cJSON_AddStringToObject(se, "summary", r->search_summary);
  cJSON_AddNumberToObject(se, "noise", r->search_jitter);
  cJSON_AddStringToObject(se, "rule", r->search_rule);
  cJSON *ms = cJSON_AddArrayToObject(se, "measurements");
  for (int i = 0; i < r->nmeas; i++) {
    const accept_meas_t *m = &r->meas[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "phase", m->phase);
    cJSON_AddNumberToObject(o, "round", m->round);
    cJSON *nodes = cJSON_AddArrayToObject(o, "nodes");
    cJSON *mh = cJSON_AddArrayToObject(o, "hosts");
    for (int k = 0; k < m->nnodes; k++) {
      cJSON_AddItemToArray(nodes, cJSON_CreateNumber(m->nodes[k]));
      int nd = m->nodes[k];
      cJSON_AddItemToArray(mh, cJSON_CreateString(nd >= 0 && nd < r->nnodes ? r->hosts[nd] : ""));
    }
    cJSON_AddStringToObject(o, "label", m->label);
    cJSON_AddNumberToObject(o, "busbw_GBps", m->busbw);
    cJSON *sm = cJSON_AddArrayToObject(o, "samples_GBps");
    for (int k = 0; k < m->nsamples && k < ACCEPT_PASSES_MAX; k++) cJSON_AddItemToArray(sm, cJSON_CreateNumber(m->samples[k]));
    cJSON_AddNumberToObject(o, "reference_GBps", m->reference);
    cJSON_AddBoolToObject(o, "flagged", m->flagged);
    cJSON_AddItemToArray(ms, o);
  }
  if (r->latency) cJSON_AddItemToObject(doc, "latency", cJSON_Duplicate(r->latency, 1));
  cJSON *bad = cJSON_AddArrayToObject(doc, "bad_hosts");
  for (int i = 0; i < r->nbad; i++) cJSON_AddItemToArray(bad, cJSON_CreateString(r->bad_hosts[i]));
  cJSON *bl = cJSON_AddArrayToObject(doc, "bad_links");
  for (int i = 0; i < r->nbadlinks; i++) cJSON_AddItemToArray(bl, cJSON_CreateString(r->bad_links[i]));
  cJSON *checks = cJSON_AddArrayToObject(doc, "checks");
  for (int i = 0; i < r->nchecks; i++) cJSON_AddItemToArray(checks, accept_check_to_json(&r->checks[i]));
  return doc;
}

/* Why the last report that could not be written failed (rank 0 writes the reports, one thread). */
static char g_write_err[ACCEPT_DETAIL_LEN];

int accept_write_text(const char *path, const char *text) {
  char err[4400];
  int rc = safefile_write_text(path, text, err, sizeof err);
  if (rc < 0) {
    LOG_WARN("cannot write: %s", err);
    util_strlcpy(g_write_err, err, sizeof g_write_err);
  }
  return rc;
}

const char *accept_write_error(void) { return g_write_err; }

int accept_write_json(const accept_report_t *r, const char *path) {
  cJSON *doc = accept_report_json(r);
  ALLOCCHECK(doc);
  char *text = cJSON_Print(doc);
  cJSON_Delete(doc);
  ALLOCCHECK(text);
  size_t n = strlen(text);
  char *t2 = realloc(text, n + 2);
  if (!t2) {
    free(text);
    return GPL_ENOMEM;
  }
  t2[n] = '\n';
  t2[n + 1] = 0;
  int rc = accept_write_text(path, t2);
  free(t2);
  return rc;
}

int accept_write_exclude(const accept_report_t *r, const char *path) {
  /* Host names only, one per line (an empty file when none): `wc -l`, `grep -vxFf` and
   * scripts/hostfile --exclude all read it as is. */
  strbuf_t b = STRBUF_INIT;
  for (int i = 0; i < r->nbad; i++) strbuf_printf(&b, "%s\n", r->bad_hosts[i]);
  return accept_write_strbuf(path, &b);
}

int accept_write_strbuf(const char *path, strbuf_t *b) {
  int rc = b->oom ? GPL_ENOMEM : accept_write_text(path, strbuf_str(b));
  strbuf_free(b);
  return rc;
}

/* The parts of a report the writers use, back from the JSON document (tests render reports
 * made by hand; a saved JSON can be rendered again). */
int accept_report_from_json(const cJSON *doc, accept_report_t *r) {
  accept_report_init(r);
  const cJSON *v;
  if (!cJSON_IsObject(doc)) return GPL_EINVAL;
  copy_str(doc, "started", r->started, sizeof r->started);
  v = cJSON_GetObjectItemCaseSensitive(doc, "seconds");
  if (cJSON_IsNumber(v)) r->seconds = v->valuedouble;
  v = cJSON_GetObjectItemCaseSensitive(doc, "exit_code");
  if (cJSON_IsNumber(v)) r->exit_code = v->valueint;
  r->strict = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "strict"));
  v = cJSON_GetObjectItemCaseSensitive(doc, "ranks");
  if (cJSON_IsNumber(v)) r->nranks = v->valueint;
  const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(doc, "hosts");
  int nh = cJSON_GetArraySize(hosts);
  if (nh > 0) {
    r->hosts = calloc((size_t)nh, sizeof *r->hosts);
    ALLOCCHECK(r->hosts);
    for (int i = 0; i < nh; i++) {
      const cJSON *h = cJSON_GetArrayItem(hosts, i);
      r->hosts[i] = strdup(cJSON_IsString(h) ? h->valuestring : "");
      ALLOCCHECK(r->hosts[i]);
      r->nnodes++;
    }
  }
  const cJSON *ar = cJSON_GetObjectItemCaseSensitive(doc, "allreduce");
  if (cJSON_IsObject(ar)) {
    copy_str(ar, "backend", r->backend, sizeof r->backend);
    copy_str(ar, "min_busbw_source", r->threshold_source, sizeof r->threshold_source);
#define NUM_(field, key)                                               \
  v = cJSON_GetObjectItemCaseSensitive(ar, key);                       \
  if (cJSON_IsNumber(v)) r->field = v->valuedouble;
    NUM_(ar_bytes, "bytes")
    NUM_(ar_seconds, "seconds")
    NUM_(ar_algbw, "algbw_GBps")
    NUM_(ar_busbw, "busbw_GBps")
    NUM_(ar_threshold, "min_busbw_GBps")
#undef NUM_
    v = cJSON_GetObjectItemCaseSensitive(ar, "iters");
    if (cJSON_IsNumber(v)) r->ar_iters = v->valueint;
  }
  const cJSON *se = cJSON_GetObjectItemCaseSensitive(doc, "search");
  if (cJSON_IsObject(se)) {
    copy_str(se, "mode", r->search_mode, sizeof r->search_mode);
    copy_str(se, "summary", r->search_summary, sizeof r->search_summary);
    copy_str(se, "rule", r->search_rule, sizeof r->search_rule);
    v = cJSON_GetObjectItemCaseSensitive(se, "pair_fraction");
    if (cJSON_IsNumber(v)) r->fraction = v->valuedouble;
    v = cJSON_GetObjectItemCaseSensitive(se, "noise");
    if (cJSON_IsNumber(v)) r->search_jitter = v->valuedouble;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(se, "measurements")) {
      accept_meas_t x;
      memset(&x, 0, sizeof x);
      copy_str(m, "phase", x.phase, sizeof x.phase);
      copy_str(m, "label", x.label, sizeof x.label);
      v = cJSON_GetObjectItemCaseSensitive(m, "round");
      x.round = cJSON_IsNumber(v) ? v->valueint : 0;
      v = cJSON_GetObjectItemCaseSensitive(m, "busbw_GBps");
      x.busbw = cJSON_IsNumber(v) ? v->valuedouble : -1;
      const cJSON *smp;
      cJSON_ArrayForEach(smp, cJSON_GetObjectItemCaseSensitive(m, "samples_GBps")) {
        if (cJSON_IsNumber(smp) && x.nsamples < ACCEPT_PASSES_MAX) x.samples[x.nsamples++] = smp->valuedouble;
      }
      v = cJSON_GetObjectItemCaseSensitive(m, "reference_GBps");
      x.reference = cJSON_IsNumber(v) ? v->valuedouble : 0;
      x.flagged = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "flagged"));
      const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(m, "nodes");
      int nn = cJSON_GetArraySize(nodes);
      int tmp[64];
      x.nnodes = nn < 64 ? nn : 64;
      for (int k = 0; k < x.nnodes; k++) tmp[k] = cJSON_GetArrayItem(nodes, k)->valueint;
      x.nodes = tmp;
      CHECK(accept_report_add_meas(r, &x));
    }
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "bad_hosts")) {
    if (cJSON_IsString(it)) CHECK(accept_report_add_bad_host(r, it->valuestring));
  }
  cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "bad_links")) {
    if (cJSON_IsString(it)) CHECK(accept_report_add_bad_link(r, it->valuestring));
  }
  cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "checks")) {
    accept_check_t c;
    CHECK(accept_check_from_json(it, &c));
    CHECK(accept_report_add(r, &c));
  }
  const cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "settings");
  if (st) r->settings = cJSON_Duplicate(st, 1);
  const cJSON *lat = cJSON_GetObjectItemCaseSensitive(doc, "latency");
  if (cJSON_IsObject(lat)) r->latency = cJSON_Duplicate(lat, 1);
  return GPL_OK;
}
