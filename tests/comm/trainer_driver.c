/* Test driver of the built-in trainer without the gpulaunch program: job_init, an optional config
 * (or the schema's defaults), trainer_run, and the summary written by rank 0. Also compares two
 * summaries (1 rank against N):
 *   mpirun -np N trainer_driver [--conf FILE] [--set section.key=value]... [--summary OUT.json]
 *   trainer_driver --compare ONE.json MANY.json REL_TOL      (1 rank vs N)
 *   trainer_driver --compare-same A.json B.json REL_TOL      (e.g. nccl vs cpu on one rank)
 *   trainer_driver --gpu ...                                  (skipped, 77, without a GPU)
 *   trainer_driver --check RUN.json MIN_OVERFLOW_STEPS */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/mpix.h"
#include "common/safefile.h"
#include "common/util.h"
#include "launcher/launcher.h"

static cJSON *load(const char *path) {
  char *text = NULL;
  size_t len = 0;
  if (safefile_read_text(path, &text, &len) < 0) {
    fprintf(stderr, "cannot read %s\n", path);
    return NULL;
  }
  cJSON *j = cJSON_Parse(text);
  free(text);
  cJSON *t = j ? cJSON_GetObjectItem(j, "train") : NULL;
  if (!t) fprintf(stderr, "%s has no \"train\" object\n", path);
  return j;
}

static double num(cJSON *j, const char *k) {
  cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "train"), k);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The checks of "1 rank vs N ranks": the loss falls, both started from the same loss, both kept
 * their ranks in sync, and the final losses agree within rel_tol. */
static int compare(const char *a, const char *b, double tol, int one_vs_many) {
  cJSON *ja = load(a), *jb = load(b);
  if (!ja || !jb) return 1;
  int bad = 0;
  double ia = num(ja, "initial_loss"), ib = num(jb, "initial_loss");
  double fa = num(ja, "final_loss"), fb = num(jb, "final_loss");
  double ra = num(ja, "ranks"), rb = num(jb, "ranks");
  printf("1 vs N: ranks %g vs %g; initial loss %.9g vs %.9g; final loss %.9g vs %.9g "
         "(relative difference %.3g, tolerance %.3g)\n",
         ra, rb, ia, ib, fa, fb, fabs(fa - fb) / fabs(fa), tol);
  if (one_vs_many && !(ra == 1 && rb > 1))
    bad |= printf("FAIL: expected a 1-rank and a multi-rank run\n") > 0;
  if (!(fabs(ia - ib) <= 1e-6 * fabs(ia)))
    bad |= printf("FAIL: the runs did not start from the same loss\n") > 0;
  if (!(fa < 0.5 * ia) || !(fb < 0.5 * ib))
    bad |= printf("FAIL: the loss did not fall to half its initial value\n") > 0;
  if (!(fabs(fa - fb) <= tol * fabs(fa)))
    bad |= printf("FAIL: final losses differ by more than the tolerance\n") > 0;
  cJSON *sa = cJSON_GetObjectItem(cJSON_GetObjectItem(ja, "train"), "params_in_sync");
  cJSON *sb = cJSON_GetObjectItem(cJSON_GetObjectItem(jb, "train"), "params_in_sync");
  if (!cJSON_IsTrue(sa) || !cJSON_IsTrue(sb))
    bad |= printf("FAIL: parameters were not identical on all ranks\n") > 0;
  if (num(ja, "overflow_steps") != num(jb, "overflow_steps"))
    printf("note: overflow steps differ (%g vs %g)\n", num(ja, "overflow_steps"),
           num(jb, "overflow_steps"));
  cJSON_Delete(ja);
  cJSON_Delete(jb);
  return bad;
}

/* One run: the loss fell to under half, the ranks stayed in sync, and at least min_overflow steps
 * overflowed (dynamic loss scaling at work). */
static int check_one(const char *path, double min_overflow) {
  cJSON *j = load(path);
  if (!j) return 1;
  double i = num(j, "initial_loss"), f = num(j, "final_loss"), o = num(j, "overflow_steps");
  cJSON *s = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "train"), "params_in_sync");
  printf("%s: loss %.6g -> %.6g, overflow steps %g, in sync %s\n", path, i, f, o,
         cJSON_IsTrue(s) ? "yes" : "no");
  int bad = !(f < 0.5 * i) || !(o >= min_overflow) || !cJSON_IsTrue(s);
  if (bad) printf("FAIL: expected the loss to halve, >= %g overflow steps, ranks in sync\n",
                  min_overflow);
  cJSON_Delete(j);
  return bad;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "--compare") == 0)
    return compare(argv[2], argv[3], atof(argv[4]), 1);
  if (argc == 5 && strcmp(argv[1], "--compare-same") == 0)
    return compare(argv[2], argv[3], atof(argv[4]), 0);
  /* --gpu: a GPU test, skipped (77) on a machine without an NVIDIA device */
  if (argc > 1 && strcmp(argv[1], "--gpu") == 0 && access("/dev/nvidiactl", F_OK) != 0) {
    printf("SKIP: no NVIDIA device here\n");
    return 77;
  }
  if (argc == 4 && strcmp(argv[1], "--check") == 0) return check_one(argv[2], atof(argv[3]));
  log_init();
  job_t job;
  if (job_init(&job, &argc, &argv, mpix_default_timeout()) < 0) return GPL_EXIT_TIMEOUT;
  const char *conf_path = NULL, *summary = NULL;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--conf") == 0 && i + 1 < argc) conf_path = argv[++i];
    else if (strcmp(argv[i], "--summary") == 0 && i + 1 < argc) summary = argv[++i];
  conf_t *conf = NULL;
  if (conf_load(&conf, conf_path) < 0) job_abort(&job, GPL_EXIT_CONFIG);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--set") != 0 || i + 1 >= argc) continue;
    char sec[64], key[64], val[256];
    if (sscanf(argv[++i], "%63[^.].%63[^=]=%255s", sec, key, val) != 3 ||
        conf_set_key(conf, sec, key, val, "--set") < 0)
      job_abort(&job, GPL_EXIT_CONFIG);
  }
  launch_t L;
  memset(&L, 0, sizeof L);
  L.job = &job;
  L.conf = conf;
  L.conf_path = conf_path;
  L.summary_path = summary;
  L.summary = cJSON_CreateObject();
  int code = trainer_run(&L);
  if (summary && job.rank == 0) {
    char *text = cJSON_Print(L.summary);
    FILE *f = fopen(summary, "w");
    if (f && text) fputs(text, f);
    if (f) fclose(f);
    free(text);
  }
  cJSON_Delete(L.summary);
  conf_free(conf);
  job_finalize(&job);
  return code;
}
