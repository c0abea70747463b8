/* GPU utilisation monitor: samples one rank's GPU (NVML or a replayed stream), warns when the GPU
 * stays under-used (SM activity where the GPU counts it, else busy time), keeps per-rank stats
 * and prints the job-wide summary. */
#ifndef GPL_LAUNCHER_MONITOR_H
#define GPL_LAUNCHER_MONITOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>
#include <mpi.h>

#include "common/log.h"
#include "topology/nvml.h"

/* ---- Samples ---------------------------------------------------------------------------- */

/* Which fields of a sample the source could read (NVML answers NOT_SUPPORTED for some fields on
 * some boards; a replayed line may leave fields out). */
enum {
  MON_HAVE_BUSY = 1u << 0,      /* busy_pct */
  MON_HAVE_MEM = 1u << 1,       /* mem_used, mem_total */
  MON_HAVE_POWER = 1u << 2,     /* power_w */
  MON_HAVE_TEMP = 1u << 3,      /* temp_c */
  MON_HAVE_CLOCKS = 1u << 4,    /* sm_clock_mhz, mem_clock_mhz */
  MON_HAVE_PCIE = 1u << 5,      /* pcie_rx_kbs, pcie_tx_kbs */
  MON_HAVE_THROTTLE = 1u << 6,  /* throttle */
  MON_HAVE_ECC = 1u << 7,       /* ecc_corrected, ecc_uncorrected */
  MON_HAVE_MEMUTIL = 1u << 8,   /* mem_util_pct */
  MON_HAVE_SM_ACTIVE = 1u << 9, /* sm_active_pct, sm_occupancy_pct */
};

/* Two measures of how much a GPU works, and which one the under-use warning judges:
 *  - GPU busy (NVML's "utilization.gpu", nvmlDeviceGetUtilizationRates): the share of time at
 *    least one kernel ran, on however few SMs. A NCCL kernel spinning while it waits for a peer
 *    counts as busy, so a data-parallel job reads near 100% however little it computes;
 *  - SM activity (GPM, Hopper and later: NVML_GPM_METRIC_SM_UTIL, with SM_OCCUPANCY beside it):
 *    the share of SMs that were busy over the interval, which a waiting NCCL kernel barely moves.
 * The warning uses SM activity from the first sample that has it, and GPU busy on GPUs (and
 * recordings) without it; it names the measure it used. */
typedef enum mon_measure_e { MON_MEASURE_BUSY = 0, MON_MEASURE_SM_ACTIVE = 1 } mon_measure_t;
/* "GPU busy", "SM activity". */
const char *mon_measure_name(mon_measure_t m);

/* One reading of one GPU. */
typedef struct mon_sample_s {
  double t;                    /* seconds since the monitor started (NVML) or the file's "t" */
  int rank;                    /* the rank it belongs to (replay: the line's "rank"; -1 = any) */
  unsigned have;               /* MON_HAVE_* bits */
  double busy_pct;             /* GPU busy: % of the period a kernel ran (NVML "gpu") */
  double sm_active_pct;        /* SM activity: % of SMs busy since the previous sample (GPM) */
  double sm_occupancy_pct;     /* % of warps resident against the maximum (GPM) */
  double mem_util_pct;         /* memory controller utilisation % */
  uint64_t mem_used, mem_total; /* bytes of device memory */
  double power_w;              /* board power, watts */
  double temp_c;               /* GPU temperature, degrees C */
  unsigned sm_clock_mhz, mem_clock_mhz;
  double pcie_rx_kbs, pcie_tx_kbs; /* PCIe throughput, KB/s (NVML's unit) */
  uint64_t throttle;           /* NVML_THROTTLE_* bits active at the sample */
  uint64_t ecc_corrected;      /* volatile ECC error counts since the driver loaded */
  uint64_t ecc_uncorrected;
  int nxid;                    /* XID events seen since the previous sample */
  int xid;                     /* the last of them (0 when none) */
} mon_sample_t;

/* ---- Sampling sources: a small table of functions, one per kind of source ------------------ */

/* Which GPU a source reads: the identity dcgm-exporter puts in its labels (gpu, UUID, pci_bus_id,
 * device, modelName), so that the Prometheus textfile names the GPU the way its dashboards do. */
