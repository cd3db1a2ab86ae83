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
 * What it shares with the OpenSSL and AWS-LC adapters (errors, the transport BIO, the
 * context and connection life cycle, BoringSSL's API for groups, signature schemes and the
 * AEAD) is in openssl_family.c; this file holds what is BoringSSL's own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/base.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/nid.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "openssl_family.h"
#include "tlsbench/driver.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------- names */

/* The groups and signature schemes BoringSSL implements, by code point (no finite-field
 * DHE). Their names are the core's; MLKEM1024 and the ML-DSA schemes, which tlsbench does
 * not ask for, carry BoringSSL's own. */
static const uint16_t kGroups[] = {
    SSL_GROUP_X25519,    SSL_GROUP_SECP256R1,       SSL_GROUP_SECP384R1,
    SSL_GROUP_SECP521R1, SSL_GROUP_X25519_MLKEM768, SSL_GROUP_MLKEM1024,
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
    SSL_SIGN_ML_DSA_44,
    SSL_SIGN_ML_DSA_65,
    SSL_SIGN_ML_DSA_87,
    SSL_SIGN_RSA_PKCS1_SHA1,
    SSL_SIGN_ECDSA_SHA1,
};

/* The TLS 1.3 suites BoringSSL implements (it has no CCM suites). */
static const uint16_t kTls13Suites[] = {
    SSL_CIPHER_AES_128_GCM_SHA256,
    SSL_CIPHER_AES_256_GCM_SHA384,
    SSL_CIPHER_CHACHA20_POLY1305_SHA256,
};

/* ------------------------------------------------------------------------- objects */

/* The scheme this side signed with (own_sigalg) is noted at SSL_CB_HANDSHAKE_DONE. */
typedef tb_bssl_conn bssl_conn;

/* What this library does its own way, for the shared code (defined below). */
static const tb_ossl_class kClass;

/* ------------------------------------------------------------------------- global */

/* What BoringSSL sets up lazily once per process is done here, so that it is charged to
 * "global" and not to the first context or handshake of a side: the CPU capability
 * probe and the random generator's per-thread state (first RAND_bytes), a context's static
 * method tables (one SSL_CTX made and freed), and this thread's error queue (allocated by
 * its first use). */
static tb_status bssl_global_init(char *err) {
  CRYPTO_library_init();
  tb_status st = tb_ossl_global_init(&kClass, err);
  if (st != TB_OK) return st;
  unsigned char rnd[32];
  if (RAND_bytes(rnd, sizeof(rnd)) != 1) return tb_ossl_fail(err, TB_FAILED, "RAND_bytes");
  SSL_CTX *warm = SSL_CTX_new(TLS_method());
  if (warm == NULL) return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_new");
  SSL_CTX_free(warm);
  ERR_put_error(ERR_LIB_SSL, 0, ERR_R_INTERNAL_ERROR, __FILE__, __LINE__);
  ERR_clear_error();
  return TB_OK;
}

/* ------------------------------------------------------------------------- ctx_new */

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
        return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_set1_tls13_ciphers");
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
    return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_set_strict_cipher_list");
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

/* The scheme this side signed with exists only while the handshake runs: read it when the
 * library announces the handshake's end. */
static void note_handshake_done(const SSL *ssl, int type, int value) {
  (void)value;
  if (type != SSL_CB_HANDSHAKE_DONE) return;
  bssl_conn *c = tb_ossl_conn_of(ssl);
  if (c != NULL) c->own_sigalg = SSL_get_signature_algorithm_used(ssl);
}

static void set_callbacks(SSL_CTX *ctx) { SSL_CTX_set_info_callback(ctx, note_handshake_done); }

/* max_send_fragment bounds what this side sends. BoringSSL has no max_fragment_length
 * extension and sizes its read buffer for the largest record, so receiving is unchanged. */
