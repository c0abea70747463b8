/* The elastic controller's claims (elastic_core.h, elastic_claims.h): who named which hosts lost, a
 * partition resolved from them (the largest group of hosts that still hear each other, a tie to
 * rank 0's side, the hosts the launcher lost out of every group), and the claims in words and
 * JSON. Pure functions. */
#include "launcher/front/elastic_claims.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ecore_add_word(char *buf, size_t len, const char *word) {
  size_t off = strlen(buf);
  if (off + strlen(word) + 8 < len) snprintf(buf + off, len - off, "%s%s", off ? ", " : "", word);
}

int ecore_launcher_line(int *state, const char *line, char *host, size_t len) {
  if (strstr(line, "lost communication with a remote daemon")) {
    *state = 1;
    return 0;
  }
  if (!*state) return 0;
  const char *a = strstr(line, "Remote daemon:"), *on = a ? strstr(a, " on node ") : NULL;
  if (++*state > 6) *state = 0; /* (the block is 4 lines) */
  if (!on) return 0;
  on += strlen(" on node ");
  size_t n = strcspn(on, " \t\r\n");
  if (n == 0 || n >= len) return 0;
  snprintf(host, len, "%.*s", (int)n, on);
  *state = 0;
  return 1;
}

static int host_at(const front_host_t *cur, int ncur, const char *name) {
  for (int i = 0; *name && i < ncur; i++)
    if (strcmp(cur[i].name, name) == 0) return i;
  return -1;
}

static void *xcalloc(int n, size_t size) {
  void *p = calloc((size_t)(n > 0 ? n : 1), size);
  if (!p) abort(); /* the controller cannot go on without its state */
  return p;
}

/* The groups of the hosts' claims (no launcher's among them): keep[] the largest, a tie to the one
 * with host r0 (rank 0's). Returns 1 when two claims disagree (each side names the other lost). */
static int groups(const front_host_t *cur, int ncur, const ecore_claim_t *claims, int nclaims, int r0, int *keep) {
  /* A claim disagrees with another when it names a host that speaks too (a rank lost on the
   * claimant's own host, its gpulaunch dead, is no disagreement: that host is left out). */
  int conflict = 0;
  for (int i = 0; i < nclaims && !conflict; i++)
    for (int k = 0; k < nclaims && !conflict; k++)
      conflict = *claims[i].by && strcmp(claims[i].by, claims[i].lost) != 0 &&
                 strcmp(claims[k].by, claims[i].lost) == 0 && host_at(cur, ncur, claims[i].by) >= 0;
  for (int i = 0; i < ncur; i++) keep[i] = 1;
  if (!conflict) { /* every claim holds: the hosts named are gone */
    for (int k = 0; k < nclaims; k++) {
      int x = host_at(cur, ncur, claims[k].lost);
      if (x >= 0) keep[x] = 0;
    }
    return 0;
  }
  /* Each claimant's group: the hosts it still hears, less those the group's other claimants name. */
  int *g = xcalloc(ncur, sizeof *g);
  int best = -1, best_r0 = 0;
  for (int b = 0; b < nclaims; b++) {
    int me = host_at(cur, ncur, claims[b].by);
    int dup = me < 0;
    for (int k = 0; k < b && !dup; k++) dup = strcmp(claims[k].by, claims[b].by) == 0;
    if (dup) continue;
    for (int i = 0; i < ncur; i++) g[i] = 1;
    /* its own claims and those of unnamed claimants first, then those of the group's others */
    for (int k = 0; k < nclaims; k++) {
      int by = host_at(cur, ncur, claims[k].by), x = host_at(cur, ncur, claims[k].lost);
      if (x >= 0 && x != by && (by < 0 || by == me)) g[x] = 0;
    }
    for (int changed = 1; changed;) {
      changed = 0;
      for (int k = 0; k < nclaims; k++) {
        int by = host_at(cur, ncur, claims[k].by), x = host_at(cur, ncur, claims[k].lost);
        if (x >= 0 && x != by && g[x] && by >= 0 && g[by]) g[x] = 0, changed = 1;
      }
    }
    if (!g[me]) continue;
    int size = 0;
    for (int i = 0; i < ncur; i++) size += g[i];
    int has_r0 = r0 >= 0 && g[r0];
    if (size > best || (size == best && has_r0 && !best_r0)) {
      best = size;
      best_r0 = has_r0;
      memcpy(keep, g, (size_t)ncur * sizeof *g);
    }
  }
  free(g);
  for (int k = 0; k < nclaims; k++) /* and the hosts that named their own ranks lost */
    if (strcmp(claims[k].by, claims[k].lost) == 0 && host_at(cur, ncur, claims[k].lost) >= 0)
      keep[host_at(cur, ncur, claims[k].lost)] = 0;
  return 1;
}

