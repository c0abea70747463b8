/* Checks of an hwloc XML file that hwloc itself passes silently: PCI objects it drops for an
 * unreadable bus id, a machine without processing units. */
#ifndef GPL_TOPOLOGY_XML_CHECK_H
#define GPL_TOPOLOGY_XML_CHECK_H

#include <hwloc.h>

/* text: the file's bytes (NUL-terminated) as hwloc read them; hw: the topology loaded from them.
 * Logs one error naming the file and what is wrong, and returns GPL_ETOPO, when a pci_busid
 * attribute is not [domain:]bus:dev.fn (hwloc drops such an object: its GPUs and NICs would be
 * missing without a word, "0 GPUs") or when the topology has no PU object (no CPU to bind or
 * count). 0 when neither. */
int topo_xml_check(const char *path, const char *text, hwloc_topology_t hw);

#endif
