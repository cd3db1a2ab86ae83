/* Handshake messages, the record reader and HKDF-Expand-Label (tls_wire.h), against no
 * library. */
#include "tls_wire.h"

#include <stdio.h>
#include <string.h>

enum {
  EXT_PRE_SHARED_KEY = 0x0029,
  EXT_SUPPORTED_VERSIONS = 0x002b,
  EXT_KEY_SHARE = 0x0033,
  NAMED_CURVE = 3, /* ECParameters.curve_type of a ServerKeyExchange */
};

/* RFC 8446 4.1.3: a HelloRetryRequest is a ServerHello with this random. */
static const unsigned char hrr_random[32] = {
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c};

void tb_hs_each_message(const unsigned char *buf, size_t len, tb_hs_fn fn, void *arg) {
  for (size_t p = 0; p + 4 <= len;) {
    size_t n = tb_get24(buf + p + 1);
    if (p + 4 + n > len) break;
    fn(arg, buf[p], buf + p + 4, n);
    p += 4 + n;
  }
}

int tb_hs_server_hello(const unsigned char *b, size_t len, tb_server_hello *out) {
  memset(out, 0, sizeof(*out));
  if (len < 35) return -1; /* version, random, session id length */
  if (memcmp(b + 2, hrr_random, 32) == 0) {
    out->hrr = 1;
    return 0;
  }
  size_t p = 35 + b[34]; /* past the session id */
  if (p + 3 > len) return -1;
  out->suite = tb_get16(b + p);
  p += 3; /* suite, compression */
  /* Extensions, when there are any (a TLS 1.2 ServerHello may have none). */
  if (p + 2 > len) return 0;
  size_t end = p + 2 + tb_get16(b + p);
  if (end > len) return 0;
  for (p += 2; p + 4 <= end;) {
    uint16_t type = tb_get16(b + p);
    size_t ext_len = tb_get16(b + p + 2);
    const unsigned char *data = b + p + 4;
    if (p + 4 + ext_len > end) break;
    if (type == EXT_SUPPORTED_VERSIONS && ext_len == 2) out->tls13 = tb_get16(data) == 0x0304;
    if (type == EXT_KEY_SHARE && ext_len >= 2) out->group = tb_get16(data);
    if (type == EXT_PRE_SHARED_KEY) out->psk = 1;
    p += 4 + ext_len;
  }
  return 0;
}

/* A vector with a `prefix`-byte length at b[*p]: its bytes, and *p past it; -1 when it runs
 * past the end. */
static int vector(const unsigned char *b, size_t len, size_t *p, size_t prefix,
                  const unsigned char **data, size_t *data_len) {
  if (*p + prefix > len) return -1;
  size_t n = prefix == 1 ? b[*p] : tb_get16(b + *p);
  if (*p + prefix + n > len) return -1;
  *data = b + *p + prefix;
  *data_len = n;
  *p += prefix + n;
  return 0;
}

/* The (EC)DH parameters of a ServerKeyExchange from b[*p]; *p past them. */
static int dh_params(const unsigned char *b, size_t len, size_t *p, int dhe, tb_key_exchange *out) {
  const unsigned char *data;
  size_t n;
  if (!dhe) {
    /* ECParameters (curve type, named curve), the public point<1..255> */
    if (*p + 4 > len || b[*p] != NAMED_CURVE) return -1;
    out->group = tb_get16(b + *p + 1);
    *p += 3;
    return vector(b, len, p, 1, &data, &n);
  }
  /* dh_p<1..2^16-1>, dh_g, dh_Ys */
  if (vector(b, len, p, 2, &out->dh_p, &out->dh_p_len) != 0 ||
      vector(b, len, p, 2, &data, &n) != 0 || vector(b, len, p, 2, &data, &n) != 0)
    return -1;
  return 0;
}

