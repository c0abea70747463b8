/* bench_json_check FILE: parse a `gpulaunch bench --json` file with cJSON, check it has nccl-tests'
 * -J fields (and gpulaunch's placement), check it round-trips (print, parse, compare), and print
 * its rows, one per line, for the test scripts to compare with the table:
 *   row SIZE COUNT TYPE REDOP ROOT OOP_TIME OOP_ALGBW OOP_BUSBW OOP_WRONG IP_TIME IP_ALGBW IP_BUSBW IP_WRONG
 * (N/A for a missing cell or an unchecked count), then "label L", "ranks N", "hosts H", "exit N".
 * Exit status: 0, or 1 with the first problem on stderr. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *g_file;

static void die(const char *what, const char *name) {
  fprintf(stderr, "bench_json_check: %s: %s%s%s\n", g_file, what, name ? ": " : "", name ? name : "");
  exit(1);
}

static cJSON *need(const cJSON *o, const char *key, int (*is)(const cJSON *)) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v) die("missing field", key);
  if (is && !is(v)) die("field of the wrong type", key);
  return v;
}

static void print_cell(const cJSON *c) {
  if (cJSON_IsNull(c)) {
    printf(" N/A N/A N/A N/A");
    return;
  }
  if (!cJSON_IsObject(c)) die("a result cell is neither an object nor null", NULL);
  double t = need(c, "time", cJSON_IsNumber)->valuedouble;
  double a = need(c, "alg_bw", cJSON_IsNumber)->valuedouble;
  double b = need(c, "bus_bw", cJSON_IsNumber)->valuedouble;
  cJSON *w = need(c, "nwrong", NULL);
  if (!cJSON_IsNumber(w) && !cJSON_IsNull(w)) die("nwrong is neither a number nor null", NULL);
  printf(" %.6g %.6g %.6g", t, a, b);
  if (cJSON_IsNumber(w)) printf(" %.0f", w->valuedouble);
  else printf(" N/A");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: bench_json_check FILE\n");
    return 2;
  }
  g_file = argv[1];
  FILE *f = fopen(g_file, "r");
  if (!f) die("cannot open", NULL);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  if (!text || fread(text, 1, (size_t)n, f) != (size_t)n) die("cannot read", NULL);
  text[n] = '\0';
  fclose(f);
  cJSON *d = cJSON_Parse(text);
  if (!d) die("not valid JSON near", cJSON_GetErrorPtr());
  /* round trip */
  char *again = cJSON_PrintUnformatted(d);
  cJSON *d2 = again ? cJSON_Parse(again) : NULL;
  if (!d2 || !cJSON_Compare(d, d2, 1)) die("does not round-trip through cJSON", NULL);
  /* nccl-tests -J top level */
  need(d, "version", cJSON_IsNumber);
  need(d, "start_time", cJSON_IsString);
  need(d, "end_time", cJSON_IsString);
  need(d, "args", cJSON_IsArray);
  cJSON *cfg = need(d, "config", cJSON_IsObject);
  const char *cfg_keys[] = {"nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "step_factor",
                            "warmup_iters", "iterations", "aggregated_iterations", "validation", "graph"};
  for (size_t i = 0; i < sizeof cfg_keys / sizeof *cfg_keys; i++) need(cfg, cfg_keys[i], cJSON_IsNumber);
  cJSON *devs = need(d, "devices", cJSON_IsArray), *dv;
  const char *dev_keys[] = {"rank", "group", "pid", "hostname", "device", "device_hex", "device_info"};
  cJSON_ArrayForEach(dv, devs) for (size_t i = 0; i < sizeof dev_keys / sizeof *dev_keys; i++)
      need(dv, dev_keys[i], NULL);
  cJSON *res = need(d, "results", cJSON_IsArray), *r;
  cJSON_ArrayForEach(r, res) {
    printf("row %.0f %.0f %s %s %.0f", need(r, "size", cJSON_IsNumber)->valuedouble,
           need(r, "count", cJSON_IsNumber)->valuedouble, need(r, "type", cJSON_IsString)->valuestring,
           need(r, "redop", cJSON_IsString)->valuestring, need(r, "root", cJSON_IsNumber)->valuedouble);
    print_cell(need(r, "out_of_place", NULL));
    print_cell(need(r, "in_place", NULL));
    need(r, "actual_iterations", cJSON_IsNumber);
    need(r, "experiment_name", cJSON_IsString);
    printf("\n");
  }
  cJSON *oob = need(d, "out_of_bounds", cJSON_IsObject);
  need(oob, "count", cJSON_IsNumber);
  need(oob, "okay", cJSON_IsBool);
  cJSON *avg = need(d, "average_bus_bandwidth", cJSON_IsObject);
  need(avg, "bandwidth", cJSON_IsNumber);
  need(avg, "okay", NULL);
  /* gpulaunch's additions: the placement */
  cJSON *pl = need(d, "placement", cJSON_IsObject);
  cJSON *hosts = need(pl, "hosts", cJSON_IsArray);
  cJSON *ranks = need(pl, "ranks", cJSON_IsArray), *pr;
  need(pl, "gpus", cJSON_IsArray);
  need(pl, "nics", cJSON_IsArray);
  need(pl, "interfaces", cJSON_IsArray);
  const char *pr_keys[] = {"rank", "host", "gpu", "nic", "interface", "cpus"};
  cJSON_ArrayForEach(pr, ranks) for (size_t i = 0; i < sizeof pr_keys / sizeof *pr_keys; i++)
      need(pr, pr_keys[i], NULL);
  if (cJSON_GetArraySize(ranks) != cJSON_GetArraySize(devs)) die("placement and devices disagree", NULL);
  cJSON *label = need(d, "label", NULL);
  printf("label %s\n", cJSON_IsString(label) ? label->valuestring : "null");
  printf("ranks %d\n", cJSON_GetArraySize(ranks));
  printf("hosts %d\n", cJSON_GetArraySize(hosts));
  printf("exit %.0f\n", need(d, "exit_code", cJSON_IsNumber)->valuedouble);
  cJSON_Delete(d);
  cJSON_Delete(d2);
  free(again);
  free(text);
  return 0;
}
