/*
 * The option table: for every option, what it takes, where it goes, who takes it, its
 * default and its help. The command line (cmdline.c), the usage text, the output's
 * parameters (output.c) and `info --json` (declare.c) are all made from it.
 */
#include "options.h"

#include <stddef.h>

#define FIELD(f) offsetof(tb_options, f)

static const tb_choice tls_choices[] = {{"1.2", 12}, {"1.3", 13}, {NULL, 0}};
static const tb_choice kx_choices[] = {{"ecdhe", TB_KX_ECDHE},
                                       {"rsa", TB_KX_RSA},
                                       {"psk", TB_KX_PSK},
                                       {"psk_dhe", TB_KX_PSK_DHE},
                                       {NULL, 0}};
static const tb_choice auth_choices[] = {
    {"none", TB_AUTH_NONE}, {"server", TB_AUTH_SERVER}, {"mutual", TB_AUTH_MUTUAL}, {NULL, 0}};
static const tb_choice transport_choices[] = {
    {"memory", TB_LINK_MEMORY}, {"tcp", TB_LINK_TCP}, {NULL, 0}};
static const tb_choice io_choices[] = {
    {"callbacks", TB_IO_CALLBACKS}, {"fd", TB_IO_FD}, {"bio", TB_IO_BIO}, {NULL, 0}};
static const tb_choice role_choices[] = {{"client", TB_CLIENT}, {"server", TB_SERVER}, {NULL, 0}};
static const tb_choice body_choices[] = {{"pattern", 1}, {"any", 0}, {NULL, 0}};
static const tb_choice contexts_choices[] = {
    {"shared", TB_CONTEXTS_SHARED}, {"per-thread", TB_CONTEXTS_PER_THREAD}, {NULL, 0}};
static const tb_choice pattern_choices[] = {{"new", TB_PATTERN_NEW},
                                            {"resume", TB_PATTERN_RESUME},
                                            {"keepalive", TB_PATTERN_KEEPALIVE},
                                            {NULL, 0}};

/* One row an option, by kind: a flag, any text, a name of one of the core's tables (names.c),
 * one of some choices, a whole number in [min, max]. `fallback` is the value when neither
 * the user nor the scenario gives one (NULL: none). */
#define FLAG(name, scope, field, help) \
  { name, NULL, TB_ARG_FLAG, scope, FIELD(field), 0, 0, NULL, NULL, NULL, help }
#define TEXT(name, arg, scope, field, help) \
  { name, arg, TB_ARG_TEXT, scope, FIELD(field), 0, 0, NULL, NULL, NULL, help }
#define NAME(name, arg, scope, field, table, fallback, help) \
  { name, arg, TB_ARG_NAME, scope, FIELD(field), 0, 0, NULL, table, fallback, help }
#define CHOICE(name, scope, field, choices, fallback, help) \
  { name, NULL, TB_ARG_CHOICE, scope, FIELD(field), 0, 0, choices, NULL, fallback, help }
#define NUMBER(kind, name, arg, scope, field, min, max, fallback, help) \
  { name, arg, kind, scope, FIELD(field), min, max, NULL, NULL, fallback, help }

