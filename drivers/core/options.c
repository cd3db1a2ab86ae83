/*
 * The option table: for every option, what it takes, where it goes, who takes it, its
 * default and its help. The command line (cmdline.c), the usage text, the output's
 * parameters (output.c) and `info --json` (declare.c) are all made from it.
 */
#include "options.h"

#include <stddef.h>

#define FIELD(f) offsetof(tb_options, f)

static const tb_choice tls_choices[] = {{"1.2", 12}, {"1.3", 13}, {NULL, 0}};
static const tb_choice auth_choices[] = {
    {"none", TB_AUTH_NONE}, {"server", TB_AUTH_SERVER}, {"mutual", TB_AUTH_MUTUAL}, {NULL, 0}};
static const tb_choice transport_choices[] = {
    {"memory", TB_LINK_MEMORY}, {"tcp", TB_LINK_TCP}, {NULL, 0}};
static const tb_choice io_choices[] = {
    {"callbacks", TB_IO_CALLBACKS}, {"fd", TB_IO_FD}, {"bio", TB_IO_BIO}, {NULL, 0}};
static const tb_choice role_choices[] = {{"client", TB_CLIENT}, {"server", TB_SERVER}, {NULL, 0}};
static const tb_choice body_choices[] = {{"pattern", 1}, {"any", 0}, {NULL, 0}};
static const tb_choice pattern_choices[] = {{"new", TB_PATTERN_NEW},
                                            {"resume", TB_PATTERN_RESUME},
                                            {"keepalive", TB_PATTERN_KEEPALIVE},
                                            {NULL, 0}};

