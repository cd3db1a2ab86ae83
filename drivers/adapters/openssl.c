/*
 * OpenSSL adapter: OpenSSL 3.5 built from source, the machine's OpenSSL 3.0 and OpenSSL
 * 1.1.1, one file.
 *
 * Where 3.0 and 3.5 differ the code tests for the API itself (#ifdef on the macro) rather
 * than the version number, so that a 3.x in between takes whichever path it has. 1.1.1
 * lacks the 3.0 API as a whole: the few places that differ are under OSSL_111 below.
 *
 * Transport: a custom BIO_METHOD whose read/write callbacks call the tb_transport and map
 * TB_IO_WOULD_BLOCK to OpenSSL's retry flags, so SSL_do_handshake / SSL_read report
 * SSL_ERROR_WANT_READ exactly as they would on a non-blocking socket. It, the error text
 * and the context and connection life cycle are shared with the AWS-LC and BoringSSL
 * adapters (openssl_family.c); this file holds what is OpenSSL's own.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/objects.h>
#include <openssl/opensslv.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>

#include "openssl_family.h"
#include "tls_wire.h"
#include "tlsbench/driver.h"

#if OPENSSL_VERSION_NUMBER < 0x30000000L
/* OpenSSL 1.1.1: the 3.0 names of what it already has. */
#define OSSL_111 1
#define EVP_PKEY_get_bits EVP_PKEY_bits
#define EVP_PKEY_get_id EVP_PKEY_id
#define EVP_CIPHER_get_key_length EVP_CIPHER_key_length
#define EVP_CIPHER_CTX_get_iv_length EVP_CIPHER_CTX_iv_length
/* 1.1.1's getter takes a reference; the session keeps its own, so dropping ours at once
 * leaves the certificate valid for as long as the connection is. */
static X509 *ossl111_peer_certificate(const SSL *ssl) {
  X509 *cert = SSL_get_peer_certificate(ssl);
  X509_free(cert);
  return cert;
}
#define SSL_get0_peer_certificate ossl111_peer_certificate
#endif

/* ------------------------------------------------------------------------- names */

/* Our group names (tb_config.group) and the spellings OpenSSL may report for them. */
typedef struct group_name {
  const char *name;     /* as in tb_config.group: also what OpenSSL's groups list accepts */
  const char *alias[3]; /* other spellings SSL_group_to_name / EVP_PKEY_get_group_name use */
  int ffdhe;            /* a finite-field group: usable by TLS 1.2 DHE suites */
} group_name;

/* clang-format off */
static const group_name kGroups[] = {
    {"x25519", {"X25519", NULL, NULL}, 0},
    {"secp256r1", {"P-256", "prime256v1", NULL}, 0},
    {"secp384r1", {"P-384", NULL, NULL}, 0},
    {"ffdhe2048", {NULL, NULL, NULL}, 1},
    {"ffdhe3072", {NULL, NULL, NULL}, 1},
    {"ffdhe4096", {NULL, NULL, NULL}, 1},
    {"X25519MLKEM768", {NULL, NULL, NULL}, 0},
};
/* clang-format on */

/* Candidate groups for info(): each is probed against this build's groups list. */
static const char *const kGroupCandidates[] = {
    "x25519",    "x448",           "secp256r1",         "secp384r1",
    "secp521r1", "ffdhe2048",      "ffdhe3072",         "ffdhe4096",
    "ffdhe6144", "ffdhe8192",      "MLKEM512",          "MLKEM768",
    "MLKEM1024", "X25519MLKEM768", "SecP256r1MLKEM768", "SecP384r1MLKEM1024",
};

/* IANA SignatureScheme names with what OpenSSL 3.0 reports for them (signature key type
 * NID and digest NID); 3.5 reports the IANA name itself. `pss_key`: the certificate key
 * is an RSASSA-PSS key (rsa_pss_pss_*) rather than rsaEncryption (rsa_pss_rsae_*).
 * `tls13`: RFC 8446 allows the scheme in a CertificateVerify (no PKCS#1 v1.5, no SHA-1). */
typedef struct sigalg_name {
  const char *iana;
  int pkey_type;
  int hash;
  int pss_key;
  int tls13;
} sigalg_name;

static const sigalg_name kSigalgs[] = {
    {"rsa_pkcs1_sha256", EVP_PKEY_RSA, NID_sha256, 0, 0},
    {"rsa_pkcs1_sha384", EVP_PKEY_RSA, NID_sha384, 0, 0},
    {"rsa_pkcs1_sha512", EVP_PKEY_RSA, NID_sha512, 0, 0},
    {"rsa_pss_rsae_sha256", EVP_PKEY_RSA_PSS, NID_sha256, 0, 1},
    {"rsa_pss_rsae_sha384", EVP_PKEY_RSA_PSS, NID_sha384, 0, 1},
    {"rsa_pss_rsae_sha512", EVP_PKEY_RSA_PSS, NID_sha512, 0, 1},
    {"rsa_pss_pss_sha256", EVP_PKEY_RSA_PSS, NID_sha256, 1, 1},
    {"rsa_pss_pss_sha384", EVP_PKEY_RSA_PSS, NID_sha384, 1, 1},
    {"rsa_pss_pss_sha512", EVP_PKEY_RSA_PSS, NID_sha512, 1, 1},
    {"ecdsa_secp256r1_sha256", EVP_PKEY_EC, NID_sha256, 0, 1},
    {"ecdsa_secp384r1_sha384", EVP_PKEY_EC, NID_sha384, 0, 1},
    {"ecdsa_secp521r1_sha512", EVP_PKEY_EC, NID_sha512, 0, 1},
    {"ed25519", EVP_PKEY_ED25519, NID_undef, 0, 1},
    {"ed448", EVP_PKEY_ED448, NID_undef, 0, 1},
    {"rsa_pkcs1_sha1", EVP_PKEY_RSA, NID_sha1, 0, 0},
    {"ecdsa_sha1", EVP_PKEY_EC, NID_sha1, 0, 0},
    /* ML-DSA (draft-ietf-tls-mldsa), OpenSSL 3.5 on: 3.5 names the scheme itself, so the key
     * type -1 never matches 3.0's derivation; 3.0 and 1.1.1 refuse the names (unsupported).
     * SLH-DSA has no TLS code point in 3.5 or 3.6: unknown here, unsupported. */
    {"mldsa44", -1, NID_undef, 0, 1},
    {"mldsa65", -1, NID_undef, 0, 1},
    {"mldsa87", -1, NID_undef, 0, 1},
};

/* All TLS 1.3 suites OpenSSL knows; used to list (info) and to validate a 1.3 request. */
static const char kAllTls13Suites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:"
    "TLS_AES_128_CCM_SHA256:TLS_AES_128_CCM_8_SHA256";

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------- objects */

typedef struct ossl_conn {
  tb_ossl_conn base;
  /* TLS 1.2 DHE: the group of the DH parameters the handshake used, as the library showed
   * them to its security callback (OpenSSL has no getter for a TLS 1.2 DHE group). */
  char dhe_group[TB_NAME_LEN];
  /* A TLS 1.3 PSK run: what the ServerHello said (OpenSSL does not say which PSK mode it
   * used), as the message callback saw it sent (server) or received (client). */
  int hello_seen, hello_psk;
  uint16_t hello_group;
} ossl_conn;

typedef struct ossl_aead {
  EVP_CIPHER_CTX *enc, *dec;
} ossl_aead;

/* What this library does its own way, for the shared code (defined below). */
static const tb_ossl_class kClass;

/* ------------------------------------------------------------------------- randomness */

/* --deterministic: the core's fixed stream. OpenSSL 3.1 and later: the public and private
 * DRBGs are replaced (RAND_set0_public / RAND_set0_private) by CTR-DRBGs like the default
 * ones, each instantiated from a TEST-RAND parent (OpenSSL's test generator, in the default
 * provider) that hands out an entropy and a nonce drawn from the stream, so that the DRBGs'
 * own work is counted as in any run; reseeding by time is off. OpenSSL 1.1.1 and 3.0 have
 * no such setter: a RAND_METHOD (deprecated in 3.0, still honoured) hands out the stream
 * itself, and no DRBG work is counted. */
