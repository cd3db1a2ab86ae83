/*
 * Reading what was negotiated off the wire, for the adapters whose library does not say
 * it (mbedTLS: group, signature schemes, resumption, the pre-shared key's mode; rustls:
 * signature schemes; AWS-LC: a side's own signature scheme; OpenSSL: the pre-shared key's
 * mode): one reader of TLS handshake messages, one record reader over the bytes a
 * connection sent and received (tb_wire), and one HKDF-Expand-Label (RFC 8446 7.1), written
 * against no library (tls_wire.c). The adapters keep what is their own: where the bytes come
 * from (their I/O callbacks, a message callback) and how a TLS 1.3 record is opened (the
 * library's cipher). And one question about a certificate file (tb_pem_names_slh_dsa).
 *
 * Handshake messages are RFC 8446 4 / RFC 5246 7.4: a 4-byte header (type, 24-bit length),
 * then the body; the functions below take the body.
 */
#ifndef TLSBENCH_TLS_WIRE_H
#define TLSBENCH_TLS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "tlsbench/driver.h"

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

/* One handshake message: its type and body. */
typedef void (*tb_hs_fn)(void *arg, unsigned type, const unsigned char *body, size_t len);

/* Calls `fn` for every whole handshake message in `buf` (messages are not split across
 * calls: a message that runs past the end is not reported). */
void tb_hs_each_message(const unsigned char *buf, size_t len, tb_hs_fn fn, void *arg);

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

/* ------------------------------------------------------------------------- the record reader */

/* One connection's handshake as it passed, both directions, for the adapters that read what
 * was negotiated off the wire (mbedTLS, rustls): the read-back rule of driver.h made one
 * object. During the handshake (timed calls) the adapter's I/O callbacks only copy the bytes
 * in (tb_wire_keep: a memcpy, nothing parsed); negotiated() parses them, after the clock
 * stopped (tb_wire_plain_messages, tb_wire_protected_messages), and then gives the bytes back
 * (tb_wire_release), keeping only what it found (tb_wire_extra). Every byte of it comes from
 * tb_readback_alloc, so none is counted in a side's heap; the byte buffers are reused by the
 * next connection of the thread, so that a connection costs no allocation of them once
 * warm, and a connection that has been read back holds none (the connections scenario's
 * resident memory per connection does not grow by them). */
/* Kept of each direction; more is an overflow. A chain of 3 RSA-8192 certificates and a
 * CertificateVerify take about 9 KiB. */
#define TB_WIRE_BYTES (32 * 1024)
#define TB_WIRE_EXTRA 64 /* what the adapter found, kept for the connection's life */
#define TB_WIRE_KEYS 256 /* secrets that open the records, until tb_wire_release */

typedef enum tb_wire_dir { TB_WIRE_IN = 0, TB_WIRE_OUT = 1 } tb_wire_dir;
typedef struct tb_wire tb_wire;

/* A connection's reader (NULL: out of memory). */
tb_wire *tb_wire_new(void);
void tb_wire_free(tb_wire *w); /* NULL: nothing */
/* TB_WIRE_EXTRA zeroed bytes for what the adapter found: all a connection holds once read. */
void *tb_wire_extra(tb_wire *w);
/* TB_WIRE_KEYS zeroed bytes for the traffic secrets the adapter is handed during the
 * handshake (beside the bytes, so that a connection does not hold them once read); cleared
 * by tb_wire_release; NULL after it. */
void *tb_wire_keys(tb_wire *w);

/* Called from the adapter's I/O path with the bytes really sent (TB_WIRE_OUT) or received
 * (TB_WIRE_IN), in order. A copy only: this runs inside the timed calls. */
void tb_wire_keep(tb_wire *w, tb_wire_dir dir, const unsigned char *p, size_t n);

/* 1 when bytes of the handshake did not fit (TB_WIRE_BYTES a direction): the read-back then
 * fails with that reason rather than with a missing field. */
int tb_wire_overflow(const tb_wire *w);

/* Gives the bytes and the keys back (after they were read); the extra bytes stay. */
void tb_wire_release(tb_wire *w);

/* Every whole plaintext handshake message `dir` carried, in order, reassembled across
 * records: TLS 1.3 (`tls13`): every handshake record (ServerHello, HelloRetryRequest and
 * ClientHello; a compatibility ChangeCipherSpec changes nothing); TLS 1.2: the handshake
 * records before the direction's ChangeCipherSpec (after it they are encrypted). */
void tb_wire_plain_messages(tb_wire *w, tb_wire_dir dir, int tls13, tb_hs_fn fn, void *arg);

/* Opens one TLS 1.3 protected record (the adapter's cipher, the direction's handshake traffic
 * key): `seq` is its sequence number under that key, `header` the record header (the AEAD's
 * additional data), `body` the ciphertext and tag. Writes the decrypted inner plaintext
 * (message bytes, content type, zero padding) to `out` (room for `len` bytes) and returns its
 * length; 0 when the record does not open under this key. */
typedef size_t (*tb_record_open_fn)(void *arg, uint64_t seq, const unsigned char header[5],
                                    const unsigned char *body, size_t len, unsigned char *out);

/* TLS 1.3: every handshake message inside `dir`'s protected records, in order, reassembled
 * across records. The first protected record of a direction is under its handshake traffic
 * key, sequence number 0; the walk stops at the first record that does not open or whose
 * inner content is not a handshake message (a record under the next key). */
void tb_wire_protected_messages(tb_wire *w, tb_wire_dir dir, tb_record_open_fn open, void *open_arg,
                                tb_hs_fn fn, void *arg);

/* Whether a PEM file of certificates (a trust anchor, a chain) names SLH-DSA (FIPS 205, the
 * OIDs 2.16.840.1.101.3.4.3.20 to .31: a key or a signature), read without the library: for
 * the adapters whose library has no SLH-DSA and says only that a certificate would not
 * decode or verify (s2n-tls, rustls), so that the run is unsupported with that reason.
 * 0 when the file does not, or cannot be read. */
int tb_pem_names_slh_dsa(const char *path);
/* Whether it holds an ECDSA signature (ecdsa-with-SHA224 ... SHA512): a chain an ECDSA CA
 * signed, e.g. over an ML-DSA leaf. */
int tb_pem_names_ecdsa_signature(const char *path);

#endif /* TLSBENCH_TLS_WIRE_H */
