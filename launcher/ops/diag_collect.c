/* diag sections: versions, system, GPUs, topology and plan, network, environment, kernel log. */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <hwloc/export.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/kmsg.h"
#include "common/safefile.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "gpulaunch/version.h"
#include "launcher/ops/diag.h"
#include "launcher/ops/diag_int.h"
#include "common/redact.h"
#include "topology/net.h"
#include "topology/nvml.h"
#include "topology/plan.h"
#include "topology/report.h"
#include "topology/topo.h"

extern char **environ;

/* Call `int fn(int *)` from the first library of libs that loads. RTLD_NODELETE: the CUDA
 * runtime and NCCL allocate at load time and never free; unloading them would turn that into
 * leaks (and unmapped code that destructors may still call). 0 and *out, or -1 with why. */
static int dl_version(const char *const *libs, const char *fn, int *out, char *which, size_t wlen) {
  *out = 0;
  for (const char *const *l = libs; *l; l++) {
    void *h = dlopen(*l, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) continue;
    int (*f)(int *);
    void *p = dlsym(h, fn);
    memcpy(&f, &p, sizeof p);
    int rc = f ? f(out) : -1;
    util_strlcpy(which, *l, wlen);
    dlclose(h);
    return rc == 0 ? 0 : -1;
  }
  snprintf(which, wlen, "not found");
  return -1;
}

static void first_line(const char *path, char *buf, size_t len) {
  util_read_small(path, buf, len);
  buf[strcspn(buf, "\n")] = 0;
}

static void os_pretty_name(char *buf, size_t len) {
  char *txt = NULL;
  size_t n;
  snprintf(buf, len, "unknown");
  if (safefile_read_text("/etc/os-release", &txt, &n) < 0) return;
  char *p = strstr(txt, "PRETTY_NAME=");
  if (p) {
    p += strlen("PRETTY_NAME=");
    if (*p == '"') p++;
    size_t k = strcspn(p, "\"\n");
    p[k] = 0;
    util_strlcpy(buf, p, len);
  }
  free(txt);
}

void diag_collect_versions(diag_facts_t *f, strbuf_t *b) {
  strbuf_printf(b, "gpulaunch        %s\n", GPULAUNCH_VERSION_STRING);
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
  int mlen = 0, init = 0;
  MPI_Initialized(&init);
  /* MPI_Get_library_version may be called before MPI_Init (MPI-3). */
  if (MPI_Get_library_version(mpi, &mlen) == MPI_SUCCESS) {
    mpi[strcspn(mpi, "\n")] = 0;
    strbuf_printf(b, "MPI              %s (initialised: %s)\n", mpi, init ? "yes" : "no");
  }
  unsigned hv = hwloc_get_api_version();
  strbuf_printf(b, "hwloc            API %u.%u.%u at run time, %u.%u.%u at build time\n", hv >> 16,
                (hv >> 8) & 0xff, hv & 0xff, HWLOC_API_VERSION >> 16, (HWLOC_API_VERSION >> 8) & 0xff,
                HWLOC_API_VERSION & 0xff);
  strbuf_printf(b, "cJSON            %s\n", cJSON_Version());

  char nvml[128], drv[96], why[256];
  int nvml_cuda = 0;
  f->nvml_ok = nvml_versions(nvml, sizeof nvml, drv, sizeof drv, &nvml_cuda) == 0;
  if (f->nvml_ok) {
    util_strlcpy(f->driver_version, drv, sizeof f->driver_version);
    strbuf_printf(b, "NVML             %s (driver %s, CUDA %d.%d)\n", nvml, drv, nvml_cuda / 1000,
                  (nvml_cuda % 1000) / 10);
  } else {
    util_strlcpy(f->nvml_why, nvml, sizeof f->nvml_why);
    strbuf_printf(b, "NVML             unavailable: %s\n", nvml);
  }
  static const char *const libcuda[] = {"libcuda.so.1", NULL};
  static const char *const libcudart[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                                          "libcudart.so", NULL};
  static const char *const libnccl[] = {"libnccl.so.2", "libnccl.so", NULL};
  char which[64];
  int v = 0;
  if (dl_version(libcuda, "cuDriverGetVersion", &v, which, sizeof which) == 0) f->driver_cuda = v;
  strbuf_printf(b, "CUDA driver      %s (libcuda: %s)\n",
                diag_cuda_version_str(f->driver_cuda, why, sizeof why), which);
  if (!f->driver_cuda && nvml_cuda) f->driver_cuda = nvml_cuda;
  if (dl_version(libcudart, "cudaRuntimeGetVersion", &v, which, sizeof which) == 0) {
    f->runtime_cuda = v;
    int dv = 0;
    char w2[64];
    dl_version(libcudart, "cudaDriverGetVersion", &dv, w2, sizeof w2);
    strbuf_printf(b, "CUDA runtime     %s (%s; CUDA driver seen by the runtime: %s)\n",
                  diag_cuda_version_str(v, why, sizeof why), which,
                  dv > 0 ? diag_cuda_version_str(dv, w2, sizeof w2) : "none");
    if (!f->driver_cuda && dv > 0) f->driver_cuda = dv;
  } else {
    strbuf_printf(b, "CUDA runtime     not found (%s)\n", which);
  }
  if (dl_version(libnccl, "ncclGetVersion", &v, which, sizeof which) == 0) {
    int maj = v >= 10000 ? v / 10000 : v / 1000;
    int min = v >= 10000 ? (v % 10000) / 100 : (v % 1000) / 100;
    strbuf_printf(b, "NCCL             %d.%d.%d (%s)\n", maj, min, v % 100, which);
  } else {
    strbuf_printf(b, "NCCL             not found (%s)\n", which);
  }
  char line[256];
  first_line("/proc/driver/nvidia/version", line, sizeof line);
  strbuf_printf(b, "NVIDIA module    %s\n", line[0] ? line : "not loaded (/proc/driver/nvidia/version)");
  struct utsname u;
  if (uname(&u) == 0)
    strbuf_printf(b, "kernel           %s %s %s %s\n", u.sysname, u.release, u.version, u.machine);
  os_pretty_name(line, sizeof line);
  strbuf_printf(b, "OS               %s\n", line);
}

