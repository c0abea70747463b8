/* Redaction of credentials: by name (NAME=VALUE forms), in URLs, and by the environment's values. */
#include "common/redact.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
  if (n == 0) return 0;
  char small[256], *buf = n < sizeof small ? small : malloc(n + 1);
  if (!buf) return 1; /* no memory: the safe answer */
  for (size_t i = 0; i < n; i++) buf[i] = s[i] == '-' ? '_' : s[i];
  buf[n] = 0;
  int r = util_is_secret_name(buf);
  if (buf != small) free(buf);
  return r;
}

/* An option whose value is a credential: a secret name, or (the spellings people use for
 * passwords and tokens on command lines) --*token*, --*pass*, --pw, --jwt. */
static int secret_option(const char *s, size_t n) {
  if (n < 2 || s[0] != '-') return 0;
  if (secret_name(s, n)) return 1;
  for (size_t i = 0; i + 4 <= n; i++)
    if (strncasecmp(s + i, "pass", 4) == 0 || (i + 5 <= n && strncasecmp(s + i, "token", 5) == 0)) return 1;
  return 0;
}

/* Programs whose -p takes a password (mysql -p VALUE, sshpass -p VALUE), and options that name
 * a user: after them a -p VALUE is a password, not a port. */
static int password_context_word(const char *s, size_t n) {
  static const char *const tools[] = {"mysql", "mysqldump", "mysqladmin", "mysqlsh", "mariadb",
                                      "mariadb-dump", "sshpass"};
  static const char *const user_opts[] = {"--user", "--username", "--login"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(tools); i++)
    if (strlen(tools[i]) == n && strncmp(s, tools[i], n) == 0) return 1;
  for (size_t i = 0; i < GPL_ARRAY_LEN(user_opts); i++) {
    size_t m = strlen(user_opts[i]);
    if (n >= m && strncmp(s, user_opts[i], m) == 0 && (n == m || s[m] == '=')) return 1;
  }
  return 0;
}

