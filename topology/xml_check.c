/* Checks of an hwloc XML file for what hwloc passes silently: unreadable PCI bus ids, no PU. */
#include "topology/xml_check.h"

#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/util.h"
#include "topology/busid.h"

static int line_of(const char *text, const char *at) {
  int line = 1;
  for (const char *p = text; p < at; p++) line += *p == '\n';
  return line;
}

int topo_xml_check(const char *path, const char *text, hwloc_topology_t hw) {
  static const char attr[] = "pci_busid=\"";
  int total = 0, bad = 0, first_line = 0;
  char first[64] = "";
  for (const char *p = strstr(text, attr); p; p = strstr(p, attr)) {
    p += sizeof attr - 1;
    size_t n = strcspn(p, "\"\n");
    char id[64];
    snprintf(id, sizeof id, "%.*s", (int)(n < sizeof id - 1 ? n : sizeof id - 1), p);
    unsigned d, b, v, f;
    total++;
    if (n >= sizeof id || topo_parse_busid(id, &d, &b, &v, &f) < 0) {
      if (!bad++) {
        util_strlcpy(first, id, sizeof first);
        first_line = line_of(text, p);
      }
    }
    p += n;
  }
  if (bad) {
    LOG_ERROR("topology file %s: %d of %d PCI objects have a bus id that is not "
              "[domain:]bus:dev.fn (first: pci_busid=\"%s\" at line %d); hwloc would drop them, "
              "and the GPUs and NICs among them would be missing",
              path, bad, total, first, first_line);
    return GPL_ETOPO;
  }
  if (hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PU) <= 0) {
    LOG_ERROR("topology file %s: no PU (processing unit) object: there are no CPUs to bind the "
              "ranks to; export the whole machine (`lstopo --of xml FILE`)",
              path);
    return GPL_ETOPO;
  }
  return 0;
}
