/* The wire protocol between a wrapped program (the proxy client, in gpl_init) and its gpulaunch
 * rank (the proxy server): fixed-size messages on a SOCK_SEQPACKET Unix socket, one request and
 * one reply at a time; shared-memory regions (memfds passed with SCM_RIGHTS) hold the data. Both
 * ends send and receive through proxy_send / proxy_recv (proxy_proto.c). */
#ifndef GPL_COMM_PROXY_PROTO_H
#define GPL_COMM_PROXY_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/types.h>

#define PROXY_MAGIC 0x47504c50u /* "GPLP" */
/* 2: regions are memfds sealed against shrinking; the socket is abstract ("@name"). */
#define PROXY_VERSION 2
#define PROXY_MAX_REGIONS 4096 /* shared buffers per program (gpl_mem_alloc calls) */
/* The seals a region's memfd must carry before the server maps it: the program could otherwise
 * shrink it under the mapping and the server would die of SIGBUS touching it. */
#define PROXY_REGION_SEALS (F_SEAL_SHRINK | F_SEAL_SEAL)

typedef enum proxy_type_e {
  PROXY_HELLO = 1, /* client: version, timeout -> server: the job (and a memfd of host names) */
  PROXY_MAP,       /* client: region id, size, memfd -> server maps it */
  PROXY_UNMAP,     /* client: region id */
  PROXY_OP,        /* client: one host collective on regions -> server: its result */
  PROXY_BYE,       /* client: closing (no reply) */
  PROXY_PROGRESS   /* client: gpl_progress(), the step in `count` (no reply) */
} proxy_type_t;

/* A place in a region; region -1: no buffer. */
typedef struct proxy_ref_s {
  int32_t region;
  uint32_t pad;
  uint64_t off;
} proxy_ref_t;

typedef struct proxy_req_s {
  uint32_t magic;
  uint32_t type;
  uint64_t seq;
  int32_t version;  /* HELLO */
  int32_t region;   /* MAP, UNMAP */
  uint64_t size;    /* MAP */
  int32_t kind;     /* OP: hostop_kind_t */
  int32_t dtype;
  int32_t op;
  int32_t root;
  uint64_t count;
  double timeout;   /* HELLO, OP: seconds; PROGRESS: the step (negative: none) */
  proxy_ref_t send, recv, answered;
  char what[40];    /* OP: for messages; not necessarily NUL-terminated (the reader bounds it) */
} proxy_req_t;

typedef struct proxy_rep_s {
  uint32_t magic;
  uint32_t type;
  uint64_t seq;
  int32_t rc;       /* 0 or a negative GPL_E* code */
  int32_t rank, size, local_rank, local_size, node, nnodes; /* HELLO */
  int32_t hostlen;  /* HELLO: bytes per name in the memfd of host names (size names) */
  double timeout;   /* HELLO: the job's deadline */
} proxy_rep_t;

/* One message of len bytes on the socket sock, with the descriptor fd attached (SCM_RIGHTS) when
 * fd >= 0; flags go to sendmsg (MSG_NOSIGNAL is always added). Returns sendmsg's result (errno set
 * when -1); the caller decides about EINTR and short writes. */
ssize_t proxy_send(int sock, const void *msg, size_t len, int fd, int flags);
/* One message of at most len bytes; *fd gets a descriptor that came with it, else -1. flags go to
 * recvmsg (MSG_CMSG_CLOEXEC is always added). Returns recvmsg's result (errno set when -1). */
ssize_t proxy_recv(int sock, void *msg, size_t len, int *fd, int flags);

struct sockaddr_un;
/* The socket address of a proxy path: "@name" is Linux's abstract namespace (no file, so nothing
 * is left behind when gpulaunch is killed), anything else a path. Returns the address length to
 * pass to bind/connect, or 0 when the path does not fit. */
unsigned proxy_sockaddr(const char *path, struct sockaddr_un *sa);

#endif
