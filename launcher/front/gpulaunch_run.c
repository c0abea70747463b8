/* gpulaunch-run: the command to type instead of mpirun. `gpulaunch-run [mpirun options] gpulaunch
 * ARGS...` starts mpirun in a process group of its own with SIGTERM and SIGHUP blocked (plain
 * mpirun SIGKILLs its ranks a second after a SIGTERM, and a terminal's Ctrl-C reaches the whole
 * foreground group), with Open MPI's OOB keepalive short (a lost host's daemon is given up on in
 * seconds, not minutes), and a TCP channel to rank 0's supervisor (launcher/sup/frontch.h).
 *
 * A SIGTERM or SIGINT to gpulaunch-run goes to rank 0 through the channel, and rank 0 stops the
 * job as on its own SIGTERM/SIGINT: every program gets [job] preempt_signal at once and the grace.
 * Rank 0 sends the job's exit status once it is decided; gpulaunch-run exits with it once mpirun
 * is gone, ending mpirun when it does not go by itself (a lost host: mpirun waits for its daemon,
 * and may crash in PMIx_Finalize). SIGUSR1/SIGUSR2 go to mpirun, which passes them to every rank.
 *
 * The launcher may be srun too (GPULAUNCH_MPIRUN=srun): the channel then reaches the ranks in the
 * environment srun passes on, and a lost host ends srun 5 s after rank 0 named it, where srun
 * itself waits for the lost node's tasks until Slurm's KillWait has passed (or the node is
 * declared down). GPULAUNCH_RUN_SIGNALS=0 leaves SIGTERM/SIGINT/SIGHUP to the caller (a batch
 * script that passes them on through Slurm); GPULAUNCH_RUN_LD_PRELOAD is the launcher's LD_PRELOAD
 * (gpulaunch-srun.sbatch's shim).
 *
 * Elastic (--nodes MIN:MAX with --hostfile FILE or --host-discovery-script SCRIPT, under srun by
 * default the allocation's nodes): the job runs on the hosts the source lists, and a lost host, a host's interruption notice, a host that leaves
 * the list or (not more often than --scale-up-interval) hosts that join end the launch with the
 * grace and start a new one on the hosts there are then (launcher/front/front_elastic.c). Libc and
 * pthreads, with gpl_common (the port range, logging) and gpl_audit (--audit-log). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/envvar.h"
#include "common/log.h"
#include "common/netport.h"
#include "common/tls.h"
#include "common/util.h"
#include "launcher/audit/audit_event.h"
#include "launcher/exitcode.h"
#include "launcher/front/front_elastic.h"
#include "launcher/front/front_hosts.h"
#include "launcher/front/front_job.h"
#include "launcher/front/front_listen.h"
#include "launcher/front/front_oob.h"
#include "launcher/front/front_sec.h"
#include "launcher/sup/frontch.h"

static const char g_usage[] =
    "usage: gpulaunch-run [elastic options] [mpirun options] gpulaunch [gpulaunch options] CONFIG | -- PROGRAM...\n"
    "  e.g. gpulaunch-run -np 8 --hostfile hosts gpulaunch train.conf\n"
    "Starts mpirun (GPULAUNCH_MPIRUN, default mpirun) so that a SIGTERM or SIGINT to this command\n"
    "gives every program [job] preempt_signal at once and the full [job] grace, and this command\n"
    "exits with the job's status (75 preempted, 130 SIGINT, 68 a rank or host lost, ...) once every\n"
    "program is done, within seconds also when a host is lost.\n"
    "GPULAUNCH_MPIRUN=srun: the same around srun (gpulaunch-run -N 2 --ntasks-per-node 8 --mpi=pmix\n"
    "gpulaunch train.conf).\n"
    "Options (before the mpirun options):\n"
    "  --port-range LO-HI              every gpulaunch listener, this command's and the ranks', takes\n"
    "                                  a port in LO-HI (GPULAUNCH_PORT_RANGE; [net] port_range)\n"
    "  --listen ADDR                   the one address of this host the channel for rank 0 listens\n"
    "                                  on (default: the one this host reaches the job's hosts from,\n"
    "                                  those named or the Slurm allocation's, and its other real\n"
    "                                  networks; 127.0.0.1 when the hosts are all this one; any:\n"
    "                                  every address)\n"
    "  --audit-log FILE                append this command's control events (stops, restarts, lost\n"
    "                                  or noticed hosts, failed authentication) to FILE, chained\n"
    "                                  (gpulaunch audit verify FILE); --audit-syslog: also to syslog\n"
    "Elastic options (before the mpirun options; the ranks follow the hosts' slots, no -np/--host,\n"
    "under srun no -N/-n/--ntasks-per-node/--nodelist: each launch is an srun step on the hosts there are):\n"
    "  --nodes MIN:MAX                 run on MIN to MAX hosts; a lost host or one that announces its\n"
    "                                  interruption ends the launch with the grace and the job starts\n"
    "                                  again on the hosts that remain (TORCHELASTIC_RESTART_COUNT + 1)\n"
    "  --hostfile FILE                 the hosts (`host slots=N` or `host:N` lines), re-read every poll\n"
    "  --host-discovery-script SCRIPT  prints one `host:slots` line per usable host (horovodrun's)\n"
    "                                  (under srun, neither: the allocation's nodes that are up, each\n"
    "                                  with SLURM_NTASKS_PER_NODE slots; sbatch/salloc --no-kill)\n"
    "  --discovery-interval SECONDS    poll the host source this often (default 5)\n"
    "  --cooldown SECONDS              leave a lost or noticed host out this long (default 300)\n"
    "  --scale-up-interval SECONDS     grow back at most this often (default 60)\n"
    "  --min-wait SECONDS              below MIN hosts wait this long, then exit 78 (default 600)\n"
    "  --max-restarts N                membership restarts allowed (default: no limit)\n"
    "  --start-timeout SECONDS         a launch whose rank 0 is not up this long is ended and its\n"
    "                                  hosts probed; unreachable ones are left out (default 120)\n";

/* 1 when an mpirun option (or OMPI_MCA_ variable) already sets this MCA parameter. */
static int mca_given(int argc, char **argv, const char *name) {
  char env[128];
  snprintf(env, sizeof env, "OMPI_MCA_%s", name);
  if (getenv(env)) return 1;
  for (int i = 0; i + 1 < argc; i++)
    if ((strcmp(argv[i], "--mca") == 0 || strcmp(argv[i], "-mca") == 0) && strcmp(argv[i + 1], name) == 0)
      return 1;
  return 0;
}

