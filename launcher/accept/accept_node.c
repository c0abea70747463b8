/* Node checks of `gpulaunch accept` as a table: GPU count and model, PCIe links, expected NICs
 * and their speed, a NIC near each GPU; and the per-rank NUMA binding check. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/check.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "launcher/accept/accept.h"
#include "topology/iface.h"

typedef int (*node_check_fn)(const accept_node_ctx_t *x, accept_list_t *out);

static void node_check(accept_check_t *c, const accept_node_ctx_t *x, const char *name, const char *subject) {
  accept_check_init(c, name, x->host, x->node, -1, subject);
}

/* ---- GPU count and model ---- */

static int check_gpu_count(const accept_node_ctx_t *x, accept_list_t *out) {
  accept_check_t c;
  node_check(&c, x, "gpu_count", "");
  accept_check_value(&c, x->t->ngpus, "", "%d", x->t->ngpus);
  if (x->o->gpus < 0 && x->t->ngpus == 0) {
    /* A GPU acceptance run on a node without one is no pass: the job would have nothing to run
     * on. A run meant for CPU-only nodes says so. */
    accept_check_threshold(&c, ">= 1 ([accept] gpus not set)");
    accept_check_set(&c, ACCEPT_FAIL, "no GPU on this node (%s sees no NVIDIA GPU): a GPU run has nothing "
                     "to run on here; if this run is meant for nodes without GPUs, set [accept] gpus = 0 "
                     "(or --gpus 0)", x->t->live ? "hwloc" : "the topology file");
  } else if (x->o->gpus < 0) {
    accept_check_threshold(&c, ">= 1 ([accept] gpus not set)");
    accept_check_set(&c, ACCEPT_PASS, "%d NVIDIA GPU(s) on the PCI bus; no count expected ([accept] gpus)%s",
                     x->t->ngpus, x->o->compare ? ": compared with the other nodes' (majority)" : "");
  } else {
    accept_check_threshold(&c, "== %d", x->o->gpus);
    if (x->t->ngpus == x->o->gpus)
      accept_check_set(&c, ACCEPT_PASS, "%d NVIDIA GPU(s) on the PCI bus", x->t->ngpus);
    else
      accept_check_set(&c, ACCEPT_FAIL, "found %d GPU(s), expected %d%s", x->t->ngpus, x->o->gpus,
                       x->t->ngpus < x->o->gpus ? ": a GPU may have fallen off the bus (dmesg: Xid 79)" : "");
  }
  return accept_list_add(out, &c);
}

static int contains_nocase(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (const char *p = hay; *p; p++)
    if (strncasecmp(p, needle, n) == 0) return 1;
  return n == 0;
}

static int check_gpu_model(const accept_node_ctx_t *x, accept_list_t *out) {
  accept_check_t c;
  node_check(&c, x, "gpu_model", "");
  const topo_t *t = x->t;
  if (!x->o->gpu_model[0]) {
    accept_check_set(&c, ACCEPT_SKIP, "no expectation: [accept] gpu_model is not set%s",
                     x->o->compare ? " (compared with the other nodes' instead: majority)" : "");
    if (t->ngpus > 0) accept_check_text(&c, "%s", t->gpus[0].model);
    return accept_list_add(out, &c);
  }
  accept_check_threshold(&c, "contains \"%s\"", x->o->gpu_model);
  if (t->ngpus == 0) {
    accept_check_set(&c, ACCEPT_FAIL, "no GPU on this node, expected %s", x->o->gpu_model);
    accept_check_text(&c, "no GPU");
    return accept_list_add(out, &c);
  }
  strbuf_t bad = STRBUF_INIT, unknown = STRBUF_INIT;
  int nbad = 0, nunknown = 0;
  for (int g = 0; g < t->ngpus; g++) {
    const topo_gpu_t *gp = &t->gpus[g];
    if (!gp->model[0]) {
      strbuf_printf(&unknown, "%sGPU%d", nunknown++ ? "," : "", g);
    } else if (!contains_nocase(gp->model, x->o->gpu_model)) {
      strbuf_printf(&bad, "%sGPU%d is %s", nbad++ ? "; " : "", g, gp->model);
    }
  }
  accept_check_text(&c, "%s", t->gpus[0].model[0] ? t->gpus[0].model : "unknown");
  if (nbad)
    accept_check_set(&c, ACCEPT_FAIL, "%s", strbuf_str(&bad));
  else if (nunknown)
    accept_check_set(&c, ACCEPT_WARN, "model unknown for %s (no name from hwloc or NVML)", strbuf_str(&unknown));
  else
    accept_check_set(&c, ACCEPT_PASS, "all %d GPU(s) match", t->ngpus);
  strbuf_free(&bad);
  strbuf_free(&unknown);
  return accept_list_add(out, &c);
}

