/* gpulaunch accept: the check results, the options, and the functions of the accept_* files
 * (node checks, the start-up's reachability, bandwidth, bad-node search, reports). */
#ifndef GPL_LAUNCHER_ACCEPT_H
#define GPL_LAUNCHER_ACCEPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "common/strbuf.h"
#include "topology/path.h"
#include "topology/topo.h"

/* ---- One check's result ------------------------------------------------------------------ */

/* How a check ended. Exit status of `gpulaunch accept` (accept_exit_code):
 *   any FAIL                         -> GPL_EXIT_ACCEPT_FAIL (73)
 *   else any ERROR (could not run)   -> GPL_EXIT_ACCEPT_ERROR (74)
 *   else any WARN and strict         -> GPL_EXIT_ACCEPT_FAIL (73)
 *   else                             -> 0 (WARN and SKIP do not fail a run unless strict) */
typedef enum accept_status_e {
  ACCEPT_PASS = 0,
  ACCEPT_WARN,  /* works, but not as it should (a GPU without a PCIe-near NIC) */
  ACCEPT_FAIL,  /* the node or job does not meet the expectation */
  ACCEPT_SKIP,  /* not checked; the detail says why */
  ACCEPT_ERROR, /* the check could not run (a timeout, a topology that does not load) */
  ACCEPT_NSTATUS
} accept_status_t;

/** "pass", "warn", "fail", "skipped", "error". */
const char *accept_status_name(accept_status_t s);
/** Inverse of accept_status_name. \return 0 or GPL_EINVAL. */
int accept_status_parse(const char *s, accept_status_t *out);

#define ACCEPT_NAME_LEN 32
#define ACCEPT_HOST_LEN 64
#define ACCEPT_SUBJECT_LEN 48
#define ACCEPT_TEXT_LEN 160
#define ACCEPT_DETAIL_LEN 640

typedef struct accept_check_s {
  char name[ACCEPT_NAME_LEN];       /* "gpu_count", "nic", "busbw", ... (accept_check_desc) */
  char host[ACCEPT_HOST_LEN];       /* the node of a node/rank check; "" for job checks */
  int node;                         /* node index; -1 for job checks */
  int rank;                         /* world rank of a per-rank check; -1 otherwise */
  char subject[ACCEPT_SUBJECT_LEN]; /* what on the node: "GPU3", "mlx5_0", "h1+h2"; "" */
  accept_status_t status;
  int has_value;                    /* value is a number */
  double value;                     /* measured number, in unit */
  char unit[16];                    /* "GB/s", "Gb/s", "C", "" */
  char value_text[ACCEPT_TEXT_LEN]; /* measured, as shown to people */
  char threshold[ACCEPT_TEXT_LEN];  /* what was expected ("== 8", ">= 100 Gb/s"); "" = none */
  char detail[ACCEPT_DETAIL_LEN];   /* the reason of a fail/warn/skip, or how the value came */
} accept_check_t;

/** One-line description of a check name for the reports ("GPUs per node as expected"). */
const char *accept_check_desc(const char *name);

/** The suite a check is reported in: its node, or -1 (the job's) for a job check. */
static inline int accept_check_suite(const accept_check_t *c) { return c->node < 0 ? -1 : c->node; }

/* ---- The whole run's report (rank 0 builds it) -------------------------------------------- */

/* Repeated measurements of one group: the search measures every group it judges several times,
 * spread over the search (interleaved with the other groups), and keeps the best. */
#define ACCEPT_PASSES_MAX 8

/* One bandwidth measurement of a group of nodes (a pair in the ring, a half in the halving). */
typedef struct accept_meas_s {
  char phase[16];  /* "ring", "confirm", "control", "halving" */
  int round;       /* round of its last measurement (groups of one round ran at the same time) */
  int nnodes;
  int *nodes;      /* node indexes, owned */
  char label[192]; /* "h0 + h1", "h0 h1 h2 h3" */
  double busbw;    /* GB/s: the best of the samples; < 0 when every measurement failed */
  int nsamples;    /* how many times the group was measured (0: only busbw is known) */
  double samples[ACCEPT_PASSES_MAX]; /* each measurement, GB/s, in the order taken (< 0 failed) */
  double reference;/* the bandwidth it was compared with (GB/s); 0 = none */
  int flagged;     /* below fraction x reference */
} accept_meas_t;

