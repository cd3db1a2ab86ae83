/*
 * The s2n-tls adapter (s2n-tls 1.7 over the pinned AWS-LC's libcrypto).
 *
 * The offer, pinned. s2n-tls chooses versions, suites, groups and signature schemes by
 * security policy, and its public API offers only named policies ("default_tls13",
 * "20240501", ...), each a list: with one on both sides the server picks its first choice,
 * whatever the run asked. The adapter therefore builds one policy per context from s2n's
 * own tables (its cipher suites, curves, KEM groups and signature schemes: internal
 * symbols of libs2n.a, declared in the internal headers the recipe installs) holding
 * exactly the asked suite, group and scheme, and sets it with s2n_config_set_security_policy
 * (tls/policy/s2n_policy_feature.h, the setter s2n's own named policies go through, which
 * validates the policy against the config's certificates). TLS 1.2 is asked by a TLS 1.2
 * suite alone (a policy without TLS 1.3 suites never offers 1.3, minimum version 1.2); TLS
 * 1.3 by a TLS 1.3 suite and minimum version 1.3. s2n-tls has one signature list for both
 * directions, so a client scheme other than the server's (--fault client-sigalg) is
 * unsupported.
 *
 * Not offered by s2n-tls 1.7 (unsupported, with the reason): Ed25519 and Ed448 signatures,
 * finite-field groups in TLS 1.3, TLS 1.2 PSK suites, TLS 1.3 psk_ke (s2n-tls does only
 * psk_dhe_ke), a chosen record size (s2n sizes records itself), its own BIO layer (--io bio),
 * and an AEAD API of its own (its records use AWS-LC's, measured by the aws-lc line).
 *
 * I/O. s2n_connection_set_send_cb / recv_cb carry tlsbench's transport (a transport that
 * would block is errno EAGAIN, which s2n reports as S2N_ERR_T_BLOCKED: TB_WANT_IO); with
 * --io fd s2n does its own socket I/O (s2n_connection_set_fd).
 *
 * Memory. s2n's default allocator rounds every allocation up to whole pages and mlock()s
 * them (unless S2N_DONT_MLOCK is set); the adapter installs s2n's documented alternative,
 * plain malloc/free through s2n_mem_set_callbacks, as s2n does itself with S2N_DONT_MLOCK,
 * so that heap figures are the bytes s2n asked for.
 *
 * Read-back. Version (s2n_connection_get_actual_protocol_version), suite
 * (s2n_connection_get_cipher_iana_value), group (s2n_connection_get_kem_group_name, else
 * s2n_connection_get_curve), signature schemes (s2n_connection_get_selected_{,client_cert_}
 * signature_algorithm and _digest_algorithm, mapped to the IANA scheme), resumption
 * (s2n_connection_is_session_resumed), the external PSK (s2n_connection_get_negotiated_psk_
 * identity_length). s2n fails a handshake whose chain does not verify, so a side that
 * verifies and completed a full handshake with a peer chain verified it.
 */
/* s2n's internal headers expect its prelude first (feature macros, as its own build has). */
#include "utils/s2n_prelude.h"

#include <errno.h>
#include <s2n.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/s2n_ecc_evp.h"
#include "tls/policy/s2n_policy_feature.h"
#include "tls/s2n_cipher_preferences.h"
#include "tls/s2n_cipher_suites.h"
#include "tls/s2n_kem.h"
#include "tls/s2n_kem_preferences.h"
#include "tls/s2n_security_policies.h"
#include "tls/s2n_signature_scheme.h"
#include "tlsbench/driver.h"
#include "tlsbench/names.h"

#ifndef TB_S2N_VERSION
#define TB_S2N_VERSION "unknown"
#endif

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------- names */

/* Every suite s2n-tls implements that tlsbench names (RC4, 3DES and the null suite left
 * out), by s2n's own definition (its IANA value is the code point). */
static struct s2n_cipher_suite *const kSuites[] = {
    &s2n_tls13_aes_128_gcm_sha256,
    &s2n_tls13_aes_256_gcm_sha384,
    &s2n_tls13_chacha20_poly1305_sha256,
    &s2n_ecdhe_ecdsa_with_aes_128_gcm_sha256,
    &s2n_ecdhe_ecdsa_with_aes_256_gcm_sha384,
    &s2n_ecdhe_ecdsa_with_chacha20_poly1305_sha256,
    &s2n_ecdhe_rsa_with_aes_128_gcm_sha256,
    &s2n_ecdhe_rsa_with_aes_256_gcm_sha384,
    &s2n_ecdhe_rsa_with_chacha20_poly1305_sha256,
    &s2n_ecdhe_ecdsa_with_aes_128_cbc_sha256,
    &s2n_ecdhe_ecdsa_with_aes_256_cbc_sha384,
    &s2n_ecdhe_rsa_with_aes_128_cbc_sha256,
    &s2n_ecdhe_rsa_with_aes_256_cbc_sha384,
    &s2n_ecdhe_ecdsa_with_aes_128_cbc_sha,
    &s2n_ecdhe_ecdsa_with_aes_256_cbc_sha,
    &s2n_ecdhe_rsa_with_aes_128_cbc_sha,
    &s2n_ecdhe_rsa_with_aes_256_cbc_sha,
    &s2n_dhe_rsa_with_aes_128_gcm_sha256,
    &s2n_dhe_rsa_with_aes_256_gcm_sha384,
    &s2n_dhe_rsa_with_chacha20_poly1305_sha256,
    &s2n_dhe_rsa_with_aes_128_cbc_sha256,
    &s2n_dhe_rsa_with_aes_256_cbc_sha256,
    &s2n_dhe_rsa_with_aes_128_cbc_sha,
    &s2n_dhe_rsa_with_aes_256_cbc_sha,
    &s2n_rsa_with_aes_128_gcm_sha256,
    &s2n_rsa_with_aes_256_gcm_sha384,
    &s2n_rsa_with_aes_128_cbc_sha256,
    &s2n_rsa_with_aes_256_cbc_sha256,
    &s2n_rsa_with_aes_128_cbc_sha,
    &s2n_rsa_with_aes_256_cbc_sha,
};

