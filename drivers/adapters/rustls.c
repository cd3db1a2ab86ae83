/*
 * rustls adapter, through rustls' C API (the rustls-ffi crate, a static library).
 *
 * What rustls-ffi 0.15 can and cannot be told, and how each knob is honoured:
 *  - version and suite: pinned (protocol versions of the config builder; a crypto provider
 *    built from the default one with exactly one cipher suite);
 *  - key-exchange group: rustls-ffi has no API to choose groups. A build offers its
 *    provider's default list and sends a key share for the first group only (x25519;
 *    X25519MLKEM768 plus an X25519 share when built to prefer post-quantum), and a rustls
 *    server picks its own first group the client supports. Any other group would be
 *    reached through a HelloRetryRequest or not at all: refused as unsupported;
 *  - signature scheme: rustls-ffi has no API to choose them either. A rustls server signs
 *    with the first scheme of its key type the client offers (RSA: rsa_pss_rsae_sha512;
 *    ECDSA: the curve's scheme; Ed25519): a side with a key refuses any other request;
 *  - record size: rustls' max_fragment_size is not exposed by rustls-ffi: unsupported;
 *  - pre-shared keys: rustls has none (no external PSK, no PSK suites): unsupported.
 *
 * Read-back: version, suite, group, resumption and the peer's certificate come from the
 * library. The signature schemes do not (neither rustls nor rustls-ffi reports them): they
 * are read off the wire with the shared record reader (tls_wire.h, tb_wire), as the mbedTLS
 * adapter does: the I/O callbacks copy the handshake's bytes aside (memory charged to no side,
 * the read-back rule of driver.h), and negotiated(), after the clock stopped, reads the
 * TLS 1.2 ServerKeyExchange and CertificateVerify (plaintext) and decrypts a TLS 1.3
 * CertificateVerify (AEAD, tag checked) with the handshake traffic secret rustls hands to its
 * key-log callback, using the system's libcrypto. The key log has no user data: it is kept in
 * thread-local storage (the last few connections' secrets), off the heap too.
 *
 * Transport: rustls does no I/O; read_tls / write_tls take callbacks that call the
 * tb_transport. rustls has no socket I/O of its own, so --io fd is unsupported.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "rustls.h"
#include "tls_wire.h"
#include "tlsbench/driver.h"
#include "tlsbench/names.h"

#ifndef TB_RUSTLS_PROVIDER
#define TB_RUSTLS_PROVIDER "aws-lc-rs"
#endif
#ifndef TB_RUSTLS_PREFER_PQ
#define TB_RUSTLS_PREFER_PQ 0
#endif

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------- names */

/* Names and code points of suites, groups and signature schemes are the core's
 * (tlsbench/names.h); a code point the core does not name is shown in hex. */
static const char *name_of(const tb_name *table, uint16_t id) {
  const tb_name *n = tb_name_of_code(table, id);
  return n != NULL ? n->name : NULL;
}

#define SUITE_NAME(id) name_of(tb_suite_names, id)
#define GROUP_NAME(id) name_of(tb_group_names, id)
#define SIGALG_NAME(id) name_of(tb_sigalg_names, id)

/* The signature schemes rustls implements (aws-lc-rs and ring alike), by code point. */
static const uint16_t kSigalgs[] = {0x0401, 0x0501, 0x0601, 0x0804, 0x0805,
                                    0x0806, 0x0403, 0x0503, 0x0603, 0x0807};
/* ML-DSA (mldsa44/65/87): the aws-lc-rs provider only (rustls 0.23.3x on signs and
 * verifies it; ring has none). */
static const uint16_t kMldsa[] = {0x0904, 0x0905, 0x0906};

static int aws_lc_rs(void) { return strcmp(TB_RUSTLS_PROVIDER, "aws-lc-rs") == 0; }

static int rustls_signs(const char *name) {
  const tb_name *n = name != NULL ? tb_name_find(tb_sigalg_names, name) : NULL;
  for (size_t i = 0; n != NULL && i < ARRAY_LEN(kSigalgs); i++)
    if (kSigalgs[i] == n->code) return 1;
  for (size_t i = 0; n != NULL && aws_lc_rs() && i < ARRAY_LEN(kMldsa); i++)
    if (kMldsa[i] == n->code) return 1;
  return 0;
}

/* The group this build sends its key share for and a rustls server picks first. */
static const char *first_group(void) { return TB_RUSTLS_PREFER_PQ ? "X25519MLKEM768" : "x25519"; }

/* ------------------------------------------------------------------------- errors */

static tb_status rl_fail(char *err, tb_status status, const char *what, rustls_result r) {
  char text[TB_ERR_LEN];
  size_t n = 0;
  rustls_error((unsigned int)r, text, sizeof(text) - 1, &n);
  text[n] = '\0';
  return tb_fail(err, status, "%s: %s", what, text);
}

/* ------------------------------------------------------------------------- key log */

/* rustls hands secrets to a key-log callback without user data, keyed by the ClientHello
 * random: the handshake traffic secrets of the last few connections are kept here (both
 * sides of one process see the same ones), for the TLS 1.3 CertificateVerify read-back. */
#define KEYLOG_SLOTS 8
typedef struct keylog_entry {
  unsigned char random[32];
  int server; /* SERVER_HANDSHAKE_TRAFFIC_SECRET (1) or CLIENT_... (0) */
  unsigned char secret[48];
  size_t len;
} keylog_entry;

static _Thread_local keylog_entry g_keylog[KEYLOG_SLOTS * 2];
static _Thread_local unsigned g_keylog_next;

static int keylog_wanted(rustls_str label) {
  return (label.len == 31 && memcmp(label.data, "SERVER_HANDSHAKE_TRAFFIC_SECRET", 31) == 0) ||
         (label.len == 31 && memcmp(label.data, "CLIENT_HANDSHAKE_TRAFFIC_SECRET", 31) == 0);
}