/* ---- PCIe ---- */

const char *accept_pcie_decode(double gbps, char *buf, size_t len) {
  /* GB/s per lane after encoding, as hwloc computes it: Gen1/2 8b/10b, Gen3+ 128b/130b,
   * Gen6 (PAM4, FLIT) counted like hwloc as 64 GT/s x 128/130. */
  static const double lane[] = {0, 0.25, 0.5, 8.0 * 128 / 130 / 8, 16.0 * 128 / 130 / 8,
                                32.0 * 128 / 130 / 8, 64.0 * 128 / 130 / 8};
  static const int widths[] = {16, 8, 4, 2, 1, 32};
  strbuf_t b = STRBUF_INIT;
  int found = 0;
  if (gbps > 0) {
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
      for (int gen = 6; gen >= 1; gen--) {
        double v = lane[gen] * widths[w];
        if (fabs(v - gbps) <= 0.01 * gbps && found < 2)
          strbuf_printf(&b, "%sGen%d x%d", found++ ? " or " : "", gen, widths[w]);
      }
  }
  snprintf(buf, len, "%s", strbuf_str(&b));
  strbuf_free(&b);
  return buf;
}

/* sysfs attribute of a PCI function; "" when absent. */
static int pci_attr(const char *pci, const char *attr, char *buf, size_t len) {
  char path[256];
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/%s", pci, attr);
  return util_read_small(path, buf, len) > 0 ? 0 : -1;
}

static int check_pcie_link(const accept_node_ctx_t *x, accept_list_t *out) {
  const topo_t *t = x->t;
  accept_check_t c;
  if (t->ngpus == 0) {
    node_check(&c, x, "pcie_link", "");
    accept_check_set(&c, ACCEPT_SKIP, "no GPU on this node");
    return accept_list_add(out, &c);
  }
  double best = 0;
  for (int g = 0; g < t->ngpus; g++)
    if (t->gpus[g].link_gbps > best) best = t->gpus[g].link_gbps;
  for (int g = 0; g < t->ngpus; g++) {
    const topo_gpu_t *gp = &t->gpus[g];
    char subj[16], dec[64];
    snprintf(subj, sizeof subj, "GPU%d", g);
    node_check(&c, x, "pcie_link", subj);
    char cw[32], mw[32], cs[64], ms[64];
    if (t->live && gp->pci[0] && pci_attr(gp->pci, "current_link_width", cw, sizeof cw) == 0 &&
        pci_attr(gp->pci, "max_link_width", mw, sizeof mw) == 0) {
      /* The width is what can go wrong for good (a lane down, a card half seated); the speed
       * drops to Gen1 when a GPU idles to save power, so it is shown, not judged. */
      pci_attr(gp->pci, "current_link_speed", cs, sizeof cs);
      pci_attr(gp->pci, "max_link_speed", ms, sizeof ms);
      int cwi = atoi(cw), mwi = atoi(mw);
      accept_check_value(&c, cwi, "lanes", "x%d at %s (max x%d at %s)", cwi, cs, mwi, ms);
      accept_check_threshold(&c, "x%d", mwi);
      if (cwi < mwi)
        accept_check_set(&c, ACCEPT_FAIL, "%s trained at x%d of x%d lanes: reseat the card or "
                         "check the riser", gp->pci, cwi, mwi);
      else
        accept_check_set(&c, ACCEPT_PASS, "full width (the link speed of an idle GPU may be lower "
                         "than its maximum: power saving)");
    } else if (gp->link_gbps <= 0) {
      accept_check_set(&c, ACCEPT_SKIP, "link speed not known (hwloc reports none for %s)", gp->pci);
    } else {
      accept_pcie_decode(gp->link_gbps, dec, sizeof dec);
      accept_check_value(&c, gp->link_gbps, "GB/s", "%.1f GB/s%s%s%s", gp->link_gbps, dec[0] ? " (" : "",
                         dec, dec[0] ? ")" : "");
      accept_check_threshold(&c, ">= %.1f GB/s", 0.9 * best);
      if (gp->link_gbps < 0.9 * best)
        accept_check_set(&c, ACCEPT_FAIL, "slower than the node's other GPUs (%.1f GB/s): fewer lanes "
                         "or a lower PCIe generation", best);
      else
        accept_check_set(&c, ACCEPT_PASS, "hwloc's link speed; at least 90%% of the node's fastest GPU link");
    }
    CHECK(accept_list_add(out, &c));
  }
  return GPL_OK;
}

