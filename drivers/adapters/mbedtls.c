/*
 * The mbedTLS adapter: one file for the 3.6 LTS line and the 2.28 line (#if on
 * MBEDTLS_VERSION_MAJOR; 2.28 is TLS 1.2 only here).
 *
 * Reading back what was negotiated. mbedTLS reports version and suite through its API, but
 * not the key-exchange group, the server's signature scheme or whether the handshake
 * resumed: the fields that hold them live in the handshake structure (ssl_misc.h, not
 * installed), are freed when the handshake ends, and the chosen signature scheme is never
 * stored at all. So the adapter reads them from the handshake messages the library itself
 * produced or accepted:
 *  - each side keeps the bytes its send and receive callbacks pass during the handshake, a
 *    copy in the shared record reader (tls_wire.h, tb_wire: memory charged to no side, the
 *    read-back rule of driver.h), and parses nothing while the clock runs;
 *  - negotiated() reads them: the server's plaintext messages (ServerHello or
 *    HelloRetryRequest with TLS 1.3 key_share and pre_shared_key, ServerKeyExchange with the
 *    TLS 1.2 curve or DH prime and the signature scheme, ServerHelloDone: a TLS 1.2 full
 *    handshake) and the client's CertificateVerify (TLS 1.2); in TLS 1.3 it opens each
 *    direction's protected handshake records with that direction's handshake traffic secret,
 *    which mbedTLS exports through mbedtls_ssl_set_export_keys_cb(), for the
 *    CertificateVerify of either side (the inner content type and zero padding that the
 *    decryption must give prove the key was right).
 * Both sides thus report what the server really sent, never the configuration.
 */
#include <mbedtls/version.h> /* first: it pulls in the build's configuration, 2.x and 3.x */

#include <mbedtls/aes.h>
#include <mbedtls/chacha20.h>
#include <mbedtls/chachapoly.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/dhm.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/gcm.h>
#include <mbedtls/md.h>
#include <mbedtls/net_sockets.h> /* MBEDTLS_ERR_NET_*, and --io fd's socket I/O */
#include <mbedtls/pk.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/ssl.h>
#include <mbedtls/ssl_ticket.h>
#include <mbedtls/x509_crt.h>
#if MBEDTLS_VERSION_MAJOR >= 3 && defined(MBEDTLS_PSA_CRYPTO_C)
#include <psa/crypto.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls_wire.h"
#include "tlsbench/driver.h"
#include "tlsbench/names.h"

#if MBEDTLS_VERSION_MAJOR >= 3
#define MT_V3 1
/* Private fields of public structs: the accessor macro of mbedTLS 3 (2.x has plain fields). */
#define MT_PRIV(field) MBEDTLS_PRIVATE(field)
#else
#define MT_V3 0
#define MT_PRIV(field) field
#endif

#if MT_V3 && defined(MBEDTLS_SSL_PROTO_TLS1_3)
#define MT_TLS13 1
#else
#define MT_TLS13 0 /* 2.28's TLS 1.3 is an incomplete prototype: not offered */
#endif

/* ------------------------------------------------------------------------- names */

/* Group and signature scheme names and code points are the core's (tlsbench/names.h). The
 * brainpool curves of TLS 1.2, which mbedTLS has and tlsbench does not ask for, are named
 * here so that info lists them. */
typedef tb_name mt_group;
typedef tb_name mt_sigalg; /* code: in TLS 1.2, hash byte then signature byte */

static const tb_name brainpool_groups[] = {{"brainpoolP256r1", 0x001a, 0},
                                           {"brainpoolP384r1", 0x001b, 0},
                                           {"brainpoolP512r1", 0x001c, 0},
                                           {NULL, 0, 0}};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const mt_group *group_by_name(const char *name) {
  return name != NULL ? tb_name_find(tb_group_names, name) : NULL;
}

static const mt_sigalg *sigalg_by_name(const char *name) {
  return name != NULL ? tb_name_find(tb_sigalg_names, name) : NULL;
}

/* The size of an RFC 7919 group's prime; 0 for elliptic curves. */
static int ffdhe_bits(const mt_group *g) {
  return g->code == 0x0100 ? 2048 : g->code == 0x0101 ? 3072 : g->code == 0x0102 ? 4096 : 0;
}

/* Unknown code points are shown as hex, so that a mismatch message says what came. */
static void code_name(const tb_name *table, const tb_name *more, uint16_t id,
                      char out[TB_NAME_LEN]) {
  const tb_name *n = tb_name_of_code(table, id);
  if (n == NULL && more != NULL) n = tb_name_of_code(more, id);
  if (n != NULL)
    snprintf(out, TB_NAME_LEN, "%s", n->name);
  else
    snprintf(out, TB_NAME_LEN, "0x%04x", id);
}

static void group_name(uint16_t id, char out[TB_NAME_LEN]) {
  code_name(tb_group_names, brainpool_groups, id, out);
}

static void sigalg_name(uint16_t id, char out[TB_NAME_LEN]) {
  code_name(tb_sigalg_names, NULL, id, out);
}

/* mbedTLS names suites with dashes ("TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256") and TLS 1.3
 * ones with a "TLS1-3-" prefix ("TLS1-3-AES-128-GCM-SHA256"); otherwise the words are the
 * IANA ones. */
static void suite_iana(const char *mbed, char out[TB_NAME_LEN]) {
  const char *rest = mbed;
  size_t n = 0;
  if (strncmp(mbed, "TLS1-3-", 7) == 0) rest = mbed + 7, n = (size_t)snprintf(out, 5, "TLS_");
  for (; *rest && n + 1 < TB_NAME_LEN; rest++) out[n++] = *rest == '-' ? '_' : *rest;
  out[n] = '\0';
}

static void suite_name(int id, char out[TB_NAME_LEN]) {
  const char *mbed = mbedtls_ssl_get_ciphersuite_name(id);
  if (mbed == NULL || strcmp(mbed, "unknown") == 0) {
    snprintf(out, TB_NAME_LEN, "0x%04x", (unsigned)id);
    return;
  }
  suite_iana(mbed, out);
}

/* The library's suite id for an IANA name; 0 when this build does not have it. */
static int suite_id(const char *iana) {
  char name[TB_NAME_LEN];
  for (const int *id = mbedtls_ssl_list_ciphersuites(); iana && *id != 0; id++) {
    suite_name(*id, name);
    if (strcmp(name, iana) == 0) return *id;
  }
  return 0;
}

/* Key exchange of a suite, from its IANA name. */
typedef enum mt_kx {
  KX_TLS13,
  KX_RSA, /* static RSA: no group, no signature */
  KX_DHE_RSA,
  KX_ECDHE_RSA,
  KX_ECDHE_ECDSA,
  KX_PSK,       /* the pre-shared key alone: no group, no signature */
  KX_ECDHE_PSK, /* the key and ECDHE: no signature */
  KX_DHE_PSK,   /* the key and DHE: no signature */
  KX_OTHER,     /* RSA-PSK, static ECDH, EC J-PAKE: nothing tlsbench configures */
} mt_kx;

static mt_kx suite_kx(const char *iana) {
  if (strstr(iana, "_WITH_") == NULL) return KX_TLS13;
  if (strncmp(iana, "TLS_RSA_WITH_", 13) == 0) return KX_RSA;
  if (strncmp(iana, "TLS_DHE_RSA_WITH_", 17) == 0) return KX_DHE_RSA;
  if (strncmp(iana, "TLS_ECDHE_RSA_WITH_", 19) == 0) return KX_ECDHE_RSA;
  if (strncmp(iana, "TLS_ECDHE_ECDSA_WITH_", 21) == 0) return KX_ECDHE_ECDSA;
  if (strncmp(iana, "TLS_PSK_WITH_", 13) == 0) return KX_PSK;
  if (strncmp(iana, "TLS_ECDHE_PSK_WITH_", 19) == 0) return KX_ECDHE_PSK;
  if (strncmp(iana, "TLS_DHE_PSK_WITH_", 17) == 0) return KX_DHE_PSK;
  return KX_OTHER;
}

static int kx_is_psk(mt_kx kx) { return kx == KX_PSK || kx == KX_ECDHE_PSK || kx == KX_DHE_PSK; }
static int kx_is_dhe(mt_kx kx) { return kx == KX_DHE_RSA || kx == KX_DHE_PSK; }

/* ------------------------------------------------------------------------- errors */

/* The library's text for an error code, where the build has it: a user's config may leave out
 * the error module (MBEDTLS_ERROR_C) and its dummy; the code is printed beside it anyway. */
static void mt_strerror(int ret, char *text, size_t size) {
#if defined(MBEDTLS_ERROR_C) || defined(MBEDTLS_ERROR_STRERROR_DUMMY)
  mbedtls_strerror(ret, text, size);
#else
  (void)ret;
  snprintf(text, size, "no error text in this build (MBEDTLS_ERROR_C)");
#endif
}

static tb_status mt_fail(char *err, const char *what, int ret) {
  char text[160];
  mt_strerror(ret, text, sizeof(text));
  return tb_fail(err, TB_FAILED, "%s: %s (-0x%04x)", what, text, (unsigned)-ret);
}

/* ------------------------------------------------------------------------- state */

/* What the server sent in its handshake messages, as seen by this side. */
typedef struct mt_seen {
  int server_hello; /* a ServerHello (not a HelloRetryRequest) was seen */
  int hrr;          /* a HelloRetryRequest was seen (TLS 1.3) */
  int tls13;        /* it selected TLS 1.3 */
  int psk;          /* TLS 1.3: it accepted a pre-shared key (resumption) */
  int hello_done;   /* TLS 1.2: ServerHelloDone, i.e. a full handshake */
  int suite;
  uint16_t group; /* key share / named curve / matched FFDHE prime; 0: none */
  int dh_bits;    /* TLS 1.2 DHE with a prime that is no RFC 7919 group */
  int have_sigalg;
  uint16_t sigalg;
  int have_client_sigalg; /* the client's CertificateVerify (mutual auth) */
  uint16_t client_sigalg;
} mt_seen;

