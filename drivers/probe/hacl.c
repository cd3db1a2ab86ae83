/* Build probe for HACL*: which ChaCha20 the verified AEAD calls and how Poly1305 multiplies,
 * read from the program as linked, and one known answer (RFC 8439 section 2.8.2's tag). */
#include <stdint.h>
#include <string.h>

#include "Hacl_Chacha20Poly1305.h"
#include "probe_json.h"

/* Linked in only when the AEAD calls it (see adapters/hacl.c). */
extern void Hacl_Chacha20_Vec128_chacha20(uint8_t *output, uint8_t *plain, uint32_t len, uint8_t *k,
                                          uint8_t *n1, uint32_t ctr) __attribute__((weak));

int main(void) {
  /* RFC 8439 section 2.8.2: key 80..9f, nonce 07000000 40..47, AD 50515253 c0..c7, and the
   * first 16 bytes of its plaintext; the expected bytes are the ciphertext's first 16. */
  uint8_t key[32], nonce[12] = {7, 0, 0, 0, 0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47};
  uint8_t ad[12] = {0x50, 0x51, 0x52, 0x53, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7};
  uint8_t pt[16], ct[16], tag[16];
  static const uint8_t expect[16] = {0xd3, 0x1a, 0x8d, 0x34, 0x64, 0x8e, 0x60, 0xdb,
                                     0x7b, 0x86, 0xaf, 0xbc, 0x53, 0xef, 0x7e, 0xc2};
  for (int i = 0; i < 32; i++) key[i] = (uint8_t)(0x80 + i);
  memcpy(pt, "Ladies and Gentl", 16);
  Hacl_Chacha20Poly1305_aead_encrypt(ct, tag, pt, 16, ad, 12, key, nonce);
  probe_str("library", "hacl");
  probe_str("version", "HACL* (hacl-c snapshot)");
  probe_str("chacha20", Hacl_Chacha20_Vec128_chacha20 != NULL ? "vec128" : "portable");
#ifdef KRML_NOUINT128
  probe_str("poly1305_uint128", "kremlib (KRML_NOUINT128)");
#else
  probe_str("poly1305_uint128", "compiler (unsigned __int128)");
#endif
  probe_bool("rfc8439_ciphertext_ok", memcmp(ct, expect, 16) == 0);
  probe_str("tls", "none (AEAD-only library: no TLS)");
  probe_long("pointer_bits", (long)(8 * sizeof(void *)));
  probe_end();
  return 0;
}
