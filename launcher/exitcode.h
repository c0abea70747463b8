/* gpulaunch's documented exit codes (README "Exit codes", --help). */
#ifndef GPL_LAUNCHER_EXITCODE_H
#define GPL_LAUNCHER_EXITCODE_H

#include "common/watchdog.h"
#include "gpulaunch/error.h"

/* 0: success. 1-125: the wrapped program's own exit status (the first rank that failed);
 * 128+N: the wrapped program was killed by signal N. gpulaunch's own failures use 64-79. */
enum {
  GPL_EXIT_OK = 0,
  GPL_EXIT_USAGE = 64,        /* bad command line */
  GPL_EXIT_CONFIG = 65,       /* configuration error (file:line and key printed) */
  GPL_EXIT_TOPOLOGY = 66,     /* topology / placement error (e.g. more ranks than GPUs) */
  GPL_EXIT_NETWORK = 67,      /* no common interface, bad NCCL_SOCKET_IFNAME, preflight failed */
  GPL_EXIT_TIMEOUT = 68,      /* another rank is missing: a start-up wait timed out, or while the
                               * job ran a rank's supervisor died or its host stopped answering;
                               * the missing ranks and hosts are named */
  GPL_EXIT_NOGPU = 69,        /* GPU feature asked for but no GPU / not built with CUDA */
  GPL_EXIT_INTERNAL = 70,     /* internal error */
  GPL_EXIT_SPAWN = 71,        /* the program could not be started (not found, not executable) */
  GPL_EXIT_BENCH = 72,        /* bench: wrong results or bus bandwidth below --min-busbw */
  GPL_EXIT_ACCEPT_FAIL = 73,  /* accept: at least one check failed */
  GPL_EXIT_ACCEPT_ERROR = 74, /* accept: the checks could not run */
  GPL_EXIT_PREEMPTED = 75,    /* stopped by SIGTERM (preemption); requeue the job */
  GPL_EXIT_OUTPUT = 76,       /* the job succeeded but output it asked for was not all written
                               * (a log file, --summary); what and where is printed */
  GPL_EXIT_HANG = 77,         /* the hang watchdog ([job] hang_timeout): a rank made no progress
                               * that long; the odd rank, its host and function are printed and
                               * every rank's stacks are in the hang report */
};

/* The exit code that says what a gpulaunch error code is about: 0 for 0; config, topology,
 * network, timeout or no GPU; anything else is internal. */
static inline int exitcode_of(int err) {
  switch (err) {
    case GPL_OK: return GPL_EXIT_OK;
    case GPL_ECONFIG: return GPL_EXIT_CONFIG;
    case GPL_ETOPO: return GPL_EXIT_TOPOLOGY;
    case GPL_ENET:
    case GPL_EUNREACH: return GPL_EXIT_NETWORK;
    case GPL_ETIMEDOUT: return GPL_EXIT_TIMEOUT;
    case GPL_ENOGPU:
    case GPL_ENOCUDA: return GPL_EXIT_NOGPU;
    default: return GPL_EXIT_INTERNAL;
  }
}

_Static_assert(GPL_EXIT_TIMEOUT == WDOG_EXIT_TIMEOUT, "the watchdog ends a rank with the timeout code");

#endif
