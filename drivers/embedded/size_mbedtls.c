/* Minimal TLS program for code-size measurement: what one role (client, or server with
 * TLSBENCH_SERVER) must link to run a handshake with mbedTLS. It is linked with section
 * garbage collection and measured with `size`; it is never run, so it carries no keys. */
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>
#include <stddef.h>

#if defined(MBEDTLS_ENTROPY_HARDWARE_ALT)
/* A microcontroller build (cortex-m7) takes its entropy from the board; this program is
 * never run, so a stand-in that links is all it needs (a few bytes, like a real driver). */
int mbedtls_hardware_poll(void *data, unsigned char *output, size_t len, size_t *olen) {
  (void)data;
  (void)output;
  *olen = len;
  return 0;
}
#endif

static int send_cb(void *ctx, const unsigned char *buf, size_t len) {
  (void)ctx;
  (void)buf;
  return (int)len;
}

static int recv_cb(void *ctx, unsigned char *buf, size_t len) {
  (void)ctx;
  (void)buf;
  (void)len;
  return MBEDTLS_ERR_SSL_WANT_READ;
}

int main(int argc, char **argv) {
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  mbedtls_ssl_config conf;
  mbedtls_ssl_context ssl;
  mbedtls_x509_crt crt;
  /* The certificate (and key) come from argv so nothing is folded away at compile time. */
  const unsigned char *pem = (const unsigned char *)(argc > 1 ? argv[1] : "");
  size_t pem_len = argc > 1 ? (size_t)argc : 0;
  mbedtls_entropy_init(&entropy);
  mbedtls_ctr_drbg_init(&drbg);
  mbedtls_ssl_config_init(&conf);
  mbedtls_ssl_init(&ssl);
  mbedtls_x509_crt_init(&crt);
  if (mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy, NULL, 0) != 0) return 1;
  if (mbedtls_x509_crt_parse(&crt, pem, pem_len) != 0) return 1;
#ifdef TLSBENCH_SERVER
  mbedtls_pk_context key;
  mbedtls_pk_init(&key);
#if MBEDTLS_VERSION_MAJOR >= 3
  if (mbedtls_pk_parse_key(&key, pem, pem_len, NULL, 0, mbedtls_ctr_drbg_random, &drbg) != 0)
    return 1;
#else
  if (mbedtls_pk_parse_key(&key, pem, pem_len, NULL, 0) != 0) return 1;
#endif
  if (mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
                                  MBEDTLS_SSL_PRESET_DEFAULT) != 0)
    return 1;
  if (mbedtls_ssl_conf_own_cert(&conf, &crt, &key) != 0) return 1;
#else
  if (mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                  MBEDTLS_SSL_PRESET_DEFAULT) != 0)
    return 1;
  mbedtls_ssl_conf_ca_chain(&conf, &crt, NULL);
  mbedtls_ssl_conf_authmode(&conf, MBEDTLS_SSL_VERIFY_REQUIRED);
#endif
  mbedtls_ssl_conf_rng(&conf, mbedtls_ctr_drbg_random, &drbg);
  if (mbedtls_ssl_setup(&ssl, &conf) != 0) return 1;
  mbedtls_ssl_set_bio(&ssl, NULL, send_cb, recv_cb, NULL);
  int ret = mbedtls_ssl_handshake(&ssl);
  unsigned char buf[64];
  if (ret == 0) ret = mbedtls_ssl_write(&ssl, buf, sizeof buf);
  if (ret >= 0) ret = mbedtls_ssl_read(&ssl, buf, sizeof buf);
  mbedtls_ssl_close_notify(&ssl);
  mbedtls_ssl_free(&ssl);
  mbedtls_ssl_config_free(&conf);
  mbedtls_x509_crt_free(&crt);
  return ret < 0;
}