static tb_random_fn fixed_random;

#if defined(OSSL_111) || OPENSSL_VERSION_NUMBER < 0x30100000L
static int fixed_bytes(unsigned char *buf, int num) {
  fixed_random(buf, (size_t)num);
  return 1;
}

static int fixed_status(void) { return 1; }

static const char kFixedRandomHow[] = "a RAND_METHOD handing out the stream (RAND_set_rand_method)";

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static const RAND_METHOD kFixedRand = {
    .bytes = fixed_bytes, .pseudorand = fixed_bytes, .status = fixed_status};

static tb_status install_fixed_random(char *err) {
  if (RAND_set_rand_method(&kFixedRand) != 1)
    return tb_ossl_fail(err, TB_FAILED, "RAND_set_rand_method");
  return TB_OK;
}
#pragma GCC diagnostic pop
#else
#include <openssl/core_names.h>

static const char kFixedRandomHow[] =
    "the public and private DRBGs replaced by CTR-DRBGs seeded from the stream through a "
    "TEST-RAND parent (RAND_set0_public, RAND_set0_private)";

/* A CTR-DRBG (AES-256-CTR, OpenSSL's default) seeded from the stream. */
static EVP_RAND_CTX *fixed_drbg(void) {
  unsigned char entropy[48], nonce[16];
  fixed_random(entropy, sizeof(entropy));
  fixed_random(nonce, sizeof(nonce));
  unsigned int strength = 256; /* TEST-RAND's is 0 unless set: too weak a parent */
  OSSL_PARAM seed_params[] = {
      OSSL_PARAM_construct_uint(OSSL_RAND_PARAM_STRENGTH, &strength),
      OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_ENTROPY, entropy, sizeof(entropy)),
      OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_NONCE, nonce, sizeof(nonce)),
      OSSL_PARAM_construct_end()};
  time_t never = 0;
  OSSL_PARAM drbg_params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_CIPHER, (char *)"AES-256-CTR", 0),
      OSSL_PARAM_construct_time_t(OSSL_DRBG_PARAM_RESEED_TIME_INTERVAL, &never),
      OSSL_PARAM_construct_end()};
  EVP_RAND *test = EVP_RAND_fetch(NULL, "TEST-RAND", NULL);
  EVP_RAND *ctr = EVP_RAND_fetch(NULL, "CTR-DRBG", NULL);
  EVP_RAND_CTX *seed = test != NULL ? EVP_RAND_CTX_new(test, NULL) : NULL;
  EVP_RAND_CTX *drbg = NULL;
  if (ctr != NULL && seed != NULL && EVP_RAND_instantiate(seed, 0, 0, NULL, 0, seed_params)) {
    drbg = EVP_RAND_CTX_new(ctr, seed);
    if (drbg != NULL && !EVP_RAND_instantiate(drbg, 0, 0, NULL, 0, drbg_params)) {
      EVP_RAND_CTX_free(drbg);
      drbg = NULL;
    }
  }
  EVP_RAND_CTX_free(seed); /* the DRBG holds a reference of its own */
  EVP_RAND_free(test);
  EVP_RAND_free(ctr);
  return drbg;
}

static tb_status install_fixed_random(char *err) {
  EVP_RAND_CTX *public_drbg = fixed_drbg();
  if (public_drbg == NULL || !RAND_set0_public(NULL, public_drbg)) {
    EVP_RAND_CTX_free(public_drbg);
    return tb_ossl_fail(err, TB_FAILED, "a CTR-DRBG seeded by TEST-RAND (public)");
  }
  EVP_RAND_CTX *private_drbg = fixed_drbg();
  if (private_drbg == NULL || !RAND_set0_private(NULL, private_drbg)) {
    EVP_RAND_CTX_free(private_drbg);
    return tb_ossl_fail(err, TB_FAILED, "a CTR-DRBG seeded by TEST-RAND (private)");
  }
  return TB_OK;
}
#endif

static tb_status ossl_derandomize(tb_random_fn fill, tb_randomness *out, char *err) {
  fixed_random = fill;
  out->seeded = 1;
  snprintf(out->how, sizeof(out->how), "%s; certificates checked at a fixed time", kFixedRandomHow);
  tb_ossl_fix_verify_time();
  return install_fixed_random(err);
}

/* ------------------------------------------------------------------------- global */

/* Providers, method tables and the DRBGs are set up lazily by OpenSSL 3, on first use.
 * Everything that happens once per process is done here, so that it is charged to
 * "global" and not to the first context or handshake of a side: the default provider,
 * the cipher and digest tables an SSL_CTX fetches (by creating and freeing one), the key
 * management / exchange / signature / KDF / KEM methods a handshake fetches, the PEM
 * decoders (one encode/decode round trip of a key), the random generators and this
 * thread's error queue. */
#ifdef OSSL_111
/* 1.1.1 has no providers: its method tables are static, nothing is fetched lazily. */
static void warm_methods(void) {}
#else
static const char *const kWarmKeymgmt[] = {"RSA",        "RSA-PSS",       "EC",    "X25519",
                                           "X448",       "ED25519",       "ED448", "DH",
                                           "ML-KEM-768", "X25519MLKEM768"};
static const char *const kWarmKeyexch[] = {"ECDH", "X25519", "X448", "DH"};
static const char *const kWarmSignature[] = {"RSA", "ECDSA", "ED25519", "ED448"};
static const char *const kWarmKdf[] = {"TLS13-KDF", "TLS1-PRF", "HKDF"};
static const char *const kWarmKem[] = {"ML-KEM", "X25519MLKEM768", "RSA"};
static const char *const kWarmCipher[] = {"AES-128-GCM", "AES-256-GCM", "ChaCha20-Poly1305"};

static void warm_methods(void) {
  /* Names this build lacks (ML-KEM on 3.0) just fail to fetch: nothing to warm. */
  for (size_t i = 0; i < ARRAY_LEN(kWarmKeymgmt); i++)
    EVP_KEYMGMT_free(EVP_KEYMGMT_fetch(NULL, kWarmKeymgmt[i], NULL));
  for (size_t i = 0; i < ARRAY_LEN(kWarmKeyexch); i++)
    EVP_KEYEXCH_free(EVP_KEYEXCH_fetch(NULL, kWarmKeyexch[i], NULL));
  for (size_t i = 0; i < ARRAY_LEN(kWarmSignature); i++)
    EVP_SIGNATURE_free(EVP_SIGNATURE_fetch(NULL, kWarmSignature[i], NULL));
  for (size_t i = 0; i < ARRAY_LEN(kWarmKdf); i++)
    EVP_KDF_free(EVP_KDF_fetch(NULL, kWarmKdf[i], NULL));
  for (size_t i = 0; i < ARRAY_LEN(kWarmKem); i++)
    EVP_KEM_free(EVP_KEM_fetch(NULL, kWarmKem[i], NULL));
  for (size_t i = 0; i < ARRAY_LEN(kWarmCipher); i++)
    EVP_CIPHER_free(EVP_CIPHER_fetch(NULL, kWarmCipher[i], NULL));
  EVP_MAC_free(EVP_MAC_fetch(NULL, "HMAC", NULL));
}
#endif

/* Decoders are cached per key type, for both the PKCS#8 private key (PEM) and the
 * SubjectPublicKeyInfo inside every certificate: one round trip of each per key type. */