/* Read-back state (driver.h's rule): what was found, in the tb_wire's extra bytes, and the
 * two handshake traffic secrets (TLS 1.3) that open the protected records, in its keys. */
typedef struct mt_readback {
  mt_seen seen;
  int parsed; /* negotiated() has read the wire */
} mt_readback;
_Static_assert(sizeof(mt_readback) <= TB_WIRE_EXTRA, "mt_readback outgrew the tb_wire's extra");

typedef struct mt_secrets {
  unsigned char secret[2][MBEDTLS_MD_MAX_SIZE]; /* [0]: the client's, [1]: the server's */
  size_t secret_len[2];
} mt_secrets;
_Static_assert(sizeof(mt_secrets) <= TB_WIRE_KEYS, "mt_secrets outgrew the tb_wire's keys");

typedef struct mt_ctx {
  tb_role role;
  int tls;
  int verify; /* this side verifies the peer's chain */
  int resumption;
  int expect_hrr;  /* client with tb_config.key_share: the server must ask for another share */
  int own_cert;    /* own_chain / own_key loaded */
  tb_psk_mode psk; /* keyed by the pre-shared key (mbedtls_ssl_conf_psk), in this mode */
  size_t record_size;
  char server_name[256];
  int suites[2];
#if MT_V3
  uint16_t groups[3];
  uint16_t sig_algs[2];
#else
  mbedtls_ecp_group_id curves[3];
  int sig_hashes[2];
#endif
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  mbedtls_x509_crt ca, own_chain;
  mbedtls_pk_context own_key;
#if defined(MBEDTLS_SSL_TICKET_C)
  mbedtls_ssl_ticket_context ticket;
#endif
  mbedtls_ssl_config conf;
} mt_ctx;

typedef struct mt_conn {
  mt_ctx *ctx;
  tb_transport io;
  mbedtls_net_context net; /* --io fd: the socket mbedTLS's net_sockets reads and writes */
  tb_wire *wire;           /* the handshake's bytes, and the read-back (mt_readback) */
  int observing;           /* the handshake is still running: keep the bytes */
  mbedtls_ssl_context ssl;
} mt_conn;

/* ------------------------------------------------------------------------- read-back */

/* The messages are read by the shared reader (tls_wire.c); what they say goes into
 * mt_seen. */
static void parse_server_hello(mt_seen *s, const unsigned char *b, size_t len) {
  tb_server_hello sh;
  if (tb_hs_server_hello(b, len, &sh) != 0) return;
  if (sh.hrr) {
    s->hrr = 1;
    return;
  }
  s->server_hello = 1;
  s->suite = sh.suite;
  s->tls13 = sh.tls13;
  s->group = sh.group;
  s->psk = sh.psk;
}

static const unsigned char ffdhe2048_p[] = MBEDTLS_DHM_RFC7919_FFDHE2048_P_BIN;
static const unsigned char ffdhe3072_p[] = MBEDTLS_DHM_RFC7919_FFDHE3072_P_BIN;
static const unsigned char ffdhe4096_p[] = MBEDTLS_DHM_RFC7919_FFDHE4096_P_BIN;

/* TLS 1.2 DHE sends the prime, not a group name: match it against RFC 7919. */
static void match_dh_prime(mt_seen *s, const unsigned char *p, size_t len) {
  static const struct {
    const unsigned char *p;
    size_t len;
    uint16_t id;
  } known[] = {{ffdhe2048_p, sizeof(ffdhe2048_p), 0x0100},
               {ffdhe3072_p, sizeof(ffdhe3072_p), 0x0101},
               {ffdhe4096_p, sizeof(ffdhe4096_p), 0x0102}};
  s->group = 0;
  s->dh_bits = (int)len * 8;
  for (size_t i = 0; i < COUNT(known); i++) {
    if (known[i].len == len && memcmp(known[i].p, p, len) == 0) s->group = known[i].id;
  }
}

static void parse_server_key_exchange(mt_seen *s, const unsigned char *b, size_t len) {
  char iana[TB_NAME_LEN];
  suite_name(s->suite, iana);
  mt_kx kx = suite_kx(iana);
  tb_key_exchange ke;
  if (kx == KX_ECDHE_PSK || kx == KX_DHE_PSK) {
    /* A PSK key exchange: an identity hint before the parameters, and nothing signed. */
    if (tb_hs_psk_server_key_exchange(b, len, kx == KX_DHE_PSK, &ke) != 0) return;
    if (kx == KX_DHE_PSK) {
      match_dh_prime(s, ke.dh_p, ke.dh_p_len);
    } else {
      s->group = ke.group;
    }
    return;
  }
  if (kx != KX_ECDHE_RSA && kx != KX_ECDHE_ECDSA && kx != KX_DHE_RSA) return;
  if (tb_hs_server_key_exchange(b, len, kx == KX_DHE_RSA, &ke) != 0) return;
  if (kx == KX_DHE_RSA) {
    match_dh_prime(s, ke.dh_p, ke.dh_p_len);
  } else {
    s->group = ke.group;
  }
  s->sigalg = ke.sigalg;
  s->have_sigalg = 1;
}

/* One whole handshake message of the server's (type, body). */
static void observe_message(void *seen, unsigned type, const unsigned char *body, size_t len) {
  mt_seen *s = seen;
  switch (type) {
    case TB_HS_SERVER_HELLO:
      parse_server_hello(s, body, len);
      break;
    case TB_HS_SERVER_KEY_EXCHANGE:
      if (s->server_hello && !s->tls13) parse_server_key_exchange(s, body, len);
      break;
    case TB_HS_SERVER_HELLO_DONE:
      s->hello_done = 1;
      break;
    case TB_HS_CERTIFICATE_VERIFY:
      if (s->tls13 && len >= 2) {
        s->sigalg = tb_hs_certificate_verify(body, len);
        s->have_sigalg = 1;
      }
      break;
    default:
      break;
  }
}

/* One whole handshake message of the client's: only its CertificateVerify matters. Its
 * first two bytes are the SignatureScheme (TLS 1.3) or SignatureAndHashAlgorithm (TLS 1.2,
 * the same code points). */
static void observe_client_message(void *seen, unsigned type, const unsigned char *body,
                                   size_t len) {
  mt_seen *s = seen;
  if (type != TB_HS_CERTIFICATE_VERIFY || len < 2) return;
  s->client_sigalg = tb_hs_certificate_verify(body, len);
  s->have_client_sigalg = 1;
}

#if MT_TLS13
static void export_keys(void *p, mbedtls_ssl_key_export_type type, const unsigned char *secret,
                        size_t secret_len, const unsigned char client_random[32],
                        const unsigned char server_random[32], mbedtls_tls_prf_types prf) {
  (void)client_random, (void)server_random, (void)prf;
  mt_secrets *rb = p;
  int server = type == MBEDTLS_SSL_KEY_EXPORT_TLS1_3_SERVER_HANDSHAKE_TRAFFIC_SECRET;
  if ((!server && type != MBEDTLS_SSL_KEY_EXPORT_TLS1_3_CLIENT_HANDSHAKE_TRAFFIC_SECRET) ||
      secret_len > sizeof(rb->secret[server])) {
    return;
  }
  memcpy(rb->secret[server], secret, secret_len);
  rb->secret_len[server] = secret_len;
}

static int md_hmac(const void *md, const unsigned char *key, size_t key_len,
                   const unsigned char *data, size_t len, unsigned char *out) {
  return mbedtls_md_hmac(md, key, key_len, data, len, out);
}

/* HKDF-Expand-Label with the hash of the suite, told by the secret's length. */
static int expand_label(const unsigned char *secret, size_t secret_len, const char *label,
                        unsigned char *out, size_t out_len) {
  const mbedtls_md_info_t *md =
      mbedtls_md_info_from_type(secret_len == 48 ? MBEDTLS_MD_SHA384 : MBEDTLS_MD_SHA256);
  if (md == NULL) return -1;
  return tb_hkdf_expand_label(md_hmac, md, mbedtls_md_get_size(md), secret, secret_len, label, out,
                              out_len);
}

/* One direction's handshake traffic key, for opening its protected records. */
typedef struct mt_opener {
  int suite;
  size_t key_len, tag_len;
  unsigned char key[32], iv[12];
} mt_opener;

/* Decrypts one TLS 1.3 record (tb_record_open_fn). AES-GCM and AES-CCM are CTR mode over AES
 * (first data counter block 2 resp. 1, GCM's 32-bit counter and CCM's 24-bit one do not wrap
 * within a record), ChaCha20-Poly1305 starts at block 1. The tag is not checked: the inner
 * content type and padding the reader requires tell a wrong key. ECB block by block rather
 * than mbedtls_aes_crypt_ctr, which a build may leave out (MBEDTLS_CIPHER_MODE_CTR). */
static size_t open_record(void *arg, uint64_t seq, const unsigned char header[5],
                          const unsigned char *body, size_t len, unsigned char *out) {
  (void)header;
  mt_opener *o = arg;
  if (len <= o->tag_len) return 0;
  size_t n = len - o->tag_len;
  unsigned char nonce[12];
  memcpy(nonce, o->iv, sizeof(nonce));
  for (int i = 0; i < 8; i++) nonce[11 - i] ^= (unsigned char)(seq >> (8 * i));
  if (o->suite == MBEDTLS_TLS1_3_CHACHA20_POLY1305_SHA256) {
    return mbedtls_chacha20_crypt(o->key, nonce, 1, n, body, out) == 0 ? n : 0;
  }
  unsigned char block[16] = {0}, stream[16];
  int gcm = o->suite == MBEDTLS_TLS1_3_AES_128_GCM_SHA256 ||
            o->suite == MBEDTLS_TLS1_3_AES_256_GCM_SHA384;
  if (gcm) {
    memcpy(block, nonce, 12);
    block[15] = 2;
  } else { /* CCM, L = 3: flags 2, nonce, counter 1 */
    block[0] = 2;
    memcpy(block + 1, nonce, 12);
    block[15] = 1;
  }
  mbedtls_aes_context aes;
  mbedtls_aes_init(&aes);
  int ret = mbedtls_aes_setkey_enc(&aes, o->key, (unsigned)o->key_len * 8);
  for (size_t p = 0; ret == 0 && p < n; p += 16) {
    ret = mbedtls_aes_crypt_ecb(&aes, MBEDTLS_AES_ENCRYPT, block, stream);
    for (size_t i = 0; i < 16 && p + i < n; i++) out[p + i] = body[p + i] ^ stream[i];
    for (int i = 15; i >= 12 && ++block[i] == 0; i--) {
    }
  }
  mbedtls_aes_free(&aes);
  mbedtls_platform_zeroize(stream, sizeof(stream));
  return ret == 0 ? n : 0;
}

