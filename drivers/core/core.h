/* Internal interfaces of the driver core (not seen by adapters). */
#ifndef TLSBENCH_CORE_H
#define TLSBENCH_CORE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "tlsbench/driver.h"
#include "tlsbench/json.h"
#include "tlsbench/measure.h"
#include "tlsbench/transport.h"

/* Exit codes of the driver (documented in the README). */
enum {
  TB_EXIT_OK = 0,
  TB_EXIT_ERROR = 1, /* the harness itself failed (out of memory, missing file) */
  TB_EXIT_USAGE = 2,
  TB_EXIT_UNSUPPORTED = 3,
  TB_EXIT_MISMATCH = 4,  /* negotiated != requested */
  TB_EXIT_HANDSHAKE = 5, /* a library call failed (handshake, context, connection) */
  TB_EXIT_DATA = 6,      /* application data or an AEAD known answer was wrong */
};

/* A name tlsbench accepts, with its IANA code point where it has one (names.c). */
typedef struct tb_name {
  const char *name;
  unsigned code;
  int tls; /* cipher suites: 12 or 13 */
} tb_name;

extern const tb_name tb_suite_names[], tb_group_names[], tb_sigalg_names[], tb_aead_names[],
    tb_cert_kinds[];
const tb_name *tb_name_find(const tb_name *table, const char *name);

int tb_fault_known(const char *name);

#define TB_N_SCENARIOS 9
extern const char *const tb_scenario_names[TB_N_SCENARIOS];

/* Ranges of the numeric options (also declared by `info --json`). Record sizes: RFC 8449's
 * record_size_limit allows 64..16384 bytes of plaintext; a library may accept fewer
 * (wolfSSL's max_fragment_length: 512..4096), which is that library's "unsupported". */
#define TB_RECORD_SIZE_MIN 64
#define TB_RECORD_SIZE_MAX 16384
#define TB_CHAIN_MAX 3
#define TB_ITERATIONS_MAX 100000000L
#define TB_WARMUP_MAX 10000000L
#define TB_PAYLOAD_MAX (64L * 1024 * 1024)
#define TB_BYTES_MAX (1L << 40)

typedef struct tb_options {
  const char *scenario;
  const char *variant; /* label for the output only */
  int tls;             /* 12 or 13 */
  const char *suite;
  const char *group;
  const char *key_share; /* --key-share: the client's first, rejected key share (HRR) */
  const char *sigalg;
  const char *cert;
  int chain;
  tb_auth auth;
  int wrong_ca;
  size_t record_size;
  size_t payload;
  uint64_t bytes;  /* bulk: application bytes per iteration; peer: the response size */
  int bytes_given; /* --bytes was given (peer: a download) */
  long iterations;
  long warmup;
  const char *aead; /* aead: one algorithm only (NULL = all) */
  /* Test hook (--fault NAME): misconfigure on purpose so that a check must fire. NULL in
   * every measurement; the runner never passes it. See tb_apply_fault (session.c). */
  const char *fault;
  const char *cert_dir;
  tb_link_kind transport;
  int io_fd;  /* --io fd: the library's own socket I/O (TCP only) instead of callbacks */
  int io_bio; /* --io bio: the callbacks reached through the library's BIO layer */
  /* peer: this process is one side (--role), the other is in another process. */
  tb_role role;
  const char *connect;   /* client: HOST:PORT of the server */
  const char *listen;    /* server: HOST:PORT to listen on (port 0: the kernel's choice) */
  const char *port_file; /* server: where the listening port is written once it listens */
  long peer_timeout;     /* seconds without progress before the connection fails */
  int peer_resume;       /* connections after the first resume the previous session */
  int body_pattern;      /* client: the response body is the known pattern (checked) */
  /* serve and load (load.c) */
  long workers;          /* serve: worker processes */
  long duration;         /* serve: seconds before it stops by itself; load: seconds of load */
  long connections;      /* load: concurrent connections */
  const char *pattern;   /* load: new, resume or keepalive */
  long requests;         /* load: transactions in total (0: until --duration) */
  long rate;             /* load: transactions started per second (0: as fast as it can) */
  size_t request_size;   /* load: bytes per request (padded; 0: the shortest) */
  const char *latencies; /* load: file for every transaction's latency in ns */
  int json;
  char ca_file[PATH_MAX];
  char server_chain[PATH_MAX], server_key[PATH_MAX];
  char client_chain[PATH_MAX], client_key[PATH_MAX];
} tb_options;