static void warm_decoders_for(EVP_PKEY *key) {
  BIO *mem = BIO_new(BIO_s_mem());
  if (key != NULL && mem != NULL && PEM_write_bio_PrivateKey(mem, key, NULL, NULL, 0, NULL, NULL)) {
    EVP_PKEY_free(PEM_read_bio_PrivateKey(mem, NULL, NULL, NULL));
  }
  unsigned char *der = NULL;
  int len = key != NULL ? i2d_PUBKEY(key, &der) : -1;
  if (len > 0) {
    const unsigned char *p = der;
    EVP_PKEY_free(d2i_PUBKEY(NULL, &p, len));
  }
  OPENSSL_free(der);
  BIO_free(mem);
  EVP_PKEY_free(key);
}

static void warm_decoders(void) {
#ifdef OSSL_111
  /* 1.1.1 decodes keys with static ASN.1 method tables: no decoder cache to fill. */
  (void)warm_decoders_for;
#else
  /* Small keys: the caches are per type, not per size, and RSA key generation is slow. */
  warm_decoders_for(EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)512));
  warm_decoders_for(EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"));
  warm_decoders_for(EVP_PKEY_Q_keygen(NULL, NULL, "ED25519"));
#endif
}

static tb_status ossl_global_init(char *err) {
  if (!OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL)) {
    return tb_ossl_fail(err, TB_FAILED, "OPENSSL_init_ssl");
  }
  tb_status st = tb_ossl_global_init(&kClass, err);
  if (st != TB_OK) return st;

  unsigned char rnd[32];
  if (RAND_bytes(rnd, sizeof(rnd)) != 1 || RAND_priv_bytes(rnd, sizeof(rnd)) != 1)
    return tb_ossl_fail(err, TB_FAILED, "RAND_bytes");
  SSL_CTX *warm = SSL_CTX_new(TLS_method());
  if (warm == NULL) return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_new");
  SSL_CTX_free(warm);
  warm_methods();
  warm_decoders();
  /* A once-only index the verifier needs, and this thread's error queue (allocated by its
   * first use). */
  (void)SSL_get_ex_data_X509_STORE_CTX_idx();
  ERR_clear_error();
  return TB_OK;
}

/* ------------------------------------------------------------------------- ctx_new */

static const group_name *find_group(const char *name) {
  for (size_t i = 0; i < ARRAY_LEN(kGroups); i++) {
    if (strcasecmp(name, kGroups[i].name) == 0) return &kGroups[i];
    for (size_t a = 0; a < ARRAY_LEN(kGroups[i].alias) && kGroups[i].alias[a]; a++)
      if (strcasecmp(name, kGroups[i].alias[a]) == 0) return &kGroups[i];
  }
  return NULL;
}

static const sigalg_name *find_sigalg(const char *iana) {
  for (size_t i = 0; i < ARRAY_LEN(kSigalgs); i++)
    if (strcmp(iana, kSigalgs[i].iana) == 0) return &kSigalgs[i];
  return NULL;
}

/* Looks the suite up by its IANA (standard) name among every cipher this build has. */
static const SSL_CIPHER *find_tls12_cipher(SSL_CTX *ctx, const char *iana) {
  /* "ALL:COMPLEMENTOFALL" is every suite, eNULL included; the security level still
   * decides at handshake time whether one may be used. */
  if (!SSL_CTX_set_cipher_list(ctx, "ALL:COMPLEMENTOFALL")) return NULL;
  STACK_OF(SSL_CIPHER) *all = SSL_CTX_get_ciphers(ctx);
  for (int i = 0; i < sk_SSL_CIPHER_num(all); i++) {
    const SSL_CIPHER *c = sk_SSL_CIPHER_value(all, i);
    const char *std = SSL_CIPHER_standard_name(c);
    if (std != NULL && strcmp(std, iana) == 0) return c;
  }
  return NULL;
}

/* Pins the offer to exactly one suite. set_cipher_list governs TLS 1.2 only and
 * set_ciphersuites TLS 1.3 only: both are set. Returns the suite's key exchange NID. */
static tb_status pin_suite(SSL_CTX *ctx, const tb_config *cfg, int *kx_nid, char *err) {
  if (strchr(cfg->suite, ':') != NULL)
    return tb_fail(err, TB_UNSUPPORTED, "one suite expected, got '%s'", cfg->suite);
  if (cfg->tls_version == 13) {
    /* The TLS 1.2 list stays as it is: with min = max = 1.3 OpenSSL offers no suite
     * that cannot be used in TLS 1.3 (ssl_cipher_disabled filters by version). 3.5 skips
     * names it does not know here, so the list is checked afterwards. */
    if (!SSL_CTX_set_ciphersuites(ctx, cfg->suite))
      return tb_ossl_fail(err, TB_UNSUPPORTED, "no TLS 1.3 suite by that name");
    STACK_OF(SSL_CIPHER) *list = SSL_CTX_get_ciphers(ctx);
    int tls13_suites = 0, found = 0;
    for (int i = 0; i < sk_SSL_CIPHER_num(list); i++) {
      const SSL_CIPHER *c = sk_SSL_CIPHER_value(list, i);
      if (SSL_CIPHER_get_kx_nid(c) != NID_kx_any) continue; /* a TLS 1.2 suite */
      tls13_suites++;
      found |= strcmp(SSL_CIPHER_standard_name(c), cfg->suite) == 0;
    }
    if (!found || tls13_suites != 1)
      return tb_fail(err, TB_UNSUPPORTED, "'%s' is not a TLS 1.3 suite of this build", cfg->suite);
    *kx_nid = NID_kx_any;
    return TB_OK;
  }
  if (!SSL_CTX_set_ciphersuites(ctx, ""))
    return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_set_ciphersuites(\"\")");
  const SSL_CIPHER *c = find_tls12_cipher(ctx, cfg->suite);
  if (c == NULL) {
    ERR_clear_error();
    return tb_fail(err, TB_UNSUPPORTED, "this OpenSSL build has no TLS 1.2 suite '%s'", cfg->suite);
  }
  if (SSL_CIPHER_get_kx_nid(c) == NID_kx_any)
    return tb_fail(err, TB_UNSUPPORTED, "'%s' is a TLS 1.3 suite", cfg->suite);
  /* SSL_CIPHER_get_name is OpenSSL's own name, e.g. ECDHE-RSA-AES128-GCM-SHA256. */
  if (!SSL_CTX_set_cipher_list(ctx, SSL_CIPHER_get_name(c)) ||
      sk_SSL_CIPHER_num(SSL_CTX_get_ciphers(ctx)) != 1) {
    return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_set_cipher_list");
  }
  *kx_nid = SSL_CIPHER_get_kx_nid(c);
  return TB_OK;
}

/* TLS 1.2 DHE servers do not negotiate RFC 7919 groups in OpenSSL (they pick RFC 3526
 * primes by key size): the requested ffdhe group is installed as the DH parameters. */
static tb_status set_dhe_params(SSL_CTX *ctx, const char *group, char *err) {
#ifdef OSSL_111
  DH *dh = DH_new_by_nid(OBJ_sn2nid(group));
  if (dh == NULL) return tb_ossl_fail(err, TB_FAILED, "DH parameters");
  int ok = SSL_CTX_set_tmp_dh(ctx, dh) == 1;
  DH_free(dh); /* the context keeps a copy */
  return ok ? TB_OK : tb_ossl_fail(err, TB_FAILED, "SSL_CTX_set_tmp_dh");
#else
  EVP_PKEY_CTX *pctx = EVP_PKEY_CTX_new_from_name(NULL, "DH", NULL);
  EVP_PKEY *params = NULL;
  if (pctx == NULL || EVP_PKEY_paramgen_init(pctx) <= 0 ||
      EVP_PKEY_CTX_set_group_name(pctx, group) <= 0 || EVP_PKEY_paramgen(pctx, &params) <= 0) {
    EVP_PKEY_CTX_free(pctx);
    return tb_ossl_fail(err, TB_FAILED, "DH parameters");
  }
  EVP_PKEY_CTX_free(pctx);
  if (!SSL_CTX_set0_tmp_dh_pkey(ctx, params)) {
    EVP_PKEY_free(params);
    return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_set0_tmp_dh_pkey");
  }
  return TB_OK;
#endif
}