typedef struct accept_report_s {
  accept_check_t *checks;
  int nchecks, cap;
  accept_meas_t *meas;
  int nmeas, mcap;
  int nnodes, nranks;
  char **hosts;        /* host of each node (nnodes), owned */
  char **bad_hosts;    /* hosts for --exclude-out, owned */
  int nbad;
  char **bad_links;    /* "h1 + h2" pairs slow while both hosts are fine elsewhere, owned */
  int nbadlinks;
  /* The job's allreduce (busbw check). */
  char backend[16];    /* "cpu", "nccl"; "" when it did not run */
  double ar_bytes, ar_seconds, ar_algbw, ar_busbw, ar_threshold; /* threshold < 0: none */
  int ar_iters;
  char threshold_source[ACCEPT_DETAIL_LEN]; /* "config: 10 GB/s", "auto: ..." */
  double fraction;     /* [accept] pair_fraction */
  char search_mode[16];
  char search_summary[ACCEPT_DETAIL_LEN];
  double search_jitter;/* the noise the search measured (0..1): how far a healthy group's repeated
                        * measurements fell below its best one */
  char search_rule[ACCEPT_DETAIL_LEN]; /* which threshold the search applied, and why */
  char started[40];    /* ISO 8601 */
  double seconds;      /* the whole run */
  int strict;
  int exit_code;       /* accept_exit_code, once decided */
  cJSON *settings;     /* the [accept] values used, for the JSON file (owned) */
  cJSON *latency;      /* the latency measurements (accept_latency_judge), for the JSON file and
                        * the HTML page (owned); NULL: not measured */
} accept_report_t;

void accept_report_init(accept_report_t *r);
void accept_report_free(accept_report_t *r);
/** Add a check (copied). \return 0 or GPL_ENOMEM. */
int accept_report_add(accept_report_t *r, const accept_check_t *c);
/** Add a measurement (nodes copied). \return 0 or GPL_ENOMEM. */
int accept_report_add_meas(accept_report_t *r, const accept_meas_t *m);
/** Add a host to the exclude list (once). */
int accept_report_add_bad_host(accept_report_t *r, const char *host);
int accept_report_add_bad_link(accept_report_t *r, const char *label);
/** Count of checks per status (counts has ACCEPT_NSTATUS entries). */
void accept_report_counts(const accept_report_t *r, int *counts);
/** The exit status the rule above gives. */
int accept_exit_code(const accept_report_t *r);
/** The run's verdict from its exit status: ACCEPT_PASS (0), ACCEPT_FAIL (GPL_EXIT_ACCEPT_FAIL)
 * or ACCEPT_ERROR (anything else); each report words it in its own way. */
accept_status_t accept_verdict(int exit_code);
/** Hosts with a failed node or rank check (and, strict, a warning) join the exclude list. */
void accept_report_collect_bad_hosts(accept_report_t *r);

/* A check being filled in: start from accept_check_init, then set a status with the helpers. */
void accept_check_init(accept_check_t *c, const char *name, const char *host, int node, int rank,
                       const char *subject);
void accept_check_set(accept_check_t *c, accept_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4))); /* status + detail */
void accept_check_value(accept_check_t *c, double v, const char *unit, const char *fmt, ...)
    __attribute__((format(printf, 4, 5))); /* numeric value + its text (fmt NULL: "%g unit") */
