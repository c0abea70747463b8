/* Interface agreement without MPI: NCCL_SOCKET_IFNAME syntax as NCCL reads it, and node decisions on made-up inventories. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "topology/net.h"
#include "topology/plan.h"
#include "topology/topo.h"

/* ---- NCCL's syntax -------------------------------------------------------------------------- */

static int m(const char *list, const char *name) {
  net_iflist_t l;
  char err[256];
  assert_int_equal(net_iflist_parse(list, &l, err, sizeof err), 0);
  return net_iflist_match(&l, name);
}

static void test_iflist_prefix_exact_exclude(void **state) {
  (void)state;
  /* Prefixes: the classic trap, mlx5_1 also selects mlx5_10. */
  assert_true(m("eth", "eth0"));
  assert_true(m("eth", "eth10"));
  assert_false(m("eth", "ens5"));
  assert_true(m("mlx5_1", "mlx5_10"));
  assert_true(m("ib,eth", "eth2"));
  /* '=': whole names. */
  assert_true(m("=eth0", "eth0"));
  assert_false(m("=eth0", "eth01"));
  assert_false(m("=mlx5_1", "mlx5_10"));
  assert_true(m("=eth0,ens5", "ens5"));
  assert_false(m("=eth0,ens5", "ens"));
  /* '^': everything else; '^=' combines. */
  assert_false(m("^docker,lo", "docker0"));
  assert_false(m("^docker,lo", "lo"));
  assert_false(m("^docker,lo", "lonely0")); /* a prefix: lo excludes lonely0 too */
  assert_true(m("^docker,lo", "eth0"));
  assert_false(m("^=eth0", "eth0"));
  assert_true(m("^=eth0", "eth01"));
  /* An empty list matches everything, so "^," matches nothing. */
  assert_true(m(",,", "anything"));
  assert_false(m("^,", "eth0"));
  assert_false(m("^=", "eth0"));
}

static void test_iflist_parse_details(void **state) {
  (void)state;
  net_iflist_t l;
  char err[256];
  /* ":port" is parsed and skipped up to the next comma; it does not affect matching. */
  assert_int_equal(net_iflist_parse("eth0:1234,ib", &l, err, sizeof err), 0);
  assert_int_equal(l.n, 2);
  assert_string_equal(l.names[0], "eth0");
  assert_int_equal(l.ports[0], 1234);
  assert_string_equal(l.names[1], "ib");
  assert_int_equal(l.ports[1], -1);
  assert_true(net_iflist_match(&l, "eth0"));
  assert_int_equal(net_iflist_parse(":5,eth", &l, err, sizeof err), 0);
  assert_int_equal(l.n, 1);
  assert_string_equal(l.names[0], "eth");
  assert_int_equal(net_iflist_parse("eth0:", &l, err, sizeof err), 0);
  assert_int_equal(l.n, 1);
  /* '=' before '^' does not exclude: the name is "^eth0" (a hint says so). */
  assert_int_equal(net_iflist_parse("=^eth0", &l, err, sizeof err), 0);
  assert_true(l.exact);
  assert_false(l.exclude);
  assert_string_equal(l.names[0], "^eth0");
  assert_non_null(strstr(err, "'^' only excludes at the very start"));
  assert_false(net_iflist_match(&l, "eth0"));
  /* What NCCL ignores or misreads is an error here. */
  assert_int_equal(net_iflist_parse("e", &l, err, sizeof err), GPL_EINVAL);
  assert_non_null(strstr(err, "shorter than 2"));
  assert_int_equal(net_iflist_parse("", &l, err, sizeof err), GPL_EINVAL);
  assert_int_equal(net_iflist_parse(NULL, &l, err, sizeof err), GPL_EINVAL);
  strbuf_t b = STRBUF_INIT;
  for (int i = 0; i < 16; i++) strbuf_printf(&b, "%sn%d", i ? "," : "", i);
  assert_int_equal(net_iflist_parse(strbuf_str(&b), &l, err, sizeof err), 0);
  assert_int_equal(l.n, 16);
  strbuf_append(&b, ",n16");
  assert_int_equal(net_iflist_parse(strbuf_str(&b), &l, err, sizeof err), GPL_EINVAL);
  assert_non_null(strstr(err, "more than 16"));
  strbuf_free(&b);
  char name[80];
  memset(name, 'a', 63);
  name[63] = 0;
  assert_int_equal(net_iflist_parse(name, &l, err, sizeof err), 0);
  name[63] = 'a', name[64] = 0;
  assert_int_equal(net_iflist_parse(name, &l, err, sizeof err), GPL_EINVAL);
}

