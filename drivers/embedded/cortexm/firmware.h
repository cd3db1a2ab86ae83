/*
 * The Cortex-M firmware image: one core (firmware_core.c: arguments, measurement, the
 * in-memory transport, what was negotiated on the wire, JSON out) and one adapter per library
 * (firmware_LIBRARY.c) behind this interface. The core never names a library; an adapter
 * never measures anything: the core wraps every adapter call made on a side's behalf.
 *
 * An image runs a TLS client and a TLS server in one program, over two in-memory pipes, and
 * prints one JSON line over semihosting. Built with TLSBENCH_ROLE set to FW_CLIENT or
 * FW_SERVER, it holds one side only: such an image is linked for its sizes, never run.
 */
#ifndef TLSBENCH_FIRMWARE_H
#define TLSBENCH_FIRMWARE_H

#include <stddef.h>
#include <stdint.h>

enum fw_side { FW_CLIENT, FW_SERVER, FW_SIDES };

/* Whether this image holds a side's code (a compile-time constant, so that the linker drops
 * the other side's code from a one-role image). */
#if !defined(TLSBENCH_ROLE)
#define FW_HAS(side) 1
#else
#define FW_HAS(side) (TLSBENCH_ROLE == (side))
#endif

/* How the two sides authenticate and agree on keys. */
enum fw_kx {
  FW_KX_ECDHE,   /* (EC)DHE, the server authenticated by its certificate */
  FW_KX_RSA,     /* TLS 1.2 static RSA key transport (certificate) */
  FW_KX_PSK,     /* the pre-shared key alone: TLS 1.3 psk_ke, TLS 1.2 PSK suites */
  FW_KX_PSK_DHE, /* the key and (EC)DHE: TLS 1.3 psk_dhe_ke, TLS 1.2 ECDHE-PSK suites */
};

enum fw_cert { FW_CERT_RSA2048, FW_CERT_ECDSA_P256, FW_CERT_ML_DSA_44, FW_CERTS };

/* What one run asks for (the image's arguments, firmware_core.c). */
typedef struct {
  int tls;           /* 12 or 13 */
  const char *suite; /* IANA name with dashes: TLS-AES-128-GCM-SHA256 */
  enum fw_kx kx;     /* for TLS 1.2 it follows from the suite; the core checks they agree */
  uint16_t group;    /* the client's only group (its key share in TLS 1.3); 0: defaults */
  enum fw_cert cert; /* the server's certificate (certificate key exchanges) */
  int chain;         /* 1: leaf signed by the root; 2: leaf and intermediate */
  unsigned record;   /* max_fragment_length the client asks for (512..4096); 0: none */
} fw_job;

/* The test credentials compiled in (generated: certs.h), DER, and the pre-shared key. */
typedef struct {
  const unsigned char *ca, *leaf1, *leaf2, *inter, *key;
  size_t ca_len, leaf1_len, leaf2_len, inter_len, key_len;
} fw_credentials;
extern const fw_credentials fw_certs[FW_CERTS];
/* A signature the ML-DSA-44 operations verify (mode=ops): the root's public key (FIPS 204's
 * raw pk), the leaf's TBSCertificate and the root's signature over it, from the compiled-in
 * ML-DSA-44 set: the verification a client makes of the chain. */
typedef struct {
  const unsigned char *pub, *msg, *sig;
  size_t pub_len, msg_len, sig_len;
} fw_signed;
extern const fw_signed fw_ml_dsa_44_signed;
extern const unsigned char fw_psk[32];
extern const char fw_psk_identity[];
#define FW_SERVER_NAME "localhost"

/* What an adapter reads back from its library after the handshake, per side. */
typedef struct {
  char version[16]; /* "TLSv1.2", "TLSv1.3" */
  char suite[80];   /* IANA name with dashes */
  int verified;     /* the client verified the server's chain: 1; not asked: -1; failed: 0 */
  unsigned record;  /* the negotiated max fragment length (0: none) */
} fw_negotiated;

/* Status of one adapter step. */
enum { FW_DONE = 0, FW_AGAIN = 1, FW_FAILED = -1 };

/* ------------------------------------------------------------------ the adapter */
extern const char fw_library[];         /* "mbedtls" */
extern const char fw_library_version[]; /* "3.6.6" */
/* Library-wide set-up (PSA, wolfSSL_Init): 0 or the library's error. */
int fw_init(void);
/* Configuration, credentials and connection object of one side for `job`: 0 or the
 * library's error (FW_NO_SUITE, FW_UNSUPPORTED when the build lacks what the job needs). */
int fw_setup(enum fw_side side, const fw_job *job);
#define FW_UNSUPPORTED (-0x7F00)
#define FW_NO_SUITE (-0x7F01)
/* Why fw_setup returned FW_UNSUPPORTED, where the adapter says (NULL: "not in this build"):
 * a library that lacks a feature in every build names it (BearSSL 0.6: no PSK). */
extern const char *fw_unsupported_reason;
/* One handshake call of a side: FW_DONE, FW_AGAIN (waits for the peer) or FW_FAILED with
 * the library's error in *error. */
int fw_step(enum fw_side side, int *error);
void fw_read_back(enum fw_side side, fw_negotiated *out);
/* The library's text for an error code, into buf. */
void fw_error_text(int error, char *buf, size_t size);

/* ------------------------------------------------------------------ operations (mode=ops) */
/* One operation of the library's own crypto API (its wolfCrypt or mbedTLS call, not TLS),
 * which the core runs in a measured batch. prepare() makes what the operation needs (keys,
 * a signature to verify, a cipher context), unmeasured; run() performs the operation once
 * (per-KiB operations process 1024 bytes): 0 or the library's error; release() frees what
 * prepare made. An operation the build lacks has no functions and says why in `missing`. */
typedef struct {
  const char *name; /* "p256_sign": the names of builds/firmware.py OPERATIONS */
  int (*prepare)(void);
  int (*run)(void);
  void (*release)(void);
  const char *missing; /* NULL, or why this build cannot run it */
} fw_op;
extern const fw_op fw_ops[];
extern const size_t fw_op_count;
/* The payload of the per-KiB operations, and the test bytes keys and messages are made of. */
#define FW_OP_BYTES 1024
#define FW_OP_AAD 13 /* additional data of the AEAD operations, as wolfCrypt's benchmark */

/* ------------------------------------------------------------------ the core, for adapters */
/* The in-memory transport: bytes moved (0: the pipe is empty, or full). */
size_t fw_send(enum fw_side side, const unsigned char *buf, size_t len);
size_t fw_recv(enum fw_side side, unsigned char *buf, size_t len);
/* A job's name for a group code point ("x25519"), NULL when unknown. */
const char *fw_group_name(uint16_t id);
/* The deterministic test byte stream both libraries seed from (benchmarking only). */
void fw_test_entropy(unsigned char *out, size_t len);

/* Buffers of the harness itself (pipes, output): kept out of .bss in an image section of
 * their own, so that the image's .bss is what the library and the application need. */
#define FW_HARNESS __attribute__((section(".harness")))
/* The compiled-in credentials: in a section of their own, so that the sizes count a job's
 * own certificates and not every kind the image carries. */
#define FW_CERTS_SECTION __attribute__((section(".certs")))

#endif /* TLSBENCH_FIRMWARE_H */
