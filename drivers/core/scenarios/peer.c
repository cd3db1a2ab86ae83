/* The `peer` scenario: one side of a TLS connection in this process, the other side in
 * another process: a tlsbench driver of the same or another library (the interop matrix),
 * or a real program (openssl s_server / s_client, gnutls-serv / gnutls-cli). They talk over
 * a real TCP connection, a new one per tlsbench connection.
 *
 * The application exchange is a minimal HTTP/1.0 request and response, so that real
 * programs can be either end: the client sends "GET /N HTTP/1.0", the server answers
 * "200" with N bytes of a known pattern (Content-Length: N) and closes. Against another
 * tlsbench driver (or nginx serving the pattern) every byte is checked; against another real
 * server (--body any) any 200 response is accepted, since that server chooses its body.
 *
 * Each process measures its own side only: CPU time in its library calls, wall time
 * (client: from connect to handshake done and to the first response byte; server: from
 * accept to handshake done), heap (the process holds one side, so its figures need no
 * attribution between sides: the independent check of the in-process side tags), and
 * what it sent and received on the wire. Each side checks what it negotiated against the
 * request; the runner compares the two sides' readbacks.
 *
 * Sockets block, with a receive and send timeout (--peer-timeout): a peer that stops
 * answering fails the run with "timed out" instead of hanging it. */
#define _GNU_SOURCE /* memmem, accept4 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "connection.h"
#include "exchange.h"
#include "net.h"
#include "options.h"
#include "scenario.h"

/* One end of the TCP connection, with what crossed it. */
typedef struct peer_socket {
  int fd;
  int timed_out;
  int last_was_send;         /* something the peer must answer went out since the last receive */
  tb_wire wire;              /* wire.client or wire.server: what this side sent */
  int server;                /* which member of `wire` this side is */
  uint64_t bytes_received;   /* everything received on this connection */
  uint64_t flights_received; /* runs of receives not interrupted by a send */
} peer_socket;

/* Only ChangeCipherSpec records (20, version, length 1, value 1)? TLS 1.3's middlebox
 * compatibility CCS goes out in the middle of the peer's flight (GnuTLS sends it right
 * after the ServerHello): it asks nothing of the peer, so it starts no round trip. */
static int only_change_cipher_spec(const unsigned char *buf, size_t len) {
  if (len == 0 || len % 6 != 0) return 0;
  for (size_t i = 0; i < len; i += 6) {
    if (buf[i] != 20 || buf[i + 1] != 3 || buf[i + 3] != 0 || buf[i + 4] != 1) return 0;
  }
  return 1;
}

static long sock_send(void *io, const unsigned char *buf, size_t len) {
  peer_socket *s = io;
  for (;;) {
    ssize_t n = send(s->fd, buf, len, MSG_NOSIGNAL);
    if (n > 0) {
      tb_wire_count_sent(&s->wire, s->server, buf, (size_t)n);
      if (!only_change_cipher_spec(buf, (size_t)n)) s->last_was_send = 1;
      return (long)n;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) s->timed_out = 1;
    return TB_IO_ERROR;
  }
}

static long sock_recv(void *io, unsigned char *buf, size_t len) {
  peer_socket *s = io;
  for (;;) {
    ssize_t n = recv(s->fd, buf, len, 0);
    if (n > 0) {
      if (s->last_was_send || s->flights_received == 0) s->flights_received++;
      s->last_was_send = 0;
      if (s->flights_received <= TB_WIRE_FLIGHTS)
        s->wire.received[s->flights_received - 1] += (uint64_t)n;
      s->wire.last_sender = s->server ? 1 : 2; /* the peer's turn: our next send is a flight */
      s->bytes_received += (uint64_t)n;
      return (long)n;
    }
    if (n == 0) return 0; /* the peer closed */
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) s->timed_out = 1;
    return TB_IO_ERROR;
  }
}

