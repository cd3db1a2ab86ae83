/*
 * The BearSSL adapter (BearSSL 0.6: TLS 1.0 to 1.2; tlsbench runs TLS 1.2 only).
 *
 * Memory. BearSSL allocates nothing, ever: the caller gives it every context and buffer.
 * This adapter allocates them with malloc on the side it serves, so that the heap figures
 * show what a BearSSL connection needs: a connection is the engine context
 * (br_ssl_client_context / br_ssl_server_context), its X.509 context and the I/O buffer
 * (BR_SSL_BUFSIZE_INPUT + BR_SSL_BUFSIZE_OUTPUT bytes, about 33 KiB, or less with
 * --record-size); a context is
 * the certificates, key and trust anchors decoded from PEM, and the server's session cache
 * store when resumption is on. None of it is the library's own allocation: it is the
 * caller's memory, which an embedded program would hold statically.
 *
 * I/O. The engine API (br_ssl_engine_sendrec_buf / recvrec_buf and their acks) against
 * tlsbench's transport callbacks; a transport that would block is TB_WANT_IO. BearSSL has
 * no socket I/O of its own (--io fd) and no BIO layer (--io bio).
 *
 * The offer, pinned. One suite (br_ssl_engine_set_suites), versions TLS 1.2 to TLS 1.2,
 * one curve: the engine's EC implementation is BearSSL's default with its
 * `supported_curves` mask cut to the one asked for (the client's supported_curves
 * extension and the server's choice both come from that mask). BearSSL offers
 * signature_algorithms for every hash its handshake holds (one per hash and per signature
 * algorithm the engine can verify): the engine holds the suite's PRF hash (its Finished
 * messages need it) and the scheme's, and verifies only the certificate's algorithm, so
 * the offer is exactly the asked scheme when its hash is the suite's PRF hash, and the run
 * is refused otherwise. The *_CBC_SHA suites are the exception: their record MAC needs
 * SHA-1 in the engine, so the offer also holds the SHA-1 scheme, and the scheme chosen
 * (the PRF hash's, by BearSSL's preference) is what the read-back checks. BearSSL signs RSA with
 * PKCS#1 v1.5 only (no RSA-PSS), has no finite-field DHE, no pre-shared keys, no Ed25519 and no
 * session tickets (a server resumes from its session cache, br_ssl_session_cache_lru).
 *
 * Read-back. Version, suite (br_ssl_engine_get_session_parameters) and curve
 * (br_ssl_engine_get_ecdhe_curve) come from the engine. BearSSL does not say which
 * signature scheme signed the ServerKeyExchange or the client's CertificateVerify, nor
 * whether a handshake resumed: the adapter reads them off the TLS 1.2 plaintext handshake
 * it carries with the shared record reader (tls_wire.h, tb_wire: the bytes copied aside while
 * the handshake runs, in memory charged to no side, and parsed in negotiated(), the
 * read-back rule of driver.h): the ServerKeyExchange's and CertificateVerify's scheme, and a
 * full handshake is one where the server sent ServerHelloDone. Peer verification is the
 * result the X.509 engine (br_x509_minimal) returned for the chain, kept by a thin class
 * around it. With auth none the client's X.509 class accepts the server's key unchecked
 * (BearSSL has no "no verification" mode of its own).
 */
#include <bearssl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls_wire.h"
#include "tlsbench/driver.h"
#include "tlsbench/names.h"

#ifndef TB_BEARSSL_VERSION
#define TB_BEARSSL_VERSION "unknown"
#endif

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
/* BR_MAX_RSA_SIZE of src/inner.h (not in the installed headers): BearSSL's largest RSA. */
#define BS_MAX_RSA_BITS 4096

/* ------------------------------------------------------------------------- names */

/* The TLS 1.2 suites BearSSL 0.6 implements with a certificate key exchange this adapter
 * drives (ECDHE_RSA, ECDHE_ECDSA, static RSA); static ECDH and 3DES are left out. */
static const uint16_t kSuites[] = {
    BR_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    BR_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    BR_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    BR_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    BR_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    BR_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    BR_TLS_ECDHE_ECDSA_WITH_AES_128_CCM,
    BR_TLS_ECDHE_ECDSA_WITH_AES_256_CCM,
    BR_TLS_ECDHE_ECDSA_WITH_AES_128_CCM_8,
    BR_TLS_ECDHE_ECDSA_WITH_AES_256_CCM_8,
    BR_TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
    BR_TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
    BR_TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384,
    BR_TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384,
    BR_TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
    BR_TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
    BR_TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
    BR_TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
    BR_TLS_RSA_WITH_AES_128_GCM_SHA256,
    BR_TLS_RSA_WITH_AES_256_GCM_SHA384,
    BR_TLS_RSA_WITH_AES_128_CCM,
    BR_TLS_RSA_WITH_AES_256_CCM,
    BR_TLS_RSA_WITH_AES_128_CCM_8,
    BR_TLS_RSA_WITH_AES_256_CCM_8,
    BR_TLS_RSA_WITH_AES_128_CBC_SHA256,
    BR_TLS_RSA_WITH_AES_256_CBC_SHA256,
    BR_TLS_RSA_WITH_AES_128_CBC_SHA,
    BR_TLS_RSA_WITH_AES_256_CBC_SHA,
};
/* The curves of TLS 1.2 ECDHE tlsbench names (BearSSL's ids are the TLS code points). */
static const char *const kGroups[] = {"x25519", "secp256r1", "secp384r1", "secp521r1"};
/* Schemes whose hash is a TLS 1.2 PRF hash (see the top of this file). */
static const char *const kSigalgs[] = {"rsa_pkcs1_sha256", "rsa_pkcs1_sha384",
                                       "ecdsa_secp256r1_sha256", "ecdsa_secp384r1_sha384"};

typedef enum bs_kx { KX_ECDHE_RSA, KX_ECDHE_ECDSA, KX_RSA, KX_OTHER } bs_kx;

static bs_kx suite_kx(const char *iana) {
  if (strncmp(iana, "TLS_ECDHE_RSA_WITH_", 19) == 0) return KX_ECDHE_RSA;
  if (strncmp(iana, "TLS_ECDHE_ECDSA_WITH_", 21) == 0) return KX_ECDHE_ECDSA;
  if (strncmp(iana, "TLS_RSA_WITH_", 13) == 0) return KX_RSA;
  return KX_OTHER;
}

/* The TLS 1.2 PRF hash of a suite: SHA-384 for *_SHA384 (and the 256-bit CCM suites use
 * SHA-256, as every other). */
static int prf_hash_of(const char *iana) {
  size_t n = strlen(iana);
  return n > 6 && strcmp(iana + n - 6, "SHA384") == 0 ? br_sha384_ID : br_sha256_ID;
}

static const char *hash_name(int id) {
  return id == br_sha256_ID ? "SHA-256" : id == br_sha384_ID ? "SHA-384" : "another hash";
}

static void code_name(const tb_name *table, unsigned code, char out[TB_NAME_LEN]) {
  const tb_name *n = tb_name_of_code(table, code);
  if (n != NULL)
    snprintf(out, TB_NAME_LEN, "%s", n->name);
  else
    snprintf(out, TB_NAME_LEN, "0x%04x", code);
}

