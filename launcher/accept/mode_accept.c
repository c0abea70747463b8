/* `gpulaunch accept`: cluster acceptance checks under mpirun. Every rank places itself (the
 * start-up's interface agreement and TCP preflight are the reachability checks), node leaders
 * check their node, everyone takes part in the job's allreduce and the bad-node search; rank 0
 * gathers the results and writes the table and the reports.
 * Every rank makes the same collective calls in the same order whatever its own results, so a
 * failing check never leaves another rank waiting; each wait has a deadline. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/mpix.h"
#include "common/safefile.h"
#include "common/util.h"
#include "launcher/accept/accept.h"
#include "launcher/launcher.h"
#include "launcher/job/outpath.h"
#include "launcher/job/place.h"
#include "topology/plan.h"
#include "topology/topo.h"

#define NSTEPS 8

/* Is a person watching? Our own stderr on a terminal, or -- under Open MPI, where a rank's
 * output goes through pipes -- the terminal of the mpirun that started us (our parent on the
 * first node). --progress / --no-progress decide otherwise. */
static int watching(void) {
  if (isatty(2)) return 1;
  char path[64], target[PATH_MAX];
  snprintf(path, sizeof path, "/proc/%d/fd/2", (int)getppid());
  ssize_t n = readlink(path, target, sizeof target - 1);
  if (n <= 0) return 0;
  target[n] = 0;
  return strncmp(target, "/dev/pts/", 9) == 0 || strncmp(target, "/dev/tty", 8) == 0;
}

static const char *xml_path(const launch_t *L) {
  if (L->topology_xml) return L->topology_xml;
  const char *x = L->conf->topology.xml;
  return x && *x ? x : NULL;
}

/* This node's facts for min_busbw = auto and the comparison between nodes (the leader's are
 * used; checks: the node checks it ran). */
static void node_info(const topo_t *t, const accept_if_t *ifc, int node, const accept_list_t *checks,
                      accept_nodeinfo_t *ni) {
  memset(ni, 0, sizeof *ni);
  ni->node = node;
  ni->if_speed_mbps = ifc->speed_mbps;
  char *boot = NULL;
  size_t blen = 0;
  if (safefile_read_text("/proc/sys/kernel/random/boot_id", &boot, &blen) == GPL_OK) {
    util_strlcpy(ni->boot_id, util_trim(boot), sizeof ni->boot_id);
    free(boot);
  }
  util_strlcpy(ni->ifname, ifc->name, sizeof ni->ifname);
  (void)accept_profile_make(t, checks, &ni->profile); /* out of memory: not known, not compared */
  if (!t) return;
  ni->live = t->live;
  ni->ngpus = t->ngpus;
  for (int g = 0; g < t->ngpus; g++)
    if (t->gpus[g].link_gbps > 0 && (ni->gpu_pcie_gbps == 0 || t->gpus[g].link_gbps < ni->gpu_pcie_gbps))
      ni->gpu_pcie_gbps = t->gpus[g].link_gbps;
  for (int i = 0; i < t->nnics; i++)
    if (t->nics[i].rdma[0] && t->nics[i].state == TOPO_LINK_UP && t->nics[i].speed_mbps > 0) {
      ni->rdma_up++;
      ni->rdma_mbps += t->nics[i].speed_mbps;
    }
}

/* Every rank's checks to rank 0 (JSON text per rank). */
static int gather_checks(const job_t *job, const accept_list_t *mine, accept_report_t *rep) {
  cJSON *arr = cJSON_CreateArray();
  ALLOCCHECK(arr);
  for (int i = 0; i < mine->n; i++) cJSON_AddItemToArray(arr, accept_check_to_json(&mine->v[i]));
  char *text = cJSON_PrintUnformatted(arr);
  cJSON_Delete(arr);
  ALLOCCHECK(text);
  char **all = NULL;
  int rc = mpix_allgather_str(text, &all, job->world, job->timeout, "accept: gathering the checks");
  free(text);
  CHECK(rc);
  for (int r = 0; r < job->size && job->rank == 0; r++) {
    cJSON *a = cJSON_Parse(all[r]);
    const cJSON *it;
    cJSON_ArrayForEach(it, a) {
      accept_check_t c;
      if (accept_check_from_json(it, &c) == GPL_OK) accept_report_add(rep, &c);
    }
    cJSON_Delete(a);
  }
  mpix_free_strs(all, job->size);
  return GPL_OK;
}

