/* Build probe for GnuTLS: its version and the nettle it was built with. */
#include <gnutls/gnutls.h>
#include <nettle/version.h>

#include "probe_json.h"

int main(void) {
  char nettle[32];
  snprintf(nettle, sizeof(nettle), "%d.%d", nettle_version_major(), nettle_version_minor());
  probe_str("library", "gnutls");
  probe_str("version", gnutls_check_version(NULL));
  probe_str("header_version", GNUTLS_VERSION);
  probe_str("nettle_version", nettle);
  probe_bool("fips140_mode", gnutls_fips140_mode_enabled() != 0);
  probe_long("pointer_bits", (long)(8 * sizeof(void *)));
  probe_end();
  return 0;
}
