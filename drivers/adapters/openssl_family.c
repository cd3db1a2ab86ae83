/* What the OpenSSL-family adapters share (openssl_family.h), compiled with each of them. */
#include "openssl_family.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#ifdef TB_BSSL_API
#include <openssl/aead.h>
#include <openssl/ec.h>
#include <openssl/ec_key.h>
#include <openssl/evp.h>
#include <openssl/nid.h>
#endif

#if defined(OPENSSL_IS_AWSLC)
#define TB_LIBRARY "AWS-LC"
#elif defined(OPENSSL_IS_BORINGSSL)
#define TB_LIBRARY "BoringSSL"
#else
#define TB_LIBRARY "OpenSSL"
#endif

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------- errors */

tb_status tb_ossl_fail(char *err, tb_status status, const char *what) {
  char text[TB_ERR_LEN] = "";
  size_t used = 0;
  unsigned long e; /* unsigned long in OpenSSL, uint32_t in its forks */
  while ((e = ERR_get_error()) != 0) {
    char one[160];
    ERR_error_string_n(e, one, sizeof(one));
    int n = snprintf(text + used, sizeof(text) - used, "%s%s", used ? "; " : "", one);
    if (n < 0 || (size_t)n >= sizeof(text) - used) break;
    used += (size_t)n;
  }
  ERR_clear_error();
  return tb_fail(err, status, "%s: %s", what, used ? text : "(no " TB_LIBRARY " error queued)");
}

/* ERR_clear_error costs ~85 ns even on an empty queue, a sixth of a small record write;
 * peeking first costs ~14 ns. */
