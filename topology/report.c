/* JSON and text rendering of a topology and its placement plan (`gpulaunch topo`). */
#include "topology/report.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/strbuf.h"

static const char *link_name(topo_link_t s) {
  return s == TOPO_LINK_UP ? "up" : s == TOPO_LINK_DOWN ? "down" : "unknown";
}

static cJSON *int_array(const int *v, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
  return a;
}

static void add_str_or_null(cJSON *o, const char *key, const char *s) {
  if (s && *s) cJSON_AddStringToObject(o, key, s);
  else cJSON_AddNullToObject(o, key);
}

static cJSON *nic_ref(const topo_t *t, const path_entry_t *e) {
  const topo_nic_t *n = &t->nics[e->nic];
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "name", n->name);
  add_str_or_null(o, "netdev", topo_nic_netdev(n));
  cJSON_AddStringToObject(o, "pci", n->pci);
  cJSON_AddStringToObject(o, "path", path_class_name(e->path.cls));
  add_str_or_null(o, "rdma", n->rdma);
  cJSON_AddNumberToObject(o, "hops", e->path.hops);
  if (e->path.numa_dist) cJSON_AddNumberToObject(o, "numa_distance", (double)e->path.numa_dist);
  else cJSON_AddNullToObject(o, "numa_distance");
  return o;
}

static cJSON *gpu_json(const topo_t *t, const topo_gpu_t *g, const path_entry_t *ranked) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, "index", g->index);
  cJSON_AddStringToObject(o, "pci", g->pci);
  add_str_or_null(o, "model", g->model);
  add_str_or_null(o, "uuid", g->uuid);
  cJSON_AddItemToObject(o, "numa", int_array(g->numa, g->nnuma));
  cJSON_AddStringToObject(o, "cpus", g->cpus ? g->cpus : "");
  cJSON *os = cJSON_AddArrayToObject(o, "osdevs");
  char buf[sizeof g->osdevs];
  memcpy(buf, g->osdevs, sizeof buf);
  char *save = NULL;
  for (char *w = strtok_r(buf, ",", &save); os && w; w = strtok_r(NULL, ",", &save))
    cJSON_AddItemToArray(os, cJSON_CreateString(w));
  if (g->link_gbps > 0) cJSON_AddNumberToObject(o, "link_gbps", g->link_gbps);
  else cJSON_AddNullToObject(o, "link_gbps");
  cJSON *nics = cJSON_AddArrayToObject(o, "nics");
  path_entry_t *own = NULL;
  if (!ranked && t->nnics > 0) { /* no plan: rank here */
    own = calloc((size_t)t->nnics, sizeof *own);
    if (own) path_rank_nics(t, g, NULL, own);
    ranked = own;
  }
  for (int k = 0; nics && ranked && k < t->nnics; k++) cJSON_AddItemToArray(nics, nic_ref(t, &ranked[k]));
  free(own);
  return o;
}

static cJSON *nic_json(const topo_nic_t *n) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, "index", n->index);
  cJSON_AddStringToObject(o, "name", n->name);
  add_str_or_null(o, "rdma", n->rdma);
  add_str_or_null(o, "netdev", topo_nic_netdev(n));
  cJSON *nd = cJSON_AddArrayToObject(o, "netdevs");
  for (int k = 0; nd && k < n->nnetdev; k++) cJSON_AddItemToArray(nd, cJSON_CreateString(n->netdevs[k]));
  cJSON_AddStringToObject(o, "pci", n->pci);
  add_str_or_null(o, "model", n->model);
  cJSON_AddNumberToObject(o, "port", n->port);
  cJSON_AddItemToObject(o, "numa", int_array(n->numa, n->nnuma));
  cJSON_AddStringToObject(o, "cpus", n->cpus ? n->cpus : "");
  cJSON_AddStringToObject(o, "state", link_name(n->state));
  if (n->speed_mbps > 0) cJSON_AddNumberToObject(o, "speed_mbps", n->speed_mbps);
  else cJSON_AddNullToObject(o, "speed_mbps");
  return o;
}

