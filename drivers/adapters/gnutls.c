/*
 * GnuTLS adapter (3.7.x system build and 3.8.x built from source).
 *
 * The whole offer of a side is pinned by ONE priority string built for the request
 * ("NONE:+VERS-...:+<cipher>:+<mac>:+<kx>:+GROUP-...:+SIGN-..."), so GnuTLS has nothing
 * else it could negotiate. I/O goes through the push/pull callbacks; would-block is
 * reported to GnuTLS as errno EAGAIN, which it turns into GNUTLS_E_AGAIN.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "tlsbench/driver.h"
#include "tlsbench/names.h"

/* ------------------------------------------------------------------------- name tables */

/* Cipher suites: GnuTLS's own table (gnutls_cipher_suite_info) has their code points, the
 * core's (tlsbench/names.h) their IANA names; the code point finds the suite's kx /
 * cipher / mac, which have no IANA names in GnuTLS. */

/* tlsbench group names and GnuTLS's (gnutls_group_get_name / "GROUP-<name>"). The hybrid
 * ML-KEM groups exist in 3.8.9 only when built with leancrypto or liboqs. */
typedef struct group_name {
  const char *tb;
  const char *gnutls;
} group_name;

static const group_name kGroups[] = {
    {"x25519", "X25519"},
    {"secp256r1", "SECP256R1"},
    {"secp384r1", "SECP384R1"},
    {"secp521r1", "SECP521R1"},
    {"x448", "X448"},
    {"ffdhe2048", "FFDHE2048"},
    {"ffdhe3072", "FFDHE3072"},
    {"ffdhe4096", "FFDHE4096"},
    {"ffdhe6144", "FFDHE6144"},
    {"ffdhe8192", "FFDHE8192"},
    {"X25519MLKEM768", "X25519-MLKEM768"},
    {"SecP256r1MLKEM768", "SECP256R1-MLKEM768"},
    {"SecP384r1MLKEM1024", "SECP384R1-MLKEM1024"},
};
#define N_GROUPS (sizeof(kGroups) / sizeof(kGroups[0]))

/* IANA SignatureScheme names and GnuTLS's sign algorithms per protocol version. GnuTLS
 * has two entries for each ECDSA code point: ECDSA-SHAxxx with TLS 1.2 semantics (any
 * curve) and ECDSA-SECPxxxR1-SHAxxx with TLS 1.3 semantics (curve bound); priority.c drops
 * the one whose semantics do not fit the version. GNUTLS_SIGN_UNKNOWN in tls13: not
 * allowed in TLS 1.3 (no GNUTLS_SIGN_FLAG_TLS13_OK in lib/algorithms/sign.c; RFC 8446
 * forbids PKCS#1 v1.5 and SHA-1 in CertificateVerify). */
typedef struct sig_name {
  const char *iana;
  gnutls_sign_algorithm_t tls12;
  gnutls_sign_algorithm_t tls13;
} sig_name;

#define SIG_BOTH(iana, alg) \
  { iana, alg, alg }
static const sig_name kSigs[] = {
    SIG_BOTH("rsa_pss_rsae_sha256", GNUTLS_SIGN_RSA_PSS_RSAE_SHA256),
    SIG_BOTH("rsa_pss_rsae_sha384", GNUTLS_SIGN_RSA_PSS_RSAE_SHA384),
    SIG_BOTH("rsa_pss_rsae_sha512", GNUTLS_SIGN_RSA_PSS_RSAE_SHA512),
    SIG_BOTH("rsa_pss_pss_sha256", GNUTLS_SIGN_RSA_PSS_SHA256),
    SIG_BOTH("rsa_pss_pss_sha384", GNUTLS_SIGN_RSA_PSS_SHA384),
    SIG_BOTH("rsa_pss_pss_sha512", GNUTLS_SIGN_RSA_PSS_SHA512),
    {"rsa_pkcs1_sha256", GNUTLS_SIGN_RSA_SHA256, GNUTLS_SIGN_UNKNOWN},
    {"rsa_pkcs1_sha384", GNUTLS_SIGN_RSA_SHA384, GNUTLS_SIGN_UNKNOWN},
    {"rsa_pkcs1_sha512", GNUTLS_SIGN_RSA_SHA512, GNUTLS_SIGN_UNKNOWN},
    {"rsa_pkcs1_sha1", GNUTLS_SIGN_RSA_SHA1, GNUTLS_SIGN_UNKNOWN},
    {"ecdsa_secp256r1_sha256", GNUTLS_SIGN_ECDSA_SHA256, GNUTLS_SIGN_ECDSA_SECP256R1_SHA256},
    {"ecdsa_secp384r1_sha384", GNUTLS_SIGN_ECDSA_SHA384, GNUTLS_SIGN_ECDSA_SECP384R1_SHA384},
    {"ecdsa_secp521r1_sha512", GNUTLS_SIGN_ECDSA_SHA512, GNUTLS_SIGN_ECDSA_SECP521R1_SHA512},
    {"ecdsa_sha1", GNUTLS_SIGN_ECDSA_SHA1, GNUTLS_SIGN_UNKNOWN},
    SIG_BOTH("ed25519", GNUTLS_SIGN_EDDSA_ED25519),
    SIG_BOTH("ed448", GNUTLS_SIGN_EDDSA_ED448),
};
#define N_SIGS (sizeof(kSigs) / sizeof(kSigs[0]))

static const group_name *group_by_tb(const char *tb) {
  for (size_t i = 0; i < N_GROUPS; i++) {
    if (strcmp(kGroups[i].tb, tb) == 0) return &kGroups[i];
  }
  return NULL;
}

static const group_name *group_by_gnutls(const char *name) {
  for (size_t i = 0; i < N_GROUPS; i++) {
    if (strcmp(kGroups[i].gnutls, name) == 0) return &kGroups[i];
  }
  return NULL;
}

static const sig_name *sig_by_iana(const char *iana) {
  for (size_t i = 0; i < N_SIGS; i++) {
    if (strcmp(kSigs[i].iana, iana) == 0) return &kSigs[i];
  }
  return NULL;
}

static const sig_name *sig_by_gnutls(gnutls_sign_algorithm_t s) {
  for (size_t i = 0; i < N_SIGS; i++) {
    if (kSigs[i].tls12 == s || kSigs[i].tls13 == s) {
      return &kSigs[i];
    }
  }
  return NULL;
}

/* gnutls_*_list() return 0-terminated arrays of what this build supports. */
static int in_list(const int *list, int v) {
  for (; list != NULL && *list != 0; list++) {
    if (*list == v) return 1;
  }
  return 0;
}

/* What gnutls_cipher_suite_info() says about one code point in this build. */
typedef struct suite_info {
  gnutls_kx_algorithm_t kx;
  gnutls_cipher_algorithm_t cipher;
  gnutls_mac_algorithm_t mac;
} suite_info;

