/* gpulaunch's exit codes: one table, from which the enum, --help's list and the README's come. */
#ifndef GPL_LAUNCHER_EXITCODE_H
#define GPL_LAUNCHER_EXITCODE_H

#include <stdio.h>

#include "common/watchdog.h"
#include "gpulaunch/error.h"

/* Every exit status gpulaunch documents, in the order --help and the README list them.
 *   X(NAME, code, help, sep, doc): a code of gpulaunch's own (GPL_EXIT_NAME = code);
 *   R(label, help, sep, doc):      statuses that are not gpulaunch's (the program's, a signal's).
 * help: the words `gpulaunch --help` prints after the code (a "\n" inside continues the entry on
 * the next line); sep: what --help prints after it ("\n" ends the line, and the next row's is
 * indented by two spaces); doc: the README's "Exit status" table (Markdown).
 * 0 success; 1-125 the wrapped program's own status (the first rank that failed); 128+N killed by
 * signal N; gpulaunch's own failures use 64-79. README, --help and this header are checked
 * against each other by tests/launcher/test_exitcodes.sh. */
#define GPL_EXIT_LIST(X, R)                                                                        \
  X(OK, 0, "success", "; ", "success")                                                           \
  R("1-63 and 80-127",                                                                           \
    "the failed program's own status (the first rank that\n"                                     \
    "failed; its rank, host and last stderr lines are printed)", "; ",                           \
    "the failed program's own exit status (the first rank that failed)")                         \
  R("128+N", "killed by signal N", ";\n", "the program was killed by signal N")                  \
  X(USAGE, 64, "usage (also: srun without --mpi=pmix)", "  ",                                    \
    "bad command line; also srun without PMIx (the one line printed says to pass `--mpi=pmix`)") \
  X(CONFIG, 65, "config error", "  ", "configuration error (file:line and key printed)")        \
  X(TOPOLOGY, 66, "topology error", "\n", "topology / placement error (e.g. more ranks than GPUs)") \
  X(NETWORK, 67, "network/interface error", "\n",                                                \
    "network: no interface every node can reach, a bad `NCCL_SOCKET_IFNAME`, preflight failed") \
  X(TIMEOUT, 68,                                                                                 \
    "another rank is missing: a start-up wait timed out, two hosts cannot reach each other,\n"   \
    "     or a rank's gpulaunch died, hung or lost its host while the job ran (named)", "\n",    \
    "another rank is missing: a start-up wait timed out or two hosts cannot reach each other, "  \
    "or while the job ran a rank's gpulaunch died, hung, never reported its stop or its host "   \
    "was lost (the ranks and hosts are named)")                                                  \
  X(NOGPU, 69, "no GPU / not built with CUDA", "  ",                                             \
    "no GPU, or not built with CUDA, for a GPU-only feature")                                    \
  X(INTERNAL, 70, "internal error", "  ", "internal error")                                      \
  X(SPAWN, 71, "program cannot be started", "\n",                                                \
    "the program cannot be started (not found, not executable)")                                 \
  X(BENCH, 72, "bench failed (wrong results or below --min-busbw)", "  ",                        \
    "bench: wrong results, or bus bandwidth below `--min-busbw`")                                \
  X(ACCEPT_FAIL, 73, "accept: a check failed", "\n", "accept: at least one check failed")        \
  X(ACCEPT_ERROR, 74, "accept: could not run", "  ", "accept: the checks could not run")         \
  X(PREEMPTED, 75,                                                                               \
    "preempted (SIGTERM to the job, or under Slurm preemption,\n"                                \
    "  requeue, time limit, scancel --signal=TERM; requeue it)", "  ",                           \
    "preempted (SIGTERM to the job; under Slurm: preemption, requeue, time limit, "              \
    "`scancel --signal=TERM`): requeue it")                                                      \
  R("143", "cancelled by a plain scancel", "\n",                                                 \
    "under Slurm, a plain `scancel` (128 + SIGTERM): cancelled, not preempted")                  \
  X(OUTPUT, 76,                                                                                  \
    "the job succeeded but a log_dir file or --summary could not be written in full; diag\n"     \
    "     wrote no file of its bundle", "\n",                                                    \
    "the job succeeded, but output it asked for was not all written: a `log_dir` file (full "    \
    "file system) or `--summary`; `diag` that could write no file of its bundle (or whose "      \
    "`--out` folder was refused)")                                                               \
  X(HANG, 77,                                                                                    \
    "hang: no progress for [job] hang_timeout; the odd rank and its function are printed,\n"     \
    "     every rank's stacks are in gpulaunch-hang.txt/.json", "\n",                            \
    "hang: `[job] hang_timeout` passed without progress; the odd rank, its host, pid and "       \
    "function are printed and every rank's stacks are in the hang report (see "                  \
    "[Hangs and stragglers](#hangs-and-stragglers))")                                            \
  X(BELOW_MIN, 78, "elastic: fewer than MIN hosts for --min-wait", "\n",                          \
    "elastic (`gpulaunch-run --nodes MIN:MAX`): fewer than MIN usable hosts for `--min-wait`; "  \
    "the usable hosts and those left out after a loss or notice are named")                      \
  X(SECURITY, 79, "security: [security] require = strict without a key that stays off the\n"      \
    "     fabric, a host whose job key differs (named), or `gpulaunch audit verify`:\n"            \
    "     the audit log's hash chain broken (FILE:LINE named)", "\n",                             \
    "security: `[security] require = strict` and the job key would cross the network (no "      \
    "`key_file`, hosts besides gpulaunch-run's), or a host's job key differs from "              \
    "rank 0's (a wrong `key_file`; the host is named); `gpulaunch audit verify`: the audit "     \
    "log's hash chain is broken, the first line that breaks it named (FILE:LINE); see "          \
    "[docs/security.md](docs/security.md)")

enum {
#define GPL_EXIT_ENUM_(name, code, help, sep, doc) GPL_EXIT_##name = code,
#define GPL_EXIT_NONE_(label, help, sep, doc)
  GPL_EXIT_LIST(GPL_EXIT_ENUM_, GPL_EXIT_NONE_)
#undef GPL_EXIT_ENUM_
#undef GPL_EXIT_NONE_
};

/* gpulaunch's own failures (64-79): a usage, config, network... error, not the program's status. */
#define GPL_EXIT_OWN_FIRST 64
#define GPL_EXIT_OWN_LAST 79

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
    case GPL_EAUTH: return GPL_EXIT_SECURITY;
    case GPL_ENOGPU:
    case GPL_ENOCUDA: return GPL_EXIT_NOGPU;
    default: return GPL_EXIT_INTERNAL;
  }
}

/* The table as `gpulaunch --help` prints it ("Exit status: 0 success; ...", markdown = 0) or as
 * the README's Markdown table (markdown = 1, `gpulaunch --help-exit-codes`). */
void exitcode_print(FILE *f, int markdown);

_Static_assert(GPL_EXIT_TIMEOUT == WDOG_EXIT_TIMEOUT, "the watchdog ends a rank with the timeout code");

#endif
