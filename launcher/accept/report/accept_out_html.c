/* The HTML page of `gpulaunch accept`: one self-contained file (inline CSS, an inline SVG chart
 * of the bandwidths, no scripts, no external resources) for someone who never used the tool:
 * the verdict first, what to do, the chart, then every check by node. Well-formed XML too, so
 * both xmllint and browsers read it. */
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "gpulaunch/version.h"
#include "launcher/accept/accept.h"

static void esc(strbuf_t *b, const char *s) { accept_xml_escape(b, s); }

static const char g_css[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1d2330;"
    "background:#f6f7f9;line-height:1.45}\n"
    "div.main{max-width:1100px;margin:0 auto;padding:0 20px 40px}\n"
    "div.verdict{padding:22px 20px;color:#fff}\n"
    "div.verdict div{max-width:1100px;margin:0 auto}\n"
    "div.pass{background:#1f7a3a}div.fail{background:#b3261e}div.error{background:#8a5a00}\n"
    "div.verdict h1{margin:0 0 6px;font-size:28px}div.verdict p{margin:0;font-size:16px}\n"
    "h2{margin-top:30px;border-bottom:1px solid #d5d9e0;padding-bottom:4px;font-size:20px}\n"
    ".box{background:#fff;border:1px solid #d5d9e0;border-radius:6px;padding:12px 16px;margin:12px 0}\n"
    ".counts span{display:inline-block;margin-right:16px;font-weight:600}\n"
    "table{border-collapse:collapse;width:100%;background:#fff;font-size:14px}\n"
    "th,td{border:1px solid #d5d9e0;padding:5px 8px;text-align:left;vertical-align:top}\n"
    "th{background:#eef0f4}\n"
    "td.st{font-weight:700;white-space:nowrap}\n"
    ".pass .st,.st.pass{color:#1f7a3a}.warn .st,.st.warn{color:#9a6700}.fail .st,.st.fail{color:#b3261e}"
    ".skipped .st,.st.skipped{color:#6b7280}.error .st,.st.error{color:#8a5a00}\n"
    "tr.fail{background:#fdecea}tr.warn{background:#fff8e1}tr.error{background:#fff3e0}"
    "tr.skipped td{color:#555}\n"
    "td.detail{font-size:13px}\n"
    "code{background:#eef0f4;padding:1px 4px;border-radius:3px}\n"
    "svg text{font-family:system-ui,sans-serif;font-size:12px}\n"
    "div.footer{color:#6b7280;font-size:12px;margin-top:30px}\n";

static const char *verdict_word(int code) {
  accept_status_t v = accept_verdict(code);
  return v == ACCEPT_PASS ? "PASSED" : v == ACCEPT_FAIL ? "FAILED" : "COULD NOT RUN";
}
static const char *verdict_class(int code) { return accept_status_name(accept_verdict(code)); }

/* Horizontal bars: the job's allreduce, then each measured group; red when flagged. A tick on
 * each bar marks the line it had to reach (the threshold, or fraction x reference). */
static void chart(strbuf_t *b, const accept_report_t *r) {
  int nbars = r->nmeas + (r->ar_busbw > 0 ? 1 : 0);
  if (nbars == 0) {
    strbuf_append(b, "<p>No bandwidth was measured.</p>\n");
    return;
  }
  double max = r->ar_busbw > r->ar_threshold ? r->ar_busbw : r->ar_threshold;
  for (int i = 0; i < r->nmeas; i++) {
    if (r->meas[i].busbw > max) max = r->meas[i].busbw;
    if (r->meas[i].reference > max) max = r->meas[i].reference;
  }
  if (max <= 0) max = 1;
  const int left = 230, width = 560, bh = 20, gap = 8, top = 28;
  int h = top + nbars * (bh + gap) + 30;
  strbuf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                "role=\"img\" aria-label=\"bandwidth chart\" id=\"bwchart\">\n", left + width + 110, h,
                left + width + 110, h);
  strbuf_printf(b, "<text x=\"%d\" y=\"16\" font-weight=\"bold\">Bus bandwidth, GB/s (longer is better)</text>\n", left);
  /* Axis ticks. */
  for (int k = 0; k <= 4; k++) {
    double v = max * k / 4;
    int x = left + (int)(width * k / 4.0);
    strbuf_printf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#d5d9e0\"/>\n", x, top - 4, x, h - 24);
    strbuf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#6b7280\">%.3g</text>\n", x, h - 8, v);
  }
  int y = top;
  if (r->ar_busbw > 0) {
    int w = (int)(width * r->ar_busbw / max + 0.5);
    int failed = r->ar_threshold >= 0 && r->ar_busbw < r->ar_threshold;
    strbuf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">whole job (%d ranks)</text>\n", left - 8,
                  y + bh - 6, r->nranks);
    strbuf_printf(b, "<rect class=\"bar job%s\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\">"
                  "<title>allreduce of the whole job: %.3f GB/s</title></rect>\n", failed ? " flagged" : "",
                  left, y, w > 0 ? w : 1, bh, failed ? "#b3261e" : "#4b6cb7", r->ar_busbw);
    if (r->ar_threshold >= 0) {
      int tx = left + (int)(width * r->ar_threshold / max + 0.5);
      strbuf_printf(b, "<line class=\"threshold\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#111\" "
                    "stroke-width=\"2\" stroke-dasharray=\"3,2\"><title>min_busbw %.3f GB/s</title></line>\n",
                    tx, y - 3, tx, y + bh + 3, r->ar_threshold);
    }
    strbuf_printf(b, "<text x=\"%d\" y=\"%d\">%.3f</text>\n", left + (w > 0 ? w : 1) + 6, y + bh - 6, r->ar_busbw);
    y += bh + gap;
  }
  for (int i = 0; i < r->nmeas; i++) {
    const accept_meas_t *m = &r->meas[i];
    double v = m->busbw > 0 ? m->busbw : 0;
    int w = (int)(width * v / max + 0.5);
    strbuf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s: ", left - 8, y + bh - 6, m->phase);
    esc(b, m->label);
    strbuf_append(b, "</text>\n");
    strbuf_printf(b, "<rect class=\"bar pair%s\" data-phase=\"%s\" data-pair=\"", m->flagged ? " flagged" : "", m->phase);
    esc(b, m->label);
    strbuf_printf(b, "\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>", left, y, w > 0 ? w : 1,
                  bh, m->flagged ? "#b3261e" : "#2e8b57");
    esc(b, m->label);
    strbuf_printf(b, ": %.3f GB/s%s", m->busbw, m->flagged ? " (slow)" : "");
    if (m->nsamples > 1) {
      strbuf_printf(b, ", the best of %d tries:", m->nsamples);
      for (int k = 0; k < m->nsamples && k < ACCEPT_PASSES_MAX; k++) strbuf_printf(b, " %.3f", m->samples[k]);
    }
    strbuf_append(b, "</title></rect>\n");
    if (m->reference > 0) {
      int tx = left + (int)(width * r->fraction * m->reference / max + 0.5);
      strbuf_printf(b, "<line class=\"threshold\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#111\" "
                    "stroke-width=\"2\" stroke-dasharray=\"3,2\"><title>%.0f%% of the reference %.3f GB/s"
                    "</title></line>\n", tx, y - 3, tx, y + bh + 3, 100 * r->fraction, m->reference);
    }
    strbuf_printf(b, "<text x=\"%d\" y=\"%d\"%s>%.3f%s</text>\n", left + (w > 0 ? w : 1) + 6, y + bh - 6,
                  m->flagged ? " fill=\"#b3261e\" font-weight=\"bold\"" : "", m->busbw, m->flagged ? " slow" : "");
    y += bh + gap;
  }
  strbuf_append(b, "</svg>\n");
}