/* The key exchanges tlsbench configures: certificate-based (TLS 1.3's is not in the suite). */
static int certificate_kx(gnutls_kx_algorithm_t kx) {
  return kx == GNUTLS_KX_UNKNOWN || kx == GNUTLS_KX_RSA || kx == GNUTLS_KX_DHE_RSA ||
         kx == GNUTLS_KX_ECDHE_RSA || kx == GNUTLS_KX_ECDHE_ECDSA;
}

/* ... and keyed by a pre-shared key (RSA-PSK, which also needs a certificate, is not). */
static int psk_kx(gnutls_kx_algorithm_t kx) {
  return kx == GNUTLS_KX_PSK || kx == GNUTLS_KX_ECDHE_PSK || kx == GNUTLS_KX_DHE_PSK;
}

static int suite_lookup(const unsigned char id[2], suite_info *out) {
  unsigned char cs[2];
  gnutls_kx_algorithm_t kx;
  gnutls_cipher_algorithm_t cipher;
  gnutls_mac_algorithm_t mac;
  gnutls_protocol_t min;
  for (size_t i = 0; gnutls_cipher_suite_info(i, cs, &kx, &cipher, &mac, &min) != NULL; i++) {
    if (cs[0] == id[0] && cs[1] == id[1]) {
      /* The suite table is static; its algorithms may be compiled out of a build. */
      if (!in_list((const int *)gnutls_cipher_list(), (int)cipher) ||
          !in_list((const int *)gnutls_mac_list(), (int)mac) ||
          (kx != GNUTLS_KX_UNKNOWN && !in_list((const int *)gnutls_kx_list(), (int)kx))) {
        return 0;
      }
      out->kx = kx;
      out->cipher = cipher;
      out->mac = mac;
      return 1;
    }
  }
  return 0;
}

static int group_available(gnutls_group_t g) {
  return g != GNUTLS_GROUP_INVALID && in_list((const int *)gnutls_group_list(), (int)g);
}

static int sign_available(gnutls_sign_algorithm_t s) {
  return s != GNUTLS_SIGN_UNKNOWN && in_list((const int *)gnutls_sign_list(), (int)s);
}

/* ------------------------------------------------------------------------- priority */

/* Appends ":+<item>" to the priority string; 0 when it does not fit. */
static int prio_add(char *buf, size_t size, const char *item) {
  size_t used = strlen(buf);
  int n = snprintf(buf + used, size - used, ":+%s", item);
  return n > 0 && (size_t)n < size - used;
}

static tb_status prio_suite(const tb_config *cfg, char *buf, size_t size, suite_info *si,
                            char *err) {
  const tb_name *sn = tb_name_find(tb_suite_names, cfg->suite);
  unsigned char id[2] = {(unsigned char)(sn != NULL ? sn->code >> 8 : 0),
                         (unsigned char)(sn != NULL ? sn->code : 0)};
  if (sn == NULL || !suite_lookup(id, si) ||
      !(si->kx == GNUTLS_KX_UNKNOWN ||
        (cfg->psk.mode != TB_PSK_NONE ? psk_kx(si->kx) : certificate_kx(si->kx)))) {
    return tb_fail(err, TB_UNSUPPORTED, "suite %s: not in this GnuTLS build%s", cfg->suite,
                   cfg->psk.mode != TB_PSK_NONE ? " with a pre-shared key" : "");
  }
  int tls13_suite = id[0] == 0x13;
  if (tls13_suite != (cfg->tls_version == 13)) {
    return tb_fail(err, TB_UNSUPPORTED, "suite %s cannot be used with TLS 1.%d", cfg->suite,
                   cfg->tls_version - 10);
  }
  const char *cipher = gnutls_cipher_get_name(si->cipher);
  const char *mac = gnutls_mac_get_name(si->mac);
  if (cipher == NULL || mac == NULL || !prio_add(buf, size, cipher) || !prio_add(buf, size, mac)) {
    return tb_fail(err, TB_UNSUPPORTED, "suite %s: no GnuTLS cipher/MAC name", cfg->suite);
  }
  /* TLS 1.3 suites carry no key exchange (kx 0): the group alone decides it. */
  if (si->kx != GNUTLS_KX_UNKNOWN && !prio_add(buf, size, gnutls_kx_get_name(si->kx))) {
    return tb_fail(err, TB_UNSUPPORTED, "suite %s: no GnuTLS kx name", cfg->suite);
  }
  return TB_OK;
}

static tb_status prio_group(const tb_config *cfg, char *buf, size_t size, char *err) {
  const group_name *gn = cfg->group ? group_by_tb(cfg->group) : NULL;
  if (gn == NULL) {
    return tb_fail(err, TB_UNSUPPORTED, "group %s: not known to GnuTLS",
                   cfg->group ? cfg->group : "(none)");
  }
  if (!group_available(gnutls_group_get_id(gn->gnutls))) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "group %s: not in this GnuTLS %s build (hybrid ML-KEM groups need "
                   "leancrypto or liboqs)",
                   cfg->group, gnutls_check_version(NULL));
  }
  char item[64];
  if (cfg->key_share != NULL) {
    /* Offered first; the client sends one share, for it only (GNUTLS_KEY_SHARE_TOP). */
    const group_name *first = group_by_tb(cfg->key_share);
    if (first == NULL || !group_available(gnutls_group_get_id(first->gnutls)))
      return tb_fail(err, TB_UNSUPPORTED, "key share group %s: not in this GnuTLS build",
                     cfg->key_share);
    snprintf(item, sizeof(item), "GROUP-%s", first->gnutls);
    if (!prio_add(buf, size, item)) return tb_fail(err, TB_FAILED, "priority string too long");
  }
  snprintf(item, sizeof(item), "GROUP-%s", gn->gnutls);
  if (!prio_add(buf, size, item)) return tb_fail(err, TB_FAILED, "priority string too long");
  return TB_OK;
}

/* Static RSA signs nothing, but GnuTLS drops TLS 1.2 from a priority without any signature
 * algorithm (priority.c); the scheme then only serves a client's CertificateVerify. */
#define STATIC_RSA_SIGALG "rsa_pkcs1_sha256"

