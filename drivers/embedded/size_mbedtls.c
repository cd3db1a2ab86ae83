/* Minimal TLS program for code-size measurement: what one role (client, or server with
 * TLSBENCH_SERVER) links to do size_io.h's job with mbedTLS at its defaults. It is linked
 * with section garbage collection and measured with `size`; on Linux it runs. */
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>
/* TLS 1.3 (3.x) and TLS on PSA keys need PSA started; 2.28's TLS 1.2 does not, and calling
 * psa_crypto_init there would link PSA's core (62 kB) that its TLS never uses. */
#if defined(MBEDTLS_PSA_CRYPTO_C) && \
    (defined(MBEDTLS_SSL_PROTO_TLS1_3) || defined(MBEDTLS_USE_PSA_CRYPTO))
#define SIZE_PSA 1
#include <psa/crypto.h>
#endif

#include "size_io.h"

#if defined(MBEDTLS_ENTROPY_HARDWARE_ALT)
/* A microcontroller build (cortex-m7) takes its entropy from the board; this program is
 * never run there, so a stand-in that links is all it needs (a few bytes, like a real
 * driver). */
int mbedtls_hardware_poll(void *data, unsigned char *output, size_t len, size_t *olen) {
  (void)data;
  (void)output;
  *olen = len;
  return 0;
}
#endif

static int send_cb(void *ctx, const unsigned char *buf, size_t len) {
  return (int)size_send(*(int *)ctx, buf, len);
}

static int recv_cb(void *ctx, unsigned char *buf, size_t len) {
  return (int)size_recv(*(int *)ctx, buf, len);
}

/* One record's bytes; a TLS 1.3 client first sees the server's tickets go by. */
static int read_record(mbedtls_ssl_context *ssl, unsigned char *buf, size_t len) {
  int ret;
  do {
    ret = mbedtls_ssl_read(ssl, buf, len);
#if defined(MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
  } while (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET);
#else
  } while (ret == MBEDTLS_ERR_SSL_WANT_READ);
#endif
  return ret;
}

int main(int argc, char **argv) {
  int fd = size_open(argc, argv);
  if (fd < 0) return 1;
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  mbedtls_ssl_config conf;
  mbedtls_ssl_context ssl;
  mbedtls_x509_crt crt;
  mbedtls_entropy_init(&entropy);
  mbedtls_ctr_drbg_init(&drbg);
  mbedtls_ssl_config_init(&conf);
  mbedtls_ssl_init(&ssl);
  mbedtls_x509_crt_init(&crt);
#if defined(SIZE_PSA)
  if (psa_crypto_init() != PSA_SUCCESS) return 1;
#endif
  if (mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy, NULL, 0) != 0) return 1;
#ifdef TLSBENCH_SERVER
  const char *chain = SIZE_CHAIN_PEM(argv), *key_pem = SIZE_KEY_PEM(argv);
  if (mbedtls_x509_crt_parse(&crt, (const unsigned char *)chain, strlen(chain) + 1) != 0) return 1;
  mbedtls_pk_context key;
  mbedtls_pk_init(&key);
#if MBEDTLS_VERSION_MAJOR >= 3
  if (mbedtls_pk_parse_key(&key, (const unsigned char *)key_pem, strlen(key_pem) + 1, NULL, 0,
                           mbedtls_ctr_drbg_random, &drbg) != 0)
    return 1;
#else
  if (mbedtls_pk_parse_key(&key, (const unsigned char *)key_pem, strlen(key_pem) + 1, NULL, 0) != 0)
    return 1;
#endif
  if (mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
                                  MBEDTLS_SSL_PRESET_DEFAULT) != 0)
    return 1;
  if (mbedtls_ssl_conf_own_cert(&conf, &crt, &key) != 0) return 1;
#else
  const char *ca = SIZE_CA_PEM(argv);
  if (mbedtls_x509_crt_parse(&crt, (const unsigned char *)ca, strlen(ca) + 1) != 0) return 1;
  if (mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                  MBEDTLS_SSL_PRESET_DEFAULT) != 0)
    return 1;
  mbedtls_ssl_conf_ca_chain(&conf, &crt, NULL);
  mbedtls_ssl_conf_authmode(&conf, MBEDTLS_SSL_VERIFY_REQUIRED);
#endif
  mbedtls_ssl_conf_rng(&conf, mbedtls_ctr_drbg_random, &drbg);
  if (mbedtls_ssl_setup(&ssl, &conf) != 0) return 1;
#ifndef TLSBENCH_SERVER
  if (mbedtls_ssl_set_hostname(&ssl, SIZE_SERVER_NAME) != 0) return 1; /* SNI, verified name */
#endif
  mbedtls_ssl_set_bio(&ssl, &fd, send_cb, recv_cb, NULL);
  int ret = mbedtls_ssl_handshake(&ssl);
  unsigned char buf[SIZE_RECORD_LEN];
  int ok = 0;
#ifdef TLSBENCH_SERVER
  if (ret == 0) ret = read_record(&ssl, buf, sizeof buf);
  if (ret > 0) ok = mbedtls_ssl_write(&ssl, buf, (size_t)ret) == ret;
#else
  size_fill(buf);
  if (ret == 0) ret = mbedtls_ssl_write(&ssl, buf, sizeof buf);
  if (ret == (int)sizeof buf) ret = read_record(&ssl, buf, sizeof buf);
  ok = ret > 0 && size_echoed(buf, (size_t)ret);
#endif
  mbedtls_ssl_close_notify(&ssl);
  size_close(fd);
  mbedtls_ssl_free(&ssl);
  mbedtls_ssl_config_free(&conf);
  mbedtls_x509_crt_free(&crt);
  return !ok;
}
