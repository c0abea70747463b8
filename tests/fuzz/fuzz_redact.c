/* Fuzz target: redaction, with a leak oracle. The input picks two secrets and a text made of
 * fragments (names, separators, quotes, options, URLs) and of the secrets placed where they must
 * be redacted: as values of secret names, after secret options, as URL passwords, after
 * "Bearer", after mysql's -p, as a URL's user name, in a webhook URL's path, as the body of a
 * well-known key (ghp_, sk-, hf_, xoxb-, github_pat_, AKIA...), and (the first secret, also set
 * in the environment under a secret name) anywhere at all. No fragment holds a digit and the secrets are nothing but digits (1-4
 * for the environment's, 5-8 for the other), so the oracle is exact: a digit in the output is a
 * leak, whatever the fuzzer made of the text around it. The same text split into words goes
 * through redact_argv, where the environment's secret must be gone from every word. */
#include <stdlib.h>
#include <string.h>

#include "common/redact.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "fuzz.h"

static const char *const g_frag[] = {
    " ", "\t", "\n", "=", ":", "\"", "'", ",", ";", "{", "}", "[", "]", "(", ")", "-", "--", "/",
    "\\", "@", ".", "://", "https://", "export ", "TOKEN", "MY_PASSWORD", "password", "--hf_token",
    "--api-key", "--pw", "--jwt", "--user", "-p", "-u", "mysql", "sshpass", "Authorization",
    "Bearer", "abc", "x", "env.", "SENTRY_DSN", "DOCKER_PASS", "PWD", "PATH", "<redacted>", "#",
};
#define NFRAG (sizeof g_frag / sizeof g_frag[0])

/* Where a secret (S: the other one) must be redacted. */
static const char *const g_form[][2] = {
    {"MY_PASSWORD=", ""},          {" --hf_token ", " "},         {" https://user:", "@host/x "},
    {"\"api_key\": \"", "\""},     {" Authorization: Bearer ", " "}, {" DOCKER_PASS=", " "},
    {" mysql --user root -p", " "}, {" --pw ", " "},              {"{\"password\":\"", "\"}"},
    {" GITLAB_PAT: ", "\n"},
    /* rule 5: shapes */
    {" https://", "@github.com/x "}, {" https://hooks.slack.com/services/T/B/", " "},
    {" https://discord.com/api/webhooks/", "/tok "}, {" ghp_", " "}, {" sk-proj", " "},
    {" hf_AbCd", " "}, {" xoxb-ab", " "}, {" github_pat_", " "}, {" AKIA", " "},
};
#define NFORM (sizeof g_form / sizeof g_form[0])

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

static void secret(const uint8_t **d, size_t *n, char lo, char *out, size_t len) {
  size_t k = 0;
  for (; k < len - 1 && *n > 0 && k < 4 + (size_t)(**d % 9); k++, (*d)++, (*n)--)
    out[k] = (char)(lo + **d % 4); /* 1-4 or 5-8 */
  while (k < 4) out[k++] = lo; /* at least 4 characters: the environment rule's minimum */
  out[k] = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char env_secret[16], other[16];
  secret(&data, &size, '1', env_secret, sizeof env_secret); /* 1-4 */
  secret(&data, &size, '5', other, sizeof other);           /* 5-8 */
  setenv("FUZZ_LEAK_TOKEN", env_secret, 1);
  strbuf_t t = STRBUF_INIT;
  strbuf_append(&t, "");
  for (size_t i = 0; i < size && i < 400; i++) {
    uint8_t b = data[i];
    if (b < 200) {
      strbuf_append(&t, g_frag[b % NFRAG]);
    } else if (b < 240) {
      strbuf_append(&t, g_form[b % NFORM][0]);
      strbuf_append(&t, other);
      /* an AWS key id is AKIA and 16 of [0-9A-Z] exactly */
      if (strcmp(g_form[b % NFORM][0], " AKIA") == 0)
        for (size_t k = strlen(other); k < 16; k++) strbuf_append(&t, "Q");
      strbuf_append(&t, g_form[b % NFORM][1]);
    } else {
      strbuf_append(&t, env_secret);
    }
  }
  const char *text = strbuf_str(&t);
  char *out = redact_text(text, strlen(text));
  FUZZ_ASSERT(out != NULL, "no memory");
  FUZZ_ASSERT(strpbrk(out, "0123456789") == NULL, "a secret leaked:\n  in:  %s\n  out: %s", text, out);
  free(out);

  char **argv = NULL;
  int argc = 0;
  char err[200];
  if (util_split_words(text, &argv, &argc, err, sizeof err) == 0) {
    char **red = redact_argv(argv, argc);
    FUZZ_ASSERT(red != NULL, "no memory");
    for (int i = 0; i < argc; i++)
      FUZZ_ASSERT(strpbrk(red[i], "1234") == NULL, "the environment's secret leaked in word %d: %s", i,
                  red[i]);
    util_free_argv(red);
    util_free_argv(argv);
  }
  strbuf_free(&t);
  return 0;
}
