/* The config file (INI via inih): a schema of known sections and keys, strict validation with
 * file:line errors and suggestions, typed getters that fall back to the schema's defaults. */
#ifndef GPL_LAUNCHER_CONF_H
#define GPL_LAUNCHER_CONF_H

#include <stdint.h>
#include <stdio.h>

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
} conf_key_t;

typedef struct conf_s conf_t;

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
/* Set or override one value (command-line options); origin says where it came from ("--op").
 * Validated like the file. */
int conf_set(conf_t *c, const char *section, const char *key, const char *value, const char *origin);

/* Typed getters; an unknown section/key is a programming error (logged, returns 0/""/NULL). */
const char *conf_str(const conf_t *c, const char *section, const char *key);
long conf_int(const conf_t *c, const char *section, const char *key);
double conf_double(const conf_t *c, const char *section, const char *key);
int conf_bool(const conf_t *c, const char *section, const char *key);
uint64_t conf_size(const conf_t *c, const char *section, const char *key);
double conf_duration(const conf_t *c, const char *section, const char *key);
int conf_signal(const conf_t *c, const char *section, const char *key);
/* CONF_COMMAND: words of the command (NULL-terminated, owned by c) and their count. */
char *const *conf_command(const conf_t *c, const char *section, const char *key, int *argc);
/* 1 when the value came from the file or conf_set rather than the default. */
int conf_is_set(const conf_t *c, const char *section, const char *key);
/* Where the value came from: "train.conf:12", "--op" or "default". */
const char *conf_origin(const conf_t *c, const char *section, const char *key);
/* 1 when the file has a [section] header (even an empty one). */
int conf_has_section(const conf_t *c, const char *section);
/* The config file's path (NULL when none). */
const char *conf_path(const conf_t *c);

/* Free sections ([env], [nccl]): entries in file order. */
int conf_free_count(const conf_t *c, const char *section);
void conf_free_entry(const conf_t *c, const char *section, int i, const char **key, const char **value);

/* Tell redaction the values of the free sections' secret-named entries ([env] MYSQL_PWD = x):
 * wherever gpulaunch prints or writes text (a root cause quoting the program), they are hidden. */
void conf_register_secrets(const conf_t *c);

/* Print the effective settings, one "section.key = value   # origin" per line. */
void conf_print(FILE *f, const conf_t *c);
/* The schema (for --help and the docs). */
const conf_key_t *conf_schema(int *n);
/* The NCCL variables [nccl] accepts, without their NCCL_ prefix (conf_nccl.c). */
const char *const *conf_nccl_vars(size_t *n);

#endif