static void keylog_log(rustls_str label, const uint8_t *random, size_t random_len,
                       const uint8_t *secret, size_t secret_len) {
  if (!keylog_wanted(label) || random_len != 32 || secret_len > 48) return;
  keylog_entry *e = &g_keylog[g_keylog_next++ % ARRAY_LEN(g_keylog)];
  memcpy(e->random, random, 32);
  e->server = label.data[0] == 'S';
  memcpy(e->secret, secret, secret_len);
  e->len = secret_len;
}

static const keylog_entry *keylog_find(const unsigned char random[32], int server) {
  for (size_t i = 0; i < ARRAY_LEN(g_keylog); i++)
    if (g_keylog[i].len != 0 && g_keylog[i].server == server &&
        memcmp(g_keylog[i].random, random, 32) == 0)
      return &g_keylog[i];
  return NULL;
}

/* ------------------------------------------------------------------------- wire read-back */

/* What the wire said (in the tb_wire's extra bytes). */
typedef struct wire_seen {
  int have_random;
  unsigned char client_random[32];
  uint16_t server_sigalg; /* the server's ServerKeyExchange / CertificateVerify (0: none) */
  uint16_t client_sigalg; /* the client's CertificateVerify */
  int parsed;             /* negotiated() has read the wire */
} wire_seen;
_Static_assert(sizeof(wire_seen) <= TB_WIRE_EXTRA, "wire_seen outgrew the tb_wire's extra");

/* One handshake message of the client's, read by the shared reader (tls_wire.c). */
static void client_message(void *arg, unsigned type, const unsigned char *body, size_t len) {
  wire_seen *seen = arg;
  if (type == TB_HS_CLIENT_HELLO && tb_hs_client_random(body, len, seen->client_random) == 0)
    seen->have_random = 1;
  if (type == TB_HS_CERTIFICATE_VERIFY && len >= 2)
    seen->client_sigalg = tb_hs_certificate_verify(body, len);
}

/* One of the server's: the scheme of a TLS 1.2 ECDHE ServerKeyExchange (after the curve and
 * point) or of a CertificateVerify (first, in both versions). */
static void server_message(void *arg, unsigned type, const unsigned char *body, size_t len) {
  wire_seen *seen = arg;
  tb_key_exchange kx;
  if (type == TB_HS_SERVER_KEY_EXCHANGE && tb_hs_server_key_exchange(body, len, 0, &kx) == 0)
    seen->server_sigalg = kx.sigalg;
  if (type == TB_HS_CERTIFICATE_VERIFY && len >= 2)
    seen->server_sigalg = tb_hs_certificate_verify(body, len);
}

static int evp_hmac(const void *md, const unsigned char *key, size_t key_len,
                    const unsigned char *data, size_t len, unsigned char *out) {
  unsigned int n = 0;
  return HMAC(md, key, (int)key_len, data, len, out, &n) != NULL ? 0 : -1;
}

/* HKDF-Expand-Label with the suite's hash; 1 on success. */
static int expand_label(const EVP_MD *md, const unsigned char *secret, size_t secret_len,
                        const char *label, unsigned char *out, size_t out_len) {
  return tb_hkdf_expand_label(evp_hmac, md, (size_t)EVP_MD_size(md), secret, secret_len, label, out,
                              out_len) == 0;
}

/* Opens one protected record (tb_record_open_fn: AEAD with its tag checked) under a
 * direction's handshake traffic secret; 0 when it does not open under it (a record under the
 * next key, after the handshake's). */
typedef struct rl_opener {
  uint16_t suite;
  const keylog_entry *k;
} rl_opener;

static size_t open_record(void *arg, uint64_t seq, const unsigned char header[5],
                          const unsigned char *in, size_t len, unsigned char *out) {
  const rl_opener *o = arg;
  uint16_t suite = o->suite;
  const EVP_MD *md = suite == 0x1302 ? EVP_sha384() : EVP_sha256();
  const EVP_CIPHER *cipher = suite == 0x1301   ? EVP_aes_128_gcm()
                             : suite == 0x1302 ? EVP_aes_256_gcm()
                                               : EVP_chacha20_poly1305();
  size_t key_len = suite == 0x1301 ? 16 : 32;
  unsigned char key[32], iv[12];
  if (len < 17 || !expand_label(md, o->k->secret, o->k->len, "key", key, key_len) ||
      !expand_label(md, o->k->secret, o->k->len, "iv", iv, sizeof(iv)))
    return 0;
  for (int i = 0; i < 8; i++) iv[11 - i] ^= (unsigned char)(seq >> (8 * i));
  size_t body = len - 16;
  EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
  int n = 0, tail = 0;
  int ok = ctx != NULL && EVP_DecryptInit_ex(ctx, cipher, NULL, NULL, NULL) == 1 &&
           EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL) == 1 &&
           EVP_DecryptInit_ex(ctx, NULL, NULL, key, iv) == 1 &&
           EVP_DecryptUpdate(ctx, NULL, &n, header, 5) == 1 &&
           EVP_DecryptUpdate(ctx, out, &n, in, (int)body) == 1 &&
           EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, (void *)(in + body)) == 1 &&
           EVP_DecryptFinal_ex(ctx, out + n, &tail) == 1;
  EVP_CIPHER_CTX_free(ctx);
  OPENSSL_cleanse(key, sizeof(key));
  return ok ? body : 0;
}

/* TLS 1.3: the CertificateVerify in one side's protected handshake records (`dir` as this
 * connection saw them), opened with that side's secret from the key log. */
static void read_protected(tb_wire *w, tb_wire_dir dir, int from_client, wire_seen *seen,
                           uint16_t suite) {
  if (!seen->have_random) return;
  rl_opener o = {suite, keylog_find(seen->client_random, !from_client)};
  if (o.k == NULL) return;
  tb_wire_protected_messages(w, dir, open_record, &o, from_client ? client_message : server_message,
                             seen);
}

/* ------------------------------------------------------------------------- objects */

/* A client config with a reference count: rustls keeps resumable sessions inside the client
 * config (its in-memory store), so a "session" is a reference to the config that holds it. */
typedef struct client_cfg {
  const rustls_client_config *cfg;
  int refs;
} client_cfg;

