/*
 * AWS-LC adapter (libssl + libcrypto built from the tree the aws-lc-sys crate bundles).
 *
 * AWS-LC keeps much of OpenSSL's API, but where the checks read it follows BoringSSL:
 *  - groups and signature schemes are pinned by their TLS code points
 *    (SSL_CTX_set1_group_ids, SSL_CTX_set_signing_algorithm_prefs /
 *    SSL_CTX_set_verify_algorithm_prefs), and read back as code points
 *    (SSL_get_group_id, SSL_get_peer_signature_algorithm);
 *  - a side cannot ask which scheme it signed with itself: its own CertificateVerify /
 *    ServerKeyExchange is read from the handshake message the library hands to its
 *    message callback as it sends it;
 *  - a TLS 1.3 client gets a resumable session only through the new-session callback
 *    (SSL_get1_session returns the handshake's session, which holds no ticket), and a
 *    TLS 1.3 server holds its tickets back until it writes (flushed at handshake end);
 *  - no finite-field DHE (neither TLS 1.2 DHE suites nor RFC 7919 groups), no
 *    max_fragment_length extension, no RSASSA-PSS (rsa_pss_pss_*) certificates;
 *  - the AEAD scenario uses its native EVP_AEAD interface.
 *
 * Transport: a custom BIO_METHOD whose callbacks call the tb_transport and map
 * TB_IO_WOULD_BLOCK to the retry flags, so SSL_do_handshake / SSL_read report
 * SSL_ERROR_WANT_READ exactly as on a non-blocking socket.
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
#include <openssl/rand.h>
#include <openssl/service_indicator.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "tlsbench/driver.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------- names */

/* Our group names (tb_config.group) and their TLS NamedGroup code points. */
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
};

/* IANA SignatureScheme names and code points. `tls13`: RFC 8446 allows the scheme in a
 * CertificateVerify (no PKCS#1 v1.5, no SHA-1). The rsa_pss_pss_* and ed448 schemes are
 * absent: AWS-LC has neither (asking for them is "unsupported"). */
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
    {"rsa_pkcs1_sha1", SSL_SIGN_RSA_PKCS1_SHA1, 0},
    {"ecdsa_sha1", SSL_SIGN_ECDSA_SHA1, 0},
};

/* Every TLS 1.3 suite AWS-LC knows; used to list (info) and to validate a 1.3 request. */
static const char kAllTls13Suites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

static const group_name *find_group(const char *name) {
  for (size_t i = 0; i < ARRAY_LEN(kGroups); i++)
    if (strcasecmp(name, kGroups[i].name) == 0) return &kGroups[i];
  return NULL;
}

static const char *group_name_of(uint16_t id) {
  for (size_t i = 0; i < ARRAY_LEN(kGroups); i++)
    if (kGroups[i].id == id) return kGroups[i].name;
  /* Not ours: the library's own spelling, so that a mismatch reads as what it is. */
  const char *name = SSL_get_group_name(id);
  return name != NULL ? name : "unknown group";
}

static const sigalg_name *find_sigalg(const char *iana) {
  for (size_t i = 0; i < ARRAY_LEN(kSigalgs); i++)
    if (strcmp(iana, kSigalgs[i].iana) == 0) return &kSigalgs[i];
  return NULL;
}

static const char *sigalg_name_of(uint16_t id) {
  for (size_t i = 0; i < ARRAY_LEN(kSigalgs); i++)
    if (kSigalgs[i].id == id) return kSigalgs[i].iana;
  const char *name = SSL_get_signature_algorithm_name(id, 1);
  return name != NULL ? name : "unknown signature scheme";
}

/* The error text and the transport BIO method, shared with the other adapters of
 * libraries with OpenSSL's API. */
#define TB_FAMILY_NAME "AWS-LC"
#include "openssl_family.h"

/* ------------------------------------------------------------------------- objects */

typedef struct awslc_ctx {
  SSL_CTX *ctx;
  tb_role role;
  char server_name[256]; /* client: SNI */
} awslc_ctx;

typedef struct awslc_conn {
  SSL *ssl;
  tb_transport transport; /* the BIO's data points here */
  /* The scheme this side signed its CertificateVerify / ServerKeyExchange with, as the
   * library sent it (0: it signed nothing). */
  uint16_t own_sigalg;
  /* Client: the latest session the library handed over (TLS 1.3: with its ticket). */
  SSL_SESSION *session;
  int tickets_flushed; /* server: the NewSessionTickets were sent after the handshake */
} awslc_conn;

typedef struct awslc_aead {
  EVP_AEAD_CTX ctx;
} awslc_aead;

