/* The config file's line reader around inih: physical lines counted, the shape of each line
 * checked, sections recorded, unknown names answered with suggestions, errors as file:line. */
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/redact.h"
#include "common/util.h"
#include "launcher/conf/conf_priv.h"

void conf_ini_error(conf_t *c, int line, const char *fmt, ...) {
  conf_state_t *st = c->st;
  if (++st->nerrors > MAX_ERRORS_SHOWN) return;
  va_list ap;
  va_start(ap, fmt);
  if (line > 0) strbuf_printf(&st->errors, "gpulaunch: %s:%d: ", st->path ? st->path : "(defaults)", line);
  else strbuf_printf(&st->errors, "gpulaunch: %s: ", st->path ? st->path : "(defaults)");
  strbuf_vprintf(&st->errors, fmt, ap);
  strbuf_append(&st->errors, "\n");
  va_end(ap);
}

static int known_section(const conf_t *c, const char *s) {
  for (int i = 0; i < c->st->nkeys; i++)
    if (strcmp(c->st->schema[i].section, s) == 0) return 1;
  return 0;
}

static void suggest_section(conf_t *c, int line, const char *s) {
  conf_state_t *st = c->st;
  const char *names[64];
  size_t n = 0;
  for (int i = 0; i < st->nkeys && n < GPL_ARRAY_LEN(names); i++) {
    int dup = 0;
    for (size_t j = 0; j < n; j++) dup |= strcmp(names[j], st->schema[i].section) == 0;
    if (!dup) names[n++] = st->schema[i].section;
  }
  const char *near = util_nearest(s, names, n);
  strbuf_t all = STRBUF_INIT;
  for (size_t i = 0; i < n; i++) strbuf_printf(&all, "%s[%s]", i ? " " : "", names[i]);
  if (near)
    conf_ini_error(c, line, "unknown section [%s] (did you mean [%s]?)", s, near);
  else
    conf_ini_error(c, line, "unknown section [%s] (known: %s)", s, strbuf_str(&all));
  strbuf_free(&all);
}

static void suggest_key(conf_t *c, int line, const char *section, const char *key) {
  conf_state_t *st = c->st;
  const char *names[64];
  size_t n = 0;
  for (int i = 0; i < st->nkeys && n < GPL_ARRAY_LEN(names); i++)
    if (strcmp(st->schema[i].section, section) == 0) names[n++] = st->schema[i].key;
  const char *near = util_nearest(key, names, n);
  /* A key that exists in another section is a common slip. */
  const char *other = NULL;
  for (int i = 0; i < st->nkeys; i++)
    if (strcmp(st->schema[i].key, key) == 0 && strcmp(st->schema[i].section, section) != 0)
      other = st->schema[i].section;
  if (near)
    conf_ini_error(c, line, "[%s] unknown key '%s' (did you mean '%s'?)", section, key, near);
  else if (other)
    conf_ini_error(c, line, "[%s] unknown key '%s' (it belongs in [%s])", section, key, other);
  else {
    strbuf_t all = STRBUF_INIT;
    for (size_t i = 0; i < n; i++) strbuf_printf(&all, "%s%s", i ? ", " : "", names[i]);
    conf_ini_error(c, line, "[%s] unknown key '%s' (known: %s)", section, key, strbuf_str(&all));
    strbuf_free(&all);
  }
}

