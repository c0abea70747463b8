/* GPU health checks of `gpulaunch accept`: ECC, retired pages / remapped rows, clocks, temperature
 * and NVLink through the project's NVML loader (topology/nvml.h, dlopen'ed at run time), and Xid
 * errors from the kernel log. Each check is skipped with its reason where NVML is not available,
 * the topology is a file, the node has no GPU, or the GPU does not have what is checked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/kmsg.h"
#include "common/strbuf.h"
#include "launcher/accept/accept.h"
#include "topology/nvml.h"

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
  int rc = kmsg_read(&log, why, sizeof why);
  if (rc < 0) {
    strbuf_free(&log);
    if (rc == GPL_ESYS) accept_check_set(&c, ACCEPT_SKIP, "the kernel log cannot be read: %s", why);
    else accept_check_set(&c, ACCEPT_SKIP, "the kernel log cannot be read");
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

static void check_ecc(accept_check_t *c, const nvml_reading_t *s) {
  accept_check_threshold(c, "0 uncorrectable");
  if (!(s->have & NVML_HAVE_ECC)) {
    accept_check_set(c, ACCEPT_SKIP, "NVML reports no ECC counts for this GPU (ECC off, or a board "
                     "without it)");
    return;
  }
  accept_check_value(c, (double)s->ecc_uncorrected, "", "%llu uncorrectable, %llu corrected",
                     (unsigned long long)s->ecc_uncorrected, (unsigned long long)s->ecc_corrected);
  if (s->ecc_uncorrected > 0)
    accept_check_set(c, ACCEPT_FAIL, "uncorrectable ECC errors since the driver loaded: drain the "
                     "node and reset the GPU");
  else
    accept_check_set(c, ACCEPT_PASS, "volatile ECC counts since the driver loaded");
}

/* Ampere and later remap rows of bad memory; older GPUs retire pages. Both are normal in small
 * numbers and handled by the driver. A remap or retirement that waits for a reset or reboot is a
 * warning (until then the driver keeps the bad memory out of use; NVML's documentation says
 * pending remaps do not affect work); a remap that failed (no spare row left) fails the GPU. */
static void check_retired(accept_check_t *c, const nvml_health_t *h) {
  accept_check_threshold(c, "none pending, no failed remap");
  if (h->mem_kind == 2) {
    accept_check_value(c, (double)(h->remap_corr + h->remap_unc), "", "%u rows remapped (%u correctable, "
                       "%u uncorrectable)%s%s", h->remap_corr + h->remap_unc, h->remap_corr, h->remap_unc,
                       h->remap_pending ? ", remap pending" : "", h->remap_failed ? ", a remap failed" : "");
    if (h->remap_failed)
      accept_check_set(c, ACCEPT_FAIL, "a row remapping failed (no spare row left in a bank): the GPU "
                       "needs replacing (nvidia-smi -q -d ROW_REMAPPER)");
    else if (h->remap_pending)
      accept_check_set(c, ACCEPT_WARN, "row remappings are pending: reset the GPU (nvidia-smi -r, or "
                       "reboot) when the node is drained to apply them");
    else
      accept_check_set(c, ACCEPT_PASS, "row remapper: nothing pending, no failure (nvmlDeviceGetRemappedRows)");
  } else if (h->mem_kind == 1) {
    accept_check_value(c, (double)(h->retired_sbe + h->retired_dbe), "", "%u pages retired (%u single-bit, "
                       "%u double-bit)%s", h->retired_sbe + h->retired_dbe, h->retired_sbe, h->retired_dbe,
                       h->retired_pending ? ", retirement pending" : "");
    if (h->retired_pending)
      accept_check_set(c, ACCEPT_WARN, "pages are pending retirement: reboot the node (or reset the GPU) "
                       "when it is drained to retire them");
    else
      accept_check_set(c, ACCEPT_PASS, "no page pending retirement (nvmlDeviceGetRetiredPages)");
  } else {
    accept_check_set(c, ACCEPT_SKIP, "NVML reports neither remapped rows nor retired pages for this GPU "
                     "(not supported by the board, or MIG is on)");
  }
}

static void check_clocks(accept_check_t *c, const nvml_reading_t *s) {
  const uint64_t hard = NVML_THROTTLE_HW_SLOWDOWN | NVML_THROTTLE_HW_THERMAL | NVML_THROTTLE_HW_POWER_BRAKE |
                        NVML_THROTTLE_SW_THERMAL;
  accept_check_threshold(c, "no thermal/hardware slowdown");
  if (!(s->have & NVML_HAVE_THROTTLE)) {
    accept_check_set(c, ACCEPT_SKIP, "NVML reports no clock event reasons for this GPU");
    return;
  }
  if (s->have & NVML_HAVE_CLOCKS)
    accept_check_value(c, s->sm_clock_mhz, "MHz", "SM %u MHz, memory %u MHz, reasons 0x%llx", s->sm_clock_mhz,
                       s->mem_clock_mhz, (unsigned long long)s->throttle);
  else
    accept_check_text(c, "reasons 0x%llx", (unsigned long long)s->throttle);
  if (s->throttle & hard)
    accept_check_set(c, ACCEPT_FAIL, "clocks slowed by %s%s%s%s",
                     s->throttle & NVML_THROTTLE_HW_SLOWDOWN ? "hardware slowdown " : "",
                     s->throttle & NVML_THROTTLE_HW_THERMAL ? "hardware thermal " : "",
                     s->throttle & NVML_THROTTLE_SW_THERMAL ? "software thermal " : "",
                     s->throttle & NVML_THROTTLE_HW_POWER_BRAKE ? "power brake" : "");
  else if (s->throttle & NVML_THROTTLE_SW_POWER_CAP)
    accept_check_set(c, ACCEPT_WARN, "clocks held by the software power cap while idle (power limit set "
                     "low?)");
  else
    accept_check_set(c, ACCEPT_PASS, "no slowdown reason active");
}

