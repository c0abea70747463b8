/* Placement plan: GPU per local rank, CPU cores split among ranks sharing a domain, nearest NIC, env and binding. */
#include "topology/plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/check.h"
#include "common/log.h"
#include "common/util.h"

void plan_opts_default(plan_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->bind = PLAN_BIND_CORES;
  o->nics_per_rank = 1;
}

int plan_bind_parse(const char *s, plan_bind_t *out) {
  if (!s) return GPL_EINVAL;
  if (strcasecmp(s, "none") == 0 || strcasecmp(s, "off") == 0) *out = PLAN_BIND_NONE;
  else if (strcasecmp(s, "numa") == 0) *out = PLAN_BIND_NUMA;
  else if (strcasecmp(s, "cores") == 0 || strcasecmp(s, "core") == 0) *out = PLAN_BIND_CORES;
  else return GPL_EINVAL;
  return 0;
}

const char *plan_bind_name(plan_bind_t b) {
  return b == PLAN_BIND_NONE ? "none" : b == PLAN_BIND_NUMA ? "numa" : "cores";
}

static void set_err(const plan_opts_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(const plan_opts_t *o, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  LOG_ERROR("%s", buf);
  if (o->err && o->errlen) util_strlcpy(o->err, buf, o->errlen);
}

int plan_env_set(plan_rank_t *r, const char *name, const char *value, const char *reason) {
  if (!name || !*name || !value) return GPL_EINVAL;
  if (strlen(value) >= PLAN_VALUE_LEN || strlen(name) >= sizeof r->env[0].name) return GPL_ERANGE;
  plan_env_t *e = NULL;
  for (int i = 0; i < r->nenv; i++)
    if (strcmp(r->env[i].name, name) == 0) e = &r->env[i];
  if (!e) {
    if (r->nenv == PLAN_ENV_MAX) return GPL_ERANGE;
    e = &r->env[r->nenv++];
  }
  util_strlcpy(e->name, name, sizeof e->name);
  util_strlcpy(e->value, value, sizeof e->value);
  util_strlcpy(e->reason, reason ? reason : "", sizeof e->reason);
  return 0;
}

const char *plan_env_get(const plan_rank_t *r, const char *name) {
  for (int i = 0; i < r->nenv; i++)
    if (strcmp(r->env[i].name, name) == 0) return r->env[i].value;
  return NULL;
}

const path_entry_t *plan_gpu_nics(const plan_t *p, int g) {
  if (g < 0 || g >= p->ngpus || !p->gpu_nics) return NULL;
  return &p->gpu_nics[(size_t)g * (size_t)p->nnics];
}

int plan_rank_ncores(const topo_t *t, const plan_rank_t *r) {
  int n = hwloc_get_nbobjs_inside_cpuset_by_type(t->hw, r->cpuset, HWLOC_OBJ_CORE);
  if (n <= 0) n = hwloc_get_nbobjs_inside_cpuset_by_type(t->hw, r->cpuset, HWLOC_OBJ_PU);
  return n > 0 ? n : 1;
}

void plan_free(plan_t *p) {
  if (!p) return;
  for (int i = 0; i < p->nranks; i++) {
    hwloc_bitmap_free(p->ranks[i].cpuset);
    free(p->ranks[i].cpus);
  }
  free(p->ranks);
  free(p->gpu_nics);
  free(p->hca);
  free(p);
}

/* ---- GPUs ---------------------------------------------------------------------------------- */

/* The GPUs this node may use, as indexes into t->gpus: all of them, or those an inherited
 * CUDA_VISIBLE_DEVICES names (numbers in bus order, or GPU UUIDs). */
static int usable_gpus(const topo_t *t, const plan_opts_t *o, int *use, int *nuse) {
  *nuse = 0;
  if (!o->visible) {
    for (int i = 0; i < t->ngpus; i++) use[(*nuse)++] = i;
    return 0;
  }
  char *copy = strdup(o->visible);
  ALLOCCHECK(copy);
  char *save = NULL;
  for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    w = util_trim(w);
    int found = -1;
    long idx;
    if (util_parse_long(w, 0, 1 << 20, &idx) == 0) {
      if (idx < t->ngpus) found = (int)idx;
    } else {
      for (int i = 0; i < t->ngpus; i++)
        if (t->gpus[i].uuid[0] && strcasecmp(t->gpus[i].uuid, w) == 0) found = i;
    }
    if (found < 0) {
      /* CUDA stops at the first invalid entry; so do we. */
      LOG_WARN("CUDA_VISIBLE_DEVICES entry '%s' names no GPU of this node; the entries after it are ignored too", w);
      break;
    }
    int dup = 0;
    for (int k = 0; k < *nuse; k++) dup |= use[k] == found;
    if (!dup) use[(*nuse)++] = found;
  }
  free(copy);
  return 0;
}

