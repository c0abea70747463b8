/* JSON-aware redaction: string by string, so the result is still a JSON document. */
#include "launcher/ops/redact_json.h"

#include <stdlib.h>
#include <string.h>

#include "common/redact.h"
#include "common/util.h"
#include "gpulaunch/error.h"

/* s (a string value or a member name) through redact_text: a malloc'd copy, NULL without memory. */
static char *clean_text(const char *s) { return redact_text(s, strlen(s)); }

/* One node and everything under it. hide: the node sits (at any depth) under a secret-named
 * member, so each string in it is a secret whole ("password": ["a", {"x": "b"}]). A member
 * name is redacted as text too (a name can hold a token: {"ghp_...": 1}); the name of a secret
 * member itself stays, it says what was removed. */
static int redact_node(cJSON *node, int hide) {
  if (node->string && *node->string) {
    char *name = clean_text(node->string);
    if (!name) return GPL_ENOMEM;
    if (strcmp(name, node->string) != 0) {
      /* cJSON owns the name unless the constant-string flag is set; replace it either way */
      if (!(node->type & cJSON_StringIsConst)) free(node->string);
      node->type &= ~cJSON_StringIsConst;
      node->string = name;
    } else {
      free(name);
    }
    if (util_is_secret_name(node->string)) hide = 1;
  }
  if (cJSON_IsString(node) && node->valuestring && *node->valuestring) {
    if (hide) {
      if (!cJSON_SetValuestring(node, REDACTED)) return GPL_ENOMEM;
    } else {
      char *clean = clean_text(node->valuestring);
      int bad = !clean || (strcmp(clean, node->valuestring) != 0 && !cJSON_SetValuestring(node, clean));
      free(clean);
      if (bad) return GPL_ENOMEM;
    }
  }
  /* every member and element: the walk that stopped after the first child left the rest as it was */
  for (cJSON *c = node->child; c; c = c->next) {
    int rc = redact_node(c, hide);
    if (rc != GPL_OK) return rc;
  }
  return GPL_OK;
}

int redact_json(cJSON *doc) { return doc ? redact_node(doc, 0) : GPL_OK; }