/* The signature schemes s2n-tls implements that tlsbench names (no Ed25519 in s2n 1.7). */
static const struct s2n_signature_scheme *const kSchemes[] = {
    &s2n_rsa_pss_rsae_sha256, &s2n_rsa_pss_rsae_sha384, &s2n_rsa_pss_rsae_sha512,
    &s2n_rsa_pss_pss_sha256,  &s2n_rsa_pss_pss_sha384,  &s2n_rsa_pss_pss_sha512,
    &s2n_ecdsa_sha256,        &s2n_ecdsa_sha384,        &s2n_ecdsa_sha512,
    &s2n_rsa_pkcs1_sha256,    &s2n_rsa_pkcs1_sha384,    &s2n_rsa_pkcs1_sha512,
    &s2n_rsa_pkcs1_sha1,      &s2n_ecdsa_sha1,
};

static struct s2n_cipher_suite *find_suite(unsigned code) {
  for (size_t i = 0; i < COUNT(kSuites); i++) {
    const uint8_t *v = kSuites[i]->iana_value;
    if (((unsigned)v[0] << 8 | v[1]) == code) return kSuites[i];
  }
  return NULL;
}

static const struct s2n_signature_scheme *find_scheme(unsigned code) {
  for (size_t i = 0; i < COUNT(kSchemes); i++)
    if (kSchemes[i]->iana_value == code) return kSchemes[i];
  return NULL;
}

static const struct s2n_ecc_named_curve *find_curve(unsigned code) {
  for (size_t i = 0; i < s2n_all_supported_curves_list_len; i++)
    if (s2n_all_supported_curves_list[i]->iana_id == code) return s2n_all_supported_curves_list[i];
  return NULL;
}

static const struct s2n_kem_group *find_kem_group(unsigned code) {
  for (size_t i = 0; i < S2N_KEM_GROUPS_COUNT; i++)
    if (ALL_SUPPORTED_KEM_GROUPS[i]->iana_id == code) return ALL_SUPPORTED_KEM_GROUPS[i];
  return NULL;
}

static void code_name(const tb_name *table, unsigned code, char out[TB_NAME_LEN]) {
  const tb_name *n = tb_name_of_code(table, code);
  if (n != NULL)
    snprintf(out, TB_NAME_LEN, "%s", n->name);
  else
    snprintf(out, TB_NAME_LEN, "0x%04x", code);
}

/* The IANA SignatureScheme of s2n's (signature algorithm, hash) pair; 0: none or unknown. */
static unsigned scheme_code(s2n_tls_signature_algorithm sig, s2n_tls_hash_algorithm hash) {
  unsigned h = hash == S2N_TLS_HASH_SHA1     ? 2
               : hash == S2N_TLS_HASH_SHA256 ? 4
               : hash == S2N_TLS_HASH_SHA384 ? 5
               : hash == S2N_TLS_HASH_SHA512 ? 6
                                             : 0;
  if (h == 0) return 0;
  switch (sig) {
    case S2N_TLS_SIGNATURE_RSA:
      return h << 8 | 1;
    case S2N_TLS_SIGNATURE_ECDSA:
      return h << 8 | 3;
    case S2N_TLS_SIGNATURE_RSA_PSS_RSAE:
      return h == 2 ? 0 : 0x0800 | (h - 4 + 4); /* 0x0804..0x0806 */
    case S2N_TLS_SIGNATURE_RSA_PSS_PSS:
      return h == 2 ? 0 : 0x0800 | (h - 4 + 9); /* 0x0809..0x080b */
    default:
      return 0;
  }
}

/* s2n's group name (s2n_connection_get_curve, _get_kem_group_name) as its IANA code. */
static unsigned group_code(const char *name) {
  if (name == NULL) return 0;
  for (size_t i = 0; i < s2n_all_supported_curves_list_len; i++)
    if (strcmp(s2n_all_supported_curves_list[i]->name, name) == 0)
      return s2n_all_supported_curves_list[i]->iana_id;
  for (size_t i = 0; i < S2N_KEM_GROUPS_COUNT; i++)
    if (strcmp(ALL_SUPPORTED_KEM_GROUPS[i]->name, name) == 0)
      return ALL_SUPPORTED_KEM_GROUPS[i]->iana_id;
  return 0;
}

static tb_status s2n_fail_(char *err, const char *what) {
  int e = s2n_errno;
  return tb_fail(err, TB_FAILED, "%s: %s (%s)", what, s2n_strerror(e, "EN"),
                 s2n_strerror_debug(e, "EN"));
}

/* ------------------------------------------------------------------------- contexts */

