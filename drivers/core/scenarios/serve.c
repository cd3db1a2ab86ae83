/* serve: a TLS server that holds many connections at once, over real TCP, for a load
 * generator in another process (the load scenario, h2load) to measure.
 *
 * W worker processes (--workers, default 1) share one listening socket; each runs an
 * epoll event loop over non-blocking connections: a worker per core is nginx's model, the
 * reference server beside it. --threads T is the other model (HAProxy's, nxweb's): one
 * process, T event-loop threads sharing one server context and so its session cache and
 * ticket keys; a build that is not thread-safe refuses it (mbedTLS without
 * MBEDTLS_THREADING_C, for one). An event loop rather than a thread per
 * connection because the adapter contract is non-blocking already (TB_WANT_IO), so one
 * loop holds 256 connections on one core, as real servers do.
 *
 * It speaks enough HTTP/1.1 for real clients (h2load --h1, curl): "GET /N" is answered
 * with N bytes of the pattern (exchange.c), kept alive unless the request says
 * "Connection: close" or is HTTP/1.0. It runs until SIGTERM or SIGINT, or --duration
 * seconds, its own bound; then it reports connections, handshakes, transactions, errors,
 * the CPU time of all workers and, in the heap driver, the heap each open connection holds.
 * Every handshake is checked against the request, as in every scenario. */
#define _GNU_SOURCE /* accept4, memmem, strcasestr */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "net.h"
#include "scenario.h"

#define WORKERS_MAX 64

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
  int measure_heap; /* heap per connection: with one event loop in the process only */
  serve_stats stats;
  uint64_t open;
  uint64_t heap_base; /* the server side's live heap with no connection open */
} server_state;