/* TLS 1.3: the CertificateVerify in one direction's protected handshake records: the
 * server's (its own flight) or the client's (mutual auth), opened with that side's secret. */
static void read_protected(mt_conn *c, mt_readback *rb, int from_server) {
  tb_wire_dir dir = (c->ctx->role == TB_SERVER) == from_server ? TB_WIRE_OUT : TB_WIRE_IN;
  const mt_secrets *keys = tb_wire_keys(c->wire);
  const unsigned char *secret = keys->secret[from_server];
  size_t secret_len = keys->secret_len[from_server];
  mt_opener o = {.suite = mbedtls_ssl_get_ciphersuite_id_from_ssl(&c->ssl)};
  o.key_len = o.suite == MBEDTLS_TLS1_3_AES_128_GCM_SHA256 ||
                      o.suite == MBEDTLS_TLS1_3_AES_128_CCM_SHA256 ||
                      o.suite == MBEDTLS_TLS1_3_AES_128_CCM_8_SHA256
                  ? 16
                  : 32;
  o.tag_len = o.suite == MBEDTLS_TLS1_3_AES_128_CCM_8_SHA256 ? 8 : 16;
  if (secret_len == 0 || expand_label(secret, secret_len, "key", o.key, o.key_len) != 0 ||
      expand_label(secret, secret_len, "iv", o.iv, sizeof(o.iv)) != 0) {
    return;
  }
  tb_wire_protected_messages(c->wire, dir, open_record, &o,
                             from_server ? observe_message : observe_client_message, &rb->seen);
  mbedtls_platform_zeroize(&o, sizeof(o));
}
#endif /* MT_TLS13 */

/* ------------------------------------------------------------------------- transport */

/* Both directions are kept while the handshake runs (--io fd too: mbedTLS's own socket
 * I/O, net_sockets, behind these callbacks): the bytes that really passed, nothing parsed. */
static int bio_send(void *p, const unsigned char *buf, size_t len) {
  mt_conn *c = p;
  long n;
  if (c->io.fd >= 0) {
    n = mbedtls_net_send(&c->net, buf, len);
    if (n <= 0) return (int)n;
  } else {
    n = c->io.send(c->io.io, buf, len);
    if (n == TB_IO_WOULD_BLOCK || n == 0) return MBEDTLS_ERR_SSL_WANT_WRITE;
    if (n < 0) return MBEDTLS_ERR_NET_SEND_FAILED;
  }
  if (c->observing) tb_wire_keep(c->wire, TB_WIRE_OUT, buf, (size_t)n);
  return (int)n;
}

static int bio_recv(void *p, unsigned char *buf, size_t len) {
  mt_conn *c = p;
  long n;
  if (c->io.fd >= 0) {
    n = mbedtls_net_recv(&c->net, buf, len);
    if (n < 0) return (int)n;
  } else {
    n = c->io.recv(c->io.io, buf, len);
    if (n == TB_IO_WOULD_BLOCK) return MBEDTLS_ERR_SSL_WANT_READ;
    if (n < 0) return MBEDTLS_ERR_NET_RECV_FAILED;
  }
  if (c->observing) tb_wire_keep(c->wire, TB_WIRE_IN, buf, (size_t)n);
  return (int)n; /* 0: the peer closed the transport */
}

/* ------------------------------------------------------------------------- randomness */

/* --deterministic: the core's fixed stream (NULL: the system's entropy). mbedTLS draws its
 * random values from two generators, and both are seeded from the stream: each context's
 * CTR_DRBG (mbedtls_ssl_conf_rng: the randoms, RSA blinding and PSS salts, the ticket key),
 * seeded in ctx_new, and in 3.x PSA's own DRBG (the TLS 1.3 key shares), seeded by
 * psa_crypto_init in global_init. */
static tb_random_fn fixed_random;

/* The f_entropy of mbedtls_ctr_drbg_seed. */
static int fixed_entropy(void *unused, unsigned char *out, size_t len) {
  (void)unused;
  fixed_random(out, len);
  return 0;
}

/* A context's CTR_DRBG, seeded from the system's entropy or from the fixed stream. */
static int seed_drbg(mt_ctx *ctx) {
  static const unsigned char personal[] = "tlsbench mbedtls adapter";
  if (fixed_random != NULL) {
    return mbedtls_ctr_drbg_seed(&ctx->drbg, fixed_entropy, NULL, personal, sizeof(personal) - 1);
  }
  return mbedtls_ctr_drbg_seed(&ctx->drbg, mbedtls_entropy_func, &ctx->entropy, personal,
                               sizeof(personal) - 1);
}

#if MT_V3 && defined(MBEDTLS_PSA_CRYPTO_C) && !defined(MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG)
#define MT_PSA_ENTROPY 1
/* Exported by libmbedcrypto, declared in library/psa_crypto_invasive.h (not installed): the
 * entropy sources psa_crypto_init seeds PSA's DRBG from, for tests and integrators. */
psa_status_t mbedtls_psa_crypto_configure_entropy_sources(
    void (*entropy_init)(mbedtls_entropy_context *ctx),
    void (*entropy_free)(mbedtls_entropy_context *ctx));

static int fixed_source(void *unused, unsigned char *out, size_t len, size_t *olen) {
  *olen = len;
  return fixed_entropy(unused, out, len);
}

/* PSA's entropy context with the fixed stream as its only source: mbedtls_entropy_init
 * adds the platform's source (getrandom), which is dropped. */
static void psa_fixed_entropy_init(mbedtls_entropy_context *ctx) {
  mbedtls_entropy_init(ctx);
  ctx->MT_PRIV(source_count) = 0;
  mbedtls_entropy_add_source(ctx, fixed_source, NULL, MBEDTLS_ENTROPY_BLOCK_SIZE,
                             MBEDTLS_ENTROPY_SOURCE_STRONG);
}
#else
#define MT_PSA_ENTROPY 0
#endif

static tb_status derandomize(tb_random_fn fill, tb_randomness *out, char *err) {
  fixed_random = fill;
  out->seeded = 1;
#if MT_PSA_ENTROPY
  psa_status_t st =
      mbedtls_psa_crypto_configure_entropy_sources(psa_fixed_entropy_init, mbedtls_entropy_free);
  if (st != PSA_SUCCESS) {
    return tb_fail(err, TB_FAILED, "mbedtls_psa_crypto_configure_entropy_sources failed (%d)",
                   (int)st);
  }
  snprintf(out->how, sizeof(out->how),
           "each context's CTR_DRBG (mbedtls_ssl_conf_rng) and PSA's DRBG "
           "(mbedtls_psa_crypto_configure_entropy_sources) seeded from the stream");
  return TB_OK;
#elif MT_V3 && defined(MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG)
  return tb_fail(err, TB_UNSUPPORTED,
                 "this build takes PSA's randomness from MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG");
#else
  (void)err;
  snprintf(out->how, sizeof(out->how),
           "each context's CTR_DRBG (mbedtls_ssl_conf_rng) seeded from the stream");
  return TB_OK;
#endif
}

/* ------------------------------------------------------------------------- global, info */

static tb_status global_init(char *err) {
#if MT_V3 && defined(MBEDTLS_PSA_CRYPTO_C)
  /* TLS 1.3 in 3.x runs its key exchange and key schedule through PSA. */
  psa_status_t st = psa_crypto_init();
  if (st != PSA_SUCCESS) return tb_fail(err, TB_FAILED, "psa_crypto_init failed (%d)", (int)st);
#else
  (void)err;
#endif
  return TB_OK;
}

static void global_cleanup(void) {
#if MT_V3 && defined(MBEDTLS_PSA_CRYPTO_C)
  mbedtls_psa_crypto_free();
#endif
}

/* The build's facts, collected once into static storage for info(). */
#define MT_MAX_SUITES 256
static char suite_store[MT_MAX_SUITES][TB_NAME_LEN];
static const char *suite_list[MT_MAX_SUITES + 1];
static const char *group_list[32];
static const char *sigalg_list[32];
static char option_store[32][96];
static const char *option_list[33];

static const char *const features[] = {
    "MBEDTLS_HAVE_ASM",
    "MBEDTLS_AESNI_C",
    "MBEDTLS_AESCE_C",
    "MBEDTLS_PADLOCK_C",
    "MBEDTLS_SSL_PROTO_TLS1_2",
    "MBEDTLS_SSL_PROTO_TLS1_3",
    "MBEDTLS_SSL_TLS1_3_COMPATIBILITY_MODE",
    "MBEDTLS_SSL_SESSION_TICKETS",
    "MBEDTLS_SSL_MAX_FRAGMENT_LENGTH",
    "MBEDTLS_SSL_RECORD_SIZE_LIMIT",
    "MBEDTLS_SSL_VARIABLE_BUFFER_LENGTH",
    "MBEDTLS_SSL_KEEP_PEER_CERTIFICATE",
    "MBEDTLS_SSL_ENCRYPT_THEN_MAC",
    "MBEDTLS_SSL_EXTENDED_MASTER_SECRET",
    "MBEDTLS_ECP_NIST_OPTIM",
    "MBEDTLS_ECDSA_DETERMINISTIC",
    "MBEDTLS_RSA_NO_CRT",
    "MBEDTLS_PSA_CRYPTO_C",
    "MBEDTLS_USE_PSA_CRYPTO",
    "MBEDTLS_THREADING_C",
    "MBEDTLS_PLATFORM_MEMORY",
};