static int g_conn_index = -1; /* SSL ex_data slot of the awslc_conn */

/* ------------------------------------------------------------------------- global */

/* What AWS-LC sets up on first use (the CPU capability vector, the DRBG and this thread's
 * error queue, the X509_STORE_CTX ex_data index, the cipher tables a context parses) is
 * done here, so that it is charged to "global" and not to the first context or
 * handshake of a side. */
static tb_status awslc_global_init(char *err) {
  CRYPTO_library_init();
  if (!OPENSSL_init_ssl(0, NULL)) return ossl_fail(err, TB_FAILED, "OPENSSL_init_ssl");
  g_bio_method = make_bio_method();
  if (g_bio_method == NULL) return ossl_fail(err, TB_FAILED, "BIO_meth_new");
  g_conn_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
  if (g_conn_index < 0) return ossl_fail(err, TB_FAILED, "SSL_get_ex_new_index");
  unsigned char rnd[32];
  if (RAND_bytes(rnd, sizeof(rnd)) != 1) return ossl_fail(err, TB_FAILED, "RAND_bytes");
  SSL_CTX *warm = SSL_CTX_new(TLS_method());
  if (warm == NULL) return ossl_fail(err, TB_FAILED, "SSL_CTX_new");
  SSL_CTX_free(warm);
  (void)SSL_get_ex_data_X509_STORE_CTX_idx();
  ERR_clear_error();
  return TB_OK;
}

static void awslc_global_cleanup(void) {
  BIO_meth_free(g_bio_method);
  g_bio_method = NULL;
}

/* ------------------------------------------------------------------------- ctx_new */

static int version_of(int tls_version) {
  return tls_version == 13 ? TLS1_3_VERSION : tls_version == 12 ? TLS1_2_VERSION : 0;
}

static int is_tls13_cipher(const SSL_CIPHER *c) {
  return SSL_CIPHER_get_min_version(c) >= TLS1_3_VERSION;
}

/* Looks a TLS 1.2 suite up by its IANA name among every cipher this build has. */
static const SSL_CIPHER *find_tls12_cipher(SSL_CTX *ctx, const char *iana) {
  if (!SSL_CTX_set_cipher_list(ctx, "ALL")) return NULL;
  STACK_OF(SSL_CIPHER) *all = SSL_CTX_get_ciphers(ctx);
  for (size_t i = 0; i < sk_SSL_CIPHER_num(all); i++) {
    const SSL_CIPHER *c = sk_SSL_CIPHER_value(all, i);
    const char *std = SSL_CIPHER_standard_name(c);
    if (!is_tls13_cipher(c) && std != NULL && strcmp(std, iana) == 0) return c;
  }
  return NULL;
}

/* Counts the context's suites of one kind and whether `iana` is among them. */
static size_t count_suites(SSL_CTX *ctx, int tls13, const char *iana, int *found) {
  STACK_OF(SSL_CIPHER) *list = SSL_CTX_get_ciphers(ctx);
  size_t n = 0;
  *found = 0;
  for (size_t i = 0; i < sk_SSL_CIPHER_num(list); i++) {
    const SSL_CIPHER *c = sk_SSL_CIPHER_value(list, i);
    if (is_tls13_cipher(c) != tls13) continue;
    n++;
    *found |= strcmp(SSL_CIPHER_standard_name(c), iana) == 0;
  }
  return n;
}

/* Pins the offer to exactly one suite. As in OpenSSL, set_cipher_list governs TLS 1.2 only
 * and set_ciphersuites TLS 1.3 only (BoringSSL has no TLS 1.3 suite configuration at all;
 * AWS-LC added it). Returns the suite's key exchange NID. */
static tb_status pin_suite(SSL_CTX *ctx, const tb_config *cfg, int *kx_nid, char *err) {
  int found = 0;
  if (strchr(cfg->suite, ':') != NULL)
    return tb_fail(err, TB_UNSUPPORTED, "one suite expected, got '%s'", cfg->suite);
  if (cfg->tls_version == 13) {
    if (!SSL_CTX_set_ciphersuites(ctx, cfg->suite))
      return ossl_fail(err, TB_UNSUPPORTED, "no TLS 1.3 suite by that name");
    if (count_suites(ctx, 1, cfg->suite, &found) != 1 || !found)
      return tb_fail(err, TB_UNSUPPORTED, "'%s' is not a TLS 1.3 suite of this build", cfg->suite);
    *kx_nid = NID_kx_any;
    return TB_OK;
  }
  const SSL_CIPHER *c = find_tls12_cipher(ctx, cfg->suite);
  if (c == NULL) {
    ERR_clear_error();
    return tb_fail(err, TB_UNSUPPORTED, "this AWS-LC build has no TLS 1.2 suite '%s'", cfg->suite);
  }
  /* SSL_CIPHER_get_name is the library's own name, e.g. ECDHE-RSA-AES128-GCM-SHA256. With
   * the maximum version pinned to 1.2 no TLS 1.3 suite is offered. */
  if (!SSL_CTX_set_cipher_list(ctx, SSL_CIPHER_get_name(c)) ||
      count_suites(ctx, 0, cfg->suite, &found) != 1 || !found)
    return ossl_fail(err, TB_FAILED, "SSL_CTX_set_cipher_list");
  *kx_nid = SSL_CIPHER_get_kx_nid(c);
  return TB_OK;
}