typedef struct s2_ctx {
  tb_role role;
  tb_auth auth;
  int resumption;
  int release_buffers;
  char server_name[256]; /* client: SNI and the name s2n verifies the server's chain for */
  struct s2n_config *config;
  struct s2n_cert_chain_and_key *chain;
  /* The policy and the lists it points to (one entry each, two curves with a key_share). */
  struct s2n_security_policy policy;
  struct s2n_cipher_suite *suites[1];
  struct s2n_cipher_preferences ciphers;
  const struct s2n_signature_scheme *schemes[1];
  struct s2n_signature_preferences signatures;
  const struct s2n_ecc_named_curve *curves[2];
  struct s2n_ecc_preferences ecc;
  const struct s2n_kem_group *kem_groups[1];
  struct s2n_kem_preferences kem;
  /* An external PSK run: the key, given to each connection (s2n keeps PSKs per connection). */
  tb_psk_mode psk_mode;
  unsigned char psk_key[64];
  size_t psk_key_len;
  char psk_identity[128];
  s2n_psk_hmac psk_hmac;
} s2_ctx;

static void s2_ctx_free(void *p) {
  s2_ctx *c = p;
  if (c == NULL) return;
  if (c->config != NULL) s2n_config_free(c->config);
  if (c->chain != NULL) s2n_cert_chain_and_key_free(c->chain);
  free(c);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  char *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
      if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
      } else {
        buf[n] = '\0';
      }
    }
  }
  fclose(f);
  return buf;
}

/* The policy holding exactly the asked offer (see the top of this file). */
static tb_status build_policy(s2_ctx *c, const tb_config *cfg, char *err) {
  const tb_name *s = tb_name_find(tb_suite_names, cfg->suite);
  struct s2n_cipher_suite *suite = s != NULL ? find_suite(s->code) : NULL;
  if (suite == NULL) return tb_fail(err, TB_UNSUPPORTED, "s2n-tls has no suite %s", cfg->suite);
  if (!suite->available)
    return tb_fail(err, TB_UNSUPPORTED, "%s is not available with this libcrypto", cfg->suite);
  /* Broken with this libcrypto, so refused: s2n-tls 1.7.6 turns padding off before it sets a
   * CBC decryption key (EVP_CIPHER_CTX_set_padding(ctx, 0), then EVP_DecryptInit_ex with the
   * cipher: crypto/s2n_cbc_cipher_aes.c, s2n_composite_cipher_aes_sha.c), and AWS-LC 5.12's
   * EVP_CipherInit_ex clears the context's flags when it is given a cipher, so padding stays
   * on; its EVP_DecryptUpdate then withholds a record's last block (for EVP_DecryptFinal) and
   * does not write it to the output. s2n ignores the length it returns and reads the
   * padding and MAC from that block (the composite AES-SHA cipher is handed the record less
   * that block): every CBC record fails to decrypt. Encryption withholds nothing, so peers
   * read s2n's records and s2n fails on theirs. tests/libraries/test_s2n.py checks the
   * pinned AWS-LC still does this. */
  if (strstr(cfg->suite, "_CBC_") != NULL) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "no suite '%s' here: s2n-tls 1.7.6 cannot decrypt TLS 1.2 CBC records over "
                   "this AWS-LC (it turns padding off before EVP_DecryptInit_ex, which clears "
                   "that, so EVP_DecryptUpdate withholds each record's last block)",
                   cfg->suite);
  }
  if (s->tls != cfg->tls_version)
    return tb_fail(err, TB_UNSUPPORTED, "%s is not a TLS 1.%d suite", cfg->suite,
                   cfg->tls_version % 10);
  c->suites[0] = suite;
  c->ciphers = (struct s2n_cipher_preferences){.count = 1, .suites = c->suites};

  size_t nschemes = 0;
  if (cfg->sigalg != NULL) {
    if (cfg->client_sigalg != NULL && strcmp(cfg->client_sigalg, cfg->sigalg) != 0) {
      return tb_fail(err, TB_UNSUPPORTED,
                     "s2n-tls has one signature scheme list for both directions: it cannot "
                     "pin the client's signature scheme (%s) apart from the server's (%s)",
                     cfg->client_sigalg, cfg->sigalg);
    }
    const tb_name *n = tb_name_find(tb_sigalg_names, cfg->sigalg);
    const struct s2n_signature_scheme *scheme = n != NULL ? find_scheme(n->code) : NULL;
    if (scheme == NULL)
      return tb_fail(err, TB_UNSUPPORTED, "s2n-tls 1.7 has no signature scheme %s", cfg->sigalg);
    c->schemes[0] = scheme;
    nschemes = 1;
  }
  c->signatures = (struct s2n_signature_preferences){.count = (uint8_t)nschemes,
                                                     .signature_schemes = c->schemes};

  size_t ncurves = 0;
  size_t nkem = 0;
  const char *groups[2] = {cfg->key_share, cfg->group};
  for (size_t i = 0; i < 2; i++) {
    if (groups[i] == NULL) continue;
    const tb_name *g = tb_name_find(tb_group_names, groups[i]);
    const struct s2n_ecc_named_curve *curve = g != NULL ? find_curve(g->code) : NULL;
    const struct s2n_kem_group *kg = g != NULL ? find_kem_group(g->code) : NULL;
    if (curve != NULL) {
      c->curves[ncurves++] = curve;
    } else if (kg != NULL && cfg->tls_version == 13) {
      if (!s2n_kem_group_is_available(kg))
        return tb_fail(err, TB_UNSUPPORTED, "%s is not available with this libcrypto", groups[i]);
      if (i == 0) {
        return tb_fail(err, TB_UNSUPPORTED,
                       "s2n-tls sends a key share for its first KEM group and its first curve "
                       "together: it cannot offer %s as the only key share",
                       groups[i]);
      }
      c->kem_groups[nkem++] = kg;
    } else if (strncmp(groups[i], "ffdhe", 5) == 0) {
      return tb_fail(err, TB_UNSUPPORTED,
                     "s2n-tls has no named finite-field groups (TLS 1.2 DHE uses the server's "
                     "own parameters; TLS 1.3 has none)");
    } else {
      return tb_fail(err, TB_UNSUPPORTED, "s2n-tls has no group %s in TLS 1.%d", groups[i],
                     cfg->tls_version % 10);
    }
  }
  if (cfg->key_share != NULL && (ncurves != 2 || cfg->role != TB_CLIENT)) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "a HelloRetryRequest run needs two curves here (s2n-tls shares a KEM group's "
                   "key together with a curve's)");
  }
  c->ecc = (struct s2n_ecc_preferences){.count = (uint8_t)ncurves, .ecc_curves = c->curves};
  if (nkem > 0) {
    /* (s2n's struct has const members: it is built whole and copied.) */
    struct s2n_kem_preferences kem = {
        .kem_count = 0,
        .kems = NULL,
        .tls13_kem_group_count = (uint8_t)nkem,
        .tls13_kem_groups = c->kem_groups,
        .tls13_pq_hybrid_draft_revision = 5,
    };
    memcpy(&c->kem, &kem, sizeof(kem));
  } else {
    memcpy(&c->kem, &kem_preferences_null, sizeof(c->kem));
  }
  struct s2n_security_policy policy = {
      .minimum_protocol_version = cfg->tls_version == 13 ? S2N_TLS13 : S2N_TLS12,
      .cipher_preferences = &c->ciphers,
      .kem_preferences = &c->kem,
      .signature_preferences = &c->signatures,
      .certificate_signature_preferences = NULL,
      .ecc_preferences = &c->ecc,
  };
  memcpy(&c->policy, &policy, sizeof(policy));
  return TB_OK;
}