/* Chains to the library's default policy and notes the group of TLS 1.2 DHE parameters
 * (server: the ones it sends; client: the ones it received) for negotiated(). */
typedef int (*security_cb)(const SSL *, const SSL_CTX *, int, int, int, void *, void *);

static security_cb g_default_security_cb;

static int note_dhe_group(const SSL *s, const SSL_CTX *ctx, int op, int bits, int nid, void *other,
                          void *ex) {
  int ok = g_default_security_cb(s, ctx, op, bits, nid, other, ex);
  if (ok && s != NULL && op == SSL_SECOP_TMP_DH && other != NULL) {
    ossl_conn *c = SSL_get_app_data(s);
#ifdef OSSL_111
    /* 1.1.1 passes the DH parameters themselves (a DH, not an EVP_PKEY). */
    int nid = DH_get_nid(other);
    if (c != NULL && nid != NID_undef)
      snprintf(c->dhe_group, sizeof(c->dhe_group), "%s", OBJ_nid2sn(nid));
    else if (c != NULL)
      snprintf(c->dhe_group, sizeof(c->dhe_group), "unnamed DH group (%d bits)", DH_bits(other));
#else
    size_t len = 0;
    if (c != NULL && !EVP_PKEY_get_group_name(other, c->dhe_group, sizeof(c->dhe_group), &len))
      snprintf(c->dhe_group, sizeof(c->dhe_group), "unnamed DH group (%d bits)",
               EVP_PKEY_get_bits(other));
#endif
  }
  return ok;
}

/* 1.1.1's groups list knows the NIST and OpenSSL short names (P-256, X25519), not the IANA
 * ones 3.0 added. */
static const char *group_spelling(const char *name) {
#ifdef OSSL_111
  static const char *const kSpelling111[][2] = {
      {"x25519", "X25519"},   {"x448", "X448"},       {"secp256r1", "P-256"},
      {"secp384r1", "P-384"}, {"secp521r1", "P-521"},
  };
  for (size_t i = 0; i < ARRAY_LEN(kSpelling111); i++)
    if (strcmp(name, kSpelling111[i][0]) == 0) return kSpelling111[i][1];
#endif
  return name;
}

/* Offers exactly one group, or [key_share, group]: a list without 3.5's `*` marks gets a
 * key share for its first group only (1.1.1 and 3.0 send one share, for the first group). */
static int set_groups(SSL_CTX *ctx, const char *key_share, const char *name) {
  char list[2 * TB_NAME_LEN + 2];
  if (key_share == NULL)
    snprintf(list, sizeof(list), "%s", group_spelling(name));
  else
    snprintf(list, sizeof(list), "%s:%s", group_spelling(key_share), group_spelling(name));
  return SSL_CTX_set1_groups_list(ctx, list);
}

static tb_status pin_group(SSL_CTX *ctx, const tb_config *cfg, int kx_nid, char *err) {
  /* Static RSA and the pre-shared key alone: no group is used. */
  if (kx_nid == NID_kx_rsa || kx_nid == NID_kx_psk || cfg->psk.mode == TB_PSK_KE) return TB_OK;
  if (cfg->group == NULL) return tb_fail(err, TB_UNSUPPORTED, "no group given");
  const group_name *g = find_group(cfg->group);
  if (g == NULL) return tb_fail(err, TB_UNSUPPORTED, "unknown group '%s'", cfg->group);
  const group_name *first = NULL;
  if (cfg->key_share != NULL && (first = find_group(cfg->key_share)) == NULL)
    return tb_fail(err, TB_UNSUPPORTED, "unknown key share group '%s'", cfg->key_share);
  /* One name and nothing else: 3.5 would otherwise also send an X25519MLKEM768 share. */
  if (!set_groups(ctx, first != NULL ? first->name : NULL, g->name)) {
    char what[2 * TB_NAME_LEN + 48];
    snprintf(what, sizeof(what), "this OpenSSL build cannot offer group %s%s%s", g->name,
             first != NULL ? " after " : "", first != NULL ? first->name : "");
    return tb_ossl_fail(err, TB_UNSUPPORTED, what);
  }
  if (kx_nid != NID_kx_dhe && kx_nid != NID_kx_dhe_psk) return TB_OK;
  if (!g->ffdhe)
    return tb_fail(err, TB_UNSUPPORTED, "a DHE suite needs an ffdhe group, not %s", g->name);
  if (g_default_security_cb == NULL) g_default_security_cb = SSL_CTX_get_security_callback(ctx);
  SSL_CTX_set_security_callback(ctx, note_dhe_group);
  return cfg->role == TB_SERVER ? set_dhe_params(ctx, g->name, err) : TB_OK;
}

static tb_status check_sigalg(const tb_config *cfg, const char *name, char *err) {
  if (strncmp(name, "slhdsa", 6) == 0)
    return tb_fail(err, TB_UNSUPPORTED,
                   "%s: %s has no TLS code point for SLH-DSA (3.5 and 3.6 verify SLH-DSA "
                   "certificates but sign no handshake with it)",
                   name, OpenSSL_version(OPENSSL_VERSION));
#if OPENSSL_VERSION_NUMBER < 0x30500000L
  if (strncmp(name, "mldsa", 5) == 0)
    return tb_fail(err, TB_UNSUPPORTED, "%s: ML-DSA in TLS came with OpenSSL 3.5; this is %s", name,
                   OpenSSL_version(OPENSSL_VERSION));
#endif
  const sigalg_name *sa = find_sigalg(name);
  if (sa == NULL) return tb_fail(err, TB_UNSUPPORTED, "unknown signature scheme '%s'", name);
  if (cfg->tls_version == 13 && !sa->tls13)
    return tb_fail(err, TB_UNSUPPORTED, "TLS 1.3 does not allow %s", name);
  return TB_OK;
}

static tb_status pin_sigalg(SSL_CTX *ctx, const tb_config *cfg, int kx_nid, char *err) {
  /* Static RSA: the server signs nothing, but a client certificate still signs a
   * CertificateVerify, so a given scheme is pinned all the same. */
  if (kx_nid == NID_kx_rsa && cfg->sigalg == NULL) return TB_OK;
  if (cfg->psk.mode != TB_PSK_NONE) return TB_OK; /* the key authenticates: nothing signed */
  if (cfg->sigalg == NULL) return tb_fail(err, TB_UNSUPPORTED, "no signature scheme given");
  tb_status st = check_sigalg(cfg, cfg->sigalg, err);
  if (st != TB_OK) return st;
  /* OpenSSL's sigalgs list takes the IANA names (3.0 and 3.5); the list also applies to
   * the client's CertificateVerify and the server's CertificateRequest (mutual). */
  if (!SSL_CTX_set1_sigalgs_list(ctx, cfg->sigalg))
    return tb_ossl_fail(err, TB_UNSUPPORTED, "SSL_CTX_set1_sigalgs_list");
  if (cfg->client_sigalg == NULL || strcmp(cfg->client_sigalg, cfg->sigalg) == 0) return TB_OK;
  /* The client-auth list apart (--fault client-sigalg): the server's CertificateRequest and
   * what it accepts in the client's CertificateVerify, the client's choice of its own. */
  st = check_sigalg(cfg, cfg->client_sigalg, err);
  if (st != TB_OK) return st;
  if (!SSL_CTX_set1_client_sigalgs_list(ctx, cfg->client_sigalg))
    return tb_ossl_fail(err, TB_UNSUPPORTED, "SSL_CTX_set1_client_sigalgs_list");
  return TB_OK;
}

/* In TLS 1.2 the supported_groups extension also lists the curves an ECDSA certificate
 * may use (RFC 8422), and OpenSSL enforces it on both sides: with the offer pinned to one
 * group, a server whose ECDSA key is on another curve cannot be used ("no shared
 * cipher"). Said here, where the certificate is known, rather than as a handshake error. */
