/* The `serve` and `load` scenarios: a TLS server that holds many connections at once, and a
 * load generator that keeps C connections busy, both over real TCP in separate processes.
 *
 * serve: W worker processes (--workers, default 1) share one listening socket; each runs an
 * epoll event loop over non-blocking connections. Processes rather than threads because
 * not every library's shared objects are safe to share between threads in every build
 * (mbedTLS's random generator without MBEDTLS_THREADING_C, for one), and a worker per core
 * is nginx's model, the reference server beside it. An event loop rather than a thread per
 * connection because the adapter contract is non-blocking already (TB_WANT_IO), so one
 * loop holds 256 connections on one core, as real servers do.
 *
 * It speaks enough HTTP/1.1 for real clients (h2load --h1, curl): "GET /N" is answered
 * with N bytes of the pattern (peer.c's), kept alive unless the request says
 * "Connection: close" or is HTTP/1.0. It runs until SIGTERM or SIGINT, or --duration
 * seconds, its own bound; then it reports connections, handshakes, transactions, errors,
 * the CPU time of all workers and, in the heap driver, the heap each open connection holds.
 *
 * load: one process, one epoll loop, C connections (--connections) in one of three
 * patterns (--pattern): `new` (a new connection and full handshake per transaction),
 * `resume` (the same, each resuming the slot's newest session) and `keepalive`
 * (transactions back to back on one connection per slot). It stops starting transactions
 * after --duration seconds or --requests transactions, and after the first error (a server
 * that died must not be hammered, nor hang the run). Transaction latency (from connect, or
 * from the request for keepalive, to the last response byte) goes into a log-linear
 * histogram of HdrHistogram's layout with 3 significant digits; its own CPU time says
 * whether the generator, rather than the server, was the limit.
 *
 * Every handshake on both ends is checked against the request, as in every scenario. */
#define _GNU_SOURCE /* accept4, memmem, strcasestr */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

#define REQUEST_MAX 4096
#define HEADER_MAX 8192
#define IO_CHUNK 65536
#define MAX_EVENTS 256
#define TICK_MS 50
#define WORKERS_MAX 64
/* Steps of one connection without I/O before it counts as waiting on the socket: a library
 * may report "want I/O" after consuming a record it had buffered (a ticket, say). */
#define SPIN_MAX 64

typedef enum phase {
  PHASE_CONNECTING,
  PHASE_HANDSHAKE,
  PHASE_REQUEST,  /* server: reading a request; client: writing one */
  PHASE_RESPONSE, /* server: writing the response; client: reading it */
} phase;

typedef enum step_result { STEP_WAIT, STEP_DONE, STEP_CLOSED, STEP_ERROR } step_result;

/* One TCP connection with its TLS connection and where it is in the exchange. */
typedef struct lconn {
  int fd;
  void *conn;
  phase phase;
  int want_read, want_write; /* what the last transport call would have blocked on */
  int events;                /* what epoll is watching for */
  int peer_gone;             /* the peer closed or reset the TCP connection */
  int idle;                  /* load --rate: waiting for its next scheduled transaction */
  uint64_t last_progress_ns;
  uint64_t transactions; /* completed on this connection */
  int expect_resumed;
  /* the request (server: as read; client: as written) */
  char req[REQUEST_MAX + 1];
  size_t req_have, req_len;
  /* the response head and body (server: written; client: read and checked) */
  char head[HEADER_MAX + 1];
  size_t head_len, head_off;
  uint64_t body_len, body_off;
  int keep_alive;
  /* client */
  int slot;
  uint64_t started_ns;
  uint64_t number; /* server: which accepted connection this is (1, 2, ...) */
} lconn;

static int lconn_fail(tb_run *r, const char *stage, const char *fmt, const char *what) {
  snprintf(r->err, sizeof(r->err), fmt, what);
  return tb_fail_stage(r, TB_EXIT_HANDSHAKE, stage);
}

static long ev_send(void *io, const unsigned char *buf, size_t len) {
  lconn *c = io;
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
  lconn *c = io;
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

static void watch(int ep, lconn *c, int events) {
  if (c->events == events) return;
  struct epoll_event ev = {.events = (uint32_t)events, .data.ptr = c};
  epoll_ctl(ep, c->events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->fd, &ev);
  c->events = events;
}

static int socket_options(int fd) {
  int one = 1; /* flights leave as the library writes them */
  int flags = fcntl(fd, F_GETFL);
  return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) || flags < 0 ||
         fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* Up to the hard limit: 256 connections and their peers need more than the usual 1024
 * descriptors on one machine. */
static void raise_fd_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

static double rusage_cpu_s(int who) {
  struct rusage ru;
  if (getrusage(who, &ru) != 0) return 0;
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Whether a step that returned "want I/O" is waiting on the socket, and for what. */
static step_result wait_for_io(int ep, lconn *c, int *spins) {
  if (!c->want_read && !c->want_write && ++*spins < SPIN_MAX) return STEP_DONE; /* again */
  /* Only what the library waits for: readable bytes (a half-closed peer, say) must not
   * wake a connection that waits to write, or the loop would spin until the socket drains. */
  int events = (c->want_read ? EPOLLIN : 0) | (c->want_write ? EPOLLOUT : 0);
  watch(ep, c, events ? events : EPOLLIN);
  return STEP_WAIT;
}

static tb_side side_of(const tb_run *r) {
  return strcmp(r->opt->scenario, "serve") == 0 ? TB_SIDE_SERVER : TB_SIDE_CLIENT;
}

/* The handshake step shared by both ends; *complete once done and checked. */
static step_result handshake_step(tb_run *r, int ep, lconn *c, int *spins, int *complete) {
  int server = side_of(r) == TB_SIDE_SERVER;
  c->want_read = c->want_write = 0;
  tb_status st = TB_ON(side_of(r), r->ad->handshake(c->conn, r->err));
  if (st == TB_WANT_IO) return wait_for_io(ep, c, spins);
  if (st != TB_OK) {
    tb_fail_stage(r, st == TB_UNSUPPORTED ? TB_EXIT_UNSUPPORTED : TB_EXIT_HANDSHAKE, "handshake");
    return STEP_ERROR;
  }
  tb_negotiated n;
  st = TB_ON(side_of(r), r->ad->negotiated(c->conn, &n, r->err));
  if (st != TB_OK) {
    tb_fail_stage(r, TB_EXIT_HANDSHAKE, "negotiated");
    return STEP_ERROR;
  }
  /* The server cannot know which connections the client meant to resume: it accepts
   * either, and its count of resumed handshakes is compared with the generator's. */
  int expect_resumed = server ? n.resumed : c->expect_resumed;
  int verifies = server ? r->opt->auth == TB_AUTH_MUTUAL : r->opt->auth != TB_AUTH_NONE;
  const char *name = server ? "server" : "client";
  if (tb_check_side(r, name, &n, verifies, expect_resumed) != TB_EXIT_OK ||
      tb_check_client_sigalg(r, name, &n, expect_resumed) != TB_EXIT_OK) {
    return STEP_ERROR;
  }
  if (!r->have_negotiated) {
    *(server ? &r->server_neg : &r->client_neg) = n;
    r->have_negotiated = 1;
  }
  c->expect_resumed = n.resumed;
  *complete = 1;
  return STEP_DONE;
}

/* ========================================================================= serve */

typedef struct serve_stats {
  uint64_t connections, handshakes, resumed, transactions, errors, bytes_sent, max_open;
  /* Connections the client closed or reset in the middle of an exchange: a generator at the
   * end of its run leaves requests in flight (h2load does), which is not the server's
   * error; nginx logs it as "client closed connection" too. */
  uint64_t aborted;
  double heap_per_connection; /* bytes; < 0: not measured (the timing driver) */
  int have_negotiated;
  tb_negotiated negotiated;
  char first_error[TB_ERR_LEN + 128];
} serve_stats;

static volatile sig_atomic_t stop_requested;
static void on_stop(int sig) {
  (void)sig;
  stop_requested = 1;
}

typedef struct server_state {
  tb_run *r;
  int ep, listener;
  serve_stats stats;
  uint64_t open;
  uint64_t heap_base; /* the server side's live heap with no connection open */
} server_state;

static void server_error(server_state *s, lconn *c) {
  if (c != NULL && c->peer_gone) {
    s->stats.aborted++;
    return;
  }
  s->stats.errors++;
  if (s->stats.first_error[0] == '\0') {
    snprintf(s->stats.first_error, sizeof(s->stats.first_error), "%s: %s (connection %llu)",
             s->r->stage, s->r->err,
             (unsigned long long)(c != NULL ? c->number : s->stats.connections));
  }
}

static void server_close(server_state *s, lconn *c, int orderly) {
  tb_run *r = s->r;
  /* After a complete response the close_notify is a courtesy: a client that already
   * closed is not an error. */
  if (orderly && r->ad->close != NULL) TB_ON(TB_SIDE_SERVER, r->ad->close(c->conn, r->err));
  TB_ON(TB_SIDE_SERVER, (r->ad->conn_free(c->conn), TB_OK));
  close(c->fd); /* also leaves the epoll set */
  free(c);
  s->open--;
}

/* A complete request in c->req: parse it and set up the response. */
static int parse_request(tb_run *r, lconn *c, size_t end) {
  if (strncmp(c->req, "GET /", 5) != 0) {
    return lconn_fail(r, "request", "not a GET request: '%.40s'", c->req);
  }
  char *num_end;
  unsigned long long asked = strtoull(c->req + 5, &num_end, 10);
  uint64_t n = num_end != c->req + 5 && asked <= (unsigned long long)TB_BYTES_MAX
                   ? (uint64_t)asked
                   : (uint64_t)r->opt->payload;
  char saved = c->req[end];
  c->req[end] = '\0';
  const char *version = strstr(c->req, " HTTP/1.");
  c->keep_alive =
      version != NULL && version[8] == '1' && strcasestr(c->req, "\nConnection: close") == NULL;
  c->req[end] = saved;
  c->head_len =
      (size_t)snprintf(c->head, sizeof(c->head),
                       "HTTP/1.1 200 OK\r\nServer: tlsbench-driver\r\nContent-Type: "
                       "application/octet-stream\r\nContent-Length: %llu\r\n%s\r\n",
                       (unsigned long long)n, c->keep_alive ? "" : "Connection: close\r\n");
  c->head_off = 0;
  c->body_len = n;
  c->body_off = 0;
  /* Pipelined bytes after this request stay for the next one. */
  memmove(c->req, c->req + end, c->req_have - end);
  c->req_have -= end;
  return TB_EXIT_OK;
}

static step_result serve_step(server_state *s, lconn *c) {
  tb_run *r = s->r;
  int spins = 0;
  for (;;) {
    c->last_progress_ns = tb_mono_ns();
    if (c->phase == PHASE_HANDSHAKE) {
      int complete = 0;
      step_result res = handshake_step(r, s->ep, c, &spins, &complete);
      if (res != STEP_DONE) return res;
      if (!complete) continue;
      s->stats.handshakes++;
      s->stats.resumed += (uint64_t)c->expect_resumed;
      if (!s->stats.have_negotiated) {
        s->stats.negotiated = r->server_neg;
        s->stats.have_negotiated = 1;
      }
      if (s->open > s->stats.max_open) s->stats.max_open = s->open;
      c->phase = PHASE_REQUEST;
    } else if (c->phase == PHASE_REQUEST) {
      char *end = c->req_have >= 4 ? memmem(c->req, c->req_have, "\r\n\r\n", 4) : NULL;
      if (end != NULL) {
        if (parse_request(r, c, (size_t)(end - c->req) + 4) != TB_EXIT_OK) return STEP_ERROR;
        c->phase = PHASE_RESPONSE;
        continue;
      }
      if (c->req_have == REQUEST_MAX) {
        return lconn_fail(r, "request", "request longer than %s bytes", "4096"), STEP_ERROR;
      }
      size_t done = 0;
      c->want_read = c->want_write = 0;
      tb_status st =
          TB_ON(TB_SIDE_SERVER, r->ad->read(c->conn, (unsigned char *)c->req + c->req_have,
                                            REQUEST_MAX - c->req_have, &done, r->err));
      c->req_have += done;
      if (done > 0) continue;
      /* TB_OK with nothing read: the library consumed a record without application data
       * (a ticket, say); read again. */
      if (st == TB_WANT_IO || st == TB_OK) {
        step_result res = wait_for_io(s->ep, c, &spins);
        if (res != STEP_DONE) return res;
        continue;
      }
      /* The client ended the connection between requests (HTTP allows it), with or without
       * a close_notify; anything else is an error. */
      if (st == TB_CLOSED || (c->peer_gone && c->req_have == 0)) return STEP_CLOSED;
      tb_fail_stage(r, TB_EXIT_HANDSHAKE, "request");
      return STEP_ERROR;
    } else { /* PHASE_RESPONSE */
      const unsigned char *buf;
      size_t len;
      if (c->head_off < c->head_len) {
        buf = (const unsigned char *)c->head + c->head_off;
        len = c->head_len - c->head_off;
      } else if (c->body_off < c->body_len) {
        buf = tb_pattern_at(c->body_off);
        len = c->body_len - c->body_off < IO_CHUNK ? (size_t)(c->body_len - c->body_off) : IO_CHUNK;
      } else {
        c->transactions++;
        s->stats.transactions++;
        if (tb_heap_accounting && s->open == s->stats.max_open) {
          /* The heap of all open connections with the most open, after a transaction:
           * with keep-alive connections, the steady state (no handshake under way). With
           * new connections, whatever the session cache accumulated would be charged to
           * the open ones: the runner measures heap with keep-alive only. */
          tb_heap_counters hc;
          tb_heap_get(TB_SIDE_SERVER, &hc);
          uint64_t above = hc.live > s->heap_base ? hc.live - s->heap_base : 0;
          s->stats.heap_per_connection = (double)above / (double)s->open;
        }
        if (!c->keep_alive) return STEP_CLOSED;
        c->phase = PHASE_REQUEST;
        continue;
      }
      size_t done = 0;
      c->want_read = c->want_write = 0;
      tb_status st = TB_ON(TB_SIDE_SERVER, r->ad->write(c->conn, buf, len, &done, r->err));
      s->stats.bytes_sent += done;
      if (c->head_off < c->head_len) {
        c->head_off += done;
      } else {
        c->body_off += done;
      }
      if (st == TB_WANT_IO && done == 0) {
        step_result res = wait_for_io(s->ep, c, &spins);
        if (res != STEP_DONE) return res;
      } else if (st != TB_OK && st != TB_WANT_IO) {
        tb_fail_stage(r, TB_EXIT_HANDSHAKE, "response");
        return STEP_ERROR;
      }
    }
  }
}

/* Takes a connection as far as it can go now; an error is counted, an ended connection
 * closed (in order when it ended well). */
static void serve_connection(server_state *s, lconn *c) {
  step_result res = serve_step(s, c);
  if (res == STEP_ERROR) server_error(s, c);
  if (res == STEP_ERROR || res == STEP_CLOSED) server_close(s, c, res == STEP_CLOSED);
}

/* One connection per wake-up (nginx's multi_accept off): the listener stays readable while
 * more wait, and other workers (EPOLLEXCLUSIVE) and open connections get their turn. */
static void accept_one(server_state *s) {
  tb_run *r = s->r;
  for (int once = 0; once < 1; once++) {
    int fd = accept4(s->listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return; /* EAGAIN: another worker took it, or none is left */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    lconn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
      close(fd);
      lconn_fail(r, "accept", "out of memory%s", "");
      server_error(s, NULL);
      continue;
    }
    c->fd = fd;
    c->phase = PHASE_HANDSHAKE;
    c->number = ++s->stats.connections;
    s->open++;
    tb_transport transport = {c, ev_send, ev_recv, -1, 0};
    tb_status st =
        TB_ON(TB_SIDE_SERVER, r->ad->conn_new(r->server_ctx, &transport, NULL, &c->conn, r->err));
    if (st != TB_OK) {
      tb_fail_stage(r, TB_EXIT_HANDSHAKE, "connection");
      server_error(s, c);
      close(fd);
      free(c);
      s->open--;
      continue;
    }
    serve_connection(s, c);
  }
}

/* One worker: its event loop until asked to stop; its figures go to `out`. */
static void serve_worker(tb_run *r, int listener, long duration_s, int out) {
  server_state s = {.r = r, .listener = listener};
  s.stats.heap_per_connection = -1;
  if (tb_heap_accounting) {
    tb_heap_counters hc;
    tb_heap_get(TB_SIDE_SERVER, &hc);
    s.heap_base = hc.live;
  }
  s.ep = epoll_create1(EPOLL_CLOEXEC);
  /* EPOLLEXCLUSIVE: one worker wakes per new connection, not all of them. */
  struct epoll_event lev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = NULL};
  epoll_ctl(s.ep, EPOLL_CTL_ADD, listener, &lev);
  uint64_t deadline = tb_mono_ns() + (uint64_t)duration_s * 1000000000ull;
  struct epoll_event events[MAX_EVENTS];
  while (!stop_requested && tb_mono_ns() < deadline) {
    int n = epoll_wait(s.ep, events, MAX_EVENTS, TICK_MS);
    for (int i = 0; i < n; i++) {
      lconn *c = events[i].data.ptr;
      if (c == NULL) {
        accept_one(&s);
        continue;
      }
      serve_connection(&s, c);
    }
  }
  /* Open connections are left to the kernel: the worker exits right after reporting. */
  ssize_t w = write(out, &s.stats, sizeof(s.stats));
  (void)w;
  _exit(0);
}

static int open_listener(tb_run *r, int *fd_out) {
  struct addrinfo *ai;
  int code = tb_resolve_address(r, r->opt->listen, 1, &ai);
  if (code != TB_EXIT_OK) return code;
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int one = 1;
  /* A deep backlog: 256 clients connecting at once must queue, not be refused. */
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 4096) != 0) {
    freeaddrinfo(ai);
    if (fd >= 0) close(fd);
    return lconn_fail(r, "listen", "%s", strerror(errno));
  }
  freeaddrinfo(ai);
  struct sockaddr_in bound;
  socklen_t len = sizeof(bound);
  if (getsockname(fd, (struct sockaddr *)&bound, &len) != 0) {
    close(fd);
    return lconn_fail(r, "listen", "getsockname: %s", strerror(errno));
  }
  r->peer_port = ntohs(bound.sin_port);
  if (tb_write_port_file(r) != 0) {
    close(fd);
    return lconn_fail(r, "listen", "cannot write the port file: %s", strerror(errno));
  }
  *fd_out = fd;
  return TB_EXIT_OK;
}

