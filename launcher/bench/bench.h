/* gpulaunch bench internals: the collectives and their nccl-tests geometry and bandwidth formulas,
 * the size sweep and thresholds, exactly checkable data, the measurement loop and its outputs. */
#ifndef GPL_LAUNCHER_BENCH_H
#define GPL_LAUNCHER_BENCH_H

#include <cjson/cJSON.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpulaunch/comm.h"
#include "gpulaunch/types.h"

/* ---- collectives (bench_geom.c) ---- */

/* The benchmarked operations. XX(ENUM, name): names as `--op` takes them. */
#define BENCH_OP_MAP(XX)                                                                     \
  XX(ALLREDUCE, "allreduce") XX(ALLGATHER, "allgather") XX(REDUCESCATTER, "reducescatter")  \
  XX(BROADCAST, "broadcast") XX(ALLTOALL, "alltoall") XX(FUSED, "fused") XX(UNFUSED, "unfused")

typedef enum bench_op_e {
#define BENCH_OP_ENUM_(e, name) BENCH_##e,
  BENCH_OP_MAP(BENCH_OP_ENUM_)
#undef BENCH_OP_ENUM_
  BENCH_OP_COUNT
} bench_op_t;

const char *bench_op_name(bench_op_t op);
/* Accepts the names above and nccl-tests' spellings (all_reduce, reduce_scatter, alltoall,
 * all_reduce_perf, ...). 0 or GPL_EINVAL. */
int bench_op_parse(const char *s, bench_op_t *out);
/* Does the op reduce (redop column meaningful)? */
int bench_op_reduces(bench_op_t op);
/* Does the op have an out-of-place / in-place form? (alltoall has no in-place form, the fused
 * allreduce no out-of-place one: those columns read N/A.) */
int bench_op_has_oop(bench_op_t op);
int bench_op_has_inplace(bench_op_t op);

/* One row's buffers, in elements, as nccl-tests' getCollByteCount computes them from a requested
 * size: count = bytes / type size, then rounded down to a multiple of the rank count for the
 * collectives that split the buffer among ranks (allgather, reducescatter, alltoall). */
typedef struct bench_geom_s {
  size_t count;       /* the table's count column: the collective's count argument (per rank for
                       * allgather/reducescatter, per peer for alltoall) */
  size_t bytes;       /* the table's size column: the larger of the send and receive bytes */
  size_t send_count;  /* elements of the send buffer */
  size_t recv_count;  /* elements of the receive buffer */
  size_t send_ip_off; /* in place, both lie in one buffer of max(send, recv) elements: send at */
  size_t recv_ip_off; /* send_ip_off * rank, receive at recv_ip_off * rank (nccl-tests' offsets) */
} bench_geom_t;

/* Geometry of `op` for a requested size of `bytes` with elements of `esize` bytes on `nranks`
 * ranks (fused/unfused: fp32 elements whatever the wire type). */
void bench_geom(bench_op_t op, uint64_t bytes, size_t esize, int nranks, bench_geom_t *g);

/* nccl-tests' bus bandwidth factor: busbw = algbw * factor. allreduce (and fused/unfused)
 * 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n; broadcast 1. */
double bench_busbw_factor(bench_op_t op, int nranks);
/* algbw = size column / seconds / 1e9 (GB/s, GB = 1e9 bytes); busbw = algbw * factor. */
void bench_bandwidth(bench_op_t op, const bench_geom_t *g, int nranks, double seconds,
                     double *algbw, double *busbw);

/* The size sweep: min, then each size times factor (at least +1 byte), while <= max; as
 * nccl-tests' -b/-e/-f. *sizes is malloc'd. GPL_EINVAL when min > max or more than 4096 sizes. */
int bench_sizes(uint64_t min, uint64_t max, double factor, uint64_t **sizes, int *n);

