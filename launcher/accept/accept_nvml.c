/* GPU health checks of `gpulaunch accept` as a table: ECC, retired pages / row remaps, clocks
 * and temperature through the GPU monitor's NVML loader (launcher/ops/monitor_nvml.c, dlopen'ed at
 * run time), and Xid errors from the kernel log. Each check is skipped with its reason where
 * NVML is not available, the topology is a file, or the node has no GPU. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/strbuf.h"
#include "launcher/accept/accept.h"
#include "launcher/ops/monitor.h"

/* ---- Xid in the kernel log ---- */

/* Xids that say the node (not the program) is unwell: double-bit ECC (48), row remap failures
 * (63, 64), NVLink (74), fallen off the bus (79), high single-bit ECC rate (92), contained and
 * uncontained ECC (94, 95), GSP errors (119, 120), and a few more NVIDIA lists as hardware. The
 * rest (13, 31, 43: a program's own faults) only warn. */
static int xid_is_hardware(int x) {
  static const int hw[] = {48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140};
  for (size_t i = 0; i < sizeof hw / sizeof hw[0]; i++)
    if (hw[i] == x) return 1;
  return 0;
}

/* Count "NVRM: Xid" lines; last gets the last one. Returns the count; *hw the count of those
 * with a hardware Xid. */
static int xid_scan(const char *text, char *last, size_t len, int *hw) {
  int n = 0;
  if (hw) *hw = 0;
  if (last && len) last[0] = 0;
  for (const char *p = text; p && (p = strstr(p, "NVRM: Xid")); p += 9) {
    n++;
    const char *eol = strchr(p, '\n');
    size_t l = eol ? (size_t)(eol - p) : strlen(p);
    if (last && len) snprintf(last, len, "%.*s", (int)(l < len - 1 ? l : len - 1), p);
    /* "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., name=..., GPU has fallen off the bus." */
    const char *colon = strstr(p, "): ");
    if (hw && colon && (size_t)(colon - p) < l && xid_is_hardware(atoi(colon + 3))) (*hw)++;
  }
  return n;
}

int accept_xid_scan(const char *text, char *last, size_t len) { return xid_scan(text, last, len, NULL); }

/* The kernel log since boot from /dev/kmsg (one record per read). 0 or a negative code. */
static int read_kmsg(strbuf_t *out, char *why, size_t len) {
  int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, len, "the kernel log cannot be read: /dev/kmsg: %s", strerror(errno));
    return GPL_ESYS;
  }
  char rec[8192];
  for (;;) {
    ssize_t n = read(fd, rec, sizeof rec);
    if (n > 0) {
      /* "prio,seq,usec,flags;message\n" (continuation lines start with a space) */
      const char *msg = memchr(rec, ';', (size_t)n);
      if (msg) strbuf_append_n(out, msg + 1, (size_t)(n - (msg + 1 - rec)));
      continue;
    }
    if (n < 0 && errno == EPIPE) continue; /* records overwritten while reading */
    if (n < 0 && errno == EINTR) continue;
    break; /* EAGAIN: the end */
  }
  close(fd);
  return out->oom ? GPL_ENOMEM : GPL_OK;
}

static int check_xid(const accept_node_ctx_t *x, accept_list_t *out) {
  accept_check_t c;
  accept_check_init(&c, "xid", x->host, x->node, -1, "");
  accept_check_threshold(&c, "no Xid");
  if (!x->t->live) {
    accept_check_set(&c, ACCEPT_SKIP, "topology from a file: this machine's kernel log is not that node's");
    return accept_list_add(out, &c);
  }
  strbuf_t log = STRBUF_INIT;
  char why[256] = "", last[300];
  if (read_kmsg(&log, why, sizeof why) < 0) {
    strbuf_free(&log);
    accept_check_set(&c, ACCEPT_SKIP, "%s", why[0] ? why : "the kernel log cannot be read");
    return accept_list_add(out, &c);
  }
  int hw = 0, n = xid_scan(strbuf_str(&log), last, sizeof last, &hw);
  strbuf_free(&log);
  accept_check_value(&c, n, "", "%d Xid message(s)", n);
  if (n == 0)
    accept_check_set(&c, ACCEPT_PASS, "no NVRM Xid message in the kernel log since boot");
  else if (hw)
    accept_check_set(&c, ACCEPT_FAIL, "%d hardware Xid(s) in the kernel log; last: %s", hw, last);
  else
    accept_check_set(&c, ACCEPT_WARN, "%d Xid(s) from programs (not hardware); last: %s", n, last);
  return accept_list_add(out, &c);
}

/* ---- NVML ---- */

typedef enum { N_ECC = 0, N_RETIRED, N_CLOCKS, N_TEMP, N_NVLINK, N_COUNT } nvml_check_t;
static const char *const g_nvml_names[N_COUNT] = {"ecc", "retired_pages", "clocks", "temperature", "nvlink"};

/* A row for every NVML check, skipped with the same reason (one per node, not per GPU). */
static int skip_all(const accept_node_ctx_t *x, accept_list_t *out, const char *fmt, const char *arg) {
  accept_check_t c;
  for (int i = 0; i < N_COUNT; i++) {
    accept_check_init(&c, g_nvml_names[i], x->host, x->node, -1, "all GPUs");
    accept_check_set(&c, ACCEPT_SKIP, fmt, arg);
    CHECK(accept_list_add(out, &c));
  }
  return GPL_OK;
}