static uint8_t any_client_name(const char *host_name, size_t host_name_len, void *data) {
  (void)host_name, (void)host_name_len, (void)data;
  return 1;
}

static tb_status s2_ctx_new(const tb_config *cfg, void **out, char *err) {
  *out = NULL;
  if (cfg->tls_version != 12 && cfg->tls_version != 13)
    return tb_fail(err, TB_UNSUPPORTED, "TLS 1.%d is not run here", cfg->tls_version % 10);
  if (cfg->record_size != 0) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "s2n-tls sizes its records itself (16 KiB, or about 1.4 KB with "
                   "s2n_connection_prefer_low_latency): no record size can be chosen");
  }
  if (cfg->psk.mode != TB_PSK_NONE && cfg->tls_version != 13)
    return tb_fail(err, TB_UNSUPPORTED, "s2n-tls has no TLS 1.2 PSK suites");
  if (cfg->psk.mode == TB_PSK_KE)
    return tb_fail(err, TB_UNSUPPORTED, "s2n-tls does TLS 1.3 psk_dhe_ke only (no psk_ke)");
  s2_ctx *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->role = cfg->role;
  c->auth = cfg->auth;
  c->resumption = cfg->resumption;
  c->release_buffers = cfg->release_buffers;
  if (cfg->server_name != NULL)
    snprintf(c->server_name, sizeof(c->server_name), "%s", cfg->server_name);
  tb_status st = build_policy(c, cfg, err);
  if (st != TB_OK) goto fail;
  /* Minimal: no system trust store, no default policy's certificates loaded. */
  c->config = s2n_config_new_minimal();
  if (c->config == NULL) {
    st = s2n_fail_(err, "s2n_config_new_minimal");
    goto fail;
  }
  if (cfg->chain_file != NULL && cfg->key_file != NULL) {
    char *chain = read_file(cfg->chain_file), *key = read_file(cfg->key_file);
    int ok = chain != NULL && key != NULL;
    if (ok) {
      c->chain = s2n_cert_chain_and_key_new();
      ok = c->chain != NULL &&
           s2n_cert_chain_and_key_load_pem(c->chain, chain, key) == S2N_SUCCESS &&
           s2n_config_add_cert_chain_and_key_to_store(c->config, c->chain) == S2N_SUCCESS;
    }
    free(chain);
    free(key);
    if (!ok) {
      st = chain == NULL || key == NULL
               ? tb_fail(err, TB_FAILED, "cannot read %s or %s", cfg->chain_file, cfg->key_file)
               : s2n_fail_(err, "loading the certificate chain and key");
      goto fail;
    }
  }
  int verifies = (cfg->role == TB_CLIENT && cfg->auth != TB_AUTH_NONE) ||
                 (cfg->role == TB_SERVER && cfg->auth == TB_AUTH_MUTUAL);
  if (verifies) {
    if (s2n_config_set_verification_ca_location(c->config, cfg->ca_file, NULL) != S2N_SUCCESS) {
      st = s2n_fail_(err, "s2n_config_set_verification_ca_location");
      goto fail;
    }
  } else if (s2n_config_disable_x509_verification(c->config) != S2N_SUCCESS) {
    st = s2n_fail_(err, "s2n_config_disable_x509_verification");
    goto fail;
  }
  /* A client certificate names a client, not a host: the server checks its chain only (s2n
   * would match it against a host name, as it matches the server's against the SNI). */
  if (cfg->role == TB_SERVER && cfg->auth == TB_AUTH_MUTUAL &&
      s2n_config_set_verify_host_callback(c->config, any_client_name, NULL) != S2N_SUCCESS) {
    st = s2n_fail_(err, "s2n_config_set_verify_host_callback");
    goto fail;
  }
  /* A client not asked for mutual auth answers a server's CertificateRequest (gnutls-serv
   * sends one) with no certificate: s2n's NONE would abort the handshake instead. */
  s2n_cert_auth_type auth_type = cfg->auth == TB_AUTH_MUTUAL ? S2N_CERT_AUTH_REQUIRED
                                 : cfg->role == TB_CLIENT    ? S2N_CERT_AUTH_OPTIONAL
                                                             : S2N_CERT_AUTH_NONE;
  if (s2n_config_set_client_auth_type(c->config, auth_type) != S2N_SUCCESS) {
    st = s2n_fail_(err, "s2n_config_set_client_auth_type");
    goto fail;
  }
  if (s2n_config_set_security_policy(c->config, &c->policy) != S2N_SUCCESS) {
    st = s2n_fail_(err, "s2n_config_set_security_policy (the pinned offer)");
    goto fail;
  }
  if (s2n_config_set_session_tickets_onoff(c->config, cfg->resumption ? 1 : 0) != S2N_SUCCESS) {
    st = s2n_fail_(err, "s2n_config_set_session_tickets_onoff");
    goto fail;
  }
  if (cfg->resumption && cfg->role == TB_SERVER) {
    /* A fixed ticket key (tlsbench's, not a secret), valid from now: s2n encrypts its
     * tickets with it. One ticket per TLS 1.3 handshake, as the others send. */
    static const uint8_t name[] = "tlsbench";
    uint8_t key[32];
    for (size_t i = 0; i < sizeof(key); i++) key[i] = (uint8_t)(0x5a ^ i);
    if (s2n_config_add_ticket_crypto_key(c->config, name, sizeof(name) - 1, key, sizeof(key), 0) !=
            S2N_SUCCESS ||
        s2n_config_set_initial_ticket_count(c->config, 1) != S2N_SUCCESS) {
      st = s2n_fail_(err, "the session ticket key");
      goto fail;
    }
  }
  if (cfg->psk.mode == TB_PSK_DHE) {
    if (cfg->psk.key_len > sizeof(c->psk_key) ||
        strlen(cfg->psk.identity) >= sizeof(c->psk_identity)) {
      st = tb_fail(err, TB_FAILED, "the pre-shared key or its identity is too long");
      goto fail;
    }
    c->psk_mode = cfg->psk.mode;
    memcpy(c->psk_key, cfg->psk.key, cfg->psk.key_len);
    c->psk_key_len = cfg->psk.key_len;
    snprintf(c->psk_identity, sizeof(c->psk_identity), "%s", cfg->psk.identity);
    c->psk_hmac = strcmp(cfg->psk.hash, "SHA384") == 0 ? S2N_PSK_HMAC_SHA384 : S2N_PSK_HMAC_SHA256;
    if (s2n_config_set_psk_mode(c->config, S2N_PSK_MODE_EXTERNAL) != S2N_SUCCESS) {
      st = s2n_fail_(err, "s2n_config_set_psk_mode");
      goto fail;
    }
  }
  *out = c;
  return TB_OK;