/* BearSSL's error codes, as its header names them. */
static const char *error_name(int e) {
  static const struct {
    int code;
    const char *name;
  } known[] = {
      {BR_ERR_BAD_PARAM, "BR_ERR_BAD_PARAM"},
      {BR_ERR_BAD_STATE, "BR_ERR_BAD_STATE"},
      {BR_ERR_UNSUPPORTED_VERSION, "BR_ERR_UNSUPPORTED_VERSION"},
      {BR_ERR_BAD_VERSION, "BR_ERR_BAD_VERSION"},
      {BR_ERR_BAD_LENGTH, "BR_ERR_BAD_LENGTH"},
      {BR_ERR_TOO_LARGE, "BR_ERR_TOO_LARGE"},
      {BR_ERR_BAD_MAC, "BR_ERR_BAD_MAC"},
      {BR_ERR_NO_RANDOM, "BR_ERR_NO_RANDOM"},
      {BR_ERR_UNKNOWN_TYPE, "BR_ERR_UNKNOWN_TYPE"},
      {BR_ERR_UNEXPECTED, "BR_ERR_UNEXPECTED"},
      {BR_ERR_BAD_CCS, "BR_ERR_BAD_CCS"},
      {BR_ERR_BAD_ALERT, "BR_ERR_BAD_ALERT"},
      {BR_ERR_BAD_HANDSHAKE, "BR_ERR_BAD_HANDSHAKE"},
      {BR_ERR_OVERSIZED_ID, "BR_ERR_OVERSIZED_ID"},
      {BR_ERR_BAD_CIPHER_SUITE, "BR_ERR_BAD_CIPHER_SUITE"},
      {BR_ERR_BAD_COMPRESSION, "BR_ERR_BAD_COMPRESSION"},
      {BR_ERR_BAD_FRAGLEN, "BR_ERR_BAD_FRAGLEN"},
      {BR_ERR_BAD_SECRENEG, "BR_ERR_BAD_SECRENEG"},
      {BR_ERR_EXTRA_EXTENSION, "BR_ERR_EXTRA_EXTENSION"},
      {BR_ERR_BAD_SNI, "BR_ERR_BAD_SNI"},
      {BR_ERR_BAD_HELLO_DONE, "BR_ERR_BAD_HELLO_DONE"},
      {BR_ERR_LIMIT_EXCEEDED, "BR_ERR_LIMIT_EXCEEDED"},
      {BR_ERR_BAD_FINISHED, "BR_ERR_BAD_FINISHED"},
      {BR_ERR_RESUME_MISMATCH, "BR_ERR_RESUME_MISMATCH"},
      {BR_ERR_INVALID_ALGORITHM, "BR_ERR_INVALID_ALGORITHM"},
      {BR_ERR_BAD_SIGNATURE, "BR_ERR_BAD_SIGNATURE"},
      {BR_ERR_WRONG_KEY_USAGE, "BR_ERR_WRONG_KEY_USAGE"},
      {BR_ERR_NO_CLIENT_AUTH, "BR_ERR_NO_CLIENT_AUTH"},
      {BR_ERR_IO, "BR_ERR_IO"},
      {BR_ERR_X509_INVALID_VALUE, "BR_ERR_X509_INVALID_VALUE"},
      {BR_ERR_X509_TRUNCATED, "BR_ERR_X509_TRUNCATED"},
      {BR_ERR_X509_EMPTY_CHAIN, "BR_ERR_X509_EMPTY_CHAIN"},
      {BR_ERR_X509_BAD_SIGNATURE, "BR_ERR_X509_BAD_SIGNATURE"},
      {BR_ERR_X509_EXPIRED, "BR_ERR_X509_EXPIRED"},
      {BR_ERR_X509_DN_MISMATCH, "BR_ERR_X509_DN_MISMATCH"},
      {BR_ERR_X509_BAD_SERVER_NAME, "BR_ERR_X509_BAD_SERVER_NAME"},
      {BR_ERR_X509_UNSUPPORTED, "BR_ERR_X509_UNSUPPORTED"},
      {BR_ERR_X509_WEAK_PUBLIC_KEY, "BR_ERR_X509_WEAK_PUBLIC_KEY"},
      {BR_ERR_X509_NOT_TRUSTED, "BR_ERR_X509_NOT_TRUSTED"},
  };
  for (size_t i = 0; i < COUNT(known); i++)
    if (known[i].code == e) return known[i].name;
  if (e >= BR_ERR_RECV_FATAL_ALERT && e < BR_ERR_SEND_FATAL_ALERT) return "a fatal alert received";
  if (e >= BR_ERR_SEND_FATAL_ALERT) return "a fatal alert sent";
  return "a BearSSL error";
}

static tb_status bs_fail(char *err, const char *what, int e) {
  if (e >= BR_ERR_RECV_FATAL_ALERT && e < BR_ERR_SEND_FATAL_ALERT)
    return tb_fail(err, TB_FAILED, "%s: fatal alert %d received", what,
                   e - BR_ERR_RECV_FATAL_ALERT);
  if (e >= BR_ERR_SEND_FATAL_ALERT)
    return tb_fail(err, TB_FAILED, "%s: fatal alert %d sent", what, e - BR_ERR_SEND_FATAL_ALERT);
  return tb_fail(err, TB_FAILED, "%s: %s (%d)", what, error_name(e), e);
}

/* ------------------------------------------------------------------------- randomness */

static tb_random_fn g_fixed_random; /* --deterministic: the core's stream */

static tb_status bs_derandomize(tb_random_fn fill, tb_randomness *out, char *err) {
  (void)err;
  g_fixed_random = fill;
  out->seeded = 1;
  snprintf(out->how, sizeof(out->how),
           "each engine's HMAC_DRBG seeded with 32 bytes of the stream "
           "(br_ssl_engine_inject_entropy), its one-time system seeding marked done; BearSSL "
           "draws every random value from it (its RSA needs no blinding, ECDSA is RFC 6979)");
  return TB_OK;
}

/* ------------------------------------------------------------------------- PEM files */

typedef struct bs_der {
  unsigned char *data;
  size_t len, cap;
} bs_der;

static void der_append(void *arg, const void *buf, size_t len) {
  bs_der *d = arg;
  if (d->data == NULL && d->cap != 0) return; /* out of memory earlier */
  if (d->len + len > d->cap) {
    size_t cap = d->cap ? d->cap : 1024;
    while (cap < d->len + len) cap *= 2;
    unsigned char *p = realloc(d->data, cap);
    if (p == NULL) {
      free(d->data);
      d->data = NULL;
      d->cap = 1;
      return;
    }
    d->data = p, d->cap = cap;
  }
  memcpy(d->data + d->len, buf, len);
  d->len += len;
}

/* Calls `fn` with each object of a PEM file (its name, its DER bytes, which fn keeps or
 * frees). */
static tb_status pem_each(const char *path,
                          tb_status (*fn)(void *arg, const char *name, bs_der *der, char *err),
                          void *arg, char *err) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return tb_fail(err, TB_FAILED, "cannot open %s", path);
  br_pem_decoder_context pc;
  br_pem_decoder_init(&pc);
  bs_der der = {0};
  char name[128] = "";
  int inside = 0;
  tb_status st = TB_OK;
  unsigned char buf[1024];
  size_t n;
  while (st == TB_OK && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
    size_t off = 0;
    while (st == TB_OK && off < n) {
      off += br_pem_decoder_push(&pc, buf + off, n - off);
      switch (br_pem_decoder_event(&pc)) {
        case BR_PEM_BEGIN_OBJ:
          snprintf(name, sizeof(name), "%s", br_pem_decoder_name(&pc));
          memset(&der, 0, sizeof(der));
          br_pem_decoder_setdest(&pc, der_append, &der);
          inside = 1;
          break;
        case BR_PEM_END_OBJ:
          if (inside) {
            if (der.data == NULL) {
              st = tb_fail(err, TB_FAILED, "out of memory reading %s", path);
            } else {
              st = fn(arg, name, &der, err);
            }
            inside = 0;
          }
          break;
        case BR_PEM_ERROR:
          st = tb_fail(err, TB_FAILED, "%s: not valid PEM", path);
          break;
        default:
          break;
      }
    }
  }
  fclose(f);
  if (inside) {
    free(der.data);
    if (st == TB_OK) st = tb_fail(err, TB_FAILED, "%s: truncated PEM object", path);
  }
  return st;
}

