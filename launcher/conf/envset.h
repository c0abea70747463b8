/* A set of KEY=VALUE strings built in linear time: entries are appended, and one pass at the end
 * (sort, n log n) keeps each key once, at its first place, with its last value. A 40k-key [env]
 * took 20 s with a search per entry. */
#ifndef GPL_LAUNCHER_ENVSET_H
#define GPL_LAUNCHER_ENVSET_H

#include <stddef.h>

typedef struct envset_s {
  char **v;   /* "KEY=VALUE", malloc'd, NULL-terminated once anything was added */
  int n, cap;
} envset_t;

/* Append key (klen bytes) = value. 0 or GPL_ENOMEM. */
int envset_add(envset_t *e, const char *key, size_t klen, const char *value);
/* Append "KEY=VALUE" as it is (an entry of environ). */
int envset_add_kv(envset_t *e, const char *kv);
/* Each key once: its first position, its last value (what repeated setenv calls would give). */
int envset_finish(envset_t *e);
/* The latest value of key (NULL: none); a scan, for the few lookups the callers make. */
const char *envset_get(const envset_t *e, const char *key);
void envset_free(envset_t *e);

#endif
