/*
 * NSS adapter (Mozilla's TLS library, on NSPR).
 *
 * I/O: NSS reads and writes through NSPR file descriptors; the adapter's own bottom layer
 * (PR_CreateIOLayerStub with a PRIOMethods table of its own) carries tlsbench's transport
 * callbacks, and the SSL layer is pushed on top of it (SSL_ImportFD). Would-block is
 * PR_WOULD_BLOCK_ERROR, which NSS passes up from SSL_ForceHandshake / PR_Read / PR_Write.
 *
 * Certificates: no database. NSS_NoDB_Init gives the internal PKCS#11 module without any
 * file; the run's certificates are imported as temporary certificates
 * (CERT_NewTempCertificate), the CA marked as a trusted SSL CA (CERT_ChangeCertTrust), and
 * the PKCS#8 key as a session object of the internal key slot
 * (PK11_ImportDERPrivateKeyInfoAndReturnKey, not permanent): nothing is written to disk.
 * Verification is NSS's own (SSL_AuthCertificate: chain to the trusted CA, validity, key
 * usage, and the server name on the client), called from the auth-certificate hook so that
 * the adapter records its verdict.
 *
 * The offer of a side is pinned on a model socket that every connection copies
 * (SSL_ImportFD(model, ...)): one version (SSL_VersionRangeSet), one suite (every other
 * implemented suite disabled with SSL_CipherPrefSet), the groups (SSL_NamedGroupConfig,
 * one key share), one signature scheme (SSL_SignatureSchemePrefSet; two, by order, for a
 * client scheme apart from the server's: pin_sigalg). Read-back is SSL_GetChannelInfo
 * (version, suite, keaGroup, signatureScheme, resumed), and the client's CertificateVerify
 * scheme, which NSS does not report, off the wire (cv_seen; in TLS 1.3 opened with the
 * client's handshake traffic secret from NSS's secret callback).
 *
 * Sessions: the client takes NSS's resumption tokens (SSL_SetResumptionTokenCallback) and
 * offers one with SSL_SetResumptionToken, instead of NSS's process-wide client cache; the
 * server resumes from tickets (SSL_ENABLE_SESSION_TICKETS), encrypted with NSS's
 * per-process ticket key. NSS hands a client a token only for a ticket (sslnonce.c's
 * ssl_CacheExternalToken), and its TLS 1.2 server sends a ticket only on a full
 * handshake: a resumed TLS 1.2 connection hands over the session it offered again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cert.h>
#include <certdb.h>
#include <keyhi.h>
#include <nss.h>
#include <nssb64.h>
#include <pk11pub.h>
#include <prerror.h>
#include <prinit.h>
#include <prio.h>
#include <prnetdb.h>
#include <secerr.h>
#include <ssl.h>
#include <sslerr.h>
#include <sslexp.h>
#include <sslproto.h>

#include "tlsbench/driver.h"
#include "tlsbench/names.h"
#include "tls_wire.h"

/* ------------------------------------------------------------------------- errors */

/* NSS's error name and text for the thread's last error (PR_GetError). */
static tb_status nss_fail(char *err, tb_status st, const char *what) {
  PRErrorCode code = PR_GetError();
  const char *name = PR_ErrorToName(code);
  const char *text = PR_ErrorToString(code, PR_LANGUAGE_I_DEFAULT);
  return tb_fail(err, st, "%s: %s (%s)", what, name ? name : "unknown error",
                 text && text[0] ? text : "no text");
}

/* ------------------------------------------------------------------------- files */

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  size_t got;
  while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *bigger = realloc(buf, 2 * cap + 1);
      if (bigger == NULL) free(buf);
      buf = bigger;
      cap *= 2;
    }
  }
  fclose(f);
  if (buf == NULL) return NULL;
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* The DER of every PEM block labelled `label` in the file, in order (at most `max`); the
 * items are NSS's (SECITEM_FreeItem). Returns how many, -1 when the file cannot be read. */
static int pem_blocks(const char *path, const char *label, SECItem **out, int max) {
  size_t len = 0;
  char *text = read_file(path, &len);
  if (text == NULL) return -1;
  char begin[64], end[64];
  snprintf(begin, sizeof(begin), "-----BEGIN %s-----", label);
  snprintf(end, sizeof(end), "-----END %s-----", label);
  int n = 0;
  for (char *p = strstr(text, begin); p != NULL && n < max; p = strstr(p, begin)) {
    p += strlen(begin);
    char *q = strstr(p, end);
    if (q == NULL) break;
    out[n] = NSSBase64_DecodeBuffer(NULL, NULL, p, (unsigned)(q - p));
    if (out[n] == NULL) break;
    n++;
    p = q + strlen(end);
  }
  free(text);
  return n;
}

/* ------------------------------------------------------------------------- the I/O layer */

typedef struct nss_conn nss_conn;

/* The client's CertificateVerify read off the wire (mutual auth), because NSS reports only
 * the server's signature scheme (SSLChannelInfo.signatureScheme is the server's own on the
 * server, and the one it checked on the client). The I/O layer only copies the bytes that
 * pass (tb_wire_keep, off the heap: driver.h's read-back rule), and negotiated() finds the
 * message in them after the clock stopped. In TLS 1.2 the client's handshake records are
 * plaintext until its ChangeCipherSpec. In TLS 1.3 they are encrypted under the client's
 * handshake traffic secret, which NSS hands to the secret callback (SSL_SecretCallback) as
 * a PKCS#11 key: the callback copies its bytes into the reader's key room (secret_seen), and
 * negotiated() opens the records with NSS's own TLS 1.3 AEAD (SSL_MakeAead, which derives
 * the record key and IV from the secret as the record layer does, and SSL_AeadDecrypt). */
typedef struct cv_seen {
  int parsed;
  unsigned char scheme[2]; /* the CertificateVerify's first two bytes: its SignatureScheme */
  int found;
} cv_seen;
_Static_assert(sizeof(cv_seen) <= TB_WIRE_EXTRA, "cv_seen outgrew the tb_wire's extra");

/* The client's handshake traffic secret, as the secret callback saw it (in tb_wire_keys). */
typedef struct secret_seen {
  unsigned len; /* 0: not seen */
  unsigned char bytes[64];
} secret_seen;
_Static_assert(sizeof(secret_seen) <= TB_WIRE_KEYS, "secret_seen outgrew the tb_wire's keys");

static void cv_message(void *arg, unsigned type, const unsigned char *body, size_t len) {
  cv_seen *seen = arg;
  if (type == TB_HS_CERTIFICATE_VERIFY && len >= 2 && !seen->found) {
    memcpy(seen->scheme, body, 2);
    seen->found = 1;
  }
}

static PRDescIdentity g_layer;
static PRIOMethods g_methods;

/* The transport behind a bottom-layer descriptor (NULL for a model socket's). */
static const tb_transport *layer_transport(PRFileDesc *fd);
/* The bytes of a connection whose client's CertificateVerify is read back (NULL: none, or
 * a model socket). */
static tb_wire *layer_wire(PRFileDesc *fd);

static PRInt32 layer_recv(PRFileDesc *fd, void *buf, PRInt32 amount, PRIntn flags,
                          PRIntervalTime timeout) {
  (void)flags, (void)timeout;
  const tb_transport *t = layer_transport(fd);
  if (t == NULL) {
    PR_SetError(PR_NOT_CONNECTED_ERROR, 0);
    return -1;
  }
  long n = t->recv(t->io, buf, (size_t)amount);
  tb_wire *w = n > 0 ? layer_wire(fd) : NULL;
  if (w != NULL) tb_wire_keep(w, TB_WIRE_IN, buf, (size_t)n);
  if (n >= 0) return (PRInt32)n; /* 0: the peer closed the stream */
  PR_SetError(n == TB_IO_WOULD_BLOCK ? PR_WOULD_BLOCK_ERROR : PR_IO_ERROR, 0);
  return -1;
}