static void table(strbuf_t *b, const accept_report_t *r, int node) {
  strbuf_append(b, "<table>\n<tr><th>Status</th><th>Check</th><th>What it checks</th><th>Subject</th>"
                   "<th>Measured</th><th>Expected</th><th>Details</th></tr>\n");
  for (int i = 0; i < r->nchecks; i++) {
    const accept_check_t *c = &r->checks[i];
    if (accept_check_suite(c) != node) continue;
    const char *st = accept_status_name(c->status);
    strbuf_printf(b, "<tr class=\"%s\"><td class=\"st %s\">%s</td><td><code>", st, st, st);
    esc(b, c->name);
    strbuf_append(b, "</code></td><td>");
    esc(b, accept_check_desc(c->name));
    strbuf_append(b, "</td><td>");
    esc(b, c->subject);
    strbuf_append(b, "</td><td>");
    esc(b, c->value_text);
    strbuf_append(b, "</td><td>");
    esc(b, c->threshold);
    strbuf_append(b, "</td><td class=\"detail\">");
    esc(b, c->detail);
    strbuf_append(b, "</td></tr>\n");
  }
  strbuf_append(b, "</table>\n");
}

static double num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The latency section: the small allreduces, and each pair's round trip as a matrix of hosts
 * (p50, p99 in its title), a slow cell in red. */
