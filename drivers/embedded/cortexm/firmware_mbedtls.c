/*
 * Cortex-M firmware image: an mbedTLS TLS 1.2 client and server in one program, talking
 * over an in-memory transport, measured per side and printed as one JSON line over
 * semihosting. Arguments (QEMU -semihosting-config arg=...): the program name, the
 * client's cipher suite (mbedTLS spelling, TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256), and
 * optionally the client's only group (x25519, secp256r1, ...: the table below).
 *
 * Per side, around every library call made on that side's behalf:
 *  - instructions: QEMU runs with -icount shift=0 (one instruction = one nanosecond of
 *    virtual time), and the CMSDK APB timer 0 counts that virtual time; the image
 *    calibrates instructions per timer tick against a loop of known length;
 *  - heap: calloc/malloc/realloc/free are wrapped (-Wl,--wrap) and charged to the side
 *    whose call is running (setup included: configuration, certificates, contexts); its
 *    peak of live bytes (requested sizes) and what is live after the handshake are reported;
 *  - stack: the stack below the caller is painted before the call and scanned after it.
 * The handshake is deterministic: the entropy source is a fixed test pattern (below) and
 * the library has no clock (MBEDTLS_HAVE_TIME off).
 */
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>
#if defined(MBEDTLS_PSA_CRYPTO_C)
#include <psa/crypto.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certs.h" /* generated: CA_PEM, SERVER_CERT_PEM, SERVER_KEY_PEM */
#include "semihost.h"

enum side { CLIENT, SERVER, SIDES };
static const char *const side_names[SIDES] = {"client", "server"};

/* ---------------------------------------------------------------- test entropy source */
/* DETERMINISTIC TEST RNG, FOR BENCHMARKING ONLY: the board has no entropy source that
 * QEMU emulates, and a benchmark wants the same handshake on every run. A firmware that
 * shipped this would have no security at all. mbedTLS calls it through
 * MBEDTLS_ENTROPY_HARDWARE_ALT. */
int mbedtls_hardware_poll(void *data, unsigned char *output, size_t len, size_t *olen) {
  (void)data;
  static uint32_t state = 0x2545F491u;
  for (size_t i = 0; i < len; i++) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    output[i] = (unsigned char)state;
  }
  *olen = len;
  return 0;
}

/* Timer, heap and stack per side, MEASURED(), the pipes: shared by every image. */
#include "firmware_measure.h"

static int pipe_send(void *ctx, const unsigned char *buf, size_t len) {
  pipe_t *p = ((ends_t *)ctx)->out;
  if (p->head == p->tail) p->head = p->tail = 0;
  if (len > PIPE_SIZE - p->tail) len = PIPE_SIZE - p->tail;
  if (len == 0) return MBEDTLS_ERR_SSL_WANT_WRITE;
  memcpy(p->data + p->tail, buf, len);
  p->tail += len;
  if (p == &to_client) {
    size_t room = sizeof server_flight - server_flight_len;
    size_t n = len < room ? len : room;
    memcpy(server_flight + server_flight_len, buf, n);
    server_flight_len += n;
  }
  return (int)len;
}

static int pipe_recv(void *ctx, unsigned char *buf, size_t len) {
  pipe_t *p = ((ends_t *)ctx)->in;
  size_t have = p->tail - p->head;
  if (have == 0) return MBEDTLS_ERR_SSL_WANT_READ;
  if (len > have) len = have;
  memcpy(buf, p->data + p->head, len);
  p->head += len;
  return (int)len;
}

/* The TLS 1.2 group the server chose: ServerKeyExchange's named curve (ECDHE), read from
 * the server's plaintext records; 0 when there is none (static RSA key exchange). */
static unsigned server_group(void) {
  size_t at = 0;
  while (at + 5 <= server_flight_len) {
    unsigned type = server_flight[at];
    size_t len = ((size_t)server_flight[at + 3] << 8) | server_flight[at + 4];
    if (type != 22 || at + 5 + len > server_flight_len) return 0; /* CCS: encrypted next */
    const unsigned char *m = server_flight + at + 5;
    for (size_t i = 0; i + 4 <= len;) {
      size_t mlen = ((size_t)m[i + 1] << 16) | ((size_t)m[i + 2] << 8) | m[i + 3];
      if (m[i] == 12 /* ServerKeyExchange */ && mlen >= 3 && m[i + 4] == 3 /* named */)
        return ((unsigned)m[i + 5] << 8) | m[i + 6];
      i += 4 + mlen;
    }
    at += 5 + len;
  }
  return 0;
}