/* ------------------------------------------------------------------------- contexts */

#define BS_MAX_CHAIN 8
#define BS_MAX_ANCHORS 8
#define BS_CACHE_BYTES 8192 /* the server's session cache store: ~80 sessions */

typedef struct bs_ctx {
  tb_role role;
  int verify; /* this side verifies the peer's chain */
  int resumption;
  const char *server_name;
  uint16_t suite;
  bs_kx kx;
  int prf_hash;       /* br_sha256_ID or br_sha384_ID */
  int mac_sha1;       /* a CBC suite whose record MAC is HMAC-SHA-1 (*_CBC_SHA) */
  unsigned curve;     /* ECDHE suites: the one curve */
  size_t record_size; /* 0: full-size buffers */
  size_t ibuf_len, obuf_len;
  /* Own chain and key. */
  br_x509_certificate chain[BS_MAX_CHAIN];
  size_t chain_len;
  int key_type; /* BR_KEYTYPE_RSA / BR_KEYTYPE_EC; 0: none */
  unsigned issuer_key_type;
  br_skey_decoder_context key; /* holds the decoded key */
  /* Trust anchors (ca_file). */
  br_x509_trust_anchor anchors[BS_MAX_ANCHORS];
  size_t n_anchors;
  /* The engine's curves: BearSSL's default with the one curve in its mask. */
  br_ec_impl ec;
  /* Server with resumption: its session cache, in the caller's store. */
  br_ssl_session_cache_lru cache;
  unsigned char *cache_store;
} bs_ctx;

static void bs_ctx_free(void *p) {
  bs_ctx *c = p;
  if (c == NULL) return;
  for (size_t i = 0; i < c->chain_len; i++) free(c->chain[i].data);
  for (size_t i = 0; i < c->n_anchors; i++) {
    br_x509_trust_anchor *ta = &c->anchors[i];
    free(ta->dn.data);
    if (ta->pkey.key_type == BR_KEYTYPE_RSA) {
      free(ta->pkey.key.rsa.n);
      free(ta->pkey.key.rsa.e);
    } else {
      free(ta->pkey.key.ec.q);
    }
  }
  free(c->cache_store);
  free(c);
}

static tb_status add_chain_cert(void *arg, const char *name, bs_der *der, char *err) {
  bs_ctx *c = arg;
  if (strcmp(name, "CERTIFICATE") != 0) {
    free(der->data);
    return TB_OK;
  }
  if (c->chain_len == BS_MAX_CHAIN) {
    free(der->data);
    return tb_fail(err, TB_UNSUPPORTED, "more than %d certificates in the chain", BS_MAX_CHAIN);
  }
  c->chain[c->chain_len].data = der->data;
  c->chain[c->chain_len].data_len = der->len;
  c->chain_len++;
  return TB_OK;
}

static unsigned char *copy_bytes(const unsigned char *p, size_t n) {
  unsigned char *q = malloc(n ? n : 1);
  if (q != NULL) memcpy(q, p, n);
  return q;
}

/* A trust anchor from a CA certificate: its subject DN and public key (as BearSSL's own
 * tools build them). */
static tb_status add_anchor(void *arg, const char *name, bs_der *der, char *err) {
  bs_ctx *c = arg;
  if (strcmp(name, "CERTIFICATE") != 0) {
    free(der->data);
    return TB_OK;
  }
  if (c->n_anchors == BS_MAX_ANCHORS) {
    free(der->data);
    return tb_fail(err, TB_UNSUPPORTED, "more than %d trust anchors", BS_MAX_ANCHORS);
  }
  bs_der dn = {0};
  br_x509_decoder_context dc;
  br_x509_decoder_init(&dc, der_append, &dn);
  br_x509_decoder_push(&dc, der->data, der->len);
  free(der->data);
  const br_x509_pkey *pk = br_x509_decoder_get_pkey(&dc);
  if (pk == NULL || dn.data == NULL) {
    free(dn.data);
    return tb_fail(err, TB_FAILED, "CA certificate: BearSSL cannot decode it (error %d)",
                   br_x509_decoder_last_error(&dc));
  }
  br_x509_trust_anchor *ta = &c->anchors[c->n_anchors];
  memset(ta, 0, sizeof(*ta));
  ta->dn.data = dn.data;
  ta->dn.len = dn.len;
  ta->flags = br_x509_decoder_isCA(&dc) ? BR_X509_TA_CA : 0;
  ta->pkey.key_type = pk->key_type;
  int ok;
  if (pk->key_type == BR_KEYTYPE_RSA) {
    ta->pkey.key.rsa.n = copy_bytes(pk->key.rsa.n, pk->key.rsa.nlen);
    ta->pkey.key.rsa.nlen = pk->key.rsa.nlen;
    ta->pkey.key.rsa.e = copy_bytes(pk->key.rsa.e, pk->key.rsa.elen);
    ta->pkey.key.rsa.elen = pk->key.rsa.elen;
    ok = ta->pkey.key.rsa.n != NULL && ta->pkey.key.rsa.e != NULL;
  } else {
    ta->pkey.key.ec.curve = pk->key.ec.curve;
    ta->pkey.key.ec.q = copy_bytes(pk->key.ec.q, pk->key.ec.qlen);
    ta->pkey.key.ec.qlen = pk->key.ec.qlen;
    ok = ta->pkey.key.ec.q != NULL;
  }
  c->n_anchors++; /* freed with the context, whole or not */
  return ok ? TB_OK : tb_fail(err, TB_FAILED, "out of memory");
}

static tb_status add_key(void *arg, const char *name, bs_der *der, char *err) {
  bs_ctx *c = arg;
  if (strstr(name, "PRIVATE KEY") == NULL || c->key_type != 0) {
    free(der->data);
    return TB_OK;
  }
  br_skey_decoder_init(&c->key);
  br_skey_decoder_push(&c->key, der->data, der->len);
  free(der->data);
  int e = br_skey_decoder_last_error(&c->key);
  if (e != 0) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "BearSSL cannot decode the private key (error %d): its decoder takes RSA "
                   "keys up to 4096 bits and EC keys (P-256, P-384, P-521), no Ed25519",
                   e);
  }
  c->key_type = br_skey_decoder_key_type(&c->key);
  return TB_OK;
}

static tb_status load_own(bs_ctx *c, const tb_config *cfg, char *err) {
  tb_status st = pem_each(cfg->chain_file, add_chain_cert, c, err);
  if (st != TB_OK) return st;
  if (c->chain_len == 0) return tb_fail(err, TB_FAILED, "%s: no certificate", cfg->chain_file);
  st = pem_each(cfg->key_file, add_key, c, err);
  if (st != TB_OK) return st;
  if (c->key_type == 0) return tb_fail(err, TB_FAILED, "%s: no private key", cfg->key_file);
  if (c->key_type == BR_KEYTYPE_RSA) {
    const br_rsa_private_key *sk = br_skey_decoder_get_rsa(&c->key);
    if (sk->n_bitlen > BS_MAX_RSA_BITS) {
      return tb_fail(err, TB_UNSUPPORTED,
                     "BearSSL's RSA stops at %d bits (BR_MAX_RSA_SIZE), "
                     "the key has %u",
                     BS_MAX_RSA_BITS, (unsigned)sk->n_bitlen);
    }
  }
  /* The leaf's issuer key type (BearSSL wants it for static ECDH; given for completeness). */
  br_x509_decoder_context dc;
  br_x509_decoder_init(&dc, NULL, NULL);
  br_x509_decoder_push(&dc, c->chain[0].data, c->chain[0].data_len);
  if (br_x509_decoder_get_pkey(&dc) == NULL)
    return tb_fail(err, TB_UNSUPPORTED, "BearSSL cannot decode the certificate (error %d)",
                   br_x509_decoder_last_error(&dc));
  c->issuer_key_type = (unsigned)br_x509_decoder_get_signer_key_type(&dc);
  if (br_x509_decoder_get_pkey(&dc)->key_type != c->key_type)
    return tb_fail(err, TB_FAILED, "the key does not match the certificate's key type");
  return TB_OK;
}