static PRInt32 layer_read(PRFileDesc *fd, void *buf, PRInt32 amount) {
  return layer_recv(fd, buf, amount, 0, PR_INTERVAL_NO_WAIT);
}

static PRInt32 layer_send(PRFileDesc *fd, const void *buf, PRInt32 amount, PRIntn flags,
                          PRIntervalTime timeout) {
  (void)flags, (void)timeout;
  const tb_transport *t = layer_transport(fd);
  if (t == NULL) {
    PR_SetError(PR_NOT_CONNECTED_ERROR, 0);
    return -1;
  }
  long n = t->send(t->io, buf, (size_t)amount);
  tb_wire *w = n > 0 ? layer_wire(fd) : NULL;
  if (w != NULL) tb_wire_keep(w, TB_WIRE_OUT, buf, (size_t)n);
  if (n > 0) return (PRInt32)n;
  PR_SetError(n == 0 || n == TB_IO_WOULD_BLOCK ? PR_WOULD_BLOCK_ERROR : PR_IO_ERROR, 0);
  return -1;
}

static PRInt32 layer_write(PRFileDesc *fd, const void *buf, PRInt32 amount) {
  return layer_send(fd, buf, amount, 0, PR_INTERVAL_NO_WAIT);
}

/* NSS keys its server session cache by the peer's address: one fixed loopback address, the
 * same for every connection, so that it never decides anything. */
static PRStatus layer_name(PRFileDesc *fd, PRNetAddr *addr) {
  (void)fd;
  return PR_InitializeNetAddr(PR_IpAddrLoopback, 443, addr);
}

/* The transport never blocks: NSS must treat would-block as such. */
static PRStatus layer_get_option(PRFileDesc *fd, PRSocketOptionData *data) {
  (void)fd;
  if (data->option == PR_SockOpt_Nonblocking) {
    data->value.non_blocking = PR_TRUE;
    return PR_SUCCESS;
  }
  PR_SetError(PR_OPERATION_NOT_SUPPORTED_ERROR, 0);
  return PR_FAILURE;
}

static PRStatus layer_set_option(PRFileDesc *fd, const PRSocketOptionData *data) {
  (void)fd, (void)data;
  return PR_SUCCESS;
}

static PRStatus layer_shutdown(PRFileDesc *fd, PRIntn how) {
  (void)fd, (void)how;
  return PR_SUCCESS;
}

static PRStatus layer_close(PRFileDesc *fd) {
  fd->secret = NULL;
  fd->dtor(fd); /* the stub's own destructor */
  return PR_SUCCESS;
}

static void layer_init(void) {
  g_layer = PR_GetUniqueIdentity("tlsbench transport");
  g_methods = *PR_GetDefaultIOMethods();
  g_methods.close = layer_close;
  g_methods.read = layer_read;
  g_methods.write = layer_write;
  g_methods.recv = layer_recv;
  g_methods.send = layer_send;
  g_methods.getpeername = layer_name;
  g_methods.getsockname = layer_name;
  g_methods.getsocketoption = layer_get_option;
  g_methods.setsocketoption = layer_set_option;
  g_methods.shutdown = layer_shutdown;
}

/* A bottom layer whose transport is `conn`'s (NULL: none, for a model socket). */
static PRFileDesc *layer_new(nss_conn *conn) {
  PRFileDesc *fd = PR_CreateIOLayerStub(g_layer, &g_methods);
  if (fd != NULL) fd->secret = (PRFilePrivate *)conn;
  return fd;
}

/* ------------------------------------------------------------------------- names */

static int is_static_rsa(const SSLCipherSuiteInfo *si) { return si->keaType == ssl_kea_rsa; }

/* The SSLNamedGroup of a tlsbench group name: NSS numbers groups by their IANA code. */
static int group_of(const char *name, SSLNamedGroup *out) {
  const tb_name *n = name ? tb_name_find(tb_group_names, name) : NULL;
  if (n == NULL) return 0;
  *out = (SSLNamedGroup)n->code;
  return 1;
}

static int nss_has_group(SSLNamedGroup g) {
  switch ((int)g) {
    case ssl_grp_ec_curve25519:
    case ssl_grp_ec_secp256r1:
    case ssl_grp_ec_secp384r1:
    case ssl_grp_ec_secp521r1:
    case ssl_grp_ffdhe_2048:
    case ssl_grp_ffdhe_3072:
    case ssl_grp_ffdhe_4096:
    case ssl_grp_ffdhe_6144:
    case ssl_grp_ffdhe_8192:
    case ssl_grp_kem_mlkem768x25519:
      return 1;
    default:
      return 0;
  }
}

/* ------------------------------------------------------------------------- context */

#define MAX_CHAIN 8

typedef struct nss_ctx {
  tb_role role;
  tb_auth auth;
  int tls;
  int resumption;
  char server_name[256];
  PRFileDesc *model;                 /* the SSL model socket: the pinned offer */
  CERTCertificate *chain[MAX_CHAIN]; /* own chain, leaf first (temporary certificates) */
  int chain_len;
  CERTCertificate *anchors[MAX_CHAIN]; /* trusted CAs (temporary certificates) */
  int anchors_len;
  SECKEYPrivateKey *key;
  CERTCertificateList *sent_chain; /* the server's chain as it is sent */
} nss_ctx;

static void nss_ctx_free(void *p) {
  nss_ctx *c = p;
  if (c == NULL) return;
  if (c->model) PR_Close(c->model);
  if (c->sent_chain) CERT_DestroyCertificateList(c->sent_chain);
  if (c->key) SECKEY_DestroyPrivateKey(c->key);
  for (int i = 0; i < c->chain_len; i++) CERT_DestroyCertificate(c->chain[i]);
  for (int i = 0; i < c->anchors_len; i++) CERT_DestroyCertificate(c->anchors[i]);
  free(c);
}

/* Every certificate of a PEM file, imported as temporary certificates. */
static tb_status import_certs(const char *path, CERTCertificate **out, int *n, char *err) {
  SECItem *der[MAX_CHAIN];
  int count = pem_blocks(path, "CERTIFICATE", der, MAX_CHAIN);
  if (count <= 0) return tb_fail(err, TB_FAILED, "%s: no certificate read", path);
  tb_status st = TB_OK;
  for (int i = 0; i < count; i++) {
    if (st == TB_OK) {
      out[*n] = CERT_NewTempCertificate(CERT_GetDefaultCertDB(), der[i], NULL, PR_FALSE, PR_TRUE);
      if (out[*n] == NULL)
        st = nss_fail(err, TB_FAILED, path);
      else
        (*n)++;
    }
    SECITEM_FreeItem(der[i], PR_TRUE);
  }
  return st;
}

/* The leaf's public value, which names the private key object (CKA_ID) as NSS names the
 * certificate's, so that the two are found together. */
static SECItem *public_value(SECKEYPublicKey *pub) {
  switch (pub->keyType) {
    case rsaKey:
      return &pub->u.rsa.modulus;
    case ecKey:
    case edKey:
      return &pub->u.ec.publicValue;
    default:
      return NULL;
  }
}

