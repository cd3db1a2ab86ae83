/* Internal interfaces of the driver core (not seen by adapters). */
#ifndef TLSBENCH_CORE_H
#define TLSBENCH_CORE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "tlsbench/driver.h"
#include "tlsbench/json.h"
#include "tlsbench/measure.h"
#include "tlsbench/names.h"
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

/* The --fault names (session.c), a table like those of names.h, without code points. */
extern const tb_name tb_fault_names[];

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

/* Every option, by its place in the option table (and in the usage text). */
typedef enum tb_option_id {
  /* every scenario */
  TB_OPT_ITERATIONS,
  TB_OPT_WARMUP,
  TB_OPT_VARIANT,
  TB_OPT_JSON,
  TB_OPT_DETERMINISTIC,
  /* the TLS scenarios */
  TB_OPT_TLS,
  TB_OPT_SUITE,
  TB_OPT_KX,
  TB_OPT_GROUP,
  TB_OPT_KEY_SHARE,
  TB_OPT_SIGALG,
  TB_OPT_CERT,
  TB_OPT_CHAIN,
  TB_OPT_AUTH,
  TB_OPT_WRONG_CA,
  TB_OPT_FAULT,
  TB_OPT_CERT_DIR,
  TB_OPT_RECORD_SIZE,
  TB_OPT_TRANSPORT,
  TB_OPT_IO,
  TB_OPT_RELEASE_BUFFERS,
  /* the scenarios that name them */
  TB_OPT_PAYLOAD,
  TB_OPT_BYTES,
  TB_OPT_AEAD,
  TB_OPT_ROLE,
  TB_OPT_CONNECT,
  TB_OPT_LISTEN,
  TB_OPT_PORT_FILE,
  TB_OPT_PEER_TIMEOUT,
  TB_OPT_PEER_RESUME,
  TB_OPT_BODY,
  TB_OPT_WORKERS,
  TB_OPT_DURATION,
  TB_OPT_CONNECTIONS,
  TB_OPT_PATTERN,
  TB_OPT_REQUESTS,
  TB_OPT_RATE,
  TB_OPT_REQUEST_SIZE,
  TB_OPT_LATENCIES,
  TB_OPT_THREADS,
  TB_OPT_CONTEXTS,
  TB_OPT_LOCKS,
  TB_N_OPTIONS,
  TB_OPT_END = -1, /* ends a scenario's list of options */
} tb_option_id;

/* --kx: how the keys are agreed and the sides authenticated. */
typedef enum tb_kx {
  TB_KX_UNSET = 0,   /* not given: what the TLS 1.2 suite says, else ecdhe */
  TB_KX_ECDHE = 1,   /* an (EC)DHE share, certificates authenticate (TLS 1.2: (EC)DHE suites) */
  TB_KX_RSA = 2,     /* TLS 1.2 static RSA: the premaster secret encrypted to the certificate */
  TB_KX_PSK = 3,     /* the pre-shared key alone: TLS 1.3 psk_ke, TLS 1.2 PSK suites */
  TB_KX_PSK_DHE = 4, /* the key and an (EC)DHE share: psk_dhe_ke, (EC)DHE-PSK suites */
} tb_kx;

/* --io: who reads and writes the connection's bytes. */
typedef enum tb_io {
  TB_IO_CALLBACKS = 0, /* the library calls tlsbench's transport callbacks */
  TB_IO_FD = 1,        /* the library's own socket I/O on the TCP connection */
  TB_IO_BIO = 2,       /* tlsbench's callbacks reached through the library's BIO layer */
} tb_io;

/* --contexts: what the threads of a --threads run share. */
typedef enum tb_contexts {
  TB_CONTEXTS_SHARED = 0,     /* one client and one server context for all (a server process) */
  TB_CONTEXTS_PER_THREAD = 1, /* a context pair per thread (nothing of the library's shared) */
} tb_contexts;

/* --pattern: what a load transaction is. */
typedef enum tb_pattern {
  TB_PATTERN_NEW = 0,       /* a new connection and full handshake */
  TB_PATTERN_RESUME = 1,    /* a new connection resuming the slot's newest session */
  TB_PATTERN_KEEPALIVE = 2, /* the next request on the slot's one connection */
} tb_pattern;

