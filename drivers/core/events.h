/*
 * Connections in an epoll event loop, as the serve and load scenarios hold them: each a
 * non-blocking TCP socket with its TLS connection and where it is in the exchange, taken
 * one step at a time as far as it can go without blocking.
 */
#ifndef TLSBENCH_EVENTS_H
#define TLSBENCH_EVENTS_H

#include "core.h"
#include "exchange.h"

#define TB_MAX_EVENTS 256
#define TB_TICK_MS 50

typedef enum tb_phase {
  TB_PHASE_CONNECTING,
  TB_PHASE_HANDSHAKE,
  TB_PHASE_REQUEST,  /* server: reading a request; client: writing one */
  TB_PHASE_RESPONSE, /* server: writing the response; client: reading it */
} tb_phase;

/* How far one step took a connection: it waits on its socket, it may go on, it ended in
 * order, or it failed (the run's err and stage say how). */
typedef enum tb_step { TB_STEP_WAIT, TB_STEP_DONE, TB_STEP_CLOSED, TB_STEP_ERROR } tb_step;

/* One TCP connection with its TLS connection and where it is in the exchange. */
typedef struct tb_evconn {
  int fd;
  void *conn;
  tb_phase phase;
  int want_read, want_write; /* what the last transport call would have blocked on */
  int events;                /* what epoll is watching for */
  int peer_gone;             /* the peer closed or reset the TCP connection */
  int idle;                  /* load --rate: waiting for its next scheduled transaction */
  uint64_t last_progress_ns;
  uint64_t transactions; /* completed on this connection */
  int expect_resumed;
  /* the request (server: as read; client: as written) */
  char req[TB_REQUEST_MAX + 1];
  size_t req_have, req_len;
  /* the response head and body (server: written; client: read and checked) */
  char head[TB_HEADER_MAX + 1];
  size_t head_len, head_off;
  uint64_t body_len, body_off;
  int keep_alive;
  /* client */
  int slot;
  uint64_t started_ns;
  uint64_t number; /* server: which accepted connection this is (1, 2, ...) */
} tb_evconn;

/* The transport an adapter gets for the connection: its socket, without blocking. */
tb_transport tb_evconn_transport(tb_evconn *c);

/* A failure of the exchange (exit 5): err = fmt with `what`. */
int tb_evconn_fail(tb_run *r, const char *stage, const char *fmt, const char *what);

/* Sets what epoll watches the connection for (adds it to `ep` the first time). */
void tb_watch(int ep, tb_evconn *c, int events);

/* After a step that returned "want I/O": TB_STEP_DONE to step again at once (the library
 * had buffered input), or TB_STEP_WAIT with epoll watching for what it waits on. */
tb_step tb_wait_for_io(int ep, tb_evconn *c, int *spins);

/* One handshake step of the side this process plays (r->local_role); *complete once the
 * handshake is done and its readback checked. */
tb_step tb_handshake_step(tb_run *r, int ep, tb_evconn *c, int *spins, int *complete);

/* Up to the hard limit: many connections and their peers need more than the usual 1024
 * descriptors on one machine. */
void tb_raise_fd_limit(void);

/* CPU time (user + system) of RUSAGE_SELF or RUSAGE_CHILDREN, in seconds. */
double tb_rusage_cpu_s(int who);

#endif /* TLSBENCH_EVENTS_H */