/* The offer: what a config asks, checked against what BearSSL can be held to. */
static tb_status check_offer(bs_ctx *c, const tb_config *cfg, char *err) {
  if (cfg->psk.mode != TB_PSK_NONE) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "BearSSL has no pre-shared keys: no TLS 1.2 PSK suites, and no TLS 1.3");
  }
  if (cfg->tls_version != 12) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "BearSSL has no TLS 1.3: it implements TLS 1.0 to 1.2 (tlsbench runs 1.2)");
  }
  if (cfg->client_sigalg != NULL && cfg->sigalg != NULL &&
      strcmp(cfg->client_sigalg, cfg->sigalg) != 0) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "BearSSL cannot pin the client's signature scheme apart from the server's: "
                   "one list of hashes serves both signers");
  }
  if (cfg->key_share != NULL)
    return tb_fail(err, TB_UNSUPPORTED, "a key share is TLS 1.3's; BearSSL has TLS 1.2 only");
  const tb_name *suite = tb_name_find(tb_suite_names, cfg->suite);
  int known = 0;
  for (size_t i = 0; suite != NULL && i < COUNT(kSuites); i++) known |= kSuites[i] == suite->code;
  if (!known) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "BearSSL has no suite '%s' (ECDHE_RSA, ECDHE_ECDSA and static RSA with AES "
                   "and ChaCha20: no DHE, PSK, Camellia or ARIA)",
                   cfg->suite);
  }
  c->suite = (uint16_t)suite->code;
  c->kx = suite_kx(cfg->suite);
  c->prf_hash = prf_hash_of(cfg->suite);
  size_t n = strlen(cfg->suite);
  c->mac_sha1 = n > 8 && strcmp(cfg->suite + n - 8, "_CBC_SHA") == 0;
  if (c->kx != KX_RSA) {
    const tb_name *g = cfg->group ? tb_name_find(tb_group_names, cfg->group) : NULL;
    int curve = 0;
    for (size_t i = 0; g != NULL && i < COUNT(kGroups); i++)
      if (strcmp(kGroups[i], g->name) == 0) curve = (int)g->code;
    if (curve == 0) {
      return tb_fail(err, TB_UNSUPPORTED,
                     "BearSSL has no key exchange group '%s' (ECDHE over x25519, secp256r1, "
                     "secp384r1, secp521r1; no finite-field DHE, no x448, no post-quantum)",
                     cfg->group ? cfg->group : "(none)");
    }
    c->curve = (unsigned)curve;
  }
  const char *schemes[2] = {cfg->sigalg, cfg->client_sigalg};
  for (int i = 0; i < 2; i++) {
    if (schemes[i] == NULL) continue;
    const tb_name *s = tb_name_find(tb_sigalg_names, schemes[i]);
    unsigned sig = s ? s->code & 0xff : 0, hash = s ? s->code >> 8 : 0;
    if (s == NULL || (sig != 1 && sig != 3) ||
        (hash != br_sha256_ID && hash != br_sha384_ID && hash != 6 && hash != 2)) {
      return tb_fail(err, TB_UNSUPPORTED,
                     "BearSSL cannot sign or verify '%s' in TLS: it has RSA PKCS#1 v1.5 and "
                     "ECDSA only (no RSA-PSS, no EdDSA)",
                     schemes[i]);
    }
    if ((int)hash != c->prf_hash) {
      return tb_fail(err, TB_UNSUPPORTED,
                     "BearSSL has no API to choose '%s' alone with %s: it offers "
                     "signature_algorithms for every hash its handshake holds, and %s holds "
                     "the suite's PRF hash %s",
                     schemes[i], cfg->suite, cfg->suite, hash_name(c->prf_hash));
    }
  }
  return TB_OK;
}

static tb_status choose_record_size(bs_ctx *c, const tb_config *cfg, char *err) {
  c->ibuf_len = BR_SSL_BUFSIZE_INPUT;
  c->obuf_len = BR_SSL_BUFSIZE_OUTPUT;
  size_t n = cfg->record_size;
  if (n == 0 || n == 16384) return TB_OK;
  if (n != 512 && n != 1024 && n != 2048 && n != 4096) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "BearSSL sizes records by its I/O buffers, which it maps to a "
                   "max_fragment_length of 512, 1024, 2048, 4096 or 16384 bytes, not %zu",
                   n);
  }
  /* Buffers for records of n bytes (BearSSL's overheads: 325 in, 85 out); the client sends
   * max_fragment_length, and the server holds its records to it. */
  c->record_size = n;
  c->ibuf_len = n + 325;
  c->obuf_len = n + 85;
  return TB_OK;
}

static tb_status bs_ctx_new(const tb_config *cfg, void **out, char *err) {
  if (cfg->release_buffers) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "BearSSL works in the caller's fixed I/O buffer for a connection's life: "
                   "it allocates nothing, so there is nothing to release between records");
  }
  bs_ctx *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->role = cfg->role;
  c->verify = cfg->role == TB_CLIENT ? cfg->auth != TB_AUTH_NONE : cfg->auth == TB_AUTH_MUTUAL;
  c->resumption = cfg->resumption;
  c->server_name = cfg->server_name;
  tb_status st = check_offer(c, cfg, err);
  if (st == TB_OK) st = choose_record_size(c, cfg, err);
  if (st == TB_OK && cfg->role == TB_CLIENT && cfg->server_name == NULL)
    st = tb_fail(err, TB_UNSUPPORTED, "no server_name");
  /* Own certificate: always on the server, on the client for mutual auth. */
  if (st == TB_OK && (cfg->role == TB_SERVER || cfg->auth == TB_AUTH_MUTUAL))
    st = load_own(c, cfg, err);
  if (st == TB_OK && c->key_type != 0) {
    int want = c->kx == KX_ECDHE_ECDSA ? BR_KEYTYPE_EC : BR_KEYTYPE_RSA;
    if (c->key_type != want)
      st = tb_fail(err, TB_UNSUPPORTED, "%s needs an %s certificate", cfg->suite,
                   want == BR_KEYTYPE_EC ? "EC" : "RSA");
  }
  if (st == TB_OK && c->verify) st = pem_each(cfg->ca_file, add_anchor, c, err);
  if (st == TB_OK && c->verify && c->n_anchors == 0)
    st = tb_fail(err, TB_FAILED, "%s: no CA certificate", cfg->ca_file);
  if (st == TB_OK && c->kx != KX_RSA) {
    c->ec = *br_ec_get_default();
    if (!(c->ec.supported_curves >> c->curve & 1))
      st = tb_fail(err, TB_UNSUPPORTED, "this BearSSL build has no curve %s", cfg->group);
    c->ec.supported_curves = (uint32_t)1 << c->curve;
  }
  if (st == TB_OK && cfg->role == TB_SERVER && cfg->resumption) {
    c->cache_store = malloc(BS_CACHE_BYTES);
    if (c->cache_store == NULL)
      st = tb_fail(err, TB_FAILED, "out of memory");
    else
      br_ssl_session_cache_lru_init(&c->cache, c->cache_store, BS_CACHE_BYTES);
  }
  if (st != TB_OK) {
    bs_ctx_free(c);
    return st;
  }
  *out = c;
  return TB_OK;
}