static cJSON *rank_json(const topo_t *t, const plan_rank_t *r) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, "local_rank", r->local_rank);
  if (r->gpu >= 0) {
    cJSON_AddNumberToObject(o, "gpu", r->gpu);
    cJSON_AddStringToObject(o, "gpu_pci", t->gpus[r->gpu].pci);
  } else {
    cJSON_AddNullToObject(o, "gpu");
    cJSON_AddNullToObject(o, "gpu_pci");
  }
  cJSON_AddStringToObject(o, "cpus", r->cpus ? r->cpus : "");
  cJSON_AddStringToObject(o, "bind", plan_bind_name(r->bind));
  if (r->numa >= 0) cJSON_AddNumberToObject(o, "numa", r->numa);
  if (r->nic >= 0) {
    cJSON_AddStringToObject(o, "nic", t->nics[r->nic].name);
    cJSON_AddStringToObject(o, "nic_pci", t->nics[r->nic].pci);
    cJSON_AddStringToObject(o, "path", path_class_name(r->nic_path.cls));
  } else {
    cJSON_AddNullToObject(o, "nic");
    cJSON_AddNullToObject(o, "nic_pci");
    cJSON_AddNullToObject(o, "path");
  }
  cJSON *hca = cJSON_AddArrayToObject(o, "rdma");
  for (int k = 0; hca && k < r->nnics; k++) cJSON_AddItemToArray(hca, cJSON_CreateString(t->nics[r->nics[k]].rdma));
  cJSON *env = cJSON_AddObjectToObject(o, "env");
  cJSON *why = cJSON_AddObjectToObject(o, "why");
  cJSON *why_env = why ? cJSON_AddObjectToObject(why, "env") : NULL;
  for (int k = 0; env && k < r->nenv; k++) {
    cJSON_AddStringToObject(env, r->env[k].name, r->env[k].value);
    if (why_env) cJSON_AddStringToObject(why_env, r->env[k].name, r->env[k].reason);
  }
  if (why) {
    cJSON_AddStringToObject(why, "gpu", r->why_gpu);
    cJSON_AddStringToObject(why, "cpus", r->why_cpus);
    cJSON_AddStringToObject(why, "nic", r->why_nic);
  }
  return o;
}

cJSON *report_json(const topo_t *t, const plan_t *p) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  cJSON_AddStringToObject(root, "source", t->source);
  add_str_or_null(root, "host", t->host);
  cJSON_AddBoolToObject(root, "live", t->live);
  cJSON_AddStringToObject(root, "cpus", t->cpus ? t->cpus : "");
  cJSON *numa = cJSON_AddArrayToObject(root, "numa");
  for (int i = 0; numa && i < t->nnuma; i++) {
    cJSON *n = cJSON_CreateObject();
    if (!n) break;
    hwloc_obj_t obj = hwloc_get_numanode_obj_by_os_index(t->hw, (unsigned)t->numa_os[i]);
    char *cpus = NULL;
    cJSON_AddNumberToObject(n, "os_index", t->numa_os[i]);
    if (obj && obj->cpuset && hwloc_bitmap_list_asprintf(&cpus, obj->cpuset) >= 0) cJSON_AddStringToObject(n, "cpus", cpus);
    free(cpus);
    if (t->dist) {
      cJSON *d = cJSON_AddArrayToObject(n, "distances");
      for (int j = 0; d && j < t->nnuma; j++)
        cJSON_AddItemToArray(d, cJSON_CreateNumber((double)t->dist[i * t->nnuma + j]));
    }
    cJSON_AddItemToArray(numa, n);
  }
  cJSON *gpus = cJSON_AddArrayToObject(root, "gpus");
  for (int g = 0; gpus && g < t->ngpus; g++)
    cJSON_AddItemToArray(gpus, gpu_json(t, &t->gpus[g], p ? plan_gpu_nics(p, g) : NULL));
  cJSON *nics = cJSON_AddArrayToObject(root, "nics");
  for (int i = 0; nics && i < t->nnics; i++) cJSON_AddItemToArray(nics, nic_json(&t->nics[i]));
  if (p) {
    cJSON_AddNumberToObject(root, "ranks_per_node", p->nranks);
    cJSON_AddStringToObject(root, "bind", plan_bind_name(p->bind));
    cJSON *ranks = cJSON_AddArrayToObject(root, "ranks");
    for (int i = 0; ranks && i < p->nranks; i++) cJSON_AddItemToArray(ranks, rank_json(t, &p->ranks[i]));
  }
  /* Any failed allocation above leaves a hole: report it as a whole failure, not a short file. */
  char *probe = cJSON_PrintUnformatted(root);
  if (!probe || !gpus || !nics || !numa) {
    free(probe);
    cJSON_Delete(root);
    return NULL;
  }
  free(probe);
  return root;
}

/* ---- text ---------------------------------------------------------------------------------- */

