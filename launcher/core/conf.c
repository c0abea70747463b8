/* Config file loading with inih: strict schema validation, file:line errors, typo suggestions. */
#include "launcher/core/conf.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "launcher/core/job.h"

typedef struct conf_val_s {
  const conf_key_t *k;
  char *text;   /* raw text (NULL: default) */
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
  char *section, *key, *value;
  int line;
} free_ent_t;

struct conf_s {
  char *path;
  char *dir;
  int nkeys;
  const conf_key_t *schema;
  conf_val_t *vals;
  free_ent_t *free;
  int nfree, capfree;
  /* parse state */
  strbuf_t errors;
  int nerrors;
  int line;          /* physical line being parsed */
  int line_indented; /* the current line starts with white space (a continuation) */
  char prev_section[64], prev_key[128];
  char **sections_seen;
  int nsections_seen;
};

static const char *const g_free_sections[] = {"env", "nccl"};

static void add_error(conf_t *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add_error(conf_t *c, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (line > 0) strbuf_printf(&c->errors, "gpulaunch: %s:%d: ", c->path ? c->path : "(defaults)", line);
  else strbuf_printf(&c->errors, "gpulaunch: %s: ", c->path ? c->path : "(defaults)");
  strbuf_vprintf(&c->errors, fmt, ap);
  strbuf_append(&c->errors, "\n");
  va_end(ap);
  c->nerrors++;
}

static int is_free_section(const char *s) {
  for (size_t i = 0; i < GPL_ARRAY_LEN(g_free_sections); i++)
    if (strcmp(s, g_free_sections[i]) == 0) return 1;
  return 0;
}

static int known_section(const conf_t *c, const char *s) {
  for (int i = 0; i < c->nkeys; i++)
    if (strcmp(c->schema[i].section, s) == 0) return 1;
  return 0;
}

static conf_val_t *find_val(const conf_t *c, const char *section, const char *key) {
  for (int i = 0; i < c->nkeys; i++)
    if (strcmp(c->schema[i].section, section) == 0 && strcmp(c->schema[i].key, key) == 0)
      return &c->vals[i];
  return NULL;
}

/* "a|b|c" contains word? */
static int choice_ok(const char *choices, const char *w) {
  size_t n = strlen(w);
  for (const char *p = choices; *p;) {
    size_t m = strcspn(p, "|");
    if (m == n && strncmp(p, w, n) == 0) return 1;
    p += m;
    if (*p == '|') p++;
  }
  return 0;
}

static void suggest_section(conf_t *c, int line, const char *s) {
  const char *names[64];
  size_t n = 0;
  for (int i = 0; i < c->nkeys && n < GPL_ARRAY_LEN(names); i++) {
    int dup = 0;
    for (size_t j = 0; j < n; j++) dup |= strcmp(names[j], c->schema[i].section) == 0;
    if (!dup) names[n++] = c->schema[i].section;
  }
  const char *near = util_nearest(s, names, n);
  strbuf_t all = STRBUF_INIT;
  for (size_t i = 0; i < n; i++) strbuf_printf(&all, "%s[%s]", i ? " " : "", names[i]);
  if (near)
    add_error(c, line, "unknown section [%s] (did you mean [%s]?)", s, near);
  else
    add_error(c, line, "unknown section [%s] (known: %s)", s, strbuf_str(&all));
  strbuf_free(&all);
}

static void suggest_key(conf_t *c, int line, const char *section, const char *key) {
  const char *names[64];
  size_t n = 0;
  for (int i = 0; i < c->nkeys && n < GPL_ARRAY_LEN(names); i++)
    if (strcmp(c->schema[i].section, section) == 0) names[n++] = c->schema[i].key;
  const char *near = util_nearest(key, names, n);
  /* A key that exists in another section is a common slip. */
  const char *other = NULL;
  for (int i = 0; i < c->nkeys; i++)
    if (strcmp(c->schema[i].key, key) == 0 && strcmp(c->schema[i].section, section) != 0)
      other = c->schema[i].section;
  if (near)
    add_error(c, line, "[%s] unknown key '%s' (did you mean '%s'?)", section, key, near);
  else if (other)
    add_error(c, line, "[%s] unknown key '%s' (it belongs in [%s])", section, key, other);
  else {
    strbuf_t all = STRBUF_INIT;
    for (size_t i = 0; i < n; i++) strbuf_printf(&all, "%s%s", i ? ", " : "", names[i]);
    add_error(c, line, "[%s] unknown key '%s' (known: %s)", section, key, strbuf_str(&all));
    strbuf_free(&all);
  }
}

static int nccl_var_known(const char *name) {
  size_t n;
  const char *const *vars = conf_nccl_vars(&n);
  for (size_t i = 0; i < n; i++)
    if (strcmp(vars[i], name) == 0) return 1;
  return 0;
}

static int env_name_ok(const char *k) {
  if (!(isalpha((unsigned char)k[0]) || k[0] == '_')) return 0;
  for (const char *p = k; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_')) return 0;
  return 1;
}

static void free_value_parse(conf_val_t *v) {
  if (v->argv) util_free_argv(v->argv);
  v->argv = NULL;
  v->argc = 0;
}

/* Parse v->text (or the default) by type. Returns 0 or an error message in msg. */
static int parse_value(conf_t *c, conf_val_t *v, const char *text, char *msg, size_t len) {
  const conf_key_t *k = v->k;
  int rc;
  switch (k->type) {
    case CONF_STR:
    case CONF_FREE:
      return 0;
    case CONF_INT: {
      long lo = k->min == k->max ? LONG_MIN : (long)k->min;
      long hi = k->min == k->max ? LONG_MAX : (long)k->max;
      if (!*text) return v->i = 0, 0;
      rc = util_parse_long(text, lo, hi, &v->i);
      if (rc == GPL_ERANGE) return snprintf(msg, len, "'%s' is out of range [%ld, %ld]", text, lo, hi), -1;
      if (rc) return snprintf(msg, len, "'%s' is not a whole number", text), -1;
      return 0;
    }
    case CONF_DOUBLE:
      if (!*text) return v->d = 0, 0;
      if (util_parse_double(text, &v->d)) return snprintf(msg, len, "'%s' is not a number", text), -1;
      if (k->min != k->max && (v->d < k->min || v->d > k->max))
        return snprintf(msg, len, "'%s' is out of range [%g, %g]", text, k->min, k->max), -1;
      return 0;
    case CONF_BOOL:
      if (util_parse_bool(text, &v->b))
        return snprintf(msg, len, "'%s' is not a boolean (true/false/yes/no/on/off/1/0)", text), -1;
      return 0;
    case CONF_SIZE:
      if (util_parse_size(text, &v->size))
        return snprintf(msg, len, "'%s' is not a size (bytes, or with K/M/G, e.g. 64M)", text), -1;
      return 0;
    case CONF_DURATION:
      if (util_parse_duration(text, &v->d))
        return snprintf(msg, len, "'%s' is not a duration (e.g. 30s, 500ms, 2m)", text), -1;
      return 0;
    case CONF_ENUM:
      if (*text && !choice_ok(k->choices, text)) {
        const char *words[16];
        char buf[256];
        size_t n = 0;
        util_strlcpy(buf, k->choices, sizeof buf);
        for (char *tok = strtok(buf, "|"); tok && n < GPL_ARRAY_LEN(words); tok = strtok(NULL, "|"))
          words[n++] = tok;
        const char *near = util_nearest(text, words, n);
        if (near)
          return snprintf(msg, len, "'%s' is not one of %s (did you mean '%s'?)", text, k->choices, near), -1;
        return snprintf(msg, len, "'%s' is not one of %s", text, k->choices), -1;
      }
      return 0;
    case CONF_SIGNAL: {
      int s;
      if (util_parse_signal(text, &s)) return snprintf(msg, len, "'%s' is not a signal name", text), -1;
      v->i = s;
      return 0;
    }
    case CONF_PATH:
      if (*text && c->path) {
        char full[PATH_MAX];
        if (text[0] == '/') util_strlcpy(full, text, sizeof full);
        else snprintf(full, sizeof full, "%s/%s", c->dir, text);
        struct stat st;
        if (stat(full, &st) < 0)
          return snprintf(msg, len, "cannot open '%s': %s", full, strerror(errno)), -1;
        free(v->text);
        v->text = strdup(full);
      } else if (*text) {
        struct stat st;
        if (stat(text, &st) < 0) return snprintf(msg, len, "cannot open '%s': %s", text, strerror(errno)), -1;
      }
      return 0;
    case CONF_COMMAND: {
      free_value_parse(v);
      char err[200];
      if (util_split_words(text, &v->argv, &v->argc, err, sizeof err))
        return snprintf(msg, len, "cannot split the command: %s", err), -1;
      return 0;
    }
  }
  return 0;
}

static int parse_default(conf_t *c, conf_val_t *v) {
  char msg[300];
  if (parse_value(c, v, v->k->def, msg, sizeof msg)) {
    LOG_ERROR("bad default for [%s] %s: %s", v->k->section, v->k->key, msg);
    return GPL_EINVAL;
  }
  return 0;
}

static void free_add(conf_t *c, const char *section, const char *key, const char *value, int line) {
  if (c->nfree == c->capfree) {
    int cap = c->capfree ? c->capfree * 2 : 16;
    free_ent_t *n = realloc(c->free, (size_t)cap * sizeof *n);
    if (!n) return;
    c->free = n;
    c->capfree = cap;
  }
  free_ent_t *e = &c->free[c->nfree++];
  e->section = strdup(section);
  e->key = strdup(key);
  e->value = strdup(value);
  e->line = line;
}

static free_ent_t *free_find(const conf_t *c, const char *section, const char *key) {
  for (int i = 0; i < c->nfree; i++)
    if (strcmp(c->free[i].section, section) == 0 && strcmp(c->free[i].key, key) == 0) return &c->free[i];
  return NULL;
}

/* inih handler: one key = value in a section. */
static int on_value(void *user, const char *section_raw, const char *name, const char *value) {
  conf_t *c = user;
  int line = c->line;
  /* inih keeps the spaces of "[ env ]"; read_line trims them too, so both agree on the name */
  char section_buf[64];
  util_strlcpy(section_buf, section_raw, sizeof section_buf);
  const char *section = util_trim(section_buf);
  int continuation = c->line_indented && strcmp(section, c->prev_section) == 0 &&
                     strcmp(name, c->prev_key) == 0;
  util_strlcpy(c->prev_section, section, sizeof c->prev_section);
  util_strlcpy(c->prev_key, name, sizeof c->prev_key);
  if (!*section) {
    add_error(c, line, "'%s' is outside any section (put it under [job], [env], ...)", name);
    return 1;
  }
  if (!known_section(c, section)) return 1; /* reported once when the header was read */
  if (is_free_section(section)) {
    char key[160];
    if (strcmp(section, "nccl") == 0 && strncmp(name, "NCCL_", 5) != 0)
      snprintf(key, sizeof key, "NCCL_%s", name);
    else
      util_strlcpy(key, name, sizeof key);
    if (!env_name_ok(key)) {
      add_error(c, line, "[%s] '%s' is not a valid environment variable name", section, name);
      return 1;
    }
    if (strcmp(section, "nccl") == 0 && !nccl_var_known(key + 5)) {
      size_t n;
      const char *const *vars = conf_nccl_vars(&n);
      const char *near = util_nearest(key + 5, vars, n);
      if (near)
        add_error(c, line, "[nccl] unknown NCCL variable '%s' (did you mean '%s'?)", name, near);
      else
        add_error(c, line,
                  "[nccl] unknown NCCL variable '%s' (not one NCCL 2.28 reads; to pass it anyway, "
                  "set %s in [env])", name, key);
      return 1;
    }
    free_ent_t *e = free_find(c, section, key);
    if (e && continuation) {
      size_t n = strlen(e->value) + strlen(value) + 2;
      char *s = malloc(n);
      if (s) {
        snprintf(s, n, "%s %s", e->value, value);
        free(e->value);
        e->value = s;
      }
    } else if (e) {
      add_error(c, line, "[%s] duplicate key '%s' (first set at line %d)", section, key, e->line);
    } else {
      free_add(c, section, key, value, line);
    }
    return 1;
  }
  conf_val_t *v = find_val(c, section, name);
  if (!v) {
    suggest_key(c, line, section, name);
    return 1;
  }
  if (v->text && continuation) {
    size_t n = strlen(v->text) + strlen(value) + 2;
    char *s = malloc(n);
    if (!s) return 1;
    snprintf(s, n, "%s %s", v->text, value);
    free(v->text);
    v->text = s;
    return 1;
  }
  if (v->text) {
    add_error(c, line, "[%s] duplicate key '%s' (first set at line %d)", section, name, v->line);
    return 1;
  }
  v->text = strdup(value);
  v->line = line;
  char origin[PATH_MAX + 16];
  snprintf(origin, sizeof origin, "%s:%d", c->path, line);
  free(v->origin);
  v->origin = strdup(origin);
  return 1;
}

/* Cut an inline comment: '#' after white space and outside quotes starts one, as it starts a
 * comment at the beginning of a word in a POSIX shell (inih itself cuts at " ;"). */
static void strip_hash_comment(char *buf) {
  char q = 0;
  for (char *p = buf; *p; p++) {
    if (q) {
      if (*p == q) q = 0;
      else if (*p == '\\' && q == '"' && p[1]) p++;
    } else if (*p == '\'' || *p == '"') {
      q = *p;
    } else if (*p == '\\' && p[1]) {
      p++;
    } else if (*p == '#' && p > buf && (p[-1] == ' ' || p[-1] == '\t')) {
      const char *t = buf;
      while (*t == ' ' || *t == '\t') t++;
      if (t == p) return; /* a whole-line comment: inih skips it */
      p[0] = '\n';
      p[1] = 0;
      return;
    }
  }
}

typedef struct reader_s {
  FILE *f;
  conf_t *c;
} reader_t;

/* inih reader: counts physical lines, checks the shape of each line and records sections, so
 * that errors name file:line, empty unknown sections are caught and long lines are refused
 * instead of being cut (Debian's inih reads at most 199 characters a line). */
static char *read_line(char *buf, int size, void *stream) {
  reader_t *r = stream;
  conf_t *c = r->c;
  for (;;) {
    if (!fgets(buf, size, r->f)) return NULL;
    c->line++;
    size_t n = strlen(buf);
    if (n == (size_t)size - 1 && buf[n - 1] != '\n' && !feof(r->f)) {
      add_error(c, c->line,
                "line longer than %d characters; continue a long value on indented lines",
                size - 2);
      int ch;
      while ((ch = fgetc(r->f)) != EOF && ch != '\n') {
      }
      buf[0] = '\n';
      buf[1] = 0;
      return buf;
    }
    if (c->line == 1 && (unsigned char)buf[0] == 0xef && (unsigned char)buf[1] == 0xbb &&
        (unsigned char)buf[2] == 0xbf)
      memmove(buf, buf + 3, strlen(buf + 3) + 1); /* a UTF-8 byte-order mark */
    strip_hash_comment(buf);
    c->line_indented = buf[0] == ' ' || buf[0] == '\t';
    char tmp[512];
    util_strlcpy(tmp, buf, sizeof tmp);
    char *t = util_trim(tmp);
    if (!*t || *t == '#' || *t == ';') return buf;
    if (*t == '[') {
      char *end = strchr(t, ']');
      if (!end) {
        add_error(c, c->line, "section header without ']': %s", t);
        buf[0] = '\n';
        buf[1] = 0;
        return buf;
      }
      *end = 0;
      char *name = util_trim(t + 1);
      if (!known_section(c, name)) suggest_section(c, c->line, name);
      char **seen = realloc(c->sections_seen, (size_t)(c->nsections_seen + 1) * sizeof *seen);
      if (seen) {
        c->sections_seen = seen;
        if ((seen[c->nsections_seen] = strdup(name))) c->nsections_seen++;
      }
      c->prev_key[0] = 0;
      return buf;
    }
    if (!strchr(t, '=') && !strchr(t, ':')) {
      if (c->line_indented && c->prev_key[0]) return buf; /* continuation of a value */
      add_error(c, c->line, "expected 'key = value' or '[section]', found '%s'", t);
      buf[0] = '\n';
      buf[1] = 0;
      return buf;
    }
    return buf;
  }
}

static conf_t *conf_new(void) {
  conf_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->schema = conf_schema(&c->nkeys);
  c->vals = calloc((size_t)c->nkeys, sizeof *c->vals);
  if (!c->vals) {
    free(c);
    return NULL;
  }
  for (int i = 0; i < c->nkeys; i++) c->vals[i].k = &c->schema[i];
  return c;
}

int conf_load(conf_t **out, const char *path) {
  conf_t *c = conf_new();
  ALLOCCHECK(c);
  int rc = GPL_OK;
  for (int i = 0; i < c->nkeys; i++)
    if (c->schema[i].type != CONF_FREE) CHECKGOTO(parse_default(c, &c->vals[i]), rc, fail);
  if (path) {
    c->path = strdup(path);
    char *tmp = strdup(path);
    c->dir = strdup(tmp ? dirname(tmp) : ".");
    free(tmp);
    struct stat st;
    FILE *f = stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? (errno = EISDIR, NULL) : fopen(path, "r");
    if (!f) {
      add_error(c, 0, "cannot open the config file: %s", strerror(errno));
    } else {
      reader_t r = {f, c};
      ini_parse_stream(read_line, &r, on_value, c);
      fclose(f);
    }
    /* Parse every value that was set, by type. */
    for (int i = 0; i < c->nkeys; i++) {
      conf_val_t *v = &c->vals[i];
      if (!v->text) continue;
      char msg[PATH_MAX + 200];
      int typed = v->k->type != CONF_STR && v->k->type != CONF_FREE && v->k->type != CONF_COMMAND;
      if (typed && !*v->text) {
        add_error(c, v->line, "[%s] %s: empty value (remove the line for the default, '%s')",
                  v->k->section, v->k->key, v->k->def);
        continue;
      }
      if (parse_value(c, v, v->text, msg, sizeof msg))
        add_error(c, v->line, "[%s] %s: %s", v->k->section, v->k->key, msg);
    }
    const conf_val_t *cmd = find_val(c, "job", "command"), *bi = find_val(c, "job", "builtin");
    if (cmd->text && bi->text)
      add_error(c, cmd->line, "[job] has both 'command' and 'builtin' (line %d); keep one", bi->line);
    if (cmd->text && cmd->argc == 0 && !c->nerrors)
      add_error(c, cmd->line, "[job] command: empty command");
  }
  if (c->nerrors) {
    if (job_env_rank() <= 0) fputs(strbuf_str(&c->errors), stderr);
    rc = GPL_ECONFIG;
    goto fail;
  }
  *out = c;
  return GPL_OK;
fail:
  conf_free(c);
  *out = NULL;
  return rc;
}

void conf_free(conf_t *c) {
  if (!c) return;
  for (int i = 0; i < c->nkeys; i++) {
    free(c->vals[i].text);
    free(c->vals[i].origin);
    free_value_parse(&c->vals[i]);
  }
  for (int i = 0; i < c->nfree; i++) {
    free(c->free[i].section);
    free(c->free[i].key);
    free(c->free[i].value);
  }
  free(c->free);
  for (int i = 0; i < c->nsections_seen; i++) free(c->sections_seen[i]);
  free(c->sections_seen);
  free(c->vals);
  free(c->path);
  free(c->dir);
  strbuf_free(&c->errors);
  free(c);
}

int conf_set(conf_t *c, const char *section, const char *key, const char *value, const char *origin) {
  if (is_free_section(section)) {
    free_ent_t *e = free_find(c, section, key);
    if (e) {
      free(e->value);
      e->value = strdup(value);
    } else {
      free_add(c, section, key, value, 0);
    }
    return GPL_OK;
  }
  conf_val_t *v = find_val(c, section, key);
  if (!v) {
    LOG_ERROR("conf_set: unknown key [%s] %s", section, key);
    return GPL_EINVAL;
  }
  char msg[PATH_MAX + 200];
  char *old = v->text;
  v->text = strdup(value);
  if (parse_value(c, v, value, msg, sizeof msg)) {
    fprintf(stderr, "gpulaunch: %s: %s\n", origin, msg);
    free(v->text);
    v->text = old;
    if (old) parse_value(c, v, old, msg, sizeof msg);
    else parse_default(c, v);
    return GPL_ECONFIG;
  }
  free(old);
  free(v->origin);
  v->origin = strdup(origin);
  return GPL_OK;
}

static const conf_val_t *get(const conf_t *c, const char *section, const char *key) {
  const conf_val_t *v = c ? find_val(c, section, key) : NULL;
  if (!v && c) LOG_ERROR("unknown config key [%s] %s", section, key);
  return v;
}

const char *conf_str(const conf_t *c, const char *section, const char *key) {
  const conf_val_t *v = get(c, section, key);
  return v ? (v->text ? v->text : v->k->def) : "";
}
long conf_int(const conf_t *c, const char *section, const char *key) {
  const conf_val_t *v = get(c, section, key);
  return v ? v->i : 0;
}
double conf_double(const conf_t *c, const char *section, const char *key) {
  const conf_val_t *v = get(c, section, key);
  return v ? v->d : 0;
}
int conf_bool(const conf_t *c, const char *section, const char *key) {
  const conf_val_t *v = get(c, section, key);
  return v ? v->b : 0;
}
uint64_t conf_size(const conf_t *c, const char *section, const char *key) {
  const conf_val_t *v = get(c, section, key);
  return v ? v->size : 0;
}
double conf_duration(const conf_t *c, const char *section, const char *key) {
  const conf_val_t *v = get(c, section, key);
  return v ? v->d : 0;
}
int conf_signal(const conf_t *c, const char *section, const char *key) {
  const conf_val_t *v = get(c, section, key);
  return v ? (int)v->i : 0;
}
char *const *conf_command(const conf_t *c, const char *section, const char *key, int *argc) {
  const conf_val_t *v = get(c, section, key);
  if (argc) *argc = v ? v->argc : 0;
  return v ? v->argv : NULL;
}
int conf_is_set(const conf_t *c, const char *section, const char *key) {
  const conf_val_t *v = get(c, section, key);
  return v && v->text;
}
const char *conf_origin(const conf_t *c, const char *section, const char *key) {
  const conf_val_t *v = get(c, section, key);
  return v && v->origin ? v->origin : "default";
}
const char *conf_path(const conf_t *c) { return c ? c->path : NULL; }

int conf_has_section(const conf_t *c, const char *section) {
  for (int i = 0; c && i < c->nsections_seen; i++)
    if (strcmp(c->sections_seen[i], section) == 0) return 1;
  return 0;
}

int conf_free_count(const conf_t *c, const char *section) {
  int n = 0;
  for (int i = 0; c && i < c->nfree; i++) n += strcmp(c->free[i].section, section) == 0;
  return n;
}

void conf_free_entry(const conf_t *c, const char *section, int idx, const char **key, const char **value) {
  int n = 0;
  for (int i = 0; i < c->nfree; i++) {
    if (strcmp(c->free[i].section, section) != 0) continue;
    if (n++ == idx) {
      *key = c->free[i].key;
      *value = c->free[i].value;
      return;
    }
  }
  *key = *value = NULL;
}

void conf_print(FILE *f, const conf_t *c) {
  const char *sec = "";
  for (int i = 0; i < c->nkeys; i++) {
    const conf_key_t *k = &c->schema[i];
    if (strcmp(sec, k->section) != 0) {
      fprintf(f, "%s[%s]\n", *sec ? "\n" : "", k->section);
      sec = k->section;
    }
    if (k->type == CONF_FREE) {
      for (int j = 0; j < c->nfree; j++) {
        const free_ent_t *e = &c->free[j];
        if (strcmp(e->section, k->section) != 0) continue;
        fprintf(f, "%-18s = %-30s # %s:%d\n", e->key,
                util_is_secret_name(e->key) ? "<redacted>" : e->value, c->path ? c->path : "", e->line);
      }
      continue;
    }
    const conf_val_t *v = &c->vals[i];
    const char *text = v->text ? v->text : k->def;
    /* the value in effect, as the program reads it (a number as parsed, not as written) */
    char eff[64];
    if (k->type == CONF_INT && *text) snprintf(eff, sizeof eff, "%ld", v->i), text = eff;
    else if (k->type == CONF_BOOL) snprintf(eff, sizeof eff, "%s", v->b ? "true" : "false"), text = eff;
    else if (k->type == CONF_DOUBLE && *text) snprintf(eff, sizeof eff, "%g", v->d), text = eff;
    else if (k->type == CONF_DURATION && *text) snprintf(eff, sizeof eff, "%gs", v->d), text = eff;
    else if (k->type == CONF_SIZE && *text)
      snprintf(eff, sizeof eff, "%llu", (unsigned long long)v->size), text = eff;
    fprintf(f, "%-18s = %-30s # %s\n", k->key, text, v->origin ? v->origin : "default");
  }
}
