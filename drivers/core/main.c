/*
 * tlsbench-driver: runs one scenario against the one library linked in, and prints what
 * it measured (JSON with --json). Exit codes: see core.h (and the README).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

#define SCHEMA_VERSION 1

tb_status tb_fail(char *err, tb_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, TB_ERR_LEN, fmt, ap);
  va_end(ap);
  return status;
}

/* ------------------------------------------------------------------------- series */

tb_series *tb_series_get(tb_run *r, const char *name, const char *unit) {
  for (int i = 0; i < r->n_series; i++) {
    if (strcmp(r->series[i].name, name) == 0) return &r->series[i];
  }
  if (r->n_series == TB_MAX_SERIES) return NULL;
  tb_series *s = &r->series[r->n_series++];
  memset(s, 0, sizeof(*s));
  s->name = name;
  s->unit = unit;
  return s;
}

int tb_series_add(tb_series *s, double value) {
  if (s == NULL) return -1;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    tb_side side = tb_heap_set_side(TB_SIDE_HARNESS);
    double *grown = realloc(s->values, cap * sizeof(double));
    tb_heap_set_side(side);
    if (grown == NULL) return -1;
    s->values = grown;
    s->cap = cap;
  }
  s->values[s->n++] = value;
  return 0;
}

void tb_warn(tb_run *r, const char *warning) {
  if (r->n_warnings < TB_MAX_WARNINGS) r->warnings[r->n_warnings++] = warning;
}

/* ------------------------------------------------------------------------- options */

static void usage(FILE *out) {
  fprintf(out,
          "usage: tlsbench-driver SCENARIO [options]\n"
          "scenarios: handshake resume records bulk aead info peer serve load\n"
          "  --tls 1.2|1.3            protocol version (default 1.3)\n"
          "  --suite NAME             IANA cipher suite (default per version and cert)\n"
          "  --group NAME             x25519 secp256r1 secp384r1 ffdhe2048 ffdhe3072 "
          "X25519MLKEM768\n"
          "                           (default x25519; TLS 1.2 with ECDSA: the cert's curve)\n"
          "  --key-share NAME         TLS 1.3 client: offer NAME first, with the only key\n"
          "                           share; the server (--group only) must send a\n"
          "                           HelloRetryRequest (checked: 2 round trips)\n"
          "  --sigalg NAME            IANA signature scheme (default per cert and version)\n"
          "  --cert KIND              rsa1024..rsa8192 ecdsa-p256 ecdsa-p384 ed25519\n"
          "  --chain 1|2|3            leaf; + intermediate; + root sent too (default 1)\n"
          "  --auth none|server|mutual  who verifies (default server)\n"
          "  --wrong-ca               negative control: verify against a wrong CA\n"
          "  --fault NAME             test hook: misconfigure so that a check must fire\n"
          "                           (server-tickets suite group sigalg version verify\n"
          "                           resume client-sigalg key-share key-share-readback);\n"
          "                           never used in measurements\n"
          "  --cert-dir DIR           certificates from `tlsbench certs`\n"
          "  --transport memory|tcp   what joins the two sides: in-memory queues (default)\n"
          "                           or a loopback TCP connection (handshake resume records\n"
          "                           bulk)\n"
          "  --role client|server     peer: the side this process is (the other side is\n"
          "                           another process: a driver or a real program)\n"
          "  --connect HOST:PORT      peer client: the server to connect to\n"
          "  --listen HOST:PORT       peer server: where to listen (default 127.0.0.1:0,\n"
          "                           the kernel picks the port)\n"
          "  --port-file FILE         peer server: write the port there once listening\n"
          "  --peer-timeout S         peer: seconds without progress before failing\n"
          "                           (default 10)\n"
          "  --peer-resume            peer: connections after the first resume a session\n"
          "  --body pattern|any       peer client: the response body must be tlsbench's\n"
          "                           pattern (default) or may be anything (a real server's)\n"
          "  --workers N              serve: worker processes, each an event loop (default 1)\n"
          "  --duration S             serve: seconds before it stops by itself (default 600;\n"
          "                           SIGTERM stops it sooner); load: seconds of load\n"
          "                           (default 10)\n"
          "  --connections C          load: concurrent connections (default 1)\n"
          "  --pattern P              load: new (a full handshake per transaction), resume\n"
          "                           (a resumed one) or keepalive (default)\n"
          "  --requests N             load: stop after N transactions (default: --duration)\n"
          "  --rate R                 load: start R transactions per second (open loop;\n"
          "                           latency counts from each one's due time); default:\n"
          "                           each connection's next at once (closed loop)\n"
          "  --request-size N         load: bytes per request, padded (default: shortest)\n"
          "  --latencies FILE         load: every transaction's latency (ns), one per line\n"
          "  --io callbacks|fd|bio    callbacks: the library reads and writes through\n"
          "                           tlsbench's callbacks (default); fd: its own socket I/O\n"
          "                           on the TCP connection (--transport tcp); bio: the\n"
          "                           callbacks through its BIO layer (wolfSSL opensslextra)\n"
          "  --record-size N          max plaintext per record (default: library's)\n"
          "  --payload N              bytes per record (records, bulk) or AEAD payload\n"
          "  --bytes N                bulk: application bytes per iteration; peer: a\n"
          "                           download of N bytes (throughput and CPU per GB);\n"
          "                           load: the response size, beyond --payload's range\n"
          "  --aead NAME              aead: AES-128-GCM AES-256-GCM ChaCha20-Poly1305\n"
          "  --iterations N --warmup N\n"
          "  --variant LABEL          variant name echoed in the output\n"
          "  --json                   one JSON object on stdout\n");
}

