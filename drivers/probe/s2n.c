/* Build probe for s2n-tls: its release (the recipe passes the pinned one: s2n-tls states it
 * nowhere), the libcrypto it was built with, and whether that libcrypto gives it TLS 1.3 in
 * full and the ML-KEM groups (s2n's own feature probes, as its build found them). */
#include <s2n.h>
#include <stdio.h>

#include "probe_json.h"

#ifndef TB_S2N_VERSION
#define TB_S2N_VERSION "unknown"
#endif

int main(void) {
  char text[32];
  s2n_disable_atexit();
  if (s2n_init() != S2N_SUCCESS) {
    fprintf(stderr, "s2n_init: %s\n", s2n_strerror(s2n_errno, "EN"));
    return 1;
  }
  probe_str("library", "s2n");
  probe_str("version", TB_S2N_VERSION);
  snprintf(text, sizeof(text), "0x%lx", s2n_get_openssl_version());
  probe_str("libcrypto_version_number", text);
  s2n_fips_mode fips = S2N_FIPS_MODE_DISABLED;
  s2n_get_fips_mode(&fips);
  probe_bool("fips_mode", fips == S2N_FIPS_MODE_ENABLED);
#ifdef S2N_LIBCRYPTO_SUPPORTS_EVP_KEM
  probe_bool("mlkem", 1);
#else
  probe_bool("mlkem", 0);
#endif
  probe_long("pointer_bits", (long)(8 * sizeof(void *)));
  probe_end();
  s2n_cleanup_final();
  return 0;
}