void tb_ossl_clear_stale_errors(void) {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

/* ------------------------------------------------------------------------- transport BIO */

static BIO_METHOD *g_bio_method;
static const tb_ossl_class *g_class; /* the adapter's, one per process */

static int bio_write(BIO *bio, const char *buf, int len) {
  tb_transport *t = BIO_get_data(bio);
  BIO_clear_retry_flags(bio);
  long n = t->send(t->io, (const unsigned char *)buf, (size_t)len);
  if (n > 0) return (int)n;
  if (n == 0 || n == TB_IO_WOULD_BLOCK) BIO_set_retry_write(bio);
  return -1;
}

static int bio_read(BIO *bio, char *buf, int len) {
  tb_transport *t = BIO_get_data(bio);
  BIO_clear_retry_flags(bio);
  long n = t->recv(t->io, (unsigned char *)buf, (size_t)len);
  if (n >= 0) return (int)n; /* 0: the peer closed the stream (EOF) */
  if (n == TB_IO_WOULD_BLOCK) BIO_set_retry_read(bio);
  return -1;
}

static long bio_ctrl(BIO *bio, int cmd, long num, void *ptr) {
  (void)bio;
  (void)num;
  (void)ptr;
  /* The transport has no buffering of its own: a flush is always complete. Everything
   * else (pending counts, kTLS queries, ...) is "not supported", as for a plain socket. */
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *bio) {
  BIO_set_init(bio, 1);
  return 1;
}

tb_status tb_ossl_global_init(const tb_ossl_class *cls, char *err) {
  g_class = cls;
  BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tb_transport");
  if (m == NULL || !BIO_meth_set_write(m, bio_write) || !BIO_meth_set_read(m, bio_read) ||
      !BIO_meth_set_ctrl(m, bio_ctrl) || !BIO_meth_set_create(m, bio_create)) {
    BIO_meth_free(m);
    return tb_ossl_fail(err, TB_FAILED, "BIO_meth_new");
  }
  g_bio_method = m;
  return TB_OK;
}

void tb_ossl_global_cleanup(void) {
  BIO_meth_free(g_bio_method);
  g_bio_method = NULL;
}

/* ------------------------------------------------------------------------- contexts */

static int version_of(int tls_version) {
  return tls_version == 13 ? TLS1_3_VERSION : tls_version == 12 ? TLS1_2_VERSION : 0;
}

static tb_status load_own_chain(SSL_CTX *ctx, const tb_config *cfg, char *err) {
  if (cfg->chain_file == NULL) return TB_OK;
  /* A key or certificate the security level refuses (e.g. RSA-1024 in OpenSSL: "ee key too
   * small") fails here; the library's default level is kept and this reported. */
  if (!SSL_CTX_use_certificate_chain_file(ctx, cfg->chain_file))
    return tb_ossl_fail(err, TB_FAILED, "certificate chain");
  if (cfg->key_file == NULL || !SSL_CTX_use_PrivateKey_file(ctx, cfg->key_file, SSL_FILETYPE_PEM))
    return tb_ossl_fail(err, TB_FAILED, "private key");
  if (!SSL_CTX_check_private_key(ctx)) return tb_ossl_fail(err, TB_FAILED, "key/certificate");
  return TB_OK;
}

/* --deterministic: certificates are checked against a fixed time instead of the clock.
 * OpenSSL formats the time it checks against into a string for every certificate
 * (X509_cmp_time), and the digits of the clock's seconds, minutes and hours change that
 * cost from one run to the next. The fixed time is a day after the trust anchor's
 * notBefore: tlsbench's certificates share one validity, from a day before they were made,
 * so that time lies inside every one of them. */
static int fixed_verify_time;

void tb_ossl_fix_verify_time(void) { fixed_verify_time = 1; }

static int not_before(X509 *cert, int64_t *out) {
#ifdef TB_BSSL_API
  return ASN1_TIME_to_posix(X509_get0_notBefore(cert), out);
#else
  struct tm tm;
  if (!ASN1_TIME_to_tm(X509_get0_notBefore(cert), &tm)) return 0;
  *out = (int64_t)timegm(&tm);
  return 1;
#endif
}

static tb_status set_fixed_verify_time(SSL_CTX *ctx, const char *ca_file, char *err) {
  BIO *in = BIO_new_file(ca_file, "r");
  X509 *anchor = in != NULL ? PEM_read_bio_X509(in, NULL, NULL, NULL) : NULL;
  BIO_free(in);
  int64_t start = 0;
  int ok = anchor != NULL && not_before(anchor, &start);
  X509_free(anchor);
  if (!ok) return tb_ossl_fail(err, TB_FAILED, "the trust anchor's notBefore (fixed time)");
  X509_VERIFY_PARAM_set_time(SSL_CTX_get0_param(ctx), (time_t)(start + 24 * 3600));
  return TB_OK;
}

/* A trust anchor whose public key this library cannot read (an SLH-DSA root where the library
 * has no SLH-DSA) verifies nothing it issued: the run is unsupported, said before the
 * handshake fails on it with an unknown-algorithm verification error. */
static tb_status check_anchor_key(const tb_ossl_class *cls, const char *ca_file, char *err) {
  BIO *in = BIO_new_file(ca_file, "r");
  X509 *anchor = in != NULL ? PEM_read_bio_X509(in, NULL, NULL, NULL) : NULL;
  BIO_free(in);
  if (anchor == NULL) return tb_ossl_fail(err, TB_FAILED, "the trust anchor (ca_file)");
  int readable = X509_get0_pubkey(anchor) != NULL;
  X509_free(anchor);
  ERR_clear_error();
  if (!readable)
    return tb_fail(err, TB_UNSUPPORTED,
                   "%s cannot read the trust anchor's key (%s), so cannot verify its chains",
                   cls->library, ca_file);
  return TB_OK;
}

static tb_status set_verification(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                                  char *err) {
  int verifies = cfg->role == TB_CLIENT ? cfg->auth != TB_AUTH_NONE : cfg->auth == TB_AUTH_MUTUAL;
  if (!verifies) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    return TB_OK;
  }
  if (cfg->ca_file == NULL || !SSL_CTX_load_verify_locations(ctx, cfg->ca_file, NULL))
    return tb_ossl_fail(err, TB_FAILED, "trust anchors (ca_file)");
  tb_status anchor = check_anchor_key(cls, cfg->ca_file, err);
  if (anchor != TB_OK) return anchor;
  int mode = SSL_VERIFY_PEER;
  if (cfg->role == TB_SERVER) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  SSL_CTX_set_verify(ctx, mode, NULL);
  if (fixed_verify_time) {
    tb_status st = set_fixed_verify_time(ctx, cfg->ca_file, err);
    if (st != TB_OK) return st;
  }
  if (cfg->role == TB_CLIENT) {
    if (cfg->server_name == NULL) return tb_fail(err, TB_UNSUPPORTED, "no server_name");
    X509_VERIFY_PARAM *param = SSL_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (!X509_VERIFY_PARAM_set1_host(param, cfg->server_name, strlen(cfg->server_name)))
      return tb_ossl_fail(err, TB_FAILED, "X509_VERIFY_PARAM_set1_host");
  }
  return TB_OK;
}