/* A whole number in [min, max]; the message names the option and the range. */
static int parse_count(const char *option, const char *text, long min, long max, long *out) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || *end || end == text || v < min || v > max) {
    fprintf(stderr, "tlsbench-driver: --%s takes a whole number from %ld to %ld, not '%s'\n",
            option, min, max, text);
    return -1;
  }
  *out = v;
  return 0;
}

/* A name from one of the core's tables; an unknown one is a usage error that lists them. */
static int check_name(const char *option, const tb_name *table, const char *value) {
  if (value == NULL || tb_name_find(table, value) != NULL) return 0;
  int count = 0;
  for (const tb_name *n = table; n->name != NULL; n++) count++;
  fprintf(stderr, "tlsbench-driver: unknown --%s '%s'; known:", option, value);
  if (count > 20) {
    /* The cipher suites: too many to list here. */
    fprintf(stderr, " %d IANA names, listed by `tlsbench-driver info --json`\n", count);
    return -1;
  }
  for (const tb_name *n = table; n->name != NULL; n++) fprintf(stderr, " %s", n->name);
  fprintf(stderr, "\n");
  return -1;
}

static const char *default_sigalg(const char *cert, int tls) {
  if (strncmp(cert, "rsa", 3) == 0) return tls == 13 ? "rsa_pss_rsae_sha256" : "rsa_pkcs1_sha256";
  if (strcmp(cert, "ecdsa-p256") == 0) return "ecdsa_secp256r1_sha256";
  if (strcmp(cert, "ecdsa-p384") == 0) return "ecdsa_secp384r1_sha384";
  if (strcmp(cert, "ed25519") == 0) return "ed25519";
  return NULL;
}

/* In TLS 1.2 the supported groups also name the curves an ECDSA certificate may use, so a
 * pinned offer must hold the certificate's curve; TLS 1.3 separates the two. */
static const char *default_group(const char *cert, int tls) {
  if (tls == 12 && strcmp(cert, "ecdsa-p256") == 0) return "secp256r1";
  if (tls == 12 && strcmp(cert, "ecdsa-p384") == 0) return "secp384r1";
  return "x25519";
}

static const char *default_suite(const char *cert, int tls) {
  if (tls == 13) return "TLS_AES_128_GCM_SHA256";
  return strncmp(cert, "rsa", 3) == 0 ? "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
                                      : "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256";
}

static int cert_path(char *out, const tb_options *o, const char *file) {
  int n = snprintf(out, PATH_MAX, "%s/%s/%s", o->cert_dir, o->cert, file);
  if (n < 0 || n >= PATH_MAX) return -1;
  if (access(out, R_OK) != 0) {
    fprintf(stderr, "tlsbench-driver: cannot read %s (run `tlsbench certs`)\n", out);
    return -1;
  }
  return 0;
}

/* Scenarios with one side in this process and the other in another, over TCP. */
static int two_process_scenario(const char *scenario) {
  return strcmp(scenario, "peer") == 0 || strcmp(scenario, "serve") == 0 ||
         strcmp(scenario, "load") == 0;
}

/* The options of serve and load, and only of them. */
static int check_many_options(tb_options *o, long request_size) {
  int serve = strcmp(o->scenario, "serve") == 0, load = strcmp(o->scenario, "load") == 0;
  if (!serve && (o->workers != 1)) {
    fprintf(stderr, "tlsbench-driver: --workers is for the serve scenario\n");
    return -1;
  }
  if (!load && (o->connections != 1 || o->pattern || o->requests || o->rate || request_size ||
                o->latencies)) {
    fprintf(stderr,
            "tlsbench-driver: --connections, --pattern, --requests, --rate, --request-size "
            "and --latencies are for the load scenario\n");
    return -1;
  }
  if (!serve && !load && o->duration >= 0) {
    fprintf(stderr, "tlsbench-driver: --duration is for the serve and load scenarios\n");
    return -1;
  }
  if (load && o->connect == NULL) {
    fprintf(stderr, "tlsbench-driver: load needs --connect HOST:PORT (a server)\n");
    return -1;
  }
  if ((serve || load) && o->key_share != NULL) {
    fprintf(stderr, "tlsbench-driver: --key-share is checked on the wire by the peer scenario\n");
    return -1;
  }
  if (serve && o->listen == NULL) o->listen = "127.0.0.1:0";
  if (o->duration < 0) o->duration = serve ? 600 : 10;
  if (load && o->pattern == NULL) o->pattern = "keepalive";
  o->request_size = (size_t)request_size;
  return 0;
}

static int needs_tls(const char *scenario) {
  return strcmp(scenario, "aead") != 0 && strcmp(scenario, "info") != 0;
}