static void server_error(server_state *s, tb_evconn *c) {
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

static void server_close(server_state *s, tb_evconn *c, int orderly) {
  tb_run *r = s->r;
  /* After a complete response the close_notify is a courtesy: a client that already
   * closed is not an error. */
  if (orderly && r->ad->tls->close != NULL)
    TB_ON(TB_SIDE_SERVER, r->ad->tls->close(c->conn, r->err));
  TB_ON(TB_SIDE_SERVER, (r->ad->tls->conn_free(c->conn), TB_OK));
  close(c->fd); /* also leaves the epoll set */
  free(c);
  s->open--;
}

/* A complete request in c->req: parse it and set up the response. */
static int parse_request(tb_run *r, tb_evconn *c, size_t end) {
  uint64_t n;
  if (tb_requested_size(c->req, (uint64_t)r->opt->payload, &n) != 0) {
    return tb_evconn_fail(r, "request", "not a GET request: '%.40s'", c->req);
  }
  char saved = c->req[end];
  c->req[end] = '\0';
  const char *version = strstr(c->req, " HTTP/1.");
  c->keep_alive =
      version != NULL && version[8] == '1' && strcasestr(c->req, "\nConnection: close") == NULL;
  c->req[end] = saved;
  c->head_len = tb_response_head(c->head, sizeof(c->head), 1, n, !c->keep_alive);
  c->head_off = 0;
  c->body_len = n;
  c->body_off = 0;
  /* Pipelined bytes after this request stay for the next one. */
  memmove(c->req, c->req + end, c->req_have - end);
  c->req_have -= end;
  return TB_EXIT_OK;
}

static tb_step serve_step(server_state *s, tb_evconn *c) {
  tb_run *r = s->r;
  int spins = 0;
  for (;;) {
    c->last_progress_ns = tb_mono_ns();
    if (c->phase == TB_PHASE_HANDSHAKE) {
      int complete = 0;
      tb_step res = tb_handshake_step(r, s->ep, c, &spins, &complete);
      if (res != TB_STEP_DONE) return res;
      if (!complete) continue;
      s->stats.handshakes++;
      s->stats.resumed += (uint64_t)c->expect_resumed;
      if (!s->stats.have_negotiated) {
        s->stats.negotiated = r->server_neg;
        s->stats.have_negotiated = 1;
      }
      if (s->open > s->stats.max_open) s->stats.max_open = s->open;
      c->phase = TB_PHASE_REQUEST;
    } else if (c->phase == TB_PHASE_REQUEST) {
      char *end = c->req_have >= 4 ? memmem(c->req, c->req_have, "\r\n\r\n", 4) : NULL;
      if (end != NULL) {
        if (parse_request(r, c, (size_t)(end - c->req) + 4) != TB_EXIT_OK) return TB_STEP_ERROR;
        c->phase = TB_PHASE_RESPONSE;
        continue;
      }
      if (c->req_have == TB_REQUEST_MAX) {
        return tb_evconn_fail(r, "request", "request longer than %s bytes", "4096"), TB_STEP_ERROR;
      }
      size_t done = 0;
      c->want_read = c->want_write = 0;
      tb_status st =
          TB_ON(TB_SIDE_SERVER, r->ad->tls->read(c->conn, (unsigned char *)c->req + c->req_have,
                                                 TB_REQUEST_MAX - c->req_have, &done, r->err));
      c->req_have += done;
      if (done > 0) continue;
      /* TB_OK with nothing read: the library consumed a record without application data
       * (a ticket, say); read again. */
      if (st == TB_WANT_IO || st == TB_OK) {
        tb_step res = tb_wait_for_io(s->ep, c, &spins);
        if (res != TB_STEP_DONE) return res;
        continue;
      }
      /* The client ended the connection between requests (HTTP allows it), with or without
       * a close_notify; anything else is an error. */
      if (st == TB_CLOSED || (c->peer_gone && c->req_have == 0)) return TB_STEP_CLOSED;
      tb_fail_stage(r, TB_EXIT_HANDSHAKE, "request");
      return TB_STEP_ERROR;
    } else { /* TB_PHASE_RESPONSE */
      const unsigned char *buf;
      size_t len;
      if (c->head_off < c->head_len) {
        buf = (const unsigned char *)c->head + c->head_off;
        len = c->head_len - c->head_off;
      } else if (c->body_off < c->body_len) {
        buf = tb_pattern_at(c->body_off);
        len = c->body_len - c->body_off < TB_IO_CHUNK ? (size_t)(c->body_len - c->body_off)
                                                      : TB_IO_CHUNK;
      } else {
        c->transactions++;
        s->stats.transactions++;
        if (s->measure_heap && s->open == s->stats.max_open) {
          /* The heap of all open connections with the most open, after a transaction:
           * with keep-alive connections, the steady state (no handshake under way). With
           * new connections, whatever the session cache accumulated would be charged to
           * the open ones: the runner measures heap with keep-alive only. */
          tb_heap_counters hc;
          tb_heap_get(TB_SIDE_SERVER, &hc);
          uint64_t above = hc.live > s->heap_base ? hc.live - s->heap_base : 0;
          s->stats.heap_per_connection = (double)above / (double)s->open;
        }
        if (!c->keep_alive) return TB_STEP_CLOSED;
        c->phase = TB_PHASE_REQUEST;
        continue;
      }
      size_t done = 0;
      c->want_read = c->want_write = 0;
      tb_status st = TB_ON(TB_SIDE_SERVER, r->ad->tls->write(c->conn, buf, len, &done, r->err));
      s->stats.bytes_sent += done;
      if (c->head_off < c->head_len) {
        c->head_off += done;
      } else {
        c->body_off += done;
      }
      if (st == TB_WANT_IO && done == 0) {
        tb_step res = tb_wait_for_io(s->ep, c, &spins);
        if (res != TB_STEP_DONE) return res;
      } else if (st != TB_OK && st != TB_WANT_IO) {
        tb_fail_stage(r, TB_EXIT_HANDSHAKE, "response");
        return TB_STEP_ERROR;
      }
    }
  }
}

/* Takes a connection as far as it can go now; an error is counted, an ended connection
 * closed (in order when it ended well). */
static void serve_connection(server_state *s, tb_evconn *c) {
  tb_step res = serve_step(s, c);
  if (res == TB_STEP_ERROR) server_error(s, c);
  if (res == TB_STEP_ERROR || res == TB_STEP_CLOSED) server_close(s, c, res == TB_STEP_CLOSED);
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
    tb_evconn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
      close(fd);
      tb_evconn_fail(r, "accept", "out of memory%s", "");
      server_error(s, NULL);
      continue;
    }
    c->fd = fd;
    c->phase = TB_PHASE_HANDSHAKE;
    c->number = ++s->stats.connections;
    s->open++;
    tb_transport transport = tb_evconn_transport(c);
    tb_status st = TB_ON(TB_SIDE_SERVER,
                         r->ad->tls->conn_new(r->server_ctx, &transport, NULL, &c->conn, r->err));
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

/* One event loop until asked to stop (or --duration); its figures in s->stats. */
static void serve_loop(server_state *s, long duration_s) {
  s->stats.heap_per_connection = -1;
  if (s->measure_heap) {
    tb_heap_counters hc;
    tb_heap_get(TB_SIDE_SERVER, &hc);
    s->heap_base = hc.live;
  }
  s->ep = epoll_create1(EPOLL_CLOEXEC);
  /* EPOLLEXCLUSIVE: one loop wakes per new connection, not all of them. */
  struct epoll_event lev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = NULL};
  epoll_ctl(s->ep, EPOLL_CTL_ADD, s->listener, &lev);
  uint64_t deadline = tb_mono_ns() + (uint64_t)duration_s * 1000000000ull;
  struct epoll_event events[TB_MAX_EVENTS];
  while (!stop_requested && tb_mono_ns() < deadline) {
    int n = epoll_wait(s->ep, events, TB_MAX_EVENTS, TB_TICK_MS);
    for (int i = 0; i < n; i++) {
      tb_evconn *c = events[i].data.ptr;
      if (c == NULL) {
        accept_one(s);
        continue;
      }
      serve_connection(s, c);
    }
  }
}