static const tb_ossl_class kClass = {
    .library = "BoringSSL",
    .conn_size = sizeof(bssl_conn),
    .conn_free = tb_bssl_conn_free,
    .set_callbacks = set_callbacks,
    .pin_offer = pin_offer,
    .check_chain = tb_bssl_check_chain,
    .set_record_size = tb_ossl_set_send_fragment,
    .new_session = tb_bssl_keep_new_session,
    .set_psk = tb_bssl_set_psk,
    .groups = kGroups,
    .n_groups = ARRAY_LEN(kGroups),
    .sigalgs = kSigalgs,
    .n_sigalgs = ARRAY_LEN(kSigalgs),
};

/* ------------------------------------------------------------------------- connections */

static tb_status bssl_handshake(void *conn, char *err) {
  bssl_conn *c = conn;
  tb_ossl_clear_stale_errors();
  int ret = SSL_do_handshake(c->base.ssl);
  if (ret != 1) return tb_ossl_io_status(&c->base, ret, "handshake", err);
  if (!SSL_is_server(c->base.ssl)) return TB_OK;
  /* A BoringSSL server holds its TLS 1.3 NewSessionTickets back until it next writes
   * (OpenSSL sends them within SSL_do_handshake). A zero-byte write sends them now, so that
   * their cost belongs to the handshake, as in the other libraries, and so that tickets
   * sent when the run asked for none are on the wire where the check sees them. It writes
   * nothing when nothing is pending. */
  ret = SSL_write(c->base.ssl, NULL, 0);
  if (ret >= 0) return TB_OK;
  tb_status st = tb_ossl_io_status(&c->base, ret, "sending the session tickets", err);
  return st == TB_WANT_IO ? TB_OK : st; /* blocked: they go with the next write */
}

/* ------------------------------------------------------------------------- negotiated */

/* The scheme of a signature made in this handshake: this side's own (noted at handshake
 * end) or the peer's (kept in the session). An abbreviated handshake signs nothing. */
static uint16_t signature(bssl_conn *c, int own) {
  if (SSL_session_reused(c->base.ssl)) return 0;
  return own ? c->own_sigalg : SSL_get_peer_signature_algorithm(c->base.ssl);
}

static tb_status bssl_negotiated(void *conn, tb_negotiated *out, char *err) {
  bssl_conn *c = conn;
  SSL *ssl = c->base.ssl;
  memset(out, 0, sizeof(*out));
  const SSL_CIPHER *cipher = SSL_get_current_cipher(ssl);
  if (cipher == NULL) return tb_fail(err, TB_FAILED, "no cipher negotiated");
  tb_ossl_version_name(ssl, out->version);
  tb_ossl_copy_name(out->suite, SSL_CIPHER_standard_name(cipher));
  tb_bssl_read_group(ssl, cipher, out->group);
  int server = SSL_is_server(ssl);
  int psk = tb_ossl_psk_mode_of_cipher(cipher); /* TLS 1.2 only: no TLS 1.3 external PSK */
  uint16_t id;
  /* The server's signature (none under static RSA or PSK): the server's own, the client's
   * peer's. */
  if (SSL_CIPHER_get_kx_nid(cipher) != NID_kx_rsa && psk == TB_PSK_NONE &&
      (id = signature(c, server)) != 0)
    tb_bssl_sigalg_name(id, out->sigalg);
  /* The client's CertificateVerify: the client's own, the server's peer's. */
  if ((id = signature(c, !server)) != 0) tb_bssl_sigalg_name(id, out->client_sigalg);
  out->peer_verified = tb_ossl_peer_verified(ssl);
  out->resumed = SSL_session_reused(ssl) == 1;
  if (!out->resumed) out->psk = psk;
  return TB_OK;
}

/* ------------------------------------------------------------------------- sessions */

