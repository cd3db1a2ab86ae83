/*
 * The adapter interface: the specification every library adapter implements.
 *
 * One adapter per library (adapters/<library>.c) fills a `const tb_adapter` named
 * `tb_adapter_impl`. The core (core/) never names a library; an adapter never measures,
 * times, counts or prints anything: it translates between this contract and the
 * library's own API, and it reads back from the library what was negotiated.
 *
 * Conventions for every function below:
 *  - Functions return a tb_status. On TB_FAILED or TB_UNSUPPORTED they write a short,
 *    human-readable reason (the library's own error text where it has one) into `err`
 *    (TB_ERR_LEN bytes, always NUL-terminated). On other statuses `err` is untouched.
 *  - The core sets the heap "side" around every call, so every allocation an adapter or its
 *    library makes during a call is charged to the side the call is for. An adapter must
 *    not allocate memory for one side while called for the other.
 *  - Objects returned through out-pointers are owned by the caller, who releases them with
 *    the matching *_free function; *_free accepts NULL.
 *  - Nothing here may block: I/O goes only through the tb_transport given to conn_new,
 *    whose recv returns TB_IO_WOULD_BLOCK when the peer has not sent anything yet.
 */
#ifndef TLSBENCH_DRIVER_H
#define TLSBENCH_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TB_ERR_LEN 256
#define TB_NAME_LEN 64

/* Status codes. The values of UNSUPPORTED and FAILED are chosen apart from the driver's
 * exit codes (see core/main.c) on purpose: the core maps them, adapters never exit. */
typedef enum tb_status {
  TB_OK = 0,          /* done */
  TB_WANT_IO = 1,     /* not done: call again after the peer has had its turn */
  TB_CLOSED = 2,      /* the peer closed the connection (close_notify) */
  TB_UNSUPPORTED = 3, /* a knob or combination this library (build) cannot honour */
  TB_FAILED = 4,      /* the library reported an error (handshake failure included) */
} tb_status;

/* ------------------------------------------------------------------------- transport */

/* Return value of tb_transport.recv when no bytes are available yet. */
#define TB_IO_WOULD_BLOCK (-2)
/* Return value of send/recv on a broken transport. */
#define TB_IO_ERROR (-1)

/* A byte stream to the peer. send() accepts all or part of `len` bytes and returns how
 * many; recv() returns 1..len bytes, TB_IO_WOULD_BLOCK or TB_IO_ERROR (0 = peer closed).
 * fd >= 0 (`--io fd`, over TCP only): the library does its own I/O on this non-blocking
 * socket instead (OpenSSL's socket BIO, wolfSSL's built-in socket callbacks, mbedTLS's
 * net_sockets, GnuTLS's default push/pull); send/recv are then not called. An adapter
 * whose library has no socket I/O of its own returns TB_UNSUPPORTED for it. */
typedef struct tb_transport {
  void *io;
  long (*send)(void *io, const unsigned char *buf, size_t len);
  long (*recv)(void *io, unsigned char *buf, size_t len);
  int fd;
  /* 1 (`--io bio`): send/recv as above, but reached through the library's own BIO layer
   * (wolfSSL's WOLFSSL_BIO, in builds with OPENSSL_EXTRA) rather than its I/O callbacks.
   * An adapter whose library has no such layer besides its callbacks returns
   * TB_UNSUPPORTED, with the reason. */
  int bio;
} tb_transport;

/* ------------------------------------------------------------------------- configuration */

typedef enum tb_role { TB_CLIENT = 0, TB_SERVER = 1 } tb_role;

typedef enum tb_auth {
  TB_AUTH_NONE = 0,   /* nobody verifies a certificate (the server still presents one) */
  TB_AUTH_SERVER = 1, /* the client verifies the server's chain against ca_file */
  TB_AUTH_MUTUAL = 2, /* and the server requires and verifies a client chain */
} tb_auth;

/* Pre-shared keys (RFC 4279 and 5489 for TLS 1.2, RFC 8446 2.2 and 4.2.9 for TLS 1.3): the
 * two sides hold the same key, which authenticates them instead of certificates. */
