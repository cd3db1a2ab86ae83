/* Build probe of the null "library" (the harness baseline): nothing to report but itself. */
#include "probe_json.h"

int main(void) {
  probe_str("library", "null");
  probe_str("version", "null 1 (no TLS)");
  probe_long("pointer_bits", (long)(8 * sizeof(void *)));
  probe_end();
  return 0;
}