static tb_status prio_sig(const tb_config *cfg, const char *iana, char *buf, size_t size,
                          char *err) {
  const sig_name *sn = sig_by_iana(iana);
  if (sn == NULL && strncmp(iana, "mldsa", 5) == 0) {
    /* ML-DSA certificates from 3.8.9, TLS 1.3 signatures from 3.8.10 (lib/algorithms/sign.c:
     * GNUTLS_SIGN_FLAG_TLS13_OK), both through leancrypto (--with-leancrypto; 3.8.9 also
     * liboqs), which no pinned line builds: nettle has no ML-DSA. */
    return tb_fail(err, TB_UNSUPPORTED,
#if GNUTLS_VERSION_NUMBER >= 0x03080a
                   "%s: GnuTLS %s signs TLS 1.3 with ML-DSA only when built --with-leancrypto, "
                   "and leancrypto is not pinned (nettle has no ML-DSA)",
#else
                   "%s: GnuTLS %s has ML-DSA certificates only (with leancrypto or liboqs, "
                   "not built) and no TLS code point for it; 3.8.10 added one",
#endif
                   iana, gnutls_check_version(NULL));
  }
  if (sn == NULL && strncmp(iana, "slhdsa", 6) == 0) {
    return tb_fail(err, TB_UNSUPPORTED, "%s: GnuTLS %s has no SLH-DSA", iana,
                   gnutls_check_version(NULL));
  }
  if (sn == NULL) {
    return tb_fail(err, TB_UNSUPPORTED, "signature scheme %s: not known to GnuTLS", iana);
  }
  gnutls_sign_algorithm_t alg = cfg->tls_version == 13 ? sn->tls13 : sn->tls12;
  if (alg == GNUTLS_SIGN_UNKNOWN) {
    return tb_fail(err, TB_UNSUPPORTED, "signature scheme %s is not allowed in TLS 1.3", iana);
  }
  if (!sign_available(alg)) {
    return tb_fail(err, TB_UNSUPPORTED, "signature scheme %s: not in this GnuTLS build", iana);
  }
  /* A TLS 1.2 CertificateRequest lists certificate types, and GnuTLS has none for EdDSA
   * ("EdDSA (Ed25519) is unsupported for cert request", auth/cert.c): the list would be
   * empty and the client fails with "unknown public key algorithm". */
  gnutls_pk_algorithm_t pk = gnutls_sign_get_pk_algorithm(alg);
  if (cfg->tls_version == 12 && cfg->auth == TB_AUTH_MUTUAL &&
      (pk == GNUTLS_PK_EDDSA_ED25519 || pk == GNUTLS_PK_EDDSA_ED448)) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "GnuTLS cannot request EdDSA client certificates in TLS 1.2 (%s)", iana);
  }
  char item[64];
  snprintf(item, sizeof(item), "SIGN-%s", gnutls_sign_get_name(alg));
  if (!prio_add(buf, size, item)) return tb_fail(err, TB_FAILED, "priority string too long");
  return TB_OK;
}

/* A PSK run: in TLS 1.3 the key exchange keyword says the mode (+PSK: psk_ke;
 * +ECDHE-PSK / +DHE-PSK, by the group's kind: psk_dhe_ke) and the suite carries none; in
 * TLS 1.2 the suite's own kx is already there. GnuTLS keeps a version only while its
 * priority has a signature algorithm (priority.c), though a PSK handshake signs nothing:
 * one is listed, which only fills the ClientHello's signature_algorithms. */
#define PSK_LISTED_SIGALG "rsa_pss_rsae_sha256"

static tb_status prio_psk(const tb_config *cfg, char *buf, size_t size, char *err) {
  tb_status st = TB_OK;
  if (cfg->tls_version == 13) {
    int ffdhe = cfg->group != NULL && strncmp(cfg->group, "ffdhe", 5) == 0;
    const char *kx = cfg->psk.mode == TB_PSK_KE ? "PSK" : ffdhe ? "DHE-PSK" : "ECDHE-PSK";
    if (!prio_add(buf, size, kx)) return tb_fail(err, TB_FAILED, "priority string too long");
  }
  if (cfg->psk.mode == TB_PSK_DHE) st = prio_group(cfg, buf, size, err);
  if (st == TB_OK) {
    const char *listed = cfg->tls_version == 13 ? PSK_LISTED_SIGALG : STATIC_RSA_SIGALG;
    st = prio_sig(cfg, listed, buf, size, err);
  }
  return st;
}

/* The priority string that offers exactly the request. */
static tb_status build_priority(const tb_config *cfg, char *buf, size_t size, char *err) {
  gnutls_protocol_t proto = cfg->tls_version == 13 ? GNUTLS_TLS1_3 : GNUTLS_TLS1_2;
  if ((cfg->tls_version != 12 && cfg->tls_version != 13) ||
      !in_list((const int *)gnutls_protocol_list(), (int)proto)) {
    return tb_fail(err, TB_UNSUPPORTED, "TLS version %d not supported by this build",
                   cfg->tls_version);
  }
  /* One priority string holds the signature algorithms for both signers: GnuTLS has no
   * separate list for client authentication (the CertificateRequest and the client's
   * choice use the same one). */
  if (cfg->client_sigalg != NULL &&
      (cfg->sigalg == NULL || strcmp(cfg->client_sigalg, cfg->sigalg))) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "GnuTLS cannot pin the client's signature scheme (%s) apart from the "
                   "server's: one priority string serves both",
                   cfg->client_sigalg);
  }
  snprintf(buf, size, "NONE:+VERS-TLS1.%d", cfg->tls_version - 10);
  suite_info si;
  tb_status st = prio_suite(cfg, buf, size, &si, err);
  if (st != TB_OK) return st;
  if (cfg->psk.mode != TB_PSK_NONE) {
    st = prio_psk(cfg, buf, size, err);
  } else if (si.kx == GNUTLS_KX_RSA) {
    /* Static RSA key exchange uses no group and signs nothing. */
    st = prio_sig(cfg, cfg->sigalg ? cfg->sigalg : STATIC_RSA_SIGALG, buf, size, err);
  } else if (cfg->sigalg == NULL) {
    st = tb_fail(err, TB_UNSUPPORTED, "suite %s needs a signature scheme", cfg->suite);
  } else {
    st = prio_group(cfg, buf, size, err);
    if (st == TB_OK) st = prio_sig(cfg, cfg->sigalg, buf, size, err);
  }
  if (st != TB_OK) return st;
  if (!prio_add(buf, size, "COMP-NULL") || !prio_add(buf, size, "CTYPE-X509")) {
    return tb_fail(err, TB_FAILED, "priority string too long");
  }
  return TB_OK;
}

/* ------------------------------------------------------------------------- context */

/* GnuTLS documents 512..16384 for gnutls_record_set_max_size (ext/max_record.c). */
#define GT_MIN_RECORD 512
#define GT_MAX_RECORD 16384

typedef struct gt_ctx {
  tb_role role;
  tb_auth auth;
  int resumption;
  int has_cert;      /* own chain loaded (server, or client in mutual) */
  int one_key_share; /* client with tb_config.key_share: the first group's share only */
  size_t record_size;
  char server_name[256]; /* must outlive the sessions (gnutls_session_set_verify_cert) */
  gnutls_certificate_credentials_t cred;
  gnutls_priority_t prio;
  gnutls_datum_t ticket_key; /* server with resumption: the ticket encryption key */
  /* A PSK run: its credentials (no certificate ones) and, for the server's callback, the
   * key and identity. */
  tb_psk_mode psk;
  gnutls_psk_client_credentials_t psk_client;
  gnutls_psk_server_credentials_t psk_server;
  unsigned char psk_key[64];
  size_t psk_key_len;
  char psk_identity[128];
} gt_ctx;

