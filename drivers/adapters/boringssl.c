/*
 * BoringSSL adapter.
 *
 * BoringSSL keeps much of OpenSSL's API, but differs exactly where the checks read:
 *  - TLS 1.3 suites have their own list, set by code point (SSL_CTX_set1_tls13_ciphers);
 *    the cipher-list string governs TLS 1.2 only, as in OpenSSL.
 *  - groups, signature schemes and the negotiated values are code points (uint16_t):
 *    SSL_CTX_set1_group_ids, SSL_CTX_set_signing_algorithm_prefs (what this side signs
 *    with) apart from SSL_CTX_set_verify_algorithm_prefs (what it accepts from the peer,
 *    also sent in signature_algorithms / CertificateRequest), SSL_get_group_id and
 *    SSL_get_peer_signature_algorithm. A side's own signature scheme is only known during
 *    the handshake (SSL_get_signature_algorithm_used), so it is read at
 *    SSL_CB_HANDSHAKE_DONE from the info callback.
 *  - no finite-field DHE at all, no max_fragment_length extension, no allocator hooks of
 *    the CRYPTO_set_mem_functions kind: OPENSSL_malloc calls malloc (with an 8-byte size
 *    prefix), which the heap driver wraps like every other allocation.
 *  - a TLS 1.3 client receives its resumable sessions through the new-session callback
 *    (the established session of a TLS 1.3 connection is never resumable itself).
 *
 * Transport: a custom BIO_METHOD, as in the OpenSSL adapter: its read/write callbacks call
 * the tb_transport and map TB_IO_WOULD_BLOCK to the BIO retry flags.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/aead.h>
#include <openssl/base.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/nid.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "tlsbench/driver.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------- names */

/* Our group names (tb_config.group) with BoringSSL's code points. Finite-field groups are
 * absent: BoringSSL removed DHE. */
typedef struct group_name {
  const char *name;
  uint16_t id;
} group_name;

static const group_name kGroups[] = {
    {"x25519", SSL_GROUP_X25519},
    {"secp256r1", SSL_GROUP_SECP256R1},
    {"secp384r1", SSL_GROUP_SECP384R1},
    {"secp521r1", SSL_GROUP_SECP521R1},
    {"X25519MLKEM768", SSL_GROUP_X25519_MLKEM768},
    {"MLKEM1024", SSL_GROUP_MLKEM1024},
};

/* IANA SignatureScheme names and code points; `tls13`: RFC 8446 allows the scheme in a
 * CertificateVerify (no PKCS#1 v1.5, no SHA-1). */
typedef struct sigalg_name {
  const char *iana;
  uint16_t id;
  int tls13;
} sigalg_name;

static const sigalg_name kSigalgs[] = {
    {"rsa_pkcs1_sha256", SSL_SIGN_RSA_PKCS1_SHA256, 0},
    {"rsa_pkcs1_sha384", SSL_SIGN_RSA_PKCS1_SHA384, 0},
    {"rsa_pkcs1_sha512", SSL_SIGN_RSA_PKCS1_SHA512, 0},
    {"rsa_pss_rsae_sha256", SSL_SIGN_RSA_PSS_RSAE_SHA256, 1},
    {"rsa_pss_rsae_sha384", SSL_SIGN_RSA_PSS_RSAE_SHA384, 1},
    {"rsa_pss_rsae_sha512", SSL_SIGN_RSA_PSS_RSAE_SHA512, 1},
    {"ecdsa_secp256r1_sha256", SSL_SIGN_ECDSA_SECP256R1_SHA256, 1},
    {"ecdsa_secp384r1_sha384", SSL_SIGN_ECDSA_SECP384R1_SHA384, 1},
    {"ecdsa_secp521r1_sha512", SSL_SIGN_ECDSA_SECP521R1_SHA512, 1},
    {"ed25519", SSL_SIGN_ED25519, 1},
    {"mldsa44", SSL_SIGN_ML_DSA_44, 1},
    {"mldsa65", SSL_SIGN_ML_DSA_65, 1},
    {"mldsa87", SSL_SIGN_ML_DSA_87, 1},
    {"rsa_pkcs1_sha1", SSL_SIGN_RSA_PKCS1_SHA1, 0},
    {"ecdsa_sha1", SSL_SIGN_ECDSA_SHA1, 0},
};

/* The TLS 1.3 suites BoringSSL implements (it has no CCM suites). */
static const uint16_t kTls13Suites[] = {
    SSL_CIPHER_AES_128_GCM_SHA256,
    SSL_CIPHER_AES_256_GCM_SHA384,
    SSL_CIPHER_CHACHA20_POLY1305_SHA256,
};

static const group_name *find_group(const char *name) {
  for (size_t i = 0; i < ARRAY_LEN(kGroups); i++)
    if (strcasecmp(name, kGroups[i].name) == 0) return &kGroups[i];
  return NULL;
}

static const char *group_of_id(uint16_t id) {
  for (size_t i = 0; i < ARRAY_LEN(kGroups); i++)
    if (kGroups[i].id == id) return kGroups[i].name;
  return NULL;
}

static const sigalg_name *find_sigalg(const char *iana) {
  for (size_t i = 0; i < ARRAY_LEN(kSigalgs); i++)
    if (strcmp(iana, kSigalgs[i].iana) == 0) return &kSigalgs[i];
  return NULL;
}

static const char *sigalg_of_id(uint16_t id) {
  for (size_t i = 0; i < ARRAY_LEN(kSigalgs); i++)
    if (kSigalgs[i].id == id) return kSigalgs[i].iana;
  return NULL;
}