/* ------------------------------------------------------------------------- X.509 */

/* The X.509 class the engine uses: with verification, br_x509_minimal, whose verdict it
 * keeps; without, it decodes the leaf and hands its key over unchecked. */
typedef struct bs_x509 {
  const br_x509_class *vtable; /* first: the engine calls through it */
  int verify;
  int ended;       /* end_chain was called in this handshake */
  unsigned result; /* what end_chain returned (0: the chain verified) */
  unsigned n_certs;
  br_x509_minimal_context minimal;
  br_x509_decoder_context leaf;
} bs_x509;

static bs_x509 *x509_of(const br_x509_class **ctx) { return (bs_x509 *)(void *)ctx; }

static void x_start_chain(const br_x509_class **ctx, const char *server_name) {
  bs_x509 *x = x509_of(ctx);
  x->ended = 0, x->result = 0, x->n_certs = 0;
  if (x->verify) x->minimal.vtable->start_chain(&x->minimal.vtable, server_name);
}

static void x_start_cert(const br_x509_class **ctx, uint32_t length) {
  bs_x509 *x = x509_of(ctx);
  if (x->verify) {
    x->minimal.vtable->start_cert(&x->minimal.vtable, length);
  } else if (x->n_certs == 0) {
    br_x509_decoder_init(&x->leaf, NULL, NULL);
  }
}

static void x_append(const br_x509_class **ctx, const unsigned char *buf, size_t len) {
  bs_x509 *x = x509_of(ctx);
  if (x->verify) {
    x->minimal.vtable->append(&x->minimal.vtable, buf, len);
  } else if (x->n_certs == 0) {
    br_x509_decoder_push(&x->leaf, buf, len);
  }
}

static void x_end_cert(const br_x509_class **ctx) {
  bs_x509 *x = x509_of(ctx);
  if (x->verify) x->minimal.vtable->end_cert(&x->minimal.vtable);
  x->n_certs++;
}

static unsigned x_end_chain(const br_x509_class **ctx) {
  bs_x509 *x = x509_of(ctx);
  x->ended = 1;
  if (x->verify) {
    x->result = x->minimal.vtable->end_chain(&x->minimal.vtable);
  } else if (x->n_certs == 0) {
    x->result = BR_ERR_X509_EMPTY_CHAIN;
  } else {
    x->result = br_x509_decoder_get_pkey(&x->leaf) == NULL
                    ? (unsigned)br_x509_decoder_last_error(&x->leaf)
                    : 0;
  }
  return x->result;
}

static const br_x509_pkey *x_get_pkey(const br_x509_class *const *ctx, unsigned *usages) {
  bs_x509 *x = (bs_x509 *)(void *)ctx;
  if (x->verify) return x->minimal.vtable->get_pkey(&x->minimal.vtable, usages);
  if (usages != NULL) *usages = BR_KEYTYPE_KEYX | BR_KEYTYPE_SIGN;
  return br_x509_decoder_get_pkey(&x->leaf);
}

static const br_x509_class kX509 = {sizeof(bs_x509), x_start_chain, x_start_cert, x_append,
                                    x_end_cert,      x_end_chain,   x_get_pkey};

/* ------------------------------------------------------------------------- wire */

/* What the wire said (in the tb_wire's extra bytes). */
typedef struct wire_seen {
  int parsed;             /* negotiated() has read the wire */
  int server_hello;       /* the server's ServerHello passed */
  int hello_done;         /* and its ServerHelloDone: a full handshake */
  uint16_t server_sigalg; /* its ServerKeyExchange's scheme (0: none) */
  uint16_t curve;         /* and its named curve */
  uint16_t client_sigalg; /* the client's CertificateVerify's */
} wire_seen;

/* One of the server's handshake messages, read by the shared reader (tls_wire.c). */
static void server_message(void *arg, unsigned type, const unsigned char *body, size_t len) {
  wire_seen *seen = arg;
  tb_key_exchange kx;
  if (type == TB_HS_SERVER_HELLO) seen->server_hello = 1;
  if (type == TB_HS_SERVER_HELLO_DONE) seen->hello_done = 1;
  if (type == TB_HS_SERVER_KEY_EXCHANGE && tb_hs_server_key_exchange(body, len, 0, &kx) == 0) {
    seen->server_sigalg = kx.sigalg;
    seen->curve = kx.group;
  }
}

/* One of the client's: its CertificateVerify (mutual auth). */
static void client_message(void *arg, unsigned type, const unsigned char *body, size_t len) {
  wire_seen *seen = arg;
  if (type == TB_HS_CERTIFICATE_VERIFY && len >= 2)
    seen->client_sigalg = tb_hs_certificate_verify(body, len);
}

/* ------------------------------------------------------------------------- connections */

typedef struct bs_conn {
  bs_ctx *ctx;
  tb_transport io;
  int done;      /* the handshake completed */
  tb_wire *wire; /* its bytes, and what they said (wire_seen) */
  bs_x509 x509;
  union {
    br_ssl_client_context client;
    br_ssl_server_context server;
  } u;
  unsigned char *buf; /* the I/O buffer: input, then output */
} bs_conn;

static br_ssl_engine_context *eng_of(bs_conn *c) {
  return c->ctx->role == TB_CLIENT ? &c->u.client.eng : &c->u.server.eng;
}

static void bs_conn_free(void *p) {
  bs_conn *c = p;
  if (c == NULL) return;
  free(c->buf);
  tb_wire_free(c->wire);
  free(c);
}

/* What both sides' engines share: the one version, suite, curve and hash, and the
 * signature algorithm of the certificates in play. */
static void pin_engine(bs_conn *c, br_ssl_engine_context *eng) {
  bs_ctx *x = c->ctx;
  br_ssl_engine_set_versions(eng, BR_TLS12, BR_TLS12);
  br_ssl_engine_set_suites(eng, &x->suite, 1);
  /* A *_CBC_SHA suite's records are MACed with HMAC-SHA-1, which the engine takes from its
   * hashes (without it BearSSL dereferences a null hash class at the first record): SHA-1
   * stays, and the signature_algorithms offer holds its schemes too. Both BearSSL sides
   * still choose the PRF hash's scheme (br_ssl_choose_hash prefers SHA-256, then SHA-384),
   * and the scheme signed with is read off the wire and checked as in every run. */
  for (int id = br_md5_ID; id <= br_sha512_ID; id++)
    if (id != x->prf_hash && !(id == br_sha1_ID && x->mac_sha1))
      br_ssl_engine_set_hash(eng, id, NULL);
  /* The signatures verified here (the server's ServerKeyExchange, or the client's
   * CertificateVerify) are of the certificates' kind: only its algorithm is offered (the
   * server's full profile sets none: its CertificateRequest needs one). */
  if (x->kx == KX_ECDHE_ECDSA) {
    br_ssl_engine_set_default_ecdsa(eng);
    br_ssl_engine_set_rsavrfy(eng, 0);
  } else {
    br_ssl_engine_set_default_rsavrfy(eng);
    br_ssl_engine_set_ecdsa(eng, 0);
  }
  /* After the above: br_ssl_engine_set_default_ecdsa sets the default EC implementation. */
  if (x->kx != KX_RSA) br_ssl_engine_set_ec(eng, &x->ec);
  br_ssl_engine_add_flags(eng, BR_OPT_NO_RENEGOTIATION);
  br_ssl_engine_set_buffers_bidi(eng, c->buf, x->ibuf_len, c->buf + x->ibuf_len, x->obuf_len);
  br_ssl_engine_set_x509(eng, &c->x509.vtable);
  if (g_fixed_random != NULL) {
    unsigned char seed[32];
    g_fixed_random(seed, sizeof(seed));
    eng->rng_os_rand_done = 1; /* private field: no system seeding, the stream only */
    br_ssl_engine_inject_entropy(eng, seed, sizeof(seed));
  }
}

