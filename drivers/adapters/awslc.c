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
 * What it shares with the OpenSSL and BoringSSL adapters (errors, the transport BIO, the
 * context and connection life cycle, BoringSSL's API for groups, signature schemes and the
 * AEAD) is in openssl_family.c; this file holds what is AWS-LC's own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/base.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/service_indicator.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "openssl_family.h"
#include "tls_wire.h"
#include "tlsbench/driver.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------- names */

/* The groups and signature schemes AWS-LC implements, by code point (their names are the
 * core's). No finite-field groups; no rsa_pss_pss_* and no ed448 schemes (asking for them
 * is "unsupported"). */
static const uint16_t kGroups[] = {
    SSL_GROUP_X25519,    SSL_GROUP_SECP256R1,       SSL_GROUP_SECP384R1,
    SSL_GROUP_SECP521R1, SSL_GROUP_X25519_MLKEM768,
};

static const uint16_t kSigalgs[] = {
    SSL_SIGN_RSA_PKCS1_SHA256,
    SSL_SIGN_RSA_PKCS1_SHA384,
    SSL_SIGN_RSA_PKCS1_SHA512,
    SSL_SIGN_RSA_PSS_RSAE_SHA256,
    SSL_SIGN_RSA_PSS_RSAE_SHA384,
    SSL_SIGN_RSA_PSS_RSAE_SHA512,
    SSL_SIGN_ECDSA_SECP256R1_SHA256,
    SSL_SIGN_ECDSA_SECP384R1_SHA384,
    SSL_SIGN_ECDSA_SECP521R1_SHA512,
    SSL_SIGN_ED25519,
    SSL_SIGN_RSA_PKCS1_SHA1,
    SSL_SIGN_ECDSA_SHA1,
    /* draft-ietf-tls-mldsa, TLS 1.3 only. */
    SSL_SIGN_MLDSA44,
    SSL_SIGN_MLDSA65,
    SSL_SIGN_MLDSA87,
};

/* Every TLS 1.3 suite AWS-LC knows; used to list (info) and to validate a 1.3 request. */
static const char kAllTls13Suites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

/* ------------------------------------------------------------------------- objects */

typedef struct awslc_conn {
  tb_bssl_conn b;      /* own_sigalg: from the message this side sent (message callback) */
  int tickets_flushed; /* server: the NewSessionTickets were sent after the handshake */
} awslc_conn;

/* What this library does its own way, for the shared code (defined below). */
static const tb_ossl_class kClass;

/* ------------------------------------------------------------------------- randomness */

/* --deterministic: AWS-LC has no hook for its random generator at run time
 * (RAND_set_rand_method does nothing; its deterministic mode,
 * BORINGSSL_UNSAFE_DETERMINISTIC_MODE, is a build option that would measure another build).
 * A handshake's own work hardly depends on the values it draws (constant-time key shares
 * and RSA; an ECDSA signature's DER length does), but some allocations do: the temporaries
 * of the RSA blinding set-up, whose inverse takes more or fewer steps, leave glibc's heap in
 * one of a few layouts, and later malloc calls of either side cost a few hundred
 * instructions more or less. Certificates are checked at a fixed time (openssl_family.c). */
static tb_status awslc_derandomize(tb_random_fn fill, tb_randomness *out, char *err) {
  (void)fill, (void)err;
  tb_ossl_fix_verify_time();
  out->seeded = 0;
  snprintf(out->how, sizeof(out->how),
           "not seeded: AWS-LC has no run-time hook (BORINGSSL_UNSAFE_DETERMINISTIC_MODE is a "
           "build option); the work hardly depends on the values drawn, the heap's layout "
           "does (a few hundred instructions of malloc); certificates checked at a fixed time");
  return TB_OK;
}

/* ------------------------------------------------------------------------- global */

/* What AWS-LC sets up on first use (the CPU capability vector, the DRBG and this thread's
 * error queue, the X509_STORE_CTX ex_data index, the cipher tables a context parses) is
 * done here, so that it is charged to "global" and not to the first context or
 * handshake of a side. */
