/*
 * What the adapters of the libraries with OpenSSL's API (openssl.c, awslc.c, boringssl.c)
 * share, in one unit (openssl_family.c) compiled with each of them against that library's
 * headers: the error text, the BIO method that joins the library to a tb_transport, the
 * context and connection life cycle around what each library does its own way, and, for
 * the two with BoringSSL's API (code points for groups and signature schemes, EVP_AEAD),
 * the pinning, the read-back of names and the AEAD.
 *
 * What differs stays in each adapter and reaches the shared code through one const table
 * of functions and facts per adapter, tb_ossl_class (the way BearSSL's variants are tables
 * of functions).
 */
#ifndef TLSBENCH_OPENSSL_FAMILY_H
#define TLSBENCH_OPENSSL_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tlsbench/driver.h"
#include "tlsbench/names.h"

#if defined(OPENSSL_IS_BORINGSSL) || defined(OPENSSL_IS_AWSLC)
#define TB_BSSL_API 1 /* BoringSSL's API: BoringSSL and AWS-LC */
#endif

/* A PSK run's key and identity, which the library's PSK callbacks hand over. */
typedef struct tb_ossl_psk {
  tb_psk_mode mode; /* TB_PSK_NONE: no PSK */
  unsigned char key[64];
  size_t key_len;
  char identity[128];
  char hash[8]; /* TLS 1.3: "SHA256" or "SHA384" */
} tb_ossl_psk;

/* A context: the library's, the side, (client) the server name to send, and the PSK (the
 * SSL_CTX's app data points here, for the PSK callbacks). */
typedef struct tb_ossl_ctx {
  SSL_CTX *ctx;
  tb_role role;
  char server_name[256]; /* client: SNI */
  tb_ossl_psk psk;
} tb_ossl_ctx;

/* What every adapter's connection starts with. */
typedef struct tb_ossl_conn {
  SSL *ssl;
  tb_transport transport; /* the BIO's data points here */
} tb_ossl_conn;

typedef struct tb_ossl_class tb_ossl_class;

/* One adapter's own ways, in the order a context is configured. */
struct tb_ossl_class {
  const char *library; /* "OpenSSL", "AWS-LC", "BoringSSL": in messages */
  size_t conn_size;    /* the adapter's connection object, which starts with tb_ossl_conn */
  void (*conn_free)(void *conn); /* frees it (ending with tb_ossl_conn_release) */
  /* Message or info callbacks, before anything is pinned (NULL: none). */
  void (*set_callbacks)(SSL_CTX *ctx);
  /* Pins the offer to exactly the request: the suite (its key exchange NID into *kx_nid),
   * the groups and the signature schemes. */
  tb_status (*pin_offer)(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg, int *kx_nid,
                         char *err);
  /* After the own chain is loaded: what the certificate rules out (TLS 1.2 ECDSA curves). */
  tb_status (*check_chain)(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg, int kx_nid,
                           char *err);
  tb_status (*set_record_size)(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                               char *err);
  /* A PSK run, after the offer is pinned (the context's tb_ossl_psk is filled): the
   * library's PSK callbacks and what the mode needs. NULL: the library has no PSK. */
  tb_status (*set_psk)(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg, char *err);
  /* Client: the new-session callback that keeps each session the library hands over
   * (NULL: the client takes its session from the connection, caching none). */
  int (*new_session)(SSL *ssl, SSL_SESSION *session);
#ifdef TB_BSSL_API
  /* The groups and signature schemes the library implements, by code point; their names
   * are the core's (names.h), else the library's own. */
  const uint16_t *groups;
  size_t n_groups;
  const uint16_t *sigalgs;
  size_t n_sigalgs;
#endif
};

/* ------------------------------------------------------------------------- errors */

/* Formats "what: <every error on the library's queue>" and empties the queue. The queue is
 * per thread and both sides share this thread, so it must never carry over to the next
 * call. */
tb_status tb_ossl_fail(char *err, tb_status status, const char *what);

/* SSL_get_error needs an empty queue before each I/O call; peeking first is cheap. */
void tb_ossl_clear_stale_errors(void);

/* ------------------------------------------------------------------------- life cycle */

/* Once per process (the adapter's global_init): the adapter's class, which every context
 * and connection of the process then follows, and the BIO method of tb_transport. */
tb_status tb_ossl_global_init(const tb_ossl_class *cls, char *err);
void tb_ossl_global_cleanup(void);

/* The adapter's ctx_new and ctx_free. */
tb_status tb_ossl_ctx_new(const tb_config *cfg, void **out, char *err);
void tb_ossl_ctx_free(void *ctx);

/* The adapter's conn_new: a connection of cls->conn_size bytes (zeroed) on the transport,
 * the library's own socket BIO on `fd` (--io fd) or the tb_transport BIO; resuming
 * `session` if not NULL. */
tb_status tb_ossl_conn_new(void *ctx, const tb_transport *transport, void *session, void **out,
                           char *err);