static const struct {
  const char *name;
  uint16_t id;
} groups[] = {/* RFC 8422 / 7027 / 8446 code points of the curves mbedTLS builds */
              {"secp192r1", 0x0013},
              {"secp224r1", 0x0015},
              {"secp256k1", 0x0016},
              {"secp256r1", 0x0017},
              {"secp384r1", 0x0018},
              {"secp521r1", 0x0019},
              {"brainpoolP256r1", 0x001a},
              {"brainpoolP384r1", 0x001b},
              {"brainpoolP512r1", 0x001c},
              {"x25519", 0x001d},
              {"x448", 0x001e}};

static const char *group_name(unsigned id) {
  for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
    if (groups[i].id == id) return groups[i].name;
  return id == 0 ? "none" : "unknown";
}

/* ---------------------------------------------------------------- the run */
static char out[2048];

static int fail(const char *what, int ret) {
  char reason[128] = "";
#if defined(MBEDTLS_ERROR_C)
  mbedtls_strerror(ret, reason, sizeof reason);
#endif
  snprintf(out, sizeof out, "{\"error\": \"%s: -0x%04x %s\"}\n", what, (unsigned)-ret, reason);
  sh_write0(out);
  return 1;
}

typedef struct {
  mbedtls_ctr_drbg_context drbg;
  mbedtls_ssl_config conf;
  mbedtls_ssl_context ssl;
  mbedtls_x509_crt crt;
  mbedtls_pk_context key;
} peer;

static peer client, server;
static mbedtls_entropy_context entropy;
static int suites[2];
#if MBEDTLS_VERSION_MAJOR >= 3
static uint16_t group_list[2];
#else
static mbedtls_ecp_group_id group_list[2];
#endif

