/* Shared checks of the topology tests: plan sanity rules and the JSON round trip. */
#include "checks.h"

#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "topology/report.h"

/* The sanity rules every plan must obey, whatever the machine; a broken one fails the case. */
void check_plan_sane(const char *ctx, const topo_t *t, const plan_t *p) {
  for (int g = 0; g < t->ngpus; g++) {
    char c[300];
    snprintf(c, sizeof c, "%s GPU%d", ctx, g);
    if (t->gpus[g].nnuma < 1) fail_msg("%s: no NUMA node", c);
    if (!t->gpus[g].cpus || !t->gpus[g].cpus[0]) fail_msg("%s: no local CPUs", c);
    if (g > 0 && strcmp(t->gpus[g - 1].pci, t->gpus[g].pci) >= 0) fail_msg("%s: not in bus order", c);
  }
  for (int i = 0; i < p->nranks; i++) {
    const plan_rank_t *r = &p->ranks[i];
    char c[300];
    snprintf(c, sizeof c, "%s rank %d", ctx, i);
    if (!r->cpus || !r->cpus[0] || hwloc_bitmap_iszero(r->cpuset)) fail_msg("%s: no CPUs", c);
    const char *hca = plan_env_get(r, "NCCL_IB_HCA");
    if (hca && hca[0] != '=') fail_msg("%s: NCCL_IB_HCA '%s' without '='", c, hca);
    if (hca && !strstr(hca, ":")) fail_msg("%s: NCCL_IB_HCA '%s' without port", c, hca);
    if (r->gpu >= 0) {
      const topo_gpu_t *g = &t->gpus[r->gpu];
      /* Cores local to the rank's GPU. */
      if (r->bind != PLAN_BIND_NONE && !hwloc_bitmap_isincluded(r->cpuset, g->cpuset))
        fail_msg("%s: CPUs %s not local to GPU%d (%s)", c, r->cpus, r->gpu, g->cpus);
    } else if (plan_env_get(r, "CUDA_VISIBLE_DEVICES") || plan_env_get(r, "NCCL_IB_HCA")) {
      fail_msg("%s: CUDA_VISIBLE_DEVICES or NCCL_IB_HCA without GPU", c);
    }
    for (int j = 0; j < i; j++) {
      const plan_rank_t *q = &p->ranks[j];
      if (r->gpu >= 0 && r->gpu == q->gpu) fail_msg("%s: same GPU as rank %d", c, j);
      /* Disjoint CPUs with bind cores, unless the domain has fewer CPUs than ranks (then they
       * share it whole, as the DGX-2H file with 2 CPUs per 8 GPUs). */
      if (r->bind == PLAN_BIND_CORES && hwloc_bitmap_intersects(r->cpuset, q->cpuset)) {
        int shared = hwloc_bitmap_isequal(r->cpuset, q->cpuset) &&
                     hwloc_get_nbobjs_inside_cpuset_by_type(t->hw, r->cpuset, HWLOC_OBJ_PU) < p->nranks;
        if (!shared) fail_msg("%s: CPUs %s overlap rank %d's %s", c, r->cpus, j, q->cpus);
      }
    }
  }
  check_plan_node_env(ctx, t, p);
}

/* The nearest RDMA NICs of a GPU by the rule EXPECTED-MAPPINGS.md states, computed here from the
 * paths and not from the plan's ranking: the best PCI class, then (no PCIe-local NIC) the
 * smallest NUMA distance, then the fewest bridges. in[i] = 1 for each; returns how many. */
static int oracle_nearest(const topo_t *t, const topo_gpu_t *g, char *in) {
  int any = 0, n = 0;
  path_t best;
  memset(&best, 0, sizeof best);
  for (int i = 0; i < t->nnics; i++) {
    path_t p;
    in[i] = 0;
    if (!t->nics[i].rdma[0]) continue;
    path_gpu_nic(t, g, &t->nics[i], &p);
    int better = !any || p.cls < best.cls || (p.cls == best.cls && p.numa_dist < best.numa_dist) ||
                 (p.cls == best.cls && p.numa_dist == best.numa_dist && p.hops < best.hops);
    if (better) best = p;
    any = 1;
  }
  for (int i = 0; any && i < t->nnics; i++) {
    path_t p;
    if (!t->nics[i].rdma[0]) continue;
    path_gpu_nic(t, g, &t->nics[i], &p);
    if (p.cls == best.cls && p.numa_dist == best.numa_dist && p.hops == best.hops) in[i] = 1, n++;
  }
  return n;
}

/* The device numbers a program sees, in order: CUDA_VISIBLE_DEVICES parsed (indexes, or UUIDs
 * mapped to indexes), or every GPU in bus order when it is unset. Returns the count. */