const tb_option tb_options_table[TB_N_OPTIONS] = {
    [TB_OPT_ITERATIONS] = {"iterations", "N", TB_ARG_LONG, TB_FOR_ALL, FIELD(iterations), 1,
                           TB_ITERATIONS_MAX, NULL, NULL, NULL,
                           "measured iterations (default: the scenario's)"},
    [TB_OPT_WARMUP] = {"warmup", "N", TB_ARG_LONG, TB_FOR_ALL, FIELD(warmup), 0, TB_WARMUP_MAX,
                       NULL, NULL, NULL, "iterations run first and not measured"},
    [TB_OPT_VARIANT] = {"variant", "LABEL", TB_ARG_TEXT, TB_FOR_ALL, FIELD(variant), 0, 0, NULL,
                        NULL, NULL, "variant name echoed in the output"},
    [TB_OPT_JSON] = {"json", NULL, TB_ARG_FLAG, TB_FOR_ALL, FIELD(json), 0, 0, NULL, NULL, NULL,
                     "one JSON object on stdout"},
    [TB_OPT_TLS] = {"tls", NULL, TB_ARG_CHOICE, TB_FOR_TLS, FIELD(tls), 0, 0, tls_choices, NULL,
                    "1.3", "protocol version"},
    [TB_OPT_SUITE] = {"suite", "NAME", TB_ARG_NAME, TB_FOR_TLS, FIELD(suite), 0, 0, NULL,
                      tb_suite_names, NULL,
                      "IANA cipher suite (default per version and certificate)"},
    [TB_OPT_GROUP] = {"group", "NAME", TB_ARG_NAME, TB_FOR_TLS, FIELD(group), 0, 0, NULL,
                      tb_group_names, NULL,
                      "key exchange group (default x25519; TLS 1.2 with ECDSA: the "
                      "certificate's curve)"},
    [TB_OPT_KEY_SHARE] = {"key-share", "NAME", TB_ARG_NAME, TB_FOR_TLS, FIELD(key_share), 0, 0,
                          NULL, tb_group_names, NULL,
                          "TLS 1.3 client: offer NAME first, with the only key share; the "
                          "server (--group only) must send a HelloRetryRequest (checked: 2 "
                          "round trips)"},
    [TB_OPT_SIGALG] = {"sigalg", "NAME", TB_ARG_NAME, TB_FOR_TLS, FIELD(sigalg), 0, 0, NULL,
                       tb_sigalg_names, NULL,
                       "IANA signature scheme (default per certificate and version)"},
    [TB_OPT_CERT] = {"cert", "KIND", TB_ARG_NAME, TB_FOR_TLS, FIELD(cert), 0, 0, NULL,
                     tb_cert_kinds, "rsa2048", "certificate key"},
    [TB_OPT_CHAIN] = {"chain", "N", TB_ARG_INT, TB_FOR_TLS, FIELD(chain), 1, TB_CHAIN_MAX, NULL,
                      NULL, "1", "1: the leaf; 2: and an intermediate; 3: and the root too"},
    [TB_OPT_AUTH] = {"auth", NULL, TB_ARG_CHOICE, TB_FOR_TLS, FIELD(auth), 0, 0, auth_choices, NULL,
                     "server", "who verifies a certificate chain"},
    [TB_OPT_WRONG_CA] = {"wrong-ca", NULL, TB_ARG_FLAG, TB_FOR_TLS, FIELD(wrong_ca), 0, 0, NULL,
                         NULL, NULL, "negative control: verify against a wrong CA"},
    [TB_OPT_FAULT] = {"fault", "NAME", TB_ARG_NAME, TB_FOR_TLS, FIELD(fault), 0, 0, NULL,
                      tb_fault_names, NULL,
                      "test hook: misconfigure so that a check must fire (one-process "
                      "scenarios); never used in measurements"},
    [TB_OPT_CERT_DIR] = {"cert-dir", "DIR", TB_ARG_TEXT, TB_FOR_TLS, FIELD(cert_dir), 0, 0, NULL,
                         NULL, NULL, "certificates from `tlsbench certs`"},
    [TB_OPT_RECORD_SIZE] = {"record-size", "N", TB_ARG_SIZE, TB_FOR_TLS, FIELD(record_size),
                            TB_RECORD_SIZE_MIN, TB_RECORD_SIZE_MAX, NULL, NULL, NULL,
                            "max plaintext per record (default: the library's)"},
    [TB_OPT_TRANSPORT] = {"transport", NULL, TB_ARG_CHOICE, TB_FOR_TLS, FIELD(transport), 0, 0,
                          transport_choices, NULL, "memory",
                          "what joins the two sides of a one-process scenario: in-memory "
                          "queues or a loopback TCP connection"},
    [TB_OPT_IO] = {"io", NULL, TB_ARG_CHOICE, TB_FOR_TLS, FIELD(io), 0, 0, io_choices, NULL,
                   "callbacks",
                   "callbacks: the library reads and writes through tlsbench's callbacks; fd: "
                   "its own socket I/O on the TCP connection (--transport tcp); bio: the "
                   "callbacks through its BIO layer (wolfSSL opensslextra)"},
    [TB_OPT_PAYLOAD] = {"payload", "N", TB_ARG_SIZE, TB_FOR_NAMED_OR, FIELD(payload), 1,
                        TB_PAYLOAD_MAX, NULL, NULL, NULL,
                        "bytes per record (records, bulk), AEAD payload (aead), response body "
                        "(peer, serve, load)"},
    [TB_OPT_BYTES] = {"bytes", "N", TB_ARG_U64, TB_FOR_NAMED_OR, FIELD(bytes), 1, TB_BYTES_MAX,
                      NULL, NULL, NULL,
                      "bulk: application bytes per iteration; peer: a download of N bytes "
                      "(throughput and CPU per GB); load: the response size, beyond --payload's "
                      "range"},
    [TB_OPT_AEAD] = {"aead", "NAME", TB_ARG_NAME, TB_FOR_NAMED_OR, FIELD(aead), 0, 0, NULL,
                     tb_aead_names, NULL, "one algorithm (default: all)"},
    [TB_OPT_ROLE] = {"role", NULL, TB_ARG_CHOICE, TB_FOR_NAMED, FIELD(role), 0, 0, role_choices,
                     NULL, NULL,
                     "the side this process is (the other side is another process: a driver "
                     "or a real program)"},
    [TB_OPT_CONNECT] = {"connect", "HOST:PORT", TB_ARG_TEXT, TB_FOR_NAMED, FIELD(connect), 0, 0,
                        NULL, NULL, NULL, "the server to connect to"},
    [TB_OPT_LISTEN] = {"listen", "HOST:PORT", TB_ARG_TEXT, TB_FOR_NAMED, FIELD(listen), 0, 0, NULL,
                       NULL, NULL,
                       "where a server listens (default 127.0.0.1:0: the kernel picks the "
                       "port)"},
    [TB_OPT_PORT_FILE] = {"port-file", "FILE", TB_ARG_TEXT, TB_FOR_NAMED, FIELD(port_file), 0, 0,
                          NULL, NULL, NULL, "a server writes its port there once listening"},
    [TB_OPT_PEER_TIMEOUT] = {"peer-timeout", "S", TB_ARG_LONG, TB_FOR_NAMED_OR, FIELD(peer_timeout),
                             1, 3600, NULL, NULL, "10",
                             "seconds without progress from the other process before failing"},
    [TB_OPT_PEER_RESUME] = {"peer-resume", NULL, TB_ARG_FLAG, TB_FOR_NAMED, FIELD(peer_resume), 0,
                            0, NULL, NULL, NULL, "connections after the first resume a session"},
    [TB_OPT_BODY] = {"body", NULL, TB_ARG_CHOICE, TB_FOR_NAMED_OR, FIELD(body_pattern), 0, 0,
                     body_choices, NULL, "pattern",
                     "client: the response body must be tlsbench's pattern, or may be anything "
                     "(a real server's)"},
    [TB_OPT_WORKERS] = {"workers", "N", TB_ARG_LONG, TB_FOR_NAMED, FIELD(workers), 1, 64, NULL,
                        NULL, "1", "worker processes, each an event loop"},
    [TB_OPT_DURATION] = {"duration", "S", TB_ARG_LONG, TB_FOR_NAMED, FIELD(duration), 1, 86400,
                         NULL, NULL, NULL,
                         "serve: seconds before it stops by itself (SIGTERM stops it sooner); "
                         "load: seconds of load"},
    [TB_OPT_CONNECTIONS] = {"connections", "C", TB_ARG_LONG, TB_FOR_NAMED, FIELD(connections), 1,
                            10000, NULL, NULL, "1", "concurrent connections"},
    [TB_OPT_PATTERN] = {"pattern", NULL, TB_ARG_CHOICE, TB_FOR_NAMED, FIELD(pattern), 0, 0,
                        pattern_choices, NULL, NULL,
                        "a transaction is a full handshake (new), a resumed one (resume) or the "
                        "next request on an open connection (keepalive)"},
    [TB_OPT_REQUESTS] = {"requests", "N", TB_ARG_LONG, TB_FOR_NAMED, FIELD(requests), 1,
                         TB_ITERATIONS_MAX, NULL, NULL, NULL,
                         "stop after N transactions (default: at --duration)"},
    [TB_OPT_RATE] = {"rate", "R", TB_ARG_LONG, TB_FOR_NAMED, FIELD(rate), 1, 10000000, NULL, NULL,
                     NULL,
                     "start R transactions per second (open loop; latency counts from each "
                     "one's due time); default: each connection's next at once (closed loop)"},
    [TB_OPT_REQUEST_SIZE] = {"request-size", "N", TB_ARG_SIZE, TB_FOR_NAMED, FIELD(request_size), 1,
                             4096, NULL, NULL, NULL,
                             "bytes per request, padded (default: the shortest)"},
    [TB_OPT_LATENCIES] = {"latencies", "FILE", TB_ARG_TEXT, TB_FOR_NAMED, FIELD(latencies), 0, 0,
                          NULL, NULL, NULL, "every transaction's latency (ns), one per line"},
};

const char *tb_choice_name(tb_option_id id, int value) {
  const tb_choice *c = tb_options_table[id].choices;
  for (; c != NULL && c->name != NULL; c++) {
    if (c->value == value) return c->name;
  }
  return NULL;
}
