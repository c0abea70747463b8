/* PCI bus ids as hwloc, NVML and sysfs spell them: below topo.c, nvml.c and xml_check.c. */
#ifndef GPL_TOPOLOGY_BUSID_H
#define GPL_TOPOLOGY_BUSID_H

/** Parse a PCI bus id: "0000:03:00.0", "00000000:03:00.0" (NVML), "03:00.0" (domain 0).
 * \return 0 or GPL_EINVAL. */
int topo_parse_busid(const char *s, unsigned *domain, unsigned *bus, unsigned *dev, unsigned *func);

#endif
