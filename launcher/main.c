/* gpulaunch: parse the command line, load the config, start the job (MPI) and run the mode. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/envvar.h"
#include "common/mpix.h"
#include "common/netport.h"
#include "common/tls.h"
#include "launcher/ops/audit.h"
#include "launcher/audit/audit_event.h"
#include "launcher/ops/redact_json.h"
#include "common/safefile.h"
#include "common/util.h"
#include "launcher/cli.h"
#include "launcher/live/lostpeer.h"
#include "launcher/launcher.h"

/* --help: this, then the exit codes (exitcode.h) and the environment (common/envvar.h) from
 * their tables, then g_usage_tail. */
static const char g_usage_head[] =
    "usage: gpulaunch [options] CONFIG                 run the job CONFIG describes\n"
    "       gpulaunch [options] -- PROGRAM [ARGS...]   wrap and supervise a program, no config\n"
    "       gpulaunch check CONFIG                     validate CONFIG, print the effective settings\n"
    "       gpulaunch env CONFIG | env -- PROGRAM...   print each rank's environment, run nothing\n"
    "       gpulaunch topo [--topology FILE] [--ranks-per-node N] [--json [FILE]]\n"
    "       gpulaunch bench [CONFIG] [bench options]   collective bandwidth (nccl-tests columns)\n"
    "       gpulaunch accept [CONFIG] [options]        cluster acceptance checks\n"
    "       gpulaunch diag [--out DIR]                 diagnostics bundle for a support ticket\n"
    "       gpulaunch audit verify FILE...             check the audit log's hash chain (exit 79: broken)\n"
    "Start one gpulaunch per rank: mpirun -np N gpulaunch train.conf (or srun gpulaunch train.conf).\n"
    "\n"
    "Options:\n"
    "  --topology FILE   plan from an hwloc XML file instead of this machine\n"
    "  --summary FILE    write a JSON summary of the job (rank 0)\n"
    "  --dry-run         same as the env mode: print what each rank would get\n"
    "  --metrics FILE    GPU monitor samples as JSON lines; --prom FILE: Prometheus textfile\n"
    "  -v, --verbose     info logs (GPULAUNCH_LOG=info); -q: errors only\n"
    "  -h, --help        this text; --help-config: every config key; --version\n"
    "\n"
    "The program's environment (torchrun-compatible): RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE\n"
    "GROUP_RANK GROUP_WORLD_SIZE MASTER_ADDR MASTER_PORT OMP_NUM_THREADS TORCHELASTIC_RESTART_COUNT\n"
    "GPULAUNCH_RESTART_COUNT CUDA_VISIBLE_DEVICES NCCL_SOCKET_IFNAME NCCL_IB_HCA, [nccl] and [env].\n"
    "\n";
static const char g_usage_tail[] =
    "Started alone (no mpirun/srun), gpulaunch is a job of one and does not initialise MPI.\n";

/* The whole --help text (built once; kept until the process ends). */
static const char *usage(void) {
  static char *text;
  if (text) return text;
  size_t n;
  FILE *f = open_memstream(&text, &n);
  if (!f) return g_usage_head;
  fputs(g_usage_head, f);
  exitcode_print(f, 0);
  fputs("\n", f);
  envvar_print(f, 0);
  fputs("\n", f);
  fputs(g_usage_tail, f);
  if (fclose(f) != 0) text = NULL;
  return text ? text : g_usage_head;
}

static void print_config_help(void) {
  int n;
  const conf_key_t *k = conf_schema(&n);
  const char *sec = "";
  for (int i = 0; i < n; i++) {
    if (strcmp(sec, k[i].section) != 0) {
      printf("%s[%s]\n", *sec ? "\n" : "", k[i].section);
      sec = k[i].section;
    }
    printf("  %-16s %-12s %s", k[i].key, k[i].def[0] ? k[i].def : "-", k[i].help);
    if (k[i].choices) printf(" (%s)", k[i].choices);
    printf("\n");
  }
}

