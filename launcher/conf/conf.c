/* Config file loading with inih: strict schema validation, file:line errors, typo suggestions. */
#include "launcher/conf/conf.h"

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
#include "common/redact.h"
#include "common/safefile.h"
#include "common/strbuf.h"
#include "common/util.h"

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

struct conf_s {
  char *path;
  char *dir;
  int nkeys;
  const conf_key_t *schema;
  conf_val_t *vals;
  free_list_t free[2]; /* g_free_sections order */
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

static const char *const g_free_sections[] = {"env", "nccl"};

static void add_error(conf_t *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add_error(conf_t *c, int line, const char *fmt, ...) {
  if (++c->nerrors > MAX_ERRORS_SHOWN) return;
  va_list ap;
  va_start(ap, fmt);
  if (line > 0) strbuf_printf(&c->errors, "gpulaunch: %s:%d: ", c->path ? c->path : "(defaults)", line);
  else strbuf_printf(&c->errors, "gpulaunch: %s: ", c->path ? c->path : "(defaults)");
  strbuf_vprintf(&c->errors, fmt, ap);
  strbuf_append(&c->errors, "\n");
  va_end(ap);
}

/* Index of a free section in g_free_sections, or -1. */
static int free_index(const char *s) {
  for (size_t i = 0; i < GPL_ARRAY_LEN(g_free_sections); i++)
    if (strcmp(s, g_free_sections[i]) == 0) return (int)i;
  return -1;
}

/* *s (of *len bytes, *cap allocated) += sep + add, doubling the allocation: a value continued
 * over thousands of lines costs linear time, not quadratic. */
static int grow_append(char **s, size_t *len, size_t *cap, const char *sep, const char *add) {
  size_t sl = strlen(sep), al = strlen(add);
  if (!*s) *len = *cap = 0;
  else if (!*cap) *len = strlen(*s), *cap = *len + 1; /* a plain strdup'd value */
  if (*len + sl + al + 1 > *cap) {
    size_t nc = *cap ? *cap : 64;
    while (nc < *len + sl + al + 1) nc *= 2;
    char *n = realloc(*s, nc);
    if (!n) return GPL_ENOMEM;
    if (!*s) n[0] = 0;
    *s = n;
    *cap = nc;
  }
  memcpy(*s + *len, sep, sl);
  memcpy(*s + *len + sl, add, al + 1);
  *len += sl + al;
  return GPL_OK;
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
    case CONF_OUTPATH:
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
      rc = util_parse_duration(text, &v->d);
      if (rc == GPL_ERANGE)
        return snprintf(msg, len, "'%s' is out of range (at most %.0f s, %.0f days)", text,
                        UTIL_DURATION_MAX, UTIL_DURATION_MAX / 86400), -1;
      if (rc) return snprintf(msg, len, "'%s' is not a duration (e.g. 30s, 500ms, 2m)", text), -1;
      if (k->min != k->max && *text && v->d < k->min)
        return snprintf(msg, len, "'%s' is below the minimum %gs", text, k->min), -1;
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
        /* an input read whole or line by line: a FIFO would block, a device never end */
        if (!S_ISREG(st.st_mode)) return snprintf(msg, len, "'%s' is not a regular file", full), -1;
        free(v->text);
        v->text = strdup(full);
        v->tlen = v->tcap = 0;
      } else if (*text) {
        struct stat st;
        if (stat(text, &st) < 0) return snprintf(msg, len, "cannot open '%s': %s", text, strerror(errno)), -1;
        if (!S_ISREG(st.st_mode)) return snprintf(msg, len, "'%s' is not a regular file", text), -1;
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

static free_ent_t *free_add(conf_t *c, int sec, const char *key, const char *value, int line) {
  free_list_t *l = &c->free[sec];
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 16;
    free_ent_t *n = realloc(l->e, (size_t)cap * sizeof *n);
    if (!n) return NULL;
    l->e = n;
    l->cap = cap;
  }
  free_ent_t *e = &l->e[l->n];
  memset(e, 0, sizeof *e);
  e->key = strdup(key);
  if (!e->key || grow_append(&e->value, &e->vlen, &e->vcap, "", value) < 0) {
    free(e->key);
    free(e->value);
    return NULL;
  }
  e->line = line;
  l->n++;
  return e;
}

static free_ent_t *free_find(const conf_t *c, int sec, const char *key) {
  const free_list_t *l = &c->free[sec];
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->e[i].key, key) == 0) return &l->e[i];
  return NULL;
}

