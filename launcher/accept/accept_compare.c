/* Nodes of `gpulaunch accept` checked against each other: each node's hardware profile (GPU
 * count and model, NICs, PCIe and NVLink links) against the majority's; a node that differs
 * fails and is named with both values, and with no majority every node that differs fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/strbuf.h"
#include "launcher/accept/accept.h"

static const char *const g_prop_name[ACCEPT_NPROPS] = {"gpu count", "gpu model", "nics", "pcie links",
                                                       "nvlink"};
/* Why a node has no value for a property (its topology loaded). */
static const char *const g_prop_unknown[ACCEPT_NPROPS] = {
    "", "", "", "no GPU link speed or width is known on this node",
    "NVLink state is not known here (NVML not available, or a topology file)"};

const char *accept_prop_name(accept_prop_t p) {
  return p >= 0 && p < ACCEPT_NPROPS ? g_prop_name[p] : "?";
}

/* ---- Profiles ---- */

/* items[0..n) as "A" when all are the same and uniform_plain, else "3 x A, 1 x B" (most
 * common first, then in order of appearance). */
static void histogram(char (*items)[ACCEPT_PROFILE_LEN], int n, int uniform_plain, char *out, size_t len) {
  strbuf_t b = STRBUF_INIT;
  int *count = calloc((size_t)n + 1, sizeof *count), *order = calloc((size_t)n + 1, sizeof *order);
  int ndistinct = 0;
  if (!count || !order) {
    snprintf(out, len, "?");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    int j = 0;
    while (j < ndistinct && strcmp(items[order[j]], items[i]) != 0) j++;
    if (j == ndistinct) order[ndistinct++] = i;
    count[j]++;
  }
  /* Stable sort of the distinct values by count, descending (few values: insertion sort). */
  for (int i = 1; i < ndistinct; i++)
    for (int j = i; j > 0 && count[j] > count[j - 1]; j--) {
      int t = count[j];
      count[j] = count[j - 1];
      count[j - 1] = t;
      t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  if (ndistinct == 1 && uniform_plain) strbuf_append(&b, items[order[0]]);
  else
    for (int j = 0; j < ndistinct; j++) strbuf_printf(&b, "%s%d x %s", j ? ", " : "", count[j], items[order[j]]);
  snprintf(out, len, "%s", strbuf_str(&b));
done:
  free(count);
  free(order);
  strbuf_free(&b);
}

int accept_profile_make(const topo_t *t, const accept_list_t *checks, accept_profile_t *p) {
  memset(p, 0, sizeof *p);
  if (!t) return GPL_OK;
  p->known = 1;
  snprintf(p->v[ACCEPT_PROP_GPU_COUNT], ACCEPT_PROFILE_LEN, "%d", t->ngpus);
  int nitems = t->ngpus > t->nnics ? t->ngpus : t->nnics;
  char (*items)[ACCEPT_PROFILE_LEN] = calloc((size_t)nitems + 1, sizeof *items);
  ALLOCCHECK(items);
  /* GPU models: one name when all are alike (the count is its own property). */
  if (t->ngpus == 0) {
    snprintf(p->v[ACCEPT_PROP_GPU_MODEL], ACCEPT_PROFILE_LEN, "no GPU");
  } else {
    for (int g = 0; g < t->ngpus; g++)
      snprintf(items[g], ACCEPT_PROFILE_LEN, "%s", t->gpus[g].model[0] ? t->gpus[g].model : "unknown model");
    histogram(items, t->ngpus, 1, p->v[ACCEPT_PROP_GPU_MODEL], ACCEPT_PROFILE_LEN);
  }
  /* NICs: how many of which model, with the link speed where it is known. */
  if (t->nnics == 0) {
    snprintf(p->v[ACCEPT_PROP_NIC], ACCEPT_PROFILE_LEN, "none");
  } else {
    for (int i = 0; i < t->nnics; i++) {
      const topo_nic_t *n = &t->nics[i];
      char model[ACCEPT_PROFILE_LEN];
      if (n->model[0]) snprintf(model, sizeof model, "%s", n->model);
      else snprintf(model, sizeof model, "PCI %04x:%04x", n->vendor_id, n->device_id);
      if (n->speed_mbps > 0) snprintf(items[i], ACCEPT_PROFILE_LEN, "%.60s %g Gb/s", model, n->speed_mbps / 1000.0);
      else snprintf(items[i], ACCEPT_PROFILE_LEN, "%s", model);
    }
    histogram(items, t->nnics, 0, p->v[ACCEPT_PROP_NIC], ACCEPT_PROFILE_LEN);
  }
  /* PCIe and NVLink from the node's own checks (the node's first rank ran them): what they
   * measured per GPU, so that both agree on what the link is. */
  int npcie = 0, nnvl = 0, nvl_error = 0;
  char (*nvl)[ACCEPT_PROFILE_LEN] = calloc((size_t)t->ngpus + 1, sizeof *nvl);
  if (!nvl) {
    free(items);
    return GPL_ENOMEM;
  }
  for (int i = 0; checks && i < checks->n; i++) {
    const accept_check_t *c = &checks->v[i];
    if (strncmp(c->subject, "GPU", 3) != 0) continue;
    if (strcmp(c->name, "pcie_link") == 0 && npcie < nitems) {
      if (!c->has_value) snprintf(items[npcie++], ACCEPT_PROFILE_LEN, "unknown");
      else if (strcmp(c->unit, "lanes") == 0) snprintf(items[npcie++], ACCEPT_PROFILE_LEN, "x%d", (int)c->value);
      else snprintf(items[npcie++], ACCEPT_PROFILE_LEN, "%s", c->value_text);
    } else if (strcmp(c->name, "nvlink") == 0 && nnvl < t->ngpus) {
      if (c->status == ACCEPT_ERROR) nvl_error = 1;
      /* "18 of 18 links active, NVLink 4.0" -> "18 of 18 links active" */
      size_t k = strcspn(c->value_text, ",");
      if (c->has_value) snprintf(nvl[nnvl++], ACCEPT_PROFILE_LEN, "%.*s", (int)k, c->value_text);
      else snprintf(nvl[nnvl++], ACCEPT_PROFILE_LEN, "no NVLink");
    }
  }
  if (t->ngpus == 0) snprintf(p->v[ACCEPT_PROP_PCIE], ACCEPT_PROFILE_LEN, "no GPU");
  else if (npcie > 0) histogram(items, npcie, 1, p->v[ACCEPT_PROP_PCIE], ACCEPT_PROFILE_LEN);
  if (t->ngpus == 0) snprintf(p->v[ACCEPT_PROP_NVLINK], ACCEPT_PROFILE_LEN, "no GPU");
  else if (nnvl > 0 && !nvl_error) histogram(nvl, nnvl, 1, p->v[ACCEPT_PROP_NVLINK], ACCEPT_PROFILE_LEN);
  free(nvl);
  free(items);
  return GPL_OK;
}

/* ---- Comparison ---- */

/* "h0, h1, h2" of the nodes in list, cut after a few names. */
static void host_list(strbuf_t *b, const int *list, int n, const char *const *hosts) {
  enum { SHOWN = 6 };
  for (int i = 0; i < n && i < SHOWN; i++) strbuf_printf(b, "%s%s", i ? ", " : "", hosts[list[i]]);
  if (n > SHOWN) strbuf_printf(b, " and %d more", n - SHOWN);
}

/* Does an explicit expectation check this property instead? Then the name of its key. */
static const char *explicit_key(const accept_opts_t *o, accept_prop_t p) {
  if (p == ACCEPT_PROP_GPU_COUNT && o->gpus >= 0) return "gpus";
  if (p == ACCEPT_PROP_GPU_MODEL && o->gpu_model[0]) return "gpu_model";
  if (p == ACCEPT_PROP_NIC && o->nics[0]) return "nics";
  return NULL;
}

static int compare_prop(const accept_profile_t *pr, int nnodes, const char *const *hosts, accept_prop_t p,
                        accept_list_t *out) {
  /* Distinct values: group[node] = index of its value's first node, -1 unknown. */
  int *group = calloc((size_t)nnodes, sizeof *group), *count = calloc((size_t)nnodes, sizeof *count);
  int *members = calloc((size_t)nnodes, sizeof *members);
  int rc = GPL_OK;
  if (!group || !count || !members) {
    rc = GPL_ENOMEM;
    goto done;
  }
  int known = 0, ngroups = 0;
  for (int n = 0; n < nnodes; n++) {
    group[n] = -1;
    if (!pr[n].known || !pr[n].v[p][0]) continue;
    known++;
    for (int m = 0; m <= n && group[n] < 0; m++)
      if (m == n || (group[m] == m && strcmp(pr[m].v[p], pr[n].v[p]) == 0)) group[n] = m;
    if (group[n] == n) ngroups++;
    count[group[n]]++;
  }
  int major = -1;
  for (int n = 0; n < nnodes; n++)
    if (group[n] == n && 2 * count[n] > known) major = n;
  int nmaj = 0;
  for (int n = 0; n < nnodes; n++)
    if (major >= 0 && group[n] == major) members[nmaj++] = n;
  for (int n = 0; n < nnodes && rc == GPL_OK; n++) {
    accept_check_t c;
    accept_check_init(&c, "majority", hosts[n], n, -1, g_prop_name[p]);
    strbuf_t b = STRBUF_INIT;
    if (group[n] < 0) {
      accept_check_set(&c, ACCEPT_SKIP, "%s", pr[n].known ? g_prop_unknown[p] : "the node's topology could not be "
                       "loaded: nothing to compare");
    } else if (known < 2) {
      accept_check_text(&c, "%s", pr[n].v[p]);
      accept_check_set(&c, ACCEPT_SKIP, "no other node reports its %s to compare with", g_prop_name[p]);
    } else if (ngroups == 1) {
      accept_check_text(&c, "%s", pr[n].v[p]);
      accept_check_threshold(&c, "as the majority (%d of %d nodes)", known, known);
      accept_check_set(&c, ACCEPT_PASS, "the same on all %d nodes that report it", known);
    } else if (major >= 0 && group[n] == major) {
      accept_check_text(&c, "%s", pr[n].v[p]);
      accept_check_threshold(&c, "as the majority (%d of %d nodes)", nmaj, known);
      accept_check_set(&c, ACCEPT_PASS, "as the majority (%d of %d nodes); %d node(s) differ", nmaj, known,
                       known - nmaj);
    } else if (major >= 0) {
      accept_check_text(&c, "%s", pr[n].v[p]);
      accept_check_threshold(&c, "as the majority (%d of %d nodes)", nmaj, known);
      strbuf_printf(&b, "%s differs from the majority in %s: %s has %s; the majority (%d of %d nodes: ", hosts[n],
                    g_prop_name[p], hosts[n], pr[n].v[p], nmaj, known);
      host_list(&b, members, nmaj, hosts);
      strbuf_printf(&b, ") has %s", pr[major].v[p]);
      accept_check_set(&c, ACCEPT_FAIL, "%s", strbuf_str(&b));
    } else {
      /* No value is held by more than half of the nodes: nobody can be blamed alone, so every
       * node fails and the report lists who has what. */
      accept_check_text(&c, "%s", pr[n].v[p]);
      accept_check_threshold(&c, "no majority (%d values, %d nodes)", ngroups, known);
      strbuf_printf(&b, "no majority in %s among the %d nodes, so the odd one out cannot be told: ", g_prop_name[p],
                    known);
      int first = 1;
      for (int g = 0; g < nnodes; g++) {
        if (group[g] != g) continue;
        int k = 0;
        for (int m = 0; m < nnodes; m++)
          if (group[m] == g) members[k++] = m;
        strbuf_printf(&b, "%s", first ? "" : "; ");
        first = 0;
        host_list(&b, members, k, hosts);
        strbuf_printf(&b, " %s %s", k == 1 ? "has" : "have", pr[g].v[p]);
      }
      accept_check_set(&c, ACCEPT_FAIL, "%s", strbuf_str(&b));
    }
    strbuf_free(&b);
    rc = accept_list_add(out, &c);
  }
done:
  free(group);
  free(count);
  free(members);
  return rc;
}

int accept_compare_nodes(const accept_profile_t *profiles, int nnodes, const char *const *hosts,
                         const accept_opts_t *o, accept_list_t *out) {
  if (!o->compare) return GPL_OK;
  if (nnodes < 2) {
    accept_check_t c;
    accept_check_init(&c, "majority", nnodes == 1 ? hosts[0] : "", nnodes == 1 ? 0 : -1, -1, "");
    accept_check_set(&c, ACCEPT_SKIP, "one node in the job: no other node to compare its hardware with");
    return accept_list_add(out, &c);
  }
  for (int p = 0; p < ACCEPT_NPROPS; p++) {
    if (explicit_key(o, (accept_prop_t)p)) continue; /* its own check holds it to the expectation */
    CHECK(compare_prop(profiles, nnodes, hosts, (accept_prop_t)p, out));
  }
  return GPL_OK;
}
