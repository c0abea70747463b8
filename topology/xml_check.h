/* Checks of an hwloc XML file that hwloc itself passes silently: PCI objects it drops for an
 * unreadable bus id, OS indexes it reads as other numbers, a machine without processing units. */
#ifndef GPL_TOPOLOGY_XML_CHECK_H
#define GPL_TOPOLOGY_XML_CHECK_H

#include <hwloc.h>

/* text: the file's bytes (NUL-terminated) as hwloc read them; hw: the topology loaded from them.
 * Logs one error naming the file and what is wrong, and returns GPL_ETOPO, when a pci_busid
 * attribute is not [domain:]bus:dev.fn (hwloc drops such an object: its GPUs and NICs would be
 * missing without a word, "0 GPUs"), when an os_index attribute is not a number hwloc can hold
 * ("-7", past 32 bits; the bound is in xml_check.c: hwloc would use another number), or when the
 * topology has no PU object (no CPU to bind or count). The first bad value is named with its line.
 * 0 when none. */
int topo_xml_check(const char *path, const char *text, hwloc_topology_t hw);

#endif
