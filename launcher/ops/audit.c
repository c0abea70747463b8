/* Audit log: the job's start and end lines (JSON, chained by launcher/audit/audit_chain.c). */
#include "launcher/ops/audit.h"

#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "common/check.h"
#include "common/safefile.h"
#include "common/util.h"
#include "common/redact.h"
#include "launcher/audit/audit_event.h"
#include "launcher/ops/redact_json.h"


void audit_info_init(audit_info_t *info) {
  memset(info, 0, sizeof *info);
  info->uid = getuid();
  struct passwd pw, *res = NULL;
  char buf[1024];
  if (getpwuid_r(info->uid, &pw, buf, sizeof buf, &res) == 0 && res)
    util_strlcpy(info->user, pw.pw_name, sizeof info->user);
  else
    snprintf(info->user, sizeof info->user, "%u", (unsigned)info->uid);
  util_iso_time(info->started, sizeof info->started);
  info->t0 = util_now();
  const char *id = util_sched_job_id();
  if (id) {
    snprintf(info->job_id, sizeof info->job_id, "%s", id);
    return;
  }
  char compact[40];
  size_t n = 0;
  for (const char *p = info->started; *p && n + 1 < sizeof compact; p++)
    if (*p != '-' && *p != ':' && *p != '.') compact[n++] = *p;
  compact[n] = 0;
  snprintf(info->job_id, sizeof info->job_id, "%s-%d-%s", util_hostname(), (int)getpid(), compact);
}

int audit_file_sha256(const char *path, char hex[65]) {
  hex[0] = 0;
  /* a regular file only: the config may have been swapped for a FIFO since it was read */
  int fd;
  char err[PATH_MAX + 128];
  int orc = safefile_open_read(path, &fd, NULL, err, sizeof err);
  if (orc < 0) return orc == GPL_ENOENT ? GPL_ENOENT : GPL_ESYS;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    close(fd);
    return GPL_ESYS;
  }
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  int rc = GPL_ESYS;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1) {
    unsigned char buf[65536];
    size_t n;
    int ok = 1;
    while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0) ok = EVP_DigestUpdate(ctx, buf, n) == 1;
    if (ok && !ferror(f) && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 32) {
      for (unsigned i = 0; i < mdlen; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
      rc = 0;
    }
  }
  EVP_MD_CTX_free(ctx);
  fclose(f);
  return rc;
}

int audit_check(const char *path, char *err, size_t errlen) {
  return safefile_check_append(path, err, errlen);
}

int audit_append_line(const char *path, const char *line) {
  /* chained (audit_chain.h) and copied to syslog when [audit] syslog is on */
  return audit_event_line(path, line);
}

static cJSON *base_line(const char *event, const audit_info_t *info) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  char now[40];
  util_iso_time(now, sizeof now);
  cJSON_AddStringToObject(o, "event", event);
  cJSON_AddStringToObject(o, "time", now);
  cJSON_AddStringToObject(o, "job", info->job_id);
  cJSON_AddStringToObject(o, "user", info->user);
  cJSON_AddNumberToObject(o, "uid", (double)info->uid);
  cJSON_AddStringToObject(o, "host", util_hostname());
  if (info->mode) cJSON_AddStringToObject(o, "mode", info->mode);
  cJSON_AddNumberToObject(o, "ranks", info->ranks);
  cJSON_AddNumberToObject(o, "nodes", info->nodes);
  cJSON *restarts = info->elastic ? cJSON_Parse(info->elastic) : NULL;
  if (cJSON_IsArray(restarts)) cJSON_AddItemToObject(o, "elastic_restarts", restarts);
  else cJSON_Delete(restarts);
  if (info->key_source) cJSON_AddStringToObject(o, "key_source", info->key_source);
  cJSON *hosts = cJSON_AddArrayToObject(o, "hosts");
  for (int i = 0; hosts && info->hosts && i < info->nodes; i++)
    if (info->hosts[i]) cJSON_AddItemToArray(hosts, cJSON_CreateString(info->hosts[i]));
  cJSON *cmd = cJSON_AddArrayToObject(o, "command");
  if (cmd && info->argv && info->argc > 0) {
    char **red = redact_argv(info->argv, info->argc);
    for (int i = 0; red && i < info->argc; i++) cJSON_AddItemToArray(cmd, cJSON_CreateString(red[i]));
    util_free_argv(red);
  }
  cJSON *conf = cJSON_AddObjectToObject(o, "config");
  if (conf && info->conf_path) {
    char hex[65];
    cJSON_AddStringToObject(conf, "path", info->conf_path);
    if (audit_file_sha256(info->conf_path, hex) == 0) cJSON_AddStringToObject(conf, "sha256", hex);
    else cJSON_AddNullToObject(conf, "sha256");
  }
  return o;
}

static int write_obj(const char *path, cJSON *o) {
  if (!o) return GPL_ENOMEM;
  /* Values were redacted on the way in; this catches a secret in any other string (a host name
   * will not hold one, a config path might), string by string: the line stays JSON. */
  char *clean = redact_json(o) == 0 ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  if (!clean) return GPL_ENOMEM;
  int rc = audit_append_line(path, clean);
  free(clean);
  return rc;
}

int audit_job_start(const char *path, const audit_info_t *info) {
  if (!path || !*path) return 0;
  return write_obj(path, base_line("start", info));
}

int audit_job_end(const char *path, const audit_info_t *info, int exit_status,
                  const char *root_cause) {
  if (!path || !*path) return 0;
  cJSON *o = base_line("end", info);
  if (!o) return GPL_ENOMEM;
  cJSON_AddStringToObject(o, "started", info->started);
  cJSON_AddNumberToObject(o, "duration_s", info->t0 > 0 ? util_now() - info->t0 : 0);
  cJSON_AddNumberToObject(o, "exit_status", exit_status);
  if (root_cause && *root_cause) cJSON_AddStringToObject(o, "root_cause", root_cause);
  else cJSON_AddNullToObject(o, "root_cause");
  return write_obj(path, o);
}