typedef struct mode_s {
  const char *name;
  mode_fn fn;
  int needs_mpi;          /* 0: never, 1: always, 2: only under a launcher (mpirun/srun) */
  const cli_spec_t *cli;  /* the mode's own options (it parses its words itself), or NULL: the
                           * words after the mode word are a config and, after --, a program */
} mode_t_;

static const mode_t_ g_modes[] = {
    {"run", mode_run, 1, NULL},          {"check", mode_check, 0, NULL},
    {"env", mode_env, 1, NULL},          {"topo", mode_topo, 2, &mode_topo_cli},
    {"bench", mode_bench, 1, &mode_bench_cli}, {"accept", mode_accept, 1, &mode_accept_cli},
    {"diag", mode_diag, 2, &mode_diag_cli},  {"audit", mode_audit, 0, &mode_audit_cli},
};

static const mode_t_ *find_mode(const char *w) {
  for (size_t i = 0; i < GPL_ARRAY_LEN(g_modes); i++)
    if (strcmp(g_modes[i].name, w) == 0) return &g_modes[i];
  return NULL;
}

/* What the command line asked for, before the config is loaded. */
typedef struct args_s {
  const mode_t_ *mode;
  const char *config;
  int dashdash;             /* a "--" was seen: the words after it are the program */
  int dry_run;
  const char *metrics, *prom;
  char **words;             /* the words after main's options (owned; the mode's argv points in) */
} args_t;

/* The options every mode takes; 1 when code was one (applied), 0 when not. */
static int global_option(launch_t *L, args_t *a, int code, const char *arg) {
  switch (code) {
    case 'v': log_set_level(LOG_LVL_INFO); return 1;
    case 'q': log_set_level(LOG_LVL_ERROR); return 1;
    case CLI_TOPOLOGY: L->topology_xml = arg; return 1;
    case CLI_SUMMARY: L->summary_path = arg; return 1;
    case CLI_METRICS: a->metrics = arg; return 1;
    case CLI_PROM: a->prom = arg; return 1;
    default: return 0;
  }
}

enum { OPT_HELP_CONFIG = 0x2000, OPT_VERSION, OPT_DRY_RUN, OPT_HELP_EXIT, OPT_HELP_ENV };
static const struct option g_main_opts[] = {
    {"help", no_argument, 0, 'h'},          {"help-config", no_argument, 0, OPT_HELP_CONFIG},
    {"version", no_argument, 0, OPT_VERSION}, {"dry-run", no_argument, 0, OPT_DRY_RUN},
    /* The README's tables (scripts/gen-docs.sh). */
    {"help-exit-codes", no_argument, 0, OPT_HELP_EXIT}, {"help-env", no_argument, 0, OPT_HELP_ENV},
    {0, 0, 0, 0}};

/* main's own options and the global ones, until the parse ends: -1, or the exit code. */
static int main_options(launch_t *L, args_t *a, cli_t *c) {
  int code;
  while ((code = cli_next(c, 0)) != -1) {
    if (global_option(L, a, code, optarg)) continue;
    switch (code) {
      case 'h': fputs(usage(), stdout); return GPL_EXIT_OK;
      case OPT_HELP_CONFIG: print_config_help(); return GPL_EXIT_OK;
      case OPT_HELP_EXIT: exitcode_print(stdout, 1); return GPL_EXIT_OK;
      case OPT_HELP_ENV: envvar_print(stdout, 1); return GPL_EXIT_OK;
      case OPT_VERSION: printf("gpulaunch %s\n", GPULAUNCH_VERSION); return GPL_EXIT_OK;
      case OPT_DRY_RUN: a->dry_run = 1; break;
      case ':': log_print("gpulaunch: %s needs a value\n%s", cli_opt(c), usage()); return GPL_EXIT_USAGE;
      default: log_print("gpulaunch: unknown option '%s'\n%s", cli_opt(c), usage()); return GPL_EXIT_USAGE;
    }
  }
  return -1;
}

/* `gpulaunch [options] [MODE] [CONFIG] [mode options] [-- PROGRAM ARGS...]`, with getopt_long:
 * main's options before the mode word; after it, the mode's own with the global ones joined
 * (cli.h), so -v or --summary work in either place. Returns -1 to go on, else the exit code. */
