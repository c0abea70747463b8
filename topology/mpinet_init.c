/* Open MPI's TCP interfaces chosen before MPI_Init: the hosts' inventories exchanged over the launcher's PMIx server (mpirun, srun --mpi=pmix), else this host's facts alone; the choice set as OMPI_MCA_btl_tcp_if_include. */
#include "topology/mpinet_init.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/log.h"
#include "common/util.h"
#include "topology/net.h"

#ifdef GPL_HAVE_PMIX
#include <pmix.h>
#endif

static mpinet_choice_t g_choice;
static int g_pmix_up;
static char **g_hosts; /* each rank's host name, from PMIx (g_nhosts entries) */
static int g_nhosts;

const char *const *mpinet_init_hosts(int *n) {
  *n = g_nhosts;
  return (const char *const *)g_hosts;
}

const mpinet_choice_t *mpinet_init_choice(void) { return &g_choice; }

#ifdef GPL_HAVE_PMIX
#define MPINET_KEY "gpulaunch.mpinet.inv"

static pmix_proc_t g_self;

/* This process as a client of the launcher's PMIx server (once; mpinet_init_done drops it). */
static pmix_status_t pmix_start(void) {
  if (g_pmix_up) return PMIX_SUCCESS;
  pmix_status_t st = PMIx_Init(&g_self, NULL, 0);
  if (st == PMIX_SUCCESS) g_pmix_up = 1;
  return st;
}

typedef struct fence_s {
  volatile int done;
  volatile pmix_status_t status;
} fence_t;

static void fence_cb(pmix_status_t status, void *cbdata) {
  fence_t *f = cbdata;
  f->status = status;
  __atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
}

static int get_u32(const pmix_proc_t *p, const char *key, uint32_t *out) {
  pmix_value_t *v = NULL;
  if (PMIx_Get(p, key, NULL, 0, &v) != PMIX_SUCCESS || !v) return -1;
  int rc = 0;
  if (v->type == PMIX_UINT32) *out = v->data.uint32;
  else if (v->type == PMIX_UINT16) *out = v->data.uint16;
  else if (v->type == PMIX_INT) *out = (uint32_t)v->data.integer;
  else rc = -1;
  PMIX_VALUE_RELEASE(v);
  return rc;
}

/* Every host's inventory (each host's local rank 0 puts it), gathered with one bounded fence.
 * \return the number of hosts in *inv (free each and the array), 0 when PMIx cannot be used,
 * or GPL_ETIMEDOUT (a rank did not arrive: said). */