static void set_resumption(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg) {
  if (cfg->role == TB_SERVER) {
    /* Needed for resumption when the server verifies clients (else OpenSSL's "session id
     * context uninitialized"); harmless otherwise. */
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"tlsbench", 8);
  }
  if (!cfg->resumption) {
    /* Full handshakes only: no TLS 1.2 ticket extension, no TLS 1.3 NewSessionTicket
     * (servers of all three send two by default), no session cache. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    return;
  }
  if (cfg->role == TB_SERVER) {
    /* Stateless tickets (TLS 1.2 and 1.3) and the session-ID cache (TLS 1.2). One ticket
     * is what a resuming client needs; the default of two doubles the ticket work. */
    SSL_CTX_set_num_tickets(ctx, 1);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
  } else if (cls->new_session != NULL) {
    /* The callback hands each new session to its connection; no internal cache. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
    SSL_CTX_sess_set_new_cb(ctx, cls->new_session);
  } else {
    /* The client keeps its session through session_get / SSL_get1_session; an internal
     * client cache would only grow the context with every ticket received. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  }
}

tb_status tb_ossl_set_send_fragment(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                                    char *err) {
  size_t rs = cfg->record_size;
  if (rs == 0) return TB_OK;
  if (rs < 512 || rs > SSL3_RT_MAX_PLAIN_LENGTH || !SSL_CTX_set_max_send_fragment(ctx, rs)) {
    ERR_clear_error();
    return tb_fail(err, TB_UNSUPPORTED, "%s's max_send_fragment takes 512..16384, not %zu",
                   cls->library, rs);
  }
  return TB_OK;
}

/* ------------------------------------------------------------------------- pre-shared keys */

const tb_ossl_psk *tb_ossl_psk_of(const SSL *ssl) {
  const tb_ossl_ctx *oc = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
  return oc != NULL ? &oc->psk : NULL;
}

static unsigned psk12_client(SSL *ssl, const char *hint, char *identity, unsigned max_identity_len,
                             unsigned char *psk, unsigned max_psk_len) {
  (void)hint;
  const tb_ossl_psk *p = tb_ossl_psk_of(ssl);
  if (p == NULL || strlen(p->identity) >= max_identity_len || p->key_len > max_psk_len) return 0;
  snprintf(identity, max_identity_len, "%s", p->identity);
  memcpy(psk, p->key, p->key_len);
  return (unsigned)p->key_len;
}

/* An unknown identity gets no key (0): the library ends the handshake with
 * unknown_psk_identity. */
static unsigned psk12_server(SSL *ssl, const char *identity, unsigned char *psk,
                             unsigned max_psk_len) {
  const tb_ossl_psk *p = tb_ossl_psk_of(ssl);
  if (p == NULL || identity == NULL || strcmp(identity, p->identity) != 0 ||
      p->key_len > max_psk_len)
    return 0;
  memcpy(psk, p->key, p->key_len);
  return (unsigned)p->key_len;
}

void tb_ossl_psk_tls12_callbacks(SSL_CTX *ctx) {
  SSL_CTX_set_psk_client_callback(ctx, psk12_client);
  SSL_CTX_set_psk_server_callback(ctx, psk12_server);
}

int tb_ossl_psk_mode_of_cipher(const SSL_CIPHER *cipher) {
  if (SSL_CIPHER_get_auth_nid(cipher) != NID_auth_psk) return TB_PSK_NONE;
  return SSL_CIPHER_get_kx_nid(cipher) == NID_kx_psk ? TB_PSK_KE : TB_PSK_DHE;
}

/* A PSK run: the key kept with the context, then the library's own PSK set-up. */
static tb_status set_psk(const tb_ossl_class *cls, tb_ossl_ctx *oc, const tb_config *cfg,
                         char *err) {
  tb_ossl_psk *p = &oc->psk;
  if (cfg->psk.key_len > sizeof(p->key) || strlen(cfg->psk.identity) >= sizeof(p->identity))
    return tb_fail(err, TB_FAILED, "the pre-shared key or its identity is too long");
  if (cls->set_psk == NULL)
    return tb_fail(err, TB_UNSUPPORTED, "%s has no pre-shared keys", cls->library);
  p->mode = cfg->psk.mode;
  memcpy(p->key, cfg->psk.key, cfg->psk.key_len);
  p->key_len = cfg->psk.key_len;
  snprintf(p->identity, sizeof(p->identity), "%s", cfg->psk.identity);
  snprintf(p->hash, sizeof(p->hash), "%s", cfg->psk.hash);
  SSL_CTX_set_app_data(oc->ctx, oc);
  return cls->set_psk(cls, oc->ctx, cfg, err);
}

/* OpenSSL keeps a connection's read and write buffers once allocated unless
 * SSL_MODE_RELEASE_BUFFERS; BoringSSL and AWS-LC always free them when empty (AWS-LC
 * defines the mode as 0, BoringSSL no longer defines it). */
static void set_buffer_release(SSL_CTX *ctx, const tb_config *cfg) {
#ifdef TB_BSSL_API
  (void)ctx;
  (void)cfg;
#else
  if (cfg->release_buffers) SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
#endif
}

static tb_status configure(const tb_ossl_class *cls, tb_ossl_ctx *oc, const tb_config *cfg,
                           char *err) {
  SSL_CTX *ctx = oc->ctx;
  int version = version_of(cfg->tls_version);
  if (version == 0) return tb_fail(err, TB_UNSUPPORTED, "TLS version %d", cfg->tls_version);
  if (!SSL_CTX_set_min_proto_version(ctx, (uint16_t)version) ||
      !SSL_CTX_set_max_proto_version(ctx, (uint16_t)version))
    return tb_ossl_fail(err, TB_UNSUPPORTED, "protocol version");
  /* The harness retries a write with the rest of the data: report each record as it is
   * written, and accept the retry from a different buffer address. */
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  /* Send exactly chain_file: without this OpenSSL completes a short chain from the trust
   * store (the server's ca_file in mutual mode). */
  SSL_CTX_set_mode(ctx, SSL_MODE_NO_AUTO_CHAIN);
  set_buffer_release(ctx, cfg);
  if (cls->set_callbacks != NULL) cls->set_callbacks(ctx);

  int kx_nid = NID_undef;
  tb_status st = cls->pin_offer(cls, ctx, cfg, &kx_nid, err);
  if (st == TB_OK && cfg->psk.mode != TB_PSK_NONE) st = set_psk(cls, oc, cfg, err);
  if (st == TB_OK) st = load_own_chain(ctx, cfg, err);
  if (st == TB_OK) st = cls->check_chain(cls, ctx, cfg, kx_nid, err);
  if (st == TB_OK) st = set_verification(cls, ctx, cfg, err);
  if (st == TB_OK) st = cls->set_record_size(cls, ctx, cfg, err);
  if (st != TB_OK) return st;
  set_resumption(cls, ctx, cfg);
  if (cfg->role == TB_CLIENT && cfg->server_name != NULL)
    snprintf(oc->server_name, sizeof(oc->server_name), "%s", cfg->server_name);
  return TB_OK;
}

void tb_ossl_ctx_free(void *p) {
  tb_ossl_ctx *oc = p;
  if (oc == NULL) return;
  SSL_CTX_free(oc->ctx);
  OPENSSL_cleanse(&oc->psk, sizeof(oc->psk));
  free(oc);
}

tb_status tb_ossl_ctx_new(const tb_config *cfg, void **out, char *err) {
  const tb_ossl_class *cls = g_class;
  ERR_clear_error();
  if (cfg->suite == NULL) return tb_fail(err, TB_UNSUPPORTED, "no suite given");
  tb_ossl_ctx *oc = calloc(1, sizeof(*oc));
  if (oc == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  oc->role = cfg->role;
  oc->ctx = SSL_CTX_new(cfg->role == TB_CLIENT ? TLS_client_method() : TLS_server_method());
  if (oc->ctx == NULL) {
    free(oc);
    return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_new");
  }
  tb_status st = configure(cls, oc, cfg, err);
  if (st != TB_OK) {
    tb_ossl_ctx_free(oc);
    return st;
  }
  *out = oc;
  return TB_OK;
}

/* ------------------------------------------------------------------------- connections */

void tb_ossl_conn_release(tb_ossl_conn *c) {
  SSL_free(c->ssl); /* frees the BIO too */
  free(c);
}

void *tb_ossl_conn_of(const SSL *ssl) { return SSL_get_app_data(ssl); }

tb_status tb_ossl_conn_new(void *ctx, const tb_transport *transport, void *session, void **out,
                           char *err) {
  const tb_ossl_class *cls = g_class;
  if (transport->bio) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "%s's callbacks path already is its BIO layer (a BIO method of "
                   "tlsbench's): io = callbacks measures it",
                   cls->library);
  }
  tb_ossl_ctx *oc = ctx;
  ERR_clear_error();
  tb_ossl_conn *c = calloc(1, cls->conn_size);
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->transport = *transport;
  c->ssl = SSL_new(oc->ctx);
  /* --io fd: the library's own socket BIO on the connection's file descriptor. */
  BIO *bio =
      transport->fd >= 0 ? BIO_new_socket(transport->fd, BIO_NOCLOSE) : BIO_new(g_bio_method);
  if (c->ssl == NULL || bio == NULL) {
    BIO_free(bio);
    cls->conn_free(c);
    return tb_ossl_fail(err, TB_FAILED, "SSL_new");
  }
  if (transport->fd < 0) BIO_set_data(bio, &c->transport);
  SSL_set_bio(c->ssl, bio, bio); /* one reference, owned by the SSL */
  SSL_set_app_data(c->ssl, c);
  if (oc->role == TB_CLIENT) {
    SSL_set_connect_state(c->ssl);
    if (oc->server_name[0] != '\0' && !SSL_set_tlsext_host_name(c->ssl, oc->server_name)) {
      cls->conn_free(c);
      return tb_ossl_fail(err, TB_FAILED, "SNI");
    }
    if (session != NULL && !SSL_set_session(c->ssl, session)) {
      cls->conn_free(c);
      return tb_ossl_fail(err, TB_FAILED, "SSL_set_session");
    }
  } else {
    SSL_set_accept_state(c->ssl);
  }
  *out = c;
  return TB_OK;
}

