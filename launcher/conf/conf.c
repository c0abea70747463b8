/* The configuration's life: load (read, parse, validate, type), set from the command line, the
 * accessors by field, print, free. */
#include "launcher/conf/conf.h"

#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/redact.h"
#include "common/safefile.h"
#include "common/util.h"
#include "launcher/conf/conf_priv.h"

static conf_t *conf_new(void) {
  conf_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->st = calloc(1, sizeof *c->st);
  if (!c->st) {
    free(c);
    return NULL;
  }
  c->st->schema = conf_schema(&c->st->nkeys);
  c->st->vals = calloc((size_t)c->st->nkeys, sizeof *c->st->vals);
  if (!c->st->vals) {
    free(c->st);
    free(c);
    return NULL;
  }
  for (int i = 0; i < c->st->nkeys; i++) c->st->vals[i].k = &c->st->schema[i];
  return c;
}

/* Parse text (the file's bytes, len of them) as the config file path; path NULL: defaults. */
/* errors_out: NULL to print the errors (rank 0), else where the printed text goes (malloc'd). */
static int load(conf_t **out, const char *path, const char *text, size_t len, const char *read_err,
                char **errors_out) {
  conf_t *c = conf_new();
  ALLOCCHECK(c);
  conf_state_t *st = c->st;
  int rc = GPL_OK;
  for (int i = 0; i < st->nkeys; i++)
    if (st->schema[i].type != CONF_FREE) CHECKGOTO(conf_value_default(c, &st->vals[i]), rc, fail);
  if (path) {
    st->path = strdup(path);
    char *tmp = strdup(path);
    st->dir = strdup(tmp ? dirname(tmp) : ".");
    free(tmp);
    if (read_err) {
      conf_ini_error(c, 0, "cannot open the config file: %s", read_err);
    } else {
      conf_ini_parse(c, text, len);
      conf_vars_check_duplicates(c);
    }
    conf_value_parse_all(c);
    const conf_val_t *cmd = conf_value_find(c, "job", "command"), *bi = conf_value_find(c, "job", "builtin");
    if (cmd->text && bi->text)
      conf_ini_error(c, cmd->line, "[job] has both 'command' and 'builtin' (line %d); keep one", bi->line);
    if (cmd->text && cmd->argc == 0 && !st->nerrors)
      conf_ini_error(c, cmd->line, "[job] command: empty command");
  }
  if (st->nerrors) {
    if (st->nerrors > MAX_ERRORS_SHOWN)
      strbuf_printf(&st->errors, "gpulaunch: %s: ... and %d more errors\n", st->path,
                    st->nerrors - MAX_ERRORS_SHOWN);
    /* No error quotes a secret: a value of the file's secret-named [env]/[nccl] keys or of a
     * secret-named environment variable, wherever it stands (a bad 'grace = <that value>'
     * too), and anything of a key's shape (redact_text). */
    conf_register_secrets(c);
    const char *all = strbuf_str(&st->errors);
    char *shown = redact_text(all, strlen(all));
    if (errors_out) *errors_out = shown, shown = NULL;
    else if (util_env_rank() <= 0)
      log_print("%s", shown ? shown : "gpulaunch: config errors (not shown: no memory)\n");
    free(shown);
    rc = GPL_ECONFIG;
    goto fail;
  }
  for (int i = 0; i < st->nkeys; i++)
    if (st->schema[i].type != CONF_FREE) conf_value_store(c, &st->vals[i]);
  *out = c;
  return GPL_OK;
fail:
  conf_free(c);
  *out = NULL;
  return rc;
}

int conf_load(conf_t **out, const char *path) {
  if (!path) return load(out, NULL, NULL, 0, NULL, NULL);
  char *text = NULL;
  size_t len = 0;
  char err[PATH_MAX + 128];
  /* A regular file of bounded size: a FIFO, /dev/urandom or a huge file is refused, not read. */
  int rc = safefile_read(path, SAFEFILE_CAP_CONFIG, &text, &len, err, sizeof err);
  if (rc < 0) {
    /* "PATH: reason" or "PATH is ...": the path is in the message already */
    const char *why = err;
    if (strncmp(err, path, strlen(path)) == 0) {
      why = err + strlen(path);
      if (*why == ':') why++;
      while (*why == ' ') why++;
    }
    rc = load(out, path, NULL, 0, why, NULL);
  } else {
    rc = load(out, path, text, len, NULL, NULL);
  }
  free(text);
  return rc;
}

int conf_load_text(conf_t **out, const char *name, const char *text, size_t len) {
  return load(out, name ? name : "(text)", text, len, NULL, NULL);
}

int conf_load_text_errors(conf_t **out, const char *name, const char *text, size_t len,
                          char **errors) {
  *errors = NULL;
  return load(out, name ? name : "(text)", text, len, NULL, errors);
}

