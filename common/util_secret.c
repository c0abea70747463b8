/* Whether an environment variable's name looks like a credential (its value is never printed).
 * (util_ prefix kept: its functions are called from dozens of files.) */
#include "common/util_secret.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* Is w (n bytes, upper case) one of the words that name a credential when they stand alone
 * between separators (MYSQL_PWD, DOCKER_PASS, GITLAB_PAT, SENTRY_DSN, --pw, --jwt)? As parts of
 * longer words they mean other things (PATH, PATTERN, BYPASS). */
static int secret_word(const char *w, size_t n) {
  static const char *const words[] = {"PASS", "PWD", "PW", "PAT", "DSN", "JWT", "COOKIE", "OTP"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(words); i++)
    if (strlen(words[i]) == n && memcmp(words[i], w, n) == 0) return 1;
  return 0;
}

static int secret_upper(const char *up, size_t n);

int util_is_secret_name(const char *name) {
  char small[256], *up = small;
  size_t n = strlen(name);
  if (n >= sizeof small && !(up = malloc(n + 1))) return 1; /* no memory: the safe answer */
  for (size_t i = 0; i < n; i++) up[i] = (char)toupper((unsigned char)name[i]);
  up[n] = 0;
  int r = secret_upper(up, n);
  if (up != small) free(up);
  return r;
}

/* util_is_secret_name on the upper-case name up (n bytes): a name of any length is judged whole
 * (a long one cut short could lose the part that makes it a secret). */
static int secret_upper(const char *up, size_t n) {
  static const char *const parts[] = {"SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE",
                                      "CREDENTIAL", "PRIVATE", "APIKEY", "API_KEY", "AUTH",
                                      "WEBHOOK"};
  static const char *const prefixes[] = {"AWS_", "AZURE_"};
  /* the shell's working folders, not passwords */
  if (strcmp(up, "PWD") == 0 || strcmp(up, "OLDPWD") == 0) return 0;
  for (size_t i = 0; i < GPL_ARRAY_LEN(parts); i++)
    if (strstr(up, parts[i])) return 1;
  for (size_t i = 0; i < GPL_ARRAY_LEN(prefixes); i++)
    if (strncmp(up, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  if (n >= 4 && strcmp(up + n - 4, "_KEY") == 0) return 1;
  if (strcmp(up, "KEY") == 0 || (n >= 5 && strcmp(up + n - 5, "_KEYS") == 0)) return 1;
  for (size_t i = 0; i < n;) {
    size_t w = strcspn(up + i, "_-.");
    if (secret_word(up + i, w)) return 1;
    i += w + (up[i + w] ? 1 : 0);
    if (!w && !up[i]) break;
  }
  return 0;
}