int report_text(FILE *f, const topo_t *t, const plan_t *p) {
  strbuf_t b = STRBUF_INIT;
  strbuf_printf(&b, "Topology: %s%s%s%s: %d GPU%s, %d NIC%s, %d NUMA node%s\n", t->source, t->host[0] ? " (host " : "",
                t->host, t->host[0] ? ")" : "", t->ngpus, t->ngpus == 1 ? "" : "s", t->nnics, t->nnics == 1 ? "" : "s",
                t->nnuma, t->nnuma == 1 ? "" : "s");
  path_entry_t *own = t->nnics ? calloc((size_t)t->nnics, sizeof *own) : NULL;
  if (t->ngpus > 0) {
    /* The matrix: one row per GPU, one column per NIC in bus order (nvidia-smi topo -m). */
    strbuf_printf(&b, "\n%-6s", "");
    for (int i = 0; i < t->nnics; i++) {
      char col[16];
      snprintf(col, sizeof col, "NIC%d", i);
      strbuf_printf(&b, " %-5s", col);
    }
    strbuf_printf(&b, "  %-8s %-24s %s\n", "NUMA", "CPU affinity", "PCI / model");
    for (int g = 0; g < t->ngpus; g++) {
      const topo_gpu_t *gpu = &t->gpus[g];
      strbuf_printf(&b, "GPU%-3d", g);
      for (int i = 0; i < t->nnics; i++) {
        path_t pa;
        path_gpu_nic(t, gpu, &t->nics[i], &pa);
        strbuf_printf(&b, " %-5s", path_class_name(pa.cls));
      }
      char numa[128];
      strbuf_printf(&b, "  %-8s %-24s %s%s%s\n", topo_numa_str(gpu->numa, gpu->nnuma, numa, sizeof numa), gpu->cpus,
                    gpu->pci, gpu->model[0] ? " " : "", gpu->model);
    }
  } else {
    strbuf_printf(&b, "\nNo GPUs.\n");
  }
  if (t->nnics > 0) {
    strbuf_printf(&b, "\nNIC legend:\n");
    for (int i = 0; i < t->nnics; i++) {
      const topo_nic_t *n = &t->nics[i];
      char numa[128], netdevs[4 * TOPO_NAME_LEN + 8] = "";
      for (int k = 0; k < n->nnetdev; k++) {
        strcat(netdevs, k ? "," : "");
        strcat(netdevs, n->netdevs[k]);
      }
      strbuf_printf(&b, "  NIC%-3d %-12s %-14s %s  NUMA %-4s %s%s port %d, link %s", i, n->name[0] ? n->name : "-",
                    n->rdma[0] ? (netdevs[0] ? netdevs : "(RDMA only)") : "(no RDMA)", n->pci,
                    topo_numa_str(n->numa, n->nnuma, numa, sizeof numa), n->rdma[0] ? "RDMA" : "netdev",
                    n->rdma[0] && netdevs[0] ? "+netdev" : "", n->port, link_name(n->state));
      if (n->speed_mbps > 0) strbuf_printf(&b, " %d Mb/s", n->speed_mbps);
      strbuf_printf(&b, "\n");
    }
    strbuf_printf(&b, "\nLegend: PIX = same PCIe switch, PXB = several PCIe switches, PHB = same host bridge,\n"
                      "        NODE = same NUMA node, other host bridge, SYS = other NUMA node\n");
  } else {
    strbuf_printf(&b, "\nNo NICs.\n");
  }
  if (t->ngpus > 0 && t->nnics > 0) {
    strbuf_printf(&b, "\nNearest NICs per GPU (best first):\n");
    for (int g = 0; g < t->ngpus; g++) {
      const path_entry_t *L = p ? plan_gpu_nics(p, g) : NULL;
      if (!L && own) {
        path_rank_nics(t, &t->gpus[g], NULL, own);
        L = own;
      }
      if (!L) continue;
      strbuf_printf(&b, "  GPU%-3d", g);
      for (int k = 0; k < t->nnics && k < 4; k++)
        strbuf_printf(&b, " %s%s(%s)", k ? "" : "", t->nics[L[k].nic].name, path_class_name(L[k].path.cls));
      strbuf_printf(&b, "%s\n", t->nnics > 4 ? " ..." : "");
    }
  }
  if (p) {
    strbuf_printf(&b, "\nPlan: %d rank%s per node, bind = %s\n", p->nranks, p->nranks == 1 ? "" : "s", plan_bind_name(p->bind));
    for (int i = 0; i < p->nranks; i++) {
      const plan_rank_t *r = &p->ranks[i];
      char gpu[32];
      if (r->gpu >= 0) snprintf(gpu, sizeof gpu, "GPU%d", r->gpu);
      else snprintf(gpu, sizeof gpu, "no GPU");
      strbuf_printf(&b, "  local rank %d: %s, cpus %s, NIC %s%s%s%s\n", i, gpu, r->cpus,
                    r->nic >= 0 ? t->nics[r->nic].name : "none", r->nic >= 0 ? " (" : "",
                    r->nic >= 0 ? path_class_name(r->nic_path.cls) : "", r->nic >= 0 ? ")" : "");
      strbuf_printf(&b, "    gpu:  %s\n    cpus: %s\n    nic:  %s\n", r->why_gpu, r->why_cpus, r->why_nic);
      for (int k = 0; k < r->nenv; k++)
        strbuf_printf(&b, "    %s=%s\n        # %s\n", r->env[k].name, r->env[k].value, r->env[k].reason);
    }
  }
  free(own);
  int rc = 0;
  if (b.oom) rc = GPL_ENOMEM;
  else if (fputs(strbuf_str(&b), f) == EOF || fflush(f) != 0) rc = GPL_EIO;
  strbuf_free(&b);
  return rc;
}
