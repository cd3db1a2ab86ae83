/*
 * The null adapter: no library, no crypto. Records are framed in plaintext (a 5-byte
 * header like TLS) and the "handshake" is one message each way. It measures the harness's
 * own cost (transport, framing loop, timing and checks), as the baseline every library's
 * figure includes. It echoes the requested parameters as "negotiated", and the driver
 * marks its output as the baseline.
 */
#include <stdlib.h>
#include <string.h>

#include "tlsbench/driver.h"

#define HEADER 5
#define MAX_RECORD 16384

typedef struct null_ctx {
  tb_config cfg;
} null_ctx;

typedef struct null_conn {
  null_ctx *ctx;
  tb_transport io;
  int state; /* 0: start, 1: hello sent (client) / waiting (server), 2: done */
  unsigned char in[HEADER + MAX_RECORD];
  size_t in_len;
  size_t body_left; /* application bytes of the current record not yet read */
  size_t out_max;
} null_conn;

static tb_status global_init(char *err) {
  (void)err;
  return TB_OK;
}

static void global_cleanup(void) {}

static const char *const versions[] = {"1.2", "1.3", NULL};
static const char *const empty[] = {NULL};

static tb_status info(tb_info *out, char *err) {
  (void)err;
  strcpy(out->version, "null 1 (no TLS)");
  out->build_options = empty;
  out->versions = versions;
  out->suites = empty;
  out->groups = empty;
  out->sigalgs = empty;
  return TB_OK;
}

static int one_of(const char *value, const char *const *names) {
  for (; *names != NULL; names++) {
    if (value != NULL && strcmp(value, *names) == 0) return 1;
  }
  return 0;
}

/* The baseline negotiates nothing and verifies nothing: it takes the driver's defaults
 * (the suite, group and signature scheme a point gets when it names none) and refuses any
 * other choice, and a wrong CA, as unsupported, rather than pretend to honour them. */
static tb_status ctx_new(const tb_config *cfg, void **ctx, char *err) {
  static const char *const suites[] = {"TLS_AES_128_GCM_SHA256",
                                       "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                                       "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", NULL};
  static const char *const groups[] = {"x25519", "secp256r1", "secp384r1", NULL};
  if (cfg->psk.mode != TB_PSK_NONE) {
    return tb_fail(err, TB_UNSUPPORTED, "the null adapter has no pre-shared keys");
  }
  if (!one_of(cfg->suite, suites)) {
    return tb_fail(err, TB_UNSUPPORTED, "the null adapter has no cipher suites (asked: %s)",
                   cfg->suite);
  }
  if (!one_of(cfg->group, groups)) {
    return tb_fail(err, TB_UNSUPPORTED, "the null adapter has no key exchange (asked: %s)",
                   cfg->group);
  }
  if (cfg->key_share != NULL) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "the null adapter sends no key share, so no HelloRetryRequest (asked: %s)",
                   cfg->key_share);
  }
  const char *ca = cfg->ca_file ? strrchr(cfg->ca_file, '/') : NULL;
  if (ca != NULL && strcmp(ca, "/wrong-ca.pem") == 0) {
    return tb_fail(err, TB_UNSUPPORTED, "the null adapter verifies no certificate (--wrong-ca)");
  }
  null_ctx *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->cfg = *cfg;
  *ctx = c;
  return TB_OK;
}

static void ctx_free(void *ctx) { free(ctx); }

static tb_status conn_new(void *ctx, const tb_transport *transport, void *session, void **conn,
                          char *err) {
  if (transport->bio) {
    return tb_fail(err, TB_UNSUPPORTED, "the null adapter has no BIO layer");
  }
  (void)session;
  if (transport->fd >= 0) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "the null baseline has no socket I/O of its own (--io fd is for libraries)");
  }
  null_conn *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->ctx = ctx;
  c->io = *transport;
  c->out_max = c->ctx->cfg.record_size && c->ctx->cfg.record_size < MAX_RECORD
                   ? c->ctx->cfg.record_size
                   : MAX_RECORD;
  *conn = c;
  return TB_OK;
}

static void conn_free(void *conn) { free(conn); }

static tb_status send_record(null_conn *c, unsigned char type, const unsigned char *buf, size_t len,
                             char *err) {
  unsigned char header[HEADER] = {type, 3, 3, (unsigned char)(len >> 8), (unsigned char)len};
  if (c->io.send(c->io.io, header, HEADER) != HEADER ||
      c->io.send(c->io.io, buf, len) != (long)len) {
    return tb_fail(err, TB_FAILED, "transport send failed");
  }
  return TB_OK;
}

/* Gathers one whole record into c->in; TB_WANT_IO until it is complete. */
static tb_status receive_record(null_conn *c, char *err) {
  for (;;) {
    size_t want = HEADER;
    if (c->in_len >= HEADER) {
      want = HEADER + ((size_t)c->in[3] << 8 | c->in[4]);
      if (want > sizeof(c->in)) return tb_fail(err, TB_FAILED, "record too long");
      if (c->in_len == want) return TB_OK;
    }
    long got = c->io.recv(c->io.io, c->in + c->in_len, want - c->in_len);
    if (got == TB_IO_WOULD_BLOCK) return TB_WANT_IO;
    if (got <= 0) return tb_fail(err, TB_FAILED, "transport closed");
    c->in_len += (size_t)got;
  }
}

