/* MPI test: each rank replays its own samples from one shared recording, the stats are gathered
 * with the bounded allgather, and rank 0's summary must name rank 2 (held under 80%). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/mpix.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/monitor/monitor.h"
#include "tests/mpi_check.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mpi_check_rank = rank;
  log_init();
  log_set_identity(util_hostname(), rank);
  if (argc < 2 || size != 4) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np 4 %s four_ranks_one_low.jsonl\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  mon_opts_t o;
  mon_opts_default(&o);
  o.replay = argv[1];
  monitor_t *m = NULL;
  MPI_CHECK_OK(mon_create(&m, &o, rank, util_hostname(), rank, NULL));
  /* as the supervisor's timer would: one tick per interval, here without waiting */
  int ticks = 0;
  while (mon_tick(m) == 0) ticks++;
  MPI_CHECK(ticks == 31);
  mon_stats_t mine, all[4];
  mon_stats(m, &mine);
  MPI_CHECK(mine.warned == (rank == 2));
  MPI_CHECK_OK(mon_gather(&mine, MPI_COMM_WORLD, 30.0, all));
  for (int r = 0; r < 4; r++) MPI_CHECK(all[r].rank == r && all[r].samples == 31);
  if (rank == 0) {
    char *txt = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&txt, &len);
    cJSON *sum = cJSON_CreateObject();
    mon_summary(all, size, o.sm_threshold, f, sum);
    fclose(f);
    fputs(txt, stdout);
    char want[128];
    snprintf(want, sizeof want, "slowest rank: 2 (host %s, GPU 2)", util_hostname());
    MPI_CHECK(strstr(txt, want) != NULL);
    cJSON *sg = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "monitor"), "straggler");
    cJSON *sg_rank = cJSON_GetObjectItem(sg, "rank");
    MPI_CHECK(sg_rank && sg_rank->valueint == 2);
    cJSON_Delete(sum);
    free(txt);
  }
  /* the one-call form the launcher uses prints the same on rank 0 only */
  char *txt = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&txt, &len);
  cJSON *sum = cJSON_CreateObject();
  MPI_CHECK_OK(mon_job_summary(m, MPI_COMM_WORLD, 30.0, f, sum));
  fclose(f);
  MPI_CHECK((rank == 0) == (strstr(txt, "slowest rank: 2 (host ") != NULL));
  MPI_CHECK((rank == 0) == (cJSON_GetObjectItem(sum, "monitor") != NULL));
  free(txt);
  cJSON_Delete(sum);
  mon_destroy(m);

  /* no GPU anywhere (monitors off, or none): no table, and the summary says inactive */
  setenv("GPULAUNCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  mon_opts_default(&o);
  o.off_level = LOG_LVL_INFO;
  MPI_CHECK_OK(mon_create(&m, &o, rank, util_hostname(), rank, NULL));
  txt = NULL;
  f = open_memstream(&txt, &len);
  sum = cJSON_CreateObject();
  MPI_CHECK_OK(mon_job_summary(rank == 3 ? NULL : m, MPI_COMM_WORLD, 30.0, f, sum));
  fclose(f);
  MPI_CHECK(len == 0);
  if (rank == 0)
    MPI_CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "monitor"), "active")));
  free(txt);
  cJSON_Delete(sum);
  mon_destroy(m);
  /* every rank's failures were printed; the exit status says whether any rank saw one */
  int all_bad = 0;
  MPI_Allreduce(&mpi_check_failures, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all_bad ? 1 : 0;
}
