/* Build probe for OpenSSL: what OpenSSL_version() reports about the build and the CPU. */
#include <openssl/crypto.h>
#include <openssl/opensslv.h>

#include "probe_json.h"

int main(void) {
  probe_str("library", "openssl");
  probe_str("version", OpenSSL_version(OPENSSL_VERSION));
  probe_str("OPENSSL_VERSION_TEXT", OPENSSL_VERSION_TEXT);
  probe_str("cflags", OpenSSL_version(OPENSSL_CFLAGS));
  probe_str("platform", OpenSSL_version(OPENSSL_PLATFORM));
  probe_str("built_on", OpenSSL_version(OPENSSL_BUILT_ON));
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  probe_str("cpu_info", OpenSSL_version(OPENSSL_CPU_INFO));
  probe_str("modules_dir", OpenSSL_version(OPENSSL_MODULES_DIR));
#else
  /* 1.1.1 reports neither; the capability vector its assembly dispatches on is the same. */
  probe_str("cpu_info", "not reported by OpenSSL 1.1.1");
  probe_str("modules_dir", "none (OpenSSL 1.1.1 has no providers)");
#endif
  probe_long("pointer_bits", (long)(8 * sizeof(void *)));
  probe_end();
  return 0;
}
