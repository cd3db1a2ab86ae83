/* Event-loop connections of serve and load (events.h). */
#include "events.h"

#include <errno.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

/* Steps of one connection without I/O before it counts as waiting on the socket: a library
 * may report "want I/O" after consuming a record it had buffered (a ticket, say). */
#define SPIN_MAX 64

static long ev_send(void *io, const unsigned char *buf, size_t len) {
  tb_evconn *c = io;
  for (;;) {
    ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
    if (n >= 0) return (long)n;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      c->want_write = 1;
      return TB_IO_WOULD_BLOCK;
    }
    if (errno == EPIPE || errno == ECONNRESET) c->peer_gone = 1;
    return TB_IO_ERROR;
  }
}

static long ev_recv(void *io, unsigned char *buf, size_t len) {
  tb_evconn *c = io;
  for (;;) {
    ssize_t n = recv(c->fd, buf, len, 0);
    if (n == 0) c->peer_gone = 1;
    if (n >= 0) return (long)n; /* 0: the peer closed */
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      c->want_read = 1;
      return TB_IO_WOULD_BLOCK;
    }
    if (errno == ECONNRESET) c->peer_gone = 1;
    return TB_IO_ERROR;
  }
}

tb_transport tb_evconn_transport(tb_evconn *c) {
  return (tb_transport){c, ev_send, ev_recv, -1, 0};
}

int tb_evconn_fail(tb_run *r, const char *stage, const char *fmt, const char *what) {
  snprintf(r->err, sizeof(r->err), fmt, what);
  return tb_fail_stage(r, TB_EXIT_HANDSHAKE, stage);
}

void tb_watch(int ep, tb_evconn *c, int events) {
  if (c->events == events) return;
  struct epoll_event ev = {.events = (uint32_t)events, .data.ptr = c};
  epoll_ctl(ep, c->events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->fd, &ev);
  c->events = events;
}

void tb_raise_fd_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

double tb_rusage_cpu_s(int who) {
  struct rusage ru;
  if (getrusage(who, &ru) != 0) return 0;
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

tb_step tb_wait_for_io(int ep, tb_evconn *c, int *spins) {
  if (!c->want_read && !c->want_write && ++*spins < SPIN_MAX) return TB_STEP_DONE; /* again */
  /* Only what the library waits for: readable bytes (a half-closed peer, say) must not
   * wake a connection that waits to write, or the loop would spin until the socket drains. */
  int events = (c->want_read ? EPOLLIN : 0) | (c->want_write ? EPOLLOUT : 0);
  tb_watch(ep, c, events ? events : EPOLLIN);
  return TB_STEP_WAIT;
}

tb_step tb_handshake_step(tb_run *r, int ep, tb_evconn *c, int *spins, int *complete) {
  int server = r->local_role == TB_SERVER;
  tb_side side = server ? TB_SIDE_SERVER : TB_SIDE_CLIENT;
  c->want_read = c->want_write = 0;
  tb_status st = TB_ON(side, r->ad->tls->handshake(c->conn, r->err));
  if (st == TB_WANT_IO) return tb_wait_for_io(ep, c, spins);
  if (st != TB_OK) {
    tb_fail_stage(r, tb_status_exit(st), "handshake");
    return TB_STEP_ERROR;
  }
  tb_negotiated n;
  st = TB_ON(side, r->ad->tls->negotiated(c->conn, &n, r->err));
  if (st != TB_OK) {
    tb_fail_stage(r, TB_EXIT_HANDSHAKE, "negotiated");
    return TB_STEP_ERROR;
  }
  /* The server cannot know which connections the client meant to resume: it accepts
   * either, and its count of resumed handshakes is compared with the generator's. */
  int expect_resumed = server ? n.resumed : c->expect_resumed;
  const char *name = server ? "server" : "client";
  if (tb_check_side(r, name, &n, tb_verifies(r->opt, r->local_role), expect_resumed) !=
          TB_EXIT_OK ||
      tb_check_client_sigalg(r, name, &n, expect_resumed) != TB_EXIT_OK) {
    return TB_STEP_ERROR;
  }
  if (!r->have_negotiated) {
    *(server ? &r->server_neg : &r->client_neg) = n;
    r->have_negotiated = 1;
  }
  c->expect_resumed = n.resumed;
  *complete = 1;
  return TB_STEP_DONE;
}