typedef enum tb_psk_mode {
  TB_PSK_NONE = 0, /* certificates authenticate (every key exchange but the two below) */
  TB_PSK_KE = 1,   /* the key alone: TLS 1.3 psk_ke, TLS 1.2 PSK suites; no group is used */
  TB_PSK_DHE = 2,  /* the key and an (EC)DHE share: TLS 1.3 psk_dhe_ke, TLS 1.2 ECDHE-PSK and
                      DHE-PSK suites; `group` is the share's */
} tb_psk_mode;

/* The external pre-shared key both sides of a PSK run are given (tlsbench's fixed test key,
 * never a secret). TLS 1.3: an external PSK (not a resumption one) whose hash is `hash`,
 * the suite's; the client offers exactly this one identity and the key exchange mode
 * (psk_ke or psk_dhe_ke) of `mode` only, where the library can be held to it. TLS 1.2: the
 * suite says the mode; the server sends no identity hint. The core never asks a TLS 1.3 PSK
 * run to resume (a ticket would be offered beside the key): a pre_shared_key a TLS 1.3
 * server accepts in a PSK run is this key. */
typedef struct tb_psk {
  tb_psk_mode mode; /* TB_PSK_NONE: the fields below are unset */
  const unsigned char *key;
  size_t key_len;
  const char *identity; /* NUL-terminated */
  const char *hash;     /* "SHA256" or "SHA384" */
} tb_psk;

/* What one side is asked to do. Every knob is mandatory for the adapter: it pins the
 * library's offer to exactly this (no other versions, suites, groups or signature
 * schemes offered), or returns TB_UNSUPPORTED with the reason. */
typedef struct tb_config {
  tb_role role;
  int tls_version;   /* 12 (TLS 1.2) or 13 (TLS 1.3); the only version offered */
  const char *suite; /* IANA name, e.g. "TLS_AES_128_GCM_SHA256" */
  const char *group; /* "x25519", "secp256r1", "secp384r1", "ffdhe2048", "ffdhe3072",
                        "X25519MLKEM768"; ignored by TLS 1.2 static RSA suites; NULL when
                        the pre-shared key alone is used (TB_PSK_KE) */
  /* Client, TLS 1.3 only: NULL, or a group other than `group` that the client offers first,
   * with its only key share. The offer is then exactly [key_share, group], one key share
   * (for key_share); the server, which offers `group` alone, must answer with a
   * HelloRetryRequest for `group`. An adapter that cannot send exactly that one key share
   * returns TB_UNSUPPORTED. */
  const char *key_share;
  const char *sigalg; /* IANA SignatureScheme name, e.g. "rsa_pss_rsae_sha256",
                         "ecdsa_secp256r1_sha256", "ed25519", "rsa_pkcs1_sha256";
                         NULL when nothing is signed (static RSA key exchange, PSK) */
  /* Mutual auth: the scheme the client signs its CertificateVerify with and the server
   * accepts there, when it is not `sigalg`; NULL: `sigalg`. Only the test hook
   * --fault client-sigalg sets it; an adapter that cannot keep the two apart returns
   * TB_UNSUPPORTED. */
  const char *client_sigalg;
  tb_auth auth;
  const char *ca_file;     /* PEM trust anchor(s) used by whoever verifies */
  const char *chain_file;  /* PEM: own certificate chain, leaf first (NULL: client
                              without a certificate) */
  const char *key_file;    /* PEM (PKCS#8) private key of the leaf */
  const char *server_name; /* client: SNI and the name verified in the server's cert */
  size_t record_size;      /* 0: library default; else max plaintext per record to use */
  int resumption;          /* 0: full handshakes only (no tickets sent, no session cache);
                              1: tickets / session cache on, as resumption needs */
  /* A PSK run (psk.mode != TB_PSK_NONE) uses no certificate at all: ca_file, chain_file,
   * key_file and sigalg are NULL, auth is TB_AUTH_NONE. An adapter whose library (build)
   * has no such PSK returns TB_UNSUPPORTED with the reason, never runs with certificates. */
  tb_psk psk;
  /* 1: the library frees a connection's record buffers while they are empty, between
   * records (OpenSSL's SSL_MODE_RELEASE_BUFFERS); TB_OK as well where it always does so
   * (no buffer is kept between records), TB_UNSUPPORTED where it cannot. 0: its default. */
  int release_buffers;
} tb_config;

