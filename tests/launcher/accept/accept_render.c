/* Render `gpulaunch accept` reports without a job: from a saved --json report, or from a built-in
 * sample (two nodes, every status, a slow node, text that needs escaping), for the report tests
 * (xmllint, Chromium) and to re-render a saved run by hand.
 *   accept_render --sample DIR            DIR/{report.json,junit.xml,report.html,bad.txt}
 *   accept_render IN.json [--junit F] [--html F] [--exclude F] [--json F] [--table] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/safefile.h"
#include "common/util.h"
#include "launcher/accept/accept.h"

static void sample(accept_report_t *r) {
  accept_report_init(r);
  snprintf(r->started, sizeof r->started, "2026-12-02T09:00:00.000Z");
  r->seconds = 41.5;
  r->nnodes = 4;
  r->nranks = 8;
  r->hosts = calloc(4, sizeof *r->hosts);
  const char *h[] = {"gpu-a01", "gpu-a02", "gpu-a03", "gpu-<a&04>"};
  for (int i = 0; i < 4; i++) r->hosts[i] = strdup(h[i]);
  r->fraction = 0.93;
  snprintf(r->backend, sizeof r->backend, "cpu");
  r->ar_bytes = 64 << 20;
  r->ar_iters = 10;
  r->ar_seconds = 0.35;
  r->ar_algbw = 0.19;
  r->ar_busbw = 0.33;
  r->ar_threshold = 0.625;
  snprintf(r->threshold_source, sizeof r->threshold_source,
           "auto: 0.5 x 10 Gb/s (eth0 on node 0, the slowest job interface) / 8 = 0.625 GB/s");
  snprintf(r->search_mode, sizeof r->search_mode, "ring");
  snprintf(r->search_summary, sizeof r->search_summary, "2 of 4 ring pairs below 93%% of the median");
  snprintf(r->search_rule, sizeof r->search_rule, "pairs below 93%% of the reference (pair_fraction 0.93; "
           "measured noise 1%%, within what it tolerates)");
  accept_check_t c;
  /* node checks of every status */
  for (int n = 0; n < 4; n++) {
    accept_check_init(&c, "gpu_count", h[n], n, -1, "");
    accept_check_value(&c, n == 1 ? 7 : 8, "", "%d", n == 1 ? 7 : 8);
    accept_check_threshold(&c, "== 8");
    if (n == 1) accept_check_set(&c, ACCEPT_FAIL, "found 7 GPU(s), expected 8: a GPU may have fallen off the bus");
    else accept_check_set(&c, ACCEPT_PASS, "8 NVIDIA GPU(s) on the PCI bus");
    accept_report_add(r, &c);
    accept_check_init(&c, "gpu_nic_path", h[n], n, -1, "GPU0");
    accept_check_value(&c, 4, "", "SYS to rdmap197s0");
    accept_check_threshold(&c, "<= PHB");
    accept_check_set(&c, ACCEPT_WARN, "no NIC on this GPU's NUMA node <\"quoted\" & 'apostrophe'>");
    accept_report_add(r, &c);
    accept_check_init(&c, "ecc", h[n], n, -1, "all GPUs");
    accept_check_set(&c, ACCEPT_SKIP, "NVML not available: no NVIDIA driver (libnvidia-ml.so.1 not found)");
    accept_report_add(r, &c);
    accept_check_init(&c, "numa_binding", h[n], n, 2 * n, "rank -> GPU0");
    accept_check_text(&c, "CPUs 0-3");
    accept_check_set(&c, n == 3 ? ACCEPT_ERROR : ACCEPT_PASS, "bound to CPUs local to GPU0");
    accept_report_add(r, &c);
  }
  accept_check_init(&c, "reachability", "", -1, -1, "eth0");
  accept_check_value(&c, 8, "", "8 of 8 ranks reached their peers");
  accept_check_set(&c, ACCEPT_PASS, "8 TCP connections");
  accept_report_add(r, &c);
  accept_check_init(&c, "busbw", "", -1, -1, "allreduce");
  accept_check_value(&c, 0.33, "GB/s", "0.330 GB/s");
  accept_check_threshold(&c, ">= 0.625 GB/s (auto)");
  accept_check_set(&c, ACCEPT_FAIL, "bus bandwidth below the threshold");
  accept_report_add(r, &c);
  /* measurements: a ring of 4 with gpu-a03 slow, then its confirmation */
  int pairs[5][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {2, 0}};
  double bw[5] = {1.1, 0.05, 0.06, 1.05, 0.05};
  for (int i = 0; i < 5; i++) {
    accept_meas_t m;
    memset(&m, 0, sizeof m);
    snprintf(m.phase, sizeof m.phase, "%s", i < 4 ? "ring" : "confirm");
    m.round = i < 4 ? 1 + i % 2 : 3;
    m.nnodes = 2;
    m.nodes = pairs[i];
    snprintf(m.label, sizeof m.label, "%s + %s", h[pairs[i][0]], h[pairs[i][1]]);
    m.busbw = bw[i];
    m.nsamples = 3; /* three tries, the best counts */
    for (int k = 0; k < 3; k++) m.samples[k] = bw[i] * (k == 1 ? 1.0 : k == 0 ? 0.9 : 0.8);
    m.reference = 1.075;
    m.flagged = bw[i] < 0.93 * 1.075;
    accept_report_add_meas(r, &m);
  }
  accept_check_init(&c, "bad_node", h[2], 2, -1, h[2]);
  accept_check_value(&c, 0.05, "GB/s", "0.050 GB/s with gpu-a01");
  accept_check_set(&c, ACCEPT_FAIL, "every ring pair of this node is slow");
  accept_report_add(r, &c);
  accept_check_init(&c, "pair_search", "", -1, -1, "");
  accept_check_set(&c, ACCEPT_FAIL, "bad node(s): gpu-a03");
  accept_report_add(r, &c);
  accept_report_add_bad_host(r, "gpu-a03");
  accept_report_collect_bad_hosts(r); /* + gpu-a02 (gpu_count failed) */
  r->exit_code = accept_exit_code(r);
}

