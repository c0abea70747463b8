/* Fuzz target: Open MPI's MCA parameter files as gpulaunch reads them for the user's own
 * btl_tcp_if_include/exclude (topology/mpinet_local.c), and a btl_tcp_if_include value matched
 * against interfaces (mpinet_selects). Oracles: a hit names the parameter it found in a
 * NUL-terminated description; a line that names neither parameter is never a hit; matching
 * is 0 or 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "topology/mpinet.h"

static char g_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  snprintf(g_path, sizeof g_path, "/tmp/fuzz_mcafile.%d", (int)getpid());
  setenv("HOME", "/nonexistent-fuzz-home", 1);
  unsetenv("OMPI_MCA_btl_tcp_if_include");
  unsetenv("OMPI_MCA_btl_tcp_if_exclude");
  unsetenv("PRTE_MCA_btl_tcp_if_include");
  unsetenv("PRTE_MCA_btl_tcp_if_exclude");
  unsetenv("OMPI_MCA_mca_base_param_files");
  unsetenv("OMPI_MCA_mca_base_param_file_prefix");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *f = fopen(g_path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  char src[256];
  memset(src, 'x', sizeof src);
  int hit = mpinet_user(g_path, src, sizeof src);
  unlink(g_path);
  FUZZ_ASSERT(hit == 0 || hit == 1, "mpinet_user returned %d", hit);
  if (hit) {
    FUZZ_ASSERT(memchr(src, 0, sizeof src) != NULL, "the description is not NUL-terminated");
    FUZZ_ASSERT(strstr(src, "btl_tcp_if_") != NULL || strlen(src) >= sizeof src - 1, "a hit without the parameter: %s", src);
    FUZZ_ASSERT(memmem(data, size, "btl_tcp_if_", 11) != NULL, "a hit in a file that never names the parameter");
  }
  /* The same bytes as a btl_tcp_if_include value. */
  char value[MPINET_VALUE_LEN];
  size_t n = size < sizeof value - 1 ? size : sizeof value - 1;
  memcpy(value, data, n);
  value[n] = 0;
  iface_t ifc;
  memset(&ifc, 0, sizeof ifc);
  strcpy(ifc.name, "eth0");
  iface_addr_parse("10.77.0.3/24", &ifc.addrs[ifc.naddrs++]);
  iface_addr_parse("fe80::1/64", &ifc.addrs[ifc.naddrs++]);
  int m = mpinet_selects(value, &ifc);
  FUZZ_ASSERT(m == 0 || m == 1, "mpinet_selects returned %d", m);
  return 0;
}
