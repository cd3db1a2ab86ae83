/* Build probe for BearSSL: what the built library says about itself. BearSSL has no version
 * call (the recipe passes the pinned release), so the probe reports the sizes a caller must
 * provide (BearSSL allocates nothing) and the implementations its default set-up picks on
 * this CPU. */
#include <bearssl.h>

#include "probe_json.h"

#ifndef TB_BEARSSL_VERSION
#define TB_BEARSSL_VERSION "unknown"
#endif

int main(void) {
  probe_str("library", "bearssl");
  probe_str("version", TB_BEARSSL_VERSION);
  probe_long("pointer_bits", (long)(8 * sizeof(void *)));
  /* The caller's memory per connection: the engine context and the I/O buffer. */
  probe_long("client_context_bytes", (long)sizeof(br_ssl_client_context));
  probe_long("server_context_bytes", (long)sizeof(br_ssl_server_context));
  probe_long("x509_minimal_context_bytes", (long)sizeof(br_x509_minimal_context));
  probe_long("bufsize_bidi", (long)BR_SSL_BUFSIZE_BIDI);
  probe_long("bufsize_mono", (long)BR_SSL_BUFSIZE_MONO);
  /* What br_ssl_engine_set_default_* pick at run time (NULL: the CPU or build lacks it). */
  probe_bool("aes_x86ni", br_aes_x86ni_ctr_get_vtable() != NULL);
  probe_bool("ghash_pclmul", br_ghash_pclmul_get() != 0);
  probe_bool("chacha20_sse2", br_chacha20_sse2_get() != 0);
  probe_bool("poly1305_ctmulq", br_poly1305_ctmulq_get() != 0);
  probe_bool("rsa_i62", br_rsa_i62_public_get() != 0);
  probe_long("ec_curves_mask", (long)br_ec_get_default()->supported_curves);
  probe_end();
  return 0;
}