static int parse_options(int argc, char **argv, tb_options *o) {
  static const struct option longs[] = {{"tls", required_argument, 0, 't'},
                                        {"suite", required_argument, 0, 's'},
                                        {"group", required_argument, 0, 'g'},
                                        {"key-share", required_argument, 0, 'G'},
                                        {"sigalg", required_argument, 0, 'S'},
                                        {"cert", required_argument, 0, 'c'},
                                        {"chain", required_argument, 0, 'C'},
                                        {"auth", required_argument, 0, 'a'},
                                        {"wrong-ca", no_argument, 0, 'W'},
                                        {"fault", required_argument, 0, 'F'},
                                        {"record-size", required_argument, 0, 'r'},
                                        {"payload", required_argument, 0, 'p'},
                                        {"bytes", required_argument, 0, 'b'},
                                        {"iterations", required_argument, 0, 'n'},
                                        {"warmup", required_argument, 0, 'w'},
                                        {"aead", required_argument, 0, 'A'},
                                        {"cert-dir", required_argument, 0, 'd'},
                                        {"variant", required_argument, 0, 'v'},
                                        {"transport", required_argument, 0, 'T'},
                                        {"role", required_argument, 0, 'R'},
                                        {"io", required_argument, 0, 'I'},
                                        {"connect", required_argument, 0, 'K'},
                                        {"listen", required_argument, 0, 'L'},
                                        {"port-file", required_argument, 0, 'P'},
                                        {"peer-timeout", required_argument, 0, 'O'},
                                        {"peer-resume", no_argument, 0, 'E'},
                                        {"body", required_argument, 0, 'k'},
                                        {"workers", required_argument, 0, 'X'},
                                        {"duration", required_argument, 0, 'D'},
                                        {"connections", required_argument, 0, 'N'},
                                        {"pattern", required_argument, 0, 'Q'},
                                        {"requests", required_argument, 0, 'q'},
                                        {"rate", required_argument, 0, 'Z'},
                                        {"request-size", required_argument, 0, 'z'},
                                        {"latencies", required_argument, 0, 'y'},
                                        {"json", no_argument, 0, 'j'},
                                        {"help", no_argument, 0, 'h'},
                                        {0, 0, 0, 0}};
  memset(o, 0, sizeof(*o));
  o->tls = 13;
  o->cert = "rsa2048";
  o->chain = 1;
  o->auth = TB_AUTH_SERVER;
  o->iterations = -1;
  o->warmup = -1;
  o->peer_timeout = 10;
  o->body_pattern = 1;
  o->role = (tb_role)-1;
  long record_size = 0, payload = 0, bytes = 16 * 1024 * 1024, chain = 1, request_size = 0;
  o->workers = 1;
  o->duration = -1;
  o->connections = 1;
  o->pattern = NULL;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
    switch (c) {
      case 't':
        if (strcmp(optarg, "1.2") == 0) {
          o->tls = 12;
        } else if (strcmp(optarg, "1.3") == 0) {
          o->tls = 13;
        } else {
          fprintf(stderr, "tlsbench-driver: --tls must be 1.2 or 1.3, not %s\n", optarg);
          return -1;
        }
        break;
      case 's':
        o->suite = optarg;
        break;
      case 'g':
        o->group = optarg;
        break;
      case 'G':
        o->key_share = optarg;
        break;
      case 'S':
        o->sigalg = optarg;
        break;
      case 'c':
        o->cert = optarg;
        break;
      case 'C':
        if (parse_count("chain", optarg, 1, TB_CHAIN_MAX, &chain)) return -1;
        o->chain = (int)chain;
        break;
      case 'a':
        if (strcmp(optarg, "none") == 0) {
          o->auth = TB_AUTH_NONE;
        } else if (strcmp(optarg, "server") == 0) {
          o->auth = TB_AUTH_SERVER;
        } else if (strcmp(optarg, "mutual") == 0) {
          o->auth = TB_AUTH_MUTUAL;
        } else {
          fprintf(stderr, "tlsbench-driver: --auth must be none, server or mutual\n");
          return -1;
        }
        break;
      case 'W':
        o->wrong_ca = 1;
        break;
      case 'F':
        o->fault = optarg;
        if (!tb_fault_known(optarg)) {
          fprintf(stderr,
                  "tlsbench-driver: unknown --fault '%s'; known: server-tickets suite group "
                  "sigalg version verify resume client-sigalg key-share\n",
                  optarg);
          return -1;
        }
        break;
      case 'r':
        if (parse_count("record-size", optarg, TB_RECORD_SIZE_MIN, TB_RECORD_SIZE_MAX,
                        &record_size)) {
          return -1;
        }
        break;
      case 'p':
        if (parse_count("payload", optarg, 1, TB_PAYLOAD_MAX, &payload)) return -1;
        break;
      case 'b':
        if (parse_count("bytes", optarg, 1, TB_BYTES_MAX, &bytes)) return -1;
        o->bytes_given = 1;
        break;
      case 'n':
        if (parse_count("iterations", optarg, 1, TB_ITERATIONS_MAX, &o->iterations)) return -1;
        break;
      case 'w':
        if (parse_count("warmup", optarg, 0, TB_WARMUP_MAX, &o->warmup)) return -1;
        break;
      case 'A':
        o->aead = optarg;
        break;
      case 'd':
        o->cert_dir = optarg;
        break;
      case 'v':
        o->variant = optarg;
        break;
      case 'T':
        if (strcmp(optarg, "memory") == 0) {
          o->transport = TB_LINK_MEMORY;
        } else if (strcmp(optarg, "tcp") == 0) {
          o->transport = TB_LINK_TCP;
        } else {
          fprintf(stderr, "tlsbench-driver: --transport must be memory or tcp, not %s\n", optarg);
          return -1;
        }
        break;
      case 'R':
        if (strcmp(optarg, "client") == 0) {
          o->role = TB_CLIENT;
        } else if (strcmp(optarg, "server") == 0) {
          o->role = TB_SERVER;
        } else {
          fprintf(stderr, "tlsbench-driver: --role must be client or server, not %s\n", optarg);
          return -1;
        }
        break;
      case 'K':
        o->connect = optarg;
        break;
      case 'I':
        if (strcmp(optarg, "callbacks") == 0 || strcmp(optarg, "fd") == 0 ||
            strcmp(optarg, "bio") == 0) {
          o->io_fd = strcmp(optarg, "fd") == 0;
          o->io_bio = strcmp(optarg, "bio") == 0;
        } else {
          fprintf(stderr, "tlsbench-driver: --io must be callbacks, fd or bio, not %s\n", optarg);
          return -1;
        }
        break;
      case 'L':
        o->listen = optarg;
        break;
      case 'P':
        o->port_file = optarg;
        break;
      case 'O':
        if (parse_count("peer-timeout", optarg, 1, 3600, &o->peer_timeout)) return -1;
        break;
      case 'E':
        o->peer_resume = 1;
        break;
      case 'k':
        if (strcmp(optarg, "pattern") == 0 || strcmp(optarg, "any") == 0) {
          o->body_pattern = strcmp(optarg, "pattern") == 0;
        } else {
          fprintf(stderr, "tlsbench-driver: --body must be pattern or any, not %s\n", optarg);
          return -1;
        }
        break;
      case 'X':
        if (parse_count("workers", optarg, 1, 64, &o->workers)) return -1;
        break;
      case 'D':
        if (parse_count("duration", optarg, 1, 86400, &o->duration)) return -1;
        break;
      case 'N':
        if (parse_count("connections", optarg, 1, 10000, &o->connections)) return -1;
        break;
      case 'Q':
        if (strcmp(optarg, "new") != 0 && strcmp(optarg, "resume") != 0 &&
            strcmp(optarg, "keepalive") != 0) {
          fprintf(stderr, "tlsbench-driver: --pattern must be new, resume or keepalive, not %s\n",
                  optarg);
          return -1;
        }
        o->pattern = optarg;
        break;
      case 'q':
        if (parse_count("requests", optarg, 1, TB_ITERATIONS_MAX, &o->requests)) return -1;
        break;
      case 'Z':
        if (parse_count("rate", optarg, 1, 10000000, &o->rate)) return -1;
        break;
      case 'z':
        if (parse_count("request-size", optarg, 1, 4096, &request_size)) return -1;
        break;
      case 'y':
        o->latencies = optarg;
        break;
      case 'j':
        o->json = 1;
        break;
      case 'h':
        usage(stdout);
        exit(0);
      default:
        fprintf(stderr, "tlsbench-driver: unknown or incomplete option %s\n", argv[optind - 1]);
        return -1;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "tlsbench-driver: give exactly one scenario\n");
    return -1;
  }
  o->scenario = argv[optind];
  static const long default_iterations[TB_N_SCENARIOS] = {100, 100, 10000, 5, 3000, 1, 10, 0, 0};
  static const long default_warmup[TB_N_SCENARIOS] = {5, 5, 1000, 1, 300, 0, 1, 0, 0};
  int known = -1;
  for (int i = 0; i < TB_N_SCENARIOS; i++) {
    if (strcmp(o->scenario, tb_scenario_names[i]) == 0) known = i;
  }
  if (known < 0) {
    fprintf(stderr, "tlsbench-driver: unknown scenario %s\n", o->scenario);
    return -1;
  }
  if (o->transport == TB_LINK_TCP && !needs_tls(o->scenario)) {
    fprintf(stderr,
            "tlsbench-driver: --transport tcp is for handshake, resume, records and "
            "bulk; %s has no connection\n",
            o->scenario);
    return -1;
  }
  int peer = strcmp(o->scenario, "peer") == 0;
  if (peer && (int)o->role < 0) {
    fprintf(stderr, "tlsbench-driver: peer needs --role client or --role server\n");
    return -1;
  }
  if (peer && o->role == TB_CLIENT && o->connect == NULL) {
    fprintf(stderr, "tlsbench-driver: peer --role client needs --connect HOST:PORT\n");
    return -1;
  }
  int serve = strcmp(o->scenario, "serve") == 0, load = strcmp(o->scenario, "load") == 0;
  if (!peer && ((int)o->role >= 0 || o->peer_resume)) {
    fprintf(stderr, "tlsbench-driver: --role and --peer-resume are for the peer scenario\n");
    return -1;
  }
  if (!peer && !load && o->connect) {
    fprintf(stderr, "tlsbench-driver: --connect is for the peer and load scenarios\n");
    return -1;
  }
  if (!peer && !serve && (o->listen || o->port_file)) {
    fprintf(stderr,
            "tlsbench-driver: --listen and --port-file are for the peer and serve "
            "scenarios\n");
    return -1;
  }
  if (peer && o->role == TB_SERVER && o->listen == NULL) o->listen = "127.0.0.1:0";
  if (check_many_options(o, request_size) != 0) return -1;
  if (o->io_bio && two_process_scenario(o->scenario)) {
    fprintf(stderr, "tlsbench-driver: --io bio is for the one-process scenarios\n");
    return -1;
  }
  if (o->io_fd && (two_process_scenario(o->scenario) || o->transport != TB_LINK_TCP)) {
    fprintf(stderr,
            "tlsbench-driver: --io fd needs --transport tcp (a socket for the library to use)\n");
    return -1;
  }
  int two_process = peer || serve || load;
  if (two_process && o->transport != TB_LINK_MEMORY) {
    fprintf(stderr, "tlsbench-driver: %s always runs over TCP; --transport is not for it\n",
            o->scenario);
    return -1;
  }
  if (two_process && o->fault != NULL) {
    fprintf(stderr, "tlsbench-driver: --fault is for the one-process scenarios\n");
    return -1;
  }
  if (o->iterations < 0) o->iterations = default_iterations[known];
  if (o->warmup < 0) o->warmup = default_warmup[known];
  o->record_size = (size_t)record_size;
  o->bytes = (uint64_t)bytes;
  if (payload) {
    o->payload = (size_t)payload;
  } else if (strcmp(o->scenario, "records") == 0) {
    o->payload = 256;
  } else if (strcmp(o->scenario, "bulk") == 0) {
    o->payload = o->record_size ? o->record_size : 16384; /* the largest records */
  } else if (two_process_scenario(o->scenario)) {
    o->payload = 1024; /* response body bytes */
  }
  if (check_name("suite", tb_suite_names, o->suite) ||
      check_name("group", tb_group_names, o->group) ||
      check_name("key-share", tb_group_names, o->key_share) ||
      check_name("sigalg", tb_sigalg_names, o->sigalg) ||
      check_name("aead", tb_aead_names, o->aead) || check_name("cert", tb_cert_kinds, o->cert)) {
    return -1;
  }
  if (o->suite != NULL && tb_name_find(tb_suite_names, o->suite)->tls != o->tls) {
    fprintf(stderr, "tlsbench-driver: %s is a TLS %s suite, not one of TLS %s\n", o->suite,
            o->tls == 13 ? "1.2" : "1.3", o->tls == 13 ? "1.3" : "1.2");
    return -1;
  }
  /* One record carries the whole payload in `records`: a larger one would be split. */
  size_t record_limit = o->record_size ? o->record_size : TB_RECORD_SIZE_MAX;
  if (strcmp(o->scenario, "records") == 0 && o->payload > record_limit) {
    fprintf(stderr,
            "tlsbench-driver: --payload %zu does not fit one record of %zu bytes; records "
            "measures one record per write (use bulk for larger writes)\n",
            o->payload, record_limit);
    return -1;
  }
  if (o->group == NULL) o->group = default_group(o->cert, o->tls);
  if (o->key_share != NULL && (o->tls != 13 || strcmp(o->key_share, o->group) == 0)) {
    fprintf(stderr,
            "tlsbench-driver: --key-share names the client's first key share, one the server "
            "rejects with a HelloRetryRequest: TLS 1.3 only, and a group other than --group "
            "(%s)\n",
            o->group);
    return -1;
  }
  if (o->key_share != NULL && o->io_fd) {
    fprintf(stderr,
            "tlsbench-driver: --key-share is checked by counting round trips on the wire, "
            "which --io fd does not see: use --io callbacks\n");
    return -1;
  }
  if (o->sigalg == NULL) o->sigalg = default_sigalg(o->cert, o->tls);
  if (o->suite == NULL) o->suite = default_suite(o->cert, o->tls);
  if (o->sigalg == NULL) {
    fprintf(stderr, "tlsbench-driver: unknown --cert %s\n", o->cert);
    return -1;
  }
  /* A TLS 1.2 suite names its key exchange: the group must be of that kind. */
  int ffdhe_group = strncmp(o->group, "ffdhe", 5) == 0;
  if (o->tls == 12 && strncmp(o->suite, "TLS_ECDHE_", 10) == 0 && ffdhe_group) {
    fprintf(stderr, "tlsbench-driver: %s uses an elliptic-curve group, not %s\n", o->suite,
            o->group);
    return -1;
  }
  if (o->tls == 12 && strncmp(o->suite, "TLS_DHE_", 8) == 0 && !ffdhe_group) {
    fprintf(stderr,
            "tlsbench-driver: %s uses a finite-field group (ffdhe2048, ffdhe3072), not %s\n",
            o->suite, o->group);
    return -1;
  }
  if (o->wrong_ca && o->auth == TB_AUTH_NONE) {
    fprintf(stderr,
            "tlsbench-driver: --wrong-ca needs --auth server or mutual: with none, "
            "nobody verifies\n");
    return -1;
  }
  if (needs_tls(o->scenario)) {
    if (o->cert_dir == NULL) {
      fprintf(stderr, "tlsbench-driver: --cert-dir is required (tlsbench drive passes it)\n");
      return -1;
    }
    char chain_name[32];
    snprintf(chain_name, sizeof(chain_name), "server-chain%d.pem", o->chain);
    if (cert_path(o->ca_file, o, o->wrong_ca ? "wrong-ca.pem" : "ca.pem") ||
        cert_path(o->server_chain, o, chain_name) || cert_path(o->server_key, o, "server.key")) {
      return -1;
    }
    snprintf(chain_name, sizeof(chain_name), "client-chain%d.pem", o->chain);
    if (o->auth == TB_AUTH_MUTUAL &&
        (cert_path(o->client_chain, o, chain_name) || cert_path(o->client_key, o, "client.key"))) {
      return -1;
    }
  }
  return 0;
}

