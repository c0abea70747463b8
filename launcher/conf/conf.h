/* The config file (INI via inih): the schema of conf_keys.h, strict validation with file:line
 * errors and suggestions, and the settings as typed per-section structs filled once at load. */
#ifndef GPL_LAUNCHER_CONF_H
#define GPL_LAUNCHER_CONF_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

#include "launcher/conf/conf_keys.h"

typedef enum conf_type_e {
  CONF_STR,      /* any text */
  CONF_OUTPATH,  /* a file gpulaunch writes: any text but empty (an output path a template left
                  * empty would silently turn the output off), in the file and on the command line */
  CONF_INT,      /* whole number within [min,max] */
  CONF_DOUBLE,   /* number within [min,max] */
  CONF_BOOL,     /* true/false/yes/no/on/off/1/0 */
  CONF_SIZE,     /* bytes with K/M/G suffixes */
  CONF_DURATION, /* 30s, 500ms, 2m */
  CONF_ENUM,     /* one of choices "a|b|c" */
  CONF_SIGNAL,   /* SIGTERM, TERM, 15 */
  CONF_PATH,     /* a file that must exist (relative to the config file's folder) */
  CONF_COMMAND,  /* a command line split into words like a POSIX shell, no shell run */
  CONF_PORTS,    /* a TCP port range LO-HI (common/netport.h), kept as text */
  CONF_FREE      /* a section of free KEY = value lines ([env], [nccl]) */
} conf_type_t;

typedef struct conf_key_s {
  const char *section;
  const char *key;
  conf_type_t type;
  const char *def;     /* default as text ("" = unset) */
  const char *choices; /* CONF_ENUM: "a|b|c" */
  double min, max;     /* CONF_INT / CONF_DOUBLE / CONF_DURATION bounds (min == max: none) */
  const char *help;
  size_t offset;       /* of the key's field in conf_t (CONF_FREE: 0) */
} conf_key_t;

/* CONF_COMMAND: the words of the command (NULL-terminated, owned by the conf_t) and their count. */
typedef struct conf_argv_s {
  char *const *argv;
  int argc;
} conf_argv_t;

/* The C type of each conf_type_t's field. Text (strings, enums, paths) is the value as written,
 * or the default; a CONF_PATH relative to the config file's folder is made whole. */
#define CONF_CTYPE_STR const char *
#define CONF_CTYPE_OUTPATH const char *
#define CONF_CTYPE_ENUM const char *
#define CONF_CTYPE_PATH const char *
#define CONF_CTYPE_PORTS const char *
#define CONF_CTYPE_INT long
#define CONF_CTYPE_DOUBLE double
#define CONF_CTYPE_DURATION double /* seconds */
#define CONF_CTYPE_BOOL int
#define CONF_CTYPE_SIZE uint64_t /* bytes */
#define CONF_CTYPE_SIGNAL int
#define CONF_CTYPE_COMMAND conf_argv_t

#define CONF_FIELD(sec, key, type, def, choices, min, max, help) CONF_CTYPE_##type key;
/* One struct per section, one field per key of conf_keys.h: c->job.grace, c->bench.iters ... */
typedef struct conf_job_s { CONF_KEYS_JOB(CONF_FIELD) } conf_job_t;
typedef struct conf_topology_s { CONF_KEYS_TOPOLOGY(CONF_FIELD) } conf_topology_t;
typedef struct conf_comm_s { CONF_KEYS_COMM(CONF_FIELD) } conf_comm_t;
typedef struct conf_train_s { CONF_KEYS_TRAIN(CONF_FIELD) } conf_train_t;
typedef struct conf_bench_s { CONF_KEYS_BENCH(CONF_FIELD) } conf_bench_t;
typedef struct conf_accept_s { CONF_KEYS_ACCEPT(CONF_FIELD) } conf_accept_t;
typedef struct conf_monitor_s { CONF_KEYS_MONITOR(CONF_FIELD) } conf_monitor_t;
typedef struct conf_audit_s { CONF_KEYS_AUDIT(CONF_FIELD) } conf_audit_t;
typedef struct conf_preempt_s { CONF_KEYS_PREEMPT(CONF_FIELD) } conf_preempt_t;
typedef struct conf_net_s { CONF_KEYS_NET(CONF_FIELD) } conf_net_t;
typedef struct conf_security_s { CONF_KEYS_SECURITY(CONF_FIELD) } conf_security_t;
#undef CONF_FIELD