int tb_hs_server_key_exchange(const unsigned char *b, size_t len, int dhe, tb_key_exchange *out) {
  memset(out, 0, sizeof(*out));
  size_t p = 0;
  if (dh_params(b, len, &p, dhe, out) != 0) return -1;
  /* Then the signature: its scheme, then the signature itself (not needed here). */
  if (p + 2 > len) return -1;
  out->sigalg = tb_get16(b + p);
  return 0;
}

int tb_hs_psk_server_key_exchange(const unsigned char *b, size_t len, int dhe,
                                  tb_key_exchange *out) {
  memset(out, 0, sizeof(*out));
  const unsigned char *hint;
  size_t hint_len, p = 0;
  if (vector(b, len, &p, 2, &hint, &hint_len) != 0) return -1;
  return dh_params(b, len, &p, dhe, out);
}

uint16_t tb_hs_certificate_verify(const unsigned char *b, size_t len) {
  return len >= 2 ? tb_get16(b) : 0;
}

int tb_hs_client_random(const unsigned char *b, size_t len, unsigned char out[32]) {
  if (len < 2 + 32) return -1; /* legacy_version, random */
  memcpy(out, b + 2, 32);
  return 0;
}

int tb_hkdf_expand_label(tb_hmac_fn hmac, const void *hash, size_t hash_len,
                         const unsigned char *secret, size_t secret_len, const char *label,
                         unsigned char *out, size_t out_len) {
  /* HkdfLabel: uint16 length, opaque label<7..255> = "tls13 " + label, opaque context<0..255>
   * (empty); then HKDF-Expand's counter of the first (and only) block. */
  unsigned char info[2 + 1 + 255 + 1 + 1], block[64];
  size_t label_len = strlen(label), n = 0;
  if (out_len > hash_len || hash_len > sizeof(block) || 6 + label_len > 255) return -1;
  info[n++] = (unsigned char)(out_len >> 8);
  info[n++] = (unsigned char)out_len;
  info[n++] = (unsigned char)(6 + label_len);
  memcpy(info + n, "tls13 ", 6);
  memcpy(info + n + 6, label, label_len);
  n += 6 + label_len;
  info[n++] = 0; /* context: empty */
  info[n++] = 1; /* HKDF-Expand's block counter */
  if (hmac(hash, secret, secret_len, info, n, block) != 0) return -1;
  memcpy(out, block, out_len);
  for (volatile unsigned char *v = block; v < block + sizeof(block); v++) *v = 0; /* kept */
  return 0;
}

/* ------------------------------------------------------------------------- the record reader */

/* The bytes of both directions and the room the reader reassembles messages in: the large
 * part, reused from one connection to the next (a free list per thread). */
typedef struct wire_bytes {
  struct wire_bytes *next; /* in the free list */
  _Alignas(16) unsigned char keys[TB_WIRE_KEYS];
  unsigned char dir[2][TB_WIRE_BYTES];
  unsigned char scratch[TB_WIRE_BYTES];
} wire_bytes;

struct tb_wire {
  wire_bytes *bytes; /* NULL once released */
  size_t len[2];
  int overflow;
  tb_wire *next; /* in the free list */
  _Alignas(16) unsigned char extra[TB_WIRE_EXTRA];
};

/* What a thread keeps for its next connections: a handful covers both sides of the
 * one-process scenarios and a few connections in flight; more are freed. */
#define WIRE_POOL 8
static _Thread_local wire_bytes *free_bytes;
static _Thread_local tb_wire *free_wires;
static _Thread_local unsigned n_free_bytes, n_free_wires;

tb_wire *tb_wire_new(void) {
  tb_wire *w = free_wires;
  if (w != NULL) {
    free_wires = w->next;
    n_free_wires--;
  } else {
    w = tb_readback_alloc(sizeof(*w));
    if (w == NULL) return NULL;
  }
  wire_bytes *b = free_bytes;
  if (b != NULL) {
    free_bytes = b->next;
    n_free_bytes--;
  } else {
    b = tb_readback_alloc(sizeof(*b));
  }
  if (b == NULL) {
    tb_readback_free(w);
    return NULL;
  }
  memset(w, 0, sizeof(*w));
  memset(b->keys, 0, sizeof(b->keys));
  w->bytes = b;
  return w;
}

