/* PCI bus ids as hwloc, NVML and sysfs spell them: below topo.c, nvml.c and xml_check.c. */
#include "topology/busid.h"

#include <ctype.h>

#include "gpulaunch/error.h"

/* A run of 1..max hex digits at *s; advances *s. */
static int hex_field(const char **s, int max, unsigned *out) {
  unsigned v = 0;
  int n = 0;
  while (isxdigit((unsigned char)**s) && n < max + 1) {
    char c = (char)tolower((unsigned char)**s);
    v = v * 16u + (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
    (*s)++, n++;
  }
  *out = v;
  return n >= 1 && n <= max;
}

int topo_parse_busid(const char *s, unsigned *domain, unsigned *bus, unsigned *dev, unsigned *func) {
  if (!s) return GPL_EINVAL;
  /* [domain:]bus:dev.fn, all hex; the domain may have up to 8 digits (NVML writes 8). */
  unsigned f[4];
  int n = 0;
  const char *p = s;
  if (!hex_field(&p, 8, &f[n++])) return GPL_EINVAL;
  if (*p++ != ':' || !hex_field(&p, 2, &f[n++])) return GPL_EINVAL;
  if (*p == ':') {
    p++;
    if (!hex_field(&p, 2, &f[n++])) return GPL_EINVAL;
  }
  if (*p++ != '.' || !hex_field(&p, 1, &f[n++]) || *p) return GPL_EINVAL;
  if (n == 3) *domain = 0, *bus = f[0], *dev = f[1], *func = f[2];
  else *domain = f[0], *bus = f[1], *dev = f[2], *func = f[3];
  if (*bus > 0xff || *dev > 0x1f || *func > 7) return GPL_EINVAL;
  return 0;
}