/* ------------------------------------------------------------------------- output */

static const char *auth_name(tb_auth a) {
  return a == TB_AUTH_NONE ? "none" : a == TB_AUTH_SERVER ? "server" : "mutual";
}

static void write_params(tb_json *j, const tb_options *o) {
  tb_json_object(j, "params");
  if (needs_tls(o->scenario)) {
    tb_json_str(j, "tls", o->tls == 13 ? "1.3" : "1.2");
    tb_json_str(j, "suite", o->suite);
    /* Static RSA (TLS 1.2) negotiates no group and signs nothing: no such parameters. */
    int static_rsa = o->tls == 12 && strncmp(o->suite, "TLS_RSA_WITH_", 13) == 0;
    tb_json_str(j, "group", static_rsa ? NULL : o->group);
    if (o->key_share != NULL) tb_json_str(j, "key_share", o->key_share);
    tb_json_str(j, "sigalg", static_rsa ? NULL : o->sigalg);
    tb_json_str(j, "cert", o->cert);
    tb_json_u64(j, "chain", (uint64_t)o->chain);
    tb_json_str(j, "auth", auth_name(o->auth));
    tb_json_bool(j, "wrong_ca", o->wrong_ca);
    tb_json_u64(j, "record_size", o->record_size);
  }
  tb_json_u64(j, "payload", o->payload);
  if (strcmp(o->scenario, "bulk") == 0 || o->bytes_given) tb_json_u64(j, "bytes", o->bytes);
  tb_json_str(j, "aead", o->aead);
  tb_json_i64(j, "iterations", o->iterations);
  tb_json_i64(j, "warmup", o->warmup);
  /* Only when not the default, so that memory-pair points keep their stored params. */
  if (o->transport == TB_LINK_TCP) tb_json_str(j, "transport", "tcp");
  if (o->io_fd) tb_json_str(j, "io", "fd");
  if (o->io_bio) tb_json_str(j, "io", "bio");
  if (strcmp(o->scenario, "peer") == 0) {
    tb_json_str(j, "role", o->role == TB_SERVER ? "server" : "client");
    tb_json_bool(j, "resume", o->peer_resume);
    if (o->role == TB_CLIENT) tb_json_str(j, "body", o->body_pattern ? "pattern" : "any");
  }
  if (strcmp(o->scenario, "serve") == 0) tb_json_u64(j, "workers", (uint64_t)o->workers);
  if (strcmp(o->scenario, "load") == 0) {
    tb_json_str(j, "pattern", o->pattern);
    tb_json_u64(j, "connections", (uint64_t)o->connections);
    tb_json_u64(j, "duration", (uint64_t)o->duration);
    if (o->requests) tb_json_u64(j, "requests", (uint64_t)o->requests);
    if (o->rate) tb_json_u64(j, "rate", (uint64_t)o->rate);
    if (o->request_size) tb_json_u64(j, "request_size", o->request_size);
  }
  tb_json_object_end(j);
}