static tb_status pin_group(SSL_CTX *ctx, const tb_config *cfg, int kx_nid, char *err) {
  if (kx_nid == NID_kx_rsa) return TB_OK; /* static RSA: no group is used */
  if (cfg->group == NULL) return tb_fail(err, TB_UNSUPPORTED, "no group given");
  const group_name *g = find_group(cfg->group);
  if (g == NULL)
    return tb_fail(err, TB_UNSUPPORTED, "AWS-LC has no TLS group '%s' (no finite-field DHE)",
                   cfg->group);
  /* One group and nothing else: the default list also offers X25519MLKEM768. With a key share asked
   * first (HelloRetryRequest), [key_share, group]: the client sends one share, for the
   * first group of its list. */
  uint16_t ids[2] = {g->id, 0};
  size_t n_ids = 1;
  if (cfg->key_share != NULL) {
    const group_name *first = find_group(cfg->key_share);
    if (first == NULL)
      return tb_fail(err, TB_UNSUPPORTED, "AWS-LC has no group '%s'", cfg->key_share);
    ids[0] = first->id;
    ids[1] = g->id;
    n_ids = 2;
  }
  if (!SSL_CTX_set1_group_ids(ctx, ids, n_ids)) {
    char what[TB_NAME_LEN + 48];
    snprintf(what, sizeof(what), "this AWS-LC build cannot offer group %s", g->name);
    return ossl_fail(err, TB_UNSUPPORTED, what);
  }
  return TB_OK;
}

static tb_status check_sigalg(const tb_config *cfg, const char *name, const sigalg_name **out,
                              char *err) {
  const sigalg_name *sa = find_sigalg(name);
  if (sa == NULL) return tb_fail(err, TB_UNSUPPORTED, "AWS-LC has no signature scheme '%s'", name);
  if (cfg->tls_version == 13 && !sa->tls13)
    return tb_fail(err, TB_UNSUPPORTED, "TLS 1.3 does not allow %s", name);
  *out = sa;
  return TB_OK;
}

/* The schemes a side signs with (signing prefs) and accepts from its peer (verify prefs:
 * also what the ClientHello and the CertificateRequest advertise) are two lists. The
 * server signs with `sigalg` and, in mutual auth, accepts the client's `client_sigalg`;
 * the client accepts `sigalg` and signs with `client_sigalg`. */
static tb_status pin_sigalg(SSL_CTX *ctx, const tb_config *cfg, int kx_nid, char *err) {
  /* Static RSA: the server signs nothing, but a client certificate still signs a
   * CertificateVerify, so a given scheme is pinned all the same. */
  if (kx_nid == NID_kx_rsa && cfg->sigalg == NULL) return TB_OK;
  if (cfg->sigalg == NULL) return tb_fail(err, TB_UNSUPPORTED, "no signature scheme given");
  const sigalg_name *server = NULL, *client = NULL;
  tb_status st = check_sigalg(cfg, cfg->sigalg, &server, err);
  if (st == TB_OK)
    st = check_sigalg(cfg, cfg->client_sigalg ? cfg->client_sigalg : cfg->sigalg, &client, err);
  if (st != TB_OK) return st;
  const sigalg_name *sign = cfg->role == TB_SERVER ? server : client;
  const sigalg_name *verify = cfg->role == TB_SERVER ? client : server;
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

/* In TLS 1.2 supported_groups also limits the curve of an ECDSA certificate (RFC 8422):
 * with the offer pinned to one group, a server whose ECDSA key is on another curve cannot
 * be used. Said here, where the certificate is known, rather than as a handshake error. */
static tb_status check_tls12_ecdsa_curve(SSL_CTX *ctx, const tb_config *cfg, int kx_nid,
                                         char *err) {
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
  if (strcmp(curve, cfg->group) != 0)
    return tb_fail(err, TB_UNSUPPORTED,
                   "TLS 1.2 with an ECDSA certificate on %s needs that curve among the "
                   "supported groups, and the offer is pinned to %s",
                   curve, cfg->group);
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
    if (!X509_VERIFY_PARAM_set1_host(param, cfg->server_name, 0))
      return ossl_fail(err, TB_FAILED, "X509_VERIFY_PARAM_set1_host");
  }
  return TB_OK;
}