static int parse_args(launch_t *L, args_t *a, int argc, char **argv) {
  static const cli_spec_t main_spec = {"+h", g_main_opts}, rest_spec = {"h", g_main_opts};
  memset(a, 0, sizeof *a);
  cli_t c;
  if (cli_begin(&c, "gpulaunch", argc - 1, argv + 1, &main_spec) < 0) return GPL_EXIT_INTERNAL;
  /* 1. main's options, up to the first word (the mode or the config) or "--". */
  int ret = main_options(L, a, &c);
  int n;
  char **left = cli_rest(&c, &n);
  a->dashdash = optind > 1 && strcmp(c.argv[optind - 1], "--") == 0;
  char **w = a->words = calloc((size_t)n + 1, sizeof *w);
  for (int k = 0; w && k < n; k++) w[k] = left[k];
  cli_end(&c);
  if (!w) return GPL_EXIT_INTERNAL;
  if (ret >= 0) return ret;
  /* 2. The mode word, and a config right after it (gpulaunch bench my.conf -b 1M); else the
   * config (gpulaunch train.conf). */
  int i = 0;
  if (!a->dashdash && n > 0 && find_mode(w[0])) {
    a->mode = find_mode(w[i++]);
    int takes_word = strcmp(a->mode->name, "check") == 0 || strcmp(a->mode->name, "env") == 0 ||
                     strcmp(a->mode->name, "bench") == 0 || strcmp(a->mode->name, "accept") == 0;
    /* A file that exists is the config (not for topo, which takes none); for the modes that take
     * no other word, a missing one is too: conf_load then says so with its name. */
    if (i < n && w[i][0] != '-' && strcmp(a->mode->name, "topo") != 0 && strcmp(a->mode->name, "audit") != 0 &&
        (access(w[i], F_OK) == 0 || takes_word))
      a->config = w[i++];
  } else if (!a->dashdash && n > 0 && w[0][0] != '-') {
    a->config = w[i++];
  }
  if (!a->mode) a->mode = find_mode(a->dry_run ? "env" : "run");
  /* 3. The rest: a mode with options of its own parses them itself (main applies the global ones
   * among them now, before anything starts); otherwise global options, then "--" and the
   * program. */
  char **rest = w + i;
  int nrest = n - i;
  if (a->mode->cli && !a->dashdash) {
    if (cli_begin(&c, a->mode->name, nrest, rest, a->mode->cli) < 0) return GPL_EXIT_INTERNAL;
    int code;
    while ((code = cli_next(&c, 0)) != -1) global_option(L, a, code, optarg);
    cli_end(&c);
    L->argc = nrest;
    L->argv = rest;
    return -1;
  }
  if (!a->dashdash && nrest > 0) {
    if (cli_begin(&c, "gpulaunch", nrest, rest, &rest_spec) < 0) return GPL_EXIT_INTERNAL;
    ret = main_options(L, a, &c);
    int m;
    char **after = cli_rest(&c, &m);
    a->dashdash = optind > 1 && strcmp(c.argv[optind - 1], "--") == 0;
    /* cli_rest points into c's copy: keep what is left in the caller's array. */
    for (int k = 0; k < m; k++) rest[k] = after[k];
    nrest = m;
    cli_end(&c);
    if (ret >= 0) return ret;
    if (nrest > 0 && !a->dashdash) {
      log_print("gpulaunch: unexpected argument '%s'\n", rest[0]);
      return GPL_EXIT_USAGE;
    }
  }
  int is_run = strcmp(a->mode->name, "run") == 0;
  if (is_run && !a->config && !a->dashdash) {
    log_print("gpulaunch: nothing to run: give a config file or -- PROGRAM\n%s", usage());
    return GPL_EXIT_USAGE;
  }
  if (is_run && a->dashdash && nrest == 0 && !a->config) {
    log_print("gpulaunch: nothing after '--': give the program to run, e.g. gpulaunch -- python train.py\n");
    return GPL_EXIT_USAGE;
  }
  L->argc = nrest;
  L->argv = rest;
  return -1;
}