/* --min-busbw: "X" (GB/s, at the largest size) or "SIZE:X[,SIZE:X...]" (at that size of the
 * sweep; SIZE with K/M/G) or both ("8,1M:2.5"). Parsed into thresholds[i] for sizes[i] (0: none).
 * GPL_EINVAL with a message in err for a bad text or a SIZE that is not one of the sweep's. */
int bench_thresholds(const char *text, const uint64_t *sizes, int n, double *thresholds,
                     char *err, size_t errlen);

/* The median of n times (sorted[n/2], as nccl-tests' p50); sorts t in place. */
double bench_median(double *t, int n);

/* ---- exactly checkable data (bench_data.c) ---- */

/* What a buffer is filled for: every value is a small integer chosen so that the collective's
 * result is exact in every dtype (sums stay within the integers a half, bfloat16 or int8 holds
 * exactly for this rank count; products are powers of two in range; avg sums to a multiple of
 * the rank count), and every expected element is computed in O(1). */
typedef struct bench_data_s {
  bench_op_t op;
  gpl_dtype_t dtype;     /* the type the reduction runs in (the wire type for fused/unfused) */
  gpl_dtype_t buf_dtype; /* the type of the buffers (dtype; fp32 for fused/unfused) */
  gpl_redop_t redop;
  int nranks, root;
  double scale;  /* expected results are multiplied by this (fused: its pre-scale), else 1 */
  uint32_t seed; /* changes between sizes so a stale result from the last size is caught */
} bench_data_t;

/* The value element `index` of rank `rank`'s receive buffer must hold (count: the collective's
 * count argument, for the collectives whose output is made of per-rank blocks). */
double bench_expected(const bench_data_t *d, int rank, size_t index, size_t count);
/* Store value v (an integer the dtype holds exactly, or a power of two fraction) at buf[i]. */
void bench_store(void *buf, gpl_dtype_t dt, size_t i, double v);
/* Read buf[i] as a double (exact for every value bench_store writes). */
double bench_load(const void *buf, gpl_dtype_t dt, size_t i);
/* Fill n elements of buf with rank's inputs for indices first, first+1, ... */
void bench_fill(const bench_data_t *d, int rank, void *buf, size_t first, size_t n);
/* Count the elements of rank's receive buffer (n elements from index first) that differ from
 * bench_expected. */
int64_t bench_count_wrong(const bench_data_t *d, int rank, const void *buf, size_t first, size_t n,
                          size_t count);
/* Memory of an element that bench_count_wrong counts wrong whatever is expected (all ones:
 * NaN for floats, -1 or the largest value for integers, which no input ever sums to). */
#define BENCH_POISON_BYTE 0xFF

/* ---- device helpers: CUDA events and stream, or host clocks (bench_dev_*.c) ---- */

typedef struct bench_timer_s bench_timer_t;
/* A per-iteration timer for up to `iters` iterations. cuda != 0: CUDA events on a stream of our
 * own (*stream set; pass it to the collectives); else the host's monotonic clock. */
int bench_timer_create(bench_timer_t **t, int cuda, int device, int iters, void **stream);
/* Mark the start / end of iteration i (no synchronisation: an event record or a clock read). */
void bench_timer_start(bench_timer_t *t, int i);
void bench_timer_stop(bench_timer_t *t, int i);
/* After the loop and gpl_synchronize(): seconds of each of the n iterations. */
int bench_timer_read(bench_timer_t *t, int n, double *secs);
void bench_timer_destroy(bench_timer_t *t);
/* "[0000:07:00] NVIDIA H100 80GB HBM3" for a CUDA device, or "" when unknown / no CUDA. */
void bench_dev_describe(int device, char *buf, size_t len);
/* Fill `bytes` of comm memory with BENCH_POISON_BYTE (device memset on nccl, memset on cpu). */
int bench_dev_poison(gpl_comm_t *comm, void *p, size_t bytes, void *stream);

/* ---- the measurement (bench_run.c) ---- */

struct bench_row_s;