/* Client: keeps the session the library hands over. A TLS 1.3 ticket arrives after the
 * handshake, as a new session object; SSL_get1_session would return the handshake's,
 * which cannot be resumed. Returns 1: the reference is ours. */
static int keep_new_session(SSL *ssl, SSL_SESSION *session) {
  awslc_conn *c = SSL_get_ex_data(ssl, g_conn_index);
  if (c == NULL) return 0;
  SSL_SESSION_free(c->session);
  c->session = session;
  return 1;
}

static void set_resumption(SSL_CTX *ctx, const tb_config *cfg) {
  if (cfg->role == TB_SERVER) {
    /* Needed for resumption when the server verifies clients; harmless otherwise. */
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"tlsbench", 8);
  }
  if (!cfg->resumption) {
    /* Full handshakes only: no TLS 1.2 ticket extension, no TLS 1.3 NewSessionTicket
     * (AWS-LC servers send two by default), no session cache. */
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
  } else {
    /* The callback hands each new session to its connection; no internal cache. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
    SSL_CTX_sess_set_new_cb(ctx, keep_new_session);
  }
}

static tb_status set_record_size(SSL_CTX *ctx, const tb_config *cfg, char *err) {
  size_t rs = cfg->record_size;
  if (rs == 0) return TB_OK;
  /* max_send_fragment bounds what this side sends; AWS-LC has no max_fragment_length
   * extension, so the receive buffer keeps its full size. */
  if (rs < 512 || rs > SSL3_RT_MAX_PLAIN_LENGTH || !SSL_CTX_set_max_send_fragment(ctx, rs)) {
    ERR_clear_error();
    return tb_fail(err, TB_UNSUPPORTED, "AWS-LC's max_send_fragment takes 512..16384, not %zu", rs);
  }
  return TB_OK;
}

/* Notes the scheme of the signature this side sends, from the handshake message itself
 * (4-byte header, then the body): a TLS 1.3 CertificateVerify starts with it; a TLS 1.2
 * ECDHE ServerKeyExchange has it after the curve and the public key. */
static void note_own_signature(int write_p, int version, int content_type, const void *buf,
                               size_t len, SSL *ssl, void *arg) {
  (void)version;
  (void)arg;
  const unsigned char *m = buf;
  if (!write_p || content_type != SSL3_RT_HANDSHAKE || len < 6) return;
  awslc_conn *c = SSL_get_ex_data(ssl, g_conn_index);
  if (c == NULL) return;
  if (m[0] == SSL3_MT_CERTIFICATE_VERIFY) {
    c->own_sigalg = (uint16_t)(m[4] << 8 | m[5]);
  } else if (m[0] == SSL3_MT_SERVER_KEY_EXCHANGE && m[4] == 3 /* named_curve */ && len > 8) {
    size_t at = 4 + 3 + 1 + (size_t)m[7]; /* type, curve id, key length, key */
    if (SSL_version(ssl) == TLS1_2_VERSION && at + 2 <= len)
      c->own_sigalg = (uint16_t)(m[at] << 8 | m[at + 1]);
  }
}

static tb_status configure(awslc_ctx *ac, const tb_config *cfg, char *err) {
  SSL_CTX *ctx = ac->ctx;
  int version = version_of(cfg->tls_version);
  if (version == 0) return tb_fail(err, TB_UNSUPPORTED, "TLS version %d", cfg->tls_version);
  if (!SSL_CTX_set_min_proto_version(ctx, (uint16_t)version) ||
      !SSL_CTX_set_max_proto_version(ctx, (uint16_t)version))
    return ossl_fail(err, TB_UNSUPPORTED, "protocol version");
  /* The harness retries a write with the rest of the data: report each record as it is
   * written, and accept the retry from a different buffer address. */
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  /* Send exactly chain_file, never a chain completed from the trust store. */
  SSL_CTX_set_mode(ctx, SSL_MODE_NO_AUTO_CHAIN);

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
  SSL_CTX_set_msg_callback(ctx, note_own_signature);
  if (cfg->role == TB_CLIENT && cfg->server_name != NULL)
    snprintf(ac->server_name, sizeof(ac->server_name), "%s", cfg->server_name);
  return TB_OK;
}

static void awslc_ctx_free(void *p) {
  awslc_ctx *ac = p;
  if (ac == NULL) return;
  SSL_CTX_free(ac->ctx);
  free(ac);
}