/* An HTTP authorization scheme: the credential is the word after it. */
static int auth_scheme(const char *s, size_t n) {
  return (n == 6 && strncasecmp(s, "Bearer", 6) == 0) || (n == 5 && strncasecmp(s, "Basic", 5) == 0) ||
         (n == 5 && strncasecmp(s, "Token", 5) == 0) || (n == 6 && strncasecmp(s, "Digest", 6) == 0);
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

/* Length of the word at p: up to a blank, a newline or a quote (a word's end in a command line,
 * or a JSON string's). */
static size_t word_len(const char *p, const char *end) {
  const char *q = p;
  while (q < end && !isspace((unsigned char)*q) && *q != '"' && *q != '\'') q++;
  return (size_t)(q - p);
}

/* Redact the value at v, the text [p, v) before it (separator, blanks) copied as it is: a quoted
 * string, else a word (words) or what value_len takes. What was redacted may itself name a
 * secret ("Bearer GITLAB_PAT: x", "--token \"api_key\": \"x\"", "Authorization: Bearer x"):
 * when it ends in ':' or '=', or one follows it, or it is an HTTP scheme, the next value goes
 * too, and so on. Returns where the text continues, or NULL when there was no value at v. */
static const char *redact_value(strbuf_t *b, const char *p, const char *v, const char *end, int words) {
  for (int first = 1;; first = 0) {
    char quote = 0;
    size_t vlen = 0;
    if (v < end && (*v == '"' || *v == '\'')) vlen = value_len(v, end, &quote);
    else if (v < end) vlen = words ? word_len(v, end) : value_len(v, end, &quote);
    if (!vlen) return first ? NULL : p;
    strbuf_append_n(b, p, (size_t)(v - p) + (quote ? 1 : 0));
    strbuf_append(b, REDACTED);
    const char *val = v + (quote ? 1 : 0), *after = val + vlen;
    char last = val[vlen - 1];
    int chain = (!quote && (auth_scheme(val, vlen) || secret_option(val, vlen))) || last == ':' ||
                last == '=';
    const char *s = after;
    if (s < end && (*s == '"' || *s == '\'')) s++; /* its closing quote, or a JSON key's */
    while (s < end && (*s == ' ' || *s == '\t')) s++;
    if (!chain && s < end && (*s == ':' || *s == '=') && !(s + 1 < end && s[1] == '/')) {
      chain = 1;
      s++;
    }
    while (s < end && (*s == ' ' || *s == '\t')) s++;
    /* an option after it is an option (the main loop redacts its value), not this one's value */
    if (!chain || s >= end || *s == '\n' || s == after) return after;
    if (*s == '-' && !secret_option(val, vlen)) return after;
    p = after;
    v = s;
    words = 1;
  }
}

/* Rules 1, 2 and 4 over the text into b. */
static void redact_names(strbuf_t *b, const char *t, size_t len) {
  const char *end = t + len, *p = t;
  int pw_ctx = 0; /* this line names a user or a password tool: -p VALUE is a password */
  while (p < end) {
    if (*p == '\n') pw_ctx = 0;
    /* rule 2: scheme://user:password@ */
    if (p + 3 <= end && p[0] == ':' && p[1] == '/' && p[2] == '/') {
      const char *u = p + 3, *colon = NULL, *q = u;
      while (q < end && !isspace((unsigned char)*q) && *q != '/' && *q != '@') {
        if (*q == ':' && !colon) colon = q;
        q++;
      }
      if (q < end && *q == '@' && colon) {
        /* the user part is text like any other ("://MY_TOKEN=x:pw@" must lose both) */
        strbuf_append_n(b, p, 3);
        redact_names(b, u, (size_t)(colon - u));
        strbuf_append(b, ":" REDACTED);
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
    if (password_context_word(n0, nlen)) pw_ctx = 1;
    /* rule 4: mysql's -pVALUE, in a line where -p is a password */
    if (pw_ctx && nlen > 2 && n0[0] == '-' && n0[1] == 'p' && n0[2] != '-' &&
        (n0 == t || isspace((unsigned char)n0[-1]))) {
      strbuf_append(b, "-p");
      p = redact_value(b, n0 + 2, n0 + 2, end, 1);
      continue;
    }
    strbuf_append_n(b, n0, nlen);
    /* rule 4: "--api-token VALUE", "Bearer VALUE", "-p VALUE" after a user or password tool */
    if (p < end && (*p == ' ' || *p == '\t') &&
        (secret_option(n0, nlen) || auth_scheme(n0, nlen) ||
         (pw_ctx && nlen == 2 && n0[0] == '-' && n0[1] == 'p'))) {
      const char *v = p;
      while (v < end && (*v == ' ' || *v == '\t')) v++;
      const char *q = v < end && *v != '-' ? redact_value(b, p, v, end, 1) : NULL;
      if (q) {
        p = q;
        continue;
      }
    }
    /* separator: optional closing quote of a JSON key, blanks, '=' or ':' (not "::" or "://") */
    const char *s = p;
    if (s < end && (*s == '"' || *s == '\'') && n0 > t && n0[-1] == *s) s++;
    while (s < end && (*s == ' ' || *s == '\t')) s++;
    if (s >= end || (*s != '=' && *s != ':')) continue;
    if (*s == ':' && s + 1 < end && (s[1] == ':' || s[1] == '/')) continue;
    s++;
    while (s < end && (*s == ' ' || *s == '\t')) s++;
    if (!secret_name(n0, nlen) && !secret_option(n0, nlen)) continue;
    const char *q = redact_value(b, p, s, end, 0);
    if (q) p = q;
  }
}

/* Rule 5: credentials known by their shape, wherever they stand. */

/* Length of the well-known key at p (a word's start), 0 if none: a provider's prefix and a body of
 * its alphabet. Bodies that could be words ("hf_transfer", "sk-learn") need a digit, a capital
 * or 16 characters; AKIA/ASIA ids are exactly 16 of [0-9A-Z]. */
enum { BODY_ALNUM, BODY_ALNUM_UNDER, BODY_ALNUM_DASH, BODY_ALNUM_DASH_UNDER };
static const struct {
  const char *prefix;
  int body, min, wordlike;
} g_shapes[] = {
    {"ghp_", BODY_ALNUM, 4, 0},      {"gho_", BODY_ALNUM, 4, 0},
    {"ghs_", BODY_ALNUM, 4, 0},      {"ghu_", BODY_ALNUM, 4, 0},
    {"ghr_", BODY_ALNUM, 4, 0},      {"github_pat_", BODY_ALNUM_UNDER, 4, 0},
    {"glpat-", BODY_ALNUM_DASH_UNDER, 8, 0},
    {"xoxa-", BODY_ALNUM_DASH, 6, 0}, {"xoxb-", BODY_ALNUM_DASH, 6, 0},
    {"xoxp-", BODY_ALNUM_DASH, 6, 0}, {"xoxr-", BODY_ALNUM_DASH, 6, 0},
    {"xoxs-", BODY_ALNUM_DASH, 6, 0}, {"xoxe-", BODY_ALNUM_DASH, 6, 0},
    {"sk_live_", BODY_ALNUM, 8, 0},  {"sk_test_", BODY_ALNUM, 8, 0},
    {"rk_live_", BODY_ALNUM, 8, 0},  {"sk-", BODY_ALNUM_DASH_UNDER, 8, 1},
    {"hf_", BODY_ALNUM, 8, 1},
};

static int body_char(char c, int body) {
  if (isalnum((unsigned char)c)) return 1;
  if (c == '_') return body == BODY_ALNUM_UNDER || body == BODY_ALNUM_DASH_UNDER;
  if (c == '-') return body == BODY_ALNUM_DASH || body == BODY_ALNUM_DASH_UNDER;
  return 0;
}

static size_t key_shape_len(const char *p, const char *end) {
  size_t avail = (size_t)(end - p);
  if (avail >= 20 && (strncmp(p, "AKIA", 4) == 0 || strncmp(p, "ASIA", 4) == 0)) {
    size_t k = 4;
    while (k < 20 && (isdigit((unsigned char)p[k]) || isupper((unsigned char)p[k]))) k++;
    if (k == 20 && (p + 20 == end || !isalnum((unsigned char)p[20]))) return 20;
  }
  for (size_t i = 0; i < GPL_ARRAY_LEN(g_shapes); i++) {
    size_t pl = strlen(g_shapes[i].prefix);
    if (avail <= pl || strncmp(p, g_shapes[i].prefix, pl) != 0) continue;
    size_t k = pl;
    int marked = 0;
    while (p + k < end && body_char(p[k], g_shapes[i].body)) {
      marked |= isdigit((unsigned char)p[k]) || isupper((unsigned char)p[k]);
      k++;
    }
    size_t body = k - pl;
    if (body < (size_t)g_shapes[i].min) continue;
    if (g_shapes[i].wordlike && !marked && body < 16) continue;
    return k;
  }
  return 0;
}

/* Where a URL ends: a blank, a quote, a bracket or what stands for a redaction. */
static int url_char(char c) {
  return c && !isspace((unsigned char)c) && !strchr("\"'<>`,;()[]{}\\", c);
}

/* A URL's user name alone (no password) is a token for HTTP ("https://TOKEN@github.com/x") and
 * wherever it looks like one. */
static int user_is_token(const char *scheme, size_t sl, const char *u, size_t ul) {
  static const char *const http[] = {"http", "https", "ws", "wss"};
  const char *plus = memchr(scheme, '+', sl); /* git+https */
  if (plus) {
    sl -= (size_t)(plus + 1 - scheme);
    scheme = plus + 1;
  }
  for (size_t i = 0; i < GPL_ARRAY_LEN(http); i++)
    if (strlen(http[i]) == sl && strncasecmp(scheme, http[i], sl) == 0) return 1;
  if (key_shape_len(u, u + ul) == ul) return 1;
  int alpha = 0, digit = 0;
  for (size_t i = 0; i < ul; i++) {
    alpha |= isalpha((unsigned char)u[i]);
    digit |= isdigit((unsigned char)u[i]);
  }
  return ul >= 20 && alpha && digit;
}

/* Where the secret part of a webhook URL's path starts (its path at path, plen bytes; host h,
 * hl bytes), or NULL: Slack's hooks.slack.com/services/..., and any path with a webhook or hooks
 * segment (Discord's /api/webhooks/ID/TOKEN, Teams' /webhook/ and /webhookb2/, Zapier's
 * /hooks/catch/, Mattermost's /hooks/ID). */
static const char *webhook_secret(const char *h, size_t hl, const char *path, size_t plen) {
  static const char *const slack[] = {"/services/", "/workflows/", "/triggers/"};
  static const char *const segs[] = {"/webhooks/", "/webhook/", "/webhookb2/", "/hooks/"};
  const char *end = path + plen;
  if ((hl == 15 && strncasecmp(h, "hooks.slack.com", 15) == 0) ||
      (hl == 19 && strncasecmp(h, "hooks.slack-gov.com", 19) == 0))
    for (size_t i = 0; i < GPL_ARRAY_LEN(slack); i++) {
      size_t sl = strlen(slack[i]);
      if (plen > sl && strncasecmp(path, slack[i], sl) == 0) return path + sl;
    }
  for (const char *q = path; q < end; q++) {
    if (*q != '/') continue;
    for (size_t i = 0; i < GPL_ARRAY_LEN(segs); i++) {
      size_t sl = strlen(segs[i]);
      if ((size_t)(end - q) > sl && strncasecmp(q, segs[i], sl) == 0) return q + sl;
    }
  }
  return NULL;
}

/* Rule 5 over text (what rules 1, 2 and 4 left) into b: bare well-known keys, a URL's user name
 * that is a token, a webhook URL's secret path. */
static void redact_shapes(strbuf_t *b, const char *t, size_t len) {
  const char *end = t + len, *p = t;
  while (p < end) {
    if (p + 3 <= end && p[0] == ':' && p[1] == '/' && p[2] == '/') {
      const char *sc = p;
      while (sc > t && (isalnum((unsigned char)sc[-1]) || sc[-1] == '+' || sc[-1] == '.' || sc[-1] == '-')) sc--;
      const char *u = p + 3, *q = u, *at = NULL;
      while (q < end && url_char(*q) && *q != '/' && *q != '?' && *q != '#') {
        if (*q == '@') at = q;
        q++;
      }
      strbuf_append_n(b, p, 3);
      const char *host = u;
      if (at) {
        if (at > u && !memchr(u, ':', (size_t)(at - u)) &&
            user_is_token(sc, (size_t)(p - sc), u, (size_t)(at - u)))
          strbuf_append(b, REDACTED);
        else
          strbuf_append_n(b, u, (size_t)(at - u));
        host = at;
      }
      const char *hstart = host == u ? u : host + 1, *hend = hstart;
      while (hend < q && *hend != ':') hend++;
      const char *uend = q;
      while (uend < end && url_char(*uend)) uend++;
      const char *cut = webhook_secret(hstart, (size_t)(hend - hstart), q, (size_t)(uend - q));
      if (cut) {
        strbuf_append_n(b, host, (size_t)(cut - host));
        strbuf_append(b, REDACTED);
        p = uend;
      } else {
        p = host;
      }
      continue;
    }
    size_t k = 0;
    if ((p == t || !(isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '-')) &&
        (k = key_shape_len(p, end)) > 0) {
      strbuf_append(b, REDACTED);
      p += k;
      continue;
    }
    strbuf_append_n(b, p, 1);
    p++;
  }
}

/* Secret values known besides the environment's (the config's [env] entries with secret
 * names: the program has them in its environment, gpulaunch does not). */
static char **g_extra;
static int g_nextra;

void redact_add_value(const char *value) {
  if (!value || strlen(value) < MIN_SECRET_LEN || strcmp(value, REDACTED) == 0) return;
  for (int i = 0; i < g_nextra; i++)
    if (strcmp(g_extra[i], value) == 0) return;
  char **n = realloc(g_extra, (size_t)(g_nextra + 1) * sizeof *n);
  if (!n) return;
  g_extra = n;
  if ((g_extra[g_nextra] = strdup(value))) g_nextra++;
}

/* Every occurrence of val in text replaced; text is consumed. NULL without memory. */
static char *replace_all(char *text, const char *val) {
  size_t vl = strlen(val);
  if (!strstr(text, val)) return text;
  strbuf_t b = STRBUF_INIT;
  const char *p = text, *hit;
  while ((hit = strstr(p, val)) != NULL) {
    strbuf_append_n(&b, p, (size_t)(hit - p));
    strbuf_append(&b, REDACTED);
    p = hit + vl;
  }
  strbuf_append(&b, p);
  free(text);
  if (b.oom) {
    strbuf_free(&b);
    return NULL;
  }
  return strbuf_take(&b);
}

/* Rule 3: replace every occurrence of a secret value of the environment (and the registered). */
static char *redact_values(char *text) {
  for (int i = 0; text && i < g_nextra; i++) text = replace_all(text, g_extra[i]);
  for (char **e = environ; text && e && *e; e++) {
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
    text = replace_all(text, val);
  }
  return text;
}

char *redact_text(const char *text, size_t len) {
  strbuf_t b = STRBUF_INIT, s = STRBUF_INIT;
  strbuf_append(&b, "");
  redact_names(&b, text, len);
  strbuf_append(&s, "");
  if (!b.oom) redact_shapes(&s, strbuf_str(&b), b.len);
  strbuf_free(&b);
  if (s.oom) {
    strbuf_free(&s);
    return NULL;
  }
  return redact_values(strbuf_take(&s));
}

char *redact_command(char *const *argv, int argc) {
  char **red = redact_argv(argv, argc);
  strbuf_t line = STRBUF_INIT;
  for (int w = 0; w < argc; w++) {
    char *q = util_quote_word(red ? red[w] : REDACTED);
    strbuf_printf(&line, "%s%s", w ? " " : "", q ? q : REDACTED);
    free(q);
  }
  util_free_argv(red);
  if (line.oom) {
    strbuf_free(&line);
    return NULL;
  }
  return strbuf_take(&line);
}

char **redact_argv(char *const *argv, int argc) {
  char **out = calloc((size_t)argc + 1, sizeof *out);
  if (!out) return NULL;
  int hide_next = 0;
  /* a password tool (by its name, wherever it lives) or a user option earlier: -p is a password */
  const char *prog = argc > 0 && argv[0] ? argv[0] : "";
  const char *base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
  int pw_ctx = password_context_word(base, strlen(base));
  for (int i = 0; i < argc; i++) {
    const char *w = argv[i] ? argv[i] : "";
    size_t wl = strlen(w);
    if (hide_next && w[0] != '-') {
      out[i] = strdup(REDACTED);
      hide_next = 0;
    } else if (pw_ctx && w[0] == '-' && w[1] == 'p' && w[2] && w[2] != '-' && w[2] != '=') {
      out[i] = strdup("-p" REDACTED); /* mysql -pVALUE */
      hide_next = 0;
    } else {
      out[i] = redact_text(w, wl);
      if (i > 0 && password_context_word(w, wl)) pw_ctx = 1;
      /* "--api-token VALUE": the option alone, its value in the next word; so is "-p VALUE"
       * after a user option or for a password tool */
      hide_next = w[0] == '-' && !strchr(w, '=') &&
                  (secret_option(w, wl) || (pw_ctx && strcmp(w, "-p") == 0));
    }
    if (!out[i]) {
      util_free_argv(out);
      return NULL;
    }
  }
  return out;
}
