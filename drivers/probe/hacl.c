/* Build probe for HACL*: which ChaCha20-Poly1305 the build provides (read from the program
 * as linked for the hacl-c snapshot), whether this CPU runs it, and one known answer (the
 * first ciphertext block and the tag of RFC 8439 section 2.8.2). */
#include <stdint.h>
#include <string.h>

#include "../adapters/hacl_api.h"
#include "probe_json.h"

static const char rfc_plaintext[] =
    "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, "
    "sunscreen would be it.";

int main(void) {
  uint8_t key[32], nonce[12] = {7, 0, 0, 0, 0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47};
  uint8_t ad[12] = {0x50, 0x51, 0x52, 0x53, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7};
  uint8_t ct[sizeof(rfc_plaintext)], tag[16];
  static const uint8_t first[16] = {0xd3, 0x1a, 0x8d, 0x34, 0x64, 0x8e, 0x60, 0xdb,
                                    0x7b, 0x86, 0xaf, 0xbc, 0x53, 0xef, 0x7e, 0xc2};
  static const uint8_t expect_tag[16] = {0x1a, 0xe1, 0x0b, 0x59, 0x4f, 0x09, 0xe2, 0x6a,
                                         0x7e, 0x90, 0x2e, 0xcb, 0xd0, 0x60, 0x06, 0x91};
  for (int i = 0; i < 32; i++) key[i] = (uint8_t)(0x80 + i);
  const char *missing = hacl_cpu_missing();
  probe_str("library", "hacl");
  probe_str("version", hacl_source);
  probe_str("chacha20poly1305", hacl_path());
#ifdef KRML_NOUINT128
  probe_str("uint128", "kremlib's portable arithmetic (KRML_NOUINT128)");
#else
  probe_str("uint128", "the compiler's unsigned __int128 where it has one");
#endif
  probe_str("cpu_lacks", missing);
  if (missing == NULL) {
    hacl_seal(ct, tag, (uint8_t *)rfc_plaintext, sizeof(rfc_plaintext) - 1, ad, sizeof(ad), key,
              nonce);
    probe_bool("rfc8439_ok", memcmp(ct, first, 16) == 0 && memcmp(tag, expect_tag, 16) == 0);
  }
  probe_str("tls", "none (AEAD-only library: no TLS)");
  probe_long("pointer_bits", (long)(8 * sizeof(void *)));
  probe_end();
  return 0;
}