/* ---- NICs ---- */

static const char *link_name(topo_link_t s) {
  return s == TOPO_LINK_UP ? "up" : s == TOPO_LINK_DOWN ? "down" : "state unknown";
}

static void nic_names(const topo_t *t, const iface_list_t *ifs, char *buf, size_t len) {
  strbuf_t b = STRBUF_INIT;
  for (int i = 0; i < t->nnics; i++) strbuf_printf(&b, "%s%s", b.len ? ", " : "", t->nics[i].name);
  for (int i = 0; ifs && i < ifs->n; i++)
    if (!ifs->v[i].loopback && !topo_nic_by_name(t, ifs->v[i].name))
      strbuf_printf(&b, "%s%s", b.len ? ", " : "", ifs->v[i].name);
  snprintf(buf, len, "%s", b.len ? strbuf_str(&b) : "none");
  strbuf_free(&b);
}

static int check_nics(const accept_node_ctx_t *x, accept_list_t *out) {
  const topo_t *t = x->t;
  accept_check_t c;
  if (!x->o->nics[0]) {
    node_check(&c, x, "nic", "");
    accept_check_set(&c, ACCEPT_SKIP, "no expectation: [accept] nics is not set%s",
                     x->o->compare ? " (compared with the other nodes' instead: majority)" : "");
    accept_check_text(&c, "%d NIC(s)", t->nnics);
    return accept_list_add(out, &c);
  }
  /* Interfaces that are not PCI functions (veth, bond, ...) are only in the live inventory. */
  iface_list_t ifs = {0, NULL};
  int have_ifs = t->live && iface_list(&ifs) == GPL_OK;
  char list[512];
  snprintf(list, sizeof list, "%s", x->o->nics);
  char *save = NULL;
  int rc = GPL_OK;
  for (char *w = strtok_r(list, ", ", &save); w && rc == GPL_OK; w = strtok_r(NULL, ", ", &save)) {
    const topo_nic_t *n = topo_nic_by_name(t, w);
    const iface_t *ifc = have_ifs ? iface_find(&ifs, w) : NULL;
    topo_link_t state = TOPO_LINK_UNKNOWN;
    int speed = -1;
    if (n) {
      state = n->state;
      speed = n->speed_mbps;
      /* The netdev's own state when the live inventory has it (sysfs operstate/carrier). */
      const char *nd = topo_nic_netdev(n);
      const iface_t *ni = have_ifs && nd ? iface_find(&ifs, nd) : NULL;
      if (ni && state == TOPO_LINK_UNKNOWN) state = ni->up && ni->running ? TOPO_LINK_UP : TOPO_LINK_DOWN;
      if (ni && speed < 0) speed = ni->speed_mbps;
    } else if (ifc) {
      state = ifc->up && ifc->running ? TOPO_LINK_UP : TOPO_LINK_DOWN;
      speed = ifc->speed_mbps;
    }
    node_check(&c, x, "nic", w);
    accept_check_threshold(&c, "present, up");
    if (!n && !ifc) {
      char names[400];
      nic_names(t, have_ifs ? &ifs : NULL, names, sizeof names);
      accept_check_text(&c, "absent");
      accept_check_set(&c, ACCEPT_FAIL, "%s not found on this node (NICs here: %s)", w, names);
    } else {
      if (speed > 0) accept_check_text(&c, "%s, %g Gb/s", link_name(state), speed / 1000.0);
      else accept_check_text(&c, "%s", link_name(state));
      if (state == TOPO_LINK_UP)
        accept_check_set(&c, ACCEPT_PASS, "%s%s%s", n ? n->pci : "not a PCI device", n && n->rdma[0] ? ", RDMA " : "",
                         n && n->rdma[0] ? n->rdma : "");
      else if (state == TOPO_LINK_DOWN)
        accept_check_set(&c, ACCEPT_FAIL, "%s is present but its link is down (cable, switch port, "
                         "or subnet manager)", w);
      else
        accept_check_set(&c, ACCEPT_WARN, "%s is present; its link state is not known (%s)", w,
                         t->live ? "no state in sysfs" : "the topology file has no port state");
    }
    rc = accept_list_add(out, &c);
    if (rc < 0 || x->o->nic_min_speed <= 0) continue;
    node_check(&c, x, "nic_speed", w);
    accept_check_threshold(&c, ">= %g Gb/s", x->o->nic_min_speed);
    if (!n && !ifc)
      accept_check_set(&c, ACCEPT_SKIP, "%s not found", w);
    else if (speed <= 0)
      accept_check_set(&c, ACCEPT_SKIP, "link speed not known (%s)",
                       t->live ? "the driver reports none" : "topology files have no link speed");
    else {
      accept_check_value(&c, speed / 1000.0, "Gb/s", NULL);
      if (speed / 1000.0 < x->o->nic_min_speed)
        accept_check_set(&c, ACCEPT_FAIL, "%s links at %g Gb/s (degraded port or wrong cable?)", w, speed / 1000.0);
      else
        accept_check_set(&c, ACCEPT_PASS, "link speed from sysfs");
    }
    rc = accept_list_add(out, &c);
  }
  if (have_ifs) iface_list_free(&ifs);
  return rc;
}