/* ---- CPUs ---------------------------------------------------------------------------------- */

/* Split avail among s ranks: contiguous blocks of whole cores (all their PUs); fewer cores than
 * ranks: blocks of PUs; fewer PUs than ranks: PUs shared round-robin. out[k] receives rank k's set. */
static int split_cpus(const topo_t *t, hwloc_const_bitmap_t avail, int s, hwloc_bitmap_t *out, const char **how) {
  hwloc_obj_type_t type = HWLOC_OBJ_CORE;
  int n = hwloc_get_nbobjs_inside_cpuset_by_type(t->hw, avail, HWLOC_OBJ_CORE);
  *how = "whole cores";
  if (n < s) {
    type = HWLOC_OBJ_PU;
    n = hwloc_get_nbobjs_inside_cpuset_by_type(t->hw, avail, HWLOC_OBJ_PU);
    *how = n >= s ? "fewer cores than ranks: hardware threads" : "fewer CPUs than ranks: all of them shared";
  }
  if (n <= 0) { /* no object inside (odd file): everyone gets the whole set */
    for (int k = 0; k < s; k++) hwloc_bitmap_copy(out[k], avail);
    *how = "no cores found: whole set shared";
    return 0;
  }
  if (n < s) { /* pinning several ranks to one CPU each is worse than letting them share */
    for (int k = 0; k < s; k++) hwloc_bitmap_copy(out[k], avail);
    return 0;
  }
  int base = n / s, extra = n % s, next = 0;
  for (int k = 0; k < s; k++) {
    int take = base + (k < extra);
    hwloc_bitmap_zero(out[k]);
    for (int j = 0; j < take; j++, next++) {
      hwloc_obj_t o = hwloc_get_obj_inside_cpuset_by_type(t->hw, avail, type, (unsigned)next);
      hwloc_bitmap_or(out[k], out[k], o->cpuset);
    }
    hwloc_bitmap_and(out[k], out[k], avail);
  }
  return 0;
}

/* The locality domain of each rank: its GPU's cpuset, or its NUMA node's. */
static hwloc_const_bitmap_t rank_domain(const topo_t *t, const plan_rank_t *r) {
  if (r->gpu >= 0) return t->gpus[r->gpu].cpuset;
  hwloc_obj_t numa = hwloc_get_numanode_obj_by_os_index(t->hw, (unsigned)r->numa);
  return numa && numa->cpuset && !hwloc_bitmap_iszero(numa->cpuset) ? numa->cpuset
                                                                    : hwloc_topology_get_topology_cpuset(t->hw);
}

static void domain_name(const topo_t *t, const plan_rank_t *r, char *buf, size_t len) {
  if (r->gpu >= 0) {
    char numa[64];
    const topo_gpu_t *g = &t->gpus[r->gpu];
    util_fmt(buf, len, "GPU%d's local CPUs %s (NUMA %s)", g->index, g->cpus, topo_numa_str(g->numa, g->nnuma, numa, sizeof numa));
  } else {
    util_fmt(buf, len, "NUMA %d's CPUs", r->numa);
  }
}

