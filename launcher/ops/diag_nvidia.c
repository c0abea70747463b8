/* diag's NVIDIA tools: nvidia-bug-report.sh (its archive in the bundle), the fabric manager on NVSwitch systems, dcgmi diag -r 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/safefile.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/ops/diag.h"
#include "launcher/ops/diag_int.h"

#define FM_LOG_DEFAULT "/var/log/fabricmanager.log" /* LOG_FILE_NAME of fabricmanager.cfg */
#define FM_LOG_TAIL (64u << 10)                       /* bytes of its end kept */

int diag_count_nvswitch(const char *root) {
  return diag_count_nvidia_class(root, 0xffff00, 0x068000); /* bridge, "other": NVIDIA's NVSwitch */
}

/* The first line of text that says what went wrong (an "ERROR"/"Error" line), else its last
 * non-empty line, into buf. */
static void gist(const char *text, char *buf, size_t len) {
  buf[0] = 0;
  if (!text) return;
  const char *last = NULL;
  size_t lastn = 0;
  for (const char *p = text; *p;) {
    size_t n = strcspn(p, "\n");
    if (n && strncasecmp(p, "error", 5) == 0) {
      snprintf(buf, len, "%.*s", (int)n, p);
      return;
    }
    if (n) last = p, lastn = n;
    p += n + (p[n] ? 1 : 0);
  }
  if (last) snprintf(buf, len, "%.*s", (int)lastn, last);
}

/* ---- nvidia-bug-report.sh ---- */

/* NVIDIA's own support archive: `nvidia-bug-report.sh --output-file DIR/nvidia-bug-report.log`
 * writes DIR/nvidia-bug-report.log.gz (gzip found) or the .log; killed after the bound. Its
 * output goes to nvidia-bug-report.txt; the archive is NVIDIA's and not redacted by gpulaunch. */
static void bug_report(const diag_opts_t *o, const char *dir, diag_verdicts_t *v) {
  double bound = o->bug_report_timeout > 0 ? o->bug_report_timeout : DIAG_BUG_REPORT_TIMEOUT_S;
  char base[4200], gz[4300];
  snprintf(base, sizeof base, "%s/nvidia-bug-report.log", dir);
  snprintf(gz, sizeof gz, "%s.gz", base);
  char *argv[] = {"nvidia-bug-report.sh", "--output-file", base, NULL};
  strbuf_t b = STRBUF_INIT;
  strbuf_printf(&b, "$ nvidia-bug-report.sh --output-file %s   (killed after %.0f s)\n", base, bound);
  char *out = NULL;
  int st = 0;
  double t0 = util_now();
  int rc = diag_run(argv, bound, &out, &st);
  double took = util_now() - t0;
  if (rc == GPL_ENOENT) {
    strbuf_printf(&b, "nvidia-bug-report.sh not found on PATH (it comes with the NVIDIA driver)\n");
    diag_verdict_add(v, DIAG_INFO, "nvidia-bug-report.sh not found (it comes with the NVIDIA "
                     "driver): no NVIDIA bug report in this bundle");
    diag_write(dir, "nvidia-bug-report.txt", strbuf_str(&b));
    strbuf_free(&b);
    return;
  }
  if (out) strbuf_append(&b, out);
  struct stat sb;
  const char *archive = stat(gz, &sb) == 0 ? gz : stat(base, &sb) == 0 ? base : NULL;
  if (archive) chmod(archive, 0600); /* like every file of the bundle */
  const char *name = archive ? strrchr(archive, '/') + 1 : "";
  char why[256];
  gist(out, why, sizeof why);
  if (rc == GPL_ETIMEDOUT) {
    strbuf_printf(&b, "\n(killed after %.0f s: it hung)\n", bound);
    diag_verdict_add(v, DIAG_WARN, "nvidia-bug-report.sh did not finish in %.0f s and was killed "
                     "(a hung driver call?)%s%s; try `nvidia-bug-report.sh --safe-mode` by hand",
                     bound, archive ? ": its partial archive is " : "", name);
  } else if (rc < 0) {
    strbuf_printf(&b, "could not run: %s\n", gpl_strerror(rc));
    diag_verdict_add(v, DIAG_WARN, "nvidia-bug-report.sh could not be run: %s", gpl_strerror(rc));
  } else if (st != 0 || !archive) {
    strbuf_printf(&b, "\n(exit status %d)\n", st);
    diag_verdict_add(v, DIAG_WARN, "nvidia-bug-report.sh failed (exit status %d%s%s)%s", st,
                     why[0] ? ": " : "", why, archive ? "" : "; no archive written");
  } else {
    strbuf_printf(&b, "\n(done in %.0f s: %s, %lld KiB)\n", took, name, (long long)sb.st_size / 1024);
    diag_verdict_add(v, DIAG_INFO, "NVIDIA bug report: %s in this host's folder (%lld KiB; "
                     "NVIDIA's archive, not redacted by gpulaunch: it holds the kernel log and "
                     "system files)", name, (long long)sb.st_size / 1024);
  }
  diag_write(dir, "nvidia-bug-report.txt", strbuf_str(&b));
  free(out);
  strbuf_free(&b);
}