tb_status tb_ossl_close(void *conn, char *err) {
  tb_ossl_conn *c = conn;
  /* 0: close_notify sent, the peer's not yet received (we do not wait for it). */
  if (SSL_shutdown(c->ssl) < 0) return tb_ossl_fail(err, TB_FAILED, "SSL_shutdown");
  return TB_OK;
}

tb_status tb_ossl_io_status(tb_ossl_conn *c, int ret, const char *what, char *err) {
  int e = SSL_get_error(c->ssl, ret);
  switch (e) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      return TB_WANT_IO;
    case SSL_ERROR_ZERO_RETURN:
      ERR_clear_error();
      return TB_CLOSED;
    default:
      break;
  }
  long vr = SSL_get_verify_result(c->ssl);
  if (vr != X509_V_OK && (SSL_get_verify_mode(c->ssl) & SSL_VERIFY_PEER)) {
    char buf[TB_ERR_LEN];
    snprintf(buf, sizeof(buf), "%s (verify: %s)", what, X509_verify_cert_error_string(vr));
    return tb_ossl_fail(err, TB_FAILED, buf);
  }
  if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
    return tb_fail(err, TB_FAILED, "%s: transport error or unexpected EOF", what);
  return tb_ossl_fail(err, TB_FAILED, what);
}