typedef struct rl_ctx {
  tb_role role;
  tb_config cfg; /* strings point into the caller's configuration, which outlives us */
  int verifies;
  const rustls_crypto_provider *provider;
  const rustls_certified_key *own_key;
  const rustls_root_cert_store *roots;
  const rustls_server_config *server;
  client_cfg *client; /* the config new connections without a session use */
} rl_ctx;

typedef struct rl_conn {
  rl_ctx *ctx;
  rustls_connection *conn;
  client_cfg *client; /* the config this client connection was made from (one reference) */
  tb_transport io;
  int observing; /* the handshake runs: keep its bytes */
  tb_wire *wire; /* the handshake's bytes, and what they said (wire_seen) */
} rl_conn;

static void client_cfg_release(client_cfg *c) {
  if (c == NULL || --c->refs > 0) return;
  rustls_client_config_free(c->cfg);
  free(c);
}

/* ------------------------------------------------------------------------- global */

static tb_status rl_global_init(char *err) {
  /* The process-wide default provider (the one compiled in) is installed on first use,
   * and libcrypto's ciphers for the read-back are fetched once: both charged to global. */
  rustls_crypto_provider_builder *b = NULL;
  rustls_result r = rustls_crypto_provider_builder_new_from_default(&b);
  if (r != RUSTLS_RESULT_OK) return rl_fail(err, TB_FAILED, "default crypto provider", r);
  rustls_crypto_provider_builder_free(b);
  /* The provider's random generator sets up its per-thread state on first use. */
  unsigned char rnd[32];
  r = rustls_default_crypto_provider_random(rnd, sizeof(rnd));
  if (r != RUSTLS_RESULT_OK) return rl_fail(err, TB_FAILED, "random generator", r);
  /* One record opened per AEAD (failing its tag is fine): libcrypto fetches its ciphers
   * and digests once, here. */
  keylog_entry k = {.len = 32};
  unsigned char header[5] = {23, 3, 3, 0, 32}, in[32] = {0}, plain[32];
  for (uint16_t suite = 0x1301; suite <= 0x1303; suite++) {
    rl_opener o = {suite, &k};
    (void)open_record(&o, 0, header, in, sizeof(in), plain);
  }
  return TB_OK;
}

static void rl_global_cleanup(void) {}

/* ------------------------------------------------------------------------- randomness */

/* --deterministic: rustls-ffi's crypto provider API cannot replace the provider's random
 * source (aws-lc-rs: AWS-LC's generator, ring: the system's; neither has a run-time hook),
 * so rustls keeps its randomness. Key shares and signatures cost the same whatever the
 * values; one drawn value does change the work: the seed rustls shuffles the ClientHello's
 * extensions with (the client's sort, the server's parse), a few hundred instructions per
 * handshake. */
static tb_status rl_derandomize(tb_random_fn fill, tb_randomness *out, char *err) {
  (void)fill, (void)err;
  out->seeded = 0;
  snprintf(out->how, sizeof(out->how),
           "not seeded: rustls-ffi cannot replace its crypto provider's (" TB_RUSTLS_PROVIDER
           ") random source; the count depends on one drawn value, the ClientHello's extension "
           "order, a few hundred instructions per handshake");
  return TB_OK;
}

/* ------------------------------------------------------------------------- ctx */

static tb_status read_file(const char *path, unsigned char **data, size_t *len, char *err) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return tb_fail(err, TB_FAILED, "cannot open %s: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  *data = malloc(size > 0 ? (size_t)size : 1);
  if (*data == NULL || size < 0 || fread(*data, 1, (size_t)size, f) != (size_t)size) {
    fclose(f);
    free(*data);
    return tb_fail(err, TB_FAILED, "cannot read %s", path);
  }
  fclose(f);
  *len = (size_t)size;
  return TB_OK;
}

static tb_status load_own_key(rl_ctx *c, char *err) {
  if (c->cfg.chain_file == NULL) return TB_OK;
  if (c->cfg.key_file == NULL) return tb_fail(err, TB_FAILED, "a chain without a key");
  unsigned char *chain = NULL, *key = NULL;
  size_t chain_len = 0, key_len = 0;
  tb_status st = read_file(c->cfg.chain_file, &chain, &chain_len, err);
  if (st == TB_OK) st = read_file(c->cfg.key_file, &key, &key_len, err);
  if (st == TB_OK) {
    rustls_result r = rustls_certified_key_build(chain, chain_len, key, key_len, &c->own_key);
    if (r != RUSTLS_RESULT_OK) st = rl_fail(err, TB_FAILED, "certificate chain and key", r);
  }
  free(chain);
  free(key);
  return st;
}

/* The scheme a rustls signer uses, by its key type: the first of its own preference list
 * that a rustls peer offers. The key type is read from the PKCS#8 key's algorithm OIDs
 * (DER inside the PEM), without a key parser that would allocate. */
static int has_bytes(const unsigned char *der, size_t len, const char *oid, size_t oid_len) {
  for (size_t i = 0; i + oid_len <= len; i++)
    if (memcmp(der + i, oid, oid_len) == 0) return 1;
  return 0;
}

static const char *signer_scheme(const char *key_file, char *err) {
  unsigned char *pem = NULL;
  size_t len = 0;
  if (read_file(key_file, &pem, &len, err) != TB_OK) return NULL;
  const char *begin = strstr((const char *)pem, "-----BEGIN PRIVATE KEY-----");
  const char *scheme = NULL;
  if (begin != NULL) {
    /* Base64 lines up to the END line, joined. */
    const char *p = strchr(begin, '\n');
    unsigned char b64[8192], der[6144];
    size_t n = 0;
    while (p != NULL && *p != '\0' && *p != '-' && n < sizeof(b64) - 1) {
      if (*p != '\n' && *p != '\r') b64[n++] = (unsigned char)*p;
      p++;
    }
    int der_len = n % 4 == 0 ? EVP_DecodeBlock(der, b64, (int)n) : -1;
    size_t dl = der_len > 0 ? (size_t)der_len : 0;
#define HAS(oid) has_bytes(der, dl < 64 ? dl : 64, oid, sizeof(oid) - 1)
    if (HAS("\x2a\x86\x48\x86\xf7\x0d\x01\x01\x01"))
      scheme = "rsa_pss_rsae_sha512";
    else if (HAS("\x2b\x65\x70"))
      scheme = "ed25519";
    else if (HAS("\x2a\x86\x48\xce\x3d\x03\x01\x07"))
      scheme = "ecdsa_secp256r1_sha256";
    else if (HAS("\x2b\x81\x04\x00\x22"))
      scheme = "ecdsa_secp384r1_sha384";
    else if (HAS("\x2b\x81\x04\x00\x23"))
      scheme = "ecdsa_secp521r1_sha512";
    else if (HAS("\x60\x86\x48\x01\x65\x03\x04\x03\x11")) /* id-ML-DSA-44 */
      scheme = "mldsa44";
    else if (HAS("\x60\x86\x48\x01\x65\x03\x04\x03\x12"))
      scheme = "mldsa65";
    else if (HAS("\x60\x86\x48\x01\x65\x03\x04\x03\x13"))
      scheme = "mldsa87";
#undef HAS
  }
  free(pem);
  return scheme;
}