void accept_check_text(accept_check_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3))); /* value text only */
void accept_check_threshold(accept_check_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A list of checks made on one rank, before they go to rank 0. */
typedef struct accept_list_s {
  accept_check_t *v;
  int n, cap;
} accept_list_t;
int accept_list_add(accept_list_t *l, const accept_check_t *c);
void accept_list_free(accept_list_t *l);

/** JSON of one check (the shape of "checks" items in --json), and back. */
cJSON *accept_check_to_json(const accept_check_t *c);
int accept_check_from_json(const cJSON *j, accept_check_t *c);

/* ---- Options -------------------------------------------------------------------------------- */

typedef enum accept_search_mode_e {
  ACCEPT_SEARCH_OFF = 0, /* no search */
  ACCEPT_SEARCH_RING,    /* ring of node pairs, then pairs against good nodes; halving when the
                          * ring names nobody but the job's bus bandwidth failed */
  ACCEPT_SEARCH_HALVING  /* halving only */
} accept_search_mode_t;

typedef struct accept_opts_s {
  int gpus;                 /* expected GPUs per node; -1 not checked */
  char gpu_model[128];      /* expected model (case-insensitive substring); "" not checked */
  char nics[512];           /* expected NICs, comma list; "" not checked */
  double nic_min_speed;     /* Gb/s; 0 not checked */
  path_class_t nic_max_path;/* farthest GPU->NIC class that passes (default PHB); farther warns */
  int min_busbw_auto;       /* min_busbw = auto */
  double min_busbw;         /* GB/s when not auto */
  uint64_t size;            /* allreduce bytes; 0: 64M on cpu, 1G on nccl */
  uint64_t pair_size;       /* bytes of the search's measurements; 0: size (at most 64M) */
  double fraction;          /* pair_fraction */
  int iters;                /* timed iterations per measurement */
  double budget;            /* seconds one measurement may take before it does fewer iterations */
  accept_search_mode_t search;
  int strict;               /* warnings count as failures */
  int compare;              /* [accept] compare: 1 majority (nodes against each other), 0 off */
  double max_gpu_temp;      /* C (NVML) */
  double max_latency_us;    /* absolute bound on round trips and the 8-byte allreduce (p50); 0 none */
  char iface[64];           /* the interface every rank must use (the start-up's choice is checked
                             * against it); "" = whatever the start-up agreed on */
  int probe;                /* [topology] probe: 0 off, 1 ring, 2 all (the start-up's preflight) */
  double probe_timeout;     /* [topology] probe_timeout (reported in the settings) */
  /* Command line. */
  const char *json, *junit, *html, *exclude;
  int progress;             /* -1 auto (a terminal), 0 off, 1 on */
} accept_opts_t;

struct conf_s;
/** Defaults (as the [accept] schema). */
void accept_opts_default(accept_opts_t *o);
/** Read [accept] (and [topology] probe, probe_timeout). \return 0 or GPL_ECONFIG (printed). */
int accept_opts_from_conf(accept_opts_t *o, const struct conf_s *c);
/** Parse the mode's own arguments; overrides of config keys go through conf_set (validated).
 * \return 0, 1 (help printed) or GPL_EINVAL (message printed). */
int accept_opts_from_argv(accept_opts_t *o, struct conf_s *c, int argc, char **argv, int print);
/** The settings as a JSON object (for the report). */
cJSON *accept_opts_json(const accept_opts_t *o);

/* ---- Node and rank checks (accept_node.c, accept_nvml.c) ---------------------------------- */

/* What a node check sees. A topology from a file is checked as that node would be, except for
 * what only the live machine can tell (binding, NVML, kernel log, interface state). */
typedef struct accept_node_ctx_s {
  const topo_t *t;
  const accept_opts_t *o;
  const char *host;  /* the node's name in the reports */
  int node;
  int nranks_here;   /* ranks on this node */
} accept_node_ctx_t;

/** Run the table of node checks (accept_node.c) and append their results. */
int accept_node_checks(const accept_node_ctx_t *ctx, accept_list_t *out);
/** The per-rank check: is this rank bound to CPUs local to its GPU? gpu < 0: skipped.
 * binding: the rank's CPU set (NULL: read it from the process; a file topology skips). */
int accept_rank_binding(const topo_t *t, const char *host, int node, int rank, int gpu,
                        hwloc_const_bitmap_t binding, accept_list_t *out);
/** NVML and kernel-log checks of the node's GPUs (accept_nvml.c); skipped with the reason when
 * NVML is not available or the topology is a file. */
int accept_nvml_checks(const accept_node_ctx_t *ctx, accept_list_t *out);
/** "NVRM: Xid" lines in a kernel log text: count, and the last one in last (may be NULL). */
int accept_xid_scan(const char *text, char *last, size_t len);

/** EFA devices under root's /sys/class/infiniband (an InfiniBand device whose driver is efa):
 * their count, their names comma-separated in names. */
int accept_efa_devices(const char *root, char *names, size_t len);
/** The efa_plugin row (accept_efa.c): skipped without EFA devices; with them, NCCL's network
 * plugin (NCCL_NET_PLUGIN's libnccl-net-NAME.so, else libnccl-net.so or libnccl-net-ofi.so) must
 * be in ld_path (LD_LIBRARY_PATH), /etc/ld.so.conf's folders or the system's, else a FAIL with
 * the fix (aws-ofi-nccl installed but off the path: the folder to add). root prefixes every path
 * ("" or NULL: /). \return 0 or GPL_ENOMEM. */
int accept_efa_check(const char *root, const char *ld_path, const char *net_plugin, const char *host, int node,
                     accept_list_t *out);
/** The node check: accept_efa_check on this machine (GPULAUNCH_TEST_SYSROOT: another root). */
int accept_efa_node_check(const accept_node_ctx_t *ctx, accept_list_t *out);

/** PCIe generation/width that give hwloc's link speed (GB/s): "Gen4 x16" or "Gen3 x16 or
 * Gen4 x8"; "" when nothing matches. */
const char *accept_pcie_decode(double gbps, char *buf, size_t len);

/* ---- Nodes against each other (accept_compare.c) ------------------------------------------ */

/* What is compared between nodes. A property with an explicit expectation ([accept] gpus,
 * gpu_model, nics) is checked against that instead. */
typedef enum accept_prop_e {
  ACCEPT_PROP_GPU_COUNT = 0, /* "8" */
  ACCEPT_PROP_GPU_MODEL,     /* "NVIDIA H200", "7 x A, 1 x B" when mixed, "no GPU" */
  ACCEPT_PROP_NIC,           /* "32 x Elastic Fabric Adapter (EFA), 1 x ENA 100 Gb/s", "none" */
  ACCEPT_PROP_PCIE,          /* GPU links: "x16" (live width) or "63.0 GB/s (Gen5 x16 ...)" (file) */
  ACCEPT_PROP_NVLINK,        /* "18 of 18 links active" per GPU (NVML); "" where not known */
  ACCEPT_NPROPS
} accept_prop_t;

#define ACCEPT_PROFILE_LEN ACCEPT_TEXT_LEN

/* A node's hardware as compared with the others'. Plain data (sent as bytes). */
typedef struct accept_profile_s {
  int32_t known;                            /* 0: the node's topology could not be loaded */
  char v[ACCEPT_NPROPS][ACCEPT_PROFILE_LEN]; /* each property as text; "" = not known here */
} accept_profile_t;

/** "gpu count", "gpu model", "nics", "pcie links", "nvlink" (the subject of its rows). */
const char *accept_prop_name(accept_prop_t p);
/** The profile of a node from its topology (NULL: not loaded) and the node checks it ran
 * (pcie_link, nvlink rows; may be NULL). \return 0 or GPL_ENOMEM. */
int accept_profile_make(const topo_t *t, const accept_list_t *checks, accept_profile_t *p);
/** One "majority" row per node and compared property (subject: accept_prop_name): pass when the
 * node has the value more than half of the nodes that report it have; fail naming the host, its
 * value and the majority's (and who holds it) when it differs; with no majority, every node
 * fails and the row says who has what. Properties with an explicit expectation are left out;
 * nothing when [accept] compare = off; one skipped row for a one-node job. \return 0 or
 * GPL_ENOMEM. */
int accept_compare_nodes(const accept_profile_t *profiles, int nnodes, const char *const *hosts,
                         const accept_opts_t *o, accept_list_t *out);

/* ---- Network: the start-up's interface and preflight as checks (accept_reach.c) ------------- */

typedef struct accept_if_s {
  char name[32];
  char addr[48];   /* IPv4 or IPv6 text */
  int speed_mbps;  /* -1 unknown, or a virtual interface's made-up speed */
  char why[160];   /* how it was chosen */
} accept_if_t;

struct job_s;
struct place_s;
/** This rank's interface as the start-up's interface agreement chose it (place_rank), with its
 * link speed for min_busbw = auto. \return 0, or GPL_ENET when the agreement gave it none (why
 * says it). */
int accept_job_iface(const struct place_s *pl, accept_if_t *out);

/** The reachability rows, added on world rank 0 (the others add nothing; not collective): the
 * start-up's interface agreement (every node's choice, [accept] iface as an expectation), its TCP
 * preflight's verdict, and one "reach" row per path the preflight could not open. accept does not
 * probe a second time: what it reports is what the job's programs get. \return 0 or GPL_ENOMEM. */
int accept_reach_checks(const struct job_s *job, const struct place_s *pl, const accept_opts_t *o,
                        accept_list_t *out);

/* ---- Bandwidth (accept_bw.c) ---------------------------------------------------------------- */

/** nccl-tests' bus bandwidth of an allreduce: bytes / seconds x 2(n-1)/n, in GB/s (1e9). */
double accept_busbw(double bytes, double seconds, int nranks);

/* The job-wide allreduce through comm/ (cpu: Open MPI, nccl: GPUs). */
typedef struct accept_ar_s {
  char backend[16];
  double bytes, seconds, algbw, busbw; /* seconds per iteration (slowest rank) */
  int iters, nranks;
} accept_ar_t;

/** Allreduce `size` bytes of floats over all ranks (size 0: 64M on cpu, 1G on nccl): one warm-up,
 * then up to iters timed iterations, fewer when one takes longer than budget/iters. backend:
 * [comm] backend ("auto", "cpu", "nccl"). Every rank calls it. \return 0 or a negative code. */
int accept_allreduce(const struct job_s *job, const char *backend, uint64_t size, int iters,
                     double budget, accept_ar_t *out);

/** One round of the search: the nodes with color_of_node[node] = g >= 0 form group g; every rank
 * of a group's nodes runs an allreduce of `bytes` in the group's own communicator (all groups at
 * the same time); bw[g] gets the group's bus bandwidth in GB/s (< 0: failed) on every rank: its
 * best iteration (interference only ever slows an iteration down). jitter[g] (may be NULL): the
 * share of time a typical (median) iteration lost against the best one, a measure of noise.
 * Every rank of the job calls it. \return 0 or a negative code (a timeout names the ranks). */
int accept_measure_round(const struct job_s *job, const int *color_of_node, int ngroups,
                         size_t bytes, int iters, double budget, double *bw, double *jitter);

/* What a node tells the others for the auto threshold. Plain data (sent as bytes). */
typedef struct accept_nodeinfo_s {
  int32_t node;
  int32_t ngpus;
  float gpu_pcie_gbps;    /* slowest GPU PCIe link (hwloc), 0 unknown */
  int32_t if_speed_mbps;  /* the job's interface, -1 unknown */
  char ifname[32];
  int32_t rdma_up;        /* RDMA NICs up with a known speed */
  int32_t rdma_mbps;      /* their speeds summed */
  int32_t live;
  char boot_id[40];       /* the kernel's boot id: nodes with the same one share a machine */
  accept_profile_t profile; /* the node's hardware, for the comparison between nodes */
} accept_nodeinfo_t;

/** The threshold for min_busbw = auto from what the nodes reported; < 0 when none can be
 * derived. how always says what was used, or why nothing was. */
double accept_auto_busbw(const accept_nodeinfo_t *nodes, int nnodes, int gpu_backend,
                         char *how, size_t len);

/* ---- Latency (accept_lat.c: the measurements over MPI; accept_lat_judge.c: the verdicts) ---- */

/* The small allreduce sizes timed: 8 B to 64 KiB. */
#define ACCEPT_LAT_NSIZES 6
extern const int accept_lat_sizes[ACCEPT_LAT_NSIZES];
/* A node's round trips are judged against the majority's: slow when beyond this many times the
 * majority's plus this many microseconds (the noise of a healthy fabric, and of veths on a busy
 * machine). */
#define ACCEPT_LAT_FACTOR 3.0
#define ACCEPT_LAT_SLACK_US 500.0

typedef struct accept_lat_s {
  int nranks;
  /* The job-wide allreduce of each size (all ranks): microseconds per call, the slowest rank's. */
  double ar_p50[ACCEPT_LAT_NSIZES], ar_p99[ACCEPT_LAT_NSIZES];
  int ar_iters[ACCEPT_LAT_NSIZES];
  /* Round trips of 8 bytes between the first ranks of each pair of nodes: [a * nnodes + b] with
   * a < b, microseconds; < 0 not measured. */
  int nnodes;
  double *rtt_p50, *rtt_p99;
  int *rtt_n;
} accept_lat_t;

/** Time the small allreduces (every rank) and a round trip per pair of nodes (their first ranks,
 * the disjoint pairs of a round at the same time, or one pair at a time when serial: nodes that
 * share a machine's cores), all within about budget_s (spread over the sizes and the pairs).
 * Every rank of the job calls it and gets the same results. \return 0 or a negative code (a
 * timeout names the ranks). */
int accept_latency_measure(const struct job_s *job, double budget_s, int serial, accept_lat_t *out);
void accept_lat_free(accept_lat_t *l);
/** p-th percentile (0..100) of n values, sorted in place (nearest rank); -1 when n is 0. */
double accept_percentile(double *v, int n, double p);
/** The verdicts (rank 0): one "latency" row per node (its fastest round trip against the
 * majority's: a node whose every round trip is slow is named), one "rtt" row per pair of nodes
 * (a slow pair between two healthy nodes is a slow link: a warning against the majority, a failure
 * above max_latency_us, which adds it to the report's bad links), one
 * "allreduce_latency" row per size; [accept] max_latency_us as an absolute bound on the round
 * trips and the 8-byte allreduce. The majority is left out with [accept] compare = off or fewer
 * than three nodes. The numbers go to rep->latency. \return 0 or GPL_ENOMEM. */
int accept_latency_judge(const accept_lat_t *l, const char *const *hosts, const accept_opts_t *o,
                         accept_report_t *rep);

/* ---- Bad-node / bad-link search (accept_search.c: the decisions, no MPI) ------------------- */

/* The measurements of one group, repeated once per pass. */
typedef struct accept_series_s {
  int n;                          /* measurements so far */
  double bw[ACCEPT_PASSES_MAX];   /* GB/s each; < 0 failed */
  int round[ACCEPT_PASSES_MAX];
} accept_series_t;

/** The best measurement of a series (interference only ever slows a transfer down, so the best
 * one is the closest to what the path can do); -1 when none succeeded. */
double accept_series_best(const accept_series_t *x);

/* Default number of passes: every group the search judges is measured this many times, the
 * repetitions spread over the search, and its best counts. */
#define ACCEPT_SEARCH_PASSES 3

typedef struct accept_search_s {
  int nnodes;
  double fraction;    /* [accept] pair_fraction: what a quiet fabric is held to */
  accept_search_mode_t mode;
  int phase;          /* internal */
  int round;
  int passes;         /* measurements of each group (ACCEPT_SEARCH_PASSES) */
  int pass;           /* the pass being measured (internal) */
  /* ring */
  int nlinks;
  int *link_a, *link_b;
  accept_series_t *link;
  double *link_bw;    /* per link: its best; -2 not measured yet, -1 failed */
  double reference;
  double *score;      /* per node: best of its ring links */
  int *verdict;       /* per node: 0 unknown, 1 good, 2 suspect, 3 bad (named), 4 not reproduced */
  accept_series_t *conf; /* per node: its pairs with a good node (confirmation, halving) */
  double *confirm_bw; /* per node: the best of conf; -1 none */
  int *partner;       /* per node: the good node of those pairs */
  int *link_state;    /* per link: 0 ok, 1 flagged, 2 confirmed bad link, 3 not reproduced */
  accept_series_t *relink; /* per link: its re-measurements when flagged */
  /* control: a pair of good nodes measured alongside the confirmations, so that they are judged
   * against what the fabric gave at the same time (a machine that got busier since the ring
   * slows the control too) */
  int ctl_a, ctl_b;
  accept_series_t ctl;
  double ctl_ref;     /* the reference of the confirmations: min(reference, best control) */
  /* halving */
  int *suspects;      /* nodes still suspected */
  int nsuspects;
  double half_ref;
  accept_series_t half[2];
  /* current round */
  int ngroups;
  int **groups;       /* node lists of the round's groups */
  int *gsize;
  int *gkind;         /* internal: what the group measures */
  int *gref;          /* internal: the node/link it is about */
  int *machine;       /* per node: nodes with the same value share CPUs (namespaces, containers
                       * on one machine); their groups are never measured at the same time */
  char note[ACCEPT_DETAIL_LEN];
  int inconclusive;   /* a slow measurement that could not be pinned on a node or link */
  int na;             /* nothing to search (one node, two nodes, off) */
  double *jit;        /* within-measurement jitter of every measurement (accept_measure_round) */
  int njit, capjit;
  double spread;      /* how far a healthy group's repeated measurements fall below its best */
  double jitter;      /* median within-measurement jitter */
  double noise;       /* the noise used: spread (jitter when no group was measured twice) */
  double eff;         /* the fraction applied (accept_search_rule) */
  char rule[ACCEPT_DETAIL_LEN]; /* the rule applied and why, for the reports */
  int fallback;       /* halving started because the ring named nobody */
} accept_search_t;

/** The fraction of the reference a group must reach, given the measured noise: pair_fraction
 * when the noise is within what it tolerates, else lower so that only what stands out of the
 * noise is flagged (never below ACCEPT_SEARCH_FLOOR). why (may be NULL) says which and why. */
double accept_search_rule(double fraction, double noise, char *why, size_t len);
#define ACCEPT_SEARCH_FLOOR 0.15

/** Start a search over nnodes nodes (every node on a machine of its own until
 * accept_search_set_machines says otherwise) with ACCEPT_SEARCH_PASSES passes.
 * \return 0 or GPL_ENOMEM. */
int accept_search_init(accept_search_t *s, int nnodes, double fraction, accept_search_mode_t mode);
void accept_search_free(accept_search_t *s);
/** Measure every group passes times (1..ACCEPT_PASSES_MAX); call before the first round. */
void accept_search_set_passes(accept_search_t *s, int passes);
/** Which nodes share a machine (machine[node], any numbering): groups that share one are put in
 * different rounds, since measuring them at once would have them compete for the same cores. */
void accept_search_set_machines(accept_search_t *s, const int *machine);
/** The next round: color[node] = group index or -1 (nnodes entries). \return the number of
 * groups (0: the search is over). phase (optional) gets "ring", "confirm" or "halving". */
int accept_search_next(accept_search_t *s, int *color, const char **phase);
/** The round's results: bw[g] in GB/s (< 0: failed), jitter[g] (may be NULL: none) the noise
 * within each measurement. Groups are judged on the best of their repeated measurements, against
 * accept_search_rule(pair_fraction, measured noise) x reference. The report (may be NULL) gets
 * the measurements. */
void accept_search_feed(accept_search_t *s, const double *bw, const double *jitter,
                        accept_report_t *rep, const char *const *hosts);
/** Switch to halving when the ring named nobody (used when the job's busbw check failed). */
void accept_search_fallback_halving(accept_search_t *s);
/** The search's results as checks ("bad_node" in the named node's suite, "bad_link",
 * "pair_search" for the job), the bad hosts/links of the report, and the report's fraction,
 * noise and rule. */
void accept_search_report(const accept_search_t *s, const char *const *hosts, accept_report_t *rep);

/* ---- Reports (accept_out_*.c) --------------------------------------------------------------- */

/** The terminal table, counts and verdict. */
void accept_print_table(const accept_report_t *r, FILE *f);
/** Progress line on a terminal (rank 0): "[3/7] allreduce 64 MiB ..."; done = 1 clears it. */
void accept_progress(int on, int step, int nsteps, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** The whole report as JSON (caller frees). */
cJSON *accept_report_json(const accept_report_t *r);
int accept_write_json(const accept_report_t *r, const char *path);
int accept_write_junit(const accept_report_t *r, const char *path);
int accept_write_html(const accept_report_t *r, const char *path);
int accept_write_exclude(const accept_report_t *r, const char *path);
/** Write a whole report file through safefile_write_text; a failure (the file cannot be opened,
 * a full file system) is logged as a warning naming the file. \return 0 or GPL_ESYS. */
int accept_write_text(const char *path, const char *text);
/** accept_write_text of a report built in b, then b freed; GPL_ENOMEM when building it ran out. */
int accept_write_strbuf(const char *path, strbuf_t *b);
/** Why the last accept_write_text that failed did ("/x/a.json: No space left on device"), for the
 * verdict; "" when none failed. */
const char *accept_write_error(void);
/** Append s with XML's special characters escaped (and control characters dropped), so the
 * text is safe in element content and in double-quoted attributes. */
void accept_xml_escape(strbuf_t *b, const char *s);
/** Build a report back from the JSON document (for tests and re-rendering). */
int accept_report_from_json(const cJSON *doc, accept_report_t *r);

#endif
