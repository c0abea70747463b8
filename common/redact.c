/* Redaction of credentials: by name (NAME=VALUE forms), in URLs, and by the environment's values. */
#include "common/redact.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/util.h"

extern char **environ;

#define MIN_SECRET_LEN 4

static int name_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
}

/* util_is_secret_name on a name as written in text: leading dashes dropped, dashes read as
 * underscores ("--api-token" -> "API_TOKEN"). */
static int secret_name(const char *s, size_t n) {
  while (n > 0 && *s == '-') {
    s++;
    n--;
  }
  if (n == 0 || n >= 256) return 0;
  char buf[256];
  for (size_t i = 0; i < n; i++) buf[i] = s[i] == '-' ? '_' : s[i];
  buf[n] = 0;
  return util_is_secret_name(buf);
}

const char *redact_env_value(const char *name, const char *value) {
  if (value && *value && util_is_secret_name(name)) return REDACTED;
  return value;
}

/* Length of the value starting at p: a quoted string up to its closing quote, else up to blank,
 * comma, semicolon, closing brace/bracket/paren, a quote (the end of the JSON string the pair
 * sits in) or end. *quote gets the quote char or 0. */
static size_t value_len(const char *p, const char *end, char *quote) {
  *quote = 0;
  if (p < end && (*p == '"' || *p == '\'')) {
    *quote = *p;
    const char *q = p + 1;
    while (q < end && *q != *quote && *q != '\n') q++;
    return (size_t)(q - p - 1);
  }
  const char *q = p;
  while (q < end && !isspace((unsigned char)*q) && !strchr(",;}])\"'", *q)) q++;
  return (size_t)(q - p);
}

/* Rules 1 and 2 over the text into b. */
static void redact_names(strbuf_t *b, const char *t, size_t len) {
  const char *end = t + len, *p = t;
  while (p < end) {
    /* rule 2: scheme://user:password@ */
    if (p + 3 <= end && p[0] == ':' && p[1] == '/' && p[2] == '/') {
      const char *u = p + 3, *colon = NULL, *q = u;
      while (q < end && !isspace((unsigned char)*q) && *q != '/' && *q != '@') {
        if (*q == ':' && !colon) colon = q;
        q++;
      }
      if (q < end && *q == '@' && colon) {
        strbuf_append_n(b, p, (size_t)(colon + 1 - p));
        strbuf_append(b, REDACTED);
        p = q;
        continue;
      }
    }
    if (!name_char(*p) || (p > t && name_char(p[-1]))) {
      strbuf_append_n(b, p, 1);
      p++;
      continue;
    }
    const char *n0 = p;
    while (p < end && name_char(*p)) p++;
    size_t nlen = (size_t)(p - n0);
    strbuf_append_n(b, n0, nlen);
    /* separator: optional closing quote of a JSON key, blanks, '=' or ':' (not "::" or "://") */
    const char *s = p;
    if (s < end && (*s == '"' || *s == '\'') && n0 > t && n0[-1] == *s) s++;
    while (s < end && (*s == ' ' || *s == '\t')) s++;
    if (s >= end || (*s != '=' && *s != ':')) continue;
    if (*s == ':' && s + 1 < end && (s[1] == ':' || s[1] == '/')) continue;
    s++;
    while (s < end && (*s == ' ' || *s == '\t')) s++;
    if (!secret_name(n0, nlen)) continue;
    char quote;
    size_t vlen = value_len(s, end, &quote);
    if (vlen == 0) continue;
    strbuf_append_n(b, p, (size_t)(s - p)); /* separator and opening quote */
    if (quote) strbuf_append_n(b, s, 1);
    strbuf_append(b, REDACTED);
    p = s + (quote ? 1 : 0) + vlen;
  }
}

/* Rule 3: replace every occurrence of a secret value of the environment. */
static char *redact_values(char *text) {
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq) continue;
    char name[256];
    size_t nl = (size_t)(eq - *e);
    if (nl >= sizeof name) continue;
    memcpy(name, *e, nl);
    name[nl] = 0;
    const char *val = eq + 1;
    size_t vl = strlen(val);
    if (vl < MIN_SECRET_LEN || !util_is_secret_name(name) || strcmp(val, REDACTED) == 0)
      continue;
    if (!strstr(text, val)) continue;
    strbuf_t b = STRBUF_INIT;
    const char *p = text, *hit;
    while ((hit = strstr(p, val)) != NULL) {
      strbuf_append_n(&b, p, (size_t)(hit - p));
      strbuf_append(&b, REDACTED);
      p = hit + vl;
    }
    strbuf_append(&b, p);
    if (b.oom) {
      strbuf_free(&b);
      free(text);
      return NULL;
    }
    free(text);
    text = strbuf_take(&b);
  }
  return text;
}

char *redact_text(const char *text, size_t len) {
  strbuf_t b = STRBUF_INIT;
  strbuf_append(&b, "");
  redact_names(&b, text, len);
  if (b.oom) {
    strbuf_free(&b);
    return NULL;
  }
  return redact_values(strbuf_take(&b));
}

char **redact_argv(char *const *argv, int argc) {
  char **out = calloc((size_t)argc + 1, sizeof *out);
  if (!out) return NULL;
  int hide_next = 0;
  for (int i = 0; i < argc; i++) {
    const char *w = argv[i] ? argv[i] : "";
    if (hide_next && w[0] != '-') {
      out[i] = strdup(REDACTED);
      hide_next = 0;
    } else {
      out[i] = redact_text(w, strlen(w));
      /* "--api-token VALUE": the option alone, its value in the next word */
      hide_next = w[0] == '-' && !strchr(w, '=') && secret_name(w, strlen(w));
    }
    if (!out[i]) {
      util_free_argv(out);
      return NULL;
    }
  }
  return out;
}
