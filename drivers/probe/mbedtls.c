/* Build probe for mbedTLS: what the built library reports about its configuration. */
#include <mbedtls/version.h> /* first: it pulls in the build's configuration, 2.x and 3.x */
#include <mbedtls/ssl.h>
#if MBEDTLS_VERSION_MAJOR >= 3 && defined(MBEDTLS_PSA_CRYPTO_C)
#include <psa/crypto.h>
#endif

#include <string.h>

#include "probe_json.h"

/* Config options whose presence the probe reports, read from the build's configuration by the
 * preprocessor: a user's config file may leave out MBEDTLS_VERSION_C / _FEATURES, which the
 * library's own mbedtls_version_check_feature needs (and the `small` feature drops). */
#define FEATURE(name) \
  { #name, 1 }
#define NO_FEATURE(name) \
  { #name, 0 }
static const struct {
  const char *name;
  int on;
} features[] = {
#ifdef MBEDTLS_HAVE_ASM
    FEATURE(MBEDTLS_HAVE_ASM),
#else
    NO_FEATURE(MBEDTLS_HAVE_ASM),
#endif
#ifdef MBEDTLS_AESNI_C
    FEATURE(MBEDTLS_AESNI_C),
#else
    NO_FEATURE(MBEDTLS_AESNI_C),
#endif
#ifdef MBEDTLS_SSL_PROTO_TLS1_2
    FEATURE(MBEDTLS_SSL_PROTO_TLS1_2),
#else
    NO_FEATURE(MBEDTLS_SSL_PROTO_TLS1_2),
#endif
#ifdef MBEDTLS_SSL_PROTO_TLS1_3
    FEATURE(MBEDTLS_SSL_PROTO_TLS1_3),
#else
    NO_FEATURE(MBEDTLS_SSL_PROTO_TLS1_3),
#endif
#ifdef MBEDTLS_SSL_SESSION_TICKETS
    FEATURE(MBEDTLS_SSL_SESSION_TICKETS),
#else
    NO_FEATURE(MBEDTLS_SSL_SESSION_TICKETS),
#endif
#ifdef MBEDTLS_SSL_MAX_FRAGMENT_LENGTH
    FEATURE(MBEDTLS_SSL_MAX_FRAGMENT_LENGTH),
#else
    NO_FEATURE(MBEDTLS_SSL_MAX_FRAGMENT_LENGTH),
#endif
#ifdef MBEDTLS_KEY_EXCHANGE_RSA_ENABLED
    FEATURE(MBEDTLS_KEY_EXCHANGE_RSA_ENABLED),
#else
    NO_FEATURE(MBEDTLS_KEY_EXCHANGE_RSA_ENABLED),
#endif
#ifdef MBEDTLS_KEY_EXCHANGE_DHE_RSA_ENABLED
    FEATURE(MBEDTLS_KEY_EXCHANGE_DHE_RSA_ENABLED),
#else
    NO_FEATURE(MBEDTLS_KEY_EXCHANGE_DHE_RSA_ENABLED),
#endif
#ifdef MBEDTLS_KEY_EXCHANGE_ECDHE_RSA_ENABLED
    FEATURE(MBEDTLS_KEY_EXCHANGE_ECDHE_RSA_ENABLED),
#else
    NO_FEATURE(MBEDTLS_KEY_EXCHANGE_ECDHE_RSA_ENABLED),
#endif
#ifdef MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED
    FEATURE(MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED),
#else
    NO_FEATURE(MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED),
#endif
#ifdef MBEDTLS_PSA_CRYPTO_C
    FEATURE(MBEDTLS_PSA_CRYPTO_C),
#else
    NO_FEATURE(MBEDTLS_PSA_CRYPTO_C),
#endif
#ifdef MBEDTLS_USE_PSA_CRYPTO
    FEATURE(MBEDTLS_USE_PSA_CRYPTO),
#else
    NO_FEATURE(MBEDTLS_USE_PSA_CRYPTO),
#endif
#ifdef MBEDTLS_THREADING_C
    FEATURE(MBEDTLS_THREADING_C),
#else
    NO_FEATURE(MBEDTLS_THREADING_C),
#endif
};

/* mbedtls_ssl_setup() insists on an RNG; the probe never handshakes, so zeros will do. */
static int no_rng(void *ctx, unsigned char *out, size_t len) {
  (void)ctx;
  memset(out, 0, len);
  return 0;
}

int main(void) {
  /* The version from version.h's macros: mbedtls_version_get_* need MBEDTLS_VERSION_C, which a
   * user's config file may leave out. */
  probe_str("library", "mbedtls");
  probe_str("version", MBEDTLS_VERSION_STRING_FULL);
  probe_long("version_number", (long)MBEDTLS_VERSION_NUMBER);
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
    probe_bool(features[i].name, features[i].on);
  }
  probe_end();
  return 0;
}