#define TB_MAX_WARNINGS 16
#define TB_MAX_SERIES 8

/* One named series of samples, e.g. "client_cpu_ns". */
typedef struct tb_series {
  const char *name;
  const char *unit;
  /* > 0 for a series whose every sample is one TSC interval (or a batch's mean of them):
   * the step its values move by, so that `compare` does not take a step for a change. */
  double resolution_ns;
  double *values;
  size_t n, cap;
} tb_series;

/* Heap figures of one side for one connection, as defined in the README. */
typedef struct tb_heap_report {
  int valid;
  uint64_t start, ctx, peak, retained;
  uint64_t start_usable, ctx_usable, peak_usable, retained_usable;
  uint64_t handshake_allocs;
  uint64_t stack; /* stack high-water of the side's calls during the connection, bytes */
  /* A library's own memory pool (adapter pool_use): what the connection held of it. */
  int pool_valid;
  uint64_t pool_peak, pool_retained;
} tb_heap_report;

/* What one handshake put on the wire (session.c), and the client's round trips until it
 * could send application data. */
typedef struct tb_wire_report {
  int valid;
  tb_wire wire;
  uint64_t client_rtt;
} tb_wire_report;

typedef struct tb_run {
  const tb_adapter *ad;
  const tb_options *opt;
  tb_config client_cfg, server_cfg;
  void *client_ctx, *server_ctx;
  tb_link link; /* memory pair or loopback TCP (--transport) */
  char err[TB_ERR_LEN];
  char stage[96]; /* where it failed, e.g. "handshake (client)" */
  tb_negotiated client_neg, server_neg;
  int have_negotiated;
  tb_heap_report heap_client, heap_server;
  tb_wire_report wire_full, wire_resumed;
  /* A later (warm) connection on the same contexts: what each further connection costs. */
  tb_heap_report heap_client_warm, heap_server_warm;
  tb_heap_counters heap_global;
  tb_series series[TB_MAX_SERIES];
  int n_series;
  const char *warnings[TB_MAX_WARNINGS];
  int n_warnings;
  double tsc_hz;
  unsigned peer_port;           /* peer server: the port it listened on */
  uint64_t peer_bytes_received; /* peer: bytes received during the first handshake */
  tb_json *extra_json; /* scenario-specific output (aead results) written by the scenario */
} tb_run;

/* session.c: contexts, connections, handshakes, checks. Return a TB_EXIT_* code. */
int tb_setup_contexts(tb_run *r, int resumption);
void tb_teardown(tb_run *r);
typedef struct tb_conn_pair {
  void *client, *server;
} tb_conn_pair;
/* Creates both connections (client resuming `session` if not NULL) and completes the
 * handshake; adds each side's CPU ns to *client_ns / *server_ns when not NULL. */
int tb_connect(tb_run *r, void *session, tb_conn_pair *conns, uint64_t *client_ns,
               uint64_t *server_ns);
void tb_disconnect(tb_run *r, tb_conn_pair *conns);
/* Reads back and checks what both sides negotiated against the request. */
int tb_check_negotiated(tb_run *r, tb_conn_pair *conns, int expect_resumed);
/* Sends len bytes client -> server (or back), checked byte by byte on arrival. */
int tb_transfer(tb_run *r, tb_conn_pair *conns, int to_server, const unsigned char *data,
                size_t len, unsigned char *scratch, uint64_t *send_ticks, uint64_t *recv_ticks,
                uint64_t *send_allocs, uint64_t *recv_allocs);