static void gt_ctx_free(void *p) {
  gt_ctx *c = p;
  if (c == NULL) return;
  if (c->prio) gnutls_priority_deinit(c->prio);
  if (c->cred) gnutls_certificate_free_credentials(c->cred);
  if (c->psk_client) gnutls_psk_free_client_credentials(c->psk_client);
  if (c->psk_server) gnutls_psk_free_server_credentials(c->psk_server);
  memset(c->psk_key, 0, sizeof(c->psk_key));
  if (c->ticket_key.data) {
    memset(c->ticket_key.data, 0, c->ticket_key.size);
    gnutls_free(c->ticket_key.data);
  }
  free(c);
}

static tb_status ctx_priority(gt_ctx *c, const tb_config *cfg, char *err) {
  char prio[512];
  tb_status st = build_priority(cfg, prio, sizeof(prio), err);
  if (st != TB_OK) return st;
  const char *pos = NULL;
  int rc = gnutls_priority_init2(&c->prio, prio, &pos, 0);
  if (rc < 0) {
    c->prio = NULL;
    return tb_fail(err, TB_UNSUPPORTED, "priority \"%s\" rejected at \"%s\": %s", prio,
                   pos ? pos : "?", gnutls_strerror(rc));
  }
  return TB_OK;
}

static tb_status ctx_credentials(gt_ctx *c, const tb_config *cfg, char *err) {
  int rc = gnutls_certificate_allocate_credentials(&c->cred);
  if (rc < 0) {
    c->cred = NULL;
    return tb_fail(err, TB_FAILED, "credentials: %s", gnutls_strerror(rc));
  }
  if (cfg->role == TB_SERVER && cfg->chain_file == NULL) {
    return tb_fail(err, TB_FAILED, "a server needs chain_file and key_file");
  }
  if (cfg->chain_file != NULL) {
    /* Loads every certificate of the PEM file as the chain (leaf first): all are sent. */
    rc = gnutls_certificate_set_x509_key_file2(c->cred, cfg->chain_file, cfg->key_file,
                                               GNUTLS_X509_FMT_PEM, NULL, 0);
    if (rc < 0) {
      return tb_fail(err, TB_FAILED, "%s / %s: %s", cfg->chain_file, cfg->key_file,
                     gnutls_strerror(rc));
    }
    c->has_cert = 1;
  }
  int verifies = cfg->role == TB_CLIENT ? cfg->auth != TB_AUTH_NONE : cfg->auth == TB_AUTH_MUTUAL;
  if (verifies) {
    if (cfg->ca_file == NULL) return tb_fail(err, TB_FAILED, "verification needs ca_file");
    rc = gnutls_certificate_set_x509_trust_file(c->cred, cfg->ca_file, GNUTLS_X509_FMT_PEM);
    if (rc <= 0) {
      return tb_fail(err, TB_FAILED, "%s: %s", cfg->ca_file,
                     rc == 0 ? "no certificate found" : gnutls_strerror(rc));
    }
  }
  return TB_OK;
}

static int psk_server_key(gnutls_session_t session, const gnutls_datum_t *username,
                          gnutls_datum_t *key);

/* A PSK run's credentials: the client's key and identity, or the server's callback. GnuTLS
 * binds a TLS 1.3 external PSK to SHA-256 (its credentials' binder_algo). */
static tb_status ctx_psk_credentials(gt_ctx *c, const tb_config *cfg, char *err) {
  if (cfg->tls_version == 13 && strcmp(cfg->psk.hash, "SHA256") != 0) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "GnuTLS binds a TLS 1.3 external PSK to SHA-256, and %s hashes with %s",
                   cfg->suite, cfg->psk.hash);
  }
  if (cfg->psk.key_len > sizeof(c->psk_key) || strlen(cfg->psk.identity) >= sizeof(c->psk_identity))
    return tb_fail(err, TB_FAILED, "the pre-shared key or its identity is too long");
  c->psk = cfg->psk.mode;
  memcpy(c->psk_key, cfg->psk.key, cfg->psk.key_len);
  c->psk_key_len = cfg->psk.key_len;
  snprintf(c->psk_identity, sizeof(c->psk_identity), "%s", cfg->psk.identity);
  int rc;
  if (cfg->role == TB_CLIENT) {
    rc = gnutls_psk_allocate_client_credentials(&c->psk_client);
    if (rc >= 0) {
      gnutls_datum_t id = {(unsigned char *)c->psk_identity, (unsigned)strlen(c->psk_identity)};
      gnutls_datum_t key = {c->psk_key, (unsigned)c->psk_key_len};
      rc = gnutls_psk_set_client_credentials2(c->psk_client, &id, &key, GNUTLS_PSK_KEY_RAW);
    }
  } else {
    rc = gnutls_psk_allocate_server_credentials(&c->psk_server);
    if (rc >= 0) gnutls_psk_set_server_credentials_function2(c->psk_server, psk_server_key);
  }
  if (rc < 0) return tb_fail(err, TB_FAILED, "PSK credentials: %s", gnutls_strerror(rc));
  return TB_OK;
}

/* tb_config.release_buffers needs nothing: GnuTLS allocates a buffer for each record it
 * reads or writes and frees it once the record is consumed or sent, so a connection holds
 * no record buffer between records. */
static tb_status gt_ctx_new(const tb_config *cfg, void **out, char *err) {
  *out = NULL;
  if (cfg->record_size != 0 &&
      (cfg->record_size < GT_MIN_RECORD || cfg->record_size > GT_MAX_RECORD)) {
    return tb_fail(err, TB_UNSUPPORTED, "record_size %zu: GnuTLS accepts %d..%d", cfg->record_size,
                   GT_MIN_RECORD, GT_MAX_RECORD);
  }
  gt_ctx *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->role = cfg->role;
  c->auth = cfg->auth;
  c->resumption = cfg->resumption;
  c->one_key_share = cfg->role == TB_CLIENT && cfg->key_share != NULL;
  c->record_size = cfg->record_size;
  if (cfg->server_name != NULL)
    snprintf(c->server_name, sizeof(c->server_name), "%s", cfg->server_name);
  tb_status st = ctx_priority(c, cfg, err);
  if (st == TB_OK)
    st = cfg->psk.mode != TB_PSK_NONE ? ctx_psk_credentials(c, cfg, err)
                                      : ctx_credentials(c, cfg, err);
  if (st == TB_OK && cfg->role == TB_SERVER && cfg->resumption) {
    int rc = gnutls_session_ticket_key_generate(&c->ticket_key);
    if (rc < 0) st = tb_fail(err, TB_FAILED, "ticket key: %s", gnutls_strerror(rc));
  }
  if (st != TB_OK) {
    gt_ctx_free(c);
    return st;
  }
  *out = c;
  return TB_OK;
}