/* ------------------------------------------------------------------------- results */

/* Read back from the library after a handshake, never copied from the config. */
typedef struct tb_negotiated {
  char version[16];         /* "1.2" or "1.3" */
  char suite[TB_NAME_LEN];  /* IANA name */
  char group[TB_NAME_LEN];  /* names as in tb_config.group; "" when none was used */
  char sigalg[TB_NAME_LEN]; /* IANA SignatureScheme of the server's CertificateVerify /
                               ServerKeyExchange; "" when none was used */
  int peer_verified;        /* 1: this side verified the peer's chain successfully */
  int resumed;              /* 1: this handshake resumed a session */
  /* IANA SignatureScheme of the client's CertificateVerify (mutual auth, full handshake):
   * the client reads its own, the server its peer's; "" when the client did not sign (auth
   * not mutual, resumed). */
  char client_sigalg[TB_NAME_LEN];
  /* A full handshake keyed by the external pre-shared key: TB_PSK_KE or TB_PSK_DHE, read
   * back from the library (TLS 1.2: the negotiated suite's key exchange; TLS 1.3: the
   * ServerHello's pre_shared_key and key_share, where the library does not say);
   * TB_PSK_NONE after a certificate handshake. Not read on resumed handshakes. */
  int psk;
} tb_negotiated;

/* Build facts for `info` and the JSON output: NULL-terminated arrays of strings. */
typedef struct tb_info {
  char version[TB_NAME_LEN];        /* as the library reports it at run time */
  const char *const *build_options; /* "NAME=VALUE" strings the library reports */
  const char *const *versions;      /* "1.2", "1.3" supported by this build */
  const char *const *suites;        /* IANA names this build can negotiate */
  const char *const *groups;
  const char *const *sigalgs;
  /* NULL, or why this build has no TLS at all (an AEAD-only library: versions and suites
   * are empty, and every TLS entry point returns TB_UNSUPPORTED with this reason). */
  const char *no_tls;
  /* NULL, or why this build's contexts cannot be used by several threads at once (built
   * without the library's threading option): `--threads` above 1 is then unsupported, with
   * this reason. */
  const char *no_threads;
} tb_info;

/* ------------------------------------------------------------------------- AEAD */

typedef enum tb_aead_alg {
  TB_AES_128_GCM = 0,
  TB_AES_256_GCM = 1,
  TB_CHACHA20_POLY1305 = 2,
} tb_aead_alg;

#define TB_AEAD_NONCE_LEN 12
#define TB_AEAD_TAG_LEN 16

/* ------------------------------------------------------------------------- randomness */

/* A source of random bytes the core hands to an adapter: fills `out` with `len` bytes. The
 * core's fixed stream (`--deterministic`) gives the same bytes in the same order in every
 * process, so that two runs of a scenario do the same work. Not random: never a key. */
typedef void (*tb_random_fn)(unsigned char *out, size_t len);

/* What an adapter's derandomize did, recorded with the run's output. */
typedef struct tb_randomness {
  /* 1: every random value the library draws now comes from the stream. 0: the library keeps
   * its own randomness (it has no hook at run time), and `how` says why its instructions do
   * not depend on the values it draws. */
  int seeded;
  char how[TB_ERR_LEN]; /* the hook used, in a sentence (or why there is none) */
} tb_randomness;

/* ------------------------------------------------------------------------- the adapter */

/* An adapter is three const tables of functions, each defined beside the functions it
 * lists (as BearSSL's variants are): the library's TLS (tb_tls_class), its own AEAD API
 * (tb_aead_class) and the library as a whole (tb_adapter). */

/* The library's TLS: contexts, connections, handshakes, records, read-back, sessions. An
 * AEAD-only library returns TB_UNSUPPORTED from ctx_new, with the reason. */
