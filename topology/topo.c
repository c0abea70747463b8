/* Topology discovery: hwloc (live or XML) with I/O kept -> GPUs and NICs with PCI locality and NUMA. */
#include "topology/topo.h"
#include "topology/xml_check.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/log.h"
#include "common/safefile.h"
#include "common/util.h"
#include "topology/nvml.h"

/* ---- small helpers ------------------------------------------------------------------------- */

static void fmt_busid(char *buf, size_t len, unsigned d, unsigned b, unsigned dv, unsigned f) {
  snprintf(buf, len, "%04x:%02x:%02x.%x", d, b, dv, f);
}

const char *topo_numa_str(const int *numa, int n, char *buf, size_t len) {
  size_t off = 0;
  if (len) buf[0] = 0;
  for (int i = 0; i < n && off < len; i++) {
    int w = snprintf(buf + off, len - off, "%s%d", i ? "," : "", numa[i]);
    if (w < 0) break;
    off += (size_t)w;
  }
  return buf;
}

static int numa_from_nodeset(hwloc_const_bitmap_t ns, int *numa, int max) {
  int n = 0;
  if (!ns) return 0;
  int i = hwloc_bitmap_first(ns);
  while (i >= 0 && n < max) {
    numa[n++] = i;
    i = hwloc_bitmap_next(ns, i);
  }
  return n;
}

/* Locality of an I/O object: its first non-I/O ancestor's cpuset and nodeset. */
static int fill_locality(hwloc_topology_t hw, hwloc_obj_t obj, hwloc_bitmap_t *cpuset,
                         hwloc_bitmap_t *nodeset, char **cpus, int *numa, int *nnuma) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(hw, obj);
  hwloc_obj_t root = hwloc_get_root_obj(hw);
  if (!anc) anc = root;
  *cpuset = hwloc_bitmap_dup(anc->cpuset ? anc->cpuset : root->cpuset);
  *nodeset = hwloc_bitmap_dup(anc->nodeset ? anc->nodeset : root->nodeset);
  ALLOCCHECK(*cpuset);
  ALLOCCHECK(*nodeset);
  if (hwloc_bitmap_list_asprintf(cpus, *cpuset) < 0) return GPL_ENOMEM;
  *nnuma = numa_from_nodeset(*nodeset, numa, TOPO_MAX_NUMA);
  return 0;
}

static int is_gpu(hwloc_obj_t pci) {
  const struct hwloc_pcidev_attr_s *a = &pci->attr->pcidev;
  return a->vendor_id == 0x10de && (a->class_id >> 8) == 0x03;
}

static int is_net_class(unsigned class_id) {
  return (class_id >> 8) == 0x02 || class_id == 0x0c06;
}

static int cmp_busid(unsigned d1, unsigned b1, unsigned v1, unsigned f1, unsigned d2, unsigned b2,
                     unsigned v2, unsigned f2) {
  if (d1 != d2) return d1 < d2 ? -1 : 1;
  if (b1 != b2) return b1 < b2 ? -1 : 1;
  if (v1 != v2) return v1 < v2 ? -1 : 1;
  if (f1 != f2) return f1 < f2 ? -1 : 1;
  return 0;
}

static int cmp_gpu(const void *a, const void *b) {
  const topo_gpu_t *x = a, *y = b;
  return cmp_busid(x->domain, x->bus, x->dev, x->func, y->domain, y->bus, y->dev, y->func);
}

static int cmp_nic(const void *a, const void *b) {
  const topo_nic_t *x = a, *y = b;
  return cmp_busid(x->domain, x->bus, x->dev, x->func, y->domain, y->bus, y->dev, y->func);
}

static void append_name(char *buf, size_t len, const char *name) {
  size_t used = strlen(buf);
  if (used + strlen(name) + 2 > len) return;
  snprintf(buf + used, len - used, "%s%s", used ? "," : "", name);
}

/* ---- XML sniffing: say what a file is before hwloc tries (and prints libxml2 noise) ---------- */

/* Skip the prolog (declaration, comments, doctype, whitespace) and return the root element's
 * start, or NULL when there is none. */
