/* NCCL_SOCKET_IFNAME as NCCL reads it: '^' exclude, '=' exact, comma-separated prefixes, ":port" ignored. */
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/util.h"
#include "topology/net.h"

/* The checks below mirror NCCL's parseStringList: it walks the string once, a ':' ends a name
 * and skips to the next ',' (the number after it is the name's port), a ',' or the end ends a
 * name, empty names are dropped, and it stops after MAX_IFS names. */
int net_iflist_parse(const char *value, net_iflist_t *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (err && errlen) err[0] = 0;
  if (!value || strlen(value) <= 1) {
    if (err) snprintf(err, errlen, "'%s' is shorter than 2 characters, which NCCL ignores (it then picks an interface itself)",
                      value ? value : "");
    return GPL_EINVAL;
  }
  const char *p = value;
  if (*p == '^') out->exclude = 1, p++;
  if (*p == '=') out->exact = 1, p++;
  char name[NET_IFLIST_NAME + 1];
  size_t len = 0;
  int too_long = 0, extra = 0, space = 0;
  for (;; p++) {
    char c = *p;
    if (c == ':' || c == ',' || c == 0) {
      if (len > 0) {
        if (out->n == NET_IFLIST_MAX) {
          extra++;
        } else {
          name[len] = 0;
          util_strlcpy(out->names[out->n], name, NET_IFLIST_NAME);
          out->ports[out->n] = -1;
          if (c == ':') {
            long port = 0;
            char num[16] = "";
            size_t k = 0;
            for (const char *q = p + 1; *q && *q != ',' && k + 1 < sizeof num; q++) num[k++] = *q;
            num[k] = 0;
            out->ports[out->n] = util_parse_long(num, 0, 65535, &port) == 0 ? (int)port : 0;
          }
          out->n++;
        }
        len = 0;
      }
      if (c == ':')
        while (p[1] && p[1] != ',') p++;
      if (c == 0 || (c == ':' && !p[1])) break;
      continue;
    }
    if (c == ' ' || c == '\t') space = 1;
    if (len == NET_IFLIST_NAME - 1) too_long = 1;
    else name[len++] = c;
  }
  if (too_long) {
    if (err) snprintf(err, errlen, "'%s' has a name of %d characters or more, longer than NCCL accepts", value, NET_IFLIST_NAME - 1);
    return GPL_EINVAL;
  }
  if (extra) {
    if (err) snprintf(err, errlen, "'%s' lists more than %d names; NCCL ignores the %d after the %dth", value, NET_IFLIST_MAX, extra,
                      NET_IFLIST_MAX);
    return GPL_EINVAL;
  }
  if (err && out->n > 0 && out->names[0][0] == '^')
    snprintf(err, errlen, "note: '^' only excludes at the very start; '%s' means the name '%s' (write '^=' for an exact exclude list)",
             value, out->names[0]);
  else if (err && space)
    snprintf(err, errlen, "note: NCCL keeps spaces as part of a name in '%s'", value);
  return 0;
}

int net_iflist_match(const net_iflist_t *l, const char *name) {
  int hit = l->n == 0; /* NCCL: no names at all matches everything */
  for (int i = 0; !hit && i < l->n; i++)
    hit = l->exact ? strcmp(name, l->names[i]) == 0 : strncmp(name, l->names[i], strlen(l->names[i])) == 0;
  return hit ^ (l->exclude != 0);
}