static void setup_x509(bs_conn *c) {
  bs_ctx *x = c->ctx;
  c->x509.vtable = &kX509;
  c->x509.verify = x->verify;
  if (!x->verify) return;
  br_x509_minimal_init(&c->x509.minimal, &br_sha256_vtable, x->anchors, x->n_anchors);
  br_x509_minimal_set_rsa(&c->x509.minimal, br_rsa_pkcs1_vrfy_get_default());
  br_x509_minimal_set_ecdsa(&c->x509.minimal, br_ec_get_default(),
                            br_ecdsa_vrfy_asn1_get_default());
  static const br_hash_class *const hashes[] = {
      &br_sha1_vtable, &br_sha224_vtable, &br_sha256_vtable, &br_sha384_vtable, &br_sha512_vtable};
  for (size_t i = 0; i < COUNT(hashes); i++)
    br_x509_minimal_set_hash(&c->x509.minimal, (int)(i + br_sha1_ID), hashes[i]);
}

static tb_status bs_conn_new(void *ctx, const tb_transport *transport, void *session, void **out,
                             char *err) {
  bs_ctx *x = ctx;
  if (transport->bio) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "BearSSL has no BIO layer: its engine's record buffers are the only path "
                   "(br_sslio is a blocking wrapper over the same)");
  }
  if (transport->fd >= 0) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "BearSSL does no socket I/O of its own: the caller moves its records (--io fd)");
  }
  bs_conn *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->ctx = x;
  c->io = *transport;
  c->buf = malloc(x->ibuf_len + x->obuf_len);
  if (c->buf == NULL) {
    free(c);
    return tb_fail(err, TB_FAILED, "out of memory");
  }
  c->wire = tb_wire_new();
  if (c->wire == NULL) {
    free(c->buf);
    free(c);
    return tb_fail(err, TB_FAILED, "out of memory (read-back)");
  }
  setup_x509(c);
  int ok;
  if (x->role == TB_CLIENT) {
    br_ssl_client_context *cc = &c->u.client;
    /* The full profile's implementations (BearSSL's defaults, AES-NI where the CPU has
     * it), then the offer pinned over it. */
    br_ssl_client_init_full(cc, &c->x509.minimal, x->anchors, x->n_anchors);
    if (x->verify) setup_x509(c); /* init_full set the minimal engine's own defaults */
    /* Before the offer is pinned: set_single_ec also sets the engine's EC implementation. */
    if (x->key_type == BR_KEYTYPE_RSA) {
      br_ssl_client_set_single_rsa(cc, x->chain, x->chain_len, br_skey_decoder_get_rsa(&x->key),
                                   br_rsa_pkcs1_sign_get_default());
    } else if (x->key_type == BR_KEYTYPE_EC) {
      br_ssl_client_set_single_ec(cc, x->chain, x->chain_len, br_skey_decoder_get_ec(&x->key),
                                  BR_KEYTYPE_SIGN, x->issuer_key_type, br_ec_get_default(),
                                  br_ecdsa_sign_asn1_get_default());
    }
    pin_engine(c, &cc->eng);
    if (session != NULL) br_ssl_engine_set_session_parameters(&cc->eng, session);
    ok = br_ssl_client_reset(cc, x->server_name, session != NULL);
  } else {
    br_ssl_server_context *sc = &c->u.server;
    if (x->key_type == BR_KEYTYPE_RSA) {
      br_ssl_server_init_full_rsa(sc, x->chain, x->chain_len, br_skey_decoder_get_rsa(&x->key));
    } else {
      br_ssl_server_init_full_ec(sc, x->chain, x->chain_len, x->issuer_key_type,
                                 br_skey_decoder_get_ec(&x->key));
    }
    pin_engine(c, &sc->eng);
    if (x->verify) {
      /* Mutual auth: the CertificateRequest names the anchors, and a client without a
       * certificate fails the handshake (BR_OPT_TOLERATE_NO_CLIENT_AUTH stays off). */
      br_ssl_server_set_trust_anchor_names_alt(sc, x->anchors, x->n_anchors);
    }
    if (x->resumption) br_ssl_server_set_cache(sc, &x->cache.vtable);
    ok = br_ssl_server_reset(sc);
  }
  if (!ok) {
    int e = br_ssl_engine_last_error(eng_of(c));
    bs_conn_free(c);
    return bs_fail(err, "reset", e);
  }
  *out = c;
  return TB_OK;
}

/* Sends what the engine has for the peer: TB_OK when all is out, TB_WANT_IO when the
 * transport takes no more now. */
static tb_status flush(bs_conn *c, char *err) {
  br_ssl_engine_context *eng = eng_of(c);
  for (;;) {
    size_t len;
    unsigned char *buf = br_ssl_engine_sendrec_buf(eng, &len);
    if (buf == NULL) return TB_OK;
    long n = c->io.send(c->io.io, buf, len);
    if (n == TB_IO_WOULD_BLOCK || n == 0) return TB_WANT_IO;
    if (n < 0) return tb_fail(err, TB_FAILED, "transport write failed");
    if (!c->done) tb_wire_keep(c->wire, TB_WIRE_OUT, buf, (size_t)n);
    br_ssl_engine_sendrec_ack(eng, (size_t)n);
  }
}

/* Gives the engine what the transport has: TB_OK when bytes came, TB_WANT_IO when none. */
static tb_status pull(bs_conn *c, const char *what, char *err) {
  br_ssl_engine_context *eng = eng_of(c);
  size_t len;
  unsigned char *buf = br_ssl_engine_recvrec_buf(eng, &len);
  if (buf == NULL) return tb_fail(err, TB_FAILED, "%s: the engine takes no input", what);
  long n = c->io.recv(c->io.io, buf, len);
  if (n == TB_IO_WOULD_BLOCK) return TB_WANT_IO;
  if (n == 0) return TB_CLOSED;
  if (n < 0) return tb_fail(err, TB_FAILED, "%s: transport read failed", what);
  if (!c->done) tb_wire_keep(c->wire, TB_WIRE_IN, buf, (size_t)n);
  br_ssl_engine_recvrec_ack(eng, (size_t)n);
  return TB_OK;
}

/* The engine's state after it closed: TB_CLOSED after close_notify, else its error. */
static tb_status closed(bs_conn *c, const char *what, char *err) {
  int e = br_ssl_engine_last_error(eng_of(c));
  return e == BR_ERR_OK ? TB_CLOSED : bs_fail(err, what, e);
}

static tb_status bs_handshake(void *conn, char *err) {
  bs_conn *c = conn;
  br_ssl_engine_context *eng = eng_of(c);
  for (;;) {
    tb_status st = flush(c, err);
    unsigned state = br_ssl_engine_current_state(eng);
    if (state & BR_SSL_CLOSED) {
      st = closed(c, "handshake", err);
      return st == TB_CLOSED ? tb_fail(err, TB_FAILED, "handshake: the peer closed") : st;
    }
    if (st != TB_OK) return st;
    if (state & (BR_SSL_SENDAPP | BR_SSL_RECVAPP)) {
      c->done = 1;
      return TB_OK;
    }
    if (!(state & BR_SSL_RECVREC)) return tb_fail(err, TB_FAILED, "handshake: engine stalled");
    st = pull(c, "handshake", err);
    if (st == TB_CLOSED) return tb_fail(err, TB_FAILED, "handshake: the peer closed the stream");
    if (st != TB_OK) return st;
  }
}

