/* Command lines with getopt_long: the options every mode takes (-v, -q, --topology, --summary,
 * --metrics, --prom) joined to a mode's own, so that they work before and after the mode word. */
#ifndef GPL_LAUNCHER_CLI_H
#define GPL_LAUNCHER_CLI_H

#include <getopt.h>

/* getopt_long codes of the options every mode takes (their short forms: 'v', 'q'). Modes use
 * codes below CLI_GLOBAL for their long-only options. */
enum { CLI_GLOBAL = 0x1000, CLI_TOPOLOGY, CLI_SUMMARY, CLI_METRICS, CLI_PROM };
#define CLI_GLOBAL_SHORT "vq"

/* A mode's own options: short options in getopt's syntax (without a leading ':', added here)
 * and long ones (terminated by a zero entry). */
typedef struct cli_spec_s {
  const char *shortopts;
  const struct option *longopts;
} cli_spec_t;

/* A parse in progress over a mode's words. */
typedef struct cli_s {
  int argc;
  char **argv;              /* argv[0] = "gpulaunch MODE", then the words */
  struct option *longopts;  /* the mode's and the global ones */
  char shortopts[256];
} cli_t;

/* Begin a parse of words[0..n) for the mode "name" (spec may be NULL: only the global options).
 * \return 0 or GPL_ENOMEM. */
int cli_begin(cli_t *c, const char *name, int n, char **words, const cli_spec_t *spec);
/* The next option: getopt_long's code (optarg set), '?' for an unknown option, ':' for one
 * missing its value (cli_opt names it), -1 at the end. With skip_global, the global options are
 * passed over (main applied them already); otherwise they are returned too. */
int cli_next(cli_t *c, int skip_global);
/* The option word just returned ("--json", "-b"), for messages. */
const char *cli_opt(const cli_t *c);
/* Words left after the options (getopt_long moves them to the end), and how many. */
char **cli_rest(const cli_t *c, int *n);
/* For an optional value given as the next word ("--json FILE" as well as "--json=FILE"): that
 * word when it is not an option (or is "-"), consumed; NULL otherwise. */
const char *cli_optional_next(cli_t *c);
void cli_end(cli_t *c);

#endif
