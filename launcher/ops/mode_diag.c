/* `gpulaunch diag [--out DIR] [--no-tar]`: write the support bundle and print its verdicts. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "gpulaunch/error.h"
#include "launcher/ops/diag.h"
#include "launcher/launcher.h"

static void write_conf(FILE *f, void *ctx) { conf_print(f, (const conf_t *)ctx); }

static void usage(FILE *f) {
  fprintf(f, "usage: gpulaunch diag [--out DIR] [--no-tar]\n"
             "  Writes a support bundle: DIR/SUMMARY.txt (verdicts first) and DIR/<host>/ with\n"
             "  versions, topology, plan, nvidia-smi, network, config, environment (credentials\n"
             "  redacted) and kernel messages; then DIR.tar.gz. Works with or without mpirun.\n"
             "  --out DIR   the bundle folder (default ./gpulaunch-diag-<host>-<UTC time>)\n"
             "  --no-tar    do not make DIR.tar.gz\n");
}

int mode_diag(launch_t *L) {
  diag_opts_t o;
  diag_opts_default(&o);
  for (int i = 0; i < L->argc; i++) {
    const char *a = L->argv[i];
    if (i == 0 && strcmp(a, "diag") == 0) continue; /* the mode word, if the caller kept it */
    if (strcmp(a, "--out") == 0 && i + 1 < L->argc) o.out_dir = L->argv[++i];
    else if (strncmp(a, "--out=", 6) == 0) o.out_dir = a + 6;
    else if (strcmp(a, "--no-tar") == 0) o.make_tar = 0;
    else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return GPL_EXIT_OK;
    } else {
      fprintf(stderr, "gpulaunch diag: unknown argument '%s'\n", a);
      usage(stderr);
      return GPL_EXIT_USAGE;
    }
  }
  o.job = L->job;
  o.topology_xml = L->topology_xml;
  if (L->conf) {
    o.write_config = write_conf;
    o.config_ctx = L->conf;
  }
  o.conf_path = L->conf_path;
  char out[1024];
  diag_verdicts_t v;
  int rc = diag_bundle(&o, out, sizeof out, &v);
  if (rc < 0) {
    LOG_ERROR("diag: the bundle could not be written: %s", gpl_strerror(rc));
    return rc == GPL_ETIMEDOUT ? GPL_EXIT_TIMEOUT : GPL_EXIT_INTERNAL;
  }
  if (!L->job || L->job->rank == 0) {
    char tarpath[1100];
    snprintf(tarpath, sizeof tarpath, "%s.tar.gz", out);
    if (o.make_tar && access(tarpath, F_OK) == 0)
      printf("gpulaunch diag: bundle in %s/ and %s\n", out, tarpath);
    else
      printf("gpulaunch diag: bundle in %s/\n", out);
    printf("verdicts of this host (all hosts: %s/SUMMARY.txt):\n", out);
    for (int i = 0; i < v.n; i++) printf("  [%s] %s\n", diag_level_name(v.level[i]), v.text[i]);
  }
  return GPL_EXIT_OK;
}
