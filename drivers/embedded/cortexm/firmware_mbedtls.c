/*
 * The mbedTLS adapter of the Cortex-M firmware image (firmware.h): mbedTLS 3.6 (TLS 1.2 and
 * 1.3) and 2.28 (TLS 1.2). Each side has its own DRBG, configuration and context; the
 * credentials are the DER ones compiled in (certs.h). Record buffers are the build's
 * MBEDTLS_SSL_IN/OUT_CONTENT_LEN; the client asks for max_fragment_length when the job says.
 */
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>
/* A user's config may have no certificates at all (a PSK-only build): the certificate code
 * is then left out and a certificate job is unsupported, not a compile error. */
#if defined(MBEDTLS_X509_CRT_PARSE_C)
#define FW_HAVE_CERTS 1
#else
#define FW_HAVE_CERTS 0
#endif
#if defined(MBEDTLS_PSA_CRYPTO_C)
#include <psa/crypto.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "firmware.h"

const char fw_library[] = "mbedtls";
const char fw_library_version[] = MBEDTLS_VERSION_STRING;

/* The board's entropy source (MBEDTLS_ENTROPY_HARDWARE_ALT): the core's test stream. */
int mbedtls_hardware_poll(void *data, unsigned char *output, size_t len, size_t *olen) {
  (void)data;
  fw_test_entropy(output, len);
  *olen = len;
  return 0;
}

typedef struct {
  mbedtls_ctr_drbg_context drbg;
  mbedtls_ssl_config conf;
  mbedtls_ssl_context ssl;
#if FW_HAVE_CERTS
  mbedtls_x509_crt certs; /* the client's trust anchor, or the server's chain */
  mbedtls_pk_context key;
#endif
  int suites[2];
#if MBEDTLS_VERSION_MAJOR >= 3
  uint16_t groups[3];
#else
  mbedtls_ecp_group_id groups[3];
#endif
  const fw_job *job;
} peer;

/* Allocated per side in fw_setup, as the native adapter allocates its contexts: the heap
 * figure is then all of a side's library state, comparable with the drivers' figures. */
static peer *peers[FW_SIDES];
static mbedtls_entropy_context entropy;

int fw_init(void) {
  mbedtls_entropy_init(&entropy);
#if defined(MBEDTLS_PSA_CRYPTO_C)
  /* TLS 1.3 runs on PSA: its key store and RNG are library-wide. */
  if (psa_crypto_init() != PSA_SUCCESS) return MBEDTLS_ERR_SSL_HW_ACCEL_FAILED;
#endif
  return 0;
}

static int send_cb(void *ctx, const unsigned char *buf, size_t len) {
  size_t n = fw_send((enum fw_side)(intptr_t)ctx, buf, len);
  return n == 0 ? MBEDTLS_ERR_SSL_WANT_WRITE : (int)n;
}

static int recv_cb(void *ctx, unsigned char *buf, size_t len) {
  size_t n = fw_recv((enum fw_side)(intptr_t)ctx, buf, len);
  return n == 0 ? MBEDTLS_ERR_SSL_WANT_READ : (int)n;
}

/* mbedTLS spells TLS 1.3 suites TLS1-3-AES-128-GCM-SHA256; the job, IANA's with dashes. */
#define TLS13_PREFIX "TLS1-3-"

static int suite_id(const fw_job *job) {
  char name[80];
  if (job->tls == 13 && strncmp(job->suite, "TLS-", 4) == 0)
    snprintf(name, sizeof name, TLS13_PREFIX "%s", job->suite + 4);
  else
    snprintf(name, sizeof name, "%s", job->suite);
  return mbedtls_ssl_get_ciphersuite_id(name);
}

static int is_psk(const fw_job *job) { return job->kx == FW_KX_PSK || job->kx == FW_KX_PSK_DHE; }