/* inih handler: one key = value in a section. */
static int on_value(void *user, const char *section_raw, const char *name, const char *value) {
  conf_t *c = user;
  conf_state_t *st = c->st;
  int line = st->line;
  /* inih keeps the spaces of "[ env ]"; read_line trims them too, so both agree on the name */
  char section_buf[256];
  util_strlcpy(section_buf, section_raw, sizeof section_buf);
  const char *section = util_trim(section_buf);
  int continuation = st->line_indented && strcmp(section, st->prev_section) == 0 &&
                     strcmp(name, st->prev_key) == 0;
  util_strlcpy(st->prev_section, section, sizeof st->prev_section);
  util_strlcpy(st->prev_key, name, sizeof st->prev_key);
  if (!*section) {
    conf_ini_error(c, line, "'%s' is outside any section (put it under [job], [env], ...)", name);
    return 1;
  }
  if (!known_section(c, section)) return 1; /* reported once when the header was read */
  int fsec = conf_vars_index(section);
  if (fsec >= 0) {
    conf_vars_line(c, fsec, section, name, value, line, continuation);
    return 1;
  }
  conf_val_t *v = conf_value_find(c, section, name);
  if (!v) {
    suggest_key(c, line, section, name);
    return 1;
  }
  if (v->text && continuation) {
    if (conf_value_append(&v->text, &v->tlen, &v->tcap, " ", value) < 0) conf_ini_error(c, line, "out of memory");
    return 1;
  }
  if (v->text) {
    conf_ini_error(c, line, "[%s] duplicate key '%s' (first set at line %d)", section, name, v->line);
    return 1;
  }
  if (conf_value_append(&v->text, &v->tlen, &v->tcap, "", value) < 0) {
    conf_ini_error(c, line, "out of memory");
    return 1;
  }
  v->line = line;
  char origin[PATH_MAX + 16];
  snprintf(origin, sizeof origin, "%s:%d", st->path, line);
  free(v->origin);
  v->origin = strdup(origin);
  return 1;
}

/* Cut an inline comment: '#' after white space and outside quotes starts one, as it starts a
 * comment at the beginning of a word in a POSIX shell (inih itself cuts at " ;"). */
static void strip_hash_comment(char *buf) {
  char q = 0;
  for (char *p = buf; *p; p++) {
    if (q) {
      if (*p == q) q = 0;
      else if (*p == '\\' && q == '"' && p[1]) p++;
    } else if (*p == '\'' || *p == '"') {
      q = *p;
    } else if (*p == '\\' && p[1]) {
      p++;
    } else if (*p == '#' && p > buf && (p[-1] == ' ' || p[-1] == '\t')) {
      const char *t = buf;
      while (*t == ' ' || *t == '\t') t++;
      if (t == p) return; /* a whole-line comment: inih skips it */
      p[0] = '\n';
      p[1] = 0;
      return;
    }
  }
}

/* The next line of c->st->text into buf (at most size-1 bytes with its newline), fgets-style. A line
 * that does not fit is an error, not cut (Debian's inih reads at most 199 characters a line), and
 * so is a NUL byte, which would silently end the value there. */
static char *next_line(conf_t *c, char *buf, int size) {
  conf_state_t *st = c->st;
  if (st->text_pos >= st->text_len) return NULL;
  const char *p = st->text + st->text_pos;
  size_t left = st->text_len - st->text_pos;
  const char *nl = memchr(p, '\n', left);
  size_t n = nl ? (size_t)(nl - p) + 1 : left;
  st->text_pos += n;
  st->line++;
  if (memchr(p, 0, n)) {
    conf_ini_error(c, st->line, "a NUL byte in the line (a binary file, or a value that cannot be passed on)");
    buf[0] = '\n';
    buf[1] = 0;
    return buf;
  }
  if (n > (size_t)size - 1 || (n == (size_t)size - 1 && p[n - 1] != '\n')) {
    conf_ini_error(c, st->line, "line longer than %d characters; continue a long value on indented lines",
              size - 2);
    buf[0] = '\n';
    buf[1] = 0;
    return buf;
  }
  memcpy(buf, p, n);
  buf[n] = 0;
  return buf;
}

/* A known section's header: recorded once; a second header of it is an error (its keys would
 * merge silently with the first's). */