static void collect_options(void) {
  size_t n = 0;
  snprintf(option_store[n++], sizeof(option_store[0]), "MBEDTLS_SSL_IN_CONTENT_LEN=%d",
           (int)MBEDTLS_SSL_IN_CONTENT_LEN);
  snprintf(option_store[n++], sizeof(option_store[0]), "MBEDTLS_SSL_OUT_CONTENT_LEN=%d",
           (int)MBEDTLS_SSL_OUT_CONTENT_LEN);
  snprintf(option_store[n++], sizeof(option_store[0]), "MBEDTLS_VERSION_NUMBER=0x%08x",
           (unsigned)MBEDTLS_VERSION_NUMBER);
  /* A user's config may leave out the version module and its feature list (MBEDTLS_VERSION_C,
   * MBEDTLS_VERSION_FEATURES): the build options then name the content lengths only. */
#if defined(MBEDTLS_VERSION_C) && defined(MBEDTLS_VERSION_FEATURES)
  for (size_t i = 0; i < COUNT(features) && n < COUNT(option_store); i++) {
    /* mbedtls_version_check_feature: 0 = compiled in, -1 = not, -2 = no feature list. */
    int has = mbedtls_version_check_feature(features[i]);
    if (has == -2) break;
    snprintf(option_store[n++], sizeof(option_store[0]), "%s=%d", features[i], has == 0);
  }
#endif
  for (size_t i = 0; i < n; i++) option_list[i] = option_store[i];
  option_list[n] = NULL;
}

#if defined(MBEDTLS_DHM_C) && defined(MBEDTLS_KEY_EXCHANGE_DHE_RSA_ENABLED)
#define MT_HAVE_DHE 1
#else
#define MT_HAVE_DHE 0
#endif

/* TLS 1.3 FFDHE runs through PSA: the build must want FFDH and that RFC 7919 group. */
static int ffdhe_tls13(int bits) {
  (void)bits;
#if MT_TLS13 && defined(PSA_WANT_ALG_FFDH)
#if defined(PSA_WANT_DH_RFC7919_2048)
  if (bits == 2048) return 1;
#endif
#if defined(PSA_WANT_DH_RFC7919_3072)
  if (bits == 3072) return 1;
#endif
#if defined(PSA_WANT_DH_RFC7919_4096)
  if (bits == 4096) return 1;
#endif
#endif
  return 0;
}

static int group_available(const mt_group *g, int tls) {
  if (strcmp(g->name, "X25519MLKEM768") == 0) return 0; /* mbedTLS has no ML-KEM */
  if (ffdhe_bits(g)) return tls == 12 ? MT_HAVE_DHE : ffdhe_tls13(ffdhe_bits(g));
  if (tls == 13 && !MT_TLS13) return 0;
  /* RFC 8446 gives the brainpool curves new code points (0x1f..0x21) that mbedTLS lacks. */
  if (tls == 13 && g->code >= 0x001a && g->code <= 0x001c) return 0;
#if defined(MBEDTLS_ECP_C)
  return mbedtls_ecp_curve_info_from_tls_id(g->code) != NULL;
#else
  return 0;
#endif
}

/* Why this build cannot sign / verify `s` in TLS 1.`tls`; NULL when it can. */
static const char *sigalg_refusal(const mt_sigalg *s, int tls) {
  unsigned hash = s->code >> 8, sig = s->code & 0xff;
  if (s->code == 0x0807 || s->code == 0x0808) return "mbedTLS has no EdDSA in TLS";
  if ((s->code >= 0x0904 && s->code <= 0x0906) || (s->code >= 0x0911 && s->code <= 0x091c)) {
    return "mbedTLS (2.28, 3.6) has no ML-DSA or SLH-DSA, in TLS or in X.509";
  }
  if (s->code >= 0x0809 && s->code <= 0x080b) {
    return "mbedTLS does not support RSA-PSS (rsassa-pss key) certificates in TLS";
  }
  if (s->code >= 0x0804 && s->code <= 0x0806) {
    if (tls == 12) return "mbedTLS signs and verifies TLS 1.2 handshakes with PKCS#1 v1.5 only";
#if !defined(MBEDTLS_PKCS1_V21)
    return "this build has no RSA-PSS (MBEDTLS_PKCS1_V21)";
#endif
    return NULL;
  }
  if (hash < 4 || hash > 6 || (sig != 1 && sig != 3)) {
    return "not offered by tlsbench (SHA-1 and older schemes)";
  }
  if (tls == 13 && sig == 1) {
    return "TLS 1.3 does not allow rsa_pkcs1_* in CertificateVerify (RFC 8446 4.2.3)";
  }
  return NULL;
}

static int sigalg_available(const mt_sigalg *s, int tls) {
  if (tls == 13 && !MT_TLS13) return 0;
  return sigalg_refusal(s, tls) == NULL;
}

static void collect_lists(void) {
  size_t n = 0;
  for (const int *id = mbedtls_ssl_list_ciphersuites(); *id != 0 && n < MT_MAX_SUITES; id++) {
    suite_name(*id, suite_store[n]);
    mt_kx kx = suite_kx(suite_store[n]);
    if (kx == KX_OTHER || (kx == KX_TLS13 && !MT_TLS13)) continue;
    suite_list[n] = suite_store[n];
    n++;
  }
  suite_list[n] = NULL;
  n = 0;
  const tb_name *group_tables[] = {tb_group_names, brainpool_groups};
  for (size_t t = 0; t < COUNT(group_tables); t++) {
    for (const mt_group *g = group_tables[t]; g->name != NULL && n + 1 < COUNT(group_list); g++) {
      if (group_available(g, 12) || group_available(g, 13)) group_list[n++] = g->name;
    }
  }
  group_list[n] = NULL;
  n = 0;
  for (const mt_sigalg *sa = tb_sigalg_names; sa->name != NULL && n + 1 < COUNT(sigalg_list);
       sa++) {
    if (sigalg_available(sa, 12) || sigalg_available(sa, 13)) sigalg_list[n++] = sa->name;
  }
  sigalg_list[n] = NULL;
}

static const char *const version_list[] = {
#if defined(MBEDTLS_SSL_PROTO_TLS1_2)
    "1.2",
#endif
#if MT_TLS13
    "1.3",
#endif
    NULL,
};

static tb_status info(tb_info *out, char *err) {
  (void)err;
  /* version.h's macro, not mbedtls_version_get_string_full (MBEDTLS_VERSION_C may be out). */
  snprintf(out->version, sizeof(out->version), "%s", MBEDTLS_VERSION_STRING_FULL);
  collect_options();
  collect_lists();
  out->build_options = option_list;
  out->versions = version_list;
  out->suites = suite_list;
  out->groups = group_list;
  out->sigalgs = sigalg_list;
#if !defined(MBEDTLS_THREADING_C)
  out->no_threads =
      "built without MBEDTLS_THREADING_C: its contexts and PSA keys are not safe to share "
      "between threads (the `threads` feature builds it with pthread mutexes)";
#endif
  return TB_OK;
}

/* ------------------------------------------------------------------------- the offer */

/* What ctx_new decided, before it is applied to the mbedtls_ssl_config. */
typedef struct mt_offer {
  mt_kx kx;
  int ffdhe_bits;  /* TLS 1.2 DHE: the RFC 7919 group the server uses */
  int mfl_code;    /* max_fragment_length, 0: none */
  int pin_groups;  /* ctx->groups / curves hold the offer */
  int pin_sigalgs; /* ctx->sig_algs / sig_hashes hold the offer */
} mt_offer;

static tb_status check_version(const tb_config *cfg, char *err) {
  if (cfg->tls_version == 12) {
#if defined(MBEDTLS_SSL_PROTO_TLS1_2)
    return TB_OK;
#else
    return tb_fail(err, TB_UNSUPPORTED, "this build has no TLS 1.2 (MBEDTLS_SSL_PROTO_TLS1_2)");
#endif
  }
  if (cfg->tls_version == 13) {
#if MT_TLS13
    return TB_OK;
#elif MT_V3
    return tb_fail(err, TB_UNSUPPORTED, "this build has no TLS 1.3 (MBEDTLS_SSL_PROTO_TLS1_3)");
#else
    return tb_fail(err, TB_UNSUPPORTED,
                   "mbedTLS 2.28 has no usable TLS 1.3 (only an incomplete prototype)");
#endif
  }
  return tb_fail(err, TB_UNSUPPORTED, "TLS version %d", cfg->tls_version);
}

static tb_status choose_suite(const tb_config *cfg, mt_ctx *ctx, mt_offer *o, char *err) {
  int id = suite_id(cfg->suite);
  if (id == 0) {
    return tb_fail(err, TB_UNSUPPORTED, "suite %s is not in this build",
                   cfg->suite ? cfg->suite : "(none)");
  }
  o->kx = suite_kx(cfg->suite);
  if (o->kx == KX_OTHER) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "%s needs a certificate and a pre-shared key at once (RSA-PSK), a static "
                   "ECDH certificate or EC J-PAKE, which tlsbench does not configure",
                   cfg->suite);
  }
  if (kx_is_psk(o->kx) != (cfg->psk.mode != TB_PSK_NONE && cfg->tls_version == 12)) {
    return tb_fail(err, TB_UNSUPPORTED, "%s %s a pre-shared key", cfg->suite,
                   kx_is_psk(o->kx) ? "needs" : "takes no");
  }
  if ((o->kx == KX_TLS13) != (cfg->tls_version == 13)) {
    return tb_fail(err, TB_UNSUPPORTED, "%s is not a TLS 1.%d suite", cfg->suite,
                   cfg->tls_version % 10);
  }
  ctx->suites[0] = id;
  ctx->suites[1] = 0;
  return TB_OK;
}

/* TLS 1.2 (RFC 8422 5.1): supported_groups also lists the curves the client accepts in
 * ECDSA certificates, and mbedTLS enforces that on both sides. Offering the certificate's
 * curve beside the requested group would break the pinned offer, so such a request is
 * refused (as the other adapters do); the driver's default group for TLS 1.2 with ECDSA is
 * the certificate's curve. */