static tb_status make_provider(rl_ctx *c, char *err) {
  const tb_name *named = c->cfg.suite != NULL ? tb_name_find(tb_suite_names, c->cfg.suite) : NULL;
  if (named == NULL) return tb_fail(err, TB_UNSUPPORTED, "rustls has no suite '%s'", c->cfg.suite);
  unsigned suite = named->code;
  if ((suite >> 8 == 0x13) != (c->cfg.tls_version == 13))
    return tb_fail(err, TB_UNSUPPORTED, "'%s' is not a TLS 1.%d suite", c->cfg.suite,
                   c->cfg.tls_version == 13 ? 3 : 2);
  const rustls_supported_ciphersuite *chosen = NULL;
  for (size_t i = 0; i < rustls_default_crypto_provider_ciphersuites_len(); i++) {
    const rustls_supported_ciphersuite *s = rustls_default_crypto_provider_ciphersuites_get(i);
    if (rustls_supported_ciphersuite_get_suite(s) == suite) chosen = s;
  }
  if (chosen == NULL)
    return tb_fail(err, TB_UNSUPPORTED, "the %s provider has no suite '%s'", TB_RUSTLS_PROVIDER,
                   c->cfg.suite);
  rustls_crypto_provider_builder *b = NULL;
  rustls_result r = rustls_crypto_provider_builder_new_from_default(&b);
  if (r == RUSTLS_RESULT_OK) r = rustls_crypto_provider_builder_set_cipher_suites(b, &chosen, 1);
  if (r == RUSTLS_RESULT_OK) {
    r = rustls_crypto_provider_builder_build(b, &c->provider); /* consumes the builder */
    b = NULL;
  }
  rustls_crypto_provider_builder_free(b);
  return r == RUSTLS_RESULT_OK ? TB_OK : rl_fail(err, TB_FAILED, "crypto provider", r);
}

static tb_status check_offer(const rl_ctx *c, char *err) {
  if (c->cfg.tls_version != 12 && c->cfg.tls_version != 13)
    return tb_fail(err, TB_UNSUPPORTED, "TLS version %d", c->cfg.tls_version);
  if (c->cfg.record_size != 0)
    return tb_fail(err, TB_UNSUPPORTED,
                   "rustls-ffi 0.15 does not expose rustls' max_fragment_size (record size %zu)",
                   c->cfg.record_size);
  if (c->cfg.group == NULL || strcmp(c->cfg.group, first_group()) != 0)
    return tb_fail(err, TB_UNSUPPORTED,
                   "rustls-ffi has no API to choose key-exchange groups: this build (%s%s) "
                   "sends its key share for %s only, not %s",
                   TB_RUSTLS_PROVIDER, TB_RUSTLS_PREFER_PQ ? ", prefer-post-quantum" : "",
                   first_group(), c->cfg.group ? c->cfg.group : "(none)");
  if (c->cfg.key_share != NULL)
    return tb_fail(err, TB_UNSUPPORTED,
                   "rustls-ffi has no API to choose key-exchange groups: no key share for %s "
                   "can be sent first (HelloRetryRequest)",
                   c->cfg.key_share);
  if (c->cfg.tls_version == 12 && strstr(first_group(), "MLKEM") != NULL)
    return tb_fail(err, TB_UNSUPPORTED, "TLS 1.2 has no post-quantum groups");
  if (c->cfg.sigalg != NULL && strncmp(c->cfg.sigalg, "mldsa", 5) == 0 && !aws_lc_rs())
    return tb_fail(err, TB_UNSUPPORTED, "rustls's %s provider has no ML-DSA (aws-lc-rs has)",
                   TB_RUSTLS_PROVIDER);
  if (!rustls_signs(c->cfg.sigalg))
    return tb_fail(err, TB_UNSUPPORTED, "rustls cannot sign with '%s'",
                   c->cfg.sigalg ? c->cfg.sigalg : "(none)");
  if (c->cfg.client_sigalg != NULL && strcmp(c->cfg.client_sigalg, c->cfg.sigalg) != 0)
    return tb_fail(err, TB_UNSUPPORTED,
                   "rustls-ffi has no API to choose signature schemes (client: %s)",
                   c->cfg.client_sigalg);
  /* A signer picks by its key type: refuse what the key would not produce. Mutual auth:
   * the client's certificate is of the same kind as the server's. */
  const char *key = c->cfg.key_file;
  if (key != NULL) {
    const char *scheme = signer_scheme(key, err);
    if (scheme == NULL || strcmp(scheme, c->cfg.sigalg) != 0)
      return tb_fail(err, TB_UNSUPPORTED,
                     "rustls-ffi has no API to choose signature schemes: with this key rustls "
                     "signs with %s, not %s",
                     scheme ? scheme : "(unknown key type)", c->cfg.sigalg);
  }
  return TB_OK;
}

