/* load: a load generator over real TCP against a server in another process (the serve
 * scenario, nginx). One process, one epoll loop, C connections (--connections) in one of
 * three patterns (--pattern): `new` (a new connection and full handshake per transaction),
 * `resume` (the same, each resuming the slot's newest session) and `keepalive`
 * (transactions back to back on one connection per slot). It stops starting transactions
 * after --duration seconds or --requests transactions, and after the first error (a server
 * that died must not be hammered, nor hang the run). Transaction latency (from connect, or
 * from the request for keepalive, to the last response byte) goes into a log-linear
 * histogram of HdrHistogram's layout with 3 significant digits; its own CPU time says
 * whether the generator, rather than the server, was the limit. Every handshake is checked
 * against the request, and every response byte against the pattern. */
#define _GNU_SOURCE /* memmem, strcasestr */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "net.h"
#include "options.h"
#include "scenario.h"

static int socket_options(int fd) {
  int one = 1; /* flights leave as the library writes them */
  int flags = fcntl(fd, F_GETFL);
  return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) || flags < 0 ||
         fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

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
  tb_evconn **slots;
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
  unsigned char scratch[TB_IO_CHUNK];
} load_state;

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
static void make_idle(load_state *s, tb_evconn *c) {
  if (c->fd >= 0 && c->events != 0) epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
  c->events = 0;
  c->idle = 1;
}