void diag_collect_system(diag_facts_t *f, strbuf_t *b) {
  strbuf_printf(b, "host             %s\n", util_hostname());
  strbuf_printf(b, "CPUs online      %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
  char line[256];
  char *txt = NULL;
  size_t n;
  if (safefile_read_text("/proc/meminfo", &txt, &n) == 0) {
    txt[strcspn(txt, "\n")] = 0;
    strbuf_printf(b, "memory           %s\n", txt);
    free(txt);
  }
  struct rlimit rl;
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
    f->memlock = rl.rlim_cur;
    if (rl.rlim_cur == RLIM_INFINITY) strbuf_printf(b, "memlock limit    unlimited\n");
    else strbuf_printf(b, "memlock limit    %llu KiB\n", (unsigned long long)rl.rlim_cur / 1024);
  }
  struct statvfs sv;
  if (statvfs("/dev/shm", &sv) == 0) {
    f->shm_bytes = (unsigned long long)sv.f_blocks * sv.f_frsize;
    strbuf_printf(b, "/dev/shm         %llu MiB\n", f->shm_bytes >> 20);
  }
  /* NVIDIA PCI functions from sysfs: the "is there a GPU at all" ground truth. */
  f->nvidia_pci = diag_count_nvidia_pci(NULL);
  strbuf_printf(b, "NVIDIA GPUs (PCI) %d%s\n", f->nvidia_pci,
                f->nvidia_pci < 0 ? " (sysfs not readable)" : "");
  DIR *d = opendir("/sys/bus/pci/devices");
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char p[512];
    snprintf(p, sizeof p, "/sys/bus/pci/devices/%s/vendor", e->d_name);
    first_line(p, line, sizeof line);
    if (strcasecmp(line, "0x10de") != 0) continue;
    char dev[32], cls[32];
    snprintf(p, sizeof p, "/sys/bus/pci/devices/%s/device", e->d_name);
    first_line(p, dev, sizeof dev);
    snprintf(p, sizeof p, "/sys/bus/pci/devices/%s/class", e->d_name);
    first_line(p, cls, sizeof cls);
    strbuf_printf(b, "  %s  device %s class %s\n", e->d_name, dev, cls);
  }
  if (d) closedir(d);
  /* RDMA devices: memlock matters only where there is one. */
  d = opendir("/sys/class/infiniband");
  f->rdma_devices = 0;
  while (d && (e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') {
      f->rdma_devices++;
      strbuf_printf(b, "RDMA device      %s\n", e->d_name);
    }
  if (d) closedir(d);
}

/* Sysfs attribute of a network interface; "" when absent. */
static void net_attr(const char *ifname, const char *attr, char *buf, size_t len) {
  char p[512];
  snprintf(p, sizeof p, "/sys/class/net/%s/%s", ifname, attr);
  first_line(p, buf, len);
}

