/* Build probe for Botan: what the built library says about itself (its version, from the
 * header and at run time) and which of the modules tlsbench relies on this build has. A C++
 * program, as Botan's API is C++. */
#include <botan/build.h>
#include <botan/version.h>

#include <string>

#include "probe_json.h"

int main() {
  probe_str("library", "botan");
  const std::string version = Botan::version_string();
  probe_str("version", version.c_str());
  probe_long("version_major", BOTAN_VERSION_MAJOR);
  probe_long("version_minor", BOTAN_VERSION_MINOR);
  probe_long("version_patch", BOTAN_VERSION_PATCH);
  probe_long("pointer_bits", static_cast<long>(8 * sizeof(void *)));
#if defined(BOTAN_HAS_TLS_12)
  probe_bool("tls12", 1);
#else
  probe_bool("tls12", 0);
#endif
#if defined(BOTAN_HAS_TLS_13)
  probe_bool("tls13", 1);
#else
  probe_bool("tls13", 0);
#endif
#if defined(BOTAN_HAS_TLS_CBC)
  probe_bool("tls_cbc", 1);
#else
  probe_bool("tls_cbc", 0);
#endif
#if defined(BOTAN_HAS_TLS_13_PQC)
  probe_bool("tls13_pqc", 1);
#else
  probe_bool("tls13_pqc", 0);
#endif
#if defined(BOTAN_HAS_LOCKING_ALLOCATOR)
  probe_bool("locking_allocator", 1);
#else
  probe_bool("locking_allocator", 0);
#endif
  probe_end();
  return 0;
}