static void write_names(tb_json *j, const char *key, const tb_name *table) {
  tb_json_array(j, key);
  for (const tb_name *n = table; n->name != NULL; n++) tb_json_str(j, NULL, n->name);
  tb_json_array_end(j);
}

static void write_range(tb_json *j, const char *key, long min, long max) {
  tb_json_object(j, key);
  tb_json_i64(j, "min", min);
  tb_json_i64(j, "max", max);
  tb_json_object_end(j);
}

/* What this driver accepts: the runner validates experiments against it before running. */
static void write_declared(tb_json *j) {
  tb_json_object(j, "declared");
  tb_json_array(j, "scenarios");
  for (int i = 0; i < TB_N_SCENARIOS; i++) tb_json_str(j, NULL, tb_scenario_names[i]);
  tb_json_array_end(j);
  tb_json_array(j, "suites");
  for (const tb_name *n = tb_suite_names; n->name != NULL; n++) {
    tb_json_object(j, NULL);
    tb_json_str(j, "name", n->name);
    tb_json_u64(j, "code", n->code);
    tb_json_str(j, "tls", n->tls == 13 ? "1.3" : "1.2");
    tb_json_object_end(j);
  }
  tb_json_array_end(j);
  write_names(j, "groups", tb_group_names);
  write_names(j, "sigalgs", tb_sigalg_names);
  write_names(j, "aeads", tb_aead_names);
  write_names(j, "certs", tb_cert_kinds);
  tb_json_object(j, "ranges");
  write_range(j, "chain", 1, TB_CHAIN_MAX);
  write_range(j, "record_size", TB_RECORD_SIZE_MIN, TB_RECORD_SIZE_MAX);
  write_range(j, "payload", 1, TB_PAYLOAD_MAX);
  write_range(j, "bytes", 1, TB_BYTES_MAX);
  write_range(j, "iterations", 1, TB_ITERATIONS_MAX);
  write_range(j, "warmup", 0, TB_WARMUP_MAX);
  tb_json_object_end(j);
  tb_json_object_end(j);
}