/* ---- GPU to NIC distance ---- */

static int check_gpu_nic_path(const accept_node_ctx_t *x, accept_list_t *out) {
  const topo_t *t = x->t;
  accept_check_t c;
  if (t->ngpus == 0) {
    node_check(&c, x, "gpu_nic_path", "");
    accept_check_set(&c, ACCEPT_SKIP, "no GPU on this node");
    return accept_list_add(out, &c);
  }
  if (t->nnics == 0) {
    node_check(&c, x, "gpu_nic_path", "");
    accept_check_text(&c, "no NIC");
    accept_check_threshold(&c, "<= %s", path_class_name(x->o->nic_max_path));
    accept_check_set(&c, ACCEPT_WARN, "no network card in the topology: inter-node traffic of the "
                     "GPUs has no RDMA path");
    return accept_list_add(out, &c);
  }
  path_entry_t *e = calloc((size_t)t->nnics, sizeof *e);
  ALLOCCHECK(e);
  int rc = GPL_OK;
  for (int g = 0; g < t->ngpus && rc == GPL_OK; g++) {
    char subj[16];
    snprintf(subj, sizeof subj, "GPU%d", g);
    node_check(&c, x, "gpu_nic_path", subj);
    path_rank_nics(t, &t->gpus[g], NULL, e);
    const topo_nic_t *n = &t->nics[e[0].nic];
    path_class_t cls = e[0].path.cls;
    accept_check_value(&c, cls, "", "%s to %s", path_class_name(cls), n->name);
    accept_check_threshold(&c, "<= %s", path_class_name(x->o->nic_max_path));
    if (cls <= x->o->nic_max_path)
      accept_check_set(&c, ACCEPT_PASS, "nearest NIC %s (%s): %s", n->name, n->pci, path_class_desc(cls));
    else if (cls == PATH_SYS)
      accept_check_set(&c, ACCEPT_WARN, "no NIC on this GPU's NUMA node: the nearest, %s, is %s "
                       "(%s): GPUDirect RDMA traffic of this GPU crosses the CPU interconnect",
                       n->name, path_class_name(cls), path_class_desc(cls));
    else
      accept_check_set(&c, ACCEPT_WARN, "no NIC on this GPU's PCIe switch or host bridge: the "
                       "nearest, %s, is %s (%s); set [accept] nic_max_path = %s if that is how this "
                       "machine is built", n->name, path_class_name(cls), path_class_desc(cls),
                       path_class_name(cls));
    rc = accept_list_add(out, &c);
  }
  free(e);
  return rc;
}

