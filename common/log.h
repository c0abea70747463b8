/* Logging: levels, subsystems, a host:rank prefix on every line; set by GPULAUNCH_LOG / GPULAUNCH_LOG_SUBSYS. */
#ifndef GPL_COMMON_LOG_H
#define GPL_COMMON_LOG_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum log_level_e { LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG } log_level_t;

/* Subsystems, selectable with GPULAUNCH_LOG_SUBSYS=topo,comm (or ^topo to exclude). XX(ENUM, name) */
#define LOG_SUBSYS_MAP(XX)                                                                        \
  XX(JOB, "job") XX(CONF, "conf") XX(TOPO, "topo") XX(NET, "net") XX(COMM, "comm")              \
  XX(KERN, "kern") XX(SUP, "sup") XX(BENCH, "bench") XX(ACCEPT, "accept") XX(MON, "mon")        \
  XX(DIAG, "diag") XX(TRAIN, "train")

typedef enum log_subsys_e {
#define LOG_SUBSYS_ENUM_(e, name) LOG_##e,
  LOG_SUBSYS_MAP(LOG_SUBSYS_ENUM_)
#undef LOG_SUBSYS_ENUM_
  LOG_SUBSYS_COUNT,
  LOG_ALL = LOG_SUBSYS_COUNT
} log_subsys_t;

/* Read GPULAUNCH_LOG and GPULAUNCH_LOG_SUBSYS. Safe to call more than once. */
void log_init(void);
/* Set the identity printed at the start of each line: host and rank (rank < 0 prints "-"). */
void log_set_identity(const char *host, int rank);
/* The subsystem the error chains of a source file (__FILE__) are logged under: its folder's
 * (comm/ comm, topology/ topo or net, launcher/sup/ sup, ...; job for the rest), so that
 * GPULAUNCH_LOG_SUBSYS filters a chain with the rest of its part's lines (common/check.h). */
log_subsys_t log_subsys_of(const char *file);
/* Force a level (used by tests and by -v/-q flags). */
void log_set_level(log_level_t level);
/* True when a message of this level and subsystem would be printed. */
int log_enabled(log_level_t level, log_subsys_t sub);
/* Print one log line (one write(2), so lines of different processes do not interleave). */
void log_write(log_level_t level, log_subsys_t sub, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void log_vwrite(log_level_t level, log_subsys_t sub, const char *file, int line, const char *fmt,
                va_list ap);
/* The host:rank prefix (without brackets), for messages that name this rank. */
const char *log_identity(void);
/* GPULAUNCH_LOG_TIME=1 (read by log_init): the wall clock "s.ms " into buf, its length; else 0. */
int log_time_prefix(char *buf, size_t len);
/* A message for the user, printed as written on stderr (it carries its own "gpulaunch: ..."
 * prefix and newlines): the job's outcome, root causes, usage errors, progress lines. Printed at
 * every level (-q too), in one write(2) like every log line, so lines of different ranks and
 * threads never mix. Every message gpulaunch prints on stderr goes through here or LOG_*. */
void log_print(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_vprint(const char *fmt, va_list ap);

/* Errors and warnings always carry file:line; info and debug check level and subsystem first. */
#define LOG_ERROR(...) log_write(LOG_LVL_ERROR, LOG_ALL, __FILE__, __LINE__, __VA_ARGS__)
#define LOG_WARN(...) log_write(LOG_LVL_WARN, LOG_ALL, __FILE__, __LINE__, __VA_ARGS__)
#define LOG_INFO(SUB, ...)                                                                        \
  do {                                                                                           \
    if (log_enabled(LOG_LVL_INFO, LOG_##SUB)) log_write(LOG_LVL_INFO, LOG_##SUB, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define LOG_DEBUG(SUB, ...)                                                                       \
  do {                                                                                           \
    if (log_enabled(LOG_LVL_DEBUG, LOG_##SUB)) log_write(LOG_LVL_DEBUG, LOG_##SUB, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif
