/* Addresses, the listener and the port file (net.h). */
#include "net.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int tb_sys_fail(tb_run *r, const char *stage, const char *what) {
  snprintf(r->err, sizeof(r->err), "%s: %s", what, strerror(errno));
  return tb_fail_stage(r, TB_EXIT_ERROR, stage);
}

/* "HOST:PORT" (the last colon splits, so "[::1]:443" style is not needed: IPv4 and names). */
int tb_resolve_address(tb_run *r, const char *hostport, int passive, struct addrinfo **out) {
  char host[256];
  const char *colon = strrchr(hostport, ':');
  if (colon == NULL || (size_t)(colon - hostport) >= sizeof(host)) {
    snprintf(r->err, sizeof(r->err), "'%s' is not HOST:PORT", hostport);
    return tb_fail_stage(r, TB_EXIT_USAGE, "address");
  }
  memcpy(host, hostport, (size_t)(colon - hostport));
  host[colon - hostport] = '\0';
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
  if (passive) hints.ai_flags = AI_PASSIVE;
  int rc = getaddrinfo(host, colon + 1, &hints, out);
  if (rc != 0) {
    snprintf(r->err, sizeof(r->err), "'%s': %s", hostport, gai_strerror(rc));
    return tb_fail_stage(r, TB_EXIT_USAGE, "address");
  }
  return TB_EXIT_OK;
}

/* The port (the kernel's choice with port 0) goes to --port-file only once accept() can
 * take a connection: whoever waits for the file never races the listener. Written to a
 * temporary name and renamed, so that a reader never sees half a number. */
static int write_port_file(const tb_run *r) {
  if (r->opt->port_file == NULL) return 0;
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof(tmp), "%s.tmp", r->opt->port_file);
  FILE *f = fopen(tmp, "w");
  if (f == NULL) return -1;
  int bad = fprintf(f, "%u\n", r->listen_port) < 0;
  bad |= fclose(f) != 0;
  return bad || rename(tmp, r->opt->port_file) != 0 ? -1 : 0;
}

int tb_listen(tb_run *r, int nonblocking, int backlog, int *fd_out) {
  struct addrinfo *ai;
  int code = tb_resolve_address(r, r->opt->listen, 1, &ai);
  if (code != TB_EXIT_OK) return code;
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  int one = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, backlog) != 0) {
    int saved = errno;
    freeaddrinfo(ai);
    if (fd >= 0) close(fd);
    errno = saved;
    return tb_sys_fail(r, "listen", r->opt->listen);
  }
  freeaddrinfo(ai);
  if (!nonblocking) {
    /* accept() gives up after the peer timeout too (SO_RCVTIMEO applies to it). */
    struct timeval tv = {.tv_sec = r->opt->peer_timeout, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  struct sockaddr_in bound;
  socklen_t len = sizeof(bound);
  if (getsockname(fd, (struct sockaddr *)&bound, &len) != 0) {
    close(fd);
    return tb_sys_fail(r, "listen", "getsockname");
  }
  r->listen_port = ntohs(bound.sin_port);
  if (write_port_file(r) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return tb_sys_fail(r, "listen", r->opt->port_file);
  }
  *fd_out = fd;
  return TB_EXIT_OK;
}