/* The node checks, in report order. */
static const struct {
  const char *name;
  node_check_fn fn;
} g_node_checks[] = {
    {"gpu_count", check_gpu_count},   {"gpu_model", check_gpu_model},
    {"pcie_link", check_pcie_link},   {"nic", check_nics},
    {"gpu_nic_path", check_gpu_nic_path}, {"efa_plugin", accept_efa_node_check},
};

int accept_node_checks(const accept_node_ctx_t *x, accept_list_t *out) {
  for (size_t i = 0; i < sizeof g_node_checks / sizeof g_node_checks[0]; i++) {
    int rc = g_node_checks[i].fn(x, out);
    if (rc < 0) {
      accept_check_t c;
      accept_check_init(&c, g_node_checks[i].name, x->host, x->node, -1, "");
      accept_check_set(&c, ACCEPT_ERROR, "could not run: %s", gpl_strerror(rc));
      CHECK(accept_list_add(out, &c));
    }
  }
  return accept_nvml_checks(x, out);
}

/* ---- NUMA binding of a rank ---- */

int accept_rank_binding(const topo_t *t, const char *host, int node, int rank, int gpu,
                        hwloc_const_bitmap_t binding, accept_list_t *out) {
  accept_check_t c;
  char subj[48];
  if (gpu >= 0) snprintf(subj, sizeof subj, "rank %d -> GPU%d", rank, gpu);
  else snprintf(subj, sizeof subj, "rank %d", rank);
  accept_check_init(&c, "numa_binding", host, node, rank, subj);
  if (gpu < 0 || gpu >= t->ngpus) {
    accept_check_set(&c, ACCEPT_SKIP, "the rank has no GPU");
    return accept_list_add(out, &c);
  }
  const topo_gpu_t *g = &t->gpus[gpu];
  char numa[64];
  topo_numa_str(g->numa, g->nnuma, numa, sizeof numa);
  accept_check_threshold(&c, "within NUMA %s (CPUs %s)", numa, g->cpus ? g->cpus : "?");
  hwloc_bitmap_t mine = NULL;
  if (!binding) {
    if (!t->live) {
      accept_check_set(&c, ACCEPT_SKIP, "topology from a file: this process's binding belongs to "
                       "another machine");
      return accept_list_add(out, &c);
    }
    mine = hwloc_bitmap_alloc();
    ALLOCCHECK(mine);
    if (hwloc_get_cpubind(t->hw, mine, HWLOC_CPUBIND_PROCESS) < 0) {
      hwloc_bitmap_free(mine);
      accept_check_set(&c, ACCEPT_SKIP, "the binding cannot be read (hwloc_get_cpubind)");
      return accept_list_add(out, &c);
    }
    binding = mine;
  }
  char *list = NULL;
  hwloc_bitmap_list_asprintf(&list, binding);
  accept_check_text(&c, "CPUs %s", list ? list : "?");
  hwloc_const_bitmap_t all = hwloc_topology_get_topology_cpuset(t->hw);
  if (!g->cpuset || hwloc_bitmap_iszero(g->cpuset)) {
    accept_check_set(&c, ACCEPT_SKIP, "the GPU's local CPUs are not known");
  } else if (hwloc_bitmap_isincluded(binding, g->cpuset)) {
    accept_check_set(&c, ACCEPT_PASS, "bound to CPUs local to GPU%d", gpu);
  } else if (hwloc_bitmap_isequal(binding, all) && !hwloc_bitmap_isequal(g->cpuset, all)) {
    accept_check_set(&c, ACCEPT_WARN, "not bound: the rank may run on any CPU, also far from GPU%d "
                     "(run under gpulaunch's placement, [topology] bind)", gpu);
  } else if (hwloc_bitmap_intersects(binding, g->cpuset)) {
    accept_check_set(&c, ACCEPT_FAIL, "bound partly outside GPU%d's NUMA node %s", gpu, numa);
  } else {
    accept_check_set(&c, ACCEPT_FAIL, "bound to CPUs of another NUMA node than GPU%d (NUMA %s): "
                     "every host-device copy crosses sockets", gpu, numa);
  }
  free(list);
  if (mine) hwloc_bitmap_free(mine);
  return accept_list_add(out, &c);
}
