/* The proxy wire's two socket calls, used by both ends: one message with an optional descriptor. */
#include "comm/proxy_proto.h"

#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

ssize_t proxy_send(int sock, const void *msg, size_t len, int fd, int flags) {
  struct iovec iov = {(void *)msg, len};
  struct msghdr mh;
  char ctl[CMSG_SPACE(sizeof(int))];
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (fd >= 0) {
    memset(ctl, 0, sizeof ctl);
    mh.msg_control = ctl;
    mh.msg_controllen = sizeof ctl;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof fd);
  }
  return sendmsg(sock, &mh, flags | MSG_NOSIGNAL);
}

unsigned proxy_sockaddr(const char *path, struct sockaddr_un *sa) {
  memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof sa->sun_path) return 0;
  memcpy(sa->sun_path, path, n);
  if (path[0] == '@') {
    sa->sun_path[0] = 0; /* abstract: the name is the bytes after the NUL, no terminator */
    return (unsigned)(offsetof(struct sockaddr_un, sun_path) + n);
  }
  return (unsigned)sizeof *sa;
}

ssize_t proxy_recv(int sock, void *msg, size_t len, int *fd, int flags) {
  char ctl[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {msg, len};
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = ctl;
  mh.msg_controllen = sizeof ctl;
  *fd = -1;
  ssize_t n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
  if (n < 0) return n;
  for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) memcpy(fd, CMSG_DATA(cm), sizeof *fd);
  return n;
}