static tb_status import_key(nss_ctx *c, const char *path, char *err) {
  SECItem *der[1];
  if (pem_blocks(path, "PRIVATE KEY", der, 1) != 1)
    return tb_fail(err, TB_FAILED, "%s: no PKCS#8 private key read", path);
  SECKEYPublicKey *pub = CERT_ExtractPublicKey(c->chain[0]);
  PK11SlotInfo *slot = PK11_GetInternalKeySlot();
  tb_status st = TB_OK;
  if (pub == NULL || slot == NULL) {
    st = nss_fail(err, TB_FAILED, "the leaf's public key");
  } else if (PK11_ImportDERPrivateKeyInfoAndReturnKey(slot, der[0], NULL, public_value(pub),
                                                      PR_FALSE, PR_TRUE, KU_ALL, &c->key,
                                                      NULL) != SECSuccess) {
    c->key = NULL;
    st = nss_fail(err, TB_FAILED, path);
  }
  if (slot) PK11_FreeSlot(slot);
  if (pub) SECKEY_DestroyPublicKey(pub);
  SECITEM_FreeItem(der[0], PR_TRUE);
  return st;
}

/* The CA certificates of ca_file, trusted to issue SSL server and client certificates. */
static tb_status import_anchors(nss_ctx *c, const char *path, char *err) {
  tb_status st = import_certs(path, c->anchors, &c->anchors_len, err);
  CERTCertTrust trust = {CERTDB_TRUSTED_CA | CERTDB_TRUSTED_CLIENT_CA | CERTDB_VALID_CA, 0, 0};
  for (int i = 0; st == TB_OK && i < c->anchors_len; i++) {
    if (CERT_ChangeCertTrust(CERT_GetDefaultCertDB(), c->anchors[i], &trust) != SECSuccess)
      st = nss_fail(err, TB_FAILED, "trusting the CA");
  }
  return st;
}

/* The chain the server sends: the file's certificates in its order (leaf first), nothing
 * looked up or added. */
static tb_status server_chain(nss_ctx *c, char *err) {
  PLArenaPool *arena = PORT_NewArena(2048);
  CERTCertificateList *list = arena ? PORT_ArenaZNew(arena, CERTCertificateList) : NULL;
  if (list != NULL) list->certs = PORT_ArenaZNewArray(arena, SECItem, c->chain_len);
  if (list == NULL || list->certs == NULL) {
    if (arena) PORT_FreeArena(arena, PR_FALSE);
    return tb_fail(err, TB_FAILED, "out of memory");
  }
  list->arena = arena;
  list->len = c->chain_len;
  for (int i = 0; i < c->chain_len; i++) {
    if (SECITEM_CopyItem(arena, &list->certs[i], &c->chain[i]->derCert) != SECSuccess) {
      CERT_DestroyCertificateList(list);
      return tb_fail(err, TB_FAILED, "out of memory");
    }
  }
  c->sent_chain = list;
  return TB_OK;
}

static tb_status set_option(PRFileDesc *fd, PRInt32 option, PRIntn value, const char *name,
                            char *err) {
  if (SSL_OptionSet(fd, option, value) != SECSuccess) return nss_fail(err, TB_FAILED, name);
  return TB_OK;
}

/* One suite: every implemented suite off, then the one asked. */
static tb_status pin_suite(const tb_config *cfg, PRFileDesc *fd, SSLCipherSuiteInfo *si,
                           char *err) {
  const tb_name *n = tb_name_find(tb_suite_names, cfg->suite);
  if (n == NULL || SSL_GetCipherSuiteInfo((PRUint16)n->code, si, sizeof(*si)) != SECSuccess)
    return tb_fail(err, TB_UNSUPPORTED, "suite %s: not implemented by NSS", cfg->suite);
  if ((n->tls == 13) != (cfg->tls_version == 13))
    return tb_fail(err, TB_UNSUPPORTED, "suite %s cannot be used with TLS 1.%d", cfg->suite,
                   cfg->tls_version - 10);
  if (si->authType == ssl_auth_psk || si->keaType == ssl_kea_tls13_any) {
    /* TLS 1.3 suites carry no key exchange; TLS 1.2 PSK suites NSS does not implement. */
  }
  const PRUint16 *ids = SSL_GetImplementedCiphers();
  for (PRUint16 i = 0; i < SSL_GetNumImplementedCiphers(); i++) {
    if (SSL_CipherPrefSet(fd, ids[i], PR_FALSE) != SECSuccess)
      return nss_fail(err, TB_FAILED, "SSL_CipherPrefSet");
  }
  if (SSL_CipherPrefSet(fd, (PRInt32)n->code, PR_TRUE) != SECSuccess)
    return nss_fail(err, TB_UNSUPPORTED, cfg->suite);
  return TB_OK;
}

static tb_status pin_groups(const tb_config *cfg, PRFileDesc *fd, const SSLCipherSuiteInfo *si,
                            char *err) {
  SSLNamedGroup groups[2];
  unsigned n = 0;
  if (cfg->tls_version == 12 && is_static_rsa(si)) {
    /* Static RSA uses no group; one is still configured so that the list is not empty. */
    groups[n++] = ssl_grp_ec_secp256r1;
  } else {
    if (cfg->role == TB_CLIENT && cfg->key_share != NULL) {
      if (!group_of(cfg->key_share, &groups[n]) || !nss_has_group(groups[n]))
        return tb_fail(err, TB_UNSUPPORTED, "key share group %s: not in NSS", cfg->key_share);
      n++;
    }
    if (!group_of(cfg->group, &groups[n]) || !nss_has_group(groups[n]))
      return tb_fail(err, TB_UNSUPPORTED, "group %s: not in NSS",
                     cfg->group ? cfg->group : "(none)");
    n++;
  }
  if (SSL_NamedGroupConfig(fd, groups, n) != SECSuccess)
    return nss_fail(err, TB_UNSUPPORTED, "SSL_NamedGroupConfig");
  /* One key share, for the first group offered (a HelloRetryRequest asks for another). */
  if (SSL_SendAdditionalKeyShares(fd, 0) != SECSuccess)
    return nss_fail(err, TB_FAILED, "SSL_SendAdditionalKeyShares");
  /* TLS 1.2 DHE: the RFC 7919 group both offered, never the server's own parameters. */
  tb_status st =
      set_option(fd, SSL_REQUIRE_DH_NAMED_GROUPS, PR_TRUE, "SSL_REQUIRE_DH_NAMED_GROUPS", err);
  if (st == TB_OK && cfg->role == TB_SERVER && si->keaType == ssl_kea_dh)
    st = set_option(fd, SSL_ENABLE_SERVER_DHE, PR_TRUE, "SSL_ENABLE_SERVER_DHE", err);
  return st;
}

/* Static RSA signs nothing, but a TLS 1.2 handshake needs a scheme for the client's
 * CertificateVerify and the signature_algorithms NSS sends. */
#define STATIC_RSA_SIGALG "rsa_pkcs1_sha256"

/* The SignatureScheme of a tlsbench name allowed in this version (one of pin_sigalg's). */
static tb_status sigalg_code(const tb_config *cfg, const char *name, SSLSignatureScheme *out,
                             char *err) {
  const tb_name *n = tb_name_find(tb_sigalg_names, name);
  if (n == NULL) return tb_fail(err, TB_UNSUPPORTED, "signature scheme %s: unknown", name);
  if (n->tls == 12 && cfg->tls_version == 13)
    return tb_fail(err, TB_UNSUPPORTED, "signature scheme %s is not allowed in TLS 1.3", name);
  *out = (SSLSignatureScheme)n->code;
  return TB_OK;
}