/* ------------------------------------------------------------------------- connection */

typedef struct gt_conn {
  gt_ctx *ctx;
  gnutls_session_t session;
  tb_transport transport;
  int send_pending; /* gnutls_record_send returned E_AGAIN: its record is buffered */
  int pull_blocked; /* the last pull found the transport empty */
} gt_conn;

/* The server's key for the identity a client names (the session's pointer is its
 * connection); another identity gets none, and the handshake fails. */
static int psk_server_key(gnutls_session_t session, const gnutls_datum_t *username,
                          gnutls_datum_t *key) {
  const gt_conn *c = gnutls_session_get_ptr(session);
  const gt_ctx *x = c->ctx;
  if (username->size != strlen(x->psk_identity) ||
      memcmp(username->data, x->psk_identity, username->size) != 0)
    return -1;
  key->data = gnutls_malloc(x->psk_key_len);
  if (key->data == NULL) return -1;
  memcpy(key->data, x->psk_key, x->psk_key_len);
  key->size = (unsigned)x->psk_key_len;
  return 0;
}

static ssize_t gt_push(gnutls_transport_ptr_t p, const void *buf, size_t len) {
  gt_conn *c = p;
  long n = c->transport.send(c->transport.io, buf, len);
  if (n > 0) return n;
  gnutls_transport_set_errno(c->session, n == 0 || n == TB_IO_WOULD_BLOCK ? EAGAIN : EIO);
  return -1;
}

static ssize_t gt_pull(gnutls_transport_ptr_t p, void *buf, size_t len) {
  gt_conn *c = p;
  long n = c->transport.recv(c->transport.io, buf, len);
  c->pull_blocked = n == TB_IO_WOULD_BLOCK;
  if (n >= 0) return n; /* 0: the peer closed the stream */
  gnutls_transport_set_errno(c->session, n == TB_IO_WOULD_BLOCK ? EAGAIN : EIO);
  return -1;
}

static tb_status gt_close(void *p, char *err) {
  gt_conn *c = p;
  int ret = gnutls_bye(c->session, GNUTLS_SHUT_WR); /* close_notify, no reply awaited */
  if (ret < 0) return tb_fail(err, TB_FAILED, "gnutls_bye: %s", gnutls_strerror(ret));
  return TB_OK;
}

static void gt_conn_free(void *p) {
  gt_conn *c = p;
  if (c == NULL) return;
  if (c->session) gnutls_deinit(c->session);
  free(c);
}

/* Client side: SNI, verification of the server's chain and name, the session to resume. */
static int conn_client(gt_conn *c, const gnutls_datum_t *resume) {
  gt_ctx *x = c->ctx;
  int rc = 0;
  if (x->server_name[0] != '\0') {
    rc =
        gnutls_server_name_set(c->session, GNUTLS_NAME_DNS, x->server_name, strlen(x->server_name));
  }
  if (rc >= 0 && x->auth != TB_AUTH_NONE) {
    gnutls_session_set_verify_cert(c->session, x->server_name[0] ? x->server_name : NULL, 0);
  }
  if (rc >= 0 && resume != NULL)
    rc = gnutls_session_set_data(c->session, resume->data, resume->size);
  return rc;
}

/* Server side: require and verify a client chain (mutual), issue tickets (resumption). */
static int conn_server(gt_conn *c) {
  gt_ctx *x = c->ctx;
  int rc = 0;
  if (x->auth == TB_AUTH_MUTUAL) {
    gnutls_certificate_server_set_request(c->session, GNUTLS_CERT_REQUIRE);
    gnutls_session_set_verify_cert(c->session, NULL, 0);
  }
  if (x->resumption) rc = gnutls_session_ticket_enable_server(c->session, &x->ticket_key);
  return rc;
}

static int conn_setup(gt_conn *c, const gnutls_datum_t *resume) {
  gt_ctx *x = c->ctx;
  int rc = gnutls_priority_set(c->session, x->prio);
  if (rc >= 0 && x->psk == TB_PSK_NONE)
    rc = gnutls_credentials_set(c->session, GNUTLS_CRD_CERTIFICATE, x->cred);
  if (rc >= 0 && x->psk != TB_PSK_NONE) {
    void *cred = x->role == TB_CLIENT ? (void *)x->psk_client : (void *)x->psk_server;
    rc = gnutls_credentials_set(c->session, GNUTLS_CRD_PSK, cred);
    gnutls_session_set_ptr(c->session, c); /* for the server's PSK callback */
  }
  if (rc < 0) return rc;
  if (c->transport.fd >= 0) {
    /* --io fd: GnuTLS's default push and pull (send/recv on the descriptor). */
    gnutls_transport_set_int(c->session, c->transport.fd);
  } else {
    gnutls_transport_set_ptr(c->session, c);
    gnutls_transport_set_push_function(c->session, gt_push);
    gnutls_transport_set_pull_function(c->session, gt_pull);
  }
  /* The handshake timeout is wall-clock based; a slow run (valgrind) must not trip it. */
  gnutls_handshake_set_timeout(c->session, 0);
  if (x->record_size != 0) {
    rc = (int)gnutls_record_set_max_size(c->session, x->record_size);
    if (rc < 0) return rc;
  }
  return x->role == TB_CLIENT ? conn_client(c, resume) : conn_server(c);
}

static tb_status gt_conn_new(void *ctx, const tb_transport *transport, void *session, void **out,
                             char *err) {
  if (transport->bio) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "GnuTLS has no BIO layer: its push/pull callbacks are the only path");
  }
  gt_ctx *x = ctx;
  *out = NULL;
  gt_conn *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->ctx = x;
  c->transport = *transport;
  /* GNUTLS_NONBLOCK: never wait on the transport (no pull_timeout callback is used).
   * GNUTLS_NO_TICKETS: a TLS 1.3 server otherwise sends NewSessionTicket after every
   * handshake with an automatic key, and a client offers the ticket extension. */
  unsigned flags = (x->role == TB_CLIENT ? GNUTLS_CLIENT : GNUTLS_SERVER) | GNUTLS_NONBLOCK;
  if (!x->resumption) flags |= GNUTLS_NO_TICKETS;
  /* A TLS 1.3 client picks its certificate by mapping the CertificateRequest's schemes
   * to key types, and maps rsa_pss_rsae_* to RSA-PSS keys (tls13/certificate_request.c),
   * so an rsaEncryption client cert is never chosen when only rsa_pss_rsae_* is offered
   * and the handshake fails with "Certificate is required". We load exactly one chain:
   * send it regardless (it still signs with an offered scheme). */
  if (x->role == TB_CLIENT && x->has_cert) flags |= GNUTLS_FORCE_CLIENT_CERT;
  /* By default a client sends shares for its two first groups (GNUTLS_KEY_SHARE_TOP2). */
  if (x->one_key_share) flags |= GNUTLS_KEY_SHARE_TOP;
  int rc = gnutls_init(&c->session, flags);
  if (rc < 0) {
    free(c);
    return tb_fail(err, TB_FAILED, "gnutls_init: %s", gnutls_strerror(rc));
  }
  rc = conn_setup(c, session);
  if (rc < 0) {
    gt_conn_free(c);
    return tb_fail(err, TB_FAILED, "session setup: %s", gnutls_strerror(rc));
  }
  *out = c;
  return TB_OK;
}