fail:
  s2_ctx_free(c);
  return st;
}

/* ------------------------------------------------------------------------- connections */

/* A client's session: s2n's serialized session state (its ticket and secrets). */
typedef struct s2_session {
  size_t len;
  uint8_t data[];
} s2_session;

typedef struct s2_conn {
  s2_ctx *ctx;
  struct s2n_connection *conn;
  tb_transport transport;
} s2_conn;

static int send_cb(void *io, const uint8_t *buf, uint32_t len) {
  s2_conn *c = io;
  long n = c->transport.send(c->transport.io, buf, len);
  if (n < 0) {
    errno = EIO;
    return -1;
  }
  if (n == 0) {
    errno = EAGAIN;
    return -1;
  }
  return (int)n;
}

static int recv_cb(void *io, uint8_t *buf, uint32_t len) {
  s2_conn *c = io;
  long n = c->transport.recv(c->transport.io, buf, len);
  if (n == TB_IO_WOULD_BLOCK) {
    errno = EAGAIN;
    return -1;
  }
  if (n < 0) {
    errno = EIO;
    return -1;
  }
  return (int)n;
}

static void s2_conn_free(void *p) {
  s2_conn *c = p;
  if (c == NULL) return;
  if (c->conn != NULL) s2n_connection_free(c->conn);
  free(c);
}

static tb_status add_psk(s2_conn *c, char *err) {
  s2_ctx *x = c->ctx;
  struct s2n_psk *psk = s2n_external_psk_new();
  if (psk == NULL) return s2n_fail_(err, "s2n_external_psk_new");
  int ok = s2n_psk_set_identity(psk, (const uint8_t *)x->psk_identity,
                                (uint16_t)strlen(x->psk_identity)) == S2N_SUCCESS &&
           s2n_psk_set_secret(psk, x->psk_key, (uint16_t)x->psk_key_len) == S2N_SUCCESS &&
           s2n_psk_set_hmac(psk, x->psk_hmac) == S2N_SUCCESS &&
           s2n_connection_append_psk(c->conn, psk) == S2N_SUCCESS; /* copies the PSK */
  tb_status st = ok ? TB_OK : s2n_fail_(err, "the external pre-shared key");
  s2n_psk_free(&psk);
  return st;
}