/* The error text and the transport BIO method, shared with the other adapters of
 * libraries with OpenSSL's API. */
#define TB_FAMILY_NAME "BoringSSL"
#include "openssl_family.h"

/* ------------------------------------------------------------------------- objects */

typedef struct bssl_ctx {
  SSL_CTX *ctx;
  tb_role role;
  char server_name[256]; /* client: SNI */
} bssl_ctx;

typedef struct bssl_conn {
  SSL *ssl;
  tb_transport transport; /* the BIO's data points here */
  /* The scheme this side signed with, as the library reported it at handshake end
   * (0: it signed nothing). */
  uint16_t own_sigalg;
  /* Client: the newest session the library handed over (TLS 1.2 at handshake end, TLS 1.3
   * with each NewSessionTicket); owned here. */
  SSL_SESSION *session;
} bssl_conn;

typedef struct bssl_aead {
  EVP_AEAD_CTX *ctx;
} bssl_aead;

/* ------------------------------------------------------------------------- global */

/* What BoringSSL sets up lazily once per process is done here, so that it is charged to
 * "global" and not to the first context or handshake of a side: the CPU capability
 * probe and the random generator's per-thread state (first RAND_bytes), a context's static
 * method tables (one SSL_CTX made and freed), and this thread's error queue (allocated by
 * its first use). */
static tb_status bssl_global_init(char *err) {
  CRYPTO_library_init();
  g_bio_method = make_bio_method();
  if (g_bio_method == NULL) return ossl_fail(err, TB_FAILED, "BIO_meth_new");
  unsigned char rnd[32];
  if (RAND_bytes(rnd, sizeof(rnd)) != 1) return ossl_fail(err, TB_FAILED, "RAND_bytes");
  SSL_CTX *warm = SSL_CTX_new(TLS_method());
  if (warm == NULL) return ossl_fail(err, TB_FAILED, "SSL_CTX_new");
  SSL_CTX_free(warm);
  ERR_put_error(ERR_LIB_SSL, 0, ERR_R_INTERNAL_ERROR, __FILE__, __LINE__);
  ERR_clear_error();
  return TB_OK;
}

static void bssl_global_cleanup(void) {
  BIO_meth_free(g_bio_method);
  g_bio_method = NULL;
}

/* ------------------------------------------------------------------------- ctx_new */

static int version_of(int tls_version) {
  return tls_version == 13 ? TLS1_3_VERSION : tls_version == 12 ? TLS1_2_VERSION : 0;
}

/* Looks a TLS 1.2 suite up by its IANA name among every suite this build has. */
static const SSL_CIPHER *find_tls12_cipher(SSL_CTX *ctx, const char *iana) {
  if (!SSL_CTX_set_cipher_list(ctx, "ALL")) return NULL;
  STACK_OF(SSL_CIPHER) *all = SSL_CTX_get_ciphers(ctx);
  for (size_t i = 0; i < sk_SSL_CIPHER_num(all); i++) {
    const SSL_CIPHER *c = sk_SSL_CIPHER_value(all, i);
    const char *std = SSL_CIPHER_standard_name(c);
    if (std != NULL && strcmp(std, iana) == 0) return c;
  }
  return NULL;
}

/* Pins the offer to exactly one suite: a TLS 1.3 suite through BoringSSL's TLS 1.3 list
 * (by code point), a TLS 1.2 suite through the cipher-list string (TLS 1.2 only). With
 * min = max version the other list is never offered. Returns the suite's key exchange. */
static tb_status pin_suite(SSL_CTX *ctx, const tb_config *cfg, int *kx_nid, char *err) {
  if (strchr(cfg->suite, ':') != NULL)
    return tb_fail(err, TB_UNSUPPORTED, "one suite expected, got '%s'", cfg->suite);
  if (cfg->tls_version == 13) {
    for (size_t i = 0; i < ARRAY_LEN(kTls13Suites); i++) {
      const SSL_CIPHER *c = SSL_get_cipher_by_value(kTls13Suites[i]);
      if (c == NULL || strcmp(SSL_CIPHER_standard_name(c), cfg->suite) != 0) continue;
      if (!SSL_CTX_set1_tls13_ciphers(ctx, &kTls13Suites[i], NULL, 1))
        return ossl_fail(err, TB_FAILED, "SSL_CTX_set1_tls13_ciphers");
      *kx_nid = NID_kx_any;
      return TB_OK;
    }
    return tb_fail(err, TB_UNSUPPORTED, "'%s' is not a TLS 1.3 suite of BoringSSL", cfg->suite);
  }
  const SSL_CIPHER *c = find_tls12_cipher(ctx, cfg->suite);
  if (c == NULL) {
    ERR_clear_error();
    return tb_fail(err, TB_UNSUPPORTED, "BoringSSL has no TLS 1.2 suite '%s'", cfg->suite);
  }
  /* SSL_CIPHER_get_name is BoringSSL's own name, e.g. ECDHE-RSA-AES128-GCM-SHA256. */
  if (!SSL_CTX_set_strict_cipher_list(ctx, SSL_CIPHER_get_name(c)) ||
      sk_SSL_CIPHER_num(SSL_CTX_get_ciphers(ctx)) != 1)
    return ossl_fail(err, TB_FAILED, "SSL_CTX_set_strict_cipher_list");
  *kx_nid = SSL_CIPHER_get_kx_nid(c);
  if (*kx_nid != NID_kx_rsa && *kx_nid != NID_kx_ecdhe)
    return tb_fail(err, TB_UNSUPPORTED, "'%s' is not certificate-authenticated (PSK)", cfg->suite);
  return TB_OK;
}

