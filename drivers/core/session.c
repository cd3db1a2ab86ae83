/* Contexts, connections and handshakes over the run's link (memory pair or TCP), and the checks. */
#include <stdio.h>
#include <string.h>

#include "core.h"

/* A handshake that makes no progress for this many rounds is a failure, not a hang. */
#define MAX_HANDSHAKE_ROUNDS 1000

int tb_status_exit(tb_status st) {
  switch (st) {
    case TB_UNSUPPORTED:
      return TB_EXIT_UNSUPPORTED;
    case TB_OK:
      return TB_EXIT_OK;
    default:
      return TB_EXIT_HANDSHAKE;
  }
}

/* The pre-shared key of PSK runs, both sides': a fixed test value, never a secret (the one
 * the firmware images carry too), and its identity. */
static const unsigned char test_psk[32] = {
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
    0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f};
/* --fault psk-key: the client's key, one bit away from the server's. */
static const unsigned char wrong_psk[32] = {
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
    0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2e};
#define TEST_PSK_IDENTITY "tlsbench-device"

int tb_psk_mode_of(int kx) {
  return kx == TB_KX_PSK ? TB_PSK_KE : kx == TB_KX_PSK_DHE ? TB_PSK_DHE : TB_PSK_NONE;
}

/* The key, its identity and (TLS 1.3) its hash, the suite's: the external PSK is bound to
 * that hash (RFC 8446 4.2.11), so a suite of another hash could not use it. */
static void fill_psk(const tb_options *o, tb_psk *psk) {
  psk->mode = (tb_psk_mode)tb_psk_mode_of(o->kx);
  if (psk->mode == TB_PSK_NONE) return;
  psk->key = test_psk;
  psk->key_len = sizeof(test_psk);
  psk->identity = TEST_PSK_IDENTITY;
  size_t n = strlen(o->suite);
  psk->hash = n > 6 && strcmp(o->suite + n - 6, "SHA384") == 0 ? "SHA384" : "SHA256";
}

int tb_refuse_tls13_psk_resumption(const tb_options *o, const char *what) {
  if (o->tls != 13 || tb_psk_mode_of(o->kx) == TB_PSK_NONE) return 0;
  return tb_usage_error(
      "%s: a TLS 1.3 resumption is itself a pre-shared key handshake (the "
      "ticket's), and with --kx %s the client would offer the ticket and the "
      "external key at once, which tlsbench does not run; resume TLS 1.3 with "
      "--kx ecdhe, or a TLS 1.2 PSK suite",
      what, tb_psk_mode_of(o->kx) == TB_PSK_KE ? "psk" : "psk_dhe");
}

void tb_fill_config(tb_run *r, tb_config *cfg, tb_role role, int resumption) {
  const tb_options *o = r->opt;
  memset(cfg, 0, sizeof(*cfg));
  cfg->role = role;
  cfg->tls_version = o->tls;
  cfg->suite = o->suite;
  cfg->group = o->group;
  cfg->sigalg = o->sigalg;
  cfg->auth = o->auth;
  cfg->ca_file = o->ca_file;
  cfg->server_name = "localhost"; /* the test certificates are issued to it */
  cfg->record_size = o->record_size;
  cfg->resumption = resumption;
  cfg->release_buffers = o->release_buffers;
  fill_psk(o, &cfg->psk);
  if (cfg->psk.mode != TB_PSK_NONE) {
    cfg->ca_file = NULL; /* no certificate anywhere: the key authenticates */
    cfg->key_share = role == TB_CLIENT ? o->key_share : NULL;
    return;
  }
  if (role == TB_SERVER) {
    cfg->chain_file = o->server_chain;
    cfg->key_file = o->server_key;
  } else {
    cfg->key_share = o->key_share;
    if (o->auth == TB_AUTH_MUTUAL) {
      cfg->chain_file = o->client_chain;
      cfg->key_file = o->client_key;
    }
  }
}

/* ------------------------------------------------------------------------- faults */