static tb_status make_roots(rl_ctx *c, char *err) {
  if (!c->verifies) return TB_OK;
  if (c->cfg.ca_file == NULL) return tb_fail(err, TB_FAILED, "no ca_file");
  rustls_root_cert_store_builder *b = rustls_root_cert_store_builder_new();
  rustls_result r = rustls_root_cert_store_builder_load_roots_from_file(b, c->cfg.ca_file, true);
  if (r == RUSTLS_RESULT_OK) r = rustls_root_cert_store_builder_build(b, &c->roots);
  rustls_root_cert_store_builder_free(b);
  return r == RUSTLS_RESULT_OK ? TB_OK : rl_fail(err, TB_FAILED, "trust anchors (ca_file)", r);
}

static uint32_t accept_any_server(void *userdata, const rustls_verify_server_cert_params *p) {
  (void)userdata;
  (void)p;
  return RUSTLS_RESULT_OK; /* auth "none": nobody verifies a certificate */
}

static uint16_t version_code(int tls) { return tls == 13 ? 0x0304 : 0x0303; }

static tb_status build_client_config(rl_ctx *c, client_cfg **out, char *err) {
  uint16_t version = version_code(c->cfg.tls_version);
  rustls_client_config_builder *b = NULL;
  rustls_result r = rustls_client_config_builder_new_custom(c->provider, &version, 1, &b);
  if (r != RUSTLS_RESULT_OK) return rl_fail(err, TB_UNSUPPORTED, "client config", r);
  if (c->verifies) {
    rustls_web_pki_server_cert_verifier_builder *vb =
        rustls_web_pki_server_cert_verifier_builder_new_with_provider(c->provider, c->roots);
    rustls_server_cert_verifier *v = NULL;
    r = rustls_web_pki_server_cert_verifier_builder_build(vb, &v);
    rustls_web_pki_server_cert_verifier_builder_free(vb);
    if (r == RUSTLS_RESULT_OK) rustls_client_config_builder_set_server_verifier(b, v);
    rustls_server_cert_verifier_free(v);
  } else {
    r = rustls_client_config_builder_dangerous_set_certificate_verifier(b, accept_any_server);
  }
  if (r == RUSTLS_RESULT_OK && c->own_key != NULL)
    r = rustls_client_config_builder_set_certified_key(b, &c->own_key, 1);
  if (r == RUSTLS_RESULT_OK)
    r = rustls_client_config_builder_set_key_log(b, keylog_log, keylog_wanted);
  client_cfg *cc = calloc(1, sizeof(*cc));
  if (r != RUSTLS_RESULT_OK || cc == NULL) {
    rustls_client_config_builder_free(b);
    free(cc);
    return cc == NULL ? tb_fail(err, TB_FAILED, "out of memory")
                      : rl_fail(err, TB_FAILED, "client config", r);
  }
  r = rustls_client_config_builder_build(b, &cc->cfg); /* consumes the builder */
  if (r != RUSTLS_RESULT_OK) {
    free(cc);
    return rl_fail(err, TB_FAILED, "client config", r);
  }
  cc->refs = 1;
  *out = cc;
  return TB_OK;
}

/* Full handshakes only: a server session store that keeps nothing (TLS 1.2 session IDs
 * are never found again), and no TLS 1.3 tickets. */
static uint32_t store_nothing_get(void *userdata, const rustls_slice_bytes *key, int remove,
                                  uint8_t *buf, size_t count, size_t *out_n) {
  (void)userdata, (void)key, (void)remove, (void)buf, (void)count, (void)out_n;
  return RUSTLS_RESULT_NOT_FOUND;
}

static uint32_t store_nothing_put(void *userdata, const rustls_slice_bytes *key,
                                  const rustls_slice_bytes *val) {
  (void)userdata, (void)key, (void)val;
  return RUSTLS_RESULT_OK;
}

static tb_status build_server_config(rl_ctx *c, char *err) {
  if (c->own_key == NULL) return tb_fail(err, TB_FAILED, "a server needs a certificate");
  uint16_t version = version_code(c->cfg.tls_version);
  rustls_server_config_builder *b = NULL;
  rustls_result r = rustls_server_config_builder_new_custom(c->provider, &version, 1, &b);
  if (r != RUSTLS_RESULT_OK) return rl_fail(err, TB_UNSUPPORTED, "server config", r);
  r = rustls_server_config_builder_set_certified_keys(b, &c->own_key, 1);
  if (r == RUSTLS_RESULT_OK && c->verifies) {
    rustls_web_pki_client_cert_verifier_builder *vb =
        rustls_web_pki_client_cert_verifier_builder_new_with_provider(c->provider, c->roots);
    rustls_client_cert_verifier *v = NULL;
    r = rustls_web_pki_client_cert_verifier_builder_build(vb, &v);
    rustls_web_pki_client_cert_verifier_builder_free(vb);
    if (r == RUSTLS_RESULT_OK) rustls_server_config_builder_set_client_verifier(b, v);
    rustls_client_cert_verifier_free(v);
  }
  if (r == RUSTLS_RESULT_OK) {
    if (c->cfg.resumption) {
      /* rustls' in-memory session store (TLS 1.2 session IDs, TLS 1.3 stateful tickets);
       * one ticket is what a resuming client needs (the default is two). */
      r = rustls_server_config_builder_set_send_tls13_tickets(b, 1);
    } else {
      rustls_server_config_builder_set_persistence(b, store_nothing_get, store_nothing_put);
      r = rustls_server_config_builder_set_send_tls13_tickets(b, 0);
    }
  }
  if (r == RUSTLS_RESULT_OK)
    r = rustls_server_config_builder_set_key_log(b, keylog_log, keylog_wanted);
  if (r != RUSTLS_RESULT_OK) {
    rustls_server_config_builder_free(b);
    return rl_fail(err, TB_FAILED, "server config", r);
  }
  r = rustls_server_config_builder_build(b, &c->server); /* consumes the builder */
  return r == RUSTLS_RESULT_OK ? TB_OK : rl_fail(err, TB_FAILED, "server config", r);
}

static void rl_ctx_free(void *p) {
  rl_ctx *c = p;
  if (c == NULL) return;
  rustls_server_config_free(c->server);
  client_cfg_release(c->client);
  rustls_root_cert_store_free(c->roots);
  rustls_certified_key_free(c->own_key);
  rustls_crypto_provider_free(c->provider);
  free(c);
}