static int visible_list(const topo_t *t, const char *cvd, int *out, int max) {
  int n = 0;
  if (!cvd) {
    for (int g = 0; g < t->ngpus && n < max; g++) out[n++] = g;
    return n;
  }
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", cvd);
  char *save = NULL;
  for (char *w = strtok_r(buf, ",", &save); w && n < max; w = strtok_r(NULL, ",", &save)) {
    char *end = NULL;
    long v = strtol(w, &end, 10);
    if (end && *end == 0) {
      out[n++] = (int)v;
      continue;
    }
    out[n] = -1;
    for (int g = 0; g < t->ngpus; g++)
      if (strcmp(t->gpus[g].uuid, w) == 0) out[n] = g;
    n++;
  }
  return n;
}

void check_plan_node_env(const char *ctx, const topo_t *t, const plan_t *p) {
  const plan_rank_t *first = NULL;
  for (int i = 0; i < p->nranks && !first; i++)
    if (p->ranks[i].gpu >= 0) first = &p->ranks[i];
  if (!first) return;
  static const char *const node_wide[] = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NCCL_IB_HCA"};
  for (int i = 0; i < p->nranks; i++) {
    const plan_rank_t *r = &p->ranks[i];
    char c[300];
    snprintf(c, sizeof c, "%s rank %d", ctx, i);
    /* 1. The same node-wide values on every rank of the node. */
    for (size_t k = 0; k < sizeof node_wide / sizeof node_wide[0]; k++) {
      if (!plan_env_node_wide(p, node_wide[k])) continue;
      const char *a = plan_env_get(first, node_wide[k]), *b = plan_env_get(r, node_wide[k]);
      if (strcmp(a ? a : "(unset)", b ? b : "(unset)") != 0)
        fail_msg("%s: %s=%s differs from local rank %d's %s", c, node_wide[k], b ? b : "(unset)",
                    first->local_rank, a ? a : "(unset)");
    }
    /* 2. Device LOCAL_RANK of what the program sees is the planned GPU (unless one GPU per
     * process was asked for: then device 0). */
    int vis[256];
    int nv = visible_list(t, plan_env_get(r, "CUDA_VISIBLE_DEVICES"), vis, 256);
    int dev = p->visible_gpus == PLAN_VISIBLE_RANK ? 0 : r->local_rank;
    if (dev >= nv || vis[dev] != r->gpu)
      fail_msg("%s: device %d of CUDA_VISIBLE_DEVICES=%s is GPU%d, the plan says GPU%d", c, dev,
                  plan_env_get(r, "CUDA_VISIBLE_DEVICES") ? plan_env_get(r, "CUDA_VISIBLE_DEVICES") : "(unset)",
                  dev < nv ? vis[dev] : -1, r->gpu);
    if (!plan_env_get(r, "CUDA_DEVICE_ORDER")) fail_msg("%s: no CUDA_DEVICE_ORDER", c);
  }
  /* 3. NCCL_IB_HCA holds a nearest NIC of every GPU, and no NIC that is nearest to no GPU. */
  const char *hca = plan_env_get(first, "NCCL_IB_HCA");
  char *in_hca = calloc((size_t)t->nnics + 1, 1), *near = calloc((size_t)t->nnics + 1, 1),
       *near_any = calloc((size_t)t->nnics + 1, 1);
  int rdma_nics = 0;
  for (int i = 0; i < t->nnics; i++) rdma_nics += t->nics[i].rdma[0] != 0;
  if (hca) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", hca + (hca[0] == '='));
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
      char *colon = strchr(w, ':');
      if (!colon) fail_msg("%s: NCCL_IB_HCA entry '%s' without port", ctx, w);
      else *colon = 0;
      int found = -1;
      for (int i = 0; i < t->nnics; i++)
        if (strcmp(t->nics[i].rdma, w) == 0) found = i;
      if (found < 0) fail_msg("%s: NCCL_IB_HCA names '%s', no RDMA NIC of the node", ctx, w);
      else in_hca[found] = 1;
    }
  } else if (rdma_nics > 0) {
    fail_msg("%s: no NCCL_IB_HCA though the node has %d RDMA NICs", ctx, rdma_nics);
  }
  for (int g = 0; hca && g < t->ngpus; g++) {
    if (!oracle_nearest(t, &t->gpus[g], near)) continue;
    int covered = 0;
    for (int i = 0; i < t->nnics; i++) {
      covered |= near[i] && in_hca[i];
      near_any[i] |= near[i];
    }
    if (!covered) fail_msg("%s: NCCL_IB_HCA=%s holds no nearest NIC of GPU%d", ctx, hca, g);
  }
  for (int i = 0; i < t->nnics; i++)
    if (in_hca[i] && !near_any[i])
      fail_msg("%s: NCCL_IB_HCA holds %s, nearest to no GPU", ctx, t->nics[i].name);
  free(in_hca);
  free(near);
  free(near_any);
}