static void write_negotiated(tb_json *j, const tb_run *r) {
  if (!r->have_negotiated) {
    tb_json_null(j, "negotiated");
    return;
  }
  /* A process of one side knows only that side's readback. */
  const char *scenario = r->opt->scenario;
  int peer = two_process_scenario(scenario);
  int server_side = strcmp(scenario, "serve") == 0 ||
                    (strcmp(scenario, "peer") == 0 && r->opt->role == TB_SERVER);
  const tb_negotiated *n = server_side ? &r->server_neg : &r->client_neg;
  tb_json_object(j, "negotiated");
  tb_json_str(j, "version", n->version);
  tb_json_str(j, "suite", n->suite);
  tb_json_str(j, "group", n->group);
  tb_json_str(j, "sigalg", n->sigalg);
  /* The client's CertificateVerify (mutual auth): omitted when the client signed nothing,
   * so that other results keep the shape they were stored with. */
  if (n->client_sigalg[0] != '\0') tb_json_str(j, "client_sigalg", n->client_sigalg);
  tb_json_object(j, "peer_verified");
  /* A peer process knows only its own side's verification. */
  if (!peer || !server_side) tb_json_bool(j, "client", r->client_neg.peer_verified);
  if (!peer || server_side) tb_json_bool(j, "server", r->server_neg.peer_verified);
  tb_json_object_end(j);
  tb_json_bool(j, "resumed", n->resumed);
  tb_json_object_end(j);
}

static void write_side_heap(tb_json *j, const char *key, const tb_heap_report *h) {
  if (!h->valid) {
    tb_json_null(j, key);
    return;
  }
  tb_json_object(j, key);
  tb_json_u64(j, "start", h->start);
  tb_json_u64(j, "ctx", h->ctx);
  tb_json_u64(j, "peak", h->peak);
  tb_json_u64(j, "retained", h->retained);
  tb_json_u64(j, "peak_minus_start", h->peak - h->start);
  tb_json_u64(j, "retained_minus_start", h->retained - h->start);
  tb_json_u64(j, "conn_peak", h->peak - h->ctx);
  tb_json_u64(j, "conn_retained", h->retained - h->ctx);
  tb_json_u64(j, "handshake_allocs", h->handshake_allocs);
  /* Contexts and the connection's handshake calls: how deep the side's stack went. */
  if (h->stack) tb_json_u64(j, "stack", h->stack);
  if (h->pool_valid) {
    /* The library's own pool (wolfSSL static memory), as it counts it. */
    tb_json_u64(j, "pool_peak", h->pool_peak);
    tb_json_u64(j, "pool_retained", h->pool_retained);
  }
  tb_json_object(j, "usable");
  tb_json_u64(j, "start", h->start_usable);
  tb_json_u64(j, "ctx", h->ctx_usable);
  tb_json_u64(j, "peak", h->peak_usable);
  tb_json_u64(j, "retained", h->retained_usable);
  tb_json_object_end(j);
  tb_json_object_end(j);
}

