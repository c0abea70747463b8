/* Fuzz target: a node's interface inventory as another leader sends it in the interface agreement
 * (net_inv_decode). Oracles: a decoded inventory is bounded (interfaces, addresses per interface,
 * terminated strings), and encoding it again and decoding that gives the same bytes. */
#include <string.h>

#include "fuzz.h"
#include "topology/net.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20)) return 0;
  net_inv_t inv;
  if (net_inv_decode((const char *)data, (int)size, &inv) != 0) return 0;
  FUZZ_ASSERT(inv.n >= 0 && inv.n <= NET_WIRE_IFACES, "%d interfaces", inv.n);
  for (int i = 0; i < inv.n; i++) {
    const iface_t *f = &inv.v[i];
    FUZZ_ASSERT(f->naddrs >= 0 && f->naddrs <= IFACE_MAX_ADDRS, "interface %d has %d addresses", i, f->naddrs);
    FUZZ_ASSERT(strnlen(f->name, IFACE_NAME_LEN) < IFACE_NAME_LEN, "name of %d not terminated", i);
    FUZZ_ASSERT(strnlen(f->driver, sizeof f->driver) < sizeof f->driver, "driver of %d not terminated", i);
    for (int k = 0; k < f->naddrs; k++)
      FUZZ_ASSERT(strnlen(f->addrs[k].text, sizeof f->addrs[k].text) < sizeof f->addrs[k].text,
                  "address %d of %d not terminated", k, i);
  }
  FUZZ_ASSERT(strnlen(inv.host, sizeof inv.host) < sizeof inv.host, "host not terminated");
  int len1 = 0, len2 = 0;
  char *a = net_inv_encode(&inv, &len1);
  FUZZ_ASSERT(a != NULL, "encode failed");
  net_inv_t again;
  FUZZ_ASSERT(net_inv_decode(a, len1, &again) == 0, "its own encoding does not decode");
  char *b = net_inv_encode(&again, &len2);
  FUZZ_ASSERT(b && len1 == len2 && memcmp(a, b, (size_t)len1) == 0, "encode(decode(encode)) differs (%d vs %d bytes)", len1, len2);
  free(a);
  free(b);
  net_inv_free(&inv);
  net_inv_free(&again);
  return 0;
}
