/* String tables for error codes, dtypes and reduction operators. */
#include <strings.h>
#include <string.h>

#include "gpulaunch/error.h"
#include "gpulaunch/types.h"

const char *gpl_strerror(int err) {
  switch (err) {
    case GPL_OK: return "success";
#define GPL_ERR_MSG_(name, val, msg) case val: return msg;
    GPL_ERR_MAP(GPL_ERR_MSG_)
#undef GPL_ERR_MSG_
    default: return "unknown error";
  }
}

const char *gpl_err_name(int err) {
  switch (err) {
    case GPL_OK: return "OK";
#define GPL_ERR_NAME_(name, val, msg) case val: return #name;
    GPL_ERR_MAP(GPL_ERR_NAME_)
#undef GPL_ERR_NAME_
    default: return "UNKNOWN";
  }
}

static const struct { const char *name; size_t size; } g_dtypes[] = {
#define GPL_DTYPE_ROW_(e, name, size) {name, size},
    GPL_DTYPE_MAP(GPL_DTYPE_ROW_)
#undef GPL_DTYPE_ROW_
};

size_t gpl_dtype_size(gpl_dtype_t dt) {
  return (unsigned)dt < GPL_DTYPE_COUNT ? g_dtypes[dt].size : 0;
}

const char *gpl_dtype_name(gpl_dtype_t dt) {
  return (unsigned)dt < GPL_DTYPE_COUNT ? g_dtypes[dt].name : "unknown";
}

int gpl_dtype_parse(const char *s, gpl_dtype_t *out) {
  static const struct { const char *alias; gpl_dtype_t dt; } aliases[] = {
      {"fp32", GPL_FLOAT},   {"f32", GPL_FLOAT},     {"float32", GPL_FLOAT},  {"fp16", GPL_HALF},
      {"f16", GPL_HALF},     {"float16", GPL_HALF},  {"bf16", GPL_BFLOAT16},  {"fp64", GPL_DOUBLE},
      {"f64", GPL_DOUBLE},   {"float64", GPL_DOUBLE}, {"int", GPL_INT32},     {"char", GPL_INT8},
      {"uint", GPL_UINT32},  {"long", GPL_INT64},    {"ulong", GPL_UINT64},
  };
  if (!s || !out) return GPL_EINVAL;
  for (int i = 0; i < GPL_DTYPE_COUNT; i++)
    if (strcasecmp(s, g_dtypes[i].name) == 0) return *out = (gpl_dtype_t)i, GPL_OK;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcasecmp(s, aliases[i].alias) == 0) return *out = aliases[i].dt, GPL_OK;
  return GPL_EINVAL;
}

static const char *const g_redops[] = {
#define GPL_REDOP_NAME_(e, name) name,
    GPL_REDOP_MAP(GPL_REDOP_NAME_)
#undef GPL_REDOP_NAME_
};

const char *gpl_redop_name(gpl_redop_t op) {
  return (unsigned)op < GPL_REDOP_COUNT ? g_redops[op] : "unknown";
}

int gpl_redop_parse(const char *s, gpl_redop_t *out) {
  if (!s || !out) return GPL_EINVAL;
  for (int i = 0; i < GPL_REDOP_COUNT; i++)
    if (strcasecmp(s, g_redops[i]) == 0) return *out = (gpl_redop_t)i, GPL_OK;
  return GPL_EINVAL;
}