int tb_fail_stage(tb_run *r, int code, const char *stage);
/* One side's configuration from the options (certificates, the pinned offer). */
void tb_fill_config(tb_run *r, tb_config *cfg, tb_role role, int resumption);
/* Checks one side's read-back parameters against the request. */
int tb_check_side(tb_run *r, const char *side, const tb_negotiated *n, int verifies,
                  int expect_resumed);
/* Checks the client's CertificateVerify scheme as one side read it back (mutual auth). */
int tb_check_hello_retry(tb_run *r, uint64_t client_round_trips);
int tb_check_client_sigalg(tb_run *r, const char *side, const tb_negotiated *n, int expect_resumed);

/* scenarios.c */
/* Heap of one side's first connection: peak from connection creation to handshake end,
 * what it retains, and its allocations (`before`: the counters at its start). */
void tb_heap_after_handshake(tb_side side, tb_heap_report *h, const tb_heap_counters *before);
int tb_scenario_handshake(tb_run *r);
int tb_scenario_resume(tb_run *r);
int tb_scenario_records(tb_run *r);
int tb_scenario_bulk(tb_run *r);
int tb_scenario_aead(tb_run *r, tb_json *j);
int tb_scenario_info(tb_run *r, tb_json *j);
/* peer.c: one side here, the other in another process over TCP. */
int tb_scenario_peer(tb_run *r);
struct addrinfo;
/* "HOST:PORT" to an IPv4 address (passive: to listen on); a usage error otherwise. */
int tb_resolve_address(tb_run *r, const char *hostport, int passive, struct addrinfo **out);
/* Writes r->peer_port to --port-file (if given), atomically; -1 with errno on failure. */
int tb_write_port_file(const tb_run *r);
/* The response body's byte pattern: tb_pattern_at(offset) points at 64 KiB of it that
 * start at `offset` of a body. */
void tb_pattern_init(void);
const unsigned char *tb_pattern_at(uint64_t offset);
/* The response size a client asks for: --bytes for a download (beyond --payload's range),
 * else --payload (peer and load). */
uint64_t tb_response_size(const tb_options *o);
/* load.c: a server of many connections, and a load generator (both over TCP). */
int tb_scenario_serve(tb_run *r, tb_json *j);
int tb_scenario_load(tb_run *r, tb_json *j);

/* series helpers (main.c) */
tb_series *tb_series_get(tb_run *r, const char *name, const char *unit);
int tb_series_add(tb_series *s, double value);
void tb_warn(tb_run *r, const char *warning);

/* Calls an adapter function on behalf of `side`: allocations are charged to it. */
#define TB_ON(side, expr)                      \
  ({                                           \
    tb_side tb_prev_ = tb_heap_set_side(side); \
    if (tb_stack_active) tb_stack_enter(side); \
    tb_status tb_st_ = (expr);                 \
    if (tb_stack_active) tb_stack_leave(side); \
    tb_heap_set_side(tb_prev_);                \
    tb_st_;                                    \
  })

/* The same for a measured call: adds the thread CPU time of the call to *(acc) when acc is
 * not NULL, and brackets it for the deterministic (callgrind) mode. */
#define TB_ON_TIMED(side, acc, expr)                  \
  ({                                                  \
    tb_side tb_prev_ = tb_heap_set_side(side);        \
    if ((acc) != NULL) tb_collect(side);              \
    if (tb_stack_active) tb_stack_enter(side);        \
    uint64_t tb_t0_ = tb_thread_cpu_ns();             \
    tb_status tb_st_ = (expr);                        \
    uint64_t tb_dt_ = tb_thread_cpu_ns() - tb_t0_;    \
    if (tb_stack_active) tb_stack_leave(side);        \
    uint64_t tb_ovh_ = tb_thread_cpu_overhead();      \
    tb_dt_ = tb_dt_ > tb_ovh_ ? tb_dt_ - tb_ovh_ : 0; \
    if ((acc) != NULL) {                              \
      tb_collect(side);                               \
      *(acc) += tb_dt_;                               \
    }                                                 \
    tb_heap_set_side(tb_prev_);                       \
    tb_st_;                                           \
  })

#endif /* TLSBENCH_CORE_H */