int main(int argc, char **argv) {
  accept_report_t r;
  const char *junit = NULL, *html = NULL, *excl = NULL, *json = NULL;
  int table = 0;
  if (argc >= 3 && strcmp(argv[1], "--sample") == 0) {
    static char p[4][1024];
    snprintf(p[0], sizeof p[0], "%s/report.json", argv[2]);
    snprintf(p[1], sizeof p[1], "%s/junit.xml", argv[2]);
    snprintf(p[2], sizeof p[2], "%s/report.html", argv[2]);
    snprintf(p[3], sizeof p[3], "%s/bad.txt", argv[2]);
    json = p[0];
    junit = p[1];
    html = p[2];
    excl = p[3];
    table = 1;
    sample(&r);
  } else if (argc >= 2 && argv[1][0] != '-') {
    char *text = NULL;
    size_t len = 0;
    if (safefile_read_text(argv[1], &text, &len) < 0) {
      fprintf(stderr, "accept_render: cannot read %s\n", argv[1]);
      return 2;
    }
    cJSON *doc = cJSON_Parse(text);
    free(text);
    if (!doc || accept_report_from_json(doc, &r) < 0) {
      fprintf(stderr, "accept_render: %s is not a gpulaunch accept report\n", argv[1]);
      cJSON_Delete(doc);
      return 2;
    }
    cJSON_Delete(doc);
    for (int i = 2; i < argc; i++) {
      if (strcmp(argv[i], "--table") == 0) table = 1;
      else if (i + 1 < argc && strcmp(argv[i], "--junit") == 0) junit = argv[++i];
      else if (i + 1 < argc && strcmp(argv[i], "--html") == 0) html = argv[++i];
      else if (i + 1 < argc && strcmp(argv[i], "--exclude") == 0) excl = argv[++i];
      else if (i + 1 < argc && strcmp(argv[i], "--json") == 0) json = argv[++i];
      else {
        fprintf(stderr, "accept_render: unknown argument %s\n", argv[i]);
        return 2;
      }
    }
  } else {
    fprintf(stderr, "usage: accept_render --sample DIR | accept_render IN.json [--junit F] [--html F] "
                    "[--exclude F] [--json F] [--table]\n");
    return 2;
  }
  int rc = 0;
  if (json && accept_write_json(&r, json) < 0) rc = 1;
  if (junit && accept_write_junit(&r, junit) < 0) rc = 1;
  if (html && accept_write_html(&r, html) < 0) rc = 1;
  if (excl && accept_write_exclude(&r, excl) < 0) rc = 1;
  if (table) accept_print_table(&r, stdout);
  accept_report_free(&r);
  return rc;
}
