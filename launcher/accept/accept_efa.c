/* The EFA check of `gpulaunch accept`: where the node has Elastic Fabric Adapters (an InfiniBand
 * device bound to the efa driver in sysfs), NCCL's network plugin for them (aws-ofi-nccl:
 * libnccl-net.so or libnccl-net-ofi.so, or the one NCCL_NET_PLUGIN names) must be where NCCL's
 * dlopen finds it; without it NCCL falls back to TCP sockets over the ENA interface and runs at a
 * fraction of the fabric's speed. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/envvar.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/accept/accept.h"

/* Where aws-ofi-nccl installs itself (the AWS EFA installer, the Deep Learning AMIs), also when
 * those folders are not on the loader's path: found there, the fix is to add the folder. */
static const char *const g_known_dirs[] = {"/opt/amazon/ofi-nccl/lib", "/opt/amazon/ofi-nccl/lib64",
                                           "/opt/aws-ofi-nccl/lib", "/usr/local/lib/aws-ofi-nccl"};
/* The loader's own default folders (besides LD_LIBRARY_PATH and /etc/ld.so.conf). */
static const char *const g_default_dirs[] = {"/lib", "/usr/lib", "/lib64", "/usr/lib64",
                                             "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                             "/usr/local/lib"};

int accept_efa_devices(const char *root, char *names, size_t len) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/sys/class/infiniband", root ? root : "");
  if (len) names[0] = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char link[PATH_MAX + 300], target[PATH_MAX];
    snprintf(link, sizeof link, "%s/%s/device/driver", dir, e->d_name);
    ssize_t k = readlink(link, target, sizeof target - 1);
    if (k <= 0) continue;
    target[k] = 0;
    const char *base = strrchr(target, '/');
    if (strcmp(base ? base + 1 : target, "efa") != 0) continue;
    size_t used = strlen(names);
    if (used + strlen(e->d_name) + 2 < len) snprintf(names + used, len - used, "%s%s", n ? "," : "", e->d_name);
    n++;
  }
  closedir(d);
  return n;
}

/* root + dir + "/" + file exists: 1, with the path in found. */
static int has_file(const char *root, const char *dir, const char *file, char *found, size_t len) {
  char p[PATH_MAX];
  struct stat st;
  int n = snprintf(p, sizeof p, "%s%s/%s", root, dir, file);
  if (n < 0 || (size_t)n >= sizeof p || stat(p, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  n = snprintf(found, len, "%s/%s", dir, file);
  return n >= 0 && (size_t)n < len;
}

/* The folders of /etc/ld.so.conf and its includes (one level of "include" globs of *.conf, as
 * Debian and Amazon Linux write them). */
static int in_ld_conf(const char *root, const char *file, char *found, size_t len) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/etc/ld.so.conf.d", root);
  DIR *d = opendir(p);
  char **confs = NULL;
  int nconf = 0, hit = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".conf") != 0) continue;
    char **v = realloc(confs, (size_t)(nconf + 1) * sizeof *v);
    if (!v) break;
    confs = v;
    size_t need = strlen(p) + l + 2;
    if (!(confs[nconf] = malloc(need))) break;
    snprintf(confs[nconf++], need, "%s/%s", p, e->d_name);
  }
  if (d) closedir(d);
  char main_conf[PATH_MAX];
  snprintf(main_conf, sizeof main_conf, "%s/etc/ld.so.conf", root);
  for (int i = -1; i < nconf && !hit; i++) {
    const char *path = i < 0 ? main_conf : confs[i];
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[PATH_MAX];
    while (f && !hit && fgets(line, sizeof line, f)) {
      char *s = util_trim(line);
      if (*s == '/') hit = has_file(root, s, file, found, len);
    }
    if (f) fclose(f);
  }
  for (int i = 0; i < nconf; i++) free(confs[i]);
  free(confs);
  return hit;
}

/* Is the plugin file where NCCL's dlopen looks? 1 with found, else 0 (and in known, a folder
 * of g_known_dirs that holds it, or ""). */
static int find_plugin(const char *root, const char *ld_path, const char *file, char *found, size_t len,
                       char *known, size_t klen) {
  known[0] = 0;
  if (strchr(file, '/')) return has_file(root, "", file[0] == '/' ? file + 1 : file, found, len) ? 1 : 0;
  char *dup = ld_path ? strdup(ld_path) : NULL, *save = NULL;
  for (char *d = dup ? strtok_r(dup, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save))
    if (*d == '/' && has_file(root, d, file, found, len)) {
      free(dup);
      return 1;
    }
  free(dup);
  if (in_ld_conf(root, file, found, len)) return 1;
  for (size_t i = 0; i < GPL_ARRAY_LEN(g_default_dirs); i++)
    if (has_file(root, g_default_dirs[i], file, found, len)) return 1;
  char tmp[PATH_MAX];
  for (size_t i = 0; i < GPL_ARRAY_LEN(g_known_dirs) && !known[0]; i++)
    if (has_file(root, g_known_dirs[i], file, tmp, sizeof tmp)) snprintf(known, klen, "%s", g_known_dirs[i]);
  return 0;
}

