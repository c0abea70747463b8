/* A plain MPI_Allreduce loop timed exactly as `gpulaunch bench` times its collectives, so the two
 * can be compared side by side (run_allreduce_vs_mpi.sh): fp32 sum, nccl-tests' sizes (-b -e -f),
 * -w warm-up calls at the largest then the smallest size, then per size and placement (out of
 * place, then in place): one call, a barrier, -n timed calls with a clock read before and after
 * each; per iteration the slowest rank's time, then the median over iterations. Every result is
 * checked once after the timed loop (outside it).
 *   mpirun -np 4 mpi_allreduce_loop [-b 1M] [-e 16M] [-f 4] [-n 20] [-w 5] [--csv FILE]
 * Prints nccl-tests-like rows; --csv writes the same columns as gpulaunch bench --csv. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  switch (*end) {
    case 'K': case 'k': v *= 1024.0; break;
    case 'M': case 'm': v *= 1048576.0; break;
    case 'G': case 'g': v *= 1073741824.0; break;
    default: break;
  }
  return v;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Per iteration the slowest rank, then the median (sorted[n/2], as gpulaunch bench). */
static double slowest_median(double *t, double *all, int iters, int nranks) {
  MPI_Allgather(t, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int i = 0; i < iters; i++) {
    double m = 0;
    for (int r = 0; r < nranks; r++)
      if (all[(size_t)r * iters + i] > m) m = all[(size_t)r * iters + i];
    t[i] = m;
  }
  qsort(t, (size_t)iters, sizeof *t, cmp_double);
  return t[iters / 2];
}

static void fill(float *x, size_t n, int rank) {
  for (size_t i = 0; i < n; i++) x[i] = (float)((i + (size_t)rank) % 16);
}

/* Wrong elements of a sum over nranks of fill(). */
static long check(const float *x, size_t n, int nranks) {
  long wrong = 0;
  for (size_t i = 0; i < n; i++) {
    double want = 0;
    for (int r = 0; r < nranks; r++) want += (double)((i + (size_t)r) % 16);
    if ((double)x[i] != want) wrong++;
  }
  return wrong;
}

int main(int argc, char **argv) {
  double minb = 32 << 20, maxb = 32 << 20, factor = 2;
  int iters = 20, warmup = 5;
  const char *csv = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) { fprintf(stderr, "mpi_allreduce_loop: %s needs a value\n", a); return 64; }
    if (!strcmp(a, "-b")) minb = parse_size(v);
    else if (!strcmp(a, "-e")) maxb = parse_size(v);
    else if (!strcmp(a, "-f")) factor = atof(v);
    else if (!strcmp(a, "-n")) iters = atoi(v);
    else if (!strcmp(a, "-w")) warmup = atoi(v);
    else if (!strcmp(a, "--csv")) csv = v;
    else { fprintf(stderr, "mpi_allreduce_loop: unknown option %s\n", a); return 64; }
    i++;
  }
  if (iters < 1 || factor <= 1 || minb > maxb) return 64;
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  size_t maxcount = (size_t)maxb / sizeof(float);
  float *send = malloc(maxcount * sizeof *send + 1), *recv = malloc(maxcount * sizeof *recv + 1);
  double *t = malloc((size_t)iters * sizeof *t), *all = malloc((size_t)iters * nranks * sizeof *all);
  if (!send || !recv || !t || !all) MPI_Abort(MPI_COMM_WORLD, 70);
  fill(send, maxcount, rank);
  memset(recv, 0, maxcount * sizeof *recv);
  FILE *out = NULL;
  if (rank == 0 && csv && !(out = fopen(csv, "w"))) MPI_Abort(MPI_COMM_WORLD, 73);
  if (out)
    fprintf(out, "op,size,count,type,redop,root,oop_time_us,oop_algbw_gbps,oop_busbw_gbps,oop_nwrong,"
                 "ip_time_us,ip_algbw_gbps,ip_busbw_gbps,ip_nwrong\n");
  if (rank == 0)
    printf("# plain MPI_Allreduce loop, %d ranks; time: per iteration the slowest rank's, then the "
           "median of %d\n#       size         count     time   algbw   busbw  #wrong     time   "
           "algbw   busbw  #wrong\n", nranks, iters);
  /* warm-up at the largest, then the smallest size */
  size_t wc[2] = {(size_t)maxb / sizeof(float), (size_t)minb / sizeof(float)};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < warmup; i++)
      MPI_Allreduce(send, recv, (int)wc[k], MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  long failed = 0;
  for (double size = minb; size <= maxb;) {
    size_t count = (size_t)size / sizeof(float);
    double tm[2], bus[2];
    long wrong[2];
    for (int ip = 0; ip < 2; ip++) {
      const void *s = ip ? MPI_IN_PLACE : (const void *)send;
      if (ip) fill(recv, count, rank);
      MPI_Allreduce(s, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      for (int i = 0; i < iters; i++) {
        double t0 = MPI_Wtime();
        MPI_Allreduce(s, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t[i] = MPI_Wtime() - t0;
      }
      tm[ip] = slowest_median(t, all, iters, nranks);
      bus[ip] = tm[ip] > 0 ? (double)count * sizeof(float) / 1e9 / tm[ip] * 2.0 * (nranks - 1) / nranks : 0;
      /* the check, outside the timed loop */
      if (ip) fill(recv, count, rank);
      MPI_Allreduce(s, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      long w = check(recv, count, nranks);
      MPI_Allreduce(&w, &wrong[ip], 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      failed += wrong[ip];
    }
    if (rank == 0) {
      double bytes = (double)count * sizeof(float);
      printf("%12.0f  %12zu  %7.1f  %6.2f  %6.2f  %6ld  %7.1f  %6.2f  %6.2f  %6ld\n", bytes, count,
             tm[0] * 1e6, bytes / 1e9 / tm[0], bus[0], wrong[0], tm[1] * 1e6, bytes / 1e9 / tm[1],
             bus[1], wrong[1]);
      if (out)
        fprintf(out, "allreduce,%.0f,%zu,float,sum,-1,%.3f,%.6f,%.6f,%ld,%.3f,%.6f,%.6f,%ld\n", bytes,
                count, tm[0] * 1e6, bytes / 1e9 / tm[0], bus[0], wrong[0], tm[1] * 1e6,
                bytes / 1e9 / tm[1], bus[1], wrong[1]);
    }
    double next = floor(size * factor);
    size = next > size ? next : size + 1;
  }
  if (out) fclose(out);
  free(send);
  free(recv);
  free(t);
  free(all);
  MPI_Finalize();
  return failed ? 72 : 0;
}