void tb_wire_release(tb_wire *w) {
  if (w == NULL || w->bytes == NULL) return;
  for (volatile unsigned char *v = w->bytes->keys; v < w->bytes->keys + TB_WIRE_KEYS; v++) *v = 0;
  if (n_free_bytes < WIRE_POOL) {
    w->bytes->next = free_bytes;
    free_bytes = w->bytes;
    n_free_bytes++;
  } else {
    tb_readback_free(w->bytes);
  }
  w->bytes = NULL;
}

void tb_wire_free(tb_wire *w) {
  if (w == NULL) return;
  tb_wire_release(w);
  if (n_free_wires < WIRE_POOL) {
    w->next = free_wires;
    free_wires = w;
    n_free_wires++;
  } else {
    tb_readback_free(w);
  }
}

void *tb_wire_extra(tb_wire *w) { return w->extra; }

void *tb_wire_keys(tb_wire *w) { return w->bytes != NULL ? w->bytes->keys : NULL; }

void tb_wire_keep(tb_wire *w, tb_wire_dir dir, const unsigned char *p, size_t n) {
  if (w == NULL || w->bytes == NULL || n == 0) return;
  size_t room = TB_WIRE_BYTES - w->len[dir];
  if (n > room) {
    w->overflow = 1;
    n = room;
  }
  memcpy(w->bytes->dir[dir] + w->len[dir], p, n);
  w->len[dir] += n;
}

int tb_wire_overflow(const tb_wire *w) { return w->overflow; }

/* Calls `fn` for every whole record of a direction: type, header, body (a record cut off at
 * the end of what was kept is not reported); stops when `fn` returns nonzero. */
static void each_record(const tb_wire *w, tb_wire_dir dir,
                        int (*fn)(void *arg, const unsigned char *header, const unsigned char *body,
                                  size_t len),
                        void *arg) {
  const unsigned char *b = w->bytes->dir[dir];
  size_t len = w->len[dir];
  for (size_t p = 0; p + 5 <= len;) {
    size_t n = tb_get16(b + p + 3);
    if (p + 5 + n > len || fn(arg, b + p, b + p + 5, n) != 0) break;
    p += 5 + n;
  }
}

typedef struct plain_walk {
  unsigned char *out; /* the handshake bytes so far */
  size_t len;
  int tls13;
} plain_walk;

static int plain_record(void *arg, const unsigned char *header, const unsigned char *body,
                        size_t len) {
  plain_walk *walk = arg;
  if (header[0] == TB_REC_CHANGE_CIPHER_SPEC && !walk->tls13) return 1; /* then encrypted */
  if (header[0] != TB_REC_HANDSHAKE) return 0;
  if (len > TB_WIRE_BYTES - walk->len) return 1;
  memcpy(walk->out + walk->len, body, len);
  walk->len += len;
  return 0;
}

void tb_wire_plain_messages(tb_wire *w, tb_wire_dir dir, int tls13, tb_hs_fn fn, void *arg) {
  if (w == NULL || w->bytes == NULL) return;
  plain_walk walk = {w->bytes->scratch, 0, tls13};
  each_record(w, dir, plain_record, &walk);
  tb_hs_each_message(walk.out, walk.len, fn, arg);
}

typedef struct protected_walk {
  unsigned char *out;
  size_t len;
  uint64_t seq;
  tb_record_open_fn open;
  void *open_arg;
} protected_walk;

