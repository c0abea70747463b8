/* getopt_long over a mode's words, with the options every mode takes joined to its own. */
#include "launcher/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

static const struct option g_global[] = {
    {"verbose", no_argument, 0, 'v'},
    {"quiet", no_argument, 0, 'q'},
    {"topology", required_argument, 0, CLI_TOPOLOGY},
    {"summary", required_argument, 0, CLI_SUMMARY},
    {"metrics", required_argument, 0, CLI_METRICS},
    {"prom", required_argument, 0, CLI_PROM},
    {0, 0, 0, 0},
};

/* 1 when code is one of the global options. */
static int cli_is_global(int code) { return code == 'v' || code == 'q' || code > CLI_GLOBAL; }

int cli_begin(cli_t *c, const char *name, int n, char **words, const cli_spec_t *spec) {
  memset(c, 0, sizeof *c);
  size_t nmode = 0, nglob = sizeof g_global / sizeof g_global[0] - 1;
  while (spec && spec->longopts && spec->longopts[nmode].name) nmode++;
  c->longopts = calloc(nmode + nglob + 1, sizeof *c->longopts);
  c->argv = calloc((size_t)n + 2, sizeof *c->argv);
  if (!c->longopts || !c->argv) {
    cli_end(c);
    return GPL_ENOMEM;
  }
  /* The mode's first: a mode may give a global name a meaning of its own. */
  for (size_t i = 0; i < nmode; i++) c->longopts[i] = spec->longopts[i];
  for (size_t i = 0; i < nglob; i++) c->longopts[nmode + i] = g_global[i];
  /* '+' (stop at the first word) must come first, then ':' (report a missing value as ':'). */
  const char *so = spec && spec->shortopts ? spec->shortopts : "";
  int plus = so[0] == '+';
  snprintf(c->shortopts, sizeof c->shortopts, "%s:%s%s", plus ? "+" : "", so + plus, CLI_GLOBAL_SHORT);
  c->argv[0] = (char *)name;
  for (int i = 0; i < n; i++) c->argv[i + 1] = words[i];
  c->argc = n + 1;
  optind = 0; /* glibc: a full re-initialisation, for every parse */
  opterr = 0; /* the caller says what is wrong, with the mode's name */
  return GPL_OK;
}

int cli_next(cli_t *c, int skip_global) {
  for (;;) {
    int code = getopt_long(c->argc, c->argv, c->shortopts, c->longopts, NULL);
    if (code == -1 || !skip_global || !cli_is_global(code)) return code;
  }
}

const char *cli_opt(const cli_t *c) {
  static char buf[8];
  const char *word = optind > 0 && optind <= c->argc ? c->argv[optind - 1] : "?";
  /* A long option is the word itself; a short one (possibly in a cluster, -vb) is optopt. */
  if (strncmp(word, "--", 2) == 0 || !(optopt > ' ' && optopt < 127)) return word;
  snprintf(buf, sizeof buf, "-%c", optopt);
  return buf;
}

char **cli_rest(const cli_t *c, int *n) {
  *n = c->argc - optind;
  return c->argv + optind;
}

const char *cli_optional_next(cli_t *c) {
  if (optarg) return optarg;
  if (optind < c->argc && (c->argv[optind][0] != '-' || strcmp(c->argv[optind], "-") == 0))
    return c->argv[optind++];
  return NULL;
}

void cli_end(cli_t *c) {
  free(c->longopts);
  free(c->argv);
  c->longopts = NULL;
  c->argv = NULL;
}
