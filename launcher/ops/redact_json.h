/* Redaction of a JSON document in place (the --summary, the audit log's lines): its strings go
 * through redact_text one by one, so the document stays JSON whatever is redacted. */
#ifndef GPL_LAUNCHER_REDACT_JSON_H
#define GPL_LAUNCHER_REDACT_JSON_H

#include <cjson/cJSON.h>

/* Every string value of doc (at any depth) redacted with redact_text, and the whole value of a
 * string under a secret-named key ("password": "x"). Numbers, booleans and keys stay as they are
 * (redacting the text of the printed document turned "pass": 3 into "pass": <redacted>, not
 * JSON). 0, or GPL_ENOMEM. */
int redact_json(cJSON *doc);

#endif
