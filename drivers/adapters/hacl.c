/*
 * The HACL* adapter: an AEAD-only "library". HACL*'s verified C (extracted from F*) has
 * ChaCha20-Poly1305 and no TLS, so only the aead scenario runs on it; every TLS entry point
 * returns TB_UNSUPPORTED with the same reason, and `info` declares no TLS versions or
 * suites, so that an experiment asking it for a handshake is refused before anything runs.
 *
 * Which implementation the AEAD is (portable, vec128, vec256) is a property of the build
 * (recipes/hacl.py, hacl_api.h); cpu_paths reports it with every result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hacl_api.h"
#include "tlsbench/driver.h"

#define NO_TLS "AEAD-only library: no TLS"
#define KEY_LEN 32

static tb_status global_init(char *err) {
  (void)err;
  return TB_OK;
}

static void global_cleanup(void) {}

/* --deterministic: nothing to do, an AEAD takes its keys and nonces from the caller. */
static tb_status derandomize(tb_random_fn fill, tb_randomness *out, char *err) {
  (void)fill, (void)err;
  out->seeded = 1;
  snprintf(out->how, sizeof(out->how),
           "nothing to seed: HACL*'s AEAD draws no random values (keys and nonces are given)");
  return TB_OK;
}

static const char *const empty[] = {NULL};
static char path_option[TB_NAME_LEN], source_option[TB_NAME_LEN];
static const char *build_options[4];

static tb_status info(tb_info *out, char *err) {
  (void)err;
  snprintf(out->version, sizeof(out->version), "HACL* %s", hacl_source);
  snprintf(path_option, sizeof(path_option), "chacha20poly1305=%s", hacl_path());
  snprintf(source_option, sizeof(source_option), "source=%s", hacl_source);
  build_options[0] = path_option;
  build_options[1] = source_option;
#ifdef KRML_NOUINT128
  build_options[2] = "uint128=kremlib (KRML_NOUINT128)";
#else
  build_options[2] = NULL;
#endif
  build_options[3] = NULL;
  out->build_options = build_options;
  out->versions = empty;
  out->suites = empty;
  out->groups = empty;
  out->sigalgs = empty;
  out->no_tls = NO_TLS;
  return TB_OK;
}

/* ------------------------------------------------------------------------- TLS: none */

static tb_status ctx_new(const tb_config *cfg, void **ctx, char *err) {
  (void)cfg;
  (void)ctx;
  return tb_fail(err, TB_UNSUPPORTED, NO_TLS);
}

static void ctx_free(void *ctx) { (void)ctx; }

static tb_status conn_new(void *ctx, const tb_transport *transport, void *session, void **conn,
                          char *err) {
  (void)ctx, (void)transport, (void)session, (void)conn;
  return tb_fail(err, TB_UNSUPPORTED, NO_TLS);
}

static void conn_free(void *conn) { (void)conn; }

static tb_status handshake(void *conn, char *err) {
  (void)conn;
  return tb_fail(err, TB_UNSUPPORTED, NO_TLS);
}

static tb_status write_data(void *conn, const unsigned char *buf, size_t len, size_t *done,
                            char *err) {
  (void)conn, (void)buf, (void)len;
  *done = 0;
  return tb_fail(err, TB_UNSUPPORTED, NO_TLS);
}

static tb_status read_data(void *conn, unsigned char *buf, size_t len, size_t *done, char *err) {
  (void)conn, (void)buf, (void)len;
  *done = 0;
  return tb_fail(err, TB_UNSUPPORTED, NO_TLS);
}

static tb_status negotiated(void *conn, tb_negotiated *out, char *err) {
  (void)conn;
  memset(out, 0, sizeof(*out));
  return tb_fail(err, TB_UNSUPPORTED, NO_TLS);
}

static tb_status session_get(void *conn, void **session, char *err) {
  (void)conn, (void)session;
  return tb_fail(err, TB_UNSUPPORTED, NO_TLS);
}