int ecore_resolve(const front_host_t *cur, int ncur, const ecore_claim_t *claims, int nclaims, int *keep) {
  /* rank 0's host: its claims say which (else the launch's first host) */
  int r0 = ncur ? 0 : -1;
  for (int k = 0; k < nclaims; k++)
    if (claims[k].rank0 && !claims[k].launcher && host_at(cur, ncur, claims[k].by) >= 0)
      r0 = host_at(cur, ncur, claims[k].by);
  /* The hosts the launcher lost cannot be launched on from here: out of every group; what they
   * claim is the view of the side cut off (a disagreement: a partition), not believed. */
  int *cut = xcalloc(ncur, sizeof *cut), disbelieved = 0, nb = 0;
  for (int k = 0; k < nclaims; k++) /* every entry of that name (a list may name a host twice) */
    for (int i = 0; claims[k].launcher && i < ncur; i++)
      if (strcmp(cur[i].name, claims[k].lost) == 0) cut[i] = 1;
  ecore_claim_t *b = xcalloc(nclaims, sizeof *b);
  for (int k = 0; k < nclaims; k++) {
    if (claims[k].launcher) continue;
    int by = host_at(cur, ncur, claims[k].by);
    if (by >= 0 && cut[by]) { /* a host cut off named one the launcher still reaches: a split */
      int x = host_at(cur, ncur, claims[k].lost);
      if (x >= 0 && x != by && !cut[x]) disbelieved = 1;
      continue;
    }
    b[nb++] = claims[k];
  }
  int conflict = groups(cur, ncur, b, nb, r0, keep);
  for (int i = 0; i < ncur; i++)
    if (cut[i]) keep[i] = 0;
  free(b);
  free(cut);
  return conflict || disbelieved;
}

/* The words for one claimant's claims (all of claims[] with its by and launcher). */
static void say_claimant(const ecore_claim_t *claims, int nclaims, int k, char *out, size_t len, cJSON *arr) {
  char names[1024] = "";
  cJSON *lost = arr ? cJSON_CreateArray() : NULL;
  for (int i = k; i < nclaims; i++)
    if (strcmp(claims[i].by, claims[k].by) == 0 && claims[i].launcher == claims[k].launcher) {
      ecore_add_word(names, sizeof names, claims[i].lost);
      if (lost) cJSON_AddItemToArray(lost, cJSON_CreateString(claims[i].lost));
    }
  size_t off = strlen(out);
  if (claims[k].launcher)
    snprintf(out + off, len - off, "%smpirun%s%s lost its daemon on %s", off ? "; " : "", *claims[k].by ? " on " : "",
             claims[k].by, names);
  else
    snprintf(out + off, len - off, "%s%s%s named %s lost", off ? "; " : "", *claims[k].by ? "host " : "a rank",
             claims[k].by, names);
  if (!arr) {
    cJSON_Delete(lost);
    return;
  }
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "by", claims[k].by);
  cJSON_AddBoolToObject(o, "rank0", claims[k].rank0);
  if (claims[k].launcher) cJSON_AddBoolToObject(o, "launcher", 1);
  cJSON_AddItemToObject(o, "lost", lost);
  cJSON_AddItemToArray(arr, o);
}

void ecore_describe_claims(const ecore_claim_t *claims, int nclaims, char *out, size_t len, void *arr) {
  out[0] = 0;
  for (int k = 0; k < nclaims; k++) {
    int dup = 0;
    for (int i = 0; i < k && !dup; i++)
      dup = strcmp(claims[i].by, claims[k].by) == 0 && claims[i].launcher == claims[k].launcher;
    if (!dup) say_claimant(claims, nclaims, k, out, len, arr);
  }
}

int ecore_partition_note(const ecore_claim_t *claims, int nclaims, char *out, size_t len) {
  front_host_t *h = xcalloc(2 * nclaims + 1, sizeof *h);
  int *keep = xcalloc(2 * nclaims + 1, sizeof *keep);
  int n = 0, rc = 0, launcher = 0;
  /* the hosts: rank 0's first (a tie goes to it), the other claimants, then the hosts named */
  for (int pass = 0; pass < 3; pass++)
    for (int k = 0; k < nclaims; k++) {
      const char *name = pass == 2 ? claims[k].lost : claims[k].by;
      launcher |= claims[k].launcher;
      if (pass < 2 && claims[k].launcher) continue; /* (the launcher's host is no job host of its own) */
      if ((pass || claims[k].rank0) && *name && host_at(h, n, name) < 0) {
        snprintf(h[n].name, sizeof h[n].name, "%s", name);
        h[n++].slots = 1;
      }
    }
  int split = ecore_resolve(h, n, claims, nclaims, keep);
  if (split || launcher) {
    char said[2048], kept[1024] = "", cut[1024] = "";
    ecore_describe_claims(claims, nclaims, said, sizeof said, NULL);
    for (int i = 0; i < n; i++) ecore_add_word(keep[i] ? kept : cut, 1024, h[i].name);
    if (split && *kept)
      snprintf(out, len, "a network partition (%s): %s cannot reach %s", said, cut, kept);
    else /* the launcher's word, and nobody cut off said otherwise */
      snprintf(out, len, "%s lost or cut off from the launcher (%s); no other host named", cut, said);
    rc = 1;
  }
  free(h);
  free(keep);
  return rc;
}