static const char *xml_root(const char *s) {
  for (;;) {
    while (*s && isspace((unsigned char)*s)) s++;
    if (strncmp(s, "\xEF\xBB\xBF", 3) == 0) { /* UTF-8 byte order mark */
      s += 3;
      continue;
    }
    if (strncmp(s, "<?", 2) == 0) {
      const char *e = strstr(s, "?>");
      if (!e) return NULL;
      s = e + 2;
    } else if (strncmp(s, "<!--", 4) == 0) {
      const char *e = strstr(s, "-->");
      if (!e) return NULL;
      s = e + 3;
    } else if (strncmp(s, "<!", 2) == 0) {
      const char *e = strchr(s, '>');
      if (!e) return NULL;
      s = e + 1;
    } else {
      return *s == '<' ? s : NULL;
    }
  }
}

/* Read the file (a regular file, bounded: never a FIFO's wait or /dev/zero's memory) and say what
 * it is; on success *text holds it for hwloc, so the file is read once. */
static int sniff_xml(const char *path, char **textp, size_t *lenp) {
  char *text = NULL;
  size_t len = 0;
  char err[PATH_MAX + 128];
  *textp = NULL;
  int rc = safefile_read(path, SAFEFILE_CAP_TEXT, &text, &len, err, sizeof err);
  if (rc == GPL_ENOENT) {
    LOG_ERROR("topology file %s: no such file", path);
    return GPL_ENOENT;
  }
  if (rc < 0) {
    LOG_ERROR("topology file: %s (expected an hwloc XML export)", err);
    return rc == GPL_EINVAL || rc == GPL_ERANGE ? GPL_ETOPO : rc;
  }
  if (strlen(text) != len) {
    LOG_ERROR("topology file %s: binary data, not an hwloc XML export", path);
    free(text);
    return GPL_ETOPO;
  }
  const char *root = xml_root(text);
  char name[32] = "";
  if (root) {
    size_t n = strcspn(root + 1, " \t\r\n/>");
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, root + 1, n);
    name[n] = 0;
  }
  rc = 0;
  if (!root || !name[0]) {
    LOG_ERROR("topology file %s: not XML (expected an hwloc export, `lstopo --of xml FILE`)", path);
    rc = GPL_ETOPO;
  } else if (strcmp(name, "system") == 0) {
    LOG_ERROR("topology file %s: this is an NCCL topology file (NCCL_TOPO_FILE, root <system>), "
              "not an hwloc XML export; give NCCL_TOPO_FILE to NCCL and an hwloc export "
              "(`lstopo --of xml FILE`) to gpulaunch",
              path);
    rc = GPL_ETOPO;
  } else if (strcmp(name, "topology") != 0) {
    LOG_ERROR("topology file %s: root element <%s>, not an hwloc XML export <topology>", path, name);
    rc = GPL_ETOPO;
  } else {
    const char *end = strchr(root, '>');
    const char *ver = strstr(root, "version=\"");
    if (ver && end && ver < end && atoi(ver + 9) >= 3) {
      LOG_ERROR("topology file %s: hwloc %c.x XML, which this hwloc %s cannot read; export it "
                "with hwloc 2.x (`lstopo --of xml`)",
                path, ver[9], HWLOC_API_VERSION >= 0x20000 ? "2.x" : "1.x");
      rc = GPL_ETOPO;
    }
  }
  if (rc == 0) {
    *textp = text;
    *lenp = len;
  } else {
    free(text);
  }
  return rc;
}

/* ---- NIC details --------------------------------------------------------------------------- */

/* Port and state from the OpenFabrics device's PortNState infos (4 = ACTIVE). */
static void nic_port_from_infos(topo_nic_t *n, hwloc_obj_t ofed) {
  int first_seen = 0, active = 0;
  for (int p = 1; p <= 8; p++) {
    char key[32];
    snprintf(key, sizeof key, "Port%dState", p);
    const char *v = hwloc_obj_get_info_by_name(ofed, key);
    if (!v) continue;
    if (!first_seen) first_seen = p;
    if (atoi(v) == 4 && !active) active = p;
  }
  n->port = active ? active : 1;
  n->state = active ? TOPO_LINK_UP : first_seen ? TOPO_LINK_DOWN : TOPO_LINK_UNKNOWN;
}