/* The library's error text, with the alert or the verification status where it says more. */
static tb_status session_error(gt_conn *c, const char *what, int rc, char *err) {
  if (rc == GNUTLS_E_FATAL_ALERT_RECEIVED || rc == GNUTLS_E_WARNING_ALERT_RECEIVED) {
    const char *alert = gnutls_alert_get_name(gnutls_alert_get(c->session));
    return tb_fail(err, TB_FAILED, "%s: %s (%s)", what, gnutls_strerror(rc), alert ? alert : "?");
  }
  if (rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
    gnutls_datum_t text = {NULL, 0};
    unsigned status = gnutls_session_get_verify_cert_status(c->session);
    if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) >= 0) {
      size_t n = strlen((const char *)text.data);
      while (n > 0 && text.data[n - 1] == ' ') text.data[--n] = '\0';
      tb_status st =
          tb_fail(err, TB_FAILED, "%s: %s %s", what, gnutls_strerror(rc), (const char *)text.data);
      gnutls_free(text.data);
      return st;
    }
  }
  return tb_fail(err, TB_FAILED, "%s: %s", what, gnutls_strerror(rc));
}

static tb_status gt_handshake(void *p, char *err) {
  gt_conn *c = p;
  int rc = gnutls_handshake(c->session);
  if (rc == GNUTLS_E_SUCCESS) return TB_OK;
  /* GnuTLS's documented loop: retry while the error is not fatal (EAGAIN, warnings). */
  if (!gnutls_error_is_fatal(rc)) return TB_WANT_IO;
  return session_error(c, "handshake", rc, err);
}

static tb_status gt_write(void *p, const unsigned char *buf, size_t len, size_t *done, char *err) {
  gt_conn *c = p;
  *done = 0;
  /* After E_AGAIN GnuTLS keeps the encrypted record; NULL/0 flushes it and returns the
   * byte count of the interrupted call (the core offers the same bytes again). */
  ssize_t n = c->send_pending ? gnutls_record_send(c->session, NULL, 0)
                              : gnutls_record_send(c->session, buf, len);
  if (n >= 0) {
    c->send_pending = 0;
    *done = (size_t)n;
    return TB_OK;
  }
  if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
    c->send_pending = 1;
    return TB_WANT_IO;
  }
  return session_error(c, "write", (int)n, err);
}

/* Bound on post-handshake messages (tickets, key updates) handled in one read call. */
#define MAX_NON_DATA_RECORDS 16

static tb_status gt_read(void *p, unsigned char *buf, size_t len, size_t *done, char *err) {
  gt_conn *c = p;
  *done = 0;
  /* gnutls_record_recv returns E_AGAIN also after consuming a post-handshake message
   * (TLS 1.3 NewSessionTicket, record.c RECV_STATE_ASYNC_HANDSHAKE) although more records
   * may be waiting: only an empty transport means "want I/O". */
  for (int i = 0; i < MAX_NON_DATA_RECORDS; i++) {
    c->pull_blocked = 0;
    ssize_t n = gnutls_record_recv(c->session, buf, len);
    if (n > 0) {
      *done = (size_t)n;
      return TB_OK;
    }
    if (n == 0) return TB_CLOSED;
    if (n != GNUTLS_E_AGAIN && n != GNUTLS_E_INTERRUPTED) {
      return session_error(c, "read", (int)n, err);
    }
    if (c->pull_blocked) return TB_WANT_IO;
  }
  return TB_WANT_IO;
}

/* ------------------------------------------------------------------------- read back */

static void copy_name(char *dst, size_t size, const char *src) {
  snprintf(dst, size, "%s", src ? src : "");
}

static void negotiated_group(gt_conn *c, int tls13, int resumed, tb_negotiated *out) {
  /* A resumed TLS 1.2 handshake runs no key exchange, but gnutls_group_get() reports the
   * group restored from the session data: report none. A resumed TLS 1.3 handshake from a
   * ticket always uses psk_dhe_ke in GnuTLS when no PSK kx is in the priority
   * (ext/psk_ke_modes.c), so its group is a fresh key exchange. */
  if (resumed && !tls13) return;
  gnutls_group_t g = gnutls_group_get(c->session);
  if (g == GNUTLS_GROUP_INVALID) return;
  const char *name = gnutls_group_get_name(g);
  const group_name *gn = name ? group_by_gnutls(name) : NULL;
  copy_name(out->group, sizeof(out->group), gn ? gn->tb : name);
}

static void negotiated_sigalg(gt_conn *c, int resumed, tb_negotiated *out) {
  /* gnutls_sign_algorithm_get() is the server's signature on both sides; a resumed
   * handshake keeps the value of the original one (session data) but signs nothing. */
  if (resumed) return;
  gnutls_kx_algorithm_t kx = gnutls_kx_get(c->session);
  if (kx == GNUTLS_KX_RSA || psk_kx(kx)) return; /* static RSA and PSK sign nothing */
  int s = gnutls_sign_algorithm_get(c->session);
  if (s == GNUTLS_SIGN_UNKNOWN) return;
  const sig_name *sn = sig_by_gnutls((gnutls_sign_algorithm_t)s);
  copy_name(out->sigalg, sizeof(out->sigalg),
            sn ? sn->iana : gnutls_sign_get_name((gnutls_sign_algorithm_t)s));
}

static void negotiated_client_sigalg(gt_conn *c, int resumed, tb_negotiated *out) {
  /* gnutls_sign_algorithm_get_client() is the client's CertificateVerify on both sides:
   * the client sets it when it picks its certificate's scheme (TLS 1.3: on the
   * CertificateRequest; TLS 1.2: when it signs), the server when it verifies. A resumed
   * handshake keeps the original one's value (session data) but signs nothing. Static RSA
   * suites still carry a client's CertificateVerify. */
  if (resumed) return;
  int s = gnutls_sign_algorithm_get_client(c->session);
  if (s == GNUTLS_SIGN_UNKNOWN || s < 0) return;
  const sig_name *sn = sig_by_gnutls((gnutls_sign_algorithm_t)s);
  copy_name(out->client_sigalg, sizeof(out->client_sigalg),
            sn ? sn->iana : gnutls_sign_get_name((gnutls_sign_algorithm_t)s));
}