static int assign_cpus(const topo_t *t, plan_t *p) {
  hwloc_const_bitmap_t all = hwloc_topology_get_topology_cpuset(t->hw);
  int n = p->nranks, rc = 0;
  hwloc_bitmap_t taken = hwloc_bitmap_alloc(), avail = hwloc_bitmap_alloc();
  hwloc_bitmap_t *sets = calloc((size_t)n, sizeof *sets);
  int *members = calloc((size_t)n, sizeof *members), *done = calloc((size_t)n, sizeof *done);
  if (!taken || !avail || !sets || !members || !done) {
    rc = GPL_ENOMEM;
    goto out;
  }
  for (int i = 0; i < n; i++) {
    plan_rank_t *r = &p->ranks[i];
    r->bind = p->bind;
    r->cpuset = hwloc_bitmap_alloc();
    sets[i] = hwloc_bitmap_alloc();
    if (!r->cpuset || !sets[i]) {
      rc = GPL_ENOMEM;
      goto out;
    }
  }
  /* Ranks with the same domain form a group, in order of their first rank. */
  for (int i = 0; i < n; i++) {
    if (done[i]) continue;
    hwloc_const_bitmap_t dom = rank_domain(t, &p->ranks[i]);
    int s = 0;
    for (int j = i; j < n; j++)
      if (!done[j] && hwloc_bitmap_isequal(rank_domain(t, &p->ranks[j]), dom)) members[s++] = j, done[j] = 1;
    char dname[PLAN_REASON_LEN / 2];
    domain_name(t, &p->ranks[i], dname, sizeof dname);
    if (p->bind == PLAN_BIND_NONE) {
      for (int k = 0; k < s; k++) {
        plan_rank_t *r = &p->ranks[members[k]];
        hwloc_bitmap_copy(r->cpuset, all);
        util_fmt(r->why_cpus, sizeof r->why_cpus, "not bound (bind = none); %s", dname);
      }
      continue;
    }
    if (p->bind == PLAN_BIND_NUMA) {
      for (int k = 0; k < s; k++) {
        plan_rank_t *r = &p->ranks[members[k]];
        hwloc_bitmap_copy(r->cpuset, dom);
        util_fmt(r->why_cpus, sizeof r->why_cpus, "%s, whole (bind = numa)%s", dname,
                 s > 1 ? ", shared with the other ranks there" : "");
      }
      continue;
    }
    /* Cores: what earlier groups took is not handed out twice (domains may overlap, e.g. a GPU
     * attached to the whole machine); when nothing is left, the group shares its domain. */
    hwloc_bitmap_andnot(avail, dom, taken);
    const char *overlap = "";
    if (hwloc_bitmap_iszero(avail)) {
      hwloc_bitmap_copy(avail, dom);
      overlap = "; overlaps other ranks' CPUs (no free CPU left in the domain)";
    }
    const char *how = "";
    CHECKGOTO(split_cpus(t, avail, s, sets, &how), rc, out);
    for (int k = 0; k < s; k++) {
      plan_rank_t *r = &p->ranks[members[k]];
      hwloc_bitmap_copy(r->cpuset, sets[k]);
      hwloc_bitmap_or(taken, taken, sets[k]);
      int ncores = hwloc_get_nbobjs_inside_cpuset_by_type(t->hw, sets[k], HWLOC_OBJ_CORE);
      if (s == 1)
        util_fmt(r->why_cpus, sizeof r->why_cpus, "%s: all %d cores%s", dname, ncores, overlap);
      else if (hwloc_bitmap_isequal(sets[k], avail))
        util_fmt(r->why_cpus, sizeof r->why_cpus, "%s shared by %d ranks (%s)%s", dname, s, how, overlap);
      else
        util_fmt(r->why_cpus, sizeof r->why_cpus, "%s split among %d ranks (%s): share %d of %d, %d core(s)%s", dname, s,
                 how, k + 1, s, ncores, overlap);
    }
  }
  for (int i = 0; i < n; i++)
    if (hwloc_bitmap_list_asprintf(&p->ranks[i].cpus, p->ranks[i].cpuset) < 0) {
      rc = GPL_ENOMEM;
      goto out;
    }
out:
  if (sets)
    for (int i = 0; i < n; i++) hwloc_bitmap_free(sets[i]);
  free(sets);
  free(members);
  free(done);
  hwloc_bitmap_free(taken);
  hwloc_bitmap_free(avail);
  return rc;
}