/* A scenario: one entry of the registry (scenario.h). */
typedef struct tb_scenario tb_scenario;

/* The parsed command line (options.h reads it; the table there says what each field is). */
typedef struct tb_options {
  const char *scenario;
  const char *variant; /* label for the output only */
  int tls;             /* 12 or 13 */
  const char *suite;
  int kx;                /* tb_kx; never TB_KX_UNSET once the options are read */
  const char *group;     /* NULL with --kx psk: no group is used */
  const char *key_share; /* --key-share: the client's first, rejected key share (HRR) */
  const char *sigalg;    /* NULL when nothing is signed (static RSA, PSK) */
  const char *cert;
  int chain;
  int auth; /* tb_auth */
  int wrong_ca;
  size_t record_size;
  size_t payload;
  uint64_t bytes; /* bulk: application bytes per iteration; peer and load: the response size */
  long iterations;
  long warmup;
  const char *aead; /* aead: one algorithm only (NULL = all) */
  /* Test hook (--fault NAME): misconfigure on purpose so that a check must fire. NULL in
   * every measurement; the runner never passes it. See apply_fault (session.c). */
  const char *fault;
  const char *cert_dir;
  int transport;       /* tb_link_kind */
  int io;              /* tb_io */
  int release_buffers; /* the library frees its record buffers while they are empty */
  /* peer: this process is one side (--role), the other is in another process. */
  int role;              /* tb_role */
  const char *connect;   /* client: HOST:PORT of the server */
  const char *listen;    /* server: HOST:PORT to listen on (port 0: the kernel's choice) */
  const char *port_file; /* server: where the listening port is written once it listens */
  long peer_timeout;     /* seconds without progress before the connection fails */
  int peer_resume;       /* connections after the first resume the previous session */
  int body_pattern;      /* client: the response body is the known pattern (checked) */
  /* serve and load */
  long workers;          /* serve: worker processes */
  long duration;         /* serve: seconds before it stops by itself; load: seconds of load */
  long connections;      /* load: concurrent connections */
  int pattern;           /* load: tb_pattern */
  long requests;         /* load: transactions in total (0: until --duration) */
  long rate;             /* load: transactions started per second (0: as fast as it can) */
  size_t request_size;   /* load: bytes per request (padded; 0: the shortest) */
  const char *latencies; /* load: file for every transaction's latency in ns */
  /* handshake and resume: threads running connections at once (threads.c), what they share
   * (tb_contexts), and whether the library's pthread lock calls are counted (locks.c). */
  long threads;
  int contexts;
  int locks;
  int json;
  /* --deterministic: the library draws its random values from the core's fixed stream
   * (instruction mode: the same work in every run). */
  int deterministic;
  /* Which options the user gave (not a default): a scenario's rules and its output need
   * to tell "--bytes 16777216" from nothing. */
  unsigned char given[TB_N_OPTIONS];
  /* The certificate files, from --cert-dir, --cert and --chain (TLS scenarios). */
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
  const tb_scenario *scenario;        /* the one running */
  const tb_scenario *const *registry; /* every scenario (info declares them) */
  tb_config client_cfg, server_cfg;
  void *client_ctx, *server_ctx;
  tb_link link; /* memory pair or loopback TCP (--transport) */
  char err[TB_ERR_LEN];
  char stage[96]; /* where it failed, e.g. "handshake (client)" */
  /* Two-process scenarios: the side this process plays (the other is another process's);
   * its readback is the one in the output. */
  tb_role local_role;
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
  /* --threads: the threads' record (threads.c); NULL while the run is one thread. */
  struct tb_threads *threads;
  /* Why this build cannot share a context between threads (tb_info.no_threads), or "". */
  char no_threads[TB_ERR_LEN];
  /* --locks: each side's lock calls over the measured iterations of every thread, and how
   * many handshakes (or other iterations) they were spread over. */
  tb_lock_counts locks[TB_SIDES];
  uint64_t locked_iterations;
  unsigned listen_port;         /* a server: the port it listens on (net.c) */
  uint64_t peer_bytes_received; /* peer: bytes received during the first handshake */
} tb_run;