static tb_status pin_sigalg(const tb_config *cfg, PRFileDesc *fd, const SSLCipherSuiteInfo *si,
                            char *err) {
  const char *name = cfg->sigalg;
  if (name == NULL && cfg->tls_version == 12 && is_static_rsa(si)) name = STATIC_RSA_SIGALG;
  if (name == NULL)
    return tb_fail(err, TB_UNSUPPORTED, "suite %s needs a signature scheme", cfg->suite);
  SSLSignatureScheme schemes[2];
  unsigned n = 1;
  tb_status st = sigalg_code(cfg, name, &schemes[0], err);
  if (st != TB_OK) return st;
  /* One list (SSL_SignatureSchemePrefSet) serves NSS's own signature, what it accepts from
   * the peer and what it sends in signature_algorithms (and a CertificateRequest). NSS signs
   * with the first scheme of its own list that the peer offered (ssl3con.c's
   * ssl_PickSignatureScheme), so a client scheme apart from the server's is held by order:
   * both sides list both, each its own first (the server the server's, the client the
   * client's), and each signs with its own. */
  if (cfg->client_sigalg != NULL && strcmp(cfg->client_sigalg, name) != 0) {
    SSLSignatureScheme client;
    st = sigalg_code(cfg, cfg->client_sigalg, &client, err);
    if (st != TB_OK) return st;
    if (cfg->role == TB_CLIENT) {
      schemes[1] = schemes[0];
      schemes[0] = client;
    } else {
      schemes[1] = client;
    }
    n = 2;
  }
  if (SSL_SignatureSchemePrefSet(fd, schemes, n) != SECSuccess)
    return nss_fail(err, TB_UNSUPPORTED, name);
  return TB_OK;
}

static tb_status pin_offer(nss_ctx *c, const tb_config *cfg, char *err) {
  if (cfg->tls_version != 12 && cfg->tls_version != 13)
    return tb_fail(err, TB_UNSUPPORTED, "TLS version %d: NSS runs 1.2 and 1.3", cfg->tls_version);
  SSLVersionRange range = {
      cfg->tls_version == 13 ? SSL_LIBRARY_VERSION_TLS_1_3 : SSL_LIBRARY_VERSION_TLS_1_2,
      cfg->tls_version == 13 ? SSL_LIBRARY_VERSION_TLS_1_3 : SSL_LIBRARY_VERSION_TLS_1_2};
  if (SSL_VersionRangeSet(c->model, &range) != SECSuccess)
    return nss_fail(err, TB_UNSUPPORTED, "SSL_VersionRangeSet");
  SSLCipherSuiteInfo si;
  tb_status st = pin_suite(cfg, c->model, &si, err);
  if (st == TB_OK) st = pin_groups(cfg, c->model, &si, err);
  if (st == TB_OK) st = pin_sigalg(cfg, c->model, &si, err);
  return st;
}

static tb_status ctx_options(nss_ctx *c, const tb_config *cfg, char *err) {
  PRFileDesc *m = c->model;
  int server = cfg->role == TB_SERVER;
  tb_status st = set_option(m, SSL_SECURITY, PR_TRUE, "SSL_SECURITY", err);
  if (st == TB_OK)
    st = set_option(m, server ? SSL_HANDSHAKE_AS_SERVER : SSL_HANDSHAKE_AS_CLIENT, PR_TRUE,
                    "SSL_HANDSHAKE_AS_*", err);
  /* Without resumption: no session cache, no tickets (a TLS 1.3 server sends none). */
  if (st == TB_OK) st = set_option(m, SSL_NO_CACHE, !cfg->resumption, "SSL_NO_CACHE", err);
  if (st == TB_OK)
    st = set_option(m, SSL_ENABLE_SESSION_TICKETS, cfg->resumption != 0,
                    "SSL_ENABLE_SESSION_TICKETS", err);
  if (st == TB_OK && server) {
    int mutual = cfg->auth == TB_AUTH_MUTUAL;
    st = set_option(m, SSL_REQUEST_CERTIFICATE, mutual, "SSL_REQUEST_CERTIFICATE", err);
    if (st == TB_OK)
      st = set_option(m, SSL_REQUIRE_CERTIFICATE, mutual ? SSL_REQUIRE_ALWAYS : SSL_REQUIRE_NEVER,
                      "SSL_REQUIRE_CERTIFICATE", err);
  }
  if (st == TB_OK && cfg->record_size != 0) {
    /* RFC 8449 record_size_limit: what the peer may send; both sides set it, so both keep
     * to it. TLS 1.3's limit counts the inner content type byte. */
    if (cfg->record_size < 64 || cfg->record_size > 16384)
      return tb_fail(err, TB_UNSUPPORTED,
                     "record_size %zu: NSS's record_size_limit takes 64..16384", cfg->record_size);
    st = set_option(m, SSL_RECORD_SIZE_LIMIT,
                    (PRIntn)(cfg->record_size + (cfg->tls_version == 13 ? 1 : 0)),
                    "SSL_RECORD_SIZE_LIMIT", err);
  }
  return st;
}

static SECStatus client_auth_data(void *arg, PRFileDesc *fd, CERTDistNames *ca_names,
                                  CERTCertificate **cert, SECKEYPrivateKey **key);

static tb_status nss_ctx_new(const tb_config *cfg, void **out, char *err) {
  *out = NULL;
  if (cfg->psk.mode != TB_PSK_NONE)
    return tb_fail(err, TB_UNSUPPORTED,
                   "NSS has no TLS 1.2 PSK suites, and the adapter does not configure TLS 1.3 "
                   "external pre-shared keys (NSS would need SSL_AddExternalPsk)");
  /* NSS's client keeps no resumption token of a session that authenticated the client
   * (sslnonce.c's ssl_CacheExternalToken: "Don't export token if the session used client
   * authentication"), and the adapter resumes only from tokens. */
  if (cfg->auth == TB_AUTH_MUTUAL && cfg->resumption)
    return tb_fail(err, TB_UNSUPPORTED,
                   "resumption with mutual auth: NSS hands over no resumption token for a "
                   "session that authenticated the client");
  if (cfg->release_buffers)
    return tb_fail(err, TB_UNSUPPORTED,
                   "NSS keeps a connection's read and write buffers for its life: no option "
                   "frees them between records");
  nss_ctx *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->role = cfg->role;
  c->auth = cfg->auth;
  c->tls = cfg->tls_version;
  c->resumption = cfg->resumption;
  if (cfg->server_name) snprintf(c->server_name, sizeof(c->server_name), "%s", cfg->server_name);
  tb_status st = TB_OK;
  PRFileDesc *bottom = layer_new(NULL);
  c->model = bottom ? SSL_ImportFD(NULL, bottom) : NULL;
  if (c->model == NULL) {
    if (bottom) PR_Close(bottom);
    st = nss_fail(err, TB_FAILED, "SSL_ImportFD (model)");
  }
  if (st == TB_OK) st = ctx_options(c, cfg, err);
  if (st == TB_OK) st = pin_offer(c, cfg, err);
  if (st == TB_OK && cfg->role == TB_SERVER && cfg->chain_file == NULL)
    st = tb_fail(err, TB_FAILED, "a server needs chain_file and key_file");
  if (st == TB_OK && cfg->chain_file != NULL) {
    st = import_certs(cfg->chain_file, c->chain, &c->chain_len, err);
    if (st == TB_OK) st = import_key(c, cfg->key_file, err);
  }
  int verifies = cfg->role == TB_CLIENT ? cfg->auth != TB_AUTH_NONE : cfg->auth == TB_AUTH_MUTUAL;
  if (st == TB_OK && verifies) {
    st = cfg->ca_file ? import_anchors(c, cfg->ca_file, err)
                      : tb_fail(err, TB_FAILED, "verification needs ca_file");
  }
  if (st == TB_OK && cfg->role == TB_SERVER) {
    st = server_chain(c, err);
    SSLExtraServerCertData extra = {.authType = ssl_auth_null, .certChain = c->sent_chain};
    if (st == TB_OK &&
        SSL_ConfigServerCert(c->model, c->chain[0], c->key, &extra, sizeof(extra)) != SECSuccess)
      st = nss_fail(err, TB_FAILED, "SSL_ConfigServerCert");
  }
  if (st == TB_OK && cfg->role == TB_CLIENT && c->chain_len > 0 &&
      SSL_GetClientAuthDataHook(c->model, client_auth_data, c) != SECSuccess)
    st = nss_fail(err, TB_FAILED, "SSL_GetClientAuthDataHook");
  if (st != TB_OK) {
    nss_ctx_free(c);
    return st;
  }
  *out = c;
  return TB_OK;
}