static tb_status pin_group(SSL_CTX *ctx, const tb_config *cfg, int kx_nid, char *err) {
  if (kx_nid == NID_kx_rsa) return TB_OK; /* static RSA: no group is used */
  if (cfg->group == NULL) return tb_fail(err, TB_UNSUPPORTED, "no group given");
  if (strncasecmp(cfg->group, "ffdhe", 5) == 0)
    return tb_fail(err, TB_UNSUPPORTED, "BoringSSL has no finite-field (ffdhe) groups");
  const group_name *g = find_group(cfg->group);
  if (g == NULL) return tb_fail(err, TB_UNSUPPORTED, "BoringSSL has no group '%s'", cfg->group);
  /* One group and nothing else: by default BoringSSL also offers X25519MLKEM768. With a key share
   * asked first (HelloRetryRequest), [key_share, group]: the client sends one share, for the first
   * group of its list. */
  uint16_t ids[2] = {g->id, 0};
  size_t n_ids = 1;
  if (cfg->key_share != NULL) {
    const group_name *first = find_group(cfg->key_share);
    if (first == NULL)
      return tb_fail(err, TB_UNSUPPORTED, "BoringSSL has no group '%s'", cfg->key_share);
    ids[0] = first->id;
    ids[1] = g->id;
    n_ids = 2;
  }
  if (!SSL_CTX_set1_group_ids(ctx, ids, n_ids)) {
    char what[TB_NAME_LEN + 48];
    snprintf(what, sizeof(what), "this BoringSSL build cannot offer group %s", g->name);
    return ossl_fail(err, TB_UNSUPPORTED, what);
  }
  return TB_OK;
}

static tb_status check_sigalg(const tb_config *cfg, const char *name, const sigalg_name **out,
                              char *err) {
  const sigalg_name *sa = find_sigalg(name);
  if (sa == NULL)
    return tb_fail(err, TB_UNSUPPORTED, "BoringSSL has no signature scheme '%s'", name);
  if (cfg->tls_version == 13 && !sa->tls13)
    return tb_fail(err, TB_UNSUPPORTED, "TLS 1.3 does not allow %s", name);
  *out = sa;
  return TB_OK;
}

/* Signing and verifying are two lists in BoringSSL. The server's signature uses `sigalg`
 * (server signs, client verifies), the client's CertificateVerify `client_sigalg` when the
 * run sets it apart (client signs, server verifies and lists it in its
 * CertificateRequest). */
static tb_status pin_sigalg(SSL_CTX *ctx, const tb_config *cfg, int kx_nid, char *err) {
  /* Static RSA: the server signs nothing, but a client certificate still signs a
   * CertificateVerify, so a given scheme is pinned all the same. */
  if (kx_nid == NID_kx_rsa && cfg->sigalg == NULL) return TB_OK;
  if (cfg->sigalg == NULL) return tb_fail(err, TB_UNSUPPORTED, "no signature scheme given");
  const sigalg_name *server_sa = NULL, *client_sa = NULL;
  tb_status st = check_sigalg(cfg, cfg->sigalg, &server_sa, err);
  if (st != TB_OK) return st;
  st = check_sigalg(cfg, cfg->client_sigalg != NULL ? cfg->client_sigalg : cfg->sigalg, &client_sa,
                    err);
  if (st != TB_OK) return st;
  const sigalg_name *sign = cfg->role == TB_SERVER ? server_sa : client_sa;
  const sigalg_name *verify = cfg->role == TB_SERVER ? client_sa : server_sa;
  if (!SSL_CTX_set_signing_algorithm_prefs(ctx, &sign->id, 1))
    return ossl_fail(err, TB_UNSUPPORTED, "SSL_CTX_set_signing_algorithm_prefs");
  if (!SSL_CTX_set_verify_algorithm_prefs(ctx, &verify->id, 1))
    return ossl_fail(err, TB_UNSUPPORTED, "SSL_CTX_set_verify_algorithm_prefs");
  return TB_OK;
}

static tb_status load_own_chain(SSL_CTX *ctx, const tb_config *cfg, char *err) {
  if (cfg->chain_file == NULL) return TB_OK;
  if (!SSL_CTX_use_certificate_chain_file(ctx, cfg->chain_file))
    return ossl_fail(err, TB_FAILED, "certificate chain");
  if (cfg->key_file == NULL || !SSL_CTX_use_PrivateKey_file(ctx, cfg->key_file, SSL_FILETYPE_PEM))
    return ossl_fail(err, TB_FAILED, "private key");
  if (!SSL_CTX_check_private_key(ctx)) return ossl_fail(err, TB_FAILED, "key/certificate");
  return TB_OK;
}

/* TLS 1.2: supported_groups also lists the curves an ECDSA certificate may use (RFC 8422),
 * and BoringSSL enforces it; with the offer pinned to one group, a certificate on another
 * curve cannot be used. Said here, where the certificate is known. */