static tb_status handshake(void *conn, char *err) {
  null_conn *c = conn;
  static const unsigned char hello[] = "hello";
  if (c->state == 2) return TB_OK;
  if (c->ctx->cfg.role == TB_CLIENT && c->state == 0) {
    tb_status st = send_record(c, 22, hello, sizeof(hello), err);
    if (st != TB_OK) return st;
    c->state = 1;
  }
  tb_status st = receive_record(c, err);
  if (st != TB_OK) return st;
  c->in_len = 0;
  if (c->ctx->cfg.role == TB_SERVER) {
    st = send_record(c, 22, hello, sizeof(hello), err);
    if (st != TB_OK) return st;
  }
  c->state = 2;
  return TB_OK;
}

static tb_status write_data(void *conn, const unsigned char *buf, size_t len, size_t *done,
                            char *err) {
  null_conn *c = conn;
  size_t n = len < c->out_max ? len : c->out_max;
  tb_status st = send_record(c, 23, buf, n, err);
  *done = st == TB_OK ? n : 0;
  return st;
}

/* Application data goes straight from the queue into the caller's buffer: the baseline is
 * the least a record layer can do (a header and one copy each way). */
static tb_status read_data(void *conn, unsigned char *buf, size_t len, size_t *done, char *err) {
  null_conn *c = conn;
  *done = 0;
  if (c->body_left == 0) {
    while (c->in_len < HEADER) {
      long got = c->io.recv(c->io.io, c->in + c->in_len, HEADER - c->in_len);
      if (got == TB_IO_WOULD_BLOCK) return TB_WANT_IO;
      if (got <= 0) return tb_fail(err, TB_FAILED, "transport closed");
      c->in_len += (size_t)got;
    }
    c->in_len = 0;
    c->body_left = (size_t)c->in[3] << 8 | c->in[4];
  }
  size_t want = len < c->body_left ? len : c->body_left;
  while (*done < want) {
    long got = c->io.recv(c->io.io, buf + *done, want - *done);
    if (got == TB_IO_WOULD_BLOCK) break;
    if (got <= 0) return tb_fail(err, TB_FAILED, "transport closed");
    *done += (size_t)got;
  }
  c->body_left -= *done;
  return *done ? TB_OK : TB_WANT_IO;
}

static tb_status negotiated(void *conn, tb_negotiated *out, char *err) {
  (void)err;
  const tb_config *cfg = &((null_conn *)conn)->ctx->cfg;
  memset(out, 0, sizeof(*out));
  strcpy(out->version, cfg->tls_version == 13 ? "1.3" : "1.2");
  /* A fake library can "negotiate" something else on request: the tests use this to prove
   * that the core refuses a session that differs from what was asked. */
  const char *forced = getenv("TLSBENCH_NULL_NEGOTIATE_SUITE");
  strncpy(out->suite, forced ? forced : cfg->suite ? cfg->suite : "", TB_NAME_LEN - 1);
  int static_rsa = cfg->suite && strncmp(cfg->suite, "TLS_RSA_WITH_", 13) == 0;
  if (!static_rsa) {
    strncpy(out->group, cfg->group ? cfg->group : "", TB_NAME_LEN - 1);
    strncpy(out->sigalg, cfg->sigalg ? cfg->sigalg : "", TB_NAME_LEN - 1);
  }
  if (cfg->auth == TB_AUTH_MUTUAL) {
    const char *client_sigalg = cfg->client_sigalg ? cfg->client_sigalg : cfg->sigalg;
    strncpy(out->client_sigalg, client_sigalg ? client_sigalg : "", TB_NAME_LEN - 1);
  }
  out->peer_verified =
      cfg->role == TB_CLIENT ? cfg->auth != TB_AUTH_NONE : cfg->auth == TB_AUTH_MUTUAL;
  return TB_OK;
}

static tb_status session_get(void *conn, void **session, char *err) {
  (void)conn;
  (void)session;
  return tb_fail(err, TB_UNSUPPORTED, "the null adapter has no sessions to resume");
}

static void session_free(void *session) { (void)session; }

/* The library's TLS, as the scenarios use it. */
static const tb_tls_class kTls = {
    .ctx_new = ctx_new,
    .ctx_free = ctx_free,
    .conn_new = conn_new,
    .conn_free = conn_free,
    .handshake = handshake,
    .write = write_data,
    .read = read_data,
    .negotiated = negotiated,
    .session_get = session_get,
    .session_free = session_free,
};

static tb_status aead_new(tb_aead_alg alg, const unsigned char *key, size_t key_len, void **aead,
                          char *err) {
  (void)alg;
  (void)key;
  (void)key_len;
  (void)aead;
  return tb_fail(err, TB_UNSUPPORTED, "the null adapter has no AEAD");
}

static tb_status aead_none(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                           const unsigned char *ad, size_t ad_len, const unsigned char *in,
                           size_t len, unsigned char *out, char *err) {
  (void)aead, (void)nonce, (void)ad, (void)ad_len, (void)in, (void)len, (void)out;
  return tb_fail(err, TB_UNSUPPORTED, "the null adapter has no AEAD");
}

static void aead_free(void *aead) { (void)aead; }

/* The library's own AEAD API, as the aead scenario uses it. */
static const tb_aead_class kAead = {
    .create = aead_new,
    .seal = aead_none,
    .open = aead_none,
    .free = aead_free,
};

const tb_adapter tb_adapter_impl = {
    .name = "null",
    .global_init = global_init,
    .global_cleanup = global_cleanup,
    .info = info,
    .tls = &kTls,
    .aead = &kAead,
};