static void add_list(accept_report_t *rep, const accept_list_t *l) {
  for (int i = 0; i < l->n; i++) accept_report_add(rep, &l->v[i]);
}

/* The job's allreduce and its threshold (rank 0 records the check). */
static int run_busbw(launch_t *L, const accept_opts_t *o, const accept_nodeinfo_t *ni, accept_report_t *rep,
                     int *failed) {
  job_t *job = L->job;
  accept_check_t c;
  accept_check_init(&c, "busbw", "", -1, -1, "allreduce");
  *failed = 0;
  if (job->size < 2) {
    accept_check_set(&c, ACCEPT_SKIP, "one rank: an allreduce moves no data");
    return job->rank == 0 ? accept_report_add(rep, &c) : GPL_OK;
  }
  accept_ar_t ar;
  int rc = accept_allreduce(job, L->conf->comm.backend, o->size, o->iters, o->budget, &ar);
  /* Every rank agrees on the outcome (one failing rank fails the check on all). */
  double bad = rc < 0 ? 1 : 0;
  int arc = mpix_allreduce_double(&bad, MPI_MAX, job->world, job->timeout, "accept: allreduce outcome");
  if (arc < 0) return arc;
  if (bad > 0) {
    *failed = 1;
    if (job->rank != 0) return GPL_OK;
    snprintf(rep->backend, sizeof rep->backend, "%s", ar.backend);
    accept_check_set(&c, ACCEPT_ERROR, "the allreduce did not complete (%s); see the log for the rank "
                     "that failed", rc < 0 ? gpl_strerror(rc) : "on another rank");
    return accept_report_add(rep, &c);
  }
  /* Every rank decides the same way (same time, same node facts), since the search's fallback
   * depends on it and every rank must take the same path. */
  double thr;
  char source[ACCEPT_DETAIL_LEN];
  if (o->min_busbw_auto) {
    thr = accept_auto_busbw(ni, job->nnodes, strcmp(ar.backend, "nccl") == 0, source, sizeof source);
  } else {
    thr = o->min_busbw;
    snprintf(source, sizeof source, "config: [accept] min_busbw = %g GB/s (%s)", o->min_busbw,
             conf_origin(L->conf, &L->conf->accept.min_busbw));
  }
  *failed = thr >= 0 && ar.busbw < thr;
  if (job->rank != 0) return GPL_OK;
  snprintf(rep->backend, sizeof rep->backend, "%s", ar.backend);
  snprintf(rep->threshold_source, sizeof rep->threshold_source, "%s", source);
  rep->ar_bytes = ar.bytes;
  rep->ar_seconds = ar.seconds;
  rep->ar_algbw = ar.algbw;
  rep->ar_busbw = ar.busbw;
  rep->ar_iters = ar.iters;
  rep->ar_threshold = thr;
  snprintf(c.subject, sizeof c.subject, "allreduce %.0f MiB", ar.bytes / 1048576.0);
  accept_check_value(&c, ar.busbw, "GB/s", "%.3f GB/s", ar.busbw);
  if (thr < 0) {
    accept_check_set(&c, ACCEPT_SKIP, "measured (%s backend, %d ranks, %d iterations), not judged: %s",
                     ar.backend, job->size, ar.iters, rep->threshold_source);
  } else {
    accept_check_threshold(&c, ">= %.3f GB/s (%s)", thr, o->min_busbw_auto ? "auto" : "config");
    accept_check_set(&c, *failed ? ACCEPT_FAIL : ACCEPT_PASS, "%.3f GB/s is %s the threshold %.3f GB/s "
                     "(%s). %s backend, %d ranks, %d iterations of %.0f bytes, %.6f s each; bus bandwidth = "
                     "bytes / time x 2(n-1)/n", ar.busbw, *failed ? "below" : "at or above", thr,
                     rep->threshold_source, ar.backend, job->size, ar.iters, ar.bytes, ar.seconds);
  }
  return accept_report_add(rep, &c);
}