/* --fault: each one makes the library, through its own API, negotiate or send something
 * other than what the checks expect, so that a test can see the check fire (exit 4). Both
 * sides get the same changed configuration (so the handshake completes), except
 * server-tickets, which turns tickets on at the server only. client-sigalg (mutual auth,
 * RSA certificate) keeps the server's signature as asked and moves only the client's
 * CertificateVerify to the other scheme of the pair: the server must accept it, so both
 * configurations carry it as client_sigalg (one pinned scheme per side could not differ
 * and still complete the handshake). psk-key is the PSK runs' negative control (as --wrong-ca
 * is the certificates'): the client holds another key, and the handshake must fail. kx
 * moves a TLS 1.3 PSK run to the other key exchange mode (psk_ke <-> psk_dhe_ke) on both
 * sides; in TLS 1.2 the suite says the mode, and `suite` swaps a PSK suite with its
 * ECDHE-PSK counterpart. */
const tb_name tb_fault_names[] = {{"server-tickets", 0, 0},
                                  {"suite", 0, 0},
                                  {"group", 0, 0},
                                  {"sigalg", 0, 0},
                                  {"version", 0, 0},
                                  {"verify", 0, 0},
                                  {"resume", 0, 0},
                                  {"client-sigalg", 0, 0},
                                  {"key-share", 0, 0},
                                  {"key-share-readback", 0, 0},
                                  {"psk-key", 0, 0},
                                  {"kx", 0, 0},
                                  {NULL, 0, 0}};

static int fault_is(const tb_run *r, const char *name) {
  return r->opt->fault != NULL && strcmp(r->opt->fault, name) == 0;
}

/* The other member of a pair of names, or NULL. */
static const char *swap(const char *value, const char *const pairs[][2], size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(value, pairs[i][0]) == 0) return pairs[i][1];
    if (strcmp(value, pairs[i][1]) == 0) return pairs[i][0];
  }
  return NULL;
}

