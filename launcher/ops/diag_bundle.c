/* diag bundle: one folder per node plus SUMMARY.txt with every node's verdicts, and a .tar.gz. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/safefile.h"
#include "common/mpix.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "gpulaunch/version.h"
#include "launcher/ops/diag.h"
#include "launcher/ops/diag_int.h"

#define VERDICT_WIRE 4096 /* bytes of verdict text each rank sends to rank 0 */

void diag_opts_default(diag_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->make_tar = 1;
  o->cmd_timeout = 20.0;
  o->bug_report = 1;
  o->bug_report_timeout = DIAG_BUG_REPORT_TIMEOUT_S;
}

/* Run a command into a file of the bundle; a missing tool or a hang is a line in the file. */
static void capture(const char *dir, const char *file, char *const argv[], double timeout) {
  strbuf_t b = STRBUF_INIT;
  strbuf_printf(&b, "$");
  for (int i = 0; argv[i]; i++) strbuf_printf(&b, " %s", argv[i]);
  strbuf_append(&b, "\n");
  char *out = NULL;
  int st = 0;
  int rc = diag_run(argv, timeout, &out, &st);
  if (rc == GPL_ENOENT) strbuf_printf(&b, "%s not found on PATH\n", argv[0]);
  else if (rc < 0 && rc != GPL_ETIMEDOUT) strbuf_printf(&b, "could not run: %s\n", gpl_strerror(rc));
  if (out) strbuf_append(&b, out);
  if (rc == GPL_ETIMEDOUT) strbuf_printf(&b, "\n(killed after %.0f s: it hung)\n", timeout);
  else if (rc == 0 && st != 0) strbuf_printf(&b, "\n(exit status %d)\n", st);
  diag_write(dir, file, strbuf_str(&b));
  free(out);
  strbuf_free(&b);
}

/* Everything about this node into dir; its verdicts into v. */
static void node_sections(const diag_opts_t *o, const char *dir, diag_verdicts_t *v) {
  diag_facts_t f;
  memset(&f, 0, sizeof f);
  double to = o->cmd_timeout > 0 ? o->cmd_timeout : 20.0;
  strbuf_t b = STRBUF_INIT;

  diag_collect_versions(&f, &b);
  diag_write(dir, "versions.txt", strbuf_str(&b));
  strbuf_reset(&b);
  diag_collect_system(&f, &b);
  diag_write(dir, "system.txt", strbuf_str(&b));
  strbuf_reset(&b);

  diag_verdict_gpu(v, f.nvidia_pci, f.nvml_ok, f.nvml_why);
  diag_verdict_cuda(v, f.driver_cuda, f.runtime_cuda, f.driver_version);
  if (f.shm_bytes && f.shm_bytes < (1ull << 30))
    diag_verdict_add(v, DIAG_WARN, "/dev/shm is only %llu MiB: NCCL's shared-memory transport "
                     "needs more (docker run --shm-size=16g or --ipc=host)", f.shm_bytes >> 20);
  if (f.rdma_devices > 0 && f.memlock != (unsigned long long)RLIM_INFINITY)
    diag_verdict_add(v, DIAG_WARN, "locked-memory limit is %llu KiB with %d RDMA device(s): "
                     "RDMA registration fails; set `ulimit -l unlimited` (and in the container)",
                     f.memlock / 1024, f.rdma_devices);

  char *xml = NULL;
  int rc = diag_collect_topology(o->topology_xml, &xml);
  if (rc == 0) diag_write(dir, "topology.xml", xml);
  else {
    strbuf_printf(&b, "topology not available: %s\n", gpl_strerror(rc));
    diag_write(dir, "topology.txt", strbuf_str(&b));
    strbuf_reset(&b);
  }
  free(xml);
  diag_collect_plan(o->topology_xml, o->job ? o->job->local_size : 0, &b);
  diag_write(dir, "plan.txt", strbuf_str(&b));
  strbuf_reset(&b);

  static char *const smi_q[] = {"nvidia-smi", "-q", NULL};
  static char *const smi_topo[] = {"nvidia-smi", "topo", "-m", NULL};
  capture(dir, "nvidia-smi-q.txt", smi_q, to);
  capture(dir, "nvidia-smi-topo.txt", smi_topo, to);
  diag_collect_nvidia(o, dir, v);

  diag_collect_network(&f, &b, v, to);
  diag_write(dir, "network.txt", strbuf_str(&b));
  strbuf_reset(&b);

  if (o->write_config) {
    char *txt = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&txt, &n);
    if (m) {
      o->write_config(m, o->config_ctx);
      fclose(m);
      diag_write(dir, "config.txt", txt);
      free(txt);
    }
  }
  if (o->conf_path) {
    char *txt = NULL;
    size_t n;
    if (safefile_read_text(o->conf_path, &txt, &n) == 0) diag_write(dir, "config-file.conf", txt);
    free(txt);
  }

  diag_collect_env(&b);
  diag_write(dir, "env.txt", strbuf_str(&b));
  strbuf_reset(&b);

  char last[512] = "";
  int xids = diag_collect_kernel(&b, to, last, sizeof last);
  diag_write(dir, "kernel.txt", strbuf_str(&b));
  strbuf_reset(&b);
  if (xids > 0)
    diag_verdict_add(v, DIAG_WARN, "the kernel log has %d XID message%s (last: %.200s)", xids,
                     xids == 1 ? "" : "s", last);
  else if (xids < 0)
    diag_verdict_add(v, DIAG_INFO, "kernel log not readable here: XID errors could not be checked");

  if (!o->job) diag_verdict_add(v, DIAG_INFO, "run without MPI: this bundle covers this host only");
  if (diag_verdict_worst(v) < DIAG_WARN && f.nvml_ok)
    diag_verdict_add(v, DIAG_OK, "no problem found on this host");

  for (int i = 0; i < v->n; i++)
    strbuf_printf(&b, "[%s] %s\n", diag_level_name(v->level[i]), v->text[i]);
  diag_write(dir, "verdicts.txt", strbuf_str(&b));
  strbuf_free(&b);
}