void diag_collect_network(diag_facts_t *f, strbuf_t *b, diag_verdicts_t *v, double timeout) {
  strbuf_printf(b, "%-16s %-8s %-7s %-10s %-6s %-9s %s\n", "interface", "state", "carrier",
                "speed", "mtu", "physical", "driver");
  DIR *d = opendir("/sys/class/net");
  struct dirent *e;
  char names[64][64];
  int up[64], nif = 0, nup = 0;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char state[32], carrier[8], speed[16], mtu[16], link[512], drv[128] = "-";
    net_attr(e->d_name, "operstate", state, sizeof state);
    net_attr(e->d_name, "carrier", carrier, sizeof carrier);
    net_attr(e->d_name, "speed", speed, sizeof speed);
    net_attr(e->d_name, "mtu", mtu, sizeof mtu);
    char p[512];
    snprintf(p, sizeof p, "/sys/class/net/%s/device", e->d_name);
    int physical = access(p, F_OK) == 0;
    snprintf(p, sizeof p, "/sys/class/net/%s/device/driver", e->d_name);
    ssize_t k = readlink(p, link, sizeof link - 1);
    if (k > 0) {
      link[k] = 0;
      const char *base = strrchr(link, '/');
      util_strlcpy(drv, base ? base + 1 : link, sizeof drv);
    }
    int is_up = strcmp(state, "up") == 0 || (strcmp(state, "unknown") == 0 && strcmp(carrier, "1") == 0);
    strbuf_printf(b, "%-16s %-8s %-7s %-10s %-6s %-9s %s\n", e->d_name, state,
                  carrier[0] ? carrier : "-", speed[0] && speed[0] != '-' ? speed : "-", mtu,
                  physical ? "yes" : "no", drv);
    if (nif < 64) {
      util_strlcpy(names[nif], e->d_name, sizeof names[nif]);
      up[nif++] = is_up;
    }
    if (is_up && strcmp(e->d_name, "lo") != 0) nup++;
    if (physical && !is_up)
      diag_verdict_add(v, DIAG_WARN, "NIC %s is down (operstate %s, carrier %s)", e->d_name,
                       state[0] ? state : "?", carrier[0] ? carrier : "?");
  }
  if (d) closedir(d);
  f->interfaces_up = nup;
  if (d && nup == 0)
    diag_verdict_add(v, DIAG_ERROR, "no network interface is up besides lo: other nodes cannot "
                     "be reached");

  /* NCCL_SOCKET_IFNAME: does any interface here match, and is it up? Matched as NCCL matches
   * it (topology/net.h: '^' and '=' only at the start, prefixes otherwise). */
  const char *want = getenv("NCCL_SOCKET_IFNAME");
  net_iflist_t list;
  if (want && *want && want[0] != '^' && net_iflist_parse(want, &list, NULL, 0) == 0) {
    int matched = 0, matched_up = 0;
    for (int i = 0; i < nif; i++)
      if (net_iflist_match(&list, names[i])) {
        matched++;
        matched_up += up[i];
      }
    if (!matched)
      diag_verdict_add(v, DIAG_ERROR, "NCCL_SOCKET_IFNAME=%s matches no interface on this host",
                       want);
    else if (!matched_up)
      diag_verdict_add(v, DIAG_ERROR, "NCCL_SOCKET_IFNAME=%s matches only interfaces that are down",
                       want);
  }

  static const char *const cmds[][4] = {{"ip", "-d", "addr", NULL},
                                        {"ip", "route", NULL, NULL},
                                        {"ip", "-6", "route", NULL}};
  for (size_t i = 0; i < GPL_ARRAY_LEN(cmds); i++) {
    strbuf_printf(b, "\n$ %s %s %s\n", cmds[i][0], cmds[i][1], cmds[i][2] ? cmds[i][2] : "");
    char *out = NULL;
    int st;
    int rc = diag_run((char *const *)cmds[i], timeout, &out, &st);
    if (rc == GPL_ENOENT) {
      strbuf_printf(b, "(ip not found; /proc/net/route follows)\n");
      char *txt = NULL;
      size_t n;
      if (safefile_read_text("/proc/net/route", &txt, &n) == 0) strbuf_append(b, txt);
      free(txt);
      break;
    }
    strbuf_append(b, out ? out : "");
    if (rc == GPL_ETIMEDOUT) strbuf_printf(b, "(killed after %.0f s)\n", timeout);
    free(out);
  }
}

