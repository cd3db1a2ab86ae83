/* The loopback TCP pair: client and server in one thread, joined by a real TCP connection
 * on 127.0.0.1 (a fresh one per tlsbench connection), so that every record crosses the
 * kernel's socket layer. Sockets are non-blocking: recv() with nothing queued is
 * TB_IO_WOULD_BLOCK, as on the memory pair. On loopback, Linux hands sent bytes to the
 * peer's receive queue within the send() call, so the one-thread pump makes progress. */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tlsbench/transport.h"

static long fd_send(void *io, const unsigned char *buf, size_t len) {
  int fd = *(int *)io;
  for (;;) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n >= 0) return (long)n;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? TB_IO_WOULD_BLOCK : TB_IO_ERROR;
  }
}

static long fd_recv(void *io, unsigned char *buf, size_t len) {
  int fd = *(int *)io;
  for (;;) {
    ssize_t n = recv(fd, buf, len, 0);
    if (n >= 0) return (long)n; /* 0: the peer closed */
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? TB_IO_WOULD_BLOCK : TB_IO_ERROR;
  }
}

static int fail(char *err, size_t errlen, const char *what) {
  snprintf(err, errlen, "loopback TCP: %s: %s", what, strerror(errno));
  return -1;
}

static void close_connection(tb_tcp_pair *p) {
  if (p->client_fd >= 0) close(p->client_fd);
  if (p->server_fd >= 0) close(p->server_fd);
  p->client_fd = p->server_fd = -1;
}