static void section_header(conf_t *c, const char *name) {
  conf_state_t *st = c->st;
  if (!known_section(c, name)) {
    suggest_section(c, st->line, name);
    return;
  }
  for (int i = 0; i < st->nsections_seen; i++)
    if (strcmp(st->sections_seen[i], name) == 0) {
      conf_ini_error(c, st->line, "[%s] appears a second time (first at line %d); keep one [%s] section",
                name, st->section_line[i], name);
      return;
    }
  char **seen = realloc(st->sections_seen, (size_t)(st->nsections_seen + 1) * sizeof *seen);
  if (seen) st->sections_seen = seen;
  int *lines = realloc(st->section_line, (size_t)(st->nsections_seen + 1) * sizeof *lines);
  if (lines) st->section_line = lines;
  if (seen && lines && (seen[st->nsections_seen] = strdup(name))) {
    lines[st->nsections_seen] = st->line;
    st->nsections_seen++;
  }
}

/* inih reader: counts physical lines, checks the shape of each line and records sections, so
 * that errors name file:line, empty unknown sections are caught and long lines are refused
 * instead of being cut. */
static char *read_line(char *buf, int size, void *stream) {
  conf_t *c = stream;
  conf_state_t *st = c->st;
  for (;;) {
    if (!next_line(c, buf, size)) return NULL;
    if (st->line == 1 && (unsigned char)buf[0] == 0xef && (unsigned char)buf[1] == 0xbb &&
        (unsigned char)buf[2] == 0xbf)
      memmove(buf, buf + 3, strlen(buf + 3) + 1); /* a UTF-8 byte-order mark */
    strip_hash_comment(buf);
    st->line_indented = buf[0] == ' ' || buf[0] == '\t';
    char tmp[512];
    util_strlcpy(tmp, buf, sizeof tmp);
    char *t = util_trim(tmp);
    if (!*t || *t == '#' || *t == ';') return buf;
    if (*t == '[') {
      char *end = strchr(t, ']');
      if (!end) {
        conf_ini_error(c, st->line, "section header without ']': %s", t);
        buf[0] = '\n';
        buf[1] = 0;
        return buf;
      }
      const char *rest = end + 1;
      while (*rest == ' ' || *rest == '\t' || *rest == '\r' || *rest == '\n') rest++;
      if (*rest && *rest != ';' && *rest != '#') {
        /* "[env] x": inih ignores what follows ']', so a key written there would vanish */
        char *shown = redact_text(rest, strcspn(rest, "\r\n")); /* "[env] HF_TOKEN=x" */
        conf_ini_error(c, st->line, "junk after the section header: '%s' (a key goes on a line of its own)",
                  shown ? shown : REDACTED);
        free(shown);
        buf[0] = '\n';
        buf[1] = 0;
        return buf;
      }
      *end = 0;
      section_header(c, util_trim(t + 1));
      st->prev_key[0] = 0;
      return buf;
    }
    if (!strchr(t, '=') && !strchr(t, ':')) {
      if (st->line_indented && st->prev_key[0]) return buf; /* continuation of a value */
      /* "HF_TOKEN hf_x" (the '=' forgotten): a secret-named first word hides the rest; the
       * shapes and known secret values go when the errors are printed (load) */
      size_t w = strcspn(t, " \t");
      char first[256];
      util_strlcpy(first, t, w + 1 < sizeof first ? w + 1 : sizeof first);
      if (t[w] && util_is_secret_name(first))
        conf_ini_error(c, st->line, "expected 'name = value' or '[section]', found '%s %s'", first, REDACTED);
      else
        conf_ini_error(c, st->line, "expected 'name = value' or '[section]', found '%s'", t);
      buf[0] = '\n';
      buf[1] = 0;
      return buf;
    }
    return buf;
  }
}

void conf_ini_parse(conf_t *c, const char *text, size_t len) {
  conf_state_t *st = c->st;
  st->text = text;
  st->text_len = len;
  ini_parse_stream(read_line, c, on_value, c);
  st->text = NULL;
}
