/* Test driver for `gpulaunch topo`: runs mode_topo with a launch_t of its own (no MPI, no config). */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "launcher/launcher.h"

/* mode_topo reads [topology] and [nccl] settings only when L->conf is set; this driver never
 * sets it, so the real config module is not linked. The weak stand-ins satisfy the linker and
 * are never called (they say so loudly if they ever are). */
__attribute__((weak)) const char *conf_str(const conf_t *c, const char *section, const char *key) {
  (void)c;
  fprintf(stderr, "topo_cli: conf_str(%s, %s) called without a config\n", section, key);
  return "";
}

__attribute__((weak)) int conf_free_count(const conf_t *c, const char *section) {
  (void)c;
  fprintf(stderr, "topo_cli: conf_free_count(%s) called without a config\n", section);
  return 0;
}

__attribute__((weak)) void conf_free_entry(const conf_t *c, const char *section, int i, const char **key, const char **value) {
  (void)c, (void)section, (void)i;
  *key = *value = NULL;
}

int main(int argc, char **argv) {
  log_init();
  launch_t L;
  memset(&L, 0, sizeof L);
  /* "topo_cli [--pre-topology FILE] ARGS...": --pre-topology stands for a --topology given to
   * gpulaunch before the mode word (L->topology_xml). */
  int first = 1;
  if (argc > 2 && strcmp(argv[1], "--pre-topology") == 0) {
    L.topology_xml = argv[2];
    first = 3;
  }
  L.argc = argc - first;
  L.argv = argv + first;
  return mode_topo(&L);
}
