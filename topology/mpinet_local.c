/* Open MPI's TCP interfaces from this host's facts alone, and the user's own setting found where Open MPI reads it (libc only: gpulaunch-run uses it for mpirun's out-of-band channel). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "topology/mpinet.h"

#ifndef GPL_OMPI_SYSCONFDIR
#define GPL_OMPI_SYSCONFDIR "/etc/openmpi"
#endif
#ifndef GPL_OMPI_PKGDATADIR
#define GPL_OMPI_PKGDATADIR "/usr/share/openmpi"
#endif

/* ---- the user's own setting ------------------------------------------------------------------ */

/* 1 when the MCA parameter file \p path sets one of names[] ("name = value" lines, '#' comments);
 * src gets "path: name = value". */
static int file_sets(const char *path, const char *const *names, char *src, size_t len) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[512];
  int hit = 0;
  while (!hit && fgets(line, sizeof line, f)) {
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '#') continue;
    for (int k = 0; names[k] && !hit; k++) {
      size_t n = strlen(names[k]);
      if (strncmp(p, names[k], n) != 0) continue;
      const char *q = p + n;
      while (*q == ' ' || *q == '\t') q++;
      if (*q != '=') continue;
      line[strcspn(line, "\r\n")] = 0;
      util_fmt(src, len, "%s: %s", path, p);
      hit = 1;
    }
  }
  fclose(f);
  return hit;
}

/* Each ':'-separated file of \p list; relative names of AMCA sets are looked for in \p dirs. */
static int files_set(const char *list, const char *dirs, const char *const *names, char *src, size_t len) {
  char buf[1024], *save = NULL;
  util_strlcpy(buf, list, sizeof buf);
  for (char *tok = strtok_r(buf, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
    char path[1024];
    if (tok[0] == '~' && tok[1] == '/' && getenv("HOME")) util_fmt(path, sizeof path, "%s%s", getenv("HOME"), tok + 1);
    else util_strlcpy(path, tok, sizeof path);
    if (file_sets(path, names, src, len)) return 1;
    if (!dirs || strchr(tok, '/')) continue;
    char dbuf[1024], *dsave = NULL;
    util_strlcpy(dbuf, dirs, sizeof dbuf);
    for (char *d = strtok_r(dbuf, ":", &dsave); d; d = strtok_r(NULL, ":", &dsave)) {
      util_fmt(path, sizeof path, "%s/%s", d, tok);
      if (file_sets(path, names, src, len)) return 1;
    }
  }
  return 0;
}

/* names[] set by the environment (OMPI_MCA_<name>, PRTE_MCA_<name>, PMIX_MCA_<name>) or by an
 * MCA parameter file Open MPI reads: the default files (or OMPI_MCA_mca_base_param_files in
 * their place) and AMCA sets (mpirun -am: OMPI_MCA_mca_base_param_file_prefix). */
static int user_sets(const char *const *names, const char *sysconf, char *src, size_t len) {
  static const char *const prefixes[] = {"OMPI_MCA_", "PRTE_MCA_"};
  for (int k = 0; names[k]; k++)
    for (size_t p = 0; p < GPL_ARRAY_LEN(prefixes); p++) {
      char var[128];
      util_fmt(var, sizeof var, "%s%s", prefixes[p], names[k]);
      const char *v = getenv(var);
      if (v && *v) {
        util_fmt(src, len, "%s=%s", var, v);
        return 1;
      }
    }
  char deflt[1024];
  util_fmt(deflt, sizeof deflt, "~/.openmpi/mca-params.conf:%s", sysconf ? sysconf : GPL_OMPI_SYSCONFDIR "/openmpi-mca-params.conf");
  const char *files = getenv("OMPI_MCA_mca_base_param_files");
  if (files_set(files && *files ? files : deflt, NULL, names, src, len)) return 1;
  const char *amca = getenv("OMPI_MCA_mca_base_param_file_prefix");
  if (amca && *amca) {
    char dirs[1024], cwd[512];
    const char *path = getenv("OMPI_MCA_mca_base_param_file_path");
    util_fmt(dirs, sizeof dirs, "%s:%s", path && *path ? path : GPL_OMPI_PKGDATADIR "/amca-param-sets",
             getcwd(cwd, sizeof cwd) ? cwd : ".");
    if (files_set(amca, dirs, names, src, len)) return 1;
  }
  return 0;
}

int mpinet_user(const char *sysconf_file, char *src, size_t len) {
  static const char *const names[] = {"btl_tcp_if_include", "btl_tcp_if_exclude", NULL};
  return user_sets(names, sysconf_file, src, len);
}

int mpinet_user_oob(int argc, char *const *argv, char *src, size_t len) {
  static const char *const names[] = {"oob_tcp_if_include", "oob_tcp_if_exclude", "prte_if_include", "prte_if_exclude", NULL};
  for (int i = 0; i + 2 < argc; i++) {
    const char *o = argv[i];
    if (strcmp(o, "--mca") != 0 && strcmp(o, "-mca") != 0 && strcmp(o, "--gmca") != 0 && strcmp(o, "-gmca") != 0 &&
        strcmp(o, "--prtemca") != 0 && strcmp(o, "--pmixmca") != 0)
      continue;
    for (int k = 0; names[k]; k++)
      if (strcmp(argv[i + 1], names[k]) == 0) {
        util_fmt(src, len, "%s %s %s", o, argv[i + 1], argv[i + 2]);
        return 1;
      }
  }
  for (int i = 0; i + 1 < argc; i++) /* mpirun -am FILE / --tune FILE */
    if ((strcmp(argv[i], "-am") == 0 || strcmp(argv[i], "--am") == 0 || strcmp(argv[i], "--tune") == 0) &&
        files_set(argv[i + 1], GPL_OMPI_PKGDATADIR "/amca-param-sets:.", names, src, len))
      return 1;
  return user_sets(names, NULL, src, len);
}

/* ---- the choice from this host alone --------------------------------------------------------- */

void mpinet__list_add(char *list, size_t len, const char *item) {
  size_t n = strlen(item), l = strlen(list);
  for (const char *p = list; (p = strstr(p, item)) != NULL; p += n)
    if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return;
  if (l + n + 2 > len) return;
  if (l) strcat(list, ",");
  strcat(list, item);
}

/* The first address worth naming: not loopback, IPv4 first; link-local only when nothing else. */
const iface_addr_t *mpinet__shown_addr(const iface_t *f) {
  const iface_addr_t *a = iface_usable_addr(f, 0);
  for (int k = 0; !a && k < f->naddrs; k++)
    if (f->addrs[k].family == AF_INET) a = &f->addrs[k];
  return a;
}

int mpinet_selects(const char *value, const iface_t *f) {
  char buf[MPINET_VALUE_LEN], *save = NULL;
  util_strlcpy(buf, value ? value : "", sizeof buf);
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    iface_addr_t net;
    if (strchr(tok, '/') && iface_addr_parse(tok, &net) == 0) {
      for (int k = 0; k < f->naddrs; k++)
        if (iface_addr_in_subnet(&net, &f->addrs[k])) return 1;
    } else if (strcmp(tok, f->name) == 0) {
      return 1;
    }
  }
  return 0;
}

