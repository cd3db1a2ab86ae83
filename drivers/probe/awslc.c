/* Build probe for AWS-LC: its version, whether the assembly was compiled in (the no-asm
 * variant) and what the CPU dispatch selected. */
#include <openssl/aead.h>
#include <openssl/base.h>
#include <openssl/crypto.h>
#include <openssl/service_indicator.h>

#include "probe_json.h"

int main(void) {
  CRYPTO_library_init();
  probe_str("library", "awslc");
  probe_str("version", awslc_version_string());
  probe_str("AWSLC_VERSION_NUMBER_STRING", AWSLC_VERSION_NUMBER_STRING);
  probe_long("AWSLC_API_VERSION", (long)AWSLC_API_VERSION);
  probe_str("openssl_compat_version", OpenSSL_version(OPENSSL_VERSION));
  /* 0 only in an OPENSSL_NO_ASM build: the library says so itself. */
  probe_bool("CRYPTO_has_asm", CRYPTO_has_asm());
  /* AES-GCM on AES-NI + CLMUL, as the library's run-time dispatch decided. */
  probe_bool("EVP_has_aes_hardware", EVP_has_aes_hardware());
  probe_bool("FIPS_mode", FIPS_mode());
  probe_long("pointer_bits", (long)(8 * sizeof(void *)));
  probe_end();
  return 0;
}