typedef struct tb_tls_class {
  /* A context (SSL_CTX, mbedtls_ssl_config, ...) for one side: certificates, keys, the
   * pinned offer. Returns TB_UNSUPPORTED when the config cannot be honoured. */
  tb_status (*ctx_new)(const tb_config *cfg, void **ctx, char *err);
  void (*ctx_free)(void *ctx);

  /* A connection on a transport. `session` is NULL or a session from session_get of an
   * earlier connection of the same client context, to resume. */
  tb_status (*conn_new)(void *ctx, const tb_transport *transport, void *session, void **conn,
                        char *err);
  void (*conn_free)(void *conn);

  /* One step of the handshake: TB_OK when complete, TB_WANT_IO to be called again. */
  tb_status (*handshake)(void *conn, char *err);

  /* Writes up to len bytes of application data as records; *done = bytes consumed.
   * TB_WANT_IO with *done == 0 means: call again after the peer reads. */
  tb_status (*write)(void *conn, const unsigned char *buf, size_t len, size_t *done, char *err);

  /* Reads up to len bytes of application data; *done = bytes read; TB_WANT_IO when no
   * complete record is available yet. */
  tb_status (*read)(void *conn, unsigned char *buf, size_t len, size_t *done, char *err);

  /* Optional (NULL: the library cannot): sends close_notify, the orderly end of a
   * connection that real peers expect (without it, `openssl s_client` and `gnutls-cli`
   * report a truncated connection). One attempt; no reply is waited for. */
  tb_status (*close)(void *conn, char *err);

  /* What was negotiated, read back from the library. */
  tb_status (*negotiated)(void *conn, tb_negotiated *out, char *err);

  /* After a completed handshake on a client: a session to resume later (caller frees). */
  tb_status (*session_get)(void *conn, void **session, char *err);
  void (*session_free)(void *session);

  /* Optional (NULL when the library allocates with malloc): a library that serves a
   * connection from a memory pool of its own (wolfSSL's static-memory build) says how many
   * bytes of its pool the connection holds now and held at most since conn_new, as the
   * library itself counts them. The malloc accounting sees only the pool's one allocation
   * at context set-up, so without this such a connection's heap would read as ~0.
   * TB_UNSUPPORTED: this build has no pool. */
  tb_status (*pool_use)(void *conn, uint64_t *peak, uint64_t *current, char *err);
} tb_tls_class;

/* The library's own AEAD API (not TLS), which the `aead` scenario times. create: a context
 * keyed with `key`. seal: out = ciphertext || 16-byte tag (len + TB_AEAD_TAG_LEN bytes).
 * open: in = ciphertext || tag; TB_FAILED when the tag does not verify. A library without
 * an AEAD API returns TB_UNSUPPORTED from create, with the reason. */
typedef struct tb_aead_class {
  tb_status (*create)(tb_aead_alg alg, const unsigned char *key, size_t key_len, void **aead,
                      char *err);
  tb_status (*seal)(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                    const unsigned char *ad, size_t ad_len, const unsigned char *in, size_t len,
                    unsigned char *out, char *err);
  tb_status (*open)(void *aead, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                    const unsigned char *ad, size_t ad_len, const unsigned char *in, size_t len,
                    unsigned char *out, char *err);
  void (*free)(void *aead);
} tb_aead_class;

typedef struct tb_adapter {
  const char *name; /* the library: "mbedtls", "wolfssl", "openssl", "gnutls", "null" */

  /* Once per process, before anything else (allocator hooks, PSA init, providers).
   * The core charges what it allocates to neither side ("global"). */
  tb_status (*global_init)(char *err);
  void (*global_cleanup)(void);

  /* Version and build facts (pointers stay valid until global_cleanup). */
  tb_status (*info)(tb_info *out, char *err);

  /* Optional (NULL when the library exposes nothing): the CPU code paths the library has
   * selected at run time, as it reports them after global_init, e.g. OpenSSL's capability
   * vector as read back. Written into `out` (NUL-terminated); shown with every result, so
   * that "accel off" is seen to be in effect. */
  void (*cpu_paths)(char *out, size_t len);

  /* Deterministic randomness (`--deterministic`, which the runner passes in instruction
   * mode only): called once, before global_init, when the run asks for it, so that the
   * instructions of a handshake are the same in every run. From then on every random value
   * the library draws (client and server randoms, key shares, RSA blinding and salts,
   * ticket keys) comes from `fill`, through the library's own hook (an RNG callback, a DRBG
   * seeded from `fill`, a test provider): out->seeded = 1, out->how names the hook. A
   * library without a hook at run time whose work does not depend on the values it draws
   * (constant-time code throughout, measured so) keeps its randomness: out->seeded = 0,
   * out->how says so and why. Both TB_OK. TB_UNSUPPORTED, with the reason, when neither
   * holds for this build; NULL: the same, without a reason of the adapter's own. */
  tb_status (*derandomize)(tb_random_fn fill, tb_randomness *out, char *err);

  const tb_tls_class *tls;
  const tb_aead_class *aead;
} tb_adapter;