static tb_status s2_conn_new(void *ctx, const tb_transport *transport, void *session, void **out,
                             char *err) {
  s2_ctx *x = ctx;
  *out = NULL;
  if (transport->bio)
    return tb_fail(err, TB_UNSUPPORTED, "s2n-tls has no BIO layer beside its I/O callbacks");
  s2_conn *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->ctx = x;
  c->transport = *transport;
  tb_status st = TB_FAILED;
  c->conn = s2n_connection_new(x->role == TB_CLIENT ? S2N_CLIENT : S2N_SERVER);
  if (c->conn == NULL) {
    st = s2n_fail_(err, "s2n_connection_new");
    goto fail;
  }
  if (s2n_connection_set_config(c->conn, x->config) != S2N_SUCCESS) {
    st = s2n_fail_(err, "s2n_connection_set_config");
    goto fail;
  }
  /* s2n answers a failed handshake by sleeping 10 to 30 s before it returns (its blinding,
   * against timing side channels); self-service blinding leaves the delay to the caller, and
   * a benchmark fails the point at once instead. Successful handshakes are unaffected. */
  if (s2n_connection_set_blinding(c->conn, S2N_SELF_SERVICE_BLINDING) != S2N_SUCCESS) {
    st = s2n_fail_(err, "s2n_connection_set_blinding");
    goto fail;
  }
  if (transport->fd >= 0) {
    if (s2n_connection_set_fd(c->conn, transport->fd) != S2N_SUCCESS) {
      st = s2n_fail_(err, "s2n_connection_set_fd");
      goto fail;
    }
  } else if (s2n_connection_set_send_cb(c->conn, send_cb) != S2N_SUCCESS ||
             s2n_connection_set_recv_cb(c->conn, recv_cb) != S2N_SUCCESS ||
             s2n_connection_set_send_ctx(c->conn, c) != S2N_SUCCESS ||
             s2n_connection_set_recv_ctx(c->conn, c) != S2N_SUCCESS) {
    st = s2n_fail_(err, "the transport callbacks");
    goto fail;
  }
  if (x->role == TB_CLIENT && x->server_name[0] != '\0' &&
      s2n_set_server_name(c->conn, x->server_name) != S2N_SUCCESS) {
    st = s2n_fail_(err, "s2n_set_server_name");
    goto fail;
  }
  if (x->psk_mode != TB_PSK_NONE && (st = add_psk(c, err)) != TB_OK) goto fail;
  if (session != NULL) {
    const s2_session *s = session;
    if (s2n_connection_set_session(c->conn, s->data, s->len) != S2N_SUCCESS) {
      st = s2n_fail_(err, "s2n_connection_set_session");
      goto fail;
    }
  }
  *out = c;
  return TB_OK;
fail:
  s2_conn_free(c);
  return st;
}

/* One call of an s2n I/O function: blocked is TB_WANT_IO, another error TB_FAILED. */
static tb_status io_status(const char *what, char *err) {
  if (s2n_error_get_type(s2n_errno) == S2N_ERR_T_BLOCKED) return TB_WANT_IO;
  if (s2n_error_get_type(s2n_errno) == S2N_ERR_T_CLOSED) return TB_CLOSED;
  return s2n_fail_(err, what);
}

static tb_status s2_handshake(void *conn, char *err) {
  s2_conn *c = conn;
  s2n_blocked_status blocked = S2N_NOT_BLOCKED;
  if (s2n_negotiate(c->conn, &blocked) == S2N_SUCCESS) return TB_OK;
  tb_status st = io_status("s2n_negotiate", err);
  return st == TB_CLOSED ? tb_fail(err, TB_FAILED, "the peer closed during the handshake") : st;
}

static tb_status s2_write(void *conn, const unsigned char *buf, size_t len, size_t *done,
                          char *err) {
  s2_conn *c = conn;
  s2n_blocked_status blocked = S2N_NOT_BLOCKED;
  *done = 0;
  ssize_t n = s2n_send(c->conn, buf, (ssize_t)len, &blocked);
  if (n < 0) return io_status("s2n_send", err);
  *done = (size_t)n;
  if (c->ctx->release_buffers) s2n_connection_release_buffers(c->conn);
  return TB_OK;
}

static tb_status s2_read(void *conn, unsigned char *buf, size_t len, size_t *done, char *err) {
  s2_conn *c = conn;
  s2n_blocked_status blocked = S2N_NOT_BLOCKED;
  *done = 0;
  ssize_t n = s2n_recv(c->conn, buf, (ssize_t)len, &blocked);
  if (n == 0) return TB_CLOSED;
  if (n < 0) return io_status("s2n_recv", err);
  *done = (size_t)n;
  if (c->ctx->release_buffers) s2n_connection_release_buffers(c->conn);
  return TB_OK;
}

static tb_status s2_close(void *conn, char *err) {
  s2_conn *c = conn;
  s2n_blocked_status blocked = S2N_NOT_BLOCKED;
  if (s2n_shutdown_send(c->conn, &blocked) == S2N_SUCCESS) return TB_OK;
  tb_status st = io_status("s2n_shutdown_send", err);
  return st == TB_WANT_IO || st == TB_CLOSED ? TB_OK : st;
}