static void write_wire_side(tb_json *j, const char *key, const tb_wire_side *w) {
  tb_json_object(j, key);
  tb_json_u64(j, "bytes_sent", w->bytes);
  tb_json_u64(j, "records_sent", w->records);
  tb_json_u64(j, "flights_sent", w->flights);
  tb_json_object_end(j);
}

/* Bytes, records and flights per side of the first full and first resumed handshake. */
static void write_wire(tb_json *j, const tb_run *r) {
  const tb_wire_report *reports[2] = {&r->wire_full, &r->wire_resumed};
  const char *keys[2] = {"full", "resumed"};
  tb_json_object(j, "wire");
  for (int i = 0; i < 2; i++) {
    if (!reports[i]->valid) continue;
    tb_json_object(j, keys[i]);
    if (strcmp(r->opt->scenario, "peer") == 0) {
      /* One side: what it sent, and everything it received. */
      int server = r->opt->role == TB_SERVER;
      write_wire_side(j, server ? "server" : "client",
                      server ? &reports[i]->wire.server : &reports[i]->wire.client);
      tb_json_u64(j, "bytes_received", r->peer_bytes_received);
      if (!server) tb_json_u64(j, "client_hello_bytes", reports[i]->wire.client.first_record);
      if (!server) tb_json_u64(j, "round_trips", reports[i]->client_rtt);
    } else {
      write_wire_side(j, "client", &reports[i]->wire.client);
      write_wire_side(j, "server", &reports[i]->wire.server);
      tb_json_u64(j, "client_hello_bytes", reports[i]->wire.client.first_record);
      tb_json_u64(j, "round_trips", reports[i]->client_rtt);
    }
    tb_json_object_end(j);
  }
  tb_json_object_end(j);
}

static void write_heap(tb_json *j, const tb_run *r) {
  if (!tb_heap_accounting) {
    tb_json_null(j, "heap"); /* the timing driver: heap is measured by tlsbench-driver-heap */
    return;
  }
  tb_heap_counters process;
  tb_heap_get(TB_SIDES, &process);
  tb_json_object(j, "heap");
  tb_json_object(j, "global");
  tb_json_u64(j, "live", r->heap_global.live);
  tb_json_u64(j, "peak", r->heap_global.peak);
  tb_json_u64(j, "allocs", r->heap_global.allocs);
  tb_json_object_end(j);
  write_side_heap(j, "client", &r->heap_client);
  write_side_heap(j, "server", &r->heap_server);
  if (r->heap_client_warm.valid) {
    write_side_heap(j, "client_warm", &r->heap_client_warm);
    write_side_heap(j, "server_warm", &r->heap_server_warm);
  }
  tb_json_object(j, "process");
  tb_json_u64(j, "peak", process.peak);
  tb_json_u64(j, "peak_usable", process.peak_usable);
  tb_json_u64(j, "allocs", process.allocs);
  tb_json_object_end(j);
  tb_json_object_end(j);
}

static void write_samples(tb_json *j, const tb_run *r) {
  tb_json_object(j, "samples");
  for (int i = 0; i < r->n_series; i++) {
    tb_json_array(j, r->series[i].name);
    for (size_t k = 0; k < r->series[i].n; k++) tb_json_double(j, NULL, r->series[i].values[k]);
    tb_json_array_end(j);
  }
  tb_json_object_end(j);
  tb_json_object(j, "summary");
  for (int i = 0; i < r->n_series; i++) {
    tb_summary s;
    tb_summarize(r->series[i].values, r->series[i].n, &s);
    tb_json_object(j, r->series[i].name);
    tb_json_str(j, "unit", r->series[i].unit);
    if (r->series[i].resolution_ns > 0) {
      tb_json_double(j, "resolution_ns", r->series[i].resolution_ns);
    }
    tb_json_u64(j, "n", s.n);
    tb_json_double(j, "min", s.min);
    tb_json_double(j, "median", s.median);
    tb_json_double(j, "mean", s.mean);
    tb_json_double(j, "p99", s.p99);
    tb_json_double(j, "max", s.max);
    tb_json_object_end(j);
  }
  tb_json_object_end(j);
}

static void print_text(const tb_run *r, int code) {
  if (code != TB_EXIT_OK) return;
  if (r->have_negotiated) {
    printf("negotiated TLS %s %s group=%s sigalg=%s resumed=%d\n", r->client_neg.version,
           r->client_neg.suite, r->client_neg.group[0] ? r->client_neg.group : "-",
           r->client_neg.sigalg[0] ? r->client_neg.sigalg : "-", r->client_neg.resumed);
  }
  const tb_heap_report *sides[2] = {&r->heap_client, &r->heap_server};
  for (int s = 0; s < 2; s++) {
    if (!sides[s]->valid) continue;
    printf("heap %-6s start %8lu  peak %8lu  retained %8lu  (connection: peak %lu, retained %lu)\n",
           s ? "server" : "client", (unsigned long)sides[s]->start, (unsigned long)sides[s]->peak,
           (unsigned long)sides[s]->retained, (unsigned long)(sides[s]->peak - sides[s]->ctx),
           (unsigned long)(sides[s]->retained - sides[s]->ctx));
  }
  for (int i = 0; i < r->n_series; i++) {
    tb_summary s;
    tb_summarize(r->series[i].values, r->series[i].n, &s);
    printf("%-18s n=%-6zu min %12.1f  median %12.1f  mean %12.1f  p99 %12.1f  max %12.1f %s\n",
           r->series[i].name, s.n, s.min, s.median, s.mean, s.p99, s.max, r->series[i].unit);
  }
}

