/* PCI path classification (PIX/PXB/PHB/NODE/SYS) from hwloc's I/O tree and NIC ranking. */
#include "topology/path.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpulaunch/error.h"

static const char *const g_names[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};
static const char *const g_descs[] = {"same PCIe switch", "across PCIe switches, same root complex",
                                      "same PCIe host bridge", "same NUMA node, other host bridge",
                                      "other NUMA node"};

const char *path_class_name(path_class_t c) { return c >= PATH_PIX && c <= PATH_SYS ? g_names[c] : "?"; }
const char *path_class_desc(path_class_t c) { return c >= PATH_PIX && c <= PATH_SYS ? g_descs[c] : "?"; }

int path_class_parse(const char *s, path_class_t *out) {
  for (int i = PATH_PIX; i <= PATH_SYS; i++)
    if (s && strcasecmp(s, g_names[i]) == 0) {
      *out = (path_class_t)i;
      return 0;
    }
  return GPL_EINVAL;
}

/* hwloc_get_common_ancestor_obj compares depths, which are negative special values for I/O
 * objects; walk the parent chains instead. */
static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b) {
  for (hwloc_obj_t x = a; x; x = x->parent)
    for (hwloc_obj_t y = b; y; y = y->parent)
      if (x == y) return x;
  return NULL;
}

/* Bridges strictly between obj and its ancestor anc. */
static int bridges_below(hwloc_obj_t obj, hwloc_obj_t anc) {
  int n = 0;
  for (hwloc_obj_t o = obj->parent; o && o != anc; o = o->parent)
    if (o->type == HWLOC_OBJ_BRIDGE) n++;
  return n;
}

/* Bridges from obj up to its first non-I/O ancestor. */
static int bridges_to_top(hwloc_obj_t obj) {
  int n = 0;
  for (hwloc_obj_t o = obj->parent; o && hwloc_obj_type_is_io(o->type); o = o->parent)
    if (o->type == HWLOC_OBJ_BRIDGE) n++;
  return n;
}

static unsigned long long min_distance(const topo_t *t, hwloc_const_bitmap_t a, hwloc_const_bitmap_t b) {
  if (!t->dist || !a || !b) return 0;
  unsigned long long best = 0;
  for (int i = hwloc_bitmap_first(a); i >= 0; i = hwloc_bitmap_next(a, i))
    for (int j = hwloc_bitmap_first(b); j >= 0; j = hwloc_bitmap_next(b, j)) {
      unsigned long long d = topo_numa_distance(t, i, j);
      if (d && (!best || d < best)) best = d;
    }
  return best;
}

static void numa_class(const topo_t *t, hwloc_const_bitmap_t a, hwloc_const_bitmap_t b, path_t *out) {
  out->cls = a && b && hwloc_bitmap_intersects(a, b) ? PATH_NODE : PATH_SYS;
  out->numa_dist = min_distance(t, a, b);
}

void path_gpu_nic(const topo_t *t, const topo_gpu_t *g, const topo_nic_t *n, path_t *out) {
  memset(out, 0, sizeof *out);
  if (!g->obj || !n->obj) { /* NVML-only GPU: NUMA locality is all we know */
    numa_class(t, g->nodeset, n->nodeset, out);
    out->hops = n->obj ? bridges_to_top(n->obj) : 0;
    return;
  }
  hwloc_obj_t anc = common_ancestor(g->obj, n->obj);
  int ba = bridges_below(g->obj, anc), bb = bridges_below(n->obj, anc);
  out->numa_dist = min_distance(t, g->nodeset, n->nodeset);
  if (anc && anc->type == HWLOC_OBJ_BRIDGE) {
    out->hops = ba + bb + 1;
    if (anc->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) out->cls = PATH_PHB;
    else out->cls = ba <= 1 && bb <= 1 ? PATH_PIX : PATH_PXB;
  } else if (anc && hwloc_obj_type_is_io(anc->type)) {
    /* One device below another PCI function (not seen in practice): as close as a switch. */
    out->hops = ba + bb;
    out->cls = PATH_PIX;
  } else {
    out->hops = ba + bb;
    numa_class(t, g->nodeset, n->nodeset, out);
  }
}

void path_nodeset_nic(const topo_t *t, hwloc_const_bitmap_t nodeset, const topo_nic_t *n, path_t *out) {
  memset(out, 0, sizeof *out);
  numa_class(t, nodeset, n->nodeset, out);
  out->hops = n->obj ? bridges_to_top(n->obj) : 0;
}

int path_entry_tie(const path_entry_t *a, const path_entry_t *b) {
  return a->path.cls == b->path.cls && a->rdma == b->rdma && a->path.numa_dist == b->path.numa_dist &&
         a->link == b->link && a->path.hops == b->path.hops;
}

int path_entry_cmp(const path_entry_t *a, const path_entry_t *b) {
  if (a->path.cls != b->path.cls) return a->path.cls < b->path.cls ? -1 : 1;
  if (a->rdma != b->rdma) return a->rdma ? -1 : 1;
  if (a->path.numa_dist != b->path.numa_dist) return a->path.numa_dist < b->path.numa_dist ? -1 : 1;
  if (a->link != b->link) return a->link < b->link ? -1 : 1;
  if (a->path.hops != b->path.hops) return a->path.hops < b->path.hops ? -1 : 1;
  return a->nic < b->nic ? -1 : a->nic > b->nic;
}

static int cmp_entries(const void *a, const void *b) { return path_entry_cmp(a, b); }

int path_rank_nics(const topo_t *t, const topo_gpu_t *g, hwloc_const_bitmap_t nodeset, path_entry_t *out) {
  for (int i = 0; i < t->nnics; i++) {
    out[i].nic = i;
    out[i].rdma = t->nics[i].rdma[0] != 0;
    out[i].link = t->nics[i].state == TOPO_LINK_UP ? 0 : t->nics[i].state == TOPO_LINK_UNKNOWN ? 1 : 2;
    if (g) path_gpu_nic(t, g, &t->nics[i], &out[i].path);
    else path_nodeset_nic(t, nodeset, &t->nics[i], &out[i].path);
  }
  if (t->nnics > 1) qsort(out, (size_t)t->nnics, sizeof *out, cmp_entries);
  return t->nnics;
}