/* Live only: link state and speed from sysfs (RDMA port first, then the netdev). */
static void nic_live_link(topo_nic_t *n) {
  char path[512], buf[128];
  if (n->rdma[0]) {
    int active = 0, seen = 0;
    for (int p = 1; p <= 8; p++) {
      snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/%d/state", n->rdma, p);
      if (util_read_small(path, buf, sizeof buf) < 0) continue;
      seen = 1;
      if (atoi(buf) == 4 && !active) active = p; /* "4: ACTIVE" */
    }
    if (seen) {
      n->port = active ? active : 1;
      n->state = active ? TOPO_LINK_UP : TOPO_LINK_DOWN;
      snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/%d/rate", n->rdma, n->port);
      if (util_read_small(path, buf, sizeof buf) > 0) n->speed_mbps = (int)(atof(buf) * 1000.0); /* "200 Gb/sec" */
    }
  }
  if (n->nnetdev > 0) {
    snprintf(path, sizeof path, "/sys/class/net/%s/operstate", n->netdevs[0]);
    if (n->state == TOPO_LINK_UNKNOWN && util_read_small(path, buf, sizeof buf) > 0)
      n->state = strcmp(buf, "up") == 0 ? TOPO_LINK_UP : TOPO_LINK_DOWN;
    snprintf(path, sizeof path, "/sys/class/net/%s/speed", n->netdevs[0]);
    if (n->speed_mbps < 0 && util_read_small(path, buf, sizeof buf) > 0 && atoi(buf) > 0)
      n->speed_mbps = atoi(buf);
  }
}

/* ---- discovery ----------------------------------------------------------------------------- */

static int add_gpu(topo_t *t, hwloc_obj_t pci, int *cap) {
  if (t->ngpus == *cap) {
    int ncap = *cap ? *cap * 2 : 8;
    topo_gpu_t *v = realloc(t->gpus, sizeof *v * (size_t)ncap);
    ALLOCCHECK(v);
    t->gpus = v, *cap = ncap;
  }
  topo_gpu_t *g = &t->gpus[t->ngpus];
  memset(g, 0, sizeof *g);
  g->nvml_index = -1;
  const struct hwloc_pcidev_attr_s *a = &pci->attr->pcidev;
  g->domain = a->domain, g->bus = a->bus, g->dev = a->dev, g->func = a->func;
  g->vendor_id = a->vendor_id, g->device_id = a->device_id, g->class_id = a->class_id;
  g->link_gbps = a->linkspeed;
  fmt_busid(g->pci, sizeof g->pci, a->domain, a->bus, a->dev, a->func);
  g->obj = pci;
  t->ngpus++; /* counted now so that topo_free releases what fill_locality allocates */
  for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
    if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name) continue;
    append_name(g->osdevs, sizeof g->osdevs, c->name);
    const char *m = hwloc_obj_get_info_by_name(c, "GPUModel");
    if (m && !g->model[0]) util_strlcpy(g->model, m, sizeof g->model);
    const char *u = hwloc_obj_get_info_by_name(c, "NVIDIAUUID");
    if (u && !g->uuid[0]) util_strlcpy(g->uuid, u, sizeof g->uuid);
  }
  const char *pd = hwloc_obj_get_info_by_name(pci, "PCIDevice");
  if (!g->model[0] && pd) util_strlcpy(g->model, pd, sizeof g->model);
  return fill_locality(t->hw, pci, &g->cpuset, &g->nodeset, &g->cpus, g->numa, &g->nnuma);
}