int accept_efa_check(const char *root, const char *ld_path, const char *net_plugin, const char *host, int node,
                     accept_list_t *out) {
  const char *r = root ? root : "";
  char devs[256];
  accept_check_t c;
  accept_check_init(&c, "efa_plugin", host, node, -1, "aws-ofi-nccl");
  int n = accept_efa_devices(r, devs, sizeof devs);
  if (n == 0) {
    accept_check_set(&c, ACCEPT_SKIP, "no EFA device (no InfiniBand device bound to the efa driver in sysfs)");
    return accept_list_add(out, &c);
  }
  /* What NCCL dlopens: NCCL_NET_PLUGIN's name as libnccl-net-NAME.so (or the file it names), else
   * libnccl-net.so; aws-ofi-nccl 1.9 and later install libnccl-net-ofi.so too. */
  char files[3][PATH_MAX];
  int nf = 0;
  if (net_plugin && *net_plugin && strcmp(net_plugin, "none") != 0) {
    if (strchr(net_plugin, '/') || strstr(net_plugin, ".so")) snprintf(files[nf++], PATH_MAX, "%s", net_plugin);
    else snprintf(files[nf++], PATH_MAX, "libnccl-net-%s.so", net_plugin);
  } else {
    snprintf(files[nf++], PATH_MAX, "libnccl-net.so");
    snprintf(files[nf++], PATH_MAX, "libnccl-net-ofi.so");
  }
  char found[PATH_MAX] = "", known[PATH_MAX] = "";
  int hit = 0;
  for (int i = 0; i < nf && !hit; i++) {
    char k[PATH_MAX];
    hit = find_plugin(r, ld_path, files[i], found, sizeof found, k, sizeof k);
    if (!hit && k[0] && !known[0]) snprintf(known, sizeof known, "%s", k);
  }
  accept_check_threshold(&c, "%s on the loader's path", nf > 1 ? "libnccl-net.so or libnccl-net-ofi.so" : files[0]);
  if (hit) {
    accept_check_text(&c, "%s", found);
    accept_check_set(&c, ACCEPT_PASS, "%d EFA device(s) (%s); NCCL's network plugin is %s", n, devs, found);
  } else if (known[0]) {
    accept_check_text(&c, "in %s, not on the loader's path", known);
    accept_check_set(&c, ACCEPT_FAIL, "%d EFA device(s) (%s), and aws-ofi-nccl is installed in %s, where "
                     "NCCL does not look: NCCL would use TCP sockets instead of EFA. Fix: add %s to "
                     "LD_LIBRARY_PATH where the job runs, or to /etc/ld.so.conf.d and run ldconfig",
                     n, devs, known, known);
  } else {
    accept_check_text(&c, "not found");
    accept_check_set(&c, ACCEPT_FAIL, "%d EFA device(s) (%s), but NCCL's network plugin for them is "
                     "missing (no %s%s%s in LD_LIBRARY_PATH, /etc/ld.so.conf or the system folders): NCCL "
                     "would use TCP sockets instead of EFA. Fix: install aws-ofi-nccl (the AWS EFA "
                     "installer: aws-efa-installer, or the aws-ofi-nccl package of the Deep Learning "
                     "AMIs) and put its lib folder on LD_LIBRARY_PATH", n, devs, files[0],
                     nf > 1 ? " or " : "", nf > 1 ? files[1] : "");
  }
  return accept_list_add(out, &c);
}

int accept_efa_node_check(const accept_node_ctx_t *x, accept_list_t *out) {
  const char *root = envvar_get(ENVVAR_TEST_SYSROOT);
  if (!x->t->live && !(root && *root)) { /* a file's machine: this one's libraries say nothing of it */
    accept_check_t c;
    accept_check_init(&c, "efa_plugin", x->host, x->node, -1, "aws-ofi-nccl");
    accept_check_set(&c, ACCEPT_SKIP, "topology from a file: this machine's libraries belong to another");
    return accept_list_add(out, &c);
  }
  return accept_efa_check(root, getenv("LD_LIBRARY_PATH"), getenv("NCCL_NET_PLUGIN"), x->host, x->node, out);
}