/* ------------------------------------------------------------------------- read-back */

static tb_status s2_negotiated(void *conn, tb_negotiated *out, char *err) {
  s2_conn *c = conn;
  memset(out, 0, sizeof(*out));
  int v = s2n_connection_get_actual_protocol_version(c->conn);
  if (v != S2N_TLS12 && v != S2N_TLS13)
    return tb_fail(err, TB_FAILED, "s2n reports protocol %d", v);
  snprintf(out->version, sizeof(out->version), "%s", v == S2N_TLS13 ? "1.3" : "1.2");
  uint8_t first = 0, second = 0;
  if (s2n_connection_get_cipher_iana_value(c->conn, &first, &second) != S2N_SUCCESS)
    return s2n_fail_(err, "s2n_connection_get_cipher_iana_value");
  code_name(tb_suite_names, (unsigned)first << 8 | second, out->suite);
  out->resumed = s2n_connection_is_session_resumed(c->conn) == 1;
  /* The group: a KEM group's name (hybrid TLS 1.3), else the curve's ("NONE": no ECDHE). */
  const char *kem = s2n_connection_get_kem_group_name(c->conn);
  const char *curve = s2n_connection_get_curve(c->conn);
  unsigned g = group_code(kem);
  if (g == 0) g = group_code(curve);
  if (g != 0) code_name(tb_group_names, g, out->group);
  uint16_t psk_len = 0;
  if (s2n_connection_get_negotiated_psk_identity_length(c->conn, &psk_len) == S2N_SUCCESS &&
      psk_len > 0 && !out->resumed)
    out->psk = TB_PSK_DHE; /* s2n-tls does psk_dhe_ke only */
  if (!out->resumed && out->psk == TB_PSK_NONE) {
    s2n_tls_signature_algorithm sig = S2N_TLS_SIGNATURE_ANONYMOUS;
    s2n_tls_hash_algorithm hash = S2N_TLS_HASH_NONE;
    if (s2n_connection_get_selected_signature_algorithm(c->conn, &sig) == S2N_SUCCESS &&
        s2n_connection_get_selected_digest_algorithm(c->conn, &hash) == S2N_SUCCESS) {
      unsigned code = scheme_code(sig, hash);
      if (code != 0) code_name(tb_sigalg_names, code, out->sigalg);
    }
    if (c->ctx->auth == TB_AUTH_MUTUAL &&
        s2n_connection_get_selected_client_cert_signature_algorithm(c->conn, &sig) == S2N_SUCCESS &&
        s2n_connection_get_selected_client_cert_digest_algorithm(c->conn, &hash) == S2N_SUCCESS) {
      unsigned code = scheme_code(sig, hash);
      if (code != 0) code_name(tb_sigalg_names, code, out->client_sigalg);
    }
    /* s2n fails a handshake whose peer chain does not verify: a side that verifies and
     * holds the peer's chain after a full handshake verified it. */
    int verifies = (c->ctx->role == TB_CLIENT && c->ctx->auth != TB_AUTH_NONE) ||
                   (c->ctx->role == TB_SERVER && c->ctx->auth == TB_AUTH_MUTUAL);
    if (c->ctx->role == TB_SERVER && verifies) {
      uint8_t *der = NULL;
      uint32_t chain_len = 0;
      verifies = s2n_connection_get_client_cert_chain(c->conn, &der, &chain_len) == S2N_SUCCESS &&
                 chain_len > 0;
    }
    out->peer_verified = verifies;
  }
  return TB_OK;
}

/* ------------------------------------------------------------------------- sessions */