static tb_status bs_write(void *conn, const unsigned char *buf, size_t len, size_t *done,
                          char *err) {
  bs_conn *c = conn;
  br_ssl_engine_context *eng = eng_of(c);
  *done = 0;
  /* Records the engine holds go out first; while they cannot, nothing new is taken. */
  tb_status st = flush(c, err);
  if (st != TB_OK) return st;
  if (br_ssl_engine_current_state(eng) & BR_SSL_CLOSED) return closed(c, "write", err);
  if (len == 0) return TB_OK;
  size_t room;
  unsigned char *app = br_ssl_engine_sendapp_buf(eng, &room);
  if (app == NULL) return TB_WANT_IO;
  size_t n = len < room ? len : room;
  memcpy(app, buf, n);
  br_ssl_engine_sendapp_ack(eng, n);
  br_ssl_engine_flush(eng, 0);
  *done = n;
  st = flush(c, err);
  /* The bytes are taken (in the engine's buffer); the rest goes out on the next call. */
  return st == TB_WANT_IO ? TB_OK : st;
}

static tb_status bs_read(void *conn, unsigned char *buf, size_t len, size_t *done, char *err) {
  bs_conn *c = conn;
  br_ssl_engine_context *eng = eng_of(c);
  *done = 0;
  for (;;) {
    size_t have;
    unsigned char *app = br_ssl_engine_recvapp_buf(eng, &have);
    if (app != NULL) {
      size_t n = len < have ? len : have;
      memcpy(buf, app, n);
      br_ssl_engine_recvapp_ack(eng, n);
      *done = n;
      return TB_OK;
    }
    tb_status st = flush(c, err); /* what the engine answers (close_notify, alerts) */
    if (st != TB_OK && st != TB_WANT_IO) return st;
    if (br_ssl_engine_current_state(eng) & BR_SSL_CLOSED) return closed(c, "read", err);
    st = pull(c, "read", err);
    if (st == TB_CLOSED) return tb_fail(err, TB_FAILED, "read: EOF without close_notify");
    if (st != TB_OK) return st;
  }
}

static tb_status bs_close(void *conn, char *err) {
  bs_conn *c = conn;
  br_ssl_engine_close(eng_of(c));
  tb_status st = flush(c, err);
  return st == TB_WANT_IO ? TB_OK : st; /* one attempt, as the contract says */
}

/* ------------------------------------------------------------------------- negotiated */

static tb_status bs_negotiated(void *conn, tb_negotiated *out, char *err) {
  bs_conn *c = conn;
  br_ssl_engine_context *eng = eng_of(c);
  memset(out, 0, sizeof(*out));
  if (!c->done) return tb_fail(err, TB_FAILED, "the handshake has not completed");
  unsigned v = br_ssl_engine_get_version(eng);
  snprintf(out->version, sizeof(out->version), "%s",
           v == BR_TLS12   ? "1.2"
           : v == BR_TLS11 ? "1.1"
           : v == BR_TLS10 ? "1.0"
                           : "other");
  br_ssl_session_parameters sp;
  br_ssl_engine_get_session_parameters(eng, &sp);
  code_name(tb_suite_names, sp.cipher_suite, out->suite);
  memset(&sp, 0, sizeof(sp)); /* it holds the master secret */
  wire_seen *seen = tb_wire_extra(c->wire);
  if (!seen->parsed) {
    if (tb_wire_overflow(c->wire))
      return tb_fail(err, TB_FAILED,
                     "the handshake passed more than the %d bytes a direction the read-back keeps",
                     TB_WIRE_BYTES);
    int client = c->ctx->role == TB_CLIENT;
    tb_wire_plain_messages(c->wire, client ? TB_WIRE_IN : TB_WIRE_OUT, 0, server_message, seen);
    tb_wire_plain_messages(c->wire, client ? TB_WIRE_OUT : TB_WIRE_IN, 0, client_message, seen);
    tb_wire_release(c->wire);
    seen->parsed = 1;
  }
  if (!seen->server_hello) return tb_fail(err, TB_FAILED, "no ServerHello was observed");
  out->resumed = !seen->hello_done;
  if (!out->resumed) {
    /* The curve of an ECDHE key exchange, as the engine recorded it. */
    bs_kx kx = suite_kx(out->suite);
    if (kx == KX_ECDHE_RSA || kx == KX_ECDHE_ECDSA) {
      unsigned curve = (unsigned)br_ssl_engine_get_ecdhe_curve(eng);
      if (curve != seen->curve) {
        return tb_fail(err, TB_FAILED, "the engine reports curve %u, the ServerKeyExchange %u",
                       curve, (unsigned)seen->curve);
      }
      code_name(tb_group_names, curve, out->group);
    }
    if (seen->server_sigalg != 0) code_name(tb_sigalg_names, seen->server_sigalg, out->sigalg);
    if (seen->client_sigalg != 0)
      code_name(tb_sigalg_names, seen->client_sigalg, out->client_sigalg);
    out->peer_verified = c->ctx->verify && c->x509.ended && c->x509.result == 0;
  }
  /* max_fragment_length is an offer the peer may ignore: check it took effect. */
  if (c->ctx->record_size != 0 && eng->max_frag_len > c->ctx->record_size) {
    return tb_fail(err, TB_FAILED, "records of up to %u bytes, asked for %zu",
                   (unsigned)eng->max_frag_len, c->ctx->record_size);
  }
  return TB_OK;
}

/* ------------------------------------------------------------------------- sessions */