/* ---- made-up nodes -------------------------------------------------------------------------- */

/* An interface: addresses "10.0.0.1/24,fe80::1/64". */
static iface_t mk(const char *name, iface_kind_t kind, int index, int speed, const char *pci, const char *addrs) {
  iface_t f;
  memset(&f, 0, sizeof f);
  util_strlcpy(f.name, name, sizeof f.name);
  f.kind = kind;
  f.index = index;
  f.up = f.running = 1;
  f.loopback = kind == IFACE_LOOPBACK;
  f.is_virtual = kind != IFACE_PHYSICAL;
  f.container = kind == IFACE_BRIDGE || kind == IFACE_TUNNEL;
  f.speed_mbps = speed;
  f.mtu = 1500;
  util_strlcpy(f.pci, pci ? pci : "", sizeof f.pci);
  char buf[256];
  util_strlcpy(buf, addrs ? addrs : "", sizeof buf);
  char *save = NULL;
  for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save))
    assert_int_equal(iface_addr_parse(w, &f.addrs[f.naddrs++]), 0);
  return f;
}

#define MAXN 8
typedef struct nodes_s {
  int n;
  net_inv_t inv[MAXN];
  iface_t v[MAXN][16];
} nodes_t;

static void add(nodes_t *ns, int node, iface_t f) {
  net_inv_t *inv = &ns->inv[node];
  inv->v = ns->v[node];
  inv->v[inv->n++] = f;
}

/* n hosts h0..: lo, docker0 172.17.0.1/16, eth9 10.200.i.1/24 (a veth to nowhere), and the
 * routable veth (eth0, ens5 on odd hosts) 10.77.0.(i+1)/24 -- the netns harness's layout. */
static void harness_like(nodes_t *ns, int n) {
  memset(ns, 0, sizeof *ns);
  ns->n = n;
  for (int i = 0; i < n; i++) {
    net_inv_t *inv = &ns->inv[i];
    inv->node = i;
    snprintf(inv->host, sizeof inv->host, "h%d", i);
    char a[64];
    add(ns, i, mk("lo", IFACE_LOOPBACK, 1, -1, NULL, "127.0.0.1/8,::1/128"));
    add(ns, i, mk("docker0", IFACE_BRIDGE, 2, -1, NULL, "172.17.0.1/16"));
    snprintf(a, sizeof a, "10.200.%d.1/24,fe80::%d/64", i, i + 1);
    add(ns, i, mk("eth9", IFACE_VETH, 3, 10000, NULL, a));
    snprintf(a, sizeof a, "10.77.0.%d/24", i + 1);
    add(ns, i, mk(i % 2 ? "ens5" : "eth0", IFACE_VETH, 5, 10000, NULL, a));
  }
}

static void test_auto_picks_routable(void **state) {
  (void)state;
  nodes_t ns;
  harness_like(&ns, 4);
  for (int i = 0; i < 4; i++) {
    net_eval_t ev;
    strbuf_t msg = STRBUF_INIT;
    assert_int_equal(net_eval_node(ns.inv, 4, i, &ev, &msg), 0);
    print_message("node %d: %s -> %s\n", i, ev.value, ev.reason);
    assert_string_equal(ev.value, i % 2 ? "=ens5" : "=eth0"); /* names differ between nodes */
    assert_int_equal(ev.ncand, 1);
    assert_false(ev.user);
    assert_non_null(strstr(ev.reason, "shares a subnet with all 3 other nodes"));
    assert_non_null(strstr(ev.reason, "eth9 (reaches 0 of 3)"));
    assert_non_null(strstr(ev.reason, "docker0 (bridge"));
    assert_int_equal(msg.len, 0);
    strbuf_free(&msg);
  }
}

