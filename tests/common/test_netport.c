/* common/netport.c: the port range's syntax, every port of a range taken once by listeners of
 * this process in an order of its own, the full range refused with EADDRINUSE, MASTER_PORT
 * (netport_avoid) never taken, and no range = the kernel's port. Ports 46000-46031 on loopback, in a
 * network namespace of its own where it can make one (root): beside other tests, a kernel-picked
 * port of theirs (32768-60999) could hold one of the range's ports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "common/netport.h"
#include "gpulaunch/error.h"

static void test_parse(void **state) {
  (void)state;
  netport_range_t r;
  char err[200];
  assert_int_equal(netport_parse("40000-40099", &r, err, sizeof err), 0);
  assert_int_equal(r.lo, 40000);
  assert_int_equal(r.hi, 40099);
  assert_int_equal(netport_parse("7-7", &r, err, sizeof err), 0);
  assert_int_equal(netport_parse("", &r, err, sizeof err), 0);
  assert_int_equal(r.lo, 0);
  const char *bad[] = {"40000", "40099-40000", "0-10", "1-65536", "-1-5", "+1-5", "a-b", "1-", "-",
                       "1-2-3", "1 - 2", "99999999999999999999-1", "1-2x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    if (netport_parse(bad[i], &r, err, sizeof err) != GPL_EINVAL) fail_msg("'%s' accepted", bad[i]);
    assert_non_null(strstr(err, "LO-HI"));
  }
}

static int listen_lo(void) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int fd = netport_listen((struct sockaddr *)&sa, sizeof sa, 0, 4, "test listener");
  if (fd >= 0) assert_int_equal(ntohs(sa.sin_port) > 0, 1);
  return fd;
}

static int port_of(int fd) {
  struct sockaddr_in sa;
  socklen_t l = sizeof sa;
  assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &l), 0);
  return ntohs(sa.sin_port);
}

static void test_fills_range_then_refuses(void **state) {
  (void)state;
  netport_range_t r = {46000, 46031};
  netport_set(&r);
  assert_string_equal(netport_text(), "46000-46031");
  int fds[32], seen[32] = {0};
  for (int i = 0; i < 32; i++) {
    fds[i] = listen_lo();
    assert_true(fds[i] >= 0);
    int p = port_of(fds[i]);
    assert_true(p >= 46000 && p <= 46031);
    assert_int_equal(seen[p - 46000], 0); /* never one port twice */
    seen[p - 46000] = 1;
  }
  errno = 0;
  assert_int_equal(listen_lo(), -1);
  assert_int_equal(errno, EADDRINUSE);
  /* a freed port is found again */
  int p5 = port_of(fds[5]);
  close(fds[5]);
  fds[5] = listen_lo();
  assert_int_equal(port_of(fds[5]), p5);
  for (int i = 0; i < 32; i++) close(fds[i]);
}

static void test_avoid_and_no_range(void **state) {
  (void)state;
  netport_range_t r = {46040, 46041};
  netport_set(&r);
  netport_avoid(46040); /* MASTER_PORT */
  for (int k = 0; k < 5; k++) {
    int fd = listen_lo();
    assert_int_equal(port_of(fd), 46041);
    close(fd);
  }
  netport_set(NULL);
  assert_string_equal(netport_text(), "");
  int fd = listen_lo(); /* the kernel's choice, outside any range */
  assert_true(fd >= 0);
  close(fd);
}

/* A network namespace of this test's own with its loopback up; as a plain user, the host's. */
static void own_netns(void) {
  if (unshare(CLONE_NEWNET) != 0) {
    print_message("no network namespace of its own (%s): the host's loopback\n", strerror(errno));
    return;
  }
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  struct ifreq ifr = {0};
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) != 0) fail_msg("lo: %s", strerror(errno));
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0) fail_msg("lo up: %s", strerror(errno));
  close(s);
}

int main(void) {
  log_init();
  own_netns();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_fills_range_then_refuses),
      cmocka_unit_test(test_avoid_and_no_range),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