static int peer_verified(gt_conn *c) {
  /* vc_status is reset to (unsigned)-1 at each handshake and set only by the automatic
   * verification of gnutls_session_set_verify_cert(). */
  unsigned int n = 0;
  const gnutls_datum_t *peers = gnutls_certificate_get_peers(c->session, &n);
  return gnutls_session_get_verify_cert_status(c->session) == 0 && peers != NULL && n > 0;
}

static tb_status gt_negotiated(void *p, tb_negotiated *out, char *err) {
  gt_conn *c = p;
  memset(out, 0, sizeof(*out));
  gnutls_protocol_t v = gnutls_protocol_get_version(c->session);
  if (v == GNUTLS_TLS1_2) {
    copy_name(out->version, sizeof(out->version), "1.2");
  } else if (v == GNUTLS_TLS1_3) {
    copy_name(out->version, sizeof(out->version), "1.3");
  } else {
    copy_name(out->version, sizeof(out->version), gnutls_protocol_get_name(v));
  }
  /* gnutls_ciphersuite_get() (3.7.3+) returns the canonical (IANA) name. */
  const char *suite = gnutls_ciphersuite_get(c->session);
  if (suite == NULL) return tb_fail(err, TB_FAILED, "no cipher suite negotiated");
  copy_name(out->suite, sizeof(out->suite), suite);
  out->resumed = gnutls_session_is_resumed(c->session) != 0;
  negotiated_group(c, v == GNUTLS_TLS1_3, out->resumed, out);
  negotiated_sigalg(c, out->resumed, out);
  negotiated_client_sigalg(c, out->resumed, out);
  out->peer_verified = peer_verified(c);
  /* What keyed a full handshake: the key exchange GnuTLS reports, TLS 1.3's included (PSK,
   * ECDHE-PSK or DHE-PSK when a pre-shared key was used). */
  gnutls_kx_algorithm_t kx = gnutls_kx_get(c->session);
  if (!out->resumed && psk_kx(kx)) out->psk = kx == GNUTLS_KX_PSK ? TB_PSK_KE : TB_PSK_DHE;
  return TB_OK;
}

/* ------------------------------------------------------------------------- sessions */