/* One worker process: its event loop, then its figures to `out`. Open connections are left
 * to the kernel: the worker exits right after reporting. */
static void serve_worker(tb_run *r, int listener, long duration_s, int out) {
  server_state s = {.r = r, .listener = listener, .measure_heap = tb_heap_accounting};
  serve_loop(&s, duration_s);
  ssize_t w = write(out, &s.stats, sizeof(s.stats));
  (void)w;
  _exit(0);
}

static void add_stats(serve_stats *total, const serve_stats *one) {
  total->connections += one->connections;
  total->handshakes += one->handshakes;
  total->resumed += one->resumed;
  total->transactions += one->transactions;
  total->errors += one->errors;
  total->aborted += one->aborted;
  total->bytes_sent += one->bytes_sent;
  total->max_open += one->max_open;
  if (one->heap_per_connection > total->heap_per_connection)
    total->heap_per_connection = one->heap_per_connection;
  if (total->first_error[0] == '\0' && one->first_error[0] != '\0')
    memcpy(total->first_error, one->first_error, sizeof(total->first_error));
  if (!total->have_negotiated && one->have_negotiated) {
    total->have_negotiated = 1;
    total->negotiated = one->negotiated;
  }
}

/* How the event loops ran: the figures summed, their CPU time, and why they fell short. */
typedef struct serve_outcome {
  serve_stats total;
  long loops;       /* worker processes or threads that ran */
  double cpu_s;     /* theirs: the workers' (reaped children) or this process's threads' */
  char failed[128]; /* "" or why not all ran or one ended by itself */
} serve_outcome;

/* --workers: W forked processes, each an event loop; SIGTERM / SIGINT (blocked in
 * `stop_set`), --duration or a worker that ends by itself stops them. */