/* ---- NICs ---------------------------------------------------------------------------------- */

/* From the run of entries tied with L[first] (equally good; nearest first), the least used NIC
 * not already in have[]; on equal use the nearer one. */
static int least_used(const path_entry_t *L, int n, int first, const int *usage, const int *have, int nhave) {
  int best = -1;
  for (int i = first; i < n && path_entry_tie(&L[i], &L[first]); i++) {
    int dup = 0;
    for (int k = 0; k < nhave; k++) dup |= have[k] == L[i].nic;
    if (dup) continue;
    if (best < 0 || usage[L[i].nic] < usage[L[best].nic]) best = i;
  }
  return best;
}

static int count_ties(const path_entry_t *L, int n, int first) {
  int c = 0;
  for (int i = first; i < n && path_entry_tie(&L[i], &L[first]); i++) c++;
  return c;
}

static void describe_path(const topo_t *t, const plan_rank_t *r, const path_entry_t *e, char *buf, size_t len) {
  const topo_nic_t *nic = &t->nics[e->nic];
  char to[48], dist[48] = "";
  if (r->gpu >= 0) util_fmt(to, sizeof to, "GPU%d", r->gpu);
  else util_fmt(to, sizeof to, "NUMA %d", r->numa);
  if ((e->path.cls == PATH_NODE || e->path.cls == PATH_SYS) && e->path.numa_dist)
    util_fmt(dist, sizeof dist, ", NUMA distance %llu", e->path.numa_dist);
  const char *desc = r->gpu >= 0 ? path_class_desc(e->path.cls) : e->path.cls == PATH_NODE ? "on this NUMA node" : "other NUMA node";
  util_fmt(buf, len, "%s: %s to %s (%s%s)%s", nic->name, path_class_name(e->path.cls), to, desc, dist,
      nic->state == TOPO_LINK_DOWN ? ", link down" : "");
}

static int assign_nics(const topo_t *t, plan_t *p, const plan_opts_t *o) {
  if (t->nnics == 0) {
    for (int i = 0; i < p->nranks; i++) {
      p->ranks[i].nic = -1;
      util_strlcpy(p->ranks[i].why_nic, "no NIC in the topology", sizeof p->ranks[i].why_nic);
    }
    return 0;
  }
  int per = o->nics_per_rank > 0 ? GPL_MIN(o->nics_per_rank, PLAN_MAX_NICS) : 1;
  int *usage = calloc((size_t)t->nnics, sizeof *usage);
  path_entry_t *own = calloc((size_t)t->nnics, sizeof *own);
  if (!usage || !own) {
    free(usage);
    free(own);
    return GPL_ENOMEM;
  }
  for (int i = 0; i < p->nranks; i++) {
    plan_rank_t *r = &p->ranks[i];
    const path_entry_t *L = plan_gpu_nics(p, r->gpu);
    if (!L) {
      hwloc_obj_t numa = hwloc_get_numanode_obj_by_os_index(t->hw, (unsigned)r->numa);
      path_rank_nics(t, NULL, numa ? numa->nodeset : hwloc_topology_get_topology_nodeset(t->hw), own);
      L = own;
    }
    int b = least_used(L, t->nnics, 0, usage, NULL, 0);
    r->nic = L[b].nic;
    r->nic_path = L[b].path;
    usage[r->nic]++;
    char desc[PLAN_REASON_LEN / 2];
    describe_path(t, r, &L[b], desc, sizeof desc);
    int ties = count_ties(L, t->nnics, 0);
    if (ties > 1)
      util_fmt(r->why_nic, sizeof r->why_nic, "%s; one of %d equally good NICs (same class), least used first", desc, ties);
    else
      util_fmt(r->why_nic, sizeof r->why_nic, "%s; the nearest", desc);

    /* NCCL_IB_HCA: the rank's RDMA devices. When its nearest NIC is a plain netdev, the
     * nearest RDMA device still carries NCCL's traffic. */
    int first_rdma = -1;
    for (int k = 0; k < t->nnics && first_rdma < 0; k++)
      if (L[k].rdma) first_rdma = k;
    if (first_rdma < 0) continue;
    int at = t->nics[r->nic].rdma[0] ? b : least_used(L, t->nnics, first_rdma, usage, NULL, 0);
    r->nics[r->nnics++] = L[at].nic;
    if (at != b) usage[L[at].nic]++;
    while (r->nnics < per) {
      int more = least_used(L, t->nnics, at, usage, r->nics, r->nnics);
      if (more < 0) break;
      r->nics[r->nnics++] = L[more].nic;
      usage[L[more].nic]++;
    }
  }
  free(usage);
  free(own);
  return 0;
}

