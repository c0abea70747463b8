/* Elementwise reductions on host memory for every gpulaunch dtype (half and bfloat16 computed in
 * float, rounded to nearest even), vectorised; used by the MPI user ops and the shared-memory
 * allreduce. */
#ifndef GPL_COMM_REDUCE_H
#define GPL_COMM_REDUCE_H

#include <stddef.h>

#include "gpulaunch/types.h"

/* inout[i] = inout[i] op in[i] for i < n. GPL_OP_AVG reduces as a sum (divide afterwards). max/min
 * follow Open MPI's builtin rule for floats ((a > b) ? a : b). in and inout must not overlap
 * unless equal. */
void reduce_into(void *inout, const void *in, size_t n, gpl_dtype_t dt, gpl_redop_t op);
/* dst[i] = src[0][i] op src[1][i] op ... op src[nsrc-1][i], in that order, for i < n. Half and
 * bfloat16 are accumulated in float and rounded to nearest even once at the end (more accurate
 * than rounding after every step, and the same on every rank). dst may equal src[0] only. */
void reduce_many(void *dst, const void *const *src, int nsrc, size_t n, gpl_dtype_t dt,
                 gpl_redop_t op);
/* buf[i] /= k in the element type: integer division for integers, IEEE division in float for the
 * 16-bit floats (then rounded to nearest even). The second step of NCCL's avg. */
void reduce_divide(void *buf, size_t n, gpl_dtype_t dt, int k);

/* Convert half through the CPU's F16C instructions (on = 1, the default where the CPU has them) or
 * through mpmath.h's portable code (on = 0); both give the same bits. Returns whether F16C is used.
 * For tests and benchmarks; not thread-safe against concurrent reductions. */
int reduce_use_f16c(int on);

#endif