/* Frees the SSL (and its BIO) and the connection object. */
void tb_ossl_conn_release(tb_ossl_conn *c);
/* The connection an SSL belongs to (its app data), for the library's callbacks. */
void *tb_ossl_conn_of(const SSL *ssl);

/* Sends close_notify (one attempt; the peer's is not waited for). */
tb_status tb_ossl_close(void *conn, char *err);

/* The adapter's write and read: application data through SSL_write / SSL_read. */
tb_status tb_ossl_write(void *conn, const unsigned char *buf, size_t len, size_t *done, char *err);
tb_status tb_ossl_read(void *conn, unsigned char *buf, size_t len, size_t *done, char *err);

/* The status of an SSL_* I/O call that returned `ret`, with the library's error text. */
tb_status tb_ossl_io_status(tb_ossl_conn *c, int ret, const char *what, char *err);

/* max_send_fragment for tb_config.record_size (what this side sends): 512..16384. */
tb_status tb_ossl_set_send_fragment(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                                    char *err);

/* ------------------------------------------------------------------------- pre-shared keys */

/* The PSK of the context `ssl` belongs to. */
const tb_ossl_psk *tb_ossl_psk_of(const SSL *ssl);
/* TLS 1.2 PSK and ECDHE-PSK suites: the client's and the server's callbacks, which give the
 * context's key for its identity (the server sends no identity hint). */
void tb_ossl_psk_tls12_callbacks(SSL_CTX *ctx);
/* The tb_psk_mode a TLS 1.2 suite's key exchange says (by its kx and auth NIDs). */
int tb_ossl_psk_mode_of_cipher(const SSL_CIPHER *cipher);

/* ------------------------------------------------------------------------- read-back */

/* "1.3", "1.2", or the library's own version string. */
void tb_ossl_version_name(const SSL *ssl, char out[16]);
/* Copies a name (NULL: "") into a TB_NAME_LEN field. */
void tb_ossl_copy_name(char *dst, const char *src);
/* Whether this side verified its peer's chain: it asked to, the peer presented one, and
 * the library's verification (chain and, on the client, host name) succeeded. */
int tb_ossl_peer_verified(const SSL *ssl);

/* The CPU paths of an x86 capability vector in OpenSSL's two-word format (OPENSSL_ia32cap):
 * "<label> ia32cap 0x...:0x...: AES-NI on, ...<tail>". */
void tb_ossl_describe_ia32cap(char *out, size_t len, const char *label, const uint32_t cap[4],
                              const char *tail);

#ifdef TB_BSSL_API
/* ------------------------------------------------------------------------- BoringSSL API */

/* A connection of BoringSSL's API: what its callbacks note. */
typedef struct tb_bssl_conn {
  tb_ossl_conn base;
  /* The scheme this side signed its CertificateVerify / ServerKeyExchange with, as the
   * library reported or sent it (0: it signed nothing). */
  uint16_t own_sigalg;
  /* Client: the newest session the library handed over (TLS 1.2 at handshake end, TLS 1.3
   * with each NewSessionTicket); owned here. */
  SSL_SESSION *session;
} tb_bssl_conn;

/* The groups (first `key_share`, when given, then `group`) and the signature schemes of
 * the request, by code point, among cls->groups and cls->sigalgs. */
tb_status tb_bssl_pin_groups(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                             int kx_nid, char *err);
tb_status tb_bssl_pin_sigalgs(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                              int kx_nid, char *err);
/* TLS 1.2 ECDSA: the certificate's curve must be the pinned group (RFC 8422). */
tb_status tb_bssl_check_chain(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg,
                              int kx_nid, char *err);
/* A PSK run (the class's set_psk): TLS 1.2 PSK suites through the shared callbacks; the API
 * has no TLS 1.3 external PSK. */
tb_status tb_bssl_set_psk(const tb_ossl_class *cls, SSL_CTX *ctx, const tb_config *cfg, char *err);
/* Keeps each session the library hands a client (SSL_CTX_sess_set_new_cb). */
int tb_bssl_keep_new_session(SSL *ssl, SSL_SESSION *session);
void tb_bssl_conn_free(void *conn);

/* A group's or signature scheme's name: the core's, the library's own, or the number. */
void tb_bssl_group_name(uint16_t id, char out[TB_NAME_LEN]);
void tb_bssl_sigalg_name(uint16_t id, char out[TB_NAME_LEN]);
/* The group the handshake used ("" for static RSA and abbreviated TLS 1.2 handshakes). */
void tb_bssl_read_group(const SSL *ssl, const SSL_CIPHER *cipher, char out[TB_NAME_LEN]);
/* The names of cls->groups / cls->sigalgs this build can use, into `out` (NULL-ended);
 * `usable` decides one entry on `probe`. */
void tb_bssl_list(const uint16_t *ids, size_t n, int sigalgs, SSL_CTX *probe,
                  int (*usable)(SSL_CTX *probe, uint16_t id), const char **out);

/* The library's own AEAD API (EVP_AEAD): one keyed context seals and opens. */
extern const tb_aead_class tb_bssl_aead;
#endif /* TB_BSSL_API */

#endif /* TLSBENCH_OPENSSL_FAMILY_H */