static uint16_t ecdsa_cert_curve(const tb_config *cfg, const mt_offer *o) {
  const mt_sigalg *s = sigalg_by_name(cfg->sigalg);
  if (o->kx != KX_ECDHE_ECDSA || s == NULL) return 0;
  switch (s->code) {
    case 0x0403:
      return 0x0017;
    case 0x0503:
      return 0x0018;
    case 0x0603:
      return 0x0019;
    default:
      return 0;
  }
}

static tb_status pin_groups(const tb_config *cfg, mt_ctx *ctx, const mt_group *g, mt_offer *o,
                            char *err) {
  uint16_t cert_curve = ecdsa_cert_curve(cfg, o);
  if (cert_curve != 0 && cert_curve != g->code) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "TLS 1.2 with an ECDSA certificate needs its curve among the supported "
                   "groups, and the offer is pinned to %s",
                   cfg->group);
  }
#if MT_V3
  ctx->groups[0] = g->code;
  ctx->groups[1] = 0;
  if (cfg->key_share != NULL) {
    /* A TLS 1.3 client sends a key share for the first group of its list only. */
    const mt_group *first = group_by_name(cfg->key_share);
    if (first == NULL || !group_available(first, 13))
      return tb_fail(err, TB_UNSUPPORTED, "key share group %s is not in this build",
                     cfg->key_share);
    ctx->groups[0] = first->code;
    ctx->groups[1] = g->code;
    ctx->groups[2] = 0;
  }
#else
  const mbedtls_ecp_curve_info *curve = mbedtls_ecp_curve_info_from_tls_id(g->code);
  if (curve == NULL) return tb_fail(err, TB_UNSUPPORTED, "curve 0x%04x not in this build", g->code);
  ctx->curves[0] = curve->grp_id;
  ctx->curves[1] = MBEDTLS_ECP_DP_NONE;
#endif
  o->pin_groups = 1;
  return TB_OK;
}

static tb_status choose_group(const tb_config *cfg, mt_ctx *ctx, mt_offer *o, char *err) {
  /* Static RSA and the pre-shared key alone: no key exchange group. */
  if (o->kx == KX_RSA || o->kx == KX_PSK || cfg->psk.mode == TB_PSK_KE) return TB_OK;
  const mt_group *g = group_by_name(cfg->group);
  if (g == NULL) {
    return tb_fail(err, TB_UNSUPPORTED, "unknown group %s", cfg->group ? cfg->group : "(none)");
  }
  if (!group_available(g, cfg->tls_version)) {
    return tb_fail(err, TB_UNSUPPORTED, "group %s is not available for TLS 1.%d in this build%s",
                   g->name, cfg->tls_version % 10,
                   g->code == 0x11ec ? " (mbedTLS has no ML-KEM)" : "");
  }
  if (o->kx != KX_TLS13) {
    if (kx_is_dhe(o->kx) != (ffdhe_bits(g) != 0)) {
      return tb_fail(err, TB_UNSUPPORTED, "suite %s cannot use group %s", cfg->suite, g->name);
    }
  }
  if (kx_is_dhe(o->kx)) {
    /* TLS 1.2 DHE names no group: the server sends the RFC 7919 prime (mbedTLS would send
     * RFC 3526 MODP 2048 by default) and the client demands at least that size. */
    o->ffdhe_bits = ffdhe_bits(g);
    return TB_OK;
  }
#if !MT_V3
  if (ffdhe_bits(g)) return tb_fail(err, TB_UNSUPPORTED, "FFDHE groups need TLS 1.3");
#endif
  return pin_groups(cfg, ctx, g, o, err);
}

static tb_status choose_sigalg(const tb_config *cfg, mt_ctx *ctx, mt_offer *o, char *err) {
  /* One list (3.6 sig_algs, 2.28 sig_hashes) serves both signers. */
  if (cfg->client_sigalg != NULL &&
      (cfg->sigalg == NULL || strcmp(cfg->client_sigalg, cfg->sigalg))) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "mbedTLS cannot pin the client's signature scheme (%s) apart from the "
                   "server's: one signature algorithm list serves both",
                   cfg->client_sigalg);
  }
  /* Static RSA signs nothing, nor does a pre-shared key. */
  if (o->kx == KX_RSA || cfg->psk.mode != TB_PSK_NONE) return TB_OK;
  const mt_sigalg *s = sigalg_by_name(cfg->sigalg);
  if (s == NULL) {
    return tb_fail(err, TB_UNSUPPORTED, "unknown signature scheme %s",
                   cfg->sigalg ? cfg->sigalg : "(none)");
  }
  const char *why = sigalg_refusal(s, cfg->tls_version);
  if (why != NULL) return tb_fail(err, TB_UNSUPPORTED, "%s: %s", s->name, why);
  unsigned sig = s->code & 0xff;
  if ((o->kx == KX_ECDHE_ECDSA && sig != 3) ||
      ((o->kx == KX_ECDHE_RSA || o->kx == KX_DHE_RSA) && sig != 1)) {
    return tb_fail(err, TB_UNSUPPORTED, "suite %s cannot be signed with %s", cfg->suite, s->name);
  }
#if MT_V3
  ctx->sig_algs[0] = s->code;
  ctx->sig_algs[1] = MBEDTLS_TLS1_3_SIG_NONE;
#else
  /* 2.28 restricts the hash only; the signature algorithm follows from the certificate. */
  static const int md_of_hash[] = {MBEDTLS_MD_SHA256, MBEDTLS_MD_SHA384, MBEDTLS_MD_SHA512};
  ctx->sig_hashes[0] = md_of_hash[(s->code >> 8) - 4];
  ctx->sig_hashes[1] = MBEDTLS_MD_NONE;
#endif
  o->pin_sigalgs = 1;
  return TB_OK;
}

static tb_status choose_record_size(const tb_config *cfg, mt_offer *o, char *err) {
  size_t size = cfg->record_size;
  if (size == 0) return TB_OK;
  /* The protocol maximum is what a build with full-size buffers does anyway. */
  if (size == 16384 && MBEDTLS_SSL_OUT_CONTENT_LEN >= 16384 &&
      MBEDTLS_SSL_IN_CONTENT_LEN >= 16384) {
    return TB_OK;
  }
  if (cfg->tls_version == 13) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "mbedTLS negotiates max_fragment_length in TLS 1.2 only (in TLS 1.3 its "
                   "record_size_limit is fixed to MBEDTLS_SSL_IN_CONTENT_LEN)");
  }
#if defined(MBEDTLS_SSL_MAX_FRAGMENT_LENGTH)
  switch (size) {
    case 512:
      o->mfl_code = MBEDTLS_SSL_MAX_FRAG_LEN_512;
      return TB_OK;
    case 1024:
      o->mfl_code = MBEDTLS_SSL_MAX_FRAG_LEN_1024;
      return TB_OK;
    case 2048:
      o->mfl_code = MBEDTLS_SSL_MAX_FRAG_LEN_2048;
      return TB_OK;
    case 4096:
      o->mfl_code = MBEDTLS_SSL_MAX_FRAG_LEN_4096;
      return TB_OK;
    default:
      return tb_fail(err, TB_UNSUPPORTED,
                     "record size %zu: max_fragment_length takes 512, 1024, 2048 or 4096", size);
  }
#else
  (void)o;
  return tb_fail(err, TB_UNSUPPORTED, "this build has no MBEDTLS_SSL_MAX_FRAGMENT_LENGTH");
#endif
}

/* ------------------------------------------------------------------------- pre-shared keys */

#if defined(MBEDTLS_SSL_HANDSHAKE_WITH_PSK_ENABLED) || \
    defined(MBEDTLS_KEY_EXCHANGE_SOME_PSK_ENABLED)
#define MT_HAVE_PSK 1
#else
#define MT_HAVE_PSK 0
#endif

/* Whether this build can key the handshake with the pre-shared key in the mode asked. */
static tb_status choose_psk(const tb_config *cfg, mt_ctx *ctx, char *err) {
  if (cfg->psk.mode == TB_PSK_NONE) return TB_OK;
  if (!MT_HAVE_PSK) {
    return tb_fail(err, TB_UNSUPPORTED, "this build has no pre-shared key exchange");
  }
  if (cfg->tls_version == 13) {
    /* ssl_tls13_psk_get_psk / the server's identity match: an external PSK is SHA-256's. */
    if (strcmp(cfg->psk.hash, "SHA256") != 0) {
      return tb_fail(err, TB_UNSUPPORTED,
                     "mbedTLS binds a TLS 1.3 external PSK to SHA-256, and %s hashes with %s",
                     cfg->suite, cfg->psk.hash);
    }
#if MT_TLS13 && !defined(MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_ENABLED)
    if (cfg->psk.mode == TB_PSK_KE)
      return tb_fail(err, TB_UNSUPPORTED,
                     "this build has no psk_ke (MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK)");
#endif
#if MT_TLS13 && !defined(MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL_ENABLED)
    if (cfg->psk.mode == TB_PSK_DHE)
      return tb_fail(err, TB_UNSUPPORTED,
                     "this build has no psk_dhe_ke "
                     "(MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL)");
#endif
  }
  ctx->psk = cfg->psk.mode;
  return TB_OK;
}

/* Both sides hold the key and its identity: the client offers it, the server takes a
 * client offering that identity (mbedTLS compares it with its own). In TLS 1.3 both allow
 * the one key exchange mode asked, so the client's psk_key_exchange_modes lists it alone
 * and no key share is sent for psk_ke. */
static tb_status configure_psk(mt_ctx *ctx, const tb_config *cfg, char *err) {
  if (ctx->psk == TB_PSK_NONE) return TB_OK;
#if MT_HAVE_PSK
  int ret =
      mbedtls_ssl_conf_psk(&ctx->conf, cfg->psk.key, cfg->psk.key_len,
                           (const unsigned char *)cfg->psk.identity, strlen(cfg->psk.identity));
  if (ret != 0) return mt_fail(err, "mbedtls_ssl_conf_psk", ret);
#if MT_TLS13
  if (ctx->tls == 13) {
    mbedtls_ssl_conf_tls13_key_exchange_modes(
        &ctx->conf, ctx->psk == TB_PSK_KE ? MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK
                                          : MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL);
  }
#endif
  return TB_OK;
#else
  (void)cfg;
  return tb_fail(err, TB_UNSUPPORTED, "this build has no pre-shared key exchange");
#endif
}

