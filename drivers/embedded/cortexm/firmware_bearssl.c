/*
 * The BearSSL adapter of the Cortex-M firmware image (firmware.h): TLS 1.2 only (BearSSL 0.6
 * has no TLS 1.3 and no PSK suites), one engine context per side, the DER credentials compiled
 * in (certs.h).
 *
 * BearSSL allocates nothing: every context, the X.509 engine and the I/O buffer are the
 * caller's, declared here as static objects of the side, so that they are in the one-role
 * image's .bss and the fit counts them as that side's static RAM (its heap figure is 0).
 * The I/O buffer is one half-duplex buffer (BR_SSL_BUFSIZE_MONO for 16384-byte records);
 * TLSBENCH_BEARSSL_RECORD (a build feature, records-512 ... records-4096) sizes it for smaller
 * records: the record's bytes + 325, and a client with such a buffer asks for
 * max_fragment_length by itself. The buffer is a size of the build, not of the job: a job
 * with another record size is unsupported by this image, with the feature to build named.
 *
 * The engines are set up as br_ssl_client_init_full and br_ssl_server_init_full_rsa / _ec
 * set them (BearSSL's default implementations: i31 / m31 on cores with a fast 32x32->64
 * multiply, i15 / m15 with BR_LOMUL), then narrowed to the job: TLS 1.2, the one suite, and
 * on the client the one group. The X.509 engine has no clock on the board: it is given a
 * fixed time, the CA's notBefore plus one day (when the test certificates were made).
 */
#include <bearssl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "firmware.h"

const char fw_library[] = "bearssl";
#if defined(TB_BEARSSL_VERSION)
const char fw_library_version[] = TB_BEARSSL_VERSION;
#else
const char fw_library_version[] = "unknown";
#endif

#if defined(TLSBENCH_BEARSSL_RECORD)
#define RECORD TLSBENCH_BEARSSL_RECORD
#else
#define RECORD 16384
#endif
/* BearSSL's largest incoming record overhead (BR_SSL_BUFSIZE_INPUT - 16384): a half-duplex
 * buffer of RECORD + this takes records of RECORD bytes both ways. */
#define IO_BUFFER (RECORD + (BR_SSL_BUFSIZE_INPUT - 16384))