/* ---- environment --------------------------------------------------------------------------- */

int plan_visible_parse(const char *s, plan_visible_t *out) {
  if (!s) return GPL_EINVAL;
  if (strcasecmp(s, "node") == 0) *out = PLAN_VISIBLE_NODE;
  else if (strcasecmp(s, "rank") == 0) *out = PLAN_VISIBLE_RANK;
  else return GPL_EINVAL;
  return 0;
}

int plan_env_node_wide(const plan_t *p, const char *name) {
  if (strcmp(name, "CUDA_VISIBLE_DEVICES") == 0) return p->visible_gpus == PLAN_VISIBLE_NODE;
  return strcmp(name, "CUDA_DEVICE_ORDER") == 0 || strcmp(name, "NCCL_IB_HCA") == 0;
}

/* Is an entry as near as the GPU's nearest RDMA entry b (path_entry_tie) and an RDMA NIC? */
static int nearest_tie(const path_entry_t *a, const path_entry_t *b) { return a->rdma && path_entry_tie(a, b); }

/* PCIe link of a NIC, 0 when the file does not say. A NIC whose link is this many times slower
 * than an equally near one is a management or storage function, not the fabric (p6-b200's
 * ConnectX-7 functions at 3.9 GB/s beside 63 GB/s EFAs). */
#define SLOW_LINK_FACTOR 4.0f

/* The node's NCCL_IB_HCA set: every RDMA NIC nearest to at least one of the usable GPUs.
 * NCCL picks the NIC for each GPU and channel itself among those it is allowed; it must be
 * allowed the same set on every rank of the node (its rings are built from all of them), and
 * one NIC per rank would halve the bandwidth of GPUs that have two. */
static int node_hca(const topo_t *t, plan_t *p, const int *use, int nuse) {
  if (t->nnics == 0 || nuse == 0) return 0;
  char *in = calloc((size_t)t->nnics, 1);
  ALLOCCHECK(in);
  for (int u = 0; u < nuse; u++) {
    const path_entry_t *L = plan_gpu_nics(p, use[u]);
    int b = -1;
    for (int k = 0; L && k < t->nnics && b < 0; k++)
      if (L[k].rdma) b = k;
    if (b < 0) continue;
    float best = 0;
    for (int k = b; k < t->nnics && nearest_tie(&L[k], &L[b]); k++)
      best = GPL_MAX(best, t->nics[L[k].nic].link_gbps);
    for (int k = b; k < t->nnics && nearest_tie(&L[k], &L[b]); k++) {
      float g = t->nics[L[k].nic].link_gbps;
      if (g > 0 && best > 0 && g * SLOW_LINK_FACTOR < best) {
        LOG_DEBUG(TOPO, "GPU%d: %s is as near as %s but its PCIe link is %.1f GB/s against %.1f: not in NCCL_IB_HCA",
                  use[u], t->nics[L[k].nic].name, t->nics[L[b].nic].name, g, best);
        continue;
      }
      in[L[k].nic] = 1;
    }
  }
  p->hca = calloc((size_t)t->nnics, sizeof *p->hca);
  if (!p->hca) {
    free(in);
    return GPL_ENOMEM;
  }
  for (int i = 0; i < t->nnics; i++)
    if (in[i]) p->hca[p->nhca++] = i;
  free(in);
  return 0;
}