int tb_scenario_serve(tb_run *r, tb_json *j) {
  const tb_options *o = r->opt;
  raise_fd_limit();
  tb_pattern_init();
  tb_fill_config(r, &r->server_cfg, TB_SERVER, 1);
  tb_status st = TB_ON(TB_SIDE_SERVER, r->ad->ctx_new(&r->server_cfg, &r->server_ctx, r->err));
  if (st != TB_OK) {
    return tb_fail_stage(r, st == TB_UNSUPPORTED ? TB_EXIT_UNSUPPORTED : TB_EXIT_HANDSHAKE,
                         "context (server)");
  }
  int listener = -1;
  int code = open_listener(r, &listener);
  if (code != TB_EXIT_OK) return code;
  /* SIGTERM / SIGINT stop the server; blocked here until the workers exist, so that no
   * signal is lost in between. */
  sigset_t stop_set, old;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGTERM);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &stop_set, &old);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return lconn_fail(r, "workers", "pipe: %s", strerror(errno));
  pid_t pids[WORKERS_MAX];
  int workers = 0;
  uint64_t t0 = tb_mono_ns();
  fflush(stdout);
  for (; workers < o->workers; workers++) {
    pid_t pid = fork();
    if (pid < 0) break;
    if (pid == 0) {
      /* A worker never outlives the server process (killed with -9, say). */
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() == 1) _exit(1);
      struct sigaction sa = {.sa_handler = on_stop};
      sigaction(SIGTERM, &sa, NULL);
      sigaction(SIGINT, &sa, NULL);
      sigprocmask(SIG_SETMASK, &old, NULL);
      close(pipe_fds[0]);
      serve_worker(r, listener, o->duration, pipe_fds[1]);
    }
    pids[workers] = pid;
  }
  close(pipe_fds[1]);
  /* Wait for a stop signal, the duration, or a worker that ended by itself (a crash); not at
   * all when a fork failed (the workers that exist are stopped and it is reported). */
  uint64_t deadline = workers < o->workers ? t0 : t0 + (uint64_t)o->duration * 1000000000ull;
  int died = 0;
  char died_how[64] = "";
  while (workers > 0 && !died && tb_mono_ns() < deadline) {
    struct timespec tick = {0, TICK_MS * 1000000L};
    int sig = sigtimedwait(&stop_set, NULL, &tick);
    if (sig == SIGTERM || sig == SIGINT) break;
    int status;
    for (int i = 0; i < workers; i++) {
      if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        pids[i] = -1;
        /* Exit 0: the worker reached --duration and reported (on its own clock). */
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
        died = 1;
        snprintf(died_how, sizeof(died_how), "%s %d",
                 WIFSIGNALED(status) ? "signal" : "exit status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      }
    }
  }
  for (int i = 0; i < workers; i++) {
    if (pids[i] > 0) kill(pids[i], SIGTERM);
  }
  serve_stats total = {.heap_per_connection = -1};
  serve_stats one;
  while (read(pipe_fds[0], &one, sizeof(one)) == (ssize_t)sizeof(one)) {
    total.connections += one.connections;
    total.handshakes += one.handshakes;
    total.resumed += one.resumed;
    total.transactions += one.transactions;
    total.errors += one.errors;
    total.aborted += one.aborted;
    total.bytes_sent += one.bytes_sent;
    total.max_open += one.max_open;
    if (one.heap_per_connection > total.heap_per_connection)
      total.heap_per_connection = one.heap_per_connection;
    if (total.first_error[0] == '\0' && one.first_error[0] != '\0')
      memcpy(total.first_error, one.first_error, sizeof(total.first_error));
    if (!total.have_negotiated && one.have_negotiated) {
      total.have_negotiated = 1;
      total.negotiated = one.negotiated;
    }
  }
  close(pipe_fds[0]);
  for (int i = 0; i < workers; i++) {
    if (pids[i] > 0) waitpid(pids[i], NULL, 0);
  }
  double wall_s = (double)(tb_mono_ns() - t0) / 1e9;
  close(listener);
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (total.have_negotiated) {
    r->server_neg = total.negotiated;
    r->have_negotiated = 1;
  }
  tb_json_u64(j, "port", r->peer_port);
  tb_json_object(j, "serve");
  tb_json_u64(j, "workers", (uint64_t)workers);
  tb_json_u64(j, "connections", total.connections);
  tb_json_u64(j, "handshakes", total.handshakes);
  tb_json_u64(j, "resumed", total.resumed);
  tb_json_u64(j, "transactions", total.transactions);
  tb_json_u64(j, "errors", total.errors);
  tb_json_u64(j, "aborted", total.aborted);
  tb_json_str(j, "first_error", total.first_error[0] ? total.first_error : NULL);
  tb_json_u64(j, "bytes_sent", total.bytes_sent);
  tb_json_double(j, "cpu_s", rusage_cpu_s(RUSAGE_CHILDREN));
  tb_json_double(j, "wall_s", wall_s);
  tb_json_u64(j, "max_open", total.max_open);
  if (total.heap_per_connection >= 0) {
    tb_json_double(j, "heap_per_connection", total.heap_per_connection);
  } else {
    tb_json_null(j, "heap_per_connection");
  }
  tb_json_object_end(j);
  if (workers < o->workers) return lconn_fail(r, "workers", "fork: %s", strerror(errno));
  if (died) return lconn_fail(r, "workers", "a worker ended by itself (%s)", died_how);
  /* Errors on single connections are the clients' to judge (a client may hang up early);
   * the server reports them and still exits 0. */
  return TB_EXIT_OK;
}