/* The latency measurements (every rank) and their verdicts (rank 0). A failed measurement is an
 * ERROR row; a timeout ends the run as any other. */
static int run_latency(const job_t *job, const accept_opts_t *o, const accept_nodeinfo_t *ni, char **hosts,
                       accept_report_t *rep) {
  /* nodes on one machine (the same kernel boot id) share its cores: one pair at a time */
  int shared = 0;
  for (int n = 1; n < job->nnodes && !shared; n++)
    for (int m = 0; m < n && !shared; m++)
      shared = ni[n].boot_id[0] && strcmp(ni[m].boot_id, ni[n].boot_id) == 0;
  accept_lat_t lat;
  int rc = accept_latency_measure(job, o->budget, shared, &lat);
  if (rc == GPL_OK && job->rank == 0) {
    rc = accept_latency_judge(&lat, (const char *const *)hosts, o, rep);
  } else if (rc < 0 && rc != GPL_ETIMEDOUT && job->rank == 0) {
    accept_check_t c;
    accept_check_init(&c, "rtt", "", -1, -1, "");
    accept_check_set(&c, ACCEPT_ERROR, "the latency measurements failed: %s", gpl_strerror(rc));
    accept_report_add(rep, &c);
  }
  accept_lat_free(&lat);
  return rc == GPL_ETIMEDOUT ? rc : GPL_OK;
}

/* The bad-node search: every rank runs the same decisions on the same (allgathered) numbers. */
static int run_search(const job_t *job, const accept_opts_t *o, const accept_nodeinfo_t *ni, int busbw_failed,
                      char **hosts, accept_report_t *rep, int progress) {
  accept_search_t s;
  CHECK(accept_search_init(&s, job->nnodes, o->fraction, o->search));
  int *color = calloc((size_t)job->nnodes, sizeof *color);
  double *bw = calloc((size_t)job->nnodes, sizeof *bw);
  double *jit = calloc((size_t)job->nnodes, sizeof *jit);
  int rc = GPL_OK;
  if (!color || !bw || !jit) {
    rc = GPL_ENOMEM;
    goto done;
  }
  /* Nodes on one machine (namespaces, containers: the same kernel boot id) share its cores:
   * their groups are measured one after the other, not at once. */
  for (int n = 0; n < job->nnodes; n++) {
    color[n] = n;
    for (int m = 0; m < n && ni[n].boot_id[0]; m++)
      if (strcmp(ni[m].boot_id, ni[n].boot_id) == 0) {
        color[n] = color[m];
        break;
      }
  }
  accept_search_set_machines(&s, color);
  uint64_t bytes = o->pair_size;
  if (!bytes) bytes = o->size ? o->size : (64ull << 20);
  if (!o->pair_size && bytes > (64ull << 20)) bytes = 64ull << 20;
  int fell_back = 0;
  for (;;) {
    const char *phase = "";
    int ng = accept_search_next(&s, color, &phase);
    if (ng < 0) {
      rc = ng;
      break;
    }
    if (ng == 0) {
      /* The ring named nobody although the job is slow: halving may find a node that slows the
       * collective without slowing any pair. */
      if (!fell_back && busbw_failed && o->search == ACCEPT_SEARCH_RING && !s.na) {
        fell_back = 1;
        accept_search_fallback_halving(&s);
        if (s.mode == ACCEPT_SEARCH_HALVING) continue;
      }
      break;
    }
    if (job->rank == 0)
      accept_progress(progress, 7, NSTEPS, "bad-node search: %s round %d (%d group(s) of nodes)", phase, s.round, ng);
    /* The budget is a group's: its tries share it. */
    rc = accept_measure_round(job, color, ng, (size_t)bytes, o->iters, o->budget / s.passes, bw, jit);
    if (rc < 0) break;
    accept_search_feed(&s, bw, jit, job->rank == 0 ? rep : NULL, (const char *const *)hosts);
  }
  if (job->rank == 0) {
    static const char *const modes[] = {"off", "ring", "halving"};
    snprintf(rep->search_mode, sizeof rep->search_mode, "%s%s", modes[o->search],
             fell_back && s.mode == ACCEPT_SEARCH_HALVING ? "+halving" : "");
    snprintf(rep->search_summary, sizeof rep->search_summary, "%s", s.note);
    rep->search_jitter = s.noise;
    rep->fraction = s.eff; /* what was applied (the noise may have lowered pair_fraction) */
    if (rc < 0) {
      accept_check_t c;
      accept_check_init(&c, "pair_search", "", -1, -1, "");
      accept_check_set(&c, ACCEPT_ERROR, "the search stopped: %s (%s)", gpl_strerror(rc), s.note);
      accept_report_add(rep, &c);
    } else {
      accept_search_report(&s, (const char *const *)hosts, rep);
    }
  }
done:
  free(color);
  free(bw);
  free(jit);
  accept_search_free(&s);
  return rc;
}

