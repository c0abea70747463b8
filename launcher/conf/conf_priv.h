/* What the configuration module's files share and nobody else sees: the values as read, the
 * free sections' entries and the parse state behind a conf_t. */
#ifndef GPL_LAUNCHER_CONF_PRIV_H
#define GPL_LAUNCHER_CONF_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "launcher/conf/conf.h"

/* A value as read, grown by continuation lines in amortised linear time. */
typedef struct conf_val_s {
  const conf_key_t *k;
  char *text;   /* raw text (NULL: default) */
  size_t tlen, tcap;
  char *origin; /* "file:line" or an option name */
  int line;
  /* parsed */
  long i;
  double d;
  uint64_t size;
  int b;
  char **argv;
  int argc;
} conf_val_t;

typedef struct free_ent_s {
  char *key, *value;
  size_t vlen, vcap;
  int line;
} free_ent_t;

/* The free sections' entries, one array per section in file order (index access is O(1)). */
typedef struct free_list_s {
  free_ent_t *e;
  int n, cap;
} free_list_t;

#define MAX_ERRORS_SHOWN 20 /* a binary file given as config: a screenful, then a count */

struct conf_state_s {
  char *path;
  char *dir;
  int nkeys;
  const conf_key_t *schema;
  conf_val_t *vals;
  free_list_t free[CONF_VARS_COUNT];
  /* parse state */
  strbuf_t errors;
  int nerrors;
  int line;          /* physical line being parsed */
  int line_indented; /* the current line starts with white space (a continuation) */
  /* a line is at most INI_MAX_LINE characters, so these hold any name whole */
  char prev_section[256], prev_key[256];
  const char *text;  /* the file's bytes being parsed, and where the next line starts */
  size_t text_len, text_pos;
  char **sections_seen; /* known sections that have a header, each once */
  int *section_line;    /* ... and the line of that header */
  int nsections_seen;
};

/* conf_ini.c: the line reader (inih) and the file:line errors. */
void conf_ini_error(conf_t *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Parse the file's text into c's values and free sections; problems go to conf_ini_error. */
void conf_ini_parse(conf_t *c, const char *text, size_t len);

/* conf_value.c: one key's value, by type. */
int conf_value_append(char **s, size_t *len, size_t *cap, const char *sep, const char *add);
conf_val_t *conf_value_find(const conf_t *c, const char *section, const char *key);
/* The value of a field of c (&c->job.grace); NULL (logged) when field is not one. */
conf_val_t *conf_value_of(const conf_t *c, const void *field);
void conf_value_clear(conf_val_t *v);
/* Parse text as v's type. Returns 0 or -1 with an error message in msg. */
int conf_value_parse(conf_t *c, conf_val_t *v, const char *text, char *msg, size_t len);
int conf_value_default(conf_t *c, conf_val_t *v);
/* Parse every value the file set (conf_ini_error for each that does not parse). */
void conf_value_parse_all(conf_t *c);
/* Copy v's parsed value into its typed field of c. */
void conf_value_store(conf_t *c, const conf_val_t *v);

/* conf_vars.c: the free sections ([env], [nccl]). */
/* Index of a free section (conf_vars_id_t), or -1. */
int conf_vars_index(const char *section);
/* One "KEY = value" line of free section fsec (a continuation line when continuation). */
void conf_vars_line(conf_t *c, int fsec, const char *section, const char *name, const char *value,
                    int line, int continuation);
void conf_vars_check_duplicates(conf_t *c);
/* Set or add an entry (conf_set_key on a free section). */
int conf_vars_set(conf_t *c, int fsec, const char *key, const char *value);
void conf_vars_print(FILE *f, const conf_t *c, int fsec);
void conf_vars_free(conf_t *c);

#endif
