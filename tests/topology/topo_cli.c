/* Test driver for `gpulaunch topo`: runs mode_topo with a launch_t of its own (no MPI, no config),
 * applying --topology as gpulaunch's main does (an option every mode takes, launcher/cli.h). */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "launcher/cli.h"
#include "launcher/launcher.h"

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
  cli_t c;
  if (cli_begin(&c, "topo", L.argc, L.argv, &mode_topo_cli) == 0) {
    int code;
    while ((code = cli_next(&c, 0)) != -1)
      if (code == CLI_TOPOLOGY) L.topology_xml = optarg;
    cli_end(&c);
  }
  return mode_topo(&L);
}
