/* Unit tests of gpulaunch-run's host sources (launcher/front/front_hosts.c): the host list forms,
 * errors naming the line, discovery scripts that fail or hang, and the Slurm allocation's script
 * run against stand-in squeue, sinfo and scontrol on PATH. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "launcher/front/front_hosts.h"

static front_host_t g_h[16];
static char g_err[512];

static int parse(const char *text) {
  g_err[0] = 0;
  return front_hosts_parse(text, "hosts", g_h, 16, g_err, sizeof g_err);
}

static void test_forms(void **state) {
  (void)state;
  assert_int_equal(parse("# a comment\n\nh0\nh1:4\n  h2 slots=8 max_slots=16\nh3:2 # trailing\n"), 4);
  assert_string_equal(g_h[0].name, "h0");
  assert_int_equal(g_h[0].slots, 1);
  assert_string_equal(g_h[1].name, "h1");
  assert_int_equal(g_h[1].slots, 4);
  assert_string_equal(g_h[2].name, "h2");
  assert_int_equal(g_h[2].slots, 8);
  assert_string_equal(g_h[3].name, "h3");
  assert_int_equal(g_h[3].slots, 2);
  /* a host named twice counts once, with its last slots; no final newline */
  assert_int_equal(parse("a.example-1:2\nb_2\na.example-1:3"), 2);
  assert_string_equal(g_h[0].name, "a.example-1");
  assert_int_equal(g_h[0].slots, 3);
  assert_int_equal(parse(""), 0);
  assert_int_equal(parse("# nothing\n\n"), 0);
  assert_int_equal(parse("h0\r\nh1:2\r\n"), 2); /* a file written on Windows */
  assert_int_equal(g_h[1].slots, 2);
}

/* The MPI Operator's discover_hosts.sh prints bare FQDNs: GPULAUNCH_HOST_SLOTS gives their slots;
 * a host with its own count keeps it. */
static void test_bare_slots(void **state) {
  (void)state;
  assert_int_equal(front_hosts_set_bare_slots("8"), 0);
  assert_int_equal(parse("gpl-train-worker-0.gpl-train-worker.default.svc\nh1:2\n"), 2);
  assert_int_equal(g_h[0].slots, 8);
  assert_int_equal(g_h[1].slots, 2);
  assert_int_equal(front_hosts_set_bare_slots("0"), -1);
  assert_int_equal(front_hosts_set_bare_slots("8x"), -1);
  assert_int_equal(parse("h0\n"), 1);
  assert_int_equal(g_h[0].slots, 8); /* a bad value changed nothing */
  assert_int_equal(front_hosts_set_bare_slots(NULL), 0);
  assert_int_equal(parse("h0\n"), 1);
  assert_int_equal(g_h[0].slots, 1);
}

static void test_errors_name_the_line(void **state) {
  (void)state;
  assert_int_equal(parse("h0\nh1:0\n"), -1);
  assert_non_null(strstr(g_err, "hosts:2: slots must be a whole number > 0 (host:slots)"));
  assert_int_equal(parse("h0\nh1\nh2 slots=x\n"), -1);
  assert_non_null(strstr(g_err, "hosts:3: slots must be a whole number > 0 (host slots=N)"));
  assert_int_equal(parse("h$0\n"), -1);
  assert_non_null(strstr(g_err, "hosts:1: 'h$0' is not a host name"));
  assert_int_equal(parse("h0:1234567\n"), -1); /* more than 6 digits */
  char big[17 * 8] = "";
  for (int i = 0; i < 17; i++) snprintf(big + strlen(big), sizeof big - strlen(big), "h%d\n", i);
  assert_int_equal(parse(big), -1);
  assert_non_null(strstr(g_err, "hosts:17: more than 16 hosts"));
  char name[80];
  memset(name, 'x', 70);
  name[70] = 0;
  assert_int_equal(parse(name), -1); /* longer than a name may be */
}

static void test_script(void **state) {
  (void)state;
  assert_int_equal(front_hosts_read(NULL, "echo h0:2; echo h1:2", 5, g_h, 16, g_err, sizeof g_err), 2);
  assert_int_equal(g_h[1].slots, 2);
  assert_int_equal(front_hosts_read(NULL, "echo h0; exit 3", 5, g_h, 16, g_err, sizeof g_err), -1);
  assert_non_null(strstr(g_err, "failed (exit status 3)"));
  assert_int_equal(front_hosts_read(NULL, "echo 'h0 :'", 5, g_h, 16, g_err, sizeof g_err), 1);
  assert_int_equal(front_hosts_read(NULL, "echo 'h0:x'", 5, g_h, 16, g_err, sizeof g_err), -1);
  assert_non_null(strstr(g_err, "host discovery script:1:"));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* a script that hangs (and a child of it that keeps the pipe open) is ended at the bound */
  assert_int_equal(front_hosts_read(NULL, "echo h0; sleep 30 & sleep 30", 0.5, g_h, 16, g_err, sizeof g_err), -1);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_non_null(strstr(g_err, "did not finish"));
  assert_true((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9 < 5.0);
  assert_int_equal(front_hosts_read("/nonexistent/hosts", NULL, 5, g_h, 16, g_err, sizeof g_err), -1);
  assert_non_null(strstr(g_err, "cannot read the hostfile /nonexistent/hosts"));
}

/* A stand-in Slurm command in dir: prints out (and records its arguments in dir/NAME.args). */
static void stand_in(const char *dir, const char *name, const char *out) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\necho \"$@\" >\"%s/%s.args\"\nprintf '%%s' '%s'\n", dir, name, out);
  fclose(f);
  chmod(path, 0755);
}