/* A number of seconds >= 0 (or a whole number when whole). */
static int number_arg(const char *opt, const char *v, int whole, double *out) {
  char *end = NULL;
  errno = 0;
  double x = v ? strtod(v, &end) : 0;
  if (!v || end == v || *end || errno || x < 0 || (whole && x != (double)(long)x) || x > 1e9) {
    front_say("%s needs %s, got '%s'", opt, whole ? "a whole number >= 0" : "seconds >= 0", v ? v : "");
    return -1;
  }
  *out = x;
  return 0;
}

static const char *g_listen; /* --listen ADDR */

/* --port-range LO-HI (for this command and, through GPULAUNCH_PORT_RANGE, the ranks), --audit-log
 * FILE, --audit-syslog, --listen ADDR. 0, or -1 (said). */
static int front_own_option(const char *a, const char *v) {
  if (strcmp(a, "--audit-syslog") == 0) return audit_event_syslog(1), 0;
  if (!v) {
    front_say("%s needs a value", a);
    return -1;
  }
  if (strcmp(a, "--listen") == 0) {
    g_listen = v;
    return 0;
  }
  if (strcmp(a, "--audit-log") == 0) {
    char err[4400];
    if (audit_event_open(v, err, sizeof err) < 0) {
      front_say("--audit-log: %s", err);
      return -1;
    }
    /* under a batch system its job id, as on the ranks' lines (mpirun's own id comes later) */
    audit_event_identity(util_sched_job_id(), -1);
    return 0;
  }
  netport_range_t r;
  char err[200] = "";
  if (netport_parse(v, &r, err, sizeof err) < 0 || r.lo == 0) {
    front_say("--port-range: %s", r.lo == 0 && !*err ? "needs LO-HI" : err);
    return -1;
  }
  netport_set(&r);
  setenv(envvar_name(ENVVAR_PORT_RANGE), v, 1);
  return 0;
}