/* What both sides configure alike: versions, the one suite, the key exchange. */
static int configure(peer *p, enum fw_side side) {
  const fw_job *job = p->job;
  int ret;
  const char *pers = side == FW_CLIENT ? "client" : "server";
  if ((ret = mbedtls_ctr_drbg_seed(&p->drbg, mbedtls_entropy_func, &entropy,
                                   (const unsigned char *)pers, strlen(pers))) != 0)
    return ret;
  int endpoint = side == FW_CLIENT ? MBEDTLS_SSL_IS_CLIENT : MBEDTLS_SSL_IS_SERVER;
  if ((ret = mbedtls_ssl_config_defaults(&p->conf, endpoint, MBEDTLS_SSL_TRANSPORT_STREAM,
                                         MBEDTLS_SSL_PRESET_DEFAULT)) != 0)
    return ret;
  mbedtls_ssl_conf_rng(&p->conf, mbedtls_ctr_drbg_random, &p->drbg);
#if MBEDTLS_VERSION_MAJOR >= 3
  mbedtls_ssl_protocol_version version =
      job->tls == 13 ? MBEDTLS_SSL_VERSION_TLS1_3 : MBEDTLS_SSL_VERSION_TLS1_2;
  mbedtls_ssl_conf_min_tls_version(&p->conf, version);
  mbedtls_ssl_conf_max_tls_version(&p->conf, version);
#else
  if (job->tls == 13) return FW_UNSUPPORTED; /* mbedTLS 2.28 has no TLS 1.3 */
  mbedtls_ssl_conf_min_version(&p->conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
  mbedtls_ssl_conf_max_version(&p->conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
#endif
  p->suites[0] = suite_id(job);
  if (p->suites[0] == 0) return FW_NO_SUITE;
  mbedtls_ssl_conf_ciphersuites(&p->conf, p->suites);
#if defined(MBEDTLS_SSL_PROTO_TLS1_3)
  if (job->tls == 13) {
    int mode = job->kx == FW_KX_PSK       ? MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK
               : job->kx == FW_KX_PSK_DHE ? MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL
                                          : MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_EPHEMERAL;
    mbedtls_ssl_conf_tls13_key_exchange_modes(&p->conf, mode);
  }
#endif
  if (is_psk(job)) {
#if defined(MBEDTLS_SSL_HANDSHAKE_WITH_PSK_ENABLED) || \
    defined(MBEDTLS_KEY_EXCHANGE_SOME_PSK_ENABLED)
    if ((ret = mbedtls_ssl_conf_psk(&p->conf, fw_psk, sizeof fw_psk,
                                    (const unsigned char *)fw_psk_identity,
                                    strlen(fw_psk_identity))) != 0)
      return ret;
#else
    return FW_UNSUPPORTED;
#endif
  }
  return 0;
}

static int finish(peer *p, enum fw_side side) {
  int ret = mbedtls_ssl_setup(&p->ssl, &p->conf);
  if (ret != 0) return ret;
  mbedtls_ssl_set_bio(&p->ssl, (void *)(intptr_t)side, send_cb, recv_cb, NULL);
  return 0;
}

static int setup_client(peer *p) {
  const fw_job *job = p->job;
  int ret = configure(p, FW_CLIENT);
  if (ret != 0) return ret;
  if (!is_psk(job)) {
#if FW_HAVE_CERTS
    const fw_credentials *c = &fw_certs[job->cert];
    if ((ret = mbedtls_x509_crt_parse_der(&p->certs, c->ca, c->ca_len)) != 0) return ret;
    mbedtls_ssl_conf_ca_chain(&p->conf, &p->certs, NULL);
    mbedtls_ssl_conf_authmode(&p->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
#else
    return FW_UNSUPPORTED;
#endif
  }
  if (job->group != 0) {
    /* TLS 1.2's supported_groups also limits the curve of an ECDSA certificate (RFC 8422):
     * with another group asked, the client offers the certificate's curve after it. */
    uint16_t ids[2] = {job->group, 0};
    if (job->tls == 12 && job->cert == FW_CERT_ECDSA_P256 && job->kx == FW_KX_ECDHE &&
        job->group != 0x0017)
      ids[1] = 0x0017;
    for (int i = 0; i < 3; i++) p->groups[i] = 0;
    for (int i = 0; i < 2 && ids[i] != 0; i++) {
#if MBEDTLS_VERSION_MAJOR >= 3
      p->groups[i] = ids[i];
#else
      const mbedtls_ecp_curve_info *info = mbedtls_ecp_curve_info_from_tls_id(ids[i]);
      if (info == NULL) return FW_UNSUPPORTED;
      p->groups[i] = info->grp_id;
#endif
    }
#if MBEDTLS_VERSION_MAJOR >= 3
    mbedtls_ssl_conf_groups(&p->conf, p->groups);
#else
    mbedtls_ssl_conf_curves(&p->conf, p->groups);
#endif
  }
  if (job->record != 0) {
#if defined(MBEDTLS_SSL_MAX_FRAGMENT_LENGTH)
    unsigned char code = job->record == 512    ? MBEDTLS_SSL_MAX_FRAG_LEN_512
                         : job->record == 1024 ? MBEDTLS_SSL_MAX_FRAG_LEN_1024
                         : job->record == 2048 ? MBEDTLS_SSL_MAX_FRAG_LEN_2048
                                               : MBEDTLS_SSL_MAX_FRAG_LEN_4096;
    if ((ret = mbedtls_ssl_conf_max_frag_len(&p->conf, code)) != 0) return ret;
#else
    return FW_UNSUPPORTED;
#endif
  }
  if ((ret = finish(p, FW_CLIENT)) != 0) return ret;
#if FW_HAVE_CERTS
  return mbedtls_ssl_set_hostname(&p->ssl, FW_SERVER_NAME);
#else
  return 0;
#endif
}

static int setup_server(peer *p) {
  const fw_job *job = p->job;
  int ret = configure(p, FW_SERVER);
  if (ret != 0) return ret;
  if (!is_psk(job)) {
#if FW_HAVE_CERTS
    const fw_credentials *c = &fw_certs[job->cert];
    if (job->chain == 1)
      ret = mbedtls_x509_crt_parse_der(&p->certs, c->leaf1, c->leaf1_len);
    else if ((ret = mbedtls_x509_crt_parse_der(&p->certs, c->leaf2, c->leaf2_len)) == 0)
      ret = mbedtls_x509_crt_parse_der(&p->certs, c->inter, c->inter_len);
    if (ret != 0) return ret;
#if MBEDTLS_VERSION_MAJOR >= 3
    ret = mbedtls_pk_parse_key(&p->key, c->key, c->key_len, NULL, 0, mbedtls_ctr_drbg_random,
                               &p->drbg);
#else
    ret = mbedtls_pk_parse_key(&p->key, c->key, c->key_len, NULL, 0);
#endif
    if (ret != 0) return ret;
    if ((ret = mbedtls_ssl_conf_own_cert(&p->conf, &p->certs, &p->key)) != 0) return ret;
#else
    return FW_UNSUPPORTED;
#endif
  }
  return finish(p, FW_SERVER);
}

/* mbedTLS (2.28, 3.6) has no ML-DSA, in TLS or X.509. */
#define NO_ML_DSA "mbedTLS has no ML-DSA"

int fw_setup(enum fw_side side, const fw_job *job) {
  if (job->cert == FW_CERT_ML_DSA_44 && job->kx != FW_KX_PSK && job->kx != FW_KX_PSK_DHE) {
    fw_unsupported_reason = NO_ML_DSA;
    return FW_UNSUPPORTED;
  }
  peer *p = peers[side] = calloc(1, sizeof *p);
  if (p == NULL) return MBEDTLS_ERR_SSL_ALLOC_FAILED;
  p->job = job;
  mbedtls_ctr_drbg_init(&p->drbg);
  mbedtls_ssl_config_init(&p->conf);
  mbedtls_ssl_init(&p->ssl);
#if FW_HAVE_CERTS
  mbedtls_x509_crt_init(&p->certs);
  mbedtls_pk_init(&p->key);
#endif
  if (FW_HAS(FW_CLIENT) && side == FW_CLIENT) return setup_client(p);
  if (FW_HAS(FW_SERVER) && side == FW_SERVER) return setup_server(p);
  return FW_UNSUPPORTED;
}

int fw_step(enum fw_side side, int *error) {
  int ret = mbedtls_ssl_handshake(&peers[side]->ssl);
  if (ret == 0) return FW_DONE;
  if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) return FW_AGAIN;
  *error = ret;
  return FW_FAILED;
}

void fw_read_back(enum fw_side side, fw_negotiated *out) {
  peer *p = peers[side];
  snprintf(out->version, sizeof out->version, "%s", mbedtls_ssl_get_version(&p->ssl));
  const char *suite = mbedtls_ssl_get_ciphersuite(&p->ssl);
  if (suite == NULL) suite = "unknown";
  if (strncmp(suite, TLS13_PREFIX, strlen(TLS13_PREFIX)) == 0)
    snprintf(out->suite, sizeof out->suite, "TLS-%s", suite + strlen(TLS13_PREFIX));
  else
    snprintf(out->suite, sizeof out->suite, "%s", suite);
  out->verified =
      side == FW_CLIENT && !is_psk(p->job) ? mbedtls_ssl_get_verify_result(&p->ssl) == 0 : -1;
#if defined(MBEDTLS_SSL_MAX_FRAGMENT_LENGTH)
  out->record = (unsigned)mbedtls_ssl_get_output_max_frag_len(&p->ssl);
#else
  out->record = 0;
#endif
}

void fw_error_text(int error, char *buf, size_t size) {
#if defined(MBEDTLS_ERROR_C)
  mbedtls_strerror(error, buf, size);
#else
  snprintf(buf, size, "(no error strings in this build)");
#endif
}

/* ------------------------------------------------------------------ operations (mode=ops) */
/* mbedTLS's own crypto modules, the calls its TLS code makes (in 3.6, PSA's built-in
 * drivers call the same ecp, rsa, gcm, chachapoly and sha256 code): key generation on the
 * curve's group, ECDH's shared secret, ECDSA's signature as TLS writes and reads it
 * (deterministic where MBEDTLS_ECDSA_DETERMINISTIC is on), RSA PKCS #1 v1.5 encrypt
 * ("public") and decrypt ("private", blinded), the AEADs with 13 bytes of additional data
 * (as wolfCrypt's benchmark), the SHA-256 update of 1 KiB, one HKDF-SHA256. Written for
 * mbedTLS 3's API: 2.28's signatures differ, and its operations are reported unsupported. */
#if MBEDTLS_VERSION_MAJOR >= 3
#include <mbedtls/chachapoly.h>
#include <mbedtls/ecdh.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/gcm.h>
#include <mbedtls/hkdf.h>
#include <mbedtls/rsa.h>
#include <mbedtls/sha256.h>

static mbedtls_ctr_drbg_context op_drbg;
static int op_drbg_ready;
static FW_HARNESS unsigned char op_in[FW_OP_BYTES], op_out[FW_OP_BYTES + 16];
static unsigned char op_aad[FW_OP_AAD], op_key[32], op_iv[12], op_tag[16], op_hash[32];
static unsigned char op_sig[MBEDTLS_ECDSA_MAX_LEN], op_secret[64];
static size_t op_sig_len;

static int op_common(void) {
  if (op_drbg_ready) return 0;
  mbedtls_ctr_drbg_init(&op_drbg);
  int ret = mbedtls_ctr_drbg_seed(&op_drbg, mbedtls_entropy_func, &entropy,
                                  (const unsigned char *)"ops", 3);
  if (ret != 0) return ret;
  op_drbg_ready = 1;
  unsigned char *parts[] = {op_in, op_key, op_iv, op_aad, op_hash};
  size_t sizes[] = {sizeof op_in, sizeof op_key, sizeof op_iv, sizeof op_aad, sizeof op_hash};
  for (size_t i = 0; i < 5 && ret == 0; i++)
    for (size_t at = 0; at < sizes[i] && ret == 0; at += MBEDTLS_CTR_DRBG_MAX_REQUEST) {
      size_t n = sizes[i] - at < MBEDTLS_CTR_DRBG_MAX_REQUEST ? sizes[i] - at
                                                              : MBEDTLS_CTR_DRBG_MAX_REQUEST;
      ret = mbedtls_ctr_drbg_random(&op_drbg, parts[i] + at, n);
    }
  return ret;
}

static void op_none(void) {}
#define RNG mbedtls_ctr_drbg_random, &op_drbg

#if defined(MBEDTLS_ECP_C)
static mbedtls_ecp_keypair op_ec[2];
static mbedtls_mpi op_z;

static int ec_keygen_prepare(void) {
  mbedtls_ecp_keypair_init(&op_ec[0]);
  mbedtls_ecp_keypair_init(&op_ec[1]);
  mbedtls_mpi_init(&op_z);
  return op_common();
}

static int ec_keygen(mbedtls_ecp_group_id curve) {
  mbedtls_ecp_keypair_free(&op_ec[0]);
  mbedtls_ecp_keypair_init(&op_ec[0]);
  return mbedtls_ecp_gen_key(curve, &op_ec[0], RNG);
}

/* Two key pairs on the curve and their shared secret agreed both ways. */
static int ec_pair(mbedtls_ecp_group_id curve) {
  int ret = op_common();
  mbedtls_mpi other;
  mbedtls_mpi_init(&op_z);
  mbedtls_mpi_init(&other);
  for (int i = 0; i < 2 && ret == 0; i++) {
    mbedtls_ecp_keypair_init(&op_ec[i]);
    ret = mbedtls_ecp_gen_key(curve, &op_ec[i], RNG);
  }
  if (ret == 0)
    ret = mbedtls_ecdh_compute_shared(&op_ec[0].MBEDTLS_PRIVATE(grp), &op_z,
                                      &op_ec[1].MBEDTLS_PRIVATE(Q), &op_ec[0].MBEDTLS_PRIVATE(d),
                                      RNG);
  if (ret == 0)
    ret = mbedtls_ecdh_compute_shared(&op_ec[1].MBEDTLS_PRIVATE(grp), &other,
                                      &op_ec[0].MBEDTLS_PRIVATE(Q), &op_ec[1].MBEDTLS_PRIVATE(d),
                                      RNG);
  if (ret == 0 && mbedtls_mpi_cmp_mpi(&op_z, &other) != 0) ret = MBEDTLS_ERR_ECP_VERIFY_FAILED;
  mbedtls_mpi_free(&other);
  return ret;
}

static int ec_shared(void) {
  return mbedtls_ecdh_compute_shared(&op_ec[0].MBEDTLS_PRIVATE(grp), &op_z,
                                     &op_ec[1].MBEDTLS_PRIVATE(Q), &op_ec[0].MBEDTLS_PRIVATE(d),
                                     RNG);
}

static void ec_release(void) {
  mbedtls_ecp_keypair_free(&op_ec[0]);
  mbedtls_ecp_keypair_free(&op_ec[1]);
  mbedtls_mpi_free(&op_z);
}
#endif

#if defined(MBEDTLS_ECP_C) && defined(MBEDTLS_ECP_DP_SECP256R1_ENABLED)
static int p256_keygen_run(void) { return ec_keygen(MBEDTLS_ECP_DP_SECP256R1); }
static int p256_pair_prepare(void) {
  int ret = ec_pair(MBEDTLS_ECP_DP_SECP256R1);
#if defined(MBEDTLS_ECDSA_C)
  if (ret == 0)
    ret = mbedtls_ecdsa_write_signature(&op_ec[0], MBEDTLS_MD_SHA256, op_hash, sizeof op_hash,
                                        op_sig, sizeof op_sig, &op_sig_len, RNG);
#endif
  return ret;
}
#define P256_OP(name, prepare, run) \
  { name, prepare, run, ec_release, NULL }
#else
#define P256_OP(name, prepare, run) \
  { name, NULL, NULL, NULL, "no P-256 in this build (MBEDTLS_ECP_DP_SECP256R1_ENABLED)" }
#endif

#if defined(MBEDTLS_ECP_C) && defined(MBEDTLS_ECP_DP_SECP256R1_ENABLED) && defined(MBEDTLS_ECDSA_C)
static int p256_sign_run(void) {
  size_t len;
  return mbedtls_ecdsa_write_signature(&op_ec[0], MBEDTLS_MD_SHA256, op_hash, sizeof op_hash,
                                       op_sig, sizeof op_sig, &len, RNG);
}
static int p256_verify_run(void) {
  return mbedtls_ecdsa_read_signature(&op_ec[0], op_hash, sizeof op_hash, op_sig, op_sig_len);
}
#define ECDSA_OP(name, run) \
  { name, p256_pair_prepare, run, ec_release, NULL }
#else
#define ECDSA_OP(name, run) \
  { name, NULL, NULL, NULL, "no ECDSA P-256 in this build (MBEDTLS_ECDSA_C)" }
#endif

#if defined(MBEDTLS_ECP_C) && defined(MBEDTLS_ECP_DP_CURVE25519_ENABLED)
static int x25519_keygen_run(void) { return ec_keygen(MBEDTLS_ECP_DP_CURVE25519); }
static int x25519_pair_prepare(void) { return ec_pair(MBEDTLS_ECP_DP_CURVE25519); }
#define X25519_OP(name, prepare, run) \
  { name, prepare, run, ec_release, NULL }
#else
#define X25519_OP(name, prepare, run) \
  { name, NULL, NULL, NULL, "no X25519 in this build (MBEDTLS_ECP_DP_CURVE25519_ENABLED)" }
#endif

#if defined(MBEDTLS_RSA_C) && defined(MBEDTLS_PK_PARSE_C) && defined(MBEDTLS_PKCS1_V15)
static mbedtls_pk_context op_pk;
static unsigned char op_rsa_ct[256];

/* The compiled-in RSA-2048 key, a ciphertext of 32 test bytes, decrypted once and compared. */
static int rsa_prepare(void) {
  int ret = op_common();
  mbedtls_pk_init(&op_pk);
  const fw_credentials *c = &fw_certs[FW_CERT_RSA2048];
  if (ret != 0 || (ret = mbedtls_pk_parse_key(&op_pk, c->key, c->key_len, NULL, 0, RNG)) != 0)
    return ret;
  if (mbedtls_pk_get_type(&op_pk) != MBEDTLS_PK_RSA) return MBEDTLS_ERR_PK_TYPE_MISMATCH;
  mbedtls_rsa_context *rsa = mbedtls_pk_rsa(op_pk);
  if ((ret = mbedtls_rsa_pkcs1_encrypt(rsa, RNG, 32, op_in, op_rsa_ct)) != 0) return ret;
  size_t len = 0;
  ret = mbedtls_rsa_pkcs1_decrypt(rsa, RNG, &len, op_rsa_ct, op_out, sizeof op_out);
  if (ret == 0 && (len != 32 || memcmp(op_out, op_in, 32) != 0))
    ret = MBEDTLS_ERR_RSA_PRIVATE_FAILED;
  return ret;
}
static int rsa_public_run(void) {
  return mbedtls_rsa_pkcs1_encrypt(mbedtls_pk_rsa(op_pk), RNG, 32, op_in, op_out);
}
static int rsa_private_run(void) {
  size_t len;
  return mbedtls_rsa_pkcs1_decrypt(mbedtls_pk_rsa(op_pk), RNG, &len, op_rsa_ct, op_out,
                                   sizeof op_out);
}
static void rsa_release(void) { mbedtls_pk_free(&op_pk); }
#define RSA_OP(name, run) \
  { name, rsa_prepare, run, rsa_release, NULL }
#else
#define RSA_OP(name, run) \
  { name, NULL, NULL, NULL, "no RSA PKCS#1 v1.5 in this build (MBEDTLS_RSA_C, MBEDTLS_PKCS1_V15)" }
#endif

#if defined(MBEDTLS_GCM_C) && defined(MBEDTLS_AES_C)
static mbedtls_gcm_context op_gcm;
static int gcm_prepare(void) {
  int ret = op_common();
  mbedtls_gcm_init(&op_gcm);
  return ret != 0 ? ret : mbedtls_gcm_setkey(&op_gcm, MBEDTLS_CIPHER_ID_AES, op_key, 128);
}
static int gcm_run(void) {
  return mbedtls_gcm_crypt_and_tag(&op_gcm, MBEDTLS_GCM_ENCRYPT, FW_OP_BYTES, op_iv, sizeof op_iv,
                                   op_aad, sizeof op_aad, op_in, op_out, sizeof op_tag, op_tag);
}
static void gcm_release(void) { mbedtls_gcm_free(&op_gcm); }
#define GCM_OP(name) \
  { name, gcm_prepare, gcm_run, gcm_release, NULL }
#else
#define GCM_OP(name) \
  { name, NULL, NULL, NULL, "no AES-GCM in this build (MBEDTLS_GCM_C)" }
#endif

#if defined(MBEDTLS_CHACHAPOLY_C)
static mbedtls_chachapoly_context op_chachapoly;
static int chachapoly_prepare(void) {
  int ret = op_common();
  mbedtls_chachapoly_init(&op_chachapoly);
  return ret != 0 ? ret : mbedtls_chachapoly_setkey(&op_chachapoly, op_key);
}
static int chachapoly_run(void) {
  return mbedtls_chachapoly_encrypt_and_tag(&op_chachapoly, FW_OP_BYTES, op_iv, op_aad,
                                            sizeof op_aad, op_in, op_out, op_tag);
}
static void chachapoly_release(void) { mbedtls_chachapoly_free(&op_chachapoly); }
#define CHACHAPOLY_OP(name) \
  { name, chachapoly_prepare, chachapoly_run, chachapoly_release, NULL }
#else
#define CHACHAPOLY_OP(name) \
  { name, NULL, NULL, NULL, "no ChaCha20-Poly1305 in this build (MBEDTLS_CHACHAPOLY_C)" }
#endif

#if defined(MBEDTLS_SHA256_C)
static mbedtls_sha256_context op_sha;
static int sha256_prepare(void) {
  int ret = op_common();
  mbedtls_sha256_init(&op_sha);
  return ret != 0 ? ret : mbedtls_sha256_starts(&op_sha, 0);
}
static int sha256_run(void) { return mbedtls_sha256_update(&op_sha, op_in, FW_OP_BYTES); }
static void sha256_release(void) {
  mbedtls_sha256_finish(&op_sha, op_hash);
  mbedtls_sha256_free(&op_sha);
}
#define SHA256_OP(name) \
  { name, sha256_prepare, sha256_run, sha256_release, NULL }
#else
#define SHA256_OP(name) \
  { name, NULL, NULL, NULL, "no SHA-256 in this build (MBEDTLS_SHA256_C)" }
#endif

#if defined(MBEDTLS_HKDF_C) && defined(MBEDTLS_SHA256_C)
static int hkdf_run(void) {
  return mbedtls_hkdf(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), op_in, 32, op_key, 32,
                      op_in + 32, 16, op_secret, 32);
}
#define HKDF_OP(name) \
  { name, op_common, hkdf_run, op_none, NULL }
#else
#define HKDF_OP(name) \
  { name, NULL, NULL, NULL, "no HKDF in this build (MBEDTLS_HKDF_C)" }
#endif

const fw_op fw_ops[] = {
    P256_OP("p256_keygen", ec_keygen_prepare, p256_keygen_run),
    P256_OP("p256_ecdh", p256_pair_prepare, ec_shared),
    ECDSA_OP("p256_sign", p256_sign_run),
    ECDSA_OP("p256_verify", p256_verify_run),
    X25519_OP("x25519_keygen", ec_keygen_prepare, x25519_keygen_run),
    X25519_OP("x25519_shared", x25519_pair_prepare, ec_shared),
    RSA_OP("rsa2048_public", rsa_public_run),
    RSA_OP("rsa2048_private", rsa_private_run),
    GCM_OP("aes128gcm_kib"),
    CHACHAPOLY_OP("chacha20poly1305_kib"),
    SHA256_OP("sha256_kib"),
    HKDF_OP("hkdf_sha256"),
    {"mldsa44_sign", NULL, NULL, NULL, NO_ML_DSA},
    {"mldsa44_verify", NULL, NULL, NULL, NO_ML_DSA},
};
#else
#define OLD_API "the operations are written for mbedTLS 3's API (2.28's signatures differ)"
const fw_op fw_ops[] = {
    {"p256_keygen", NULL, NULL, NULL, OLD_API},
    {"p256_ecdh", NULL, NULL, NULL, OLD_API},
    {"p256_sign", NULL, NULL, NULL, OLD_API},
    {"p256_verify", NULL, NULL, NULL, OLD_API},
    {"x25519_keygen", NULL, NULL, NULL, OLD_API},
    {"x25519_shared", NULL, NULL, NULL, OLD_API},
    {"rsa2048_public", NULL, NULL, NULL, OLD_API},
    {"rsa2048_private", NULL, NULL, NULL, OLD_API},
    {"aes128gcm_kib", NULL, NULL, NULL, OLD_API},
    {"chacha20poly1305_kib", NULL, NULL, NULL, OLD_API},
    {"sha256_kib", NULL, NULL, NULL, OLD_API},
    {"hkdf_sha256", NULL, NULL, NULL, OLD_API},
    {"mldsa44_sign", NULL, NULL, NULL, NO_ML_DSA},
    {"mldsa44_verify", NULL, NULL, NULL, NO_ML_DSA},
};
#endif
const size_t fw_op_count = sizeof fw_ops / sizeof fw_ops[0];