typedef struct mon_ident_s {
  int index;      /* NVML's device index (dcgm-exporter's "gpu"); -1 when unknown */
  char uuid[96];  /* "GPU-8d1c..." ("" when unknown) */
  char pci[32];   /* "00000000:3B:00.0": NVML's and DCGM's spelling */
  char model[96]; /* "NVIDIA H100 80GB HBM3" */
} mon_ident_t;

typedef struct mon_source_s mon_source_t;
typedef struct mon_source_ops_s {
  const char *name; /* "nvml", "replay" */
  /* Read the next sample. 0: *out filled; 1: no more samples (end of a replayed stream);
   * negative: error (the monitor logs it and keeps going on the next tick). */
  int (*read)(mon_source_t *src, mon_sample_t *out);
  void (*close)(mon_source_t *src);
  /* The GPU's identity (NULL for sources that have none, such as a replayed stream): 0 with
   * *out filled, or negative. */
  int (*ident)(mon_source_t *src, mon_ident_t *out);
} mon_source_ops_t;

struct mon_source_s {
  const mon_source_ops_t *ops;
  void *state;
};

/* NVML source for one GPU, found by PCI bus id ("0000:3b:00.0") when given, else by NVML index,
 * through the project's NVML loader (topology/nvml.h: "libnvidia-ml.so.1", or GPULAUNCH_NVML_LIB).
 * Returns GPL_ENOTSUP with a reason in why (library or symbol missing, init failed) or GPL_ENOGPU
 * (no such device); nothing is logged here. */
int mon_nvml_open(const char *pci_bus_id, int index, mon_source_t **out, char *why, size_t whylen);

/* Replay source: reads JSON lines in the --metrics format from path, keeping the lines whose
 * "rank" equals rank (lines without "rank" apply to every rank). Time comes from each line's
 * "t", not from the clock. GPL_ENOENT / GPL_ESYS when the file cannot be opened. */
int mon_replay_open(const char *path, int rank, mon_source_t **out);
/* Parse one JSON line of the --metrics format into a sample (recordings made before "busy" was
 * named for what it is carry it as "sm": read the same). 0, or GPL_EINVAL when the line is not a
 * JSON object or has none of "t", "busy", "sm", "sm_active". */
int mon_sample_from_json(const char *line, mon_sample_t *s);
/* The sample as one JSON object (the --metrics line, without newline); caller frees. */
char *mon_sample_to_json(const mon_sample_t *s, const char *host, int gpu);

/* ---- The monitor --------------------------------------------------------------------------- */

typedef struct mon_opts_s {
  int enabled;           /* [monitor] enabled (default 1) */
  double interval;       /* [monitor] interval, seconds between ticks (default 5) */
  double sm_threshold;   /* [monitor] sm_threshold, percent (default 80), of the judged measure */
  double window;         /* [monitor] window, seconds under the threshold before warning (60) */
  const char *replay;    /* [monitor] replay: JSON lines to replay instead of NVML (NULL: NVML) */
  const char *metrics;   /* [monitor] metrics / --metrics: append each sample as a JSON line */
  const char *prom;      /* [monitor] prom / --prom: Prometheus textfile, rewritten each tick */
  unsigned prom_mode;    /* [monitor] prom_mode: the textfile's mode (default 0644: node_exporter
                          * runs as its own user and must read it) */
  double mem_headroom;   /* [monitor] mem_headroom: warn once when free device memory stays under
                          * this percent of the total for window (default 5; 0: off) */
  const char *job;       /* the "job" label of the textfile: the scheduler's job id (NULL: "") */
  log_level_t off_level; /* level of the one "monitor off" line (default LOG_LVL_WARN; callers
                          * may pass LOG_LVL_INFO on all but the first rank of a node) */
} mon_opts_t;

/* Fill the defaults above. */
void mon_opts_default(mon_opts_t *o);
/* Fill from the config's [monitor] section (--metrics/--prom are conf_set overrides of
 * monitor.metrics/monitor.prom), and job from the scheduler's or mpirun's job id
 * (util_sched_job_id). The strings stay owned by the config and the environment. In monitor_conf.c, built
 * into gpulaunch only (the gpl_ops library does not need conf.c). Returns 0. */
