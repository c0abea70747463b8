/* Test driver for the diag bundle: `ops_diag_run [--mpi] --out DIR [--config FILE] [--pci-root DIR]
 * [--fm-log FILE] [--no-bug-report] [--bug-report-timeout S]` calls diag_bundle as `gpulaunch diag`
 * does, with or without MPI (with: a job built from MPI_COMM_WORLD); --pci-root and --fm-log stand
 * for sysfs (NVSwitches) and the fabric manager's log. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "launcher/ops/diag.h"

/* Stands in for conf_print: echoes the config file as "section.key = value   # origin" lines. */
static void write_config(FILE *f, void *ctx) {
  const char *path = ctx;
  FILE *in = fopen(path, "r");
  if (!in) return;
  char line[1024], section[64] = "";
  int n = 0;
  while (fgets(line, sizeof line, in)) {
    n++;
    char *l = util_trim(line);
    if (*l == '[') {
      sscanf(l, "[%63[^]]", section);
    } else if (*l && *l != '#' && strchr(l, '=')) {
      char *eq = strchr(l, '=');
      *eq = 0;
      fprintf(f, "%s.%s = %s   # %s:%d\n", section, util_trim(l), util_trim(eq + 1), path, n);
    }
  }
  fclose(in);
}

int main(int argc, char **argv) {
  int mpi = 0;
  const char *out = NULL, *conf = NULL, *pci_root = NULL, *fm_log = NULL;
  int bug_report = 1;
  double bug_timeout = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--mpi")) mpi = 1;
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!strcmp(argv[i], "--config") && i + 1 < argc) conf = argv[++i];
    else if (!strcmp(argv[i], "--pci-root") && i + 1 < argc) pci_root = argv[++i];
    else if (!strcmp(argv[i], "--fm-log") && i + 1 < argc) fm_log = argv[++i];
    else if (!strcmp(argv[i], "--no-bug-report")) bug_report = 0;
    else if (!strcmp(argv[i], "--bug-report-timeout") && i + 1 < argc) bug_timeout = atof(argv[++i]);
  }
  log_init();
  job_t job;
  memset(&job, 0, sizeof job);
  if (mpi) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &job.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &job.size);
    MPI_Comm_dup(MPI_COMM_WORLD, &job.world);
    MPI_Comm node_comm;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_comm);
    MPI_Comm_rank(node_comm, &job.local_rank);
    MPI_Comm_size(node_comm, &job.local_size);
    MPI_Comm_free(&node_comm);
    util_strlcpy(job.host, util_hostname(), sizeof job.host);
    job.timeout = 60;
    log_set_identity(job.host, job.rank);
  }
  diag_opts_t o;
  diag_opts_default(&o);
  o.out_dir = out;
  o.job = mpi ? &job : NULL;
  if (conf) {
    o.write_config = write_config;
    o.config_ctx = (void *)conf;
    o.conf_path = conf;
  }
  o.cmd_timeout = 10;
  o.pci_root = pci_root;
  o.fm_log = fm_log;
  o.bug_report = bug_report;
  if (bug_timeout > 0) o.bug_report_timeout = bug_timeout;
  char path[1024];
  diag_verdicts_t v;
  int rc = diag_bundle(&o, path, sizeof path, &v);
  if (!mpi || job.rank == 0) {
    printf("bundle %s rc %d\n", path, rc);
    for (int i = 0; i < v.n; i++) printf("[%s] %s\n", diag_level_name(v.level[i]), v.text[i]);
  }
  if (mpi) {
    MPI_Comm_free(&job.world);
    MPI_Finalize();
  }
  return rc < 0 ? 1 : 0;
}
