/* Interface inventory: the live list against sysfs, address parsing and subnets, tiers of synthetic interfaces. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "common/log.h"
#include "gpulaunch/error.h"
#include "topology/iface.h"
#include "topology/topo.h"

static void test_live_list(void **state) {
  (void)state;
  iface_list_t l;
  assert_int_equal(iface_list(&l), 0);
  assert_true(l.n >= 1);
  const iface_t *lo = iface_find(&l, "lo");
  assert_non_null(lo);
  assert_int_equal(lo->kind, IFACE_LOOPBACK);
  assert_true(lo->loopback);
  assert_int_equal(iface_tier(lo, NULL, 0), IFACE_TIER_NEVER);
  int has127 = 0;
  for (int a = 0; a < lo->naddrs; a++)
    if (strcmp(lo->addrs[a].text, "127.0.0.1") == 0) has127 = lo->addrs[a].prefix == 8 && lo->addrs[a].loopback;
  assert_true(has127);
  for (int k = 0; k < l.n; k++) {
    const iface_t *i = &l.v[k];
    char path[512], why[96];
    struct stat st;
    print_message("%s kind=%s tier=%d pci=%s naddrs=%d\n", i->name, iface_kind_name(i->kind), iface_tier(i, why, sizeof why),
                  i->pci, i->naddrs);
    if (k > 0) assert_true(strcmp(l.v[k - 1].name, i->name) < 0);
    snprintf(path, sizeof path, "/sys/devices/virtual/net/%s", i->name);
    assert_int_equal(i->is_virtual, stat(path, &st) == 0);
    assert_true(i->index > 0);
    if (i->pci[0]) { /* a device of its own: physical, and the bus id parses */
      unsigned d, b, v, f;
      assert_int_equal(topo_parse_busid(i->pci, &d, &b, &v, &f), 0);
      assert_int_equal(i->kind, IFACE_PHYSICAL);
      assert_false(i->is_virtual);
    }
    for (int a = 0; a < i->naddrs; a++) { /* the text form parses back to the same bytes */
      iface_addr_t x;
      assert_int_equal(iface_addr_parse(i->addrs[a].text, &x), 0);
      assert_int_equal(x.family, i->addrs[a].family);
      assert_memory_equal(x.bytes, i->addrs[a].bytes, 16);
      assert_int_equal(x.link_local, i->addrs[a].link_local);
    }
  }
  /* Flat data: a list copied as bytes (what an allgather does) reads the same. */
  size_t bytes = sizeof(iface_t) * (size_t)l.n;
  iface_t *copy = malloc(bytes);
  memcpy(copy, l.v, bytes);
  assert_string_equal(copy[0].name, l.v[0].name);
  free(copy);
  iface_list_free(&l);
  assert_int_equal(l.n, 0);
}

static void test_addr_parse_and_subnet(void **state) {
  (void)state;
  iface_addr_t net, a;
  assert_int_equal(iface_addr_parse("10.1.2.3/24", &net), 0);
  assert_int_equal(net.family, AF_INET);
  assert_int_equal(net.prefix, 24);
  assert_int_equal(iface_addr_parse("10.1.2.200", &a), 0);
  assert_int_equal(a.prefix, 32);
  assert_true(iface_addr_in_subnet(&net, &a));
  assert_int_equal(iface_addr_parse("10.1.3.1", &a), 0);
  assert_false(iface_addr_in_subnet(&net, &a));
  assert_int_equal(iface_addr_parse("10.1.3.1/23", &net), 0);
  assert_int_equal(iface_addr_parse("10.1.2.9", &a), 0);
  assert_true(iface_addr_in_subnet(&net, &a)); /* /23 spans 10.1.2-3 */
  assert_int_equal(iface_addr_parse("0.0.0.0/0", &net), 0);
  assert_true(iface_addr_in_subnet(&net, &a));
  assert_int_equal(iface_addr_parse("169.254.7.1/16", &a), 0);
  assert_true(a.link_local);
  assert_int_equal(iface_addr_parse("127.0.0.1/8", &a), 0);
  assert_true(a.loopback);
  assert_int_equal(iface_addr_parse("fe80::1/64", &a), 0);
  assert_true(a.link_local);
  assert_int_equal(a.family, AF_INET6);
  assert_int_equal(iface_addr_parse("fd00:1::5/64", &net), 0);
  assert_false(net.link_local);
  assert_int_equal(iface_addr_parse("fd00:1::ffff", &a), 0);
  assert_true(iface_addr_in_subnet(&net, &a));
  assert_int_equal(iface_addr_parse("fd00:2::1", &a), 0);
  assert_false(iface_addr_in_subnet(&net, &a));
  assert_int_equal(iface_addr_parse("10.1.2.3", &a), 0);
  assert_false(iface_addr_in_subnet(&net, &a)); /* families differ */
  assert_int_equal(iface_addr_parse("10.1.2.3/33", &a), GPL_EINVAL);
  assert_int_equal(iface_addr_parse("10.1.2/24", &a), GPL_EINVAL);
  assert_int_equal(iface_addr_parse("eth0", &a), GPL_EINVAL);
  assert_int_equal(iface_addr_parse(NULL, &a), GPL_EINVAL);
}