struct conf_s;
int mon_opts_from_conf(mon_opts_t *o, const struct conf_s *c);
/* Point the supervisor's hooks (launcher/sup/supervise.h) at a monitor: tick -> mon_tick, each
 * output line -> mon_note_line, oom_seen -> mon_oom_seen, peak_mem_mib -> mon_peak_mem_mib,
 * mem_total_mib -> mon_mem_total_mib, new_attempt -> mon_new_attempt,
 * interval from the monitor's options (0 when it is off: no timer). attach/detach are left as
 * they were. In monitor_hooks.c, built into gpulaunch only. */
struct sup_hooks_s;
struct monitor_s;
void mon_hooks_fill(struct sup_hooks_s *h, struct monitor_s *m);

typedef struct monitor_s monitor_t;

/* Create this rank's monitor for one GPU (gpu: the index printed in messages, and the NVML index
 * when pci_bus_id is NULL). Never fails because NVML is missing: the monitor is then off
 * (mon_active() == 0), and says so once, at opts->off_level. Fails only on bad options
 * (GPL_EINVAL), a replay or output file that cannot be opened (GPL_ENOENT/GPL_ESYS) or memory.
 * Paths in metrics/prom may hold %r (rank) and %h (host); a prom path without %r gets
 * "-rank<N>" inserted before ".prom", since every rank needs its own textfile. */
int mon_create(monitor_t **out, const mon_opts_t *opts, int rank, const char *host, int gpu,
               const char *pci_bus_id);
/* Same with a source made by the caller (tests, custom sources); the monitor owns src. */
int mon_create_with_source(monitor_t **out, const mon_opts_t *opts, int rank, const char *host,
                           int gpu, mon_source_t *src);
/* 1 when the monitor samples; 0 when it is off (disabled, no NVML, no such GPU, replay ended). */
int mon_active(const monitor_t *m);
/* Seconds between ticks ([monitor] interval). */
double mon_interval(const monitor_t *m);
/* Take one sample: update the stats, the threshold window (one warning per monitor), the
 * device memory headroom (one warning per monitor when free memory stays under mem_headroom
 * percent for window), the metrics line and the Prometheus file. Call from a timer every opts->interval seconds; it never
 * waits on other ranks. Returns 0, 1 when the source has no more samples (replay ended; the
 * monitor turns off), or a negative code for an output error (logged once; sampling goes on). */
int mon_tick(monitor_t *m);
/* Tick until the source ends (replay), at most max_ticks times (<= 0: no limit). Tests and
 * `[monitor] replay` runs without a timer use it. Returns the number of samples taken. */
int mon_drain(monitor_t *m, int max_ticks);
/* Free the monitor (closes the source and the output files). NULL is fine. */
void mon_destroy(monitor_t *m);

/* ---- Stats and the job-wide summary -------------------------------------------------------- */

/* Per-rank stats: a plain fixed-size struct, so that every rank can send it with
 * mpix_allgather. A rank whose monitor is off still sends one (samples = 0). */
typedef struct mon_stats_s {
  int32_t rank;
  int32_t gpu;
  char host[64];
  int32_t active;            /* 1 when the monitor sampled (0: off) */
  int32_t warned;            /* 1 when the under-threshold warning was printed */
  uint64_t samples;          /* samples with a GPU busy reading */
  double mean_busy;          /* mean GPU busy % */
  double p5_busy;            /* 5th percentile GPU busy % (0.1% resolution) */
  uint64_t sm_samples;       /* samples with an SM activity reading (GPM) */
  double mean_sm_active;     /* mean SM activity % (0 without GPM) */
  double p5_sm_active;
  double mean_sm_occupancy;
  int32_t measure;           /* mon_measure_t the warning and low_seconds judged */
  int32_t pad0_;
  double low_seconds;        /* time spent under the threshold (of that measure) */
  double mean_sm_clock_mhz;  /* mean SM clock (0 when unknown) */
  uint64_t peak_mem_used;    /* bytes */
  uint64_t mem_total;        /* bytes */
  double max_power_w;
  double max_temp_c;
  uint64_t throttle_mask;    /* every NVML_THROTTLE_* bit seen */
  uint64_t throttle_samples; /* samples with a NVML_THROTTLE_SLOWDOWN bit */
  uint64_t ecc_corrected;    /* increase over the run */
  uint64_t ecc_uncorrected;
  uint64_t xid_count;
  int32_t last_xid;
  int32_t mem_warned;        /* 1 when the low device memory warning was printed */
} mon_stats_t;

/* This rank's stats (m may be NULL: an inactive record for rank/host/gpu given to mon_create,
 * or zeros). */
