/* Build probe for BoringSSL: its API version, whether the build has assembly (as the
 * recipe compiled it, and as seen at run time: without assembly no AES hardware path
 * exists, so EVP_has_aes_hardware() is 0 even on an AES-NI CPU), and FIPS mode. */
#include <openssl/aead.h>
#include <stdio.h>

#include <openssl/base.h>
#include <openssl/crypto.h>

#include "probe_json.h"

int main(void) {
  CRYPTO_library_init();
  probe_str("library", "boringssl");
  /* BoringSSL has no releases: its API version is the only version it states (as the
   * adapter's info says it too). */
  char version[64];
  snprintf(version, sizeof(version), "%s (API version %d)", OpenSSL_version(OPENSSL_VERSION),
           BORINGSSL_API_VERSION);
  probe_str("version", version);
  probe_long("BORINGSSL_API_VERSION", BORINGSSL_API_VERSION);
  probe_str("OPENSSL_VERSION_TEXT", OPENSSL_VERSION_TEXT);
#ifdef OPENSSL_NO_ASM
  probe_bool("OPENSSL_NO_ASM", 1);
#else
  probe_bool("OPENSSL_NO_ASM", 0);
#endif
  probe_bool("aes_hardware_in_use", EVP_has_aes_hardware());
  probe_bool("FIPS_mode", FIPS_mode());
  probe_long("pointer_bits", (long)(8 * sizeof(void *)));
  probe_end();
  return 0;
}