static tb_status gt_session_get(void *p, void **out, char *err) {
  gt_conn *c = p;
  *out = NULL;
  unsigned flags = gnutls_session_get_flags(c->session);
  /* Without a ticket get_data2 returns dummy data (TLS 1.3) or a session only a server
   * cache could resume (TLS 1.2; there is none): neither would resume. */
  if (!(flags & GNUTLS_SFLAGS_SESSION_TICKET) && !gnutls_session_is_resumed(c->session)) {
    return tb_fail(err, TB_FAILED, "no session ticket received from the server");
  }
  gnutls_datum_t *d = calloc(1, sizeof(*d));
  if (d == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  int rc = gnutls_session_get_data2(c->session, d);
  if (rc < 0) {
    free(d);
    return tb_fail(err, TB_FAILED, "gnutls_session_get_data2: %s", gnutls_strerror(rc));
  }
  *out = d;
  return TB_OK;
}

static void gt_session_free(void *p) {
  gnutls_datum_t *d = p;
  if (d == NULL) return;
  gnutls_free(d->data);
  free(d);
}

/* The library's TLS, as the scenarios use it. */
static const tb_tls_class kTls = {
    .ctx_new = gt_ctx_new,
    .ctx_free = gt_ctx_free,
    .conn_new = gt_conn_new,
    .conn_free = gt_conn_free,
    .handshake = gt_handshake,
    .write = gt_write,
    .read = gt_read,
    .close = gt_close,
    .negotiated = gt_negotiated,
    .session_get = gt_session_get,
    .session_free = gt_session_free,
};

/* ------------------------------------------------------------------------- AEAD */

static tb_status gt_aead_new(tb_aead_alg alg, const unsigned char *key, size_t key_len, void **out,
                             char *err) {
  *out = NULL;
  gnutls_cipher_algorithm_t a;
  switch (alg) {
    case TB_AES_128_GCM:
      a = GNUTLS_CIPHER_AES_128_GCM;
      break;
    case TB_AES_256_GCM:
      a = GNUTLS_CIPHER_AES_256_GCM;
      break;
    case TB_CHACHA20_POLY1305:
      a = GNUTLS_CIPHER_CHACHA20_POLY1305;
      break;
    default:
      return tb_fail(err, TB_UNSUPPORTED, "unknown AEAD %d", (int)alg);
  }
  if (key_len != gnutls_cipher_get_key_size(a)) {
    return tb_fail(err, TB_FAILED, "%s needs a %zu-byte key, got %zu", gnutls_cipher_get_name(a),
                   gnutls_cipher_get_key_size(a), key_len);
  }
  gnutls_datum_t k = {(unsigned char *)key, (unsigned int)key_len};
  gnutls_aead_cipher_hd_t h;
  int rc = gnutls_aead_cipher_init(&h, a, &k);
  if (rc < 0) {
    tb_status st = rc == GNUTLS_E_UNKNOWN_CIPHER_TYPE ? TB_UNSUPPORTED : TB_FAILED;
    return tb_fail(err, st, "%s: %s", gnutls_cipher_get_name(a), gnutls_strerror(rc));
  }
  *out = h;
  return TB_OK;
}

static tb_status gt_aead_seal(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                              const unsigned char *ad, size_t ad_len, const unsigned char *in,
                              size_t len, unsigned char *out, char *err) {
  size_t out_len = len + TB_AEAD_TAG_LEN;
  int rc = gnutls_aead_cipher_encrypt(aead, nonce, TB_AEAD_NONCE_LEN, ad, ad_len, TB_AEAD_TAG_LEN,
                                      in, len, out, &out_len);
  if (rc < 0) return tb_fail(err, TB_FAILED, "seal: %s", gnutls_strerror(rc));
  if (out_len != len + TB_AEAD_TAG_LEN) {
    return tb_fail(err, TB_FAILED, "seal wrote %zu bytes, expected %zu", out_len,
                   len + TB_AEAD_TAG_LEN);
  }
  return TB_OK;
}

static tb_status gt_aead_open(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                              const unsigned char *ad, size_t ad_len, const unsigned char *in,
                              size_t len, unsigned char *out, char *err) {
  /* len is the plaintext length; `in` holds len bytes of ciphertext and the tag. */
  size_t out_len = len;
  int rc = gnutls_aead_cipher_decrypt(aead, nonce, TB_AEAD_NONCE_LEN, ad, ad_len, TB_AEAD_TAG_LEN,
                                      in, len + TB_AEAD_TAG_LEN, out, &out_len);
  if (rc < 0) return tb_fail(err, TB_FAILED, "open: %s", gnutls_strerror(rc));
  if (out_len != len) {
    return tb_fail(err, TB_FAILED, "open wrote %zu bytes, expected %zu", out_len, len);
  }
  return TB_OK;
}

static void gt_aead_free(void *aead) {
  if (aead != NULL) gnutls_aead_cipher_deinit(aead);
}

/* The library's own AEAD API, as the aead scenario uses it. */
static const tb_aead_class kAead = {
    .create = gt_aead_new,
    .seal = gt_aead_seal,
    .open = gt_aead_open,
    .free = gt_aead_free,
};

/* ------------------------------------------------------------------------- info */

#define MAX_OPTIONS 32

static const char *g_versions[3];
static const char *g_suites[128];
static const char *g_groups[N_GROUPS + 1];
static const char *g_sigalgs[N_SIGS + 1];
static const char *g_options[MAX_OPTIONS + 1];
static char g_option_text[MAX_OPTIONS][160];

static void info_versions(void) {
  const int *list = (const int *)gnutls_protocol_list();
  size_t n = 0;
  if (in_list(list, GNUTLS_TLS1_2)) g_versions[n++] = "1.2";
  if (in_list(list, GNUTLS_TLS1_3)) g_versions[n++] = "1.3";
  g_versions[n] = NULL;
}

/* The certificate-based and PSK suites of GnuTLS's table that this build has, under the
 * core's names. */
static void info_suites(void) {
  size_t n = 0;
  unsigned char cs[2];
  gnutls_kx_algorithm_t kx;
  gnutls_cipher_algorithm_t cipher;
  gnutls_mac_algorithm_t mac;
  gnutls_protocol_t min;
  for (size_t i = 0; gnutls_cipher_suite_info(i, cs, &kx, &cipher, &mac, &min) != NULL &&
                     n + 1 < sizeof(g_suites) / sizeof(g_suites[0]);
       i++) {
    const tb_name *name = tb_name_of_code(tb_suite_names, (unsigned)(cs[0] << 8 | cs[1]));
    suite_info si;
    if (name != NULL && suite_lookup(cs, &si) && (certificate_kx(si.kx) || psk_kx(si.kx)))
      g_suites[n++] = name->name;
  }
  g_suites[n] = NULL;
}

static void info_groups(void) {
  size_t n = 0;
  for (size_t i = 0; i < N_GROUPS; i++) {
    if (group_available(gnutls_group_get_id(kGroups[i].gnutls))) g_groups[n++] = kGroups[i].tb;
  }
  g_groups[n] = NULL;
}

static void info_sigalgs(void) {
  size_t n = 0;
  for (size_t i = 0; i < N_SIGS; i++) {
    if (sign_available(kSigs[i].tls12) || sign_available(kSigs[i].tls13)) {
      g_sigalgs[n++] = kSigs[i].iana;
    }
  }
  g_sigalgs[n] = NULL;
}

/* gnutls_get_library_config() (3.7.3+): the build's sonames, features and system paths. */
static void info_options(void) {
  size_t n = 0;
  snprintf(g_option_text[n], sizeof(g_option_text[n]), "fips140-mode=%d",
           gnutls_fips140_mode_enabled() != 0);
  g_options[n] = g_option_text[n];
  n++;
  for (const gnutls_library_config_st *e = gnutls_get_library_config();
       e != NULL && e->name != NULL && n < MAX_OPTIONS; e++, n++) {
    snprintf(g_option_text[n], sizeof(g_option_text[n]), "%s=%s", e->name,
             e->value ? e->value : "");
    g_options[n] = g_option_text[n];
  }
  g_options[n] = NULL;
}

static tb_status gt_info(tb_info *out, char *err) {
  (void)err;
  memset(out, 0, sizeof(*out));
  copy_name(out->version, sizeof(out->version), gnutls_check_version(NULL));
  info_versions();
  info_suites();
  info_groups();
  info_sigalgs();
  info_options();
  out->build_options = g_options;
  out->versions = g_versions;
  out->suites = g_suites;
  out->groups = g_groups;
  out->sigalgs = g_sigalgs;
  return TB_OK;
}

/* ------------------------------------------------------------------------- randomness */

/* --deterministic: GnuTLS takes every random value from one registrable generator, which
 * gnutls_crypto_rnd_register replaces before gnutls_global_init. Its declaration and that of
 * the table are in lib/crypto-backend.h (not installed) and the function is exported only
 * by a static libgnutls (the machine's shared one keeps it internal): it is named weakly,
 * so that the shared build links and says it cannot. The replacement hands out the stream
 * itself: the work of GnuTLS's own generator (ChaCha) is not counted. */
typedef struct gt_rnd_ops {
  int (*init)(void **ctx);
  int (*rnd)(void *ctx, int level, void *data, size_t datasize);
  void (*rnd_refresh)(void *ctx);
  void (*deinit)(void *ctx);
  int (*self_test)(void);
} gt_rnd_ops;

extern int gnutls_crypto_rnd_register(int priority, const gt_rnd_ops *ops) __attribute__((weak));

static tb_random_fn fixed_random;

static int fixed_rnd(void *ctx, int level, void *data, size_t len) {
  (void)ctx, (void)level;
  fixed_random(data, len);
  return 0;
}

static const gt_rnd_ops kFixedRnd = {.rnd = fixed_rnd};

static tb_status gt_derandomize(tb_random_fn fill, tb_randomness *out, char *err) {
  if (gnutls_crypto_rnd_register == NULL) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "this (shared) libgnutls does not export gnutls_crypto_rnd_register, GnuTLS's "
                   "hook for its random generator");
  }
  fixed_random = fill;
  /* The lowest priority wins; GnuTLS's own generator has none (INT_MAX). */
  int rc = gnutls_crypto_rnd_register(0, &kFixedRnd);
  if (rc < 0) return tb_fail(err, TB_FAILED, "gnutls_crypto_rnd_register: %s", gnutls_strerror(rc));
  out->seeded = 1;
  snprintf(out->how, sizeof(out->how),
           "GnuTLS's random generator replaced by the stream (gnutls_crypto_rnd_register)");
  return TB_OK;
}

/* ------------------------------------------------------------------------- global */

static tb_status gt_global_init(char *err) {
  /* Explicit: a static libgnutls has no constructor that would call it (configure warns). */
  int rc = gnutls_global_init();
  if (rc < 0) return tb_fail(err, TB_FAILED, "gnutls_global_init: %s", gnutls_strerror(rc));
  return TB_OK;
}

static void gt_global_cleanup(void) { gnutls_global_deinit(); }

const tb_adapter tb_adapter_impl = {
    .name = "gnutls",
    .global_init = gt_global_init,
    .global_cleanup = gt_global_cleanup,
    .info = gt_info,
    .derandomize = gt_derandomize,
    .tls = &kTls,
    .aead = &kAead,
};