typedef struct bench_cfg_s {
  bench_op_t op;
  gpl_dtype_t dtype;   /* element type; the wire type for fused/unfused */
  gpl_redop_t redop;
  int root;
  int iters, warmup;
  int check;           /* 1: check every size's result */
  size_t tensor_bytes; /* fused/unfused: split the buffer into tensors of this size (0: one) */
  double bucket_mb;    /* fused: bucket size */
  int corrupt_rank;    /* test hook: this rank flips one output element before each check (-1) */
  int progress;        /* rank 0 prints a progress line on progress_fp */
  FILE *progress_fp;   /* a terminal: rank 0's stderr, or mpirun's (bench_progress.c) */
  int progress_via_mpirun; /* progress_fp is mpirun's terminal and mpirun's stdout is on it too:
                            * rows (which reach it later, through mpirun) clear the line first */
  /* Called on every rank after each size, with its row complete (rank 0 prints it). */
  void (*on_row)(const struct bench_row_s *row, int index, void *arg);
  void *on_row_arg;
} bench_cfg_t;

/* Where the progress line goes: rank 0's stderr when it is a terminal, else the terminal that
 * mpirun's stderr is (the ranks' own stderr is a pipe to mpirun), else nowhere (NULL): output
 * redirected to a file or a batch job gets no progress line. */
FILE *bench_progress_stream(int *via_mpirun);

/* One placement's measurement of one size. */
typedef struct bench_cell_s {
  int valid;      /* 0: N/A (this op has no such form) */
  double time_us; /* median over iterations of the slowest rank's time */
  double algbw, busbw;
  int64_t nwrong; /* -1: not checked */
} bench_cell_t;

typedef struct bench_row_s {
  uint64_t requested; /* the sweep's size (before rounding) */
  bench_geom_t g;
  bench_cell_t oop, inplace;
} bench_row_t;

/* The ranks' communicator and MPI for host-side metadata (times, wrong counts). */
typedef struct bench_ctx_s {
  gpl_comm_t *comm;
  MPI_Comm mpi;   /* the job's communicator, for bounded host exchanges */
  double timeout; /* deadline of every exchange */
  int rank, nranks;
  int cuda;       /* buffers are device memory (nccl backend) */
  int device;
} bench_ctx_t;

/* Run cfg over every size (rows[i] for sizes[i]). Every rank calls it. Negative code on a failed
 * collective or exchange (the comm names the ranks involved). */
int bench_run(const bench_ctx_t *ctx, const bench_cfg_t *cfg, const uint64_t *sizes, int n,
              bench_row_t *rows);

/* ---- outputs (bench_out.c) ---- */

/* nccl-tests' number format: width w, as many decimals as fit. */
void bench_fmt_num(double v, int w, char *out, size_t len);
/* The column header (3 lines starting with '#') and one row, as all_reduce_perf prints them. */
void bench_print_header(FILE *f);
void bench_print_row(FILE *f, const bench_cfg_t *cfg, const bench_row_t *r);
/* nccl-tests' average: mean busbw over every measured cell. */
double bench_avg_busbw(const bench_row_t *rows, int n);
int64_t bench_total_wrong(const bench_row_t *rows, int n);
/* As nccl-tests: the count of results (size x placement) that had wrong elements. */
int bench_bad_cells(const bench_row_t *rows, int n);
/* The footer: "# Out of bounds values : N OK|FAILED" and "# Avg bus bandwidth    : X". */
void bench_print_footer(FILE *f, const bench_row_t *rows, int n);
/* nccl-tests -J "results" entries for these rows, appended to `results`. */
void bench_json_rows(cJSON *results, const bench_cfg_t *cfg, const bench_row_t *rows, int n);
/* CSV: one header line (bench_csv_header) and one line per row. */
void bench_csv_header(FILE *f);
void bench_csv_rows(FILE *f, const bench_cfg_t *cfg, const bench_row_t *rows, int n);

#endif
