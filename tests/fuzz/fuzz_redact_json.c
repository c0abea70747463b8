/* Fuzz target: JSON redaction (redact_json, the last net under --summary and the audit lines),
 * with a leak oracle. An input that starts with '{' or '[' is parsed as JSON as it is; any other
 * builds a document from its bytes: objects and arrays nested up to 6 deep, member names from a
 * list (secret names among them), strings made of fragments. Two secrets are planted, both
 * nothing but digits while no fragment or name holds one: the environment's (1-4, also set under
 * a secret name) in any string and any member name, and the other (5-8) in the strings that sit,
 * at any depth, under a secret-named member, and where redact_text must find it (after
 * "password=", as a URL password, after "Bearer"). Oracles: the printed result has no digit; it
 * parses again; in either mode every string under a secret-named member is "<redacted>". */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/redact.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "fuzz.h"
#include "launcher/ops/redact_json.h"

static const char *const g_frag[] = {
    " ", "\t", "\n", "=", ":", "\"", "'", ",", "{", "}", "[", "]", "-", "--", "/", "@", ".",
    "https://", "TOKEN", "password", "--hf_token", "Bearer", "abc", "x", "<redacted>", "#",
};
static const char *const g_form[][2] = {
    {"MY_PASSWORD=", ""}, {" --hf_token ", " "}, {" https://user:", "@host/x "},
    {"\"api_key\": \"", "\""}, {" Authorization: Bearer ", " "}, {"DB_SECRET: ", "\n"},
};
/* member names; the secret ones are judged whole by their part (PASSWORD, TOKEN, SECRET, ...),
 * so a planted secret appended to them (then redacted) leaves them secret */
static const char *const g_name[] = {"a",        "user",        "cmd",     "env",   "nested",
                                     "x",        "",            "ok",      "password", "MY_PASSWORD",
                                     "api_key",  "token",       "db_secret", "AUTH"};
#define NAME_FIRST_SECRET 8
#define N(a) (sizeof(a) / sizeof((a)[0]))

typedef struct {
  const uint8_t *d;
  size_t n;
  char env_secret[16], other[16];
} gen_t;

static unsigned next(gen_t *g) {
  if (!g->n) return 0;
  g->n--;
  return *g->d++;
}

static void secret(gen_t *g, char lo, char *out, size_t len) {
  size_t k = 0;
  for (unsigned want = 4 + next(g) % 9; k < len - 1 && k < want; k++) out[k] = (char)(lo + next(g) % 4);
  out[k] = 0;
}

/* A string: fragments, forms holding the other secret, the environment's secret; in a hidden
 * zone (under a secret-named member) the other secret bare. */
static char *gen_text(gen_t *g, int hidden) {
  strbuf_t t = STRBUF_INIT;
  strbuf_append(&t, "");
  for (unsigned i = 0, len = next(g) % 12; i < len; i++) {
    unsigned b = next(g);
    if (b < 180) strbuf_append(&t, g_frag[b % N(g_frag)]);
    else if (b < 220) strbuf_printf(&t, "%s%s%s", g_form[b % N(g_form)][0], g->other, g_form[b % N(g_form)][1]);
    else if (b < 240 && hidden) strbuf_append(&t, g->other);
    else strbuf_append(&t, g->env_secret);
  }
  return t.oom ? (strbuf_free(&t), NULL) : strbuf_take(&t);
}

static cJSON *gen_value(gen_t *g, int depth, int hidden);

static void gen_members(gen_t *g, cJSON *o, int depth, int hidden) {
  for (unsigned i = 0, k = next(g) % 5; i < k && g->n; i++) {
    unsigned b = next(g);
    const char *base = g_name[b % N(g_name)];
    /* an array's element has no name to hide it */
    int secret_member = !cJSON_IsArray(o) && b % N(g_name) >= NAME_FIRST_SECRET;
    char name[64];
    snprintf(name, sizeof name, "%s%s", base, b >= 200 ? g->env_secret : "");
    cJSON *v = gen_value(g, depth + 1, hidden || secret_member);
    if (!v) continue;
    if (cJSON_IsArray(o)) cJSON_AddItemToArray(o, v);
    else cJSON_AddItemToObject(o, name, v);
  }
}

static cJSON *gen_value(gen_t *g, int depth, int hidden) {
  unsigned b = next(g) % 8;
  if (depth >= 6 && b < 2) b = 2;
  if (b == 0 || b == 1) {
    cJSON *o = b == 0 ? cJSON_CreateObject() : cJSON_CreateArray();
    if (o) gen_members(g, o, depth, hidden);
    return o;
  }
  if (b == 6) return cJSON_CreateBool(next(g) & 1);
  if (b == 7) return cJSON_CreateNull();
  char *s = gen_text(g, hidden);
  cJSON *v = s ? cJSON_CreateString(s) : NULL;
  free(s);
  return v;
}

/* Every string under a secret-named member (its name as redacted) is REDACTED or empty. */
static void check_hidden(const cJSON *node, int hidden) {
  if (node->string && util_is_secret_name(node->string)) hidden = 1;
  if (hidden && cJSON_IsString(node) && node->valuestring && *node->valuestring)
    FUZZ_ASSERT(strcmp(node->valuestring, REDACTED) == 0, "a string under a secret member kept: %s",
                node->valuestring);
  for (const cJSON *c = node->child; c; c = c->next) check_hidden(c, hidden);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gen_t g = {.d = data, .n = size};
  cJSON *doc;
  int built = !(size && (data[0] == '{' || data[0] == '['));
  if (built) {
    secret(&g, '1', g.env_secret, sizeof g.env_secret);
    secret(&g, '5', g.other, sizeof g.other);
    if (strlen(g.env_secret) < 4) strcpy(g.env_secret, "1111");
    if (strlen(g.other) < 4) strcpy(g.other, "5555");
    setenv("FUZZ_LEAK_TOKEN", g.env_secret, 1);
    /* the top is an object or an array, as --summary's and the audit lines' are */
    doc = (next(&g) & 1) ? cJSON_CreateArray() : cJSON_CreateObject();
    if (!doc) return 0;
    gen_members(&g, doc, 0, 0);
  } else {
    unsetenv("FUZZ_LEAK_TOKEN");
    doc = cJSON_ParseWithLength((const char *)data, size);
    if (!doc) return 0;
  }
  char *before = built ? cJSON_PrintUnformatted(doc) : NULL;
  FUZZ_ASSERT(redact_json(doc) == 0, "redact_json failed (no memory?)");
  check_hidden(doc, 0);
  char *out = cJSON_PrintUnformatted(doc);
  FUZZ_ASSERT(out != NULL, "no memory");
  if (built)
    FUZZ_ASSERT(strpbrk(out, "0123456789") == NULL, "a secret leaked:\n  in:  %s\n  out: %s",
                before ? before : "?", out);
  cJSON *again = cJSON_Parse(out);
  FUZZ_ASSERT(again != NULL, "the result is not JSON: %s", out);
  cJSON_Delete(again);
  free(out);
  free(before);
  cJSON_Delete(doc);
  return 0;
}