static tb_status check_tls12_ecdsa_curve(const tb_ossl_class *cls, SSL_CTX *ctx,
                                         const tb_config *cfg, int kx_nid, char *err) {
  (void)cls;
  if (cfg->role != TB_SERVER || cfg->tls_version != 12 || kx_nid != NID_kx_ecdhe) return TB_OK;
  X509 *leaf = SSL_CTX_get0_certificate(ctx);
  EVP_PKEY *key = leaf != NULL ? X509_get0_pubkey(leaf) : NULL;
  char curve[TB_NAME_LEN] = "";
#ifdef OSSL_111
  const EC_KEY *ec = key != NULL ? EVP_PKEY_get0_EC_KEY(key) : NULL;
  int curve_nid = ec != NULL ? EC_GROUP_get_curve_name(EC_KEY_get0_group(ec)) : NID_undef;
  if (curve_nid == NID_undef) return TB_OK;
  snprintf(curve, sizeof(curve), "%s", OBJ_nid2sn(curve_nid));
#else
  size_t len = 0;
  if (key == NULL || !EVP_PKEY_is_a(key, "EC") ||
      !EVP_PKEY_get_group_name(key, curve, sizeof(curve), &len))
    return TB_OK;
#endif
  const group_name *g = find_group(curve);
  const group_name *want = find_group(cfg->group);
  if (g == NULL || g != want)
    return tb_fail(err, TB_UNSUPPORTED,
                   "TLS 1.2 with an ECDSA certificate on %s needs that curve among the "
                   "supported groups, and the offer is pinned to %s",
                   g != NULL ? g->name : curve, cfg->group);
  return TB_OK;
}

static tb_status set_record_size(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                                 char *err) {
  tb_status st = tb_ossl_set_send_fragment(cls, ctx, cfg, err);
  size_t rs = cfg->record_size;
  if (st != TB_OK || rs == 0) return st;
  /* max_send_fragment bounds what this side sends. Its receive buffer shrinks only when
   * the max_fragment_length extension is negotiated (only 512..4096 in powers of two; the
   * server honours it automatically). SSL_CTX_set_default_read_buffer_len is a lower bound
   * on the read buffer, so it cannot shrink it and is not used. */
  uint8_t mfl = rs == 512    ? TLSEXT_max_fragment_length_512
                : rs == 1024 ? TLSEXT_max_fragment_length_1024
                : rs == 2048 ? TLSEXT_max_fragment_length_2048
                : rs == 4096 ? TLSEXT_max_fragment_length_4096
                             : 0;
  if (mfl != 0 && cfg->role == TB_CLIENT && !SSL_CTX_set_tlsext_max_fragment_length(ctx, mfl))
    return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_set_tlsext_max_fragment_length");
  return TB_OK;
}

static tb_status pin_offer(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                           int *kx_nid, char *err) {
  (void)cls;
  tb_status st = pin_suite(ctx, cfg, kx_nid, err);
  if (st == TB_OK) st = pin_group(ctx, cfg, *kx_nid, err);
  if (st == TB_OK) st = pin_sigalg(ctx, cfg, *kx_nid, err);
  return st;
}

/* ------------------------------------------------------------------------- pre-shared keys */

/* A TLS 1.3 external PSK is a session: the key as its master secret, the connection's one
 * (pinned) TLS 1.3 suite, whose hash the key is bound to. */
static SSL_SESSION *psk_session(SSL *ssl, const tb_ossl_psk *p) {
  const SSL_CIPHER *cipher = NULL;
  STACK_OF(SSL_CIPHER) *list = SSL_get_ciphers(ssl);
  for (int i = 0; i < sk_SSL_CIPHER_num(list) && cipher == NULL; i++) {
    const SSL_CIPHER *c = sk_SSL_CIPHER_value(list, i);
    if (SSL_CIPHER_get_kx_nid(c) == NID_kx_any) cipher = c;
  }
  SSL_SESSION *s = cipher != NULL ? SSL_SESSION_new() : NULL;
  if (s == NULL) return NULL;
  if (!SSL_SESSION_set1_master_key(s, p->key, p->key_len) || !SSL_SESSION_set_cipher(s, cipher) ||
      !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
    SSL_SESSION_free(s);
    return NULL;
  }
  return s;
}

/* Client: the external PSK offered in every ClientHello (`md`: the hash a second one after a
 * HelloRetryRequest must keep). */
static int use_psk_session(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
                           SSL_SESSION **sess) {
  const tb_ossl_psk *p = tb_ossl_psk_of(ssl);
  *sess = NULL;
  SSL_SESSION *s = p != NULL ? psk_session(ssl, p) : NULL;
  if (s == NULL) return 0;
  /* Compared by type: OpenSSL 3 hands a fetched EVP_MD, the cipher the built-in one. */
  const EVP_MD *own = SSL_CIPHER_get_handshake_digest(SSL_SESSION_get0_cipher(s));
  if (md != NULL && (own == NULL || EVP_MD_type(md) != EVP_MD_type(own))) {
    SSL_SESSION_free(s);
    return 1; /* the key's hash does not fit the retried hello: no PSK */
  }
  *id = (const unsigned char *)p->identity;
  *idlen = strlen(p->identity);
  *sess = s;
  return 1;
}

/* Server: the external PSK for the client's identity (another identity: no PSK). */
static int find_psk_session(SSL *ssl, const unsigned char *identity, size_t identity_len,
                            SSL_SESSION **sess) {
  const tb_ossl_psk *p = tb_ossl_psk_of(ssl);
  *sess = NULL;
  if (p == NULL || identity_len != strlen(p->identity) ||
      memcmp(identity, p->identity, identity_len) != 0)
    return 1;
  *sess = psk_session(ssl, p);
  return *sess != NULL;
}

/* The ServerHello of a TLS 1.3 PSK run, sent or received: its pre_shared_key and key_share
 * say which key exchange mode ran. */
static void note_server_hello(int write_p, int version, int content_type, const void *buf,
                              size_t len, SSL *ssl, void *arg) {
  (void)write_p, (void)version, (void)arg;
  const unsigned char *m = buf;
  ossl_conn *c = SSL_get_app_data(ssl);
  tb_server_hello sh;
  if (c == NULL || content_type != SSL3_RT_HANDSHAKE || len < 4 || m[0] != TB_HS_SERVER_HELLO ||
      tb_hs_server_hello(m + 4, len - 4, &sh) != 0 || sh.hrr)
    return;
  c->hello_seen = 1;
  c->hello_psk = sh.psk;
  c->hello_group = sh.group;
}

/* TLS 1.2: the PSK suites' callbacks. TLS 1.3: the external PSK as a session on both sides;
 * psk_ke is allowed (SSL_OP_ALLOW_NO_DHE_KEX) and, from 3.3, preferred by the server; a
 * client cannot offer it alone (it always adds psk_dhe_ke and a key share). */
static tb_status ossl_set_psk(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                              char *err) {
  (void)cls;
  if (cfg->tls_version == 12) {
    tb_ossl_psk_tls12_callbacks(ctx);
    return TB_OK;
  }
  if (cfg->psk.mode == TB_PSK_KE && cfg->role == TB_CLIENT) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "an OpenSSL client cannot offer psk_ke alone: it always offers psk_dhe_ke "
                   "and a key share beside it (SSL_OP_ALLOW_NO_DHE_KEX only adds psk_ke)");
  }
  if (cfg->psk.mode == TB_PSK_KE) {
    SSL_CTX_set_options(ctx, SSL_OP_ALLOW_NO_DHE_KEX);
#ifdef SSL_OP_PREFER_NO_DHE_KEX
    SSL_CTX_set_options(ctx, SSL_OP_PREFER_NO_DHE_KEX);
#endif
  }
  if (cfg->role == TB_CLIENT)
    SSL_CTX_set_psk_use_session_callback(ctx, use_psk_session);
  else
    SSL_CTX_set_psk_find_session_callback(ctx, find_psk_session);
  SSL_CTX_set_msg_callback(ctx, note_server_hello);
  return TB_OK;
}

