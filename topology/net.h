/* Job-wide interface agreement: NCCL_SOCKET_IFNAME per node (auto choice or the user's, validated with NCCL's syntax) and MASTER_ADDR. */
#ifndef GPL_TOPOLOGY_NET_H
#define GPL_TOPOLOGY_NET_H

#include <stddef.h>

#include <mpi.h>

#include "common/mpix.h"

#include "common/strbuf.h"
#include "topology/iface.h"
#include "topology/plan.h"
#include "topology/topo.h"

/* ---- NCCL_SOCKET_IFNAME syntax ----------------------------------------------------------------
 * Exactly NCCL's rules (src/misc/socket.cc ncclFindInterfaces / ncclOsFindInterfaces, and
 * parseStringList / matchIfList in src/misc/utils.cc):
 *   - a value of 0 or 1 characters counts as unset (NCCL then picks by itself);
 *   - a leading '^' makes the list an exclude list; then (only then, "^=" combines, "=^" does
 *     not) a leading '=' makes the names exact instead of prefixes;
 *   - names are separated by ','; empty names are skipped; "name:port" parses a port that
 *     interface matching ignores; at most 16 names (MAX_IFS), the rest is ignored by NCCL;
 *   - an empty list (e.g. "^,") matches every interface, so with '^' it matches none;
 *   - NCCL only considers interfaces that are running (IFF_RUNNING) and have an IPv4 or IPv6
 *     address (not ::1), in getifaddrs order: every IPv4 address by interface index, then every
 *     IPv6 one. Its bootstrap takes the first match; its socket transport takes all of them. */
#define NET_IFLIST_MAX 16
#define NET_IFLIST_NAME 64

typedef struct net_iflist_s {
  int exclude;                              /* '^' */
  int exact;                                /* '=' */
  int n;                                    /* names (0: the list matches everything) */
  char names[NET_IFLIST_MAX][NET_IFLIST_NAME];
  int ports[NET_IFLIST_MAX];                /* ":port", -1 when none */
} net_iflist_t;

/** Parse a value as NCCL does. Values NCCL would silently misread are errors with a message in
 * err: shorter than 2 characters (ignored by NCCL), a name of 64 characters or more (overflows
 * NCCL's buffer), more than 16 names (NCCL ignores the rest). Hints (a '^' after '=', spaces in
 * a name) go into err too but do not fail. \return 0 or GPL_EINVAL. */
int net_iflist_parse(const char *value, net_iflist_t *out, char *err, size_t errlen);

/** 1 when NCCL would select interface \p name under this list (its matchIfList, '^' applied). */
int net_iflist_match(const net_iflist_t *l, const char *name);

/* ---- one node's view ---------------------------------------------------------------------------
 * The pure part of the agreement: given every node's inventory, decide for one node. Used by
 * net_agree on every node leader, by rank 0 to explain another node's failure, and by tests with
 * inventories made up by hand. */
#define NET_MAX_CAND 8
#define NET_HOST_LEN 64
#define NET_VALUE_LEN 256
#define NET_SOURCE_LEN 96

typedef struct net_inv_s {
  int node;                          /* node index */
  int status;                        /* 0, or the error the node got reading its interfaces */
  char host[NET_HOST_LEN];
  char user[NET_VALUE_LEN];          /* NCCL_SOCKET_IFNAME given on that node, "" = none */
  char user_source[NET_SOURCE_LEN];  /* where it came from ("environment", "[nccl] SOCKET_IFNAME") */
  int family;                        /* 0, AF_INET or AF_INET6 (NCCL_SOCKET_FAMILY) */
  int n;                             /* interfaces (those with an address, at most NET_WIRE_IFACES) */
  int omitted;                       /* interfaces left out of v (no address, or over the cap) */
  iface_t *v;
} net_inv_t;

typedef struct net_cand_s {
  iface_t iface;                     /* a copy: candidates travel to the node's other ranks */
  iface_addr_t addr;                 /* the address NCCL takes on it (first IPv4, else IPv6) */
  iface_tier_t tier;
  int reach;                         /* other nodes with an address in addr's subnet */
} net_cand_t;