/* ---- the fabric manager ---- */

/* NVSwitch systems (HGX/DGX with NVSwitches) need nvidia-fabricmanager running, or CUDA fails to
 * initialise ("system not yet initialized", cudaErrorSystemNotReady). Its state from systemd, its
 * journal and the end of its log file, into fabricmanager.txt. */
static void fabric_manager(const diag_opts_t *o, const char *dir, diag_verdicts_t *v, double to) {
  int nsw = diag_count_nvswitch(o->pci_root);
  if (nsw <= 0) return; /* nothing to manage (or sysfs unreadable): not said */
  strbuf_t b = STRBUF_INIT;
  strbuf_printf(&b, "NVSwitches (PCI): %d\n\n$ systemctl is-active nvidia-fabricmanager\n", nsw);
  char *out = NULL;
  int st = 0;
  char *const active[] = {"systemctl", "is-active", "nvidia-fabricmanager", NULL};
  int rc = diag_run(active, to, &out, &st);
  char state[64] = "";
  if (rc == 0 && out) {
    strbuf_append(&b, out);
    /* one of systemd's words (active, inactive, failed, activating, ...); anything else is
     * systemctl saying it cannot tell ("System has not been booted with systemd ...") */
    size_t w = strspn(out, "abcdefghijklmnopqrstuvwxyz-");
    if (w > 0 && w < sizeof state && (out[w] == '\n' || out[w] == 0)) util_strlcpy(state, out, w + 1);
  } else {
    strbuf_printf(&b, "%s\n", rc == GPL_ENOENT ? "systemctl not found (a container: the fabric "
                  "manager runs on the host)" : rc == GPL_ETIMEDOUT ? "(killed: it hung)" : gpl_strerror(rc));
  }
  free(out);
  out = NULL;
  char *const journal[] = {"journalctl", "-u", "nvidia-fabricmanager", "-n", "100", "--no-pager", NULL};
  strbuf_printf(&b, "\n$ journalctl -u nvidia-fabricmanager -n 100 --no-pager\n");
  int jrc = diag_run(journal, to, &out, &st);
  strbuf_append(&b, jrc == GPL_ENOENT ? "journalctl not found\n" : out ? out : "");
  free(out);
  const char *log = o->fm_log ? o->fm_log : FM_LOG_DEFAULT;
  char *txt = NULL;
  size_t n = 0;
  strbuf_printf(&b, "\n--- the end of %s\n", log);
  if (safefile_read_text(log, &txt, &n) == 0) {
    const char *tail = n > FM_LOG_TAIL ? txt + n - FM_LOG_TAIL : txt;
    strbuf_append(&b, tail);
  } else {
    strbuf_printf(&b, "(not readable here)\n");
  }
  free(txt);
  diag_write(dir, "fabricmanager.txt", strbuf_str(&b));
  strbuf_free(&b);
  if (strcmp(state, "active") == 0)
    diag_verdict_add(v, DIAG_OK, "%d NVSwitch%s; nvidia-fabricmanager is active", nsw, nsw == 1 ? "" : "es");
  else if (state[0])
    diag_verdict_add(v, DIAG_ERROR, "%d NVSwitch%s and nvidia-fabricmanager is %s: CUDA cannot "
                     "initialise the GPUs without it (systemctl enable --now nvidia-fabricmanager; "
                     "its version must match the driver's; see fabricmanager.txt)", nsw,
                     nsw == 1 ? "" : "es", state);
  else
    diag_verdict_add(v, DIAG_WARN, "%d NVSwitch%s; the state of nvidia-fabricmanager is unknown "
                     "here (no systemd: check it on the host; see fabricmanager.txt)", nsw,
                     nsw == 1 ? "" : "es");
}

