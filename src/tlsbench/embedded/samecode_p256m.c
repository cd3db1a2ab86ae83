/* tlsbench's port of p256-m's on-target benchmark program to the firmware boards: what
 * `tlsbench model-check` runs on the cycle model to set beside the board figures in the README
 * of the pinned mbedTLS archive's 3rdparty/p256-m (samecode.py builds and reads it).
 *
 * p256-m's own program (on-target-benchmark/main.cpp in the p256-m repository, over Mbed OS 6)
 * calls the four operations once each, in this order, with an Mbed `Timer` around each, its
 * random bytes from the C library's rand(): key generation, ECDH with the key just made, a
 * signature of a 32-byte hash with it, the verification of that signature. This port makes the
 * same calls in the same order; in place of the timer, a store to `fw_window` before and after
 * each call opens and closes the cycle model's measurement window (cycles_plugin.c), and the
 * results go out over semihosting. p256-m.c is the pinned archive's file, built with
 * MBEDTLS_PSA_P256M_DRIVER_ENABLED as mbedTLS builds it; its two calls into mbedTLS are given
 * here as the original p256-m had them: the random bytes (rand(), as the benchmark's
 * p256_generate_random) and the zeroisation (a volatile byte loop, p256-m's own zeroize()).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p256-m.h"
#include "psa/crypto.h"
#include "semihost.h"

/* A store here opens the cycle model's window; the next one closes it. */
volatile uint32_t fw_window = 1; /* in .data: the start-up code zeroes .bss with word stores */

/* No SysTick in this image: the startup code's vector table names the handler all the same. */
void fw_systick_handler(void) {}

/* The benchmark's p256_generate_random: "test version based on stdlib - never do this in
 * production!" (the board's own words). */
psa_status_t psa_generate_random(uint8_t *output, size_t output_size) {
  for (size_t i = 0; i < output_size; i++) output[i] = (uint8_t)rand();
  return PSA_SUCCESS;
}

/* p256-m's zeroize() before mbedTLS replaced it with mbedtls_platform_zeroize. */
void mbedtls_platform_zeroize(void *buf, size_t len) {
  volatile unsigned char *p = buf;
  while (len--) *p++ = 0;
}

#define WINDOW(ret, call) \
  do {                    \
    fw_window = 0;        \
    (ret) = (call);       \
    fw_window = 0;        \
  } while (0)

int main(void) {
  static char out[256];
  uint8_t priv[32], pub[64], secret[32], sig[64], hash[32];
  int ret[4];
  /* The board's hash is what its stack held: not zero (a zero hash skips one of the two
   * scalar multiplications of the verification); here bytes of the same rand() stream. */
  psa_generate_random(hash, sizeof hash);
  WINDOW(ret[0], p256_gen_keypair(priv, pub));
  WINDOW(ret[1], p256_ecdh_shared_secret(secret, priv, pub));
  WINDOW(ret[2], p256_ecdsa_sign(sig, priv, hash, sizeof hash));
  WINDOW(ret[3], p256_ecdsa_verify(sig, pub, hash, sizeof hash));
  snprintf(out, sizeof out,
           "{\"library\": \"p256-m\", \"ops\": [\"keygen\", \"ecdh\", \"sign\", \"verify\"], "
           "\"returns\": [%d, %d, %d, %d]}\n",
           ret[0], ret[1], ret[2], ret[3]);
  sh_write0(out);
  return ret[0] || ret[1] || ret[2] || ret[3];
}