/* ------------------------------------------------------------------------- connection */

/* A client's session: NSS's resumption token. Counted references: a TLS 1.2 connection
 * that resumed from a ticket gets no new one (NSS's server issues a NewSessionTicket only
 * on a full handshake, ssl3con.c's ssl3_HandleClientHello: "TODO: send a session ticket if
 * performing a stateful resumption"), and the ticket it offered stays valid, so the
 * session it hands over next is the one it was given. */
typedef struct nss_session {
  PRUint8 *token;
  unsigned len;
  unsigned refs;
} nss_session;

static void nss_session_free(void *p);

struct nss_conn {
  nss_ctx *ctx;
  tb_transport transport;
  PRFileDesc *fd; /* the SSL layer (top) */
  int verified;   /* the auth-certificate hook verified the peer's chain */
  PRUint8 *token; /* client: the newest resumption token NSS handed over */
  unsigned token_len;
  struct nss_session *offered; /* client: the session this connection offered (a reference) */
  tb_wire *wire; /* mutual auth: the handshake's bytes, for the client's scheme (cv_seen) */
};

static const tb_transport *layer_transport(PRFileDesc *fd) {
  nss_conn *c = (nss_conn *)fd->secret;
  return c ? &c->transport : NULL;
}

static tb_wire *layer_wire(PRFileDesc *fd) {
  nss_conn *c = (nss_conn *)fd->secret;
  return c ? c->wire : NULL;
}

/* The client's certificate and key, when the server asks (mutual auth). */
static SECStatus client_auth_data(void *arg, PRFileDesc *fd, CERTDistNames *ca_names,
                                  CERTCertificate **cert, SECKEYPrivateKey **key) {
  (void)fd, (void)ca_names;
  nss_ctx *x = arg;
  *cert = CERT_DupCertificate(x->chain[0]);
  *key = SECKEY_CopyPrivateKey(x->key);
  return *cert && *key ? SECSuccess : SECFailure;
}

/* NSS's own verification of the peer's chain (and, on the client, of the server's name,
 * set with SSL_SetURL); its verdict recorded. Without verification the chain is accepted
 * unchecked. */
static SECStatus auth_certificate(void *arg, PRFileDesc *fd, PRBool check_sig, PRBool is_server) {
  nss_conn *c = arg;
  int verifies =
      c->ctx->role == TB_CLIENT ? c->ctx->auth != TB_AUTH_NONE : c->ctx->auth == TB_AUTH_MUTUAL;
  if (!verifies) return SECSuccess;
  SECStatus rv = SSL_AuthCertificate(CERT_GetDefaultCertDB(), fd, check_sig, is_server);
  c->verified = rv == SECSuccess;
  return rv;
}

static SECStatus resumption_token(PRFileDesc *fd, const PRUint8 *token, unsigned int len,
                                  void *arg) {
  (void)fd;
  nss_conn *c = arg;
  PRUint8 *copy = malloc(len);
  if (copy == NULL) return SECFailure;
  memcpy(copy, token, len);
  free(c->token);
  c->token = copy;
  c->token_len = len;
  return SECSuccess;
}

/* The bytes of a traffic secret NSS holds as a PKCS#11 key, into the reader's key room. Run
 * as the harness's work (tb_readback_call): PK11_ExtractKeyValue reads the key's value into
 * a copy it keeps in NSS's key object until NSS frees the key, at the end of the handshake;
 * that copy is charged to no side. */
typedef struct secret_copy {
  PK11SymKey *key;
  secret_seen *out;
} secret_copy;

static void copy_secret(void *arg) {
  secret_copy *copy = arg;
  if (PK11_ExtractKeyValue(copy->key) != SECSuccess) return;
  const SECItem *value = PK11_GetKeyData(copy->key);
  if (value == NULL || value->data == NULL || value->len > sizeof(copy->out->bytes)) return;
  memcpy(copy->out->bytes, value->data, value->len);
  copy->out->len = value->len;
}

/* SSLSecretCallback: NSS calls it with each traffic secret it installs. Only the client's
 * handshake traffic secret is kept (epoch 2; the client's write secret, the server's read
 * one): it opens the records of the client's CertificateVerify. */
static void secret_callback(PRFileDesc *fd, PRUint16 epoch, SSLSecretDirection dir,
                            PK11SymKey *secret, void *arg) {
  (void)fd;
  nss_conn *c = arg;
  enum { HANDSHAKE_EPOCH = 2 }; /* sslexp.h: {client|server}_handshake_traffic_secret */
  int clients = c->ctx->role == TB_CLIENT ? dir == ssl_secret_write : dir == ssl_secret_read;
  secret_seen *out = c->wire ? tb_wire_keys(c->wire) : NULL;
  if (epoch != HANDSHAKE_EPOCH || !clients || out == NULL || out->len != 0) return;
  secret_copy copy = {secret, out};
  tb_readback_call(copy_secret, &copy);
}

static void nss_conn_free(void *p) {
  nss_conn *c = p;
  if (c == NULL) return;
  if (c->fd) PR_Close(c->fd); /* the SSL layer, then the bottom layer */
  free(c->token);
  nss_session_free(c->offered);
  tb_wire_free(c->wire);
  free(c);
}

static tb_status nss_conn_new(void *ctx, const tb_transport *transport, void *session, void **out,
                              char *err) {
  nss_ctx *x = ctx;
  *out = NULL;
  if (transport->fd >= 0)
    return tb_fail(err, TB_UNSUPPORTED,
                   "the adapter gives NSS only tlsbench's transport (an NSPR I/O layer): no "
                   "socket I/O of its own");
  if (transport->bio)
    return tb_fail(err, TB_UNSUPPORTED,
                   "NSS has no BIO layer besides its NSPR I/O layers (--io bio)");
  nss_conn *c = calloc(1, sizeof(*c));
  if (c == NULL) return tb_fail(err, TB_FAILED, "out of memory");
  c->ctx = x;
  c->transport = *transport;
  tb_status st = TB_OK;
  if (x->auth == TB_AUTH_MUTUAL && (c->wire = tb_wire_new()) == NULL)
    st = tb_fail(err, TB_FAILED, "out of memory (the read-back's bytes)");
  PRFileDesc *bottom = st == TB_OK ? layer_new(c) : NULL;
  c->fd = bottom ? SSL_ImportFD(x->model, bottom) : NULL;
  if (st == TB_OK && c->fd == NULL) {
    if (bottom) PR_Close(bottom);
    st = nss_fail(err, TB_FAILED, "SSL_ImportFD");
  }
  if (st == TB_OK && SSL_AuthCertificateHook(c->fd, auth_certificate, c) != SECSuccess)
    st = nss_fail(err, TB_FAILED, "SSL_AuthCertificateHook");
  if (st == TB_OK && x->tls == 13 && c->wire != NULL &&
      SSL_SecretCallback(c->fd, secret_callback, c) != SECSuccess)
    st = nss_fail(err, TB_FAILED, "SSL_SecretCallback");
  if (st == TB_OK && x->role == TB_CLIENT) {
    if (x->server_name[0] && SSL_SetURL(c->fd, x->server_name) != SECSuccess)
      st = nss_fail(err, TB_FAILED, "SSL_SetURL");
    if (st == TB_OK && x->resumption &&
        SSL_SetResumptionTokenCallback(c->fd, resumption_token, c) != SECSuccess)
      st = nss_fail(err, TB_FAILED, "SSL_SetResumptionTokenCallback");
  }
  if (st == TB_OK && SSL_ResetHandshake(c->fd, x->role == TB_SERVER) != SECSuccess)
    st = nss_fail(err, TB_FAILED, "SSL_ResetHandshake");
  /* After SSL_ResetHandshake, which would drop the session the token restores. */
  if (st == TB_OK && x->role == TB_CLIENT) {
    nss_session *s = session;
    if (st == TB_OK && s != NULL && SSL_SetResumptionToken(c->fd, s->token, s->len) != SECSuccess)
      st = nss_fail(err, TB_FAILED, "SSL_SetResumptionToken");
    if (st == TB_OK && s != NULL) {
      s->refs++;
      c->offered = s;
    }
  }
  if (st != TB_OK) {
    nss_conn_free(c);
    return st;
  }
  *out = c;
  return TB_OK;
}