/* The summary from rank 0; a summary that cannot be written makes a successful job exit 76. */
static int write_summary(launch_t *L, int code) {
  if (!L->summary_path || !L->summary || (L->job && L->job->rank != 0)) return code;
  cJSON_AddNumberToObject(L->summary, "exit_code", code);
  /* The command was redacted word by word; this catches a secret in any other string (a root
   * cause that quotes one, a config path), string by string so the summary stays JSON. */
  char *text = redact_json(L->summary) == 0 ? cJSON_Print(L->summary) : NULL;
  char err[4400] = "out of memory";
  size_t n = text ? strlen(text) : 0;
  char *line = text ? realloc(text, n + 2) : NULL;
  int ok = 0;
  if (line) {
    text = line;
    memcpy(text + n, "\n", 2);
    ok = safefile_write_text(L->summary_path, text, err, sizeof err) == GPL_OK;
  }
  if (!ok) log_print("gpulaunch: cannot write the summary: %s\n", err);
  free(text);
  return !ok && code == 0 ? GPL_EXIT_OUTPUT : code;
}

/* An output file whose folder is missing (or not safe to write in) is an error before anything
 * runs, not a message after hours of work. %r/%h in the folder are per rank: checked when opened. */
/* Modes that write the audit log (audit_job.c), and check, which checks it. */
static int mode_audited(const char *name) {
  return strcmp(name, "run") == 0 || strcmp(name, "bench") == 0 || strcmp(name, "accept") == 0 ||
         strcmp(name, "check") == 0;
}

/* Every listener's port range: gpulaunch-run's --port-range (GPULAUNCH_PORT_RANGE) or [net]
 * port_range (checked at load). 0, or -1 (said by rank 0). */
static int port_range_init(const conf_t *c, int print) {
  netport_range_t r;
  char err[200];
  const char *env = envvar_get(ENVVAR_PORT_RANGE);
  if (env && *env && netport_parse(env, &r, err, sizeof err) < 0) {
    if (print) log_print("gpulaunch: GPULAUNCH_PORT_RANGE: %s\n", err);
    return -1;
  }
  if (!(env && *env)) netport_parse(c->net.port_range, &r, err, sizeof err);
  netport_set(&r);
  return 0;
}

static int check_output(const char *what, const char *path, unsigned flags, int print) {
  if (!path || !*path) return 0;
  const char *slash = strrchr(path, '/');
  if (slash && memchr(path, '%', (size_t)(slash - path))) return 0;
  char err[4400];
  if (safefile_check_parent_flags(path, flags, err, sizeof err) == 0) return 0;
  if (print) log_print("gpulaunch: %s: cannot write there: %s\n", what, err);
  return -1;
}