static void latency(strbuf_t *b, const accept_report_t *r) {
  const cJSON *lat = r->latency, *e;
  if (!lat) return;
  double slow = num(lat, "slow_above_us"), maxus = num(lat, "max_latency_us");
  strbuf_append(b, "<h2>Latency</h2>\n<div class=\"box\"><p>Small allreduces of the whole job (the slowest "
                   "rank's time per call) and the round trip of 8 bytes between the first ranks of each pair "
                   "of nodes. A node whose fastest round trip is beyond ");
  strbuf_printf(b, "%g times the majority's plus %.0f us", ACCEPT_LAT_FACTOR, ACCEPT_LAT_SLACK_US);
  strbuf_append(b, " is slow with every partner (its link, NIC or port); a slow pair of healthy nodes is a "
                   "slow link.");
  if (slow >= 0) strbuf_printf(b, " Slow here: above %.0f us.", slow);
  if (maxus > 0) strbuf_printf(b, " [accept] max_latency_us: %.0f us.", maxus);
  strbuf_append(b, "</p>\n<table>\n<tr><th>Allreduce</th><th>p50 (us)</th><th>p99 (us)</th><th>Calls</th></tr>\n");
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(lat, "allreduce"))
    strbuf_printf(b, "<tr><td>%.0f B</td><td>%.1f</td><td>%.1f</td><td>%.0f</td></tr>\n", num(e, "bytes"),
                  num(e, "p50_us"), num(e, "p99_us"), num(e, "iters"));
  strbuf_append(b, "</table>\n<table>\n<tr><th>Round trip p50 (us)</th>");
  for (int j = 0; j < r->nnodes; j++) {
    strbuf_append(b, "<th>");
    esc(b, r->hosts[j]);
    strbuf_append(b, "</th>");
  }
  strbuf_append(b, "</tr>\n");
  const cJSON *pairs = cJSON_GetObjectItemCaseSensitive(lat, "pairs");
  for (int i = 0; i < r->nnodes; i++) {
    strbuf_append(b, "<tr><th>");
    esc(b, r->hosts[i]);
    strbuf_append(b, "</th>");
    for (int j = 0; j < r->nnodes; j++) {
      const cJSON *hit = NULL;
      cJSON_ArrayForEach(e, pairs) {
        const char *a = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "a"));
        const char *c = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "b"));
        if (a && c && ((!strcmp(a, r->hosts[i]) && !strcmp(c, r->hosts[j])) ||
                       (!strcmp(a, r->hosts[j]) && !strcmp(c, r->hosts[i]))))
          hit = e;
      }
      if (!hit) {
        strbuf_append(b, "<td></td>");
        continue;
      }
      double p50 = num(hit, "p50_us");
      int bad = (slow >= 0 && p50 > slow) || (maxus > 0 && p50 > maxus);
      strbuf_printf(b, "<td class=\"%s\" title=\"p50 %.1f us, p99 %.1f us\">%.1f</td>", bad ? "fail" : "pass", p50,
                    num(hit, "p99_us"), p50);
    }
    strbuf_append(b, "</tr>\n");
  }
  strbuf_append(b, "</table></div>\n");
}

static int node_status(const accept_report_t *r, int node) {
  int worst = ACCEPT_PASS;
  for (int i = 0; i < r->nchecks; i++) {
    const accept_check_t *c = &r->checks[i];
    if (accept_check_suite(c) != node) continue;
    if (c->status == ACCEPT_FAIL) return ACCEPT_FAIL;
    if (c->status == ACCEPT_ERROR) worst = ACCEPT_ERROR;
    else if (c->status == ACCEPT_WARN && worst == ACCEPT_PASS) worst = ACCEPT_WARN;
  }
  return worst;
}