const tb_option tb_options_table[TB_N_OPTIONS] = {
    [TB_OPT_ITERATIONS] =
        NUMBER(TB_ARG_LONG, "iterations", "N", TB_FOR_ALL, iterations, 1, TB_ITERATIONS_MAX, NULL,
               "measured iterations (default: the scenario's)"),
    [TB_OPT_WARMUP] = NUMBER(TB_ARG_LONG, "warmup", "N", TB_FOR_ALL, warmup, 0, TB_WARMUP_MAX, NULL,
                             "iterations run first and not measured"),
    [TB_OPT_VARIANT] =
        TEXT("variant", "LABEL", TB_FOR_ALL, variant, "variant name echoed in the output"),
    [TB_OPT_JSON] = FLAG("json", TB_FOR_ALL, json, "one JSON object on stdout"),
    [TB_OPT_DETERMINISTIC] =
        FLAG("deterministic", TB_FOR_ALL, deterministic,
             "the library's random values come from a fixed stream, the same in every run "
             "(instruction mode; refused where the library has no hook for it)"),
    [TB_OPT_TLS] = CHOICE("tls", TB_FOR_TLS, tls, tls_choices, "1.3", "protocol version"),
    [TB_OPT_SUITE] = NAME("suite", "NAME", TB_FOR_TLS, suite, tb_suite_names, NULL,
                          "IANA cipher suite (default per version and certificate)"),
    [TB_OPT_KX] = CHOICE("kx", TB_FOR_TLS, kx, kx_choices, NULL,
                         "key exchange: ecdhe (certificates), rsa (TLS 1.2), psk (the "
                         "pre-shared key alone: TLS 1.3 psk_ke, TLS 1.2 PSK suites) or psk_dhe "
                         "(and (EC)DHE: psk_dhe_ke, ECDHE-PSK suites); no certificate with a "
                         "PSK (default: the TLS 1.2 suite's, else ecdhe)"),
    [TB_OPT_GROUP] = NAME("group", "NAME", TB_FOR_TLS, group, tb_group_names, NULL,
                          "key exchange group (default x25519; TLS 1.2 with ECDSA: the "
                          "certificate's curve)"),
    [TB_OPT_KEY_SHARE] = NAME("key-share", "NAME", TB_FOR_TLS, key_share, tb_group_names, NULL,
                              "TLS 1.3 client: offer NAME first, with the only key share; the "
                              "server (--group only) must send a HelloRetryRequest (checked: 2 "
                              "round trips)"),
    [TB_OPT_SIGALG] = NAME("sigalg", "NAME", TB_FOR_TLS, sigalg, tb_sigalg_names, NULL,
                           "IANA signature scheme (default per certificate and version)"),
    [TB_OPT_CERT] =
        NAME("cert", "KIND", TB_FOR_TLS, cert, tb_cert_kinds, "rsa2048", "certificate key"),
    [TB_OPT_CHAIN] = NUMBER(TB_ARG_INT, "chain", "N", TB_FOR_TLS, chain, 1, TB_CHAIN_MAX, "1",
                            "1: the leaf; 2: and an intermediate; 3: and the root too"),
    [TB_OPT_AUTH] = CHOICE("auth", TB_FOR_TLS, auth, auth_choices, "server",
                           "who verifies a certificate chain"),
    [TB_OPT_WRONG_CA] =
        FLAG("wrong-ca", TB_FOR_TLS, wrong_ca, "negative control: verify against a wrong CA"),
    [TB_OPT_FAULT] = NAME("fault", "NAME", TB_FOR_TLS, fault, tb_fault_names, NULL,
                          "test hook: misconfigure so that a check must fire (one-process "
                          "scenarios); never used in measurements"),
    [TB_OPT_CERT_DIR] =
        TEXT("cert-dir", "DIR", TB_FOR_TLS, cert_dir, "certificates from `tlsbench certs`"),
    [TB_OPT_RECORD_SIZE] =
        NUMBER(TB_ARG_SIZE, "record-size", "N", TB_FOR_TLS, record_size, TB_RECORD_SIZE_MIN,
               TB_RECORD_SIZE_MAX, NULL, "max plaintext per record (default: the library's)"),
    [TB_OPT_TRANSPORT] = CHOICE("transport", TB_FOR_TLS, transport, transport_choices, "memory",
                                "what joins the two sides of a one-process scenario: in-memory "
                                "queues or a loopback TCP connection"),
    [TB_OPT_IO] =
        CHOICE("io", TB_FOR_TLS, io, io_choices, "callbacks",
               "callbacks: the library reads and writes through tlsbench's callbacks; fd: "
               "its own socket I/O on the TCP connection (--transport tcp); bio: the "
               "callbacks through its BIO layer (wolfSSL opensslextra)"),
    [TB_OPT_RELEASE_BUFFERS] =
        FLAG("release-buffers", TB_FOR_TLS, release_buffers,
             "the library frees a connection's record buffers while they are empty "
             "(OpenSSL's SSL_MODE_RELEASE_BUFFERS); unsupported where it cannot"),
    [TB_OPT_PAYLOAD] =
        NUMBER(TB_ARG_SIZE, "payload", "N", TB_FOR_NAMED_OR, payload, 1, TB_PAYLOAD_MAX, NULL,
               "bytes per record (records, bulk), AEAD payload (aead), response body "
               "(peer, serve, load)"),
    [TB_OPT_BYTES] =
        NUMBER(TB_ARG_U64, "bytes", "N", TB_FOR_NAMED_OR, bytes, 1, TB_BYTES_MAX, NULL,
               "bulk: application bytes per iteration; peer: a download of N bytes "
               "(throughput and CPU per GB); load: the response size, beyond --payload's "
               "range"),
    [TB_OPT_AEAD] = NAME("aead", "NAME", TB_FOR_NAMED_OR, aead, tb_aead_names, NULL,
                         "one algorithm (default: all)"),
    [TB_OPT_ROLE] = CHOICE("role", TB_FOR_NAMED, role, role_choices, NULL,
                           "the side this process is (the other side is another process: a driver "
                           "or a real program)"),
    [TB_OPT_CONNECT] =
        TEXT("connect", "HOST:PORT", TB_FOR_NAMED, connect, "the server to connect to"),
    [TB_OPT_LISTEN] = TEXT("listen", "HOST:PORT", TB_FOR_NAMED, listen,
                           "where a server listens (default 127.0.0.1:0: the kernel picks the "
                           "port)"),
    [TB_OPT_PORT_FILE] = TEXT("port-file", "FILE", TB_FOR_NAMED, port_file,
                              "a server writes its port there once listening"),
    [TB_OPT_PEER_TIMEOUT] =
        NUMBER(TB_ARG_LONG, "peer-timeout", "S", TB_FOR_NAMED_OR, peer_timeout, 1, 3600, "10",
               "seconds without progress from the other process before failing"),
    [TB_OPT_PEER_RESUME] = FLAG("peer-resume", TB_FOR_NAMED, peer_resume,
                                "connections after the first resume a session"),
    [TB_OPT_BODY] =
        CHOICE("body", TB_FOR_NAMED_OR, body_pattern, body_choices, "pattern",
               "client: the response body must be tlsbench's pattern, or may be anything "
               "(a real server's)"),
    [TB_OPT_WORKERS] = NUMBER(TB_ARG_LONG, "workers", "N", TB_FOR_NAMED, workers, 1, 64, "1",
                              "worker processes, each an event loop"),
    [TB_OPT_DURATION] =
        NUMBER(TB_ARG_LONG, "duration", "S", TB_FOR_NAMED, duration, 1, 86400, NULL,
               "serve: seconds before it stops by itself (SIGTERM stops it sooner); "
               "load: seconds of load"),
    [TB_OPT_CONNECTIONS] = NUMBER(TB_ARG_LONG, "connections", "C", TB_FOR_NAMED, connections, 1,
                                  10000, "1", "concurrent connections"),
    [TB_OPT_PATTERN] =
        CHOICE("pattern", TB_FOR_NAMED, pattern, pattern_choices, NULL,
               "a transaction is a full handshake (new), a resumed one (resume) or the "
               "next request on an open connection (keepalive)"),
    [TB_OPT_REQUESTS] =
        NUMBER(TB_ARG_LONG, "requests", "N", TB_FOR_NAMED, requests, 1, TB_ITERATIONS_MAX, NULL,
               "stop after N transactions (default: at --duration)"),
    [TB_OPT_RATE] =
        NUMBER(TB_ARG_LONG, "rate", "R", TB_FOR_NAMED, rate, 1, 10000000, NULL,
               "start R transactions per second (open loop; latency counts from each "
               "one's due time); default: each connection's next at once (closed loop)"),
    [TB_OPT_REQUEST_SIZE] = NUMBER(TB_ARG_SIZE, "request-size", "N", TB_FOR_NAMED, request_size, 1,
                                   4096, NULL, "bytes per request, padded (default: the shortest)"),
    [TB_OPT_LATENCIES] = TEXT("latencies", "FILE", TB_FOR_NAMED, latencies,
                              "every transaction's latency (ns), one per line"),
    [TB_OPT_THREADS] = NUMBER(TB_ARG_LONG, "threads", "T", TB_FOR_NAMED, threads, 1, 256, "1",
                              "handshake, resume: T threads run connections at once, started "
                              "together, per-thread and total handshakes/s (given: even T = 1 "
                              "is timed so); serve: T event-loop threads in one process"),
    [TB_OPT_CONTEXTS] =
        CHOICE("contexts", TB_FOR_NAMED, contexts, contexts_choices, "shared",
               "--threads: one client and one server context for all threads (a server "
               "process), or a pair per thread"),
    [TB_OPT_LOCKS] = FLAG("locks", TB_FOR_NAMED, locks,
                          "count each side's pthread lock calls (mutexes, read-write locks, "
                          "once, condition variables) and how many found the lock held"),
};

const char *tb_choice_name(tb_option_id id, int value) {
  const tb_choice *c = tb_options_table[id].choices;
  for (; c != NULL && c->name != NULL; c++) {
    if (c->value == value) return c->name;
  }
  return NULL;
}
