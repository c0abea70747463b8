/* `gpulaunch diag [--out DIR] [--no-tar] [--no-bug-report] [--bug-report-timeout S]`: write the support bundle and print its verdicts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "gpulaunch/error.h"
#include "launcher/ops/diag.h"
#include "launcher/cli.h"
#include "launcher/launcher.h"

static void write_conf(FILE *f, void *ctx) { conf_print(f, (const conf_t *)ctx); }

static const char g_diag_usage[] =
    "usage: gpulaunch diag [--out DIR] [--no-tar] [--no-bug-report] [--bug-report-timeout S]\n"
    "  Writes a support bundle: DIR/SUMMARY.txt (verdicts first) and DIR/<host>/ with\n"
    "  versions, topology, plan, nvidia-smi, network, config, environment (credentials\n"
    "  redacted), kernel messages, nvidia-fabricmanager's state (NVSwitch systems),\n"
    "  dcgmi diag -r 1 (where DCGM is installed) and NVIDIA's nvidia-bug-report.log.gz\n"
    "  (where nvidia-bug-report.sh is installed); then DIR.tar.gz. Works with or without mpirun.\n"
    "  --out DIR                the bundle folder (default ./gpulaunch-diag-<host>-<UTC time>)\n"
    "  --no-tar                 do not make DIR.tar.gz\n"
    "  --no-bug-report          do not run nvidia-bug-report.sh\n"
    "  --bug-report-timeout S   kill nvidia-bug-report.sh after S seconds (default 300)\n";

enum { OPT_OUT = 1, OPT_NO_TAR, OPT_NO_BUG_REPORT, OPT_BUG_REPORT_TIMEOUT };
static const struct option g_diag_opts[] = {
    {"out", required_argument, 0, OPT_OUT},
    {"no-tar", no_argument, 0, OPT_NO_TAR},
    {"no-bug-report", no_argument, 0, OPT_NO_BUG_REPORT},
    {"bug-report-timeout", required_argument, 0, OPT_BUG_REPORT_TIMEOUT},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};
const cli_spec_t mode_diag_cli = {"h", g_diag_opts};

int mode_diag(launch_t *L) {
  diag_opts_t o;
  diag_opts_default(&o);
  cli_t c;
  if (cli_begin(&c, "gpulaunch diag", L->argc, L->argv, &mode_diag_cli) < 0) return GPL_EXIT_INTERNAL;
  int code, ret = -1;
  while (ret < 0 && (code = cli_next(&c, 1)) != -1) {
    switch (code) {
      case OPT_OUT: o.out_dir = optarg; break;
      case OPT_NO_TAR: o.make_tar = 0; break;
      case OPT_NO_BUG_REPORT: o.bug_report = 0; break;
      case OPT_BUG_REPORT_TIMEOUT: {
        char *end = NULL;
        double s = strtod(optarg, &end);
        if (!end || end == optarg || *end || !(s > 0) || s > 86400) {
          log_print("gpulaunch diag: --bug-report-timeout '%s': seconds, more than 0\n%s", optarg, g_diag_usage);
          ret = GPL_EXIT_USAGE;
        } else {
          o.bug_report_timeout = s;
        }
        break;
      }
      case 'h': fputs(g_diag_usage, stdout); ret = GPL_EXIT_OK; break;
      case ':': log_print("gpulaunch diag: %s needs a value\n%s", cli_opt(&c), g_diag_usage); ret = GPL_EXIT_USAGE; break;
      default: log_print("gpulaunch diag: unknown argument '%s'\n%s", cli_opt(&c), g_diag_usage); ret = GPL_EXIT_USAGE; break;
    }
  }
  int n;
  char **rest = cli_rest(&c, &n);
  /* The mode word, if a caller kept it (tests/launcher/ops/diag_run.c). */
  if (ret < 0 && n > 0 && !(n == 1 && strcmp(rest[0], "diag") == 0)) {
    log_print("gpulaunch diag: unknown argument '%s'\n%s", rest[n > 1 && strcmp(rest[0], "diag") == 0], g_diag_usage);
    ret = GPL_EXIT_USAGE;
  }
  cli_end(&c);
  if (ret >= 0) return ret;
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
    LOG_ERROR("diag: the bundle could not be written under %s: %s", out, gpl_strerror(rc));
    if (rc == GPL_ETIMEDOUT) return GPL_EXIT_TIMEOUT;
    /* a folder refused (another user's link, an unsafe parent) or nothing written */
    if (rc == GPL_EIO || rc == GPL_ESYS || rc == GPL_EINVAL || rc == GPL_ENOENT) return GPL_EXIT_OUTPUT;
    return GPL_EXIT_INTERNAL;
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