static void test_auto_tiers_and_speed(void **state) {
  (void)state;
  nodes_t ns;
  net_eval_t ev;
  /* A physical NIC that reaches every node beats a veth that does too. */
  harness_like(&ns, 3);
  for (int i = 0; i < 3; i++) {
    char a[64];
    snprintf(a, sizeof a, "192.168.8.%d/22", i + 10);
    add(&ns, i, mk("enp1s0", IFACE_PHYSICAL, 6, 1000, "0000:01:00.0", a));
  }
  assert_int_equal(net_eval_node(ns.inv, 3, 1, &ev, NULL), 0);
  assert_string_equal(ev.value, "=enp1s0");
  /* ... unless it misses a node: the best tier that reaches every node wins. */
  ns.inv[2].n--; /* node 2 loses enp1s0 */
  assert_int_equal(net_eval_node(ns.inv, 3, 1, &ev, NULL), 0);
  assert_string_equal(ev.value, "=ens5");
  assert_non_null(strstr(ev.reason, "enp1s0 (reaches 1 of 2)"));
  /* Faster first among equals of one tier; unknown speed last. */
  harness_like(&ns, 2);
  for (int i = 0; i < 2; i++) {
    char a[64];
    snprintf(a, sizeof a, "10.1.0.%d/16", i + 1);
    add(&ns, i, mk("ens1", IFACE_PHYSICAL, 7, 25000, "0000:01:00.0", a));
    snprintf(a, sizeof a, "10.2.0.%d/16", i + 1);
    add(&ns, i, mk("ens2", IFACE_PHYSICAL, 8, 100000, "0000:02:00.0", a));
    snprintf(a, sizeof a, "10.3.0.%d/16", i + 1);
    add(&ns, i, mk("ens3", IFACE_PHYSICAL, 9, -1, "0000:03:00.0", a));
  }
  assert_int_equal(net_eval_node(ns.inv, 2, 0, &ev, NULL), 0);
  assert_string_equal(ev.value, "=ens2");
  assert_int_equal(ev.ncand, 1);
}

static void test_auto_failures(void **state) {
  (void)state;
  nodes_t ns;
  net_eval_t ev;
  strbuf_t msg = STRBUF_INIT;
  /* Node 3's routable link is gone: nodes 0-2 still reach each other but not node 3. */
  harness_like(&ns, 4);
  ns.inv[3].n--;
  assert_int_equal(net_eval_node(ns.inv, 4, 3, &ev, &msg), GPL_ENET);
  print_message("%s\n", strbuf_str(&msg));
  assert_non_null(strstr(strbuf_str(&msg), "node 3 (h3): no interface shares a subnet with all 3 other nodes"));
  assert_non_null(strstr(strbuf_str(&msg), "its interfaces: lo (loopback, up, 127.0.0.1/8"));
  assert_non_null(strstr(strbuf_str(&msg), "docker0 (bridge, up, 172.17.0.1/16"));
  assert_non_null(strstr(strbuf_str(&msg), "set NCCL_SOCKET_IFNAME"));
  strbuf_reset(&msg);
  assert_int_equal(net_eval_node(ns.inv, 4, 0, &ev, &msg), GPL_ENET);
  assert_non_null(strstr(strbuf_str(&msg), "eth0 reaches 2 of 3 (no address in 10.77.0.0/24 on h3)"));
  strbuf_reset(&msg);
  /* Same address on every node (a copied container network) is no neighbour. */
  harness_like(&ns, 2);
  for (int i = 0; i < 2; i++) ns.inv[i].n--, add(&ns, i, mk("eth0", IFACE_VETH, 5, 10000, NULL, "10.10.10.1/24"));
  assert_int_equal(net_eval_node(ns.inv, 2, 0, &ev, &msg), GPL_ENET);
  strbuf_reset(&msg);
  /* Link-local only, or an address NCCL would not take first. */
  harness_like(&ns, 2);
  ns.inv[1].n--;
  add(&ns, 1, mk("ens5", IFACE_VETH, 5, 10000, NULL, "169.254.3.3/16"));
  assert_int_equal(net_eval_node(ns.inv, 2, 1, &ev, &msg), GPL_ENET);
  assert_non_null(strstr(strbuf_str(&msg), "only link-local"));
  strbuf_reset(&msg);
  ns.inv[1].n--;
  add(&ns, 1, mk("ens5", IFACE_VETH, 5, 10000, NULL, "169.254.3.3/16,10.77.0.2/24"));
  assert_int_equal(net_eval_node(ns.inv, 2, 1, &ev, &msg), GPL_ENET);
  assert_non_null(strstr(strbuf_str(&msg), "NCCL would use its link-local address 169.254.3.3"));
  strbuf_reset(&msg);
  /* A node whose leader could not read its interfaces. */
  harness_like(&ns, 2);
  ns.inv[1].status = GPL_ESYS;
  assert_int_equal(net_eval_node(ns.inv, 2, 1, &ev, &msg), GPL_ESYS);
  assert_non_null(strstr(strbuf_str(&msg), "node 1 (h1) could not list its network interfaces"));
  strbuf_free(&msg);
}