static int protected_record(void *arg, const unsigned char *header, const unsigned char *body,
                            size_t len) {
  protected_walk *walk = arg;
  if (header[0] != TB_REC_APPLICATION_DATA) return 0; /* plaintext, or a compatibility CCS */
  if (len > TB_WIRE_BYTES - walk->len) return 1;
  unsigned char *plain = walk->out + walk->len;
  size_t n = walk->open(walk->open_arg, walk->seq++, header, body, len, plain);
  /* RFC 8446 5.4: content, then the content type, then zeros. */
  while (n > 0 && plain[n - 1] == 0) n--;
  if (n == 0 || plain[n - 1] != TB_REC_HANDSHAKE) return 1;
  walk->len += n - 1;
  return 0;
}

void tb_wire_protected_messages(tb_wire *w, tb_wire_dir dir, tb_record_open_fn open, void *open_arg,
                                tb_hs_fn fn, void *arg) {
  if (w == NULL || w->bytes == NULL) return;
  protected_walk walk = {w->bytes->scratch, 0, 0, open, open_arg};
  each_record(w, dir, protected_record, &walk);
  tb_hs_each_message(walk.out, walk.len, fn, arg);
}

/* ------------------------------------------------------------------------- certificates */

static int base64_value(int c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* DER of an OID arc, tag and length first: 2.16.840.1.101.3.4.3 (NIST's signature algorithms:
 * SLH-DSA's are its arcs 20 to 31) and 1.2.840.10045.4.3 (ecdsa-with-SHA224 ... SHA512: 1 to
 * 4). */
static const unsigned char kNistSigArc[] = {0x06, 0x09, 0x60, 0x86, 0x48,
                                            0x01, 0x65, 0x03, 0x04, 0x03};
static const unsigned char kEcdsaSigArc[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03};

/* Whether the DER of a PEM file holds an OID of `arc` whose last number is lo..hi. Static
 * storage (the largest set's chain is about 71 kB of PEM): nothing is charged to a side's
 * heap, and the adapters ask on a failure path only. */
static int pem_names_oid(const char *path, const unsigned char *arc, size_t arc_len, unsigned lo,
                         unsigned hi) {
  static unsigned char pem[128 * 1024], der[96 * 1024];
  FILE *f = fopen(path, "rb");
  if (f == NULL) return 0;
  size_t len = fread(pem, 1, sizeof(pem) - 1, f);
  fclose(f);
  pem[len] = '\0';
  /* The base64 of every PEM block, decoded as one stream of DER bytes (the header and footer
   * lines are skipped: their dashes and words are not all base64). */
  size_t n = 0;
  unsigned acc = 0;
  int bits = 0, in_block = 0;
  for (const char *line = (const char *)pem; *line != '\0' && n < sizeof(der);) {
    const char *end = strchr(line, '\n');
    size_t line_len = end != NULL ? (size_t)(end - line) : strlen(line);
    if (strncmp(line, "-----BEGIN", 10) == 0) {
      in_block = 1, bits = 0, acc = 0;
    } else if (strncmp(line, "-----END", 8) == 0) {
      in_block = 0;
    } else {
      for (size_t i = 0; in_block && i < line_len && n < sizeof(der); i++) {
        int v = base64_value((unsigned char)line[i]);
        if (v < 0) continue;
        acc = acc << 6 | (unsigned)v;
        bits += 6;
        if (bits >= 8) bits -= 8, der[n++] = (unsigned char)(acc >> bits);
      }
    }
    line += line_len + (end != NULL);
  }
  for (size_t i = 0; i + arc_len < n; i++) {
    unsigned last = der[i + arc_len];
    if (memcmp(der + i, arc, arc_len) == 0 && last >= lo && last <= hi) return 1;
  }
  return 0;
}

int tb_pem_names_slh_dsa(const char *path) {
  return pem_names_oid(path, kNistSigArc, sizeof(kNistSigArc), 20, 31);
}

int tb_pem_names_ecdsa_signature(const char *path) {
  return pem_names_oid(path, kEcdsaSigArc, sizeof(kEcdsaSigArc), 1, 4);
}