static void load_close(load_state *s, tb_evconn *c, int orderly) {
  tb_run *r = s->r;
  if (c->conn != NULL) {
    if (orderly && r->ad->tls->close != NULL)
      TB_ON(TB_SIDE_CLIENT, r->ad->tls->close(c->conn, r->err));
    TB_ON(TB_SIDE_CLIENT, (r->ad->tls->conn_free(c->conn), TB_OK));
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

static void load_error(load_state *s, tb_evconn *c) {
  s->errors++;
  s->stopping = 1;
  if (s->first_error[0] == '\0') {
    snprintf(s->first_error, sizeof(s->first_error), "%s: %s (transaction %llu)", s->r->stage,
             s->r->err, (unsigned long long)s->started);
  }
  load_close(s, c, 0);
}

/* The request of one transaction, padded to --request-size with a header field. */
static void build_request(load_state *s, tb_evconn *c) {
  const tb_options *o = s->r->opt;
  int close_after = o->pattern != TB_PATTERN_KEEPALIVE;
  int len =
      snprintf(c->req, sizeof(c->req), "GET /%llu HTTP/1.1\r\nHost: localhost\r\n%s",
               (unsigned long long)tb_response_size(o), close_after ? "Connection: close\r\n" : "");
  size_t want = o->request_size;
  size_t pad_overhead = strlen("X-Pad: \r\n\r\n");
  if (want > (size_t)len + pad_overhead && want <= TB_REQUEST_MAX) {
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
static start_result load_start(load_state *s, tb_evconn *c) {
  tb_run *r = s->r;
  tb_pattern p = r->opt->pattern;
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
    c->phase = TB_PHASE_REQUEST;
    return START_NOW;
  }
  c->fd = socket(s->target->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (c->fd < 0 || socket_options(c->fd) != 0) {
    tb_evconn_fail(r, "connect", "socket: %s", strerror(errno));
    load_error(s, c);
    return START_NEVER;
  }
  int rc = connect(c->fd, s->target->ai_addr, s->target->ai_addrlen);
  if (rc != 0 && errno != EINPROGRESS) {
    tb_evconn_fail(r, "connect", "%s", strerror(errno));
    load_error(s, c);
    return START_NEVER;
  }
  void *session = p == TB_PATTERN_RESUME ? s->sessions[c->slot] : NULL;
  c->expect_resumed = session != NULL;
  tb_transport transport = tb_evconn_transport(c);
  tb_status st = TB_ON(TB_SIDE_CLIENT,
                       r->ad->tls->conn_new(r->client_ctx, &transport, session, &c->conn, r->err));
  if (st != TB_OK) {
    tb_fail_stage(r, st == TB_UNSUPPORTED ? TB_EXIT_UNSUPPORTED : TB_EXIT_HANDSHAKE, "connection");
    load_error(s, c);
    return START_NEVER;
  }
  c->phase = rc == 0 ? TB_PHASE_HANDSHAKE : TB_PHASE_CONNECTING;
  if (rc != 0) tb_watch(s->ep, c, EPOLLOUT);
  return START_NOW;
}

/* Checks the response head in c->head[0..head_len) and the body bytes that came with it. */
static int parse_response(load_state *s, tb_evconn *c, size_t head_end) {
  tb_run *r = s->r;
  c->head[head_end] = '\0';
  if (strncmp(c->head, "HTTP/1.", 7) != 0 || strncmp(c->head + 8, " 200", 4) != 0) {
    return tb_evconn_fail(r, "response", "not an HTTP 200 response: '%.60s'", c->head);
  }
  const char *length = strcasestr(c->head, "\nContent-Length: ");
  if (length == NULL ||
      strtoull(length + 17, NULL, 10) != (unsigned long long)tb_response_size(r->opt)) {
    return tb_evconn_fail(r, "response", "response without Content-Length: %s", "the asked size");
  }
  c->body_len = tb_response_size(r->opt);
  return TB_EXIT_OK;
}

static int check_body(load_state *s, tb_evconn *c, const unsigned char *buf, size_t n) {
  if (n > c->body_len - c->body_off) n = (size_t)(c->body_len - c->body_off);
  if (memcmp(buf, tb_pattern_at(c->body_off), n) != 0) {
    return tb_evconn_fail(s->r, "data check", "response body differs from the pattern%s", "");
  }
  c->body_off += n;
  s->body_bytes += n;
  return TB_EXIT_OK;
}

/* One transaction finished: count it and start the slot's next one. */
static tb_step load_finish(load_state *s, tb_evconn *c) {
  uint64_t latency = tb_mono_ns() - c->started_ns;
  hist_add(s->hist, latency);
  if (s->latencies) fprintf(s->latencies, "%llu\n", (unsigned long long)latency);
  s->transactions++;
  c->transactions++;
  tb_run *r = s->r;
  tb_pattern p = r->opt->pattern;
  if (p == TB_PATTERN_RESUME) {
    /* The newest session for the slot's next connection (TLS 1.3 tickets serve once). */
    void *next = NULL;
    if (TB_ON(TB_SIDE_CLIENT, r->ad->tls->session_get(c->conn, &next, r->err)) != TB_OK) {
      tb_fail_stage(r, TB_EXIT_HANDSHAKE, "session");
      return TB_STEP_ERROR;
    }
    TB_ON(TB_SIDE_CLIENT, (r->ad->tls->session_free(s->sessions[c->slot]), TB_OK));
    s->sessions[c->slot] = next;
  }
  if (p != TB_PATTERN_KEEPALIVE) load_close(s, c, 0);
  start_result next = load_start(s, c);
  if (next == START_LATER) return TB_STEP_WAIT;
  if (next == START_NEVER) {
    if (c->fd >= 0) load_close(s, c, 1); /* keepalive: the orderly end */
    return TB_STEP_CLOSED;
  }
  return TB_STEP_DONE;
}

static tb_step load_step(load_state *s, tb_evconn *c) {
  tb_run *r = s->r;
  int spins = 0;
  for (;;) {
    c->last_progress_ns = tb_mono_ns();
    if (c->phase == TB_PHASE_CONNECTING) {
      /* Connected once the socket is writable; SO_ERROR then says how. */
      struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
      if (poll(&pfd, 1, 0) == 0) return TB_STEP_WAIT;
      int soerr = 0;
      socklen_t len = sizeof(soerr);
      getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
      if (soerr == EINPROGRESS) return TB_STEP_WAIT;
      if (soerr != 0) {
        errno = soerr;
        tb_evconn_fail(r, "connect", "%s", strerror(soerr));
        return TB_STEP_ERROR;
      }
      c->phase = TB_PHASE_HANDSHAKE;
    } else if (c->phase == TB_PHASE_HANDSHAKE) {
      int complete = 0;
      tb_step res = tb_handshake_step(r, s->ep, c, &spins, &complete);
      if (res != TB_STEP_DONE) return res;
      if (!complete) continue;
      s->handshakes++;
      s->resumed += (uint64_t)c->expect_resumed;
      /* A keep-alive transaction is the request and its response: the connection's setup
       * is not part of its first transaction's latency. */
      if (r->opt->pattern == TB_PATTERN_KEEPALIVE && s->interval_ns == 0)
        c->started_ns = tb_mono_ns();
      c->phase = TB_PHASE_REQUEST;
    } else if (c->phase == TB_PHASE_REQUEST) {
      if (c->req_have == c->req_len) {
        c->phase = TB_PHASE_RESPONSE;
        continue;
      }
      size_t done = 0;
      c->want_read = c->want_write = 0;
      tb_status st =
          TB_ON(TB_SIDE_CLIENT, r->ad->tls->write(c->conn, (unsigned char *)c->req + c->req_have,
                                                  c->req_len - c->req_have, &done, r->err));
      c->req_have += done;
      if (st == TB_WANT_IO && done == 0) {
        tb_step res = tb_wait_for_io(s->ep, c, &spins);
        if (res != TB_STEP_DONE) return res;
      } else if (st != TB_OK && st != TB_WANT_IO) {
        tb_fail_stage(r, TB_EXIT_HANDSHAKE, "request");
        return TB_STEP_ERROR;
      }
    } else { /* TB_PHASE_RESPONSE */
      if (c->body_off == c->body_len) {
        tb_step res = load_finish(s, c);
        if (res != TB_STEP_DONE) return res;
        continue;
      }
      int in_head = c->body_len == UINT64_MAX;
      unsigned char *buf = in_head ? (unsigned char *)c->head + c->head_len : s->scratch;
      size_t cap = in_head ? TB_HEADER_MAX - c->head_len : sizeof(s->scratch);
      if (cap == 0) {
        tb_evconn_fail(r, "response", "response header longer than %s bytes", "8192");
        return TB_STEP_ERROR;
      }
      size_t done = 0;
      c->want_read = c->want_write = 0;
      tb_status st = TB_ON(TB_SIDE_CLIENT, r->ad->tls->read(c->conn, buf, cap, &done, r->err));
      if (done > 0 && in_head) {
        c->head_len += done;
        char *end = memmem(c->head, c->head_len, "\r\n\r\n", 4);
        if (end != NULL) {
          size_t head_end = (size_t)(end - c->head) + 4;
          size_t extra = c->head_len - head_end;
          /* parse_response ends the head with a NUL where the body's first byte may be
           * (nginx writes head and body in one record): keep that byte. */
          char first = c->head[head_end];
          if (parse_response(s, c, head_end) != TB_EXIT_OK) return TB_STEP_ERROR;
          c->head[head_end] = first;
          if (extra > 0 && check_body(s, c, (unsigned char *)end + 4, extra) != TB_EXIT_OK)
            return TB_STEP_ERROR;
        }
        continue;
      }
      if (done > 0) {
        if (check_body(s, c, buf, done) != TB_EXIT_OK) return TB_STEP_ERROR;
        continue;
      }
      if (st == TB_WANT_IO || st == TB_OK) {
        tb_step res = tb_wait_for_io(s->ep, c, &spins);
        if (res != TB_STEP_DONE) return res;
        continue;
      }
      if (st == TB_CLOSED) {
        tb_evconn_fail(r, "response", "the server closed the connection after %s",
                       "part of a response");
        return TB_STEP_ERROR;
      }
      tb_fail_stage(r, TB_EXIT_HANDSHAKE, "response");
      return TB_STEP_ERROR;
    }
  }
}

/* Takes a slot's transactions as far as they can go now; 1 when the slot is done (its
 * load is over, or it failed: the error is counted). */
static int slot_ended(load_state *s, tb_evconn *c) {
  tb_step res = load_step(s, c);
  if (res == TB_STEP_ERROR) load_error(s, c);
  return res == TB_STEP_ERROR || res == TB_STEP_CLOSED;
}

static void write_load(tb_json *j, const load_state *s, const tb_options *o, double wall_s,
                       double cpu_s) {
  const histogram *h = s->hist;
  tb_json_object(j, "load");
  tb_json_str(j, "pattern", tb_choice_name(TB_OPT_PATTERN, o->pattern));
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

static int run(tb_run *r, tb_json *j) {
  const tb_options *o = r->opt;
  r->local_role = TB_CLIENT;
  tb_raise_fd_limit();
  tb_pattern_init();
  int code = tb_side_context(r, TB_CLIENT, o->pattern == TB_PATTERN_RESUME, NULL);
  if (code != TB_EXIT_OK) return code;
  load_state *s = calloc(1, sizeof(*s));
  histogram *hist = calloc(1, sizeof(*hist));
  tb_evconn **slots = calloc((size_t)o->connections, sizeof(*slots));
  void **sessions = calloc((size_t)o->connections, sizeof(*sessions));
  if (s == NULL || hist == NULL || slots == NULL || sessions == NULL) {
    free(s), free(hist), free(slots), free(sessions);
    return tb_evconn_fail(r, "load", "out of memory for %s connections", "the");
  }
  s->r = r;
  s->hist = hist;
  s->slots = slots;
  s->sessions = sessions;
  code = tb_resolve_address(r, o->connect, 0, &s->target);
  if (code == TB_EXIT_OK && o->latencies != NULL &&
      (s->latencies = fopen(o->latencies, "w")) == NULL)
    code = tb_evconn_fail(r, "load", "cannot write --latencies: %s", strerror(errno));
  s->ep = epoll_create1(EPOLL_CLOEXEC);
  double cpu0 = tb_rusage_cpu_s(RUSAGE_SELF);
  uint64_t t0 = tb_mono_ns();
  s->deadline_ns = t0 + (uint64_t)o->duration * 1000000000ull;
  s->interval_ns = o->rate > 0 ? (uint64_t)(1e9 / (double)o->rate) : 0;
  s->next_due_ns = t0;
  uint64_t stall_ns = (uint64_t)o->peer_timeout * 1000000000ull;
  long active = 0;
  for (long i = 0; code == TB_EXIT_OK && i < o->connections; i++) {
    tb_evconn *c = calloc(1, sizeof(*c));
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
  struct epoll_event events[TB_MAX_EVENTS];
  while (code == TB_EXIT_OK && active > 0) {
    /* With --rate, wake up when the next transaction is due (epoll_pwait2: ns, not ms). */
    /* Only while a slot is idle: when every slot is busy (the server fell behind) or the
     * load is draining, a due time in the past must not turn the wait into a busy loop. */
    uint64_t wait_ns = (uint64_t)TB_TICK_MS * 1000000u, now0 = tb_mono_ns();
    int any_idle = 0;
    for (long i = 0; s->interval_ns && !s->stopping && !any_idle && i < o->connections; i++)
      any_idle = slots[i] != NULL && slots[i]->idle;
    if (any_idle && s->next_due_ns < now0 + wait_ns)
      wait_ns = s->next_due_ns > now0 ? s->next_due_ns - now0 : 0;
    struct timespec timeout = {(time_t)(wait_ns / 1000000000u), (long)(wait_ns % 1000000000u)};
    int n = epoll_pwait2(s->ep, events, TB_MAX_EVENTS, &timeout, NULL);
    for (int i = 0; i < n; i++) {
      tb_evconn *c = events[i].data.ptr;
      if (c->fd < 0) continue;
      active -= slot_ended(s, c);
    }
    /* Idle slots whose transactions have come due start them (or end, when the load is). */
    for (long i = 0; s->interval_ns && i < o->connections; i++) {
      tb_evconn *c = slots[i];
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
      tb_evconn *c = slots[i];
      if (c == NULL || c->fd < 0 || c->idle || now - c->last_progress_ns < stall_ns) continue;
      snprintf(r->err, sizeof(r->err), "the server sent nothing for %ld s (--peer-timeout)",
               o->peer_timeout);
      tb_fail_stage(r, TB_EXIT_HANDSHAKE, "load");
      load_error(s, c);
      active--;
    }
  }
  double wall_s = (double)(tb_mono_ns() - t0) / 1e9;
  double cpu_s = tb_rusage_cpu_s(RUSAGE_SELF) - cpu0;
  if (s->interval_ns) {
    uint64_t end = tb_mono_ns() < s->deadline_ns ? tb_mono_ns() : s->deadline_ns;
    s->due_total = (end - t0 + s->interval_ns - 1) / s->interval_ns;
    if (o->requests > 0 && s->due_total > (uint64_t)o->requests)
      s->due_total = (uint64_t)o->requests;
  }
  for (long i = 0; i < o->connections; i++) {
    if (slots[i] != NULL) load_close(s, slots[i], 0);
    free(slots[i]);
    TB_ON(TB_SIDE_CLIENT, (r->ad->tls->session_free(sessions[i]), TB_OK));
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

static int check(tb_options *o) {
  if (o->connect == NULL) return tb_usage_error("load needs --connect HOST:PORT (a server)");
  if (o->key_share != NULL) {
    return tb_usage_error("--key-share is checked on the wire by the peer scenario");
  }
  return o->pattern == TB_PATTERN_RESUME ? tb_refuse_tls13_psk_resumption(o, "--pattern resume")
                                         : 0;
}

static void params(tb_json *j, const tb_options *o) {
  tb_json_str(j, "pattern", tb_choice_name(TB_OPT_PATTERN, o->pattern));
  tb_json_u64(j, "connections", (uint64_t)o->connections);
  tb_json_u64(j, "duration", (uint64_t)o->duration);
  if (o->requests) tb_json_u64(j, "requests", (uint64_t)o->requests);
  if (o->rate) tb_json_u64(j, "rate", (uint64_t)o->rate);
  if (o->request_size) tb_json_u64(j, "request_size", o->request_size);
}

static const tb_option_id options[] = {TB_OPT_CONNECT,      TB_OPT_PEER_TIMEOUT, TB_OPT_CONNECTIONS,
                                       TB_OPT_PATTERN,      TB_OPT_REQUESTS,     TB_OPT_RATE,
                                       TB_OPT_REQUEST_SIZE, TB_OPT_LATENCIES,    TB_OPT_DURATION,
                                       TB_OPT_PAYLOAD,      TB_OPT_BYTES,        TB_OPT_END};
static const tb_default defaults[] = {{TB_OPT_DURATION, "10"},
                                      {TB_OPT_PATTERN, "keepalive"},
                                      {TB_OPT_PAYLOAD, "1024"},
                                      {TB_OPT_END, NULL}};
static const tb_series_decl series[] = {{NULL, NULL, NULL}};

const tb_scenario tb_scenario_load = {
    .name = "load",
    .summary =
        "a load generator of --connections connections against a server in another "
        "process; latency histogram and throughput under \"load\"",
    .flags = TB_SC_TLS | TB_SC_TWO_PROCESS,
    .options = options,
    .defaults = defaults,
    .series = series,
    .check = check,
    .params = params,
    .run = run,
};