/* report_json printed, parsed back with cJSON, compared with the structs it came from. */
void check_json_roundtrip(const char *ctx, const topo_t *t, const plan_t *p) {
  cJSON *doc = report_json(t, p);
  char *text = doc ? cJSON_Print(doc) : NULL;
  cJSON_Delete(doc);
  cJSON *j = text ? cJSON_Parse(text) : NULL;
  free(text);
  if (!j) fail_msg("%s: JSON does not parse back", ctx);
  cJSON *gpus = cJSON_GetObjectItem(j, "gpus"), *nics = cJSON_GetObjectItem(j, "nics"), *ranks = cJSON_GetObjectItem(j, "ranks");
  assert_field_int(ctx, "gpus[] length", t->ngpus, cJSON_GetArraySize(gpus));
  assert_field_int(ctx, "nics[] length", t->nnics, cJSON_GetArraySize(nics));
  assert_field_int(ctx, "ranks[] length", p->nranks, cJSON_GetArraySize(ranks));
  for (int g = 0; g < t->ngpus && g < cJSON_GetArraySize(gpus); g++) {
    cJSON *o = cJSON_GetArrayItem(gpus, g);
    char c[300], numa[64], jn[64] = "";
    snprintf(c, sizeof c, "%s gpus[%d]", ctx, g);
    assert_field_int(c, "index", g, cJSON_GetObjectItem(o, "index")->valueint);
    assert_field_str(c, "pci", t->gpus[g].pci, cJSON_GetStringValue(cJSON_GetObjectItem(o, "pci")));
    assert_field_str(c, "cpus", t->gpus[g].cpus, cJSON_GetStringValue(cJSON_GetObjectItem(o, "cpus")));
    cJSON *a = cJSON_GetObjectItem(o, "numa"), *x;
    cJSON_ArrayForEach(x, a) snprintf(jn + strlen(jn), sizeof jn - strlen(jn), "%s%d", jn[0] ? "," : "", x->valueint);
    assert_field_str(c, "numa", topo_numa_str(t->gpus[g].numa, t->gpus[g].nnuma, numa, sizeof numa), jn);
    cJSON *gn = cJSON_GetObjectItem(o, "nics");
    assert_field_int(c, "nics[] length", t->nnics, cJSON_GetArraySize(gn));
    const path_entry_t *L = plan_gpu_nics(p, g);
    for (int k = 0; L && k < t->nnics && k < cJSON_GetArraySize(gn); k++) {
      cJSON *e = cJSON_GetArrayItem(gn, k);
      const topo_nic_t *n = &t->nics[L[k].nic];
      assert_field_str(c, "nics[].name", n->name, cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")));
      assert_field_str(c, "nics[].pci", n->pci, cJSON_GetStringValue(cJSON_GetObjectItem(e, "pci")));
      assert_field_str(c, "nics[].path", path_class_name(L[k].path.cls), cJSON_GetStringValue(cJSON_GetObjectItem(e, "path")));
      cJSON *nd = cJSON_GetObjectItem(e, "netdev");
      assert_field_str(c, "nics[].netdev", topo_nic_netdev(n), cJSON_IsNull(nd) ? NULL : cJSON_GetStringValue(nd));
      /* RDMA devices ahead of plain netdevs of the same class. */
      if (k > 0 && L[k].path.cls == L[k - 1].path.cls && L[k].rdma && !L[k - 1].rdma)
        fail_msg("%s: netdev-only NIC ahead of an RDMA NIC of the same class", c);
      if (k > 0 && L[k].path.cls < L[k - 1].path.cls) fail_msg("%s: nics[] not best first", c);
    }
  }
  for (int i = 0; i < p->nranks && i < cJSON_GetArraySize(ranks); i++) {
    const plan_rank_t *r = &p->ranks[i];
    cJSON *o = cJSON_GetArrayItem(ranks, i);
    char c[300];
    snprintf(c, sizeof c, "%s ranks[%d]", ctx, i);
    assert_field_int(c, "local_rank", i, cJSON_GetObjectItem(o, "local_rank")->valueint);
    cJSON *gpu = cJSON_GetObjectItem(o, "gpu");
    assert_field_int(c, "gpu", r->gpu, cJSON_IsNull(gpu) ? -1 : gpu->valueint);
    assert_field_str(c, "cpus", r->cpus, cJSON_GetStringValue(cJSON_GetObjectItem(o, "cpus")));
    cJSON *nic = cJSON_GetObjectItem(o, "nic");
    assert_field_str(c, "nic", r->nic >= 0 ? t->nics[r->nic].name : NULL, cJSON_IsNull(nic) ? NULL : cJSON_GetStringValue(nic));
    cJSON *env = cJSON_GetObjectItem(o, "env");
    assert_field_int(c, "env entries", r->nenv, cJSON_GetArraySize(env));
    for (int k = 0; k < r->nenv; k++)
      assert_field_str(c, r->env[k].name, r->env[k].value, cJSON_GetStringValue(cJSON_GetObjectItem(env, r->env[k].name)));
  }
  cJSON_Delete(j);
}

