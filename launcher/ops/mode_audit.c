/* `gpulaunch audit verify FILE...`: check the audit log's hash chain and name the first line that
 * breaks it. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/safefile.h"
#include "gpulaunch/error.h"
#include "launcher/audit/audit_chain.h"
#include "launcher/cli.h"
#include "launcher/launcher.h"

static const char g_audit_usage[] =
    "usage: gpulaunch audit verify FILE...\n"
    "  Checks the hash chain of an audit log ([audit] log, gpulaunch-run --audit-log): every line\n"
    "  must be whole, start with {\"prev\":\"<SHA-256 of the line before it>\" (64 zeros on a file's\n"
    "  first line) and be a JSON object. Prints the lines checked, or FILE:LINE and why for the\n"
    "  first line that breaks the chain (a line edited, removed, inserted or moved before it, or\n"
    "  a line cut short). The newest line and lines cut from the end are proven only by a copy\n"
    "  kept elsewhere ([audit] syslog = on).\n"
    "  Exit status: 0 every chain holds; 79 a chain is broken; 64 bad command line or a FILE\n"
    "  that cannot be read.\n";

static const struct option g_audit_opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
const cli_spec_t mode_audit_cli = {"h", g_audit_opts};

/* One file: an exit code. */
static int verify(const char *path) {
  int fd;
  char err[PATH_MAX + 200];
  if (safefile_open_read(path, &fd, NULL, err, sizeof err) < 0) {
    log_print("gpulaunch audit verify: cannot read %s\n", err);
    return GPL_EXIT_USAGE;
  }
  FILE *f = fdopen(fd, "r");
  if (!f) {
    log_print("gpulaunch audit verify: %s: %s\n", path, strerror(errno));
    close(fd);
    return GPL_EXIT_USAGE;
  }
  audit_verify_t v;
  int rc = audit_chain_verify_stream(f, &v);
  fclose(f);
  if (rc == 1) {
    log_print("gpulaunch audit verify: %s:%ld: the chain breaks here: %s (lines 1-%ld hold)\n", path,
              v.bad_line, v.why, v.lines);
    return GPL_EXIT_SECURITY;
  }
  if (rc < 0) {
    log_print("gpulaunch audit verify: %s: %s\n", path, v.why);
    return GPL_EXIT_USAGE;
  }
  printf("gpulaunch audit verify: %s: %ld line%s, the chain holds\n", path, v.lines, v.lines == 1 ? "" : "s");
  return GPL_EXIT_OK;
}

int mode_audit(launch_t *L) {
  cli_t c;
  if (cli_begin(&c, "gpulaunch audit", L->argc, L->argv, &mode_audit_cli) < 0) return GPL_EXIT_INTERNAL;
  int code, ret = -1;
  while (ret < 0 && (code = cli_next(&c, 1)) != -1) {
    if (code == 'h') {
      fputs(g_audit_usage, stdout);
      ret = GPL_EXIT_OK;
    } else {
      log_print("gpulaunch audit: unknown option '%s'\n%s", cli_opt(&c), g_audit_usage);
      ret = GPL_EXIT_USAGE;
    }
  }
  int n;
  char **w = cli_rest(&c, &n);
  if (ret < 0 && (n < 2 || strcmp(w[0], "verify") != 0)) {
    log_print("gpulaunch audit: %s\n%s", n == 0 ? "what to do? (verify FILE)"
              : strcmp(w[0], "verify") != 0 ? "unknown command (verify FILE)" : "verify needs a FILE",
              g_audit_usage);
    ret = GPL_EXIT_USAGE;
  }
  /* every file is checked; a broken chain outweighs a file that cannot be read */
  if (ret < 0) {
    ret = GPL_EXIT_OK;
    for (int i = 1; i < n; i++) {
      int r = verify(w[i]);
      if (r == GPL_EXIT_SECURITY || (r != GPL_EXIT_OK && ret == GPL_EXIT_OK)) ret = r;
    }
  }
  cli_end(&c);
  return ret;
}
