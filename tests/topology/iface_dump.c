/* Prints this namespace's interface inventory, one tab-separated line per interface (for tests and by hand). */
#include <stdio.h>

#include "common/log.h"
#include "topology/iface.h"

int main(void) {
  log_init();
  iface_list_t l;
  int rc = iface_list(&l);
  if (rc < 0) {
    fprintf(stderr, "iface_dump: iface_list failed: %d\n", rc);
    return 1;
  }
  printf("#name\tkind\tup\trunning\tvirtual\tcontainer\ttier\twhy\tspeed\tpci\tdriver\tmaster\taddrs\n");
  for (int k = 0; k < l.n; k++) {
    const iface_t *i = &l.v[k];
    char why[96];
    iface_tier_t tier = iface_tier(i, why, sizeof why);
    printf("%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%s\t%s\t%s\t", i->name, iface_kind_name(i->kind), i->up, i->running,
           i->is_virtual, i->container, (int)tier, why, i->speed_mbps, i->pci[0] ? i->pci : "-",
           i->driver[0] ? i->driver : "-", i->master[0] ? i->master : "-");
    for (int a = 0; a < i->naddrs; a++)
      printf("%s%s/%d%s", a ? "," : "", i->addrs[a].text, i->addrs[a].prefix, i->addrs[a].link_local ? "(ll)" : "");
    printf("%s\n", i->naddrs ? "" : "-");
  }
  iface_list_free(&l);
  return 0;
}
