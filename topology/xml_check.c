/* Checks of an hwloc XML file for what hwloc passes silently: unreadable PCI bus ids, OS indexes
 * it cannot hold, no PU. */
#include "topology/xml_check.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/util.h"
#include "topology/busid.h"

static int line_of(const char *text, const char *at) {
  int line = 1;
  for (const char *p = text; p < at; p++) line += *p == '\n';
  return line;
}

/* Every value of one attribute, judged; the first bad one kept with its line and element type. */
typedef struct attr_scan_s {
  int total, bad, first_line;
  char first[64];      /* the first bad value (cut to 63 bytes) */
  char first_type[32]; /* the type="..." of its element, "" when it has none */
} attr_scan_t;

/* The type="..." of the element whose attribute starts at `at` (hwloc writes type first). */
static void element_type(const char *text, const char *at, char *out, size_t len) {
  static const char key[] = " type=\"";
  out[0] = 0;
  const char *open = at;
  while (open > text && *open != '<') open--;
  const char *t = strstr(open, key);
  if (!t || t >= at) return;
  t += sizeof key - 1;
  snprintf(out, len, "%.*s", (int)strcspn(t, "\"\n"), t);
}

/* ok(value, type) says whether a value is good; values longer than 63 bytes are bad. */
static void scan_attr(const char *text, const char *attr, int (*ok)(const char *value, const char *type),
                      attr_scan_t *s) {
  memset(s, 0, sizeof *s);
  size_t alen = strlen(attr);
  for (const char *p = strstr(text, attr); p; p = strstr(p, attr)) {
    p += alen;
    size_t n = strcspn(p, "\"\n");
    char value[64], type[32];
    snprintf(value, sizeof value, "%.*s", (int)(n < sizeof value - 1 ? n : sizeof value - 1), p);
    element_type(text, p, type, sizeof type);
    s->total++;
    if ((n >= sizeof value || !ok(value, type)) && !s->bad++) {
      util_strlcpy(s->first, value, sizeof s->first);
      util_strlcpy(s->first_type, type, sizeof s->first_type);
      s->first_line = line_of(text, p);
    }
    p += n;
  }
}

static int busid_ok(const char *value, const char *type) {
  (void)type;
  unsigned d, b, v, f;
  return topo_parse_busid(value, &d, &b, &v, &f) == 0;
}

/* The bound of an os_index. hwloc reads the attribute with strtoul into an unsigned int and says
 * nothing: "-7" becomes 4294967289, a number past 32 bits is cut, "x" is 0; UINT_MAX itself is
 * HWLOC_UNKNOWN_INDEX (no index), which hwloc writes by leaving the attribute out. So a value is
 * plain decimal digits, and:
 *  - PCI objects (Bridge, PCIDev): at most UINT_MAX - 1, since hwloc packs
 *    domain << 20 | bus << 12 | dev << 4 | fn into it, cut to 32 bits (a 16-bit domain, as
 *    Hyper-V's, goes past INT_MAX); OS devices and Misc objects the same (gpulaunch uses neither);
 *  - every other object (PU, Core, Package, Die, NUMA node, caches, groups, the machine): at
 *    most INT_MAX, since gpulaunch keeps CPU and NUMA node numbers as int, and the kernel's are
 *    far below that (NR_CPUS, MAX_NUMNODES). */
static int os_index_ok(const char *value, const char *type) {
  if (!*value || strspn(value, "0123456789") != strlen(value) || strlen(value) > 10) return 0;
  unsigned long long v = strtoull(value, NULL, 10);
  int io = strcmp(type, "Bridge") == 0 || strcmp(type, "PCIDev") == 0 || strcmp(type, "OSDev") == 0 ||
           strcmp(type, "Misc") == 0;
  return v <= (io ? (unsigned long long)UINT_MAX - 1 : (unsigned long long)INT_MAX);
}

int topo_xml_check(const char *path, const char *text, hwloc_topology_t hw) {
  attr_scan_t s;
  scan_attr(text, "pci_busid=\"", busid_ok, &s);
  if (s.bad) {
    LOG_ERROR("topology file %s: %d of %d PCI objects have a bus id that is not "
              "[domain:]bus:dev.fn (first: pci_busid=\"%s\" at line %d); hwloc would drop them, "
              "and the GPUs and NICs among them would be missing",
              path, s.bad, s.total, s.first, s.first_line);
    return GPL_ETOPO;
  }
  scan_attr(text, " os_index=\"", os_index_ok, &s);
  if (s.bad) {
    LOG_ERROR("topology file %s: %d of %d objects have an os_index that is not a number hwloc "
              "can hold (first: os_index=\"%s\" at line %d, on %s%s); hwloc would read another "
              "number in its place without a word. An os_index is plain decimal digits: 0 to "
              "2147483647 for a PU, core, package or NUMA node, to 4294967294 for a PCI object",
              path, s.bad, s.total, s.first, s.first_line,
              s.first_type[0] ? "an object of type " : "an object without a type", s.first_type);
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