/* Verdicts as "L\ttext\n" lines for the wire. */
static void verdicts_pack(const diag_verdicts_t *v, const char *host, char *buf, size_t len) {
  size_t o = (size_t)snprintf(buf, len, "%s\n", host);
  for (int i = 0; i < v->n && o < len; i++)
    o += (size_t)snprintf(buf + o, len - o, "%d\t%s\n", (int)v->level[i], v->text[i]);
  buf[len - 1] = 0;
}

static void summary_write(const char *out, const char *const *packs, int npacks, int nranks,
                          int mpi) {
  strbuf_t b = STRBUF_INIT;
  char now[40];
  util_iso_time(now, sizeof now);
  strbuf_printf(&b, "gpulaunch diag bundle, %s\n", now);
  strbuf_printf(&b, "gpulaunch %s on %s; %s\n\n", GPULAUNCH_VERSION_STRING, util_hostname(),
                mpi ? "under MPI" : "without MPI");
  strbuf_printf(&b, "Verdicts (worst first):\n");
  /* worst first, node order kept within a level */
  for (int lvl = DIAG_ERROR; lvl >= DIAG_OK; lvl--)
    for (int i = 0; i < npacks; i++) {
      if (!packs[i] || !*packs[i]) continue;
      const char *nl = strchr(packs[i], '\n');
      if (!nl) continue;
      int hl = (int)(nl - packs[i]);
      for (const char *p = nl + 1; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if ((int)strtol(p, NULL, 10) == lvl) {
          const char *tab = memchr(p, '\t', n);
          if (tab)
            strbuf_printf(&b, "  [%-5s] %.*s: %.*s\n", diag_level_name((diag_level_t)lvl), hl,
                          packs[i], (int)(n - (size_t)(tab + 1 - p)), tab + 1);
        }
        p += n + (e ? 1 : 0);
      }
    }
  strbuf_printf(&b, "\nRanks: %d. One folder per node (written by its first rank):\n", nranks);
  strbuf_printf(&b,
                "  versions.txt        gpulaunch, MPI, hwloc, NVML, CUDA driver/runtime, NCCL, kernel\n"
                "  system.txt          CPUs, memory, memlock, /dev/shm, NVIDIA PCI devices, RDMA\n"
                "  topology.xml        hwloc export (I/O devices kept)\n"
                "  plan.txt            GPU/CPU/NIC placement of the local ranks\n"
                "  nvidia-smi-q.txt    nvidia-smi -q\n"
                "  nvidia-smi-topo.txt nvidia-smi topo -m\n"
                "  network.txt         interfaces, ip -d addr, routes\n"
                "  config.txt          effective configuration (when a config was given)\n"
                "  env.txt             NCCL_/CUDA_/OMPI_/SLURM_/... variables\n"
                "  kernel.txt          NVRM and Xid kernel messages\n"
                "  fabricmanager.txt   nvidia-fabricmanager's state, journal and log (NVSwitch systems)\n"
                "  dcgmi-diag.txt      dcgmi diag -r 1 (where DCGM is installed)\n"
                "  nvidia-bug-report.txt, nvidia-bug-report.log.gz\n"
                "                      nvidia-bug-report.sh's output and NVIDIA's archive (where the\n"
                "                      driver's script is installed; not with --no-bug-report); the\n"
                "                      archive is NVIDIA's own, not redacted: review it before sharing\n"
                "  verdicts.txt        this node's verdicts\n"
                "Values of variables whose names look like credentials (*SECRET*, *TOKEN*, "
                "*PASSWORD*, *_KEY, AWS_*, ...) are redacted in every file.\n");
  diag_write(out, "SUMMARY.txt", strbuf_str(&b));
  strbuf_free(&b);
}

