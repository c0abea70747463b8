/* One key's value: its text grown line by line, parsed by the key's type with the error texts
 * of the file, and stored in its typed field of conf_t. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/check.h"
#include "common/netport.h"
#include "common/util.h"
#include "launcher/conf/conf_priv.h"

/* *s (of *len bytes, *cap allocated) += sep + add, doubling the allocation: a value continued
 * over thousands of lines costs linear time, not quadratic. */
int conf_value_append(char **s, size_t *len, size_t *cap, const char *sep, const char *add) {
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

conf_val_t *conf_value_find(const conf_t *c, const char *section, const char *key) {
  for (int i = 0; i < c->st->nkeys; i++)
    if (strcmp(c->st->schema[i].section, section) == 0 && strcmp(c->st->schema[i].key, key) == 0)
      return &c->st->vals[i];
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

void conf_value_clear(conf_val_t *v) {
  if (v->argv) util_free_argv(v->argv);
  v->argv = NULL;
  v->argc = 0;
}

/* Parse v->text (or the default) by type. Returns 0 or an error message in msg. */
int conf_value_parse(conf_t *c, conf_val_t *v, const char *text, char *msg, size_t len) {
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
    case CONF_PORTS: {
      netport_range_t r;
      return netport_parse(text, &r, msg, len) < 0 ? -1 : 0;
    }
    case CONF_SIGNAL: {
      int s;
      if (util_parse_signal(text, &s)) return snprintf(msg, len, "'%s' is not a signal name", text), -1;
      v->i = s;
      return 0;
    }
    case CONF_PATH:
      if (*text && c->st->path) {
        char full[PATH_MAX];
        if (text[0] == '/') util_strlcpy(full, text, sizeof full);
        else snprintf(full, sizeof full, "%s/%s", c->st->dir, text);
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
      conf_value_clear(v);
      char err[200];
      if (util_split_words(text, &v->argv, &v->argc, err, sizeof err))
        return snprintf(msg, len, "cannot split the command: %s", err), -1;
      return 0;
    }
  }
  return 0;
}

int conf_value_default(conf_t *c, conf_val_t *v) {
  char msg[300];
  if (conf_value_parse(c, v, v->k->def, msg, sizeof msg)) {
    LOG_ERROR("bad default for [%s] %s: %s", v->k->section, v->k->key, msg);
    return GPL_EINVAL;
  }
  return 0;
}

/* Parse every value the file set, by type: errors as file:line. */
void conf_value_parse_all(conf_t *c) {
  for (int i = 0; i < c->st->nkeys; i++) {
    conf_val_t *v = &c->st->vals[i];
    if (!v->text) continue;
    char msg[PATH_MAX + 200];
    int typed = v->k->type != CONF_STR && v->k->type != CONF_OUTPATH && v->k->type != CONF_FREE &&
                v->k->type != CONF_COMMAND;
    if (typed && !*v->text) {
      conf_ini_error(c, v->line, "[%s] %s: empty value (remove the line for the default, '%s')",
                v->k->section, v->k->key, v->k->def);
      continue;
    }
    if (v->k->type == CONF_OUTPATH && !*v->text) {
      conf_ini_error(c, v->line, "[%s] %s: empty value (give a path, or remove the line to leave it off)",
                v->k->section, v->k->key);
      continue;
    }
    if (conf_value_parse(c, v, v->text, msg, sizeof msg))
      conf_ini_error(c, v->line, "[%s] %s: %s", v->k->section, v->k->key, msg);
  }
}

conf_val_t *conf_value_of(const conf_t *c, const void *field) {
  ptrdiff_t off = (const char *)field - (const char *)c;
  for (int i = 0; c && i < c->st->nkeys; i++)
    if (c->st->schema[i].type != CONF_FREE && (ptrdiff_t)c->st->schema[i].offset == off)
      return &c->st->vals[i];
  if (c) LOG_ERROR("not a config setting: offset %td in conf_t", off);
  return NULL;
}

void conf_value_store(conf_t *c, const conf_val_t *v) {
  const conf_key_t *k = v->k;
  char *f = (char *)c + k->offset;
  switch (k->type) {
    case CONF_STR:
    case CONF_OUTPATH:
    case CONF_ENUM:
    case CONF_PATH:
    case CONF_PORTS:
      *(const char **)f = v->text ? v->text : k->def;
      break;
    case CONF_INT: *(long *)f = v->i; break;
    case CONF_DOUBLE:
    case CONF_DURATION: *(double *)f = v->d; break;
    case CONF_BOOL: *(int *)f = v->b; break;
    case CONF_SIZE: *(uint64_t *)f = v->size; break;
    case CONF_SIGNAL: *(int *)f = (int)v->i; break;
    case CONF_COMMAND: *(conf_argv_t *)f = (conf_argv_t){v->argv, v->argc}; break;
    case CONF_FREE: break;
  }
}
