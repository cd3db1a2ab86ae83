/* Build probe for rustls (rustls-ffi): the version string the library reports, which names
 * the rustls-ffi and rustls versions and the crypto provider compiled in, and the provider
 * and post-quantum preference the build was configured with. */
#include <stdio.h>

#include "probe_json.h"
#include "rustls.h"

int main(void) {
  rustls_str v = rustls_version(); /* "rustls-ffi/0.15.7/rustls/0.23.46/aws-lc-rs" */
  char version[128];
  snprintf(version, sizeof(version), "%.*s", (int)v.len, v.data);
  probe_str("library", "rustls");
  probe_str("version", version);
  probe_str("crypto_provider", TB_RUSTLS_PROVIDER);
  probe_bool("prefer_post_quantum", TB_RUSTLS_PREFER_PQ);
  probe_long("default_suites", (long)rustls_default_crypto_provider_ciphersuites_len());
  probe_long("pointer_bits", (long)(8 * sizeof(void *)));
  probe_end();
  return 0;
}