static void test_single_node(void **state) {
  (void)state;
  nodes_t ns;
  net_eval_t ev;
  harness_like(&ns, 1);
  assert_int_equal(net_eval_node(ns.inv, 1, 0, &ev, NULL), 0); /* its best usable one */
  assert_string_equal(ev.value, "=eth0");
  ns.inv[0].n = 2; /* lo and docker0 only: loopback is enough on one node */
  assert_int_equal(net_eval_node(ns.inv, 1, 0, &ev, NULL), 0);
  assert_string_equal(ev.value, "=lo");
  assert_string_equal(ev.cand[0].addr.text, "127.0.0.1");
}

static void set_user(nodes_t *ns, const char *value) {
  for (int i = 0; i < ns->n; i++) {
    util_strlcpy(ns->inv[i].user, value, sizeof ns->inv[i].user);
    util_strlcpy(ns->inv[i].user_source, "environment", sizeof ns->inv[i].user_source);
  }
}

static void test_user_value(void **state) {
  (void)state;
  nodes_t ns;
  net_eval_t ev;
  strbuf_t msg = STRBUF_INIT;
  /* Honoured as given when it works. */
  harness_like(&ns, 4);
  set_user(&ns, "eth0,ens5");
  assert_int_equal(net_eval_node(ns.inv, 4, 1, &ev, &msg), 0);
  assert_true(ev.user);
  assert_string_equal(ev.value, "eth0,ens5");
  assert_string_equal(ev.cand[0].iface.name, "ens5");
  assert_string_equal(ev.cand[0].addr.text, "10.77.0.2");
  assert_int_equal(msg.len, 0);
  /* Matches nothing on the odd nodes: the node and its interfaces are named. */
  set_user(&ns, "=eth0");
  assert_int_equal(net_eval_node(ns.inv, 4, 0, &ev, NULL), 0);
  assert_int_equal(net_eval_node(ns.inv, 4, 3, &ev, &msg), GPL_ENET);
  print_message("%s\n", strbuf_str(&msg));
  assert_non_null(strstr(strbuf_str(&msg), "NCCL_SOCKET_IFNAME==eth0 (environment) matches no running interface with an address on node 3 (h3)"));
  assert_non_null(strstr(strbuf_str(&msg), "ens5 (veth, up, 10000 Mb/s, 10.77.0.4/24)"));
  strbuf_reset(&msg);
  /* A down interface does not count (NCCL wants IFF_RUNNING). */
  set_user(&ns, "ens5");
  ns.v[1][3].running = 0;
  assert_int_equal(net_eval_node(ns.inv, 4, 1, &ev, &msg), GPL_ENET);
  assert_non_null(strstr(strbuf_str(&msg), "ens5 (veth, no carrier"));
  strbuf_reset(&msg);
  /* "^docker": lo has the lowest index, so NCCL's bootstrap takes loopback: an error on a
   * job of several nodes, fine on one. */
  harness_like(&ns, 2);
  set_user(&ns, "^docker");
  assert_int_equal(net_eval_node(ns.inv, 2, 0, &ev, &msg), GPL_ENET);
  assert_non_null(strstr(strbuf_str(&msg), "NCCL's bootstrap would use lo (127.0.0.1, loopback)"));
  strbuf_reset(&msg);
  assert_int_equal(net_eval_node(ns.inv, 1, 0, &ev, &msg), 0);
  /* "^docker,lo" takes eth9 first (lower index than eth0): it reaches nobody -> a warning;
   * NCCL's socket transport would use eth0 as well. */
  set_user(&ns, "^docker,lo");
  assert_int_equal(net_eval_node(ns.inv, 2, 0, &ev, &msg), 1);
  assert_string_equal(ev.cand[0].iface.name, "eth9");
  assert_non_null(strstr(strbuf_str(&msg), "eth9 (10.200.0.1) shares no subnet (10.200.0.0/24) with h1"));
  assert_non_null(strstr(ev.reason, "its socket transport also eth0"));
  strbuf_reset(&msg);
  /* The user picked docker0, whose address every node has: an error (NCCL cannot work). */
  set_user(&ns, "=docker0");
  assert_int_equal(net_eval_node(ns.inv, 2, 0, &ev, &msg), GPL_ENET);
  assert_non_null(strstr(strbuf_str(&msg), "NCCL's bootstrap would use docker0 (172.17.0.1), the same address as on h1"));
  strbuf_reset(&msg);
  /* A bridge that is the host's real uplink (its own address): honoured with a warning. */
  ns.v[0][1].addrs[0].bytes[3] = 9, ns.v[1][1].addrs[0].bytes[3] = 10;
  util_strlcpy(ns.v[0][1].addrs[0].text, "172.17.0.9", sizeof ns.v[0][1].addrs[0].text);
  assert_int_equal(net_eval_node(ns.inv, 2, 0, &ev, &msg), 1);
  assert_non_null(strstr(strbuf_str(&msg), "also matches docker0 (bridge"));
  assert_string_equal(ev.cand[0].addr.text, "172.17.0.9");
  strbuf_reset(&msg);
  /* Syntax NCCL ignores. */
  set_user(&ns, "e");
  assert_int_equal(net_eval_node(ns.inv, 2, 0, &ev, &msg), GPL_ENET);
  assert_non_null(strstr(strbuf_str(&msg), "shorter than 2 characters"));
  strbuf_reset(&msg);
  /* NCCL_SOCKET_FAMILY=AF_INET6: only IPv6 addresses count; eth9's is link-local. */
  set_user(&ns, "eth9");
  ns.inv[0].family = AF_INET6;
  assert_int_equal(net_eval_node(ns.inv, 2, 0, &ev, &msg), GPL_ENET);
  assert_non_null(strstr(strbuf_str(&msg), "link-local"));
  strbuf_free(&msg);
}