static tb_status check_tls12_ecdsa_curve(SSL_CTX *ctx, const tb_config *cfg, int kx_nid,
                                         char *err) {
  if (cfg->role != TB_SERVER || cfg->tls_version != 12 || kx_nid != NID_kx_ecdhe) return TB_OK;
  X509 *leaf = SSL_CTX_get0_certificate(ctx);
  EVP_PKEY *key = leaf != NULL ? X509_get0_pubkey(leaf) : NULL;
  if (key == NULL || EVP_PKEY_id(key) != EVP_PKEY_EC) return TB_OK;
  int nid = EVP_PKEY_get_ec_curve_nid(key);
  const char *curve = nid == NID_X9_62_prime256v1 ? "secp256r1"
                      : nid == NID_secp384r1      ? "secp384r1"
                      : nid == NID_secp521r1      ? "secp521r1"
                                                  : OBJ_nid2sn(nid);
  if (cfg->group == NULL || strcasecmp(curve, cfg->group) != 0)
    return tb_fail(err, TB_UNSUPPORTED,
                   "TLS 1.2 with an ECDSA certificate on %s needs that curve among the "
                   "supported groups, and the offer is pinned to %s",
                   curve, cfg->group != NULL ? cfg->group : "none");
  return TB_OK;
}

static tb_status set_verification(SSL_CTX *ctx, const tb_config *cfg, char *err) {
  int verifies = cfg->role == TB_CLIENT ? cfg->auth != TB_AUTH_NONE : cfg->auth == TB_AUTH_MUTUAL;
  if (!verifies) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    return TB_OK;
  }
  if (cfg->ca_file == NULL || !SSL_CTX_load_verify_locations(ctx, cfg->ca_file, NULL))
    return ossl_fail(err, TB_FAILED, "trust anchors (ca_file)");
  int mode = SSL_VERIFY_PEER;
  if (cfg->role == TB_SERVER) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  SSL_CTX_set_verify(ctx, mode, NULL);
  if (cfg->role == TB_CLIENT) {
    if (cfg->server_name == NULL) return tb_fail(err, TB_UNSUPPORTED, "no server_name");
    X509_VERIFY_PARAM *param = SSL_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (!X509_VERIFY_PARAM_set1_host(param, cfg->server_name, strlen(cfg->server_name)))
      return ossl_fail(err, TB_FAILED, "X509_VERIFY_PARAM_set1_host");
  }
  return TB_OK;
}

/* Client: BoringSSL hands each new resumable session to this callback (TLS 1.2 at the end
 * of the handshake, TLS 1.3 for each NewSessionTicket read); the newest is kept. */
static int keep_new_session(SSL *ssl, SSL_SESSION *session) {
  bssl_conn *c = SSL_get_app_data(ssl);
  if (c == NULL) return 0; /* not ours to keep: the library frees it */
  SSL_SESSION_free(c->session);
  c->session = session;
  return 1; /* we own the reference now */
}

/* The scheme this side signed with exists only while the handshake runs: read it when the
 * library announces the handshake's end. */
static void note_handshake_done(const SSL *ssl, int type, int value) {
  (void)value;
  if (type != SSL_CB_HANDSHAKE_DONE) return;
  bssl_conn *c = SSL_get_app_data(ssl);
  if (c != NULL) c->own_sigalg = SSL_get_signature_algorithm_used(ssl);
}

