/* `gpulaunch diag`: the support bundle (versions, topology, plan, nvidia-smi, network, config,
 * environment, kernel messages) and its verdict list; works with or without MPI. */
#ifndef GPL_LAUNCHER_DIAG_H
#define GPL_LAUNCHER_DIAG_H

#include <stddef.h>
#include <stdio.h>

#include "common/strbuf.h"
#include "launcher/job/job.h"

/* ---- Verdicts: the short list at the top of SUMMARY.txt ---------------------------------- */

typedef enum diag_level_e { DIAG_OK = 0, DIAG_INFO, DIAG_WARN, DIAG_ERROR } diag_level_t;

#define DIAG_MAX_VERDICTS 32
typedef struct diag_verdicts_s {
  int n;
  diag_level_t level[DIAG_MAX_VERDICTS];
  char text[DIAG_MAX_VERDICTS][320];
} diag_verdicts_t;

void diag_verdict_add(diag_verdicts_t *v, diag_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "ERROR", "WARN", "INFO", "OK". */
const char *diag_level_name(diag_level_t l);
/* The worst level in the list (DIAG_OK when empty). */
diag_level_t diag_verdict_worst(const diag_verdicts_t *v);

/* CUDA versions as the runtime encodes them (1000*major + 10*minor; 0 = none). Adds nothing
 * when both are fine; "driver older than the runtime needs" (error) when the driver's major is
 * lower; a warning when only the minor is lower (minor version compatibility). */
void diag_verdict_cuda(diag_verdicts_t *v, int driver_cuda, int runtime_cuda,
                       const char *driver_version);
/* GPUs: nvidia_pci = NVIDIA GPUs on the PCI bus (-1 unknown); nvml_ok: NVML loaded and
 * initialised; nvml_why: why not. Adds the "no GPU" verdicts. */
void diag_verdict_gpu(diag_verdicts_t *v, int nvidia_pci, int nvml_ok, const char *nvml_why);

/* "12.4" for 12040. */
const char *diag_cuda_version_str(int v, char *buf, size_t len);

/* ---- The bundle ------------------------------------------------------------------------------ */

typedef struct diag_opts_s {
  const char *out_dir;       /* the bundle folder; NULL: ./gpulaunch-diag-<host>-<UTC time> */
  int make_tar;              /* 1: also OUT.tar.gz when tar exists (rank 0) */
  const job_t *job;          /* NULL without MPI (one node) */
  const char *topology_xml;  /* hwloc XML to report instead of this machine, or NULL */
  /* Writes the effective config (conf_print); NULL when there is none. Its output is redacted. */
  void (*write_config)(FILE *f, void *ctx);
  void *config_ctx;
  const char *conf_path;     /* copied (redacted) into the bundle when set */
  double cmd_timeout;        /* seconds per captured command (nvidia-smi may hang); <= 0: 20;
                              * dcgmi diag -r 1 gets three times that */
  int bug_report;            /* 1 (default): run nvidia-bug-report.sh where it is installed and
                              * put its archive in the bundle; 0: --no-bug-report */
  double bug_report_timeout; /* its bound, seconds (<= 0: DIAG_BUG_REPORT_TIMEOUT_S) */
  const char *pci_root;      /* sysfs PCI devices to look for NVSwitches in (NULL: the system's;
                              * tests) */
  const char *fm_log;        /* the fabric manager's log (NULL: /var/log/fabricmanager.log) */
} diag_opts_t;

/* nvidia-bug-report.sh runs a minute or two; a hung driver call must not hold diag forever. */
#define DIAG_BUG_REPORT_TIMEOUT_S 300.0

void diag_opts_default(diag_opts_t *o);

/* Write the bundle: OUT/SUMMARY.txt (verdicts of every node first) and OUT/<host>/ per node
 * (one writer per node: local rank 0), then OUT.tar.gz on rank 0. Every file goes through
 * redact_text. out_path (may be NULL) receives OUT. The verdicts of this node are copied
 * to verdicts when not NULL. Returns 0 or a negative code; a missing tool is a line in the
 * bundle, not an error. */
int diag_bundle(const diag_opts_t *o, char *out_path, size_t len, diag_verdicts_t *verdicts);

/* ---- Helpers (diag_sys.c), exposed for tests -------------------------------------------- */

/* Run argv (PATH search) with stdin from /dev/null, stdout+stderr captured, killed after
 * timeout_s. *out is malloc'd (NUL-terminated, at most 8 MiB), *status the exit status or
 * 128+signal; returns 0, GPL_ENOENT (not found), GPL_ETIMEDOUT (killed; *out holds what came)
 * or GPL_ESYS. */
int diag_run(char *const argv[], double timeout_s, char **out, int *status);
/* Write text to dir/name, redacted, mode 0644. 0, GPL_ESYS (logged) or GPL_ENOMEM. */
int diag_write(const char *dir, const char *name, const char *text);
/* Files diag_write has written in this process. */
int diag_files_written(void);
/* NVIDIA GPUs on the PCI bus from sysfs (/sys/bus/pci/devices or root when set, for tests);
 * -1 when sysfs is not readable. */
int diag_count_nvidia_pci(const char *root);
/* NVIDIA PCI functions under root whose class code, masked with mask, is want (-1: unreadable). */
int diag_count_nvidia_class(const char *root, long mask, long want);
/* `dcgmi diag` output: the table's rows whose result is Pass (*npass) and Fail (returned), the
 * failed checks' names joined by ", " into failed (len bytes, truncated). */
int diag_dcgmi_parse(const char *out, int *npass, char *failed, size_t len);
/* NVIDIA NVSwitches on the PCI bus (class 0x0680), same sysfs; -1 when not readable. */
int diag_count_nvswitch(const char *root);

#endif