typedef struct net_eval_s {
  int status;                        /* 0 ok, 1 ok with warnings (in msg), < 0 GPL_ENET/... */
  int user;                          /* 1: the user's value, validated; 0: chosen here */
  char value[NET_VALUE_LEN];         /* NCCL_SOCKET_IFNAME for the node ("=eth0", or the user's) */
  int ncand;                         /* the equally good interfaces, best first (user: 1) */
  net_cand_t cand[NET_MAX_CAND];
  char reason[PLAN_REASON_LEN];      /* why, in one line */
} net_eval_t;

/** Decide for node \p node of \p nnodes (inv[i].node == i). Auto (no user value): among the
 * node's interfaces that are not IFACE_TIER_NEVER and whose NCCL address is neither link-local
 * nor loopback, keep those whose subnet every other node has an address in (on an interface that
 * is not NEVER, and not the very same address: docker0's 172.17.0.1 is on every host), then the
 * best tier, then the fastest; the ones still equal are out->cand (rank-level tie-break by GPU
 * locality: net_pick). None: GPL_ENET. A single node needs no reach; with no candidate it gets
 * loopback. User value: NCCL's syntax and matching; nothing matched is GPL_ENET; on a job of
 * several nodes the first match (NCCL's bootstrap interface) must be usable, and a match that
 * reaches not every node or is container plumbing is a warning (status 1).
 * \p msg (optional) receives the full explanation for errors and warnings (the node, its value,
 * its interfaces with their state). \return out->status. */
int net_eval_node(const net_inv_t *inv, int nnodes, int node, net_eval_t *out, strbuf_t *msg);

/** 1 when host \p m has an address in \p net's subnet on an interface that could carry traffic
 * (not IFACE_TIER_NEVER, not loopback or link-local); the very same address does not count (a
 * copy, like docker0's 172.17.0.1) and sets *dup (optional) instead. The agreement's reach test. */
int net_inv_has_subnet(const net_inv_t *m, const iface_addr_t *net, int *dup);

/** An inventory in the agreement's wire format (malloc'd; *len its bytes), or NULL. */
char *net_inv_encode(const net_inv_t *inv, int *len);
/** An inventory as another node's leader sent it (the agreement's wire format), checked: every
 * length, count and string from the bytes is bounded. \return 0 (free inv->v) or GPL_EPROTO /
 * GPL_ENOMEM (nothing to free). */
int net_inv_decode(const char *buf, int len, net_inv_t *inv);

/** Among ev's candidates, the one nearest the rank's GPU (its PCI path to the interface's PCI
 * device in \p t: PIX < PXB < PHB < NODE < SYS, then NUMA distance, then bridges); interfaces
 * without a PCI device in t rank after; \p r NULL or without GPU/NUMA: the first. why
 * (optional) says how. \return the index into ev->cand (0 when there is one or none). */
int net_pick(const net_eval_t *ev, const topo_t *t, const plan_rank_t *r, char *why, size_t len);

/* ---- the job -----------------------------------------------------------------------------------
 * What the agreement needs to know about the job: plain data, filled by the launcher (job_t) or
 * a test driver. Nodes are numbered 0..nnodes-1; a node's leader is its lowest world rank. */
typedef struct net_job_s {
  int rank, size;              /* world rank and size */
  int local_rank;              /* rank among the ranks of this node (0 = the node's leader) */
  int nnodes;
  const int *node_of;          /* node index of each world rank (size entries) */
  const int *leader_of_node;   /* world rank of each node's leader (nnodes entries) */
  const char *const *hosts;    /* host name of each world rank (size entries), or NULL */
  MPI_Comm comm;               /* all ranks (MPI_COMM_WORLD) */
  mpix_group_t node;           /* the ranks of this node, the node's leader = member 0 */
  mpix_group_t leaders;        /* the node leaders in node order (member i = node i's leader);
                                * me = -1 elsewhere */
  double timeout;              /* deadline of each exchange, seconds */
  int family;                  /* NCCL_SOCKET_FAMILY: 0 (any), AF_INET or AF_INET6 */
  const struct tls_cfg_s *tls; /* the job key and TLS settings (common/tls.h): the preflight's
                                * token and TLS; NULL: a token of rank 0's over MPI, plain TCP */
} net_job_t;

