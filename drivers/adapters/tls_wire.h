/*
 * Reading what was negotiated off the wire, for the adapters whose library does not say
 * it (mbedTLS: group, signature schemes, resumption, the pre-shared key's mode; rustls:
 * signature schemes; AWS-LC: a side's own signature scheme; OpenSSL: the pre-shared key's
 * mode): one reader of TLS handshake messages and one
 * HKDF-Expand-Label (RFC 8446 7.1), written against no library (tls_wire.c). The adapters
 * keep what is their own: where the bytes come from (records sent, messages received, a
 * message callback) and how a TLS 1.3 record is opened (the library's cipher).
 *
 * Handshake messages are RFC 8446 4 / RFC 5246 7.4: a 4-byte header (type, 24-bit length),
 * then the body; the functions below take the body.
 */
#ifndef TLSBENCH_TLS_WIRE_H
#define TLSBENCH_TLS_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* Record content types and handshake message types. */
enum {
  TB_REC_CHANGE_CIPHER_SPEC = 20,
  TB_REC_HANDSHAKE = 22,
  TB_REC_APPLICATION_DATA = 23,
  TB_HS_CLIENT_HELLO = 1,
  TB_HS_SERVER_HELLO = 2,
  TB_HS_SERVER_KEY_EXCHANGE = 12,
  TB_HS_SERVER_HELLO_DONE = 14,
  TB_HS_CERTIFICATE_VERIFY = 15,
};

static inline uint16_t tb_get16(const unsigned char *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline size_t tb_get24(const unsigned char *p) {
  return (size_t)p[0] << 16 | (size_t)p[1] << 8 | p[2];
}

/* Calls `fn` for every whole handshake message in `buf` (messages are not split across
 * calls: a message that runs past the end is not reported). */
void tb_hs_each_message(const unsigned char *buf, size_t len,
                        void (*fn)(void *arg, unsigned type, const unsigned char *body, size_t len),
                        void *arg);

/* What a ServerHello says. */
typedef struct tb_server_hello {
  int hrr;        /* a HelloRetryRequest (RFC 8446 4.1.3's random) */
  int tls13;      /* supported_versions selects TLS 1.3 */
  int psk;        /* TLS 1.3: the server accepted a pre-shared key (resumption or external) */
  uint16_t suite; /* the cipher suite */
  uint16_t group; /* TLS 1.3: the key share's group; 0: none */
} tb_server_hello;

/* 0 when the body is a whole ServerHello (or a HelloRetryRequest: then only `hrr`). */
int tb_hs_server_hello(const unsigned char *body, size_t len, tb_server_hello *out);

/* What a TLS 1.2 ServerKeyExchange of an (EC)DHE suite says. */
typedef struct tb_key_exchange {
  uint16_t group;            /* ECDHE: the named curve; DHE: 0 (the prime is sent instead) */
  const unsigned char *dh_p; /* DHE: the prime, inside the body */
  size_t dh_p_len;
  uint16_t sigalg; /* the SignatureScheme of its signature */
} tb_key_exchange;

/* 0 when the body is an ECDHE (named curve) or, with `dhe`, a DHE ServerKeyExchange. */
int tb_hs_server_key_exchange(const unsigned char *body, size_t len, int dhe, tb_key_exchange *out);

/* 0 when the body is a TLS 1.2 ECDHE-PSK or, with `dhe`, DHE-PSK ServerKeyExchange (RFC 5489
 * 2, RFC 4279 3): an identity hint, then the (EC)DH parameters, and no signature (sigalg 0). */
int tb_hs_psk_server_key_exchange(const unsigned char *body, size_t len, int dhe,
                                  tb_key_exchange *out);

/* The SignatureScheme a CertificateVerify body starts with (TLS 1.2 and 1.3); 0 when it is
 * too short. */
uint16_t tb_hs_certificate_verify(const unsigned char *body, size_t len);

/* The 32-byte random of a ClientHello body into `out`; 0 when it has one. */
int tb_hs_client_random(const unsigned char *body, size_t len, unsigned char out[32]);

/* HMAC of `data` under `key` with the hash of `hash_len` bytes, from the adapter's library:
 * writes hash_len bytes to `out`, returns 0. */
typedef int (*tb_hmac_fn)(const void *hash, const unsigned char *key, size_t key_len,
                          const unsigned char *data, size_t len, unsigned char *out);

/* HKDF-Expand-Label(secret, label, "", out_len) of RFC 8446 7.1, for out_len up to one hash
 * (one HMAC block, which the handshake traffic key and IV are); 0 on success. */
int tb_hkdf_expand_label(tb_hmac_fn hmac, const void *hash, size_t hash_len,
                         const unsigned char *secret, size_t secret_len, const char *label,
                         unsigned char *out, size_t out_len);

#endif /* TLSBENCH_TLS_WIRE_H */