static int exchange(const char *host, double timeout, net_inv_t **invs, int *me, char *why, size_t len) {
  pmix_proc_t wild;
  pmix_status_t st = pmix_start();
  if (st != PMIX_SUCCESS) {
    util_fmt(why, len, "PMIx_Init: %s", PMIx_Error_string(st));
    return 0;
  }
  pmix_proc_t self = g_self;
  PMIX_LOAD_PROCID(&wild, self.nspace, PMIX_RANK_WILDCARD);
  uint32_t size = 0, lrank = 0;
  if (get_u32(&wild, PMIX_JOB_SIZE, &size) < 0 || size == 0 || get_u32(&self, PMIX_LOCAL_RANK, &lrank) < 0) {
    util_fmt(why, len, "the PMIx server gave no job size or local rank");
    return 0;
  }
  uint32_t nodes = 0;
  if (get_u32(&wild, PMIX_NUM_NODES, &nodes) == 0 && nodes == 1) {
    /* One host: nothing to exchange (and nothing to choose: shared memory). */
    net_inv_t *v = calloc(1, sizeof *v);
    if (!v) return GPL_ENOMEM;
    *invs = v;
    *me = 0;
    util_strlcpy(v->host, host, sizeof v->host);
    return 1;
  }
  if (lrank == 0) {
    net_inv_t inv;
    int n = 0;
    char *buf = NULL;
    if (net_inv_local(&inv, 0, host, NULL, NULL, 0) >= 0) buf = net_inv_encode(&inv, &n);
    net_inv_free(&inv);
    if (!buf) {
      util_fmt(why, len, "this host's interfaces could not be read");
      return 0;
    }
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = buf;
    v.data.bo.size = (size_t)n;
    st = PMIx_Put(PMIX_GLOBAL, MPINET_KEY, &v);
    free(buf);
    if (st == PMIX_SUCCESS) st = PMIx_Commit();
    if (st != PMIX_SUCCESS) {
      util_fmt(why, len, "PMIx_Put: %s", PMIx_Error_string(st));
      return 0;
    }
  }
  pmix_info_t info[2];
  bool yes = true;
  int tmo = (int)(timeout + 0.999);
  PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
  PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &tmo, PMIX_INT);
  fence_t f = {0, PMIX_SUCCESS};
  st = PMIx_Fence_nb(&wild, 1, info, 2, fence_cb, &f);
  if (st != PMIX_SUCCESS) {
    util_fmt(why, len, "PMIx_Fence: %s", PMIx_Error_string(st));
    return 0;
  }
  /* The fence ends when every rank has arrived; the launcher's server may ignore PMIX_TIMEOUT. */
  double end = util_now() + timeout;
  while (!__atomic_load_n(&f.done, __ATOMIC_ACQUIRE) && util_now() < end) util_sleep(0.001);
  if (!__atomic_load_n(&f.done, __ATOMIC_ACQUIRE)) {
    LOG_ERROR("choosing MPI's interfaces: not every one of the job's %u ranks arrived within %.0f s (a rank "
              "did not start, or the launcher's daemons cannot reach each other)", size, timeout);
    return GPL_ETIMEDOUT;
  }
  if (f.status != PMIX_SUCCESS) {
    util_fmt(why, len, "PMIx_Fence: %s", PMIx_Error_string(f.status));
    return 0;
  }
  net_inv_t *v = calloc(size, sizeof *v);
  if (!v) return GPL_ENOMEM;
  int n = 0;
  *me = -1;
  pmix_info_t opt;
  PMIX_INFO_LOAD(&opt, PMIX_OPTIONAL, &yes, PMIX_BOOL);
  for (uint32_t r = 0; r < size; r++) {
    pmix_proc_t p;
    pmix_value_t *val = NULL;
    PMIX_LOAD_PROCID(&p, self.nspace, r);
    if (PMIx_Get(&p, MPINET_KEY, &opt, 1, &val) != PMIX_SUCCESS || !val) continue;
    if (val->type == PMIX_BYTE_OBJECT && net_inv_decode(val->data.bo.bytes, (int)val->data.bo.size, &v[n]) == 0) {
      v[n].node = n;
      if (strcmp(v[n].host, host) == 0) *me = n;
      n++;
    }
    PMIX_VALUE_RELEASE(val);
  }
  *invs = v;
  if (*me < 0) {
    util_fmt(why, len, "this host's inventory was not among the %d received", n);
    for (int i = 0; i < n; i++) net_inv_free(&v[i]);
    return 0;
  }
  return n;
}

/* Each rank's host (job-level data the launcher gives every process, no exchange needed), so
 * that the first exchange's deadline can name hosts, not only ranks. */
static void rank_hosts(void) {
  pmix_proc_t wild;
  if (pmix_start() != PMIX_SUCCESS) return;
  pmix_proc_t self = g_self;
  PMIX_LOAD_PROCID(&wild, self.nspace, PMIX_RANK_WILDCARD);
  uint32_t size = 0;
  if (get_u32(&wild, PMIX_JOB_SIZE, &size) < 0 || size == 0) return;
  g_hosts = calloc(size, sizeof *g_hosts);
  bool yes = true;
  pmix_info_t opt;
  PMIX_INFO_LOAD(&opt, PMIX_OPTIONAL, &yes, PMIX_BOOL);
  for (uint32_t r = 0; g_hosts && r < size; r++) {
    pmix_proc_t p;
    pmix_value_t *val = NULL;
    PMIX_LOAD_PROCID(&p, self.nspace, r);
    if (PMIx_Get(&p, PMIX_HOSTNAME, &opt, 1, &val) == PMIX_SUCCESS && val && val->type == PMIX_STRING)
      g_hosts[r] = strdup(val->data.string);
    if (val) PMIX_VALUE_RELEASE(val);
  }
  if (g_hosts) g_nhosts = (int)size;
}
#endif