/* The elastic options at the front of argv; the index of the first other word, or -1 (said). */
static int is_gpulaunch(const char *w) {
  const char *b = strrchr(w, '/');
  return strcmp(b ? b + 1 : w, "gpulaunch") == 0;
}

/* The elastic options among the launcher's words (before the gpulaunch word), taken out of argv
 * (the rest closes up, *argc shrinks); the launcher's own words for ranks and hosts refused
 * (srun: srun's). 0, or -1 (said). */
static int elastic_args(int *argc, char **argv, int srun, front_elastic_t *e, int *elastic) {
  double d;
  int n = *argc, k = 1, out = 1;
  for (int i = 1; i < n && !is_gpulaunch(argv[i]); i++)
    if (strcmp(argv[i], "--nodes") == 0) *elastic = 1;
  for (; k < n && !is_gpulaunch(argv[k]); k++) {
    const char *a = argv[k], *v = k + 1 < n ? argv[k + 1] : NULL;
    int ours = 1;
    if (strcmp(a, "--port-range") == 0 || strcmp(a, "--audit-log") == 0 || strcmp(a, "--audit-syslog") == 0 ||
        strcmp(a, "--listen") == 0) {
      if (front_own_option(a, v) < 0) return -1;
      k += strcmp(a, "--audit-syslog") != 0;
      continue;
    }
    if (strcmp(a, "--nodes") == 0 && v) {
      char *colon = strchr(v, ':');
      char *end1 = NULL, *end2 = NULL;
      long mn = strtol(v, &end1, 10), mx = colon ? strtol(colon + 1, &end2, 10) : mn;
      if (end1 == v || (colon ? (end1 != colon || end2 == colon + 1 || *end2) : *end1) || mn < 1 || mx < mn ||
          mx > FRONT_HOST_MAX) {
        front_say("--nodes needs MIN:MAX (1 <= MIN <= MAX <= %d) or N, got '%s'", FRONT_HOST_MAX, v);
        return -1;
      }
      e->min = (int)mn;
      e->max = (int)mx;
    } else if (strcmp(a, "--hostfile") == 0 && *elastic) {
      e->hostfile = v;
    } else if (strcmp(a, "--host-discovery-script") == 0) {
      e->script = v;
    } else if (strcmp(a, "--discovery-interval") == 0) {
      if (number_arg(a, v, 0, &e->interval) < 0) return -1;
    } else if (strcmp(a, "--cooldown") == 0) {
      if (number_arg(a, v, 0, &e->cooldown) < 0) return -1;
    } else if (strcmp(a, "--scale-up-interval") == 0) {
      if (number_arg(a, v, 0, &e->scale_up_every) < 0) return -1;
    } else if (strcmp(a, "--min-wait") == 0) {
      if (number_arg(a, v, 0, &e->min_wait) < 0) return -1;
    } else if (strcmp(a, "--start-timeout") == 0) {
      if (number_arg(a, v, 0, &e->start_limit) < 0) return -1;
    } else if (strcmp(a, "--max-restarts") == 0) {
      if (number_arg(a, v, 1, &d) < 0) return -1;
      e->max_restarts = (int)d;
    } else {
      ours = 0;
    }
    if (!ours) {
      /* mpirun's or srun's words for the ranks and their hosts (srun's also as --word=VALUE) */
      static const char *const mpirun_taken[] = {"-np", "-n", "-c", "--np", "--host", "-H", "--hostfile",
                                                 "--machinefile", "-hostfile", "-machinefile", "-N",
                                                 "--npernode", "-npernode", NULL};
      static const char *const srun_taken[] = {"-n", "--ntasks", "-N", "--ntasks-per-node", "-w", "--nodelist",
                                               "-m", "--distribution", "-x", "--exclude", NULL};
      const char *const *taken = srun ? srun_taken : mpirun_taken;
      for (int t = 0; *elastic && taken[t]; t++) {
        size_t tl = strlen(taken[t]);
        if (strcmp(a, taken[t]) == 0 || (strncmp(a, taken[t], tl) == 0 && a[1] == '-' && a[tl] == '=')) {
          front_say("%s: an elastic job's ranks follow its hosts' slots; leave %.*s out", a, (int)tl, a);
          return -1;
        }
      }
      argv[out++] = argv[k];
      continue;
    }
    if (!v) {
      front_say("%s needs a value", a);
      return -1;
    }
    if (!*elastic) {
      front_say("%s is an elastic option: give --nodes MIN:MAX too", a);
      return -1;
    }
    k++;
  }
  for (; k < n; k++) argv[out++] = argv[k];
  argv[out] = NULL;
  *argc = out;
  if (*elastic && e->hostfile && e->script) {
    front_say("--nodes: the hosts come from --hostfile FILE or --host-discovery-script SCRIPT, not both");
    return -1;
  }
  if (*elastic && e->interval < 0.5) e->interval = 0.5;
  return 0;
}