static tb_status awslc_global_init(char *err) {
  CRYPTO_library_init();
  if (!OPENSSL_init_ssl(0, NULL)) return tb_ossl_fail(err, TB_FAILED, "OPENSSL_init_ssl");
  tb_status st = tb_ossl_global_init(&kClass, err);
  if (st != TB_OK) return st;
  unsigned char rnd[32];
  if (RAND_bytes(rnd, sizeof(rnd)) != 1) return tb_ossl_fail(err, TB_FAILED, "RAND_bytes");
  SSL_CTX *warm = SSL_CTX_new(TLS_method());
  if (warm == NULL) return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_new");
  SSL_CTX_free(warm);
  (void)SSL_get_ex_data_X509_STORE_CTX_idx();
  ERR_clear_error();
  return TB_OK;
}

/* ------------------------------------------------------------------------- ctx_new */

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
      return tb_ossl_fail(err, TB_UNSUPPORTED, "no TLS 1.3 suite by that name");
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
    return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_set_cipher_list");
  *kx_nid = SSL_CIPHER_get_kx_nid(c);
  if ((tb_ossl_psk_mode_of_cipher(c) != TB_PSK_NONE) != (cfg->psk.mode != TB_PSK_NONE))
    return tb_fail(err, TB_UNSUPPORTED, "'%s' %s a pre-shared key", cfg->suite,
                   cfg->psk.mode == TB_PSK_NONE ? "needs" : "takes no");
  return TB_OK;
}

static tb_status pin_offer(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                           int *kx_nid, char *err) {
  tb_status st = pin_suite(ctx, cfg, kx_nid, err);
  if (st == TB_OK) st = tb_bssl_pin_groups(cls, ctx, cfg, *kx_nid, err);
  if (st == TB_OK) st = tb_bssl_pin_sigalgs(cls, ctx, cfg, *kx_nid, err);
  return st;
}

/* A side cannot ask which scheme it signed with itself: notes it from the handshake message
 * it sends, a TLS 1.3 CertificateVerify or a TLS 1.2 ECDHE ServerKeyExchange. */
static void note_own_signature(int write_p, int version, int content_type, const void *buf,
                               size_t len, SSL *ssl, void *arg) {
  (void)version;
  (void)arg;
  const unsigned char *m = buf;
  if (!write_p || content_type != SSL3_RT_HANDSHAKE || len < 4) return;
  awslc_conn *c = tb_ossl_conn_of(ssl);
  if (c == NULL) return;
  tb_key_exchange kx;
  if (m[0] == TB_HS_CERTIFICATE_VERIFY) {
    uint16_t scheme = tb_hs_certificate_verify(m + 4, len - 4);
    if (scheme != 0) c->b.own_sigalg = scheme;
  } else if (m[0] == TB_HS_SERVER_KEY_EXCHANGE && SSL_version(ssl) == TLS1_2_VERSION &&
             tb_ossl_psk_mode_of_cipher(SSL_get_pending_cipher(ssl)) == TB_PSK_NONE &&
             tb_hs_server_key_exchange(m + 4, len - 4, 0, &kx) == 0) {
    c->b.own_sigalg = kx.sigalg;
  }
}

static void set_callbacks(SSL_CTX *ctx) { SSL_CTX_set_msg_callback(ctx, note_own_signature); }

static const tb_ossl_class kClass = {
    .library = "AWS-LC",
    .conn_size = sizeof(awslc_conn),
    .conn_free = tb_bssl_conn_free,
    .set_callbacks = set_callbacks,
    .pin_offer = pin_offer,
    .check_chain = tb_bssl_check_chain,
    /* max_send_fragment bounds what this side sends; AWS-LC has no max_fragment_length
     * extension, so the receive buffer keeps its full size. */
    .set_record_size = tb_ossl_set_send_fragment,
    .new_session = tb_bssl_keep_new_session,
    .set_psk = tb_bssl_set_psk,
    .groups = kGroups,
    .n_groups = ARRAY_LEN(kGroups),
    .sigalgs = kSigalgs,
    .n_sigalgs = ARRAY_LEN(kSigalgs),
};

/* ------------------------------------------------------------------------- connections */