/* What keyed a full handshake: TLS 1.2 the suite's key exchange; TLS 1.3 the ServerHello of
 * a context holding a PSK (the core never resumes a TLS 1.3 PSK run, so a pre_shared_key
 * there is the external key). */
static int read_psk(ossl_conn *c, const SSL_CIPHER *cipher) {
  if (SSL_version(c->base.ssl) != TLS1_3_VERSION) return tb_ossl_psk_mode_of_cipher(cipher);
  const tb_ossl_psk *p = tb_ossl_psk_of(c->base.ssl);
  if (p == NULL || p->mode == TB_PSK_NONE || !c->hello_psk) return TB_PSK_NONE;
  return c->hello_group != 0 ? TB_PSK_DHE : TB_PSK_KE;
}

static void ossl_conn_free(void *p) {
  ossl_conn *c = p;
  if (c == NULL) return;
  /* SSL_free of a connection that was not shut down marks its session "bad" (not
   * resumable, removed from the cache): a session taken with session_get could then not
   * be resumed. The harness ends connections without close_notify, so declare the
   * shutdown done, without sending anything, when the handshake had completed. */
  if (c->base.ssl != NULL && SSL_is_init_finished(c->base.ssl))
    SSL_set_shutdown(c->base.ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  tb_ossl_conn_release(&c->base);
}

static const tb_ossl_class kClass = {
    .library = "OpenSSL",
    .conn_size = sizeof(ossl_conn),
    .conn_free = ossl_conn_free,
    .pin_offer = pin_offer,
    .check_chain = check_tls12_ecdsa_curve,
    .set_record_size = set_record_size,
    .set_psk = ossl_set_psk,
};

/* ------------------------------------------------------------------------- connections */

static tb_status ossl_handshake(void *conn, char *err) {
  tb_ossl_conn *c = conn;
  tb_ossl_clear_stale_errors();
  int ret = SSL_do_handshake(c->ssl);
  return ret == 1 ? TB_OK : tb_ossl_io_status(c, ret, "handshake", err);
}

/* ------------------------------------------------------------------------- negotiated */

/* Our name for a group name OpenSSL reports; unknown names pass through unchanged so that
 * the core reports the mismatch with the library's own spelling. */
static const char *canonical_group(const char *name) {
  const group_name *g = name != NULL ? find_group(name) : NULL;
  return g != NULL ? g->name : name;
}

static void read_group(ossl_conn *c, const SSL_CIPHER *cipher, char *out) {
  int kx = SSL_CIPHER_get_kx_nid(cipher);
  int tls13 = SSL_version(c->base.ssl) == TLS1_3_VERSION;
  out[0] = '\0';
  if (kx == NID_kx_rsa || kx == NID_kx_psk) return; /* static RSA, PSK alone: no group */
  /* TLS 1.3 psk_ke (a ServerHello without key_share): no key exchange ran, yet the getters
   * report the client's offered share or the session's group. */
  if (tls13 && c->hello_seen && c->hello_psk && c->hello_group == 0) return;
  /* An abbreviated TLS 1.2 handshake runs no key exchange; SSL_get_negotiated_group
   * would report the original session's group (session->kex_group). */
  if (!tls13 && SSL_session_reused(c->base.ssl)) return;
  if (kx == NID_kx_dhe || kx == NID_kx_dhe_psk) {
    tb_ossl_copy_name(out, canonical_group(c->dhe_group));
    return;
  }
  /* TLS 1.3: the group of this handshake's key share (OpenSSL reports s3.group_id when a
   * key exchange ran; we never enable psk_ke-only resumption, so one always runs). */
#ifdef OSSL_111
  /* 1.1.1 has no getter for the negotiated group. The client reads the type (and curve)
   * of the server's ephemeral key; the server, whose own ephemeral key is already freed,
   * takes its first shared group, the one it picks (the offer is pinned to one). */
  int nid = NID_undef;
  EVP_PKEY *key = NULL;
  if (SSL_is_server(c->base.ssl)) {
    nid = SSL_get_shared_group(c->base.ssl, 0);
  } else if (SSL_get_peer_tmp_key(c->base.ssl, &key)) {
    nid = EVP_PKEY_id(key);
    if (nid == EVP_PKEY_EC)
      nid = EC_GROUP_get_curve_name(EC_KEY_get0_group(EVP_PKEY_get0_EC_KEY(key)));
    else if (nid == EVP_PKEY_DH)
      nid = DH_get_nid(EVP_PKEY_get0_DH(key));
    EVP_PKEY_free(key);
  }
  if (nid != NID_undef) tb_ossl_copy_name(out, canonical_group(OBJ_nid2sn(nid)));
#else
  int nid = SSL_get_negotiated_group(c->base.ssl);
  if (nid == NID_undef) return;
  tb_ossl_copy_name(out, canonical_group(SSL_group_to_name(c->base.ssl, nid)));
#endif
}

#ifndef SSL_get0_peer_signature_name
/* OpenSSL 3.0 has no getter for the scheme's name: derive it from what it reports, the
 * signature key type and digest, plus the certificate key type, which separates
 * rsa_pss_rsae_* (rsaEncryption key) from rsa_pss_pss_* (RSASSA-PSS key). */
static const char *sigalg_from_nids(int pkey_type, int hash, const X509 *cert) {
  int pss_key = 0;
  if (pkey_type == EVP_PKEY_RSA_PSS && cert != NULL) {
    EVP_PKEY *pub = X509_get0_pubkey(cert);
    pss_key = pub != NULL && EVP_PKEY_get_id(pub) == EVP_PKEY_RSA_PSS;
  }
  for (size_t i = 0; i < ARRAY_LEN(kSigalgs); i++) {
    const sigalg_name *s = &kSigalgs[i];
    if (s->pkey_type == pkey_type && s->hash == hash && s->pss_key == pss_key) return s->iana;
  }
  return "unknown";
}
#endif

/* The scheme of a signature made in the handshake: this side's own (own != 0) or its
 * peer's, as OpenSSL names it (3.5) or from its key type and digest (3.0, 1.1.1). */
static void read_signature(ossl_conn *c, int own, char *out) {
#ifdef SSL_get0_peer_signature_name
  const char *name = NULL;
  if (own ? SSL_get0_signature_name(c->base.ssl, &name)
          : SSL_get0_peer_signature_name(c->base.ssl, &name))
    tb_ossl_copy_name(out, name);
#else
  int type = NID_undef, hash = NID_undef;
  if (own) {
#ifdef OSSL_111
    /* 1.1.1 tells a side the digest of its own signature but not the scheme: the first
     * shared scheme is the one it picked (the offer is pinned to one scheme anyway). */
    if (SSL_get_shared_sigalgs(c->base.ssl, 0, &type, &hash, NULL, NULL, NULL) > 0)
#else
    if (SSL_get_signature_type_nid(c->base.ssl, &type) && SSL_get_signature_nid(c->base.ssl, &hash))
#endif
      tb_ossl_copy_name(out, sigalg_from_nids(type, hash, SSL_get_certificate(c->base.ssl)));
  } else {
    if (SSL_get_peer_signature_type_nid(c->base.ssl, &type) &&
        SSL_get_peer_signature_nid(c->base.ssl, &hash))
      tb_ossl_copy_name(out, sigalg_from_nids(type, hash, SSL_get0_peer_certificate(c->base.ssl)));
  }
#endif
}

/* The scheme of the signature the SERVER made: the client reads its peer's, the server
 * its own. */
static void read_sigalg(ossl_conn *c, const SSL_CIPHER *cipher, char *out) {
  out[0] = '\0';
  /* Static RSA signs nothing, yet OpenSSL may still have chosen a scheme for the
   * certificate: the suite's key exchange decides. */
  if (SSL_CIPHER_get_kx_nid(cipher) == NID_kx_rsa) return;
  /* The server's signature: the server's own, the client's peer's. */
  read_signature(c, SSL_is_server(c->base.ssl), out);
}

/* The scheme of the signature the CLIENT made (its CertificateVerify, mutual auth): the
 * server reads its peer's, the client its own; "" when the client signed nothing. */
static void read_client_sigalg(ossl_conn *c, char *out) {
  out[0] = '\0';
  if (SSL_session_reused(c->base.ssl)) return; /* an abbreviated handshake signs nothing */
  int server = SSL_is_server(c->base.ssl);
  if (server && SSL_get0_peer_certificate(c->base.ssl) == NULL) return;
  if (!server && SSL_get_certificate(c->base.ssl) == NULL) return;
  /* The client's signature: the client's own, the server's peer's. */
  read_signature(c, !server, out);
}

static tb_status ossl_negotiated(void *conn, tb_negotiated *out, char *err) {
  ossl_conn *c = conn;
  memset(out, 0, sizeof(*out));
  const SSL_CIPHER *cipher = SSL_get_current_cipher(c->base.ssl);
  if (cipher == NULL) return tb_fail(err, TB_FAILED, "no cipher negotiated");
  tb_ossl_version_name(c->base.ssl, out->version);
  tb_ossl_copy_name(out->suite, SSL_CIPHER_standard_name(cipher));
  read_group(c, cipher, out->group);
  /* A pre-shared key signs nothing, though OpenSSL 1.1.1 reports a shared scheme. */
  int psk = read_psk(c, cipher);
  if (psk == TB_PSK_NONE) read_sigalg(c, cipher, out->sigalg);
  read_client_sigalg(c, out->client_sigalg);
  out->peer_verified = tb_ossl_peer_verified(c->base.ssl);
  out->resumed = SSL_session_reused(c->base.ssl) == 1;
  /* OpenSSL counts a TLS 1.3 external PSK as a reused session: it is a full handshake. */
  if (psk != TB_PSK_NONE && SSL_version(c->base.ssl) == TLS1_3_VERSION) out->resumed = 0;
  if (!out->resumed) out->psk = psk;
  return TB_OK;
}

/* ------------------------------------------------------------------------- sessions */

static tb_status ossl_session_get(void *conn, void **session, char *err) {
  ossl_conn *c = conn;
  /* TLS 1.3: the session holding the ticket; it exists once the client has read the
   * NewSessionTicket (the core reads once after the server wrote). */
  SSL_SESSION *s = SSL_get1_session(c->base.ssl);
  if (s == NULL) return tb_fail(err, TB_FAILED, "no session on this connection");
  if (!SSL_SESSION_is_resumable(s)) {
    SSL_SESSION_free(s);
    return tb_fail(err, TB_FAILED, "the session is not resumable (no ticket received?)");
  }
  *session = s;
  return TB_OK;
}

static void ossl_session_free(void *session) { SSL_SESSION_free(session); }

/* The library's TLS, as the scenarios use it. */
static const tb_tls_class kTls = {
    .ctx_new = tb_ossl_ctx_new,
    .ctx_free = tb_ossl_ctx_free,
    .conn_new = tb_ossl_conn_new,
    .conn_free = ossl_conn_free,
    .handshake = ossl_handshake,
    .write = tb_ossl_write,
    .read = tb_ossl_read,
    .close = tb_ossl_close,
    .negotiated = ossl_negotiated,
    .session_get = ossl_session_get,
    .session_free = ossl_session_free,
};

/* ------------------------------------------------------------------------- AEAD */

static const char *aead_name(tb_aead_alg alg) {
  switch (alg) {
    case TB_AES_128_GCM:
      return "AES-128-GCM";
    case TB_AES_256_GCM:
      return "AES-256-GCM";
    case TB_CHACHA20_POLY1305:
      return "ChaCha20-Poly1305";
  }
  return NULL;
}

static void ossl_aead_free(void *p) {
  ossl_aead *a = p;
  if (a == NULL) return;
  EVP_CIPHER_CTX_free(a->enc);
  EVP_CIPHER_CTX_free(a->dec);
  free(a);
}

static tb_status ossl_aead_new(tb_aead_alg alg, const unsigned char *key, size_t key_len,
                               void **out, char *err) {
  ERR_clear_error();
  const char *name = aead_name(alg);
  if (name == NULL) return tb_fail(err, TB_UNSUPPORTED, "unknown AEAD %d", (int)alg);
#ifdef OSSL_111
  /* 1.1.1: static cipher tables, nothing to fetch or free. */
  const EVP_CIPHER *cipher = EVP_get_cipherbyname(name);
#define EVP_CIPHER_free(cipher) ((void)(cipher))
#define EVP_EncryptInit_ex2(ctx, cipher, key, iv, params) \
  EVP_EncryptInit_ex(ctx, cipher, NULL, key, iv)
#define EVP_DecryptInit_ex2(ctx, cipher, key, iv, params) \
  EVP_DecryptInit_ex(ctx, cipher, NULL, key, iv)
#else
  EVP_CIPHER *cipher = EVP_CIPHER_fetch(NULL, name, NULL);
#endif
  if (cipher == NULL) return tb_ossl_fail(err, TB_UNSUPPORTED, name);
  if ((size_t)EVP_CIPHER_get_key_length(cipher) != key_len) {
    EVP_CIPHER_free(cipher);
    return tb_fail(err, TB_FAILED, "%s takes a %d-byte key, not %zu", name,
                   EVP_CIPHER_get_key_length(cipher), key_len);
  }
  ossl_aead *a = calloc(1, sizeof(*a));
  if (a == NULL) {
    EVP_CIPHER_free(cipher);
    return tb_fail(err, TB_FAILED, "out of memory");
  }
  a->enc = EVP_CIPHER_CTX_new();
  a->dec = EVP_CIPHER_CTX_new();
  /* Keyed once; each seal/open only sets the nonce. Both ciphers' default IV length is
   * the 12 bytes of TB_AEAD_NONCE_LEN. */
  int ok = a->enc != NULL && a->dec != NULL &&
           EVP_EncryptInit_ex2(a->enc, cipher, key, NULL, NULL) == 1 &&
           EVP_DecryptInit_ex2(a->dec, cipher, key, NULL, NULL) == 1 &&
           EVP_CIPHER_CTX_get_iv_length(a->enc) == TB_AEAD_NONCE_LEN;
  EVP_CIPHER_free(cipher); /* the contexts hold their own references */
  if (!ok) {
    ossl_aead_free(a);
    return tb_ossl_fail(err, TB_FAILED, name);
  }
  *out = a;
  return TB_OK;
}

static tb_status ossl_aead_seal(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                                const unsigned char *ad, size_t ad_len, const unsigned char *in,
                                size_t len, unsigned char *out, char *err) {
  EVP_CIPHER_CTX *ctx = ((ossl_aead *)aead)->enc;
  int n = 0;
  if (len > INT_MAX || ad_len > INT_MAX) return tb_fail(err, TB_UNSUPPORTED, "too long");
  if (EVP_EncryptInit_ex2(ctx, NULL, NULL, nonce, NULL) != 1 ||
      (ad_len > 0 && EVP_EncryptUpdate(ctx, NULL, &n, ad, (int)ad_len) != 1) ||
      (len > 0 && EVP_EncryptUpdate(ctx, out, &n, in, (int)len) != 1) ||
      EVP_EncryptFinal_ex(ctx, out + len, &n) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, TB_AEAD_TAG_LEN, out + len) != 1) {
    return tb_ossl_fail(err, TB_FAILED, "seal");
  }
  return TB_OK;
}