/* An inherited CUDA_VISIBLE_DEVICES written with UUIDs is answered with UUIDs. */
static int visible_uses_uuids(const char *visible) {
  long v;
  char first[128];
  if (!visible) return 0;
  size_t n = strcspn(visible, ",");
  util_fmt(first, sizeof first, "%.*s", (int)GPL_MIN(n, sizeof first - 1), visible);
  return util_parse_long(util_trim(first), 0, 1 << 20, &v) != 0;
}

static int fill_env(const topo_t *t, plan_t *p, const plan_opts_t *o) {
  char cvd[PLAN_VALUE_LEN] = "", hca[PLAN_VALUE_LEN] = "", why_cvd[PLAN_REASON_LEN], why_hca[PLAN_REASON_LEN] = "";
  int all_in_order = o->visible == NULL && p->nranks == t->ngpus;
  int uuids = visible_uses_uuids(o->visible);
  for (int i = 0; i < p->nranks; i++) {
    const plan_rank_t *r = &p->ranks[i];
    if (r->gpu < 0) continue;
    const topo_gpu_t *g = &t->gpus[r->gpu];
    size_t off = strlen(cvd);
    if (uuids && g->uuid[0]) util_fmt(cvd + off, sizeof cvd - off, "%s%s", i ? "," : "", g->uuid);
    else util_fmt(cvd + off, sizeof cvd - off, "%s%d", i ? "," : "", r->gpu);
    all_in_order &= r->gpu == i;
  }
  if (o->visible)
    util_fmt(why_cvd, sizeof why_cvd, "the node's GPUs in local-rank order, chosen from the inherited "
             "CUDA_VISIBLE_DEVICES=%s: device LOCAL_RANK is the rank's GPU, and the node's ranks see each "
             "other's GPUs (CUDA IPC, NVLink P2P)", o->visible);
  else
    util_fmt(why_cvd, sizeof why_cvd, "the node's GPUs in local-rank order, the same on every rank: device "
             "LOCAL_RANK is the rank's GPU, and the node's ranks see each other's GPUs (CUDA IPC, NVLink P2P)");

  for (int k = 0; k < p->nhca; k++) {
    const topo_nic_t *n = &t->nics[p->hca[k]];
    size_t off = strlen(hca);
    util_fmt(hca + off, sizeof hca - off, "%s%s:%d", k ? "," : "=", n->rdma, n->port);
  }
  if (p->nhca)
    util_fmt(why_hca, sizeof why_hca, "every RDMA NIC nearest to one of the node's %d GPU%s, the same on "
             "every rank (NCCL picks per GPU and channel among them); '=' = exact names, else NCCL reads "
             "%s as a prefix (of %s0, %s1, ...)", p->ngpus, p->ngpus == 1 ? "" : "s",
             t->nics[p->hca[0]].rdma, t->nics[p->hca[0]].rdma, t->nics[p->hca[0]].rdma);

  for (int i = 0; i < p->nranks; i++) {
    plan_rank_t *r = &p->ranks[i];
    if (r->gpu < 0) continue;
    CHECK(plan_env_set(r, "CUDA_DEVICE_ORDER", "PCI_BUS_ID",
                       "GPU numbers follow PCI bus order (nvidia-smi's), not CUDA's fastest-first"));
    if (p->visible_gpus == PLAN_VISIBLE_RANK) {
      char one[128];
      const topo_gpu_t *g = &t->gpus[r->gpu];
      if (uuids && g->uuid[0]) util_fmt(one, sizeof one, "%s", g->uuid);
      else util_fmt(one, sizeof one, "%d", r->gpu);
      char why[PLAN_REASON_LEN];
      util_fmt(why, sizeof why, "%s; one GPU per process (visible_gpus = rank): device 0, no P2P with the "
               "node's other ranks", r->why_gpu);
      CHECK(plan_env_set(r, "CUDA_VISIBLE_DEVICES", one, why));
    } else if (!all_in_order) {
      CHECK(plan_env_set(r, "CUDA_VISIBLE_DEVICES", cvd, why_cvd));
    }
    if (p->nhca) CHECK(plan_env_set(r, "NCCL_IB_HCA", hca, why_hca));
  }
  return 0;
}