int accept_write_html(const accept_report_t *r, const char *path) {
  strbuf_t b = STRBUF_INIT;
  int n[ACCEPT_NSTATUS];
  accept_report_counts(r, n);
  strbuf_append(&b, "<!DOCTYPE html>\n<html lang=\"en\" xmlns=\"http://www.w3.org/1999/xhtml\">\n<head>\n"
                    "<meta charset=\"utf-8\"/>\n<meta name=\"viewport\" content=\"width=device-width\"/>\n");
  strbuf_printf(&b, "<title>Cluster acceptance %s: %d node(s)</title>\n<style>\n%s</style>\n</head>\n<body>\n",
                verdict_word(r->exit_code), r->nnodes, g_css);
  /* The verdict. */
  strbuf_printf(&b, "<div class=\"verdict %s\"><div><h1>Cluster acceptance: %s</h1><p>", verdict_class(r->exit_code),
                verdict_word(r->exit_code));
  accept_status_t verdict = accept_verdict(r->exit_code);
  if (verdict == ACCEPT_PASS)
    strbuf_printf(&b, "All %d node(s) are fit for the run: no check failed.", r->nnodes);
  else if (verdict == ACCEPT_FAIL)
    strbuf_printf(&b, "%d check(s) failed%s.", n[ACCEPT_FAIL] ? n[ACCEPT_FAIL] : n[ACCEPT_WARN],
                  n[ACCEPT_FAIL] ? "" : " (warnings, strict mode)");
  else
    strbuf_printf(&b, "%d check(s) could not run; the result is incomplete.", n[ACCEPT_ERROR]);
  if (r->nbad) {
    strbuf_append(&b, " Leave out: <b>");
    for (int i = 0; i < r->nbad; i++) {
      if (i) strbuf_append(&b, ", ");
      esc(&b, r->bad_hosts[i]);
    }
    strbuf_append(&b, "</b>.");
  }
  strbuf_append(&b, "</p></div></div>\n<div class=\"main\">\n");

  /* What this is. */
  strbuf_append(&b, "<h2>What this page is</h2>\n<div class=\"box\"><p><code>gpulaunch accept</code> checked a "
                    "group of GPU servers (nodes) before a long training run: that each node has its GPUs and "
                    "network cards, that they are connected and placed well, and that the network between "
                    "the nodes delivers its bandwidth &#8212; and, when it does not, which node or link is to blame.");
  strbuf_printf(&b, " It ran on %d node(s) with %d process(es) (ranks), started ", r->nnodes, r->nranks);
  esc(&b, r->started);
  strbuf_printf(&b, " and took %.1f s.</p>\n<p>Each row below is one check. Its status is one of: "
                    "<b class=\"st pass\">pass</b> (as expected), <b class=\"st warn\">warn</b> (works, but not "
                    "as it should; does not fail the run%s), <b class=\"st fail\">fail</b> (not fit), "
                    "<b class=\"st skipped\">skipped</b> (not checked here; the details say why), "
                    "<b class=\"st error\">error</b> (the check could not run). The program's exit status was "
                    "<b>%d</b> (0 all good, 73 a check failed, 74 checks could not run).</p>\n",
                r->seconds, r->strict ? " unless strict, as here" : " unless strict mode is on", r->exit_code);
  strbuf_printf(&b, "<p class=\"counts\"><span class=\"st pass\">%d passed</span><span class=\"st warn\">%d warning(s)</span>"
                    "<span class=\"st fail\">%d failed</span><span class=\"st skipped\">%d skipped</span>"
                    "<span class=\"st error\">%d error(s)</span></p></div>\n",
                n[ACCEPT_PASS], n[ACCEPT_WARN], n[ACCEPT_FAIL], n[ACCEPT_SKIP], n[ACCEPT_ERROR]);

  /* What to do. */
  strbuf_append(&b, "<h2>What to do</h2>\n<div class=\"box\"><ul>\n");
  if (r->nbad) {
    strbuf_append(&b, "<li>Run without these hosts: <b>");
    for (int i = 0; i < r->nbad; i++) {
      if (i) strbuf_append(&b, ", ");
      esc(&b, r->bad_hosts[i]);
    }
    strbuf_append(&b, "</b>. <code>gpulaunch accept --exclude-out bad.txt</code> writes them one per line; "
                      "<code>scripts/hostfile --exclude bad.txt</code> leaves them out of an mpirun hostfile. "
                      "Report them to the cluster's operators with this page.</li>\n");
  }
  for (int i = 0; i < r->nbadlinks; i++) {
    strbuf_append(&b, "<li>The link between <b>");
    esc(&b, r->bad_links[i]);
    strbuf_append(&b, "</b> is slow although both nodes are fast with others: a cable, switch port or route "
                      "between them.</li>\n");
  }
  int listed = 0;
  for (int i = 0; i < r->nchecks; i++) {
    const accept_check_t *c = &r->checks[i];
    if (c->status != ACCEPT_FAIL && c->status != ACCEPT_ERROR) continue;
    if (listed++ >= 12) continue;
    strbuf_append(&b, "<li><b>");
    esc(&b, c->host[0] ? c->host : "job");
    strbuf_append(&b, "</b> <code>");
    esc(&b, c->name);
    strbuf_append(&b, "</code>");
    if (c->subject[0]) {
      strbuf_append(&b, " (");
      esc(&b, c->subject);
      strbuf_append(&b, ")");
    }
    strbuf_append(&b, ": ");
    esc(&b, c->detail);
    strbuf_append(&b, "</li>\n");
  }
  if (listed > 12) strbuf_printf(&b, "<li>... and %d more failed checks in the tables below.</li>\n", listed - 12);
  if (!listed && !r->nbad) strbuf_append(&b, "<li>Nothing: go ahead with the run.</li>\n");
  if (n[ACCEPT_WARN]) strbuf_printf(&b, "<li>%d warning(s): worth a look (rows in yellow), not a reason to stop.</li>\n", n[ACCEPT_WARN]);
  strbuf_append(&b, "</ul></div>\n");

  /* The chart. */
  strbuf_append(&b, "<h2>Bandwidth</h2>\n<div class=\"box\"><p>Each bar is the bus bandwidth of an allreduce "
                    "(the collective that sums gradients in data-parallel training; bus bandwidth = bytes / time "
                    "x 2(n-1)/n, comparable across job sizes). The first bar is the whole job; the others are "
                    "groups of nodes measured for the bad-node search: pairs of neighbours in a ring, then "
                    "suspects paired again with a good node, or halves of the cluster. A <b style=\"color:#b3261e\">red</b> "
                    "bar is below ");
  strbuf_printf(&b, "%.0f%% of the reference (the median node score); the dashed tick on a bar marks the line it "
                    "had to reach. Each group is measured several times, spread over the search, and its best "
                    "try counts (interference only slows a transfer down; a bad link is slow every time).</p>\n",
                100 * r->fraction);
  chart(&b, r);
  strbuf_append(&b, "<p>Threshold of the whole job: ");
  if (r->ar_threshold >= 0) strbuf_printf(&b, "%.3f GB/s", r->ar_threshold);
  else strbuf_append(&b, "none");
  strbuf_append(&b, " &#8212; ");
  esc(&b, r->threshold_source);
  if (r->search_summary[0]) {
    strbuf_append(&b, "<br/>Search (");
    esc(&b, r->search_mode);
    strbuf_append(&b, "): ");
    esc(&b, r->search_summary);
  }
  if (r->search_rule[0]) {
    strbuf_append(&b, "<br/>Rule: ");
    esc(&b, r->search_rule);
  }
  strbuf_append(&b, "</p></div>\n");

  latency(&b, r);

  /* Tables. */
  strbuf_append(&b, "<h2>Job checks</h2>\n");
  table(&b, r, -1);
  for (int node = 0; node < r->nnodes; node++) {
    strbuf_printf(&b, "<h2 id=\"node%d\">Node ", node);
    esc(&b, r->hosts[node]);
    strbuf_printf(&b, " <span class=\"st %s\">(%s)</span></h2>\n", accept_status_name(node_status(r, node)),
                  accept_status_name(node_status(r, node)));
    table(&b, r, node);
  }
  strbuf_append(&b, "<div class=\"footer\">gpulaunch accept " GPULAUNCH_VERSION_STRING);
  strbuf_append(&b, ". The same results as JSON: <code>--json FILE</code>; as JUnit XML for CI: "
                    "<code>--junit FILE</code>.</div>\n</div>\n</body>\n</html>\n");
  return accept_write_strbuf(path, &b);
}