static tb_status s2_session_get(void *conn, void **session, char *err) {
  s2_conn *c = conn;
  *session = NULL;
  int len = s2n_connection_get_session_length(c->conn);
  if (len <= 0) return tb_fail(err, TB_FAILED, "no session to resume (no ticket received yet)");
  s2_session *s = malloc(sizeof(*s) + (size_t)len);
  if (s == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  int n = s2n_connection_get_session(c->conn, s->data, (size_t)len);
  if (n <= 0) {
    free(s);
    return s2n_fail_(err, "s2n_connection_get_session");
  }
  s->len = (size_t)n;
  *session = s;
  return TB_OK;
}

static void s2_session_free(void *session) { free(session); }

static const tb_tls_class kTls = {
    .ctx_new = s2_ctx_new,
    .ctx_free = s2_ctx_free,
    .conn_new = s2_conn_new,
    .conn_free = s2_conn_free,
    .handshake = s2_handshake,
    .write = s2_write,
    .read = s2_read,
    .close = s2_close,
    .negotiated = s2_negotiated,
    .session_get = s2_session_get,
    .session_free = s2_session_free,
    .pool_use = NULL,
};

/* ------------------------------------------------------------------------- AEAD */

static tb_status s2_aead_new(tb_aead_alg alg, const unsigned char *key, size_t key_len, void **out,
                             char *err) {
  (void)alg, (void)key, (void)key_len;
  *out = NULL;
  return tb_fail(err, TB_UNSUPPORTED,
                 "s2n-tls has no AEAD API of its own: its records use AWS-LC's (the aws-lc line "
                 "measures it)");
}

static tb_status s2_aead_none(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                              const unsigned char *ad, size_t ad_len, const unsigned char *in,
                              size_t len, unsigned char *out, char *err) {
  (void)aead, (void)nonce, (void)ad, (void)ad_len, (void)in, (void)len, (void)out;
  return tb_fail(err, TB_UNSUPPORTED, "s2n-tls has no AEAD API of its own");
}

static void s2_aead_free(void *aead) { (void)aead; }

static const tb_aead_class kAead = {
    .create = s2_aead_new,
    .seal = s2_aead_none,
    .open = s2_aead_none,
    .free = s2_aead_free,
};

/* ------------------------------------------------------------------------- global, info */

/* s2n's documented no-mlock allocation (what S2N_DONT_MLOCK selects): plain malloc/free. */
static int mem_init(void) { return S2N_SUCCESS; }
static int mem_cleanup(void) { return S2N_SUCCESS; }
static int mem_malloc(void **ptr, uint32_t requested, uint32_t *allocated) {
  *ptr = malloc(requested);
  if (*ptr == NULL) return S2N_FAILURE;
  *allocated = requested;
  return S2N_SUCCESS;
}
static int mem_free(void *ptr, uint32_t size) {
  (void)size;
  free(ptr);
  return S2N_SUCCESS;
}

static tb_status s2_global_init(char *err) {
  if (s2n_mem_set_callbacks(mem_init, mem_cleanup, mem_malloc, mem_free) != S2N_SUCCESS)
    return s2n_fail_(err, "s2n_mem_set_callbacks");
  /* The core ends the process through global_cleanup; s2n's own atexit handler would run
   * s2n_cleanup a second time after it. */
  if (s2n_disable_atexit() != S2N_SUCCESS) return s2n_fail_(err, "s2n_disable_atexit");
  if (s2n_init() != S2N_SUCCESS) return s2n_fail_(err, "s2n_init");
  return TB_OK;
}

static void s2_global_cleanup(void) { s2n_cleanup_final(); }

static tb_status s2_derandomize(tb_random_fn fill, tb_randomness *out, char *err) {
  (void)fill, (void)err;
  out->seeded = 0;
  snprintf(out->how, sizeof(out->how),
           "not seeded: s2n-tls draws from AWS-LC's RAND_bytes, which has no run-time hook "
           "(BORINGSSL_UNSAFE_DETERMINISTIC_MODE is a build option); the work hardly depends on "
           "the values drawn");
  return TB_OK;
}

static const char *g_versions[] = {"1.2", "1.3", NULL};
static const char *g_suites[COUNT(kSuites) + 1];
static const char *g_groups[16];
static const char *g_sigalgs[COUNT(kSchemes) + 1];
static char g_build_text[2][96];
static const char *g_build_options[3];

static tb_status s2_info(tb_info *out, char *err) {
  (void)err;
  size_t n = 0;
  for (size_t i = 0; i < COUNT(kSuites); i++) {
    const uint8_t *v = kSuites[i]->iana_value;
    const tb_name *s = tb_name_of_code(tb_suite_names, (unsigned)v[0] << 8 | v[1]);
    if (s != NULL && kSuites[i]->available && strstr(s->name, "_CBC_") == NULL)
      g_suites[n++] = s->name;
  }
  g_suites[n] = NULL;
  n = 0;
  for (size_t i = 0; i < s2n_all_supported_curves_list_len && n < COUNT(g_groups) - 1; i++) {
    const tb_name *g = tb_name_of_code(tb_group_names, s2n_all_supported_curves_list[i]->iana_id);
    if (g != NULL) g_groups[n++] = g->name;
  }
  for (size_t i = 0; i < S2N_KEM_GROUPS_COUNT && n < COUNT(g_groups) - 1; i++) {
    const tb_name *g = tb_name_of_code(tb_group_names, ALL_SUPPORTED_KEM_GROUPS[i]->iana_id);
    if (g != NULL && s2n_kem_group_is_available(ALL_SUPPORTED_KEM_GROUPS[i]))
      g_groups[n++] = g->name;
  }
  g_groups[n] = NULL;
  n = 0;
  for (size_t i = 0; i < COUNT(kSchemes); i++) {
    const tb_name *s = tb_name_of_code(tb_sigalg_names, kSchemes[i]->iana_value);
    if (s != NULL) g_sigalgs[n++] = s->name;
  }
  g_sigalgs[n] = NULL;
  snprintf(g_build_text[0], sizeof(g_build_text[0]), "libcrypto=0x%lx", s2n_get_openssl_version());
  snprintf(g_build_text[1], sizeof(g_build_text[1]), "allocator=malloc (no mlock)");
  g_build_options[0] = g_build_text[0];
  g_build_options[1] = g_build_text[1];
  g_build_options[2] = NULL;
  snprintf(out->version, sizeof(out->version), "s2n-tls %s", TB_S2N_VERSION);
  out->build_options = g_build_options;
  out->versions = g_versions;
  out->suites = g_suites;
  out->groups = g_groups;
  out->sigalgs = g_sigalgs;
  out->no_tls = NULL;
  /* s2n configs are read-only once connections use them (its ticket keys are behind the
   * config's own lock): threads share a context. */
  out->no_threads = NULL;
  return TB_OK;
}

const tb_adapter tb_adapter_impl = {
    .name = "s2n",
    .global_init = s2_global_init,
    .global_cleanup = s2_global_cleanup,
    .info = s2_info,
    .cpu_paths = NULL,
    .derandomize = s2_derandomize,
    .tls = &kTls,
    .aead = &kAead,
};