/* ---- DCGM ---- */

int diag_dcgmi_parse(const char *out, int *npass, char *failed, size_t len) {
  /* Its rows: "| Persistence Mode          | Fail                     |" */
  size_t fl = 0;
  int nfail = 0;
  *npass = 0;
  if (len) failed[0] = 0;
  for (const char *p = out ? out : ""; *p;) {
    size_t n = strcspn(p, "\n");
    char row[512];
    snprintf(row, sizeof row, "%.*s", (int)(n < sizeof row - 1 ? n : sizeof row - 1), p);
    p += n + (p[n] ? 1 : 0);
    if (row[0] != '|') continue;
    char *cell2 = strchr(row + 1, '|');
    if (!cell2) continue;
    *cell2++ = 0;
    char *end = strchr(cell2, '|');
    if (end) *end = 0;
    char *name = util_trim(row + 1), *res = util_trim(cell2);
    if (strncasecmp(res, "Pass", 4) == 0) (*npass)++;
    if (strncasecmp(res, "Fail", 4) != 0) continue;
    nfail++;
    if (fl + 1 < len) {
      int k = snprintf(failed + fl, len - fl, "%s%s", fl ? ", " : "", name);
      fl = k < 0 ? fl : fl + (size_t)k < len ? fl + (size_t)k : len - 1;
    }
  }
  return nfail;
}

/* `dcgmi diag -r 1` (DCGM's quick check: deployment, software, a few seconds) when dcgmi is
 * installed: its table into dcgmi-diag.txt, each test that failed named in a verdict. */
static void dcgm_diag(const char *dir, diag_verdicts_t *v, double to) {
  char *const argv[] = {"dcgmi", "diag", "-r", "1", NULL};
  char *out = NULL;
  int st = 0;
  int rc = diag_run(argv, to, &out, &st);
  if (rc == GPL_ENOENT) return; /* DCGM is not installed: nothing to say */
  strbuf_t b = STRBUF_INIT;
  strbuf_printf(&b, "$ dcgmi diag -r 1   (killed after %.0f s)\n", to);
  if (out) strbuf_append(&b, out);
  char failed[320];
  int npass = 0, nfail = diag_dcgmi_parse(out, &npass, failed, sizeof failed);
  char why[256];
  gist(out, why, sizeof why);
  if (rc == GPL_ETIMEDOUT) {
    strbuf_printf(&b, "\n(killed after %.0f s: it hung)\n", to);
    diag_verdict_add(v, DIAG_WARN, "dcgmi diag -r 1 did not finish in %.0f s and was killed", to);
  } else if (nfail) {
    diag_verdict_add(v, DIAG_ERROR, "dcgmi diag -r 1: %d check%s failed: %s (see dcgmi-diag.txt)",
                     nfail, nfail == 1 ? "" : "s", failed);
  } else if (rc < 0 || st != 0 || npass == 0) {
    if (rc == 0) strbuf_printf(&b, "\n(exit status %d)\n", st);
    diag_verdict_add(v, DIAG_WARN, "dcgmi diag -r 1 did not run its checks (exit status %d%s%s)%s",
                     st, why[0] ? ": " : "", why,
                     strcasestr(out ? out : "", "host engine") ? "; is nv-hostengine running "
                     "(systemctl start nvidia-dcgm)?" : "");
  } else {
    diag_verdict_add(v, DIAG_OK, "dcgmi diag -r 1: all %d checks passed", npass);
  }
  diag_write(dir, "dcgmi-diag.txt", strbuf_str(&b));
  free(out);
  strbuf_free(&b);
}

void diag_collect_nvidia(const diag_opts_t *o, const char *dir, diag_verdicts_t *v) {
  double to = o->cmd_timeout > 0 ? o->cmd_timeout : 20.0;
  fabric_manager(o, dir, v, to);
  dcgm_diag(dir, v, 3 * to);
  if (o->bug_report) bug_report(o, dir, v);
}