static void session_free(void *session) { (void)session; }

/* The library's TLS, as the scenarios use it. */
static const tb_tls_class kTls = {
    .ctx_new = ctx_new,
    .ctx_free = ctx_free,
    .conn_new = conn_new,
    .conn_free = conn_free,
    .handshake = handshake,
    .write = write_data,
    .read = read_data,
    .close = NULL,
    .negotiated = negotiated,
    .session_get = session_get,
    .session_free = session_free,
};

/* ------------------------------------------------------------------------- AEAD */

typedef struct hacl_aead {
  uint8_t key[KEY_LEN];
} hacl_aead;

static tb_status aead_new(tb_aead_alg alg, const unsigned char *key, size_t key_len, void **aead,
                          char *err) {
  if (alg != TB_CHACHA20_POLY1305) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "tlsbench builds HACL*'s ChaCha20-Poly1305 only: no AES-GCM (the hacl-c "
                   "snapshot has none)");
  }
  const char *missing = hacl_cpu_missing();
  if (missing != NULL) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "this build's ChaCha20-Poly1305 (%s) needs %s, which "
                   "this CPU lacks",
                   hacl_path(), missing);
  }
  if (key_len != KEY_LEN) {
    return tb_fail(err, TB_FAILED, "ChaCha20-Poly1305 takes a 32-byte key, not %zu bytes", key_len);
  }
  hacl_aead *a = malloc(sizeof(*a));
  if (a == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  memcpy(a->key, key, KEY_LEN);
  *aead = a;
  return TB_OK;
}

/* HACL*'s lengths are 32-bit; a TLS record is far below that. */
static int too_long(size_t len, size_t ad_len) { return len > UINT32_MAX || ad_len > UINT32_MAX; }

/* The casts: see hacl_api.h. */
static tb_status aead_seal(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                           const unsigned char *ad, size_t ad_len, const unsigned char *in,
                           size_t len, unsigned char *out, char *err) {
  hacl_aead *a = aead;
  if (too_long(len, ad_len)) return tb_fail(err, TB_UNSUPPORTED, "HACL* lengths are 32-bit");
  hacl_seal(out, out + len, (uint8_t *)in, (uint32_t)len, (uint8_t *)ad, (uint32_t)ad_len, a->key,
            (uint8_t *)nonce);
  return TB_OK;
}

static tb_status aead_open(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                           const unsigned char *ad, size_t ad_len, const unsigned char *in,
                           size_t len, unsigned char *out, char *err) {
  hacl_aead *a = aead;
  if (too_long(len, ad_len)) return tb_fail(err, TB_UNSUPPORTED, "HACL* lengths are 32-bit");
  uint32_t failed = hacl_open(out, (uint8_t *)in, (uint32_t)len, (uint8_t *)in + len, (uint8_t *)ad,
                              (uint32_t)ad_len, a->key, (uint8_t *)nonce);
  if (failed != 0) return tb_fail(err, TB_FAILED, "ChaCha20-Poly1305: the tag does not verify");
  return TB_OK;
}

static void aead_free(void *aead) {
  if (aead != NULL) memset(aead, 0, sizeof(hacl_aead));
  free(aead);
}

/* The library's own AEAD API, as the aead scenario uses it. */
static const tb_aead_class kAead = {
    .create = aead_new,
    .seal = aead_seal,
    .open = aead_open,
    .free = aead_free,
};

static void cpu_paths(char *out, size_t len) {
  snprintf(out, len, "chacha20poly1305=%s", hacl_path());
}

const tb_adapter tb_adapter_impl = {
    .name = "hacl",
    .global_init = global_init,
    .global_cleanup = global_cleanup,
    .info = info,
    .cpu_paths = cpu_paths,
    .derandomize = derandomize,
    .tls = &kTls,
    .aead = &kAead,
};