int tb_tcp_pair_init(tb_tcp_pair *p, char *err, size_t errlen) {
  memset(p, 0, sizeof(*p));
  p->client_fd = p->server_fd = -1;
  p->client = (tb_transport){&p->client_fd, fd_send, fd_recv, -1};
  p->server = (tb_transport){&p->server_fd, fd_send, fd_recv, -1};
  p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (p->listen_fd < 0) return fail(err, errlen, "socket");
  /* Port 0: the kernel picks a free port, so parallel runs never race for one. */
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(p->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
    return fail(err, errlen, "bind 127.0.0.1:0");
  if (listen(p->listen_fd, 1) != 0) return fail(err, errlen, "listen");
  socklen_t alen = sizeof(p->addr);
  if (getsockname(p->listen_fd, (struct sockaddr *)&p->addr, &alen) != 0)
    return fail(err, errlen, "getsockname");
  return 0;
}

int tb_tcp_pair_reset(tb_tcp_pair *p, char *err, size_t errlen) {
  close_connection(p);
  p->client_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (p->client_fd < 0) return fail(err, errlen, "socket");
  /* A blocking connect to a listening loopback socket completes at once (the backlog
   * takes it), and accept then returns it: no wait without bound here. */
  if (connect(p->client_fd, (struct sockaddr *)&p->addr, sizeof(p->addr)) != 0)
    return fail(err, errlen, "connect");
  p->server_fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
  if (p->server_fd < 0) return fail(err, errlen, "accept");
  int fds[2] = {p->client_fd, p->server_fd};
  for (int i = 0; i < 2; i++) {
    int one = 1; /* flights go out as the library writes them, as a real peer sees them */
    if (setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
      return fail(err, errlen, "TCP_NODELAY");
    int flags = fcntl(fds[i], F_GETFL);
    if (flags < 0 || fcntl(fds[i], F_SETFL, flags | O_NONBLOCK) != 0)
      return fail(err, errlen, "O_NONBLOCK");
  }
  return 0;
}

size_t tb_tcp_pair_in_flight(const tb_tcp_pair *p, int to_server) {
  int fd = to_server ? p->server_fd : p->client_fd;
  int queued = 0;
  if (fd < 0 || ioctl(fd, FIONREAD, &queued) != 0 || queued < 0) return 0;
  return (size_t)queued;
}

void tb_tcp_pair_free(tb_tcp_pair *p) {
  close_connection(p);
  if (p->listen_fd >= 0) close(p->listen_fd);
  p->listen_fd = -1;
}

/* ------------------------------------------------------------------------- links */

/* Counts one side's sent bytes into records and flights (harness arithmetic, no
 * allocation: the same in the timed and the heap driver). */
void tb_wire_count_sent(tb_wire *wire, int server, const unsigned char *buf, size_t len) {
  tb_wire_side *w = server ? &wire->server : &wire->client;
  int sender = server ? 2 : 1;
  if (wire->last_sender != sender) {
    w->flights++;
    if (wire->n_flights < TB_WIRE_FLIGHTS) wire->flight[wire->n_flights].sender = sender;
    wire->n_flights++;
  }
  wire->last_sender = sender;
  w->bytes += len;
  tb_wire_flight *flight =
      wire->n_flights <= TB_WIRE_FLIGHTS ? &wire->flight[wire->n_flights - 1] : NULL;
  if (flight != NULL) flight->bytes += len;
  for (size_t i = 0; i < len;) {
    if (w->body_left > 0) {
      size_t take = len - i < w->body_left ? len - i : w->body_left;
      w->body_left -= take;
      i += take;
      continue;
    }
    w->header[w->header_have++] = buf[i++];
    if (w->header_have == 5) {
      w->body_left = ((size_t)w->header[3] << 8) | w->header[4];
      w->header_have = 0;
      if (w->records++ == 0) w->first_record = 5 + w->body_left;
      if (flight != NULL) flight->records++;
    }
  }
}

static long counted_send(tb_link *link, int server, const unsigned char *buf, size_t len) {
  const tb_transport *inner = tb_link_transport(link, server);
  long n = inner->send(inner->io, buf, len);
  if (n > 0) tb_wire_count_sent(&link->wire, server, buf, (size_t)n);
  return n;
}
static long client_send(void *io, const unsigned char *buf, size_t len) {
  return counted_send(io, 0, buf, len);
}
static long server_send(void *io, const unsigned char *buf, size_t len) {
  return counted_send(io, 1, buf, len);
}
static long client_recv(void *io, unsigned char *buf, size_t len) {
  const tb_transport *inner = tb_link_transport(io, 0);
  return inner->recv(inner->io, buf, len);
}
static long server_recv(void *io, unsigned char *buf, size_t len) {
  const tb_transport *inner = tb_link_transport(io, 1);
  return inner->recv(inner->io, buf, len);
}

int tb_link_init(tb_link *link, tb_link_kind kind, char *err, size_t errlen) {
  memset(link, 0, sizeof(*link));
  link->kind = kind;
  link->counted[0] = (tb_transport){link, client_send, client_recv, -1};
  link->counted[1] = (tb_transport){link, server_send, server_recv, -1};
  link->tcp.listen_fd = link->tcp.client_fd = link->tcp.server_fd = -1;
  if (kind == TB_LINK_TCP) return tb_tcp_pair_init(&link->tcp, err, errlen);
  if (tb_memory_pair_init(&link->memory) != 0) {
    snprintf(err, errlen, "out of memory for the transport queues");
    return -1;
  }
  return 0;
}

int tb_link_reset(tb_link *link, char *err, size_t errlen) {
  memset(&link->wire, 0, sizeof(link->wire));
  if (link->kind == TB_LINK_TCP) return tb_tcp_pair_reset(&link->tcp, err, errlen);
  tb_memory_pair_reset(&link->memory);
  return 0;
}

const tb_transport *tb_link_transport(tb_link *link, int server) {
  if (link->kind == TB_LINK_TCP) return server ? &link->tcp.server : &link->tcp.client;
  return server ? &link->memory.server : &link->memory.client;
}

size_t tb_link_in_flight(const tb_link *link, int to_server) {
  if (link->kind == TB_LINK_TCP) return tb_tcp_pair_in_flight(&link->tcp, to_server);
  return tb_queue_len(to_server ? &link->memory.to_server : &link->memory.to_client);
}

void tb_link_free(tb_link *link) {
  if (link->kind == TB_LINK_TCP) {
    tb_tcp_pair_free(&link->tcp);
  } else {
    tb_memory_pair_free(&link->memory);
  }
}