static int nvml_gpu(const accept_node_ctx_t *x, int g, accept_list_t *out) {
  const topo_gpu_t *gp = &x->t->gpus[g];
  char subj[16], why[256] = "";
  snprintf(subj, sizeof subj, "GPU%d", g);
  accept_check_t c;
  mon_source_t *src = NULL;
  mon_sample_t s;
  memset(&s, 0, sizeof s);
  int rc = mon_nvml_open(gp->pci[0] ? gp->pci : NULL, gp->nvml_index >= 0 ? gp->nvml_index : g, &src, why, sizeof why);
  if (rc == GPL_OK) {
    rc = src->ops->read(src, &s);
    if (rc < 0) snprintf(why, sizeof why, "NVML read failed: %s", gpl_strerror(rc));
    src->ops->close(src);
  } else if (!why[0]) {
    snprintf(why, sizeof why, "NVML does not know %s (%s)", gp->pci, gpl_strerror(rc));
  }
  for (int i = 0; i < N_COUNT; i++) {
    accept_check_init(&c, g_nvml_names[i], x->host, x->node, -1, subj);
    if (rc < 0) {
      accept_check_set(&c, ACCEPT_ERROR, "%s", why);
      CHECK(accept_list_add(out, &c));
      continue;
    }
    switch ((nvml_check_t)i) {
      case N_ECC:
        accept_check_threshold(&c, "0 uncorrectable");
        if (!(s.have & MON_HAVE_ECC)) {
          accept_check_set(&c, ACCEPT_SKIP, "NVML reports no ECC counts for this GPU (ECC off, or a "
                           "board without it)");
          break;
        }
        accept_check_value(&c, (double)s.ecc_uncorrected, "", "%llu uncorrectable, %llu corrected",
                           (unsigned long long)s.ecc_uncorrected, (unsigned long long)s.ecc_corrected);
        if (s.ecc_uncorrected > 0)
          accept_check_set(&c, ACCEPT_FAIL, "uncorrectable ECC errors since the driver loaded: drain "
                           "the node and reset the GPU");
        else
          accept_check_set(&c, ACCEPT_PASS, "volatile ECC counts since the driver loaded");
        break;
      case N_RETIRED:
        accept_check_set(&c, ACCEPT_SKIP, "not read by the NVML loader (launcher/monitor_nvml.c has no "
                         "nvmlDeviceGetRetiredPages / nvmlDeviceGetRemappedRows)");
        break;
      case N_NVLINK:
        accept_check_set(&c, ACCEPT_SKIP, "not read by the NVML loader (launcher/monitor_nvml.c has no "
                         "nvmlDeviceGetNvLinkState / nvmlDeviceGetNvLinkVersion); hwloc files carry no NVLink");
        break;
      case N_CLOCKS: {
        const uint64_t hard = MON_THROTTLE_HW_SLOWDOWN | MON_THROTTLE_HW_THERMAL |
                              MON_THROTTLE_HW_POWER_BRAKE | MON_THROTTLE_SW_THERMAL;
        accept_check_threshold(&c, "no thermal/hardware slowdown");
        if (!(s.have & MON_HAVE_THROTTLE)) {
          accept_check_set(&c, ACCEPT_SKIP, "NVML reports no clock event reasons for this GPU");
          break;
        }
        if (s.have & MON_HAVE_CLOCKS)
          accept_check_value(&c, s.sm_clock_mhz, "MHz", "SM %u MHz, memory %u MHz, reasons 0x%llx",
                             s.sm_clock_mhz, s.mem_clock_mhz, (unsigned long long)s.throttle);
        else
          accept_check_text(&c, "reasons 0x%llx", (unsigned long long)s.throttle);
        if (s.throttle & hard)
          accept_check_set(&c, ACCEPT_FAIL, "clocks slowed by %s%s%s%s",
                           s.throttle & MON_THROTTLE_HW_SLOWDOWN ? "hardware slowdown " : "",
                           s.throttle & MON_THROTTLE_HW_THERMAL ? "hardware thermal " : "",
                           s.throttle & MON_THROTTLE_SW_THERMAL ? "software thermal " : "",
                           s.throttle & MON_THROTTLE_HW_POWER_BRAKE ? "power brake" : "");
        else if (s.throttle & MON_THROTTLE_SW_POWER_CAP)
          accept_check_set(&c, ACCEPT_WARN, "clocks held by the software power cap while idle (power "
                           "limit set low?)");
        else
          accept_check_set(&c, ACCEPT_PASS, "no slowdown reason active");
        break;
      }
      case N_TEMP:
        accept_check_threshold(&c, "<= %g C", x->o->max_gpu_temp);
        if (!(s.have & MON_HAVE_TEMP)) {
          accept_check_set(&c, ACCEPT_SKIP, "NVML reports no temperature for this GPU");
          break;
        }
        accept_check_value(&c, s.temp_c, "C", NULL);
        if (s.temp_c > x->o->max_gpu_temp)
          accept_check_set(&c, ACCEPT_FAIL, "hotter than %g C at rest: cooling problem", x->o->max_gpu_temp);
        else
          accept_check_set(&c, ACCEPT_PASS, "GPU core temperature");
        break;
      default:
        break;
    }
    CHECK(accept_list_add(out, &c));
  }
  return GPL_OK;
}

int accept_nvml_checks(const accept_node_ctx_t *x, accept_list_t *out) {
  char why[256] = "";
  int have = mon_nvml_versions(why, sizeof why, NULL, 0, NULL) == GPL_OK;
  if (!have) CHECK(skip_all(x, out, "NVML not available: %s", why));
  else if (!x->t->live) CHECK(skip_all(x, out, "%s", "topology from a file: NVML reads this machine, not that node"));
  else if (x->t->ngpus == 0) CHECK(skip_all(x, out, "%s", "no GPU on this node"));
  else
    for (int g = 0; g < x->t->ngpus; g++) CHECK(nvml_gpu(x, g, out));
  return check_xid(x, out);
}