static tb_status bs_session_get(void *conn, void **session, char *err) {
  bs_conn *c = conn;
  *session = NULL;
  if (c->ctx->role != TB_CLIENT) return tb_fail(err, TB_FAILED, "sessions are taken on clients");
  br_ssl_session_parameters *sp = malloc(sizeof(*sp));
  if (sp == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  br_ssl_engine_get_session_parameters(&c->u.client.eng, sp);
  if (sp->session_id_len == 0) {
    free(sp);
    return tb_fail(err, TB_FAILED, "the server gave no session ID (no session cache)");
  }
  *session = sp;
  return TB_OK;
}

static void bs_session_free(void *session) {
  if (session != NULL) memset(session, 0, sizeof(br_ssl_session_parameters));
  free(session);
}

static const tb_tls_class kTls = {
    .ctx_new = bs_ctx_new,
    .ctx_free = bs_ctx_free,
    .conn_new = bs_conn_new,
    .conn_free = bs_conn_free,
    .handshake = bs_handshake,
    .write = bs_write,
    .read = bs_read,
    .close = bs_close,
    .negotiated = bs_negotiated,
    .session_get = bs_session_get,
    .session_free = bs_session_free,
    .pool_use = NULL,
};

/* ------------------------------------------------------------------------- AEAD */

/* The implementations BearSSL's own engine set-up picks (br_ssl_engine_set_default_aes_gcm,
 * _chapol): AES-NI / PCLMULQDQ / SSE2 where the CPU has them, else constant-time C. */
static const br_block_ctr_class *aes_ctr_impl(const char **name) {
  const br_block_ctr_class *x = br_aes_x86ni_ctr_get_vtable();
  *name = x != NULL ? "aes_x86ni" : "aes_ct64";
  return x != NULL ? x : &br_aes_ct64_ctr_vtable;
}

static br_ghash ghash_impl(const char **name) {
  br_ghash g = br_ghash_pclmul_get();
  *name = g != 0 ? "ghash_pclmul" : "ghash_ctmul64";
  return g != 0 ? g : &br_ghash_ctmul64;
}

static br_chacha20_run chacha_impl(const char **name) {
  br_chacha20_run r = br_chacha20_sse2_get();
  *name = r != 0 ? "chacha20_sse2" : "chacha20_ct";
  return r != 0 ? r : &br_chacha20_ct_run;
}

static br_poly1305_run poly_impl(const char **name) {
  br_poly1305_run r = br_poly1305_ctmulq_get();
  *name = r != 0 ? "poly1305_ctmulq" : "poly1305_ctmul";
  return r != 0 ? r : &br_poly1305_ctmul_run;
}

typedef struct bs_aead {
  tb_aead_alg alg;
  br_aes_gen_ctr_keys aes;
  br_gcm_context gcm;
  unsigned char key[32];
  br_chacha20_run chacha;
  br_poly1305_run poly;
} bs_aead;

static tb_status bs_aead_new(tb_aead_alg alg, const unsigned char *key, size_t key_len, void **out,
                             char *err) {
  bs_aead *a = calloc(1, sizeof(*a));
  if (a == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  a->alg = alg;
  const char *name;
  if (alg == TB_CHACHA20_POLY1305) {
    if (key_len != 32) {
      free(a);
      return tb_fail(err, TB_FAILED, "ChaCha20-Poly1305 takes a 32-byte key");
    }
    memcpy(a->key, key, 32);
    a->chacha = chacha_impl(&name);
    a->poly = poly_impl(&name);
  } else {
    const br_block_ctr_class *ctr = aes_ctr_impl(&name);
    ctr->init(&a->aes.vtable, key, key_len);
    br_gcm_init(&a->gcm, &a->aes.vtable, ghash_impl(&name));
  }
  *out = a;
  return TB_OK;
}

static tb_status bs_aead_run(bs_aead *a, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                             const unsigned char *ad, size_t ad_len, const unsigned char *in,
                             size_t len, unsigned char *out, int encrypt, char *err) {
  unsigned char tag[TB_AEAD_TAG_LEN];
  memmove(out, in, len); /* BearSSL encrypts and decrypts in place */
  if (a->alg == TB_CHACHA20_POLY1305) {
    a->poly(a->key, nonce, out, len, ad, ad_len, tag, a->chacha, encrypt);
  } else {
    br_gcm_reset(&a->gcm, nonce, TB_AEAD_NONCE_LEN);
    br_gcm_aad_inject(&a->gcm, ad, ad_len);
    br_gcm_flip(&a->gcm);
    br_gcm_run(&a->gcm, encrypt, out, len);
    br_gcm_get_tag(&a->gcm, tag);
  }
  if (encrypt) {
    memcpy(out + len, tag, TB_AEAD_TAG_LEN);
    return TB_OK;
  }
  /* Constant-time comparison, as BearSSL's own check_tag does. */
  unsigned diff = 0;
  for (size_t i = 0; i < TB_AEAD_TAG_LEN; i++) diff |= tag[i] ^ in[len + i];
  return diff == 0 ? TB_OK : tb_fail(err, TB_FAILED, "tag mismatch");
}

static tb_status bs_aead_seal(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                              const unsigned char *ad, size_t ad_len, const unsigned char *in,
                              size_t len, unsigned char *out, char *err) {
  return bs_aead_run(aead, nonce, ad, ad_len, in, len, out, 1, err);
}

static tb_status bs_aead_open(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                              const unsigned char *ad, size_t ad_len, const unsigned char *in,
                              size_t len, unsigned char *out, char *err) {
  return bs_aead_run(aead, nonce, ad, ad_len, in, len, out, 0, err); /* the tag at in + len */
}

static void bs_aead_free(void *aead) { free(aead); }

static const tb_aead_class kAead = {
    .create = bs_aead_new,
    .seal = bs_aead_seal,
    .open = bs_aead_open,
    .free = bs_aead_free,
};

/* ------------------------------------------------------------------------- global, info */

static tb_status bs_global_init(char *err) {
  (void)err;
  return TB_OK;
}

static void bs_global_cleanup(void) {}

static void bs_cpu_paths(char *out, size_t len) {
  const char *aes, *gh, *cc, *poly;
  (void)aes_ctr_impl(&aes), (void)ghash_impl(&gh), (void)chacha_impl(&cc), (void)poly_impl(&poly);
  snprintf(out, len, "%s %s %s %s (chosen by CPUID, as br_ssl_engine_set_default_* do)", aes, gh,
           cc, poly);
}

static const char *g_versions[] = {"1.2", NULL};
static const char *g_suites[COUNT(kSuites) + 1];
static const char *g_groups[COUNT(kGroups) + 1];
static const char *g_sigalgs[COUNT(kSigalgs) + 1];
static char g_build_text[4][96];
static const char *g_build_options[5];

static tb_status bs_info(tb_info *out, char *err) {
  (void)err;
  size_t n = 0;
  for (size_t i = 0; i < COUNT(kSuites); i++) {
    const tb_name *s = tb_name_of_code(tb_suite_names, kSuites[i]);
    if (s != NULL) g_suites[n++] = s->name;
  }
  g_suites[n] = NULL;
  n = 0;
  for (size_t i = 0; i < COUNT(kGroups); i++) {
    const tb_name *g = tb_name_find(tb_group_names, kGroups[i]);
    if (g != NULL && (br_ec_get_default()->supported_curves >> g->code & 1))
      g_groups[n++] = g->name;
  }
  g_groups[n] = NULL;
  for (n = 0; n < COUNT(kSigalgs); n++) g_sigalgs[n] = kSigalgs[n];
  g_sigalgs[n] = NULL;
  snprintf(g_build_text[0], sizeof(g_build_text[0]), "BR_SSL_BUFSIZE_BIDI=%d",
           (int)BR_SSL_BUFSIZE_BIDI);
  snprintf(g_build_text[1], sizeof(g_build_text[1]), "sizeof(br_ssl_client_context)=%zu",
           sizeof(br_ssl_client_context));
  snprintf(g_build_text[2], sizeof(g_build_text[2]), "sizeof(br_ssl_server_context)=%zu",
           sizeof(br_ssl_server_context));
  snprintf(g_build_text[3], sizeof(g_build_text[3]), "BR_MAX_RSA_SIZE=%d", BS_MAX_RSA_BITS);
  for (int i = 0; i < 4; i++) g_build_options[i] = g_build_text[i];
  g_build_options[4] = NULL;
  snprintf(out->version, sizeof(out->version), "BearSSL %s", TB_BEARSSL_VERSION);
  out->build_options = g_build_options;
  out->versions = g_versions;
  out->suites = g_suites;
  out->groups = g_groups;
  out->sigalgs = g_sigalgs;
  out->no_tls = NULL;
  /* BearSSL has no locks at all: a server context's session cache (an LRU in the caller's
   * buffer) would be raced on by threads sharing the context. */
  out->no_threads =
      "BearSSL has no locks: a server context's session cache (br_ssl_session_cache_lru) "
      "cannot be shared between threads";
  return TB_OK;
}

const tb_adapter tb_adapter_impl = {
    .name = "bearssl",
    .global_init = bs_global_init,
    .global_cleanup = bs_global_cleanup,
    .info = bs_info,
    .cpu_paths = bs_cpu_paths,
    .derandomize = bs_derandomize,
    .tls = &kTls,
    .aead = &kAead,
};