static void serve_processes(tb_run *r, int listener, const sigset_t *stop_set, const sigset_t *old,
                            serve_outcome *out) {
  const tb_options *o = r->opt;
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    snprintf(out->failed, sizeof(out->failed), "pipe: %s", strerror(errno));
    return;
  }
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
      sigprocmask(SIG_SETMASK, old, NULL);
      close(pipe_fds[0]);
      serve_worker(r, listener, o->duration, pipe_fds[1]);
    }
    pids[workers] = pid;
  }
  if (workers < o->workers) snprintf(out->failed, sizeof(out->failed), "fork: %s", strerror(errno));
  close(pipe_fds[1]);
  /* Wait for a stop signal, the duration, or a worker that ended by itself (a crash); not at
   * all when a fork failed (the workers that exist are stopped and it is reported). */
  uint64_t deadline = workers < o->workers ? t0 : t0 + (uint64_t)o->duration * 1000000000ull;
  int died = 0;
  while (workers > 0 && !died && tb_mono_ns() < deadline) {
    struct timespec tick = {0, TB_TICK_MS * 1000000L};
    int sig = sigtimedwait(stop_set, NULL, &tick);
    if (sig == SIGTERM || sig == SIGINT) break;
    int status;
    for (int i = 0; i < workers; i++) {
      if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        pids[i] = -1;
        /* Exit 0: the worker reached --duration and reported (on its own clock). */
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
        died = 1;
        snprintf(out->failed, sizeof(out->failed), "a worker ended by itself (%s %d)",
                 WIFSIGNALED(status) ? "signal" : "exit status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      }
    }
  }
  for (int i = 0; i < workers; i++) {
    if (pids[i] > 0) kill(pids[i], SIGTERM);
  }
  serve_stats one;
  while (read(pipe_fds[0], &one, sizeof(one)) == (ssize_t)sizeof(one)) add_stats(&out->total, &one);
  close(pipe_fds[0]);
  for (int i = 0; i < workers; i++) {
    if (pids[i] > 0) waitpid(pids[i], NULL, 0);
  }
  out->loops = workers;
  out->cpu_s = tb_rusage_cpu_s(RUSAGE_CHILDREN);
}

/* One event-loop thread of --threads: a copy of the run (its own error and read-back) that
 * shares the one server context. */
typedef struct serve_thread {
  tb_run run;
  server_state s;
  pthread_t id;
} serve_thread;

static void *serve_thread_main(void *arg) {
  serve_thread *t = arg;
  serve_loop(&t->s, t->run.opt->duration);
  return NULL;
}

/* --threads: T event loops in this process until SIGTERM / SIGINT or --duration; their
 * figures summed once they are joined. No heap per connection: the server side's heap is
 * every loop's at once. */
static void serve_threads(tb_run *r, int listener, const sigset_t *stop_set, serve_outcome *out) {
  long n = r->opt->threads;
  serve_thread *threads = (serve_thread *)tb_harness_alloc(sizeof(*threads) * (size_t)n);
  if (threads == NULL) {
    snprintf(out->failed, sizeof(out->failed), "out of memory");
    return;
  }
  double cpu0 = tb_rusage_cpu_s(RUSAGE_SELF);
  uint64_t t0 = tb_mono_ns();
  long started = 0;
  for (; started < n; started++) {
    serve_thread *t = &threads[started];
    memset(t, 0, sizeof(*t));
    t->run = *r;
    t->s.r = &t->run;
    t->s.listener = listener;
    if (pthread_create(&t->id, NULL, serve_thread_main, t) != 0) break;
  }
  if (started < n) {
    snprintf(out->failed, sizeof(out->failed), "could start %ld of %ld threads", started, n);
  } else {
    uint64_t deadline = t0 + (uint64_t)r->opt->duration * 1000000000ull;
    while (tb_mono_ns() < deadline) {
      struct timespec tick = {0, TB_TICK_MS * 1000000L};
      int sig = sigtimedwait(stop_set, NULL, &tick);
      if (sig == SIGTERM || sig == SIGINT) break;
    }
  }
  stop_requested = 1;
  for (long i = 0; i < started; i++) {
    pthread_join(threads[i].id, NULL);
    add_stats(&out->total, &threads[i].s.stats);
    close(threads[i].s.ep);
  }
  out->loops = started;
  out->cpu_s = tb_rusage_cpu_s(RUSAGE_SELF) - cpu0;
  tb_harness_free(threads);
}