/* `len` is the ciphertext length; the tag follows it in `in` (as seal wrote it). */
static tb_status ossl_aead_open(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                                const unsigned char *ad, size_t ad_len, const unsigned char *in,
                                size_t len, unsigned char *out, char *err) {
  EVP_CIPHER_CTX *ctx = ((ossl_aead *)aead)->dec;
  int n = 0;
  if (len > INT_MAX || ad_len > INT_MAX) return tb_fail(err, TB_UNSUPPORTED, "too long");
  if (EVP_DecryptInit_ex2(ctx, NULL, NULL, nonce, NULL) != 1 ||
      (ad_len > 0 && EVP_DecryptUpdate(ctx, NULL, &n, ad, (int)ad_len) != 1) ||
      (len > 0 && EVP_DecryptUpdate(ctx, out, &n, in, (int)len) != 1) ||
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, TB_AEAD_TAG_LEN, (void *)(in + len)) != 1)
    return tb_ossl_fail(err, TB_FAILED, "open");
  if (EVP_DecryptFinal_ex(ctx, out + len, &n) != 1) {
    ERR_clear_error();
    return tb_fail(err, TB_FAILED, "open: the tag does not verify");
  }
  return TB_OK;
}

/* The library's own AEAD API, as the aead scenario uses it. */
static const tb_aead_class kAead = {
    .create = ossl_aead_new,
    .seal = ossl_aead_seal,
    .open = ossl_aead_open,
    .free = ossl_aead_free,
};