static int cmp_ent_ptr(const void *a, const void *b) {
  const free_ent_t *x = *(const free_ent_t *const *)a, *y = *(const free_ent_t *const *)b;
  int d = strcmp(x->key, y->key);
  return d ? d : (x->line > y->line) - (x->line < y->line);
}

typedef struct dup_s {
  int line, first; /* the repeated line, and the line that set the key first */
  const char *key;
} dup_t;

static int cmp_dup_line(const void *a, const void *b) {
  const dup_t *x = a, *y = b;
  return (x->line > y->line) - (x->line < y->line);
}

/* Duplicate keys of the free sections, found once after parsing by sorting (n log n; a linear
 * search per line made a 40k-key [env] take seconds). Reported in line order. */
static void free_check_duplicates(conf_t *c) {
  for (size_t s = 0; s < GPL_ARRAY_LEN(g_free_sections); s++) {
    free_list_t *l = &c->free[s];
    if (l->n < 2) continue;
    free_ent_t **v = malloc((size_t)l->n * sizeof *v);
    dup_t *dups = malloc((size_t)l->n * sizeof *dups);
    if (!v || !dups) {
      free(v);
      free(dups);
      add_error(c, 0, "out of memory checking [%s] for duplicate keys", g_free_sections[s]);
      return;
    }
    for (int i = 0; i < l->n; i++) v[i] = &l->e[i];
    qsort(v, (size_t)l->n, sizeof *v, cmp_ent_ptr);
    int nd = 0;
    /* sorted by key, then line: the head of each run of one key is where it was first set */
    for (int i = 1, head = 0; i < l->n; i++) {
      if (strcmp(v[i - 1]->key, v[i]->key) != 0) {
        head = i;
        continue;
      }
      dups[nd++] = (dup_t){v[i]->line, v[head]->line, v[i]->key};
    }
    qsort(dups, (size_t)nd, sizeof *dups, cmp_dup_line);
    for (int d = 0; d < nd; d++) /* add_error shows the first MAX_ERRORS_SHOWN, counts all */
      add_error(c, dups[d].line, "[%s] duplicate key '%s' (first set at line %d)", g_free_sections[s],
                dups[d].key, dups[d].first);
    free(v);
    free(dups);
  }
}