int main(int argc, char **argv) {
  /* Internal: the helper a rank leaves behind after a lost host (launcher/live/lostpeer.h). */
  if (argc > 1 && strcmp(argv[1], LOSTPEER_HELPER_ARG) == 0) return lostpeer_helper_main(argc, argv);
  log_init();
  log_set_identity(util_hostname(), util_env_rank());
  launch_t L;
  memset(&L, 0, sizeof L);
  args_t args;
  int pc = parse_args(&L, &args, argc, argv);
  if (pc >= 0) {
    free(args.words);
    return pc;
  }
  const mode_t_ *mode = args.mode;
  const char *config = args.config, *metrics = args.metrics, *prom = args.prom;
  L.conf_path = config;

  /* The config is validated before anything starts. Rank 0 prints the errors; under mpirun the
   * others leave a moment later, or mpirun (which kills the job at the first non-zero exit) could
   * kill rank 0 before its message is out. */
  if (conf_load(&L.conf, config) < 0) {
    if (util_env_rank() > 0) util_sleep(0.5);
    return GPL_EXIT_CONFIG;
  }
  conf_register_secrets(L.conf); /* [env] secrets: hidden in everything we print or write */
  if (port_range_init(L.conf, util_env_rank() <= 0) < 0) {
    if (util_env_rank() > 0) util_sleep(0.5);
    return GPL_EXIT_USAGE;
  }
  if (metrics && conf_set(L.conf, &L.conf->monitor.metrics, metrics, "--metrics") < 0) return GPL_EXIT_USAGE;
  if (prom && conf_set(L.conf, &L.conf->monitor.prom, prom, "--prom") < 0) return GPL_EXIT_USAGE;
  char what_m[4200], what_p[4200];
  util_fmt(what_m, sizeof what_m, "%s (metrics)", conf_origin(L.conf, &L.conf->monitor.metrics));
  util_fmt(what_p, sizeof what_p, "%s (prom)", conf_origin(L.conf, &L.conf->monitor.prom));
  int env_rank = util_env_rank();
  /* The textfile may go to node_exporter's folder, writable through a group (safefile_replace). */
  if (check_output("--summary", L.summary_path, 0, env_rank <= 0) < 0 ||
      check_output(what_m, L.conf->monitor.metrics, 0, env_rank <= 0) < 0 ||
      check_output(what_p, L.conf->monitor.prom, SAFEFILE_DIR_GROUP, env_rank <= 0) < 0) {
    if (env_rank > 0) util_sleep(0.5); /* rank 0 says it; see the config errors above */
    return GPL_EXIT_USAGE;
  }

  /* Fail closed: a job with an audit log does not start when the log cannot be written; `check`
   * says the same. Rank 0 writes the log, so rank 0 checks it (mpirun ends the others). */
  const char *audit = L.conf->audit.log;
  if (audit && *audit && env_rank <= 0 && mode_audited(mode->name)) {
    char err[PATH_MAX + 300];
    if (audit_check(audit, err, sizeof err) < 0) {
      log_print("gpulaunch: %s: [audit] log cannot be written (%s); the job does not start without "
                "its audit log\n", conf_origin(L.conf, &L.conf->audit.log), err);
      return GPL_EXIT_CONFIG;
    }
  }

  L.summary = cJSON_CreateObject();
  cJSON_AddStringToObject(L.summary, "gpulaunch", GPULAUNCH_VERSION);
  cJSON_AddStringToObject(L.summary, "mode", mode->name);
  if (config) cJSON_AddStringToObject(L.summary, "config", config);
  /* Under an elastic gpulaunch-run: the restarts before this launch (hosts, cause, times). */
  const char *elastic = envvar_get(ENVVAR_ELASTIC_HISTORY);
  cJSON *restarts = elastic && *elastic ? cJSON_Parse(elastic) : NULL;
  if (cJSON_IsArray(restarts)) cJSON_AddItemToObject(L.summary, "elastic_restarts", restarts);
  else cJSON_Delete(restarts);

  job_t job;
  int use_mpi = mode->needs_mpi == 1 || (mode->needs_mpi == 2 && util_env_rank() >= 0);
  if (use_mpi) {
    /* The start-up deadline: the config file's, else GPULAUNCH_TIMEOUT, else the default. */
    double timeout = conf_is_set(L.conf, &L.conf->job.timeout) ? L.conf->job.timeout
                                                           : mpix_default_timeout();
    int rc = job_init(&job, &argc, &argv, timeout);
    if (rc < 0) {
      log_print("gpulaunch: %s:%d: start-up failed: %s\n", util_hostname(), job.rank, gpl_strerror(rc));
      job_abort(&job, rc == GPL_ETIMEDOUT ? GPL_EXIT_TIMEOUT : GPL_EXIT_INTERNAL);
    }
    L.job = &job;
    cJSON_AddNumberToObject(L.summary, "ranks", job.size);
    cJSON_AddNumberToObject(L.summary, "nodes", job.nnodes);
    cJSON *hosts = cJSON_AddArrayToObject(L.summary, "hosts");
    for (int n = 0; n < job.nnodes; n++)
      cJSON_AddItemToArray(hosts, cJSON_CreateString(job.hosts[job.leader_of_node[n]]));
  }

  audit_job_begin(&L, mode->name);
  tls_set_fail_hook(audit_note_auth_failure); /* failed authentications in the audit log too */
  int code = mode->fn(&L);
  audit_job_finish(&L, code);
  code = write_summary(&L, code);
  cJSON_Delete(L.summary);
  conf_free(L.conf);
  free(args.words);
  if (use_mpi) job_exit(&job, code);
  return code;
}