static void check_temp(accept_check_t *c, const nvml_reading_t *s, double limit) {
  accept_check_threshold(c, "<= %g C", limit);
  if (!(s->have & NVML_HAVE_TEMP)) {
    accept_check_set(c, ACCEPT_SKIP, "NVML reports no temperature for this GPU");
    return;
  }
  accept_check_value(c, s->temp_c, "C", NULL);
  if (s->temp_c > limit)
    accept_check_set(c, ACCEPT_FAIL, "hotter than %g C at rest: cooling problem", limit);
  else
    accept_check_set(c, ACCEPT_PASS, "GPU core temperature");
}

/* Links NVML knows for the GPU: all active passes; some down fails (NCCL then routes that GPU's
 * traffic over fewer links or PCIe, and the job runs at a fraction of its speed); none active is
 * a warning, since a PCIe board without its bridge looks the same as an NVSwitch fabric that is
 * down. */
static void check_nvlink(accept_check_t *c, const nvml_health_t *h) {
  accept_check_threshold(c, "every link active");
  if (h->nvlink_links == 0) {
    accept_check_set(c, ACCEPT_SKIP, "this GPU has no NVLink (NVML answers no link state)");
    return;
  }
  accept_check_value(c, h->nvlink_active, "", "%d of %d links active%s%s", h->nvlink_active, h->nvlink_links,
                     h->nvlink_version ? ", NVLink " : "",
                     h->nvlink_version ? nvml_nvlink_version_name(h->nvlink_version) : "");
  if (h->nvlink_active == h->nvlink_links) {
    accept_check_set(c, ACCEPT_PASS, "every NVLink of the GPU is active (nvmlDeviceGetNvLinkState)");
    return;
  }
  char down[160] = "";
  size_t n = 0;
  for (int l = 0; l < NVML_NVLINK_MAX && n + 8 < sizeof down; l++)
    if (h->nvlink_down & (1ull << l)) n += (size_t)snprintf(down + n, sizeof down - n, "%s%d", n ? "," : "", l);
  if (h->nvlink_active == 0)
    accept_check_set(c, ACCEPT_WARN, "none of its %d NVLinks is active: no bridge or NVSwitch, or the fabric is "
                     "down (nvidia-smi nvlink -s; on NVSwitch systems, nvidia-fabricmanager)", h->nvlink_links);
  else
    accept_check_set(c, ACCEPT_FAIL, "NVLink(s) %s down: NCCL routes around them at a fraction of the "
                     "bandwidth; reset the GPU or check the NVSwitch tray", down);
}

static int nvml_gpu(const accept_node_ctx_t *x, int g, accept_list_t *out) {
  const topo_gpu_t *gp = &x->t->gpus[g];
  char subj[16], why[256] = "";
  snprintf(subj, sizeof subj, "GPU%d", g);
  accept_check_t c;
  nvml_dev_t *dev = NULL;
  nvml_reading_t s;
  nvml_health_t h;
  memset(&s, 0, sizeof s);
  memset(&h, 0, sizeof h);
  int rc = nvml_dev_open(gp->pci[0] ? gp->pci : NULL, gp->nvml_index >= 0 ? gp->nvml_index : g, &dev, why,
                         sizeof why);
  if (rc == GPL_OK) {
    rc = nvml_dev_read(dev, &s);
    if (rc == GPL_OK) rc = nvml_dev_health(dev, &h);
    if (rc < 0) snprintf(why, sizeof why, "NVML read failed: %s", gpl_strerror(rc));
    nvml_dev_close(dev);
  } else if (!why[0]) {
    snprintf(why, sizeof why, "NVML does not know %s (%s)", gp->pci, gpl_strerror(rc));
  }
  for (int i = 0; i < N_COUNT; i++) {
    accept_check_init(&c, g_nvml_names[i], x->host, x->node, -1, subj);
    if (rc < 0) {
      accept_check_set(&c, ACCEPT_ERROR, "%s", why);
    } else {
      switch ((nvml_check_t)i) {
        case N_ECC: check_ecc(&c, &s); break;
        case N_RETIRED: check_retired(&c, &h); break;
        case N_CLOCKS: check_clocks(&c, &s); break;
        case N_TEMP: check_temp(&c, &s, x->o->max_gpu_temp); break;
        case N_NVLINK: check_nvlink(&c, &h); break;
        default: break;
      }
    }
    CHECK(accept_list_add(out, &c));
  }
  return GPL_OK;
}

int accept_nvml_checks(const accept_node_ctx_t *x, accept_list_t *out) {
  char why[256] = "";
  /* One reference held over every GPU's checks: each nvml_dev_open then only counts it, instead
   * of loading and initialising NVML again per GPU. */
  int have = nvml_open(why, sizeof why) == GPL_OK;
  int rc = GPL_OK;
  if (!have) rc = skip_all(x, out, "NVML not available: %s", why);
  else if (!x->t->live) rc = skip_all(x, out, "%s", "topology from a file: NVML reads this machine, not that node");
  else if (x->t->ngpus == 0) rc = skip_all(x, out, "%s", "no GPU on this node");
  else
    for (int g = 0; g < x->t->ngpus && rc == GPL_OK; g++) rc = nvml_gpu(x, g, out);
  if (have) nvml_close();
  CHECK(rc);
  return check_xid(x, out);
}