static int add_nic(topo_t *t, hwloc_obj_t pci, int *cap) {
  hwloc_obj_t ofed = NULL;
  int nnet = 0;
  for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
    if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name) continue;
    if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !ofed) ofed = c;
    if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) nnet++;
  }
  const struct hwloc_pcidev_attr_s *a = &pci->attr->pcidev;
  /* An RDMA device makes any function a NIC; a bare netdev only counts on a network-class
   * function (not a BMC's USB Ethernet gadget or similar). */
  if (!ofed && !(nnet > 0 && is_net_class(a->class_id))) return 0;
  if (t->nnics == *cap) {
    int ncap = *cap ? *cap * 2 : 8;
    topo_nic_t *v = realloc(t->nics, sizeof *v * (size_t)ncap);
    ALLOCCHECK(v);
    t->nics = v, *cap = ncap;
  }
  topo_nic_t *n = &t->nics[t->nnics];
  memset(n, 0, sizeof *n);
  n->domain = a->domain, n->bus = a->bus, n->dev = a->dev, n->func = a->func;
  n->vendor_id = a->vendor_id, n->device_id = a->device_id, n->class_id = a->class_id;
  n->link_gbps = a->linkspeed;
  n->speed_mbps = -1;
  n->state = TOPO_LINK_UNKNOWN;
  n->port = 1;
  fmt_busid(n->pci, sizeof n->pci, a->domain, a->bus, a->dev, a->func);
  n->obj = pci;
  t->nnics++;
  /* Netdevs ordered by their Port info when the file has it (mlx4: ib0 on port 1, eth2 on 2). */
  int ports[TOPO_MAX_NETDEV];
  for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
    if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name || c->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK)
      continue;
    if (n->nnetdev == TOPO_MAX_NETDEV) break;
    const char *pv = hwloc_obj_get_info_by_name(c, "Port");
    int port = pv ? atoi(pv) : 99;
    int k = n->nnetdev++;
    while (k > 0 && ports[k - 1] > port) {
      ports[k] = ports[k - 1];
      memcpy(n->netdevs[k], n->netdevs[k - 1], TOPO_NAME_LEN);
      k--;
    }
    ports[k] = port;
    util_strlcpy(n->netdevs[k], c->name, TOPO_NAME_LEN);
  }
  if (ofed) {
    util_strlcpy(n->rdma, ofed->name, sizeof n->rdma);
    nic_port_from_infos(n, ofed);
  }
  util_strlcpy(n->name, n->rdma[0] ? n->rdma : n->netdevs[0], sizeof n->name);
  const char *pd = hwloc_obj_get_info_by_name(pci, "PCIDevice");
  if (pd) util_strlcpy(n->model, pd, sizeof n->model);
  if (t->live) nic_live_link(n);
  return fill_locality(t->hw, pci, &n->cpuset, &n->nodeset, &n->cpus, n->numa, &n->nnuma);
}

static int load_numa(topo_t *t) {
  int n = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_NUMANODE);
  if (n <= 0) return 0;
  t->numa_os = calloc((size_t)n, sizeof *t->numa_os);
  ALLOCCHECK(t->numa_os);
  t->nnuma = n;
  for (int i = 0; i < n; i++) t->numa_os[i] = (int)hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, (unsigned)i)->os_index;

  struct hwloc_distances_s *d = NULL;
  unsigned nr = 1;
  if (hwloc_distances_get_by_type(t->hw, HWLOC_OBJ_NUMANODE, &nr, &d, HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) < 0 ||
      nr == 0 || !d)
    return 0; /* no matrix: NODE/SYS ties stay ties, broken by hops and bus order */
  t->dist = calloc((size_t)n * (size_t)n, sizeof *t->dist);
  if (!t->dist) {
    hwloc_distances_release(t->hw, d);
    return GPL_ENOMEM;
  }
  for (unsigned i = 0; i < d->nbobjs; i++) {
    for (unsigned j = 0; j < d->nbobjs; j++) {
      int xi = -1, xj = -1;
      for (int k = 0; k < n; k++) {
        if (t->numa_os[k] == (int)d->objs[i]->os_index) xi = k;
        if (t->numa_os[k] == (int)d->objs[j]->os_index) xj = k;
      }
      if (xi >= 0 && xj >= 0) t->dist[xi * n + xj] = d->values[i * d->nbobjs + j];
    }
  }
  hwloc_distances_release(t->hw, d);
  return 0;
}

unsigned long long topo_numa_distance(const topo_t *t, int os_a, int os_b) {
  if (!t->dist) return 0;
  int xa = -1, xb = -1;
  for (int k = 0; k < t->nnuma; k++) {
    if (t->numa_os[k] == os_a) xa = k;
    if (t->numa_os[k] == os_b) xb = k;
  }
  if (xa < 0 || xb < 0) return 0;
  return t->dist[xa * t->nnuma + xb];
}