static tb_status awslc_handshake(void *conn, char *err) {
  awslc_conn *c = conn;
  SSL *ssl = c->b.base.ssl;
  tb_ossl_clear_stale_errors();
  int ret = SSL_do_handshake(ssl);
  if (ret != 1) return tb_ossl_io_status(&c->b.base, ret, "handshake", err);
  /* A TLS 1.3 server builds its NewSessionTickets at the end of the handshake but holds
   * them back until its first write. A zero-byte write sends them now, as OpenSSL does, so
   * that the handshake's cost and bytes include them and a ticket sent while asked off is
   * seen by the core (with no tickets pending it writes nothing). */
  if (SSL_is_server(ssl) && SSL_version(ssl) == TLS1_3_VERSION && !c->tickets_flushed) {
    ret = SSL_write(ssl, "", 0);
    if (ret < 0) return tb_ossl_io_status(&c->b.base, ret, "sending the session tickets", err);
    c->tickets_flushed = 1;
  }
  return TB_OK;
}

/* ------------------------------------------------------------------------- negotiated */

/* The scheme of a signature made in this handshake: this side's own (own != 0, from the
 * message it sent) or its peer's (the library's getter). "" when none was made. */
static void read_signature(awslc_conn *c, int own, char *out) {
  uint16_t id = own ? c->b.own_sigalg : SSL_get_peer_signature_algorithm(c->b.base.ssl);
  if (id != 0) tb_bssl_sigalg_name(id, out);
}

static tb_status awslc_negotiated(void *conn, tb_negotiated *out, char *err) {
  awslc_conn *c = conn;
  SSL *ssl = c->b.base.ssl;
  memset(out, 0, sizeof(*out));
  const SSL_CIPHER *cipher = SSL_get_current_cipher(ssl);
  if (cipher == NULL) return tb_fail(err, TB_FAILED, "no cipher negotiated");
  tb_ossl_version_name(ssl, out->version);
  tb_ossl_copy_name(out->suite, SSL_CIPHER_standard_name(cipher));
  tb_bssl_read_group(ssl, cipher, out->group);
  int server = SSL_is_server(ssl), reused = SSL_session_reused(ssl);
  int psk = tb_ossl_psk_mode_of_cipher(cipher); /* TLS 1.2 only: no TLS 1.3 external PSK */
  /* The SERVER's signature: the server's own, the client's peer's; static RSA, PSK and an
   * abbreviated handshake sign nothing. */
  if (SSL_CIPHER_get_kx_nid(cipher) != NID_kx_rsa && psk == TB_PSK_NONE && !reused)
    read_signature(c, server, out->sigalg);
  /* The CLIENT's CertificateVerify (mutual auth): the client's own, the server's peer's;
   * "" when the client signed nothing. */
  if (!reused && (server ? SSL_get0_peer_certificate(ssl) : SSL_get_certificate(ssl)) != NULL)
    read_signature(c, !server, out->client_sigalg);
  out->peer_verified = tb_ossl_peer_verified(ssl);
  out->resumed = reused == 1;
  if (!out->resumed) out->psk = psk;
  return TB_OK;
}

/* ------------------------------------------------------------------------- sessions */

static tb_status awslc_session_get(void *conn, void **session, char *err) {
  awslc_conn *c = conn;
  SSL *ssl = c->b.base.ssl;
  /* The callback's session (TLS 1.3: it holds the ticket, which arrives after the
   * handshake; the core reads once after the server wrote). A resumed TLS 1.2 handshake
   * makes no new session: the one it resumed goes on. */
  SSL_SESSION *s = c->b.session;
  if (s != NULL && !SSL_SESSION_up_ref(s))
    return tb_ossl_fail(err, TB_FAILED, "SSL_SESSION_up_ref");
  if (s == NULL && SSL_version(ssl) != TLS1_3_VERSION) s = SSL_get1_session(ssl);
  if (s == NULL) return tb_fail(err, TB_FAILED, "no session handed over (no ticket received?)");
  if (!SSL_SESSION_is_resumable(s)) {
    SSL_SESSION_free(s);
    return tb_fail(err, TB_FAILED, "the session is not resumable (no ticket received?)");
  }
  *session = s;
  return TB_OK;
}