int mpinet_init(const char *host, double timeout, int rank) {
  memset(&g_choice, 0, sizeof g_choice);
  char src[MPINET_WHY_LEN - 64];
#ifdef GPL_HAVE_PMIX
  int pmix = getenv("PMIX_NAMESPACE") && getenv("PMIX_RANK");
#endif
  if (mpinet_user(NULL, src, sizeof src)) {
    g_choice.how = MPINET_USER;
    util_fmt(g_choice.why, sizeof g_choice.why, "yours: %s", src);
    if (rank == 0) LOG_INFO(NET, "MPI's TCP interfaces: yours, kept (%s)", src);
#ifdef GPL_HAVE_PMIX
    if (pmix) rank_hosts();
#endif
    return 0;
  }
  double t0 = util_now();
  char why[256] = "no PMIx server (not started by mpirun or srun --mpi=pmix)";
  int rc = 0, n = 0, me = -1;
  net_inv_t *invs = NULL;
#ifdef GPL_HAVE_PMIX
  if (pmix) {
    n = exchange(host, timeout, &invs, &me, why, sizeof why);
    if (n >= 0) rank_hosts();
  }
#endif
  if (n < 0) {
    rc = n;
    n = 0;
  }
  int erc = n > 0 ? mpinet_from_job(invs, n, me, &g_choice) : GPL_ENET;
  for (int i = 0; invs && i < n; i++) net_inv_free(&invs[i]);
  free(invs);
  if (n > 0 && erc < 0) util_fmt(why, sizeof why, "%s", g_choice.why);
  if (n == 0 || erc < 0) {
    /* No view of the other hosts: this host's facts alone. */
    iface_list_t l;
    if (iface_list(&l) == 0) {
      mpinet_from_local(&l, &g_choice);
      iface_list_free(&l);
      size_t k = strlen(g_choice.why);
      util_fmt(g_choice.why + k, sizeof g_choice.why - k, " (from this host alone: %s)", why);
    }
  }
  double ms = (util_now() - t0) * 1e3;
  /* One line for the job (rank 0's); every rank's at debug level. */
  log_level_t lvl = rank == 0 ? LOG_LVL_INFO : LOG_LVL_DEBUG;
  if (g_choice.value[0]) setenv("OMPI_MCA_btl_tcp_if_include", g_choice.value, 1);
  if (log_enabled(lvl, LOG_NET)) {
    if (g_choice.value[0])
      log_write(lvl, LOG_NET, __FILE__, __LINE__, "MPI's TCP interfaces: btl_tcp_if_include=%s (%s: %s) [%.0f ms]",
                g_choice.value, g_choice.ifnames, g_choice.why, ms);
    else
      log_write(lvl, LOG_NET, __FILE__, __LINE__, "MPI's TCP interfaces: Open MPI's own choice (%s) [%.0f ms]",
                g_choice.why, ms);
  }
  return rc;
}

void mpinet_init_done(void) {
#ifdef GPL_HAVE_PMIX
  /* Open MPI's own PMIx_Init counted one more: this only drops ours (PMIx counts its users). */
  if (g_pmix_up) PMIx_Finalize(NULL, 0);
#endif
  g_pmix_up = 0;
}

void mpinet_init_free(void) {
  for (int r = 0; r < g_nhosts; r++) free(g_hosts[r]);
  free(g_hosts);
  g_hosts = NULL;
  g_nhosts = 0;
}