static void make_tar(const char *out, double timeout) {
  char a[4096], c[4096], tarpath[4200];
  util_strlcpy(a, out, sizeof a);
  util_strlcpy(c, out, sizeof c);
  const char *parent = dirname(a), *base = basename(c);
  snprintf(tarpath, sizeof tarpath, "%s.tar.gz", out);
  /* Made by us first (no link followed, 0600): tar then writes into that file. */
  char err[4400];
  int tfd;
  if (safefile_open_write(tarpath, &tfd, err, sizeof err) < 0) {
    LOG_WARN("diag: no tarball: %s", err);
    return;
  }
  close(tfd);
  char *argv[] = {"tar", "-czf", tarpath, "-C", (char *)parent, (char *)base, NULL};
  char *msg = NULL;
  int st = 0;
  int rc = diag_run(argv, timeout, &msg, &st);
  if (rc == GPL_ENOENT) LOG_INFO(DIAG, "tar not found: the bundle is the folder %s", out);
  else if (rc < 0 || st != 0)
    LOG_WARN("diag: tar of %s failed (%s): %s", out, rc < 0 ? gpl_strerror(rc) : "exit status",
             msg ? msg : "");
  free(msg);
}

int diag_bundle(const diag_opts_t *o, char *out_path, size_t len, diag_verdicts_t *verdicts) {
  const job_t *job = o->job;
  int rank = job ? job->rank : 0, size = job ? job->size : 1;
  int leader = !job || job->local_rank == 0;
  double timeout = job && job->timeout > 0 ? job->timeout : mpix_default_timeout();
  char out[1024];
  if (o->out_dir && *o->out_dir) {
    util_strlcpy(out, o->out_dir, sizeof out);
  } else {
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(out, sizeof out, "gpulaunch-diag-%s-%s", util_hostname(), stamp);
  }
  /* Every node writes under rank 0's name for the bundle (clocks and defaults may differ). */
  if (job && size > 1) CHECK(mpix_bcast(out, sizeof out, 0, job->world, timeout, "diag bundle name"));
  size_t ol = strlen(out);
  while (ol > 1 && out[ol - 1] == '/') out[--ol] = 0;
  if (out_path) util_strlcpy(out_path, out, len);

  diag_verdicts_t v;
  memset(&v, 0, sizeof v);
  char host_dir[1200];
  snprintf(host_dir, sizeof host_dir, "%s/%s", out, job ? job->host : util_hostname());
  int rc = 0;
  if (leader) {
    char err[PATH_MAX + 300];
    if ((rc = safefile_mkdir_p(host_dir, 0700, err, sizeof err)) < 0) {
      LOG_WARN("diag: cannot create the bundle's folder: %s", err);
    } else {
      node_sections(o, host_dir, &v);
    }
    if (diag_files_written() == 0) {
      /* nothing of this node is in the bundle: said in the verdicts (rank 0's SUMMARY.txt) and
       * by the exit status, never a "bundle in ..." that holds nothing */
      diag_verdict_add(&v, DIAG_ERROR, "diag: nothing could be written in %s (see the warnings)",
                       host_dir);
      rc = GPL_EIO;
    }
  }
  if (verdicts) *verdicts = v;

  char mine[VERDICT_WIRE];
  memset(mine, 0, sizeof mine);
  if (leader) verdicts_pack(&v, job ? job->host : util_hostname(), mine, sizeof mine);
  char *all = NULL;
  if (job && size > 1) {
    all = calloc((size_t)size, VERDICT_WIRE);
    if (!all) return GPL_ENOMEM;
    int grc = mpix_allgather(mine, VERDICT_WIRE, all, job->world, timeout, "diag verdicts");
    if (grc < 0) {
      free(all);
      return grc;
    }
  }
  if (rank == 0) {
    const char **packs = calloc((size_t)size, sizeof *packs);
    if (!packs) {
      free(all);
      return GPL_ENOMEM;
    }
    for (int i = 0; i < size; i++) packs[i] = all ? all + (size_t)i * VERDICT_WIRE : mine;
    summary_write(out, packs, all ? size : 1, size, job != NULL);
    free(packs);
  }
  free(all);
  /* Every node has written its folder before rank 0 packs (on a shared file system, all). */
  if (job && size > 1) CHECK(mpix_barrier(job->world, timeout, "diag bundle written"));
  if (rank == 0 && o->make_tar) make_tar(out, o->cmd_timeout > 0 ? o->cmd_timeout * 3 : 60);
  return rc;
}