static tb_status awslc_ctx_new(const tb_config *cfg, void **out, char *err) {
  ERR_clear_error();
  if (cfg->suite == NULL) return tb_fail(err, TB_UNSUPPORTED, "no suite given");
  awslc_ctx *ac = calloc(1, sizeof(*ac));
  if (ac == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  ac->role = cfg->role;
  ac->ctx = SSL_CTX_new(TLS_method());
  if (ac->ctx == NULL) {
    free(ac);
    return ossl_fail(err, TB_FAILED, "SSL_CTX_new");
  }
  tb_status st = configure(ac, cfg, err);
  if (st != TB_OK) {
    awslc_ctx_free(ac);
    return st;
  }
  *out = ac;
  return TB_OK;
}

/* ------------------------------------------------------------------------- connections */

static tb_status awslc_close(void *p, char *err) {
  awslc_conn *c = p;
  /* 0: close_notify sent, the peer's not yet received (we do not wait for it). */
  if (SSL_shutdown(c->ssl) < 0) return ossl_fail(err, TB_FAILED, "SSL_shutdown");
  return TB_OK;
}

static void awslc_conn_free(void *p) {
  awslc_conn *c = p;
  if (c == NULL) return;
  SSL_free(c->ssl); /* frees the BIO too */
  SSL_SESSION_free(c->session);
  free(c);
}

static tb_status awslc_conn_new(void *ctx, const tb_transport *transport, void *session, void **out,
                                char *err) {
  if (transport->bio) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "AWS-LC's callbacks path already is its BIO layer (a BIO method of "
                   "tlsbench's): io = callbacks measures it");
  }
  awslc_ctx *ac = ctx;
  ERR_clear_error();
  awslc_conn *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->transport = *transport;
  c->ssl = SSL_new(ac->ctx);
  /* --io fd: the library's own socket BIO on the connection's file descriptor. */
  BIO *bio =
      transport->fd >= 0 ? BIO_new_socket(transport->fd, BIO_NOCLOSE) : BIO_new(g_bio_method);
  if (c->ssl == NULL || bio == NULL) {
    BIO_free(bio);
    awslc_conn_free(c);
    return ossl_fail(err, TB_FAILED, "SSL_new");
  }
  if (transport->fd < 0) BIO_set_data(bio, &c->transport);
  SSL_set_bio(c->ssl, bio, bio); /* one reference, owned by the SSL */
  if (!SSL_set_ex_data(c->ssl, g_conn_index, c)) {
    awslc_conn_free(c);
    return ossl_fail(err, TB_FAILED, "SSL_set_ex_data");
  }
  if (ac->role == TB_CLIENT) {
    SSL_set_connect_state(c->ssl);
    if (ac->server_name[0] != '\0' && !SSL_set_tlsext_host_name(c->ssl, ac->server_name)) {
      awslc_conn_free(c);
      return ossl_fail(err, TB_FAILED, "SNI");
    }
    if (session != NULL && !SSL_set_session(c->ssl, session)) {
      awslc_conn_free(c);
      return ossl_fail(err, TB_FAILED, "SSL_set_session");
    }
  } else {
    SSL_set_accept_state(c->ssl);
  }
  *out = c;
  return TB_OK;
}