#ifdef OPENSSL_IS_BORINGSSL
/* BoringSSL has no SSL_write_ex / SSL_read_ex: the int-sized calls, a record at a time. */
static int write_ex(SSL *ssl, const unsigned char *buf, size_t len, size_t *done) {
  int ret = SSL_write(ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
  *done = ret > 0 ? (size_t)ret : 0;
  return ret > 0 ? 1 : ret;
}

static int read_ex(SSL *ssl, unsigned char *buf, size_t len, size_t *done) {
  int ret = SSL_read(ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
  *done = ret > 0 ? (size_t)ret : 0;
  return ret > 0 ? 1 : ret;
}
#else
#define write_ex SSL_write_ex
#define read_ex SSL_read_ex
#endif

tb_status tb_ossl_write(void *conn, const unsigned char *buf, size_t len, size_t *done, char *err) {
  tb_ossl_conn *c = conn;
  *done = 0;
  if (len == 0) return TB_OK;
  tb_ossl_clear_stale_errors();
  int ret = write_ex(c->ssl, buf, len, done);
  return ret == 1 ? TB_OK : tb_ossl_io_status(c, ret, "write", err);
}

tb_status tb_ossl_read(void *conn, unsigned char *buf, size_t len, size_t *done, char *err) {
  tb_ossl_conn *c = conn;
  *done = 0;
  tb_ossl_clear_stale_errors();
  int ret = read_ex(c->ssl, buf, len, done);
  return ret == 1 ? TB_OK : tb_ossl_io_status(c, ret, "read", err);
}

/* ------------------------------------------------------------------------- read-back */

void tb_ossl_copy_name(char *dst, const char *src) {
  snprintf(dst, TB_NAME_LEN, "%s", src != NULL ? src : "");
}

void tb_ossl_version_name(const SSL *ssl, char out[16]) {
  int v = SSL_version(ssl);
  snprintf(out, 16, "%s",
           v == TLS1_3_VERSION   ? "1.3"
           : v == TLS1_2_VERSION ? "1.2"
                                 : SSL_get_version(ssl));
}

/* Whether the peer presented a certificate (the getter takes a reference in every one of
 * the libraries and versions; the session keeps its own). */
static int peer_has_certificate(const SSL *ssl) {
  X509 *peer = SSL_get_peer_certificate(ssl);
  X509_free(peer);
  return peer != NULL;
}

int tb_ossl_peer_verified(const SSL *ssl) {
  return (SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) != 0 && peer_has_certificate(ssl) &&
         SSL_get_verify_result(ssl) == X509_V_OK;
}

void tb_ossl_describe_ia32cap(char *out, size_t len, const char *label, const uint32_t cap[4],
                              const char *tail) {
  uint64_t word1 = (uint64_t)cap[1] << 32 | cap[0]; /* CPUID.1: ECX:EDX */
  uint64_t word2 = (uint64_t)cap[3] << 32 | cap[2]; /* CPUID.7: ECX:EBX */
#define TB_BIT(w, b) (((w) >> (b)) & 1 ? "on" : "off")
  snprintf(out, len,
           "%s ia32cap 0x%016llx:0x%016llx: AES-NI %s, PCLMULQDQ %s, SSSE3 %s, AVX %s, "
           "AVX2 %s, AVX-512F %s, VAES %s, VPCLMULQDQ %s, SHA %s, ADX %s%s",
           label, (unsigned long long)word1, (unsigned long long)word2, TB_BIT(word1, 57),
           TB_BIT(word1, 33), TB_BIT(word1, 41), TB_BIT(word1, 60), TB_BIT(word2, 5),
           TB_BIT(word2, 16), TB_BIT(word2, 41), TB_BIT(word2, 42), TB_BIT(word2, 29),
           TB_BIT(word2, 19), tail);
#undef TB_BIT
}

#ifdef TB_BSSL_API
/* ------------------------------------------------------------------------- BoringSSL API */

static int implements(const uint16_t *ids, size_t n, unsigned code) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] == code) return 1;
  return 0;
}