/* run.c: the run's record (failures, samples, warnings) and the harness's own memory. */
/* Notes where the run failed; returns `code` (a TB_EXIT_*). */
int tb_fail_stage(tb_run *r, int code, const char *stage);
/* The series `name` the scenario declares (created on first use), with its declared
 * unit; NULL for a name the scenario does not declare, which tb_series_add refuses: what a
 * scenario emits cannot differ from what `info --json` says it emits. */
tb_series *tb_series_get(tb_run *r, const char *name);
int tb_series_add(tb_series *s, double value);
void tb_warn(tb_run *r, const char *warning);
/* A usage error: "tlsbench-driver: <message>" on stderr; returns -1. */
int tb_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Memory for the harness's own buffers, never charged to a side. */
unsigned char *tb_harness_alloc(size_t len);
void tb_harness_free(void *p);
double tb_ticks_to_ns(const tb_run *r, uint64_t ticks);

/* allocator.c: where $TLSBENCH_ALLOCATOR names the object malloc must come from (a
 * preloaded allocator's file name, or libc.so.6), the object it does come from into the
 * output's "allocator", and a mismatch (exit 4) when they differ. */
int tb_check_allocator(tb_run *r, tb_json *j);

/* fixed_random.c: --deterministic's stream of bytes, the same in every process (a
 * tb_random_fn for the adapter's derandomize). */
void tb_fixed_random(unsigned char *out, size_t len);

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
/* A thread of a --threads run (threads.c): its own link and, with `own_contexts`, its own
 * client and server contexts from the run's configurations; and their release. */
int tb_thread_setup(tb_run *r, int own_contexts);
void tb_thread_teardown(tb_run *r, int own_contexts);
/* One side's configuration from the options (certificates, the pinned offer). */
void tb_fill_config(tb_run *r, tb_config *cfg, tb_role role, int resumption);
/* A context for one side of a two-process scenario, with its heap start and ctx figures
 * into `heap` (NULL: not kept); the exit code of a failure names the side. */
int tb_side_context(tb_run *r, tb_role role, int resumption, tb_heap_report *heap);
/* The exit code for an adapter's status: unsupported (3) or a library failure (5). */
int tb_status_exit(tb_status st);
/* Checks one side's read-back parameters against the request. */
int tb_check_side(tb_run *r, const char *side, const tb_negotiated *n, int verifies,
                  int expect_resumed);
/* Checks that a --key-share run took the HelloRetryRequest's extra round trip. */
int tb_check_hello_retry(tb_run *r, uint64_t client_round_trips);
/* Checks the client's CertificateVerify scheme as one side read it back (mutual auth). */
int tb_check_client_sigalg(tb_run *r, const char *side, const tb_negotiated *n, int expect_resumed);
/* A usage error (-1) for resumption in a TLS 1.3 PSK run (`what` names the scenario's
 * resumption); 0 otherwise. */
int tb_refuse_tls13_psk_resumption(const tb_options *o, const char *what);
/* The tb_psk_mode of a --kx value (TB_PSK_NONE for the certificate key exchanges). */
int tb_psk_mode_of(int kx);
/* Whether the side playing `role` verifies its peer's chain under the run's --auth. */
int tb_verifies(const tb_options *o, tb_role role);

/* threads.c: the measured iterations of a one-process scenario, in this thread or in
 * --threads threads. `loop` runs one thread's warm-up and measured iterations on the run it
 * is given (its own connections, series and error): it calls tb_measured_begin before the
 * first measured iteration, stops early where tb_measured_stop says (another thread has
 * run all of its iterations), and calls tb_measured_end with the count it measured. */
typedef int (*tb_thread_loop)(tb_run *r);
int tb_run_threads(tb_run *r, tb_thread_loop loop);
void tb_measured_begin(tb_run *r);
int tb_measured_stop(const tb_run *r);
void tb_measured_end(tb_run *r, long iterations);
/* A usage error (-1) for --threads or --locks where they cannot run (instruction mode, an
 * architecture without the lock wrappers); 0 otherwise. */
int tb_check_threads(const tb_options *o);
/* The params of --threads, --contexts and --locks, where given (handshake, resume). */
void tb_write_thread_params(tb_json *j, const tb_options *o);

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
