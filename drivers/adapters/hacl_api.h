/*
 * The HACL* ChaCha20-Poly1305 a build provides, behind one signature, for the adapter and
 * the probe. Two source trees (recipes/hacl.py):
 *  - the 2017 hacl-c snapshot: Hacl_Chacha20Poly1305_aead_{encrypt,decrypt}; which ChaCha20
 *    it calls (scalar or Hacl_Chacha20_Vec128) is fixed at link time, and read back here;
 *  - hacl-packages (TLSBENCH_HACL_PACKAGES): Hacl_AEAD_Chacha20Poly1305{,_Simd128,_Simd256},
 *    the one TLSBENCH_HACL_SIMD (0, 128, 256) names.
 * The extracted C takes non-const pointers throughout (F* buffers carry no const); its
 * specification (only the output buffers are modified) makes the callers' casts safe.
 */
#ifndef TLSBENCH_HACL_API_H
#define TLSBENCH_HACL_API_H

#include <stdint.h>

/* The crate that bundled the tree, NAME-VERSION (recipes/hacl.py), as a string: passed
 * without quotes (they do not survive CMake's lists intact) and stringified here. */
#define HACL_STR_(x) #x
#define HACL_STR(x) HACL_STR_(x)
#define HACL_CRATE HACL_STR(TLSBENCH_HACL_CRATE)

#ifdef TLSBENCH_HACL_PACKAGES

#include "Hacl_AEAD_Chacha20Poly1305.h"
#include "Hacl_AEAD_Chacha20Poly1305_Simd128.h"
#include "Hacl_AEAD_Chacha20Poly1305_Simd256.h"

#if TLSBENCH_HACL_SIMD == 256
#define HACL_AEAD(op) Hacl_AEAD_Chacha20Poly1305_Simd256_##op
#define HACL_PATH "vec256"
#define HACL_CPU "avx2"
#elif TLSBENCH_HACL_SIMD == 128
#define HACL_AEAD(op) Hacl_AEAD_Chacha20Poly1305_Simd128_##op
#define HACL_PATH "vec128"
#define HACL_CPU "avx"
#else
#define HACL_AEAD(op) Hacl_AEAD_Chacha20Poly1305_##op
#define HACL_PATH "portable"
#endif

static const char hacl_source[] = "hacl-packages C from " HACL_CRATE;

static inline void hacl_seal(uint8_t *out, uint8_t *tag, uint8_t *in, uint32_t len, uint8_t *ad,
                             uint32_t ad_len, uint8_t *key, uint8_t *nonce) {
  HACL_AEAD(encrypt)(out, tag, in, len, ad, ad_len, key, nonce);
}

/* 0: the tag verified and `out` holds the plaintext. */
static inline uint32_t hacl_open(uint8_t *out, uint8_t *in, uint32_t len, uint8_t *tag, uint8_t *ad,
                                 uint32_t ad_len, uint8_t *key, uint8_t *nonce) {
  return HACL_AEAD(decrypt)(out, in, len, ad, ad_len, key, nonce, tag);
}

static inline const char *hacl_path(void) { return HACL_PATH; }

/* NULL when this CPU runs the build's code; else the instruction set it lacks. */
static inline const char *hacl_cpu_missing(void) {
#ifdef HACL_CPU
  __builtin_cpu_init();
  if (!__builtin_cpu_supports(HACL_CPU)) return HACL_CPU;
#endif
  return 0;
}

#else /* the hacl-c snapshot */

#include "Hacl_Chacha20Poly1305.h"

/* Present in the program only when the AEAD calls it (a vec128 build): a weak reference does
 * not pull an object out of an archive, so the address is the build's answer, not a copy of
 * what the build was asked to do. */
extern void Hacl_Chacha20_Vec128_chacha20(uint8_t *output, uint8_t *plain, uint32_t len, uint8_t *k,
                                          uint8_t *n1, uint32_t ctr) __attribute__((weak));

static const char hacl_source[] = "hacl-c snapshot from " HACL_CRATE;

static inline void hacl_seal(uint8_t *out, uint8_t *tag, uint8_t *in, uint32_t len, uint8_t *ad,
                             uint32_t ad_len, uint8_t *key, uint8_t *nonce) {
  Hacl_Chacha20Poly1305_aead_encrypt(out, tag, in, len, ad, ad_len, key, nonce);
}

static inline uint32_t hacl_open(uint8_t *out, uint8_t *in, uint32_t len, uint8_t *tag, uint8_t *ad,
                                 uint32_t ad_len, uint8_t *key, uint8_t *nonce) {
  return Hacl_Chacha20Poly1305_aead_decrypt(out, in, len, tag, ad, ad_len, key, nonce);
}

static inline const char *hacl_path(void) {
  return Hacl_Chacha20_Vec128_chacha20 != 0 ? "vec128" : "portable";
}

static inline const char *hacl_cpu_missing(void) {
  __builtin_cpu_init();
  if (Hacl_Chacha20_Vec128_chacha20 != 0 && !__builtin_cpu_supports("ssse3")) return "ssse3";
  return 0;
}

#endif

#endif /* TLSBENCH_HACL_API_H */