static void awslc_session_free(void *session) { SSL_SESSION_free(session); }

/* The library's TLS, as the scenarios use it. */
static const tb_tls_class kTls = {
    .ctx_new = tb_ossl_ctx_new,
    .ctx_free = tb_ossl_ctx_free,
    .conn_new = tb_ossl_conn_new,
    .conn_free = tb_bssl_conn_free,
    .handshake = awslc_handshake,
    .write = tb_ossl_write,
    .read = tb_ossl_read,
    .close = tb_ossl_close,
    .negotiated = awslc_negotiated,
    .session_get = awslc_session_get,
    .session_free = awslc_session_free,
};

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

/* Suites a TLS 1.2..1.3 client of this build would offer, with certificate or (TLS 1.2)
 * pre-shared key authentication. */
static void fill_suites(SSL_CTX *ctx) {
  size_t n = 0;
  if (SSL_CTX_set_cipher_list(ctx, "ALL") && SSL_CTX_set_ciphersuites(ctx, kAllTls13Suites)) {
    STACK_OF(SSL_CIPHER) *list = SSL_CTX_get_ciphers(ctx);
    for (size_t i = 0; i < sk_SSL_CIPHER_num(list) && n + 1 < MAX_LIST; i++) {
      const SSL_CIPHER *c = sk_SSL_CIPHER_value(list, i);
      int auth = SSL_CIPHER_get_auth_nid(c);
      int kx = SSL_CIPHER_get_kx_nid(c);
      if ((auth == NID_auth_rsa || auth == NID_auth_ecdsa || auth == NID_auth_any ||
           auth == NID_auth_psk) &&
          (kx == NID_kx_rsa || kx == NID_kx_ecdhe || kx == NID_kx_any || kx == NID_kx_psk))
        g_suites[n++] = SSL_CIPHER_standard_name(c);
    }
  }
  g_suites[n] = NULL;
}

static int group_usable(SSL_CTX *probe, uint16_t id) {
  return SSL_CTX_set1_group_ids(probe, &id, 1);
}

/* SHA-1 schemes included: AWS-LC has no security level, and a TLS 1.2 handshake pinned to
 * rsa_pkcs1_sha1 completes (unlike OpenSSL's default level). */
static int sigalg_usable(SSL_CTX *probe, uint16_t id) {
  return SSL_CTX_set_signing_algorithm_prefs(probe, &id, 1) &&
         SSL_CTX_set_verify_algorithm_prefs(probe, &id, 1);
}

static tb_status awslc_info(tb_info *out, char *err) {
  ERR_clear_error();
  SSL_CTX *ctx = SSL_CTX_new(TLS_method());
  SSL_CTX *probe = SSL_CTX_new(TLS_method());
  if (ctx == NULL || probe == NULL) {
    SSL_CTX_free(ctx);
    SSL_CTX_free(probe);
    return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_new");
  }
  snprintf(out->version, sizeof(out->version), "%s", awslc_version_string()); /* "AWS-LC x.y.z" */
  fill_build_options();
  g_versions[0] = "1.2";
  g_versions[1] = "1.3";
  g_versions[2] = NULL;
  tb_bssl_list(kGroups, ARRAY_LEN(kGroups), 0, probe, group_usable, g_groups);
  tb_bssl_list(kSigalgs, ARRAY_LEN(kSigalgs), 1, probe, sigalg_usable, g_sigalgs);
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
  tb_ossl_describe_ia32cap(
      out, len, "AWS-LC", OPENSSL_ia32cap_P,
      EVP_has_aes_hardware() ? "; AES-GCM hardware on" : "; AES-GCM hardware off");
}

/* ------------------------------------------------------------------------- the adapter */

const tb_adapter tb_adapter_impl = {
    .name = "awslc",
    .global_init = awslc_global_init,
    .global_cleanup = tb_ossl_global_cleanup,
    .info = awslc_info,
    .cpu_paths = awslc_cpu_paths,
    .derandomize = awslc_derandomize,
    .tls = &kTls,
    .aead = &tb_bssl_aead,
};
