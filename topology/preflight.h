/* Preflight reachability: each node proves a TCP connection (libuv, bounded, token-checked) to the next node's chosen address, or to all. */
#ifndef GPL_TOPOLOGY_PREFLIGHT_H
#define GPL_TOPOLOGY_PREFLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "topology/net.h"

/* [topology] probe = ring | all | off. */
typedef enum preflight_mode_e { PREFLIGHT_OFF = 0, PREFLIGHT_RING, PREFLIGHT_ALL } preflight_mode_t;

/** "ring", "all", "off" (also "none"), any case. \return 0 or GPL_EINVAL. */
int preflight_mode_parse(const char *s, preflight_mode_t *out);
const char *preflight_mode_name(preflight_mode_t m);

/* The job's secret: PREFLIGHT_TOKEN_LEN random bytes made by rank 0 and sent over MPI only. The
 * first half is what a prober presents, the second half is what the listener answers with, so
 * neither side accepts a peer that does not know the token. Never printed, never in the
 * environment. */
#define PREFLIGHT_TOKEN_LEN 32

/* One path that did not work, as world rank 0 prints it (and `gpulaunch accept` reports it). */
#define PREFLIGHT_FAILS_MAX 16
typedef struct preflight_fail_s {
  int from, to;        /* node indexes; to = -1: node `from` could not listen on its address src */
  int port;            /* dst's port */
  char src[48], dst[48];
  char src_if[IFACE_NAME_LEN], dst_if[IFACE_NAME_LEN];
  char err[160];       /* "connection refused", "timed out after 5.0 s connecting", ... */
} preflight_fail_t;

typedef struct preflight_stats_s {
  int probes;         /* connections this rank made (node leaders only) */
  int failed;         /* of them, failed */
  int accepted;       /* probes its listeners accepted (the right token) */
  int refused;        /* connections its listeners refused (wrong token, garbage, too slow) */
  int job_probes;     /* connections tried in the whole job (world rank 0 only) */
  int job_failed;     /* failed probes in the whole job (world rank 0 only) */
  int nfail;          /* the first failed paths of the job, in fail (world rank 0 only) */
  preflight_fail_t fail[PREFLIGHT_FAILS_MAX];
  double seconds;     /* wall time on this rank */
} preflight_stats_t;

/** The preflight. Collective over job->comm, after net_agree (it probes the addresses in \p net:
 * each node's distinct addresses, usually one). Node leaders listen on each of their node's
 * chosen addresses (ephemeral port, exchanged over MPI), then connect to the next node's
 * addresses (ring: node i -> i+1 mod n) or to every other node's (all), binding the source to
 * their own address in the same subnet, within \p timeout_s per connection; a probe succeeds
 * only when the listener accepted the token and answered with its half. The other ranks wait
 * for their leader's verdict. Off, or a single node: returns 0 at once.
 * \return 0, GPL_EUNREACH (a path failed: world rank 0 prints one message naming both nodes,
 * the interface, the address and the error), GPL_ETIMEDOUT (a leader never finished: named),
 * or another negative code; the same on every rank. \p stats may be NULL. */
int preflight_run(const net_job_t *job, const net_result_t *net, preflight_mode_t mode, double timeout_s,
                  preflight_stats_t *stats);

/* ---- building blocks (one libuv loop; used by preflight_run and by the tests) ----------------- */
typedef struct preflight_s preflight_t;

/** A prober/listener for node \p node with the job's token. \return 0 or a negative code. */
int preflight_init(preflight_t **out, const uint8_t token[PREFLIGHT_TOKEN_LEN], int node);
struct tls_cfg_s;
/** Every later connection in TLS 1.3 with the "preflight" channel's key from \p cfg (common/tls.h;
 * cfg->off: plain). \return 0 or a negative code. */
int preflight_set_tls(preflight_t *pf, const struct tls_cfg_s *cfg);
/** Listen on addr (IPv4 or IPv6 literal), port 0 = ephemeral; *port gets the port. */
int preflight_listen(preflight_t *pf, const char *addr, int *port);
/** Queue a probe of node \p peer_node at dst:port, from src (NULL: any source), with the pf's
 * token or \p token (tests: a wrong one). \return the probe's index (>= 0) or a negative code. */
int preflight_probe(preflight_t *pf, const char *src, const char *dst, int port, int peer_node, double timeout_s,
                    const uint8_t *token);
/** Run the loop until every probe has finished and more(arg) (polled every millisecond; NULL:
 * stop at once) returns 0, or until the wall-clock deadline (util_now() seconds):
 * GPL_ETIMEDOUT. The listeners answer all the while. */
int preflight_loop(preflight_t *pf, int (*more)(void *arg), void *arg, double deadline);
/** Probe i's outcome: 0, or a negative code with the reason ("connection refused", "timed out
 * after 5.0 s connecting", "closed without accepting the token") in err. */
int preflight_result(const preflight_t *pf, int i, char *err, size_t len);
/** Probe i's duration, seconds. */
double preflight_seconds(const preflight_t *pf, int i);
/** Listener counts so far. */
void preflight_counts(const preflight_t *pf, int *accepted, int *refused);
/** Close everything (the listeners stop answering) and free. */
void preflight_free(preflight_t *pf);

#endif
