/* diag verdicts: the short "what is wrong" list at the top of the bundle's SUMMARY.txt. */
#include <stdarg.h>
#include <stdio.h>

#include "launcher/ops/diag.h"

void diag_verdict_add(diag_verdicts_t *v, diag_level_t level, const char *fmt, ...) {
  if (v->n >= DIAG_MAX_VERDICTS) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->text[v->n], sizeof v->text[v->n], fmt, ap);
  va_end(ap);
  v->level[v->n++] = level;
}

const char *diag_level_name(diag_level_t l) {
  switch (l) {
    case DIAG_ERROR: return "ERROR";
    case DIAG_WARN: return "WARN";
    case DIAG_INFO: return "INFO";
    default: return "OK";
  }
}

diag_level_t diag_verdict_worst(const diag_verdicts_t *v) {
  diag_level_t w = DIAG_OK;
  for (int i = 0; i < v->n; i++)
    if (v->level[i] > w) w = v->level[i];
  return w;
}

const char *diag_cuda_version_str(int v, char *buf, size_t len) {
  if (v <= 0) snprintf(buf, len, "none");
  else snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
  return buf;
}

void diag_verdict_cuda(diag_verdicts_t *v, int driver_cuda, int runtime_cuda,
                       const char *driver_version) {
  if (driver_cuda <= 0 || runtime_cuda <= 0) return; /* no driver: the GPU verdict says it */
  char d[16], r[16];
  diag_cuda_version_str(driver_cuda, d, sizeof d);
  diag_cuda_version_str(runtime_cuda, r, sizeof r);
  const char *dv = driver_version && *driver_version ? driver_version : "?";
  if (driver_cuda / 1000 < runtime_cuda / 1000) {
    diag_verdict_add(v, DIAG_ERROR,
                     "driver older than the runtime needs: the NVIDIA driver %s supports CUDA %s, "
                     "but the CUDA runtime is %s (it needs a driver for CUDA %d.x or newer); "
                     "update the driver, or use a CUDA %d.x runtime / the cuda-compat package",
                     dv, d, r, runtime_cuda / 1000, driver_cuda / 1000);
  } else if (driver_cuda < runtime_cuda) {
    diag_verdict_add(v, DIAG_WARN,
                     "driver older than the runtime: the NVIDIA driver %s supports CUDA %s, the "
                     "runtime is %s; this runs through CUDA minor version compatibility, but PTX "
                     "JIT and features new in %s fail", dv, d, r, r);
  }
}

void diag_verdict_gpu(diag_verdicts_t *v, int nvidia_pci, int nvml_ok, const char *nvml_why) {
  if (nvml_ok) return;
  if (nvidia_pci == 0)
    diag_verdict_add(v, DIAG_ERROR, "no GPU: no NVIDIA PCI device found / %s",
                     nvml_why && *nvml_why ? nvml_why : "no NVIDIA driver");
  else if (nvidia_pci > 0)
    diag_verdict_add(v, DIAG_ERROR, "%d NVIDIA GPU%s on the PCI bus, but %s: install or load the "
                     "NVIDIA driver", nvidia_pci, nvidia_pci == 1 ? "" : "s",
                     nvml_why && *nvml_why ? nvml_why : "no NVIDIA driver");
  else
    diag_verdict_add(v, DIAG_ERROR, "no GPU: the PCI bus is not readable here and %s",
                     nvml_why && *nvml_why ? nvml_why : "no NVIDIA driver");
}