static tb_status bssl_session_get(void *conn, void **session, char *err) {
  bssl_conn *c = conn;
  /* The newest session the library handed over (TLS 1.3: once the client has read the
   * NewSessionTicket; the core reads once after the server wrote). An abbreviated TLS 1.2
   * handshake hands over none (no new ticket): its established session, the resumed one,
   * serves again. A TLS 1.3 established session is never resumable itself. */
  SSL_SESSION *s = c->session != NULL ? c->session : SSL_get_session(c->base.ssl);
  if (s == NULL)
    return tb_fail(err, TB_FAILED, "no session on this connection (no ticket received?)");
  if (!SSL_SESSION_is_resumable(s))
    return tb_fail(err, TB_FAILED, "the session is not resumable (no ticket received?)");
  SSL_SESSION_up_ref(s);
  *session = s;
  return TB_OK;
}

static void bssl_session_free(void *session) { SSL_SESSION_free(session); }

/* The library's TLS, as the scenarios use it. */
static const tb_tls_class kTls = {
    .ctx_new = tb_ossl_ctx_new,
    .ctx_free = tb_ossl_ctx_free,
    .conn_new = tb_ossl_conn_new,
    .conn_free = tb_bssl_conn_free,
    .handshake = bssl_handshake,
    .write = tb_ossl_write,
    .read = tb_ossl_read,
    .close = tb_ossl_close,
    .negotiated = bssl_negotiated,
    .session_get = bssl_session_get,
    .session_free = bssl_session_free,
};

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
    if (kx == NID_kx_rsa || kx == NID_kx_ecdhe || kx == NID_kx_psk)
      g_suites[n++] = SSL_CIPHER_standard_name(c);
  }
  g_suites[n] = NULL;
}

static int group_usable(SSL_CTX *probe, uint16_t id) {
  return SSL_CTX_set1_group_ids(probe, &id, 1);
}

/* BoringSSL accepts SHA-1 schemes only for verifying TLS 1.2 signatures (if asked). */
static int sigalg_usable(SSL_CTX *probe, uint16_t id) {
  return id != SSL_SIGN_RSA_PKCS1_SHA1 && id != SSL_SIGN_ECDSA_SHA1 &&
         SSL_CTX_set_signing_algorithm_prefs(probe, &id, 1) &&
         SSL_get_signature_algorithm_key_type(id) != EVP_PKEY_NONE;
}

static tb_status bssl_info(tb_info *out, char *err) {
  ERR_clear_error();
  SSL_CTX *ctx = SSL_CTX_new(TLS_method());
  if (ctx == NULL) return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_new");
  snprintf(out->version, sizeof(out->version), "%s (API version %d)",
           OpenSSL_version(OPENSSL_VERSION), BORINGSSL_API_VERSION);
  fill_build_options();
  fill_suites(ctx);
  tb_bssl_list(kGroups, ARRAY_LEN(kGroups), 0, ctx, group_usable, g_groups);
  tb_bssl_list(kSigalgs, ARRAY_LEN(kSigalgs), 1, ctx, sigalg_usable, g_sigalgs);
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

#ifdef OPENSSL_NO_ASM
#define NO_ASM_NOTE " (OPENSSL_NO_ASM: no assembly is built, the vector selects nothing)"
#else
#define NO_ASM_NOTE ""
#endif

static void bssl_cpu_paths(char *out, size_t len) {
  /* EVP_has_aes_hardware initialises the library's CPU probe if it has not run yet. */
  int aes_hw = EVP_has_aes_hardware();
  char tail[128];
  snprintf(tail, sizeof(tail), "; EVP_has_aes_hardware %d%s", aes_hw, NO_ASM_NOTE);
#if defined(__x86_64__) || defined(__i386__)
  if (OPENSSL_ia32cap_P != NULL) {
    tb_ossl_describe_ia32cap(out, len, "BoringSSL", OPENSSL_ia32cap_P, tail);
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
    .global_cleanup = tb_ossl_global_cleanup,
    .info = bssl_info,
    .cpu_paths = bssl_cpu_paths,
    .tls = &kTls,
    .aead = &tb_bssl_aead,
};