static iface_t make(const char *name, iface_kind_t kind, const char *addr) {
  iface_t i;
  memset(&i, 0, sizeof i);
  snprintf(i.name, sizeof i.name, "%s", name);
  i.kind = kind;
  i.up = i.running = 1;
  i.is_virtual = kind != IFACE_PHYSICAL;
  i.loopback = kind == IFACE_LOOPBACK;
  if (addr) assert_int_equal(iface_addr_parse(addr, &i.addrs[i.naddrs++]), 0);
  return i;
}

static void test_tiers(void **state) {
  (void)state;
  char why[96];
  iface_t i = make("ens5", IFACE_PHYSICAL, "10.0.0.5/16");
  assert_int_equal(iface_tier(&i, why, sizeof why), IFACE_TIER_PHYSICAL);
  assert_true(iface_usable(&i, NULL, 0));
  i = make("eth0", IFACE_VETH, "10.244.1.7/24"); /* a pod's eth0 */
  assert_int_equal(iface_tier(&i, why, sizeof why), IFACE_TIER_VIRTUAL);
  i = make("bond0", IFACE_VIRTUAL, "10.0.0.9/16");
  assert_int_equal(iface_tier(&i, why, sizeof why), IFACE_TIER_VIRTUAL);
  struct {
    iface_t i;
    const char *why;
  } never[] = {
      {make("lo", IFACE_LOOPBACK, "127.0.0.1/8"), "loopback"},
      {make("docker0", IFACE_BRIDGE, "172.17.0.1/16"), "bridge"},
      {make("br0", IFACE_BRIDGE, "192.168.1.2/24"), "bridge"},
      {make("tun0", IFACE_TUNNEL, "10.8.0.1/24"), "tunnel"},
      {make("veth12ab", IFACE_VETH, "10.1.1.1/24"), "container"},
      {make("cni0", IFACE_VIRTUAL, "10.244.0.1/24"), "container"},
      {make("ens6", IFACE_PHYSICAL, "169.254.3.3/16"), "link-local"},
      {make("ens7", IFACE_PHYSICAL, NULL), "no IP"},
  };
  for (size_t k = 0; k < sizeof never / sizeof never[0]; k++) {
    assert_int_equal(iface_tier(&never[k].i, why, sizeof why), IFACE_TIER_NEVER);
    print_message("%s: %s\n", never[k].i.name, why);
    assert_non_null(strstr(why, never[k].why));
  }
  i = make("ens8", IFACE_PHYSICAL, "10.0.0.8/16");
  i.up = 0;
  assert_int_equal(iface_tier(&i, why, sizeof why), IFACE_TIER_NEVER);
  assert_string_equal(why, "down");
  i.up = 1, i.running = 0;
  assert_int_equal(iface_tier(&i, why, sizeof why), IFACE_TIER_NEVER);
  i.running = 1;
  snprintf(i.master, sizeof i.master, "bond0");
  assert_int_equal(iface_tier(&i, why, sizeof why), IFACE_TIER_NEVER); /* a bond's slave: use the bond */
  /* Usable address: IPv4 first, link-local skipped. */
  i = make("ens9", IFACE_PHYSICAL, "fe80::1/64");
  assert_int_equal(iface_addr_parse("fd00::9/64", &i.addrs[i.naddrs++]), 0);
  assert_int_equal(iface_addr_parse("10.9.9.9/24", &i.addrs[i.naddrs++]), 0);
  assert_string_equal(iface_usable_addr(&i, 0)->text, "10.9.9.9");
  assert_string_equal(iface_usable_addr(&i, AF_INET6)->text, "fd00::9");
}

static void test_container_names(void **state) {
  (void)state;
  const char *yes[] = {"docker0", "br-1a2b3c", "veth9f8e", "virbr0", "cni0", "flannel.1", "cali123", "weave", "vxlan.calico",
                       "tunl0", "lxcbr0", "podman0", "kube-ipvs0", "cilium_host"};
  const char *no[] = {"eth0", "ens5", "enp1s0f0", "ib0", "bond0", "hsi0", "ibp24s0", "eno1", "em1"};
  for (size_t k = 0; k < sizeof yes / sizeof yes[0]; k++) assert_true(iface_name_is_container(yes[k]));
  for (size_t k = 0; k < sizeof no / sizeof no[0]; k++) assert_false(iface_name_is_container(no[k]));
}

int main(void) {
  log_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_live_list),
      cmocka_unit_test(test_addr_parse_and_subnet),
      cmocka_unit_test(test_tiers),
      cmocka_unit_test(test_container_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