static tb_status nss_handshake(void *p, char *err) {
  nss_conn *c = p;
  if (SSL_ForceHandshake(c->fd) == SECSuccess) return TB_OK;
  if (PR_GetError() == PR_WOULD_BLOCK_ERROR) return TB_WANT_IO;
  return nss_fail(err, TB_FAILED, "handshake");
}

static tb_status nss_write(void *p, const unsigned char *buf, size_t len, size_t *done, char *err) {
  nss_conn *c = p;
  *done = 0;
  PRInt32 n = PR_Write(c->fd, buf, (PRInt32)(len > 0x7fffffff ? 0x7fffffff : len));
  if (n >= 0) {
    *done = (size_t)n;
    return TB_OK;
  }
  if (PR_GetError() == PR_WOULD_BLOCK_ERROR) return TB_WANT_IO;
  return nss_fail(err, TB_FAILED, "write");
}

static tb_status nss_read(void *p, unsigned char *buf, size_t len, size_t *done, char *err) {
  nss_conn *c = p;
  *done = 0;
  PRInt32 n = PR_Read(c->fd, buf, (PRInt32)(len > 0x7fffffff ? 0x7fffffff : len));
  if (n > 0) {
    *done = (size_t)n;
    return TB_OK;
  }
  if (n == 0) return TB_CLOSED;
  if (PR_GetError() == PR_WOULD_BLOCK_ERROR) return TB_WANT_IO;
  return nss_fail(err, TB_FAILED, "read");
}

/* close_notify: NSS sends it when the SSL layer is shut down for writing. */
static tb_status nss_close(void *p, char *err) {
  nss_conn *c = p;
  if (PR_Shutdown(c->fd, PR_SHUTDOWN_SEND) != PR_SUCCESS && PR_GetError() != PR_WOULD_BLOCK_ERROR)
    return nss_fail(err, TB_FAILED, "PR_Shutdown");
  return TB_OK;
}

/* ------------------------------------------------------------------------- read back */

static void copy_name(char *dst, size_t size, const char *src) {
  snprintf(dst, size, "%s", src ? src : "");
}

/* Opens one of the client's TLS 1.3 handshake records (tb_record_open_fn) with NSS's AEAD:
 * the record header is the additional data, the sequence number the counter SSL_AeadDecrypt
 * XORs into the IV; 0 when the tag does not verify (a record under the next key). */
static size_t open_record(void *arg, uint64_t seq, const unsigned char header[5],
                          const unsigned char *body, size_t len, unsigned char *out) {
  unsigned int n = 0;
  if (SSL_AeadDecrypt(arg, seq, header, 5, body, (unsigned)len, out, &n, (unsigned)len) !=
      SECSuccess)
    return 0;
  return n;
}

/* TLS 1.3: the CertificateVerify in the client's protected handshake records (`dir` as this
 * connection saw them), opened under the client's handshake traffic secret. */
static tb_status read_protected(nss_conn *c, tb_wire_dir dir, PRUint16 suite, cv_seen *seen,
                                char *err) {
  const secret_seen *secret = tb_wire_keys(c->wire);
  if (secret == NULL || secret->len == 0)
    return tb_fail(err, TB_FAILED,
                   "NSS handed the secret callback no client handshake traffic secret (or its "
                   "value could not be read: PK11_ExtractKeyValue)");
  PK11SlotInfo *slot = PK11_GetInternalSlot();
  if (slot == NULL) return nss_fail(err, TB_FAILED, "PK11_GetInternalSlot");
  SECItem item = {siBuffer, (unsigned char *)secret->bytes, secret->len};
  /* As NSS's own tests of SSL_MakeAead import a secret (ssl_aead_unittest.cc). */
  PK11SymKey *key = PK11_ImportSymKey(slot, CKM_SSL3_MASTER_KEY_DERIVE, PK11_OriginUnwrap,
                                      CKA_DERIVE, &item, NULL);
  PK11_FreeSlot(slot);
  if (key == NULL) return nss_fail(err, TB_FAILED, "PK11_ImportSymKey (the traffic secret)");
  /* No prefix of its own before "key" and "iv": NSS adds RFC 8446 7.1's "tls13 " itself (a
   * prefix is for protocols that derive other keys the same way, QUIC's "quic "). */
  SSLAeadContext *aead = NULL;
  SECStatus rv = SSL_MakeAead(SSL_LIBRARY_VERSION_TLS_1_3, suite, key, NULL, 0, &aead);
  PK11_FreeSymKey(key);
  if (rv != SECSuccess) return nss_fail(err, TB_FAILED, "SSL_MakeAead");
  tb_wire_protected_messages(c->wire, dir, open_record, aead, cv_message, seen);
  SSL_DestroyAead(aead);
  return TB_OK;
}