/* rustls keeps a connection's read buffer (4 KiB once a record is read) between records,
 * and has no option to free it when empty. */
static tb_status refuse_buffer_release(char *err) {
  return tb_fail(err, TB_UNSUPPORTED,
                 "rustls keeps its read buffer between records and has no option to free it");
}

static tb_status rl_ctx_new(const tb_config *cfg, void **out, char *err) {
  if (cfg->psk.mode != TB_PSK_NONE) {
    /* rustls has no external PSK (only its own resumption tickets), nor PSK suites. */
    return tb_fail(err, TB_UNSUPPORTED,
                   "rustls has no pre-shared keys: neither TLS 1.3 external PSKs nor TLS 1.2 "
                   "PSK suites (rustls-ffi 0.15 / rustls 0.23)");
  }
  if (cfg->release_buffers) return refuse_buffer_release(err);
  rl_ctx *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->role = cfg->role;
  c->cfg = *cfg;
  c->verifies = cfg->role == TB_CLIENT ? cfg->auth != TB_AUTH_NONE : cfg->auth == TB_AUTH_MUTUAL;
  if (cfg->role == TB_CLIENT && cfg->server_name == NULL) {
    free(c);
    return tb_fail(err, TB_UNSUPPORTED, "no server_name");
  }
  tb_status st = check_offer(c, err);
  if (st == TB_OK) st = make_provider(c, err);
  if (st == TB_OK) st = load_own_key(c, err);
  if (st == TB_OK) st = make_roots(c, err);
  if (st == TB_OK)
    st = cfg->role == TB_SERVER ? build_server_config(c, err)
                                : build_client_config(c, &c->client, err);
  if (st != TB_OK) {
    rl_ctx_free(c);
    return st;
  }
  *out = c;
  return TB_OK;
}

/* ------------------------------------------------------------------------- I/O */

static int io_read(void *userdata, uint8_t *buf, size_t n, size_t *out_n) {
  rl_conn *c = userdata;
  long got = c->io.recv(c->io.io, buf, n);
  if (got == TB_IO_WOULD_BLOCK) return EAGAIN;
  if (got < 0) return EIO;
  if (c->observing) tb_wire_keep(c->wire, TB_WIRE_IN, buf, (size_t)got);
  *out_n = (size_t)got; /* 0: the peer closed the stream */
  return 0;
}

static int io_write(void *userdata, const uint8_t *buf, size_t n, size_t *out_n) {
  rl_conn *c = userdata;
  long sent = c->io.send(c->io.io, buf, n);
  if (sent == TB_IO_WOULD_BLOCK || sent == 0) return EAGAIN;
  if (sent < 0) return EIO;
  if (c->observing) tb_wire_keep(c->wire, TB_WIRE_OUT, buf, (size_t)sent);
  *out_n = (size_t)sent;
  return 0;
}

/* Sends what rustls has queued: TB_OK when all is out, TB_WANT_IO when the transport is
 * full. */
static tb_status flush(rl_conn *c, char *err) {
  while (rustls_connection_wants_write(c->conn)) {
    size_t n = 0;
    int e = rustls_connection_write_tls(c->conn, io_write, c, &n);
    if (e == EAGAIN) return TB_WANT_IO;
    if (e != 0) return tb_fail(err, TB_FAILED, "transport write failed (%s)", strerror(e));
  }
  return TB_OK;
}

/* Reads what the transport has and lets rustls process it: TB_OK when something was read,
 * TB_WANT_IO when nothing is there, TB_CLOSED at EOF. */
static tb_status pull(rl_conn *c, const char *what, char *err) {
  size_t n = 0;
  int e = rustls_connection_read_tls(c->conn, io_read, c, &n);
  if (e == EAGAIN) return TB_WANT_IO;
  if (e != 0) return tb_fail(err, TB_FAILED, "%s: transport read failed (%s)", what, strerror(e));
  if (n == 0) return TB_CLOSED;
  rustls_result r = rustls_connection_process_new_packets(c->conn);
  if (r != RUSTLS_RESULT_OK) {
    (void)flush(c, err); /* the alert, so that the peer fails too */
    /* rustls-webpki verifies RSA, ECDSA, Ed25519 and ML-DSA signatures: a chain an SLH-DSA
     * CA signed is one this library cannot verify, not a bad chain. */
    if (r == RUSTLS_RESULT_CERT_UNSUPPORTED_SIGNATURE_ALGORITHM && c->ctx->cfg.ca_file != NULL &&
        tb_pem_names_slh_dsa(c->ctx->cfg.ca_file))
      return rl_fail(err, TB_UNSUPPORTED, "rustls-webpki has no SLH-DSA to verify this chain", r);
    return rl_fail(err, TB_FAILED, what, r);
  }
  return TB_OK;
}

static void rl_conn_free(void *p) {
  rl_conn *c = p;
  if (c == NULL) return;
  rustls_connection_free(c->conn);
  client_cfg_release(c->client);
  tb_wire_free(c->wire);
  free(c);
}

static tb_status rl_conn_new(void *ctx, const tb_transport *transport, void *session, void **out,
                             char *err) {
  if (transport->bio) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "rustls has no BIO layer: its read_tls/write_tls callbacks are the only path");
  }
  rl_ctx *x = ctx;
  if (transport->fd >= 0)
    return tb_fail(err, TB_UNSUPPORTED, "rustls does no socket I/O of its own (--io fd)");
  rl_conn *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->ctx = x;
  c->io = *transport;
  c->observing = 1;
  c->wire = tb_wire_new();
  if (c->wire == NULL) {
    free(c);
    return tb_fail(err, TB_FAILED, "out of memory (read-back)");
  }
  rustls_result r;
  if (x->role == TB_SERVER) {
    r = rustls_server_connection_new(x->server, &c->conn);
  } else {
    if (session != NULL) {
      c->client = session; /* the config holding the session to resume */
    } else if (x->cfg.resumption) {
      /* A connection without a session must not resume one the config's store holds:
       * it gets a config of its own, whose store later sessions come from. */
      client_cfg *fresh = NULL;
      tb_status st = build_client_config(x, &fresh, err);
      if (st != TB_OK) {
        free(c);
        return st;
      }
      client_cfg_release(x->client);
      x->client = fresh;
      c->client = fresh;
    } else {
      c->client = x->client;
    }
    c->client->refs++;
    r = rustls_client_connection_new(c->client->cfg, x->cfg.server_name, &c->conn);
  }
  if (r != RUSTLS_RESULT_OK) {
    rl_conn_free(c);
    return rl_fail(err, TB_FAILED, "connection", r);
  }
  *out = c;
  return TB_OK;
}

