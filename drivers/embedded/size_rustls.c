/* Minimal TLS program for code-size measurement: what one role (client, or server with
 * TLSBENCH_SERVER) links to do size_io.h's job with rustls through rustls-ffi's C API at
 * its defaults (the build's crypto provider, aws-lc-rs or ring, and rustls' own
 * WebPKI verifier). rustls does no I/O: the program moves TLS bytes between the socket and
 * the connection with read_tls / write_tls, as rustls-ffi's own examples do. It is linked
 * with section garbage collection and measured with `size`; it runs. */
#include <errno.h>
#include <rustls.h>

#include "size_io.h"

static rustls_io_result read_cb(void *userdata, uint8_t *buf, size_t len, size_t *out_n) {
  long n = size_recv(*(int *)userdata, buf, len);
  if (n < 0) return EIO;
  *out_n = (size_t)n;
  return 0;
}

static rustls_io_result write_cb(void *userdata, const uint8_t *buf, size_t len, size_t *out_n) {
  long n = size_send(*(int *)userdata, buf, len);
  if (n < 0) return EIO;
  *out_n = (size_t)n;
  return 0;
}

/* Everything the connection has to send, sent. */
static int flush(struct rustls_connection *conn, int *fd) {
  while (rustls_connection_wants_write(conn)) {
    size_t n;
    if (rustls_connection_write_tls(conn, write_cb, fd, &n) != 0) return -1;
  }
  return 0;
}

/* What the socket has, read and processed (-1: an error, or the peer closed). */
static int receive(struct rustls_connection *conn, int *fd) {
  size_t n;
  if (rustls_connection_read_tls(conn, read_cb, fd, &n) != 0 || n == 0) return -1;
  return rustls_connection_process_new_packets(conn) == RUSTLS_RESULT_OK ? 0 : -1;
}

/* One record's plaintext (its length; -1: none came). */
static long read_record(struct rustls_connection *conn, int *fd, uint8_t *buf, size_t len) {
  for (;;) {
    size_t n = 0;
    rustls_result r = rustls_connection_read(conn, buf, len, &n);
    if (r == RUSTLS_RESULT_OK && n > 0) return (long)n;
    if (r != RUSTLS_RESULT_PLAINTEXT_EMPTY && r != RUSTLS_RESULT_OK) return -1;
    if (receive(conn, fd) != 0) return -1;
  }
}

int main(int argc, char **argv) {
  int fd = size_open(argc, argv);
  if (fd < 0) return 1;
  struct rustls_connection *conn = NULL;
#ifdef TLSBENCH_SERVER
  const char *chain = SIZE_CHAIN_PEM(argv), *key = SIZE_KEY_PEM(argv);
  const struct rustls_certified_key *certified = NULL;
  if (rustls_certified_key_build((const uint8_t *)chain, strlen(chain), (const uint8_t *)key,
                                 strlen(key), &certified) != RUSTLS_RESULT_OK)
    return 1;
  struct rustls_server_config_builder *builder = rustls_server_config_builder_new();
  const struct rustls_server_config *config = NULL;
  if (rustls_server_config_builder_set_certified_keys(builder, &certified, 1) != RUSTLS_RESULT_OK ||
      rustls_server_config_builder_build(builder, &config) != RUSTLS_RESULT_OK ||
      rustls_server_connection_new(config, &conn) != RUSTLS_RESULT_OK)
    return 1;
#else
  const char *ca = SIZE_CA_PEM(argv);
  struct rustls_root_cert_store_builder *roots = rustls_root_cert_store_builder_new();
  const struct rustls_root_cert_store *store = NULL;
  if (rustls_root_cert_store_builder_add_pem(roots, (const uint8_t *)ca, strlen(ca), true) !=
          RUSTLS_RESULT_OK ||
      rustls_root_cert_store_builder_build(roots, &store) != RUSTLS_RESULT_OK)
    return 1;
  struct rustls_web_pki_server_cert_verifier_builder *verifier_builder =
      rustls_web_pki_server_cert_verifier_builder_new(store);
  struct rustls_server_cert_verifier *verifier = NULL;
  if (rustls_web_pki_server_cert_verifier_builder_build(verifier_builder, &verifier) !=
      RUSTLS_RESULT_OK)
    return 1;
  struct rustls_client_config_builder *builder = rustls_client_config_builder_new();
  rustls_client_config_builder_set_server_verifier(builder, verifier);
  const struct rustls_client_config *config = NULL;
  /* The server name: sent (SNI) and verified. */
  if (rustls_client_config_builder_build(builder, &config) != RUSTLS_RESULT_OK ||
      rustls_client_connection_new(config, SIZE_SERVER_NAME, &conn) != RUSTLS_RESULT_OK)
    return 1;
#endif
  int ok = 1;
  while (ok && rustls_connection_is_handshaking(conn))
    ok = rustls_connection_wants_write(conn) ? flush(conn, &fd) == 0 : receive(conn, &fd) == 0;
  uint8_t buf[SIZE_RECORD_LEN];
  size_t n = 0;
#ifdef TLSBENCH_SERVER
  long got = ok ? read_record(conn, &fd, buf, sizeof buf) : -1;
  ok = got > 0 && rustls_connection_write(conn, buf, (size_t)got, &n) == RUSTLS_RESULT_OK &&
       n == (size_t)got && flush(conn, &fd) == 0;
#else
  size_fill(buf);
  ok = ok && rustls_connection_write(conn, buf, sizeof buf, &n) == RUSTLS_RESULT_OK &&
       n == sizeof buf && flush(conn, &fd) == 0;
  long got = ok ? read_record(conn, &fd, buf, sizeof buf) : -1;
  ok = got > 0 && size_echoed(buf, (size_t)got);
#endif
  rustls_connection_send_close_notify(conn);
  flush(conn, &fd);
  size_close(fd);
  rustls_connection_free(conn);
  return !ok;
}