/* One rank's or one node's outcome. */
typedef struct net_choice_s {
  int status;                  /* 0, 1 (warnings), < 0 */
  int family;
  char ifname[IFACE_NAME_LEN];
  char addr[48];
} net_choice_t;

typedef struct net_result_s {
  int status;                  /* as returned: 0 or the job's error (same on every rank) */
  net_eval_t eval;             /* this node's decision (the leader's, shared with its ranks) */
  int pick;                    /* this rank's candidate in eval.cand */
  char ifname[IFACE_NAME_LEN]; /* this rank's interface ("" when the agreement failed) */
  char addr[48];               /* this rank's address on it (what its listeners bind to) */
  char value[NET_VALUE_LEN];   /* this rank's NCCL_SOCKET_IFNAME ("=eth0", or the user's) */
  char reason[PLAN_REASON_LEN];
  char master_addr[48];        /* world rank 0's address on its interface: MASTER_ADDR */
  char master_ifname[IFACE_NAME_LEN];
  int nnodes, size;
  net_choice_t *nodes;         /* each node's leader's choice (nnodes entries) */
  net_choice_t *ranks;         /* each world rank's choice (size entries) */
  char **node_addrs;           /* node leaders: each node's addresses no other node has (not
                                * loopback or link-local), blank-separated (nnodes entries) */
  double seconds;              /* wall time of the agreement on this rank */
} net_result_t;

/** The agreement. Collective over job->comm: every rank calls it, and every rank returns the
 * same status. Node leaders read their interfaces and allgather them (bounded); each leader
 * decides for its node (net_eval_node) and hands the decision to its ranks; each rank picks the
 * interface nearest its GPU among the equally good ones (net_pick with \p t and \p me), and sets
 * NCCL_SOCKET_IFNAME in \p me (plan_env_set; \p me may be NULL); then all choices are
 * allgathered, so every rank knows every node's interface and address and MASTER_ADDR.
 * \p user_ifname: the user's NCCL_SOCKET_IFNAME (environment or [nccl] SOCKET_IFNAME), or NULL;
 * \p user_source says where it came from, for messages.
 * Errors: world rank 0 prints one message for the whole job (stderr; the node, its host, its
 * value and its interfaces), the others stay quiet. GPL_ENET (no interface connects the nodes,
 * a user value that matches nothing usable), GPL_ETIMEDOUT (a rank missing; named), GPL_EMPI,
 * GPL_ENOMEM. out is filled as far as possible either way; free it with net_result_free. */
int net_agree(const net_job_t *job, const topo_t *t, plan_rank_t *me, const char *user_ifname,
              const char *user_source, net_result_t *out);
void net_result_free(net_result_t *r);

/** Apply a node decision to another local rank of the same plan (gpulaunch topo shows every
 * local rank): net_pick + plan_env_set(NCCL_SOCKET_IFNAME). \return 0 or a negative code. */
int net_apply(const net_eval_t *ev, const topo_t *t, plan_rank_t *r);

/** Interfaces of this namespace as a node inventory (what a leader sends): those with an
 * address, at most NET_WIRE_IFACES. Free inv->v. \return 0 or a negative code. */
#define NET_WIRE_IFACES 64
int net_inv_local(net_inv_t *inv, int node, const char *host, const char *user, const char *source,
                  int family);
void net_inv_free(net_inv_t *inv);

/** NCCL_SOCKET_FAMILY ("AF_INET", "AF_INET6") to AF_*; anything else (or NULL) is 0 (any). */
int net_family_parse(const char *s);

#endif