/* The code point of one of the core's group names that the library implements, or -1. */
static int group_code(const tb_ossl_class *cls, const char *name) {
  const tb_name *g = name != NULL ? tb_name_find(tb_group_names, name) : NULL;
  return g != NULL && implements(cls->groups, cls->n_groups, g->code) ? (int)g->code : -1;
}

tb_status tb_bssl_pin_groups(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                             int kx_nid, char *err) {
  /* Static RSA and the pre-shared key alone: no group is used. */
  if (kx_nid == NID_kx_rsa || kx_nid == NID_kx_psk || cfg->psk.mode == TB_PSK_KE) return TB_OK;
  if (cfg->group == NULL) return tb_fail(err, TB_UNSUPPORTED, "no group given");
  if (strncmp(cfg->group, "ffdhe", 5) == 0)
    return tb_fail(err, TB_UNSUPPORTED, "%s has no finite-field (ffdhe) groups", cls->library);
  int group = group_code(cls, cfg->group);
  if (group < 0)
    return tb_fail(err, TB_UNSUPPORTED, "%s has no group '%s'", cls->library, cfg->group);
  /* One group and nothing else: the default list also offers X25519MLKEM768. With a key
   * share asked first (HelloRetryRequest), [key_share, group]: the client sends one share,
   * for the first group of its list. */
  uint16_t ids[2] = {(uint16_t)group, 0};
  size_t n_ids = 1;
  if (cfg->key_share != NULL) {
    int first = group_code(cls, cfg->key_share);
    if (first < 0)
      return tb_fail(err, TB_UNSUPPORTED, "%s has no group '%s'", cls->library, cfg->key_share);
    ids[0] = (uint16_t)first;
    ids[1] = (uint16_t)group;
    n_ids = 2;
  }
  if (!SSL_CTX_set1_group_ids(ctx, ids, n_ids)) {
    char what[TB_NAME_LEN + 48];
    snprintf(what, sizeof(what), "this %s build cannot offer group %s", cls->library, cfg->group);
    return tb_ossl_fail(err, TB_UNSUPPORTED, what);
  }
  return TB_OK;
}

static tb_status sigalg_code(const tb_ossl_class *cls, const tb_config *cfg, const char *name,
                             uint16_t *out, char *err) {
  const tb_name *sa = tb_name_find(tb_sigalg_names, name);
  if (sa != NULL && strncmp(name, "slhdsa", 6) == 0 &&
      !implements(cls->sigalgs, cls->n_sigalgs, sa->code))
    return tb_fail(err, TB_UNSUPPORTED, "%s has no TLS code point for SLH-DSA", cls->library);
  if (sa == NULL || !implements(cls->sigalgs, cls->n_sigalgs, sa->code))
    return tb_fail(err, TB_UNSUPPORTED, "%s has no signature scheme '%s'", cls->library, name);
  if (cfg->tls_version == 13 && sa->tls != 13)
    return tb_fail(err, TB_UNSUPPORTED, "TLS 1.3 does not allow %s", name);
  *out = (uint16_t)sa->code;
  return TB_OK;
}

/* The schemes a side signs with (signing prefs) and accepts from its peer (verify prefs:
 * also what the ClientHello and the CertificateRequest advertise) are two lists. The
 * server signs with `sigalg` and, in mutual auth, accepts the client's `client_sigalg`;
 * the client accepts `sigalg` and signs with `client_sigalg`. */
