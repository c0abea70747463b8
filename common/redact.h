/* Redaction of credentials in text that gpulaunch writes out (diag bundle, audit log, reports). */
#ifndef GPL_COMMON_REDACT_H
#define GPL_COMMON_REDACT_H

#include <stddef.h>

/* What replaces a secret. */
#define REDACTED "<redacted>"

/* Redact credentials in a text (many lines allowed) and return a malloc'd copy (NULL: no
 * memory). Five rules, so that a secret leaks neither by name, nor by value, nor by its shape:
 *  1. NAME=VALUE, NAME: VALUE, "NAME": "VALUE", --name=VALUE where util_is_secret_name(NAME)
 *     (dashes read as underscores, "env.MY_TOKEN" as a whole) or NAME is a secret option (rule 4)
 *     -> the value is replaced ("Authorization: Bearer X": X too);
 *  2. the password of a URL (scheme://user:PASSWORD@host) is replaced;
 *  3. every value of a secret-named variable of the current environment (4 characters or more)
 *     is replaced wherever it appears, whatever surrounds it;
 *  4. the word after a secret option: a secret name, --*token*, --*pass*, --pw, --jwt
 *     ("--hf_token hf_x"), after an HTTP scheme word (Bearer, Basic, Token, Digest), and after
 *     -p (or -pVALUE) in a line that names a password tool (mysql, mysqldump, mysqladmin,
 *     mysqlsh, mariadb, sshpass) or a user option (--user, --username, --login);
 *  5. by shape, wherever it stands: well-known keys (sk-..., sk_live_..., ghp_/gho_/ghs_/ghu_/
 *     ghr_..., github_pat_..., glpat-..., hf_..., xox[abeprs]-..., AKIA/ASIA + 16 of [0-9A-Z]),
 *     a URL's user name without a password when the URL is HTTP(S)/WS(S) or the name looks like
 *     a token ("https://ghp_x@github.com/..."), and the secret path of a webhook URL
 *     (hooks.slack.com/services/<redacted>, .../api/webhooks/<redacted>, any /webhook/,
 *     /webhookb2/ or /hooks/ segment). */
char *redact_text(const char *text, size_t len);

/* The words of a command with credentials redacted: each word as above, the word after a secret
 * option ("--api-token VALUE", rule 4), and -p's value (-p VALUE, -pVALUE) when the program is a
 * password tool or a user option came before. Returns a malloc'd NULL-terminated array (free
 * with util_free_argv), or NULL without memory. */
char **redact_argv(char *const *argv, int argc);
/* The command as a shell line to print: redact_argv's words, each quoted (util_quote_word),
 * joined by spaces; a word that cannot be had is REDACTED. A malloc'd string, NULL without
 * memory. */
char *redact_command(char *const *argv, int argc);

/* Make value (4 characters or more) a secret for rule 3 of redact_text, as if a secret-named
 * variable of the environment held it: for the config's [env] secrets, which the program has in
 * its environment and gpulaunch does not. Kept until the process ends. */
void redact_add_value(const char *value);

/* The value to print for the environment variable name=value: value itself, or REDACTED
 * when the name looks like a credential (and the value is not empty). */
const char *redact_env_value(const char *name, const char *value);

#endif
