/* Control events in the audit log: who stopped the job and how, lost hosts, notices, elastic
 * restarts, failed authentication. One chained line each (audit_chain.h), a copy to syslog when
 * asked. For every process of gpulaunch (the ranks and gpulaunch-run); thread-safe. */
#ifndef GPL_LAUNCHER_AUDIT_EVENT_H
#define GPL_LAUNCHER_AUDIT_EVENT_H

#include <stddef.h>

/* Where this process's events go ([audit] log on a rank, --audit-log in gpulaunch-run): checked
 * appendable now (safefile_check_append). 0, or a negative GPL_E* code with one line in err
 * (the events then go nowhere). NULL: none. err NULL: not checked now (a failed append warns
 * when an event comes: thousands of ranks need not all open a shared file at start). */
int audit_event_open(const char *path, char *err, size_t errlen);
/* [audit] syslog = on: each line (events, and the job's start and end) also to syslog(3),
 * facility LOG_AUTHPRIV, priority LOG_NOTICE, ident "gpulaunch". */
void audit_event_syslog(int on);
/* The job id and rank every event line names (rank -1: gpulaunch-run). */
void audit_event_identity(const char *job_id, int rank);

/* One JSON object (text "{...}") to path as a chained line, and to syslog when on: the job's
 * start and end lines (launcher/ops/audit.c) and every event. 0 or a negative GPL_E* code
 * (said as a warning). */
int audit_event_line(const char *path, const char *obj);

/* The events (nothing when no log is open and syslog is off). Text arguments may be NULL. */
/* A stop: the signal, the channel it came by ("signal", "slurm", "mpirun", "gpulaunch-run") and
 * the peer (a process name or an address; peer_pid > 0: the sender's pid). */
void audit_note_stop(int signum, const char *channel, const char *peer, int peer_pid);
/* The same with the peer's address read from a connected socket (-1: none). */
void audit_note_stop_fd(int signum, const char *channel, int fd);
/* Hosts (or ranks) lost while the job ran, and the words the job said about it. */
void audit_note_lost(const char *hosts, const char *why);
/* A host's interruption notice (the cloud's words) with the seconds left. */
void audit_note_notice(const char *host, const char *what, double left_s);
/* An elastic restart: its number, cause, and the hosts before and after. */
void audit_note_restart(int number, const char *cause, const char *hosts_before, const char *hosts_after);
/* Connections that failed authentication on a channel ("liveness", "front", "preflight") from
 * one source address, with how many since the last note of that source. */
void audit_note_auth_failure(const char *channel, const char *peer, unsigned count);

#endif
