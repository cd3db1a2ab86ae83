/*
 * One adapter's AEAD, byte for byte: compiled by tests/test_hacl.py with one adapter file
 * and its library, so that two adapters (HACL*, OpenSSL) seal the same inputs and the test
 * compares what they wrote.
 *
 * stdin, one case per line: KEY NONCE AD PLAINTEXT (hex; "-" for empty)
 * stdout, one line per case: CIPHERTEXT||TAG (hex), after checking that open gives the
 * plaintext back and rejects a flipped tag bit. Exit 0, or 1 with the reason on stderr.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlsbench/driver.h"

tb_status tb_fail(char *err, tb_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, TB_ERR_LEN, fmt, ap);
  va_end(ap);
  return status;
}

/* The rest of the contract an adapter unit links against (driver.h): no heap is counted here. */
void *tb_readback_alloc(size_t len) { return calloc(1, len ? len : 1); }
void tb_readback_free(void *p) { free(p); }

#define MAX_LEN 70000

static size_t unhex(const char *hex, unsigned char *out, size_t max) {
  if (strcmp(hex, "-") == 0) return 0;
  size_t n = strlen(hex) / 2;
  if (n > max) n = max;
  for (size_t i = 0; i < n; i++) {
    unsigned int byte;
    if (sscanf(hex + 2 * i, "%2x", &byte) != 1) return 0;
    out[i] = (unsigned char)byte;
  }
  return n;
}

static int fail(const char *what, const char *err) {
  fprintf(stderr, "%s: %s\n", what, err);
  return 1;
}

int main(void) {
  const tb_adapter *ad = &tb_adapter_impl;
  char err[TB_ERR_LEN] = "";
  if (ad->global_init(err) != TB_OK) return fail("global_init", err);
  static char line[4 * MAX_LEN];
  static char hk[128], hn[64], ha[2 * MAX_LEN + 2], hp[2 * MAX_LEN + 2];
  static unsigned char key[64], nonce[TB_AEAD_NONCE_LEN], aad[MAX_LEN], pt[MAX_LEN],
      sealed[MAX_LEN + TB_AEAD_TAG_LEN], back[MAX_LEN];
  int code = 0;
  while (code == 0 && fgets(line, sizeof(line), stdin) != NULL) {
    if (sscanf(line, "%127s %63s %140001s %140001s", hk, hn, ha, hp) != 4) {
      return fail("input", "expected KEY NONCE AD PLAINTEXT");
    }
    size_t key_len = unhex(hk, key, sizeof(key));
    if (unhex(hn, nonce, sizeof(nonce)) != TB_AEAD_NONCE_LEN) return fail("input", "nonce");
    size_t ad_len = unhex(ha, aad, sizeof(aad)), len = unhex(hp, pt, sizeof(pt));
    void *aead = NULL;
    if (ad->aead->create(TB_CHACHA20_POLY1305, key, key_len, &aead, err) != TB_OK) {
      return fail("aead_new", err);
    }
    if (ad->aead->seal(aead, nonce, aad, ad_len, pt, len, sealed, err) != TB_OK) {
      code = fail("seal", err);
    } else if (ad->aead->open(aead, nonce, aad, ad_len, sealed, len, back, err) != TB_OK ||
               memcmp(back, pt, len) != 0) {
      code = fail("open", err[0] ? err : "opened bytes differ from the plaintext");
    } else {
      sealed[len] ^= 0x80;
      if (ad->aead->open(aead, nonce, aad, ad_len, sealed, len, back, err) == TB_OK) {
        code = fail("open", "a flipped tag bit was accepted");
      }
      sealed[len] ^= 0x80;
    }
    ad->aead->free(aead);
    for (size_t i = 0; code == 0 && i < len + TB_AEAD_TAG_LEN; i++) printf("%02x", sealed[i]);
    if (code == 0) putchar('\n');
  }
  ad->global_cleanup();
  return code;
}