/* ========================================================================= load */

/* Latencies in ns, HdrHistogram's layout: exact below 2048, then 1024 sub-buckets per
 * power of two (3 significant digits); up to 2^42 ns (about 73 minutes). */
#define HIST_SUB 1024
#define HIST_EXPONENTS 31
#define HIST_BUCKETS (2 * HIST_SUB + HIST_EXPONENTS * HIST_SUB)

typedef struct histogram {
  uint64_t counts[HIST_BUCKETS];
  uint64_t n;
  double sum;
  uint64_t min, max;
} histogram;

static size_t hist_index(uint64_t v) {
  if (v < 2 * HIST_SUB) return (size_t)v;
  int e = 63 - __builtin_clzll(v) - 10; /* v >> e is in [1024, 2048) */
  if (e > HIST_EXPONENTS) return HIST_BUCKETS - 1;
  return (size_t)(2 * HIST_SUB + (e - 1) * HIST_SUB + (int)((v >> e) - HIST_SUB));
}

/* The highest value that falls into bucket i (what HdrHistogram reports). */
static uint64_t hist_upper(size_t i) {
  if (i < 2 * HIST_SUB) return i;
  size_t k = i - 2 * HIST_SUB;
  int e = (int)(k / HIST_SUB) + 1;
  uint64_t sub = HIST_SUB + k % HIST_SUB;
  return ((sub + 1) << e) - 1;
}

