/* Build probe for NSS: what the built library says about itself (NSS's and NSPR's versions,
 * the number of cipher suites it implements) and which of freebl's CPU paths it found. */
#include <nss.h>
#include <prinit.h>
#include <ssl.h>

#include "probe_json.h"

int main(void) {
  probe_str("library", "nss");
  probe_str("version", NSS_GetVersion());
  probe_str("header_version", NSS_VERSION);
  probe_str("nspr_version", PR_GetVersion());
  probe_long("pointer_bits", (long)(8 * sizeof(void *)));
  probe_long("implemented_suites", (long)SSL_GetNumImplementedCiphers());
  probe_end();
  return 0;
}