/* ------------------------------------------------------------------------- info */

#define MAX_LIST 256

static char g_build_text[8][1024];
static const char *g_build_options[9];
static const char *g_versions[3];
static const char *g_suites[MAX_LIST];
static const char *g_groups[ARRAY_LEN(kGroupCandidates) + 1];
static const char *g_sigalgs[ARRAY_LEN(kSigalgs) + 1];

/* OpenSSL_version() strings start with their own label ("compiler: ", "CPUINFO: "...). */
static const char *after_label(const char *s) {
  const char *colon = strstr(s, ": ");
  return colon != NULL ? colon + 2 : s;
}

static void fill_build_options(SSL_CTX *ctx) {
  static const struct {
    const char *name;
    int which;
  } kReports[] = {
#ifdef OSSL_111
      {"OPENSSL_FULL_VERSION", OPENSSL_VERSION},
#else
      {"OPENSSL_FULL_VERSION", OPENSSL_FULL_VERSION_STRING},
      {"OPENSSL_MODULES_DIR", OPENSSL_MODULES_DIR},
#endif
      {"OPENSSL_CFLAGS", OPENSSL_CFLAGS},        {"OPENSSL_PLATFORM", OPENSSL_PLATFORM},
      {"OPENSSL_BUILT_ON", OPENSSL_BUILT_ON},
#ifdef OPENSSL_CPU_INFO
      {"OPENSSL_CPU_INFO", OPENSSL_CPU_INFO},
#endif
  };
  size_t n = 0;
  for (size_t i = 0; i < ARRAY_LEN(kReports); i++, n++) {
    snprintf(g_build_text[n], sizeof(g_build_text[n]), "%s=%s", kReports[i].name,
             after_label(OpenSSL_version(kReports[i].which)));
    g_build_options[n] = g_build_text[n];
  }
  snprintf(g_build_text[n], sizeof(g_build_text[n]), "default_security_level=%d",
           SSL_CTX_get_security_level(ctx));
  g_build_options[n] = g_build_text[n];
  g_build_options[++n] = NULL;
}

/* Suites a TLS 1.2..1.3 client of this build would offer (security level applied), with
 * certificate authentication (no PSK, SRP or anonymous suites). */
static void fill_suites(SSL_CTX *ctx) {
  size_t n = 0;
  SSL *ssl = NULL;
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) &&
      SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) && SSL_CTX_set_cipher_list(ctx, "ALL") &&
      SSL_CTX_set_ciphersuites(ctx, kAllTls13Suites))
    ssl = SSL_new(ctx);
  STACK_OF(SSL_CIPHER) *list = ssl != NULL ? SSL_get1_supported_ciphers(ssl) : NULL;
  for (int i = 0; i < sk_SSL_CIPHER_num(list) && n + 1 < MAX_LIST; i++) {
    const SSL_CIPHER *c = sk_SSL_CIPHER_value(list, i);
    int auth = SSL_CIPHER_get_auth_nid(c);
    int kx = SSL_CIPHER_get_kx_nid(c);
    if ((auth == NID_auth_rsa || auth == NID_auth_ecdsa || auth == NID_auth_any) &&
        (kx == NID_kx_rsa || kx == NID_kx_ecdhe || kx == NID_kx_dhe || kx == NID_kx_any))
      g_suites[n++] = SSL_CIPHER_standard_name(c);
  }
  g_suites[n] = NULL;
  sk_SSL_CIPHER_free(list);
  SSL_free(ssl);
}

static void fill_groups_and_sigalgs(SSL_CTX *ctx) {
  size_t n = 0;
  for (size_t i = 0; i < ARRAY_LEN(kGroupCandidates); i++)
    if (set_groups(ctx, NULL, kGroupCandidates[i])) g_groups[n++] = kGroupCandidates[i];
  g_groups[n] = NULL;
  n = 0;
  for (size_t i = 0; i < ARRAY_LEN(kSigalgs); i++) {
    /* The list accepts SHA-1 schemes, but no security level above 0 lets them sign. */
    if (kSigalgs[i].hash == NID_sha1) continue;
    if (SSL_CTX_set1_sigalgs_list(ctx, kSigalgs[i].iana)) g_sigalgs[n++] = kSigalgs[i].iana;
  }
  g_sigalgs[n] = NULL;
}

static tb_status ossl_info(tb_info *out, char *err) {
  ERR_clear_error();
  /* Two contexts: probing groups and sigalgs leaves the last probed one configured, which
   * would hide suites from the list the other one computes. */
  SSL_CTX *ctx = SSL_CTX_new(TLS_method());
  SSL_CTX *probe = SSL_CTX_new(TLS_method());
  if (ctx == NULL || probe == NULL) {
    SSL_CTX_free(ctx);
    SSL_CTX_free(probe);
    return tb_ossl_fail(err, TB_FAILED, "SSL_CTX_new");
  }
  snprintf(out->version, sizeof(out->version), "%s", OpenSSL_version(OPENSSL_VERSION));
  fill_build_options(ctx);
  size_t n = 0;
  g_versions[n++] = "1.2";
#ifndef OPENSSL_NO_TLS1_3
  g_versions[n++] = "1.3";
#endif
  g_versions[n] = NULL;
  fill_groups_and_sigalgs(probe);
  fill_suites(ctx);
  SSL_CTX_free(probe);
  SSL_CTX_free(ctx);
  ERR_clear_error(); /* probing refused names leaves errors behind */
  out->build_options = g_build_options;
  out->versions = g_versions;
  out->suites = g_suites;
  out->groups = g_groups;
  out->sigalgs = g_sigalgs;
  return TB_OK;
}

/* ------------------------------------------------------------------------- the adapter */

/* ------------------------------------------------------------------------- CPU paths */

/* libcrypto's capability vector, after OPENSSL_ia32cap was applied. A static libcrypto
 * exposes it as a common symbol; a shared one (the system's) does not export it, so the
 * reference is weak and reads as "not exposed" there. */
extern unsigned int OPENSSL_ia32cap_P[] __attribute__((weak));

static void ossl_cpu_paths(char *out, size_t len) {
  if (OPENSSL_ia32cap_P == NULL) {
    snprintf(out, len, "OpenSSL capability vector: not exposed by this (shared) libcrypto");
    return;
  }
  tb_ossl_describe_ia32cap(out, len, "OpenSSL", OPENSSL_ia32cap_P, "");
}

const tb_adapter tb_adapter_impl = {
    .name = "openssl",
    .global_init = ossl_global_init,
    .global_cleanup = tb_ossl_global_cleanup,
    .info = ossl_info,
    .cpu_paths = ossl_cpu_paths,
    .derandomize = ossl_derandomize,
    .tls = &kTls,
    .aead = &kAead,
};