static void hist_add(histogram *h, uint64_t v) {
  h->counts[hist_index(v)]++;
  if (h->n == 0 || v < h->min) h->min = v;
  if (v > h->max) h->max = v;
  h->n++;
  h->sum += (double)v;
}

/* Nearest rank: the smallest value with at least p % of the samples at or below it. */
static uint64_t hist_percentile(const histogram *h, double p) {
  uint64_t rank = (uint64_t)((p / 100.0) * (double)h->n + 0.999999);
  if (rank < 1) rank = 1;
  uint64_t seen = 0;
  for (size_t i = 0; i < HIST_BUCKETS; i++) {
    seen += h->counts[i];
    if (seen >= rank) return hist_upper(i) < h->max ? hist_upper(i) : h->max;
  }
  return h->max;
}

typedef struct load_state {
  tb_run *r;
  int ep;
  struct addrinfo *target;
  lconn **slots;
  void **sessions;
  histogram *hist;
  FILE *latencies;
  uint64_t started, transactions, handshakes, resumed, errors;
  uint64_t body_bytes; /* response bodies received and checked */
  uint64_t deadline_ns;
  /* --rate: transactions are due every interval_ns, the next at next_due_ns; latency counts
   * from the due time, so a server that falls behind is charged for the wait (no
   * coordinated omission). 0: each slot starts its next transaction at once. */
  uint64_t interval_ns, next_due_ns;
  uint64_t due_total; /* transactions due by the end of the load (--rate) */
  int stopping;       /* no new transactions (time, count or an error) */
  char first_error[TB_ERR_LEN + 128];
  unsigned char scratch[IO_CHUNK];
} load_state;

typedef enum pattern { PATTERN_NEW, PATTERN_RESUME, PATTERN_KEEPALIVE } pattern;

static pattern load_pattern(const tb_options *o) {
  return strcmp(o->pattern, "new") == 0      ? PATTERN_NEW
         : strcmp(o->pattern, "resume") == 0 ? PATTERN_RESUME
                                             : PATTERN_KEEPALIVE;
}

typedef enum start_result { START_NOW, START_LATER, START_NEVER } start_result;

/* Whether a slot may start a transaction now; *due: when it was due (now without --rate). */
static start_result may_start(load_state *s, uint64_t *due) {
  const tb_options *o = s->r->opt;
  if (s->stopping) return START_NEVER;
  uint64_t now = tb_mono_ns();
  if (now >= s->deadline_ns || (o->requests > 0 && s->started >= (uint64_t)o->requests)) {
    s->stopping = 1;
    return START_NEVER;
  }
  if (s->interval_ns == 0) {
    *due = now;
    return START_NOW;
  }
  if (now < s->next_due_ns) return START_LATER;
  *due = s->next_due_ns;
  s->next_due_ns += s->interval_ns;
  return START_NOW;
}

/* A slot waiting for its next due time: a kept-alive connection stays open but unwatched. */
static void make_idle(load_state *s, lconn *c) {
  if (c->fd >= 0 && c->events != 0) epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
  c->events = 0;
  c->idle = 1;
}

static void load_close(load_state *s, lconn *c, int orderly) {
  tb_run *r = s->r;
  if (c->conn != NULL) {
    if (orderly && r->ad->close != NULL) TB_ON(TB_SIDE_CLIENT, r->ad->close(c->conn, r->err));
    TB_ON(TB_SIDE_CLIENT, (r->ad->conn_free(c->conn), TB_OK));
    c->conn = NULL;
  }
  if (c->fd >= 0) {
    if (!orderly) {
      /* A reset rather than TIME_WAIT: thousands of short connections a second would
       * otherwise use up the ephemeral ports. */
      struct linger hard = {1, 0};
      setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
    }
    close(c->fd);
  }
  c->fd = -1;
  c->events = 0;
}

static void load_error(load_state *s, lconn *c) {
  s->errors++;
  s->stopping = 1;
  if (s->first_error[0] == '\0') {
    snprintf(s->first_error, sizeof(s->first_error), "%s: %s (transaction %llu)", s->r->stage,
             s->r->err, (unsigned long long)s->started);
  }
  load_close(s, c, 0);
}

/* The request of one transaction, padded to --request-size with a header field. */
static void build_request(load_state *s, lconn *c) {
  const tb_options *o = s->r->opt;
  int close_after = load_pattern(o) != PATTERN_KEEPALIVE;
  int len =
      snprintf(c->req, sizeof(c->req), "GET /%llu HTTP/1.1\r\nHost: localhost\r\n%s",
               (unsigned long long)tb_response_size(o), close_after ? "Connection: close\r\n" : "");
  size_t want = o->request_size;
  size_t pad_overhead = strlen("X-Pad: \r\n\r\n");
  if (want > (size_t)len + pad_overhead && want <= REQUEST_MAX) {
    size_t pad = want - (size_t)len - pad_overhead;
    len += snprintf(c->req + len, sizeof(c->req) - (size_t)len, "X-Pad: ");
    memset(c->req + len, 'x', pad);
    len += (int)pad;
    len += snprintf(c->req + len, sizeof(c->req) - (size_t)len, "\r\n");
  }
  len += snprintf(c->req + len, sizeof(c->req) - (size_t)len, "\r\n");
  c->req_len = (size_t)len;
  c->req_have = 0;
  c->head_len = 0;
  c->body_len = UINT64_MAX;
  c->body_off = 0;
}

