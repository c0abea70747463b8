/* Test driver for the diag bundle: `ops_diag_run [--mpi] --out DIR [--config FILE]` calls
 * diag_bundle as `gpulaunch diag` does, with or without MPI (with: a job built from MPI_COMM_WORLD). */
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
  const char *out = NULL, *conf = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--mpi")) mpi = 1;
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!strcmp(argv[i], "--config") && i + 1 < argc) conf = argv[++i];
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