static void add_summary(launch_t *L, const accept_report_t *rep) {
  if (!L->summary) return;
  cJSON *a = cJSON_AddObjectToObject(L->summary, "accept");
  int n[ACCEPT_NSTATUS];
  accept_report_counts(rep, n);
  cJSON_AddNumberToObject(a, "exit_code", rep->exit_code);
  for (int s = 0; s < ACCEPT_NSTATUS; s++) cJSON_AddNumberToObject(a, accept_status_name((accept_status_t)s), n[s]);
  cJSON_AddNumberToObject(a, "busbw_GBps", rep->ar_busbw);
  if (rep->ar_threshold >= 0) cJSON_AddNumberToObject(a, "min_busbw_GBps", rep->ar_threshold);
  cJSON *bad = cJSON_AddArrayToObject(a, "bad_hosts");
  for (int i = 0; i < rep->nbad; i++) cJSON_AddItemToArray(bad, cJSON_CreateString(rep->bad_hosts[i]));
}

static void write_reports(const accept_opts_t *o, accept_report_t *rep) {
  struct {
    const char *path, *what;
    int (*fn)(const accept_report_t *, const char *);
  } out[] = {{o->json, "JSON", accept_write_json},
             {o->junit, "JUnit", accept_write_junit},
             {o->html, "HTML", accept_write_html},
             {o->exclude, "exclude list", accept_write_exclude}};
  for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) {
    if (!out[i].path) continue;
    int rc = out[i].fn(rep, out[i].path);
    if (rc < 0) {
      log_print("gpulaunch accept: could not write the %s report %s\n", out[i].what, out[i].path);
      if (rep->exit_code == 0) rep->exit_code = GPL_EXIT_ACCEPT_ERROR;
      /* A row of its own, so that the table counts it and the verdict says what the error was
       * (the reports written before it do not have it). */
      accept_check_t c;
      accept_check_init(&c, "report", "", -1, -1, out[i].what);
      const char *why = accept_write_error();
      accept_check_set(&c, ACCEPT_ERROR, "could not write the %s report: %s", out[i].what,
                       rc == GPL_ENOMEM || !why[0] ? gpl_strerror(rc) : why);
      accept_report_add(rep, &c);
    }
  }
}

int accept_check_conf(launch_t *L) {
  accept_opts_t o;
  accept_opts_default(&o);
  int rc = accept_opts_from_conf(&o, L->conf);
  return rc == GPL_EINVAL ? GPL_EXIT_USAGE : rc < 0 ? GPL_EXIT_CONFIG : GPL_EXIT_OK;
}