/* inih handler: one key = value in a section. */
static int on_value(void *user, const char *section_raw, const char *name, const char *value) {
  conf_t *c = user;
  int line = c->line;
  /* inih keeps the spaces of "[ env ]"; read_line trims them too, so both agree on the name */
  char section_buf[256];
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
  int fsec = free_index(section);
  if (fsec >= 0) {
    char key[sizeof c->prev_key + 8]; /* "NCCL_" + any name a line can hold */
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
    /* A continuation line continues the entry of the line before: the last one of its section.
     * Duplicates are kept for now and reported after parsing (free_check_duplicates). */
    free_list_t *l = &c->free[fsec];
    free_ent_t *e = l->n ? &l->e[l->n - 1] : NULL;
    if (continuation && e && strcmp(e->key, key) == 0) {
      if (grow_append(&e->value, &e->vlen, &e->vcap, " ", value) < 0)
        add_error(c, line, "out of memory");
    } else if (!free_add(c, fsec, key, value, line)) {
      add_error(c, line, "out of memory");
    }
    return 1;
  }
  conf_val_t *v = find_val(c, section, name);
  if (!v) {
    suggest_key(c, line, section, name);
    return 1;
  }
  if (v->text && continuation) {
    if (grow_append(&v->text, &v->tlen, &v->tcap, " ", value) < 0) add_error(c, line, "out of memory");
    return 1;
  }
  if (v->text) {
    add_error(c, line, "[%s] duplicate key '%s' (first set at line %d)", section, name, v->line);
    return 1;
  }
  if (grow_append(&v->text, &v->tlen, &v->tcap, "", value) < 0) {
    add_error(c, line, "out of memory");
    return 1;
  }
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

/* The next line of c->text into buf (at most size-1 bytes with its newline), fgets-style. A line
 * that does not fit is an error, not cut (Debian's inih reads at most 199 characters a line), and
 * so is a NUL byte, which would silently end the value there. */
static char *next_line(conf_t *c, char *buf, int size) {
  if (c->text_pos >= c->text_len) return NULL;
  const char *p = c->text + c->text_pos;
  size_t left = c->text_len - c->text_pos;
  const char *nl = memchr(p, '\n', left);
  size_t n = nl ? (size_t)(nl - p) + 1 : left;
  c->text_pos += n;
  c->line++;
  if (memchr(p, 0, n)) {
    add_error(c, c->line, "a NUL byte in the line (a binary file, or a value that cannot be passed on)");
    buf[0] = '\n';
    buf[1] = 0;
    return buf;
  }
  if (n > (size_t)size - 1 || (n == (size_t)size - 1 && p[n - 1] != '\n')) {
    add_error(c, c->line, "line longer than %d characters; continue a long value on indented lines",
              size - 2);
    buf[0] = '\n';
    buf[1] = 0;
    return buf;
  }
  memcpy(buf, p, n);
  buf[n] = 0;
  return buf;
}

/* A known section's header: recorded once; a second header of it is an error (its keys would
 * merge silently with the first's). */
static void section_header(conf_t *c, const char *name) {
  if (!known_section(c, name)) {
    suggest_section(c, c->line, name);
    return;
  }
  for (int i = 0; i < c->nsections_seen; i++)
    if (strcmp(c->sections_seen[i], name) == 0) {
      add_error(c, c->line, "[%s] appears a second time (first at line %d); keep one [%s] section",
                name, c->section_line[i], name);
      return;
    }
  char **seen = realloc(c->sections_seen, (size_t)(c->nsections_seen + 1) * sizeof *seen);
  if (seen) c->sections_seen = seen;
  int *lines = realloc(c->section_line, (size_t)(c->nsections_seen + 1) * sizeof *lines);
  if (lines) c->section_line = lines;
  if (seen && lines && (seen[c->nsections_seen] = strdup(name))) {
    lines[c->nsections_seen] = c->line;
    c->nsections_seen++;
  }
}

/* inih reader: counts physical lines, checks the shape of each line and records sections, so
 * that errors name file:line, empty unknown sections are caught and long lines are refused
 * instead of being cut. */
static char *read_line(char *buf, int size, void *stream) {
  conf_t *c = stream;
  for (;;) {
    if (!next_line(c, buf, size)) return NULL;
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
      const char *rest = end + 1;
      while (*rest == ' ' || *rest == '\t' || *rest == '\r' || *rest == '\n') rest++;
      if (*rest && *rest != ';' && *rest != '#') {
        /* "[env] x": inih ignores what follows ']', so a key written there would vanish */
        char *shown = redact_text(rest, strcspn(rest, "\r\n")); /* "[env] HF_TOKEN=x" */
        add_error(c, c->line, "junk after the section header: '%s' (a key goes on a line of its own)",
                  shown ? shown : REDACTED);
        free(shown);
        buf[0] = '\n';
        buf[1] = 0;
        return buf;
      }
      *end = 0;
      section_header(c, util_trim(t + 1));
      c->prev_key[0] = 0;
      return buf;
    }
    if (!strchr(t, '=') && !strchr(t, ':')) {
      if (c->line_indented && c->prev_key[0]) return buf; /* continuation of a value */
      /* "HF_TOKEN hf_x" (the '=' forgotten): a secret-named first word hides the rest; the
       * shapes and known secret values go when the errors are printed (load) */
      size_t w = strcspn(t, " \t");
      char first[256];
      util_strlcpy(first, t, w + 1 < sizeof first ? w + 1 : sizeof first);
      if (t[w] && util_is_secret_name(first))
        add_error(c, c->line, "expected 'name = value' or '[section]', found '%s %s'", first, REDACTED);
      else
        add_error(c, c->line, "expected 'name = value' or '[section]', found '%s'", t);
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

/* Parse text (the file's bytes, len of them) as the config file path; path NULL: defaults. */
/* errors_out: NULL to print the errors (rank 0), else where the printed text goes (malloc'd). */
static int load(conf_t **out, const char *path, const char *text, size_t len, const char *read_err,
                char **errors_out) {
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
    if (read_err) {
      add_error(c, 0, "cannot open the config file: %s", read_err);
    } else {
      c->text = text;
      c->text_len = len;
      ini_parse_stream(read_line, c, on_value, c);
      c->text = NULL;
      free_check_duplicates(c);
    }
    /* Parse every value that was set, by type. */
    for (int i = 0; i < c->nkeys; i++) {
      conf_val_t *v = &c->vals[i];
      if (!v->text) continue;
      char msg[PATH_MAX + 200];
      int typed = v->k->type != CONF_STR && v->k->type != CONF_OUTPATH && v->k->type != CONF_FREE &&
                  v->k->type != CONF_COMMAND;
      if (typed && !*v->text) {
        add_error(c, v->line, "[%s] %s: empty value (remove the line for the default, '%s')",
                  v->k->section, v->k->key, v->k->def);
        continue;
      }
      if (v->k->type == CONF_OUTPATH && !*v->text) {
        add_error(c, v->line, "[%s] %s: empty value (give a path, or remove the line to leave it off)",
                  v->k->section, v->k->key);
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
    if (c->nerrors > MAX_ERRORS_SHOWN)
      strbuf_printf(&c->errors, "gpulaunch: %s: ... and %d more errors\n", c->path,
                    c->nerrors - MAX_ERRORS_SHOWN);
    /* No error quotes a secret: a value of the file's secret-named [env]/[nccl] keys or of a
     * secret-named environment variable, wherever it stands (a bad 'grace = <that value>'
     * too), and anything of a key's shape (redact_text). */
    conf_register_secrets(c);
    const char *all = strbuf_str(&c->errors);
    char *shown = redact_text(all, strlen(all));
    if (errors_out) *errors_out = shown, shown = NULL;
    else if (util_env_rank() <= 0)
      log_print("%s", shown ? shown : "gpulaunch: config errors (not shown: no memory)\n");
    free(shown);
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

int conf_load(conf_t **out, const char *path) {
  if (!path) return load(out, NULL, NULL, 0, NULL, NULL);
  char *text = NULL;
  size_t len = 0;
  char err[PATH_MAX + 128];
  /* A regular file of bounded size: a FIFO, /dev/urandom or a huge file is refused, not read. */
  int rc = safefile_read(path, SAFEFILE_CAP_CONFIG, &text, &len, err, sizeof err);
  if (rc < 0) {
    /* "PATH: reason" or "PATH is ...": the path is in the message already */
    const char *why = err;
    if (strncmp(err, path, strlen(path)) == 0) {
      why = err + strlen(path);
      if (*why == ':') why++;
      while (*why == ' ') why++;
    }
    rc = load(out, path, NULL, 0, why, NULL);
  } else {
    rc = load(out, path, text, len, NULL, NULL);
  }
  free(text);
  return rc;
}

int conf_load_text(conf_t **out, const char *name, const char *text, size_t len) {
  return load(out, name ? name : "(text)", text, len, NULL, NULL);
}

int conf_load_text_errors(conf_t **out, const char *name, const char *text, size_t len,
                          char **errors) {
  *errors = NULL;
  return load(out, name ? name : "(text)", text, len, NULL, errors);
}

void conf_free(conf_t *c) {
  if (!c) return;
  for (int i = 0; i < c->nkeys; i++) {
    free(c->vals[i].text);
    free(c->vals[i].origin);
    free_value_parse(&c->vals[i]);
  }
  for (size_t s = 0; s < GPL_ARRAY_LEN(g_free_sections); s++) {
    for (int i = 0; i < c->free[s].n; i++) {
      free(c->free[s].e[i].key);
      free(c->free[s].e[i].value);
    }
    free(c->free[s].e);
  }
  for (int i = 0; i < c->nsections_seen; i++) free(c->sections_seen[i]);
  free(c->sections_seen);
  free(c->section_line);
  free(c->vals);
  free(c->path);
  free(c->dir);
  strbuf_free(&c->errors);
  free(c);
}

int conf_set(conf_t *c, const char *section, const char *key, const char *value, const char *origin) {
  int fsec = free_index(section);
  if (fsec >= 0) {
    free_ent_t *e = free_find(c, fsec, key);
    if (e) {
      e->vlen = 0;
      if (grow_append(&e->value, &e->vlen, &e->vcap, "", value) < 0) return GPL_ENOMEM;
    } else if (!free_add(c, fsec, key, value, 0)) {
      return GPL_ENOMEM;
    }
    return GPL_OK;
  }
  conf_val_t *v = find_val(c, section, key);
  if (!v) {
    LOG_ERROR("conf_set: unknown key [%s] %s", section, key);
    return GPL_EINVAL;
  }
  if (v->k->type == CONF_OUTPATH && !*value) {
    log_print("gpulaunch: %s: empty value for [%s] %s (give a path)\n", origin, section, key);
    return GPL_ECONFIG;
  }
  char msg[PATH_MAX + 200];
  char *old = v->text;
  size_t old_len = v->tlen, old_cap = v->tcap;
  v->text = strdup(value);
  v->tlen = v->tcap = 0; /* a plain strdup: grown again only by a copy */
  if (parse_value(c, v, value, msg, sizeof msg)) {
    log_print("gpulaunch: %s: %s\n", origin, msg);
    free(v->text);
    v->text = old;
    v->tlen = old_len;
    v->tcap = old_cap;
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

void conf_register_secrets(const conf_t *c) {
  for (size_t s = 0; c && s < GPL_ARRAY_LEN(g_free_sections); s++)
    for (int i = 0; i < c->free[s].n; i++)
      if (util_is_secret_name(c->free[s].e[i].key)) redact_add_value(c->free[s].e[i].value);
}

int conf_free_count(const conf_t *c, const char *section) {
  int s = c ? free_index(section) : -1;
  return s >= 0 ? c->free[s].n : 0;
}

void conf_free_entry(const conf_t *c, const char *section, int idx, const char **key, const char **value) {
  int s = free_index(section);
  if (s < 0 || idx < 0 || idx >= c->free[s].n) {
    *key = *value = NULL;
    return;
  }
  *key = c->free[s].e[idx].key;
  *value = c->free[s].e[idx].value;
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
      int fs = free_index(k->section);
      for (int j = 0; fs >= 0 && j < c->free[fs].n; j++) {
        const free_ent_t *e = &c->free[fs].e[j];
        fprintf(f, "%-18s = %-30s # %s:%d\n", e->key,
                util_is_secret_name(e->key) ? "<redacted>" : e->value, c->path ? c->path : "", e->line);
      }
      continue;
    }
    const conf_val_t *v = &c->vals[i];
    const char *text = v->text ? v->text : k->def;
    if (k->type == CONF_COMMAND && v->argc > 0) { /* word by word: "--hf_token VALUE" redacted */
      char *line = redact_command(v->argv, v->argc);
      fprintf(f, "%-18s = %-30s # %s\n", k->key, line ? line : REDACTED, v->origin ? v->origin : "default");
      free(line);
      continue;
    }
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
