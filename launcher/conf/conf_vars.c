/* The free sections ([env], [nccl]): KEY = value entries in file order, their names checked,
 * duplicates found after parsing, secrets registered with redaction. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/redact.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/conf/conf_priv.h"

#define VARS_NAME(sec, help) #sec,
static const char *const g_free_sections[] = {CONF_FREE_SECTIONS(VARS_NAME)};

int conf_vars_index(const char *s) {
  for (size_t i = 0; i < GPL_ARRAY_LEN(g_free_sections); i++)
    if (strcmp(s, g_free_sections[i]) == 0) return (int)i;
  return -1;
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

static free_ent_t *vars_add(conf_t *c, int sec, const char *key, const char *value, int line) {
  free_list_t *l = &c->st->free[sec];
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
  if (!e->key || conf_value_append(&e->value, &e->vlen, &e->vcap, "", value) < 0) {
    free(e->key);
    free(e->value);
    return NULL;
  }
  e->line = line;
  l->n++;
  return e;
}

static free_ent_t *vars_find(const conf_t *c, int sec, const char *key) {
  const free_list_t *l = &c->st->free[sec];
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
void conf_vars_check_duplicates(conf_t *c) {
  for (size_t s = 0; s < GPL_ARRAY_LEN(g_free_sections); s++) {
    free_list_t *l = &c->st->free[s];
    if (l->n < 2) continue;
    free_ent_t **v = malloc((size_t)l->n * sizeof *v);
    dup_t *dups = malloc((size_t)l->n * sizeof *dups);
    if (!v || !dups) {
      free(v);
      free(dups);
      conf_ini_error(c, 0, "out of memory checking [%s] for duplicate keys", g_free_sections[s]);
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
    for (int d = 0; d < nd; d++) /* conf_ini_error shows the first MAX_ERRORS_SHOWN, counts all */
      conf_ini_error(c, dups[d].line, "[%s] duplicate key '%s' (first set at line %d)", g_free_sections[s],
                dups[d].key, dups[d].first);
    free(v);
    free(dups);
  }
}

/* One "KEY = value" line of [env] or [nccl]: a valid name ([nccl]: one NCCL reads), kept in file
 * order. */
void conf_vars_line(conf_t *c, int fsec, const char *section, const char *name, const char *value,
                    int line, int continuation) {
  char key[sizeof c->st->prev_key + 8]; /* "NCCL_" + any name a line can hold */
  if (strcmp(section, "nccl") == 0 && strncmp(name, "NCCL_", 5) != 0)
    snprintf(key, sizeof key, "NCCL_%s", name);
  else
    util_strlcpy(key, name, sizeof key);
  if (!env_name_ok(key)) {
    conf_ini_error(c, line, "[%s] '%s' is not a valid environment variable name", section, name);
    return;
  }
  if (strcmp(section, "nccl") == 0 && !nccl_var_known(key + 5)) {
    size_t n;
    const char *const *vars = conf_nccl_vars(&n);
    const char *near = util_nearest(key + 5, vars, n);
    if (near)
      conf_ini_error(c, line, "[nccl] unknown NCCL variable '%s' (did you mean '%s'?)", name, near);
    else
      conf_ini_error(c, line,
                "[nccl] unknown NCCL variable '%s' (not one NCCL 2.28 reads; to pass it anyway, "
                "set %s in [env])", name, key);
    return;
  }
  /* A continuation line continues the entry of the line before: the last one of its section.
   * Duplicates are kept for now and reported after parsing (conf_vars_check_duplicates). */
  free_list_t *l = &c->st->free[fsec];
  free_ent_t *e = l->n ? &l->e[l->n - 1] : NULL;
  if (continuation && e && strcmp(e->key, key) == 0) {
    if (conf_value_append(&e->value, &e->vlen, &e->vcap, " ", value) < 0)
      conf_ini_error(c, line, "out of memory");
  } else if (!vars_add(c, fsec, key, value, line)) {
    conf_ini_error(c, line, "out of memory");
  }
}

int conf_vars_set(conf_t *c, int fsec, const char *key, const char *value) {
  free_ent_t *e = vars_find(c, fsec, key);
  if (e) {
    e->vlen = 0;
    if (conf_value_append(&e->value, &e->vlen, &e->vcap, "", value) < 0) return GPL_ENOMEM;
  } else if (!vars_add(c, fsec, key, value, 0)) {
    return GPL_ENOMEM;
  }
  return GPL_OK;
}

void conf_vars_print(FILE *f, const conf_t *c, int fs) {
  conf_state_t *st = c->st;
  for (int j = 0; j < st->free[fs].n; j++) {
    const free_ent_t *e = &st->free[fs].e[j];
    fprintf(f, "%-18s = %-30s # %s:%d\n", e->key,
            util_is_secret_name(e->key) ? "<redacted>" : e->value, st->path ? st->path : "", e->line);
  }
}

void conf_vars_free(conf_t *c) {
  conf_state_t *st = c->st;
  for (size_t s = 0; s < GPL_ARRAY_LEN(g_free_sections); s++) {
    for (int i = 0; i < st->free[s].n; i++) {
      free(st->free[s].e[i].key);
      free(st->free[s].e[i].value);
    }
    free(st->free[s].e);
  }
}

void conf_register_secrets(const conf_t *c) {
  if (!c) return;
  const conf_state_t *st = c->st;
  for (size_t s = 0; s < GPL_ARRAY_LEN(g_free_sections); s++)
    for (int i = 0; i < st->free[s].n; i++)
      if (util_is_secret_name(st->free[s].e[i].key)) redact_add_value(st->free[s].e[i].value);
}

int conf_vars_count(const conf_t *c, conf_vars_id_t s) {
  return c && s >= 0 && s < CONF_VARS_COUNT ? c->st->free[s].n : 0;
}

void conf_vars_entry(const conf_t *c, conf_vars_id_t s, int idx, const char **key, const char **value) {
  conf_state_t *st = c->st;
  if (s < 0 || s >= CONF_VARS_COUNT || idx < 0 || idx >= st->free[s].n) {
    *key = *value = NULL;
    return;
  }
  *key = st->free[s].e[idx].key;
  *value = st->free[s].e[idx].value;
}