/* What keyed a full handshake, as the messages say: TLS 1.2 the suite's key exchange; TLS
 * 1.3 the ServerHello's pre_shared_key (external: this context offers no ticket with a
 * pre-shared key) and its key_share. */
static int psk_seen(const mt_conn *c, const mt_seen *s, const char *suite) {
  if (!s->tls13) {
    mt_kx kx = suite_kx(suite);
    return kx == KX_PSK ? TB_PSK_KE : kx_is_psk(kx) ? TB_PSK_DHE : TB_PSK_NONE;
  }
  if (!s->psk || c->ctx->psk == TB_PSK_NONE) return TB_PSK_NONE;
  return s->group != 0 ? TB_PSK_DHE : TB_PSK_KE;
}

/* ------------------------------------------------------------------------- contexts */

static tb_status load_credentials(const tb_config *cfg, mt_ctx *ctx, char *err) {
  int ret;
  if (cfg->psk.mode != TB_PSK_NONE) return TB_OK; /* the key authenticates: no certificate */
  if (ctx->verify) {
    if (cfg->ca_file == NULL) return tb_fail(err, TB_FAILED, "no CA file to verify against");
    ret = mbedtls_x509_crt_parse_file(&ctx->ca, cfg->ca_file);
    if (ret != 0) return mt_fail(err, cfg->ca_file, ret);
  }
  if (cfg->chain_file == NULL) {
    if (cfg->role == TB_SERVER) return tb_fail(err, TB_FAILED, "a server needs a chain file");
    return TB_OK;
  }
  ret = mbedtls_x509_crt_parse_file(&ctx->own_chain, cfg->chain_file); /* all certs: sent */
  if (ret != 0) return mt_fail(err, cfg->chain_file, ret);
  if (cfg->key_file == NULL) return tb_fail(err, TB_FAILED, "a chain file without a key file");
#if MT_V3
  ret = mbedtls_pk_parse_keyfile(&ctx->own_key, cfg->key_file, NULL, mbedtls_ctr_drbg_random,
                                 &ctx->drbg);
#else
  ret = mbedtls_pk_parse_keyfile(&ctx->own_key, cfg->key_file, NULL);
#endif
  if (ret != 0) return mt_fail(err, cfg->key_file, ret);
  ctx->own_cert = 1;
  return TB_OK;
}

static tb_status configure_tickets(mt_ctx *ctx, char *err) {
  mbedtls_ssl_config *conf = &ctx->conf;
  if (ctx->role == TB_CLIENT) {
#if defined(MBEDTLS_SSL_SESSION_TICKETS)
    mbedtls_ssl_conf_session_tickets(conf, ctx->resumption ? MBEDTLS_SSL_SESSION_TICKETS_ENABLED
                                                           : MBEDTLS_SSL_SESSION_TICKETS_DISABLED);
#if MT_TLS13
    /* Without this a 3.6 client silently drops TLS 1.3 tickets. */
    mbedtls_ssl_conf_tls13_enable_signal_new_session_tickets(
        conf, ctx->resumption ? MBEDTLS_SSL_TLS1_3_SIGNAL_NEW_SESSION_TICKETS_ENABLED
                              : MBEDTLS_SSL_TLS1_3_SIGNAL_NEW_SESSION_TICKETS_DISABLED);
#endif
    return TB_OK;
#else
    return ctx->resumption ? tb_fail(err, TB_UNSUPPORTED, "no MBEDTLS_SSL_SESSION_TICKETS") : TB_OK;
#endif
  }
#if MT_TLS13 && defined(MBEDTLS_SSL_SESSION_TICKETS)
  /* A 3.6 server sends one TLS 1.3 ticket per handshake by default once a ticket callback
   * is set; no callback and a count of 0 make sure a full handshake is only that. */
  if (!ctx->resumption) mbedtls_ssl_conf_new_session_tickets(conf, 0);
#endif
  if (!ctx->resumption) return TB_OK; /* no ticket callbacks and no session cache */
#if defined(MBEDTLS_SSL_TICKET_C)
  int ret = mbedtls_ssl_ticket_setup(&ctx->ticket, mbedtls_ctr_drbg_random, &ctx->drbg,
                                     MBEDTLS_CIPHER_AES_256_GCM, 86400);
  if (ret != 0) return mt_fail(err, "mbedtls_ssl_ticket_setup", ret);
  mbedtls_ssl_conf_session_tickets_cb(conf, mbedtls_ssl_ticket_write, mbedtls_ssl_ticket_parse,
                                      &ctx->ticket);
  return TB_OK;
#else
  return tb_fail(err, TB_UNSUPPORTED, "this build has no MBEDTLS_SSL_TICKET_C");
#endif
}

static void configure_version(mt_ctx *ctx) {
#if MT_V3
  mbedtls_ssl_protocol_version v =
      ctx->tls == 13 ? MBEDTLS_SSL_VERSION_TLS1_3 : MBEDTLS_SSL_VERSION_TLS1_2;
  mbedtls_ssl_conf_min_tls_version(&ctx->conf, v);
  mbedtls_ssl_conf_max_tls_version(&ctx->conf, v);
#else
  mbedtls_ssl_conf_min_version(&ctx->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
                               MBEDTLS_SSL_MINOR_VERSION_3);
  mbedtls_ssl_conf_max_version(&ctx->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
                               MBEDTLS_SSL_MINOR_VERSION_3);
#endif
}

static tb_status configure_dhe(mt_ctx *ctx, int bits, char *err) {
#if MT_HAVE_DHE
  static const unsigned char g[] = MBEDTLS_DHM_RFC7919_FFDHE2048_G_BIN;
  if (bits == 0) return TB_OK;
  if (ctx->role == TB_CLIENT) {
    mbedtls_ssl_conf_dhm_min_bitlen(&ctx->conf, (unsigned)bits);
    return TB_OK;
  }
  const unsigned char *p = bits == 2048 ? ffdhe2048_p : bits == 3072 ? ffdhe3072_p : ffdhe4096_p;
  size_t len = (size_t)bits / 8;
  int ret = mbedtls_ssl_conf_dh_param_bin(&ctx->conf, p, len, g, sizeof(g));
  return ret == 0 ? TB_OK : mt_fail(err, "mbedtls_ssl_conf_dh_param_bin", ret);
#else
  (void)ctx;
  return bits ? tb_fail(err, TB_UNSUPPORTED, "this build has no DHE") : TB_OK;
#endif
}

static tb_status configure(mt_ctx *ctx, const mt_offer *o, const tb_config *cfg, char *err) {
  mbedtls_ssl_config *conf = &ctx->conf;
  int endpoint = ctx->role == TB_CLIENT ? MBEDTLS_SSL_IS_CLIENT : MBEDTLS_SSL_IS_SERVER;
  int ret = mbedtls_ssl_config_defaults(conf, endpoint, MBEDTLS_SSL_TRANSPORT_STREAM,
                                        MBEDTLS_SSL_PRESET_DEFAULT);
  if (ret != 0) return mt_fail(err, "mbedtls_ssl_config_defaults", ret);
  mbedtls_ssl_conf_rng(conf, mbedtls_ctr_drbg_random, &ctx->drbg);
  configure_version(ctx);
  mbedtls_ssl_conf_ciphersuites(conf, ctx->suites);
#if MT_V3
  if (o->pin_groups) mbedtls_ssl_conf_groups(conf, ctx->groups);
  if (o->pin_sigalgs) mbedtls_ssl_conf_sig_algs(conf, ctx->sig_algs);
#else
  if (o->pin_groups) mbedtls_ssl_conf_curves(conf, ctx->curves);
  if (o->pin_sigalgs) mbedtls_ssl_conf_sig_hashes(conf, ctx->sig_hashes);
#endif
  tb_status st = configure_dhe(ctx, o->ffdhe_bits, err);
  if (st == TB_OK) st = configure_psk(ctx, cfg, err);
  if (st != TB_OK) return st;
  mbedtls_ssl_conf_authmode(conf,
                            ctx->verify ? MBEDTLS_SSL_VERIFY_REQUIRED : MBEDTLS_SSL_VERIFY_NONE);
  if (ctx->verify) mbedtls_ssl_conf_ca_chain(conf, &ctx->ca, NULL);
  if (ctx->own_cert) {
    ret = mbedtls_ssl_conf_own_cert(conf, &ctx->own_chain, &ctx->own_key);
    if (ret != 0) return mt_fail(err, "mbedtls_ssl_conf_own_cert", ret);
  }
#if defined(MBEDTLS_SSL_MAX_FRAGMENT_LENGTH)
  if (o->mfl_code) {
    ret = mbedtls_ssl_conf_max_frag_len(conf, (unsigned char)o->mfl_code);
    if (ret != 0) return mt_fail(err, "mbedtls_ssl_conf_max_frag_len", ret);
  }
#endif
  return configure_tickets(ctx, err);
}

static void ctx_free(void *p) {
  mt_ctx *ctx = p;
  if (ctx == NULL) return;
  mbedtls_ssl_config_free(&ctx->conf);
#if defined(MBEDTLS_SSL_TICKET_C)
  mbedtls_ssl_ticket_free(&ctx->ticket);
#endif
  mbedtls_x509_crt_free(&ctx->ca);
  mbedtls_x509_crt_free(&ctx->own_chain);
  mbedtls_pk_free(&ctx->own_key);
  mbedtls_ctr_drbg_free(&ctx->drbg);
  mbedtls_entropy_free(&ctx->entropy);
  free(ctx);
}

/* A connection's record buffers are allocated at its setup and kept for its life; a build
 * with MBEDTLS_SSL_VARIABLE_BUFFER_LENGTH resizes them after the handshake to the
 * negotiated maximum fragment length, which is a build option, not this switch. */