static tb_status nss_negotiated(void *p, tb_negotiated *out, char *err) {
  nss_conn *c = p;
  memset(out, 0, sizeof(*out));
  SSLChannelInfo ci;
  if (SSL_GetChannelInfo(c->fd, &ci, sizeof(ci)) != SECSuccess)
    return nss_fail(err, TB_FAILED, "SSL_GetChannelInfo");
  SSLCipherSuiteInfo si;
  if (SSL_GetCipherSuiteInfo(ci.cipherSuite, &si, sizeof(si)) != SECSuccess)
    return nss_fail(err, TB_FAILED, "SSL_GetCipherSuiteInfo");
  int tls13 = ci.protocolVersion == SSL_LIBRARY_VERSION_TLS_1_3;
  if (tls13)
    copy_name(out->version, sizeof(out->version), "1.3");
  else if (ci.protocolVersion == SSL_LIBRARY_VERSION_TLS_1_2)
    copy_name(out->version, sizeof(out->version), "1.2");
  else
    snprintf(out->version, sizeof(out->version), "0x%04x", ci.protocolVersion);
  const tb_name *suite = tb_name_of_code(tb_suite_names, ci.cipherSuite);
  copy_name(out->suite, sizeof(out->suite), suite ? suite->name : si.cipherSuiteName);
  out->resumed = ci.resumed != 0;
  /* A resumed TLS 1.2 handshake exchanges no key, but NSS reports the session's group; a
   * resumed TLS 1.3 one (psk_dhe_ke, NSS's only resumption mode) a fresh one. Static RSA
   * uses none. */
  if (ci.keaType != ssl_kea_rsa && (tls13 || !out->resumed) && ci.keaGroup != ssl_grp_none) {
    const tb_name *g = tb_name_of_code(tb_group_names, (unsigned)ci.keaGroup);
    if (g)
      copy_name(out->group, sizeof(out->group), g->name);
    else
      snprintf(out->group, sizeof(out->group), "0x%04x", (unsigned)ci.keaGroup);
  }
  /* The server's signature (NSS sets it when the server signs and when the client checks
   * it); a resumed handshake reports the session's, though nothing was signed. */
  if (!out->resumed && ci.signatureScheme != ssl_sig_none) {
    const tb_name *s = tb_name_of_code(tb_sigalg_names, (unsigned)ci.signatureScheme);
    if (s)
      copy_name(out->sigalg, sizeof(out->sigalg), s->name);
    else
      snprintf(out->sigalg, sizeof(out->sigalg), "0x%04x", (unsigned)ci.signatureScheme);
  }
  out->peer_verified = !out->resumed && c->verified;
  /* The client's CertificateVerify, as it went over the wire (cv_seen). */
  cv_seen *seen = c->wire ? tb_wire_extra(c->wire) : NULL;
  if (seen != NULL && !seen->parsed) {
    if (tb_wire_overflow(c->wire))
      return tb_fail(err, TB_FAILED,
                     "the handshake passed more than the %d bytes a direction the read-back keeps",
                     TB_WIRE_BYTES);
    tb_wire_dir from_client = c->ctx->role == TB_CLIENT ? TB_WIRE_OUT : TB_WIRE_IN;
    if (!tls13) {
      tb_wire_plain_messages(c->wire, from_client, 0, cv_message, seen);
    } else if (!out->resumed) {
      tb_status st = read_protected(c, from_client, ci.cipherSuite, seen, err);
      if (st != TB_OK) return st;
    }
    tb_wire_release(c->wire);
    seen->parsed = 1;
  }
  if (!out->resumed && seen != NULL && seen->found) {
    unsigned code = tb_get16(seen->scheme);
    const tb_name *s = tb_name_of_code(tb_sigalg_names, code);
    if (s)
      copy_name(out->client_sigalg, sizeof(out->client_sigalg), s->name);
    else
      snprintf(out->client_sigalg, sizeof(out->client_sigalg), "0x%04x", code);
  }
  return TB_OK;
}

/* ------------------------------------------------------------------------- sessions */

static tb_status nss_session_get(void *p, void **out, char *err) {
  nss_conn *c = p;
  *out = NULL;
  if (c->token == NULL && c->offered != NULL) {
    /* No new ticket: a TLS 1.2 handshake that resumed keeps the session it offered (see
     * nss_session). Any other connection without a token is an error. */
    SSLChannelInfo ci;
    if (SSL_GetChannelInfo(c->fd, &ci, sizeof(ci)) != SECSuccess)
      return nss_fail(err, TB_FAILED, "SSL_GetChannelInfo");
    if (ci.resumed && ci.protocolVersion == SSL_LIBRARY_VERSION_TLS_1_2) {
      c->offered->refs++;
      *out = c->offered;
      return TB_OK;
    }
  }
  if (c->token == NULL)
    return tb_fail(err, TB_FAILED, "NSS handed over no resumption token (no ticket received)");
  nss_session *s = malloc(sizeof(*s));
  PRUint8 *copy = malloc(c->token_len);
  if (s == NULL || copy == NULL) {
    free(s);
    free(copy);
    return tb_fail(err, TB_FAILED, "out of memory");
  }
  memcpy(copy, c->token, c->token_len);
  s->token = copy;
  s->len = c->token_len;
  s->refs = 1;
  *out = s;
  return TB_OK;
}

static void nss_session_free(void *p) {
  nss_session *s = p;
  if (s == NULL || --s->refs > 0) return;
  free(s->token);
  free(s);
}

static const tb_tls_class kTls = {
    .ctx_new = nss_ctx_new,
    .ctx_free = nss_ctx_free,
    .conn_new = nss_conn_new,
    .conn_free = nss_conn_free,
    .handshake = nss_handshake,
    .write = nss_write,
    .read = nss_read,
    .close = nss_close,
    .negotiated = nss_negotiated,
    .session_get = nss_session_get,
    .session_free = nss_session_free,
};

/* ------------------------------------------------------------------------- AEAD */

/* NSS's AEAD through PKCS#11 (softoken): a key object and one PK11_Encrypt / PK11_Decrypt
 * per record, as an NSS program without the TLS layer does it. */
typedef struct nss_aead {
  PK11SymKey *key;
  CK_MECHANISM_TYPE mech;
} nss_aead;

static tb_status nss_aead_new(tb_aead_alg alg, const unsigned char *key, size_t key_len, void **out,
                              char *err) {
  *out = NULL;
  CK_MECHANISM_TYPE mech = alg == TB_CHACHA20_POLY1305 ? CKM_CHACHA20_POLY1305 : CKM_AES_GCM;
  size_t want = alg == TB_AES_128_GCM ? 16 : 32;
  if (key_len != want)
    return tb_fail(err, TB_FAILED, "AEAD key of %zu bytes, expected %zu", key_len, want);
  PK11SlotInfo *slot = PK11_GetInternalSlot();
  if (slot == NULL) return nss_fail(err, TB_FAILED, "PK11_GetInternalSlot");
  SECItem k = {siBuffer, (unsigned char *)key, (unsigned)key_len};
  PK11SymKey *sym = PK11_ImportSymKey(slot, mech, PK11_OriginUnwrap, CKA_ENCRYPT, &k, NULL);
  PK11_FreeSlot(slot);
  if (sym == NULL) return nss_fail(err, TB_UNSUPPORTED, "PK11_ImportSymKey");
  nss_aead *a = malloc(sizeof(*a));
  if (a == NULL) {
    PK11_FreeSymKey(sym);
    return tb_fail(err, TB_FAILED, "out of memory");
  }
  a->key = sym;
  a->mech = mech;
  *out = a;
  return TB_OK;
}

/* The mechanism's parameters for one record (they point into the caller's buffers). */
typedef union aead_params {
  CK_GCM_PARAMS_V3 gcm;
  CK_SALSA20_CHACHA20_POLY1305_PARAMS chacha;
} aead_params;

static SECItem params_for(const nss_aead *a, aead_params *p, const unsigned char *nonce,
                          const unsigned char *ad, size_t ad_len) {
  memset(p, 0, sizeof(*p));
  if (a->mech == CKM_AES_GCM) {
    p->gcm.pIv = (CK_BYTE_PTR)nonce;
    p->gcm.ulIvLen = TB_AEAD_NONCE_LEN;
    p->gcm.ulIvBits = TB_AEAD_NONCE_LEN * 8;
    p->gcm.pAAD = (CK_BYTE_PTR)ad;
    p->gcm.ulAADLen = ad_len;
    p->gcm.ulTagBits = TB_AEAD_TAG_LEN * 8;
    return (SECItem){siBuffer, (unsigned char *)&p->gcm, sizeof(p->gcm)};
  }
  p->chacha.pNonce = (CK_BYTE_PTR)nonce;
  p->chacha.ulNonceLen = TB_AEAD_NONCE_LEN;
  p->chacha.pAAD = (CK_BYTE_PTR)ad;
  p->chacha.ulAADLen = ad_len;
  return (SECItem){siBuffer, (unsigned char *)&p->chacha, sizeof(p->chacha)};
}