static int discover(topo_t *t) {
  int gcap = 0, ncap = 0;
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(t->hw, NULL); pci; pci = hwloc_get_next_pcidev(t->hw, pci)) {
    if (is_gpu(pci)) CHECK(add_gpu(t, pci, &gcap));
    else CHECK(add_nic(t, pci, &ncap));
  }
  if (t->live) CHECK(nvml_probe(t, &gcap));
  if (t->ngpus > 1) qsort(t->gpus, (size_t)t->ngpus, sizeof *t->gpus, cmp_gpu);
  if (t->nnics > 1) qsort(t->nics, (size_t)t->nnics, sizeof *t->nics, cmp_nic);
  for (int i = 0; i < t->ngpus; i++) t->gpus[i].index = i;
  for (int i = 0; i < t->nnics; i++) t->nics[i].index = i;
  return 0;
}

/* Load from the live machine (xml_path and buf NULL), a file, or a buffer exported on this very
 * machine (then it is treated as live: binding allowed, sysfs and NVML consulted). */
static int load_from(topo_t **out, const char *xml_path, const char *buf, size_t len) {
  *out = NULL;
  char *file_text = NULL;
  size_t file_len = 0;
  if (xml_path) CHECK(sniff_xml(xml_path, &file_text, &file_len));
  topo_t *t = calloc(1, sizeof *t);
  if (!t) free(file_text);
  ALLOCCHECK(t);
  int rc = 0;
  if (hwloc_topology_init(&t->hw) < 0) {
    LOG_WARN("hwloc_topology_init failed: %s", strerror(errno));
    free(t);
    return GPL_EHWLOC;
  }
  /* Without KEEP_ALL an XML loads with no PCI devices at all, and live loads drop bridges. */
  if (hwloc_topology_set_io_types_filter(t->hw, HWLOC_TYPE_FILTER_KEEP_ALL) < 0) {
    LOG_WARN("hwloc_topology_set_io_types_filter failed: %s", strerror(errno));
    rc = GPL_EHWLOC;
    goto fail;
  }
  /* A live load needs the CPUs, NUMA nodes and PCI devices only (GPUs come from PCI and our own
   * NVML probe): hwloc's plugins that open GPU runtimes to name their devices (OpenCL, CUDA,
   * NVML, ROCm SMI, Level Zero) or an X display (GL) cost start-up time on GPU servers, where
   * initialising a driver takes a good part of a second. */
  if (!xml_path && !buf)
    for (const char *const *c = (const char *const[]){"opencl", "cuda", "nvml", "rsmi", "levelzero", "gl", NULL}; *c; c++)
      (void)hwloc_topology_set_components(t->hw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, *c);
  /* hwloc parses the bytes that were checked, not the path again (which may have changed). */
  if (xml_path && (file_len >= INT_MAX ||
                   hwloc_topology_set_xmlbuffer(t->hw, file_text, (int)file_len + 1) < 0)) {
    LOG_ERROR("topology file %s: hwloc cannot use it as XML input: %s", xml_path, strerror(errno));
    rc = GPL_ETOPO;
    goto fail;
  }
  if (buf && (hwloc_topology_set_xmlbuffer(t->hw, buf, (int)len) < 0 ||
              hwloc_topology_set_flags(t->hw, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM) < 0)) {
    LOG_ERROR("cannot use the topology shared by this node's first rank: %s", strerror(errno));
    rc = GPL_ETOPO;
    goto fail;
  }
  if (hwloc_topology_load(t->hw) < 0) {
    if (xml_path)
      LOG_ERROR("topology file %s: hwloc could not load it (%s); is it an hwloc XML export? "
                "(HWLOC_XML_VERBOSE=1 shows the parser's complaint)",
                xml_path, strerror(errno));
    else
      LOG_ERROR("hwloc could not read this machine's topology: %s", strerror(errno));
    rc = GPL_ETOPO;
    goto fail;
  }
  if (xml_path) CHECKGOTO(topo_xml_check(xml_path, file_text, t->hw), rc, fail);
  free(file_text);
  file_text = NULL;
  t->live = xml_path == NULL && hwloc_topology_is_thissystem(t->hw);
  t->source = strdup(xml_path ? xml_path : "live");
  if (!t->source) {
    rc = GPL_ENOMEM;
    goto fail;
  }
  hwloc_obj_t root = hwloc_get_root_obj(t->hw);
  const char *host = hwloc_obj_get_info_by_name(root, "HostName");
  util_strlcpy(t->host, host ? host : (t->live ? util_hostname() : ""), sizeof t->host);
  if (hwloc_bitmap_list_asprintf(&t->cpus, hwloc_topology_get_topology_cpuset(t->hw)) < 0) {
    rc = GPL_ENOMEM;
    goto fail;
  }
  CHECKGOTO(load_numa(t), rc, fail);
  CHECKGOTO(discover(t), rc, fail);
  LOG_INFO(TOPO, "%s%s: %d GPU(s), %d NIC(s), %d NUMA node(s)%s", t->source,
           buf ? " (shared by the node's first rank)" : "", t->ngpus, t->nnics, t->nnuma,
           t->dist ? ", NUMA distances" : "");
  *out = t;
  return 0;
fail:
  free(file_text);
  topo_free(t);
  return rc;
}

