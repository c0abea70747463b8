/* One monitor sample as a JSON line (the --metrics format) and back (the replay source). */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/monitor/monitor.h"

/* The --metrics line. Field names are the format's contract (the replay source reads them):
 *   t            seconds since the monitor started (replay: the time axis)
 *   time         wall clock, ISO 8601 (for people; ignored by replay)
 *   rank host gpu
 *   busy         percent: GPU busy time (NVML utilization.gpu); recordings made before it was
 *                named for what it is call it "sm", which is read the same
 *   sm_active sm_occupancy   percent: GPM SM activity and occupancy (Hopper and later)
 *   mem_util     percent
 *   mem_used mem_total   bytes
 *   power_w temp_c sm_clock_mhz mem_clock_mhz pcie_rx_kbs pcie_tx_kbs
 *   throttle     NVML clock event reason bits (number)
 *   ecc_corrected ecc_uncorrected   volatile counts
 *   nxid xid     XID events since the previous sample and the last one
 * Fields the source could not read are left out. */
char *mon_sample_to_json(const mon_sample_t *s, const char *host, int gpu) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  char iso[40];
  util_iso_time(iso, sizeof iso);
  cJSON_AddNumberToObject(o, "t", s->t);
  cJSON_AddStringToObject(o, "time", iso);
  cJSON_AddNumberToObject(o, "rank", s->rank);
  if (host) cJSON_AddStringToObject(o, "host", host);
  cJSON_AddNumberToObject(o, "gpu", gpu);
  if (s->have & MON_HAVE_BUSY) cJSON_AddNumberToObject(o, "busy", s->busy_pct);
  if (s->have & MON_HAVE_SM_ACTIVE) {
    cJSON_AddNumberToObject(o, "sm_active", s->sm_active_pct);
    cJSON_AddNumberToObject(o, "sm_occupancy", s->sm_occupancy_pct);
  }
  if (s->have & MON_HAVE_MEMUTIL) cJSON_AddNumberToObject(o, "mem_util", s->mem_util_pct);
  if (s->have & MON_HAVE_MEM) {
    cJSON_AddNumberToObject(o, "mem_used", (double)s->mem_used);
    cJSON_AddNumberToObject(o, "mem_total", (double)s->mem_total);
  }
  if (s->have & MON_HAVE_POWER) cJSON_AddNumberToObject(o, "power_w", s->power_w);
  if (s->have & MON_HAVE_TEMP) cJSON_AddNumberToObject(o, "temp_c", s->temp_c);
  if (s->have & MON_HAVE_CLOCKS) {
    cJSON_AddNumberToObject(o, "sm_clock_mhz", s->sm_clock_mhz);
    cJSON_AddNumberToObject(o, "mem_clock_mhz", s->mem_clock_mhz);
  }
  if (s->have & MON_HAVE_PCIE) {
    cJSON_AddNumberToObject(o, "pcie_rx_kbs", s->pcie_rx_kbs);
    cJSON_AddNumberToObject(o, "pcie_tx_kbs", s->pcie_tx_kbs);
  }
  if (s->have & MON_HAVE_THROTTLE) cJSON_AddNumberToObject(o, "throttle", (double)s->throttle);
  if (s->have & MON_HAVE_ECC) {
    cJSON_AddNumberToObject(o, "ecc_corrected", (double)s->ecc_corrected);
    cJSON_AddNumberToObject(o, "ecc_uncorrected", (double)s->ecc_uncorrected);
  }
  if (s->nxid > 0) {
    cJSON_AddNumberToObject(o, "nxid", s->nxid);
    cJSON_AddNumberToObject(o, "xid", s->xid);
  }
  char *txt = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return txt;
}

static int num(const cJSON *o, const char *key, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v)) return 0;
  *out = v->valuedouble;
  return 1;
}

/* Numbers from a file are range-checked before conversion: (int)1e11 or (uint64_t)1e30 is
 * undefined behaviour, and a "rank" that wrapped could apply a line to every rank. */