/* Starts the slot's next transaction: a new connection, or the next request on its own.
 * START_LATER: not due yet (the slot is idle); START_NEVER: the load is over, or starting
 * failed (counted as an error). */
static start_result load_start(load_state *s, lconn *c) {
  tb_run *r = s->r;
  pattern p = load_pattern(r->opt);
  uint64_t due = 0;
  start_result may = may_start(s, &due);
  if (may == START_LATER) make_idle(s, c);
  if (may != START_NOW) return may;
  c->idle = 0;
  s->started++;
  c->started_ns = due;
  c->last_progress_ns = tb_mono_ns();
  build_request(s, c);
  if (c->fd >= 0 && c->conn != NULL) {
    c->phase = PHASE_REQUEST;
    return START_NOW;
  }
  c->fd = socket(s->target->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (c->fd < 0 || socket_options(c->fd) != 0) {
    lconn_fail(r, "connect", "socket: %s", strerror(errno));
    load_error(s, c);
    return START_NEVER;
  }
  int rc = connect(c->fd, s->target->ai_addr, s->target->ai_addrlen);
  if (rc != 0 && errno != EINPROGRESS) {
    lconn_fail(r, "connect", "%s", strerror(errno));
    load_error(s, c);
    return START_NEVER;
  }
  void *session = p == PATTERN_RESUME ? s->sessions[c->slot] : NULL;
  c->expect_resumed = session != NULL;
  tb_transport transport = {c, ev_send, ev_recv, -1, 0};
  tb_status st =
      TB_ON(TB_SIDE_CLIENT, r->ad->conn_new(r->client_ctx, &transport, session, &c->conn, r->err));
  if (st != TB_OK) {
    tb_fail_stage(r, st == TB_UNSUPPORTED ? TB_EXIT_UNSUPPORTED : TB_EXIT_HANDSHAKE, "connection");
    load_error(s, c);
    return START_NEVER;
  }
  c->phase = rc == 0 ? PHASE_HANDSHAKE : PHASE_CONNECTING;
  if (rc != 0) watch(s->ep, c, EPOLLOUT);
  return START_NOW;
}

/* Checks the response head in c->head[0..head_len) and the body bytes that came with it. */
static int parse_response(load_state *s, lconn *c, size_t head_end) {
  tb_run *r = s->r;
  c->head[head_end] = '\0';
  if (strncmp(c->head, "HTTP/1.", 7) != 0 || strncmp(c->head + 8, " 200", 4) != 0) {
    return lconn_fail(r, "response", "not an HTTP 200 response: '%.60s'", c->head);
  }
  const char *length = strcasestr(c->head, "\nContent-Length: ");
  if (length == NULL ||
      strtoull(length + 17, NULL, 10) != (unsigned long long)tb_response_size(r->opt)) {
    return lconn_fail(r, "response", "response without Content-Length: %s", "the asked size");
  }
  c->body_len = tb_response_size(r->opt);
  return TB_EXIT_OK;
}

static int check_body(load_state *s, lconn *c, const unsigned char *buf, size_t n) {
  if (n > c->body_len - c->body_off) n = (size_t)(c->body_len - c->body_off);
  if (memcmp(buf, tb_pattern_at(c->body_off), n) != 0) {
    return lconn_fail(s->r, "data check", "response body differs from the pattern%s", "");
  }
  c->body_off += n;
  s->body_bytes += n;
  return TB_EXIT_OK;
}

/* One transaction finished: count it and start the slot's next one. */
static step_result load_finish(load_state *s, lconn *c) {
  uint64_t latency = tb_mono_ns() - c->started_ns;
  hist_add(s->hist, latency);
  if (s->latencies) fprintf(s->latencies, "%llu\n", (unsigned long long)latency);
  s->transactions++;
  c->transactions++;
  tb_run *r = s->r;
  pattern p = load_pattern(r->opt);
  if (p == PATTERN_RESUME) {
    /* The newest session for the slot's next connection (TLS 1.3 tickets serve once). */
    void *next = NULL;
    if (TB_ON(TB_SIDE_CLIENT, r->ad->session_get(c->conn, &next, r->err)) != TB_OK) {
      tb_fail_stage(r, TB_EXIT_HANDSHAKE, "session");
      return STEP_ERROR;
    }
    TB_ON(TB_SIDE_CLIENT, (r->ad->session_free(s->sessions[c->slot]), TB_OK));
    s->sessions[c->slot] = next;
  }
  if (p != PATTERN_KEEPALIVE) load_close(s, c, 0);
  start_result next = load_start(s, c);
  if (next == START_LATER) return STEP_WAIT;
  if (next == START_NEVER) {
    if (c->fd >= 0) load_close(s, c, 1); /* keepalive: the orderly end */
    return STEP_CLOSED;
  }
  return STEP_DONE;
}

static step_result load_step(load_state *s, lconn *c) {
  tb_run *r = s->r;
  int spins = 0;
  for (;;) {
    c->last_progress_ns = tb_mono_ns();
    if (c->phase == PHASE_CONNECTING) {
      /* Connected once the socket is writable; SO_ERROR then says how. */
      struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
      if (poll(&pfd, 1, 0) == 0) return STEP_WAIT;
      int soerr = 0;
      socklen_t len = sizeof(soerr);
      getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
      if (soerr == EINPROGRESS) return STEP_WAIT;
      if (soerr != 0) {
        errno = soerr;
        lconn_fail(r, "connect", "%s", strerror(soerr));
        return STEP_ERROR;
      }
      c->phase = PHASE_HANDSHAKE;
    } else if (c->phase == PHASE_HANDSHAKE) {
      int complete = 0;
      step_result res = handshake_step(r, s->ep, c, &spins, &complete);
      if (res != STEP_DONE) return res;
      if (!complete) continue;
      s->handshakes++;
      s->resumed += (uint64_t)c->expect_resumed;
      /* A keep-alive transaction is the request and its response: the connection's setup
       * is not part of its first transaction's latency. */
      if (load_pattern(r->opt) == PATTERN_KEEPALIVE && s->interval_ns == 0)
        c->started_ns = tb_mono_ns();
      c->phase = PHASE_REQUEST;
    } else if (c->phase == PHASE_REQUEST) {
      if (c->req_have == c->req_len) {
        c->phase = PHASE_RESPONSE;
        continue;
      }
      size_t done = 0;
      c->want_read = c->want_write = 0;
      tb_status st =
          TB_ON(TB_SIDE_CLIENT, r->ad->write(c->conn, (unsigned char *)c->req + c->req_have,
                                             c->req_len - c->req_have, &done, r->err));
      c->req_have += done;
      if (st == TB_WANT_IO && done == 0) {
        step_result res = wait_for_io(s->ep, c, &spins);
        if (res != STEP_DONE) return res;
      } else if (st != TB_OK && st != TB_WANT_IO) {
        tb_fail_stage(r, TB_EXIT_HANDSHAKE, "request");
        return STEP_ERROR;
      }
    } else { /* PHASE_RESPONSE */
      if (c->body_off == c->body_len) {
        step_result res = load_finish(s, c);
        if (res != STEP_DONE) return res;
        continue;
      }
      int in_head = c->body_len == UINT64_MAX;
      unsigned char *buf = in_head ? (unsigned char *)c->head + c->head_len : s->scratch;
      size_t cap = in_head ? HEADER_MAX - c->head_len : sizeof(s->scratch);
      if (cap == 0) {
        lconn_fail(r, "response", "response header longer than %s bytes", "8192");
        return STEP_ERROR;
      }
      size_t done = 0;
      c->want_read = c->want_write = 0;
      tb_status st = TB_ON(TB_SIDE_CLIENT, r->ad->read(c->conn, buf, cap, &done, r->err));
      if (done > 0 && in_head) {
        c->head_len += done;
        char *end = memmem(c->head, c->head_len, "\r\n\r\n", 4);
        if (end != NULL) {
          size_t head_end = (size_t)(end - c->head) + 4;
          size_t extra = c->head_len - head_end;
          /* parse_response ends the head with a NUL where the body's first byte may be
           * (nginx writes head and body in one record): keep that byte. */
          char first = c->head[head_end];
          if (parse_response(s, c, head_end) != TB_EXIT_OK) return STEP_ERROR;
          c->head[head_end] = first;
          if (extra > 0 && check_body(s, c, (unsigned char *)end + 4, extra) != TB_EXIT_OK)
            return STEP_ERROR;
        }
        continue;
      }
      if (done > 0) {
        if (check_body(s, c, buf, done) != TB_EXIT_OK) return STEP_ERROR;
        continue;
      }
      if (st == TB_WANT_IO || st == TB_OK) {
        step_result res = wait_for_io(s->ep, c, &spins);
        if (res != STEP_DONE) return res;
        continue;
      }
      if (st == TB_CLOSED) {
        lconn_fail(r, "response", "the server closed the connection after %s",
                   "part of a response");
        return STEP_ERROR;
      }
      tb_fail_stage(r, TB_EXIT_HANDSHAKE, "response");
      return STEP_ERROR;
    }
  }
}

/* Takes a slot's transactions as far as they can go now; 1 when the slot is done (its
 * load is over, or it failed: the error is counted). */
static int slot_ended(load_state *s, lconn *c) {
  step_result res = load_step(s, c);
  if (res == STEP_ERROR) load_error(s, c);
  return res == STEP_ERROR || res == STEP_CLOSED;
}

static void write_load(tb_json *j, const load_state *s, const tb_options *o, double wall_s,
                       double cpu_s) {
  const histogram *h = s->hist;
  tb_json_object(j, "load");
  tb_json_str(j, "pattern", o->pattern);
  tb_json_u64(j, "connections", (uint64_t)o->connections);
  if (o->rate > 0) {
    tb_json_u64(j, "rate", (uint64_t)o->rate); /* asked for; tps is what was achieved */
    /* Transactions that came due but never started before the end: the server (or the
     * connection limit) could not keep up with the offered rate. */
    tb_json_u64(j, "unstarted", s->due_total > s->started ? s->due_total - s->started : 0);
  } else {
    tb_json_null(j, "rate");
  }
  tb_json_u64(j, "transactions", s->transactions);
  tb_json_u64(j, "handshakes", s->handshakes);
  tb_json_u64(j, "resumed", s->resumed);
  tb_json_u64(j, "errors", s->errors);
  tb_json_str(j, "first_error", s->first_error[0] ? s->first_error : NULL);
  tb_json_double(j, "wall_s", wall_s);
  tb_json_double(j, "tps", wall_s > 0 ? (double)s->transactions / wall_s : 0);
  tb_json_double(j, "hps", wall_s > 0 ? (double)s->handshakes / wall_s : 0);
  /* Response bodies per second, in MB (10^6 bytes): the download speed of large responses. */
  tb_json_double(j, "MBps", wall_s > 0 ? (double)s->body_bytes / wall_s / 1e6 : 0);
  tb_json_double(j, "cpu_s", cpu_s);
  double utilization = wall_s > 0 ? cpu_s / wall_s : 0;
  tb_json_double(j, "cpu_utilization", utilization);
  tb_json_bool(j, "saturated", utilization >= 0.9);
  tb_json_object(j, "latency_us");
  if (h->n > 0) {
    static const struct {
      const char *name;
      double p;
    } marks[] = {{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p99.9", 99.9}};
    tb_json_double(j, "min", (double)h->min / 1e3);
    tb_json_double(j, "mean", h->sum / (double)h->n / 1e3);
    for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
      tb_json_double(j, marks[i].name, (double)hist_percentile(h, marks[i].p) / 1e3);
    tb_json_double(j, "max", (double)h->max / 1e3);
  }
  tb_json_object_end(j);
  tb_json_array(j, "histogram");
  for (size_t i = 0; i < HIST_BUCKETS; i++) {
    if (h->counts[i] == 0) continue;
    tb_json_array(j, NULL);
    tb_json_double(j, NULL, (double)hist_upper(i) / 1e3);
    tb_json_u64(j, NULL, h->counts[i]);
    tb_json_array_end(j);
  }
  tb_json_array_end(j);
  tb_json_object_end(j);
}

int tb_scenario_load(tb_run *r, tb_json *j) {
  const tb_options *o = r->opt;
  raise_fd_limit();
  tb_pattern_init();
  pattern p = load_pattern(o);
  tb_fill_config(r, &r->client_cfg, TB_CLIENT, p == PATTERN_RESUME);
  tb_status st = TB_ON(TB_SIDE_CLIENT, r->ad->ctx_new(&r->client_cfg, &r->client_ctx, r->err));
  if (st != TB_OK) {
    return tb_fail_stage(r, st == TB_UNSUPPORTED ? TB_EXIT_UNSUPPORTED : TB_EXIT_HANDSHAKE,
                         "context (client)");
  }
  load_state *s = calloc(1, sizeof(*s));
  histogram *hist = calloc(1, sizeof(*hist));
  lconn **slots = calloc((size_t)o->connections, sizeof(*slots));
  void **sessions = calloc((size_t)o->connections, sizeof(*sessions));
  if (s == NULL || hist == NULL || slots == NULL || sessions == NULL) {
    free(s), free(hist), free(slots), free(sessions);
    return lconn_fail(r, "load", "out of memory for %s connections", "the");
  }
  s->r = r;
  s->hist = hist;
  s->slots = slots;
  s->sessions = sessions;
  int code = tb_resolve_address(r, o->connect, 0, &s->target);
  if (code == TB_EXIT_OK && o->latencies != NULL &&
      (s->latencies = fopen(o->latencies, "w")) == NULL)
    code = lconn_fail(r, "load", "cannot write --latencies: %s", strerror(errno));
  s->ep = epoll_create1(EPOLL_CLOEXEC);
  double cpu0 = rusage_cpu_s(RUSAGE_SELF);
  uint64_t t0 = tb_mono_ns();
  s->deadline_ns = t0 + (uint64_t)o->duration * 1000000000ull;
  s->interval_ns = o->rate > 0 ? (uint64_t)(1e9 / (double)o->rate) : 0;
  s->next_due_ns = t0;
  uint64_t stall_ns = (uint64_t)o->peer_timeout * 1000000000ull;
  long active = 0;
  for (long i = 0; code == TB_EXIT_OK && i < o->connections; i++) {
    lconn *c = calloc(1, sizeof(*c));
    if (c == NULL) break;
    c->fd = -1;
    c->slot = (int)i;
    slots[i] = c;
    start_result first = load_start(s, c);
    if (first == START_NEVER) continue;
    active++;
    if (first == START_LATER) continue;
    active -= slot_ended(s, c);
  }
  struct epoll_event events[MAX_EVENTS];
  while (code == TB_EXIT_OK && active > 0) {
    /* With --rate, wake up when the next transaction is due (epoll_pwait2: ns, not ms). */
    /* Only while a slot is idle: when every slot is busy (the server fell behind) or the
     * load is draining, a due time in the past must not turn the wait into a busy loop. */
    uint64_t wait_ns = (uint64_t)TICK_MS * 1000000u, now0 = tb_mono_ns();
    int any_idle = 0;
    for (long i = 0; s->interval_ns && !s->stopping && !any_idle && i < o->connections; i++)
      any_idle = slots[i] != NULL && slots[i]->idle;
    if (any_idle && s->next_due_ns < now0 + wait_ns)
      wait_ns = s->next_due_ns > now0 ? s->next_due_ns - now0 : 0;
    struct timespec timeout = {(time_t)(wait_ns / 1000000000u), (long)(wait_ns % 1000000000u)};
    int n = epoll_pwait2(s->ep, events, MAX_EVENTS, &timeout, NULL);
    for (int i = 0; i < n; i++) {
      lconn *c = events[i].data.ptr;
      if (c->fd < 0) continue;
      active -= slot_ended(s, c);
    }
    /* Idle slots whose transactions have come due start them (or end, when the load is). */
    for (long i = 0; s->interval_ns && i < o->connections; i++) {
      lconn *c = slots[i];
      if (c == NULL || !c->idle) continue;
      start_result next = load_start(s, c);
      if (next == START_LATER) break; /* nothing more is due */
      if (next == START_NEVER) {
        c->idle = 0;
        if (c->fd >= 0) load_close(s, c, 1);
        active--;
      } else {
        active -= slot_ended(s, c);
      }
    }
    /* A connection without progress for the peer timeout fails (the server hung). */
    uint64_t now = tb_mono_ns();
    for (long i = 0; i < o->connections; i++) {
      lconn *c = slots[i];
      if (c == NULL || c->fd < 0 || c->idle || now - c->last_progress_ns < stall_ns) continue;
      snprintf(r->err, sizeof(r->err), "the server sent nothing for %ld s (--peer-timeout)",
               o->peer_timeout);
      tb_fail_stage(r, TB_EXIT_HANDSHAKE, "load");
      load_error(s, c);
      active--;
    }
  }
  double wall_s = (double)(tb_mono_ns() - t0) / 1e9;
  double cpu_s = rusage_cpu_s(RUSAGE_SELF) - cpu0;
  if (s->interval_ns) {
    uint64_t end = tb_mono_ns() < s->deadline_ns ? tb_mono_ns() : s->deadline_ns;
    s->due_total = (end - t0 + s->interval_ns - 1) / s->interval_ns;
    if (o->requests > 0 && s->due_total > (uint64_t)o->requests)
      s->due_total = (uint64_t)o->requests;
  }
  for (long i = 0; i < o->connections; i++) {
    if (slots[i] != NULL) load_close(s, slots[i], 0);
    free(slots[i]);
    TB_ON(TB_SIDE_CLIENT, (r->ad->session_free(sessions[i]), TB_OK));
  }
  if (s->target) freeaddrinfo(s->target);
  if (s->latencies) fclose(s->latencies);
  close(s->ep);
  if (code == TB_EXIT_OK) write_load(j, s, o, wall_s, cpu_s);
  if (code == TB_EXIT_OK && s->errors > 0) {
    snprintf(r->err, sizeof(r->err), "%llu of %llu transactions failed; the first: %.190s",
             (unsigned long long)s->errors, (unsigned long long)s->started, s->first_error);
    code = tb_fail_stage(
        r, strstr(s->first_error, "negotiated") ? TB_EXIT_MISMATCH : TB_EXIT_HANDSHAKE, "load");
  }
  free(s), free(hist), free(slots), free(sessions);
  return code;
}
