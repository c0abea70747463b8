/* Whether an environment variable's name looks like a credential (its value is never printed).
 * (util_ prefix kept: its functions are called from dozens of files.) */
#ifndef GPL_COMMON_UTIL_SECRET_H
#define GPL_COMMON_UTIL_SECRET_H

#ifdef __cplusplus
extern "C" {
#endif

/* Does the environment variable name look like a credential (*SECRET*, *TOKEN*, *PASSWORD*,
 * *PASSWD*, *PASSPHRASE*, *CREDENTIAL*, *PRIVATE*, *API_KEY*, *AUTH*, *_KEY, AWS_*, AZURE_*, or
 * one of the words PASS, PWD, PW, PAT, DSN, JWT, COOKIE, OTP between '_', '-' or '.': MYSQL_PWD,
 * DOCKER_PASS, GITLAB_PAT, SENTRY_DSN; PWD and OLDPWD themselves are not)? Its value must never
 * be printed. */
int util_is_secret_name(const char *name);

#ifdef __cplusplus
}
#endif

#endif