static int setup(peer *p, int side, const char *group) {
  int ret;
  const char *pers = side_names[side];
  mbedtls_ctr_drbg_init(&p->drbg);
  mbedtls_ssl_config_init(&p->conf);
  mbedtls_ssl_init(&p->ssl);
  mbedtls_x509_crt_init(&p->crt);
  mbedtls_pk_init(&p->key);
  if ((ret = mbedtls_ctr_drbg_seed(&p->drbg, mbedtls_entropy_func, &entropy,
                                   (const unsigned char *)pers, strlen(pers))) != 0)
    return fail("ctr_drbg_seed", ret);
  int endpoint = side == CLIENT ? MBEDTLS_SSL_IS_CLIENT : MBEDTLS_SSL_IS_SERVER;
  if ((ret = mbedtls_ssl_config_defaults(&p->conf, endpoint, MBEDTLS_SSL_TRANSPORT_STREAM,
                                         MBEDTLS_SSL_PRESET_DEFAULT)) != 0)
    return fail("ssl_config_defaults", ret);
  mbedtls_ssl_conf_rng(&p->conf, mbedtls_ctr_drbg_random, &p->drbg);
#if MBEDTLS_VERSION_MAJOR >= 3
  mbedtls_ssl_conf_max_tls_version(&p->conf, MBEDTLS_SSL_VERSION_TLS1_2);
#else
  mbedtls_ssl_conf_max_version(&p->conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
#endif
  if (side == CLIENT) {
    if ((ret = mbedtls_x509_crt_parse(&p->crt, (const unsigned char *)CA_PEM, sizeof CA_PEM)) != 0)
      return fail("parse CA certificate", ret);
    mbedtls_ssl_conf_ca_chain(&p->conf, &p->crt, NULL);
    mbedtls_ssl_conf_authmode(&p->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
    mbedtls_ssl_conf_ciphersuites(&p->conf, suites);
    if (group != NULL) {
      size_t i = 0;
      while (i < sizeof groups / sizeof groups[0] && strcmp(groups[i].name, group) != 0) i++;
      if (i == sizeof groups / sizeof groups[0]) return fail("unknown group", 0);
#if MBEDTLS_VERSION_MAJOR >= 3
      group_list[0] = groups[i].id;
      mbedtls_ssl_conf_groups(&p->conf, group_list);
#else
      const mbedtls_ecp_curve_info *info = mbedtls_ecp_curve_info_from_tls_id(groups[i].id);
      if (info == NULL) return fail("group not built", 0);
      group_list[0] = info->grp_id;
      group_list[1] = MBEDTLS_ECP_DP_NONE;
      mbedtls_ssl_conf_curves(&p->conf, group_list);
#endif
    }
  } else {
    if ((ret = mbedtls_x509_crt_parse(&p->crt, (const unsigned char *)SERVER_CERT_PEM,
                                      sizeof SERVER_CERT_PEM)) != 0)
      return fail("parse server certificate", ret);
#if MBEDTLS_VERSION_MAJOR >= 3
    ret = mbedtls_pk_parse_key(&p->key, (const unsigned char *)SERVER_KEY_PEM,
                               sizeof SERVER_KEY_PEM, NULL, 0, mbedtls_ctr_drbg_random, &p->drbg);
#else
    ret = mbedtls_pk_parse_key(&p->key, (const unsigned char *)SERVER_KEY_PEM,
                               sizeof SERVER_KEY_PEM, NULL, 0);
#endif
    if (ret != 0) return fail("parse server key", ret);
    if ((ret = mbedtls_ssl_conf_own_cert(&p->conf, &p->crt, &p->key)) != 0)
      return fail("conf_own_cert", ret);
  }
  if ((ret = mbedtls_ssl_setup(&p->ssl, &p->conf)) != 0) return fail("ssl_setup", ret);
  if (side == CLIENT && (ret = mbedtls_ssl_set_hostname(&p->ssl, "localhost")) != 0)
    return fail("set_hostname", ret);
  mbedtls_ssl_set_bio(&p->ssl, side == CLIENT ? &client_ends : &server_ends, pipe_send, pipe_recv,
                      NULL);
  return 0;
}

#define MAX_ARGS 4

int main(void) {
  static char cmdline[256];
  char *argv[MAX_ARGS] = {0};
  int argc = 0;
  if (sh_cmdline(cmdline, sizeof cmdline) != 0) return fail("no command line", 0);
  for (char *tok = strtok(cmdline, " "); tok && argc < MAX_ARGS; tok = strtok(NULL, " "))
    argv[argc++] = tok;
  if (argc < 2) return fail("usage: firmware SUITE [GROUP]", 0);
  suites[0] = mbedtls_ssl_get_ciphersuite_id(argv[1]);
  if (suites[0] == 0) return fail("cipher suite not in this build", 0);
  const char *group = argc > 2 ? argv[2] : NULL;

  timer_start();
  uint64_t insn_per_kticks = calibrate();
  if (insn_per_kticks == 0) return fail("the timer does not count (is -icount on?)", 0);

  mbedtls_entropy_init(&entropy);
#if defined(MBEDTLS_PSA_CRYPTO_C)
  if (psa_crypto_init() != PSA_SUCCESS) return fail("psa_crypto_init", 0);
#endif
  int ret;
  MEASURED(CLIENT, setup(&client, CLIENT, group), ret);
  if (ret != 0) return 1;
  MEASURED(SERVER, setup(&server, SERVER, NULL), ret);
  if (ret != 0) return 1;
  /* The handshake's own instructions: what setup cost is not counted. */
  uint64_t setup_ticks[SIDES] = {ticks[CLIENT], ticks[SERVER]};
  calls[CLIENT] = calls[SERVER] = 0;

  int done[SIDES] = {0, 0};
  for (int turn = 0; !(done[CLIENT] && done[SERVER]); turn++) {
    if (turn > 200) return fail("handshake does not progress", 0);
    for (int side = CLIENT; side < SIDES; side++) {
      if (done[side]) continue;
      peer *p = side == CLIENT ? &client : &server;
      MEASURED(side, mbedtls_ssl_handshake(&p->ssl), ret);
      if (ret == 0)
        done[side] = 1;
      else if (ret != MBEDTLS_ERR_SSL_WANT_READ && ret != MBEDTLS_ERR_SSL_WANT_WRITE)
        return fail(side == CLIENT ? "client handshake" : "server handshake", ret);
    }
  }
  uint64_t hs_ticks[SIDES] = {ticks[CLIENT] - setup_ticks[CLIENT],
                              ticks[SERVER] - setup_ticks[SERVER]};

  int n = snprintf(out, sizeof out,
                   "{\"library\": \"mbedtls\", \"library_version\": \"%s\", "
                   "\"version\": \"%s\", \"suite\": \"%s\", \"group\": \"%s\", "
                   "\"server_suite\": \"%s\", \"server_version\": \"%s\", "
                   "\"instructions_per_1000_ticks\": %llu",
                   MBEDTLS_VERSION_STRING, mbedtls_ssl_get_version(&client.ssl),
                   mbedtls_ssl_get_ciphersuite(&client.ssl), group_name(server_group()),
                   mbedtls_ssl_get_ciphersuite(&server.ssl), mbedtls_ssl_get_version(&server.ssl),
                   (unsigned long long)insn_per_kticks);
  for (int side = CLIENT; side < SIDES; side++) {
    n += snprintf(out + n, sizeof out - (size_t)n,
                  ", \"%s\": {\"handshake_timer_ticks\": %llu, \"setup_timer_ticks\": %llu, "
                  "\"handshake_calls\": %lu, \"heap_peak\": %lu, \"heap_live\": %lu, "
                  "\"allocations\": %lu, \"stack_high_water\": %lu}",
                  side_names[side], (unsigned long long)hs_ticks[side],
                  (unsigned long long)setup_ticks[side], (unsigned long)calls[side],
                  (unsigned long)peak[side], (unsigned long)live[side],
                  (unsigned long)allocations[side], (unsigned long)stack_high[side]);
  }
  snprintf(out + n, sizeof out - (size_t)n, "}\n");
  sh_write0(out);
  return 0;
}