int mode_accept(launch_t *L) {
  job_t *job = L->job;
  int rank0 = job->rank == 0;
  accept_opts_t o;
  accept_opts_default(&o);
  int rc = accept_opts_from_argv(&o, L->conf, L->argc, L->argv, rank0);
  if (rc == 1) return GPL_EXIT_OK;
  if (rc < 0) return GPL_EXIT_USAGE;
  rc = accept_opts_from_conf(&o, L->conf);
  if (rc < 0) return rc == GPL_EINVAL ? GPL_EXIT_USAGE : GPL_EXIT_CONFIG;
  /* The reports are written at the end: a path that cannot be fails now, before anything is
   * measured (the reports' own options; --summary's folder main checked already). */
  const outpath_t outs[] = {{"--json", o.json}, {"--junit", o.junit}, {"--html", o.html},
                            {"--exclude-out", o.exclude}, {"--summary", L->summary_path}};
  rc = outpath_check(job, "gpulaunch accept", outs, (int)GPL_ARRAY_LEN(outs));
  if (rc != GPL_EXIT_OK) return rc;
  int progress = rank0 && (o.progress >= 0 ? o.progress : watching());
  double t_start = util_now();
  accept_report_t rep;
  accept_report_init(&rep);
  util_iso_time(rep.started, sizeof rep.started);
  rep.strict = o.strict;
  rep.fraction = o.fraction;
  rep.nnodes = job->nnodes;
  rep.nranks = job->size;
  rep.settings = accept_opts_json(&o);
  char **hosts = calloc((size_t)job->nnodes, sizeof *hosts);
  if (!hosts) return GPL_EXIT_INTERNAL;
  for (int n = 0; n < job->nnodes; n++) hosts[n] = strdup(job->hosts[job->leader_of_node[n]]);
  rep.hosts = hosts;
  accept_list_t mine = {0};
  accept_check_t c;

  /* 1. Placement (binds this rank near its GPU); its topology serves the node checks. */
  accept_progress(progress, 1, NSTEPS, "placing ranks");
  place_t pl;
  int prc = place_rank(L, NULL, &pl);
  topo_t *t = pl.topo, *own = NULL;
  /* place_rank is collective and fails the same way on every rank: one row, from rank 0. Its
   * network steps (interface agreement, TCP preflight) come after the placement proper; what they
   * decided and proved is reported as the reachability rows (step 5), with the same answer the
   * job's programs get. */
  accept_check_t placed;
  accept_check_init(&placed, "placement", "", -1, -1, "");
  if (prc < 0 && !pl.net_done)
    accept_check_set(&placed, prc == GPL_ETOPO ? ACCEPT_FAIL : ACCEPT_ERROR, "the ranks could not be "
                     "placed: %s (the reason is in the log above)", gpl_strerror(prc));
  else
    accept_check_set(&placed, ACCEPT_PASS, "every rank placed and bound (the start-up's interface "
                     "agreement and TCP preflight are the reachability rows)");
  if (rank0) accept_report_add(&rep, &placed);
  if (!t) {
    const char *xml = xml_path(L);
    int trc = topo_load(&own, xml);
    t = own;
    if (trc < 0 && job->local_rank == 0) {
      accept_check_init(&c, "topology", job->host, job->node, -1, xml ? xml : "live");
      accept_check_set(&c, ACCEPT_ERROR, "cannot load the topology %s: %s; the node checks could not run",
                       xml ? xml : "of this machine", gpl_strerror(trc));
      accept_list_add(&mine, &c);
    }
  }

  /* 2. Node checks (the node's first rank) and this rank's binding. */
  accept_progress(progress, 2, NSTEPS, "node checks");
  if (t && job->local_rank == 0) {
    accept_node_ctx_t ctx = {t, &o, job->host, job->node, job->local_size};
    if (accept_node_checks(&ctx, &mine) < 0) {
      accept_check_init(&c, "node_checks", job->host, job->node, -1, "");
      accept_check_set(&c, ACCEPT_ERROR, "the node checks stopped early (out of memory?)");
      accept_list_add(&mine, &c);
    }
  }
  if (t) {
    int gpu = pl.plan ? pl.gpu : -1;
    if (!pl.plan && job->local_rank < t->ngpus) gpu = job->local_rank;
    accept_rank_binding(t, job->host, job->node, job->rank, gpu, NULL, &mine);
  }

  /* 3. The job's interface (the start-up's choice; when it has none, the interface agreement's
   * row says why) and what each node tells for the auto threshold. */
  accept_if_t ifc;
  if (accept_job_iface(&pl, &ifc) < 0) LOG_INFO(ACCEPT, "%s", ifc.why);
  accept_nodeinfo_t ni_mine, *ni_all = calloc((size_t)job->size, sizeof *ni_all);
  accept_nodeinfo_t *ni = calloc((size_t)job->nnodes, sizeof *ni);
  if (!ni_all || !ni) return GPL_EXIT_INTERNAL;
  node_info(t, &ifc, job->node, &mine, &ni_mine);

  /* 4. Gather. From here every step is collective. */
  accept_progress(progress, 3, NSTEPS, "gathering node results");
  int err = gather_checks(job, &mine, &rep);
  if (err == GPL_OK)
    err = mpix_allgather(&ni_mine, sizeof ni_mine, ni_all, job->world, job->timeout, "accept: node facts");
  if (err == GPL_OK)
    for (int n = 0; n < job->nnodes; n++) ni[n] = ni_all[job->leader_of_node[n]];
  accept_list_free(&mine);

  /* 4b. Nodes against each other (rank 0, on the node facts just gathered). */
  if (err == GPL_OK && rank0) {
    accept_profile_t *prof = calloc((size_t)job->nnodes, sizeof *prof);
    accept_list_t cl = {0};
    for (int n = 0; prof && n < job->nnodes; n++) {
      prof[n] = ni[n].profile;
      for (int p = 0; p < ACCEPT_NPROPS; p++) prof[n].v[p][ACCEPT_PROFILE_LEN - 1] = 0; /* bytes from a rank */
    }
    if (!prof || accept_compare_nodes(prof, job->nnodes, (const char *const *)hosts, &o, &cl) < 0) {
      accept_check_init(&c, "majority", "", -1, -1, "");
      accept_check_set(&c, ACCEPT_ERROR, "the nodes could not be compared: out of memory");
      accept_report_add(&rep, &c);
    }
    add_list(&rep, &cl);
    accept_list_free(&cl);
    free(prof);
  }

  /* 5. Reachability: the start-up's answer, the one the job's programs got (no second probe). */
  if (err == GPL_OK) {
    accept_progress(progress, 4, NSTEPS, "reachability over %s", ifc.name[0] ? ifc.name : "?");
    accept_list_t jl = {0};
    err = accept_reach_checks(job, &pl, &o, &jl);
    if (rank0) add_list(&rep, &jl);
    accept_list_free(&jl);
  }

  /* 5b. Latency: small allreduces, a round trip per pair of nodes (on a quiet network, before
   * the bandwidth measurements fill its queues). */
  if (err == GPL_OK) {
    accept_progress(progress, 5, NSTEPS, "latency: small allreduces and round trips");
    err = run_latency(job, &o, ni, hosts, &rep);
  }

  /* 6. Bus bandwidth. */
  int busbw_failed = 0;
  if (err == GPL_OK) {
    accept_progress(progress, 6, NSTEPS, "allreduce bus bandwidth");
    err = run_busbw(L, &o, ni, &rep, &busbw_failed);
  }

  /* 7. Bad-node search. */
  if (err == GPL_OK) {
    accept_progress(progress, 7, NSTEPS, "bad-node search");
    err = run_search(job, &o, ni, busbw_failed, hosts, &rep, progress);
  }

  if (err < 0 && rank0) {
    accept_check_init(&c, "job", "", -1, -1, "");
    accept_check_set(&c, ACCEPT_ERROR, "the checks stopped: %s (the ranks that did not answer are named "
                     "in the log)", gpl_strerror(err));
    accept_report_add(&rep, &c);
  }

  /* 8. Reports on rank 0; the exit status is the same on every rank. */
  int code = GPL_EXIT_ACCEPT_ERROR;
  if (rank0) {
    accept_progress(progress, 8, NSTEPS, "writing reports");
    rep.seconds = util_now() - t_start;
    accept_report_collect_bad_hosts(&rep);
    rep.exit_code = accept_exit_code(&rep);
    write_reports(&o, &rep);
    accept_progress(progress, 0, 0, NULL);
    accept_print_table(&rep, stdout);
    add_summary(L, &rep);
    code = rep.exit_code;
  }
  if (err == GPL_OK &&
      mpix_bcast(&code, sizeof code, 0, job->world, job->timeout, "accept: exit status") < 0)
    code = GPL_EXIT_ACCEPT_ERROR;
  free(ni_all);
  free(ni);
  if (own) topo_free(own);
  place_free(&pl);
  accept_report_free(&rep);
  return code;
}