void conf_free(conf_t *c) {
  if (!c) return;
  for (int i = 0; i < c->st->nkeys; i++) {
    free(c->st->vals[i].text);
    free(c->st->vals[i].origin);
    conf_value_clear(&c->st->vals[i]);
  }
  conf_vars_free(c);
  for (int i = 0; i < c->st->nsections_seen; i++) free(c->st->sections_seen[i]);
  free(c->st->sections_seen);
  free(c->st->section_line);
  free(c->st->vals);
  free(c->st->path);
  free(c->st->dir);
  strbuf_free(&c->st->errors);
  free(c->st);
  free(c);
}

/* Set v from the command line: validated like the file; on error the old value stays. */
static int set_value(conf_t *c, conf_val_t *v, const char *value, const char *origin) {
  if (v->k->type == CONF_OUTPATH && !*value) {
    log_print("gpulaunch: %s: empty value for [%s] %s (give a path)\n", origin, v->k->section,
              v->k->key);
    return GPL_ECONFIG;
  }
  char msg[PATH_MAX + 200];
  char *old = v->text;
  size_t old_len = v->tlen, old_cap = v->tcap;
  v->text = strdup(value);
  v->tlen = v->tcap = 0; /* a plain strdup: grown again only by a copy */
  if (conf_value_parse(c, v, value, msg, sizeof msg)) {
    log_print("gpulaunch: %s: %s\n", origin, msg);
    free(v->text);
    v->text = old;
    v->tlen = old_len;
    v->tcap = old_cap;
    if (old) conf_value_parse(c, v, old, msg, sizeof msg);
    else conf_value_default(c, v);
    conf_value_store(c, v);
    return GPL_ECONFIG;
  }
  free(old);
  free(v->origin);
  v->origin = strdup(origin);
  conf_value_store(c, v);
  return GPL_OK;
}

int conf_set(conf_t *c, const void *field, const char *value, const char *origin) {
  conf_val_t *v = conf_value_of(c, field);
  return v ? set_value(c, v, value, origin) : GPL_EINVAL;
}

int conf_set_key(conf_t *c, const char *section, const char *key, const char *value,
                 const char *origin) {
  int fsec = conf_vars_index(section);
  if (fsec >= 0) return conf_vars_set(c, fsec, key, value);
  conf_val_t *v = conf_value_find(c, section, key);
  if (!v) {
    LOG_ERROR("conf_set: unknown key [%s] %s", section, key);
    return GPL_EINVAL;
  }
  return set_value(c, v, value, origin);
}

const conf_key_t *conf_key_of(const conf_t *c, const void *field) {
  const conf_val_t *v = conf_value_of(c, field);
  return v ? v->k : NULL;
}
const char *conf_text(const conf_t *c, const void *field) {
  const conf_val_t *v = conf_value_of(c, field);
  return v ? (v->text ? v->text : v->k->def) : "";
}
int conf_is_set(const conf_t *c, const void *field) {
  const conf_val_t *v = conf_value_of(c, field);
  return v && v->text;
}
const char *conf_origin(const conf_t *c, const void *field) {
  const conf_val_t *v = conf_value_of(c, field);
  return v && v->origin ? v->origin : "default";
}
const char *conf_path(const conf_t *c) { return c ? c->st->path : NULL; }

int conf_has_section(const conf_t *c, const char *section) {
  for (int i = 0; c && i < c->st->nsections_seen; i++)
    if (strcmp(c->st->sections_seen[i], section) == 0) return 1;
  return 0;
}

void conf_print(FILE *f, const conf_t *c) {
  conf_state_t *st = c->st;
  const char *sec = "";
  for (int i = 0; i < st->nkeys; i++) {
    const conf_key_t *k = &st->schema[i];
    if (strcmp(sec, k->section) != 0) {
      fprintf(f, "%s[%s]\n", *sec ? "\n" : "", k->section);
      sec = k->section;
    }
    if (k->type == CONF_FREE) {
      conf_vars_print(f, c, conf_vars_index(k->section));
      continue;
    }
    const conf_val_t *v = &st->vals[i];
    const char *text = v->text ? v->text : k->def;
    if (k->type == CONF_COMMAND && v->argc > 0) { /* word by word: "--hf_token VALUE" redacted */
      char *line = redact_command(v->argv, v->argc);
      fprintf(f, "%-18s = %-30s # %s\n", k->key, line ? line : REDACTED, v->origin ? v->origin : "default");
      free(line);
      continue;
    }
    /* the value in effect, as the program reads it (a number as parsed, not as written) */
    char eff[64];
    if (k->type == CONF_INT && *text) snprintf(eff, sizeof eff, "%ld", v->i), text = eff;
    else if (k->type == CONF_BOOL) snprintf(eff, sizeof eff, "%s", v->b ? "true" : "false"), text = eff;
    else if (k->type == CONF_DOUBLE && *text) snprintf(eff, sizeof eff, "%g", v->d), text = eff;
    else if (k->type == CONF_DURATION && *text) snprintf(eff, sizeof eff, "%gs", v->d), text = eff;
    else if (k->type == CONF_SIZE && *text)
      snprintf(eff, sizeof eff, "%llu", (unsigned long long)v->size), text = eff;
    fprintf(f, "%-18s = %-30s # %s\n", k->key, text, v->origin ? v->origin : "default");
  }
}