int main(int argc, char **argv) {
  log_init(); /* GPULAUNCH_LOG_TIME for front_say */
  if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
    fputs(g_usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 64 : 0;
  }
  front_elastic_t el = {.interval = 5, .cooldown = 300, .scale_up_every = 60, .min_wait = 600, .max_restarts = -1,
                        .start_limit = 120};
  int elastic = 0;
  const char *mpirun = envvar_get(ENVVAR_MPIRUN);
  if (!mpirun || !*mpirun) mpirun = "mpirun";
  const char *base = strrchr(mpirun, '/');
  int srun = strcmp(base ? base + 1 : mpirun, "srun") == 0;
  const char *pr = envvar_get(ENVVAR_PORT_RANGE); /* exported by the user: this command's too */
  if (pr && *pr && front_own_option("--port-range", pr) < 0) return 64;
  if (elastic_args(&argc, argv, srun, &el, &elastic) < 0) return 64;
  if (front_hosts_set_bare_slots(envvar_get(ENVVAR_HOST_SLOTS)) < 0) {
    front_say("GPULAUNCH_HOST_SLOTS='%s' is not a whole number > 0", envvar_get(ENVVAR_HOST_SLOTS));
    return 64;
  }
  const char *sigs = envvar_get(ENVVAR_RUN_SIGNALS);
  int own_signals = !sigs || strcmp(sigs, "0") != 0;

  /* The channel: the addresses rank 0 will reach this host at (front_listen.h: --listen, else the
   * one that routes to the job's hosts and the host's other real networks, loopback when they are
   * all this host), a port the kernel picks or one of --port-range. */
  front_listen_t where;
  int nlw = 1; /* mpirun's words: before the gpulaunch word */
  while (nlw < argc && !is_gpulaunch(argv[nlw])) nlw++;
  /* Hosts not named: a Slurm allocation's (mpirun and srun take them) are listed; a discovery
   * script's, or srun's outside an allocation, are not known before the launch. */
  const char *alloc_hosts = elastic && (el.hostfile || el.script) ? NULL : front_hosts_slurm_addr_script();
  if (front_listen_choose(nlw, argv, elastic ? el.hostfile : NULL, alloc_hosts,
                          (elastic && el.script) || (srun && !alloc_hosts), g_listen, &where) < 0) {
    front_say("%s", where.why);
    return 64;
  }
  LOG_INFO(NET, "gpulaunch-run's channel for rank 0 listens on %s", where.why);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = where.addr[0]};
  int lfd = netport_listen((struct sockaddr *)&sa, sizeof sa, 0, SOMAXCONN, "gpulaunch-run's channel for rank 0");
  if (lfd < 0) {
    front_say("cannot open the channel for rank 0: %s", strerror(errno));
    return 70;
  }
  /* The job key (the config's [security]) and the channel's TLS: before anything is exported. */
  char token[40], addrs[1024];
  seckey_t key;
  front_job_t job = {.lfd = lfd};
  /* The same port on the other addresses chosen (a host's other networks): one that is taken
   * there is left out, said at info level (rank 0 is told the addresses bound). */
  int nbound = 1;
  for (int i = 1; i < where.n && job.nlfd_more < (int)(sizeof job.lfd_more / sizeof job.lfd_more[0]); i++) {
    struct sockaddr_in o = {.sin_family = AF_INET, .sin_addr = where.addr[i], .sin_port = sa.sin_port};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&o, sizeof o) < 0 || listen(fd, SOMAXCONN) < 0) {
      char a[INET_ADDRSTRLEN];
      LOG_INFO(NET, "gpulaunch-run's channel: not on %s:%d too: %s", inet_ntop(AF_INET, &o.sin_addr, a, sizeof a),
               ntohs(sa.sin_port), strerror(errno));
      if (fd >= 0) close(fd);
      continue;
    }
    job.lfd_more[job.nlfd_more++] = fd;
    where.addr[nbound++] = where.addr[i];
  }
  where.n = nbound;
  if (front_sec_init(argc, argv, &key, &job, token, sizeof token) < 0) return GPL_EXIT_SECURITY;
  tls_set_fail_hook(audit_note_auth_failure); /* with --audit-log: failed authentications recorded */
  front_listen_addresses(&where, ntohs(sa.sin_port), addrs, sizeof addrs);
  setenv(FRONTCH_ENV, addrs, 1);
  setenv(envvar_name(ENVVAR_FRONTEND_HOST), util_hostname(), 1);
  /* `> log 2>&1`: rank 0 then writes every line through one stream (mpirun would cut lines
   * of two streams at any byte); it may run on another host, where it cannot see our fds. */
  struct stat s1, s2;
  int merged = fstat(1, &s1) == 0 && fstat(2, &s2) == 0 && s1.st_dev == s2.st_dev && s1.st_ino == s2.st_ino;
  setenv(ENVVAR_LITERAL(FRONTEND_MERGED), merged ? "1" : "0", 1);

  /* mpirun -x the channel, the keepalive (unless given), then the user's words. srun passes the
   * environment on by itself; a --export list of the user's gets the channel's names added. */
  char **av = calloc((size_t)argc + 40, sizeof *av);
  if (!av) return 70;
  int n = 0;
  av[n++] = (char *)mpirun;
  if (srun) {
    static const char names[] = "," FRONTCH_ENV "," ENVVAR_LITERAL(FRONTEND_MERGED) "," ENVVAR_LITERAL(FRONTEND_HOST) ","
                                ENVVAR_LITERAL(KEY_SOURCE) "," ENVVAR_LITERAL(JOB_KEY) "," ENVVAR_LITERAL(RUN_ID) ","
                                ENVVAR_LITERAL(MUNGE_CREDENTIAL) "," ENVVAR_LITERAL(MUNGE_SOCKET) ","
                                ENVVAR_LITERAL(PORT_RANGE) "," FRONT_ELASTIC_ENV_NAMES;
    for (int i = 1; i < argc; i++) {
      if (strncmp(argv[i], "--export=", 9) != 0 || strncmp(argv[i] + 9, "ALL", 3) == 0) continue;
      char *e = malloc(strlen(argv[i]) + sizeof names);
      if (!e) return 70;
      strcpy(e, argv[i]);
      strcat(e, names); /* also NONE,NAMES: these and Slurm's own */
      argv[i] = e;
    }
  } else {
    /* Names only: mpirun takes each value from this environment (never on a command line). */
    static const char *const xs[] = {FRONTCH_ENV, ENVVAR_LITERAL(FRONTEND_MERGED), ENVVAR_LITERAL(FRONTEND_HOST),
                                     ENVVAR_LITERAL(KEY_SOURCE), ENVVAR_LITERAL(PORT_RANGE),
                                     ENVVAR_LITERAL(MUNGE_CREDENTIAL), ENVVAR_LITERAL(MUNGE_SOCKET)};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
      if (!getenv(xs[i])) continue; /* the port range, MUNGE's: only when given */
      av[n++] = "-x";
      av[n++] = (char *)xs[i];
    }
    if (key.src == SECKEY_HANDED) {
      av[n++] = "-x";
      av[n++] = ENVVAR_LITERAL(JOB_KEY);
    }
    if (!elastic) { /* (an elastic launch passes the run id itself) */
      av[n++] = "-x";
      av[n++] = ENVVAR_LITERAL(RUN_ID);
    }
    static const char *const ka[][2] = {{"oob_tcp_keepalive_time", "10"},
                                        {"oob_tcp_keepalive_intvl", "2"},
                                        {"oob_tcp_keepalive_probes", "5"}};
    for (size_t i = 0; i < sizeof ka / sizeof ka[0]; i++) {
      if (mca_given(argc, argv, ka[i][0])) continue;
      av[n++] = "--mca";
      av[n++] = (char *)ka[i][0];
      av[n++] = (char *)ka[i][1];
    }
    /* mpirun's own channel on the interfaces that lead to the hosts (docker0's 172.17.0.1 is on
     * every host); the ranks choose their transport's themselves before MPI_Init. */
    static char oob[1024], oob_why[1024];
    int nwords = 1;
    while (nwords < argc && !is_gpulaunch(argv[nwords])) nwords++;
    if (front_oob_choose(nwords, argv, elastic ? el.hostfile : NULL, oob, sizeof oob, oob_why, sizeof oob_why)) {
      av[n++] = "--mca";
      av[n++] = "oob_tcp_if_include";
      av[n++] = oob;
      LOG_INFO(NET, "mpirun's out-of-band channel: oob_tcp_if_include=%s (%s)", oob, oob_why);
    } else if (oob_why[0]) {
      LOG_INFO(NET, "mpirun's out-of-band channel: %s", oob_why);
    }
  }
  if (front_signals_init(own_signals) < 0) return 70;
  int code;
  if (elastic) {
    char *alloc = NULL;
    if (!el.hostfile && !el.script) {
      /* srun inside an allocation: its nodes; else the source must be given */
      alloc = srun ? front_hosts_slurm_script() : NULL;
      if (!alloc) {
        front_say("--nodes needs the hosts from --hostfile FILE or --host-discovery-script SCRIPT%s",
                  srun ? " (or an allocation: SLURM_JOB_ID is not set)" : "");
        return 64;
      }
      el.script = alloc;
    }
    el.srun = srun;
    el.head = av;
    el.nhead = n;
    el.tail = argv + 1;
    el.ntail = argc - 1;
    while (el.nopts < el.ntail && !is_gpulaunch(el.tail[el.nopts])) el.nopts++;
    code = front_elastic_run(&el, &job);
    free(av);
    free(alloc);
    return code;
  }
  for (int i = 1; i < argc; i++) av[n++] = argv[i];
  av[n] = NULL;
  job.av = av;
  if (front_job_run(&job, NULL, NULL) < 0) {
    free(av);
    return 70;
  }
  code = job.code;
  char note[2048]; /* both sides of a partition named the other lost: say it once, as one cut */
  if (code == GPL_EXIT_TIMEOUT && ecore_partition_note(job.claims, job.nclaims, note, sizeof note))
    front_say("%s (exit status %d)", note, code);
  if (job.verdict >= 0 && job.launcher_status != job.verdict && job.launcher_status >= 0)
    fprintf(stderr, "gpulaunch-run: exit status %d (the job's; %s's was %d)\n", code, av[0], job.launcher_status);
  free(av);
  return code;
}
