/* KEY=VALUE sets: append, then deduplicate once by sorting. */
#include "launcher/conf/envset.h"

#include <stdlib.h>
#include <string.h>

#include "gpulaunch/error.h"

static int push(envset_t *e, char *s) {
  if (e->n + 2 > e->cap) {
    int cap = e->cap ? e->cap * 2 : 64;
    char **n = realloc(e->v, (size_t)cap * sizeof *n);
    if (!n) {
      free(s);
      return GPL_ENOMEM;
    }
    e->v = n;
    e->cap = cap;
  }
  e->v[e->n++] = s;
  e->v[e->n] = NULL;
  return GPL_OK;
}

int envset_add(envset_t *e, const char *key, size_t klen, const char *value) {
  size_t vlen = strlen(value);
  char *s = malloc(klen + vlen + 2);
  if (!s) return GPL_ENOMEM;
  memcpy(s, key, klen);
  s[klen] = '=';
  memcpy(s + klen + 1, value, vlen + 1);
  return push(e, s);
}

int envset_add_kv(envset_t *e, const char *kv) {
  char *s = strdup(kv);
  return s ? push(e, s) : GPL_ENOMEM;
}

static size_t key_len(const char *s) {
  const char *eq = strchr(s, '=');
  return eq ? (size_t)(eq - s) : strlen(s);
}

typedef struct ent_s {
  const char *s;
  size_t klen;
  int pos;
} ent_t;

static int cmp_ent(const void *a, const void *b) {
  const ent_t *x = a, *y = b;
  size_t n = x->klen < y->klen ? x->klen : y->klen;
  int d = memcmp(x->s, y->s, n);
  if (d) return d;
  if (x->klen != y->klen) return x->klen < y->klen ? -1 : 1;
  return (x->pos > y->pos) - (x->pos < y->pos);
}

int envset_finish(envset_t *e) {
  if (e->n < 2) return GPL_OK;
  ent_t *v = malloc((size_t)e->n * sizeof *v);
  if (!v) return GPL_ENOMEM;
  for (int i = 0; i < e->n; i++) v[i] = (ent_t){e->v[i], key_len(e->v[i]), i};
  qsort(v, (size_t)e->n, sizeof *v, cmp_ent);
  /* In each run of one key: the first position takes the last value; the others go. */
  for (int i = 0; i < e->n;) {
    int j = i + 1;
    while (j < e->n && v[j].klen == v[i].klen && memcmp(v[j].s, v[i].s, v[i].klen) == 0) j++;
    if (j - i > 1) {
      int first = v[i].pos, last = v[j - 1].pos;
      /* sorted by position within a key: v[i] is the first, v[j - 1] the last */
      free(e->v[first]);
      for (int k = i + 1; k < j - 1; k++) {
        free(e->v[v[k].pos]);
        e->v[v[k].pos] = NULL;
      }
      e->v[last] = NULL;
      e->v[first] = (char *)v[j - 1].s;
    }
    i = j;
  }
  free(v);
  int w = 0;
  for (int r = 0; r < e->n; r++)
    if (e->v[r]) e->v[w++] = e->v[r];
  e->n = w;
  e->v[w] = NULL;
  return GPL_OK;
}

const char *envset_get(const envset_t *e, const char *key) {
  size_t klen = strlen(key);
  for (int i = e->n - 1; i >= 0; i--)
    if (strncmp(e->v[i], key, klen) == 0 && e->v[i][klen] == '=') return e->v[i] + klen + 1;
  return NULL;
}

void envset_free(envset_t *e) {
  for (int i = 0; i < e->n; i++) free(e->v[i]);
  free(e->v);
  e->v = NULL;
  e->n = e->cap = 0;
}