/* The TLS 1.2 suites BearSSL 0.6 offers that the firmware jobs name (builds/firmware.py). */
static const struct {
  const char *name;
  uint16_t id;
} suites[] = {
    {"TLS-ECDHE-ECDSA-WITH-AES-128-GCM-SHA256", BR_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
    {"TLS-ECDHE-ECDSA-WITH-AES-256-GCM-SHA384", BR_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384},
    {"TLS-ECDHE-ECDSA-WITH-CHACHA20-POLY1305-SHA256",
     BR_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
    {"TLS-ECDHE-ECDSA-WITH-AES-128-CBC-SHA256", BR_TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256},
    {"TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256", BR_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
    {"TLS-ECDHE-RSA-WITH-AES-256-GCM-SHA384", BR_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384},
    {"TLS-ECDHE-RSA-WITH-CHACHA20-POLY1305-SHA256", BR_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256},
    {"TLS-ECDHE-RSA-WITH-AES-128-CBC-SHA256", BR_TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256},
    {"TLS-ECDHE-RSA-WITH-AES-256-CBC-SHA384", BR_TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384},
    {"TLS-RSA-WITH-AES-128-GCM-SHA256", BR_TLS_RSA_WITH_AES_128_GCM_SHA256},
    {"TLS-RSA-WITH-AES-256-GCM-SHA384", BR_TLS_RSA_WITH_AES_256_GCM_SHA384},
    {"TLS-RSA-WITH-AES-128-CBC-SHA256", BR_TLS_RSA_WITH_AES_128_CBC_SHA256},
    {"TLS-RSA-WITH-AES-256-CBC-SHA256", BR_TLS_RSA_WITH_AES_256_CBC_SHA256},
};

/* Why a job is unsupported, for the core's message (firmware.h). */
static void unsupported(const char *why) { fw_unsupported_reason = why; }

/* ------------------------------------------------------------------ the sides' objects */
/* Each side's objects are its own statics, reachable only from its set-up: a one-role image
 * keeps that side's alone in its .bss. */
static const fw_job *jobs[FW_SIDES];
static int started[FW_SIDES];
static br_ssl_engine_context *engines[FW_SIDES];

/* The X.509 engine's time, in BearSSL's terms: days since 1 January of year 0 (proleptic
 * Gregorian), seconds in the day; from the CA's notBefore (UTCTime or GeneralizedTime). */
static size_t der_header(const unsigned char *p, size_t len, unsigned *tag, size_t *body) {
  if (len < 2) return 0;
  *tag = p[0];
  size_t n = p[1], at = 2;
  if (n & 0x80) {
    size_t bytes = n & 0x7F;
    if (bytes == 0 || bytes > 3 || len < 2 + bytes) return 0;
    n = 0;
    for (size_t i = 0; i < bytes; i++) n = (n << 8) | p[2 + i];
    at += bytes;
  }
  if (n > len - at) return 0;
  *body = n;
  return at;
}

static unsigned digits(const unsigned char *p, int n) {
  unsigned v = 0;
  for (int i = 0; i < n; i++) v = v * 10 + (unsigned)(p[i] - '0');
  return v;
}

static int not_before_days(const unsigned char *cert, size_t len, uint32_t *days) {
  unsigned tag;
  size_t body, at;
  /* Certificate, then TBSCertificate: enter both. */
  for (int i = 0; i < 2; i++) {
    if ((at = der_header(cert, len, &tag, &body)) == 0 || tag != 0x30) return -1;
    cert += at;
    len = body;
  }
  /* [0] version (optional), serial, signature algorithm, issuer: skip; validity: enter. */
  for (int field = 0; field < 5; field++) {
    if ((at = der_header(cert, len, &tag, &body)) == 0) return -1;
    if (field == 0 && tag != 0xA0) field++; /* no version: this is the serial */
    if (field == 4) {
      cert += at;
      len = body;
      break;
    }
    cert += at + body;
    len -= at + body;
  }
  if ((at = der_header(cert, len, &tag, &body)) == 0) return -1;
  const unsigned char *t = cert + at;
  unsigned year;
  if (tag == 0x17 && body >= 12) { /* UTCTime YYMMDDHHMMSSZ */
    year = digits(t, 2);
    year += year < 50 ? 2000 : 1900;
    t += 2;
  } else if (tag == 0x18 && body >= 14) { /* GeneralizedTime YYYYMMDDHHMMSSZ */
    year = digits(t, 4);
    t += 4;
  } else {
    return -1;
  }
  static const unsigned before_month[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
  unsigned month = digits(t, 2), day = digits(t + 2, 2);
  if (month < 1 || month > 12 || day < 1 || day > 31) return -1;
  int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  /* Leap years in [0, year - 1], year 0 being one. */
  uint32_t leaps = (year + 3) / 4 - (year + 99) / 100 + (year + 399) / 400;
  *days = 365u * year + leaps + before_month[month - 1] + (leap && month > 2) + (day - 1);
  return 0;
}

int fw_init(void) { return 0; }

/* TLS 1.2, the one suite of the job, the entropy, the I/O buffer: what both sides set alike. */
static int narrow(br_ssl_engine_context *eng, const fw_job *job, unsigned char *buf, size_t len) {
  uint16_t id = 0;
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
    if (strcmp(suites[i].name, job->suite) == 0) id = suites[i].id;
  if (id == 0) return FW_NO_SUITE;
  br_ssl_engine_set_versions(eng, BR_TLS12, BR_TLS12);
  br_ssl_engine_set_suites(eng, &id, 1);
  unsigned char seed[32];
  fw_test_entropy(seed, sizeof seed);
  br_ssl_engine_inject_entropy(eng, seed, sizeof seed);
  br_ssl_engine_set_buffer(eng, buf, len, 0);
  return br_ssl_engine_last_error(eng);
}

/* What BearSSL cannot do at all, whatever the build: said before any object is made. */
static int refuse(const fw_job *job) {
  if (job->tls != 12) {
    unsupported("BearSSL 0.6 implements TLS 1.0 to 1.2, no TLS 1.3");
    return FW_UNSUPPORTED;
  }
  if (job->kx == FW_KX_PSK || job->kx == FW_KX_PSK_DHE) {
    unsupported("BearSSL 0.6 has no PSK cipher suites");
    return FW_UNSUPPORTED;
  }
  unsigned record = job->record == 0 ? 16384 : job->record;
  if (record != RECORD) {
    static char why[120];
    snprintf(why, sizeof why,
             "this image's I/O buffer is for %u-byte records: build the variant with "
             "records-%u for %u",
             (unsigned)RECORD, record, record);
    unsupported(why);
    return FW_UNSUPPORTED;
  }
  return 0;
}

/* ------------------------------------------------------------------ the client */
static br_ssl_client_context client;
static br_x509_minimal_context client_x509;
static unsigned char client_io[IO_BUFFER];
static br_x509_trust_anchor client_anchor;
static unsigned char anchor_dn[256]; /* the CA's subject DN */
static size_t anchor_dn_len;
static unsigned char anchor_key[300]; /* its public key: RSA modulus and exponent, or EC point */
static br_ec_impl client_ec;          /* the engine's curves, narrowed to the job's group */

static void append_dn(void *ctx, const void *buf, size_t len) {
  (void)ctx;
  if (anchor_dn_len + len <= sizeof anchor_dn) memcpy(anchor_dn + anchor_dn_len, buf, len);
  anchor_dn_len += len;
}

/* The trust anchor from the CA's DER, as BearSSL's tools make one (its DN and public key). */
static int make_anchor(const fw_credentials *c) {
  br_x509_decoder_context dc;
  br_x509_decoder_init(&dc, append_dn, NULL);
  br_x509_decoder_push(&dc, c->ca, c->ca_len);
  const br_x509_pkey *pk = br_x509_decoder_get_pkey(&dc);
  if (pk == NULL) return br_x509_decoder_last_error(&dc);
  if (anchor_dn_len > sizeof anchor_dn) return BR_ERR_X509_LIMIT_EXCEEDED;
  client_anchor.dn.data = anchor_dn;
  client_anchor.dn.len = anchor_dn_len;
  client_anchor.flags = BR_X509_TA_CA;
  client_anchor.pkey = *pk;
  if (pk->key_type == BR_KEYTYPE_RSA) {
    const br_rsa_public_key *k = &pk->key.rsa;
    if (k->nlen + k->elen > sizeof anchor_key) return BR_ERR_X509_LIMIT_EXCEEDED;
    memcpy(anchor_key, k->n, k->nlen);
    memcpy(anchor_key + k->nlen, k->e, k->elen);
    client_anchor.pkey.key.rsa.n = anchor_key;
    client_anchor.pkey.key.rsa.e = anchor_key + k->nlen;
  } else {
    const br_ec_public_key *k = &pk->key.ec;
    if (k->qlen > sizeof anchor_key) return BR_ERR_X509_LIMIT_EXCEEDED;
    memcpy(anchor_key, k->q, k->qlen);
    client_anchor.pkey.key.ec.q = anchor_key;
  }
  return 0;
}

static int setup_client(const fw_job *job) {
  const fw_credentials *c = &fw_certs[job->cert];
  int ret = make_anchor(c);
  if (ret != 0) return ret;
  br_ssl_client_init_full(&client, &client_x509, &client_anchor, 1);
  uint32_t days;
  if (not_before_days(c->ca, c->ca_len, &days) != 0) return BR_ERR_X509_TIME_UNKNOWN;
  br_x509_minimal_set_time(&client_x509, days + 1, 0);
  if (job->group != 0) {
    /* The client offers the curves of its EC implementation: narrowed to the job's group
     * (BearSSL's curve identifiers are TLS's). TLS 1.2's supported_groups also limits the
     * curve of an ECDSA certificate (RFC 8422): with another group asked, P-256 stays. */
    client_ec = *br_ssl_engine_get_ec(&client.eng);
    uint32_t curves = (uint32_t)1 << job->group;
    if (job->cert == FW_CERT_ECDSA_P256) curves |= (uint32_t)1 << BR_EC_secp256r1;
    if ((client_ec.supported_curves & curves) != curves) {
      unsupported("this BearSSL build lacks the group asked");
      return FW_UNSUPPORTED;
    }
    client_ec.supported_curves = curves;
    br_ssl_engine_set_ec(&client.eng, &client_ec);
  }
  engines[FW_CLIENT] = &client.eng;
  return narrow(&client.eng, job, client_io, sizeof client_io);
}

/* ------------------------------------------------------------------ the server */
static br_ssl_server_context server;
static unsigned char server_io[IO_BUFFER];
/* The decoded private key's components live in the decoder's context: kept for the
 * connection's life, as the engine reads the key through it. */
static br_skey_decoder_context server_key;
static br_x509_certificate server_chain[2];

static int setup_server(const fw_job *job) {
  const fw_credentials *c = &fw_certs[job->cert];
  size_t count = 1;
  server_chain[0].data = (unsigned char *)(job->chain == 1 ? c->leaf1 : c->leaf2);
  server_chain[0].data_len = job->chain == 1 ? c->leaf1_len : c->leaf2_len;
  if (job->chain == 2) {
    server_chain[1].data = (unsigned char *)c->inter;
    server_chain[1].data_len = c->inter_len;
    count = 2;
  }
  br_skey_decoder_init(&server_key);
  br_skey_decoder_push(&server_key, c->key, c->key_len);
  int ret = br_skey_decoder_last_error(&server_key);
  if (ret != 0) return ret;
  if (br_skey_decoder_key_type(&server_key) == BR_KEYTYPE_RSA)
    br_ssl_server_init_full_rsa(&server, server_chain, count, br_skey_decoder_get_rsa(&server_key));
  else
    br_ssl_server_init_full_ec(&server, server_chain, count, BR_KEYTYPE_EC,
                               br_skey_decoder_get_ec(&server_key));
  engines[FW_SERVER] = &server.eng;
  return narrow(&server.eng, job, server_io, sizeof server_io);
}

/* BearSSL 0.6 has no ML-DSA (nor TLS 1.3). */
#define NO_ML_DSA "BearSSL has no ML-DSA"

int fw_setup(enum fw_side side, const fw_job *job) {
  if (job->cert == FW_CERT_ML_DSA_44 && job->kx != FW_KX_PSK && job->kx != FW_KX_PSK_DHE) {
    unsupported(NO_ML_DSA);
    return FW_UNSUPPORTED;
  }
  int ret = refuse(job);
  if (ret != 0) return ret;
  jobs[side] = job;
  if (FW_HAS(FW_CLIENT) && side == FW_CLIENT) return setup_client(job);
  if (FW_HAS(FW_SERVER) && side == FW_SERVER) return setup_server(job);
  return FW_UNSUPPORTED;
}

/* ------------------------------------------------------------------ the handshake */
int fw_step(enum fw_side side, int *error) {
  br_ssl_engine_context *eng = engines[side];
  if (!started[side]) {
    /* The reset writes the ClientHello (random, offer): the handshake's work, so it is
     * the first step's, not the set-up's (docs/embedded.md). */
    started[side] = 1;
    int ok = 1;
    if (FW_HAS(FW_CLIENT) && side == FW_CLIENT)
      ok = br_ssl_client_reset(&client, FW_SERVER_NAME, 0);
    if (FW_HAS(FW_SERVER) && side == FW_SERVER) ok = br_ssl_server_reset(&server);
    if (!ok) {
      *error = br_ssl_engine_last_error(eng);
      return FW_FAILED;
    }
  }
  for (;;) {
    unsigned state = br_ssl_engine_current_state(eng);
    if (state & BR_SSL_CLOSED) {
      int err = br_ssl_engine_last_error(eng);
      *error = err != 0 ? err : -1;
      return FW_FAILED;
    }
    size_t len, n;
    if (state & BR_SSL_SENDREC) { /* records first: a half-duplex buffer must empty */
      unsigned char *buf = br_ssl_engine_sendrec_buf(eng, &len);
      if ((n = fw_send(side, buf, len)) == 0) return FW_AGAIN;
      br_ssl_engine_sendrec_ack(eng, n);
      continue;
    }
    if (state & BR_SSL_SENDAPP) return FW_DONE; /* application data may go: done */
    if (state & BR_SSL_RECVREC) {
      unsigned char *buf = br_ssl_engine_recvrec_buf(eng, &len);
      if ((n = fw_recv(side, buf, len)) == 0) return FW_AGAIN;
      br_ssl_engine_recvrec_ack(eng, n);
      continue;
    }
    return FW_AGAIN;
  }
}

void fw_read_back(enum fw_side side, fw_negotiated *out) {
  br_ssl_engine_context *eng = engines[side];
  unsigned version = br_ssl_engine_get_version(eng);
  snprintf(out->version, sizeof out->version, "%s",
           version == BR_TLS12   ? "TLSv1.2"
           : version == BR_TLS11 ? "TLSv1.1"
           : version == BR_TLS10 ? "TLSv1.0"
                                 : "unknown");
  br_ssl_session_parameters params;
  br_ssl_engine_get_session_parameters(eng, &params);
  snprintf(out->suite, sizeof out->suite, "unknown (0x%04x)", params.cipher_suite);
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
    if (suites[i].id == params.cipher_suite)
      snprintf(out->suite, sizeof out->suite, "%s", suites[i].name);
  /* The minimal X.509 engine ends a chain with BR_ERR_X509_OK only when it verified it up
   * to the trust anchor; the handshake fails on anything else. */
  out->verified = -1;
  if (FW_HAS(FW_CLIENT) && side == FW_CLIENT)
    out->verified = client_x509.err == BR_ERR_X509_OK && br_ssl_engine_last_error(eng) == 0;
  /* The largest plaintext this side sends in a record: max_fragment_length, when asked. */
  out->record = eng->max_frag_len < 16384 ? eng->max_frag_len : 0;
}

void fw_error_text(int error, char *buf, size_t size) {
  /* BearSSL has no error strings: the family of the code, whose name bearssl_ssl.h and
   * bearssl_x509.h give. */
  const char *family = error >= BR_ERR_SEND_FATAL_ALERT   ? "fatal alert sent (256 + alert)"
                       : error >= BR_ERR_RECV_FATAL_ALERT ? "fatal alert received (256 + alert)"
                       : error >= BR_ERR_X509_OK          ? "X.509 validation (BR_ERR_X509_*)"
                                                          : "SSL engine (BR_ERR_*)";
  snprintf(buf, size, "BearSSL error %d: %s", error, family);
}

/* ------------------------------------------------------------------ operations (mode=ops) */
/* BearSSL's own API, each call as close to wolfCrypt's benchmark (the other images' model) as
 * BearSSL allows, with the implementations its engines use on this core (BR_LOMUL: i15 / m15,
 * GHASH ctmul32, Poly1305 ctmul32; else i31 / m31, ctmul, ctmul): key generation makes the
 * private key and computes the public one; ECDH multiplies the peer's point; ECDSA signs a
 * SHA-256 hash (RFC 6979 nonces) and verifies it (ASN.1); the AEADs encrypt 1 KiB in place
 * with 13 bytes of additional data; SHA-256 is the update of 1 KiB; HKDF-SHA256 extracts and
 * expands 32 bytes. RSA: BearSSL's one PKCS #1 v1.5 decryption is TLS's premaster secret
 * (br_rsa_ssl_decrypt, a 48-byte message), and its private-key code is constant-time instead
 * of blinded; "public" is the modular exponentiation of a message padded once in prepare().
 * Keys come from an HMAC_DRBG seeded from the core's test stream, RSA's from the compiled-in
 * key and certificate. Every result is checked in prepare() or run(). */
#if defined(BR_ARMEL_CORTEXM_GCC) && BR_ARMEL_CORTEXM_GCC
#define OP_GHASH br_ghash_ctmul32
#define OP_POLY1305 br_poly1305_ctmul32_run
#else
#define OP_GHASH br_ghash_ctmul
#define OP_POLY1305 br_poly1305_ctmul_run
#endif
#define OP_FAILED 1 /* an operation's result is wrong (BearSSL's calls say 0 or 1) */

static br_hmac_drbg_context op_rng;
static int op_rng_ready;
static FW_HARNESS unsigned char op_in[FW_OP_BYTES], op_out[FW_OP_BYTES];
static unsigned char op_aad[FW_OP_AAD], op_key[32], op_iv[12], op_tag[16], op_hash[32];
static unsigned char op_sig[80], op_secret[BR_EC_KBUF_PUB_MAX_SIZE];
static size_t op_sig_len;

static int op_common(void) {
  if (op_rng_ready) return 0;
  unsigned char seed[32];
  fw_test_entropy(seed, sizeof seed);
  br_hmac_drbg_init(&op_rng, &br_sha256_vtable, seed, sizeof seed);
  op_rng_ready = 1;
  br_hmac_drbg_generate(&op_rng, op_in, sizeof op_in);
  br_hmac_drbg_generate(&op_rng, op_key, sizeof op_key);
  br_hmac_drbg_generate(&op_rng, op_iv, sizeof op_iv);
  br_hmac_drbg_generate(&op_rng, op_aad, sizeof op_aad);
  br_hmac_drbg_generate(&op_rng, op_hash, sizeof op_hash);
  return 0;
}

static void op_none(void) {}

/* Two key pairs on a curve: [0] ours, [1] the peer's. */
static br_ec_private_key op_sk[2];
static br_ec_public_key op_pk[2];
static unsigned char op_skbuf[2][BR_EC_KBUF_PRIV_MAX_SIZE], op_pkbuf[2][BR_EC_KBUF_PUB_MAX_SIZE];

static int keygen(int i, int curve) {
  const br_ec_impl *ec = br_ec_get_default();
  if (br_ec_keygen(&op_rng.vtable, ec, &op_sk[i], op_skbuf[i], curve) == 0) return OP_FAILED;
  return br_ec_compute_pub(ec, &op_pk[i], op_pkbuf[i], &op_sk[i]) == 0 ? OP_FAILED : 0;
}

/* The shared secret with the peer's point: P-256's X coordinate, X25519's whole output. */
static int ecdh(int ours, int theirs, unsigned char *out) {
  const br_ec_impl *ec = br_ec_get_default();
  memcpy(out, op_pk[theirs].q, op_pk[theirs].qlen);
  return ec->mul(out, op_pk[theirs].qlen, op_sk[ours].x, op_sk[ours].xlen, op_sk[ours].curve) == 1
             ? 0
             : OP_FAILED;
}

static int pair_prepare(int curve) {
  int ret = op_common();
  for (int i = 0; i < 2 && ret == 0; i++) ret = keygen(i, curve);
  unsigned char other[BR_EC_KBUF_PUB_MAX_SIZE];
  if (ret != 0 || (ret = ecdh(0, 1, op_secret)) != 0 || (ret = ecdh(1, 0, other)) != 0) return ret;
  return memcmp(op_secret, other, op_pk[0].qlen) == 0 ? 0 : OP_FAILED;
}

static int p256_keygen_prepare(void) { return op_common(); }
static int p256_keygen_run(void) { return keygen(0, BR_EC_secp256r1); }
static int p256_pair_prepare(void) {
  int ret = pair_prepare(BR_EC_secp256r1);
  if (ret != 0) return ret;
  op_sig_len = br_ecdsa_sign_asn1_get_default()(br_ec_get_default(), &br_sha256_vtable, op_hash,
                                                &op_sk[0], op_sig);
  return op_sig_len == 0 ? OP_FAILED : 0;
}
static int p256_ecdh_run(void) { return ecdh(0, 1, op_secret); }
static int p256_sign_run(void) {
  return br_ecdsa_sign_asn1_get_default()(br_ec_get_default(), &br_sha256_vtable, op_hash,
                                          &op_sk[0], op_sig) == 0
             ? OP_FAILED
             : 0;
}
static int p256_verify_run(void) {
  return br_ecdsa_vrfy_asn1_get_default()(br_ec_get_default(), op_hash, sizeof op_hash, &op_pk[0],
                                          op_sig, op_sig_len) == 1
             ? 0
             : OP_FAILED;
}
static int x25519_keygen_prepare(void) { return op_common(); }
static int x25519_keygen_run(void) { return keygen(0, BR_EC_curve25519); }
static int x25519_pair_prepare(void) { return pair_prepare(BR_EC_curve25519); }
static int x25519_shared_run(void) { return ecdh(0, 1, op_secret); }

/* RSA-2048: the compiled-in key (PKCS #8) and the leaf certificate's public key. */
static br_skey_decoder_context op_rsa_sk;
static br_rsa_public_key op_rsa_pk;
static unsigned char op_rsa_n[256], op_rsa_e[4], op_rsa_pt[256], op_rsa_ct[256];
#define PREMASTER 48

static int rsa_prepare(void) {
  int ret = op_common();
  const fw_credentials *c = &fw_certs[FW_CERT_RSA2048];
  br_skey_decoder_init(&op_rsa_sk);
  br_skey_decoder_push(&op_rsa_sk, c->key, c->key_len);
  if (ret != 0 || (ret = br_skey_decoder_last_error(&op_rsa_sk)) != 0) return ret;
  if (br_skey_decoder_key_type(&op_rsa_sk) != BR_KEYTYPE_RSA) return OP_FAILED;
  br_x509_decoder_context dc;
  br_x509_decoder_init(&dc, NULL, NULL);
  br_x509_decoder_push(&dc, c->leaf1, c->leaf1_len);
  const br_x509_pkey *pk = br_x509_decoder_get_pkey(&dc);
  if (pk == NULL || pk->key_type != BR_KEYTYPE_RSA) return OP_FAILED;
  if (pk->key.rsa.nlen > sizeof op_rsa_n || pk->key.rsa.elen > sizeof op_rsa_e) return OP_FAILED;
  memcpy(op_rsa_n, pk->key.rsa.n, pk->key.rsa.nlen);
  memcpy(op_rsa_e, pk->key.rsa.e, pk->key.rsa.elen);
  op_rsa_pk = (br_rsa_public_key){op_rsa_n, pk->key.rsa.nlen, op_rsa_e, pk->key.rsa.elen};
  if (op_rsa_pk.nlen != sizeof op_rsa_pt) return OP_FAILED;
  /* PKCS #1 v1.5 type 2: 00 02, non-zero padding, 00, the 48-byte message. */
  size_t pad = sizeof op_rsa_pt - PREMASTER - 3;
  op_rsa_pt[0] = 0x00;
  op_rsa_pt[1] = 0x02;
  br_hmac_drbg_generate(&op_rng, op_rsa_pt + 2, pad);
  for (size_t i = 0; i < pad; i++)
    if (op_rsa_pt[2 + i] == 0) op_rsa_pt[2 + i] = 0x5A;
  op_rsa_pt[2 + pad] = 0x00;
  memcpy(op_rsa_pt + 3 + pad, op_in, PREMASTER);
  memcpy(op_rsa_ct, op_rsa_pt, sizeof op_rsa_ct);
  if (br_rsa_public_get_default()(op_rsa_ct, sizeof op_rsa_ct, &op_rsa_pk) != 1) return OP_FAILED;
  memcpy(op_out, op_rsa_ct, sizeof op_rsa_ct);
  if (br_rsa_ssl_decrypt(br_rsa_private_get_default(), br_skey_decoder_get_rsa(&op_rsa_sk), op_out,
                         sizeof op_rsa_ct) != 1)
    return OP_FAILED;
  return memcmp(op_out, op_in, PREMASTER) == 0 ? 0 : OP_FAILED;
}
static int rsa_public_run(void) {
  memcpy(op_out, op_rsa_pt, sizeof op_rsa_pt);
  return br_rsa_public_get_default()(op_out, sizeof op_rsa_pt, &op_rsa_pk) == 1 ? 0 : OP_FAILED;
}
static int rsa_private_run(void) {
  memcpy(op_out, op_rsa_ct, sizeof op_rsa_ct);
  return br_rsa_ssl_decrypt(br_rsa_private_get_default(), br_skey_decoder_get_rsa(&op_rsa_sk),
                            op_out, sizeof op_rsa_ct) == 1
             ? 0
             : OP_FAILED;
}

static br_aes_ct_ctr_keys op_aes;
static br_gcm_context op_gcm;
static int gcm_prepare(void) {
  int ret = op_common();
  br_aes_ct_ctr_init(&op_aes, op_key, 16);
  br_gcm_init(&op_gcm, &op_aes.vtable, OP_GHASH);
  return ret;
}
static int gcm_run(void) {
  memcpy(op_out, op_in, FW_OP_BYTES);
  br_gcm_reset(&op_gcm, op_iv, sizeof op_iv);
  br_gcm_aad_inject(&op_gcm, op_aad, sizeof op_aad);
  br_gcm_flip(&op_gcm);
  br_gcm_run(&op_gcm, 1, op_out, FW_OP_BYTES);
  br_gcm_get_tag(&op_gcm, op_tag);
  return 0;
}

static int chachapoly_run(void) {
  memcpy(op_out, op_in, FW_OP_BYTES);
  OP_POLY1305(op_key, op_iv, op_out, FW_OP_BYTES, op_aad, sizeof op_aad, op_tag, br_chacha20_ct_run,
              1);
  return 0;
}

static br_sha256_context op_sha;
static int sha256_prepare(void) {
  br_sha256_init(&op_sha);
  return op_common();
}
static int sha256_run(void) {
  br_sha256_update(&op_sha, op_in, FW_OP_BYTES);
  return 0;
}
static void sha256_release(void) { br_sha256_out(&op_sha, op_hash); }

static int hkdf_run(void) {
  br_hkdf_context hc;
  br_hkdf_init(&hc, &br_sha256_vtable, op_in, 32);
  br_hkdf_inject(&hc, op_key, 32);
  br_hkdf_flip(&hc);
  return br_hkdf_produce(&hc, op_in + 32, 16, op_secret, 32) == 32 ? 0 : OP_FAILED;
}

const fw_op fw_ops[] = {
    {"p256_keygen", p256_keygen_prepare, p256_keygen_run, op_none, NULL},
    {"p256_ecdh", p256_pair_prepare, p256_ecdh_run, op_none, NULL},
    {"p256_sign", p256_pair_prepare, p256_sign_run, op_none, NULL},
    {"p256_verify", p256_pair_prepare, p256_verify_run, op_none, NULL},
    {"x25519_keygen", x25519_keygen_prepare, x25519_keygen_run, op_none, NULL},
    {"x25519_shared", x25519_pair_prepare, x25519_shared_run, op_none, NULL},
    {"rsa2048_public", rsa_prepare, rsa_public_run, op_none, NULL},
    {"rsa2048_private", rsa_prepare, rsa_private_run, op_none, NULL},
    {"aes128gcm_kib", gcm_prepare, gcm_run, op_none, NULL},
    {"chacha20poly1305_kib", op_common, chachapoly_run, op_none, NULL},
    {"sha256_kib", sha256_prepare, sha256_run, sha256_release, NULL},
    {"hkdf_sha256", op_common, hkdf_run, op_none, NULL},
    {"mldsa44_sign", NULL, NULL, NULL, NO_ML_DSA},
    {"mldsa44_verify", NULL, NULL, NULL, NO_ML_DSA},
};
const size_t fw_op_count = sizeof fw_ops / sizeof fw_ops[0];