static int run(tb_run *r, tb_json *j) {
  const tb_options *o = r->opt;
  r->local_role = TB_SERVER;
  if (o->threads > 1 && r->no_threads[0] != '\0') {
    snprintf(r->err, sizeof(r->err), "%s", r->no_threads);
    return tb_fail_stage(r, TB_EXIT_UNSUPPORTED, "threads");
  }
  tb_raise_fd_limit();
  tb_pattern_init();
  int code = tb_side_context(r, TB_SERVER, 1, NULL);
  /* A deep backlog: 256 clients connecting at once must queue, not be refused. */
  int listener = -1;
  if (code == TB_EXIT_OK) code = tb_listen(r, 1, 4096, &listener);
  if (code != TB_EXIT_OK) return code;
  /* SIGTERM / SIGINT stop the server; blocked here until the workers exist, so that no
   * signal is lost in between. */
  sigset_t stop_set, old;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGTERM);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &stop_set, &old);
  serve_outcome out = {.total = {.heap_per_connection = -1}};
  uint64_t t0 = tb_mono_ns();
  if (o->threads > 1) {
    serve_threads(r, listener, &stop_set, &out);
  } else {
    serve_processes(r, listener, &stop_set, &old, &out);
  }
  double wall_s = (double)(tb_mono_ns() - t0) / 1e9;
  close(listener);
  sigprocmask(SIG_SETMASK, &old, NULL);
  const serve_stats *total = &out.total;
  if (total->have_negotiated) {
    r->server_neg = total->negotiated;
    r->have_negotiated = 1;
  }
  tb_json_u64(j, "port", r->listen_port);
  tb_json_object(j, "serve");
  tb_json_u64(j, o->threads > 1 ? "threads" : "workers", (uint64_t)out.loops);
  tb_json_u64(j, "connections", total->connections);
  tb_json_u64(j, "handshakes", total->handshakes);
  tb_json_u64(j, "resumed", total->resumed);
  tb_json_u64(j, "transactions", total->transactions);
  tb_json_u64(j, "errors", total->errors);
  tb_json_u64(j, "aborted", total->aborted);
  tb_json_str(j, "first_error", total->first_error[0] ? total->first_error : NULL);
  tb_json_u64(j, "bytes_sent", total->bytes_sent);
  tb_json_double(j, "cpu_s", out.cpu_s);
  tb_json_double(j, "wall_s", wall_s);
  tb_json_u64(j, "max_open", total->max_open);
  if (total->heap_per_connection >= 0) {
    tb_json_double(j, "heap_per_connection", total->heap_per_connection);
  } else {
    tb_json_null(j, "heap_per_connection");
  }
  tb_json_object_end(j);
  if (out.failed[0] != '\0') return tb_evconn_fail(r, "workers", "%s", out.failed);
  /* Errors on single connections are the clients' to judge (a client may hang up early);
   * the server reports them and still exits 0. */
  return TB_EXIT_OK;
}

static int check(tb_options *o) {
  if (o->key_share != NULL) {
    return tb_usage_error("--key-share is checked on the wire by the peer scenario");
  }
  if (o->workers > 1 && o->threads > 1) {
    return tb_usage_error(
        "--workers and --threads are the two server models: choose one "
        "(W processes of one event loop, or one process of T)");
  }
  return 0;
}

static void params(tb_json *j, const tb_options *o) {
  tb_json_u64(j, "workers", (uint64_t)o->workers);
  /* Only when given, so that the worker points keep their stored params. */
  if (o->given[TB_OPT_THREADS]) tb_json_u64(j, "threads", (uint64_t)o->threads);
}

static const tb_option_id options[] = {TB_OPT_LISTEN,  TB_OPT_PORT_FILE, TB_OPT_WORKERS,
                                       TB_OPT_THREADS, TB_OPT_DURATION,  TB_OPT_PAYLOAD,
                                       TB_OPT_END};
static const tb_default defaults[] = {{TB_OPT_LISTEN, "127.0.0.1:0"},
                                      {TB_OPT_DURATION, "600"},
                                      {TB_OPT_PAYLOAD, "1024"},
                                      {TB_OPT_END, NULL}};
static const tb_series_decl series[] = {{NULL, NULL, NULL}};

const tb_scenario tb_scenario_serve = {
    .name = "serve",
    .summary =
        "a TLS server of many connections (HTTP/1.1, keep-alive) for another process's "
        "load; results under \"serve\"",
    .flags = TB_SC_TLS | TB_SC_TWO_PROCESS | TB_SC_HEAP,
    .options = options,
    .defaults = defaults,
    .series = series,
    .check = check,
    .params = params,
    .run = run,
};