/* Four equal IPoIB interfaces on JUWELS Booster: each rank takes the one on its GPU's switch. */
static void test_pick_nearest_gpu(void **state) {
  (void)state;
  const char *dir = getenv("GPULAUNCH_TOPOLOGY_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/hwloc-juwels-booster-jwb0001.xml", dir ? dir : "tests/data/topologies");
  topo_t *t = NULL;
  assert_int_equal(topo_load(&t, path), 0); /* a file of the tree: it must load */
  plan_opts_t o;
  plan_opts_default(&o);
  plan_t *p = NULL;
  assert_int_equal(plan_make(t, &o, &p), 0);
  nodes_t ns;
  memset(&ns, 0, sizeof ns);
  ns.n = 2;
  const char *ib[4][2] = {{"ib0", "0000:43:00.0"}, {"ib1", "0000:04:00.0"}, {"ib2", "0000:c3:00.0"}, {"ib3", "0000:83:00.0"}};
  for (int i = 0; i < 2; i++) {
    ns.inv[i].node = i;
    snprintf(ns.inv[i].host, sizeof ns.inv[i].host, "jwb%d", i);
    add(&ns, i, mk("lo", IFACE_LOOPBACK, 1, -1, NULL, "127.0.0.1/8"));
    char a[64];
    snprintf(a, sizeof a, "10.13.0.%d/16", i + 1);
    add(&ns, i, mk("enp225s0f0", IFACE_PHYSICAL, 2, 25000, "0000:e1:00.0", a)); /* slower: not a candidate */
    for (int k = 0; k < 4; k++) {
      snprintf(a, sizeof a, "10.14.%d.%d/16", k, i + 1);
      add(&ns, i, mk(ib[k][0], IFACE_PHYSICAL, 3 + k, 100000, ib[k][1], a));
    }
  }
  net_eval_t ev;
  assert_int_equal(net_eval_node(ns.inv, 2, 0, &ev, NULL), 0);
  assert_int_equal(ev.ncand, 4);
  const char *want[4] = {"=ib1", "=ib0", "=ib3", "=ib2"}; /* GPU0..3's PIX NICs: mlx5_1/ib1, ... */
  for (int r = 0; r < p->nranks; r++) {
    assert_int_equal(net_apply(&ev, t, &p->ranks[r]), 0);
    print_message("rank %d: %s (%s)\n", r, plan_env_get(&p->ranks[r], "NCCL_SOCKET_IFNAME"), p->ranks[r].env[p->ranks[r].nenv - 1].reason);
    assert_string_equal(plan_env_get(&p->ranks[r], "NCCL_SOCKET_IFNAME"), want[r]);
  }
  char why[160];
  assert_int_equal(net_pick(&ev, t, &p->ranks[2], why, sizeof why), 3);
  assert_non_null(strstr(why, "nearest GPU2 of 4 equal interfaces (PIX"));
  /* No topology: the first by name. */
  assert_int_equal(net_pick(&ev, NULL, &p->ranks[2], why, sizeof why), 0);
  plan_free(p);
  topo_free(t);
}