static tb_status check_buffer_release(const tb_config *cfg, char *err) {
  if (!cfg->release_buffers) return TB_OK;
  return tb_fail(err, TB_UNSUPPORTED,
                 "mbedTLS keeps a connection's record buffers for its life; the build option "
                 "MBEDTLS_SSL_VARIABLE_BUFFER_LENGTH (feature variable-buffers) shrinks them "
                 "to a negotiated max_fragment_length");
}

static mt_ctx *ctx_alloc(const tb_config *cfg) {
  mt_ctx *ctx = calloc(1, sizeof(*ctx));
  if (ctx == NULL) return NULL;
  ctx->role = cfg->role;
  ctx->tls = cfg->tls_version;
  ctx->resumption = cfg->resumption;
  ctx->expect_hrr = cfg->role == TB_CLIENT && cfg->key_share != NULL;
  ctx->record_size = cfg->record_size;
  ctx->verify = cfg->role == TB_CLIENT ? cfg->auth != TB_AUTH_NONE : cfg->auth == TB_AUTH_MUTUAL;
  snprintf(ctx->server_name, sizeof(ctx->server_name), "%s",
           cfg->server_name ? cfg->server_name : "");
  mbedtls_ssl_config_init(&ctx->conf);
#if defined(MBEDTLS_SSL_TICKET_C)
  mbedtls_ssl_ticket_init(&ctx->ticket);
#endif
  mbedtls_x509_crt_init(&ctx->ca);
  mbedtls_x509_crt_init(&ctx->own_chain);
  mbedtls_pk_init(&ctx->own_key);
  mbedtls_ctr_drbg_init(&ctx->drbg);
  mbedtls_entropy_init(&ctx->entropy);
  return ctx;
}

static tb_status ctx_new(const tb_config *cfg, void **out, char *err) {
  mt_offer offer = {0};
  *out = NULL;
  mt_ctx *ctx = ctx_alloc(cfg);
  if (ctx == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  tb_status st = check_version(cfg, err);
  if (st == TB_OK) st = check_buffer_release(cfg, err);
  if (st == TB_OK) st = choose_suite(cfg, ctx, &offer, err);
  if (st == TB_OK) st = choose_group(cfg, ctx, &offer, err);
  if (st == TB_OK) st = choose_sigalg(cfg, ctx, &offer, err);
  if (st == TB_OK) st = choose_record_size(cfg, &offer, err);
  if (st == TB_OK) st = choose_psk(cfg, ctx, err);
  if (st == TB_OK) {
    int ret = seed_drbg(ctx);
    if (ret != 0) st = mt_fail(err, "mbedtls_ctr_drbg_seed", ret);
  }
  if (st == TB_OK) st = load_credentials(cfg, ctx, err);
  if (st == TB_OK) st = configure(ctx, &offer, cfg, err);
  if (st != TB_OK) {
    ctx_free(ctx);
    return st;
  }
  *out = ctx;
  return TB_OK;
}

/* ------------------------------------------------------------------------- connections */

static tb_status conn_close(void *p, char *err) {
  mt_conn *c = p;
  int ret = mbedtls_ssl_close_notify(&c->ssl);
  if (ret != 0) return tb_fail(err, TB_FAILED, "mbedtls_ssl_close_notify: -0x%04x", -ret);
  return TB_OK;
}

static void conn_free(void *p) {
  mt_conn *c = p;
  if (c == NULL) return;
  mbedtls_ssl_free(&c->ssl);
  tb_wire_free(c->wire); /* clears the secrets */
  free(c);
}

static tb_status conn_new(void *ctx_p, const tb_transport *transport, void *session, void **out,
                          char *err) {
  if (transport->bio) {
    return tb_fail(err, TB_UNSUPPORTED,
                   "mbedTLS has no BIO layer: its send/recv callbacks are the only path");
  }
  mt_ctx *ctx = ctx_p;
  *out = NULL;
  mt_conn *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->ctx = ctx;
  c->io = *transport;
  c->net.fd = transport->fd;
  c->wire = tb_wire_new();
  if (c->wire == NULL) {
    free(c);
    return tb_fail(err, TB_FAILED, "out of memory (read-back)");
  }
  c->observing = 1;
  mbedtls_ssl_init(&c->ssl);
  int ret = mbedtls_ssl_setup(&c->ssl, &ctx->conf);
  if (ret == 0 && ctx->role == TB_CLIENT && ctx->server_name[0] != '\0') {
    ret = mbedtls_ssl_set_hostname(&c->ssl, ctx->server_name); /* SNI and the verified name */
  }
  if (ret == 0 && session != NULL) ret = mbedtls_ssl_set_session(&c->ssl, session);
  if (ret != 0) {
    conn_free(c);
    return mt_fail(err, "connection set-up", ret);
  }
#if MT_TLS13
#if MT_TLS13
  if (ctx->tls == 13) mbedtls_ssl_set_export_keys_cb(&c->ssl, export_keys, tb_wire_keys(c->wire));
#endif
#endif
  mbedtls_ssl_set_bio(&c->ssl, c, bio_send, bio_recv, NULL);
  *out = c;
  return TB_OK;
}

/* The same test as mbedtls_ssl_handshake()'s loop. Not mbedtls_ssl_is_handshake_over(),
 * which is true in the TLS 1.3 NewSessionTicket states too: a server stopped there would
 * send its ticket inside the first write, and a client would not finish reading one. */
static int handshake_over(mt_conn *c) {
  return c->ssl.MT_PRIV(state) == MBEDTLS_SSL_HANDSHAKE_OVER;
}

static tb_status handshake_failure(mt_conn *c, int ret, char *err) {
  char text[128];
  mt_strerror(ret, text, sizeof(text));
#if !defined(MBEDTLS_X509_REMOVE_INFO)
  uint32_t flags = mbedtls_ssl_get_verify_result(&c->ssl);
  if (c->ctx->verify && flags != 0 && flags != UINT32_MAX) {
    char why[160];
    mbedtls_x509_crt_verify_info(why, sizeof(why), "", flags);
    for (char *nl = strchr(why, '\n'); nl != NULL; nl = strchr(nl, '\n')) *nl = ' ';
    /* A chain that is fine but for the library's default policy (RSA under 2048 bits,
     * SHA-1, a curve outside the profile) is a limit of this library, not a failed run. */
    uint32_t policy =
        MBEDTLS_X509_BADCERT_BAD_KEY | MBEDTLS_X509_BADCERT_BAD_MD | MBEDTLS_X509_BADCERT_BAD_PK;
    tb_status st = (flags & ~policy) == 0 ? TB_UNSUPPORTED : TB_FAILED;
    return tb_fail(err, st, "handshake: %s (-0x%04x); peer certificate: %s%s", text, (unsigned)-ret,
                   why, st == TB_UNSUPPORTED ? " (mbedTLS's default X.509 profile)" : "");
  }
#endif
  return tb_fail(err, TB_FAILED, "handshake: %s (-0x%04x)", text, (unsigned)-ret);
}

/* Step by step rather than mbedtls_ssl_handshake(), which is the same loop, so that the
 * NewSessionTicket states are told apart (handshake_over). */
static tb_status handshake(void *conn, char *err) {
  mt_conn *c = conn;
  while (!handshake_over(c)) {
    int ret = mbedtls_ssl_handshake_step(&c->ssl);
    if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) return TB_WANT_IO;
    if (ret != 0) return handshake_failure(c, ret, err);
  }
  c->observing = 0;
  return TB_OK;
}

static tb_status write_data(void *conn, const unsigned char *buf, size_t len, size_t *done,
                            char *err) {
  mt_conn *c = conn;
  *done = 0;
  int ret = mbedtls_ssl_write(&c->ssl, buf, len); /* at most one record's worth */
  if (ret >= 0) {
    *done = (size_t)ret;
    return TB_OK;
  }
  if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) return TB_WANT_IO;
  return mt_fail(err, "mbedtls_ssl_write", ret);
}

/* A TLS 1.3 NewSessionTicket takes extra calls: mbedtls_ssl_read() first returns WANT_READ
 * with the context back in a handshake state, the next call parses the ticket and returns
 * RECEIVED_NEW_SESSION_TICKET (the ticket is then in the context for session_get()), and
 * only the call after that returns the application data behind it. */
#define MT_MAX_READ_CALLS 8

static tb_status read_data(void *conn, unsigned char *buf, size_t len, size_t *done, char *err) {
  mt_conn *c = conn;
  *done = 0;
  for (int call = 0; call < MT_MAX_READ_CALLS; call++) {
    int ret = mbedtls_ssl_read(&c->ssl, buf, len);
    if (ret > 0) {
      *done = (size_t)ret;
      return TB_OK;
    }
    if (ret == 0 || ret == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY) return TB_CLOSED;
    if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) {
      if (handshake_over(c)) return TB_WANT_IO;
      continue; /* a post-handshake message is pending in the context */
    }
#if defined(MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
    if (ret == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET) continue;
#endif
    return mt_fail(err, "mbedtls_ssl_read", ret);
  }
  return TB_WANT_IO;
}

/* ------------------------------------------------------------------------- read-back */