static void set_resumption(SSL_CTX *ctx, const tb_config *cfg) {
  if (cfg->role == TB_SERVER) {
    /* Needed for resumption when the server verifies clients; harmless otherwise. */
    SSL_CTX_set_session_id_context(ctx, (const uint8_t *)"tlsbench", 8);
  }
  if (!cfg->resumption) {
    /* Full handshakes only: no TLS 1.2 ticket extension and no TLS 1.3 NewSessionTicket
     * (SSL_OP_NO_TICKET stops both in BoringSSL; it sends two tickets by default), no
     * session cache. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    return;
  }
  if (cfg->role == TB_SERVER) {
    /* Stateless tickets (TLS 1.2 and 1.3) and the session-ID cache (TLS 1.2). One ticket
     * is what a resuming client needs. */
    SSL_CTX_set_num_tickets(ctx, 1);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
  } else {
    /* The callback is how a client receives sessions; no internal cache behind it. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
    SSL_CTX_sess_set_new_cb(ctx, keep_new_session);
  }
}

static tb_status set_record_size(SSL_CTX *ctx, const tb_config *cfg, char *err) {
  size_t rs = cfg->record_size;
  if (rs == 0) return TB_OK;
  /* max_send_fragment bounds what this side sends. BoringSSL has no max_fragment_length
   * extension and sizes its read buffer for the largest record, so receiving is unchanged. */
  if (rs < 512 || rs > SSL3_RT_MAX_PLAIN_LENGTH || !SSL_CTX_set_max_send_fragment(ctx, rs)) {
    ERR_clear_error();
    return tb_fail(err, TB_UNSUPPORTED, "BoringSSL's max_send_fragment takes 512..16384, not %zu",
                   rs);
  }
  return TB_OK;
}

static tb_status configure(bssl_ctx *bc, const tb_config *cfg, char *err) {
  SSL_CTX *ctx = bc->ctx;
  uint16_t version = (uint16_t)version_of(cfg->tls_version);
  if (version == 0) return tb_fail(err, TB_UNSUPPORTED, "TLS version %d", cfg->tls_version);
  if (!SSL_CTX_set_min_proto_version(ctx, version) || !SSL_CTX_set_max_proto_version(ctx, version))
    return ossl_fail(err, TB_UNSUPPORTED, "protocol version");
  /* The harness retries a write with the rest of the data: report each record as it is
   * written, and accept the retry from a different buffer address. */
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  /* Send exactly chain_file (BoringSSL does not complete chains, but say so). */
  SSL_CTX_set_mode(ctx, SSL_MODE_NO_AUTO_CHAIN);
  SSL_CTX_set_info_callback(ctx, note_handshake_done);

  int kx_nid = NID_undef;
  tb_status st = pin_suite(ctx, cfg, &kx_nid, err);
  if (st == TB_OK) st = pin_group(ctx, cfg, kx_nid, err);
  if (st == TB_OK) st = pin_sigalg(ctx, cfg, kx_nid, err);
  if (st == TB_OK) st = load_own_chain(ctx, cfg, err);
  if (st == TB_OK) st = check_tls12_ecdsa_curve(ctx, cfg, kx_nid, err);
  if (st == TB_OK) st = set_verification(ctx, cfg, err);
  if (st == TB_OK) st = set_record_size(ctx, cfg, err);
  if (st != TB_OK) return st;
  set_resumption(ctx, cfg);
  if (cfg->role == TB_CLIENT && cfg->server_name != NULL)
    snprintf(bc->server_name, sizeof(bc->server_name), "%s", cfg->server_name);
  return TB_OK;
}

static void bssl_ctx_free(void *p) {
  bssl_ctx *bc = p;
  if (bc == NULL) return;
  SSL_CTX_free(bc->ctx);
  free(bc);
}

static tb_status bssl_ctx_new(const tb_config *cfg, void **out, char *err) {
  ERR_clear_error();
  if (cfg->suite == NULL) return tb_fail(err, TB_UNSUPPORTED, "no suite given");
  bssl_ctx *bc = calloc(1, sizeof(*bc));
  if (bc == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  bc->role = cfg->role;
  bc->ctx = SSL_CTX_new(TLS_method());
  if (bc->ctx == NULL) {
    free(bc);
    return ossl_fail(err, TB_FAILED, "SSL_CTX_new");
  }
  tb_status st = configure(bc, cfg, err);
  if (st != TB_OK) {
    bssl_ctx_free(bc);
    return st;
  }
  *out = bc;
  return TB_OK;
}

/* ------------------------------------------------------------------------- connections */

static tb_status bssl_close(void *p, char *err) {
  bssl_conn *c = p;
  /* 0: close_notify sent, the peer's not yet received (we do not wait for it). */
  if (SSL_shutdown(c->ssl) < 0) return ossl_fail(err, TB_FAILED, "SSL_shutdown");
  return TB_OK;
}

static void bssl_conn_free(void *p) {
  bssl_conn *c = p;
  if (c == NULL) return;
  SSL_free(c->ssl); /* frees the BIO too */
  SSL_SESSION_free(c->session);
  free(c);
}

static tb_status bssl_conn_new(void *ctx, const tb_transport *transport, void *session, void **out,
                               char *err) {
  if (transport->bio) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "BoringSSL's callbacks path already is its BIO layer (a BIO method of "
                   "tlsbench's): io = callbacks measures it");
  }
  bssl_ctx *bc = ctx;
  ERR_clear_error();
  bssl_conn *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->transport = *transport;
  c->ssl = SSL_new(bc->ctx);
  /* --io fd: BoringSSL's own socket BIO on the connection's file descriptor. */
  BIO *bio =
      transport->fd >= 0 ? BIO_new_socket(transport->fd, BIO_NOCLOSE) : BIO_new(g_bio_method);
  if (c->ssl == NULL || bio == NULL) {
    BIO_free(bio);
    bssl_conn_free(c);
    return ossl_fail(err, TB_FAILED, "SSL_new");
  }
  if (transport->fd < 0) BIO_set_data(bio, &c->transport);
  SSL_set_bio(c->ssl, bio, bio); /* one reference, owned by the SSL */
  SSL_set_app_data(c->ssl, c);
  if (bc->role == TB_CLIENT) {
    SSL_set_connect_state(c->ssl);
    if (bc->server_name[0] != '\0' && !SSL_set_tlsext_host_name(c->ssl, bc->server_name)) {
      bssl_conn_free(c);
      return ossl_fail(err, TB_FAILED, "SNI");
    }
    if (session != NULL && !SSL_set_session(c->ssl, session)) {
      bssl_conn_free(c);
      return ossl_fail(err, TB_FAILED, "SSL_set_session");
    }
  } else {
    SSL_set_accept_state(c->ssl);
  }
  *out = c;
  return TB_OK;
}

/* Maps the result of an SSL_* I/O call to a status, with the library's error text. */
static tb_status io_status(bssl_conn *c, int ret, const char *what, char *err) {
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
    return ossl_fail(err, TB_FAILED, buf);
  }
  if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
    return tb_fail(err, TB_FAILED, "%s: transport error or unexpected EOF", what);
  return ossl_fail(err, TB_FAILED, what);
}

static tb_status bssl_handshake(void *conn, char *err) {
  bssl_conn *c = conn;
  clear_stale_errors();
  int ret = SSL_do_handshake(c->ssl);
  if (ret != 1) return io_status(c, ret, "handshake", err);
  if (!SSL_is_server(c->ssl)) return TB_OK;
  /* A BoringSSL server holds its TLS 1.3 NewSessionTickets back until it next writes
   * (OpenSSL sends them within SSL_do_handshake). A zero-byte write sends them now, so that
   * their cost belongs to the handshake, as in the other libraries, and so that tickets
   * sent when the run asked for none are on the wire where the check sees them. It writes
   * nothing when nothing is pending. */
  ret = SSL_write(c->ssl, NULL, 0);
  if (ret >= 0) return TB_OK;
  tb_status st = io_status(c, ret, "sending the session tickets", err);
  return st == TB_WANT_IO ? TB_OK : st; /* blocked: they go with the next write */
}