/* The live inventory as a leader sends it: only interfaces with addresses, lo among them. */
static void test_inv_local(void **state) {
  (void)state;
  net_inv_t inv;
  assert_int_equal(net_inv_local(&inv, 0, "here", NULL, NULL, 0), 0);
  int lo = 0;
  for (int i = 0; i < inv.n; i++) {
    assert_true(inv.v[i].naddrs > 0);
    lo |= strcmp(inv.v[i].name, "lo") == 0;
    if (i) assert_true(strcmp(inv.v[i - 1].name, inv.v[i].name) < 0);
  }
  assert_true(lo);
  net_eval_t ev;
  assert_true(net_eval_node(&inv, 1, 0, &ev, NULL) >= 0);
  assert_true(ev.value[0] == '=');
  print_message("this machine alone: NCCL_SOCKET_IFNAME%s (%s)\n", ev.value, ev.reason);
  net_inv_free(&inv);
  assert_int_equal(net_family_parse("AF_INET6"), AF_INET6);
  assert_int_equal(net_family_parse("AF_INET"), AF_INET);
  assert_int_equal(net_family_parse("inet"), 0);
}

int main(void) {
  log_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_iflist_prefix_exact_exclude),
      cmocka_unit_test(test_iflist_parse_details),
      cmocka_unit_test(test_auto_picks_routable),
      cmocka_unit_test(test_auto_tiers_and_speed),
      cmocka_unit_test(test_auto_failures),
      cmocka_unit_test(test_single_node),
      cmocka_unit_test(test_user_value),
      cmocka_unit_test(test_pick_nearest_gpu),
      cmocka_unit_test(test_inv_local),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