tb_status tb_bssl_pin_sigalgs(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                              int kx_nid, char *err) {
  /* Static RSA: the server signs nothing, but a client certificate still signs a
   * CertificateVerify, so a given scheme is pinned all the same. */
  if (kx_nid == NID_kx_rsa && cfg->sigalg == NULL) return TB_OK;
  if (cfg->psk.mode != TB_PSK_NONE) return TB_OK; /* the key authenticates: nothing signed */
  if (cfg->sigalg == NULL) return tb_fail(err, TB_UNSUPPORTED, "no signature scheme given");
  uint16_t server = 0, client = 0;
  tb_status st = sigalg_code(cls, cfg, cfg->sigalg, &server, err);
  if (st == TB_OK)
    st = sigalg_code(cls, cfg, cfg->client_sigalg ? cfg->client_sigalg : cfg->sigalg, &client, err);
  if (st != TB_OK) return st;
  uint16_t sign = cfg->role == TB_SERVER ? server : client;
  uint16_t verify = cfg->role == TB_SERVER ? client : server;
  if (!SSL_CTX_set_signing_algorithm_prefs(ctx, &sign, 1))
    return tb_ossl_fail(err, TB_UNSUPPORTED, "SSL_CTX_set_signing_algorithm_prefs");
  if (!SSL_CTX_set_verify_algorithm_prefs(ctx, &verify, 1))
    return tb_ossl_fail(err, TB_UNSUPPORTED, "SSL_CTX_set_verify_algorithm_prefs");
  return TB_OK;
}

/* In TLS 1.2 supported_groups also limits the curve of an ECDSA certificate (RFC 8422),
 * and both libraries enforce it: with the offer pinned to one group, a server whose ECDSA
 * key is on another curve cannot be used. Said here, where the certificate is known,
 * rather than as a handshake error. */
tb_status tb_bssl_check_chain(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                              int kx_nid, char *err) {
  (void)cls;
  if (cfg->role != TB_SERVER || cfg->tls_version != 12 || kx_nid != NID_kx_ecdhe) return TB_OK;
  X509 *leaf = SSL_CTX_get0_certificate(ctx);
  EVP_PKEY *key = leaf != NULL ? X509_get0_pubkey(leaf) : NULL;
  const EC_KEY *ec = key != NULL ? EVP_PKEY_get0_EC_KEY(key) : NULL;
  if (ec == NULL) return TB_OK;
  int nid = EC_GROUP_get_curve_name(EC_KEY_get0_group(ec));
  const char *curve = nid == NID_X9_62_prime256v1 ? "secp256r1"
                      : nid == NID_secp384r1      ? "secp384r1"
                      : nid == NID_secp521r1      ? "secp521r1"
                                                  : OBJ_nid2sn(nid);
  if (cfg->group == NULL || strcmp(curve, cfg->group) != 0)
    return tb_fail(err, TB_UNSUPPORTED,
                   "TLS 1.2 with an ECDSA certificate on %s needs that curve among the "
                   "supported groups, and the offer is pinned to %s",
                   curve, cfg->group != NULL ? cfg->group : "none");
  return TB_OK;
}

tb_status tb_bssl_set_psk(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg, char *err) {
  if (cfg->tls_version == 13) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "%s has no TLS 1.3 external PSK: its PSK callbacks serve TLS 1.2 PSK suites "
                   "only",
                   cls->library);
  }
  tb_ossl_psk_tls12_callbacks(ctx);
  return TB_OK;
}

/* Client: a TLS 1.3 ticket arrives after the handshake, as a new session object, the only
 * resumable one (the handshake's own session is not). Returns 1: the reference is ours. */
int tb_bssl_keep_new_session(SSL *ssl, SSL_SESSION *session) {
  tb_bssl_conn *c = tb_ossl_conn_of(ssl);
  if (c == NULL) return 0; /* not ours to keep: the library frees it */
  SSL_SESSION_free(c->session);
  c->session = session;
  return 1;
}

void tb_bssl_conn_free(void *conn) {
  tb_bssl_conn *c = conn;
  if (c == NULL) return;
  SSL_SESSION_free(c->session);
  tb_ossl_conn_release(&c->base);
}

/* A code point the core does not name: the library's own name, or the number, so that the
 * core reports a mismatch with what the library said. */
static void name_of(const tb_name *table, const char *library_name, uint16_t id,
                    char out[TB_NAME_LEN]) {
  const tb_name *n = tb_name_of_code(table, id);
  if (n != NULL)
    tb_ossl_copy_name(out, n->name);
  else if (library_name != NULL)
    tb_ossl_copy_name(out, library_name);
  else
    snprintf(out, TB_NAME_LEN, "0x%04x", id);
}

void tb_bssl_group_name(uint16_t id, char out[TB_NAME_LEN]) {
  name_of(tb_group_names, SSL_get_group_name(id), id, out);
}

void tb_bssl_sigalg_name(uint16_t id, char out[TB_NAME_LEN]) {
  name_of(tb_sigalg_names, SSL_get_signature_algorithm_name(id, 1), id, out);
}

void tb_bssl_read_group(const SSL *ssl, const SSL_CIPHER *cipher, char out[TB_NAME_LEN]) {
  out[0] = '\0';
  if (SSL_CIPHER_get_kx_nid(cipher) == NID_kx_rsa) return; /* static RSA: no group */
  /* An abbreviated TLS 1.2 handshake runs no key exchange, but the group getter reports
   * the original session's. A TLS 1.3 resumption runs one (psk_dhe_ke; psk_ke is never
   * enabled here). */
  if (SSL_version(ssl) != TLS1_3_VERSION && SSL_session_reused(ssl)) return;
  uint16_t id = SSL_get_group_id(ssl);
  if (id != 0) tb_bssl_group_name(id, out);
}

