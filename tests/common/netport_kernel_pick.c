/* common/netport.c without a range: the kernel picks each listener's port, and a port the kernel
 * picks that is avoided (MASTER_PORT, which the program binds later) is never kept. In a network
 * namespace of its own whose ephemeral range is two ports, so the kernel's picks are known. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "common/netport.h"

static int listen_any(void) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
  return netport_listen((struct sockaddr *)&sa, sizeof sa, 0, 8, "test listener");
}

static int port_of(int fd) {
  struct sockaddr_in sa;
  socklen_t l = sizeof sa;
  return getsockname(fd, (struct sockaddr *)&sa, &l) == 0 ? ntohs(sa.sin_port) : -1;
}

static void test_kernel_pick_avoids(void **state) {
  (void)state;
  assert_int_equal(unshare(CLONE_NEWNET), 0); /* NEEDS root (CMakeLists) */
  int f = open("/proc/sys/net/ipv4/ip_local_port_range", O_WRONLY);
  assert_true(f >= 0);
  assert_int_equal(write(f, "45000 45001", 11), 11);
  close(f);
  netport_set(NULL);
  netport_avoid(45000); /* MASTER_PORT */
  for (int k = 0; k < 10; k++) { /* whichever the kernel tries first: never 45000 */
    int fd = listen_any();
    assert_true(fd >= 0);
    assert_int_equal(port_of(fd), 45001);
    /* with 45001 held, the one free port is the avoided one: refused, not taken */
    int fd2 = listen_any();
    assert_int_equal(fd2, -1);
    assert_int_equal(errno, EADDRINUSE);
    close(fd);
  }
}

int main(void) {
  log_init();
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_kernel_pick_avoids)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