/* A fresh folder of stand-ins (dir: a mkdtemp template), first on PATH. */
static void stand_ins_begin(char *dir) {
  assert_non_null(mkdtemp(dir));
  char path[1024];
  snprintf(path, sizeof path, "%s:/usr/bin:/bin", dir);
  setenv("PATH", path, 1);
}

/* The arguments the stand-in NAME was last called with (one line). */
static void stand_in_args(const char *dir, const char *name, char *args, size_t len) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s.args", dir, name);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  assert_non_null(fgets(args, (int)len, f));
  fclose(f);
}

static void stand_ins_end(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static void test_slurm_allocation(void **state) {
  (void)state;
  unsetenv("SLURM_JOB_ID");
  assert_null(front_hosts_slurm_script());
  char dir[] = "/tmp/gpl-front-hosts.XXXXXX";
  stand_ins_begin(dir);
  /* squeue: the job's nodes now (node2 left it); sinfo: node3 is down */
  stand_in(dir, "squeue", "node[0-1,3]\n");
  stand_in(dir, "sinfo", "node3\n");
  stand_in(dir, "scontrol", "node0\nnode1\nnode3\n");
  setenv("SLURM_JOB_ID", "77", 1);
  setenv("SLURM_JOB_NODELIST", "node[0-3]", 1);
  setenv("SLURM_NTASKS_PER_NODE", "8", 1);
  char *script = front_hosts_slurm_script();
  assert_non_null(script);
  assert_int_equal(front_hosts_read(NULL, script, 5, g_h, 16, g_err, sizeof g_err), 2);
  assert_string_equal(g_h[0].name, "node0");
  assert_string_equal(g_h[1].name, "node1");
  assert_int_equal(g_h[1].slots, 8);
  free(script);
  /* the slots from SLURM_TASKS_PER_NODE's first count ("4(x3)") */
  unsetenv("SLURM_NTASKS_PER_NODE");
  setenv("SLURM_TASKS_PER_NODE", "4(x3)", 1);
  script = front_hosts_slurm_script();
  assert_int_equal(front_hosts_read(NULL, script, 5, g_h, 16, g_err, sizeof g_err), 2);
  assert_int_equal(g_h[0].slots, 4);
  free(script);
  /* squeue says nothing (slurmctld busy): SLURM_JOB_NODELIST, what scontrol was asked to expand */
  stand_in(dir, "squeue", "");
  stand_in(dir, "sinfo", "");
  script = front_hosts_slurm_script();
  assert_int_equal(front_hosts_read(NULL, script, 5, g_h, 16, g_err, sizeof g_err), 3);
  char args[1024], apath[600];
  stand_in_args(dir, "scontrol", args, sizeof args);
  assert_string_equal(args, "show hostnames node[0-3]\n");
  /* scontrol fails: an error naming the allocation, not the script's text */
  FILE *s = fopen((snprintf(apath, sizeof apath, "%s/scontrol", dir), apath), "w");
  assert_non_null(s);
  fputs("#!/bin/sh\nexit 1\n", s);
  fclose(s);
  /* (the while loop's status is the pipeline's: an empty list, then) */
  assert_int_equal(front_hosts_read(NULL, script, 5, g_h, 16, g_err, sizeof g_err), 0);
  free(script);
  unsetenv("SLURM_JOB_NODELIST");
  stand_in(dir, "squeue", "");
  script = front_hosts_slurm_script();
  assert_int_equal(front_hosts_read(NULL, script, 5, g_h, 16, g_err, sizeof g_err), -1);
  assert_non_null(strstr(g_err, "the Slurm allocation's nodes"));
  free(script);
  stand_ins_end(dir);
}

/* The allocation's addresses for gpulaunch-run's channel: each node's NodeAddr from sinfo (one line
 * per node and partition: once each), else the names scontrol expands. */
static void test_slurm_addresses(void **state) {
  (void)state;
  unsetenv("SLURM_JOB_ID");
  assert_null(front_hosts_slurm_addr_script());
  char dir[] = "/tmp/gpl-front-addr.XXXXXX";
  stand_ins_begin(dir);
  stand_in(dir, "sinfo", "node0 10.9.0.1\nnode0 10.9.0.1\nnode1 10.9.0.2\nnode1 10.9.0.2\n");
  stand_in(dir, "scontrol", "node0\nnode1\n");
  char args[256];
  setenv("SLURM_JOB_ID", "78", 1);
  setenv("SLURM_JOB_NODELIST", "node[0-1]", 1);
  const char *script = front_hosts_slurm_addr_script();
  assert_non_null(script);
  assert_int_equal(front_hosts_read(NULL, script, 5, g_h, 16, g_err, sizeof g_err), 2);
  assert_string_equal(g_h[0].name, "10.9.0.1");
  assert_string_equal(g_h[1].name, "10.9.0.2");
  stand_in_args(dir, "sinfo", args, sizeof args);
  assert_string_equal(args, "-h -N -n node[0-1] -o %N %o\n");
  stand_in(dir, "sinfo", ""); /* sinfo says nothing: the names */
  assert_int_equal(front_hosts_read(NULL, script, 5, g_h, 16, g_err, sizeof g_err), 2);
  assert_string_equal(g_h[1].name, "node1");
  unsetenv("SLURM_JOB_NODELIST");
  assert_int_equal(front_hosts_read(NULL, script, 5, g_h, 16, g_err, sizeof g_err), -1);
  unsetenv("SLURM_JOB_ID");
  stand_ins_end(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slurm_addresses),
      cmocka_unit_test(test_forms),
      cmocka_unit_test(test_bare_slots),
      cmocka_unit_test(test_errors_name_the_line),
      cmocka_unit_test(test_script),
      cmocka_unit_test(test_slurm_allocation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