static tb_status nss_aead_seal(void *p, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                               const unsigned char *ad, size_t ad_len, const unsigned char *in,
                               size_t len, unsigned char *out, char *err) {
  nss_aead *a = p;
  aead_params params;
  SECItem item = params_for(a, &params, nonce, ad, ad_len);
  unsigned int out_len = 0;
  if (PK11_Encrypt(a->key, a->mech, &item, out, &out_len, (unsigned)(len + TB_AEAD_TAG_LEN), in,
                   (unsigned)len) != SECSuccess)
    return nss_fail(err, TB_FAILED, "PK11_Encrypt");
  if (out_len != len + TB_AEAD_TAG_LEN)
    return tb_fail(err, TB_FAILED, "seal wrote %u bytes, expected %zu", out_len,
                   len + TB_AEAD_TAG_LEN);
  return TB_OK;
}

static tb_status nss_aead_open(void *p, const unsigned char nonce[TB_AEAD_NONCE_LEN],
                               const unsigned char *ad, size_t ad_len, const unsigned char *in,
                               size_t len, unsigned char *out, char *err) {
  nss_aead *a = p;
  aead_params params;
  SECItem item = params_for(a, &params, nonce, ad, ad_len);
  unsigned int out_len = 0;
  if (PK11_Decrypt(a->key, a->mech, &item, out, &out_len, (unsigned)len, in,
                   (unsigned)(len + TB_AEAD_TAG_LEN)) != SECSuccess)
    return nss_fail(err, TB_FAILED, "PK11_Decrypt");
  if (out_len != len)
    return tb_fail(err, TB_FAILED, "open wrote %u bytes, expected %zu", out_len, len);
  return TB_OK;
}

static void nss_aead_free(void *p) {
  nss_aead *a = p;
  if (a == NULL) return;
  PK11_FreeSymKey(a->key);
  free(a);
}

static const tb_aead_class kAead = {
    .create = nss_aead_new,
    .seal = nss_aead_seal,
    .open = nss_aead_open,
    .free = nss_aead_free,
};

/* ------------------------------------------------------------------------- info */

static const char *g_versions[] = {"1.2", "1.3", NULL};
static const char *g_suites[96];
static const char *g_groups[16];
static const char *g_sigalgs[32];
static char g_option_text[4][96];
static const char *g_options[5];

/* The certificate suites of NSS's implemented list that tlsbench names. */
static void info_suites(void) {
  size_t n = 0;
  const PRUint16 *ids = SSL_GetImplementedCiphers();
  for (PRUint16 i = 0;
       i < SSL_GetNumImplementedCiphers() && n + 1 < sizeof(g_suites) / sizeof(g_suites[0]); i++) {
    const tb_name *name = tb_name_of_code(tb_suite_names, ids[i]);
    SSLCipherSuiteInfo si;
    if (name != NULL && SSL_GetCipherSuiteInfo(ids[i], &si, sizeof(si)) == SECSuccess &&
        si.authType != ssl_auth_psk)
      g_suites[n++] = name->name;
  }
  g_suites[n] = NULL;
}

static void info_groups(void) {
  size_t n = 0;
  for (const tb_name *g = tb_group_names;
       g->name != NULL && n + 1 < sizeof(g_groups) / sizeof(g_groups[0]); g++) {
    if (nss_has_group((SSLNamedGroup)g->code)) g_groups[n++] = g->name;
  }
  g_groups[n] = NULL;
}

/* The schemes NSS's TLS signs and verifies (ssl3con.c's ssl_IsSupportedSignatureScheme):
 * RSA PKCS#1 v1.5 and PSS (rsae and pss), ECDSA on P-256, P-384, P-521. */
static int nss_has_sigalg(unsigned code) {
  switch (code) {
    case ssl_sig_rsa_pkcs1_sha256:
    case ssl_sig_rsa_pkcs1_sha384:
    case ssl_sig_rsa_pkcs1_sha512:
    case ssl_sig_rsa_pkcs1_sha1:
    case ssl_sig_ecdsa_secp256r1_sha256:
    case ssl_sig_ecdsa_secp384r1_sha384:
    case ssl_sig_ecdsa_secp521r1_sha512:
    case ssl_sig_ecdsa_sha1:
    case ssl_sig_rsa_pss_rsae_sha256:
    case ssl_sig_rsa_pss_rsae_sha384:
    case ssl_sig_rsa_pss_rsae_sha512:
    case ssl_sig_rsa_pss_pss_sha256:
    case ssl_sig_rsa_pss_pss_sha384:
    case ssl_sig_rsa_pss_pss_sha512:
      return 1;
    default:
      return 0;
  }
}

static void info_sigalgs(void) {
  size_t n = 0;
  for (const tb_name *s = tb_sigalg_names;
       s->name != NULL && n + 1 < sizeof(g_sigalgs) / sizeof(g_sigalgs[0]); s++) {
    if (nss_has_sigalg(s->code)) g_sigalgs[n++] = s->name;
  }
  g_sigalgs[n] = NULL;
}

static tb_status nss_info(tb_info *out, char *err) {
  (void)err;
  memset(out, 0, sizeof(*out));
  copy_name(out->version, sizeof(out->version), NSS_GetVersion());
  info_suites();
  info_groups();
  info_sigalgs();
  snprintf(g_option_text[0], sizeof(g_option_text[0]), "NSPR=%s", PR_GetVersion());
  snprintf(g_option_text[1], sizeof(g_option_text[1]), "certificate-db=none (NSS_NoDB_Init)");
  g_options[0] = g_option_text[0];
  g_options[1] = g_option_text[1];
  g_options[2] = NULL;
  out->build_options = g_options;
  out->versions = g_versions;
  out->suites = g_suites;
  out->groups = g_groups;
  out->sigalgs = g_sigalgs;
  return TB_OK;
}

/* ------------------------------------------------------------------------- randomness */

static tb_status nss_derandomize(tb_random_fn fill, tb_randomness *out, char *err) {
  (void)fill, (void)out;
  return tb_fail(err, TB_UNSUPPORTED,
                 "NSS has no run-time hook for its random generator: freebl's DRBG seeds "
                 "itself from the system, and RSA blinding and ECDSA nonces draw from it");
}

/* ------------------------------------------------------------------------- global */

static tb_status nss_global_init(char *err) {
  layer_init();
  if (NSS_NoDB_Init(NULL) != SECSuccess) return nss_fail(err, TB_FAILED, "NSS_NoDB_Init");
  /* Every suite allowed by policy; the model sockets pin the one asked. */
  if (NSS_SetDomesticPolicy() != SECSuccess)
    return nss_fail(err, TB_FAILED, "NSS_SetDomesticPolicy");
  /* A server socket needs the session-ID cache configured, even when it resumes from
   * tickets only (TLS 1.3; TLS 1.2 with tickets on). */
  if (SSL_ConfigServerSessionIDCache(256, 0, 0, NULL) != SECSuccess)
    return nss_fail(err, TB_FAILED, "SSL_ConfigServerSessionIDCache");
  return TB_OK;
}

static void nss_global_cleanup(void) {
  SSL_ShutdownServerSessionIDCache();
  SSL_ClearSessionCache();
  NSS_Shutdown();
}

const tb_adapter tb_adapter_impl = {
    .name = "nss",
    .global_init = nss_global_init,
    .global_cleanup = nss_global_cleanup,
    .info = nss_info,
    .derandomize = nss_derandomize,
    .tls = &kTls,
    .aead = &kAead,
};