/* Blocking with a bound: every send and receive gives up after the peer timeout. */
static int set_socket_options(int fd, long timeout_s) {
  struct timeval tv = {.tv_sec = timeout_s, .tv_usec = 0};
  int one = 1; /* flights leave as the library writes them, as a real peer sees them */
  return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
         setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
         setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* A connected socket to --connect; refused connections are retried until the peer timeout
 * (a real program's server may still be starting), only for the first connection. */
static int open_connection(tb_run *r, int first, int *fd_out) {
  struct addrinfo *ai;
  int code = tb_resolve_address(r, r->opt->connect, 0, &ai);
  if (code != TB_EXIT_OK) return code;
  uint64_t deadline = tb_mono_ns() + (uint64_t)r->opt->peer_timeout * 1000000000ull;
  for (;;) {
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    if (set_socket_options(fd, r->opt->peer_timeout) != 0) {
      close(fd);
      break;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      freeaddrinfo(ai);
      *fd_out = fd;
      return TB_EXIT_OK;
    }
    int refused = errno == ECONNREFUSED;
    close(fd);
    if (!first || !refused || tb_mono_ns() > deadline) break;
    struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  int saved = errno;
  freeaddrinfo(ai);
  errno = saved;
  return tb_sys_fail(r, "connect", r->opt->connect);
}

/* ------------------------------------------------------------------------- one side */

static tb_side own_side(const tb_run *r) {
  return r->opt->role == TB_SERVER ? TB_SIDE_SERVER : TB_SIDE_CLIENT;
}

/* The failure of a library call, or the transport's timeout behind it. */
static int io_fail(tb_run *r, peer_socket *s, tb_status st, const char *stage) {
  if (s->timed_out) {
    snprintf(r->err, sizeof(r->err), "the peer sent nothing for %ld s (--peer-timeout)",
             r->opt->peer_timeout);
    return tb_fail_stage(r, TB_EXIT_HANDSHAKE, stage);
  }
  return tb_fail_stage(r, tb_status_exit(st), stage);
}

static int write_all(tb_run *r, peer_socket *s, void *conn, const unsigned char *buf, size_t len,
                     uint64_t *cpu_ns) {
  size_t sent = 0;
  while (sent < len) {
    size_t done = 0;
    tb_status st = TB_ON_TIMED(own_side(r), cpu_ns,
                               r->ad->tls->write(conn, buf + sent, len - sent, &done, r->err));
    if (st != TB_OK && st != TB_WANT_IO) return io_fail(r, s, st, "write");
    sent += done;
  }
  return TB_EXIT_OK;
}

/* Reads application data until `until` returns nonzero or the peer closes. *closed is set
 * when the peer ended the connection (close_notify or TCP close). */
static int read_some(tb_run *r, peer_socket *s, void *conn, unsigned char *buf, size_t cap,
                     size_t *have, int *closed, uint64_t *cpu_ns) {
  size_t done = 0;
  tb_status st = TB_ON_TIMED(own_side(r), cpu_ns,
                             r->ad->tls->read(conn, buf + *have, cap - *have, &done, r->err));
  *have += done;
  if (st == TB_CLOSED || (st != TB_OK && st != TB_WANT_IO && !s->timed_out && done == 0 &&
                          s->bytes_received > 0 && *have > 0)) {
    /* A close_notify, or a TCP close without one after data (many servers do that). */
    *closed = 1;
    return TB_EXIT_OK;
  }
  if (st != TB_OK && st != TB_WANT_IO) return io_fail(r, s, st, "read");
  return TB_EXIT_OK;
}

/* What the server does on one connection after the handshake: read the request, answer.
 * *body_cpu_ns: CPU time in the library's write calls for the body. */
static int serve_request(tb_run *r, peer_socket *s, void *conn, uint64_t *cpu_ns,
                         uint64_t *body_cpu_ns) {
  unsigned char req[TB_REQUEST_MAX + 1];
  size_t have = 0;
  int closed = 0;
  while (!closed && (have < 4 || memmem(req, have, "\r\n\r\n", 4) == NULL)) {
    if (have == TB_REQUEST_MAX) {
      snprintf(r->err, sizeof(r->err), "request longer than %d bytes", TB_REQUEST_MAX);
      return tb_fail_stage(r, TB_EXIT_DATA, "request");
    }
    int code = read_some(r, s, conn, req, TB_REQUEST_MAX, &have, &closed, cpu_ns);
    if (code != TB_EXIT_OK) return code;
  }
  req[have] = '\0';
  uint64_t n;
  if (tb_requested_size((char *)req, tb_response_size(r->opt), &n) != 0) {
    snprintf(r->err, sizeof(r->err), "not a GET request: '%.40s'", req);
    return tb_fail_stage(r, TB_EXIT_DATA, "request");
  }
  char head[256];
  size_t head_len = tb_response_head(head, sizeof(head), 0, n, 0);
  int code = write_all(r, s, conn, (const unsigned char *)head, head_len, cpu_ns);
  for (uint64_t off = 0; off < n && code == TB_EXIT_OK; off += TB_IO_CHUNK) {
    size_t len = n - off < TB_IO_CHUNK ? (size_t)(n - off) : TB_IO_CHUNK;
    code = write_all(r, s, conn, tb_pattern_at(off), len, body_cpu_ns);
  }
  return code;
}

/* What the client does after the handshake: ask for the response size and check the
 * answer. *first_byte_ns / *last_byte_ns: monotonic times of the first and the last
 * response byte; *body_cpu_ns: CPU time in the library's read calls for the body. */
static int fetch_response(tb_run *r, peer_socket *s, void *conn, uint64_t *cpu_ns,
                          uint64_t *first_byte_ns, uint64_t *last_byte_ns, uint64_t *body_cpu_ns) {
  char req[128];
  uint64_t size = tb_response_size(r->opt);
  int req_len = snprintf(req, sizeof(req), "GET /%llu HTTP/1.0\r\nHost: localhost\r\n\r\n",
                         (unsigned long long)size);
  int code = write_all(r, s, conn, (const unsigned char *)req, (size_t)req_len, cpu_ns);
  if (code != TB_EXIT_OK) return code;
  unsigned char head[TB_HEADER_MAX + 1];
  size_t have = 0;
  int closed = 0;
  unsigned char *body = NULL;
  while (!closed && (body = memmem(head, have, "\r\n\r\n", 4)) == NULL) {
    if (have == TB_HEADER_MAX) {
      snprintf(r->err, sizeof(r->err), "response header longer than %d bytes", TB_HEADER_MAX);
      return tb_fail_stage(r, TB_EXIT_DATA, "response");
    }
    code = read_some(r, s, conn, head, TB_HEADER_MAX, &have, &closed, cpu_ns);
    if (code != TB_EXIT_OK) return code;
    if (have > 0 && *first_byte_ns == 0) *first_byte_ns = tb_mono_ns();
  }
  head[have] = '\0';
  if (body == NULL || strncmp((char *)head, "HTTP/1.", 7) != 0 ||
      strncmp((char *)head + 8, " 200", 4) != 0) {
    snprintf(r->err, sizeof(r->err), "not an HTTP 200 response: '%.60s'", head);
    return tb_fail_stage(r, TB_EXIT_DATA, "response");
  }
  body += 4;
  size_t body_have = have - (size_t)(body - head);
  const char *length_field = strstr((char *)head, "Content-Length: ");
  int checked = r->opt->body_pattern;
  if (checked && (length_field == NULL || strtoull(length_field + 16, NULL, 10) != size)) {
    snprintf(r->err, sizeof(r->err), "response without Content-Length: %llu",
             (unsigned long long)size);
    return tb_fail_stage(r, TB_EXIT_DATA, "response");
  }
  uint64_t want = length_field ? strtoull(length_field + 16, NULL, 10) : UINT64_MAX;
  uint64_t got = 0;
  static unsigned char buf[TB_IO_CHUNK];
  /* The body: what came with the header, then reads until Content-Length or the close. */
  for (;;) {
    if (checked && body_have > 0 && memcmp(body, tb_pattern_at(got), body_have) != 0) {
      size_t at = 0;
      while (body[at] == tb_pattern_at(got)[at]) at++;
      snprintf(r->err, sizeof(r->err), "response byte %llu of %llu differs",
               (unsigned long long)(got + at), (unsigned long long)want);
      return tb_fail_stage(r, TB_EXIT_DATA, "data check");
    }
    got += body_have;
    if (got >= want || closed) break;
    size_t n = 0;
    code = read_some(r, s, conn, buf, sizeof(buf), &n, &closed, body_cpu_ns);
    if (code != TB_EXIT_OK) return code;
    body = buf;
    body_have = n;
  }
  *last_byte_ns = tb_mono_ns();
  if (want != UINT64_MAX && got != want) {
    snprintf(r->err, sizeof(r->err), "%llu of %llu response bytes arrived", (unsigned long long)got,
             (unsigned long long)want);
    return tb_fail_stage(r, TB_EXIT_DATA, "data check");
  }
  return TB_EXIT_OK;
}

/* Every connection of the run, one after the other. */
static int connections(tb_run *r) {
  const tb_options *o = r->opt;
  int server = o->role == TB_SERVER;
  tb_side side = own_side(r);
  r->local_role = o->role;
  tb_heap_report *heap = server ? &r->heap_server : &r->heap_client;
  int code = tb_side_context(r, o->role, o->peer_resume, heap);
  if (code != TB_EXIT_OK) return code;
  void *ctx = server ? r->server_ctx : r->client_ctx;
  /* Listening (and the port file) only once the context exists: a server that cannot honour
   * the request exits before anyone connects. */
  int listener = -1;
  if (server) code = tb_listen(r, 0, 16, &listener);
  if (code != TB_EXIT_OK) return code;

  tb_series *cpu = tb_series_get(r, server ? "server_cpu_ns" : "client_cpu_ns");
  tb_series *wall = tb_series_get(r, server ? "server_wall_ns" : "client_wall_ns");
  tb_series *first_byte = server ? NULL : tb_series_get(r, "client_first_byte_ns");
  /* A download (--bytes): the body's throughput and CPU cost per GB on each side. */
  int download_run = o->given[TB_OPT_BYTES];
  tb_series *download = download_run && !server ? tb_series_get(r, "download_MBps") : NULL;
  tb_series *body_cpu =
      download_run ? tb_series_get(r, server ? "server_cpu_s_per_GB" : "client_cpu_s_per_GB")
                   : NULL;
  tb_pattern_init();
  void *session = NULL;
  long connection = 0;
  for (long i = 0; i < o->warmup + o->iterations && code == TB_EXIT_OK; i++) {
    connection = i;
    peer_socket s = {.fd = -1, .server = server};
    int expect_resumed = o->peer_resume && i > 0;
    uint64_t t0 = tb_mono_ns();
    if (server) {
      s.fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
      if (s.fd < 0) {
        code =
            errno == EAGAIN || errno == EWOULDBLOCK
                ? (snprintf(r->err, sizeof(r->err),
                            "no client connected within %ld s (--peer-timeout)", o->peer_timeout),
                   tb_fail_stage(r, TB_EXIT_HANDSHAKE, "accept"))
                : tb_sys_fail(r, "accept", "accept");
        break;
      }
      t0 = tb_mono_ns();
      if (set_socket_options(s.fd, o->peer_timeout) != 0)
        code = tb_sys_fail(r, "accept", "options");
    } else {
      code = open_connection(r, i == 0, &s.fd);
    }
    tb_transport transport = {&s, sock_send, sock_recv, -1, 0};
    void *conn = NULL;
    tb_status st;
    uint64_t cpu_ns = 0, handshake_done = 0, first_byte_ns = 0, last_byte_ns = 0, body_ns = 0;
    tb_heap_counters before;
    if (i == 0) {
      tb_heap_reset_peak(side);
      tb_heap_get(side, &before);
      tb_stack_measure(1);
    }
    if (code == TB_EXIT_OK) {
      st =
          TB_ON_TIMED(side, &cpu_ns, r->ad->tls->conn_new(ctx, &transport, session, &conn, r->err));
      if (st != TB_OK) code = tb_fail_stage(r, tb_status_exit(st), "connection");
    }
    for (int round = 0; code == TB_EXIT_OK; round++) {
      st = TB_ON_TIMED(side, &cpu_ns, r->ad->tls->handshake(conn, r->err));
      if (st == TB_OK) break;
      if (st != TB_WANT_IO) code = io_fail(r, &s, st, "handshake");
      if (round == 1000) {
        snprintf(r->err, sizeof(r->err), "no progress after 1000 handshake steps");
        code = tb_fail_stage(r, TB_EXIT_HANDSHAKE, "handshake");
      }
    }
    if (code == TB_EXIT_OK) {
      handshake_done = tb_mono_ns();
      if (i == 0) {
        tb_stack_measure(0);
        tb_heap_after_handshake(side, heap, &before); /* the whole process is this side */
        heap->stack = tb_stack_high_water(side);
      }
      tb_negotiated *n = server ? &r->server_neg : &r->client_neg;
      st = TB_ON(side, r->ad->tls->negotiated(conn, n, r->err));
      if (st != TB_OK) code = tb_fail_stage(r, tb_status_exit(st), "negotiated");
      if (code == TB_EXIT_OK)
        code = tb_check_side(r, server ? "server" : "client", n, tb_verifies(o, o->role),
                             expect_resumed);
      if (code == TB_EXIT_OK)
        code = tb_check_client_sigalg(r, server ? "server" : "client", n, expect_resumed);
      r->have_negotiated = 1;
      if (code == TB_EXIT_OK && i == 0) {
        tb_wire_report *w = &r->wire_full;
        *w = (tb_wire_report){1, s.wire, server ? 0 : s.flights_received};
        r->peer_bytes_received = s.bytes_received;
      }
      if (code == TB_EXIT_OK && i == 0 && !server)
        code = tb_check_hello_retry(r, s.flights_received);
    }
    if (code == TB_EXIT_OK) {
      /* The request and response are not part of the handshake's CPU figure. */
      code = server ? serve_request(r, &s, conn, NULL, &body_ns)
                    : fetch_response(r, &s, conn, NULL, &first_byte_ns, &last_byte_ns, &body_ns);
    }
    if (code == TB_EXIT_OK && !server && o->peer_resume) {
      /* The newest session for the next connection (TLS 1.3 tickets serve one use). */
      void *next = NULL;
      st = TB_ON(side, r->ad->tls->session_get(conn, &next, r->err));
      if (st != TB_OK) code = tb_fail_stage(r, tb_status_exit(st), "session");
      TB_ON(side, (r->ad->tls->session_free(session), TB_OK));
      session = next;
    }
    if (code == TB_EXIT_OK && server && r->ad->tls->close != NULL) {
      /* The server ends each connection in order (HTTP/1.0: the response ends there). */
      st = TB_ON(side, r->ad->tls->close(conn, r->err));
      if (st != TB_OK) code = io_fail(r, &s, st, "close");
    }
    if (conn != NULL) TB_ON(side, (r->ad->tls->conn_free(conn), TB_OK));
    if (s.fd >= 0) close(s.fd);
    if (code != TB_EXIT_OK || i < o->warmup) continue;
    double gb = (double)tb_response_size(o) / 1e9;
    double body_s = (double)(last_byte_ns - first_byte_ns) / 1e9;
    if (tb_series_add(cpu, (double)cpu_ns) || tb_series_add(wall, (double)(handshake_done - t0)) ||
        (first_byte && tb_series_add(first_byte, (double)(first_byte_ns - t0))) ||
        (download && tb_series_add(download, gb * 1e3 / (body_s > 0 ? body_s : 1e-9))) ||
        (body_cpu && tb_series_add(body_cpu, (double)body_ns / 1e9 / gb))) {
      code = tb_fail_stage(r, TB_EXIT_ERROR, "samples");
    }
  }
  TB_ON(side, (r->ad->tls->session_free(session), TB_OK));
  if (listener >= 0) close(listener);
  if (code != TB_EXIT_OK && connection > 0) {
    /* Which connection failed: the first (full handshake) or a later (resumed) one. */
    size_t used = strlen(r->stage);
    snprintf(r->stage + used, sizeof(r->stage) - used, " (connection %ld of %ld)", connection + 1,
             o->warmup + o->iterations);
  }
  return code;
}

static int run(tb_run *r, tb_json *j) {
  int code = connections(r);
  if (r->opt->role == TB_SERVER && r->listen_port) tb_json_u64(j, "port", r->listen_port);
  return code;
}

static int check(tb_options *o) {
  if (!o->given[TB_OPT_ROLE]) return tb_usage_error("peer needs --role client or --role server");
  if (o->role == TB_CLIENT && o->connect == NULL) {
    return tb_usage_error("peer --role client needs --connect HOST:PORT");
  }
  if (o->role == TB_SERVER && o->listen == NULL) o->listen = "127.0.0.1:0";
  return o->peer_resume ? tb_refuse_tls13_psk_resumption(o, "--peer-resume") : 0;
}

static void params(tb_json *j, const tb_options *o) {
  tb_json_str(j, "role", tb_choice_name(TB_OPT_ROLE, o->role));
  tb_json_bool(j, "resume", o->peer_resume);
  if (o->role == TB_CLIENT) tb_json_str(j, "body", tb_choice_name(TB_OPT_BODY, o->body_pattern));
}

static const tb_option_id options[] = {
    TB_OPT_ROLE,        TB_OPT_CONNECT, TB_OPT_LISTEN,  TB_OPT_PORT_FILE, TB_OPT_PEER_TIMEOUT,
    TB_OPT_PEER_RESUME, TB_OPT_BODY,    TB_OPT_PAYLOAD, TB_OPT_BYTES,     TB_OPT_END};
static const tb_default defaults[] = {
    {TB_OPT_ITERATIONS, "10"}, {TB_OPT_WARMUP, "1"}, {TB_OPT_PAYLOAD, "1024"}, {TB_OPT_END, NULL}};
static const tb_series_decl series[] = {{"client_cpu_ns", "ns", "--role client"},
                                        {"client_wall_ns", "ns", "--role client"},
                                        {"client_first_byte_ns", "ns", "--role client"},
                                        {"download_MBps", "MB/s", "--role client --bytes"},
                                        {"client_cpu_s_per_GB", "s/GB", "--role client --bytes"},
                                        {"server_cpu_ns", "ns", "--role server"},
                                        {"server_wall_ns", "ns", "--role server"},
                                        {"server_cpu_s_per_GB", "s/GB", "--role server --bytes"},
                                        {NULL, NULL, NULL}};

const tb_scenario tb_scenario_peer = {
    .name = "peer",
    .summary =
        "one side of each connection (--role) here, the other in another process (a "
        "driver or a real program) over TCP; an HTTP/1.0 GET of --payload (or --bytes) "
        "bytes per connection",
    .flags = TB_SC_TLS | TB_SC_TWO_PROCESS | TB_SC_HEAP,
    .options = options,
    .defaults = defaults,
    .series = series,
    .check = check,
    .params = params,
    .run = run,
};