void mon_stats(const monitor_t *m, mon_stats_t *out);
/* Stats for a rank that has no monitor at all (rank, host, gpu filled, samples = 0). */
void mon_stats_empty(mon_stats_t *out, int rank, const char *host, int gpu);

/* Gather every rank's stats on every rank of comm (bounded by timeout_s; on timeout the missing
 * ranks are named by mpix). all must hold comm's size entries. */
int mon_gather(const mon_stats_t *mine, MPI_Comm comm, double timeout_s, mon_stats_t *all);

/* The straggler: the rank that drags the others. See monitor_summary.c for the rule. */
typedef struct mon_straggler_s {
  int index;          /* index into the stats array, -1 when no rank has samples */
  int clear;          /* 1 when it stands out (a real straggler), 0 when it is only the lowest */
  double median_busy; /* median of the ranks' mean GPU busy % */
  char reason[256];   /* one sentence */
} mon_straggler_t;
void mon_find_straggler(const mon_stats_t *all, int n, double sm_threshold, mon_straggler_t *out);

/* Print the job-wide table (per rank: samples, mean/p5 GPU busy %, mean SM activity %, peak
 * memory, max power/temp, throttling, ECC/XID) and the straggler line to f, and add a "monitor"
 * object to summary (when not NULL). Ranks without samples are listed as "off". Rank 0 calls it after mon_gather. */
void mon_summary(const mon_stats_t *all, int n, double sm_threshold, FILE *f, cJSON *summary);

/* Everything rank 0 prints at the end, in one call on every rank of comm: each rank's stats
 * gathered with a deadline (m may be NULL or off: the rank then sends an empty record), then on
 * rank 0 the table and straggler line to f and the "monitor" object in summary. When no rank
 * sampled at all (no GPU anywhere) nothing is printed and summary gets {"active": false}.
 * Returns 0 or the gather's error (GPL_ETIMEDOUT names the missing ranks). */
int mon_job_summary(const monitor_t *m, MPI_Comm comm, double timeout_s, FILE *f, cJSON *summary);

/* ---- Out-of-memory --------------------------------------------------------------------------- */

/* Does this line of the program's output report a GPU out-of-memory error? ("CUDA out of
 * memory", torch.cuda.OutOfMemoryError, cudaErrorMemoryAllocation, CUBLAS_STATUS_ALLOC_FAILED,
 * "out of memory" next to CUDA/GPU/NCCL words...). A host OOM ("Cannot allocate memory", the
 * kernel's OOM killer) is not one. 1 or 0. */
int mon_is_cuda_oom(const char *line, size_t len);
/* Feed one line of the program's output (stdout or stderr) to the monitor: 1 when it reports a
 * CUDA OOM (remembered for mon_oom_seen; over NVML, the first of an attempt takes a sample at
 * once, so that the peak includes what the program held as it failed), else 0. Works on a monitor that is off, and m may be
 * NULL (then only the line is checked). */
int mon_note_line(monitor_t *m, const char *line, size_t len);
/* 1 when mon_note_line saw a CUDA OOM among the program's last MON_OOM_LAST_LINES output lines
 * since mon_new_attempt: what a program prints as it dies, not an OOM it caught and recovered
 * from long before (a batch-size finder, a retry with a smaller batch). */
int mon_oom_seen(const monitor_t *m);
#define MON_OOM_LAST_LINES 64
/* A new attempt of the program starts: forget the OOM seen in the last one. m may be NULL. */
void mon_new_attempt(monitor_t *m);
/* Peak device memory used that the monitor saw, in MiB; -1 when it saw none. */
double mon_peak_mem_mib(const monitor_t *m);
/* Total device memory the monitor saw, in MiB; -1 when it saw none. */
double mon_mem_total_mib(const monitor_t *m);
/* The root-cause text for a CUDA OOM: "CUDA out of memory on rank 3 (host h1) GPU 3: peak
 * device memory seen by the monitor 79.2 GiB of 80.0 GiB" (or "... the monitor saw no memory
 * samples" when it was off). m may be NULL. Returns buf. */
const char *mon_oom_cause(const monitor_t *m, char *buf, size_t len);

/* "79.2 GiB" style, for messages. Returns buf. */
const char *mon_fmt_bytes(uint64_t bytes, char *buf, size_t len);

#endif
