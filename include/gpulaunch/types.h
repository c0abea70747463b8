/* gpulaunch public data types and reduction operators shared by the comm API and the kernels. */
#ifndef GPULAUNCH_TYPES_H
#define GPULAUNCH_TYPES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types. Names follow nccl-tests' -d option. XX(ENUM, name, size) */
#define GPL_DTYPE_MAP(XX)         \
  XX(INT8, "int8", 1)             \
  XX(UINT8, "uint8", 1)           \
  XX(INT32, "int32", 4)           \
  XX(UINT32, "uint32", 4)         \
  XX(INT64, "int64", 8)           \
  XX(UINT64, "uint64", 8)         \
  XX(HALF, "half", 2)             \
  XX(FLOAT, "float", 4)           \
  XX(DOUBLE, "double", 8)         \
  XX(BFLOAT16, "bfloat16", 2)

typedef enum gpl_dtype_e {
#define GPL_DTYPE_ENUM_(e, name, size) GPL_##e,
  GPL_DTYPE_MAP(GPL_DTYPE_ENUM_)
#undef GPL_DTYPE_ENUM_
  GPL_DTYPE_COUNT
} gpl_dtype_t;

/* Reduction operators (nccl-tests' -o option). */
#define GPL_REDOP_MAP(XX) XX(SUM, "sum") XX(PROD, "prod") XX(MAX, "max") XX(MIN, "min") XX(AVG, "avg")

typedef enum gpl_redop_e {
#define GPL_REDOP_ENUM_(e, name) GPL_OP_##e,
  GPL_REDOP_MAP(GPL_REDOP_ENUM_)
#undef GPL_REDOP_ENUM_
  GPL_REDOP_COUNT
} gpl_redop_t;

/** \return the size in bytes of one element of \p dt, 0 if unknown. */
size_t gpl_dtype_size(gpl_dtype_t dt);
/** \return the nccl-tests name of \p dt ("float", "bfloat16", ...). */
const char *gpl_dtype_name(gpl_dtype_t dt);
/** Parse a dtype name; accepts nccl-tests' names and aliases (fp32, f32, fp16, bf16, ...).
 * \return 0 and *out set, or GPL_EINVAL. */
int gpl_dtype_parse(const char *s, gpl_dtype_t *out);
/** \return the name of \p op ("sum", ...). */
const char *gpl_redop_name(gpl_redop_t op);
/** Parse a reduction operator name. \return 0 or GPL_EINVAL. */
int gpl_redop_parse(const char *s, gpl_redop_t *out);

#ifdef __cplusplus
}
#endif
#endif