static tb_status rl_handshake(void *conn, char *err) {
  rl_conn *c = conn;
  for (;;) {
    tb_status st = flush(c, err);
    if (st != TB_OK) return st;
    if (!rustls_connection_is_handshaking(c->conn)) {
      c->observing = 0;
      return TB_OK;
    }
    st = pull(c, "handshake", err);
    if (st == TB_CLOSED) return tb_fail(err, TB_FAILED, "handshake: the peer closed the stream");
    if (st != TB_OK) return st;
  }
}

static tb_status rl_write(void *conn, const unsigned char *buf, size_t len, size_t *done,
                          char *err) {
  rl_conn *c = conn;
  *done = 0;
  /* What rustls queued before goes out first; while it cannot, nothing new is taken. */
  tb_status st = flush(c, err);
  if (st != TB_OK) return st;
  if (len == 0) return TB_OK;
  rustls_result r = rustls_connection_write(c->conn, buf, len, done);
  if (r != RUSTLS_RESULT_OK) return rl_fail(err, TB_FAILED, "write", r);
  st = flush(c, err);
  /* The bytes are taken (rustls buffers them); the rest goes out on the next call. */
  return st == TB_WANT_IO ? (*done > 0 ? TB_OK : TB_WANT_IO) : st;
}

static tb_status rl_read(void *conn, unsigned char *buf, size_t len, size_t *done, char *err) {
  rl_conn *c = conn;
  *done = 0;
  for (;;) {
    size_t n = 0;
    rustls_result r = rustls_connection_read(c->conn, buf, len, &n);
    if (r == RUSTLS_RESULT_OK && n > 0) {
      *done = n;
      return TB_OK;
    }
    /* Success with no bytes is rustls' clean close: the peer's close_notify has arrived and
     * every byte before it was read (Reader::read returns Ok(0)); "nothing yet" is
     * PLAINTEXT_EMPTY. Pulling again would find the TCP close behind the alert. */
    if ((r == RUSTLS_RESULT_OK && len > 0) || r == RUSTLS_RESULT_ALERT_CLOSE_NOTIFY)
      return TB_CLOSED;
    if (r != RUSTLS_RESULT_OK && r != RUSTLS_RESULT_PLAINTEXT_EMPTY)
      return rl_fail(err, TB_FAILED, "read", r);
    tb_status st = pull(c, "read", err);
    if (st == TB_CLOSED) return tb_fail(err, TB_FAILED, "read: EOF without close_notify");
    if (st != TB_OK) return st;
    /* Anything rustls must answer (key updates, alerts) goes out with the next write. */
  }
}

static tb_status rl_close(void *conn, char *err) {
  rl_conn *c = conn;
  rustls_connection_send_close_notify(c->conn);
  tb_status st = flush(c, err);
  return st == TB_WANT_IO ? TB_OK : st; /* one attempt, as the contract says */
}

/* ------------------------------------------------------------------------- negotiated */

static void copy_name(char *dst, const char *src) {
  snprintf(dst, TB_NAME_LEN, "%s", src != NULL ? src : "");
}

/* A code rustls reports that is not in our tables is shown in hex, so that the check says
 * what came back. */
static void code_or_hex(char *dst, const char *name, uint16_t id) {
  if (name != NULL)
    copy_name(dst, name);
  else
    snprintf(dst, TB_NAME_LEN, "0x%04x", id);
}

static tb_status rl_negotiated(void *conn, tb_negotiated *out, char *err) {
  rl_conn *c = conn;
  memset(out, 0, sizeof(*out));
  uint16_t v = rustls_connection_get_protocol_version(c->conn);
  if (v == 0) return tb_fail(err, TB_FAILED, "no protocol version negotiated");
  snprintf(out->version, sizeof(out->version), "%s",
           v == 0x0304   ? "1.3"
           : v == 0x0303 ? "1.2"
                         : "other");
  uint16_t suite = rustls_connection_get_negotiated_ciphersuite(c->conn);
  code_or_hex(out->suite, SUITE_NAME(suite), suite);
  uint16_t group = rustls_connection_get_negotiated_key_exchange_group(c->conn);
  if (group != 0) code_or_hex(out->group, GROUP_NAME(group), group);
  out->resumed = rustls_connection_handshake_kind(c->conn) == RUSTLS_HANDSHAKE_KIND_RESUMED;
  /* rustls fails the handshake when verification fails: verified = this side verifies and
   * the peer presented a chain that rustls accepted. */
  out->peer_verified =
      c->ctx->verifies && rustls_connection_get_peer_certificate(c->conn, 0) != NULL;
  /* The signatures, from the wire: the server's travels server -> client, the client's
   * (mutual auth) client -> server. */
  wire_seen *seen = tb_wire_extra(c->wire);
  if (!seen->parsed) {
    if (tb_wire_overflow(c->wire))
      return tb_fail(err, TB_FAILED,
                     "the handshake passed more than the %d bytes a direction the read-back keeps",
                     TB_WIRE_BYTES);
    int client = c->ctx->role == TB_CLIENT, tls13 = v == 0x0304;
    tb_wire_dir from_server = client ? TB_WIRE_IN : TB_WIRE_OUT;
    tb_wire_dir from_client = client ? TB_WIRE_OUT : TB_WIRE_IN;
    tb_wire_plain_messages(c->wire, from_client, tls13, client_message, seen);
    tb_wire_plain_messages(c->wire, from_server, tls13, server_message, seen);
    if (tls13) {
      read_protected(c->wire, from_server, 0, seen, suite);
      read_protected(c->wire, from_client, 1, seen, suite);
    }
    tb_wire_release(c->wire);
    seen->parsed = 1;
  }
  uint16_t server_sig = 0, client_sig = 0;
  if (!out->resumed) {
    server_sig = seen->server_sigalg;
    client_sig = seen->client_sigalg;
  }
  if (server_sig != 0) code_or_hex(out->sigalg, SIGALG_NAME(server_sig), server_sig);
  if (client_sig != 0) code_or_hex(out->client_sigalg, SIGALG_NAME(client_sig), client_sig);
  return TB_OK;
}