/* ---- the plan ------------------------------------------------------------------------------ */

int plan_make(const topo_t *t, const plan_opts_t *o_in, plan_t **out) {
  *out = NULL;
  plan_opts_t defaults;
  plan_opts_default(&defaults);
  const plan_opts_t *o = o_in ? o_in : &defaults;
  int rc = 0;
  int *use = calloc((size_t)t->ngpus + 1, sizeof *use), nuse = 0;
  ALLOCCHECK(use);
  plan_t *p = calloc(1, sizeof *p);
  if (!p) {
    free(use);
    return GPL_ENOMEM;
  }
  p->bind = o->bind;
  p->no_gpus = o->no_gpus;
  p->visible_gpus = o->visible_gpus;
  p->ngpus = t->ngpus;
  p->nnics = t->nnics;
  CHECKGOTO(usable_gpus(t, o, use, &nuse), rc, fail);
  if (o->no_gpus) nuse = 0;
  int n = o->local_size > 0 ? o->local_size : GPL_MAX(nuse, 1);
  if (nuse > 0 && n > nuse) {
    set_err(o, "%d ranks per node but this node has %d usable GPU%s%s: run at most %d ranks per node, or "
               "disable GPUs for a CPU-only job",
            n, nuse, nuse == 1 ? "" : "s", o->visible ? " (CUDA_VISIBLE_DEVICES)" : "", nuse);
    rc = GPL_ETOPO;
    goto fail;
  }

  if (t->ngpus > 0 && t->nnics > 0) {
    p->gpu_nics = calloc((size_t)t->ngpus * (size_t)t->nnics, sizeof *p->gpu_nics);
    if (!p->gpu_nics) {
      rc = GPL_ENOMEM;
      goto fail;
    }
    for (int g = 0; g < t->ngpus; g++)
      path_rank_nics(t, &t->gpus[g], NULL, &p->gpu_nics[(size_t)g * (size_t)t->nnics]);
  }

  p->ranks = calloc((size_t)n, sizeof *p->ranks);
  if (!p->ranks) {
    rc = GPL_ENOMEM;
    goto fail;
  }
  p->nranks = n;
  /* NUMA nodes with CPUs, for ranks without a GPU: rank i goes to node floor(i * k / n), which
   * spreads few ranks across sockets and packs many evenly. */
  int numas[256], k = 0;
  for (int i = 0; i < t->nnuma && k < (int)GPL_ARRAY_LEN(numas); i++) {
    hwloc_obj_t nn = hwloc_get_numanode_obj_by_os_index(t->hw, (unsigned)t->numa_os[i]);
    if (nn && nn->cpuset && !hwloc_bitmap_iszero(nn->cpuset)) numas[k++] = t->numa_os[i];
  }
  if (k == 0) numas[k++] = t->nnuma > 0 ? t->numa_os[0] : 0;
  for (int i = 0; i < n; i++) {
    plan_rank_t *r = &p->ranks[i];
    r->local_rank = i;
    r->nic = -1;
    r->numa = -1;
    if (nuse > 0) {
      const topo_gpu_t *g = &t->gpus[use[i]];
      r->gpu = g->index;
      util_fmt(r->why_gpu, sizeof r->why_gpu, "local rank %d -> GPU%d %s%s%s%s, #%d in PCI bus order", i, g->index, g->pci,
               g->model[0] ? " (" : "", g->model, g->model[0] ? ")" : "", i);
    } else {
      r->gpu = -1;
      r->numa = numas[(int)((long)i * k / n)];
      util_fmt(r->why_gpu, sizeof r->why_gpu, "no GPU: %s; placed on NUMA %d",
               o->no_gpus ? "GPUs disabled" : t->ngpus ? "no usable GPU (CUDA_VISIBLE_DEVICES)" : "this node has none",
               r->numa);
    }
  }
  CHECKGOTO(assign_cpus(t, p), rc, fail);
  CHECKGOTO(assign_nics(t, p, o), rc, fail);
  CHECKGOTO(node_hca(t, p, use, nuse), rc, fail);
  CHECKGOTO(fill_env(t, p, o), rc, fail);
  free(use);
  *out = p;
  return 0;
fail:
  free(use);
  plan_free(p);
  return rc;
}