void tb_bssl_list(const uint16_t *ids, size_t n, int sigalgs, SSL_CTX *probe,
                  int (*usable)(SSL_CTX *probe, uint16_t id), const char **out) {
  static char names[64][TB_NAME_LEN];
  static size_t used;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (!usable(probe, ids[i])) continue;
    const tb_name *known = tb_name_of_code(sigalgs ? tb_sigalg_names : tb_group_names, ids[i]);
    if (known != NULL) {
      out[k++] = known->name;
    } else if (used < ARRAY_LEN(names)) {
      /* Not a name tlsbench accepts: the library's own, kept for the listing. */
      if (sigalgs)
        tb_bssl_sigalg_name(ids[i], names[used]);
      else
        tb_bssl_group_name(ids[i], names[used]);
      out[k++] = names[used++];
    }
  }
  out[k] = NULL;
}

/* ------------------------------------------------------------------------- AEAD */

typedef struct bssl_aead {
  EVP_AEAD_CTX ctx;
} bssl_aead;

static void aead_free(void *p) {
  bssl_aead *a = p;
  if (a == NULL) return;
  EVP_AEAD_CTX_cleanup(&a->ctx);
  free(a);
}

static tb_status aead_new(tb_aead_alg alg, const unsigned char *key, size_t key_len, void **out,
                          char *err) {
  ERR_clear_error();
  const EVP_AEAD *aead = alg == TB_AES_128_GCM         ? EVP_aead_aes_128_gcm()
                         : alg == TB_AES_256_GCM       ? EVP_aead_aes_256_gcm()
                         : alg == TB_CHACHA20_POLY1305 ? EVP_aead_chacha20_poly1305()
                                                       : NULL;
  if (aead == NULL) return tb_fail(err, TB_UNSUPPORTED, "unknown AEAD %d", (int)alg);
  if (EVP_AEAD_key_length(aead) != key_len)
    return tb_fail(err, TB_FAILED, "the AEAD takes a %zu-byte key, not %zu",
                   EVP_AEAD_key_length(aead), key_len);
  if (EVP_AEAD_nonce_length(aead) != TB_AEAD_NONCE_LEN ||
      EVP_AEAD_max_overhead(aead) != TB_AEAD_TAG_LEN)
    return tb_fail(err, TB_UNSUPPORTED, "the AEAD's nonce or tag length differs");
  bssl_aead *a = calloc(1, sizeof(*a));
  if (a == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  /* Keyed once; one context seals and opens, the nonce given per call. */
  if (!EVP_AEAD_CTX_init(&a->ctx, aead, key, key_len, TB_AEAD_TAG_LEN, NULL)) {
    free(a);
    return tb_ossl_fail(err, TB_FAILED, "EVP_AEAD_CTX_init");
  }
  *out = a;
  return TB_OK;
}

static tb_status aead_seal(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                           const unsigned char *ad, size_t ad_len, const unsigned char *in,
                           size_t len, unsigned char *out, char *err) {
  bssl_aead *a = aead;
  size_t out_len = 0;
  if (!EVP_AEAD_CTX_seal(&a->ctx, out, &out_len, len + TB_AEAD_TAG_LEN, nonce, TB_AEAD_NONCE_LEN,
                         in, len, ad, ad_len) ||
      out_len != len + TB_AEAD_TAG_LEN)
    return tb_ossl_fail(err, TB_FAILED, "seal");
  return TB_OK;
}

/* `len` is the ciphertext length; the tag follows it in `in` (as seal wrote it). */
static tb_status aead_open(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                           const unsigned char *ad, size_t ad_len, const unsigned char *in,
                           size_t len, unsigned char *out, char *err) {
  bssl_aead *a = aead;
  size_t out_len = 0;
  if (!EVP_AEAD_CTX_open(&a->ctx, out, &out_len, len, nonce, TB_AEAD_NONCE_LEN, in,
                         len + TB_AEAD_TAG_LEN, ad, ad_len)) {
    ERR_clear_error();
    return tb_fail(err, TB_FAILED, "open: the tag does not verify");
  }
  if (out_len != len) return tb_fail(err, TB_FAILED, "open: %zu bytes out, not %zu", out_len, len);
  return TB_OK;
}

const tb_aead_class tb_bssl_aead = {
    .create = aead_new,
    .seal = aead_seal,
    .open = aead_open,
    .free = aead_free,
};
#endif /* TB_BSSL_API */