int main(int argc, char **argv) {
  tb_options opt;
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    usage(stdout);
    return TB_EXIT_OK;
  }
  if (parse_options(argc, argv, &opt) != 0) {
    fprintf(stderr, "tlsbench-driver: --help lists the scenarios and options\n");
    return TB_EXIT_USAGE;
  }
  const tb_adapter *ad = &tb_adapter_impl;
  tb_run run;
  memset(&run, 0, sizeof(run));
  run.ad = ad;
  run.opt = &opt;
  run.tsc_hz = tb_tsc_hz();
  (void)tb_tsc_overhead(); /* calibrated before anything is measured */
  (void)tb_thread_cpu_overhead();
  (void)tb_tsc_step();
  tb_collect_init();
  double calibration_before_ns = tb_calibration_ns(run.tsc_hz);
  if (strcmp(ad->name, "null") == 0) tb_warn(&run, "null adapter: no TLS, the harness baseline");

  /* In text mode the JSON goes nowhere; the same code path runs either way. */
  FILE *json_out = opt.json ? stdout : fopen("/dev/null", "w");
  tb_json j;
  tb_json_init(&j, json_out);
  tb_json_object(&j, NULL);
  tb_json_u64(&j, "schema", SCHEMA_VERSION);
  /* Which kind of run this is: "time" (no accounting in the allocation path) or "heap". */
  tb_json_str(&j, "measure", tb_heap_accounting ? "heap" : "time");
  tb_json_str(&j, "variant", opt.variant);
  tb_json_str(&j, "library", ad->name);
  tb_json_str(&j, "scenario", opt.scenario);
  write_params(&j, &opt);

  tb_heap_reset_peak(TB_SIDES);
  tb_status st = TB_ON(TB_SIDE_GLOBAL, ad->global_init(run.err));
  tb_heap_get(TB_SIDE_GLOBAL, &run.heap_global);
  int code = TB_EXIT_OK;
  if (st != TB_OK) {
    code = tb_fail_stage(&run, st == TB_UNSUPPORTED ? TB_EXIT_UNSUPPORTED : TB_EXIT_HANDSHAKE,
                         "global init");
  }
  tb_info info;
  memset(&info, 0, sizeof(info));
  if (code == TB_EXIT_OK && TB_ON(TB_SIDE_GLOBAL, ad->info(&info, run.err)) == TB_OK) {
    tb_json_str(&j, "version", info.version);
  }
  if (code == TB_EXIT_OK && ad->cpu_paths != NULL) {
    char paths[512] = "";
    ad->cpu_paths(paths, sizeof(paths));
    tb_json_str(&j, "cpu_paths", paths);
  }
  if (code == TB_EXIT_OK) {
    if (strcmp(opt.scenario, "handshake") == 0) {
      code = tb_scenario_handshake(&run);
    } else if (strcmp(opt.scenario, "resume") == 0) {
      code = tb_scenario_resume(&run);
    } else if (strcmp(opt.scenario, "records") == 0) {
      code = tb_scenario_records(&run);
    } else if (strcmp(opt.scenario, "bulk") == 0) {
      code = tb_scenario_bulk(&run);
    } else if (strcmp(opt.scenario, "aead") == 0) {
      code = tb_scenario_aead(&run, &j);
    } else if (strcmp(opt.scenario, "peer") == 0) {
      code = tb_scenario_peer(&run);
      if (opt.role == TB_SERVER && run.peer_port) tb_json_u64(&j, "port", run.peer_port);
    } else if (strcmp(opt.scenario, "serve") == 0) {
      code = tb_scenario_serve(&run, &j);
    } else if (strcmp(opt.scenario, "load") == 0) {
      code = tb_scenario_load(&run, &j);
    } else {
      code = tb_scenario_info(&run, &j);
      write_declared(&j);
    }
  }
  tb_teardown(&run);

  tb_json_object(&j, "calibration");
  tb_json_str(&j, "workload", tb_calibration_workload);
  tb_json_double(&j, "before_ns", calibration_before_ns);
  tb_json_double(&j, "after_ns", tb_calibration_ns(run.tsc_hz));
  tb_json_object_end(&j);
  tb_json_double(&j, "tsc_hz", run.tsc_hz);
  tb_json_u64(&j, "tsc_overhead_cycles", tb_tsc_overhead());
  /* The resolution of one TSC sample (single-record latencies are multiples of it), and
   * the thread-CPU-clock cost subtracted from every per-call CPU interval. */
  tb_json_double(&j, "tsc_step_ns", (double)tb_tsc_step() * 1e9 / run.tsc_hz);
  tb_json_u64(&j, "thread_cpu_overhead_ns", tb_thread_cpu_overhead());
  tb_json_str(&j, "collect", tb_collect_mode());
  if (code == TB_EXIT_OK) {
    write_negotiated(&j, &run);
    if (run.wire_full.valid) write_wire(&j, &run);
    write_heap(&j, &run);
    write_samples(&j, &run);
  } else {
    /* A failed run reports no sample: only what failed, where, and the library's words. */
    tb_json_object(&j, "error");
    tb_json_str(&j, "stage", run.stage);
    tb_json_str(&j, "message", run.err);
    tb_json_object_end(&j);
  }
  tb_json_array(&j, "warnings");
  for (int i = 0; i < run.n_warnings; i++) tb_json_str(&j, NULL, run.warnings[i]);
  tb_json_array_end(&j);
  tb_json_i64(&j, "exit", code);
  tb_json_object_end(&j);
  if (!opt.json) {
    fclose(json_out);
    print_text(&run, code);
  }
  if (code != TB_EXIT_OK) {
    fprintf(stderr, "tlsbench-driver: %s failed (exit %d): %s\n", run.stage, code, run.err);
  }
  TB_ON(TB_SIDE_GLOBAL, (ad->global_cleanup(), TB_OK));
  return code;
}