/* Maps the result of an SSL_* I/O call to a status, with the library's error text. */
static tb_status io_status(awslc_conn *c, int ret, const char *what, char *err) {
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

static tb_status awslc_handshake(void *conn, char *err) {
  awslc_conn *c = conn;
  clear_stale_errors();
  int ret = SSL_do_handshake(c->ssl);
  if (ret != 1) return io_status(c, ret, "handshake", err);
  /* A TLS 1.3 server builds its NewSessionTickets at the end of the handshake but holds
   * them back until its first write. A zero-byte write sends them now, as OpenSSL does, so
   * that the handshake's cost and bytes include them and a ticket sent while asked off is
   * seen by the core (with no tickets pending it writes nothing). */
  if (SSL_is_server(c->ssl) && SSL_version(c->ssl) == TLS1_3_VERSION && !c->tickets_flushed) {
    ret = SSL_write(c->ssl, "", 0);
    if (ret < 0) return io_status(c, ret, "sending the session tickets", err);
    c->tickets_flushed = 1;
  }
  return TB_OK;
}

static tb_status awslc_write(void *conn, const unsigned char *buf, size_t len, size_t *done,
                             char *err) {
  awslc_conn *c = conn;
  *done = 0;
  if (len == 0) return TB_OK;
  clear_stale_errors();
  int ret = SSL_write_ex(c->ssl, buf, len, done);
  return ret == 1 ? TB_OK : io_status(c, ret, "write", err);
}

static tb_status awslc_read(void *conn, unsigned char *buf, size_t len, size_t *done, char *err) {
  awslc_conn *c = conn;
  *done = 0;
  clear_stale_errors();
  int ret = SSL_read_ex(c->ssl, buf, len, done);
  return ret == 1 ? TB_OK : io_status(c, ret, "read", err);
}

/* ------------------------------------------------------------------------- negotiated */

static void copy_name(char *dst, const char *src) {
  snprintf(dst, TB_NAME_LEN, "%s", src != NULL ? src : "");
}

static void read_group(awslc_conn *c, const SSL_CIPHER *cipher, char *out) {
  out[0] = '\0';
  if (SSL_CIPHER_get_kx_nid(cipher) == NID_kx_rsa) return; /* static RSA: no group */
  /* An abbreviated TLS 1.2 handshake runs no key exchange, but the group getter reports
   * the original session's. A TLS 1.3 resumption runs one (psk_dhe_ke; psk_ke is never
   * enabled here). */
  if (SSL_version(c->ssl) != TLS1_3_VERSION && SSL_session_reused(c->ssl)) return;
  uint16_t id = SSL_get_group_id(c->ssl);
  if (id != 0) copy_name(out, group_name_of(id));
}

/* The scheme of a signature made in this handshake: this side's own (own != 0, from the
 * message it sent) or its peer's (the library's getter). "" when none was made. */
static void read_signature(awslc_conn *c, int own, char *out) {
  out[0] = '\0';
  uint16_t id = own ? c->own_sigalg : SSL_get_peer_signature_algorithm(c->ssl);
  if (id != 0) copy_name(out, sigalg_name_of(id));
}

/* The scheme of the SERVER's signature: the server's own, the client's peer's. */
static void read_sigalg(awslc_conn *c, const SSL_CIPHER *cipher, char *out) {
  out[0] = '\0';
  if (SSL_CIPHER_get_kx_nid(cipher) == NID_kx_rsa) return; /* static RSA signs nothing */
  if (SSL_session_reused(c->ssl)) return; /* an abbreviated handshake signs nothing */
  read_signature(c, SSL_is_server(c->ssl), out);
}

/* The scheme of the CLIENT's CertificateVerify (mutual auth): the client's own, the
 * server's peer's; "" when the client signed nothing. */
static void read_client_sigalg(awslc_conn *c, char *out) {
  out[0] = '\0';
  if (SSL_session_reused(c->ssl)) return;
  int server = SSL_is_server(c->ssl);
  if (server && SSL_get0_peer_certificate(c->ssl) == NULL) return;
  if (!server && SSL_get_certificate(c->ssl) == NULL) return;
  read_signature(c, !server, out);
}

static tb_status awslc_negotiated(void *conn, tb_negotiated *out, char *err) {
  awslc_conn *c = conn;
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
  read_sigalg(c, cipher, out->sigalg);
  read_client_sigalg(c, out->client_sigalg);
  /* Verified = this side asked to verify, the peer presented a chain, and the library's
   * verification (chain and, on the client, host name) succeeded. */
  out->peer_verified = (SSL_get_verify_mode(c->ssl) & SSL_VERIFY_PEER) != 0 &&
                       SSL_get0_peer_certificate(c->ssl) != NULL &&
                       SSL_get_verify_result(c->ssl) == X509_V_OK;
  out->resumed = SSL_session_reused(c->ssl) == 1;
  return TB_OK;
}

/* ------------------------------------------------------------------------- sessions */

static tb_status awslc_session_get(void *conn, void **session, char *err) {
  awslc_conn *c = conn;
  /* The callback's session (TLS 1.3: it holds the ticket, which arrives after the
   * handshake; the core reads once after the server wrote). A resumed TLS 1.2 handshake
   * makes no new session: the one it resumed goes on. */
  SSL_SESSION *s = c->session;
  if (s != NULL && !SSL_SESSION_up_ref(s)) return ossl_fail(err, TB_FAILED, "SSL_SESSION_up_ref");
  if (s == NULL && SSL_version(c->ssl) != TLS1_3_VERSION) s = SSL_get1_session(c->ssl);
  if (s == NULL) return tb_fail(err, TB_FAILED, "no session handed over (no ticket received?)");
  if (!SSL_SESSION_is_resumable(s)) {
    SSL_SESSION_free(s);
    return tb_fail(err, TB_FAILED, "the session is not resumable (no ticket received?)");
  }
  *session = s;
  return TB_OK;
}

static void awslc_session_free(void *session) { SSL_SESSION_free(session); }

/* ------------------------------------------------------------------------- AEAD */

static void awslc_aead_free(void *p) {
  awslc_aead *a = p;
  if (a == NULL) return;
  EVP_AEAD_CTX_cleanup(&a->ctx);
  free(a);
}

static tb_status awslc_aead_new(tb_aead_alg alg, const unsigned char *key, size_t key_len,
                                void **out, char *err) {
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
  awslc_aead *a = calloc(1, sizeof(*a));
  if (a == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  /* Keyed once; one context seals and opens. */
  if (!EVP_AEAD_CTX_init(&a->ctx, aead, key, key_len, TB_AEAD_TAG_LEN, NULL)) {
    free(a);
    return ossl_fail(err, TB_FAILED, "EVP_AEAD_CTX_init");
  }
  *out = a;
  return TB_OK;
}

static tb_status awslc_aead_seal(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                                 const unsigned char *ad, size_t ad_len, const unsigned char *in,
                                 size_t len, unsigned char *out, char *err) {
  awslc_aead *a = aead;
  size_t out_len = 0;
  if (!EVP_AEAD_CTX_seal(&a->ctx, out, &out_len, len + TB_AEAD_TAG_LEN, nonce, TB_AEAD_NONCE_LEN,
                         in, len, ad, ad_len) ||
      out_len != len + TB_AEAD_TAG_LEN)
    return ossl_fail(err, TB_FAILED, "seal");
  return TB_OK;
}

/* `len` is the ciphertext length; the tag follows it in `in` (as seal wrote it). */
static tb_status awslc_aead_open(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                                 const unsigned char *ad, size_t ad_len, const unsigned char *in,
                                 size_t len, unsigned char *out, char *err) {
  awslc_aead *a = aead;
  size_t out_len = 0;
  if (!EVP_AEAD_CTX_open(&a->ctx, out, &out_len, len, nonce, TB_AEAD_NONCE_LEN, in,
                         len + TB_AEAD_TAG_LEN, ad, ad_len)) {
    ERR_clear_error();
    return tb_fail(err, TB_FAILED, "open: the tag does not verify");
  }
  if (out_len != len) return tb_fail(err, TB_FAILED, "open: %zu bytes, not %zu", out_len, len);
  return TB_OK;
}

/* ------------------------------------------------------------------------- info */

#define MAX_LIST 128

static char g_build_text[6][256];
static const char *g_build_options[7];
static const char *g_versions[3];
static const char *g_suites[MAX_LIST];
static const char *g_groups[ARRAY_LEN(kGroups) + 1];
static const char *g_sigalgs[ARRAY_LEN(kSigalgs) + 1];

static void fill_build_options(void) {
  size_t n = 0;
  snprintf(g_build_text[n], sizeof(g_build_text[n]), "AWSLC_VERSION_NUMBER_STRING=%s",
           AWSLC_VERSION_NUMBER_STRING);
  snprintf(g_build_text[++n], sizeof(g_build_text[n]), "AWSLC_API_VERSION=%d", AWSLC_API_VERSION);
  snprintf(g_build_text[++n], sizeof(g_build_text[n]), "CRYPTO_has_asm=%d", CRYPTO_has_asm());
  snprintf(g_build_text[++n], sizeof(g_build_text[n]), "EVP_has_aes_hardware=%d",
           EVP_has_aes_hardware());
  snprintf(g_build_text[++n], sizeof(g_build_text[n]), "FIPS_mode=%d", FIPS_mode());
  for (size_t i = 0; i <= n; i++) g_build_options[i] = g_build_text[i];
  g_build_options[n + 1] = NULL;
}

/* Suites a TLS 1.2..1.3 client of this build would offer, with certificate
 * authentication (no PSK suites). */
static void fill_suites(SSL_CTX *ctx) {
  size_t n = 0;
  if (SSL_CTX_set_cipher_list(ctx, "ALL") && SSL_CTX_set_ciphersuites(ctx, kAllTls13Suites)) {
    STACK_OF(SSL_CIPHER) *list = SSL_CTX_get_ciphers(ctx);
    for (size_t i = 0; i < sk_SSL_CIPHER_num(list) && n + 1 < MAX_LIST; i++) {
      const SSL_CIPHER *c = sk_SSL_CIPHER_value(list, i);
      int auth = SSL_CIPHER_get_auth_nid(c);
      int kx = SSL_CIPHER_get_kx_nid(c);
      if ((auth == NID_auth_rsa || auth == NID_auth_ecdsa || auth == NID_auth_any) &&
          (kx == NID_kx_rsa || kx == NID_kx_ecdhe || kx == NID_kx_any))
        g_suites[n++] = SSL_CIPHER_standard_name(c);
    }
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
    /* SHA-1 schemes included: AWS-LC has no security level, and a TLS 1.2 handshake pinned
     * to rsa_pkcs1_sha1 completes (unlike OpenSSL's default level). */
    if (SSL_CTX_set_signing_algorithm_prefs(ctx, &kSigalgs[i].id, 1) &&
        SSL_CTX_set_verify_algorithm_prefs(ctx, &kSigalgs[i].id, 1))
      g_sigalgs[n++] = kSigalgs[i].iana;
  }
  g_sigalgs[n] = NULL;
}

static tb_status awslc_info(tb_info *out, char *err) {
  ERR_clear_error();
  SSL_CTX *ctx = SSL_CTX_new(TLS_method());
  SSL_CTX *probe = SSL_CTX_new(TLS_method());
  if (ctx == NULL || probe == NULL) {
    SSL_CTX_free(ctx);
    SSL_CTX_free(probe);
    return ossl_fail(err, TB_FAILED, "SSL_CTX_new");
  }
  snprintf(out->version, sizeof(out->version), "%s", awslc_version_string()); /* "AWS-LC x.y.z" */
  fill_build_options();
  g_versions[0] = "1.2";
  g_versions[1] = "1.3";
  g_versions[2] = NULL;
  fill_groups_and_sigalgs(probe);
  fill_suites(ctx);
  SSL_CTX_free(probe);
  SSL_CTX_free(ctx);
  ERR_clear_error(); /* probing refused names leaves errors behind */
  out->build_options = g_build_options;
  out->versions = g_versions;
  out->suites = g_suites;
  out->groups = g_groups;
  out->sigalgs = g_sigalgs;
  return TB_OK;
}

/* ------------------------------------------------------------------------- CPU paths */

/* libcrypto's capability vector after OPENSSL_ia32cap was applied (AWS-LC reads the same
 * variable, in the same format, as OpenSSL). Hidden from a shared library, visible in the
 * static one tlsbench links; weak, so that a build without it reads "not exposed". */
extern uint32_t OPENSSL_ia32cap_P[4] __attribute__((weak));

static void awslc_cpu_paths(char *out, size_t len) {
  if (!CRYPTO_has_asm()) {
    snprintf(out, len, "AWS-LC built without assembly (OPENSSL_NO_ASM): portable C only");
    return;
  }
  if (OPENSSL_ia32cap_P == NULL) {
    snprintf(out, len, "AWS-LC capability vector: not exposed by this libcrypto");
    return;
  }
  const uint32_t *cap = OPENSSL_ia32cap_P;
  uint64_t word1 = (uint64_t)cap[1] << 32 | cap[0]; /* CPUID.1: ECX:EDX */
  uint64_t word2 = (uint64_t)cap[3] << 32 | cap[2]; /* CPUID.7: ECX:EBX */
#define TB_BIT(w, b) (((w) >> (b)) & 1 ? "on" : "off")
  snprintf(out, len,
           "AWS-LC ia32cap 0x%016llx:0x%016llx: AES-NI %s, PCLMULQDQ %s, SSSE3 %s, AVX %s, "
           "AVX2 %s, AVX-512F %s, VAES %s, VPCLMULQDQ %s, SHA %s, ADX %s; AES-GCM hardware %s",
           (unsigned long long)word1, (unsigned long long)word2, TB_BIT(word1, 57),
           TB_BIT(word1, 33), TB_BIT(word1, 41), TB_BIT(word1, 60), TB_BIT(word2, 5),
           TB_BIT(word2, 16), TB_BIT(word2, 41), TB_BIT(word2, 42), TB_BIT(word2, 29),
           TB_BIT(word2, 19), EVP_has_aes_hardware() ? "on" : "off");
#undef TB_BIT
}

/* ------------------------------------------------------------------------- the adapter */

const tb_adapter tb_adapter_impl = {
    .name = "awslc",
    .global_init = awslc_global_init,
    .global_cleanup = awslc_global_cleanup,
    .info = awslc_info,
    .ctx_new = awslc_ctx_new,
    .ctx_free = awslc_ctx_free,
    .conn_new = awslc_conn_new,
    .conn_free = awslc_conn_free,
    .close = awslc_close,
    .handshake = awslc_handshake,
    .write = awslc_write,
    .read = awslc_read,
    .negotiated = awslc_negotiated,
    .session_get = awslc_session_get,
    .session_free = awslc_session_free,
    .aead_new = awslc_aead_new,
    .aead_seal = awslc_aead_seal,
    .aead_open = awslc_aead_open,
    .aead_free = awslc_aead_free,
    .cpu_paths = awslc_cpu_paths,
};