/* Provided by exactly one adapter per driver executable. */
extern const tb_adapter tb_adapter_impl;

/* ------------------------------------------------------------------------- read-back state */

/*
 * The rule for read-back state. What an adapter keeps only to prove what was negotiated
 * (bytes seen on the wire, traffic secrets to open them, what it found in them) is
 *  - never counted in the library's heap: it lives in memory from tb_readback_alloc below
 *    (charged to no side, as the harness's own buffers), in static or thread-local storage,
 *    or in the library's own objects where the library keeps it anyway; never in a structure
 *    the adapter allocates per connection or context with malloc;
 *  - never parsed inside a timed call (ctx_new, conn_new, handshake, write, read): the I/O
 *    path may copy bytes aside, and negotiated(), which the core calls after the clock
 *    stopped, parses them.
 * The adapters that read the wire share one record reader (adapters/tls_wire.h, tb_wire):
 * mbedTLS (group, signature schemes, resumption, the pre-shared key's mode, the
 * HelloRetryRequest), rustls (signature schemes), BearSSL (signature schemes, resumption)
 * and NSS (the client's signature scheme, mutual auth; the TLS 1.3 records opened with the
 * client's handshake traffic secret, which its secret callback copies aside through
 * tb_readback_call) copy both directions of the handshake there and parse them in
 * negotiated(); their connection holds one pointer to it. The others ask their library, in
 * negotiated():
 *  - OpenSSL, wolfSSL (its internal.h), GnuTLS, s2n-tls (s2n_connection_get_*), NSS
 *    (SSL_GetChannelInfo, for the rest): the library's API alone; BoringSSL asks its
 *    API for the scheme it signed with at handshake end (an info callback: no parsing);
 *  - two exceptions, for a message the library hands over only while it passes (inside the
 *    timed call) and frees after: OpenSSL's TLS 1.3 PSK runs note the ServerHello's
 *    pre_shared_key and key_share, and AWS-LC notes the scheme it signed its own
 *    CertificateVerify or ServerKeyExchange with, from a message callback that reads a few
 *    bytes at known offsets of that one message (no record framing, no copy) into the
 *    adapter's connection (a few bytes, counted with it);
 *  - Botan, which reports what it negotiated only through its callbacks, while they run: its
 *    session summary (version, suite, resumption, TLS 1.3 group), the group it agrees a key
 *    in, the key type and padding it signs and verifies with; the adapter notes these few
 *    values into tb_readback_alloc memory and maps them to names in negotiated();
 *  - HACL* (no TLS) and null: nothing to read back.
 */

/* Memory for an adapter's read-back state: zeroed, charged to no side (neither the
 * connection's heap nor the context's), released with tb_readback_free (NULL: nothing). It
 * is a malloc like any other, so an adapter reuses it rather than allocating in every
 * timed call (tb_wire keeps a free list). */
void *tb_readback_alloc(size_t len);
void tb_readback_free(void *p);

/* Runs fn(arg) as the harness's own work, from inside a library call (a callback the
 * library makes while the handshake runs): what it allocates, through the library or not, is
 * charged to no side, and stays the harness's when the library frees it later; the locks it
 * takes are counted to no side either. For a value the library hands over only then and
 * only through a call that allocates: NSS's handshake traffic secret is a PKCS#11 object,
 * whose bytes come out only by an attribute read that keeps a copy in the key object
 * (PK11_ExtractKeyValue). Its time stays in the timed call around it: keep it small. */
void tb_readback_call(void (*fn)(void *arg), void *arg);

/* Helper for adapters: formats `err` (printf-style) and returns `status`. */
tb_status tb_fail(char *err, tb_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif /* TLSBENCH_DRIVER_H */