/* ---- binding ------------------------------------------------------------------------------- */

int plan_bind(const topo_t *t, const plan_rank_t *r, char *msg, size_t len) {
  if (len) msg[0] = 0;
  if (r->bind == PLAN_BIND_NONE) {
    util_fmt(msg, len, "not bound (bind = none)");
    return 0;
  }
  if (!t->live) {
    util_fmt(msg, len, "the topology comes from %s, not from this machine: not binding", t->source);
    LOG_INFO(TOPO, "%s", msg);
    return GPL_ENOTSUP;
  }
  hwloc_bitmap_t cur = hwloc_bitmap_alloc();
  ALLOCCHECK(cur);
  int have = hwloc_get_cpubind(t->hw, cur, HWLOC_CPUBIND_PROCESS) == 0 || hwloc_get_cpubind(t->hw, cur, 0) == 0;
  char *cur_s = NULL;
  if (have && hwloc_bitmap_list_asprintf(&cur_s, cur) < 0) cur_s = NULL;
  char whose[96];
  if (r->gpu >= 0) util_fmt(whose, sizeof whose, "GPU%d's cores %s", r->gpu, t->gpus[r->gpu].cpus);
  else util_fmt(whose, sizeof whose, "the rank's cores %s", r->cpus);
  hwloc_const_bitmap_t need = r->gpu >= 0 ? t->gpus[r->gpu].cpuset : r->cpuset;

  int rc = hwloc_set_cpubind(t->hw, r->cpuset, HWLOC_CPUBIND_PROCESS);
  if (rc < 0) rc = hwloc_set_cpubind(t->hw, r->cpuset, 0); /* at least this thread; children inherit it */
  if (rc < 0) {
    util_fmt(msg, len, "binding to %s failed: %s", r->cpus, strerror(errno));
    LOG_WARN("%s", msg);
    free(cur_s);
    hwloc_bitmap_free(cur);
    return GPL_EHWLOC;
  }
  if (have && !hwloc_bitmap_isincluded(need, cur)) {
    util_fmt(msg, len,
             "inherited binding %s %s %s (mpirun binds to package by default for more than 2 ranks; "
             "--bind-to none avoids it); replaced by %s",
             cur_s ? cur_s : "?", hwloc_bitmap_intersects(need, cur) ? "covers only part of" : "excludes", whose, r->cpus);
    LOG_WARN("%s", msg);
  } else {
    if (have && !hwloc_bitmap_isequal(cur, hwloc_topology_get_topology_cpuset(t->hw)))
      util_fmt(msg, len, "inherited binding %s narrowed to %s", cur_s ? cur_s : "?", r->cpus);
    else
      util_fmt(msg, len, "bound to %s (%s)", r->cpus, plan_bind_name(r->bind));
    LOG_INFO(TOPO, "%s", msg);
  }
  free(cur_s);
  hwloc_bitmap_free(cur);
  return 0;
}