/* ------------------------------------------------------------------------- sessions */

static tb_status rl_session_get(void *conn, void **session, char *err) {
  rl_conn *c = conn;
  if (c->client == NULL) return tb_fail(err, TB_FAILED, "not a client connection");
  /* TLS 1.3: resumption needs a ticket, which arrives after the handshake. */
  if (rustls_connection_get_protocol_version(c->conn) == 0x0304 &&
      rustls_connection_get_tls13_tickets_received(c->conn) == 0)
    return tb_fail(err, TB_FAILED, "no TLS 1.3 ticket received");
  c->client->refs++;
  *session = c->client;
  return TB_OK;
}

static void rl_session_free(void *session) { client_cfg_release(session); }

/* The library's TLS, as the scenarios use it. */
static const tb_tls_class kTls = {
    .ctx_new = rl_ctx_new,
    .ctx_free = rl_ctx_free,
    .conn_new = rl_conn_new,
    .conn_free = rl_conn_free,
    .handshake = rl_handshake,
    .write = rl_write,
    .read = rl_read,
    .close = rl_close,
    .negotiated = rl_negotiated,
    .session_get = rl_session_get,
    .session_free = rl_session_free,
};

/* ------------------------------------------------------------------------- AEAD */

static tb_status rl_aead_new(tb_aead_alg alg, const unsigned char *key, size_t key_len, void **aead,
                             char *err) {
  (void)alg, (void)key, (void)key_len, (void)aead;
  return tb_fail(err, TB_UNSUPPORTED, "rustls-ffi has no AEAD API (its providers' are Rust-only)");
}

static tb_status rl_aead_none(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                              const unsigned char *ad, size_t ad_len, const unsigned char *in,
                              size_t len, unsigned char *out, char *err) {
  (void)aead, (void)nonce, (void)ad, (void)ad_len, (void)in, (void)len, (void)out;
  return tb_fail(err, TB_UNSUPPORTED, "rustls-ffi has no AEAD API");
}

static void rl_aead_free(void *aead) { (void)aead; }

/* The library's own AEAD API, as the aead scenario uses it. */
static const tb_aead_class kAead = {
    .create = rl_aead_new,
    .seal = rl_aead_none,
    .open = rl_aead_none,
    .free = rl_aead_free,
};

/* ------------------------------------------------------------------------- info */

static char g_version[TB_NAME_LEN];
static char g_build_text[3][160];
static const char *g_build_options[4];
static const char *g_versions[3];
static const char *g_suites[32];
static const char *g_groups[2];
static const char *g_sigalgs[ARRAY_LEN(kSigalgs) + ARRAY_LEN(kMldsa) + 1];

static tb_status rl_info(tb_info *out, char *err) {
  (void)err;
  rustls_str v = rustls_version(); /* "rustls-ffi/0.15.7/rustls/0.23.46/aws-lc-rs" */
  snprintf(g_version, sizeof(g_version), "%.*s", (int)v.len, v.data);
  snprintf(g_build_text[0], sizeof(g_build_text[0]), "crypto_provider=%s", TB_RUSTLS_PROVIDER);
  snprintf(g_build_text[1], sizeof(g_build_text[1]), "prefer_post_quantum=%d", TB_RUSTLS_PREFER_PQ);
  snprintf(g_build_text[2], sizeof(g_build_text[2]), "key_share=%s", first_group());
  for (int i = 0; i < 3; i++) g_build_options[i] = g_build_text[i];
  g_build_options[3] = NULL;
  g_versions[0] = "1.2";
  g_versions[1] = "1.3";
  g_versions[2] = NULL;
  size_t n = 0;
  for (size_t i = 0; i < rustls_default_crypto_provider_ciphersuites_len(); i++) {
    uint16_t id =
        rustls_supported_ciphersuite_get_suite(rustls_default_crypto_provider_ciphersuites_get(i));
    if (SUITE_NAME(id) != NULL && n + 1 < ARRAY_LEN(g_suites)) g_suites[n++] = SUITE_NAME(id);
  }
  g_suites[n] = NULL;
  /* Only the group this build can be held to (see the top of this file). */
  g_groups[0] = first_group();
  g_groups[1] = NULL;
  n = 0;
  for (size_t i = 0; i < ARRAY_LEN(kSigalgs); i++) {
    /* What a rustls signer produces: RSA only with PSS-SHA512, never PKCS#1 or PSS-256/384;
     * ecdsa_secp521r1_sha512 only with aws-lc-rs. */
    const char *s = SIGALG_NAME(kSigalgs[i]);
    if (strncmp(s, "rsa_", 4) == 0 && strcmp(s, "rsa_pss_rsae_sha512") != 0) continue;
    if (strcmp(s, "ecdsa_secp521r1_sha512") == 0 && strcmp(TB_RUSTLS_PROVIDER, "ring") == 0)
      continue;
    g_sigalgs[n++] = s;
  }
  for (size_t i = 0; aws_lc_rs() && i < ARRAY_LEN(kMldsa); i++)
    g_sigalgs[n++] = SIGALG_NAME(kMldsa[i]);
  g_sigalgs[n] = NULL;
  snprintf(out->version, sizeof(out->version), "%s", g_version);
  out->build_options = g_build_options;
  out->versions = g_versions;
  out->suites = g_suites;
  out->groups = g_groups;
  out->sigalgs = g_sigalgs;
  return TB_OK;
}

const tb_adapter tb_adapter_impl = {
    .name = "rustls",
    .global_init = rl_global_init,
    .global_cleanup = rl_global_cleanup,
    .info = rl_info,
    .cpu_paths = NULL,
    .derandomize = rl_derandomize,
    .tls = &kTls,
    .aead = &kAead,
};
