/* Fuzz target: NCCL_SOCKET_IFNAME as NCCL reads it (net_iflist_parse, net_iflist_match). Oracles:
 * a parsed list has at most NET_IFLIST_MAX names, each shorter than NET_IFLIST_NAME and not
 * empty; matching is a pure function of the list and name ('^' inverts it exactly). */
#include <string.h>

#include "fuzz.h"
#include "topology/net.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char value[512];
  size_t n = size < sizeof value - 1 ? size : sizeof value - 1;
  memcpy(value, data, n);
  value[n] = 0;
  net_iflist_t l;
  char err[512];
  if (net_iflist_parse(value, &l, err, sizeof err) != 0) return 0;
  FUZZ_ASSERT(l.n >= 0 && l.n <= NET_IFLIST_MAX, "%d names", l.n);
  for (int i = 0; i < l.n; i++) {
    size_t len = strnlen(l.names[i], NET_IFLIST_NAME);
    FUZZ_ASSERT(len > 0 && len < NET_IFLIST_NAME, "name %d has length %zu", i, len);
    FUZZ_ASSERT(l.ports[i] >= -1 && l.ports[i] <= 65535, "port %d", l.ports[i]);
  }
  static const char *const names[] = {"eth0", "eth1", "ib0", "lo", "enp1s0f0", "docker0", "bond0", ""};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    int m = net_iflist_match(&l, names[i]);
    FUZZ_ASSERT(m == 0 || m == 1, "match is %d", m);
    net_iflist_t inv = l;
    inv.exclude = !l.exclude;
    FUZZ_ASSERT(net_iflist_match(&inv, names[i]) == !m, "'^' does not invert the match of %s", names[i]);
  }
  return 0;
}
