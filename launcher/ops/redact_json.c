/* JSON-aware redaction: string by string, so the result is still a JSON document. */
#include "launcher/ops/redact_json.h"

#include <stdlib.h>
#include <string.h>

#include "common/redact.h"
#include "common/util.h"
#include "gpulaunch/error.h"

int redact_json(cJSON *doc) {
  int rc = GPL_OK;
  for (cJSON *it = doc; it && rc == GPL_OK; it = it->next) {
    if (cJSON_IsString(it) && it->valuestring) {
      if (it->string && *it->valuestring && util_is_secret_name(it->string)) {
        if (!cJSON_SetValuestring(it, REDACTED)) rc = GPL_ENOMEM;
      } else {
        char *clean = redact_text(it->valuestring, strlen(it->valuestring));
        if (!clean || (strcmp(clean, it->valuestring) != 0 && !cJSON_SetValuestring(it, clean)))
          rc = GPL_ENOMEM;
        free(clean);
      }
    }
    if (it->child && rc == GPL_OK) rc = redact_json(it->child);
    if (it == doc) break; /* doc's siblings are not doc's */
  }
  return rc;
}