int topo_load(topo_t **out, const char *xml_path) { return load_from(out, xml_path, NULL, 0); }

int topo_load_shared(topo_t **out, const char *xml, size_t len) {
  if (!xml || !len) return GPL_EINVAL;
  return load_from(out, NULL, xml, len);
}

int topo_export(const topo_t *t, char **xml, size_t *len) {
  char *buf = NULL;
  int n = 0;
  if (hwloc_topology_export_xmlbuffer(t->hw, &buf, &n, 0) < 0) {
    LOG_WARN("hwloc_topology_export_xmlbuffer failed: %s", strerror(errno));
    return GPL_EHWLOC;
  }
  *xml = malloc((size_t)n);
  if (!*xml) {
    hwloc_free_xmlbuffer(t->hw, buf);
    return GPL_ENOMEM;
  }
  memcpy(*xml, buf, (size_t)n);
  *len = (size_t)n;
  hwloc_free_xmlbuffer(t->hw, buf);
  return 0;
}

void topo_free(topo_t *t) {
  if (!t) return;
  for (int i = 0; i < t->ngpus; i++) {
    free(t->gpus[i].cpus);
    hwloc_bitmap_free(t->gpus[i].cpuset);
    hwloc_bitmap_free(t->gpus[i].nodeset);
  }
  for (int i = 0; i < t->nnics; i++) {
    free(t->nics[i].cpus);
    hwloc_bitmap_free(t->nics[i].cpuset);
    hwloc_bitmap_free(t->nics[i].nodeset);
  }
  free(t->gpus);
  free(t->nics);
  free(t->numa_os);
  free(t->dist);
  free(t->cpus);
  free(t->source);
  if (t->hw) hwloc_topology_destroy(t->hw);
  free(t);
}

/* ---- look-ups ------------------------------------------------------------------------------ */

const topo_nic_t *topo_nic_by_pci(const topo_t *t, const char *busid) {
  unsigned d, b, v, f;
  if (topo_parse_busid(busid, &d, &b, &v, &f) < 0) return NULL;
  for (int i = 0; i < t->nnics; i++) {
    const topo_nic_t *n = &t->nics[i];
    if (n->domain == d && n->bus == b && n->dev == v && n->func == f) return n;
  }
  return NULL;
}

const topo_nic_t *topo_nic_by_name(const topo_t *t, const char *name) {
  if (!name || !*name) return NULL;
  for (int i = 0; i < t->nnics; i++) {
    const topo_nic_t *n = &t->nics[i];
    if (strcmp(n->rdma, name) == 0) return n;
    for (int k = 0; k < n->nnetdev; k++)
      if (strcmp(n->netdevs[k], name) == 0) return n;
  }
  return NULL;
}

const char *topo_nic_netdev(const topo_nic_t *n) { return n->nnetdev > 0 ? n->netdevs[0] : NULL; }
