/* Build probe for mbedTLS: what the built library reports about its configuration. */
#include <mbedtls/version.h> /* first: it pulls in the build's configuration, 2.x and 3.x */
#include <mbedtls/ssl.h>
#if MBEDTLS_VERSION_MAJOR >= 3 && defined(MBEDTLS_PSA_CRYPTO_C)
#include <psa/crypto.h>
#endif

#include <string.h>

#include "probe_json.h"

/* Config options whose presence the library reports through mbedtls_version_check_feature. */
static const char *const features[] = {
    "MBEDTLS_HAVE_ASM",
    "MBEDTLS_AESNI_C",
    "MBEDTLS_SSL_PROTO_TLS1_2",
    "MBEDTLS_SSL_PROTO_TLS1_3",
    "MBEDTLS_SSL_SESSION_TICKETS",
    "MBEDTLS_SSL_MAX_FRAGMENT_LENGTH",
    "MBEDTLS_KEY_EXCHANGE_RSA_ENABLED",
    "MBEDTLS_KEY_EXCHANGE_DHE_RSA_ENABLED",
    "MBEDTLS_KEY_EXCHANGE_ECDHE_RSA_ENABLED",
    "MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED",
    "MBEDTLS_PSA_CRYPTO_C",
    "MBEDTLS_USE_PSA_CRYPTO",
    "MBEDTLS_THREADING_C",
};

/* mbedtls_ssl_setup() insists on an RNG; the probe never handshakes, so zeros will do. */
static int no_rng(void *ctx, unsigned char *out, size_t len) {
  (void)ctx;
  memset(out, 0, len);
  return 0;
}

int main(void) {
  char version[64];
  mbedtls_version_get_string_full(version);
  probe_str("library", "mbedtls");
  probe_str("version", version);
  probe_long("version_number", (long)mbedtls_version_get_number());
  probe_long("pointer_bits", (long)(8 * sizeof(void *)));
  /* The record buffers the compiled library really allocates: asked of a live context. */
#if MBEDTLS_VERSION_MAJOR >= 3 && defined(MBEDTLS_PSA_CRYPTO_C)
  if (psa_crypto_init() != PSA_SUCCESS) {
    fprintf(stderr, "psa_crypto_init failed\n");
    return 1;
  }
#endif
  mbedtls_ssl_config conf;
  mbedtls_ssl_context ssl;
  mbedtls_ssl_config_init(&conf);
  mbedtls_ssl_init(&ssl);
  if (mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                  MBEDTLS_SSL_PRESET_DEFAULT) != 0 ||
      (mbedtls_ssl_conf_rng(&conf, no_rng, NULL), mbedtls_ssl_setup(&ssl, &conf)) != 0) {
    fprintf(stderr, "mbedtls_ssl_setup failed\n");
    return 1;
  }
  probe_long("max_out_record_payload", (long)mbedtls_ssl_get_max_out_record_payload(&ssl));
#if MBEDTLS_VERSION_MAJOR >= 3
  probe_long("max_in_record_payload", (long)mbedtls_ssl_get_max_in_record_payload(&ssl));
#else
  probe_long("max_in_record_payload", (long)mbedtls_ssl_get_input_max_frag_len(&ssl));
#endif
  mbedtls_ssl_free(&ssl);
  mbedtls_ssl_config_free(&conf);
  probe_long("MBEDTLS_SSL_IN_CONTENT_LEN", (long)MBEDTLS_SSL_IN_CONTENT_LEN);
  probe_long("MBEDTLS_SSL_OUT_CONTENT_LEN", (long)MBEDTLS_SSL_OUT_CONTENT_LEN);
  for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
    probe_bool(features[i], mbedtls_version_check_feature(features[i]) == 0);
  }
  probe_end();
  return 0;
}
