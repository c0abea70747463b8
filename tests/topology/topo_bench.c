/* Times topology load + plan (one rank's start-up work) for an XML file or this machine: median of N runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "topology/plan.h"
#include "topology/topo.h"

int main(int argc, char **argv) {
  log_init();
  if (argc < 2 || strcmp(argv[1], "-h") == 0) {
    fprintf(stderr, "usage: topo_bench FILE.xml|live [RUNS=21] [RANKS=0 (one per GPU)]\n");
    return 64;
  }
  const char *xml = strcmp(argv[1], "live") == 0 ? NULL : argv[1];
  int runs = argc > 2 ? atoi(argv[2]) : 21, ranks = argc > 3 ? atoi(argv[3]) : 0;
  if (runs < 1) runs = 1;
  double *load = calloc((size_t)runs, sizeof *load), *total = calloc((size_t)runs, sizeof *total);
  int ngpus = 0, nnics = 0, nranks = 0;
  for (int i = 0; i < runs; i++) {
    double t0 = util_now();
    topo_t *t = NULL;
    if (topo_load(&t, xml) < 0) return 66;
    double t1 = util_now();
    plan_opts_t o;
    plan_opts_default(&o);
    o.local_size = ranks;
    plan_t *p = NULL;
    if (plan_make(t, &o, &p) < 0) return 66;
    double t2 = util_now();
    load[i] = (t1 - t0) * 1e3;
    total[i] = (t2 - t0) * 1e3;
    ngpus = t->ngpus, nnics = t->nnics, nranks = p->nranks;
    plan_free(p);
    topo_free(t);
  }
  util_sort_doubles(load, (size_t)runs);
  util_sort_doubles(total, (size_t)runs);
  printf("%s: %d GPUs, %d NICs, %d ranks planned; %d runs\n", xml ? xml : "live", ngpus, nnics, nranks, runs);
  printf("load        median %.2f ms (min %.2f, max %.2f)\n", load[runs / 2], load[0], load[runs - 1]);
  printf("load + plan median %.2f ms (min %.2f, max %.2f)\n", total[runs / 2], total[0], total[runs - 1]);
  free(load);
  free(total);
  return 0;
}
