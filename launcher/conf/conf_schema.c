/* The schema table: conf_keys.h's lists as rows, in the order --help-config prints them. */
#include "launcher/conf/conf.h"

#include <stddef.h>

#include "common/util.h"

#define ROW(sec, key, type, def, choices, min, max, help) \
  {#sec, #key, CONF_##type, def, choices, min, max, help, offsetof(conf_t, sec.key)},
#define FREE_ROW(sec, help) {#sec, "*", CONF_FREE, "", NULL, 0, 0, help, 0},

static const conf_key_t g_schema[] = {
    CONF_KEYS_JOB(ROW)
    CONF_FREE_SECTIONS(FREE_ROW)
    CONF_KEYS_TOPOLOGY(ROW)
    CONF_KEYS_COMM(ROW)
    CONF_KEYS_TRAIN(ROW)
    CONF_KEYS_BENCH(ROW)
    CONF_KEYS_ACCEPT(ROW)
    CONF_KEYS_MONITOR(ROW)
    CONF_KEYS_AUDIT(ROW)
    CONF_KEYS_PREEMPT(ROW)
    CONF_KEYS_NET(ROW)
    CONF_KEYS_SECURITY(ROW)
};

const conf_key_t *conf_schema(int *n) {
  *n = (int)GPL_ARRAY_LEN(g_schema);
  return g_schema;
}