int mpinet_from_local(const iface_list_t *l, mpinet_choice_t *out) {
  memset(out, 0, sizeof *out);
  strbuf_t lo = STRBUF_INIT;
  for (int i = 0; i < l->n; i++) {
    const iface_t *f = &l->v[i];
    char why[96];
    if (f->loopback || !mpinet__shown_addr(f)) continue; /* IPv6 link-local alone: not worth naming */
    int added = 0;
    if (iface_tier(f, why, sizeof why) != IFACE_TIER_NEVER)
      for (int k = 0; k < f->naddrs; k++) {
        const iface_addr_t *a = &f->addrs[k];
        if (a->loopback || a->link_local) continue;
        char sn[64];
        mpinet__list_add(out->value, sizeof out->value, iface_subnet_text(a, sn, sizeof sn));
        added = 1;
      }
    if (added) {
      mpinet__list_add(out->ifnames, sizeof out->ifnames, f->name);
    } else {
      const iface_addr_t *a = mpinet__shown_addr(f);
      strbuf_printf(&lo, "%s%s%s%s (%s)", lo.len ? ", " : "", f->name, a ? " " : "", a ? a->text : "", why);
    }
  }
  out->how = out->value[0] ? MPINET_LOCAL : MPINET_NONE;
  util_fmt(out->why, sizeof out->why, "%s%s%s",
           out->value[0] ? "this host's interfaces that can carry traffic between hosts" : "no interface of this host can carry traffic between hosts",
           lo.len ? "; left out: " : "", strbuf_str(&lo));
  strbuf_free(&lo);
  return out->value[0] ? 0 : GPL_ENET;
}

const char *mpinet_describe(const mpinet_choice_t *c, char *buf, size_t len) {
  if (c->how == MPINET_USER) util_fmt(buf, len, "as you set it (%s)", c->why + (strncmp(c->why, "yours: ", 7) ? 0 : 7));
  else if (c->value[0]) util_fmt(buf, len, "%s (btl_tcp_if_include=%s, chosen by gpulaunch)", c->ifnames, c->value);
  else util_fmt(buf, len, "Open MPI's own choice (every interface but loopback)");
  return buf;
}

int mpinet_compare(const mpinet_choice_t *c, const iface_t *nccl, int nccl_user, char *why, size_t len) {
  const char *value = c->how == MPINET_USER ? getenv("OMPI_MCA_btl_tcp_if_include") : c->value;
  char mpi[MPINET_VALUE_LEN + 64];
  if (value && *value) util_fmt(mpi, sizeof mpi, "btl_tcp_if_include=%s", value);
  else util_strlcpy(mpi, c->how == MPINET_USER ? c->why : "every interface but loopback", sizeof mpi);
  if (value && *value && mpinet_selects(value, nccl)) {
    /* Open MPI's transport uses every selected interface; NCCL's is among them. */
    util_fmt(why, len, "MPI's TCP transport (%s) and NCCL use the same interface, %s", mpi, nccl->name);
    return 1;
  }
  const char *cause = nccl_user && c->how != MPINET_USER ? "NCCL_SOCKET_IFNAME is yours"
                      : c->how == MPINET_USER && !nccl_user ? "MPI's interfaces are yours"
                      : c->how == MPINET_USER ? "both are yours"
                      : c->how == MPINET_LOCAL ? "MPI's were chosen from this host alone (no exchange before MPI_Init)"
                      : c->how == MPINET_NONE ? "MPI was left to Open MPI's own choice"
                                              : "the rules differ";
  util_fmt(why, len, "MPI's TCP transport (%s) and NCCL (%s) differ: %s", mpi, nccl->name, cause);
  return 0;
}
