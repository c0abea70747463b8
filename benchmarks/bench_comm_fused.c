/* Fused vs unfused gradient allreduce, side by side in one run: N fp32 tensors of S bytes each
 * (default 1000 x 4 KiB), on the backend gpulaunch picks (cpu here). Prints a table and, with
 * --json FILE, the numbers for benchmarks/RESULTS.md.
 *   mpirun -np 4 build/benchmarks/bench_comm_fused [--tensors 1000] [--bytes 4096] [--reps 20]
 * Each timing is the slowest rank's, between two barriers; the methods take turns in each of
 * --reps rounds; the median (and best) of each is reported, with its speed-up over the first. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpulaunch/gpulaunch.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define OK(call)                                                                           \
  do {                                                                                     \
    int rc_ = (call);                                                                      \
    if (rc_ != 0) {                                                                        \
      fprintf(stderr, "bench_comm_fused: %s: %s\n", #call, gpl_strerror(rc_));             \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                        \
    }                                                                                      \
  } while (0)

typedef enum { M_UNFUSED, M_UNFUSED_MPI, M_FUSED } method_t;

typedef struct bench_s {
  const char *name;
  method_t m;
  gpl_dtype_t wire;
  double median, best;
} bench_t;

int main(int argc, char **argv) {
  int ntensors = 1000, reps = 20;
  long bytes = 4096;
  const char *json = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tensors") && i + 1 < argc) ntensors = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) bytes = atol(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--tensors N] [--bytes B] [--reps R] [--json FILE]\n", argv[0]);
      return 64;
    }
  }
  if (ntensors < 1 || bytes < 4 || reps < 1) return 64;
  MPI_Init(&argc, &argv);
  gpl_comm_t *c;
  OK(gpl_init(&c, NULL));
  int rank = gpl_comm_rank(c), size = gpl_comm_size(c);
  size_t count = (size_t)bytes / sizeof(float);

  /* Tensors in comm memory (device memory on nccl), filled from the host. */
  gpl_tensor_t *t = calloc((size_t)ntensors, sizeof *t);
  float *host = malloc(count * sizeof *host);
  for (size_t j = 0; j < count; j++) host[j] = (float)((rank + 1) * (j % 17 + 1)) * 0x1p-6f;
  for (int i = 0; i < ntensors; i++) {
    OK(gpl_mem_alloc(c, (void **)&t[i].data, count * sizeof(float)));
    OK(gpl_memcpy(c, t[i].data, host, count * sizeof(float), GPL_COPY_TO_COMM, NULL));
    t[i].count = count;
  }
  int on_host = gpl_comm_backend(c) == GPL_BACKEND_CPU;

  bench_t b[] = {
      {"unfused: per tensor scale, fp32 allreduce, unscale+check", M_UNFUSED, GPL_FLOAT, 0, 0},
      {"unfused: per tensor MPI_Allreduce only (no scaling)", M_UNFUSED_MPI, GPL_FLOAT, 0, 0},
      {"fused fp32 (25 MiB buckets)", M_FUSED, GPL_FLOAT, 0, 0},
      {"fused bf16 (25 MiB buckets)", M_FUSED, GPL_BFLOAT16, 0, 0},
      {"fused fp16 (25 MiB buckets)", M_FUSED, GPL_HALF, 0, 0},
  };
  int nb = (int)(sizeof b / sizeof b[0]);
  /* The methods take turns within each round, so a change in the machine's load (other jobs on
   * shared cores) touches them all alike. */
  double *times = malloc((size_t)nb * (size_t)reps * sizeof *times);
  for (int r = -2; r < reps; r++) { /* two warm-up rounds */
    for (int k = 0; k < nb; k++) {
      if (b[k].m == M_UNFUSED_MPI && !on_host) continue;
      gpl_fused_opts_t o;
      gpl_fused_opts_default(&o);
      o.wire = b[k].wire;
      o.prescale = 1.0f / (float)size; /* an average: the values stay the same size run after run */
      OK(gpl_barrier(c));
      double t0 = now();
      if (b[k].m == M_FUSED) {
        OK(gpl_fused_allreduce(c, t, ntensors, &o, NULL));
      } else if (b[k].m == M_UNFUSED) {
        OK(gpl_unfused_allreduce(c, t, ntensors, &o, NULL));
      } else {
        for (int i = 0; i < ntensors; i++)
          MPI_Allreduce(MPI_IN_PLACE, t[i].data, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
      OK(gpl_synchronize(c, NULL));
      double dt = now() - t0, slowest = dt;
      /* the slowest rank's time (host doubles: MPI directly, whatever the backend) */
      MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (r >= 0) times[(size_t)k * (size_t)reps + (size_t)r] = slowest;
    }
  }
  for (int k = 0; k < nb; k++) {
    if (b[k].m == M_UNFUSED_MPI && !on_host) continue;
    double *tk = times + (size_t)k * (size_t)reps;
    qsort(tk, (size_t)reps, sizeof *tk, cmp_double);
    b[k].median = tk[reps / 2];
    b[k].best = tk[0];
  }
  if (rank == 0) {
    double total = (double)ntensors * (double)count * sizeof(float);
    printf("# fused vs unfused gradient allreduce: %d ranks, backend %s, %d tensors x %ld bytes "
           "(%.2f MiB), median of %d runs\n",
           size, gpl_backend_name(gpl_comm_backend(c)), ntensors, bytes, total / 1048576.0, reps);
    printf("%-60s %12s %12s %10s\n", "method", "median ms", "best ms", "speed-up");
    for (int k = 0; k < nb; k++) {
      if (b[k].median == 0) continue;
      printf("%-60s %12.3f %12.3f %9.1fx\n", b[k].name, b[k].median * 1e3, b[k].best * 1e3,
             b[0].median / b[k].median);
    }
    if (json) {
      FILE *f = fopen(json, "w");
      if (f) {
        fprintf(f, "{\"ranks\":%d,\"backend\":\"%s\",\"tensors\":%d,\"bytes\":%ld,\"reps\":%d,"
                   "\"results\":[",
                size, gpl_backend_name(gpl_comm_backend(c)), ntensors, bytes, reps);
        int first = 1;
        for (int k = 0; k < nb; k++) {
          if (b[k].median == 0) continue;
          fprintf(f, "%s{\"method\":\"%s\",\"median_s\":%.6g,\"best_s\":%.6g,\"speedup\":%.3f}",
                  first ? "" : ",", b[k].name, b[k].median, b[k].best, b[0].median / b[k].median);
          first = 0;
        }
        fprintf(f, "]}\n");
        fclose(f);
      }
    }
  }
  for (int i = 0; i < ntensors; i++) gpl_mem_free(c, t[i].data);
  free(t);
  free(host);
  free(times);
  OK(gpl_finalize(c));
  MPI_Finalize();
  return 0;
}