/* The free sections ([env], [nccl]), in CONF_FREE_SECTIONS order. */
typedef enum conf_vars_id_e { CONF_VARS_ENV, CONF_VARS_NCCL, CONF_VARS_COUNT } conf_vars_id_t;

typedef struct conf_state_s conf_state_t; /* the text, origins and free sections (conf/ only) */

/* The settings, typed and filled once at load (defaults where the file is silent) and again by
 * conf_set; read-only for everyone else. */
typedef struct conf_s {
  conf_job_t job;
  conf_topology_t topology;
  conf_comm_t comm;
  conf_train_t train;
  conf_bench_t bench;
  conf_accept_t accept;
  conf_monitor_t monitor;
  conf_audit_t audit;
  conf_preempt_t preempt;
  conf_net_t net;
  conf_security_t security;
  conf_state_t *st;
} conf_t;

/* Load and validate a file; path NULL gives the defaults. The file must be a regular file of at
 * most SAFEFILE_CAP_CONFIG bytes. On error prints the problems (the first 20, then a count) as
 * "file:line: [section] key: message (did you mean 'x'?)" and returns GPL_ECONFIG. */
int conf_load(conf_t **out, const char *path);
/* The same from text in memory (len bytes, NUL bytes included) named name in messages: what
 * conf_load does after reading the file, for tests and the fuzzer. */
int conf_load_text(conf_t **out, const char *name, const char *text, size_t len);
/* conf_load_text that prints nothing: on GPL_ECONFIG, *errors is the text that would have been
 * printed (redacted as printed; malloc'd, or NULL without memory). For tests and fuzzers. */
int conf_load_text_errors(conf_t **out, const char *name, const char *text, size_t len,
                          char **errors);
void conf_free(conf_t *c);

/* In the functions below, field is the address of one of c's settings (&c->job.grace). */

/* Set or override one value (command-line options); origin says where it came from ("--op").
 * Validated like the file; on error prints "gpulaunch: ORIGIN: message" and keeps the old value. */
int conf_set(conf_t *c, const void *field, const char *value, const char *origin);
/* conf_set by name, for names that come as data (a test driver's --set section.key=value); a
 * free section's name sets one of its entries. */
int conf_set_key(conf_t *c, const char *section, const char *key, const char *value,
                 const char *origin);
/* The schema row of a field. */
const conf_key_t *conf_key_of(const conf_t *c, const void *field);
/* The value as written (or the default): "64M" where the field holds 67108864. */
const char *conf_text(const conf_t *c, const void *field);
/* 1 when the value came from the file or conf_set rather than the default. */
int conf_is_set(const conf_t *c, const void *field);
/* Where the value came from: "train.conf:12", "--op" or "default". */
const char *conf_origin(const conf_t *c, const void *field);
/* 1 when the file has a [section] header (even an empty one). */
int conf_has_section(const conf_t *c, const char *section);
/* The config file's path (NULL when none). */
const char *conf_path(const conf_t *c);

/* Free sections ([env], [nccl]): entries in file order. */
int conf_vars_count(const conf_t *c, conf_vars_id_t s);
void conf_vars_entry(const conf_t *c, conf_vars_id_t s, int i, const char **key, const char **value);

/* Tell redaction the values of the free sections' secret-named entries ([env] MYSQL_PWD = x):
 * wherever gpulaunch prints or writes text (a root cause quoting the program), they are hidden. */
void conf_register_secrets(const conf_t *c);

/* Print the effective settings, one "section.key = value   # origin" per line. */
void conf_print(FILE *f, const conf_t *c);
/* The schema (for --help and the docs). */
const conf_key_t *conf_schema(int *n);
/* The configuration reference in Markdown, docs/config.md (conf_doc.c). */
void conf_doc_markdown(FILE *f);
/* The NCCL variables [nccl] accepts, without their NCCL_ prefix (conf_nccl.c). */
const char *const *conf_nccl_vars(size_t *n);

#endif