static tb_status negotiated(void *conn, tb_negotiated *out, char *err) {
  mt_conn *c = conn;
  memset(out, 0, sizeof(*out));
  if (!handshake_over(c)) return tb_fail(err, TB_FAILED, "the handshake is not complete");
#if MT_V3
  mbedtls_ssl_protocol_version v = mbedtls_ssl_get_version_number(&c->ssl);
  const char *version = v == MBEDTLS_SSL_VERSION_TLS1_2   ? "1.2"
                        : v == MBEDTLS_SSL_VERSION_TLS1_3 ? "1.3"
                                                          : mbedtls_ssl_get_version(&c->ssl);
  suite_name(mbedtls_ssl_get_ciphersuite_id_from_ssl(&c->ssl), out->suite);
#else
  const char *version = mbedtls_ssl_get_version(&c->ssl);
  if (strcmp(version, "TLSv1.2") == 0) version = "1.2";
  suite_name(mbedtls_ssl_get_ciphersuite_id(mbedtls_ssl_get_ciphersuite(&c->ssl)), out->suite);
#endif
  snprintf(out->version, sizeof(out->version), "%s", version);
  /* The wire, once (after the clock stopped): the server's messages and the client's. */
  mt_readback *rb = tb_wire_extra(c->wire);
  if (!rb->parsed) {
    if (tb_wire_overflow(c->wire)) {
      return tb_fail(err, TB_FAILED,
                     "the handshake passed more than the %d bytes a direction "
                     "the read-back keeps",
                     TB_WIRE_BYTES);
    }
    int client = c->ctx->role == TB_CLIENT, tls13 = strcmp(version, "1.3") == 0;
    tb_wire_dir server_dir = client ? TB_WIRE_IN : TB_WIRE_OUT;
    tb_wire_plain_messages(c->wire, server_dir, tls13, observe_message, &rb->seen);
    tb_wire_plain_messages(c->wire, client ? TB_WIRE_OUT : TB_WIRE_IN, tls13,
                           observe_client_message, &rb->seen);
#if MT_TLS13
    if (tls13 && rb->seen.tls13) {
      read_protected(c, rb, 1);
      read_protected(c, rb, 0);
    }
#endif
    tb_wire_release(c->wire);
    rb->parsed = 1;
  }
  const mt_seen *s = &rb->seen;
  if (s->group != 0) {
    group_name(s->group, out->group);
  } else if (s->dh_bits != 0) {
    snprintf(out->group, sizeof(out->group), "dhe%d-not-rfc7919", s->dh_bits);
  }
  if (s->have_sigalg) sigalg_name(s->sigalg, out->sigalg);
  /* A TLS 1.3 pre_shared_key is a resumption unless the context holds an external key
   * (the core never resumes a TLS 1.3 PSK run, so that no ticket is offered beside it). */
  out->resumed =
      s->tls13 ? s->psk && c->ctx->psk == TB_PSK_NONE : s->server_hello && !s->hello_done;
  if (!out->resumed) out->psk = psk_seen(c, s, out->suite);
  if (s->have_client_sigalg && !out->resumed) sigalg_name(s->client_sigalg, out->client_sigalg);
  /* verify_result is 0 only after a chain really verified (verify-none sets SKIP_VERIFY). */
  out->peer_verified = c->ctx->verify && mbedtls_ssl_get_verify_result(&c->ssl) == 0;
  if (!s->server_hello) return tb_fail(err, TB_FAILED, "no ServerHello was observed");
  if (c->ctx->role == TB_CLIENT && s->tls13 && !out->resumed && s->hrr != c->ctx->expect_hrr) {
    return tb_fail(err, TB_FAILED, "the server %s a HelloRetryRequest",
                   c->ctx->expect_hrr ? "did not send" : "sent");
  }
  /* max_fragment_length is an offer the peer may ignore: check it took effect. */
  int max_out = mbedtls_ssl_get_max_out_record_payload(&c->ssl);
  if (c->ctx->record_size != 0 && (max_out < 0 || (size_t)max_out > c->ctx->record_size)) {
    return tb_fail(err, TB_FAILED, "records of up to %d bytes, asked for %zu", max_out,
                   c->ctx->record_size);
  }
  return TB_OK;
}

static tb_status session_get(void *conn, void **out, char *err) {
  mt_conn *c = conn;
  *out = NULL;
  if (c->ctx->role != TB_CLIENT) return tb_fail(err, TB_FAILED, "sessions are taken on clients");
  mbedtls_ssl_session *session = calloc(1, sizeof(*session));
  if (session == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  mbedtls_ssl_session_init(session);
  int ret = mbedtls_ssl_get_session(&c->ssl, session); /* a copy, ticket included */
  if (ret != 0) {
    mbedtls_ssl_session_free(session);
    free(session);
    return mt_fail(err, "mbedtls_ssl_get_session", ret);
  }
  *out = session;
  return TB_OK;
}

static void session_free(void *p) {
  if (p == NULL) return;
  mbedtls_ssl_session_free(p);
  free(p);
}

/* The library's TLS, as the scenarios use it. */
static const tb_tls_class kTls = {
    .ctx_new = ctx_new,
    .ctx_free = ctx_free,
    .conn_new = conn_new,
    .conn_free = conn_free,
    .handshake = handshake,
    .write = write_data,
    .read = read_data,
    .close = conn_close,
    .negotiated = negotiated,
    .session_get = session_get,
    .session_free = session_free,
};

/* ------------------------------------------------------------------------- AEAD */

/* Each AEAD where the build has it: a user's config may leave either out. */
#if defined(MBEDTLS_GCM_C)
#define MT_HAVE_GCM 1
#else
#define MT_HAVE_GCM 0
#endif
#if defined(MBEDTLS_CHACHAPOLY_C)
#define MT_HAVE_CHACHAPOLY 1
#else
#define MT_HAVE_CHACHAPOLY 0
#endif

typedef struct mt_aead {
  tb_aead_alg alg;
  union {
#if MT_HAVE_GCM
    mbedtls_gcm_context gcm;
#endif
#if MT_HAVE_CHACHAPOLY
    mbedtls_chachapoly_context chachapoly;
#endif
    int none;
  } u;
} mt_aead;

static void aead_free(void *p) {
  mt_aead *a = p;
  if (a == NULL) return;
#if MT_HAVE_CHACHAPOLY
  if (a->alg == TB_CHACHA20_POLY1305) mbedtls_chachapoly_free(&a->u.chachapoly);
#endif
#if MT_HAVE_GCM
  if (a->alg != TB_CHACHA20_POLY1305) mbedtls_gcm_free(&a->u.gcm);
#endif
  free(a);
}

static tb_status aead_new(tb_aead_alg alg, const unsigned char *key, size_t key_len, void **out,
                          char *err) {
  *out = NULL;
  size_t want = alg == TB_AES_128_GCM ? 16 : 32;
  if (alg != TB_AES_128_GCM && alg != TB_AES_256_GCM && alg != TB_CHACHA20_POLY1305) {
    return tb_fail(err, TB_UNSUPPORTED, "AEAD %d", (int)alg);
  }
  if ((alg == TB_CHACHA20_POLY1305 && !MT_HAVE_CHACHAPOLY) ||
      (alg != TB_CHACHA20_POLY1305 && !MT_HAVE_GCM)) {
    return tb_fail(err, TB_UNSUPPORTED, "this build has no %s",
                   alg == TB_CHACHA20_POLY1305 ? "MBEDTLS_CHACHAPOLY_C" : "MBEDTLS_GCM_C");
  }
  if (key_len != want) return tb_fail(err, TB_FAILED, "key of %zu bytes, need %zu", key_len, want);
  mt_aead *a = calloc(1, sizeof(*a));
  if (a == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  a->alg = alg;
  int ret = 0;
#if MT_HAVE_CHACHAPOLY
  if (alg == TB_CHACHA20_POLY1305) {
    mbedtls_chachapoly_init(&a->u.chachapoly);
    ret = mbedtls_chachapoly_setkey(&a->u.chachapoly, key);
  }
#endif
#if MT_HAVE_GCM
  if (alg != TB_CHACHA20_POLY1305) {
    mbedtls_gcm_init(&a->u.gcm);
    ret = mbedtls_gcm_setkey(&a->u.gcm, MBEDTLS_CIPHER_ID_AES, key, (unsigned)key_len * 8);
  }
#endif
  if (ret != 0) {
    aead_free(a);
    return mt_fail(err, "AEAD key set-up", ret);
  }
  *out = a;
  return TB_OK;
}

static tb_status aead_seal(void *p, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                           const unsigned char *ad, size_t ad_len, const unsigned char *in,
                           size_t len, unsigned char *out, char *err) {
  mt_aead *a = p;
  int ret = MBEDTLS_ERR_ERROR_GENERIC_ERROR; /* aead_new refuses what the build lacks */
#if MT_HAVE_CHACHAPOLY
  if (a->alg == TB_CHACHA20_POLY1305) {
    ret = mbedtls_chachapoly_encrypt_and_tag(&a->u.chachapoly, len, nonce, ad, ad_len, in, out,
                                             out + len);
  }
#endif
#if MT_HAVE_GCM
  if (a->alg != TB_CHACHA20_POLY1305) {
    ret = mbedtls_gcm_crypt_and_tag(&a->u.gcm, MBEDTLS_GCM_ENCRYPT, len, nonce, TB_AEAD_NONCE_LEN,
                                    ad, ad_len, in, out, TB_AEAD_TAG_LEN, out + len);
  }
#endif
  return ret == 0 ? TB_OK : mt_fail(err, "AEAD seal", ret);
}

static tb_status aead_open(void *p, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                           const unsigned char *ad, size_t ad_len, const unsigned char *in,
                           size_t len, unsigned char *out, char *err) {
  mt_aead *a = p;
  int ret = MBEDTLS_ERR_ERROR_GENERIC_ERROR;
#if MT_HAVE_CHACHAPOLY
  if (a->alg == TB_CHACHA20_POLY1305) {
    ret = mbedtls_chachapoly_auth_decrypt(&a->u.chachapoly, len, nonce, ad, ad_len, in + len, in,
                                          out);
  }
#endif
#if MT_HAVE_GCM
  if (a->alg != TB_CHACHA20_POLY1305) {
    ret = mbedtls_gcm_auth_decrypt(&a->u.gcm, len, nonce, TB_AEAD_NONCE_LEN, ad, ad_len, in + len,
                                   TB_AEAD_TAG_LEN, in, out);
  }
#endif
  return ret == 0 ? TB_OK : mt_fail(err, "AEAD open", ret);
}

/* The library's own AEAD API, as the aead scenario uses it. */
static const tb_aead_class kAead = {
    .create = aead_new,
    .seal = aead_seal,
    .open = aead_open,
    .free = aead_free,
};

const tb_adapter tb_adapter_impl = {
    .name = "mbedtls",
    .global_init = global_init,
    .global_cleanup = global_cleanup,
    .info = info,
    .derandomize = derandomize,
    .tls = &kTls,
    .aead = &kAead,
};
