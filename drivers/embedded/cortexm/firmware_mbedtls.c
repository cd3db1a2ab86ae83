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

int fw_setup(enum fw_side side, const fw_job *job) {
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