static uint64_t u64(double v) {
  if (!(v > 0)) return 0;
  return v >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)(v + 0.5);
}

/* A whole number in [lo, hi], or 0 (the field is refused). */
static int int_in(double v, double lo, double hi, int *out) {
  if (!(v >= lo && v <= hi) || v != floor(v)) return 0;
  *out = (int)v;
  return 1;
}

static int finite_in(const cJSON *o, const char *key, double *out) {
  return num(o, key, out) && isfinite(*out);
}

int mon_sample_from_json(const char *line, mon_sample_t *s) {
  memset(s, 0, sizeof *s);
  s->rank = -1;
  cJSON *o = cJSON_Parse(line);
  if (!cJSON_IsObject(o)) {
    cJSON_Delete(o);
    return GPL_EINVAL;
  }
  double v, w;
  int rc = GPL_EINVAL;
  int have_t = num(o, "t", &s->t);
  if (have_t && (!isfinite(s->t) || s->t < 0 || s->t > 1e12)) goto done; /* the time axis */
  /* a rank that is not one (99999999999, -3, 1.5): the line is not a sample, not everyone's */
  const cJSON *rk = cJSON_GetObjectItemCaseSensitive(o, "rank");
  if (rk && !(cJSON_IsNumber(rk) && int_in(rk->valuedouble, 0, INT_MAX, &s->rank))) goto done;
  /* "busy" since the monitor names NVML's busy time for what it is; "sm" in older recordings. */
  if (finite_in(o, "busy", &s->busy_pct) || finite_in(o, "sm", &s->busy_pct)) s->have |= MON_HAVE_BUSY;
  if (finite_in(o, "sm_active", &s->sm_active_pct)) {
    s->have |= MON_HAVE_SM_ACTIVE;
    finite_in(o, "sm_occupancy", &s->sm_occupancy_pct);
  }
  if (!have_t && !(s->have & (MON_HAVE_BUSY | MON_HAVE_SM_ACTIVE))) goto done;
  if (finite_in(o, "mem_util", &s->mem_util_pct)) s->have |= MON_HAVE_MEMUTIL;
  if (num(o, "mem_used", &v)) {
    s->have |= MON_HAVE_MEM;
    s->mem_used = u64(v);
    if (num(o, "mem_total", &w)) s->mem_total = u64(w);
  }
  if (finite_in(o, "power_w", &s->power_w)) s->have |= MON_HAVE_POWER;
  if (finite_in(o, "temp_c", &s->temp_c)) s->have |= MON_HAVE_TEMP;
  if (num(o, "sm_clock_mhz", &v)) {
    s->have |= MON_HAVE_CLOCKS;
    s->sm_clock_mhz = (unsigned)GPL_MIN(u64(v), UINT32_MAX);
    if (num(o, "mem_clock_mhz", &w)) s->mem_clock_mhz = (unsigned)GPL_MIN(u64(w), UINT32_MAX);
  }
  if (finite_in(o, "pcie_rx_kbs", &s->pcie_rx_kbs) | finite_in(o, "pcie_tx_kbs", &s->pcie_tx_kbs))
    s->have |= MON_HAVE_PCIE;
  if (num(o, "throttle", &v)) {
    s->have |= MON_HAVE_THROTTLE;
    s->throttle = u64(v);
  }
  if (num(o, "ecc_corrected", &v) | num(o, "ecc_uncorrected", &w)) {
    s->have |= MON_HAVE_ECC;
    if (num(o, "ecc_corrected", &v)) s->ecc_corrected = u64(v);
    if (num(o, "ecc_uncorrected", &w)) s->ecc_uncorrected = u64(w);
  }
  if (num(o, "xid", &v) && int_in(v, 0, INT_MAX, &s->xid)) {
    s->nxid = 1;
    if (num(o, "nxid", &w) && !int_in(w, 0, INT_MAX, &s->nxid)) s->nxid = 1;
  }
  rc = 0;
done:
  cJSON_Delete(o);
  return rc;
}