static tb_status bssl_write(void *conn, const unsigned char *buf, size_t len, size_t *done,
                            char *err) {
  bssl_conn *c = conn;
  *done = 0;
  if (len == 0) return TB_OK;
  clear_stale_errors();
  int ret = SSL_write(c->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
  if (ret > 0) {
    *done = (size_t)ret;
    return TB_OK;
  }
  return io_status(c, ret, "write", err);
}

static tb_status bssl_read(void *conn, unsigned char *buf, size_t len, size_t *done, char *err) {
  bssl_conn *c = conn;
  *done = 0;
  clear_stale_errors();
  int ret = SSL_read(c->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
  if (ret > 0) {
    *done = (size_t)ret;
    return TB_OK;
  }
  return io_status(c, ret, "read", err);
}

/* ------------------------------------------------------------------------- negotiated */

static void copy_name(char *dst, const char *src) {
  snprintf(dst, TB_NAME_LEN, "%s", src != NULL ? src : "");
}

/* A code point BoringSSL reports that our tables do not name: its own name, or the number,
 * so that the core reports the mismatch with what the library said. */
static void copy_unknown(char *dst, const char *library_name, uint16_t id) {
  if (library_name != NULL)
    copy_name(dst, library_name);
  else
    snprintf(dst, TB_NAME_LEN, "0x%04x", id);
}

static void read_group(bssl_conn *c, const SSL_CIPHER *cipher, char *out) {
  out[0] = '\0';
  if (SSL_CIPHER_get_kx_nid(cipher) == NID_kx_rsa) return; /* static RSA: no group */
  /* An abbreviated TLS 1.2 handshake runs no key exchange; the session would report the
   * original handshake's group. */
  if (SSL_version(c->ssl) != TLS1_3_VERSION && SSL_session_reused(c->ssl)) return;
  uint16_t id = SSL_get_group_id(c->ssl);
  if (id == 0) return;
  const char *name = group_of_id(id);
  if (name != NULL)
    copy_name(out, name);
  else
    copy_unknown(out, SSL_get_group_name(id), id);
}

static void sigalg_name_of(uint16_t id, char *out) {
  out[0] = '\0';
  if (id == 0) return;
  const char *name = sigalg_of_id(id);
  if (name != NULL)
    copy_name(out, name);
  else
    copy_unknown(out, SSL_get_signature_algorithm_name(id, 1), id);
}

/* The scheme of a signature made in this handshake: this side's own (noted at handshake
 * end) or the peer's (kept in the session). An abbreviated handshake signs nothing. */
static uint16_t signature(bssl_conn *c, int own) {
  if (SSL_session_reused(c->ssl)) return 0;
  return own ? c->own_sigalg : SSL_get_peer_signature_algorithm(c->ssl);
}

static tb_status bssl_negotiated(void *conn, tb_negotiated *out, char *err) {
  bssl_conn *c = conn;
  memset(out, 0, sizeof(*out));
  const SSL_CIPHER *cipher = SSL_get_current_cipher(c->ssl);
  if (cipher == NULL) return tb_fail(err, TB_FAILED, "no cipher negotiated");
  int v = SSL_version(c->ssl);
  snprintf(out->version, sizeof(out->version), "%s",
           v == TLS1_3_VERSION   ? "1.3"
           : v == TLS1_2_VERSION ? "1.2"
                                 : SSL_get_version(c->ssl));
  copy_name(out->suite, SSL_CIPHER_standard_name(cipher));
  read_group(c, cipher, out->group);
  int server = SSL_is_server(c->ssl);
  /* The server's signature (none under static RSA): the server's own, the client's peer's. */
  if (SSL_CIPHER_get_kx_nid(cipher) != NID_kx_rsa)
    sigalg_name_of(signature(c, server), out->sigalg);
  /* The client's CertificateVerify: the client's own, the server's peer's. */
  sigalg_name_of(signature(c, !server), out->client_sigalg);
  /* Verified = this side asked to verify, the peer presented a chain, and the library's
   * verification (chain and, on the client, host name) succeeded. */
  X509 *peer = SSL_get_peer_certificate(c->ssl);
  out->peer_verified = (SSL_get_verify_mode(c->ssl) & SSL_VERIFY_PEER) != 0 && peer != NULL &&
                       SSL_get_verify_result(c->ssl) == X509_V_OK;
  X509_free(peer);
  out->resumed = SSL_session_reused(c->ssl) == 1;
  return TB_OK;
}

/* ------------------------------------------------------------------------- sessions */

static tb_status bssl_session_get(void *conn, void **session, char *err) {
  bssl_conn *c = conn;
  /* The newest session the library handed over (TLS 1.3: once the client has read the
   * NewSessionTicket; the core reads once after the server wrote). An abbreviated TLS 1.2
   * handshake hands over none (no new ticket): its established session, the resumed one,
   * serves again. A TLS 1.3 established session is never resumable itself. */
  SSL_SESSION *s = c->session != NULL ? c->session : SSL_get_session(c->ssl);
  if (s == NULL)
    return tb_fail(err, TB_FAILED, "no session on this connection (no ticket received?)");
  if (!SSL_SESSION_is_resumable(s))
    return tb_fail(err, TB_FAILED, "the session is not resumable (no ticket received?)");
  SSL_SESSION_up_ref(s);
  *session = s;
  return TB_OK;
}

static void bssl_session_free(void *session) { SSL_SESSION_free(session); }

/* ------------------------------------------------------------------------- AEAD */

/* BoringSSL's own AEAD API (EVP_AEAD): one keyed context seals and opens; the nonce is
 * given per call. */
static const EVP_AEAD *aead_of(tb_aead_alg alg) {
  switch (alg) {
    case TB_AES_128_GCM:
      return EVP_aead_aes_128_gcm();
    case TB_AES_256_GCM:
      return EVP_aead_aes_256_gcm();
    case TB_CHACHA20_POLY1305:
      return EVP_aead_chacha20_poly1305();
  }
  return NULL;
}

static void bssl_aead_free(void *p) {
  bssl_aead *a = p;
  if (a == NULL) return;
  EVP_AEAD_CTX_free(a->ctx);
  free(a);
}

static tb_status bssl_aead_new(tb_aead_alg alg, const unsigned char *key, size_t key_len,
                               void **out, char *err) {
  ERR_clear_error();
  const EVP_AEAD *aead = aead_of(alg);
  if (aead == NULL) return tb_fail(err, TB_UNSUPPORTED, "unknown AEAD %d", (int)alg);
  if (EVP_AEAD_key_length(aead) != key_len)
    return tb_fail(err, TB_FAILED, "the AEAD takes a %zu-byte key, not %zu",
                   EVP_AEAD_key_length(aead), key_len);
  if (EVP_AEAD_nonce_length(aead) != TB_AEAD_NONCE_LEN)
    return tb_fail(err, TB_FAILED, "the AEAD takes a %zu-byte nonce", EVP_AEAD_nonce_length(aead));
  bssl_aead *a = calloc(1, sizeof(*a));
  if (a == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  a->ctx = EVP_AEAD_CTX_new(aead, key, key_len, TB_AEAD_TAG_LEN);
  if (a->ctx == NULL) {
    bssl_aead_free(a);
    return ossl_fail(err, TB_FAILED, "EVP_AEAD_CTX_new");
  }
  *out = a;
  return TB_OK;
}

static tb_status bssl_aead_seal(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                                const unsigned char *ad, size_t ad_len, const unsigned char *in,
                                size_t len, unsigned char *out, char *err) {
  size_t out_len = 0;
  if (!EVP_AEAD_CTX_seal(((bssl_aead *)aead)->ctx, out, &out_len, len + TB_AEAD_TAG_LEN, nonce,
                         TB_AEAD_NONCE_LEN, in, len, ad, ad_len) ||
      out_len != len + TB_AEAD_TAG_LEN)
    return ossl_fail(err, TB_FAILED, "seal");
  return TB_OK;
}

/* `len` is the ciphertext length; the tag follows it in `in` (as seal wrote it). */
static tb_status bssl_aead_open(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                                const unsigned char *ad, size_t ad_len, const unsigned char *in,
                                size_t len, unsigned char *out, char *err) {
  size_t out_len = 0;
  if (!EVP_AEAD_CTX_open(((bssl_aead *)aead)->ctx, out, &out_len, len, nonce, TB_AEAD_NONCE_LEN, in,
                         len + TB_AEAD_TAG_LEN, ad, ad_len)) {
    ERR_clear_error();
    return tb_fail(err, TB_FAILED, "open: the tag does not verify");
  }
  if (out_len != len) return tb_fail(err, TB_FAILED, "open: %zu bytes out, not %zu", out_len, len);
  return TB_OK;
}

/* ------------------------------------------------------------------------- info */

#define MAX_LIST 64

static char g_build_text[6][256];
static const char *g_build_options[7];
static const char *const g_versions[] = {"1.2", "1.3", NULL};
static const char *g_suites[MAX_LIST];
static const char *g_groups[ARRAY_LEN(kGroups) + 1];
static const char *g_sigalgs[ARRAY_LEN(kSigalgs) + 1];

static void fill_build_options(void) {
  size_t n = 0;
  snprintf(g_build_text[n++], sizeof(g_build_text[0]), "BORINGSSL_API_VERSION=%d",
           BORINGSSL_API_VERSION);
  snprintf(g_build_text[n++], sizeof(g_build_text[0]), "OPENSSL_VERSION_TEXT=%s",
           OPENSSL_VERSION_TEXT);
#ifdef OPENSSL_NO_ASM
  snprintf(g_build_text[n++], sizeof(g_build_text[0]), "OPENSSL_NO_ASM=1");
#else
  snprintf(g_build_text[n++], sizeof(g_build_text[0]), "OPENSSL_NO_ASM=0");
#endif
  snprintf(g_build_text[n++], sizeof(g_build_text[0]), "FIPS_mode=%d", FIPS_mode());
  snprintf(g_build_text[n++], sizeof(g_build_text[0]), "EVP_has_aes_hardware=%d",
           EVP_has_aes_hardware());
  for (size_t i = 0; i < n; i++) g_build_options[i] = g_build_text[i];
  g_build_options[n] = NULL;
}

/* TLS 1.3 suites, then the TLS 1.2 suites of the "ALL" list with certificate
 * authentication (no PSK). */
static void fill_suites(SSL_CTX *ctx) {
  size_t n = 0;
  for (size_t i = 0; i < ARRAY_LEN(kTls13Suites); i++) {
    const SSL_CIPHER *c = SSL_get_cipher_by_value(kTls13Suites[i]);
    if (c != NULL) g_suites[n++] = SSL_CIPHER_standard_name(c);
  }
  STACK_OF(SSL_CIPHER) *all = SSL_CTX_set_cipher_list(ctx, "ALL") ? SSL_CTX_get_ciphers(ctx) : NULL;
  for (size_t i = 0; all != NULL && i < sk_SSL_CIPHER_num(all) && n + 1 < MAX_LIST; i++) {
    const SSL_CIPHER *c = sk_SSL_CIPHER_value(all, i);
    int kx = SSL_CIPHER_get_kx_nid(c);
    if (kx == NID_kx_rsa || kx == NID_kx_ecdhe) g_suites[n++] = SSL_CIPHER_standard_name(c);
  }
  g_suites[n] = NULL;
}

static void fill_groups_and_sigalgs(SSL_CTX *ctx) {
  size_t n = 0;
  for (size_t i = 0; i < ARRAY_LEN(kGroups); i++)
    if (SSL_CTX_set1_group_ids(ctx, &kGroups[i].id, 1)) g_groups[n++] = kGroups[i].name;
  g_groups[n] = NULL;
  n = 0;
  for (size_t i = 0; i < ARRAY_LEN(kSigalgs); i++) {
    /* BoringSSL accepts SHA-1 schemes only for verifying TLS 1.2 signatures (if asked). */
    if (strstr(kSigalgs[i].iana, "sha1") != NULL) continue;
    if (SSL_CTX_set_signing_algorithm_prefs(ctx, &kSigalgs[i].id, 1) &&
        SSL_get_signature_algorithm_key_type(kSigalgs[i].id) != EVP_PKEY_NONE)
      g_sigalgs[n++] = kSigalgs[i].iana;
  }
  g_sigalgs[n] = NULL;
}

static tb_status bssl_info(tb_info *out, char *err) {
  ERR_clear_error();
  SSL_CTX *ctx = SSL_CTX_new(TLS_method());
  if (ctx == NULL) return ossl_fail(err, TB_FAILED, "SSL_CTX_new");
  snprintf(out->version, sizeof(out->version), "%s (API version %d)",
           OpenSSL_version(OPENSSL_VERSION), BORINGSSL_API_VERSION);
  fill_build_options();
  fill_suites(ctx);
  fill_groups_and_sigalgs(ctx);
  SSL_CTX_free(ctx);
  ERR_clear_error();
  out->build_options = g_build_options;
  out->versions = g_versions;
  out->suites = g_suites;
  out->groups = g_groups;
  out->sigalgs = g_sigalgs;
  return TB_OK;
}

/* ------------------------------------------------------------------------- CPU paths */

#if defined(__x86_64__) || defined(__i386__)
/* libcrypto's capability vector after CPUID and the OPENSSL_ia32cap environment variable
 * were applied (the same two-word format as OpenSSL's). BoringSSL keeps it internal, as a
 * C++ variable (bssl::OPENSSL_ia32cap_P, hidden visibility, still linkable from a static
 * archive), so it is named here by its mangled symbol; weak, so that a BoringSSL that
 * renames it still links and reports "not exposed". */
extern uint32_t bssl_ia32cap_P[4] __asm__("_ZN4bssl17OPENSSL_ia32cap_PE") __attribute__((weak));
#define OPENSSL_ia32cap_P bssl_ia32cap_P
#endif

static void bssl_cpu_paths(char *out, size_t len) {
  /* EVP_has_aes_hardware initialises the library's CPU probe if it has not run yet. */
  int aes_hw = EVP_has_aes_hardware();
#if defined(__x86_64__) || defined(__i386__)
  if (OPENSSL_ia32cap_P != NULL) {
    const uint32_t *cap = OPENSSL_ia32cap_P;
    uint64_t word1 = (uint64_t)cap[1] << 32 | cap[0]; /* CPUID.1: ECX:EDX */
    uint64_t word2 = (uint64_t)cap[3] << 32 | cap[2]; /* CPUID.7: ECX:EBX */
#define TB_BIT(w, b) (((w) >> (b)) & 1 ? "on" : "off")
    snprintf(out, len,
             "BoringSSL ia32cap 0x%016llx:0x%016llx: AES-NI %s, PCLMULQDQ %s, SSSE3 %s, "
             "AVX %s, AVX2 %s, AVX-512F %s, VAES %s, VPCLMULQDQ %s, SHA %s, ADX %s; "
             "EVP_has_aes_hardware %d%s",
             (unsigned long long)word1, (unsigned long long)word2, TB_BIT(word1, 57),
             TB_BIT(word1, 33), TB_BIT(word1, 41), TB_BIT(word1, 60), TB_BIT(word2, 5),
             TB_BIT(word2, 16), TB_BIT(word2, 41), TB_BIT(word2, 42), TB_BIT(word2, 29),
             TB_BIT(word2, 19), aes_hw,
#ifdef OPENSSL_NO_ASM
             " (OPENSSL_NO_ASM: no assembly is built, the vector selects nothing)"
#else
             ""
#endif
    );
#undef TB_BIT
    return;
  }
#endif
  snprintf(out, len, "BoringSSL: EVP_has_aes_hardware %d (capability vector not exposed)%s", aes_hw,
#ifdef OPENSSL_NO_ASM
           "; OPENSSL_NO_ASM: no assembly is built"
#else
           ""
#endif
  );
}

/* ------------------------------------------------------------------------- the adapter */

const tb_adapter tb_adapter_impl = {
    .name = "boringssl",
    .global_init = bssl_global_init,
    .global_cleanup = bssl_global_cleanup,
    .info = bssl_info,
    .ctx_new = bssl_ctx_new,
    .ctx_free = bssl_ctx_free,
    .conn_new = bssl_conn_new,
    .conn_free = bssl_conn_free,
    .close = bssl_close,
    .handshake = bssl_handshake,
    .write = bssl_write,
    .read = bssl_read,
    .negotiated = bssl_negotiated,
    .session_get = bssl_session_get,
    .session_free = bssl_session_free,
    .aead_new = bssl_aead_new,
    .aead_seal = bssl_aead_seal,
    .aead_open = bssl_aead_open,
    .aead_free = bssl_aead_free,
    .cpu_paths = bssl_cpu_paths,
};