static int apply_fault(tb_run *r) {
  static const char *const suites[][2] = {
      {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"},
      {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
      {"TLS_PSK_WITH_AES_128_GCM_SHA256", "TLS_PSK_WITH_AES_256_GCM_SHA384"},
      {"TLS_PSK_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_PSK_WITH_AES_128_CBC_SHA256"},
      {"TLS_PSK_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_PSK_WITH_CHACHA20_POLY1305_SHA256"},
      {"TLS_PSK_WITH_AES_128_CBC_SHA", "TLS_ECDHE_PSK_WITH_AES_128_CBC_SHA"},
      /* Pairs of one PRF hash (SHA-256), for the libraries that keep one signature scheme
       * list per hash (BearSSL refuses the pairs above, whose hashes differ). A library
       * without the partner refuses it as unsupported (BoringSSL, AWS-LC, rustls: CBC). */
      {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"},
      {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"}};
  static const char *const groups[][2] = {{"x25519", "secp384r1"}};
  static const char *const sigalgs[][2] = {{"rsa_pss_rsae_sha256", "rsa_pss_rsae_sha384"},
                                           {"rsa_pkcs1_sha256", "rsa_pkcs1_sha384"}};
  tb_config *cfgs[2] = {&r->server_cfg, &r->client_cfg};
  const char *fault = r->opt->fault;
  const char *other = NULL;
  if (fault == NULL || fault_is(r, "resume")) return TB_EXIT_OK; /* resume: in its scenario */
  if (fault_is(r, "server-tickets")) {
    r->server_cfg.resumption = 1;
    return TB_EXIT_OK;
  }
  if (fault_is(r, "key-share")) {
    /* The client offers `group` with its key share at once: no HelloRetryRequest. */
    if (r->opt->key_share == NULL) goto no_fault;
    r->client_cfg.key_share = NULL;
    return TB_EXIT_OK;
  }
  if (fault_is(r, "key-share-readback")) {
    /* The server offers the client's first group, so it takes that share at once: no
     * HelloRetryRequest, though the client still expects one. The core's round-trip check
     * is skipped (tb_check_hello_retry), so that what fails is the adapter's own readback
     * of the retry from the library (mbedTLS, wolfSSL), before any negotiated field. */
    if (r->opt->key_share == NULL) goto no_fault;
    r->server_cfg.group = r->opt->key_share;
    return TB_EXIT_OK;
  }
  if (fault_is(r, "psk-key")) {
    if (r->client_cfg.psk.mode == TB_PSK_NONE) goto no_fault;
    r->client_cfg.psk.key = wrong_psk;
    return TB_EXIT_OK;
  }
  if (fault_is(r, "kx")) {
    if (r->opt->tls != 13 || r->client_cfg.psk.mode == TB_PSK_NONE) goto no_fault;
    int dhe = r->client_cfg.psk.mode == TB_PSK_KE;
    for (int i = 0; i < 2; i++) {
      cfgs[i]->psk.mode = dhe ? TB_PSK_DHE : TB_PSK_KE;
      cfgs[i]->group = dhe ? "x25519" : NULL;
    }
    return TB_EXIT_OK;
  }
  if (fault_is(r, "verify")) {
    if (r->opt->auth != TB_AUTH_MUTUAL) goto no_fault;
    for (int i = 0; i < 2; i++) cfgs[i]->auth = TB_AUTH_SERVER;
    return TB_EXIT_OK;
  }
  if (fault_is(r, "client-sigalg")) {
    if (r->opt->auth != TB_AUTH_MUTUAL || r->opt->sigalg == NULL ||
        strncmp(r->opt->cert, "rsa", 3) != 0)
      goto no_fault;
    other = swap(r->opt->sigalg, sigalgs, 2);
    if (other == NULL) goto no_fault;
    for (int i = 0; i < 2; i++) cfgs[i]->client_sigalg = other;
    return TB_EXIT_OK;
  }
  if (fault_is(r, "version") && r->client_cfg.psk.mode != TB_PSK_NONE) {
    /* A PSK run moves to the other version with the same key exchange mode. */
    int dhe = r->client_cfg.psk.mode == TB_PSK_DHE;
    for (int i = 0; i < 2; i++) {
      cfgs[i]->tls_version = r->opt->tls == 13 ? 12 : 13;
      cfgs[i]->suite = r->opt->tls == 12 ? "TLS_AES_128_GCM_SHA256"
                       : dhe             ? "TLS_ECDHE_PSK_WITH_AES_128_CBC_SHA256"
                                         : "TLS_PSK_WITH_AES_128_GCM_SHA256";
      cfgs[i]->group = dhe ? "x25519" : NULL;
      cfgs[i]->psk.hash = "SHA256";
    }
    return TB_EXIT_OK;
  }
  if (fault_is(r, "version")) {
    if (strncmp(r->opt->cert, "rsa", 3) != 0) goto no_fault;
    for (int i = 0; i < 2; i++) {
      cfgs[i]->tls_version = r->opt->tls == 13 ? 12 : 13;
      cfgs[i]->suite =
          r->opt->tls == 13 ? "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" : "TLS_AES_128_GCM_SHA256";
      cfgs[i]->sigalg = r->opt->tls == 13 ? "rsa_pkcs1_sha256" : "rsa_pss_rsae_sha256";
      cfgs[i]->group = "x25519";
    }
    return TB_EXIT_OK;
  }
  if (fault_is(r, "suite")) other = swap(r->opt->suite, suites, sizeof(suites) / sizeof(suites[0]));
  if (fault_is(r, "group") && r->opt->group) other = swap(r->opt->group, groups, 1);
  if (fault_is(r, "sigalg") && r->opt->sigalg) other = swap(r->opt->sigalg, sigalgs, 2);
  if (other == NULL) goto no_fault;
  for (int i = 0; i < 2; i++) {
    if (fault_is(r, "suite") && cfgs[i]->psk.mode != TB_PSK_NONE && r->opt->tls == 12) {
      /* A TLS 1.2 PSK suite's counterpart may be of the other mode: its group follows. */
      int dhe = strncmp(other, "TLS_ECDHE_PSK_", 14) == 0;
      cfgs[i]->psk.mode = dhe ? TB_PSK_DHE : TB_PSK_KE;
      cfgs[i]->group = dhe ? (r->opt->group ? r->opt->group : "x25519") : NULL;
    }
    if (fault_is(r, "suite") && cfgs[i]->psk.mode != TB_PSK_NONE) {
      size_t n = strlen(other);
      cfgs[i]->psk.hash = strcmp(other + n - 6, "SHA384") == 0 ? "SHA384" : "SHA256";
    }
    if (fault_is(r, "suite")) cfgs[i]->suite = other;
    if (fault_is(r, "group")) cfgs[i]->group = other;
    if (fault_is(r, "sigalg")) cfgs[i]->sigalg = other;
  }
  return TB_EXIT_OK;
no_fault:
  snprintf(r->err, sizeof(r->err), "--fault %s has no counterpart for this point", fault);
  return tb_fail_stage(r, TB_EXIT_USAGE, "fault");
}

/* One side's context, with the side's live heap before (start) and after it (ctx). */
static int side_context(tb_run *r, tb_role role, tb_heap_report *heap) {
  tb_side side = role == TB_SERVER ? TB_SIDE_SERVER : TB_SIDE_CLIENT;
  tb_config *cfg = role == TB_SERVER ? &r->server_cfg : &r->client_cfg;
  void **ctx = role == TB_SERVER ? &r->server_ctx : &r->client_ctx;
  tb_heap_counters c;
  tb_heap_get(side, &c);
  heap->start = c.live;
  heap->start_usable = c.live_usable;
  tb_status st = TB_ON(side, r->ad->tls->ctx_new(cfg, ctx, r->err));
  if (st != TB_OK) {
    return tb_fail_stage(r, tb_status_exit(st),
                         role == TB_SERVER ? "context (server)" : "context (client)");
  }
  tb_heap_get(side, &c);
  heap->ctx = c.live;
  heap->ctx_usable = c.live_usable;
  return TB_EXIT_OK;
}

int tb_setup_contexts(tb_run *r, int resumption) {
  tb_fill_config(r, &r->server_cfg, TB_SERVER, resumption);
  tb_fill_config(r, &r->client_cfg, TB_CLIENT, resumption);
  int fault = apply_fault(r);
  if (fault != TB_EXIT_OK) return fault;
  if (tb_link_init(&r->link, r->opt->transport, r->err, sizeof(r->err)) != 0)
    return tb_fail_stage(r, TB_EXIT_ERROR, "transport");
  int code = side_context(r, TB_SERVER, &r->heap_server);
  return code == TB_EXIT_OK ? side_context(r, TB_CLIENT, &r->heap_client) : code;
}

int tb_thread_setup(tb_run *r, int own_contexts) {
  if (tb_link_init(&r->link, r->opt->transport, r->err, sizeof(r->err)) != 0)
    return tb_fail_stage(r, TB_EXIT_ERROR, "transport");
  if (!own_contexts) return TB_EXIT_OK;
  tb_heap_report unused;
  r->client_ctx = r->server_ctx = NULL;
  int code = side_context(r, TB_SERVER, &unused);
  return code == TB_EXIT_OK ? side_context(r, TB_CLIENT, &unused) : code;
}

void tb_thread_teardown(tb_run *r, int own_contexts) {
  if (own_contexts) {
    tb_teardown(r);
  } else {
    tb_link_free(&r->link);
  }
}

int tb_side_context(tb_run *r, tb_role role, int resumption, tb_heap_report *heap) {
  tb_heap_report unused;
  tb_fill_config(r, role == TB_SERVER ? &r->server_cfg : &r->client_cfg, role, resumption);
  return side_context(r, role, heap != NULL ? heap : &unused);
}

int tb_verifies(const tb_options *o, tb_role role) {
  return role == TB_SERVER ? o->auth == TB_AUTH_MUTUAL : o->auth != TB_AUTH_NONE;
}

void tb_teardown(tb_run *r) {
  if (r->client_ctx) TB_ON(TB_SIDE_CLIENT, (r->ad->tls->ctx_free(r->client_ctx), TB_OK));
  if (r->server_ctx) TB_ON(TB_SIDE_SERVER, (r->ad->tls->ctx_free(r->server_ctx), TB_OK));
  r->client_ctx = r->server_ctx = NULL;
  tb_link_free(&r->link);
}

int tb_connect(tb_run *r, void *session, tb_conn_pair *conns, uint64_t *client_ns,
               uint64_t *server_ns) {
  memset(conns, 0, sizeof(*conns));
  if (tb_link_reset(&r->link, r->err, sizeof(r->err)) != 0)
    return tb_fail_stage(r, TB_EXIT_ERROR, "transport");
  /* --io fd: the libraries do their own socket I/O on the two ends of the TCP connection
   * (nothing counted on the way: no wire figures then). */
  tb_transport fds[2] = {{NULL, NULL, NULL, r->link.tcp.client_fd},
                         {NULL, NULL, NULL, r->link.tcp.server_fd}};
  /* --io bio: the same counted callbacks, through the library's BIO layer. */
  tb_transport bios[2] = {r->link.counted[0], r->link.counted[1]};
  bios[0].bio = bios[1].bio = r->opt->io == TB_IO_BIO;
  const tb_transport *client_io = r->opt->io == TB_IO_FD ? &fds[0] : &bios[0];
  const tb_transport *server_io = r->opt->io == TB_IO_FD ? &fds[1] : &bios[1];
  tb_status st =
      TB_ON_TIMED(TB_SIDE_SERVER, server_ns,
                  r->ad->tls->conn_new(r->server_ctx, server_io, NULL, &conns->server, r->err));
  if (st != TB_OK) return tb_fail_stage(r, tb_status_exit(st), "connection (server)");
  st = TB_ON_TIMED(TB_SIDE_CLIENT, client_ns,
                   r->ad->tls->conn_new(r->client_ctx, client_io, session, &conns->client, r->err));
  if (st != TB_OK) return tb_fail_stage(r, tb_status_exit(st), "connection (client)");

  int client_done = 0, server_done = 0;
  uint64_t client_rtt = 0;
  for (int round = 0; !(client_done && server_done); round++) {
    if (round == MAX_HANDSHAKE_ROUNDS) {
      snprintf(r->err, sizeof(r->err), "no progress after %d rounds", MAX_HANDSHAKE_ROUNDS);
      return tb_fail_stage(r, TB_EXIT_HANDSHAKE, "handshake");
    }
    if (!client_done) {
      st = TB_ON_TIMED(TB_SIDE_CLIENT, client_ns, r->ad->tls->handshake(conns->client, r->err));
      if (st == TB_OK) {
        client_done = 1;
        /* The client may send application data now: each server flight it waited for is
         * one round trip (1 for TLS 1.3, 2 with a HelloRetryRequest or in TLS 1.2). */
        client_rtt = r->link.wire.server.flights;
      } else if (st != TB_WANT_IO) {
        return tb_fail_stage(r, tb_status_exit(st), "handshake (client)");
      }
    }
    if (!server_done) {
      st = TB_ON_TIMED(TB_SIDE_SERVER, server_ns, r->ad->tls->handshake(conns->server, r->err));
      if (st == TB_OK) {
        server_done = 1;
      } else if (st != TB_WANT_IO) {
        return tb_fail_stage(r, tb_status_exit(st), "handshake (server)");
      }
    }
  }
  /* The first full and the first resumed handshake's wire figures (all are alike). */
  tb_wire_report *w = session ? &r->wire_resumed : &r->wire_full;
  if (!w->valid && r->opt->io != TB_IO_FD) *w = (tb_wire_report){1, r->link.wire, client_rtt};
  return session ? TB_EXIT_OK : tb_check_hello_retry(r, client_rtt);
}

void tb_disconnect(tb_run *r, tb_conn_pair *conns) {
  if (conns->client) TB_ON(TB_SIDE_CLIENT, (r->ad->tls->conn_free(conns->client), TB_OK));
  if (conns->server) TB_ON(TB_SIDE_SERVER, (r->ad->tls->conn_free(conns->server), TB_OK));
  conns->client = conns->server = NULL;
}

/* ------------------------------------------------------------------------- checks */

static int is_static_rsa(const char *suite) { return strncmp(suite, "TLS_RSA_WITH_", 13) == 0; }

static int mismatch(tb_run *r, const char *side, const char *what, const char *want,
                    const char *got) {
  snprintf(r->err, sizeof(r->err), "%s negotiated %s '%s', the run asked for '%s'", side, what, got,
           want);
  return tb_fail_stage(r, TB_EXIT_MISMATCH, "negotiated parameters");
}

/* --key-share: the server had to ask for another key share, one HelloRetryRequest, which
 * costs the client exactly one more round trip than TLS 1.3's one. Counted on the wire by
 * the core (no library reports an HRR through a common API). Full handshakes only: a
 * resumed one may or may not repeat the retry, depending on what the client remembers. */
int tb_check_hello_retry(tb_run *r, uint64_t client_round_trips) {
  if (r->opt->key_share == NULL || client_round_trips == 2) return TB_EXIT_OK;
  if (fault_is(r, "key-share-readback")) return TB_EXIT_OK; /* the adapter's check instead */
  char got[32];
  snprintf(got, sizeof(got), "%llu", (unsigned long long)client_round_trips);
  return mismatch(r, "client", "round trips", "2 (a HelloRetryRequest)", got);
}

static const char *psk_mode_name(int mode) {
  return mode == TB_PSK_KE ? "psk" : mode == TB_PSK_DHE ? "psk_dhe" : "none (certificates)";
}

int tb_check_side(tb_run *r, const char *side, const tb_negotiated *n, int verifies,
                  int expect_resumed) {
  const tb_options *o = r->opt;
  const char *version = o->tls == 13 ? "1.3" : "1.2";
  if (strcmp(n->version, version) != 0) return mismatch(r, side, "version", version, n->version);
  if (strcmp(n->suite, o->suite) != 0) return mismatch(r, side, "suite", o->suite, n->suite);
  /* Whether the pre-shared key keyed a full handshake, and with an (EC)DHE share or not. A
   * resumed one's key is the session's, whatever keyed the first. */
  int psk = tb_psk_mode_of(o->kx);
  if (!expect_resumed && n->psk != psk) {
    return mismatch(r, side, "pre-shared key exchange", psk_mode_name(psk), psk_mode_name(n->psk));
  }
  /* Static RSA and the pre-shared key alone agree on no group. */
  int no_group = (o->tls == 12 && is_static_rsa(o->suite)) || psk == TB_PSK_KE;
  const char *group = no_group ? "" : o->group;
  /* A resumed TLS 1.3 handshake may skip the key exchange (psk_ke): no group then. */
  int group_ok = strcmp(n->group, group) == 0 || (expect_resumed && n->group[0] == '\0');
  if (!group_ok) return mismatch(r, side, "group", group, n->group);
  if (!expect_resumed) {
    /* Resumed handshakes sign nothing; full ones must sign with exactly the request, and
     * static RSA and PSK ones nothing. */
    const char *sigalg =
        o->sigalg != NULL && !(o->tls == 12 && is_static_rsa(o->suite)) ? o->sigalg : "";
    if (strcmp(n->sigalg, sigalg) != 0)
      return mismatch(r, side, "signature scheme", sigalg, n->sigalg);
    if (n->peer_verified != verifies) {
      return mismatch(r, side, "peer verification", verifies ? "verified" : "not verified",
                      n->peer_verified ? "verified" : "not verified");
    }
  }
  if (n->resumed != expect_resumed) {
    return mismatch(r, side, "resumption", expect_resumed ? "resumed" : "full handshake",
                    n->resumed ? "resumed" : "full handshake");
  }
  return TB_EXIT_OK;
}

/* Mutual auth: the client signs its CertificateVerify with the same --sigalg (its
 * certificate is of the same kind as the server's), static RSA suites included; without it
 * the client signs nothing. Resumed handshakes sign nothing. Run after both sides' other
 * checks: a client never asked for a certificate signs nothing either, and the server's
 * peer verification check names that cause. */
int tb_check_client_sigalg(tb_run *r, const char *side, const tb_negotiated *n,
                           int expect_resumed) {
  const tb_options *o = r->opt;
  if (expect_resumed) return TB_EXIT_OK;
  const char *want = o->auth == TB_AUTH_MUTUAL && o->sigalg ? o->sigalg : "";
  if (strcmp(n->client_sigalg, want) != 0)
    return mismatch(r, side, "client signature scheme", want, n->client_sigalg);
  return TB_EXIT_OK;
}

/* Without resumption nothing may follow the handshake: a byte left in flight either way is
 * a NewSessionTicket (or another post-handshake message) that was meant to be off. */
static int check_quiet(tb_run *r) {
  size_t to_client = tb_link_in_flight(&r->link, 0);
  size_t to_server = tb_link_in_flight(&r->link, 1);
  if (to_client == 0 && to_server == 0) return TB_EXIT_OK;
  snprintf(r->err, sizeof(r->err),
           "%zu bytes in flight to the client and %zu to the server after the handshake: a "
           "post-handshake message (NewSessionTicket?) though tickets were asked off",
           to_client, to_server);
  return tb_fail_stage(r, TB_EXIT_MISMATCH, "no tickets");
}

int tb_check_negotiated(tb_run *r, tb_conn_pair *conns, int expect_resumed) {
  if (!r->client_cfg.resumption) {
    int quiet = check_quiet(r);
    if (quiet != TB_EXIT_OK) return quiet;
  }
  tb_status st =
      TB_ON(TB_SIDE_CLIENT, r->ad->tls->negotiated(conns->client, &r->client_neg, r->err));
  if (st != TB_OK) return tb_fail_stage(r, tb_status_exit(st), "negotiated (client)");
  st = TB_ON(TB_SIDE_SERVER, r->ad->tls->negotiated(conns->server, &r->server_neg, r->err));
  if (st != TB_OK) return tb_fail_stage(r, tb_status_exit(st), "negotiated (server)");
  r->have_negotiated = 1;
  int code =
      tb_check_side(r, "client", &r->client_neg, r->opt->auth != TB_AUTH_NONE, expect_resumed);
  if (code != TB_EXIT_OK) return code;
  code = tb_check_side(r, "server", &r->server_neg, r->opt->auth == TB_AUTH_MUTUAL, expect_resumed);
  if (code != TB_EXIT_OK) return code;
  code = tb_check_client_sigalg(r, "client", &r->client_neg, expect_resumed);
  if (code != TB_EXIT_OK) return code;
  return tb_check_client_sigalg(r, "server", &r->server_neg, expect_resumed);
}

/* ------------------------------------------------------------------------- data */

int tb_transfer(tb_run *r, tb_conn_pair *conns, int to_server, const unsigned char *data,
                size_t len, unsigned char *scratch, uint64_t *send_ticks, uint64_t *recv_ticks,
                uint64_t *send_allocs, uint64_t *recv_allocs) {
  tb_side from = to_server ? TB_SIDE_CLIENT : TB_SIDE_SERVER;
  tb_side to = to_server ? TB_SIDE_SERVER : TB_SIDE_CLIENT;
  void *writer = to_server ? conns->client : conns->server;
  void *reader = to_server ? conns->server : conns->client;
  tb_heap_counters before, after;

  tb_heap_get(from, &before);
  size_t sent = 0;
  uint64_t t0 = tb_tsc();
  while (sent < len) {
    size_t done = 0;
    if (send_ticks) tb_collect(from);
    tb_status st = TB_ON(from, r->ad->tls->write(writer, data + sent, len - sent, &done, r->err));
    if (send_ticks) tb_collect(from);
    if (st != TB_OK && st != TB_WANT_IO) return tb_fail_stage(r, tb_status_exit(st), "write");
    if (st == TB_WANT_IO && done == 0) {
      snprintf(r->err, sizeof(r->err), "write accepted nothing (transport full)");
      return tb_fail_stage(r, TB_EXIT_HANDSHAKE, "write");
    }
    sent += done;
  }
  uint64_t t1 = tb_tsc();
  tb_heap_get(from, &after);
  if (send_ticks) *send_ticks += tb_tsc_net(t1 - t0);
  if (send_allocs) *send_allocs += after.allocs - before.allocs;

  tb_heap_get(to, &before);
  size_t got = 0;
  t0 = tb_tsc();
  while (got < len) {
    size_t done = 0;
    if (recv_ticks) tb_collect(to);
    tb_status st = TB_ON(to, r->ad->tls->read(reader, scratch + got, len - got, &done, r->err));
    if (recv_ticks) tb_collect(to);
    if (st == TB_WANT_IO && done == 0) {
      snprintf(r->err, sizeof(r->err), "%zu of %zu bytes arrived", got, len);
      return tb_fail_stage(r, TB_EXIT_DATA, "read");
    }
    if (st != TB_OK && st != TB_WANT_IO) return tb_fail_stage(r, tb_status_exit(st), "read");
    got += done;
  }
  t1 = tb_tsc();
  tb_heap_get(to, &after);
  if (recv_ticks) *recv_ticks += tb_tsc_net(t1 - t0);
  if (recv_allocs) *recv_allocs += after.allocs - before.allocs;

  if (memcmp(scratch, data, len) != 0) {
    size_t at = 0;
    while (scratch[at] == data[at]) at++;
    snprintf(r->err, sizeof(r->err), "byte %zu of %zu differs (sent 0x%02x, got 0x%02x)", at, len,
             data[at], scratch[at]);
    return tb_fail_stage(r, TB_EXIT_DATA, "data check");
  }
  return TB_EXIT_OK;
}