/* Variables worth a look in a support ticket. */
static int env_wanted(const char *name) {
  static const char *const prefixes[] = {"NCCL_", "CUDA_", "OMPI_", "PMIX_", "PRTE_", "SLURM_",
                                         "UCX_", "GPULAUNCH_", "NVIDIA_", "TORCH_", "HWLOC_",
                                         "OMP_", "FI_", "MASTER_"};
  static const char *const names[] = {"LD_LIBRARY_PATH", "PATH", "WORLD_SIZE", "RANK", "LOCAL_RANK",
                                      "LOCAL_WORLD_SIZE", "HOSTNAME"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(prefixes); i++)
    if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  for (size_t i = 0; i < GPL_ARRAY_LEN(names); i++)
    if (strcmp(name, names[i]) == 0) return 1;
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void diag_collect_env(strbuf_t *b) {
  size_t n = 0;
  for (char **e = environ; e && *e; e++) n++;
  char **sorted = malloc((n ? n : 1) * sizeof *sorted);
  if (!sorted) return;
  size_t k = 0;
  for (char **e = environ; e && *e; e++) sorted[k++] = *e;
  qsort(sorted, k, sizeof *sorted, cmp_str);
  for (size_t i = 0; i < k; i++) {
    const char *eq = strchr(sorted[i], '=');
    if (!eq) continue;
    char name[256];
    size_t nl = (size_t)(eq - sorted[i]);
    if (nl >= sizeof name) continue;
    memcpy(name, sorted[i], nl);
    name[nl] = 0;
    if (!env_wanted(name)) continue;
    strbuf_printf(b, "%s=%s\n", name, redact_env_value(name, eq + 1));
  }
  free(sorted);
}

/* Kernel messages about the NVIDIA driver (NVRM) and XID errors, from /dev/kmsg without
 * blocking (or dmesg). Returns the number of XID lines; -1 when the log is not readable. */
int diag_collect_kernel(strbuf_t *b, double timeout, char *last_xid, size_t xlen) {
  strbuf_t all = STRBUF_INIT;
  strbuf_append(&all, "");
  char kwhy[256] = "";
  const char *source = "/dev/kmsg";
  if (kmsg_read(&all, kwhy, sizeof kwhy) == GPL_ESYS) {
    static char *const dmesg[] = {"dmesg", NULL};
    char *out = NULL;
    int st;
    source = "dmesg";
    if (diag_run(dmesg, timeout, &out, &st) != 0 || st != 0) {
      strbuf_printf(b, "kernel log not readable (%s; dmesg: %s)\n", kwhy,
                    out && *out ? out : "failed");
      free(out);
      strbuf_free(&all);
      return -1;
    }
    strbuf_append(&all, out);
    free(out);
  }
  int xids = 0, lines = 0;
  strbuf_printf(b, "NVRM / Xid lines from %s:\n", source);
  for (char *save = NULL, *l = strtok_r(all.s, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    if (!strstr(l, "NVRM") && !strcasestr(l, "xid")) continue;
    if (strcasestr(l, "xid")) {
      xids++;
      if (last_xid) util_strlcpy(last_xid, l, xlen);
    }
    if (lines++ < 400) strbuf_printf(b, "%s\n", l);
  }
  if (lines == 0) strbuf_printf(b, "(none)\n");
  strbuf_free(&all);
  return xids;
}

/* The topology XML: the file given, or this machine exported by hwloc with every I/O object. */
int diag_collect_topology(const char *xml, char **out) {
  *out = NULL;
  if (xml) {
    size_t n;
    return safefile_read_text(xml, out, &n);
  }
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) < 0) return GPL_EHWLOC;
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL);
  int rc = GPL_EHWLOC;
  char *buf = NULL;
  int len = 0;
  if (hwloc_topology_load(t) == 0 && hwloc_topology_export_xmlbuffer(t, &buf, &len, 0) == 0) {
    *out = strdup(buf);
    rc = *out ? 0 : GPL_ENOMEM;
    hwloc_free_xmlbuffer(t, buf);
  }
  hwloc_topology_destroy(t);
  return rc;
}

void diag_collect_plan(const char *xml, int local_size, strbuf_t *b) {
  topo_t *t = NULL;
  int rc = topo_load(&t, xml);
  if (rc < 0) {
    strbuf_printf(b, "topology could not be read: %s\n", gpl_strerror(rc));
    return;
  }
  char err[512] = "";
  plan_opts_t o;
  plan_opts_default(&o);
  o.local_size = local_size;
  o.no_gpus = t->ngpus == 0;
  o.err = err;
  o.errlen = sizeof err;
  plan_t *p = NULL;
  rc = plan_make(t, &o, &p);
  if (rc < 0) {
    strbuf_printf(b, "no plan for %d local rank(s) on %s: %s\n", local_size, t->source,
                  err[0] ? err : gpl_strerror(rc));
    topo_free(t);
    return;
  }
  /* the topology module's own report: the GPU x NIC matrix and the plan with its reasons */
  char *txt = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&txt, &n);
  if (m) {
    report_text(m, t, p);
    fclose(m);
    strbuf_printf(b, "plan for %d local rank(s) of %s\n\n", p->nranks, t->source);
    strbuf_append(b, txt ? txt : "");
    free(txt);
  }
  plan_free(p);
  topo_free(t);
}
